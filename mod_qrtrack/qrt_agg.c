/* qrt_agg: bucket arithmetic, window splitting, visitor chains, distinct counts. */
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
        grp->seen = apr_hash_make(g->p);
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
    if (!apr_hash_get(grp->seen, visitor, APR_HASH_KEY_STRING)) {
        apr_hash_set(grp->seen, apr_pstrdup(g->p, visitor), APR_HASH_KEY_STRING, grp);
        grp->uniques++;
    }
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
