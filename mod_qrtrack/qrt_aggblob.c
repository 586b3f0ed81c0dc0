/* qrt_aggblob: the sealed form of the report aggregates (see qrt_aggblob.h). */
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>

#include "qrt_aggblob.h"

#define AB_NUM_MAX 13               /* characters of one 64-bit number */
#define AB_MORE_LO '0'
#define AB_LAST_LO 'P'

/* ---- the number codec ------------------------------------------------------------ */

char *qrt_aggblob_put(char *out, apr_uint64_t v)
{
    while (v >= 32) {
        *out++ = (char)(AB_MORE_LO + (v & 31));
        v >>= 5;
    }
    *out++ = (char)(AB_LAST_LO + v);
    return out;
}

int qrt_aggblob_get(const char **s, const char *end, apr_uint64_t *v)
{
    const char *c = *s;
    apr_uint64_t x = 0;
    int shift = 0;

    while (c < end && shift < 65) {
        unsigned char ch = (unsigned char)*c++;

        if (ch >= AB_MORE_LO && ch < AB_LAST_LO) {
            x |= (apr_uint64_t)(ch - AB_MORE_LO) << shift;
        }
        else if (ch >= AB_LAST_LO && ch < AB_LAST_LO + 32) {
            *v = x | (apr_uint64_t)(ch - AB_LAST_LO) << shift;
            *s = c;
            return 0;
        }
        else {
            return -1;
        }
        shift += 5;
    }
    return -1;
}

static apr_uint64_t zz(apr_int64_t v)
{
    return ((apr_uint64_t)v << 1) ^ (apr_uint64_t)(v >> 63);
}

static apr_int64_t unzz(apr_uint64_t v)
{
    return (apr_int64_t)(v >> 1) ^ -(apr_int64_t)(v & 1);
}

static int get_int(const char **s, const char *end, apr_int64_t *v)
{
    apr_uint64_t u;

    if (qrt_aggblob_get(s, end, &u) < 0) {
        return -1;
    }
    *v = unzz(u);
    return 0;
}

/* An index below lim. */
static int get_idx(const char **s, const char *end, int lim, int *v)
{
    apr_uint64_t u;

    if (qrt_aggblob_get(s, end, &u) < 0 || u >= (apr_uint64_t)lim) {
        return -1;
    }
    *v = (int)u;
    return 0;
}

/* ---- the builder -------------------------------------------------------------------- */

typedef struct {
    apr_int64_t t, p, n;
    int flags, ti, bi, ci, yi;
} ab_link;
typedef struct {
    apr_int64_t t, p, n;
    int kind, ref;
} ab_gap;
typedef struct {
    apr_int64_t t;
    int click, ti, bi, ci, yi;
} ab_visit;
typedef struct {
    apr_int64_t grp, scans, clicks, firsts;
    const char *val;
} ab_count;

struct qrt_aggblob_builder_t {
    apr_pool_t *p;
    apr_int64_t day_start;
    apr_hash_t *strs, *trks;
    apr_array_header_t *strlist;    /* const char * */
    apr_array_header_t *trklist;    /* apr_int64_t */
    apr_size_t strbytes;
    apr_array_header_t *links, *gaps, *visits, *counts;
};

qrt_aggblob_builder_t *qrt_aggblob_builder_make(apr_pool_t *p, apr_int64_t day_start)
{
    qrt_aggblob_builder_t *b = apr_pcalloc(p, sizeof(*b));

    b->p = p;
    b->day_start = day_start;
    b->strs = apr_hash_make(p);
    b->trks = apr_hash_make(p);
    b->strlist = apr_array_make(p, 64, sizeof(const char *));
    b->trklist = apr_array_make(p, 64, sizeof(apr_int64_t));
    b->links = apr_array_make(p, 256, sizeof(ab_link));
    b->gaps = apr_array_make(p, 256, sizeof(ab_gap));
    b->visits = apr_array_make(p, 256, sizeof(ab_visit));
    b->counts = apr_array_make(p, 256, sizeof(ab_count));
    return b;
}

static int ab_str(qrt_aggblob_builder_t *b, const char *s)
{
    void *v;

    if (!s) {
        s = "";
    }
    v = apr_hash_get(b->strs, s, APR_HASH_KEY_STRING);
    if (!v) {
        s = apr_pstrdup(b->p, s);
        APR_ARRAY_PUSH(b->strlist, const char *) = s;
        b->strbytes += strlen(s);
        v = (void *)(apr_uintptr_t)b->strlist->nelts;
        apr_hash_set(b->strs, s, APR_HASH_KEY_STRING, v);
    }
    return (int)(apr_uintptr_t)v - 1;
}

static int ab_trk(qrt_aggblob_builder_t *b, apr_int64_t id)
{
    void *v = apr_hash_get(b->trks, &id, sizeof(id));

    if (!v) {
        apr_int64_t *key = apr_pmemdup(b->p, &id, sizeof(id));

        APR_ARRAY_PUSH(b->trklist, apr_int64_t) = id;
        v = (void *)(apr_uintptr_t)b->trklist->nelts;
        apr_hash_set(b->trks, key, sizeof(*key), v);
    }
    return (int)(apr_uintptr_t)v - 1;
}

void qrt_aggblob_add_link(qrt_aggblob_builder_t *b, apr_int64_t t, apr_int64_t p, int flags,
                          apr_int64_t tracker, const char *browser, const char *country,
                          const char *city, apr_int64_t n)
{
    ab_link *l = apr_array_push(b->links);

    l->t = t;
    l->p = p;
    l->n = n;
    l->flags = flags;
    l->ti = ab_trk(b, tracker);
    l->bi = ab_str(b, browser);
    l->ci = ab_str(b, country);
    l->yi = ab_str(b, city);
}

void qrt_aggblob_add_gap(qrt_aggblob_builder_t *b, int kind, apr_int64_t t, apr_int64_t p,
                         apr_int64_t grp, const char *val, apr_int64_t n)
{
    ab_gap *g = apr_array_push(b->gaps);

    g->t = t;
    g->p = p;
    g->n = n;
    g->kind = kind;
    g->ref = kind == 1 ? ab_trk(b, grp) : ab_str(b, val);
}

void qrt_aggblob_add_visit(qrt_aggblob_builder_t *b, apr_int64_t t, int click,
                           apr_int64_t tracker, const char *browser, const char *country,
                           const char *city)
{
    ab_visit *v = apr_array_push(b->visits);

    v->t = t;
    v->click = click ? 1 : 0;
    v->ti = ab_trk(b, tracker);
    v->bi = ab_str(b, browser);
    v->ci = ab_str(b, country);
    v->yi = ab_str(b, city);
}

void qrt_aggblob_add_count(qrt_aggblob_builder_t *b, apr_int64_t grp, const char *val,
                           apr_int64_t scans, apr_int64_t clicks, apr_int64_t firsts)
{
    ab_count *c = apr_array_push(b->counts);

    c->grp = grp;
    c->val = apr_pstrdup(b->p, val ? val : "");
    c->scans = scans;
    c->clicks = clicks;
    c->firsts = firsts;
    b->strbytes += strlen(c->val);
}

static int link_cmp(const void *a, const void *b)
{
    const ab_link *x = a, *y = b;

    return x->t < y->t ? -1 : x->t > y->t;
}

static int gap_cmp(const void *a, const void *b)
{
    const ab_gap *x = a, *y = b;

    return x->t < y->t ? -1 : x->t > y->t;
}

static int visit_cmp(const void *a, const void *b)
{
    const ab_visit *x = a, *y = b;

    return x->t < y->t ? -1 : x->t > y->t;
}

static int count_cmp(const void *a, const void *b)
{
    const ab_count *x = a, *y = b;

    if (x->grp != y->grp) {
        return x->grp < y->grp ? -1 : 1;
    }
    return strcmp(x->val, y->val);
}

static char *put_str(char *o, const char *s)
{
    apr_size_t n = strlen(s);

    o = qrt_aggblob_put(o, n);
    memcpy(o, s, n);
    return o + n;
}

/* The format letter and the string and tracker tables. */
static char *ab_head(qrt_aggblob_builder_t *b, char fmt, apr_size_t entries, int fields,
                     char **start)
{
    apr_size_t cap = 8 + b->strbytes
                     + (b->strlist->nelts + b->trklist->nelts + 4) * AB_NUM_MAX
                     + entries * fields * AB_NUM_MAX;
    char *o = *start = apr_palloc(b->p, cap);
    apr_int64_t prev = 0;
    int i;

    *o++ = fmt;
    *o++ = '1';
    o = qrt_aggblob_put(o, b->strlist->nelts);
    for (i = 0; i < b->strlist->nelts; i++) {
        o = put_str(o, APR_ARRAY_IDX(b->strlist, i, const char *));
    }
    o = qrt_aggblob_put(o, b->trklist->nelts);
    for (i = 0; i < b->trklist->nelts; i++) {
        apr_int64_t id = APR_ARRAY_IDX(b->trklist, i, apr_int64_t);

        o = qrt_aggblob_put(o, zz(id - prev));
        prev = id;
    }
    return o;
}

const char *qrt_aggblob_links(qrt_aggblob_builder_t *b)
{
    char *start, *o = ab_head(b, 'L', b->links->nelts + b->gaps->nelts, 8, &start);
    apr_int64_t prev = b->day_start;
    int i;

    qsort(b->links->elts, b->links->nelts, sizeof(ab_link), link_cmp);
    qsort(b->gaps->elts, b->gaps->nelts, sizeof(ab_gap), gap_cmp);
    o = qrt_aggblob_put(o, b->links->nelts);
    for (i = 0; i < b->links->nelts; i++) {
        ab_link *l = &APR_ARRAY_IDX(b->links, i, ab_link);

        o = qrt_aggblob_put(o, zz(l->t - prev));
        o = qrt_aggblob_put(o, zz(l->t - l->p));
        o = qrt_aggblob_put(o, l->flags);
        o = qrt_aggblob_put(o, l->ti);
        o = qrt_aggblob_put(o, l->bi);
        o = qrt_aggblob_put(o, l->ci);
        o = qrt_aggblob_put(o, l->yi);
        o = qrt_aggblob_put(o, zz(l->n));
        prev = l->t;
    }
    prev = b->day_start;
    o = qrt_aggblob_put(o, b->gaps->nelts);
    for (i = 0; i < b->gaps->nelts; i++) {
        ab_gap *g = &APR_ARRAY_IDX(b->gaps, i, ab_gap);

        o = qrt_aggblob_put(o, g->kind);
        o = qrt_aggblob_put(o, zz(g->t - prev));
        o = qrt_aggblob_put(o, zz(g->t - g->p));
        o = qrt_aggblob_put(o, g->ref);
        o = qrt_aggblob_put(o, zz(g->n));
        prev = g->t;
    }
    *o = '\0';
    return start;
}

const char *qrt_aggblob_visits(qrt_aggblob_builder_t *b)
{
    char *start, *o = ab_head(b, 'V', b->visits->nelts, 7, &start);
    apr_int64_t prev = b->day_start;
    int i, nruns = 0, run;

    qsort(b->visits->elts, b->visits->nelts, sizeof(ab_visit), visit_cmp);
    /* Visits alike in everything are one entry with a count. */
    for (i = 0; i < b->visits->nelts; i = run) {
        ab_visit *v = &APR_ARRAY_IDX(b->visits, i, ab_visit);

        for (run = i + 1; run < b->visits->nelts
             && !memcmp(v, &APR_ARRAY_IDX(b->visits, run, ab_visit), sizeof(*v)); run++) {
        }
        nruns++;
    }
    o = qrt_aggblob_put(o, nruns);
    for (i = 0; i < b->visits->nelts; i = run) {
        ab_visit *v = &APR_ARRAY_IDX(b->visits, i, ab_visit);

        for (run = i + 1; run < b->visits->nelts
             && !memcmp(v, &APR_ARRAY_IDX(b->visits, run, ab_visit), sizeof(*v)); run++) {
        }
        o = qrt_aggblob_put(o, zz(v->t - prev));
        o = qrt_aggblob_put(o, v->click);
        o = qrt_aggblob_put(o, v->ti);
        o = qrt_aggblob_put(o, v->bi);
        o = qrt_aggblob_put(o, v->ci);
        o = qrt_aggblob_put(o, v->yi);
        o = qrt_aggblob_put(o, run - i);
        prev = v->t;
    }
    *o = '\0';
    return start;
}

const char *qrt_aggblob_counts(qrt_aggblob_builder_t *b)
{
    apr_size_t cap = 8 + b->strbytes + (b->counts->nelts + 1) * 5 * AB_NUM_MAX;
    char *start = apr_palloc(b->p, cap), *o = start;
    apr_int64_t prev = 0;
    int i;

    qsort(b->counts->elts, b->counts->nelts, sizeof(ab_count), count_cmp);
    *o++ = 'C';
    *o++ = '1';
    o = qrt_aggblob_put(o, b->counts->nelts);
    for (i = 0; i < b->counts->nelts; i++) {
        ab_count *c = &APR_ARRAY_IDX(b->counts, i, ab_count);

        o = qrt_aggblob_put(o, zz(c->grp - prev));
        o = put_str(o, c->val);
        o = qrt_aggblob_put(o, zz(c->scans));
        o = qrt_aggblob_put(o, zz(c->clicks));
        o = qrt_aggblob_put(o, zz(c->firsts));
        prev = c->grp;
    }
    *o = '\0';
    return start;
}

/* ---- reading --------------------------------------------------------------------- */

static int get_str(const char **s, const char *end, apr_pool_t *p, const char **out)
{
    apr_uint64_t n;

    if (qrt_aggblob_get(s, end, &n) < 0 || n > (apr_uint64_t)(end - *s)) {
        return -1;
    }
    *out = n ? apr_pstrmemdup(p, *s, (apr_size_t)n) : "";
    *s += n;
    return 0;
}

static int get_count(const char **s, const char *end, int *n)
{
    apr_uint64_t u;

    /* Every entry takes at least one character. */
    if (qrt_aggblob_get(s, end, &u) < 0 || u > (apr_uint64_t)(end - *s)) {
        return -1;
    }
    *n = (int)u;
    return 0;
}

apr_status_t qrt_aggblob_open(qrt_aggblob_t *r, apr_pool_t *p, const char *data,
                              apr_int64_t day_start)
{
    apr_int64_t prev = 0;
    int i;

    memset(r, 0, sizeof(*r));
    if (!data || (data[0] != 'L' && data[0] != 'V' && data[0] != 'C') || data[1] != '1') {
        return APR_EINVAL;
    }
    r->format = data[0];
    r->s = data + 2;
    r->end = data + strlen(data);
    r->day_start = r->t = day_start;
    if (r->format == 'C') {
        return get_count(&r->s, r->end, &r->left) < 0 ? APR_EINVAL : APR_SUCCESS;
    }
    if (get_count(&r->s, r->end, &r->nstr) < 0) {
        return APR_EINVAL;
    }
    r->str = apr_palloc(p, (r->nstr + 1) * sizeof(*r->str));
    for (i = 0; i < r->nstr; i++) {
        if (get_str(&r->s, r->end, p, &r->str[i]) < 0) {
            return APR_EINVAL;
        }
    }
    if (get_count(&r->s, r->end, &r->ntrk) < 0) {
        return APR_EINVAL;
    }
    r->trk = apr_palloc(p, (r->ntrk + 1) * sizeof(*r->trk));
    for (i = 0; i < r->ntrk; i++) {
        apr_int64_t d;

        if (get_int(&r->s, r->end, &d) < 0) {
            return APR_EINVAL;
        }
        r->trk[i] = prev += d;
    }
    return get_count(&r->s, r->end, &r->left) < 0 ? APR_EINVAL : APR_SUCCESS;
}

int qrt_aggblob_next_link(qrt_aggblob_t *r, qrt_aggblob_link_t *out)
{
    apr_int64_t dt, gap;
    apr_uint64_t flags;

    if (r->format != 'L' || r->section != 0) {
        return r->format == 'L' ? 0 : -1;
    }
    if (r->left == 0) {
        /* The gaps follow. */
        r->section = 1;
        r->t = r->day_start;
        return get_count(&r->s, r->end, &r->left) < 0 ? -1 : 0;
    }
    if (get_int(&r->s, r->end, &dt) < 0 || get_int(&r->s, r->end, &gap) < 0
        || qrt_aggblob_get(&r->s, r->end, &flags) < 0
        || get_idx(&r->s, r->end, r->ntrk, &out->ti) < 0
        || get_idx(&r->s, r->end, r->nstr, &out->bi) < 0
        || get_idx(&r->s, r->end, r->nstr, &out->ci) < 0
        || get_idx(&r->s, r->end, r->nstr, &out->yi) < 0
        || get_int(&r->s, r->end, &out->n) < 0) {
        return -1;
    }
    r->left--;
    out->t = r->t += dt;
    out->p = out->t - gap;
    out->flags = (int)flags;
    return 1;
}

int qrt_aggblob_next_gap(qrt_aggblob_t *r, qrt_aggblob_gap_t *out)
{
    apr_uint64_t kind;
    apr_int64_t dt, gap;
    int ref;

    while (r->format == 'L' && r->section == 0) {
        qrt_aggblob_link_t l;
        int rc = qrt_aggblob_next_link(r, &l);

        if (rc < 0) {
            return -1;
        }
    }
    if (r->format != 'L') {
        return -1;
    }
    if (r->left == 0) {
        return 0;
    }
    if (qrt_aggblob_get(&r->s, r->end, &kind) < 0 || get_int(&r->s, r->end, &dt) < 0
        || get_int(&r->s, r->end, &gap) < 0) {
        return -1;
    }
    if (get_idx(&r->s, r->end, kind == 1 ? r->ntrk : r->nstr, &ref) < 0
        || get_int(&r->s, r->end, &out->n) < 0) {
        return -1;
    }
    r->left--;
    out->kind = (int)kind;
    out->t = r->t += dt;
    out->p = out->t - gap;
    out->ti = kind == 1 ? ref : -1;
    out->si = kind == 1 ? -1 : ref;
    return 1;
}

int qrt_aggblob_next_visit(qrt_aggblob_t *r, qrt_aggblob_visit_t *out)
{
    apr_int64_t dt;
    apr_uint64_t click, n;

    if (r->format != 'V') {
        return -1;
    }
    if (r->left == 0) {
        return 0;
    }
    if (get_int(&r->s, r->end, &dt) < 0 || qrt_aggblob_get(&r->s, r->end, &click) < 0
        || get_idx(&r->s, r->end, r->ntrk, &out->ti) < 0
        || get_idx(&r->s, r->end, r->nstr, &out->bi) < 0
        || get_idx(&r->s, r->end, r->nstr, &out->ci) < 0
        || get_idx(&r->s, r->end, r->nstr, &out->yi) < 0
        || qrt_aggblob_get(&r->s, r->end, &n) < 0) {
        return -1;
    }
    r->left--;
    out->t = r->t += dt;
    out->click = click != 0;
    out->n = (apr_int64_t)n;
    return 1;
}

int qrt_aggblob_next_count(qrt_aggblob_t *r, apr_pool_t *p, qrt_aggblob_count_t *out)
{
    apr_int64_t d;

    if (r->format != 'C') {
        return -1;
    }
    if (r->left == 0) {
        return 0;
    }
    if (get_int(&r->s, r->end, &d) < 0 || get_str(&r->s, r->end, p, &out->val) < 0
        || get_int(&r->s, r->end, &out->scans) < 0
        || get_int(&r->s, r->end, &out->clicks) < 0
        || get_int(&r->s, r->end, &out->firsts) < 0) {
        return -1;
    }
    r->left--;
    out->grp = r->grp += d;
    return 1;
}
