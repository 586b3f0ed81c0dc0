/* qrt_agg: bucket arithmetic, window splitting, visitor chains, distinct counts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>
#include "qrt_agg.h"

/* Days per bucket, by level. */
static const apr_int64_t agg_size[QRT_AGG_LEVELS + 1] = { 1, 1, 16, 256 };

apr_int64_t qrt_agg_fdiv(apr_int64_t a, apr_int64_t b)
{
    apr_int64_t q = a / b;

    return (a % b != 0 && a < 0) ? q - 1 : q;
}

static apr_int64_t agg_cdiv(apr_int64_t a, apr_int64_t b)
{
    return -qrt_agg_fdiv(-a, b);
}

apr_int64_t qrt_agg_bucket(int lvl, apr_int64_t day)
{
    if (lvl < 1 || lvl > QRT_AGG_LEVELS) {
        lvl = 1;
    }
    return qrt_agg_fdiv(day, agg_size[lvl]);
}

static void agg_range(qrt_agg_range_t *r, int lvl, apr_int64_t b0, apr_int64_t b1)
{
    r->lvl = lvl;
    r->b0 = b0;
    r->b1 = b1;
}

int qrt_agg_split_days(apr_int64_t d0, apr_int64_t d1, qrt_agg_range_t out[5])
{
    apr_int64_t a16, z16, a256, z256;
    int n = 0;

    if (d0 >= d1) {
        return 0;
    }
    a16 = agg_cdiv(d0, 16) * 16;
    z16 = qrt_agg_fdiv(d1, 16) * 16;
    if (a16 >= z16) {
        agg_range(&out[n++], 1, d0, d1 - 1);
        return n;
    }
    if (d0 < a16) {
        agg_range(&out[n++], 1, d0, a16 - 1);
    }
    a256 = agg_cdiv(d0, 256) * 256;
    z256 = qrt_agg_fdiv(d1, 256) * 256;
    if (a256 >= z256) {
        agg_range(&out[n++], 2, a16 / 16, z16 / 16 - 1);
    }
    else {
        if (a16 < a256) {
            agg_range(&out[n++], 2, a16 / 16, a256 / 16 - 1);
        }
        agg_range(&out[n++], 3, a256 / 256, z256 / 256 - 1);
        if (z256 < z16) {
            agg_range(&out[n++], 2, z256 / 16, z16 / 16 - 1);
        }
    }
    if (z16 < d1) {
        agg_range(&out[n++], 1, z16, d1 - 1);
    }
    return n;
}

void qrt_agg_window_split(apr_int64_t s, apr_int64_t e, qrt_agg_window_t *w)
{
    memset(w, 0, sizeof(*w));
    if (s > e) {
        return;
    }
    w->d0 = agg_cdiv(s, QRT_AGG_DAY);
    w->d1 = qrt_agg_fdiv(e + 1, QRT_AGG_DAY);
    if (w->d0 >= w->d1) {
        w->d0 = w->d1 = 0;
        w->part[0][0] = s;
        w->part[0][1] = e;
        w->nparts = 1;
        return;
    }
    if (s < w->d0 * QRT_AGG_DAY) {
        w->part[w->nparts][0] = s;
        w->part[w->nparts][1] = w->d0 * QRT_AGG_DAY - 1;
        w->nparts++;
    }
    if (w->d1 * QRT_AGG_DAY <= e) {
        w->part[w->nparts][0] = w->d1 * QRT_AGG_DAY;
        w->part[w->nparts][1] = e;
        w->nparts++;
    }
}

int qrt_agg_subset(const char *const *a, int na, const char *const *b, int nb)
{
    int i = 0, j = 0;

    while (i < na) {
        int c;

        if (j >= nb) {
            return 0;
        }
        c = strcmp(a[i], b[j]);
        if (c == 0) {
            i++;
            j++;
        }
        else if (c > 0) {
            j++;
        }
        else {
            return 0;
        }
    }
    return 1;
}

/* The last index stored under key, -1 if none; then stores i. */
static int agg_last(apr_hash_t *h, const void *key, apr_ssize_t klen, int i)
{
    void *v = apr_hash_get(h, key, klen);

    apr_hash_set(h, key, klen, (void *)(apr_uintptr_t)(i + 1));
    return v ? (int)(apr_uintptr_t)v - 1 : -1;
}

/* Small histories (most visitors): look back linearly. */
static void agg_chain_small(apr_pool_t *p, const qrt_agg_visit_t *v, int n,
                            qrt_agg_prev_t *out)
{
    int i, j, k;

    for (i = 0; i < n; i++) {
        qrt_agg_prev_t *o = &out[i];

        o->a = i - 1;
        o->tr = o->br = o->co = o->ci = -1;
        for (j = i - 1; j >= 0; j--) {
            if (o->tr < 0 && v[j].tracker == v[i].tracker) {
                o->tr = j;
            }
            if (o->br < 0 && !strcmp(v[j].browser, v[i].browser)) {
                o->br = j;
            }
            if (o->co < 0 && !strcmp(v[j].country, v[i].country)) {
                o->co = j;
            }
            if (o->ci < 0 && !strcmp(v[j].city, v[i].city)) {
                o->ci = j;
            }
        }
        o->tag = apr_palloc(p, (v[i].ntags > 0 ? v[i].ntags : 1) * sizeof(int));
        for (k = 0; k < v[i].ntags; k++) {
            o->tag[k] = -1;
            for (j = i - 1; j >= 0 && o->tag[k] < 0; j--) {
                if (qrt_agg_subset(&v[i].tags[k], 1, v[j].tags, v[j].ntags)) {
                    o->tag[k] = j;
                }
            }
        }
        o->fg = i > 0 && qrt_agg_subset(v[i].tags, v[i].ntags, v[i - 1].tags,
                                        v[i - 1].ntags);
    }
}

void qrt_agg_chain(apr_pool_t *p, const qrt_agg_visit_t *v, int n, qrt_agg_prev_t *out)
{
    apr_hash_t *tr, *br, *co, *ci, *tg;
    int i, j;

    if (n <= 32) {
        agg_chain_small(p, v, n, out);
        return;
    }
    tr = apr_hash_make(p);
    br = apr_hash_make(p);
    co = apr_hash_make(p);
    ci = apr_hash_make(p);
    tg = apr_hash_make(p);
    for (i = 0; i < n; i++) {
        qrt_agg_prev_t *o = &out[i];

        o->a = i - 1;
        o->tr = agg_last(tr, &v[i].tracker, sizeof(apr_int64_t), i);
        o->br = agg_last(br, v[i].browser, APR_HASH_KEY_STRING, i);
        o->co = agg_last(co, v[i].country, APR_HASH_KEY_STRING, i);
        o->ci = agg_last(ci, v[i].city, APR_HASH_KEY_STRING, i);
        o->tag = apr_palloc(p, (v[i].ntags > 0 ? v[i].ntags : 1) * sizeof(int));
        for (j = 0; j < v[i].ntags; j++) {
            o->tag[j] = agg_last(tg, v[i].tags[j], APR_HASH_KEY_STRING, i);
        }
        o->fg = i > 0 && qrt_agg_subset(v[i].tags, v[i].ntags, v[i - 1].tags,
                                        v[i - 1].ntags);
    }
}


/* ---- sets of visitors ----------------------------------------------------------- */

struct qrt_agg_vset {
    apr_pool_t *p;
    apr_uint64_t *slot;         /* the numbers, 0 marking a free slot */
    apr_size_t cap, used;       /* slots (a power of two, or 0), numbers in them */
    int zero;                   /* the number 0 is in the set */
    apr_hash_t *str;            /* the other strings (NULL until one comes) */
};

static apr_status_t vset_free(void *data)
{
    qrt_agg_vset_t *s = data;

    free(s->slot);
    s->slot = NULL;
    s->cap = s->used = 0;
    return APR_SUCCESS;
}

qrt_agg_vset_t *qrt_agg_vset_make(apr_pool_t *p)
{
    qrt_agg_vset_t *s = apr_pcalloc(p, sizeof(*s));

    s->p = p;
    apr_pool_cleanup_register(p, s, vset_free, apr_pool_cleanup_null);
    return s;
}

/* 1 and *out when v is a whole number in its shortest decimal form ("0", "-12", not
 * "012", "-0", "+1" or past 64 bits): the one string of that number, so that numbers
 * and strings stay one-to-one. */
static int vset_number(const char *v, apr_int64_t *out)
{
    const char *d = v + (*v == '-');
    const char *x;
    char *end;
    long long n;

    if (*d < '0' || *d > '9' || (*d == '0' && (d[1] || d != v))) {
        return 0;
    }
    for (x = d; *x; x++) {
        if (*x < '0' || *x > '9' || x - d >= 19) {
            return 0;
        }
    }
    errno = 0;
    n = strtoll(v, &end, 10);
    if (errno || *end) {
        return 0;
    }
    *out = (apr_int64_t)n;
    return 1;
}

static apr_size_t vset_home(apr_uint64_t k, apr_size_t cap)
{
    k ^= k >> 33;
    k *= APR_UINT64_C(0xff51afd7ed558ccd);
    k ^= k >> 33;
    return (apr_size_t)k & (cap - 1);
}

/* 1 when k (not 0) was put in the table, 0 when it was there. */
static int vset_put(apr_uint64_t *slot, apr_size_t cap, apr_uint64_t k)
{
    apr_size_t i = vset_home(k, cap);

    while (slot[i]) {
        if (slot[i] == k) {
            return 0;
        }
        i = (i + 1) & (cap - 1);
    }
    slot[i] = k;
    return 1;
}

static int vset_grow(qrt_agg_vset_t *s)
{
    apr_size_t cap = s->cap ? s->cap * 2 : 16, i;
    apr_uint64_t *slot = calloc(cap, sizeof(*slot));

    if (!slot) {
        return -1;
    }
    for (i = 0; i < s->cap; i++) {
        if (s->slot[i]) {
            vset_put(slot, cap, s->slot[i]);
        }
    }
    free(s->slot);
    s->slot = slot;
    s->cap = cap;
    return 0;
}

static int vset_add_number(qrt_agg_vset_t *s, apr_uint64_t k)
{
    int added;

    if (k == 0) {
        added = !s->zero;
        s->zero = 1;
        return added;
    }
    /* at most half full */
    if ((s->used + 1) * 2 > s->cap && vset_grow(s) != 0) {
        return -1;
    }
    added = vset_put(s->slot, s->cap, k);
    s->used += added;
    return added;
}

static int vset_add_string(qrt_agg_vset_t *s, const char *v)
{
    if (!s->str) {
        s->str = apr_hash_make(s->p);
    }
    if (apr_hash_get(s->str, v, APR_HASH_KEY_STRING)) {
        return 0;
    }
    apr_hash_set(s->str, apr_pstrdup(s->p, v), APR_HASH_KEY_STRING, s);
    return 1;
}

int qrt_agg_vset_add(qrt_agg_vset_t *s, const char *visitor)
{
    apr_int64_t n;

    return vset_number(visitor, &n) ? vset_add_number(s, (apr_uint64_t)n)
                                    : vset_add_string(s, visitor);
}

apr_size_t qrt_agg_vset_count(const qrt_agg_vset_t *s)
{
    return s->used + (apr_size_t)s->zero + (s->str ? apr_hash_count(s->str) : 0);
}

apr_int64_t qrt_agg_vset_union(qrt_agg_vset_t *into, const qrt_agg_vset_t *from)
{
    apr_hash_index_t *hi;
    apr_int64_t added = 0;
    apr_size_t i;
    int r;

    if (from->zero) {
        added += vset_add_number(into, 0);
    }
    for (i = 0; i < from->cap; i++) {
        if (from->slot[i]) {
            if ((r = vset_add_number(into, from->slot[i])) < 0) {
                return -1;
            }
            added += r;
        }
    }
    for (hi = from->str ? apr_hash_first(from->p, from->str) : NULL; hi;
         hi = apr_hash_next(hi)) {
        const void *v;

        apr_hash_this(hi, &v, NULL, NULL);
        added += vset_add_string(into, v);
    }
    return added;
}

qrt_agg_groups_t *qrt_agg_groups_make(apr_pool_t *p)
{
    qrt_agg_groups_t *g = apr_pcalloc(p, sizeof(*g));

    g->p = p;
    g->groups = apr_hash_make(p);
    return g;
}

qrt_agg_group_t *qrt_agg_groups_get(qrt_agg_groups_t *g, const char *key)
{
    return apr_hash_get(g->groups, key, APR_HASH_KEY_STRING);
}

static qrt_agg_group_t *agg_group(qrt_agg_groups_t *g, const char *key)
{
    qrt_agg_group_t *grp = apr_hash_get(g->groups, key, APR_HASH_KEY_STRING);

    if (!grp) {
        grp = apr_pcalloc(g->p, sizeof(*grp));
        grp->key = apr_pstrdup(g->p, key);
        grp->seen = qrt_agg_vset_make(g->p);
        apr_hash_set(g->groups, grp->key, APR_HASH_KEY_STRING, grp);
    }
    return grp;
}

void qrt_agg_groups_set(qrt_agg_groups_t *g, const char *key, apr_int64_t scans,
                        apr_int64_t clicks, apr_int64_t uniques)
{
    qrt_agg_group_t *grp = agg_group(g, key);

    grp->scans = scans;
    grp->clicks = clicks;
    grp->uniques = uniques;
}

void qrt_agg_groups_add(qrt_agg_groups_t *g, const char *key, int click,
                        const char *visitor)
{
    qrt_agg_group_t *grp = agg_group(g, key);

    if (click) {
        grp->clicks++;
    }
    else {
        grp->scans++;
    }
    switch (qrt_agg_vset_add(grp->seen, visitor)) {
    case 1:
        grp->uniques++;
        break;
    case -1:
        g->nomem = 1;
        break;
    }
}

int qrt_agg_group_merge(qrt_agg_group_t *into, const qrt_agg_group_t *x)
{
    apr_int64_t added = qrt_agg_vset_union(into->seen, x->seen);

    into->scans += x->scans;
    into->clicks += x->clicks;
    into->uniques += added > 0 ? added : 0;
    return added < 0 ? -1 : 0;
}

int qrt_agg_change(apr_int64_t value, apr_int64_t previous, double *out)
{
    apr_int64_t num, den, tenths;

    if (previous == 0) {
        return 0;
    }
    num = (value - previous) * 1000;
    den = previous;
    if (den < 0) {
        num = -num;
        den = -den;
    }
    tenths = num >= 0 ? (2 * num + den) / (2 * den) : -((-2 * num + den) / (2 * den));
    *out = (double)tenths / 10.0;
    return 1;
}
