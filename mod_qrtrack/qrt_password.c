/* qrt_password: PBKDF2-HMAC-SHA256 password hashes, strict parsing of stored ones. */
#include <string.h>
#include <apr_general.h>
#include <apr_strings.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include "qrt_password.h"
#include "qrt_valid.h"

#define PW_SALT     16
#define PW_KEY      32
#define PW_SALT_B64 24          /* base64 of PW_SALT bytes, with padding */
#define PW_KEY_B64  44          /* base64 of PW_KEY bytes, with padding */

static const char b64_chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Standard base64 of n bytes with padding into out (4 * ceil(n / 3) + 1 bytes). */
static void b64_encode(const unsigned char *in, apr_size_t n, char *out)
{
    apr_size_t i;

    for (i = 0; i + 2 < n; i += 3) {
        *out++ = b64_chars[in[i] >> 2];
        *out++ = b64_chars[((in[i] & 3) << 4) | (in[i + 1] >> 4)];
        *out++ = b64_chars[((in[i + 1] & 15) << 2) | (in[i + 2] >> 6)];
        *out++ = b64_chars[in[i + 2] & 63];
    }
    if (i < n) {
        *out++ = b64_chars[in[i] >> 2];
        if (i + 1 < n) {
            *out++ = b64_chars[((in[i] & 3) << 4) | (in[i + 1] >> 4)];
            *out++ = b64_chars[(in[i + 1] & 15) << 2];
        }
        else {
            *out++ = b64_chars[(in[i] & 3) << 4];
            *out++ = '=';
        }
        *out++ = '=';
    }
    *out = '\0';
}

static int b64_value(char c)
{
    const char *at = c ? strchr(b64_chars, c) : NULL;

    return at ? (int)(at - b64_chars) : -1;
}

/* Decodes exactly the base64 of n bytes (padded, canonical: unused bits zero) from
 * s into out. 0, or -1 when s does not start with such text. */
static int b64_decode(const char *s, unsigned char *out, apr_size_t n)
{
    apr_size_t i, o = 0, chars = 4 * ((n + 2) / 3);
    unsigned long acc = 0;
    int bits = 0;

    for (i = 0; i < chars; i++) {
        int v;

        if (o == n) {
            if (s[i] != '=') {
                return -1;
            }
            continue;
        }
        v = b64_value(s[i]);
        if (v < 0) {
            return -1;
        }
        acc = (acc << 6) | (unsigned long)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
            acc &= (1UL << bits) - 1;
        }
    }
    /* The bits left over after the last byte must be zero (one text per value). */
    return o == n && acc == 0 ? 0 : -1;
}

static int pw_derive(const char *pw, apr_size_t len, const unsigned char *salt,
                     unsigned long iterations, unsigned char *key)
{
    return PKCS5_PBKDF2_HMAC(pw, (int)len, salt, PW_SALT, (int)iterations, EVP_sha256(),
                             PW_KEY, key) == 1;
}

const char *qrt_password_hash(apr_pool_t *p, const char *pw, apr_size_t len)
{
    unsigned char salt[PW_SALT], key[PW_KEY];
    char salt64[PW_SALT_B64 + 1], key64[PW_KEY_B64 + 1];

    if (!pw || len < 1 || len > QRT_PASSWORD_MAX) {
        return NULL;
    }
    if (RAND_bytes(salt, sizeof(salt)) != 1
        || !pw_derive(pw, len, salt, QRT_PASSWORD_ITERATIONS, key)) {
        return NULL;
    }
    b64_encode(salt, sizeof(salt), salt64);
    b64_encode(key, sizeof(key), key64);
    OPENSSL_cleanse(key, sizeof(key));
    return apr_psprintf(p, QRT_PASSWORD_SCHEME "%d$%s$%s", QRT_PASSWORD_ITERATIONS,
                        salt64, key64);
}

/* The iterations of a stored hash at *s: decimal digits without a leading zero, within
 * the bounds, then '$'. Advances *s past the '$'; 0 when malformed. */
static unsigned long pw_iterations(const char **s)
{
    const char *c = *s;
    unsigned long n = 0;
    int digits = 0;

    if (*c == '0') {
        return 0;
    }
    while (*c >= '0' && *c <= '9') {
        if (++digits > 7) {
            return 0;
        }
        n = n * 10 + (unsigned long)(*c++ - '0');
    }
    if (*c != '$' || n < QRT_PASSWORD_ITER_MIN || n > QRT_PASSWORD_ITER_MAX) {
        return 0;
    }
    *s = c + 1;
    return n;
}

int qrt_password_verify(const char *encoded, const char *pw, apr_size_t len)
{
    unsigned char salt[PW_SALT], want[PW_KEY], got[PW_KEY];
    const char *s = encoded;
    apr_size_t plen = sizeof(QRT_PASSWORD_SCHEME) - 1;
    unsigned long iterations;
    int same;

    if (!s || !pw || len < 1 || len > QRT_PASSWORD_MAX
        || strncmp(s, QRT_PASSWORD_SCHEME, plen) != 0) {
        return 0;
    }
    s += plen;
    iterations = pw_iterations(&s);
    if (!iterations || strnlen(s, PW_SALT_B64 + 1 + PW_KEY_B64 + 1)
                       != PW_SALT_B64 + 1 + PW_KEY_B64
        || s[PW_SALT_B64] != '$'
        || b64_decode(s, salt, PW_SALT) != 0
        || b64_decode(s + PW_SALT_B64 + 1, want, PW_KEY) != 0) {
        return 0;
    }
    if (!pw_derive(pw, len, salt, iterations, got)) {
        return 0;
    }
    same = CRYPTO_memcmp(got, want, PW_KEY) == 0;
    OPENSSL_cleanse(got, sizeof(got));
    return same;
}

const char *qrt_password_check(const char *pw, apr_size_t len)
{
    const unsigned char *u = (const unsigned char *)pw;
    apr_size_t i = 0;

    if (!pw) {
        return "The password is missing.";
    }
    if (len < 1 || len > QRT_PASSWORD_MAX) {
        return "The password must be 1 to " APR_STRINGIFY(QRT_PASSWORD_MAX) " bytes long.";
    }
    while (i < len) {
        long cp;

        i += qrt_valid_utf8_char(u + i, len - i, &cp);
        if (cp < 0) {
            return "The password must be valid UTF-8.";
        }
        if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) {
            return "The password may not contain control characters.";
        }
    }
    return NULL;
}
