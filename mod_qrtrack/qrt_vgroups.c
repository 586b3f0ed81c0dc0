/* qrt_vgroups: visits counted by group in one pass (see qrt_vgroups.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>

#include "qrt_vgroups.h"

typedef struct {
    char *key;
    apr_size_t klen;
    apr_uint64_t hash;
    apr_int64_t scans, clicks, uniques;
} vg_group;

/* A (group, visitor) pair; group 0: an empty slot (groups are numbered from 1). */
typedef struct {
    apr_uint64_t visitor;
    apr_uint32_t group;
} vg_pair;

struct qrt_vgroups_t {
    vg_group *groups;               /* [1 .. ngroups] */
    apr_uint32_t ngroups, gcap;
    apr_uint32_t *gslot;            /* hash of keys: group numbers, 0 empty */
    apr_size_t gslots;
    vg_pair *pairs;
    apr_size_t pcap, npairs, max;
    apr_uint32_t last;              /* the group of the previous add */
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
    g->pcap = 1024;
    g->max = max;
    g->groups = malloc((g->gcap + 1) * sizeof(*g->groups));
    g->gslot = calloc(g->gslots, sizeof(*g->gslot));
    g->pairs = calloc(g->pcap, sizeof(*g->pairs));
    if (!g->groups || !g->gslot || !g->pairs) {
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
    free(g->pairs);
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
    g->gslot[i] = ++g->ngroups;
    return g->ngroups;
}

/* Adds the pair (group, visitor): 1 when new, 0 when known, -1 past max or without
 * memory. */
static int vg_pair_add(qrt_vgroups_t *g, apr_uint32_t group, apr_uint64_t visitor)
{
    apr_size_t mask = g->pcap - 1, i;

    for (i = (apr_size_t)vg_mix(visitor ^ ((apr_uint64_t)group << 40)) & mask;
         g->pairs[i].group; i = (i + 1) & mask) {
        if (g->pairs[i].group == group && g->pairs[i].visitor == visitor) {
            return 0;
        }
    }
    if (g->npairs >= g->max) {
        return -1;
    }
    if ((g->npairs + 1) * 2 > g->pcap) {
        apr_size_t n = g->pcap * 2, j, k;
        vg_pair *more = calloc(n, sizeof(*more));

        if (!more) {
            return -1;
        }
        for (k = 0; k < g->pcap; k++) {
            vg_pair *e = &g->pairs[k];

            if (!e->group) {
                continue;
            }
            for (j = (apr_size_t)vg_mix(e->visitor ^ ((apr_uint64_t)e->group << 40)) & (n - 1);
                 more[j].group; j = (j + 1) & (n - 1)) {
            }
            more[j] = *e;
        }
        free(g->pairs);
        g->pairs = more;
        g->pcap = n;
        return vg_pair_add(g, group, visitor);
    }
    g->pairs[i].group = group;
    g->pairs[i].visitor = visitor;
    g->npairs++;
    return 1;
}

int qrt_vgroups_add(qrt_vgroups_t *g, const char *key, apr_size_t klen, int click,
                    apr_int64_t visitor)
{
    apr_uint32_t k = g->last;
    vg_group *x;
    int rc;

    if (!k || g->groups[k].klen != klen || memcmp(g->groups[k].key, key, klen)) {
        if (!(k = vg_group_of(g, key, klen))) {
            return -1;
        }
        g->last = k;
    }
    if ((rc = vg_pair_add(g, k, (apr_uint64_t)visitor)) < 0) {
        return -1;
    }
    x = &g->groups[k];
    x->uniques += rc;
    if (click) {
        x->clicks++;
    }
    else {
        x->scans++;
    }
    return 0;
}

char *qrt_vgroups_text(qrt_vgroups_t *g, apr_size_t *len)
{
    apr_size_t size = 1, used = 0;
    apr_uint32_t k;
    char *out;

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
