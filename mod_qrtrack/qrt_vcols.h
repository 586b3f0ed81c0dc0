/* qrt_vcols: one tracker's non-bot visits of one UTC day (or of 16 sealed days) as
 * columns, in one block of plain memory (no database, no httpd).
 *
 * A report over a list of trackers counts distinct visitors across them, which the
 * aggregates cannot give: it reads the listed trackers' visits in its window. Read
 * through SQL that costs a row a visit (some 250 ns on the 10M-visit bench database).
 * A block holds a tracker's visits of a sealed day as arrays (time, visitor, source
 * and the browser, country and city as indexes into the block's own strings), so that
 * qrt_aggcache keeps it under the day's seals and a later report walks it at a few
 * nanoseconds a visit. Blocks are made only by the builder below, in this process.
 *
 * Layout (native byte order, 8-byte aligned): a header (magic, visits n, strings
 * nstr, string bytes), int64 times[n], int64 visitors[n], uint32 browser, country and
 * city indexes [n] each (none in a block of no strings), uint32 string offsets [nstr],
 * uint32 string numbers [nstr] (qrt_strid.h; 0: none), uint8 clicks [n], the strings
 * (each NUL-terminated), zero padding. Unit-tested in test/unit/test_vcols.c. */
#ifndef QRT_VCOLS_H
#define QRT_VCOLS_H

#include <apr_pools.h>

#include "qrt_strid.h"

typedef struct qrt_vcols_builder_t qrt_vcols_builder_t;

/* An empty block's builder, in p. */
qrt_vcols_builder_t *qrt_vcols_builder_make(apr_pool_t *p);
/* Adds a visit (NULL strings: ""). */
void qrt_vcols_add(qrt_vcols_builder_t *b, apr_int64_t t, int click, apr_int64_t visitor,
                   const char *browser, const char *country, const char *city);
/* A block of no strings (for the reports by date, type or tag): its visits' strings are
 * not kept, nor its string columns (nstr 0, browser, country and city NULL); before
 * the first add. */
void qrt_vcols_builder_bare(qrt_vcols_builder_t *b);
/* Numbers the block's strings in ids when it is made (else they are 0). */
void qrt_vcols_builder_ids(qrt_vcols_builder_t *b, qrt_strid_t *ids);
/* The visits added so far. */
apr_size_t qrt_vcols_count(const qrt_vcols_builder_t *b);
/* The block (in the builder's pool, 8-byte aligned), its length in *len. */
const char *qrt_vcols_block(qrt_vcols_builder_t *b, apr_size_t *len);

/* A block opened for reading: pointers into it. */
typedef struct {
    apr_size_t n;
    apr_uint32_t nstr;
    const apr_int64_t *t, *visitor;
    const apr_uint32_t *browser, *country, *city;   /* < nstr (qrt_vcols_check); NULL
                                                     * when nstr is 0 */
    const unsigned char *click;                     /* 1 a click, 0 a scan */
    const apr_uint32_t *stroff;
    const apr_uint32_t *strid;                      /* [nstr]: a string's number, or 0 */
    const char *strs;
} qrt_vcols_t;

/* Opens a block of len bytes: APR_SUCCESS, or APR_EINVAL when it is not one (its
 * header, sizes and strings; a visit at a time in qrt_vcols_check). */
apr_status_t qrt_vcols_open(qrt_vcols_t *v, const char *data, apr_size_t len);
/* Every visit's indexes and source in range (a block the builder made has them):
 * APR_SUCCESS, or APR_EINVAL. */
apr_status_t qrt_vcols_check(const qrt_vcols_t *v);

/* String i of an opened block (i < nstr). */
#define qrt_vcols_str(v, i) ((v)->strs + (v)->stroff[(i)])

#endif
