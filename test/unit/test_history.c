/* qrt_history: the changes a tracker's history row records. */
#include <string.h>
#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>
#include "qrt_history.h"
#include "qrt_check.h"

QRT_CHECK_POOL

static void tracker(qrt_tracker_t *t, const char *url, const char *name, const char *tag)
{
    memset(t, 0, sizeof(*t));
    t->redirect_url = url;
    t->name = name;
    t->tags = apr_array_make(pool, 2, sizeof(const char *));
    if (tag) {
        APR_ARRAY_PUSH(t->tags, const char *) = tag;
    }
}

START_TEST(created_lists_what_is_set)
{
    qrt_tracker_t t;

    tracker(&t, "https://e.example/a", "a", NULL);
    ck_assert_str_eq(qrt_history_changes(pool, NULL, &t, 0),
                     "{\"redirect_url\":[null,\"https://e.example/a\"],\"name\":[null,\"a\"]}");
    tracker(&t, "https://e.example/a", "a", "campaign:spring");
    t.route.max_scans = 5;
    t.route.has_from = 1;
    t.route.valid_from = 0;
    t.password_protected = 1;
    ck_assert_str_eq(qrt_history_changes(pool, NULL, &t, 1),
                     "{\"redirect_url\":[null,\"https://e.example/a\"],\"name\":[null,\"a\"],"
                     "\"tags\":[null,[\"campaign:spring\"]],"
                     "\"valid_from\":[null,\"1970-01-01T00:00:00+0000\"],"
                     "\"max_scans\":[null,5],\"password\":[null,\"***\"]}");
}
END_TEST

START_TEST(updated_lists_what_differs)
{
    qrt_tracker_t a, b;

    tracker(&a, "https://e.example/a", "a", "x");
    tracker(&b, "https://e.example/a", "a", "x");
    ck_assert_str_eq(qrt_history_changes(pool, &a, &b, 0), "{}");
    b.redirect_url = "https://e.example/b";
    b.route.rules = "[{\"redirect_url\":\"https://e.example/ios\",\"os\":[\"iOS\"]}]";
    b.route.expired_url = "https://e.example/over";
    APR_ARRAY_PUSH(b.tags, const char *) = "y";
    ck_assert_str_eq(qrt_history_changes(pool, &a, &b, 0),
                     "{\"redirect_url\":[\"https://e.example/a\",\"https://e.example/b\"],"
                     "\"tags\":[[\"x\"],[\"x\",\"y\"]],"
                     "\"rules\":[[],[{\"redirect_url\":\"https://e.example/ios\","
                     "\"os\":[\"iOS\"]}]],"
                     "\"expired_url\":[null,\"https://e.example/over\"]}");
    /* Rules "[]" and none are the same; tags emptied are []. */
    tracker(&b, "https://e.example/a", "a", NULL);
    b.route.rules = "[]";
    ck_assert_str_eq(qrt_history_changes(pool, &a, &b, 0), "{\"tags\":[[\"x\"],[]]}");
}
END_TEST

START_TEST(passwords_are_stars)
{
    qrt_tracker_t a, b;

    tracker(&a, "https://e.example/a", "a", NULL);
    tracker(&b, "https://e.example/a", "a", NULL);
    b.password_protected = 1;
    /* Not sent: no change recorded, whatever the flags say. */
    ck_assert_str_eq(qrt_history_changes(pool, &a, &b, 0), "{}");
    ck_assert_str_eq(qrt_history_changes(pool, &a, &b, 1), "{\"password\":[null,\"***\"]}");
    a.password_protected = 1;
    ck_assert_str_eq(qrt_history_changes(pool, &a, &b, 1), "{\"password\":[\"***\",\"***\"]}");
    b.password_protected = 0;
    ck_assert_str_eq(qrt_history_changes(pool, &a, &b, 1), "{\"password\":[\"***\",null]}");
    a.password_protected = 0;
    ck_assert_str_eq(qrt_history_changes(pool, &a, &b, 1), "{}");
}
END_TEST

static Suite *history_suite(void)
{
    Suite *s = suite_create("qrt_history");
    TCase *tc = tcase_create("history");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, created_lists_what_is_set);
    tcase_add_test(tc, updated_lists_what_differs);
    tcase_add_test(tc, passwords_are_stars);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(history_suite());
}
