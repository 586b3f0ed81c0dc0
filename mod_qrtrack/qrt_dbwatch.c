/* qrt_dbwatch: a deadline on each blocking call to a database server (qrt_dbwatch.h). */
#include <errno.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "qrt_clock.h"
#include "qrt_dbwatch.h"

/* One slot a thread that armed a call; more threads than slots arm nothing. */
#define DBWATCH_SLOTS 1024
#define DBWATCH_TICK_MS 50

typedef struct {
    int fd;                     /* -1: free */
    int fired;
    long long start;            /* CLOCK_MONOTONIC, in ms */
    long long deadline;
    dev_t dev;                  /* the socket armed (fstat), told from another that */
    ino_t ino;                  /* took its number since */
} dbwatch_slot_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tick = PTHREAD_COND_INITIALIZER;
static dbwatch_slot_t slots[DBWATCH_SLOTS];
static int nslots;              /* slots ever used: the watchdog looks at these */
static int running, stopping;
static pthread_t watchdog;
static unsigned long fired;

static __thread int limit_ms;
static __thread int armed;      /* this thread's token while a call is armed */

static long long now_ms(void)
{
    return qrt_clock_now() / 1000;
}

/* Cuts the call of slot s (under the lock). Its socket is shut down only when fd is still
 * the socket armed: a connection re-opened in place during the call (apr_dbd's check of a
 * lost PostgreSQL connection, PQreset) closed it, and the number may now be another
 * thread's socket (a client's connection). The call learns of its deadline all the same. */
static void dbwatch_cut_slot(dbwatch_slot_t *s)
{
    struct stat st;

    if (fstat(s->fd, &st) == 0 && st.st_dev == s->dev && st.st_ino == s->ino) {
        shutdown(s->fd, SHUT_RDWR);
    }
    s->fired = 1;
    fired++;
}

static void *dbwatch_run(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    while (!stopping) {
        struct timespec until;
        long long now = now_ms();
        int i;

        for (i = 0; i < nslots; i++) {
            if (slots[i].fd >= 0 && !slots[i].fired && slots[i].deadline <= now) {
                dbwatch_cut_slot(&slots[i]);
            }
        }
        /* (on CLOCK_MONOTONIC, as the deadlines: a wall clock set back an hour made
         * the watchdog's tick, and every deadline with it, an hour late) */
        until = qrt_clock_after(apr_time_from_msec(DBWATCH_TICK_MS));
        pthread_cond_clockwait(&tick, &lock, CLOCK_MONOTONIC, &until);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

int qrt_dbwatch_start(void)
{
    int rv = 0, i;

    pthread_mutex_lock(&lock);
    if (!running) {
        if (!nslots) {
            for (i = 0; i < DBWATCH_SLOTS; i++) {
                slots[i].fd = -1;
            }
        }
        stopping = 0;
        rv = pthread_create(&watchdog, NULL, dbwatch_run, NULL);
        running = rv == 0;
    }
    pthread_mutex_unlock(&lock);
    return rv;
}

void qrt_dbwatch_stop(void)
{
    int was;

    pthread_mutex_lock(&lock);
    was = running;
    stopping = 1;
    running = 0;
    pthread_cond_signal(&tick);
    pthread_mutex_unlock(&lock);
    if (was) {
        pthread_join(watchdog, NULL);
    }
}

void qrt_dbwatch_limit(int ms)
{
    limit_ms = ms > 0 ? ms : 0;
}

int qrt_dbwatch_limit_ms(void)
{
    return limit_ms;
}

int qrt_dbwatch_arm(int fd)
{
    struct stat st;
    int i, token = 0;

    if (!limit_ms || fd < 0 || armed || fstat(fd, &st) != 0) {
        return 0;
    }
    pthread_mutex_lock(&lock);
    if (running) {
        for (i = 0; i < DBWATCH_SLOTS; i++) {
            if (slots[i].fd < 0) {
                slots[i].fd = fd;
                slots[i].dev = st.st_dev;
                slots[i].ino = st.st_ino;
                slots[i].fired = 0;
                slots[i].start = now_ms();
                slots[i].deadline = slots[i].start + limit_ms;
                if (i >= nslots) {
                    nslots = i + 1;
                }
                token = i + 1;
                break;
            }
        }
    }
    pthread_mutex_unlock(&lock);
    armed = token;
    return token;
}

int qrt_dbwatch_cut(void)
{
    int was;

    if (!armed) {
        return 0;
    }
    pthread_mutex_lock(&lock);
    was = slots[armed - 1].fired;
    pthread_mutex_unlock(&lock);
    return was;
}

int qrt_dbwatch_disarm(int token)
{
    int was = 0;

    if (!token) {
        return 0;
    }
    pthread_mutex_lock(&lock);
    was = slots[token - 1].fired;
    slots[token - 1].fd = -1;
    slots[token - 1].fired = 0;
    pthread_mutex_unlock(&lock);
    armed = 0;
    return was;
}

long long qrt_dbwatch_oldest_ms(void)
{
    long long now = now_ms(), oldest = 0;
    int i;

    pthread_mutex_lock(&lock);
    for (i = 0; i < nslots; i++) {
        if (slots[i].fd >= 0 && !slots[i].fired && now - slots[i].start > oldest) {
            oldest = now - slots[i].start;
        }
    }
    pthread_mutex_unlock(&lock);
    return oldest;
}

int qrt_dbwatch_cut_older(int ms)
{
    long long now = now_ms();
    int i, n = 0;

    pthread_mutex_lock(&lock);
    for (i = 0; i < nslots; i++) {
        if (slots[i].fd >= 0 && !slots[i].fired && now - slots[i].start >= ms) {
            dbwatch_cut_slot(&slots[i]);
            n++;
        }
    }
    pthread_mutex_unlock(&lock);
    return n;
}

unsigned long qrt_dbwatch_fired(void)
{
    unsigned long n;

    pthread_mutex_lock(&lock);
    n = fired;
    pthread_mutex_unlock(&lock);
    return n;
}
