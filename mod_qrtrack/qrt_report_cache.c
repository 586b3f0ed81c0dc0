/* qrt_report_cache: the report scopes a process read last (see qrt_report_cache.h). */
#include <string.h>
#include <apr_strings.h>
#include <apr_hash.h>
#if APR_HAS_THREADS
#include <apr_thread_mutex.h>
#endif
#include "qrt_report_cache.h"

typedef struct cache_ent {
    apr_int64_t account, version;
    apr_pool_t *pool;               /* its own (unmanaged): the entry and its copy */
    apr_array_header_t *live;       /* qrt_report_tracker_t */
    int deleted;
    apr_array_header_t *dirty;      /* const char *: the state's dirty tags */
    apr_pool_t *tags_pool;          /* its own (unmanaged): agg_tags, once kept */
    apr_hash_t *agg_tags;           /* tracker id -> apr_array of const char *, or NULL */
    apr_uint64_t used;              /* when last handed out or kept */
    int refs;                       /* requests holding it, + 1 while in the table */
} cache_ent;

struct qrt_report_cache_t {
#if APR_HAS_THREADS
    apr_thread_mutex_t *lock;
#endif
    cache_ent **ents;
    int n, max, max_trackers;
    apr_uint64_t tick;
};

typedef struct {
    qrt_report_cache_t *c;
    cache_ent *e;
} cache_hold;

static void cache_lock(qrt_report_cache_t *c)
{
#if APR_HAS_THREADS
    apr_thread_mutex_lock(c->lock);
#else
    (void)c;
#endif
}

static void cache_unlock(qrt_report_cache_t *c)
{
#if APR_HAS_THREADS
    apr_thread_mutex_unlock(c->lock);
#else
    (void)c;
#endif
}

/* Under the lock: one holder less; the last one frees the entry. */
static void cache_unref(cache_ent *e)
{
    if (--e->refs == 0) {
        if (e->tags_pool) {
            apr_pool_destroy(e->tags_pool);
        }
        apr_pool_destroy(e->pool);
    }
}

/* Under the lock: entry i leaves the table. */
static void cache_drop(qrt_report_cache_t *c, int i)
{
    cache_ent *e = c->ents[i];

    c->ents[i] = c->ents[--c->n];
    cache_unref(e);
}

static apr_status_t cache_release(void *data)
{
    cache_hold *h = data;

    cache_lock(h->c);
    cache_unref(h->e);
    cache_unlock(h->c);
    return APR_SUCCESS;
}

static apr_status_t cache_free(void *data)
{
    qrt_report_cache_t *c = data;

    cache_lock(c);
    while (c->n > 0) {
        cache_drop(c, c->n - 1);
    }
    cache_unlock(c);
    return APR_SUCCESS;
}

qrt_report_cache_t *qrt_report_cache_make(apr_pool_t *p, int max_accounts,
                                          int max_trackers)
{
    qrt_report_cache_t *c = apr_pcalloc(p, sizeof(*c));

#if APR_HAS_THREADS
    if (apr_thread_mutex_create(&c->lock, APR_THREAD_MUTEX_DEFAULT, p) != APR_SUCCESS) {
        return NULL;
    }
#endif
    c->max = max_accounts > 0 ? max_accounts : 1;
    c->max_trackers = max_trackers;
    c->ents = apr_pcalloc(p, (apr_size_t)c->max * sizeof(*c->ents));
    /* Registered after the lock's own cleanup: runs before it. */
    apr_pool_cleanup_register(p, c, cache_free, apr_pool_cleanup_null);
    return c;
}

int qrt_report_cache_get(qrt_report_cache_t *c, apr_int64_t account, apr_int64_t version,
                         apr_pool_t *p, apr_array_header_t **live, qrt_agg_state_t *state)
{
    cache_hold *h;
    cache_ent *e = NULL;
    int i;

    if (!c) {
        return 0;
    }
    cache_lock(c);
    for (i = 0; i < c->n; i++) {
        if (c->ents[i]->account == account && c->ents[i]->version == version) {
            e = c->ents[i];
            e->refs++;
            e->used = ++c->tick;
            break;
        }
    }
    cache_unlock(c);
    if (!e) {
        return 0;
    }
    h = apr_palloc(p, sizeof(*h));
    h->c = c;
    h->e = e;
    apr_pool_cleanup_register(p, h, cache_release, apr_pool_cleanup_null);
    *live = e->live;
    state->deleted = e->deleted;
    state->dirty_tags = apr_hash_make(p);
    for (i = 0; i < e->dirty->nelts; i++) {
        const char *tag = APR_ARRAY_IDX(e->dirty, i, const char *);

        apr_hash_set(state->dirty_tags, tag, APR_HASH_KEY_STRING, tag);
    }
    return 1;
}

/* A copy of a scope in a pool of its own. */
static cache_ent *cache_copy(apr_int64_t account, apr_int64_t version,
                             const apr_array_header_t *live, const qrt_agg_state_t *state)
{
    apr_pool_t *ep;
    cache_ent *e;
    apr_hash_index_t *hi;
    int i, j;

    if (apr_pool_create_unmanaged_ex(&ep, NULL, NULL) != APR_SUCCESS) {
        return NULL;
    }
    e = apr_pcalloc(ep, sizeof(*e));
    e->pool = ep;
    e->account = account;
    e->version = version;
    e->deleted = state->deleted;
    e->live = apr_array_make(ep, live->nelts > 0 ? live->nelts : 1,
                             sizeof(qrt_report_tracker_t));
    for (i = 0; i < live->nelts; i++) {
        const qrt_report_tracker_t *t = &APR_ARRAY_IDX(live, i, qrt_report_tracker_t);
        qrt_report_tracker_t *x = apr_array_push(e->live);

        x->id = t->id;
        x->name = t->name ? apr_pstrdup(ep, t->name) : NULL;
        x->type = t->type ? apr_pstrdup(ep, t->type) : NULL;
        x->tags = apr_array_make(ep, t->tags && t->tags->nelts > 0 ? t->tags->nelts : 1,
                                 sizeof(qrt_report_tag_t));
        for (j = 0; t->tags && j < t->tags->nelts; j++) {
            const qrt_report_tag_t *g = &APR_ARRAY_IDX(t->tags, j, qrt_report_tag_t);
            qrt_report_tag_t *y = apr_array_push(x->tags);

            y->tag = g->tag ? apr_pstrdup(ep, g->tag) : NULL;
            y->dimension = g->dimension ? apr_pstrdup(ep, g->dimension) : NULL;
            y->value = g->value ? apr_pstrdup(ep, g->value) : NULL;
        }
    }
    e->dirty = apr_array_make(ep, 4, sizeof(const char *));
    for (hi = apr_hash_first(ep, state->dirty_tags); hi; hi = apr_hash_next(hi)) {
        APR_ARRAY_PUSH(e->dirty, const char *) = apr_pstrdup(ep, apr_hash_this_key(hi));
    }
    e->refs = 1;                    /* the table's */
    return e;
}

void qrt_report_cache_put(qrt_report_cache_t *c, apr_int64_t account, apr_int64_t version,
                          const apr_array_header_t *live, const qrt_agg_state_t *state)
{
    cache_ent *e;
    int i, oldest = 0;

    if (!c || live->nelts > c->max_trackers) {
        return;
    }
    /* Copied outside the lock: the other threads keep reading. */
    if (!(e = cache_copy(account, version, live, state))) {
        return;
    }
    cache_lock(c);
    for (i = 0; i < c->n; i++) {
        if (c->ents[i]->account == account && c->ents[i]->version > version) {
            /* (read before a change another request has kept already) */
            cache_unlock(c);
            apr_pool_destroy(e->pool);
            return;
        }
        if (c->ents[i]->account == account) {
            cache_drop(c, i);
            break;
        }
    }
    if (c->n == c->max) {
        for (i = 1; i < c->n; i++) {
            if (c->ents[i]->used < c->ents[oldest]->used) {
                oldest = i;
            }
        }
        cache_drop(c, oldest);
    }
    e->used = ++c->tick;
    c->ents[c->n++] = e;
    cache_unlock(c);
}

/* Under the lock: account's entry at version, or NULL. */
static cache_ent *cache_find(qrt_report_cache_t *c, apr_int64_t account, apr_int64_t version)
{
    int i;

    for (i = 0; i < c->n; i++) {
        if (c->ents[i]->account == account && c->ents[i]->version == version) {
            return c->ents[i];
        }
    }
    return NULL;
}

apr_hash_t *qrt_report_cache_agg_tags(qrt_report_cache_t *c, apr_int64_t account,
                                      apr_int64_t version, apr_pool_t *p)
{
    cache_hold *h;
    cache_ent *e;
    apr_hash_t *map = NULL;

    if (!c) {
        return NULL;
    }
    cache_lock(c);
    e = cache_find(c, account, version);
    if (e && e->agg_tags) {
        map = e->agg_tags;
        e->refs++;
    }
    cache_unlock(c);
    if (map) {
        h = apr_palloc(p, sizeof(*h));
        h->c = c;
        h->e = e;
        apr_pool_cleanup_register(p, h, cache_release, apr_pool_cleanup_null);
    }
    return map;
}

#define CACHE_TAGS_MAX 64           /* tags a tracker, for a map to be kept */

void qrt_report_cache_put_agg_tags(qrt_report_cache_t *c, apr_int64_t account,
                                   apr_int64_t version, apr_hash_t *map)
{
    apr_pool_t *tp;
    apr_hash_t *copy;
    apr_hash_index_t *hi;
    cache_ent *e;
    int i, kept = 0;

    if (!c || !map || (int)apr_hash_count(map) > c->max_trackers) {
        return;
    }
    cache_lock(c);
    e = cache_find(c, account, version);
    kept = e && e->agg_tags;
    cache_unlock(c);
    if (!e || kept) {
        return;
    }
    /* Copied outside the lock, into a pool of its own: the other threads keep reading. */
    if (apr_pool_create_unmanaged_ex(&tp, NULL, NULL) != APR_SUCCESS) {
        return;
    }
    copy = apr_hash_make(tp);
    for (hi = apr_hash_first(tp, map); hi; hi = apr_hash_next(hi)) {
        const apr_int64_t *id = apr_hash_this_key(hi);
        const apr_array_header_t *tags = apr_hash_this_val(hi);
        apr_array_header_t *x;

        if (tags->nelts > CACHE_TAGS_MAX) {
            apr_pool_destroy(tp);
            return;
        }
        x = apr_array_make(tp, tags->nelts > 0 ? tags->nelts : 1, sizeof(const char *));
        for (i = 0; i < tags->nelts; i++) {
            APR_ARRAY_PUSH(x, const char *) = apr_pstrdup(tp, APR_ARRAY_IDX(tags, i,
                                                                           const char *));
        }
        apr_hash_set(copy, apr_pmemdup(tp, id, sizeof(*id)), sizeof(*id), x);
    }
    cache_lock(c);
    /* (the entry may have gone or got a map meanwhile: then this copy goes) */
    e = cache_find(c, account, version);
    if (e && !e->agg_tags) {
        e->tags_pool = tp;
        e->agg_tags = copy;
        tp = NULL;
    }
    cache_unlock(c);
    if (tp) {
        apr_pool_destroy(tp);
    }
}

int qrt_report_cache_count(qrt_report_cache_t *c)
{
    int n;

    cache_lock(c);
    n = c->n;
    cache_unlock(c);
    return n;
}
