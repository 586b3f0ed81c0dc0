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

static Suite *rate_suite(void)
{
    Suite *s = suite_create("qrt_rate");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, admits_exactly_limit);
    tcase_add_test(tc, keys_are_independent);
    tcase_add_test(tc, full_table_refuses_and_expired_slots_are_reused);
    tcase_add_test(tc, no_duplicate_slot_after_reuse);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(rate_suite());
}
