/* qrt_vset: an exact set of visitor ids, for counting distinct visitors in C
 * (no database, no httpd).
 *
 * SQLite's COUNT(DISTINCT visitor) builds a temporary b-tree of the strings: most of
 * the time of a report over a few listed trackers. A visitor id is 16 hex digits (a
 * 64-bit number): the set keeps those as numbers in an open-addressing table, and
 * any other string whole (exact either way). The store registers it with SQLite as
 * the aggregate qrt_ndistinct(x) (qrt_store.c). Memory is malloc'd and bounded: past
 * max members an add fails and the caller counts another way. */
#ifndef QRT_VSET_H
#define QRT_VSET_H

#include <stddef.h>
#include <apr.h>

typedef struct qrt_vset_t qrt_vset_t;

/* An empty set of at most max members; NULL without memory. */
qrt_vset_t *qrt_vset_make(apr_size_t max);
/* 1 when s (n bytes) was added, 0 when it was there, -1 when the set is full or out
 * of memory. */
int qrt_vset_add(qrt_vset_t *set, const char *s, apr_size_t n);
apr_size_t qrt_vset_count(const qrt_vset_t *set);
void qrt_vset_free(qrt_vset_t *set);

#endif
