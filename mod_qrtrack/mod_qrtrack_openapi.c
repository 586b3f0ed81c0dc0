/* mod_qrtrack_openapi: GET <api>/openapi.json, the OpenAPI 3.1 document of the API
 * (openapi/qrtrack.json, embedded at build time by tools/embed_files.sh).
 *
 * It needs no token and is not counted by the rate limiter: the API handler sends
 * the path here before authenticating. Its `servers` names this API's own path. */
#include <string.h>
#include <apr_strings.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_http.h"
#include "mod_qrtrack_openapi.h"
#include "qrt_assets.h"
#include "qrt_json.h"

APLOG_USE_MODULE(qrtrack);

#define OPENAPI_ASSET "qrtrack.json"

/* The API's path as this request reached it: r->uri without "/openapi.json". */
static const char *openapi_prefix(qrt_req_t *q)
{
    const char *uri = q->r->uri;
    apr_size_t n = strlen(uri), tail = strlen(q->path);

    while (n > 1 && uri[n - 1] == '/') {
        n--;
    }
    n = n > tail ? n - tail : 0;
    return n ? apr_pstrndup(q->r->pool, uri, n) : "/";
}

qrt_err_t *qrt_openapi_show(qrt_req_t *q)
{
    request_rec *r = q->r;
    const qrt_asset_t *a = qrt_asset_find(OPENAPI_ASSET);
    const char *err = NULL;
    json_t *doc, *servers, *server;
    apr_size_t len;
    char *body;

    if (r->method_number != M_GET) {
        qrt_err_t *e = qrt_error(q, HTTP_METHOD_NOT_ALLOWED, apr_psprintf(r->pool,
                                 "The %s method is not supported for this route. "
                                 "Supported methods: GET, HEAD.", r->method));
        e->allow = "GET, HEAD";
        return e;
    }
    doc = a ? qrt_json_parse(r->pool, (const char *)a->data, a->len, &err) : NULL;
    if (!doc || !json_is_object(doc)) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, "QRT00601: the embedded OpenAPI "
                      "document does not parse: %s", err ? err : "missing");
        return qrt_error(q, HTTP_INTERNAL_SERVER_ERROR, "Server Error");
    }
    server = json_object();
    json_object_set_new(server, "url", json_string(openapi_prefix(q)));
    json_object_set_new(server, "description", json_string("This server's API."));
    servers = json_array();
    json_array_append_new(servers, server);
    json_object_set_new(doc, "servers", servers);
    body = qrt_json_dump(r->pool, doc, &len);
    /* Public and the same for every caller: tools elsewhere may read it. */
    apr_table_setn(r->err_headers_out, "Cache-Control", "no-cache");
    apr_table_setn(r->err_headers_out, "Access-Control-Allow-Origin", "*");
    return qrt_respond_bytes(q, HTTP_OK, "application/json; charset=utf-8", body, len);
}
