/* qrt_token: token generation and hashing (OpenSSL's SHA-256). */
#include <pthread.h>
#include <string.h>
#include <apr_strings.h>
#include <apr_time.h>
#include <apr_general.h>
#include <openssl/evp.h>
#include "qrt_code.h"
#include "qrt_date.h"
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

/* HMAC-SHA-256's two padded keys, each already through SHA-256's first block, for
 * the few visitor keys a process meets (one, or two across a rotation): a visitor id
 * then copies a state and hashes its message and the inner digest instead of
 * hashing both padded keys again each time. Made once per
 * key and never changed, so threads read them without a lock; kept for the
 * process's life. A process that meets more keys computes the rest in full. */
#define HMAC_KEYS 4

typedef struct {
    unsigned char key[32];
    int keylen;
    EVP_MD_CTX *inner, *outer;
} hmac_pads;

static hmac_pads pads[HMAC_KEYS];
static int npads;                   /* published with release, read with acquire */
static pthread_mutex_t pads_lock = PTHREAD_MUTEX_INITIALIZER;

/* ctx through SHA-256 of the key padded with pad (RFC 2104). */
static int hmac_pad(EVP_MD_CTX *ctx, const qrt_visitor_key_t *k, unsigned char pad)
{
    unsigned char block[64];
    int i, ok;

    memset(block, pad, sizeof(block));
    for (i = 0; i < k->keylen; i++) {
        block[i] ^= k->key[i];
    }
    ok = EVP_DigestInit_ex(ctx, sha256(), NULL) && EVP_DigestUpdate(ctx, block, sizeof(block));
    memset(block, 0, sizeof(block));
    return ok;
}

static int pads_match(const hmac_pads *h, const qrt_visitor_key_t *k)
{
    return h->keylen == k->keylen && memcmp(h->key, k->key, (size_t)k->keylen) == 0;
}

/* k's pads, made on first use; NULL when there is no room or OpenSSL fails. */
static const hmac_pads *hmac_pads_of(const qrt_visitor_key_t *k)
{
    const hmac_pads *found = NULL;
    int n = __atomic_load_n(&npads, __ATOMIC_ACQUIRE), i;

    for (i = 0; i < n; i++) {
        if (pads_match(&pads[i], k)) {
            return &pads[i];
        }
    }
    pthread_mutex_lock(&pads_lock);
    n = npads;
    for (i = 0; i < n && !found; i++) {
        if (pads_match(&pads[i], k)) {
            found = &pads[i];
        }
    }
    if (!found && n < HMAC_KEYS) {
        hmac_pads *h = &pads[n];

        h->inner = EVP_MD_CTX_new();
        h->outer = EVP_MD_CTX_new();
        if (h->inner && h->outer && hmac_pad(h->inner, k, 0x36) && hmac_pad(h->outer, k, 0x5c)) {
            memcpy(h->key, k->key, sizeof(h->key));
            h->keylen = k->keylen;
            __atomic_store_n(&npads, n + 1, __ATOMIC_RELEASE);
            found = h;
        }
        else {
            EVP_MD_CTX_free(h->inner);
            EVP_MD_CTX_free(h->outer);
            h->inner = h->outer = NULL;
        }
    }
    pthread_mutex_unlock(&pads_lock);
    return found;
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

static int hex_value(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

int qrt_visitor_key_parse(qrt_visitor_key_t *k, const char *hexkey, const char *rotation)
{
    apr_size_t n = hexkey ? strlen(hexkey) : 0, i;

    memset(k, 0, sizeof(*k));
    if (n != 0 && n != 2 * sizeof(k->key)) {
        return -1;
    }
    for (i = 0; i < n; i += 2) {
        int hi = hex_value(hexkey[i]), lo = hex_value(hexkey[i + 1]);

        if (hi < 0 || lo < 0) {
            memset(k, 0, sizeof(*k));
            return -1;
        }
        k->key[i / 2] = (unsigned char)(hi * 16 + lo);
    }
    k->keylen = (int)(n / 2);
    if (rotation && !strcmp(rotation, "daily")) {
        k->daily = 1;
    }
    else if (rotation && *rotation && strcmp(rotation, "none") != 0) {
        memset(k, 0, sizeof(*k));
        return -1;
    }
    return 0;
}

char *qrt_visitor_key_generate(apr_pool_t *p)
{
    unsigned char raw[32];
    static const char hex[] = "0123456789abcdef";
    char *out;
    apr_size_t i;

    if (apr_generate_random_bytes(raw, sizeof(raw)) != APR_SUCCESS) {
        return NULL;
    }
    out = apr_palloc(p, 2 * sizeof(raw) + 1);
    for (i = 0; i < sizeof(raw); i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[2 * sizeof(raw)] = '\0';
    return out;
}

/* The message of a visitor id: [day "\n"] ip "\n" user agent (NULLs as empty). */
static void visitor_message(EVP_MD_CTX *ctx, const char *day, const char *ip,
                            const char *user_agent)
{
    if (day) {
        EVP_DigestUpdate(ctx, day, strlen(day));
        EVP_DigestUpdate(ctx, "\n", 1);
    }
    if (ip) {
        EVP_DigestUpdate(ctx, ip, strlen(ip));
    }
    EVP_DigestUpdate(ctx, "\n", 1);
    if (user_agent) {
        EVP_DigestUpdate(ctx, user_agent, strlen(user_agent));
    }
}

apr_int64_t qrt_visitor_id(const qrt_visitor_key_t *k, apr_int64_t visit_start,
                           const char *ip, const char *user_agent)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char md[EVP_MAX_MD_SIZE];
    apr_uint64_t id = 0;
    char day[16];
    const char *dayp = NULL;
    unsigned int n = 0, i;

    memset(md, 0, sizeof(md));
    if (k && k->daily) {
        apr_time_exp_t tm;

        apr_time_exp_gmt(&tm, apr_time_from_sec(visit_start));
        apr_snprintf(day, sizeof(day), "%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday);
        dayp = day;
    }
    if (ctx && k && k->keylen > 0) {
        /* HMAC-SHA-256 (RFC 2104; the key is shorter than SHA-256's block): each half
         * starts from its padded key's kept state, or hashes the padded key anew. */
        const hmac_pads *h = hmac_pads_of(k);

        if (h ? EVP_MD_CTX_copy_ex(ctx, h->inner) : hmac_pad(ctx, k, 0x36)) {
            visitor_message(ctx, dayp, ip, user_agent);
            EVP_DigestFinal_ex(ctx, md, &n);
        }
        if (n && (h ? EVP_MD_CTX_copy_ex(ctx, h->outer) : hmac_pad(ctx, k, 0x5c))) {
            EVP_DigestUpdate(ctx, md, n);
            EVP_DigestFinal_ex(ctx, md, &n);
        }
    }
    else if (ctx && EVP_DigestInit_ex(ctx, sha256(), NULL)) {
        /* Unkeyed: databases from before version 6 keep their ids. */
        visitor_message(ctx, dayp, ip, user_agent);
        EVP_DigestFinal_ex(ctx, md, &n);
    }
    EVP_MD_CTX_free(ctx);
    for (i = 0; i < 8; i++) {
        id = id << 8 | md[i];
    }
    return (apr_int64_t)id;
}

/* Longest --expires duration: 100 years, in seconds. */
#define TOKEN_EXPIRY_MAX (100LL * 366 * 86400)

int qrt_token_expiry_parse(const char *s, apr_int64_t now, apr_int64_t *at)
{
    apr_int64_t n = 0, unit, t;
    const char *c = s;

    if (!s || !*s) {
        return -1;
    }
    if (qrt_date_parse(s, &t, NULL) == 0) {
        if (t <= now) {
            return -1;
        }
        *at = t;
        return 0;
    }
    for (; *c >= '0' && *c <= '9'; c++) {
        n = n * 10 + (*c - '0');
        if (n > TOKEN_EXPIRY_MAX) {
            return -1;
        }
    }
    if (c == s || c[0] == '\0' || c[1] != '\0') {
        return -1;
    }
    unit = *c == 's' ? 1 : *c == 'm' ? 60 : *c == 'h' ? 3600 : *c == 'd' ? 86400
         : *c == 'w' ? 7 * 86400 : 0;
    if (unit == 0 || n == 0 || n > TOKEN_EXPIRY_MAX / unit) {
        return -1;
    }
    *at = now + n * unit;
    return 0;
}
