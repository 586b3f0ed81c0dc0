/* mod_qrtrack_probe: tells a database server that stopped answering from a statement that
 * is merely slow, within seconds rather than at the calls' deadlines.
 *
 * A server whose processes are frozen (or whose storage hangs, or whose packets are
 * dropped) keeps its connections open and answers nothing: each call of the child then
 * waits for its deadline (qrt_dbwatch), QRTrackScanWait and 2.5 s for the scan writer
 * (12.5 s by default), and every scan meanwhile waits for the writer. A call that has
 * waited PROBE_AFTER_MS (a scan's lookup or commit takes milliseconds) makes this thread
 * ask the server on a connection of its own: a server that answers within PROBE_WAIT_S is
 * alive (the call waits for a lock held elsewhere, or a long report runs), and the call
 * keeps its deadline. One that does not has stopped: the calls
 * of the child that have waited PROBE_AFTER_MS are cut now (qrt_dbwatch_cut_older), and
 * the node leaves the database (QRT00104): scans are answered from the snapshot and
 * spooled, as in any outage, and the keeper's probe brings the node back. While the node
 * is away, each child's calls that have waited PROBE_AFTER_MS are cut (another child
 * found the server silent).
 *
 * The probe's connection is kept, opened while the node is on the database: a question
 * on it tells a silent server from one merely slow to take new connections (its host's
 * CPU saturated: each backend forked late), which answers on the connections it has. A
 * probe that had to open one within PROBE_WAIT_S took the slow server for a silent one,
 * and the node left a database that worked. Without one, the probe opens one, and a
 * server that does not take it within PROBE_WAIT_S is silent, unless that server ended
 * the kept one a moment ago (PROBE_LOST_GRACE): it answered then, and the waiting calls
 * keep their own deadlines until the probe, opening its connection as the keeper does,
 * has one again. */
#include <string.h>
#include <sys/prctl.h>
#include <apr_dbd.h>
#include <apr_strings.h>
#include <apr_thread_proc.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_db.h"
#include "mod_qrtrack_probe.h"
#include "mod_qrtrack_spool.h"
#include "qrt_clock.h"
#include "qrt_dblimit.h"
#include "qrt_dbwatch.h"

APLOG_USE_MODULE(qrtrack);

#define PROBE_AFTER_MS 1000
#define PROBE_WAIT_S   2            /* (libpq's least connect_timeout) */
#define PROBE_TICK     apr_time_from_msec(200)
#define PROBE_EVERY    apr_time_from_sec(1)
/* After the server ended the probe's kept connection, how long a new one not taken within
 * PROBE_WAIT_S says nothing while none has been opened since (probe_once). */
#define PROBE_LOST_GRACE apr_time_from_sec(30)

static struct {
    server_rec *s;
    apr_thread_t *thread;
    qrt_cond_t *tick;
    int stopping;               /* (under tick) */
    apr_time_t lost_at;         /* when the server ended the kept connection; 0 once
                                 * one was opened again */
} pr;

/* A probe's connection, opened within PROBE_WAIT_S: NULL, with *silent when the server did
 * not take it in time. silent_runs (the attempts ahead of need, NULL for a probe's):
 * opened as the keeper's is (qrt_db_connect_patient), so that a server slow to take
 * connections gives the probe one again. */
static qrt_db_t *probe_connect(apr_pool_t *cp, int *silent_runs, int *silent,
                               const char **err)
{
    qrt_db_t *db;
    apr_status_t rv;

    apr_pool_clear(cp);
    db = apr_pcalloc(cp, sizeof(*db));
    db->pool = cp;
    *silent = 0;
    rv = silent_runs ? qrt_db_connect_patient(cp, &db->driver, &db->handle, silent_runs, err)
                     : qrt_db_connect_within(cp, &db->driver, &db->handle, PROBE_WAIT_S, err);
    if (rv != APR_SUCCESS) {
        *silent = qrt_db_connect_silent(*err);
        return NULL;
    }
    pr.lost_at = 0;
    return db;
}

static void probe_close(qrt_db_t **db, apr_pool_t *cp)
{
    if (*db) {
        apr_dbd_close((*db)->driver, (*db)->handle);
        *db = NULL;
    }
    apr_pool_clear(cp);
}

/* 1 when the server answered a round trip within PROBE_WAIT_S on the kept connection
 * *db (opened first when there is none), 0 when it gave no answer (*why says so), -1 when
 * the probe failed otherwise (refused): that says nothing of the waiting calls, whose own
 * failure will. A kept connection that failed otherwise (the server restarted since) is
 * given up, and the question asked again on a new one. */
static int probe_once(qrt_db_t **db, apr_pool_t *cp, apr_pool_t *p, const char **why)
{
    int silent, v, kept;

    for (;;) {
        kept = *db != NULL;
        if (!kept && !(*db = probe_connect(cp, NULL, &silent, why))) {
            /* A server that ended the kept connection (a restart, a proxy that closed
             * every connection) answered it: one that then takes new connections late
             * (its host's CPU saturated) is not shown silent by one not taken within
             * PROBE_WAIT_S, and the waiting calls keep their own deadlines until the
             * probe has a connection again (the scan writer's own attempt, 5 s, leaves a
             * server that takes none). The node left a database that worked for the ten
             * seconds its keeper took to connect again. */
            return silent && !(pr.lost_at && qrt_clock_now() - pr.lost_at
                                             < PROBE_LOST_GRACE) ? 0 : -1;
        }
        (*db)->error = NULL;
        v = qrt_db_schema_version(*db, p);
        if (v >= 0) {
            return 1;
        }
        silent = qrt_db_unanswered(*db);
        *why = (*db)->error ? apr_pstrdup(p, (*db)->error) : "no answer";
        probe_close(db, cp);
        if (silent || !kept) {
            return silent ? 0 : -1;
        }
        pr.lost_at = qrt_clock_now();
    }
}

static void *APR_THREAD_FUNC probe_main(apr_thread_t *thread, void *data)
{
    apr_pool_t *top = data, *cp, *p;
    apr_time_t next = 0, next_open = 0;
    qrt_db_t *db = NULL;
    int silent_runs = 0;

    (void)thread;
    prctl(PR_SET_NAME, "qrtrack-probe", 0, 0, 0);
    qrt_dbwatch_limit(PROBE_WAIT_S * 1000);
    apr_pool_create(&cp, top);
    apr_pool_create(&p, top);
    for (;;) {
        long long waited;
        const char *why = NULL;
        int cut;

        qrt_cond_lock(pr.tick);
        if (!pr.stopping) {
            qrt_cond_timedwait(pr.tick, PROBE_TICK);
        }
        if (pr.stopping) {
            qrt_cond_unlock(pr.tick);
            break;
        }
        qrt_cond_unlock(pr.tick);
        waited = qrt_dbwatch_oldest_ms();
        if (qrt_db_down()) {
            /* The node has left the database (another child's probe, a writer's call):
             * this child's calls that have waited as long wait for nothing. The kept
             * connection goes too: a new one once the node is back. */
            if (waited >= PROBE_AFTER_MS) {
                qrt_dbwatch_cut_older(PROBE_AFTER_MS);
            }
            probe_close(&db, cp);
            continue;
        }
        if (waited < PROBE_AFTER_MS || qrt_clock_now() < next) {
            /* (opened ahead of need; a server that does not take it is asked again
             * PROBE_EVERY later) */
            if (!db && qrt_clock_now() >= next_open) {
                int silent;

                next_open = qrt_clock_now() + PROBE_EVERY;
                db = probe_connect(cp, &silent_runs, &silent, &why);
            }
            continue;
        }
        next = qrt_clock_now() + PROBE_EVERY;
        if (probe_once(&db, cp, p, &why) == 0) {
            cut = qrt_dbwatch_cut_older(PROBE_AFTER_MS);
            ap_log_error(APLOG_MARK, APLOG_ERR, 0, pr.s, "QRT00146: the database server "
                         "gave no answer within %d s to a probe while a call of this "
                         "child had waited %" APR_INT64_T_FMT " ms (%s): %d waiting calls "
                         "cut, the node leaves it", PROBE_WAIT_S, (apr_int64_t)waited,
                         why ? why : "", cut);
            qrt_db_mark_down(pr.s, apr_psprintf(p, "no answer within %d s to a probe",
                                                PROBE_WAIT_S));
        }
        apr_pool_clear(p);
    }
    probe_close(&db, cp);
    return NULL;
}

static apr_status_t probe_stop(void *data)
{
    apr_status_t rv;

    (void)data;
    if (pr.thread) {
        qrt_cond_lock(pr.tick);
        pr.stopping = 1;
        qrt_cond_broadcast(pr.tick);
        qrt_cond_unlock(pr.tick);
        apr_thread_join(&rv, pr.thread);
        pr.thread = NULL;
    }
    return APR_SUCCESS;
}

void qrt_probe_child_init(apr_pool_t *pchild, server_rec *s)
{
    apr_pool_t *tp;
    apr_status_t rv;

    memset(&pr, 0, sizeof(pr));
    pr.s = s;
    /* (only where calls wait for a server, and are armed: qrt_dbwatch) */
    if (!qrt_dbd_dialect() || !qrt_dbd_dialect()->socket
        || qrt_cond_create(&pr.tick, pchild) != APR_SUCCESS) {
        return;
    }
    apr_pool_create(&tp, pchild);
    apr_pool_tag(tp, "qrtrack-probe");
    rv = apr_thread_create(&pr.thread, NULL, probe_main, tp, pchild);
    if (rv != APR_SUCCESS) {
        pr.thread = NULL;
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, s, "QRT00147: cannot start the "
                     "database probe thread: a server that stops answering is left at "
                     "each call's deadline");
        return;
    }
    apr_pool_pre_cleanup_register(pchild, NULL, probe_stop);
}
