/* mod_qrtrack_scan: the hot path. GET /q/<code> (a scan) and GET /l/<code> (a click).
 *
 * look the code up -> hand the visit to this child's writer thread -> wait until
 * its batch commits (group commit) -> 302. A redirect is only sent for a visit
 * that is durably stored. The queue is bounded: past QRTrackScanQueue waiting
 * visits a scan gets 503 with Retry-After instead of memory growing. */
#include <string.h>
#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "http_protocol.h"
#include "http_request.h"
#include "ap_mpm.h"
#include <apr_dbd.h>
#include "mod_dbd.h"
#include <apr_strings.h>
#include <apr_thread_proc.h>
#include <apr_thread_mutex.h>
#include <apr_thread_cond.h>
#include <apr_atomic.h>
#include <apr_shm.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sqlite3.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_config.h"
#include "mod_qrtrack_db.h"
#include "mod_qrtrack_gate.h"
#include "mod_qrtrack_lookup.h"
#include "mod_qrtrack_queue.h"
#include "mod_qrtrack_rate.h"
#include "mod_qrtrack_report.h"
#include "mod_qrtrack_scan.h"
#include "mod_qrtrack_keepalive.h"
#include "qrt_clock.h"
#include "qrt_dbwatch.h"
#include "mod_qrtrack_spool.h"
#include "qrt_spool.h"
#include "mod_qrtrack_stats.h"
#include "mod_qrtrack_ua.h"
#include "mod_qrtrack_util.h"
#include "mod_qrtrack_wal.h"
#include "qrt_code.h"
#include "qrt_schema.h"
#include "qrt_geo.h"
#include "qrt_valid.h"
#include "qrt_ip.h"
#include "qrt_store_purge.h"
#include "qrt_store_agg_blob.h"
#include "qrt_store_spool.h"
#include "qrt_store_webhook.h"
#include "qrt_token.h"
#include "qrt_vgroups.h"
#include "qrt_ua.h"
#include "qrt_route.h"

APLOG_USE_MODULE(qrtrack);

#define SCAN_UA_MAX      1024
#define SCAN_LANG_MAX    64                       /* a language tag rules look at */
#define SCAN_CACHE_SLOTS 4096
#define SCAN_SHARED_KEY  "qrtrack-scan-shared"
#define SCAN_WRITER_POLL apr_time_from_msec(250) /* an idle writer looks again */
/* The arrays a child's report counts keep for the next (qrt_vgroups_spares_release), and
 * the allocators of its reports' pools (qrt_report_pools_release): freed once no report
 * has used them this long, looked at once a second by the writer. */
#define SCAN_SPARES_IDLE apr_time_from_sec(10)
#define SCAN_COMMIT_TRIES 8                      /* a commit that lost a conflict */
#define SCAN_DICT_CACHE  65536                    /* dictionary ids a writer keeps */
#define SCAN_DICT_BYTES  (8 << 20)                /* of their keys, per dictionary */
/* A cached code is looked up again after this long: a change made through another
 * node (several servers on one PostgreSQL database) is followed within it. */
#define SCAN_CACHE_TTL   apr_time_from_msec(500)
/* Spooled visits replayed into the database a transaction at a time, and the pause
 * after a replay that failed. */
#define SCAN_REPLAY_BATCH 500
#define SCAN_LOOKUP_TRIES 3
#define SCAN_ANSWER_MARGIN apr_time_from_msec(50)
#define SCAN_REPLAY_PAUSE apr_time_from_sec(1)
/* How long a replay waits for a lock held elsewhere: it holds the writers' mutex, so
 * every child's new visits wait as long to reach the spool (writer_replay). */
#define SCAN_REPLAY_LOCK_MS 200

/* This child's writer thread: one of the writers that may commit the shared
 * queue of waiting visits (mod_qrtrack_queue.c). */
static struct {
    qrt_queue_t *queue;
    volatile int stopping;
    apr_thread_t *thread;
    server_rec *s;
    /* The batch taken from the queue while writer_store stores it (NULL otherwise),
     * and which of its requests have answered already (writer_committing). */
    const qrt_queue_ticket_t *slots;
    int nslots;
    char *answered;
    /* A remote database: the key of this node's live token (qrt_spool_live_key), and the
     * token of the batch being committed, written with it; visits spooled when that
     * commit fails carry it, so that their replay leaves them out when the commit did
     * reach the database after all (its answer lost: a connection cut by its deadline
     * while the server was frozen). Tokens follow each other from a random start. */
    const char *live_key;
    apr_int64_t live_token, live_next;
} writer;

/* The commit point of the batch being stored: from here its requests wait for the
 * outcome. The number whose requests answered 503 already (past QRT_QUEUE_GRACE):
 * those must not be recorded. 0 outside a batch (replays, webhook work). */
static int writer_committing(void)
{
    return writer.slots ? qrt_queue_committing(writer.queue, writer.slots, writer.nslots,
                                               writer.answered)
                        : 0;
}

/* ---- the code cache ----------------------------------------------------------------
 *
 * Each child keeps code -> (tracker id, destination) for the codes it has seen, so a
 * scan costs no database read. A generation number in shared memory, bumped by every
 * change or deletion of a tracker in any child, makes every cached entry stale at
 * once: a PATCHed destination is followed by the very next scan of this server.
 * Other servers sharing the database see the change when their entry's time is up
 * (SCAN_CACHE_TTL). */

typedef struct {
    volatile apr_uint32_t tracker_gen;
    apr_int64_t last_visit_start;   /* newest committed visit_start; under the writer mutex */
    qrt_purge_state_t purge;        /* QRTrackVisitRetention's passes; under the writer mutex */
    qrt_stats_t stats;
    volatile apr_uint32_t webhook_gen;  /* raised by this server's webhook changes */
} scan_shared_t;

typedef struct {
    char code[QRT_CODE_CUSTOM_MAX + 1];
    qrt_route_t *route;             /* malloc'd: the tracker's id, destination, rules... */
    apr_uint32_t gen;
    apr_time_t fetched;             /* when it was read from the database
                                     * (qrt_clock_now) */
} scan_cache_entry;

static scan_shared_t *scan_shared;
static qrt_queue_t *scan_queue;
/* Held for each commit of the scan writers: the queue makes one writer at a time
 * the committer, and this mutex keeps it so when one is replaced while stuck; the
 * WAL thread takes it to finish a long WAL (mod_qrtrack_wal.c). */
static apr_global_mutex_t *scan_writer_mutex;
#define SCAN_CACHE_LOCKS 64
static scan_cache_entry *scan_cache;
/* SCAN_CACHE_TTL when other servers may share the database; 0 (no limit) on SQLite,
 * which one server alone uses. */
static apr_interval_time_t scan_cache_ttl;
static apr_thread_mutex_t *scan_cache_locks[SCAN_CACHE_LOCKS];

/* QRTrackScanQueue, else twice the threads the server may run. */
static apr_uint32_t scan_queue_slots(void)
{
    int daemons = 0, threads = 0;
    apr_int64_t n;

    if (qrt_config()->scan_queue > 0) {
        return (apr_uint32_t)qrt_config()->scan_queue;
    }
    ap_mpm_query(AP_MPMQ_MAX_DAEMONS, &daemons);
    ap_mpm_query(AP_MPMQ_MAX_THREADS, &threads);
    n = 2 * (apr_int64_t)(daemons > 0 ? daemons : 1) * (threads > 0 ? threads : 32);
    return (apr_uint32_t)(n < 16 ? 16 : n > 8192 ? 8192 : n);
}

/* This child's writer's cache of the enabled webhooks (writer thread only). */
static qrt_webhook_cache_t *writer_hooks;
/* The webhooks' sweep: every WEBHOOK_SWEEP_EVERY seconds a pass over rows older than
 * QRT_WEBHOOK_KEEP, WEBHOOK_SWEEP_ROWS rows of each table a step. */
#define WEBHOOK_SWEEP_EVERY 60
#define WEBHOOK_LOCK_WAIT apr_time_from_msec(5)
#define WEBHOOK_SWEEP_ROWS 1000

static int scan_wait(void)
{
    return qrt_config()->scan_wait > 0 ? qrt_config()->scan_wait : QRT_DEFAULT_SCAN_WAIT;
}

int qrt_scan_wait_seconds(void)
{
    return scan_wait();
}

qrt_queue_t *qrt_scan_queue(void)
{
    return scan_queue;
}

apr_status_t qrt_scan_writers_lock(int lock)
{
    if (!scan_writer_mutex) {
        return APR_SUCCESS;
    }
    return lock ? apr_global_mutex_lock(scan_writer_mutex)
                : apr_global_mutex_unlock(scan_writer_mutex);
}

apr_status_t qrt_scan_post_config(server_rec *s)
{
    apr_pool_t *pp = s->process->pool;
    apr_shm_t *shm = NULL;
    apr_status_t rv;

    apr_pool_userdata_get((void **)&shm, SCAN_SHARED_KEY, pp);
    if (shm && apr_shm_size_get(shm) < sizeof(scan_shared_t)) {
        /* A graceful restart into a build whose counters are larger: start them
         * afresh (the old segment goes with the process). */
        shm = NULL;
    }
    if (!shm) {
        rv = apr_shm_create(&shm, sizeof(scan_shared_t), NULL, pp);
        if (rv != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "QRT00046: cannot create "
                         "shared memory for the scan cache");
            return rv;
        }
        memset(apr_shm_baseaddr_get(shm), 0, sizeof(scan_shared_t));
        ((scan_shared_t *)apr_shm_baseaddr_get(shm))->stats.started = apr_time_now();
        apr_pool_userdata_set(shm, SCAN_SHARED_KEY, apr_pool_cleanup_null, pp);
    }
    scan_shared = apr_shm_baseaddr_get(shm);
    qrt_stats_attach(&scan_shared->stats);
    rv = qrt_queue_create(s, scan_queue_slots(), &scan_queue);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    return qrt_global_mutex(s, QRT_MUTEX_WRITER, &scan_writer_mutex);
}

void qrt_scan_webhooks_changed(void)
{
    if (scan_shared) {
        apr_atomic_inc32(&scan_shared->webhook_gen);
    }
}

void qrt_scan_invalidate(void)
{
    if (scan_shared) {
        apr_atomic_inc32(&scan_shared->tracker_gen);
    }
}

static apr_uint32_t scan_cache_slot(const char *code)
{
    apr_uint32_t h = 2166136261u;

    for (; *code; code++) {
        h = (h ^ (unsigned char)*code) * 16777619u;
    }
    return h % SCAN_CACHE_SLOTS;
}

/* The decision for the visit f when code is cached: decided under the entry's lock,
 * from the cached block itself (nothing copied but the decision). SCAN_CACHE_CURRENT,
 * SCAN_CACHE_AGED (read SCAN_CACHE_TTL ago or more: the database is asked again, and
 * this decision taken when it cannot answer at once) or 0 (not cached). */
#define SCAN_CACHE_CURRENT 2
#define SCAN_CACHE_AGED    1
static int scan_cache_get(apr_pool_t *p, const char *code, apr_uint32_t gen,
                          apr_time_t now, const qrt_rule_facts_t *f,
                          qrt_route_decision_t *d)
{
    scan_cache_entry *e;
    apr_uint32_t slot;
    int hit = 0;

    if (!scan_cache) {
        return 0;
    }
    slot = scan_cache_slot(code);
    e = &scan_cache[slot];
    apr_thread_mutex_lock(scan_cache_locks[slot % SCAN_CACHE_LOCKS]);
    /* While the database cannot be reached (or did not answer a lookup a moment ago),
     * what was read from it last is the best there is. */
    if (e->route && e->gen == gen && !strcmp(e->code, code)) {
        qrt_route_decide(p, e->route, f, d);
        hit = !scan_cache_ttl || now - e->fetched < scan_cache_ttl || qrt_db_down()
              || qrt_lookup_paused() ? SCAN_CACHE_CURRENT : SCAN_CACHE_AGED;
    }
    apr_thread_mutex_unlock(scan_cache_locks[slot % SCAN_CACHE_LOCKS]);
    return hit;
}

/* gen is the generation read before the database lookup, so a change that raced
 * with the lookup leaves the entry stale rather than wrong. */
static void scan_cache_put(const char *code, apr_uint32_t gen, apr_time_t fetched,
                           const qrt_route_t *route, apr_size_t size)
{
    scan_cache_entry *e;
    apr_uint32_t slot;
    qrt_route_t *copy;

    if (!scan_cache || strlen(code) > QRT_CODE_CUSTOM_MAX || !(copy = malloc(size))) {
        return;
    }
    memcpy(copy, route, size);
    slot = scan_cache_slot(code);
    e = &scan_cache[slot];
    apr_thread_mutex_lock(scan_cache_locks[slot % SCAN_CACHE_LOCKS]);
    free(e->route);
    e->route = copy;
    strcpy(e->code, code);
    e->gen = gen;
    e->fetched = fetched;
    apr_thread_mutex_unlock(scan_cache_locks[slot % SCAN_CACHE_LOCKS]);
}

static apr_status_t scan_cache_free(void *data)
{
    int i;

    (void)data;
    for (i = 0; scan_cache && i < SCAN_CACHE_SLOTS; i++) {
        free(scan_cache[i].route);
    }
    free(scan_cache);
    scan_cache = NULL;
    return APR_SUCCESS;
}

/* ---- the writer thread ------------------------------------------------------------ */

/* The visits of a batch whose trackers were not found deleted (cap_outcome
 * QRT_VISIT_GONE) by an earlier attempt of its commit: a copy of them, *at their
 * places in visits, when there were such visits; else visits itself. */
static qrt_visit_t *writer_live_visits(apr_pool_t *p, qrt_visit_t *visits, int n, int *nlive,
                                       int **at)
{
    qrt_visit_t *live;
    int i, m = 0;

    *at = NULL;
    *nlive = n;
    for (i = 0; i < n && visits[i].cap_outcome != QRT_VISIT_GONE; i++) {
    }
    if (i == n) {
        return visits;
    }
    live = apr_palloc(p, sizeof(*live) * (apr_size_t)(n > 0 ? n : 1));
    *at = apr_palloc(p, sizeof(**at) * (apr_size_t)(n > 0 ? n : 1));
    for (i = 0; i < n; i++) {
        if (visits[i].cap_outcome != QRT_VISIT_GONE) {
            (*at)[m] = i;
            live[m++] = visits[i];
        }
    }
    *nlive = m;
    return live;
}

/* The visits of the trackers in gone (found deleted under the write lock) marked
 * QRT_VISIT_GONE, for the next attempt to leave out. */
static void writer_mark_gone(qrt_visit_t *visits, int n, const apr_array_header_t *gone)
{
    int i, j;

    for (i = 0; i < n; i++) {
        for (j = 0; j < gone->nelts; j++) {
            if (visits[i].tracker_id == APR_ARRAY_IDX(gone, j, apr_int64_t)) {
                visits[i].cap_outcome = QRT_VISIT_GONE;
                break;
            }
        }
    }
}

/* Inside writer_commit's transaction. *gone_found: 1 when it failed because trackers of
 * the batch were found deleted (their visits marked, to be left out at once). */
static apr_status_t writer_record_batch(qrt_db_t *db, apr_pool_t *p, qrt_visit_t *all,
                                        int nall, const qrt_spool_batch_t *sp, int *recorded,
                                        int *gone_found)
{
    apr_int64_t mark = 0, *ids;
    apr_uint32_t gen = scan_shared ? scan_shared->webhook_gen : 0;
    qrt_webhook_after_t *after = NULL;
    apr_array_header_t *gone = sp ? NULL : apr_array_make(p, 1, sizeof(apr_int64_t));
    apr_status_t rv;
    int skip = 0, i, n, *at;
    /* (a batch from the spool was answered long ago: its visits are recorded whatever
     * became of their trackers since) */
    qrt_visit_t *visits = sp ? all : writer_live_visits(p, all, nall, &n, &at);

    *recorded = 0;
    if (sp) {
        n = nall;
        at = NULL;
    }
    if (n == 0) {
        return APR_SUCCESS;
    }
    /* max_scans: decided here, in the transaction that records the visits, so the
     * cap holds across every process and node that writes. Its row locks of
     * tracker_routing come before the write lock (qrt_store_visits_record_ids): a
     * PATCH of a tracker's routing takes them in that order too. */
    if (!sp && (rv = qrt_store_visits_cap(db, p, visits, n)) != APR_SUCCESS) {
        return rv;
    }
    skip = 0;
    if (sp) {
        apr_int64_t live = 0;

        rv = qrt_store_spool_mark(db, p, sp->node, &mark);
        /* (visits spooled from a commit whose answer was lost: in the database when the
         * node's live token is that commit's) */
        if (rv == APR_SUCCESS && sp->live_token && sp->seq[0] <= sp->live_upto
            && sp->seq[n - 1] >= sp->live_from) {
            rv = qrt_store_spool_live(db, p, apr_pstrcat(p, sp->node, "+live", NULL), &live);
        }
        if (rv != APR_SUCCESS) {
            return rv;
        }
        while (skip < n && (sp->seq[skip] <= mark
                            || (live == sp->live_token && sp->seq[skip] >= sp->live_from
                                && sp->seq[skip] <= sp->live_upto))) {
            skip++;
        }
    }
    if (skip >= n) {
        return sp ? qrt_store_spool_mark_set(db, p, sp->node, sp->seq[n - 1]) : APR_SUCCESS;
    }
    /* Webhooks' events, in this transaction: tracker.expired made before the visits
     * change their trackers' last visit, scan.created and click.created once they have
     * ids (an expiry by max_scans written behind the scan that took the last). */
    rv = writer_hooks ? qrt_store_webhook_expiry(db, p, writer_hooks, gen, visits + skip,
                                                 n - skip, &after)
                      : APR_SUCCESS;
    ids = apr_palloc(p, sizeof(*ids) * (apr_size_t)n);
    if (rv == APR_SUCCESS) {
        rv = qrt_store_visits_record_ids(db, p, visits + skip, n - skip, ids, gone);
        if (rv != APR_SUCCESS && gone && gone->nelts > 0) {
            writer_mark_gone(all, nall, gone);
            *gone_found = 1;
        }
    }
    for (i = 0; rv == APR_SUCCESS && i < n - skip; i++) {
        visits[skip + i].id = ids[i];
    }
    if (rv == APR_SUCCESS && writer_hooks) {
        rv = qrt_store_webhook_visits(db, p, writer_hooks, gen, visits + skip, n - skip,
                                      after);
    }
    if (rv == APR_SUCCESS && sp) {
        rv = qrt_store_spool_mark_set(db, p, sp->node, sp->seq[n - 1]);
    }
    else if (rv == APR_SUCCESS && writer.live_key && writer.live_token) {
        rv = qrt_store_spool_mark_set(db, p, writer.live_key, writer.live_token);
    }
    if (rv == APR_SUCCESS) {
        *recorded = n - skip;
        /* (each live visit as recorded: its id, its cap_outcome and destination) */
        for (i = 0; at && i < n; i++) {
            all[at[i]] = visits[i];
        }
    }
    return rv;
}

/* SQLite: the busy timeout of each of apr_dbd_sqlite3's tries (writer_connect). */
static int writer_busy_ms;

/* SQLite's busy handler for a batch's BEGIN: waits for the lock in steps of up to
 * 10 ms, until the batch's deadline (*data) or, when earlier, that of a visit queued
 * behind it (both less SCAN_ANSWER_MARGIN). Each visit then finds the writer free to
 * take it in time: one whose request line came long before its headers is queued
 * with less time left than the batch that waits (writer_store then spools it too). */
static int writer_busy(void *data, int count)
{
    apr_time_t until = *(const apr_time_t *)data, now = qrt_clock_now();
    apr_time_t queued = qrt_queue_queued_deadline(writer.queue);
    apr_interval_time_t step = apr_time_from_msec(count < 9 ? count + 1 : 10);

    if (queued && queued - SCAN_ANSWER_MARGIN < until) {
        until = queued - SCAN_ANSWER_MARGIN;
    }
    if (now >= until) {
        return 0;
    }
    apr_sleep(until - now < step ? until - now : step);
    return 1;
}

/* A commit's transaction. SQLite: BEGIN IMMEDIATE, where its wait for the database's
 * lock is, run here with a busy handler that ends the wait in time (writer_busy;
 * apr_dbd_sqlite3 would try 17 times, 100 ms apart, whatever the time); once it holds
 * the lock, nothing else in the transaction waits. PostgreSQL: its lock_timeout (half of
 * QRTrackScanWait, writer_connect) bounds each wait, and the transaction is
 * pipelined where libpq can (BEGIN goes with the first read, the writes nothing
 * reads go with COMMIT: a few round trips a batch instead of a dozen). *native: 1
 * SQLite's, 2 pipelined, ended by writer_end. */
static apr_status_t writer_begin(qrt_db_t *db, apr_pool_t *p, apr_time_t deadline,
                                 apr_dbd_transaction_t **tx, int *native)
{
    sqlite3 *h;
    int rc;

    *native = 0;
    *tx = NULL;
    if (qrt_dialect_remote(db->driver) && qrt_db_begin_pipelined(db, p) == APR_SUCCESS) {
        *native = 2;
        return APR_SUCCESS;
    }
    if (!qrt_dialect_embedded(db->driver) || !deadline) {
        return qrt_db_begin(db, p, tx);
    }
    h = apr_dbd_native_handle(db->driver, db->handle);
    sqlite3_busy_handler(h, writer_busy, &deadline);
    rc = sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    sqlite3_busy_timeout(h, writer_busy_ms);
    if (rc != SQLITE_OK) {
        db->error = apr_psprintf(p, "begin: %s", sqlite3_errmsg(h));
        return APR_EGENERAL;
    }
    *tx = NULL;
    *native = 1;
    return APR_SUCCESS;
}

static apr_status_t writer_end(qrt_db_t *db, apr_pool_t *p, apr_dbd_transaction_t *tx,
                               int native, apr_status_t rv)
{
    sqlite3 *h;

    /* A scan answered 503 while its visit was being written must not be recorded:
     * the transaction is rolled back (writer_store commits the others again). Past
     * this point no request of the batch gives up before the outcome. */
    if (rv == APR_SUCCESS && writer_committing() > 0) {
        db->error = "scans of the batch answered before its commit";
        rv = APR_TIMEUP;
    }

    if (native == 2) {
        return qrt_db_end_pipelined(db, p, rv);
    }
    if (!native) {
        return qrt_db_end_with(db, p, tx, rv);
    }
    h = apr_dbd_native_handle(db->driver, db->handle);
    if (rv == APR_SUCCESS && sqlite3_exec(h, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        db->error = apr_psprintf(p, "commit: %s", sqlite3_errmsg(h));
        rv = APR_EGENERAL;
    }
    if (rv != APR_SUCCESS && sqlite3_get_autocommit(h) == 0) {
        sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
    }
    return rv;
}

/* 1 when a commit failed because the writer's connection had been closed while it was
 * idle (the server's idle_session_timeout, 57P05; a restart since; a balancer or
 * firewall that drops idle connections), before the batch's COMMIT was sent: its BEGIN
 * or the preparation of one of its statements (synchronous: never after the COMMIT is
 * sent) failed as lost, and a transaction lost with its connection is rolled back. The
 * batch is then tried once on a new connection before the database counts as gone. */
static int writer_stale(const qrt_db_t *db)
{
    /* (57P01: the server that ended it at its shutdown has been started again; a batch
     * it ended mid-transaction was rolled back) */
    return qrt_db_lost(db) && db->error
           && (strstr(db->error, " 57P05:") || strstr(db->error, " 57P01:")
               || !strncmp(db->error, "begin: ", 7)
               || !strncmp(db->error, "cannot prepare ", 15));
}

/* Records visits in one transaction, run again after a conflict. A batch replayed
 * from the spool (sp) skips the visits its node's mark says the database has, and
 * raises the mark with them; *recorded says how many were new to it. */
static apr_status_t writer_commit(qrt_db_t *dbp, apr_pool_t *p, qrt_visit_t *visits,
                                  int n, const qrt_spool_batch_t *sp, int *recorded,
                                  apr_time_t deadline)
{
    qrt_db_t db;
    apr_dbd_transaction_t *tx;
    apr_int64_t last = 0;
    apr_status_t rv;
    int i, attempt;

    if (scan_writer_mutex && scan_shared) {
        /* Commits follow each other across children; a visit whose request began
         * a second before the last committed one keeps time order by taking its
         * time, so visits are recorded in time order (the aggregates rely on it). */
        apr_int64_t floor = scan_shared->last_visit_start;

        for (i = 0; i < n; i++) {
            if (visits[i].visit_start < floor) {
                visits[i].visit_start = floor;
            }
            floor = visits[i].visit_start;
        }
        last = floor;
    }
    db = *dbp;
    for (attempt = 1;; attempt++) {
        int native = 0, gone_found = 0;

        db.error = NULL;
        db.again = 0;
        qrt_webhook_cache_abort(writer_hooks);
        rv = writer_begin(&db, p, deadline, &tx, &native);
        if (rv == APR_SUCCESS) {
            rv = writer_record_batch(&db, p, visits, n, sp, recorded, &gone_found);
            rv = writer_end(&db, p, tx, native, rv);
        }
        if (rv == APR_SUCCESS || !qrt_db_retryable(&db) || attempt == SCAN_COMMIT_TRIES) {
            break;
        }
        /* Another node's transaction won a deadlock or a serialization conflict, or
         * a purge changed the dictionaries under the batch (db.again), or trackers of
         * the batch were deleted: this one was rolled back whole; run it again (the
         * scans keep waiting; without the deleted trackers' visits at once: nothing
         * to wait for). */
        QRT_STAT_ADD(commit_retries, 1);
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, writer.s, "QRT00048: retrying a commit "
                     "of %d visits (attempt %d): %s", n, attempt + 1, db.error);
        if (!gone_found) {
            apr_sleep(apr_time_from_msec(attempt * 5));
        }
    }
    if (rv == APR_SUCCESS && last && scan_shared) {
        scan_shared->last_visit_start = last;
    }
    if (rv == APR_SUCCESS) {
        int live = n;

        /* (the visits of trackers found deleted were not recorded) */
        for (i = 0; !sp && i < n; i++) {
            live -= visits[i].cap_outcome == QRT_VISIT_GONE;
        }
        qrt_dict_cache_commit(db.dict);
        qrt_webhook_cache_commit(writer_hooks);
        QRT_STAT_ADD(visits, live);
        QRT_STAT_ADD(commits, 1);
        QRT_STAT_SET(last_batch, live);
        ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, writer.s, "QRT00064: committed %d "
                     "visits (attempt %d)", live, attempt);
    }
    if (rv != APR_SUCCESS && writer_stale(&db)) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, writer.s, "QRT00128: the scan writer's "
                     "connection was closed before its commit began (%s); committing on "
                     "a new one", db.error);
    }
    else if (rv != APR_SUCCESS) {
        apr_uint32_t more = 0;
        /* A database that refuses writes, or a lock held elsewhere, while visits wait
         * in the spool was said once (QRT00127, QRT00130); its replays fail every
         * second until it takes them again. */
        int quiet = (qrt_db_refuses_writes(&db) || qrt_db_locked(&db))
                    && qrt_spool_pending();

        QRT_STAT_ADD(commit_failures, 1);
        if (quiet ? qrt_log_due_every(qrt_ration(QRT_R_COMMIT_QUIET), QRT_LOG_QUIET, &more)
                  : qrt_log_due(qrt_ration(QRT_R_COMMIT), &more)) {
            ap_log_error(APLOG_MARK, APLOG_ERR, rv, writer.s, "QRT00040: could not "
                         "commit %d visits: %s (and %u more failed commits since this "
                         "line was last logged)", n, db.error ? db.error : "unknown error",
                         more);
        }
    }
    dbp->error = db.error;
    return rv;
}

/* The writer's own connection, outside mod_dbd's pool: a request never waits for
 * the writer while the writer waits for a connection that request holds. */
static qrt_db_t *writer_connect(apr_pool_t *cp)
{
    const apr_dbd_driver_t *driver;
    qrt_db_t *db;
    const char *err;

    apr_pool_clear(cp);
    db = apr_pcalloc(cp, sizeof(*db));
    if (qrt_db_connect_own(cp, &driver, &db->handle, &err) != APR_SUCCESS) {
        /* Said once, by qrt_db_mark_down; probed by the keeper from then on. */
        qrt_db_mark_down(writer.s, apr_pstrcat(cp, "the scan writer cannot open it: ", err,
                                               NULL));
        return NULL;
    }
    db->driver = driver;
    /* A commit waits for locks until the first of its scans must be answered
     * (writer_begin). Other statements (the purge, sealing) wait about as long as a
     * scan would: apr_dbd_sqlite3 tries each statement QRT_SQLITE_TRIES times, 100 ms
     * apart. PostgreSQL waits half of it for each lock: a scan that came while the
     * batch before it was being committed still gets its answer in time. */
    if (qrt_dbd_dialect()->embedded) {
        int ms = (scan_wait() * 1000 - (QRT_SQLITE_TRIES - 1) * 100) / QRT_SQLITE_TRIES;

        /* The batches' dictionary references wait in visit_refs_due (schema 62); the
         * count goes on across connections, the rows stay until settled. */
        static apr_int64_t refs_due;

        db->refs_due = &refs_due;
        writer_busy_ms = ms < 10 ? 10 : ms;
        qrt_schema_pragma(cp, driver, db->handle,
                          apr_psprintf(cp, "PRAGMA busy_timeout = %d", writer_busy_ms));
        db->busy_ms = writer_busy_ms;
    }
    else {
        int nrows;

        apr_dbd_query(driver, db->handle, &nrows,
                      apr_psprintf(cp, "SET lock_timeout = %d", scan_wait() * 500));
    }
    db->pool = cp;
    /* Dictionary ids across commits, for as long as this connection lives (scans with
     * new user agents and referers of 1 and 2 KB each filled about 200 MB before the
     * bound of bytes; now 8 MB a dictionary). */
    db->dict = qrt_dict_cache_make(cp, SCAN_DICT_CACHE, SCAN_DICT_BYTES);
    /* Each statement is prepared when the writer first runs it, as on every other
     * connection: a commit runs a few dozen of the store's some 400, and every child
     * opens this connection as it starts (and again after each failure), so preparing
     * them all made each child start cost PostgreSQL some 400 round trips. */
    qrt_db_prepare_lazily(db, cp);
    /* (the row is there before any commit writes it: a replay's read of it then waits
     * for a commit still running, where a row being made would not be seen) */
    writer.live_key = qrt_dialect_remote(driver) ? qrt_spool_live_key(writer.s) : NULL;
    if (writer.live_key && qrt_store_spool_live_make(db, cp, writer.live_key) != APR_SUCCESS) {
        writer.live_key = NULL;
    }
    return db;
}

static void writer_disconnect(qrt_db_t *db)
{
    if (db) {
        apr_dbd_close(db->driver, db->handle);
    }
}

/* The writers' idle work (sealing, the purge) runs under their mutex: on SQLite its
 * transactions (sealing's, the purge's sweeps of the dictionaries) and statements (the
 * purge's steps) wait for a lock another program holds SCAN_REPLAY_LOCK_MS, once, as a
 * replay does, not through QRT_SQLITE_TRIES tries 100 ms apart (about 2 s, the next
 * batch's commit waiting behind the mutex); the work is tried again later. */
static int writer_idle_lock_ms(const qrt_db_t *db)
{
    return qrt_dialect_embedded(db->driver) ? SCAN_REPLAY_LOCK_MS : 0;
}

/* QRTrackVisitRetention: an idle writer runs one step of the purge when one is due
 * and no other writer (of any child) holds the writers' mutex, so a step never makes
 * a commit wait longer than the step itself (a few milliseconds). */
#define PURGE_BATCH 500
static void writer_purge(qrt_db_t *db, apr_pool_t *p)
{
    apr_int64_t now;
    int purged = 0, done = 0;
    apr_status_t rv;

    if (!qrt_config()->visit_retention || !db || !scan_writer_mutex || !scan_shared) {
        return;
    }
    now = apr_time_sec(apr_time_now());
    /* Read without the mutex: only a pass under way or due is worth taking it. */
    if (!scan_shared->purge.active && scan_shared->purge.days == qrt_config()->visit_retention
        && now < scan_shared->purge.next_due) {
        return;
    }
    if (apr_global_mutex_trylock(scan_writer_mutex) != APR_SUCCESS) {
        return;
    }
    if (qrt_purge_due(&scan_shared->purge, now, qrt_config()->visit_retention)) {
        db->error = NULL;
        db->lock_wait_ms = writer_idle_lock_ms(db);
        rv = qrt_store_purge_step(db, p, &scan_shared->purge.c, PURGE_BATCH, &purged, &done);
        db->lock_wait_ms = 0;
        if (rv != APR_SUCCESS) {
            apr_uint32_t more = 0;

            qrt_purge_finish(&scan_shared->purge, now, 0);
            if (qrt_log_due(qrt_ration(QRT_R_PURGE), &more)) {
                ap_log_error(APLOG_MARK, APLOG_WARNING, 0, writer.s, "QRT00080: purging "
                             "visits older than %d days failed, tried again in a minute: "
                             "%s (and %u more failures since this line was last logged)",
                             qrt_config()->visit_retention,
                             db->error ? db->error : "unknown error", more);
            }
        }
        else {
            QRT_STAT_ADD(purged, purged);
            if (done) {
                qrt_purge_finish(&scan_shared->purge, now, 1);
                QRT_STAT_ADD(purge_passes, 1);
                ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, writer.s, "QRT00081: a purge of "
                             "visits older than %d days finished", qrt_config()->visit_retention);
                if (scan_shared->purge.c.erased > 0) {
                    ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, writer.s, "QRT00120: the purge "
                                 "deleted %" APR_INT64_T_FMT " user agents, referers and "
                                 "addresses that no visit refers to any more",
                                 scan_shared->purge.c.erased);
                }
            }
        }
    }
    apr_global_mutex_unlock(scan_writer_mutex);
}

/* Settled days' report aggregates sealed (qrt_store_agg_blob.h): a few units per idle
 * moment under a trylock of the writers' mutex (and on PostgreSQL of the store's write
 * lock: another process's writer, an import's batch, is not waited for), first
 * SEAL_IDLE_CHECK seconds after the writer starts, then again that long after a pass
 * found nothing left (each child's writer keeps its own time: no shared state), or a
 * second later when another writer held the lock. Not at once at start: a child
 * starting has scans to commit first, and an httpd stopped right after its start
 * should find the writers idle (httpd's event MPM was seen to crash a child now and
 * then when stopped while scans still waited: test_faults). */
#define SEAL_UNITS 2
#define SEAL_IDLE_CHECK 10

static void writer_seal(qrt_db_t *db, apr_pool_t *p)
{
    static apr_int64_t next_check;
    static int started;
    /* (the days settled by the wall clock; the next look by the monotonic one) */
    apr_int64_t now = apr_time_sec(apr_time_now()), tick = apr_time_sec(qrt_clock_now());
    int sealed = 0, more = 0, busy = 0;
    apr_status_t rv;

    if (!started) {
        started = 1;
        next_check = tick + SEAL_IDLE_CHECK;
    }
    if (!db || !scan_writer_mutex || tick < next_check) {
        return;
    }
    if (apr_global_mutex_trylock(scan_writer_mutex) != APR_SUCCESS) {
        return;
    }
    db->error = NULL;
    db->lock_wait_ms = writer_idle_lock_ms(db);
    rv = qrt_store_agg_blob_seal(db, p, now, SEAL_UNITS, &sealed, &more, &busy);
    db->lock_wait_ms = 0;
    apr_global_mutex_unlock(scan_writer_mutex);
    QRT_STAT_ADD(sealed, sealed);
    if (rv != APR_SUCCESS) {
        apr_uint32_t n = 0;

        next_check = tick + SEAL_IDLE_CHECK;
        if (qrt_log_due(qrt_ration(QRT_R_SEAL), &n)) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, writer.s, "QRT00082: sealing the "
                         "report aggregates of settled days failed, tried again in 10 s "
                         "(reports read their rows meanwhile): %s (and %u more "
                         "failures since this line was last logged)",
                         db->error ? db->error : "unknown error", n);
        }
        return;
    }
    /* (another writer holding the store's lock: looked at again in a second) */
    next_check = busy ? tick + 1 : more ? 0 : tick + SEAL_IDLE_CHECK;
}

/* The webhooks' outbox bound (QRTrackWebhookOutboxLimit) on the webhooks this writer gave
 * events to, once a second (then on SQLite in slices, one after each commit); when idle,
 * every WEBHOOK_SWEEP_EVERY seconds, the bound on every enabled webhook (their tracker
 * events come through the API) and a step of the sweep of rows done with for a week. Under a trylock of the writers' mutex, in
 * statements of their own, after the batch's requests were answered. */

static void writer_webhooks(qrt_db_t *db, apr_pool_t *p, int idle)
{
    static apr_int64_t next_sweep;
    /* (events kept by the wall clock; the next sweep by the monotonic one) */
    apr_int64_t now = apr_time_sec(apr_time_now()), tick = apr_time_sec(qrt_clock_now());
    apr_int64_t dropped = 0;
    apr_dbd_transaction_t *tx = NULL;
    apr_status_t rv;
    int more = 0, all, native = 0;

    if (!next_sweep) {
        /* not at once at start: a child starting has scans to commit first */
        next_sweep = tick + WEBHOOK_SWEEP_EVERY;
    }
    all = idle && tick >= next_sweep;
    if (!db || !writer_hooks || !scan_writer_mutex
        || (!all && !qrt_webhook_cache_bound_due(writer_hooks))) {
        return;
    }
    if (apr_global_mutex_trylock(scan_writer_mutex) != APR_SUCCESS) {
        return;
    }
    db->error = NULL;
    /* One transaction. On SQLite its lock is waited for WEBHOOK_LOCK_WAIT at most: while
     * the webhook worker writes, this work waits for the next commit rather than hold the
     * writers' mutex (and the next batch) through SQLite's busy waits. */
    rv = writer_begin(db, p, qrt_dialect_embedded(db->driver)
                                 ? qrt_clock_now() + WEBHOOK_LOCK_WAIT : 0, &tx, &native);
    if (rv != APR_SUCCESS) {
        apr_global_mutex_unlock(scan_writer_mutex);
        return;
    }
    rv = qrt_store_webhook_bound(db, p, writer_hooks, qrt_config()->webhook_outbox_limit, all,
                                 &dropped);
    if (rv == APR_SUCCESS && all) {
        rv = qrt_store_webhook_sweep(db, p, writer_hooks, now - QRT_WEBHOOK_KEEP,
                                     WEBHOOK_SWEEP_ROWS, &more);
        next_sweep = more ? tick : tick + WEBHOOK_SWEEP_EVERY;
    }
    rv = writer_end(db, p, tx, native, rv);
    apr_global_mutex_unlock(scan_writer_mutex);
    if (rv != APR_SUCCESS) {
        dropped = 0;
    }
    if (dropped > 0) {
        apr_uint32_t n = 0;

        QRT_STAT_ADD(webhook_dropped, dropped);
        if (qrt_log_due(qrt_ration(QRT_R_WEBHOOK_DROP), &n)) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, writer.s, "QRT01002: %" APR_INT64_T_FMT
                         " webhook events past QRTrackWebhookOutboxLimit (%" APR_INT64_T_FMT
                         " waiting a webhook) dropped, the oldest first (and %u more drops "
                         "since this line was last logged; QRTrackWebhookDropped counts "
                         "them all)", dropped, qrt_config()->webhook_outbox_limit, n);
        }
    }
    if (rv != APR_SUCCESS) {
        apr_uint32_t n = 0;

        next_sweep = tick + WEBHOOK_SWEEP_EVERY;
        if (qrt_log_due(qrt_ration(QRT_R_WEBHOOK), &n)) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, writer.s, "QRT01003: the webhooks' "
                         "outbox bound or sweep failed, tried again later: %s (and %u more "
                         "failures since this line was last logged)",
                         db->error ? db->error : "unknown error", n);
        }
    }
}

/* Group commit under load: a pause before the next batch, which then holds the scans
 * that arrived meanwhile (qrt_queue_gather says when, bench/bench_scan.py measures
 * it). The pause holds no lock, and the requests of the batch before are answered. */
static void writer_gather(int n, apr_interval_time_t took, const qrt_db_t *db)
{
    apr_interval_time_t wait = qrt_queue_gather(n, took,
                                                db && qrt_dialect_remote(db->driver));

    if (wait > 0 && !writer.stopping) {
        apr_sleep(wait);
    }
}

/* The spool takes a batch's visits while the database cannot be reached, except those
 * of trackers with max_scans: whether such a scan is over the cap is known only to
 * the database, so they stay unrecorded (cap_outcome unknown: their requests answer
 * 503) rather than risk sending one past the cap. */
static apr_status_t writer_spool(qrt_visit_t *visits, int n, apr_int64_t live)
{
    qrt_visit_t *keep = visits;
    apr_status_t rv;
    int i, kept = 0, answered = writer_committing() > 0;

    for (i = 0; i < n; i++) {
        /* (nor those whose requests answered 503 already, nor those of trackers found
         * deleted, which answer 404) */
        if (visits[i].capped != QRT_VISIT_CAP_NONE
            || (answered && writer.answered[i]) || visits[i].cap_outcome == QRT_VISIT_GONE) {
            if (visits[i].cap_outcome != QRT_VISIT_GONE) {
                visits[i].cap_outcome = QRT_VISIT_CAP_UNKNOWN;
            }
            if (keep == visits) {
                keep = malloc(sizeof(*keep) * (apr_size_t)n);
                if (!keep) {
                    return APR_ENOMEM;
                }
                memcpy(keep, visits, sizeof(*keep) * (apr_size_t)i);
                kept = i;
            }
        }
        else if (keep != visits) {
            keep[kept++] = visits[i];
        }
        else {
            kept++;
        }
    }
    rv = kept > 0 ? qrt_spool_put(writer.s, keep, kept, live) : APR_SUCCESS;
    if (keep != visits) {
        free(keep);
    }
    return rv == APR_ENOTIMPL ? APR_EGENERAL : rv;
}

/* The batch again without the visits whose scans answered 503 while it was written
 * (writer_end rolled it back for them): the other requests wait for this commit. */
static apr_status_t writer_commit_rest(qrt_db_t *db, apr_pool_t *p, qrt_visit_t *visits,
                                       int n, apr_time_t deadline)
{
    const qrt_queue_ticket_t *slots = writer.slots;
    char *answered = writer.answered;
    qrt_queue_ticket_t *rs = apr_palloc(p, (apr_size_t)n * sizeof(*rs));
    qrt_visit_t *rest = apr_palloc(p, (apr_size_t)n * sizeof(*rest));
    int *at = apr_palloc(p, (apr_size_t)n * sizeof(*at));
    int i, m = 0, recorded = 0;
    apr_status_t rv;

    for (i = 0; i < n; i++) {
        if (!answered[i]) {
            rs[m] = slots[i];
            rest[m] = visits[i];
            at[m++] = i;
        }
    }
    if (m == 0) {
        return APR_TIMEUP;
    }
    writer.slots = rs;
    writer.nslots = m;
    writer.answered = apr_pcalloc(p, (apr_size_t)m);
    rv = writer_commit(db, p, rest, m, NULL, &recorded, deadline);
    /* (each visit as committed: its time, its cap_outcome) */
    for (i = 0; i < m; i++) {
        visits[at[i]] = rest[i];
    }
    writer.slots = slots;
    writer.nslots = n;
    writer.answered = answered;
    return rv;
}

/* The batch's visits into the spool (writer_spool), and with them the visits queued
 * meanwhile, taken at once: the batch may have waited for the database until just
 * before its first deadline, and a visit queued behind it may be due as soon (its
 * request line came long before its headers), too soon for the next take. They are
 * spooled after the batch, in order, without its live token (they were in no commit),
 * and answered here. */
static apr_status_t writer_spool_with_queued(apr_pool_t *p, qrt_visit_t *visits, int n,
                                             apr_int64_t live)
{
    const qrt_queue_ticket_t *slots = writer.slots;
    char *answered = writer.answered;
    int nslots = writer.nslots, m = 0;
    qrt_queue_ticket_t *more_slots = NULL;
    qrt_visit_t *more = NULL;
    apr_time_t first;
    apr_status_t rv, more_rv;

    if (!writer.stopping && qrt_spool_enabled()) {
        m = qrt_queue_take(writer.queue, p, 0, &more, &more_slots, &first, writer.s);
    }
    if (m > 0) {
        /* (from here their requests wait for the outcome, however long the batch's
         * spooling takes) */
        qrt_queue_committing(writer.queue, more_slots, m, NULL);
    }
    rv = writer_spool(visits, n, live);
    if (m > 0) {
        writer.slots = more_slots;
        writer.nslots = m;
        writer.answered = apr_pcalloc(p, (apr_size_t)m);
        more_rv = writer_spool(more, m, 0);
        qrt_queue_done_visits(writer.queue, more_slots, m, more_rv, more);
        writer.slots = slots;
        writer.nslots = nslots;
        writer.answered = answered;
    }
    return rv;
}

/* No replay before this time: the last one failed, or the database has just refused
 * a batch (the scans queued behind it meanwhile go to the spool first). */
static apr_time_t replay_pause_until;

/* Before a batch the database refused for now goes to the spool: says why (what, the
 * error, until when) at level at most every QRT_LOG_EVERY a child, and leaves the
 * replay for a second. */
static void writer_spool_said(qrt_log_throttle_t *t, int level, const char *what,
                              const char *error, const char *until)
{
    apr_uint32_t more = 0;

    if (qrt_log_due(t, &more)) {
        ap_log_error(APLOG_MARK, level, 0, writer.s, "%s (%s): scans are redirected and "
                     "their visits kept in the spool until %s (and %u more batches since "
                     "this line was last logged)", what, error, until, more);
    }
    replay_pause_until = qrt_clock_now() + SCAN_REPLAY_PAUSE;
}

/* A batch's visits into the database, or into the spool when the database cannot be
 * reached (or visits wait there already: new ones go behind them). Under the writers'
 * mutex. */
static apr_status_t writer_store(qrt_db_t **dbp, apr_pool_t *cp, apr_pool_t *p,
                                 qrt_visit_t *visits, int n, apr_time_t deadline)
{
    apr_status_t rv;
    int recorded = 0;

    writer.live_token = 0;
    if (!qrt_db_down() && !qrt_spool_pending()) {
        if (!*dbp) {
            *dbp = writer_connect(cp);
        }
        if (*dbp) {
            (*dbp)->error = NULL;
            /* (the batch's visits spooled below carry it: its commit may have reached
             * the database) */
            writer.live_token = writer.live_key ? ++writer.live_next : 0;
            /* A little before the deadline: the answer must reach the request. */
            rv = writer_commit(*dbp, p, visits, n, NULL, &recorded,
                               deadline - SCAN_ANSWER_MARGIN);
            if (rv != APR_SUCCESS && rv != APR_TIMEUP && writer_stale(*dbp)) {
                writer_disconnect(*dbp);
                if (!(*dbp = writer_connect(cp))) {
                    /* (marked down) */
                    return writer_spool_with_queued(p, visits, n, writer.live_token);
                }
                rv = writer_commit(*dbp, p, visits, n, NULL, &recorded,
                                   deadline - SCAN_ANSWER_MARGIN);
            }
            if (rv == APR_TIMEUP) {
                rv = writer_commit_rest(*dbp, p, visits, n, deadline - SCAN_ANSWER_MARGIN);
            }
            if (rv == APR_SUCCESS || rv == APR_TIMEUP) {
                return rv;          /* (TIMEUP: every request had answered) */
            }
            if (qrt_db_unreachable(*dbp)) {
                qrt_db_mark_down(writer.s, (*dbp)->error);
            }
            else if (qrt_db_refuses_writes(*dbp)) {
                /* Reads work, writes are refused (a standby, a read-only switch, the
                 * server's disk full): the visits wait in the spool, the next ones
                 * behind them, and the replay tries again each second on a new
                 * connection, which a failover's address may have moved to the new
                 * primary meanwhile. */
                writer_spool_said(qrt_ration(QRT_R_READ_ONLY), APLOG_ERR, "QRT00127: the database "
                                  "refuses writes", (*dbp)->error, "it takes them");
                writer_disconnect(*dbp);
                *dbp = NULL;
                return writer_spool_with_queued(p, visits, n, writer.live_token);
            }
            else if (qrt_db_locked(*dbp)) {
                /* Another program holds a lock past the wait (an administrator's
                 * transaction, VACUUM FULL, CREATE INDEX, ALTER TABLE): nothing of the
                 * batch was recorded. It waits in the spool and the scans are
                 * redirected; the visits after it go behind it, and the replay tries
                 * each second, briefly, until the lock has gone. The connection stays
                 * (a new one would wait on the same lock to prepare its statements). */
                writer_spool_said(qrt_ration(QRT_R_LOCKED), APLOG_WARNING, "QRT00130: a lock held "
                                  "elsewhere kept the scan writer waiting past its time",
                                  (*dbp)->error, "the lock goes");
                return writer_spool_with_queued(p, visits, n, writer.live_token);
            }
            else if (qrt_dialect_remote((*dbp)->driver)) {
                /* A failed statement: 503, no spool. */
                return rv;
            }
            /* The connection may be what failed: take a fresh one next time. */
            writer_disconnect(*dbp);
            *dbp = NULL;
            if (!qrt_db_down()) {
                return rv;
            }
        }
    }
    return writer_spool_with_queued(p, visits, n, writer.live_token);
}

/* Spooled visits b into the database. A lock held elsewhere (what may have sent them
 * to the spool) is waited for only briefly: the replay holds the writers' mutex. */
static apr_status_t writer_replay_commit(qrt_db_t *db, apr_pool_t *p,
                                         qrt_spool_batch_t *b, int *recorded)
{
    apr_status_t rv;

    db->lock_wait_ms = SCAN_REPLAY_LOCK_MS;
    rv = writer_commit(db, p, b->visits, b->n, b, recorded,
                       qrt_clock_now() + apr_time_from_msec(SCAN_REPLAY_LOCK_MS));
    db->lock_wait_ms = 0;
    return rv;
}

/* The replay's batch size and the visit it found refused (the writer thread's). */
static qrt_replay_t replay;

/* One transaction of spooled visits into the database once it answers again, when
 * visits wait in the spool. 1 when it did one (more may wait), or made a change that
 * is to be tried at once. */
static int writer_replay(qrt_db_t **dbp, apr_pool_t *cp, apr_pool_t *p)
{
    qrt_spool_batch_t b;
    apr_status_t rv;
    int locked, recorded = 0, done = 0;

    if (qrt_db_down() || qrt_clock_now() < replay_pause_until
        || (!qrt_spool_pending() && !qrt_spool_recount_due())) {
        return 0;
    }
    locked = scan_writer_mutex && apr_global_mutex_lock(scan_writer_mutex) == APR_SUCCESS;
    if (scan_writer_mutex && !locked) {
        return 0;
    }
    if (!qrt_spool_pending()) {
        qrt_spool_recount(writer.s);
        if (!qrt_spool_pending()) {
            if (locked) {
                apr_global_mutex_unlock(scan_writer_mutex);
            }
            return 0;
        }
    }
    if (!*dbp) {
        *dbp = writer_connect(cp);
    }
    if (replay.max == 0) {
        qrt_replay_init(&replay, SCAN_REPLAY_BATCH);
    }
    if (*dbp && qrt_spool_next(p, writer.s, replay.size, &b) == APR_SUCCESS
        && b.n > 0) {
        (*dbp)->error = NULL;
        rv = writer_replay_commit(*dbp, p, &b, &recorded);
        if (rv != APR_SUCCESS && writer_stale(*dbp)) {
            writer_disconnect(*dbp);
            if ((*dbp = writer_connect(cp)) != NULL) {
                rv = writer_replay_commit(*dbp, p, &b, &recorded);
            }
        }
        if (rv == APR_SUCCESS) {
            qrt_spool_replayed(writer.s, &b, recorded);
            qrt_replay_ok(&replay);
            done = 1;
        }
        else if (*dbp && qrt_db_refuses_rows(*dbp)) {
            /* The rows themselves were refused (a constraint, a trigger): the batch is
             * halved until the visit refused is alone, which is then tried a second
             * apart, and set aside when it is refused every time, so that one visit
             * does not hold every visit behind it (and the writers' idle work) for
             * ever. */
            switch (qrt_replay_refused(&replay, b.seq[0], b.n)) {
            case QRT_REPLAY_SMALLER:
                done = 1;
                break;
            case QRT_REPLAY_REFUSE:
                qrt_spool_refuse_head(writer.s, &b, (*dbp)->error);
                done = 1;
                break;
            case QRT_REPLAY_PAUSE:
                break;
            }
        }
        else if (*dbp) {
            if (qrt_db_unreachable(*dbp)) {
                qrt_db_mark_down(writer.s, (*dbp)->error);
            }
            if ((!qrt_dialect_remote((*dbp)->driver) && !qrt_db_locked(*dbp))
                || qrt_db_lost(*dbp) || qrt_db_refuses_writes(*dbp)) {
                writer_disconnect(*dbp);
                *dbp = NULL;
            }
        }
    }
    if (!done) {
        replay_pause_until = qrt_clock_now() + SCAN_REPLAY_PAUSE;
    }
    if (locked) {
        apr_global_mutex_unlock(scan_writer_mutex);
    }
    apr_pool_clear(p);
    return done;
}

static void *APR_THREAD_FUNC writer_main(apr_thread_t *thread, void *data)
{
    apr_pool_t *p = data, *cp;
    qrt_db_t *dbd;
    apr_time_t spares_next = 0;

    (void)thread;
    /* Named, so that top -H and ps -L show which thread it is. */
    prctl(PR_SET_NAME, "qrtrack-writer", 0, 0, 0);
    /* A call that gets no answer from a server that stopped answering ends its
     * connection (qrt_dbwatch.h): the writer then spools, and its idle work (sealing,
     * the purge's steps, each short, under the writers' mutex) cannot hold it either. */
    qrt_dbwatch_limit(scan_wait() * 1000 + QRT_DBWATCH_MARGIN_MS / 2);
    apr_pool_create(&cp, p);
    writer_hooks = qrt_webhook_cache_make(p);
    apr_pool_create(&p, p);
    dbd = qrt_db_down() ? NULL : writer_connect(cp);

    for (;;) {
        qrt_visit_t *visits;
        qrt_queue_ticket_t *slots;
        apr_status_t rv;
        apr_time_t deadline;
        apr_interval_time_t took = 0;
        int n, locked, stopping = writer.stopping, replayed;

        if (qrt_clock_now() >= spares_next) {
            qrt_vgroups_spares_release(SCAN_SPARES_IDLE);
            qrt_report_pools_release(SCAN_SPARES_IDLE);
            spares_next = qrt_clock_now() + apr_time_from_sec(1);
        }
        /* Everything queued by any child, if no other writer is committing. */
        n = qrt_queue_take(writer.queue, p, stopping, &visits, &slots, &deadline, writer.s);
        if (n > 0) {
            took = qrt_clock_now();
            locked = scan_writer_mutex
                     && apr_global_mutex_lock(scan_writer_mutex) == APR_SUCCESS;
            writer.slots = slots;
            writer.nslots = n;
            writer.answered = apr_pcalloc(p, (apr_size_t)n);
            rv = scan_writer_mutex && !locked ? APR_EGENERAL
                 : writer_store(&dbd, cp, p, visits, n, deadline);
            writer.slots = NULL;
            if (locked) {
                apr_global_mutex_unlock(scan_writer_mutex);
            }
            took = qrt_clock_now() - took;
            qrt_queue_done_visits(writer.queue, slots, n, rv, visits);
            apr_pool_clear(p);
            /* (not while the database is away: the keeper alone tries it, and a failure
             * each batch said QRT01003 every 10 s through an outage) */
            if (dbd && !qrt_db_down() && !qrt_spool_pending()) {
                writer_webhooks(dbd, p, 0);
                apr_pool_clear(p);
            }
        }
        replayed = stopping ? 0 : writer_replay(&dbd, cp, p);
        if (n > 0) {
            writer_gather(n, took, dbd);
            continue;
        }
        apr_pool_clear(p);
        if (stopping) {
            break;
        }
        if (replayed) {
            continue;
        }
        /* (Not while visits wait in the spool: the database takes them first, and a
         * lock held elsewhere would hold this work, under the writers' mutex, too.) */
        if (dbd && !qrt_db_down() && !qrt_spool_pending()) {
            if (qrt_config()->visit_retention) {
                dbd->error = NULL;
                writer_purge(dbd, p);
                if (dbd->error && qrt_db_lost(dbd)) {
                    writer_disconnect(dbd);
                    dbd = NULL;
                }
                apr_pool_clear(p);
            }
            if (dbd) {
                writer_webhooks(dbd, p, 1);
                apr_pool_clear(p);
            }
            if (dbd) {
                writer_seal(dbd, p);
                if (dbd->error && qrt_db_lost(dbd)) {
                    writer_disconnect(dbd);
                    dbd = NULL;
                }
                apr_pool_clear(p);
            }
        }
        qrt_queue_wait(writer.queue, SCAN_WRITER_POLL);
    }
    writer_disconnect(dbd);
    /* A plain return, not apr_thread_exit(): that unwinds under AddressSanitizer
     * into a stack-use-after-scope report at every child's exit. */
    return NULL;
}

/* Runs before the child pool's subpools go away. */
static apr_status_t writer_stop(void *data)
{
    apr_status_t rv;

    (void)data;
    if (!writer.thread) {
        return APR_SUCCESS;
    }
    writer.stopping = 1;
    qrt_queue_wake_all(writer.queue);
    apr_thread_join(&rv, writer.thread);
    writer.thread = NULL;
    return APR_SUCCESS;
}

void qrt_scan_child_init(apr_pool_t *pchild, server_rec *s)
{
    apr_pool_t *batch_pool;
    apr_status_t rv;
    int i;

    memset(&writer, 0, sizeof(writer));
    if (scan_writer_mutex) {
        rv = apr_global_mutex_child_init(&scan_writer_mutex,
                                         apr_global_mutex_lockfile(scan_writer_mutex),
                                         pchild);
        if (rv != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_ERR, rv, s, "QRT00047: cannot attach the "
                         "writer mutex; writers will rely on SQLite's busy wait");
            scan_writer_mutex = NULL;
        }
    }
    /* Before the writer connects: its connection asks whether the thread runs. */
    qrt_wal_child_init(pchild, s, scan_writer_mutex);
    writer.s = s;
    writer.queue = scan_queue;
    if (!scan_queue) {
        return;
    }
    /* (the live tokens' start: each child's apart from the others', and from the last
     * one a restart left in the database) */
    if (apr_generate_random_bytes((unsigned char *)&writer.live_next,
                                  sizeof(writer.live_next)) != APR_SUCCESS) {
        writer.live_next = (apr_int64_t)apr_time_now() ^ ((apr_int64_t)getpid() << 40);
    }
    writer.live_next &= APR_INT64_C(0x3fffffffffffffff);
    apr_pool_create(&batch_pool, pchild);
    apr_pool_tag(batch_pool, "qrtrack-writer");
    rv = apr_thread_create(&writer.thread, NULL, writer_main, batch_pool, pchild);
    if (rv != APR_SUCCESS) {
        writer.thread = NULL;
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "QRT00042: cannot start the scan "
                     "writer thread; scans will answer 503");
        return;
    }
    apr_pool_pre_cleanup_register(pchild, NULL, writer_stop);
    /* (another node may change a code of a shared database: cached codes expire) */
    scan_cache_ttl = qrt_dbd_dialect() && qrt_dbd_dialect()->remote ? SCAN_CACHE_TTL : 0;
    scan_cache = calloc(SCAN_CACHE_SLOTS, sizeof(*scan_cache));
    for (i = 0; scan_cache && i < SCAN_CACHE_LOCKS; i++) {
        if (apr_thread_mutex_create(&scan_cache_locks[i], APR_THREAD_MUTEX_DEFAULT,
                                    pchild) != APR_SUCCESS) {
            free(scan_cache);
            scan_cache = NULL;
        }
    }
    if (scan_cache) {
        apr_pool_cleanup_register(pchild, NULL, scan_cache_free, apr_pool_cleanup_null);
    }
}

/* When the scan r must be answered, on the queue's clock (qrt_clock_now):
 * QRTrackScanWait from the request's arrival, which only the wall clock dates (a step of
 * the wall clock since then leaves it between now and QRTrackScanWait from now). */
static apr_time_t scan_deadline(request_rec *r)
{
    apr_interval_time_t wait = apr_time_from_sec(scan_wait());
    apr_interval_time_t age = apr_time_now() - r->request_time;

    return qrt_clock_now() + wait - (age < 0 ? 0 : age > wait ? wait : age);
}

/* Queues v and waits until a writer has committed it. APR_EAGAIN when the queue is
 * full. */
static apr_status_t scan_submit(request_rec *r, const qrt_visit_t *v, int *outcome)
{
    *outcome = QRT_VISIT_CAP_UNKNOWN;
    if (!writer.thread || writer.stopping) {
        return APR_EGENERAL;
    }
    qrt_keepalive_mark(r);
    return qrt_queue_submit_outcome(writer.queue, v, scan_deadline(r), outcome);
}

/* ---- the request -------------------------------------------------------------------- */

/* A header value cut to max bytes and made valid UTF-8; NULL stays NULL. */
static const char *scan_clean(apr_pool_t *p, const char *v, apr_size_t max)
{
    if (!v || !*v) {
        return NULL;
    }
    /* made valid first, then cut on a character boundary: each byte of a broken sequence
     * becomes three (U+FFFD), and a cut before that kept up to three times max */
    return qrt_valid_utf8_clean(p, v, strlen(v), max);
}

static void scan_visit(request_rec *r, qrt_server_conf *conf, apr_int64_t tracker_id,
                       const char *source, qrt_visit_t *v)
{
    const char *ua = apr_table_get(r->headers_in, "User-Agent");
    const char *ip = r->useragent_ip;
    qrt_ua_t parsed;

    memset(v, 0, sizeof(*v));
    v->tracker_id = tracker_id;
    v->visit_start = apr_time_sec(r->request_time);
    v->source = source;
    v->ip = conf->anonymize_ip ? qrt_ip_anonymize(r->pool, ip) : qrt_ip_canonical(r->pool, ip);
    if (conf->geoip) {
        qrt_geo_lookup(conf->geoip, r->pool, ip, &v->country, &v->city);
    }
    else {
        v->country = scan_clean(r->pool, apr_table_get(r->subprocess_env, "MM_COUNTRY_CODE"), 8);
        v->city = scan_clean(r->pool, apr_table_get(r->subprocess_env, "MM_CITY_NAME"), 128);
    }
    v->user_agent = scan_clean(r->pool, ua, SCAN_UA_MAX);
    v->referer = scan_clean(r->pool, apr_table_get(r->headers_in, "Referer"),
                            QRT_VISIT_REFERER_MAX);
    qrt_ua_parse(qrt_uadb(), ua, r->pool, &parsed);
    v->browser = parsed.browser;
    v->browser_version = parsed.browser_version;
    v->os = parsed.os;
    v->device = parsed.device;
    v->bot = parsed.bot;
    /* A visitor is an (address as stored, user agent) pair. */
    v->visitor = qrt_visitor_id(qrt_dbd_visitor_key(), v->visit_start, v->ip,
                                v->user_agent);
}

/* The code of /q/<code>: exactly one segment below the handler's location. */
static const char *scan_code(request_rec *r, const char *prefix)
{
    apr_size_t n = strlen(prefix);
    const char *code;

    if (strncmp(r->uri, prefix, n) != 0 || r->uri[n] != '/') {
        code = strrchr(r->uri, '/');
        return code ? code + 1 : NULL;
    }
    code = r->uri + n + 1;
    return strchr(code, '/') ? NULL : code;
}

typedef struct {
    const char *code;
    apr_int64_t *id;
    const char **url;
    qrt_route_src_t *route;
} lookup_ctx;

static apr_status_t scan_lookup_fn(qrt_db_t *db, apr_pool_t *p, void *ctx)
{
    lookup_ctx *c = ctx;

    return qrt_store_tracker_by_code(db, p, c->code, c->id, c->url, c->route);
}

/* Until when this child's lookups met a lock held elsewhere (ALTER TABLE, VACUUM FULL of
 * the trackers): meanwhile a lookup that finds the lookup connection busy (another scan's
 * lookup waiting for that lock, up to its limit) asks the snapshot instead of mod_dbd's
 * pool, whose connections have no such limit: after a graceful restart, whose children
 * have nothing cached, every scan waited for the lock. */
#define SCAN_LOOKUP_LOCKED apr_time_from_sec(1)
static volatile apr_time_t lookup_locked_until;

/* scan_lookup's answer when the database cannot answer at once and the caller has an
 * aged entry of the cache (not an HTTP status). */
#define SCAN_LOOKUP_AGED (-2)

/* Code found as tracker id (how: where from), said at debug: OK. */
static int scan_found(request_rec *r, const char *code, apr_int64_t id, const char *how)
{
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, "QRT00063: code %s is tracker %"
                  APR_INT64_T_FMT " (%s)", code, id, how);
    return OK;
}

/* The code looked up on one of mod_dbd's connections, *db the call's outcome. */
static apr_status_t scan_lookup_dbd(request_rec *r, const char *code, apr_int64_t *id,
                                    const char **url, qrt_route_src_t *route, qrt_db_t *db)
{
    ap_dbd_t *dbd;
    apr_status_t rv;

    /* Open and close, not acquire: the connection must be back in the pool before this
     * request waits for the writer, which may need one. */
    memset(db, 0, sizeof(*db));
    if (!(dbd = qrt_dbd_open(r->pool, r->server))) {
        return APR_ENOTSOCK;
    }
    db->driver = dbd->driver;
    db->handle = dbd->handle;
    db->prepared = dbd->prepared;
    db->pool = dbd->pool;
    rv = qrt_store_tracker_by_code(db, r->pool, code, id, url, route);
    qrt_dbd_close(r->server, dbd);
    if (rv != APR_SUCCESS && qrt_db_unanswered(db)) {
        qrt_lookup_unanswered();
    }
    return rv;
}

/* The tracker of code from the database; while it cannot be reached, from this
 * node's snapshot. OK, or the status to answer: an unknown code is 404 only when
 * the database says so (the snapshot cannot prove that a code does not exist).
 * aged: the cache holds what the database said a moment ago; when the database does
 * not answer at once (the lookup connection busy, a call just cut) it answers
 * SCAN_LOOKUP_AGED rather than wait for mod_dbd's pool, whose new connections may each
 * wait PGCONNECT_TIMEOUT for a server that stopped answering. */
static int scan_lookup(request_rec *r, const char *code, apr_int64_t *id, const char **url,
                       qrt_route_src_t *route, int aged)
{
    apr_uint32_t more = 0;
    const char *snap_route = NULL;
    const char *why = NULL;
    qrt_db_t db;
    apr_status_t rv;
    int tries, silent = 0;

    /* A few tries: after the database restarted, each pooled connection fails once
     * (then mod_dbd drops it). */
    for (tries = 0; tries < SCAN_LOOKUP_TRIES && !qrt_db_down(); tries++) {
        /* The child's lookup connection: mod_dbd's may all be held by long API
         * requests. */
        lookup_ctx lc = { code, id, url, route };

        rv = qrt_lookup_run(r->pool, scan_lookup_fn, &lc, &db);
        if (aged && (rv == APR_TIMEUP || rv == APR_EAGAIN || qrt_db_unanswered(&db))) {
            return SCAN_LOOKUP_AGED;
        }
        if (rv == APR_TIMEUP
            || (rv == APR_EAGAIN && qrt_clock_now() < lookup_locked_until)) {
            silent = rv == APR_TIMEUP;
            break;
        }
        /* (held by another lookup for a while, or not open now) */
        if (rv == APR_EAGAIN
            && (rv = scan_lookup_dbd(r, code, id, url, route, &db)) == APR_ENOTSOCK) {
            why = "mod_dbd has no connection";
            continue;
        }
        if (rv == APR_SUCCESS) {
            lookup_locked_until = 0;
            return scan_found(r, code, *id, "looked up");
        }
        if (rv == APR_NOTFOUND) {
            return HTTP_NOT_FOUND;
        }
        if (!qrt_db_unreachable(&db)) {
            why = NULL;
            if (!qrt_db_busy_or_full(&db)) {
                if (qrt_log_due(qrt_ration(QRT_R_LOOKUP), &more)) {
                    ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, "QRT00044: code lookup "
                                  "failed: %s (and %u more since this line was last "
                                  "logged)", db.error ? db.error : "unknown", more);
                }
                return HTTP_INTERNAL_SERVER_ERROR;
            }
            /* Busy past the time allowed: the snapshot answers this one, and those
             * that find the lookup connection taken meanwhile. */
            lookup_locked_until = qrt_clock_now() + SCAN_LOOKUP_LOCKED;
            break;
        }
        why = db.error;
        /* No answer by its deadline: a server that stopped answering. Another try
         * would wait as long again; the snapshot answers now, and the probe
         * (mod_qrtrack_probe.c) or the writer says whether the node leaves the
         * database. */
        if (qrt_db_unanswered(&db)) {
            break;
        }
    }
    if (why && tries == SCAN_LOOKUP_TRIES) {
        qrt_db_mark_down(r->server, why);
    }
    rv = qrt_snapshot_lookup(r, code, id, url, &snap_route);
    if (rv == APR_SUCCESS && qrt_route_src_decode(r->pool, snap_route, route) != 0) {
        /* Not what this build writes: no answer rather than one without its gate. */
        rv = APR_EGENERAL;
    }
    if (rv == APR_SUCCESS) {
        return scan_found(r, code, *id, "snapshot");
    }
    if (silent && !qrt_db_down()) {
        /* The lookup connection got no answer in time (a server that stopped answering,
         * or one slow to take a new connection: its host's CPU saturated), and the
         * snapshot does not have the code: one made a moment ago, on a server that may
         * only be slow. mod_dbd's connection asks, within the request's deadline
         * (qrt_dbwatch) and the probe's verdict; a 503 said a new code did not exist
         * for as long as the server took more than QRT_DB_CONNECT_QUICK_S to connect. */
        rv = scan_lookup_dbd(r, code, id, url, route, &db);
        if (rv == APR_SUCCESS) {
            return scan_found(r, code, *id, "looked up");
        }
        if (rv == APR_NOTFOUND) {
            return HTTP_NOT_FOUND;
        }
    }
    /* Unknown codes come for as long as an outage lasts (bots, mistyped links): said
     * once per QRT_LOG_QUIET a child, the outage itself being said by QRT00104. */
    if (qrt_log_due_every(qrt_ration(QRT_R_UNKNOWN), QRT_LOG_QUIET, &more)) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, "QRT00043: code %s: the database "
                      "cannot be reached and this node's snapshot does not have it; "
                      "answering 503 (and %u more since this line was last logged)",
                      code, more);
    }
    apr_table_setn(r->err_headers_out, "Retry-After", "5");
    return HTTP_SERVICE_UNAVAILABLE;
}

/* The facts of the visit v that rules look at. */
static void scan_facts(request_rec *r, const qrt_visit_t *v, qrt_rule_facts_t *f)
{
    const char *al = apr_table_get(r->headers_in, "Accept-Language");
    char *lang = apr_palloc(r->pool, SCAN_LANG_MAX);

    f->device = v->device;
    f->os = v->os;
    f->country = v->country;
    f->language = al && qrt_accept_language_first(al, lang, SCAN_LANG_MAX) > 0 ? lang : NULL;
    f->now = apr_time_sec(r->request_time);
}

/* The decision for this visit: from the cache, else from the database (or the
 * snapshot), then cached. OK or the status to answer. */
static int scan_decide(request_rec *r, const char *code, const qrt_rule_facts_t *f,
                       qrt_route_decision_t *d)
{
    apr_uint32_t gen = scan_shared ? apr_atomic_read32(&scan_shared->tracker_gen) : 0;
    /* (an entry's age: on the clock no step of the wall clock moves) */
    apr_time_t mono = qrt_clock_now();
    const qrt_route_t *route;
    qrt_route_src_t src;
    const char *url, *err;
    apr_size_t size;
    apr_int64_t id;
    int status;

    int cached = scan_cache_get(r->pool, code, gen, mono, f, d);

    if (cached == SCAN_CACHE_CURRENT) {
        return scan_found(r, code, d->id, "cached");
    }
    memset(&src, 0, sizeof(src));
    status = scan_lookup(r, code, &id, &url, &src, cached == SCAN_CACHE_AGED);
    if (status == SCAN_LOOKUP_AGED) {
        return scan_found(r, code, d->id, "cached, the database busy");
    }
    if (status != OK) {
        return status;
    }
    err = qrt_route_build(r->pool, id, url, &src, &route, &size);
    if (err) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, "QRT00800: tracker %" APR_INT64_T_FMT
                      ": its stored rules do not read (%s); answering 500", id, err);
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    scan_cache_put(code, gen, mono, route, size);
    qrt_route_decide(r->pool, route, f, d);
    return OK;
}

/* Records v (committed, or in the spool) and gives the scan writer's cap_outcome. OK,
 * or 503 (with Retry-After) when it could not be recorded. */
static int scan_record(request_rec *r, qrt_visit_t *v, int *outcome)
{
    apr_uint32_t more = 0;
    apr_status_t rv = scan_submit(r, v, outcome);

    if (rv == APR_SUCCESS && *outcome != QRT_VISIT_CAP_UNKNOWN) {
        return OK;
    }
    if (rv == APR_EAGAIN) {
        QRT_STAT_ADD(queue_full, 1);
        if (qrt_log_due(qrt_ration(QRT_R_QUEUE_FULL), &more)) {
            ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, "QRT00045: scan queue "
                          "full; answering 503 (and to %u more scans since this "
                          "line was last logged)", more);
        }
    }
    else if (rv == APR_TIMEUP) {
        QRT_STAT_ADD(scan_timeouts, 1);
        if (qrt_log_due(qrt_ration(QRT_R_QUEUE_TIMEOUT), &more)) {
            ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, "QRT00068: no commit "
                          "within QRTrackScanWait (%d s); answering 503, the visit "
                          "unrecorded (and %u more since this line was last "
                          "logged)", scan_wait(), more);
        }
    }
    else if (rv == APR_SUCCESS && qrt_log_due(qrt_ration(QRT_R_CAPPED), &more)) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, "QRT00801: tracker %"
                      APR_INT64_T_FMT " has max_scans and the database cannot be "
                      "reached: answering 503, the visit unrecorded (and %u more since "
                      "this line was last logged)", v->tracker_id, more);
    }
    apr_table_setn(r->err_headers_out, "Retry-After", "1");
    return HTTP_SERVICE_UNAVAILABLE;
}

typedef struct {
    apr_int64_t id;
    int open;
} cap_ctx;

static apr_status_t scan_cap_open_fn(qrt_db_t *db, apr_pool_t *p, void *ctx)
{
    cap_ctx *c = ctx;

    return qrt_store_tracker_cap_open(db, p, c->id, &c->open);
}

/* A HEAD of a capped tracker: whether a scan would be sent on now (*open), read from
 * the database without counting (the writer counts scans). OK, or 503 when the database
 * cannot tell, as a GET of a capped code is then answered. */
static int scan_cap_open(request_rec *r, apr_int64_t id, int *open)
{
    cap_ctx c = { id, 0 };
    qrt_db_t db;
    apr_status_t rv = APR_EAGAIN;

    if (!qrt_db_down()) {
        rv = qrt_lookup_run(r->pool, scan_cap_open_fn, &c, &db);
        if (rv == APR_EAGAIN) {
            ap_dbd_t *dbd = qrt_dbd_open(r->pool, r->server);

            if (dbd) {
                memset(&db, 0, sizeof(db));
                db.driver = dbd->driver;
                db.handle = dbd->handle;
                db.prepared = dbd->prepared;
                db.pool = dbd->pool;
                rv = qrt_store_tracker_cap_open(&db, r->pool, id, &c.open);
                qrt_dbd_close(r->server, dbd);
            }
        }
    }
    if (rv != APR_SUCCESS) {
        apr_table_setn(r->err_headers_out, "Retry-After", "1");
        return HTTP_SERVICE_UNAVAILABLE;
    }
    *open = c.open;
    return OK;
}

/* The answer to a visit sent to url: 302, or the expired page (410) without one. */
static int scan_answer(request_rec *r, const char *url)
{
    if (!url) {
        return qrt_gate_expired(r);
    }
    apr_table_setn(r->headers_out, "Location", qrt_url_location(r->pool, url));
    return HTTP_MOVED_TEMPORARILY;
}

int qrt_scan_handler(request_rec *r)
{
    qrt_server_conf *conf;
    const char *source, *code;
    qrt_route_decision_t d;
    qrt_rule_facts_t facts;
    qrt_visit_t visit;
    int status, outcome = QRT_VISIT_CAP_SENT;

    if (!r->handler) {
        return DECLINED;
    }
    if (!strcmp(r->handler, "qrtrack-scan")) {
        source = "scan";
        code = scan_code(r, qrt_scan_prefix(r->server));
    }
    else if (!strcmp(r->handler, "qrtrack-click")) {
        source = "click";
        code = scan_code(r, qrt_click_prefix(r->server));
    }
    else {
        return DECLINED;
    }
    if (!code || !qrt_code_custom_valid(code)) {
        return HTTP_NOT_FOUND;
    }
    if (!r->header_only) {
        int budget = qrt_budget_check(r);

        if (budget != OK) {
            return budget;
        }
    }
    conf = ap_get_module_config(r->server->module_config, &qrtrack_module);
    scan_visit(r, conf, 0, source, &visit);
    scan_facts(r, &visit, &facts);
    status = scan_decide(r, code, &facts, &d);
    if (status != OK) {
        return status;
    }
    /* Only a code behind a password takes a POST: its form's. One sent once the code
     * has expired (or before it starts) is answered as a GET then is, and recorded. */
    if ((r->method_number != M_GET && r->method_number != M_POST)
        || (r->method_number == M_POST && !d.password_hash)) {
        /* httpd's 405 writes Allow from allowed_methods (GET brings HEAD) */
        if (d.password_hash) {
            ap_allow_standard_methods(r, REPLACE_ALLOW, M_GET, M_POST, -1);
        }
        else {
            ap_allow_standard_methods(r, REPLACE_ALLOW, M_GET, -1);
        }
        return HTTP_METHOD_NOT_ALLOWED;
    }
    apr_table_setn(r->err_headers_out, "Cache-Control", "no-store");
    visit.tracker_id = d.id;
    if (d.verdict == QRT_ROUTE_GO && d.password_hash) {
        /* The form, a wrong password or too many tries: answered, nothing recorded. */
        const char *from = NULL;
        int pass = 0;

        status = qrt_gate_check(r, d.id, d.password_hash, &pass, &from);
        if (!pass) {
            return status;
        }
        /* The visit came from the page that sent the visitor to the form (carried in
         * it), not from the form: the POST's own Referer names the form if anything. */
        if (from) {
            visit.referer = scan_clean(r->pool, from, QRT_VISIT_REFERER_MAX);
        }
    }
    if (r->header_only) {
        /* What a GET would answer, nothing recorded: past max_scans, expired_url or 410. */
        if (d.capped && d.verdict == QRT_ROUTE_GO) {
            int open = 0;

            status = scan_cap_open(r, d.id, &open);
            if (status != OK) {
                return status;
            }
            if (!open) {
                return scan_answer(r, d.expired_url);
            }
        }
        return scan_answer(r, d.url);
    }
    visit.destination = d.url;
    if (d.capped && d.verdict == QRT_ROUTE_GO) {
        visit.capped = !visit.bot && !strcmp(source, "scan") ? QRT_VISIT_CAP_COUNT
                                                              : QRT_VISIT_CAP_ASK;
        visit.over_destination = d.expired_url;
    }
    status = scan_record(r, &visit, &outcome);
    if (status != OK) {
        return status;
    }
    if (outcome == QRT_VISIT_GONE) {
        /* (deleted while the scan waited for its commit: as a scan after it) */
        return HTTP_NOT_FOUND;
    }
    return scan_answer(r, outcome == QRT_VISIT_CAP_OVER ? d.expired_url : d.url);
}
