/* mod_qrtrack_webhook: POST/GET /webhook, GET/PATCH/DELETE /webhook/<id>,
 * POST /webhook/<id>/secret, /recover and /test, and GET /webhook/<id>/deliveries.
 * The events themselves are written by the store, in the transactions of what they report
 * (qrt_store_webhook.h); the delivery worker sends them. */
#include <string.h>
#include <apr_strings.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_config.h"
#include "mod_qrtrack_http.h"
#include "mod_qrtrack_params.h"
#include "mod_qrtrack_scan.h"
#include "mod_qrtrack_webhook.h"
#include "qrt_netguard.h"
#include "qrt_date.h"
#include "qrt_json.h"
#include "qrt_store_webhook.h"
#include "qrt_valid.h"

APLOG_USE_MODULE(qrtrack);

/* events: at most this many names (each may be given once; a repeat is harmless). */
#define WEBHOOK_EVENTS_MAX 32
/* How long a secret replaced by POST /webhook/<id>/secret still signs deliveries beside
 * the new one, unless the request says (keep_previous_for): a day, a week at most. */
#define WEBHOOK_KEEP_PREVIOUS     86400
#define WEBHOOK_KEEP_PREVIOUS_MAX (7 * 86400)
/* disabled_reason of a webhook disabled by PATCH {"enabled": false} */
#define WEBHOOK_DISABLED_BY_API "disabled through the API"
/* GET /webhook?attempts=N: at most this many of each webhook's latest attempts. */
#define WEBHOOK_LIST_ATTEMPTS_MAX 20

static json_t *webhook_json(const qrt_webhook_t *w)
{
    json_t *j = json_object();

    json_object_set_new(j, "id", json_integer(w->id));
    json_object_set_new(j, "url", json_string(w->url));
    json_object_set_new(j, "events", qrt_webhook_events_json(w->events));
    json_object_set_new(j, "created_at", qrt_json_time(w->created_at));
    json_object_set_new(j, "disabled_at", qrt_json_time(w->disabled_at));
    json_object_set_new(j, "disabled_reason", qrt_json_str(w->disabled_reason));
    json_object_set_new(j, "failures", json_integer(w->failures));
    return j;
}

/* The caller's webhook whose id is the path segment seg: 404 for any other. */
static qrt_err_t *webhook_load(qrt_req_t *q, const char *seg, qrt_webhook_t *w)
{
    apr_int64_t id;
    apr_status_t rv;

    if (!seg || qrt_parse_int(seg, 1, APR_INT64_MAX, &id) != 0) {
        return qrt_error(q, HTTP_NOT_FOUND, "Webhook not found.");
    }
    rv = qrt_store_webhook_get(&q->db, q->r->pool, id, w);
    if (rv == APR_NOTFOUND || (rv == APR_SUCCESS && w->account_id != q->auth.account_id)) {
        return qrt_error(q, HTTP_NOT_FOUND, "Webhook not found.");
    }
    return rv == APR_SUCCESS ? NULL : qrt_error_store(q, "loading a webhook");
}

/* The caller's webhook (path segment 0) for a request whose JSON body may have fields
 * (any other is collected into *bad as 422 naming it, what naming the body): 404 for
 * another's, 415 for a form's body (its fields would read as none sent). */
static qrt_err_t *webhook_load_body(qrt_req_t *q, qrt_webhook_t *w, const char *const *fields,
                                    const char *what, qrt_err_t **bad)
{
    qrt_err_t *e = webhook_load(q, q->seg[0], w);

    if (e) {
        return e;
    }
    if (q->form) {
        return qrt_error(q, HTTP_UNSUPPORTED_MEDIA_TYPE, "Unsupported Content-Type: send "
                         "application/json.");
    }
    qrt_body_fields_known(q, bad, HTTP_UNPROCESSABLE_ENTITY, fields, what);
    return NULL;
}

/* url: a valid destination that names no address of the server's own networks by
 * itself unless QRTrackWebhookAllow lists it (a name is checked where it resolves, at
 * every delivery). */
static void webhook_url_check(qrt_req_t *q, qrt_err_t **e, const char *url)
{
    apr_pool_t *p = q->r->pool;
    const char *why = qrt_webhook_url_check(p, url);
    struct sockaddr_storage ss;

    if (why) {
        qrt_error_collect(q, e, HTTP_UNPROCESSABLE_ENTITY, "url", apr_pstrcat(p, "The url ",
                          why, ".", NULL));
        return;
    }
    if (qrt_netguard_literal(qrt_url_host(p, url), &ss)
        && !qrt_netguard_allowed((const struct sockaddr *)&ss, qrt_config()->webhook_allow)) {
        qrt_error_collect(q, e, HTTP_UNPROCESSABLE_ENTITY, "url",
                          "The url names a loopback, private, link-local or "
                          "reserved address; QRTrackWebhookAllow must list it.");
    }
}

/* events: a non-empty array of known event names. */
static int webhook_events_read(qrt_req_t *q, qrt_err_t **e, json_t *v)
{
    apr_pool_t *p = q->r->pool;
    size_t i;
    int mask = 0;

    if (!v || json_is_null(v)) {
        qrt_error_collect(q, e, HTTP_UNPROCESSABLE_ENTITY, "events",
                          "The events field is required.");
        return 0;
    }
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > WEBHOOK_EVENTS_MAX) {
        qrt_error_collect(q, e, HTTP_UNPROCESSABLE_ENTITY, "events",
                          "The events must be an array of 1 to 32 event names.");
        return 0;
    }
    for (i = 0; i < json_array_size(v); i++) {
        json_t *n = json_array_get(v, i);
        int bit = json_is_string(n) ? qrt_webhook_event_bit(json_string_value(n)) : 0;

        if (!bit) {
            qrt_error_collect(q, e, HTTP_UNPROCESSABLE_ENTITY, apr_psprintf(p, "events.%lu",
                              (unsigned long)i),
                              "Unknown event: one of scan.created, click.created, "
                              "tracker.created, tracker.updated, tracker.deleted, "
                              "tracker.expired.");
        }
        mask |= bit;
    }
    return mask;
}

/* The fields a webhook's body may have: those it sets, and those only read (ignored). */
static const char *const webhook_fields[] = {
    "url", "events", "id", "created_at", "disabled_at", "disabled_reason", "failures", NULL
};

/* POST /webhook {"url", "events"}: the secret is in this answer only. */
qrt_err_t *qrt_webhook_create(qrt_req_t *q)
{
    qrt_webhook_t w;
    qrt_err_t *e = NULL;
    json_t *url = q->json ? json_object_get(q->json, "url") : NULL, *j;
    apr_status_t rv;
    int limit = qrt_config()->webhook_limit;

    memset(&w, 0, sizeof(w));
    if (q->form) {
        /* (a form's url and events would be read as none sent: 422 for a url given) */
        return qrt_error(q, HTTP_UNSUPPORTED_MEDIA_TYPE, "Unsupported Content-Type: send "
                         "application/json.");
    }
    /* (not "secret": the server makes it; one the client chose would be ignored) */
    qrt_body_fields_known(q, &e, HTTP_UNPROCESSABLE_ENTITY, webhook_fields, "a webhook");
    if (!url || json_is_null(url)) {
        qrt_error_collect(q, &e, HTTP_UNPROCESSABLE_ENTITY, "url",
                          "The url field is required.");
    }
    else if (!json_is_string(url)) {
        qrt_error_collect(q, &e, HTTP_UNPROCESSABLE_ENTITY, "url",
                          "The url must be a string.");
    }
    else {
        w.url = json_string_value(url);
        webhook_url_check(q, &e, w.url);
    }
    w.events = webhook_events_read(q, &e, q->json ? json_object_get(q->json, "events") : NULL);
    if (e) {
        return e;
    }
    w.account_id = q->auth.account_id;
    rv = qrt_store_webhook_add(&q->db, q->r->pool, &w, limit);
    if (rv == APR_ENOSPC) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "url", apr_psprintf(q->r->pool,
                               "This account has %d webhooks already, the most it may have "
                               "(QRTrackWebhookLimit); delete one first.", limit));
    }
    if (rv != APR_SUCCESS) {
        return qrt_error_store(q, "creating a webhook");
    }
    qrt_scan_webhooks_changed();
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, q->r, "QRT01000: webhook %" APR_INT64_T_FMT
                  " created for account %s", w.id, q->auth.account_name);
    j = webhook_json(&w);
    json_object_set_new(j, "secret", json_string(w.secret));
    return qrt_respond_json(q, HTTP_OK, j);
}

static qrt_err_t *webhook_state(qrt_req_t *q, const qrt_webhook_t *w, json_t *j);
static qrt_err_t *webhook_attempts(qrt_req_t *q, const qrt_webhook_t *w, apr_int64_t offset,
                                   apr_int64_t rows, json_t **data, apr_int64_t *total);

/* GET /webhook: the account's webhooks, without their secrets; with attempts=N, each as
 * GET /webhook/<id> shows it and with its latest N attempts, so that a page of them (the
 * dashboard's card) costs one request of the token's limit, not one more a webhook. */
qrt_err_t *qrt_webhook_list(qrt_req_t *q)
{
    apr_array_header_t *list;
    apr_int64_t page, rows, total, attempts = -1, n;
    json_t *data, *j, *a;
    const char *v;
    qrt_err_t *e;
    int i;

    if ((e = qrt_params_paging(q, &page, &rows)) != NULL) {
        return e;
    }
    v = qrt_query(q, "attempts");
    if (v && qrt_parse_int(v, 0, WEBHOOK_LIST_ATTEMPTS_MAX, &attempts) != 0) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "attempts",
                               apr_psprintf(q->r->pool, "The attempts parameter must be an "
                                            "integer from 0 to %d.",
                                            WEBHOOK_LIST_ATTEMPTS_MAX));
    }
    if (qrt_store_webhook_list(&q->db, q->r->pool, q->auth.account_id, (page - 1) * rows,
                               rows, &list, &total) != APR_SUCCESS) {
        return qrt_error_store(q, "listing webhooks");
    }
    data = json_array();
    for (i = 0; i < list->nelts; i++) {
        const qrt_webhook_t *w = &APR_ARRAY_IDX(list, i, qrt_webhook_t);
        json_t *one = webhook_json(w);

        json_array_append_new(data, one);
        if (attempts < 0) {
            continue;
        }
        if ((e = webhook_state(q, w, one)) != NULL
            || (e = webhook_attempts(q, w, 0, attempts, &a, &n)) != NULL) {
            json_decref(data);
            return e;
        }
        json_object_set_new(one, "attempts", a);
    }
    j = json_object();
    json_object_set_new(j, "data", data);
    json_object_set_new(j, "meta", qrt_paging_meta(page, rows, total));
    return qrt_respond_json(q, HTTP_OK, j);
}

/* The webhook's state, set in j: what GET /webhook/<id> adds and deliveries carry. */
static qrt_err_t *webhook_state(qrt_req_t *q, const qrt_webhook_t *w, json_t *j)
{
    apr_int64_t pending = 0, dropped = 0;

    if (qrt_store_webhook_counts(&q->db, q->r->pool, w->id, &pending, &dropped)
        != APR_SUCCESS) {
        return qrt_error_store(q, "counting a webhook's events");
    }
    json_object_set_new(j, "disabled_at", qrt_json_time(w->disabled_at));
    json_object_set_new(j, "disabled_reason", qrt_json_str(w->disabled_reason));
    json_object_set_new(j, "failures", json_integer(w->failures));
    json_object_set_new(j, "pending", json_integer(pending));
    json_object_set_new(j, "dropped", json_integer(dropped));
    return NULL;
}

/* GET /webhook/<id> */
qrt_err_t *qrt_webhook_show(qrt_req_t *q)
{
    qrt_webhook_t w;
    qrt_err_t *e = webhook_load(q, q->seg[0], &w);
    json_t *j;

    if (e) {
        return e;
    }
    j = webhook_json(&w);
    if ((e = webhook_state(q, &w, j)) != NULL) {
        json_decref(j);
        return e;
    }
    return qrt_respond_json(q, HTTP_OK, j);
}

/* The error of a store call on the caller's webhook: 404 gone meanwhile (deleted since it
 * was loaded), 409 disabled (recover, test), 500 (what: the failure's words); NULL for
 * APR_SUCCESS. */
static qrt_err_t *webhook_store_outcome(qrt_req_t *q, apr_status_t rv, const char *what)
{
    if (rv == APR_NOTFOUND) {
        return qrt_error(q, HTTP_NOT_FOUND, "Webhook not found.");
    }
    if (rv == APR_EBUSY) {
        return qrt_error(q, HTTP_CONFLICT, "The webhook is disabled: enable it again first "
                         "(PATCH /webhook/<id> {\"enabled\": true}).");
    }
    return rv == APR_SUCCESS ? NULL : qrt_error_store(q, what);
}

/* The fields a PATCH may have: those it changes, and those a GET shows (ignored). */
static const char *const webhook_patch_fields[] = {
    "url", "events", "enabled", "id", "created_at", "disabled_at", "disabled_reason",
    "failures", "pending", "dropped", NULL
};

/* PATCH /webhook/<id> {"url", "events", "enabled"}: each one given is changed; enabled
 * false disables the webhook (its waiting events dropped), true enables it again (its
 * failures in a row start over). Answers the webhook as GET /webhook/<id> does. */
qrt_err_t *qrt_webhook_update(qrt_req_t *q)
{
    qrt_webhook_t w;
    qrt_err_t *e = NULL, *fatal = webhook_load_body(q, &w, webhook_patch_fields, "a webhook",
                                                    &e);
    json_t *url, *events, *enabled, *j;
    apr_status_t rv;
    int enable = -1;

    if (fatal) {
        return fatal;
    }
    url = q->json ? json_object_get(q->json, "url") : NULL;
    if (url && !json_is_string(url)) {
        qrt_error_collect(q, &e, HTTP_UNPROCESSABLE_ENTITY, "url", json_is_null(url)
                          ? "The url cannot be removed (null): send a url, or leave it out."
                          : "The url must be a string.");
    }
    else if (url) {
        w.url = json_string_value(url);
        webhook_url_check(q, &e, w.url);
    }
    events = q->json ? json_object_get(q->json, "events") : NULL;
    if (events && json_is_null(events)) {
        qrt_error_collect(q, &e, HTTP_UNPROCESSABLE_ENTITY, "events", "The events cannot "
                          "be removed (null): send 1 to 32 event names, or leave it out.");
    }
    else if (events) {
        int mask = webhook_events_read(q, &e, events);

        w.events = mask ? mask : w.events;
    }
    enabled = q->json ? json_object_get(q->json, "enabled") : NULL;
    if (enabled && !json_is_boolean(enabled)) {
        qrt_error_collect(q, &e, HTTP_UNPROCESSABLE_ENTITY, "enabled",
                          "The enabled field must be true or false.");
    }
    else if (enabled) {
        enable = json_is_true(enabled);
    }
    if (e) {
        return e;
    }
    w.account_id = q->auth.account_id;
    rv = qrt_store_webhook_change(&q->db, q->r->pool, &w, enable, WEBHOOK_DISABLED_BY_API);
    if ((e = webhook_store_outcome(q, rv, "changing a webhook")) != NULL) {
        return e;
    }
    qrt_scan_webhooks_changed();
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, q->r, "QRT01039: webhook %" APR_INT64_T_FMT
                  " changed by account %s", w.id, q->auth.account_name);
    j = webhook_json(&w);
    if ((e = webhook_state(q, &w, j)) != NULL) {
        json_decref(j);
        return e;
    }
    return qrt_respond_json(q, HTTP_OK, j);
}

/* POST /webhook/<id>/secret {"keep_previous_for": seconds}: a new secret, shown in this
 * answer only. The one it replaces still signs deliveries (a second signature in
 * webhook-signature) for that long: a day unless given, a week at most, 0 not at all. */
qrt_err_t *qrt_webhook_secret(qrt_req_t *q)
{
    static const char *const fields[] = { "keep_previous_for", NULL };
    qrt_webhook_t w;
    qrt_err_t *e = NULL, *fatal = webhook_load_body(q, &w, fields, "a new secret", &e);
    json_t *keep = q->json ? json_object_get(q->json, "keep_previous_for") : NULL, *j;
    apr_int64_t seconds = WEBHOOK_KEEP_PREVIOUS, until = 0;
    const char *secret = NULL;
    apr_status_t rv;

    if (fatal) {
        return fatal;
    }
    if (keep && !(json_is_integer(keep) && json_integer_value(keep) >= 0
                  && json_integer_value(keep) <= WEBHOOK_KEEP_PREVIOUS_MAX)) {
        qrt_error_collect(q, &e, HTTP_UNPROCESSABLE_ENTITY, "keep_previous_for",
                          apr_psprintf(q->r->pool, "The keep_previous_for must be a whole "
                                       "number of seconds from 0 to %d.",
                                       WEBHOOK_KEEP_PREVIOUS_MAX));
    }
    else if (keep) {
        seconds = json_integer_value(keep);
    }
    if (e) {
        return e;
    }
    if (seconds > 0) {
        until = apr_time_sec(apr_time_now()) + seconds;
    }
    rv = qrt_store_webhook_secret_new(&q->db, q->r->pool, q->auth.account_id, w.id, until,
                                      &secret);
    if ((e = webhook_store_outcome(q, rv, "making a webhook's secret")) != NULL) {
        return e;
    }
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, q->r, "QRT01040: webhook %" APR_INT64_T_FMT
                  " given a new secret by account %s", w.id, q->auth.account_name);
    j = webhook_json(&w);
    json_object_set_new(j, "secret", json_string(secret));
    json_object_set_new(j, "previous_secret_until", qrt_json_time(until));
    return qrt_respond_json(q, HTTP_OK, j);
}

/* POST /webhook/<id>/recover {"since": TIME}: the events that failed every attempt, made
 * since then (by default the last week, all that are kept), sent again from the start of
 * their schedule; 409 while the webhook is disabled. */
qrt_err_t *qrt_webhook_recover(qrt_req_t *q)
{
    static const char *const fields[] = { "since", NULL };
    qrt_webhook_t w;
    qrt_err_t *e = NULL, *fatal = webhook_load_body(q, &w, fields, "a recovery", &e);
    json_t *since = q->json ? json_object_get(q->json, "since") : NULL, *j;
    apr_int64_t from = apr_time_sec(apr_time_now()) - QRT_WEBHOOK_KEEP;
    apr_status_t rv;
    int n = 0;

    if (fatal) {
        return fatal;
    }
    if (since && (!json_is_string(since)
                  || qrt_date_parse(json_string_value(since), &from, NULL) != 0)) {
        qrt_error_collect(q, &e, HTTP_UNPROCESSABLE_ENTITY, "since", "The since must be a "
                          "time like 2026-05-01T00:00:00+0200.");
    }
    if (e) {
        return e;
    }
    rv = qrt_store_webhook_recover(&q->db, q->r->pool, q->auth.account_id, w.id, from, &n);
    if ((e = webhook_store_outcome(q, rv, "recovering a webhook's events")) != NULL) {
        return e;
    }
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, q->r, "QRT01041: %d failed events of webhook %"
                  APR_INT64_T_FMT " queued again by account %s", n, w.id,
                  q->auth.account_name);
    j = json_object();
    json_object_set_new(j, "recovered", json_integer(n));
    return qrt_respond_json(q, HTTP_OK, j);
}

/* POST /webhook/<id>/test: a webhook.test event, delivered as any event (signed, retried,
 * listed in its deliveries) whatever events the webhook takes, so that a receiver can be
 * checked before real events come; 202 with its webhook-id, 409 while it is disabled. */
qrt_err_t *qrt_webhook_test(qrt_req_t *q)
{
    static const char *const fields[] = { NULL };
    qrt_webhook_t w;
    qrt_err_t *e = NULL, *fatal = webhook_load_body(q, &w, fields, "a test", &e);
    const char *msg_id;
    apr_status_t rv;
    json_t *j;

    if (fatal || e) {
        return fatal ? fatal : e;
    }
    rv = qrt_store_webhook_test(&q->db, q->r->pool, q->auth.account_id, w.id, &msg_id);
    if ((e = webhook_store_outcome(q, rv, "writing a webhook's test event")) != NULL) {
        return e;
    }
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, q->r, "QRT01042: a test event for webhook %"
                  APR_INT64_T_FMT " written by account %s", w.id, q->auth.account_name);
    j = json_object();
    json_object_set_new(j, "event_id", json_string(msg_id));
    json_object_set_new(j, "event_type", json_string("webhook.test"));
    return qrt_respond_json(q, HTTP_ACCEPTED, j);
}

/* DELETE /webhook/<id>: 204; its pending events are dropped. */
qrt_err_t *qrt_webhook_delete(qrt_req_t *q)
{
    qrt_webhook_t w;
    qrt_err_t *e = webhook_load(q, q->seg[0], &w);
    apr_status_t rv;

    if (e) {
        return e;
    }
    rv = qrt_store_webhook_delete(&q->db, q->r->pool, q->auth.account_id, w.id);
    if ((e = webhook_store_outcome(q, rv, "deleting a webhook")) != NULL) {
        return e;
    }
    qrt_scan_webhooks_changed();
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, q->r, "QRT01001: webhook %" APR_INT64_T_FMT
                  " deleted by account %s", w.id, q->auth.account_name);
    q->r->status = HTTP_NO_CONTENT;
    return NULL;
}

/* The webhook's attempts of the last week, newest first, from offset: *data, a new
 * array, and *total. */
static qrt_err_t *webhook_attempts(qrt_req_t *q, const qrt_webhook_t *w, apr_int64_t offset,
                                   apr_int64_t rows, json_t **data, apr_int64_t *total)
{
    apr_array_header_t *list;
    int i;

    *data = NULL;
    if (rows == 0) {
        *data = json_array();
        *total = 0;
        return NULL;
    }
    if (qrt_store_webhook_attempts(&q->db, q->r->pool, w->id, offset, rows, &list, total)
        != APR_SUCCESS) {
        return qrt_error_store(q, "listing a webhook's deliveries");
    }
    *data = json_array();
    for (i = 0; i < list->nelts; i++) {
        const qrt_webhook_attempt_t *a = &APR_ARRAY_IDX(list, i, qrt_webhook_attempt_t);
        json_t *d = json_object();

        json_object_set_new(d, "id", json_integer(a->id));
        json_object_set_new(d, "event_id", qrt_json_str(a->msg_id));
        json_object_set_new(d, "event_type", qrt_json_str(a->event_type));
        json_object_set_new(d, "attempt", json_integer(a->attempt));
        json_object_set_new(d, "http_status", a->has_status ? json_integer(a->http_status)
                                                            : json_null());
        json_object_set_new(d, "error", qrt_json_str(a->error));
        json_object_set_new(d, "at", qrt_json_time(a->at));
        json_object_set_new(d, "next_attempt_at", qrt_json_time(a->next_attempt_at));
        json_array_append_new(*data, d);
    }
    return NULL;
}

/* GET /webhook/<id>/deliveries: its attempts, newest first, and its state. */
qrt_err_t *qrt_webhook_deliveries(qrt_req_t *q)
{
    qrt_webhook_t w;
    apr_int64_t page, rows, total;
    json_t *data, *j, *state;
    qrt_err_t *e = webhook_load(q, q->seg[0], &w);

    if (e || (e = qrt_params_paging(q, &page, &rows)) != NULL
        || (e = webhook_attempts(q, &w, (page - 1) * rows, rows, &data, &total)) != NULL) {
        return e;
    }
    state = json_object();
    if ((e = webhook_state(q, &w, state)) != NULL) {
        json_decref(state);
        json_decref(data);
        return e;
    }
    j = json_object();
    json_object_set_new(j, "data", data);
    json_object_set_new(j, "meta", qrt_paging_meta(page, rows, total));
    json_object_set_new(j, "state", state);
    return qrt_respond_json(q, HTTP_OK, j);
}
