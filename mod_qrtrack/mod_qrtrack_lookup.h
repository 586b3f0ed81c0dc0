/* mod_qrtrack_lookup.c: the child's own connection for quick reads that must not wait
 * for mod_dbd's pool: scans' lookups of codes, health checks. */
#ifndef MOD_QRTRACK_LOOKUP_H
#define MOD_QRTRACK_LOOKUP_H

#include "mod_qrtrack_private.h"
#include "qrt_store.h"

void qrt_lookup_child_init(apr_pool_t *pchild, server_rec *s);
/* Runs fn(db, p, ctx) on the child's quick connection, outside mod_dbd's pool, whose
 * connections long API requests (exports, reports, writes waiting for a lock) may all
 * hold: a scan's lookup of a code or a health check never waits for them. Each
 * statement gives up at half of QRTrackScanWait (a scan's lookup then asks the
 * node's snapshot). fn's result; out gets db's driver and error (in p)
 * for the caller's classification. APR_EAGAIN, fn not run, when another caller of the
 * child has held the connection for a while or it cannot be opened now (the caller
 * takes mod_dbd's). */
typedef apr_status_t qrt_lookup_fn(qrt_db_t *db, apr_pool_t *p, void *ctx);
apr_status_t qrt_lookup_run(apr_pool_t *p, qrt_lookup_fn *fn, void *ctx, qrt_db_t *out);
/* The same, waiting up to take_wait for the connection. Both answer APR_TIMEUP, fn not
 * run, for a few seconds after a call of the child got no answer from the server by its
 * deadline (qrt_dbwatch cut it) or a connection to it was not taken in time: the
 * caller answers without the database (a scan from what it cached and the snapshot,
 * a health check 503) rather than wait for the same silence again. */
apr_status_t qrt_lookup_run_wait(apr_pool_t *p, qrt_lookup_fn *fn, void *ctx, qrt_db_t *out,
                                 apr_interval_time_t take_wait);
/* Says that a call of the child (on mod_dbd's connection) got no answer by its
 * deadline: the pause above. */
void qrt_lookup_unanswered(void);
int qrt_lookup_paused(void);
/* 1 while the pause is that of a connection the server did not take in time, not of a
 * call it did not answer: a server slow to take new connections (its host saturated)
 * may answer on those open already (mod_dbd's), which a health check then asks. */
int qrt_lookup_paused_connecting(void);

#endif
