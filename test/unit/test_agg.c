/* Unit tests for qrt_agg: bucket ranges, window splits, visitor chains, distinct
 * counts and percent changes, each checked against a brute-force answer. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>

#include "qrt_agg.h"
#include "qrt_check.h"

QRT_CHECK_POOL

static apr_int64_t rnd(apr_int64_t lo, apr_int64_t hi)
{
    return lo + (apr_int64_t)(((apr_uint64_t)random() << 31 ^ (apr_uint64_t)random())
                              % (apr_uint64_t)(hi - lo + 1));
}

START_TEST(floor_division)
{
    ck_assert_int_eq(qrt_agg_fdiv(7, 2), 3);
    ck_assert_int_eq(qrt_agg_fdiv(-7, 2), -4);
    ck_assert_int_eq(qrt_agg_fdiv(-8, 2), -4);
    ck_assert_int_eq(qrt_agg_fdiv(0, 5), 0);
    ck_assert_int_eq(qrt_agg_fdiv(-1, 86400), -1);
    ck_assert_int_eq(qrt_agg_bucket(2, -1), -1);
    ck_assert_int_eq(qrt_agg_bucket(2, 15), 0);
    ck_assert_int_eq(qrt_agg_bucket(2, 16), 1);
    ck_assert_int_eq(qrt_agg_bucket(3, 255), 0);
    ck_assert_int_eq(qrt_agg_bucket(3, -256), -1);
    ck_assert_int_eq(qrt_agg_bucket(1, -3), -3);
}
END_TEST

/* Every day of [d0, d1) is covered exactly once, nothing outside, and the coarse
 * levels are used whenever a whole bucket fits. */
START_TEST(split_days_covers_each_day_once)
{
    static const apr_int64_t size[] = { 0, 1, 16, 256 };
    int round;

    srandom(42);
    for (round = 0; round < 3000; round++) {
        apr_int64_t d0 = rnd(-2000, 2000), d1 = d0 + rnd(0, 1500), d;
        qrt_agg_range_t r[5];
        int n = qrt_agg_split_days(d0, d1, r), i, blocks256 = 0;
        int *hits = calloc(d1 - d0 + 1, sizeof(int));

        ck_assert(n >= 0 && n <= 5);
        for (i = 0; i < n; i++) {
            apr_int64_t b;

            ck_assert(r[i].lvl >= 1 && r[i].lvl <= 3 && r[i].b0 <= r[i].b1);
            blocks256 += r[i].lvl == 3;
            for (b = r[i].b0; b <= r[i].b1; b++) {
                for (d = b * size[r[i].lvl]; d < (b + 1) * size[r[i].lvl]; d++) {
                    ck_assert(d >= d0 && d < d1);
                    hits[d - d0]++;
                }
            }
        }
        for (d = d0; d < d1; d++) {
            ck_assert_int_eq(hits[d - d0], 1);
        }
        /* A whole aligned 256-day block inside the range is read as one bucket. */
        if (qrt_agg_fdiv(d1, 256) * 256 - (-qrt_agg_fdiv(-d0, 256)) * 256 >= 256) {
            ck_assert_int_eq(blocks256, 1);
        }
        free(hits);
    }
    ck_assert_int_eq(qrt_agg_split_days(5, 5, (qrt_agg_range_t[5]){{0, 0, 0}}), 0);
}
END_TEST

START_TEST(window_split)
{
    qrt_agg_window_t w;
    int round;

    qrt_agg_window_split(86400, 3 * 86400 - 1, &w);
    ck_assert(w.d0 == 1 && w.d1 == 3 && w.nparts == 0);
    qrt_agg_window_split(86400 + 5, 3 * 86400, &w);
    ck_assert(w.d0 == 2 && w.d1 == 3 && w.nparts == 2);
    ck_assert(w.part[0][0] == 86400 + 5 && w.part[0][1] == 2 * 86400 - 1);
    ck_assert(w.part[1][0] == 3 * 86400 && w.part[1][1] == 3 * 86400);
    qrt_agg_window_split(100, 200, &w);
    ck_assert(w.d0 == w.d1 && w.nparts == 1 && w.part[0][0] == 100 && w.part[0][1] == 200);
    qrt_agg_window_split(10, 9, &w);
    ck_assert(w.d0 == w.d1 && w.nparts == 0);
    qrt_agg_window_split(QRT_AGG_TMIN, QRT_AGG_TMAX, &w);
    ck_assert(w.d0 * 86400 >= QRT_AGG_TMIN && w.d1 * 86400 <= QRT_AGG_TMAX + 1);
    /* An open window is whole days: no visits read for partial ones. */
    ck_assert_int_eq(w.nparts, 0);
    /* Seconds are covered once by full days and parts. */
    srandom(7);
    for (round = 0; round < 5000; round++) {
        apr_int64_t s = rnd(-400000, 400000), e = s + rnd(0, 400000), covered = 0;
        int i;

        qrt_agg_window_split(s, e, &w);
        if (w.d0 < w.d1) {
            ck_assert(w.d0 * 86400 >= s && w.d1 * 86400 - 1 <= e);
            covered += (w.d1 - w.d0) * 86400;
        }
        for (i = 0; i < w.nparts; i++) {
            ck_assert(w.part[i][0] >= s && w.part[i][1] <= e);
            ck_assert(w.part[i][1] - w.part[i][0] < (w.d0 < w.d1 ? 86400 : 2 * 86400));
            ck_assert(w.d0 == w.d1 || w.part[i][1] < w.d0 * 86400
                      || w.part[i][0] >= w.d1 * 86400);
            covered += w.part[i][1] - w.part[i][0] + 1;
        }
        ck_assert_int_eq(covered, e - s + 1);
    }
}
END_TEST

START_TEST(subset)
{
    const char *a[] = { "a", "c" }, *b[] = { "a", "b", "c" }, *c[] = { "b" };

    ck_assert(qrt_agg_subset(a, 2, b, 3));
    ck_assert(!qrt_agg_subset(b, 3, a, 2));
    ck_assert(qrt_agg_subset(a, 0, c, 1));
    ck_assert(qrt_agg_subset(a, 0, c, 0));
    ck_assert(!qrt_agg_subset(c, 1, a, 2));
    ck_assert(!qrt_agg_subset(a, 2, b, 0));
}
END_TEST

/* Chains against a brute-force search, both the linear and the hashed paths. */
START_TEST(chain_matches_brute_force)
{
    static const char *vals[] = { "", "x", "y", "z" };
    static const char *tagset[] = { "a", "b", "c" };
    int round;

    srandom(3);
    for (round = 0; round < 400; round++) {
        int n = (int)rnd(0, round % 2 ? 20 : 90), i, j, k;
        qrt_agg_visit_t *v = apr_pcalloc(pool, (n + 1) * sizeof(*v));
        qrt_agg_prev_t *out = apr_pcalloc(pool, (n + 1) * sizeof(*out));

        for (i = 0; i < n; i++) {
            const char **tags = apr_pcalloc(pool, 3 * sizeof(char *));
            int m = 0;

            v[i].t = i;
            v[i].tracker = rnd(1, 4);
            v[i].browser = vals[rnd(0, 3)];
            v[i].country = vals[rnd(0, 3)];
            v[i].city = vals[rnd(0, 3)];
            for (k = 0; k < 3; k++) {
                if (rnd(0, 1)) {
                    tags[m++] = tagset[k];
                }
            }
            v[i].tags = tags;
            v[i].ntags = m;
        }
        qrt_agg_chain(pool, v, n, out);
        for (i = 0; i < n; i++) {
            int tr = -1, br = -1, co = -1, ci = -1;

            for (j = i - 1; j >= 0; j--) {
                if (tr < 0 && v[j].tracker == v[i].tracker) {
                    tr = j;
                }
                if (br < 0 && !strcmp(v[j].browser, v[i].browser)) {
                    br = j;
                }
                if (co < 0 && !strcmp(v[j].country, v[i].country)) {
                    co = j;
                }
                if (ci < 0 && !strcmp(v[j].city, v[i].city)) {
                    ci = j;
                }
            }
            ck_assert_int_eq(out[i].a, i - 1);
            ck_assert_int_eq(out[i].tr, tr);
            ck_assert_int_eq(out[i].br, br);
            ck_assert_int_eq(out[i].co, co);
            ck_assert_int_eq(out[i].ci, ci);
            for (k = 0; k < v[i].ntags; k++) {
                int want = -1, x;

                for (j = i - 1; j >= 0 && want < 0; j--) {
                    for (x = 0; x < v[j].ntags; x++) {
                        if (!strcmp(v[j].tags[x], v[i].tags[k])) {
                            want = j;
                        }
                    }
                }
                ck_assert_int_eq(out[i].tag[k], want);
            }
            ck_assert_int_eq(out[i].fg, i > 0 && qrt_agg_subset(v[i].tags, v[i].ntags,
                                                                v[i - 1].tags,
                                                                v[i - 1].ntags));
        }
    }
}
END_TEST

/* The compact set against a hash of the strings themselves: numbers in their shortest
 * decimal form as 8 bytes, every other string as itself, one visitor per distinct
 * string either way. */
START_TEST(visitor_set_counts_strings)
{
    static const char *odd[] = {
        "0", "-0", "00", "+0", "012", "12", "-12", "-012", "9223372036854775807",
        "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
        "18446744073709551616", "", "-", "1a", "a1", "1 ", " 1", "0x10", "16",
        "00000000000000ff", "255", "1234567890123456789", "12345678901234567890"
    };
    apr_hash_t *ref = apr_hash_make(pool);
    qrt_agg_vset_t *s = qrt_agg_vset_make(pool), *half = qrt_agg_vset_make(pool);
    apr_int64_t added;
    apr_size_t before;
    unsigned long long x = 88172645463325252ULL;
    char buf[32];
    int i, r, want;

    for (i = 0; i < (int)(sizeof(odd) / sizeof(*odd)); i++) {
        want = !apr_hash_get(ref, odd[i], APR_HASH_KEY_STRING);
        apr_hash_set(ref, odd[i], APR_HASH_KEY_STRING, "");
        ck_assert_msg(qrt_agg_vset_add(s, odd[i]) == want, "%s", odd[i]);
        ck_assert_int_eq(qrt_agg_vset_add(s, odd[i]), 0);
    }
    /* numbers of every size, repeats among them, through several growths */
    for (i = 0; i < 200000; i++) {
        const char *v;

        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        switch (i % 4) {
        case 0:
            apr_snprintf(buf, sizeof(buf), "%lld", (long long)x);
            break;
        case 1:
            apr_snprintf(buf, sizeof(buf), "%llu", x % 50000);
            break;
        case 2:
            apr_snprintf(buf, sizeof(buf), "-%llu", x % 1000);
            break;
        default:
            apr_snprintf(buf, sizeof(buf), "%016llx", x % 3000);
            break;
        }
        v = apr_pstrdup(pool, buf);
        want = !apr_hash_get(ref, v, APR_HASH_KEY_STRING);
        apr_hash_set(ref, v, APR_HASH_KEY_STRING, "");
        r = qrt_agg_vset_add(s, v);
        ck_assert_msg(r == want, "%s: %d", v, r);
        if (i % 2) {
            ck_assert_int_ge(qrt_agg_vset_add(half, v), 0);
        }
    }
    ck_assert_uint_eq(qrt_agg_vset_count(s), apr_hash_count(ref));
    /* a union adds what the other has and this has not, once */
    before = qrt_agg_vset_count(half);
    ck_assert_uint_lt(before, apr_hash_count(ref));
    added = qrt_agg_vset_union(half, s);
    ck_assert_uint_eq(qrt_agg_vset_count(half), apr_hash_count(ref));
    ck_assert_int_eq(added, (apr_int64_t)(apr_hash_count(ref) - before));
    ck_assert_int_eq(qrt_agg_vset_union(half, s), 0);
    ck_assert_int_eq(qrt_agg_vset_union(s, qrt_agg_vset_make(pool)), 0);
}
END_TEST

START_TEST(groups_merge)
{
    qrt_agg_groups_t *g = qrt_agg_groups_make(pool);
    qrt_agg_group_t *a, *b;

    qrt_agg_groups_add(g, "a", 0, "1");
    qrt_agg_groups_add(g, "a", 1, "2");
    qrt_agg_groups_add(g, "a", 0, "x");
    qrt_agg_groups_add(g, "b", 1, "2");
    qrt_agg_groups_add(g, "b", 0, "3");
    qrt_agg_groups_add(g, "b", 0, "x");
    qrt_agg_groups_add(g, "b", 0, "y");
    qrt_agg_groups_add(g, "b", 0, "0");
    a = qrt_agg_groups_get(g, "a");
    b = qrt_agg_groups_get(g, "b");
    ck_assert(a->uniques == 3 && b->uniques == 5);
    ck_assert_int_eq(qrt_agg_group_merge(a, b), 0);
    ck_assert(a->scans == 6 && a->clicks == 2 && a->uniques == 6);
    ck_assert_uint_eq(qrt_agg_vset_count(a->seen), 6);
    ck_assert(b->uniques == 5);
    ck_assert_int_eq(g->nomem, 0);
}
END_TEST

START_TEST(groups_count_distinct)
{
    qrt_agg_groups_t *g = qrt_agg_groups_make(pool);
    qrt_agg_group_t *x;
    char visitor[17];

    qrt_agg_groups_add(g, "a", 0, "v1");
    qrt_agg_groups_add(g, "a", 1, "v1");
    qrt_agg_groups_add(g, "a", 0, "v2");
    strcpy(visitor, "v3");
    qrt_agg_groups_add(g, "", 1, visitor);
    strcpy(visitor, "v9");         /* the group keeps its own copy */
    qrt_agg_groups_add(g, "", 1, "v3");
    x = qrt_agg_groups_get(g, "a");
    ck_assert(x && x->scans == 2 && x->clicks == 1 && x->uniques == 2);
    x = qrt_agg_groups_get(g, "");
    ck_assert(x && x->scans == 0 && x->clicks == 2 && x->uniques == 1);
    ck_assert(qrt_agg_groups_get(g, "b") == NULL);
    ck_assert_int_eq(apr_hash_count(g->groups), 2);
}
END_TEST

START_TEST(change_rounds_half_away_from_zero)
{
    double c = 12345;

    ck_assert(!qrt_agg_change(5, 0, &c) && c == 12345);
    ck_assert(qrt_agg_change(3, 2, &c) && c == 50.0);
    ck_assert(qrt_agg_change(1, 3, &c) && c == -66.7);
    ck_assert(qrt_agg_change(2, 3, &c) && c == -33.3);
    ck_assert(qrt_agg_change(0, 7, &c) && c == -100.0);
    ck_assert(qrt_agg_change(7, 7, &c) && c == 0.0);
    ck_assert(qrt_agg_change(1, 8, &c) && c == -87.5);
    ck_assert(qrt_agg_change(9, 8, &c) && c == 12.5);
    ck_assert(qrt_agg_change(1001, 1000, &c) && c == 0.1);
    ck_assert(qrt_agg_change(20001, 20000, &c) && c == 0.0);       /* 0.005 % */
    ck_assert(qrt_agg_change(40001, 40000, &c) && c == 0.0);
    ck_assert(qrt_agg_change(3, 40000, &c) && c == -100.0);
    ck_assert(qrt_agg_change(APR_INT64_C(1000000000000), 1, &c) && c == 99999999999900.0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("qrt_agg");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, floor_division);
    tcase_add_test(tc, split_days_covers_each_day_once);
    tcase_add_test(tc, window_split);
    tcase_add_test(tc, subset);
    tcase_add_test(tc, chain_matches_brute_force);
    tcase_add_test(tc, groups_count_distinct);
    tcase_add_test(tc, visitor_set_counts_strings);
    tcase_add_test(tc, groups_merge);
    tcase_add_test(tc, change_rounds_half_away_from_zero);
    suite_add_tcase(s, tc);
    return qrt_check_run(s);
}
