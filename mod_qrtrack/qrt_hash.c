/* qrt_hash: see qrt_hash.h. */
#include <string.h>
#include "qrt_hash.h"

apr_uint64_t qrt_hash64(const void *s, apr_size_t n)
{
    const char *c = s;
    apr_uint64_t h = 0x9e3779b97f4a7c15ULL ^ n, w;

    while (n >= 8) {
        memcpy(&w, c, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
        c += 8;
        n -= 8;
    }
    w = 0;
    memcpy(&w, c, n);
    h = (h ^ w) * 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

unsigned int qrt_hash_apr(const char *key, apr_ssize_t *klen)
{
    apr_uint64_t h;

    if (*klen == APR_HASH_KEY_STRING) {
        *klen = (apr_ssize_t)strlen(key);
    }
    h = qrt_hash64(key, (apr_size_t)*klen);
    return (unsigned int)(h ^ (h >> 32));
}

apr_hash_t *qrt_hash_make(apr_pool_t *p)
{
    return apr_hash_make_custom(p, qrt_hash_apr);
}
