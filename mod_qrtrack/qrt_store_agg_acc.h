/* qrt_store_agg_acc: the accumulator of report-aggregate changes (qrt_store_agg_acc.c),
 * private to the store's aggregate files (write path, rebuild, reads). */
#ifndef QRT_STORE_AGG_ACC_H
#define QRT_STORE_AGG_ACC_H

#include "qrt_store.h"
#include "qrt_dict.h"
#include "qrt_agg.h"

#define AGG_LINK_FLUSH  200000      /* pending link rows that make the writers write */

/* An aggregated tracker: its account and the tags of its snapshot. */
typedef struct {
    apr_int64_t id;
    apr_int64_t account;
    const char **tags;          /* snapshot in agg_tag, sorted */
    int ntags;
} qrt_store_agg_trk_t;

/* Changes merged before they are written. */
typedef struct {
    apr_int64_t account, grp, b;
    const char *val;            /* interned */
    int kind, lvl;
} cnt_key;
typedef struct {
    cnt_key k;
    apr_int64_t scans, clicks, firsts, rets;
} cnt_ent;

typedef struct {
    apr_int64_t account, q;
    int g;
} day_key;
typedef struct {
    day_key k;
    apr_int64_t scans, clicks;
    apr_int64_t last;           /* the latest time added (0: none), agg_day.last_start */
} day_ent;

typedef struct {
    apr_int64_t account, t, p, tracker;
    const char *browser, *country, *city;   /* interned */
    int flags;
} lnk_key;
typedef struct {
    lnk_key k;
    apr_int64_t n;
    apr_int64_t bcy;            /* agg_bcy's id of (browser, country, city), when written */
} lnk_ent;

typedef struct {
    apr_int64_t account, t, p, grp;
    const char *val;            /* interned */
    int kind;
} gap_key;
typedef struct {
    gap_key k;
    apr_int64_t n;
    apr_int64_t vid;            /* agg_vals's id of the value, when written */
} gap_ent;

typedef struct {
    qrt_db_t *db;
    apr_pool_t *p;              /* strings, counters, days */
    apr_pool_t *lp;             /* links and gaps: cleared when written */
    apr_hash_t *strs;
    apr_hash_t *cnt, *day, *lnk, *gap;
    int nlinks;
    qrt_dict_cache_t *names;    /* agg_bcy's and agg_vals's ids when db has no cache */
    apr_hash_t *stale;          /* (account, day) whose sealed values its flushes dropped */
} qrt_store_agg_acc_t;

/* What one visit adds: the previous visit of the visitor in one group. */
typedef struct {
    int has;
    int same;                   /* it is the previous visit in the account */
    apr_int64_t t;
} qrt_store_agg_prev_t;

typedef struct {
    qrt_store_agg_prev_t a, tr, br, co, ci;
    qrt_store_agg_prev_t *tag;  /* per tag of the visit */
    int fg;                     /* the previous visit in the account has all its tags */
} qrt_store_agg_prevs_t;

/* Column col of row as a string, "" for NULL. */
const char *qrt_store_agg_acc_col(qrt_db_t *db, apr_dbd_row_t *row, int col);
/* s, or "" for NULL. */
const char *qrt_store_agg_acc_nz(const char *s);
/* strcmp for qsort and bsearch over arrays of const char *. */
int qrt_store_agg_acc_strcmp(const void *a, const void *b);
/* 1 when tag is among the n sorted tags. */
int qrt_store_agg_acc_has_tag(const char *const *tags, int n, const char *tag);
/* A qrt_row_fn that stores column 0 as an integer into *(apr_int64_t *)ctx. */
apr_status_t qrt_store_agg_acc_int_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row);

/* The aggregated tracker id from the cache, else from agg_trk; with create, a
 * tracker not yet aggregated is added with its current tags. */
apr_status_t qrt_store_agg_acc_trk_get(qrt_db_t *db, apr_pool_t *p, apr_hash_t *cache,
                                       apr_int64_t id, int create,
                                       qrt_store_agg_trk_t **out);
/* PostgreSQL's pipelined transaction: agg_trk_get of tracker id held for the next
 * round trip (qrt_db_hold_select; APR_ENOTIMPL outside one), then its entry put in
 * cache from the rows it returned, as qrt_store_agg_acc_trk_get would keep them (none
 * when they did not come, or the tracker is not aggregated yet: trk_get asks then). */
apr_status_t qrt_store_agg_acc_trk_hold(qrt_db_t *db, apr_pool_t *p, apr_int64_t id,
                                        qrt_pipe_rows_t **rows);
void qrt_store_agg_acc_trk_put(qrt_db_t *db, apr_pool_t *p, apr_hash_t *cache,
                               apr_int64_t id, const qrt_pipe_rows_t *rows);

/* An empty accumulator writing to db, living in p, for one transaction of db (its
 * flushes drop each day's sealed values once). */
qrt_store_agg_acc_t *qrt_store_agg_acc_make(qrt_db_t *db, apr_pool_t *p);

/* One pointer per distinct string, so that keys compare as bytes. */
const char *qrt_store_agg_acc_intern(qrt_store_agg_acc_t *a, const char *s);

/* Writes the counters (each day also into its 16- and 256-day buckets) and days. */
apr_status_t qrt_store_agg_acc_flush_counts(qrt_store_agg_acc_t *a);

/* Writes the links and gaps (adds or deletes rows) and forgets them. */
apr_status_t qrt_store_agg_acc_flush_links(qrt_store_agg_acc_t *a);

/* Adds (sign 1) or takes away (sign -1) the contribution of visit x, whose previous
 * visits in its groups are pv, to the aggregates of the account. */
void qrt_store_agg_acc_emit(qrt_store_agg_acc_t *a, int sign, apr_int64_t account,
                            const qrt_agg_visit_t *x, const qrt_store_agg_prevs_t *pv);

/* Adds or takes away the contributions of a visitor's visits in an account
 * (sorted by time, then id) from v[from] on: the visits before it are there as the
 * previous visits of those. */
void qrt_store_agg_acc_emit_list(qrt_store_agg_acc_t *a, apr_pool_t *p, int sign,
                                 apr_int64_t account, const qrt_agg_visit_t *v, int n,
                                 int from);

#endif
