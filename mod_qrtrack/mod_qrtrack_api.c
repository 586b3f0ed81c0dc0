/* mod_qrtrack_api: the qrtrack-api handler.
 *
 * read the body (bounded) -> authenticate -> count against the token's limit ->
 * one route table -> a resource handler -> JSON. Handlers return errors as
 * values; api_write_error() is the one place that writes an error body. */
#include <string.h>
#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "http_protocol.h"
#include "http_request.h"
#include <apr_dbd.h>
#include "mod_dbd.h"
#include <apr_strings.h>
#include <apr_base64.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_account.h"
#include "mod_qrtrack_api.h"
#include "mod_qrtrack_bulk.h"
#include "mod_qrtrack_config.h"
#include "mod_qrtrack_db.h"
#include "mod_qrtrack_health.h"
#include "mod_qrtrack_http.h"
#include "mod_qrtrack_openapi.h"
#include "mod_qrtrack_params.h"
#include "mod_qrtrack_image.h"
#include "mod_qrtrack_qrcode.h"
#include "mod_qrtrack_rate.h"
#include "mod_qrtrack_report.h"
#include "mod_qrtrack_spool.h"
#include "mod_qrtrack_style.h"
#include "mod_qrtrack_tracker.h"
#include "mod_qrtrack_visits.h"
#include "mod_qrtrack_webhook.h"
#include "qrt_dblimit.h"
#include "qrt_form.h"
#include "qrt_json.h"
#include "qrt_token.h"

APLOG_USE_MODULE(qrtrack);

#define API_MAX_SEGMENTS 8

/* What a route does with the data: a read token may call only API_READS routes. Every
 * route says which: a new route cannot be written without deciding. */
typedef enum {
    API_READS,          /* changes nothing (GET, and POST /qrCode: an image, nothing stored) */
    API_WRITES          /* creates, changes or deletes something */
} api_access;

typedef struct {
    const char *method;         /* "GET", "POST", ...; GET also answers HEAD */
    const char *pattern;        /* '*' is one path segment, '#' one of digits only */
    api_access access;
    qrt_handler_fn *handler;
    const char *query;          /* the parameters of a route whose parameters select what
                                 * it answers (qrt_params_known: any other is 422, as a
                                 * typo widened the answer); NULL: not checked */
} api_route;

/* The query parameters of the image endpoints, of windows, of pages. (The CSV export
 * takes a listing's page and rows, and ignores them: a listing's query may be reused.) */
#define Q_IMAGE  "format size size_mm margin ecc style fg bg"
#define Q_WINDOW "visit_start visit_start_end"
#define Q_PAGE   "page rows"

/* The API: the spec's endpoints (numbered as in the spec) and CONTRACT's extras. */
static const api_route api_routes[] = {
    { "POST",   "/tracker/qrcode",                API_WRITES, qrt_tracker_qrcode, NULL }, /* 1 */
    { "GET",    "/tracker",                       API_READS,  qrt_tracker_list, NULL },  /* 2 */
    { "POST",   "/tracker",                       API_WRITES, qrt_tracker_create, NULL }, /* 3 */
    { "POST",   "/tracker/bulk",                  API_WRITES, qrt_tracker_bulk, NULL },
    { "GET",    "/tracker/show/*",                API_READS,  qrt_tracker_show, NULL },  /* 4 */
    { "GET",    "/tracker/analytics/*",           API_READS,  qrt_tracker_analytics, NULL }, /* 5 */
    { "GET",    "/report",                        API_READS,  qrt_report_show,             /* 6 */
      "report trackers[] " Q_WINDOW },
    { "GET",    "/report/tag-crosstab",           API_READS,  qrt_report_crosstab_show,    /* 7 */
      "row col trackers[] " Q_WINDOW },
    { "GET",    "/dashboard/scansAnalytics",      API_READS,  qrt_dashboard_scans,         /* 8 */
      "trackers[] dateStart dateEnd compare" },
    /* the same three with their parameters in the body (long tracker lists) */
    { "POST",   "/report",                        API_READS,  qrt_report_post,
      "report trackers[] " Q_WINDOW },
    { "POST",   "/report/tag-crosstab",           API_READS,  qrt_report_crosstab_post,
      "row col trackers[] " Q_WINDOW },
    { "POST",   "/dashboard/scansAnalytics",      API_READS,  qrt_dashboard_scans_post,
      "trackers[] dateStart dateEnd compare" },
    { "GET",    "/visits/tracker/*",              API_READS,  qrt_visits_list,             /* 9 */
      Q_WINDOW " " Q_PAGE " search since_id" },
    { "GET",    "/visits/tracker/*/download/csv", API_READS,  qrt_visits_csv,              /* 10 */
      Q_WINDOW " search since_id page rows" },
    { "POST",   "/qrCode",                        API_READS,  qrt_qrcode_plain, NULL },  /* 11 */
    { "GET",    "/account",                       API_READS,  qrt_account_show, NULL },
    { "PATCH",  "/tracker/#",                     API_WRITES, qrt_tracker_update, NULL },
    { "DELETE", "/tracker/#",                     API_WRITES, qrt_tracker_delete, NULL },
    { "GET",    "/tracker/#/qrcode",              API_READS,  qrt_tracker_image, NULL },
    { "GET",    "/tracker/#/history",             API_READS,  qrt_tracker_history, NULL },
    { "GET",    "/tracker/qrcodes",               API_READS,  qrt_image_zip,
      "trackers[] tag " Q_IMAGE },
    { "POST",   "/style",                         API_WRITES, qrt_style_create, NULL },
    { "GET",    "/style",                         API_READS,  qrt_style_list, NULL },
    { "GET",    "/style/*",                       API_READS,  qrt_style_show, NULL },
    { "DELETE", "/style/*",                       API_WRITES, qrt_style_delete, NULL },
    { "POST",   "/webhook",                       API_WRITES, qrt_webhook_create, NULL },
    { "GET",    "/webhook",                       API_READS,  qrt_webhook_list, NULL },
    { "GET",    "/webhook/#",                     API_READS,  qrt_webhook_show, NULL },
    { "PATCH",  "/webhook/#",                     API_WRITES, qrt_webhook_update, NULL },
    { "DELETE", "/webhook/#",                     API_WRITES, qrt_webhook_delete, NULL },
    { "POST",   "/webhook/#/secret",              API_WRITES, qrt_webhook_secret, NULL },
    { "POST",   "/webhook/#/recover",             API_WRITES, qrt_webhook_recover, NULL },
    { "POST",   "/webhook/#/test",                API_WRITES, qrt_webhook_test, NULL },
    { "GET",    "/webhook/#/deliveries",          API_READS,  qrt_webhook_deliveries, NULL },
    { NULL, NULL, API_READS, NULL, NULL }
};

static int api_write_error(qrt_req_t *q, qrt_err_t *e)
{
    request_rec *r = q->r;
    json_t *body = json_object();

    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, "QRT00062: %s %s: %d %s", r->method,
                  q->path ? q->path : "", e->status, e->message);
    if (e->status == AP_FILTER_ERROR) {
        /* httpd's input filter has sent its own error response: one per request. */
        return AP_FILTER_ERROR;
    }
    json_object_set_new(body, "message", json_string(e->message));
    if (e->errors) {
        json_object_set(body, "errors", e->errors);
    }
    if (e->allow) {
        apr_table_setn(r->err_headers_out, "Allow", e->allow);
    }
    if (e->retry_after > 0) {
        apr_table_setn(r->err_headers_out, "Retry-After",
                       apr_ltoa(r->pool, e->retry_after));
    }
    if (e->status == HTTP_REQUEST_ENTITY_TOO_LARGE) {
        /* The rest of the body stays unread: do not reuse the connection. */
        r->connection->keepalive = AP_CONN_CLOSE;
    }
    qrt_respond_json(q, e->status, body);
    return OK;
}

const char *qrt_api_prefix(void)
{
    return qrt_config()->api_prefix;
}

/* The path below the API's <Location>, without a trailing slash. */
static const char *api_path(request_rec *r)
{
    const char *path = r->uri;
    const apr_array_header_t *api_prefixes = qrt_config()->api_prefixes;
    apr_size_t n, best = 0;
    int i;

    for (i = 0; api_prefixes && i < api_prefixes->nelts; i++) {
        const char *pre = APR_ARRAY_IDX(api_prefixes, i, const char *);

        n = strlen(pre);
        if (n > best && n > 1 && !strncmp(path, pre, n)
            && (path[n] == '/' || path[n] == '\0')) {
            best = n;
        }
    }
    path += best;
    n = strlen(path);
    while (n > 1 && path[n - 1] == '/') {
        n--;
    }
    return n ? apr_pstrndup(r->pool, path, n) : "/";
}

/* Reads the whole body, at most max bytes. */
static qrt_err_t *api_read_body(qrt_req_t *q, char **buf, apr_size_t *len)
{
    apr_off_t max = q->conf->max_body;
    int by_httpd = 0;
    int status = qrt_http_read_body(q->r, max, buf, len, &by_httpd);

    if (status == OK) {
        return NULL;
    }
    if (status == HTTP_REQUEST_ENTITY_TOO_LARGE && !by_httpd) {
        return qrt_error(q, status, apr_psprintf(q->r->pool, "The request body is larger "
                                                 "than %" APR_OFF_T_FMT " bytes.", max));
    }
    return qrt_error(q, status, status == HTTP_REQUEST_ENTITY_TOO_LARGE
                     ? "The request body is too large."
                     : "The request body could not be read.");
}

/* Parses the body by its Content-Type into q->json or q->form. */
static qrt_err_t *api_parse_body(qrt_req_t *q, const char *buf, apr_size_t len)
{
    request_rec *r = q->r;
    const char *ct = apr_table_get(r->headers_in, "Content-Type");
    const char *err = NULL;

    /* (an empty CSV body too: its 422 names the CSV, not a JSON field) */
    if (qrt_form_type_is(ct, "text/csv") && !strcmp(q->path, "/tracker/bulk")) {
        q->csv = 1;
        return NULL;
    }
    if (!buf || len == 0) {
        return NULL;
    }
    if (!ct || qrt_form_type_is(ct, "application/json")) {
        json_t *j = qrt_json_parse(r->pool, buf, len, &err);

        if (!j) {
            return qrt_error(q, HTTP_BAD_REQUEST,
                             apr_pstrcat(r->pool, "Malformed JSON body: ", err, NULL));
        }
        if (!json_is_object(j)) {
            return qrt_error(q, HTTP_BAD_REQUEST, "The JSON body must be an object.");
        }
        q->json = j;
        return NULL;
    }
    if (qrt_form_type_is(ct, "application/x-www-form-urlencoded")) {
        apr_status_t rv;

        q->form = apr_table_make(r->pool, 8);
        rv = qrt_form_urlencoded_max(r->pool, buf, len, QRT_FORM_FIELDS_MAX, q->form, &err);
        if (rv == APR_ENOSPC) {
            q->form = NULL;
            return qrt_error(q, HTTP_REQUEST_ENTITY_TOO_LARGE, apr_psprintf(r->pool,
                             "Form body too large: %s (at most %d).", err,
                             QRT_FORM_FIELDS_MAX));
        }
        if (rv != APR_SUCCESS) {
            q->form = NULL;
            return qrt_error(q, HTTP_BAD_REQUEST,
                             apr_pstrcat(r->pool, "Malformed form body: ", err, NULL));
        }
        return NULL;
    }
    if (qrt_form_type_is(ct, "multipart/form-data")) {
        qrt_multipart_limits_t lim;
        qrt_multipart_t *mp;
        apr_status_t rv;
        /* POST /style: the file part "logo" holds a PNG's bytes (NULs and all). */
        const char *file = !strcmp(q->path, "/style") ? QRT_STYLE_LOGO_FIELD : NULL;
        const char *data = NULL;
        apr_size_t dlen = 0;

        qrt_multipart_limits_default(&lim);
        if (file) {
            lim.max_part_size = QRT_STYLE_PART_MAX;
        }
        mp = qrt_multipart_create(r->pool, ct, &lim, &err);
        if (!mp) {
            return qrt_error(q, HTTP_BAD_REQUEST,
                             apr_pstrcat(r->pool, "Malformed multipart body: ", err, NULL));
        }
        q->form = apr_table_make(r->pool, 8);
        rv = qrt_multipart_feed(mp, buf, len, &err);
        if (rv == APR_SUCCESS) {
            rv = qrt_multipart_finish_file(mp, q->form, file, &data, &dlen, &err);
        }
        if (rv == APR_SUCCESS && data) {
            /* kept as the base64 a JSON body would carry: one way to read it */
            char *b64 = apr_palloc(r->pool, apr_base64_encode_len((int)dlen));

            apr_base64_encode_binary(b64, (const unsigned char *)data, (int)dlen);
            apr_table_setn(q->form, QRT_STYLE_LOGO_FIELD, b64);
        }
        if (rv == APR_ENOSPC) {
            q->form = NULL;
            return qrt_error(q, HTTP_REQUEST_ENTITY_TOO_LARGE, apr_psprintf(r->pool,
                             "Multipart body too large: %s (at most %" APR_SIZE_T_FMT
                             " parts of at most %" APR_SIZE_T_FMT " bytes each, with at "
                             "most %" APR_SIZE_T_FMT " bytes of headers).", err,
                             lim.max_parts, lim.max_part_size, lim.max_header_size));
        }
        if (rv != APR_SUCCESS) {
            q->form = NULL;
            return qrt_error(q, HTTP_BAD_REQUEST,
                             apr_pstrcat(r->pool, "Malformed multipart body: ", err, NULL));
        }
        return NULL;
    }
    if (!strcmp(q->path, "/tracker/bulk")) {
        return qrt_error(q, HTTP_UNSUPPORTED_MEDIA_TYPE, "Unsupported Content-Type: send "
                         "application/json or text/csv.");
    }
    return qrt_error(q, HTTP_UNSUPPORTED_MEDIA_TYPE, "Unsupported Content-Type: send "
                     "application/json, application/x-www-form-urlencoded or "
                     "multipart/form-data.");
}

/* ---- authentication ---------------------------------------------------- */

/* The presented token: Authorization: Bearer, then ?api_token=, then the body. */
static const char *api_token(qrt_req_t *q)
{
    const char *h = apr_table_get(q->r->headers_in, "Authorization");

    if (h && !strncasecmp(h, "Bearer", 6) && (h[6] == ' ' || h[6] == '\t')) {
        h += 7;
        while (*h == ' ' || *h == '\t') {
            h++;
        }
        return *h ? h : NULL;
    }
    if (qrt_query(q, "api_token")) {
        return qrt_query(q, "api_token");
    }
    return qrt_body_str(q, "api_token");
}

static qrt_err_t *api_authenticate(qrt_req_t *q)
{
    const char *token = api_token(q);
    apr_status_t rv;

    if (!token || !qrt_token_plausible(token)) {
        return qrt_error(q, HTTP_UNAUTHORIZED, "Unauthenticated.");
    }
    rv = qrt_store_token_auth(&q->db, q->r->pool, qrt_token_digest(q->r->pool, token),
                              &q->auth);
    if (rv == APR_NOTFOUND) {
        return qrt_error(q, HTTP_UNAUTHORIZED, "Unauthenticated.");
    }
    if (rv != APR_SUCCESS) {
        return qrt_error_store(q, "authenticating");
    }
    q->r->user = apr_psprintf(q->r->pool, "%s#%" APR_INT64_T_FMT,
                              q->auth.account_name, q->auth.token_id);
    return NULL;
}

/* ---- routing ------------------------------------------------------------ */

/* Matches path against pattern, filling seg with the '*' segments. */
static int api_match(apr_pool_t *p, const char *pattern, const char *path,
                     const char **seg)
{
    int n = 0;

    while (*pattern && *path) {
        if (*pattern == '*' || *pattern == '#') {
            const char *end = strchr(path, '/');
            apr_size_t len = end ? (apr_size_t)(end - path) : strlen(path);

            if (len == 0 || n >= API_MAX_SEGMENTS
                || (*pattern == '#' && strspn(path, "0123456789") != len)) {
                return 0;
            }
            seg[n++] = apr_pstrndup(p, path, len);
            path += len;
            pattern++;
        }
        else if (*pattern++ != *path++) {
            return 0;
        }
    }
    seg[n] = NULL;
    return *pattern == '\0' && *path == '\0';
}

/* 403 for a read-only token on a route that writes, before its body is looked at. */
static qrt_err_t *api_scope_check(qrt_req_t *q)
{
    request_rec *r = q->r;
    const char **seg = apr_pcalloc(r->pool, (API_MAX_SEGMENTS + 1) * sizeof(char *));
    const char *method = r->header_only ? "GET" : r->method;
    int i;

    if (!q->auth.read_only) {
        return NULL;
    }
    for (i = 0; api_routes[i].method; i++) {
        if (api_routes[i].access != API_READS && !strcmp(api_routes[i].method, method)
            && api_match(r->pool, api_routes[i].pattern, q->path, seg)) {
            ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, "QRT00990: %s %s: refused to "
                          "read-only token #%" APR_INT64_T_FMT, method, q->path,
                          q->auth.token_id);
            return qrt_error(q, HTTP_FORBIDDEN, "This token is read-only.");
        }
    }
    return NULL;
}

/* The route of q's method and path (*route its index, q->seg its segments), or the 404
 * or 405 the request gets: told before anything its body holds is. */
static qrt_err_t *api_route_find(qrt_req_t *q, int *route)
{
    request_rec *r = q->r;
    const char **seg = apr_pcalloc(r->pool, (API_MAX_SEGMENTS + 1) * sizeof(char *));
    const char *method = r->header_only ? "GET" : r->method;
    const char *allow = NULL;
    int i;

    for (i = 0; api_routes[i].method; i++) {
        if (!api_match(r->pool, api_routes[i].pattern, q->path, seg)) {
            continue;
        }
        if (!strcmp(api_routes[i].method, method)) {
            q->seg = seg;
            *route = i;
            return NULL;
        }
        allow = allow ? apr_pstrcat(r->pool, allow, ", ", api_routes[i].method, NULL)
                      : api_routes[i].method;
        if (!strcmp(api_routes[i].method, "GET")) {
            allow = apr_pstrcat(r->pool, allow, ", HEAD", NULL);
        }
    }
    if (allow) {
        qrt_err_t *e = qrt_error(q, HTTP_METHOD_NOT_ALLOWED, apr_psprintf(r->pool,
                                 "The %s method is not supported for this route. "
                                 "Supported methods: %s.", r->method, allow));
        e->allow = allow;
        return e;
    }
    return qrt_error(q, HTTP_NOT_FOUND, "Not Found.");
}

/* Reads q's body into q->body (an error when it cannot be read: too large, cut short)
 * and parses it (*body_err: what is wrong with it, told after the checks before it). */
static qrt_err_t *api_take_body(qrt_req_t *q, qrt_err_t **body_err)
{
    char *body = NULL;
    apr_size_t len = 0;
    qrt_err_t *e = api_read_body(q, &body, &len);

    if (e) {
        return e;
    }
    q->body = len ? body : NULL;
    q->body_len = len;
    *body_err = api_parse_body(q, body, len);
    return NULL;
}

static qrt_err_t *api_serve(qrt_req_t *q)
{
    request_rec *r = q->r;
    ap_dbd_t *dbd;
    qrt_err_t *e, *body_err = NULL;
    int early;
    const char *err;
    const char *args = r->args;
    int route = -1;

    if (args) {
        q->query = apr_table_make(r->pool, 8);
        apr_status_t rv = qrt_form_urlencoded_max(r->pool, args, strlen(args),
                                                  QRT_QUERY_FIELDS_MAX, q->query, &err);

        if (rv == APR_ENOSPC) {
            q->query = NULL;
            return qrt_error(q, HTTP_BAD_REQUEST, apr_psprintf(r->pool,
                             "Too many query parameters: %s (at most %d).", err,
                             QRT_QUERY_FIELDS_MAX));
        }
        if (rv != APR_SUCCESS) {
            q->query = NULL;
            return qrt_error(q, HTTP_BAD_REQUEST,
                             apr_pstrcat(r->pool, "Malformed query string: ", err, NULL));
        }
    }
    /* A client that waits for "100 Continue" before it sends its body, with its token in
     * the header or the query, is answered 401, 429, 403, 404 or 405 first: it was told
     * to go on, sent its megabyte, then got them. (Otherwise the body is read first,
     * before a database connection is taken: it may hold the token.) */
    early = r->expecting_100 && api_token(q) != NULL;
    /* (a body that does not parse may still not be authenticated: 401 first) */
    if (!early && (e = api_take_body(q, &body_err)) != NULL) {
        return e;
    }

    /* While the database is known to be unreachable, mod_dbd is not asked (each
     * refusal of its costs two error lines); the keeper probes it meanwhile. */
    dbd = qrt_db_down() ? NULL : qrt_dbd_acquire(r);
    if (!dbd) {
        if (!qrt_db_down()) {
            e = qrt_error_no_db(q);
            qrt_db_mark_down(r->server, "mod_dbd has no connection");
            return e;
        }
        return qrt_error_unavailable(q, "Database unavailable.");
    }
    q->db.driver = dbd->driver;
    q->db.handle = dbd->handle;
    q->db.prepared = dbd->prepared;
    q->db.pool = dbd->pool;

    if ((e = api_authenticate(q)) != NULL) {
        return e;
    }
    if ((e = qrt_rate_check(q)) != NULL) {
        return e;
    }
    if (!qrt_plan_has_api(q->auth.plan)) {
        return qrt_error(q, HTTP_FORBIDDEN, apr_psprintf(r->pool,
                         "API access requires the Professional or Enterprise plan; "
                         "this account is on the %s plan.", q->auth.plan));
    }
    if ((e = api_scope_check(q)) != NULL) {
        return e;
    }
    /* (a method the path does not take is 405 with Allow, an unknown path 404, whatever
     * the body: a wrong body of a wrong request said 400 or 415) */
    if ((e = api_route_find(q, &route)) != NULL) {
        return e;
    }
    if (early && (e = api_take_body(q, &body_err)) != NULL) {
        return e;
    }
    if (body_err) {
        return body_err;
    }
    if ((e = qrt_params_once(q, q->query)) != NULL || (e = qrt_params_once(q, q->form)) != NULL) {
        return e;
    }
    q->params = api_routes[route].query;
    if ((e = qrt_params_known(q)) != NULL) {
        return e;
    }
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, "QRT00061: %s %s: route %s, account %s, "
                  "token #%" APR_INT64_T_FMT, r->header_only ? "GET" : r->method, q->path,
                  api_routes[route].pattern, q->auth.account_name, q->auth.token_id);
    return api_routes[route].handler(q);
}

/* ---- no token: OPTIONS, CORS -------------------------------------------- */

#define API_CORS_HEADERS "Authorization, Content-Type, If-None-Match, Idempotency-Key"
#define API_CORS_EXPOSE  "Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, " \
                         "X-RateLimit-Reset, ETag, Content-Disposition, Allow, " \
                         "Idempotent-Replayed, X-Tracker-Id"
#define API_CORS_MAX_AGE "600"

/* The methods q->path answers ("GET, HEAD, POST"), or NULL when no route has it. */
static const char *api_methods(qrt_req_t *q)
{
    request_rec *r = q->r;
    const char **seg = apr_pcalloc(r->pool, (API_MAX_SEGMENTS + 1) * sizeof(char *));
    const char *allow = NULL;
    int i;

    if (!strcmp(q->path, "/openapi.json") || !strcmp(q->path, "/health")) {
        return "GET, HEAD";
    }
    for (i = 0; api_routes[i].method; i++) {
        if (!api_match(r->pool, api_routes[i].pattern, q->path, seg)) {
            continue;
        }
        allow = allow ? apr_pstrcat(r->pool, allow, ", ", api_routes[i].method, NULL)
                      : api_routes[i].method;
        if (!strcmp(api_routes[i].method, "GET")) {
            allow = apr_pstrcat(r->pool, allow, ", HEAD", NULL);
        }
    }
    return allow;
}

/* QRTrackCORSOrigin: when the request's Origin is allowed, the headers that let
 * the page read the answer (on errors too). */
static const char *api_cors(qrt_req_t *q)
{
    request_rec *r = q->r;
    const apr_array_header_t *allowed = q->conf->cors_origins;
    const char *origin = apr_table_get(r->headers_in, "Origin");
    const char *ok = NULL;
    int i;

    if (!allowed || allowed->nelts == 0) {
        return NULL;
    }
    apr_table_mergen(r->err_headers_out, "Vary", "Origin");
    if (!origin) {
        return NULL;
    }
    for (i = 0; i < allowed->nelts && !ok; i++) {
        const char *a = APR_ARRAY_IDX(allowed, i, const char *);

        if (!strcmp(a, "*")) {
            ok = "*";
        }
        else if (!strcasecmp(a, origin)) {
            ok = origin;
        }
    }
    if (ok) {
        apr_table_setn(r->err_headers_out, "Access-Control-Allow-Origin", ok);
        apr_table_setn(r->err_headers_out, "Access-Control-Expose-Headers",
                       API_CORS_EXPOSE);
    }
    return ok;
}

/* OPTIONS needs no token: 204 with Allow, and for a CORS preflight from an
 * allowed origin what the page may send. */
static qrt_err_t *api_options(qrt_req_t *q, const char *origin)
{
    request_rec *r = q->r;
    const char *methods = api_methods(q);

    if (!methods) {
        return qrt_error(q, HTTP_NOT_FOUND, "Not Found.");
    }
    methods = apr_pstrcat(r->pool, methods, ", OPTIONS", NULL);
    apr_table_setn(r->err_headers_out, "Allow", methods);
    if (origin && apr_table_get(r->headers_in, "Access-Control-Request-Method")) {
        apr_table_setn(r->err_headers_out, "Access-Control-Allow-Methods", methods);
        apr_table_setn(r->err_headers_out, "Access-Control-Allow-Headers",
                       API_CORS_HEADERS);
        apr_table_setn(r->err_headers_out, "Access-Control-Max-Age", API_CORS_MAX_AGE);
    }
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, "QRT00070: OPTIONS %s: %s%s", q->path,
                  methods, origin ? " (CORS)" : "");
    r->status = HTTP_NO_CONTENT;
    return NULL;
}

int qrt_api_handler(request_rec *r)
{
    qrt_req_t *q;
    qrt_err_t *e;
    const char *origin;

    if (!r->handler || strcmp(r->handler, "qrtrack-api")) {
        return DECLINED;
    }
    q = apr_pcalloc(r->pool, sizeof(*q));
    q->r = r;
    q->conf = ap_get_module_config(r->server->module_config, &qrtrack_module);
    q->path = api_path(r);
    apr_table_setn(r->err_headers_out, "Cache-Control", "no-store");
    /* (an answer opened in a browser with ?api_token= sends no Referer from its links) */
    apr_table_setn(r->err_headers_out, "Referrer-Policy", "no-referrer");
    origin = api_cors(q);
    /* OPTIONS, the API's description and its health need no token and are not
     * counted. */
    if (r->method_number == M_OPTIONS) {
        e = api_options(q, origin);
    }
    else if (!strcmp(q->path, "/openapi.json")) {
        e = qrt_openapi_show(q);
    }
    else if (!strcmp(q->path, "/health")) {
        e = qrt_health_show(q);
    }
    else {
        e = api_serve(q);
    }
    if (e) {
        return api_write_error(q, e);
    }
    return OK;
}

