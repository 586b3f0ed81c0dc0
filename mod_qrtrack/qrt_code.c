/* qrt_code: see qrt_code.h. */
#include <apr_general.h>

#include "qrt_code.h"

static const char alphabet[] =
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/* 248 = 4 * 62: bytes from 248 up are dropped so each character is
 * equally likely. */
#define ACCEPT_BELOW 248

apr_status_t qrt_code_generate(char *buf, int n)
{
    unsigned char rnd[64];
    int have = 0;

    if (!buf || n < 0) {
        return APR_EINVAL;
    }
    while (have < n) {
        apr_status_t rv;
        apr_size_t i;

        rv = apr_generate_random_bytes(rnd, sizeof(rnd));
        if (rv != APR_SUCCESS) {
            buf[0] = '\0';
            return rv;
        }
        for (i = 0; i < sizeof(rnd) && have < n; i++) {
            if (rnd[i] < ACCEPT_BELOW) {
                buf[have++] = alphabet[rnd[i] % 62];
            }
        }
    }
    buf[n] = '\0';
    return APR_SUCCESS;
}

int qrt_code_valid(const char *s)
{
    int i;

    if (!s) {
        return 0;
    }
    for (i = 0; s[i] != '\0'; i++) {
        char c = s[i];

        if (i >= QRT_CODE_MAX) {
            return 0;
        }
        if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z')
              || (c >= 'a' && c <= 'z'))) {
            return 0;
        }
    }
    return i >= QRT_CODE_MIN;
}

int qrt_code_custom_valid(const char *s)
{
    int i;

    if (!s) {
        return 0;
    }
    for (i = 0; s[i] != '\0'; i++) {
        char c = s[i];

        if (i >= QRT_CODE_CUSTOM_MAX) {
            return 0;
        }
        if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z')
              || (c >= 'a' && c <= 'z') || c == '_' || c == '-')) {
            return 0;
        }
    }
    return i >= QRT_CODE_CUSTOM_MIN;
}
