/* qrt_vcols: a tracker's visits of a day as columns (see qrt_vcols.h). */
#include <string.h>
#include <apr_hash.h>
#include <apr_strings.h>
#include <apr_tables.h>

#include "qrt_vcols.h"

#define VC_MAGIC 0x32435651u        /* "QVC2" */
#define VC_HEAD 16

struct qrt_vcols_builder_t {
    apr_pool_t *p;
    apr_array_header_t *t, *visitor, *b, *y, *c, *click;
    apr_array_header_t *strs;       /* const char *, by index */
    apr_hash_t *index;              /* string -> index + 1 */
    apr_size_t strbytes;
    const char *last[3];            /* the previous visit's strings and their indexes */
    apr_uint32_t last_i[3];
    qrt_strid_t *ids;               /* the strings' numbers (NULL: none, all 0) */
    int bare;                       /* no strings: no string columns either */
};

qrt_vcols_builder_t *qrt_vcols_builder_make(apr_pool_t *p)
{
    qrt_vcols_builder_t *b = apr_pcalloc(p, sizeof(*b));

    b->p = p;
    b->t = apr_array_make(p, 64, sizeof(apr_int64_t));
    b->visitor = apr_array_make(p, 64, sizeof(apr_int64_t));
    b->b = apr_array_make(p, 64, sizeof(apr_uint32_t));
    b->y = apr_array_make(p, 64, sizeof(apr_uint32_t));
    b->c = apr_array_make(p, 64, sizeof(apr_uint32_t));
    b->click = apr_array_make(p, 64, 1);
    b->strs = apr_array_make(p, 16, sizeof(const char *));
    b->index = apr_hash_make(p);
    return b;
}

/* The index of s in the block's strings (added when new); col: which column's
 * previous string to try first (visits in a row often share them). */
static apr_uint32_t vc_str(qrt_vcols_builder_t *b, int col, const char *s)
{
    apr_uintptr_t i;
    apr_size_t n;

    if (!s) {
        s = "";
    }
    if (b->last[col] && !strcmp(b->last[col], s)) {
        return b->last_i[col];
    }
    n = strlen(s);
    i = (apr_uintptr_t)apr_hash_get(b->index, s, (apr_ssize_t)n);
    if (!i) {
        char *copy = apr_pstrmemdup(b->p, s, n);

        APR_ARRAY_PUSH(b->strs, const char *) = copy;
        b->strbytes += n + 1;
        i = (apr_uintptr_t)b->strs->nelts;
        apr_hash_set(b->index, copy, (apr_ssize_t)n, (void *)i);
    }
    b->last[col] = APR_ARRAY_IDX(b->strs, (int)i - 1, const char *);
    b->last_i[col] = (apr_uint32_t)(i - 1);
    return b->last_i[col];
}

void qrt_vcols_add(qrt_vcols_builder_t *b, apr_int64_t t, int click, apr_int64_t visitor,
                   const char *browser, const char *country, const char *city)
{
    APR_ARRAY_PUSH(b->t, apr_int64_t) = t;
    APR_ARRAY_PUSH(b->visitor, apr_int64_t) = visitor;
    if (!b->bare) {
        APR_ARRAY_PUSH(b->b, apr_uint32_t) = vc_str(b, 0, browser);
        APR_ARRAY_PUSH(b->y, apr_uint32_t) = vc_str(b, 1, country);
        APR_ARRAY_PUSH(b->c, apr_uint32_t) = vc_str(b, 2, city);
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

/* The block's length for n visits, nstr strings of strbytes bytes (none: no string
 * columns). */
static apr_size_t vc_size(apr_size_t n, apr_size_t nstr, apr_size_t strbytes)
{
    apr_size_t size = VC_HEAD + 16 * n + (nstr ? 12 * n : 0) + 8 * nstr + n + strbytes;

    return (size + 7) & ~(apr_size_t)7;
}

const char *qrt_vcols_block(qrt_vcols_builder_t *b, apr_size_t *len)
{
    apr_size_t n = (apr_size_t)b->t->nelts, nstr = (apr_size_t)b->strs->nelts, i;
    apr_size_t size = vc_size(n, nstr, b->strbytes), off = 0;
    /* (apr_palloc's memory is 8-byte aligned) */
    char *out = apr_pcalloc(b->p, size), *q = out;
    apr_uint32_t head[4];
    apr_uint32_t *stroff, *strid;

    head[0] = VC_MAGIC;
    head[1] = (apr_uint32_t)n;
    head[2] = (apr_uint32_t)nstr;
    head[3] = (apr_uint32_t)b->strbytes;
    memcpy(q, head, VC_HEAD);
    q += VC_HEAD;
    memcpy(q, b->t->elts, 8 * n);
    q += 8 * n;
    memcpy(q, b->visitor->elts, 8 * n);
    q += 8 * n;
    if (nstr) {
        memcpy(q, b->b->elts, 4 * n);
        q += 4 * n;
        memcpy(q, b->y->elts, 4 * n);
        q += 4 * n;
        memcpy(q, b->c->elts, 4 * n);
        q += 4 * n;
    }
    stroff = (apr_uint32_t *)(void *)q;
    q += 4 * nstr;
    strid = (apr_uint32_t *)(void *)q;
    if (b->ids && nstr) {
        qrt_strid_get_many(b->ids, (const char *const *)(void *)b->strs->elts, nstr, strid);
    }
    q += 4 * nstr;
    memcpy(q, b->click->elts, n);
    q += n;
    for (i = 0; i < nstr; i++) {
        const char *s = APR_ARRAY_IDX(b->strs, (int)i, const char *);
        apr_size_t sl = strlen(s) + 1;

        stroff[i] = (apr_uint32_t)off;
        memcpy(q + off, s, sl);
        off += sl;
    }
    *len = size;
    return out;
}

apr_status_t qrt_vcols_open(qrt_vcols_t *v, const char *data, apr_size_t len)
{
    apr_uint32_t head[4], i;
    apr_size_t n, nstr, strbytes;
    const char *q = data;

    memset(v, 0, sizeof(*v));
    if (!data || len < VC_HEAD || ((apr_uintptr_t)data & 7)) {
        return APR_EINVAL;
    }
    memcpy(head, data, VC_HEAD);
    n = head[1];
    nstr = head[2];
    strbytes = head[3];
    if (head[0] != VC_MAGIC || n > len || nstr > len || strbytes > len
        || vc_size(n, nstr, strbytes) != len || (nstr == 0 && strbytes)) {
        return APR_EINVAL;
    }
    q += VC_HEAD;
    v->n = n;
    v->nstr = (apr_uint32_t)nstr;
    v->t = (const apr_int64_t *)(const void *)q;
    q += 8 * n;
    v->visitor = (const apr_int64_t *)(const void *)q;
    q += 8 * n;
    if (nstr) {
        v->browser = (const apr_uint32_t *)(const void *)q;
        q += 4 * n;
        v->country = (const apr_uint32_t *)(const void *)q;
        q += 4 * n;
        v->city = (const apr_uint32_t *)(const void *)q;
        q += 4 * n;
    }
    v->stroff = (const apr_uint32_t *)(const void *)q;
    q += 4 * nstr;
    v->strid = (const apr_uint32_t *)(const void *)q;
    q += 4 * nstr;
    v->click = (const unsigned char *)q;
    q += n;
    v->strs = q;
    /* Every string inside the table and ended; every index a string. */
    if (strbytes && q[strbytes - 1] != '\0') {
        return APR_EINVAL;
    }
    for (i = 0; i < nstr; i++) {
        if (v->stroff[i] >= strbytes) {
            return APR_EINVAL;
        }
    }
    return APR_SUCCESS;
}

apr_status_t qrt_vcols_check(const qrt_vcols_t *v)
{
    apr_size_t k;

    for (k = 0; k < v->n; k++) {
        if ((v->nstr && (v->browser[k] >= v->nstr || v->country[k] >= v->nstr
                         || v->city[k] >= v->nstr)) || v->click[k] > 1) {
            return APR_EINVAL;
        }
    }
    return APR_SUCCESS;
}
