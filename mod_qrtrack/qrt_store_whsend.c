/* qrt_store_whsend: the webhook delivery worker's store (see qrt_store_whsend.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>

#include "qrt_store_whsend.h"
#include "qrt_store_webhook.h"

#define RECORD_TRIES 3

static apr_status_t due_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    apr_array_header_t *a = ctx;
    qrt_whsend_event_t *e = apr_array_push(a);
    const char *s;

    e->id = qrt_db_int(db, row, 0, 0);
    e->webhook_id = qrt_db_int(db, row, 1, 0);
    s = qrt_db_str(db, row, 2);
    e->msg_id = apr_pstrdup(a->pool, s ? s : "");
    s = qrt_db_str(db, row, 3);
    e->body = apr_pstrdup(a->pool, s ? s : "");
    e->attempts = (int)qrt_db_int(db, row, 4, 0);
    s = qrt_db_str(db, row, 5);
    e->url = apr_pstrdup(a->pool, s ? s : "");
    s = qrt_db_str(db, row, 6);
    e->secret = apr_pstrdup(a->pool, s ? s : "");
    e->visit_id = qrt_db_int(db, row, 7, 0);
    e->tracker_id = qrt_db_int(db, row, 8, 0);
    s = qrt_db_str(db, row, 9);
    e->event_type = apr_pstrdup(a->pool, s ? s : "");
    e->created_at = qrt_db_int(db, row, 10, 0);
    e->has_visit_start = qrt_db_str(db, row, 11) != NULL;
    e->visit_start = qrt_db_int(db, row, 11, 0);
    s = qrt_db_str(db, row, 12);
    e->secret_prev = s ? apr_pstrdup(a->pool, s) : NULL;
    e->secret_prev_until = qrt_db_int(db, row, 13, 0);
    return APR_SUCCESS;
}

static const char *visit_dup(qrt_db_t *db, apr_pool_t *p, apr_dbd_row_t *row, int col)
{
    const char *s = qrt_db_str(db, row, col);

    return s ? apr_pstrdup(p, s) : NULL;
}

typedef struct {
    qrt_visit_t v;
    const char *code;
} visit_found;

/* whsend_visits' row, kept by visit id: the columns of visits_read.sql's pages, then the
 * tracker's code. */
static apr_status_t visit_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    apr_hash_t *found = ctx;
    apr_pool_t *p = apr_hash_pool_get(found);
    visit_found *f = apr_pcalloc(p, sizeof(*f));
    qrt_visit_t *v = &f->v;

    v->id = qrt_db_int(db, row, 0, 0);
    v->tracker_id = qrt_db_int(db, row, 1, 0);
    v->visit_start = qrt_db_int(db, row, 2, 0);
    v->source = visit_dup(db, p, row, 3);
    v->ip = visit_dup(db, p, row, 4);
    v->country = visit_dup(db, p, row, 5);
    v->city = visit_dup(db, p, row, 6);
    v->browser = visit_dup(db, p, row, 7);
    v->browser_version = visit_dup(db, p, row, 8);
    v->os = visit_dup(db, p, row, 9);
    v->device = visit_dup(db, p, row, 10);
    v->referer = visit_dup(db, p, row, 11);
    v->user_agent = visit_dup(db, p, row, 12);
    v->bot = qrt_db_int(db, row, 13, 0) != 0;
    v->destination = visit_dup(db, p, row, 14);
    f->code = visit_dup(db, p, row, 15);
    apr_hash_set(found, &v->id, sizeof(v->id), f);
    return APR_SUCCESS;
}

/* whsend_visit_time's row: the visit's time. */
static apr_status_t visit_time_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    *(apr_int64_t *)ctx = qrt_db_int(db, row, 0, 0);
    return APR_SUCCESS;
}

/* The bodies of the visits' events taken, read in one statement: rendered as the scan
 * writer rendered them before schema 37, with the event's own time; an event whose visit
 * is gone is dropped and left out of a (*gone counts them). An event written before
 * schema 44 finds its visit's time first. */
static apr_status_t render_visits(qrt_db_t *db, apr_pool_t *p, apr_array_header_t *a,
                                  int *gone)
{
    apr_hash_t *found = apr_hash_make(p);
    apr_array_header_t *keys = apr_array_make(p, a->nelts > 0 ? a->nelts : 1,
                                              sizeof(const char *));
    int i, kept = 0;
    apr_status_t rv = APR_SUCCESS;

    for (i = 0; i < a->nelts && rv == APR_SUCCESS; i++) {
        qrt_whsend_event_t *e = &APR_ARRAY_IDX(a, i, qrt_whsend_event_t);
        apr_int64_t at = e->visit_start;
        const void *targs[] = { &e->tracker_id, &e->visit_id };

        if (e->visit_id <= 0 || *e->body) {
            continue;
        }
        if (!e->has_visit_start) {
            at = APR_INT64_MIN;
            rv = qrt_db_each(db, p, SQL_whsend_visit_time, targs, visit_time_row, &at);
            if (rv != APR_SUCCESS || at == APR_INT64_MIN) {
                continue;
            }
        }
        APR_ARRAY_PUSH(keys, const char *) =
            apr_psprintf(p, "[%" APR_INT64_T_FMT ",%" APR_INT64_T_FMT ",%" APR_INT64_T_FMT "]",
                         e->tracker_id, at, e->visit_id);
    }
    if (rv == APR_SUCCESS && keys->nelts > 0) {
        const void *args[] = { apr_pstrcat(p, "[", apr_array_pstrcat(p, keys, ','), "]",
                                           NULL) };

        rv = qrt_db_each(db, p, SQL_whsend_visits, args, visit_row, found);
    }
    for (i = 0; i < a->nelts && rv == APR_SUCCESS; i++) {
        qrt_whsend_event_t *e = &APR_ARRAY_IDX(a, i, qrt_whsend_event_t);

        if (e->visit_id > 0 && !*e->body) {
            int bit = qrt_webhook_event_bit(e->event_type);
            const visit_found *f = apr_hash_get(found, &e->visit_id, sizeof(e->visit_id));

            if (!f || f->v.tracker_id != e->tracker_id || !bit) {
                const void *gargs[] = { &e->id };

                rv = qrt_db_exec(db, p, SQL_whsend_visit_gone, NULL, gargs);
                if (rv != APR_SUCCESS) {
                    break;
                }
                (*gone)++;
                continue;
            }
            e->body = qrt_webhook_body(p, bit, e->created_at,
                                       qrt_store_webhook_visit_json(p, &f->v, f->code));
        }
        if (kept != i) {
            APR_ARRAY_IDX(a, kept, qrt_whsend_event_t) = *e;
        }
        kept++;
    }
    if (rv == APR_SUCCESS) {
        a->nelts = kept;
    }
    return rv;
}

typedef struct {
    apr_array_header_t *a;
    int stop;
} follower_ctx;

/* whsend_followers' row: taken while each may be, up to the first that may not. */
static apr_status_t follower_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    follower_ctx *f = ctx;

    if (f->stop || !qrt_db_int(db, row, 14, 0)) {
        f->stop = 1;
        return APR_SUCCESS;
    }
    return due_row(f->a, db, row);
}

/* The followers of the due events a holds (its first heads entries), while it has
 * room for them (max), up to run - 1 each. */
static apr_status_t take_followers(qrt_db_t *db, apr_pool_t *p, apr_array_header_t *a,
                                   int heads, apr_int64_t now, int max, int run)
{
    apr_status_t rv = APR_SUCCESS;
    int i;

    for (i = 0; i < heads && a->nelts < max && rv == APR_SUCCESS; i++) {
        const qrt_whsend_event_t *h = &APR_ARRAY_IDX(a, i, qrt_whsend_event_t);
        apr_int64_t w = h->webhook_id, t = h->tracker_id, id = h->id;
        apr_int64_t limit = max - a->nelts < run - 1 ? max - a->nelts : run - 1;
        const void *args[] = { &now, &now, &w, &t, &id, &limit };
        follower_ctx f = { a, 0 };

        rv = qrt_db_each(db, p, SQL_whsend_followers, args, follower_row, &f);
    }
    return rv;
}

static int by_id(const void *a, const void *b)
{
    const qrt_whsend_event_t *x = a, *y = b;

    return x->id < y->id ? -1 : x->id > y->id;
}

apr_status_t qrt_store_whsend_claim(qrt_db_t *db, apr_pool_t *p, apr_int64_t now,
                                    apr_int64_t lease_until, apr_int64_t owner, int max,
                                    int run, apr_array_header_t **out, int *gone)
{
    apr_array_header_t *a = apr_array_make(p, max > 0 ? max : 1, sizeof(qrt_whsend_event_t));
    apr_int64_t limit = max;
    const void *due_args[] = { &now, &now, &limit };
    apr_dbd_transaction_t *t = NULL;
    apr_status_t rv;
    int i;

    *out = a;
    *gone = 0;
    /* SQLite: the due rows are read before the transaction, whose BEGIN IMMEDIATE takes
     * the database's write lock (the scan writers wait for it): only the short UPDATE
     * holds it. One worker a server delivers there, so nothing takes them meanwhile.
     * PostgreSQL reads them in the transaction, locking them from other nodes. */
    if (qrt_dialect_embedded(db->driver)) {
        rv = qrt_db_each(db, p, SQL_whsend_due, due_args, due_row, a);
        if (rv == APR_SUCCESS && run > 1) {
            rv = take_followers(db, p, a, a->nelts, now, max, run);
        }
        if (rv != APR_SUCCESS || a->nelts == 0) {
            a->nelts = 0;
            return rv;
        }
    }
    rv = qrt_db_begin(db, p, &t);
    if (rv != APR_SUCCESS) {
        a->nelts = 0;
        return rv;
    }
    if (!qrt_dialect_embedded(db->driver)) {
        rv = qrt_db_each(db, p, SQL_whsend_due, due_args, due_row, a);
        if (rv == APR_SUCCESS && run > 1) {
            rv = take_followers(db, p, a, a->nelts, now, max, run);
        }
    }
    if (rv == APR_SUCCESS && a->nelts > 0) {
        char *ids = apr_palloc(p, (apr_size_t)a->nelts * 22 + 3), *w = ids;
        const void *claim_args[] = { &lease_until, &owner, ids, &now };

        *w++ = '[';
        for (i = 0; i < a->nelts; i++) {
            w += sprintf(w, "%s%" APR_INT64_T_FMT, i ? "," : "",
                         APR_ARRAY_IDX(a, i, qrt_whsend_event_t).id);
        }
        *w++ = ']';
        *w = '\0';
        rv = qrt_db_exec(db, p, SQL_whsend_claim, NULL, claim_args);
    }
    if (rv != APR_SUCCESS) {
        qrt_db_rollback_only(db, t);
        qrt_db_end(db, p, t);
        a->nelts = 0;
        return rv;
    }
    rv = qrt_db_end(db, p, t);
    if (rv != APR_SUCCESS) {
        a->nelts = 0;
        return rv;
    }
    qsort(a->elts, (size_t)a->nelts, sizeof(qrt_whsend_event_t), by_id);
    rv = render_visits(db, p, a, gone);
    if (rv != APR_SUCCESS) {
        a->nelts = 0;   /* their leases end by themselves */
    }
    return rv;
}

apr_status_t qrt_store_whsend_takeover(qrt_db_t *db, apr_pool_t *p, apr_int64_t owner,
                                       int *n)
{
    const void *args[] = { &owner };
    int rows = 0;
    apr_status_t rv = qrt_db_exec(db, p, SQL_whsend_takeover, &rows, args);

    if (n) {
        *n = rows;
    }
    return rv;
}

/* Webhooks' rows in one order on every node (no deadlock between two workers). */
static int by_webhook(const void *a, const void *b)
{
    const qrt_whsend_result_t *x = a, *y = b;

    if (x->ev->webhook_id != y->ev->webhook_id) {
        return x->ev->webhook_id < y->ev->webhook_id ? -1 : 1;
    }
    return x->ev->id < y->ev->id ? -1 : x->ev->id > y->ev->id;
}

static apr_status_t record_one(qrt_db_t *db, apr_pool_t *p, const qrt_whsend_result_t *r,
                               int disable_after, int *disabled)
{
    apr_int64_t attempt = r->attempt, status = r->http_status, zero = 0;
    apr_int64_t bound = disable_after;
    const void *attempt_args[] = { &r->ev->id, &r->ev->webhook_id, &attempt,
                                   r->http_status ? (const void *)&status : NULL, r->error,
                                   &r->at, r->kind == QRT_WHSEND_RETRY ? &r->next_at : NULL };
    const void *ev_args[] = { &attempt, &r->ev->id };
    const void *retry_args[] = { &attempt, &r->next_at, &r->ev->id };
    const void *id_args[] = { &r->ev->id };
    const void *wh_args[] = { &r->ev->webhook_id };
    const char *why;
    apr_status_t rv;
    int nrows = 0;

    if (r->kind == QRT_WHSEND_RELEASE) {
        return qrt_db_exec(db, p, SQL_whsend_release, NULL, id_args);
    }
    rv = qrt_db_exec(db, p, SQL_whsend_attempt_add, NULL, attempt_args);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    switch (r->kind) {
    case QRT_WHSEND_DELIVERED:
        rv = qrt_db_exec(db, p, SQL_whsend_delivered, NULL, ev_args);
        return rv ? rv : qrt_db_exec(db, p, SQL_whsend_failures_reset, NULL, wh_args);
    case QRT_WHSEND_RETRY:
        return qrt_db_exec(db, p, SQL_whsend_retry, NULL, retry_args);
    case QRT_WHSEND_GONE:
        rv = qrt_db_exec(db, p, SQL_whsend_failed, NULL, ev_args);
        why = "the receiver answered 410 Gone";
        {
            const void *dis_args[] = { &r->at, why, &r->ev->webhook_id, &zero };

            rv = rv ? rv : qrt_db_exec(db, p, SQL_whsend_disable, &nrows, dis_args);
        }
        break;
    default:
        rv = qrt_db_exec(db, p, SQL_whsend_failed, NULL, ev_args);
        rv = rv ? rv : qrt_db_exec(db, p, SQL_whsend_failures_add, NULL, wh_args);
        why = apr_psprintf(p, "%d events in a row failed every attempt", disable_after);
        {
            const void *dis_args[] = { &r->at, why, &r->ev->webhook_id, &bound };

            rv = rv ? rv : qrt_db_exec(db, p, SQL_whsend_disable, &nrows, dis_args);
        }
        break;
    }
    if (rv == APR_SUCCESS && nrows > 0) {
        rv = qrt_db_exec(db, p, SQL_whsend_drop_pending, NULL, wh_args);
        if (disabled) {
            (*disabled)++;
        }
    }
    return rv;
}

apr_status_t qrt_store_whsend_record(qrt_db_t *db, apr_pool_t *p, qrt_whsend_result_t *r,
                                     int n, int disable_after, int *disabled)
{
    apr_status_t rv = APR_SUCCESS;
    int try, i, off = 0;

    if (n <= 0) {
        return APR_SUCCESS;
    }
    qsort(r, (size_t)n, sizeof(*r), by_webhook);
    for (try = 0; try < RECORD_TRIES; try++) {
        apr_dbd_transaction_t *t = NULL;
        /* PostgreSQL: pipelined, so a batch of deliveries is recorded in a round trip or
         * two, not three a delivery */
        int piped;

        off = 0;
        rv = qrt_db_begin_pipelined(db, p);
        piped = rv == APR_SUCCESS;
        if (rv == APR_ENOTIMPL) {
            rv = qrt_db_begin(db, p, &t);
        }
        for (i = 0; rv == APR_SUCCESS && i < n; i++) {
            rv = record_one(db, p, &r[i], disable_after, &off);
        }
        if (piped) {
            rv = qrt_db_end_pipelined(db, p, rv);
        }
        else if (rv != APR_SUCCESS) {
            qrt_db_rollback_only(db, t);
            qrt_db_end(db, p, t);
        }
        else {
            rv = qrt_db_end(db, p, t);
        }
        if (rv == APR_SUCCESS || !qrt_db_retryable(db)) {
            break;
        }
    }
    if (rv == APR_SUCCESS && disabled) {
        *disabled = off;
    }
    return rv;
}

apr_status_t qrt_store_whsend_backlog(qrt_db_t *db, apr_pool_t *p, apr_int64_t *n)
{
    const void *args[] = { NULL };

    return qrt_db_select_int(db, p, SQL_whsend_backlog, args, n);
}
