/* mod_qrtrack_visits: a tracker's analytics (spec endpoint 5), its visits (9)
 * and their CSV export (10).
 *
 * GET /tracker/analytics/<id>             counters kept on the tracker's row
 * GET /visits/tracker/<id>                one page, newest first; ETag / 304 for pollers
 * GET /visits/tracker/<id>/download/csv   every selected visit, streamed in keyed chunks
 */
#include <string.h>
#include <apr_strings.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_config.h"
#include "mod_qrtrack_http.h"
#include "mod_qrtrack_params.h"
#include "mod_qrtrack_tracker.h"
#include "mod_qrtrack_visits.h"
#include "qrt_csv.h"
#include "qrt_date.h"
#include "qrt_etag.h"
#include "qrt_json.h"
#include "qrt_store_purge.h"
#include "qrt_store_visits_read.h"
#include "qrt_valid.h"

APLOG_USE_MODULE(qrtrack);

#define VISITS_SEARCH_MIN   3       /* characters */
#define VISITS_SEARCH_MAX   256     /* characters */
#define VISITS_CSV_COLUMNS  15
#define VISITS_CSV_BUF      (64 * 1024 - 64)    /* bytes per bucket of the export */

static const char *const visits_csv_header[VISITS_CSV_COLUMNS] = {
    "id", "visit_start", "source", "tracker_id", "tracker_name", "ip", "country", "city",
    "browser", "browser_version", "os", "device", "referer", "user_agent", "bot"
};

/* ---- endpoint 5 ------------------------------------------------------------ */

qrt_err_t *qrt_tracker_analytics(qrt_req_t *q)
{
    qrt_tracker_t t;
    qrt_err_t *e = qrt_tracker_load_head(q, q->seg[0], &t);
    json_t *j;

    if (e) {
        return e;
    }
    j = json_object();
    json_object_set_new(j, "totalScans", json_integer(t.total_scans));
    json_object_set_new(j, "totalClicks", json_integer(t.total_clicks));
    json_object_set_new(j, "uniqueVisitors", json_integer(t.unique_visitors));
    json_object_set_new(j, "bots", json_integer(t.total_bots));
    json_object_set_new(j, "lastVisit", qrt_json_time(t.last_visit));
    return qrt_respond_json(q, HTTP_OK, j);
}

/* ---- parameters shared by the listing and the export ---------------------- */

/* Adds the field messages of more to e (or starts with more). */
static qrt_err_t *visits_errors_join(qrt_req_t *q, qrt_err_t *e, qrt_err_t *more)
{
    const char *field;
    json_t *list, *msg;
    size_t i;

    if (!e) {
        return more;
    }
    if (!more || !more->errors) {
        return e;
    }
    json_object_foreach(more->errors, field, list) {
        json_array_foreach(list, i, msg) {
            qrt_error_add(q, e, field, json_string_value(msg));
        }
    }
    e->message = "The given data was invalid.";
    return e;
}

static qrt_err_t *visits_bad(qrt_req_t *q, const char *field, const char *msg)
{
    return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, field, msg);
}

/* search: 3..256 characters of text (valid UTF-8, no control characters). */
static qrt_err_t *visits_search(qrt_req_t *q, const char **search)
{
    const char *v = qrt_query(q, "search");
    const unsigned char *u;
    apr_size_t len, i = 0, chars = 0;
    long cp;

    *search = NULL;
    if (!v) {
        return NULL;
    }
    len = strlen(v);
    if (qrt_valid_text(v, len, 0) != NULL) {
        return visits_bad(q, "search", "The search parameter must be valid UTF-8 "
                          "text without control characters.");
    }
    u = (const unsigned char *)v;
    while (i < len) {
        i += qrt_valid_utf8_char(u + i, len - i, &cp);
        chars++;
    }
    if (chars < VISITS_SEARCH_MIN) {
        return visits_bad(q, "search", "The search parameter must be at least 3 "
                          "characters.");
    }
    if (chars > VISITS_SEARCH_MAX) {
        return visits_bad(q, "search", "The search parameter must not be longer than "
                          "256 characters.");
    }
    *search = v;
    return NULL;
}

/* visit_start, visit_start_end, since_id and search into f (the tracker is t). */
static qrt_err_t *visits_filter(qrt_req_t *q, const qrt_tracker_t *t,
                                qrt_visit_filter_t *f)
{
    qrt_window_t w;
    qrt_err_t *e, *all;
    const char *v;

    qrt_visit_filter_init(f, t->id);
    f->matched = apr_palloc(q->r->pool, sizeof(*f->matched));
    *f->matched = -1;
    all = qrt_params_window(q, &w);
    if (!all) {
        if (w.has_start) {
            f->start = w.start;
        }
        if (w.has_end) {
            f->end = w.end;
        }
    }
    if (qrt_config()->visit_retention > 0) {
        /* QRTrackVisitRetention: visits older than it are listed nowhere. */
        apr_int64_t edge = qrt_purge_edge(apr_time_sec(q->r->request_time),
                                          qrt_config()->visit_retention);

        if (f->start < edge) {
            f->start = edge;
        }
    }
    v = qrt_query(q, "since_id");
    if (v && qrt_parse_int(v, 0, APR_INT64_MAX, &f->since_id) != 0) {
        all = visits_errors_join(q, all, visits_bad(q, "since_id", "The since_id "
                                 "parameter must be a visit id (an integer of at "
                                 "least 0)."));
    }
    e = visits_search(q, &f->search);
    return visits_errors_join(q, all, e);
}

/* ---- endpoint 9 ------------------------------------------------------------- */

static json_t *visits_str(apr_pool_t *p, const char *s)
{
    json_t *j;

    if (!s) {
        return json_null();
    }
    j = json_string(s);
    /* Stored text is not trusted to be UTF-8: never drop a member for it. */
    return j ? j : json_string(qrt_csv_utf8_clean(p, s, strlen(s)));
}

static json_t *visits_json(apr_pool_t *p, const qrt_visit_t *v)
{
    json_t *j = json_object();
    char when[QRT_DATE_LEN];

    qrt_date_format(when, v->visit_start, 0);
    json_object_set_new(j, "id", json_integer(v->id));
    json_object_set_new(j, "tracker_id", json_integer(v->tracker_id));
    json_object_set_new(j, "visit_start", json_string(when));
    json_object_set_new(j, "source", visits_str(p, v->source));
    json_object_set_new(j, "ip", visits_str(p, v->ip));
    json_object_set_new(j, "country", visits_str(p, v->country));
    json_object_set_new(j, "city", visits_str(p, v->city));
    json_object_set_new(j, "browser", visits_str(p, v->browser));
    json_object_set_new(j, "browser_version", visits_str(p, v->browser_version));
    json_object_set_new(j, "os", visits_str(p, v->os));
    json_object_set_new(j, "device", visits_str(p, v->device));
    json_object_set_new(j, "referer", visits_str(p, v->referer));
    json_object_set_new(j, "user_agent", visits_str(p, v->user_agent));
    json_object_set_new(j, "bot", json_boolean(v->bot));
    json_object_set_new(j, "destination", visits_str(p, v->destination));
    return j;
}

/* The listing's entity tag: the tracker's newest visit and counters (visits are
 * never changed once written) and the normalised query. Costs one index probe. */
static const char *visits_etag(qrt_req_t *q, const qrt_tracker_t *t,
                               const qrt_visit_filter_t *f, apr_int64_t page,
                               apr_int64_t rows, apr_int64_t max_id)
{
    const char *seed = apr_psprintf(q->r->pool,
        "visits/2|%" APR_INT64_T_FMT "|%" APR_INT64_T_FMT "|%" APR_INT64_T_FMT
        "|%" APR_INT64_T_FMT "|%" APR_INT64_T_FMT "|%" APR_INT64_T_FMT
        "|%" APR_INT64_T_FMT "|%" APR_INT64_T_FMT "|%" APR_INT64_T_FMT
        "|%" APR_INT64_T_FMT "|%" APR_INT64_T_FMT "|%" APR_INT64_T_FMT "|%s%s",
        t->id, max_id, t->total_scans, t->total_clicks, t->total_bots,
        t->unique_visitors, t->last_visit, f->start, f->end, f->since_id, page, rows,
        f->search ? "search:" : "all",
        f->search ? qrt_visits_like_pattern(q->r->pool, f->search) : "");

    return qrt_etag_make(q->r->pool, seed, strlen(seed));
}

static qrt_err_t *visits_not_modified(qrt_req_t *q)
{
    request_rec *r = q->r;
    apr_bucket_brigade *bb = apr_brigade_create(r->pool, r->connection->bucket_alloc);

    r->status = HTTP_NOT_MODIFIED;
    APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_eos_create(bb->bucket_alloc));
    if (ap_pass_brigade(r->output_filters, bb) != APR_SUCCESS) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, "QRT00401: client went away");
    }
    return NULL;
}

qrt_err_t *qrt_visits_list(qrt_req_t *q)
{
    request_rec *r = q->r;
    qrt_tracker_t t;
    qrt_visit_filter_t f;
    apr_int64_t page, rows, offset, total, max_id;
    apr_array_header_t *visits;
    qrt_err_t *e;
    const char *etag;
    json_t *body, *data;
    int i;

    if ((e = qrt_tracker_load_head(q, q->seg[0], &t)) != NULL) {
        return e;
    }
    e = visits_filter(q, &t, &f);
    e = visits_errors_join(q, e, qrt_params_paging(q, &page, &rows));
    if (e) {
        return e;
    }
    if (qrt_store_visits_max_id(&q->db, r->pool, t.id, &max_id) != APR_SUCCESS) {
        return qrt_error_store(q, "reading the newest visit");
    }
    etag = visits_etag(q, &t, &f, page, rows, max_id);
    if (qrt_etag_match(apr_table_get(r->headers_in, "If-None-Match"), etag)) {
        apr_table_setn(r->headers_out, "ETag", etag);
        apr_table_setn(r->err_headers_out, "Cache-Control", "private, no-cache");
        return visits_not_modified(q);
    }
    offset = (page - 1) * rows;
    if (f.since_id >= max_id && f.since_id > 0) {
        /* The usual poll: nothing above the highest id the poller has. */
        visits = apr_array_make(r->pool, 1, sizeof(qrt_visit_t));
        total = 0;
    }
    else {
        if (qrt_store_visits_page(&q->db, r->pool, &f, offset, rows, &visits)
            != APR_SUCCESS) {
            return qrt_error_store(q, "listing visits");
        }
        if (!f.search && !f.since_id && f.start == APR_INT64_MIN
            && f.end == APR_INT64_MAX) {
            /* Every visit: the writer counts each in exactly one of these, in the
             * transaction that stores it. */
            total = t.total_scans + t.total_clicks + t.total_bots;
        }
        else if (visits->nelts < rows && (visits->nelts > 0 || offset == 0)) {
            /* A page that is not full is the last one. */
            total = offset + visits->nelts;
        }
        else if (qrt_store_visits_count(&q->db, r->pool, &f, &total) != APR_SUCCESS) {
            return qrt_error_store(q, "counting visits");
        }
    }
    data = json_array();
    for (i = 0; i < visits->nelts; i++) {
        json_array_append_new(data, visits_json(r->pool,
                                                &APR_ARRAY_IDX(visits, i, qrt_visit_t)));
    }
    body = json_object();
    json_object_set_new(body, "data", data);
    json_object_set_new(body, "meta", qrt_paging_meta(page, rows, total));
    apr_table_setn(r->headers_out, "ETag", etag);
    apr_table_setn(r->err_headers_out, "Cache-Control", "private, no-cache");
    return qrt_respond_json(q, HTTP_OK, body);
}

/* ---- endpoint 10 ------------------------------------------------------------ */

/* The export's output buffer: rows are copied into buffers of VISITS_CSV_BUF
 * bytes that become heap buckets whole (apr_brigade_write would make one small
 * bucket per write once its first buffer is full). */
typedef struct {
    apr_bucket_brigade *bb;
    char *buf;
    apr_size_t len;
} visits_csv_out;

static void visits_csv_drain(visits_csv_out *o)
{
    if (o->buf && o->len) {
        APR_BRIGADE_INSERT_TAIL(o->bb, apr_bucket_heap_create(o->buf, o->len,
                                                              apr_bucket_free,
                                                              o->bb->bucket_alloc));
        o->buf = NULL;
    }
    o->len = 0;
}

static void visits_csv_write(visits_csv_out *o, const char *s, apr_size_t n)
{
    while (n > 0) {
        apr_size_t take;

        if (!o->buf) {
            o->buf = apr_bucket_alloc(VISITS_CSV_BUF, o->bb->bucket_alloc);
            o->len = 0;
        }
        if (o->len == VISITS_CSV_BUF) {
            visits_csv_drain(o);
            continue;
        }
        take = VISITS_CSV_BUF - o->len < n ? VISITS_CSV_BUF - o->len : n;
        memcpy(o->buf + o->len, s, take);
        o->len += take;
        s += take;
        n -= take;
    }
}

/* One cell (qrt_csv_cell: quoting, formula guard, UTF-8) and its separator. */
static void visits_csv_put(visits_csv_out *o, apr_pool_t *p, const char *v, int last)
{
    const char *cell = qrt_csv_cell(p, v);

    visits_csv_write(o, cell, strlen(cell));
    visits_csv_write(o, last ? "\r\n" : ",", last ? 2 : 1);
}

/* The CSV rows of visits; what cells need is allocated in p. name_cell is the
 * tracker's name already made a cell. */
static void visits_csv_rows(visits_csv_out *o, apr_pool_t *p, const char *name_cell,
                            const apr_array_header_t *visits)
{
    apr_size_t name_len = strlen(name_cell);
    char id[24], tid[24], when[QRT_DATE_LEN];
    int i;

    for (i = 0; i < visits->nelts; i++) {
        const qrt_visit_t *v = &APR_ARRAY_IDX(visits, i, qrt_visit_t);

        apr_snprintf(id, sizeof(id), "%" APR_INT64_T_FMT, v->id);
        apr_snprintf(tid, sizeof(tid), "%" APR_INT64_T_FMT, v->tracker_id);
        qrt_date_format(when, v->visit_start, 0);
        visits_csv_put(o, p, id, 0);
        visits_csv_put(o, p, when, 0);
        visits_csv_put(o, p, v->source, 0);
        visits_csv_put(o, p, tid, 0);
        visits_csv_write(o, name_cell, name_len);
        visits_csv_write(o, ",", 1);
        visits_csv_put(o, p, v->ip, 0);
        visits_csv_put(o, p, v->country, 0);
        visits_csv_put(o, p, v->city, 0);
        visits_csv_put(o, p, v->browser, 0);
        visits_csv_put(o, p, v->browser_version, 0);
        visits_csv_put(o, p, v->os, 0);
        visits_csv_put(o, p, v->device, 0);
        visits_csv_put(o, p, v->referer, 0);
        visits_csv_put(o, p, v->user_agent, 0);
        visits_csv_put(o, p, v->bot ? "true" : "false", 1);
    }
}

/* Ends a stream that could not be finished: no last chunk, connection closed, so
 * that the client sees a truncated download rather than a short file. */
static void visits_csv_abort(qrt_req_t *q, apr_bucket_brigade *bb)
{
    request_rec *r = q->r;

    apr_brigade_cleanup(bb);
    APR_BRIGADE_INSERT_TAIL(bb, ap_bucket_error_create(HTTP_BAD_GATEWAY, NULL, r->pool,
                                                       bb->bucket_alloc));
    APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_eos_create(bb->bucket_alloc));
    r->connection->keepalive = AP_CONN_CLOSE;
    ap_pass_brigade(r->output_filters, bb);
}

qrt_err_t *qrt_visits_csv(qrt_req_t *q)
{
    request_rec *r = q->r;
    qrt_tracker_t t;
    qrt_visit_filter_t f;
    apr_array_header_t *visits;
    apr_bucket_brigade *bb;
    visits_csv_out out;
    apr_pool_t *chunk;
    apr_int64_t last_start = 0, last_id = 0, rows = 0;
    const char *name, *header;
    qrt_err_t *e;

    if ((e = qrt_tracker_load_head(q, q->seg[0], &t)) != NULL) {
        return e;
    }
    if ((e = visits_filter(q, &t, &f)) != NULL) {
        return e;
    }
    /* One chunk of rows at a time lives in this pool, cleared after each is sent:
     * memory stays flat whatever the number of rows (the SQLite driver reads a
     * whole result set into memory, hence chunks of QRT_VISITS_CHUNK). */
    apr_pool_create(&chunk, r->pool);
    apr_pool_tag(chunk, "qrtrack-csv-chunk");
    visits = NULL;
    if (!r->header_only
        && qrt_store_visits_after(&q->db, chunk, &f, 0, 0, QRT_VISITS_CHUNK, &visits)
           != APR_SUCCESS) {
        return qrt_error_store(q, "exporting visits");
    }
    r->status = HTTP_OK;
    ap_set_content_type(r, "text/csv; charset=utf-8");
    apr_table_setn(r->headers_out, "Content-Disposition",
                   apr_psprintf(r->pool, "attachment; filename=\"tracker-%"
                                APR_INT64_T_FMT "-visits.csv\"", t.id));
    apr_table_setn(r->headers_out, "X-Content-Type-Options", "nosniff");
    bb = apr_brigade_create(r->pool, r->connection->bucket_alloc);
    if (r->header_only) {
        APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_eos_create(bb->bucket_alloc));
        ap_pass_brigade(r->output_filters, bb);
        return NULL;
    }
    out.bb = bb;
    out.buf = NULL;
    out.len = 0;
    name = qrt_csv_cell(r->pool, t.name);
    header = qrt_csv_row(r->pool, visits_csv_header, VISITS_CSV_COLUMNS);
    visits_csv_write(&out, header, strlen(header));
    for (;;) {
        int n = visits->nelts;

        if (n > 0) {
            const qrt_visit_t *last = &APR_ARRAY_IDX(visits, n - 1, qrt_visit_t);

            last_start = last->visit_start;
            last_id = last->id;
            rows += n;
        }
        visits_csv_rows(&out, chunk, name, visits);
        visits_csv_drain(&out);
        if (ap_fflush(r->output_filters, bb) != APR_SUCCESS || r->connection->aborted) {
            ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, "QRT00402: client went away "
                          "after %" APR_INT64_T_FMT " rows of tracker %" APR_INT64_T_FMT,
                          rows, t.id);
            return NULL;
        }
        apr_brigade_cleanup(bb);
        apr_pool_clear(chunk);
        if (n < QRT_VISITS_CHUNK) {
            break;
        }
        if (qrt_store_visits_after(&q->db, chunk, &f, last_start, last_id,
                                   QRT_VISITS_CHUNK, &visits) != APR_SUCCESS) {
            ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, "QRT00403: CSV export of tracker %"
                          APR_INT64_T_FMT " stopped after %" APR_INT64_T_FMT " rows: %s",
                          t.id, rows, q->db.error ? q->db.error : "store error");
            visits_csv_abort(q, bb);
            return NULL;
        }
    }
    apr_pool_destroy(chunk);
    APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_eos_create(bb->bucket_alloc));
    if (ap_pass_brigade(r->output_filters, bb) != APR_SUCCESS) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, "QRT00404: client went away at the "
                      "end of the export of tracker %" APR_INT64_T_FMT, t.id);
    }
    return NULL;
}
