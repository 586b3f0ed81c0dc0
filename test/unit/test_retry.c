/* qrt_retry: the schedule and its jitter, Retry-After, what an answer means. */
#include <check.h>
#include <apr_general.h>

#include "qrt_retry.h"
#include "qrt_check.h"

START_TEST(schedule)
{
    static const apr_int64_t step[] = { 5, 300, 1800, 7200, 18000, 36000, 86400 };
    int i;

    for (i = 0; i < QRT_RETRY_STEPS; i++) {
        apr_int64_t lo = qrt_retry_delay(i + 1, 0), mid = qrt_retry_delay(i + 1, 0x80000000u),
                    hi = qrt_retry_delay(i + 1, 0xffffffffu);

        ck_assert_int_eq(mid, step[i]);
        ck_assert_msg(lo >= step[i] * 9 / 10 && lo <= step[i], "%d: %lld", i, (long long)lo);
        ck_assert_msg(hi <= (step[i] * 11 + 9) / 10 && hi >= step[i], "%d: %lld", i,
                      (long long)hi);
        ck_assert(i == 0 ? lo <= hi : lo < hi);  /* whole seconds: 5 s keeps little */
    }
    ck_assert_int_eq(qrt_retry_delay(0, 0), -1);
    ck_assert_int_eq(qrt_retry_delay(QRT_RETRY_ATTEMPTS, 0), -1);
    ck_assert_int_eq(qrt_retry_delay(-5, 0), -1);
}
END_TEST

START_TEST(retry_after)
{
    apr_int64_t now = 1445412480;   /* Wed, 21 Oct 2015 07:28:00 GMT */

    ck_assert_int_eq(qrt_retry_after_parse("120", now), 120);
    ck_assert_int_eq(qrt_retry_after_parse(" 7 ", now), 7);
    ck_assert_int_eq(qrt_retry_after_parse("0", now), 0);
    ck_assert_int_eq(qrt_retry_after_parse("999999999999999999999999", now),
                     QRT_RETRY_AFTER_MAX);
    ck_assert_int_eq(qrt_retry_after_parse("Wed, 21 Oct 2015 07:30:00 GMT", now), 120);
    ck_assert_int_eq(qrt_retry_after_parse("Wednesday, 21-Oct-15 07:30:00 GMT", now), 120);
    ck_assert_int_eq(qrt_retry_after_parse("Wed Oct 21 07:30:00 2015", now), 120);
    ck_assert_int_eq(qrt_retry_after_parse("Wed, 21 Oct 2015 07:00:00 GMT", now), 0);
    ck_assert_int_eq(qrt_retry_after_parse("Wed, 21 Oct 2016 07:00:00 GMT", now),
                     QRT_RETRY_AFTER_MAX);
    ck_assert_int_eq(qrt_retry_after_parse("-5", now), -1);
    ck_assert_int_eq(qrt_retry_after_parse("5s", now), -1);
    ck_assert_int_eq(qrt_retry_after_parse("1.5", now), -1);
    ck_assert_int_eq(qrt_retry_after_parse("", now), -1);
    ck_assert_int_eq(qrt_retry_after_parse("soon", now), -1);
    ck_assert_int_eq(qrt_retry_after_parse(NULL, now), -1);
}
END_TEST

START_TEST(next_and_outcome)
{
    /* Retry-After longer than the step is followed, shorter is not */
    ck_assert_int_eq(qrt_retry_next(1, 0x80000000u, -1), 5);
    ck_assert_int_eq(qrt_retry_next(1, 0x80000000u, 2), 5);
    ck_assert_int_eq(qrt_retry_next(1, 0x80000000u, 60), 60);
    ck_assert_int_eq(qrt_retry_next(2, 0x80000000u, 60), 300);
    ck_assert_int_eq(qrt_retry_next(QRT_RETRY_ATTEMPTS, 0, 60), -1);
    ck_assert_int_eq(qrt_retry_outcome(200), QRT_RETRY_DELIVERED);
    ck_assert_int_eq(qrt_retry_outcome(204), QRT_RETRY_DELIVERED);
    ck_assert_int_eq(qrt_retry_outcome(299), QRT_RETRY_DELIVERED);
    ck_assert_int_eq(qrt_retry_outcome(410), QRT_RETRY_GONE);
    ck_assert_int_eq(qrt_retry_outcome(0), QRT_RETRY_AGAIN);
    ck_assert_int_eq(qrt_retry_outcome(301), QRT_RETRY_AGAIN);
    ck_assert_int_eq(qrt_retry_outcome(404), QRT_RETRY_AGAIN);
    ck_assert_int_eq(qrt_retry_outcome(429), QRT_RETRY_AGAIN);
    ck_assert_int_eq(qrt_retry_outcome(500), QRT_RETRY_AGAIN);
    ck_assert_int_eq(qrt_retry_outcome(199), QRT_RETRY_AGAIN);
}
END_TEST

static Suite *retry_suite(void)
{
    Suite *s = suite_create("qrt_retry");
    TCase *tc = tcase_create("retry");

    tcase_add_test(tc, schedule);
    tcase_add_test(tc, retry_after);
    tcase_add_test(tc, next_and_outcome);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(retry_suite());
}
