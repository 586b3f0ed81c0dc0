/* qrt_vset: an exact set of visitor ids, for counting distinct visitors in C
 * (no database, no httpd).
 *
 * SQLite's COUNT(DISTINCT visitor) builds a temporary b-tree of the values: most of
 * the time of a report over a few listed trackers. A visitor id is a 64-bit number
 * (16 hex digits before schema 9): the set appends those as numbers to an array, made
 * distinct (one pass through a hash table of twice their number) when counted or when
 * the array is full, and keeps any other string whole in a hash table (exact either
 * way). The store registers it with SQLite as the aggregate qrt_ndistinct(x)
 * (qrt_store.c). Memory is malloc'd and bounded: an array of at most max ids (the next
 * power of two), refused once half of it is distinct ids (the pass's table holds twice
 * the array's ids while it runs), and at most max other strings; then an add fails and
 * the caller counts another way. */
#ifndef QRT_VSET_H
#define QRT_VSET_H

#include <stddef.h>
#include <apr.h>

typedef struct qrt_vset_t qrt_vset_t;

/* An empty set of at most max members; NULL without memory. */
qrt_vset_t *qrt_vset_make(apr_size_t max);
/* Adds s (n bytes): 0, or -1 when the set is full or out of memory. */
int qrt_vset_add(qrt_vset_t *set, const char *s, apr_size_t n);
/* Adds a visitor id as a number (schema 9 stores them so): the same member as its
 * 16 hex digits (big-endian, two's complement). 0, or -1 as qrt_vset_add. */
int qrt_vset_add_id(qrt_vset_t *set, apr_int64_t id);
/* The number of distinct members, -1 out of memory. */
apr_ssize_t qrt_vset_count(qrt_vset_t *set);
void qrt_vset_free(qrt_vset_t *set);

#endif
