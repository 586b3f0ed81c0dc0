/* Unit tests for qrt_report: every report type, the crosstab and the dashboard's
 * KPIs from the engine, against a plain oracle computed here from the same visits,
 * on a real SQLite database written through the store (trackers, tags, visits
 * recorded out of time order, so that the aggregates are kept as in production).
 * Windows with partial days and offsets (whole hours, +0530, -0700 and +0007, which
 * no aggregate aligns with), listed trackers (a few: grouped by the database; more
 * than QRT_AGG_RAW_IDS: counted here), trackers deleted (repaired in place, and
 * stale: deleted behind the aggregates' back), retagged, bots and unique visitors.
 * Each check runs five times: in whatever state the sealed aggregates are (days
 * sealed by an earlier check and made stale by later visits), with every settled
 * day sealed, with none, with the sealed values deleted behind the store's back, and
 * sealed again after that (qrt_store_agg_blob.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>
#include <apr_dbd.h>

#include "qrt_date.h"
#include "qrt_report.h"
#include "qrt_store_agg_write.h"
#include "qrt_schema.h"
#include "qrt_store.h"
#include "qrt_store_agg_rebuild.h"
#include "qrt_store_agg_blob.h"
#include "qrt_store_agg_read.h"
#include "qrt_aggcache.h"
#include "qrt_strid.h"
#include "qrt_check.h"
#include "qrt_check_db.h"

#define T0 APR_INT64_C(1773100800)          /* 2026-03-10T00:00:00+0000 */
#define DAY APR_INT64_C(86400)
#define MAXTR 160
#define MAXV 2400

typedef struct {
    apr_int64_t id;
    const char *name, *type;
    const char *tags[QRT_TAGS_MAX];
    int ntags;
    int deleted;
} ref_tracker;

typedef struct {
    int tr;                         /* index into trackers */
    apr_int64_t t;
    int click, bot;
    const char *browser, *country, *city;   /* NULL: unknown */
    const char *dest;                       /* where it went (schema 25), NULL: nowhere */
    const char *visitor;
} ref_visit;

static apr_pool_t *pool;
static qrt_db_t db;
static const char *dir;
static ref_tracker trackers[MAXTR];
static int ntr;
static ref_visit visits[MAXV];
static int nv;
static unsigned int seed;
static apr_int64_t shift;           /* add_visits' visits: T0 + shift and the 20 days after */

static unsigned int rnd(void)
{
    seed = seed * 1103515245 + 12345;
    return (seed >> 8) & 0xffffff;
}

static void exec_sql(const char *sql)
{
    qrt_check_db_exec(&db, sql);
}

static apr_int64_t sql_int(const char *sql)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    const char *v;

    ck_assert_msg(apr_dbd_select(db.driver, pool, db.handle, &res, sql, 0) == 0, "%s: %s",
                  sql, apr_dbd_error(db.driver, db.handle, 1));
    ck_assert_int_eq(apr_dbd_get_row(db.driver, pool, res, &row, -1), 0);
    v = apr_dbd_get_entry(db.driver, row, 0);
    ck_assert_ptr_nonnull(v);
    return apr_atoi64(v);
}

static int tag_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A tracker of account 1 through the store; tags: NULL-terminated. */
static int add_tracker(const char *name, const char *type, const char *const *tags)
{
    ref_tracker *r = &trackers[ntr];
    qrt_tracker_t t;
    int i;

    memset(&t, 0, sizeof(t));
    t.account_id = 1;
    t.code = apr_psprintf(pool, "c%05d", ntr);
    t.name = name;
    t.type = type;
    t.redirect_url = "https://e.example/";
    t.tags = apr_array_make(pool, 4, sizeof(const char *));
    r->name = name;
    r->type = type;
    r->ntags = 0;
    for (i = 0; tags && tags[i]; i++) {
        APR_ARRAY_PUSH(t.tags, const char *) = tags[i];
        r->tags[r->ntags++] = tags[i];
    }
    qsort(t.tags->elts, t.tags->nelts, sizeof(const char *), tag_cmp);
    ck_assert_int_eq(qrt_store_tracker_add(&db, pool, &t), APR_SUCCESS);
    r->id = t.id;
    return ntr++;
}

static void retag(int tr, const char *const *tags)
{
    ref_tracker *r = &trackers[tr];
    qrt_tracker_t t;
    int i;

    ck_assert_int_eq(qrt_store_tracker_get(&db, pool, r->id, &t), APR_SUCCESS);
    t.tags = apr_array_make(pool, 4, sizeof(const char *));
    r->ntags = 0;
    for (i = 0; tags[i]; i++) {
        APR_ARRAY_PUSH(t.tags, const char *) = tags[i];
        r->tags[r->ntags++] = tags[i];
    }
    qsort(t.tags->elts, t.tags->nelts, sizeof(const char *), tag_cmp);
    ck_assert_int_eq(qrt_store_tracker_update(&db, pool, &t), APR_SUCCESS);
}

static const char *pick(const char *const *vals, int n)
{
    return vals[rnd() % n];
}

/* n visits of the trackers [from, to) over 20 days, recorded in batches out of time
 * order. */
/* The day (from T0) of every visit add_visits adds, or -1: any of 20 days. */
static int one_day = -1;
/* add_visits' visits of many strings (1): 150 user agents of as many browsers, 30
 * countries, 200 cities, where its usual ones are a few. */
static int many_strings;

static void add_visits(int n, int from, int to)
{
    static const char *const browsers[] = { "Chrome", "Firefox", "Safari", "", NULL };
    static const char *const countries[] = { "DE", "FR", "IN", NULL };
    static const char *const cities[] = { "Berlin", "Paris", "Pune", "", NULL };
    static const char *const dests[] = { "https://d.example/a", "https://d.example/b?x=1",
                                         NULL };
    qrt_visit_t *batch = apr_pcalloc(pool, n * sizeof(*batch));
    int i, k = 0;

    ck_assert_int_le(nv + n, MAXV);
    for (i = 0; i < n; i++) {
        ref_visit *v = &visits[nv + i];
        qrt_visit_t *x = &batch[i];
        int who = rnd() % 40;

        v->tr = from + rnd() % (to - from);
        v->t = T0 + shift + rnd() % (20 * DAY);
        if (i % 7 == 0) {
            v->t = T0 + shift + (rnd() % 20) * DAY; /* midnights: edges of days */
        }
        if (one_day >= 0) {
            v->t = T0 + shift + one_day * DAY + (i % 7 ? rnd() % DAY : 0);
        }
        v->click = rnd() % 5 == 0;
        v->bot = rnd() % 19 == 0;
        v->browser = pick(browsers, 5);
        v->country = pick(countries, 4);
        v->city = pick(cities, 5);
        if (many_strings) {
            v->browser = apr_psprintf(pool, "Browser %u", rnd() % 150);
            v->country = apr_psprintf(pool, "C%u", rnd() % 30);
            v->city = apr_psprintf(pool, "City %u", rnd() % 200);
        }
        v->dest = pick(dests, 3);
        v->visitor = apr_psprintf(pool, "%016x", who);
        x->tracker_id = trackers[v->tr].id;
        x->visit_start = v->t;
        x->source = v->click ? "click" : "scan";
        x->ip = apr_psprintf(pool, "198.51.100.%d", who);
        x->country = v->country;
        x->city = v->city;
        x->destination = v->dest;
        x->browser = v->browser;
        x->user_agent = many_strings ? apr_psprintf(pool, "UA of %s", v->browser) : "UA";
        x->device = "mobile";
        x->bot = v->bot;
        x->visitor = who;
    }
    /* Batches of up to 50, each shuffled. */
    while (k < n) {
        int m = n - k < 50 ? n - k : 50;

        for (i = m - 1; i > 0; i--) {
            int j = rnd() % (i + 1);
            qrt_visit_t tmp = batch[k + i];

            batch[k + i] = batch[k + j];
            batch[k + j] = tmp;
        }
        exec_sql("BEGIN");
        ck_assert_int_eq(qrt_store_visits_record(&db, pool, batch + k, m), APR_SUCCESS);
        exec_sql("COMMIT");
        k += m;
    }
    nv += n;
}

/* Every scope goes through a cache kept for the whole test, as a server's child keeps
 * one: a change made between two reports (through the store or by hand) must reach
 * the second (the trackers version, schema 18). */
static qrt_report_cache_t *cache;

static void setup(void)
{
    static const char *const a[] = { "campaign:spring", "region:eu", NULL };
    static const char *const b[] = { "campaign:spring", "region:us", "vip", NULL };
    static const char *const c[] = { "campaign:fall", "region:eu", "region:us", NULL };
    static const char *const d[] = { "campaign:fall", NULL };
    apr_pool_create(&pool, NULL);
    dir = qrt_check_db_temp(pool, "report", &db);
    cache = qrt_report_cache_make(pool, 4, 100000);
    exec_sql("INSERT INTO accounts (name, plan, created_at) VALUES ('a', 'professional', 0)");
    exec_sql("INSERT INTO accounts (name, plan, created_at) VALUES ('b', 'professional', 0)");
    ntr = nv = 0;
    seed = 4242;
    shift = 0;
    add_tracker("alpha", "website", a);
    add_tracker("bravo", "website", b);
    add_tracker("charlie", "website", c);
    add_tracker("delta", "website", d);
    add_tracker("echo", "website", NULL);
    add_visits(500, 0, 5);
    /* A tracker of another account, with visits: never counted. */
    exec_sql("INSERT INTO trackers (account_id, code, name, type, redirect_url, created_at, "
             "updated_at) VALUES (2, 'other1', 'other', 'website', 'https://e.example/', 0, 0)");
    {
        qrt_visit_t x;

        memset(&x, 0, sizeof(x));
        x.tracker_id = trackers[ntr - 1].id + 1;
        x.visit_start = T0 + 5;
        x.source = "scan";
        x.ip = "203.0.113.0";
        x.user_agent = "UA";
        x.device = "mobile";
        x.visitor = 0xff;
        exec_sql("BEGIN");
        ck_assert_int_eq(qrt_store_visits_record(&db, pool, &x, 1), APR_SUCCESS);
        exec_sql("COMMIT");
    }
}

static void teardown(void)
{
    qrt_check_db_remove(pool, &db, dir);
    apr_pool_destroy(pool);
}

/* ---- the oracle ---------------------------------------------------------------- */

typedef struct {
    const char *key;
    apr_int64_t id, scans, clicks;
    apr_hash_t *seen;
} ref_group;

static ref_group *ref_get(apr_hash_t *h, const char *key, apr_int64_t id)
{
    ref_group *g = apr_hash_get(h, key, APR_HASH_KEY_STRING);

    if (!g) {
        g = apr_pcalloc(pool, sizeof(*g));
        g->key = apr_pstrdup(pool, key);
        g->id = id;
        g->seen = apr_hash_make(pool);
        apr_hash_set(h, g->key, APR_HASH_KEY_STRING, g);
    }
    return g;
}

static void ref_count(ref_group *g, const ref_visit *v)
{
    if (v->click) {
        g->clicks++;
    }
    else {
        g->scans++;
    }
    apr_hash_set(g->seen, v->visitor, APR_HASH_KEY_STRING, "");
}

static int ref_type;

static int ref_cmp(const void *a, const void *b)
{
    const ref_group *x = *(ref_group *const *)a, *y = *(ref_group *const *)b;
    apr_int64_t vx = x->scans + x->clicks, vy = y->scans + y->clicks;

    if (ref_type == QRT_REPORT_DATE) {
        return x->id < y->id ? -1 : x->id > y->id;
    }
    if (vx != vy) {
        return vx > vy ? -1 : 1;
    }
    if (ref_type == QRT_REPORT_NAME) {
        return x->id < y->id ? -1 : x->id > y->id;
    }
    if (!*x->key != !*y->key) {
        return *x->key ? -1 : 1;
    }
    return strcmp(x->key, y->key);
}

static int covers(const int *cov, int ncov, int tr)
{
    int i;

    if (!cov) {
        return !trackers[tr].deleted;
    }
    for (i = 0; i < ncov; i++) {
        if (cov[i] == tr) {
            return 1;
        }
    }
    return 0;
}

static const char *nz(const char *s)
{
    return s ? s : "";
}

/* The expected rows, one line each: key scans clicks uniques. */
static const char *ref_rows(int type, const int *cov, int ncov, apr_int64_t s,
                            apr_int64_t e, int offset)
{
    apr_hash_t *h = apr_hash_make(pool);
    apr_array_header_t *list = apr_array_make(pool, 16, sizeof(ref_group *));
    apr_hash_index_t *hi;
    const char *out = "";
    int i, j;

    for (i = 0; i < ntr; i++) {
        ref_tracker *t = &trackers[i];

        if (!covers(cov, ncov, i)) {
            continue;
        }
        if (type == QRT_REPORT_NAME) {
            ref_get(h, apr_psprintf(pool, "%" APR_INT64_T_FMT ":%s", t->id, t->name), t->id);
        }
        else if (type == QRT_REPORT_TYPE) {
            ref_get(h, t->type, 0);
        }
        else if (type == QRT_REPORT_TAG) {
            for (j = 0; j < t->ntags; j++) {
                ref_get(h, t->tags[j], 0);
            }
        }
    }
    for (i = 0; i < nv; i++) {
        const ref_visit *v = &visits[i];
        const ref_tracker *t = &trackers[v->tr];
        apr_int64_t day;

        if (v->bot || v->t < s || v->t > e || !covers(cov, ncov, v->tr)) {
            continue;
        }
        switch (type) {
        case QRT_REPORT_NAME:
            ref_count(ref_get(h, apr_psprintf(pool, "%" APR_INT64_T_FMT ":%s", t->id,
                                              t->name), t->id), v);
            break;
        case QRT_REPORT_TYPE:
            ref_count(ref_get(h, t->type, 0), v);
            break;
        case QRT_REPORT_TAG:
            for (j = 0; j < t->ntags; j++) {
                ref_count(ref_get(h, t->tags[j], 0), v);
            }
            break;
        case QRT_REPORT_DATE:
            day = qrt_agg_fdiv(v->t + offset, DAY);
            ref_count(ref_get(h, apr_psprintf(pool, "%" APR_INT64_T_FMT, day), day), v);
            break;
        case QRT_REPORT_BROWSER:
            ref_count(ref_get(h, nz(v->browser), 0), v);
            break;
        case QRT_REPORT_CITY:
            ref_count(ref_get(h, nz(v->city), 0), v);
            break;
        case QRT_REPORT_DESTINATION:
            ref_count(ref_get(h, nz(v->dest), 0), v);
            break;
        default:
            ref_count(ref_get(h, nz(v->country), 0), v);
            break;
        }
    }
    for (hi = apr_hash_first(pool, h); hi; hi = apr_hash_next(hi)) {
        APR_ARRAY_PUSH(list, ref_group *) = apr_hash_this_val(hi);
    }
    ref_type = type;
    qsort(list->elts, list->nelts, sizeof(ref_group *), ref_cmp);
    for (i = 0; i < list->nelts; i++) {
        ref_group *g = APR_ARRAY_IDX(list, i, ref_group *);

        out = apr_psprintf(pool, "%s[%s] %" APR_INT64_T_FMT " %" APR_INT64_T_FMT " %u\n",
                           out, g->key, g->scans, g->clicks, apr_hash_count(g->seen));
    }
    return out;
}

/* The engine's scope over the trackers cov (all live ones when NULL: listed, or with no
 * list when all is set). */
static qrt_report_scope_t *scope(const int *cov, int ncov, int all)
{
    apr_array_header_t *ids = apr_array_make(pool, 8, sizeof(apr_int64_t));
    qrt_report_scope_t *sc;
    int i;

    for (i = 0; i < ntr; i++) {
        if (covers(cov, ncov, i)) {
            APR_ARRAY_PUSH(ids, apr_int64_t) = trackers[i].id;
        }
    }
    ck_assert_int_eq(qrt_report_scope(&db, pool, 1, all ? NULL : ids, cache, &sc),
                     APR_SUCCESS);
    return sc;
}

static const char *engine_rows_of(int type, const int *cov, int ncov, apr_int64_t s,
                                  apr_int64_t e, int offset, int all);

/* The rows of the engine; over all live trackers, the same whether they are listed or
 * not. */
static const char *engine_rows(int type, const int *cov, int ncov, apr_int64_t s,
                               apr_int64_t e, int offset)
{
    const char *out = engine_rows_of(type, cov, ncov, s, e, offset, 0);

    if (!cov) {
        ck_assert_str_eq(engine_rows_of(type, cov, ncov, s, e, offset, 1), out);
    }
    return out;
}

static const char *engine_rows_of(int type, const int *cov, int ncov, apr_int64_t s,
                                  apr_int64_t e, int offset, int all)
{
    qrt_report_scope_t *sc = scope(cov, ncov, all);
    apr_array_header_t *rows;
    const char *out = "";
    int i;

    ck_assert_int_eq(qrt_report_rows(sc, type, s, e, offset, &rows), APR_SUCCESS);
    for (i = 0; i < rows->nelts; i++) {
        qrt_report_row_t *r = &APR_ARRAY_IDX(rows, i, qrt_report_row_t);
        const char *key = type == QRT_REPORT_NAME
                          ? apr_psprintf(pool, "%" APR_INT64_T_FMT ":%s", r->id, r->key)
                          : type == QRT_REPORT_DATE
                          ? apr_psprintf(pool, "%" APR_INT64_T_FMT, r->id) : r->key;

        out = apr_psprintf(pool, "%s[%s] %" APR_INT64_T_FMT " %" APR_INT64_T_FMT " %"
                           APR_INT64_T_FMT "\n", out, key, r->scans, r->clicks, r->uniques);
    }
    return out;
}

static void check_all1(const int *cov, int ncov, const char *what);

/* Invalidates (as a write into it would) every day with a links value. */
static void invalidate_sealed_days(void)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_array_header_t *days = apr_array_make(pool, 64, 2 * sizeof(apr_int64_t));
    int i;

    ck_assert_int_eq(apr_dbd_select(db.driver, pool, db.handle, &res,
                                    "SELECT account_id, bucket FROM agg_blob "
                                    "WHERE level = 1 AND kind = 10", 0), 0);
    while (apr_dbd_get_row(db.driver, pool, res, &row, -1) == 0) {
        apr_int64_t *d = apr_array_push(days);

        d[0] = apr_atoi64(apr_dbd_get_entry(db.driver, row, 0));
        d[1] = apr_atoi64(apr_dbd_get_entry(db.driver, row, 1));
    }
    ck_assert_int_gt(days->nelts, 0);
    exec_sql("BEGIN");
    for (i = 0; i < days->nelts; i++) {
        apr_int64_t *d = (apr_int64_t *)days->elts + 2 * i;

        ck_assert_int_eq(qrt_store_agg_blob_invalidate(&db, pool, d[0], d[1]), APR_SUCCESS);
    }
    exec_sql("COMMIT");
}

/* Sealing: 0 leaves the state as it is, 1 seals every settled day, 2 drops them all,
 * 3 seals them and deletes the sealed values behind the store's back (SQL by hand:
 * SQLite reads those days' links along all the rows, schema 17), 4 then lists them
 * again and seals them (qrtrack-admin aggregates seal), 5 seals them, damages their
 * links values (cut in half) and then drops them as a write into each day would:
 * the days' rows are read by time again all the same (along all the account's rows,
 * since the value cannot be read). */
#define SEAL_STATES 6
static void seal(int how)
{
    int sealed = 0, more = 1, total = 0;

    if (how == 5) {
        seal(1);
        exec_sql("UPDATE agg_blob SET data = substr(data, 1, length(data) / 2) "
                 "WHERE kind = 10");
        invalidate_sealed_days();
    }
    else if (how == 3) {
        seal(1);
        exec_sql("DELETE FROM agg_blob");
    }
    else if (how == 4) {
        ck_assert_int_eq(qrt_store_agg_blob_relist(&db, pool), APR_SUCCESS);
        seal(1);
    }
    else if (how == 1) {
        while (more) {
            ck_assert_int_eq(qrt_store_agg_blob_seal(&db, pool, apr_time_sec(apr_time_now()),
                                                     50, &sealed, &more, NULL),
                             APR_SUCCESS);
            total += sealed;
        }
        (void)total;
    }
    else if (how == 2) {
        ck_assert_int_eq(qrt_store_agg_blob_clear(&db, pool), APR_SUCCESS);
    }
}

static const char *const seal_names[] = { "as it was", "sealed", "unsealed",
                                           "deleted by hand", "sealed again",
                                           "damaged, then written into" };

/* Every report type over the windows: open, whole days, partial days in offsets. */
static void check_all(const int *cov, int ncov, const char *what)
{
    int how;

    for (how = 0; how < SEAL_STATES; how++) {
        seal(how);
        check_all1(cov, ncov, apr_psprintf(pool, "%s (%s)", what, seal_names[how]));
    }
    seal(1);
}

static void check_all1(const int *cov, int ncov, const char *what)
{
    static const struct {
        apr_int64_t s, e;
        int offset;
    } w[] = {
        { QRT_AGG_TMIN, QRT_AGG_TMAX, 0 },
        { T0 + DAY, T0 + 5 * DAY - 1, 0 },
        { T0 + DAY, T0 + 5 * DAY, 3600 },
        { T0 + 3 * DAY + 34200 - 19800, T0 + 10 * DAY + 7, 19800 },     /* +0530 */
        { T0 + 2 * DAY + 25200 + 1, T0 + 17 * DAY + 25200 - 1, -25200 }, /* -0700 */
        { T0 + 1234, T0 + 19 * DAY + 4321, 420 },                         /* +0007 */
        { T0 + 4 * DAY + 1, QRT_AGG_TMAX, 0 },
        { QRT_AGG_TMIN, T0 + 6 * DAY - 1, -3600 },
        { T0 + 30 * DAY, T0 + 40 * DAY, 0 },                             /* empty */
        { T0 + 20 * DAY + 43200, QRT_AGG_TMAX, 0 },     /* from the middle of day 20 */
    };
    int type, i;

    for (type = 0; type < QRT_REPORT_NTYPES; type++) {
        for (i = 0; i < (int)(sizeof(w) / sizeof(w[0])); i++) {
            const char *want = ref_rows(type, cov, ncov, w[i].s, w[i].e, w[i].offset);
            const char *got = engine_rows(type, cov, ncov, w[i].s, w[i].e, w[i].offset);

            ck_assert_msg(!strcmp(want, got), "%s, report %s, window %d:\nwant\n%sgot\n%s",
                          what, qrt_report_type_name(type), i, want, got);
        }
    }
}

/* ---- tests ---------------------------------------------------------------------- */

START_TEST(type_names)
{
    int type;

    for (type = 0; type < QRT_REPORT_NTYPES; type++) {
        ck_assert_int_eq(qrt_report_type_parse(qrt_report_type_name(type)), type);
    }
    ck_assert_ptr_null(qrt_report_type_name(QRT_REPORT_NTYPES));
    ck_assert_int_eq(qrt_report_type_parse("NAME"), -1);
    ck_assert_int_eq(qrt_report_type_parse(""), -1);
    ck_assert_int_eq(qrt_report_type_parse(NULL), -1);
}
END_TEST

START_TEST(whole_account)
{
    qrt_report_scope_t *sc = scope(NULL, 0, 0), *none = scope(NULL, 0, 1);
    int i;

    ck_assert_int_eq(sc->agg_ok, 1);
    ck_assert_int_eq(sc->list->nelts, 5);
    /* with no list: the same trackers, in the same order, every one covered */
    ck_assert_int_eq(none->agg_ok, 1);
    ck_assert_int_eq(none->everything, 1);
    ck_assert_int_eq(none->list->nelts, 5);
    for (i = 0; i < 5; i++) {
        qrt_report_tracker_t *t = APR_ARRAY_IDX(none->list, i, qrt_report_tracker_t *);

        ck_assert_int_eq(t->id, APR_ARRAY_IDX(sc->list, i, qrt_report_tracker_t *)->id);
        ck_assert_ptr_nonnull(apr_hash_get(none->covered, &t->id, sizeof(t->id)));
    }
    check_all(NULL, 0, "whole account");
}
END_TEST

START_TEST(listed_trackers)
{
    static const int one[] = { 1 }, two[] = { 0, 2 }, four[] = { 0, 1, 2, 3 };
    qrt_report_scope_t *sc = scope(two, 2, 0);

    ck_assert_int_eq(sc->everything, 0);
    ck_assert_int_eq(sc->agg_ok, 0);
    check_all(one, 1, "one tracker");
    check_all(two, 2, "two trackers");
    check_all(four, 4, "four trackers");
}
END_TEST

/* report=destination over listed trackers reads the visits with a destination alone and
 * takes the rest from the trackers' other reads; past its bound of them, every visit. */
START_TEST(listed_destinations)
{
    static const int two[] = { 0, 2 }, four[] = { 0, 1, 2, 3 };
    static const apr_int64_t most[] = { 0, 1, 5 };
    int i, k;

    for (k = 0; k < 3; k++) {
        qrt_report_dest_lookups(most[k]);
        for (i = 0; i < 2; i++) {
            qrt_report_scope_t *sc = scope(i ? four : two, i ? 4 : 2, 0);
            apr_array_header_t *rows;

            ck_assert_int_eq(qrt_report_rows(sc, QRT_REPORT_DESTINATION, QRT_AGG_TMIN,
                                             QRT_AGG_TMAX, 0, &rows), APR_SUCCESS);
            ck_assert_int_eq(sc->dest_alone, most[k] == 0);
            ck_assert_int_gt(rows->nelts, 1);
        }
        check_all(two, 2, apr_psprintf(pool, "two trackers, %d destinations' visits alone",
                                       (int)most[k]));
        check_all(four, 4, apr_psprintf(pool, "four trackers, %d destinations' visits alone",
                                        (int)most[k]));
    }
    qrt_report_dest_lookups(0);
}
END_TEST

/* A report counts into its scope the visits it counted one by one: none from the
 * aggregates, every visit of a listed window from the kept blocks. */
START_TEST(counted_visits)
{
    static const int two[] = { 0, 2 };
    qrt_report_scope_t *all = scope(NULL, 0, 0), *sc = scope(two, 2, 0);
    apr_array_header_t *rows;
    apr_int64_t visits = 0;
    int i;

    ck_assert_int_eq(qrt_report_rows(all, QRT_REPORT_DATE, QRT_AGG_TMIN, QRT_AGG_TMAX, 0,
                                     &rows), APR_SUCCESS);
    ck_assert_int_gt(rows->nelts, 0);
    ck_assert_int_eq(all->counted, 0);
    ck_assert_int_eq(qrt_report_rows(sc, QRT_REPORT_DATE, QRT_AGG_TMIN, QRT_AGG_TMAX, 0,
                                     &rows), APR_SUCCESS);
    for (i = 0; i < rows->nelts; i++) {
        visits += APR_ARRAY_IDX(rows, i, qrt_report_row_t).scans
                  + APR_ARRAY_IDX(rows, i, qrt_report_row_t).clicks;
    }
    ck_assert_int_gt(visits, 0);
    /* (without kept blocks two trackers are grouped by the database) */
    ck_assert_int_eq(sc->counted, qrt_store_agg_blob_kept() ? visits : 0);
}
END_TEST

/* qrt_report_trim_due: once a mark's worth of counted visits, summed. */
static void *trim_ones(void *data)
{
    int i, *due = data;

    for (i = 0; i < 100000; i++) {
        *due += qrt_report_trim_due(1);
    }
    return NULL;
}

START_TEST(trim_marks)
{
    pthread_t t[4];
    int due[4] = { 0, 0, 0, 0 }, i;

    qrt_report_trim_every(10);
    ck_assert_int_eq(qrt_report_trim_due(0), 0);
    ck_assert_int_eq(qrt_report_trim_due(-5), 0);
    ck_assert_int_eq(qrt_report_trim_due(4), 0);
    ck_assert_int_eq(qrt_report_trim_due(5), 0);
    ck_assert_int_eq(qrt_report_trim_due(1), 1);     /* 10 */
    ck_assert_int_eq(qrt_report_trim_due(9), 0);
    ck_assert_int_eq(qrt_report_trim_due(3), 1);     /* 12: 2 left */
    ck_assert_int_eq(qrt_report_trim_due(7), 0);     /* 9 */
    ck_assert_int_eq(qrt_report_trim_due(25), 1);    /* 34: once, 4 left */
    ck_assert_int_eq(qrt_report_trim_due(5), 0);
    ck_assert_int_eq(qrt_report_trim_due(1), 1);
    /* four threads, 400,000 visits one at a time: 400 marks, none lost nor twice */
    qrt_report_trim_every(1000);
    for (i = 0; i < 4; i++) {
        ck_assert_int_eq(pthread_create(&t[i], NULL, trim_ones, &due[i]), 0);
    }
    for (i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
    }
    ck_assert_int_eq(due[0] + due[1] + due[2] + due[3], 400);
    qrt_report_trim_every(0);
    ck_assert_int_eq(qrt_report_trim_due(QRT_REPORT_TRIM_VISITS - 1), 0);
    ck_assert_int_eq(qrt_report_trim_due(1), 1);
}
END_TEST

/* 70 more trackers with two tags each and 500 visits over them and the fixture's last
 * one: the trackers but the first and the last into cov; returns how many. */
static int add_many_trackers(int *cov)
{
    int i, ncov = 0;

    for (i = 0; i < 70; i++) {
        const char *tags[3] = { apr_psprintf(pool, "campaign:c%d", i % 6),
                                apr_psprintf(pool, "n%d", i % 4), NULL };

        add_tracker(apr_psprintf(pool, "t%02d", i), i % 9 ? "website" : "vcard", tags);
    }
    add_visits(500, 5, ntr);
    for (i = 1; i < ntr - 1; i++) {
        cov[ncov++] = i;
    }
    return ncov;
}

static void check_dashboard(const int *cov, int ncov, apr_int64_t d0, apr_int64_t d1);

/* A list of more trackers than a statement takes reads every live tracker of the
 * account: kept for the next request, as the account's own reports keep them; a short
 * list reads its own only, not kept. */
START_TEST(long_list_scope_kept)
{
    static const int two[] = { 0, 2 };
    int cov[MAXTR], ncov = add_many_trackers(cov), i;
    qrt_report_scope_t *sc, *again;

    ck_assert_int_eq(qrt_report_cache_count(cache), 0);
    sc = scope(two, 2, 0);
    ck_assert_int_eq(sc->list->nelts, 2);
    ck_assert_int_eq(qrt_report_cache_count(cache), 0);
    sc = scope(cov, ncov, 0);
    ck_assert_int_eq(sc->everything, 0);
    ck_assert_int_eq(sc->list->nelts, ncov);
    ck_assert_int_eq(qrt_report_cache_count(cache), 1);
    /* the next one from the cache: the same trackers, the short list's too */
    again = scope(cov, ncov, 0);
    ck_assert_int_eq(again->list->nelts, ncov);
    for (i = 0; i < ncov; i++) {
        ck_assert_int_eq(APR_ARRAY_IDX(again->list, i, qrt_report_tracker_t *)->id,
                         APR_ARRAY_IDX(sc->list, i, qrt_report_tracker_t *)->id);
    }
    ck_assert_int_eq(scope(two, 2, 0)->list->nelts, 2);
    ck_assert_int_eq(scope(two, 2, 0)->nlive, ntr);
    check_all(cov, ncov, "many trackers, their scope kept");
}
END_TEST

/* Listed trackers whose visits name more user agents and places than a request's first
 * table of them holds (64 each): read by their ids, each visit's strings found again. */
START_TEST(listed_many_strings)
{
    static const int two[] = { 1, 3 }, four[] = { 0, 1, 2, 3 };

    shift = 40 * DAY;
    many_strings = 1;
    add_visits(1500, 0, 4);
    many_strings = 0;
    shift = 0;
    check_all(two, 2, "two trackers, many strings");
    check_all(four, 4, "four trackers, many strings");
}
END_TEST

START_TEST(many_listed_trackers)
{
    /* More than QRT_AGG_RAW_IDS listed: the visits are counted by the engine. */
    int cov[MAXTR], ncov = add_many_trackers(cov);

    ck_assert_int_gt(ncov, QRT_AGG_RAW_IDS);
    check_all(cov, ncov, "many trackers");
    check_all(NULL, 0, "whole account, many trackers");
    /* the daily series of more trackers than a statement sums */
    check_dashboard(cov, ncov, T0 / DAY + 2, T0 / DAY + 17);
}
END_TEST

/* The same with the pairs counted from the blocks bounded low: past the bound a report
 * is counted in shares of the visitors (2 to 64 walks of the blocks), past 64 shares a
 * report by tag in halves of its tags (and halves of those), past the bound for a single
 * tag from the visits a tracker at a time; every other one from the visits. */
START_TEST(many_listed_trackers_in_parts)
{
    int cov[MAXTR], ncov = 0, i;
    static const apr_size_t bounds[] = { 2000, 600, 150, 20, 3 };

    for (i = 0; i < 70; i++) {
        const char *tags[4] = { apr_psprintf(pool, "campaign:c%d", i % 6),
                                apr_psprintf(pool, "n%d", i % 4),
                                apr_psprintf(pool, "r%d", i % 3), NULL };

        add_tracker(apr_psprintf(pool, "t%02d", i), i % 9 ? "website" : "vcard", tags);
    }
    add_visits(500, 5, ntr);
    for (i = 1; i < ntr - 1; i++) {
        cov[ncov++] = i;
    }
    for (i = 0; i < (int)(sizeof(bounds) / sizeof(bounds[0])); i++) {
        int type;

        qrt_report_lv_max(bounds[i]);
        check_all(cov, ncov, apr_psprintf(pool, "many trackers, %d pairs at most",
                                          (int)bounds[i]));
        check_all(cov, 5, "five trackers");
        /* counted in shares while 64 of them keep within the bound */
        for (type = QRT_REPORT_DATE; type <= QRT_REPORT_COUNTRY; type++) {
            qrt_report_scope_t *sc = scope(cov, ncov, 0);
            apr_array_header_t *rows;

            apr_size_t visits = 0, one;
            int r;

            ck_assert_int_eq(qrt_report_rows(sc, type, QRT_AGG_TMIN, QRT_AGG_TMAX, 0, &rows),
                             APR_SUCCESS);
            for (r = 0; r < rows->nelts; r++) {
                visits += (apr_size_t)(APR_ARRAY_IDX(rows, r, qrt_report_row_t).scans
                                       + APR_ARRAY_IDX(rows, r, qrt_report_row_t).clicks);
            }
            /* (by browser, country or city, whose visits are spread as added, a walk
             * takes QRT_REPORT_LV_RADIX times as many) */
            one = type == QRT_REPORT_BROWSER || type == QRT_REPORT_CITY
                  || type == QRT_REPORT_COUNTRY ? QRT_REPORT_LV_RADIX * bounds[i] : bounds[i];
            ck_assert_msg(visits <= one ? sc->lv_shares == 1
                          : visits <= bounds[i] * 16 ? sc->lv_shares >= 2
                          : visits > bounds[i] * 128 ? sc->lv_shares == 0 : 1,
                          "report %s, %d visits, %d pairs at most: %d shares",
                          qrt_report_type_name(type), (int)visits, (int)bounds[i],
                          sc->lv_shares);
            if (bounds[i] == 3) {
                ck_assert_uint_gt(visits, bounds[i] * 128);
            }
            if (bounds[i] == 150) {
                ck_assert_uint_gt(visits, bounds[i]);
            }
        }
    }
    qrt_report_lv_max(0);
}
END_TEST

/* A listed read past its bound of visits read through SQL: up to QRT_AGG_RAW_IDS
 * trackers the database counts them, more are read as blocks all the same (their other
 * way, a tracker at a time in strings, costs more); exact either way. */
/* Listed trackers whose days hold 22 visits each: by date, by type and for the whole
 * (the dashboard's count), their runs are held where they are, so a window past the
 * bound is counted in one walk (a group past it in bands of its visitors); by browser,
 * city or country (each visit copied) in shares as before. Exact every way, with a bound
 * small enough for the short runs' copies to pass it too. */
START_TEST(listed_days_held_by_reference)
{
    static const apr_size_t bounds[] = { 300, 40 };
    int cov[MAXTR], ncov = 0, i, b, type;

    for (i = 0; i < 66; i++) {
        add_tracker(apr_psprintf(pool, "d%02d", i), i % 5 ? "website" : "vcard", NULL);
    }
    for (i = 5; i < ntr; i++) {
        one_day = (i - 5) % 20;
        add_visits(22, i, i + 1);
        cov[ncov++] = i;
    }
    one_day = -1;
    ck_assert_int_gt(ncov, QRT_AGG_RAW_IDS);
    for (b = 0; b < 2; b++) {
        qrt_report_lv_max(bounds[b]);
        check_all(cov, ncov, apr_psprintf(pool, "days of 22 visits, %d pairs at most",
                                          (int)bounds[b]));
        check_dashboard(cov, ncov, T0 / DAY, T0 / DAY + 19);
        for (type = QRT_REPORT_TYPE; type <= QRT_REPORT_COUNTRY; type++) {
            qrt_report_scope_t *sc = scope(cov, ncov, 0);
            apr_array_header_t *rows;
            apr_size_t visits = 0, most = 0;
            int r;

            if (type == QRT_REPORT_TAG) {
                continue;
            }
            ck_assert_int_eq(qrt_report_rows(sc, type, QRT_AGG_TMIN, QRT_AGG_TMAX, 0, &rows),
                             APR_SUCCESS);
            for (r = 0; r < rows->nelts; r++) {
                const qrt_report_row_t *x = &APR_ARRAY_IDX(rows, r, qrt_report_row_t);

                visits += (apr_size_t)(x->scans + x->clicks);
                if ((apr_size_t)(x->scans + x->clicks) > most) {
                    most = (apr_size_t)(x->scans + x->clicks);
                }
            }
            ck_assert_uint_gt(visits, 2 * bounds[b]);
            if (b == 0 && (type == QRT_REPORT_DATE || type == QRT_REPORT_TYPE)) {
                ck_assert_int_eq(rows->nelts, type == QRT_REPORT_DATE ? 20 : 2);
                /* (one walk: by type a group past the bound, counted in bands) */
                ck_assert_msg(sc->lv_shares == 1, "report %s, %d visits, groups of up to "
                              "%d, %d pairs at most: %d shares", qrt_report_type_name(type),
                              (int)visits, (int)most, (int)bounds[b], sc->lv_shares);
                ck_assert_uint_gt(most, type == QRT_REPORT_TYPE ? bounds[b] : 0);
            }
            else if (type != QRT_REPORT_DATE && type != QRT_REPORT_TYPE) {
                ck_assert_msg(sc->lv_shares != 1, "report %s, %d visits: %d shares",
                              qrt_report_type_name(type), (int)visits, sc->lv_shares);
            }
        }
    }
    qrt_report_lv_max(0);
}
END_TEST

START_TEST(listed_read_past_its_bound)
{
    int cov[MAXTR], ncov = add_many_trackers(cov), type, pass;

    qrt_store_agg_read_listed_bound(10);
    for (pass = 0; pass < 2; pass++) {
        for (type = QRT_REPORT_DATE; type <= QRT_REPORT_COUNTRY; type++) {
            int few = pass == 0;
            qrt_report_scope_t *sc = scope(cov, few ? 5 : ncov, 0);
            apr_array_header_t *rows;

            ck_assert_int_eq(qrt_report_rows(sc, type, QRT_AGG_TMIN, QRT_AGG_TMAX, 0, &rows),
                             APR_SUCCESS);
            ck_assert_msg(few ? sc->lv_shares == 0 : sc->lv_shares >= 1,
                          "report %s, %d trackers: %d shares", qrt_report_type_name(type),
                          few ? 5 : ncov, sc->lv_shares);
        }
    }
    check_all(cov, ncov, "many trackers past the read bound");
    check_all(cov, 5, "five trackers past the read bound");
    qrt_store_agg_read_listed_bound(0);
}
END_TEST

START_TEST(deleted_trackers)
{
    static const int two[] = { 0, 3 };

    /* Deleted through the store: the account-level aggregates are repaired. */
    ck_assert_int_eq(qrt_store_tracker_delete(&db, pool, trackers[2].id), APR_SUCCESS);
    trackers[2].deleted = 1;
    ck_assert_int_eq(scope(NULL, 0, 0)->agg_ok, 1);
    ck_assert_int_eq(scope(NULL, 0, 1)->agg_ok, 1);
    check_all(NULL, 0, "a tracker deleted");
    /* Deleted behind the aggregates' back (as when too big to repair): exact still,
     * from the visits. */
    exec_sql(apr_psprintf(pool, "UPDATE trackers SET deleted_at = 1 WHERE id = %"
                          APR_INT64_T_FMT, trackers[1].id));
    trackers[1].deleted = 1;
    ck_assert_int_eq(scope(NULL, 0, 0)->agg_ok, 0);
    ck_assert_int_eq(scope(NULL, 0, 0)->state.deleted, 1);
    ck_assert_int_eq(scope(NULL, 0, 1)->agg_ok, 0);
    ck_assert_int_eq(scope(NULL, 0, 1)->state.deleted, 1);
    check_all(NULL, 0, "a tracker deleted, aggregates stale");
    check_all(two, 2, "two trackers, aggregates stale");
    /* After a rebuild the aggregates hold again. */
    ck_assert_int_eq(qrt_store_agg_rebuild(&db, pool), APR_SUCCESS);
    ck_assert_int_eq(scope(NULL, 0, 0)->agg_ok, 1);
    ck_assert_int_eq(scope(NULL, 0, 1)->agg_ok, 1);
    check_all(NULL, 0, "after a rebuild");
}
END_TEST

/* A rebuild writes the counters in their key's order, so that the rowid tables hold a
 * range of keys together (qrt_store_agg_acc.c, acc_sorted); the reports are the same. */
START_TEST(rebuilt_in_key_order)
{
    static const char *const order[][2] = {
        { "agg_cnt", "kind, account_id, level, bucket, tracker_id, value" },
        { "agg_day", "account_id, quarter_hour, quarters_since_previous" },
    };
    int i;

    ck_assert_int_eq(qrt_store_agg_rebuild(&db, pool), APR_SUCCESS);
    for (i = 0; i < 2; i++) {
        const char *t = order[i][0], *k = order[i][1];

        ck_assert_int_gt(sql_int(apr_psprintf(pool, "SELECT COUNT(*) FROM %s", t)), 100);
        /* no row's key below the key of the row before it, by rowid */
        ck_assert_int_eq(sql_int(apr_psprintf(pool,
            "SELECT COUNT(*) FROM (SELECT (%s) < (SELECT %s FROM %s y WHERE y.rowid < x.rowid "
            "ORDER BY y.rowid DESC LIMIT 1) AS down FROM %s x) WHERE down", k, k, t, t)), 0);
    }
    check_all(NULL, 0, "rebuilt in key order");
}
END_TEST

START_TEST(retagged_trackers)
{
    static const char *const a[] = { "campaign:fall", "region:apac", NULL };
    static const char *const e[] = { "vip", "campaign:spring", NULL };

    check_all(NULL, 0, "before the retag (the scope kept)");
    retag(0, a);
    retag(4, e);
    check_all(NULL, 0, "retagged");
    add_visits(100, 0, 5);
    check_all(NULL, 0, "retagged, then visited");
}
END_TEST

START_TEST(bots_and_visitors)
{
    /* One visitor, three visits, one bot visit by another: 2 scans, 1 click, 1
     * visitor. */
    static const char *const none[] = { NULL };
    int tr = add_tracker("solo", "website", none), i;
    qrt_report_scope_t *sc;
    apr_array_header_t *rows;
    qrt_visit_t x[4];

    memset(x, 0, sizeof(x));
    for (i = 0; i < 4; i++) {
        x[i].tracker_id = trackers[tr].id;
        x[i].visit_start = T0 + 40 * DAY + i * 100;
        x[i].source = i == 1 ? "click" : "scan";
        x[i].ip = "192.0.2.0";
        x[i].user_agent = "UA";
        x[i].device = "mobile";
        x[i].visitor = i == 3 ? 0xbb : 0xaa;
        x[i].bot = i == 3;
    }
    exec_sql("BEGIN");
    ck_assert_int_eq(qrt_store_visits_record(&db, pool, x, 4), APR_SUCCESS);
    exec_sql("COMMIT");
    sc = scope(&tr, 1, 0);
    ck_assert_int_eq(qrt_report_rows(sc, QRT_REPORT_NAME, QRT_AGG_TMIN, QRT_AGG_TMAX, 0,
                                     &rows), APR_SUCCESS);
    ck_assert_int_eq(rows->nelts, 1);
    ck_assert_int_eq(APR_ARRAY_IDX(rows, 0, qrt_report_row_t).scans, 2);
    ck_assert_int_eq(APR_ARRAY_IDX(rows, 0, qrt_report_row_t).clicks, 1);
    ck_assert_int_eq(APR_ARRAY_IDX(rows, 0, qrt_report_row_t).uniques, 1);
    ck_assert_str_eq(APR_ARRAY_IDX(rows, 0, qrt_report_row_t).key, "solo");
}
END_TEST

/* Each tracker's counters (trackers row) against its visit rows: scans, clicks,
 * bots and distinct visitors. SQLite finds the visitors new to a tracker from the
 * aggregates' seeks (qrt_store_agg_write_visits): new in the account, back on the
 * same tracker, back from another one, or out of time order. */
static void check_counters(const char *what)
{
    static const char *const col[][2] = {
        { "total_scans", "SUM(bot = 0 AND click = 0)" },
        { "total_clicks", "SUM(bot = 0 AND click = 1)" },
        { "total_bots", "SUM(bot)" },
        { "unique_visitors", "COUNT(DISTINCT CASE WHEN bot = 0 THEN visitor END)" },
    };
    int i, c;

    for (i = 0; i < ntr; i++) {
        for (c = 0; c < 4; c++) {
            apr_int64_t kept = sql_int(apr_psprintf(pool, "SELECT %s FROM trackers WHERE "
                                                    "id = %" APR_INT64_T_FMT, col[c][0],
                                                    trackers[i].id));
            apr_int64_t counted = sql_int(apr_psprintf(pool, "SELECT COALESCE(%s, 0) FROM "
                                                       "visit_rows WHERE tracker_id = %"
                                                       APR_INT64_T_FMT, col[c][1],
                                                       trackers[i].id));

            ck_assert_msg(kept == counted, "%s: tracker %d's %s is %" APR_INT64_T_FMT
                          ", its visits say %" APR_INT64_T_FMT, what, i, col[c][0], kept,
                          counted);
        }
    }
}

START_TEST(tracker_counters)
{
    static const char *const a[] = { "campaign:fall", NULL };
    qrt_visit_t x[5];
    int i;

    check_counters("batches of 50, shuffled");
    /* The same 40 visitors again: back on a tracker, or first there after another. */
    add_visits(300, 0, 5);
    check_counters("visitors back");
    retag(0, a);
    add_visits(100, 0, 3);
    check_counters("retagged, then visited");
    /* Every visitor's latest visit in another account (day 21, after all of this
     * account's), then visits here from day 22 on: the previous visit in this
     * account is found past the other account's (agg_seek_visitor_in_account after
     * agg_seek_visitor); a window from the middle of day 20 counts them right. */
    for (i = 0; i < 40; i++) {
        qrt_visit_t o;

        memset(&o, 0, sizeof(o));
        o.tracker_id = trackers[ntr - 1].id + 1;
        o.visit_start = T0 + 21 * DAY + i;
        o.source = "scan";
        o.ip = "203.0.113.0";
        o.user_agent = "UA";
        o.device = "mobile";
        o.visitor = i;
        exec_sql("BEGIN");
        ck_assert_int_eq(qrt_store_visits_record(&db, pool, &o, 1), APR_SUCCESS);
        exec_sql("COMMIT");
    }
    shift = 22 * DAY;
    add_visits(200, 0, 5);
    shift = 0;
    check_counters("visitors last seen in another account");
    check_all(NULL, 0, "visitors last seen in another account");
    /* (last: the oracle of check_all does not know these visits) */
    /* One batch: a visitor new to the account on two trackers and back on the first,
     * another first on tracker 4 (known on others), out of time order, and a bot. */
    memset(x, 0, sizeof(x));
    for (i = 0; i < 5; i++) {
        x[i].tracker_id = trackers[i == 1 || i == 3 ? 4 : 3].id;
        x[i].visit_start = T0 + 30 * DAY - i * 50;
        x[i].source = "scan";
        x[i].ip = "192.0.2.9";
        x[i].user_agent = "UA";
        x[i].device = "mobile";
        x[i].visitor = i < 3 ? 0x5151 : 7;
        x[i].bot = i == 4;
    }
    x[3].visit_start = T0 + 1;
    exec_sql("BEGIN");
    ck_assert_int_eq(qrt_store_visits_record(&db, pool, x, 5), APR_SUCCESS);
    exec_sql("COMMIT");
    check_counters("one batch of new, returning and out-of-order visitors");
}
END_TEST

/* n visits of visitor who on tracker tr, one a second from t (bots when bot), each
 * batch of `per` visits committed alone. */
static void visits_of(int tr, apr_int64_t who, apr_int64_t t, int n, int per, int bot)
{
    qrt_visit_t *x = apr_pcalloc(pool, (apr_size_t)n * sizeof(*x));
    int i;

    for (i = 0; i < n; i++) {
        x[i].tracker_id = trackers[tr].id;
        x[i].visit_start = t + i;
        x[i].source = "scan";
        x[i].ip = "192.0.2.77";
        x[i].user_agent = "UA";
        x[i].device = "mobile";
        x[i].visitor = who;
        x[i].bot = bot;
    }
    for (i = 0; i < n; i += per) {
        exec_sql("BEGIN");
        apr_status_t rv = qrt_store_visits_record(&db, pool, x + i, n - i < per ? n - i : per);

        ck_assert_msg(rv == APR_SUCCESS, "tracker %d, visit %d: %s", tr, i,
                      db.error ? db.error : "?");
        exec_sql("COMMIT");
    }
}

/* A visitor with thousands of visits (one address and user agent behind a proxy) that
 * comes to a tracker for the first time, or back to one after many visits elsewhere:
 * SQLite seeks its previous visit there along its visits and along the tracker's at
 * once, in growing chunks (agg_seek_tracker_sqlite); the trackers' distinct visitors
 * stay those of their visit rows, whichever side finds the answer or ends first. */
START_TEST(a_visitor_busy_elsewhere)
{
    const apr_int64_t who = 0x7777, t = T0 + 40 * DAY;

    visits_of(0, who, t, 3000, 50, 0);
    visits_of(1, who, t + 3000, 1, 1, 0);              /* new on 1: both sides walk */
    visits_of(2, who, t + 3001, 400, 1, 0);            /* new on 2, then back, one by one */
    visits_of(1, who, t + 3401, 1, 1, 0);              /* back on 1 past 400 elsewhere */
    visits_of(3, who, t + 3402, 70, 7, 1);             /* only bots on 3 ... */
    visits_of(0, who, t + 3472, 100, 10, 0);
    visits_of(3, who, t + 3572, 1, 1, 0);              /* ... then its first visit there */
    check_counters("a visitor with thousands of visits elsewhere");
    /* the same second on two trackers, in one batch and in two */
    visits_of(4, who, t + 4000, 1, 1, 0);
    visits_of(2, who, t + 4000, 2, 2, 0);
    visits_of(4, who, t + 4001, 1, 1, 0);
    visits_of(3, 0x7778, t + 4001, 1, 1, 0);
    visits_of(0, 0x7778, t + 4001, 5000, 500, 0);
    visits_of(3, 0x7778, t + 9001, 1, 1, 0);            /* back on 3 past 5,000 */
    check_counters("equal times, and another visitor busy elsewhere");
}
END_TEST

/* One scan of visitor who on tracker tr at t, recorded and known to the oracle (tr -1:
 * the other account's tracker, which the oracle never counts). */
static void add_one(int tr, int who, apr_int64_t t)
{
    qrt_visit_t x;

    memset(&x, 0, sizeof(x));
    x.tracker_id = tr >= 0 ? trackers[tr].id
                           : sql_int("SELECT id FROM trackers WHERE code = 'other1'");
    x.visit_start = t;
    x.source = "scan";
    x.ip = "198.51.100.200";
    x.country = "DE";
    x.city = "Berlin";
    x.browser = "Chrome";
    x.user_agent = "UA";
    x.device = "mobile";
    x.visitor = who;
    exec_sql("BEGIN");
    ck_assert_int_eq(qrt_store_visits_record(&db, pool, &x, 1), APR_SUCCESS);
    exec_sql("COMMIT");
    if (tr >= 0) {
        ref_visit *v = &visits[nv++];

        ck_assert_int_le(nv, MAXV);
        v->tr = tr;
        v->t = t;
        v->click = v->bot = 0;
        v->browser = x.browser;
        v->country = x.country;
        v->city = x.city;
        v->dest = NULL;
        v->visitor = apr_psprintf(pool, "%016x", who);
    }
}

/* A list of every live tracker but one or two is counted as the account less what those
 * hold (report_co; the bound on their visits lifted for these few), exact as the listed
 * trackers' own count: the same 40 visitors come to all 75 trackers, and one visits the
 * tracker left out and, the same day, a tracker of another account, where a listed
 * visitor has two visits that day. Past the bound, the listed trackers' own count. */
START_TEST(listed_all_but_few)
{
    int cov[MAXTR], ncov = add_many_trackers(cov), i;
    apr_uint64_t before;

    ck_assert_int_gt(ncov, QRT_AGG_RAW_IDS);        /* (a list that reads every tracker) */
    add_one(0, 0x5151, T0 + 30 * DAY + 100);
    add_one(-1, 0x5151, T0 + 30 * DAY + 200);
    add_one(1, 0x5252, T0 + 30 * DAY + 300);
    add_one(1, 0x5252, T0 + 30 * DAY + 400);
    qrt_report_co_ratio(-1);
    for (ncov = 0, i = 1; i < ntr; i++) {
        cov[ncov++] = i;
    }
    before = qrt_report_co_count();
    check_all(cov, ncov, "all trackers but the first");
    ck_assert_uint_gt(qrt_report_co_count(), before);
    for (ncov = 0, i = 0; i < ntr; i++) {
        if (i != 1 && i != 3) {
            cov[ncov++] = i;
        }
    }
    before = qrt_report_co_count();
    check_all(cov, ncov, "all trackers but two");
    ck_assert_uint_gt(qrt_report_co_count(), before);
    before = qrt_report_co_count();
    check_dashboard(cov, ncov, T0 / DAY + 2, T0 / DAY + 17);
    check_dashboard(cov, ncov, T0 / DAY + 25, T0 / DAY + 31);
    ck_assert_uint_gt(qrt_report_co_count(), before);
    qrt_report_co_ratio(1000000);
    before = qrt_report_co_count();
    check_all(cov, ncov, "all trackers but two, past the bound");
    ck_assert_uint_eq(qrt_report_co_count(), before);
    qrt_report_co_ratio(0);
    /* a tracker deleted behind the aggregates' back: they no longer hold for the
     * account, nor for the account less a few */
    exec_sql(apr_psprintf(pool, "UPDATE trackers SET deleted_at = 1 WHERE id = %"
                          APR_INT64_T_FMT, trackers[4].id));
    trackers[4].deleted = 1;
    qrt_report_co_ratio(-1);
    for (ncov = 0, i = 1; i < ntr; i++) {
        if (!trackers[i].deleted) {
            cov[ncov++] = i;
        }
    }
    before = qrt_report_co_count();
    check_all(cov, ncov, "all trackers but the first, aggregates stale");
    ck_assert_uint_eq(qrt_report_co_count(), before);
    qrt_report_co_ratio(0);
}
END_TEST

/* A long list that leaves out trackers holding more of the window's visits than a 32nd
 * of the listed ones' is told so from the aggregates' counters (whole days, the account's
 * quarter-hours), before the window's part days are read for the account: counted as the
 * listed trackers' own, exact; a list of all but a quiet one still as the account less it. */
START_TEST(listed_co_bounded)
{
    int cov[MAXTR], ncov = add_many_trackers(cov), i, quiet;
    apr_uint64_t co, bounded;

    ck_assert_int_gt(ncov, QRT_AGG_RAW_IDS + 8);
    /* (the first and the last nine left out: some 60 of the 500 visits, over the whole
     * 20 days; a window of none of their visits goes on as the account less them) */
    ncov -= 8;
    bounded = qrt_report_co_bounded_count();
    check_all(cov, ncov, "all trackers but ten busy ones");
    ck_assert_uint_gt(qrt_report_co_bounded_count(), bounded);
    /* all but a tracker of one visit, among the listed trackers' days */
    quiet = add_tracker("quiet", "website", NULL);
    add_one(quiet, 0x5353, T0 + 10 * DAY + 5000);
    for (ncov = 0, i = 0; i < ntr; i++) {
        if (i != quiet) {
            cov[ncov++] = i;
        }
    }
    co = qrt_report_co_count();
    bounded = qrt_report_co_bounded_count();
    check_all(cov, ncov, "all trackers but a quiet one");
    ck_assert_uint_gt(qrt_report_co_count(), co);
    ck_assert_uint_eq(qrt_report_co_bounded_count(), bounded);
}
END_TEST

/* A window of the first hour of a day whose visits run on past it (a window that ends
 * early in a day, or visits ahead of the clock), over a list that leaves out a tracker
 * holding three quarters of that day's visits: told from the counters that the others
 * hold too many (the day's split taken for the hour's), not read as the account less
 * them and then dropped; exact as the listed trackers' own count. */
START_TEST(listed_co_bounded_early_in_a_day)
{
    static const int types[] = { QRT_REPORT_DATE, QRT_REPORT_BROWSER, QRT_REPORT_CITY,
                                 QRT_REPORT_COUNTRY, QRT_REPORT_TAG };
    int cov[MAXTR], ncov = add_many_trackers(cov), i;
    apr_int64_t s = T0 + 12 * DAY, e = T0 + 12 * DAY + 3599;

    /* (the first tracker is left out: cov holds the others but the last) */
    for (i = 0; i < 240; i++) {
        add_one(i % 4 ? 0 : cov[i % ncov], 0x6000 + i, T0 + 12 * DAY + i * 360 + 7);
    }
    seal(1);
    for (i = 0; i < (int)(sizeof(types) / sizeof(types[0])); i++) {
        apr_uint64_t co = qrt_report_co_count(), bounded = qrt_report_co_bounded_count();
        const char *want = ref_rows(types[i], cov, ncov, s, e, 0);
        const char *got = engine_rows(types[i], cov, ncov, s, e, 0);

        ck_assert_msg(!strcmp(want, got), "report %s:\nwant\n%sgot\n%s",
                      qrt_report_type_name(types[i]), want, got);
        ck_assert_uint_gt(qrt_report_co_bounded_count(), bounded);
        ck_assert_uint_eq(qrt_report_co_count(), co);
    }
}
END_TEST

/* A list that leaves out more trackers than are read one by one (their rows then come with
 * every tracker's): quiet ones, two of them with a visit each (one of a visitor who comes
 * to a listed tracker the same day too), counted as the account less them, exact. */
START_TEST(listed_many_quiet_left_out)
{
    int cov[MAXTR], ncov = add_many_trackers(cov), quiet[70], i;
    apr_uint64_t co;

    for (i = 0; i < 70; i++) {
        quiet[i] = add_tracker(apr_psprintf(pool, "quiet%02d", i), "website", NULL);
    }
    add_one(quiet[0], 0x7777, T0 + 2 * DAY + 100);
    add_one(5, 0x7777, T0 + 2 * DAY + 200);
    add_one(quiet[1], 0x7878, T0 + 3 * DAY + 50);
    for (ncov = 0, i = 0; i < quiet[0]; i++) {
        cov[ncov++] = i;
    }
    ck_assert_int_gt(ncov, QRT_AGG_RAW_IDS);
    check_all(cov, ncov, "all trackers but 70 quiet ones");
    /* (a window of visits: the account less the quiet ones, as a window of none would be
     * anyway) */
    co = qrt_report_co_count();
    ck_assert_str_eq(engine_rows(QRT_REPORT_BROWSER, cov, ncov, QRT_AGG_TMIN, QRT_AGG_TMAX, 0),
                     ref_rows(QRT_REPORT_BROWSER, cov, ncov, QRT_AGG_TMIN, QRT_AGG_TMAX, 0));
    ck_assert_uint_gt(qrt_report_co_count(), co);
}
END_TEST

/* ---- crosstab ----------------------------------------------------------------- */

/* The values of dimension dim among a tracker's tags, sorted. */
static int ref_values(const ref_tracker *t, const char *dim, const char **out)
{
    size_t n = strlen(dim);
    int i, k = 0;

    for (i = 0; i < t->ntags; i++) {
        if (!strncmp(t->tags[i], dim, n) && t->tags[i][n] == ':') {
            out[k++] = t->tags[i] + n + 1;
        }
    }
    return k;
}

static int ref_index(apr_array_header_t *list, const char *v)
{
    int i;

    for (i = 0; i < list->nelts; i++) {
        if (!strcmp(APR_ARRAY_IDX(list, i, const char *), v)) {
            return i;
        }
    }
    return -1;
}

static void check_crosstab(const char *row, const char *col, apr_int64_t s, apr_int64_t e)
{
    qrt_report_crosstab_t x;
    apr_int64_t want[64][64], rt[64], ct[64], total = 0, n[MAXTR];
    const char *rv[QRT_TAGS_MAX], *cv[QRT_TAGS_MAX];
    int i, j, k;

    memset(want, 0, sizeof(want));
    memset(rt, 0, sizeof(rt));
    memset(ct, 0, sizeof(ct));
    memset(n, 0, sizeof(n));
    ck_assert_int_eq(qrt_report_crosstab(scope(NULL, 0, 1), row, col, s, e, &x), APR_SUCCESS);
    ck_assert_int_le(x.nrows, 64);
    ck_assert_int_le(x.ncols, 64);
    for (i = 1; i < x.nrows; i++) {
        ck_assert_int_lt(strcmp(APR_ARRAY_IDX(x.rows, i - 1, const char *),
                                APR_ARRAY_IDX(x.rows, i, const char *)), 0);
    }
    for (i = 0; i < nv; i++) {
        if (!visits[i].bot && visits[i].t >= s && visits[i].t <= e) {
            n[visits[i].tr]++;
        }
    }
    for (i = 0; i < ntr; i++) {
        int nr = ref_values(&trackers[i], row, rv), nc = ref_values(&trackers[i], col, cv);

        if (trackers[i].deleted || !nr || !nc) {
            continue;
        }
        total += n[i];
        for (j = 0; j < nr; j++) {
            int r = ref_index(x.rows, rv[j]);

            ck_assert_int_ge(r, 0);
            rt[r] += n[i];
            for (k = 0; k < nc; k++) {
                ck_assert_int_ge(ref_index(x.cols, cv[k]), 0);
                want[r][ref_index(x.cols, cv[k])] += n[i];
            }
        }
        for (k = 0; k < nc; k++) {
            ct[ref_index(x.cols, cv[k])] += n[i];
        }
    }
    ck_assert_int_eq(x.total, total);
    for (i = 0; i < x.nrows; i++) {
        ck_assert_int_eq(x.row_totals[i], rt[i]);
        for (j = 0; j < x.ncols; j++) {
            ck_assert_int_eq(x.matrix[i * x.ncols + j], want[i][j]);
        }
    }
    for (j = 0; j < x.ncols; j++) {
        ck_assert_int_eq(x.col_totals[j], ct[j]);
    }
}

START_TEST(crosstab)
{
    qrt_report_crosstab_t x;

    check_crosstab("campaign", "region", QRT_AGG_TMIN, QRT_AGG_TMAX);
    check_crosstab("region", "campaign", T0 + DAY + 5, T0 + 9 * DAY);
    check_crosstab("region", "region", QRT_AGG_TMIN, QRT_AGG_TMAX);
    check_crosstab("campaign", "nothing", QRT_AGG_TMIN, QRT_AGG_TMAX);
    ck_assert_int_eq(qrt_report_crosstab(scope(NULL, 0, 1), "campaign", "region",
                                         QRT_AGG_TMIN, QRT_AGG_TMAX, &x), APR_SUCCESS);
    ck_assert_int_eq(x.nrows, 2);
    ck_assert_str_eq(APR_ARRAY_IDX(x.rows, 0, const char *), "fall");
    ck_assert_int_eq(x.ncols, 2);
    ck_assert_str_eq(APR_ARRAY_IDX(x.cols, 1, const char *), "us");
}
END_TEST

START_TEST(crosstab_limit)
{
    qrt_report_crosstab_t x;
    int i, j;

    /* 26 trackers with 19 row values and one col value each: 494 rows, inside. */
    for (i = 0; i < 26; i++) {
        const char *tags[QRT_TAGS_MAX + 1];

        for (j = 0; j < 19; j++) {
            tags[j] = apr_psprintf(pool, "big:v%03d", i * 19 + j);
        }
        tags[19] = "small:x";
        tags[20] = NULL;
        add_tracker(apr_psprintf(pool, "b%d", i), "website", tags);
    }
    ck_assert_int_eq(qrt_report_crosstab(scope(NULL, 0, 1), "big", "small", QRT_AGG_TMIN,
                                         QRT_AGG_TMAX, &x), APR_SUCCESS);
    ck_assert_int_eq(x.nrows, 494);
    ck_assert_int_eq(x.ncols, 1);
    /* One more tracker: 513 values, over the limit, answered before any read. */
    {
        const char *tags[QRT_TAGS_MAX + 1];

        for (j = 0; j < 19; j++) {
            tags[j] = apr_psprintf(pool, "big:w%03d", j);
        }
        tags[19] = "small:y";
        tags[20] = NULL;
        add_tracker("b26", "website", tags);
    }
    ck_assert_int_eq(qrt_report_crosstab(scope(NULL, 0, 1), "big", "small", QRT_AGG_TMIN,
                                         QRT_AGG_TMAX, &x), APR_ENOSPC);
    ck_assert_int_eq(x.nrows, 513);
    ck_assert_int_eq(x.ncols, 2);
    ck_assert_ptr_null(x.matrix);
    ck_assert_int_eq(qrt_report_crosstab(scope(NULL, 0, 1), "small", "big", QRT_AGG_TMIN,
                                         QRT_AGG_TMAX, &x), APR_ENOSPC);
    ck_assert_int_eq(x.ncols, 513);
}
END_TEST

/* ---- dashboard ------------------------------------------------------------------ */

static void ref_period(const int *cov, int ncov, apr_int64_t d0, apr_int64_t d1,
                       qrt_report_period_t *out, apr_int64_t *per_scans,
                       apr_int64_t *per_clicks)
{
    apr_hash_t *seen = apr_hash_make(pool);
    int active[MAXTR], i;

    memset(out, 0, sizeof(*out));
    memset(active, 0, sizeof(active));
    out->d0 = d0;
    out->d1 = d1;
    for (i = 0; i < nv; i++) {
        const ref_visit *v = &visits[i];

        if (v->bot || v->t < d0 * DAY || v->t >= (d1 + 1) * DAY
            || !covers(cov, ncov, v->tr)) {
            continue;
        }
        if (v->click) {
            out->clicks++;
            if (per_clicks) {
                per_clicks[v->tr]++;
            }
        }
        else {
            out->scans++;
            if (per_scans) {
                per_scans[v->tr]++;
            }
        }
        active[v->tr] = 1;
        apr_hash_set(seen, v->visitor, APR_HASH_KEY_STRING, "");
    }
    out->uniques = apr_hash_count(seen);
    for (i = 0; i < ntr; i++) {
        out->active += active[i];
    }
}

static void check_dashboard1(const int *cov, int ncov, apr_int64_t d0, apr_int64_t d1);

static void check_dashboard(const int *cov, int ncov, apr_int64_t d0, apr_int64_t d1)
{
    int how;

    for (how = 0; how < SEAL_STATES; how++) {
        seal(how);
        check_dashboard1(cov, ncov, d0, d1);
        /* (the daily series from the blocks visit by visit, in time order or not) */
        qrt_report_lv_runs(0);
        check_dashboard1(cov, ncov, d0, d1);
        qrt_report_lv_runs(1);
    }
    seal(1);
}

static void check_dashboard1(const int *cov, int ncov, apr_int64_t d0, apr_int64_t d1)
{
    qrt_report_dashboard_t x;
    qrt_report_period_t cur, prev;
    apr_int64_t ps[MAXTR], pc[MAXTR], d;
    int i, j, ntop = 0;

    memset(ps, 0, sizeof(ps));
    memset(pc, 0, sizeof(pc));
    ck_assert_int_eq(qrt_report_dashboard(scope(cov, ncov, cov == NULL), d0, d1, 1, &x), APR_SUCCESS);
    ref_period(cov, ncov, d0, d1, &cur, ps, pc);
    ref_period(cov, ncov, d0 - (d1 - d0 + 1), d0 - 1, &prev, NULL, NULL);
    ck_assert_int_eq(x.cur.d0, d0);
    ck_assert_int_eq(x.cur.d1, d1);
    ck_assert_int_eq(x.prev.d0, prev.d0);
    ck_assert_int_eq(x.prev.d1, prev.d1);
    ck_assert_int_eq(x.cur.scans, cur.scans);
    ck_assert_int_eq(x.cur.clicks, cur.clicks);
    ck_assert_int_eq(x.cur.uniques, cur.uniques);
    ck_assert_int_eq(x.cur.active, cur.active);
    ck_assert_int_eq(x.prev.scans, prev.scans);
    ck_assert_int_eq(x.prev.clicks, prev.clicks);
    ck_assert_int_eq(x.prev.uniques, prev.uniques);
    ck_assert_int_eq(x.prev.active, prev.active);
    for (d = d0; d <= d1; d++) {
        qrt_report_period_t one;

        ref_period(cov, ncov, d, d, &one, NULL, NULL);
        ck_assert_int_eq(x.scans[d - d0], one.scans);
        ck_assert_int_eq(x.clicks[d - d0], one.clicks);
    }
    /* topTrackers: the busiest, by visits then id, at most QRT_REPORT_TOP. */
    for (i = 0; i < ntr; i++) {
        ntop += ps[i] + pc[i] > 0;
    }
    ck_assert_int_eq(x.top->nelts, ntop < QRT_REPORT_TOP ? ntop : QRT_REPORT_TOP);
    for (i = 0; i < x.top->nelts; i++) {
        qrt_report_top_t *t = &APR_ARRAY_IDX(x.top, i, qrt_report_top_t);

        for (j = 0; j < ntr && trackers[j].id != t->id; j++) {
        }
        ck_assert_int_lt(j, ntr);
        ck_assert_int_eq(t->scans, ps[j]);
        ck_assert_int_eq(t->clicks, pc[j]);
        if (i > 0) {
            qrt_report_top_t *u = &APR_ARRAY_IDX(x.top, i - 1, qrt_report_top_t);

            ck_assert(u->scans + u->clicks > t->scans + t->clicks
                      || (u->scans + u->clicks == t->scans + t->clicks && u->id < t->id));
        }
    }
}

START_TEST(dashboard)
{
    static const int two[] = { 1, 3 };
    apr_int64_t d0 = T0 / DAY;

    check_dashboard(NULL, 0, d0 + 10, d0 + 19);
    check_dashboard(NULL, 0, d0 + 3, d0 + 3);
    check_dashboard(two, 2, d0 + 5, d0 + 14);
    ck_assert_int_eq(qrt_store_tracker_delete(&db, pool, trackers[0].id), APR_SUCCESS);
    trackers[0].deleted = 1;
    check_dashboard(NULL, 0, d0 + 10, d0 + 19);
    exec_sql(apr_psprintf(pool, "UPDATE trackers SET deleted_at = 1 WHERE id = %"
                          APR_INT64_T_FMT, trackers[4].id));
    trackers[4].deleted = 1;
    check_dashboard(NULL, 0, d0 + 8, d0 + 19);
}
END_TEST

static void setup_probe(void)
{
    qrt_store_agg_write_probe(1);
    setup();
}

static void setup_probe8(void)
{
    qrt_store_agg_write_probe(8);
    setup();
}

static void teardown_probe(void)
{
    teardown();
    qrt_store_agg_write_probe(64);
}

/* The sealed values kept in memory, as a server's child keeps them (qrt_aggcache.h):
 * read again from the cache and from the days' indexes, the reports stay exact, also
 * after values were sealed again, dropped or damaged by hand. */
static void setup_kept(void)
{
    setup();
    qrt_store_agg_blob_cache(qrt_aggcache_make(pool, 1 << 24));
}

static void teardown_kept(void)
{
    qrt_store_agg_blob_cache(NULL);
    qrt_store_agg_blob_strids(NULL);
    teardown();
}

/* The same with the strings of the listed trackers' blocks numbered, as a server's
 * child numbers them (qrt_strid.h): a block then holds a string's number, not its
 * text; with a table of 4 numbers, a block holds some strings' numbers, the texts of
 * the others. */
static void setup_kept_ids(void)
{
    setup_kept();
    qrt_store_agg_blob_strids(qrt_strid_make(pool, 1 << 20, 1 << 20));
}

/* ... and every listed report counted in two threads (each a half of each share). */
static void setup_kept_par(void)
{
    setup_kept_ids();
    qrt_report_lv_par(1);
}

static void teardown_kept_par(void)
{
    qrt_report_lv_par(0);
    teardown_kept();
}

/* ... and a second thread reading the blocks of lists of 2 trackers or more over a
 * second connection to the same database (help_db), as a child's second connection does;
 * or over one to a database without the schema, whose every statement fails (broken). */
static qrt_db_t help_db;
static int help_broken, help_taken, help_given_broken;
static apr_size_t help_spans;

static qrt_db_t *help_take(void)
{
    help_taken++;
    return &help_db;
}

static void help_give(qrt_db_t *d, int broken, apr_size_t spans)
{
    ck_assert_ptr_eq(d, &help_db);
    help_given_broken += broken;
    help_spans += spans;
}

static void setup_kept_help(void)
{
    setup_kept_ids();
    help_taken = help_given_broken = 0;
    help_spans = 0;
    if (help_broken) {
        const char *err = NULL;

        memset(&help_db, 0, sizeof(help_db));
        ck_assert_int_eq(apr_dbd_get_driver(pool, "sqlite3", &help_db.driver), APR_SUCCESS);
        ck_assert_int_eq(apr_dbd_open_ex(help_db.driver, pool,
                                         apr_pstrcat(pool, dir, "/empty.db", NULL),
                                         &help_db.handle, &err), APR_SUCCESS);
        qrt_db_prepare_lazily(&help_db, pool);
    }
    else {
        qrt_check_db_open(pool, apr_pstrcat(pool, dir, "/t.db", NULL), &help_db);
    }
    qrt_store_agg_read_helper(help_take, help_give, 2);
    /* (the thread's first block read before the request goes on, however busy the
     * machine: both the thread's share and its failure are then certain) */
    qrt_store_agg_read_helper_sync(1);
}

static void teardown_kept_help(void)
{
    qrt_store_agg_read_helper_sync(0);
    qrt_store_agg_read_helper(NULL, NULL, 0);
    apr_dbd_close(help_db.driver, help_db.handle);
    unlink(apr_pstrcat(pool, dir, "/empty.db", NULL));
    teardown_kept();
}

static void setup_kept_broken_help(void)
{
    help_broken = 1;
    setup_kept_help();
    help_broken = 0;
}

/* A list's blocks not kept yet are read by the request from its first tracker and by a
 * second thread from its last, each over its own connection, until they meet: the
 * thread's are then found kept. Exact however they meet; a list whose blocks are all
 * kept takes no second thread. */
START_TEST(listed_read_by_two_threads)
{
    int cov[MAXTR], ncov = add_many_trackers(cov), type;
    apr_size_t before;

    /* 60 days of visits: spans of 16 days whose every day is sealed */
    for (shift = 20 * DAY; shift <= 40 * DAY; shift += 20 * DAY) {
        add_visits(600, 5, ntr);
    }
    shift = 0;
    seal(1);
    for (type = QRT_REPORT_DATE; type <= QRT_REPORT_COUNTRY; type++) {
        qrt_report_scope_t *sc = scope(cov, ncov, 0);
        apr_array_header_t *rows;

        ck_assert_int_eq(qrt_report_rows(sc, type, QRT_AGG_TMIN, QRT_AGG_TMAX, 0, &rows),
                         APR_SUCCESS);
    }
    ck_assert_int_gt(help_taken, 0);
    ck_assert_int_eq(help_given_broken, 0);
    ck_assert_uint_gt(help_spans, 0);
    ck_assert_uint_ge(qrt_store_agg_read_helped(), help_spans);
    check_all(cov, ncov, "many trackers, read by two threads");
    check_all(cov, 5, "five trackers, read by two threads");
    /* all kept now: no second thread */
    before = help_spans;
    seal(1);
    help_taken = 0;
    check_all1(cov, ncov, "many trackers, kept");
    ck_assert_int_eq(help_taken, 0);
    ck_assert_uint_eq(help_spans, before);
}
END_TEST

/* Two threads, blocks kept: a listed window whose sealed days keep within the bound has
 * a second thread begin its walk of them while the days not sealed are read; when those
 * take the window past the bound, that walk is let go of and the window is counted in
 * shares (by browser, country, city or tag in one walk that spreads its visits as added).
 * Exact either way. */
START_TEST(listed_walk_begun_past_the_bound)
{
    int cov[MAXTR], ncov = 0, i;
    apr_uint64_t begun0, dropped0, begun, dropped;

    for (i = 0; i < 8; i++) {
        add_tracker(apr_psprintf(pool, "w%d", i), "website", NULL);
        cov[ncov++] = i;
    }
    add_visits(400, 0, ntr);
    seal(1);
    check_all1(cov, ncov, "sealed");            /* (their blocks kept) */
    /* 20 days more that nothing seals: read after the kept blocks, through SQL */
    shift = 40 * DAY;
    add_visits(400, 0, ntr);
    shift = 0;
    qrt_report_lv_max(500);
    qrt_report_lv_early_counts(&begun0, &dropped0);
    check_all1(cov, ncov, "sealed and not, 500 pairs at most");
    qrt_report_lv_early_counts(&begun, &dropped);
    ck_assert_uint_gt(begun, begun0);
    ck_assert_uint_gt(dropped, dropped0);       /* (the whole window: ~760 visits) */
    ck_assert_uint_gt(begun - begun0, dropped - dropped0);
    qrt_report_lv_max(0);
}
END_TEST

/* Two threads, blocks kept: a window by date whose sealed days already pass the bound
 * is counted in one walk holding the runs by reference; its second thread begins that
 * walk as soon as the sealed days' blocks are held, while the days not sealed are read,
 * and the count takes it (not let go of). Exact. */
START_TEST(listed_walk_begun_by_reference)
{
    int cov[MAXTR], ncov = 0, i, first = ntr;
    apr_uint64_t begun0, dropped0, begun, dropped;

    /* five trackers, each with its visits on a day of its own: thick blocks (at least
     * REPORT_LV_THICK visits a day of a block's 16), held by reference; the fixture's
     * five left out (too busy for the account less them) */
    for (i = 0; i < 5; i++) {
        add_tracker(apr_psprintf(pool, "r%d", i), "website", NULL);
        cov[ncov++] = first + i;
        one_day = i;
        add_visits(350, first + i, first + i + 1);
    }
    seal(1);
    check_all1(cov, ncov, "sealed");            /* (their blocks kept) */
    /* a day more that nothing seals: read after the kept blocks, through SQL */
    shift = 45 * DAY;
    one_day = 0;
    add_visits(40, first, ntr);
    one_day = -1;
    shift = 0;
    qrt_report_lv_max(1000);
    for (i = 0; i < 2; i++) {
        const char *want = ref_rows(QRT_REPORT_DATE, cov, ncov, QRT_AGG_TMIN, QRT_AGG_TMAX,
                                    i ? 3600 : 0);

        qrt_report_lv_early_counts(&begun0, &dropped0);
        ck_assert_str_eq(engine_rows(QRT_REPORT_DATE, cov, ncov, QRT_AGG_TMIN, QRT_AGG_TMAX,
                                     i ? 3600 : 0), want);
        qrt_report_lv_early_counts(&begun, &dropped);
        ck_assert_uint_eq(begun, begun0 + 1);
        ck_assert_uint_eq(dropped, dropped0);
    }
    check_all1(cov, ncov, "sealed and not, 1000 pairs at most");
    qrt_report_lv_max(0);
}
END_TEST

/* The same with a second connection whose statements fail: the thread stops and says so,
 * and the request reads every block itself. */
START_TEST(listed_read_by_a_broken_thread)
{
    int cov[MAXTR], ncov = add_many_trackers(cov);

    for (shift = 20 * DAY; shift <= 40 * DAY; shift += 20 * DAY) {
        add_visits(600, 5, ntr);
    }
    shift = 0;

    check_all(cov, ncov, "many trackers, the second thread broken");
    ck_assert_int_gt(help_taken, 0);
    ck_assert_int_gt(help_given_broken, 0);
    ck_assert_uint_eq(help_spans, 0);
}
END_TEST

static void setup_kept_few_ids(void)
{
    setup_kept();
    qrt_store_agg_blob_strids(qrt_strid_make(pool, 4, 1 << 20));
}

/* The suite's case names, for qrt_check_run_cases. */
static const char *case_names[16];
static int ncases;

/* A test case of the suite, its fixture run around each test. */
static TCase *report_case(Suite *s, const char *name, SFun up, SFun down)
{
    TCase *tc = tcase_create(name);

    if (ncases == (int)(sizeof(case_names) / sizeof(case_names[0]))) {
        abort();
    }
    case_names[ncases++] = name;

    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, up, down);
    suite_add_tcase(s, tc);
    return tc;
}

/* The listed reports over kept blocks, for a case that reads or counts them another
 * way. */
static void add_listed_kept(TCase *tc)
{
    tcase_add_test(tc, listed_trackers);
    tcase_add_test(tc, listed_many_strings);
    tcase_add_test(tc, many_listed_trackers);
    tcase_add_test(tc, many_listed_trackers_in_parts);
    tcase_add_test(tc, listed_days_held_by_reference);
    tcase_add_test(tc, listed_read_past_its_bound);
    tcase_add_test(tc, retagged_trackers);
    tcase_add_test(tc, dashboard);
}

static Suite *report_suite(void)
{
    Suite *s = suite_create("report");
    TCase *tc;

    ncases = 0;
    tc = report_case(s, "engine", setup, teardown);

    tcase_add_test(tc, type_names);
    tcase_add_test(tc, trim_marks);
    tcase_add_test(tc, whole_account);
    tcase_add_test(tc, counted_visits);
    tcase_add_test(tc, listed_trackers);
    tcase_add_test(tc, listed_destinations);
    tcase_add_test(tc, many_listed_trackers);
    tcase_add_test(tc, long_list_scope_kept);
    tcase_add_test(tc, deleted_trackers);
    tcase_add_test(tc, rebuilt_in_key_order);
    tcase_add_test(tc, retagged_trackers);
    tcase_add_test(tc, bots_and_visitors);
    tcase_add_test(tc, tracker_counters);
    tcase_add_test(tc, a_visitor_busy_elsewhere);
    tcase_add_test(tc, listed_all_but_few);
    tcase_add_test(tc, listed_co_bounded);
    tcase_add_test(tc, listed_co_bounded_early_in_a_day);
    tcase_add_test(tc, listed_many_quiet_left_out);
    tcase_add_test(tc, crosstab);
    tcase_add_test(tc, crosstab_limit);
    tcase_add_test(tc, dashboard);
    /* A visit out of order reads 64 visits before it first, and all when those lack
     * a group of the visits after it. A visitor here has up to some 40 visits: with 1
     * nearly every one reads all; with 8, some do and some do not. */
    tc = report_case(s, "engine, 1 visit read first before a visit out of order",
                     setup_probe, teardown_probe);
    tcase_add_test(tc, whole_account);
    tcase_add_test(tc, listed_trackers);
    tcase_add_test(tc, retagged_trackers);
    tcase_add_test(tc, bots_and_visitors);
    tcase_add_test(tc, tracker_counters);
    tcase_add_test(tc, crosstab);
    tcase_add_test(tc, dashboard);
    tc = report_case(s, "engine, 8 visits read first before a visit out of order",
                     setup_probe8, teardown_probe);
    tcase_add_test(tc, whole_account);
    tcase_add_test(tc, bots_and_visitors);
    tcase_add_test(tc, tracker_counters);
    tcase_add_test(tc, dashboard);
    tc = report_case(s, "engine, sealed values kept in memory", setup_kept, teardown_kept);
    tcase_add_test(tc, whole_account);
    tcase_add_test(tc, counted_visits);
    tcase_add_test(tc, listed_trackers);
    tcase_add_test(tc, listed_destinations);
    tcase_add_test(tc, many_listed_trackers);
    tcase_add_test(tc, many_listed_trackers_in_parts);
    tcase_add_test(tc, listed_days_held_by_reference);
    tcase_add_test(tc, listed_read_past_its_bound);
    tcase_add_test(tc, deleted_trackers);
    tcase_add_test(tc, listed_all_but_few);
    tcase_add_test(tc, listed_co_bounded);
    tcase_add_test(tc, listed_co_bounded_early_in_a_day);
    tcase_add_test(tc, listed_many_quiet_left_out);
    tcase_add_test(tc, retagged_trackers);
    tcase_add_test(tc, bots_and_visitors);
    tcase_add_test(tc, crosstab);
    tcase_add_test(tc, dashboard);
    tc = report_case(s, "engine, kept blocks with string numbers", setup_kept_ids,
                     teardown_kept);
    tcase_add_test(tc, listed_trackers);
    tcase_add_test(tc, listed_many_strings);
    tcase_add_test(tc, many_listed_trackers);
    tcase_add_test(tc, many_listed_trackers_in_parts);
    tcase_add_test(tc, listed_days_held_by_reference);
    tc = report_case(s, "engine, kept blocks counted in two threads", setup_kept_par,
                     teardown_kept_par);
    add_listed_kept(tc);
    tcase_add_test(tc, bots_and_visitors);
    tcase_add_test(tc, listed_walk_begun_past_the_bound);
    tcase_add_test(tc, listed_walk_begun_by_reference);
    tc = report_case(s, "engine, kept blocks read by a second thread too", setup_kept_help,
                     teardown_kept_help);
    tcase_add_test(tc, listed_read_by_two_threads);
    add_listed_kept(tc);
    tc = report_case(s, "engine, kept blocks with a second thread that fails",
                     setup_kept_broken_help, teardown_kept_help);
    tcase_add_test(tc, listed_read_by_a_broken_thread);
    tcase_add_test(tc, listed_trackers);
    tcase_add_test(tc, dashboard);
    tc = report_case(s, "engine, kept blocks with 4 string numbers", setup_kept_few_ids,
                     teardown_kept);
    tcase_add_test(tc, listed_trackers);
    tcase_add_test(tc, many_listed_trackers);
    return s;
}

int main(void)
{
    /* The suite made once for its case names, then each case in a process of its own */
    srunner_free(srunner_create(report_suite()));
    return qrt_check_run_cases(report_suite, case_names, ncases);
}
