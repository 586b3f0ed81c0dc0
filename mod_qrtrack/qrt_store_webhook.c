/* qrt_store_webhook: see qrt_store_webhook.h. */
#include <string.h>
#include <apr_hash.h>
#include <apr_strings.h>
#include <apr_time.h>

#include "qrt_store_webhook.h"
#include "qrt_clock.h"
#include "qrt_csv.h"
#include "qrt_date.h"
#include "qrt_json.h"

#define WEBHOOK_EVENT_TYPES "lsslsll"   /* webhook_event_add's arguments */
#define WEBHOOK_EVENT_NARGS 7
#define WEBHOOK_VISIT_TYPES "lsslllll"  /* webhook_visit_event_add's arguments */
#define WEBHOOK_VISIT_NARGS 8
/* webhook_fingerprint's values */
#define WEBHOOK_FP 5
/* The writer's map of trackers to their accounts: forgotten whole past this size. */
#define WEBHOOK_TRACKERS_MAX 65536
/* The bound's checks: every WEBHOOK_BOUND_EVERY, each finding the webhooks' cuts (a walk
 * of the bound's length in an index). On SQLite the events up to a cut are then dropped
 * WEBHOOK_BOUND_SLICE at a time, one slice a webhook after each commit: the drop holds the
 * writers' lock, so a scan's commit waits for at most a slice, not a second's events. */
#define WEBHOOK_BOUND_EVERY apr_time_from_sec(1)
#define WEBHOOK_BOUND_SLICE 1000

static apr_int64_t webhook_now(void)
{
    return apr_time_sec(apr_time_now());
}

static void webhook_read(qrt_db_t *db, apr_pool_t *p, apr_dbd_row_t *row, qrt_webhook_t *w)
{
    memset(w, 0, sizeof(*w));
    w->id = qrt_db_int(db, row, 0, 0);
    w->account_id = qrt_db_int(db, row, 1, 0);
    w->url = apr_pstrdup(p, qrt_db_str(db, row, 2));
    w->events = (int)qrt_db_int(db, row, 3, 0);
    w->created_at = qrt_db_int(db, row, 4, 0);
    w->failures = qrt_db_int(db, row, 5, 0);
    w->disabled_at = qrt_db_int(db, row, 6, 0);
    w->disabled_reason = apr_pstrdup(p, qrt_db_str(db, row, 7));
}

apr_status_t qrt_store_webhook_add(qrt_db_t *db, apr_pool_t *p, qrt_webhook_t *w, int limit)
{
    apr_dbd_transaction_t *tx;
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *cargs[] = { &w->account_id };
    apr_int64_t count = 0;
    apr_status_t rv;

    w->secret = qrt_webhook_secret_make(p);
    if (!w->secret) {
        db->error = "no random bytes for a secret";
        return APR_EGENERAL;
    }
    w->created_at = webhook_now();
    rv = qrt_db_begin(db, p, &tx);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = qrt_db_select_int(db, p, SQL_account_lock, cargs, &count);
    if (rv == APR_SUCCESS) {
        rv = qrt_db_select_int(db, p, SQL_webhook_count, cargs, &count);
    }
    if (rv == APR_SUCCESS && count >= limit) {
        rv = APR_ENOSPC;
    }
    if (rv == APR_SUCCESS) {
        const void *args[] = { &w->account_id, w->url, &w->events, w->secret,
                               &w->created_at };

        rv = qrt_db_select(db, p, SQL_webhook_add, &res, args);
    }
    if (rv == APR_SUCCESS) {
        rv = APR_EGENERAL;
        while (qrt_db_row(db, p, res, &row) == 0) {
            w->id = qrt_db_int(db, row, 0, 0);
            rv = APR_SUCCESS;
        }
    }
    return qrt_db_end_with(db, p, tx, rv);
}

apr_status_t qrt_store_webhook_list(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                    apr_int64_t offset, apr_int64_t limit,
                                    apr_array_header_t **out, apr_int64_t *total)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *cargs[] = { &account_id };
    const void *args[] = { &account_id, &limit, &offset };
    apr_status_t rv;

    *out = apr_array_make(p, 8, sizeof(qrt_webhook_t));
    *total = 0;
    rv = qrt_db_select_int(db, p, SQL_webhook_count, cargs, total);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = qrt_db_select(db, p, SQL_webhook_page, &res, args);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        webhook_read(db, p, row, apr_array_push(*out));
    }
    return APR_SUCCESS;
}

apr_status_t qrt_store_webhook_get(qrt_db_t *db, apr_pool_t *p, apr_int64_t id,
                                   qrt_webhook_t *out)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *args[] = { &id };
    apr_status_t rv = qrt_db_select(db, p, SQL_webhook_get, &res, args);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = APR_NOTFOUND;
    while (qrt_db_row(db, p, res, &row) == 0) {
        webhook_read(db, p, row, out);
        rv = APR_SUCCESS;
    }
    return rv;
}

apr_status_t qrt_store_webhook_delete(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                      apr_int64_t id)
{
    apr_dbd_transaction_t *tx;
    const void *args[] = { &id, &account_id };
    const void *eargs[] = { &id };
    int n = 0;
    apr_status_t rv = qrt_db_begin(db, p, &tx);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = qrt_db_exec(db, p, SQL_webhook_delete, &n, args);
    if (rv == APR_SUCCESS && n == 0) {
        rv = APR_NOTFOUND;
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_db_exec(db, p, SQL_webhook_events_drop_all, NULL, eargs);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_db_exec(db, p, SQL_webhook_drops_delete, NULL, eargs);
    }
    return qrt_db_end_with(db, p, tx, rv);
}

apr_status_t qrt_store_webhook_change(qrt_db_t *db, apr_pool_t *p, qrt_webhook_t *w,
                                      int enable, const char *reason)
{
    apr_dbd_transaction_t *tx;
    apr_int64_t now = webhook_now();
    const void *cargs[] = { w->url, &w->events, &w->id, &w->account_id };
    const void *args[] = { &w->id, &w->account_id };
    const void *dargs[] = { &now, reason, &w->id, &w->account_id };
    const void *eargs[] = { &w->id };
    apr_int64_t account_id = w->account_id;
    int n = 0;
    apr_status_t rv = qrt_db_begin(db, p, &tx);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = qrt_db_exec(db, p, SQL_webhook_change, &n, cargs);
    if (rv == APR_SUCCESS && n == 0) {
        rv = APR_NOTFOUND;
    }
    if (rv == APR_SUCCESS && enable == 0) {
        /* (as the delivery worker's disable: no event is left waiting for it) */
        rv = qrt_db_exec(db, p, SQL_webhook_disable, &n, dargs);
        if (rv == APR_SUCCESS && n > 0) {
            rv = qrt_db_exec(db, p, SQL_webhook_events_drop_all, NULL, eargs);
        }
    }
    else if (rv == APR_SUCCESS && enable == 1) {
        rv = qrt_db_exec(db, p, SQL_webhook_enable, NULL, args);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_store_webhook_get(db, p, w->id, w);
        if (rv == APR_SUCCESS && w->account_id != account_id) {
            rv = APR_NOTFOUND;
        }
    }
    return qrt_db_end_with(db, p, tx, rv);
}

apr_status_t qrt_store_webhook_secret_new(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                          apr_int64_t id, apr_int64_t keep_until,
                                          const char **secret)
{
    const char *made = qrt_webhook_secret_make(p);
    int n = 0;
    apr_status_t rv;

    *secret = NULL;
    if (!made) {
        db->error = "no random bytes for a secret";
        return APR_EGENERAL;
    }
    if (keep_until > 0) {
        const void *args[] = { &keep_until, made, &id, &account_id };

        rv = qrt_db_exec(db, p, SQL_webhook_secret_new, &n, args);
    }
    else {
        const void *args[] = { made, &id, &account_id };

        rv = qrt_db_exec(db, p, SQL_webhook_secret_only, &n, args);
    }
    if (rv == APR_SUCCESS && n == 0) {
        rv = APR_NOTFOUND;
    }
    if (rv == APR_SUCCESS) {
        *secret = made;
    }
    return rv;
}

/* The webhook row of an account's, read first (on PostgreSQL under a share lock, so that a
 * disable or DELETE orders against what follows): APR_NOTFOUND, APR_EBUSY when it is
 * disabled. */
static apr_status_t webhook_enabled_row(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                        apr_int64_t id)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *args[] = { &id, &account_id };
    apr_status_t rv = qrt_db_select(db, p, SQL_webhook_row_shared, &res, args);
    int found = 0, disabled = 0;

    while (rv == APR_SUCCESS && qrt_db_row(db, p, res, &row) == 0) {
        found = 1;
        disabled = qrt_db_str(db, row, 0) != NULL;
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    return !found ? APR_NOTFOUND : disabled ? APR_EBUSY : APR_SUCCESS;
}

apr_status_t qrt_store_webhook_recover(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                       apr_int64_t id, apr_int64_t since, int *n)
{
    apr_dbd_transaction_t *tx;
    apr_int64_t now = webhook_now();
    const void *args[] = { &now, &id, &since };
    apr_status_t rv = qrt_db_begin(db, p, &tx);

    *n = 0;
    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = webhook_enabled_row(db, p, account_id, id);
    if (rv == APR_SUCCESS) {
        rv = qrt_db_exec(db, p, SQL_webhook_events_recover, n, args);
    }
    return qrt_db_end_with(db, p, tx, rv);
}

apr_status_t qrt_store_webhook_counts(qrt_db_t *db, apr_pool_t *p, apr_int64_t id,
                                      apr_int64_t *pending, apr_int64_t *dropped)
{
    int state = QRT_WEBHOOK_PENDING;
    const void *args[] = { &id, &state };
    apr_status_t rv;

    *pending = *dropped = 0;
    rv = qrt_db_select_int(db, p, SQL_webhook_events_state_count, args, pending);
    if (rv == APR_SUCCESS) {
        state = QRT_WEBHOOK_DROPPED;
        rv = qrt_db_select_int(db, p, SQL_webhook_events_state_count, args, dropped);
    }
    if (rv == APR_SUCCESS) {
        apr_int64_t since = webhook_now() - QRT_WEBHOOK_KEEP, bound = 0;
        const void *dargs[] = { &id, &since };

        rv = qrt_db_select_int(db, p, SQL_webhook_drops_count, dargs, &bound);
        *dropped += bound;
    }
    return rv;
}

apr_status_t qrt_store_webhook_attempts(qrt_db_t *db, apr_pool_t *p, apr_int64_t id,
                                        apr_int64_t offset, apr_int64_t limit,
                                        apr_array_header_t **out, apr_int64_t *total)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *cargs[] = { &id };
    const void *args[] = { &id, &limit, &offset };
    apr_status_t rv;

    *out = apr_array_make(p, 16, sizeof(qrt_webhook_attempt_t));
    *total = 0;
    rv = qrt_db_select_int(db, p, SQL_webhook_attempt_count, cargs, total);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = qrt_db_select(db, p, SQL_webhook_attempt_page, &res, args);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        qrt_webhook_attempt_t *a = apr_array_push(*out);

        a->id = qrt_db_int(db, row, 0, 0);
        a->msg_id = apr_pstrdup(p, qrt_db_str(db, row, 1));
        a->event_type = apr_pstrdup(p, qrt_db_str(db, row, 2));
        a->attempt = qrt_db_int(db, row, 3, 0);
        a->has_status = qrt_db_str(db, row, 4) != NULL;
        a->http_status = qrt_db_int(db, row, 4, 0);
        a->error = apr_pstrdup(p, qrt_db_str(db, row, 5));
        a->at = qrt_db_int(db, row, 6, 0);
        a->next_attempt_at = qrt_db_int(db, row, 7, 0);
    }
    return APR_SUCCESS;
}

/* ---- the events -------------------------------------------------------------------- */

/* Stored text is not trusted to be UTF-8: never drop a member for it. */
static json_t *webhook_str(apr_pool_t *p, const char *s)
{
    json_t *j;

    if (!s) {
        return json_null();
    }
    j = json_string(s);
    return j ? j : json_string(qrt_csv_utf8_clean(p, s, strlen(s)));
}

json_t *qrt_store_webhook_visit_json(apr_pool_t *p, const qrt_visit_t *v, const char *code)
{
    json_t *j = json_object();
    char when[QRT_DATE_LEN];

    qrt_date_format(when, v->visit_start, 0);
    json_object_set_new(j, "id", json_integer(v->id));
    json_object_set_new(j, "tracker_id", json_integer(v->tracker_id));
    json_object_set_new(j, "code", webhook_str(p, code));
    json_object_set_new(j, "visit_start", json_string(when));
    json_object_set_new(j, "source", webhook_str(p, v->source));
    json_object_set_new(j, "ip", webhook_str(p, v->ip));
    json_object_set_new(j, "country", webhook_str(p, v->country));
    json_object_set_new(j, "city", webhook_str(p, v->city));
    json_object_set_new(j, "browser", webhook_str(p, v->browser));
    json_object_set_new(j, "browser_version", webhook_str(p, v->browser_version));
    json_object_set_new(j, "os", webhook_str(p, v->os));
    json_object_set_new(j, "device", webhook_str(p, v->device));
    json_object_set_new(j, "referer", webhook_str(p, v->referer));
    json_object_set_new(j, "user_agent", webhook_str(p, v->user_agent));
    json_object_set_new(j, "bot", json_boolean(v->bot));
    json_object_set_new(j, "destination", webhook_str(p, v->destination));
    return j;
}

json_t *qrt_store_webhook_tracker_json(const qrt_tracker_t *t)
{
    json_t *j = json_object(), *tags = json_array();
    int i;

    for (i = 0; t->tags && i < t->tags->nelts; i++) {
        json_array_append_new(tags, json_string(APR_ARRAY_IDX(t->tags, i, const char *)));
    }
    json_object_set_new(j, "tracker_id", json_integer(t->id));
    json_object_set_new(j, "code", qrt_json_str(t->code));
    json_object_set_new(j, "name", qrt_json_str(t->name));
    json_object_set_new(j, "type", qrt_json_str(t->type));
    json_object_set_new(j, "redirect_url", qrt_json_str(t->redirect_url));
    json_object_set_new(j, "tags", tags);
    json_object_set_new(j, "created_at", qrt_json_time(t->created_at));
    json_object_set_new(j, "updated_at", qrt_json_time(t->updated_at));
    json_object_set_new(j, "totalScans", json_integer(t->total_scans));
    json_object_set_new(j, "totalClicks", json_integer(t->total_clicks));
    json_object_set_new(j, "password_protected", json_boolean(t->password_protected));
    return j;
}

/* One outbox row; args: WEBHOOK_EVENT_NARGS pointers, in p. */
static void webhook_event_args(apr_pool_t *p, const void **args, apr_int64_t webhook_id,
                               int type, const apr_int64_t *tracker_id, const char *body,
                               apr_int64_t now)
{
    apr_int64_t *ints = apr_palloc(p, 3 * sizeof(*ints));
    const char *msg = qrt_webhook_msg_id(p);

    ints[0] = webhook_id;
    ints[1] = now;
    ints[2] = now;
    args[0] = &ints[0];
    args[1] = msg;
    args[2] = qrt_webhook_event_name(type);
    args[3] = tracker_id;
    args[4] = body;
    args[5] = &ints[1];
    args[6] = &ints[2];
}

/* known: account id -> its subscribers of type, read once for several trackers (or NULL).
 * given: the event's data (else the tracker's), made only when someone takes the event. */
static apr_status_t webhook_tracker_event(qrt_db_t *db, apr_pool_t *p, int type,
                                          const qrt_tracker_t *t, apr_hash_t *known,
                                          json_t *(*given)(apr_pool_t *, const qrt_tracker_t *,
                                                           const void *),
                                          const void *given_ctx)
{
    apr_int64_t account_id = t->account_id, now = webhook_now();
    apr_array_header_t *hooks = apr_array_make(p, 4, sizeof(apr_int64_t));
    qrt_tracker_t loaded;
    apr_status_t rv;
    const char *body;
    json_t *data;
    int i;

    if (!account_id) {
        const void *args[] = { &t->id };
        apr_dbd_results_t *res;
        apr_dbd_row_t *row = NULL;

        rv = qrt_db_select(db, p, SQL_webhook_tracker_owner, &res, args);
        if (rv != APR_SUCCESS) {
            return rv;
        }
        while (qrt_db_row(db, p, res, &row) == 0) {
            account_id = qrt_db_int(db, row, 1, 0);
        }
    }
    if (known && apr_hash_get(known, &account_id, sizeof(account_id))) {
        hooks = apr_hash_get(known, &account_id, sizeof(account_id));
    }
    else {
        const void *args[] = { &account_id, &type };

        rv = qrt_db_each(db, p, SQL_webhook_subscribers, args, qrt_db_int_list_row, hooks);
        if (rv == APR_SUCCESS && known) {
            apr_hash_set(known, apr_pmemdup(p, &account_id, sizeof(account_id)),
                         sizeof(account_id), hooks);
        }
    }
    if (rv != APR_SUCCESS || hooks->nelts == 0) {
        return rv;
    }
    if (given) {
        data = given(p, t, given_ctx);
    }
    else if (t->event_json) {
        data = t->event_json(t->event_ctx, t);
    }
    else {
        if (!t->code) {
            memset(&loaded, 0, sizeof(loaded));
            rv = qrt_store_tracker_get(db, p, t->id, &loaded);
            if (rv != APR_SUCCESS) {
                return rv == APR_NOTFOUND ? APR_SUCCESS : rv;
            }
            t = &loaded;
        }
        data = qrt_store_webhook_tracker_json(t);
    }
    body = qrt_webhook_body(p, type, now, data);
    for (i = 0; i < hooks->nelts && rv == APR_SUCCESS; i++) {
        const void *args[WEBHOOK_EVENT_NARGS];

        webhook_event_args(p, args, APR_ARRAY_IDX(hooks, i, apr_int64_t), type, &t->id, body,
                           now);
        rv = qrt_db_exec(db, p, SQL_webhook_event_add, NULL, args);
    }
    return rv;
}

apr_status_t qrt_store_webhook_tracker_event(qrt_db_t *db, apr_pool_t *p, int type,
                                             const qrt_tracker_t *t)
{
    return webhook_tracker_event(db, p, type, t, NULL, NULL, NULL);
}

apr_status_t qrt_store_webhook_test(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                    apr_int64_t id, const char **msg_id)
{
    apr_dbd_transaction_t *tx;
    apr_int64_t now = webhook_now();
    /* (no tracker: its own (webhook, tracker) pair in the outbox's order, 0 rather than
     * NULL, which PostgreSQL's index orders last and the due events' walk would not
     * reach) */
    apr_int64_t *none = apr_pcalloc(p, sizeof(*none));
    const void *args[WEBHOOK_EVENT_NARGS];
    json_t *data;
    apr_status_t rv = qrt_db_begin(db, p, &tx);

    *msg_id = NULL;
    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = webhook_enabled_row(db, p, account_id, id);
    if (rv == APR_SUCCESS) {
        data = json_object();
        json_object_set_new(data, "webhook_id", json_integer(id));
        webhook_event_args(p, args, id, QRT_WEBHOOK_TEST, none,
                           qrt_webhook_body(p, QRT_WEBHOOK_TEST, now, data), now);
        rv = qrt_db_exec(db, p, SQL_webhook_event_add, NULL, args);
    }
    rv = qrt_db_end_with(db, p, tx, rv);
    if (rv == APR_SUCCESS) {
        *msg_id = args[1];
    }
    return rv;
}

typedef struct {
    const char *reason;
    apr_int64_t at;
} webhook_patch_expiry;

static json_t *webhook_expired_json(apr_pool_t *p, const qrt_tracker_t *t, const void *ctx)
{
    const webhook_patch_expiry *x = ctx;
    json_t *data = json_object();

    json_object_set_new(data, "tracker_id", json_integer(t->id));
    json_object_set_new(data, "code", webhook_str(p, t->code));
    json_object_set_new(data, "reason", json_string(x->reason));
    json_object_set_new(data, "valid_until", t->route.has_until
                                             ? qrt_json_time(t->route.valid_until)
                                             : json_null());
    json_object_set_new(data, "max_scans", t->route.max_scans > 0
                                           ? json_integer(t->route.max_scans) : json_null());
    json_object_set_new(data, "expired_at", qrt_json_time(x->at));
    return data;
}

const char *qrt_store_tracker_patch_expiry(const qrt_tracker_t *before,
                                           const qrt_tracker_t *after, apr_int64_t now)
{
    const qrt_route_src_t *b = &before->route, *a = &after->route;

    if (!(b->max_scans > 0 && before->redirected >= b->max_scans)
        && a->max_scans > 0 && after->redirected >= a->max_scans) {
        return "max_scans";
    }
    /* (a last visit at or before valid_until leaves it to the next scan or click) */
    if (!(b->has_until && b->valid_until < now) && a->has_until && a->valid_until < now
        && after->last_visit > a->valid_until) {
        return "valid_until";
    }
    return NULL;
}

apr_status_t qrt_store_webhook_tracker_expired(qrt_db_t *db, apr_pool_t *p,
                                               const qrt_tracker_t *t, const char *reason,
                                               apr_int64_t at)
{
    webhook_patch_expiry x = { reason, at };

    return webhook_tracker_event(db, p, QRT_WEBHOOK_TRACKER_EXPIRED, t, NULL,
                                 webhook_expired_json, &x);
}

apr_status_t qrt_store_webhook_tracker_events(qrt_db_t *db, apr_pool_t *p, int type,
                                              qrt_tracker_t *const *t, int n)
{
    apr_hash_t *known = apr_hash_make(p);
    apr_status_t rv = APR_SUCCESS;
    int i;

    for (i = 0; i < n && rv == APR_SUCCESS; i++) {
        if (t[i]) {
            rv = webhook_tracker_event(db, p, type, t[i], known, NULL, NULL);
        }
    }
    return rv;
}

/* ---- the scan writer's side ---------------------------------------------------------- */

typedef struct {
    apr_int64_t id;
    int events;
} webhook_sub;

typedef struct {
    apr_int64_t id, account_id;
    const char *code;
} webhook_trk;

typedef struct {
    apr_int64_t webhook_id, cut;    /* its pending events up to cut are to be dropped */
} webhook_cut;

struct qrt_webhook_cache_t {
    apr_pool_t *hooks_pool;         /* the subscriptions, made again on a change */
    apr_hash_t *accounts;           /* account id -> apr_array_header_t of webhook_sub */
    int any;                        /* every enabled webhook's events together */
    int loaded;
    apr_int64_t fp[WEBHOOK_FP];     /* webhook_fingerprint when they were read */
    apr_time_t checked;
    apr_uint32_t gen;
    apr_pool_t *trk_pool;
    apr_hash_t *trackers;           /* tracker id -> webhook_trk (never change) */
    apr_array_header_t *staged;     /* webhooks given events in the open transaction */
    apr_pool_t *touched_pool;
    apr_hash_t *touched;            /* ... since the last check of the bound */
    apr_time_t bound_at;
    apr_array_header_t *cuts;       /* webhook_cut: drops found, not yet done */
    apr_int64_t sweep_events, sweep_attempts;   /* where the sweep's pass is */
};

qrt_webhook_cache_t *qrt_webhook_cache_make(apr_pool_t *p)
{
    qrt_webhook_cache_t *c = apr_pcalloc(p, sizeof(*c));

    apr_pool_create(&c->hooks_pool, p);
    apr_pool_create(&c->trk_pool, p);
    apr_pool_create(&c->touched_pool, p);
    c->staged = apr_array_make(p, 64, sizeof(apr_int64_t));
    c->cuts = apr_array_make(p, 4, sizeof(webhook_cut));
    qrt_webhook_cache_reset(c);
    return c;
}

void qrt_webhook_cache_reset(qrt_webhook_cache_t *c)
{
    apr_pool_clear(c->hooks_pool);
    apr_pool_clear(c->trk_pool);
    apr_pool_clear(c->touched_pool);
    c->accounts = apr_hash_make(c->hooks_pool);
    c->trackers = apr_hash_make(c->trk_pool);
    c->touched = apr_hash_make(c->touched_pool);
    c->staged->nelts = 0;
    c->cuts->nelts = 0;
    c->any = 0;
    c->loaded = 0;
    c->checked = 0;
}

static apr_status_t webhook_fp_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    apr_int64_t *fp = ctx;
    int i;

    for (i = 0; i < WEBHOOK_FP; i++) {
        fp[i] = qrt_db_int(db, row, i, 0);
    }
    return APR_SUCCESS;
}

static apr_status_t webhook_sub_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    qrt_webhook_cache_t *c = ctx;
    apr_int64_t account = qrt_db_int(db, row, 1, 0);
    apr_array_header_t *subs = apr_hash_get(c->accounts, &account, sizeof(account));
    webhook_sub *s;

    if (!subs) {
        apr_int64_t *key = apr_pmemdup(c->hooks_pool, &account, sizeof(account));

        subs = apr_array_make(c->hooks_pool, 2, sizeof(webhook_sub));
        apr_hash_set(c->accounts, key, sizeof(*key), subs);
    }
    s = apr_array_push(subs);
    s->id = qrt_db_int(db, row, 0, 0);
    s->events = (int)qrt_db_int(db, row, 2, 0);
    c->any |= s->events;
    return APR_SUCCESS;
}

/* The enabled webhooks read again when they changed: this server's API said so (gen),
 * or their fingerprint moved (checked every QRT_WEBHOOK_CHECK). */
static apr_status_t webhook_cache_refresh(qrt_db_t *db, apr_pool_t *p, qrt_webhook_cache_t *c,
                                          apr_uint32_t gen)
{
    apr_time_t now = qrt_clock_now();
    apr_int64_t fp[WEBHOOK_FP] = { 0 };
    const void *none[] = { NULL };
    apr_status_t rv;

    if (c->loaded && gen == c->gen && now - c->checked < QRT_WEBHOOK_CHECK) {
        return APR_SUCCESS;
    }
    rv = qrt_db_each(db, p, SQL_webhook_fingerprint, none, webhook_fp_row, fp);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    c->checked = now;
    c->gen = gen;
    if (c->loaded && !memcmp(fp, c->fp, sizeof(fp))) {
        return APR_SUCCESS;
    }
    apr_pool_clear(c->hooks_pool);
    c->accounts = apr_hash_make(c->hooks_pool);
    c->any = 0;
    c->loaded = 0;
    rv = qrt_db_each(db, p, SQL_webhook_enabled_all, none, webhook_sub_row, c);
    if (rv == APR_SUCCESS) {
        memcpy(c->fp, fp, sizeof(fp));
        c->loaded = 1;
    }
    return rv;
}

static apr_status_t webhook_trk_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    webhook_trk *t = ctx;

    t->account_id = qrt_db_int(db, row, 1, 0);
    t->code = qrt_db_str(db, row, 2);
    return APR_SUCCESS;
}

/* A tracker's account and code, from the cache or the database (NULL: no such tracker). */
static apr_status_t webhook_cache_tracker(qrt_db_t *db, apr_pool_t *p, qrt_webhook_cache_t *c,
                                          apr_int64_t id, const webhook_trk **out)
{
    webhook_trk *t = apr_hash_get(c->trackers, &id, sizeof(id)), found;
    const void *args[] = { &id };
    apr_status_t rv;

    *out = t;
    if (t) {
        return APR_SUCCESS;
    }
    memset(&found, 0, sizeof(found));
    rv = qrt_db_each(db, p, SQL_webhook_tracker_owner, args, webhook_trk_row, &found);
    if (rv != APR_SUCCESS || !found.account_id) {
        return rv;
    }
    if (apr_hash_count(c->trackers) >= WEBHOOK_TRACKERS_MAX) {
        apr_pool_clear(c->trk_pool);
        c->trackers = apr_hash_make(c->trk_pool);
    }
    t = apr_palloc(c->trk_pool, sizeof(*t));
    t->id = id;
    t->account_id = found.account_id;
    t->code = apr_pstrdup(c->trk_pool, found.code);
    apr_hash_set(c->trackers, &t->id, sizeof(t->id), t);
    *out = t;
    return APR_SUCCESS;
}

/* The webhooks of a tracker's account that take event type bit (NULL: none). */
static apr_array_header_t *webhook_cache_subs(qrt_webhook_cache_t *c, const webhook_trk *t,
                                              int bit)
{
    apr_array_header_t *subs = apr_hash_get(c->accounts, &t->account_id,
                                            sizeof(t->account_id));
    int i;

    for (i = 0; subs && i < subs->nelts; i++) {
        if (APR_ARRAY_IDX(subs, i, webhook_sub).events & bit) {
            return subs;
        }
    }
    return NULL;
}

/* Rows (WEBHOOK_EVENT_NARGS values each) of one event for every webhook in subs that
 * takes bit; the webhooks staged for the bound. */
static void webhook_rows_add(apr_pool_t *p, qrt_webhook_cache_t *c, apr_array_header_t *rows,
                             apr_array_header_t *subs, int bit, const apr_int64_t *tracker_id,
                             const char *body, apr_int64_t now)
{
    int i;

    for (i = 0; i < subs->nelts; i++) {
        const webhook_sub *s = &APR_ARRAY_IDX(subs, i, webhook_sub);
        const void **args;

        if (!(s->events & bit)) {
            continue;
        }
        args = apr_array_push(rows);
        webhook_event_args(p, args, s->id, bit, tracker_id, body, now);
        APR_ARRAY_PUSH(c->staged, apr_int64_t) = s->id;
    }
}

/* webhook_live's row: the webhook's id -> the events it takes. */
static apr_status_t webhook_live_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    apr_hash_t *live = ctx;
    apr_pool_t *p = apr_hash_pool_get(live);
    apr_int64_t *v = apr_palloc(p, 2 * sizeof(*v));

    v[0] = qrt_db_int(db, row, 0, 0);
    v[1] = qrt_db_int(db, row, 1, 0);
    apr_hash_set(live, &v[0], sizeof(v[0]), &v[1]);
    return APR_SUCCESS;
}

/* Of rows (nargs values each, the webhook's id first, the event's name third), only those
 * of webhooks that are still there, enabled and taking that event, read in the writer's
 * transaction (webhook_live): the cache may be older than a DELETE or a disable, whose
 * dropping of the waiting events would miss what this transaction writes, left waiting for
 * good, or than a PATCH of the events. On PostgreSQL those webhooks stay locked until the
 * commit, so a DELETE, disable or change orders against it. A webhook found gone or
 * changed makes the next batch read the cache again. */
static apr_status_t webhook_rows_live(qrt_db_t *db, apr_pool_t *p, qrt_webhook_cache_t *c,
                                      apr_array_header_t *rows, int nargs)
{
    apr_hash_t *ids = apr_hash_make(p), *live = apr_hash_make(p);
    apr_array_header_t *distinct = apr_array_make(p, 4, sizeof(apr_int64_t));
    const void **args = (const void **)rows->elts;
    const void *qargs[1];
    apr_status_t rv;
    int i, kept = 0;

    if (rows->nelts == 0) {
        return APR_SUCCESS;
    }
    for (i = 0; i < rows->nelts; i++) {
        const apr_int64_t *id = args[(apr_size_t)i * nargs];

        if (!apr_hash_get(ids, id, sizeof(*id))) {
            apr_hash_set(ids, id, sizeof(*id), "");
            APR_ARRAY_PUSH(distinct, apr_int64_t) = *id;
        }
    }
    qargs[0] = qrt_db_id_list(db, p, distinct);
    rv = qrt_db_each(db, p, SQL_webhook_live, qargs, webhook_live_row, live);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    for (i = 0; i < rows->nelts; i++) {
        const apr_int64_t *id = args[(apr_size_t)i * nargs];
        const apr_int64_t *events = apr_hash_get(live, id, sizeof(*id));

        if (events && (*events & qrt_webhook_event_bit(args[(apr_size_t)i * nargs + 2]))) {
            if (kept != i) {
                memcpy(&args[(apr_size_t)kept * nargs], &args[(apr_size_t)i * nargs],
                       (apr_size_t)nargs * sizeof(*args));
            }
            kept++;
        }
    }
    if (kept < rows->nelts) {
        /* (read whole again, whether the fingerprint moved or not: a change by hand may
         * keep it) */
        c->loaded = 0;
    }
    rows->nelts = kept;
    return APR_SUCCESS;
}

static apr_status_t webhook_rows_write(qrt_db_t *db, apr_pool_t *p, qrt_webhook_cache_t *c,
                                       apr_array_header_t *rows)
{
    apr_status_t rv = webhook_rows_live(db, p, c, rows, WEBHOOK_EVENT_NARGS);

    if (rv != APR_SUCCESS || rows->nelts == 0) {
        return rv;
    }
    return qrt_db_exec_rows(db, p, SQL_webhook_event_add, WEBHOOK_EVENT_TYPES,
                            (const void **)rows->elts, rows->nelts);
}

/* A visit's rows (WEBHOOK_VISIT_NARGS values each) for every webhook in subs that takes
 * bit: its reference only, the body is rendered at delivery (qrt_store_whsend.c). */
static void webhook_visit_rows_add(apr_pool_t *p, qrt_webhook_cache_t *c,
                                   apr_array_header_t *rows, apr_array_header_t *subs,
                                   int bit, const qrt_visit_t *v, apr_int64_t now)
{
    int i;

    for (i = 0; i < subs->nelts; i++) {
        const webhook_sub *s = &APR_ARRAY_IDX(subs, i, webhook_sub);
        apr_int64_t *ints;
        const void **args;

        if (!(s->events & bit)) {
            continue;
        }
        ints = apr_palloc(p, 3 * sizeof(*ints));
        ints[0] = s->id;
        ints[1] = now;
        ints[2] = now;
        args = apr_array_push(rows);
        args[0] = &ints[0];
        args[1] = NULL;     /* the batch's ids are drawn at once (webhook_visit_ids) */
        args[2] = qrt_webhook_event_name(bit);
        args[3] = &v->tracker_id;
        args[4] = &v->id;
        args[5] = &ints[1];
        args[6] = &ints[2];
        args[7] = &v->visit_start;
        APR_ARRAY_PUSH(c->staged, apr_int64_t) = s->id;
    }
}

/* The webhook-ids of a batch's visit events (webhook_visit_rows_add's rows), from one
 * draw of the system's randomness rather than one a visit. */
static apr_status_t webhook_visit_ids(qrt_db_t *db, apr_pool_t *p, apr_array_header_t *rows)
{
    const char **ids = qrt_webhook_msg_ids(p, rows->nelts);
    int i;

    if (!ids) {
        db->error = "no randomness for the events' webhook-ids";
        return APR_EGENERAL;
    }
    for (i = 0; i < rows->nelts; i++) {
        ((const void **)rows->elts)[(apr_size_t)i * WEBHOOK_VISIT_NARGS + 1] = ids[i];
    }
    return APR_SUCCESS;
}

struct qrt_webhook_after_t {
    apr_array_header_t *rows;       /* their events (WEBHOOK_EVENT_NARGS values each) */
    apr_hash_t *cause;              /* tracker id: the index of the visit that expired it */
};

/* Visit rows: the live webhooks' alone, with their webhook-ids, written. */
static apr_status_t webhook_visit_rows_write(qrt_db_t *db, apr_pool_t *p,
                                             qrt_webhook_cache_t *c, apr_array_header_t *rows)
{
    apr_status_t rv = webhook_rows_live(db, p, c, rows, WEBHOOK_VISIT_NARGS);

    if (rv != APR_SUCCESS || rows->nelts == 0) {
        return rv;
    }
    rv = webhook_visit_ids(db, p, rows);
    return rv ? rv : qrt_db_exec_rows(db, p, SQL_webhook_visit_event_add, WEBHOOK_VISIT_TYPES,
                                      (const void **)rows->elts, rows->nelts);
}

apr_status_t qrt_store_webhook_visits(qrt_db_t *db, apr_pool_t *p, qrt_webhook_cache_t *c,
                                      apr_uint32_t gen, const qrt_visit_t *v, int n,
                                      const qrt_webhook_after_t *after)
{
    apr_array_header_t *rows, *later;
    apr_int64_t now = webhook_now();
    apr_status_t rv = webhook_cache_refresh(db, p, c, gen);
    int i;

    if (rv != APR_SUCCESS) {
        return rv;
    }
    rows = apr_array_make(p, n, WEBHOOK_VISIT_NARGS * sizeof(const void *));
    later = apr_array_make(p, 1, WEBHOOK_VISIT_NARGS * sizeof(const void *));
    for (i = 0; i < n && (c->any & (QRT_WEBHOOK_SCAN_CREATED | QRT_WEBHOOK_CLICK_CREATED));
         i++) {
        int bit = v[i].source && !strcmp(v[i].source, "click") ? QRT_WEBHOOK_CLICK_CREATED
                                                               : QRT_WEBHOOK_SCAN_CREATED;
        const int *cause = after ? apr_hash_get(after->cause, &v[i].tracker_id,
                                                sizeof(v[i].tracker_id)) : NULL;
        const webhook_trk *t;
        apr_array_header_t *subs;

        if (!(c->any & bit)) {
            continue;
        }
        rv = webhook_cache_tracker(db, p, c, v[i].tracker_id, &t);
        if (rv != APR_SUCCESS) {
            return rv;
        }
        if (t && (subs = webhook_cache_subs(c, t, bit)) != NULL) {
            /* (a visit of the batch after the one that expired its tracker: after the
             * expiry) */
            webhook_visit_rows_add(p, c, cause && i > *cause ? later : rows, subs, bit, &v[i],
                                   now);
        }
    }
    rv = webhook_visit_rows_write(db, p, c, rows);
    if (rv == APR_SUCCESS && after) {
        rv = webhook_rows_write(db, p, c, after->rows);
    }
    return rv == APR_SUCCESS ? webhook_visit_rows_write(db, p, c, later) : rv;
}

/* What ended a tracker's validity in a batch: "max_scans", "valid_until" or NULL;
 * *at the time of the visit that met it, *cause its index (max_scans: the last of the
 * batch's scans sent on, the one that took the last scan; the caps are taken in the
 * order the tracker's visits came). */
static const char *webhook_expiry_reason(const qrt_visit_t *v, int n, apr_int64_t tracker,
                                         apr_int64_t last_visit, int has_until,
                                         apr_int64_t valid_until, apr_int64_t max_scans,
                                         apr_int64_t redirected, apr_int64_t *at, int *cause)
{
    int i;

    *cause = -1;
    for (i = 0; max_scans > 0 && redirected >= max_scans && i < n; i++) {
        if (v[i].tracker_id == tracker && v[i].capped == QRT_VISIT_CAP_COUNT
            && v[i].cap_outcome == QRT_VISIT_CAP_SENT) {
            *at = v[i].visit_start;
            *cause = i;
        }
    }
    if (*cause >= 0) {
        return "max_scans";
    }
    for (i = 0; has_until && last_visit <= valid_until && i < n; i++) {
        if (v[i].tracker_id == tracker && !v[i].bot && v[i].visit_start > valid_until) {
            *at = v[i].visit_start;
            *cause = i;
            return "valid_until";
        }
    }
    return NULL;
}

typedef struct {
    apr_int64_t last_visit, valid_until, max_scans, redirected;
    int has_until, found;
} webhook_expiry;

static apr_status_t webhook_expiry_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    webhook_expiry *e = ctx;

    e->found = 1;
    e->last_visit = qrt_db_int(db, row, 0, 0);
    e->has_until = qrt_db_str(db, row, 1) != NULL;
    e->valid_until = qrt_db_int(db, row, 1, 0);
    e->max_scans = qrt_db_int(db, row, 2, 0);
    e->redirected = qrt_db_int(db, row, 3, 0);
    return APR_SUCCESS;
}

apr_status_t qrt_store_webhook_expiry(qrt_db_t *db, apr_pool_t *p, qrt_webhook_cache_t *c,
                                      apr_uint32_t gen, const qrt_visit_t *v, int n,
                                      qrt_webhook_after_t **after)
{
    apr_array_header_t *rows;
    apr_hash_t *seen;
    apr_int64_t now = webhook_now();
    apr_status_t rv = webhook_cache_refresh(db, p, c, gen);
    int i, locked = !qrt_dialect_remote(db->driver);

    *after = NULL;
    if (rv != APR_SUCCESS || !(c->any & QRT_WEBHOOK_TRACKER_EXPIRED)) {
        return rv;
    }
    rows = apr_array_make(p, 4, WEBHOOK_EVENT_NARGS * sizeof(const void *));
    seen = apr_hash_make(p);
    for (i = 0; i < n; i++) {
        const apr_int64_t *id = &v[i].tracker_id;
        const void *args[] = { id };
        const webhook_trk *t;
        apr_array_header_t *subs;
        webhook_expiry e;
        const char *reason;
        apr_int64_t at = 0;
        apr_array_header_t *to;
        json_t *data;
        int cause;

        if (apr_hash_get(seen, id, sizeof(*id))) {
            continue;
        }
        apr_hash_set(seen, id, sizeof(*id), "");
        rv = webhook_cache_tracker(db, p, c, *id, &t);
        if (rv != APR_SUCCESS) {
            return rv;
        }
        if (!t || !(subs = webhook_cache_subs(c, t, QRT_WEBHOOK_TRACKER_EXPIRED))) {
            continue;
        }
        for (;;) {
            memset(&e, 0, sizeof(e));
            rv = qrt_db_each(db, p, SQL_webhook_tracker_expiry, args, webhook_expiry_row, &e);
            if (rv != APR_SUCCESS) {
                return rv;
            }
            reason = e.found ? webhook_expiry_reason(v, n, *id, e.last_visit, e.has_until,
                                                     e.valid_until, e.max_scans, e.redirected,
                                                     &at, &cause)
                             : NULL;
            /* An expiry by valid_until is told by the tracker's last visit, which another
             * node's writer may be recording meanwhile (max_scans holds the tracker's
             * routing row locked): read again under the write lock, which that writer
             * holds until its commit, so that only the first of the two makes the event.
             * (SQLite's writer holds its lock from the transaction's start.) */
            if (!reason || strcmp(reason, "valid_until") || locked) {
                break;
            }
            rv = qrt_store_write_lock(db, p);
            if (rv != APR_SUCCESS) {
                return rv;
            }
            locked = 1;
        }
        if (!reason) {
            continue;
        }
        data = json_object();
        json_object_set_new(data, "tracker_id", json_integer(*id));
        json_object_set_new(data, "code", webhook_str(p, t->code));
        json_object_set_new(data, "reason", json_string(reason));
        json_object_set_new(data, "valid_until", e.has_until ? qrt_json_time(e.valid_until)
                                                             : json_null());
        json_object_set_new(data, "max_scans", e.max_scans > 0 ? json_integer(e.max_scans)
                                                               : json_null());
        json_object_set_new(data, "expired_at", qrt_json_time(at));
        to = rows;
        if (!strcmp(reason, "max_scans")) {
            /* (written by qrt_store_webhook_visits, behind the visit that caused it) */
            if (!*after) {
                *after = apr_palloc(p, sizeof(**after));
                (*after)->rows = apr_array_make(p, 1, WEBHOOK_EVENT_NARGS * sizeof(void *));
                (*after)->cause = apr_hash_make(p);
            }
            apr_hash_set((*after)->cause, id, sizeof(*id), apr_pmemdup(p, &cause,
                                                                      sizeof(cause)));
            to = (*after)->rows;
        }
        webhook_rows_add(p, c, to, subs, QRT_WEBHOOK_TRACKER_EXPIRED, id,
                         qrt_webhook_body(p, QRT_WEBHOOK_TRACKER_EXPIRED, now, data), now);
    }
    return webhook_rows_write(db, p, c, rows);
}

void qrt_webhook_cache_commit(qrt_webhook_cache_t *c)
{
    int i;

    for (i = 0; c && i < c->staged->nelts; i++) {
        apr_int64_t id = APR_ARRAY_IDX(c->staged, i, apr_int64_t);

        if (!apr_hash_get(c->touched, &id, sizeof(id))) {
            apr_int64_t *key = apr_pmemdup(c->touched_pool, &id, sizeof(id));

            apr_hash_set(c->touched, key, sizeof(*key), key);
        }
    }
    if (c) {
        c->staged->nelts = 0;
    }
}

void qrt_webhook_cache_abort(qrt_webhook_cache_t *c)
{
    if (c) {
        c->staged->nelts = 0;
    }
}

/* The id of the newest pending event of a webhook past its newest limit (0: none). */
static apr_status_t webhook_bound_cut(qrt_db_t *db, apr_pool_t *p, apr_int64_t id,
                                      apr_int64_t limit, apr_int64_t *cut)
{
    const void *cargs[] = { &id, &limit };

    *cut = 0;
    return qrt_db_select_int(db, p, SQL_webhook_bound_cut, cargs, cut);
}

/* A webhook's oldest pending events up to cut, dropped; *n how many. Those never tried
 * are deleted, which costs a row's index entries once (a dropped row would be rewritten
 * now and deleted by the sweep later) and is counted per minute in webhook_drops; those
 * tried stay as dropped rows, which their attempts name. SQLite: at most
 * WEBHOOK_BOUND_SLICE of them, *more set when some up to cut are left (PostgreSQL's delete
 * holds no lock a commit waits for, and it has no index of a webhook's events by state
 * and id, schema 44, to find a slice's end with). */
static apr_status_t webhook_drop_upto(qrt_db_t *db, apr_pool_t *p, apr_int64_t id,
                                      apr_int64_t cut, apr_int64_t *n, int *more)
{
    const void *args[] = { &id, &cut };
    apr_int64_t at = webhook_now(), deleted, slice = WEBHOOK_BOUND_SLICE - 1, end = 0;
    int rows = 0, tried = 0;
    apr_status_t rv = APR_SUCCESS;

    *more = 0;
    if (qrt_db_dialect_is(db, QRT_DIALECT_SQLITE)) {
        const void *sargs[] = { &id, &slice };

        rv = qrt_db_select_int(db, p, SQL_webhook_bound_slice, sargs, &end);
        if (rv != APR_SUCCESS) {
            return rv;
        }
        if (end > 0 && end < cut) {
            args[1] = &end;
            *more = 1;
        }
    }
    rv = qrt_db_exec(db, p, SQL_webhook_bound_delete, &rows, args);
    if (rv == APR_SUCCESS) {
        rv = qrt_db_exec(db, p, SQL_webhook_bound_drop, &tried, args);
    }
    deleted = rows;
    at -= at % 60;
    if (rv == APR_SUCCESS && deleted > 0) {
        const void *dargs[] = { &id, &at, &deleted };

        rv = qrt_db_exec(db, p, SQL_webhook_drops_add, NULL, dargs);
    }
    if (rv == APR_SUCCESS) {
        *n += rows + tried;
    }
    return rv;
}

/* Of a webhook, the cut to drop up to: replaces one found before. */
static void webhook_cut_set(qrt_webhook_cache_t *c, apr_int64_t id, apr_int64_t cut)
{
    webhook_cut *w;
    int i;

    for (i = 0; i < c->cuts->nelts; i++) {
        w = &APR_ARRAY_IDX(c->cuts, i, webhook_cut);
        if (w->webhook_id == id) {
            w->cut = cut;
            return;
        }
    }
    w = apr_array_push(c->cuts);
    w->webhook_id = id;
    w->cut = cut;
}

int qrt_webhook_cache_bound_due(const qrt_webhook_cache_t *c)
{
    return c->cuts->nelts > 0
           || (apr_hash_count(c->touched) > 0
               && qrt_clock_now() - c->bound_at >= WEBHOOK_BOUND_EVERY);
}

apr_status_t qrt_store_webhook_bound(qrt_db_t *db, apr_pool_t *p, qrt_webhook_cache_t *c,
                                     apr_int64_t limit, int all, apr_int64_t *dropped)
{
    apr_time_t now = qrt_clock_now();
    apr_status_t rv = APR_SUCCESS;
    int i, kept = 0;

    *dropped = 0;
    if (!all && !qrt_webhook_cache_bound_due(c)) {
        return APR_SUCCESS;
    }
    if (all && (rv = webhook_cache_refresh(db, p, c, c->gen)) != APR_SUCCESS) {
        return rv;
    }
    if (all || (apr_hash_count(c->touched) > 0 && now - c->bound_at >= WEBHOOK_BOUND_EVERY)) {
        apr_hash_index_t *hi;

        for (hi = apr_hash_first(p, all ? c->accounts : c->touched); hi && rv == APR_SUCCESS;
             hi = apr_hash_next(hi)) {
            const void *val;
            const apr_array_header_t *subs;
            int k, nids;

            apr_hash_this(hi, NULL, NULL, (void **)&val);
            subs = all ? val : NULL;
            nids = all ? subs->nelts : 1;
            for (k = 0; k < nids && rv == APR_SUCCESS; k++) {
                apr_int64_t id = all ? APR_ARRAY_IDX(subs, k, webhook_sub).id
                                     : *(const apr_int64_t *)val, cut = 0;

                rv = webhook_bound_cut(db, p, id, limit, &cut);
                if (rv == APR_SUCCESS && cut > 0) {
                    webhook_cut_set(c, id, cut);
                }
            }
        }
        if (rv != APR_SUCCESS) {
            return rv;
        }
        c->bound_at = now;
        apr_pool_clear(c->touched_pool);
        c->touched = apr_hash_make(c->touched_pool);
    }
    /* a slice of each webhook's drop; those not done stay for the next call */
    for (i = 0; i < c->cuts->nelts; i++) {
        webhook_cut w = APR_ARRAY_IDX(c->cuts, i, webhook_cut);
        int more = 0;

        if (rv == APR_SUCCESS) {
            rv = webhook_drop_upto(db, p, w.webhook_id, w.cut, dropped, &more);
        }
        if (rv != APR_SUCCESS || more) {
            APR_ARRAY_IDX(c->cuts, kept++, webhook_cut) = w;
        }
    }
    c->cuts->nelts = kept;
    return rv;
}

/* One window of one table's sweep from *cursor: *cursor moves on, or back to 0 when
 * the window reached rows younger than before (the pass is over). */
static apr_status_t webhook_sweep_table(qrt_db_t *db, apr_pool_t *p, const char *end_label,
                                        const char *del_label, apr_int64_t *cursor,
                                        apr_int64_t before, apr_int64_t batch)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    apr_int64_t offset = batch - 1, end = APR_INT64_MAX, end_at = 0;
    const void *eargs[] = { cursor, &offset };
    apr_status_t rv = qrt_db_select(db, p, end_label, &res, eargs);
    int found = 0;

    if (rv != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        end = qrt_db_int(db, row, 0, 0);
        end_at = qrt_db_int(db, row, 1, 0);
        found = 1;
    }
    {
        const void *args[] = { cursor, &end, &before };

        rv = qrt_db_exec(db, p, del_label, NULL, args);
    }
    if (rv == APR_SUCCESS) {
        *cursor = found && end_at < before ? end : 0;
    }
    return rv;
}

apr_status_t qrt_store_webhook_sweep(qrt_db_t *db, apr_pool_t *p, qrt_webhook_cache_t *c,
                                     apr_int64_t before, apr_int64_t batch, int *more)
{
    apr_status_t rv = webhook_sweep_table(db, p, SQL_webhook_sweep_events_end,
                                          SQL_webhook_sweep_events, &c->sweep_events, before,
                                          batch);

    if (rv == APR_SUCCESS) {
        rv = webhook_sweep_table(db, p, SQL_webhook_sweep_attempts_end,
                                 SQL_webhook_sweep_attempts, &c->sweep_attempts, before,
                                 batch);
    }
    if (rv == APR_SUCCESS && c->sweep_events == 0) {
        const void *args[] = { &before };

        rv = qrt_db_exec(db, p, SQL_webhook_sweep_drops, NULL, args);
    }
    if (rv == APR_SUCCESS && c->sweep_events == 0) {
        apr_int64_t now = webhook_now();
        const void *args[] = { &now };

        rv = qrt_db_exec(db, p, SQL_webhook_secret_prev_sweep, NULL, args);
    }
    *more = c->sweep_events != 0 || c->sweep_attempts != 0;
    return rv;
}
