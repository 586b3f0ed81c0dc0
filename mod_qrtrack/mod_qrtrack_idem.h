/* mod_qrtrack_idem.c: Idempotency-Key on the create endpoints, and the one
 * transaction that creates trackers and keeps the answer for the key. */
#ifndef MOD_QRTRACK_IDEM_H
#define MOD_QRTRACK_IDEM_H

#include "mod_qrtrack_private.h"
#include "qrt_store_bulk.h"

/* A request's key and what identifies the request under it. */
typedef struct {
    const char *key;            /* NULL: no Idempotency-Key header */
    const char *hash;           /* hex SHA-1 of method, path, query, types and body */
} qrt_idem_req_t;

/* Reads the Idempotency-Key header (1..255 printable ASCII characters, else 422).
 * When this token kept an answer under it in the last 24 hours: that answer is
 * written again with Idempotent-Replayed: true and *replayed = 1, or 422 when the
 * request differs from the first one. Without the header idem->key is NULL. */
qrt_err_t *qrt_idem_start(qrt_req_t *q, qrt_idem_req_t *idem, int *replayed);

/* Builds the answer of the trackers just inserted (t[i] NULL: a row left out), in
 * the transaction, before the commit. */
typedef qrt_err_t *qrt_create_answer_fn(qrt_req_t *q, void *ctx, qrt_tracker_t **t,
                                        int n, qrt_idem_t *answer);
/* Tracker i's code (one the client chose) is taken: 1 when the caller has made
 * t[i] NULL (a row error) and the rest goes on, 0 to answer 409 instead. */
typedef int qrt_create_taken_fn(qrt_req_t *q, void *ctx, qrt_tracker_t **t, int i);

/* Inserts the non-NULL t[0..n) (account set here; a NULL code gets a random one) in
 * one transaction, builds the answer and keeps it under idem->key (if any) in the
 * same transaction, commits, and writes the answer. Another request that kept the
 * same key first (it committed while this one waited): its answer is written
 * instead and nothing is created. A code taken meanwhile goes to taken(). */
qrt_err_t *qrt_create_trackers(qrt_req_t *q, const qrt_idem_req_t *idem,
                               qrt_tracker_t **t, int n, qrt_create_answer_fn *answer,
                               qrt_create_taken_fn *taken, void *ctx);

/* Writes a kept or new answer (an image's body is kept in base64). */
qrt_err_t *qrt_idem_respond(qrt_req_t *q, const qrt_idem_t *a, int replayed);

#endif
