/* mod_qrtrack_dashboard: the qrtrack-dashboard handler, the analysts' web page.
 *
 *   <Location /qrtrack>
 *       SetHandler qrtrack-dashboard
 *   </Location>
 *
 * serves the page at /qrtrack/ and its script, style and icon beside it, all
 * embedded at build time (dashboard/ -> build/gen/qrt_assets.c). The page calls
 * the JSON API (its path, learnt at start-up, is written into the page) with the
 * token the analyst signs in with; this handler keeps no session and reads no
 * token. Nothing is loaded from elsewhere: the Content-Security-Policy says so. */
#include <string.h>
#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "http_protocol.h"
#include "http_request.h"
#include <apr_strings.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_api.h"
#include "mod_qrtrack_dashboard.h"
#include "qrt_assets.h"
#include "qrt_etag.h"

APLOG_USE_MODULE(qrtrack);

#define DASH_INDEX "index.html"
#define DASH_API_MARK "@QRTRACK_API@"

/* The dashboard's own files (the only assets this handler serves). */
static const char *const dash_files[] = {
    DASH_INDEX, "app.js", "app.css", "favicon.svg", NULL
};

static const qrt_asset_t *dash_asset(const char *name)
{
    int i;

    for (i = 0; dash_files[i]; i++) {
        if (!strcmp(dash_files[i], name)) {
            return qrt_asset_find(name);
        }
    }
    return NULL;
}

/* The page with the API's path written in where it is marked. */
static const char *dash_index(request_rec *r, const qrt_asset_t *a, apr_size_t *len)
{
    const char *page = (const char *)a->data;
    const char *mark = strstr(page, DASH_API_MARK);
    char *out;

    if (!mark) {
        *len = a->len;
        return page;
    }
    out = apr_pstrcat(r->pool, apr_pstrndup(r->pool, page, mark - page),
                      ap_escape_html(r->pool, qrt_api_prefix()),
                      mark + strlen(DASH_API_MARK), NULL);
    *len = strlen(out);
    return out;
}

static void dash_headers(request_rec *r)
{
    apr_table_t *h = r->headers_out;

    apr_table_setn(h, "Content-Security-Policy", "default-src 'none'; script-src 'self'; "
                   "style-src 'self'; img-src 'self'; connect-src 'self'; "
                   "base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    apr_table_setn(h, "X-Content-Type-Options", "nosniff");
    apr_table_setn(h, "Referrer-Policy", "no-referrer");
    apr_table_setn(h, "Cache-Control", "no-cache");
}

int qrt_dashboard_handler(request_rec *r)
{
    const char *slash, *name, *body;
    const qrt_asset_t *a;
    apr_bucket_brigade *bb;
    apr_size_t len;
    int rc, is_index;

    if (!r->handler || strcmp(r->handler, "qrtrack-dashboard")) {
        return DECLINED;
    }
    ap_allow_standard_methods(r, REPLACE_ALLOW, M_GET, -1);
    if (r->method_number != M_GET) {
        return HTTP_METHOD_NOT_ALLOWED;
    }
    slash = strrchr(r->uri, '/');
    name = slash ? slash + 1 : r->uri;
    if (!*name) {
        name = DASH_INDEX;
    }
    a = dash_asset(name);
    if (!a) {
        if (strchr(name, '.') || !slash) {
            return HTTP_NOT_FOUND;
        }
        /* /qrtrack -> /qrtrack/: the page's files are named relative to it. A path,
         * not a URL: nothing taken from the request's Host header. */
        apr_table_setn(r->headers_out, "Location",
                       apr_pstrcat(r->pool, ap_escape_uri(r->pool, r->uri), "/",
                                   r->args ? "?" : "", r->args ? r->args : "", NULL));
        return HTTP_MOVED_PERMANENTLY;
    }
    is_index = !strcmp(a->name, DASH_INDEX);
    if (is_index) {
        body = dash_index(r, a, &len);
    }
    else {
        body = (const char *)a->data;
        len = a->len;
    }
    dash_headers(r);
    apr_table_setn(r->headers_out, "ETag", qrt_etag_make(r->pool, body, len));
    ap_set_content_type(r, a->type);
    rc = ap_meets_conditions(r);
    if (rc != OK) {
        return rc;
    }
    ap_set_content_length(r, len);
    bb = apr_brigade_create(r->pool, r->connection->bucket_alloc);
    if (!r->header_only) {
        /* The page is in the request's pool; the other files are static. */
        APR_BRIGADE_INSERT_TAIL(bb, is_index
                                ? apr_bucket_pool_create(body, len, r->pool, bb->bucket_alloc)
                                : apr_bucket_immortal_create(body, len, bb->bucket_alloc));
    }
    APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_eos_create(bb->bucket_alloc));
    if (ap_pass_brigade(r->output_filters, bb) != APR_SUCCESS) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, "QRT00602: client went away");
    }
    return OK;
}
