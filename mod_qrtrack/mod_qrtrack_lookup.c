/* mod_qrtrack: the child's own connection for quick reads (see mod_qrtrack_lookup.h).
 * One connection, taken in turn: a lookup is one index seek, so the child's lookups
 * queue for a fraction of a millisecond each; one that would wait longer than
 * LOOKUP_TAKE_WAIT (the one before it slow, the database locked) goes through mod_dbd's
 * pool instead. */
#include <string.h>
#include <apr_dbd.h>
#include <apr_strings.h>
#include <apr_thread_mutex.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_config.h"
#include "mod_qrtrack_db.h"
#include "mod_qrtrack_lookup.h"
#include "mod_qrtrack_spool.h"
#include "qrt_clock.h"
#include "qrt_dblimit.h"

APLOG_USE_MODULE(qrtrack);

#define LOOKUP_TAKE_WAIT apr_time_from_msec(20)
/* How long the child's lookups leave the database alone after one got no answer by its
 * deadline (qrt_lookup_unanswered): long enough for the probe (mod_qrtrack_probe.c: a
 * call waits 1 s, then the server has 2 s to take a connection and 2 s to answer) or
 * the scan writer to say whether the node leaves the database. */
#define LOOKUP_PAUSE apr_time_from_sec(5)

static struct {
    apr_thread_mutex_t *mu;
    apr_pool_t *p;              /* the connection's (cleared when it is opened again) */
    qrt_db_t *db;
    qrt_db_limit_t *limit;
    int limit_ms;               /* each statement's: half of QRTrackScanWait */
    apr_time_t paused_until;    /* qrt_clock_now(); atomic */
    int paused_connecting;      /* the pause's cause: a connection not taken in time; atomic */
} lk;

static void lookup_pause(int connecting)
{
    __atomic_store_n(&lk.paused_connecting, connecting, __ATOMIC_RELAXED);
    __atomic_store_n(&lk.paused_until, qrt_clock_now() + LOOKUP_PAUSE, __ATOMIC_RELEASE);
}

void qrt_lookup_unanswered(void)
{
    lookup_pause(0);
}

int qrt_lookup_paused(void)
{
    return qrt_clock_now() < __atomic_load_n(&lk.paused_until, __ATOMIC_ACQUIRE);
}

int qrt_lookup_paused_connecting(void)
{
    return qrt_lookup_paused() && __atomic_load_n(&lk.paused_connecting, __ATOMIC_RELAXED);
}

static apr_status_t lookup_end(void *data)
{
    (void)data;
    if (lk.db) {
        apr_dbd_close(lk.db->driver, lk.db->handle);
        lk.db = NULL;
    }
    lk.mu = NULL;
    return APR_SUCCESS;
}

void qrt_lookup_child_init(apr_pool_t *pchild, server_rec *s)
{
    memset(&lk, 0, sizeof(lk));
    if (apr_thread_mutex_create(&lk.mu, APR_THREAD_MUTEX_TIMED, pchild) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "QRT00131: cannot make the lock of "
                     "the child's lookup connection; scans look codes up through mod_dbd");
        lk.mu = NULL;
        return;
    }
    lk.limit_ms = (qrt_config()->scan_wait > 0 ? qrt_config()->scan_wait
                                               : QRT_DEFAULT_SCAN_WAIT) * 500;
    apr_pool_create(&lk.p, pchild);
    apr_pool_tag(lk.p, "qrtrack-lookup");
    apr_pool_cleanup_register(pchild, NULL, lookup_end, apr_pool_cleanup_null);
}

/* The connection, opened when first needed (and again after it failed); NULL when it
 * cannot be opened now (the caller takes mod_dbd's, which says what is wrong), with
 * *timeup set when the server did not take it in time (QRT_DB_CONNECT_QUICK_S). */
static qrt_db_t *lookup_open(int *timeup)
{
    const char *err = NULL;

    *timeup = 0;
    if (lk.db) {
        return lk.db;
    }
    apr_pool_clear(lk.p);
    lk.limit = NULL;
    /* A lookup that meets a lock or a slow server gives up in time for the snapshot
     * to answer (mod_qrtrack_scan.c), and one that meets a silent server in time for
     * the child to end (QRT_DB_CONNECT_QUICK_S). */
    lk.db = qrt_db_open_own(lk.p, QRT_DB_CONNECT_QUICK_S, lk.limit_ms, &lk.limit, &err);
    *timeup = !lk.db && qrt_db_connect_silent(err);
    return lk.db;
}

apr_status_t qrt_lookup_run_wait(apr_pool_t *p, qrt_lookup_fn *fn, void *ctx, qrt_db_t *out,
                                 apr_interval_time_t take_wait)
{
    qrt_db_t *own;
    apr_status_t rv;
    int timeup;

    memset(out, 0, sizeof(*out));
    if (qrt_lookup_paused()) {
        return APR_TIMEUP;
    }
    if (!lk.mu || qrt_db_down()
        || apr_thread_mutex_timedlock(lk.mu, take_wait) != APR_SUCCESS) {
        return APR_EAGAIN;
    }
    /* (the holder waited for may have been cut meanwhile) */
    if (qrt_lookup_paused()) {
        apr_thread_mutex_unlock(lk.mu);
        return APR_TIMEUP;
    }
    if (!(own = lookup_open(&timeup))) {
        apr_thread_mutex_unlock(lk.mu);
        if (timeup) {
            lookup_pause(1);
            return APR_TIMEUP;
        }
        return APR_EAGAIN;
    }
    qrt_db_limit_idle(lk.limit);
    own->error = NULL;
    rv = fn(own, p, ctx);
    out->driver = own->driver;
    out->error = own->error ? apr_pstrdup(p, own->error) : NULL;
    if (rv != APR_SUCCESS && qrt_db_unanswered(own)) {
        qrt_lookup_unanswered();
    }
    /* A connection that failed otherwise than on a lock or a timeout is opened again
     * by the next caller (a server that restarted, one that stopped answering and was
     * cut). */
    if (rv != APR_SUCCESS && rv != APR_NOTFOUND && !qrt_db_busy_or_full(own)) {
        apr_dbd_close(own->driver, own->handle);
        lk.db = NULL;
    }
    apr_thread_mutex_unlock(lk.mu);
    return rv;
}

apr_status_t qrt_lookup_run(apr_pool_t *p, qrt_lookup_fn *fn, void *ctx, qrt_db_t *out)
{
    return qrt_lookup_run_wait(p, fn, ctx, out, LOOKUP_TAKE_WAIT);
}
