/* qrt_tries: wrong password tries per address and tracker, a fixed-size table of slots
 * searched in a bounded neighbourhood, each holding a ring of its latest tries. */
#include <string.h>
#include <apr_general.h>
#include "qrt_tries.h"

/* Slots searched for a key, from its hash on. */
#define TRIES_PROBE 32

typedef struct {
    apr_int64_t tracker;
    apr_int64_t at[QRT_TRIES_MAX_LIMIT];   /* times of the latest tries, a ring */
    apr_uint32_t next;                      /* ring index of the next try */
    apr_uint32_t n;                         /* tries held, 0 = free */
    char addr[QRT_TRIES_ADDR];
} tries_slot_t;

struct qrt_tries {
    apr_uint32_t nslots;
    apr_uint32_t probe;
    apr_uint32_t limit;         /* of the latest qrt_tries_blocked: what "blocked" means */
    apr_uint32_t pad;
    apr_uint64_t seed;
    apr_uint64_t dropped;
    tries_slot_t slots[];
};

apr_size_t qrt_tries_size(apr_uint32_t slots)
{
    return sizeof(qrt_tries_t) + (apr_size_t)(slots ? slots : 1) * sizeof(tries_slot_t);
}

void qrt_tries_init(qrt_tries_t *t, apr_uint32_t slots)
{
    slots = slots ? slots : 1;
    memset(t, 0, qrt_tries_size(slots));
    t->nslots = slots;
    t->probe = slots < TRIES_PROBE ? slots : TRIES_PROBE;
    t->limit = QRT_TRIES_MAX_LIMIT;
    if (apr_generate_random_bytes((unsigned char *)&t->seed, sizeof(t->seed))
        != APR_SUCCESS) {
        t->seed = APR_UINT64_C(0x9e3779b97f4a7c15);
    }
}

/* FNV-1a from the seed over the address and the tracker, then a 64-bit finaliser. */
static apr_uint32_t tries_hash(const qrt_tries_t *t, const char *addr, apr_int64_t tracker)
{
    apr_uint64_t h = t->seed ^ APR_UINT64_C(0xcbf29ce484222325);
    apr_uint64_t v = (apr_uint64_t)tracker;
    apr_size_t i;
    int k;

    for (i = 0; i < QRT_TRIES_ADDR - 1 && addr[i]; i++) {
        h = (h ^ (unsigned char)addr[i]) * APR_UINT64_C(0x100000001b3);
    }
    for (k = 0; k < 8; k++, v >>= 8) {
        h = (h ^ (v & 0xff)) * APR_UINT64_C(0x100000001b3);
    }
    h ^= h >> 33;
    h *= APR_UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    return (apr_uint32_t)(h % t->nslots);
}

static int tries_within(apr_int64_t at, apr_int64_t now, int window)
{
    apr_int64_t d = now - at;

    return d < window && d > -(apr_int64_t)window;
}

/* The k-th latest try (k = 1 the latest; k <= s->n). */
static apr_int64_t tries_at(const tries_slot_t *s, apr_uint32_t k)
{
    return s->at[(s->next + QRT_TRIES_MAX_LIMIT - k) % QRT_TRIES_MAX_LIMIT];
}

/* Tries of s within the window, counted from the latest back. */
static apr_uint32_t tries_live(const tries_slot_t *s, apr_int64_t now, int window)
{
    apr_uint32_t k;

    for (k = 0; k < s->n && tries_within(tries_at(s, k + 1), now, window); k++) {
    }
    return k;
}

static int tries_key_is(const tries_slot_t *s, const char *addr, apr_int64_t tracker)
{
    return s->n && s->tracker == tracker && strncmp(s->addr, addr, QRT_TRIES_ADDR - 1) == 0;
}

static tries_slot_t *tries_find(qrt_tries_t *t, const char *addr, apr_int64_t tracker)
{
    apr_uint32_t i, h = tries_hash(t, addr, tracker);

    for (i = 0; i < t->probe; i++) {
        tries_slot_t *s = &t->slots[(h + i) % t->nslots];

        if (tries_key_is(s, addr, tracker)) {
            return s;
        }
    }
    return NULL;
}

static int tries_clamp(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

int qrt_tries_blocked(qrt_tries_t *t, const char *addr, apr_int64_t tracker, apr_int64_t now,
                      int limit, int window)
{
    tries_slot_t *s;

    limit = tries_clamp(limit, 1, QRT_TRIES_MAX_LIMIT);
    window = window < 1 ? 1 : window;
    t->limit = (apr_uint32_t)limit;
    s = tries_find(t, addr ? addr : "", tracker);
    return s && s->n >= (apr_uint32_t)limit && tries_within(tries_at(s, limit), now, window);
}

/* The slot a new key takes near h, or NULL when every entry there is blocked. */
static tries_slot_t *tries_victim(qrt_tries_t *t, apr_uint32_t h, apr_int64_t now,
                                  int window)
{
    tries_slot_t *best = NULL;
    apr_uint32_t i, best_live = 0;

    for (i = 0; i < t->probe; i++) {
        tries_slot_t *s = &t->slots[(h + i) % t->nslots];
        apr_uint32_t live = s->n ? tries_live(s, now, window) : 0;

        if (live == 0) {
            return s;
        }
        if (!best || live < best_live
            || (live == best_live && tries_at(s, 1) < tries_at(best, 1))) {
            best = s;
            best_live = live;
        }
    }
    return best_live < t->limit ? best : NULL;
}

void qrt_tries_fail(qrt_tries_t *t, const char *addr, apr_int64_t tracker, apr_int64_t now,
                    int window)
{
    tries_slot_t *s;

    addr = addr ? addr : "";
    window = window < 1 ? 1 : window;
    s = tries_find(t, addr, tracker);
    if (!s) {
        s = tries_victim(t, tries_hash(t, addr, tracker), now, window);
        if (!s) {
            t->dropped++;
            return;
        }
        memset(s, 0, sizeof(*s));
        s->tracker = tracker;
        strncpy(s->addr, addr, QRT_TRIES_ADDR - 1);
    }
    else if (tries_live(s, now, window) == 0) {
        s->n = 0;               /* its earlier tries have all left the window */
    }
    s->at[s->next] = now;
    s->next = (s->next + 1) % QRT_TRIES_MAX_LIMIT;
    if (s->n < QRT_TRIES_MAX_LIMIT) {
        s->n++;
    }
}

int qrt_tries_begin(qrt_tries_t *t, const char *addr, apr_int64_t tracker, apr_int64_t now,
                    int limit, int window)
{
    if (qrt_tries_blocked(t, addr, tracker, now, limit, window)) {
        return 1;
    }
    qrt_tries_fail(t, addr, tracker, now, window);
    return 0;
}

void qrt_tries_forgive(qrt_tries_t *t, const char *addr, apr_int64_t tracker,
                       apr_int64_t at)
{
    tries_slot_t *s = tries_find(t, addr ? addr : "", tracker);
    apr_uint32_t k, j;

    if (!s) {
        return;
    }
    for (k = 1; k <= s->n && tries_at(s, k) != at; k++) {
    }
    if (k > s->n) {
        return;
    }
    /* the k-1 later tries move one place back in the ring over the k-th */
    for (j = k; j > 1; j--) {
        s->at[(s->next + QRT_TRIES_MAX_LIMIT - j) % QRT_TRIES_MAX_LIMIT] =
            s->at[(s->next + QRT_TRIES_MAX_LIMIT - j + 1) % QRT_TRIES_MAX_LIMIT];
    }
    s->next = (s->next + QRT_TRIES_MAX_LIMIT - 1) % QRT_TRIES_MAX_LIMIT;
    s->n--;
}

apr_uint32_t qrt_tries_active(const qrt_tries_t *t, apr_int64_t now, int window)
{
    apr_uint32_t i, n = 0;

    window = window < 1 ? 1 : window;
    for (i = 0; i < t->nslots; i++) {
        n += t->slots[i].n && tries_within(tries_at(&t->slots[i], 1), now, window);
    }
    return n;
}

apr_uint64_t qrt_tries_dropped(const qrt_tries_t *t)
{
    return t->dropped;
}
