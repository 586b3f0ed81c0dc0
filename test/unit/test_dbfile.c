/* Unit tests for qrt_dbfile: an SQLite database, its -wal and -shm files private to
 * the server's user and group (0640), whatever the umask. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>
#include <sqlite3.h>
#include <apr_general.h>
#include <apr_strings.h>

#include "qrt_dbfile.h"
#include "qrt_check.h"

QRT_CHECK_POOL

static char dir[64];

static void dir_setup(void)
{
    setup();
    strcpy(dir, "/tmp/qrt-dbfile-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void dir_teardown(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    teardown();
}

static int mode_of(const char *path)
{
    struct stat st;

    ck_assert_msg(stat(path, &st) == 0, "no %s", path);
    return (int)(st.st_mode & 07777);
}

/* Under umask 000, a database created through qrt_dbfile_private, then opened by
 * SQLite in WAL mode: all three files 0640. */
START_TEST(new_database_under_umask_000)
{
    const char *db = apr_pstrcat(pool, dir, "/q.db", NULL);
    sqlite3 *h;

    umask(0);
    ck_assert_int_eq(qrt_dbfile_private(db), 0);
    ck_assert_int_eq(mode_of(db), 0640);
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(h, "PRAGMA journal_mode=WAL; CREATE TABLE t(x);"
                                  "INSERT INTO t VALUES (1);", NULL, NULL, NULL), SQLITE_OK);
    ck_assert_int_eq(mode_of(db), 0640);
    ck_assert_int_eq(mode_of(apr_pstrcat(pool, db, "-wal", NULL)), 0640);
    ck_assert_int_eq(mode_of(apr_pstrcat(pool, db, "-shm", NULL)), 0640);
    sqlite3_close(h);
    /* without it, SQLite would have made it 0644 (the case this is about) */
    {
        const char *plain = apr_pstrcat(pool, dir, "/plain.db", NULL);

        ck_assert_int_eq(sqlite3_open(plain, &h), SQLITE_OK);
        ck_assert_int_eq(sqlite3_exec(h, "CREATE TABLE t(x);", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(h);
        ck_assert_int_ne(mode_of(plain), 0640);
    }
}
END_TEST

/* Files from before: made private, their contents kept; a stricter mode stays. */
START_TEST(existing_files_lose_what_others_could_read)
{
    static const char *const suffix[] = { "", "-wal", "-shm" };
    const char *db = apr_pstrcat(pool, dir, "/old.db", NULL);
    char buf[8];
    int i, fd;

    umask(0);
    for (i = 0; i < 3; i++) {
        fd = open(apr_pstrcat(pool, db, suffix[i], NULL), O_WRONLY | O_CREAT, 0666);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, "data", 4), 4);
        close(fd);
    }
    ck_assert_int_eq(qrt_dbfile_private(db), 0);
    for (i = 0; i < 3; i++) {
        const char *f = apr_pstrcat(pool, db, suffix[i], NULL);

        ck_assert_int_eq(mode_of(f), 0640);
        fd = open(f, O_RDONLY);
        ck_assert_int_eq(read(fd, buf, sizeof(buf)), 4);
        close(fd);
    }
    ck_assert_int_eq(chmod(db, 0600), 0);
    ck_assert_int_eq(qrt_dbfile_private(db), 0);
    ck_assert_int_eq(mode_of(db), 0600);
}
END_TEST

/* What is no file name is left alone; a directory that does not exist is an error. */
START_TEST(not_a_file_name)
{
    ck_assert_int_eq(qrt_dbfile_private(":memory:"), 0);
    ck_assert_int_eq(qrt_dbfile_private("file:x.db?mode=ro"), 0);
    ck_assert_int_eq(qrt_dbfile_private(""), 0);
    ck_assert_int_ne(qrt_dbfile_private(apr_pstrcat(pool, dir, "/none/q.db", NULL)), 0);
}
END_TEST

static Suite *dbfile_suite(void)
{
    Suite *s = suite_create("qrt_dbfile");
    TCase *tc = tcase_create("dbfile");

    tcase_add_checked_fixture(tc, dir_setup, dir_teardown);
    tcase_add_test(tc, new_database_under_umask_000);
    tcase_add_test(tc, existing_files_lose_what_others_could_read);
    tcase_add_test(tc, not_a_file_name);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(dbfile_suite());
}
