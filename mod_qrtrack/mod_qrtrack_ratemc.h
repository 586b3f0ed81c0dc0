/* mod_qrtrack_ratemc.c: QRTrackRateLimitStore memcache. */
#ifndef MOD_QRTRACK_RATEMC_H
#define MOD_QRTRACK_RATEMC_H

#include "httpd.h"
#include "qrt_rate.h"

/* In post_config: the gate all children share (nothing for the shm store). */
apr_status_t qrt_ratemc_post_config(apr_pool_t *pconf, server_rec *s);
void qrt_ratemc_child_init(apr_pool_t *pchild, server_rec *s);
/* With the memcache store: 1, *up 1 while every server answers (0 while one is
 * bypassed) and *fallbacks the requests counted in shared memory instead. Else 0. */
int qrt_ratemc_status(int *up, apr_uint64_t *fallbacks);
/* 1 when this child counts in memcached. */
int qrt_ratemc_enabled(void);
/* Counts the request in the token's window in memcached: APR_SUCCESS with *res and
 * *verdict (OK or LIMITED), or an error (logged, at most every 30 s server-wide) when
 * memcached cannot be reached, did not answer within QRTrackRateLimitTimeout, is
 * bypassed meanwhile, or has the most calls in flight: the caller then counts in
 * shared memory. */
apr_status_t qrt_ratemc_hit(request_rec *r, apr_int64_t token_id, long limit,
                            qrt_rate_result_t *res, qrt_rate_verdict_t *verdict);

#endif
