/* The unit tests' SQLite databases: one opened at a path, migrated to the latest
 * schema, its statements prepared, as the module's connections are. */
#ifndef QRT_CHECK_DB_H
#define QRT_CHECK_DB_H

#include <string.h>
#include <check.h>
#include <apr_dbd.h>

#include "qrt_schema.h"
#include "qrt_store.h"

static void qrt_check_db_open(apr_pool_t *p, const char *path, qrt_db_t *db)
{
    const char *err = NULL;

    memset(db, 0, sizeof(*db));
    apr_dbd_init(p);
    ck_assert_int_eq(apr_dbd_get_driver(p, "sqlite3", &db->driver), APR_SUCCESS);
    ck_assert_int_eq(apr_dbd_open_ex(db->driver, p, path, &db->handle, &err), APR_SUCCESS);
    err = qrt_schema_migrate(p, db->driver, db->handle, NULL, NULL);
    ck_assert_msg(err == NULL, "%s", err);
    err = qrt_db_prepare_all(db, p);
    ck_assert_msg(err == NULL, "%s", err);
}

#endif
