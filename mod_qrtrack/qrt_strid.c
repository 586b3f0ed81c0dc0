/* qrt_strid: a number for each string a process has seen (see qrt_strid.h). */
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>
#include <apr_thread_mutex.h>

#include "qrt_strid.h"

typedef struct {
    apr_uint64_t hash;
    apr_size_t off;                 /* the string in the arena */
    apr_uint32_t id;                /* 0: an empty slot */
} sid_slot;

struct qrt_strid_t {
#if APR_HAS_THREADS
    apr_thread_mutex_t *lock;
#endif
    sid_slot *slots;
    apr_size_t nslots;
    char *arena;                    /* the strings, each NUL-terminated */
    apr_size_t used, cap;
    apr_size_t *offs;               /* [id]: where string id lies in the arena */
    apr_size_t offcap;
    apr_uint32_t count, max_ids;
    apr_size_t max_bytes;
};

static apr_uint64_t sid_hash(const char *s, apr_size_t n)
{
    apr_uint64_t h = APR_UINT64_C(0xCBF29CE484222325);
    apr_size_t i;

    for (i = 0; i < n; i++) {
        h = (h ^ (unsigned char)s[i]) * APR_UINT64_C(0x100000001B3);
    }
    return h ^ (h >> 31);
}

static apr_status_t sid_free(void *data)
{
    qrt_strid_t *t = data;

    free(t->slots);
    free(t->arena);
    free(t->offs);
    t->slots = NULL;
    t->arena = NULL;
    t->offs = NULL;
    return APR_SUCCESS;
}

qrt_strid_t *qrt_strid_make(apr_pool_t *p, apr_uint32_t max_ids, apr_size_t max_bytes)
{
    qrt_strid_t *t = apr_pcalloc(p, sizeof(*t));

#if APR_HAS_THREADS
    if (apr_thread_mutex_create(&t->lock, APR_THREAD_MUTEX_DEFAULT, p) != APR_SUCCESS) {
        return NULL;
    }
#endif
    t->max_ids = max_ids;
    t->max_bytes = max_bytes;
    apr_pool_cleanup_register(p, t, sid_free, apr_pool_cleanup_null);
    return t;
}

/* Twice the slots (at least 64), the strings placed again: 0, or -1 without memory. */
static int sid_grow(qrt_strid_t *t)
{
    apr_size_t n = t->nslots ? t->nslots * 2 : 64, i, j;
    sid_slot *slots = calloc(n, sizeof(*slots));

    if (!slots) {
        return -1;
    }
    for (i = 0; i < t->nslots; i++) {
        if (t->slots[i].id) {
            for (j = (apr_size_t)t->slots[i].hash & (n - 1); slots[j].id; j = (j + 1) & (n - 1)) {
            }
            slots[j] = t->slots[i];
        }
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = n;
    return 0;
}

/* The number of s (n bytes), made when new: 0 when full or without memory. */
static apr_uint32_t sid_get(qrt_strid_t *t, const char *s, apr_size_t n)
{
    apr_uint64_t h = sid_hash(s, n);
    apr_size_t j;

    if (t->nslots) {
        for (j = (apr_size_t)h & (t->nslots - 1); t->slots[j].id; j = (j + 1) & (t->nslots - 1)) {
            const char *k = t->arena + t->slots[j].off;

            if (t->slots[j].hash == h && !strncmp(k, s, n) && k[n] == '\0') {
                return t->slots[j].id;
            }
        }
    }
    if (t->count >= t->max_ids || n + 1 > t->max_bytes - t->used
        || ((t->count + 1) * 2 > t->nslots && sid_grow(t) < 0)) {
        return 0;
    }
    if (n + 1 > t->cap - t->used) {
        apr_size_t cap = t->cap ? t->cap : 4096;
        char *more;

        while (n + 1 > cap - t->used) {
            cap *= 2;
        }
        if (cap > t->max_bytes) {
            cap = t->max_bytes;
        }
        if (!(more = realloc(t->arena, cap))) {
            return 0;
        }
        t->arena = more;
        t->cap = cap;
    }
    if (t->count + 2 > t->offcap) {
        apr_size_t cap = t->offcap ? t->offcap * 2 : 256;
        apr_size_t *more = realloc(t->offs, cap * sizeof(*more));

        if (!more) {
            return 0;
        }
        t->offs = more;
        t->offcap = cap;
    }
    for (j = (apr_size_t)h & (t->nslots - 1); t->slots[j].id; j = (j + 1) & (t->nslots - 1)) {
    }
    memcpy(t->arena + t->used, s, n);
    t->arena[t->used + n] = '\0';
    t->slots[j].hash = h;
    t->slots[j].off = t->used;
    t->slots[j].id = ++t->count;
    t->offs[t->count] = t->used;
    t->used += n + 1;
    return t->count;
}

void qrt_strid_get_many(qrt_strid_t *t, const char *const *s, apr_size_t n,
                        apr_uint32_t *ids)
{
    apr_size_t i;

#if APR_HAS_THREADS
    apr_thread_mutex_lock(t->lock);
#endif
    for (i = 0; i < n; i++) {
        ids[i] = sid_get(t, s[i], strlen(s[i]));
    }
#if APR_HAS_THREADS
    apr_thread_mutex_unlock(t->lock);
#endif
}

apr_uint32_t qrt_strid_count(qrt_strid_t *t)
{
    apr_uint32_t n;

#if APR_HAS_THREADS
    apr_thread_mutex_lock(t->lock);
#endif
    n = t->count;
#if APR_HAS_THREADS
    apr_thread_mutex_unlock(t->lock);
#endif
    return n;
}

const char *qrt_strid_str(qrt_strid_t *t, apr_uint32_t id, apr_pool_t *p)
{
    const char *s = NULL;

#if APR_HAS_THREADS
    apr_thread_mutex_lock(t->lock);
#endif
    if (id && id <= t->count) {
        s = apr_pstrdup(p, t->arena + t->offs[id]);
    }
#if APR_HAS_THREADS
    apr_thread_mutex_unlock(t->lock);
#endif
    return s;
}
