/* mod_qrtrack_rate.c: per-token counters and QRTrackScanBudget in shared memory. */
#ifndef MOD_QRTRACK_RATE_H
#define MOD_QRTRACK_RATE_H

#include "mod_qrtrack_private.h"

apr_status_t qrt_rate_post_config(apr_pool_t *pconf, apr_pool_t *plog, server_rec *s);
void qrt_rate_child_init(apr_pool_t *p, server_rec *s);
/* In post_config: QRTrackScanBudget's table and mutex (kept across graceful
 * restarts). */
apr_status_t qrt_budget_post_config(server_rec *s);
/* A scan or click counted against its client address's QRTrackScanBudget: OK, or
 * HTTP_TOO_MANY_REQUESTS with Retry-After set (the scan is then not recorded). */
int qrt_budget_check(request_rec *r);
/* Counts the request; sets the X-RateLimit headers; an error for 429/503. */
qrt_err_t *qrt_rate_check(qrt_req_t *q);
/* 1 and *n the tokens' slots in use now, or 0 before post_config made the table. */
int qrt_rate_slots_in_use(apr_time_t now, apr_uint32_t *n);

#endif
