/* Unit tests of qrt_rate: the per-token window table. */
#include <stdlib.h>
#include <check.h>
#include <apr_general.h>
#include "qrt_rate.h"
#include "qrt_check.h"

#define MIN apr_time_from_sec(60)
#define T0 apr_time_from_sec(1700000000)

static qrt_rate_table_t *table(apr_uint32_t n)
{
    qrt_rate_table_t *t = malloc(qrt_rate_table_size(n));

    qrt_rate_table_init(t, n);
    return t;
}

START_TEST(admits_exactly_limit)
{
    qrt_rate_table_t *t = table(64);
    qrt_rate_result_t r;
    int i;

    for (i = 0; i < 120; i++) {
        ck_assert_int_eq(qrt_rate_hit(t, 7, 120, MIN, T0 + i, &r), QRT_RATE_OK);
        ck_assert_int_eq(r.remaining, 119 - i);
    }
    ck_assert_int_eq(qrt_rate_hit(t, 7, 120, MIN, T0 + 200, &r), QRT_RATE_LIMITED);
    ck_assert_int_eq(r.remaining, 0);
    ck_assert_int_eq(r.retry_after, 60);
    ck_assert_int_eq(r.reset, 1700000060);
    /* Refused requests are not counted; the window ends 60 s after its start. */
    ck_assert_int_eq(qrt_rate_hit(t, 7, 120, MIN, T0 + apr_time_from_sec(59), &r),
                     QRT_RATE_LIMITED);
    ck_assert_int_eq(r.retry_after, 1);
    ck_assert_int_eq(qrt_rate_hit(t, 7, 120, MIN, T0 + MIN, &r), QRT_RATE_OK);
    ck_assert_int_eq(r.remaining, 119);
    free(t);
}
END_TEST

START_TEST(keys_are_independent)
{
    qrt_rate_table_t *t = table(64);
    qrt_rate_result_t r;

    ck_assert_int_eq(qrt_rate_hit(t, 1, 1, MIN, T0, &r), QRT_RATE_OK);
    ck_assert_int_eq(qrt_rate_hit(t, 1, 1, MIN, T0, &r), QRT_RATE_LIMITED);
    ck_assert_int_eq(qrt_rate_hit(t, 2, 1, MIN, T0, &r), QRT_RATE_OK);
    ck_assert_int_eq(qrt_rate_active(t, MIN, T0), 2);
    ck_assert_int_eq(qrt_rate_active(t, MIN, T0 + MIN), 0);
    free(t);
}
END_TEST

START_TEST(full_table_refuses_and_expired_slots_are_reused)
{
    qrt_rate_table_t *t = table(16);
    qrt_rate_result_t r;
    apr_uint64_t k;

    for (k = 1; k <= 16; k++) {
        ck_assert_int_eq(qrt_rate_hit(t, k, 10, MIN, T0 + k, &r), QRT_RATE_OK);
    }
    ck_assert_int_eq(qrt_rate_hit(t, 99, 10, MIN, T0 + 100, &r), QRT_RATE_FULL);
    ck_assert_int_ge(r.retry_after, 1);
    /* Keys that hold a slot keep being counted. */
    ck_assert_int_eq(qrt_rate_hit(t, 3, 10, MIN, T0 + 100, &r), QRT_RATE_OK);
    ck_assert_int_eq(r.remaining, 8);
    /* Once windows end, their slots serve new keys. */
    ck_assert_int_eq(qrt_rate_hit(t, 99, 10, MIN, T0 + MIN + 100, &r), QRT_RATE_OK);
    free(t);
}
END_TEST

START_TEST(no_duplicate_slot_after_reuse)
{
    qrt_rate_table_t *t = table(16);
    qrt_rate_result_t r;
    apr_uint64_t k;
    int i;

    for (k = 1; k <= 16; k++) {
        qrt_rate_hit(t, k, 5, MIN, T0, &r);
    }
    /* Key 5 is still live later in the probe chain: its count must carry on. */
    for (i = 0; i < 4; i++) {
        ck_assert_int_eq(qrt_rate_hit(t, 5, 5, MIN, T0 + 10, &r), QRT_RATE_OK);
    }
    ck_assert_int_eq(qrt_rate_hit(t, 5, 5, MIN, T0 + 10, &r), QRT_RATE_LIMITED);
    free(t);
}
END_TEST

START_TEST(judge_counts_the_nth_request_of_a_shared_window)
{
    qrt_rate_result_t r;

    ck_assert_int_eq(qrt_rate_judge(T0, 1, 120, MIN, T0 + 5, &r), QRT_RATE_OK);
    ck_assert_int_eq(r.remaining, 119);
    ck_assert_int_eq(r.reset, 1700000060);
    ck_assert_int_eq(qrt_rate_judge(T0, 120, 120, MIN, T0 + 5, &r), QRT_RATE_OK);
    ck_assert_int_eq(r.remaining, 0);
    ck_assert_int_eq(r.retry_after, 0);
    ck_assert_int_eq(qrt_rate_judge(T0, 121, 120, MIN, T0 + apr_time_from_sec(20), &r),
                     QRT_RATE_LIMITED);
    ck_assert_int_eq(r.remaining, 0);
    ck_assert_int_eq(r.retry_after, 40);
    ck_assert_int_eq(r.limit, 120);
    /* A window read just after its end (another node's clock): at least 1 s. */
    ck_assert_int_eq(qrt_rate_judge(T0, 500, 120, MIN, T0 + MIN + 1, &r),
                     QRT_RATE_LIMITED);
    ck_assert_int_eq(r.retry_after, 1);
    /* A start in the middle of a second ends in the next one. */
    ck_assert_int_eq(qrt_rate_judge(T0 + 300000, 1, 1, MIN, T0 + 300000, &r),
                     QRT_RATE_OK);
    ck_assert_int_eq(r.reset, 1700000061);
}
END_TEST

START_TEST(judge_and_table_agree)
{
    qrt_rate_table_t *t = table(64);
    qrt_rate_result_t a, b;
    qrt_rate_verdict_t va, vb;
    int i;

    for (i = 1; i <= 8; i++) {
        apr_time_t now = T0 + apr_time_from_sec(i);

        va = qrt_rate_hit(t, 9, 5, MIN, now, &a);
        vb = qrt_rate_judge(T0 + apr_time_from_sec(1), (apr_uint64_t)i, 5, MIN, now, &b);
        ck_assert_int_eq(va, vb);
        ck_assert_int_eq(a.remaining, b.remaining);
        ck_assert_int_eq(a.reset, b.reset);
        ck_assert_int_eq(a.retry_after, b.retry_after);
    }
    free(t);
}
END_TEST

START_TEST(server_lists)
{
    apr_array_header_t *a = NULL;
    qrt_rate_server_t *sv;
    apr_pool_t *p;

    apr_pool_create(&p, NULL);
    ck_assert_ptr_null(qrt_rate_servers_parse(p, "127.0.0.1:11211", &a));
    ck_assert_int_eq(a->nelts, 1);
    sv = (qrt_rate_server_t *)a->elts;
    ck_assert_str_eq(sv[0].host, "127.0.0.1");
    ck_assert_int_eq(sv[0].port, 11211);
    ck_assert_ptr_null(qrt_rate_servers_parse(p, "10.0.0.5:11211,mc.internal:11212",
                                              &a));
    ck_assert_int_eq(a->nelts, 2);
    sv = (qrt_rate_server_t *)a->elts;
    ck_assert_str_eq(sv[1].host, "mc.internal");
    ck_assert_int_eq(sv[1].port, 11212);
    ck_assert_ptr_nonnull(qrt_rate_servers_parse(p, "nohostport", &a));
    ck_assert_ptr_nonnull(qrt_rate_servers_parse(p, "host:", &a));
    ck_assert_ptr_nonnull(qrt_rate_servers_parse(p, ":11211", &a));
    ck_assert_ptr_nonnull(qrt_rate_servers_parse(p, "11211", &a));
    ck_assert_ptr_nonnull(qrt_rate_servers_parse(p, "host:0", &a));
    ck_assert_ptr_nonnull(qrt_rate_servers_parse(p, "host:99999", &a));
    ck_assert_ptr_nonnull(qrt_rate_servers_parse(p, "host:12x", &a));
    ck_assert_ptr_nonnull(qrt_rate_servers_parse(p, "a:1,,b:2", &a));
    ck_assert_ptr_nonnull(qrt_rate_servers_parse(p, "a:1,", &a));
    ck_assert_ptr_nonnull(qrt_rate_servers_parse(p, "", &a));
    ck_assert_ptr_nonnull(qrt_rate_servers_parse(p, "[::1]:11211", &a));
    apr_pool_destroy(p);
}
END_TEST

static Suite *rate_suite(void)
{
    Suite *s = suite_create("qrt_rate");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, admits_exactly_limit);
    tcase_add_test(tc, keys_are_independent);
    tcase_add_test(tc, full_table_refuses_and_expired_slots_are_reused);
    tcase_add_test(tc, no_duplicate_slot_after_reuse);
    tcase_add_test(tc, judge_counts_the_nth_request_of_a_shared_window);
    tcase_add_test(tc, judge_and_table_agree);
    tcase_add_test(tc, server_lists);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(rate_suite());
}
