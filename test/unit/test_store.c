/* Unit tests for qrt_store.c: the array literals of PostgreSQL's statements of many
 * rows and SQLite's statements of many rows (qrt_db_exec_rows), SQLite's rows read
 * without apr_dbd (qrt_db_each, qrt_db_select_int), and how errors are classed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>
#include <apr_dbd.h>
#include <sqlite3.h>

#include "qrt_store.h"
#include "qrt_store_bulk.h"
#include "qrt_check.h"
#include "qrt_check_db.h"

QRT_CHECK_POOL

START_TEST(array_of_numbers)
{
    apr_int64_t a = 1, b = -9223372036854775807LL - 1, c = 42;
    int i0 = 0, i1 = 1;
    /* two columns a row: an apr_int64_t and an int */
    const void *args[] = { &a, &i0, NULL, &i1, &b, NULL, &c, &i0 };

    ck_assert_str_eq(qrt_db_array(pool, 'l', args, 2, 0, 4),
                     "{1,NULL,-9223372036854775808,42}");
    ck_assert_str_eq(qrt_db_array(pool, 'i', args, 2, 1, 4), "{0,1,NULL,0}");
    ck_assert_str_eq(qrt_db_array(pool, 'l', args, 2, 0, 0), "{}");
}
END_TEST

START_TEST(array_of_numbers_every_width)
{
    /* every count of digits, both signs, and the extremes of both types */
    apr_int64_t v[40];
    int iv[4] = { -2147483647 - 1, 2147483647, -10, 9 };
    const void *args[40], *iargs[4];
    char want[1024], *w = want;
    apr_int64_t x = 1;
    int i;

    for (i = 0; i < 19; i++) {
        /* (x: 10^i, multiplied before use so that it never passes 10^18) */
        x = i ? x * 10 : 1;
        v[2 * i] = x + (i % 7);
        v[2 * i + 1] = -(x * 9 + 9 - (i % 3));
    }
    v[38] = 9223372036854775807LL;
    v[39] = 0;
    w += sprintf(w, "{");
    for (i = 0; i < 40; i++) {
        args[i] = &v[i];
        w += sprintf(w, "%s%lld", i ? "," : "", (long long)v[i]);
    }
    sprintf(w, "}");
    ck_assert_str_eq(qrt_db_array(pool, 'l', args, 1, 0, 40), want);
    for (i = 0; i < 4; i++) {
        iargs[i] = &iv[i];
    }
    ck_assert_str_eq(qrt_db_array(pool, 'i', iargs, 1, 0, 4),
                     "{-2147483648,2147483647,-10,9}");
}
END_TEST

START_TEST(array_of_strings)
{
    const void *args[] = { "plain", "", NULL, "a \"quoted\" word", "back\\slash",
                           "{brace,comma}", "NULL", "ü\xe2\x82\xac" };

    ck_assert_str_eq(qrt_db_array(pool, 's', args, 1, 0, 8),
                     "{\"plain\",\"\",NULL,\"a \\\"quoted\\\" word\",\"back\\\\slash\","
                     "\"{brace,comma}\",\"NULL\",\"ü\xe2\x82\xac\"}");
}
END_TEST

START_TEST(array_of_long_strings)
{
    /* every character escaped: the literal is twice the text, plus quotes */
    char *s = malloc(10001);
    const void *args[1];
    char *out;

    memset(s, '"', 10000);
    s[10000] = '\0';
    args[0] = s;
    out = qrt_db_array(pool, 's', args, 1, 0, 1);
    ck_assert_uint_eq(strlen(out), 2 + 2 + 20000);
    ck_assert_int_eq(out[0], '{');
    ck_assert_int_eq(out[strlen(out) - 1], '}');
    free(s);
}
END_TEST

/* How a driver's error message is read: retry the transaction, the connection is
 * gone, or the database is busy or full (a 503). */
START_TEST(rows_refused_for_good)
{
    static const char *const refused[] = {
        "visit_add_many: ERROR:  23505: duplicate key value violates unique constraint",
        "ERROR:  23514: new row for relation \"visit_rows\" violates check constraint",
        "agg_x: FEHLER:  22003: Wert ist außerhalb des gültigen Bereichs",
        "ERROR:  P0001: no visits of tracker 7 here",
        "CHECK constraint failed: x <> 7",
        "NOT NULL constraint failed: visit_rows.ua_id",
        "datatype mismatch",
        "string or blob too big",
    };
    static const char *const not_refused[] = {
        "ERROR:  55P03: canceling statement due to lock timeout",
        "ERROR:  40P01: deadlock detected",
        "ERROR:  42P01: relation \"visit_rows\" does not exist",
        "ERROR:  P0002: no data found",
        "FATAL:  57P01: terminating connection due to administrator command",
        "visit_add_many: ERROR:  25006: cannot execute INSERT in a read-only transaction",
        "ERROR:  XX000: internal error 23505:",
        "database is locked",
        "no such table: visit_rows",
    };
    qrt_db_t db;
    apr_size_t i;

    memset(&db, 0, sizeof(db));
    ck_assert_int_eq(qrt_db_refuses_rows(&db), 0);
    for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        db.error = refused[i];
        ck_assert_msg(qrt_db_refuses_rows(&db), "not refused: %s", refused[i]);
    }
    for (i = 0; i < sizeof(not_refused) / sizeof(not_refused[0]); i++) {
        db.error = not_refused[i];
        ck_assert_msg(!qrt_db_refuses_rows(&db), "refused: %s", not_refused[i]);
    }
}
END_TEST

START_TEST(error_classes)
{
    qrt_db_t db;

    memset(&db, 0, sizeof(db));
    ck_assert_int_eq(qrt_db_busy_or_full(&db), 0);
    db.error = "database or disk is full";
    ck_assert_int_eq(qrt_db_busy_or_full(&db), 1);
    ck_assert_int_eq(qrt_db_lost(&db), 0);
    db.error = "database is locked";
    ck_assert_int_eq(qrt_db_busy_or_full(&db), 1);
    db.error = "ERROR: 53100: could not extend file: No space left on device";
    ck_assert_int_eq(qrt_db_busy_or_full(&db), 1);
    db.error = "ERROR: 55P03: canceling statement due to lock timeout";
    ck_assert_int_eq(qrt_db_busy_or_full(&db), 1);
    ck_assert_int_eq(qrt_db_retryable(&db), 0);
    ck_assert_int_eq(qrt_db_locked(&db), 1);
    /* SQLite's lock held by another program past the busy wait */
    db.error = "begin: database is locked";
    ck_assert_int_eq(qrt_db_locked(&db), 1);
    ck_assert_int_eq(qrt_db_refuses_writes(&db), 0);
    db.error = "ERROR: 40P01: deadlock detected";
    ck_assert_int_eq(qrt_db_busy_or_full(&db), 0);
    ck_assert_int_eq(qrt_db_retryable(&db), 1);
    db.error = "FATAL: 57P01: terminating connection due to administrator command";
    ck_assert_int_eq(qrt_db_lost(&db), 1);
    ck_assert_int_eq(qrt_db_busy_or_full(&db), 0);
    /* a session ended by the server's idle timeouts */
    db.error = "begin: FATAL:  57P05: terminating connection due to idle-session timeout";
    ck_assert_int_eq(qrt_db_lost(&db), 1);
    db.error = "FATAL:  25P03: terminating connection due to idle-in-transaction timeout";
    ck_assert_int_eq(qrt_db_lost(&db), 1);
    db.error = "ERROR: 23505: duplicate key value violates unique constraint";
    ck_assert_int_eq(qrt_db_busy_or_full(&db), 0);
    ck_assert_int_eq(qrt_db_lost(&db), 0);
    ck_assert_int_eq(qrt_db_read_only(&db), 0);
    /* a hot standby, default_transaction_read_only; SQLite's read-only file */
    db.error = "visit_add_many: ERROR:  25006: cannot execute INSERT in a read-only "
               "transaction";
    ck_assert_int_eq(qrt_db_read_only(&db), 1);
    ck_assert_int_eq(qrt_db_lost(&db), 0);
    ck_assert_int_eq(qrt_db_busy_or_full(&db), 0);
    ck_assert_int_eq(qrt_db_refuses_writes(&db), 1);
    db.error = "attempt to write a readonly database";
    ck_assert_int_eq(qrt_db_read_only(&db), 1);
    ck_assert_int_eq(qrt_db_refuses_writes(&db), 1);
    /* PostgreSQL's full disk refuses writes (the spool is elsewhere), SQLite's is busy */
    db.error = "ERROR: 53100: could not extend file: No space left on device";
    ck_assert_int_eq(qrt_db_refuses_writes(&db), 1);
    ck_assert_int_eq(qrt_db_read_only(&db), 0);
    db.error = "database or disk is full";
    ck_assert_int_eq(qrt_db_refuses_writes(&db), 0);
    ck_assert_int_eq(qrt_db_locked(&db), 0);
    db.error = "FATAL: 57P01: terminating connection due to administrator command";
    ck_assert_int_eq(qrt_db_refuses_writes(&db), 0);
    db.error = NULL;
    ck_assert_int_eq(qrt_db_read_only(&db), 0);
    ck_assert_int_eq(qrt_db_refuses_writes(&db), 0);
    ck_assert_int_eq(qrt_db_locked(&db), 0);
}
END_TEST

/* SQLite's form of a statement for n rows: its list of values repeated, whatever
 * the list holds, and an INSERT's conflicts other than its upsert's failing the
 * statement without undoing its earlier rows (no statement journal); none without
 * a list. */
START_TEST(sql_of_many_rows)
{
    ck_assert_str_eq(qrt_db_sql_rows(pool, "INSERT INTO t (a, b) VALUES (%lld, %d)", 1),
                     "INSERT INTO t (a, b) VALUES (%lld, %d)");
    ck_assert_str_eq(qrt_db_sql_rows(pool, "INSERT INTO t (a, b) VALUES (%lld, %d) "
                                     "ON CONFLICT (a) DO UPDATE SET b = b + excluded.b", 3),
                     "INSERT OR FAIL INTO t (a, b) VALUES (%lld, %d), (%lld, %d), (%lld, %d) "
                     "ON CONFLICT (a) DO UPDATE SET b = b + excluded.b");
    /* parentheses and quoted ones inside the list */
    ck_assert_str_eq(qrt_db_sql_rows(pool, "INSERT INTO t (a) VALUES "
                                     "(COALESCE(%s, ')('), (1))", 2),
                     "INSERT OR FAIL INTO t (a) VALUES (COALESCE(%s, ')('), (1)), "
                     "(COALESCE(%s, ')('), (1))");
    ck_assert_ptr_null(qrt_db_sql_rows(pool, "UPDATE t SET a = %lld", 2));
    ck_assert_ptr_null(qrt_db_sql_rows(pool, "INSERT INTO t (a) VALUES (%s", 2));
    ck_assert_ptr_null(qrt_db_sql_rows(pool, "INSERT INTO t (a) VALUES ('%s)", 2));
    ck_assert_ptr_null(qrt_db_sql_rows(pool, "INSERT INTO t (a) VALUES (%s)", 0));
}
END_TEST

/* A database of the test's own (qrt_check_db_temp), with account 1 and its tracker 1
 * (code c1): its directory. */
static const char *store_db_open(qrt_db_t *db)
{
    const char *dir = qrt_check_db_temp(pool, "store", db);

    qrt_check_db_exec(db, "INSERT INTO accounts (name, plan, created_at) "
                          "VALUES ('a', 'free', 0)");
    qrt_check_db_exec(db, "INSERT INTO trackers (account_id, code, name, type, redirect_url, "
                          "created_at, updated_at) VALUES (1, 'c1', 't', 'website', "
                          "'https://e.example/', 0, 0)");
    return dir;
}

/* A database of the test's own (store_db_open) whose connection's busy timeout is 30 ms,
 * locked by another connection's open BEGIN IMMEDIATE (*locker; ended by the caller):
 * lock_wait_ms is set to 50 ms. */
static void store_db_locked(qrt_db_t *db, sqlite3 **locker)
{
    const char *dir = store_db_open(db);

    db->busy_ms = 30;
    sqlite3_busy_timeout(apr_dbd_native_handle(db->driver, db->handle), db->busy_ms);
    ck_assert_int_eq(sqlite3_open(apr_pstrcat(pool, dir, "/t.db", NULL), locker), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(*locker, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    db->lock_wait_ms = 50;
    db->error = NULL;
}

/* SQLite: a transaction begun with lock_wait_ms waits that long for a lock another
 * program holds, once, then fails as locked (the writers' idle work under their mutex);
 * the connection's busy timeout is its own again afterwards, and without lock_wait_ms a
 * begin waits through QRT_SQLITE_TRIES tries. */
START_TEST(sqlite_begin_waits_lock_wait_ms_once)
{
    apr_dbd_transaction_t *tx;
    sqlite3 *locker;
    apr_time_t t0;
    double secs;
    qrt_db_t db;

    store_db_locked(&db, &locker);
    t0 = apr_time_now();
    ck_assert_int_ne(qrt_db_begin(&db, pool, &tx), APR_SUCCESS);
    secs = (double)(apr_time_now() - t0) / APR_USEC_PER_SEC;
    ck_assert_msg(secs >= 0.04 && secs < 0.5, "waited %.3f s", secs);
    ck_assert_ptr_nonnull(db.error);
    ck_assert_int_eq(qrt_db_locked(&db), 1);
    /* (the connection's own busy timeout is back: as long as before, not 50 ms) */
    db.lock_wait_ms = 0;
    db.error = NULL;
    t0 = apr_time_now();
    ck_assert_int_ne(qrt_db_begin(&db, pool, &tx), APR_SUCCESS);
    secs = (double)(apr_time_now() - t0) / APR_USEC_PER_SEC;
    ck_assert_msg(secs >= (QRT_SQLITE_TRIES - 1) * 0.1, "waited %.3f s", secs);
    sqlite3_exec(locker, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(locker);
    db.lock_wait_ms = 50;
    ck_assert_int_eq(qrt_db_begin(&db, pool, &tx), APR_SUCCESS);
    ck_assert_int_eq(qrt_db_end(&db, pool, tx), APR_SUCCESS);
    apr_dbd_close(db.driver, db.handle);
}
END_TEST

/* SQLite: a statement outside a transaction, with lock_wait_ms, waits that long for a lock
 * another program holds, once, then fails as locked (the purge's single statements under
 * the writers' mutex); without lock_wait_ms it waits through QRT_SQLITE_TRIES tries, and
 * the connection's busy timeout is its own again in between. */
START_TEST(sqlite_statement_waits_lock_wait_ms_once)
{
    apr_int64_t now = 5, id = 1;
    const void *args[] = { "t2", "https://e.example/2", &now, &id };
    sqlite3 *locker;
    apr_time_t t0;
    double secs;
    qrt_db_t db;
    int n = 0;

    store_db_locked(&db, &locker);
    t0 = apr_time_now();
    ck_assert_int_ne(qrt_db_exec(&db, pool, SQL_tracker_update, &n, args), APR_SUCCESS);
    secs = (double)(apr_time_now() - t0) / APR_USEC_PER_SEC;
    ck_assert_msg(secs >= 0.04 && secs < 0.5, "waited %.3f s", secs);
    ck_assert_int_eq(qrt_db_locked(&db), 1);
    db.lock_wait_ms = 0;
    db.error = NULL;
    t0 = apr_time_now();
    ck_assert_int_ne(qrt_db_exec(&db, pool, SQL_tracker_update, &n, args), APR_SUCCESS);
    secs = (double)(apr_time_now() - t0) / APR_USEC_PER_SEC;
    ck_assert_msg(secs >= (QRT_SQLITE_TRIES - 1) * 0.1, "waited %.3f s", secs);
    sqlite3_exec(locker, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(locker);
    db.lock_wait_ms = 50;
    db.error = NULL;
    ck_assert_int_eq(qrt_db_exec(&db, pool, SQL_tracker_update, &n, args), APR_SUCCESS);
    ck_assert_int_eq(n, 1);
    apr_dbd_close(db.driver, db.handle);
}
END_TEST

/* Visits recorded on SQLite in batches of every size around the statements' sizes
 * (1 to QRT_DB_ROWS_MAX rows each), each batch in a pool of its own that is gone
 * before the next: every row is there once, with its own values, in id order. */
START_TEST(many_rows_on_sqlite)
{
    static const int sizes[] = { 1, 2, 3, 7, 15, 16, 31, 32, 33, 64, 70, 1, 5 };
    const char *dir;
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    qrt_db_t db;
    int b, i, n = 0;

    dir = store_db_open(&db);
    for (b = 0; b < (int)(sizeof(sizes) / sizeof(sizes[0])); b++) {
        apr_pool_t *bp;
        apr_dbd_transaction_t *tx;
        qrt_visit_t *v;

        apr_pool_create(&bp, pool);
        v = apr_pcalloc(bp, (apr_size_t)sizes[b] * sizeof(*v));
        for (i = 0; i < sizes[b]; i++, n++) {
            /* visit n: its time, source, bot flag and visitor tell it apart */
            v[i].tracker_id = 1;
            v[i].visit_start = 1000 + n;
            v[i].source = n % 3 ? "scan" : "click";
            v[i].bot = n % 5 == 4;
            v[i].visitor = 7000 + n;
            v[i].ip = n % 2 ? "192.0.2.0" : NULL;
            v[i].user_agent = apr_psprintf(bp, "Agent/%d", n % 4);
            v[i].device = "mobile";
        }
        ck_assert_int_eq(qrt_db_begin(&db, bp, &tx), APR_SUCCESS);
        ck_assert_msg(qrt_store_visits_record(&db, bp, v, sizes[b]) == APR_SUCCESS, "%s",
                      db.error);
        ck_assert_int_eq(qrt_db_end(&db, bp, tx), APR_SUCCESS);
        apr_pool_destroy(bp);
    }
    ck_assert_int_eq(apr_dbd_select(db.driver, pool, db.handle, &res,
                                    "SELECT id, visit_start, click, bot, visitor, "
                                    "ip_id IS NULL FROM visit_rows ORDER BY id", 0), 0);
    for (i = 0; apr_dbd_get_row(db.driver, pool, res, &row, -1) == 0; i++) {
        ck_assert_int_eq(atoll(apr_dbd_get_entry(db.driver, row, 0)), i + 1);
        ck_assert_int_eq(atoll(apr_dbd_get_entry(db.driver, row, 1)), 1000 + i);
        ck_assert_int_eq(atoi(apr_dbd_get_entry(db.driver, row, 2)), i % 3 == 0);
        ck_assert_int_eq(atoi(apr_dbd_get_entry(db.driver, row, 3)), i % 5 == 4);
        ck_assert_int_eq(atoll(apr_dbd_get_entry(db.driver, row, 4)), 7000 + i);
        ck_assert_int_eq(atoi(apr_dbd_get_entry(db.driver, row, 5)), i % 2 == 0);
    }
    ck_assert_int_eq(i, n);
    qrt_check_db_remove(pool, &db, dir);
}
END_TEST

/* A tracker's row as qrt_db_each hands it over on SQLite: integers as integers and as
 * text, strings, an SQL NULL, a column past the last; the same statement run again
 * from inside its own callback, the outer row readable after it. */
typedef struct {
    int depth, rows;
} native_ctx;

static apr_status_t native_row_check(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    native_ctx *c = ctx;
    apr_int64_t id = 1;
    const void *args[] = { &id };

    c->rows++;
    ck_assert_int_eq(qrt_db_int(db, row, 0, -1), 1);
    ck_assert_str_eq(qrt_db_str(db, row, 0), "1");
    ck_assert_str_eq(qrt_db_str(db, row, 2), "c1");
    ck_assert_int_eq(qrt_db_int(db, row, 2, -1), 0);          /* text: as atoi */
    ck_assert_str_eq(qrt_db_str(db, row, 5), "https://e.example/");
    ck_assert_ptr_null(qrt_db_str(db, row, 12));               /* last_visit: NULL */
    ck_assert_int_eq(qrt_db_int(db, row, 12, -5), -5);
    ck_assert_ptr_null(qrt_db_str(db, row, 13));
    ck_assert_int_eq(qrt_db_int(db, row, 13, -7), -7);
    if (c->depth++ == 0) {
        ck_assert_int_eq(qrt_db_each(db, pool, SQL_tracker_get, args, native_row_check,
                                     c), APR_SUCCESS);
        /* (the outer row again, after the inner one) */
        ck_assert_str_eq(qrt_db_str(db, row, 2), "c1");
        ck_assert_int_eq(qrt_db_int(db, row, 1, -1), 1);
    }
    return APR_SUCCESS;
}

START_TEST(native_rows_on_sqlite)
{
    const char *dir;
    apr_int64_t id = 1, none = 99, v = -1;
    const void *args[] = { &id }, *nargs[] = { &none };
    native_ctx c = { 0, 0 };
    sqlite3 *other;
    qrt_db_t db;

    dir = store_db_open(&db);
    ck_assert_int_eq(qrt_db_each(&db, pool, SQL_tracker_get, args, native_row_check, &c),
                     APR_SUCCESS);
    ck_assert_int_eq(c.rows, 2);
    c.rows = 0;
    ck_assert_int_eq(qrt_db_each(&db, pool, SQL_tracker_get, nargs, native_row_check, &c),
                     APR_SUCCESS);
    ck_assert_int_eq(c.rows, 0);
    ck_assert_int_eq(qrt_db_select_int(&db, pool, SQL_tracker_count, args, &v),
                     APR_SUCCESS);
    ck_assert_int_eq(v, 1);
    ck_assert_int_eq(qrt_db_select_int(&db, pool, SQL_tracker_get, nargs, &v), APR_SUCCESS);
    ck_assert_int_eq(v, 0);                                    /* no row */

    /* The schema changed by another connection: the statement, prepared before, is
     * prepared again by SQLite (qrt_dialect_sqlite_renew; apr_dbd's own, the legacy
     * kind, failed for good). */
    ck_assert_int_eq(sqlite3_open(apr_pstrcat(pool, dir, "/t.db", NULL), &other), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(other, "CREATE TABLE zz (x INTEGER)", NULL, NULL, NULL),
                     SQLITE_OK);
    c.rows = c.depth = 0;
    ck_assert_int_eq(qrt_db_each(&db, pool, SQL_tracker_get, args, native_row_check, &c),
                     APR_SUCCESS);
    ck_assert_int_eq(c.rows, 2);
    /* A statement that fails (the table it reads dropped by another connection): the
     * error, with the statement's label and SQLite's message, as apr_dbd's path gives
     * it. */
    ck_assert_int_eq(sqlite3_exec(other, "PRAGMA foreign_keys = OFF; DROP TABLE trackers",
                                  NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(other);
    db.error = NULL;
    ck_assert_int_eq(qrt_db_each(&db, pool, SQL_tracker_get, args, native_row_check, &c),
                     APR_EGENERAL);
    ck_assert_ptr_nonnull(db.error);
    ck_assert_msg(!strncmp(db.error, SQL_tracker_get ": ", 13)
                  && strstr(db.error, "no such table"), "%s", db.error);
    qrt_check_db_remove(pool, &db, dir);
}
END_TEST

static apr_int64_t keys_kept(qrt_db_t *db)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_int64_t n = -1;

    ck_assert_int_eq(apr_dbd_select(db->driver, pool, db->handle, &res,
                                    "SELECT COUNT(*) FROM idempotency_keys", 0), 0);
    while (apr_dbd_get_row(db->driver, pool, res, &row, -1) == 0) {
        n = apr_atoi64(apr_dbd_get_entry(db->driver, row, 0));
    }
    return n;
}

static apr_status_t keep(qrt_db_t *db, apr_pool_t *p, const char *key)
{
    qrt_idem_t a = { "h", 200, "application/json", "{}", 0 };

    return qrt_store_idem_add(db, p, 7, key, &a);
}

/* SQLite's own transactions (qrt_db_begin without apr_dbd): committed; rolled back when
 * asked; after a statement that failed, the statements after it fail and the end
 * rolls everything back (as apr_dbd's transactions); a pool gone before the end rolls
 * it back and leaves the connection out of any transaction; a write outside one
 * commits at once; BEGIN waits for another connection's lock as apr_dbd would. */
START_TEST(native_transactions_on_sqlite)
{
    const char *dir;
    apr_dbd_transaction_t *tx = NULL;
    apr_pool_t *sp;
    apr_time_t started;
    sqlite3 *other;
    qrt_db_t db;

    dir = store_db_open(&db);
    ck_assert_int_eq(qrt_db_begin(&db, pool, &tx), APR_SUCCESS);
    ck_assert_ptr_nonnull(tx);             /* callers test it to know one is open */
    ck_assert_int_eq(keep(&db, pool, "a"), APR_SUCCESS);
    ck_assert_int_eq(qrt_db_end(&db, pool, tx), APR_SUCCESS);
    ck_assert_int_eq(keys_kept(&db), 1);

    ck_assert_int_eq(qrt_db_begin(&db, pool, &tx), APR_SUCCESS);
    ck_assert_int_eq(keep(&db, pool, "b"), APR_SUCCESS);
    qrt_db_rollback_only(&db, tx);
    ck_assert_int_eq(qrt_db_end(&db, pool, tx), APR_SUCCESS);
    ck_assert_int_eq(keys_kept(&db), 1);

    ck_assert_int_eq(qrt_db_begin(&db, pool, &tx), APR_SUCCESS);
    ck_assert_int_eq(keep(&db, pool, "c"), APR_SUCCESS);
    ck_assert_int_eq(keep(&db, pool, "a"), APR_EGENERAL);
    ck_assert(qrt_store_unique_violation(&db, SQL_idem_add));
    ck_assert_int_eq(keep(&db, pool, "d"), APR_EGENERAL);
    ck_assert_ptr_nonnull(strstr(db.error, "a statement before it"));
    ck_assert_int_eq(qrt_db_end(&db, pool, tx), APR_SUCCESS);
    ck_assert_int_eq(keys_kept(&db), 1);
    ck_assert(sqlite3_get_autocommit(apr_dbd_native_handle(db.driver, db.handle)));

    apr_pool_create(&sp, pool);
    ck_assert_int_eq(qrt_db_begin(&db, sp, &tx), APR_SUCCESS);
    ck_assert_int_eq(keep(&db, sp, "e"), APR_SUCCESS);
    apr_pool_destroy(sp);
    ck_assert_int_eq(db.in_tx, 0);
    ck_assert(sqlite3_get_autocommit(apr_dbd_native_handle(db.driver, db.handle)));
    ck_assert_int_eq(keys_kept(&db), 1);

    ck_assert_int_eq(keep(&db, pool, "f"), APR_SUCCESS);
    ck_assert_int_eq(keys_kept(&db), 2);

    /* Another connection holds the lock: BEGIN waits (the busy handler, then 16 more
     * tries 100 ms apart) and fails, saying so; once it goes, BEGIN gets it. */
    ck_assert_int_eq(sqlite3_open(apr_pstrcat(pool, dir, "/t.db", NULL), &other), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_busy_timeout(apr_dbd_native_handle(db.driver, db.handle), 10);
    started = apr_time_now();
    ck_assert_int_eq(qrt_db_begin(&db, pool, &tx), APR_EGENERAL);
    ck_assert_int_ge(apr_time_now() - started, apr_time_from_msec(1500));
    ck_assert_ptr_nonnull(strstr(db.error, "locked"));
    ck_assert_int_eq(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(other);
    ck_assert_int_eq(qrt_db_begin(&db, pool, &tx), APR_SUCCESS);
    ck_assert_int_eq(qrt_db_end(&db, pool, tx), APR_SUCCESS);
    qrt_check_db_remove(pool, &db, dir);
}
END_TEST

/* A reader's snapshot (qrt_db_snapshot_begin): another connection's commits after its
 * first read are not seen until it ends; its end, or its pool's, leaves the connection
 * out of any transaction; inside qrt_db_begin it adds nothing. */
START_TEST(snapshot_reads_one_state_on_sqlite)
{
    const char *dir;
    apr_dbd_transaction_t *tx = NULL;
    apr_pool_t *sp;
    sqlite3 *other, *h;
    qrt_db_t db;

    dir = store_db_open(&db);
    h = apr_dbd_native_handle(db.driver, db.handle);
    ck_assert_int_eq(sqlite3_exec(h, "PRAGMA journal_mode = WAL", NULL, NULL, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_open(apr_pstrcat(pool, dir, "/t.db", NULL), &other), SQLITE_OK);
    ck_assert_int_eq(keep(&db, pool, "a"), APR_SUCCESS);

    ck_assert_int_eq(qrt_db_snapshot_begin(&db, pool), APR_SUCCESS);
    ck_assert_int_eq(keys_kept(&db), 1);
    ck_assert_int_eq(sqlite3_exec(other, "INSERT INTO idempotency_keys SELECT token_id, "
                                  "'b', request_hash, status, content_type, body, tracker_id, "
                                  "created_at FROM idempotency_keys", NULL, NULL, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(keys_kept(&db), 1);        /* the state of its first read */
    qrt_db_snapshot_end(&db);
    ck_assert(sqlite3_get_autocommit(h));
    ck_assert_int_eq(keys_kept(&db), 2);
    qrt_db_snapshot_end(&db);                   /* (nothing open: nothing done) */

    apr_pool_create(&sp, pool);
    ck_assert_int_eq(qrt_db_snapshot_begin(&db, sp), APR_SUCCESS);
    ck_assert_int_eq(keys_kept(&db), 2);
    ck_assert(!sqlite3_get_autocommit(h));
    apr_pool_destroy(sp);
    ck_assert(sqlite3_get_autocommit(h));
    ck_assert_ptr_null(db.snapshot_pool);

    ck_assert_int_eq(qrt_db_begin(&db, pool, &tx), APR_SUCCESS);
    ck_assert_int_eq(qrt_db_snapshot_begin(&db, pool), APR_SUCCESS);
    ck_assert_ptr_null(db.snapshot_pool);
    ck_assert_int_eq(keep(&db, pool, "c"), APR_SUCCESS);
    ck_assert_int_eq(qrt_db_end(&db, pool, tx), APR_SUCCESS);
    ck_assert_int_eq(keys_kept(&db), 3);
    sqlite3_close(other);
    qrt_check_db_remove(pool, &db, dir);
}
END_TEST

/* n capped visits of tracker 1, each counted against its cap. */
static void capped_visits(qrt_visit_t *v, int n)
{
    int i;

    memset(v, 0, sizeof(*v) * (size_t)n);
    for (i = 0; i < n; i++) {
        v[i].tracker_id = 1;
        v[i].capped = QRT_VISIT_CAP_COUNT;
        v[i].destination = "https://e.example/";
        v[i].over_destination = "https://over.example/";
    }
}

/* tracker_routing's one row's count of the scans sent on. */
static apr_int64_t capped_redirected(qrt_db_t *db)
{
    return qrt_check_db_int(pool, db, "SELECT redirected FROM tracker_routing");
}

/* max_scans decided in the writer's transaction (qrt_store_visits_cap): the batch's
 * second scan is over a cap of 1 and records the over-the-cap destination; that attempt
 * is rolled back and the batch committed again without the first scan (answered 503
 * meanwhile): the second scan is under the cap now and records its own destination. */
START_TEST(capped_visits_decided_again_after_a_rollback)
{
    const char *dir;
    qrt_db_t db;
    qrt_visit_t v[2];
    apr_dbd_transaction_t *tx;

    dir = store_db_open(&db);
    qrt_check_db_exec(&db, "INSERT INTO tracker_routing (tracker_id, max_scans, expired_url) "
                           "VALUES (1, 1, 'https://over.example/')");
    capped_visits(v, 2);
    ck_assert_int_eq(qrt_db_begin(&db, pool, &tx), APR_SUCCESS);
    ck_assert_int_eq(qrt_store_visits_cap(&db, pool, v, 2), APR_SUCCESS);
    ck_assert_int_eq(v[0].cap_outcome, QRT_VISIT_CAP_SENT);
    ck_assert_str_eq(v[0].destination, "https://e.example/");
    ck_assert_int_eq(v[1].cap_outcome, QRT_VISIT_CAP_OVER);
    ck_assert_str_eq(v[1].destination, "https://over.example/");
    qrt_db_rollback_only(&db, tx);
    ck_assert_int_eq(qrt_db_end(&db, pool, tx), APR_SUCCESS);

    ck_assert_int_eq(qrt_db_begin(&db, pool, &tx), APR_SUCCESS);
    ck_assert_int_eq(qrt_store_visits_cap(&db, pool, v + 1, 1), APR_SUCCESS);
    ck_assert_int_eq(v[1].cap_outcome, QRT_VISIT_CAP_SENT);
    ck_assert_str_eq(v[1].destination, "https://e.example/");
    ck_assert_str_eq(v[1].over_destination, "https://over.example/");
    ck_assert_int_eq(qrt_db_end(&db, pool, tx), APR_SUCCESS);
    ck_assert_int_eq(capped_redirected(&db), 1);
    qrt_check_db_remove(pool, &db, dir);
}
END_TEST

/* A node whose cache still holds a cap just removed (max_scans null in the database)
 * sends its capped scans through qrt_store_visits_cap: they go on and are not counted,
 * as the node that removed it counts none, so that a cap set again later counts the
 * same whichever node took them. */
START_TEST(capped_visits_of_a_cap_removed_meanwhile_are_not_counted)
{
    const char *dir;
    qrt_db_t db;
    qrt_visit_t v[3];
    apr_dbd_transaction_t *tx;
    int i;

    dir = store_db_open(&db);
    qrt_check_db_exec(&db, "INSERT INTO tracker_routing (tracker_id, max_scans, expired_url, "
                           "redirected) VALUES (1, NULL, 'https://over.example/', 20)");
    capped_visits(v, 3);
    ck_assert_int_eq(qrt_db_begin(&db, pool, &tx), APR_SUCCESS);
    ck_assert_int_eq(qrt_store_visits_cap(&db, pool, v, 3), APR_SUCCESS);
    for (i = 0; i < 3; i++) {
        ck_assert_int_eq(v[i].cap_outcome, QRT_VISIT_CAP_SENT);
        ck_assert_str_eq(v[i].destination, "https://e.example/");
    }
    ck_assert_int_eq(qrt_db_end(&db, pool, tx), APR_SUCCESS);
    ck_assert_int_eq(capped_redirected(&db), 20);
    qrt_check_db_remove(pool, &db, dir);
}
END_TEST

/* The scan writer's check (qrt_store_visits_record_ids with gone): a batch with visits
 * of a deleted tracker and of a tracker whose row is gone records nothing, names both
 * (once each) and asks to be run again; the same batch without them is recorded. */
START_TEST(visits_of_deleted_trackers_are_named_not_recorded)
{
    const char *dir;
    qrt_db_t db;
    qrt_visit_t v[5];
    apr_dbd_transaction_t *tx;
    apr_array_header_t *gone = apr_array_make(pool, 1, sizeof(apr_int64_t));
    apr_int64_t ids[5], named[2];
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    int i;

    dir = store_db_open(&db);       /* (account 1, tracker 1) */
    qrt_check_db_exec(&db, "INSERT INTO trackers (account_id, code, name, type, redirect_url, "
                           "created_at, updated_at) VALUES (1, 'c2', 'n', 'website', "
                           "'https://e.example/', 0, 0)");
    qrt_check_db_exec(&db, "UPDATE trackers SET deleted_at = 5 WHERE id = 2");
    memset(v, 0, sizeof(v));
    for (i = 0; i < 5; i++) {
        /* trackers 1, 2 (deleted), 1, 9 (no such row), 2 */
        static const apr_int64_t t[] = { 1, 2, 1, 9, 2 };

        v[i].tracker_id = t[i];
        v[i].visit_start = 1000 + i;
        v[i].source = "scan";
        v[i].ip = "203.0.113.1";
        v[i].user_agent = "UA";
        v[i].device = "mobile";
        v[i].visitor = 7;
        v[i].destination = "https://e.example/";
    }
    ck_assert_int_eq(qrt_db_begin(&db, pool, &tx), APR_SUCCESS);
    ck_assert_int_eq(qrt_store_visits_record_ids(&db, pool, v, 5, ids, gone), APR_EAGAIN);
    ck_assert_int_eq(db.again, 1);
    ck_assert(qrt_db_retryable(&db));
    qrt_db_rollback_only(&db, tx);
    qrt_db_end(&db, pool, tx);
    ck_assert_int_eq(gone->nelts, 2);
    named[0] = APR_ARRAY_IDX(gone, 0, apr_int64_t);
    named[1] = APR_ARRAY_IDX(gone, 1, apr_int64_t);
    ck_assert(named[0] == 2 || named[0] == 9);
    ck_assert(named[1] == 2 || named[1] == 9);
    ck_assert(named[0] != named[1]);

    /* without them: recorded, and nothing more named */
    db.again = 0;
    db.error = NULL;
    v[1] = v[2];
    apr_array_clear(gone);
    ck_assert_int_eq(qrt_db_begin(&db, pool, &tx), APR_SUCCESS);
    ck_assert_int_eq(qrt_store_visits_record_ids(&db, pool, v, 2, ids, gone), APR_SUCCESS);
    ck_assert_int_eq(qrt_db_end(&db, pool, tx), APR_SUCCESS);
    ck_assert_int_eq(gone->nelts, 0);
    ck_assert_int_eq(apr_dbd_select(db.driver, pool, db.handle, &res,
                                    "SELECT COUNT(*), MIN(tracker_id), MAX(tracker_id) "
                                    "FROM visits", 0), 0);
    ck_assert_int_eq(apr_dbd_get_row(db.driver, pool, res, &row, -1), 0);
    ck_assert_int_eq(atoll(apr_dbd_get_entry(db.driver, row, 0)), 2);
    ck_assert_int_eq(atoll(apr_dbd_get_entry(db.driver, row, 1)), 1);
    ck_assert_int_eq(atoll(apr_dbd_get_entry(db.driver, row, 2)), 1);
    while (apr_dbd_get_row(db.driver, pool, res, &row, -1) == 0) {
    }
    qrt_check_db_remove(pool, &db, dir);
}
END_TEST

static Suite *store_suite(void)
{
    Suite *s = suite_create("store");
    TCase *tc = tcase_create("array");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, array_of_numbers);
    tcase_add_test(tc, rows_refused_for_good);
    tcase_add_test(tc, array_of_numbers_every_width);
    tcase_add_test(tc, array_of_strings);
    tcase_add_test(tc, array_of_long_strings);
    tcase_add_test(tc, error_classes);
    tcase_add_test(tc, sql_of_many_rows);
    tcase_add_test(tc, many_rows_on_sqlite);
    tcase_add_test(tc, sqlite_begin_waits_lock_wait_ms_once);
    tcase_add_test(tc, sqlite_statement_waits_lock_wait_ms_once);
    tcase_add_test(tc, native_rows_on_sqlite);
    tcase_add_test(tc, native_transactions_on_sqlite);
    tcase_add_test(tc, snapshot_reads_one_state_on_sqlite);
    tcase_add_test(tc, capped_visits_decided_again_after_a_rollback);
    tcase_add_test(tc, capped_visits_of_a_cap_removed_meanwhile_are_not_counted);
    tcase_add_test(tc, visits_of_deleted_trackers_are_named_not_recorded);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(store_suite());
}
