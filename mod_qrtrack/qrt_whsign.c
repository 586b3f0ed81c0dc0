/* qrt_whsign: Standard Webhooks signing keys and signatures (HMAC-SHA256, OpenSSL). */
#include <string.h>
#include <apr_strings.h>
#include <apr_lib.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "qrt_whsign.h"

int qrt_whsign_key_parse(const char *secret, qrt_whsign_key_t *key)
{
    unsigned char buf[QRT_WHSIGN_KEY_MAX + 3];
    apr_size_t n, pad = 0, i;
    int got;

    memset(key, 0, sizeof(*key));
    if (!secret) {
        return -1;
    }
    if (!strncmp(secret, QRT_WHSIGN_PREFIX, sizeof(QRT_WHSIGN_PREFIX) - 1)) {
        secret += sizeof(QRT_WHSIGN_PREFIX) - 1;
    }
    n = strlen(secret);
    if (n == 0 || n % 4 || n > 4 * ((QRT_WHSIGN_KEY_MAX + 2) / 3)) {
        return -1;
    }
    /* only base64 characters, '=' only as the last one or two */
    for (i = 0; i < n; i++) {
        char c = secret[i];

        if (c == '=') {
            if (i < n - 2) {
                return -1;
            }
            pad++;
        }
        else if (pad || !(apr_isalnum(c) || c == '+' || c == '/')) {
            return -1;
        }
    }
    got = EVP_DecodeBlock(buf, (const unsigned char *)secret, (int)n);
    if (got < 0 || (apr_size_t)got < pad || (apr_size_t)got - pad > QRT_WHSIGN_KEY_MAX
        || (apr_size_t)got == pad) {
        OPENSSL_cleanse(buf, sizeof(buf));
        return -1;
    }
    key->len = (apr_size_t)got - pad;
    memcpy(key->key, buf, key->len);
    OPENSSL_cleanse(buf, sizeof(buf));
    return 0;
}

int qrt_whsign_sign(const qrt_whsign_key_t *key, const char *msg_id, apr_int64_t timestamp,
                    const char *body, apr_size_t body_len, char *out)
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    char ts[32];
    EVP_MAC *hmac;
    EVP_MAC_CTX *ctx = NULL;
    OSSL_PARAM params[2];
    size_t len = 0;
    int ok = 0;

    out[0] = '\0';
    apr_snprintf(ts, sizeof(ts), "%" APR_INT64_T_FMT, timestamp);
    hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    if (hmac) {
        ctx = EVP_MAC_CTX_new(hmac);
    }
    params[0] = OSSL_PARAM_construct_utf8_string("digest", "SHA256", 0);
    params[1] = OSSL_PARAM_construct_end();
    if (ctx && EVP_MAC_init(ctx, key->key, key->len, params)
        && EVP_MAC_update(ctx, (const unsigned char *)msg_id, strlen(msg_id))
        && EVP_MAC_update(ctx, (const unsigned char *)".", 1)
        && EVP_MAC_update(ctx, (const unsigned char *)ts, strlen(ts))
        && EVP_MAC_update(ctx, (const unsigned char *)".", 1)
        && EVP_MAC_update(ctx, (const unsigned char *)body, body_len)
        && EVP_MAC_final(ctx, mac, &len, sizeof(mac)) && len == 32) {
        mac_len = (unsigned int)len;
        memcpy(out, "v1,", 3);
        EVP_EncodeBlock((unsigned char *)out + 3, mac, (int)mac_len);
        ok = 1;
    }
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(hmac);
    OPENSSL_cleanse(mac, sizeof(mac));
    return ok ? 0 : -1;
}
