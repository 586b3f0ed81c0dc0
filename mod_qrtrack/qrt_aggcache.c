/* qrt_aggcache: sealed report values a process keeps (see qrt_aggcache.h). */
#include <stdlib.h>
#include <string.h>
#if APR_HAS_THREADS
#include <apr_thread_mutex.h>
#endif
#include "qrt_aggcache.h"

struct qrt_aggcache_ent_t {
    qrt_aggcache_key_t key;
    apr_int64_t seal;
    apr_size_t len;
    int refs;                           /* readers holding it, + 1 while in the table */
    qrt_aggcache_ent_t *chain;          /* next of its hash slot */
    qrt_aggcache_ent_t *newer, *older;  /* the use list */
    apr_int64_t align;                  /* (data: at an offset of 8 bytes at least) */
    char data[1];                       /* len bytes and a NUL */
};

struct qrt_aggcache_t {
#if APR_HAS_THREADS
    apr_thread_mutex_t *lock;
#endif
    qrt_aggcache_ent_t **slots;
    apr_size_t nslots;                  /* a power of 2 */
    int n;
    apr_size_t bytes, max_bytes;
    qrt_aggcache_ent_t *newest, *oldest;
};

static void ac_lock(qrt_aggcache_t *c)
{
#if APR_HAS_THREADS
    apr_thread_mutex_lock(c->lock);
#else
    (void)c;
#endif
}

static void ac_unlock(qrt_aggcache_t *c)
{
#if APR_HAS_THREADS
    apr_thread_mutex_unlock(c->lock);
#else
    (void)c;
#endif
}

static apr_size_t ac_hash(const qrt_aggcache_key_t *k)
{
    apr_uint64_t h = (apr_uint64_t)k->account * APR_UINT64_C(0x9E3779B97F4A7C15);

    h ^= (apr_uint64_t)k->bucket * APR_UINT64_C(0xC2B2AE3D27D4EB4F);
    h ^= (apr_uint64_t)(k->level * 31 + k->kind) * APR_UINT64_C(0x165667B19E3779F9);
    return (apr_size_t)(h ^ (h >> 29));
}

static int ac_same(const qrt_aggcache_key_t *a, const qrt_aggcache_key_t *b)
{
    return a->account == b->account && a->bucket == b->bucket && a->level == b->level
           && a->kind == b->kind;
}

static qrt_aggcache_ent_t **ac_find(qrt_aggcache_t *c, const qrt_aggcache_key_t *k)
{
    qrt_aggcache_ent_t **e = &c->slots[ac_hash(k) & (c->nslots - 1)];

    while (*e && !ac_same(&(*e)->key, k)) {
        e = &(*e)->chain;
    }
    return e;
}

/* Under the lock: one holder less; the last one frees the value. */
static void ac_unref(qrt_aggcache_ent_t *e)
{
    if (--e->refs == 0) {
        free(e);
    }
}

static void ac_unlink_use(qrt_aggcache_t *c, qrt_aggcache_ent_t *e)
{
    if (e->newer) {
        e->newer->older = e->older;
    }
    else {
        c->newest = e->older;
    }
    if (e->older) {
        e->older->newer = e->newer;
    }
    else {
        c->oldest = e->newer;
    }
    e->newer = e->older = NULL;
}

static void ac_link_newest(qrt_aggcache_t *c, qrt_aggcache_ent_t *e)
{
    e->older = c->newest;
    e->newer = NULL;
    if (c->newest) {
        c->newest->newer = e;
    }
    c->newest = e;
    if (!c->oldest) {
        c->oldest = e;
    }
}

/* Under the lock: the value at *at leaves the table. */
static void ac_drop(qrt_aggcache_t *c, qrt_aggcache_ent_t **at)
{
    qrt_aggcache_ent_t *e = *at;

    *at = e->chain;
    ac_unlink_use(c, e);
    c->n--;
    c->bytes -= e->len;
    ac_unref(e);
}

/* Under the lock: twice the slots once there are twice as many values. */
static void ac_grow(qrt_aggcache_t *c)
{
    apr_size_t i, n = c->nslots * 2;
    qrt_aggcache_ent_t **slots = calloc(n, sizeof(*slots));

    if (!slots) {
        return;
    }
    for (i = 0; i < c->nslots; i++) {
        qrt_aggcache_ent_t *e = c->slots[i], *next;

        for (; e; e = next) {
            apr_size_t h = ac_hash(&e->key) & (n - 1);

            next = e->chain;
            e->chain = slots[h];
            slots[h] = e;
        }
    }
    free(c->slots);
    c->slots = slots;
    c->nslots = n;
}

static apr_status_t ac_free(void *data)
{
    qrt_aggcache_t *c = data;

    while (c->oldest) {
        ac_drop(c, ac_find(c, &c->oldest->key));
    }
    free(c->slots);
    c->slots = NULL;
    return APR_SUCCESS;
}

qrt_aggcache_t *qrt_aggcache_make(apr_pool_t *p, apr_size_t max_bytes)
{
    qrt_aggcache_t *c = apr_pcalloc(p, sizeof(*c));

#if APR_HAS_THREADS
    if (apr_thread_mutex_create(&c->lock, APR_THREAD_MUTEX_DEFAULT, p) != APR_SUCCESS) {
        return NULL;
    }
#endif
    c->nslots = 256;
    c->slots = calloc(c->nslots, sizeof(*c->slots));
    if (!c->slots) {
        return NULL;
    }
    c->max_bytes = max_bytes;
    apr_pool_cleanup_register(p, c, ac_free, apr_pool_cleanup_null);
    return c;
}

apr_int64_t qrt_aggcache_seal(const char *data, apr_size_t len)
{
    /* FNV-1a, 64 bits, its top two bits made 01: positive and never 0 */
    apr_uint64_t h = APR_UINT64_C(0xCBF29CE484222325);
    apr_size_t i;

    for (i = 0; i < len; i++) {
        h = (h ^ (unsigned char)data[i]) * APR_UINT64_C(0x100000001B3);
    }
    return (apr_int64_t)((h & ((APR_UINT64_C(1) << 62) - 1)) | (APR_UINT64_C(1) << 62));
}

const char *qrt_aggcache_get(qrt_aggcache_t *c, const qrt_aggcache_key_t *key,
                             apr_int64_t seal, qrt_aggcache_ent_t **ent)
{
    qrt_aggcache_ent_t *e;

    *ent = NULL;
    if (!c || !seal) {
        return NULL;
    }
    ac_lock(c);
    e = *ac_find(c, key);
    if (e && e->seal == seal) {
        e->refs++;
        ac_unlink_use(c, e);
        ac_link_newest(c, e);
        *ent = e;
    }
    ac_unlock(c);
    return *ent ? (*ent)->data : NULL;
}

const char *qrt_aggcache_get_len(qrt_aggcache_t *c, const qrt_aggcache_key_t *key,
                                 apr_int64_t seal, qrt_aggcache_ent_t **ent, apr_size_t *len)
{
    const char *data = qrt_aggcache_get(c, key, seal, ent);

    *len = data ? (*ent)->len : 0;
    return data;
}

int qrt_aggcache_get_many(qrt_aggcache_t *c, const qrt_aggcache_key_t *keys,
                          const apr_int64_t *seals, int n, const char **data,
                          apr_size_t *lens, qrt_aggcache_ent_t **ents)
{
    int i, found = 0;

    if (!c) {
        return 0;
    }
    ac_lock(c);
    for (i = 0; i < n; i++) {
        qrt_aggcache_ent_t *e;

        if (data[i] || !seals[i]) {
            continue;
        }
        e = *ac_find(c, &keys[i]);
        if (e && e->seal == seals[i]) {
            e->refs++;
            ac_unlink_use(c, e);
            ac_link_newest(c, e);
            ents[i] = e;
            data[i] = e->data;
            lens[i] = e->len;
            found++;
        }
    }
    ac_unlock(c);
    return found;
}

void qrt_aggcache_release_many(qrt_aggcache_t *c, qrt_aggcache_ent_t **ents, int n)
{
    int i;

    if (!c) {
        return;
    }
    ac_lock(c);
    for (i = 0; i < n; i++) {
        if (ents[i]) {
            ac_unref(ents[i]);
            ents[i] = NULL;
        }
    }
    ac_unlock(c);
}

void qrt_aggcache_release(qrt_aggcache_t *c, qrt_aggcache_ent_t *ent)
{
    if (c && ent) {
        ac_lock(c);
        ac_unref(ent);
        ac_unlock(c);
    }
}

void qrt_aggcache_put(qrt_aggcache_t *c, const qrt_aggcache_key_t *key, apr_int64_t seal,
                      const char *data, apr_size_t len)
{
    qrt_aggcache_put_held(c, key, seal, data, len, NULL);
}

const char *qrt_aggcache_put_held(qrt_aggcache_t *c, const qrt_aggcache_key_t *key,
                                  apr_int64_t seal, const char *data, apr_size_t len,
                                  qrt_aggcache_ent_t **ent)
{
    qrt_aggcache_ent_t *e, **at;

    if (!c || !seal || len > c->max_bytes / 8) {
        return NULL;
    }
    e = malloc(sizeof(*e) + len);
    if (!e) {
        return NULL;
    }
    memset(e, 0, sizeof(*e));
    e->key = *key;
    e->seal = seal;
    e->len = len;
    e->refs = 1;
    memcpy(e->data, data, len);
    e->data[len] = '\0';
    ac_lock(c);
    at = ac_find(c, key);
    if (*at) {
        ac_drop(c, at);
    }
    while (c->oldest && c->bytes + len > c->max_bytes) {
        ac_drop(c, ac_find(c, &c->oldest->key));
    }
    if ((apr_size_t)c->n >= c->nslots * 2) {
        ac_grow(c);
    }
    at = &c->slots[ac_hash(key) & (c->nslots - 1)];
    e->chain = *at;
    *at = e;
    ac_link_newest(c, e);
    c->n++;
    c->bytes += len;
    if (ent) {
        e->refs++;
        *ent = e;
    }
    ac_unlock(c);
    return e->data;
}

apr_size_t qrt_aggcache_max_bytes(const qrt_aggcache_t *c)
{
    return c ? c->max_bytes : 0;
}

void qrt_aggcache_usage(qrt_aggcache_t *c, int *values, apr_size_t *bytes)
{
    ac_lock(c);
    *values = c->n;
    *bytes = c->bytes;
    ac_unlock(c);
}
