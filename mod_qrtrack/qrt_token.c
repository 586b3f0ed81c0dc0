/* qrt_token: token generation and hashing (OpenSSL's SHA-256). */
#include <pthread.h>
#include <string.h>
#include <apr_strings.h>
#include <openssl/evp.h>
#include "qrt_code.h"
#include "qrt_token.h"

/* SHA-256 fetched once: EVP_sha256() makes OpenSSL 3 look it up on every digest. */
static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void sha256_fetch(void)
{
    sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

static const EVP_MD *sha256(void)
{
    pthread_once(&sha256_once, sha256_fetch);
    return sha256_md ? sha256_md : EVP_sha256();
}

char *qrt_token_generate(apr_pool_t *p)
{
    char random[QRT_TOKEN_RANDOM + 1];

    if (qrt_code_generate(random, QRT_TOKEN_RANDOM) != APR_SUCCESS) {
        return NULL;
    }
    return apr_pstrcat(p, QRT_TOKEN_PREFIX, random, NULL);
}

void qrt_sha256_hex(const void *data, apr_size_t len, char *out)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0, i;

    EVP_Digest(data, len, md, &n, sha256(), NULL);
    for (i = 0; i < n; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[2 * n] = '\0';
}

const char *qrt_token_digest(apr_pool_t *p, const char *token)
{
    char *out = apr_palloc(p, 2 * EVP_MAX_MD_SIZE + 1);

    qrt_sha256_hex(token, strlen(token), out);
    return out;
}

const char *qrt_token_shown(apr_pool_t *p, const char *token)
{
    return apr_pstrndup(p, token, QRT_TOKEN_SHOWN);
}

int qrt_token_plausible(const char *t)
{
    apr_size_t n = 0;

    if (!t) {
        return 0;
    }
    for (; *t; t++, n++) {
        if (n >= QRT_TOKEN_MAX || *t <= ' ' || *t > '~') {
            return 0;
        }
    }
    return n > 0;
}

void qrt_visitor_id(char *out, const char *ip, const char *user_agent)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char md[EVP_MAX_MD_SIZE];
    static const char hex[] = "0123456789abcdef";
    unsigned int n = 0, i;

    memset(md, 0, sizeof(md));
    if (ctx && EVP_DigestInit_ex(ctx, sha256(), NULL)) {
        if (ip) {
            EVP_DigestUpdate(ctx, ip, strlen(ip));
        }
        EVP_DigestUpdate(ctx, "\n", 1);
        if (user_agent) {
            EVP_DigestUpdate(ctx, user_agent, strlen(user_agent));
        }
        EVP_DigestFinal_ex(ctx, md, &n);
    }
    EVP_MD_CTX_free(ctx);
    for (i = 0; i < 8; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[16] = '\0';
}
