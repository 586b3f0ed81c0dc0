/* qrt_hash: a fast 64-bit hash of bytes, 8 at a time (not keyed: for caches and
 * tables whose keys an attacker cannot choose freely, or whose collisions only
 * cost a lookup). */
#ifndef QRT_HASH_H
#define QRT_HASH_H

#include <apr.h>
#include <apr_hash.h>

apr_uint64_t qrt_hash64(const void *s, apr_size_t n);
/* qrt_hash64 as an apr_hashfunc_t (APR_HASH_KEY_STRING: strlen): 8 bytes a step, where
 * APR's default takes one. Unseeded: for keys an attacker cannot choose freely
 * (integers, ids derived by SHA-256, interned pointers), never for strings from requests. */
unsigned int qrt_hash_apr(const char *key, apr_ssize_t *klen);
/* apr_hash_make with qrt_hash_apr. */
apr_hash_t *qrt_hash_make(apr_pool_t *p);

#endif
