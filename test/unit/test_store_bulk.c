/* Unit tests for qrt_store_bulk on a SQLite database: many trackers with their tags
 * inserted in one transaction (ids set, tags split), a taken code failing the
 * statement as a UNIQUE violation named by its statement, and the answers kept for
 * Idempotency-Key: found per token and key, a second one refused, old ones purged. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>
#include <apr_time.h>
#include <apr_dbd.h>

#include "qrt_store_bulk.h"
#include "qrt_check.h"
#include "qrt_check_db.h"

static apr_pool_t *pool;
static qrt_db_t db;
static const char *dir;

static apr_int64_t count(const char *sql)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_int64_t n = -1;

    ck_assert_int_eq(apr_dbd_select(db.driver, pool, db.handle, &res, sql, 0), 0);
    while (apr_dbd_get_row(db.driver, pool, res, &row, -1) == 0) {
        n = apr_atoi64(apr_dbd_get_entry(db.driver, row, 0));
    }
    return n;
}

static void setup(void)
{
    apr_pool_create(&pool, NULL);
    dir = qrt_check_db_temp(pool, "store-bulk", &db);
    qrt_check_db_exec(&db, "INSERT INTO accounts VALUES (1, 'acme', 'professional', 0)");
}

static void teardown(void)
{
    qrt_check_db_remove(pool, &db, dir);
    apr_pool_destroy(pool);
}

static qrt_tracker_t *tracker(const char *code, int ntags)
{
    qrt_tracker_t *t = apr_pcalloc(pool, sizeof(*t));
    int i;

    t->account_id = 1;
    t->code = code;
    t->name = apr_pstrcat(pool, "name ", code, NULL);
    t->type = "website";
    t->redirect_url = apr_pstrcat(pool, "https://example.com/", code, NULL);
    t->tags = apr_array_make(pool, 2, sizeof(const char *));
    for (i = 0; i < ntags; i++) {
        APR_ARRAY_PUSH(t->tags, const char *) = i ? "plain" : "campaign:spring";
    }
    return t;
}

static apr_status_t insert(qrt_tracker_t **t, int n)
{
    apr_dbd_transaction_t *tx;
    apr_status_t rv;

    ck_assert_int_eq(qrt_db_begin(&db, pool, &tx), APR_SUCCESS);
    rv = qrt_store_trackers_insert_tx(&db, pool, t, n);
    if (rv != APR_SUCCESS) {
        qrt_db_rollback_only(&db, tx);
    }
    ck_assert_int_eq(qrt_db_end(&db, pool, tx), APR_SUCCESS);
    return rv;
}

START_TEST(many_in_one_transaction)
{
    qrt_tracker_t *t[40];
    int i, taken;

    for (i = 0; i < 40; i++) {
        t[i] = i == 7 ? NULL : tracker(apr_psprintf(pool, "code-%02d", i), i % 3);
    }
    ck_assert_int_eq(insert(t, 40), APR_SUCCESS);
    for (i = 0; i < 40; i++) {
        if (t[i]) {
            ck_assert_int_gt(t[i]->id, 0);
            ck_assert_int_eq(count(apr_psprintf(pool, "SELECT COUNT(*) FROM trackers WHERE "
                                                "id = %" APR_INT64_T_FMT " AND code = '%s'",
                                                t[i]->id, t[i]->code)), 1);
        }
    }
    ck_assert_int_eq(count("SELECT COUNT(*) FROM trackers"), 39);
    /* i % 3 tags each, i != 7: 12 trackers with 1 tag, 13 with 2. */
    ck_assert_int_eq(count("SELECT COUNT(*) FROM tracker_tags"), 12 + 2 * 13);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM tracker_tags WHERE dimension = 'campaign' "
                           "AND value = 'spring'"), 25);
    ck_assert_int_eq(qrt_store_code_taken(&db, pool, "code-03", &taken), APR_SUCCESS);
    ck_assert_int_eq(taken, 1);
    ck_assert_int_eq(qrt_store_code_taken(&db, pool, "CODE-03", &taken), APR_SUCCESS);
    ck_assert_int_eq(taken, 0);
}
END_TEST

START_TEST(a_taken_code_fails_all_as_a_unique_violation)
{
    qrt_tracker_t *one[1], *t[3];

    one[0] = tracker("taken", 0);
    ck_assert_int_eq(insert(one, 1), APR_SUCCESS);
    t[0] = tracker("fresh-1", 1);
    t[1] = tracker("taken", 1);
    t[2] = tracker("fresh-2", 1);
    ck_assert_int_ne(insert(t, 3), APR_SUCCESS);
    ck_assert(qrt_store_unique_violation(&db, SQL_bulk_tracker_add));
    ck_assert(!qrt_store_unique_violation(&db, SQL_idem_add));
    ck_assert_int_eq(count("SELECT COUNT(*) FROM trackers"), 1);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM tracker_tags"), 0);
}
END_TEST

START_TEST(idempotency_answers)
{
    qrt_idem_t in = { "abc123", 200, "application/json", "{\"a\":1}", 0 }, out;
    apr_dbd_transaction_t *tx;

    ck_assert_int_eq(qrt_store_idem_get(&db, pool, 5, "k", &out), APR_NOTFOUND);
    ck_assert_int_eq(qrt_store_idem_add(&db, pool, 5, "k", &in), APR_SUCCESS);
    memset(&out, 0, sizeof(out));
    ck_assert_int_eq(qrt_store_idem_get(&db, pool, 5, "k", &out), APR_SUCCESS);
    ck_assert_str_eq(out.request_hash, "abc123");
    ck_assert_int_eq(out.status, 200);
    ck_assert_str_eq(out.body, "{\"a\":1}");
    ck_assert_int_eq(out.tracker_id, 0);
    /* Per token, and per key. */
    ck_assert_int_eq(qrt_store_idem_get(&db, pool, 6, "k", &out), APR_NOTFOUND);
    ck_assert_int_eq(qrt_store_idem_get(&db, pool, 5, "K", &out), APR_NOTFOUND);
    /* A second answer under the key fails as a UNIQUE violation. */
    ck_assert_int_eq(qrt_db_begin(&db, pool, &tx), APR_SUCCESS);
    ck_assert_int_ne(qrt_store_idem_add(&db, pool, 5, "k", &in), APR_SUCCESS);
    ck_assert(qrt_store_unique_violation(&db, SQL_idem_add));
    qrt_db_rollback_only(&db, tx);
    qrt_db_end(&db, pool, tx);
    /* Older than a day: not answered, then purged. */
    qrt_check_db_exec(&db, "UPDATE idempotency_keys SET created_at = created_at - 86401");
    ck_assert_int_eq(qrt_store_idem_get(&db, pool, 5, "k", &out), APR_NOTFOUND);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM idempotency_keys"), 1);
    ck_assert_int_eq(qrt_store_idem_purge(&db, pool), APR_SUCCESS);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM idempotency_keys"), 0);
}
END_TEST

static Suite *store_bulk_suite(void)
{
    Suite *s = suite_create("qrt_store_bulk");
    TCase *tc = tcase_create("store_bulk");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, many_in_one_transaction);
    tcase_add_test(tc, a_taken_code_fails_all_as_a_unique_violation);
    tcase_add_test(tc, idempotency_answers);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(store_bulk_suite());
}
