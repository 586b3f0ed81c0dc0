/* mod_qrtrack_rate: per-token request counters in shared memory.
 *
 * One anonymous apr_shm segment holds a qrt_rate_table_t; one global mutex
 * serialises every hit across all children, so a limit is exact. Both live in
 * the process pool and survive a graceful restart (counters carry on) unless
 * QRTrackRateLimitSlots changed.
 *
 * With QRTrackRateLimitStore memcache the windows live in memcached
 * (mod_qrtrack_ratemc.c); the table is still set up, and counts whenever
 * memcached cannot be reached. */
#include "httpd.h"
#include "http_config.h"
#include "http_log.h"
#include "util_mutex.h"
#include <apr_strings.h>

#include "mod_qrtrack.h"

APLOG_USE_MODULE(qrtrack);

#define RATE_USERDATA "qrtrack-rate-state"

typedef struct {
    apr_shm_t *shm;
    qrt_rate_table_t *table;
    apr_global_mutex_t *mutex;
    apr_uint32_t slots;
} rate_state;

apr_status_t qrt_rate_post_config(apr_pool_t *pconf, apr_pool_t *plog, server_rec *s)
{
    apr_pool_t *pp = s->process->pool;
    rate_state *st = NULL;
    apr_status_t rv;

    (void)pconf;
    (void)plog;
    apr_pool_userdata_get((void **)&st, RATE_USERDATA, pp);
    if (!st) {
        st = apr_pcalloc(pp, sizeof(*st));
        rv = qrt_global_mutex(s, QRT_MUTEX_TYPE, &st->mutex);
        if (rv != APR_SUCCESS) {
            return rv;
        }
        apr_pool_userdata_set(st, RATE_USERDATA, apr_pool_cleanup_null, pp);
    }
    if (!st->shm || st->slots != qrt_global.rate_slots) {
        apr_shm_t *shm;
        apr_size_t size = qrt_rate_table_size(qrt_global.rate_slots);

        rv = apr_shm_create(&shm, size, NULL, pp);
        if (rv != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "QRT00011: cannot create "
                         "%" APR_SIZE_T_FMT " bytes of shared memory for the rate "
                         "limiter", size);
            return rv;
        }
        if (st->shm) {
            ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, "QRT00012: "
                         "QRTrackRateLimitSlots changed: rate counters start afresh");
            apr_shm_destroy(st->shm);
        }
        st->shm = shm;
        st->slots = qrt_global.rate_slots;
        st->table = apr_shm_baseaddr_get(shm);
        qrt_rate_table_init(st->table, st->slots);
    }
    qrt_global.rate_shm = st->shm;
    qrt_global.rate_table = st->table;
    qrt_global.rate_mutex = st->mutex;
    return APR_SUCCESS;
}

void qrt_rate_child_init(apr_pool_t *p, server_rec *s)
{
    apr_status_t rv;

    qrt_ratemc_child_init(p, s);
    if (!qrt_global.rate_mutex) {
        return;
    }
    rv = apr_global_mutex_child_init(&qrt_global.rate_mutex,
                                     apr_global_mutex_lockfile(qrt_global.rate_mutex),
                                     p);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "QRT00013: cannot attach the "
                     "rate-limit mutex in the child");
    }
}

/* The caller's limit: the account's override, else the server's. */
static long rate_limit_for(qrt_req_t *q)
{
    int *v = q->conf->account_limits
        ? apr_hash_get(q->conf->account_limits, q->auth.account_name,
                       APR_HASH_KEY_STRING)
        : NULL;

    return v ? *v : q->conf->rate_limit;
}

qrt_err_t *qrt_rate_check(qrt_req_t *q)
{
    request_rec *r = q->r;
    qrt_rate_result_t res;
    qrt_rate_verdict_t verdict;
    apr_status_t rv;
    qrt_err_t *e;

    q->rate_limit = rate_limit_for(q);
    if (q->rate_limit <= 0) {
        return NULL;
    }
    if (!qrt_ratemc_enabled()
        || qrt_ratemc_hit(r, q->auth.token_id, q->rate_limit, &res, &verdict)
           != APR_SUCCESS) {
        /* The shm store, or memcached cannot be reached (logged there). */
        rv = apr_global_mutex_lock(qrt_global.rate_mutex);
        if (rv != APR_SUCCESS) {
            ap_log_rerror(APLOG_MARK, APLOG_ERR, rv, r, "QRT00014: cannot lock the "
                          "rate-limit mutex");
            return qrt_error(q, HTTP_INTERNAL_SERVER_ERROR, "Server Error");
        }
        verdict = qrt_rate_hit(qrt_global.rate_table, (apr_uint64_t)q->auth.token_id,
                               q->rate_limit, QRT_RATE_WINDOW, apr_time_now(), &res);
        apr_global_mutex_unlock(qrt_global.rate_mutex);
    }

    apr_table_setn(r->err_headers_out, "X-RateLimit-Limit",
                   apr_ltoa(r->pool, res.limit));
    apr_table_setn(r->err_headers_out, "X-RateLimit-Remaining",
                   apr_ltoa(r->pool, res.remaining));
    if (verdict == QRT_RATE_OK) {
        return NULL;
    }
    apr_table_setn(r->err_headers_out, "X-RateLimit-Reset",
                   apr_off_t_toa(r->pool, res.reset));
    if (verdict == QRT_RATE_LIMITED) {
        QRT_STAT_ADD(rate_limited, 1);
        e = qrt_error(q, HTTP_TOO_MANY_REQUESTS, "Too Many Attempts.");
    }
    else {
        QRT_STAT_ADD(rate_full, 1);
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, "QRT00015: the rate-limit table "
                      "is full near token id %" APR_INT64_T_FMT "; raise "
                      "QRTrackRateLimitSlots (now %u)", q->auth.token_id,
                      qrt_global.rate_slots);
        e = qrt_error(q, HTTP_SERVICE_UNAVAILABLE,
                      "Rate limiter is at capacity; try again shortly.");
    }
    e->retry_after = res.retry_after;
    return e;
}
