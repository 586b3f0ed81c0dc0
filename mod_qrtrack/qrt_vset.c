/* qrt_vset: an exact set of visitor ids (see qrt_vset.h). */
#include <stdlib.h>
#include <string.h>

#include "qrt_vset.h"

#define VSET_MIN 4096               /* ids of a new array */

/* Other strings: kept whole. */
typedef struct {
    apr_uint64_t key;               /* a hash of str */
    char *str;
    apr_size_t len;
} vset_str;

struct qrt_vset_t {
    apr_uint64_t *num;              /* ids as numbers, as added (repeats included) */
    apr_size_t cap, used;
    int settled;                    /* num[0 .. n_num) holds the distinct ids */
    apr_size_t n_num;
    vset_str *str;
    apr_size_t scap, sused;
    apr_size_t max;
};

qrt_vset_t *qrt_vset_make(apr_size_t max)
{
    qrt_vset_t *set = calloc(1, sizeof(*set));

    if (!set) {
        return NULL;
    }
    set->num = malloc(VSET_MIN * sizeof(*set->num));
    if (!set->num) {
        free(set);
        return NULL;
    }
    set->cap = VSET_MIN;
    set->max = max;
    return set;
}

/* Hex digit values, 16 for anything else (upper case too: "ABC" and "abc" stay
 * distinct strings). */
static const unsigned char vset_digit[256] = {
#define X16 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16
    X16, X16, X16,
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 16, 16, 16, 16, 16,
    X16, X16,
    16, 10, 11, 12, 13, 14, 15, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    X16, X16, X16, X16, X16, X16, X16, X16, X16
#undef X16
};

static int vset_hex(const char *s, apr_size_t n, apr_uint64_t *v)
{
    const unsigned char *u = (const unsigned char *)s;
    apr_uint64_t x = 0;
    unsigned bad = 0;
    apr_size_t i;

    if (n != 16) {
        return 0;
    }
    for (i = 0; i < 16; i++) {
        unsigned d = vset_digit[u[i]];

        bad |= d;
        x = (x << 4) | (d & 15);
    }
    *v = x;
    return !(bad & 16);
}

static apr_uint64_t vset_mix(apr_uint64_t x)
{
    x ^= x >> 33;
    x *= APR_UINT64_C(0xff51afd7ed558ccd);
    return x ^ (x >> 29);
}

static apr_uint64_t vset_hash(const char *s, apr_size_t n)
{
    apr_uint64_t h = APR_UINT64_C(0xcbf29ce484222325);
    apr_size_t i;

    for (i = 0; i < n; i++) {
        h = (h ^ (unsigned char)s[i]) * APR_UINT64_C(0x100000001b3);
    }
    return h;
}

static vset_str *vset_str_slot(vset_str *slot, apr_size_t cap, apr_uint64_t key,
                               const char *s, apr_size_t n)
{
    apr_size_t i = (apr_size_t)vset_mix(key) & (cap - 1);

    while (slot[i].str && !(slot[i].key == key && slot[i].len == n
                            && !memcmp(slot[i].str, s, n))) {
        i = (i + 1) & (cap - 1);
    }
    return &slot[i];
}

/* Keeps each id added once, in any order: one pass through an open-addressing table of
 * at least twice as many slots as ids (0, which cannot sit in a slot, apart). 0 or -1
 * without memory. */
static int vset_settle(qrt_vset_t *set)
{
    apr_uint64_t *a = set->num, *slot;
    apr_size_t n = set->used, cap = 64, i, k = 0;
    int zero = 0;

    if (set->settled) {
        return 0;
    }
    while (cap < 2 * n) {
        cap *= 2;
    }
    slot = calloc(cap, sizeof(*slot));
    if (!slot) {
        return -1;
    }
    for (i = 0; i < n; i++) {
        apr_uint64_t v = a[i];
        apr_size_t j = (apr_size_t)vset_mix(v) & (cap - 1);

        if (!v) {
            zero = 1;
            continue;
        }
        while (slot[j] && slot[j] != v) {
            j = (j + 1) & (cap - 1);
        }
        if (!slot[j]) {
            slot[j] = v;
            a[k++] = v;
        }
    }
    free(slot);
    if (zero) {
        a[k++] = 0;
    }
    set->used = set->n_num = k;
    set->settled = 1;
    return 0;
}

static int vset_add_num(qrt_vset_t *set, apr_uint64_t v)
{
    if (set->used == set->cap) {
        if (set->cap < set->max) {
            /* Room to grow: making them distinct waits for the count. */
            apr_uint64_t *num = realloc(set->num, set->cap * 2 * sizeof(*num));

            if (!num) {
                return -1;
            }
            set->num = num;
            set->cap *= 2;
        }
        else if (vset_settle(set) < 0 || set->used * 2 > set->cap) {
            /* At the bound, half of it distinct ids: a pass again at every few adds
             * would cost more than the database's count. */
            return -1;
        }
    }
    set->num[set->used++] = v;
    set->settled = 0;
    return 0;
}

static int vset_add_str(qrt_vset_t *set, const char *s, apr_size_t n)
{
    apr_uint64_t key = vset_hash(s, n);
    vset_str *x;

    if (!set->str) {
        set->str = calloc(64, sizeof(*set->str));
        if (!set->str) {
            return -1;
        }
        set->scap = 64;
    }
    x = vset_str_slot(set->str, set->scap, key, s, n);
    if (x->str) {
        return 0;
    }
    if (set->sused >= set->max) {
        return -1;
    }
    if ((set->sused + 1) * 2 > set->scap) {
        apr_size_t cap = set->scap * 2, i;
        vset_str *slot = calloc(cap, sizeof(*slot));

        if (!slot) {
            return -1;
        }
        for (i = 0; i < set->scap; i++) {
            if (set->str[i].str) {
                *vset_str_slot(slot, cap, set->str[i].key, set->str[i].str,
                               set->str[i].len) = set->str[i];
            }
        }
        free(set->str);
        set->str = slot;
        set->scap = cap;
        x = vset_str_slot(slot, cap, key, s, n);
    }
    x->str = malloc(n + 1);
    if (!x->str) {
        return -1;
    }
    memcpy(x->str, s, n);
    x->str[n] = '\0';
    x->len = n;
    x->key = key;
    set->sused++;
    return 0;
}

int qrt_vset_add(qrt_vset_t *set, const char *s, apr_size_t n)
{
    apr_uint64_t v;

    return vset_hex(s, n, &v) ? vset_add_num(set, v) : vset_add_str(set, s, n);
}

int qrt_vset_add_id(qrt_vset_t *set, apr_int64_t id)
{
    return vset_add_num(set, (apr_uint64_t)id);
}

apr_ssize_t qrt_vset_count(qrt_vset_t *set)
{
    if (vset_settle(set) < 0) {
        return -1;
    }
    return (apr_ssize_t)(set->n_num + set->sused);
}

void qrt_vset_free(qrt_vset_t *set)
{
    apr_size_t i;

    if (!set) {
        return;
    }
    for (i = 0; i < set->scap; i++) {
        free(set->str[i].str);
    }
    free(set->str);
    free(set->num);
    free(set);
}
