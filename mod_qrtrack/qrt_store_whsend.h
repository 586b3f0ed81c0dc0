/* qrt_store_whsend: the webhook delivery worker's store: events taken from the
 * outbox (webhook_events, schema 26) under a lease, attempts and outcomes recorded. */
#ifndef QRT_STORE_WHSEND_H
#define QRT_STORE_WHSEND_H

#include "qrt_store.h"

/* An event taken for delivery, with its webhook's URL and secret. */
typedef struct {
    apr_int64_t id;
    apr_int64_t webhook_id;
    const char *msg_id;
    const char *body;
    const char *url;
    const char *secret;
    int attempts;               /* attempts made before this one */
    apr_int64_t visit_id;       /* a visit's event (body rendered when taken), or 0 */
    apr_int64_t tracker_id;
    const char *event_type;
    apr_int64_t created_at;
    int has_visit_start;        /* the visit's time is known (schema 44): */
    apr_int64_t visit_start;
    const char *secret_prev;    /* the secret a new one replaced (schema 67), or NULL: */
    apr_int64_t secret_prev_until;  /* ... signing too until then */
} qrt_whsend_event_t;

/* Takes up to max due events (see sql/statements/whsend.sql, whsend_due), leased to
 * this worker (owner, its server's id) until lease_until, in one transaction: *out, an array of
 * qrt_whsend_event_t in p, in id order. With run > 1, each due event comes with up to
 * run - 1 of the events after it of its (webhook, tracker) pair (whsend_followers),
 * while max allows: the caller sends them in order, each once the one before it was
 * delivered. PostgreSQL skips rows another worker is taking at the same moment. A
 * visit's event gets its body rendered from the visit; one whose visit is gone is
 * dropped (state 3) and left out; *gone counts them. */
apr_status_t qrt_store_whsend_claim(qrt_db_t *db, apr_pool_t *p, apr_int64_t now,
                                    apr_int64_t lease_until, apr_int64_t owner, int max,
                                    int run, apr_array_header_t **out, int *gone);

/* Gives back the leases of owner's events (a worker of this server that is gone);
 * *n (optional) how many. */
apr_status_t qrt_store_whsend_takeover(qrt_db_t *db, apr_pool_t *p, apr_int64_t owner,
                                       int *n);

typedef enum {
    QRT_WHSEND_DELIVERED,       /* 2xx: delivered, the webhook's failures reset */
    QRT_WHSEND_RETRY,           /* tried again at next_at */
    QRT_WHSEND_FAILED,          /* every attempt spent: failed, the webhook's failures + 1 */
    QRT_WHSEND_GONE,            /* 410: the event failed, the webhook disabled */
    QRT_WHSEND_RELEASE          /* not tried (the worker stops): the lease given back */
} qrt_whsend_kind_t;

/* What one attempt came to. */
typedef struct {
    const qrt_whsend_event_t *ev;
    qrt_whsend_kind_t kind;
    int attempt;                /* this attempt's number (1 = the first) */
    long http_status;           /* 0: no answer */
    const char *error;          /* why there was no answer, or NULL */
    apr_int64_t at;             /* when it was made */
    apr_int64_t next_at;        /* QRT_WHSEND_RETRY: the next attempt's time */
} qrt_whsend_result_t;

/* Records n results in one transaction (run again on a PostgreSQL conflict): an
 * attempt row each (but RELEASE), the event's state, the webhook's failures; a webhook
 * gets disabled_at on a 410, or once disable_after events failed in a row.
 * *disabled (optional) counts the webhooks disabled. */
apr_status_t qrt_store_whsend_record(qrt_db_t *db, apr_pool_t *p, qrt_whsend_result_t *r,
                                     int n, int disable_after, int *disabled);

/* Pending events of the outbox (disabled webhooks' included). */
apr_status_t qrt_store_whsend_backlog(qrt_db_t *db, apr_pool_t *p, apr_int64_t *n);

#endif
