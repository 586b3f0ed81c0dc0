/* mod_qrtrack: httpd's own error pages, on the API's paths, as the API's JSON errors.
 *
 * Some requests are refused by httpd before any handler runs: a header too long, no
 * Host, a bad Content-Length or Transfer-Encoding (400), an encoded NUL or slash in the
 * path (404), TRACE with TraceEnable off (405), a body past LimitRequestBody (413).
 * httpd answers them with an HTML page. Under a <Location> whose SetHandler is
 * qrtrack-api, the client is an API client that reads {"message": ...}: the page is
 * replaced by a PlainError with the status's reason phrase. The status, the headers
 * httpd sets (Allow, Connection: close) and an ErrorDocument the administrator set for
 * the status are kept. A request line too long to read (414) names no path, and keeps
 * httpd's page.
 *
 * Whether a refused request's path is the API's: many are refused before the location
 * walk, so it is walked here (ap_location_walk; its result is kept for an API path
 * only), and the handler the request's <Location> sets is evaluated as the
 * translate_name hook does.
 */
#include <string.h>
#include <apr_strings.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_errpage.h"
#include "http_core.h"
#include "http_protocol.h"
#include "http_request.h"
#include "mod_core.h"

APLOG_USE_MODULE(qrtrack);

#define ERRPAGE_FILTER "QRTRACK_JSON_ERROR"

static ap_filter_rec_t *errpage_filter_handle;

/* Whether r's <Location> sets SetHandler qrtrack-api. The walk's configuration is kept
 * only then: another application's refused request keeps the one httpd gave it. */
static int errpage_is_api(request_rec *r)
{
    struct ap_conf_vector_t *before = r->per_dir_config;
    core_dir_config *d;
    const char *h = NULL, *err = NULL;

    if (!r->uri || r->uri[0] != '/' || ap_location_walk(r) != OK) {
        r->per_dir_config = before;
        return 0;
    }
    d = ap_get_core_module_config(r->per_dir_config);
    if (d && d->expr_handler) {
        h = ap_expr_str_exec(r, d->expr_handler, &err);
    }
    if (h && !err && !strcmp(h, "qrtrack-api")) {
        return 1;
    }
    r->per_dir_config = before;
    return 0;
}

static void errpage_insert(request_rec *r)
{
    /* (after the walk, whose <Location> may set an ErrorDocument: one of the
     * administrator's for the status is theirs to keep) */
    if (r->status < 400 || !errpage_is_api(r)
        || ap_response_code_string(r, ap_index_of_response(r->status))) {
        return;
    }
    ap_add_output_filter_handle(errpage_filter_handle, NULL, r, r->connection);
}

/* The error page's body dropped, {"message": "<reason phrase>."} sent instead (once:
 * the filter then passes only what is not data, EOS among it). */
static apr_status_t errpage_filter(ap_filter_t *f, apr_bucket_brigade *bb)
{
    request_rec *r = f->r;
    apr_bucket *b, *next;

    if (!f->ctx) {
        const char *line = ap_get_status_line(r->status);
        const char *reason = strchr(line, ' ');
        char *body = apr_psprintf(r->pool, "{\"message\":\"%s.\"}\n",
                                  reason ? reason + 1 : "Error");
        apr_bucket *json = apr_bucket_pool_create(body, strlen(body), r->pool,
                                                  f->c->bucket_alloc);

        f->ctx = f;
        ap_set_content_type(r, "application/json; charset=utf-8");
        apr_table_unset(r->headers_out, "Content-Length");
        for (b = APR_BRIGADE_FIRST(bb); b != APR_BRIGADE_SENTINEL(bb); b = next) {
            next = APR_BUCKET_NEXT(b);
            if (!APR_BUCKET_IS_METADATA(b)) {
                apr_bucket_delete(b);
            }
        }
        APR_BRIGADE_INSERT_HEAD(bb, json);
        return ap_pass_brigade(f->next, bb);
    }
    for (b = APR_BRIGADE_FIRST(bb); b != APR_BRIGADE_SENTINEL(bb); b = next) {
        next = APR_BUCKET_NEXT(b);
        if (!APR_BUCKET_IS_METADATA(b)) {
            apr_bucket_delete(b);
        }
    }
    return APR_BRIGADE_EMPTY(bb) ? APR_SUCCESS : ap_pass_brigade(f->next, bb);
}

void qrt_errpage_register(void)
{
    errpage_filter_handle = ap_register_output_filter(ERRPAGE_FILTER, errpage_filter, NULL,
                                                      AP_FTYPE_CONTENT_SET);
    ap_hook_insert_error_filter(errpage_insert, NULL, NULL, APR_HOOK_MIDDLE);
}
