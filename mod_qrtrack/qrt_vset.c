/* qrt_vset: an exact set of visitor ids (see qrt_vset.h). */
#include <stdlib.h>
#include <string.h>

#include "qrt_vset.h"

#define VSET_MIN 4096               /* slots of a new table (a power of two) */

/* Other strings: kept whole. */
typedef struct {
    apr_uint64_t key;               /* a hash of str */
    char *str;
    apr_size_t len;
} vset_str;

struct qrt_vset_t {
    apr_uint64_t *num;              /* ids as numbers, 0 for an empty slot */
    apr_size_t cap, used;
    int zero;                       /* the id 0000000000000000 is a member */
    vset_str *str;
    apr_size_t scap, sused;
    apr_size_t n, max;
};

qrt_vset_t *qrt_vset_make(apr_size_t max)
{
    qrt_vset_t *set = calloc(1, sizeof(*set));

    if (!set) {
        return NULL;
    }
    set->num = calloc(VSET_MIN, sizeof(*set->num));
    if (!set->num) {
        free(set);
        return NULL;
    }
    set->cap = VSET_MIN;
    set->max = max;
    return set;
}

static int vset_hex(const char *s, apr_size_t n, apr_uint64_t *v)
{
    apr_uint64_t x = 0;
    apr_size_t i;

    if (n != 16) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        char c = s[i];

        x <<= 4;
        if (c >= '0' && c <= '9') {
            x |= (apr_uint64_t)(c - '0');
        }
        else if (c >= 'a' && c <= 'f') {
            x |= (apr_uint64_t)(c - 'a' + 10);
        }
        else {
            return 0;           /* upper case too: "ABC" and "abc" stay distinct */
        }
    }
    *v = x;
    return 1;
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

/* The slot of v (nonzero): its own, or the empty one where it would go. */
static apr_uint64_t *vset_num_slot(apr_uint64_t *num, apr_size_t cap, apr_uint64_t v)
{
    apr_size_t i = (apr_size_t)vset_mix(v) & (cap - 1);

    while (num[i] && num[i] != v) {
        i = (i + 1) & (cap - 1);
    }
    return &num[i];
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

static int vset_add_num(qrt_vset_t *set, apr_uint64_t v)
{
    apr_uint64_t *x;

    if (v == 0) {
        if (set->zero) {
            return 0;
        }
        if (set->n >= set->max) {
            return -1;
        }
        set->zero = 1;
        set->n++;
        return 1;
    }
    x = vset_num_slot(set->num, set->cap, v);
    if (*x) {
        return 0;
    }
    if (set->n >= set->max) {
        return -1;
    }
    if ((set->used + 1) * 2 > set->cap) {
        apr_size_t cap = set->cap * 2, i;
        apr_uint64_t *num = calloc(cap, sizeof(*num));

        if (!num) {
            return -1;
        }
        for (i = 0; i < set->cap; i++) {
            if (set->num[i]) {
                *vset_num_slot(num, cap, set->num[i]) = set->num[i];
            }
        }
        free(set->num);
        set->num = num;
        set->cap = cap;
        x = vset_num_slot(num, cap, v);
    }
    *x = v;
    set->used++;
    set->n++;
    return 1;
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
    if (set->n >= set->max) {
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
    set->n++;
    return 1;
}

int qrt_vset_add(qrt_vset_t *set, const char *s, apr_size_t n)
{
    apr_uint64_t v;

    return vset_hex(s, n, &v) ? vset_add_num(set, v) : vset_add_str(set, s, n);
}

apr_size_t qrt_vset_count(const qrt_vset_t *set)
{
    return set->n;
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
