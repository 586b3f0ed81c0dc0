/* qrt_store_agg_read: reads of the report aggregates (counters, links, gaps, days)
 * over any window, of the visits themselves where the aggregates do not answer, of
 * the aggregates' state and of the trackers as the reports see them. See
 * qrt_store_agg_read.h. */
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <apr_strings.h>
#include "qrt_store.h"
#include "qrt_store_agg_acc.h"
#include "qrt_store_agg_read.h"
#include "qrt_store_agg_blob.h"
#include "qrt_aggidx.h"
#include "qrt_aggblob.h"
#include "qrt_aggcache.h"
#include "qrt_vgroups.h"
#include "qrt_trim.h"

#define AGG_RAW_PAGE    20000       /* visits per page of the raw reads */
#define AGG_FEW         64          /* listed trackers read one by one up to this many */
#define AGG_LO (-(APR_INT64_C(1) << 50))
#define AGG_HI (APR_INT64_C(1) << 50)
#define AGG_DAY_SHIFT APR_INT64_C(10000000)
#define AGG_ROW_COST    20          /* a link row read through SQL, in links decoded */
#define AGG_R_COST      20000       /* the R form's counter rows, in links decoded */
#define AGG_R_COST_MANY 400000      /* the same for kinds of many groups (T, Y, G) */
#define AGG_IX_KIND     100         /* + kind: a day's index of links (qrt_aggidx.h) */
#define NAMES_RANGE_MIN 64          /* names_of: ids listed before a range is read */
#define NAMES_RANGE_FILL 4          /* ... spanning fewer than this many ids a listed one */
#define WIN_PIECES      4           /* a window's partial days: pieces of one UTC day */

/* The statements of a kind (QRT_AGG_T .. QRT_AGG_G), of a grouping (QRT_AGG_RAW_*). */
static const char *const agg_links[3][7] = {
    { NULL,             /* by time (BY_T) */
      SQL_report_links_by_time_tracker,
      SQL_report_links_by_time_account,
      SQL_report_links_by_time_browser,
      SQL_report_links_by_time_country,
      SQL_report_links_by_time_city,
      SQL_report_links_by_time_tag },
    { NULL,             /* by previous time (BY_P) */
      SQL_report_links_by_previous_time_tracker,
      SQL_report_links_by_previous_time_account,
      SQL_report_links_by_previous_time_browser,
      SQL_report_links_by_previous_time_country,
      SQL_report_links_by_previous_time_city,
      SQL_report_links_by_previous_time_tag },
    { NULL,             /* by time, of sealed days whose values are lost (BY_T_SEALED) */
      SQL_report_links_of_lost_seals_tracker,
      SQL_report_links_of_lost_seals_account,
      SQL_report_links_of_lost_seals_browser,
      SQL_report_links_of_lost_seals_country,
      SQL_report_links_of_lost_seals_city,
      SQL_report_links_of_lost_seals_tag } };
/* (a partial day's visits by tracker, account and tag: win_partial_trackers) */
static const char *const agg_raw[7] = {
    NULL, NULL, NULL,
    SQL_report_edge_visits_browser,
    SQL_report_edge_visits_country,
    SQL_report_edge_visits_city,
    NULL };
static const char *const agg_rg[7] = {
    SQL_report_listed_total,
    SQL_report_listed_by_type,
    SQL_report_listed_by_tag,
    SQL_report_listed_by_date,
    SQL_report_listed_by_browser,
    SQL_report_listed_by_city,
    SQL_report_listed_by_country };
static const char *const agg_rgd[7] = {
    SQL_report_listed_total_exact,
    SQL_report_listed_by_type_exact,
    SQL_report_listed_by_tag_exact,
    SQL_report_listed_by_date_exact,
    SQL_report_listed_by_browser_exact,
    SQL_report_listed_by_city_exact,
    SQL_report_listed_by_country_exact };

/* ---- reads: one kind over a window ----------------------------------------- */

typedef struct {
    qrt_agg_row_t row;
    apr_int64_t firsts, rets;   /* counters of the full days */
    apr_int64_t pv;             /* visits of the partial days */
    apr_int64_t pt, pp;         /* links with t, with p in the partial days */
    apr_int64_t link;           /* the L or R link count */
} agg_grp;

typedef struct {
    apr_pool_t *p;
    apr_hash_t *groups;         /* grp bytes + val -> agg_grp */
    int field;                  /* which link count a link query adds to */
} agg_win;

enum { F_PT, F_PP, F_LINK };

static agg_grp *win_group(agg_win *w, apr_int64_t grp, const char *val)
{
    char buf[320], *key = buf;
    apr_size_t n = strlen(val);
    agg_grp *g;

    if (n + sizeof(grp) > sizeof(buf)) {
        key = apr_palloc(w->p, n + sizeof(grp));
    }
    memcpy(key, &grp, sizeof(grp));
    memcpy(key + sizeof(grp), val, n);
    g = apr_hash_get(w->groups, key, n + sizeof(grp));
    if (!g) {
        g = apr_pcalloc(w->p, sizeof(*g));
        g->row.grp = grp;
        g->row.val = apr_pstrdup(w->p, val);
        key = apr_pmemdup(w->p, key, n + sizeof(grp));
        apr_hash_set(w->groups, key, n + sizeof(grp), g);
    }
    return g;
}

static apr_status_t win_cnt_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_win *w = ctx;
    agg_grp *g = win_group(w, qrt_db_int(db, row, 0, 0), qrt_store_agg_acc_col(db, row, 1));

    g->row.scans += qrt_db_int(db, row, 2, 0);
    g->row.clicks += qrt_db_int(db, row, 3, 0);
    g->firsts += qrt_db_int(db, row, 4, 0);
    g->rets += qrt_db_int(db, row, 5, 0);
    return APR_SUCCESS;
}

/* Visits of a partial day, n[0] scans and n[1] clicks, added to the group of (grp, val). */
static void win_visits_add(agg_win *w, apr_int64_t grp, const char *val,
                           const apr_int64_t *n)
{
    agg_grp *g;

    if (n[0] + n[1] == 0) {
        return;
    }
    g = win_group(w, grp, val);
    g->row.scans += n[0];
    g->row.clicks += n[1];
    g->pv += n[0] + n[1];
}

static apr_status_t win_raw_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    apr_int64_t n[2];

    n[0] = qrt_db_int(db, row, 2, 0);
    n[1] = qrt_db_int(db, row, 3, 0);
    win_visits_add(ctx, qrt_db_int(db, row, 0, 0), qrt_store_agg_acc_col(db, row, 1), n);
    return APR_SUCCESS;
}

/* n links added to the group of (grp, val), to w->field. */
static void win_link_add(agg_win *w, apr_int64_t grp, const char *val, apr_int64_t n)
{
    agg_grp *g = win_group(w, grp, val);

    if (w->field == F_PT) {
        g->pt += n;
    }
    else if (w->field == F_PP) {
        g->pp += n;
    }
    else {
        g->link += n;
    }
}

static apr_status_t win_link_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    win_link_add(ctx, qrt_db_int(db, row, 0, 0), qrt_store_agg_acc_col(db, row, 1),
                 qrt_db_int(db, row, 2, 0));
    return APR_SUCCESS;
}

/* Counter sums of a kind over at most 5 bucket ranges into w; when ids is given (an id
 * list, qrt_db_id_list; kind QRT_AGG_T), of those trackers alone, in the same one
 * statement. */
static apr_status_t win_counter_ranges1(qrt_db_t *db, apr_pool_t *p, agg_win *w, int kind,
                                        apr_int64_t account, const char *ids,
                                        const qrt_agg_range_t *r, int n)
{
    apr_int64_t vals[5][5];
    const void *args[26];
    int i, k = 0;

    if (n == 0) {
        return APR_SUCCESS;
    }
    if (ids) {
        args[k++] = ids;
    }
    for (i = 0; i < 5; i++) {
        vals[i][0] = kind;
        vals[i][1] = account;
        vals[i][2] = i < n ? r[i].lvl : 0;
        vals[i][3] = i < n ? r[i].b0 : 1;
        vals[i][4] = i < n ? r[i].b1 : 0;
        args[k++] = &vals[i][0];
        args[k++] = &vals[i][1];
        args[k++] = &vals[i][2];
        args[k++] = &vals[i][3];
        args[k++] = &vals[i][4];
    }
    return qrt_db_each(db, p, ids ? SQL_report_counters_sum_of_groups : SQL_report_counters_sum,
                       args, win_cnt_row, w);
}

static apr_status_t win_counter_ranges(qrt_db_t *db, apr_pool_t *p, agg_win *w, int kind,
                                       apr_int64_t account, const qrt_agg_range_t *r, int n)
{
    return win_counter_ranges1(db, p, w, kind, account, NULL, r, n);
}

/* Counter sums of kind QRT_AGG_T over the full days [d0, d1) into w, of the n trackers
 * ids alone: one statement, where one a tracker cost a round trip each on PostgreSQL
 * (a dashboard over 64 trackers, 256 of them). */
static apr_status_t win_counters_of(qrt_db_t *db, apr_pool_t *p, agg_win *w,
                                    apr_int64_t account, const apr_int64_t *ids, int n,
                                    apr_int64_t d0, apr_int64_t d1)
{
    qrt_agg_range_t r[5];
    apr_array_header_t *list = apr_array_make(p, n > 0 ? n : 1, sizeof(apr_int64_t));
    int i;

    if (n <= 0) {
        return APR_SUCCESS;
    }
    for (i = 0; i < n; i++) {
        APR_ARRAY_PUSH(list, apr_int64_t) = ids[i];
    }
    return win_counter_ranges1(db, p, w, QRT_AGG_T, account, qrt_db_id_list(db, p, list), r,
                               qrt_agg_split_days(d0, d1, r));
}

/* Counter sums of a kind over the full days [d0, d1) into w. */
static apr_status_t win_counters(qrt_db_t *db, apr_pool_t *p, agg_win *w, int kind,
                                 apr_int64_t account, apr_int64_t d0, apr_int64_t d1)
{
    qrt_agg_range_t r[5];
    int n = qrt_agg_split_days(d0, d1, r);

    return win_counter_ranges1(db, p, w, kind, account, NULL, r, n);
}

/* How win_links finds its rows: by visit_time (the days not sealed, unsealed = 1), by
 * previous_time, or by visit_time along every link of the account (a sealed day whose
 * values are gone, unsealed = 0). */
enum { BY_T, BY_P, BY_T_SEALED };

static apr_status_t win_links_raw(qrt_db_t *db, apr_pool_t *p, agg_win *w, int kind,
                                  int by_p, const void **largs);
static apr_status_t win_gaps_raw(qrt_db_t *db, apr_pool_t *p, agg_win *w, int by_p,
                                 const void **gargs);

/* Links of a kind with t in [t0, t1] and p in [p0, p1], scanned as `by` says, added
 * to field of the groups. */
static apr_status_t win_links(qrt_db_t *db, apr_pool_t *p, agg_win *w, int kind,
                              apr_int64_t account, int by, apr_int64_t t0,
                              apr_int64_t t1, apr_int64_t p0, apr_int64_t p1, int field)
{
    static const char *const gaps[] = {
        SQL_report_gaps_by_time, SQL_report_gaps_by_previous_time, SQL_report_gaps_of_lost_seals };
    apr_int64_t k = kind;
    const void *largs[5], *gargs[6];
    int by_p = by == BY_P;
    apr_status_t rv;

    w->field = field;
    largs[0] = gargs[1] = &account;
    largs[1] = gargs[2] = by_p ? &p0 : &t0;
    largs[2] = gargs[3] = by_p ? &p1 : &t1;
    largs[3] = gargs[4] = by_p ? &t0 : &p0;
    largs[4] = gargs[5] = by_p ? &t1 : &p1;
    gargs[0] = &k;
    if (by == BY_T && kind != QRT_AGG_A && kind != QRT_AGG_T
        && qrt_db_dialect_is(db, QRT_DIALECT_SQLITE)) {
        /* the days not sealed: their rows added up here (win_links_raw) */
        rv = win_links_raw(db, p, w, kind, 0, largs);
        return rv == APR_SUCCESS ? win_gaps_raw(db, p, w, 0, gargs) : rv;
    }
    if (by == BY_P && kind != QRT_AGG_A && kind != QRT_AGG_T
        && qrt_db_dialect_is(db, QRT_DIALECT_SQLITE)) {
        /* the same by previous time (a window's partial day, in the R form) */
        rv = win_links_raw(db, p, w, kind, 1, largs);
        return rv == APR_SUCCESS ? win_gaps_raw(db, p, w, 1, gargs) : rv;
    }
    rv = qrt_db_each(db, p, agg_links[by][kind], largs, win_link_row, w);
    if (rv == APR_SUCCESS && kind != QRT_AGG_A) {
        rv = qrt_db_each(db, p, gaps[by], gargs, win_link_row, w);
    }
    return rv;
}

/* ---- reads: sealed values (qrt_aggblob.h), the rows where there are none ----------- */

/* A map of 64-bit keys to pointers (open addressing), in a request's pool. */
typedef struct {
    apr_pool_t *p;
    apr_uint64_t *keys;
    void **vals;
    apr_size_t cap, n;
} ab_map;

static void **map_slot(ab_map *m, apr_uint64_t key)
{
    apr_size_t i;

    if (m->n * 2 >= m->cap) {
        ab_map old = *m;

        m->cap = m->cap ? m->cap * 2 : 1024;
        m->keys = apr_pcalloc(m->p, m->cap * sizeof(*m->keys));
        m->vals = apr_pcalloc(m->p, m->cap * sizeof(*m->vals));
        m->n = 0;
        for (i = 0; i < old.cap; i++) {
            if (old.vals[i]) {
                *map_slot(m, old.keys[i]) = old.vals[i];
                m->n++;
            }
        }
    }
    i = (apr_size_t)((key * APR_UINT64_C(0x9E3779B97F4A7C15)) >> 20) & (m->cap - 1);
    while (m->vals[i] && m->keys[i] != key) {
        i = (i + 1) & (m->cap - 1);
    }
    if (!m->vals[i]) {
        m->keys[i] = key;
    }
    return &m->vals[i];
}

/* ---- reads: the links of the days not sealed, added up here (SQLite) -------------- */

/* A day not sealed yet (today, tomorrow) holds a link row for most of its visits, and
 * gap rows: grouped in SQL through a join by browser, country, city, tag or value, its
 * rows went through a temporary B-tree keyed by the strings. They are read as they are,
 * along agg_link_u and agg_gaps_u, and added up here by tracker, by entry of agg_bcy or
 * of agg_vals; the entries found are then named in one statement. (By tracker alone,
 * SQL's grouping is as fast: kind T keeps its statement.) */

typedef struct {
    ab_map sums;                /* key -> apr_int64_t (links) */
    apr_array_header_t *keys;   /* apr_int64_t, in the order found */
} raw_links;

static apr_int64_t *raw_sum(ab_map *m, apr_array_header_t *keys, apr_int64_t key)
{
    apr_int64_t **sum = (apr_int64_t **)map_slot(m, (apr_uint64_t)key);

    if (!*sum && keys) {
        *sum = apr_pcalloc(m->p, sizeof(**sum));
        m->n++;
        APR_ARRAY_PUSH(keys, apr_int64_t) = key;
    }
    return *sum;
}

/* A row (key, links). */
static apr_status_t raw_link_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    raw_links *c = ctx;

    *raw_sum(&c->sums, c->keys, qrt_db_int(db, row, 0, 0)) += qrt_db_int(db, row, 1, 0);
    return APR_SUCCESS;
}

typedef struct {
    agg_win *w;
    ab_map *sums;
    int name;                   /* the name's column */
} raw_names;

/* A row (key, ..., name at column r->name): the key's links to the name's group. */
static apr_status_t raw_name_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    raw_names *r = ctx;
    apr_int64_t *sum = raw_sum(r->sums, NULL, qrt_db_int(db, row, 0, 0));

    if (sum) {
        win_link_add(r->w, 0, qrt_store_agg_acc_col(db, row, r->name), *sum);
    }
    return APR_SUCCESS;
}

/* The rows of the dictionary entries ids (the key first in each row) through fn: the
 * list statement (a JSON array of the ids), or, when the ids fill most of the range
 * between the least and the greatest, the range statement, which reads that range in
 * key order instead of looking each id up (1,500 ids: 0.1 ms against 1.3); fn skips
 * the rows of ids not listed. The range read is bounded by the list's own length. */
static apr_status_t names_of(qrt_db_t *db, apr_pool_t *p, const char *list,
                             const char *range, const apr_array_header_t *ids,
                             qrt_row_fn *fn, void *ctx)
{
    apr_int64_t lo = APR_INT64_MAX, hi = APR_INT64_MIN;
    const void *args[2];
    int i;

    for (i = 0; i < ids->nelts; i++) {
        apr_int64_t id = APR_ARRAY_IDX(ids, i, apr_int64_t);

        lo = id < lo ? id : lo;
        hi = id > hi ? id : hi;
    }
    if (ids->nelts >= NAMES_RANGE_MIN && hi - lo < (apr_int64_t)ids->nelts * NAMES_RANGE_FILL) {
        args[0] = &lo;
        args[1] = &hi;
        return qrt_db_each_stream(db, p, range, args, fn, ctx);
    }
    args[0] = qrt_db_id_list(db, p, ids);
    return qrt_db_each_stream(db, p, list, args, fn, ctx);
}

/* Kinds B, C, Y and G. */
static apr_status_t win_links_raw(qrt_db_t *db, apr_pool_t *p, agg_win *w, int kind,
                                  int by_p, const void **largs)
{
    static const char *const stmt[2][2] = {
        { SQL_report_links_by_time_raw_entries, SQL_report_links_by_time_raw_trackers },
        { SQL_report_links_by_previous_time_raw_entries,
          SQL_report_links_by_previous_time_raw_trackers } };
    static const apr_int64_t bits[7] = { 0, 0, 0, QRT_AGG_F_B, QRT_AGG_F_C, QRT_AGG_F_Y,
                                         QRT_AGG_F_G };
    raw_links c;
    raw_names r;
    const void *args[6];
    apr_status_t rv;

    memset(&c, 0, sizeof(c));
    c.sums.p = p;
    c.keys = apr_array_make(p, 256, sizeof(apr_int64_t));
    memcpy(args, largs, 5 * sizeof(*args));
    args[5] = &bits[kind];
    rv = qrt_db_each_stream(db, p, stmt[by_p][kind == QRT_AGG_G], args, raw_link_row, &c);
    if (rv != APR_SUCCESS || c.keys->nelts == 0) {
        return rv;
    }
    /* by the trackers' tags (a link to each of its tracker's tags), or by the names of
     * the agg_bcy entries */
    r.w = w;
    r.sums = &c.sums;
    r.name = kind == QRT_AGG_G ? 1 : kind == QRT_AGG_B ? 1 : kind == QRT_AGG_C ? 2 : 3;
    return kind == QRT_AGG_G
           ? names_of(db, p, SQL_report_tags_of, SQL_report_tags_of_range, c.keys,
                      raw_name_row, &r)
           : names_of(db, p, SQL_report_bcy_names, SQL_report_bcy_names_range, c.keys,
                      raw_name_row, &r);
}

/* The gaps of the days not sealed: summed by (tracker, value), the values named. */
typedef struct {
    apr_pool_t *p;
    apr_hash_t *sums;           /* (tracker, value id) -> apr_int64_t */
    ab_map vals;                /* value id -> "" (seen) */
    apr_array_header_t *ids;    /* the value ids, in the order found */
} raw_gaps;

static apr_status_t raw_gap_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    raw_gaps *c = ctx;
    apr_int64_t key[2], *sum;

    key[0] = qrt_db_int(db, row, 0, 0);
    key[1] = qrt_db_int(db, row, 1, 0);
    sum = apr_hash_get(c->sums, key, sizeof(key));
    if (!sum) {
        sum = apr_pcalloc(c->p, sizeof(*sum));
        apr_hash_set(c->sums, apr_pmemdup(c->p, key, sizeof(key)), sizeof(key), sum);
        raw_sum(&c->vals, c->ids, key[1]);
    }
    *sum += qrt_db_int(db, row, 2, 0);
    return APR_SUCCESS;
}

static apr_status_t raw_val_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    apr_hash_t *names = ctx;
    apr_int64_t *id = apr_palloc(apr_hash_pool_get(names), sizeof(*id));

    *id = qrt_db_int(db, row, 0, 0);
    apr_hash_set(names, id, sizeof(*id),
                 apr_pstrdup(apr_hash_pool_get(names), qrt_store_agg_acc_col(db, row, 1)));
    return APR_SUCCESS;
}

static apr_status_t win_gaps_raw(qrt_db_t *db, apr_pool_t *p, agg_win *w, int by_p,
                                 const void **gargs)
{
    raw_gaps c;
    apr_hash_t *names;
    apr_hash_index_t *hi;
    apr_status_t rv;

    memset(&c, 0, sizeof(c));
    c.p = c.vals.p = p;
    c.sums = apr_hash_make(p);
    c.ids = apr_array_make(p, 64, sizeof(apr_int64_t));
    rv = qrt_db_each_stream(db, p, by_p ? SQL_report_gaps_by_previous_time_raw
                                        : SQL_report_gaps_by_time_raw, gargs, raw_gap_row, &c);
    if (rv != APR_SUCCESS || c.ids->nelts == 0) {
        return rv;
    }
    names = apr_hash_make(p);
    rv = names_of(db, p, SQL_report_vals_names, SQL_report_vals_names_range, c.ids,
                  raw_val_row, names);
    for (hi = apr_hash_first(p, c.sums); hi && rv == APR_SUCCESS; hi = apr_hash_next(hi)) {
        const apr_int64_t *key = apr_hash_this_key(hi);
        const char *name = apr_hash_get(names, &key[1], sizeof(key[1]));

        if (name) {
            win_link_add(w, key[0], name, *(apr_int64_t *)apr_hash_this_val(hi));
        }
    }
    return rv;
}

typedef struct {
    agg_win *w;
    qrt_db_t *db;
    apr_int64_t account;
    int kind;
    int field;                  /* links: which count they add to */
    apr_int64_t t0, t1, p0, p1; /* links: t and p; visits: t */
    apr_hash_t *tags;           /* kind G: tracker id -> apr_array of const char * */
    apr_pool_t *scratch;        /* one value's decoding, cleared after it */
    apr_array_header_t *got;    /* apr_int64_t: buckets read sealed, ascending */
    ab_map groups;              /* indexes: tracker id (T) or string hash -> group */
} ab_rd;

#define TAG_MAP_KEY "qrt_store_agg_read.tags"
#define SHARE_KEY "qrt_store_agg_read.share"

void qrt_store_agg_read_share(apr_pool_t *p)
{
    apr_pool_userdata_setn("", SHARE_KEY, NULL, p);
}

static int shared(apr_pool_t *p)
{
    void *mark = NULL;

    apr_pool_userdata_get(&mark, SHARE_KEY, p);
    return mark != NULL;
}

void qrt_store_agg_read_tags_use(apr_pool_t *p, apr_int64_t account, apr_hash_t *map)
{
    apr_int64_t *of = apr_pmemdup(p, &account, sizeof(account));

    apr_pool_userdata_setn(of, TAG_MAP_KEY, NULL, p);
    apr_pool_userdata_setn(map, TAG_MAP_KEY ".map", NULL, p);
}

apr_hash_t *qrt_store_agg_read_tags_got(apr_pool_t *p, apr_int64_t account)
{
    apr_int64_t *of = NULL;
    apr_hash_t *map = NULL;

    apr_pool_userdata_get((void **)&of, TAG_MAP_KEY, p);
    if (of && *of == account) {
        apr_pool_userdata_get((void **)&map, TAG_MAP_KEY ".map", p);
    }
    return map;
}

static apr_status_t tag_map_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    ab_rd *c = ctx;
    apr_int64_t id = qrt_db_int(db, row, 0, 0);
    apr_array_header_t *list = apr_hash_get(c->tags, &id, sizeof(id));

    if (!list) {
        list = apr_array_make(c->w->p, 4, sizeof(const char *));
        apr_hash_set(c->tags, apr_pmemdup(c->w->p, &id, sizeof(id)), sizeof(id), list);
    }
    APR_ARRAY_PUSH(list, const char *) = apr_pstrdup(c->w->p,
                                                     qrt_store_agg_acc_col(db, row, 1));
    return APR_SUCCESS;
}

static apr_status_t rd_init(ab_rd *c, qrt_db_t *db, apr_pool_t *p, agg_win *w,
                            apr_int64_t account, int kind, apr_hash_t **tags)
{
    memset(c, 0, sizeof(*c));
    c->w = w;
    c->db = db;
    c->account = account;
    c->kind = kind;
    c->got = apr_array_make(p, 32, sizeof(apr_int64_t));
    c->groups.p = p;
    apr_pool_create(&c->scratch, p);
    if (kind == QRT_AGG_G) {
        /* The trackers' tags as the aggregates hold them, once a window, or once a
         * report when its pool shares them (a report by tag reads windows of two
         * kinds). */
        if (!*tags) {
            const void *args[] = { &account };
            apr_int64_t *of = NULL;
            apr_status_t rv;

            if (shared(p)) {
                apr_pool_userdata_get((void **)&of, TAG_MAP_KEY, p);
            }
            if (of && *of == account) {
                apr_pool_userdata_get((void **)tags, TAG_MAP_KEY ".map", p);
            }
            if (!*tags) {
                c->tags = *tags = apr_hash_make(p);
                rv = qrt_db_each(db, p, SQL_agg_tag_map, args, tag_map_row, c);
                if (rv != APR_SUCCESS) {
                    *tags = NULL;
                    return rv;
                }
                if (shared(p)) {
                    of = apr_pmemdup(p, &account, sizeof(account));
                    apr_pool_userdata_setn(of, TAG_MAP_KEY, NULL, p);
                    apr_pool_userdata_setn(*tags, TAG_MAP_KEY ".map", NULL, p);
                }
            }
        }
        c->tags = *tags;
    }
    return APR_SUCCESS;
}

/* The groups of kind a tracker's entry counts in: its own (T), every tag (G). */
typedef struct {
    agg_grp **g;
    int n;
} ab_grps;

static ab_grps *rd_tracker_groups(ab_rd *c, ab_grps *cache, const qrt_aggblob_t *r, int ti)
{
    ab_grps *x = &cache[ti];

    if (!x->g) {
        if (c->kind == QRT_AGG_G) {
            apr_array_header_t *tags = apr_hash_get(c->tags, &r->trk[ti], sizeof(r->trk[ti]));
            int i;

            x->n = tags ? tags->nelts : 0;
            x->g = apr_palloc(c->scratch, (x->n + 1) * sizeof(*x->g));
            for (i = 0; i < x->n; i++) {
                x->g[i] = win_group(c->w, 0, APR_ARRAY_IDX(tags, i, const char *));
            }
        }
        else {
            x->n = 1;
            x->g = apr_palloc(c->scratch, sizeof(*x->g));
            x->g[0] = win_group(c->w, c->kind == QRT_AGG_T ? r->trk[ti] : 0, "");
        }
    }
    return x;
}

static agg_grp *rd_str_group(ab_rd *c, agg_grp **cache, const qrt_aggblob_t *r, int si)
{
    if (!cache[si]) {
        cache[si] = win_group(c->w, 0, r->str[si]);
    }
    return cache[si];
}

/* The group of an entry of kind A, B, C or Y: by its string index. */
static int rd_str_index(int kind, int bi, int ci, int yi)
{
    return kind == QRT_AGG_B ? bi : kind == QRT_AGG_C ? ci : yi;
}

/* The end of one value's decoding: its scratch memory goes, and bucket b counts as
 * read sealed unless the value was damaged (rc < 0: the request fails). */
static apr_status_t rd_done(ab_rd *c, apr_int64_t b, int rc)
{
    apr_pool_clear(c->scratch);
    if (rc < 0) {
        return APR_EGENERAL;
    }
    APR_ARRAY_PUSH(c->got, apr_int64_t) = b;
    return APR_SUCCESS;
}

static apr_status_t rd_counts(void *ctx, apr_int64_t b, const char *data)
{
    ab_rd *c = ctx;
    qrt_aggblob_t r;
    qrt_aggblob_count_t e;
    int rc;

    if (qrt_aggblob_open(&r, c->scratch, data, 0) != APR_SUCCESS) {
        return APR_EGENERAL;
    }
    while ((rc = qrt_aggblob_next_count(&r, c->scratch, &e)) > 0) {
        agg_grp *g = win_group(c->w, e.grp, e.val);

        g->row.scans += e.scans;
        g->row.clicks += e.clicks;
        g->firsts += e.firsts;
    }
    return rd_done(c, b, rc);
}

static apr_status_t rd_visits(void *ctx, apr_int64_t b, const char *data)
{
    ab_rd *c = ctx;
    qrt_aggblob_t r;
    qrt_aggblob_visit_t v;
    agg_grp **strs;
    ab_grps *trks;
    int rc;

    if (qrt_aggblob_open(&r, c->scratch, data, b * QRT_AGG_DAY) != APR_SUCCESS) {
        return APR_EGENERAL;
    }
    strs = apr_pcalloc(c->scratch, (r.nstr + 1) * sizeof(*strs));
    trks = apr_pcalloc(c->scratch, (r.ntrk + 1) * sizeof(*trks));
    while ((rc = qrt_aggblob_next_visit(&r, &v)) > 0) {
        apr_int64_t scans = v.click ? 0 : v.n, clicks = v.click ? v.n : 0;
        agg_grp *one;
        int i;

        if (v.t < c->t0 || v.t > c->t1) {
            continue;
        }
        if (c->kind == QRT_AGG_T || c->kind == QRT_AGG_G) {
            ab_grps *x = rd_tracker_groups(c, trks, &r, v.ti);

            for (i = 0; i < x->n; i++) {
                x->g[i]->row.scans += scans;
                x->g[i]->row.clicks += clicks;
                x->g[i]->pv += v.n;
            }
            continue;
        }
        one = c->kind == QRT_AGG_A ? (strs[r.nstr] ? strs[r.nstr]
                                      : (strs[r.nstr] = win_group(c->w, 0, "")))
              : rd_str_group(c, strs, &r, rd_str_index(c->kind, v.bi, v.ci, v.yi));
        one->row.scans += scans;
        one->row.clicks += clicks;
        one->pv += v.n;
    }
    return rd_done(c, b, rc);
}

static void rd_add(agg_grp *g, int field, apr_int64_t n)
{
    if (field == F_PT) {
        g->pt += n;
    }
    else if (field == F_PP) {
        g->pp += n;
    }
    else {
        g->link += n;
    }
}

static apr_status_t rd_links(void *ctx, apr_int64_t b, const char *data)
{
    static const int flag[] = { 0, QRT_AGG_F_T, 0, QRT_AGG_F_B, QRT_AGG_F_C, QRT_AGG_F_Y,
                                QRT_AGG_F_G };
    ab_rd *c = ctx;
    qrt_aggblob_t r;
    qrt_aggblob_link_t l;
    qrt_aggblob_gap_t gp;
    agg_grp **strs, *all = NULL;
    ab_grps *trks;
    int rc, i, by_p;

    if (qrt_aggblob_open(&r, c->scratch, data, b * QRT_AGG_DAY) != APR_SUCCESS) {
        return APR_EGENERAL;
    }
    by_p = qrt_aggblob_by_p(&r);
    strs = apr_pcalloc(c->scratch, (r.nstr + 1) * sizeof(*strs));
    trks = apr_pcalloc(c->scratch, (r.ntrk + 1) * sizeof(*trks));
    while ((rc = qrt_aggblob_next_link(&r, &l)) > 0) {
        if (by_p && l.p > c->p1) {
            /* Links by previous time: the rest lie after p1 too. */
            break;
        }
        if (l.t < c->t0 || l.t > c->t1 || l.p < c->p0 || l.p > c->p1) {
            continue;
        }
        if (c->kind == QRT_AGG_A) {
            if (!all) {
                all = win_group(c->w, 0, "");
            }
            rd_add(all, c->field, l.n);
        }
        else if (!(l.flags & flag[c->kind])) {
            continue;
        }
        else if (c->kind == QRT_AGG_T || c->kind == QRT_AGG_G) {
            ab_grps *x = rd_tracker_groups(c, trks, &r, l.ti);

            for (i = 0; i < x->n; i++) {
                rd_add(x->g[i], c->field, l.n);
            }
        }
        else {
            rd_add(rd_str_group(c, strs, &r, rd_str_index(c->kind, l.bi, l.ci, l.yi)),
                   c->field, l.n);
        }
    }
    /* The gaps of other kinds are not decoded when the value holds none of this one. */
    if (c->kind == QRT_AGG_A || !(qrt_aggblob_gap_kinds(&r) >> c->kind & 1)) {
        return rd_done(c, b, rc < 0 ? rc : 0);
    }
    if (rc >= 0) {
        /* Version 3: this kind's gaps alone, by previous time. */
        rc = qrt_aggblob_gaps_of(&r, c->kind);
    }
    while (rc == 0 && (rc = qrt_aggblob_next_gap(&r, &gp)) > 0) {
        rc = 0;
        if (by_p && gp.p > c->p1) {
            break;
        }
        if (gp.kind != c->kind || gp.t < c->t0 || gp.t > c->t1 || gp.p < c->p0
            || gp.p > c->p1) {
            continue;
        }
        if (gp.kind == QRT_AGG_T) {
            rd_add(rd_tracker_groups(c, trks, &r, gp.ti)->g[0], c->field, gp.n);
        }
        else {
            rd_add(rd_str_group(c, strs, &r, gp.si), c->field, gp.n);
        }
    }
    return rd_done(c, b, rc);
}

/* The groups of an index's group i (kind T by tracker, B, C and Y by string; kind G
 * a tracker's tags or a tag), from the window's map (kind G: trackers' keys with the
 * top bit set, tags' without). */
static ab_grps *ix_groups(ab_rd *c, const qrt_aggidx_t *x, int i)
{
    static const apr_uint64_t top = APR_UINT64_C(1) << 63;
    int by_tracker = c->kind == QRT_AGG_T;
    apr_uint64_t key = c->kind == QRT_AGG_A ? 0 : by_tracker ? (apr_uint64_t)x->gid[i]
                       : c->kind != QRT_AGG_G ? x->ghash[i]
                       : x->gstr[i] ? x->ghash[i] & ~top : (apr_uint64_t)x->gid[i] | top;
    ab_grps **slot = (ab_grps **)map_slot(&c->groups, key), *g = *slot;

    if (c->kind == QRT_AGG_G && !x->gstr[i]) {
        if (!g) {
            apr_array_header_t *tags = apr_hash_get(c->tags, &x->gid[i], sizeof(x->gid[i]));
            int k;

            g = apr_palloc(c->w->p, sizeof(*g));
            g->n = tags ? tags->nelts : 0;
            g->g = apr_palloc(c->w->p, (g->n + 1) * sizeof(*g->g));
            for (k = 0; k < g->n; k++) {
                g->g[k] = win_group(c->w, 0, APR_ARRAY_IDX(tags, k, const char *));
            }
            *slot = g;
            c->groups.n++;
        }
        return g;
    }

    if (g && !by_tracker && c->kind != QRT_AGG_A && strcmp(g->g[0]->row.val, x->gstr[i])) {
        /* two strings of one hash: the second is looked up each time */
        g = apr_palloc(c->scratch, sizeof(*g));
        g->n = 1;
        g->g = apr_palloc(c->scratch, sizeof(*g->g));
        g->g[0] = win_group(c->w, 0, x->gstr[i]);
        return g;
    }
    if (!g) {
        g = apr_palloc(c->w->p, sizeof(*g));
        g->n = 1;
        g->g = apr_palloc(c->w->p, sizeof(*g->g));
        g->g[0] = win_group(c->w, by_tracker ? x->gid[i] : 0,
                            by_tracker || c->kind == QRT_AGG_A ? "" : x->gstr[i]);
        *slot = g;
        c->groups.n++;
    }
    return g;
}

/* A whole day's links with p in [p0, p1] (before the day) from its index. */
static apr_status_t rd_index(ab_rd *c, apr_int64_t b, const char *ix, apr_size_t len)
{
    qrt_aggidx_t x;
    apr_int64_t *sum;
    int i;

    if (qrt_aggidx_view(&x, c->scratch, ix, len) != APR_SUCCESS || x.kind != c->kind) {
        return rd_done(c, b, -1);
    }
    sum = apr_pcalloc(c->scratch, ((apr_size_t)x.ngroups + 1) * sizeof(*sum));
    qrt_aggidx_sum(&x, c->p0, c->p1, sum);
    for (i = 0; i < x.ngroups; i++) {
        if (sum[i]) {
            ab_grps *g = ix_groups(c, &x, i);
            int j;

            for (j = 0; j < g->n; j++) {
                rd_add(g->g[j], c->field, sum[i]);
            }
        }
    }
    return rd_done(c, b, 0);
}

/* Whether day b is read from its index: the window holds all of it, and the links it
 * counts come from before it. */
static int rd_ix_day(void *ctx, apr_int64_t b)
{
    ab_rd *c = ctx;
    apr_int64_t a = b * QRT_AGG_DAY;

    return a >= c->t0 && a + QRT_AGG_DAY - 1 <= c->t1 && c->p1 < a;
}

static apr_status_t rd_links_ix(void *ctx, apr_int64_t b, const char *data, apr_int64_t seal,
                                const char *ix, apr_size_t ixlen)
{
    ab_rd *c = ctx;

    if (!ix && seal && rd_ix_day(c, b)) {
        /* The day's index, made once and kept under the value's seal. */
        apr_status_t rv = qrt_aggidx_build(c->scratch, data, b * QRT_AGG_DAY, c->kind, &ix,
                                           &ixlen);

        if (rv == APR_EINVAL) {
            return rd_done(c, b, -1);
        }
        if (rv == APR_SUCCESS) {
            qrt_store_agg_blob_keep(c->account, 1, b, AGG_IX_KIND + c->kind, seal, ix, ixlen);
        }
        else {
            ix = NULL;
        }
    }
    return ix ? rd_index(c, b, ix, ixlen) : rd_links(ctx, b, data);
}

/* A day's account links by the day of their previous visit: those with p's day in
 * [pd0, pd1] (the caller's window is whole days). */
static apr_status_t rd_pdays(void *ctx, apr_int64_t b, const char *data)
{
    ab_rd *c = ctx;
    qrt_aggblob_t r;
    qrt_aggblob_count_t x;
    apr_int64_t n = 0;
    int rc;

    if (qrt_aggblob_open(&r, c->scratch, data, 0) != APR_SUCCESS) {
        return APR_EGENERAL;
    }
    while ((rc = qrt_aggblob_next_count(&r, c->scratch, &x)) > 0) {
        if (x.grp >= c->p0 && x.grp <= c->p1) {
            n += x.scans;
        }
    }
    if (rc == 0 && n) {
        rd_add(win_group(c->w, 0, ""), c->field, n);
    }
    return rd_done(c, b, rc);
}

/* The runs of buckets in [b0, b1] that were not read sealed: (from, to) pairs. */
static apr_array_header_t *rd_missing(apr_pool_t *p, const apr_array_header_t *got,
                                      apr_int64_t b0, apr_int64_t b1)
{
    apr_array_header_t *runs = apr_array_make(p, 8, sizeof(apr_int64_t));
    apr_int64_t next = b0;
    int i;

    for (i = 0; i < got->nelts; i++) {
        apr_int64_t b = APR_ARRAY_IDX(got, i, apr_int64_t);

        if (b > next) {
            APR_ARRAY_PUSH(runs, apr_int64_t) = next;
            APR_ARRAY_PUSH(runs, apr_int64_t) = b - 1;
        }
        if (b >= next) {
            next = b + 1;
        }
    }
    if (next <= b1) {
        APR_ARRAY_PUSH(runs, apr_int64_t) = next;
        APR_ARRAY_PUSH(runs, apr_int64_t) = b1;
    }
    return runs;
}

/* Counter sums (scans, clicks, firsts: no rets) of a kind over the full days [d0, d1):
 * sealed buckets, then the rows of the others, five bucket ranges per statement. */
static apr_status_t win_counters_sealed(qrt_db_t *db, apr_pool_t *p, agg_win *w, int kind,
                                        apr_int64_t account, apr_int64_t d0, apr_int64_t d1)
{
    qrt_agg_range_t r[5], todo[5];
    apr_hash_t *tags = NULL;
    apr_status_t rv = APR_SUCCESS;
    int n = qrt_agg_split_days(d0, d1, r), i, j, ntodo = 0;

    for (i = 0; i < n && rv == APR_SUCCESS; i++) {
        ab_rd c;
        apr_array_header_t *runs;

        rv = rd_init(&c, db, p, w, account, kind, &tags);
        if (rv == APR_SUCCESS) {
            rv = qrt_store_agg_blob_fetch(db, p, account, kind, r[i].lvl, r[i].b0, r[i].b1,
                                          rd_counts, &c);
        }
        apr_pool_destroy(c.scratch);
        if (rv != APR_SUCCESS) {
            break;
        }
        runs = rd_missing(p, c.got, r[i].b0, r[i].b1);
        for (j = 0; j + 1 < runs->nelts && rv == APR_SUCCESS; j += 2) {
            todo[ntodo].lvl = r[i].lvl;
            todo[ntodo].b0 = APR_ARRAY_IDX(runs, j, apr_int64_t);
            todo[ntodo].b1 = APR_ARRAY_IDX(runs, j + 1, apr_int64_t);
            if (++ntodo == 5) {
                rv = win_counter_ranges(db, p, w, kind, account, todo, ntodo);
                ntodo = 0;
            }
        }
    }
    if (rv == APR_SUCCESS && ntodo > 0) {
        rv = win_counter_ranges(db, p, w, kind, account, todo, ntodo);
    }
    return rv;
}

/* ---- reads: a partial day's visits by browser, country or city (SQLite) ------------- */

/* Their user agent's or place's id and source as they are, counted here by id, then the
 * ids named in one statement (names_of): grouped in SQL through the join, the rows went
 * through a temporary B-tree keyed by the strings (12,000 visits of a day by browser:
 * 21 ms, most of it that B-tree). */
typedef struct {
    ab_map ids;                 /* id -> apr_int64_t[3]: scans, clicks, named */
    apr_array_header_t *keys;   /* the ids, in the order found */
    agg_win *w;
    int col;                    /* the name's column in the names' rows */
} edge_raw;

static apr_status_t edge_raw_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    edge_raw *c = ctx;
    apr_int64_t id = qrt_db_int(db, row, 0, 0);
    apr_int64_t **n = (apr_int64_t **)map_slot(&c->ids, (apr_uint64_t)id);

    if (!*n) {
        *n = apr_pcalloc(c->ids.p, 3 * sizeof(**n));
        c->ids.n++;
        APR_ARRAY_PUSH(c->keys, apr_int64_t) = id;
    }
    (*n)[qrt_db_int(db, row, 1, 0) == 1 ? 1 : 0]++;
    return APR_SUCCESS;
}

static apr_status_t edge_name_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    edge_raw *c = ctx;
    apr_int64_t **n = (apr_int64_t **)map_slot(&c->ids,
                                               (apr_uint64_t)qrt_db_int(db, row, 0, 0));

    if (*n && !(*n)[2]) {
        (*n)[2] = 1;
        win_visits_add(c->w, 0, qrt_store_agg_acc_col(db, row, c->col), *n);
    }
    return APR_SUCCESS;
}

static apr_status_t win_partial_raw(qrt_db_t *db, apr_pool_t *p, agg_win *w, int kind,
                                    const void **args)
{
    edge_raw c;
    apr_status_t rv;
    int i;

    memset(&c, 0, sizeof(c));
    c.ids.p = p;
    c.keys = apr_array_make(p, 256, sizeof(apr_int64_t));
    c.w = w;
    c.col = kind == QRT_AGG_Y ? 2 : 1;
    rv = qrt_db_each_stream(db, p, kind == QRT_AGG_B ? SQL_report_edge_visits_raw_ua
                                                     : SQL_report_edge_visits_raw_place,
                            args, edge_raw_row, &c);
    if (rv != APR_SUCCESS || c.keys->nelts == 0) {
        return rv;
    }
    rv = kind == QRT_AGG_B
         ? names_of(db, p, SQL_report_ua_browsers, SQL_report_ua_browsers_range, c.keys,
                    edge_name_row, &c)
         : names_of(db, p, SQL_report_place_names, SQL_report_place_names_range, c.keys,
                    edge_name_row, &c);
    for (i = 0; i < c.keys->nelts && rv == APR_SUCCESS; i++) {
        apr_int64_t **n = (apr_int64_t **)map_slot(&c.ids, (apr_uint64_t)APR_ARRAY_IDX(
                                                       c.keys, i, apr_int64_t));

        if (!(*n)[2]) {
            win_visits_add(w, 0, "", *n);   /* (no dictionary row: the join's NULL) */
        }
    }
    return rv;
}

/* ---- reads: a partial day's visits by tracker, account or tag --------------------- */

/* A window's partial day read from the visits takes a probe per tracker of the account,
 * and a report reads one piece for two kinds (tracker and account for report=type,
 * tracker and tag for report=tag): the visits are read by tracker, once a report when
 * its pool shares them (qrt_store_agg_read_share), and added up here for the account,
 * or for each tracker's tags as the aggregates hold them (agg_tag, as the statement by
 * tag joins them). */
typedef struct edge_memo {
    struct edge_memo *next;
    apr_int64_t account, a, b;
    apr_array_header_t *rows;   /* apr_int64_t triples: tracker, scans, clicks */
} edge_memo;

#define EDGE_MEMO_KEY "qrt_store_agg_read.edge"

static apr_status_t edge_tracker_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    apr_int64_t *x = apr_array_push(ctx);

    x[0] = qrt_db_int(db, row, 0, 0);
    x[1] = qrt_db_int(db, row, 2, 0);
    x[2] = qrt_db_int(db, row, 3, 0);
    return APR_SUCCESS;
}

static apr_status_t edge_trackers(qrt_db_t *db, apr_pool_t *p, const void **args,
                                  apr_array_header_t **out)
{
    apr_int64_t account = *(const apr_int64_t *)args[0];
    apr_int64_t a = *(const apr_int64_t *)args[4], b = *(const apr_int64_t *)args[5];
    edge_memo *head = NULL, *m;
    apr_status_t rv;

    if (!shared(p)) {
        *out = apr_array_make(p, 64, 3 * sizeof(apr_int64_t));
        return qrt_db_each_stream(db, p, SQL_report_edge_visits_tracker, args,
                                  edge_tracker_row, *out);
    }
    apr_pool_userdata_get((void **)&head, EDGE_MEMO_KEY, p);
    for (m = head; m; m = m->next) {
        if (m->account == account && m->a == a && m->b == b) {
            *out = m->rows;
            return APR_SUCCESS;
        }
    }
    m = apr_pcalloc(p, sizeof(*m));
    m->account = account;
    m->a = a;
    m->b = b;
    m->rows = *out = apr_array_make(p, 64, 3 * sizeof(apr_int64_t));
    rv = qrt_db_each_stream(db, p, SQL_report_edge_visits_tracker, args, edge_tracker_row,
                            m->rows);
    if (rv == APR_SUCCESS) {
        m->next = head;
        apr_pool_userdata_setn(m, EDGE_MEMO_KEY, NULL, p);
    }
    return rv;
}

static apr_status_t win_partial_trackers(qrt_db_t *db, apr_pool_t *p, agg_win *w, int kind,
                                         apr_hash_t *tags, const void **args)
{
    apr_array_header_t *rows;
    apr_int64_t all[2] = { 0, 0 };
    apr_status_t rv = edge_trackers(db, p, args, &rows);
    int i, j;

    for (i = 0; i < rows->nelts && rv == APR_SUCCESS; i++) {
        const apr_int64_t *x = (const apr_int64_t *)(void *)(rows->elts
                                                              + (apr_size_t)i * rows->elt_size);
        apr_array_header_t *of;

        if (kind == QRT_AGG_T) {
            win_visits_add(w, x[0], "", x + 1);
        }
        else if (kind == QRT_AGG_A) {
            all[0] += x[1];
            all[1] += x[2];
        }
        else if ((of = apr_hash_get(tags, &x[0], sizeof(x[0]))) != NULL) {
            for (j = 0; j < of->nelts; j++) {
                win_visits_add(w, 0, APR_ARRAY_IDX(of, j, const char *), x + 1);
            }
        }
    }
    if (kind == QRT_AGG_A) {
        win_visits_add(w, 0, "", all);
    }
    return rv;
}

/* The visits of a kind with times in [s, e] (a window's partial days): sealed days,
 * then the rows of the others. */
static apr_status_t win_partial(qrt_db_t *db, apr_pool_t *p, agg_win *w, int kind,
                                apr_int64_t account, apr_int64_t s, apr_int64_t e,
                                apr_hash_t **tags)
{
    apr_int64_t ds = qrt_agg_fdiv(s, QRT_AGG_DAY), de = qrt_agg_fdiv(e, QRT_AGG_DAY);
    apr_array_header_t *runs;
    ab_rd c;
    apr_status_t rv = rd_init(&c, db, p, w, account, kind, tags);
    int j;

    c.t0 = s;
    c.t1 = e;
    if (rv == APR_SUCCESS) {
        rv = qrt_store_agg_blob_fetch(db, p, account, QRT_AGGBLOB_VISITS, 1, ds, de,
                                      rd_visits, &c);
    }
    apr_pool_destroy(c.scratch);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    runs = rd_missing(p, c.got, ds, de);
    for (j = 0; j + 1 < runs->nelts && rv == APR_SUCCESS; j += 2) {
        apr_int64_t a = APR_ARRAY_IDX(runs, j, apr_int64_t) * QRT_AGG_DAY;
        apr_int64_t b = (APR_ARRAY_IDX(runs, j + 1, apr_int64_t) + 1) * QRT_AGG_DAY - 1;
        apr_int64_t da = APR_ARRAY_IDX(runs, j, apr_int64_t);
        apr_int64_t db1 = APR_ARRAY_IDX(runs, j + 1, apr_int64_t);
        const void *args[] = { &account, &a, &b };
        /* (by tracker and raw: the trackers with counters on days da..db1 alone) */
        const void *active[] = { &account, &account, &da, &db1, &a, &b };

        a = a < s ? s : a;
        b = b > e ? e : b;
        if (kind == QRT_AGG_T || kind == QRT_AGG_A || kind == QRT_AGG_G) {
            rv = win_partial_trackers(db, p, w, kind, c.tags, active);
        }
        else {
            rv = qrt_db_dialect_is(db, QRT_DIALECT_SQLITE)
                 ? win_partial_raw(db, p, w, kind, active)
                 : qrt_db_each(db, p, agg_raw[kind], args, win_raw_row, w);
        }
    }
    return rv;
}

/* The links of days [d0, d1] that were sealed and whose sealed values are gone
 * behind the store's back (SQL by hand): days with counters, not read sealed (the
 * caller's run), not on the work list. Their rows left agg_link_u when they were
 * sealed (unsealed = 0), so they are read along the account's links, a day at a time;
 * "qrtrack-admin aggregates seal" puts them back (qrt_store_agg_blob_relist). */
static apr_status_t win_links_orphans(qrt_db_t *db, apr_pool_t *p, agg_win *w, int kind,
                                      apr_int64_t account, apr_int64_t t0, apr_int64_t t1,
                                      apr_int64_t p0, apr_int64_t p1, int field,
                                      apr_int64_t d0, apr_int64_t d1)
{
    apr_array_header_t *days = apr_array_make(p, 4, sizeof(apr_int64_t));
    const void *args[] = { &account, &d0, &d1 };
    apr_status_t rv = qrt_db_each(db, p, SQL_agg_orphans, args, qrt_db_int_list_row, days);
    int i;

    for (i = 0; i < days->nelts && rv == APR_SUCCESS; i++) {
        apr_int64_t a = APR_ARRAY_IDX(days, i, apr_int64_t) * QRT_AGG_DAY;
        apr_int64_t b = a + QRT_AGG_DAY - 1;

        rv = win_links(db, p, w, kind, account, BY_T_SEALED, a < t0 ? t0 : a,
                       b > t1 ? t1 : b, p0, p1, field);
    }
    return rv;
}

/* Links of a kind with t in [t0, t1] and p in [p0, p1], added to field: sealed days,
 * then the rows of the others. */
static apr_status_t win_links_t(qrt_db_t *db, apr_pool_t *p, agg_win *w, int kind,
                                apr_int64_t account, apr_int64_t t0, apr_int64_t t1,
                                apr_int64_t p0, apr_int64_t p1, int field, apr_hash_t **tags)
{
    apr_int64_t d0 = qrt_agg_fdiv(t0, QRT_AGG_DAY), d1 = qrt_agg_fdiv(t1, QRT_AGG_DAY);
    apr_array_header_t *runs;
    ab_rd c;
    apr_status_t rv = rd_init(&c, db, p, w, account, kind, tags);
    int j;

    c.field = field;
    c.t0 = t0;
    c.t1 = t1;
    c.p0 = p0;
    c.p1 = p1;
    if (rv == APR_SUCCESS && kind == QRT_AGG_A && t0 % QRT_AGG_DAY == 0
        && (t1 == AGG_HI || (t1 + 1) % QRT_AGG_DAY == 0)
        && (p0 == AGG_LO || p0 % QRT_AGG_DAY == 0)
        && (p1 == AGG_HI || (p1 + 1) % QRT_AGG_DAY == 0)) {
        /* Whole days of the whole account: the links by their previous visit's day. */
        c.p0 = qrt_agg_fdiv(p0, QRT_AGG_DAY);
        c.p1 = qrt_agg_fdiv(p1, QRT_AGG_DAY);
        rv = qrt_store_agg_blob_fetch(db, p, account, QRT_AGGBLOB_PDAYS, 1, d0, d1,
                                      rd_pdays, &c);
    }
    else if (rv == APR_SUCCESS && qrt_store_agg_blob_cached()) {
        rv = qrt_store_agg_blob_fetch_ix(db, p, account, QRT_AGGBLOB_LINKS, 1, d0, d1,
                                         AGG_IX_KIND + kind, rd_ix_day, rd_links_ix, &c);
    }
    else if (rv == APR_SUCCESS) {
        rv = qrt_store_agg_blob_fetch(db, p, account, QRT_AGGBLOB_LINKS, 1, d0, d1,
                                      rd_links, &c);
    }
    apr_pool_destroy(c.scratch);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    runs = rd_missing(p, c.got, d0, d1);
    for (j = 0; j + 1 < runs->nelts && rv == APR_SUCCESS; j += 2) {
        apr_int64_t a = APR_ARRAY_IDX(runs, j, apr_int64_t) * QRT_AGG_DAY;
        apr_int64_t b = (APR_ARRAY_IDX(runs, j + 1, apr_int64_t) + 1) * QRT_AGG_DAY - 1;

        rv = win_links(db, p, w, kind, account, BY_T, a < t0 ? t0 : a, b > t1 ? t1 : b, p0,
                       p1, field);
        if (rv == APR_SUCCESS && qrt_db_dialect_is(db, QRT_DIALECT_SQLITE)) {
            rv = win_links_orphans(db, p, w, kind, account, t0, t1, p0, p1, field,
                                   APR_ARRAY_IDX(runs, j, apr_int64_t),
                                   APR_ARRAY_IDX(runs, j + 1, apr_int64_t));
        }
    }
    return rv;
}

static apr_int64_t win_total(agg_win *w, int what)
{
    apr_hash_index_t *hi;
    apr_int64_t sum = 0;

    for (hi = apr_hash_first(w->p, w->groups); hi; hi = apr_hash_next(hi)) {
        agg_grp *g = apr_hash_this_val(hi);

        sum += what ? g->rets : g->row.scans + g->row.clicks - g->firsts;
    }
    return sum;
}

/* Which link scan is cheapest: by p before s (0), by t inside (1), by t after e (2),
 * estimated from the account's counters. Sealed links are held by previous time
 * (version 3), so a scan by t decodes, of each day, the links whose previous visit
 * lies before the bound it looks for: for form 1 those crossing s's day, for form 2
 * those crossing the day after e (each a day's visits that are followed later, less
 * the visits that follow one, summed up to that day). */
static apr_status_t win_choose(qrt_db_t *db, apr_pool_t *p, apr_int64_t account, int kind,
                               apr_int64_t s, apr_int64_t e, int *form)
{
    apr_int64_t ds = qrt_agg_fdiv(s, QRT_AGG_DAY), de = qrt_agg_fdiv(e, QRT_AGG_DAY);
    apr_int64_t lo = qrt_agg_fdiv(QRT_AGG_TMIN, QRT_AGG_DAY);
    apr_int64_t cross_s, cross_e, by_p, inside, after;
    agg_win w;
    apr_status_t rv;

    w.p = p;
    w.groups = apr_hash_make(p);
    rv = win_counters(db, p, &w, QRT_AGG_A, account, lo, ds);
    /* (the scan by p walks every link whose previous visit lies before s) */
    by_p = win_total(&w, 1) * AGG_ROW_COST;
    cross_s = win_total(&w, 1) - win_total(&w, 0);
    w.groups = apr_hash_make(p);
    if (rv == APR_SUCCESS) {
        rv = win_counters(db, p, &w, QRT_AGG_A, account, ds, de + 1);
    }
    cross_e = cross_s + win_total(&w, 1) - win_total(&w, 0);
    /* Links by p are rows read through SQL (about AGG_ROW_COST times a decoded link
     * each), the links before s read to find those into the window; the R form reads
     * its rets as rows. */
    inside = cross_s;
    after = cross_e
            + (kind == QRT_AGG_A || kind == QRT_AGG_B || kind == QRT_AGG_C ? AGG_R_COST
               : AGG_R_COST_MANY);
    *form = (by_p <= inside && by_p <= after) ? 0 : (inside <= after ? 1 : 2);
    return rv;
}

/* A window's partial days in pieces of one UTC day each. A piece without sealed visits
 * (a day not settled yet: today, tomorrow; or without visits) is read from the visits,
 * which for the account's trackers takes a probe per tracker and a row per visit: late
 * in a busy day, most of its visits. By the account's quarter-hour counters (agg_day,
 * written with the visits' other aggregates): a piece whose quarter-hours hold no
 * visit is not read at all (the end of a window in the future); a piece of a day not
 * settled whose rest holds fewer visits is read as the day's counters (always exact)
 * less the rest of the day read as partial days: a report through now then reads the
 * few visits after now, not the day's. */
typedef struct {
    apr_int64_t a, b;           /* the piece */
    int empty;                  /* no visits in its quarter-hours */
    int rest;                   /* read as its day less [rest_a[k], rest_b[k]] */
    int nrest;
    apr_int64_t rest_a[2], rest_b[2];
} win_piece;

static apr_status_t day_visits_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    apr_int64_t *out = ctx;

    out[0] = qrt_db_int(db, row, 0, 0);
    out[1] = qrt_db_int(db, row, 1, 0);
    return APR_SUCCESS;
}

/* The account's visits in the quarter-hours of [a, b] (*n), and a time none of them is
 * later than (*last). */
static apr_status_t day_visits(qrt_db_t *db, apr_pool_t *p, apr_int64_t account,
                               apr_int64_t a, apr_int64_t b, apr_int64_t *n,
                               apr_int64_t *last)
{
    apr_int64_t q0 = qrt_agg_fdiv(a, QRT_AGG_QUARTER), q1 = qrt_agg_fdiv(b, QRT_AGG_QUARTER);
    const void *args[] = { &account, &q0, &q1 };
    apr_int64_t out[2] = { 0, 0 };
    apr_status_t rv = APR_SUCCESS;

    if (a <= b) {
        rv = qrt_db_each(db, p, SQL_report_day_visits, args, day_visits_row, out);
    }
    *n = out[0];
    *last = out[1];
    return rv;
}

apr_status_t qrt_store_agg_read_quarters(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                         apr_int64_t s, apr_int64_t e, apr_int64_t *n)
{
    apr_int64_t last;

    *n = 0;
    if (s < QRT_AGG_TMIN) {
        s = QRT_AGG_TMIN;
    }
    if (e > QRT_AGG_TMAX) {
        e = QRT_AGG_TMAX;
    }
    /* (the first quarter-hour from s, the last that ends by e) */
    s = -qrt_agg_fdiv(-s, QRT_AGG_QUARTER) * QRT_AGG_QUARTER;
    e = qrt_agg_fdiv(e + 1, QRT_AGG_QUARTER) * QRT_AGG_QUARTER - 1;
    return s <= e ? day_visits(db, p, account_id, s, e, n, &last) : APR_SUCCESS;
}

static apr_status_t win_pieces(qrt_db_t *db, apr_pool_t *p, apr_int64_t account,
                               const qrt_agg_window_t *ws, int may_rest, win_piece *out,
                               int *n)
{
    apr_int64_t now = apr_time_sec(apr_time_now());
    apr_status_t rv = APR_SUCCESS;
    int i;

    *n = 0;
    for (i = 0; i < ws->nparts && rv == APR_SUCCESS; i++) {
        apr_int64_t x = ws->part[i][0], y = ws->part[i][1];

        while (x <= y && rv == APR_SUCCESS && *n < WIN_PIECES) {
            apr_int64_t d = qrt_agg_fdiv(x, QRT_AGG_DAY), ds = d * QRT_AGG_DAY;
            apr_int64_t de = ds + QRT_AGG_DAY - 1, in, left = 0, right = 0, last = 0;
            win_piece *c = &out[(*n)++];

            memset(c, 0, sizeof(*c));
            c->a = x;
            c->b = y < de ? y : de;
            x = c->b + 1;
            rv = day_visits(db, p, account, c->a, c->b, &in, &last);
            /* (no visit in its quarter-hours, or none from its start on) */
            c->empty = rv == APR_SUCCESS && (in == 0 || last < c->a);
            if (rv != APR_SUCCESS || c->empty || !may_rest
                || qrt_store_agg_blob_due(1, d, now)) {
                continue;
            }
            if (rv == APR_SUCCESS) {
                rv = day_visits(db, p, account, ds, c->a - 1, &left, &last);
            }
            if (rv == APR_SUCCESS) {
                rv = day_visits(db, p, account, c->b + 1, de, &right, &last);
                /* none after the piece (a window through now): the rest after it is
                 * empty, not read */
                right = last > c->b ? right : 0;
            }
            if (rv != APR_SUCCESS || left + right >= in) {
                continue;
            }
            c->rest = 1;
            if (c->a > ds && left > 0) {
                c->rest_a[c->nrest] = ds;
                c->rest_b[c->nrest++] = c->a - 1;
            }
            if (c->b < de && right > 0) {
                c->rest_a[c->nrest] = c->b + 1;
                c->rest_b[c->nrest++] = de;
            }
        }
    }
    return rv;
}

/* w less what the rest of the pieces' days added to r (their visits and links). */
static void win_subtract(agg_win *w, agg_win *r)
{
    apr_hash_index_t *hi;

    for (hi = apr_hash_first(r->p, r->groups); hi; hi = apr_hash_next(hi)) {
        agg_grp *x = apr_hash_this_val(hi), *g = win_group(w, x->row.grp, x->row.val);

        g->row.scans -= x->row.scans;
        g->row.clicks -= x->row.clicks;
        g->pv -= x->pv;
        g->pt -= x->pt;
        g->pp -= x->pp;
    }
}

apr_status_t qrt_store_agg_read_window(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                       int kind, const apr_int64_t *only, int nonly,
                                       apr_int64_t s, apr_int64_t e, int want_uniques,
                                       apr_array_header_t **out)
{
    int few = kind == QRT_AGG_T && only && nonly <= AGG_FEW;
    qrt_agg_window_t ws;
    win_piece pc[WIN_PIECES];
    int npc = 0;
    agg_win w, rest;
    apr_hash_index_t *hi;
    apr_hash_t *tags = NULL;
    apr_status_t rv = APR_SUCCESS;
    int i, j, form = 0;

    *out = apr_array_make(p, 16, sizeof(qrt_agg_row_t));
    if (kind < QRT_AGG_T || kind > QRT_AGG_G) {
        return APR_EINVAL;
    }
    if (s < QRT_AGG_TMIN) {
        s = QRT_AGG_TMIN;
    }
    if (e > QRT_AGG_TMAX) {
        e = QRT_AGG_TMAX;
    }
    if (s > e) {
        return APR_SUCCESS;
    }
    w.p = rest.p = p;
    w.groups = apr_hash_make(p);
    rest.groups = apr_hash_make(p);
    w.field = rest.field = F_PT;
    qrt_agg_window_split(s, e, &ws);
    if (want_uniques) {
        if (s == QRT_AGG_TMIN) {
            form = 0;
        }
        else if (e == QRT_AGG_TMAX) {
            form = 2;
        }
        else {
            rv = win_choose(db, p, account_id, kind, s, e, &form);
        }
    }
    if (rv == APR_SUCCESS && few) {
        /* A few listed trackers: their own counters and visits (each tracker's visits
         * of a partial day are few). */
        rv = win_pieces(db, p, account_id, &ws, 0, pc, &npc);
        if (rv == APR_SUCCESS) {
            rv = win_counters_of(db, p, &w, account_id, only, nonly, ws.d0, ws.d1);
        }
        for (j = 0; j < nonly && rv == APR_SUCCESS; j++) {
            for (i = 0; i < npc && rv == APR_SUCCESS; i++) {
                const void *args[] = { &only[j], &pc[i].a, &pc[i].b };

                if (!pc[i].empty) {
                    rv = qrt_db_each(db, p, SQL_report_edge_visits_one_tracker, args,
                                     win_raw_row, &w);
                }
            }
        }
    }
    else if (rv == APR_SUCCESS) {
        /* The R form needs the rets of the full days: rows only. */
        rv = want_uniques && form == 2
             ? win_counters(db, p, &w, kind, account_id, ws.d0, ws.d1)
             : win_counters_sealed(db, p, &w, kind, account_id, ws.d0, ws.d1);
        if (rv == APR_SUCCESS) {
            rv = win_pieces(db, p, account_id, &ws, 1, pc, &npc);
        }
        for (i = 0; i < npc && rv == APR_SUCCESS; i++) {
            apr_int64_t d = qrt_agg_fdiv(pc[i].a, QRT_AGG_DAY);

            if (pc[i].empty) {
                continue;
            }
            if (!pc[i].rest) {
                rv = win_partial(db, p, &w, kind, account_id, pc[i].a, pc[i].b, &tags);
                continue;
            }
            /* (rows: the day's rets too, for the R form) */
            rv = win_counters(db, p, &w, kind, account_id, d, d + 1);
            for (j = 0; j < pc[i].nrest && rv == APR_SUCCESS; j++) {
                rv = win_partial(db, p, &rest, kind, account_id, pc[i].rest_a[j],
                                 pc[i].rest_b[j], &tags);
            }
        }
    }
    if (rv == APR_SUCCESS && want_uniques) {
        /* The partial days: links by t (for firsts) or by p (for rets); of a piece read
         * as its day less the rest, the rest's. */
        for (i = 0; i < npc && rv == APR_SUCCESS; i++) {
            int k, nr = pc[i].empty ? 0 : pc[i].rest ? pc[i].nrest : 1;

            for (k = 0; k < nr && rv == APR_SUCCESS; k++) {
                agg_win *to = pc[i].rest ? &rest : &w;
                apr_int64_t a = pc[i].rest ? pc[i].rest_a[k] : pc[i].a;
                apr_int64_t b = pc[i].rest ? pc[i].rest_b[k] : pc[i].b;

                if (form == 2) {
                    rv = win_links(db, p, to, kind, account_id, BY_P, AGG_LO, AGG_HI, a, b,
                                   F_PP);
                }
                else {
                    rv = win_links_t(db, p, to, kind, account_id, a, b, AGG_LO, AGG_HI, F_PT,
                                     &tags);
                }
            }
        }
        if (rv == APR_SUCCESS && form == 0 && s > QRT_AGG_TMIN) {
            rv = win_links(db, p, &w, kind, account_id, BY_P, s, e, AGG_LO, s - 1, F_LINK);
        }
        else if (rv == APR_SUCCESS && form == 1) {
            rv = win_links_t(db, p, &w, kind, account_id, s, e, AGG_LO, s - 1, F_LINK, &tags);
        }
        else if (rv == APR_SUCCESS && form == 2 && e < QRT_AGG_TMAX) {
            rv = win_links_t(db, p, &w, kind, account_id, e + 1, AGG_HI, s, e, F_LINK,
                             &tags);
        }
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    win_subtract(&w, &rest);
    for (hi = apr_hash_first(p, w.groups); hi; hi = apr_hash_next(hi)) {
        agg_grp *g = apr_hash_this_val(hi);
        qrt_agg_row_t *r;

        if (g->row.scans + g->row.clicks <= 0) {
            continue;
        }
        r = apr_array_push(*out);
        *r = g->row;
        if (want_uniques) {
            r->uniques = form == 2
                ? g->row.scans + g->row.clicks - g->rets - g->pp + g->link
                : g->firsts + g->pv - g->pt + g->link;
        }
    }
    return APR_SUCCESS;
}

/* ---- reads: local days, daily series ------------------------------------- */

typedef struct {
    apr_pool_t *p;
    apr_array_header_t *days;
    apr_hash_t *index;          /* day -> index + 1 in days */
    apr_int64_t off, q0, q1;    /* sealed quarter-hours: the offset and range read */
    apr_array_header_t *got;    /* UTC days read sealed */
    apr_pool_t *scratch;
} agg_days_ctx;

/* Adds to a local day (a day may get parts from sealed values and from rows). */
static void days_add(agg_days_ctx *c, apr_int64_t day, apr_int64_t scans,
                     apr_int64_t clicks, apr_int64_t uniques)
{
    apr_uintptr_t i = (apr_uintptr_t)apr_hash_get(c->index, &day, sizeof(day));
    qrt_agg_day_t *d;

    if (!i) {
        d = apr_array_push(c->days);
        memset(d, 0, sizeof(*d));
        d->day = day;
        i = (apr_uintptr_t)c->days->nelts;
        apr_hash_set(c->index, apr_pmemdup(c->p, &day, sizeof(day)), sizeof(day),
                     (void *)i);
    }
    d = &APR_ARRAY_IDX(c->days, (int)i - 1, qrt_agg_day_t);
    d->scans += scans;
    d->clicks += clicks;
    d->uniques += uniques;
}

static apr_status_t days_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    days_add(ctx, qrt_db_int(db, row, 0, 0) - AGG_DAY_SHIFT, qrt_db_int(db, row, 1, 0),
             qrt_db_int(db, row, 2, 0), qrt_db_int(db, row, 3, 0));
    return APR_SUCCESS;
}

/* A sealed UTC day of quarter-hours (kind QRT_AGGBLOB_QUARTERS: grp the quarter-hour,
 * firsts its gap g), into local days as the statement agg_day_sum does. */
static apr_status_t days_sealed(void *ctx, apr_int64_t b, const char *data)
{
    agg_days_ctx *c = ctx;
    qrt_aggblob_t r;
    qrt_aggblob_count_t x;
    int rc;

    if (qrt_aggblob_open(&r, c->scratch, data, 0) != APR_SUCCESS) {
        return APR_EGENERAL;
    }
    while ((rc = qrt_aggblob_next_count(&r, c->scratch, &x)) > 0) {
        apr_int64_t t = x.grp * QRT_AGG_QUARTER + c->off;
        apr_int64_t d = qrt_agg_fdiv(t, QRT_AGG_DAY);
        apr_int64_t k = (t - d * QRT_AGG_DAY) / QRT_AGG_QUARTER;

        if (x.grp < c->q0 || x.grp > c->q1) {
            continue;
        }
        days_add(c, d, x.scans, x.clicks, x.firsts > k ? x.scans + x.clicks : 0);
    }
    apr_pool_clear(c->scratch);
    if (rc < 0) {
        return APR_EGENERAL;
    }
    APR_ARRAY_PUSH(c->got, apr_int64_t) = b;
    return APR_SUCCESS;
}

static int days_cmp(const void *a, const void *b)
{
    const qrt_agg_day_t *x = a, *y = b;

    return x->day < y->day ? -1 : x->day > y->day;
}

/* One partial local day as a window of the account. */
static apr_status_t days_piece(qrt_db_t *db, apr_pool_t *p, apr_int64_t account,
                               apr_int64_t s, apr_int64_t e, apr_int64_t day,
                               apr_array_header_t *out)
{
    apr_array_header_t *rows;
    apr_status_t rv = qrt_store_agg_read_window(db, p, account, QRT_AGG_A, NULL, 0, s, e, 1,
                                           &rows);

    if (rv == APR_SUCCESS && rows->nelts > 0) {
        qrt_agg_row_t *r = &APR_ARRAY_IDX(rows, 0, qrt_agg_row_t);
        qrt_agg_day_t *d = apr_array_push(out);

        d->day = day;
        d->scans = r->scans;
        d->clicks = r->clicks;
        d->uniques = r->uniques;
    }
    return rv;
}

apr_status_t qrt_store_agg_read_days(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                     apr_int64_t s, apr_int64_t e, int offset,
                                     apr_array_header_t **out)
{
    apr_int64_t off = offset, ld0, ld1, shifted = offset + AGG_DAY_SHIFT * QRT_AGG_DAY;
    apr_status_t rv = APR_SUCCESS;
    agg_days_ctx c;
    int i;

    *out = apr_array_make(p, 32, sizeof(qrt_agg_day_t));
    if (offset % QRT_AGG_QUARTER != 0) {
        return APR_ENOTIMPL;
    }
    if (s < QRT_AGG_TMIN) {
        s = QRT_AGG_TMIN;
    }
    if (e > QRT_AGG_TMAX) {
        e = QRT_AGG_TMAX;
    }
    if (s > e) {
        return APR_SUCCESS;
    }
    /* Local days [ld0, ld1) lie whole inside the window. */
    ld0 = -qrt_agg_fdiv(-(s + off), QRT_AGG_DAY);
    ld1 = qrt_agg_fdiv(e + 1 + off, QRT_AGG_DAY);
    memset(&c, 0, sizeof(c));
    c.p = p;
    c.days = *out;
    c.index = apr_hash_make(p);
    if (ld0 > ld1) {
        return days_piece(db, p, account_id, s, e, ld1, *out);
    }
    if (ld0 < ld1) {
        apr_int64_t q0 = (ld0 * QRT_AGG_DAY - off) / QRT_AGG_QUARTER;
        apr_int64_t q1 = (ld1 * QRT_AGG_DAY - off) / QRT_AGG_QUARTER - 1;
        apr_int64_t d0 = qrt_agg_fdiv(q0 * QRT_AGG_QUARTER, QRT_AGG_DAY);
        apr_int64_t d1 = qrt_agg_fdiv(q1 * QRT_AGG_QUARTER, QRT_AGG_DAY);
        apr_array_header_t *runs;

        /* Sealed UTC days, then the rows of the others. */
        c.off = off;
        c.q0 = q0;
        c.q1 = q1;
        c.got = apr_array_make(p, 64, sizeof(apr_int64_t));
        apr_pool_create(&c.scratch, p);
        rv = qrt_store_agg_blob_fetch(db, p, account_id, QRT_AGGBLOB_QUARTERS, 1, d0, d1,
                                      days_sealed, &c);
        apr_pool_destroy(c.scratch);
        runs = rd_missing(p, c.got, d0, d1);
        for (i = 0; i + 1 < runs->nelts && rv == APR_SUCCESS; i += 2) {
            apr_int64_t a = APR_ARRAY_IDX(runs, i, apr_int64_t) * (QRT_AGG_DAY / QRT_AGG_QUARTER);
            apr_int64_t b = (APR_ARRAY_IDX(runs, i + 1, apr_int64_t) + 1)
                            * (QRT_AGG_DAY / QRT_AGG_QUARTER) - 1;
            const void *args[] = { &shifted, &shifted, &shifted, &account_id, &a, &b };

            a = a < q0 ? q0 : a;
            b = b > q1 ? q1 : b;
            rv = qrt_db_each(db, p, SQL_agg_day_sum, args, days_row, &c);
        }
    }
    if (rv == APR_SUCCESS && s < ld0 * QRT_AGG_DAY - off) {
        rv = days_piece(db, p, account_id, s, ld0 * QRT_AGG_DAY - off - 1, ld0 - 1, *out);
    }
    if (rv == APR_SUCCESS && ld1 * QRT_AGG_DAY - off <= e) {
        rv = days_piece(db, p, account_id, ld1 * QRT_AGG_DAY - off, e, ld1, *out);
    }
    /* Drop days that only had zero rows, then sort. */
    for (i = 0; i < (*out)->nelts; i++) {
        qrt_agg_day_t *d = &APR_ARRAY_IDX(*out, i, qrt_agg_day_t);

        if (d->scans + d->clicks <= 0) {
            *d = APR_ARRAY_IDX(*out, (*out)->nelts - 1, qrt_agg_day_t);
            (*out)->nelts--;
            i--;
        }
    }
    qsort((*out)->elts, (*out)->nelts, sizeof(qrt_agg_day_t), days_cmp);
    return rv;
}

static apr_status_t daily_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    apr_array_header_t *out = ctx;
    qrt_agg_daily_t *d = apr_array_push(out);

    d->day = qrt_db_int(db, row, 0, 0);
    d->grp = qrt_db_int(db, row, 1, 0);
    d->scans += qrt_db_int(db, row, 2, 0);
    d->clicks = qrt_db_int(db, row, 3, 0);
    return APR_SUCCESS;
}

apr_status_t qrt_store_agg_read_daily(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                      int kind, apr_int64_t d0, apr_int64_t d1,
                                      apr_array_header_t **out)
{
    apr_int64_t k = kind;
    const void *args[] = { &k, &account_id, &d0, &d1 };

    *out = apr_array_make(p, 64, sizeof(qrt_agg_daily_t));
    return qrt_db_each(db, p, SQL_report_counters_by_day, args, daily_row, *out);
}

typedef struct {
    apr_array_header_t *out;
    apr_hash_t *byday;              /* day -> its row in out */
} daily_sum_ctx;

static apr_status_t daily_sum_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    daily_sum_ctx *c = ctx;
    apr_int64_t day = qrt_db_int(db, row, 0, 0);
    apr_size_t *at = apr_hash_get(c->byday, &day, sizeof(day));
    qrt_agg_daily_t *d;

    if (!at) {
        apr_pool_t *p = apr_hash_pool_get(c->byday);

        at = apr_palloc(p, sizeof(*at) + sizeof(day));
        *at = (apr_size_t)c->out->nelts;
        memcpy(at + 1, &day, sizeof(day));
        apr_hash_set(c->byday, at + 1, sizeof(day), at);
        d = apr_array_push(c->out);
        d->day = day;
        d->grp = 0;
        d->scans = d->clicks = 0;
    }
    d = &APR_ARRAY_IDX(c->out, *at, qrt_agg_daily_t);
    d->scans += qrt_db_int(db, row, 2, 0);
    d->clicks += qrt_db_int(db, row, 3, 0);
    return APR_SUCCESS;
}

apr_status_t qrt_store_agg_read_daily_listed(qrt_db_t *db, apr_pool_t *p,
                                             apr_int64_t account_id, const apr_int64_t *ids,
                                             int n, apr_int64_t d0, apr_int64_t d1,
                                             apr_array_header_t **out)
{
    apr_int64_t kind = QRT_AGG_T, slot[QRT_AGG_RAW_IDS];
    const void *args[QRT_AGG_RAW_IDS + 4];
    daily_sum_ctx c;
    apr_status_t rv = APR_SUCCESS;
    int i, k;

    *out = apr_array_make(p, 64, sizeof(qrt_agg_daily_t));
    c.out = *out;
    c.byday = apr_hash_make(p);
    args[0] = &kind;
    args[1] = &account_id;
    args[QRT_AGG_RAW_IDS + 2] = &d0;
    args[QRT_AGG_RAW_IDS + 3] = &d1;
    for (k = 0; k < n && rv == APR_SUCCESS; k += QRT_AGG_RAW_IDS) {
        for (i = 0; i < QRT_AGG_RAW_IDS; i++) {
            slot[i] = k + i < n ? ids[k + i] : 0;
            args[i + 2] = &slot[i];
        }
        rv = qrt_db_each(db, p, SQL_report_counters_by_day_listed, args, daily_sum_row, &c);
    }
    return rv;
}

/* ---- reads: state, raw visits, trackers ---------------------------------- */

static apr_status_t state_tag_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    qrt_agg_state_t *st = ctx;
    apr_pool_t *p = apr_hash_pool_get(st->dirty_tags);
    const char *tag = apr_pstrdup(p, qrt_store_agg_acc_col(db, row, 0));

    apr_hash_set(st->dirty_tags, tag, APR_HASH_KEY_STRING, tag);
    return APR_SUCCESS;
}

apr_status_t qrt_store_agg_read_state(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                      qrt_agg_state_t *st)
{
    const void *args[] = { &account_id, &account_id };
    apr_int64_t deleted = 0;
    apr_status_t rv;

    st->deleted = 0;
    st->dirty_tags = apr_hash_make(p);
    rv = qrt_db_each(db, p, SQL_agg_deleted, args, qrt_store_agg_acc_int_row, &deleted);
    st->deleted = deleted > 0;
    if (rv == APR_SUCCESS) {
        rv = qrt_db_each(db, p, SQL_agg_dirty_tags, args, state_tag_row, st);
    }
    return rv;
}

typedef struct {
    apr_int64_t tracker, last_t, last_id;
    long n;
    qrt_agg_visit_fn *fn;
    void *ctx;
} raw_ctx;

/* A visit of tracker at t to fn, from a row whose columns 2 to 6 are its visitor, source,
 * browser, country and city (report_raw_visits, report_visitors_visits). */
static void raw_visit(qrt_agg_visit_fn *fn, void *ctx, qrt_db_t *db, apr_dbd_row_t *row,
                      apr_int64_t tracker, apr_int64_t t)
{
    const char *src = qrt_db_str(db, row, 3);

    fn(ctx, tracker, t, src && !strcmp(src, "click"), qrt_store_agg_acc_col(db, row, 2),
       qrt_store_agg_acc_col(db, row, 4), qrt_store_agg_acc_col(db, row, 5),
       qrt_store_agg_acc_col(db, row, 6));
}

static apr_status_t raw_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    raw_ctx *c = ctx;

    c->last_t = qrt_db_int(db, row, 0, 0);
    c->last_id = qrt_db_int(db, row, 1, 0);
    c->n++;
    raw_visit(c->fn, c->ctx, db, row, c->tracker, c->last_t);
    return APR_SUCCESS;
}

apr_status_t qrt_store_agg_read_raw(qrt_db_t *db, apr_pool_t *p, apr_int64_t tracker_id,
                                    apr_int64_t s, apr_int64_t e, qrt_agg_visit_fn *fn,
                                    void *ctx)
{
    apr_pool_t *pp;
    apr_int64_t limit = AGG_RAW_PAGE, from = s;
    raw_ctx c;
    apr_status_t rv = APR_SUCCESS;

    memset(&c, 0, sizeof(c));
    c.tracker = tracker_id;
    c.fn = fn;
    c.ctx = ctx;
    c.last_t = s - 1;
    c.last_id = -1;
    apr_pool_create(&pp, p);
    for (;;) {
        const void *args[] = { &tracker_id, &from, &e, &c.last_t, &c.last_id, &limit };
        long before = c.n;

        rv = qrt_db_each(db, pp, SQL_report_raw_visits, args, raw_row, &c);
        apr_pool_clear(pp);
        if (rv != APR_SUCCESS || c.n - before < limit) {
            break;
        }
        from = c.last_t;
    }
    apr_pool_destroy(pp);
    return rv;
}

/* ---- the visits of some visitors (qrt_report.c: lists that leave few trackers out) ---- */

#define VISITORS_A_READ 2000        /* visitors a statement */

typedef struct {
    qrt_agg_visit_fn *fn;
    void *ctx;
} visitors_ctx;

static apr_status_t visitors_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    visitors_ctx *c = ctx;

    raw_visit(c->fn, c->ctx, db, row, qrt_db_int(db, row, 0, 0), qrt_db_int(db, row, 1, 0));
    return APR_SUCCESS;
}

apr_status_t qrt_store_agg_read_visitors(qrt_db_t *db, apr_pool_t *p,
                                         const apr_array_header_t *visitors, apr_int64_t s,
                                         apr_int64_t e, qrt_agg_visit_fn *fn, void *ctx)
{
    apr_status_t rv = APR_SUCCESS;
    visitors_ctx c;
    apr_pool_t *pp;
    int i;

    c.fn = fn;
    c.ctx = ctx;
    apr_pool_create(&pp, p);
    for (i = 0; i < visitors->nelts && rv == APR_SUCCESS; i += VISITORS_A_READ) {
        apr_array_header_t part = *visitors;
        const void *args[3];

        part.elts = visitors->elts + (apr_size_t)i * sizeof(apr_int64_t);
        part.nelts = visitors->nelts - i < VISITORS_A_READ ? visitors->nelts - i
                                                           : VISITORS_A_READ;
        args[0] = qrt_db_id_list(db, pp, &part);
        args[1] = &s;
        args[2] = &e;
        rv = qrt_db_each_stream(db, pp, SQL_report_visitors_visits, args, visitors_row, &c);
        apr_pool_clear(pp);
    }
    apr_pool_destroy(pp);
    return rv;
}

static apr_status_t rg_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_days_ctx *c = ctx;
    qrt_agg_row_t *r;

    if (qrt_db_int(db, row, 2, 0) + qrt_db_int(db, row, 3, 0) == 0) {
        return APR_SUCCESS;
    }
    r = apr_array_push(c->days);
    r->grp = qrt_db_int(db, row, 0, 0);
    r->val = apr_pstrdup(c->p, qrt_store_agg_acc_col(db, row, 1));
    r->scans = qrt_db_int(db, row, 2, 0);
    r->clicks = qrt_db_int(db, row, 3, 0);
    r->uniques = qrt_db_int(db, row, 4, 0);
    return APR_SUCCESS;
}

static apr_status_t rg_text_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    const char **text = ctx;

    *text = qrt_db_str(db, row, 0);
    return APR_SUCCESS;
}

/* The rows of a statement whose one value is qrt_vgroups' text form, into out (their
 * key the group's number when by_number, else its value); APR_EAGAIN when the value
 * says the groups grew past their bound. */
static apr_status_t rg_groups(qrt_db_t *db, apr_pool_t *p, const char *label,
                              const void **args, int by_number, apr_array_header_t *out)
{
    apr_array_header_t *groups = apr_array_make(p, 16, sizeof(qrt_vgroup_t));
    const char *text = NULL;
    apr_status_t rv = qrt_db_each(db, p, label, args, rg_text_row, &text);
    int i;

    if (rv != APR_SUCCESS || !text) {
        return rv;
    }
    if (!strcmp(text, "-")) {
        return APR_EAGAIN;
    }
    if (qrt_vgroups_parse(p, text, strlen(text), groups) != APR_SUCCESS) {
        return APR_EGENERAL;
    }
    for (i = 0; i < groups->nelts; i++) {
        qrt_vgroup_t *g = &APR_ARRAY_IDX(groups, i, qrt_vgroup_t);
        qrt_agg_row_t *r = apr_array_push(out);

        r->grp = by_number ? apr_atoi64(g->key) : 0;
        r->val = by_number ? "" : g->key;
        r->scans = g->scans;
        r->clicks = g->clicks;
        r->uniques = g->uniques;
    }
    return APR_SUCCESS;
}

apr_status_t qrt_store_agg_read_raw_groups(qrt_db_t *db, apr_pool_t *p, int by,
                                           const apr_int64_t *ids, int n, apr_int64_t s,
                                           apr_int64_t e, int offset,
                                           apr_array_header_t **out)
{
    apr_int64_t slot[QRT_AGG_RAW_IDS], shifted = offset + AGG_DAY_SHIFT * QRT_AGG_DAY;
    const void *args[QRT_AGG_RAW_IDS + 3];
    agg_days_ctx c;
    apr_status_t rv;
    int i, k = 0;

    *out = apr_array_make(p, 16, sizeof(qrt_agg_row_t));
    if (by < QRT_AGG_RAW_ALL || by > QRT_AGG_RAW_COUNTRY || n > QRT_AGG_RAW_IDS) {
        return APR_EINVAL;
    }
    if (by == QRT_AGG_RAW_DATE) {
        args[k++] = &shifted;
    }
    for (i = 0; i < QRT_AGG_RAW_IDS; i++) {
        slot[i] = i < n ? ids[i] : 0;
        args[k++] = &slot[i];
    }
    args[k++] = &s;
    args[k++] = &e;
    c.p = p;
    c.days = *out;
    rv = rg_groups(db, p, agg_rg[by], args, by == QRT_AGG_RAW_DATE, *out);
    if (rv == APR_EAGAIN) {
        /* The groups grew past their bound: the database counts them. */
        (*out)->nelts = 0;
        rv = qrt_db_each(db, p, agg_rgd[by], args, rg_row, &c);
    }
    for (i = 0; i < (*out)->nelts && by == QRT_AGG_RAW_DATE; i++) {
        APR_ARRAY_IDX(*out, i, qrt_agg_row_t).grp -= AGG_DAY_SHIFT;
    }
    return rv;
}

apr_status_t qrt_store_agg_read_raw_uniques(qrt_db_t *db, apr_pool_t *p,
                                            const apr_int64_t *ids, int n, apr_int64_t s,
                                            apr_int64_t e, apr_int64_t *out)
{
    apr_int64_t slot[QRT_AGG_RAW_IDS];
    const void *args[QRT_AGG_RAW_IDS + 2];
    apr_status_t rv;
    int i;

    *out = 0;
    if (n > QRT_AGG_RAW_IDS) {
        return APR_EINVAL;
    }
    for (i = 0; i < QRT_AGG_RAW_IDS; i++) {
        slot[i] = i < n ? ids[i] : 0;
        args[i] = &slot[i];
    }
    args[QRT_AGG_RAW_IDS] = &s;
    args[QRT_AGG_RAW_IDS + 1] = &e;
    rv = qrt_db_each(db, p, SQL_report_listed_visitors, args, qrt_store_agg_acc_int_row, out);
    if (rv == APR_SUCCESS && *out < 0) {
        *out = 0;
        rv = qrt_db_each(db, p, SQL_report_listed_visitors_exact, args,
                         qrt_store_agg_acc_int_row, out);
    }
    return rv;
}

typedef struct {
    apr_pool_t *p;
    apr_array_header_t *list;
    apr_hash_t *byid;
} rep_ctx;

static apr_status_t rep_tracker_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    rep_ctx *c = ctx;
    qrt_report_tracker_t *t = apr_array_push(c->list);

    t->id = qrt_db_int(db, row, 0, 0);
    t->name = apr_pstrdup(c->p, qrt_store_agg_acc_col(db, row, 1));
    t->type = apr_pstrdup(c->p, qrt_store_agg_acc_col(db, row, 2));
    t->tags = apr_array_make(c->p, 2, sizeof(qrt_report_tag_t));
    return APR_SUCCESS;
}

static apr_status_t rep_tag_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    rep_ctx *c = ctx;
    apr_int64_t id = qrt_db_int(db, row, 0, 0);
    qrt_report_tracker_t *t = apr_hash_get(c->byid, &id, sizeof(id));
    qrt_report_tag_t *g;
    const char *dim = qrt_db_str(db, row, 2);

    if (!t) {
        return APR_SUCCESS;
    }
    g = apr_array_push(t->tags);
    g->tag = apr_pstrdup(c->p, qrt_store_agg_acc_col(db, row, 1));
    g->dimension = dim ? apr_pstrdup(c->p, dim) : NULL;
    g->value = apr_pstrdup(c->p, qrt_store_agg_acc_col(db, row, 3));
    return APR_SUCCESS;
}

static int rep_tag_cmp(const void *a, const void *b)
{
    return strcmp(((const qrt_report_tag_t *)a)->tag, ((const qrt_report_tag_t *)b)->tag);
}

apr_status_t qrt_store_agg_read_count(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                      apr_int64_t *out)
{
    const void *args[] = { &account_id };

    return qrt_db_select_int(db, p, SQL_agg_rep_count, args, out);
}

apr_status_t qrt_store_agg_read_trackers(qrt_db_t *db, apr_pool_t *p,
                                         apr_int64_t account_id, apr_array_header_t **out)
{
    return qrt_store_agg_read_trackers_in(db, p, account_id, NULL, 0, out);
}

apr_status_t qrt_store_agg_read_trackers_in(qrt_db_t *db, apr_pool_t *p,
                                            apr_int64_t account_id, const apr_int64_t *ids,
                                            int n, apr_array_header_t **out)
{
    apr_int64_t slot[QRT_AGG_RAW_IDS];
    const void *all[] = { &account_id }, *some[QRT_AGG_RAW_IDS + 1], **args = all;
    rep_ctx c;
    apr_status_t rv;
    int i;

    c.p = p;
    c.list = apr_array_make(p, 16, sizeof(qrt_report_tracker_t));
    c.byid = apr_hash_make(p);
    *out = c.list;
    if (ids) {
        if (n > QRT_AGG_RAW_IDS) {
            return APR_EINVAL;
        }
        some[0] = &account_id;
        for (i = 0; i < QRT_AGG_RAW_IDS; i++) {
            slot[i] = i < n ? ids[i] : 0;
            some[i + 1] = &slot[i];
        }
        args = some;
    }
    rv = qrt_db_each(db, p, ids ? SQL_agg_rep_trackers_in : SQL_agg_rep_trackers, args,
                     rep_tracker_row, &c);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    for (i = 0; i < c.list->nelts; i++) {
        qrt_report_tracker_t *t = &APR_ARRAY_IDX(c.list, i, qrt_report_tracker_t);

        apr_hash_set(c.byid, &t->id, sizeof(t->id), t);
    }
    rv = qrt_db_each(db, p, ids ? SQL_agg_rep_tags_in : SQL_agg_rep_tags, args,
                     rep_tag_row, &c);
    for (i = 0; i < c.list->nelts; i++) {
        qrt_report_tracker_t *t = &APR_ARRAY_IDX(c.list, i, qrt_report_tracker_t);

        qsort(t->tags->elts, t->tags->nelts, sizeof(qrt_report_tag_t), rep_tag_cmp);
    }
    return rv;
}

/* ---- reads: listed trackers' visits as blocks (qrt_vcols) ------------------------ */

#define LV_KIND 400                 /* a tracker's block of a day: (tracker, 1, day, 400) */
#define LV_KIND_BARE 401            /* the same without its strings (read without joins) */
#define LV_SPAN 16                  /* days a span block holds: (tracker, 16, day / 16, kind) */
static const char lv_spanned[1];
#define LV_SPANNED lv_spanned       /* (a day whose visits come with its span's block) */
/* Visits a report reads through SQL, at most: 2 M, or as many as make blocks of four
 * fifths of the cache (at LV_VISIT_BYTES a visit, a block with strings; 128 MB: 5.4 M),
 * since the sealed blocks it reads are held where the cache keeps them, not copied. Past
 * that it counts in the database, the blocks read so far kept for its next requests;
 * a caller with no such way (more trackers than a statement takes) reads as many as make
 * blocks of twice the cache's bytes (10.7 M visits at 128 MB), the request's memory
 * bounded by the cache's size, not the window's. */
#define LV_MAX_READ ((apr_size_t)1 << 21)
#define LV_VISIT_BYTES 20

static apr_size_t lv_bound;         /* (tests: the bound itself; 0, the rule above) */

void qrt_store_agg_read_listed_bound(apr_size_t most)
{
    lv_bound = most;
}

typedef qrt_agg_day_seal_t lv_day;    /* (a sealed day: qrt_store_agg_day_seals) */

static apr_status_t lv_seal_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    lv_day *x = apr_array_push(ctx);

    x->day = qrt_db_int(db, row, 0, 0);
    x->seal = qrt_db_int(db, row, 1, 0);
    return APR_SUCCESS;
}

/* The days of [d0, d1] whose tracker counters, links and visits are sealed, by day,
 * each with one seal of the three: whatever changes a day's visits drops them in its
 * transaction (qrt_store_agg_blob_invalidate), and sealed again they hash anew. */
static apr_status_t lv_sealed(qrt_db_t *db, apr_pool_t *p, apr_int64_t account,
                              apr_int64_t d0, apr_int64_t d1, apr_array_header_t **out)
{
    static const int kinds[3] = { QRT_AGG_T, QRT_AGGBLOB_LINKS, QRT_AGGBLOB_VISITS };
    apr_array_header_t *got[3];
    apr_int64_t one = 1;
    apr_status_t rv = APR_SUCCESS;
    int k, i, j[3] = { 0, 0, 0 };

    *out = apr_array_make(p, 64, sizeof(lv_day));
    for (k = 0; k < 3 && rv == APR_SUCCESS; k++) {
        apr_int64_t kind = kinds[k];
        const void *args[] = { &account, &one, &kind, &d0, &d1 };

        got[k] = apr_array_make(p, 64, sizeof(lv_day));
        rv = qrt_db_each(db, p, SQL_agg_blob_seals, args, lv_seal_row, got[k]);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    for (i = 0; i < got[0]->nelts; i++) {
        lv_day *x = &APR_ARRAY_IDX(got[0], i, lv_day), *y;
        apr_uint64_t h = (apr_uint64_t)x->seal;
        int all = x->seal != 0;

        for (k = 1; k < 3 && all; k++) {
            while (j[k] < got[k]->nelts && APR_ARRAY_IDX(got[k], j[k], lv_day).day < x->day) {
                j[k]++;
            }
            y = j[k] < got[k]->nelts ? &APR_ARRAY_IDX(got[k], j[k], lv_day) : NULL;
            all = y && y->day == x->day && y->seal != 0;
            if (all) {
                h = (h ^ (apr_uint64_t)y->seal) * APR_UINT64_C(0x9E3779B97F4A7C15);
                h ^= h >> 29;
            }
        }
        if (all) {
            lv_day *d = apr_array_push(*out);

            d->day = x->day;
            d->seal = h ? (apr_int64_t)h : 1;
        }
    }
    return APR_SUCCESS;
}

apr_status_t qrt_store_agg_day_seals(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                     apr_int64_t d0, apr_int64_t d1, apr_array_header_t **out)
{
    return lv_sealed(db, p, account_id, d0, d1, out);
}

/* Where the blocks a report reads are kept until it lets go of them: held in the cache
 * (held: its entries), up to the cache's bytes (most) in all, else copied into pool and
 * not put in the cache. Past the cache's bytes, a report's blocks would push out those
 * it holds: a block held that the cache pushes out lives on until the report lets go of
 * it, and many such blocks freed at once leave holes in the heap that its later, larger
 * allocations do not fit (its memory then grows with every such report). */
typedef struct {
    apr_pool_t *pool;
    apr_array_header_t *held;
    apr_size_t pinned, most;
} lv_keep;

/* A block just read (data, len; a sealed day's or span's under key and seal, 0 for
 * none), put in the cache: what to hand on. With keep, the cache's copy, held, or a copy
 * in keep->pool; without, data itself (handed on at once). */
static const char *lv_keep_block(qrt_aggcache_t *cache, lv_keep *keep,
                                 const qrt_aggcache_key_t *key, apr_int64_t seal,
                                 const char *data, apr_size_t len)
{
    qrt_aggcache_ent_t *ent = NULL;
    const char *kept;

    if (!keep) {
        if (seal) {
            qrt_aggcache_put(cache, key, seal, data, len);
        }
        return data;
    }
    if (seal && keep->pinned + len <= keep->most
        && (kept = qrt_aggcache_put_held(cache, key, seal, data, len, &ent))) {
        APR_ARRAY_PUSH(keep->held, qrt_aggcache_ent_t *) = ent;
        keep->pinned += len;
        return kept;
    }
    return apr_pmemdup(keep->pool, data, len);
}

/* A block being read from the visits: a day's to keep (seal != 0) or of days not
 * sealed (seal 0). */
typedef struct {
    apr_int64_t tracker, day, seal;
    qrt_vcols_builder_t *b;
} lv_build;

typedef struct {
    apr_pool_t *p;
    apr_array_header_t *builds;     /* lv_build */
    apr_hash_t *index;              /* (tracker, day) of a sealed day, (tracker, LV_NONE)
                                     * of the days not sealed -> index + 1 in builds */
    int one;                        /* rows of one tracker (no tracker column) */
    int kind;                       /* what blocks of sealed days are kept as */
    int bare;                       /* blocks of no strings (qrt_vcols_builder_bare) */
    apr_int64_t tracker;            /* that tracker */
    apr_int64_t last_tracker, last_day;
    lv_build *last;
    apr_size_t *left;               /* visits the report may read still */
    lv_keep *keep;                  /* blocks handed on are kept (NULL: not) */
} lv_read;

#define LV_NONE APR_INT64_MIN

static lv_build *lv_add(lv_read *c, apr_int64_t tracker, apr_int64_t day, apr_int64_t seal)
{
    apr_int64_t *key = apr_palloc(c->p, 2 * sizeof(*key));
    lv_build *x = apr_array_push(c->builds);

    x->tracker = tracker;
    x->day = day;
    x->seal = seal;
    x->b = qrt_vcols_builder_make(c->p);
    qrt_vcols_builder_ids(x->b, qrt_store_agg_blob_strid());
    if (c->bare) {
        qrt_vcols_builder_bare(x->b);
    }
    key[0] = tracker;
    key[1] = seal ? day : LV_NONE;
    apr_hash_set(c->index, key, 2 * sizeof(*key), (void *)(apr_uintptr_t)c->builds->nelts);
    return x;
}

/* A read of blocks begun in a pool of its own (a child of p), of no strings when bare. */
static void lv_read_begin(lv_read *c, apr_pool_t *p, int bare, lv_keep *keep,
                          apr_size_t *left)
{
    memset(c, 0, sizeof(*c));
    apr_pool_create(&c->p, p);
    c->builds = apr_array_make(c->p, QRT_AGG_RAW_IDS, sizeof(lv_build));
    c->index = apr_hash_make(c->p);
    c->bare = bare;
    c->left = left;
    c->keep = keep;
}

/* The block a visit of tracker on day goes to. */
static lv_build *lv_find(lv_read *c, apr_int64_t tracker, apr_int64_t day)
{
    apr_int64_t key[2];
    apr_uintptr_t i;

    key[0] = tracker;
    key[1] = day;
    i = (apr_uintptr_t)apr_hash_get(c->index, key, sizeof(key));
    if (!i) {
        key[1] = LV_NONE;
        i = (apr_uintptr_t)apr_hash_get(c->index, key, sizeof(key));
    }
    return i ? &APR_ARRAY_IDX(c->builds, (int)i - 1, lv_build) : lv_add(c, tracker, day, 0);
}

/* A row of report_listed_visits* (its columns from k: time, source, visitor, and but in
 * report_listed_visits_bare's browser, country, city) added to b. */
static void lv_add_row(qrt_vcols_builder_t *b, qrt_db_t *db, apr_dbd_row_t *row, int k,
                       int bare)
{
    apr_int64_t x[3];

    qrt_db_ints(db, row, k, 3, x);
    qrt_vcols_add(b, x[0], x[1] == 1, x[2],
                  bare ? NULL : qrt_store_agg_acc_col(db, row, k + 3),
                  bare ? NULL : qrt_store_agg_acc_col(db, row, k + 4),
                  bare ? NULL : qrt_store_agg_acc_col(db, row, k + 5));
}

static apr_status_t lv_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    lv_read *c = ctx;
    int k = c->one ? 0 : 1;
    apr_int64_t tracker = c->one ? c->tracker : qrt_db_int(db, row, 0, 0);
    apr_int64_t t = qrt_db_int(db, row, k, 0);
    apr_int64_t day = qrt_agg_fdiv(t, QRT_AGG_DAY);

    if (!*c->left) {
        return APR_EAGAIN;
    }
    (*c->left)--;
    if (!c->last || c->last_tracker != tracker || c->last_day != day) {
        c->last = lv_find(c, tracker, day);
        c->last_tracker = tracker;
        c->last_day = day;
    }
    lv_add_row(c->last->b, db, row, k, c->bare);
    return APR_SUCCESS;
}

/* Hands the blocks read to fn, keeping the sealed days' ones. */
static apr_status_t lv_deliver(lv_read *c, qrt_aggcache_t *cache, qrt_agg_vcols_fn *fn,
                               void *ctx)
{
    apr_status_t rv = APR_SUCCESS;
    int i;

    for (i = 0; i < c->builds->nelts && rv == APR_SUCCESS; i++) {
        lv_build *x = &APR_ARRAY_IDX(c->builds, i, lv_build);
        qrt_aggcache_key_t key;
        apr_size_t len = 0;
        const char *data;
        qrt_vcols_t v;

        if (!x->seal && !qrt_vcols_count(x->b)) {
            continue;
        }
        key.account = x->tracker;
        key.level = 1;
        key.bucket = x->day;
        key.kind = c->kind;
        data = qrt_vcols_block(x->b, &len);
        data = lv_keep_block(cache, c->keep, &key, x->seal, data, len);
        rv = qrt_vcols_open(&v, data, len);
        if (rv == APR_SUCCESS && v.n) {
            rv = fn(ctx, x->tracker, &v);
        }
    }
    return rv;
}

/* One tracker's visits in [lo, hi] (whole days for the sealed days missed, listed
 * in miss), into blocks. */
static apr_status_t lv_range(qrt_db_t *db, apr_pool_t *p, qrt_aggcache_t *cache, int strings,
                             lv_keep *keep, apr_size_t *left, apr_int64_t tracker,
                             apr_int64_t lo,
                             apr_int64_t hi, apr_array_header_t *miss, qrt_agg_vcols_fn *fn,
                             void *ctx)
{
    const void *args[] = { &tracker, &lo, &hi };
    apr_status_t rv;
    lv_read c;
    int i;

    lv_read_begin(&c, p, !strings, keep, left);
    c.one = 1;
    c.tracker = tracker;
    c.kind = strings ? LV_KIND : LV_KIND_BARE;
    for (i = 0; i < miss->nelts; i++) {
        lv_add(&c, tracker, APR_ARRAY_IDX(miss, i, lv_day).day,
               APR_ARRAY_IDX(miss, i, lv_day).seal);
    }
    rv = qrt_db_each_stream(db, c.p, strings ? SQL_report_listed_visits
                                              : SQL_report_listed_visits_bare, args, lv_row, &c);
    if (rv == APR_SUCCESS) {
        rv = lv_deliver(&c, cache, fn, ctx);
    }
    apr_pool_destroy(c.p);
    miss->nelts = 0;
    return rv;
}

/* The visits in [s, e] of QRT_AGG_RAW_IDS trackers (slot; 0 for none) in one
 * statement, as blocks of no strings to fn (with their strings: lv_unsealed_ids). */
static apr_status_t lv_unsealed(qrt_db_t *db, apr_pool_t *p, qrt_aggcache_t *cache,
                                lv_keep *keep, apr_size_t *left, apr_int64_t *slot,
                                apr_int64_t s, apr_int64_t e, qrt_agg_vcols_fn *fn, void *ctx)
{
    const void *args[QRT_AGG_RAW_IDS + 2];
    apr_status_t rv;
    lv_read c;
    int k;

    for (k = 0; k < QRT_AGG_RAW_IDS; k++) {
        args[k] = &slot[k];
    }
    args[QRT_AGG_RAW_IDS] = &s;
    args[QRT_AGG_RAW_IDS + 1] = &e;
    lv_read_begin(&c, p, 1, keep, left);
    rv = qrt_db_each_stream(db, c.p, SQL_report_listed_visits_in_bare, args, lv_row, &c);
    if (rv == APR_SUCCESS) {
        rv = lv_deliver(&c, cache, fn, ctx);
    }
    apr_pool_destroy(c.p);
    return rv;
}

/* A span: the sealed days (two or more) of the LV_SPAN days from a multiple of LV_SPAN.
 * A tracker's visits of those days are kept as one block, under a seal of their seals
 * and of which days they are, and no such day as a block of its own: a report over a
 * long window looks up and walks a block a span instead of one a day (64 trackers over
 * a year: about 1,500 blocks, not 23,000), a window that takes part of a span walks the
 * whole block (the caller counts the visits of its window only, as it does of a
 * window's first and last days). The span of today holds the days before it (today,
 * not sealed, is read as every report reads it), as does one with a day an import
 * touched, or days before the account's first visit (no seal: nothing to read).
 * Whatever changes a day's visits drops its seal, and with it the span's. */
#define LV_SPAN_FULL ((1u << LV_SPAN) - 1)

typedef struct {
    apr_int64_t bucket, seal;
    unsigned mask;                  /* bit k: day bucket * LV_SPAN + k is in the block */
} lv_span;

/* The spans of all sealed days (all: by day, from the first day of the window's first
 * span to the last of its last) that hold a day of [d0, d1]. */
static apr_array_header_t *lv_spans(apr_pool_t *p, apr_array_header_t *all, apr_int64_t d0,
                                    apr_int64_t d1)
{
    apr_array_header_t *out = apr_array_make(p, 8, sizeof(lv_span));
    int i, k, n;

    for (i = 0; i < all->nelts; i = k) {
        apr_int64_t bucket = qrt_agg_fdiv(APR_ARRAY_IDX(all, i, lv_day).day, LV_SPAN);
        apr_uint64_t h = APR_UINT64_C(0x51A4);
        unsigned mask = 0;

        for (k = i; k < all->nelts
                    && qrt_agg_fdiv(APR_ARRAY_IDX(all, k, lv_day).day, LV_SPAN) == bucket;
             k++) {
            const lv_day *x = &APR_ARRAY_IDX(all, k, lv_day);

            mask |= 1u << (x->day - bucket * LV_SPAN);
            h = (h ^ (apr_uint64_t)x->seal) * APR_UINT64_C(0x9E3779B97F4A7C15);
            h ^= h >> 29;
        }
        n = k - i;
        if (n >= 2 && bucket * LV_SPAN <= d1 && bucket * LV_SPAN + LV_SPAN - 1 >= d0) {
            lv_span *x = apr_array_push(out);

            if (mask != LV_SPAN_FULL) {
                /* (which days: the same seals of other days are another block) */
                h = (h ^ mask) * APR_UINT64_C(0x9E3779B97F4A7C15);
                h ^= h >> 29;
            }
            x->bucket = bucket;
            x->seal = h ? (apr_int64_t)h : 1;
            x->mask = mask;
        }
    }
    return out;
}

/* The days of a span's block: 1 when t is on one of them (mask's bits from day0). */
static int lv_span_has(apr_int64_t day0, unsigned mask, apr_int64_t t)
{
    apr_int64_t k = qrt_agg_fdiv(t, QRT_AGG_DAY) - day0;

    return k >= 0 && k < LV_SPAN && (mask >> k & 1u);
}

typedef struct {
    qrt_vcols_builder_t *b;
    apr_size_t *left;
    apr_int64_t day0;               /* the span's first day */
    unsigned mask;                  /* its days in the block (lv_span) */
} lv_span_read;

static apr_status_t lv_span_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    lv_span_read *c = ctx;

    if (c->mask != LV_SPAN_FULL && !lv_span_has(c->day0, c->mask, qrt_db_int(db, row, 0, 0))) {
        return APR_SUCCESS;         /* (a day read by itself: not sealed) */
    }
    if (!*c->left) {
        return APR_EAGAIN;
    }
    (*c->left)--;
    lv_add_row(c->b, db, row, 0, 1);
    return APR_SUCCESS;
}

/* A span's visits with their strings, read by the ids of their user agent and place
 * (report_listed_visits_ids); the names of the ids not met before in the request are read
 * after, in one statement each (names_of), as a partial day's are (win_partial_raw). The
 * joins to visit_uas and visit_places cost two lookups a visit, most of a cold report's
 * read by browser, country or city. A name not found is "", as the joins' COALESCE gave. */
#define LV_NAMES_MAX 65536          /* ids a request keeps named; past them it starts over */

/* A user agent's or a place's names (by number), and their entries in the block being
 * built. Each visit finds its ids' slots in a table of integers, each id its names'
 * entries once a span, and each name its entry in the span's block by its number
 * (qrt_vcols_entry_new): each visit's three strings were looked up by their text, a
 * fifth of a cold report's time by browser, country or city. */
typedef struct {
    apr_int64_t id;
    apr_uint32_t s[3];                      /* user agent: [0] its browser; place: [1]
                                             * its country, [2] its city (lv_text) */
    apr_uint32_t span;                      /* the span whose entries e[] are (0: none) */
    apr_uint32_t e[2];                      /* browser; or country and city */
} lv_name;

/* A name's text, once a request however many ids name it (number 0: ""), and its entry
 * in each column of the block being built: found by its number, not by its text. */
typedef struct {
    const char *s;
    apr_uint32_t span[QRT_VCOLS_COLS];      /* the span whose entry e[col] is */
    apr_uint32_t e[QRT_VCOLS_COLS];
} lv_text;

/* The ids of one dictionary met in the request: slots [1, n] of v, found by id through
 * slot (open addressing, at most half full; 0: empty). */
typedef struct {
    lv_name *v;
    apr_uint32_t *slot;
    apr_uint32_t n, vcap, mask;
} lv_idmap;

typedef struct {
    apr_pool_t *p;                          /* the names' (a child of the request's) */
    lv_idmap map[2];                        /* user agents, places */
    apr_hash_t *text_index;                 /* text -> its number + 1 */
    apr_array_header_t *texts;              /* lv_text, by number */
    unsigned n;
    apr_uint32_t span;                      /* the spans read so far */
} lv_names;

typedef struct {
    lv_names *names;
    apr_array_header_t *rows;               /* lv_id_visit */
    apr_array_header_t *ids[2];             /* the ids not named yet */
    apr_size_t *left;
    int naming;                             /* 0: user agents, 1: places */
    apr_int64_t day0;                       /* the span's days (lv_span_read) */
    unsigned mask;
} lv_ids_read;

typedef struct {
    apr_int64_t tracker, t, visitor;        /* (the tracker: lv_unsealed_ids) */
    apr_uint32_t ua, place;                 /* their slots (lv_idmap) */
    int click;
} lv_id_visit;

static apr_uint32_t lv_id_hash(apr_int64_t id)
{
    apr_uint64_t h = (apr_uint64_t)id * APR_UINT64_C(0x9E3779B97F4A7C15);

    return (apr_uint32_t)(h >> 32);
}

static void lv_idmap_init(apr_pool_t *p, lv_idmap *m)
{
    m->n = 0;
    m->vcap = 64;
    m->v = apr_pcalloc(p, (m->vcap + 1) * sizeof(*m->v));
    m->mask = 2 * m->vcap - 1;
    m->slot = apr_pcalloc(p, (m->mask + 1) * sizeof(*m->slot));
}

/* The slot of id: found, or made (*made 1); 0 for none (find only: add 0). */
static apr_uint32_t lv_idmap_get(apr_pool_t *p, lv_idmap *m, apr_int64_t id, int add,
                                 int *made)
{
    apr_uint32_t h = lv_id_hash(id) & m->mask, i;

    for (; (i = m->slot[h]) != 0; h = (h + 1) & m->mask) {
        if (m->v[i].id == id) {
            return i;
        }
    }
    if (!add) {
        return 0;
    }
    if (m->n == m->vcap) {
        /* twice the slots (in the names' pool, which a reset clears), ids placed again */
        lv_name *v = apr_pcalloc(p, (2 * m->vcap + 1) * sizeof(*v));
        apr_uint32_t k;

        memcpy(v, m->v, (m->n + 1) * sizeof(*v));
        m->v = v;
        m->vcap *= 2;
        m->mask = 2 * m->vcap - 1;
        m->slot = apr_pcalloc(p, (m->mask + 1) * sizeof(*m->slot));
        for (k = 1; k <= m->n; k++) {
            for (h = lv_id_hash(v[k].id) & m->mask; m->slot[h]; h = (h + 1) & m->mask) {
            }
            m->slot[h] = k;
        }
        for (h = lv_id_hash(id) & m->mask; m->slot[h]; h = (h + 1) & m->mask) {
        }
    }
    i = ++m->n;
    m->v[i].id = id;
    m->slot[h] = i;
    *made = 1;
    return i;
}

/* Forgets every name (their memory too). */
static void lv_names_reset(lv_names *n)
{
    lv_text *none;

    apr_pool_clear(n->p);
    lv_idmap_init(n->p, &n->map[0]);
    lv_idmap_init(n->p, &n->map[1]);
    n->text_index = apr_hash_make(n->p);
    n->texts = apr_array_make(n->p, 256, sizeof(lv_text));
    none = apr_array_push(n->texts);
    memset(none, 0, sizeof(*none));
    none->s = "";
    n->n = 0;
    n->span = 0;
}

/* The number of text s (NULL and "": 0, which the index does not hold), made when
 * new. */
static apr_uint32_t lv_text_number(lv_names *n, const char *s)
{
    apr_size_t len = s ? strlen(s) : 0;
    apr_uintptr_t i = len ? (apr_uintptr_t)apr_hash_get(n->text_index, s, (apr_ssize_t)len) : 1;

    if (!i) {
        lv_text *x = apr_array_push(n->texts);

        memset(x, 0, sizeof(*x));
        x->s = apr_pstrmemdup(n->p, s, len);
        i = (apr_uintptr_t)n->texts->nelts;
        apr_hash_set(n->text_index, x->s, (apr_ssize_t)len, (void *)i);
    }
    return (apr_uint32_t)(i - 1);
}

/* The entry in column col of b (the block of span) of text number k. */
static apr_uint32_t lv_text_entry(lv_names *n, qrt_vcols_builder_t *b, apr_uint32_t span,
                                  int col, apr_uint32_t k)
{
    lv_text *x = &APR_ARRAY_IDX(n->texts, (int)k, lv_text);

    if (x->span[col] != span) {
        x->e[col] = qrt_vcols_entry_new(b, col, x->s);
        x->span[col] = span;
    }
    return x->e[col];
}

static lv_names *lv_names_make(apr_pool_t *p)
{
    lv_names *n = apr_pcalloc(p, sizeof(*n));

    apr_pool_create(&n->p, p);
    lv_names_reset(n);
    return n;
}

/* The slot of id in dictionary d, noted to be named when new. */
static apr_uint32_t lv_ids_note(lv_ids_read *c, int d, apr_int64_t id)
{
    lv_names *n = c->names;
    int made = 0;
    apr_uint32_t i = lv_idmap_get(n->p, &n->map[d], id, 1, &made);

    if (made) {
        APR_ARRAY_PUSH(c->ids[d], apr_int64_t) = id;
        n->n++;
    }
    return i;
}

/* A visit of tracker (col: time, source, visitor, user agent id, place id) kept, its ids
 * noted: APR_EAGAIN past *left. */
static apr_status_t lv_ids_push(lv_ids_read *c, apr_int64_t tracker, const apr_int64_t *col)
{
    lv_id_visit *x;

    if (!*c->left) {
        return APR_EAGAIN;
    }
    (*c->left)--;
    x = apr_array_push(c->rows);
    x->tracker = tracker;
    x->t = col[0];
    x->click = col[1] == 1;
    x->visitor = col[2];
    x->ua = lv_ids_note(c, 0, col[3]);
    x->place = lv_ids_note(c, 1, col[4]);
    return APR_SUCCESS;
}

static apr_status_t lv_ids_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    lv_ids_read *c = ctx;
    apr_int64_t col[5];             /* time, source, visitor, user agent, place */

    qrt_db_ints(db, row, 0, 5, col);
    if (c->mask != LV_SPAN_FULL && !lv_span_has(c->day0, c->mask, col[0])) {
        return APR_SUCCESS;
    }
    return lv_ids_push(c, 0, col);
}

/* A row of report_ua_browsers (id, browser: the name's [0]) or, naming places,
 * report_place_names (id, country, city: its [1] and [2]). */
static apr_status_t lv_name_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    lv_ids_read *c = ctx;
    lv_names *n = c->names;
    apr_int64_t id = qrt_db_int(db, row, 0, 0);
    apr_uint32_t i = lv_idmap_get(n->p, &n->map[c->naming], id, 0, NULL);
    int k;

    for (k = 0; i && k <= c->naming; k++) {
        n->map[c->naming].v[i].s[c->naming + k] = lv_text_number(n,
                                                                 qrt_store_agg_acc_col(db, row, 1 + k));
    }
    return APR_SUCCESS;
}

/* The names of the ids c noted (c->ids). */
static apr_status_t lv_ids_name(qrt_db_t *db, apr_pool_t *p, lv_ids_read *c)
{
    apr_status_t rv = APR_SUCCESS;

    if (c->ids[0]->nelts) {
        c->naming = 0;
        rv = names_of(db, p, SQL_report_ua_browsers, SQL_report_ua_browsers_range, c->ids[0],
                      lv_name_row, c);
    }
    if (rv == APR_SUCCESS && c->ids[1]->nelts) {
        c->naming = 1;
        rv = names_of(db, p, SQL_report_place_names, SQL_report_place_names_range, c->ids[1],
                      lv_name_row, c);
    }
    return rv;
}

/* A read of rows by ids begun: the names' memory bounded, no ids noted yet. */
static void lv_ids_begin(lv_ids_read *c, apr_pool_t *p, lv_names *names, apr_size_t *left)
{
    if (names->n > LV_NAMES_MAX) {
        lv_names_reset(names);      /* (many distinct ids: the request's memory bounded) */
    }
    c->names = names;
    c->rows = apr_array_make(p, 256, sizeof(lv_id_visit));
    c->left = left;
    c->day0 = 0;
    c->mask = LV_SPAN_FULL;
    c->ids[0] = apr_array_make(p, 16, sizeof(apr_int64_t));
    c->ids[1] = apr_array_make(p, 16, sizeof(apr_int64_t));
}

/* Visit x, its ids named, added to b, the block numbered span (names->span): each name's
 * entry made in b once. */
static void lv_ids_add(lv_names *names, apr_uint32_t span, qrt_vcols_builder_t *b,
                       const lv_id_visit *x)
{
    lv_name *u = &names->map[0].v[x->ua], *g = &names->map[1].v[x->place];
    apr_uint32_t e[QRT_VCOLS_COLS];

    if (u->span != span) {
        u->e[0] = lv_text_entry(names, b, span, QRT_VCOLS_BROWSER, u->s[0]);
        u->span = span;
    }
    if (g->span != span) {
        g->e[0] = lv_text_entry(names, b, span, QRT_VCOLS_COUNTRY, g->s[1]);
        g->e[1] = lv_text_entry(names, b, span, QRT_VCOLS_CITY, g->s[2]);
        g->span = span;
    }
    e[QRT_VCOLS_BROWSER] = u->e[0];
    e[QRT_VCOLS_COUNTRY] = g->e[0];
    e[QRT_VCOLS_CITY] = g->e[1];
    qrt_vcols_add_entries(b, x->t, x->click, x->visitor, e);
}

/* A span's visits with their strings into b (rows in p): APR_EAGAIN past *left. */
static apr_status_t lv_span_read_ids(qrt_db_t *db, apr_pool_t *p, lv_names *names,
                                     const void **args, apr_size_t *left,
                                     apr_int64_t day0, unsigned mask, qrt_vcols_builder_t *b)
{
    lv_ids_read c;
    apr_status_t rv;
    apr_uint32_t span;
    int i;

    lv_ids_begin(&c, p, names, left);
    c.day0 = day0;
    c.mask = mask;
    rv = qrt_db_each_stream(db, p, SQL_report_listed_visits_ids, args, lv_ids_row, &c);
    if (rv == APR_SUCCESS) {
        rv = lv_ids_name(db, p, &c);
    }
    span = ++names->span;
    for (i = 0; rv == APR_SUCCESS && i < c.rows->nelts; i++) {
        lv_ids_add(names, span, b, &APR_ARRAY_IDX(c.rows, i, lv_id_visit));
    }
    if (rv != APR_SUCCESS) {
        /* (ids noted without their names: not to be taken as named by a later span) */
        lv_names_reset(names);
    }
    return rv;
}

/* A row of report_listed_visits_in_ids: the tracker, then as lv_ids_row's. */
static apr_status_t lv_ids_in_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    apr_int64_t col[6];             /* tracker, time, source, visitor, user agent, place */

    qrt_db_ints(db, row, 0, 6, col);
    return lv_ids_push(ctx, col[0], col + 1);
}

static int lv_id_visit_cmp(const void *a, const void *b)
{
    const lv_id_visit *x = a, *y = b;

    if (x->tracker != y->tracker) {
        return x->tracker < y->tracker ? -1 : 1;
    }
    return x->t < y->t ? -1 : x->t > y->t;
}

/* The rows of visits by ids read so far, their ids named, added to their trackers'
 * blocks of c, then let go of (the names kept; past LV_NAMES_MAX, forgotten). */
#define LV_IDS_FLUSH 65536          /* rows kept at most between statements */

static apr_status_t lv_ids_flush(qrt_db_t *db, apr_pool_t *p, lv_ids_read *ir, lv_read *c)
{
    lv_names *names = ir->names;
    lv_build *last = NULL;
    apr_uint32_t span = 0;
    apr_status_t rv;
    int k;

    rv = lv_ids_name(db, p, ir);
    if (rv == APR_SUCCESS) {
        /* (a tracker's visits one after the other: its block's entries made once) */
        qsort(ir->rows->elts, (size_t)ir->rows->nelts, sizeof(lv_id_visit), lv_id_visit_cmp);
    }
    for (k = 0; rv == APR_SUCCESS && k < ir->rows->nelts; k++) {
        const lv_id_visit *x = &APR_ARRAY_IDX(ir->rows, k, lv_id_visit);

        if (!last || last->tracker != x->tracker) {
            last = lv_find(c, x->tracker, qrt_agg_fdiv(x->t, QRT_AGG_DAY));
            span = ++names->span;
        }
        lv_ids_add(names, span, last->b, x);
    }
    ir->rows->nelts = 0;
    ir->ids[0]->nelts = ir->ids[1]->nelts = 0;
    if (rv != APR_SUCCESS || names->n > LV_NAMES_MAX) {
        /* (ids noted without their names: not to be taken as named later) */
        lv_names_reset(names);
    }
    return rv;
}

/* The visits in [s, e] of the n trackers of slot (0 past n, up to a multiple of
 * QRT_AGG_RAW_IDS) with their strings, as blocks to fn: read QRT_AGG_RAW_IDS trackers a
 * statement with their dictionary ids, which are named after the statements (or once
 * LV_IDS_FLUSH rows wait), each once, not joined to the dictionaries a visit at a time
 * (PostgreSQL joined them by reading every user agent of the dictionary, whatever the
 * visits). */
static apr_status_t lv_unsealed_ids(qrt_db_t *db, apr_pool_t *p, qrt_aggcache_t *cache,
                                    lv_names *names, lv_keep *keep, apr_size_t *left,
                                    apr_int64_t *slot, int n, apr_int64_t s, apr_int64_t e,
                                    qrt_agg_vcols_fn *fn, void *ctx)
{
    const void *args[QRT_AGG_RAW_IDS + 2];
    apr_status_t rv = APR_SUCCESS;
    lv_ids_read ir;
    lv_read c;
    int j, k;

    args[QRT_AGG_RAW_IDS] = &s;
    args[QRT_AGG_RAW_IDS + 1] = &e;
    lv_read_begin(&c, p, 0, keep, left);
    lv_ids_begin(&ir, c.p, names, left);
    for (j = 0; j < n && rv == APR_SUCCESS; j += QRT_AGG_RAW_IDS) {
        for (k = 0; k < QRT_AGG_RAW_IDS; k++) {
            args[k] = &slot[j + k];
        }
        rv = qrt_db_each_stream(db, c.p, SQL_report_listed_visits_in_ids, args, lv_ids_in_row,
                                &ir);
        if (rv == APR_SUCCESS && (ir.rows->nelts >= LV_IDS_FLUSH || j + QRT_AGG_RAW_IDS >= n)) {
            rv = lv_ids_flush(db, c.p, &ir, &c);
        }
    }
    if (rv == APR_SUCCESS) {
        rv = lv_deliver(&c, cache, fn, ctx);
    }
    else {
        lv_names_reset(names);      /* (as lv_span_read_ids) */
    }
    apr_pool_destroy(c.p);
    return rv;
}

/* A tracker's visits of a span not kept (the days of mask): read whole, kept under key
 * and seal, handed to fn. */
static apr_status_t lv_span_fill(qrt_db_t *db, apr_pool_t *p, qrt_aggcache_t *cache,
                                 int strings, lv_names *names, lv_keep *keep,
                                 apr_size_t *left,
                                 const qrt_aggcache_key_t *key,
                                 apr_int64_t seal, unsigned mask, qrt_agg_vcols_fn *fn,
                                 void *ctx)
{
    apr_int64_t day0 = key->bucket * LV_SPAN;
    int first = __builtin_ctz(mask), last = 31 - __builtin_clz(mask);
    apr_int64_t lo = (day0 + first) * QRT_AGG_DAY;
    apr_int64_t hi = (day0 + last + 1) * QRT_AGG_DAY - 1;
    const void *args[] = { &key->account, &lo, &hi };
    apr_pool_t *sp;
    lv_span_read c;
    apr_status_t rv;

    if ((rv = apr_pool_create(&sp, p)) != APR_SUCCESS) {
        return rv;
    }
    c.b = qrt_vcols_builder_make(sp);
    c.left = left;
    c.day0 = day0;
    c.mask = mask;
    qrt_vcols_builder_ids(c.b, qrt_store_agg_blob_strid());
    if (!strings) {
        qrt_vcols_builder_bare(c.b);
    }
    rv = strings ? lv_span_read_ids(db, sp, names, args, left, day0, mask, c.b)
                 : qrt_db_each_stream(db, sp, SQL_report_listed_visits_bare, args, lv_span_row,
                                      &c);
    if (rv == APR_SUCCESS) {
        apr_size_t len = 0;
        const char *data = qrt_vcols_block(c.b, &len);
        qrt_vcols_t v;

        data = lv_keep_block(cache, keep, key, seal, data, len);
        rv = qrt_vcols_open(&v, data, len);
        if (rv == APR_SUCCESS && v.n) {
            rv = fn(ctx, key->account, &v);
        }
    }
    apr_pool_destroy(sp);
    return rv;
}

/* The spans kept of tracker (keys, data, lens, ents: n each, seals[k] the seal of
 * spans[k]): a report that needs no strings takes either block. Held in ents until
 * qrt_aggcache_release_many. */
static void lv_spans_kept(qrt_aggcache_t *cache, apr_int64_t tracker, const lv_span *spans,
                          const apr_int64_t *seals, int n, int strings,
                          qrt_aggcache_key_t *keys, const char **data, apr_size_t *lens,
                          qrt_aggcache_ent_t **ents)
{
    int k;

    for (k = 0; k < n; k++) {
        keys[k].account = tracker;
        keys[k].level = LV_SPAN;
        keys[k].bucket = spans[k].bucket;
        keys[k].kind = strings ? LV_KIND : LV_KIND_BARE;
        data[k] = NULL;
        ents[k] = NULL;
    }
    if (n && qrt_aggcache_get_many(cache, keys, seals, n, data, lens, ents) < n && !strings) {
        for (k = 0; k < n; k++) {
            keys[k].kind = LV_KIND;
        }
        qrt_aggcache_get_many(cache, keys, seals, n, data, lens, ents);
    }
}

/* ---- a second thread for a list's blocks (qrt_store_agg_read_helper) ---------------
 * A list whose blocks are not kept yet is read from the visits through SQL, most of
 * its time in the database's code and in building the blocks, on one CPU. A second
 * thread over a connection of its own reads the spans of the trackers from the last one
 * back and keeps them, while the request goes on from the first; where they meet, the
 * thread stops and the request finds the rest kept, as though an earlier request had
 * read them. (Halves were slower: the request's trackers also take its days not in a
 * span, and a list's busy trackers need not be spread evenly.) The thread is one a
 * process, made when first needed and kept, with a pool of its own cleared after each
 * list, keeping little of what it freed; the C library's heaps are trimmed after a list
 * it read, since the library keeps what a thread freed in a heap of its own. */
static qrt_agg_help_take_fn *lv_help_take;
static qrt_agg_help_give_fn *lv_help_give;
static int lv_help_min = QRT_AGG_HELP_MIN;
static int lv_help_sync;            /* tests: the request waits for the thread's first span */
static apr_size_t lv_helped;        /* (atomic: spans read by helpers) */

/* Below this many bytes of the cache, what the thread keeps would be pushed out before
 * the request reaches it. */
#define LV_HELP_CACHE ((apr_size_t)8 << 20)
/* What the thread's pool keeps of the memory it freed. */
#define LV_HELP_KEEP ((apr_size_t)256 << 10)

typedef struct {
    qrt_db_t *db;
    apr_pool_t *p;                  /* the thread's */
    qrt_aggcache_t *cache;
    int strings;
    const apr_int64_t *ids;
    int claim;                      /* (atomic) the last tracker it took, from the end */
    int at;                         /* (atomic) the tracker the request reads now */
    const lv_span *spans;
    int nspans;
    apr_size_t left;                /* visits it may read through SQL */
    apr_size_t most;                /* ... and keep: half of what the cache holds */
    int stop;                       /* (atomic) set by the request: stop now */
    apr_size_t read;                /* spans it read and kept */
    int first;                      /* (under mu) its first span tried */
    apr_status_t rv;
} lv_help;

/* The thread, its job and its state, under mu. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int started, quit;
    int busy;                       /* a request's job, from its start to its end */
    lv_help *job;                   /* posted, not yet done */
    apr_pool_t *p;
} lv_helper = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

void qrt_store_agg_read_helper(qrt_agg_help_take_fn *take, qrt_agg_help_give_fn *give,
                               int min)
{
    pthread_mutex_lock(&lv_helper.mu);
    lv_help_take = take && give ? take : NULL;
    lv_help_give = take && give ? give : NULL;
    lv_help_min = min > 0 ? min : QRT_AGG_HELP_MIN;
    if (!lv_help_take && lv_helper.started) {
        /* (no job runs: a request holds the thread until its end) */
        lv_helper.quit = 1;
        pthread_cond_broadcast(&lv_helper.cv);
        pthread_mutex_unlock(&lv_helper.mu);
        pthread_join(lv_helper.thread, NULL);
        pthread_mutex_lock(&lv_helper.mu);
        apr_pool_destroy(lv_helper.p);
        lv_helper.p = NULL;
        lv_helper.started = lv_helper.quit = 0;
    }
    pthread_mutex_unlock(&lv_helper.mu);
}

void qrt_store_agg_read_helper_sync(int on)
{
    pthread_mutex_lock(&lv_helper.mu);
    lv_help_sync = on;
    pthread_mutex_unlock(&lv_helper.mu);
}

apr_size_t qrt_store_agg_read_helped(void)
{
    return __atomic_load_n(&lv_helped, __ATOMIC_RELAXED);
}

/* (the blocks a helper reads go to the cache alone) */
static apr_status_t lv_help_kept(void *ctx, apr_int64_t tracker, const qrt_vcols_t *v)
{
    lv_help *h = ctx;

    (void)tracker;
    h->most = h->most > v->n ? h->most - v->n : 0;
    return APR_SUCCESS;
}

/* The job h, in the helper's pool (cleared after it). */
static void lv_help_run(lv_help *h)
{
    int n = h->nspans, j, k;
    qrt_aggcache_key_t *keys = apr_pcalloc(h->p, (apr_size_t)n * sizeof(*keys));
    apr_int64_t *seals = apr_pcalloc(h->p, (apr_size_t)n * sizeof(*seals));
    const char **dat = apr_pcalloc(h->p, (apr_size_t)n * sizeof(*dat));
    apr_size_t *len = apr_pcalloc(h->p, (apr_size_t)n * sizeof(*len));
    qrt_aggcache_ent_t **ents = apr_pcalloc(h->p, (apr_size_t)n * sizeof(*ents));
    lv_names *names = h->strings ? lv_names_make(h->p) : NULL;

    for (k = 0; k < n; k++) {
        seals[k] = h->spans[k].seal;
    }
    /* trackers taken from the end until the request's reading meets them */
    while (h->rv == APR_SUCCESS
           && (j = __atomic_sub_fetch(&h->claim, 1, __ATOMIC_ACQ_REL))
              > __atomic_load_n(&h->at, __ATOMIC_ACQUIRE)) {
        /* the spans already kept (as the request looks them up) left alone */
        lv_spans_kept(h->cache, h->ids[j], h->spans, seals, n, h->strings, keys, dat, len,
                      ents);
        qrt_aggcache_release_many(h->cache, ents, n);
        for (k = 0; k < n && h->rv == APR_SUCCESS; k++) {
            if (dat[k]) {
                continue;
            }
            if (__atomic_load_n(&h->stop, __ATOMIC_ACQUIRE) || !h->most) {
                return;
            }
            keys[k].kind = h->strings ? LV_KIND : LV_KIND_BARE;
            h->rv = lv_span_fill(h->db, h->p, h->cache, h->strings, names, NULL, &h->left,
                                 &keys[k], seals[k], h->spans[k].mask, lv_help_kept, h);
            if (h->rv == APR_SUCCESS) {
                h->read++;
                __atomic_add_fetch(&lv_helped, 1, __ATOMIC_RELAXED);
            }
            if (!h->first) {
                pthread_mutex_lock(&lv_helper.mu);
                h->first = 1;
                pthread_cond_broadcast(&lv_helper.cv);
                pthread_mutex_unlock(&lv_helper.mu);
            }
        }
    }
}

static void *lv_help_main(void *data)
{
    (void)data;
    pthread_mutex_lock(&lv_helper.mu);
    while (!lv_helper.quit) {
        lv_help *h = lv_helper.job;
        apr_size_t read;

        if (!h) {
            pthread_cond_wait(&lv_helper.cv, &lv_helper.mu);
            continue;
        }
        pthread_mutex_unlock(&lv_helper.mu);
        lv_help_run(h);
        apr_pool_clear(lv_helper.p);
        read = h->read;
        pthread_mutex_lock(&lv_helper.mu);
        lv_helper.job = NULL;       /* (h is the request's again) */
        pthread_cond_broadcast(&lv_helper.cv);
        if (read) {
            /* (the C library keeps what this thread freed in a heap of its own: given back
             * once a list was read, a rare thing, so that each child does not keep its
             * largest list's memory; after the request goes on) */
            pthread_mutex_unlock(&lv_helper.mu);
            (void)qrt_trim();
            pthread_mutex_lock(&lv_helper.mu);
        }
    }
    pthread_mutex_unlock(&lv_helper.mu);
    return NULL;
}

/* The thread made (under mu): 0, or -1. */
static int lv_help_made(void)
{
    apr_allocator_t *a;

    if (lv_helper.started) {
        return 0;
    }
    if (apr_allocator_create(&a) != APR_SUCCESS) {
        return -1;
    }
    apr_allocator_max_free_set(a, LV_HELP_KEEP);
    if (apr_pool_create_unmanaged_ex(&lv_helper.p, NULL, a) != APR_SUCCESS) {
        apr_allocator_destroy(a);
        return -1;
    }
    apr_allocator_owner_set(a, lv_helper.p);
    if (pthread_create(&lv_helper.thread, NULL, lv_help_main, NULL) != 0) {
        apr_pool_destroy(lv_helper.p);
        lv_helper.p = NULL;
        return -1;
    }
    lv_helper.started = 1;
    return 0;
}

/* Starts the helper on ids (from the last) when the list is long enough, the cache
 * large enough, and the thread and a connection free: its job (in p), or NULL. */
static lv_help *lv_help_start(apr_pool_t *p, qrt_aggcache_t *cache, int strings,
                              const apr_int64_t *ids, int n, const apr_array_header_t *spans,
                              apr_size_t left)
{
    lv_help *h;
    qrt_db_t *db;

    if (!lv_help_take || n < lv_help_min || !spans->nelts
        || qrt_aggcache_max_bytes(cache) < LV_HELP_CACHE) {
        return NULL;
    }
    pthread_mutex_lock(&lv_helper.mu);
    if (lv_helper.busy || lv_help_made() < 0) {
        pthread_mutex_unlock(&lv_helper.mu);
        return NULL;
    }
    lv_helper.busy = 1;
    pthread_mutex_unlock(&lv_helper.mu);
    if (!(db = lv_help_take())) {
        pthread_mutex_lock(&lv_helper.mu);
        lv_helper.busy = 0;
        pthread_mutex_unlock(&lv_helper.mu);
        return NULL;
    }
    h = apr_pcalloc(p, sizeof(*h));
    h->db = db;
    h->p = lv_helper.p;
    h->cache = cache;
    h->strings = strings;
    h->ids = ids;
    h->claim = n;
    h->at = 0;
    h->spans = (const lv_span *)(const void *)spans->elts;
    h->nspans = spans->nelts;
    h->left = left / 2;
    h->most = qrt_aggcache_max_bytes(cache) / LV_VISIT_BYTES / 2;
    h->rv = APR_SUCCESS;
    pthread_mutex_lock(&lv_helper.mu);
    lv_helper.job = h;
    pthread_cond_broadcast(&lv_helper.cv);
    while (lv_help_sync && !h->first && lv_helper.job == h) {
        pthread_cond_wait(&lv_helper.cv, &lv_helper.mu);
    }
    pthread_mutex_unlock(&lv_helper.mu);
    return h;
}

/* Waits for the helper's job (stopped at once with stop) and gives its connection
 * back. */
static void lv_help_end(lv_help *h, int stop)
{
    if (!h) {
        return;
    }
    if (stop) {
        __atomic_store_n(&h->stop, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_lock(&lv_helper.mu);
    while (lv_helper.job == h) {
        pthread_cond_wait(&lv_helper.cv, &lv_helper.mu);
    }
    pthread_mutex_unlock(&lv_helper.mu);
    /* (past its share of the bound it only stopped; a failed statement breaks it) */
    lv_help_give(h->db, h->rv != APR_SUCCESS && h->rv != APR_EAGAIN, h->read);
    pthread_mutex_lock(&lv_helper.mu);
    lv_helper.busy = 0;
    pthread_mutex_unlock(&lv_helper.mu);
}

apr_status_t qrt_store_agg_read_listed(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                       const apr_int64_t *ids, int n, apr_int64_t s,
                                       apr_int64_t e, int strings, int any,
                                       apr_array_header_t *held, qrt_agg_vcols_fn *fn,
                                       qrt_agg_ready_fn *ready, void *ctx)
{
    qrt_aggcache_t *cache = qrt_store_agg_blob_kept();
    lv_keep kept = { p, held, 0, qrt_aggcache_max_bytes(cache) }, *keep = held ? &kept : NULL;
    apr_array_header_t *sealed, *gaps, *miss;
    apr_int64_t *slot, lo;
    qrt_aggcache_ent_t **ents;
    qrt_aggcache_key_t *keys;
    apr_int64_t *seals;
    const char **data;
    apr_size_t *len;
    apr_size_t left = LV_MAX_READ;
    lv_names *names = NULL;         /* (the user agents' and places' names read so far) */
    apr_array_header_t *spans, *all;
    apr_int64_t d0, d1;
    qrt_aggcache_ent_t **sents;
    qrt_aggcache_key_t *skeys;
    apr_int64_t *sseals;
    const char **sdata;
    apr_size_t *slen;
    int *span_of;
    apr_status_t rv;
    lv_help *help;
    int i, j, k, nshared = 0, helped = 0;

    if (!cache || n > QRT_AGG_LISTED_MAX) {
        return APR_ENOTIMPL;
    }
    if (any) {
        /* as many as make blocks of twice the cache's bytes: what is not held in the
         * cache is copied into p */
        if (qrt_aggcache_max_bytes(cache) / LV_VISIT_BYTES > left) {
            left = qrt_aggcache_max_bytes(cache) / LV_VISIT_BYTES;
        }
        left *= 2;
    }
    else if (lv_bound) {
        left = lv_bound;
    }
    else if (qrt_aggcache_max_bytes(cache) / LV_VISIT_BYTES / 5 * 4 > left) {
        left = qrt_aggcache_max_bytes(cache) / LV_VISIT_BYTES / 5 * 4;
    }
    /* (a statement takes QRT_AGG_RAW_IDS of them at a time, the rest 0) */
    slot = apr_pcalloc(p, (apr_size_t)(n + QRT_AGG_RAW_IDS) * sizeof(*slot));
    if (s < QRT_AGG_TMIN) {
        s = QRT_AGG_TMIN;
    }
    if (e > QRT_AGG_TMAX) {
        e = QRT_AGG_TMAX;
    }
    if (s > e || n <= 0) {
        return APR_SUCCESS;
    }
    d0 = qrt_agg_fdiv(s, QRT_AGG_DAY);
    d1 = qrt_agg_fdiv(e, QRT_AGG_DAY);
    /* the sealed days of the window's spans, those of the window alone apart */
    rv = lv_sealed(db, p, account_id, qrt_agg_fdiv(d0, LV_SPAN) * LV_SPAN,
                   qrt_agg_fdiv(d1, LV_SPAN) * LV_SPAN + LV_SPAN - 1, &all);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    spans = lv_spans(p, all, d0, d1);
    sealed = apr_array_make(p, all->nelts + 1, sizeof(lv_day));
    for (i = 0; i < all->nelts; i++) {
        lv_day *x = &APR_ARRAY_IDX(all, i, lv_day);

        if (x->day >= d0 && x->day <= d1) {
            APR_ARRAY_PUSH(sealed, lv_day) = *x;
        }
    }
    /* The window less its sealed days: what every tracker reads from the visits. */
    gaps = apr_array_make(p, 8, 2 * sizeof(apr_int64_t));
    lo = s;
    for (i = 0; i < sealed->nelts; i++) {
        apr_int64_t d = APR_ARRAY_IDX(sealed, i, lv_day).day;

        if (d * QRT_AGG_DAY > lo) {
            apr_int64_t *g = apr_array_push(gaps);

            g[0] = lo;
            g[1] = d * QRT_AGG_DAY - 1;
        }
        if ((d + 1) * QRT_AGG_DAY > lo) {
            lo = (d + 1) * QRT_AGG_DAY;
        }
    }
    if (lo <= e) {
        apr_int64_t *g = apr_array_push(gaps);

        g[0] = lo;
        g[1] = e;
    }
    ents = apr_pcalloc(p, (sealed->nelts + 1) * sizeof(*ents));
    keys = apr_pcalloc(p, (sealed->nelts + 1) * sizeof(*keys));
    seals = apr_pcalloc(p, (sealed->nelts + 1) * sizeof(*seals));
    data = apr_pcalloc(p, (sealed->nelts + 1) * sizeof(*data));
    len = apr_pcalloc(p, (sealed->nelts + 1) * sizeof(*len));
    for (i = 0; i < sealed->nelts; i++) {
        seals[i] = APR_ARRAY_IDX(sealed, i, lv_day).seal;
    }
    span_of = apr_pcalloc(p, (sealed->nelts + 1) * sizeof(*span_of));
    sents = apr_pcalloc(p, (spans->nelts + 1) * sizeof(*sents));
    skeys = apr_pcalloc(p, (spans->nelts + 1) * sizeof(*skeys));
    sseals = apr_pcalloc(p, (spans->nelts + 1) * sizeof(*sseals));
    sdata = apr_pcalloc(p, (spans->nelts + 1) * sizeof(*sdata));
    slen = apr_pcalloc(p, (spans->nelts + 1) * sizeof(*slen));
    for (k = 0, i = 0; k < spans->nelts; k++) {
        lv_span *x = &APR_ARRAY_IDX(spans, k, lv_span);

        sseals[k] = x->seal;
        for (; i < sealed->nelts
               && APR_ARRAY_IDX(sealed, i, lv_day).day < (x->bucket + 1) * LV_SPAN; i++) {
            if (APR_ARRAY_IDX(sealed, i, lv_day).day >= x->bucket * LV_SPAN) {
                span_of[i] = k + 1;
            }
        }
    }
    miss = apr_array_make(p, 16, sizeof(lv_day));
    help = NULL;
    for (j = 0; j < n && rv == APR_SUCCESS; j++) {
        int missed = 0;

        if (help) {
            /* (where the helper's trackers begin: it stops, and this one goes on to
             * find their spans kept) */
            __atomic_store_n(&help->at, j, __ATOMIC_RELEASE);
            if (j >= __atomic_load_n(&help->claim, __ATOMIC_ACQUIRE)) {
                lv_help_end(help, 1);
                help = NULL;
            }
        }
        miss->nelts = 0;
        /* the spans kept */
        lv_spans_kept(cache, ids[j], (const lv_span *)(const void *)spans->elts, sseals,
                      spans->nelts, strings, skeys, sdata, slen, sents);
        /* A span not kept: the trackers' spans are read by a second thread too, from
         * the last tracker back, when one may (once a request). */
        for (k = 0; k < spans->nelts && !helped; k++) {
            if (!sdata[k]) {
                helped = 1;
                if ((help = lv_help_start(p, cache, strings, ids, n, spans, left))) {
                    __atomic_store_n(&help->at, j, __ATOMIC_RELEASE);
                }
            }
        }
        /* each span, kept or read now */
        for (k = 0; k < spans->nelts && rv == APR_SUCCESS; k++) {
            qrt_vcols_t v;

            if (!sdata[k]) {
                skeys[k].kind = strings ? LV_KIND : LV_KIND_BARE;
                if (strings && !names) {
                    names = lv_names_make(p);
                }
                rv = lv_span_fill(db, p, cache, strings, names, keep, &left, &skeys[k],
                                  sseals[k], APR_ARRAY_IDX(spans, k, lv_span).mask, fn, ctx);
            }
            else if (qrt_vcols_open(&v, sdata[k], slen[k]) == APR_SUCCESS && v.n) {
                rv = fn(ctx, ids[j], &v);
            }
        }
        /* the days kept, but for those of a span (data[i] set: not looked up) */
        for (i = 0; i < sealed->nelts; i++) {
            keys[i].account = ids[j];
            keys[i].level = 1;
            keys[i].bucket = APR_ARRAY_IDX(sealed, i, lv_day).day;
            keys[i].kind = strings ? LV_KIND : LV_KIND_BARE;
            data[i] = span_of[i] ? LV_SPANNED : NULL;
            ents[i] = NULL;
        }
        qrt_aggcache_get_many(cache, keys, seals, sealed->nelts, data, len, ents);
        for (i = 0; i < sealed->nelts; i++) {
            missed += !data[i];
        }
        if (missed && !strings) {
            for (i = 0; i < sealed->nelts; i++) {
                keys[i].kind = LV_KIND;
            }
            missed -= qrt_aggcache_get_many(cache, keys, seals, sealed->nelts, data, len, ents);
        }
        if (!missed) {
            slot[nshared++] = ids[j];
        }
        /* The kept blocks; of a tracker with days missed, those days and the
         * window's days not sealed, each run of them in one statement. */
        lo = s;
        for (i = 0; i < sealed->nelts; i++) {
            lv_day *d = &APR_ARRAY_IDX(sealed, i, lv_day);
            qrt_vcols_t v;

            if (data[i] && rv == APR_SUCCESS) {
                if (missed && lo <= d->day * QRT_AGG_DAY - 1) {
                    rv = lv_range(db, p, cache, strings, keep, &left, ids[j], lo,
                                  d->day * QRT_AGG_DAY - 1, miss, fn, ctx);
                }
                /* (a span's days came with its block) */
                if (rv == APR_SUCCESS && !span_of[i]
                    && qrt_vcols_open(&v, data[i], len[i]) == APR_SUCCESS && v.n) {
                    rv = fn(ctx, ids[j], &v);
                }
                lo = (d->day + 1) * QRT_AGG_DAY;
            }
            else if (!data[i]) {
                /* (read whole: the window's first day from its start) */
                if (d->day * QRT_AGG_DAY < lo) {
                    lo = d->day * QRT_AGG_DAY;
                }
                APR_ARRAY_PUSH(miss, lv_day) = *d;
            }
        }
        if (missed && rv == APR_SUCCESS) {
            apr_int64_t hi = e;

            if (miss->nelts) {
                apr_int64_t last = APR_ARRAY_IDX(miss, miss->nelts - 1, lv_day).day;

                if ((last + 1) * QRT_AGG_DAY - 1 > hi) {
                    hi = (last + 1) * QRT_AGG_DAY - 1;
                }
            }
            if (lo <= hi) {
                rv = lv_range(db, p, cache, strings, keep, &left, ids[j], lo, hi, miss, fn, ctx);
            }
        }
        if (held) {
            /* The blocks found count with those put: once the report holds the cache's
             * bytes, it puts no more (a list larger than the cache would otherwise push
             * out, at each request, the blocks the next one finds first). */
            for (i = 0; i < sealed->nelts; i++) {
                if (ents[i]) {
                    APR_ARRAY_PUSH(held, qrt_aggcache_ent_t *) = ents[i];
                    keep->pinned += len[i];
                }
            }
            for (k = 0; k < spans->nelts; k++) {
                if (sents[k]) {
                    APR_ARRAY_PUSH(held, qrt_aggcache_ent_t *) = sents[k];
                    keep->pinned += slen[k];
                }
            }
        }
        else {
            qrt_aggcache_release_many(cache, ents, sealed->nelts);
            qrt_aggcache_release_many(cache, sents, spans->nelts);
        }
    }
    lv_help_end(help, 1);           /* (the request failed before the two met) */
    if (rv == APR_SUCCESS && held && ready) {
        ready(ctx);
    }
    /* The days not sealed of the trackers read from kept blocks alone, at once
     * (QRT_AGG_RAW_IDS trackers a statement). */
    for (i = 0; i < gaps->nelts && rv == APR_SUCCESS; i++) {
        apr_int64_t *g = (apr_int64_t *)(void *)(gaps->elts + (apr_size_t)i * gaps->elt_size);

        if (strings && nshared) {
            if (!names) {
                names = lv_names_make(p);
            }
            rv = lv_unsealed_ids(db, p, cache, names, keep, &left, slot, nshared, g[0], g[1],
                                 fn, ctx);
        }
        for (j = 0; !strings && j < nshared && rv == APR_SUCCESS; j += QRT_AGG_RAW_IDS) {
            rv = lv_unsealed(db, p, cache, keep, &left, slot + j, g[0], g[1], fn, ctx);
        }
    }
    return rv;
}

void qrt_store_agg_read_listed_release(apr_array_header_t *held)
{
    qrt_aggcache_t *cache = qrt_store_agg_blob_kept();

    if (cache && held && held->nelts) {
        qrt_aggcache_release_many(cache, (qrt_aggcache_ent_t **)(void *)held->elts,
                                  held->nelts);
    }
    if (held) {
        held->nelts = 0;
    }
}
