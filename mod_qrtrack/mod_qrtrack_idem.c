/* mod_qrtrack_idem: Idempotency-Key (CONTRACT section 7, "Bulk, migration and
 * custom codes") and the transaction that creates trackers under it.
 *
 * The answer is kept in the transaction that creates what it reports: a retry finds
 * either nothing created and no key, or both. Two requests with the same key at
 * once: the second's insert of the key waits for the first's commit (PostgreSQL's
 * unique index, SQLite's write lock), fails on the UNIQUE constraint, rolls its own
 * trackers back and answers the first one's answer. */
#include <string.h>
#include "httpd.h"
#include "http_config.h"
#include "http_log.h"
#include "http_protocol.h"
#include <apr_strings.h>
#include <apr_sha1.h>
#include <apr_base64.h>

#include "mod_qrtrack_idem.h"
#include "mod_qrtrack_http.h"
#include "qrt_code.h"

APLOG_USE_MODULE(qrtrack);

#define IDEM_KEY_MAX 255
/* Generated codes: as POST /tracker makes them. */
#define IDEM_CODE_LEN 8
/* A transaction run again after a lost deadlock or a code taken meanwhile. */
#define IDEM_TRIES 4

static void idem_hash_part(apr_sha1_ctx_t *c, const char *s)
{
    static const char nul = '\0';

    if (s) {
        apr_sha1_update_binary(c, (const unsigned char *)s, (unsigned int)strlen(s));
    }
    apr_sha1_update_binary(c, (const unsigned char *)&nul, 1);
}

/* What makes two requests the same: method, path, query, the body's type, the Accept
 * header (which image, or JSON, is answered), and the body's bytes. */
static const char *idem_hash(qrt_req_t *q)
{
    request_rec *r = q->r;
    const char *accept = apr_table_get(r->headers_in, "Accept");
    unsigned char digest[APR_SHA1_DIGESTSIZE];
    char *hex = apr_palloc(r->pool, 2 * APR_SHA1_DIGESTSIZE + 1);
    apr_sha1_ctx_t c;
    apr_size_t off = 0;
    int i;

    apr_sha1_init(&c);
    idem_hash_part(&c, r->method);
    idem_hash_part(&c, q->path);
    idem_hash_part(&c, r->args);
    idem_hash_part(&c, apr_table_get(r->headers_in, "Content-Type"));
    idem_hash_part(&c, accept);
    while (off < q->body_len) {
        apr_size_t n = q->body_len - off > 65536 ? 65536 : q->body_len - off;

        apr_sha1_update_binary(&c, (const unsigned char *)q->body + off, (unsigned int)n);
        off += n;
    }
    apr_sha1_final(digest, &c);
    for (i = 0; i < APR_SHA1_DIGESTSIZE; i++) {
        apr_snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    }
    return hex;
}

qrt_err_t *qrt_idem_respond(qrt_req_t *q, const qrt_idem_t *a, int replayed)
{
    request_rec *r = q->r;

    if (replayed) {
        apr_table_setn(r->headers_out, "Idempotent-Replayed", "true");
    }
    if (a->tracker_id) {
        apr_table_setn(r->headers_out, "X-Tracker-Id", apr_off_t_toa(r->pool, a->tracker_id));
    }
    if (strcmp(a->content_type, QRT_JSON_TYPE) != 0) {
        /* an image (PNG, SVG, PDF, EPS), kept in base64 */
        char *bytes = apr_palloc(r->pool, apr_base64_decode_len(a->body));
        int len = apr_base64_decode(bytes, a->body);

        return qrt_respond_bytes(q, a->status, a->content_type, bytes, (apr_size_t)len);
    }
    return qrt_respond_bytes(q, a->status, a->content_type, a->body, strlen(a->body));
}

/* The kept answer for idem, written again; 422 when it answered another request. */
static qrt_err_t *idem_replay(qrt_req_t *q, const qrt_idem_req_t *idem, const qrt_idem_t *a)
{
    if (strcmp(a->request_hash, idem->hash) != 0) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "Idempotency-Key",
                               "This Idempotency-Key was used for a different request.");
    }
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, q->r, "QRT00960: %s %s: answered again "
                  "for its Idempotency-Key", q->r->method, q->path);
    return qrt_idem_respond(q, a, 1);
}

qrt_err_t *qrt_idem_start(qrt_req_t *q, qrt_idem_req_t *idem, int *replayed)
{
    const char *key = apr_table_get(q->r->headers_in, "Idempotency-Key");
    qrt_idem_t a;
    apr_size_t i, n;
    apr_status_t rv;

    idem->key = idem->hash = NULL;
    *replayed = 0;
    if (!key) {
        return NULL;
    }
    n = strlen(key);
    for (i = 0; i < n && key[i] >= 0x20 && key[i] <= 0x7e; i++) {
    }
    if (n == 0 || n > IDEM_KEY_MAX || i < n) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "Idempotency-Key",
                               apr_psprintf(q->r->pool, "The Idempotency-Key must be 1 to "
                                            "%d printable ASCII characters.", IDEM_KEY_MAX));
    }
    idem->key = key;
    idem->hash = idem_hash(q);
    if (qrt_store_idem_purge(&q->db, q->r->pool) != APR_SUCCESS) {
        return qrt_error_store(q, "deleting old idempotency keys");
    }
    rv = qrt_store_idem_get(&q->db, q->r->pool, q->auth.token_id, key, &a);
    if (rv == APR_NOTFOUND) {
        return NULL;
    }
    if (rv != APR_SUCCESS) {
        return qrt_error_store(q, "reading an idempotency key");
    }
    *replayed = 1;
    return idem_replay(q, idem, &a);
}

/* One try of the transaction: APR_SUCCESS, or the failing status with db.error set. */
static apr_status_t create_once(qrt_req_t *q, const qrt_idem_req_t *idem,
                                qrt_tracker_t **t, int n, const int *custom,
                                qrt_create_answer_fn *answer, void *ctx, qrt_idem_t *a,
                                qrt_err_t **e)
{
    apr_dbd_transaction_t *tx;
    apr_status_t rv;
    int i;

    rv = qrt_db_begin(&q->db, q->r->pool, &tx);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    for (i = 0; i < n && rv == APR_SUCCESS; i++) {
        if (!t[i]) {
            continue;
        }
        t[i]->account_id = q->auth.account_id;
        if (!custom[i]) {
            char *code = apr_palloc(q->r->pool, IDEM_CODE_LEN + 1);

            rv = qrt_code_generate(code, IDEM_CODE_LEN);
            t[i]->code = code;
        }
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_store_trackers_insert_tx(&q->db, q->r->pool, t, n);
    }
    if (rv == APR_SUCCESS) {
        memset(a, 0, sizeof(*a));
        *e = answer(q, ctx, t, n, a);
        rv = *e ? APR_EGENERAL : APR_SUCCESS;
    }
    if (rv == APR_SUCCESS && idem->key) {
        a->request_hash = idem->hash;
        rv = qrt_store_idem_add(&q->db, q->r->pool, q->auth.token_id, idem->key, a);
    }
    return qrt_db_end_with(&q->db, q->r->pool, tx, rv);
}

/* After a failed try: the codes the client chose that are taken now go to taken().
 * How many did (the transaction may run again), or -1 when taken() asked for a 409 or
 * the check failed (*e). */
static int create_codes_taken(qrt_req_t *q, qrt_tracker_t **t, int n, const int *custom,
                              qrt_create_taken_fn *taken, void *ctx, qrt_err_t **e)
{
    int i, is_taken, found = 0;

    for (i = 0; i < n; i++) {
        if (!t[i] || !custom[i]) {
            continue;
        }
        if (qrt_store_code_taken(&q->db, q->r->pool, t[i]->code, &is_taken) != APR_SUCCESS) {
            *e = qrt_error_store(q, "checking a code");
            return -1;
        }
        if (is_taken) {
            const char *code = t[i]->code;

            if (!taken(q, ctx, t, i)) {
                *e = qrt_error(q, HTTP_CONFLICT, apr_psprintf(q->r->pool, "The code '%s' "
                                                              "is already taken.", code));
                return -1;
            }
            found++;
        }
    }
    return found;
}

qrt_err_t *qrt_create_trackers(qrt_req_t *q, const qrt_idem_req_t *idem,
                               qrt_tracker_t **t, int n, qrt_create_answer_fn *answer,
                               qrt_create_taken_fn *taken, void *ctx)
{
    int *custom = apr_pcalloc(q->r->pool, (n > 0 ? n : 1) * sizeof(int));
    qrt_idem_t a;
    qrt_err_t *e = NULL;
    apr_status_t rv = APR_EGENERAL;
    int i, tries;

    for (i = 0; i < n; i++) {
        custom[i] = t[i] && t[i]->code;
    }
    /* (a try whose taken codes were found and left out does not count: each such try
     * leaves out one code or more, so they end; a bulk racing with creates of its codes
     * answered 500 once four tries had met one each) */
    for (tries = 0; tries < IDEM_TRIES; tries++) {
        rv = create_once(q, idem, t, n, custom, answer, ctx, &a, &e);
        if (rv == APR_SUCCESS || e) {
            break;
        }
        if (idem->key && qrt_store_unique_violation(&q->db, SQL_idem_add)) {
            /* Another request kept this key first and has committed. */
            qrt_idem_t kept;

            if (qrt_store_idem_get(&q->db, q->r->pool, q->auth.token_id, idem->key, &kept)
                == APR_SUCCESS) {
                return idem_replay(q, idem, &kept);
            }
            return qrt_error_store(q, "reading an idempotency key");
        }
        if (qrt_store_unique_violation(&q->db, SQL_bulk_tracker_add)) {
            int found = create_codes_taken(q, t, n, custom, taken, ctx, &e);

            if (found < 0) {
                return e;
            }
            if (found > 0) {
                tries--;
            }
            continue;
        }
        if (!qrt_db_retryable(&q->db)) {
            break;
        }
    }
    if (e) {
        return e;
    }
    if (rv != APR_SUCCESS) {
        return qrt_error_store(q, "creating trackers");
    }
    if (idem->key) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, q->r, "QRT00961: %s %s: answer kept for "
                      "its Idempotency-Key", q->r->method, q->path);
    }
    return qrt_idem_respond(q, &a, 0);
}
