/* qrt_vradix: distinct visitors per group, spread by visitor as added (qrt_vradix.h). */
#include <stdlib.h>
#include <string.h>

#include "qrt_clock.h"
#include "qrt_spare.h"
#include "qrt_vradix.h"

/* The parts: the high VR_PART_BITS bits of a visitor's hash. A value is the hash shifted
 * left by as many bits, which the group takes: the part tells the bits shifted out, so
 * the value and its part tell the pair exactly. 1,024 parts: the tails being written (a
 * cache line each, 64 KB) stay in the second cache while visits are added (twice as many
 * parts made the adds half as slow again), and a part of a count of 6 M visits is counted
 * through a table of about 200 KB. */
#define VR_PART_BITS QRT_VRADIX_GROUP_BITS
#define VR_PARTS ((apr_size_t)1 << VR_PART_BITS)
#define VR_GROUP_MASK ((apr_uint64_t)QRT_VRADIX_GROUPS - 1)
/* A part's values go in chunks of VR_CHUNK, linked, from segments of VR_SEG values. */
#define VR_CHUNK 256
#define VR_SEG ((apr_size_t)1 << 20)
#define VR_SEG_CHUNKS (VR_SEG / VR_CHUNK)
#define VR_NONE 0xFFFFFFFFu

struct qrt_vradix_t {
    apr_size_t n, max;
    apr_uint64_t **segs;            /* segments of VR_SEG values */
    apr_size_t nsegs, segcap;
    apr_uint32_t nchunks;           /* chunks handed out (chunk c: segment c / VR_SEG_CHUNKS) */
    apr_uint32_t *next;             /* the chunk after chunk c in its part (VR_NONE: last) */
    apr_size_t nextcap;
    apr_uint64_t *tail[VR_PARTS];   /* where a part's next value goes */
    apr_uint32_t fill[VR_PARTS];    /* values in its last chunk (VR_CHUNK: full, or none) */
    apr_uint32_t head[VR_PARTS];    /* its first chunk, VR_NONE for none */
    apr_uint32_t last[VR_PARTS];    /* its last chunk */
    apr_uint32_t chunks[VR_PARTS];  /* its chunks */
    apr_int64_t visits[QRT_VRADIX_GROUPS], clicks[QRT_VRADIX_GROUPS];   /* a group's */
};

/* Segments kept from one count to the next (swapped with the compiler's atomic builtins):
 * up to 64 MB, the memory of a count of 8 million visits. */
#define VR_SPARES 8
static apr_uint64_t *vr_spare[VR_SPARES];
static apr_time_t vr_spare_at[VR_SPARES];

static apr_uint64_t *vr_seg_take(void)
{
    int i;

    for (i = 0; i < VR_SPARES; i++) {
        apr_uint64_t *s = __atomic_exchange_n(&vr_spare[i], NULL, __ATOMIC_ACQ_REL);

        if (s) {
            return s;
        }
    }
    return malloc(VR_SEG * sizeof(apr_uint64_t));
}

static void vr_seg_give(apr_uint64_t *s)
{
    apr_time_t now = qrt_clock_now();
    int i;

    for (i = 0; i < VR_SPARES; i++) {
        apr_uint64_t *none = NULL;

        if (__atomic_compare_exchange_n(&vr_spare[i], &none, s, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            __atomic_store_n(&vr_spare_at[i], now, __ATOMIC_RELAXED);
            return;                 /* (kept in an empty place) */
        }
    }
    free(s);
}

void qrt_vradix_spares_release(apr_interval_time_t idle)
{
    apr_time_t now = qrt_clock_now();
    int i;

    for (i = 0; i < VR_SPARES; i++) {
        if (__atomic_load_n(&vr_spare[i], __ATOMIC_ACQUIRE)
            && now - __atomic_load_n(&vr_spare_at[i], __ATOMIC_RELAXED) >= idle) {
            free(__atomic_exchange_n(&vr_spare[i], NULL, __ATOMIC_ACQ_REL));
        }
    }
}

apr_size_t qrt_vradix_spares_held(void)
{
    apr_size_t held = 0;
    int i;

    for (i = 0; i < VR_SPARES; i++) {
        held += __atomic_load_n(&vr_spare[i], __ATOMIC_ACQUIRE) ? VR_SEG * sizeof(apr_uint64_t)
                                                                : 0;
    }
    return held;
}

/* A bijection of the 64-bit values (MurmurHash3's finalizer): equal hashes are equal
 * visitors, and its high bits spread any set of visitors evenly over the parts. */
static APR_INLINE apr_uint64_t vr_mix(apr_uint64_t x)
{
    x ^= x >> 33;
    x *= APR_UINT64_C(0xFF51AFD7ED558CCD);
    x ^= x >> 33;
    x *= APR_UINT64_C(0xC4CEB9FE1A85EC53);
    x ^= x >> 33;
    return x;
}

qrt_vradix_t *qrt_vradix_make(apr_size_t max)
{
    qrt_vradix_t *r = malloc(sizeof(*r));
    apr_size_t p;

    if (!r) {
        return NULL;
    }
    r->n = 0;
    r->max = max;
    r->segs = NULL;
    r->nsegs = r->segcap = 0;
    r->nchunks = 0;
    r->next = NULL;
    r->nextcap = 0;
    memset(r->visits, 0, sizeof(r->visits));
    memset(r->clicks, 0, sizeof(r->clicks));
    for (p = 0; p < VR_PARTS; p++) {
        r->tail[p] = NULL;
        r->fill[p] = VR_CHUNK;
        r->head[p] = r->last[p] = VR_NONE;
        r->chunks[p] = 0;
    }
    return r;
}

void qrt_vradix_free(qrt_vradix_t *r)
{
    apr_size_t i;

    if (!r) {
        return;
    }
    for (i = 0; i < r->nsegs; i++) {
        vr_seg_give(r->segs[i]);
    }
    free(r->segs);
    free(r->next);
    free(r);
}

apr_size_t qrt_vradix_size(const qrt_vradix_t *r)
{
    return r->n;
}

void qrt_vradix_counts(const qrt_vradix_t *r, apr_uint32_t group, apr_int64_t *visits,
                       apr_int64_t *clicks)
{
    *visits = group < QRT_VRADIX_GROUPS ? r->visits[group] : 0;
    *clicks = group < QRT_VRADIX_GROUPS ? r->clicks[group] : 0;
}

static APR_INLINE apr_uint64_t *vr_chunk_at(const qrt_vradix_t *r, apr_uint32_t c)
{
    return r->segs[c / VR_SEG_CHUNKS] + (apr_size_t)(c % VR_SEG_CHUNKS) * VR_CHUNK;
}

/* A new last chunk for part p: 0, or -1 without memory. */
static int vr_chunk(qrt_vradix_t *r, apr_size_t p)
{
    apr_uint32_t c = r->nchunks;

    if (c == VR_NONE) {
        return -1;
    }
    if ((apr_size_t)c / VR_SEG_CHUNKS >= r->nsegs) {
        if (r->nsegs == r->segcap) {
            apr_size_t cap = r->segcap ? r->segcap * 2 : 8;
            apr_uint64_t **more = realloc(r->segs, cap * sizeof(*more));

            if (!more) {
                return -1;
            }
            r->segs = more;
            r->segcap = cap;
        }
        if (!(r->segs[r->nsegs] = vr_seg_take())) {
            return -1;
        }
        r->nsegs++;
    }
    if ((apr_size_t)c >= r->nextcap) {
        apr_size_t cap = r->nextcap ? r->nextcap * 2 : 4096;
        apr_uint32_t *more = realloc(r->next, cap * sizeof(*more));

        if (!more) {
            return -1;
        }
        r->next = more;
        r->nextcap = cap;
    }
    r->next[c] = VR_NONE;
    if (r->last[p] == VR_NONE) {
        r->head[p] = c;
    }
    else {
        r->next[r->last[p]] = c;
    }
    r->last[p] = c;
    r->chunks[p]++;
    r->tail[p] = vr_chunk_at(r, c);
    r->fill[p] = 0;
    r->nchunks++;
    return 0;
}

int qrt_vradix_add(qrt_vradix_t *r, apr_uint32_t group, const apr_uint32_t *groups,
                   const apr_uint64_t *visitors, const unsigned char *clicks, apr_size_t n,
                   apr_uint32_t limit)
{
    apr_size_t i;

    if (n > r->max || r->n > r->max - n) {
        return -1;
    }
    limit = !limit ? 1 : limit < QRT_VRADIX_GROUPS ? limit : QRT_VRADIX_GROUPS;
    if (groups) {
        apr_uint32_t bad = 0;

        /* (no branch a visit: the loop is vectorized) */
        for (i = 0; i < n; i++) {
            bad |= groups[i] - 1 >= limit - 1;
        }
        if (bad) {
            return -1;
        }
    }
    else if (n) {
        apr_int64_t c = 0;

        if (group - 1 >= limit - 1) {
            return -1;
        }
        for (i = 0; clicks && i < n; i++) {
            c += clicks[i] != 0;
        }
        r->visits[group] += (apr_int64_t)n;
        r->clicks[group] += c;
    }
    for (i = 0; i < n; i++) {
        apr_uint64_t h = vr_mix(visitors[i]);
        apr_size_t p = (apr_size_t)(h >> (64 - VR_PART_BITS));
        apr_uint32_t f = r->fill[p], g = groups ? groups[i] : group;

        if (__builtin_expect(f == VR_CHUNK, 0)) {
            if (vr_chunk(r, p) < 0) {
                r->n += i;
                return -1;
            }
            f = 0;
        }
        r->tail[p][f] = (h << VR_PART_BITS) | g;
        r->fill[p] = f + 1;
        if (groups) {
            r->visits[g]++;
            r->clicks[g] += clicks && clicks[i] != 0;
        }
    }
    r->n += n;
    return 0;
}

/* The values of part p of r (the last chunk's count from fill). */
static APR_INLINE apr_size_t vr_part_size(const qrt_vradix_t *r, apr_size_t p)
{
    return r->chunks[p] ? (apr_size_t)(r->chunks[p] - 1) * VR_CHUNK + r->fill[p] : 0;
}

/* 1 when a slot's value s holds a value other than k (s is neither 0 nor k), told
 * without a branch: whether the value was seen before is as likely as not. */
static APR_INLINE apr_uint64_t vr_slot_other(apr_uint64_t s, apr_uint64_t k)
{
    apr_uint64_t x = s ^ k;

    return ((s | (0 - s)) & (x | (0 - x))) >> 63;
}

/* A table has VR_LOAD slots a value or more (a table at half load runs on past its
 * first slot often enough that the loop's mispredicted ends cost more than its reads).
 * By masks VR_LOAD_MASKS slots of 16 bytes: a slot is a visitor, not a pair, so a part's
 * visits fill fewer of them, and a smaller table stays in the cache. */
#define VR_LOAD 4
#define VR_LOAD_MASKS 2

/* Byte b's bit i at bit 8 i: each byte a counter of one bit of b. */
#define VR_SPREAD(b) (((b) & 1ull) | ((b) & 2ull) << 7 | ((b) & 4ull) << 14 \
                      | ((b) & 8ull) << 21 | ((b) & 16ull) << 28 | ((b) & 32ull) << 35 \
                      | ((b) & 64ull) << 42 | ((b) & 128ull) << 49)
#define VR_SPREAD4(n) VR_SPREAD(n), VR_SPREAD(n + 1), VR_SPREAD(n + 2), VR_SPREAD(n + 3)
#define VR_SPREAD16(n) VR_SPREAD4(n), VR_SPREAD4(n + 4), VR_SPREAD4(n + 8), VR_SPREAD4(n + 12)
#define VR_SPREAD64(n) VR_SPREAD16(n), VR_SPREAD16(n + 16), VR_SPREAD16(n + 32), \
                       VR_SPREAD16(n + 48)
static const apr_uint64_t vr_spread[256] = {
    VR_SPREAD64(0ull), VR_SPREAD64(64ull), VR_SPREAD64(128ull), VR_SPREAD64(192ull)
};

typedef struct {
    qrt_vradix_t *const *rs;
    const apr_uint32_t *const *maps;
    int nr;
    const apr_uint64_t *masks;      /* by masks: a group's bits; NULL: by pairs */
    int lanes[8], nlanes;           /* by masks: the bytes of the masks some bit is in */
    apr_size_t p0, p1;
    apr_uint64_t *tab;              /* room for the largest part's table (by masks: a
                                     * visitor's value, then its bits, a slot; all 0
                                     * between parts) */
    apr_uint32_t *used;             /* by masks: the slots a part's count filled, room
                                     * for the largest part's values, emptied after the
                                     * part (a part's visitors fill few of its slots) */
    apr_int64_t *u;                 /* [QRT_VRADIX_GROUPS], by masks [64] */
} vr_count;

/* n values v of a part counted by pairs into a table of mask + 1 slots: a distinct value
 * (a pair of visitor and group) a distinct visitor of its group. */
static APR_INLINE void vr_count_pairs(vr_count *c, const apr_uint64_t *v, apr_size_t n,
                                      const apr_uint32_t *map, apr_size_t mask)
{
    apr_size_t k;

    for (k = 0; k < n; k++) {
        apr_uint64_t key = map ? (v[k] & ~VR_GROUP_MASK) | map[v[k] & VR_GROUP_MASK] : v[k];
        apr_size_t j = (apr_size_t)(key >> VR_PART_BITS) & mask;
        apr_uint64_t s = c->tab[j];

        if (__builtin_expect(!vr_slot_other(s, key), 1)) {
            c->tab[j] = key;
            c->u[key & VR_GROUP_MASK] += s == 0;
            continue;
        }
        for (j = (j + 1) & mask; c->tab[j] && c->tab[j] != key; j = (j + 1) & mask) {
        }
        if (!c->tab[j]) {
            c->tab[j] = key;
            c->u[key & VR_GROUP_MASK]++;
        }
    }
}

/* The same by masks: a slot a visitor (its value, the group's bits replaced by 1, never
 * 0), then the union of the masks of the groups it was counted in. Each bit of a slot is
 * a distinct visitor of that bit, counted once the part is (vr_count_slots): a visit
 * costs the same whatever its mask. The slots filled are noted in used from nu on; the
 * count of them noted returned. */
static APR_INLINE apr_size_t vr_count_bits(vr_count *c, const apr_uint64_t *v, apr_size_t n,
                                           const apr_uint32_t *map, apr_size_t mask,
                                           apr_size_t nu)
{
    apr_size_t k;

    for (k = 0; k < n; k++) {
        apr_uint32_t g = (apr_uint32_t)(v[k] & VR_GROUP_MASK);
        apr_uint64_t key = (v[k] & ~VR_GROUP_MASK) | 1, bits = c->masks[map ? map[g] : g];
        apr_size_t j = (apr_size_t)(key >> VR_PART_BITS) & mask;
        apr_uint64_t s = c->tab[2 * j];

        if (__builtin_expect(vr_slot_other(s, key), 0)) {
            for (j = (j + 1) & mask; c->tab[2 * j] && c->tab[2 * j] != key;
                 j = (j + 1) & mask) {
            }
            s = c->tab[2 * j];
        }
        c->tab[2 * j] = key;
        c->tab[2 * j + 1] |= bits;
        c->used[nu] = (apr_uint32_t)j;
        nu += s == 0;
    }
    return nu;
}

/* The nu slots filled by masks: each bit of each a distinct visitor of that bit. Each
 * byte of the masks that has bits is added to eight counters of a byte (vr_spread),
 * added to the bits' counts every 255 slots: a visitor costs the same whatever its bits.
 * The slots are emptied. */
static void vr_count_slots(vr_count *c, apr_size_t nu)
{
    apr_uint64_t acc[8] = { 0 };
    apr_size_t k = 0;
    int i, b;

    while (k < nu) {
        apr_size_t end = nu - k < 255 ? nu : k + 255;

        for (; k < end; k++) {
            apr_size_t j = c->used[k];
            apr_uint64_t bits = c->tab[2 * j + 1];

            for (i = 0; i < c->nlanes; i++) {
                acc[i] += vr_spread[(bits >> (8 * c->lanes[i])) & 255];
            }
            c->tab[2 * j] = c->tab[2 * j + 1] = 0;
        }
        for (i = 0; i < c->nlanes; i++) {
            for (b = 0; b < 8; b++) {
                c->u[8 * c->lanes[i] + b] += (apr_int64_t)((acc[i] >> (8 * b)) & 255);
            }
            acc[i] = 0;
        }
    }
}

static void vr_count_parts(void *data)
{
    vr_count *c = data;
    apr_size_t p;
    int i;

    for (p = c->p0; p < c->p1; p++) {
        apr_size_t m = 0, size = 16, nu = 0;

        for (i = 0; i < c->nr; i++) {
            m += vr_part_size(c->rs[i], p);
        }
        if (!m) {
            continue;
        }
        while (size < (c->masks ? VR_LOAD_MASKS : VR_LOAD) * m) {
            size *= 2;
        }
        if (!c->masks) {
            memset(c->tab, 0, size * sizeof(*c->tab));
        }
        for (i = 0; i < c->nr; i++) {
            const qrt_vradix_t *r = c->rs[i];
            const apr_uint32_t *map = c->maps ? c->maps[i] : NULL;
            apr_uint32_t ch;

            for (ch = r->head[p]; ch != VR_NONE; ch = r->next[ch]) {
                apr_size_t n = ch == r->last[p] ? r->fill[p] : VR_CHUNK;

                if (c->masks) {
                    nu = vr_count_bits(c, vr_chunk_at(r, ch), n, map, size - 1, nu);
                }
                else {
                    vr_count_pairs(c, vr_chunk_at(r, ch), n, map, size - 1);
                }
            }
        }
        if (c->masks) {
            vr_count_slots(c, nu);  /* (which empties the slots for the next part) */
        }
    }
}

/* qrt_vradix_uniques, and by masks (masks not NULL) qrt_vradix_uniques_masks. */
static int vr_uniques(qrt_vradix_t *const *rs, const apr_uint32_t *const *maps, int nr,
                      apr_uint32_t ngroups, const apr_uint64_t *masks, int threads,
                      apr_int64_t *uniques)
{
    vr_count c[2];
    qrt_spare_job job;
    apr_size_t p, most = 0, size = 16, half, total = 0, upto = 0;
    apr_uint64_t any = 0;
    apr_uint32_t g;
    int i, t, nt = threads >= 2 ? 2 : 1, helped = 0, rv = -1;

    if (ngroups > QRT_VRADIX_GROUPS) {
        ngroups = QRT_VRADIX_GROUPS;    /* (a value's group is below it) */
    }
    /* the groups mapped to must be of the table's values, and counted in uniques */
    for (i = 0; maps && i < nr; i++) {
        for (g = 1; maps[i] && g < QRT_VRADIX_GROUPS; g++) {
            if (maps[i][g] >= ngroups && maps[i][g] != 0) {
                return -1;
            }
        }
    }
    for (g = 0; masks && g < ngroups; g++) {
        any |= masks[g];            /* (the bytes of bits vr_count_slots counts) */
    }
    for (p = 0; p < VR_PARTS; p++) {
        apr_size_t m = 0;

        for (i = 0; i < nr; i++) {
            m += vr_part_size(rs[i], p);
        }
        most = m > most ? m : most;
        total += m;
    }
    while (size < (masks ? VR_LOAD_MASKS : VR_LOAD) * most) {
        size *= 2;
    }
    /* the parts split where half the visits are */
    for (half = 0; half < VR_PARTS && upto < total / 2; half++) {
        for (i = 0; i < nr; i++) {
            upto += vr_part_size(rs[i], half);
        }
    }
    for (t = 0; t < 2; t++) {
        c[t].rs = rs;
        c[t].maps = maps;
        c[t].nr = nr;
        c[t].masks = masks;
        c[t].p0 = t ? half : 0;
        c[t].p1 = t || nt == 1 ? VR_PARTS : half;
        c[t].nlanes = 0;
        for (i = 0; masks && i < 8; i++) {
            if (any >> (8 * i) & 255) {
                c[t].lanes[c[t].nlanes++] = i;
            }
        }
        c[t].tab = NULL;
        c[t].used = NULL;
        c[t].u = NULL;
    }
    for (t = 0; t < nt; t++) {
        /* (by pairs each part's table is cleared as it begins) */
        if (!(c[t].tab = masks ? calloc(2 * size, sizeof(*c[t].tab))
                               : malloc(size * sizeof(*c[t].tab)))
            || (masks && !(c[t].used = malloc((most ? most : 1) * sizeof(*c[t].used))))
            || !(c[t].u = calloc(QRT_VRADIX_GROUPS, sizeof(*c[t].u)))) {
            goto done;
        }
    }
    if (nt == 2) {
        helped = qrt_spare_start(&job, vr_count_parts, &c[1]) == 0;
    }
    vr_count_parts(&c[0]);
    if (helped) {
        qrt_spare_wait(&job);
    }
    else if (nt == 2) {
        vr_count_parts(&c[1]);
    }
    for (t = 0; t < nt; t++) {
        for (g = masks ? 0 : 1; g < (masks ? 64 : ngroups); g++) {
            uniques[g] += c[t].u[g];
        }
    }
    rv = 0;
done:
    for (t = 0; t < nt; t++) {
        free(c[t].tab);
        free(c[t].used);
        free(c[t].u);
    }
    return rv;
}

int qrt_vradix_uniques(qrt_vradix_t *const *rs, const apr_uint32_t *const *maps, int nr,
                       apr_uint32_t ngroups, int threads, apr_int64_t *uniques)
{
    return vr_uniques(rs, maps, nr, ngroups, NULL, threads, uniques);
}

int qrt_vradix_uniques_masks(qrt_vradix_t *const *rs, const apr_uint32_t *const *maps,
                             int nr, const apr_uint64_t *masks, apr_uint32_t ngroups,
                             int threads, apr_int64_t *uniques)
{
    return vr_uniques(rs, maps, nr, ngroups, masks, threads, uniques);
}
