/* qrt_hash: a fast 64-bit hash of bytes, 8 at a time (not keyed: for caches and
 * tables whose keys an attacker cannot choose freely, or whose collisions only
 * cost a lookup). */
#ifndef QRT_HASH_H
#define QRT_HASH_H

#include <apr.h>

apr_uint64_t qrt_hash64(const void *s, apr_size_t n);

#endif
