/* qrt_queue: the visits waiting for their commit, in memory shared by processes.
 *
 * A request copies its visit into a free slot, queues it and sleeps until a
 * writer has committed it. One writer at a time (the committer) takes every
 * queued visit for one transaction (group commit) and wakes the batch's requests
 * together. The structure lives in memory handed to qrt_queue_init (httpd's
 * shared memory, or an anonymous shared mapping in the unit tests); what depends
 * on the OS (futexes, the clock, whether a process is gone, logging) goes through
 * qrt_queue_os_t, so tests can inject timeouts and deaths. */
#ifndef QRT_QUEUE_H
#define QRT_QUEUE_H

#include <sys/types.h>
#include <apr_pools.h>
#include <apr_time.h>

#include "qrt_store.h"

/* A committer silent this long is checked, and this long is replaced even if alive. */
#define QRT_QUEUE_STALE    apr_time_from_msec(200)
#define QRT_QUEUE_STUCK    apr_time_from_sec(60)
/* A request whose visit is being committed past its deadline waits this much longer
 * for the commit, then answers 503 and leaves the slot to the committer. */
#define QRT_QUEUE_GRACE    apr_time_from_msec(500)
/* One whose commit is under way (qrt_queue_committing) waits for its outcome, at
 * most this long past its deadline: a commit that hangs (a disk, a database server)
 * holds its batch's requests no longer than that. */
#define QRT_QUEUE_COMMIT_WAIT apr_time_from_sec(10)
/* Group commit under load (qrt_queue_gather): a batch of GATHER_MIN visits or more
 * makes the committer wait GATHER_WAIT before its next take, unless its commit waited
 * for a database server GATHER_LONG or more. */
#define QRT_QUEUE_GATHER_MIN  8
#define QRT_QUEUE_GATHER_WAIT 250                      /* microseconds */
#define QRT_QUEUE_GATHER_LONG (2 * QRT_QUEUE_GATHER_WAIT)

enum { QRT_QUEUE_LOG_ERR, QRT_QUEUE_LOG_WARNING };

/* The OS seam. Every function gets `ctx`. */
typedef struct qrt_queue_os {
    /* The time deadlines are given in (qrt_clock_now: CLOCK_MONOTONIC, which no step
     * of the wall clock moves; the segment's key says so, mod_qrtrack_queue.c). */
    apr_time_t (*now)(void *ctx);
    /* Sleeps while *word == seen, at most timeout; bits != 0: only a wake-up
     * with one of these bits ends it (FUTEX_WAIT_BITSET). */
    void (*wait)(void *ctx, volatile apr_uint32_t *word, apr_uint32_t seen,
                 apr_uint32_t bits, apr_interval_time_t timeout);
    /* Wakes up to n sleepers on word (bits != 0: those waiting for one of them). */
    void (*wake)(void *ctx, volatile apr_uint32_t *word, int n, apr_uint32_t bits);
    /* The calling process. */
    pid_t (*self)(void *ctx);
    /* Whether process pid no longer exists (its slots can be taken back). */
    int (*exited)(void *ctx, pid_t pid);
    /* Whether process pid is gone: exited, or a zombie not reaped yet. */
    int (*gone)(void *ctx, pid_t pid);
    /* One log line; logctx is the one given to qrt_queue_attach or take. */
    void (*log)(void *ctx, void *logctx, int level, const char *msg);
    void *ctx;
} qrt_queue_os_t;

/* Linux's: futex(2), qrt_clock_now, kill(2) and /proc, no log. */
extern const qrt_queue_os_t qrt_queue_os_linux;

/* The process-local handle on a queue in shared memory. */
typedef struct qrt_queue {
    struct qrt_queue_shm *shm;
    const qrt_queue_os_t *os;
    void *logctx;                   /* for the lines of requests (qrt_queue_submit) */
    /* This process's last look at a full queue's holders (under the queue's lock):
     * when, and the slots it found that a commit will free. */
    apr_time_t full_checked;
    apr_uint32_t orphans;
} qrt_queue_t;

/* A visit taken by a writer: its slot, and which use of the slot. */
typedef struct {
    apr_uint32_t slot, seq;
} qrt_queue_ticket_t;

/* What the queue holds now (for mod_status). */
typedef struct {
    apr_uint32_t capacity, free, queued, taken;
    pid_t committer;                /* child whose writer commits, 0 = none */
    apr_uint64_t batches;           /* takes since the queue was made */
} qrt_queue_stats_t;

/* Bytes of shared memory for nslots waiting visits. */
apr_size_t qrt_queue_size(apr_uint32_t nslots);
/* Lays an empty queue out in mem (qrt_queue_size bytes, zeroed or not, shared
 * before any process uses it); APR_EGENERAL when its process-shared mutex fails. */
apr_status_t qrt_queue_init(void *mem, apr_uint32_t nslots);
/* The slots of the queue laid out in mem. */
apr_uint32_t qrt_queue_nslots(const void *mem);
/* Fills in a handle on the queue in mem. */
void qrt_queue_attach(qrt_queue_t *q, void *mem, const qrt_queue_os_t *os, void *logctx);

/* Queues v and sleeps until a writer has committed it: the commit's status,
 * APR_EAGAIN when no slot is free, APR_TIMEUP past deadline (the visit is then not
 * committed, or its request leaves it to the committer). A full queue some of whose
 * slots are held by processes that exited (killed with their requests: they come free
 * once a writer has committed their visits) is waited for, up to deadline. */
apr_status_t qrt_queue_submit(qrt_queue_t *q, const qrt_visit_t *v, apr_time_t deadline);
/* The same, and *outcome gets the writer's cap_outcome for v (QRT_VISIT_CAP_UNKNOWN
 * unless it was committed). */
apr_status_t qrt_queue_submit_outcome(qrt_queue_t *q, const qrt_visit_t *v,
                                      apr_time_t deadline, int *outcome);
/* The same in steps, for a waiter that answers its requests later: queues v (the
 * ticket in *t), or APR_EAGAIN when no slot is free. */
apr_status_t qrt_queue_enqueue(qrt_queue_t *q, const qrt_visit_t *v, apr_time_t deadline,
                               qrt_queue_ticket_t *t);
/* Without sleeping: 1 when t's visit has its answer (*rv and *outcome as
 * qrt_queue_submit_outcome gives them, the slot handed back; t is then spent), 0 while
 * it still waits. Past the deadline it gives up as qrt_queue_submit does (APR_TIMEUP). */
int qrt_queue_poll(qrt_queue_t *q, const qrt_queue_ticket_t *t, apr_status_t *rv,
                   int *outcome);
/* Sleeps until any batch finishes, at most timeout (capped at QRT_QUEUE_STALE); when
 * none finished meanwhile, checks the committer as a waiting request does. */
void qrt_queue_await(qrt_queue_t *q, apr_interval_time_t timeout);
/* A writer: takes every queued visit (copied into p) and the role of committer,
 * unless another writer has it; the number of visits; *deadline is the batch's
 * earliest (stopping gives the role up). The visits must then go to qrt_queue_done. */
int qrt_queue_take(qrt_queue_t *q, apr_pool_t *p, int stopping,
                   qrt_visit_t **visits, qrt_queue_ticket_t **slots,
                   apr_time_t *deadline, void *logctx);
/* The earliest deadline of the visits queued and not taken yet; 0 when none. A writer
 * waiting for a lock held elsewhere gives its wait up in time for them too: a visit
 * queued after its batch may have less time left than the batch (a scan's time runs
 * from its request line, and a slow client's headers take some of it). */
apr_time_t qrt_queue_queued_deadline(qrt_queue_t *q);
/* A writer about to make n taken visits' commit final (its COMMIT, or the spool):
 * from now on their requests wait for the outcome instead of giving up past
 * QRT_QUEUE_GRACE. The number of those whose requests have answered already (503):
 * they must not be recorded (answered[i] 1 for each, when answered is not NULL). */
int qrt_queue_committing(qrt_queue_t *q, const qrt_queue_ticket_t *slots, int n,
                         char *answered);
/* Ends the commit of n taken visits with rv, waking their requests. */
void qrt_queue_done(qrt_queue_t *q, const qrt_queue_ticket_t *slots, int n,
                    apr_status_t rv);
/* The same, handing each request its visit's cap_outcome (visits as taken). */
void qrt_queue_done_visits(qrt_queue_t *q, const qrt_queue_ticket_t *slots, int n,
                           apr_status_t rv, const qrt_visit_t *visits);
/* How long a committer waits before its next take, after a commit of n visits that
 * took `took` (from the batch's take to its outcome). A batch of QRT_QUEUE_GATHER_MIN
 * or more means scans arrive faster than one at a time: waiting lets the next batch
 * hold the scans that arrive meanwhile, and a commit costs about the same for 9 visits
 * as for 25. Smaller batches do not wait: a few clients scanning in turn would only
 * see each scan's commit come later. waited: the commit waited for a database server
 * (PostgreSQL), whose round trips gather the next batch while they run: one that took
 * QRT_QUEUE_GATHER_LONG or more is followed at once, as waiting would only stretch the
 * committer's cycle, which bounds the scans a second. (SQLite's commit runs on the
 * writer's own CPU: a long one means a busy machine, where larger batches save CPU.) */
apr_interval_time_t qrt_queue_gather(int n, apr_interval_time_t took, int waited);
/* A writer with nothing to take sleeps until a visit is queued or timeout. */
void qrt_queue_wait(qrt_queue_t *q, apr_interval_time_t timeout);
/* Wakes every sleeping writer (a child stopping). */
void qrt_queue_wake_all(qrt_queue_t *q);
void qrt_queue_stats(qrt_queue_t *q, qrt_queue_stats_t *st);
/* Batches committed so far (a count that wraps), read without the queue's lock: how
 * busy its committer is, for work that should give way to scans. */
apr_uint32_t qrt_queue_batches_done(qrt_queue_t *q);

#endif
