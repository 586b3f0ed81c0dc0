/* qrt_queue: the visits waiting for their commit, shared by all processes.
 *
 * A scan copies its visit into a slot of this queue in shared memory and sleeps
 * until a writer has committed it. Only one writer at a time commits (the
 * "committer"): it takes every queued visit of every process into one transaction,
 * and keeps the role while visits keep coming. So the server makes one stream of
 * large commits instead of one stream per process taking turns on SQLite's write
 * lock, and the committer's page cache stays warm.
 *
 * Waking goes through futex words in the shared memory (os->wait/wake): the
 * requests of a batch are woken together, once, by the committer after its
 * commit. The lists are kept under a robust process-shared mutex, held for a few
 * list operations only.
 *
 * A committer whose process dies leaves the role after QRT_QUEUE_STALE: the first
 * waiting request or writer to look finds its process gone, a writer takes over,
 * and the visits the dead one had taken answer 503 (they may or may not be
 * committed; no redirect was sent for them). The slots of requests whose process
 * was killed are taken back when the queue runs out of free ones; a request that
 * finds none free first checks the committer at once, whose dead process may hold
 * every slot, and waits for the commit that frees the slots of killed requests. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "qrt_queue.h"
#include "qrt_visitpack.h"

#define QUEUE_SLOT     8192                 /* bytes per slot, header included */
/* How often a process looks again at who holds a full queue's slots (queue_full_check):
 * under overload every refused request would. */
#define QUEUE_FULL_CHECK apr_time_from_msec(10)
#define QUEUE_NIL      0xFFFFFFFFu

enum { SLOT_FREE, SLOT_FILLING, SLOT_QUEUED, SLOT_TAKEN, SLOT_DONE };

typedef struct {
    volatile apr_uint32_t state;    /* SLOT_* */
    apr_uint32_t next;              /* next slot in its list, QUEUE_NIL at the end */
    apr_int32_t status;             /* the commit's apr_status_t */
    apr_uint32_t len;               /* bytes of data used */
    pid_t owner;                    /* process of the waiting request */
    apr_uint32_t seq;               /* bumped each time the slot is handed out */
    apr_uint32_t batch;             /* the take that takes (or took) it */
    apr_uint32_t abandoned;         /* its request answered already: the committer
                                     * frees it */
    apr_time_t deadline;            /* when its request must be answered */
    apr_int32_t outcome;            /* the writer's cap_outcome for the visit */
    apr_uint32_t committing;        /* its commit is past the point of no return: its
                                     * request waits for the outcome */
    char data[QUEUE_SLOT - 48];     /* the packed visit (qrt_visitpack) */
} queue_slot;

/* Any visit fits a slot (qrt_visit_pack cuts long strings). */
typedef char queue_slot_fits[sizeof(((queue_slot *)0)->data) >= QRT_VISITPACK_MIN_SIZE
                             ? 1 : -1];

struct qrt_queue_shm {
    pthread_mutex_t lock;           /* the fields below, robust and process-shared */
    apr_uint32_t nslots;
    apr_uint32_t free;              /* free slots */
    apr_uint32_t head, tail;        /* queued slots, oldest first */
    volatile apr_uint32_t wake;     /* futex word of idle writers: bumped to wake one */
    volatile apr_uint32_t cwake;    /* futex word of the committer when idle */
    volatile apr_uint32_t done;     /* futex word of waiting requests: bumped per batch */
    apr_uint32_t takes;             /* batches taken so far */
    pid_t committer;                /* process whose writer commits, 0 = none */
    int committer_idle;             /* it waits for visits on cwake */
    apr_time_t committer_seen;      /* when it last took visits */
    queue_slot slots[];
};

typedef struct qrt_queue_shm queue_shm;

static void queue_reap(qrt_queue_t *q, pid_t me, int now, void *logctx);

/* ---- the lock and wake-ups ---------------------------------------------------------- */

/* The requests of one batch sleep on the word `done` under the batch's bit, so
 * that the committer wakes them all with one call: the kernel then queues the
 * wake-ups for the other CPU together instead of interrupting it once per request. */
static apr_uint32_t queue_bit(apr_uint32_t batch)
{
    return 1u << (batch % 32);
}

static void queue_done_wake(qrt_queue_t *q, apr_uint32_t bits)
{
    __atomic_add_fetch(&q->shm->done, 1, __ATOMIC_RELEASE);
    q->os->wake(q->os->ctx, &q->shm->done, 1 << 30, bits);
}

static void queue_lock(queue_shm *sh)
{
    if (pthread_mutex_lock(&sh->lock) == EOWNERDEAD) {
        /* A process died holding it; the lists were changed a step at a time. */
        pthread_mutex_consistent(&sh->lock);
    }
}

static void queue_unlock(queue_shm *sh)
{
    pthread_mutex_unlock(&sh->lock);
}

static void queue_log(qrt_queue_t *q, void *logctx, int level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void queue_log(qrt_queue_t *q, void *logctx, int level, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    if (!q->os->log) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    q->os->log(q->os->ctx, logctx, level, msg);
}

/* ---- set-up ------------------------------------------------------------------------- */

apr_size_t qrt_queue_size(apr_uint32_t nslots)
{
    return sizeof(queue_shm) + (apr_size_t)nslots * sizeof(queue_slot);
}

apr_status_t qrt_queue_init(void *mem, apr_uint32_t nslots)
{
    queue_shm *sh = mem;
    pthread_mutexattr_t attr;
    apr_uint32_t i;

    memset(sh, 0, sizeof(*sh));
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    if (pthread_mutex_init(&sh->lock, &attr) != 0) {
        pthread_mutexattr_destroy(&attr);
        return APR_EGENERAL;
    }
    pthread_mutexattr_destroy(&attr);
    sh->nslots = nslots;
    sh->head = sh->tail = QUEUE_NIL;
    for (i = 0; i < nslots; i++) {
        memset(&sh->slots[i], 0, offsetof(queue_slot, data));
        sh->slots[i].state = SLOT_FREE;
        sh->slots[i].next = i + 1 < nslots ? i + 1 : QUEUE_NIL;
    }
    sh->free = nslots ? 0 : QUEUE_NIL;
    return APR_SUCCESS;
}

apr_uint32_t qrt_queue_nslots(const void *mem)
{
    return ((const queue_shm *)mem)->nslots;
}

void qrt_queue_attach(qrt_queue_t *q, void *mem, const qrt_queue_os_t *os, void *logctx)
{
    q->shm = mem;
    q->os = os;
    q->logctx = logctx;
}

/* ---- the request's side ------------------------------------------------------------- */

/* Under the lock, when no slot is free: the slots of requests whose process was
 * killed (a restart, a crash) go back to the free list, once committed if they
 * were queued. */
static void queue_reclaim(qrt_queue_t *q)
{
    queue_shm *sh = q->shm;
    apr_uint32_t i;

    for (i = 0; i < sh->nslots; i++) {
        queue_slot *slot = &sh->slots[i];

        if ((slot->state == SLOT_DONE || slot->state == SLOT_FILLING)
            && q->os->exited(q->os->ctx, slot->owner)) {
            slot->state = SLOT_FREE;
            slot->next = sh->free;
            sh->free = i;
        }
    }
}

/* Under the lock: takes queued slot i out of the queue (a request that waited too
 * long); 0 when it was not there (a writer has taken it). */
static int queue_withdraw(queue_shm *sh, apr_uint32_t i)
{
    apr_uint32_t prev = QUEUE_NIL, j;

    if (sh->slots[i].state != SLOT_QUEUED) {
        return 0;
    }
    for (j = sh->head; j != QUEUE_NIL && j != i; j = sh->slots[j].next) {
        prev = j;
    }
    if (j != i) {
        return 0;
    }
    if (prev == QUEUE_NIL) {
        sh->head = sh->slots[i].next;
    }
    else {
        sh->slots[prev].next = sh->slots[i].next;
    }
    if (sh->tail == i) {
        sh->tail = prev;
    }
    return 1;
}

/* Under the lock: slot i back to the free list. */
static void queue_free(queue_shm *sh, apr_uint32_t i)
{
    sh->slots[i].state = SLOT_FREE;
    sh->slots[i].abandoned = 0;
    sh->slots[i].next = sh->free;
    sh->free = i;
}

apr_status_t qrt_queue_submit(qrt_queue_t *q, const qrt_visit_t *v, apr_time_t deadline)
{
    return qrt_queue_submit_outcome(q, v, deadline, NULL);
}

/* Under the lock, the queue full: its committer's process is looked at now, not only
 * after QRT_QUEUE_STALE of silence (a child killed mid-commit holds the slots it took,
 * and those its killed requests queued hold theirs, until a writer takes over: a new
 * child's first scans would otherwise find every slot held), at most every
 * QUEUE_FULL_CHECK in this process. The slots queued or taken by processes that exited,
 * which a commit will free (queue_reclaim): found then, else as found last. */
static apr_uint32_t queue_full_check(qrt_queue_t *q, pid_t me)
{
    queue_shm *sh = q->shm;
    apr_time_t t = q->os->now(q->os->ctx);
    pid_t owners[8];                /* the slots' owners looked at, and whether exited */
    int exited[8], nowners = 0, k;
    apr_uint32_t i, n = 0;

    if (q->full_checked && t >= q->full_checked && t - q->full_checked < QUEUE_FULL_CHECK) {
        return q->orphans;
    }
    q->full_checked = t;
    queue_reap(q, me, 1, q->logctx);
    for (i = 0; i < sh->nslots; i++) {
        const queue_slot *slot = &sh->slots[i];

        if ((slot->state != SLOT_QUEUED && slot->state != SLOT_TAKEN) || slot->owner == me) {
            continue;
        }
        /* (a child's threads share its pid: a few processes hold all the slots) */
        for (k = 0; k < nowners && owners[k] != slot->owner; k++) {
        }
        if (k == nowners) {
            if (nowners == 8) {
                n += q->os->exited(q->os->ctx, slot->owner) ? 1 : 0;
                continue;
            }
            owners[nowners] = slot->owner;
            exited[nowners++] = q->os->exited(q->os->ctx, slot->owner);
        }
        n += exited[k] ? 1 : 0;
    }
    q->orphans = n;
    return n;
}

/* qrt_queue_enqueue; when no slot is free, *orphans (if not NULL) gets the slots of
 * processes that exited that a commit will free. */
static apr_status_t queue_enqueue(qrt_queue_t *q, const qrt_visit_t *v, apr_time_t deadline,
                                  qrt_queue_ticket_t *t, apr_uint32_t *orphans)
{
    queue_shm *sh = q->shm;
    const qrt_queue_os_t *os = q->os;
    queue_slot *slot;
    apr_uint32_t i, held = 0;
    pid_t me = os->self(os->ctx);
    int wake;

    queue_lock(sh);
    if (sh->free == QUEUE_NIL) {
        queue_reap(q, me, 0, q->logctx);
        held = queue_full_check(q, me);
        queue_reclaim(q);
    }
    i = sh->free;
    if (i == QUEUE_NIL) {
        /* A committer just replaced left visits queued: a writer takes them. */
        wake = sh->committer == 0 && sh->head != QUEUE_NIL;
        if (wake) {
            sh->wake++;
        }
        queue_unlock(sh);
        if (wake) {
            os->wake(os->ctx, &sh->wake, 1, 0);
        }
        if (orphans) {
            *orphans = held;
        }
        return APR_EAGAIN;
    }
    slot = &sh->slots[i];
    sh->free = slot->next;
    slot->state = SLOT_FILLING;
    slot->owner = me;
    slot->seq++;
    slot->abandoned = 0;
    slot->committing = 0;
    slot->deadline = deadline;
    t->slot = i;
    t->seq = slot->seq;
    queue_unlock(sh);

    /* Packed outside the lock: the slot is this request's alone now. */
    slot->len = (apr_uint32_t)qrt_visit_pack(slot->data, sizeof(slot->data), v);
    slot->status = APR_EGENERAL;
    slot->outcome = QRT_VISIT_CAP_UNKNOWN;
    slot->next = QUEUE_NIL;

    queue_lock(sh);
    slot->state = SLOT_QUEUED;
    slot->batch = sh->takes + 1;    /* a take takes everything queued */
    if (sh->tail == QUEUE_NIL) {
        sh->head = i;
    }
    else {
        sh->slots[sh->tail].next = i;
    }
    sh->tail = i;
    /* A committer at work takes it with its next batch; an idle one is woken;
     * without one, a writer is. */
    wake = 0;
    if (sh->committer == 0) {
        sh->wake++;
        wake = 1;
    }
    else if (sh->committer_idle) {
        sh->committer_idle = 0;
        sh->cwake++;
        wake = 2;
    }
    queue_unlock(sh);
    if (wake) {
        os->wake(os->ctx, wake == 1 ? &sh->wake : &sh->cwake, 1, 0);
    }
    return APR_SUCCESS;
}

apr_status_t qrt_queue_enqueue(qrt_queue_t *q, const qrt_visit_t *v, apr_time_t deadline,
                               qrt_queue_ticket_t *t)
{
    return queue_enqueue(q, v, deadline, t, NULL);
}

int qrt_queue_poll(qrt_queue_t *q, const qrt_queue_ticket_t *t, apr_status_t *rv,
                   int *outcome)
{
    queue_shm *sh = q->shm;
    const qrt_queue_os_t *os = q->os;
    queue_slot *slot = &sh->slots[t->slot];

    if (__atomic_load_n(&slot->state, __ATOMIC_ACQUIRE) == SLOT_DONE) {
        *rv = slot->status;
        if (outcome) {
            *outcome = slot->outcome;
        }
        queue_lock(sh);
        queue_free(sh, t->slot);
        queue_unlock(sh);
        return 1;
    }
    if (os->now(os->ctx) < slot->deadline) {
        return 0;
    }
    /* Waited long enough: a visit no writer has taken yet leaves the queue
     * unrecorded, and the scan is answered 503. One being committed is waited for:
     * its commit gives up by the batch's first deadline (qrt_queue_take), and past
     * QRT_QUEUE_GRACE more the request answers 503 anyway and leaves the slot to the
     * committer, which then must not record it (qrt_queue_committing). Once its
     * commit is under way, its outcome is what the request answers: it waits for
     * it, up to QRT_QUEUE_COMMIT_WAIT past the deadline. */
    queue_lock(sh);
    if (queue_withdraw(sh, t->slot)) {
        queue_free(sh, t->slot);
        queue_unlock(sh);
        *rv = APR_TIMEUP;
        return 1;
    }
    if (slot->state == SLOT_TAKEN
        && os->now(os->ctx) >= slot->deadline + (slot->committing ? QRT_QUEUE_COMMIT_WAIT
                                                                  : QRT_QUEUE_GRACE)) {
        slot->abandoned = 1;
        queue_unlock(sh);
        *rv = APR_TIMEUP;
        return 1;
    }
    queue_unlock(sh);
    return 0;
}

/* No batch finished since `since`, QRT_QUEUE_STALE ago or more: is the committer still
 * there? A dead one is replaced, and a writer woken for the visits left queued. */
static void queue_watch(qrt_queue_t *q)
{
    queue_shm *sh = q->shm;
    const qrt_queue_os_t *os = q->os;
    int wake;

    queue_lock(sh);
    queue_reap(q, os->self(os->ctx), 0, q->logctx);
    wake = sh->committer == 0 && sh->head != QUEUE_NIL;
    if (wake) {
        sh->wake++;
    }
    queue_unlock(sh);
    if (wake) {
        os->wake(os->ctx, &sh->wake, 1, 0);
    }
}

void qrt_queue_await(qrt_queue_t *q, apr_interval_time_t timeout)
{
    queue_shm *sh = q->shm;
    const qrt_queue_os_t *os = q->os;
    apr_uint32_t seen = __atomic_load_n(&sh->done, __ATOMIC_ACQUIRE);
    apr_time_t since = os->now(os->ctx);

    if (timeout > QRT_QUEUE_STALE) {
        timeout = QRT_QUEUE_STALE;
    }
    os->wait(os->ctx, &sh->done, seen, 0xFFFFFFFFu, timeout);
    if (__atomic_load_n(&sh->done, __ATOMIC_ACQUIRE) == seen
        && os->now(os->ctx) - since >= QRT_QUEUE_STALE) {
        queue_watch(q);
    }
}

apr_status_t qrt_queue_submit_outcome(qrt_queue_t *q, const qrt_visit_t *v,
                                      apr_time_t deadline, int *outcome)
{
    queue_shm *sh = q->shm;
    const qrt_queue_os_t *os = q->os;
    qrt_queue_ticket_t t;
    apr_status_t rv;

    for (;;) {
        apr_uint32_t seen = __atomic_load_n(&sh->done, __ATOMIC_ACQUIRE), orphans = 0;
        apr_time_t t0;

        rv = queue_enqueue(q, v, deadline, &t, &orphans);
        if (rv != APR_EAGAIN || orphans == 0 || (t0 = os->now(os->ctx)) >= deadline) {
            break;
        }
        /* Slots of processes that exited come free once a writer has committed their
         * visits: the next batch's end is waited for, then a slot looked for again. */
        os->wait(os->ctx, &sh->done, seen, 0xFFFFFFFFu,
                 deadline - t0 < QRT_QUEUE_STALE ? deadline - t0 : QRT_QUEUE_STALE);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    for (;;) {
        apr_uint32_t seen = __atomic_load_n(&sh->done, __ATOMIC_ACQUIRE);
        apr_time_t since = os->now(os->ctx);

        if (qrt_queue_poll(q, &t, &rv, outcome)) {
            return rv;
        }
        os->wait(os->ctx, &sh->done, seen, queue_bit(sh->slots[t.slot].batch),
                 QRT_QUEUE_STALE);
        if (__atomic_load_n(&sh->done, __ATOMIC_ACQUIRE) == seen
            && os->now(os->ctx) - since >= QRT_QUEUE_STALE) {
            queue_watch(q);
        }
    }
}

/* ---- the writers' side -------------------------------------------------------------- */

/* Under the lock. */
static void queue_finish(qrt_queue_t *q, apr_uint32_t i, apr_status_t rv)
{
    queue_slot *slot = &q->shm->slots[i];

    if (slot->abandoned) {
        queue_free(q->shm, i);
        return;
    }
    slot->status = rv;
    __atomic_store_n(&slot->state, SLOT_DONE, __ATOMIC_RELEASE);
    queue_done_wake(q, queue_bit(slot->batch));
}

/* Under the lock: whether visits wait for a commit (queued or taken). */
static int queue_waiting(const queue_shm *sh)
{
    apr_uint32_t i;

    if (sh->head != QUEUE_NIL) {
        return 1;
    }
    for (i = 0; i < sh->nslots; i++) {
        if (sh->slots[i].state == SLOT_TAKEN) {
            return 1;
        }
    }
    return 0;
}

/* Under the lock: a committer whose process is gone (or that has left visits
 * waiting for QRT_QUEUE_STUCK: a stuck one, or its pid reused) loses the role; the
 * visits it had taken get an error. Should it come back, its qrt_queue_done finds
 * their slots handed out again and leaves them alone. Taken slots count as
 * waiting: when a dead committer held every slot, nothing can be queued, and only
 * they say that the role must change hands. */
static void queue_reap(qrt_queue_t *q, pid_t me, int now, void *logctx)
{
    queue_shm *sh = q->shm;
    apr_time_t silent;
    apr_uint32_t i;
    int dead;

    if (sh->committer == 0 || sh->committer == me) {
        return;
    }
    silent = q->os->now(q->os->ctx) - sh->committer_seen;
    /* (now: the queue is full, its process looked at whatever the silence) */
    if (silent < QRT_QUEUE_STALE && !now) {
        return;
    }
    dead = q->os->gone(q->os->ctx, sh->committer);
    if (!dead && (silent < QRT_QUEUE_STUCK || sh->committer_idle || !queue_waiting(sh))) {
        return;
    }
    /* Said whenever visits wait, and whenever the committer's process is gone even
     * with none waiting (a writer's poll found it first, between two scans). */
    if (queue_waiting(sh) || dead) {
        queue_log(q, logctx, QRT_QUEUE_LOG_WARNING, "QRT00056: the writer of child "
                  "%ld (%s) %s for %" APR_TIME_T_FMT " ms; taking over (visits it "
                  "held answer 503)", (long)sh->committer, dead ? "gone" : "stuck",
                  queue_waiting(sh) ? "left visits waiting" : "was silent",
                  apr_time_as_msec(silent));
    }
    sh->committer = 0;
    sh->committer_idle = 0;
    for (i = 0; i < sh->nslots; i++) {
        if (sh->slots[i].state == SLOT_TAKEN) {
            queue_finish(q, i, APR_EGENERAL);
        }
    }
}

int qrt_queue_take(qrt_queue_t *q, apr_pool_t *p, int stopping,
                   qrt_visit_t **visits, qrt_queue_ticket_t **slots,
                   apr_time_t *deadline, void *logctx)
{
    queue_shm *sh = q->shm;
    pid_t me = q->os->self(q->os->ctx);
    apr_uint32_t i;
    int n = 0, kept, rest;

    *deadline = 0;

    queue_lock(sh);
    queue_reap(q, me, 0, logctx);
    if (sh->committer != 0 && sh->committer != me) {
        queue_unlock(sh);
        return 0;
    }
    if (sh->head == QUEUE_NIL && !stopping) {
        /* Nothing to do: a committer keeps its role (and its warm cache) and
         * waits for the next visit. */
        sh->committer_idle = sh->committer == me;
        queue_unlock(sh);
        return 0;
    }
    if (stopping) {
        /* This process is going: give the role up. */
        if (sh->committer == me) {
            sh->committer = 0;
            sh->committer_idle = 0;
        }
        rest = sh->head != QUEUE_NIL;
        if (rest) {
            sh->wake++;
        }
        queue_unlock(sh);
        if (rest) {
            q->os->wake(q->os->ctx, &sh->wake, 1, 0);
        }
        return 0;
    }
    sh->committer = me;
    sh->committer_idle = 0;
    sh->committer_seen = q->os->now(q->os->ctx);
    /* All of them: the requests queued since the last take sleep under this
     * batch's bit. */
    sh->takes++;
    *slots = apr_palloc(p, sh->nslots * sizeof(**slots));
    for (i = sh->head; i != QUEUE_NIL; i = sh->slots[i].next) {
        sh->slots[i].state = SLOT_TAKEN;
        sh->slots[i].batch = sh->takes;
        if (*deadline == 0 || sh->slots[i].deadline < *deadline) {
            *deadline = sh->slots[i].deadline;
        }
        (*slots)[n].slot = i;
        (*slots)[n++].seq = sh->slots[i].seq;
    }
    sh->head = sh->tail = QUEUE_NIL;
    queue_unlock(sh);

    /* The slots taken are the committer's until it finishes them. */
    *visits = apr_palloc(p, n * sizeof(**visits));
    for (i = 0, kept = 0; i < (apr_uint32_t)n; i++) {
        qrt_queue_ticket_t t = (*slots)[i];
        const queue_slot *slot = &sh->slots[t.slot];

        if (qrt_visit_unpack(p, slot->data, slot->len, &(*visits)[kept]) != 0) {
            queue_log(q, logctx, QRT_QUEUE_LOG_ERR, "QRT00057: a queued visit could "
                      "not be read back; its scan answers 503");
            queue_lock(sh);
            queue_finish(q, t.slot, APR_EGENERAL);
            queue_unlock(sh);
            continue;
        }
        (*slots)[kept++] = t;
    }
    return kept;
}

apr_time_t qrt_queue_queued_deadline(qrt_queue_t *q)
{
    queue_shm *sh = q->shm;
    apr_time_t first = 0;
    apr_uint32_t i;

    queue_lock(sh);
    for (i = sh->head; i != QUEUE_NIL; i = sh->slots[i].next) {
        if (first == 0 || sh->slots[i].deadline < first) {
            first = sh->slots[i].deadline;
        }
    }
    queue_unlock(sh);
    return first;
}

/* Under the lock: whether ticket t's slot is still the committer's, taken under that
 * ticket (a writer replaced while stuck must not touch slots handed out since). */
static int queue_still_taken(const queue_shm *sh, const qrt_queue_ticket_t *t)
{
    const queue_slot *slot = &sh->slots[t->slot];

    return slot->state == SLOT_TAKEN && slot->seq == t->seq;
}

int qrt_queue_committing(qrt_queue_t *q, const qrt_queue_ticket_t *slots, int n,
                         char *answered)
{
    queue_shm *sh = q->shm;
    int i, gone = 0;

    queue_lock(sh);
    for (i = 0; i < n; i++) {
        queue_slot *slot = &sh->slots[slots[i].slot];
        /* (a slot no longer taken under this ticket was answered by the reaper) */
        int ans = !queue_still_taken(sh, &slots[i]) || slot->abandoned;

        if (!ans) {
            slot->committing = 1;
        }
        if (answered) {
            answered[i] = (char)ans;
        }
        gone += ans;
    }
    queue_unlock(sh);
    return gone;
}

void qrt_queue_done(qrt_queue_t *q, const qrt_queue_ticket_t *slots, int n,
                    apr_status_t rv)
{
    qrt_queue_done_visits(q, slots, n, rv, NULL);
}

void qrt_queue_done_visits(qrt_queue_t *q, const qrt_queue_ticket_t *slots, int n,
                           apr_status_t rv, const qrt_visit_t *visits)
{
    queue_shm *sh = q->shm;
    apr_uint32_t bits = 0;
    int i;

    /* Only slots still taken under the same ticket: a writer that was replaced
     * while stuck must not touch slots handed out since. */
    queue_lock(sh);
    for (i = 0; i < n; i++) {
        queue_slot *slot = &sh->slots[slots[i].slot];

        if (queue_still_taken(sh, &slots[i])) {
            if (slot->abandoned) {
                queue_free(sh, slots[i].slot);
                continue;
            }
            slot->status = rv;
            slot->outcome = visits ? visits[i].cap_outcome : QRT_VISIT_CAP_SENT;
            bits |= queue_bit(slot->batch);
            __atomic_store_n(&slot->state, SLOT_DONE, __ATOMIC_RELEASE);
        }
    }
    queue_unlock(sh);
    if (bits) {
        queue_done_wake(q, bits);
    }
}

void qrt_queue_wait(qrt_queue_t *q, apr_interval_time_t timeout)
{
    queue_shm *sh = q->shm;
    volatile apr_uint32_t *word;
    apr_uint32_t seen;
    pid_t me = q->os->self(q->os->ctx);
    int pending;

    queue_lock(sh);
    word = sh->committer == me ? &sh->cwake : &sh->wake;
    seen = *word;
    pending = sh->head != QUEUE_NIL && (sh->committer == 0 || sh->committer == me);
    queue_unlock(sh);
    if (!pending) {
        q->os->wait(q->os->ctx, word, seen, 0, timeout);
    }
}

void qrt_queue_wake_all(qrt_queue_t *q)
{
    queue_shm *sh = q->shm;

    queue_lock(sh);
    sh->wake++;
    sh->cwake++;
    queue_unlock(sh);
    q->os->wake(q->os->ctx, &sh->wake, 1 << 30, 0);
    q->os->wake(q->os->ctx, &sh->cwake, 1 << 30, 0);
}

void qrt_queue_stats(qrt_queue_t *q, qrt_queue_stats_t *st)
{
    queue_shm *sh = q->shm;
    apr_uint32_t i;

    memset(st, 0, sizeof(*st));
    queue_lock(sh);
    st->capacity = sh->nslots;
    for (i = 0; i < sh->nslots; i++) {
        switch (sh->slots[i].state) {
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
    st->committer = sh->committer;
    st->batches = sh->takes;
    queue_unlock(sh);
}

apr_uint32_t qrt_queue_batches_done(qrt_queue_t *q)
{
    return __atomic_load_n(&q->shm->done, __ATOMIC_RELAXED);
}

apr_interval_time_t qrt_queue_gather(int n, apr_interval_time_t took, int waited)
{
    return n >= QRT_QUEUE_GATHER_MIN && !(waited && took >= QRT_QUEUE_GATHER_LONG)
           ? QRT_QUEUE_GATHER_WAIT : 0;
}
