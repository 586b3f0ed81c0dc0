/* qrt_vgroups: visits counted by group in one pass (see qrt_vgroups.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>

#include "qrt_vgroups.h"

/* A group's visitors go in chunks of the slab (qrt_vgroups_t): a chunk is a header (the
 * index of the group's next chunk, 0 for none) and room for VG_CHUNK_MIN visitors, twice
 * the room of the chunk before it, at most VG_CHUNK_MAX. Groups are numbered from 1. */
#define VG_CHUNK_MIN 4
#define VG_CHUNK_MAX 4096

typedef struct {
    char *key;
    apr_size_t klen;
    apr_uint64_t hash;
    apr_int64_t scans, clicks, uniques;
    apr_size_t first, last;         /* its chunks (0: none yet) */
    apr_uint32_t fill, room;        /* visitors in its last chunk, and its room */
} vg_group;

struct qrt_vgroups_t {
    vg_group *groups;               /* [1 .. ngroups] */
    apr_uint32_t ngroups, gcap;
    apr_uint32_t *gslot;            /* hash of keys: group numbers, 0 empty */
    apr_size_t gslots;
    apr_uint64_t *slab;             /* the groups' chunks; index 0 unused */
    apr_size_t slabcap, slabused;
    apr_size_t npairs, max;         /* visits added, and the bound */
    apr_uint32_t last;              /* the group of the previous add */
    int counted;                    /* the groups' uniques are counted */
};

static apr_uint64_t vg_hash(const char *s, apr_size_t n)
{
    apr_uint64_t h = APR_UINT64_C(0xCBF29CE484222325);
    apr_size_t i;

    for (i = 0; i < n; i++) {
        h = (h ^ (unsigned char)s[i]) * APR_UINT64_C(0x100000001B3);
    }
    return h;
}

static apr_uint64_t vg_mix(apr_uint64_t x)
{
    x ^= x >> 33;
    x *= APR_UINT64_C(0xFF51AFD7ED558CCD);
    x ^= x >> 33;
    return x;
}

qrt_vgroups_t *qrt_vgroups_make(apr_size_t max)
{
    qrt_vgroups_t *g = calloc(1, sizeof(*g));

    if (!g) {
        return NULL;
    }
    g->gcap = 16;
    g->gslots = 32;
    g->slabcap = 1024;
    g->slabused = 1;
    g->max = max;
    g->groups = malloc((g->gcap + 1) * sizeof(*g->groups));
    g->gslot = calloc(g->gslots, sizeof(*g->gslot));
    g->slab = malloc(g->slabcap * sizeof(*g->slab));
    if (!g->groups || !g->gslot || !g->slab) {
        qrt_vgroups_free(g);
        return NULL;
    }
    return g;
}

void qrt_vgroups_free(qrt_vgroups_t *g)
{
    apr_uint32_t i;

    if (!g) {
        return;
    }
    for (i = 1; g->groups && i <= g->ngroups; i++) {
        free(g->groups[i].key);
    }
    free(g->groups);
    free(g->gslot);
    free(g->slab);
    free(g);
}

/* The group of key, made when new: its number, 0 without memory. */
static apr_uint32_t vg_group_of(qrt_vgroups_t *g, const char *key, apr_size_t klen)
{
    apr_uint64_t h = vg_hash(key, klen);
    apr_size_t i = (apr_size_t)vg_mix(h) & (g->gslots - 1);
    vg_group *x;

    for (; g->gslot[i]; i = (i + 1) & (g->gslots - 1)) {
        x = &g->groups[g->gslot[i]];
        if (x->hash == h && x->klen == klen && !memcmp(x->key, key, klen)) {
            return g->gslot[i];
        }
    }
    if (g->ngroups + 1 > g->gcap) {
        vg_group *more = realloc(g->groups, ((apr_size_t)g->gcap * 2 + 1) * sizeof(*more));

        if (!more) {
            return 0;
        }
        g->groups = more;
        g->gcap *= 2;
    }
    if ((g->ngroups + 1) * 2 > g->gslots) {
        /* twice the slots, the groups placed again */
        apr_size_t n = g->gslots * 2, j;
        apr_uint32_t *slot = calloc(n, sizeof(*slot)), k;

        if (!slot) {
            return 0;
        }
        for (k = 1; k <= g->ngroups; k++) {
            for (j = (apr_size_t)vg_mix(g->groups[k].hash) & (n - 1); slot[j];
                 j = (j + 1) & (n - 1)) {
            }
            slot[j] = k;
        }
        free(g->gslot);
        g->gslot = slot;
        g->gslots = n;
        for (i = (apr_size_t)vg_mix(h) & (n - 1); slot[i]; i = (i + 1) & (n - 1)) {
        }
    }
    x = &g->groups[g->ngroups + 1];
    x->key = malloc(klen + 1);
    if (!x->key) {
        return 0;
    }
    memcpy(x->key, key, klen);
    x->key[klen] = '\0';
    x->klen = klen;
    x->hash = h;
    x->scans = x->clicks = x->uniques = 0;
    x->first = x->last = 0;
    x->fill = x->room = 0;
    g->gslot[i] = ++g->ngroups;
    return g->ngroups;
}

/* A new last chunk for group x, its room twice the last one's: 0, or -1 without memory. */
static int vg_chunk(qrt_vgroups_t *g, vg_group *x)
{
    apr_uint32_t room = !x->room ? VG_CHUNK_MIN
                        : x->room >= VG_CHUNK_MAX ? VG_CHUNK_MAX : x->room * 2;
    apr_size_t at = g->slabused;

    if (g->slabcap - g->slabused < (apr_size_t)room + 1) {
        apr_size_t cap = g->slabcap;
        apr_uint64_t *more;

        while (cap - g->slabused < (apr_size_t)room + 1) {
            cap *= 2;
        }
        if (!(more = realloc(g->slab, cap * sizeof(*more)))) {
            return -1;
        }
        g->slab = more;
        g->slabcap = cap;
    }
    g->slab[at] = 0;
    if (x->last) {
        g->slab[x->last] = at;
    }
    else {
        x->first = at;
    }
    x->last = at;
    x->fill = 0;
    x->room = room;
    g->slabused += (apr_size_t)room + 1;
    return 0;
}

/* Counts a visit of group k by visitor (a click or a scan): 0, or -1 past max or
 * without memory. */
static int vg_pair_add(qrt_vgroups_t *g, apr_uint32_t k, int click, apr_uint64_t visitor)
{
    vg_group *x = &g->groups[k];

    if (g->npairs >= g->max || (x->fill == x->room && vg_chunk(g, x) < 0)) {
        return -1;
    }
    g->slab[x->last + 1 + x->fill++] = visitor;
    g->npairs++;
    if (click) {
        x->clicks++;
    }
    else {
        x->scans++;
    }
    return 0;
}

/* The distinct values of v (m of them, reordered; tmp as long): sorted by their low 32
 * bits (11 bits at a time, the digits every value shares skipped), then each run of
 * equal low bits told apart by the whole value (a run is one value but for the rare
 * ones sharing their low bits). Sequential passes: for a group too large for a table
 * in the CPU's cache. */
#define VG_BITS 11
#define VG_DIGITS (1u << VG_BITS)
#define VG_TABLE_MAX ((apr_size_t)1 << 18)  /* a group's visits counted through a table */

static int vg_u64_cmp(const void *x, const void *y)
{
    apr_uint64_t a = *(const apr_uint64_t *)x, b = *(const apr_uint64_t *)y;

    return a < b ? -1 : a > b;
}

static apr_int64_t vg_distinct_sorted(apr_uint64_t *v, apr_size_t m, apr_uint64_t *tmp,
                                      apr_size_t *count)
{
    apr_uint64_t *a = v, *b = tmp, *swap;
    apr_size_t i, j, r, q;
    apr_int64_t u = 0;
    int shift;

    for (shift = 0; shift < 32; shift += VG_BITS) {
        apr_size_t sum = 0;

        memset(count, 0, VG_DIGITS * sizeof(*count));
        for (i = 0; i < m; i++) {
            count[(a[i] >> shift) & (VG_DIGITS - 1)]++;
        }
        if (count[(a[0] >> shift) & (VG_DIGITS - 1)] == m) {
            continue;
        }
        for (i = 0; i < VG_DIGITS; i++) {
            apr_size_t c = count[i];

            count[i] = sum;
            sum += c;
        }
        for (i = 0; i < m; i++) {
            b[count[(a[i] >> shift) & (VG_DIGITS - 1)]++] = a[i];
        }
        swap = a;
        a = b;
        b = swap;
    }
    for (i = 0; i < m; i = j) {
        apr_uint32_t low = (apr_uint32_t)a[i];

        for (j = i + 1; j < m && (apr_uint32_t)a[j] == low; j++) {
        }
        if (j - i > 16) {
            qsort(a + i, j - i, sizeof(*a), vg_u64_cmp);
            for (r = i; r < j; r++) {
                u += r == i || a[r] != a[r - 1];
            }
            continue;
        }
        for (r = i; r < j; r++) {
            for (q = i; q < r && a[q] != a[r]; q++) {
            }
            u += q == r;
        }
    }
    return u;
}

/* Each group's distinct visitors, read from its chunks: a group of up to 16 visits by
 * comparing them, up to VG_TABLE_MAX through a table of its own, twice its
 * visits' number in slots (open addressing: a group of a day's visits stays in the CPU's
 * cache), a larger one copied out and counted by vg_distinct_sorted. */
static int vg_count(qrt_vgroups_t *g)
{
    apr_size_t most = 0, cap = 0, *count = NULL;
    apr_uint64_t *slot = NULL, *flat = NULL;
    apr_uint32_t k;

    if (g->counted) {
        return 0;
    }
    for (k = 1; k <= g->ngroups; k++) {
        apr_size_t m = (apr_size_t)(g->groups[k].scans + g->groups[k].clicks);

        if (m > most) {
            most = m;
        }
    }
    while (cap < 2 * (most < VG_TABLE_MAX ? most : VG_TABLE_MAX)) {
        cap = cap ? cap * 2 : 16;
    }
    /* (the table of the largest group counted through one, or the sort's room) */
    if (most > 16 && !(slot = malloc((most > cap ? most : cap) * sizeof(*slot)))) {
        return -1;
    }
    if (most > VG_TABLE_MAX && (!(count = malloc(VG_DIGITS * sizeof(*count)))
                                || !(flat = malloc(most * sizeof(*flat))))) {
        free(count);
        free(slot);
        return -1;
    }
    for (k = 1; k <= g->ngroups; k++) {
        vg_group *x = &g->groups[k];
        apr_size_t m = (apr_size_t)(x->scans + x->clicks), c, room = VG_CHUNK_MIN, size, r, q;
        apr_int64_t u = 0;

        if (!m) {
            x->uniques = 0;
            continue;
        }
        if (m <= 16) {
            apr_uint64_t v[16];
            apr_size_t at = 0;

            for (c = x->first; c; c = (apr_size_t)g->slab[c]) {
                apr_size_t n = c == x->last ? x->fill : room;

                memcpy(v + at, g->slab + c + 1, n * sizeof(*v));
                at += n;
                room *= 2;
            }
            for (r = 0; r < m; r++) {
                for (q = 0; q < r && v[q] != v[r]; q++) {
                }
                u += q == r;
            }
        }
        else if (m > VG_TABLE_MAX) {
            apr_size_t at = 0;

            for (c = x->first; c; c = (apr_size_t)g->slab[c]) {
                apr_size_t n = c == x->last ? x->fill : room;

                memcpy(flat + at, g->slab + c + 1, n * sizeof(*flat));
                at += n;
                room = room >= VG_CHUNK_MAX ? VG_CHUNK_MAX : room * 2;
            }
            u = vg_distinct_sorted(flat, m, slot, count);
        }
        else {
            /* (0 marks an empty slot: a visitor 0 is counted apart) */
            int zero = 0;

            for (size = 16; size < 2 * m; size *= 2) {
            }
            memset(slot, 0, size * sizeof(*slot));
            for (c = x->first; c; c = (apr_size_t)g->slab[c]) {
                const apr_uint64_t *v = g->slab + c + 1;
                apr_size_t n = c == x->last ? x->fill : room;

                for (r = 0; r < n; r++) {
                    apr_uint64_t id = v[r];
                    apr_size_t j;

                    if (!id) {
                        u += !zero;
                        zero = 1;
                        continue;
                    }
                    for (j = (apr_size_t)vg_mix(id) & (size - 1); slot[j] && slot[j] != id;
                         j = (j + 1) & (size - 1)) {
                    }
                    if (!slot[j]) {
                        slot[j] = id;
                        u++;
                    }
                }
                room = room >= VG_CHUNK_MAX ? VG_CHUNK_MAX : room * 2;
            }
        }
        x->uniques = u;
    }
    free(flat);
    free(count);
    free(slot);
    free(g->slab);
    g->slab = NULL;
    g->slabcap = g->slabused = 0;
    g->counted = 1;
    return 0;
}

apr_uint32_t qrt_vgroups_group(qrt_vgroups_t *g, const char *key, apr_size_t klen)
{
    return g->counted ? 0 : vg_group_of(g, key, klen);
}

int qrt_vgroups_add_to(qrt_vgroups_t *g, apr_uint32_t group, int click, apr_int64_t visitor)
{
    return g->counted || !group || group > g->ngroups
           ? -1 : vg_pair_add(g, group, click, (apr_uint64_t)visitor);
}

int qrt_vgroups_add_run(qrt_vgroups_t *g, apr_uint32_t group, const apr_uint32_t *groups,
                        const apr_int64_t *visitors, const unsigned char *clicks,
                        apr_size_t n)
{
    apr_size_t i;

    if (g->counted || n > g->max || g->npairs > g->max - n) {
        return n ? -1 : 0;
    }
    for (i = 0; i < n; i++) {
        apr_uint32_t k = groups ? groups[i] : group;

        if (!k || k > g->ngroups) {
            return -1;
        }
    }
    if (!groups) {
        vg_group *x = &g->groups[group];
        apr_size_t c = 0;

        for (i = 0; i < n;) {
            apr_size_t take, j;
            apr_uint64_t *to;

            if (x->fill == x->room && vg_chunk(g, x) < 0) {
                return -1;
            }
            take = x->room - x->fill < n - i ? x->room - x->fill : n - i;
            to = g->slab + x->last + 1 + x->fill;
            for (j = 0; j < take; j++) {
                to[j] = (apr_uint64_t)visitors[i + j];
                c += clicks[i + j] != 0;
            }
            x->fill += (apr_uint32_t)take;
            i += take;
        }
        x->clicks += (apr_int64_t)c;
        x->scans += (apr_int64_t)(n - c);
        g->npairs += n;
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (vg_pair_add(g, groups[i], clicks[i] != 0, (apr_uint64_t)visitors[i]) < 0) {
            return -1;
        }
    }
    return 0;
}

int qrt_vgroups_add(qrt_vgroups_t *g, const char *key, apr_size_t klen, int click,
                    apr_int64_t visitor)
{
    apr_uint32_t k = g->last;

    if (g->counted || g->npairs >= g->max) {
        return -1;
    }
    if (!k || g->groups[k].klen != klen || memcmp(g->groups[k].key, key, klen)) {
        if (!(k = vg_group_of(g, key, klen))) {
            return -1;
        }
        g->last = k;
    }
    return vg_pair_add(g, k, click, (apr_uint64_t)visitor);
}

char *qrt_vgroups_text(qrt_vgroups_t *g, apr_size_t *len)
{
    apr_size_t size = 1, used = 0;
    apr_uint32_t k;
    char *out;

    if (vg_count(g) < 0) {
        return NULL;
    }
    for (k = 1; k <= g->ngroups; k++) {
        size += g->groups[k].klen + 80;
    }
    if (!(out = malloc(size))) {
        return NULL;
    }
    for (k = 1; k <= g->ngroups; k++) {
        vg_group *x = &g->groups[k];

        used += (apr_size_t)snprintf(out + used, size - used, "%" APR_SIZE_T_FMT ":", x->klen);
        memcpy(out + used, x->key, x->klen);
        used += x->klen;
        used += (apr_size_t)snprintf(out + used, size - used, " %" APR_INT64_T_FMT " %"
                                     APR_INT64_T_FMT " %" APR_INT64_T_FMT "\n",
                                     x->scans, x->clicks, x->uniques);
    }
    out[used] = '\0';
    *len = used;
    return out;
}

int qrt_vgroups_visitor_id(const char *s, apr_size_t n, apr_int64_t *id)
{
    apr_uint64_t v = 0;
    apr_size_t i;

    if (n != 16) {
        return -1;
    }
    for (i = 0; i < n; i++) {
        char c = s[i];

        if (c >= '0' && c <= '9') {
            v = v << 4 | (apr_uint64_t)(c - '0');
        }
        else if (c >= 'a' && c <= 'f') {
            v = v << 4 | (apr_uint64_t)(c - 'a' + 10);
        }
        else {
            return -1;
        }
    }
    *id = (apr_int64_t)v;
    return 0;
}

/* A decimal number of at most 18 digits before the character end: its value, the
 * position past end in *s; -1 when there is none. */
static apr_int64_t vg_num(const char **s, const char *lim, char end)
{
    const char *q = *s;
    apr_int64_t v = 0;
    int digits = 0;

    for (; q < lim && *q >= '0' && *q <= '9' && digits < 18; q++, digits++) {
        v = v * 10 + (*q - '0');
    }
    if (!digits || q >= lim || *q != end) {
        return -1;
    }
    *s = q + 1;
    return v;
}

apr_status_t qrt_vgroups_parse(apr_pool_t *p, const char *s, apr_size_t len,
                               apr_array_header_t *out)
{
    const char *lim = s + len;

    while (s < lim) {
        qrt_vgroup_t *x;
        apr_int64_t klen = vg_num(&s, lim, ':'), a, b, c;

        if (klen < 0 || klen >= lim - s) {
            return APR_EINVAL;
        }
        x = apr_array_push(out);
        x->key = apr_pstrmemdup(p, s, (apr_size_t)klen);
        s += klen;
        if (*s++ != ' ' || (a = vg_num(&s, lim, ' ')) < 0 || (b = vg_num(&s, lim, ' ')) < 0
            || (c = vg_num(&s, lim, '\n')) < 0) {
            return APR_EINVAL;
        }
        x->scans = a;
        x->clicks = b;
        x->uniques = c;
    }
    return APR_SUCCESS;
}
