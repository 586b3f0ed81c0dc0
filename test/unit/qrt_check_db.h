/* The unit tests' SQLite databases: one opened at a path, migrated to the latest
 * schema, its statements prepared, as the module's connections are; a directory of
 * a test's own for them, removed afterwards; one statement run on one. */
#ifndef QRT_CHECK_DB_H
#define QRT_CHECK_DB_H

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <check.h>
#include <apr_dbd.h>
#include <apr_strings.h>
#include <apr_file_io.h>

#include "qrt_schema.h"
#include "qrt_store.h"

/* The run's migrated database (qrt_check_tpl_dir), made on first use by whichever test
 * process needs it first: its path, or NULL (no directory: migrate). */
static const char *qrt_check_db_template(apr_pool_t *p, const apr_dbd_driver_t *driver)
{
    const char *tpl, *tmp, *err = NULL;
    apr_dbd_t *h;

    if (!qrt_check_tpl_dir[0]) {
        return NULL;
    }
    tpl = apr_pstrcat(p, qrt_check_tpl_dir, "/t.db", NULL);
    if (access(tpl, F_OK) == 0) {
        return tpl;
    }
    /* (made under a name of this process's, then renamed: another case's process may
     * make it at the same time) */
    tmp = apr_psprintf(p, "%s.%ld", tpl, (long)getpid());
    ck_assert_int_eq(apr_dbd_open_ex(driver, p, tmp, &h, &err), APR_SUCCESS);
    err = qrt_schema_migrate(p, driver, h, NULL, NULL);
    ck_assert_msg(err == NULL, "%s", err);
    apr_dbd_close(driver, h);
    ck_assert_msg(access(apr_pstrcat(p, tmp, "-wal", NULL), F_OK) != 0,
                  "the migrated template kept its WAL");
    ck_assert_int_eq(rename(tmp, tpl), 0);
    return tpl;
}

/* A copy of the file from at to (which does not exist). */
static void qrt_check_db_copy(apr_pool_t *p, const char *from, const char *to)
{
    apr_file_t *in, *out;
    char buf[65536];
    apr_size_t n;

    ck_assert_int_eq(apr_file_open(&in, from, APR_FOPEN_READ, 0, p), APR_SUCCESS);
    ck_assert_int_eq(apr_file_open(&out, to, APR_FOPEN_WRITE | APR_FOPEN_CREATE
                                   | APR_FOPEN_EXCL, APR_FPROT_OS_DEFAULT, p), APR_SUCCESS);
    for (;;) {
        n = sizeof(buf);
        if (apr_file_read(in, buf, &n) != APR_SUCCESS || n == 0) {
            break;
        }
        ck_assert_int_eq(apr_file_write_full(out, buf, n, NULL), APR_SUCCESS);
    }
    apr_file_close(in);
    ck_assert_int_eq(apr_file_close(out), APR_SUCCESS);
}

/* db opened at path, at the latest schema: a new database is a copy of the run's
 * migrated one with a visitor key of its own, as a migration draws one. */
static void qrt_check_db_open(apr_pool_t *p, const char *path, qrt_db_t *db)
{
    const char *err = NULL, *tpl;
    int n = 0;

    memset(db, 0, sizeof(*db));
    apr_dbd_init(p);
    ck_assert_int_eq(apr_dbd_get_driver(p, "sqlite3", &db->driver), APR_SUCCESS);
    tpl = access(path, F_OK) != 0 ? qrt_check_db_template(p, db->driver) : NULL;
    if (tpl) {
        qrt_check_db_copy(p, tpl, path);
    }
    ck_assert_int_eq(apr_dbd_open_ex(db->driver, p, path, &db->handle, &err), APR_SUCCESS);
    if (tpl) {
        ck_assert_int_eq(apr_dbd_query(db->driver, db->handle, &n,
                                       "UPDATE qrt_settings SET value = "
                                       "lower(hex(randomblob(32))) WHERE name = "
                                       "'visitor_key'"), 0);
    }
    /* (nothing left to do on a copy: it checks the schema's version) */
    err = qrt_schema_migrate(p, db->driver, db->handle, NULL, NULL);
    ck_assert_msg(err == NULL, "%s", err);
    err = qrt_db_prepare_all(db, p);
    ck_assert_msg(err == NULL, "%s", err);
    /* A test's database need not outlive a crash of the machine: no fsync at commits. */
    ck_assert_int_eq(apr_dbd_query(db->driver, db->handle, &n, "PRAGMA synchronous = OFF"), 0);
}

/* A directory of the test's own under /tmp for its database files (tag names the
 * test in the directory's name); allocated in p. */
static inline const char *qrt_check_db_dir(apr_pool_t *p, const char *tag)
{
    char *dir = apr_psprintf(p, "/tmp/qrt-%s-XXXXXX", tag);

    ck_assert_ptr_nonnull(mkdtemp(dir));
    return dir;
}

/* Closes db, opened at dir/name, and removes the file with its -wal and -shm. */
static inline void qrt_check_db_drop(apr_pool_t *p, qrt_db_t *db, const char *dir,
                                     const char *name)
{
    static const char *const suffixes[] = { "", "-wal", "-shm" };
    int i;

    apr_dbd_close(db->driver, db->handle);
    for (i = 0; i < 3; i++) {
        unlink(apr_pstrcat(p, dir, "/", name, suffixes[i], NULL));
    }
}

/* A database of the test's own: t.db in a new directory (qrt_check_db_dir), opened by
 * qrt_check_db_open; the directory is returned for qrt_check_db_remove. */
static inline const char *qrt_check_db_temp(apr_pool_t *p, const char *tag, qrt_db_t *db)
{
    const char *dir = qrt_check_db_dir(p, tag);

    qrt_check_db_open(p, apr_pstrcat(p, dir, "/t.db", NULL), db);
    return dir;
}

/* Undoes qrt_check_db_temp: closes db, removes its files and the directory. */
static inline void qrt_check_db_remove(apr_pool_t *p, qrt_db_t *db, const char *dir)
{
    qrt_check_db_drop(p, db, dir, "t.db");
    rmdir(dir);
}

/* Runs one SQL statement (text, no arguments) on db; a failure fails the test with the
 * database's message. */
static inline void qrt_check_db_exec(qrt_db_t *db, const char *sql)
{
    int n = 0;

    ck_assert_msg(apr_dbd_query(db->driver, db->handle, &n, sql) == 0, "%s: %s", sql,
                  apr_dbd_error(db->driver, db->handle, 1));
}

/* The first column of the first row of one SQL query (text, no arguments) on db, as an
 * integer; the query must return a row. */
static inline apr_int64_t qrt_check_db_int(apr_pool_t *p, qrt_db_t *db, const char *sql)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_int64_t n;

    ck_assert_msg(apr_dbd_select(db->driver, p, db->handle, &res, sql, 0) == 0, "%s: %s",
                  sql, apr_dbd_error(db->driver, db->handle, 1));
    ck_assert_msg(apr_dbd_get_row(db->driver, p, res, &row, -1) == 0, "%s: no row", sql);
    n = apr_atoi64(apr_dbd_get_entry(db->driver, row, 0));
    while (apr_dbd_get_row(db->driver, p, res, &row, -1) == 0) {
    }
    return n;
}

#endif
