/* qrt_store_bulk: creating many trackers in one transaction, codes that clients
 * choose, and the answers kept for Idempotency-Key (schema 28). */
#ifndef QRT_STORE_BULK_H
#define QRT_STORE_BULK_H

#include "qrt_store.h"

/* How long an Idempotency-Key is honoured, seconds. */
#define QRT_IDEM_TTL 86400

/* Inserts the non-NULL t[0..n) (as qrt_store_tracker_add does, codes and account
 * set) with their tags and routing inside the caller's transaction, many rows a
 * statement, without looking at the codes first: a taken code fails the statement
 * (qrt_store_unique_violation(db, "bulk_tracker_add")). Sets each t->id and the
 * times. */
apr_status_t qrt_store_trackers_insert_tx(qrt_db_t *db, apr_pool_t *p, qrt_tracker_t **t,
                                          int n);
/* The routing of a tracker just inserted (route_set), in the caller's transaction
 * (qrt_store_tracker.c). */
apr_status_t qrt_store_tracker_route_tx(qrt_db_t *db, apr_pool_t *p, qrt_tracker_t *t);

/* *taken = 1 when any tracker, live or deleted, has this code (case-sensitive). */
apr_status_t qrt_store_code_taken(qrt_db_t *db, apr_pool_t *p, const char *code,
                                  int *taken);

/* 1 when db's last error is a UNIQUE constraint (SQLite's message, PostgreSQL's
 * SQLSTATE 23505); statement, when not NULL, must be the failing statement's name
 * (or its "_many" form). */
int qrt_store_unique_violation(const qrt_db_t *db, const char *statement);

/* The answer kept for a key. */
typedef struct {
    const char *request_hash;
    int status;
    const char *content_type;
    const char *body;
    apr_int64_t tracker_id;     /* 0 when none */
} qrt_idem_t;

/* The answer kept for (token_id, key) in the last QRT_IDEM_TTL seconds:
 * APR_SUCCESS and *out, APR_NOTFOUND, or an error. */
apr_status_t qrt_store_idem_get(qrt_db_t *db, apr_pool_t *p, apr_int64_t token_id,
                                const char *key, qrt_idem_t *out);
/* Keeps an answer, in the caller's transaction; a key already kept fails the
 * statement (qrt_store_unique_violation(db, "idem_add")). */
apr_status_t qrt_store_idem_add(qrt_db_t *db, apr_pool_t *p, apr_int64_t token_id,
                                const char *key, const qrt_idem_t *in);
/* Deletes the answers older than QRT_IDEM_TTL seconds. */
apr_status_t qrt_store_idem_purge(qrt_db_t *db, apr_pool_t *p);

#endif
