/* qrt_store_webhook: webhooks (schema 26), the events written to their outbox in the
 * transaction of what they report, the outbox bound and the sweep of old rows. */
#ifndef QRT_STORE_WEBHOOK_H
#define QRT_STORE_WEBHOOK_H

#include "qrt_store.h"
#include "qrt_webhook.h"

typedef struct {
    apr_int64_t id;
    apr_int64_t account_id;
    const char *url;
    int events;                     /* QRT_WEBHOOK_* bits */
    const char *secret;             /* set by qrt_store_webhook_add only */
    apr_int64_t created_at;
    apr_int64_t failures;
    apr_int64_t disabled_at;        /* 0: enabled */
    const char *disabled_reason;
} qrt_webhook_t;

/* One delivery attempt, as GET /webhook/<id>/deliveries lists it. */
typedef struct {
    apr_int64_t id;
    const char *msg_id;             /* NULL once its event was swept */
    const char *event_type;
    apr_int64_t attempt;
    int has_status;
    apr_int64_t http_status;
    const char *error;
    apr_int64_t at;
    apr_int64_t next_attempt_at;    /* 0: none */
} qrt_webhook_attempt_t;

/* Adds w (account_id, url, events set) with a new secret (w->secret), unless the
 * account has limit webhooks already: APR_ENOSPC. Sets id and created_at. */
apr_status_t qrt_store_webhook_add(qrt_db_t *db, apr_pool_t *p, qrt_webhook_t *w, int limit);
/* One page of an account's webhooks by id (array of qrt_webhook_t, no secret). */
apr_status_t qrt_store_webhook_list(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                    apr_int64_t offset, apr_int64_t limit,
                                    apr_array_header_t **out, apr_int64_t *total);
/* A webhook by id (no secret); APR_NOTFOUND. */
apr_status_t qrt_store_webhook_get(qrt_db_t *db, apr_pool_t *p, apr_int64_t id,
                                   qrt_webhook_t *out);
/* Deletes an account's webhook and drops its pending events; APR_NOTFOUND. */
apr_status_t qrt_store_webhook_delete(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                      apr_int64_t id);
/* Changes an account's webhook (PATCH /webhook/<id>: w's id, account_id, url and events);
 * enable 1: enabled again (its failures in a row start over), 0: disabled now with reason
 * (its waiting events dropped), -1: left as it is. *w is read again as the change left it
 * (no secret). APR_NOTFOUND. */
apr_status_t qrt_store_webhook_change(qrt_db_t *db, apr_pool_t *p, qrt_webhook_t *w,
                                      int enable, const char *reason);
/* A new secret for an account's webhook (*secret); the one it replaces still signs
 * deliveries until keep_until (epoch seconds), or (0) no more. APR_NOTFOUND. */
apr_status_t qrt_store_webhook_secret_new(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                          apr_int64_t id, apr_int64_t keep_until,
                                          const char **secret);
/* A webhook.test event for an account's enabled webhook, due now (*msg_id its
 * webhook-id): APR_NOTFOUND; APR_EBUSY when the webhook is disabled. */
apr_status_t qrt_store_webhook_test(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                    apr_int64_t id, const char **msg_id);
/* The events of an account's enabled webhook that failed every attempt, made at or after
 * since (epoch seconds), waiting again: due now, their attempts started over; *n how many.
 * APR_NOTFOUND; APR_EBUSY when the webhook is disabled. */
apr_status_t qrt_store_webhook_recover(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                       apr_int64_t id, apr_int64_t since, int *n);
/* Done events, attempts and the bound's counts of drops are kept so long (seconds). */
#define QRT_WEBHOOK_KEEP (7 * 86400)
/* How many of a webhook's events are pending, and dropped by the bound (or by its
 * deletion) within the sweep's week. */
apr_status_t qrt_store_webhook_counts(qrt_db_t *db, apr_pool_t *p, apr_int64_t id,
                                      apr_int64_t *pending, apr_int64_t *dropped);
/* One page of a webhook's attempts, newest first (qrt_webhook_attempt_t). */
apr_status_t qrt_store_webhook_attempts(qrt_db_t *db, apr_pool_t *p, apr_int64_t id,
                                        apr_int64_t offset, apr_int64_t limit,
                                        apr_array_header_t **out, apr_int64_t *total);

/* In the caller's transaction: a tracker event (QRT_WEBHOOK_TRACKER_CREATED, _UPDATED,
 * _DELETED) for each enabled webhook of t's account that takes it. t->id is set; a
 * t->account_id of 0 is looked up. data: t->event_json's rendering, else the store's
 * own (without scan_url and short_url); t with only its id (a deletion by id) is read
 * first. Costs one indexed query when the account takes no such event. */
apr_status_t qrt_store_webhook_tracker_event(qrt_db_t *db, apr_pool_t *p, int type,
                                             const qrt_tracker_t *t);
/* A change of a tracker's routing (before -> after, at now) that ends its validity: the
 * reason of the tracker.expired it makes ("max_scans": the cap at or under the scans sent
 * on; "valid_until": moved before now and before the tracker's last visit, after which no
 * scan would tell it), else NULL. */
const char *qrt_store_tracker_patch_expiry(const qrt_tracker_t *before,
                                           const qrt_tracker_t *after, apr_int64_t now);
/* In the caller's transaction: tracker.expired for t (read as the change left it) with
 * reason, expired at at, for each enabled webhook of its account that takes it. */
apr_status_t qrt_store_webhook_tracker_expired(qrt_db_t *db, apr_pool_t *p,
                                               const qrt_tracker_t *t, const char *reason,
                                               apr_int64_t at);
/* The same event for n trackers (NULLs skipped), e.g. a bulk create's: each account's
 * subscribers read once. */
apr_status_t qrt_store_webhook_tracker_events(qrt_db_t *db, apr_pool_t *p, int type,
                                              qrt_tracker_t *const *t, int n);
/* A tracker as the store renders it for an event (the API's fields it knows). */
json_t *qrt_store_webhook_tracker_json(const qrt_tracker_t *t);
/* A visit as GET /visits shows it, with its tracker's code. */
json_t *qrt_store_webhook_visit_json(apr_pool_t *p, const qrt_visit_t *v, const char *code);

/* ---- the scan writer's side -------------------------------------------------------
 *
 * A writer's cache of the enabled webhooks (which accounts take which events) and of
 * its trackers' accounts and codes, so that a batch of visits of accounts without
 * webhooks costs no query. It reads the webhooks again when their fingerprint in the
 * database changes (checked at most every QRT_WEBHOOK_CHECK, or at once when gen, a
 * generation raised by this server's API on every change, moves). One thread uses it. */
#define QRT_WEBHOOK_CHECK apr_time_from_msec(500)
typedef struct qrt_webhook_cache_t qrt_webhook_cache_t;

qrt_webhook_cache_t *qrt_webhook_cache_make(apr_pool_t *p);
/* Forgets what the cache holds (a new connection, another database). */
void qrt_webhook_cache_reset(qrt_webhook_cache_t *c);
/* tracker.expired events that go after the visit that caused them (max_scans). */
typedef struct qrt_webhook_after_t qrt_webhook_after_t;
/* In the writer's transaction, before the visits are recorded: tracker.expired for the
 * batch's visits that a tracker's expiry meets (the first scan after valid_until, or
 * the one that took the last of max_scans: cap_outcome QRT_VISIT_CAP_SENT with
 * capped QRT_VISIT_CAP_COUNT), for accounts that take it. A tracker's events arrive in
 * the order they happened: an expiry by valid_until is written now, before the scan that
 * met it; one by max_scans is made now (from the rows as they were before the batch) and
 * kept in *after (NULL: none) for qrt_store_webhook_visits to write after the scan that
 * took the last. */
apr_status_t qrt_store_webhook_expiry(qrt_db_t *db, apr_pool_t *p, qrt_webhook_cache_t *c,
                                      apr_uint32_t gen, const qrt_visit_t *v, int n,
                                      qrt_webhook_after_t **after);
/* In the writer's transaction, after the visits are recorded (their ids set): one
 * scan.created or click.created row per visit and enabled webhook of its tracker's
 * account that takes it, and the expiries of after (or NULL) behind the scans that caused
 * them, before that tracker's later visits of the batch. */
apr_status_t qrt_store_webhook_visits(qrt_db_t *db, apr_pool_t *p, qrt_webhook_cache_t *c,
                                      apr_uint32_t gen, const qrt_visit_t *v, int n,
                                      const qrt_webhook_after_t *after);
/* What the webhooks' events of the last transaction were (after it committed: the
 * webhooks they went to are checked against the bound next), or forgotten (rolled back). */
void qrt_webhook_cache_commit(qrt_webhook_cache_t *c);
void qrt_webhook_cache_abort(qrt_webhook_cache_t *c);
/* The outbox bound, in its own transaction or the caller's: of each webhook that got
 * events since the last check (every webhook when all), the oldest pending events past
 * limit are dropped (deleted and counted in webhook_drops; those already tried kept as
 * dropped rows); *dropped counts them. The webhooks' cuts are found once a second
 * (and when all); on SQLite the drops then go a slice of a webhook's events a call, due
 * again at once while a cut is not reached. */
/* 1 when qrt_store_webhook_bound has webhooks to check now (without all). */
int qrt_webhook_cache_bound_due(const qrt_webhook_cache_t *c);
apr_status_t qrt_store_webhook_bound(qrt_db_t *db, apr_pool_t *p, qrt_webhook_cache_t *c,
                                     apr_int64_t limit, int all, apr_int64_t *dropped);
/* One step of the sweep: events done with (delivered, failed, dropped), attempts and
 * the bound's counts of drops older than before (epoch seconds) deleted, in windows of batch rows by id (the
 * cache keeps where it is), and previous secrets past their time forgotten. *more: 1
 * while the pass is not over. */
apr_status_t qrt_store_webhook_sweep(qrt_db_t *db, apr_pool_t *p, qrt_webhook_cache_t *c,
                                     apr_int64_t before, apr_int64_t batch, int *more);

#endif
