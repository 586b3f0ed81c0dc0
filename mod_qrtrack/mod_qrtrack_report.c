/* mod_qrtrack_report: endpoints 6, 7 and 8.
 *
 *   GET /report/?report=<type>          qrt_report_show      (6)
 *   GET /report/tag-crosstab            qrt_report_crosstab_show (7)
 *   GET /dashboard/scansAnalytics       qrt_dashboard_scans  (8)
 *   POST of each, its parameters in the body (qrt_report_post, ...)
 *
 * The parameters are read here and the answers written as JSON; the numbers come
 * from the report engine (qrt_report.h: planning, aggregates or visits, the
 * decisions on rows, groups and ordering).
 *
 * Decisions (beyond CONTRACT section 4):
 *   - name, type and tag reports list every covered tracker / type / tag, zeros
 *     included; date, browser, city and country list groups that have visits. An
 *     unknown (NULL or empty) browser, city or country is written null.
 *   - Crosstab: rows and cols are the values (sorted by bytes) of the two dimensions
 *     on covered trackers that have both. matrix[r][c] = visits of the trackers
 *     tagged with both row:r and col:c (a tracker with several values counts in each
 *     cell). row_totals[r], col_totals[c] and total count every visit once: visits of
 *     the trackers with value r (resp. c), and of all trackers with both dimensions.
 *     So total <= the sum of the cells, equal when no tracker has two values of one
 *     dimension. At most QRT_REPORT_XT_MAX values per dimension (else 422 naming the
 *     dimension and the limit); the matrix is streamed as text.
 *   - Dashboard: compare accepts 0/1/false/true; with 0, previousPeriod is null and
 *     every KPI's previous and change are null. change is the percent change rounded
 *     to 0.1 (half away from zero), null when previous is 0. topTrackers: up to 10
 *     covered trackers with visits in the period, by visits then tracker_id. A period
 *     of more than 3660 days is 422. */
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>
#include <apr_time.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_config.h"
#include "mod_qrtrack_http.h"
#include "mod_qrtrack_params.h"
#include "mod_qrtrack_report.h"
#include "mod_qrtrack_util.h"
#include "qrt_agg.h"
#include "qrt_kept.h"
#include "qrt_strid.h"
#include "qrt_aggcache.h"
#include "qrt_store_agg_blob.h"
#include "qrt_date.h"
#include "qrt_json.h"
#include "qrt_report.h"
#include "qrt_valid.h"
#include "qrt_dblimit.h"
#include "qrt_store_agg_read.h"
#include "qrt_trim.h"
#include "qrt_spare.h"
#include "qrt_poolkeep.h"
#include "qrt_clock.h"
#include "mod_qrtrack_db.h"
#include "mod_qrtrack_spool.h"

APLOG_USE_MODULE(qrtrack);

#define REP_MAX_DAYS 3660           /* dashboard period: at most ten years */
#define REP_DIM_MAX 64
#define REP_CACHE_ACCOUNTS 16       /* report scopes a child keeps ... */
#define REP_CACHE_TRACKERS 20000    /* ... of at most this many trackers each */

/* The child's kept report scopes (NULL: every report reads its own). */
static qrt_report_cache_t *rep_cache;
/* The allocators of the reports' pools, kept from one report to the next (qrt_poolkeep):
 * two, each keeping up to 16 MB of what its last report freed, for 10 s unused. */
#define REP_POOLS 2
#define REP_POOL_KEEP ((apr_size_t)16 << 20)
static qrt_poolkeep_t *rep_pools;

#define REP_STRIDS (1u << 20)      /* strings numbered for the blocks of visits, at most */

/* The child's second connection for reading a long list's blocks (taken by one request
 * at a time: qrt_store_agg_read_helper), outside mod_dbd's pool: a request that holds its
 * own connection never waits for another. Opened when first taken, kept while it works. */
static struct {
    apr_pool_t *p;                  /* the connection's (cleared when it is opened again) */
    qrt_db_t *db;
    server_rec *s;
} rep_help;

static qrt_db_t *rep_help_take(void)
{
    const char *err;

    if (rep_help.db || qrt_db_down()) {
        return rep_help.db;
    }
    apr_pool_clear(rep_help.p);
    rep_help.db = qrt_db_open_own(rep_help.p, 0, qrt_statement_timeout_ms(), NULL, &err);
    if (!rep_help.db) {
        /* (the request reads its list alone; mod_dbd and the keeper say what is wrong) */
        ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, rep_help.s, "QRT00507: cannot open a "
                     "second connection to read a list's visits: %s", err);
    }
    return rep_help.db;
}

static void rep_help_give(qrt_db_t *db, int broken, apr_size_t spans)
{
    ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, rep_help.s, "QRT00509: a second thread read "
                 "%" APR_SIZE_T_FMT " spans of a list's visits", spans);
    if (broken && db == rep_help.db) {
        ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, rep_help.s, "QRT00508: the second "
                     "connection for a list's visits failed (%s); opened again when next "
                     "needed", db->error ? db->error : "unknown error");
        apr_dbd_close(db->driver, db->handle);
        rep_help.db = NULL;
    }
}

/* (the child ends: no request runs) */
static apr_status_t rep_help_end(void *data)
{
    (void)data;
    qrt_store_agg_read_helper(NULL, NULL, 0);
    if (rep_help.db) {
        apr_dbd_close(rep_help.db->driver, rep_help.db->handle);
        rep_help.db = NULL;
    }
    apr_pool_destroy(rep_help.p);
    rep_help.p = NULL;
    return APR_SUCCESS;
}

/* The connection's pool, with an allocator of its own: the requests that take the
 * connection in turn allocate in it from their own threads. */
static int rep_help_init(apr_pool_t *pchild)
{
    apr_allocator_t *a;

    if (apr_allocator_create(&a) != APR_SUCCESS) {
        return 0;
    }
    if (apr_pool_create_unmanaged_ex(&rep_help.p, NULL, a) != APR_SUCCESS) {
        apr_allocator_destroy(a);
        return 0;
    }
    apr_allocator_owner_set(a, rep_help.p);
    apr_pool_cleanup_register(pchild, NULL, rep_help_end, apr_pool_cleanup_null);
    return 1;
}

/* (the child ends: the reports' kept second threads end before the module's code may
 * be unloaded) */
static apr_status_t rep_spare_end(void *data)
{
    (void)data;
    qrt_spare_end();
    return APR_SUCCESS;
}

void qrt_report_pools_release(apr_interval_time_t idle)
{
    qrt_poolkeep_release(rep_pools, qrt_clock_now(), idle);
}

/* Whole days of reports by date over a list, kept for every child (qrt_kept): 65,536 of
 * them, 5 MB, with QRTrackReportCache on. */
#define REP_KEPT_DAYS 65536
#define REP_KEPT_KEY "qrtrack-kept-days"

apr_status_t qrt_report_post_config(server_rec *s)
{
    apr_size_t size = qrt_kept_size(REP_KEPT_DAYS);
    apr_status_t rv;
    int fresh;
    void *mem;

    qrt_kept_use(NULL);
    if (qrt_config()->report_cache <= 0) {
        return APR_SUCCESS;
    }
    /* (kept over graceful restarts: each value is checked against its days' seals) */
    mem = qrt_shm_kept(s, REP_KEPT_KEY, size, &fresh, &rv);
    if (!mem) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, s, "QRT00511: cannot make the "
                     "shared table of kept days; each report by date over a list "
                     "counts its whole window");
        return APR_SUCCESS;
    }
    qrt_kept_use(qrt_kept_attach(mem, size, fresh));
    return APR_SUCCESS;
}

void qrt_report_child_init(apr_pool_t *pchild, server_rec *s)
{
    qrt_aggcache_t *sealed = NULL;
    /* sealed values (and their indexes) a child keeps: QRTrackReportCache */
    apr_size_t bytes = (apr_size_t)qrt_config()->report_cache << 20;

    rep_cache = qrt_report_cache_make(pchild, REP_CACHE_ACCOUNTS, REP_CACHE_TRACKERS);
    if (!rep_cache) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "QRT00505: cannot make the report "
                     "scope cache; every report reads its trackers itself");
    }
    if (bytes > 0 && !(sealed = qrt_aggcache_make(pchild, bytes))) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "QRT02300: cannot make the cache of "
                     "sealed report values; every report reads them from the database");
    }
    qrt_store_agg_blob_cache(sealed);
    /* the numbers of the kept blocks' strings: at most an eighth of the cache's bytes */
    qrt_store_agg_blob_strids(sealed ? qrt_strid_make(pchild, REP_STRIDS, bytes / 8) : NULL);
    qrt_spare_keep(QRT_SPARE_KEEP);
    apr_pool_cleanup_register(pchild, NULL, rep_spare_end, apr_pool_cleanup_null);
    rep_pools = qrt_poolkeep_make(pchild, REP_POOLS, REP_POOL_KEEP);
    rep_help.s = s;
    if (sealed && rep_help_init(pchild)) {
        qrt_store_agg_read_helper(rep_help_take, rep_help_give, 0);
    }
}

/* ---- shared pieces -------------------------------------------------------- */

/* The trackers a request covers (403 and 422 for the list come from
 * qrt_params_trackers). */
static qrt_err_t *rep_scope_load(qrt_req_t *q, const char *param, qrt_report_scope_t **sc)
{
    apr_pool_t *p;
    apr_array_header_t *ids = NULL;
    /* (none listed: all of the account's, which the scope reads, or keeps, itself) */
    qrt_err_t *e = qrt_query_list(q, param)->nelts ? qrt_params_trackers(q, param, &ids)
                                                  : NULL;

    if (e) {
        return e;
    }
    /* The report's reads see one state of the database, ended by rep_done (or by the
     * request's pool): the writers seal days and imports change them meanwhile. (The
     * second connection's reads of a long list are of sealed days, outside it: they
     * change only by an import, whose new seals no later report meets the block under.) */
    if (qrt_db_snapshot_begin(&q->db, q->r->pool) != APR_SUCCESS) {
        *sc = NULL;
        return qrt_error_store(q, "reporting");
    }
    /* (the report's work in a pool whose allocator the next report takes over: its
     * memory is not unmapped and mapped again, qrt_poolkeep.h) */
    if (!(p = qrt_poolkeep_pool(rep_pools, q->r->pool))) {
        p = q->r->pool;
    }
    if (qrt_report_scope(&q->db, p, q->auth.account_id, ids, rep_cache, sc)
        != APR_SUCCESS) {
        return qrt_error_store(q, *sc && (*sc)->failed ? (*sc)->failed : "reporting");
    }
    if ((*sc)->everything && (*sc)->state.deleted) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, q->r, "QRT00502: trackers were deleted "
                      "since the report aggregates were built: distinct visitors are "
                      "counted from the visits (run qrtrack-admin aggregates rebuild)");
    }
    return NULL;
}

/* Hands back to the system the memory the process's reports freed (qrt_report_trim_due),
 * once the request's answer is out: a cleanup of its pool. */
static apr_status_t rep_trim(void *data)
{
    request_rec *r = data;
    apr_time_t started = apr_time_now();

    if (qrt_trim()) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, "QRT00123: handed back the memory "
                      "reports freed (%" APR_TIME_T_FMT " us)", apr_time_now() - started);
    }
    return APR_SUCCESS;
}

/* After the engine ran: a store error, or a note of the visits it read. */
static qrt_err_t *rep_done(qrt_req_t *q, qrt_report_scope_t *sc, apr_status_t rv)
{
    qrt_db_snapshot_end(&q->db);
    if (qrt_report_trim_due(sc->counted)) {
        apr_pool_cleanup_register(q->r->pool, q->r, rep_trim, apr_pool_cleanup_null);
    }
    if (sc->raw_trackers) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, q->r, "QRT00503: counted distinct "
                      "visitors of %d trackers from their visits", sc->raw_trackers);
    }
    if (sc->lv_shares > 1) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, q->r, "QRT00504: counted listed "
                      "trackers' visits in %d shares of their visitors", sc->lv_shares);
    }
    if (sc->co_others) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, q->r, "QRT00506: counted the listed "
                      "trackers as the account less the %d it left out", sc->co_others);
    }
    if (sc->kept_days) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, q->r, "QRT00510: took %d days of the "
                      "window by date from those an earlier report kept", sc->kept_days);
    }
    /* qrt_error_store: 503 with Retry-After for a database away, locked or too slow */
    return rv == APR_SUCCESS ? NULL
        : qrt_error_store(q, sc->failed ? sc->failed : "reporting");
}

/* A window bound as given, written back in its own offset; null when absent. */
static json_t *rep_bound(qrt_req_t *q, const char *name)
{
    const char *v = qrt_query(q, name);
    char buf[QRT_DATE_LEN];
    apr_int64_t t;
    int off;

    if (!v || qrt_date_parse(v, &t, &off) != 0) {
        return json_null();
    }
    qrt_date_format(buf, t, off);
    return json_string(buf);
}

static void rep_window(const qrt_window_t *w, apr_int64_t *s, apr_int64_t *e)
{
    *s = w->has_start ? w->start : QRT_AGG_TMIN;
    *e = w->has_end ? w->end : QRT_AGG_TMAX;
}

static json_t *rep_meta(qrt_req_t *q, qrt_report_scope_t *sc)
{
    json_t *m = json_object();

    json_object_set_new(m, "tracker_count", json_integer(sc->list->nelts));
    json_object_set_new(m, "visit_start", rep_bound(q, "visit_start"));
    json_object_set_new(m, "visit_start_end", rep_bound(q, "visit_start_end"));
    return m;
}

/* ---- the report (6) --------------------------------------------------------- */

static qrt_err_t *rep_rows_write(qrt_req_t *q, int type, apr_array_header_t *rows,
                                 json_t *meta);

qrt_err_t *qrt_report_show(qrt_req_t *q)
{
    const char *name = qrt_query(q, "report");
    apr_array_header_t *rows;
    json_t *meta;
    qrt_window_t w;
    qrt_report_scope_t *sc;
    apr_int64_t s, e;
    qrt_err_t *err;
    int type = qrt_report_type_parse(name);

    if (type < 0) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "report",
                               name ? "The report parameter must be one of name, type, "
                               "tag, date, browser, city, country, destination."
                               : "The report parameter is required.");
    }
    if ((err = qrt_params_window(q, &w)) != NULL
        || (err = rep_scope_load(q, "trackers", &sc)) != NULL) {
        return err;
    }
    rep_window(&w, &s, &e);
    if ((err = rep_done(q, sc, qrt_report_rows(sc, type, s, e, w.offset, &rows))) != NULL) {
        return err;
    }
    meta = rep_meta(q, sc);
    json_object_set_new(meta, "report", json_string(qrt_report_type_name(type)));
    return rep_rows_write(q, type, rows, meta);
}

/* ---- the tag crosstab (7) -------------------------------------------------- */

static qrt_err_t *rep_dimension(qrt_req_t *q, const char *name, const char **out)
{
    const char *v = qrt_query(q, name);
    apr_pool_t *p = q->r->pool;

    *out = v;
    if (!v || !*v) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, name, apr_psprintf(p,
                               "The %s parameter (a tag dimension) is required.", name));
    }
    if (strlen(v) > REP_DIM_MAX || qrt_valid_text(v, strlen(v), 0)) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, name, apr_psprintf(p,
                               "The %s parameter must be a tag dimension of at most %d "
                               "bytes of valid UTF-8 text.", name, REP_DIM_MAX));
    }
    return NULL;
}

/* The crosstab's body, written as it is made: the matrix (up to REP_XT_MAX squared
 * numbers) never exists as JSON values, only as text in the output filters' buffers
 * (apr_brigade_write passes every ~8 KB down; a body that fits in one buffer still
 * gets its Content-Length). */
typedef struct {
    request_rec *r;
    apr_bucket_brigade *bb;
    apr_status_t rv;
} rep_out;

static void rep_put(rep_out *o, const char *s, apr_size_t n)
{
    if (o->rv == APR_SUCCESS) {
        o->rv = apr_brigade_write(o->bb, ap_filter_flush, o->r->output_filters, s, n);
    }
}

static void rep_puts(rep_out *o, const char *s)
{
    rep_put(o, s, strlen(s));
}

/* A JSON value, compact, then released. */
static void rep_put_json(rep_out *o, json_t *j)
{
    apr_size_t len;
    char *s = qrt_json_dump(o->r->pool, j, &len);

    rep_put(o, s, len);
    json_decref(j);
}

/* The body's closing brace and its end: what went wrong on the way, if anything. */
static apr_status_t rep_end(rep_out *o)
{
    rep_puts(o, "}");
    if (o->rv == APR_SUCCESS) {
        APR_BRIGADE_INSERT_TAIL(o->bb, apr_bucket_eos_create(o->bb->bucket_alloc));
        o->rv = ap_pass_brigade(o->r->output_filters, o->bb);
    }
    return o->rv;
}

static void rep_put_ints(rep_out *o, const apr_int64_t *v, int n)
{
    char buf[32];
    int i;

    rep_put(o, "[", 1);
    for (i = 0; i < n; i++) {
        apr_size_t len = apr_snprintf(buf, sizeof(buf), "%s%" APR_INT64_T_FMT,
                                      i ? "," : "", v[i]);

        rep_put(o, buf, len);
    }
    rep_put(o, "]", 1);
}

/* The report's body, {"data":[rows],"meta":meta}, written row by row as text
 * (qrt_report_row_json): 10,000 rows as JSON values and their dump took most of a
 * report=name request over an account of 10,000 trackers. */
static qrt_err_t *rep_rows_write(qrt_req_t *q, int type, apr_array_header_t *rows,
                                 json_t *meta)
{
    request_rec *r = q->r;
    char stack[1024], *buf = stack;
    apr_size_t cap = sizeof(stack);
    rep_out o;
    int i;

    r->status = HTTP_OK;
    ap_set_content_type(r, QRT_JSON_TYPE);
    o.r = r;
    o.bb = apr_brigade_create(r->pool, r->connection->bucket_alloc);
    o.rv = APR_SUCCESS;
    rep_puts(&o, "{\"data\":[");
    for (i = 0; i < rows->nelts; i++) {
        const qrt_report_row_t *x = &APR_ARRAY_IDX(rows, i, qrt_report_row_t);
        apr_size_t n = qrt_report_row_json(buf, cap, type, x);

        if (n >= cap) {
            cap = n + 1;
            buf = apr_palloc(r->pool, cap);
            n = qrt_report_row_json(buf, cap, type, x);
        }
        if (i) {
            rep_put(&o, ",", 1);
        }
        rep_put(&o, buf, n);
    }
    rep_puts(&o, "],\"meta\":");
    rep_put_json(&o, meta);
    if (rep_end(&o) != APR_SUCCESS) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, o.rv, r, "QRT00122: client went away "
                      "during a report");
    }
    return NULL;
}

static json_t *rep_str_array(apr_array_header_t *v)
{
    json_t *a = json_array();
    int i;

    for (i = 0; i < v->nelts; i++) {
        json_array_append_new(a, json_string(APR_ARRAY_IDX(v, i, const char *)));
    }
    return a;
}

/* 422 when a dimension has more than QRT_REPORT_XT_MAX values on the covered
 * trackers. */
static qrt_err_t *rep_xt_bound(qrt_req_t *q, const char *row, const char *col,
                               const qrt_report_crosstab_t *x)
{
    const char *names[2] = { "row", "col" };
    int counts[2], i;
    qrt_err_t *e = NULL;

    counts[0] = x->nrows;
    counts[1] = x->ncols;
    for (i = 0; i < 2; i++) {
        const char *msg;

        if (counts[i] <= QRT_REPORT_XT_MAX) {
            continue;
        }
        msg = apr_psprintf(q->r->pool, "The %s dimension (%s) has %d values on the "
                           "covered trackers; a crosstab allows at most %d values per "
                           "dimension (list fewer trackers with trackers[]).", names[i],
                           i ? col : row, counts[i], QRT_REPORT_XT_MAX);
        if (!e) {
            e = qrt_error(q, HTTP_UNPROCESSABLE_ENTITY, msg);
        }
        qrt_error_add(q, e, names[i], msg);
    }
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, q->r, "QRT00200: crosstab refused: "
                  "%d x %d values, at most %d per dimension", x->nrows, x->ncols,
                  QRT_REPORT_XT_MAX);
    return e;
}

qrt_err_t *qrt_report_crosstab_show(qrt_req_t *q)
{
    request_rec *r = q->r;
    apr_pool_t *p = r->pool;
    const char *row, *col;
    apr_int64_t s, e;
    json_t *meta;
    qrt_window_t w;
    qrt_report_scope_t *sc;
    qrt_report_crosstab_t x;
    apr_status_t rv;
    rep_out o;
    qrt_err_t *err;
    char buf[32];
    int i;

    if ((err = rep_dimension(q, "row", &row)) != NULL
        || (err = rep_dimension(q, "col", &col)) != NULL
        || (err = qrt_params_window(q, &w)) != NULL
        || (err = rep_scope_load(q, "trackers", &sc)) != NULL) {
        return err;
    }
    rep_window(&w, &s, &e);
    rv = qrt_report_crosstab(sc, row, col, s, e, &x);
    if (rv == APR_ENOSPC) {
        qrt_db_snapshot_end(&q->db);
        return rep_xt_bound(q, row, col, &x);
    }
    if ((err = rep_done(q, sc, rv)) != NULL) {
        return err;
    }
    meta = rep_meta(q, sc);
    json_object_set_new(meta, "row", json_string(row));
    json_object_set_new(meta, "col", json_string(col));
    r->status = HTTP_OK;
    ap_set_content_type(r, QRT_JSON_TYPE);
    o.r = r;
    o.bb = apr_brigade_create(p, r->connection->bucket_alloc);
    o.rv = APR_SUCCESS;
    rep_puts(&o, "{\"data\":{\"rows\":");
    rep_put_json(&o, rep_str_array(x.rows));
    rep_puts(&o, ",\"cols\":");
    rep_put_json(&o, rep_str_array(x.cols));
    rep_puts(&o, ",\"matrix\":[");
    for (i = 0; i < x.nrows; i++) {
        if (i) {
            rep_put(&o, ",", 1);
        }
        rep_put_ints(&o, x.matrix + (apr_size_t)i * x.ncols, x.ncols);
    }
    rep_puts(&o, "],\"row_totals\":");
    rep_put_ints(&o, x.row_totals, x.nrows);
    rep_puts(&o, ",\"col_totals\":");
    rep_put_ints(&o, x.col_totals, x.ncols);
    apr_snprintf(buf, sizeof(buf), ",\"total\":%" APR_INT64_T_FMT "},\"meta\":", x.total);
    rep_puts(&o, buf);
    rep_put_json(&o, meta);
    if (rep_end(&o) != APR_SUCCESS) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, o.rv, r, "QRT00201: client went away "
                      "during a crosstab");
    }
    return NULL;
}

/* ---- portfolio KPIs (8) ---------------------------------------------------- */

static qrt_err_t *dash_day(qrt_req_t *q, const char *name, apr_int64_t *day, int *given)
{
    const char *v = qrt_query(q, name);

    *given = v != NULL;
    if (v && qrt_date_parse_day(v, day) != 0) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, name,
                               apr_psprintf(q->r->pool, "The %s parameter must be a date "
                                            "like 2026-11-20.", name));
    }
    return NULL;
}

static json_t *dash_kpi(apr_int64_t value, apr_int64_t previous, int compare)
{
    json_t *k = json_object();
    double pct;

    json_object_set_new(k, "value", json_integer(value));
    json_object_set_new(k, "previous", compare ? json_integer(previous) : json_null());
    json_object_set_new(k, "change", compare && qrt_agg_change(value, previous, &pct)
                                     ? json_real(pct) : json_null());
    return k;
}

static json_t *dash_dates(apr_int64_t d0, apr_int64_t d1)
{
    json_t *o = json_object();
    char buf[QRT_DAY_LEN];

    qrt_date_format_day(buf, d0);
    json_object_set_new(o, "dateStart", json_string(buf));
    qrt_date_format_day(buf, d1);
    json_object_set_new(o, "dateEnd", json_string(buf));
    return o;
}

qrt_err_t *qrt_dashboard_scans(qrt_req_t *q)
{
    apr_pool_t *p = q->r->pool;
    const char *cmp = qrt_query(q, "compare");
    apr_int64_t today = qrt_agg_fdiv(apr_time_sec(apr_time_now()), QRT_AGG_DAY), d0, d1;
    apr_int64_t len, d;
    qrt_report_dashboard_t x;
    qrt_report_scope_t *sc;
    json_t *body, *kpis, *days, *tops;
    qrt_err_t *err;
    int has_start, has_end, compare = 1, i;
    char buf[QRT_DAY_LEN];

    if ((err = dash_day(q, "dateStart", &d0, &has_start)) != NULL
        || (err = dash_day(q, "dateEnd", &d1, &has_end)) != NULL) {
        return err;
    }
    if (!has_end) {
        d1 = today;
    }
    if (!has_start) {
        d0 = d1 - 29;
    }
    if (d0 > d1) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "dateStart",
                               "The dateStart parameter must not be after dateEnd.");
    }
    len = d1 - d0 + 1;
    if (len > REP_MAX_DAYS) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "dateStart", apr_psprintf(p,
                               "The period may span at most %d days.", REP_MAX_DAYS));
    }
    if (cmp) {
        if (!strcmp(cmp, "0") || !strcasecmp(cmp, "false")) {
            compare = 0;
        }
        else if (strcmp(cmp, "1") && strcasecmp(cmp, "true")) {
            return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "compare",
                                   "The compare parameter must be 0 or 1 (or false or true).");
        }
    }
    if ((err = rep_scope_load(q, "trackers", &sc)) != NULL
        || (err = rep_done(q, sc, qrt_report_dashboard(sc, d0, d1, compare, &x))) != NULL) {
        return err;
    }
    days = json_array();
    for (d = 0; d < len; d++) {
        json_t *o = json_object();

        qrt_date_format_day(buf, d0 + d);
        json_object_set_new(o, "date", json_string(buf));
        json_object_set_new(o, "scans", json_integer(x.scans[d]));
        json_object_set_new(o, "clicks", json_integer(x.clicks[d]));
        json_array_append_new(days, o);
    }
    tops = json_array();
    for (i = 0; i < x.top->nelts; i++) {
        qrt_report_top_t *t = &APR_ARRAY_IDX(x.top, i, qrt_report_top_t);
        json_t *o = json_object();

        json_object_set_new(o, "tracker_id", json_integer(t->id));
        json_object_set_new(o, "name", json_string(t->name));
        json_object_set_new(o, "scans", json_integer(t->scans));
        json_object_set_new(o, "clicks", json_integer(t->clicks));
        json_array_append_new(tops, o);
    }
    kpis = json_object();
    json_object_set_new(kpis, "totalScans", dash_kpi(x.cur.scans, x.prev.scans, compare));
    json_object_set_new(kpis, "totalClicks", dash_kpi(x.cur.clicks, x.prev.clicks, compare));
    json_object_set_new(kpis, "uniqueVisitors",
                        dash_kpi(x.cur.uniques, x.prev.uniques, compare));
    json_object_set_new(kpis, "activeTrackers",
                        dash_kpi(x.cur.active, x.prev.active, compare));
    body = json_object();
    json_object_set_new(body, "period", dash_dates(x.cur.d0, x.cur.d1));
    json_object_set_new(body, "previousPeriod",
                        compare ? dash_dates(x.prev.d0, x.prev.d1) : json_null());
    json_object_set_new(body, "kpis", kpis);
    json_object_set_new(body, "daily", days);
    json_object_set_new(body, "topTrackers", tops);
    return qrt_respond_json(q, HTTP_OK, body);
}

/* ---- the same as POSTs ------------------------------------------------------ */

qrt_err_t *qrt_report_post(qrt_req_t *q)
{
    qrt_err_t *e = qrt_params_from_body(q);

    return e ? e : qrt_report_show(q);
}

qrt_err_t *qrt_report_crosstab_post(qrt_req_t *q)
{
    qrt_err_t *e = qrt_params_from_body(q);

    return e ? e : qrt_report_crosstab_show(q);
}

qrt_err_t *qrt_dashboard_scans_post(qrt_req_t *q)
{
    qrt_err_t *e = qrt_params_from_body(q);

    return e ? e : qrt_dashboard_scans(q);
}
