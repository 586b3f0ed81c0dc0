/* Unit tests of qrt_mc: the memcached client against a fake server thread (a tiny
 * memcached that can also stay silent, answer late, answer garbage or close its
 * connections), and the shared gate. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <check.h>
#include <apr_general.h>
#include <apr_tables.h>
#include "qrt_mc.h"
#include "qrt_rate.h"
#include "qrt_check.h"

QRT_CHECK_POOL

/* ---- the fake server ------------------------------------------------------------- */

enum { FAKE_OK, FAKE_SILENT, FAKE_LATE, FAKE_GARBAGE };

#define FAKE_CONNS 16
#define FAKE_KEYS 32

static struct {
    int listen_fd;
    int port;
    pthread_t thread;
    volatile int mode;
    volatile int stop;
    volatile int close_all;         /* 1: close every connection (a restart) */
    volatile int accepts;
    const char *garbage;            /* FAKE_GARBAGE's answer to every command */
    int late_ms;
    char keys[FAKE_KEYS][256];
    char vals[FAKE_KEYS][64];
    int nkeys;
} fake;

static int fake_find(const char *k)
{
    int i;

    for (i = 0; i < fake.nkeys; i++) {
        if (!strcmp(fake.keys[i], k)) {
            return i;
        }
    }
    return -1;
}

/* Answers the commands complete in buf; what is left stays in buf. */
static void fake_serve(int fd, char *buf, size_t *used)
{
    char out[4096];

    for (;;) {
        char *eol = memchr(buf, '\n', *used), k[256];
        size_t line, take;
        unsigned long n;
        int i;

        if (!eol) {
            return;
        }
        line = (size_t)(eol - buf) + 1;
        take = line;
        out[0] = '\0';
        if (sscanf(buf, "get %255s", k) == 1) {
            i = fake_find(k);
            if (i < 0) {
                snprintf(out, sizeof(out), "END\r\n");
            }
            else {
                snprintf(out, sizeof(out), "VALUE %s 0 %zu\r\n%s\r\nEND\r\n", k,
                         strlen(fake.vals[i]), fake.vals[i]);
            }
        }
        else if (sscanf(buf, "add %255s %*u %*u %lu", k, &n) == 2) {
            if (*used < line + n + 2) {
                return;
            }
            take = line + n + 2;
            if (fake_find(k) >= 0) {
                snprintf(out, sizeof(out), "NOT_STORED\r\n");
            }
            else {
                i = fake.nkeys++;
                snprintf(fake.keys[i], sizeof(fake.keys[i]), "%s", k);
                snprintf(fake.vals[i], sizeof(fake.vals[i]), "%.*s", (int)n, buf + line);
                snprintf(out, sizeof(out), "STORED\r\n");
            }
        }
        else if (sscanf(buf, "incr %255s %lu", k, &n) == 2
                 || sscanf(buf, "decr %255s %lu", k, &n) == 2) {
            i = fake_find(k);
            if (i < 0) {
                snprintf(out, sizeof(out), "NOT_FOUND\r\n");
            }
            else {
                unsigned long long c = strtoull(fake.vals[i], NULL, 10);

                c = buf[0] == 'i' ? c + n : (c > n ? c - n : 0);
                snprintf(fake.vals[i], sizeof(fake.vals[i]), "%llu", c);
                snprintf(out, sizeof(out), "%llu\r\n", c);
            }
        }
        else {
            snprintf(out, sizeof(out), "ERROR\r\n");
        }
        memmove(buf, buf + take, *used - take);
        *used -= take;
        if (fake.mode == FAKE_SILENT) {
            continue;
        }
        if (fake.mode == FAKE_LATE) {
            usleep((useconds_t)fake.late_ms * 1000);
        }
        if (fake.mode == FAKE_GARBAGE) {
            snprintf(out, sizeof(out), "%s", fake.garbage);
        }
        if (write(fd, out, strlen(out)) < 0) {
            return;
        }
    }
}

static void *fake_main(void *arg)
{
    struct pollfd fds[FAKE_CONNS + 1];
    char bufs[FAKE_CONNS + 1][4096];
    size_t used[FAKE_CONNS + 1];
    int n = 1, i;

    (void)arg;
    fds[0].fd = fake.listen_fd;
    fds[0].events = POLLIN;
    while (!fake.stop) {
        if (fake.close_all) {
            for (i = 1; i < n; i++) {
                close(fds[i].fd);
            }
            n = 1;
            fake.close_all = 0;
        }
        if (poll(fds, (nfds_t)n, 10) <= 0) {
            continue;
        }
        if ((fds[0].revents & POLLIN) && n <= FAKE_CONNS) {
            int fd = accept(fake.listen_fd, NULL, NULL);

            if (fd >= 0) {
                fds[n].fd = fd;
                fds[n].events = POLLIN;
                fds[n].revents = 0;
                used[n] = 0;
                n++;
                fake.accepts++;
            }
        }
        for (i = 1; i < n; i++) {
            ssize_t got;

            if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
                continue;
            }
            got = read(fds[i].fd, bufs[i] + used[i], sizeof(bufs[i]) - used[i]);
            if (got <= 0) {
                close(fds[i].fd);
                fds[i] = fds[n - 1];
                memcpy(bufs[i], bufs[n - 1], used[n - 1]);
                used[i] = used[n - 1];
                n--;
                i--;
                continue;
            }
            used[i] += (size_t)got;
            fake_serve(fds[i].fd, bufs[i], &used[i]);
        }
    }
    for (i = 1; i < n; i++) {
        close(fds[i].fd);
    }
    return NULL;
}

static void fake_start(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    int one = 1;

    memset(&fake, 0, sizeof(fake));
    fake.listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fake.listen_fd, 0);
    setsockopt(fake.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fake.listen_fd, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(listen(fake.listen_fd, 64), 0);
    getsockname(fake.listen_fd, (struct sockaddr *)&a, &len);
    fake.port = ntohs(a.sin_port);
    ck_assert_int_eq(pthread_create(&fake.thread, NULL, fake_main, NULL), 0);
}

static void fake_stop(void)
{
    fake.stop = 1;
    pthread_join(fake.thread, NULL);
    close(fake.listen_fd);
}

static const char *fake_host = "127.0.0.1";

/* A loopback port where nothing listens, held by a bound socket that never listens
 * (so a connection is refused at once) until the caller closes *fd. Holding it keeps
 * the kernel from handing the port to a server the test starts afterwards. */
static int dead_port(int *fd)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);

    *fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(*fd, 0);
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(*fd, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(getsockname(*fd, (struct sockaddr *)&a, &len), 0);
    return ntohs(a.sin_port);
}

/* A client of the fake server (and of port2 when not 0) with a timeout in ms. */
static qrt_mc_t *client(int timeout_ms, int port2)
{
    apr_array_header_t *a = apr_array_make(pool, 2, sizeof(qrt_rate_server_t));
    qrt_rate_server_t *s = apr_array_push(a);
    qrt_mc_t *mc = NULL;

    s->host = fake_host;
    s->port = (apr_port_t)fake.port;
    if (port2) {
        s = apr_array_push(a);
        s->host = "127.0.0.1";
        s->port = (apr_port_t)port2;
    }
    ck_assert_int_eq(qrt_mc_create(pool, a, apr_time_from_msec(timeout_ms), 4,
                                   apr_time_from_sec(5), &mc), APR_SUCCESS);
    return mc;
}

static long ms_since(apr_time_t t0)
{
    return (long)apr_time_as_msec(apr_time_now() - t0);
}

/* ---- the client ------------------------------------------------------------------ */

START_TEST(add_get_incr_decr)
{
    qrt_mc_t *mc;
    char val[QRT_MC_MAX_VALUE];
    apr_uint64_t n = 0;
    int i;

    fake_start();
    mc = client(1000, 0);
    ck_assert_int_eq(qrt_mc_get(mc, 0, "qrtrack:rw:7", val, sizeof(val)), APR_NOTFOUND);
    ck_assert_int_eq(qrt_mc_add(mc, 0, "qrtrack:rw:7", "1700000000000000", 60),
                     APR_SUCCESS);
    ck_assert_int_eq(qrt_mc_add(mc, 0, "qrtrack:rw:7", "1", 60), APR_EEXIST);
    ck_assert_int_eq(qrt_mc_get(mc, 0, "qrtrack:rw:7", val, sizeof(val)), APR_SUCCESS);
    ck_assert_str_eq(val, "1700000000000000");
    ck_assert_int_eq(qrt_mc_get(mc, 0, "qrtrack:rw:7", val, 5), APR_ENOSPC);
    ck_assert_int_eq(qrt_mc_incr(mc, 0, "qrtrack:rc:7", 1, &n), APR_NOTFOUND);
    ck_assert_int_eq(qrt_mc_add(mc, 0, "qrtrack:rc:7", "0", 120), APR_SUCCESS);
    for (i = 1; i <= 50; i++) {
        ck_assert_int_eq(qrt_mc_incr(mc, 0, "qrtrack:rc:7", 1, &n), APR_SUCCESS);
        ck_assert_int_eq(n, i);
    }
    ck_assert_int_eq(qrt_mc_decr(mc, 0, "qrtrack:rc:7", 1, &n), APR_SUCCESS);
    ck_assert_int_eq(n, 49);
    ck_assert_int_eq(qrt_mc_decr(mc, 0, "qrtrack:rc:7", 1, NULL), APR_SUCCESS);
    /* One connection for all of it, kept between calls. */
    ck_assert_int_eq(fake.accepts, 1);
    fake_stop();
}
END_TEST

/* A server named by a host name: looked up within the call's deadline, then reached at
 * its (IPv4) address. */
START_TEST(a_server_named_by_a_host_name)
{
    qrt_mc_t *mc;
    char val[QRT_MC_MAX_VALUE];

    fake_start();
    fake_host = "localhost";
    mc = client(2000, 0);
    ck_assert_int_eq(qrt_mc_add(mc, 0, "qrtrack:rw:8", "5", 60), APR_SUCCESS);
    ck_assert_int_eq(qrt_mc_get(mc, 0, "qrtrack:rw:8", val, sizeof(val)), APR_SUCCESS);
    ck_assert_str_eq(val, "5");
    ck_assert_int_eq(fake.accepts, 1);
    fake_host = "127.0.0.1";
    fake_stop();
}
END_TEST

START_TEST(bad_keys_and_values_are_refused_before_sending)
{
    qrt_mc_t *mc;
    char val[16], big[QRT_MC_MAX_VALUE + 2], longkey[252];

    fake_start();
    mc = client(1000, 0);
    memset(big, '1', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    memset(longkey, 'k', sizeof(longkey) - 1);
    longkey[sizeof(longkey) - 1] = '\0';
    ck_assert_int_eq(qrt_mc_get(mc, 0, "", val, sizeof(val)), APR_EINVAL);
    ck_assert_int_eq(qrt_mc_get(mc, 0, "a b", val, sizeof(val)), APR_EINVAL);
    ck_assert_int_eq(qrt_mc_get(mc, 0, "a\r\nflush_all", val, sizeof(val)), APR_EINVAL);
    ck_assert_int_eq(qrt_mc_get(mc, 0, longkey, val, sizeof(val)), APR_EINVAL);
    ck_assert_int_eq(qrt_mc_add(mc, 0, "k", big, 1), APR_EINVAL);
    ck_assert_int_eq(qrt_mc_incr(mc, 1, "k", 1, NULL), APR_EINVAL);
    ck_assert_int_eq(qrt_mc_incr(mc, -1, "k", 1, NULL), APR_EINVAL);
    ck_assert_int_eq(fake.accepts, 0);
    fake_stop();
}
END_TEST

START_TEST(a_silent_server_times_out)
{
    qrt_mc_t *mc;
    char val[16];
    apr_uint64_t n;
    apr_time_t t0;

    fake_start();
    mc = client(50, 0);
    fake.mode = FAKE_SILENT;
    t0 = apr_time_now();
    ck_assert_int_eq(qrt_mc_get(mc, 0, "k", val, sizeof(val)), APR_TIMEUP);
    ck_assert_int_eq(qrt_mc_incr(mc, 0, "k", 1, &n), APR_TIMEUP);
    ck_assert_int_eq(qrt_mc_add(mc, 0, "k", "1", 1), APR_TIMEUP);
    ck_assert_int_ge(ms_since(t0), 3 * 50 - 5);
    ck_assert_int_lt(ms_since(t0), 3 * 50 + 400);
    /* Each timed-out connection was closed (its stream is out of step): the
     * server answers again, on a new connection, and the answer is the right one. */
    fake.mode = FAKE_OK;
    ck_assert_int_eq(qrt_mc_add(mc, 0, "j", "5", 1), APR_SUCCESS);
    ck_assert_int_eq(qrt_mc_get(mc, 0, "j", val, sizeof(val)), APR_SUCCESS);
    ck_assert_str_eq(val, "5");
    ck_assert_int_eq(fake.accepts, 4);
    fake_stop();
}
END_TEST

START_TEST(a_late_answer_is_a_timeout)
{
    qrt_mc_t *mc;
    char val[16];
    apr_time_t t0;

    fake_start();
    mc = client(50, 0);
    fake.mode = FAKE_LATE;
    fake.late_ms = 300;
    t0 = apr_time_now();
    ck_assert_int_eq(qrt_mc_get(mc, 0, "k", val, sizeof(val)), APR_TIMEUP);
    ck_assert_int_lt(ms_since(t0), 250);
    fake_stop();
}
END_TEST

START_TEST(nothing_listening_fails_at_once)
{
    qrt_mc_t *mc;
    char val[16];
    apr_time_t t0;
    int dead;

    fake.port = dead_port(&dead);
    mc = client(1000, 0);
    t0 = apr_time_now();
    ck_assert_int_ne(qrt_mc_get(mc, 0, "k", val, sizeof(val)), APR_SUCCESS);
    ck_assert_int_lt(ms_since(t0), 500);
    close(dead);
}
END_TEST

START_TEST(garbage_answers_are_errors)
{
    static const char *answers[] = {
        "VALUE k 0 99999\r\n",                      /* more than a value may be */
        "VALUE k 0 1\r\n12\r\nEND\r\n",             /* longer than it said */
        "VALUE other 0 1\r\n1\r\nEND\r\n",          /* another key */
        "VALUE k 0 1\r\n1\r\nEND\r\nEND\r\n",       /* more than one answer */
        "STORED\n",                                 /* no CR */
        "12x\r\n",
        "-1\r\n",
        "123456789012345678901\r\n",                /* over 64 bits */
        "SERVER_ERROR out of memory\r\n",
        "",                                          /* a very long line: below */
    };
    qrt_mc_t *mc;
    char val[16], longline[3000];
    apr_uint64_t n;
    size_t i;

    memset(longline, 'x', sizeof(longline) - 1);
    longline[sizeof(longline) - 1] = '\0';
    fake_start();
    mc = client(500, 0);
    fake.mode = FAKE_GARBAGE;
    for (i = 0; i < sizeof(answers) / sizeof(answers[0]); i++) {
        fake.garbage = answers[i][0] ? answers[i] : longline;
        ck_assert_msg(qrt_mc_get(mc, 0, "k", val, sizeof(val)) != APR_SUCCESS
                      && qrt_mc_get(mc, 0, "k", val, sizeof(val)) != APR_NOTFOUND,
                      "get accepted %s", answers[i]);
        ck_assert_msg(qrt_mc_incr(mc, 0, "k", 1, &n) != APR_SUCCESS
                      && qrt_mc_incr(mc, 0, "k", 1, &n) != APR_NOTFOUND,
                      "incr accepted %s", answers[i]);
    }
    fake.garbage = "STORED\r\n";
    ck_assert_int_eq(qrt_mc_incr(mc, 0, "k", 1, &n), APR_EGENERAL);
    fake.garbage = "7   \r\n";                 /* old servers pad decr's answer */
    ck_assert_int_eq(qrt_mc_decr(mc, 0, "k", 1, &n), APR_SUCCESS);
    ck_assert_int_eq(n, 7);
    fake_stop();
}
END_TEST

START_TEST(a_restarted_server_is_reached_on_a_new_connection)
{
    qrt_mc_t *mc;
    char val[16];
    apr_uint64_t n = 0;

    fake_start();
    mc = client(1000, 0);
    ck_assert_int_eq(qrt_mc_add(mc, 0, "c", "0", 60), APR_SUCCESS);
    ck_assert_int_eq(fake.accepts, 1);
    /* The server closes its connections: the kept one is dead. The call finds out,
     * and sends its command once more on a new connection (counted once). */
    fake.close_all = 1;
    while (fake.close_all) {
        apr_sleep(apr_time_from_msec(5));
    }
    apr_sleep(apr_time_from_msec(20));
    ck_assert_int_eq(qrt_mc_incr(mc, 0, "c", 1, &n), APR_SUCCESS);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(fake.accepts, 2);
    ck_assert_int_eq(qrt_mc_get(mc, 0, "c", val, sizeof(val)), APR_SUCCESS);
    ck_assert_str_eq(val, "1");
    fake_stop();
}
END_TEST

START_TEST(servers_by_index)
{
    qrt_mc_t *mc;
    char val[16];
    int dead, port;

    /* Server 1 is a port where nothing listens; server 0 answers. */
    port = dead_port(&dead);
    fake_start();
    mc = client(200, port);
    ck_assert_int_eq(qrt_mc_add(mc, 0, "k", "1", 60), APR_SUCCESS);
    ck_assert_int_ne(qrt_mc_get(mc, 1, "k", val, sizeof(val)), APR_SUCCESS);
    ck_assert_int_eq(qrt_mc_get(mc, 0, "k", val, sizeof(val)), APR_SUCCESS);
    fake_stop();
    close(dead);
}
END_TEST

/* ---- the gate -------------------------------------------------------------------- */

#define SEC apr_time_from_sec(1)
#define T0 apr_time_from_sec(1700000000)

static qrt_mc_shared_t *gate(apr_uint32_t n, apr_uint32_t cap)
{
    qrt_mc_shared_t *sh = apr_palloc(pool, qrt_mc_shared_size(n));

    qrt_mc_shared_init(sh, n, cap);
    return sh;
}

START_TEST(gate_down_probes_once_a_second_and_comes_back)
{
    qrt_mc_shared_t *sh = gate(2, 10);

    ck_assert_int_eq(qrt_mc_enter(sh, 0, T0, SEC), QRT_MC_GO);
    ck_assert_int_eq(qrt_mc_leave(sh, 0, APR_SUCCESS, T0), 0);
    ck_assert(qrt_mc_all_up(sh));
    /* A timeout puts server 0 down, for every caller; server 1 is not affected. */
    ck_assert_int_eq(qrt_mc_enter(sh, 0, T0, SEC), QRT_MC_GO);
    ck_assert_int_eq(qrt_mc_enter(sh, 0, T0, SEC), QRT_MC_GO);
    ck_assert_int_eq(qrt_mc_leave(sh, 0, APR_TIMEUP, T0), -1);
    ck_assert_int_eq(qrt_mc_leave(sh, 0, APR_TIMEUP, T0), 0);
    ck_assert(!qrt_mc_all_up(sh));
    ck_assert_int_eq(sh->gates[0].why, APR_TIMEUP);
    ck_assert_int_eq(qrt_mc_enter(sh, 0, T0 + 1, SEC), QRT_MC_DOWN);
    ck_assert_int_eq(qrt_mc_enter(sh, 0, T0 + SEC - 1, SEC), QRT_MC_DOWN);
    ck_assert_int_eq(qrt_mc_enter(sh, 1, T0 + 1, SEC), QRT_MC_GO);
    ck_assert_int_eq(qrt_mc_leave(sh, 1, APR_SUCCESS, T0 + 1), 0);
    /* One probe a second: the first caller after it gets it, the others not. */
    ck_assert_int_eq(qrt_mc_enter(sh, 0, T0 + SEC, SEC), QRT_MC_PROBE);
    ck_assert_int_eq(qrt_mc_enter(sh, 0, T0 + SEC, SEC), QRT_MC_DOWN);
    /* nor a request stamped before the probe began (it waited meanwhile) */
    ck_assert_int_eq(qrt_mc_enter(sh, 0, T0 + SEC - SEC / 20, SEC), QRT_MC_DOWN);
    ck_assert_int_eq(qrt_mc_leave(sh, 0, APR_ECONNREFUSED, T0 + SEC), 0);
    ck_assert_int_eq(sh->gates[0].why, APR_ECONNREFUSED);
    ck_assert_int_eq(qrt_mc_enter(sh, 0, T0 + SEC + SEC / 2, SEC), QRT_MC_DOWN);
    ck_assert_int_eq(qrt_mc_enter(sh, 0, T0 + 2 * SEC, SEC), QRT_MC_PROBE);
    ck_assert_int_eq(qrt_mc_leave(sh, 0, APR_SUCCESS, T0 + 2 * SEC), 1);
    ck_assert(qrt_mc_all_up(sh));
    ck_assert_int_eq(qrt_mc_enter(sh, 0, T0 + 2 * SEC, SEC), QRT_MC_GO);
    ck_assert_int_eq(qrt_mc_leave(sh, 0, APR_SUCCESS, T0 + 2 * SEC), 0);
    ck_assert_int_eq(sh->inflight, 0);
}
END_TEST

START_TEST(gate_caps_calls_in_flight)
{
    qrt_mc_shared_t *sh = gate(1, 3);
    int i;

    for (i = 0; i < 3; i++) {
        ck_assert_int_eq(qrt_mc_enter(sh, 0, T0, SEC), QRT_MC_GO);
    }
    ck_assert_int_eq(qrt_mc_enter(sh, 0, T0, SEC), QRT_MC_BUSY);
    ck_assert_int_eq(sh->inflight, 3);
    ck_assert_int_eq(qrt_mc_leave(sh, 0, APR_SUCCESS, T0), 0);
    ck_assert_int_eq(qrt_mc_enter(sh, 0, T0, SEC), QRT_MC_GO);
    /* Busy is not down. */
    ck_assert(qrt_mc_all_up(sh));
}
END_TEST

START_TEST(gate_warns_once_an_interval_with_counts)
{
    qrt_mc_shared_t *sh = gate(1, 3);
    apr_uint32_t missed = 0;
    int i;

    ck_assert(!qrt_mc_back_due(&sh->warn_down));
    ck_assert(qrt_mc_warn_due(sh, &sh->warn_down, T0, 30 * SEC, &missed));
    ck_assert_int_eq(missed, 1);
    for (i = 0; i < 9; i++) {
        ck_assert(!qrt_mc_warn_due(sh, &sh->warn_down, T0 + i * SEC, 30 * SEC, &missed));
    }
    /* Requests stamped when they began, before the warning's (each waited for memcached
     * meanwhile): no warning of their own. */
    ck_assert(!qrt_mc_warn_due(sh, &sh->warn_down, T0 - SEC / 20, 30 * SEC, &missed));
    ck_assert(!qrt_mc_warn_due(sh, &sh->warn_down, T0 - 29 * SEC, 30 * SEC, &missed));
    /* The other kind has a throttle of its own. */
    ck_assert(qrt_mc_warn_due(sh, &sh->warn_busy, T0 + SEC, 30 * SEC, &missed));
    ck_assert_int_eq(missed, 1);
    ck_assert(qrt_mc_warn_due(sh, &sh->warn_down, T0 + 30 * SEC, 30 * SEC, &missed));
    ck_assert_int_eq(missed, 12);
    ck_assert_int_eq(sh->fallbacks, 14);
    /* "Answers again" once after warnings, not once per recovery. */
    ck_assert(qrt_mc_back_due(&sh->warn_down));
    ck_assert(!qrt_mc_back_due(&sh->warn_down));
}
END_TEST

/* The gate's times are the wall clock's (rate windows are shared with other nodes): one
 * set back (an NTP step) probes a server that is down, and warns, at once, not once it
 * has caught up with the time of the last probe or warning. */
START_TEST(gate_after_the_clock_went_back)
{
    qrt_mc_shared_t *sh = gate(1, 3);
    apr_uint32_t missed = 0;

    ck_assert_int_eq(qrt_mc_enter(sh, 0, T0, SEC), QRT_MC_GO);
    ck_assert_int_eq(qrt_mc_leave(sh, 0, APR_TIMEUP, T0), -1);
    ck_assert_int_eq(qrt_mc_enter(sh, 0, T0 + 1, SEC), QRT_MC_DOWN);
    ck_assert_int_eq(qrt_mc_enter(sh, 0, T0 - 3600 * SEC, SEC), QRT_MC_PROBE);
    ck_assert_int_eq(qrt_mc_enter(sh, 0, T0 - 3600 * SEC + 1, SEC), QRT_MC_DOWN);
    ck_assert_int_eq(qrt_mc_leave(sh, 0, APR_SUCCESS, T0 - 3600 * SEC + 1), 1);
    ck_assert(qrt_mc_warn_due(sh, &sh->warn_down, T0, 30 * SEC, &missed));
    ck_assert(!qrt_mc_warn_due(sh, &sh->warn_down, T0 + SEC, 30 * SEC, &missed));
    ck_assert(qrt_mc_warn_due(sh, &sh->warn_down, T0 - 3600 * SEC, 30 * SEC, &missed));
    ck_assert(!qrt_mc_warn_due(sh, &sh->warn_down, T0 - 3599 * SEC, 30 * SEC, &missed));
}
END_TEST

static Suite *mc_suite(void)
{
    Suite *s = suite_create("qrt_mc");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, add_get_incr_decr);
    tcase_add_test(tc, a_server_named_by_a_host_name);
    tcase_add_test(tc, bad_keys_and_values_are_refused_before_sending);
    tcase_add_test(tc, a_silent_server_times_out);
    tcase_add_test(tc, a_late_answer_is_a_timeout);
    tcase_add_test(tc, nothing_listening_fails_at_once);
    tcase_add_test(tc, garbage_answers_are_errors);
    tcase_add_test(tc, a_restarted_server_is_reached_on_a_new_connection);
    tcase_add_test(tc, servers_by_index);
    tcase_add_test(tc, gate_down_probes_once_a_second_and_comes_back);
    tcase_add_test(tc, gate_caps_calls_in_flight);
    tcase_add_test(tc, gate_warns_once_an_interval_with_counts);
    tcase_add_test(tc, gate_after_the_clock_went_back);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(mc_suite());
}
