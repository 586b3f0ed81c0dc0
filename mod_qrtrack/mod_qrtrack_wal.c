/* mod_qrtrack_wal: SQLite WAL checkpoints off the commit path.
 *
 * By default the connection whose commit makes the WAL long copies it back into the
 * database file (a checkpoint, with two fsyncs) before its COMMIT returns. For the
 * scan writer that happens while it holds the writers' mutex, so every scan of
 * every child waited for the disk. Instead, each child runs one checkpoint thread
 * with its own connection: every QRT_WAL_PERIOD it copies what the writers have
 * committed (a PASSIVE checkpoint, which never blocks them), and the module's
 * connections leave checkpoints to it: their wal_autocheckpoint is set past what the
 * thread lets the WAL reach, so a commit copies only when the thread fell behind.
 *
 * Commits that have added QRT_WAL_KICK frames to the WAL since the thread's last copy
 * wake it at once (a WAL hook on every connection, in place of SQLite's own
 * checkpointing hook): visits from many visitors dirty a few pages each, and their WAL
 * grows by several MB between two rounds, which the commits then copied themselves, on
 * the one writer's CPU. (Counted from the last copy, not from the WAL's start: under
 * load the WAL stays long between two copies, and a length woke the thread after every
 * commit.)
 *
 * Under steady load the copy never quite catches up, and SQLite only starts the
 * WAL over once everything in it was copied. When the WAL is longer than
 * QRT_WAL_LONG frames, the thread therefore copies the rest while holding the
 * writers' mutex (a short step: the bulk was copied just before), and the next
 * commit starts the WAL from its beginning.
 *
 * The checkpoint is a SQLite call on the thread's own connection, made through the
 * driver's native handle: through apr_dbd it would hold the driver's process-wide
 * mutex, and so stall this child's writer, for the whole copy. Other drivers have
 * nothing to do here. */
#include <string.h>
#include <sys/prctl.h>
#include <sqlite3.h>
#include "httpd.h"
#include "http_log.h"
#include <apr_dbd.h>
#include <apr_thread_proc.h>
#include <apr_thread_mutex.h>

#include "mod_qrtrack_private.h"
#include "qrt_clock.h"
#include "mod_qrtrack_config.h"
#include "mod_qrtrack_stats.h"
#include "mod_qrtrack_util.h"
#include "mod_qrtrack_wal.h"

APLOG_USE_MODULE(qrtrack);

#define QRT_WAL_PERIOD  apr_time_from_msec(100)
#define QRT_WAL_LONG    512         /* frames (of one page each): 2 MB */
#define QRT_WAL_REST    256         /* frames left to copy under the writers' mutex */
#define QRT_WAL_TRIES   8           /* copies to get there */
#define QRT_WAL_KICK    512         /* frames added since the last copy that wake
                                       the thread */

static struct {
    apr_thread_t *thread;
    qrt_cond_t *wake;               /* the thread's pause (its lock guards what follows) */
    int stopping;
    int running;                    /* the thread has its connection */
    int kicked;                     /* a commit asked for a round (under lock) */
    /* read by this child's commits (atomically: set by the thread) */
    int copied;                     /* the WAL's frames copied at the last round */
    int finishing;                  /* the thread waits for the writers' mutex to copy
                                       the rest */
    apr_global_mutex_t *writers;
    server_rec *s;
} wal;

int qrt_wal_running(void)
{
    return wal.running;
}

/* A PASSIVE checkpoint: 0 when it ran, with the WAL's length and how much of it is
 * now copied. */

static int wal_copy(sqlite3 *h, int *nlog, int *ncopied)
{
    apr_uint32_t more = 0;
    int rc = sqlite3_wal_checkpoint_v2(h, NULL, SQLITE_CHECKPOINT_PASSIVE, nlog, ncopied);

    if (rc == SQLITE_OK) {
        __atomic_store_n(&wal.copied, *ncopied > 0 ? *ncopied : 0, __ATOMIC_RELAXED);
        QRT_STAT_ADD(checkpoints, 1);
        QRT_STAT_SET(wal_frames, *nlog > 0 ? *nlog : 0);
        QRT_STAT_SET(wal_copied, *ncopied > 0 ? *ncopied : 0);
        return 0;
    }
    if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED && qrt_log_due(qrt_ration(QRT_R_WAL), &more)) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, wal.s, "QRT00050: WAL checkpoint "
                     "failed: %s (and %u more failed checkpoints since this line was "
                     "last logged)", sqlite3_errmsg(h), more);
    }
    return -1;                      /* BUSY: another child's thread is copying */
}

/* One round: copy what is committed. When the WAL has grown long, copy again until
 * little is left, and copy that little while holding the writers' mutex. */
static void wal_round(sqlite3 *h)
{
    int nlog = 0, ncopied = 0, i;

    if (wal_copy(h, &nlog, &ncopied) != 0 || nlog <= QRT_WAL_LONG || !wal.writers) {
        return;
    }
    for (i = 0; i < QRT_WAL_TRIES && nlog - ncopied > QRT_WAL_REST; i++) {
        if (wal_copy(h, &nlog, &ncopied) != 0) {
            return;
        }
    }
    if (nlog - ncopied <= QRT_WAL_REST) {
        __atomic_store_n(&wal.finishing, 1, __ATOMIC_RELAXED);
        if (apr_global_mutex_lock(wal.writers) == APR_SUCCESS) {
            wal_copy(h, &nlog, &ncopied);
            apr_global_mutex_unlock(wal.writers);
        }
        __atomic_store_n(&wal.finishing, 0, __ATOMIC_RELAXED);
    }
}

static void *APR_THREAD_FUNC wal_main(apr_thread_t *thread, void *data)
{
    apr_pool_t *p = data;
    const apr_dbd_driver_t *driver = NULL;
    apr_dbd_t *handle = NULL;
    const char *err = NULL;
    sqlite3 *h;

    (void)thread;
    prctl(PR_SET_NAME, "qrtrack-wal", 0, 0, 0);
    h = NULL;
    if (apr_dbd_get_driver(p, qrt_config()->dbd_driver, &driver) == APR_SUCCESS
        && apr_dbd_open_ex(driver, p, qrt_config()->dbd_params, &handle, &err)
           == APR_SUCCESS) {
        h = apr_dbd_native_handle(driver, handle);
        if (!h) {
            apr_dbd_close(driver, handle);
            handle = NULL;
        }
    }
    qrt_cond_lock(wal.wake);
    if (!h) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, wal.s, "QRT00051: the WAL checkpoint "
                     "thread cannot open the database (%s); commits will copy the WAL "
                     "themselves", err ? err : "no driver");
        wal.stopping = 1;
    }
    else {
        sqlite3_busy_timeout(h, 10000);
        /* A connection learns that the database is in WAL mode when it first
         * reads it; until then a checkpoint does nothing. */
        sqlite3_exec(h, "SELECT COUNT(*) FROM qrt_schema", NULL, NULL, NULL);
        wal.running = 1;
    }
    qrt_cond_broadcast(wal.wake);
    while (!wal.stopping) {
        if (!wal.kicked) {
            qrt_cond_timedwait(wal.wake, QRT_WAL_PERIOD);
        }
        wal.kicked = 0;
        if (wal.stopping) {
            break;
        }
        qrt_cond_unlock(wal.wake);
        wal_round(h);
        qrt_cond_lock(wal.wake);
    }
    qrt_cond_unlock(wal.wake);
    if (h) {
        /* Last round: leave as little as possible for the next start. */
        wal_round(h);
        apr_dbd_close(driver, handle);
    }
    /* A plain return, not apr_thread_exit(): that unwinds under AddressSanitizer
     * into a stack-use-after-scope report at every child's exit. */
    return NULL;
}

/* After each commit of a connection of this child: wake the thread when the WAL has
 * grown, copy it here when the thread fell far behind (SQLite's own hook copies at
 * wal_autocheckpoint's length, whatever the thread does), but not while the thread
 * waits for the writers' mutex to copy the rest: this commit's end lets it. */
static int wal_hook(void *arg, sqlite3 *h, const char *db, int nframes)
{
    int copied = __atomic_load_n(&wal.copied, __ATOMIC_RELAXED);

    (void)arg;
    if (copied > nframes) {
        copied = 0;                 /* the WAL started over since */
    }
    if (nframes >= QRT_WAL_FALLBACK_FRAMES
        && !__atomic_load_n(&wal.finishing, __ATOMIC_RELAXED)) {
        /* Counted when it copied: while the thread is copying (its fsync slow on a busy
         * disk, as the WAL grows past this length) the commit's try ends at once, BUSY,
         * having done nothing on the writer's time. */
        if (sqlite3_wal_checkpoint_v2(h, db, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL)
            == SQLITE_OK) {
            QRT_STAT_ADD(wal_commit_copies, 1);
        }
    }
    else if (nframes - copied >= QRT_WAL_KICK && wal.running) {
        qrt_cond_lock(wal.wake);
        if (!wal.kicked) {
            wal.kicked = 1;
            QRT_STAT_ADD(wal_kicks, 1);
            qrt_cond_signal(wal.wake);
        }
        qrt_cond_unlock(wal.wake);
    }
    return SQLITE_OK;
}

int qrt_wal_hook(const apr_dbd_driver_t *driver, apr_dbd_t *handle)
{
    sqlite3 *h;

    if (!wal.running || !(h = apr_dbd_native_handle(driver, handle))) {
        return -1;
    }
    sqlite3_wal_hook(h, wal_hook, NULL);
    return 0;
}

static apr_status_t wal_stop(void *data)
{
    apr_status_t rv;

    (void)data;
    if (!wal.thread) {
        return APR_SUCCESS;
    }
    qrt_cond_lock(wal.wake);
    wal.stopping = 1;
    qrt_cond_broadcast(wal.wake);
    qrt_cond_unlock(wal.wake);
    apr_thread_join(&rv, wal.thread);
    wal.thread = NULL;
    wal.running = 0;
    return APR_SUCCESS;
}

void qrt_wal_child_init(apr_pool_t *pchild, server_rec *s, apr_global_mutex_t *writers)
{
    /* the dialect from the driver's name: mod_qrtrack_db.c asks this file whether
     * the thread runs, so this one does not call it back */
    const qrt_dialect_t *dialect = qrt_dialect_named(qrt_config()->dbd_driver);
    apr_pool_t *tp;
    apr_status_t rv;

    memset(&wal, 0, sizeof(wal));
    wal.s = s;
    wal.writers = writers;
    if (!dialect || !dialect->embedded) {
        return;
    }
    if (qrt_cond_create(&wal.wake, pchild) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "QRT00052: cannot start the WAL "
                     "checkpoint thread; commits will copy the WAL themselves");
        return;
    }
    apr_pool_create(&tp, pchild);
    apr_pool_tag(tp, "qrtrack-wal");
    rv = apr_thread_create(&wal.thread, NULL, wal_main, tp, pchild);
    if (rv != APR_SUCCESS) {
        wal.thread = NULL;
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, s, "QRT00052: cannot start the WAL "
                     "checkpoint thread; commits will copy the WAL themselves");
        return;
    }
    apr_pool_pre_cleanup_register(pchild, NULL, wal_stop);
    /* Connections opened from here on ask whether the thread runs: wait until it
     * knows. */
    qrt_cond_lock(wal.wake);
    while (!wal.running && !wal.stopping) {
        qrt_cond_wait(wal.wake);
    }
    qrt_cond_unlock(wal.wake);
}
