/* qrt_poolkeep: allocators kept from one request's work to the next (qrt_poolkeep.h). */
#include "qrt_poolkeep.h"
#include "qrt_clock.h"

#include <apr_allocator.h>
#include <pthread.h>

#define POOLKEEP_MAX 16

struct qrt_poolkeep {
    pthread_mutex_t mu;             /* over the slots */
    apr_size_t keep;
    int n;
    struct {
        apr_allocator_t *a;         /* kept, waiting for a pool; NULL: none */
        apr_time_t at;              /* when it was put back (qrt_clock_now) */
    } slot[POOLKEEP_MAX];
};

/* (after the pool and its subpools: a cleanup of the parent registered before the pool
 * was made runs once the pool is destroyed, as APR destroys subpools first) */
typedef struct {
    qrt_poolkeep_t *k;
    apr_allocator_t *a;
    apr_pool_t *pool;
} poolkeep_use;

static apr_allocator_t *poolkeep_take(qrt_poolkeep_t *k)
{
    apr_allocator_t *a = NULL;
    int i;

    pthread_mutex_lock(&k->mu);
    for (i = 0; i < k->n && !a; i++) {
        a = k->slot[i].a;
        k->slot[i].a = NULL;
    }
    pthread_mutex_unlock(&k->mu);
    if (!a && apr_allocator_create(&a) == APR_SUCCESS) {
        apr_allocator_max_free_set(a, k->keep);
    }
    return a;
}

/* a back among the kept ones, or destroyed when they are enough */
static void poolkeep_put(qrt_poolkeep_t *k, apr_allocator_t *a)
{
    int i;

    pthread_mutex_lock(&k->mu);
    for (i = 0; i < k->n && a; i++) {
        if (!k->slot[i].a) {
            k->slot[i].a = a;
            k->slot[i].at = qrt_clock_now();
            a = NULL;
        }
    }
    pthread_mutex_unlock(&k->mu);
    if (a) {
        apr_allocator_destroy(a);
    }
}

static apr_status_t poolkeep_done(void *data)
{
    poolkeep_use *u = data;

    /* (the pool destroyed before its parent by its user: it is gone already) */
    if (u->pool) {
        apr_pool_destroy(u->pool);
    }
    poolkeep_put(u->k, u->a);
    return APR_SUCCESS;
}

/* (the pool destroyed on its own, before its parent: the allocator waits for the parent's
 * cleanup, which must not destroy the pool again) */
static apr_status_t poolkeep_gone(void *data)
{
    ((poolkeep_use *)data)->pool = NULL;
    return APR_SUCCESS;
}

static apr_status_t poolkeep_end(void *data)
{
    qrt_poolkeep_t *k = data;
    int i;

    pthread_mutex_lock(&k->mu);
    for (i = 0; i < k->n; i++) {
        if (k->slot[i].a) {
            apr_allocator_destroy(k->slot[i].a);
            k->slot[i].a = NULL;
        }
    }
    k->n = 0;
    pthread_mutex_unlock(&k->mu);
    pthread_mutex_destroy(&k->mu);
    return APR_SUCCESS;
}

qrt_poolkeep_t *qrt_poolkeep_make(apr_pool_t *p, int n, apr_size_t keep)
{
    qrt_poolkeep_t *k = apr_pcalloc(p, sizeof(*k));

    if (pthread_mutex_init(&k->mu, NULL) != 0) {
        return NULL;
    }
    k->n = n < 0 ? 0 : n > POOLKEEP_MAX ? POOLKEEP_MAX : n;
    k->keep = keep;
    apr_pool_cleanup_register(p, k, poolkeep_end, apr_pool_cleanup_null);
    return k;
}

apr_pool_t *qrt_poolkeep_pool(qrt_poolkeep_t *k, apr_pool_t *parent)
{
    poolkeep_use *u;
    apr_pool_t *p = NULL;

    if (!k) {
        return apr_pool_create(&p, parent) == APR_SUCCESS ? p : NULL;
    }
    u = apr_palloc(parent, sizeof(*u));
    u->k = k;
    if (!(u->a = poolkeep_take(k))) {
        return NULL;
    }
    if (apr_pool_create_ex(&p, parent, NULL, u->a) != APR_SUCCESS) {
        poolkeep_put(k, u->a);
        return NULL;
    }
    u->pool = p;
    /* the parent's cleanup runs after its subpools are destroyed: the allocator is back
     * once nothing allocates from it */
    apr_pool_cleanup_register(parent, u, poolkeep_done, apr_pool_cleanup_null);
    apr_pool_cleanup_register(p, u, poolkeep_gone, apr_pool_cleanup_null);
    return p;
}

int qrt_poolkeep_release(qrt_poolkeep_t *k, apr_time_t now, apr_time_t idle)
{
    apr_allocator_t *gone[POOLKEEP_MAX];
    int i, n = 0;

    if (!k) {
        return 0;
    }
    pthread_mutex_lock(&k->mu);
    for (i = 0; i < k->n; i++) {
        if (k->slot[i].a && now - k->slot[i].at >= idle) {
            gone[n++] = k->slot[i].a;
            k->slot[i].a = NULL;
        }
    }
    pthread_mutex_unlock(&k->mu);
    for (i = 0; i < n; i++) {
        apr_allocator_destroy(gone[i]);
    }
    return n;
}

int qrt_poolkeep_idle(qrt_poolkeep_t *k)
{
    int i, n = 0;

    pthread_mutex_lock(&k->mu);
    for (i = 0; i < k->n; i++) {
        n += k->slot[i].a != NULL;
    }
    pthread_mutex_unlock(&k->mu);
    return n;
}
