/* qrt_kept: see qrt_kept.h. */
#include <string.h>

#include "qrt_kept.h"

#define KEPT_MAGIC UINT64_C(0x717274546B657074)
#define KEPT_WAYS 4

typedef struct {
    uint64_t seq;                   /* odd while written */
    uint64_t key;
    int64_t bucket, seal;           /* seal 0: empty */
    uint64_t stamp;                 /* the table's put count when it was put */
    int64_t val[4];
    uint64_t pad;
} kept_slot;                        /* 80 bytes */

struct qrt_kept_t {
    uint64_t magic;
    uint64_t mask;                  /* sets - 1 */
    uint64_t puts;
    uint64_t pad[5];
    kept_slot slot[];
};

static qrt_kept_t *kept_used;

void qrt_kept_use(qrt_kept_t *t)
{
    kept_used = t;
}

qrt_kept_t *qrt_kept_used(void)
{
    return kept_used;
}

static unsigned kept_sets(unsigned slots)
{
    unsigned sets = 1;

    while (sets * KEPT_WAYS < slots && sets < (1u << 28)) {
        sets <<= 1;
    }
    return sets;
}

size_t qrt_kept_size(unsigned slots)
{
    return sizeof(qrt_kept_t) + (size_t)kept_sets(slots) * KEPT_WAYS * sizeof(kept_slot);
}

qrt_kept_t *qrt_kept_attach(void *mem, size_t size, int fresh)
{
    qrt_kept_t *t = mem;
    size_t sets = 1;

    if (!mem || size < qrt_kept_size(KEPT_WAYS)) {
        return NULL;
    }
    while ((sets << 1) * KEPT_WAYS * sizeof(kept_slot) + sizeof(*t) <= size) {
        sets <<= 1;
    }
    if (fresh || t->magic != KEPT_MAGIC || t->mask != sets - 1) {
        memset(mem, 0, sizeof(*t) + sets * KEPT_WAYS * sizeof(kept_slot));
        t->mask = sets - 1;
        __atomic_store_n(&t->magic, KEPT_MAGIC, __ATOMIC_RELEASE);
    }
    return t;
}

/* A key's buckets in runs of KEPT_RUN: a run's buckets in consecutive sets, so that a
 * window of days of one list reads and writes a few pages, not a page a day. */
#define KEPT_RUN 64

/* The slot of (key, bucket) in way w: the table is laid out way after way, and a lookup
 * stops at the first empty way (slots are filled in way order and never emptied), so a
 * table with room reads one slot a bucket. */
static kept_slot *kept_slot_of(qrt_kept_t *t, uint64_t set, int w)
{
    return &t->slot[(uint64_t)w * (t->mask + 1) + set];
}

static uint64_t kept_set(qrt_kept_t *t, uint64_t key, int64_t bucket)
{
    uint64_t h = key + (uint64_t)(bucket >> 6) * UINT64_C(0x9E3779B97F4A7C15);

    /* (MurmurHash3's finalizer: every bit of both in the set's number) */
    h ^= h >> 33;
    h *= UINT64_C(0xFF51AFD7ED558CCD);
    h ^= h >> 33;
    h *= UINT64_C(0xC4CEB9FE1A85EC53);
    h ^= h >> 33;
    return ((h * KEPT_RUN) + (uint64_t)(bucket & (KEPT_RUN - 1))) & t->mask;
}

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

int qrt_kept_get(qrt_kept_t *t, uint64_t key, int64_t bucket, int64_t seal, int64_t val[4])
{
    uint64_t set;
    int w, i;

    if (!t || !seal) {
        return 0;
    }
    set = kept_set(t, key, bucket);
    for (w = 0; w < KEPT_WAYS; w++) {
        kept_slot *s = kept_slot_of(t, set, w);
        uint64_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
        int64_t v[4];
        int hit;

        if (seq & 1) {
            continue;
        }
        if (!LD(s->seal)) {
            break;                  /* (the ways after an empty one are empty) */
        }
        hit = LD(s->key) == key && LD(s->bucket) == bucket && LD(s->seal) == seal;
        for (i = 0; i < 4; i++) {
            v[i] = LD(s->val[i]);
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (hit && __atomic_load_n(&s->seq, __ATOMIC_RELAXED) == seq) {
            memcpy(val, v, sizeof(v));
            return 1;
        }
    }
    return 0;
}

void qrt_kept_put(qrt_kept_t *t, uint64_t key, int64_t bucket, int64_t seal,
                  const int64_t val[4])
{
    kept_slot *s = NULL, *empty = NULL, *old = NULL;
    uint64_t set, seq, oldest = UINT64_MAX;
    int w, i;

    if (!t || !seal) {
        return;
    }
    set = kept_set(t, key, bucket);
    /* the key's slot, else the first empty one, else the one put longest ago */
    for (w = 0; w < KEPT_WAYS && !s; w++) {
        kept_slot *x = kept_slot_of(t, set, w);

        if (!LD(x->seal)) {
            empty = x;
            break;
        }
        if (LD(x->key) == key && LD(x->bucket) == bucket) {
            s = x;
        }
        else if (LD(x->stamp) < oldest) {
            oldest = LD(x->stamp);
            old = x;
        }
    }
    if (!s) {
        s = empty ? empty : old;
    }
    seq = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
    if ((seq & 1) || !__atomic_compare_exchange_n(&s->seq, &seq, seq + 1, 0,
                                                  __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        return;                     /* (another writer has it) */
    }
    __atomic_thread_fence(__ATOMIC_RELEASE);
    ST(s->key, key);
    ST(s->bucket, bucket);
    ST(s->seal, seal);
    ST(s->stamp, __atomic_add_fetch(&t->puts, 1, __ATOMIC_RELAXED));
    for (i = 0; i < 4; i++) {
        ST(s->val[i], val[i]);
    }
    __atomic_store_n(&s->seq, seq + 2, __ATOMIC_RELEASE);
}
