/* mod_qrtrack_gate: what a visitor sees instead of a redirect (CONTRACT section 7): the
 * password form of a protected code and its answers, and the page of an expired code.
 * Wrong tries are counted per (address, tracker) in a table in shared memory, so every
 * child of the server refuses an address that guessed too often. */
#include <string.h>
#include "httpd.h"
#include "http_config.h"
#include "http_log.h"
#include "http_protocol.h"
#include "util_mutex.h"
#include <apr_strings.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_gate.h"
#include "mod_qrtrack_http.h"
#include "mod_qrtrack_redact.h"
#include "qrt_ip.h"
#include "mod_qrtrack_util.h"
#include "qrt_form.h"
#include "qrt_pages.h"
#include "qrt_password.h"
#include "qrt_tries.h"
#include "qrt_store.h"
#include "qrt_valid.h"

APLOG_USE_MODULE(qrtrack);

#define GATE_SHM_KEY     "qrtrack-gate-shared"
#define GATE_SLOTS       4096        /* (address, tracker) pairs counted at once */
#define GATE_TRIES       10          /* wrong tries allowed ... */
#define GATE_WINDOW      60          /* ... in this many seconds, from one address */
#define GATE_BODY_MAX    8192        /* the form's body: a password, a referer of 2 KB */

static qrt_tries_t *gate_tries;
static apr_global_mutex_t *gate_mutex;

apr_status_t qrt_gate_post_config(server_rec *s)
{
    apr_status_t rv;
    int fresh;
    void *mem = qrt_shm_kept(s, GATE_SHM_KEY, qrt_tries_size(GATE_SLOTS), &fresh, &rv);

    if (!mem) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "QRT00802: cannot create "
                     "shared memory for the password gate");
        return rv;
    }
    if (fresh) {
        qrt_tries_init(mem, GATE_SLOTS);
    }
    gate_tries = mem;
    return qrt_global_mutex(s, QRT_MUTEX_GATE, &gate_mutex);
}

void qrt_gate_child_init(apr_pool_t *p, server_rec *s)
{
    if (gate_mutex
        && apr_global_mutex_child_init(&gate_mutex, apr_global_mutex_lockfile(gate_mutex),
                                       p) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "QRT00803: cannot attach the password "
                     "gate's mutex; protected codes answer 503");
        gate_mutex = NULL;
    }
}

/* A complete HTML page as the answer, with status. */
static int gate_page(request_rec *r, int status, const char *html)
{
    apr_size_t len = strlen(html);

    ap_set_content_type(r, "text/html; charset=utf-8");
    apr_table_setn(r->headers_out, "X-Frame-Options", "DENY");
    apr_table_setn(r->headers_out, "Content-Security-Policy",
                   "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'");
    apr_table_setn(r->headers_out, "Referrer-Policy", "no-referrer");
    r->status = status;
    ap_set_content_length(r, (apr_off_t)len);
    if (!r->header_only) {
        ap_rwrite(html, (int)len, r);
    }
    /* (no form-action: browsers apply it to the redirect that follows the POST too)
     * A page of our own written with its status: OK tells httpd not to add its own. */
    return OK;
}

int qrt_gate_expired(request_rec *r)
{
    return gate_page(r, HTTP_GONE, qrt_page_expired(r->pool));
}

/* The fields of the form's body, NULL when there is none (or too long a body: *status
 * says so). */
static apr_table_t *gate_read_form(request_rec *r, int *status)
{
    apr_table_t *fields = apr_table_make(r->pool, 2);
    const char *err = NULL, *ct = apr_table_get(r->headers_in, "Content-Type");
    char *buf = NULL;
    apr_size_t n = 0;
    int by_httpd = 0;

    if (!qrt_form_type_is(ct, "application/x-www-form-urlencoded")) {
        *status = HTTP_UNSUPPORTED_MEDIA_TYPE;
        return NULL;
    }
    *status = qrt_http_read_body(r, GATE_BODY_MAX, &buf, &n, &by_httpd);
    if (*status != OK) {
        /* The rest of the body stays unread: do not reuse the connection. */
        r->connection->keepalive = AP_CONN_CLOSE;
        return NULL;
    }
    if (!buf) {
        return NULL;
    }
    if (qrt_form_urlencoded_max(r->pool, buf, n, 8, fields, &err) != APR_SUCCESS) {
        *status = HTTP_BAD_REQUEST;
        return NULL;
    }
    return fields;
}

int qrt_gate_check(request_rec *r, apr_int64_t tracker, const char *hash, int *pass,
                   const char **referer)
{
    /* (an IPv6 client's tries count for its /64: one subscriber holds all of it) */
    const char *addr = qrt_ip_guess_key(r->pool, r->useragent_ip);
    const char *action = r->uri, *pw = NULL;
    apr_table_t *form;
    apr_int64_t now = apr_time_sec(r->request_time);
    int status, blocked, right;

    *pass = 0;
    *referer = NULL;
    if (r->method_number != M_POST) {
        /* (cut as a visit's referer is, so that the form's body keeps within its bound) */
        const char *from = apr_table_get(r->headers_in, "Referer");

        if (from) {
            from = qrt_valid_utf8_clean(r->pool, from, strlen(from), QRT_VISIT_REFERER_MAX);
        }
        return gate_page(r, HTTP_OK, qrt_page_password(r->pool, action, 0, from));
    }
    if (!gate_mutex || !gate_tries) {
        apr_table_setn(r->err_headers_out, "Retry-After", "5");
        return HTTP_SERVICE_UNAVAILABLE;
    }
    /* The try counts as wrong from here, before its password is checked: guesses sent
     * at once each see the others, so a burst gets no more checks than the limit. A
     * right password, or a body that cannot be read (no password checked), takes its try
     * back. */
    apr_global_mutex_lock(gate_mutex);
    blocked = qrt_tries_begin(gate_tries, addr, tracker, now, GATE_TRIES, GATE_WINDOW);
    apr_global_mutex_unlock(gate_mutex);
    if (blocked) {
        apr_table_setn(r->err_headers_out, "Retry-After", apr_itoa(r->pool, GATE_WINDOW));
        return gate_page(r, HTTP_TOO_MANY_REQUESTS, qrt_page_too_many(r->pool));
    }
    form = gate_read_form(r, &status);
    if (form) {
        pw = apr_table_get(form, "password");
        /* (redacted as the header is: the form's field is the visitor's to change) */
        *referer = apr_table_get(form, "referer");
        if (*referer) {
            *referer = qrt_redact_referer(r->pool, *referer);
        }
    }
    /* The slow hash runs outside the lock: one guess holds no other request. */
    right = status == OK && pw && *pw && qrt_password_verify(hash, pw, strlen(pw));
    if (right || status != OK) {
        apr_global_mutex_lock(gate_mutex);
        qrt_tries_forgive(gate_tries, addr, tracker, now);
        apr_global_mutex_unlock(gate_mutex);
    }
    if (status != OK) {
        return status;
    }
    if (right) {
        *pass = 1;
        return OK;
    }
    return gate_page(r, HTTP_FORBIDDEN, qrt_page_password(r->pool, action, 1, *referer));
}
