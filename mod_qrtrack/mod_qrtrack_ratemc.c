/* mod_qrtrack_ratemc: per-token windows in memcached (QRTrackRateLimitStore memcache).
 *
 * Every node that names the same memcached servers shares one window per token, so
 * a limit is exact across the nodes together. A window is two keys, both by token
 * id and both on the same server (the token id modulo the servers):
 *
 *   qrtrack:rw:<token id>          the window's start (apr_time_t, decimal), added
 *                                  by the request that opens it, expiring with it
 *   qrtrack:rc:<token id>:<start>  the window's counter: added as 0, then every
 *                                  request increments it (memcached's atomic incr)
 *
 * The n-th increment is admitted while n <= limit (qrt_rate_judge, as in shared
 * memory); a refused one is decremented again, so refused requests are not counted.
 *
 * Each child has its own client (qrt_mc: connections kept per server, every call
 * bounded by QRTrackRateLimitTimeout). In front of it, a gate in shared memory that
 * all children see (qrt_mc_shared_t): a server that failed or did not answer in
 * time is down for the whole server at once, its requests count in this server's
 * shared memory, and one request a second (server-wide) tries it again. At most
 * half of MaxRequestWorkers (RATEMC_CAP_SHARE) talk to memcached at a time, so that
 * a memcached slow within the timeout leaves the other half free; the rest fall
 * back at once. Warnings go to the error log at most every RATEMC_WARN_EVERY,
 * server-wide, with the requests counted in shared memory since the last one; a
 * server that answers again is logged once after them (never more often). */
#include "httpd.h"
#include "http_config.h"
#include "http_log.h"
#include "ap_mpm.h"
#include <apr_shm.h>
#include <apr_strings.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_config.h"
#include "mod_qrtrack_ratemc.h"
#include "qrt_mc.h"
#include "qrt_valid.h"

APLOG_USE_MODULE(qrtrack);

/* Seconds a window key lives: the window. The counter outlives it (its name
 * carries the start, so a new window never finds an old counter). */
#define RATEMC_WINDOW_TTL   60
#define RATEMC_COUNT_TTL    (2 * RATEMC_WINDOW_TTL)
/* Idle connections are closed after this. */
#define RATEMC_CONN_TTL     apr_time_from_sec(5)
#define RATEMC_CONN_MAX     8
/* A server that is down is tried by one request this often, server-wide. */
#define RATEMC_PROBE_EVERY  apr_time_from_sec(1)
/* Calls in flight at most: MaxRequestWorkers / RATEMC_CAP_SHARE (at least 1). */
#define RATEMC_CAP_SHARE    2
#define RATEMC_WARN_EVERY   apr_time_from_sec(30)

static qrt_mc_shared_t *ratemc_shared;      /* the gate, made in post_config */
static qrt_mc_t *ratemc;                    /* this child's client; NULL = shm */

apr_status_t qrt_ratemc_post_config(apr_pool_t *pconf, server_rec *s)
{
    const apr_array_header_t *servers = qrt_config()->rate_mc_servers;
    int daemons = 1, threads = 1;
    apr_uint32_t cap;
    apr_shm_t *shm;
    apr_size_t size;
    apr_status_t rv;

    ratemc_shared = NULL;
    if (!servers) {
        return APR_SUCCESS;
    }
    if (ap_mpm_query(AP_MPMQ_MAX_DAEMONS, &daemons) != APR_SUCCESS || daemons < 1) {
        daemons = 1;
    }
    if (ap_mpm_query(AP_MPMQ_MAX_THREADS, &threads) != APR_SUCCESS || threads < 1) {
        threads = 1;
    }
    cap = (apr_uint32_t)(daemons * threads / RATEMC_CAP_SHARE);
    size = qrt_mc_shared_size((apr_uint32_t)servers->nelts);
    /* In pconf: a restart starts with every server up. */
    rv = apr_shm_create(&shm, size, NULL, pconf);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "QRT00083: cannot create "
                     "%" APR_SIZE_T_FMT " bytes of shared memory for "
                     "QRTrackRateLimitStore memcache", size);
        return rv;
    }
    ratemc_shared = apr_shm_baseaddr_get(shm);
    qrt_mc_shared_init(ratemc_shared, (apr_uint32_t)servers->nelts, cap > 0 ? cap : 1);
    return APR_SUCCESS;
}

void qrt_ratemc_child_init(apr_pool_t *pchild, server_rec *s)
{
    int threads = 1;
    apr_status_t rv;

    ratemc = NULL;
    if (!qrt_config()->rate_mc_servers || !ratemc_shared) {
        return;
    }
    if (ap_mpm_query(AP_MPMQ_MAX_THREADS, &threads) != APR_SUCCESS || threads < 1) {
        threads = 1;
    }
    rv = qrt_mc_create(pchild, qrt_config()->rate_mc_servers,
                       apr_time_from_msec(qrt_config()->rate_mc_timeout),
                       threads < RATEMC_CONN_MAX ? threads : RATEMC_CONN_MAX,
                       RATEMC_CONN_TTL, &ratemc);
    if (rv != APR_SUCCESS) {
        ratemc = NULL;
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "QRT00019: cannot set up the "
                     "memcached client for QRTrackRateLimitStore memcache %s: this "
                     "child counts in its server's shared memory",
                     qrt_config()->rate_mc_list);
    }
}

int qrt_ratemc_enabled(void)
{
    return ratemc != NULL;
}

int qrt_ratemc_status(int *up, apr_uint64_t *fallbacks)
{
    if (!ratemc_shared) {
        return 0;
    }
    *up = qrt_mc_all_up(ratemc_shared);
    *fallbacks = __atomic_load_n(&ratemc_shared->fallbacks, __ATOMIC_RELAXED);
    return 1;
}

/* The start of the token's window, opening one at now if there is none. */
static apr_status_t ratemc_window(apr_pool_t *p, int sv, const char *key, apr_time_t now,
                                  apr_int64_t *start)
{
    char *now_s = apr_psprintf(p, "%" APR_TIME_T_FMT, now);
    apr_status_t rv;
    int i;

    for (i = 0; i < 2; i++) {
        char val[QRT_MC_MAX_VALUE];

        rv = qrt_mc_get(ratemc, sv, key, val, sizeof(val));
        if (rv == APR_SUCCESS) {
            return qrt_parse_int(val, 1, APR_INT64_MAX, start) == 0
                ? APR_SUCCESS : APR_EGENERAL;
        }
        if (rv != APR_NOTFOUND) {
            return rv;
        }
        rv = qrt_mc_add(ratemc, sv, key, now_s, RATEMC_WINDOW_TTL);
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
static apr_status_t ratemc_count(int sv, const char *key, apr_uint64_t *n)
{
    apr_status_t rv;

    *n = 0;
    rv = qrt_mc_incr(ratemc, sv, key, 1, n);
    if (rv == APR_NOTFOUND) {
        rv = qrt_mc_add(ratemc, sv, key, "0", RATEMC_COUNT_TTL);
        if (rv == APR_SUCCESS || rv == APR_EEXIST) {
            rv = qrt_mc_incr(ratemc, sv, key, 1, n);
        }
    }
    /* No increment gives 0 (a counter that vanished between add and incr would
     * answer NOT_FOUND). */
    return rv == APR_SUCCESS && *n == 0 ? APR_EGENERAL : rv;
}

static const char *ratemc_server_name(apr_pool_t *p, int sv)
{
    const qrt_rate_server_t *s = (const qrt_rate_server_t *)qrt_config()->rate_mc_servers->elts;

    return apr_psprintf(p, "%s:%u", s[sv].host, (unsigned)s[sv].port);
}

/* This request counts in shared memory: said in the error log, at most every
 * RATEMC_WARN_EVERY server-wide. */
static void ratemc_fell_back(request_rec *r, int sv, qrt_mc_pass_t pass, apr_status_t rv,
                             apr_time_t now)
{
    qrt_mc_warn_t *w = pass == QRT_MC_BUSY ? &ratemc_shared->warn_busy
                                           : &ratemc_shared->warn_down;
    apr_uint32_t missed = 0;

    if (!qrt_mc_warn_due(ratemc_shared, w, now, RATEMC_WARN_EVERY, &missed)) {
        return;
    }
    if (pass == QRT_MC_BUSY) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, "QRT00084: %u requests wait for "
                      "memcached (%s), the most this server lets wait at once (half of "
                      "MaxRequestWorkers): further requests are counted in this "
                      "server's shared memory, not across nodes, meanwhile (requests "
                      "counted so since the last warning: %u)", ratemc_shared->cap,
                      qrt_config()->rate_mc_list, missed);
        return;
    }
    if (pass == QRT_MC_DOWN) {
        rv = (apr_status_t)__atomic_load_n(&ratemc_shared->gates[sv].why,
                                           __ATOMIC_RELAXED);
    }
    if (rv == APR_TIMEUP) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, "QRT00017: memcached %s did not "
                      "answer within %d ms (QRTrackRateLimitTimeout): it is bypassed, "
                      "rate limits are counted in this server's shared memory, not "
                      "across nodes, until it answers again (tried once a second; "
                      "requests counted so since the last warning: %u)",
                      ratemc_server_name(r->pool, sv), qrt_config()->rate_mc_timeout, missed);
    }
    else {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, rv, r, "QRT00016: memcached %s cannot "
                      "be reached: it is bypassed, rate limits are counted in this "
                      "server's shared memory, not across nodes, until it answers again "
                      "(tried once a second; requests counted so since the last "
                      "warning: %u)", ratemc_server_name(r->pool, sv), missed);
    }
}

apr_status_t qrt_ratemc_hit(request_rec *r, apr_int64_t token_id, long limit,
                            qrt_rate_result_t *res, qrt_rate_verdict_t *verdict)
{
    apr_time_t now = apr_time_now();
    int sv = (int)((apr_uint64_t)token_id % ratemc_shared->nservers);
    const char *wkey = apr_psprintf(r->pool, "qrtrack:rw:%" APR_INT64_T_FMT, token_id);
    const char *ckey;
    qrt_mc_pass_t pass;
    apr_int64_t start = 0;
    apr_uint64_t n = 0;
    apr_status_t rv;

    pass = qrt_mc_enter(ratemc_shared, sv, now, RATEMC_PROBE_EVERY);
    if (pass == QRT_MC_DOWN || pass == QRT_MC_BUSY) {
        ratemc_fell_back(r, sv, pass, APR_SUCCESS, now);
        return APR_EAGAIN;
    }
    rv = ratemc_window(r->pool, sv, wkey, now, &start);
    if (rv == APR_SUCCESS) {
        ckey = apr_psprintf(r->pool, "qrtrack:rc:%" APR_INT64_T_FMT ":%" APR_INT64_T_FMT,
                            token_id, start);
        rv = ratemc_count(sv, ckey, &n);
        if (rv == APR_SUCCESS) {
            *verdict = qrt_rate_judge(start, n, limit, QRT_RATE_WINDOW, now, res);
            if (*verdict != QRT_RATE_OK) {
                /* Refused requests are not counted (an error here only leaves the
                 * counter above the limit, which refuses the same). */
                qrt_mc_decr(ratemc, sv, ckey, 1, NULL);
            }
        }
    }
    if (qrt_mc_leave(ratemc_shared, sv, rv, apr_time_now()) == 1
        && qrt_mc_back_due(&ratemc_shared->warn_down)) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, "QRT00018: memcached %s answers "
                      "again: rate limits are counted across nodes again",
                      ratemc_server_name(r->pool, sv));
    }
    if (rv != APR_SUCCESS) {
        ratemc_fell_back(r, sv, pass, rv, now);
    }
    return rv;
}
