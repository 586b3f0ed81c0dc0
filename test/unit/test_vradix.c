/* Unit tests for qrt_vradix: distinct (visitor, group) pairs counted per group as a
 * sort of the pairs counts them, in one store and in two whose groups are mapped, by one
 * thread and by two; visitors that share their low bits, their high bits (one part), 0
 * and all ones; the bound and the groups refused; the spare segments kept and let go. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>

#include "qrt_vradix.h"
#include "qrt_check.h"

static apr_uint64_t seed = 39;

static apr_uint64_t rnd(apr_uint64_t n)
{
    seed = seed * APR_UINT64_C(6364136223846793005) + APR_UINT64_C(1442695040888963407);
    return (seed >> 17) % n;
}

typedef struct {
    apr_uint32_t g;
    apr_uint64_t v;
} pair;

static int pair_cmp(const void *a, const void *b)
{
    const pair *x = a, *y = b;

    if (x->g != y->g) {
        return x->g < y->g ? -1 : 1;
    }
    return x->v < y->v ? -1 : x->v > y->v;
}

/* The distinct pairs of p[0, n) per group, into u (zeroed first). */
static void naive(pair *p, apr_size_t n, apr_int64_t *u, apr_uint32_t ngroups)
{
    apr_size_t i;

    memset(u, 0, ngroups * sizeof(*u));
    qsort(p, n, sizeof(*p), pair_cmp);
    for (i = 0; i < n; i++) {
        if (i == 0 || p[i].g != p[i - 1].g || p[i].v != p[i - 1].v) {
            u[p[i].g]++;
        }
    }
}

/* A visitor of kind k: any 64 bits, few of them (repeating), ones differing only in
 * their high bits or only in their low bits, 0 and all ones. */
static apr_uint64_t visitor(int k)
{
    switch (k) {
    case 0:
        return (rnd(1u << 30) << 34) ^ rnd(1u << 30);
    case 1:
        return rnd(500) * APR_UINT64_C(0x9E3779B97F4A7C15);
    case 2:
        return rnd(300) << 52;
    case 3:
        return rnd(300);
    default:
        return rnd(2) ? 0 : ~APR_UINT64_C(0);
    }
}

#define NV 300000

START_TEST(counts_as_the_pairs)
{
    static pair p[NV];
    static apr_uint64_t vis[NV];
    static apr_uint32_t grp[NV];
    static apr_int64_t want[QRT_VRADIX_GROUPS], got[QRT_VRADIX_GROUPS];
    static apr_int64_t visits[QRT_VRADIX_GROUPS], clicks[QRT_VRADIX_GROUPS];
    static unsigned char clk[NV];
    int round;

    for (round = 0; round < 6; round++) {
        apr_uint32_t ngroups = round == 0 ? 2 : round == 1 ? 6 : QRT_VRADIX_GROUPS;
        qrt_vradix_t *r = qrt_vradix_make(NV);
        apr_size_t n = round == 5 ? 10 : NV, i;

        ck_assert_ptr_nonnull(r);
        memset(visits, 0, sizeof(visits));
        memset(clicks, 0, sizeof(clicks));
        for (i = 0; i < n; i++) {
            vis[i] = visitor(round == 4 ? 2 : (int)rnd(5));
            grp[i] = 1 + (apr_uint32_t)rnd(ngroups - 1);
            clk[i] = rnd(5) == 0 ? (unsigned char)(1 + rnd(255)) : 0;
            p[i].g = grp[i];
            p[i].v = vis[i];
        }
        /* in runs of one group and runs of many, as a report adds them */
        for (i = 0; i < n;) {
            apr_size_t m = n - i < 700 ? n - i : 1 + rnd(700);

            if (rnd(3) == 0) {
                apr_size_t j;

                for (j = 0; j < m; j++) {
                    grp[i + j] = p[i + j].g = grp[i];
                }
                ck_assert_int_eq(qrt_vradix_add(r, grp[i], NULL, vis + i, clk + i, m,
                                                ngroups), 0);
            }
            else {
                ck_assert_int_eq(qrt_vradix_add(r, 0, grp + i, vis + i, clk + i, m, ngroups),
                                 0);
            }
            for (; m > 0; m--, i++) {
                visits[grp[i]]++;
                clicks[grp[i]] += clk[i] != 0;
            }
        }
        ck_assert_uint_eq(qrt_vradix_size(r), n);
        for (i = 0; i < QRT_VRADIX_GROUPS; i++) {
            apr_int64_t v, c;

            qrt_vradix_counts(r, (apr_uint32_t)i, &v, &c);
            ck_assert_int_eq(v, visits[i]);
            ck_assert_int_eq(c, clicks[i]);
        }
        naive(p, n, want, ngroups);
        memset(got, 0, sizeof(got));
        ck_assert_int_eq(qrt_vradix_uniques(&r, NULL, 1, ngroups, round % 2 ? 2 : 1, got), 0);
        for (i = 0; i < ngroups; i++) {
            ck_assert_int_eq(got[i], want[i]);
        }
        /* counted again, added to what uniques holds */
        ck_assert_int_eq(qrt_vradix_uniques(&r, NULL, 1, ngroups, 2, got), 0);
        for (i = 0; i < ngroups; i++) {
            ck_assert_int_eq(got[i], 2 * want[i]);
        }
        qrt_vradix_free(r);
    }
}
END_TEST

/* Two stores counted together, the second's groups numbered otherwise and mapped: a
 * visitor met in both counts once in its group. */
START_TEST(two_stores_mapped_count_as_one)
{
    static pair p[2 * NV];
    static apr_uint64_t vis[NV];
    static apr_uint32_t grp[NV];
    static apr_uint32_t map[QRT_VRADIX_GROUPS];
    static apr_int64_t want[64], got[64];
    qrt_vradix_t *r[2];
    const apr_uint32_t *maps[2];
    apr_size_t i, n = 0;
    int s, threads;

    /* store 1's group g is store 0's 41 - g (groups 1 .. 40) */
    memset(map, 0, sizeof(map));
    for (i = 1; i <= 40; i++) {
        map[i] = 41 - (apr_uint32_t)i;
    }
    maps[0] = NULL;
    maps[1] = map;
    for (s = 0; s < 2; s++) {
        ck_assert_ptr_nonnull(r[s] = qrt_vradix_make(NV));
        for (i = 0; i < NV; i++) {
            vis[i] = rnd(4) ? rnd(50000) * APR_UINT64_C(0x9E3779B97F4A7C15) : visitor(0);
            grp[i] = 1 + (apr_uint32_t)rnd(40);
            p[n].v = vis[i];
            p[n++].g = s ? map[grp[i]] : grp[i];
        }
        ck_assert_int_eq(qrt_vradix_add(r[s], 0, grp, vis, NULL, NV, QRT_VRADIX_GROUPS), 0);
    }
    naive(p, n, want, 41);
    for (threads = 1; threads <= 2; threads++) {
        memset(got, 0, sizeof(got));
        ck_assert_int_eq(qrt_vradix_uniques(r, maps, 2, 41, threads, got), 0);
        for (i = 0; i < 41; i++) {
            ck_assert_int_eq(got[i], want[i]);
        }
    }
    /* a map past the groups counted: refused, uniques as it was */
    map[7] = 41;
    ck_assert_int_eq(qrt_vradix_uniques(r, maps, 2, 41, 1, got), -1);
    for (i = 0; i < 41; i++) {
        ck_assert_int_eq(got[i], want[i]);
    }
    qrt_vradix_free(r[0]);
    qrt_vradix_free(r[1]);
}
END_TEST

/* The store's mix (MurmurHash3's finalizer) undone: visitors whose hashes are chosen. */
static apr_uint64_t inv_odd(apr_uint64_t a)
{
    apr_uint64_t x = a;
    int i;

    for (i = 0; i < 6; i++) {
        x *= 2 - a * x;             /* (Newton's iteration modulo 2^64) */
    }
    return x;
}

static apr_uint64_t unxorshift33(apr_uint64_t x)
{
    return x ^ (x >> 33);           /* (its own inverse: 33 bits or more) */
}

static apr_uint64_t unmix(apr_uint64_t h)
{
    h = unxorshift33(h);
    h *= inv_odd(APR_UINT64_C(0xC4CEB9FE1A85EC53));
    h = unxorshift33(h);
    h *= inv_odd(APR_UINT64_C(0xFF51AFD7ED558CCD));
    return unxorshift33(h);
}

/* Visitors whose hashes differ in one bit only, each bit in turn (the part's bits, the
 * highest bit a value keeps, the lowest), of one group and of two: each pair is two
 * visitors. */
START_TEST(hashes_one_bit_apart)
{
    apr_uint64_t vis[2 * 64];
    apr_uint32_t grp[2 * 64];
    apr_int64_t got[3];
    qrt_vradix_t *r = qrt_vradix_make(1000);
    apr_uint64_t base = APR_UINT64_C(0x5DEECE66D1234567);
    int b;

    ck_assert_ptr_nonnull(r);
    for (b = 0; b < 64; b++) {
        vis[2 * b] = unmix(base + (apr_uint64_t)b * APR_UINT64_C(0x9E3779B97F4A7C15));
        vis[2 * b + 1] = unmix((base + (apr_uint64_t)b * APR_UINT64_C(0x9E3779B97F4A7C15))
                               ^ (APR_UINT64_C(1) << b));
        grp[2 * b] = grp[2 * b + 1] = 1;
    }
    ck_assert_int_eq(qrt_vradix_add(r, 0, grp, vis, NULL, 128, QRT_VRADIX_GROUPS), 0);
    ck_assert_int_eq(qrt_vradix_add(r, 2, NULL, vis, NULL, 128, QRT_VRADIX_GROUPS), 0);
    ck_assert_int_eq(qrt_vradix_add(r, 2, NULL, vis, NULL, 128, QRT_VRADIX_GROUPS), 0);
    memset(got, 0, sizeof(got));
    ck_assert_int_eq(qrt_vradix_uniques(&r, NULL, 1, 3, 1, got), 0);
    ck_assert_int_eq(got[1], 128);
    ck_assert_int_eq(got[2], 128);
    qrt_vradix_free(r);
}
END_TEST

static int u64_cmp(const void *a, const void *b)
{
    apr_uint64_t x = *(const apr_uint64_t *)a, y = *(const apr_uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* The naive count by masks: n pairs of a visitor and a visit's mask in kv (sorted here by
 * visitor), each visitor's union of bits counted in want[bit] (zeroed first). */
static void naive_bits(apr_uint64_t *kv, apr_size_t n, apr_int64_t *want)
{
    apr_size_t i, j;
    int b;

    qsort(kv, n, 2 * sizeof(apr_uint64_t), u64_cmp);
    memset(want, 0, 64 * sizeof(*want));
    for (i = 0; i < n; i = j) {
        apr_uint64_t u = 0;

        for (j = i; j < n && kv[2 * j] == kv[2 * i]; j++) {
            u |= kv[2 * j + 1];
        }
        for (b = 0; b < 64; b++) {
            want[b] += (u >> b) & 1;
        }
    }
}

/* By masks: groups that are sets of bits (a tracker's tags), a visitor counted once in
 * each bit of the union of its groups' masks, in one store and two (mapped), by one
 * thread and by two; bit 63 and bit 0 among them. */
START_TEST(masks_count_each_visitor_once_a_bit)
{
    enum { N = 200000, NG = 60 };
    static apr_uint64_t vis[N], masks[NG + 1], who[2 * N], un[2 * N];
    static apr_uint32_t grp[N], map[QRT_VRADIX_GROUPS];
    static apr_int64_t want[64], got[64];
    qrt_vradix_t *r[2];
    const apr_uint32_t *maps[2];
    apr_size_t i, n = 0, m;
    int s, b, threads;

    masks[0] = 0;
    for (i = 1; i <= NG; i++) {
        /* one to three bits each, bits 0 and 63 among them */
        masks[i] = (APR_UINT64_C(1) << rnd(64)) | (i % 2 ? APR_UINT64_C(1) << rnd(64) : 0)
                   | (i == 1 ? APR_UINT64_C(1) | (APR_UINT64_C(1) << 63) : 0);
    }
    memset(map, 0, sizeof(map));
    for (i = 1; i <= NG; i++) {
        map[i] = NG + 1 - (apr_uint32_t)i;
    }
    maps[0] = NULL;
    maps[1] = map;
    for (s = 0; s < 2; s++) {
        ck_assert_ptr_nonnull(r[s] = qrt_vradix_make(N));
        for (i = 0; i < N; i++) {
            vis[i] = rnd(3) ? rnd(40000) * APR_UINT64_C(0x9E3779B97F4A7C15) : visitor((int)rnd(5));
            grp[i] = 1 + (apr_uint32_t)rnd(NG);
            who[n] = vis[i];
            un[n++] = masks[s ? map[grp[i]] : grp[i]];
        }
        ck_assert_int_eq(qrt_vradix_add(r[s], 0, grp, vis, NULL, N, NG + 1), 0);
    }
    /* the naive count: each visitor's union of bits, from its visits sorted by visitor */
    {
        static apr_uint64_t kv[2 * 2 * N];

        for (i = 0; i < n; i++) {
            kv[2 * i] = who[i];
            kv[2 * i + 1] = un[i];
        }
        naive_bits(kv, n, want);
    }
    for (threads = 1; threads <= 2; threads++) {
        apr_int64_t one[64];

        for (m = 1; m <= 2; m++) {
            memset(got, 0, sizeof(got));
            ck_assert_int_eq(qrt_vradix_uniques_masks(r, maps, (int)m, masks, NG + 1, threads,
                                                      got), 0);
            if (m == 1) {
                memcpy(one, got, sizeof(one));
                continue;
            }
            for (b = 0; b < 64; b++) {
                ck_assert_int_eq(got[b], want[b]);
                ck_assert_int_le(one[b], got[b]);
            }
        }
    }
    ck_assert_int_gt(want[0], 0);
    ck_assert_int_gt(want[63], 0);
    qrt_vradix_free(r[0]);
    qrt_vradix_free(r[1]);
}
END_TEST

/* By masks, a part of many distinct visitors (some 600 here: each bit's count is kept in
 * a byte of a counter, added to the counts every 255 visitors of a part), the masks'
 * bits in bytes 1 and 6 alone (the bytes between them never read), a group without
 * bits, and visitors of one bit among many of others: each bit's count as the naive
 * union's, by one thread and by two. */
START_TEST(masks_of_many_visitors_a_part)
{
    enum { N = 900000, NG = 9 };
    static apr_uint64_t vis[N], masks[NG + 1], kv[2 * N];
    static apr_uint32_t grp[N];
    static apr_int64_t want[64], got[64];
    qrt_vradix_t *r;
    apr_size_t i;
    int b, threads;

    masks[0] = 0;
    for (i = 1; i <= NG; i++) {
        /* bits 8-15 and 48-55, bit 12 in each but group 9's, which has none (a tracker
         * without tags): bit 12 some 500 visitors a part */
        masks[i] = i == NG ? 0 : (APR_UINT64_C(1) << 12) | (APR_UINT64_C(1) << (47 + i))
                                 | (i == 1 ? APR_UINT64_C(0xFF) << 8 : 0);
    }
    ck_assert_ptr_nonnull(r = qrt_vradix_make(N));
    for (i = 0; i < N; i++) {
        /* 600,000 visitors, a third of them seen twice or more */
        vis[i] = (rnd(600000) + 1) * APR_UINT64_C(0x9E3779B97F4A7C15);
        grp[i] = 1 + (apr_uint32_t)rnd(NG);
        kv[2 * i] = vis[i];
        kv[2 * i + 1] = masks[grp[i]];
    }
    ck_assert_int_eq(qrt_vradix_add(r, 0, grp, vis, NULL, N, NG + 1), 0);
    naive_bits(kv, N, want);
    for (threads = 1; threads <= 2; threads++) {
        memset(got, 0, sizeof(got));
        ck_assert_int_eq(qrt_vradix_uniques_masks(&r, NULL, 1, masks, NG + 1, threads, got), 0);
        for (b = 0; b < 64; b++) {
            ck_assert_int_eq(got[b], want[b]);
        }
    }
    ck_assert_int_gt(want[12], 400000);
    ck_assert_int_gt(want[8], 50000);
    ck_assert_int_gt(want[55], 0);
    ck_assert_int_eq(want[0] + want[7] + want[16] + want[47] + want[56] + want[63], 0);
    qrt_vradix_free(r);
}
END_TEST

START_TEST(bounded_and_groups_refused)
{
    apr_uint64_t vis[100];
    apr_uint32_t grp[100];
    apr_int64_t got[4] = { 0, 0, 0, 0 };
    qrt_vradix_t *r = qrt_vradix_make(150);
    int i;

    ck_assert_ptr_nonnull(r);
    for (i = 0; i < 100; i++) {
        vis[i] = (apr_uint64_t)i;
        grp[i] = 1;
    }
    ck_assert_int_eq(qrt_vradix_add(r, 1, NULL, vis, NULL, 100, QRT_VRADIX_GROUPS), 0);
    /* past max: none of them added */
    ck_assert_int_eq(qrt_vradix_add(r, 2, NULL, vis, NULL, 51, QRT_VRADIX_GROUPS), -1);
    ck_assert_uint_eq(qrt_vradix_size(r), 100);
    /* group 0, and groups past the values' bits */
    ck_assert_int_eq(qrt_vradix_add(r, 0, NULL, vis, NULL, 10, QRT_VRADIX_GROUPS), -1);
    ck_assert_int_eq(qrt_vradix_add(r, QRT_VRADIX_GROUPS, NULL, vis, NULL, 10, QRT_VRADIX_GROUPS), -1);
    grp[5] = QRT_VRADIX_GROUPS;
    ck_assert_int_eq(qrt_vradix_add(r, 0, grp, vis, NULL, 10, QRT_VRADIX_GROUPS), -1);
    grp[5] = 0;
    ck_assert_int_eq(qrt_vradix_add(r, 0, grp, vis, NULL, 10, QRT_VRADIX_GROUPS), -1);
    ck_assert_uint_eq(qrt_vradix_size(r), 100);
    /* groups of limit or more */
    ck_assert_int_eq(qrt_vradix_add(r, 3, NULL, vis, NULL, 50, 3), -1);
    grp[5] = 3;
    ck_assert_int_eq(qrt_vradix_add(r, 0, grp, vis, NULL, 10, 3), -1);
    ck_assert_int_eq(qrt_vradix_add(r, 0, grp, vis, NULL, 10, 0), -1);
    ck_assert_uint_eq(qrt_vradix_size(r), 100);
    ck_assert_int_eq(qrt_vradix_add(r, 3, NULL, vis, NULL, 50, 4), 0);
    ck_assert_int_eq(qrt_vradix_uniques(&r, NULL, 1, 4, 1, got), 0);
    ck_assert_int_eq(got[1], 100);
    ck_assert_int_eq(got[2], 0);
    ck_assert_int_eq(got[3], 50);
    qrt_vradix_free(r);
}
END_TEST

START_TEST(spares_kept_then_released)
{
    apr_uint64_t v = 1;
    qrt_vradix_t *r = qrt_vradix_make(10);

    qrt_vradix_spares_release(0);
    ck_assert_uint_eq(qrt_vradix_spares_held(), 0);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(qrt_vradix_add(r, 1, NULL, &v, NULL, 1, QRT_VRADIX_GROUPS), 0);
    qrt_vradix_free(r);
    ck_assert_uint_gt(qrt_vradix_spares_held(), 0);
    /* (not idle long enough: kept) */
    qrt_vradix_spares_release(apr_time_from_sec(3600));
    ck_assert_uint_gt(qrt_vradix_spares_held(), 0);
    qrt_vradix_spares_release(0);
    ck_assert_uint_eq(qrt_vradix_spares_held(), 0);
}
END_TEST

static Suite *vradix_suite(void)
{
    Suite *s = suite_create("qrt_vradix");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, counts_as_the_pairs);
    tcase_add_test(tc, two_stores_mapped_count_as_one);
    tcase_add_test(tc, hashes_one_bit_apart);
    tcase_add_test(tc, masks_count_each_visitor_once_a_bit);
    tcase_add_test(tc, masks_of_many_visitors_a_part);
    tcase_add_test(tc, bounded_and_groups_refused);
    tcase_add_test(tc, spares_kept_then_released);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(vradix_suite());
}
