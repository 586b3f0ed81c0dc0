/* qrt_aggblob: the sealed form of the report aggregates (no database, no httpd).
 *
 * The aggregates of qrt_agg.h are rows: counters per bucket, links, gaps, and the
 * visits they come from. A report over a week reads tens of thousands of those rows,
 * one at a time through SQL. Once a day no longer receives visits, its rows are also
 * kept sealed: one text value per (account, day or bucket, what), which a report
 * reads in one fetch and decodes here, in C, a few nanoseconds per entry.
 *
 *   counters (kinds QRT_AGG_T .. QRT_AGG_G): per group of the kind in one bucket
 *     (day, 16 days or 256 days) its scans, clicks and firsts (not rets: those of an
 *     old bucket grow with every return visit, so they stay rows);
 *   links (QRT_AGGBLOB_LINKS): the links and gaps whose later visit t lies in the day;
 *   visits (QRT_AGGBLOB_VISITS): the day's non-bot visits of aggregated trackers,
 *     each as its time, source and groups (for windows that end inside a day);
 *   quarter-hours (QRT_AGGBLOB_QUARTERS): the day's rows of agg_day.
 *
 * Sealed values are a cache: the rows stay the truth. Whatever changes the rows of a
 * day deletes that day's sealed values (and its 16- and 256-day buckets') in the same
 * transaction, and a later pass seals them again (qrt_store_agg_blob.c).
 *
 * Encoding: text, so that it is a TEXT value on SQLite and PostgreSQL alike (valid
 * UTF-8, no NUL). An unsigned number is written in groups of 5 bits, low group
 * first: '0'..'O' carry a group with more to follow, 'P'..'o' the last one. Signed
 * numbers are zigzagged; strings are a length and their bytes. A value starts with a
 * format letter and version.
 *
 * Version 1 (counters, and links and visits sealed before version 2) writes every
 * field of every entry that way. Version 2 of links and visits (about half the size)
 * keeps the string and tracker tables (trackers by their uses, most used first), then
 * gives the entry counts and, for a section with entries, small tables of the
 * browsers, the places (country and city) and, for links, the flags and the gaps'
 * (kind, group) pairs that its entries use, also by their uses, and how each field is
 * coded; then a bit stream, 6 bits per character ('0'..'9',
 * 'A'..'Z', 'a'..'z', '-', '_'), of every entry's fields in turn. A field is an index
 * into its table or a number counted from the value's smallest, each in truncated
 * binary (a fixed width, one bit shorter for the first values) or in an Exp-Golomb
 * code of the order that makes the value shortest (on the 10M-visit bench database a
 * visit takes 4.2 characters instead of 9.7, a link or gap 7.7 instead of 13.5). The
 * reader reads both versions. Version 3 of links (what is sealed now) holds the links,
 * then each kind's gaps, by their previous time instead of their time, and where each
 * kind's gaps start: a window's links whose previous visit lies before its start are a prefix of
 * each day's value (about as many bits: the previous times are now the differences,
 * the times in the day the fixed width). Unit-tested in test/unit/test_aggblob.c, fuzzed in
 * test/fuzz/fuzz_aggblob.c. */
#ifndef QRT_AGGBLOB_H
#define QRT_AGGBLOB_H

#include <apr_pools.h>
#include <apr_tables.h>
#include <apr_hash.h>

/* What a sealed value holds, beside the counter kinds 1 .. 6 of qrt_agg.h. */
#define QRT_AGGBLOB_LINKS  10
#define QRT_AGGBLOB_VISITS 11
/* A day's quarter-hours of agg_day (day-by-day uniques in any offset), in the
 * counters' format: grp the quarter-hour q, firsts its gap g. */
#define QRT_AGGBLOB_QUARTERS 12
/* The account's links of the day counted by the day of their previous visit, in the
 * counters' format: grp that day, scans the links (day-aligned windows of the whole
 * account: a few hundred entries where the links are tens of thousands). */
#define QRT_AGGBLOB_PDAYS 13

/* ---- writing ------------------------------------------------------------------- */

typedef struct qrt_aggblob_builder_t qrt_aggblob_builder_t;

/* A builder for one value. day_start: the first second of the day (links, visits),
 * 0 for counters. */
qrt_aggblob_builder_t *qrt_aggblob_builder_make(apr_pool_t *p, apr_int64_t day_start);

/* Links: a link row of agg_link (n links alike) and a gap row of agg_gaps (n gaps alike). */
void qrt_aggblob_add_link(qrt_aggblob_builder_t *b, apr_int64_t t, apr_int64_t p, int flags,
                          apr_int64_t tracker, const char *browser, const char *country,
                          const char *city, apr_int64_t n);
void qrt_aggblob_add_gap(qrt_aggblob_builder_t *b, int kind, apr_int64_t t, apr_int64_t p,
                         apr_int64_t grp, const char *val, apr_int64_t n);
/* Visits: one visit. */
void qrt_aggblob_add_visit(qrt_aggblob_builder_t *b, apr_int64_t t, int click,
                           apr_int64_t tracker, const char *browser, const char *country,
                           const char *city);
/* Counters: one group. */
void qrt_aggblob_add_count(qrt_aggblob_builder_t *b, apr_int64_t grp, const char *val,
                           apr_int64_t scans, apr_int64_t clicks, apr_int64_t firsts);

/* The encoded value (in the builder's pool). */
const char *qrt_aggblob_links(qrt_aggblob_builder_t *b);
/* Links in version 2, as before version 3 (the tests of values sealed then). */
const char *qrt_aggblob_links_v2(qrt_aggblob_builder_t *b);
const char *qrt_aggblob_visits(qrt_aggblob_builder_t *b);
const char *qrt_aggblob_counts(qrt_aggblob_builder_t *b);

/* ---- reading ------------------------------------------------------------------- */

/* What a value of version 2 is read with (qrt_aggblob.c). */
typedef struct qrt_aggblob_v2_t qrt_aggblob_v2_t;

/* A value being read. Strings and trackers are numbered in the value's own tables:
 * a reader may map each number to its group once per value. */
typedef struct {
    const char *s, *end;
    int format;                     /* 'L', 'V' or 'C' */
    int version;                    /* 1, 2 or 3 (links) */
    qrt_aggblob_v2_t *v2;           /* version 2: its tables and bit stream */
    apr_int64_t day_start;
    int nstr, ntrk;
    const char **str;               /* NUL-terminated copies */
    apr_int64_t *trk;
    int left;                       /* entries left in the current section */
    int section;
    apr_int64_t t;                  /* time of the previous entry */
    apr_int64_t grp;                /* counters: previous group */
} qrt_aggblob_t;

/* A link, a gap, a visit or a counter entry. Indexes are into str and trk (-1: none,
 * for gaps of kinds whose group is a string, ti; for others, si). */
typedef struct {
    apr_int64_t t, p, n;
    int flags, ti, bi, ci, yi;
} qrt_aggblob_link_t;
typedef struct {
    apr_int64_t t, p, n;
    int kind, ti, si;
} qrt_aggblob_gap_t;
typedef struct {
    apr_int64_t t, n;
    int click, ti, bi, ci, yi;
} qrt_aggblob_visit_t;
typedef struct {
    apr_int64_t grp, scans, clicks, firsts;
    const char *val;
} qrt_aggblob_count_t;

/* Opens a value of format 'L', 'V' or 'C' (APR_EINVAL when it is not one, or is cut
 * short). Counters: day_start is ignored. */
apr_status_t qrt_aggblob_open(qrt_aggblob_t *r, apr_pool_t *p, const char *data,
                              apr_int64_t day_start);

/* The next entry: 1, 0 at the end of the section, -1 when the value is damaged.
 * Links come first, by time (version 3: by previous time); then gaps, by time (version
 * 3: by kind, then previous time). */
int qrt_aggblob_next_link(qrt_aggblob_t *r, qrt_aggblob_link_t *out);
int qrt_aggblob_next_gap(qrt_aggblob_t *r, qrt_aggblob_gap_t *out);
int qrt_aggblob_next_visit(qrt_aggblob_t *r, qrt_aggblob_visit_t *out);
int qrt_aggblob_next_count(qrt_aggblob_t *r, apr_pool_t *p, qrt_aggblob_count_t *out);

/* Whether a value of links holds its links, and each kind's gaps, in order of their
 * previous time p (version 3; the gaps by kind first): a reader of p up to some time
 * may stop at the first later link, and at the first later gap of one kind read alone
 * (qrt_aggblob_gaps_of). */
int qrt_aggblob_by_p(const qrt_aggblob_t *r);
/* Past the rest of the links, to the gaps (version 3 jumps; others decode them): 0, or
 * -1 when the value is damaged. */
int qrt_aggblob_skip_links(qrt_aggblob_t *r);
/* Version 3: past the links to the gaps of kind alone (none when it has none), the
 * next gap calls giving them and then 0; 0, or -1 for a value that is not links. Other
 * versions: nothing is moved (their gaps of every kind follow, to be filtered). */
int qrt_aggblob_gaps_of(qrt_aggblob_t *r, int kind);

/* The gap kinds a value of links may hold, a bit (1 << kind) each: those of its pair
 * table (version 2), every kind (version 1). A reader of one kind skips the gaps when
 * its bit is not set. */
unsigned qrt_aggblob_gap_kinds(const qrt_aggblob_t *r);

/* The number codec, exposed for the tests. */
char *qrt_aggblob_put(char *out, apr_uint64_t v);
int qrt_aggblob_get(const char **s, const char *end, apr_uint64_t *v);

#endif
