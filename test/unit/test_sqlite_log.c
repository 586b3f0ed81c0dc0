/* qrt_dialect_sqlite_log: SQLite's own line on a damaged database reaches the hook, with
 * the check that failed; an ordinary error (a missing table) does not; no hook, no call. */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sqlite3.h>

#include "qrt_check.h"
#include "qrt_dialect.h"

static int said_n, said_code, said_where;

/* (SQLite says where the check failed, then which statement it aborted) */
static void hook(int code, const char *msg)
{
    said_n++;
    said_code = code;
    said_where += strstr(msg, "database corruption at line ") != NULL;
}

static void exec_ok(sqlite3 *h, const char *sql)
{
    char *err = NULL;

    ck_assert_msg(sqlite3_exec(h, sql, NULL, NULL, &err) == SQLITE_OK, "%s: %s", sql,
                  err ? err : "");
}

/* A database of one table over some pages, made in dir; its path. */
static const char *made_db(char *path, size_t len)
{
    char dir[] = "/tmp/qrt-sqlite-log-XXXXXX";
    sqlite3 *h;
    int i;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, len, "%s/t.db", dir);
    ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
    exec_ok(h, "PRAGMA page_size = 4096; CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT)");
    exec_ok(h, "BEGIN");
    for (i = 0; i < 400; i++) {
        exec_ok(h, "INSERT INTO t (b) VALUES (printf('%0100d', random()))");
    }
    exec_ok(h, "COMMIT");
    ck_assert_int_eq(sqlite3_close(h), SQLITE_OK);
    return path;
}

START_TEST(a_damaged_page_is_said_with_its_check)
{
    char path[128], junk[4096];
    sqlite3 *h;
    int fd, rc;

    qrt_dialect_sqlite_tune(1);
    qrt_dialect_sqlite_log(hook);
    made_db(path, sizeof(path));
    /* a missing table: SQLite's error, not a damage */
    ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
    ck_assert_int_ne(sqlite3_exec(h, "SELECT * FROM nosuch", NULL, NULL, NULL), SQLITE_OK);
    ck_assert_int_eq(said_n, 0);
    ck_assert_int_eq(sqlite3_close(h), SQLITE_OK);
    /* the table's pages past the first two overwritten */
    memset(junk, 0xA5, sizeof(junk));
    fd = open(path, O_WRONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, junk, sizeof(junk), 2 * 4096), (ssize_t)sizeof(junk));
    ck_assert_int_eq(pwrite(fd, junk, sizeof(junk), 3 * 4096), (ssize_t)sizeof(junk));
    close(fd);
    ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
    rc = sqlite3_exec(h, "SELECT sum(length(b)) FROM t", NULL, NULL, NULL);
    ck_assert_int_eq(rc & 0xff, SQLITE_CORRUPT);
    ck_assert_int_ge(said_n, 1);
    ck_assert_int_eq(said_code & 0xff, SQLITE_CORRUPT);
    ck_assert_int_ge(said_where, 1);
    /* no hook: nothing said */
    said_n = 0;
    qrt_dialect_sqlite_log(NULL);
    rc = sqlite3_exec(h, "SELECT sum(length(b)) FROM t", NULL, NULL, NULL);
    ck_assert_int_eq(rc & 0xff, SQLITE_CORRUPT);
    ck_assert_int_eq(said_n, 0);
    sqlite3_close(h);
}
END_TEST

static Suite *sqlite_log_suite(void)
{
    Suite *s = suite_create("qrt_dialect_sqlite_log");
    TCase *tc = tcase_create("log");

    tcase_add_test(tc, a_damaged_page_is_said_with_its_check);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(sqlite_log_suite());
}
