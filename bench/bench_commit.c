/* make bench, the commit path alone: what the scan writer's commit costs the store on
 * SQLite (or PostgreSQL), without httpd, wrk or the queue around it.
 *
 * A fresh database in a temporary directory (WAL, synchronous = NORMAL, no automatic
 * checkpoint: as the module's writer connection), one account and one tracker; then,
 * for each batch size, BENCH_COMMITS commits (default 2,000) of that many visits of one
 * visitor, each in its own transaction through qrt_store_visits_record_ids (as
 * writer_commit runs it), a PASSIVE checkpoint every 200 commits (as the module's WAL
 * thread does). Each size runs again on a database whose account has a webhook
 * subscribed to scan.created: the commit also writes the batch's events, as the
 * writer does (the outbox's bound is not in it). Prints the time a commit and a visit
 * takes, and the database pages a commit writes to the WAL. Batches of 15 are what the
 * scan bench's 50 connections make on a two-core machine. BENCH_SIZE=n runs one size,
 * BENCH_WEBHOOK=0 or 1 only without or with the webhook. No target: the figures
 * explain the scan ratios.
 *
 * With BENCH_PG_PARAMS (apr_dbd's pgsql parameters of an empty database, which
 * bench_commit.py makes on a throwaway cluster), the same on PostgreSQL: each batch
 * size with the writer's pipelined transaction (qrt_db_begin_pipelined) and with
 * apr_dbd's, in turns of 50 commits so that both see the same machine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sqlite3.h>
#include <apr_general.h>
#include <apr_strings.h>
#include <apr_dbd.h>

#include "qrt_schema.h"
#include "qrt_store.h"
#include "qrt_dict.h"
#include "qrt_store_webhook.h"

#define T0 1790000000               /* 2026-09-21: visits from there on */

static double bench_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int bench_fail(const char *what, const char *err)
{
    fprintf(stderr, "bench_commit: %s: %s\n", what, err ? err : "failed");
    return 1;
}

/* One visitor's size visits, the next ones of the *seq visits made so far: 30 scans a
 * second of the scan bench's single iPhone, in time order. */
static void bench_visits(qrt_visit_t *v, apr_int64_t tracker, int size, apr_int64_t *seq)
{
    int i;

    for (i = 0; i < size; i++) {
        v[i].tracker_id = tracker;
        v[i].visit_start = T0 + (*seq)++ / 30;
        v[i].source = "scan";
        v[i].ip = "127.0.0.0";
        v[i].browser = "Mobile Safari";
        v[i].browser_version = "17.0";
        v[i].os = "iOS";
        v[i].device = "mobile";
        v[i].user_agent = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X)";
        v[i].visitor = 0x5ca9;
    }
}

/* One batch size on a fresh database at path; with hooked, the tracker's account has a
 * webhook subscribed to scan.created, whose events the commit writes as the writer does. */
static int bench_size(apr_pool_t *pool, const char *path, int size, int commits, int hooked)
{
    qrt_webhook_cache_t *hooks = NULL;
    apr_pool_t *p;
    qrt_db_t db;
    qrt_tracker_t t;
    qrt_visit_t *v;
    sqlite3 *h;
    const char *err = NULL;
    double took;
    long pages = 0;
    apr_int64_t seq = 0;
    int k, cur, hi, nrows;

    apr_pool_create(&p, pool);
    memset(&db, 0, sizeof(db));
    if (apr_dbd_get_driver(p, "sqlite3", &db.driver) != APR_SUCCESS
        || apr_dbd_open_ex(db.driver, p, path, &db.handle, &err) != APR_SUCCESS) {
        return bench_fail("open", err);
    }
    if ((err = qrt_schema_migrate(p, db.driver, db.handle, NULL, NULL)) != NULL
        || (err = qrt_db_prepare_all(&db, p)) != NULL) {
        return bench_fail("schema", err);
    }
    h = apr_dbd_native_handle(db.driver, db.handle);
    sqlite3_exec(h, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL);
    sqlite3_exec(h, "PRAGMA wal_autocheckpoint = 0", NULL, NULL, NULL);
    db.dict = qrt_dict_cache_make(p, 1 << 16, 8 << 20);
    if (apr_dbd_query(db.driver, db.handle, &nrows, "INSERT INTO accounts (name, plan, "
                      "created_at) VALUES ('bench', 'professional', 0)") != 0) {
        return bench_fail("account", apr_dbd_error(db.driver, db.handle, 1));
    }
    memset(&t, 0, sizeof(t));
    t.account_id = 1;
    t.code = "bench1";
    t.name = "bench";
    t.type = "website";
    t.redirect_url = "https://example.com/spring";
    t.tags = apr_array_make(p, 1, sizeof(const char *));
    if (qrt_store_tracker_add(&db, p, &t) != APR_SUCCESS) {
        return bench_fail("tracker", db.error);
    }
    if (hooked) {
        qrt_webhook_t w;

        memset(&w, 0, sizeof(w));
        w.account_id = 1;
        w.url = "http://127.0.0.1:9/bench";
        w.events = QRT_WEBHOOK_SCAN_CREATED;
        if (qrt_store_webhook_add(&db, p, &w, 10) != APR_SUCCESS) {
            return bench_fail("webhook", db.error);
        }
        hooks = qrt_webhook_cache_make(p);
    }
    v = apr_pcalloc(p, (apr_size_t)size * sizeof(*v));
    took = bench_now();
    for (k = 0; k < commits; k++) {
        apr_dbd_transaction_t *tx;
        apr_pool_t *bp;
        apr_int64_t *ids;
        int i;

        apr_pool_create(&bp, p);
        bench_visits(v, t.id, size, &seq);
        ids = apr_palloc(bp, sizeof(*ids) * (apr_size_t)size);
        db.error = NULL;
        if (qrt_db_begin(&db, bp, &tx) != APR_SUCCESS
            || qrt_store_visits_record_ids(&db, bp, v, size, ids) != APR_SUCCESS) {
            return bench_fail("commit", db.error);
        }
        for (i = 0; i < size; i++) {
            v[i].id = ids[i];
        }
        if ((hooks && qrt_store_webhook_visits(&db, bp, hooks, 0, v, size) != APR_SUCCESS)
            || qrt_db_end(&db, bp, tx) != APR_SUCCESS) {
            return bench_fail("commit", db.error);
        }
        qrt_dict_cache_commit(db.dict);
        if (hooks) {
            qrt_webhook_cache_commit(hooks);
        }
        sqlite3_db_status(h, SQLITE_DBSTATUS_CACHE_WRITE, &cur, &hi, 1);
        pages += cur;
        if (k % 200 == 199) {
            sqlite3_wal_checkpoint_v2(h, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        }
        apr_pool_destroy(bp);
    }
    took = bench_now() - took;
    printf("  batches of %3d visits%s: %7.1f us a commit, %6.2f us a visit, "
           "%5.1f pages a commit (%d commits)\n", size, hooked ? " (webhook)" : "",
           took / commits * 1e6, took / commits / size * 1e6, (double)pages / commits,
           commits);
    apr_dbd_close(db.driver, db.handle);
    apr_pool_destroy(p);
    return 0;
}

/* One commit of v on PostgreSQL, pipelined or through apr_dbd's transaction. */
static int bench_pg_commit(qrt_db_t *db, apr_pool_t *bp, qrt_visit_t *v, int size,
                           int pipelined)
{
    apr_dbd_transaction_t *tx = NULL;
    apr_status_t rv;

    db->error = NULL;
    if (pipelined) {
        rv = qrt_db_begin_pipelined(db, bp);
        if (rv == APR_SUCCESS) {
            rv = qrt_db_end_pipelined(db, bp, qrt_store_visits_record(db, bp, v, size));
        }
    }
    else {
        rv = qrt_db_begin(db, bp, &tx);
        if (rv == APR_SUCCESS) {
            rv = qrt_store_visits_record(db, bp, v, size);
            if (rv != APR_SUCCESS) {
                qrt_db_rollback_only(db, tx);
            }
            rv = qrt_db_end(db, bp, tx) != APR_SUCCESS ? APR_EGENERAL : rv;
        }
    }
    if (rv == APR_SUCCESS) {
        qrt_dict_cache_commit(db->dict);
    }
    return rv == APR_SUCCESS ? 0 : bench_fail(pipelined ? "pipelined commit" : "commit",
                                              db->error);
}

/* PostgreSQL: each batch size, pipelined and not, on one tracker each. */
static int bench_pg(apr_pool_t *pool, const char *params, int commits)
{
    static const int sizes[] = { 1, 15, 100 };
    apr_pool_t *p;
    qrt_db_t db;
    const char *err = NULL;
    apr_int64_t seq = 0;
    int s, nrows;

    apr_pool_create(&p, pool);
    memset(&db, 0, sizeof(db));
    if (apr_dbd_get_driver(p, "pgsql", &db.driver) != APR_SUCCESS
        || apr_dbd_open_ex(db.driver, p, params, &db.handle, &err) != APR_SUCCESS) {
        return bench_fail("open", err);
    }
    if ((err = qrt_schema_migrate(p, db.driver, db.handle, NULL, NULL)) != NULL
        || (err = qrt_db_prepare_all(&db, p)) != NULL) {
        return bench_fail("schema", err);
    }
    db.dict = qrt_dict_cache_make(p, 1 << 16, 8 << 20);
    if (apr_dbd_query(db.driver, db.handle, &nrows, "INSERT INTO accounts (name, plan, "
                      "created_at) VALUES ('bench', 'professional', 0)") != 0) {
        return bench_fail("account", apr_dbd_error(db.driver, db.handle, 1));
    }
    printf("commit bench, PostgreSQL: qrt_store_visits_record in one transaction a batch, "
           "one tracker a batch size and way, one visitor in time order; turns of 50 commits\n");
    for (s = 0; s < (int)(sizeof(sizes) / sizeof(sizes[0])); s++) {
        int size = sizes[s], n = size > 15 ? commits * 15 / size + 1 : commits, way, k, turn;
        int done[2] = { 0, 0 };
        qrt_tracker_t t[2];
        qrt_visit_t *v = apr_pcalloc(p, (apr_size_t)size * sizeof(*v));
        double took[2] = { 0, 0 };

        for (way = 0; way < 2; way++) {
            memset(&t[way], 0, sizeof(t[way]));
            t[way].account_id = 1;
            t[way].code = apr_psprintf(p, "bench%d%d", s, way);
            t[way].name = "bench";
            t[way].type = "website";
            t[way].redirect_url = "https://example.com/spring";
            t[way].tags = apr_array_make(p, 1, sizeof(const char *));
            if (qrt_store_tracker_add(&db, p, &t[way]) != APR_SUCCESS) {
                return bench_fail("tracker", db.error);
            }
        }
        for (turn = 0; done[0] < n || done[1] < n; turn++) {
            /* turns of 50 commits: pipelined, then apr_dbd's, ... */
            int pipelined = turn % 2 == 0;

            for (k = 0; k < 50 && done[pipelined] < n; k++) {
                apr_pool_t *bp;
                double t0;

                apr_pool_create(&bp, p);
                bench_visits(v, t[pipelined].id, size, &seq);
                done[pipelined]++;
                t0 = bench_now();
                if (bench_pg_commit(&db, bp, v, size, pipelined) != 0) {
                    return 1;
                }
                took[pipelined] += bench_now() - t0;
                apr_pool_destroy(bp);
            }
        }
        printf("  batches of %3d visits: pipelined %7.1f us a commit, apr_dbd's %7.1f us "
               "(pipelined / apr_dbd's %.2f; %d commits each)\n", size,
               took[1] / n * 1e6, took[0] / n * 1e6, took[0] > 0 ? took[1] / took[0] : 0,
               n);
    }
    apr_dbd_close(db.driver, db.handle);
    apr_pool_destroy(p);
    return 0;
}

int main(void)
{
    static const int sizes[] = { 1, 15, 100 };
    const char *env = getenv("BENCH_COMMITS");
    int commits = env && atoi(env) > 0 ? atoi(env) : 2000, i, rc = 0;
    char dir[] = "/tmp/qrt-bench-commit-XXXXXX";
    apr_pool_t *pool;

    /* as the module's pre_config does */
    qrt_dialect_sqlite_tune(0);
    apr_initialize();
    apr_pool_create(&pool, NULL);
    apr_dbd_init(pool);
    if (getenv("BENCH_PG_PARAMS")) {
        rc = bench_pg(pool, getenv("BENCH_PG_PARAMS"), commits);
        apr_terminate();
        return rc;
    }
    if (!mkdtemp(dir)) {
        return bench_fail("mkdtemp", dir);
    }
    printf("commit bench, SQLite: qrt_store_visits_record in one transaction a batch, "
           "one tracker, one visitor\n");
    for (i = 0; i < 2 * (int)(sizeof(sizes) / sizeof(sizes[0])) && rc == 0; i++) {
        int size = sizes[i / 2], hooked = i % 2;
        const char *path;

        if ((getenv("BENCH_SIZE") && atoi(getenv("BENCH_SIZE")) != size)
            || (getenv("BENCH_WEBHOOK") && atoi(getenv("BENCH_WEBHOOK")) != hooked)) {
            continue;
        }
        path = apr_psprintf(pool, "%s/c%d%s.db", dir, size, hooked ? "h" : "");

        /* fewer commits of the larger batches: about as many visits as 15 a commit */
        rc = bench_size(pool, path, size, size > 15 ? commits * 15 / size + 1 : commits,
                        hooked);
        if (getenv("BENCH_KEEP")) {
            printf("  kept %s\n", path);
            continue;
        }
        unlink(path);
        unlink(apr_pstrcat(pool, path, "-wal", NULL));
        unlink(apr_pstrcat(pool, path, "-shm", NULL));
    }
    if (!getenv("BENCH_KEEP")) {
        rmdir(dir);
    }
    apr_terminate();
    return rc;
}
