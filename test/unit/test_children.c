/* qrt_children: waiting for children to end leaves them to be reaped. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <check.h>
#include <apr_time.h>

#include "qrt_children.h"
#include "qrt_check.h"

/* A child that sleeps ms milliseconds and exits with status code. */
static pid_t child_for(int ms, int code)
{
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        usleep((useconds_t)ms * 1000);
        _exit(code);
    }
    return pid;
}

static int reaped_status(pid_t pid)
{
    int status = -1;

    ck_assert_int_eq(waitpid(pid, &status, WNOHANG), pid);
    ck_assert(WIFEXITED(status));
    return WEXITSTATUS(status);
}

START_TEST(waits_until_every_child_has_ended_and_leaves_them_to_be_reaped)
{
    pid_t pids[3] = { child_for(0, 3), child_for(60, 4), child_for(120, 5) };
    apr_time_t start = apr_time_now();
    apr_interval_time_t took;

    ck_assert_int_eq(qrt_children_wait_ended(pids, 3, apr_time_from_sec(10)), 0);
    took = apr_time_now() - start;
    ck_assert_msg(took >= apr_time_from_msec(110), "returned after %ld us", (long)took);
    ck_assert_msg(took < apr_time_from_sec(5), "returned after %ld us", (long)took);
    /* Still there to be reaped, with their own statuses. */
    ck_assert_int_eq(reaped_status(pids[0]), 3);
    ck_assert_int_eq(reaped_status(pids[1]), 4);
    ck_assert_int_eq(reaped_status(pids[2]), 5);
}
END_TEST

START_TEST(stops_waiting_after_its_time_and_counts_those_left)
{
    pid_t pids[2] = { child_for(0, 0), child_for(10000, 0) };
    apr_time_t start = apr_time_now();
    apr_interval_time_t took;
    int status;

    ck_assert_int_eq(qrt_children_wait_ended(pids, 2, apr_time_from_msec(100)), 1);
    took = apr_time_now() - start;
    ck_assert_msg(took >= apr_time_from_msec(100) && took < apr_time_from_sec(5),
                  "returned after %ld us", (long)took);
    ck_assert_int_eq(reaped_status(pids[0]), 0);
    ck_assert_int_eq(waitpid(pids[1], &status, WNOHANG), 0);    /* still running */
    kill(pids[1], SIGKILL);
    ck_assert_int_eq(waitpid(pids[1], &status, 0), pids[1]);
}
END_TEST

START_TEST(pids_that_are_not_children_count_as_ended)
{
    pid_t pids[3] = { 0, getpid(), 1 };

    ck_assert_int_eq(qrt_children_wait_ended(pids, 3, apr_time_from_sec(10)), 0);
    ck_assert_int_eq(qrt_children_wait_ended(NULL, 0, apr_time_from_sec(10)), 0);
}
END_TEST

START_TEST(a_turn_goes_to_one_process_at_a_time_and_back_when_given)
{
    volatile apr_uint32_t holder = 0;
    pid_t other = child_for(5000, 0);

    ck_assert_int_eq(qrt_turn_take(&holder, other), 1);
    ck_assert_int_eq(qrt_turn_take(&holder, getpid()), 0);      /* held by a live one */
    qrt_turn_give(&holder, getpid());                           /* not ours to give */
    ck_assert_uint_eq(holder, (apr_uint32_t)other);
    qrt_turn_give(&holder, other);
    ck_assert_int_eq(qrt_turn_take(&holder, getpid()), 1);
    ck_assert_uint_eq(holder, (apr_uint32_t)getpid());
    kill(other, SIGKILL);
    waitpid(other, NULL, 0);
}
END_TEST

START_TEST(a_turn_whose_holder_was_killed_in_it_is_taken)
{
    volatile apr_uint32_t holder = 0;
    pid_t dead = child_for(5000, 0);

    ck_assert_int_eq(qrt_turn_take(&holder, dead), 1);
    kill(dead, SIGKILL);
    ck_assert_int_eq(waitpid(dead, NULL, 0), dead);     /* (reaped: no zombie left) */
    ck_assert_int_eq(qrt_turn_take(&holder, getpid()), 1);
    ck_assert_uint_eq(holder, (apr_uint32_t)getpid());
    /* a pid used again: the one that holds it is the one asking */
    ck_assert_int_eq(qrt_turn_take(&holder, getpid()), 1);
}
END_TEST

static Suite *children_suite(void)
{
    Suite *s = suite_create("qrt_children");
    TCase *tc = tcase_create("wait");

    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, waits_until_every_child_has_ended_and_leaves_them_to_be_reaped);
    tcase_add_test(tc, stops_waiting_after_its_time_and_counts_those_left);
    tcase_add_test(tc, pids_that_are_not_children_count_as_ended);
    tcase_add_test(tc, a_turn_goes_to_one_process_at_a_time_and_back_when_given);
    tcase_add_test(tc, a_turn_whose_holder_was_killed_in_it_is_taken);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(children_suite());
}
