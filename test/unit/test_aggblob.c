/* Unit tests for qrt_aggblob: the number codec at its edges, and random links, gaps,
 * visits and counters written and read back exactly, in time order; damaged values
 * (cut short, a stray byte, an index out of its table) are refused, never read past
 * their end. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>

#include "qrt_aggblob.h"
#include "qrt_check.h"

QRT_CHECK_POOL

static apr_int64_t rnd(apr_int64_t lo, apr_int64_t hi)
{
    return lo + (apr_int64_t)(((apr_uint64_t)random() << 31 ^ (apr_uint64_t)random())
                              % (apr_uint64_t)(hi - lo + 1));
}

START_TEST(numbers)
{
    static const apr_uint64_t v[] = { 0, 1, 31, 32, 33, 1023, 1024, 86399, 86400,
                                      APR_UINT64_C(1) << 40, APR_UINT64_C(0xffffffff),
                                      ~APR_UINT64_C(0), ~APR_UINT64_C(0) - 1 };
    char buf[32], *end;
    int i;

    for (i = 0; i < (int)(sizeof(v) / sizeof(v[0])); i++) {
        const char *s = buf;
        apr_uint64_t got = 7;

        end = qrt_aggblob_put(buf, v[i]);
        ck_assert_int_le(end - buf, 13);
        ck_assert_int_eq(qrt_aggblob_get(&s, end, &got), 0);
        ck_assert(got == v[i]);
        ck_assert_ptr_eq(s, end);
        /* Cut short: refused. */
        s = buf;
        ck_assert_int_eq(qrt_aggblob_get(&s, end - 1, &got), -1);
    }
    /* Printable, and one character for numbers below 32. */
    end = qrt_aggblob_put(buf, 31);
    ck_assert_int_eq(end - buf, 1);
    for (i = 0; i < 1000; i++) {
        char *c;

        end = qrt_aggblob_put(buf, (apr_uint64_t)rnd(0, APR_INT64_C(1) << 62));
        for (c = buf; c < end; c++) {
            ck_assert(*c >= '0' && *c <= 'o');
        }
    }
    {
        const char *s = "\x01";
        apr_uint64_t got;

        ck_assert_int_eq(qrt_aggblob_get(&s, s + 1, &got), -1);
    }
}
END_TEST

typedef struct {
    apr_int64_t t, p, n, tracker;
    int flags, kind, click;
    const char *b, *c, *y, *val;
} ref;

static int ref_cmp(const void *a, const void *b)
{
    const ref *x = a, *y = b;

    return x->t < y->t ? -1 : x->t > y->t;
}

/* Version 3's order: previous time first. */
static int ref_cmp_p(const void *a, const void *b)
{
    const ref *x = a, *y = b;

    if (x->p != y->p) {
        return x->p < y->p ? -1 : 1;
    }
    return x->t < y->t ? -1 : x->t > y->t;
}

/* Version 3's order of gaps: kind, then previous time. */
static int ref_cmp_kp(const void *a, const void *b)
{
    const ref *x = a, *y = b;

    if (x->kind != y->kind) {
        return x->kind < y->kind ? -1 : 1;
    }
    return ref_cmp_p(a, b);
}

static const char *const strs[] = { "", "Chrome", "Firefox", "DE", "IN", "Pune",
                                     "S\xc3\xa3o Paulo", "campaign:spring", "a:b:c" };

START_TEST(links_round_trip)
{
    const apr_int64_t day0 = APR_INT64_C(20520) * 86400;
    ref links[300], gaps[200];
    int round;

    for (round = 0; round < 20; round++) {
        qrt_aggblob_builder_t *b = qrt_aggblob_builder_make(pool, day0);
        int nl = (int)rnd(0, 300), ng = (int)rnd(0, 200), i, rc;
        qrt_aggblob_t r;
        qrt_aggblob_link_t l;
        qrt_aggblob_gap_t g;
        const char *data;

        for (i = 0; i < nl; i++) {
            ref *x = &links[i];

            x->t = day0 + rnd(0, 86399);
            x->p = i % 9 == 0 ? x->t : x->t - rnd(1, 400 * 86400);
            x->n = rnd(1, i % 5 ? 1 : 70000);
            x->flags = (int)rnd(0, 31);
            x->tracker = rnd(1, 5) * (i % 2 ? 1 : 1000003);
            x->b = strs[rnd(0, 8)];
            x->c = strs[rnd(0, 8)];
            x->y = strs[rnd(0, 8)];
            qrt_aggblob_add_link(b, x->t, x->p, x->flags, x->tracker, x->b, x->c, x->y, x->n);
        }
        for (i = 0; i < ng; i++) {
            ref *x = &gaps[i];
            static const int kinds[] = { 1, 3, 4, 5, 6 };

            x->kind = kinds[rnd(0, 4)];
            x->t = day0 + rnd(0, 86399);
            x->p = x->t - rnd(0, 86400 * 30);
            x->n = rnd(1, 3);
            x->tracker = x->kind == 1 ? rnd(1, 70) : 0;
            x->val = x->kind == 1 ? "" : strs[rnd(0, 8)];
            qrt_aggblob_add_gap(b, x->kind, x->t, x->p, x->tracker, x->val, x->n);
        }
        data = qrt_aggblob_links(b);
        ck_assert_int_eq(strlen(data) > 0, 1);
        qsort(links, nl, sizeof(ref), ref_cmp_p);
        qsort(gaps, ng, sizeof(ref), ref_cmp_kp);
        ck_assert_int_eq(qrt_aggblob_open(&r, pool, data, day0), APR_SUCCESS);
        for (i = 0; (rc = qrt_aggblob_next_link(&r, &l)) > 0; i++) {
            ck_assert_int_lt(i, nl);
            /* Equal times may come in any order: compare against the same time's
             * entries. */
            {
                int j, found = 0;

                for (j = 0; j < nl && !found; j++) {
                    ref *x = &links[j];

                    found = x->t == l.t && x->p == l.p && x->n == l.n
                            && x->flags == l.flags && x->tracker == r.trk[l.ti]
                            && !strcmp(x->b, r.str[l.bi]) && !strcmp(x->c, r.str[l.ci])
                            && !strcmp(x->y, r.str[l.yi]);
                }
                ck_assert_msg(found, "link %d not written", i);
                ck_assert_int_eq(l.p, links[i].p);
            }
        }
        ck_assert_int_eq(rc, 0);
        ck_assert_int_eq(i, nl);
        for (i = 0; (rc = qrt_aggblob_next_gap(&r, &g)) > 0; i++) {
            int j, found = 0;

            ck_assert_int_lt(i, ng);
            ck_assert_int_eq(g.p, gaps[i].p);
            for (j = 0; j < ng && !found; j++) {
                ref *x = &gaps[j];

                found = x->t == g.t && x->p == g.p && x->n == g.n && x->kind == g.kind
                        && (g.kind == 1 ? x->tracker == r.trk[g.ti]
                                        : !strcmp(x->val, r.str[g.si]));
            }
            ck_assert_msg(found, "gap %d not written", i);
        }
        ck_assert_int_eq(rc, 0);
        ck_assert_int_eq(i, ng);
    }
}
END_TEST

START_TEST(gaps_without_reading_links)
{
    qrt_aggblob_builder_t *b = qrt_aggblob_builder_make(pool, 0);
    qrt_aggblob_t r;
    qrt_aggblob_gap_t g;

    qrt_aggblob_add_link(b, 10, 5, 3, 7, "x", "y", "z", 2);
    qrt_aggblob_add_gap(b, 5, 20, 1, 0, "Pune", 1);
    ck_assert_int_eq(qrt_aggblob_open(&r, pool, qrt_aggblob_links(b), 0), APR_SUCCESS);
    ck_assert_int_eq(qrt_aggblob_next_gap(&r, &g), 1);
    ck_assert_int_eq(g.kind, 5);
    ck_assert_int_eq(g.t, 20);
    ck_assert_int_eq(g.p, 1);
    ck_assert_str_eq(r.str[g.si], "Pune");
    ck_assert_int_eq(qrt_aggblob_next_gap(&r, &g), 0);
}
END_TEST

/* The gap kinds a value of links holds: those of its gaps (none without gaps), every
 * kind for a value of version 1. */
START_TEST(gap_kinds)
{
    qrt_aggblob_builder_t *b = qrt_aggblob_builder_make(pool, 0);
    qrt_aggblob_t r;
    qrt_aggblob_link_t l;
    qrt_aggblob_gap_t g;

    qrt_aggblob_add_link(b, 10, 5, 3, 7, "x", "y", "z", 2);
    ck_assert_int_eq(qrt_aggblob_open(&r, pool, qrt_aggblob_links(b), 0), APR_SUCCESS);
    ck_assert_uint_eq(qrt_aggblob_gap_kinds(&r), 0);
    qrt_aggblob_add_gap(b, 5, 20, 1, 0, "Pune", 1);
    qrt_aggblob_add_gap(b, 1, 30, 2, 7, "", 1);
    qrt_aggblob_add_gap(b, 6, 40, 3, 0, "campaign:a", 1);
    qrt_aggblob_add_gap(b, 5, 50, 4, 0, "Lyon", 1);
    ck_assert_int_eq(qrt_aggblob_open(&r, pool, qrt_aggblob_links(b), 0), APR_SUCCESS);
    ck_assert_uint_eq(qrt_aggblob_gap_kinds(&r), 1u << 1 | 1u << 5 | 1u << 6);
    /* Read or not, the value says the same. */
    ck_assert_int_eq(qrt_aggblob_next_link(&r, &l), 1);
    ck_assert_int_eq(qrt_aggblob_next_gap(&r, &g), 1);
    ck_assert_uint_eq(qrt_aggblob_gap_kinds(&r), 1u << 1 | 1u << 5 | 1u << 6);
    /* Version 1 (the links of v1_kept_values) keeps no table of them. */
    ck_assert_int_eq(qrt_aggblob_open(&r, pool,
                                      "L1XVChromeRDEVBerlinWFirefoxRINTPunePVspringR641MQA11MQS^"
                                      "hoQSTUVB0W00NBV^PPQRRNF1U1H8UnQVVV00000000RSV4S431>AQWTQ4"
                                      "SH4RPRS8VPSR", APR_INT64_C(20454) * 86400), APR_SUCCESS);
    ck_assert_uint_eq(qrt_aggblob_gap_kinds(&r), ~0u);
}
END_TEST

START_TEST(visits_round_trip)
{
    const apr_int64_t day0 = APR_INT64_C(20000) * 86400;
    qrt_aggblob_builder_t *b = qrt_aggblob_builder_make(pool, day0);
    apr_int64_t scans[3][9], clicks[3][9], got_s[3][9], got_c[3][9], total = 0;
    qrt_aggblob_t r;
    qrt_aggblob_visit_t v;
    int i, rc, entries = 0;

    memset(scans, 0, sizeof(scans));
    memset(clicks, 0, sizeof(clicks));
    memset(got_s, 0, sizeof(got_s));
    memset(got_c, 0, sizeof(got_c));
    for (i = 0; i < 2000; i++) {
        int tr = (int)rnd(0, 2), y = (int)rnd(0, 8), click = rnd(0, 4) == 0;
        /* Many alike: one second, one tracker, one city. */
        apr_int64_t t = day0 + (i % 3 ? rnd(0, 86399) : 4000);

        qrt_aggblob_add_visit(b, t, click, 100 + tr, "Chrome", "DE", strs[y]);
        (click ? clicks : scans)[tr][y]++;
    }
    ck_assert_int_eq(qrt_aggblob_open(&r, pool, qrt_aggblob_visits(b), day0), APR_SUCCESS);
    while ((rc = qrt_aggblob_next_visit(&r, &v)) > 0) {
        int tr = (int)(r.trk[v.ti] - 100), y;

        for (y = 0; y < 9 && strcmp(strs[y], r.str[v.yi]); y++) {
        }
        ck_assert_int_lt(y, 9);
        ck_assert_str_eq(r.str[v.bi], "Chrome");
        ck_assert_str_eq(r.str[v.ci], "DE");
        ck_assert_int_ge(v.t, day0);
        (v.click ? got_c : got_s)[tr][y] += v.n;
        total += v.n;
        entries++;
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(total, 2000);
    ck_assert_int_lt(entries, 2000);        /* the alike ones were merged */
    ck_assert_int_eq(memcmp(scans, got_s, sizeof(scans)), 0);
    ck_assert_int_eq(memcmp(clicks, got_c, sizeof(clicks)), 0);
}
END_TEST

START_TEST(counts_round_trip)
{
    qrt_aggblob_builder_t *b = qrt_aggblob_builder_make(pool, 0);
    qrt_aggblob_t r;
    qrt_aggblob_count_t c;
    int i, rc;

    for (i = 0; i < 50; i++) {
        qrt_aggblob_add_count(b, (i * 37) % 50, i % 2 ? strs[i % 9] : "", i, 2 * i, i / 2);
    }
    ck_assert_int_eq(qrt_aggblob_open(&r, pool, qrt_aggblob_counts(b), 0), APR_SUCCESS);
    for (i = 0; (rc = qrt_aggblob_next_count(&r, pool, &c)) > 0; i++) {
        int k = -1, j;

        for (j = 0; j < 50; j++) {
            if ((j * 37) % 50 == c.grp) {
                k = j;
            }
        }
        ck_assert_int_ge(k, 0);
        ck_assert_int_eq(c.grp, (k * 37) % 50);
        ck_assert_str_eq(c.val, k % 2 ? strs[k % 9] : "");
        ck_assert_int_eq(c.scans, k);
        ck_assert_int_eq(c.clicks, 2 * k);
        ck_assert_int_eq(c.firsts, k / 2);
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(i, 50);
}
END_TEST

START_TEST(damaged_values)
{
    qrt_aggblob_builder_t *b = qrt_aggblob_builder_make(pool, 0);
    const char *good;
    apr_size_t n, cut;
    qrt_aggblob_t r;
    qrt_aggblob_link_t l;
    qrt_aggblob_gap_t g;

    qrt_aggblob_add_link(b, 10, 5, 3, 7, "Chrome", "DE", "Pune", 1);
    qrt_aggblob_add_link(b, 12, 5, 3, 8, "Firefox", "IN", "", 4);
    qrt_aggblob_add_gap(b, 1, 11, 2, 7, "", 1);
    good = qrt_aggblob_links(b);
    n = strlen(good);
    ck_assert_int_eq(qrt_aggblob_open(&r, pool, "", 0), APR_EINVAL);
    ck_assert_int_eq(qrt_aggblob_open(&r, pool, "X1", 0), APR_EINVAL);
    ck_assert_int_eq(qrt_aggblob_open(&r, pool, NULL, 0), APR_EINVAL);
    /* Every cut: either refused at opening or at an entry, never read past the end. */
    for (cut = 0; cut < n; cut++) {
        char *part = apr_pstrmemdup(pool, good, cut);
        int rc = 1, entries = 0;

        if (qrt_aggblob_open(&r, pool, part, 0) != APR_SUCCESS) {
            continue;
        }
        while ((rc = qrt_aggblob_next_link(&r, &l)) > 0) {
            entries++;
        }
        if (rc == 0) {
            while ((rc = qrt_aggblob_next_gap(&r, &g)) > 0) {
                entries++;
            }
        }
        ck_assert_msg(rc < 0, "a value cut at %d of %d was read whole", (int)cut, (int)n);
    }
    /* A stray byte. */
    {
        char *bad = apr_pstrdup(pool, good);
        int rc;

        bad[n - 2] = '\x7f';
        ck_assert_int_eq(qrt_aggblob_open(&r, pool, bad, 0), APR_SUCCESS);
        while ((rc = qrt_aggblob_next_link(&r, &l)) > 0) {
        }
        if (rc == 0) {
            while ((rc = qrt_aggblob_next_gap(&r, &g)) > 0) {
            }
        }
        ck_assert_int_eq(rc, -1);
    }
    /* The wrong reader for the format. */
    ck_assert_int_eq(qrt_aggblob_open(&r, pool, good, 0), APR_SUCCESS);
    {
        qrt_aggblob_visit_t v;
        qrt_aggblob_count_t c;

        ck_assert_int_eq(qrt_aggblob_next_visit(&r, &v), -1);
        ck_assert_int_eq(qrt_aggblob_next_count(&r, pool, &c), -1);
    }
}
END_TEST

/* ---- version 2 ----------------------------------------------------------------------- */

/* Strings: plain ones, then a long one, then ones with bytes a value's own characters
 * never have (checked by check_chars on values without them). */
static const char *const strs2[] = { "", "Chrome", "Firefox", "DE", "IN", "Pune", "x",
                                      "region:apac", "channel:print",
                                      "a city name longer than thirty-two bytes, to be sure",
                                      "S\xc3\xa3o Paulo", "it's \"quoted\" \\ back" };
#define NSTRS2 ((int)(sizeof(strs2) / sizeof(strs2[0])))
#define PLAIN2 (NSTRS2 - 2)

/* Entries given to a builder, each matched once against what is read back. */
typedef struct {
    ref *e;
    char *used;
    int n;
} refs;

static refs refs_make(int n)
{
    refs x;

    x.e = apr_pcalloc(pool, (n + 1) * sizeof(ref));
    x.used = apr_pcalloc(pool, n + 1);
    x.n = n;
    return x;
}

/* The first given entry at time t or later (sorted by time first). */
static int refs_at(const refs *x, apr_int64_t t)
{
    int lo = 0, hi = x->n;

    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;

        if (x->e[mid].t < t) {
            lo = mid + 1;
        }
        else {
            hi = mid;
        }
    }
    return lo;
}

static int same_str(const char *a, const char *b)
{
    return !strcmp(a ? a : "", b ? b : "");
}

/* Reads a value of links and gaps and matches every entry with one given (in time order,
 * version 3 in previous-time order, alike ones in any order); the indexes stay within
 * their tables. */
static void check_links(const char *data, apr_int64_t day0, refs *ls, refs *gs,
                        int version)
{
    qrt_aggblob_t r;
    qrt_aggblob_link_t l;
    qrt_aggblob_gap_t g;
    apr_int64_t prev = APR_INT64_MIN;
    int i, j, rc, v3 = version == 3, prevkind = 0;

    qsort(ls->e, ls->n, sizeof(ref), ref_cmp);
    qsort(gs->e, gs->n, sizeof(ref), ref_cmp);
    memset(ls->used, 0, ls->n + 1);
    memset(gs->used, 0, gs->n + 1);
    ck_assert_int_eq(qrt_aggblob_open(&r, pool, data, day0), APR_SUCCESS);
    ck_assert_int_eq(r.version, version);
    ck_assert_int_eq(qrt_aggblob_by_p(&r), v3);
    for (i = 0; (rc = qrt_aggblob_next_link(&r, &l)) > 0; i++) {
        ck_assert_int_lt(i, ls->n);
        ck_assert(l.ti >= 0 && l.ti < r.ntrk && l.bi >= 0 && l.bi < r.nstr && l.ci >= 0
                  && l.ci < r.nstr && l.yi >= 0 && l.yi < r.nstr);
        ck_assert(v3 ? l.p >= prev : l.t >= prev);
        prev = v3 ? l.p : l.t;
        for (j = refs_at(ls, l.t); j < ls->n; j++) {
            ref *x = &ls->e[j];

            if (!ls->used[j] && x->t == l.t && x->p == l.p && x->n == l.n
                && x->flags == l.flags && x->tracker == r.trk[l.ti]
                && same_str(x->b, r.str[l.bi]) && same_str(x->c, r.str[l.ci])
                && same_str(x->y, r.str[l.yi])) {
                break;
            }
        }
        ck_assert_msg(j < ls->n, "link %d not written", i);
        ls->used[j] = 1;
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(i, ls->n);
    prev = APR_INT64_MIN;
    for (i = 0; (rc = qrt_aggblob_next_gap(&r, &g)) > 0; i++) {
        ck_assert_int_lt(i, gs->n);
        ck_assert(g.kind == 1 ? g.ti >= 0 && g.ti < r.ntrk && g.si == -1
                              : g.si >= 0 && g.si < r.nstr && g.ti == -1);
        if (v3 && i > 0 && g.kind != prevkind) {
            /* Version 3: kind by kind, each by previous time. */
            ck_assert_int_gt(g.kind, prevkind);
            prev = APR_INT64_MIN;
        }
        prevkind = g.kind;
        ck_assert(v3 ? g.p >= prev : g.t >= prev);
        prev = v3 ? g.p : g.t;
        for (j = refs_at(gs, g.t); j < gs->n; j++) {
            ref *x = &gs->e[j];

            if (!gs->used[j] && x->t == g.t && x->p == g.p && x->n == g.n
                && x->kind == g.kind
                && (g.kind == 1 ? x->tracker == r.trk[g.ti] : same_str(x->val, r.str[g.si]))) {
                break;
            }
        }
        ck_assert_msg(j < gs->n, "gap %d not written", i);
        gs->used[j] = 1;
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(i, gs->n);
    /* The end stays the end. */
    ck_assert_int_eq(qrt_aggblob_next_gap(&r, &g), 0);
    ck_assert_int_eq(qrt_aggblob_next_link(&r, &l), 0);
}

/* The same for visits: an entry of n stands for n visits given. */
static void check_visits(const char *data, apr_int64_t day0, refs *vs)
{
    qrt_aggblob_t r;
    qrt_aggblob_visit_t v;
    apr_int64_t prev = APR_INT64_MIN, total = 0, k;
    int i, j, rc;

    qsort(vs->e, vs->n, sizeof(ref), ref_cmp);
    ck_assert_int_eq(qrt_aggblob_open(&r, pool, data, day0), APR_SUCCESS);
    ck_assert_int_eq(r.version, 2);
    for (i = 0; (rc = qrt_aggblob_next_visit(&r, &v)) > 0; i++) {
        ck_assert(v.ti >= 0 && v.ti < r.ntrk && v.bi >= 0 && v.bi < r.nstr && v.ci >= 0
                  && v.ci < r.nstr && v.yi >= 0 && v.yi < r.nstr);
        ck_assert(v.t >= prev);
        ck_assert(v.n >= 1);
        prev = v.t;
        for (k = 0; k < v.n; k++) {
            for (j = refs_at(vs, v.t); j < vs->n; j++) {
                ref *x = &vs->e[j];

                if (!vs->used[j] && x->t == v.t && x->click == v.click
                    && x->tracker == r.trk[v.ti] && same_str(x->b, r.str[v.bi])
                    && same_str(x->c, r.str[v.ci]) && same_str(x->y, r.str[v.yi])) {
                    break;
                }
            }
            ck_assert_msg(j < vs->n, "visit %d not written", i);
            vs->used[j] = 1;
        }
        total += v.n;
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(total, vs->n);
    ck_assert_int_eq(qrt_aggblob_next_visit(&r, &v), 0);
}

/* A value's characters: printable ASCII without quotes (its strings are). */
static void check_chars(const char *data)
{
    const char *c;

    for (c = data; *c; c++) {
        ck_assert_msg(*c >= 0x20 && *c < 0x7f && *c != '\'' && *c != '"',
                      "character %d at %d", *c, (int)(c - data));
    }
}

/* A string; with special, sometimes one of those with quotes or UTF-8. */
static const char *rnd_str(int special)
{
    return strs2[rnd(0, special && rnd(0, 5) == 0 ? NSTRS2 - 1 : PLAIN2 - 1)];
}

static apr_int64_t rnd_tracker(void)
{
    switch (rnd(0, 5)) {
    case 0:
        return rnd(-5, 5);
    case 1:
        return APR_INT64_C(1) << rnd(0, 62);
    case 2:
        return APR_INT64_MIN + rnd(0, 3);
    default:
        return rnd(1, 60);
    }
}

/* A difference t - p: small, a day, a year, far, negative, or the extremes. */
static apr_int64_t rnd_gap(void)
{
    switch (rnd(0, 7)) {
    case 0:
        return 0;
    case 1:
        return -rnd(1, APR_INT64_C(1) << 62);
    case 2:
        return rnd(0, APR_INT64_C(1) << 62);
    case 3:
        return rnd(0, 365 * 86400);
    default:
        return rnd(86400, 40 * 86400);
    }
}

START_TEST(v2_links_random)
{
    int round;

    for (round = 0; round < 300; round++) {
        apr_int64_t day0 = rnd(-3, 30000) * 86400;
        qrt_aggblob_builder_t *b = qrt_aggblob_builder_make(pool, day0);
        int nl = round % 10 == 0 ? 0 : round % 10 == 1 ? 1 : (int)rnd(0, 400);
        int ng = round % 7 == 0 ? 0 : round % 7 == 1 ? 1 : (int)rnd(0, 300);
        int spread = (int)rnd(0, 3), special = round % 2, i;
        refs ls = refs_make(nl), gs = refs_make(ng);
        const char *data;

        for (i = 0; i < nl; i++) {
            ref *x = &ls.e[i];

            x->t = day0 + (spread == 0 ? rnd(0, 5) : spread == 1 ? rnd(-86400, 2 * 86400)
                                                               : rnd(0, 86399));
            x->p = (apr_int64_t)((apr_uint64_t)x->t - (apr_uint64_t)rnd_gap());
            x->n = rnd(0, 9) ? 1 : rnd(0, 2) ? rnd(-3, 70000) : rnd(0, APR_INT64_C(1) << 40);
            x->flags = rnd(0, 20) ? (int)rnd(0, 31) : (int)rnd(INT_MIN, INT_MAX);
            x->tracker = rnd_tracker();
            x->b = rnd(0, 3) ? rnd_str(special) : NULL;
            x->c = rnd_str(special);
            x->y = rnd_str(special);
            qrt_aggblob_add_link(b, x->t, x->p, x->flags, x->tracker, x->b, x->c, x->y, x->n);
        }
        for (i = 0; i < ng; i++) {
            ref *x = &gs.e[i];
            static const int kinds[] = { 1, 3, 4, 5, 6 };

            x->kind = rnd(0, 30) ? kinds[rnd(0, 4)] : (int)rnd(-2, 100);
            x->t = day0 + (spread == 0 ? rnd(0, 5) : rnd(0, 86399));
            x->p = (apr_int64_t)((apr_uint64_t)x->t - (apr_uint64_t)rnd_gap());
            x->n = rnd(0, 5) ? 1 : rnd(-2, APR_INT64_C(1) << 40);
            x->tracker = x->kind == 1 ? rnd_tracker() : 0;
            x->val = x->kind == 1 ? "" : rnd_str(special);
            qrt_aggblob_add_gap(b, x->kind, x->t, x->p, x->tracker, x->val, x->n);
        }
        data = qrt_aggblob_links_v2(b);
        ck_assert(data[0] == 'L' && data[1] == '2');
        if (!special) {
            check_chars(data);
        }
        check_links(data, day0, &ls, &gs, 2);
        /* Written again, the same value. */
        ck_assert_str_eq(qrt_aggblob_links_v2(b), data);
        /* Version 3, what is sealed now: the same entries by previous time. */
        data = qrt_aggblob_links(b);
        ck_assert(data[0] == 'L' && data[1] == '3');
        if (!special) {
            check_chars(data);
        }
        check_links(data, day0, &ls, &gs, 3);
        ck_assert_str_eq(qrt_aggblob_links(b), data);
    }
}
END_TEST

START_TEST(v2_visits_random)
{
    int round;

    for (round = 0; round < 300; round++) {
        apr_int64_t day0 = rnd(-3, 30000) * 86400;
        qrt_aggblob_builder_t *b = qrt_aggblob_builder_make(pool, day0);
        int nv = round % 10 == 0 ? 0 : round % 10 == 1 ? 1 : (int)rnd(0, 600);
        int spread = (int)rnd(0, 3), special = round % 2, i;
        refs vs = refs_make(nv);
        const char *data;

        for (i = 0; i < nv; i++) {
            ref *x = &vs.e[i];

            if (i > 0 && rnd(0, 3) == 0) {
                /* A run: the same visit again. */
                *x = vs.e[i - 1];
            }
            else {
                x->t = day0 + (spread == 0 ? rnd(0, 3) : spread == 1 ? rnd(-1000, 90000)
                                                                   : rnd(0, 86399));
                x->click = rnd(0, 4) == 0;
                x->tracker = rnd_tracker();
                x->b = rnd_str(special);
                x->c = rnd(0, 5) ? rnd_str(special) : NULL;
                x->y = rnd_str(special);
            }
            qrt_aggblob_add_visit(b, x->t, x->click, x->tracker, x->b, x->c, x->y);
        }
        data = qrt_aggblob_visits(b);
        ck_assert(data[0] == 'V' && data[1] == '2');
        if (!special) {
            check_chars(data);
        }
        check_visits(data, day0, &vs);
    }
}
END_TEST

/* A reader's sums over the links and gaps with p <= p1 (and t in [t0, t1]): every
 * entry decoded (any version), or version 3's prefix (stop at the first later p, jump
 * to the gaps). */
typedef struct {
    apr_int64_t links, gaps[8], sig;
    int decoded;
} psum;

static psum read_upto(const char *data, apr_int64_t day0, apr_int64_t t0, apr_int64_t t1,
                      apr_int64_t p1, int prefix)
{
    qrt_aggblob_t r;
    qrt_aggblob_link_t l;
    qrt_aggblob_gap_t g;
    psum x;
    int rc;

    memset(&x, 0, sizeof(x));
    ck_assert_int_eq(qrt_aggblob_open(&r, pool, data, day0), APR_SUCCESS);
    while ((rc = qrt_aggblob_next_link(&r, &l)) > 0) {
        x.decoded++;
        if (prefix && l.p > p1) {
            rc = qrt_aggblob_skip_links(&r);
            break;
        }
        if (l.p <= p1 && l.t >= t0 && l.t <= t1) {
            x.links += l.n;
            x.sig += l.n * (l.t % 1000 + 7 * (l.p % 997) + 31 * l.flags + 101 * r.trk[l.ti]);
        }
    }
    ck_assert_int_eq(rc, 0);
    if (prefix) {
        /* Each kind's gaps alone, by previous time, from a reader of its own. */
        static const int kinds[] = { 1, 3, 4, 5, 6 };
        int k;

        for (k = 0; k < 5; k++) {
            ck_assert_int_eq(qrt_aggblob_open(&r, pool, data, day0), APR_SUCCESS);
            ck_assert_int_eq(qrt_aggblob_gaps_of(&r, kinds[k]), 0);
            while ((rc = qrt_aggblob_next_gap(&r, &g)) > 0) {
                x.decoded++;
                ck_assert_int_eq(g.kind, kinds[k]);
                if (g.p > p1) {
                    rc = 2;
                    break;
                }
                if (g.t >= t0 && g.t <= t1) {
                    x.gaps[g.kind & 7] += g.n;
                    x.sig += g.n * (g.t % 1000 + 7 * (g.p % 997) + 13 * g.kind);
                }
            }
            if (rc == 0) {
                /* The kind's last gap read: the end stays the end. */
                ck_assert_int_eq(qrt_aggblob_next_gap(&r, &g), 0);
            }
            ck_assert(rc == 0 || rc == 2);
        }
        return x;
    }
    while ((rc = qrt_aggblob_next_gap(&r, &g)) > 0) {
        x.decoded++;
        if (g.p <= p1 && g.t >= t0 && g.t <= t1) {
            x.gaps[g.kind & 7] += g.n;
            x.sig += g.n * (g.t % 1000 + 7 * (g.p % 997) + 13 * g.kind);
        }
    }
    ck_assert_int_eq(rc, 0);
    return x;
}

/* Version 3 answers a window's links before a time as version 2 does, reading only a
 * prefix of the links and of the gaps. */
START_TEST(v3_prefix_by_p)
{
    int round;

    for (round = 0; round < 200; round++) {
        apr_int64_t day0 = rnd(1, 30000) * 86400;
        qrt_aggblob_builder_t *b = qrt_aggblob_builder_make(pool, day0);
        int nl = round % 10 == 0 ? 0 : (int)rnd(0, 500), ng = round % 7 == 0 ? 0
                                                              : (int)rnd(0, 300), i, k;
        const char *v2, *v3;

        for (i = 0; i < nl; i++) {
            apr_int64_t t = day0 + rnd(0, 86399);

            qrt_aggblob_add_link(b, t, t - rnd(0, 3) * rnd(1, 200 * 86400), (int)rnd(0, 31),
                                 rnd(1, 40), strs[rnd(0, 8)], strs[rnd(0, 8)],
                                 strs[rnd(0, 8)], rnd(1, 3));
        }
        for (i = 0; i < ng; i++) {
            static const int kinds[] = { 1, 3, 4, 5, 6 };
            apr_int64_t t = day0 + rnd(0, 86399);
            int kind = kinds[rnd(0, 4)];

            qrt_aggblob_add_gap(b, kind, t, t - rnd(1, 200 * 86400), kind == 1 ? rnd(1, 9) : 0,
                                kind == 1 ? "" : strs[rnd(0, 8)], rnd(1, 3));
        }
        v2 = qrt_aggblob_links_v2(b);
        v3 = qrt_aggblob_links(b);
        for (k = 0; k < 6; k++) {
            apr_int64_t p1 = k == 0 ? day0 - 601 * 86400 : k == 1 ? day0 + 86400
                             : day0 - rnd(0, 200 * 86400);
            apr_int64_t t0 = k < 3 ? day0 : day0 + rnd(0, 86399);
            apr_int64_t t1 = k < 3 ? day0 + 86399 : t0 + rnd(0, 86399);
            psum a = read_upto(v2, day0, t0, t1, p1, 0), c = read_upto(v3, day0, t0, t1, p1, 1);
            psum d = read_upto(v3, day0, t0, t1, p1, 0);

            ck_assert_int_eq(a.links, c.links);
            ck_assert_int_eq(a.sig, c.sig);
            ck_assert_int_eq(a.links, d.links);
            ck_assert_int_eq(a.sig, d.sig);
            ck_assert(memcmp(a.gaps, c.gaps, sizeof(a.gaps)) == 0);
            /* Nothing before any previous time: one link and one gap of each kind at
             * most decoded. */
            if (k == 0) {
                ck_assert_int_le(c.decoded, (nl > 0) + (ng > 0 ? 5 : 0));
            }
        }
    }
}
END_TEST

/* More than 65,536 trackers, places and gaps' groups: tables past 16 bits. */
START_TEST(v2_large_tables)
{
    const apr_int64_t day0 = APR_INT64_C(20500) * 86400;
    qrt_aggblob_builder_t *vb = qrt_aggblob_builder_make(pool, day0);
    qrt_aggblob_builder_t *lb = qrt_aggblob_builder_make(pool, day0);
    const int n = 70000;
    refs vs = refs_make(n), ls = refs_make(n), gs = refs_make(n);
    int i, special = 1;

    for (i = 0; i < n; i++) {
        ref *v = &vs.e[i], *l = &ls.e[i], *g = &gs.e[i];

        v->t = day0 + i;
        v->tracker = 1000 + i;
        v->b = rnd_str(special);
        v->c = apr_psprintf(pool, "C%d", i % 200);
        v->y = apr_psprintf(pool, "City %d", i);
        v->click = i % 3 == 0;
        qrt_aggblob_add_visit(vb, v->t, v->click, v->tracker, v->b, v->c, v->y);
        *l = *v;
        l->p = l->t - i;
        l->n = 1;
        l->flags = 14;
        qrt_aggblob_add_link(lb, l->t, l->p, l->flags, l->tracker, l->b, l->c, l->y, l->n);
        g->kind = i % 2 ? 1 : 6;
        g->t = day0 + i / 3;
        g->p = g->t - 86400 * (i % 30);
        g->n = 1;
        g->tracker = g->kind == 1 ? 5000000 + i : 0;
        g->val = g->kind == 1 ? "" : apr_psprintf(pool, "tag:%d", i);
        qrt_aggblob_add_gap(lb, g->kind, g->t, g->p, g->tracker, g->val, g->n);
    }
    check_visits(qrt_aggblob_visits(vb), day0, &vs);
    check_links(qrt_aggblob_links_v2(lb), day0, &ls, &gs, 2);
    check_links(qrt_aggblob_links(lb), day0, &ls, &gs, 3);
}
END_TEST

/* Version 1 as it was written (its writer is gone): kept values, decoded. */
START_TEST(v1_kept_values)
{
    /* Three links and three gaps, five visits and empty ones, written by version 1 on
     * day 20454. */
    static const char links1[] =
        "L1XVChromeRDEVBerlinWFirefoxRINTPunePVspringR641MQA11MQS^hoQSTUVB0W00NBV^PPQRRNF1U1"
        "H8UnQVVV00000000RSV4S431>AQWTQ4SH4RPRS8VPSR";
    static const char visits1[] = "V1WVChromeRDEVBerlinVSafariRFRUParisPS^HUJIHG0:YTUPRVVVQ`QQ"
                                  "STUQZPPPQRR<N7UQPPTUQ";
    const apr_int64_t d0 = APR_INT64_C(20454) * 86400;
    qrt_aggblob_t r;
    qrt_aggblob_link_t l;
    qrt_aggblob_gap_t g;
    qrt_aggblob_visit_t v;

    ck_assert_int_eq(qrt_aggblob_open(&r, pool, links1, d0), APR_SUCCESS);
    ck_assert_int_eq(r.version, 1);
    ck_assert_int_eq(qrt_aggblob_next_link(&r, &l), 1);
    ck_assert(l.t == d0 + 7 && l.p == d0 - 5 && l.flags == 31 && l.n == 3);
    ck_assert(r.trk[l.ti] == 42);
    ck_assert_str_eq(r.str[l.bi], "Firefox");
    ck_assert_str_eq(r.str[l.ci], "IN");
    ck_assert_str_eq(r.str[l.yi], "Pune");
    ck_assert_int_eq(qrt_aggblob_next_link(&r, &l), 1);
    ck_assert(l.t == d0 + 3600 && l.p == d0 + 3600 - 86400 * 40 && l.flags == 14 && l.n == 1);
    ck_assert(r.trk[l.ti] == 1000003);
    ck_assert_str_eq(r.str[l.yi], "Berlin");
    ck_assert_int_eq(qrt_aggblob_next_link(&r, &l), 1);
    ck_assert(l.t == d0 + 86399 && l.p == d0 + 86400 * 2 && l.flags == 30
              && l.n == APR_INT64_C(1) << 40);
    ck_assert(r.trk[l.ti] == 42);
    ck_assert_str_eq(r.str[l.bi], "");
    ck_assert_int_eq(qrt_aggblob_next_link(&r, &l), 0);
    ck_assert_int_eq(qrt_aggblob_next_gap(&r, &g), 1);
    ck_assert(g.kind == 6 && g.t == d0 + 50 && g.p == d0 - 86400 * 300 && g.n == 2);
    ck_assert_str_eq(r.str[g.si], "spring");
    ck_assert_int_eq(qrt_aggblob_next_gap(&r, &g), 1);
    ck_assert(g.kind == 1 && g.t == d0 + 100 && g.p == d0 - 1000 && g.n == 1 && g.si == -1);
    ck_assert(r.trk[g.ti] == 1000003);
    ck_assert_int_eq(qrt_aggblob_next_gap(&r, &g), 1);
    ck_assert(g.kind == 3 && g.t == d0 + 200 && g.p == d0 + 200 && g.n == 1);
    ck_assert_str_eq(r.str[g.si], "Firefox");
    ck_assert_int_eq(qrt_aggblob_next_gap(&r, &g), 0);

    ck_assert_int_eq(qrt_aggblob_open(&r, pool, visits1, d0), APR_SUCCESS);
    ck_assert_int_eq(qrt_aggblob_next_visit(&r, &v), 1);
    ck_assert(v.t == d0 - 3 && v.click == 0 && v.n == 1 && r.trk[v.ti] == 5000000000LL);
    ck_assert_str_eq(r.str[v.yi], "");
    ck_assert_int_eq(qrt_aggblob_next_visit(&r, &v), 1);
    ck_assert(v.t == d0 + 5 && v.click == 1 && v.n == 1 && r.trk[v.ti] == 99);
    ck_assert_str_eq(r.str[v.bi], "Safari");
    ck_assert_str_eq(r.str[v.ci], "FR");
    ck_assert_str_eq(r.str[v.yi], "Paris");
    ck_assert_int_eq(qrt_aggblob_next_visit(&r, &v), 1);
    ck_assert(v.t == d0 + 10 && v.click == 0 && v.n == 2 && r.trk[v.ti] == 7);
    ck_assert_str_eq(r.str[v.yi], "Berlin");
    ck_assert_int_eq(qrt_aggblob_next_visit(&r, &v), 1);
    ck_assert(v.t == d0 + 86000 && v.click == 1 && v.n == 1 && r.trk[v.ti] == 7);
    ck_assert_str_eq(r.str[v.bi], "Chrome");
    ck_assert_str_eq(r.str[v.ci], "FR");
    ck_assert_int_eq(qrt_aggblob_next_visit(&r, &v), 0);

    ck_assert_int_eq(qrt_aggblob_open(&r, pool, "L1PPPP", d0), APR_SUCCESS);
    ck_assert_int_eq(qrt_aggblob_next_link(&r, &l), 0);
    ck_assert_int_eq(qrt_aggblob_next_gap(&r, &g), 0);
    ck_assert_int_eq(qrt_aggblob_open(&r, pool, "V1PPP", d0), APR_SUCCESS);
    ck_assert_int_eq(qrt_aggblob_next_visit(&r, &v), 0);
    /* Counters have no version 2. */
    ck_assert_int_eq(qrt_aggblob_open(&r, pool, "C2P", 0), APR_EINVAL);
}
END_TEST

/* Version 1's writer, as it was, for the test below. */
typedef struct {
    const char *s[64];
    apr_int64_t t[64];
    int ns, nt;
} v1_tabs;

static int v1_str(v1_tabs *x, const char *s)
{
    int i;

    s = s ? s : "";
    for (i = 0; i < x->ns && strcmp(x->s[i], s); i++) {
    }
    if (i == x->ns) {
        x->s[x->ns++] = s;
    }
    return i;
}

static int v1_trk(v1_tabs *x, apr_int64_t id)
{
    int i;

    for (i = 0; i < x->nt && x->t[i] != id; i++) {
    }
    if (i == x->nt) {
        x->t[x->nt++] = id;
    }
    return i;
}

static apr_uint64_t v1_zz(apr_int64_t v)
{
    return ((apr_uint64_t)v << 1) ^ (apr_uint64_t)(v >> 63);
}

static char *v1_head(char *o, char fmt, const v1_tabs *x)
{
    apr_int64_t prev = 0;
    int i;

    *o++ = fmt;
    *o++ = '1';
    o = qrt_aggblob_put(o, x->ns);
    for (i = 0; i < x->ns; i++) {
        o = qrt_aggblob_put(o, strlen(x->s[i]));
        memcpy(o, x->s[i], strlen(x->s[i]));
        o += strlen(x->s[i]);
    }
    o = qrt_aggblob_put(o, x->nt);
    for (i = 0; i < x->nt; i++) {
        o = qrt_aggblob_put(o, v1_zz((apr_int64_t)((apr_uint64_t)x->t[i] - (apr_uint64_t)prev)));
        prev = x->t[i];
    }
    return o;
}

/* Links (in time order) and gaps (in time order) as version 1 wrote them. */
static const char *v1_links(apr_int64_t day0, const ref *ls, int nl, const ref *gs, int ng)
{
    v1_tabs x;
    char *start = apr_palloc(pool, 4096 + (nl + ng) * 8 * 13), *o;
    int i, *idx = apr_palloc(pool, (nl * 5 + ng * 2 + 1) * sizeof(int));
    apr_int64_t prev = day0;

    memset(&x, 0, sizeof(x));
    for (i = 0; i < nl; i++) {
        idx[5 * i] = v1_trk(&x, ls[i].tracker);
        idx[5 * i + 1] = v1_str(&x, ls[i].b);
        idx[5 * i + 2] = v1_str(&x, ls[i].c);
        idx[5 * i + 3] = v1_str(&x, ls[i].y);
    }
    for (i = 0; i < ng; i++) {
        idx[5 * nl + i] = gs[i].kind == 1 ? v1_trk(&x, gs[i].tracker) : v1_str(&x, gs[i].val);
    }
    o = v1_head(start, 'L', &x);
    o = qrt_aggblob_put(o, nl);
    for (i = 0; i < nl; i++) {
        o = qrt_aggblob_put(o, v1_zz(ls[i].t - prev));
        o = qrt_aggblob_put(o, v1_zz(ls[i].t - ls[i].p));
        o = qrt_aggblob_put(o, (apr_uint64_t)ls[i].flags);
        o = qrt_aggblob_put(o, idx[5 * i]);
        o = qrt_aggblob_put(o, idx[5 * i + 1]);
        o = qrt_aggblob_put(o, idx[5 * i + 2]);
        o = qrt_aggblob_put(o, idx[5 * i + 3]);
        o = qrt_aggblob_put(o, v1_zz(ls[i].n));
        prev = ls[i].t;
    }
    prev = day0;
    o = qrt_aggblob_put(o, ng);
    for (i = 0; i < ng; i++) {
        o = qrt_aggblob_put(o, (apr_uint64_t)gs[i].kind);
        o = qrt_aggblob_put(o, v1_zz(gs[i].t - prev));
        o = qrt_aggblob_put(o, v1_zz(gs[i].t - gs[i].p));
        o = qrt_aggblob_put(o, idx[5 * nl + i]);
        o = qrt_aggblob_put(o, v1_zz(gs[i].n));
        prev = gs[i].t;
    }
    *o = '\0';
    return start;
}

/* Visits (in time order, n alike in a row) as version 1 wrote them. */
static const char *v1_visits(apr_int64_t day0, const ref *vs, int nv)
{
    v1_tabs x;
    char *start = apr_palloc(pool, 4096 + nv * 7 * 13), *o;
    apr_int64_t prev = day0;
    int i;

    memset(&x, 0, sizeof(x));
    for (i = 0; i < nv; i++) {
        v1_trk(&x, vs[i].tracker);
        v1_str(&x, vs[i].b);
        v1_str(&x, vs[i].c);
        v1_str(&x, vs[i].y);
    }
    o = v1_head(start, 'V', &x);
    o = qrt_aggblob_put(o, nv);
    for (i = 0; i < nv; i++) {
        o = qrt_aggblob_put(o, v1_zz(vs[i].t - prev));
        o = qrt_aggblob_put(o, (apr_uint64_t)vs[i].click);
        o = qrt_aggblob_put(o, v1_trk(&x, vs[i].tracker));
        o = qrt_aggblob_put(o, v1_str(&x, vs[i].b));
        o = qrt_aggblob_put(o, v1_str(&x, vs[i].c));
        o = qrt_aggblob_put(o, v1_str(&x, vs[i].y));
        o = qrt_aggblob_put(o, (apr_uint64_t)vs[i].n);
        prev = vs[i].t;
    }
    *o = '\0';
    return start;
}

/* The same entries written by version 1 and by the builder (version 2) read the same,
 * in the same order (times all different). */
START_TEST(v1_and_v2_alike)
{
    int round;

    for (round = 0; round < 100; round++) {
        apr_int64_t day0 = rnd(1, 30000) * 86400;
        qrt_aggblob_builder_t *b = qrt_aggblob_builder_make(pool, day0);
        int nl = (int)rnd(0, 40), ng = (int)rnd(0, 40), nv = (int)rnd(0, 40), i, rc1, rc2;
        int special = 1;
        ref ls[40], gs[40], vs[40];
        qrt_aggblob_t r1, r2;

        for (i = 0; i < nl; i++) {
            ls[i].t = day0 + i * 97 + rnd(0, 90);
            ls[i].p = ls[i].t - rnd_gap() / 4;
            ls[i].n = rnd(0, 3) ? 1 : rnd(2, APR_INT64_C(1) << 40);
            ls[i].flags = (int)rnd(0, 31);
            ls[i].tracker = rnd(1, 5) * (i % 2 ? 1 : 1000003);
            ls[i].b = rnd_str(special);
            ls[i].c = rnd_str(special);
            ls[i].y = rnd_str(special);
            qrt_aggblob_add_link(b, ls[i].t, ls[i].p, ls[i].flags, ls[i].tracker, ls[i].b,
                                 ls[i].c, ls[i].y, ls[i].n);
        }
        for (i = 0; i < ng; i++) {
            gs[i].kind = i % 3 ? 6 : 1;
            gs[i].t = day0 + i * 101 + rnd(0, 90);
            gs[i].p = gs[i].t - rnd(0, 86400 * 300);
            gs[i].n = rnd(1, 2);
            gs[i].tracker = gs[i].kind == 1 ? rnd(1, 9) : 0;
            gs[i].val = gs[i].kind == 1 ? "" : rnd_str(special);
            qrt_aggblob_add_gap(b, gs[i].kind, gs[i].t, gs[i].p, gs[i].tracker, gs[i].val,
                                gs[i].n);
        }
        ck_assert_int_eq(qrt_aggblob_open(&r1, pool, v1_links(day0, ls, nl, gs, ng), day0),
                         APR_SUCCESS);
        ck_assert_int_eq(qrt_aggblob_open(&r2, pool, qrt_aggblob_links_v2(b), day0),
                         APR_SUCCESS);
        ck_assert_int_eq(r1.version * 10 + r2.version, 12);
        for (i = 0;; i++) {
            qrt_aggblob_link_t x, y;

            rc1 = qrt_aggblob_next_link(&r1, &x);
            rc2 = qrt_aggblob_next_link(&r2, &y);
            ck_assert_int_eq(rc1, rc2);
            if (rc1 <= 0) {
                break;
            }
            ck_assert(x.t == y.t && x.p == y.p && x.n == y.n && x.flags == y.flags);
            ck_assert(r1.trk[x.ti] == r2.trk[y.ti]);
            ck_assert_str_eq(r1.str[x.bi], r2.str[y.bi]);
            ck_assert_str_eq(r1.str[x.ci], r2.str[y.ci]);
            ck_assert_str_eq(r1.str[x.yi], r2.str[y.yi]);
        }
        ck_assert_int_eq(rc1, 0);
        ck_assert_int_eq(i, nl);
        for (i = 0;; i++) {
            qrt_aggblob_gap_t x, y;

            rc1 = qrt_aggblob_next_gap(&r1, &x);
            rc2 = qrt_aggblob_next_gap(&r2, &y);
            ck_assert_int_eq(rc1, rc2);
            if (rc1 <= 0) {
                break;
            }
            ck_assert(x.t == y.t && x.p == y.p && x.n == y.n && x.kind == y.kind);
            ck_assert(x.kind == 1 ? r1.trk[x.ti] == r2.trk[y.ti]
                                  : !strcmp(r1.str[x.si], r2.str[y.si]));
        }
        ck_assert_int_eq(rc1, 0);
        ck_assert_int_eq(i, ng);

        b = qrt_aggblob_builder_make(pool, day0);
        for (i = 0; i < nv; i++) {
            apr_int64_t k;

            vs[i].t = day0 + i * 89 - 1000 + rnd(0, 80);
            vs[i].click = rnd(0, 3) == 0;
            vs[i].tracker = rnd(1, 7);
            vs[i].b = rnd_str(special);
            vs[i].c = rnd_str(special);
            vs[i].y = rnd_str(special);
            vs[i].n = rnd(0, 3) ? 1 : rnd(2, 5);
            for (k = 0; k < vs[i].n; k++) {
                qrt_aggblob_add_visit(b, vs[i].t, vs[i].click, vs[i].tracker, vs[i].b,
                                      vs[i].c, vs[i].y);
            }
        }
        ck_assert_int_eq(qrt_aggblob_open(&r1, pool, v1_visits(day0, vs, nv), day0),
                         APR_SUCCESS);
        ck_assert_int_eq(qrt_aggblob_open(&r2, pool, qrt_aggblob_visits(b), day0),
                         APR_SUCCESS);
        for (i = 0;; i++) {
            qrt_aggblob_visit_t x, y;

            rc1 = qrt_aggblob_next_visit(&r1, &x);
            rc2 = qrt_aggblob_next_visit(&r2, &y);
            ck_assert_int_eq(rc1, rc2);
            if (rc1 <= 0) {
                break;
            }
            ck_assert(x.t == y.t && x.n == y.n && x.click == y.click);
            ck_assert(r1.trk[x.ti] == r2.trk[y.ti]);
            ck_assert_str_eq(r1.str[x.bi], r2.str[y.bi]);
            ck_assert_str_eq(r1.str[x.ci], r2.str[y.ci]);
            ck_assert_str_eq(r1.str[x.yi], r2.str[y.yi]);
        }
        ck_assert_int_eq(rc1, 0);
        ck_assert_int_eq(i, nv);
    }
}
END_TEST

/* Reads a value whole as what its format letter says; the entries read stay within their
 * tables. Returns the last answer (0: read whole, -1: refused; APR_EINVAL at opening
 * gives -2). */
static int read_all(const char *data, int *entries)
{
    qrt_aggblob_t r;
    int rc = 0, n = 0;

    *entries = 0;
    if (qrt_aggblob_open(&r, pool, data, 0) != APR_SUCCESS) {
        return -2;
    }
    if (r.format == 'V') {
        qrt_aggblob_visit_t v;

        while ((rc = qrt_aggblob_next_visit(&r, &v)) > 0) {
            ck_assert(v.ti >= 0 && v.ti < r.ntrk && v.bi >= 0 && v.bi < r.nstr
                      && v.ci >= 0 && v.ci < r.nstr && v.yi >= 0 && v.yi < r.nstr);
            ck_assert_int_lt(n++, 1000000);
        }
    }
    else {
        qrt_aggblob_link_t l;
        qrt_aggblob_gap_t g;

        while ((rc = qrt_aggblob_next_link(&r, &l)) > 0) {
            ck_assert(l.ti >= 0 && l.ti < r.ntrk && l.bi >= 0 && l.bi < r.nstr
                      && l.ci >= 0 && l.ci < r.nstr && l.yi >= 0 && l.yi < r.nstr);
            ck_assert_int_lt(n++, 1000000);
        }
        while (rc == 0 && (rc = qrt_aggblob_next_gap(&r, &g)) > 0) {
            ck_assert(g.kind == 1 ? g.ti >= 0 && g.ti < r.ntrk : g.si >= 0 && g.si < r.nstr);
            ck_assert_int_lt(n++, 1000000);
            rc = 0;
        }
    }
    *entries = n;
    return rc;
}

/* Version 2 cut short anywhere is refused; with any one character changed it is refused
 * or read as entries within their tables, never past its end. */
START_TEST(v2_damaged)
{
    static const char swap[] = { '0', '1', 'P', 'o', 'z', '-', '_', 'A', '\x7f', ' ', '\\',
                                 '\xc3' };
    int round;

    for (round = 0; round < 6; round++) {
        qrt_aggblob_builder_t *b = qrt_aggblob_builder_make(pool, 86400);
        const char *good;
        char *bad;
        apr_size_t n, i;
        int k, entries, whole, special = 1;

        for (k = 0; k < 3 + round * 4; k++) {
            if (round % 2) {
                qrt_aggblob_add_visit(b, 86400 + rnd(0, 86399), k % 3 == 0, rnd(1, 9),
                                      rnd_str(special), rnd_str(special), rnd_str(special));
            }
            else {
                apr_int64_t nl = rnd(0, 5) ? 1 : rnd(2, APR_INT64_C(1) << 40);

                qrt_aggblob_add_link(b, 86400 + rnd(0, 86399), rnd(-86400 * 400, 86400),
                                     (int)rnd(0, 31), rnd(1, 9), rnd_str(special),
                                     rnd_str(special), rnd_str(special), nl);
                qrt_aggblob_add_gap(b, k % 2 ? 1 : 6, 86400 + rnd(0, 86399),
                                    rnd(0, 86400), rnd(1, 9), rnd_str(special), 1);
            }
        }
        good = round % 2 ? qrt_aggblob_visits(b) : qrt_aggblob_links(b);
        n = strlen(good);
        ck_assert_int_eq(read_all(good, &whole), 0);
        ck_assert_int_gt(whole, 0);
        for (i = 2; i < n; i++) {
            char *part = apr_pstrmemdup(pool, good, i);

            ck_assert_msg(read_all(part, &entries) < 0, "cut at %d of %d read whole", (int)i,
                          (int)n);
            ck_assert_int_le(entries, whole);
        }
        bad = apr_pstrdup(pool, good);
        for (i = 2; i < n; i++) {
            for (k = 0; k < (int)sizeof(swap); k++) {
                if (good[i] == swap[k]) {
                    continue;
                }
                bad[i] = swap[k];
                read_all(bad, &entries);
            }
            bad[i] = good[i];
        }
        /* A character more at the end. */
        ck_assert_int_lt(read_all(apr_pstrcat(pool, good, "0", NULL), &entries), 0);
    }
}
END_TEST

/* The same rows in another order (as SQL may return them: another plan, rows moved on
 * their pages) give the same text, so that a day sealed again keeps its seal: entries
 * alike in time (the same second, the same previous time), trackers and strings met in
 * another order, visits alike apart. */
static void shuffle(ref *e, int n)
{
    int i;

    for (i = n - 1; i > 0; i--) {
        int j = (int)rnd(0, i);
        ref x = e[i];

        e[i] = e[j];
        e[j] = x;
    }
}

START_TEST(any_row_order_one_value)
{
    static const char *const few[] = { "Chrome", "Firefox", "DE", "FR", "Berlin", "Paris",
                                       "" };
    int round;

    for (round = 0; round < 200; round++) {
        apr_int64_t day0 = rnd(0, 30000) * 86400;
        int nl = (int)rnd(1, 60), ng = (int)rnd(1, 60), nv = (int)rnd(1, 80);
        int nc = (int)rnd(1, 40), i, k;
        refs ls = refs_make(nl), gs = refs_make(ng), vs = refs_make(nv), cs = refs_make(nc);
        const char *first[4] = { NULL, NULL, NULL, NULL };

        for (i = 0; i < nl; i++) {
            ref *x = &ls.e[i];

            x->t = day0 + rnd(0, 2);
            x->p = x->t - rnd(0, 1) * 86400;
            x->n = rnd(1, 2);
            x->flags = (int)rnd(0, 1);
            x->tracker = rnd(1, 4);
            x->b = few[rnd(0, 1)];
            x->c = few[rnd(2, 3)];
            x->y = few[rnd(4, 6)];
        }
        for (i = 0; i < ng; i++) {
            ref *x = &gs.e[i];

            x->kind = rnd(0, 1) ? 1 : 3;
            x->t = day0 + rnd(0, 2);
            x->p = x->t - rnd(0, 1) * 86400;
            x->n = rnd(1, 2);
            x->tracker = x->kind == 1 ? rnd(1, 4) : 0;
            x->val = x->kind == 1 ? "" : few[rnd(0, 6)];
        }
        for (i = 0; i < nv; i++) {
            ref *x = &vs.e[i];

            x->t = day0 + rnd(0, 2);
            x->click = (int)rnd(0, 1);
            x->tracker = rnd(1, 4);
            x->b = few[rnd(0, 1)];
            x->c = few[rnd(2, 3)];
            x->y = few[rnd(4, 6)];
        }
        for (i = 0; i < nc; i++) {
            /* (a unit's counters: one row per group and value) */
            cs.e[i].tracker = i / 7;
            cs.e[i].val = apr_psprintf(pool, "v%d", i % 7);
            cs.e[i].n = rnd(0, 5);
        }
        for (k = 0; k < 2; k++) {
            qrt_aggblob_builder_t *b = qrt_aggblob_builder_make(pool, day0);
            qrt_aggblob_builder_t *v = qrt_aggblob_builder_make(pool, day0);
            qrt_aggblob_builder_t *c = qrt_aggblob_builder_make(pool, 0);
            const char *got[4];

            if (k) {
                shuffle(ls.e, nl);
                shuffle(gs.e, ng);
                shuffle(vs.e, nv);
                shuffle(cs.e, nc);
            }
            /* (links and gaps interleaved: the tables meet their strings in another order) */
            for (i = 0; i < nl || i < ng; i++) {
                if (i < ng) {
                    const ref *x = &gs.e[i];

                    qrt_aggblob_add_gap(b, x->kind, x->t, x->p, x->tracker, x->val, x->n);
                }
                if (i < nl) {
                    const ref *x = &ls.e[i];

                    qrt_aggblob_add_link(b, x->t, x->p, x->flags, x->tracker, x->b, x->c, x->y,
                                         x->n);
                }
            }
            for (i = 0; i < nv; i++) {
                const ref *x = &vs.e[i];

                qrt_aggblob_add_visit(v, x->t, x->click, x->tracker, x->b, x->c, x->y);
            }
            for (i = 0; i < nc; i++) {
                const ref *x = &cs.e[i];

                qrt_aggblob_add_count(c, x->tracker, x->val, x->n, x->n + 1, x->n * 2);
            }
            got[0] = qrt_aggblob_links(b);
            got[1] = qrt_aggblob_links_v2(b);
            got[2] = qrt_aggblob_visits(v);
            got[3] = qrt_aggblob_counts(c);
            for (i = 0; i < 4; i++) {
                if (!k) {
                    first[i] = got[i];
                }
                else {
                    ck_assert_msg(strcmp(first[i], got[i]) == 0, "round %d, value %d: %s / %s",
                                  round, i, first[i], got[i]);
                }
            }
        }
        check_links(first[0], day0, &ls, &gs, 3);
        check_visits(first[2], day0, &vs);
    }
}
END_TEST

static Suite *aggblob_suite(void)
{
    Suite *s = suite_create("aggblob");
    TCase *tc = tcase_create("codec");

    tcase_add_checked_fixture(tc, setup, teardown);
    /* Every random value is read in both versions of links: more than the default 4 s on
     * a loaded machine. */
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, numbers);
    tcase_add_test(tc, links_round_trip);
    tcase_add_test(tc, gaps_without_reading_links);
    tcase_add_test(tc, gap_kinds);
    tcase_add_test(tc, visits_round_trip);
    tcase_add_test(tc, counts_round_trip);
    tcase_add_test(tc, damaged_values);
    tcase_add_test(tc, v2_links_random);
    tcase_add_test(tc, v2_visits_random);
    tcase_add_test(tc, v2_large_tables);
    tcase_add_test(tc, v1_kept_values);
    tcase_add_test(tc, v1_and_v2_alike);
    tcase_add_test(tc, v3_prefix_by_p);
    tcase_add_test(tc, v2_damaged);
    tcase_add_test(tc, any_row_order_one_value);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(aggblob_suite());
}
