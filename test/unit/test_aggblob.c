/* Unit tests for qrt_aggblob: the number codec at its edges, and random links, gaps,
 * visits and counters written and read back exactly, in time order; damaged values
 * (cut short, a stray byte, an index out of its table) are refused, never read past
 * their end. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>

#include "qrt_aggblob.h"
#include "qrt_check.h"

static apr_pool_t *pool;

static void setup(void)
{
    apr_pool_create(&pool, NULL);
}

static void teardown(void)
{
    apr_pool_destroy(pool);
}

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
        qsort(links, nl, sizeof(ref), ref_cmp);
        qsort(gaps, ng, sizeof(ref), ref_cmp);
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
                ck_assert_int_eq(l.t, links[i].t);
            }
        }
        ck_assert_int_eq(rc, 0);
        ck_assert_int_eq(i, nl);
        for (i = 0; (rc = qrt_aggblob_next_gap(&r, &g)) > 0; i++) {
            int j, found = 0;

            ck_assert_int_lt(i, ng);
            ck_assert_int_eq(g.t, gaps[i].t);
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

static Suite *aggblob_suite(void)
{
    Suite *s = suite_create("aggblob");
    TCase *tc = tcase_create("codec");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, numbers);
    tcase_add_test(tc, links_round_trip);
    tcase_add_test(tc, gaps_without_reading_links);
    tcase_add_test(tc, visits_round_trip);
    tcase_add_test(tc, counts_round_trip);
    tcase_add_test(tc, damaged_values);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(aggblob_suite());
}
