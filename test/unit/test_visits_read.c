/* Unit tests for qrt_store_visits_read: every way of reading a tracker's visits
 * (pages by offset, polls by since_id, keyed export chunks) against a brute-force
 * reference, on a real SQLite database with many visits in the same second. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>
#include <apr_dbd.h>

#include "qrt_schema.h"
#include "qrt_store.h"
#include "qrt_store_visits_read.h"
#include "qrt_check.h"
#include "qrt_check_db.h"

#define NVISITS 300

typedef struct {
    apr_int64_t id, tracker_id, t;
    char ua[64];
    char referer[64];
} ref_visit;

static apr_pool_t *pool;
static qrt_db_t db;
static const char *dir;
static ref_visit ref[NVISITS];
static int nref;

static void exec_sql(const char *sql)
{
    qrt_check_db_exec(&db, sql);
}

static void setup(void)
{
    unsigned int seed = 12345;

    apr_pool_create(&pool, NULL);
    dir = qrt_check_db_temp(pool, "visits-read", &db);
    exec_sql("INSERT INTO accounts (name, plan, created_at) VALUES ('a', 'professional', 0)");
    exec_sql("INSERT INTO trackers (account_id, code, name, type, redirect_url, created_at, "
             "updated_at) VALUES (1, 'code01', 't1', 'website', 'https://e.example/', 0, 0)");
    exec_sql("INSERT INTO trackers (account_id, code, name, type, redirect_url, created_at, "
             "updated_at) VALUES (1, 'code02', 't2', 'website', 'https://e.example/', 0, 0)");
    exec_sql("BEGIN");
    for (nref = 0; nref < NVISITS; nref++) {
        ref_visit *v = &ref[nref];

        seed = seed * 1103515245 + 12345;
        v->id = nref + 1;
        v->tracker_id = (seed >> 8) % 5 == 0 ? 2 : 1;
        /* Few distinct seconds, out of id order: ties everywhere. */
        v->t = 1000 + ((seed >> 12) % 9) * 10;
        apr_snprintf(v->ua, sizeof(v->ua), "Agent/%d %s", (int)((seed >> 4) % 7),
                     (seed >> 16) % 3 == 0 ? "KIOSK" : "phone");
        apr_snprintf(v->referer, sizeof(v->referer), "https://r.example/%d%%_x",
                     (int)((seed >> 20) % 4));
        exec_sql(apr_psprintf(pool, "INSERT INTO visits (id, tracker_id, visit_start, source, "
                              "ip, user_agent, referer, bot, visitor) VALUES (%" APR_INT64_T_FMT
                              ", %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", 'scan', "
                              "'192.0.2.0', '%s', '%s', 0, '0000000000000000')",
                              v->id, v->tracker_id, v->t, v->ua, v->referer));
    }
    exec_sql("COMMIT");
}

static void teardown(void)
{
    qrt_check_db_remove(pool, &db, dir);
    apr_pool_destroy(pool);
}

/* ASCII-case-insensitive substring, as the store's search means it. */
static int ref_contains(const char *hay, const char *needle)
{
    apr_size_t n = strlen(needle), i, j;

    for (i = 0; hay[i]; i++) {
        for (j = 0; j < n && hay[i + j]; j++) {
            char a = hay[i + j], b = needle[j];

            if (a >= 'A' && a <= 'Z') {
                a = (char)(a - 'A' + 'a');
            }
            if (b >= 'A' && b <= 'Z') {
                b = (char)(b - 'A' + 'a');
            }
            if (a != b) {
                break;
            }
        }
        if (j == n) {
            return 1;
        }
    }
    return 0;
}

static int ref_match(const ref_visit *v, const qrt_visit_filter_t *f)
{
    return v->tracker_id == f->tracker_id && v->t >= f->start && v->t <= f->end
        && v->id > f->since_id
        && (!f->search || ref_contains(v->ua, f->search)
            || ref_contains(v->referer, f->search) || ref_contains("192.0.2.0", f->search));
}

/* The ids f selects, newest first, ties by id descending. */
static int ref_list(const qrt_visit_filter_t *f, apr_int64_t *out)
{
    int n = 0, i, j;

    for (i = 0; i < nref; i++) {
        if (ref_match(&ref[i], f)) {
            out[n++] = i;
        }
    }
    for (i = 1; i < n; i++) {
        for (j = i; j > 0; j--) {
            const ref_visit *a = &ref[out[j - 1]], *b = &ref[out[j]];
            apr_int64_t tmp;

            if (a->t > b->t || (a->t == b->t && a->id > b->id)) {
                break;
            }
            tmp = out[j];
            out[j] = out[j - 1];
            out[j - 1] = tmp;
        }
    }
    for (i = 0; i < n; i++) {
        out[i] = ref[out[i]].id;
    }
    return n;
}

static void check_filter(const qrt_visit_filter_t *f, const char *what)
{
    apr_int64_t want[NVISITS], total = -1;
    int n = ref_list(f, want), got, limit, i;
    apr_array_header_t *page;
    const apr_int64_t limits[] = { 1, 2, 3, 7, 25, 1000 };
    size_t k;

    ck_assert_msg(qrt_store_visits_count(&db, pool, f, &total) == APR_SUCCESS, "%s: %s", what,
                  db.error ? db.error : "");
    ck_assert_msg(total == n, "%s: count %" APR_INT64_T_FMT ", want %d", what, total, n);
    for (k = 0; k < sizeof(limits) / sizeof(limits[0]); k++) {
        limit = (int)limits[k];
        /* By offset. */
        for (got = 0; got < n || got == 0; got += limit) {
            ck_assert_int_eq(qrt_store_visits_page(&db, pool, f, got, limit, &page),
                             APR_SUCCESS);
            ck_assert_msg(page->nelts == (n - got < limit ? n - got : limit),
                          "%s: page at %d of %d: %d rows", what, got, limit, page->nelts);
            for (i = 0; i < page->nelts; i++) {
                const qrt_visit_t *v = &APR_ARRAY_IDX(page, i, qrt_visit_t);

                ck_assert_msg(v->id == want[got + i], "%s: offset %d limit %d row %d: id %"
                              APR_INT64_T_FMT ", want %" APR_INT64_T_FMT, what, got, limit,
                              i, v->id, want[got + i]);
            }
            if (n == 0) {
                break;
            }
        }
        /* By key, as the export reads. */
        got = 0;
        page = NULL;
        for (;;) {
            apr_int64_t after_t = 0, after_id = 0;

            if (got > 0) {
                after_id = want[got - 1];
                after_t = ref[after_id - 1].t;
            }
            ck_assert_int_eq(qrt_store_visits_after(&db, pool, f, after_t, after_id, limit,
                                                    &page), APR_SUCCESS);
            for (i = 0; i < page->nelts; i++) {
                const qrt_visit_t *v = &APR_ARRAY_IDX(page, i, qrt_visit_t);

                ck_assert_msg(got + i < n, "%s: keyed limit %d: too many rows", what, limit);
                ck_assert_msg(v->id == want[got + i], "%s: keyed limit %d row %d: id %"
                              APR_INT64_T_FMT ", want %" APR_INT64_T_FMT, what, limit,
                              got + i, v->id, want[got + i]);
                ck_assert_int_eq(v->visit_start, ref[v->id - 1].t);
            }
            got += page->nelts;
            if (page->nelts < limit) {
                break;
            }
        }
        ck_assert_msg(got == n, "%s: keyed limit %d: %d rows, want %d", what, limit, got, n);
    }
}

START_TEST(every_path_agrees_with_the_reference)
{
    const char *searches[] = { NULL, "kiosk", "PHONE", "agent/3", "0%_", "%_x", "___",
                               "r.example/2", "192.0.2", "nothing" };
    const apr_int64_t sinces[] = { 0, 1, 150, 299, 300 };
    const apr_int64_t windows[][2] = { { APR_INT64_MIN, APR_INT64_MAX }, { 1000, 1080 },
                                       { 1030, 1030 }, { 1031, 1039 }, { 1070, APR_INT64_MAX },
                                       { APR_INT64_MIN, 1000 } };
    size_t s, w, k;
    apr_int64_t tr;

    for (tr = 1; tr <= 3; tr++) {
        for (s = 0; s < sizeof(searches) / sizeof(searches[0]); s++) {
            for (w = 0; w < sizeof(windows) / sizeof(windows[0]); w++) {
                for (k = 0; k < sizeof(sinces) / sizeof(sinces[0]); k++) {
                    qrt_visit_filter_t f;
                    const char *what;

                    qrt_visit_filter_init(&f, tr);
                    f.search = searches[s];
                    f.start = windows[w][0];
                    f.end = windows[w][1];
                    f.since_id = sinces[k];
                    what = apr_psprintf(pool, "tracker %d search %s window %d since %d",
                                        (int)tr, f.search ? f.search : "-", (int)w,
                                        (int)f.since_id);
                    check_filter(&f, what);
                }
            }
        }
    }
}
END_TEST

START_TEST(max_id)
{
    apr_int64_t m = -1, want1 = 0, want2 = 0;
    int i;

    for (i = 0; i < nref; i++) {
        if (ref[i].tracker_id == 1) {
            want1 = ref[i].id;
        }
        else {
            want2 = ref[i].id;
        }
    }
    ck_assert_int_eq(qrt_store_visits_max_id(&db, pool, 1, &m), APR_SUCCESS);
    ck_assert_int_eq(m, want1);
    ck_assert_int_eq(qrt_store_visits_max_id(&db, pool, 2, &m), APR_SUCCESS);
    ck_assert_int_eq(m, want2);
    ck_assert_int_eq(qrt_store_visits_max_id(&db, pool, 3, &m), APR_SUCCESS);
    ck_assert_int_eq(m, 0);
}
END_TEST

/* The ids a poll of tracker 3 since since_id gives (search: NULL or a text), in
 * order, as a string "a,b,c"; its count must agree. */
static const char *poll_ids(apr_int64_t since_id, const char *search)
{
    qrt_visit_filter_t f;
    apr_array_header_t *page;
    apr_int64_t total = -1;
    const char *ids = "";
    int i;

    qrt_visit_filter_init(&f, 3);
    f.since_id = since_id;
    f.search = search;
    ck_assert_int_eq(qrt_store_visits_page(&db, pool, &f, 0, 100, &page), APR_SUCCESS);
    ck_assert_int_eq(qrt_store_visits_count(&db, pool, &f, &total), APR_SUCCESS);
    ck_assert_int_eq(total, page->nelts);
    for (i = 0; i < page->nelts; i++) {
        ids = apr_psprintf(pool, "%s%s%" APR_INT64_T_FMT, ids, i ? "," : "",
                           APR_ARRAY_IDX(page, i, qrt_visit_t).id);
    }
    return ids;
}

static void add_visit3(apr_int64_t id, apr_int64_t t, const char *ua)
{
    exec_sql(apr_psprintf(pool, "INSERT INTO visits (id, tracker_id, visit_start, source, "
                          "ip, user_agent, bot, visitor) VALUES (%" APR_INT64_T_FMT ", 3, %"
                          APR_INT64_T_FMT ", 'scan', '198.51.100.7', '%s', 0, "
                          "'00000000000000aa')", id, t, ua));
}

/* Schema 14: polls on SQLite walk the time order from the floor of the ids above
 * since_id (visit_floor, per 4,096 ids). Ids over three buckets (the fixture's are
 * 1..300); a visit added late with an old time (an import) and one moved to an
 * earlier time are found; rows written into visit_rows by hand, bypassing the
 * floor, show that the floor is what a poll starts from, and that a missing bucket
 * makes it walk everything. */
START_TEST(polls_across_id_buckets)
{
    apr_int64_t m = -1, id;

    exec_sql("INSERT INTO trackers (account_id, code, name, type, redirect_url, created_at, "
             "updated_at) VALUES (1, 'code03', 't3', 'website', 'https://e.example/', 0, 0)");
    for (id = 4001; id <= 4010; id++) {
        add_visit3(id, 5000 + id - 4000, "Live/1");
    }
    add_visit3(4096, 5100, "Live/1");           /* bucket 1 */
    add_visit3(4097, 900, "Old/1");             /* bucket 1, the oldest time */
    add_visit3(8192, 5200, "Live/1");           /* bucket 2 */
    ck_assert_int_eq(qrt_store_visits_max_id(&db, pool, 3, &m), APR_SUCCESS);
    ck_assert_int_eq(m, 8192);
    ck_assert_str_eq(poll_ids(8192, NULL), "");
    ck_assert_str_eq(poll_ids(9000, NULL), "");
    ck_assert_str_eq(poll_ids(5000, NULL), "8192");
    ck_assert_str_eq(poll_ids(4097, NULL), "8192");
    ck_assert_str_eq(poll_ids(4096, NULL), "8192,4097");
    ck_assert_str_eq(poll_ids(4007, NULL), "8192,4096,4010,4009,4008,4097");
    ck_assert_str_eq(poll_ids(4007, "old/1"), "4097");
    ck_assert_str_eq(poll_ids(4097, "old/1"), "");
    /* A visit moved to an earlier time, by hand through the view. */
    exec_sql("UPDATE visits SET visit_start = 100 WHERE id = 4009");
    ck_assert_str_eq(poll_ids(4008, NULL), "8192,4096,4010,4097,4009");
    /* Another tracker's visits leave this one's newest id as it is. */
    ck_assert_int_eq(qrt_store_visits_max_id(&db, pool, 1, &m), APR_SUCCESS);
    ck_assert_int_lt(m, 4001);
    /* A row written into visit_rows itself, below bucket 2's floor: not seen, the
     * poll starts at the floor (5,200)... */
    exec_sql("INSERT INTO visit_rows (id, tracker_id, visit_start, click, bot, visitor, "
             "ua_id, place_id) SELECT 8193, 3, 50, 0, 0, 7, ua_id, place_id FROM visit_rows "
             "WHERE id = 8192");
    exec_sql("UPDATE visit_seq SET last = 8193");
    ck_assert_str_eq(poll_ids(8192, NULL), "");
    /* ...while with a bucket missing (3), the poll walks the whole tracker. */
    exec_sql("INSERT INTO visit_rows (id, tracker_id, visit_start, click, bot, visitor, "
             "ua_id, place_id) SELECT 12288, 3, 60, 0, 0, 7, ua_id, place_id FROM visit_rows "
             "WHERE id = 8192");
    exec_sql("UPDATE visit_seq SET last = 12288");
    ck_assert_str_eq(poll_ids(8192, NULL), "12288,8193");
}
END_TEST

/* SQLite's plans for the statements whose plan is the point (schema 11: visit_rows is
 * keyed (tracker_id, visit_start, id)): what SQLite reports for each, joined. */
static const char *plan_of(const char *label)
{
    const char *sql = NULL, *plan = "";
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    char *q, *at;
    int i;

    for (i = 0; qrt_sql_statements[i].name; i++) {
        if (!strcmp(qrt_sql_statements[i].name, label)) {
            sql = qrt_sql_statements[i].sql;
        }
    }
    ck_assert_msg(sql != NULL, "no statement %s", label);
    /* its arguments as SQLite's parameters, as the store prepares it */
    q = apr_pstrcat(pool, "EXPLAIN QUERY PLAN ", sql, NULL);
    while ((at = strstr(q, "%lld")) || (at = strstr(q, "%s")) || (at = strstr(q, "%d"))) {
        *at = '\0';
        q = apr_pstrcat(pool, q, "?", at + (at[1] == 'l' ? 4 : 2), NULL);
    }
    ck_assert_msg(apr_dbd_select(db.driver, pool, db.handle, &res, q, 0) == 0, "%s: %s",
                  label, apr_dbd_error(db.driver, db.handle, 1));
    while (apr_dbd_get_row(db.driver, pool, res, &row, -1) == 0) {
        plan = apr_pstrcat(pool, plan, apr_dbd_get_entry(db.driver, row, 3), "\n", NULL);
    }
    return plan;
}

START_TEST(plans_seek_what_they_need)
{
    const char *plan;

    /* A search's picked matches: each row sought by its key, never the tracker's
     * window walked per match. */
    plan = plan_of(SQL_visits_page_pick_s);
    ck_assert_msg(!strstr(plan, "visit_start>?") && !strstr(plan, "SCAN v\n"), "%s", plan);
    ck_assert_msg(strstr(plan, "visits_place (tracker_id=? AND place_id=?)"), "%s", plan);
    /* A search's matched entries, from the tracker's own (issue 33): the tracker's
     * ids from its index, one seek past the last found each (then the rest of the
     * index from there), each entry sought by its id, never the dictionary scanned. */
    plan = plan_of(SQL_visits_ids_ua_own_s);
    ck_assert_msg(strstr(plan, "visit_uas USING INTEGER PRIMARY KEY (rowid=?)")
                  && strstr(plan, "visits_ua (tracker_id=? AND ua_id>?)")
                  && !strstr(plan, "SCAN v\n"), "%s", plan);
    plan = plan_of(SQL_visits_ids_ref_own_s);
    ck_assert_msg(strstr(plan, "visit_referers USING INTEGER PRIMARY KEY (rowid=?)")
                  && strstr(plan, "visits_ref (tracker_id=? AND ref_id>?)")
                  && !strstr(plan, "SCAN v\n"), "%s", plan);
    /* ... and the visits that name them, through an index of the dictionary's ids:
     * the tracker's (visits_ua) or the purge's (visits_by_ua, schema 22, which holds
     * the table's key after the id: a seek by entry, tracker and window at once). */
    plan = plan_of(SQL_visits_count_ua_s);
    ck_assert_msg(strstr(plan, "visits_ua (tracker_id=? AND ua_id=?")
                  || strstr(plan, "visits_by_ua (ua_id=? AND tracker_id=?"), "%s", plan);
    /* An export's chunk with a search: the tracker's window, each row's own strings. */
    plan = plan_of(SQL_visits_first_s);
    ck_assert_msg(strstr(plan, "SEARCH v USING PRIMARY KEY (tracker_id=? AND visit_start>?")
                  && !strstr(plan, "SCAN") && !strstr(plan, "SUBQUERY"), "%s", plan);
    /* A count over a window: the window of the key, not the whole tracker by id. */
    plan = plan_of(SQL_visits_count);
    ck_assert_msg(strstr(plan, "PRIMARY KEY (tracker_id=? AND visit_start>? AND "
                            "visit_start<?)"), "%s", plan);
    /* A poll (schema 14): the floor of the ids above since_id, a range of
     * visit_floor's key; then the window from it, as the count above. */
    plan = plan_of(SQL_visits_floor);
    ck_assert_msg(strstr(plan, "visit_floor USING INTEGER PRIMARY KEY (rowid>?)"), "%s", plan);
    /* A tracker's newest id: its row, not its visits. */
    plan = plan_of(SQL_visits_max_id);
    ck_assert_msg(strstr(plan, "trackers USING INTEGER PRIMARY KEY (rowid=?)"), "%s", plan);
    /* A copy's page of visits: a seek on the key, no sort. */
    plan = plan_of(SQL_copy_visits_page);
    ck_assert_msg(strstr(plan, "PRIMARY KEY ((tracker_id,visit_start,id)>(?,?,?))"), "%s",
                  plan);
    ck_assert_msg(!strstr(plan, "TEMP B-TREE") && !strstr(plan, "SCAN v\n"), "%s", plan);
    /* The write path's previous visit on a tracker: the visitor's few visits. */
    plan = plan_of(SQL_agg_seek_visitor_on_tracker);
    ck_assert_msg(strstr(plan, "visits_visitor (visitor=?)"), "%s", plan);
    /* ... in the index's order, with no sort (a visitor with thousands of visits in
     * one second, a kiosk, would sort them all for each seek). */
    ck_assert_msg(!strstr(plan, "TEMP B-TREE"), "%s", plan);
    /* The previous visit in the account, which also says whether a visitor is new on
     * a tracker (schema 16: no tracker_visitors): the visitor's few visits, newest
     * first, with no sort. */
    plan = plan_of(SQL_agg_seek_visitor_in_account);
    ck_assert_msg(strstr(plan, "SEARCH v USING INDEX visits_visitor (visitor=?)")
                  && !strstr(plan, "TEMP B-TREE"), "%s", plan);
    plan = plan_of(SQL_agg_seek_visitor);
    ck_assert_msg(strstr(plan, "SEARCH v USING INDEX visits_visitor (visitor=?)")
                  && !strstr(plan, "TEMP B-TREE"), "%s", plan);
    /* Links and gaps (schema 17): by previous time along the tables' keys; by time
     * along agg_link_u and agg_gaps_u, which hold the days not sealed alone; a sealed
     * day's rows found again by (previous_time, visit_time). */
    plan = plan_of(SQL_report_links_by_previous_time_browser);
    ck_assert_msg(strstr(plan, "agg_link USING PRIMARY KEY (account_id=? AND "
                               "previous_time>? AND previous_time<?)"), "%s", plan);
    plan = plan_of(SQL_report_gaps_by_previous_time);
    ck_assert_msg(strstr(plan, "agg_gaps USING PRIMARY KEY (kind=? AND account_id=? AND "
                               "previous_time>? AND previous_time<?)"), "%s", plan);
    plan = plan_of(SQL_report_links_by_time_tag);
    ck_assert_msg(strstr(plan, "INDEX agg_link_u (account_id=? AND visit_time>? AND "
                               "visit_time<?)"), "%s", plan);
    plan = plan_of(SQL_report_gaps_by_time);
    ck_assert_msg(strstr(plan, "INDEX agg_gaps_u (kind=? AND account_id=? AND "
                               "visit_time>? AND visit_time<?)"), "%s", plan);
    plan = plan_of(SQL_agg_blob_links);
    ck_assert_msg(strstr(plan, "INDEX agg_link_u (account_id=? AND visit_time>? AND "
                               "visit_time<?)"), "%s", plan);
    plan = plan_of(SQL_agg_blob_link_open);
    ck_assert_msg(strstr(plan, "PRIMARY KEY (account_id=? AND previous_time=? AND "
                               "visit_time=?)"), "%s", plan);
    plan = plan_of(SQL_agg_blob_gap_open);
    ck_assert_msg(strstr(plan, "PRIMARY KEY (kind=? AND account_id=? AND previous_time=? "
                               "AND visit_time=?)"), "%s", plan);
    plan = plan_of(SQL_agg_seek_visitor_in_account);
    ck_assert_msg(strstr(plan, "visits_visitor (visitor=?)") && !strstr(plan, "TEMP B-TREE"),
                  "%s", plan);
}
END_TEST

START_TEST(like_pattern)
{
    ck_assert_str_eq(qrt_visits_like_pattern(pool, "abc"), "%abc%");
    ck_assert_str_eq(qrt_visits_like_pattern(pool, "AbC"), "%abc%");
    ck_assert_str_eq(qrt_visits_like_pattern(pool, "Zürich"), "%zürich%");
    ck_assert_str_eq(qrt_visits_like_pattern(pool, "100%_\\"), "%100\\%\\_\\\\%");
    ck_assert_str_eq(qrt_visits_like_pattern(pool, "'; --"), "%'; --%");
    ck_assert_str_eq(qrt_visits_like_pattern(pool, ""), "%%");
    ck_assert_str_eq(qrt_visits_like_pattern(pool, NULL), "%%");
}
END_TEST

static Suite *visits_read_suite(void)
{
    Suite *s = suite_create("qrt_store_visits_read");
    TCase *tc = tcase_create("visits_read");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, every_path_agrees_with_the_reference);
    tcase_add_test(tc, max_id);
    tcase_add_test(tc, polls_across_id_buckets);
    tcase_add_test(tc, like_pattern);
    tcase_add_test(tc, plans_seek_what_they_need);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(visits_read_suite());
}
