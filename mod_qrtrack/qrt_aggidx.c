/* qrt_aggidx: one kind's links into a sealed day from earlier days (see qrt_aggidx.h). */
#include <string.h>
#include <apr_strings.h>
#include "qrt_agg.h"
#include "qrt_aggblob.h"
#include "qrt_aggidx.h"

#define IX_MAGIC 0x32584951u        /* "QIX2" */
#define IX_BLOCK 256                /* entries a block at most */
#define IX_MAX_ENT (1 << 20)        /* entries an index at most (else the value is decoded) */

/* The head of an index; then gid[ngroups], ghash[ngroups], soff[ngroups], the blocks'
 * base[nblk] (the previous time of their first entry, from the day's start) and
 * first[nblk] (their first entry), each entry's off (from its block's base), gi, and n
 * when some count is not 1 (each array padded to 8 bytes), the strings. A block holds
 * at most IX_BLOCK entries within 65,535 seconds of its first. */
typedef struct {
    apr_uint32_t magic;
    apr_int32_t kind;
    apr_int64_t day_start;
    apr_int32_t ngroups, nent, nblk, has_n, strbytes, pad;
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

static apr_size_t ix_size(int ngroups, int nent, int nblk, int has_n, apr_size_t strbytes)
{
    return sizeof(ix_head) + (apr_size_t)ngroups * 16 + PAD8((apr_size_t)ngroups * 4)
           + 2 * PAD8((apr_size_t)nblk * 4) + (has_n ? 3 : 2) * PAD8((apr_size_t)nent * 2)
           + strbytes;
}

/* Of group g of kind's map: its string's index + 1, 0 when it is not a string. */
static int ix_str(int kind, int g, int ntrk)
{
    if (kind == QRT_AGG_G) {
        return g >= ntrk ? g - ntrk + 1 : 0;
    }
    return kind == QRT_AGG_B || kind == QRT_AGG_C || kind == QRT_AGG_Y ? g + 1 : 0;
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
    int *map, nmap, ngroups = 0, nent = 0, nblk = 0, has_n = 0, i, j, k, b, rc;
    int *order;
    apr_size_t strbytes = 0, size, off;
    char *buf, *strs;
    apr_int64_t *gid, *dps, base = 0;
    apr_uint64_t *ghash;
    apr_int32_t *soff, *bbase, *bfirst;
    apr_uint16_t *eoff, *gi, *gn, *egi, *en;

    if (kind < QRT_AGG_T || kind > QRT_AGG_G) {
        return APR_EINVAL;
    }
    if (qrt_aggblob_open(&r, p, data, day_start) != APR_SUCCESS) {
        return APR_EINVAL;
    }
    if (!qrt_aggblob_by_p(&r)) {
        return APR_ENOTIMPL;
    }
    links = apr_array_make(p, 256, sizeof(ix_ent));
    gaps = apr_array_make(p, 64, sizeof(ix_ent));
    /* (kind G: its links count for their tracker's tags, its gaps for one tag each:
     * groups 0 .. ntrk - 1 are trackers, the next the strings) */
    nmap = by_tracker ? r.ntrk : kind == QRT_AGG_G ? r.ntrk + r.nstr : r.nstr;
    while ((rc = qrt_aggblob_next_link(&r, &l)) > 0 && l.p < day_start) {
        int g = kind == QRT_AGG_A ? 0 : by_tracker || kind == QRT_AGG_G ? l.ti
                : kind == QRT_AGG_B ? l.bi : kind == QRT_AGG_C ? l.ci : l.yi;

        if (kind != QRT_AGG_A && !(l.flags & flag[kind])) {
            continue;
        }
        if (l.n < 0 || (kind != QRT_AGG_A && (g < 0 || g >= (kind == QRT_AGG_G ? r.ntrk
                                                                     : nmap)))) {
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
            int g = kind == QRT_AGG_T ? gp.ti : kind == QRT_AGG_G ? r.ntrk + gp.si : gp.si;

            if (gp.kind != kind) {
                continue;
            }
            if (gp.n < 0 || g < 0 || g >= nmap || (kind == QRT_AGG_G && gp.si < 0)) {
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

            if (e->p < day_start - APR_INT64_C(2147483647)) {
                return APR_ENOTIMPL;
            }
            if (map[g] < 0) {
                order[ngroups] = g;
                map[g] = ngroups++;
                if (ix_str(kind, g, r.ntrk)) {
                    strbytes += strlen(r.str[ix_str(kind, g, r.ntrk) - 1]) + 1;
                }
            }
            if (e->n / 65535 >= IX_MAX_ENT - nent) {
                return APR_ENOTIMPL;
            }
            nent += (int)(e->n / 65535 + (e->n % 65535 != 0));
            has_n |= e->n != 1;
        }
    }
    if (ngroups > 65535) {
        return APR_ENOTIMPL;
    }
    /* The entries, links and gaps merged by previous time (each is by previous time),
     * counts of more than 65,535 split: their previous times, groups and counts, and
     * where each block starts. */
    dps = apr_palloc(p, ((apr_size_t)nent + 1) * sizeof(*dps));
    egi = apr_palloc(p, ((apr_size_t)nent + 1) * sizeof(*egi));
    en = apr_palloc(p, ((apr_size_t)nent + 1) * sizeof(*en));
    bfirst = apr_palloc(p, ((apr_size_t)nent + 1) * sizeof(*bfirst));
    for (i = j = k = 0; i < links->nelts || j < gaps->nelts;) {
        int link = j >= gaps->nelts || (i < links->nelts
                                        && APR_ARRAY_IDX(links, i, ix_ent).p
                                           <= APR_ARRAY_IDX(gaps, j, ix_ent).p);
        ix_ent *e = link ? &APR_ARRAY_IDX(links, i++, ix_ent) : &APR_ARRAY_IDX(gaps, j++, ix_ent);
        apr_int64_t left = e->n;
        int g = map[kind == QRT_AGG_A ? nmap : e->g];

        do {
            apr_int64_t n = left > 65535 ? 65535 : left;

            dps[k] = e->p - day_start;
            egi[k] = (apr_uint16_t)g;
            en[k] = (apr_uint16_t)n;
            if (k == 0 || dps[k] - base > 65535 || k - bfirst[nblk - 1] >= IX_BLOCK) {
                bfirst[nblk++] = k;
                base = dps[k];
            }
            k++;
            left -= n;
        } while (left > 0);
    }
    size = ix_size(ngroups, nent, nblk, has_n, PAD8(strbytes));
    buf = apr_pcalloc(p, size);
    h = (ix_head *)buf;
    h->magic = IX_MAGIC;
    h->kind = kind;
    h->day_start = day_start;
    h->ngroups = ngroups;
    h->nent = nent;
    h->nblk = nblk;
    h->has_n = has_n;
    h->strbytes = (apr_int32_t)PAD8(strbytes);
    off = sizeof(*h);
    gid = (apr_int64_t *)(buf + off);
    off += (apr_size_t)ngroups * 8;
    ghash = (apr_uint64_t *)(buf + off);
    off += (apr_size_t)ngroups * 8;
    soff = (apr_int32_t *)(buf + off);
    off += PAD8((apr_size_t)ngroups * 4);
    bbase = (apr_int32_t *)(buf + off);
    off += PAD8((apr_size_t)nblk * 4);
    memcpy(buf + off, bfirst, (apr_size_t)nblk * 4);
    bfirst = (apr_int32_t *)(buf + off);
    off += PAD8((apr_size_t)nblk * 4);
    eoff = (apr_uint16_t *)(buf + off);
    off += PAD8((apr_size_t)nent * 2);
    gi = (apr_uint16_t *)(buf + off);
    off += PAD8((apr_size_t)nent * 2);
    gn = has_n ? (apr_uint16_t *)(buf + off) : NULL;
    off += has_n ? PAD8((apr_size_t)nent * 2) : 0;
    strs = buf + off;
    strbytes = 0;
    for (i = 0; i < ngroups; i++) {
        int g = order[i], si = ix_str(kind, g, r.ntrk);

        if (si) {
            const char *str = r.str[si - 1];
            apr_size_t n = strlen(str);

            soff[i] = (apr_int32_t)strbytes;
            ghash[i] = qrt_aggidx_hash(str);
            memcpy(strs + strbytes, str, n + 1);
            strbytes += n + 1;
        }
        else if (by_tracker || kind == QRT_AGG_G) {
            gid[i] = r.trk[g];
            soff[i] = -1;
        }
    }
    for (i = 0; i < nblk; i++) {
        bbase[i] = (apr_int32_t)dps[bfirst[i]];
    }
    /* Each entry's offset from its block's base. */
    for (b = k = 0; k < nent; k++) {
        while (b + 1 < nblk && bfirst[b + 1] <= k) {
            b++;
        }
        eoff[k] = (apr_uint16_t)(dps[k] - bbase[b]);
    }
    memcpy(gi, egi, (apr_size_t)nent * 2);
    if (gn) {
        memcpy(gn, en, (apr_size_t)nent * 2);
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
    int i, str;

    if (len < sizeof(*h) || ((apr_uintptr_t)ix & 7) || h->magic != IX_MAGIC
        || h->ngroups < 0 || h->nent < 0 || h->nblk < 0 || h->nblk > h->nent
        || h->strbytes < 0
        || ix_size(h->ngroups, h->nent, h->nblk, h->has_n, (apr_size_t)h->strbytes) != len) {
        return APR_EINVAL;
    }
    x->day_start = h->day_start;
    x->kind = h->kind;
    x->ngroups = h->ngroups;
    x->nent = h->nent;
    x->nblk = h->nblk;
    x->gid = (const apr_int64_t *)(ix + off);
    off += (apr_size_t)h->ngroups * 8;
    x->ghash = (const apr_uint64_t *)(ix + off);
    off += (apr_size_t)h->ngroups * 8;
    soff = (const apr_int32_t *)(ix + off);
    off += PAD8((apr_size_t)h->ngroups * 4);
    x->base = (const apr_int32_t *)(ix + off);
    off += PAD8((apr_size_t)h->nblk * 4);
    x->first = (const apr_int32_t *)(ix + off);
    off += PAD8((apr_size_t)h->nblk * 4);
    x->off = (const apr_uint16_t *)(ix + off);
    off += PAD8((apr_size_t)h->nent * 2);
    x->gi = (const apr_uint16_t *)(ix + off);
    off += PAD8((apr_size_t)h->nent * 2);
    x->n = h->has_n ? (const apr_uint16_t *)(ix + off) : NULL;
    off += h->has_n ? PAD8((apr_size_t)h->nent * 2) : 0;
    for (i = 0; i < h->nblk; i++) {
        if (x->first[i] < 0 || x->first[i] >= h->nent || (i && x->first[i] <= x->first[i - 1])
            || (i == 0 && x->first[0] != 0)) {
            return APR_EINVAL;
        }
    }
    for (i = 0; i < h->nent; i++) {
        if (x->gi[i] >= h->ngroups) {
            return APR_EINVAL;
        }
    }
    gstr = apr_palloc(p, ((apr_size_t)h->ngroups + 1) * sizeof(*gstr));
    str = x->kind == QRT_AGG_B || x->kind == QRT_AGG_C || x->kind == QRT_AGG_Y;
    for (i = 0; i < h->ngroups; i++) {
        if (x->kind == QRT_AGG_G && soff[i] == -1) {
            gstr[i] = NULL;         /* a tracker */
            continue;
        }
        if ((str || x->kind == QRT_AGG_G) && (soff[i] < 0 || soff[i] >= h->strbytes)) {
            return APR_EINVAL;
        }
        gstr[i] = str || x->kind == QRT_AGG_G ? ix + off + soff[i] : "";
    }
    if (h->strbytes && ix[len - 1] != '\0') {
        return APR_EINVAL;
    }
    x->gstr = gstr;
    return APR_SUCCESS;
}

void qrt_aggidx_sum(const qrt_aggidx_t *x, apr_int64_t p0, apr_int64_t p1, apr_int64_t *sum)
{
    apr_int64_t lo = p0 - x->day_start, hi = p1 - x->day_start;
    int b, l = 0, r = x->nblk, k;

    if (x->nblk == 0 || hi < x->base[0]) {
        return;
    }
    /* the last block whose first entry is before lo (entries before it are all) */
    while (r - l > 1) {
        int mid = l + (r - l) / 2;

        if (x->base[mid] < lo) {
            l = mid;
        }
        else {
            r = mid;
        }
    }
    for (b = l; b < x->nblk; b++) {
        apr_int64_t base = x->base[b];
        int end = b + 1 < x->nblk ? x->first[b + 1] : x->nent;

        if (base > hi) {
            break;
        }
        for (k = x->first[b]; k < end; k++) {
            apr_int64_t dp = base + x->off[k];

            if (dp < lo) {
                continue;
            }
            if (dp > hi) {
                return;
            }
            sum[x->gi[k]] += x->n ? x->n[k] : 1;
        }
    }
}
