/* qrt_geo: country and city of an IP address from a MaxMind-format database. */
#ifndef QRT_GEO_H
#define QRT_GEO_H

#include <apr_pools.h>

typedef struct qrt_geo_t qrt_geo_t;

/* Opens path (closed with p): a private copy of the file as it is now, held in memory
 * that no later write to the file can change (it is mapped by libmaxminddb, and a file
 * overwritten in place under a mapping, as cp does, crashes its readers with SIGBUS or
 * feeds them half-written data). NULL with *err on failure. */
qrt_geo_t *qrt_geo_open(apr_pool_t *p, const char *path, const char **err);
/* The two halves of qrt_geo_open, for a caller that keeps the copy (a restart that
 * cannot read the file goes on with the copy read before): a sealed anonymous file
 * (memfd) holding path's bytes, or -1 with *err; the database in such a copy (fd stays
 * the caller's; path: tried where /proc is not mounted, may be NULL). */
int qrt_geo_copy(apr_pool_t *p, const char *path, const char **err);
qrt_geo_t *qrt_geo_open_copy(apr_pool_t *p, int fd, const char *path, const char **err);
/* Looks ip up: *country (ISO code) and *city (English name) in p, NULL when the
 * database has no answer. Thread-safe. */
void qrt_geo_lookup(qrt_geo_t *g, apr_pool_t *p, const char *ip, const char **country,
                    const char **city);

#endif
