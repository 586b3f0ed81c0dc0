/* libFuzzer target for qrt_aggblob.c, the sealed report aggregates' text values.
 *
 * The input is read three ways:
 *  - as a value: opened and read whole by the reader of its format, and by the others
 *    (which refuse it); every entry's indexes lie within the value's tables, and a value
 *    gives at most as many entries as it has bits;
 *  - as entries: links, gaps and visits taken from its bytes, 12 bytes an entry, given to
 *    a builder, whose values (version 2) read back the same entries, as many visits;
 *  - as damage to those values: the first two bytes pick a position and a character,
 *    then the value is read whole again (refused, or entries within their tables).
 * Every value read as links is also indexed for each kind (qrt_aggidx.c): refused, or an
 * index that reads back and sums within its groups.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <apr_general.h>
#include <apr_strings.h>

#include "qrt_aggblob.h"
#include "qrt_aggidx.h"

#define FZ_FAIL(what) \
    do { fprintf(stderr, "fuzz_aggblob: %s (line %d)\n", what, __LINE__); abort(); } while (0)

static const char *const fz_strs[] = { "", "Chrome", "DE", "Pune", "S\xc3\xa3o Paulo",
                                       "tag:a", "x\"'\\" };

/* Indexes a value for each kind and sums the index over a few ranges. */
static void fz_index(apr_pool_t *p, const char *data, apr_int64_t day)
{
    int kind;

    for (kind = 1; kind <= 6; kind++) {
        const char *ix;
        apr_size_t len;
        qrt_aggidx_t x;
        apr_int64_t *sum;

        if (qrt_aggidx_build(p, data, day, kind, &ix, &len) != APR_SUCCESS) {
            continue;
        }
        if (qrt_aggidx_view(&x, p, ix, len) != APR_SUCCESS || x.kind != kind) {
            FZ_FAIL("index");
        }
        sum = apr_pcalloc(p, ((apr_size_t)x.ngroups + 1) * sizeof(*sum));
        qrt_aggidx_sum(&x, -(APR_INT64_C(1) << 50), day - 1, sum);
        qrt_aggidx_sum(&x, day - 86400 * 3, day - 3600, sum);
        qrt_aggidx_sum(&x, day + 10, day - 10, sum);
    }
}

/* Reads a value whole; returns the last answer (-2: refused at opening). */
static int fz_read(apr_pool_t *p, const char *data, apr_int64_t day, int as, long *entries)
{
    qrt_aggblob_t r;
    qrt_aggblob_link_t l;
    qrt_aggblob_gap_t g;
    qrt_aggblob_visit_t v;
    qrt_aggblob_count_t c;
    long n = 0, bound = 6 * (long)strlen(data) + 6;
    int rc = 0;

    *entries = 0;
    if (qrt_aggblob_open(&r, p, data, day) != APR_SUCCESS) {
        return -2;
    }
    if (as == 'V') {
        while ((rc = qrt_aggblob_next_visit(&r, &v)) > 0) {
            if (v.ti < 0 || v.ti >= r.ntrk || v.bi < 0 || v.bi >= r.nstr || v.ci < 0
                || v.ci >= r.nstr || v.yi < 0 || v.yi >= r.nstr || ++n > bound) {
                FZ_FAIL("visit");
            }
        }
    }
    else if (as == 'L') {
        while ((rc = qrt_aggblob_next_link(&r, &l)) > 0) {
            if (l.ti < 0 || l.ti >= r.ntrk || l.bi < 0 || l.bi >= r.nstr || l.ci < 0
                || l.ci >= r.nstr || l.yi < 0 || l.yi >= r.nstr || ++n > bound) {
                FZ_FAIL("link");
            }
        }
        while (rc == 0 && (rc = qrt_aggblob_next_gap(&r, &g)) > 0) {
            if ((g.kind == 1 ? g.ti < 0 || g.ti >= r.ntrk || g.si != -1
                             : g.si < 0 || g.si >= r.nstr || g.ti != -1) || ++n > bound) {
                FZ_FAIL("gap");
            }
            rc = 0;
        }
        /* Again with a reader that stops after the first link and jumps to the gaps. */
        if (rc == 0 && qrt_aggblob_open(&r, p, data, day) == APR_SUCCESS) {
            long m = 0;
            int rs = qrt_aggblob_next_link(&r, &l);

            if (rs >= 0 && qrt_aggblob_skip_links(&r) == 0) {
                while ((rs = qrt_aggblob_next_gap(&r, &g)) > 0) {
                    if ((g.kind == 1 ? g.ti < 0 || g.ti >= r.ntrk || g.si != -1
                                     : g.si < 0 || g.si >= r.nstr || g.ti != -1)
                        || ++m > bound) {
                        FZ_FAIL("gap after a jump");
                    }
                }
            }
        }
    }
    else {
        while ((rc = qrt_aggblob_next_count(&r, p, &c)) > 0) {
            if (!c.val || ++n > bound) {
                FZ_FAIL("count");
            }
        }
    }
    if (as != r.format && rc != -1) {
        FZ_FAIL("read as another format");
    }
    *entries = n;
    return rc;
}

typedef struct {
    apr_int64_t t, p, n, trk;
    int flags, kind, click;
    const char *b, *c, *y;
    int used;
} fz_ent;

static apr_int64_t fz_int(const uint8_t *d, int wide)
{
    apr_int64_t v = (int8_t)d[0];

    /* Mostly small; now and then far (t - p, n past 2^32, extremes). */
    if (wide == 1) {
        v = (apr_int64_t)((apr_uint64_t)d[0] << 56 | (apr_uint64_t)d[1] << 40 | d[2]);
    }
    else if (wide == 2) {
        v = d[0] & 1 ? APR_INT64_MAX - d[1] : APR_INT64_MIN + d[1];
    }
    return v;
}

/* An entry from 12 bytes. */
static void fz_entry(const uint8_t *d, apr_int64_t day, fz_ent *e)
{
    int wide = d[11] % 8 == 0 ? 1 : d[11] % 31 == 1 ? 2 : 0;

    memset(e, 0, sizeof(*e));
    e->t = day + (d[0] | d[1] << 8) * (d[2] & 1 ? 1 : 3) - 100;
    e->p = (apr_int64_t)((apr_uint64_t)e->t - (apr_uint64_t)fz_int(d + 3, wide) * 86400);
    e->n = d[6] & 0x80 ? fz_int(d + 6, wide) : 1;
    e->trk = d[7] & 0x80 ? fz_int(d + 7, wide) : d[7] % 9;
    e->flags = d[8] & 31;
    e->kind = d[8] >> 5;
    e->click = d[9] & 1;
    e->b = fz_strs[d[9] % 7];
    e->c = fz_strs[d[10] % 7];
    e->y = fz_strs[(d[10] >> 3) % 7];
}

static int fz_str_eq(const char *a, const char *b)
{
    return !strcmp(a ? a : "", b ? b : "");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int init;
    apr_pool_t *p;
    const char *value;
    char *bad;
    long entries;
    size_t i, n;
    int f;

    if (!init) {
        apr_initialize();
        init = 1;
    }
    apr_pool_create(&p, NULL);

    /* 1. The bytes as a value (to the first NUL), read as each format. */
    value = apr_pstrmemdup(p, (const char *)data, size);
    for (f = 0; f < 3; f++) {
        fz_read(p, value, 86400, "LVC"[f], &entries);
    }
    fz_index(p, value, 86400);

    /* 2. The bytes as entries. */
    n = size / 12;
    if (n > 0) {
        apr_int64_t day = (apr_int64_t)(data[0] % 200) * 86400;
        qrt_aggblob_builder_t *lb = qrt_aggblob_builder_make(p, day);
        qrt_aggblob_builder_t *vb = qrt_aggblob_builder_make(p, day);
        fz_ent *e = apr_pcalloc(p, n * sizeof(*e));
        const char *lv, *vv;
        qrt_aggblob_t r;
        qrt_aggblob_link_t l;
        qrt_aggblob_gap_t g;
        qrt_aggblob_visit_t v;
        size_t nl = 0, ng = 0, nv = 0, j;
        int rc;

        for (i = 0; i < n; i++) {
            fz_entry(data + 12 * i, day, &e[i]);
            qrt_aggblob_add_visit(vb, e[i].t, e[i].click, e[i].trk, e[i].b, e[i].c, e[i].y);
            if (e[i].kind < 4) {
                qrt_aggblob_add_link(lb, e[i].t, e[i].p, e[i].flags, e[i].trk, e[i].b, e[i].c,
                                     e[i].y, e[i].n);
                nl++;
            }
            else {
                qrt_aggblob_add_gap(lb, e[i].kind - 3, e[i].t, e[i].p, e[i].trk, e[i].y,
                                    e[i].n);
                ng++;
            }
        }
        lv = qrt_aggblob_links(lb);
        vv = qrt_aggblob_visits(vb);
        if (lv[1] != '3' || vv[1] != '2' || qrt_aggblob_open(&r, p, lv, day) != APR_SUCCESS) {
            FZ_FAIL("written");
        }
        fz_index(p, lv, day);
        while ((rc = qrt_aggblob_next_link(&r, &l)) > 0) {
            for (j = 0; j < n; j++) {
                if (!e[j].used && e[j].kind < 4 && e[j].t == l.t && e[j].p == l.p
                    && e[j].n == l.n && e[j].flags == l.flags && e[j].trk == r.trk[l.ti]
                    && fz_str_eq(e[j].b, r.str[l.bi]) && fz_str_eq(e[j].c, r.str[l.ci])
                    && fz_str_eq(e[j].y, r.str[l.yi])) {
                    break;
                }
            }
            if (j == n || nl-- == 0) {
                FZ_FAIL("link read back");
            }
            e[j].used = 1;
        }
        while (rc == 0 && (rc = qrt_aggblob_next_gap(&r, &g)) > 0) {
            for (j = 0; j < n; j++) {
                if (!e[j].used && e[j].kind >= 4 && e[j].kind - 3 == g.kind && e[j].t == g.t
                    && e[j].p == g.p && e[j].n == g.n
                    && (g.kind == 1 ? e[j].trk == r.trk[g.ti] : fz_str_eq(e[j].y, r.str[g.si]))) {
                    break;
                }
            }
            if (j == n || ng-- == 0) {
                FZ_FAIL("gap read back");
            }
            e[j].used = 1;
            rc = 0;
        }
        if (rc != 0 || nl != 0 || ng != 0) {
            FZ_FAIL("links read back");
        }
        for (j = 0; j < n; j++) {
            e[j].used = 0;
        }
        if (qrt_aggblob_open(&r, p, vv, day) != APR_SUCCESS) {
            FZ_FAIL("visits written");
        }
        while ((rc = qrt_aggblob_next_visit(&r, &v)) > 0) {
            apr_int64_t k;

            for (k = 0; k < v.n; k++) {
                for (j = 0; j < n; j++) {
                    if (!e[j].used && e[j].t == v.t && e[j].click == v.click
                        && e[j].trk == r.trk[v.ti] && fz_str_eq(e[j].b, r.str[v.bi])
                        && fz_str_eq(e[j].c, r.str[v.ci]) && fz_str_eq(e[j].y, r.str[v.yi])) {
                        break;
                    }
                }
                if (j == n) {
                    FZ_FAIL("visit read back");
                }
                e[j].used = 1;
                nv++;
            }
        }
        if (rc != 0 || nv != n) {
            FZ_FAIL("visits read back");
        }

        /* 3. Damage: one character changed, or the value cut. */
        for (f = 0; f < 2; f++) {
            const char *good = f ? vv : lv;
            size_t len = strlen(good), at = 2 + (data[0] | data[1] << 8) % (len - 1);

            bad = apr_pstrdup(p, good);
            if (at < len) {
                bad[at] = (char)(data[2] ? data[2] : '0');
                fz_read(p, bad, day, good[0], &entries);
                fz_index(p, bad, day);
            }
            bad = apr_pstrmemdup(p, good, at < len ? at : len - 1);
            if (fz_read(p, bad, day, good[0], &entries) >= 0) {
                FZ_FAIL("cut short, read whole");
            }
        }
    }
    apr_pool_destroy(p);
    return 0;
}
