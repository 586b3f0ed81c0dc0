/* qrt_clock: a clock and a condition that steps of the wall clock do not move
 * (qrt_clock.h). */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "qrt_clock.h"

struct qrt_cond_t {
    pthread_mutex_t lock;
    pthread_cond_t cond;
};

apr_time_t qrt_clock_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (apr_time_t)ts.tv_sec * APR_USEC_PER_SEC + ts.tv_nsec / 1000;
}

struct timespec qrt_clock_after(apr_interval_time_t t)
{
    apr_time_t until = qrt_clock_now() + (t > 0 ? t : 0);
    struct timespec ts;

    ts.tv_sec = (time_t)(until / APR_USEC_PER_SEC);
    ts.tv_nsec = (long)(until % APR_USEC_PER_SEC) * 1000;
    return ts;
}

int qrt_clock_within(apr_time_t last, apr_time_t now, apr_interval_time_t interval)
{
    return now >= last ? now - last < interval : last - now < interval;
}

static apr_status_t cond_gone(void *data)
{
    qrt_cond_t *c = data;

    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->lock);
    return APR_SUCCESS;
}

apr_status_t qrt_cond_create(qrt_cond_t **c, apr_pool_t *p)
{
    qrt_cond_t *n = apr_palloc(p, sizeof(*n));
    int rc;

    if ((rc = pthread_mutex_init(&n->lock, NULL)) != 0) {
        return rc;
    }
    if ((rc = pthread_cond_init(&n->cond, NULL)) != 0) {
        pthread_mutex_destroy(&n->lock);
        return rc;
    }
    apr_pool_cleanup_register(p, n, cond_gone, apr_pool_cleanup_null);
    *c = n;
    return APR_SUCCESS;
}

void qrt_cond_lock(qrt_cond_t *c)
{
    pthread_mutex_lock(&c->lock);
}

void qrt_cond_unlock(qrt_cond_t *c)
{
    pthread_mutex_unlock(&c->lock);
}

void qrt_cond_wait(qrt_cond_t *c)
{
    pthread_cond_wait(&c->cond, &c->lock);
}

apr_status_t qrt_cond_timedwait(qrt_cond_t *c, apr_interval_time_t t)
{
    struct timespec ts = qrt_clock_after(t);
    int rc;

    /* (glibc's pthread_cond_clockwait: the instant is on CLOCK_MONOTONIC) */
    rc = pthread_cond_clockwait(&c->cond, &c->lock, CLOCK_MONOTONIC, &ts);
    return rc == ETIMEDOUT ? APR_TIMEUP : rc;
}

void qrt_cond_signal(qrt_cond_t *c)
{
    pthread_cond_signal(&c->cond);
}

void qrt_cond_broadcast(qrt_cond_t *c)
{
    pthread_cond_broadcast(&c->cond);
}
