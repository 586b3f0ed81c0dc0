/* Unit tests for qrt_queue: processes (fork) sharing one queue in an anonymous
 * shared mapping, with Linux's futexes behind a test seam that can move the clock
 * and counts the log lines. Every wait is bounded: a child still running past its
 * time is killed and the test fails. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>

#include "qrt_queue.h"
#include "qrt_check.h"

QRT_CHECK_POOL

/* ---- the seam: Linux's, with a clock that can jump and a log that counts ---------- */

typedef struct {
    volatile apr_time_t skew;       /* added to the clock */
    volatile int logs;              /* lines logged */
    volatile int log_level;         /* the last line's */
} seam_t;

static seam_t *seam;

static apr_time_t t_now(void *ctx)
{
    return apr_time_now() + ((seam_t *)ctx)->skew;
}

static void t_wait(void *ctx, volatile apr_uint32_t *word, apr_uint32_t seen,
                   apr_uint32_t bits, apr_interval_time_t timeout)
{
    (void)ctx;
    qrt_queue_os_linux.wait(NULL, word, seen, bits, timeout);
}

static void t_wake(void *ctx, volatile apr_uint32_t *word, int n, apr_uint32_t bits)
{
    (void)ctx;
    qrt_queue_os_linux.wake(NULL, word, n, bits);
}

static pid_t t_self(void *ctx)
{
    (void)ctx;
    return getpid();
}

static int t_exited(void *ctx, pid_t pid)
{
    (void)ctx;
    return qrt_queue_os_linux.exited(NULL, pid);
}

static int t_gone(void *ctx, pid_t pid)
{
    (void)ctx;
    return qrt_queue_os_linux.gone(NULL, pid);
}

static void t_log(void *ctx, void *logctx, int level, const char *msg)
{
    seam_t *sm = ctx;

    (void)logctx;
    (void)msg;
    __atomic_add_fetch(&sm->logs, 1, __ATOMIC_SEQ_CST);
    sm->log_level = level;
}

static qrt_queue_os_t test_os = { t_now, t_wait, t_wake, t_self, t_exited, t_gone,
                                  t_log, NULL };

/* ---- set-up ----------------------------------------------------------------------- */

#define MAX_LOG 4096

/* What the committer saw, in the order it took the visits. */
typedef struct {
    volatile int n;
    apr_int64_t ids[MAX_LOG];
} taken_log_t;

static qrt_queue_t queue;
static qrt_queue_t *q = &queue;
static taken_log_t *taken;

static void *shared(apr_size_t size)
{
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    ck_assert_ptr_ne(m, MAP_FAILED);
    return m;
}

static void make_queue(apr_uint32_t nslots)
{
    void *mem = shared(qrt_queue_size(nslots));

    seam = shared(sizeof(*seam));
    taken = shared(sizeof(*taken));
    test_os.ctx = seam;
    ck_assert_int_eq(qrt_queue_init(mem, nslots), APR_SUCCESS);
    ck_assert_uint_eq(qrt_queue_nslots(mem), nslots);
    qrt_queue_attach(q, mem, &test_os, NULL);
}

static qrt_visit_t visit(apr_int64_t id)
{
    qrt_visit_t v;

    memset(&v, 0, sizeof(v));
    v.tracker_id = id;
    v.visit_start = 1795000000;
    v.source = "scan";
    v.ip = "203.0.113.0";
    v.country = "DE";
    v.city = "Berlin";
    v.browser = "Mobile Safari";
    v.browser_version = "17.0";
    v.os = "iOS";
    v.device = "mobile";
    v.user_agent = "Mozilla/5.0 (iPhone)";
    return v;
}

static apr_time_t now(void)
{
    return apr_time_now();
}

/* Forks a child running fn(arg); its exit status is fn's. */
static pid_t spawn(int (*fn)(long), long arg)
{
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        alarm(30);                  /* no child outlives a stuck test */
        _exit(fn(arg));
    }
    return pid;
}

/* The exit status of child pid, waited for at most ms; a child still running then
 * is killed and the test fails. */
static int reap(pid_t pid, int ms)
{
    int status, i;

    for (i = 0; i < ms; i += 5) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            ck_assert_msg(WIFEXITED(status), "child %ld died of signal %d", (long)pid,
                          WIFSIGNALED(status) ? WTERMSIG(status) : 0);
            return WEXITSTATUS(status);
        }
        usleep(5000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    ck_abort_msg("child %ld still running after %d ms", (long)pid, ms);
    return -1;
}

/* Polls the queue's counters until cond holds, at most ms. */
#define WAIT_FOR(cond, ms) \
    do { \
        qrt_queue_stats_t st; \
        int waited_; \
        for (waited_ = 0;; waited_ += 2) { \
            qrt_queue_stats(q, &st); \
            if (cond) { \
                break; \
            } \
            ck_assert_msg(waited_ < (ms), "timed out waiting for " #cond); \
            usleep(2000); \
        } \
    } while (0)

/* ---- the actors ------------------------------------------------------------------- */

#define PRODUCERS 4
#define PER_PRODUCER 150

/* Submits PER_PRODUCER visits, one after the other; each must be committed. */
static int producer(long who)
{
    int k;

    for (k = 0; k < PER_PRODUCER; k++) {
        qrt_visit_t v = visit(who * 1000000 + k);

        if (qrt_queue_submit(q, &v, now() + apr_time_from_sec(20)) != APR_SUCCESS) {
            return 1;
        }
    }
    return 0;
}

/* Takes and commits batches until `want` visits are logged (or 20 s pass). */
static int committer(long want)
{
    apr_time_t end = now() + apr_time_from_sec(20);
    apr_pool_t *p;

    apr_pool_create(&p, NULL);
    while (taken->n < want && now() < end) {
        qrt_visit_t *visits;
        qrt_queue_ticket_t *slots;
        apr_time_t deadline;
        int n, i;

        apr_pool_clear(p);
        n = qrt_queue_take(q, p, 0, &visits, &slots, &deadline, NULL);
        if (n == 0) {
            qrt_queue_wait(q, apr_time_from_msec(50));
            continue;
        }
        if (deadline == 0) {
            return 2;
        }
        for (i = 0; i < n; i++) {
            if (taken->n < MAX_LOG) {
                taken->ids[taken->n++] = visits[i].tracker_id;
            }
        }
        qrt_queue_done(q, slots, n, APR_SUCCESS);
    }
    qrt_queue_take(q, p, 1, NULL, NULL, &(apr_time_t){0}, NULL);
    return taken->n == want ? 0 : 3;
}

/* One visit with a deadline ms from now: 0 when qrt_queue_submit says `expect`. */
static apr_status_t expect_rv;
static int submit_one(long ms)
{
    qrt_visit_t v = visit(7);

    return qrt_queue_submit(q, &v, now() + apr_time_from_msec(ms)) == expect_rv ? 0 : 1;
}

/* A committer that takes one batch and then does what `how` says. */
enum { TAKE_AND_DIE, TAKE_AND_STALL, TAKE_COMMIT_AND_DIE };
static int take_one(long how)
{
    qrt_visit_t *visits;
    qrt_queue_ticket_t *slots;
    apr_time_t deadline;
    apr_pool_t *p;
    int n = 0, i;

    apr_pool_create(&p, NULL);
    for (i = 0; i < 2000 && n == 0; i++) {
        n = qrt_queue_take(q, p, 0, &visits, &slots, &deadline, NULL);
        if (n == 0) {
            usleep(2000);
        }
    }
    if (n != 1) {
        return 1;
    }
    if (how == TAKE_AND_DIE) {
        _exit(0);
    }
    if (how == TAKE_COMMIT_AND_DIE) {
        /* Committed; nothing queued: it stays the committer, idle, and dies so. */
        qrt_queue_done(q, slots, n, APR_SUCCESS);
        if (qrt_queue_take(q, p, 0, &visits, &slots, &deadline, NULL) != 0) {
            return 1;
        }
        _exit(0);
    }
    /* Stalled until the parent moves the clock and the request gives up. */
    while (taken->n == 0) {
        usleep(2000);
    }
    qrt_queue_done(q, slots, n, APR_SUCCESS);
    return 0;
}

/* ---- tests ------------------------------------------------------------------------ */

START_TEST(test_concurrent_group_commit)
{
    pid_t prod[PRODUCERS], comm;
    int last[PRODUCERS], seen[PRODUCERS], i;
    qrt_queue_stats_t st;

    make_queue(8);
    comm = spawn(committer, PRODUCERS * PER_PRODUCER);
    for (i = 0; i < PRODUCERS; i++) {
        prod[i] = spawn(producer, i + 1);
    }
    for (i = 0; i < PRODUCERS; i++) {
        ck_assert_int_eq(reap(prod[i], 25000), 0);
    }
    ck_assert_int_eq(reap(comm, 25000), 0);

    /* Every visit exactly once, each producer's in its order. */
    ck_assert_int_eq(taken->n, PRODUCERS * PER_PRODUCER);
    for (i = 0; i < PRODUCERS; i++) {
        last[i] = -1;
        seen[i] = 0;
    }
    for (i = 0; i < taken->n; i++) {
        int who = (int)(taken->ids[i] / 1000000) - 1, k = (int)(taken->ids[i] % 1000000);

        ck_assert(who >= 0 && who < PRODUCERS);
        ck_assert_int_eq(k, last[who] + 1);
        last[who] = k;
        seen[who]++;
    }
    for (i = 0; i < PRODUCERS; i++) {
        ck_assert_int_eq(seen[i], PER_PRODUCER);
    }
    qrt_queue_stats(q, &st);
    ck_assert_uint_eq(st.capacity, 8);
    ck_assert_uint_eq(st.free, 8);
    ck_assert_uint_eq(st.queued, 0);
    ck_assert_uint_eq(st.taken, 0);
    ck_assert_int_eq(st.committer, 0);
    ck_assert(st.batches >= 1 && st.batches <= (apr_uint64_t)taken->n);
    ck_assert_int_eq(seam->logs, 0);
}
END_TEST

START_TEST(test_full_queue_refuses_and_deadline_withdraws)
{
    pid_t a, b;
    qrt_visit_t v = visit(1);
    apr_time_t t0;

    make_queue(2);
    expect_rv = APR_TIMEUP;
    a = spawn(submit_one, 600);
    b = spawn(submit_one, 600);
    WAIT_FOR(st.queued == 2, 5000);
    /* Full: refused at once, without waiting. */
    t0 = now();
    ck_assert_int_eq(qrt_queue_submit(q, &v, now() + apr_time_from_sec(5)), APR_EAGAIN);
    ck_assert(now() - t0 < apr_time_from_sec(2));
    /* No writer: past their deadline the visits leave the queue, their slots free. */
    ck_assert_int_eq(reap(a, 5000), 0);
    ck_assert_int_eq(reap(b, 5000), 0);
    WAIT_FOR(st.free == 2 && st.queued == 0 && st.taken == 0, 1000);
}
END_TEST

START_TEST(test_deadline_abandons_taken_slot)
{
    pid_t req, comm;
    qrt_queue_ticket_t *slots;
    qrt_visit_t *visits;
    apr_time_t deadline, t0 = now();
    int n;

    make_queue(2);
    expect_rv = APR_TIMEUP;
    req = spawn(submit_one, 200);
    WAIT_FOR(st.queued == 1, 5000);
    /* Taken here but not committed: the request waits QRT_QUEUE_GRACE past its
     * deadline, then answers and leaves the slot to the committer. */
    n = qrt_queue_take(q, pool, 0, &visits, &slots, &deadline, NULL);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(visits[0].tracker_id, 7);
    ck_assert_int_eq(reap(req, 5000), 0);
    ck_assert(now() - t0 >= apr_time_from_msec(200) + QRT_QUEUE_GRACE);
    WAIT_FOR(st.taken == 1 && st.free == 1, 1000);
    /* The commit ends: the abandoned slot goes back to the free list. */
    qrt_queue_done(q, slots, n, APR_SUCCESS);
    WAIT_FOR(st.taken == 0 && st.free == 2, 1000);
    /* This process gives the role up; another writer commits the next visit. */
    ck_assert_int_eq(qrt_queue_take(q, pool, 1, &visits, &slots, &deadline, NULL), 0);
    comm = spawn(committer, 1);
    expect_rv = APR_SUCCESS;
    ck_assert_int_eq(submit_one(5000), 0);
    ck_assert_int_eq(reap(comm, 5000), 0);
    WAIT_FOR(st.free == 2, 1000);
}
END_TEST

START_TEST(test_dead_committer_is_replaced)
{
    pid_t req, comm;
    apr_time_t t0;

    make_queue(2);
    expect_rv = APR_EGENERAL;
    req = spawn(submit_one, 10000);
    comm = spawn(take_one, TAKE_AND_DIE);
    /* Left a zombie until reaped: its request still learns it is gone. */
    WAIT_FOR(st.taken == 1 && st.committer == comm, 5000);
    t0 = now();
    ck_assert_int_eq(reap(req, 5000), 0);
    ck_assert(now() - t0 < apr_time_from_sec(3));
    ck_assert_int_eq(seam->logs, 1);
    ck_assert_int_eq(seam->log_level, QRT_QUEUE_LOG_WARNING);
    WAIT_FOR(st.free == 2 && st.taken == 0 && st.committer == 0, 1000);
    ck_assert_int_eq(reap(comm, 1000), 0);
    /* A new writer takes the role over. */
    comm = spawn(committer, 1);
    expect_rv = APR_SUCCESS;
    ck_assert_int_eq(submit_one(5000), 0);
    ck_assert_int_eq(reap(comm, 5000), 0);
}
END_TEST

START_TEST(test_stuck_committer_is_replaced)
{
    pid_t req, comm;

    make_queue(2);
    expect_rv = APR_EGENERAL;
    req = spawn(submit_one, 200000);
    comm = spawn(take_one, TAKE_AND_STALL);
    WAIT_FOR(st.taken == 1 && st.committer == comm, 5000);
    /* Alive but silent past QRT_QUEUE_STUCK: replaced, its visit answers an error. */
    seam->skew = QRT_QUEUE_STUCK + apr_time_from_sec(1);
    ck_assert_int_eq(reap(req, 5000), 0);
    ck_assert_int_eq(seam->logs, 1);
    WAIT_FOR(st.free == 2 && st.committer == 0, 1000);
    /* Its late qrt_queue_done leaves the slots, handed out since, alone. */
    taken->n = 1;
    ck_assert_int_eq(reap(comm, 5000), 0);
    WAIT_FOR(st.free == 2 && st.taken == 0, 1000);
}
END_TEST

START_TEST(test_killed_request_slot_reclaimed)
{
    pid_t a, b;
    qrt_queue_ticket_t *slots;
    qrt_visit_t *visits;
    apr_time_t deadline;
    int n, i, rc;

    make_queue(1);
    expect_rv = APR_SUCCESS;
    a = spawn(submit_one, 10000);
    WAIT_FOR(st.queued == 1, 5000);
    kill(a, SIGKILL);
    waitpid(a, &rc, 0);
    /* Committed with nobody waiting: the slot stays done until the queue runs out. */
    n = qrt_queue_take(q, pool, 0, &visits, &slots, &deadline, NULL);
    ck_assert_int_eq(n, 1);
    qrt_queue_done(q, slots, n, APR_SUCCESS);
    WAIT_FOR(st.free == 0 && st.queued == 0 && st.taken == 0, 1000);
    /* The next request takes it back, and this process commits for it. */
    b = spawn(submit_one, 5000);
    for (i = 0; i < 2500; i++) {
        n = qrt_queue_take(q, pool, 0, &visits, &slots, &deadline, NULL);
        if (n > 0) {
            qrt_queue_done(q, slots, n, APR_SUCCESS);
            break;
        }
        usleep(2000);
    }
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(reap(b, 5000), 0);
    WAIT_FOR(st.free == 1 && st.batches == 2, 1000);
}
END_TEST

/* A request that queues its visit and sleeps, never looking at the queue again, until
 * it is killed. */
static int enqueue_and_sleep(long unused)
{
    qrt_visit_t v = visit(9);
    qrt_queue_ticket_t t;

    (void)unused;
    if (qrt_queue_enqueue(q, &v, now() + apr_time_from_sec(30), &t) != APR_SUCCESS) {
        return 1;
    }
    for (;;) {
        pause();
    }
    return 0;
}

/* Kills child pid and reaps it (a request killed while its visit waited). */
static void kill_request(pid_t pid)
{
    int status;

    kill(pid, SIGKILL);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
}

/* A child killed mid-commit holds the slot it took; its killed requests' visits stay
 * queued. Within QRT_QUEUE_STALE of its last take (the clock held back: never past it),
 * a request that finds the queue full looks at the committer at once: the dead one's
 * taken slot is freed, the queued visit committed by a new writer with the request's. */
START_TEST(test_a_full_queue_looks_at_its_committer_at_once)
{
    pid_t req1, req2, comm, writer;
    apr_time_t t0;

    make_queue(2);
    req1 = spawn(enqueue_and_sleep, 0);
    comm = spawn(take_one, TAKE_AND_DIE);
    WAIT_FOR(st.taken == 1 && st.committer == comm, 5000);
    ck_assert_int_eq(reap(comm, 5000), 0);
    seam->skew = -apr_time_from_sec(20);
    req2 = spawn(enqueue_and_sleep, 0);
    WAIT_FOR(st.queued == 1 && st.taken == 1 && st.free == 0, 5000);
    kill_request(req1);
    kill_request(req2);
    writer = spawn(committer, 2);
    expect_rv = APR_SUCCESS;
    t0 = now();
    ck_assert_int_eq(submit_one(5000), 0);
    ck_assert(now() - t0 < apr_time_from_sec(3));
    ck_assert_int_eq(reap(writer, 5000), 0);
    ck_assert_int_eq(taken->n, 2);
    ck_assert_int_eq(seam->logs, 1);
    WAIT_FOR(st.committer == 0 && st.queued == 0 && st.taken == 0, 1000);
}
END_TEST

/* Every slot queued by requests killed since, the committer dead while idle: a
 * request waits for the new writer's commit of their visits, which frees their slots,
 * and then gets one. */
START_TEST(test_a_queue_full_of_killed_requests_frees_their_slots_for_the_next)
{
    pid_t req, req1, req2, comm, writer;

    make_queue(2);
    expect_rv = APR_SUCCESS;
    req = spawn(submit_one, 10000);
    comm = spawn(take_one, TAKE_COMMIT_AND_DIE);
    ck_assert_int_eq(reap(req, 5000), 0);
    ck_assert_int_eq(reap(comm, 5000), 0);
    WAIT_FOR(st.committer == comm && st.free == 2, 1000);
    seam->skew = -apr_time_from_sec(20);
    req1 = spawn(enqueue_and_sleep, 0);
    req2 = spawn(enqueue_and_sleep, 0);
    WAIT_FOR(st.queued == 2, 5000);
    kill_request(req1);
    kill_request(req2);
    writer = spawn(committer, 3);
    ck_assert_int_eq(submit_one(5000), 0);
    ck_assert_int_eq(reap(writer, 5000), 0);
    ck_assert_int_eq(taken->n, 3);
    ck_assert_int_eq(seam->logs, 1);
    WAIT_FOR(st.free == 2 && st.committer == 0, 1000);
}
END_TEST

START_TEST(test_other_writer_waits_and_stopping_gives_up)
{
    qrt_queue_ticket_t *slots;
    qrt_visit_t *visits;
    apr_time_t deadline, t0;
    pid_t req;

    make_queue(2);
    expect_rv = APR_SUCCESS;
    req = spawn(submit_one, 5000);
    WAIT_FOR(st.queued == 1, 5000);
    ck_assert_int_eq(qrt_queue_take(q, pool, 0, &visits, &slots, &deadline, NULL), 1);
    qrt_queue_done(q, slots, 1, APR_SUCCESS);
    ck_assert_int_eq(reap(req, 5000), 0);
    /* An idle committer keeps its role; its wait ends by the timeout. */
    ck_assert_int_eq(qrt_queue_take(q, pool, 0, &visits, &slots, &deadline, NULL), 0);
    WAIT_FOR(st.committer == getpid(), 10);
    t0 = now();
    qrt_queue_wait(q, apr_time_from_msec(50));
    ck_assert(now() - t0 >= apr_time_from_msec(40));
    /* Stopping gives it up. */
    ck_assert_int_eq(qrt_queue_take(q, pool, 1, &visits, &slots, &deadline, NULL), 0);
    WAIT_FOR(st.committer == 0, 10);
    qrt_queue_wake_all(q);
}
END_TEST

/* A waiter of many requests: qrt_queue_enqueue and qrt_queue_poll never sleep; the
 * answers (commit, outcome, deadlines) are those of qrt_queue_submit_outcome. */
START_TEST(test_enqueue_and_poll_answer_without_sleeping)
{
    qrt_queue_ticket_t a, b, late, *slots;
    qrt_visit_t va = visit(1), vb = visit(2), *visits;
    apr_time_t deadline, t0 = now();
    apr_status_t rv = APR_EGENERAL;
    int n, outcome = -1;

    make_queue(4);
    ck_assert_int_eq(qrt_queue_enqueue(q, &va, now() + apr_time_from_sec(10), &a),
                     APR_SUCCESS);
    ck_assert_int_eq(qrt_queue_enqueue(q, &vb, now() + apr_time_from_sec(10), &b),
                     APR_SUCCESS);
    /* Past its deadline before any writer took it: withdrawn, slot free. */
    ck_assert_int_eq(qrt_queue_enqueue(q, &va, now() - 1, &late), APR_SUCCESS);
    ck_assert_int_eq(qrt_queue_poll(q, &late, &rv, &outcome), 1);
    ck_assert_int_eq(rv, APR_TIMEUP);
    ck_assert_int_eq(qrt_queue_poll(q, &a, &rv, &outcome), 0);
    WAIT_FOR(st.queued == 2 && st.free == 2, 10);
    n = qrt_queue_take(q, pool, 0, &visits, &slots, &deadline, NULL);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(qrt_queue_poll(q, &b, &rv, &outcome), 0);
    visits[0].cap_outcome = QRT_VISIT_CAP_SENT;
    visits[1].cap_outcome = QRT_VISIT_CAP_UNKNOWN;
    qrt_queue_done_visits(q, slots, n, APR_SUCCESS, visits);
    ck_assert_int_eq(qrt_queue_poll(q, &a, &rv, &outcome), 1);
    ck_assert_int_eq(rv, APR_SUCCESS);
    ck_assert_int_eq(outcome, QRT_VISIT_CAP_SENT);
    ck_assert_int_eq(qrt_queue_poll(q, &b, &rv, NULL), 1);
    ck_assert_int_eq(rv, APR_SUCCESS);
    WAIT_FOR(st.free == 4 && st.queued == 0 && st.taken == 0, 10);
    ck_assert(now() - t0 < apr_time_from_sec(1));
    ck_assert_int_eq(qrt_queue_take(q, pool, 1, &visits, &slots, &deadline, NULL), 0);
}
END_TEST

/* The earliest deadline among the visits queued and not taken yet, whatever their
 * order: what a writer waiting for a lock must answer in time for. */
START_TEST(test_the_queued_visits_earliest_deadline)
{
    qrt_queue_ticket_t a, b, c, *slots;
    qrt_visit_t va = visit(1), vb = visit(2), vc = visit(3), *visits;
    apr_time_t deadline, t0 = now();
    apr_status_t rv = APR_EGENERAL;

    make_queue(4);
    ck_assert_int_eq(qrt_queue_queued_deadline(q), 0);
    ck_assert_int_eq(qrt_queue_enqueue(q, &va, t0 + apr_time_from_sec(10), &a), APR_SUCCESS);
    ck_assert_int_eq(qrt_queue_queued_deadline(q), t0 + apr_time_from_sec(10));
    /* (queued after a, due before it: a slow client's request) */
    ck_assert_int_eq(qrt_queue_enqueue(q, &vb, t0 + apr_time_from_sec(3), &b), APR_SUCCESS);
    ck_assert_int_eq(qrt_queue_queued_deadline(q), t0 + apr_time_from_sec(3));
    ck_assert_int_eq(qrt_queue_take(q, pool, 0, &visits, &slots, &deadline, NULL), 2);
    ck_assert_int_eq(deadline, t0 + apr_time_from_sec(3));
    /* Taken visits are the batch's: none queued. */
    ck_assert_int_eq(qrt_queue_queued_deadline(q), 0);
    ck_assert_int_eq(qrt_queue_enqueue(q, &vc, t0 + apr_time_from_sec(7), &c), APR_SUCCESS);
    ck_assert_int_eq(qrt_queue_queued_deadline(q), t0 + apr_time_from_sec(7));
    qrt_queue_done(q, slots, 2, APR_SUCCESS);
    ck_assert_int_eq(qrt_queue_poll(q, &a, &rv, NULL), 1);
    ck_assert_int_eq(qrt_queue_poll(q, &b, &rv, NULL), 1);
    ck_assert_int_eq(qrt_queue_take(q, pool, 0, &visits, &slots, &deadline, NULL), 1);
    ck_assert_int_eq(qrt_queue_queued_deadline(q), 0);
    qrt_queue_done(q, slots, 1, APR_SUCCESS);
    ck_assert_int_eq(qrt_queue_poll(q, &c, &rv, NULL), 1);
}
END_TEST

/* qrt_queue_await wakes when another process's commit lands; a visit being committed
 * past its deadline and QRT_QUEUE_GRACE is given up and left to the committer. */
START_TEST(test_await_wakes_on_commit_and_poll_abandons_late)
{
    qrt_queue_ticket_t t, *slots;
    qrt_visit_t v = visit(3), *visits;
    apr_time_t deadline, t0;
    apr_status_t rv = APR_EGENERAL;
    pid_t comm;
    int n, i;

    make_queue(2);
    comm = spawn(committer, 1);
    ck_assert_int_eq(qrt_queue_enqueue(q, &v, now() + apr_time_from_sec(10), &t),
                     APR_SUCCESS);
    t0 = now();
    for (i = 0; i < 100 && !qrt_queue_poll(q, &t, &rv, NULL); i++) {
        qrt_queue_await(q, apr_time_from_sec(5));
    }
    ck_assert_int_eq(rv, APR_SUCCESS);
    ck_assert(now() - t0 < apr_time_from_sec(3));
    ck_assert_int_eq(reap(comm, 5000), 0);
    WAIT_FOR(st.free == 2, 1000);

    /* Taken and never committed: past deadline + grace the waiter answers. */
    ck_assert_int_eq(qrt_queue_take(q, pool, 1, &visits, &slots, &deadline, NULL), 0);
    WAIT_FOR(st.committer == 0, 1000);
    ck_assert_int_eq(qrt_queue_enqueue(q, &v, now() + apr_time_from_msec(50), &t),
                     APR_SUCCESS);
    n = qrt_queue_take(q, pool, 0, &visits, &slots, &deadline, NULL);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(qrt_queue_poll(q, &t, &rv, NULL), 0);
    seam->skew = apr_time_from_msec(100) + QRT_QUEUE_GRACE;
    ck_assert_int_eq(qrt_queue_poll(q, &t, &rv, NULL), 1);
    ck_assert_int_eq(rv, APR_TIMEUP);
    seam->skew = 0;
    WAIT_FOR(st.taken == 1 && st.free == 1, 10);
    qrt_queue_done(q, slots, n, APR_SUCCESS);
    WAIT_FOR(st.taken == 0 && st.free == 2, 10);
    ck_assert_int_eq(qrt_queue_take(q, pool, 1, &visits, &slots, &deadline, NULL), 0);
}
END_TEST

/* A commit under way (qrt_queue_committing) is waited for past QRT_QUEUE_GRACE, up to
 * QRT_QUEUE_COMMIT_WAIT; one whose request gave up before is reported, so that the
 * writer does not record a visit whose scan answered 503. */
START_TEST(test_committing_is_waited_for_and_reports_the_abandoned)
{
    qrt_queue_ticket_t a, b, *slots;
    qrt_visit_t va = visit(4), vb = visit(5), *visits;
    apr_time_t deadline;
    apr_status_t rv = APR_EGENERAL;
    char answered[2] = { 9, 9 };
    int n;

    make_queue(4);
    ck_assert_int_eq(qrt_queue_enqueue(q, &va, now() + apr_time_from_msec(50), &a),
                     APR_SUCCESS);
    ck_assert_int_eq(qrt_queue_enqueue(q, &vb, now() + apr_time_from_msec(50), &b),
                     APR_SUCCESS);
    n = qrt_queue_take(q, pool, 0, &visits, &slots, &deadline, NULL);
    ck_assert_int_eq(n, 2);
    /* a's request gives up while the batch is written: reported, not waited for */
    seam->skew = apr_time_from_msec(100) + QRT_QUEUE_GRACE;
    ck_assert_int_eq(qrt_queue_poll(q, &a, &rv, NULL), 1);
    ck_assert_int_eq(rv, APR_TIMEUP);
    ck_assert_int_eq(qrt_queue_committing(q, slots, n, answered), 1);
    ck_assert_int_eq(answered[slots[0].slot == a.slot ? 0 : 1], 1);
    ck_assert_int_eq(answered[slots[0].slot == a.slot ? 1 : 0], 0);
    /* b's commit is under way: past the grace b still waits, up to the commit wait */
    ck_assert_int_eq(qrt_queue_poll(q, &b, &rv, NULL), 0);
    seam->skew = apr_time_from_msec(50) + QRT_QUEUE_COMMIT_WAIT - apr_time_from_msec(20);
    ck_assert_int_eq(qrt_queue_poll(q, &b, &rv, NULL), 0);
    /* called again (a commit tried twice): the same answer, nothing changed */
    ck_assert_int_eq(qrt_queue_committing(q, slots, n, NULL), 1);
    qrt_queue_done(q, slots, n, APR_SUCCESS);
    ck_assert_int_eq(qrt_queue_poll(q, &b, &rv, NULL), 1);
    ck_assert_int_eq(rv, APR_SUCCESS);
    WAIT_FOR(st.free == 4 && st.taken == 0, 10);

    /* A commit that never ends: past the commit wait its request answers 503. */
    seam->skew = 0;
    ck_assert_int_eq(qrt_queue_enqueue(q, &vb, now() + apr_time_from_msec(50), &b),
                     APR_SUCCESS);
    n = qrt_queue_take(q, pool, 0, &visits, &slots, &deadline, NULL);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(qrt_queue_committing(q, slots, n, answered), 0);
    seam->skew = apr_time_from_msec(100) + QRT_QUEUE_COMMIT_WAIT;
    ck_assert_int_eq(qrt_queue_poll(q, &b, &rv, NULL), 1);
    ck_assert_int_eq(rv, APR_TIMEUP);
    seam->skew = 0;
    qrt_queue_done(q, slots, n, APR_SUCCESS);
    WAIT_FOR(st.free == 4 && st.taken == 0, 10);
    ck_assert_int_eq(qrt_queue_take(q, pool, 1, &visits, &slots, &deadline, NULL), 0);
}
END_TEST

/* Group commit under load: a busy batch waits for the next one's scans, unless its
 * commit waited for a database server long enough to have gathered them already. */
START_TEST(test_gather_after_a_busy_batch_unless_it_waited_long_for_its_server)
{
    int waited;

    for (waited = 0; waited <= 1; waited++) {
        ck_assert_int_eq(qrt_queue_gather(1, 0, waited), 0);
        ck_assert_int_eq(qrt_queue_gather(QRT_QUEUE_GATHER_MIN - 1, 100, waited), 0);
        ck_assert_int_eq(qrt_queue_gather(QRT_QUEUE_GATHER_MIN, 100, waited),
                         QRT_QUEUE_GATHER_WAIT);
        ck_assert_int_eq(qrt_queue_gather(500, QRT_QUEUE_GATHER_LONG - 1, waited),
                         QRT_QUEUE_GATHER_WAIT);
    }
    /* a long commit on the writer's own CPU (SQLite): the machine is busy, batch */
    ck_assert_int_eq(qrt_queue_gather(QRT_QUEUE_GATHER_MIN, QRT_QUEUE_GATHER_LONG, 0),
                     QRT_QUEUE_GATHER_WAIT);
    ck_assert_int_eq(qrt_queue_gather(500, apr_time_from_sec(1), 0), QRT_QUEUE_GATHER_WAIT);
    /* a long wait for the server (PostgreSQL): the next batch is there already */
    ck_assert_int_eq(qrt_queue_gather(QRT_QUEUE_GATHER_MIN, QRT_QUEUE_GATHER_LONG, 1), 0);
    ck_assert_int_eq(qrt_queue_gather(500, apr_time_from_sec(1), 1), 0);
}
END_TEST

/* The Linux seam's own process id: kept once asked, and a fork's child has its own. */
START_TEST(test_the_seam_names_each_process_after_a_fork)
{
    pid_t parent = qrt_queue_os_linux.self(NULL), child;
    int status;

    ck_assert_int_eq(parent, getpid());
    ck_assert_int_eq(qrt_queue_os_linux.self(NULL), parent);
    child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        pid_t me = qrt_queue_os_linux.self(NULL);

        _exit(me == getpid() && me != parent ? 0 : 1);
    }
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_int_eq(qrt_queue_os_linux.self(NULL), getpid());
}
END_TEST

static Suite *queue_suite(void)
{
    Suite *s = suite_create("queue");
    TCase *tc = tcase_create("queue");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_concurrent_group_commit);
    tcase_add_test(tc, test_full_queue_refuses_and_deadline_withdraws);
    tcase_add_test(tc, test_deadline_abandons_taken_slot);
    tcase_add_test(tc, test_dead_committer_is_replaced);
    tcase_add_test(tc, test_stuck_committer_is_replaced);
    tcase_add_test(tc, test_killed_request_slot_reclaimed);
    tcase_add_test(tc, test_a_full_queue_looks_at_its_committer_at_once);
    tcase_add_test(tc, test_a_queue_full_of_killed_requests_frees_their_slots_for_the_next);
    tcase_add_test(tc, test_other_writer_waits_and_stopping_gives_up);
    tcase_add_test(tc, test_enqueue_and_poll_answer_without_sleeping);
    tcase_add_test(tc, test_the_queued_visits_earliest_deadline);
    tcase_add_test(tc, test_await_wakes_on_commit_and_poll_abandons_late);
    tcase_add_test(tc, test_committing_is_waited_for_and_reports_the_abandoned);
    tcase_add_test(tc, test_gather_after_a_busy_batch_unless_it_waited_long_for_its_server);
    tcase_add_test(tc, test_the_seam_names_each_process_after_a_fork);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(queue_suite());
}
