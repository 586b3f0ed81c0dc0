/* qrt_dbwatch: a call armed by a thread with a limit ends when its deadline passes (its
 * socket shut down); a call that ends in time, a thread without a limit, a nested call
 * and a process without the watchdog arm nothing; a spare thread keeps the limit of
 * the request that gave it its job. */
#include <check.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "qrt_dbwatch.h"
#include "qrt_spare.h"
#include "qrt_check.h"

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Waits up to ms for fd to be readable or hung up, as libpq waits for an answer:
 * 1 when it was (the peer wrote, or the socket was shut down), 0 on timeout. */
static int wait_answer(int fd, int ms)
{
    struct pollfd pfd = { fd, POLLIN, 0 };

    return poll(&pfd, 1, ms) == 1;
}

START_TEST(a_call_past_its_deadline_is_cut_short)
{
    int sv[2], token;
    double t0;
    char c;

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ck_assert_int_eq(qrt_dbwatch_start(), 0);
    qrt_dbwatch_limit(200);
    ck_assert_int_eq(qrt_dbwatch_limit_ms(), 200);
    unsigned long before = qrt_dbwatch_fired();
    t0 = now_s();
    ck_assert_int_eq(qrt_dbwatch_cut(), 0);
    token = qrt_dbwatch_arm(sv[0]);
    ck_assert_int_gt(token, 0);
    ck_assert_int_eq(qrt_dbwatch_cut(), 0);
    /* (the server never answers: only the watchdog ends the wait) */
    ck_assert_int_eq(wait_answer(sv[0], 5000), 1);
    ck_assert_double_ge(now_s() - t0, 0.19);
    ck_assert_double_lt(now_s() - t0, 2.0);
    ck_assert_int_eq(read(sv[0], &c, 1), 0);
    /* the call's failure path learns that the server did not answer (no reset in place) */
    ck_assert_int_eq(qrt_dbwatch_cut(), 1);
    ck_assert_int_eq(qrt_dbwatch_disarm(token), 1);
    ck_assert_int_eq(qrt_dbwatch_cut(), 0);
    ck_assert_uint_eq(qrt_dbwatch_fired(), before + 1);
    qrt_dbwatch_limit(0);
    close(sv[0]);
    close(sv[1]);
    qrt_dbwatch_stop();
}
END_TEST

START_TEST(a_call_in_time_keeps_its_socket)
{
    int sv[2], token, outer;
    char c = 'x';

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ck_assert_int_eq(qrt_dbwatch_start(), 0);
    qrt_dbwatch_limit(150);
    token = qrt_dbwatch_arm(sv[0]);
    ck_assert_int_gt(token, 0);
    ck_assert_int_eq(write(sv[1], &c, 1), 1);
    ck_assert_int_eq(wait_answer(sv[0], 1000), 1);
    ck_assert_int_eq(read(sv[0], &c, 1), 1);
    ck_assert_int_eq(qrt_dbwatch_cut(), 0);
    ck_assert_int_eq(qrt_dbwatch_disarm(token), 0);
    /* the deadline that was armed passes: nothing happens to the socket */
    usleep(400000);
    ck_assert_int_eq(write(sv[1], &c, 1), 1);
    ck_assert_int_eq(read(sv[0], &c, 1), 1);

    /* a call inside an armed one keeps the outer deadline: it arms nothing */
    outer = qrt_dbwatch_arm(sv[0]);
    ck_assert_int_gt(outer, 0);
    ck_assert_int_eq(qrt_dbwatch_arm(sv[0]), 0);
    ck_assert_int_eq(qrt_dbwatch_disarm(0), 0);
    ck_assert_int_eq(qrt_dbwatch_disarm(outer), 0);

    /* no limit, or no socket: nothing armed */
    qrt_dbwatch_limit(0);
    ck_assert_int_eq(qrt_dbwatch_arm(sv[0]), 0);
    qrt_dbwatch_limit(100);
    ck_assert_int_eq(qrt_dbwatch_arm(-1), 0);
    qrt_dbwatch_stop();
    /* no watchdog running: nothing armed */
    ck_assert_int_eq(qrt_dbwatch_arm(sv[0]), 0);
    usleep(300000);
    ck_assert_int_eq(write(sv[1], &c, 1), 1);
    ck_assert_int_eq(read(sv[0], &c, 1), 1);
    qrt_dbwatch_limit(0);
    close(sv[0]);
    close(sv[1]);
}
END_TEST

/* A connection re-opened in place during an armed call (apr_dbd's check of a lost
 * PostgreSQL connection, PQreset) closes the armed socket; its number may be taken at once
 * by another thread's socket (a client's connection that the listener accepted). The
 * deadline, or a probe's cut, must not shut that one down. */
/* Arms a call on a socket of a new pair, closes that socket and makes a second pair, whose
 * first socket takes the closed one's number: the token (the second pair in other). */
static int armed_then_reused(int *peer, int other[2])
{
    int sv[2], token;

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    token = qrt_dbwatch_arm(sv[0]);
    ck_assert_int_gt(token, 0);
    close(sv[0]);
    *peer = sv[1];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, other), 0);
    /* (the lowest free number: the armed one) */
    ck_assert_int_eq(other[0], sv[0]);
    return token;
}

/* 1 when both ends of the pair still carry a byte each way. */
static int pair_works(int other[2])
{
    char c = 'x';

    return write(other[0], &c, 1) == 1 && read(other[1], &c, 1) == 1
           && write(other[1], &c, 1) == 1 && read(other[0], &c, 1) == 1;
}

/* A connection re-opened in place during an armed call (apr_dbd's check of a lost
 * PostgreSQL connection: PQreset) closes the armed socket, and its number may be taken at
 * once by another thread's socket (a client's connection that the listener accepted).
 * Neither the deadline nor a probe's cut may shut that one down; the call still learns
 * that its deadline passed. */
START_TEST(a_socket_that_took_the_armed_number_is_left_alone)
{
    int other[2], peer, token;

    ck_assert_int_eq(qrt_dbwatch_start(), 0);
    /* a probe's cut */
    qrt_dbwatch_limit(60000);
    token = armed_then_reused(&peer, other);
    ck_assert_int_eq(qrt_dbwatch_cut_older(0), 1);
    ck_assert_int_eq(pair_works(other), 1);
    ck_assert_int_eq(qrt_dbwatch_disarm(token), 1);
    close(other[0]);
    close(other[1]);
    close(peer);
    /* the deadline */
    qrt_dbwatch_limit(100);
    token = armed_then_reused(&peer, other);
    usleep(300000);
    ck_assert_int_eq(pair_works(other), 1);
    ck_assert_int_eq(qrt_dbwatch_disarm(token), 1);
    qrt_dbwatch_limit(0);
    close(other[0]);
    close(other[1]);
    close(peer);
    qrt_dbwatch_stop();
}
END_TEST

START_TEST(calls_that_waited_long_enough_are_cut_at_once)
{
    int a[2], b[2], ta, tb;
    char c = 'x';

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, a), 0);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, b), 0);
    ck_assert_int_eq(qrt_dbwatch_start(), 0);
    ck_assert_int_eq(qrt_dbwatch_oldest_ms(), 0);
    qrt_dbwatch_limit(60000);
    ta = qrt_dbwatch_arm(a[0]);
    ck_assert_int_gt(ta, 0);
    usleep(300000);
    ck_assert_int_ge(qrt_dbwatch_oldest_ms(), 290);
    ck_assert_int_lt(qrt_dbwatch_oldest_ms(), 5000);
    /* younger than asked: left alone */
    ck_assert_int_eq(qrt_dbwatch_cut_older(5000), 0);
    ck_assert_int_eq(write(a[1], &c, 1), 1);
    ck_assert_int_eq(read(a[0], &c, 1), 1);
    /* waited long enough: cut now, long before its 60 s deadline */
    ck_assert_int_eq(qrt_dbwatch_cut_older(200), 1);
    ck_assert_int_eq(wait_answer(a[0], 1000), 1);
    ck_assert_int_eq(read(a[0], &c, 1), 0);
    ck_assert_int_eq(qrt_dbwatch_cut(), 1);
    /* a cut call no longer counts as waiting, and is not cut twice */
    ck_assert_int_eq(qrt_dbwatch_oldest_ms(), 0);
    ck_assert_int_eq(qrt_dbwatch_cut_older(0), 0);
    ck_assert_int_eq(qrt_dbwatch_disarm(ta), 1);
    /* a fresh call is younger than the bound */
    tb = qrt_dbwatch_arm(b[0]);
    ck_assert_int_gt(tb, 0);
    ck_assert_int_eq(qrt_dbwatch_cut_older(1000), 0);
    ck_assert_int_eq(qrt_dbwatch_disarm(tb), 0);
    ck_assert_int_eq(qrt_dbwatch_oldest_ms(), 0);
    qrt_dbwatch_limit(0);
    qrt_dbwatch_stop();
    close(a[0]);
    close(a[1]);
    close(b[0]);
    close(b[1]);
}
END_TEST

typedef struct {
    int limit;
} seen_t;

static void see_limit(void *data)
{
    ((seen_t *)data)->limit = qrt_dbwatch_limit_ms();
}

START_TEST(a_spare_thread_keeps_the_limit_of_its_job)
{
    seen_t seen = { -1 };
    qrt_spare_job job;

    qrt_dbwatch_limit(1234);
    if (qrt_spare_start(&job, see_limit, &seen) == 0) {
        qrt_spare_wait(&job);
    }
    else {
        see_limit(&seen);
    }
    ck_assert_int_eq(seen.limit, 1234);
    qrt_dbwatch_limit(0);
    qrt_spare_end();
}
END_TEST

static Suite *dbwatch_suite(void)
{
    Suite *s = suite_create("qrt_dbwatch");
    TCase *tc = tcase_create("dbwatch");

    tcase_add_test(tc, a_call_past_its_deadline_is_cut_short);
    tcase_add_test(tc, a_call_in_time_keeps_its_socket);
    tcase_add_test(tc, a_socket_that_took_the_armed_number_is_left_alone);
    tcase_add_test(tc, calls_that_waited_long_enough_are_cut_at_once);
    tcase_add_test(tc, a_spare_thread_keeps_the_limit_of_its_job);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(dbwatch_suite());
}
