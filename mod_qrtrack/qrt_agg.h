/* qrt_agg: the arithmetic of the report aggregates (no database, no httpd).
 *
 * Reports count visits and distinct visitors per group (a tracker, the whole
 * account, a browser, a country, a city, a tag) over any window of seconds.
 * qrt_store_agg_write.c keeps (through qrt_store_agg_acc.c), for every group:
 *
 *   counters per day, per 16 days and per 256 days: scans, clicks,
 *     firsts (visits that are their visitor's first in the group) and
 *     rets (visits that are followed by a later visit of the same visitor
 *     in the group, counted in the bucket of the earlier visit);
 *   links: for every visit that is not its visitor's first in the group, the
 *     pair (t, p) of its time and the time of the visitor's previous visit in
 *     the group.
 *
 * The visitors of a group active in [s, e] are the visits in [s, e] whose
 * previous visit in the group is before s (or that have none), so
 *
 *   uniques = firsts[s, e] + #links(t in [s, e], p < s)            (L form)
 *           = visits[s, e] - rets[s, e] + #links(p in [s, e], t > e) (R form)
 *
 * Counters answer the full days of a window in a few rows; the partial days at
 * its edges are read from the visits; the link count is a range scan over the
 * links before, inside or after the window, whichever holds fewest.
 *
 * This file has the pure parts: bucket arithmetic, window splitting, the
 * previous-visit chains of one visitor, distinct counting for raw rows and the
 * percent change of the dashboard. Unit-tested in test/unit/test_agg.c. */
#ifndef QRT_AGG_H
#define QRT_AGG_H

#include <apr_pools.h>
#include <apr_tables.h>
#include <apr_hash.h>

/* Kinds of groups. */
#define QRT_AGG_T 1         /* one tracker (grp = tracker id) */
#define QRT_AGG_A 2         /* the account's trackers */
#define QRT_AGG_B 3         /* browser (val) */
#define QRT_AGG_C 4         /* country (val) */
#define QRT_AGG_Y 5         /* city (val) */
#define QRT_AGG_G 6         /* tag (val) */

/* Link flags: the previous visit in the account is also the previous visit in
 * the visit's tracker, browser, country, city, and in every tag of its tracker. */
#define QRT_AGG_F_T 1
#define QRT_AGG_F_B 2
#define QRT_AGG_F_C 4
#define QRT_AGG_F_Y 8
#define QRT_AGG_F_G 16

#define QRT_AGG_DAY 86400
#define QRT_AGG_QUARTER 900
/* Quarter-hours in a day: the cap of the gaps kept for day-by-day uniques. */
#define QRT_AGG_QDAY 96
/* Counter levels: 1 day, 16 days, 256 days. */
#define QRT_AGG_LEVELS 3
/* Open window bounds: before and after any visit (about 34,800 years from 1970), at
 * the start and the end of a day, so that an open window has no partial day at either
 * end (whose visits a report would read: every tracker's, for none). */
#define QRT_AGG_TMIN (-APR_INT64_C(12725829) * QRT_AGG_DAY)
#define QRT_AGG_TMAX (APR_INT64_C(12725829) * QRT_AGG_DAY - 1)

/* floor(a / b) for b > 0. */
apr_int64_t qrt_agg_fdiv(apr_int64_t a, apr_int64_t b);

/* The bucket of a day at a level (1, 2, 3). */
apr_int64_t qrt_agg_bucket(int lvl, apr_int64_t day);

/* Inclusive bucket range at one level. */
typedef struct {
    int lvl;
    apr_int64_t b0, b1;
} qrt_agg_range_t;

/* Covers the days [d0, d1) with at most 5 bucket ranges, coarsest in the middle.
 * Returns how many. */
int qrt_agg_split_days(apr_int64_t d0, apr_int64_t d1, qrt_agg_range_t out[5]);

/* A window [s, e] (inclusive seconds) as full days [d0, d1) and at most two
 * partial ranges (inclusive seconds) outside them. With no full day, d0 == d1
 * and the whole window is one partial range. */
typedef struct {
    apr_int64_t d0, d1;
    int nparts;
    apr_int64_t part[2][2];
} qrt_agg_window_t;
void qrt_agg_window_split(apr_int64_t s, apr_int64_t e, qrt_agg_window_t *w);

/* One visit of one visitor in one account, for chain building. */
typedef struct {
    apr_int64_t id;
    apr_int64_t t;
    apr_int64_t tracker;
    int click;
    const char *browser;            /* never NULL: "" for none */
    const char *country;
    const char *city;
    const char *const *tags;        /* the tracker's tags, sorted (strcmp) */
    int ntags;
} qrt_agg_visit_t;

/* The previous visit of the same visitor in each group of a visit: an index into
 * the visitor's list, -1 for none. */
typedef struct {
    int a;                          /* in the account: the visit before */
    int tr, br, co, ci;             /* same tracker, browser, country, city */
    int *tag;                       /* per tag of the visit */
    int fg;                         /* every tag of the visit is a tag of visit a */
} qrt_agg_prev_t;

/* Fills out[i] for the n visits v (sorted by time, then id) of one visitor. */
void qrt_agg_chain(apr_pool_t *p, const qrt_agg_visit_t *v, int n, qrt_agg_prev_t *out);

/* 1 if every string of a (sorted) is in b (sorted). */
int qrt_agg_subset(const char *const *a, int na, const char *const *b, int nb);

/* A set of visitors. A visitor written as a whole number in its shortest decimal form
 * (as the databases give the visitor column) is kept as its 8 bytes, in an open table
 * of at most twice as many slots, allocated with malloc and freed with the pool that
 * made the set: about 16 bytes a visitor where a string in a hash took 80. Any other
 * string is kept as itself. Two visitors are one when their strings are equal. */
typedef struct qrt_agg_vset qrt_agg_vset_t;
qrt_agg_vset_t *qrt_agg_vset_make(apr_pool_t *p);
/* 1 when visitor was not in s yet (it is now), 0 when it was, -1 without memory. */
int qrt_agg_vset_add(qrt_agg_vset_t *s, const char *visitor);
/* How many visitors s holds. */
apr_size_t qrt_agg_vset_count(const qrt_agg_vset_t *s);
/* Every visitor of from added to into: how many were new to it (-1 without memory). */
apr_int64_t qrt_agg_vset_union(qrt_agg_vset_t *into, const qrt_agg_vset_t *from);

/* Distinct counting for rows read from the visits: per key, scans, clicks and
 * the set of visitors. */
typedef struct {
    const char *key;
    apr_int64_t scans, clicks, uniques;
    qrt_agg_vset_t *seen;
} qrt_agg_group_t;
typedef struct {
    apr_pool_t *p;
    apr_hash_t *groups;             /* key -> qrt_agg_group_t* */
    int nomem;                      /* a visitor could not be kept: the counts are short */
} qrt_agg_groups_t;
qrt_agg_groups_t *qrt_agg_groups_make(apr_pool_t *p);
/* Counts one visit in the group key (created on first use). */
void qrt_agg_groups_add(qrt_agg_groups_t *g, const char *key, int click,
                        const char *visitor);
/* Sets the totals of group key (created on first use; no visitor set). */
void qrt_agg_groups_set(qrt_agg_groups_t *g, const char *key, apr_int64_t scans,
                        apr_int64_t clicks, apr_int64_t uniques);
/* The group of key, or NULL. */
qrt_agg_group_t *qrt_agg_groups_get(qrt_agg_groups_t *g, const char *key);
/* x's visits counted into into too, its visitors once each (into's uniques: the
 * union's): 0, or -1 without memory. */
int qrt_agg_group_merge(qrt_agg_group_t *into, const qrt_agg_group_t *x);

/* Percent change from previous to value, rounded to one decimal (half away from
 * zero). Returns 0 and leaves *out when previous is 0, else 1. */
int qrt_agg_change(apr_int64_t value, apr_int64_t previous, double *out);

#endif
