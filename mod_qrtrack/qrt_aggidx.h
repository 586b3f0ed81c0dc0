/* qrt_aggidx: one kind's links into a sealed day from earlier days, as an array.
 *
 * A report window counts, of each whole day inside it, the links (and the kind's gaps)
 * whose previous visit lies in a range before that day (before the window's start, or
 * inside the window for the R form). A sealed links value of version 3 holds them
 * first, by previous time, in a bit stream with the day's tables of strings and
 * trackers: decoding them, and opening the value, cost more than the counting. The
 * index holds those entries of one kind alone, by previous time, each as its previous
 * time (from the day's start), its group and its count, with the groups (tracker ids
 * or strings) once: a range is found by a binary search and summed in a loop. It is
 * plain memory (no pointers), so that qrt_aggcache keeps it beside the value's text,
 * under the value's seal. Entries whose previous visit lies in the day itself are not
 * held. Unit-tested in test/unit/test_aggidx.c. */
#ifndef QRT_AGGIDX_H
#define QRT_AGGIDX_H

#include <apr_pools.h>

typedef struct {
    apr_int64_t day_start;
    int kind, ngroups, nent;
    const apr_int64_t *gid;         /* kinds T and G: the groups' tracker ids */
    const char *const *gstr;        /* (read: qrt_aggidx_view fills it in p) */
    const apr_uint64_t *ghash;      /* kinds B, C and Y: each string's hash */
    const apr_int32_t *dp;          /* entries: previous time - day_start (< 0) */
    const apr_uint16_t *gi;         /* entries: group */
    const apr_uint16_t *n;          /* entries: count */
} qrt_aggidx_t;

/* The index of kind's entries of a sealed links value (data, of the day starting at
 * day_start), in p: *out, *len bytes. APR_ENOTIMPL when the value is not of version 3
 * or its entries do not fit the index (then the value is decoded); APR_EINVAL when the
 * value is damaged. */
apr_status_t qrt_aggidx_build(apr_pool_t *p, const char *data, apr_int64_t day_start,
                              int kind, const char **out, apr_size_t *len);

/* Reads an index built by qrt_aggidx_build (its strings into p). APR_EINVAL when it is
 * not one. */
apr_status_t qrt_aggidx_view(qrt_aggidx_t *x, apr_pool_t *p, const char *ix, apr_size_t len);

/* The first entry whose previous time is at least t (nent when none). */
int qrt_aggidx_from(const qrt_aggidx_t *x, apr_int64_t t);

/* The hash of a group's string (FNV-1a, 64 bits). */
apr_uint64_t qrt_aggidx_hash(const char *s);

#endif
