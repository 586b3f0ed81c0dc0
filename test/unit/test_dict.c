/* Unit tests for qrt_dict: dictionary keys (the same as the SQL of migration 007
 * and of the triggers computes, checked against SQLite itself), the committer's
 * cache (pending entries, commit, abort, bound), and the write path through
 * qrt_store_visits_record: a rolled-back transaction leaves no id in the cache. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>
#include <apr_dbd.h>

#include "qrt_dict.h"
#include "qrt_schema.h"
#include "qrt_store.h"
#include "qrt_check.h"
#include "qrt_check_db.h"

QRT_CHECK_POOL

START_TEST(key_forms)
{
    const char *none[] = { NULL, NULL };
    const char *some[] = { "DE", "" };
    const char *tricky[] = { "1:a", "-" };
    const char *shifted[] = { "1", "a-" };
    const char *utf8[] = { "S\xc3\xa3o Paulo" };

    ck_assert_str_eq(qrt_dict_key(pool, none, 2), "--");
    ck_assert_str_eq(qrt_dict_key(pool, some, 2), "2:DE0:");
    ck_assert_str_eq(qrt_dict_key(pool, tricky, 2), "3:1:a1:-");
    /* Fields that concatenate alike keep apart. */
    ck_assert_str_ne(qrt_dict_key(pool, tricky, 2), qrt_dict_key(pool, shifted, 2));
    /* Lengths in bytes, not characters. */
    ck_assert_str_eq(qrt_dict_key(pool, utf8, 1), "10:S\xc3\xa3o Paulo");
    ck_assert_str_eq(qrt_dict_key(pool, none, 0), "");
}
END_TEST

/* The key SQLite computes with the migration's expression is qrt_dict_key's. */
START_TEST(key_as_sql_computes_it)
{
    static const char *const values[] = { "Mozilla/5.0 (iPhone)", "", "S\xc3\xa3o Paulo",
                                          "100%_\\x", "a'b", "12:34", NULL };
    const apr_dbd_driver_t *driver;
    apr_dbd_t *handle;
    const char *err = NULL;
    int i, j;

    apr_dbd_init(pool);
    ck_assert_int_eq(apr_dbd_get_driver(pool, "sqlite3", &driver), APR_SUCCESS);
    ck_assert_int_eq(apr_dbd_open_ex(driver, pool, ":memory:", &handle, &err), APR_SUCCESS);
    for (i = 0; i < 7; i++) {
        for (j = 0; j < 7; j++) {
            const char *f[] = { values[i], values[j] };
            const char *a = values[i] ? apr_psprintf(pool, "'%s'", apr_pstrdup(pool,
                                values[i])) : "NULL";
            const char *b = values[j] ? apr_psprintf(pool, "'%s'", values[j]) : "NULL";
            apr_dbd_results_t *res = NULL;
            apr_dbd_row_t *row = NULL;
            const char *sql, *got = NULL;

            if ((values[i] && strchr(values[i], '\'')) || (values[j] && strchr(values[j], '\''))) {
                continue;       /* no quoting in this test's literals */
            }
            sql = apr_psprintf(pool, "SELECT COALESCE(length(CAST(%s AS BLOB)) || ':' || %s, "
                               "'-') || COALESCE(length(CAST(%s AS BLOB)) || ':' || %s, '-')",
                               a, a, b, b);
            ck_assert_int_eq(apr_dbd_select(driver, pool, handle, &res, sql, 0), 0);
            while (apr_dbd_get_row(driver, pool, res, &row, -1) == 0) {
                got = apr_pstrdup(pool, apr_dbd_get_entry(driver, row, 0));
            }
            ck_assert_ptr_nonnull(got);
            ck_assert_str_eq(got, qrt_dict_key(pool, f, 2));
        }
    }
    apr_dbd_close(driver, handle);
}
END_TEST

START_TEST(cache_pending_commit_abort)
{
    qrt_dict_cache_t *c = qrt_dict_cache_make(pool, 100, 0);

    ck_assert_int_eq(qrt_dict_cache_get(c, QRT_DICT_UA, "k"), 0);
    qrt_dict_cache_stage(c, QRT_DICT_UA, "k", 7);
    /* Seen inside its transaction... */
    ck_assert_int_eq(qrt_dict_cache_get(c, QRT_DICT_UA, "k"), 7);
    ck_assert_int_eq(qrt_dict_cache_get(c, QRT_DICT_REF, "k"), 0);
    ck_assert_int_eq(qrt_dict_cache_count(c, QRT_DICT_UA), 0);
    /* ...forgotten when it rolls back... */
    qrt_dict_cache_abort(c);
    ck_assert_int_eq(qrt_dict_cache_get(c, QRT_DICT_UA, "k"), 0);
    /* ...kept when it commits. */
    qrt_dict_cache_stage(c, QRT_DICT_IP, "192.0.2.0", 3);
    qrt_dict_cache_commit(c);
    ck_assert_int_eq(qrt_dict_cache_get(c, QRT_DICT_IP, "192.0.2.0"), 3);
    ck_assert_int_eq(qrt_dict_cache_count(c, QRT_DICT_IP), 1);
    qrt_dict_cache_abort(c);
    ck_assert_int_eq(qrt_dict_cache_get(c, QRT_DICT_IP, "192.0.2.0"), 3);
    /* Hostile arguments. */
    ck_assert_int_eq(qrt_dict_cache_get(NULL, 0, "k"), 0);
    ck_assert_int_eq(qrt_dict_cache_get(c, QRT_DICTS, "k"), 0);
    ck_assert_int_eq(qrt_dict_cache_get(c, -1, "k"), 0);
    ck_assert_int_eq(qrt_dict_cache_get(c, 0, NULL), 0);
    qrt_dict_cache_stage(c, QRT_DICTS, "k", 1);
    qrt_dict_cache_stage(c, 0, "z", 0);
    qrt_dict_cache_commit(NULL);
    qrt_dict_cache_abort(NULL);
    ck_assert_int_eq(qrt_dict_cache_get(c, 0, "z"), 0);
}
END_TEST

/* A generation that moves (the purge deleted dictionary rows) makes the cache forget
 * the user agent, referer and address ids, kept and pending; places and the
 * aggregates' dictionaries stay. The first generation seen only starts it. */
START_TEST(cache_forgets_on_a_new_generation)
{
    qrt_dict_cache_t *c = qrt_dict_cache_make(pool, 100, 0);
    int d;

    ck_assert_int_eq(qrt_dict_cache_generation(c, 4), 0);
    for (d = 0; d < QRT_DICTS; d++) {
        qrt_dict_cache_stage(c, d, "k", 10 + d);
    }
    qrt_dict_cache_commit(c);
    qrt_dict_cache_stage(c, QRT_DICT_REF, "pending", 99);
    ck_assert_int_eq(qrt_dict_cache_generation(c, 4), 0);
    ck_assert_int_eq(qrt_dict_cache_get(c, QRT_DICT_UA, "k"), 10);
    ck_assert_int_eq(qrt_dict_cache_get(c, QRT_DICT_REF, "pending"), 99);
    ck_assert_int_eq(qrt_dict_cache_generation(c, 5), 1);
    ck_assert_int_eq(qrt_dict_cache_get(c, QRT_DICT_UA, "k"), 0);
    ck_assert_int_eq(qrt_dict_cache_get(c, QRT_DICT_REF, "k"), 0);
    ck_assert_int_eq(qrt_dict_cache_get(c, QRT_DICT_IP, "k"), 0);
    ck_assert_int_eq(qrt_dict_cache_get(c, QRT_DICT_REF, "pending"), 0);
    ck_assert_int_eq(qrt_dict_cache_count(c, QRT_DICT_UA), 0);
    ck_assert_int_eq(qrt_dict_cache_get(c, QRT_DICT_PLACE, "k"), 10 + QRT_DICT_PLACE);
    ck_assert_int_eq(qrt_dict_cache_get(c, QRT_DICT_BCY, "k"), 10 + QRT_DICT_BCY);
    ck_assert_int_eq(qrt_dict_cache_get(c, QRT_DICT_VAL, "k"), 10 + QRT_DICT_VAL);
    /* Learns again under the new one. */
    qrt_dict_cache_stage(c, QRT_DICT_UA, "k", 20);
    qrt_dict_cache_commit(c);
    ck_assert_int_eq(qrt_dict_cache_generation(c, 5), 0);
    ck_assert_int_eq(qrt_dict_cache_get(c, QRT_DICT_UA, "k"), 20);
    ck_assert_int_eq(qrt_dict_cache_generation(NULL, 6), 0);
}
END_TEST

START_TEST(cache_is_bounded)
{
    qrt_dict_cache_t *c = qrt_dict_cache_make(pool, 10, 0);
    int i;

    for (i = 1; i <= 1000; i++) {
        qrt_dict_cache_stage(c, QRT_DICT_REF, apr_psprintf(pool, "r%d", i), i);
        qrt_dict_cache_commit(c);
        ck_assert_int_le(qrt_dict_cache_count(c, QRT_DICT_REF), 10);
        ck_assert_int_eq(qrt_dict_cache_get(c, QRT_DICT_REF, apr_psprintf(pool, "r%d", i)), i);
    }
}
END_TEST

/* Bounded by its keys' bytes too: long keys, each new, start it over before its count
 * does; the newest is always kept, and a dictionary's bound leaves the others. */
START_TEST(cache_is_bounded_by_bytes)
{
    qrt_dict_cache_t *c = qrt_dict_cache_make(pool, 1000, 4096);
    int i;

    qrt_dict_cache_stage(c, QRT_DICT_IP, "203.0.113.9", 7);
    qrt_dict_cache_commit(c);
    for (i = 1; i <= 200; i++) {
        /* keys of 1,000 bytes: 4 of them fit, a fifth starts the dictionary over */
        const char *key = apr_psprintf(pool, "%0999d", i);

        qrt_dict_cache_stage(c, QRT_DICT_REF, key, i);
        qrt_dict_cache_commit(c);
        ck_assert_int_le(qrt_dict_cache_count(c, QRT_DICT_REF), 4);
        ck_assert_int_eq(qrt_dict_cache_count(c, QRT_DICT_REF), (i - 1) % 4 + 1);
        ck_assert_int_eq(qrt_dict_cache_get(c, QRT_DICT_REF, key), i);
    }
    ck_assert_int_eq(qrt_dict_cache_get(c, QRT_DICT_IP, "203.0.113.9"), 7);
}
END_TEST

/* Column 0 of every row of sql, each followed by ';'. */
/* Schema 14: visit_floor's buckets and tracker 1's newest id, as "bucket:min,...|id". */
#define FLOOR_AND_NEWEST "SELECT (SELECT group_concat(bucket || ':' || min_start) FROM " \
    "visit_floor) || '|' || (SELECT last_visit_id FROM trackers WHERE id = 1)"

static const char *rows_of(qrt_db_t *db, const char *sql)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    const char *out = "";

    ck_assert_msg(apr_dbd_select(db->driver, pool, db->handle, &res, sql, 0) == 0, "%s: %s",
                  sql, apr_dbd_error(db->driver, db->handle, 1));
    while (apr_dbd_get_row(db->driver, pool, res, &row, -1) == 0) {
        out = apr_pstrcat(pool, out, apr_dbd_get_entry(db->driver, row, 0), ";", NULL);
    }
    return out;
}

/* The write path on a real database: ids found in the dictionaries, one row per
 * distinct value, and a rolled-back transaction that added rows leaves the cache
 * without their ids (a later commit re-adds the rows, never a dangling id). */
/* Misses added first (new values) until most lately were found in the table; then
 * looked up first, until most were new again; bounded either way. */
START_TEST(cache_learns_lookup_first)
{
    qrt_dict_cache_t *c = qrt_dict_cache_make(pool, 10, 0);
    int i;

    ck_assert_int_eq(qrt_dict_cache_lookup_first(c, QRT_DICT_UA), 0);
    qrt_dict_cache_missed(c, QRT_DICT_UA, 1);
    ck_assert_int_eq(qrt_dict_cache_lookup_first(c, QRT_DICT_UA), 1);
    ck_assert_int_eq(qrt_dict_cache_lookup_first(c, QRT_DICT_IP), 0);   /* per dictionary */
    qrt_dict_cache_missed(c, QRT_DICT_UA, 0);
    ck_assert_int_eq(qrt_dict_cache_lookup_first(c, QRT_DICT_UA), 0);
    for (i = 0; i < 1000; i++) {
        qrt_dict_cache_missed(c, QRT_DICT_UA, 1);
    }
    for (i = 0; i < 15; i++) {
        qrt_dict_cache_missed(c, QRT_DICT_UA, 0);
    }
    ck_assert_int_eq(qrt_dict_cache_lookup_first(c, QRT_DICT_UA), 1);
    qrt_dict_cache_missed(c, QRT_DICT_UA, 0);
    ck_assert_int_eq(qrt_dict_cache_lookup_first(c, QRT_DICT_UA), 0);
    ck_assert_int_eq(qrt_dict_cache_lookup_first(NULL, QRT_DICT_UA), 0);
    ck_assert_int_eq(qrt_dict_cache_lookup_first(c, QRT_DICTS), 0);
}
END_TEST

/* A batch's keys at once (PostgreSQL's writer): the balance of found and added,
 * whatever their order, within the same bounds. */
START_TEST(cache_learns_from_batches)
{
    qrt_dict_cache_t *c = qrt_dict_cache_make(pool, 10, 0);

    qrt_dict_cache_missed_batch(c, QRT_DICT_UA, 100, 9900);     /* mostly new */
    ck_assert_int_eq(qrt_dict_cache_lookup_first(c, QRT_DICT_UA), 0);
    qrt_dict_cache_missed_batch(c, QRT_DICT_UA, 9000, 1000);    /* mostly there */
    ck_assert_int_eq(qrt_dict_cache_lookup_first(c, QRT_DICT_UA), 1);
    ck_assert_int_eq(qrt_dict_cache_lookup_first(c, QRT_DICT_IP), 0);
    /* bounded: 16 more added than found turn it back, not more */
    qrt_dict_cache_missed_batch(c, QRT_DICT_UA, 0, 15);
    ck_assert_int_eq(qrt_dict_cache_lookup_first(c, QRT_DICT_UA), 1);
    qrt_dict_cache_missed_batch(c, QRT_DICT_UA, 0, 1);
    ck_assert_int_eq(qrt_dict_cache_lookup_first(c, QRT_DICT_UA), 0);
    qrt_dict_cache_missed_batch(c, QRT_DICT_UA, 1, 0);                 /* from 0 */
    ck_assert_int_eq(qrt_dict_cache_lookup_first(c, QRT_DICT_UA), 1);
    qrt_dict_cache_missed_batch(NULL, QRT_DICT_UA, 5, 0);
    qrt_dict_cache_missed_batch(c, QRT_DICTS, 5, 0);
}
END_TEST

START_TEST(record_through_dictionaries)
{
    const char *dir, *err = NULL;
    qrt_db_t db;
    apr_dbd_transaction_t *tx;
    qrt_visit_t v[3];
    int i, from, to, n = 0, uas, places;

    dir = qrt_check_db_temp(pool, "dict", &db);
    ck_assert_int_eq(qrt_schema_version(pool, db.driver, db.handle), qrt_schema_latest());
    ck_assert_int_eq(apr_dbd_query(db.driver, db.handle, &n, "INSERT INTO accounts (name, "
                     "plan, created_at) VALUES ('a', 'professional', 0)"), 0);
    ck_assert_int_eq(apr_dbd_query(db.driver, db.handle, &n, "INSERT INTO trackers "
                     "(account_id, code, name, type, redirect_url, created_at, updated_at) "
                     "VALUES (1, 'c1', 't', 'website', 'https://e.example/', 0, 0)"), 0);
    db.dict = qrt_dict_cache_make(pool, 100, 0);
    memset(v, 0, sizeof(v));
    for (i = 0; i < 3; i++) {
        v[i].tracker_id = 1;
        v[i].visit_start = 1000 + i;
        v[i].source = i == 1 ? "click" : "scan";
        v[i].ip = "192.0.2.0";
        v[i].country = i == 2 ? NULL : "DE";
        v[i].city = i == 2 ? NULL : "Berlin";
        v[i].browser = "Firefox";
        v[i].user_agent = "UA";
        v[i].referer = i == 0 ? NULL : "https://r.example/";
        v[i].visitor = (apr_int64_t)APR_UINT64_C(0x0123456789abcdef);
    }
    /* Rolled back: nothing kept. */
    ck_assert_int_eq(qrt_db_begin(&db, pool, &tx), APR_SUCCESS);
    ck_assert_int_eq(qrt_store_visits_record(&db, pool, v, 3), APR_SUCCESS);
    ck_assert_int_ne(qrt_dict_cache_get(db.dict, QRT_DICT_UA, qrt_dict_key(pool,
                     (const char *[]){ "UA", "Firefox", NULL, NULL, NULL }, 5)), 0);
    qrt_db_rollback_only(&db, tx);
    qrt_db_end(&db, pool, tx);
    ck_assert_int_eq(qrt_dict_cache_count(db.dict, QRT_DICT_UA), 0);
    /* Committed: kept, and the view answers the strings. */
    ck_assert_int_eq(qrt_db_begin(&db, pool, &tx), APR_SUCCESS);
    ck_assert_int_eq(qrt_store_visits_record(&db, pool, v, 3), APR_SUCCESS);
    ck_assert_int_eq(qrt_db_end(&db, pool, tx), APR_SUCCESS);
    qrt_dict_cache_commit(db.dict);
    ck_assert_int_eq(qrt_dict_cache_count(db.dict, QRT_DICT_UA), 1);
    ck_assert_int_eq(qrt_dict_cache_count(db.dict, QRT_DICT_PLACE), 2);
    ck_assert_str_eq(rows_of(&db, "SELECT source || '|' || ip || '|' || COALESCE(country, "
                             "'null') || '|' || COALESCE(referer, 'null') || '|' || "
                             "user_agent FROM visits ORDER BY id"),
                     "scan|192.0.2.0|DE|null|UA;click|192.0.2.0|DE|https://r.example/|UA;"
                     "scan|192.0.2.0|null|https://r.example/|UA;");
    ck_assert_str_eq(rows_of(&db, "SELECT (SELECT COUNT(*) FROM visit_uas) || (SELECT "
                             "COUNT(*) FROM visit_places) || (SELECT COUNT(*) FROM "
                             "visit_referers) || (SELECT COUNT(*) FROM visit_ips)"), "1211;");
    /* Ids (SQLite, schema 11: visit_seq): the rolled-back batch took none; the view's
     * triggers take the next one when SQL by hand names none, and move past one it
     * names; the writer goes on after them; the view's update and delete touch their
     * row alone (SQLite counts no change made by an INSTEAD OF trigger: the rows tell). */
    ck_assert_int_eq(apr_dbd_query(db.driver, db.handle, &n, "INSERT INTO visits "
                     "(tracker_id, visit_start, source, bot, visitor) VALUES "
                     "(1, 5, 'scan', 0, '0123456789abcdef')"), 0);
    ck_assert_int_eq(apr_dbd_query(db.driver, db.handle, &n, "INSERT INTO visits "
                     "(id, tracker_id, visit_start, source, bot, visitor) VALUES "
                     "(10, 1, 6, 'scan', 0, '0123456789abcdef')"), 0);
    ck_assert_int_eq(qrt_db_begin(&db, pool, &tx), APR_SUCCESS);
    ck_assert_int_eq(qrt_store_visits_record(&db, pool, v, 2), APR_SUCCESS);
    ck_assert_int_eq(qrt_db_end(&db, pool, tx), APR_SUCCESS);
    ck_assert_int_eq(apr_dbd_query(db.driver, db.handle, &n, "UPDATE visits SET "
                     "visit_start = 7, city = 'Rome' WHERE id = 10"), 0);
    ck_assert_int_eq(apr_dbd_query(db.driver, db.handle, &n,
                     "DELETE FROM visits WHERE id = 4"), 0);
    ck_assert_str_eq(rows_of(&db, "SELECT (SELECT group_concat(id || ':' || visit_start || "
                             "':' || COALESCE(city, '-'), ',') FROM (SELECT * FROM visits "
                             "ORDER BY id)) || '|' || (SELECT last FROM visit_seq)"),
                     "1:1000:Berlin,2:1001:Berlin,3:1002:-,10:7:Rome,11:1000:Berlin,"
                     "12:1001:Berlin|12;");
    /* Schema 14: the writer and the view's triggers keep the floor of the ids' bucket
     * (the deleted visit 4 leaves its time there, lower than needed, still true)
     * and the tracker's newest id. */
    ck_assert_str_eq(rows_of(&db, FLOOR_AND_NEWEST), "0:5|12;");
    /* A database that says an older version than it is (10): migrations 011 to 014
     * run again; 014 computes the floors again (bucket 0's is now its visits' earliest,
     * 7), and the view's triggers, which 011 makes again, keep the floor and the newest
     * id once 014 has made them again too. */
    ck_assert_int_eq(apr_dbd_query(db.driver, db.handle, &n,
                                   "UPDATE qrt_schema SET version = 10"), 0);
    err = qrt_schema_migrate(pool, db.driver, db.handle, &from, &to);
    ck_assert_msg(err == NULL, "%s", err);
    ck_assert_int_eq(from, 10);
    ck_assert_int_eq(to, qrt_schema_latest());
    ck_assert_int_eq(apr_dbd_query(db.driver, db.handle, &n, "INSERT INTO visits "
                     "(id, tracker_id, visit_start, source, bot, visitor) VALUES "
                     "(20000, 1, 3, 'scan', 0, '0123456789abcdef')"), 0);
    ck_assert_str_eq(rows_of(&db, FLOOR_AND_NEWEST), "0:7,4:3|20000;");
    /* A fresh cache whose misses lately were in the tables (an import of visitors seen
     * before) looks them up first: the same rows found again, a new one still added. */
    db.dict = qrt_dict_cache_make(pool, 100, 0);
    /* (statements prepared before the migration above fail once SQLite sees the
     * schema changed, as apr_dbd_sqlite3 prepares them: prepared again, as a restart
     * would) */
    db.prepared = NULL;
    ck_assert_msg(qrt_db_prepare_all(&db, pool) == NULL, "prepare");
    uas = atoi(rows_of(&db, "SELECT COUNT(*) FROM visit_uas"));
    places = atoi(rows_of(&db, "SELECT COUNT(*) FROM visit_places"));
    for (i = 0; i < 20; i++) {
        qrt_dict_cache_missed(db.dict, QRT_DICT_UA, 1);
        qrt_dict_cache_missed(db.dict, QRT_DICT_PLACE, 1);
    }
    v[2].user_agent = "UA/2";
    ck_assert_int_eq(qrt_db_begin(&db, pool, &tx), APR_SUCCESS);
    ck_assert_msg(qrt_store_visits_record(&db, pool, v, 3) == APR_SUCCESS, "%s", db.error);
    ck_assert_int_eq(qrt_db_end(&db, pool, tx), APR_SUCCESS);
    qrt_dict_cache_commit(db.dict);
    /* (one user agent more, the same places) */
    ck_assert_str_eq(rows_of(&db, "SELECT (SELECT COUNT(*) FROM visit_uas) || (SELECT "
                             "COUNT(*) FROM visit_places) || '|' || (SELECT "
                             "group_concat(user_agent || '/' || COALESCE(city, '-'), ',') "
                             "FROM (SELECT * FROM visits WHERE id > 20000 ORDER BY id))"),
                     apr_psprintf(pool, "%d%d|UA/Berlin,UA/Berlin,UA/2/-;", uas + 1, places));
    ck_assert_int_eq(qrt_dict_cache_count(db.dict, QRT_DICT_UA), 2);
    /* The database and its directory go (SQLite's WAL files with it). */
    qrt_check_db_remove(pool, &db, dir);
    ck_assert_int_eq(access(dir, F_OK), -1);
}
END_TEST

static Suite *dict_suite(void)
{
    Suite *s = suite_create("qrt_dict");
    TCase *tc = tcase_create("dict");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, key_forms);
    tcase_add_test(tc, key_as_sql_computes_it);
    tcase_add_test(tc, cache_pending_commit_abort);
    tcase_add_test(tc, cache_forgets_on_a_new_generation);
    tcase_add_test(tc, cache_is_bounded);
    tcase_add_test(tc, cache_is_bounded_by_bytes);
    tcase_add_test(tc, cache_learns_lookup_first);
    tcase_add_test(tc, cache_learns_from_batches);
    tcase_add_test(tc, record_through_dictionaries);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(dict_suite());
}
