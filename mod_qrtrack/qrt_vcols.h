/* qrt_vcols: one tracker's non-bot visits of one UTC day (or of 16 sealed days) as
 * columns, in one block of plain memory (no database, no httpd).
 *
 * A report over a list of trackers counts distinct visitors across them, which the
 * aggregates cannot give: it reads the listed trackers' visits in its window. Read
 * through SQL that costs a row a visit (some 250 ns on the 10M-visit bench database).
 * A block holds a tracker's visits of a sealed day as arrays, so that qrt_aggcache
 * keeps it under the day's seals and a later report walks it at a few nanoseconds a
 * visit. Blocks are made only by the builder below, in this process.
 *
 * Small, so that a child's cache holds the blocks of long lists: a visit takes its
 * visitor (8 bytes), its time as seconds from the block's first (4; 8 in a block whose
 * visits lie 2^32 seconds apart or more), its source (1) and, but in a block of no
 * strings, its browser, country and city as indexes into the block's entries of each
 * column (1 byte each while a column has at most 256 entries, 2 up to 65,536, else 4).
 * An entry is the string's number in the process (qrt_strid.h), so that the many blocks
 * of a report share their strings; the block holds the text only of a string without a
 * number (the table of numbers full).
 *
 * Layout (native byte order, 8-byte aligned): a header (magic, visits n, each column's
 * entries, string bytes, flags (wide; days: the visits were added in time order and lie
 * within 64 UTC days, 8 a day or more), the latest time from the first (0 with the flag
 * wide); the first time, int64), int64 visitors[n], times [n] (uint32, or int64 with the
 * flag wide), each column's indexes [n] (each aligned to its width, the last padded to 4
 * bytes), uint32 entries (each column's in turn: a number, or QRT_VCOLS_TEXT | the offset
 * of its text), with the flag days uint32 visits and clicks of each day from the first
 * visit's (qrt_agg_fdiv's days), uint8 clicks [n], the texts (each NUL-terminated), zero
 * padding. Unit-tested in test/unit/test_vcols.c. */
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
/* The entry of string s (NULL: "") in column col (QRT_VCOLS_BROWSER ...): made when
 * new, the same for the same text. A caller that knows which of its visits share a
 * string (they share a user agent or a place) takes the entry once and adds visits by
 * entry, not by text. */
apr_uint32_t qrt_vcols_entry(qrt_vcols_builder_t *b, int col, const char *s);
/* A new entry of text s in column col, for a caller that knows s is not one of the
 * column's yet (it numbers its texts itself): no lookup. A builder given entries so takes
 * no other (qrt_vcols_entry and qrt_vcols_add would not find them). */
apr_uint32_t qrt_vcols_entry_new(qrt_vcols_builder_t *b, int col, const char *s);
/* Adds a visit whose strings are e[0 .. QRT_VCOLS_COLS) of qrt_vcols_entry or
 * qrt_vcols_entry_new (ignored in a block of no strings): the same block as qrt_vcols_add
 * of their texts. */
void qrt_vcols_add_entries(qrt_vcols_builder_t *b, apr_int64_t t, int click,
                           apr_int64_t visitor, const apr_uint32_t *e);
/* A block of no strings (for the reports by date, type or tag): its visits' strings are
 * not kept, nor its columns' indexes (no entries); before the first add. */
void qrt_vcols_builder_bare(qrt_vcols_builder_t *b);
/* Numbers the block's strings in ids when it is made (else every entry is a text). */
void qrt_vcols_builder_ids(qrt_vcols_builder_t *b, qrt_strid_t *ids);
/* The visits added so far. */
apr_size_t qrt_vcols_count(const qrt_vcols_builder_t *b);
/* The block (in the builder's pool, 8-byte aligned), its length in *len. */
const char *qrt_vcols_block(qrt_vcols_builder_t *b, apr_size_t *len);

/* The columns. */
#define QRT_VCOLS_BROWSER 0
#define QRT_VCOLS_COUNTRY 1
#define QRT_VCOLS_CITY 2
#define QRT_VCOLS_COLS 3
/* An entry that is the offset of a text in the block, not a number. */
#define QRT_VCOLS_TEXT 0x80000000u

/* A block opened for reading: pointers into it. */
typedef struct {
    apr_size_t n;
    apr_int64_t base;                               /* the times' origin */
    apr_int64_t tmin, tmax;                         /* no visit before or after (a block
                                                     * whose times take 8 bytes: the
                                                     * int64 range) */
    /* Its visits added in time order (within 64 UTC days, 8 a day or more on average):
     * the visits and clicks of day day0 + d (qrt_agg_fdiv(t, QRT_AGG_DAY)'s days) at
     * days[2 d] and days[2 d + 1], a day's visits the run after the days' before; ndays
     * 0 and days NULL in another block. */
    apr_uint32_t ndays;
    apr_int64_t day0;
    const apr_uint32_t *days;
    const apr_uint32_t *t32;                        /* time - base, or NULL: t64 */
    const apr_int64_t *t64;
    const apr_int64_t *visitor;
    const unsigned char *click;                     /* 1 a click, 0 a scan */
    const void *idx[QRT_VCOLS_COLS];                /* a visit's entry of each column */
    unsigned width[QRT_VCOLS_COLS];                 /* its bytes: 1, 2 or 4 (0: none) */
    apr_uint32_t nent[QRT_VCOLS_COLS];              /* 0 in a block of no strings */
    const apr_uint32_t *ent[QRT_VCOLS_COLS];
    const char *strs;
    apr_size_t strbytes;
} qrt_vcols_t;

/* Opens a block of len bytes: APR_SUCCESS, or APR_EINVAL when it is not one (its
 * header, sizes and texts; an entry at a time in qrt_vcols_entry_ok, a visit at a time
 * in qrt_vcols_check: a report opens thousands of blocks and uses few of their entries). */
apr_status_t qrt_vcols_open(qrt_vcols_t *v, const char *data, apr_size_t len);
/* Entry e of column col is one: a number, or the start of a text of the block (1), or
 * not (0: e past the column's entries, or a damaged block). */
int qrt_vcols_entry_ok(const qrt_vcols_t *v, int col, apr_uint32_t e);
/* Every entry, and every visit's entries, source and time in range (a block the builder
 * made has them): APR_SUCCESS, or APR_EINVAL. */
apr_status_t qrt_vcols_check(const qrt_vcols_t *v);

/* Visit k's time. */
#define qrt_vcols_time(v, k) \
    ((v)->t32 ? (v)->base + (apr_int64_t)(v)->t32[(k)] : (v)->t64[(k)])

/* Visit k's entry of column col (the block has entries). */
static APR_INLINE apr_uint32_t qrt_vcols_idx(const qrt_vcols_t *v, int col, apr_size_t k)
{
    switch (v->width[col]) {
    case 1:
        return ((const unsigned char *)v->idx[col])[k];
    case 2:
        return ((const apr_uint16_t *)v->idx[col])[k];
    default:
        return ((const apr_uint32_t *)v->idx[col])[k];
    }
}

/* Entry e of column col: its string's number, or 0 where the block holds its text
 * (qrt_vcols_text). */
#define qrt_vcols_num(v, col, e) \
    (((v)->ent[(col)][(e)] & QRT_VCOLS_TEXT) ? 0 : (v)->ent[(col)][(e)])
/* Its text, or NULL for a number. */
#define qrt_vcols_text(v, col, e) \
    (((v)->ent[(col)][(e)] & QRT_VCOLS_TEXT) \
     ? (v)->strs + ((v)->ent[(col)][(e)] & ~QRT_VCOLS_TEXT) : (const char *)NULL)

/* Visit k's string of column col, from its text or by its number in ids (in p when
 * copied); NULL when neither tells (a number ids did not give). */
const char *qrt_vcols_string(const qrt_vcols_t *v, qrt_strid_t *ids, int col, apr_size_t k,
                             apr_pool_t *p);

#endif
