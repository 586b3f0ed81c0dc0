/* qrt_dblimit: a statement's time on SQLite (a lock held elsewhere, a long
 * statement, an idle connection), and the classes of errors and refusals. */
#include <string.h>
#include <unistd.h>
#include <apr_dbd.h>
#include <apr_strings.h>
#include <apr_time.h>
#include <sqlite3.h>

#include "qrt_check.h"
#include "qrt_dblimit.h"

QRT_CHECK_POOL

static void limit_drop(const char *path)
{
    static const char *const suffixes[] = { "", "-wal", "-shm" };
    int i;

    for (i = 0; i < 3; i++) {
        unlink(apr_pstrcat(pool, path, suffixes[i], NULL));
    }
}

/* A file database in WAL mode with one row, and an apr_dbd connection to it. */
static const char *limit_db(const apr_dbd_driver_t **driver, apr_dbd_t **handle)
{
    const char *path = apr_psprintf(pool, "/tmp/qrt_test_dblimit_%ld.db", (long)getpid());
    const char *err = NULL;
    sqlite3 *h;

    limit_drop(path);
    ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(h, "PRAGMA journal_mode=WAL; CREATE TABLE t (x);"
                                  "INSERT INTO t VALUES (1);", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    apr_dbd_init(pool);
    ck_assert_int_eq(apr_dbd_get_driver(pool, "sqlite3", driver), APR_SUCCESS);
    ck_assert_int_eq(apr_dbd_open_ex(*driver, pool, path, handle, &err), APR_SUCCESS);
    return path;
}

/* Runs sql to its end on h: SQLite's result code, the time taken in *secs. */
static int limit_run(sqlite3 *h, const char *sql, double *secs)
{
    sqlite3_stmt *st = NULL;
    apr_time_t t0 = apr_time_now();
    int rc = sqlite3_prepare_v2(h, sql, -1, &st, NULL);

    if (rc == SQLITE_OK) {
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        }
        sqlite3_finalize(st);
    }
    *secs = (double)(apr_time_now() - t0) / APR_USEC_PER_SEC;
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* A reader meets a lock that another connection holds (exclusive locking mode
 * blocks WAL readers too): it gives up after its time, not SQLite's or apr_dbd's. */
START_TEST(sqlite_lock_wait_is_bounded)
{
    const apr_dbd_driver_t *driver;
    apr_dbd_t *handle;
    const char *path = limit_db(&driver, &handle);
    sqlite3 *h = apr_dbd_native_handle(driver, handle), *locker;
    double secs;

    ck_assert_int_eq(qrt_db_limit(driver, handle, pool, 300, NULL), APR_SUCCESS);
    ck_assert_int_eq(sqlite3_open(path, &locker), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(locker, "PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE;"
                                  "INSERT INTO t VALUES (2);", NULL, NULL, NULL), SQLITE_OK);
    ck_assert_int_eq(limit_run(h, "SELECT COUNT(*) FROM t", &secs), SQLITE_BUSY);
    ck_assert_msg(secs >= 0.25 && secs < 1.0, "waited %.3f s", secs);
    ck_assert_str_eq(sqlite3_errmsg(h), "database is locked");
    sqlite3_exec(locker, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(locker);
    /* the lock gone, the same connection reads */
    ck_assert_int_eq(limit_run(h, "SELECT COUNT(*) FROM t", &secs), SQLITE_OK);
    apr_dbd_close(driver, handle);
    limit_drop(path);
}
END_TEST

/* A statement that runs too long is interrupted; the next one runs; a connection
 * idle for longer than the limit is not cut at its next statement. */
START_TEST(sqlite_long_statement_is_interrupted)
{
    const apr_dbd_driver_t *driver;
    apr_dbd_t *handle;
    sqlite3 *h;
    double secs;
    const char *path = limit_db(&driver, &handle);
    qrt_db_limit_t *l;

    h = apr_dbd_native_handle(driver, handle);
    ck_assert_int_eq(qrt_db_limit(driver, handle, pool, 200, &l), APR_SUCCESS);
    ck_assert_ptr_nonnull(l);
    ck_assert_int_eq(limit_run(h, "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 "
                               "FROM c LIMIT 10000000000) SELECT COUNT(*) FROM c", &secs),
                     SQLITE_INTERRUPT);
    ck_assert_msg(secs >= 0.15 && secs < 0.8, "ran %.3f s", secs);
    ck_assert_str_eq(sqlite3_errmsg(h), "interrupted");
    ck_assert_int_eq(limit_run(h, "SELECT COUNT(*) FROM t", &secs), SQLITE_OK);
    apr_sleep(apr_time_from_msec(300));
    qrt_db_limit_idle(l);
    ck_assert_int_eq(limit_run(h, "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 "
                               "FROM c LIMIT 1000) SELECT COUNT(*) FROM c", &secs),
                     SQLITE_OK);
    apr_dbd_close(driver, handle);
    limit_drop(path);
}
END_TEST

/* A write through apr_dbd, which steps a statement that meets SQLITE_BUSY up to 16
 * times, 100 ms apart: the retries count in the statement's time (not a new time
 * each), so the wait is the limit and the driver's 1.6 s at most. */
START_TEST(sqlite_driver_retries_count_in_the_time)
{
    const apr_dbd_driver_t *driver;
    apr_dbd_t *handle;
    const char *path = limit_db(&driver, &handle);
    sqlite3 *locker;
    apr_time_t t0;
    double secs;
    int nrows = 0, rv;

    ck_assert_int_eq(qrt_db_limit(driver, handle, pool, 600, NULL), APR_SUCCESS);
    ck_assert_int_eq(sqlite3_open(path, &locker), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(locker, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    t0 = apr_time_now();
    rv = apr_dbd_query(driver, handle, &nrows, "INSERT INTO t VALUES (3)");
    secs = (double)(apr_time_now() - t0) / APR_USEC_PER_SEC;
    ck_assert_int_ne(rv, 0);
    ck_assert_msg(secs >= 0.55 && secs < 0.6 + 1.6 + 0.8, "waited %.3f s", secs);
    ck_assert_str_eq(apr_dbd_error(driver, handle, rv), "database is locked");
    sqlite3_exec(locker, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(locker);
    ck_assert_int_eq(apr_dbd_query(driver, handle, &nrows, "INSERT INTO t VALUES (3)"), 0);
    apr_dbd_close(driver, handle);
    limit_drop(path);
}
END_TEST

START_TEST(error_classes)
{
    qrt_db_t db;

    memset(&db, 0, sizeof(db));
    ck_assert_int_eq(qrt_db_timed_out(&db), 0);
    db.error = "qrt_x: ERROR:  57014: canceling statement due to statement timeout";
    ck_assert_int_eq(qrt_db_timed_out(&db), 1);
    db.error = "qrt_x: ERROR:  55P03: canceling statement due to lock timeout";
    ck_assert_int_eq(qrt_db_timed_out(&db), 1);
    db.error = "qrt_x: interrupted";
    ck_assert_int_eq(qrt_db_timed_out(&db), 1);
    db.error = "qrt_x: database is locked";
    ck_assert_int_eq(qrt_db_timed_out(&db), 1);
    db.error = "qrt_x: database or disk is full";
    ck_assert_int_eq(qrt_db_timed_out(&db), 0);
    db.error = "qrt_x: ERROR:  23505: duplicate key value violates unique constraint";
    ck_assert_int_eq(qrt_db_timed_out(&db), 0);
    ck_assert_str_eq(qrt_db_limit_sql(pool, 2000),
                     "SET statement_timeout = 2000; SET lock_timeout = 2000");
}
END_TEST

START_TEST(refusal_classes)
{
    ck_assert_int_eq(qrt_db_refusal(qrt_dialect_named("pgsql"), "FATAL:  sorry, too many clients already\n"),
                     QRT_DB_REFUSED_SLOTS);
    ck_assert_int_eq(qrt_db_refusal(qrt_dialect_named("pgsql"), "connection to server at \"127.0.0.1\", port "
                                    "5432 failed: FATAL:  remaining connection slots are "
                                    "reserved for non-replication superuser connections"),
                     QRT_DB_REFUSED_SLOTS);
    ck_assert_int_eq(qrt_db_refusal(qrt_dialect_named("pgsql"), "FATAL:  remaining connection slots are "
                                    "reserved for roles with the SUPERUSER attribute"),
                     QRT_DB_REFUSED_SLOTS);
    ck_assert_int_eq(qrt_db_refusal(qrt_dialect_named("pgsql"), "FATAL:  too many connections for role "
                                    "\"qrtrack\""), QRT_DB_REFUSED_ROLE_LIMIT);
    ck_assert_int_eq(qrt_db_refusal(qrt_dialect_named("pgsql"), "FATAL:  password authentication failed for "
                                    "user \"qrtrack\""), QRT_DB_REFUSED_AUTH);
    ck_assert_int_eq(qrt_db_refusal(qrt_dialect_named("pgsql"), "FATAL:  database \"nope\" does not exist"),
                     QRT_DB_REFUSED_AUTH);
    ck_assert_int_eq(qrt_db_refusal(qrt_dialect_named("pgsql"), "connection to server at \"127.0.0.1\", port 1 "
                                    "failed: Connection refused"),
                     QRT_DB_REFUSED_UNREACHABLE);
    ck_assert_int_eq(qrt_db_refusal(qrt_dialect_named("pgsql"), "FATAL:  the database system is starting up"),
                     QRT_DB_REFUSED_UNREACHABLE);
    ck_assert_int_eq(qrt_db_refusal(qrt_dialect_named("pgsql"), "cannot look up the database host "
                                    "db.example.com: no answer in time"),
                     QRT_DB_REFUSED_UNREACHABLE);
    ck_assert_int_eq(qrt_db_refusal(qrt_dialect_named("sqlite3"), NULL), QRT_DB_REFUSED_FILE);
    ck_assert_int_eq(qrt_db_connect_silent("connection to server at \"127.0.0.1\", port 5432 "
                                           "failed: timeout expired\n"), 1);
    ck_assert_int_eq(qrt_db_connect_silent("connection to server at \"127.0.0.1\", port 1 "
                                           "failed: Connection refused"), 0);
    ck_assert_int_eq(qrt_db_connect_silent(NULL), 0);
    ck_assert_int_eq(qrt_db_refusal(qrt_dialect_named("pgsql"), "something else"), QRT_DB_REFUSED_OTHER);
    ck_assert_ptr_nonnull(strstr(qrt_db_refusal_advice(QRT_DB_REFUSED_SLOTS),
                                 "superuser_reserved_connections"));
    ck_assert_ptr_nonnull(strstr(qrt_db_refusal_advice(QRT_DB_REFUSED_SLOTS),
                                 "max_connections"));
}
END_TEST

static Suite *dblimit_suite(void)
{
    Suite *s = suite_create("dblimit");
    TCase *tc = tcase_create("limit");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, sqlite_lock_wait_is_bounded);
    tcase_add_test(tc, sqlite_long_statement_is_interrupted);
    tcase_add_test(tc, sqlite_driver_retries_count_in_the_time);
    tcase_add_test(tc, error_classes);
    tcase_add_test(tc, refusal_classes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(dblimit_suite());
}
