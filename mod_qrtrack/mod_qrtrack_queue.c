/* mod_qrtrack_queue: the visits waiting for their commit, shared by all children.
 *
 * A scan copies its visit into a slot of this queue in shared memory and sleeps
 * until a writer has committed it. Each child runs a writer thread, but
 * only one at a time commits (the "committer"): it takes every queued visit of
 * every child into one transaction, and keeps the role while visits keep coming.
 * So the server makes one stream of large commits instead of one stream per child
 * taking turns on SQLite's write lock, and the committer's page cache stays warm.
 *
 * Waking goes through futexes on words in the shared memory (Linux): the requests
 * of a batch are woken together, once, by the committer after its commit. The
 * lists are kept under a robust process-shared mutex, held for a few list
 * operations only.
 *
 * A committer whose process dies leaves the role after QUEUE_STALE: the first
 * waiting request or writer to look (each looks every QUEUE_STALE) finds its
 * process gone, a writer takes over, and the visits the dead one had taken answer
 * 503 (they may or may not be committed; no redirect was sent for them). The
 * slots of requests whose child was killed are taken back when the queue runs
 * out of free ones; a request that finds none free first checks the committer,
 * whose dead process may hold every slot. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include "httpd.h"
#include "http_log.h"
#include <apr_strings.h>

#include "mod_qrtrack.h"
#include "qrt_visitpack.h"

APLOG_USE_MODULE(qrtrack);

#define QUEUE_KEY      "qrtrack-queue"
#define QUEUE_SLOT     8192                 /* bytes per slot, header included */
#define QUEUE_STALE    apr_time_from_msec(200) /* a committer silent this long is checked */
#define QUEUE_STUCK    apr_time_from_sec(60) /* and this long is replaced even if alive */
/* A request whose visit is being committed past its deadline waits this much longer
 * for the commit (bounded by the deadline itself: qrt_queue_take's *deadline), then
 * answers 503 and leaves the slot to the committer. */
#define QUEUE_GRACE    apr_time_from_msec(500)
#define QUEUE_NIL      0xFFFFFFFFu

enum { SLOT_FREE, SLOT_FILLING, SLOT_QUEUED, SLOT_TAKEN, SLOT_DONE };

typedef struct {
    volatile apr_uint32_t state;    /* SLOT_* */
    apr_uint32_t next;              /* next slot in its list, QUEUE_NIL at the end */
    apr_int32_t status;             /* the commit's apr_status_t */
    apr_uint32_t len;               /* bytes of data used */
    pid_t owner;                    /* child of the waiting request */
    apr_uint32_t seq;               /* bumped each time the slot is handed out */
    apr_uint32_t batch;             /* the take that takes (or took) it */
    apr_uint32_t abandoned;         /* its request answered already: the committer
                                     * frees it */
    apr_time_t deadline;            /* when its request must be answered */
    apr_time_t pad;
    char data[QUEUE_SLOT - 48];     /* the packed visit (qrt_visitpack) */
} queue_slot;

/* Any visit fits a slot (qrt_visit_pack cuts long strings). */
typedef char queue_slot_fits[sizeof(((queue_slot *)0)->data) >= QRT_VISITPACK_MIN_SIZE
                             ? 1 : -1];

struct qrt_queue {
    pthread_mutex_t lock;           /* the fields below, robust and process-shared */
    apr_uint32_t nslots;
    apr_uint32_t free;              /* free slots */
    apr_uint32_t head, tail;        /* queued slots, oldest first */
    volatile apr_uint32_t wake;     /* futex word of idle writers: bumped to wake one */
    volatile apr_uint32_t cwake;    /* futex word of the committer when idle */
    volatile apr_uint32_t done;     /* futex word of waiting requests: bumped per batch */
    apr_uint32_t takes;             /* batches taken so far */
    pid_t committer;                /* child whose writer commits, 0 = none */
    int committer_idle;             /* it waits for visits on cwake */
    apr_time_t committer_seen;      /* when it last took visits */
    queue_slot slots[];
};

/* The server for the log lines of requests that find a dead committer's role. */
static server_rec *queue_server;

static void queue_reap(qrt_queue_t *q, pid_t me, server_rec *s);

/* ---- futexes and the lock ----------------------------------------------------------- */

static void queue_futex_wait(volatile apr_uint32_t *word, apr_uint32_t seen,
                             apr_interval_time_t timeout)
{
    struct timespec ts;

    ts.tv_sec = timeout / APR_USEC_PER_SEC;
    ts.tv_nsec = (timeout % APR_USEC_PER_SEC) * 1000;
    syscall(SYS_futex, word, FUTEX_WAIT, seen, &ts, NULL, 0);
}

static void queue_futex_wake(volatile apr_uint32_t *word, int n)
{
    syscall(SYS_futex, word, FUTEX_WAKE, n, NULL, NULL, 0);
}

/* The requests of one batch sleep on the word `done` under the batch's bit, so
 * that the committer wakes them all with one call: the kernel then queues the
 * wake-ups for the other CPU together instead of interrupting it once per request
 * (on a virtual machine, each interrupt is an exit to the hypervisor). */
static apr_uint32_t queue_bit(apr_uint32_t batch)
{
    return 1u << (batch % 32);
}

static void queue_done_wait(qrt_queue_t *q, apr_uint32_t seen, apr_uint32_t bit,
                            apr_interval_time_t timeout)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += timeout / APR_USEC_PER_SEC;
    ts.tv_nsec += (timeout % APR_USEC_PER_SEC) * 1000;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    syscall(SYS_futex, &q->done, FUTEX_WAIT_BITSET, seen, &ts, NULL, bit);
}

static void queue_done_wake(qrt_queue_t *q, apr_uint32_t bits)
{
    __atomic_add_fetch(&q->done, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, &q->done, FUTEX_WAKE_BITSET, 1 << 30, NULL, NULL, bits);
}

static void queue_lock(qrt_queue_t *q)
{
    if (pthread_mutex_lock(&q->lock) == EOWNERDEAD) {
        /* A process died holding it; the lists were changed a step at a time. */
        pthread_mutex_consistent(&q->lock);
    }
}

static void queue_unlock(qrt_queue_t *q)
{
    pthread_mutex_unlock(&q->lock);
}

/* ---- set-up ------------------------------------------------------------------------- */

apr_status_t qrt_queue_create(server_rec *s, apr_uint32_t nslots, qrt_queue_t **out)
{
    apr_pool_t *pp = s->process->pool;
    apr_shm_t *shm = NULL;
    pthread_mutexattr_t attr;
    qrt_queue_t *q;
    apr_status_t rv;
    apr_uint32_t i;

    queue_server = s;
    /* Created once: a graceful restart keeps it (and the visits waiting in it). */
    apr_pool_userdata_get((void **)&shm, QUEUE_KEY, pp);
    if (shm) {
        q = apr_shm_baseaddr_get(shm);
        if (q->nslots != nslots) {
            ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, "QRT00053: QRTrackScanQueue "
                         "%u takes effect at the next full restart (now %u)",
                         nslots, q->nslots);
        }
        *out = q;
        return APR_SUCCESS;
    }
    rv = apr_shm_create(&shm, sizeof(qrt_queue_t) + (apr_size_t)nslots * sizeof(queue_slot),
                        NULL, pp);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "QRT00054: cannot create shared "
                     "memory for %u waiting visits", nslots);
        return rv;
    }
    q = apr_shm_baseaddr_get(shm);
    memset(q, 0, sizeof(*q));
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    if (pthread_mutex_init(&q->lock, &attr) != 0) {
        pthread_mutexattr_destroy(&attr);
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, "QRT00055: cannot create the "
                     "queue's process-shared mutex");
        return APR_EGENERAL;
    }
    pthread_mutexattr_destroy(&attr);
    q->nslots = nslots;
    q->head = q->tail = QUEUE_NIL;
    for (i = 0; i < nslots; i++) {
        q->slots[i].state = SLOT_FREE;
        q->slots[i].next = i + 1 < nslots ? i + 1 : QUEUE_NIL;
    }
    q->free = nslots ? 0 : QUEUE_NIL;
    apr_pool_userdata_set(shm, QUEUE_KEY, apr_pool_cleanup_null, pp);
    *out = q;
    return APR_SUCCESS;
}

/* ---- the request's side ------------------------------------------------------------- */

/* Under the lock, when no slot is free: the slots of requests whose child was
 * killed (a restart, a crash) go back to the free list, once committed if they
 * were queued. */
static void queue_reclaim(qrt_queue_t *q)
{
    apr_uint32_t i;

    for (i = 0; i < q->nslots; i++) {
        queue_slot *slot = &q->slots[i];

        if ((slot->state == SLOT_DONE || slot->state == SLOT_FILLING)
            && kill(slot->owner, 0) != 0 && errno == ESRCH) {
            slot->state = SLOT_FREE;
            slot->next = q->free;
            q->free = i;
        }
    }
}

/* Under the lock: takes queued slot i out of the queue (a request that waited too
 * long); 0 when it was not there (a writer has taken it). */
static int queue_withdraw(qrt_queue_t *q, apr_uint32_t i)
{
    apr_uint32_t prev = QUEUE_NIL, j;

    if (q->slots[i].state != SLOT_QUEUED) {
        return 0;
    }
    for (j = q->head; j != QUEUE_NIL && j != i; j = q->slots[j].next) {
        prev = j;
    }
    if (j != i) {
        return 0;
    }
    if (prev == QUEUE_NIL) {
        q->head = q->slots[i].next;
    }
    else {
        q->slots[prev].next = q->slots[i].next;
    }
    if (q->tail == i) {
        q->tail = prev;
    }
    return 1;
}

/* Under the lock: slot i back to the free list. */
static void queue_free(qrt_queue_t *q, apr_uint32_t i)
{
    q->slots[i].state = SLOT_FREE;
    q->slots[i].abandoned = 0;
    q->slots[i].next = q->free;
    q->free = i;
}

apr_status_t qrt_queue_submit(qrt_queue_t *q, const qrt_visit_t *v, apr_time_t deadline)
{
    queue_slot *slot;
    apr_uint32_t i, state;
    apr_status_t rv;
    int wake;

    queue_lock(q);
    if (q->free == QUEUE_NIL) {
        queue_reap(q, getpid(), queue_server);
        queue_reclaim(q);
    }
    i = q->free;
    if (i == QUEUE_NIL) {
        queue_unlock(q);
        return APR_EAGAIN;
    }
    slot = &q->slots[i];
    q->free = slot->next;
    slot->state = SLOT_FILLING;
    slot->owner = getpid();
    slot->seq++;
    slot->abandoned = 0;
    slot->deadline = deadline;
    queue_unlock(q);

    /* Packed outside the lock: the slot is this request's alone now. */
    slot->len = (apr_uint32_t)qrt_visit_pack(slot->data, sizeof(slot->data), v);
    slot->status = APR_EGENERAL;
    slot->next = QUEUE_NIL;

    queue_lock(q);
    slot->state = SLOT_QUEUED;
    slot->batch = q->takes + 1;     /* a take takes everything queued */
    if (q->tail == QUEUE_NIL) {
        q->head = i;
    }
    else {
        q->slots[q->tail].next = i;
    }
    q->tail = i;
    /* A committer at work takes it with its next batch; an idle one is woken;
     * without one, a writer is. */
    wake = 0;
    if (q->committer == 0) {
        q->wake++;
        wake = 1;
    }
    else if (q->committer_idle) {
        q->committer_idle = 0;
        q->cwake++;
        wake = 2;
    }
    queue_unlock(q);
    if (wake) {
        queue_futex_wake(wake == 1 ? &q->wake : &q->cwake, 1);
    }

    for (;;) {
        apr_uint32_t seen = __atomic_load_n(&q->done, __ATOMIC_ACQUIRE);
        apr_time_t since = apr_time_now();

        state = __atomic_load_n(&slot->state, __ATOMIC_ACQUIRE);
        if (state == SLOT_DONE) {
            break;
        }
        queue_done_wait(q, seen, queue_bit(slot->batch), QUEUE_STALE);
        if (__atomic_load_n(&q->done, __ATOMIC_ACQUIRE) == seen
            && apr_time_now() - since >= QUEUE_STALE) {
            /* No batch finished for a while: is the committer still there? */
            queue_lock(q);
            queue_reap(q, getpid(), queue_server);
            wake = q->committer == 0 && q->head != QUEUE_NIL;
            if (wake) {
                q->wake++;
            }
            queue_unlock(q);
            if (wake) {
                queue_futex_wake(&q->wake, 1);
            }
        }
        if (apr_time_now() >= deadline) {
            /* Waited long enough: a visit no writer has taken yet leaves the queue
             * unrecorded, and the scan is answered 503. One being committed is
             * waited for: its commit gives up by the batch's first deadline
             * (qrt_queue_take), and past QUEUE_GRACE more the request answers 503
             * anyway and leaves the slot to the committer. */
            queue_lock(q);
            if (queue_withdraw(q, i)) {
                queue_free(q, i);
                queue_unlock(q);
                return APR_TIMEUP;
            }
            if (slot->state == SLOT_TAKEN && apr_time_now() >= deadline + QUEUE_GRACE) {
                slot->abandoned = 1;
                queue_unlock(q);
                return APR_TIMEUP;
            }
            queue_unlock(q);
        }
    }
    rv = slot->status;
    queue_lock(q);
    queue_free(q, i);
    queue_unlock(q);
    return rv;
}

/* ---- the writers' side -------------------------------------------------------------- */

/* Under the lock. */
static void queue_finish(qrt_queue_t *q, apr_uint32_t i, apr_status_t rv)
{
    queue_slot *slot = &q->slots[i];

    if (slot->abandoned) {
        queue_free(q, i);
        return;
    }
    slot->status = rv;
    __atomic_store_n(&slot->state, SLOT_DONE, __ATOMIC_RELEASE);
    queue_done_wake(q, queue_bit(slot->batch));
}

/* Under the lock: whether visits wait for a commit (queued or taken). */
static int queue_waiting(const qrt_queue_t *q)
{
    apr_uint32_t i;

    if (q->head != QUEUE_NIL) {
        return 1;
    }
    for (i = 0; i < q->nslots; i++) {
        if (q->slots[i].state == SLOT_TAKEN) {
            return 1;
        }
    }
    return 0;
}

/* Whether process pid is gone: no such process, or a zombie its parent has not
 * reaped yet. A child killed with SIGKILL stays one until httpd's parent process
 * looks, up to a second later, and kill(pid, 0) succeeds on a zombie: taking its
 * state from Linux's /proc takes a dead committer's role over within QUEUE_STALE
 * instead of after that second (0.9-1.0 s here before). */
static int queue_gone(pid_t pid)
{
    char path[64], buf[512], *end;
    ssize_t n;
    int fd;

    if (kill(pid, 0) != 0) {
        return errno == ESRCH;
    }
    apr_snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return errno == ENOENT;
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return 0;
    }
    buf[n] = '\0';
    /* "pid (comm) state ...": comm may hold any character, ')' included */
    end = strrchr(buf, ')');
    return end && end[1] == ' ' && (end[2] == 'Z' || end[2] == 'X');
}

/* Under the lock: a committer whose process is gone (or that has left visits
 * waiting for QUEUE_STUCK: a stuck one, or its pid reused) loses the role; the
 * visits it had taken get an error. Should it come back, its qrt_queue_done finds
 * their slots handed out again and leaves them alone. Taken slots count as
 * waiting: when a dead committer held every slot, nothing can be queued, and only
 * they say that the role must change hands. */
static void queue_reap(qrt_queue_t *q, pid_t me, server_rec *s)
{
    apr_time_t silent;
    apr_uint32_t i;
    int dead;

    if (q->committer == 0 || q->committer == me) {
        return;
    }
    silent = apr_time_now() - q->committer_seen;
    if (silent < QUEUE_STALE) {
        return;
    }
    dead = queue_gone(q->committer);
    if (!dead && (silent < QUEUE_STUCK || q->committer_idle || !queue_waiting(q))) {
        return;
    }
    /* Said whenever visits wait, and whenever the committer's process is gone even
     * with none waiting (a writer's poll found it first, between two scans). */
    if (queue_waiting(q) || dead) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "QRT00056: the writer of child "
                     "%ld (%s) %s for %" APR_TIME_T_FMT " ms; taking over (visits it "
                     "held answer 503)", (long)q->committer, dead ? "gone" : "stuck",
                     queue_waiting(q) ? "left visits waiting" : "was silent",
                     apr_time_as_msec(silent));
    }
    q->committer = 0;
    q->committer_idle = 0;
    for (i = 0; i < q->nslots; i++) {
        if (q->slots[i].state == SLOT_TAKEN) {
            queue_finish(q, i, APR_EGENERAL);
        }
    }
}

int qrt_queue_take(qrt_queue_t *q, apr_pool_t *p, int stopping,
                   qrt_visit_t **visits, qrt_queue_ticket_t **slots,
                   apr_time_t *deadline, server_rec *s)
{
    pid_t me = getpid();
    apr_uint32_t i;
    int n = 0, kept, rest;

    *deadline = 0;

    queue_lock(q);
    queue_reap(q, me, s);
    if (q->committer != 0 && q->committer != me) {
        queue_unlock(q);
        return 0;
    }
    if (q->head == QUEUE_NIL && !stopping) {
        /* Nothing to do: a committer keeps its role (and its warm cache) and
         * waits for the next visit. */
        q->committer_idle = q->committer == me;
        queue_unlock(q);
        return 0;
    }
    if (stopping) {
        /* This child is going: give the role up. */
        if (q->committer == me) {
            q->committer = 0;
            q->committer_idle = 0;
        }
        rest = q->head != QUEUE_NIL;
        if (rest) {
            q->wake++;
        }
        queue_unlock(q);
        if (rest) {
            queue_futex_wake(&q->wake, 1);
        }
        return 0;
    }
    q->committer = me;
    q->committer_idle = 0;
    q->committer_seen = apr_time_now();
    /* All of them: the requests queued since the last take sleep under this
     * batch's bit. */
    q->takes++;
    *slots = apr_palloc(p, q->nslots * sizeof(**slots));
    for (i = q->head; i != QUEUE_NIL; i = q->slots[i].next) {
        q->slots[i].state = SLOT_TAKEN;
        q->slots[i].batch = q->takes;
        if (*deadline == 0 || q->slots[i].deadline < *deadline) {
            *deadline = q->slots[i].deadline;
        }
        (*slots)[n].slot = i;
        (*slots)[n++].seq = q->slots[i].seq;
    }
    q->head = q->tail = QUEUE_NIL;
    queue_unlock(q);

    /* The slots taken are the committer's until it finishes them. */
    *visits = apr_palloc(p, n * sizeof(**visits));
    for (i = 0, kept = 0; i < (apr_uint32_t)n; i++) {
        qrt_queue_ticket_t t = (*slots)[i];
        const queue_slot *slot = &q->slots[t.slot];

        if (qrt_visit_unpack(p, slot->data, slot->len, &(*visits)[kept]) != 0) {
            ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "QRT00057: a queued visit could "
                         "not be read back; its scan answers 503");
            queue_lock(q);
            queue_finish(q, t.slot, APR_EGENERAL);
            queue_unlock(q);
            continue;
        }
        (*slots)[kept++] = t;
    }
    return kept;
}

void qrt_queue_done(qrt_queue_t *q, const qrt_queue_ticket_t *slots, int n,
                    apr_status_t rv)
{
    apr_uint32_t bits = 0;
    int i;

    /* Only slots still taken under the same ticket: a writer that was replaced
     * while stuck must not touch slots handed out since. */
    queue_lock(q);
    for (i = 0; i < n; i++) {
        queue_slot *slot = &q->slots[slots[i].slot];

        if (slot->state == SLOT_TAKEN && slot->seq == slots[i].seq) {
            if (slot->abandoned) {
                queue_free(q, slots[i].slot);
                continue;
            }
            slot->status = rv;
            bits |= queue_bit(slot->batch);
            __atomic_store_n(&slot->state, SLOT_DONE, __ATOMIC_RELEASE);
        }
    }
    queue_unlock(q);
    if (bits) {
        queue_done_wake(q, bits);
    }
}

void qrt_queue_wait(qrt_queue_t *q, apr_interval_time_t timeout)
{
    volatile apr_uint32_t *word;
    apr_uint32_t seen;
    pid_t me = getpid();
    int pending;

    queue_lock(q);
    word = q->committer == me ? &q->cwake : &q->wake;
    seen = *word;
    pending = q->head != QUEUE_NIL && (q->committer == 0 || q->committer == me);
    queue_unlock(q);
    if (!pending) {
        queue_futex_wait(word, seen, timeout);
    }
}

void qrt_queue_wake_all(qrt_queue_t *q)
{
    queue_lock(q);
    q->wake++;
    q->cwake++;
    queue_unlock(q);
    queue_futex_wake(&q->wake, 1 << 30);
    queue_futex_wake(&q->cwake, 1 << 30);
}

void qrt_queue_stats(qrt_queue_t *q, qrt_queue_stats_t *st)
{
    apr_uint32_t i;

    memset(st, 0, sizeof(*st));
    queue_lock(q);
    st->capacity = q->nslots;
    for (i = 0; i < q->nslots; i++) {
        switch (q->slots[i].state) {
        case SLOT_FREE:
            st->free++;
            break;
        case SLOT_QUEUED:
            st->queued++;
            break;
        case SLOT_TAKEN:
            st->taken++;
            break;
        default:
            break;
        }
    }
    st->committer = q->committer;
    st->batches = q->takes;
    queue_unlock(q);
}
