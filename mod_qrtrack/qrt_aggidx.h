/* qrt_aggidx: one kind's links into a sealed day from earlier days, as an array.
 *
 * A report window counts, of each whole day inside it, the links (and the kind's gaps)
 * whose previous visit lies in a range before that day (before the window's start, or
 * inside the window for the R form). A sealed links value of version 3 holds them
 * first, by previous time, in a bit stream with the day's tables of strings and
 * trackers: decoding them, and opening the value, cost more than the counting. The
 * index holds those entries of one kind alone, by previous time, each as its previous
 * time (16 bits from its block's, 32 from the day's start), its group and its count
 * (when not 1), with the groups (tracker ids or strings) once: a range is found by a
 * binary search over the blocks and summed in a loop. It is
 * plain memory (no pointers), so that qrt_aggcache keeps it beside the value's text,
 * under the value's seal. Entries whose previous visit lies in the day itself are not
 * held. Unit-tested in test/unit/test_aggidx.c. */
#ifndef QRT_AGGIDX_H
#define QRT_AGGIDX_H

#include <apr_pools.h>

typedef struct {
    apr_int64_t day_start;
    int kind, ngroups, nent, nblk;
    const apr_int64_t *gid;         /* kind T: the groups' tracker ids */
    const char *const *gstr;        /* kinds B, C and Y: the groups' strings (in p); kind
                                     * G: a tag (a gap's), or NULL for a tracker (gid: a
                                     * link's, counted for each of its tags) */
    const apr_uint64_t *ghash;      /* and their hashes */
    const apr_int32_t *base, *first;    /* the blocks of entries */
    const apr_uint16_t *off, *gi, *n;   /* the entries (n NULL: every count 1) */
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

/* Adds to sum[group] the counts of the entries whose previous time is in [p0, p1]. */
void qrt_aggidx_sum(const qrt_aggidx_t *x, apr_int64_t p0, apr_int64_t p1, apr_int64_t *sum);

/* The hash of a group's string (FNV-1a, 64 bits). */
apr_uint64_t qrt_aggidx_hash(const char *s);

#endif
