/* qrt_vcols: a tracker's visits of a day as columns (see qrt_vcols.h). */
#include <string.h>
#include <apr_hash.h>
#include <apr_strings.h>
#include <apr_tables.h>

#include "qrt_vcols.h"
#include "qrt_agg.h"

#define VC_MAGIC 0x33435651u        /* "QVC3" */
#define VC_HEAD 40
#define VC_WIDE 1u                  /* times as int64 */
#define VC_DAYS 2u                  /* times in order, with the visits and clicks of each
                                       UTC day (qrt_agg's days: a table after the entries) */
#define VC_DAYS_MAX 64              /* the days a block's table spans at most */
#define VC_DAY_VISITS 8             /* ... and the visits a day it takes on average at least:
                                       a sparser block is walked as fast, and its table
                                       (8 bytes a day) would be much of its memory */

/* A column being built: its entries' strings, and each visit's entry. */
typedef struct {
    apr_array_header_t *strs;       /* const char *, by entry */
    apr_hash_t *index;              /* string -> entry + 1 */
    apr_array_header_t *idx;        /* apr_uint32_t, a visit */
    const char *last;               /* the previous visit's string, and its entry */
    apr_uint32_t last_i;
} vc_col;

struct qrt_vcols_builder_t {
    apr_pool_t *p;
    apr_array_header_t *t, *visitor, *click;
    vc_col col[QRT_VCOLS_COLS];
    qrt_strid_t *ids;               /* the strings' numbers (NULL: none, texts all) */
    int bare;                       /* no strings: no columns either */
};

qrt_vcols_builder_t *qrt_vcols_builder_make(apr_pool_t *p)
{
    qrt_vcols_builder_t *b = apr_pcalloc(p, sizeof(*b));
    int c;

    b->p = p;
    b->t = apr_array_make(p, 64, sizeof(apr_int64_t));
    b->visitor = apr_array_make(p, 64, sizeof(apr_int64_t));
    b->click = apr_array_make(p, 64, 1);
    for (c = 0; c < QRT_VCOLS_COLS; c++) {
        b->col[c].strs = apr_array_make(p, 16, sizeof(const char *));
        b->col[c].index = apr_hash_make(p);
        b->col[c].idx = apr_array_make(p, 64, sizeof(apr_uint32_t));
    }
    return b;
}

/* The entry of string s in column x, made when new. */
static apr_uint32_t vc_entry(apr_pool_t *p, vc_col *x, const char *s)
{
    apr_size_t n = strlen(s);
    apr_uintptr_t i = (apr_uintptr_t)apr_hash_get(x->index, s, (apr_ssize_t)n);

    if (!i) {
        char *copy = apr_pstrmemdup(p, s, n);

        APR_ARRAY_PUSH(x->strs, const char *) = copy;
        i = (apr_uintptr_t)x->strs->nelts;
        apr_hash_set(x->index, copy, (apr_ssize_t)n, (void *)i);
    }
    return (apr_uint32_t)(i - 1);
}

/* Adds a visit's string s to column x (visits in a row often share it). */
static void vc_add_str(apr_pool_t *p, vc_col *x, const char *s)
{
    if (!s) {
        s = "";
    }
    if (!x->last || strcmp(x->last, s)) {
        x->last_i = vc_entry(p, x, s);
        x->last = APR_ARRAY_IDX(x->strs, (int)x->last_i, const char *);
    }
    APR_ARRAY_PUSH(x->idx, apr_uint32_t) = x->last_i;
}

void qrt_vcols_add(qrt_vcols_builder_t *b, apr_int64_t t, int click, apr_int64_t visitor,
                   const char *browser, const char *country, const char *city)
{
    APR_ARRAY_PUSH(b->t, apr_int64_t) = t;
    APR_ARRAY_PUSH(b->visitor, apr_int64_t) = visitor;
    if (!b->bare) {
        vc_add_str(b->p, &b->col[QRT_VCOLS_BROWSER], browser);
        vc_add_str(b->p, &b->col[QRT_VCOLS_COUNTRY], country);
        vc_add_str(b->p, &b->col[QRT_VCOLS_CITY], city);
    }
    APR_ARRAY_PUSH(b->click, unsigned char) = click ? 1 : 0;
}

apr_uint32_t qrt_vcols_entry(qrt_vcols_builder_t *b, int col, const char *s)
{
    return vc_entry(b->p, &b->col[col], s ? s : "");
}

apr_uint32_t qrt_vcols_entry_new(qrt_vcols_builder_t *b, int col, const char *s)
{
    vc_col *x = &b->col[col];

    APR_ARRAY_PUSH(x->strs, const char *) = apr_pstrdup(b->p, s ? s : "");
    return (apr_uint32_t)(x->strs->nelts - 1);
}

void qrt_vcols_add_entries(qrt_vcols_builder_t *b, apr_int64_t t, int click,
                           apr_int64_t visitor, const apr_uint32_t *e)
{
    int c;

    APR_ARRAY_PUSH(b->t, apr_int64_t) = t;
    APR_ARRAY_PUSH(b->visitor, apr_int64_t) = visitor;
    for (c = 0; !b->bare && c < QRT_VCOLS_COLS; c++) {
        APR_ARRAY_PUSH(b->col[c].idx, apr_uint32_t) = e[c];
    }
    APR_ARRAY_PUSH(b->click, unsigned char) = click ? 1 : 0;
}

void qrt_vcols_builder_ids(qrt_vcols_builder_t *b, qrt_strid_t *ids)
{
    b->ids = ids;
}

void qrt_vcols_builder_bare(qrt_vcols_builder_t *b)
{
    if (!b->t->nelts) {
        b->bare = 1;
    }
}

apr_size_t qrt_vcols_count(const qrt_vcols_builder_t *b)
{
    return (apr_size_t)b->t->nelts;
}

/* The bytes of an index into a column of nent entries (0: none). */
static unsigned vc_width(apr_size_t nent)
{
    return !nent ? 0 : nent <= 256 ? 1 : nent <= 65536 ? 2 : 4;
}

/* The block's layout for n visits, each column's entries nent and strbytes bytes of
 * texts: each part's offset, and the length. */
typedef struct {
    apr_size_t visitor, t, idx[QRT_VCOLS_COLS], ent, days, click, strs, size;
} vc_layout;

/* The UTC day of t, as the reports count days. */
static apr_int64_t vc_day(apr_int64_t t)
{
    return qrt_agg_fdiv(t, QRT_AGG_DAY);
}

/* ndays: the days of the table (flag VC_DAYS) */
static void vc_lay(vc_layout *l, apr_size_t n, const apr_size_t *nent, apr_size_t strbytes,
                   apr_uint32_t flags, apr_size_t ndays)
{
    apr_size_t at, ents = 0;
    int c;

    l->visitor = VC_HEAD;
    l->t = l->visitor + 8 * n;
    at = l->t + ((flags & VC_WIDE) ? 8 : 4) * n;
    for (c = 0; c < QRT_VCOLS_COLS; c++) {
        apr_size_t w = vc_width(nent[c]);

        /* (each column aligned to its width) */
        l->idx[c] = w ? (at + w - 1) & ~(w - 1) : at;
        at = l->idx[c] + w * n;
        ents += nent[c];
    }
    l->ent = (at + 3) & ~(apr_size_t)3;
    l->days = l->ent + 4 * ents;
    l->click = l->days + ((flags & VC_DAYS) ? 8 * ndays : 0);
    l->strs = l->click + n;
    l->size = (l->strs + strbytes + 7) & ~(apr_size_t)7;
}

const char *qrt_vcols_block(qrt_vcols_builder_t *b, apr_size_t *len)
{
    apr_size_t n = (apr_size_t)b->t->nelts, i, nent[QRT_VCOLS_COLS], all = 0, strbytes = 0;
    const apr_int64_t *t = (const apr_int64_t *)(void *)b->t->elts;
    apr_int64_t lo = n ? t[0] : 0, hi = lo;
    apr_uint32_t head[8], flags = 0, *ids = NULL, *ent;
    const char **strs = NULL;
    vc_layout l;
    char *out, *text;
    int c, sorted = 1;
    apr_size_t ndays = 0;

    for (i = 1; i < n; i++) {
        lo = t[i] < lo ? t[i] : lo;
        hi = t[i] > hi ? t[i] : hi;
        sorted &= t[i] >= t[i - 1];
    }
    /* (in unsigned arithmetic: the span of two int64 may not fit one) */
    if ((apr_uint64_t)hi - (apr_uint64_t)lo > APR_UINT64_C(0xFFFFFFFF)) {
        flags |= VC_WIDE;
    }
    else if (sorted && n && vc_day(hi) - vc_day(lo) < VC_DAYS_MAX
             && (apr_size_t)(vc_day(hi) - vc_day(lo) + 1) * VC_DAY_VISITS <= n) {
        flags |= VC_DAYS;
        ndays = (apr_size_t)(vc_day(hi) - vc_day(lo) + 1);
    }
    /* every column's strings in turn, numbered at once; the texts of those without */
    for (c = 0; c < QRT_VCOLS_COLS; c++) {
        nent[c] = (apr_size_t)b->col[c].strs->nelts;
        all += nent[c];
    }
    if (all) {
        strs = apr_palloc(b->p, all * sizeof(*strs));
        ids = apr_pcalloc(b->p, all * sizeof(*ids));
        for (c = 0, i = 0; c < QRT_VCOLS_COLS; i += nent[c++]) {
            memcpy(strs + i, b->col[c].strs->elts, nent[c] * sizeof(*strs));
        }
        if (b->ids) {
            qrt_strid_get_many(b->ids, strs, all, ids);
        }
        for (i = 0; i < all; i++) {
            strbytes += ids[i] ? 0 : strlen(strs[i]) + 1;
        }
    }
    vc_lay(&l, n, nent, strbytes, flags, ndays);
    /* (apr_palloc's memory is 8-byte aligned) */
    out = apr_pcalloc(b->p, l.size);
    head[0] = VC_MAGIC;
    head[1] = (apr_uint32_t)n;
    for (c = 0; c < QRT_VCOLS_COLS; c++) {
        head[2 + c] = (apr_uint32_t)nent[c];
    }
    head[5] = (apr_uint32_t)strbytes;
    head[6] = flags;
    /* the latest time, from the first (wide: not told) */
    head[7] = (flags & VC_WIDE) ? 0 : (apr_uint32_t)((apr_uint64_t)hi - (apr_uint64_t)lo);
    memcpy(out, head, sizeof(head));
    memcpy(out + sizeof(head), &lo, sizeof(lo));
    memcpy(out + l.visitor, b->visitor->elts, 8 * n);
    if (flags & VC_WIDE) {
        memcpy(out + l.t, t, 8 * n);
    }
    else {
        apr_uint32_t *to = (apr_uint32_t *)(void *)(out + l.t);

        for (i = 0; i < n; i++) {
            to[i] = (apr_uint32_t)((apr_uint64_t)t[i] - (apr_uint64_t)lo);
        }
    }
    for (c = 0; c < QRT_VCOLS_COLS; c++) {
        const apr_uint32_t *from = (const apr_uint32_t *)(void *)b->col[c].idx->elts;
        char *to = out + l.idx[c];

        switch (vc_width(nent[c])) {
        case 1:
            for (i = 0; i < n; i++) {
                ((unsigned char *)to)[i] = (unsigned char)from[i];
            }
            break;
        case 2:
            for (i = 0; i < n; i++) {
                ((apr_uint16_t *)(void *)to)[i] = (apr_uint16_t)from[i];
            }
            break;
        case 4:
            memcpy(to, from, 4 * n);
            break;
        }
    }
    ent = (apr_uint32_t *)(void *)(out + l.ent);
    text = out + l.strs;
    for (i = 0; i < all; i++) {
        if (ids[i]) {
            ent[i] = ids[i];
        }
        else {
            apr_size_t sl = strlen(strs[i]) + 1;

            ent[i] = QRT_VCOLS_TEXT | (apr_uint32_t)(text - (out + l.strs));
            memcpy(text, strs[i], sl);
            text += sl;
        }
    }
    if (flags & VC_DAYS) {
        /* each day's visits, then its clicks (the times in order: a day's are a run) */
        apr_uint32_t *days = (apr_uint32_t *)(void *)(out + l.days);
        const unsigned char *click = (const unsigned char *)b->click->elts;
        apr_int64_t d0 = vc_day(lo);

        for (i = 0; i < n; i++) {
            apr_size_t d = (apr_size_t)(vc_day(t[i]) - d0);

            days[2 * d]++;
            days[2 * d + 1] += click[i] != 0;
        }
    }
    memcpy(out + l.click, b->click->elts, n);
    *len = l.size;
    return out;
}

apr_status_t qrt_vcols_open(qrt_vcols_t *v, const char *data, apr_size_t len)
{
    apr_uint32_t head[8];
    apr_size_t n, nent[QRT_VCOLS_COLS], strbytes, e, ndays = 0;
    vc_layout l;
    int c;

    memset(v, 0, sizeof(*v));
    if (!data || len < VC_HEAD || ((apr_uintptr_t)data & 7)) {
        return APR_EINVAL;
    }
    memcpy(head, data, sizeof(head));
    n = head[1];
    strbytes = head[5];
    if (head[0] != VC_MAGIC || n > len || strbytes > len || (head[6] & ~(VC_WIDE | VC_DAYS))
        || ((head[6] & VC_WIDE) && head[7]) || ((head[6] & VC_WIDE) && (head[6] & VC_DAYS))) {
        return APR_EINVAL;
    }
    for (c = 0; c < QRT_VCOLS_COLS; c++) {
        nent[c] = head[2 + c];
        /* (every column has entries, or none has: a block of no strings) */
        if (nent[c] > len || !nent[c] != !nent[0]) {
            return APR_EINVAL;
        }
    }
    memcpy(&v->base, data + sizeof(head), sizeof(v->base));
    if (head[6] & VC_DAYS) {
        /* (the latest time fits 32 bits: no overflow) */
        apr_int64_t span = vc_day(v->base + (apr_int64_t)head[7]) - vc_day(v->base);

        if (!n || span >= VC_DAYS_MAX) {
            return APR_EINVAL;
        }
        ndays = (apr_size_t)span + 1;
    }
    vc_lay(&l, n, nent, strbytes, head[6], ndays);
    if (l.size != len || (!nent[0] && strbytes)) {
        return APR_EINVAL;
    }
    v->tmin = (head[6] & VC_WIDE) ? APR_INT64_MIN : v->base;
    v->tmax = (head[6] & VC_WIDE) ? APR_INT64_MAX : v->base + (apr_int64_t)head[7];
    v->n = n;
    if (ndays) {
        v->ndays = (apr_uint32_t)ndays;
        v->day0 = vc_day(v->base);
        v->days = (const apr_uint32_t *)(const void *)(data + l.days);
    }
    v->visitor = (const apr_int64_t *)(const void *)(data + l.visitor);
    if (head[6] & VC_WIDE) {
        v->t64 = (const apr_int64_t *)(const void *)(data + l.t);
    }
    else {
        v->t32 = (const apr_uint32_t *)(const void *)(data + l.t);
    }
    for (c = 0, e = 0; c < QRT_VCOLS_COLS; e += nent[c++]) {
        v->nent[c] = (apr_uint32_t)nent[c];
        v->width[c] = vc_width(nent[c]);
        v->idx[c] = nent[c] ? data + l.idx[c] : NULL;
        v->ent[c] = (const apr_uint32_t *)(const void *)(data + l.ent) + e;
    }
    v->click = (const unsigned char *)(data + l.click);
    v->strs = data + l.strs;
    v->strbytes = strbytes;
    /* The texts ended (the entries are told apart by qrt_vcols_entry_ok). */
    if (strbytes && v->strs[strbytes - 1] != '\0') {
        return APR_EINVAL;
    }
    return APR_SUCCESS;
}

int qrt_vcols_entry_ok(const qrt_vcols_t *v, int col, apr_uint32_t e)
{
    apr_uint32_t x, at;

    if (e >= v->nent[col] || !(x = v->ent[col][e])) {
        return 0;
    }
    at = x & ~QRT_VCOLS_TEXT;
    return !(x & QRT_VCOLS_TEXT) || (at < v->strbytes && (!at || v->strs[at - 1] == '\0'));
}

apr_status_t qrt_vcols_check(const qrt_vcols_t *v)
{
    apr_size_t k;
    int c;

    for (c = 0; c < QRT_VCOLS_COLS; c++) {
        apr_uint32_t e;

        for (e = 0; e < v->nent[c]; e++) {
            if (!qrt_vcols_entry_ok(v, c, e)) {
                return APR_EINVAL;
            }
        }
    }
    for (k = 0; k < v->n; k++) {
        if (v->click[k] > 1 || qrt_vcols_time(v, k) < v->tmin || qrt_vcols_time(v, k) > v->tmax
            || (v->ndays && k && qrt_vcols_time(v, k) < qrt_vcols_time(v, k - 1))) {
            return APR_EINVAL;
        }
        for (c = 0; c < QRT_VCOLS_COLS && v->nent[c]; c++) {
            if (qrt_vcols_idx(v, c, k) >= v->nent[c]) {
                return APR_EINVAL;
            }
        }
    }
    if (v->ndays) {
        /* the table counts each day's run of visits, and its clicks */
        apr_size_t at = 0;
        apr_uint32_t d;

        for (d = 0; d < v->ndays; d++) {
            apr_size_t run = v->days[2 * d], j;
            apr_uint32_t clicks = 0;

            if (run > v->n - at || v->days[2 * d + 1] > run) {
                return APR_EINVAL;
            }
            for (j = at; j < at + run; j++) {
                if (vc_day(qrt_vcols_time(v, j)) != v->day0 + d) {
                    return APR_EINVAL;
                }
                clicks += v->click[j];
            }
            if (clicks != v->days[2 * d + 1]) {
                return APR_EINVAL;
            }
            at += run;
        }
        if (at != v->n) {
            return APR_EINVAL;
        }
    }
    return APR_SUCCESS;
}

const char *qrt_vcols_string(const qrt_vcols_t *v, qrt_strid_t *ids, int col, apr_size_t k,
                             apr_pool_t *p)
{
    apr_uint32_t e;
    const char *s;

    if (!v->nent[col] || k >= v->n || !qrt_vcols_entry_ok(v, col, e = qrt_vcols_idx(v, col, k))) {
        return NULL;
    }
    if ((s = qrt_vcols_text(v, col, e))) {
        return s;
    }
    return ids ? qrt_strid_str(ids, qrt_vcols_num(v, col, e), p) : NULL;
}
