/* qrt_spare: a second thread for a request's work, kept between jobs (qrt_spare.h). */
#include "qrt_spare.h"
#include "qrt_dbwatch.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct spare_thread {
    pthread_t id;
    pthread_cond_t cv;              /* a job given, or the end */
    qrt_spare_job *job;             /* given, not yet taken */
    int quit;
    struct spare_thread *next;      /* in the waiting or the ended list */
} spare_thread;

/* Everything under mu. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t done;            /* a job done, or a thread ended */
    spare_thread *idle;             /* waiting for a job */
    spare_thread *ended;            /* returned from spare_main, to be joined */
    int nidle, nlive, keep, ending;
} sp = { .mu = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER,
         .keep = QRT_SPARE_KEEP };

static pthread_once_t sp_once = PTHREAD_ONCE_INIT;

static void sp_prepare(void)
{
    pthread_mutex_lock(&sp.mu);
}

static void sp_parent(void)
{
    pthread_mutex_unlock(&sp.mu);
}

/* (the child of a fork has none of the parent's threads: their records are left, as
 * the memory of a thread that no longer exists cannot be known to be free, and the
 * condition made anew, as the parent's waiters are not the child's) */
static void sp_child(void)
{
    pthread_cond_init(&sp.done, NULL);
    sp.idle = sp.ended = NULL;
    sp.nidle = sp.nlive = 0;
    pthread_mutex_unlock(&sp.mu);
}

static void sp_once_init(void)
{
    pthread_atfork(sp_prepare, sp_parent, sp_child);
}

/* The ended threads joined (under mu: they no longer take it). */
static void sp_reap(void)
{
    while (sp.ended) {
        spare_thread *t = sp.ended;

        sp.ended = t->next;
        pthread_join(t->id, NULL);
        pthread_cond_destroy(&t->cv);
        free(t);
    }
}

static void *spare_main(void *data)
{
    spare_thread *t = data;

    pthread_mutex_lock(&sp.mu);
    for (;;) {
        qrt_spare_job *job;

        while (!t->job && !t->quit) {
            pthread_cond_wait(&t->cv, &sp.mu);
        }
        if (!t->job) {
            break;
        }
        job = t->job;
        t->job = NULL;
        pthread_mutex_unlock(&sp.mu);
        qrt_dbwatch_limit(job->dbwatch_ms);
        job->fn(job->arg);
        qrt_dbwatch_limit(0);
        pthread_mutex_lock(&sp.mu);
        job->done = 1;              /* (job is the caller's again) */
        pthread_cond_broadcast(&sp.done);
        if (sp.ending || sp.nidle >= sp.keep) {
            break;
        }
        t->next = sp.idle;
        sp.idle = t;
        sp.nidle++;
    }
    t->next = sp.ended;
    sp.ended = t;
    sp.nlive--;
    pthread_cond_broadcast(&sp.done);
    pthread_mutex_unlock(&sp.mu);
    return NULL;
}

int qrt_spare_start(qrt_spare_job *job, qrt_spare_fn *fn, void *arg)
{
    spare_thread *t;

    pthread_once(&sp_once, sp_once_init);
    job->fn = fn;
    job->arg = arg;
    job->done = 0;
    job->dbwatch_ms = qrt_dbwatch_limit_ms();
    pthread_mutex_lock(&sp.mu);
    sp_reap();
    if (sp.ending) {
        pthread_mutex_unlock(&sp.mu);
        return -1;
    }
    if ((t = sp.idle)) {
        sp.idle = t->next;
        sp.nidle--;
        t->job = job;
        pthread_cond_signal(&t->cv);
        pthread_mutex_unlock(&sp.mu);
        return 0;
    }
    if (!(t = calloc(1, sizeof(*t))) || pthread_cond_init(&t->cv, NULL) != 0) {
        free(t);
        pthread_mutex_unlock(&sp.mu);
        return -1;
    }
    t->job = job;
    if (pthread_create(&t->id, NULL, spare_main, t) != 0) {
        pthread_cond_destroy(&t->cv);
        free(t);
        pthread_mutex_unlock(&sp.mu);
        return -1;
    }
    sp.nlive++;
    pthread_mutex_unlock(&sp.mu);
    return 0;
}

void qrt_spare_wait(qrt_spare_job *job)
{
    pthread_mutex_lock(&sp.mu);
    while (!job->done) {
        pthread_cond_wait(&sp.done, &sp.mu);
    }
    pthread_mutex_unlock(&sp.mu);
}

/* Ends the waiting threads past keep (under mu). */
static void sp_trim(int keep)
{
    while (sp.nidle > keep) {
        spare_thread *t = sp.idle;

        sp.idle = t->next;
        sp.nidle--;
        t->quit = 1;
        pthread_cond_signal(&t->cv);
    }
}

void qrt_spare_keep(int n)
{
    pthread_mutex_lock(&sp.mu);
    sp.keep = n > 0 ? n : 0;
    sp.ending = 0;
    sp_trim(sp.keep);
    pthread_mutex_unlock(&sp.mu);
}

void qrt_spare_end(void)
{
    pthread_mutex_lock(&sp.mu);
    sp.ending = 1;
    sp_trim(0);
    /* (a thread at work ends after its job, as sp.ending says) */
    while (sp.nlive > 0) {
        pthread_cond_wait(&sp.done, &sp.mu);
    }
    sp_reap();
    pthread_mutex_unlock(&sp.mu);
}

void qrt_spare_counts(int *live, int *idle)
{
    pthread_mutex_lock(&sp.mu);
    sp_reap();
    *live = sp.nlive;
    *idle = sp.nidle;
    pthread_mutex_unlock(&sp.mu);
}
