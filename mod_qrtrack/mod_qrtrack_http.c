/* mod_qrtrack_http: what every API handler answers with: error values (the one
 * store-error helper among them), JSON and byte bodies, and the request's parts. */
#include <string.h>
#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "http_protocol.h"
#include <apr_dbd.h>
#include "mod_dbd.h"
#include <apr_strings.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_config.h"
#include "mod_qrtrack_db.h"
#include "mod_qrtrack_http.h"
#include "mod_qrtrack_util.h"
#include "qrt_dblimit.h"
#include "qrt_json.h"
#include "qrt_valid.h"

APLOG_USE_MODULE(qrtrack);

/* ---- errors and responses -------------------------------------------- */

qrt_err_t *qrt_error(qrt_req_t *q, int status, const char *message)
{
    qrt_err_t *e = apr_pcalloc(q->r->pool, sizeof(*e));

    e->status = status;
    e->message = message;
    return e;
}

void qrt_error_add(qrt_req_t *q, qrt_err_t *e, const char *field, const char *msg)
{
    json_t *list;

    if (!e->errors) {
        e->errors = qrt_json_own(q->r->pool, json_object());
    }
    list = json_object_get(e->errors, field);
    if (!list) {
        list = json_array();
        json_object_set_new(e->errors, field, list);
    }
    json_array_append_new(list, json_string(msg));
}

qrt_err_t *qrt_error_field(qrt_req_t *q, int status, const char *field,
                           const char *msg)
{
    qrt_err_t *e = qrt_error(q, status, msg);

    qrt_error_add(q, e, field, msg);
    return e;
}

void qrt_error_collect(qrt_req_t *q, qrt_err_t **e, int status, const char *field,
                       const char *msg)
{
    if (!*e) {
        *e = qrt_error_field(q, status, field, msg);
        return;
    }
    qrt_error_add(q, *e, field, msg);
    (*e)->message = "The given data was invalid.";
}

/* A 503 the client may try again after Retry-After. */
qrt_err_t *qrt_error_unavailable(qrt_req_t *q, const char *message)
{
    qrt_err_t *e = qrt_error(q, HTTP_SERVICE_UNAVAILABLE, message);

    e->retry_after = QRT_DB_RETRY_AFTER;
    return e;
}

qrt_err_t *qrt_error_store(qrt_req_t *q, const char *what)
{
    const char *error = q->db.error ? q->db.error : "unknown";
    apr_uint32_t more = 0;

    if (qrt_db_timed_out(&q->db)) {
        /* A lock held elsewhere, or a statement longer than QRTrackStatementTimeout:
         * it was cancelled, nothing was changed. Logged at most every 10 s a child:
         * under such a lock every request would log. */
        if (qrt_log_due(qrt_ration(QRT_R_HTTP_TIMEOUT), &more)) {
            ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, q->r, "QRT00090: a statement "
                          "ran out of time (QRTrackStatementTimeout %d s) while %s: %s "
                          "(and %u more since this line was last logged)",
                          qrt_config()->statement_timeout, what, error, more);
        }
        return qrt_error_unavailable(q, "The database did not answer in time; try again "
                               "later.");
    }
    if (qrt_log_due(qrt_ration(QRT_R_HTTP_ERROR), &more)) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, q->r, "QRT00020: store error while %s: %s "
                      "(and %u more since this line was last logged)", what, error, more);
    }
    if (qrt_db_lost(&q->db) || (q->db.handle && apr_dbd_check_conn(q->db.driver,
                                  q->r->pool, q->db.handle) != APR_SUCCESS)) {
        /* The database went away (a restart, a network failure): try again later;
         * mod_dbd opens a new connection for the next request. */
        return qrt_error_unavailable(q, "Database unavailable.");
    }
    if (qrt_db_read_only(&q->db)) {
        /* A standby, or a database switched to read-only: nothing was changed. */
        return qrt_error_unavailable(q, "The database takes no changes now (it is "
                                     "read-only); try again later.");
    }
    if (qrt_db_busy_or_full(&q->db)) {
        /* A full disk, no connection slot left: nothing was changed; try again later. */
        return qrt_error_unavailable(q, "The database cannot take this request now; try "
                               "again later.");
    }
    return qrt_error(q, HTTP_INTERNAL_SERVER_ERROR, "Server Error");
}

qrt_err_t *qrt_error_no_db(qrt_req_t *q)
{
    qrt_dbd_refused(q->r);
    return qrt_error_unavailable(q, "Database unavailable.");
}

qrt_err_t *qrt_respond_bytes(qrt_req_t *q, int status, const char *type,
                             const char *buf, apr_size_t len)
{
    request_rec *r = q->r;
    apr_bucket_brigade *bb = apr_brigade_create(r->pool, r->connection->bucket_alloc);

    r->status = status;
    ap_set_content_type(r, type);
    ap_set_content_length(r, len);
    if (!r->header_only) {
        APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_pool_create(buf, len, r->pool,
                                                           bb->bucket_alloc));
    }
    APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_eos_create(bb->bucket_alloc));
    if (ap_pass_brigade(r->output_filters, bb) != APR_SUCCESS) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, "QRT00021: client went away");
    }
    return NULL;
}

qrt_err_t *qrt_respond_json(qrt_req_t *q, int status, json_t *j)
{
    apr_size_t len;
    char *body;

    qrt_json_own(q->r->pool, j);
    body = qrt_json_dump(q->r->pool, j, &len);
    return qrt_respond_bytes(q, status, QRT_JSON_TYPE, body, len);
}

/* The one place that writes an error body. */
/* ---- request parts ---------------------------------------------------- */

const char *qrt_query(qrt_req_t *q, const char *name)
{
    return q->query ? apr_table_get(q->query, name) : NULL;
}

const char *qrt_body_str(qrt_req_t *q, const char *name)
{
    if (q->json) {
        json_t *v = json_object_get(q->json, name);

        if (json_is_string(v)) {
            return json_string_value(v);
        }
        if (json_is_integer(v)) {
            return apr_psprintf(q->r->pool, "%" APR_INT64_T_FMT,
                                (apr_int64_t)json_integer_value(v));
        }
        if (json_is_real(v)) {
            return apr_psprintf(q->r->pool, "%.15g", json_real_value(v));
        }
        if (json_is_boolean(v)) {
            return json_is_true(v) ? "true" : "false";
        }
        return NULL;
    }
    return q->form ? apr_table_get(q->form, name) : NULL;
}

/* Messages about unknown fields in one answer. */
#define BODY_UNKNOWN_MAX 5

static int body_field_known(const char *const *known, const char *key)
{
    const char *const *k;

    if (!strcmp(key, "api_token")) {
        return 1;
    }
    for (k = known; *k; k++) {
        if (!strcmp(key, *k)) {
            return 1;
        }
    }
    return 0;
}

void qrt_body_fields_known(qrt_req_t *q, qrt_err_t **e, int status,
                           const char *const *known, const char *what)
{
    const char *key, *name, *msg;
    json_t *v;
    int n = 0;

    if (!q->json || !json_is_object(q->json)) {
        return;
    }
    json_object_foreach(q->json, key, v) {
        if (body_field_known(known, key) || n++ >= BODY_UNKNOWN_MAX) {
            continue;
        }
        name = qrt_valid_utf8_clean(q->r->pool, key, strlen(key), 64);
        msg = apr_psprintf(q->r->pool, "Unknown field '%s': it is not a field of %s.", name,
                           what);
        qrt_error_collect(q, e, status, name, msg);
    }
}

const char *qrt_public_base(qrt_req_t *q)
{
    request_rec *r = q->r;
    server_rec *s = r->server;
    const char *scheme = ap_http_scheme(r);
    apr_port_t port, fallback;

    if (q->conf->public_url) {
        return q->conf->public_url;
    }
    /* The virtual host's own name, never the request's Host header (which anyone
     * can set): its ServerName's port, else the port the connection came in on. */
    fallback = ap_default_port(r);
    port = s->port ? s->port
                   : (r->connection->local_addr ? r->connection->local_addr->port
                                                : fallback);
    if (port == fallback) {
        return apr_pstrcat(r->pool, scheme, "://", s->server_hostname, NULL);
    }
    return apr_psprintf(r->pool, "%s://%s:%u", scheme, s->server_hostname,
                        (unsigned)port);
}

int qrt_http_read_body(request_rec *r, apr_off_t max, char **buf, apr_size_t *len,
                       int *by_httpd)
{
    const char *cl = apr_table_get(r->headers_in, "Content-Length");
    apr_bucket_brigade *bb;
    apr_size_t cap = 8192, n = 0;
    char *data;
    int seen_eos = 0;

    *buf = NULL;
    *len = 0;
    *by_httpd = 0;
    if (!cl && !apr_table_get(r->headers_in, "Transfer-Encoding")) {
        return OK;
    }
    if (cl && apr_atoi64(cl) > max) {
        return HTTP_REQUEST_ENTITY_TOO_LARGE;
    }
    data = apr_palloc(r->pool, cap);
    bb = apr_brigade_create(r->pool, r->connection->bucket_alloc);
    while (!seen_eos) {
        apr_bucket *b;
        apr_status_t rv = ap_get_brigade(r->input_filters, bb, AP_MODE_READBYTES,
                                         APR_BLOCK_READ, 8192);

        if (rv != APR_SUCCESS) {
            /* AP_FILTER_ERROR: httpd has answered already (its own 400 or
             * 413); the handler returns that and writes nothing more. */
            r->connection->keepalive = AP_CONN_CLOSE;
            *by_httpd = 1;
            return ap_map_http_request_error(rv, HTTP_BAD_REQUEST);
        }
        for (b = APR_BRIGADE_FIRST(bb); b != APR_BRIGADE_SENTINEL(bb);
             b = APR_BUCKET_NEXT(b)) {
            const char *chunk;
            apr_size_t clen;

            if (APR_BUCKET_IS_EOS(b)) {
                seen_eos = 1;
                break;
            }
            if (apr_bucket_read(b, &chunk, &clen, APR_BLOCK_READ) != APR_SUCCESS) {
                return HTTP_BAD_REQUEST;
            }
            if ((apr_off_t)(n + clen) > max) {
                return HTTP_REQUEST_ENTITY_TOO_LARGE;
            }
            if (n + clen + 1 > cap) {
                char *bigger;

                while (n + clen + 1 > cap) {
                    cap *= 2;
                }
                bigger = apr_palloc(r->pool, cap);
                memcpy(bigger, data, n);
                data = bigger;
            }
            memcpy(data + n, chunk, clen);
            n += clen;
        }
        apr_brigade_cleanup(bb);
    }
    data[n] = '\0';
    *buf = data;
    *len = n;
    return OK;
}
