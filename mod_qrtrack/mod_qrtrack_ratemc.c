/* mod_qrtrack_ratemc: per-token windows in memcached (QRTrackRateLimitStore memcache).
 *
 * Every node that names the same memcached servers shares one window per token, so
 * a limit is exact across the nodes together. A window is two keys, both by token id:
 *
 *   qrtrack:rw:<token id>          the window's start (apr_time_t, decimal), added
 *                                  by the request that opens it, expiring with it
 *   qrtrack:rc:<token id>:<start>  the window's counter: added as 0, then every
 *                                  request increments it (memcached's atomic incr)
 *
 * The n-th increment is admitted while n <= limit (qrt_rate_judge, as in shared
 * memory); a refused one is decremented again, so refused requests are not counted.
 *
 * Each child has its own apr_memcache client (a reslist of connections per server,
 * so every thread may use it). When memcached cannot be reached (an error, no live
 * server, or a call of this child unanswered for RATEMC_STALL), qrt_ratemc_hit says
 * so and the caller counts in this server's shared memory instead; a warning goes to
 * the error log at most every RATEMC_WARN_EVERY seconds per child, and another (at
 * the same level, so that it shows wherever the first did) when memcached answers
 * again. apr_memcache tries a server it marked dead again every
 * 5 seconds. */
#include "httpd.h"
#include "http_config.h"
#include "http_log.h"
#include "ap_mpm.h"
#include <apr_atomic.h>
#include <apr_memcache.h>
#include <apr_strings.h>

#include "mod_qrtrack.h"
#include "qrt_valid.h"

APLOG_USE_MODULE(qrtrack);

/* Seconds a window key lives: the window. The counter outlives it (its name
 * carries the start, so a new window never finds an old counter). */
#define RATEMC_WINDOW_TTL   60
#define RATEMC_COUNT_TTL    (2 * RATEMC_WINDOW_TTL)
/* Idle connections are closed after this (also clears connections left over
 * from a memcached that was restarted). */
#define RATEMC_CONN_TTL     apr_time_from_sec(5)
#define RATEMC_CONN_SMAX    4
/* A call unanswered for this long means memcached hangs: skip it meanwhile. */
#define RATEMC_STALL        apr_time_from_sec(2)
#define RATEMC_WARN_EVERY   30

static apr_memcache_t *ratemc;              /* this child's client; NULL = shm */
static volatile apr_uint32_t ratemc_busy;   /* calls in flight in this child */
static volatile apr_uint64_t ratemc_moved;  /* when one last ended (or the first began) */
static volatile apr_uint32_t ratemc_down;   /* 1 while requests are counted in shm */
static volatile apr_uint32_t ratemc_warned; /* apr_time_sec() of the last warning */
static volatile apr_uint32_t ratemc_missed; /* requests counted in shm since then */

void qrt_ratemc_child_init(apr_pool_t *pchild, server_rec *s)
{
    const apr_array_header_t *servers = qrt_global.rate_mc_servers;
    const qrt_rate_server_t *sv;
    apr_memcache_t *mc;
    apr_status_t rv;
    int threads = 1, i;

    ratemc = NULL;
    if (!servers) {
        return;
    }
    if (ap_mpm_query(AP_MPMQ_MAX_THREADS, &threads) != APR_SUCCESS || threads < 1) {
        threads = 1;
    }
    sv = (const qrt_rate_server_t *)servers->elts;
    rv = apr_memcache_create(pchild, (apr_uint16_t)servers->nelts, 0, &mc);
    for (i = 0; rv == APR_SUCCESS && i < servers->nelts; i++) {
        apr_memcache_server_t *ms;

        /* No connection yet (min 0): a memcached that is down does not stop the
         * child; one connection per thread at most, so acquiring never waits. */
        rv = apr_memcache_server_create(pchild, sv[i].host, sv[i].port, 0,
                                        threads < RATEMC_CONN_SMAX ? threads
                                                                   : RATEMC_CONN_SMAX,
                                        threads, RATEMC_CONN_TTL, &ms);
        if (rv == APR_SUCCESS) {
            rv = apr_memcache_add_server(mc, ms);
        }
    }
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "QRT00019: cannot set up the "
                     "memcached client for QRTrackRateLimitStore memcache %s: this "
                     "child counts in its server's shared memory",
                     qrt_global.rate_mc_list);
        return;
    }
    ratemc = mc;
}

int qrt_ratemc_enabled(void)
{
    return ratemc != NULL;
}

/* The start of the token's window, opening one at now if there is none. */
static apr_status_t ratemc_window(apr_pool_t *p, const char *key, apr_time_t now,
                                  apr_int64_t *start)
{
    char *now_s = apr_psprintf(p, "%" APR_TIME_T_FMT, now);
    apr_status_t rv;
    int i;

    for (i = 0; i < 2; i++) {
        char *val = NULL;
        apr_size_t len = 0;

        rv = apr_memcache_getp(ratemc, p, key, &val, &len, NULL);
        if (rv == APR_SUCCESS) {
            return val && qrt_parse_int(val, 1, APR_INT64_MAX, start) == 0
                ? APR_SUCCESS : APR_EGENERAL;
        }
        if (rv != APR_NOTFOUND) {
            return rv;
        }
        /* No window (or no live server: then add fails as well). */
        rv = apr_memcache_add(ratemc, key, now_s, strlen(now_s), RATEMC_WINDOW_TTL, 0);
        if (rv == APR_SUCCESS) {
            *start = now;
            return APR_SUCCESS;
        }
        if (rv != APR_EEXIST) {
            return rv;
        }
        /* Another request opened it first: read its start. */
    }
    return APR_EGENERAL;
}

/* Counts one request in the window's counter: *n is this request's number. */
static apr_status_t ratemc_count(const char *key, apr_uint32_t *n)
{
    char zero[] = "0";
    apr_status_t rv;

    *n = 0;
    rv = apr_memcache_incr(ratemc, key, 1, n);
    if (rv == APR_NOTFOUND) {
        rv = apr_memcache_add(ratemc, key, zero, 1, RATEMC_COUNT_TTL, 0);
        if (rv == APR_SUCCESS || rv == APR_EEXIST) {
            rv = apr_memcache_incr(ratemc, key, 1, n);
        }
    }
    /* apr_memcache reads a connection closed under it as an empty answer, which
     * incr turns into 0: no increment ever gives 0. */
    return rv == APR_SUCCESS && *n == 0 ? APR_EGENERAL : rv;
}

/* Warnings at most every RATEMC_WARN_EVERY seconds per child: 1 when this
 * caller's turn has come. */
static int ratemc_warn_due(apr_time_t now)
{
    apr_uint32_t sec = (apr_uint32_t)apr_time_sec(now);
    apr_uint32_t last = apr_atomic_read32(&ratemc_warned);

    return (last == 0 || sec - last >= RATEMC_WARN_EVERY)
        && apr_atomic_cas32(&ratemc_warned, sec, last) == last;
}

static void ratemc_fell_back(request_rec *r, apr_status_t rv, int stalled, apr_time_t now)
{
    apr_uint32_t missed = apr_atomic_inc32(&ratemc_missed) + 1;

    apr_atomic_set32(&ratemc_down, 1);
    if (!ratemc_warn_due(now)) {
        return;
    }
    apr_atomic_sub32(&ratemc_missed, missed);
    if (stalled) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, "QRT00017: memcached (%s) has "
                      "not answered a call of this process for over %d s: rate limits "
                      "are counted in this server's shared memory, not across nodes, "
                      "until it answers (requests counted so since the last warning: "
                      "%u)", qrt_global.rate_mc_list, (int)apr_time_sec(RATEMC_STALL),
                      missed);
    }
    else {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, rv, r, "QRT00016: memcached (%s) "
                      "cannot be reached: rate limits are counted in this server's "
                      "shared memory, not across nodes, until it answers (requests "
                      "counted so since the last warning: %u)", qrt_global.rate_mc_list,
                      missed);
    }
}

apr_status_t qrt_ratemc_hit(request_rec *r, apr_int64_t token_id, long limit,
                            qrt_rate_result_t *res, qrt_rate_verdict_t *verdict)
{
    apr_time_t now = apr_time_now();
    const char *wkey = apr_psprintf(r->pool, "qrtrack:rw:%" APR_INT64_T_FMT, token_id);
    const char *ckey;
    apr_int64_t start = 0;
    apr_uint32_t n = 0;
    apr_status_t rv;

    if (apr_atomic_read32(&ratemc_busy) > 0
        && now - (apr_time_t)apr_atomic_read64(&ratemc_moved) > RATEMC_STALL) {
        ratemc_fell_back(r, APR_TIMEUP, 1, now);
        return APR_TIMEUP;
    }
    if (apr_atomic_inc32(&ratemc_busy) == 0) {
        apr_atomic_set64(&ratemc_moved, (apr_uint64_t)now);
    }
    rv = ratemc_window(r->pool, wkey, now, &start);
    if (rv == APR_SUCCESS) {
        ckey = apr_psprintf(r->pool, "qrtrack:rc:%" APR_INT64_T_FMT ":%" APR_INT64_T_FMT,
                            token_id, start);
        rv = ratemc_count(ckey, &n);
        if (rv == APR_SUCCESS) {
            *verdict = qrt_rate_judge(start, n, limit, QRT_RATE_WINDOW, now, res);
            if (*verdict != QRT_RATE_OK) {
                /* Refused requests are not counted (an error here only leaves the
                 * counter above the limit, which refuses the same). */
                apr_memcache_decr(ratemc, ckey, 1, NULL);
            }
        }
    }
    apr_atomic_set64(&ratemc_moved, (apr_uint64_t)apr_time_now());
    apr_atomic_dec32(&ratemc_busy);
    if (rv != APR_SUCCESS) {
        ratemc_fell_back(r, rv, 0, now);
        return rv;
    }
    if (apr_atomic_cas32(&ratemc_down, 0, 1) == 1) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, "QRT00018: memcached (%s) "
                      "answers again: rate limits are counted across nodes again",
                      qrt_global.rate_mc_list);
    }
    return APR_SUCCESS;
}
