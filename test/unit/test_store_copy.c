/* Unit tests for qrt_store_copy: a SQLite database copied into an empty one keeps
 * every row, id, NULL and column type, across page boundaries (ids with gaps), the
 * trackers' visitors come from the copied visits (schema 16: SQLite keeps no
 * tracker_visitors rows), and a target with rows is recognised. PostgreSQL is covered
 * by test/api/test_migrate.py. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>
#include <apr_dbd.h>

#include "qrt_schema.h"
#include "qrt_store_copy.h"
#include "qrt_check.h"
#include "qrt_check_db.h"

#define NVISITS (2 * QRT_COPY_PAGE + 345)
/* A tracker's visitors as the visits say them (schema 16). */
#define VISITOR_PAIRS "(SELECT DISTINCT tracker_id, visitor FROM visit_rows WHERE bot = 0) x"

static apr_pool_t *pool;
static qrt_db_t src, dst;
static const char *dir;

static void exec_sql(qrt_db_t *db, const char *sql)
{
    qrt_check_db_exec(db, sql);
}

static void open_db(qrt_db_t *db, const char *name)
{
    qrt_check_db_open(pool, apr_pstrcat(pool, dir, "/", name, NULL), db);
}

static void seed(void)
{
    int i;

    exec_sql(&src, "BEGIN");
    exec_sql(&src, "INSERT INTO accounts VALUES (3, 'acme', 'professional', 100), "
                   "(7, 'other', 'free', 200)");
    exec_sql(&src, "INSERT INTO tokens VALUES (5, 3, 'default', 'qrt_abcd', "
                   "'" "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                   "', 101, NULL, 'write', NULL), (9, 7, 'old', 'qrt_efgh', "
                   "'" "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
                   "', 201, 300, 'read', 4000)");
    exec_sql(&src, "INSERT INTO trackers (id, account_id, code, name, type, redirect_url, "
                   "created_at, updated_at, deleted_at, total_scans, total_clicks, total_bots, "
                   "unique_visitors, last_visit) VALUES "
                   "(2, 3, 'aaaaaaaa', 'one', 'website', 'https://e.example/1', 110, 120, "
                   "NULL, 10, 5, 1, 4, 1000), "
                   "(4, 3, 'bbbbbbbb', 'two', 'website', 'https://e.example/2', 130, 140, "
                   "150, 0, 0, 0, 0, NULL), "
                   "(8, 7, 'cccccccc', 'three', 'website', 'https://e.example/3', 210, 210, "
                   "NULL, 2, 0, 0, 1, 2000)");
    exec_sql(&src, "INSERT INTO tracker_tags VALUES (2, 'campaign:spring', 'campaign', "
                   "'spring'), (2, 'plain', NULL, 'plain'), (2, 'region:eu', 'region', 'eu'), "
                   "(8, 'x', NULL, 'x')");
    exec_sql(&src, "INSERT INTO tracker_routing VALUES (2, '[{\"redirect_url\":"
                   "\"https://e.example/ios\",\"os\":[\"iOS\"]}]', 100, NULL, 50, "
                   "'https://e.example/over', 'pbkdf2-sha256$150000$x$y', 7), "
                   "(8, NULL, NULL, 2000, NULL, NULL, NULL, 0)");
    exec_sql(&src, "INSERT INTO tracker_history VALUES (3, 2, 3, 110, 'default', 'created', "
                   "'{\"name\":[null,\"one\"]}'), (6, 4, 3, 150, NULL, 'deleted', '{}'), "
                   "(11, 2, 3, 160, 'ci', 'updated', '{\"password\":[null,\"***\"]}')");
    /* a style with a logo of bytes that are no text (NULs, high bytes), one without */
    exec_sql(&src, "INSERT INTO styles VALUES (5, 3, 'brand', '#1A237E', '#FFFFFF', 'H', 4, "
                   "X'89504E470D0A1A0A0000FF00', 32, 16, 100, 120, 3), "
                   "(9, 3, 'default', '#000000', '#FFFFFF', 'M', 6, NULL, NULL, NULL, 130, 130, 1)");
    /* (one with the secret a new one replaced, still signing: schema 67) */
    exec_sql(&src, "INSERT INTO webhooks (id, account_id, url, events, secret, created_at, "
                   "failures, disabled_at, disabled_reason, secret_prev, secret_prev_until) "
                   "VALUES (4, 3, 'https://hooks.example/a', 3, 'whsec_c2VjcmV0', 100, 0, NULL, "
                   "NULL, 'whsec_b2xk', 5000), (7, 3, 'https://hooks.example/b', 4, "
                   "'whsec_b3RoZXI=', 110, 5, 150, 'failed 5 events in a row', NULL, NULL)");
    /* (claimed_by, schema 44, is not copied: a lease names the server that took it) */
    exec_sql(&src, "INSERT INTO webhook_events (id, webhook_id, msg_id, event_type, tracker_id, "
                   "body, created_at, attempts, next_attempt_at, state, claimed_until, visit_id, "
                   "visit_start, claimed_by) VALUES (12, 4, 'msg_aaaa', 'scan.created', 2, "
                   "'{\"type\":\"scan.created\"}', 120, 0, 120, 0, NULL, NULL, NULL, NULL), "
                   "(14, 4, 'msg_cccc', 'scan.created', 2, '', 120, 0, 120, 0, NULL, 31, 1100, "
                   "NULL), (13, 7, 'msg_bbbb', 'tracker.created', NULL, '{}', 121, 2, 400, 2, "
                   "125, NULL, NULL, 77)");
    exec_sql(&src, "INSERT INTO webhook_attempts VALUES (20, 13, 7, 1, 500, NULL, 122, 300), "
                   "(21, 13, 7, 2, NULL, 'timed out', 300, NULL)");
    exec_sql(&src, "INSERT INTO webhook_drops VALUES (3, 4, 120, 25), (6, 7, 180, 1)");
    for (i = 0; i < NVISITS; i++) {
        /* Ids with gaps; every other visit with NULLs, one with empty texts; 97
         * visitors, their ids of both signs (schema 9: 64-bit integers). */
        exec_sql(&src, apr_psprintf(pool, "INSERT INTO visits VALUES (%d, %d, %d, '%s', "
                 "%s, %s, %s, 'Chrome', '120', 'Android', 'mobile', %s, 'UA %d', %d, "
                 "'%016" APR_UINT64_T_HEX_FMT "', %s)", 3 * i + 11, i % 3 ? 2 : 8, 1000 + i,
                 i % 5 ? "scan" : "click", i % 2 ? "NULL" : "'192.0.2.0'",
                 i == 7 ? "''" : "'DE'", i % 2 ? "NULL" : "'Berlin'",
                 i % 4 ? "NULL" : "'https://r.example/'", i, i % 11 == 0,
                 (apr_uint64_t)(i % 97) * APR_UINT64_C(0x9E3779B97F4A7C15),
                 i % 3 == 1 ? "NULL" : i % 3 ? "'https://d.example/a'" : "'https://d.example/b'"));
    }
    exec_sql(&src, "COMMIT");
}

static void setup(void)
{
    apr_pool_create(&pool, NULL);
    dir = qrt_check_db_dir(pool, "store-copy");
    open_db(&src, "src.db");
    open_db(&dst, "dst.db");
    seed();
}

static void teardown(void)
{
    qrt_check_db_drop(pool, &src, dir, "src.db");
    qrt_check_db_drop(pool, &dst, dir, "dst.db");
    rmdir(dir);
    apr_pool_destroy(pool);
}

/* Every row of a table as text, in key order: quote() tells NULL from '' and an
 * integer from a text. */
static const char *dump(qrt_db_t *db, const char *table, const char *cols,
                        const char *order, int *rows)
{
    char *sql = apr_pstrdup(pool, "SELECT ''"), *list = apr_pstrdup(pool, cols);
    char *col, *last = NULL;
    apr_array_header_t *out = apr_array_make(pool, 1024, sizeof(const char *));
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;

    for (col = apr_strtok(list, ",", &last); col; col = apr_strtok(NULL, ",", &last)) {
        sql = apr_pstrcat(pool, sql, " || '|' || quote(", col, ")", NULL);
    }
    sql = apr_pstrcat(pool, sql, " FROM ", table, " ORDER BY ", order, NULL);
    ck_assert_msg(apr_dbd_select(db->driver, pool, db->handle, &res, sql, 0) == 0, "%s",
                  sql);
    *rows = 0;
    while (apr_dbd_get_row(db->driver, pool, res, &row, -1) == 0) {
        APR_ARRAY_PUSH(out, const char *) =
            apr_pstrcat(pool, apr_dbd_get_entry(db->driver, row, 0), "\n", NULL);
        (*rows)++;
    }
    return apr_array_pstrcat(pool, out, 0);
}

START_TEST(copies_every_row_as_it_is)
{
    static const char *const t[][3] = {
        { "accounts", "id,name,plan,created_at", "id" },
        { "tokens", "id,account_id,name,prefix,digest,created_at,revoked_at,scope,expires_at",
          "id" },
        { "trackers", "id,account_id,code,name,type,redirect_url,created_at,updated_at,"
          "deleted_at,total_scans,total_clicks,total_bots,unique_visitors,last_visit", "id" },
        { "tracker_tags", "tracker_id,tag,dimension,value", "tracker_id, tag" },
        { "tracker_routing", "tracker_id,rules,valid_from,valid_until,max_scans,expired_url,"
          "password_hash,redirected", "tracker_id" },
        { "visits", "id,tracker_id,visit_start,source,ip,country,city,browser,"
          "browser_version,os,device,referer,user_agent,bot,visitor,destination", "id" },
        { VISITOR_PAIRS, "tracker_id,visitor", "tracker_id, visitor" },
        { "tracker_history", "id,tracker_id,account_id,at,token_label,kind,changes", "id" },
        { "styles", "id,account_id,name,fg,bg,ecc,margin,logo,logo_width,logo_height,"
          "created_at,updated_at,version", "id" },
        { "webhooks", "id,account_id,url,events,secret,created_at,failures,disabled_at,"
          "disabled_reason,secret_prev,secret_prev_until", "id" },
        { "webhook_events", "id,webhook_id,msg_id,event_type,tracker_id,body,created_at,"
          "attempts,next_attempt_at,state,claimed_until,visit_id,visit_start", "id" },
        { "webhook_attempts", "id,event_id,webhook_id,attempt,http_status,error,at,"
          "next_attempt_at", "id" },
        { "webhook_drops", "id,webhook_id,at,n", "id" },
    };
    int expect[QRT_COPY_TABLES] = { 2, 2, 3, 4, 2, NVISITS, 0, 3, 2, 2, 3, 2, 2 };
    qrt_copy_report_t r;
    const char *table = NULL;
    int i, na, nb;

    /* The visitors: every (tracker, visitor) of a visit that is not a bot. */
    dump(&src, VISITOR_PAIRS, "tracker_id,visitor", "tracker_id, visitor", &expect[6]);
    ck_assert_int_ge(expect[6], 100);
    ck_assert_int_eq(qrt_store_copy_check_empty(&dst, pool, &table), APR_SUCCESS);
    ck_assert_int_eq(qrt_store_copy_check_empty(&src, pool, &table), APR_EEXIST);
    ck_assert_str_eq(table, "accounts");
    ck_assert_int_eq(qrt_store_copy_all(&src, &dst, pool, &r), APR_SUCCESS);
    ck_assert_int_eq(qrt_store_copy_sequences(&dst, pool), APR_SUCCESS);
    for (i = 0; i < QRT_COPY_TABLES; i++) {
        const char *a = dump(&src, t[i][0], t[i][1], t[i][2], &na);
        const char *b = dump(&dst, t[i][0], t[i][1], t[i][2], &nb);

        ck_assert_str_eq(r.table[i], i == 6 ? "tracker_visitors" : t[i][0]);
        ck_assert_int_eq(r.rows[i], expect[i]);
        ck_assert_int_eq(nb, expect[i]);
        ck_assert_msg(!strcmp(a, b), "%s differs:\n%s\n%s", t[i][0], a, b);
    }
    ck_assert_int_eq(qrt_store_copy_check_empty(&dst, pool, &table), APR_EEXIST);
    dump(&dst, "tracker_visitors", "tracker_id", "tracker_id", &nb);
    ck_assert_int_eq(nb, 0);
    /* New rows get fresh ids above the copied ones. */
    exec_sql(&dst, "INSERT INTO visits (tracker_id, visit_start, source, bot, visitor) "
                   "VALUES (2, 1, 'scan', 0, '0000000000000000')");
    ck_assert_str_eq(dump(&dst, "visits", "id", "id DESC LIMIT 1", &na),
                     apr_psprintf(pool, "|%d\n", 3 * (NVISITS - 1) + 11 + 1));
}
END_TEST

START_TEST(a_failed_page_is_reported_with_its_table)
{
    qrt_copy_report_t r;

    /* A tracker already there: the target's unique code refuses the page. */
    exec_sql(&dst, "INSERT INTO accounts VALUES (99, 'x', 'free', 1)");
    exec_sql(&dst, "INSERT INTO trackers (id, account_id, code, name, type, redirect_url, "
                   "created_at, updated_at) VALUES (99, 99, 'bbbbbbbb', 'x', 'website', "
                   "'https://e.example/', 1, 1)");
    ck_assert_int_eq(qrt_store_copy_all(&src, &dst, pool, &r), APR_EGENERAL);
    ck_assert_ptr_nonnull(r.error);
    ck_assert_msg(!strncmp(r.error, "trackers: " SQL_copy_trackers_add, 27), "%s", r.error);
    ck_assert_int_eq(r.rows[0], 2);
    ck_assert_int_eq(r.rows[2], 0);
}
END_TEST

static Suite *store_copy_suite(void)
{
    Suite *s = suite_create("qrt_store_copy");
    TCase *tc = tcase_create("store_copy");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, copies_every_row_as_it_is);
    tcase_add_test(tc, a_failed_page_is_reported_with_its_table);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(store_copy_suite());
}
