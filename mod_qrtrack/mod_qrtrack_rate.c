/* mod_qrtrack_rate: per-token request counters in shared memory.
 *
 * One anonymous apr_shm segment holds a qrt_rate_table_t; one global mutex
 * serialises every hit across all children, so a limit is exact. Both live in
 * the process pool and survive a graceful restart (counters carry on) unless
 * QRTrackRateLimitSlots changed.
 *
 * With QRTrackRateLimitStore memcache the windows live in memcached
 * (mod_qrtrack_ratemc.c); the table is still set up, and counts whenever
 * memcached cannot be reached, is slow, or is bypassed. */
#include "httpd.h"
#include "http_config.h"
#include "http_log.h"
#include "util_mutex.h"
#include <apr_strings.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_config.h"
#include "mod_qrtrack_http.h"
#include "mod_qrtrack_rate.h"
#include "mod_qrtrack_ratemc.h"
#include "mod_qrtrack_stats.h"
#include "mod_qrtrack_util.h"

APLOG_USE_MODULE(qrtrack);

#define RATE_USERDATA "qrtrack-rate-state"

typedef struct {
    apr_shm_t *shm;
    qrt_rate_table_t *table;
    apr_global_mutex_t *mutex;
    apr_uint32_t slots;
} rate_state;

/* The tokens' table and its mutex (re-attached in each child), set in post_config. */
static qrt_rate_table_t *rate_table;
static apr_global_mutex_t *rate_mutex;

apr_status_t qrt_rate_post_config(apr_pool_t *pconf, apr_pool_t *plog, server_rec *s)
{
    apr_pool_t *pp = s->process->pool;
    rate_state *st = NULL;
    apr_status_t rv;

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
    if (!st->shm || st->slots != qrt_config()->rate_slots) {
        apr_shm_t *shm;
        apr_size_t size = qrt_rate_table_size(qrt_config()->rate_slots);

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
        st->slots = qrt_config()->rate_slots;
        st->table = apr_shm_baseaddr_get(shm);
        qrt_rate_table_init(st->table, st->slots);
    }
    rate_table = st->table;
    rate_mutex = st->mutex;
    return qrt_ratemc_post_config(pconf, s);
}

/* ---- QRTrackScanBudget: scans a minute per client address ------------------
 *
 * A table of its own (a flood of addresses must not fill the tokens' table), under
 * a mutex of its own, both made only when the directive is set. Keys are a 64-bit
 * hash of the client address (as httpd resolved it, mod_remoteip included), never
 * stored. A full table lets scans through uncounted: visitors are not turned away
 * because others flood. */

#define BUDGET_USERDATA "qrtrack-budget-state"

typedef struct {
    apr_shm_t *shm;
    apr_global_mutex_t *mutex;
} budget_state;

/* Its counters in shared memory and their mutex, or NULL without a budget. */
static qrt_rate_table_t *budget_table;
static apr_global_mutex_t *budget_mutex;

apr_status_t qrt_budget_post_config(server_rec *s)
{
    apr_pool_t *pp = s->process->pool;
    budget_state *st = NULL;
    apr_status_t rv;

    budget_table = NULL;
    budget_mutex = NULL;
    if (qrt_config()->scan_budget <= 0) {
        return APR_SUCCESS;
    }
    apr_pool_userdata_get((void **)&st, BUDGET_USERDATA, pp);
    if (!st) {
        apr_size_t size = qrt_rate_table_size(QRT_SCAN_BUDGET_SLOTS);

        st = apr_pcalloc(pp, sizeof(*st));
        rv = qrt_global_mutex(s, QRT_MUTEX_BUDGET, &st->mutex);
        if (rv == APR_SUCCESS) {
            rv = apr_shm_create(&st->shm, size, NULL, pp);
        }
        if (rv != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "QRT00071: cannot set up "
                         "QRTrackScanBudget (%" APR_SIZE_T_FMT " bytes of shared memory "
                         "and a mutex)", size);
            return rv;
        }
        qrt_rate_table_init(apr_shm_baseaddr_get(st->shm), QRT_SCAN_BUDGET_SLOTS);
        apr_pool_userdata_set(st, BUDGET_USERDATA, apr_pool_cleanup_null, pp);
    }
    budget_table = apr_shm_baseaddr_get(st->shm);
    budget_mutex = st->mutex;
    return APR_SUCCESS;
}


int qrt_budget_check(request_rec *r)
{
    const unsigned char *ip = (const unsigned char *)r->useragent_ip;
    apr_uint64_t key = 14695981039346656037ULL;
    qrt_rate_result_t res;
    qrt_rate_verdict_t verdict;
    apr_uint32_t more = 0;

    if (!budget_table || !ip) {
        return OK;
    }
    for (; *ip; ip++) {
        key = (key ^ *ip) * 1099511628211ULL;
    }
    key |= 1;                       /* 0 marks a free slot */
    if (apr_global_mutex_lock(budget_mutex) != APR_SUCCESS) {
        return OK;
    }
    verdict = qrt_rate_hit(budget_table, key, qrt_config()->scan_budget,
                           QRT_RATE_WINDOW, apr_time_now(), &res);
    apr_global_mutex_unlock(budget_mutex);
    if (verdict == QRT_RATE_FULL) {
        QRT_STAT_ADD(budget_full, 1);
        if (qrt_log_due(qrt_ration(QRT_R_BUDGET), &more)) {
            ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, "QRT00072: QRTrackScanBudget's "
                          "table of %d client addresses is full: scans pass uncounted "
                          "(and %u more since this line was last logged)",
                          QRT_SCAN_BUDGET_SLOTS, more);
        }
        return OK;
    }
    if (verdict == QRT_RATE_LIMITED) {
        QRT_STAT_ADD(budget_refused, 1);
        apr_table_setn(r->err_headers_out, "Retry-After",
                       apr_ltoa(r->pool, res.retry_after > 0 ? res.retry_after : 1));
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, "QRT00073: scan over "
                      "QRTrackScanBudget (%d a minute): 429, not recorded",
                      qrt_config()->scan_budget);
        return HTTP_TOO_MANY_REQUESTS;
    }
    return OK;
}

void qrt_rate_child_init(apr_pool_t *p, server_rec *s)
{
    apr_status_t rv;

    if (budget_mutex
        && apr_global_mutex_child_init(&budget_mutex,
                                       apr_global_mutex_lockfile(budget_mutex),
                                       p) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, "QRT00074: cannot attach the "
                     "QRTrackScanBudget mutex in the child: no budget in this child");
        budget_table = NULL;
    }
    qrt_ratemc_child_init(p, s);
    if (!rate_mutex) {
        return;
    }
    rv = apr_global_mutex_child_init(&rate_mutex,
                                     apr_global_mutex_lockfile(rate_mutex),
                                     p);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "QRT00013: cannot attach the "
                     "rate-limit mutex in the child");
    }
}

int qrt_rate_slots_in_use(apr_time_t now, apr_uint32_t *n)
{
    if (!rate_table) {
        return 0;
    }
    /* Read without the mutex: a figure for people, not a decision. */
    *n = qrt_rate_active(rate_table, QRT_RATE_WINDOW, now);
    return 1;
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
        /* The shm store, or memcached cannot be reached, did not answer in time,
         * is bypassed or has the most calls in flight (logged there). */
        rv = apr_global_mutex_lock(rate_mutex);
        if (rv != APR_SUCCESS) {
            ap_log_rerror(APLOG_MARK, APLOG_ERR, rv, r, "QRT00014: cannot lock the "
                          "rate-limit mutex");
            return qrt_error(q, HTTP_INTERNAL_SERVER_ERROR, "Server Error");
        }
        verdict = qrt_rate_hit(rate_table, (apr_uint64_t)q->auth.token_id,
                               q->rate_limit, QRT_RATE_WINDOW, apr_time_now(), &res);
        apr_global_mutex_unlock(rate_mutex);
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
                      qrt_config()->rate_slots);
        e = qrt_error(q, HTTP_SERVICE_UNAVAILABLE,
                      "Rate limiter is at capacity; try again shortly.");
    }
    e->retry_after = res.retry_after;
    return e;
}
