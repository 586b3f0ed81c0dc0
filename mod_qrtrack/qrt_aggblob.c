/* qrt_aggblob: the sealed form of the report aggregates (see qrt_aggblob.h). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>

#include "qrt_aggblob.h"

#define AB_NUM_MAX 13               /* characters of one 64-bit number */
#define AB_MORE_LO '0'
#define AB_LAST_LO 'P'

/* Sums and differences of times as the 64-bit two's complement numbers they are written
 * as (a damaged value must not make them overflow a signed number). */
static apr_int64_t add64(apr_int64_t a, apr_uint64_t b)
{
    return (apr_int64_t)((apr_uint64_t)a + b);
}

static apr_uint64_t sub64(apr_int64_t a, apr_int64_t b)
{
    return (apr_uint64_t)a - (apr_uint64_t)b;
}

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

/* The entries' comparisons: their order in the value, then every other field, so that
 * entries alike in their order's fields (visits in the same second, say) come out in one
 * order whatever order their rows came in (ab_canon). */
#define AB_CMP(x, y) do { if ((x) != (y)) { return (x) < (y) ? -1 : 1; } } while (0)

static int link_rest(const ab_link *x, const ab_link *y)
{
    AB_CMP(x->flags, y->flags);
    AB_CMP(x->ti, y->ti);
    AB_CMP(x->bi, y->bi);
    AB_CMP(x->ci, y->ci);
    AB_CMP(x->yi, y->yi);
    AB_CMP(x->n, y->n);
    return 0;
}

static int link_cmp(const void *a, const void *b)
{
    const ab_link *x = a, *y = b;

    AB_CMP(x->t, y->t);
    AB_CMP(x->p, y->p);
    return link_rest(x, y);
}

static int gap_cmp(const void *a, const void *b)
{
    const ab_gap *x = a, *y = b;

    AB_CMP(x->t, y->t);
    AB_CMP(x->p, y->p);
    AB_CMP(x->kind, y->kind);
    AB_CMP(x->ref, y->ref);
    AB_CMP(x->n, y->n);
    return 0;
}

/* Version 3 of links: by previous time, then time. */
static int link_cmp_p(const void *a, const void *b)
{
    const ab_link *x = a, *y = b;

    AB_CMP(x->p, y->p);
    AB_CMP(x->t, y->t);
    return link_rest(x, y);
}

static int gap_cmp_p(const void *a, const void *b)
{
    const ab_gap *x = a, *y = b;

    AB_CMP(x->kind, y->kind);
    AB_CMP(x->p, y->p);
    AB_CMP(x->t, y->t);
    AB_CMP(x->ref, y->ref);
    AB_CMP(x->n, y->n);
    return 0;
}

static int visit_cmp(const void *a, const void *b)
{
    const ab_visit *x = a, *y = b;

    AB_CMP(x->t, y->t);
    AB_CMP(x->click, y->click);
    AB_CMP(x->ti, y->ti);
    AB_CMP(x->bi, y->bi);
    AB_CMP(x->ci, y->ci);
    AB_CMP(x->yi, y->yi);
    return 0;
}

static int count_cmp(const void *a, const void *b)
{
    const ab_count *x = a, *y = b;
    int c;

    AB_CMP(x->grp, y->grp);
    if ((c = strcmp(x->val, y->val)) != 0) {
        return c;
    }
    AB_CMP(x->scans, y->scans);
    AB_CMP(x->clicks, y->clicks);
    AB_CMP(x->firsts, y->firsts);
    return 0;
}

typedef struct {
    const char *s;
    apr_int64_t id;
    int old;
} ab_canon_t;

static int canon_str_cmp(const void *a, const void *b)
{
    return strcmp(((const ab_canon_t *)a)->s, ((const ab_canon_t *)b)->s);
}

static int canon_trk_cmp(const void *a, const void *b)
{
    const ab_canon_t *x = a, *y = b;

    AB_CMP(x->id, y->id);
    return 0;
}

/* Renumbers the string table by the strings' bytes and the tracker table by id, and the
 * entries' indexes with them: with the comparisons above, a value's text then depends on
 * its rows alone, not on the order SQL returned them in (which changes with a plan or a
 * page's rows), so that sealing a day again gives the same text and seal. */
static void ab_canon(qrt_aggblob_builder_t *b, apr_pool_t *tp)
{
    int ns = b->strlist->nelts, nt = b->trklist->nelts, i;
    ab_canon_t *c = apr_palloc(tp, (apr_size_t)(ns + nt + 1) * sizeof(*c));
    int *smap = apr_palloc(tp, (apr_size_t)(ns + 1) * sizeof(int));
    int *tmap = apr_palloc(tp, (apr_size_t)(nt + 1) * sizeof(int));

    for (i = 0; i < ns; i++) {
        c[i].s = APR_ARRAY_IDX(b->strlist, i, const char *);
        c[i].old = i;
    }
    qsort(c, (size_t)ns, sizeof(*c), canon_str_cmp);
    for (i = 0; i < ns; i++) {
        smap[c[i].old] = i;
        APR_ARRAY_IDX(b->strlist, i, const char *) = c[i].s;
        apr_hash_set(b->strs, c[i].s, APR_HASH_KEY_STRING, (void *)(apr_uintptr_t)(i + 1));
    }
    for (i = 0; i < nt; i++) {
        c[i].id = APR_ARRAY_IDX(b->trklist, i, apr_int64_t);
        c[i].old = i;
    }
    qsort(c, (size_t)nt, sizeof(*c), canon_trk_cmp);
    for (i = 0; i < nt; i++) {
        tmap[c[i].old] = i;
        APR_ARRAY_IDX(b->trklist, i, apr_int64_t) = c[i].id;
        /* (the key is there: the value alone is replaced) */
        apr_hash_set(b->trks, &c[i].id, sizeof(c[i].id), (void *)(apr_uintptr_t)(i + 1));
    }
    for (i = 0; i < b->links->nelts; i++) {
        ab_link *l = &APR_ARRAY_IDX(b->links, i, ab_link);

        l->ti = tmap[l->ti];
        l->bi = smap[l->bi];
        l->ci = smap[l->ci];
        l->yi = smap[l->yi];
    }
    for (i = 0; i < b->gaps->nelts; i++) {
        ab_gap *g = &APR_ARRAY_IDX(b->gaps, i, ab_gap);

        g->ref = g->kind == 1 ? tmap[g->ref] : smap[g->ref];
    }
    for (i = 0; i < b->visits->nelts; i++) {
        ab_visit *v = &APR_ARRAY_IDX(b->visits, i, ab_visit);

        v->ti = tmap[v->ti];
        v->bi = smap[v->bi];
        v->ci = smap[v->ci];
        v->yi = smap[v->yi];
    }
}

static char *put_str(char *o, const char *s)
{
    apr_size_t n = strlen(s);

    o = qrt_aggblob_put(o, n);
    memcpy(o, s, n);
    return o + n;
}

/* ---- version 2 of links and visits: the bit stream ----------------------------------- */

/* 6 bits a character, in this order. */
static const char ab_b64[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_";

/* A character's 6 bits; 64 for a character outside ab_b64. */
static const unsigned char ab_b64_val[256] = {
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 62, 64, 64,
     0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 64, 64, 64, 64, 64, 64,
    64, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
    25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 64, 64, 64, 64, 63,
    64, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50,
    51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64
};

/* The fields of an entry, in the order the bit stream holds them. */
enum { V_DT, V_CLICK, V_TI, V_PLACE, V_BROWSER, V_N, V_FIELDS };
enum { L_DT, L_TP, L_FLAGS, L_TI, L_PLACE, L_BROWSER, L_N, L_FIELDS };
enum { G_PAIR, G_DT, G_TP, G_N, G_FIELDS };

/* How a field's values are written: truncated binary over n values (k - 1 bits for the
 * first u of them, k bits for the others; no bit when n is 1), or the Exp-Golomb code of
 * order eg (v + 2^eg in its L bits, after L - 1 - eg zeros). An index must be below lim,
 * the size of its table; a number is base + the value. */
typedef struct {
    int eg;                     /* -1: truncated binary */
    int k;
    apr_uint64_t n, u;
    apr_uint64_t lim;           /* indexes: their table's size */
    apr_int64_t base;
} ab_code;

static int ab_clz(apr_uint64_t v)
{
#if defined(__GNUC__)
    return __builtin_clzll(v);
#else
    int n = 0;

    while (!(v >> 63)) {
        v <<= 1;
        n++;
    }
    return n;
#endif
}

static int bitlen(apr_uint64_t v)
{
    return v ? 64 - ab_clz(v) : 0;
}

static void code_tb(ab_code *c, apr_uint64_t n)
{
    c->eg = -1;
    c->n = n;
    c->k = n > 1 ? bitlen(n - 1) : 0;
    c->u = c->k ? ((apr_uint64_t)1 << c->k) - n : 0;
}

/* The bits of v in the Exp-Golomb code of order k (k < 64). */
static int eg_len(apr_uint64_t v, int k)
{
    apr_uint64_t u = v + ((apr_uint64_t)1 << k);

    return 2 * (u < v ? 65 : bitlen(u)) - 1 - k;
}

static int tb_len(const ab_code *c, apr_uint64_t v)
{
    return c->k == 0 ? 0 : v < c->u ? c->k - 1 : c->k;
}

static int code_len(const ab_code *c, apr_uint64_t v)
{
    return c->eg < 0 ? tb_len(c, v) : eg_len(v, c->eg);
}

/* ---- version 2: writing --------------------------------------------------------------- */

typedef struct {
    char *o;
    apr_uint64_t acc;           /* its low nb bits are still to be written */
    int nb;
} ab_out;

/* The n low bits of v, n <= 64. */
static void out_bits(ab_out *w, apr_uint64_t v, int n)
{
    while (n > 0) {
        int m = n > 32 ? n - 32 : n;

        n -= m;
        w->acc = w->acc << m | (v >> n & (((apr_uint64_t)1 << m) - 1));
        w->nb += m;
        while (w->nb >= 6) {
            w->nb -= 6;
            *w->o++ = ab_b64[w->acc >> w->nb & 63];
        }
    }
}

static void out_val(ab_out *w, const ab_code *c, apr_uint64_t v)
{
    if (c->eg < 0) {
        if (c->k) {
            out_bits(w, v < c->u ? v : v + c->u, v < c->u ? c->k - 1 : c->k);
        }
    }
    else {
        apr_uint64_t u = v + ((apr_uint64_t)1 << c->eg);
        int len = u < v ? 65 : bitlen(u), z = len - 1 - c->eg;

        while (z > 0) {
            int m = z > 32 ? 32 : z;

            out_bits(w, 0, m);
            z -= m;
        }
        out_bits(w, 1, 1);
        out_bits(w, u, len - 1);
    }
}

/* The last character, its free bits 0, and the end of the value. */
static void out_end(ab_out *w)
{
    if (w->nb) {
        *w->o++ = ab_b64[w->acc << (6 - w->nb) & 63];
    }
    *w->o = '\0';
}

/* A field's values for every entry of a section, from 0, and the code chosen for them. */
typedef struct {
    apr_uint64_t *v;
    int number;
    ab_code code;
    apr_uint64_t bits;          /* the section's bits for this field */
} ab_col;

static void col_make(apr_pool_t *p, ab_col *c, int n, int number)
{
    memset(c, 0, sizeof(*c));
    c->v = apr_palloc(p, (n + 1) * sizeof(*c->v));
    c->number = number;
}

/* Numbers: counted from the smallest (the values are signed). */
static void col_base(ab_col *c, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        if (i == 0 || (apr_int64_t)c->v[i] < c->code.base) {
            c->code.base = (apr_int64_t)c->v[i];
        }
    }
    for (i = 0; i < n; i++) {
        c->v[i] -= (apr_uint64_t)c->code.base;
    }
}

/* The shortest code for a field: truncated binary over its table (indexes) or up to its
 * largest value (numbers below 2^32), or an Exp-Golomb code. With min1, every value
 * takes at least one bit (then an entry always does, and its count is bounded by the
 * bits of the value). */
static void col_pick(ab_col *c, int n, apr_uint64_t lim, int min1)
{
    apr_uint64_t max = 0, best = 0, cost;
    int i, k, kmax, found = 0;

    for (i = 0; i < n; i++) {
        if (c->v[i] > max) {
            max = c->v[i];
        }
    }
    c->code.lim = c->number ? 0 : lim;
    if (!c->number || max < APR_UINT64_C(0xffffffff)) {
        ab_code tb = c->code;

        code_tb(&tb, c->number ? max + 1 : lim);
        if (min1 && tb.n < 2) {
            code_tb(&tb, 2);
        }
        if (tb.n) {
            for (i = 0; i < n; i++) {
                best += (apr_uint64_t)tb_len(&tb, c->v[i]);
            }
            c->code = tb;
            found = 1;
        }
    }
    kmax = bitlen(max) < 63 ? bitlen(max) : 63;
    for (k = 0; k <= kmax; k++) {
        for (cost = 0, i = 0; i < n && (!found || cost < best); i++) {
            cost += (apr_uint64_t)eg_len(c->v[i], k);
        }
        if (!found || cost < best) {
            best = cost;
            c->code.eg = k;
            found = 1;
        }
    }
    c->bits = best;
}

/* A field's code in the header: 0 for truncated binary, else 1 + the Exp-Golomb order;
 * a number adds the value 0 stands for and, in truncated binary, how many there are. */
static char *put_code(char *o, const ab_col *c)
{
    o = qrt_aggblob_put(o, c->code.eg < 0 ? 0 : (apr_uint64_t)c->code.eg + 1);
    if (c->number) {
        o = qrt_aggblob_put(o, zz(c->code.base));
        if (c->code.eg < 0) {
            o = qrt_aggblob_put(o, c->code.n);
        }
    }
    return o;
}

/* The distinct pairs of ints that a section's entries use (browsers, places, flags, the
 * gaps' kind and group), with their uses. */
typedef struct {
    int a, b;
    apr_int64_t uses;
} ab_key;
typedef struct {
    apr_hash_t *h;
    apr_array_header_t *keys;   /* ab_key */
    apr_pool_t *p;
    int *rank;                  /* a key's place in the table written */
    int *order;                 /* the keys in the table written */
} ab_tab;

static void tab_make(ab_tab *t, apr_pool_t *p)
{
    t->p = p;
    t->h = apr_hash_make(p);
    t->keys = apr_array_make(p, 64, sizeof(ab_key));
}

static int tab_add(ab_tab *t, int a, int b)
{
    int key[2];
    void *v;

    key[0] = a;
    key[1] = b;
    v = apr_hash_get(t->h, key, sizeof(key));
    if (!v) {
        ab_key *k = apr_array_push(t->keys);

        k->a = a;
        k->b = b;
        v = (void *)(apr_uintptr_t)t->keys->nelts;
        apr_hash_set(t->h, apr_pmemdup(t->p, key, sizeof(key)), sizeof(key), v);
    }
    APR_ARRAY_IDX(t->keys, (int)(apr_uintptr_t)v - 1, ab_key).uses++;
    return (int)(apr_uintptr_t)v - 1;
}

typedef struct {
    apr_int64_t uses;
    int i;
} ab_use;

static int use_cmp(const void *a, const void *b)
{
    const ab_use *x = a, *y = b;

    if (x->uses != y->uses) {
        return x->uses > y->uses ? -1 : 1;
    }
    return x->i < y->i ? -1 : x->i > y->i;
}

/* The order of n things by their uses, most used first (alike: in their own order), and
 * each one's rank in it. */
static int *ab_rank(apr_pool_t *p, const apr_int64_t *uses, int n, int **order)
{
    ab_use *u = apr_palloc(p, (n + 1) * sizeof(*u));
    int *rank = apr_palloc(p, (n + 1) * sizeof(*rank)), i;

    *order = apr_palloc(p, (n + 1) * sizeof(**order));
    for (i = 0; i < n; i++) {
        u[i].uses = uses[i];
        u[i].i = i;
    }
    qsort(u, n, sizeof(*u), use_cmp);
    for (i = 0; i < n; i++) {
        (*order)[i] = u[i].i;
        rank[u[i].i] = i;
    }
    return rank;
}

static void tab_rank(ab_tab *t)
{
    apr_int64_t *uses = apr_palloc(t->p, (t->keys->nelts + 1) * sizeof(*uses));
    int i;

    for (i = 0; i < t->keys->nelts; i++) {
        uses[i] = APR_ARRAY_IDX(t->keys, i, ab_key).uses;
    }
    t->rank = ab_rank(t->p, uses, t->keys->nelts, &t->order);
}

/* A table in the header: its size, then each key's a (and b when two) in rank order;
 * signed ones zigzagged. With trank (gaps' pairs), a b whose a is 1 is a tracker, written
 * by its rank. */
static char *tab_put(char *o, const ab_tab *t, int two, int sign_a, const int *trank)
{
    int i;

    o = qrt_aggblob_put(o, t->keys->nelts);
    for (i = 0; i < t->keys->nelts; i++) {
        const ab_key *k = &APR_ARRAY_IDX(t->keys, t->order[i], ab_key);

        o = qrt_aggblob_put(o, sign_a ? zz(k->a) : (apr_uint64_t)k->a);
        if (two) {
            o = qrt_aggblob_put(o, (apr_uint64_t)(trank && k->a == 1 ? trank[k->b] : k->b));
        }
    }
    return o;
}

/* The header's room for a table. */
static apr_size_t tab_cap(const ab_tab *t)
{
    return (apr_size_t)(t->keys->nelts + 1) * 2 * AB_NUM_MAX;
}

/* The trackers by their uses in a section (most used first) and the rank of each. */
static int *trk_rank(qrt_aggblob_builder_t *b, apr_pool_t *p, const ab_col *ti, int n,
                     int **order)
{
    apr_int64_t *uses = apr_pcalloc(p, (b->trklist->nelts + 1) * sizeof(*uses));
    int i;

    for (i = 0; i < n; i++) {
        uses[ti->v[i]]++;
    }
    return ab_rank(p, uses, b->trklist->nelts, order);
}

/* The bits of a section's fields. */
static apr_uint64_t cols_bits(const ab_col *cols, int ncols)
{
    apr_uint64_t bits = 0;
    int i;

    for (i = 0; i < ncols; i++) {
        bits += cols[i].bits;
    }
    return bits;
}

/* The room a value needs but for its tables: format, version, strings, trackers, counts,
 * the codes of ncodes fields and a bit stream of that many bits. */
static apr_size_t ab_cap(qrt_aggblob_builder_t *b, int ncodes, apr_uint64_t bits)
{
    return 8 + b->strbytes + (b->strlist->nelts + b->trklist->nelts + 4) * AB_NUM_MAX
           + (apr_size_t)ncodes * 3 * AB_NUM_MAX + (apr_size_t)(bits / 6) + 2;
}

/* The format letter, version (2 or 3) and the string and tracker tables (trackers in
 * the given order). */
static char *ab_head(qrt_aggblob_builder_t *b, char fmt, int version, const int *order,
                     char *o)
{
    apr_int64_t prev = 0;
    int i;

    *o++ = fmt;
    *o++ = (char)('0' + version);
    o = qrt_aggblob_put(o, b->strlist->nelts);
    for (i = 0; i < b->strlist->nelts; i++) {
        o = put_str(o, APR_ARRAY_IDX(b->strlist, i, const char *));
    }
    o = qrt_aggblob_put(o, b->trklist->nelts);
    for (i = 0; i < b->trklist->nelts; i++) {
        apr_int64_t id = APR_ARRAY_IDX(b->trklist, order[i], apr_int64_t);

        o = qrt_aggblob_put(o, zz((apr_int64_t)sub64(id, prev)));
        prev = id;
    }
    return o;
}

/* Every entry's fields in turn. */
static void out_rows(ab_out *w, const ab_col *cols, int ncols, int n)
{
    int i, c;

    for (i = 0; i < n; i++) {
        for (c = 0; c < ncols; c++) {
            out_val(w, &cols[c].code, cols[c].v[i]);
        }
    }
}

/* Indexes of a table by their rank in it. */
static void col_ranks(ab_col *c, int n, const int *rank)
{
    int i;

    for (i = 0; i < n; i++) {
        c->v[i] = (apr_uint64_t)rank[c->v[i]];
    }
}

/* Version 2: links and gaps by time, each as its time since the previous entry's and
 * its time since its previous visit. Version 3: links by previous time, gaps by kind
 * then previous time, each as its previous time since the previous entry's (from the
 * first of its section or kind) and its time in the day; the header also gives the
 * links' bits and where each kind's gaps start, so that a reader may stop at a previous
 * time and jump to one kind's gaps. */
static const char *ab_links(qrt_aggblob_builder_t *b, int version)
{
    ab_col lc[L_FIELDS], gc[G_FIELDS];
    ab_tab brw, plc, flg, pair;
    apr_pool_t *tp;
    apr_int64_t prev = b->day_start, lbase = b->day_start;
    int nl = b->links->nelts, ng = b->gaps->nelts, i, *trank, *torder, v3 = version == 3;
    char *start, *o;
    ab_out w;

    apr_pool_create(&tp, b->p);
    ab_canon(b, tp);
    qsort(b->links->elts, nl, sizeof(ab_link), v3 ? link_cmp_p : link_cmp);
    qsort(b->gaps->elts, ng, sizeof(ab_gap), v3 ? gap_cmp_p : gap_cmp);
    if (v3 && nl) {
        prev = lbase = APR_ARRAY_IDX(b->links, 0, ab_link).p;
    }
    tab_make(&brw, tp);
    tab_make(&plc, tp);
    tab_make(&flg, tp);
    tab_make(&pair, tp);
    for (i = 0; i < L_FIELDS; i++) {
        col_make(tp, &lc[i], nl, i == L_DT || i == L_TP || i == L_N);
    }
    for (i = 0; i < G_FIELDS; i++) {
        col_make(tp, &gc[i], ng, i != G_PAIR);
    }
    for (i = 0; i < nl; i++) {
        ab_link *l = &APR_ARRAY_IDX(b->links, i, ab_link);

        lc[L_DT].v[i] = v3 ? sub64(l->p, prev) : sub64(l->t, prev);
        lc[L_TP].v[i] = v3 ? sub64(l->t, b->day_start) : sub64(l->t, l->p);
        lc[L_FLAGS].v[i] = (apr_uint64_t)tab_add(&flg, l->flags, 0);
        lc[L_TI].v[i] = (apr_uint64_t)l->ti;
        lc[L_PLACE].v[i] = (apr_uint64_t)tab_add(&plc, l->ci, l->yi);
        lc[L_BROWSER].v[i] = (apr_uint64_t)tab_add(&brw, l->bi, 0);
        lc[L_N].v[i] = (apr_uint64_t)l->n;
        prev = v3 ? l->p : l->t;
    }
    prev = b->day_start;
    for (i = 0; i < ng; i++) {
        ab_gap *g = &APR_ARRAY_IDX(b->gaps, i, ab_gap);

        if (v3 && (i == 0 || g->kind != APR_ARRAY_IDX(b->gaps, i - 1, ab_gap).kind)) {
            /* Version 3: each kind's gaps from its first previous time on. */
            prev = g->p;
        }
        gc[G_PAIR].v[i] = (apr_uint64_t)tab_add(&pair, g->kind, g->ref);
        gc[G_DT].v[i] = v3 ? sub64(g->p, prev) : sub64(g->t, prev);
        gc[G_TP].v[i] = v3 ? sub64(g->t, b->day_start) : sub64(g->t, g->p);
        gc[G_N].v[i] = (apr_uint64_t)g->n;
        prev = v3 ? g->p : g->t;
    }
    tab_rank(&brw);
    tab_rank(&plc);
    tab_rank(&flg);
    tab_rank(&pair);
    trank = trk_rank(b, tp, &lc[L_TI], nl, &torder);
    col_ranks(&lc[L_TI], nl, trank);
    col_ranks(&lc[L_FLAGS], nl, flg.rank);
    col_ranks(&lc[L_PLACE], nl, plc.rank);
    col_ranks(&lc[L_BROWSER], nl, brw.rank);
    col_ranks(&gc[G_PAIR], ng, pair.rank);
    col_base(&lc[L_DT], nl);
    col_base(&lc[L_TP], nl);
    col_base(&lc[L_N], nl);
    col_base(&gc[G_DT], ng);
    col_base(&gc[G_TP], ng);
    col_base(&gc[G_N], ng);
    col_pick(&lc[L_DT], nl, 0, 1);
    col_pick(&lc[L_TP], nl, 0, 0);
    col_pick(&lc[L_FLAGS], nl, (apr_uint64_t)flg.keys->nelts, 0);
    col_pick(&lc[L_TI], nl, (apr_uint64_t)b->trklist->nelts, 0);
    col_pick(&lc[L_PLACE], nl, (apr_uint64_t)plc.keys->nelts, 0);
    col_pick(&lc[L_BROWSER], nl, (apr_uint64_t)brw.keys->nelts, 0);
    col_pick(&lc[L_N], nl, 0, 0);
    col_pick(&gc[G_PAIR], ng, (apr_uint64_t)pair.keys->nelts, 0);
    col_pick(&gc[G_DT], ng, 0, 1);
    col_pick(&gc[G_TP], ng, 0, 0);
    col_pick(&gc[G_N], ng, 0, 0);

    start = apr_palloc(b->p, ab_cap(b, L_FIELDS + G_FIELDS, cols_bits(lc, L_FIELDS)
                                                            + cols_bits(gc, G_FIELDS))
                             + tab_cap(&brw) + tab_cap(&plc) + tab_cap(&flg) + tab_cap(&pair)
                             + (3 + 4 * (apr_size_t)ng) * AB_NUM_MAX);
    o = ab_head(b, 'L', version, torder, start);
    o = qrt_aggblob_put(o, nl);
    o = qrt_aggblob_put(o, ng);
    if (v3) {
        /* The links' first previous time and bits, then each kind's run of gaps: its
         * kind, entries, first previous time and first bit. */
        apr_uint64_t bit = nl ? cols_bits(lc, L_FIELDS) : 0;
        int runs = 0, j, c;

        for (i = 0; i < ng; i++) {
            runs += i == 0 || APR_ARRAY_IDX(b->gaps, i, ab_gap).kind
                              != APR_ARRAY_IDX(b->gaps, i - 1, ab_gap).kind;
        }
        o = qrt_aggblob_put(o, zz((apr_int64_t)sub64(lbase, b->day_start)));
        o = qrt_aggblob_put(o, bit);
        o = qrt_aggblob_put(o, (apr_uint64_t)runs);
        for (i = 0; i < ng; i = j) {
            const ab_gap *g = &APR_ARRAY_IDX(b->gaps, i, ab_gap);

            for (j = i; j < ng && APR_ARRAY_IDX(b->gaps, j, ab_gap).kind == g->kind; j++) {
            }
            o = qrt_aggblob_put(o, zz(g->kind));
            o = qrt_aggblob_put(o, (apr_uint64_t)(j - i));
            o = qrt_aggblob_put(o, zz((apr_int64_t)sub64(g->p, b->day_start)));
            o = qrt_aggblob_put(o, bit);
            for (; i < j; i++) {
                for (c = 0; c < G_FIELDS; c++) {
                    bit += (apr_uint64_t)code_len(&gc[c].code, gc[c].v[i]);
                }
            }
        }
    }
    /* A section without entries has neither tables nor codes. */
    if (nl) {
        o = tab_put(o, &brw, 0, 0, NULL);
        o = tab_put(o, &plc, 1, 0, NULL);
        o = tab_put(o, &flg, 0, 1, NULL);
        for (i = 0; i < L_FIELDS; i++) {
            o = put_code(o, &lc[i]);
        }
    }
    if (ng) {
        o = tab_put(o, &pair, 1, 1, trank);
        for (i = 0; i < G_FIELDS; i++) {
            o = put_code(o, &gc[i]);
        }
    }
    memset(&w, 0, sizeof(w));
    w.o = o;
    out_rows(&w, lc, L_FIELDS, nl);
    out_rows(&w, gc, G_FIELDS, ng);
    out_end(&w);
    apr_pool_destroy(tp);
    return start;
}

const char *qrt_aggblob_links(qrt_aggblob_builder_t *b)
{
    return ab_links(b, 3);
}

const char *qrt_aggblob_links_v2(qrt_aggblob_builder_t *b)
{
    return ab_links(b, 2);
}

const char *qrt_aggblob_visits(qrt_aggblob_builder_t *b)
{
    ab_col vc[V_FIELDS];
    ab_tab brw, plc;
    apr_pool_t *tp;
    apr_int64_t prev = b->day_start;
    int nv = b->visits->nelts, nr = 0, i, run, *trank, *torder;
    ab_visit *vis;
    char *start, *o;
    ab_out w;

    apr_pool_create(&tp, b->p);
    ab_canon(b, tp);
    qsort(b->visits->elts, nv, sizeof(ab_visit), visit_cmp);
    vis = (ab_visit *)b->visits->elts;
    tab_make(&brw, tp);
    tab_make(&plc, tp);
    for (i = 0; i < V_FIELDS; i++) {
        col_make(tp, &vc[i], nv, i == V_DT || i == V_CLICK || i == V_N);
    }
    /* Visits alike in everything are one entry with a count. */
    for (i = 0; i < nv; i = run) {
        ab_visit *v = &vis[i];

        for (run = i + 1; run < nv && !memcmp(v, &vis[run], sizeof(*v)); run++) {
        }
        vc[V_DT].v[nr] = sub64(v->t, prev);
        vc[V_CLICK].v[nr] = (apr_uint64_t)v->click;
        vc[V_TI].v[nr] = (apr_uint64_t)v->ti;
        vc[V_PLACE].v[nr] = (apr_uint64_t)tab_add(&plc, v->ci, v->yi);
        vc[V_BROWSER].v[nr] = (apr_uint64_t)tab_add(&brw, v->bi, 0);
        vc[V_N].v[nr] = (apr_uint64_t)(run - i);
        prev = v->t;
        nr++;
    }
    tab_rank(&brw);
    tab_rank(&plc);
    trank = trk_rank(b, tp, &vc[V_TI], nr, &torder);
    col_ranks(&vc[V_TI], nr, trank);
    col_ranks(&vc[V_PLACE], nr, plc.rank);
    col_ranks(&vc[V_BROWSER], nr, brw.rank);
    col_base(&vc[V_DT], nr);
    col_base(&vc[V_CLICK], nr);
    col_base(&vc[V_N], nr);
    col_pick(&vc[V_DT], nr, 0, 1);
    col_pick(&vc[V_CLICK], nr, 0, 0);
    col_pick(&vc[V_TI], nr, (apr_uint64_t)b->trklist->nelts, 0);
    col_pick(&vc[V_PLACE], nr, (apr_uint64_t)plc.keys->nelts, 0);
    col_pick(&vc[V_BROWSER], nr, (apr_uint64_t)brw.keys->nelts, 0);
    col_pick(&vc[V_N], nr, 0, 0);

    start = apr_palloc(b->p, ab_cap(b, V_FIELDS, cols_bits(vc, V_FIELDS)) + tab_cap(&brw)
                             + tab_cap(&plc));
    o = ab_head(b, 'V', 2, torder, start);
    o = qrt_aggblob_put(o, nr);
    if (nr) {
        o = tab_put(o, &brw, 0, 0, NULL);
        o = tab_put(o, &plc, 1, 0, NULL);
        for (i = 0; i < V_FIELDS; i++) {
            o = put_code(o, &vc[i]);
        }
    }
    memset(&w, 0, sizeof(w));
    w.o = o;
    out_rows(&w, vc, V_FIELDS, nr);
    out_end(&w);
    apr_pool_destroy(tp);
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

        o = qrt_aggblob_put(o, zz((apr_int64_t)sub64(c->grp, prev)));
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
    if (qrt_aggblob_get(s, end, &u) < 0 || u > (apr_uint64_t)(end - *s) || u > INT_MAX) {
        return -1;
    }
    *n = (int)u;
    return 0;
}

/* Zero bytes after a bit stream. An entry starts at most at its end; a field starts at
 * most 129 bits after the previous one (an Exp-Golomb code of a 64-bit value) or at the
 * end + 1 (after an impossible value), and reads up to 129 + 32 bits and a last 8 bytes:
 * with 7 fields, at most 1 + 6 * 129 + 161 + 64 bits (125 bytes) past the end. */
#define AB_PAD 136

#if defined(__GNUC__)
#define AB_HOT static APR_INLINE __attribute__((always_inline))
#else
#define AB_HOT static APR_INLINE
#endif

/* Under AddressSanitizer the bit stream has an allocation of its own, whose bounds it
 * checks (a pool's block would hide a read past them). */
#if defined(__SANITIZE_ADDRESS__)
#define AB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AB_ASAN 1
#endif
#endif

#ifdef AB_ASAN
static apr_status_t ab_free(void *data)
{
    free(data);
    return APR_SUCCESS;
}
#endif

/* Where the reading of a bit stream is: bit pos, and the bits from there on at the top
 * of w, of which avail are the stream's (the others 0). An impossible value sets pos
 * past the end (err) to refuse the entry. */
typedef struct {
    apr_uint64_t w, pos, err;
    int avail;
} ab_rd;

struct qrt_aggblob_v2_t {
    unsigned char *buf;         /* the bit stream, 8 bits a byte, then AB_PAD zeros */
    apr_uint64_t nbits;         /* the bits there are */
    ab_rd rd;                   /* the next entry's */
    int bad;                    /* a character outside the alphabet */
    int ngaps;                  /* links: the gaps that follow them */
    int v3;                     /* links by previous time (version 3) */
    apr_uint64_t lbits;         /* version 3: the links' bits */
    int nruns, run, run_left;   /* version 3: the gaps' runs (one per kind), the current */
    int only;                   /* one run read alone (qrt_aggblob_gaps_of) */
    int *rkind, *rcount;
    apr_int64_t *rbase;         /* a run's first previous time */
    apr_uint64_t *rbit;         /* its first bit */
    const unsigned char *src;   /* version 3: the stream's characters, n of them, turned */
    apr_size_t n, hi, len;      /* into bytes up to byte hi as the reader gets there */
    int nbrw, nplc, nflg, npair;
    int *brw;                   /* browsers: string indexes */
    int *plc;                   /* places: country and city string indexes */
    int *flg;                   /* links' flags */
    int *pair;                  /* gaps: kind, and tracker or string index */
    ab_code f[L_FIELDS];        /* the fields of links or visits */
    ab_code g[G_FIELDS];        /* the fields of gaps */
};

/* The characters of a bit stream as bytes (3 for 4, the last ones padded with zeros);
 * not 0 when one is not of the alphabet. */
static unsigned bits_load(unsigned char *o, const unsigned char *s, apr_size_t n)
{
    unsigned bad = 0;
    apr_size_t i;

    for (i = 0; i < n; i += 4, o += 3) {
        unsigned a = ab_b64_val[s[i]], b = 0, c = 0, d = 0;
        apr_uint32_t x;

        if (i + 4 <= n) {
            b = ab_b64_val[s[i + 1]];
            c = ab_b64_val[s[i + 2]];
            d = ab_b64_val[s[i + 3]];
        }
        else {
            b = i + 1 < n ? ab_b64_val[s[i + 1]] : 0;
            c = i + 2 < n ? ab_b64_val[s[i + 2]] : 0;
        }
        x = (a & 63) << 18 | (b & 63) << 12 | (c & 63) << 6 | (d & 63);
        bad |= a | b | c | d;
        o[0] = (unsigned char)(x >> 16);
        o[1] = (unsigned char)(x >> 8);
        o[2] = (unsigned char)x;
    }
    return bad & 64;
}

/* 64 bits of the stream from bit pos on, the first at the top; the 57 first at least are
 * the stream's (then its padding). */
AB_HOT apr_uint64_t bits_at(const unsigned char *buf, apr_uint64_t pos)
{
    const unsigned char *b = buf + (pos >> 3);
    apr_uint64_t w = (apr_uint64_t)b[0] << 56 | (apr_uint64_t)b[1] << 48
                     | (apr_uint64_t)b[2] << 40 | (apr_uint64_t)b[3] << 32
                     | (apr_uint64_t)b[4] << 24 | (apr_uint64_t)b[5] << 16
                     | (apr_uint64_t)b[6] << 8 | (apr_uint64_t)b[7];

    return w << (pos & 7);
}

/* The bits from b->pos on, again. */
AB_HOT void rd_fill(const unsigned char *buf, ab_rd *b)
{
    b->w = bits_at(buf, b->pos);
    b->avail = 64 - (int)(b->pos & 7);
}

/* Past n < 64 bits of w. */
AB_HOT void rd_skip(ab_rd *b, int n)
{
    b->w <<= n;
    b->avail -= n;
    b->pos += (apr_uint64_t)n;
}

/* An Exp-Golomb code longer than 57 bits at bit pos: its zeros in several reads, then up
 * to 64 bits. Sets *npos past it, or to err when it has too many zeros. */
static apr_uint64_t get_eg_long(const unsigned char *buf, apr_uint64_t pos, apr_uint64_t err,
                                int k, apr_uint64_t *npos)
{
    apr_uint64_t rest = 0;
    int z = 0, m, n;

    for (;;) {
        apr_uint64_t w = bits_at(buf, pos);

        n = w ? ab_clz(w) : 64;
        n = n < 32 ? n : 32;
        if (n == 0) {
            break;
        }
        pos += (apr_uint64_t)n;
        z += n;
        if (z > 64 - k || pos > err) {
            *npos = err;
            return 0;
        }
    }
    pos++;
    /* The z + k bits under the leading one. */
    for (m = z + k; m > 0; m -= n) {
        n = m > 32 ? 32 : m;
        rest = rest << n | bits_at(buf, pos) >> (64 - n);
        pos += (apr_uint64_t)n;
    }
    *npos = pos;
    m = z + k;
    return rest + (m == 64 ? 0 : (apr_uint64_t)1 << m) - ((apr_uint64_t)1 << k);
}

/* A field's value. */
AB_HOT apr_uint64_t get_val(const unsigned char *buf, ab_rd *b, const ab_code *c)
{
    apr_uint64_t y;
    int z, len;

    if (c->eg < 0) {
        apr_uint64_t h;
        int one;

        if (c->k == 0) {
            return 0;
        }
        if (b->avail < c->k) {
            rd_fill(buf, b);
        }
        /* Without a branch: which of the two lengths is as good as random. */
        y = b->w >> (64 - c->k);
        h = y >> 1;
        one = h < c->u;
        rd_skip(b, c->k - one);
        return one ? h : y - c->u;
    }
    /* The bits past avail are 0: a code that does not lie within avail needs a fill. */
    z = b->w ? ab_clz(b->w) : 64;
    len = 2 * z + 1 + c->eg;
    if (len > b->avail || len >= 64) {
        rd_fill(buf, b);
        z = b->w ? ab_clz(b->w) : 64;
        len = 2 * z + 1 + c->eg;
        if (len > b->avail || len >= 64) {
            apr_uint64_t np;

            /* Out of line, and not given b: b stays in registers. */
            y = get_eg_long(buf, b->pos, b->err, c->eg, &np);
            b->pos = np;
            b->avail = 0;
            b->w = 0;
            return y;
        }
    }
    y = (b->w << z >> (63 - z - c->eg)) - ((apr_uint64_t)1 << c->eg);
    rd_skip(b, len);
    return y;
}

AB_HOT apr_int64_t get_num(const unsigned char *buf, ab_rd *b, const ab_code *c)
{
    return add64(c->base, get_val(buf, b, c));
}

/* An index into its table; 0, and the entry refused, when it is outside (truncated
 * binary over the table never is). */
AB_HOT int get_ix(const unsigned char *buf, ab_rd *b, const ab_code *c)
{
    apr_uint64_t v = get_val(buf, b, c);

    if (c->eg >= 0 && v >= c->lim) {
        b->pos = b->err;
        b->avail = 0;
        return 0;
    }
    return (int)v;
}

/* An entry count: every entry takes at least one bit. */
static int get_entries(const char **s, const char *end, int *n)
{
    apr_uint64_t u;

    if (qrt_aggblob_get(s, end, &u) < 0 || u / 6 > (apr_uint64_t)(end - *s) || u > INT_MAX) {
        return -1;
    }
    *n = (int)u;
    return 0;
}

/* A table of the header: its size, then width (1 or 2) numbers an entry. The first is
 * below lim0, or zigzagged when sign (then any int); the second is below lim, or below
 * lim1 when sign and the first is 1 (gaps: the group of kind 1 is a tracker). */
static int get_tab(const char **s, const char *end, apr_pool_t *p, int width, int sign,
                   apr_uint64_t lim0, apr_uint64_t lim, apr_uint64_t lim1, int **out, int *n)
{
    int i;

    if (get_count(s, end, n) < 0) {
        return -1;
    }
    *out = apr_pcalloc(p, ((apr_size_t)*n + 1) * 2 * sizeof(int));
    for (i = 0; i < *n; i++) {
        apr_uint64_t a, b;

        if (qrt_aggblob_get(s, end, &a) < 0) {
            return -1;
        }
        if (sign) {
            apr_int64_t v = unzz(a);

            if (v < INT_MIN || v > INT_MAX) {
                return -1;
            }
            (*out)[width * i] = (int)v;
        }
        else if (a >= lim0) {
            return -1;
        }
        else {
            (*out)[width * i] = (int)a;
        }
        if (width == 2) {
            if (qrt_aggblob_get(s, end, &b) < 0
                || b >= (sign && (*out)[width * i] == 1 ? lim1 : lim)) {
                return -1;
            }
            (*out)[width * i + 1] = (int)b;
        }
    }
    return 0;
}

/* A field's code (see put_code); lim: its table's size (indexes). */
static int get_code(const char **s, const char *end, ab_code *c, apr_uint64_t lim, int number)
{
    apr_uint64_t e, n = lim;

    memset(c, 0, sizeof(*c));
    if (qrt_aggblob_get(s, end, &e) < 0 || e > 64) {
        return -1;
    }
    if (number && get_int(s, end, &c->base) < 0) {
        return -1;
    }
    if (e == 0 && number
        && (qrt_aggblob_get(s, end, &n) < 0 || n == 0 || n > APR_UINT64_C(0x100000000))) {
        return -1;
    }
    if (e == 0 && n > 0) {
        code_tb(c, n);
    }
    else {
        /* An index into an empty table is refused by the check of Exp-Golomb codes. */
        c->eg = e ? (int)e - 1 : 0;
    }
    c->lim = number ? APR_UINT64_MAX : lim;
    return 0;
}

/* The codes of n fields; lim: each one's table size (0: a number). */
static int get_codes(const char **s, const char *end, ab_code *c, const int *lim, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        if (get_code(s, end, &c[i], lim[i] < 0 ? 0 : (apr_uint64_t)lim[i], lim[i] < 0) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The rest of a header of version 2, after the tracker table: the entry counts, then for
 * each section with entries its tables and its fields' codes. */
static apr_status_t v2_open(qrt_aggblob_t *r, apr_pool_t *p)
{
    qrt_aggblob_v2_t *x = r->v2 = apr_pcalloc(p, sizeof(*x));
    const char **s = &r->s, *end = r->end;
    int links = r->format == 'L';

    if (get_entries(s, end, &r->left) < 0 || (links && get_entries(s, end, &x->ngaps) < 0)) {
        return APR_EINVAL;
    }
    if (r->version == 3) {
        apr_int64_t lb, v;
        apr_uint64_t bit;
        int i, total = 0;

        if (get_int(s, end, &lb) < 0 || qrt_aggblob_get(s, end, &x->lbits) < 0
            || get_count(s, end, &x->nruns) < 0 || x->nruns > x->ngaps) {
            return APR_EINVAL;
        }
        x->v3 = 1;
        r->t = add64(r->day_start, (apr_uint64_t)lb);
        x->rkind = apr_palloc(p, (x->nruns + 1) * sizeof(*x->rkind));
        x->rcount = apr_palloc(p, (x->nruns + 1) * sizeof(*x->rcount));
        x->rbase = apr_palloc(p, (x->nruns + 1) * sizeof(*x->rbase));
        x->rbit = apr_palloc(p, (x->nruns + 1) * sizeof(*x->rbit));
        for (i = 0; i < x->nruns; i++) {
            if (get_int(s, end, &v) < 0 || v < INT_MIN || v > INT_MAX
                || get_entries(s, end, &x->rcount[i]) < 0 || x->rcount[i] < 1
                || x->rcount[i] > x->ngaps - total) {
                return APR_EINVAL;
            }
            x->rkind[i] = (int)v;
            total += x->rcount[i];
            if (get_int(s, end, &v) < 0 || qrt_aggblob_get(s, end, &bit) < 0
                || bit < x->lbits || (i > 0 && bit < x->rbit[i - 1])) {
                return APR_EINVAL;
            }
            x->rbase[i] = add64(r->day_start, (apr_uint64_t)v);
            x->rbit[i] = bit;
        }
        if (total != x->ngaps) {
            return APR_EINVAL;
        }
    }
    if (r->left) {
        if (get_tab(s, end, p, 1, 0, r->nstr, 0, 0, &x->brw, &x->nbrw) < 0
            || get_tab(s, end, p, 2, 0, r->nstr, r->nstr, 0, &x->plc, &x->nplc) < 0
            || (links && get_tab(s, end, p, 1, 1, 0, 0, 0, &x->flg, &x->nflg) < 0)) {
            return APR_EINVAL;
        }
        /* Numbers have no table: -1. */
        if (links) {
            const int lim[L_FIELDS] = { -1, -1, x->nflg, r->ntrk, x->nplc, x->nbrw, -1 };

            if (get_codes(s, end, x->f, lim, L_FIELDS) < 0) {
                return APR_EINVAL;
            }
        }
        else {
            const int lim[V_FIELDS] = { -1, -1, r->ntrk, x->nplc, x->nbrw, -1 };

            if (get_codes(s, end, x->f, lim, V_FIELDS) < 0) {
                return APR_EINVAL;
            }
        }
    }
    if (x->ngaps) {
        int lim[G_FIELDS] = { 0, -1, -1, -1 };

        if (get_tab(s, end, p, 2, 1, 0, r->nstr, r->ntrk, &x->pair, &x->npair) < 0) {
            return APR_EINVAL;
        }
        lim[G_PAIR] = x->npair;
        if (get_codes(s, end, x->g, lim, G_FIELDS) < 0) {
            return APR_EINVAL;
        }
    }
    /* The rest is the bit stream. */
    {
        apr_size_t n = (apr_size_t)(end - *s), len = (n + 3) / 4 * 3;

#ifdef AB_ASAN
        x->buf = malloc(len + AB_PAD);
        if (!x->buf) {
            return APR_ENOMEM;
        }
        apr_pool_cleanup_register(p, x->buf, ab_free, apr_pool_cleanup_null);
#else
        x->buf = apr_palloc(p, len + AB_PAD);
#endif
        memset(x->buf + len, 0, AB_PAD);
        x->src = (const unsigned char *)*s;
        x->n = n;
        x->len = len;
        if (x->v3) {
            /* Readers of version 3 may stop early or jump: no more than they read. */
            x->hi = 0;
        }
        else {
            x->bad = bits_load(x->buf, x->src, n) != 0;
            x->hi = len;
        }
        x->nbits = (apr_uint64_t)n * 6;
        x->rd.err = x->nbits + 1;
        *s = end;
        if (x->lbits > x->nbits || (x->nruns && x->rbit[x->nruns - 1] > x->nbits)) {
            return APR_EINVAL;
        }
    }
    return APR_SUCCESS;
}

apr_status_t qrt_aggblob_open(qrt_aggblob_t *r, apr_pool_t *p, const char *data,
                              apr_int64_t day_start)
{
    apr_int64_t prev = 0;
    int i;

    memset(r, 0, sizeof(*r));
    if (!data || (data[0] != 'L' && data[0] != 'V' && data[0] != 'C')
        || (data[1] != '1' && (data[1] != '2' || data[0] == 'C')
            && (data[1] != '3' || data[0] != 'L'))) {
        return APR_EINVAL;
    }
    r->format = data[0];
    r->version = data[1] - '0';
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
        r->trk[i] = prev = add64(prev, (apr_uint64_t)d);
    }
    if (r->version >= 2) {
        return v2_open(r, p);
    }
    return get_count(&r->s, r->end, &r->left) < 0 ? APR_EINVAL : APR_SUCCESS;
}

/* Version 2 at the end of its last section: every bit read but the last character's
 * padding, zeros. */
/* Version 3: the bytes an entry at bit pos may read (AB_PAD past its start) turned from
 * the characters, a few KB at a time from where the last turning ended. */
static void v3_load(qrt_aggblob_v2_t *x, apr_uint64_t pos)
{
    apr_size_t need = (apr_size_t)(pos >> 3) + AB_PAD, from, to;

    if (need <= x->hi || x->hi >= x->len) {
        return;
    }
    if (need < x->hi + 3072) {
        need = x->hi + 3072;
    }
    from = x->hi / 3 * 4;
    to = (need + 2) / 3 * 4;
    if (to > x->n) {
        to = x->n;
    }
    x->bad |= bits_load(x->buf + x->hi, x->src + from, to - from) != 0;
    x->hi = to == x->n ? x->len : to / 4 * 3;
}

static int v2_end(qrt_aggblob_t *r)
{
    qrt_aggblob_v2_t *x = r->v2;

    if (x->v3) {
        v3_load(x, x->rd.pos);
    }
    apr_uint64_t left = x->nbits - x->rd.pos;

    return !x->bad && x->rd.pos <= x->nbits && left < 6
           && !(left && bits_at(x->buf, x->rd.pos) >> (64 - left)) ? 0 : -1;
}

/* An entry's fields read through b: -1 when they ran past the stream or did not fit
 * their tables, else the reader moves past them. */
AB_HOT int v2_took(qrt_aggblob_t *r, const ab_rd *b)
{
    qrt_aggblob_v2_t *x = r->v2;

    if (b->pos > x->nbits || x->bad) {
        return -1;
    }
    x->rd.w = b->w;
    x->rd.pos = b->pos;
    x->rd.avail = b->avail;
    r->left--;
    return 0;
}

static int v2_link(qrt_aggblob_t *r, qrt_aggblob_link_t *out)
{
    qrt_aggblob_v2_t *x = r->v2;
    const unsigned char *buf = x->buf;
    ab_rd b;
    apr_int64_t dt, gap;
    int f, pl, br;

    if (x->v3) {
        v3_load(x, x->rd.pos);
    }
    b = x->rd;

    dt = get_num(buf, &b, &x->f[L_DT]);
    gap = get_num(buf, &b, &x->f[L_TP]);
    f = get_ix(buf, &b, &x->f[L_FLAGS]);
    out->ti = get_ix(buf, &b, &x->f[L_TI]);
    pl = get_ix(buf, &b, &x->f[L_PLACE]);
    br = get_ix(buf, &b, &x->f[L_BROWSER]);
    out->n = get_num(buf, &b, &x->f[L_N]);
    if (v2_took(r, &b) < 0) {
        return -1;
    }
    if (x->v3) {
        out->p = r->t = add64(r->t, (apr_uint64_t)dt);
        out->t = add64(r->day_start, (apr_uint64_t)gap);
    }
    else {
        out->t = r->t = add64(r->t, (apr_uint64_t)dt);
        out->p = add64(out->t, -(apr_uint64_t)gap);
    }
    out->flags = x->flg[f];
    out->bi = x->brw[br];
    out->ci = x->plc[2 * pl];
    out->yi = x->plc[2 * pl + 1];
    return 1;
}

static int v2_gap(qrt_aggblob_t *r, qrt_aggblob_gap_t *out)
{
    qrt_aggblob_v2_t *x = r->v2;
    const unsigned char *buf = x->buf;
    ab_rd b;
    apr_int64_t dt, gap;
    int pr;

    if (x->v3) {
        if (x->run_left == 0) {
            /* The next kind's run: its previous times from its first on. */
            if (x->only || ++x->run >= x->nruns || x->rbit[x->run] != x->rd.pos) {
                return -1;
            }
            x->run_left = x->rcount[x->run];
            r->t = x->rbase[x->run];
        }
        v3_load(x, x->rd.pos);
    }
    b = x->rd;

    pr = get_ix(buf, &b, &x->g[G_PAIR]);
    dt = get_num(buf, &b, &x->g[G_DT]);
    gap = get_num(buf, &b, &x->g[G_TP]);
    out->n = get_num(buf, &b, &x->g[G_N]);
    if (v2_took(r, &b) < 0) {
        return -1;
    }
    out->kind = x->pair[2 * pr];
    if (x->v3) {
        if (out->kind != x->rkind[x->run]) {
            return -1;
        }
        x->run_left--;
        out->p = r->t = add64(r->t, (apr_uint64_t)dt);
        out->t = add64(r->day_start, (apr_uint64_t)gap);
    }
    else {
        out->t = r->t = add64(r->t, (apr_uint64_t)dt);
        out->p = add64(out->t, -(apr_uint64_t)gap);
    }
    out->ti = out->kind == 1 ? x->pair[2 * pr + 1] : -1;
    out->si = out->kind == 1 ? -1 : x->pair[2 * pr + 1];
    return 1;
}

static int v2_visit(qrt_aggblob_t *r, qrt_aggblob_visit_t *out)
{
    qrt_aggblob_v2_t *x = r->v2;
    const unsigned char *buf = x->buf;
    ab_rd b = x->rd;
    apr_int64_t dt;
    int pl, br;

    dt = get_num(buf, &b, &x->f[V_DT]);
    out->click = get_num(buf, &b, &x->f[V_CLICK]) != 0;
    out->ti = get_ix(buf, &b, &x->f[V_TI]);
    pl = get_ix(buf, &b, &x->f[V_PLACE]);
    br = get_ix(buf, &b, &x->f[V_BROWSER]);
    out->n = get_num(buf, &b, &x->f[V_N]);
    if (v2_took(r, &b) < 0) {
        return -1;
    }
    out->t = r->t = add64(r->t, (apr_uint64_t)dt);
    out->bi = x->brw[br];
    out->ci = x->plc[2 * pl];
    out->yi = x->plc[2 * pl + 1];
    return 1;
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
        if (r->version >= 2) {
            r->left = r->v2->ngaps;
            r->v2->run = -1;
            r->v2->run_left = 0;
            return 0;
        }
        return get_count(&r->s, r->end, &r->left) < 0 ? -1 : 0;
    }
    if (r->version >= 2) {
        return v2_link(r, out);
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
    out->t = r->t = add64(r->t, (apr_uint64_t)dt);
    out->p = add64(out->t, -(apr_uint64_t)gap);
    out->flags = (int)flags;
    return 1;
}

int qrt_aggblob_by_p(const qrt_aggblob_t *r)
{
    return r->format == 'L' && r->version == 3;
}

int qrt_aggblob_skip_links(qrt_aggblob_t *r)
{
    qrt_aggblob_link_t l;
    int rc;

    if (r->format != 'L' || r->section != 0) {
        return r->format == 'L' ? 0 : -1;
    }
    if (r->version == 3) {
        qrt_aggblob_v2_t *x = r->v2;

        x->rd.pos = x->lbits;
        x->rd.w = 0;
        x->rd.avail = 0;
        /* The bytes are turned from the gaps' first group of 3 on (again, or past the
         * links not read). */
        x->hi = (apr_size_t)(x->lbits >> 3) / 3 * 3;
        r->left = 0;
        return 0;
    }
    while ((rc = qrt_aggblob_next_link(r, &l)) > 0) {
    }
    /* The gaps' section is opened: the next link call returns 0 again. */
    return rc;
}

int qrt_aggblob_gaps_of(qrt_aggblob_t *r, int kind)
{
    qrt_aggblob_v2_t *x;
    int i;

    if (r->format != 'L' || r->version != 3) {
        return r->format == 'L' ? 0 : -1;
    }
    x = r->v2;
    r->section = 1;
    r->left = 0;
    x->only = 1;
    x->run_left = 0;
    for (i = 0; i < x->nruns; i++) {
        if (x->rkind[i] == kind) {
            x->run = i;
            x->run_left = r->left = x->rcount[i];
            r->t = x->rbase[i];
            x->rd.pos = x->rbit[i];
            x->rd.w = 0;
            x->rd.avail = 0;
            x->hi = (apr_size_t)(x->rbit[i] >> 3) / 3 * 3;
            break;
        }
    }
    return 0;
}

unsigned qrt_aggblob_gap_kinds(const qrt_aggblob_t *r)
{
    unsigned kinds = 0;
    int i;

    if (r->format != 'L' || r->version < 2) {
        return ~0u;
    }
    for (i = 0; i < r->v2->npair; i++) {
        int k = r->v2->pair[2 * i];

        kinds |= k >= 0 && k < 32 ? 1u << k : ~0u;
    }
    return kinds;
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
        return r->version >= 2 && !r->v2->only ? v2_end(r) : 0;
    }
    if (r->version >= 2) {
        return v2_gap(r, out);
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
    out->t = r->t = add64(r->t, (apr_uint64_t)dt);
    out->p = add64(out->t, -(apr_uint64_t)gap);
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
        return r->version == 2 ? v2_end(r) : 0;
    }
    if (r->version == 2) {
        return v2_visit(r, out);
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
    out->t = r->t = add64(r->t, (apr_uint64_t)dt);
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
    out->grp = r->grp = add64(r->grp, (apr_uint64_t)d);
    return 1;
}
