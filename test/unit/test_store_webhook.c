/* Unit tests for qrt_store_webhook on SQLite: webhooks and their limit, tracker events in
 * the tracker's transactions, the writer's events of visits and its cache, the outbox
 * bound and the sweep. */
#include <string.h>
#include <stdlib.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>
#include <sqlite3.h>

#include "qrt_store_webhook.h"
#include "qrt_check.h"
#include "qrt_check_db.h"

QRT_CHECK_POOL

static qrt_db_t db;
static const char *dir;
static apr_int64_t account;

static void db_setup(void)
{
    setup();
    dir = qrt_check_db_temp(pool, "webhook", &db);
    ck_assert_int_eq(qrt_store_account_add(&db, pool, "acme", "professional", &account),
                     APR_SUCCESS);
}

static void db_teardown(void)
{
    qrt_check_db_remove(pool, &db, dir);
    teardown();
}

static int int_row(void *ctx, int n, char **v, char **names)
{
    (void)n;
    (void)names;
    *(long *)ctx = v[0] ? atol(v[0]) : -1;
    return 0;
}

/* The first column of the first row of sql, as an integer. */
static long one(const char *sql)
{
    long v = -1;
    char *err = NULL;

    ck_assert_msg(sqlite3_exec(apr_dbd_native_handle(db.driver, db.handle), sql, int_row, &v,
                               &err) == SQLITE_OK, "%s: %s", sql, err ? err : "");
    return v;
}

static apr_int64_t hook(int events)
{
    qrt_webhook_t w;

    memset(&w, 0, sizeof(w));
    w.account_id = account;
    w.url = "https://hooks.example.com/";
    w.events = events;
    ck_assert_int_eq(qrt_store_webhook_add(&db, pool, &w, 10), APR_SUCCESS);
    return w.id;
}

static qrt_tracker_t tracker(const char *code)
{
    qrt_tracker_t t;

    memset(&t, 0, sizeof(t));
    t.account_id = account;
    t.code = code;
    t.name = "n";
    t.type = "website";
    t.redirect_url = "https://example.com/";
    t.tags = apr_array_make(pool, 1, sizeof(const char *));
    ck_assert_int_eq(qrt_store_tracker_add(&db, pool, &t), APR_SUCCESS);
    return t;
}

static qrt_visit_t visit(apr_int64_t tracker_id, const char *source, apr_int64_t at)
{
    qrt_visit_t v;

    memset(&v, 0, sizeof(v));
    v.tracker_id = tracker_id;
    v.visit_start = at;
    v.source = source;
    v.ip = "203.0.113.0";
    v.browser = "Firefox";
    v.device = "desktop";
    v.user_agent = "Mozilla/5.0";
    v.visitor = 42;
    return v;
}

/* The writer's transaction: visits recorded, then their events. */
static void record(qrt_webhook_cache_t *c, apr_uint32_t gen, qrt_visit_t *v, int n)
{
    apr_dbd_transaction_t *tx;
    apr_int64_t *ids = apr_palloc(pool, sizeof(*ids) * n);
    qrt_webhook_after_t *after;
    int i;

    ck_assert_int_eq(qrt_db_begin(&db, pool, &tx), APR_SUCCESS);
    ck_assert_int_eq(qrt_store_webhook_expiry(&db, pool, c, gen, v, n, &after), APR_SUCCESS);
    ck_assert_int_eq(qrt_store_visits_record_ids(&db, pool, v, n, ids, NULL), APR_SUCCESS);
    for (i = 0; i < n; i++) {
        v[i].id = ids[i];
    }
    ck_assert_int_eq(qrt_store_webhook_visits(&db, pool, c, gen, v, n, after), APR_SUCCESS);
    ck_assert_int_eq(qrt_db_end(&db, pool, tx), APR_SUCCESS);
    qrt_webhook_cache_commit(c);
}

START_TEST(limit_and_delete)
{
    qrt_webhook_t w;
    apr_int64_t a = hook(1), b = hook(3), pending = 0, dropped = 0;
    apr_array_header_t *list;
    apr_int64_t total = 0;

    memset(&w, 0, sizeof(w));
    w.account_id = account;
    w.url = "https://hooks.example.com/";
    w.events = 1;
    ck_assert_int_eq(qrt_store_webhook_add(&db, pool, &w, 2), APR_ENOSPC);
    ck_assert_int_eq(qrt_store_webhook_list(&db, pool, account, 0, 25, &list, &total),
                     APR_SUCCESS);
    ck_assert_int_eq(total, 2);
    ck_assert_int_eq(APR_ARRAY_IDX(list, 1, qrt_webhook_t).events, 3);
    ck_assert_int_eq(qrt_store_webhook_delete(&db, pool, account + 1, a), APR_NOTFOUND);
    qrt_check_db_exec(&db, "INSERT INTO webhook_events (webhook_id, msg_id, event_type, body, "
                      "created_at, next_attempt_at) VALUES (1, 'msg_x', 'scan.created', '{}', 1, 1)");
    ck_assert_int_eq(qrt_store_webhook_delete(&db, pool, account, a), APR_SUCCESS);
    ck_assert_int_eq(qrt_store_webhook_get(&db, pool, a, &w), APR_NOTFOUND);
    ck_assert_int_eq(qrt_store_webhook_counts(&db, pool, a, &pending, &dropped), APR_SUCCESS);
    ck_assert_int_eq(pending, 0);
    ck_assert_int_eq(dropped, 1);
    ck_assert_int_eq(qrt_store_webhook_get(&db, pool, b, &w), APR_SUCCESS);
}
END_TEST

START_TEST(tracker_events)
{
    apr_int64_t h = hook(QRT_WEBHOOK_TRACKER_CREATED | QRT_WEBHOOK_TRACKER_DELETED);
    qrt_tracker_t t = tracker("abcdef");

    ck_assert_int_eq(one("SELECT COUNT(*) FROM webhook_events WHERE event_type = "
                         "'tracker.created' AND json_extract(body, '$.data.code') = 'abcdef'"), 1);
    t.name = "renamed";
    ck_assert_int_eq(qrt_store_tracker_update(&db, pool, &t), APR_SUCCESS);
    ck_assert_int_eq(one("SELECT COUNT(*) FROM webhook_events"), 1);   /* not subscribed */
    ck_assert_int_eq(qrt_store_tracker_delete(&db, pool, t.id), APR_SUCCESS);
    ck_assert_int_eq(one("SELECT COUNT(*) FROM webhook_events WHERE event_type = "
                         "'tracker.deleted' AND json_extract(body, '$.data.name') = 'renamed'"),
                     1);
    ck_assert_int_eq(one(apr_psprintf(pool, "SELECT COUNT(*) FROM webhook_events WHERE "
                                      "webhook_id = %" APR_INT64_T_FMT, h)), 2);
    /* a disabled webhook gets none */
    qrt_check_db_exec(&db, "UPDATE webhooks SET disabled_at = 1");
    tracker("ghijkl");
    ck_assert_int_eq(one("SELECT COUNT(*) FROM webhook_events"), 2);
}
END_TEST

START_TEST(visits_and_the_cache)
{
    qrt_webhook_cache_t *c = qrt_webhook_cache_make(pool);
    qrt_tracker_t t = tracker("mnopqr");
    qrt_visit_t v[3];
    apr_int64_t h;

    v[0] = visit(t.id, "scan", 1790000000);
    v[1] = visit(t.id, "click", 1790000001);
    v[2] = visit(t.id, "scan", 1790000002);
    record(c, 0, v, 3);
    ck_assert_int_eq(one("SELECT COUNT(*) FROM webhook_events"), 0);
    /* a webhook made meanwhile: seen at once when the generation moves */
    h = hook(QRT_WEBHOOK_SCAN_CREATED);
    v[0] = visit(t.id, "scan", 1790000003);
    v[1] = visit(t.id, "click", 1790000004);
    v[2] = visit(t.id, "scan", 1790000005);
    record(c, 1, v, 3);
    ck_assert_int_eq(one(apr_psprintf(pool, "SELECT COUNT(*) FROM webhook_events WHERE "
                                      "webhook_id = %" APR_INT64_T_FMT " AND event_type = "
                                      "'scan.created'", h)), 2);
    ck_assert_int_eq(one(apr_psprintf(pool, "SELECT COUNT(*) FROM webhook_events WHERE "
                                      "visit_id = %" APR_INT64_T_FMT " AND tracker_id = %"
                                      APR_INT64_T_FMT " AND body = ''", v[2].id, t.id)), 1);
    /* deleted, the generation moved: none */
    ck_assert_int_eq(qrt_store_webhook_delete(&db, pool, account, h), APR_SUCCESS);
    record(c, 2, v, 1);
    ck_assert_int_eq(one("SELECT COUNT(*) FROM webhook_events WHERE state = 0"), 0);
}
END_TEST

START_TEST(expiry)
{
    qrt_webhook_cache_t *c = qrt_webhook_cache_make(pool);
    qrt_tracker_t t = tracker("stuvwx");
    qrt_visit_t v[2];

    hook(QRT_WEBHOOK_TRACKER_EXPIRED);
    qrt_check_db_exec(&db, apr_psprintf(pool, "INSERT INTO tracker_routing (tracker_id, "
                                        "valid_until) VALUES (%" APR_INT64_T_FMT
                                        ", 1790000010)", t.id));
    v[0] = visit(t.id, "scan", 1790000005);
    record(c, 1, v, 1);
    ck_assert_int_eq(one("SELECT COUNT(*) FROM webhook_events"), 0);
    v[0] = visit(t.id, "scan", 1790000011);
    v[1] = visit(t.id, "click", 1790000012);
    record(c, 1, v, 2);
    ck_assert_int_eq(one("SELECT COUNT(*) FROM webhook_events WHERE event_type = "
                         "'tracker.expired' AND json_extract(body, '$.data.reason') = "
                         "'valid_until'"), 1);
    v[0] = visit(t.id, "scan", 1790000013);
    record(c, 1, v, 1);
    ck_assert_int_eq(one("SELECT COUNT(*) FROM webhook_events"), 1);
}
END_TEST

START_TEST(bound_drops_the_oldest)
{
    qrt_webhook_cache_t *c = qrt_webhook_cache_make(pool);
    qrt_tracker_t t = tracker("yzabcd");
    qrt_visit_t v[15];
    apr_int64_t h = hook(QRT_WEBHOOK_SCAN_CREATED), other = hook(QRT_WEBHOOK_SCAN_CREATED);
    apr_int64_t dropped = 0;
    int i;

    for (i = 0; i < 15; i++) {
        v[i] = visit(t.id, "scan", 1790000000 + i);
    }
    record(c, 1, v, 15);
    /* the other webhook's receiver caught up */
    qrt_check_db_exec(&db, apr_psprintf(pool, "UPDATE webhook_events SET state = 1 WHERE "
                                        "webhook_id = %" APR_INT64_T_FMT, other));
    ck_assert_int_eq(qrt_webhook_cache_bound_due(c), 1);
    ck_assert_int_eq(qrt_store_webhook_bound(&db, pool, c, 10, 0, &dropped), APR_SUCCESS);
    ck_assert_int_eq(dropped, 5);
    ck_assert_int_eq(qrt_webhook_cache_bound_due(c), 0);
    ck_assert_int_eq(one(apr_psprintf(pool, "SELECT MAX(visit_id) "
                                      "FROM webhook_events WHERE webhook_id = %" APR_INT64_T_FMT
                                      " AND state = 0", h)), (long)v[14].id);
    /* the five oldest, never tried, are deleted and counted */
    ck_assert_int_eq(one(apr_psprintf(pool, "SELECT MIN(visit_id) "
                                      "FROM webhook_events WHERE webhook_id = %" APR_INT64_T_FMT
                                      " AND state = 0", h)), (long)v[5].id);
    ck_assert_int_eq(one(apr_psprintf(pool, "SELECT COUNT(*) FROM webhook_events WHERE "
                                      "webhook_id = %" APR_INT64_T_FMT, h)), 10);
    ck_assert_int_eq(one(apr_psprintf(pool, "SELECT SUM(n) FROM webhook_drops WHERE "
                                      "webhook_id = %" APR_INT64_T_FMT, h)), 5);
    ck_assert_int_eq(one("SELECT COUNT(*) FROM webhook_events WHERE state = 3"), 0);
    /* every webhook, as the idle writer checks them: nothing more */
    ck_assert_int_eq(qrt_store_webhook_bound(&db, pool, c, 10, 1, &dropped), APR_SUCCESS);
    ck_assert_int_eq(dropped, 0);
    /* an event already tried stays, dropped, for its attempts; so does one being sent */
    qrt_check_db_exec(&db, apr_psprintf(pool, "UPDATE webhook_events SET attempts = 1 WHERE "
                                        "visit_id = %" APR_INT64_T_FMT " AND webhook_id = %"
                                        APR_INT64_T_FMT, v[5].id, h));
    qrt_check_db_exec(&db, apr_psprintf(pool, "UPDATE webhook_events SET claimed_until = 9 "
                                        "WHERE visit_id = %" APR_INT64_T_FMT " AND webhook_id = %"
                                        APR_INT64_T_FMT, v[6].id, h));
    ck_assert_int_eq(qrt_store_webhook_bound(&db, pool, c, 4, 1, &dropped), APR_SUCCESS);
    ck_assert_int_eq(dropped, 6);
    ck_assert_int_eq(one("SELECT COUNT(*) FROM webhook_events WHERE state = 3 AND body = ''"),
                     2);
    ck_assert_int_eq(one(apr_psprintf(pool, "SELECT SUM(visit_id) FROM webhook_events WHERE "
                                      "state = 3 AND webhook_id = %" APR_INT64_T_FMT, h)),
                     (long)(v[5].id + v[6].id));
    ck_assert_int_eq(one(apr_psprintf(pool, "SELECT SUM(n) FROM webhook_drops WHERE "
                                      "webhook_id = %" APR_INT64_T_FMT, h)), 9);
    {
        apr_int64_t pending = 0, shown = 0;

        ck_assert_int_eq(qrt_store_webhook_counts(&db, pool, h, &pending, &shown), APR_SUCCESS);
        ck_assert_int_eq(pending, 4);
        ck_assert_int_eq(shown, 11);
    }
}
END_TEST

START_TEST(bound_in_slices)
{
    /* 2,510 events over a bound of 10: a check drops at most a slice (1,000) and is due
     * again at once until the webhook is back at its bound */
    qrt_webhook_cache_t *c = qrt_webhook_cache_make(pool);
    qrt_tracker_t t = tracker("slices");
    qrt_visit_t *v = apr_palloc(pool, 2510 * sizeof(*v));
    apr_int64_t h = hook(QRT_WEBHOOK_SCAN_CREATED), dropped = 0, total = 0;
    int i, checks = 0;

    for (i = 0; i < 2510; i++) {
        v[i] = visit(t.id, "scan", 1790000000 + i);
    }
    record(c, 1, v, 2510);
    while (qrt_webhook_cache_bound_due(c)) {
        ck_assert_int_eq(qrt_store_webhook_bound(&db, pool, c, 10, 0, &dropped), APR_SUCCESS);
        ck_assert_int_le(dropped, 1000);
        total += dropped;
        ck_assert_int_lt(++checks, 10);
    }
    ck_assert_int_eq(checks, 3);
    ck_assert_int_eq(total, 2500);
    ck_assert_int_eq(one(apr_psprintf(pool, "SELECT MIN(visit_id) FROM webhook_events WHERE "
                                      "webhook_id = %" APR_INT64_T_FMT " AND state = 0", h)),
                     (long)v[2500].id);
    ck_assert_int_eq(one(apr_psprintf(pool, "SELECT SUM(n) FROM webhook_drops WHERE "
                                      "webhook_id = %" APR_INT64_T_FMT, h)), 2500);
    /* the idle check of every webhook slices too */
    for (i = 0; i < 1500; i++) {
        v[i] = visit(t.id, "scan", 1790010000 + i);
    }
    record(c, 2, v, 1500);
    ck_assert_int_eq(qrt_store_webhook_bound(&db, pool, c, 10, 1, &dropped), APR_SUCCESS);
    ck_assert_int_eq(dropped, 1000);
    ck_assert_int_eq(qrt_webhook_cache_bound_due(c), 1);
    ck_assert_int_eq(qrt_store_webhook_bound(&db, pool, c, 10, 0, &dropped), APR_SUCCESS);
    ck_assert_int_eq(dropped, 500);
    ck_assert_int_eq(qrt_webhook_cache_bound_due(c), 0);
}
END_TEST

START_TEST(sweep_deletes_old_rows_done_with)
{
    qrt_webhook_cache_t *c = qrt_webhook_cache_make(pool);
    int i, more = 1, steps = 0;

    for (i = 0; i < 20; i++) {
        /* old: states 0-3 in turn; then 5 recent delivered */
        qrt_check_db_exec(&db, apr_psprintf(pool, "INSERT INTO webhook_events (webhook_id, "
                                            "msg_id, event_type, body, created_at, "
                                            "next_attempt_at, state) VALUES (1, 'm%d', "
                                            "'scan.created', '{}', %d, 0, %d)", i,
                                            i < 15 ? 1000 + i : 5000, i < 15 ? i % 4 : 1));
        qrt_check_db_exec(&db, apr_psprintf(pool, "INSERT INTO webhook_attempts (event_id, "
                                            "webhook_id, attempt, at) VALUES (%d, 1, 1, %d)",
                                            i + 1, i < 15 ? 1000 + i : 5000));
    }
    while (more) {
        ck_assert_int_eq(qrt_store_webhook_sweep(&db, pool, c, 2000, 4, &more), APR_SUCCESS);
        ck_assert_int_lt(++steps, 20);
    }
    ck_assert_int_ge(steps, 4);
    /* the old pending ones and the recent ones stay */
    ck_assert_int_eq(one("SELECT COUNT(*) FROM webhook_events"), 4 + 5);
    ck_assert_int_eq(one("SELECT COUNT(*) FROM webhook_events WHERE created_at < 2000 "
                         "AND state <> 0"), 0);
    ck_assert_int_eq(one("SELECT COUNT(*) FROM webhook_attempts"), 5);
}
END_TEST

static Suite *store_webhook_suite(void)
{
    Suite *s = suite_create("store_webhook");
    TCase *tc = tcase_create("store_webhook");

    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, db_setup, db_teardown);
    tcase_add_test(tc, limit_and_delete);
    tcase_add_test(tc, tracker_events);
    tcase_add_test(tc, visits_and_the_cache);
    tcase_add_test(tc, expiry);
    tcase_add_test(tc, bound_drops_the_oldest);
    tcase_add_test(tc, bound_in_slices);
    tcase_add_test(tc, sweep_deletes_old_rows_done_with);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(store_webhook_suite());
}
