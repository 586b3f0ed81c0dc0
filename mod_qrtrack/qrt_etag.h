/* qrt_etag: weak entity tags for conditional GETs (polling without cost). */
#ifndef QRT_ETAG_H
#define QRT_ETAG_H

#include <apr_pools.h>

/* A weak entity tag naming the state described by seed (len bytes):
 * W/"<32 hex digits of its MD5>". In p. */
const char *qrt_etag_make(apr_pool_t *p, const char *seed, apr_size_t len);

/* 1 when the If-None-Match header value header (NULL: absent) matches etag
 * by the weak comparison of RFC 9110 13.1.2: "*", or any entity tag of the
 * comma-separated list whose opaque part equals etag's, W/ ignored on both
 * sides. A malformed list matches only through the tags before the fault. */
int qrt_etag_match(const char *header, const char *etag);

#endif /* QRT_ETAG_H */
