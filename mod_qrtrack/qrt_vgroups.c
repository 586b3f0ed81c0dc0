/* qrt_vgroups: visits counted by group in one pass (see qrt_vgroups.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>
#include <apr_time.h>

#include "qrt_clock.h"
#include "qrt_spare.h"
#include "qrt_vgroups.h"
#include "qrt_vradix.h"

/* A group's visitors go in chunks of the slab (qrt_vgroups_t): a chunk is a header (the
 * index of the group's next chunk, 0 for none) and room for VG_CHUNK_MIN visitors, twice
 * the room of the chunk before it, at most VG_CHUNK_MAX. Groups are numbered from 1. */
#define VG_CHUNK_MIN 4
#define VG_CHUNK_MAX 4096

/* A run of a group's visitors held where its caller keeps them (qrt_vgroups_add_ref),
 * and the next run of the group (0: none). */
typedef struct {
    const apr_uint64_t *v;
    apr_size_t n, next;
} vg_ref;

typedef struct {
    char *key;
    apr_size_t klen;
    apr_uint64_t hash;
    apr_int64_t scans, clicks, uniques;
    apr_size_t first, last;         /* its chunks (0: none yet) */
    apr_size_t rfirst, rlast;       /* its runs held by reference (0: none) */
    apr_uint32_t fill, room;        /* visitors in its last chunk, and its room */
    apr_uint32_t *members;          /* a set (qrt_vgroups_set): its groups; else NULL */
    apr_uint32_t nmembers;
    int member;                     /* a set's member */
    apr_size_t held;                /* its visits held by reference outside the bound */
    apr_uint32_t rbit;              /* radix by masks: its bit + 1 (0: none yet) */
    int rok;                        /* ... a set: its members have theirs */
} vg_group;

struct qrt_vgroups_t {
    vg_group *groups;               /* [1 .. ngroups] */
    apr_uint32_t ngroups, gcap;
    apr_uint32_t *gslot;            /* hash of keys: group numbers, 0 empty */
    apr_size_t gslots;
    apr_uint64_t *slab;             /* the groups' chunks; index 0 unused */
    apr_size_t slabcap, slabused;
    vg_ref *refs;                   /* runs added by reference; index 0 unused */
    apr_size_t nrefs, refcap;
    apr_size_t npairs, max;         /* visits added, and the bound */
    apr_size_t nheld;               /* visits of plain groups held by reference (below) */
    apr_uint32_t last;              /* the group of the previous add */
    int counted;                    /* the groups' uniques are counted */
    apr_uint64_t share_mask, share; /* only visitors of this share (qrt_vgroups_share) */
    int threads;                    /* the count may use (qrt_vgroups_threads) */
    apr_size_t par_min;             /* ... from this many visits of plain groups */
    qrt_vradix_t *radix;            /* the visits spread as added (qrt_vgroups_radix) */
    qrt_vradix_t **rfrom;           /* ... and those of counts absorbed, */
    apr_uint32_t **rmaps;           /* ... their groups mapped to g's */
    int nrfrom;
    int rmasks;                     /* radix by masks: sets allowed, each visitor's groups a
                                     * mask of bits (qrt_vgroups_radix) */
    apr_uint32_t nrbits;            /* the bits given */
};

/* Arrays kept from one count to the next, two of each use per process (two counts may
 * run at once: a report walked by two threads, or two reports): the slab, and the
 * visitors spread over parts. A report over millions of visits would otherwise have the
 * system map these arrays afresh and fault in every page of them each time. A count that
 * finds no spare (other counts hold them) allocates its own; an array is kept only up to
 * VG_SPARE_MAX bytes, its pages left as they are, and freed once it has waited unused
 * for qrt_vgroups_spares_release's idle time. (Pages handed to the system to take back
 * when it needs them, MADV_FREE, cost a trap into the hypervisor at their first write
 * again on virtual machines that keep the page tables in software: much of a large
 * report's time.) */
#define VG_SPARE_MAX ((apr_size_t)32 << 20)
/* The visits of plain groups from which a count may take two threads (vg_count_plain). */
#define VG_PAR_MIN ((apr_size_t)100000)
#define VG_SPARE_EACH 2
enum { VG_SPARE_SLAB, VG_SPARE_FLAT, VG_SPARES };
/* (swapped with the compiler's atomic builtins, which thread checkers understand) */
static void *vg_spare[VG_SPARES][VG_SPARE_EACH];
static apr_time_t vg_spare_at[VG_SPARES][VG_SPARE_EACH];   /* when each was kept */

/* Keeps a (a spare of use s, a[0] its elements) in an empty place, else frees it. */
static void vg_keep(int s, apr_uint64_t *a)
{
    int i;

    for (i = 0; i < VG_SPARE_EACH; i++) {
        void *none = NULL;

        if (__atomic_compare_exchange_n(&vg_spare[s][i], &none, (void *)a, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            return;
        }
    }
    free(a);
}

/* An array of at least n 8-byte elements (n >= 1): a spare of use s when one is that
 * large, the largest of them when largest, else the smallest (the other spares stay for
 * other counts: a report walked by two threads takes two slabs at once, and the first,
 * which takes in the second's visits, asks for the largest, since a slab that grows
 * faults its new pages in); *cap gets its elements; NULL without memory. */
static apr_uint64_t *vg_take(int s, apr_size_t n, int largest, apr_size_t *cap)
{
    apr_uint64_t *got[VG_SPARE_EACH], *a;
    int i, pick = -1;

    for (i = 0; i < VG_SPARE_EACH; i++) {
        got[i] = __atomic_exchange_n(&vg_spare[s][i], NULL, __ATOMIC_ACQ_REL);
        if (got[i] && (apr_size_t)got[i][0] >= n
            && (pick < 0 || (largest ? got[i][0] > got[pick][0] : got[i][0] < got[pick][0]))) {
            pick = i;
        }
    }
    for (i = 0; i < VG_SPARE_EACH; i++) {
        if (i != pick && got[i]) {
            vg_keep(s, got[i]);
        }
    }
    if (pick >= 0) {
        *cap = (apr_size_t)got[pick][0];
        return got[pick];
    }
    if (!(a = malloc(n * sizeof(*a)))) {
        return NULL;
    }
    *cap = n;
    return a;
}

/* Gives back a (of cap elements) from vg_take, kept as spare s when small enough. */
static void vg_give(int s, apr_uint64_t *a, apr_size_t cap)
{
    apr_time_t now = qrt_clock_now();
    int i;

    if (!a) {
        return;
    }
    if (cap * sizeof(*a) > VG_SPARE_MAX) {
        free(a);
        return;
    }
    a[0] = cap;
    for (i = 0; i < VG_SPARE_EACH; i++) {
        void *none = NULL;

        if (__atomic_compare_exchange_n(&vg_spare[s][i], &none, (void *)a, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            __atomic_store_n(&vg_spare_at[s][i], now, __ATOMIC_RELAXED);
            return;                 /* (kept in an empty place) */
        }
    }
    free(__atomic_exchange_n(&vg_spare[s][0], (void *)a, __ATOMIC_ACQ_REL));
    __atomic_store_n(&vg_spare_at[s][0], now, __ATOMIC_RELAXED);
}

void qrt_vgroups_spares_release(apr_interval_time_t idle)
{
    apr_time_t now = qrt_clock_now();
    int s, i;

    qrt_vradix_spares_release(idle);
    for (s = 0; s < VG_SPARES; s++) {
        for (i = 0; i < VG_SPARE_EACH; i++) {
            /* (one kept between the two reads may go too: the next count allocates) */
            if (__atomic_load_n(&vg_spare[s][i], __ATOMIC_ACQUIRE)
                && now - __atomic_load_n(&vg_spare_at[s][i], __ATOMIC_RELAXED) >= idle) {
                free(__atomic_exchange_n(&vg_spare[s][i], NULL, __ATOMIC_ACQ_REL));
            }
        }
    }
}

apr_size_t qrt_vgroups_spares_held(void)
{
    apr_size_t bytes = qrt_vradix_spares_held();
    int s, i;

    for (s = 0; s < VG_SPARES; s++) {
        for (i = 0; i < VG_SPARE_EACH; i++) {
            /* (taken while counted: a spare left in its place could be freed meanwhile) */
            apr_uint64_t *a = __atomic_exchange_n(&vg_spare[s][i], NULL, __ATOMIC_ACQ_REL);

            if (a) {
                bytes += (apr_size_t)a[0] * sizeof(*a);
                vg_keep(s, a);
            }
        }
    }
    return bytes;
}

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

/* A share of the visitors (qrt_vgroups_share) is told by bits of their mixed value that
 * neither the parts (its high bits) nor the tables (its low bits) use: within a share the
 * visitors still spread evenly over both. */
#define VG_SHARE_SHIFT 40

static APR_INLINE int vg_in_share(const qrt_vgroups_t *g, apr_uint64_t visitor)
{
    return ((vg_mix(visitor) >> VG_SHARE_SHIFT) & g->share_mask) == g->share;
}

qrt_vgroups_t *qrt_vgroups_make(apr_size_t max)
{
    qrt_vgroups_t *g = calloc(1, sizeof(*g));

    if (!g) {
        return NULL;
    }
    g->gcap = 16;
    g->gslots = 32;
    g->threads = 1;
    g->par_min = VG_PAR_MIN;
    g->slabused = 1;
    g->max = max;
    g->groups = malloc((g->gcap + 1) * sizeof(*g->groups));
    g->gslot = calloc(g->gslots, sizeof(*g->gslot));
    g->slab = vg_take(VG_SPARE_SLAB, 1024, 1, &g->slabcap);
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
        free(g->groups[i].members);
    }
    free(g->groups);
    free(g->gslot);
    free(g->refs);
    qrt_vradix_free(g->radix);
    for (i = 0; i < (apr_uint32_t)g->nrfrom; i++) {
        qrt_vradix_free(g->rfrom[i]);
        free(g->rmaps[i]);
    }
    free(g->rfrom);
    free(g->rmaps);
    vg_give(VG_SPARE_SLAB, g->slab, g->slabcap);
    free(g);
}

/* The group of key (a set's when set: its members' numbers), made when new: its number,
 * 0 without memory. */
static apr_uint32_t vg_group_of(qrt_vgroups_t *g, const char *key, apr_size_t klen, int set)
{
    apr_uint64_t h = vg_hash(key, klen) ^ (apr_uint64_t)set;
    apr_size_t i = (apr_size_t)vg_mix(h) & (g->gslots - 1);
    vg_group *x;

    for (; g->gslot[i]; i = (i + 1) & (g->gslots - 1)) {
        x = &g->groups[g->gslot[i]];
        if (x->hash == h && x->klen == klen && !x->members == !set
            && !memcmp(x->key, key, klen)) {
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
    x->rfirst = x->rlast = 0;
    x->fill = x->room = 0;
    x->members = NULL;
    x->nmembers = 0;
    x->member = 0;
    x->held = 0;
    x->rbit = 0;
    x->rok = 0;
    if (set) {
        if (!(x->members = malloc(klen))) {
            free(x->key);
            return 0;
        }
        memcpy(x->members, key, klen);
        x->nmembers = (apr_uint32_t)(klen / sizeof(apr_uint32_t));
    }
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

/* A walk over a group's chunks, then its runs held by reference (vg_next), from room 0;
 * ext is set once it reaches the runs, which are not g's to write. */
typedef struct {
    apr_size_t c, room, r;
    int ext;
} vg_walk;

/* The next chunk or run of group x: its visitors (*n of them), or NULL after the last.
 * The rooms grow as vg_chunk grows them. */
static APR_INLINE const apr_uint64_t *vg_next(const qrt_vgroups_t *g, const vg_group *x,
                                              vg_walk *w, apr_size_t *n)
{
    if (!w->room) {
        w->c = x->first;
        w->room = VG_CHUNK_MIN;
        w->ext = 0;
        w->r = 0;
    }
    else if (!w->ext) {
        w->c = (apr_size_t)g->slab[w->c];
        w->room = w->room >= VG_CHUNK_MAX ? VG_CHUNK_MAX : w->room * 2;
    }
    if (!w->ext) {
        if (w->c) {
            *n = w->c == x->last ? x->fill : w->room;
            return g->slab + w->c + 1;
        }
        w->ext = 1;
        w->r = x->rfirst;
    }
    else {
        w->r = g->refs[w->r].next;
    }
    if (!w->r) {
        return NULL;
    }
    *n = g->refs[w->r].n;
    return g->refs[w->r].v;
}

/* Appends a run of n visitors of group k held by reference: 0, or -1 without memory. */
static int vg_ref_add(qrt_vgroups_t *g, apr_uint32_t k, const apr_uint64_t *v, apr_size_t n)
{
    vg_group *x = &g->groups[k];

    if (g->nrefs + 1 >= g->refcap) {
        apr_size_t cap = g->refcap ? g->refcap * 2 : 256;
        vg_ref *more = realloc(g->refs, cap * sizeof(*more));

        if (!more) {
            return -1;
        }
        g->refs = more;
        g->refcap = cap;
    }
    g->nrefs += !g->nrefs;          /* (index 0 unused) */
    g->refs[g->nrefs].v = v;
    g->refs[g->nrefs].n = n;
    g->refs[g->nrefs].next = 0;
    if (x->rlast) {
        g->refs[x->rlast].next = g->nrefs;
    }
    else {
        x->rfirst = g->nrefs;
    }
    x->rlast = g->nrefs++;
    return 0;
}

/* Runs shorter than this are copied by qrt_vgroups_add_ref. */
#define VG_REF_MIN 16

/* The bound. A visit copied into the chunks takes 8 bytes of the slab, and one of a set
 * or of a set's member is spread with the sets' for their count: those count against max
 * (npairs). A run of a plain group held by reference takes no memory of g's but its place
 * in the runs' list, so it does not (nheld): a plain group past max visits is counted in
 * bands of its visitors, each spread in an array of about max (vg_count_big). A report's
 * blocks walked by date or as a whole, whose runs are held by reference, are so counted
 * in one walk where their copies would take several shares of the visitors. */
/* Radix by masks: group k (a set: each of its members) has a bit, of at most 64: 0, or -1
 * past them. */
#define VG_RADIX_BITS 64

static int vg_radix_bit(qrt_vgroups_t *g, vg_group *x)
{
    if (!x->rbit) {
        if (g->nrbits == VG_RADIX_BITS) {
            return -1;
        }
        x->rbit = ++g->nrbits;
    }
    return 0;
}

static int vg_radix_bits(qrt_vgroups_t *g, apr_uint32_t k)
{
    vg_group *x = &g->groups[k];
    apr_uint32_t q;

    if (!x->members) {
        return vg_radix_bit(g, x);
    }
    if (!x->rok) {
        for (q = 0; q < x->nmembers; q++) {
            if (vg_radix_bit(g, &g->groups[x->members[q]]) < 0) {
                return -1;
            }
        }
        g->groups[k].rok = 1;
    }
    return 0;
}

/* Counts a visit of group k by visitor (a click or a scan): 0, or -1 past max or
 * without memory. */
static int vg_pair_add(qrt_vgroups_t *g, apr_uint32_t k, int click, apr_uint64_t visitor)
{
    vg_group *x = &g->groups[k];

    if (g->share_mask && !vg_in_share(g, visitor)) {
        return 0;
    }
    if (g->radix) {
        unsigned char c = (unsigned char)(click != 0);

        /* (the store counts the group's visits and clicks) */
        if (g->npairs >= g->max || (g->rmasks && vg_radix_bits(g, k) < 0)
            || qrt_vradix_add(g->radix, k, NULL, &visitor, &c, 1, g->ngroups + 1) < 0) {
            return -1;
        }
        g->npairs++;
        return 0;
    }
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

/* A group of more than 16 visits is counted through tables of its visitors mixed by
 * vg_mix (a bijection, so mixed values are equal when the visitors are), indexed by their
 * low bits. A table has VG_LOAD slots or more a visitor: at half full, a probe runs on
 * past its first slot often enough that the loop's mispredicted ends take more time than
 * the table's reads. A group of up to VG_ONE visits goes in one table (512 KB at most,
 * in the CPU's second cache) filled straight from its chunks. A larger group is spread
 * over up to VG_PARTS parts by the high bits of the mixed visitors, about VG_PART a part,
 * each part then counted through a table of its own small enough for the first caches:
 * two sequential reads of the chunks and one of the parts, where one table for a large
 * group would miss the caches on nearly every visit. */
#define VG_LOAD 4
#define VG_ONE 16384
#define VG_PART 1024
#define VG_PARTS 1024
#define VG_PART_OF(h, bits) ((bits) ? (apr_size_t)((h) >> (64 - (bits))) : 0)

/* 1 when a slot's value s holds a visitor other than h (s is neither 0 nor h), told
 * without a branch: a table's put takes its first slot when it is empty or h, and which
 * of the two it is (whether the visitor was seen before) is as likely as not, so a branch
 * on it would be mispredicted half the time. */
static APR_INLINE apr_uint64_t vg_slot_other(apr_uint64_t s, apr_uint64_t h)
{
    apr_uint64_t x = s ^ h;

    return ((s | (0 - s)) & (x | (0 - x))) >> 63;
}

/* Puts the mixed visitor h (not 0) in slot, a table of size slots (a power of two, 0 for
 * empty): 1 when it was not there yet. */
static APR_INLINE int vg_table_put(apr_uint64_t *slot, apr_size_t size, apr_uint64_t h)
{
    apr_size_t j = (apr_size_t)h & (size - 1);
    apr_uint64_t s = slot[j];

    if (__builtin_expect(!vg_slot_other(s, h), 1)) {
        slot[j] = h;
        return s == 0;
    }
    for (j = (j + 1) & (size - 1); slot[j] && slot[j] != h; j = (j + 1) & (size - 1)) {
    }
    if (slot[j]) {
        return 0;
    }
    slot[j] = h;
    return 1;
}

/* Spreads group x's mixed visitors over parts (1 << bits of them) in one read of its
 * chunks: each part gets flatcap / parts places, part p from p * room, start[p] its
 * next place. The hash spreads the visitors evenly, so that a part's room is its share
 * of the visits with a margin of some standard deviations; should one part overflow
 * it (visitors chosen against the hash), 0 and the caller counts the parts first.
 * Sets *zero for a visitor 0 (mixed 0, an empty slot's value). vg_spread_runs reads the
 * runs after walk state w (room 0: from the first), runs of them (0: all), and spreads
 * the visitors of a band of the group's parts, [lo, lo + parts) of 1 << bits (the others
 * left out). */
static int vg_spread_runs(const qrt_vgroups_t *g, const vg_group *x, vg_walk w,
                          apr_size_t runs, apr_size_t lo, apr_uint64_t *flat,
                          apr_size_t flatcap, apr_size_t *start, apr_size_t parts,
                          unsigned bits, int *zero)
{
    apr_size_t room = flatcap / parts, p, n, r, read = 0;
    const apr_uint64_t *v;

    for (p = 0; p < parts; p++) {
        start[p] = p * room;
    }
    for (; (!runs || read++ < runs) && (v = vg_next(g, x, &w, &n));) {
        for (r = 0; r < n; r++) {
            apr_uint64_t h = vg_mix(v[r]);
            apr_size_t q = VG_PART_OF(h, bits) - lo;

            if (!h) {
                *zero = 1;
                continue;
            }
            if (q >= parts) {
                continue;           /* (another band's; below lo it wraps past parts) */
            }
            if (start[q] == (q + 1) * room) {
                return 0;
            }
            flat[start[q]++] = h;
        }
    }
    return 1;
}

static int vg_spread_once(const qrt_vgroups_t *g, const vg_group *x, apr_uint64_t *flat,
                          apr_size_t flatcap, apr_size_t *start, apr_size_t parts,
                          unsigned bits, int *zero)
{
    vg_walk w;

    w.room = 0;
    return vg_spread_runs(g, x, w, 0, 0, flat, flatcap, start, parts, bits, zero);
}

/* The places of flat for m visits spread over parts in one read (vg_spread_once,
 * vg_sets_spread_once): a part's share of them, and 8 of its standard deviations more. */
static apr_size_t vg_flat_room(apr_size_t m, apr_size_t parts)
{
    apr_size_t each = m / parts, sd = 1;

    while (sd * sd < each) {
        sd++;
    }
    return parts * (each + 8 * sd + 16);
}

/* The parts a count reads: part p of spread i in flat[i], ending at start[i][p] and
 * beginning at p * room[i], or where part p - 1 ends when room[i] is 0. */
typedef struct {
    const apr_uint64_t *flat[2];
    const apr_size_t *start[2];
    apr_size_t room[2];
    int n;                          /* spreads: 1 or 2 (a part's visitors in both) */
} vg_spreads;

static APR_INLINE apr_size_t vg_part_from(const vg_spreads *s, int i, apr_size_t p)
{
    return s->room[i] ? p * s->room[i] : p ? s->start[i][p - 1] : 0;
}

/* The distinct visitors of parts [p0, p1) of spreads s, each part counted through a table
 * of *slot (*slotcap slots, grown when a part needs more): their number, or -1 without
 * memory. */
static apr_int64_t vg_count_spreads(const vg_spreads *s, apr_size_t p0, apr_size_t p1,
                                    apr_uint64_t **slot, apr_size_t *slotcap)
{
    apr_size_t p, q, biggest = 0, size = 16, each;
    apr_int64_t u = 0;
    int i;

    for (p = p0; p < p1; p++) {
        for (each = 0, i = 0; i < s->n; i++) {
            each += s->start[i][p] - vg_part_from(s, i, p);
        }
        if (each > biggest) {
            biggest = each;
        }
    }
    while (size < VG_LOAD * biggest) {
        size *= 2;
    }
    if (size > *slotcap) {
        apr_uint64_t *more = realloc(*slot, size * sizeof(*more));

        if (!more) {
            return -1;
        }
        *slot = more;
        *slotcap = size;
    }
    for (p = p0; p < p1; p++) {
        for (each = 0, i = 0; i < s->n; i++) {
            each += s->start[i][p] - vg_part_from(s, i, p);
        }
        for (size = 16; size < VG_LOAD * each; size *= 2) {
        }
        memset(*slot, 0, size * sizeof(**slot));
        for (i = 0; i < s->n; i++) {
            const apr_uint64_t *flat = s->flat[i];

            for (q = vg_part_from(s, i, p); q < s->start[i][p]; q++) {
                u += vg_table_put(*slot, size, flat[q]);
            }
        }
    }
    return u;
}

/* The distinct visitors of the parts spread in flat (part p ends at start[p] and begins at
 * p * room, or where part p - 1 ends when room is 0), as vg_count_spreads counts them. */
static apr_int64_t vg_count_parts(const apr_uint64_t *flat, const apr_size_t *start,
                                  apr_size_t parts, apr_size_t room, apr_uint64_t **slot,
                                  apr_size_t *slotcap)
{
    vg_spreads s;

    memset(&s, 0, sizeof(s));
    s.flat[0] = flat;
    s.start[0] = start;
    s.room[0] = room;
    s.n = 1;
    return vg_count_spreads(&s, 0, parts, slot, slotcap);
}

/* Each group's distinct visitors, read from its chunks: a group of up to 16 visits by
 * comparing them, a larger one in parts (above; a visitor 0, whose mixed value 0 marks
 * an empty slot, counted apart). Not the sets, nor their members (bit[k] not 0). */
static int vg_count_plain_some(qrt_vgroups_t *g, const apr_uint32_t *bit,
                               const unsigned char *pick, unsigned which)
{
    apr_size_t most = 0, cap = 16, *start = NULL, slotcap = 0;
    apr_uint64_t *slot = NULL, *flat = NULL;
    apr_size_t flatcap = 0;
    apr_uint32_t k;

    for (k = 1; k <= g->ngroups; k++) {
        apr_size_t m = (apr_size_t)(g->groups[k].scans + g->groups[k].clicks);

        if (g->groups[k].members || (bit && bit[k]) || (pick && pick[k] != which)) {
            continue;
        }

        if (m > most) {
            most = m;
        }
    }
    while (cap < VG_LOAD * (most < VG_ONE ? most : VG_ONE)) {
        cap *= 2;
    }
    if (most > 16) {
        slotcap = cap;
        if (!(slot = malloc(slotcap * sizeof(*slot)))
            || !(start = malloc((VG_PARTS + 1) * sizeof(*start)))
            || !(flat = vg_take(VG_SPARE_FLAT,
                                most <= VG_ONE ? most : vg_flat_room(most, VG_PARTS), 0,
                                &flatcap))) {
            free(start);
            free(slot);
            return -1;
        }
    }
    for (k = 1; k <= g->ngroups; k++) {
        vg_group *x = &g->groups[k];
        apr_size_t m = (apr_size_t)(x->scans + x->clicks), n, r, q;
        apr_size_t parts, p, size = 16;
        const apr_uint64_t *v;
        vg_walk w;
        apr_int64_t u = 0;
        unsigned bits = 0;
        int zero = 0;

        if (x->members || (bit && bit[k]) || (pick && pick[k] != which)) {
            continue;
        }
        if (!m) {
            x->uniques = 0;
            continue;
        }
        if (m <= 16) {
            apr_uint64_t few[16];
            apr_size_t at = 0;

            for (w.room = 0; (v = vg_next(g, x, &w, &n));) {
                memcpy(few + at, v, n * sizeof(*few));
                at += n;
            }
            for (r = 0; r < m; r++) {
                for (q = 0; q < r && few[q] != few[r]; q++) {
                }
                u += q == r;
            }
            x->uniques = u;
            continue;
        }
        while (m > VG_ONE && bits < 10 && (m >> bits) > VG_PART) {
            bits++;
        }
        if (!bits) {
            /* one table filled from the chunks */
            for (; size < VG_LOAD * m; size *= 2) {
            }
            memset(slot, 0, size * sizeof(*slot));
            for (w.room = 0; (v = vg_next(g, x, &w, &n));) {
                for (r = 0; r < n; r++) {
                    if (v[r]) {
                        u += vg_table_put(slot, size, vg_mix(v[r]));
                    }
                    else {
                        zero = 1;
                    }
                }
            }
            x->uniques = u + zero;
            continue;
        }
        parts = (apr_size_t)1 << bits;
        if (vg_spread_once(g, x, flat, flatcap, start, parts, bits, &zero)) {
            /* (start[p] is where part p ends; each part begins at p * room) */
            if ((u = vg_count_parts(flat, start, parts, flatcap / parts, &slot, &slotcap)) < 0) {
                break;
            }
            x->uniques = u + zero;
            continue;
        }
        /* the mixed visitors (a visitor 0 counted apart) spread over the parts in flat:
         * their number in each part, then each put at its part's next place. The chunks
         * take the mixed values as they are counted (vg_mix is a bijection that keeps 0,
         * and the chunks are read no more once counted), so that the second pass does
         * not mix them again; the runs held by reference are mixed in both. */
        memset(start, 0, (parts + 1) * sizeof(*start));
        for (w.room = 0; (v = vg_next(g, x, &w, &n));) {
            apr_uint64_t *mixed = (apr_uint64_t *)(apr_uintptr_t)v;

            for (r = 0; r < n; r++) {
                if (!v[r]) {
                    zero = 1;
                }
                else if (w.ext) {
                    start[VG_PART_OF(vg_mix(v[r]), bits) + 1]++;
                }
                else {
                    mixed[r] = vg_mix(v[r]);
                    start[VG_PART_OF(mixed[r], bits) + 1]++;
                }
            }
        }
        for (p = 1; p <= parts; p++) {
            start[p] += start[p - 1];
        }
        for (w.room = 0; (v = vg_next(g, x, &w, &n));) {
            for (r = 0; r < n; r++) {
                if (v[r]) {
                    apr_uint64_t h = w.ext ? vg_mix(v[r]) : v[r];

                    flat[start[VG_PART_OF(h, bits)]++] = h;
                }
            }
        }
        /* (start[p] is now where part p ends) */
        if ((u = vg_count_parts(flat, start, parts, 0, &slot, &slotcap)) < 0) {
            break;
        }
        x->uniques = u + zero;
    }
    vg_give(VG_SPARE_FLAT, flat, flatcap);
    free(start);
    free(slot);
    return k <= g->ngroups ? -1 : 0;
}

/* A group of more than max visits (its runs held by reference: qrt_vgroups_add_ref) is
 * counted in bands: its parts (as above, by the high bits of the mixed visitors) cut into
 * B bands of consecutive parts, each band's visitors spread over its parts in one read of
 * the group's runs and counted, so that the spread array holds about max visits whatever
 * the group's size; B reads of the runs instead of B walks of a report's blocks. A group
 * of VG_BAND_PAR visits or more and two thirds of the visits is counted in two bands or
 * more, half of them by a second thread (each with arrays and tables of its own), where g
 * may use two: the other groups' count cannot share one group out between its threads. */
#define VG_BAND_PAR ((apr_size_t)1 << 20)

typedef struct {
    const qrt_vgroups_t *g;
    const vg_group *x;
    unsigned bits;                  /* the group's parts: 1 << bits */
    apr_size_t np;                  /* parts a band */
    apr_size_t b0, b1;              /* this count's bands, [b0, b1) */
    apr_size_t want;                /* places of its spread array */
    apr_int64_t u;
    int zero, rv;
} vg_band;

static void vg_band_run(vg_band *c)
{
    apr_size_t flatcap = 0, slotcap = 0, used = 0, b, *start;
    apr_uint64_t *flat, *slot = NULL;
    const apr_uint64_t *v;
    apr_int64_t u;

    c->u = 0;
    c->rv = -1;
    if (!(start = malloc((c->np + 1) * sizeof(*start)))
        || !(flat = vg_take(VG_SPARE_FLAT, c->want, 0, &flatcap))) {
        free(start);
        return;
    }
    for (b = c->b0; b < c->b1; b++) {
        apr_size_t lo = b * c->np, n, r, q;
        vg_walk w;

        used = flatcap;
        w.room = 0;
        if (vg_spread_runs(c->g, c->x, w, 0, lo, flat, flatcap, start, c->np, c->bits,
                           &c->zero)) {
            if ((u = vg_count_parts(flat, start, c->np, flatcap / c->np, &slot, &slotcap)) < 0) {
                goto done;
            }
            c->u += u;
            continue;
        }
        /* (a part past its room: the band's parts counted first, then filled in turn) */
        memset(start, 0, (c->np + 1) * sizeof(*start));
        for (w.room = 0; (v = vg_next(c->g, c->x, &w, &n));) {
            for (r = 0; r < n; r++) {
                apr_uint64_t h = vg_mix(v[r]);

                q = VG_PART_OF(h, c->bits) - lo;
                if (!h) {
                    c->zero = 1;    /* (the spread may have stopped before it) */
                }
                else if (q < c->np) {
                    start[q + 1]++;
                }
            }
        }
        for (q = 1; q <= c->np; q++) {
            start[q] += start[q - 1];
        }
        if (start[c->np] > flatcap) {
            apr_uint64_t *more = realloc(flat, start[c->np] * sizeof(*flat));

            if (!more) {
                goto done;
            }
            flat = more;
            flatcap = used = start[c->np];
        }
        for (w.room = 0; (v = vg_next(c->g, c->x, &w, &n));) {
            for (r = 0; r < n; r++) {
                apr_uint64_t h = vg_mix(v[r]);

                q = VG_PART_OF(h, c->bits) - lo;
                if (h && q < c->np) {
                    flat[start[q]++] = h;
                }
            }
        }
        if ((u = vg_count_parts(flat, start, c->np, 0, &slot, &slotcap)) < 0) {
            goto done;
        }
        c->u += u;
    }
    c->rv = 0;
done:
    vg_give(VG_SPARE_FLAT, flat, flatcap);
    free(start);
    free(slot);
}

static void vg_band_thread(void *data)
{
    vg_band_run(data);
}

/* A group counted by two threads: each spreads half of its runs over its parts, then
 * counts half of the parts, each from both spreads: a thread reads and scatters half of
 * the group, where two bands each read all of it and keep half, on a branch taken as
 * often as not. A group of 2 × r bands (past the bound: r > 1) is so counted in r rounds,
 * each of two bands' parts, with arrays of a band's size as the bands' count has. */
typedef struct {
    const qrt_vgroups_t *g;
    const vg_group *x;
    vg_walk from;                   /* the walk's state before this half's first run */
    apr_size_t runs;                /* this half's runs (0: to the last) */
    apr_size_t want;                /* places of its spread array */
    unsigned bits;
    apr_size_t lo, np;              /* this round's parts, [lo, lo + np) */
    apr_uint64_t *flat;
    apr_size_t flatcap, *start;
    int spread, zero;               /* spread: 1 spread, 0 a part overflowed, -1 memory */
    /* the count: parts [p0, p1) of both spreads */
    const vg_spreads *both;
    apr_size_t p0, p1;
    apr_int64_t u;
} vg_split;

static void vg_split_spread(void *data)
{
    vg_split *h = data;

    h->spread = -1;
    if ((!h->start && !(h->start = malloc((h->np + 1) * sizeof(*h->start))))
        || (!h->flat && !(h->flat = vg_take(VG_SPARE_FLAT, h->want, 0, &h->flatcap)))) {
        return;
    }
    h->spread = vg_spread_runs(h->g, h->x, h->from, h->runs, h->lo, h->flat, h->flatcap,
                               h->start, h->np, h->bits, &h->zero);
}

static void vg_split_count(void *data)
{
    vg_split *h = data;
    apr_uint64_t *slot = NULL;
    apr_size_t slotcap = 0;

    h->u = vg_count_spreads(h->both, h->p0, h->p1, &slot, &slotcap);
    free(slot);
}

/* Runs fn on both halves, the second on a spare thread when one can be had. */
static void vg_split_both(qrt_spare_fn *fn, vg_split *h)
{
    qrt_spare_job job;
    int threaded = qrt_spare_start(&job, fn, &h[1]) == 0;

    fn(&h[0]);
    if (threaded) {
        qrt_spare_wait(&job);
    }
    else {
        fn(&h[1]);
    }
}

static apr_size_t vg_split_halves, vg_split_banded;

void qrt_vgroups_split_counts(apr_size_t *halves, apr_size_t *banded)
{
    *halves = __atomic_load_n(&vg_split_halves, __ATOMIC_RELAXED);
    *banded = __atomic_load_n(&vg_split_banded, __ATOMIC_RELAXED);
}

/* Group x of m visits counted as above (bits: its parts, rounds: how many rounds): 1, 0
 * when a part overflowed its room (the caller counts it in bands), -1 without memory. */
static int vg_count_split(const qrt_vgroups_t *g, vg_group *x, apr_size_t m, unsigned bits,
                          apr_size_t rounds)
{
    apr_size_t parts = (apr_size_t)1 << bits, got = 0, runs = 0, n, j;
    apr_int64_t u = 0;
    vg_split h[2];
    vg_spreads both;
    vg_walk w;
    int i, rv = 1, zero = 0;

    memset(h, 0, sizeof(h));
    memset(&both, 0, sizeof(both));
    /* the first half: runs from the first up to half of the visits (one run at least) */
    for (w.room = 0; got < m / 2 && vg_next(g, x, &w, &n);) {
        got += n;
        runs++;
        h[1].from = w;
    }
    if (!runs) {
        return 0;                   /* (no run: nothing to halve) */
    }
    for (i = 0; i < 2; i++) {
        h[i].g = g;
        h[i].x = x;
        h[i].bits = bits;
        h[i].np = parts / rounds;
        h[i].want = vg_flat_room((i ? (m > got ? m - got : 0) : got) / rounds + 1, h[i].np);
    }
    h[0].from.room = 0;
    h[0].runs = runs;
    __atomic_add_fetch(&vg_split_halves, 1, __ATOMIC_RELAXED);
    for (j = 0; j < rounds && rv == 1; j++) {
        h[0].lo = h[1].lo = j * h[0].np;
        vg_split_both(vg_split_spread, h);
        rv = h[0].spread < 0 || h[1].spread < 0 ? -1 : h[0].spread && h[1].spread;
        if (rv != 1) {
            break;
        }
        both.n = 2;
        for (i = 0; i < 2; i++) {
            both.flat[i] = h[i].flat;
            both.start[i] = h[i].start;
            both.room[i] = h[i].flatcap / h[i].np;
            h[i].both = &both;
        }
        h[0].p0 = 0;
        h[0].p1 = h[1].p0 = h[0].np / 2;
        h[1].p1 = h[0].np;
        vg_split_both(vg_split_count, h);
        if (h[0].u < 0 || h[1].u < 0) {
            rv = -1;
        }
        u += h[0].u + h[1].u;
        zero |= h[0].zero | h[1].zero;
    }
    if (rv == 1) {
        x->uniques = u + zero;
    }
    else if (!rv) {
        __atomic_add_fetch(&vg_split_banded, 1, __ATOMIC_RELAXED);
    }
    for (i = 0; i < 2; i++) {
        if (h[i].flat) {
            vg_give(VG_SPARE_FLAT, h[i].flat, h[i].flatcap);
        }
        free(h[i].start);
    }
    return rv;
}

/* The distinct visitors of group x (of m visits) in bands: 0, or -1 without memory or
 * for a group of more than 2,048 times max visits. */
static int vg_count_big(qrt_vgroups_t *g, vg_group *x, apr_size_t m, int two)
{
    /* (a band may take what the copies left of the bound besides its own: the slab's
     * memory and the spread array's were bounded apart) */
    apr_size_t bands = 1, parts, cap = g->max + (g->max - g->npairs);
    unsigned bits = 0, bb = 0;
    vg_band c[2];
    qrt_spare_job job;
    int threaded = 0;

    while (m / bands > cap && bands < VG_PARTS) {
        bands *= 2;
        bb++;
    }
    if (m / bands > cap) {
        return -1;
    }
    if (two && bands == 1) {
        bands = 2;
        bb = 1;
    }
    while (m > VG_ONE && bits < 10 && (m >> bits) > VG_PART) {
        bits++;
    }
    if (bits < bb) {
        bits = bb;
    }
    if (two) {
        int rv = vg_count_split(g, x, m, bits, bands / 2);

        if (rv) {
            return rv < 0 ? -1 : 0;
        }
    }
    parts = (apr_size_t)1 << bits;
    memset(c, 0, sizeof(c));
    c[0].g = c[1].g = g;
    c[0].x = c[1].x = x;
    c[0].bits = c[1].bits = bits;
    c[0].np = c[1].np = parts / bands;
    c[0].want = c[1].want = vg_flat_room(m / bands + 1, parts / bands);
    c[0].b0 = 0;
    c[0].b1 = c[1].b0 = two ? bands / 2 : bands;
    c[1].b1 = bands;
    if (two && qrt_spare_start(&job, vg_band_thread, &c[1]) == 0) {
        threaded = 1;
    }
    vg_band_run(&c[0]);
    if (threaded) {
        qrt_spare_wait(&job);
    }
    else if (two) {
        vg_band_run(&c[1]);
    }
    if (c[0].rv < 0 || (two && c[1].rv < 0)) {
        return -1;
    }
    x->uniques = c[0].u + c[1].u + (c[0].zero || c[1].zero);
    return 0;
}

/* A second thread's share of vg_count_plain. */
typedef struct {
    qrt_vgroups_t *g;
    const apr_uint32_t *bit;
    const unsigned char *pick;
    int rv;
} vg_half;

static void vg_half_run(void *data)
{
    vg_half *h = data;

    h->rv = vg_count_plain_some(h->g, h->bit, h->pick, 1);
}

typedef struct {
    apr_size_t m;
    apr_uint32_t k;
} vg_size;

static int vg_size_cmp(const void *a, const void *b)
{
    const vg_size *x = a, *y = b;

    return x->m < y->m ? 1 : x->m > y->m ? -1 : (x->k > y->k) - (x->k < y->k);
}

/* Each plain group's distinct visitors (not the sets, nor their members): in two
 * threads when g may use them and its plain groups hold VG_PAR_MIN visits or more, the
 * groups shared out between them by their visits (the largest first, each to the one
 * with fewer so far): a group's count is its own, in tables of its own. */
static int vg_count_plain(qrt_vgroups_t *g, const apr_uint32_t *bit)
{
    apr_size_t all = 0, whole = 0, load[2] = { 0, 0 };
    unsigned char *pick = NULL;
    vg_size *by = NULL;
    apr_uint32_t k, nby = 0;
    qrt_spare_job job;
    vg_half h;
    int rv;

    for (k = 1; k <= g->ngroups; k++) {
        if (!g->groups[k].members && !(bit && bit[k])) {
            whole += (apr_size_t)(g->groups[k].scans + g->groups[k].clicks);
        }
    }
    /* groups past the bound, or of two thirds of the visits or more (the others too few
     * for the second thread: each band reads the whole group), in bands (pick 2: not
     * among the others) */
    for (k = 1; k <= g->ngroups; k++) {
        vg_group *x = &g->groups[k];
        apr_size_t m = (apr_size_t)(x->scans + x->clicks);

        if (x->members || (bit && bit[k])) {
            continue;
        }
        if (m > g->max || (g->threads >= 2 && m >= VG_BAND_PAR && m >= g->par_min
                           && m / 2 >= whole / 3)) {
            if ((!pick && !(pick = calloc((apr_size_t)g->ngroups + 1, 1)))
                || vg_count_big(g, x, m, g->threads >= 2 && m >= g->par_min) < 0) {
                free(pick);
                return -1;
            }
            pick[k] = 2;
        }
        else {
            all += m;
        }
    }
    if (g->threads < 2 || all < g->par_min
        || (!pick && !(pick = calloc((apr_size_t)g->ngroups + 1, 1)))
        || !(by = malloc(((apr_size_t)g->ngroups + 1) * sizeof(*by)))) {
        rv = vg_count_plain_some(g, bit, pick, 0);  /* (pick NULL: no group in bands) */
        free(pick);
        return rv;
    }
    for (k = 1; k <= g->ngroups; k++) {
        if (!g->groups[k].members && !(bit && bit[k]) && pick[k] != 2) {
            by[nby].m = (apr_size_t)(g->groups[k].scans + g->groups[k].clicks);
            by[nby++].k = k;
        }
    }
    qsort(by, nby, sizeof(*by), vg_size_cmp);
    for (k = 0; k < nby; k++) {
        int to = load[1] < load[0];

        pick[by[k].k] = (unsigned char)to;
        load[to] += by[k].m;
    }
    free(by);
    h.g = g;
    h.bit = bit;
    h.pick = pick;
    h.rv = -1;
    if (qrt_spare_start(&job, vg_half_run, &h) != 0) {
        for (k = 1; k <= g->ngroups; k++) {
            pick[k] = pick[k] == 2 ? 2 : 0;
        }
        rv = vg_count_plain_some(g, bit, pick, 0);
        free(pick);
        return rv;
    }
    rv = vg_count_plain_some(g, bit, pick, 0);
    qrt_spare_wait(&job);
    free(pick);
    return rv < 0 || h.rv < 0 ? -1 : 0;
}

/* Parts [p0, p1) of vg_count_sets' spread visitors: each part's visitors gathered in a
 * table of its own (tab, tabm: room for the biggest part) with the union of their
 * groups' bits; a visitor new to the part adds to its source's per[], a bit it had not
 * had to cnt[]. Parts are independent: two threads take a half of them each, with
 * tables and counts of their own. */
typedef struct {
    const apr_uint64_t *flat, *mask;
    const apr_size_t *start;            /* where each part ends */
    const apr_uint32_t *runs;           /* each source's visitors in each part */
    apr_size_t nsrc, parts, words, size;
    apr_size_t p0, p1;
    apr_size_t room;                    /* not 0: parts spread by vg_sets_spread_once */
    const apr_uint64_t *flat2;          /* not NULL: the later sources' spread (room2 a part,
                                         * start2 where each part ends), read after flat's */
    const apr_size_t *start2;
    apr_size_t room2;
    unsigned shift;                     /* (its entries' source: entry >> shift) */
    apr_int64_t *cnt, *per;
    int rv;
} vg_sets_part;

/* Where vg_sets_spread_once put part p's entries: [*from, end); a source's visitors are
 * ordered by source (runs), else each entry names its own (room). */
static APR_INLINE apr_size_t vg_sets_from(const vg_sets_part *c, apr_size_t p)
{
    return c->room ? p * c->room : p ? c->start[p - 1] : 0;
}

/* Part p's entries in both spreads of vg_sets_spread_once (the room case). */
static APR_INLINE apr_size_t vg_sets_size(const vg_sets_part *c, apr_size_t p)
{
    return c->start[p] - vg_sets_from(c, p) + (c->flat2 ? c->start2[p] - p * c->room2 : 0);
}

/* Where part p's entries lie in spread i (0, or 1: flat2) of the room case: f[*q, *e)
 * for the f returned; vg_sets_spreads tells how many spreads there are (0: no room). */
static APR_INLINE const apr_uint64_t *vg_sets_seg(const vg_sets_part *c, int i, apr_size_t p,
                                                  apr_size_t *q, apr_size_t *e)
{
    *q = i ? p * c->room2 : vg_sets_from(c, p);
    *e = i ? c->start2[p] : c->start[p];
    return i ? c->flat2 : c->flat;
}

static APR_INLINE int vg_sets_spreads(const vg_sets_part *c)
{
    return c->room ? 1 + (c->flat2 != NULL) : 0;
}

/* An entry of vg_sets_spread_once: the part's visitor (its mixed value less the part's
 * bits, which all of the part's share, with the top bit set: never 0) and its source. */
#define VG_ENTRY_KEY(e, shift) (((e) & ((APR_UINT64_C(1) << (shift)) - 1)) \
                                | (APR_UINT64_C(1) << 63))
#define VG_ENTRY_SRC(e, shift) ((apr_size_t)((e) >> (shift)))

/* Counts visitor h (not 0) of a source whose groups' bits are mk in a part's table of
 * ps slots, visitor and bits side by side (kv): 1 for a visitor new to the part (counted
 * through its source's count; its slot added at *used), else 0 and each bit it had not
 * had counted in cnt. */
static APR_INLINE apr_size_t vg_kv_put(apr_uint64_t *kv, apr_size_t ps, apr_uint64_t h,
                                       apr_uint64_t mk, apr_int64_t *cnt, apr_size_t **used)
{
    apr_size_t j = (apr_size_t)h & (ps - 1);
    apr_uint64_t s = kv[2 * j], word, fresh, old;

    if (__builtin_expect(vg_slot_other(s, h), 0)) {
        /* (the first slot holds another visitor: along the probe) */
        for (j = (j + 1) & (ps - 1); kv[2 * j] && kv[2 * j] != h; j = (j + 1) & (ps - 1)) {
        }
        s = kv[2 * j];
    }
    /* (new or seen, written without a branch on which; **used is past the slots used,
     * within their array's room, and kept only for a new visitor) */
    fresh = s == 0;
    old = kv[2 * j + 1] & (fresh - 1);
    word = (mk & ~old) & (fresh - 1);
    kv[2 * j] = h;
    kv[2 * j + 1] = old | mk;
    **used = j;
    *used += fresh;
    for (; word; word &= word - 1) {
        cnt[__builtin_ctzll(word)]++;
    }
    return (apr_size_t)fresh;
}

/* vg_kv_put for bits of several words (mk: words of them): the visitors in tab, their
 * bits in tabm (words a slot). */
static APR_INLINE apr_size_t vg_tab_put(apr_uint64_t *tab, apr_uint64_t *tabm, apr_size_t ps,
                                        apr_size_t words, apr_uint64_t h,
                                        const apr_uint64_t *mk, apr_int64_t *cnt,
                                        apr_size_t **used)
{
    apr_uint64_t *have;
    apr_size_t j, w;

    for (j = (apr_size_t)h & (ps - 1); tab[j] && tab[j] != h; j = (j + 1) & (ps - 1)) {
    }
    have = tabm + j * words;
    if (!tab[j]) {
        tab[j] = h;
        for (w = 0; w < words; w++) {
            have[w] = mk[w];
        }
        *(*used)++ = j;
        return 1;
    }
    for (w = 0; w < words; w++) {
        apr_uint64_t word = mk[w] & ~have[w];

        have[w] |= word;
        for (; word; word &= word - 1) {
            cnt[w * 64 + (apr_size_t)__builtin_ctzll(word)]++;
        }
    }
    return 0;
}

/* Puts visitor h of a source whose groups' bits are mk in a part's table: where the sets
 * name at most 64 groups (one: a word of bits a visitor), each slot holds the visitor and
 * its bits side by side in tabm (vg_kv_put: 2 words a slot), so that a probe reads one
 * cache line, not one in each of two tables (vg_tab_put: tab and tabm). */
static APR_INLINE apr_size_t vg_sets_put(int one, apr_uint64_t *tab, apr_uint64_t *tabm,
                                         apr_size_t ps, apr_size_t words, apr_uint64_t h,
                                         const apr_uint64_t *mk, apr_int64_t *cnt,
                                         apr_size_t **at)
{
    return one ? vg_kv_put(tabm, ps, h, mk[0], cnt, at)
               : vg_tab_put(tab, tabm, ps, words, h, mk, cnt, at);
}

/* Parts [p0, p1) of c counted (vg_sets_parts), one as vg_sets_put: inlined into a copy
 * of each kind, so that the put is chosen once, not a visit. The tables are cleared once,
 * then after each part only in the slots it used: a part's visits come back to few
 * visitors, and its table, sized by its visits, would otherwise be cleared whole for each
 * part. */
static APR_INLINE __attribute__((always_inline)) void vg_sets_parts_with(
    vg_sets_part *c, int one, apr_uint64_t *tab, apr_uint64_t *tabm, apr_size_t *used)
{
    const apr_uint64_t *flat = c->flat;
    apr_size_t words = c->words, p, r;

    for (p = c->p0; p < c->p1; p++) {
        apr_size_t ps, q = vg_sets_from(c, p), *at = used;
        int i;

        for (ps = 16; ps < VG_LOAD * vg_sets_size(c, p); ps *= 2) {
        }
        for (i = 0; i < vg_sets_spreads(c); i++) {
            apr_size_t e;
            const apr_uint64_t *f = vg_sets_seg(c, i, p, &q, &e);

            for (; q < e; q++) {
                apr_size_t from = VG_ENTRY_SRC(f[q], c->shift);

                c->per[from] += (apr_int64_t)vg_sets_put(one, tab, tabm, ps, words,
                                                         VG_ENTRY_KEY(f[q], c->shift),
                                                         c->mask + from * words, c->cnt,
                                                         &at);
            }
        }
        for (r = 0; !c->room && r < c->nsrc; r++) {
            apr_size_t end = q + c->runs[r * c->parts + p], fresh = 0;

            for (; q < end; q++) {
                fresh += vg_sets_put(one, tab, tabm, ps, words, flat[q], c->mask + r * words,
                                     c->cnt, &at);
            }
            c->per[r] += (apr_int64_t)fresh;
        }
        while (at > used) {
            /* (the table empty again for the next part) */
            --at;
            if (one) {
                tabm[2 * *at] = 0;
            }
            else {
                tab[*at] = 0;
            }
        }
    }
}

static void *vg_sets_parts(void *data)
{
    vg_sets_part *c = data;
    apr_size_t words = c->words;
    apr_uint64_t *tab = calloc(c->size, sizeof(*tab));
    apr_uint64_t *tabm = calloc(c->size * (words < 2 ? 2 : words), sizeof(*tabm));
    apr_size_t *used = malloc(c->size / VG_LOAD * sizeof(*used) + sizeof(*used));

    c->rv = -1;
    if (tab && tabm && used) {
        if (words == 1) {
            vg_sets_parts_with(c, 1, tab, tabm, used);
        }
        else {
            vg_sets_parts_with(c, 0, tab, tabm, used);
        }
        c->rv = 0;
    }
    free(tabm);
    free(tab);
    free(used);
    return NULL;
}

static void vg_sets_parts_any(void *data)
{
    vg_sets_parts(data);
}

/* Spreads sources [r0, r1)' mixed visitors over the parts (1 << bits of them, no fewer
 * than the sources) in one read of their chunks, as vg_spread_once does for a group: part p
 * from p * room, start[p] its next place, each entry its visitor and source
 * (VG_ENTRY_KEY, VG_ENTRY_SRC). 0 when a part overflows its room (the caller then counts
 * the parts first); zero gets the bits of the sources of a visitor 0. */
static int vg_sets_spread_some(const qrt_vgroups_t *g, const apr_uint32_t *src,
                               apr_size_t r0, apr_size_t r1, const vg_sets_part *c,
                               apr_size_t room, apr_uint64_t *flat, apr_size_t *start,
                               unsigned bits, apr_uint64_t *zero)
{
    apr_size_t p, r, n, i, q, shift = 64 - bits;
    const apr_uint64_t *v;
    vg_walk w;

    for (p = 0; p < c->parts; p++) {
        start[p] = p * room;
    }
    for (r = r0; r < r1; r++) {
        const vg_group *x = &g->groups[src[r]];
        apr_uint64_t tag = (apr_uint64_t)r << shift;

        for (w.room = 0; (v = vg_next(g, x, &w, &n));) {
            for (i = 0; i < n; i++) {
                apr_uint64_t h = vg_mix(v[i]);

                if (!h) {
                    for (q = 0; q < c->words; q++) {
                        zero[q] |= c->mask[r * c->words + q];
                    }
                    continue;
                }
                p = VG_PART_OF(h, bits);
                if (start[p] == (p + 1) * room) {
                    return 0;
                }
                flat[start[p]++] = tag | (h & ((APR_UINT64_C(1) << shift) - 1));
            }
        }
    }
    return 1;
}

/* A second thread's spread of the later sources (vg_count_sets). */
typedef struct {
    const qrt_vgroups_t *g;
    const apr_uint32_t *src;
    apr_size_t r0, r1, room;
    const vg_sets_part *c;
    apr_uint64_t *flat, *zero;
    apr_size_t *start;
    unsigned bits;
    int rv;
} vg_sets_spread_job;

static void vg_sets_spread_run(void *data)
{
    vg_sets_spread_job *j = data;

    j->rv = vg_sets_spread_some(j->g, j->src, j->r0, j->r1, j->c, j->room, j->flat, j->start,
                                j->bits, j->zero);
}

/* The distinct visitors of the groups that sets hold (bit[k]: group k's bit + 1, nbits of
 * them): each visit of a set, or of such a group itself, counts its visitor once in
 * every group it names. The visits are spread over parts by their mixed visitor (as in
 * vg_count_plain), each part's visitors then gathered in a table with the union of
 * their groups' bits, and each bit of each visitor counted once. (A slot of that table
 * takes a bit a group the sets name: the 20,000 tags 1,000 listed trackers may have make
 * it 2.5 KB, a part's table about 20 MB at the most.) */
static int vg_count_sets(qrt_vgroups_t *g, const apr_uint32_t *bit, apr_uint32_t nbits)
{
    apr_size_t words = (nbits + 63) / 64, m = 0, nsrc = 0, parts, p, r, q, n;
    apr_size_t biggest = 0, size, *start = NULL;
    const apr_uint64_t *v;
    vg_walk w;
    apr_uint32_t k, b, *src = NULL, *runs = NULL, *grp = NULL;
    apr_uint64_t *mask = NULL, *zero = NULL, *flat = NULL;
    apr_size_t flatcap = 0;
    apr_int64_t *cnt = NULL, *per = NULL;
    vg_sets_part one, two;
    qrt_spare_job job;
    vg_sets_spread_job sj;
    apr_uint64_t *flat2 = NULL, *zero2 = NULL;
    apr_size_t flat2cap = 0, *start2 = NULL;
    unsigned bits = 0;
    int rv = -1, split = 0, spread2 = 0;

    /* the sources (sets, and member groups with visits of their own), their masks */
    if (!(src = malloc(g->ngroups * sizeof(*src))) || !(grp = malloc(nbits * sizeof(*grp)))
        || !(zero = calloc(words, sizeof(*zero)))
        || !(cnt = calloc(words * 64, sizeof(*cnt)))) {
        goto done;
    }
    for (k = 1; k <= g->ngroups; k++) {
        vg_group *x = &g->groups[k];

        if (bit[k]) {
            grp[bit[k] - 1] = k;
        }
        if ((x->members || bit[k]) && x->scans + x->clicks > 0) {
            src[nsrc++] = k;
            m += (apr_size_t)(x->scans + x->clicks);
        }
    }
    if (!(mask = calloc(nsrc * words + 1, sizeof(*mask)))
        || !(per = calloc(nsrc + 1, sizeof(*per)))) {
        goto done;
    }
    for (r = 0; r < nsrc; r++) {
        vg_group *x = &g->groups[src[r]];
        apr_uint64_t *mk = mask + r * words;

        if (!x->members) {
            mk[(bit[src[r]] - 1) / 64] |= (apr_uint64_t)1 << ((bit[src[r]] - 1) % 64);
        }
        for (q = 0; q < x->nmembers; q++) {
            b = bit[x->members[q]] - 1;
            mk[b / 64] |= (apr_uint64_t)1 << (b % 64);
        }
    }
    memset(&one, 0, sizeof(one));
    one.mask = mask;
    one.nsrc = nsrc;
    one.words = words;
    /* as many parts as plain groups take; each entry names its source when there are
     * no more sources than parts */
    while (bits < 10 && (m >> bits) > VG_PART) {
        bits++;
    }
    parts = (apr_size_t)1 << bits;
    if (bits && nsrc <= parts) {
        /* where g may use two threads, the later sources (half of the visits) spread by a
         * second one into arrays of its own, read after the first's */
        apr_size_t half = 0, cut = nsrc;

        if (g->threads >= 2 && m >= g->par_min && nsrc >= 2) {
            for (cut = 0; cut < nsrc - 1 && (!cut || half < m / 2); cut++) {
                half += (apr_size_t)(g->groups[src[cut]].scans + g->groups[src[cut]].clicks);
            }
        }
        if (!(start = calloc(parts + 1, sizeof(*start)))
            || !(flat = vg_take(VG_SPARE_FLAT, vg_flat_room(cut < nsrc ? half : m, parts), 0,
                                &flatcap))) {
            goto done;
        }
        one.parts = parts;
        one.room = flatcap / parts;
        one.shift = 64 - bits;
        memset(&sj, 0, sizeof(sj));
        sj.rv = 1;
        if (cut < nsrc) {
            sj.g = g;
            sj.src = src;
            sj.r0 = cut;
            sj.r1 = nsrc;
            sj.c = &one;
            sj.bits = bits;
            if (!(start2 = calloc(parts + 1, sizeof(*start2)))
                || !(zero2 = calloc(words, sizeof(*zero2)))
                || !(flat2 = vg_take(VG_SPARE_FLAT, vg_flat_room(m - half, parts), 0,
                                     &flat2cap))) {
                goto done;
            }
            sj.flat = flat2;
            sj.start = start2;
            sj.zero = zero2;
            sj.room = flat2cap / parts;
            if (qrt_spare_start(&job, vg_sets_spread_run, &sj) != 0) {
                vg_sets_spread_run(&sj);
            }
            else {
                spread2 = 1;
            }
        }
        r = (apr_size_t)vg_sets_spread_some(g, src, 0, cut, &one, one.room, flat, start, bits,
                                            zero);
        if (spread2) {
            qrt_spare_wait(&job);
        }
        if (r && sj.rv) {
            if (cut < nsrc) {
                one.flat2 = flat2;
                one.start2 = start2;
                one.room2 = sj.room;
                for (q = 0; q < words; q++) {
                    zero[q] |= zero2[q];
                }
            }
            one.start = start;
            for (p = 0; p < parts; p++) {
                if (vg_sets_size(&one, p) > biggest) {
                    biggest = vg_sets_size(&one, p);
                }
            }
            goto spread;
        }
        one.room = 0;
        vg_give(VG_SPARE_FLAT, flat, flatcap);
        flat = NULL;
        free(start);
        start = NULL;
        if (flat2) {
            vg_give(VG_SPARE_FLAT, flat2, flat2cap);
            flat2 = NULL;
        }
        memset(zero, 0, words * sizeof(*zero));
    }
    /* else each source's visitors counted by part first, then put in their part in
     * source order (as many parts as plain groups take, fewer while those counts would
     * outgrow the visits) */
    for (bits = 0; bits < 10 && (m >> bits) > VG_PART && nsrc << (bits + 1) <= m + 65536;) {
        bits++;
    }
    parts = (apr_size_t)1 << bits;
    if (!(start = calloc(parts + 1, sizeof(*start))) || !(flat = vg_take(VG_SPARE_FLAT, m + 1, 0, &flatcap))
        || !(runs = calloc(nsrc * parts, sizeof(*runs)))) {
        goto done;
    }
    /* each source's visitors by part; a part's visitors are then put in source order */
    for (r = 0; r < nsrc; r++) {
        vg_group *x = &g->groups[src[r]];
        apr_uint32_t *rn = runs + r * parts;

        for (w.room = 0; (v = vg_next(g, x, &w, &n));) {
            apr_size_t i;

            for (i = 0; i < n; i++) {
                if (v[i]) {
                    rn[VG_PART_OF(vg_mix(v[i]), bits)]++;
                }
                else {
                    for (q = 0; q < words; q++) {
                        zero[q] |= mask[r * words + q];
                    }
                }
            }
        }
    }
    for (p = 0; p < parts; p++) {
        for (n = 0, r = 0; r < nsrc; r++) {
            n += runs[r * parts + p];
        }
        if (n > biggest) {
            biggest = n;
        }
        start[p + 1] = start[p] + n;
    }
    for (r = 0; r < nsrc; r++) {
        vg_group *x = &g->groups[src[r]];

        for (w.room = 0; (v = vg_next(g, x, &w, &n));) {
            apr_size_t i;

            for (i = 0; i < n; i++) {
                if (v[i]) {
                    apr_uint64_t h = vg_mix(v[i]);

                    flat[start[VG_PART_OF(h, bits)]++] = h;
                }
            }
        }
    }
spread:
    for (size = 16; size < VG_LOAD * biggest; size *= 2) {
    }
    /* (start[p] is now where part p ends) the parts counted, in two threads when g may
     * use them and the sets hold par_min visits or more: the second takes the later
     * half of the parts, with counts of its own added after */
    one.flat = flat;
    one.start = start;
    one.runs = runs;
    one.parts = parts;
    one.size = size;
    one.p1 = parts;
    one.cnt = cnt;
    one.per = per;
    two = one;
    if (g->threads >= 2 && m >= g->par_min && parts >= 2
        && (two.cnt = calloc(words * 64, sizeof(*two.cnt)))
        && (two.per = calloc(nsrc + 1, sizeof(*two.per)))) {
        one.p1 = two.p0 = parts / 2;
        two.rv = -1;
        split = qrt_spare_start(&job, vg_sets_parts_any, &two) == 0;
        if (!split) {
            one.p1 = parts;
        }
    }
    vg_sets_parts(&one);
    if (split) {
        qrt_spare_wait(&job);
        for (r = 0; two.rv == 0 && r < words * 64; r++) {
            cnt[r] += two.cnt[r];
        }
        for (r = 0; two.rv == 0 && r < nsrc; r++) {
            per[r] += two.per[r];
        }
    }
    if (two.cnt != cnt) {
        free(two.cnt);
    }
    if (two.per != per) {
        free(two.per);
    }
    if (one.rv < 0 || (split && two.rv < 0)) {
        goto done;
    }
    for (r = 0; r < nsrc; r++) {
        for (q = 0; per[r] && q < words; q++) {
            apr_uint64_t word = mask[r * words + q];

            for (; word; word &= word - 1) {
                cnt[q * 64 + (apr_size_t)__builtin_ctzll(word)] += per[r];
            }
        }
    }
    for (q = 0; q < words; q++) {
        apr_uint64_t word = zero[q];

        for (; word; word &= word - 1) {
            cnt[q * 64 + (apr_size_t)__builtin_ctzll(word)]++;
        }
    }
    for (b = 0; b < nbits; b++) {
        g->groups[grp[b]].uniques += cnt[b];
    }
    rv = 0;
done:
    free(runs);
    vg_give(VG_SPARE_FLAT, flat, flatcap);
    free(start);
    if (flat2) {
        vg_give(VG_SPARE_FLAT, flat2, flat2cap);
    }
    free(start2);
    free(zero2);
    free(mask);
    free(per);
    free(cnt);
    free(zero);
    free(grp);
    free(src);
    return rv;
}

/* Every group's scans, clicks and distinct visitors; the adds end. */
/* vg_count in radix mode: the stores' distinct visitors per group. */
static int vg_count_radix(qrt_vgroups_t *g)
{
    qrt_vradix_t **rs = malloc(((apr_size_t)g->nrfrom + 1) * sizeof(*rs));
    const apr_uint32_t **ms = malloc(((apr_size_t)g->nrfrom + 1) * sizeof(*ms));
    apr_int64_t *u = calloc((apr_size_t)g->ngroups + 1 + VG_RADIX_BITS, sizeof(*u));
    apr_uint64_t *masks = g->rmasks ? calloc((apr_size_t)g->ngroups + 1, sizeof(*masks)) : NULL;
    apr_uint32_t k, q;
    int i, rv = -1, threads = g->threads >= 2 && g->npairs >= g->par_min ? 2 : 1;

    if (rs && ms && u && (masks || !g->rmasks)) {
        rs[0] = g->radix;
        ms[0] = NULL;
        for (i = 0; i < g->nrfrom; i++) {
            rs[i + 1] = g->rfrom[i];
            ms[i + 1] = g->rmaps[i];
        }
        if (!g->rmasks) {
            rv = qrt_vradix_uniques(rs, ms, g->nrfrom + 1, g->ngroups + 1, threads, u);
            for (k = 1; rv == 0 && k <= g->ngroups; k++) {
                g->groups[k].uniques = u[k];
            }
        }
        else {
            /* each group's mask: its own bit, a set its members' (given as its visits
             * were added); each bit's visitors are its group's */
            for (k = 1; k <= g->ngroups; k++) {
                vg_group *x = &g->groups[k];

                for (q = 0; q < x->nmembers; q++) {
                    vg_group *y = &g->groups[x->members[q]];

                    masks[k] |= y->rbit ? (apr_uint64_t)1 << (y->rbit - 1) : 0;
                }
                masks[k] |= !x->members && x->rbit ? (apr_uint64_t)1 << (x->rbit - 1) : 0;
            }
            rv = qrt_vradix_uniques_masks(rs, ms, g->nrfrom + 1, masks, g->ngroups + 1,
                                          threads, u);
            for (k = 1; rv == 0 && k <= g->ngroups; k++) {
                vg_group *x = &g->groups[k];

                x->uniques = !x->members && x->rbit ? u[x->rbit - 1] : 0;
            }
        }
        /* the groups' visits and clicks, as the stores counted them (a set's are each of
         * its members') */
        for (i = 0; rv == 0 && i <= g->nrfrom; i++) {
            apr_uint32_t top = i ? QRT_VRADIX_GROUPS - 1 : g->ngroups;

            for (k = 1; k <= top && k < QRT_VRADIX_GROUPS; k++) {
                apr_uint32_t to = i ? ms[i][k] : k;
                apr_int64_t visits, clicks;
                vg_group *x;

                qrt_vradix_counts(rs[i], k, &visits, &clicks);
                if (!to || !visits) {
                    continue;
                }
                x = &g->groups[to];
                x->scans += visits - clicks;
                x->clicks += clicks;
                for (q = 0; q < x->nmembers; q++) {
                    g->groups[x->members[q]].scans += visits - clicks;
                    g->groups[x->members[q]].clicks += clicks;
                }
            }
        }
    }
    free(masks);
    free(rs);
    free(ms);
    free(u);
    if (rv == 0) {
        qrt_vradix_free(g->radix);
        g->radix = NULL;
        for (i = 0; i < g->nrfrom; i++) {
            qrt_vradix_free(g->rfrom[i]);
            free(g->rmaps[i]);
        }
        g->nrfrom = 0;
        vg_give(VG_SPARE_SLAB, g->slab, g->slabcap);
        g->slab = NULL;
        g->slabcap = g->slabused = 0;
        g->counted = 1;
    }
    return rv;
}

static int vg_count(qrt_vgroups_t *g)
{
    apr_uint32_t k, q, nbits = 0, *bit = NULL;
    int rv;

    if (g->counted) {
        return 0;
    }
    if (g->radix) {
        return vg_count_radix(g);
    }
    for (k = 1; k <= g->ngroups && !bit; k++) {
        if (g->groups[k].members && !(bit = calloc(g->ngroups + 1, sizeof(*bit)))) {
            return -1;
        }
    }
    /* the members' bits, their visits through sets, their visitors counted from 0 */
    for (k = 1; bit && k <= g->ngroups; k++) {
        vg_group *x = &g->groups[k];

        for (q = 0; q < x->nmembers; q++) {
            vg_group *y = &g->groups[x->members[q]];

            if (!bit[x->members[q]]) {
                bit[x->members[q]] = ++nbits;
                y->uniques = 0;
            }
        }
    }
    rv = vg_count_plain(g, bit);
    if (rv == 0 && bit) {
        rv = vg_count_sets(g, bit, nbits);
    }
    if (rv == 0 && bit) {
        /* the sets' visits added to their members' */
        for (k = 1; k <= g->ngroups; k++) {
            vg_group *x = &g->groups[k];

            for (q = 0; q < x->nmembers; q++) {
                g->groups[x->members[q]].scans += x->scans;
                g->groups[x->members[q]].clicks += x->clicks;
            }
        }
    }
    free(bit);
    if (rv < 0) {
        return -1;
    }
    vg_give(VG_SPARE_SLAB, g->slab, g->slabcap);
    g->slab = NULL;
    g->slabcap = g->slabused = 0;
    g->counted = 1;
    return 0;
}

apr_uint32_t qrt_vgroups_group(qrt_vgroups_t *g, const char *key, apr_size_t klen)
{
    return g->counted ? 0 : vg_group_of(g, key, klen, 0);
}

apr_uint32_t qrt_vgroups_set(qrt_vgroups_t *g, const apr_uint32_t *groups, apr_size_t n)
{
    apr_uint32_t *key;
    apr_size_t i, j, m = 0;
    apr_uint32_t k;

    if (g->counted || !n || (g->radix && !g->rmasks) || !(key = malloc(n * sizeof(*key)))) {
        return 0;
    }
    /* its members in order, once each: the same set whatever order they come in */
    for (i = 0; i < n; i++) {
        apr_uint32_t y = groups[i];

        if (!y || y > g->ngroups || g->groups[y].members) {
            free(key);
            return 0;
        }
        for (j = m; j > 0 && key[j - 1] > y; j--) {
        }
        if (j > 0 && key[j - 1] == y) {
            continue;
        }
        memmove(key + j + 1, key + j, (m - j) * sizeof(*key));
        key[j] = y;
        m++;
    }
    /* (the members' visits held by reference now count against the bound) */
    for (i = 0, j = 0; i < m; i++) {
        j += g->groups[key[i]].held;
    }
    if (j > g->max || g->npairs > g->max - j
        || !(k = vg_group_of(g, (const char *)key, m * sizeof(*key), 1))) {
        free(key);
        return 0;
    }
    for (i = 0; i < m; i++) {
        vg_group *y = &g->groups[key[i]];

        y->member = 1;
        g->nheld -= y->held;
        g->npairs += y->held;
        y->held = 0;
    }
    free(key);
    return k;
}

int qrt_vgroups_add_to(qrt_vgroups_t *g, apr_uint32_t group, int click, apr_int64_t visitor)
{
    return g->counted || !group || group > g->ngroups
           ? -1 : vg_pair_add(g, group, click, (apr_uint64_t)visitor);
}

/* Adds n visits of the share (the bound and the groups checked by the caller): all of
 * group when groups is NULL, else each of groups[i]. 0, or -1 without memory. */
static int vg_add_many(qrt_vgroups_t *g, apr_uint32_t group, const apr_uint32_t *groups,
                       const apr_uint64_t *visitors, const unsigned char *clicks, apr_size_t n)
{
    apr_size_t i;

    if (g->radix) {
        /* (spread as added; the store counts the groups' visits and clicks) */
        if (g->rmasks) {
            for (i = 0; i < (groups ? n : 1); i++) {
                apr_uint32_t k = groups ? groups[i] : group;

                if (k && k <= g->ngroups && !g->groups[k].rbit && !g->groups[k].rok
                    && vg_radix_bits(g, k) < 0) {
                    return -1;
                }
            }
        }
        return qrt_vradix_add(g->radix, group, groups, visitors, clicks, n, g->ngroups + 1);
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
                to[j] = visitors[i + j];
                c += clicks[i + j] != 0;
            }
            x->fill += (apr_uint32_t)take;
            i += take;
        }
        x->clicks += (apr_int64_t)c;
        x->scans += (apr_int64_t)(n - c);
        return 0;
    }
    /* each visit to its group's last chunk (vg_pair_add's work, inline) */
    for (i = 0; i < n; i++) {
        vg_group *x = &g->groups[groups[i]];

        if (x->fill == x->room && vg_chunk(g, x) < 0) {
            return -1;
        }
        g->slab[x->last + 1 + x->fill++] = visitors[i];
        /* (counted without a branch: clicks and scans come mixed) */
        x->clicks += clicks[i] != 0;
        x->scans += clicks[i] == 0;
    }
    return 0;
}

/* qrt_vgroups_add_run; picked: the visits are all of g's share (qrt_vgroups_pick). */
static int vg_add_run(qrt_vgroups_t *g, apr_uint32_t group, const apr_uint32_t *groups,
                      const apr_int64_t *visitors, const unsigned char *clicks, apr_size_t n,
                      int picked)
{
    unsigned char keep[4096];       /* (a run's visits in the share, up to 4,096 of them) */
    apr_size_t i, m = n;
    int shared = g->share_mask && !picked;

    if (g->counted) {
        return n ? -1 : 0;
    }
    if (shared) {
        /* (the visits of the share alone count against the bound) */
        for (i = 0, m = 0; i < n; i++) {
            int in = vg_in_share(g, (apr_uint64_t)visitors[i]);

            if (n <= sizeof(keep)) {
                keep[i] = (unsigned char)in;
            }
            m += (apr_size_t)in;
        }
    }
    if (m > g->max || g->npairs > g->max - m) {
        return -1;
    }
    for (i = 0; i < n && !g->radix; i++) {
        apr_uint32_t k = groups ? groups[i] : group;

        /* (a store checks them itself, without a branch a visit) */
        if (!k || k > g->ngroups) {
            return -1;
        }
        if (!groups) {
            break;
        }
    }
    if (!shared) {
        if (vg_add_many(g, group, groups, (const apr_uint64_t *)(const void *)visitors, clicks,
                        n) < 0) {
            return -1;
        }
        g->npairs += n;
        return 0;
    }
    /* the share's visits gathered 256 at a time, without a branch a visit (half of them,
     * at random, are not of the share), then added */
    for (i = 0; i < n; i += 256) {
        apr_uint64_t vb[256];
        apr_uint32_t gb[256];
        unsigned char cb[256];
        apr_size_t q, j = 0, take = n - i < 256 ? n - i : 256;

        for (q = 0; q < take; q++) {
            vb[j] = (apr_uint64_t)visitors[i + q];
            gb[j] = groups ? groups[i + q] : group;
            cb[j] = clicks[i + q];
            j += n <= sizeof(keep) ? keep[i + q] : (apr_size_t)vg_in_share(g, vb[j]);
        }
        if (vg_add_many(g, group, groups ? gb : NULL, vb, cb, j) < 0) {
            return -1;
        }
    }
    g->npairs += m;
    return 0;
}

int qrt_vgroups_add_run(qrt_vgroups_t *g, apr_uint32_t group, const apr_uint32_t *groups,
                        const apr_int64_t *visitors, const unsigned char *clicks,
                        apr_size_t n)
{
    return vg_add_run(g, group, groups, visitors, clicks, n, 0);
}

apr_size_t qrt_vgroups_pick(const qrt_vgroups_t *g, const apr_int64_t *visitors,
                            apr_size_t n, apr_uint32_t *at)
{
    apr_size_t i, m = 0;

    for (i = 0; i < n; i++) {
        /* (written, then kept or not: half of them at random are not of the share) */
        at[m] = (apr_uint32_t)i;
        m += !g->share_mask || vg_in_share(g, (apr_uint64_t)visitors[i]);
    }
    return m;
}

int qrt_vgroups_add_picked(qrt_vgroups_t *g, const apr_uint32_t *groups,
                           const apr_int64_t *visitors, const unsigned char *clicks,
                           apr_size_t n)
{
    return vg_add_run(g, 0, groups, visitors, clicks, n, 1);
}

int qrt_vgroups_add_ref(qrt_vgroups_t *g, apr_uint32_t group, const apr_int64_t *visitors,
                        const unsigned char *clicks, apr_size_t n)
{
    vg_group *x;
    apr_size_t i, c = 0;

    if (g->share_mask || n < VG_REF_MIN || g->radix) {
        /* (a share's visitors are picked out of the run: copied; a short run is
         * cheaper copied than followed) */
        return qrt_vgroups_add_run(g, group, NULL, visitors, clicks, n);
    }
    if (g->counted || !group || group > g->ngroups) {
        return -1;
    }
    /* (a set's visits and its members' count against the bound, a plain group's not) */
    x = &g->groups[group];
    if ((x->members || x->member) && (n > g->max || g->npairs > g->max - n)) {
        return -1;
    }
    if (vg_ref_add(g, group, (const apr_uint64_t *)(const void *)visitors, n) < 0) {
        return -1;
    }
    for (i = 0; i < n; i++) {
        c += clicks[i] != 0;
    }
    x = &g->groups[group];
    x->clicks += (apr_int64_t)c;
    x->scans += (apr_int64_t)(n - c);
    if (x->members || x->member) {
        g->npairs += n;
    }
    else {
        x->held += n;
        g->nheld += n;
    }
    return 0;
}

void qrt_vgroups_threads(qrt_vgroups_t *g, int n, apr_size_t min)
{
    g->threads = n >= 2 ? 2 : 1;
    g->par_min = min ? min : VG_PAR_MIN;
}

/* qrt_vgroups_absorb of a count in radix mode by another: from's store moves to g with
 * the map of its groups to g's, to be counted with g's own. */
static int vg_radix_absorb(qrt_vgroups_t *g, qrt_vgroups_t *from)
{
    apr_uint32_t *map, *mem = NULL, k, q;
    qrt_vradix_t **rs;
    apr_uint32_t **ms;

    if (!g->radix || !from->radix || from->nrfrom || g->rmasks != from->rmasks) {
        return -1;
    }
    if (!(map = calloc(QRT_VRADIX_GROUPS, sizeof(*map)))) {
        return -1;
    }
    /* each group of from is g's of its key, a set g's set of its members' (made before
     * it); by masks, each with visits in from has its bits in g */
    for (k = 1; k <= from->ngroups && k < QRT_VRADIX_GROUPS; k++) {
        vg_group *x = &from->groups[k];
        apr_int64_t visits, clicks;

        if (x->members) {
            apr_uint32_t *more = realloc(mem, (apr_size_t)x->nmembers * sizeof(*mem));

            if (!more) {
                break;
            }
            mem = more;
            for (q = 0; q < x->nmembers; q++) {
                mem[q] = map[x->members[q]];
            }
            map[k] = qrt_vgroups_set(g, mem, x->nmembers);
        }
        else {
            map[k] = vg_group_of(g, x->key, x->klen, 0);
        }
        qrt_vradix_counts(from->radix, k, &visits, &clicks);
        if (!map[k] || map[k] >= QRT_VRADIX_GROUPS
            || (g->rmasks && visits && vg_radix_bits(g, map[k]) < 0)) {
            break;
        }
    }
    free(mem);
    if (k <= from->ngroups) {
        free(map);
        return -1;
    }
    if (!(rs = realloc(g->rfrom, ((apr_size_t)g->nrfrom + 1) * sizeof(*rs)))) {
        free(map);
        return -1;
    }
    g->rfrom = rs;
    if (!(ms = realloc(g->rmaps, ((apr_size_t)g->nrfrom + 1) * sizeof(*ms)))) {
        free(map);
        return -1;
    }
    g->rmaps = ms;
    g->rfrom[g->nrfrom] = from->radix;
    g->rmaps[g->nrfrom++] = map;
    from->radix = NULL;
    g->npairs += from->npairs;
    return 0;
}

int qrt_vgroups_absorb(qrt_vgroups_t *g, qrt_vgroups_t *from)
{
    apr_uint32_t *to, *mem = NULL, k, q;
    int rv = -1;

    if (g->counted || from->counted || from->npairs > g->max
        || g->npairs > g->max - from->npairs) {
        return -1;
    }
    if (g->radix || from->radix) {
        return vg_radix_absorb(g, from);
    }
    if (!(to = calloc((apr_size_t)from->ngroups + 1, sizeof(*to)))) {
        return -1;
    }
    /* each group of from is g's group of its key; a set names groups made before it, so
     * its members are g's already */
    for (k = 1; k <= from->ngroups; k++) {
        vg_group *x = &from->groups[k];

        if (x->members) {
            apr_uint32_t *more = realloc(mem, (apr_size_t)x->nmembers * sizeof(*mem));

            if (!more) {
                goto done;
            }
            mem = more;
            for (q = 0; q < x->nmembers; q++) {
                mem[q] = to[x->members[q]];
            }
            to[k] = qrt_vgroups_set(g, mem, x->nmembers);
        }
        else {
            to[k] = vg_group_of(g, x->key, x->klen, 0);
        }
        if (!to[k]) {
            goto done;
        }
    }
    for (k = 1; k <= from->ngroups; k++) {
        vg_group *x = &from->groups[k], *y;
        const apr_uint64_t *v;
        apr_size_t n, i;
        vg_walk w;

        for (w.room = 0; (v = vg_next(from, x, &w, &n));) {
            if (w.ext) {
                /* (a run held by reference stays where it is) */
                if (vg_ref_add(g, to[k], v, n) < 0) {
                    goto done;
                }
                continue;
            }
            for (i = 0; i < n;) {
                apr_size_t take;

                /* (g's groups may move as g's chunks are made: y is taken afresh) */
                y = &g->groups[to[k]];
                if (y->fill == y->room && vg_chunk(g, y) < 0) {
                    goto done;
                }
                take = y->room - y->fill < n - i ? y->room - y->fill : n - i;
                memcpy(g->slab + y->last + 1 + y->fill, v + i, take * sizeof(*v));
                y->fill += (apr_uint32_t)take;
                i += take;
            }
        }
        y = &g->groups[to[k]];
        y->scans += x->scans;
        y->clicks += x->clicks;
    }
    g->npairs += from->npairs;
    g->nheld += from->nheld;
    for (k = 1; k <= from->ngroups; k++) {
        g->groups[to[k]].held += from->groups[k].held;
    }
    rv = 0;
done:
    free(mem);
    free(to);
    return rv;
}

int qrt_vgroups_radix(qrt_vgroups_t *g, int sets)
{
    apr_uint32_t k;

    if (g->counted || g->npairs || g->nheld || g->share_mask || g->radix) {
        return -1;
    }
    for (k = 1; k <= g->ngroups; k++) {
        if ((g->groups[k].members && !sets) || k >= QRT_VRADIX_GROUPS) {
            return -1;
        }
    }
    g->rmasks = sets != 0;
    return (g->radix = qrt_vradix_make(g->max)) ? 0 : -1;
}

int qrt_vgroups_share(qrt_vgroups_t *g, apr_uint32_t k, apr_uint32_t n)
{
    if (g->counted || g->npairs || g->nheld || g->radix || !n || (n & (n - 1))
        || n > QRT_VGROUPS_SHARES || k >= n) {
        return -1;
    }
    g->share_mask = n - 1;
    g->share = k;
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
        if (!(k = vg_group_of(g, key, klen, 0))) {
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
        size += g->groups[k].members ? 0 : g->groups[k].klen + 80;
    }
    if (!(out = malloc(size))) {
        return NULL;
    }
    for (k = 1; k <= g->ngroups; k++) {
        vg_group *x = &g->groups[k];

        if (x->members) {
            continue;
        }
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
