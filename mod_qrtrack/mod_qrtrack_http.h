/* mod_qrtrack_http.c: error values, responses and request parts of the API. */
#ifndef MOD_QRTRACK_HTTP_H
#define MOD_QRTRACK_HTTP_H

#include "mod_qrtrack_private.h"

#define QRT_JSON_TYPE "application/json; charset=utf-8"
qrt_err_t *qrt_error(qrt_req_t *q, int status, const char *message);
/* 400/422 naming one field: message "<msg>", errors {"field": ["<msg>"]}. */
qrt_err_t *qrt_error_field(qrt_req_t *q, int status, const char *field,
                           const char *msg);
/* Adds one more field message to an error built by qrt_error_field. */
void qrt_error_add(qrt_req_t *q, qrt_err_t *e, const char *field, const char *msg);
/* Collects the field messages of a body or query into *e: the first makes the error
 * (status, its message), the next are added and its message becomes "The given data was
 * invalid.". */
void qrt_error_collect(qrt_req_t *q, qrt_err_t **e, int status, const char *field,
                       const char *msg);
/* A 503 the client may try again after Retry-After (QRT_DB_RETRY_AFTER). */
qrt_err_t *qrt_error_unavailable(qrt_req_t *q, const char *message);
/* What the store said, logged, as the response: 503 with Retry-After when the
 * database is away, full, locked or ran out of QRTrackStatementTimeout; else 500. */
qrt_err_t *qrt_error_store(qrt_req_t *q, const char *what);
/* 503 with Retry-After when mod_dbd gave the request no connection (the cause is
 * logged, at most every QRT_LOG_EVERY). */
qrt_err_t *qrt_error_no_db(qrt_req_t *q);
/* Writes a JSON body (takes j's reference) with the status. Returns NULL. */
qrt_err_t *qrt_respond_json(qrt_req_t *q, int status, json_t *j);
/* Writes a whole body of the given type in one brigade (Content-Length set). */
qrt_err_t *qrt_respond_bytes(qrt_req_t *q, int status, const char *type,
                             const char *buf, apr_size_t len);
/* The first value of a query parameter, or NULL. */
const char *qrt_query(qrt_req_t *q, const char *name);
/* A field of the JSON or form body as text (a JSON number or boolean written out), or
 * NULL (absent, JSON null, a list or an object). */
const char *qrt_body_str(qrt_req_t *q, const char *name);
/* Unknown fields of a JSON body: each of its object's keys (compared exactly) that is
 * not in known (NULL-ended; "api_token" is always taken), the first few added to *e
 * (created with status, 400 or 422, when NULL) under its own name: a typo must not answer 200 having
 * done nothing. Form bodies are not checked (an HTML form sends its buttons too). what
 * ends the message ("a tracker"). */
void qrt_body_fields_known(qrt_req_t *q, qrt_err_t **e, int status,
                           const char *const *known, const char *what);
/* The public base URL, e.g. "https://qr.example.com" (no trailing slash). */
const char *qrt_public_base(qrt_req_t *q);
/* Reads the whole request body into r->pool, NUL-terminated, at most max bytes: OK
 * (*buf NULL when the request has none), or the status to answer: 413 past max, 400
 * when it cannot be read; *by_httpd 1 when httpd's own filters refused it (it has
 * answered: the handler writes nothing more). */
int qrt_http_read_body(request_rec *r, apr_off_t max, char **buf, apr_size_t *len,
                       int *by_httpd);

#endif
