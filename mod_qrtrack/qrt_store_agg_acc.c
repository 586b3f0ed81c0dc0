/* qrt_store_agg_acc: what visits add to the report aggregates (qrt_agg.h), merged in
 * an accumulator and written in runs of rows; the aggregated trackers with their tag
 * snapshots. Shared by the write path (qrt_store_agg_write.c) and the rebuild
 * (qrt_store_agg_rebuild.c): private to the store (qrt_store_agg_acc.h). */
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>
#include "qrt_store.h"
#include "qrt_store_agg_acc.h"
#include "qrt_hash.h"
#include "qrt_store_agg_blob.h"

/* ---- helpers ------------------------------------------------------------ */

const char *qrt_store_agg_acc_col(qrt_db_t *db, apr_dbd_row_t *row, int col)
{
    const char *s = qrt_db_str(db, row, col);

    return s ? s : "";
}

const char *qrt_store_agg_acc_nz(const char *s)
{
    return s ? s : "";
}

int qrt_store_agg_acc_strcmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int qrt_store_agg_acc_has_tag(const char *const *tags, int n, const char *tag)
{
    return bsearch(&tag, tags, n, sizeof(*tags), qrt_store_agg_acc_strcmp) != NULL;
}

/* ---- aggregated trackers ------------------------------------------------- */

apr_status_t qrt_store_agg_acc_int_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    apr_int64_t *out = ctx;

    *out = qrt_db_int(db, row, 0, 0);
    return APR_SUCCESS;
}

typedef struct {
    apr_pool_t *p;
    apr_int64_t account;        /* 0 when the tracker is not aggregated */
    apr_array_header_t *tags;
} agg_tags_ctx;

static apr_status_t agg_trk_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_tags_ctx *c = ctx;
    const char *tag = qrt_db_str(db, row, 1);

    c->account = qrt_db_int(db, row, 0, 0);
    if (tag) {
        APR_ARRAY_PUSH(c->tags, const char *) = apr_pstrdup(c->p, tag);
    }
    return APR_SUCCESS;
}

/* Tracker id's entry in cache, from what agg_trk_get returned (tc). */
static qrt_store_agg_trk_t *agg_trk_keep(apr_pool_t *p, apr_hash_t *cache, apr_int64_t id,
                                         agg_tags_ctx *tc)
{
    qrt_store_agg_trk_t *k = apr_pcalloc(p, sizeof(*k));

    qsort(tc->tags->elts, tc->tags->nelts, sizeof(const char *), qrt_store_agg_acc_strcmp);
    k->id = id;
    k->account = tc->account;
    k->tags = (const char **)tc->tags->elts;
    k->ntags = tc->tags->nelts;
    apr_hash_set(cache, &k->id, sizeof(k->id), k);
    return k;
}

/* The aggregated tracker id from the cache, else from agg_trk; with create, a
 * tracker not yet aggregated is added with its current tags. */
apr_status_t qrt_store_agg_acc_trk_get(qrt_db_t *db, apr_pool_t *p, apr_hash_t *cache,
                                       apr_int64_t id, int create,
                                       qrt_store_agg_trk_t **out)
{
    qrt_store_agg_trk_t *k = apr_hash_get(cache, &id, sizeof(id));
    const void *args[] = { &id };
    agg_tags_ctx tc;
    apr_status_t rv;

    if (k) {
        *out = k;
        return APR_SUCCESS;
    }
    tc.p = p;
    tc.account = 0;
    tc.tags = apr_array_make(p, 4, sizeof(const char *));
    rv = qrt_db_each(db, p, SQL_agg_trk_get, args, agg_trk_row, &tc);
    if (rv == APR_SUCCESS && tc.account == 0 && create) {
        rv = qrt_db_exec(db, p, SQL_agg_trk_add, NULL, args);
        if (rv == APR_SUCCESS) {
            rv = qrt_db_exec(db, p, SQL_agg_tag_snap, NULL, args);
        }
        if (rv == APR_SUCCESS) {
            rv = qrt_db_each(db, p, SQL_agg_trk_get, args, agg_trk_row, &tc);
        }
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (tc.account == 0) {
        db->error = apr_psprintf(p, "no tracker %" APR_INT64_T_FMT, id);
        return APR_NOTFOUND;
    }
    *out = agg_trk_keep(p, cache, id, &tc);
    return APR_SUCCESS;
}

apr_status_t qrt_store_agg_acc_trk_hold(qrt_db_t *db, apr_pool_t *p, apr_int64_t id,
                                        qrt_pipe_rows_t **rows)
{
    const void *args[] = { &id };

    return qrt_db_hold_select(db, p, SQL_agg_trk_get, args, rows);
}

void qrt_store_agg_acc_trk_put(qrt_db_t *db, apr_pool_t *p, apr_hash_t *cache,
                               apr_int64_t id, const qrt_pipe_rows_t *rows)
{
    agg_tags_ctx tc;
    const char *error = db->error;

    tc.p = p;
    tc.account = 0;
    tc.tags = apr_array_make(p, 4, sizeof(const char *));
    if (apr_hash_get(cache, &id, sizeof(id))
        || qrt_db_held_each(db, rows, agg_trk_row, &tc) != APR_SUCCESS) {
        db->error = error;
        return;
    }
    if (tc.account != 0) {
        agg_trk_keep(p, cache, id, &tc);
    }
}

/* ---- the accumulator: changes merged before they are written ------------- */

/* The accumulators' tables are keyed by fixed-size keys (integers and interned string
 * pointers, zero-padded): qrt_hash_make hashes them 8 bytes a step, where APR's default
 * takes many instructions for these 40-byte keys on every visit of an import. */
qrt_store_agg_acc_t *qrt_store_agg_acc_make(qrt_db_t *db, apr_pool_t *p)
{
    qrt_store_agg_acc_t *a = apr_pcalloc(p, sizeof(*a));

    a->db = db;
    a->p = p;
    apr_pool_create(&a->lp, p);
    a->strs = apr_hash_make(p);
    a->cnt = qrt_hash_make(p);
    a->day = qrt_hash_make(p);
    a->lnk = qrt_hash_make(a->lp);
    a->gap = qrt_hash_make(a->lp);
    a->stale = apr_hash_make(p);
    return a;
}

/* One pointer per distinct string, so that keys compare as bytes. */
const char *qrt_store_agg_acc_intern(qrt_store_agg_acc_t *a, const char *s)
{
    const char *k = apr_hash_get(a->strs, s, APR_HASH_KEY_STRING);

    if (!k) {
        k = apr_pstrdup(a->p, s);
        apr_hash_set(a->strs, k, APR_HASH_KEY_STRING, k);
    }
    return k;
}

/* The entry of h for a key of klen bytes: an entry of esize bytes that starts with
 * its key, made zeroed in p when new (*made says so when not NULL). */
static void *acc_entry(apr_pool_t *p, apr_hash_t *h, const void *key, apr_size_t klen,
                       apr_size_t esize, int *made)
{
    void *e = apr_hash_get(h, key, klen);

    if (made) {
        *made = !e;
    }
    if (!e) {
        e = apr_pcalloc(p, esize);
        memcpy(e, key, klen);
        apr_hash_set(h, e, klen, e);
    }
    return e;
}

static cnt_ent *acc_cnt_ent(qrt_store_agg_acc_t *a, apr_hash_t *h, const cnt_key *k)
{
    return acc_entry(a->p, h, k, sizeof(*k), sizeof(cnt_ent), NULL);
}

static void acc_cnt(qrt_store_agg_acc_t *a, int kind, apr_int64_t account, apr_int64_t grp,
                    const char *val, apr_int64_t day, apr_int64_t scans,
                    apr_int64_t clicks, apr_int64_t firsts, apr_int64_t rets)
{
    cnt_key k;
    cnt_ent *e;

    memset(&k, 0, sizeof(k));
    k.account = account;
    k.grp = grp;
    k.b = day;
    k.val = val;
    k.kind = kind;
    k.lvl = 1;
    e = acc_cnt_ent(a, a->cnt, &k);
    e->scans += scans;
    e->clicks += clicks;
    e->firsts += firsts;
    e->rets += rets;
}

static void acc_day(qrt_store_agg_acc_t *a, int sign, apr_int64_t account, apr_int64_t t,
                    apr_int64_t q, int g, apr_int64_t scans, apr_int64_t clicks)
{
    day_key k;
    day_ent *e;

    memset(&k, 0, sizeof(k));
    k.account = account;
    k.q = q;
    k.g = g;
    e = acc_entry(a->p, a->day, &k, sizeof(k), sizeof(*e), NULL);
    e->scans += scans;
    e->clicks += clicks;
    if (sign > 0 && t > e->last) {
        e->last = t;
    }
}

static void acc_link(qrt_store_agg_acc_t *a, int sign, apr_int64_t account, apr_int64_t t,
                     apr_int64_t p, int flags, apr_int64_t tracker, const char *browser,
                     const char *country, const char *city)
{
    lnk_key k;
    lnk_ent *e;
    int made;

    memset(&k, 0, sizeof(k));
    k.account = account;
    k.t = t;
    k.p = p;
    k.tracker = tracker;
    k.browser = browser;
    k.country = country;
    k.city = city;
    k.flags = flags;
    e = acc_entry(a->lp, a->lnk, &k, sizeof(k), sizeof(*e), &made);
    a->nlinks += made;
    e->n += sign;
}

static void acc_gap(qrt_store_agg_acc_t *a, int sign, int kind, apr_int64_t account,
                    apr_int64_t t, apr_int64_t p, apr_int64_t grp, const char *val)
{
    gap_key k;
    gap_ent *e;
    int made;

    memset(&k, 0, sizeof(k));
    k.account = account;
    k.t = t;
    k.p = p;
    k.grp = grp;
    k.val = val;
    k.kind = kind;
    e = acc_entry(a->lp, a->gap, &k, sizeof(k), sizeof(*e), &made);
    a->nlinks += made;
    e->n += sign;
}

/* ---- rows in key order ------------------------------------------------------ */

/* A flush writes its rows in their primary key's order, whatever order the hashes keep
 * them in: a rebuild's hundreds of thousands of counter rows then lie in that order in
 * the table (SQLite's rowids of agg_cnt and agg_day, PostgreSQL's heap), so that a
 * range of them is a few pages, not a page a row (on PostgreSQL, the 13,254 counters of
 * 17 days of kind T lay on 5,246 heap pages in hash order, on 177 in key order); and a
 * batch's upserts walk the indexes in one direction. */
typedef int acc_cmp_fn(const void *, const void *);

/* The values of hashes h[0 .. nh) sorted by cmp (which compares two pointers to
 * values), in p; *n of them. */
static void **acc_sorted(apr_pool_t *p, apr_hash_t *const *h, int nh, acc_cmp_fn *cmp,
                         int *n)
{
    apr_hash_index_t *hi;
    void **v;
    int i, k = 0;

    for (i = 0; i < nh; i++) {
        k += (int)apr_hash_count(h[i]);
    }
    v = apr_palloc(p, (apr_size_t)(k > 0 ? k : 1) * sizeof(*v));
    k = 0;
    for (i = 0; i < nh; i++) {
        for (hi = apr_hash_first(p, h[i]); hi; hi = apr_hash_next(hi)) {
            v[k++] = apr_hash_this_val(hi);
        }
    }
    qsort(v, (size_t)k, sizeof(*v), cmp);
    *n = k;
    return v;
}

#define ACC_CMP(x, y) do { if ((x) != (y)) { return (x) < (y) ? -1 : 1; } } while (0)

/* agg_cnt's key: kind, account_id, level, bucket, tracker_id, value. */
static int acc_cnt_cmp(const void *a, const void *b)
{
    const cnt_key *x = &(*(cnt_ent *const *)a)->k, *y = &(*(cnt_ent *const *)b)->k;

    ACC_CMP(x->kind, y->kind);
    ACC_CMP(x->account, y->account);
    ACC_CMP(x->lvl, y->lvl);
    ACC_CMP(x->b, y->b);
    ACC_CMP(x->grp, y->grp);
    return strcmp(x->val, y->val);
}

/* agg_day's key: account_id, quarter_hour, quarters_since_previous. */
static int acc_day_cmp(const void *a, const void *b)
{
    const day_key *x = &(*(day_ent *const *)a)->k, *y = &(*(day_ent *const *)b)->k;

    ACC_CMP(x->account, y->account);
    ACC_CMP(x->q, y->q);
    ACC_CMP(x->g, y->g);
    return 0;
}

/* agg_link's key: account_id, previous_time, visit_time, flags, tracker_id (then
 * browser_country_city_id, the strings'). */
static int acc_lnk_cmp(const void *a, const void *b)
{
    const lnk_key *x = &(*(lnk_ent *const *)a)->k, *y = &(*(lnk_ent *const *)b)->k;
    int c;

    ACC_CMP(x->account, y->account);
    ACC_CMP(x->p, y->p);
    ACC_CMP(x->t, y->t);
    ACC_CMP(x->flags, y->flags);
    ACC_CMP(x->tracker, y->tracker);
    if ((c = strcmp(x->browser, y->browser)) != 0 || (c = strcmp(x->country, y->country)) != 0) {
        return c;
    }
    return strcmp(x->city, y->city);
}

/* agg_gaps's key: kind, account_id, previous_time, visit_time, tracker_id (then value_id,
 * the value's). */
static int acc_gap_cmp(const void *a, const void *b)
{
    const gap_key *x = &(*(gap_ent *const *)a)->k, *y = &(*(gap_ent *const *)b)->k;

    ACC_CMP(x->kind, y->kind);
    ACC_CMP(x->account, y->account);
    ACC_CMP(x->p, y->p);
    ACC_CMP(x->t, y->t);
    ACC_CMP(x->grp, y->grp);
    return strcmp(x->val, y->val);
}

#define RUN_ROWS 256            /* rows written by one run of statements */
#define RUN_ARGS 10             /* the most values of a row */

/* Rows on their way to the database, RUN_ROWS at most at a time: on PostgreSQL one
 * statement a run (qrt_db_exec_rows). No run may upsert one key twice. */
typedef struct {
    qrt_db_t *db;
    apr_pool_t *p;              /* values of the run's rows; cleared after each run */
    const char *label, *types;
    int nargs, n;
    const void *args[RUN_ROWS * RUN_ARGS];
} row_run;

static row_run *run_make(apr_pool_t *p, qrt_db_t *db, const char *label,
                         const char *types)
{
    /* (not zeroed: args are written before they are read, and are 20 KB) */
    row_run *r = apr_palloc(p, sizeof(*r));

    r->db = db;
    r->label = label;
    r->types = types;
    r->nargs = (int)strlen(types);
    r->n = 0;
    apr_pool_create(&r->p, p);
    return r;
}

static apr_status_t run_flush(row_run *r)
{
    apr_status_t rv = qrt_db_exec_rows(r->db, r->p, r->label, r->types, r->args, r->n);

    r->n = 0;
    apr_pool_clear(r->p);
    return rv;
}

/* PostgreSQL: the rows left in two runs in one statement, label (taking first's
 * columns as arrays, then second's): one round trip where run_flush makes two. */
static apr_status_t run_flush_two(row_run *first, row_run *second, const char *label)
{
    const void **cols = apr_palloc(first->p, (apr_size_t)(first->nargs + second->nargs)
                                             * sizeof(*cols));
    apr_status_t rv;
    int c;

    for (c = 0; c < first->nargs; c++) {
        cols[c] = qrt_db_array(first->p, first->types[c], first->args, first->nargs, c,
                               first->n);
    }
    for (c = 0; c < second->nargs; c++) {
        cols[first->nargs + c] = qrt_db_array(first->p, second->types[c], second->args,
                                              second->nargs, c, second->n);
    }
    rv = qrt_db_exec(first->db, first->p, label, NULL, cols);
    first->n = second->n = 0;
    apr_pool_clear(first->p);
    apr_pool_clear(second->p);
    return rv;
}

static apr_status_t run_add(row_run *r, const void **one)
{
    memcpy(r->args + (apr_size_t)r->n * r->nargs, one, r->nargs * sizeof(*one));
    return ++r->n == RUN_ROWS ? run_flush(r) : APR_SUCCESS;
}

/* A small number as a value of the run (it lives until the run is written). */
static const apr_int64_t *run_int(row_run *r, apr_int64_t v)
{
    apr_int64_t *x = apr_palloc(r->p, sizeof(*x));

    *x = v;
    return x;
}

static apr_status_t cnt_run_add(row_run *r, const cnt_ent *e)
{
    const void *one[] = { run_int(r, e->k.kind), &e->k.account, run_int(r, e->k.lvl),
                          &e->k.b, &e->k.grp, e->k.val, &e->scans, &e->clicks,
                          &e->firsts, &e->rets };

    if (!e->scans && !e->clicks && !e->firsts && !e->rets) {
        return APR_SUCCESS;
    }
    return run_add(r, one);
}

/* The days whose sealed aggregates a flush makes stale: (account, day) -> "". */
static void stale_add(apr_pool_t *p, apr_hash_t *days, apr_int64_t account, apr_int64_t day)
{
    apr_int64_t key[2] = { account, day };

    if (!apr_hash_get(days, key, sizeof(key))) {
        apr_hash_set(days, apr_pmemdup(p, key, sizeof(key)), sizeof(key), "");
    }
}

/* Deletes their sealed values, in the flush's transaction: once per day for the
 * accumulator's transaction (nothing seals a day again inside it: sealing takes the
 * store's write lock, which the transaction holds), so the counters' and the links'
 * flushes, and a rebuild's many, do not drop the same day again. */
static apr_status_t stale_drop(qrt_store_agg_acc_t *a, apr_pool_t *p, apr_hash_t *days)
{
    apr_hash_index_t *hi;
    apr_status_t rv = APR_SUCCESS;

    for (hi = apr_hash_first(p, days); hi && rv == APR_SUCCESS; hi = apr_hash_next(hi)) {
        const apr_int64_t *key = apr_hash_this_key(hi);

        if (apr_hash_get(a->stale, key, 2 * sizeof(*key))) {
            continue;
        }
        rv = qrt_store_agg_blob_invalidate(a->db, p, key[0], key[1]);
        if (rv == APR_SUCCESS) {
            apr_hash_set(a->stale, apr_pmemdup(a->p, key, 2 * sizeof(*key)),
                         2 * sizeof(*key), "");
        }
    }
    return rv;
}

/* Writes the counters (each day also into its 16- and 256-day buckets) and days. */
apr_status_t qrt_store_agg_acc_flush_counts(qrt_store_agg_acc_t *a)
{
    apr_pool_t *p;
    apr_hash_t *roll, *stale;
    apr_hash_index_t *hi;
    row_run *run;
    apr_status_t rv = APR_SUCCESS;
    int i, n;

    apr_pool_create(&p, a->p);
    roll = apr_hash_make(p);
    stale = apr_hash_make(p);
    run = run_make(p, a->db, SQL_agg_counter_add, "lllllsllll");
    for (hi = apr_hash_first(p, a->cnt);
         hi && rv == APR_SUCCESS; hi = apr_hash_next(hi)) {
        cnt_ent *e = apr_hash_this_val(hi);

        /* rets alone do not make a day stale: sealed counters leave them out. */
        if (e->scans || e->clicks || e->firsts) {
            stale_add(p, stale, e->k.account, e->k.b);
        }
    }
    for (hi = apr_hash_first(p, a->day); hi; hi = apr_hash_next(hi)) {
        day_ent *e = apr_hash_this_val(hi);

        if (e->scans || e->clicks) {
            stale_add(p, stale, e->k.account,
                      qrt_agg_fdiv(e->k.q, QRT_AGG_DAY / QRT_AGG_QUARTER));
        }
    }
    /* The days' sealed values go before their counters change: a day that gets its
     * first counters here is not one whose values went behind the store's back
     * (qrt_store_agg_blob_invalidate tells those by their counters). */
    rv = stale_drop(a, p, stale);
    for (hi = apr_hash_first(p, a->cnt); hi; hi = apr_hash_next(hi)) {
        cnt_ent *e = apr_hash_this_val(hi);
        int lvl;

        for (lvl = 2; lvl <= QRT_AGG_LEVELS; lvl++) {
            cnt_key k = e->k;
            cnt_ent *r;

            k.lvl = lvl;
            k.b = qrt_agg_bucket(lvl, e->k.b);
            r = acc_cnt_ent(a, roll, &k);
            r->scans += e->scans;
            r->clicks += e->clicks;
            r->firsts += e->firsts;
            r->rets += e->rets;
        }
    }
    {
        apr_hash_t *const both[] = { a->cnt, roll };
        void **v = acc_sorted(p, both, 2, acc_cnt_cmp, &n);

        for (i = 0; i < n && rv == APR_SUCCESS; i++) {
            rv = cnt_run_add(run, v[i]);
        }
    }
    /* PostgreSQL: the last counters go with the days (a commit of scans: one
     * statement for both) */
    if (rv == APR_SUCCESS && !qrt_dialect_remote(a->db->driver)) {
        rv = run_flush(run);
    }
    if (rv == APR_SUCCESS) {
        /* (many rows a statement: an import's days are as many as its visits) */
        void **v = acc_sorted(p, &a->day, 1, acc_day_cmp, &n);
        row_run *days = run_make(p, a->db, SQL_agg_day_add, "llllll");

        for (i = 0; i < n && rv == APR_SUCCESS; i++) {
            day_ent *e = v[i];
            const void *dargs[] = { &e->k.account, &e->k.q, run_int(days, e->k.g), &e->scans,
                                    &e->clicks, &e->last };

            if (e->scans || e->clicks) {
                rv = run_add(days, dargs);
            }
        }
        if (rv == APR_SUCCESS && run->n > 0 && days->n > 0) {
            rv = run_flush_two(run, days, SQL_agg_counter_day_add);
        }
        if (rv == APR_SUCCESS && run->n > 0) {
            rv = run_flush(run);
        }
        if (rv == APR_SUCCESS) {
            rv = run_flush(days);
        }
    }
    apr_hash_clear(a->cnt);
    apr_hash_clear(a->day);
    apr_pool_destroy(p);
    return rv;
}

/* The id of the strings f in a table of names (agg_bcy, schema 12: a link's browser,
 * country and city; agg_vals, schema 13: a gap's value), through the connection's
 * dictionary cache (or the accumulator's own). */
static apr_status_t acc_name(qrt_store_agg_acc_t *a, apr_pool_t *p, int dict,
                             const char *add, const char *get, const char *const *f, int nf,
                             apr_int64_t *id)
{
    const void *args[3] = { NULL, NULL, NULL };
    int i;

    if (!a->db->dict && !a->names) {
        a->names = qrt_dict_cache_make(a->p, 1 << 16, 8 << 20);
    }
    for (i = 0; i < nf && i < 3; i++) {
        args[i] = f[i];
    }
    return qrt_store_dict_id(a->db, p, a->db->dict ? a->db->dict : a->names, dict,
                             qrt_dict_key(p, f, nf), add, get, args, id);
}

typedef struct {
    qrt_dict_cache_t *c;
    apr_pool_t *p;
} acc_names_ctx;

/* A (browser, country, city, id) row of agg_bcy_add_many or agg_bcy_get_many: staged in
 * the cache under the key acc_name looks for. */
static apr_status_t acc_names_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    acc_names_ctx *x = ctx;
    const char *f[3];
    int k;

    for (k = 0; k < 3; k++) {
        f[k] = qrt_store_agg_acc_col(db, row, k);
    }
    qrt_dict_cache_stage(x->c, QRT_DICT_BCY, qrt_dict_key(x->p, f, 3),
                         qrt_db_int(db, row, 3, 0));
    return APR_SUCCESS;
}

/* PostgreSQL: the (browser, country, city) names of the nl links lv that the cache does
 * not know, added in one statement (those added come back with their ids), the others
 * then found in another, where acc_name cost a round trip each (an import of varied
 * visits: some two hundred a batch). acc_name then finds them in the cache. */
static apr_status_t acc_names_many(qrt_store_agg_acc_t *a, apr_pool_t *p, void **lv, int nl)
{
    qrt_dict_cache_t *c = a->db->dict ? a->db->dict : a->names;
    acc_names_ctx ctx = { c, p };
    apr_hash_t *seen = apr_hash_make(p);
    const void **rows = apr_palloc(p, (apr_size_t)(nl > 0 ? nl : 1) * 3 * sizeof(*rows));
    const char **keys = apr_palloc(p, (apr_size_t)(nl > 0 ? nl : 1) * sizeof(*keys));
    apr_status_t rv;
    int i, m = 0, left = 0;

    for (i = 0; i < nl; i++) {
        lnk_ent *e = lv[i];
        const char *f[] = { e->k.browser, e->k.country, e->k.city };
        const char *key;

        if (e->n == 0) {
            continue;
        }
        key = qrt_dict_key(p, f, 3);
        if (qrt_dict_cache_get(c, QRT_DICT_BCY, key)
            || apr_hash_get(seen, key, APR_HASH_KEY_STRING)) {
            continue;
        }
        apr_hash_set(seen, key, APR_HASH_KEY_STRING, "");
        keys[m] = key;
        memcpy(rows + (apr_size_t)m * 3, f, sizeof(f));
        m++;
    }
    if (m == 0) {
        return APR_SUCCESS;
    }
    rv = qrt_db_each_rows(a->db, p, SQL_agg_bcy_add, "sss", rows, m, acc_names_row, &ctx);
    for (i = 0; i < m && rv == APR_SUCCESS; i++) {
        /* there already (or added by another writer meanwhile): found now */
        if (!qrt_dict_cache_get(c, QRT_DICT_BCY, keys[i])) {
            memmove(rows + (apr_size_t)left * 3, rows + (apr_size_t)i * 3, 3 * sizeof(*rows));
            left++;
        }
    }
    if (rv == APR_SUCCESS && left > 0) {
        rv = qrt_db_each_rows(a->db, p, SQL_agg_bcy_get, "sss", rows, left, acc_names_row,
                              &ctx);
    }
    if (rv == APR_SUCCESS) {
        qrt_dict_cache_missed_batch(c, QRT_DICT_BCY, left, m - left);
    }
    return rv;
}

/* Writes the links and gaps (adds or deletes rows) and forgets them. */
apr_status_t qrt_store_agg_acc_flush_links(qrt_store_agg_acc_t *a)
{
    apr_pool_t *p;
    apr_hash_t *stale;
    apr_hash_index_t *hi;
    row_run *links, *gaps;
    void **lv, **gv;
    apr_status_t rv = APR_SUCCESS;
    int i, nl, ng;

    apr_pool_create(&p, a->p);
    stale = apr_hash_make(p);
    for (hi = apr_hash_first(p, a->lnk); hi; hi = apr_hash_next(hi)) {
        lnk_ent *e = apr_hash_this_val(hi);

        if (e->n != 0) {
            stale_add(p, stale, e->k.account, qrt_agg_fdiv(e->k.t, QRT_AGG_DAY));
        }
    }
    for (hi = apr_hash_first(p, a->gap); hi; hi = apr_hash_next(hi)) {
        gap_ent *e = apr_hash_this_val(hi);

        if (e->n != 0) {
            stale_add(p, stale, e->k.account, qrt_agg_fdiv(e->k.t, QRT_AGG_DAY));
        }
    }
    rv = stale_drop(a, p, stale);
    links = run_make(p, a->db, SQL_agg_link_add, "lllllll");
    gaps = run_make(p, a->db, SQL_agg_gap_add, "lllllll");
    lv = acc_sorted(p, &a->lnk, 1, acc_lnk_cmp, &nl);
    gv = acc_sorted(p, &a->gap, 1, acc_gap_cmp, &ng);
    if (rv == APR_SUCCESS && nl > 1 && qrt_dialect_remote(a->db->driver)) {
        if (!a->db->dict && !a->names) {
            a->names = qrt_dict_cache_make(a->p, 1 << 16, 8 << 20);
        }
        rv = acc_names_many(a, p, lv, nl);
    }
    for (i = 0; i < nl && rv == APR_SUCCESS; i++) {
        lnk_ent *e = lv[i];
        const char *f[] = { e->k.browser, e->k.country, e->k.city };
        const void *args[] = { &e->k.account, &e->k.t, &e->k.p, run_int(links, e->k.flags),
                               &e->k.tracker, &e->bcy, &e->n };

        if (e->n != 0) {
            rv = acc_name(a, p, QRT_DICT_BCY, SQL_agg_bcy_add, SQL_agg_bcy_get, f, 3,
                          &e->bcy);
            if (rv == APR_SUCCESS) {
                rv = run_add(links, args);
            }
        }
    }
    if (rv == APR_SUCCESS) {
        rv = run_flush(links);
    }
    for (hi = apr_hash_first(p, a->lnk);
         hi && rv == APR_SUCCESS; hi = apr_hash_next(hi)) {
        lnk_ent *e = apr_hash_this_val(hi);
        apr_int64_t flags = e->k.flags;
        const void *args[] = { &e->k.account, &e->k.t, &e->k.p, &flags, &e->k.tracker,
                               &e->bcy };

        if (e->n < 0) {
            /* Links taken away: a row that counts none any more goes. */
            rv = qrt_db_exec(a->db, p, SQL_agg_link_drop, NULL, args);
        }
    }
    for (i = 0; i < ng && rv == APR_SUCCESS; i++) {
        gap_ent *e = gv[i];
        const char *f[] = { e->k.val };
        const void *args[] = { run_int(gaps, e->k.kind), &e->k.account, &e->k.t, &e->k.p,
                               &e->k.grp, &e->vid, &e->n };

        if (e->n != 0) {
            rv = acc_name(a, p, QRT_DICT_VAL, SQL_agg_val_add, SQL_agg_val_get, f, 1,
                          &e->vid);
            if (rv == APR_SUCCESS) {
                rv = run_add(gaps, args);
            }
        }
    }
    if (rv == APR_SUCCESS) {
        rv = run_flush(gaps);
    }
    for (hi = apr_hash_first(p, a->gap);
         hi && rv == APR_SUCCESS; hi = apr_hash_next(hi)) {
        gap_ent *e = apr_hash_this_val(hi);
        apr_int64_t kind = e->k.kind;
        const void *args[] = { &kind, &e->k.account, &e->k.t, &e->k.p, &e->k.grp, &e->vid };

        if (e->n < 0) {
            /* Gaps taken away: a row that counts none any more goes. */
            rv = qrt_db_exec(a->db, p, SQL_agg_gap_drop, NULL, args);
        }
    }
    apr_pool_destroy(p);
    apr_pool_clear(a->lp);
    a->lnk = qrt_hash_make(a->lp);
    a->gap = qrt_hash_make(a->lp);
    a->nlinks = 0;
    return rv;
}

/* ---- what one visit adds to the aggregates ------------------------------- */

static void emit_group(qrt_store_agg_acc_t *a, int sign, int kind, apr_int64_t account,
                       apr_int64_t grp, const char *val, apr_int64_t day, int click,
                       const qrt_store_agg_prev_t *pv)
{
    acc_cnt(a, kind, account, grp, val, day, sign * !click, sign * click,
            sign * !pv->has, 0);
    if (pv->has) {
        acc_cnt(a, kind, account, grp, val, qrt_agg_fdiv(pv->t, QRT_AGG_DAY), 0, 0, 0,
                sign);
    }
}

/* Adds (sign 1) or takes away (sign -1) the contribution of visit x, whose previous
 * visits in its groups are pv, to the aggregates of the account. */
void qrt_store_agg_acc_emit(qrt_store_agg_acc_t *a, int sign, apr_int64_t account,
                            const qrt_agg_visit_t *x, const qrt_store_agg_prevs_t *pv)
{
    apr_int64_t day = qrt_agg_fdiv(x->t, QRT_AGG_DAY), q;
    const char *br = qrt_store_agg_acc_intern(a, x->browser);
    const char *co = qrt_store_agg_acc_intern(a, x->country);
    const char *ci = qrt_store_agg_acc_intern(a, x->city);
    const char *empty = qrt_store_agg_acc_intern(a, "");
    int j, g;

    emit_group(a, sign, QRT_AGG_T, account, x->tracker, empty, day, x->click, &pv->tr);
    emit_group(a, sign, QRT_AGG_A, account, 0, empty, day, x->click, &pv->a);
    emit_group(a, sign, QRT_AGG_B, account, 0, br, day, x->click, &pv->br);
    emit_group(a, sign, QRT_AGG_C, account, 0, co, day, x->click, &pv->co);
    emit_group(a, sign, QRT_AGG_Y, account, 0, ci, day, x->click, &pv->ci);
    for (j = 0; j < x->ntags; j++) {
        emit_group(a, sign, QRT_AGG_G, account, 0, qrt_store_agg_acc_intern(a, x->tags[j]),
                   day, x->click, &pv->tag[j]);
    }
    q = qrt_agg_fdiv(x->t, QRT_AGG_QUARTER);
    g = QRT_AGG_QDAY;
    if (pv->a.has) {
        int flags = (pv->tr.has && pv->tr.same ? QRT_AGG_F_T : 0)
                    | (pv->br.has && pv->br.same ? QRT_AGG_F_B : 0)
                    | (pv->co.has && pv->co.same ? QRT_AGG_F_C : 0)
                    | (pv->ci.has && pv->ci.same ? QRT_AGG_F_Y : 0)
                    | (pv->fg ? QRT_AGG_F_G : 0);
        apr_int64_t gap = q - qrt_agg_fdiv(pv->a.t, QRT_AGG_QUARTER);

        acc_link(a, sign, account, x->t, pv->a.t, flags, x->tracker, br, co, ci);
        if (pv->tr.has && !pv->tr.same) {
            acc_gap(a, sign, QRT_AGG_T, account, x->t, pv->tr.t, x->tracker, empty);
        }
        if (pv->br.has && !pv->br.same) {
            acc_gap(a, sign, QRT_AGG_B, account, x->t, pv->br.t, 0, br);
        }
        if (pv->co.has && !pv->co.same) {
            acc_gap(a, sign, QRT_AGG_C, account, x->t, pv->co.t, 0, co);
        }
        if (pv->ci.has && !pv->ci.same) {
            acc_gap(a, sign, QRT_AGG_Y, account, x->t, pv->ci.t, 0, ci);
        }
        for (j = 0; j < x->ntags && !pv->fg; j++) {
            if (pv->tag[j].has) {
                acc_gap(a, sign, QRT_AGG_G, account, x->t, pv->tag[j].t, 0,
                        qrt_store_agg_acc_intern(a, x->tags[j]));
            }
        }
        g = gap < QRT_AGG_QDAY ? (int)gap : QRT_AGG_QDAY;
    }
    acc_day(a, sign, account, x->t, q, g, sign * !x->click, sign * x->click);
}

static void agg_prev_of(qrt_store_agg_prev_t *o, const qrt_agg_visit_t *v, int idx, int a)
{
    o->has = idx >= 0;
    o->same = idx >= 0 && idx == a;
    o->t = idx >= 0 ? v[idx].t : 0;
}

/* Adds or takes away the contributions of a visitor's visits in an account
 * (sorted by time, then id) from v[from] on. */
void qrt_store_agg_acc_emit_list(qrt_store_agg_acc_t *a, apr_pool_t *p, int sign,
                                 apr_int64_t account, const qrt_agg_visit_t *v, int n,
                                 int from)
{
    qrt_agg_prev_t *ch = apr_palloc(p, (n > 0 ? n : 1) * sizeof(*ch));
    int i, j;

    qrt_agg_chain(p, v, n, ch);
    for (i = from; i < n; i++) {
        qrt_store_agg_prevs_t pv;

        agg_prev_of(&pv.a, v, ch[i].a, ch[i].a);
        agg_prev_of(&pv.tr, v, ch[i].tr, ch[i].a);
        agg_prev_of(&pv.br, v, ch[i].br, ch[i].a);
        agg_prev_of(&pv.co, v, ch[i].co, ch[i].a);
        agg_prev_of(&pv.ci, v, ch[i].ci, ch[i].a);
        pv.tag = apr_palloc(p, (v[i].ntags > 0 ? v[i].ntags : 1)
                               * sizeof(qrt_store_agg_prev_t));
        for (j = 0; j < v[i].ntags; j++) {
            agg_prev_of(&pv.tag[j], v, ch[i].tag[j], ch[i].a);
        }
        pv.fg = ch[i].a >= 0 && ch[i].fg;
        qrt_store_agg_acc_emit(a, sign, account, &v[i], &pv);
    }
}
