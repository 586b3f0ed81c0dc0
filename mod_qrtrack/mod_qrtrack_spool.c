/* mod_qrtrack_spool: printed codes keep working while the database cannot be reached.
 *
 * - Whether the database can be reached is one word in shared memory, for every
 *   child at once. A request or the writer that fails to reach it says so
 *   (qrt_db_mark_down); from then on nothing asks mod_dbd for a connection (no
 *   error line per request) and one keeper thread of the server probes the
 *   database once a second until it answers (qrt_db_mark_up).
 * - Meanwhile scans find their code in this node's snapshot (qrt_spool.h), which the
 *   keeper keeps current while the database answers: every second the trackers
 *   changed since the last look (trackers.updated_at, with a margin for clocks and
 *   late commits), every SPOOL_SWEEP_EVERY all of them (what was deleted by hand
 *   goes too).
 * - And the writer commits their visits to this node's spool, durably, before the
 *   302; once the database answers again it replays them, oldest first, each
 *   exactly once (qrt_store_spool.h's marks). While any visit waits in the spool,
 *   new ones go behind it, so the database gets this node's visits in order.
 *
 * Which child's keeper works is decided by a compare-and-swap on the shared state:
 * one at a time, whichever is first when work is due. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include "httpd.h"
#include "http_config.h"
#include "http_log.h"
#include "unixd.h"
#include <apr_strings.h>
#include <apr_thread_proc.h>
#include <apr_thread_mutex.h>

#include "mod_qrtrack_private.h"
#include "qrt_children.h"
#include "qrt_clock.h"
#include "qrt_dbwatch.h"
#include "mod_qrtrack_config.h"
#include "mod_qrtrack_db.h"
#include "mod_qrtrack_spool.h"
#include "mod_qrtrack_util.h"
#include "qrt_dblimit.h"
#include "qrt_dialect.h"
#include "qrt_spool.h"
#include "qrt_store_spool.h"

APLOG_USE_MODULE(qrtrack);

#define SPOOL_SHARED_KEY    "qrtrack-spool-shared"
#define SPOOL_FILE          "qrtrack-spool.db"
#define SNAP_FILE           "qrtrack-snapshot.db"
#define SPOOL_PROBE_EVERY   apr_time_from_sec(1)
#define SPOOL_REFRESH_EVERY apr_time_from_sec(1)
#define SPOOL_SWEEP_EVERY   apr_time_from_sec(300)
/* Changes are read again for this long after their updated_at: a commit that took
 * its time, another node's clock a little behind. */
#define SNAP_MARGIN         10
#define SNAP_PAGE           1000
#define SPOOL_TICK          apr_time_from_msec(100)
#define KEEPER_LOCK_WAIT_MS 1000
/* A keeper with no connection leaves the rounds to another child's, and opens its own
 * outside them, while that one had an answer within this long (three rounds). */
#define KEEPER_HANDOFF      apr_time_from_sec(3)
/* A keeper's attempts at a connection outside the rounds (keeper_main): the first at
 * once, then, while they fail, twice STANDBY_AFTER apart, twice that the next time, up to
 * STANDBY_MOST. */
#define STANDBY_AFTER       apr_time_from_sec(1)
#define STANDBY_MOST        apr_time_from_sec(30)
#define QRT_DEFAULT_SPOOL_LIMIT 1000000

typedef struct {
    volatile apr_uint32_t down;         /* 1 while the database cannot be reached */
    volatile apr_uint32_t keeper;       /* the pid of the child whose keeper works */
    apr_time_t down_since;
    apr_time_t next_probe;
    apr_time_t next_refresh;
    apr_time_t next_sweep;
    apr_int64_t snap_hwm;               /* newest updated_at the snapshot has seen */
    apr_int64_t snap_settled;           /* snap_hwm once a refresh began SNAP_MARGIN past
                                         * it: changes are then read after it alone */
    apr_int64_t snap_gen;               /* the snapshot's last full sweep */
    volatile apr_int64_t spooled;       /* visits in the spool now */
    volatile apr_int64_t refused;       /* visits set aside in it, refused for good */
    volatile apr_uint64_t spooled_total;
    volatile apr_uint64_t replayed;
    volatile apr_uint64_t snapshot_answers;
    volatile apr_uint64_t snapshot_writes; /* codes written to the snapshot */
    volatile apr_uint32_t full_warned;
    volatile apr_time_t answered_at;    /* qrt_clock_now() of the keeper's last answer */
} spool_shared_t;

static spool_shared_t *shared;
static const char *spool_path, *snap_path;  /* NULL: no spool (QRTrackSpoolDir off) */

/* This child: the keeper thread, the snapshot's reader (request threads, one at a
 * time), and the writer's spool (the writer thread alone). */
static struct {
    apr_thread_t *thread;
    volatile int stopping;
    qrt_cond_t *tick;               /* the keeper's pause, cut short by keeper_stop */
    server_rec *s;
    pid_t pid;
    apr_thread_mutex_t *read_lock;
    qrt_spool_t *reader;
    apr_pool_t *reader_pool;
    qrt_spool_t *writer;
    apr_pool_t *writer_pool;
} child;

int qrt_spool_enabled(void)
{
    return spool_path != NULL && shared != NULL;
}

int qrt_db_down(void)
{
    return shared && __atomic_load_n(&shared->down, __ATOMIC_ACQUIRE);
}

int qrt_db_answered_within(apr_interval_time_t within)
{
    apr_time_t at = shared ? __atomic_load_n(&shared->answered_at, __ATOMIC_ACQUIRE) : 0;

    return at != 0 && qrt_clock_now() - at < within;
}

int qrt_spool_pending(void)
{
    return shared && __atomic_load_n(&shared->spooled, __ATOMIC_ACQUIRE) > 0;
}

void qrt_spool_status(qrt_spool_status_t *st)
{
    memset(st, 0, sizeof(*st));
    st->enabled = qrt_spool_enabled();
    st->reachable = !qrt_db_down();
    if (shared) {
        st->spooled = (apr_uint64_t)__atomic_load_n(&shared->spooled, __ATOMIC_RELAXED);
        st->replayed = __atomic_load_n(&shared->replayed, __ATOMIC_RELAXED);
        st->spooled_total = __atomic_load_n(&shared->spooled_total, __ATOMIC_RELAXED);
        st->refused = (apr_uint64_t)__atomic_load_n(&shared->refused, __ATOMIC_RELAXED);
        st->snapshot_answers = __atomic_load_n(&shared->snapshot_answers,
                                               __ATOMIC_RELAXED);
        st->snapshot_writes = __atomic_load_n(&shared->snapshot_writes, __ATOMIC_RELAXED);
    }
}

void qrt_db_mark_down(server_rec *s, const char *why)
{
    apr_uint32_t up = 0;
    qrt_db_refusal_t kind = why ? qrt_db_refusal(NULL, why) : QRT_DB_REFUSED_OTHER;
    /* what to do about a refusal the driver's message names (no connection slot left,
     * a login refused): the API's QRT00091 line says it too, but while the database is
     * marked down the API no longer asks for a connection, so this line may be the only
     * one */
    const char *advice = kind == QRT_DB_REFUSED_OTHER ? "" : qrt_db_refusal_advice(kind);

    if (!shared || !__atomic_compare_exchange_n(&shared->down, &up, 1, 0, __ATOMIC_ACQ_REL,
                                                __ATOMIC_RELAXED)) {
        return;
    }
    shared->down_since = apr_time_now();
    shared->next_probe = qrt_clock_now() + SPOOL_PROBE_EVERY;
    if (qrt_spool_enabled()) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "QRT00104: the database cannot be "
                     "reached (%s%s%s): scans are answered from this node's snapshot of "
                     "codes and their visits kept in %s until it answers again; the "
                     "API answers 503", why ? why : "no connection", *advice ? "; " : "",
                     advice, spool_path);
    }
    else {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "QRT00104: the database cannot be "
                     "reached (%s%s%s): scans and the API answer 503 until it answers "
                     "again (QRTrackSpoolDir is off)", why ? why : "no connection",
                     *advice ? "; " : "", advice);
    }
}

void qrt_db_mark_up(server_rec *s)
{
    apr_uint32_t down = 1;

    if (!shared || !__atomic_compare_exchange_n(&shared->down, &down, 0, 0,
                                                __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
        return;
    }
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, "QRT00105: the database answers again "
                 "after %" APR_TIME_T_FMT " s; %" APR_INT64_T_FMT " spooled visits to "
                 "replay", apr_time_sec(apr_time_now() - shared->down_since),
                 (apr_int64_t)__atomic_load_n(&shared->spooled, __ATOMIC_RELAXED));
}

int qrt_db_unreachable(const qrt_db_t *db)
{
    const char *e = db->error;

    return qrt_db_lost(db)
        || (e && (strstr(e, "could not connect") || strstr(e, "Connection refused")
                  || strstr(e, "connection to server") || strstr(e, "unable to open")));
}

/* ---- set-up --------------------------------------------------------------------- */

/* The spool's directory: QRTrackSpoolDir, else the SQLite database's, else the
 * package's state directory. NULL when off. */
/* As root, the parent hands the files it made to the children's User. */
static void spool_give(apr_pool_t *p, server_rec *s, const char *path)
{
    static const char *const suffix[] = { "", "-wal", "-shm" };
    int i;

    if (geteuid() != 0) {
        return;
    }
    for (i = 0; i < 3; i++) {
        const char *f = apr_pstrcat(p, path, suffix[i], NULL);

        if (chown(f, ap_unixd_config.user_id, ap_unixd_config.group_id) != 0
            && (i == 0 || errno != ENOENT)) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, errno, s, "QRT00106: cannot give %s "
                         "to the server's User", f);
        }
    }
}

/* Opens one of the node's files in the parent and reads what start-up needs of it (the
 * visits waiting; the snapshot's marks). A file damaged by a disk's or a copy's fault
 * (not an SQLite database, or a corrupt one) is moved aside, kept for a look or a
 * recovery, and made anew, so that it does not keep httpd from starting: the snapshot is
 * filled again from the database within seconds; the visits a damaged spool held are not
 * replayed (sqlite3's .recover may get them back from the file set aside). */
static apr_status_t spool_open_start(apr_pool_t *ptemp, server_rec *s, const char *path,
                                     qrt_spool_kind_t kind, qrt_spool_t **out,
                                     apr_int64_t *v, const char **err)
{
    apr_pool_t *tp;
    const char *aside;
    apr_status_t rv;
    int tries;

    for (tries = 0;; tries++) {
        apr_pool_create(&tp, ptemp);
        *err = NULL;
        rv = qrt_spool_open(tp, path, kind, out, err);
        if (rv == APR_SUCCESS) {
            rv = kind == QRT_SPOOL_VISITS ? qrt_spool_count(*out, &v[0])
                 : qrt_snap_meta_get(*out, "hwm", &v[0]) == APR_SUCCESS
                   ? qrt_snap_meta_get(*out, "gen", &v[1]) : APR_EGENERAL;
            if (rv != APR_SUCCESS) {
                *err = apr_psprintf(ptemp, "%s: %s", path, qrt_spool_error(*out));
                if (qrt_spool_damaged(*out)) {
                    rv = QRT_SPOOL_EDAMAGED;
                }
            }
        }
        *err = *err ? apr_pstrdup(ptemp, *err) : NULL;
        if (rv != QRT_SPOOL_EDAMAGED || tries > 0) {
            if (rv != APR_SUCCESS) {
                apr_pool_destroy(tp);
                *out = NULL;
            }
            return rv;
        }
        apr_pool_destroy(tp);           /* (closes it) */
        rv = qrt_spool_set_aside(ptemp, path, apr_time_sec(apr_time_now()), &aside);
        if (rv != APR_SUCCESS) {
            *err = apr_psprintf(ptemp, "%s is damaged (%s) and cannot be moved aside",
                                path, *err);
            return rv;
        }
        if (kind == QRT_SPOOL_VISITS) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, "QRT00129: the spool is damaged (%s): "
                         "moved aside to %s and made anew; the visits it held are not "
                         "replayed (sqlite3's .recover may get them back)", *err, aside);
        }
        else {
            ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "QRT00129: the snapshot is damaged "
                         "(%s): moved aside to %s and made anew (filled from the database "
                         "again)", *err, aside);
        }
    }
}

/* The node's directory dir when it is none: QRTrackSpoolDir's fails the start (1), the
 * default is only a warning (warn: post_config's turn) with no spool (0); -1 when it is
 * a directory. */
static int spool_dir_missing(server_rec *s, const char *dir, int warn)
{
    struct stat st;

    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
        return -1;
    }
    if (qrt_config()->spool_dir) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, "QRT00108: QRTrackSpoolDir %s is "
                     "not a directory: create it, writable by the server's User, or "
                     "say QRTrackSpoolDir off", dir);
        return 1;
    }
    if (warn) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "QRT00108: %s is not a directory: "
                     "no spool, so scans answer 503 while the database cannot be reached "
                     "(set QRTrackSpoolDir)", dir);
    }
    return 0;
}

apr_status_t qrt_spool_check_config(apr_pool_t *ptemp, server_rec *s)
{
    const char *dir = qrt_dbd_node_dir(ptemp);
    int missing;

    if (!dir) {
        return APR_SUCCESS;
    }
    if ((missing = spool_dir_missing(s, dir, 0)) >= 0) {
        return missing ? APR_EGENERAL : APR_SUCCESS;
    }
    /* The parent (root) could make the files there; the children could not write them,
     * and every scan of an outage would answer 503 with its visit lost. */
    if (qrt_user_can_write(dir, ptemp) != 1) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, "QRT00108: %s%s is not writable by the "
                     "server's User (uid %ld): the spool and the snapshot that keep scans "
                     "answered and recorded while the database cannot be reached are "
                     "written there; chown it to the User, or say QRTrackSpoolDir off",
                     qrt_config()->spool_dir ? "QRTrackSpoolDir " : "", dir,
                     (long)(geteuid() == 0 ? ap_unixd_config.user_id : geteuid()));
        return APR_EGENERAL;
    }
    return APR_SUCCESS;
}

apr_status_t qrt_spool_post_config(apr_pool_t *pconf, apr_pool_t *ptemp, server_rec *s)
{
    apr_pool_t *pp = s->process->pool;
    apr_shm_t *shm = NULL;
    const char *dir = qrt_dbd_node_dir(ptemp), *err = NULL;
    qrt_spool_t *sp, *snap;
    apr_int64_t n = 0, hwm = 0, gen = 0, refused = 0, v[3] = { 0, 0, 0 };
    apr_status_t rv;
    int missing;

    apr_pool_userdata_get((void **)&shm, SPOOL_SHARED_KEY, pp);
    if (shm && apr_shm_size_get(shm) < sizeof(spool_shared_t)) {
        shm = NULL;
    }
    if (!shm) {
        rv = apr_shm_create(&shm, sizeof(spool_shared_t), NULL, pp);
        if (rv != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "QRT00107: cannot create shared "
                         "memory for the spool's state");
            return rv;
        }
        memset(apr_shm_baseaddr_get(shm), 0, sizeof(spool_shared_t));
        apr_pool_userdata_set(shm, SPOOL_SHARED_KEY, apr_pool_cleanup_null, pp);
    }
    shared = apr_shm_baseaddr_get(shm);
    spool_path = snap_path = NULL;
    if (!dir) {
        return APR_SUCCESS;
    }
    if ((missing = spool_dir_missing(s, dir, 1)) >= 0) {
        return missing ? APR_EGENERAL : APR_SUCCESS;
    }
    spool_path = apr_pstrcat(pconf, dir, "/" SPOOL_FILE, NULL);
    snap_path = apr_pstrcat(pconf, dir, "/" SNAP_FILE, NULL);
    /* Made here, before any child: a schema, the node's id, and what waits. */
    if (spool_open_start(ptemp, s, spool_path, QRT_SPOOL_VISITS, &sp, v, &err)
        != APR_SUCCESS
        || spool_open_start(ptemp, s, snap_path, QRT_SPOOL_SNAPSHOT, &snap, v + 1, &err)
           != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, "QRT00109: the spool in %s: %s (the "
                     "directory must be writable by the server's User; or say "
                     "QRTrackSpoolDir off)", dir, err ? err : "cannot open it");
        spool_path = snap_path = NULL;
        return APR_EGENERAL;
    }
    n = v[0];
    hwm = v[1];
    gen = v[2];
    if (qrt_spool_refused_count(sp, &refused) != APR_SUCCESS) {
        refused = 0;
    }
    spool_give(ptemp, s, spool_path);
    spool_give(ptemp, s, snap_path);
    shared->spooled = n;
    shared->refused = refused;
    shared->snap_hwm = hwm;
    shared->snap_gen = gen;
    shared->next_sweep = 0;
    shared->next_refresh = shared->next_probe = 0;
    shared->keeper = 0;
    if (n > 0) {
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, "QRT00110: %" APR_INT64_T_FMT
                     " visits wait in the spool %s; they go to the database once it "
                     "answers", n, spool_path);
    }
    if (refused > 0) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "QRT00140: %" APR_INT64_T_FMT
                     " visits the database refused are set aside in the spool %s "
                     "(qrtrack-admin spool refused %s)", refused, spool_path, spool_path);
    }
    return APR_SUCCESS;
}

/* ---- the snapshot: read by scans ---------------------------------------------------- */

apr_status_t qrt_snapshot_lookup(request_rec *r, const char *code, apr_int64_t *id,
                                 const char **url, const char **route)
{
    apr_status_t rv;
    const char *err = NULL;

    if (!snap_path || !child.read_lock) {
        return APR_NOTFOUND;
    }
    apr_thread_mutex_lock(child.read_lock);
    if (!child.reader) {
        apr_pool_clear(child.reader_pool);
        if (qrt_spool_open(child.reader_pool, snap_path, QRT_SPOOL_SNAPSHOT, &child.reader,
                           &err) != APR_SUCCESS) {
            child.reader = NULL;
        }
    }
    rv = child.reader ? qrt_snap_get(child.reader, r->pool, code, id, url, route) : APR_EGENERAL;
    if (rv != APR_SUCCESS && rv != APR_NOTFOUND) {
        apr_uint32_t more = 0;

        if (qrt_log_due(qrt_ration(QRT_R_SNAP), &more)) {
            ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, "QRT00111: the snapshot of codes "
                          "%s cannot be read: %s (and %u more since this line was last "
                          "logged)", snap_path,
                          child.reader ? qrt_spool_error(child.reader) : err, more);
        }
        child.reader = NULL;
    }
    apr_thread_mutex_unlock(child.read_lock);
    if (rv == APR_SUCCESS) {
        __atomic_add_fetch(&shared->snapshot_answers, 1, __ATOMIC_RELAXED);
    }
    return rv;
}

/* ---- the spool: the writer's side ---------------------------------------------------- */

/* The writer's connection to the spool, opened again after an error. */
static qrt_spool_t *spool_writer(server_rec *s)
{
    const char *err = NULL;

    if (!child.writer && spool_path && child.writer_pool) {
        apr_pool_clear(child.writer_pool);
    }
    if (!child.writer && spool_path && child.writer_pool
        && qrt_spool_open(child.writer_pool, spool_path, QRT_SPOOL_VISITS, &child.writer,
                          &err) != APR_SUCCESS) {
        apr_uint32_t more = 0;

        child.writer = NULL;
        if (qrt_log_due(qrt_ration(QRT_R_SPOOL), &more)) {
            ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "QRT00112: cannot open the spool: "
                         "%s (and %u more since this line was last logged)", err, more);
        }
    }
    return child.writer;
}

const char *qrt_spool_live_key(server_rec *s)
{
    static char key[32];
    qrt_spool_t *sp;

    if (!key[0] && qrt_spool_enabled() && (sp = spool_writer(s)) != NULL) {
        apr_snprintf(key, sizeof(key), "%s+live", qrt_spool_node(sp));
    }
    return key[0] ? key : NULL;
}

apr_status_t qrt_spool_put(server_rec *s, const qrt_visit_t *v, int n, apr_int64_t live)
{
    apr_int64_t limit = qrt_config()->spool_limit > 0 ? qrt_config()->spool_limit
                                                   : QRT_DEFAULT_SPOOL_LIMIT;
    qrt_spool_t *sp;
    apr_uint32_t more = 0;

    if (!qrt_spool_enabled()) {
        return APR_ENOTIMPL;
    }
    if (__atomic_load_n(&shared->spooled, __ATOMIC_RELAXED) + n > limit) {
        if (qrt_log_due(qrt_ration(QRT_R_SPOOL), &more)) {
            ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "QRT00113: the spool holds "
                         "QRTrackSpoolLimit (%" APR_INT64_T_FMT ") visits: scans answer "
                         "503 until the database takes them (and %u more refusals since "
                         "this line was last logged)", limit, more);
        }
        return APR_ENOSPC;
    }
    sp = spool_writer(s);
    if (!sp) {
        return APR_EGENERAL;
    }
    if (qrt_spool_append(sp, v, n, live) != APR_SUCCESS) {
        if (qrt_log_due(qrt_ration(QRT_R_SPOOL), &more)) {
            ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "QRT00114: cannot write %d visits "
                         "to the spool %s: %s; they answer 503 (and %u more since this "
                         "line was last logged)", n, spool_path, qrt_spool_error(sp), more);
        }
        child.writer = NULL;
        return APR_EGENERAL;
    }
    __atomic_add_fetch(&shared->spooled, n, __ATOMIC_RELEASE);
    __atomic_add_fetch(&shared->spooled_total, (apr_uint64_t)n, __ATOMIC_RELAXED);
    return APR_SUCCESS;
}

apr_status_t qrt_spool_next(apr_pool_t *p, server_rec *s, int max, qrt_spool_batch_t *b)
{
    qrt_spool_t *sp = spool_writer(s);
    apr_int64_t n = 0;

    memset(b, 0, sizeof(*b));
    if (!sp) {
        return APR_EGENERAL;
    }
    b->node = qrt_spool_node(sp);
    if (qrt_spool_peek(sp, p, max, &b->seq, &b->visits, &b->n) != APR_SUCCESS
        || qrt_spool_live(sp, &b->live_token, &b->live_from, &b->live_upto) != APR_SUCCESS) {
        apr_uint32_t more = 0;

        if (qrt_log_due(qrt_ration(QRT_R_REPLAY), &more)) {
            ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "QRT00115: cannot read the spool "
                         "%s: %s (and %u more since this line was last logged)", spool_path,
                         qrt_spool_error(sp), more);
        }
        child.writer = NULL;
        return APR_EGENERAL;
    }
    if (b->n == 0 && qrt_spool_count(sp, &n) == APR_SUCCESS) {
        /* Nothing there: the count in shared memory says so too. */
        __atomic_store_n(&shared->spooled, n, __ATOMIC_RELEASE);
    }
    return APR_SUCCESS;
}

void qrt_spool_replayed(server_rec *s, const qrt_spool_batch_t *b, int recorded)
{
    apr_int64_t n = 0;

    if (!child.writer || b->n == 0) {
        return;
    }
    __atomic_add_fetch(&shared->replayed, (apr_uint64_t)recorded, __ATOMIC_RELAXED);
    /* The database has them (its mark says so): should this fail, the next replay
     * skips them. */
    if (qrt_spool_drop(child.writer, b->seq[b->n - 1]) != APR_SUCCESS
        || qrt_spool_count(child.writer, &n) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "QRT00116: cannot drop replayed "
                     "visits from the spool: %s (the database's mark keeps them from "
                     "being recorded twice)", qrt_spool_error(child.writer));
        child.writer = NULL;
        return;
    }
    __atomic_store_n(&shared->spooled, n, __ATOMIC_RELEASE);
    if (n == 0) {
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, "QRT00117: the spool is empty: "
                     "every spooled visit is in the database");
    }
}

/* How often an idle writer counts the spool's visits (visits put back by qrtrack-admin
 * spool retry, which no child counted). */
#define SPOOL_RECOUNT_EVERY apr_time_from_sec(10)

int qrt_spool_recount_due(void)
{
    static apr_time_t next;
    apr_time_t now = apr_time_now();

    if (!qrt_spool_enabled() || now < next) {
        return 0;
    }
    next = now + SPOOL_RECOUNT_EVERY;
    return 1;
}

void qrt_spool_recount(server_rec *s)
{
    qrt_spool_t *sp = spool_writer(s);
    apr_int64_t n = 0, refused = 0, gone = 0;
    int days = qrt_config()->visit_retention;

    /* Refused visits kept no longer than the retention lets visits keep their
     * visitors' details (they are not in the database for its purge to erase). */
    if (sp && days > 0
        && qrt_spool_refused_expire(sp, apr_time_sec(apr_time_now()) - (apr_int64_t)days
                                        * 86400, &gone) == APR_SUCCESS
        && gone > 0) {
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, "QRT00143: %" APR_INT64_T_FMT
                     " refused visits set aside more than QRTrackVisitRetention (%d days) "
                     "ago deleted from the spool %s", gone, days, spool_path);
    }
    if (sp && qrt_spool_count(sp, &n) == APR_SUCCESS
        && qrt_spool_refused_count(sp, &refused) == APR_SUCCESS) {
        __atomic_store_n(&shared->spooled, n, __ATOMIC_RELEASE);
        __atomic_store_n(&shared->refused, refused, __ATOMIC_RELAXED);
    }
}

void qrt_spool_refuse_head(server_rec *s, const qrt_spool_batch_t *b, const char *why)
{
    apr_int64_t n = 0, refused = 0;
    apr_uint32_t more = 0;

    if (!child.writer || b->n == 0) {
        return;
    }
    if (qrt_spool_refuse(child.writer, b->seq[0], why, apr_time_sec(apr_time_now()))
            != APR_SUCCESS
        || qrt_spool_count(child.writer, &n) != APR_SUCCESS
        || qrt_spool_refused_count(child.writer, &refused) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "QRT00141: cannot set a refused visit "
                     "aside in the spool: %s (it is tried again)",
                     qrt_spool_error(child.writer));
        child.writer = NULL;
        return;
    }
    __atomic_store_n(&shared->spooled, n, __ATOMIC_RELEASE);
    __atomic_store_n(&shared->refused, refused, __ATOMIC_RELAXED);
    /* Rationed as the other failures are, for the server, not each child: a rule that
     * refuses every visit would set each aside in turn, in whichever child replays
     * (QRTrackSpoolRefused counts them all). */
    if (qrt_log_due(qrt_ration(QRT_R_REFUSED), &more)) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "QRT00139: the database refused spooled "
                     "visit %" APR_INT64_T_FMT " (tracker %" APR_INT64_T_FMT ") %d times: "
                     "%s; it is set aside in the spool %s (qrtrack-admin spool refused, then "
                     "spool retry once the cause is mended), and the visits behind it go on "
                     "(and %u more set aside since this line was last logged)", b->seq[0],
                     b->visits[0].tracker_id, QRT_REPLAY_TRIES, why, spool_path, more);
    }
    if (n == 0) {
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, "QRT00117: the spool is empty: "
                     "every spooled visit is in the database");
    }
}

/* ---- the keeper ------------------------------------------------------------------- */

typedef struct {
    qrt_spool_t *snap;
    apr_int64_t gen;
    apr_int64_t hwm;
} keeper_ctx;

static apr_status_t keeper_row(void *data, const qrt_snap_row_t *row)
{
    keeper_ctx *k = data;

    if (row->updated > k->hwm) {
        k->hwm = row->updated;
    }
    __atomic_add_fetch(&shared->snapshot_writes, 1, __ATOMIC_RELAXED);
    return row->deleted ? qrt_snap_del(k->snap, row->code)
                        : qrt_snap_put(k->snap, row->code, row->id, row->url, row->route,
                                       k->gen);
}

/* Every live tracker, a page a transaction; then what was not seen goes. */
static apr_status_t keeper_sweep(qrt_db_t *db, qrt_spool_t *snap, apr_pool_t *p)
{
    keeper_ctx k = { snap, shared->snap_gen + 1, shared->snap_hwm };
    apr_int64_t after = 0;
    apr_status_t rv;
    int rows = SNAP_PAGE;

    while (rows == SNAP_PAGE && !child.stopping) {
        apr_pool_clear(p);
        if (qrt_snap_begin(snap) != APR_SUCCESS) {
            return APR_EGENERAL;
        }
        rv = qrt_store_snap_page(db, p, after, SNAP_PAGE, keeper_row, &k, &after, &rows);
        if (rv != APR_SUCCESS) {
            qrt_snap_rollback(snap);
            return rv;
        }
        if (qrt_snap_commit(snap) != APR_SUCCESS) {
            return APR_EGENERAL;
        }
    }
    if (child.stopping) {
        return APR_EINTR;
    }
    if (qrt_snap_begin(snap) != APR_SUCCESS
        || qrt_snap_sweep(snap, k.gen) != APR_SUCCESS
        || qrt_snap_meta_set(snap, "gen", k.gen) != APR_SUCCESS
        || qrt_snap_meta_set(snap, "hwm", k.hwm) != APR_SUCCESS) {
        qrt_snap_rollback(snap);
        return APR_EGENERAL;
    }
    if (qrt_snap_commit(snap) != APR_SUCCESS) {
        return APR_EGENERAL;
    }
    shared->snap_gen = k.gen;
    shared->snap_hwm = k.hwm;
    return APR_SUCCESS;
}

/* Whether the time next (on qrt_clock_now's clock, set as now + every) has come. A time
 * further ahead than every is none of this clock's (a build before it, on the wall
 * clock, shares this memory through a graceful restart): due. The wall clock's steps
 * move neither. */
static int keeper_due(apr_time_t next, apr_interval_time_t every)
{
    apr_time_t now = qrt_clock_now();

    return now >= next || next - now > every;
}

/* The trackers changed since the newest change seen, less the margin (a change made
 * a little before it may commit after it) while that margin runs: once a refresh has
 * begun SNAP_MARGIN seconds past the newest change, it has seen every change made up
 * to it, and the later ones read only what is newer. Else the margin's trackers were
 * written again every second for as long as nothing newer changed: after an import
 * of 100,000 trackers, each of them every second. (Later than the margin, a change is
 * still caught by the sweep, every SPOOL_SWEEP_EVERY.) */
static apr_status_t keeper_changes(qrt_db_t *db, qrt_spool_t *snap, apr_pool_t *p)
{
    keeper_ctx k = { snap, shared->snap_gen, shared->snap_hwm };
    apr_int64_t begun = apr_time_sec(apr_time_now());
    apr_int64_t from = shared->snap_settled == k.hwm && k.hwm > 0 ? k.hwm + 1
                                                                   : k.hwm - SNAP_MARGIN;
    apr_status_t rv;

    if (qrt_snap_begin(snap) != APR_SUCCESS) {
        return APR_EGENERAL;
    }
    rv = qrt_store_snap_changed(db, p, from, keeper_row, &k);
    /* A wall clock behind the newest change read (set back, or another node's ahead)
     * stamps the changes made now below the mark: those around the clock's now are read
     * too, until it catches up (each row about 2 * SNAP_MARGIN times, not every second
     * for the hour a clock set back an hour takes). */
    if (rv == APR_SUCCESS && begun < k.hwm - SNAP_MARGIN) {
        rv = qrt_store_snap_changed_between(db, p, begun - SNAP_MARGIN, begun + SNAP_MARGIN,
                                            keeper_row, &k);
    }
    if (rv == APR_SUCCESS && k.hwm != shared->snap_hwm) {
        rv = qrt_snap_meta_set(snap, "hwm", k.hwm);
    }
    if (rv != APR_SUCCESS) {
        qrt_snap_rollback(snap);
        return rv;
    }
    if (qrt_snap_commit(snap) != APR_SUCCESS) {
        return APR_EGENERAL;
    }
    shared->snap_hwm = k.hwm;
    if (begun > k.hwm + SNAP_MARGIN) {
        shared->snap_settled = k.hwm;
    }
    return APR_SUCCESS;
}

static apr_status_t keeper_refresh(qrt_db_t *db, qrt_spool_t *snap, apr_pool_t *p)
{
    return keeper_due(shared->next_sweep, SPOOL_SWEEP_EVERY) || shared->snap_hwm == 0
           ? keeper_sweep(db, snap, p) : keeper_changes(db, snap, p);
}

/* The keeper's own connection (not mod_dbd's: it must not take a request's), opened
 * within QRT_DB_CONNECT_QUICK_S, then PGCONNECT_TIMEOUT (qrt_db_connect_patient): its
 * attempts while the server is frozen would each hold the child's end (a graceful restart
 * waits for the old children) for PGCONNECT_TIMEOUT. */
static qrt_db_t *keeper_connect(apr_pool_t *cp, int *silent_runs, const char **err)
{
    const apr_dbd_driver_t *driver;
    qrt_db_t *db;

    apr_pool_clear(cp);
    db = apr_pcalloc(cp, sizeof(*db));
    if (qrt_db_connect_patient(cp, &driver, &db->handle, silent_runs, err) != APR_SUCCESS) {
        return NULL;
    }
    db->driver = driver;
    db->pool = cp;
    ap_log_error(APLOG_MARK, APLOG_INFO, 0, child.s, "QRT00149: the snapshot's keeper of "
                 "this child opened its connection to the database");
    if (qrt_dialect_remote(driver)) {
        /* A table locked elsewhere (ALTER TABLE, VACUUM FULL) fails a round, tried again
         * the next, rather than hold it, and with it the child's end, for as long as the
         * lock lasts: a graceful restart waits for the old children to end. */
        int nrows = 0;

        apr_dbd_query(driver, db->handle, &nrows,
                      apr_psprintf(cp, "SET lock_timeout = %d", KEEPER_LOCK_WAIT_MS));
    }
    qrt_db_prepare_lazily(db, cp);
    return db;
}

/* The keeper could not open its connection while the node is on the database. A refusal
 * (no server there, one starting or stopping) takes the node off it now. A server that
 * took no connection within QRT_DB_CONNECT_QUICK_S may only be slow to take one (its
 * host's CPU saturated): the snapshot waits for the next round, and whether the server
 * stopped answering is the probe's to say, from the calls that wait on it
 * (mod_qrtrack_probe.c). Taking the node off for it answered the API 503 while mod_dbd's
 * connections worked. */
static void keeper_unconnected(const char *err)
{
    apr_uint32_t more = 0;

    if (!qrt_db_connect_silent(err)) {
        qrt_db_mark_down(child.s, err);
    }
    else if (qrt_log_due(qrt_ration(QRT_R_SNAP), &more)) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, child.s, "QRT00118: the snapshot of "
                     "codes could not be brought up to date: %s (and %u more since this "
                     "line was last logged)", err, more);
    }
}

/* A connection opened outside the rounds could not be: tried again after twice the
 * wait, up to STANDBY_MOST (a server out of connection slots is not asked every
 * second by each child). The node is on the database while another keeper answers:
 * only said at info. Returns the next wait. */
static apr_interval_time_t keeper_standby_failed(const char *err, apr_interval_time_t wait)
{
    apr_uint32_t more = 0;

    if (qrt_log_due(qrt_ration(QRT_R_SNAP), &more)) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, child.s, "QRT00148: the snapshot's keeper "
                     "of this child could not open its connection while another child's "
                     "answers: %s (and %u more since this line was last logged)", err,
                     more);
    }
    return wait * 2 < STANDBY_MOST ? wait * 2 : STANDBY_MOST;
}

/* The rounds are the children's in turn: shared->keeper holds the pid of the child
 * whose keeper has one. A child killed in its turn (a crash, the OOM killer, SIGKILL at
 * a stop) left it held for ever: the snapshot was no longer refreshed, and a node that
 * had left the database never probed it again, until a restart. */
static int keeper_turn(apr_time_t *next, apr_interval_time_t every)
{
    return keeper_due(*next, every) && qrt_turn_take(&shared->keeper, child.pid);
}

static void keeper_done(apr_time_t *next, apr_interval_time_t every)
{
    *next = qrt_clock_now() + every;
    qrt_turn_give(&shared->keeper, child.pid);
}

/* The keeper's pause between two rounds, cut short when the child stops: a graceful
 * restart waits for the old children to end before the new ones accept. */
static void keeper_pause(void)
{
    if (!child.tick) {
        apr_sleep(SPOOL_TICK);
        return;
    }
    qrt_cond_lock(child.tick);
    if (!child.stopping) {
        qrt_cond_timedwait(child.tick, SPOOL_TICK);
    }
    qrt_cond_unlock(child.tick);
}

static void *APR_THREAD_FUNC keeper_main(apr_thread_t *thread, void *data)
{
    apr_pool_t *top = data, *cp, *sp, *p;
    qrt_db_t *db = NULL;
    qrt_spool_t *snap = NULL;
    const char *err = NULL, *why;
    int silent_runs = 0;
    apr_time_t standby_next = 0;
    apr_interval_time_t standby_wait = STANDBY_AFTER;

    (void)thread;
    prctl(PR_SET_NAME, "qrtrack-keeper", 0, 0, 0);
    /* (its database calls end when a server stops answering: qrt_dbwatch.h) */
    qrt_dbwatch_limit(qrt_db_call_limit_ms());
    apr_pool_create(&cp, top);
    apr_pool_create(&sp, top);
    apr_pool_create(&p, top);
    while (!child.stopping) {
        apr_status_t rv;

        keeper_pause();
        if (qrt_db_down()) {
            if (!keeper_turn(&shared->next_probe, SPOOL_PROBE_EVERY)) {
                continue;
            }
            if (db) {
                apr_dbd_close(db->driver, db->handle);
            }
            db = keeper_connect(cp, &silent_runs, &err);
            why = NULL;
            if (db && apr_dbd_check_conn(db->driver, p, db->handle) == APR_SUCCESS
                && !(why = qrt_dbd_schema_recheck(p, db->driver, db->handle))) {
                qrt_db_mark_up(child.s);
            }
            else if (db) {
                apr_uint32_t more = 0;

                if (why
                    && qrt_log_due_every(qrt_ration(QRT_R_SCHEMA), QRT_LOG_QUIET, &more)) {
                    ap_log_error(APLOG_MARK, APLOG_CRIT, 0, child.s, "QRT00142: the "
                                 "database answers again, but %s: the server started "
                                 "without it, and its schema changed meanwhile (a restored "
                                 "backup, another node's upgrade). This node stays on its "
                                 "snapshot and spool; restart the server (apachectl "
                                 "graceful) to check and bring the schema up to date (and "
                                 "%u more checks since this line was last logged)", why,
                                 more);
                }
                apr_dbd_close(db->driver, db->handle);
                db = NULL;
            }
            keeper_done(&shared->next_probe, SPOOL_PROBE_EVERY);
            continue;
        }
        /* While another child's keeper answers, one with no connection opens its own
         * outside the rounds, and takes them only once it has one. Taking a round to
         * open it, on a server slow to take new connections, it gave up after
         * QRT_DB_CONNECT_QUICK_S and left the round unanswered; and leaving the rounds
         * to the one keeper that had a connection left the node with none when that
         * keeper's child ended (idle maintenance, MaxConnectionsPerChild, a crash).
         * Either way the health checks that rely on a recent answer
         * (mod_qrtrack_health.c) answered 503 until a new connection was taken. */
        if (!db && qrt_db_answered_within(KEEPER_HANDOFF)) {
            if (keeper_due(standby_next, standby_wait)) {
                db = keeper_connect(cp, &silent_runs, &err);
                standby_wait = db ? STANDBY_AFTER : keeper_standby_failed(err, standby_wait);
                standby_next = qrt_clock_now() + standby_wait;
            }
            continue;
        }
        if (!snap_path || !keeper_turn(&shared->next_refresh, SPOOL_REFRESH_EVERY)) {
            continue;
        }
        if (!db) {
            db = keeper_connect(cp, &silent_runs, &err);
            if (!db) {
                keeper_unconnected(err);
                keeper_done(&shared->next_refresh, SPOOL_REFRESH_EVERY);
                continue;
            }
        }
        if (!snap && qrt_spool_open(sp, snap_path, QRT_SPOOL_SNAPSHOT, &snap, &err)
                     != APR_SUCCESS) {
            snap = NULL;
            rv = APR_EGENERAL;
        }
        else {
            db->error = NULL;
            rv = keeper_refresh(db, snap, p);
            if (rv != APR_SUCCESS && db->error && qrt_db_lost(db)) {
                /* A connection from before the database restarted: once more, on a
                 * new one. */
                apr_dbd_close(db->driver, db->handle);
                db = keeper_connect(cp, &silent_runs, &err);
                rv = db ? keeper_refresh(db, snap, p) : APR_EGENERAL;
                if (!db) {
                    keeper_unconnected(err);
                    keeper_done(&shared->next_refresh, SPOOL_REFRESH_EVERY);
                    continue;
                }
            }
            if (rv == APR_SUCCESS) {
                __atomic_store_n(&shared->answered_at, qrt_clock_now(), __ATOMIC_RELEASE);
            }
            if (rv == APR_SUCCESS && keeper_due(shared->next_sweep, SPOOL_SWEEP_EVERY)) {
                shared->next_sweep = qrt_clock_now() + SPOOL_SWEEP_EVERY;
            }
        }
        if (rv != APR_SUCCESS && rv != APR_EINTR) {
            apr_uint32_t more = 0;

            /* (a connection re-opened in place, past QRT_DB_CONNECT_QUICK_S: as
             * keeper_unconnected) */
            if (db->error && qrt_db_unreachable(db) && !qrt_db_connect_silent(db->error)) {
                qrt_db_mark_down(child.s, db->error);
            }
            else if (qrt_log_due(qrt_ration(QRT_R_SNAP), &more)) {
                ap_log_error(APLOG_MARK, APLOG_WARNING, 0, child.s, "QRT00118: the "
                             "snapshot of codes could not be brought up to date: %s (and "
                             "%u more since this line was last logged)",
                             db->error ? db->error
                                       : snap ? qrt_spool_error(snap) : err, more);
            }
            if (db->error) {
                apr_dbd_close(db->driver, db->handle);
                db = NULL;
            }
            apr_pool_clear(sp);
            snap = NULL;
        }
        apr_pool_clear(p);
        keeper_done(&shared->next_refresh, SPOOL_REFRESH_EVERY);
    }
    if (db) {
        apr_dbd_close(db->driver, db->handle);
    }
    return NULL;
}

static apr_status_t keeper_stop(void *data)
{
    apr_status_t rv;

    (void)data;
    if (child.thread) {
        if (child.tick) {
            qrt_cond_lock(child.tick);
            child.stopping = 1;
            qrt_cond_broadcast(child.tick);
            qrt_cond_unlock(child.tick);
        }
        child.stopping = 1;
        apr_thread_join(&rv, child.thread);
        child.thread = NULL;
    }
    return APR_SUCCESS;
}

void qrt_spool_child_init(apr_pool_t *pchild, server_rec *s)
{
    apr_pool_t *kp;
    apr_status_t rv;

    memset(&child, 0, sizeof(child));
    child.s = s;
    child.pid = getpid();
    if (!shared) {
        return;
    }
    apr_pool_create(&child.reader_pool, pchild);
    apr_pool_create(&child.writer_pool, pchild);
    apr_pool_tag(child.writer_pool, "qrtrack-spool");
    apr_pool_tag(child.reader_pool, "qrtrack-snapshot");
    if (apr_thread_mutex_create(&child.read_lock, APR_THREAD_MUTEX_DEFAULT, pchild)
        != APR_SUCCESS) {
        child.read_lock = NULL;
    }
    if (qrt_cond_create(&child.tick, pchild) != APR_SUCCESS) {
        child.tick = NULL;              /* (the keeper then sleeps its whole pause) */
    }
    apr_pool_create(&kp, pchild);
    apr_pool_tag(kp, "qrtrack-keeper");
    rv = apr_thread_create(&child.thread, NULL, keeper_main, kp, pchild);
    if (rv != APR_SUCCESS) {
        child.thread = NULL;
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "QRT00119: cannot start the keeper "
                     "thread (snapshot of codes, database probe)");
        return;
    }
    apr_pool_pre_cleanup_register(pchild, NULL, keeper_stop);
}
