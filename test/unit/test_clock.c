/* qrt_clock: a clock on CLOCK_MONOTONIC, and a condition whose timed wait is on it. */
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <check.h>
#include <apr_pools.h>
#include <apr_time.h>

#include "qrt_clock.h"
#include "qrt_check.h"

START_TEST(the_clock_is_the_monotonic_one)
{
    struct timespec ts;
    apr_time_t a = qrt_clock_now(), b, mono;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    mono = (apr_time_t)ts.tv_sec * APR_USEC_PER_SEC + ts.tv_nsec / 1000;
    b = qrt_clock_now();
    ck_assert(a <= mono && mono <= b);
    usleep(20000);
    ck_assert_int_ge(qrt_clock_now() - b, 20000);
}
END_TEST

static apr_time_t usec_of(struct timespec ts)
{
    return (apr_time_t)ts.tv_sec * APR_USEC_PER_SEC + ts.tv_nsec / 1000;
}

START_TEST(an_instant_after_now_is_on_the_same_clock)
{
    apr_time_t before = qrt_clock_now(), at;

    /* 1.5 s on: the microseconds carry into the seconds */
    at = usec_of(qrt_clock_after(1500000));
    ck_assert(at >= before + 1500000 && at <= qrt_clock_now() + 1500000);
    ck_assert(qrt_clock_after(1500000).tv_nsec < 1000000000L);
    /* a negative time counts as none */
    before = qrt_clock_now();
    at = usec_of(qrt_clock_after(-5000000));
    ck_assert(at >= before && at <= qrt_clock_now());
}
END_TEST

START_TEST(a_timed_wait_ends_at_its_time)
{
    apr_pool_t *p;
    qrt_cond_t *c;
    apr_time_t t;

    apr_pool_create(&p, NULL);
    ck_assert_int_eq(qrt_cond_create(&c, p), APR_SUCCESS);
    qrt_cond_lock(c);
    t = qrt_clock_now();
    ck_assert_int_eq(qrt_cond_timedwait(c, apr_time_from_msec(50)), APR_TIMEUP);
    t = qrt_clock_now() - t;
    qrt_cond_unlock(c);
    ck_assert_int_ge(t, apr_time_from_msec(50));
    ck_assert_int_lt(t, apr_time_from_msec(1000));
    /* a wait of no time (or less) returns at once */
    qrt_cond_lock(c);
    ck_assert_int_eq(qrt_cond_timedwait(c, -5), APR_TIMEUP);
    qrt_cond_unlock(c);
    apr_pool_destroy(p);
}
END_TEST

typedef struct {
    qrt_cond_t *c;
    int woken;
} waker_t;

static void *wake_later(void *arg)
{
    waker_t *w = arg;

    usleep(30000);
    qrt_cond_lock(w->c);
    w->woken = 1;
    qrt_cond_broadcast(w->c);
    qrt_cond_unlock(w->c);
    return NULL;
}

START_TEST(a_signal_ends_the_wait_before_its_time)
{
    apr_pool_t *p;
    waker_t w = { NULL, 0 };
    pthread_t th;
    apr_time_t t;

    apr_pool_create(&p, NULL);
    ck_assert_int_eq(qrt_cond_create(&w.c, p), APR_SUCCESS);
    qrt_cond_lock(w.c);
    ck_assert_int_eq(pthread_create(&th, NULL, wake_later, &w), 0);
    t = qrt_clock_now();
    while (!w.woken) {
        ck_assert_int_eq(qrt_cond_timedwait(w.c, apr_time_from_sec(10)), APR_SUCCESS);
    }
    t = qrt_clock_now() - t;
    qrt_cond_unlock(w.c);
    pthread_join(th, NULL);
    ck_assert_int_lt(t, apr_time_from_sec(5));
    apr_pool_destroy(p);
}
END_TEST

START_TEST(within_an_interval_on_either_side)
{
    apr_time_t last = apr_time_from_sec(1000), every = apr_time_from_sec(60);

    ck_assert(qrt_clock_within(last, last, every));
    ck_assert(qrt_clock_within(last, last + every - 1, every));
    ck_assert(!qrt_clock_within(last, last + every, every));
    /* a time taken before the last one, by a request that then waited */
    ck_assert(qrt_clock_within(last, last - every + 1, every));
    /* a clock an interval or more behind */
    ck_assert(!qrt_clock_within(last, last - every, every));
    ck_assert(!qrt_clock_within(last, 0, every));
    /* never acted: 0 against a clock counting since boot */
    ck_assert(!qrt_clock_within(0, last, every));
}
END_TEST

static Suite *clock_suite(void)
{
    Suite *s = suite_create("qrt_clock");
    TCase *tc = tcase_create("clock");

    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, the_clock_is_the_monotonic_one);
    tcase_add_test(tc, an_instant_after_now_is_on_the_same_clock);
    tcase_add_test(tc, a_timed_wait_ends_at_its_time);
    tcase_add_test(tc, a_signal_ends_the_wait_before_its_time);
    tcase_add_test(tc, within_an_interval_on_either_side);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(clock_suite());
}
