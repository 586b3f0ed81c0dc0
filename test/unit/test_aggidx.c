/* Unit tests for qrt_aggidx: for random sealed links values, every kind's index gives,
 * for any range of previous times before the day, the same counts per group as the
 * links and gaps put in (counts over 65,535 split, links of the day itself left out;
 * tags: links by tracker, gaps by tag); values of version 2 and damaged indexes are
 * refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>

#include "qrt_agg.h"
#include "qrt_aggblob.h"
#include "qrt_aggidx.h"
#include "qrt_check.h"

QRT_CHECK_POOL

static apr_uint64_t seed = 39;

static apr_int64_t rnd(apr_int64_t lo, apr_int64_t hi)
{
    seed = seed * APR_UINT64_C(6364136223846793005) + APR_UINT64_C(1442695040888963407);
    return lo + (apr_int64_t)((seed >> 33) % (apr_uint64_t)(hi - lo + 1));
}

typedef struct {
    apr_int64_t t, p, n, tracker;
    int flags, kind;
    const char *b, *c, *y, *val;
} ent;

static const char *const strs[] = { "", "Chrome", "Firefox", "DE", "IN", "Pune",
                                     "S\xc3\xa3o Paulo", "a:b:c" };
static const int flag[] = { 0, QRT_AGG_F_T, 0, QRT_AGG_F_B, QRT_AGG_F_C, QRT_AGG_F_Y,
                            QRT_AGG_F_G };

/* The count of kind's entries of group (tracker id, or string) with p in [p0, p1]; kind
 * G: a tracker's links (val NULL) or a tag's gaps. */
static apr_int64_t expect(const ent *links, int nl, const ent *gaps, int ng, int kind,
                          apr_int64_t tracker, const char *val, apr_int64_t p0,
                          apr_int64_t p1, apr_int64_t day0)
{
    apr_int64_t sum = 0;
    int i;

    for (i = 0; i < nl; i++) {
        const ent *x = &links[i];
        const char *s = kind == QRT_AGG_B ? x->b : kind == QRT_AGG_C ? x->c : x->y;

        if (x->p < p0 || x->p > p1 || x->p >= day0
            || (kind != QRT_AGG_A && !(x->flags & flag[kind]))) {
            continue;
        }
        if (kind == QRT_AGG_G ? !val && x->tracker == tracker
            : kind == QRT_AGG_A || (kind == QRT_AGG_T ? x->tracker == tracker
                                    : !strcmp(s, val))) {
            sum += x->n;
        }
    }
    for (i = 0; i < ng; i++) {
        const ent *x = &gaps[i];

        if (x->kind != kind || x->p < p0 || x->p > p1 || x->p >= day0) {
            continue;
        }
        if (kind == QRT_AGG_T ? x->tracker == tracker : val && !strcmp(x->val, val)) {
            sum += x->n;
        }
    }
    return sum;
}

START_TEST(index_counts_as_the_links)
{
    const apr_int64_t day0 = APR_INT64_C(20520) * 86400;
    static ent links[400], gaps[200];
    int round;

    for (round = 0; round < 30; round++) {
        qrt_aggblob_builder_t *b = qrt_aggblob_builder_make(pool, day0);
        int nl = (int)rnd(0, 400), ng = (int)rnd(0, 200), i, kind, q;
        const char *data;

        for (i = 0; i < nl; i++) {
            ent *x = &links[i];

            x->t = day0 + rnd(0, 86399);
            /* (some rounds crowd the previous times into a few seconds: blocks end at
             * 256 entries; others spread them over 400 days: blocks end at 65,535 s) */
            x->p = i % 7 == 0 ? x->t - rnd(0, x->t - day0)
                   : round % 3 == 0 ? day0 - rnd(1, 3) : x->t - rnd(1, 400 * 86400);
            x->n = rnd(1, i % 11 ? 2 : 140000);
            x->flags = (int)rnd(0, 31);
            x->tracker = rnd(1, 6) * (i % 2 ? 1 : 1000003);
            x->b = strs[rnd(0, 7)];
            x->c = strs[rnd(0, 7)];
            x->y = strs[rnd(0, 7)];
            qrt_aggblob_add_link(b, x->t, x->p, x->flags, x->tracker, x->b, x->c, x->y, x->n);
        }
        for (i = 0; i < ng; i++) {
            ent *x = &gaps[i];
            static const int kinds[] = { 1, 3, 4, 5, 6 };

            x->kind = kinds[rnd(0, 4)];
            x->t = day0 + rnd(0, 86399);
            x->p = x->t - rnd(0, 86400 * 30);
            x->n = rnd(1, 3);
            x->tracker = x->kind == 1 ? rnd(1, 70) : 0;
            x->val = x->kind == 1 ? "" : strs[rnd(0, 7)];
            qrt_aggblob_add_gap(b, x->kind, x->t, x->p, x->tracker, x->val, x->n);
        }
        data = qrt_aggblob_links(b);
        for (kind = QRT_AGG_T; kind <= QRT_AGG_G; kind++) {
            const char *ix;
            apr_size_t len;
            qrt_aggidx_t x;

            ck_assert_int_eq(qrt_aggidx_build(pool, data, day0, kind, &ix, &len), APR_SUCCESS);
            ck_assert_int_eq(qrt_aggidx_view(&x, pool, ix, len), APR_SUCCESS);
            ck_assert_int_eq(x.kind, kind);
            ck_assert(x.day_start == day0);
            for (i = 1; i < x.nblk; i++) {
                ck_assert_int_le(x.base[i - 1], x.base[i]);
                ck_assert_int_le(x.first[i] - x.first[i - 1], 256);
            }
            for (q = 0; q < 12; q++) {
                /* a range of previous times (some past the day's start, some from the
                 * earliest time there is) */
                apr_int64_t p0 = q == 0 ? -(APR_INT64_C(1) << 50)
                                 : day0 - rnd(0, 420 * 86400);
                apr_int64_t p1 = q == 1 ? day0 + 5000 : p0 + rnd(0, 200 * 86400);
                apr_int64_t *sum = apr_pcalloc(pool, (x.ngroups + 1) * sizeof(*sum));
                int g;

                qrt_aggidx_sum(&x, p0, p1, sum);
                for (g = 0; g < x.ngroups; g++) {
                    ck_assert(sum[g] == expect(links, nl, gaps, ng, kind, x.gid[g],
                                               x.gstr[g], p0, p1, day0));
                    if (kind == QRT_AGG_B || kind == QRT_AGG_C || kind == QRT_AGG_Y
                        || (kind == QRT_AGG_G && x.gstr[g])) {
                        ck_assert(x.ghash[g] == qrt_aggidx_hash(x.gstr[g]));
                    }
                }
                /* groups not in the index have nothing in the range */
                for (i = 0; i < 12 && kind != QRT_AGG_A; i++) {
                    apr_int64_t trk = (i % 6 + 1) * (i < 6 ? 1 : 1000003);
                    const char *val = strs[i % 8];
                    int found = 0;

                    for (g = 0; g < x.ngroups; g++) {
                        found |= kind == QRT_AGG_T ? x.gid[g] == trk
                                 : kind == QRT_AGG_G ? !x.gstr[g] && x.gid[g] == trk
                                 : !strcmp(x.gstr[g], val);
                    }
                    if (!found) {
                        ck_assert(expect(links, nl, gaps, ng, kind, trk,
                                         kind == QRT_AGG_G ? NULL : val, p0, p1,
                                         day0) == 0);
                    }
                    for (g = 0, found = 0; kind == QRT_AGG_G && g < x.ngroups; g++) {
                        found |= x.gstr[g] && !strcmp(x.gstr[g], val);
                    }
                    if (kind == QRT_AGG_G && !found) {
                        ck_assert(expect(links, nl, gaps, ng, kind, 0, val, p0, p1,
                                         day0) == 0);
                    }
                }
            }
        }
    }
}
END_TEST

START_TEST(refused)
{
    const apr_int64_t day0 = APR_INT64_C(20520) * 86400;
    qrt_aggblob_builder_t *b = qrt_aggblob_builder_make(pool, day0);
    const char *ix, *v3;
    char *bad;
    apr_size_t len;
    qrt_aggidx_t x;

    qrt_aggblob_add_link(b, day0 + 10, day0 - 5, 31, 7, "Chrome", "DE", "Pune", 1);
    qrt_aggblob_add_gap(b, 6, day0 + 20, day0 - 50, 0, "campaign:x", 1);
    v3 = qrt_aggblob_links(b);
    /* version 2 (not by previous time), not a value */
    ck_assert_int_eq(qrt_aggidx_build(pool, qrt_aggblob_links_v2(b), day0, QRT_AGG_T, &ix,
                                      &len), APR_ENOTIMPL);
    ck_assert_int_eq(qrt_aggidx_build(pool, "nothing", day0, QRT_AGG_T, &ix, &len),
                     APR_EINVAL);
    ck_assert_int_eq(qrt_aggidx_build(pool, v3, day0, 9, &ix, &len), APR_EINVAL);
    /* an index cut short, or of another length */
    ck_assert_int_eq(qrt_aggidx_build(pool, v3, day0, QRT_AGG_Y, &ix, &len), APR_SUCCESS);
    ck_assert_int_eq(qrt_aggidx_view(&x, pool, ix, len), APR_SUCCESS);
    ck_assert_int_eq(x.nent, 1);
    ck_assert_ptr_null(x.n);            /* every count 1 */
    ck_assert_str_eq(x.gstr[0], "Pune");
    {
        apr_int64_t sum[2] = { 0, 0 };

        qrt_aggidx_sum(&x, day0 - 5, day0 - 5, sum);
        ck_assert(sum[0] == 1);
        qrt_aggidx_sum(&x, day0 - 4, day0 + 100, sum);
        qrt_aggidx_sum(&x, day0 - 100, day0 - 6, sum);
        ck_assert(sum[0] == 1);
    }
    /* tags: the link by its tracker, the gap by its tag */
    {
        const char *gix;
        apr_size_t glen;
        qrt_aggidx_t gx;
        apr_int64_t sum[3] = { 0, 0, 0 };
        int t;

        ck_assert_int_eq(qrt_aggidx_build(pool, v3, day0, QRT_AGG_G, &gix, &glen),
                         APR_SUCCESS);
        ck_assert_int_eq(qrt_aggidx_view(&gx, pool, gix, glen), APR_SUCCESS);
        ck_assert_int_eq(gx.ngroups, 2);
        t = gx.gstr[0] ? 1 : 0;
        ck_assert_ptr_null(gx.gstr[t]);
        ck_assert(gx.gid[t] == 7);
        ck_assert_str_eq(gx.gstr[1 - t], "campaign:x");
        qrt_aggidx_sum(&gx, day0 - 50, day0 - 5, sum);
        ck_assert(sum[0] == 1 && sum[1] == 1);
    }
    ck_assert_int_eq(qrt_aggidx_view(&x, pool, ix, len - 8), APR_EINVAL);
    ck_assert_int_eq(qrt_aggidx_view(&x, pool, ix, 4), APR_EINVAL);
    bad = apr_pmemdup(pool, ix, len);
    bad[0] ^= 1;
    ck_assert_int_eq(qrt_aggidx_view(&x, pool, bad, len), APR_EINVAL);
}
END_TEST

static Suite *aggidx_suite(void)
{
    Suite *s = suite_create("qrt_aggidx");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, index_counts_as_the_links);
    tcase_add_test(tc, refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(aggidx_suite());
}
