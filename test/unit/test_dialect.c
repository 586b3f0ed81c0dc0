/* qrt_dialect: lookup, facts, and the self-checks with their fall-backs. */
#include <string.h>
#include <unistd.h>
#include <sqlite3.h>
#include <apr_strings.h>

#include "qrt_check.h"
#include "qrt_check_db.h"
#include "qrt_dialect.h"

QRT_CHECK_POOL

START_TEST(lookup_and_facts)
{
    const qrt_dialect_t *s = qrt_dialect_named("sqlite3"), *g = qrt_dialect_named("pgsql");
    const apr_dbd_driver_t *driver = NULL;

    ck_assert_ptr_nonnull(s);
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(s->id, QRT_DIALECT_SQLITE);
    ck_assert_int_eq(g->id, QRT_DIALECT_PGSQL);
    ck_assert(s->embedded && !s->remote);
    ck_assert(g->remote && !g->embedded);
    ck_assert_ptr_null(qrt_dialect_named("mysql"));
    ck_assert_ptr_null(qrt_dialect_named(NULL));
    ck_assert_ptr_null(qrt_dialect_of(NULL));
    apr_dbd_init(pool);
    ck_assert_int_eq(apr_dbd_get_driver(pool, "sqlite3", &driver), APR_SUCCESS);
    ck_assert_ptr_eq(qrt_dialect_of(driver), s);
    ck_assert(qrt_dialect_embedded(driver) && !qrt_dialect_remote(driver));
    /* SQLite's inserts leave the id to the connection; PostgreSQL's return it */
    ck_assert_ptr_nonnull(s->last_rowid);
    ck_assert_ptr_null(g->last_rowid);
}
END_TEST

/* A select read natively and then through apr_dbd's portable calls gives the same. */
static apr_int64_t account_count(qrt_db_t *db)
{
    apr_array_header_t *list = NULL;

    ck_assert_int_eq(qrt_store_account_list(db, pool, &list), APR_SUCCESS);
    return list->nelts;
}

START_TEST(sqlite_self_check_and_fallback)
{
    const char *dir;
    qrt_db_t db;
    apr_dbd_prepared_t *prep = NULL;
    const apr_dbd_type_e *types = NULL;
    apr_int64_t id = 0;
    int nargs = -1;

    dir = qrt_check_db_temp(pool, "dialect", &db);
    ck_assert_ptr_null(qrt_dialect_self_check(db.driver));
    ck_assert_int_eq(apr_dbd_prepare(db.driver, pool, db.handle,
                                     "SELECT %s, %lld", NULL, &prep), 0);
    ck_assert_ptr_nonnull(qrt_dialect_sqlite_stmt(prep, &nargs, &types));
    ck_assert_int_eq(nargs, 2);
    ck_assert_int_eq(types[1], APR_DBD_TYPE_LONGLONG);
    ck_assert_int_eq(qrt_store_account_add(&db, pool, "acme", "professional", &id),
                     APR_SUCCESS);
    ck_assert_int_eq(account_count(&db), 1);

    /* A layout that does not match: said, and the reads go through apr_dbd. */
    qrt_dialect_sqlite_test_break(1);
    ck_assert_ptr_nonnull(qrt_dialect_self_check(db.driver));
    ck_assert_ptr_nonnull(strstr(qrt_dialect_self_check(db.driver), "laid out"));
    ck_assert_ptr_null(qrt_dialect_sqlite_stmt(prep, &nargs, &types));
    ck_assert_int_eq(qrt_store_account_add(&db, pool, "globex", "free", &id),
                     APR_SUCCESS);
    ck_assert_int_eq(account_count(&db), 2);

    qrt_dialect_sqlite_test_break(0);
    ck_assert_ptr_null(qrt_dialect_self_check(db.driver));
    ck_assert_ptr_nonnull(qrt_dialect_sqlite_stmt(prep, &nargs, &types));
    qrt_check_db_remove(pool, &db, dir);
}
END_TEST

/* PostgreSQL's driver, when installed: its libpq functions are found, and one that
 * is missing is named by the self-check (what needs it is then skipped). */
/* A BEGIN that fails (the database busy) leaves nothing behind: clearing its pool
 * later neither commits nor ends a transaction the connection began since. */
static apr_int64_t row_count(qrt_db_t *db)
{
    return qrt_check_db_int(pool, db, "SELECT COUNT(*) FROM t_begin");
}

START_TEST(sqlite_failed_begin_leaves_no_transaction)
{
    const qrt_dialect_t *d = qrt_dialect_named("sqlite3");
    const char *dir, *err = NULL;
    qrt_db_t a, b;
    apr_dbd_transaction_t *t = NULL;
    apr_pool_t *p1, *p2;

    dir = qrt_check_db_temp(pool, "begin", &a);
    qrt_check_db_open(pool, apr_pstrcat(pool, dir, "/t.db", NULL), &b);
    qrt_check_db_exec(&a, "CREATE TABLE t_begin (x INTEGER)");
    /* (apr_dbd_sqlite3 still tries 16 times, 100 ms apart) */
    sqlite3_busy_timeout(apr_dbd_native_handle(b.driver, b.handle), 1);
    apr_pool_create(&p1, pool);
    apr_pool_create(&p2, pool);
    /* a holds the write lock: b's BEGIN fails */
    qrt_check_db_exec(&a, "BEGIN IMMEDIATE");
    ck_assert_int_ne(d->begin(b.driver, p1, b.handle, &t, &err), 0);
    ck_assert_ptr_null(t);
    ck_assert_ptr_nonnull(err);
    qrt_check_db_exec(&a, "COMMIT");
    /* b's next transaction, rolled back after p1 is cleared */
    ck_assert_int_eq(d->begin(b.driver, p2, b.handle, &t, &err), 0);
    ck_assert_ptr_nonnull(t);
    qrt_check_db_exec(&b, "INSERT INTO t_begin VALUES (1)");
    apr_pool_clear(p1);
    apr_dbd_transaction_mode_set(b.driver, t, APR_DBD_TRANSACTION_ROLLBACK);
    ck_assert_int_eq(apr_dbd_transaction_end(b.driver, p2, t), 0);
    ck_assert_int_eq(row_count(&a), 0);
    ck_assert_int_eq(row_count(&b), 0);
    apr_pool_destroy(p1);
    apr_pool_destroy(p2);
    qrt_check_db_drop(pool, &b, dir, "t.db");
    qrt_check_db_remove(pool, &a, dir);
}
END_TEST

START_TEST(pgsql_self_check)
{
    const apr_dbd_driver_t *driver = NULL;
    const char *e;

    apr_dbd_init(pool);
    if (apr_dbd_get_driver(pool, "pgsql", &driver) != APR_SUCCESS) {
        return;         /* (libaprutil1-dbd-pgsql not installed) */
    }
    ck_assert_ptr_null(qrt_dialect_self_check(driver));
    qrt_dialect_pgsql_test_hide("PQtransactionStatus");
    e = qrt_dialect_self_check(driver);
    ck_assert_ptr_nonnull(e);
    ck_assert_ptr_nonnull(strstr(e, "PQtransactionStatus"));
    ck_assert_int_eq(qrt_dialect_named("pgsql")->in_transaction(driver, NULL), -1);
    qrt_dialect_pgsql_test_hide(NULL);
    ck_assert_ptr_null(qrt_dialect_self_check(driver));
}
END_TEST

/* libpq's pipeline mode, found with the rest: without it a writer's transaction is
 * apr_dbd's (qrt_db_begin_pipelined says APR_ENOTIMPL); SQLite has none. */
START_TEST(pgsql_pipeline_and_its_fallback)
{
    const qrt_dialect_t *g = qrt_dialect_named("pgsql");
    qrt_db_t db;

    ck_assert_ptr_null(qrt_dialect_named("sqlite3")->pipeline);
    apr_dbd_init(pool);
    memset(&db, 0, sizeof(db));
    if (apr_dbd_get_driver(pool, "pgsql", &db.driver) != APR_SUCCESS) {
        return;         /* (libaprutil1-dbd-pgsql not installed) */
    }
    ck_assert_int_eq(g->pipeline(db.driver, NULL, pool, NULL, 0, NULL, NULL, NULL), 0);
    ck_assert_int_eq(qrt_db_begin_pipelined(&db, pool), APR_SUCCESS);
    ck_assert_ptr_nonnull(db.later);
    ck_assert_int_eq(db.in_tx, 1);

    memset(&db, 0, sizeof(db));
    ck_assert_int_eq(apr_dbd_get_driver(pool, "pgsql", &db.driver), APR_SUCCESS);
    qrt_dialect_pgsql_test_hide("PQpipelineSync");
    ck_assert_ptr_nonnull(strstr(qrt_dialect_self_check(db.driver), "PQpipelineSync"));
    ck_assert_int_eq(g->pipeline(db.driver, NULL, pool, NULL, 0, NULL, NULL, NULL), -1);
    ck_assert_int_eq(qrt_db_begin_pipelined(&db, pool), APR_ENOTIMPL);
    ck_assert_ptr_null(db.later);
    ck_assert_int_eq(db.in_tx, 0);
    qrt_dialect_pgsql_test_hide(NULL);
    ck_assert_ptr_null(qrt_dialect_self_check(db.driver));
}
END_TEST

static Suite *dialect_suite(void)
{
    Suite *s = suite_create("dialect");
    TCase *tc = tcase_create("dialect");

    /* (the first test migrates the template database: past Check's 4 s under the
     * sanitizers while other tests share the machine) */
    tcase_set_timeout(tc, 30);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, lookup_and_facts);
    tcase_add_test(tc, sqlite_self_check_and_fallback);
    tcase_add_test(tc, sqlite_failed_begin_leaves_no_transaction);
    tcase_add_test(tc, pgsql_self_check);
    tcase_add_test(tc, pgsql_pipeline_and_its_fallback);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(dialect_suite());
}
