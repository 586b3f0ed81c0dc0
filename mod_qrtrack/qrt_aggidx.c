/* qrt_aggidx: one kind's links into a sealed day from earlier days (see qrt_aggidx.h). */
#include <string.h>
#include <apr_strings.h>
#include "qrt_agg.h"
#include "qrt_aggblob.h"
#include "qrt_aggidx.h"

#define IX_MAGIC 0x31584951u        /* "QIX1" */

/* The head of an index; then gid[ngroups], ghash[ngroups], soff[ngroups] (padded to
 * 8 bytes), dp[nent] (padded), gi[nent], n[nent] (padded), the strings. */
typedef struct {
    apr_uint32_t magic;
    apr_int32_t kind;
    apr_int64_t day_start;
    apr_int32_t ngroups, nent, strbytes, pad;
} ix_head;

typedef struct {
    apr_int64_t p, n;
    int g;                          /* the value's tracker or string index */
} ix_ent;

#define PAD8(n) (((n) + 7) & ~(apr_size_t)7)

apr_uint64_t qrt_aggidx_hash(const char *s)
{
    apr_uint64_t h = APR_UINT64_C(0xCBF29CE484222325);

    for (; *s; s++) {
        h = (h ^ (unsigned char)*s) * APR_UINT64_C(0x100000001B3);
    }
    return h;
}

static apr_size_t ix_size(int ngroups, int nent, apr_size_t strbytes)
{
    return sizeof(ix_head) + (apr_size_t)ngroups * 16 + PAD8((apr_size_t)ngroups * 4)
           + PAD8((apr_size_t)nent * 4) + PAD8((apr_size_t)nent * 4) + strbytes;
}

static void ix_push(apr_array_header_t *a, apr_int64_t p, apr_int64_t n, int g)
{
    ix_ent *e;

    if (n == 0) {
        return;
    }
    e = apr_array_push(a);
    e->p = p;
    e->n = n;
    e->g = g;
}

apr_status_t qrt_aggidx_build(apr_pool_t *p, const char *data, apr_int64_t day_start,
                              int kind, const char **out, apr_size_t *len)
{
    static const int flag[] = { 0, QRT_AGG_F_T, 0, QRT_AGG_F_B, QRT_AGG_F_C, QRT_AGG_F_Y,
                                QRT_AGG_F_G };
    int by_tracker = kind == QRT_AGG_T;
    apr_array_header_t *links, *gaps;
    qrt_aggblob_t r;
    qrt_aggblob_link_t l;
    qrt_aggblob_gap_t gp;
    ix_head *h;
    int *map, nmap, ngroups = 0, nent = 0, i, j, k, rc;
    int *order;
    apr_size_t strbytes = 0, size, off;
    char *buf, *strs;
    apr_int64_t *gid;
    apr_uint64_t *ghash;
    apr_int32_t *soff, *dp;
    apr_uint16_t *gi, *gn;

    if (kind < QRT_AGG_T || kind > QRT_AGG_G) {
        return APR_EINVAL;
    }
    if (kind == QRT_AGG_G) {
        /* (its links count for their tracker's tags, its gaps for one tag each) */
        return APR_ENOTIMPL;
    }
    if (qrt_aggblob_open(&r, p, data, day_start) != APR_SUCCESS) {
        return APR_EINVAL;
    }
    if (!qrt_aggblob_by_p(&r)) {
        return APR_ENOTIMPL;
    }
    links = apr_array_make(p, 256, sizeof(ix_ent));
    gaps = apr_array_make(p, 64, sizeof(ix_ent));
    nmap = by_tracker ? r.ntrk : r.nstr;
    while ((rc = qrt_aggblob_next_link(&r, &l)) > 0 && l.p < day_start) {
        int g = kind == QRT_AGG_A ? 0 : by_tracker ? l.ti
                : kind == QRT_AGG_B ? l.bi : kind == QRT_AGG_C ? l.ci : l.yi;

        if (kind != QRT_AGG_A && !(l.flags & flag[kind])) {
            continue;
        }
        if (l.n < 0 || (kind != QRT_AGG_A && (g < 0 || g >= nmap))) {
            return APR_EINVAL;
        }
        ix_push(links, l.p, l.n, g);
    }
    if (rc < 0) {
        return APR_EINVAL;
    }
    if (kind != QRT_AGG_A && (qrt_aggblob_gap_kinds(&r) >> kind & 1)) {
        if (qrt_aggblob_gaps_of(&r, kind) < 0) {
            return APR_EINVAL;
        }
        while ((rc = qrt_aggblob_next_gap(&r, &gp)) > 0 && gp.p < day_start) {
            int g = kind == QRT_AGG_T ? gp.ti : gp.si;

            if (gp.kind != kind) {
                continue;
            }
            if (gp.n < 0 || g < 0 || g >= nmap) {
                return APR_EINVAL;
            }
            ix_push(gaps, gp.p, gp.n, g);
        }
        if (rc < 0) {
            return APR_EINVAL;
        }
    }
    /* The groups used, numbered in order of first use; the entries, counts of more
     * than 65,535 split. */
    map = apr_palloc(p, ((apr_size_t)nmap + 1) * sizeof(*map));
    for (i = 0; i <= nmap; i++) {
        map[i] = -1;
    }
    order = apr_palloc(p, ((apr_size_t)nmap + 1) * sizeof(*order));
    for (k = 0; k < 2; k++) {
        apr_array_header_t *a = k ? gaps : links;

        for (i = 0; i < a->nelts; i++) {
            ix_ent *e = &APR_ARRAY_IDX(a, i, ix_ent);
            int g = kind == QRT_AGG_A ? nmap : e->g;

            if (e->p - day_start < -APR_INT64_C(2147483647)) {
                return APR_ENOTIMPL;
            }
            if (map[g] < 0) {
                order[ngroups] = g;
                map[g] = ngroups++;
                if (!by_tracker && kind != QRT_AGG_A) {
                    strbytes += strlen(r.str[g]) + 1;
                }
            }
            nent += (int)((e->n + 65534) / 65535);
        }
    }
    if (ngroups > 65535) {
        return APR_ENOTIMPL;
    }
    size = ix_size(ngroups, nent, PAD8(strbytes));
    buf = apr_pcalloc(p, size);
    h = (ix_head *)buf;
    h->magic = IX_MAGIC;
    h->kind = kind;
    h->day_start = day_start;
    h->ngroups = ngroups;
    h->nent = nent;
    h->strbytes = (apr_int32_t)PAD8(strbytes);
    off = sizeof(*h);
    gid = (apr_int64_t *)(buf + off);
    off += (apr_size_t)ngroups * 8;
    ghash = (apr_uint64_t *)(buf + off);
    off += (apr_size_t)ngroups * 8;
    soff = (apr_int32_t *)(buf + off);
    off += PAD8((apr_size_t)ngroups * 4);
    dp = (apr_int32_t *)(buf + off);
    off += PAD8((apr_size_t)nent * 4);
    gi = (apr_uint16_t *)(buf + off);
    gn = gi + nent;
    off += PAD8((apr_size_t)nent * 4);
    strs = buf + off;
    strbytes = 0;
    for (i = 0; i < ngroups; i++) {
        int g = order[i];

        if (by_tracker) {
            gid[i] = r.trk[g];
        }
        else if (kind != QRT_AGG_A) {
            apr_size_t n = strlen(r.str[g]);

            soff[i] = (apr_int32_t)strbytes;
            ghash[i] = qrt_aggidx_hash(r.str[g]);
            memcpy(strs + strbytes, r.str[g], n + 1);
            strbytes += n + 1;
        }
    }
    /* The links and the gaps, each by previous time, merged. */
    for (i = j = k = 0; i < links->nelts || j < gaps->nelts;) {
        ix_ent *e = j >= gaps->nelts || (i < links->nelts
                                         && APR_ARRAY_IDX(links, i, ix_ent).p
                                            <= APR_ARRAY_IDX(gaps, j, ix_ent).p)
                    ? &APR_ARRAY_IDX(links, i++, ix_ent) : &APR_ARRAY_IDX(gaps, j++, ix_ent);
        apr_int64_t left = e->n;
        int g = map[kind == QRT_AGG_A ? nmap : e->g];

        do {
            apr_int64_t n = left > 65535 ? 65535 : left;

            dp[k] = (apr_int32_t)(e->p - day_start);
            gi[k] = (apr_uint16_t)g;
            gn[k] = (apr_uint16_t)n;
            k++;
            left -= n;
        } while (left > 0);
    }
    *out = buf;
    *len = size;
    return APR_SUCCESS;
}

apr_status_t qrt_aggidx_view(qrt_aggidx_t *x, apr_pool_t *p, const char *ix, apr_size_t len)
{
    const ix_head *h = (const ix_head *)ix;
    apr_size_t off = sizeof(*h);
    const apr_int32_t *soff;
    const char **gstr;
    int i;

    if (len < sizeof(*h) || ((apr_uintptr_t)ix & 7) || h->magic != IX_MAGIC
        || h->ngroups < 0 || h->nent < 0 || h->strbytes < 0
        || ix_size(h->ngroups, h->nent, (apr_size_t)h->strbytes) != len) {
        return APR_EINVAL;
    }
    x->day_start = h->day_start;
    x->kind = h->kind;
    x->ngroups = h->ngroups;
    x->nent = h->nent;
    x->gid = (const apr_int64_t *)(ix + off);
    off += (apr_size_t)h->ngroups * 8;
    x->ghash = (const apr_uint64_t *)(ix + off);
    off += (apr_size_t)h->ngroups * 8;
    soff = (const apr_int32_t *)(ix + off);
    off += PAD8((apr_size_t)h->ngroups * 4);
    x->dp = (const apr_int32_t *)(ix + off);
    off += PAD8((apr_size_t)h->nent * 4);
    x->gi = (const apr_uint16_t *)(ix + off);
    x->n = x->gi + h->nent;
    off += PAD8((apr_size_t)h->nent * 4);
    gstr = apr_palloc(p, ((apr_size_t)h->ngroups + 1) * sizeof(*gstr));
    for (i = 0; i < h->ngroups; i++) {
        int str = x->kind == QRT_AGG_B || x->kind == QRT_AGG_C || x->kind == QRT_AGG_Y;

        if (str && (soff[i] < 0 || soff[i] >= h->strbytes)) {
            return APR_EINVAL;
        }
        gstr[i] = str ? ix + off + soff[i] : "";
    }
    if (h->strbytes && ix[len - 1] != '\0') {
        return APR_EINVAL;
    }
    x->gstr = gstr;
    return APR_SUCCESS;
}

int qrt_aggidx_from(const qrt_aggidx_t *x, apr_int64_t t)
{
    int lo = 0, hi = x->nent;

    if (t - x->day_start > 0) {
        return x->nent;
    }
    if (t - x->day_start < -APR_INT64_C(2147483647)) {
        return 0;
    }
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;

        if (x->dp[mid] < (apr_int32_t)(t - x->day_start)) {
            lo = mid + 1;
        }
        else {
            hi = mid;
        }
    }
    return lo;
}
