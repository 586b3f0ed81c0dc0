/* Unit tests for qrt_vgroups: random visits of many groups and visitors (the tables
 * growing), counted as a plain count of distinct (group, visitor) pairs says; the text
 * form read back; the bound; visitor ids as text; damaged text refused. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>
#include <apr_thread_proc.h>

#include "qrt_vgroups.h"
#include "qrt_vradix.h"
#include "qrt_check.h"

QRT_CHECK_POOL

static apr_uint64_t seed = 50;

static apr_int64_t rnd(apr_int64_t n)
{
    seed = seed * APR_UINT64_C(6364136223846793005) + APR_UINT64_C(1442695040888963407);
    return (apr_int64_t)((seed >> 33) % (apr_uint64_t)n);
}

#define NV 20000
#define NG 300

START_TEST(counts_as_the_visits)
{
    static apr_int64_t scans[NG], clicks[NG], uniques[NG];
    static unsigned char seen[NG][2000];
    int round;

    for (round = 0; round < 4; round++) {
        qrt_vgroups_t *g = qrt_vgroups_make(1 << 20);
        apr_array_header_t *out = apr_array_make(pool, 16, sizeof(qrt_vgroup_t));
        int ngroups = round == 0 ? 1 : round == 1 ? 7 : NG, i, found = 0;
        apr_size_t len;
        char *text;

        memset(scans, 0, sizeof(scans));
        memset(clicks, 0, sizeof(clicks));
        memset(uniques, 0, sizeof(uniques));
        memset(seen, 0, sizeof(seen));
        ck_assert_ptr_nonnull(g);
        for (i = 0; i < NV; i++) {
            int k = (int)rnd(ngroups), click = rnd(5) == 0;
            /* visitors spread over the whole 64 bits, some repeating */
            int w = (int)rnd(2000);
            apr_int64_t who = (apr_int64_t)((apr_uint64_t)w * APR_UINT64_C(0x9E3779B97F4A7C15));
            /* keys with bytes of every kind, an empty one, one a prefix of another */
            const char *key = k == 0 ? "" : k == 1 ? "a\nb c:1" : k == 2 ? "a"
                              : apr_psprintf(pool, "%d", k - 100);

            ck_assert_int_eq(qrt_vgroups_add(g, key, strlen(key), click, who), 0);
            if (click) {
                clicks[k]++;
            }
            else {
                scans[k]++;
            }
            if (!seen[k][w]) {
                seen[k][w] = 1;
                uniques[k]++;
            }
        }
        text = qrt_vgroups_text(g, &len);
        ck_assert_ptr_nonnull(text);
        ck_assert_uint_eq(strlen(text), len);
        ck_assert_int_eq(qrt_vgroups_parse(pool, text, len, out), APR_SUCCESS);
        for (i = 0; i < out->nelts; i++) {
            qrt_vgroup_t *x = &APR_ARRAY_IDX(out, i, qrt_vgroup_t);
            int k = !*x->key ? 0 : !strcmp(x->key, "a\nb c:1") ? 1 : !strcmp(x->key, "a") ? 2
                    : atoi(x->key) + 100;

            ck_assert_int_ge(k, 0);
            ck_assert_int_lt(k, ngroups);
            ck_assert(x->scans == scans[k] && x->clicks == clicks[k]
                      && x->uniques == uniques[k]);
            found++;
        }
        for (i = 0; i < ngroups; i++) {
            found -= scans[i] + clicks[i] > 0;
        }
        ck_assert_int_eq(found, 0);
        free(text);
        qrt_vgroups_free(g);
    }
}
END_TEST

static int u64_cmp(const void *x, const void *y)
{
    apr_uint64_t a = *(const apr_uint64_t *)x, b = *(const apr_uint64_t *)y;

    return a < b ? -1 : a > b;
}

/* A group of more visits than a table counts (qrt_vgroups.c: sorted instead), beside
 * smaller ones: 300,000 visits of 90,000 visitors, some sharing their low 32 bits,
 * counted as sorting their ids says; 200,000 visits of 150,000 visitors (visitor 0
 * among them) through the largest table. */
START_TEST(a_large_group)
{
    enum { N = 300000 };
    apr_uint64_t *ids = malloc(N * sizeof(*ids));
    qrt_vgroups_t *g = qrt_vgroups_make(1 << 20);
    apr_array_header_t *out = apr_array_make(pool, 4, sizeof(qrt_vgroup_t));
    apr_int64_t want = 0;
    apr_size_t len;
    char *text;
    int i, small = 0;

    ck_assert_ptr_nonnull(ids);
    for (i = 0; i < N; i++) {
        apr_uint64_t w = (apr_uint64_t)rnd(90000);
        /* one visitor in ten shares its low bits with nine others */
        apr_uint64_t who = w % 10 == 0 ? (w << 32) | 12345 : w * APR_UINT64_C(0x9E3779B97F4A7C15);

        ids[i] = who;
        ck_assert_int_eq(qrt_vgroups_add(g, "big", 3, i % 3 == 0, (apr_int64_t)who), 0);
        if (i % 1000 == 0) {
            ck_assert_int_eq(qrt_vgroups_add(g, "small", 5, 0, (apr_int64_t)who), 0);
            small++;
        }
        /* and one of many repeats */
        if (i < 200000) {
            ck_assert_int_eq(qrt_vgroups_add(g, "medium", 6, 0, (apr_int64_t)(i % 150000)), 0);
        }
    }
    qsort(ids, N, sizeof(*ids), u64_cmp);
    for (i = 0; i < N; i++) {
        want += i == 0 || ids[i] != ids[i - 1];
    }
    text = qrt_vgroups_text(g, &len);
    ck_assert_ptr_nonnull(text);
    ck_assert_int_eq(qrt_vgroups_parse(pool, text, len, out), APR_SUCCESS);
    ck_assert_int_eq(out->nelts, 3);
    for (i = 0; i < 3; i++) {
        qrt_vgroup_t *x = &APR_ARRAY_IDX(out, i, qrt_vgroup_t);

        if (!strcmp(x->key, "medium")) {
            ck_assert_int_eq(x->scans, 200000);
            ck_assert_int_eq(x->uniques, 150000);
        }
        else if (!strcmp(x->key, "big")) {
            ck_assert_int_eq(x->scans + x->clicks, N);
            ck_assert_int_eq(x->clicks, (N + 2) / 3);
            ck_assert_int_eq(x->uniques, want);
        }
        else {
            ck_assert_str_eq(x->key, "small");
            ck_assert_int_eq(x->scans, small);
            ck_assert_int_le(x->uniques, small);
            ck_assert_int_gt(x->uniques, small / 2);
        }
    }
    free(text);
    qrt_vgroups_free(g);
    free(ids);
}
END_TEST

START_TEST(ids_sharing_their_low_bits)
{
    qrt_vgroups_t *g = qrt_vgroups_make(10000);
    apr_size_t len;
    char *text;
    int i;

    /* group a: 5 ids sharing their low 32 bits, each twice; group b: 40 such ids
     * (a long run), each three times, and 7 others */
    for (i = 0; i < 10; i++) {
        ck_assert_int_eq(qrt_vgroups_add(g, "a", 1, 0, ((apr_int64_t)(i % 5) << 32) | 77), 0);
    }
    for (i = 0; i < 120; i++) {
        ck_assert_int_eq(qrt_vgroups_add(g, "b", 1, i % 2,
                                         (apr_int64_t)((apr_uint64_t)(i % 40) << 40 | 5)), 0);
    }
    for (i = 0; i < 7; i++) {
        ck_assert_int_eq(qrt_vgroups_add(g, "b", 1, 0, -1 - i), 0);
    }
    text = qrt_vgroups_text(g, &len);
    ck_assert_str_eq(text, "1:a 10 0 5\n1:b 67 60 47\n");
    free(text);
    qrt_vgroups_free(g);
}
END_TEST

/* The distinct values of ids[0 .. n) (sorted here). */
static apr_int64_t distinct(apr_uint64_t *ids, apr_size_t n)
{
    apr_int64_t u = 0;
    apr_size_t i;

    qsort(ids, n, sizeof(*ids), u64_cmp);
    for (i = 0; i < n; i++) {
        u += i == 0 || ids[i] != ids[i - 1];
    }
    return u;
}

/* The visitor whose mixed value (qrt_vgroups.c's vg_mix: xor-shift, multiply, xor-shift)
 * is h: a group's visitors are spread over parts by the high bits of that value. */
static apr_uint64_t unmix(apr_uint64_t h)
{
    apr_uint64_t c = APR_UINT64_C(0xFF51AFD7ED558CCD), inv = c;
    int i;

    for (i = 0; i < 6; i++) {
        inv *= 2 - c * inv;             /* Newton: the inverse of c modulo 2^64 */
    }
    h ^= h >> 33;
    h *= inv;
    h ^= h >> 33;
    return h;
}

/* Groups on either side of each way of counting them (16 visits compared, one table up
 * to 16,384, then parts of about 1,024 each), a visitor 0 among them, and a group with
 * two thirds of its visitors in one part (past the room of a spread in one read). */
START_TEST(groups_of_any_size_in_parts)
{
    static const apr_size_t sizes[] = { 16, 17, 2048, 2049, 16384, 16385, 70001, 300000 };
    enum { NS = sizeof(sizes) / sizeof(sizes[0]) };
    apr_uint64_t *ids[NS + 1];
    apr_size_t n[NS + 1];
    qrt_vgroups_t *g = qrt_vgroups_make(1 << 21);
    apr_array_header_t *out = apr_array_make(pool, 8, sizeof(qrt_vgroup_t));
    apr_size_t len, i, k;
    char *text;

    for (k = 0; k <= NS; k++) {
        n[k] = k < NS ? sizes[k] : 40000;
        ids[k] = malloc(n[k] * sizeof(**ids));
        ck_assert_ptr_nonnull(ids[k]);
        for (i = 0; i < n[k]; i++) {
            char key[16];
            apr_uint64_t who;

            if (k == NS && i % 3) {
                /* mixed values below 2^54: two thirds in the first of the parts */
                who = unmix(1 + (apr_uint64_t)rnd(30000) * APR_UINT64_C(0x9E3779B9));
            }
            else if (k == NS) {
                who = 1 + (apr_uint64_t)rnd(30000) * APR_UINT64_C(0x9E3779B97F4A7C15);
            }
            else {
                who = i % 97 == 5 ? 0 : (apr_uint64_t)rnd((apr_int64_t)n[k] / 2 + 1)
                                         * APR_UINT64_C(0x9E3779B97F4A7C15);
            }
            ids[k][i] = who;
            apr_snprintf(key, sizeof(key), "g%d", (int)k);
            ck_assert_int_eq(qrt_vgroups_add(g, key, strlen(key), (int)(i & 1),
                                             (apr_int64_t)who), 0);
        }
    }
    text = qrt_vgroups_text(g, &len);
    ck_assert_ptr_nonnull(text);
    ck_assert_int_eq(qrt_vgroups_parse(pool, text, len, out), APR_SUCCESS);
    ck_assert_int_eq(out->nelts, NS + 1);
    for (k = 0; k <= NS; k++) {
        qrt_vgroup_t *x = &APR_ARRAY_IDX(out, k, qrt_vgroup_t);

        ck_assert_str_eq(x->key, apr_psprintf(pool, "g%d", (int)k));
        ck_assert_int_eq(x->scans + x->clicks, (apr_int64_t)n[k]);
        ck_assert_int_eq(x->uniques, distinct(ids[k], n[k]));
        free(ids[k]);
    }
    free(text);
    qrt_vgroups_free(g);
}
END_TEST

/* Sets of groups (a tracker's tags): each visit added once, to its set, counts in every
 * group of the set, its visitor once a group however many sets name the group; some
 * groups take visits of their own too; 150 groups (three words of bits); a visitor 0;
 * enough visits for parts. Against the visits added once a group. */
/* Visits of sets of ngr groups (and of the groups themselves) count as the same visits
 * added to each group of the set (plain): more than 64 groups take several words of bits
 * a visitor, at most 64 one; threads 2: the parts counted by two threads. nvis visits:
 * 120,000 make 128 parts, no fewer than the sources (each visitor spread with its source
 * in one read); 60,000 over 150 groups make 64 parts, fewer than the sources (each
 * source's visitors counted by part first). skew puts two thirds of the visitors in the
 * first part, which overflows the one read's room. */
static void sets_against_plain(int ngr, int threads, int skew, int nvis)
{
    enum { NGR_MAX = 150, NSET = 40 };
    const int NVIS = nvis;
    const int NGR = ngr;
    qrt_vgroups_t *g = qrt_vgroups_make(1 << 22), *plain = qrt_vgroups_make(1 << 22);
    apr_array_header_t *out = apr_array_make(pool, 8, sizeof(qrt_vgroup_t));
    apr_array_header_t *want = apr_array_make(pool, 8, sizeof(qrt_vgroup_t));
    apr_uint32_t gr[NGR_MAX + 1], set[NSET], members[NSET][6];
    int nmem[NSET], i, k;
    apr_size_t len;
    char *text;

    ck_assert_int_le(ngr, NGR_MAX);
    qrt_vgroups_threads(g, threads, 1);

    for (k = 1; k <= NGR; k++) {
        char key[16];

        apr_snprintf(key, sizeof(key), "tag%d", k);
        gr[k] = qrt_vgroups_group(g, key, strlen(key));
        ck_assert_uint_eq(gr[k], (apr_uint32_t)k);
        ck_assert_uint_eq(qrt_vgroups_group(plain, key, strlen(key)), (apr_uint32_t)k);
    }
    for (i = 0; i < NSET; i++) {
        apr_uint32_t again;

        nmem[i] = 1 + (int)rnd(6);
        for (k = 0; k < nmem[i]; k++) {
            /* (some sets name a group twice) */
            members[i][k] = k && rnd(8) == 0 ? members[i][0] : 1 + (apr_uint32_t)rnd(NGR);
        }
        set[i] = qrt_vgroups_set(g, members[i], (apr_size_t)nmem[i]);
        ck_assert_uint_gt(set[i], NGR);
        /* the same set in another order is the same set */
        {
            apr_uint32_t rev[6];

            for (k = 0; k < nmem[i]; k++) {
                rev[k] = members[i][nmem[i] - 1 - k];
            }
            again = qrt_vgroups_set(g, rev, (apr_size_t)nmem[i]);
            ck_assert_uint_eq(again, set[i]);
        }
    }
    ck_assert_uint_eq(qrt_vgroups_set(g, members[0], 0), 0);
    ck_assert_uint_eq(qrt_vgroups_set(g, &set[0], 1), 0);     /* a set is no member */
    for (i = 0; i < NVIS; i++) {
        int w = (int)rnd(NSET), click = (int)rnd(4) == 0;
        apr_int64_t who = rnd(50) == 0 ? 0 : rnd(30000) * (apr_int64_t)0x9E3779B9;

        if (skew && who && (who / 0x9E3779B9) % 3 != 0) {
            who = (apr_int64_t)unmix((apr_uint64_t)who);    /* (mixed: below 2^54) */
        }
        unsigned char c = (unsigned char)click;

        if (i % 7 == 3) {
            /* a visit of a group of its own */
            apr_uint32_t y = 1 + (apr_uint32_t)rnd(NGR);

            ck_assert_int_eq(qrt_vgroups_add_to(g, y, click, who), 0);
            ck_assert_int_eq(qrt_vgroups_add_to(plain, y, click, who), 0);
            continue;
        }
        ck_assert_int_eq(i % 2 ? qrt_vgroups_add_to(g, set[w], click, who)
                         : qrt_vgroups_add_run(g, set[w], NULL, &who, &c, 1), 0);
        for (k = 0; k < nmem[w]; k++) {
            int seen = 0, q;

            for (q = 0; q < k; q++) {
                seen |= members[w][q] == members[w][k];
            }
            if (!seen) {
                ck_assert_int_eq(qrt_vgroups_add_to(plain, members[w][k], click, who), 0);
            }
        }
    }
    text = qrt_vgroups_text(g, &len);
    ck_assert_ptr_nonnull(text);
    ck_assert_int_eq(qrt_vgroups_parse(pool, text, len, out), APR_SUCCESS);
    free(text);
    text = qrt_vgroups_text(plain, &len);
    ck_assert_ptr_nonnull(text);
    ck_assert_int_eq(qrt_vgroups_parse(pool, text, len, want), APR_SUCCESS);
    free(text);
    ck_assert_int_eq(out->nelts, NGR);
    ck_assert_int_eq(want->nelts, NGR);
    for (k = 0; k < NGR; k++) {
        qrt_vgroup_t *x = &APR_ARRAY_IDX(out, k, qrt_vgroup_t);
        qrt_vgroup_t *y = &APR_ARRAY_IDX(want, k, qrt_vgroup_t);

        ck_assert_str_eq(x->key, y->key);
        ck_assert_int_eq(x->scans, y->scans);
        ck_assert_int_eq(x->clicks, y->clicks);
        ck_assert_int_eq(x->uniques, y->uniques);
    }
    qrt_vgroups_free(g);
    qrt_vgroups_free(plain);
}

START_TEST(sets_count_as_their_groups)
{
    sets_against_plain(150, 1, 0, 120000);
    sets_against_plain(150, 1, 0, 60000);
}
END_TEST

START_TEST(sets_of_few_groups_count_as_their_groups)
{
    sets_against_plain(40, 1, 0, 120000);
    sets_against_plain(40, 2, 0, 120000);
    sets_against_plain(150, 2, 0, 120000);
    sets_against_plain(40, 1, 1, 120000);
    sets_against_plain(150, 1, 1, 120000);
    sets_against_plain(40, 2, 1, 120000);
}
END_TEST

/* g and w count the same (their text forms equal); both freed. */
static void same_counts(qrt_vgroups_t *g, qrt_vgroups_t *w)
{
    apr_size_t la, lb;
    char *ta = qrt_vgroups_text(g, &la), *tb = qrt_vgroups_text(w, &lb);

    ck_assert_ptr_nonnull(ta);
    ck_assert_ptr_nonnull(tb);
    ck_assert_str_eq(ta, tb);
    free(ta);
    free(tb);
    qrt_vgroups_free(g);
    qrt_vgroups_free(w);
}

/* Runs added by reference (qrt_vgroups_add_ref) count as the same runs copied
 * (qrt_vgroups_add_run) through every way of counting: groups of 10, 3,000, 40,000 and
 * 300,000 visits (compared, one table, parts spread in one read) and one of 40,000 with
 * two thirds of its visitors in one part (its parts counted first, the chunks mixed in
 * place), a set of two of them; runs short (copied) and long, some added to a second
 * count that the first absorbs (their runs stay where they are); one thread and two.
 * The runs' visitors are left as they were. */
static void refs_against_copies(int threads)
{
    enum { N = 400000, NGRP = 5 };
    static const apr_size_t sizes[NGRP] = { 10, 3000, 40000, 300000, 40000 };
    static apr_int64_t who[N], before[N];
    static unsigned char click[N];
    qrt_vgroups_t *ref = qrt_vgroups_make(1 << 22), *half = qrt_vgroups_make(1 << 22);
    qrt_vgroups_t *cp = qrt_vgroups_make(1 << 22);
    apr_uint32_t gr[NGRP], gh[NGRP], gc[NGRP], two[2], sr, sh, sc;
    apr_size_t at = 0, i;
    int k;

    for (k = 0; k < NGRP; k++) {
        const char *key = apr_psprintf(pool, "g%d", k);

        gr[k] = qrt_vgroups_group(ref, key, strlen(key));
        gh[k] = qrt_vgroups_group(half, key, strlen(key));
        gc[k] = qrt_vgroups_group(cp, key, strlen(key));
    }
    two[0] = gr[0];
    two[1] = gr[2];
    sr = qrt_vgroups_set(ref, two, 2);
    two[0] = gh[0];
    two[1] = gh[2];
    sh = qrt_vgroups_set(half, two, 2);
    two[0] = gc[0];
    two[1] = gc[2];
    sc = qrt_vgroups_set(cp, two, 2);
    ck_assert_uint_gt(sr, 0);
    ck_assert_uint_gt(sh, 0);
    ck_assert_uint_gt(sc, 0);
    qrt_vgroups_threads(ref, threads, 1);
    qrt_vgroups_threads(cp, threads, 1);
    for (k = 0; k < NGRP; k++) {
        apr_size_t end = at + sizes[k];

        for (i = at; i < end; i++) {
            apr_uint64_t r = 1 + (apr_uint64_t)rnd((apr_int64_t)sizes[k] / 2 + 1);

            who[i] = k == 4 && i % 3 ? (apr_int64_t)unmix(r * APR_UINT64_C(0x9E3779B9))
                     : i % 89 == 7 ? 0 : (apr_int64_t)(r * APR_UINT64_C(0x9E3779B97F4A7C15));
            click[i] = rnd(5) == 0;
        }
        while (at < end) {
            apr_size_t n = 1 + (apr_size_t)rnd(300);
            int to_set = k == 1 && rnd(3) == 0, second = rnd(4) == 0;

            if (n > end - at) {
                n = end - at;
            }
            ck_assert_int_eq(qrt_vgroups_add_ref(second ? half : ref,
                                                 to_set ? (second ? sh : sr)
                                                        : (second ? gh[k] : gr[k]),
                                                 who + at, click + at, n), 0);
            ck_assert_int_eq(qrt_vgroups_add_run(cp, to_set ? sc : gc[k], NULL, who + at,
                                                 click + at, n), 0);
            at += n;
        }
    }
    memcpy(before, who, sizeof(who));
    ck_assert_int_eq(qrt_vgroups_absorb(ref, half), 0);
    qrt_vgroups_free(half);
    same_counts(ref, cp);
    ck_assert_int_eq(memcmp(before, who, sizeof(who)), 0);
}

START_TEST(refs_count_as_copies)
{
    refs_against_copies(1);
    refs_against_copies(2);
}
END_TEST

/* Runs by reference absorbed from counts whose groups are numbered otherwise, one of them
 * new to the first and one whose first count holds no run by reference, twice over (the
 * first then holding runs of its own and of the first absorbed): the same groups as the
 * runs copied into one count. */
START_TEST(refs_absorbed_from_other_numbers)
{
    enum { N = 60000 };
    static apr_int64_t who[N];
    static unsigned char click[N];
    static const char *keys[] = { "a", "b", "c", "d" };
    qrt_vgroups_t *g = qrt_vgroups_make(1 << 22), *cp = qrt_vgroups_make(1 << 22);
    apr_size_t at = 0, i;
    int round, k;

    for (i = 0; i < N; i++) {
        who[i] = (apr_int64_t)((1 + (apr_uint64_t)rnd(N / 3)) * APR_UINT64_C(0x9E3779B97F4A7C15));
        click[i] = rnd(4) == 0;
    }
    /* g: "a" with runs by reference and copied, "b" with copies alone */
    for (k = 0; k < 2; k++) {
        apr_uint32_t x = qrt_vgroups_group(g, keys[k], 1);
        apr_uint32_t y = qrt_vgroups_group(cp, keys[k], 1);

        for (i = 0; i < 4; i++, at += 500) {
            int by_ref = k == 0 && i % 2 == 0;

            ck_assert_int_eq(by_ref ? qrt_vgroups_add_ref(g, x, who + at, click + at, 500)
                                    : qrt_vgroups_add_run(g, x, NULL, who + at, click + at, 500), 0);
            ck_assert_int_eq(qrt_vgroups_add_run(cp, y, NULL, who + at, click + at, 500), 0);
        }
    }
    for (round = 0; round < 2; round++) {
        /* a second count, its groups made in another order ("d" and "c" new to g at first) */
        qrt_vgroups_t *h = qrt_vgroups_make(1 << 22);

        for (k = 3; k >= 0; k--) {
            apr_uint32_t x = qrt_vgroups_group(h, keys[k], 1);
            apr_uint32_t y = qrt_vgroups_group(cp, keys[k], 1);

            for (i = 0; i < 3; i++) {
                apr_size_t n = 17 + (apr_size_t)rnd(900);

                ck_assert_int_eq(qrt_vgroups_add_ref(h, x, who + at, click + at, n), 0);
                ck_assert_int_eq(qrt_vgroups_add_run(cp, y, NULL, who + at, click + at, n), 0);
                at += n;
            }
        }
        ck_assert_uint_le(at, N);
        ck_assert_int_eq(qrt_vgroups_absorb(g, h), 0);
        qrt_vgroups_free(h);
    }
    same_counts(g, cp);
}
END_TEST

/* A plain group's runs by reference take none of the bound (the group is counted in
 * bands past it), copies do; and a count of a share copies the run's visitors of the
 * share. */
START_TEST(refs_bounded_and_shared)
{
    static apr_int64_t who[100];
    static unsigned char click[100];
    qrt_vgroups_t *b = qrt_vgroups_make(50), *s = qrt_vgroups_make(1000);
    qrt_vgroups_t *w = qrt_vgroups_make(1000);
    apr_uint32_t k;
    apr_size_t la, lb, i;
    char *ta, *tb;

    for (i = 0; i < 100; i++) {
        who[i] = (apr_int64_t)(1 + i % 37) * 7919;
        click[i] = i % 3 == 0;
    }
    k = qrt_vgroups_group(b, "x", 1);
    ck_assert_int_eq(qrt_vgroups_add_ref(b, k, who, click, 40), 0);
    /* (past the bound by reference: no copy, the group counted in bands) */
    ck_assert_int_eq(qrt_vgroups_add_ref(b, k, who + 40, click + 40, 20), 0);
    ck_assert_int_eq(qrt_vgroups_add_ref(b, k + 5, who + 40, click + 40, 20), -1);
    /* copies past the bound, not one more */
    ck_assert_int_eq(qrt_vgroups_add_run(b, k, NULL, who + 60, click + 60, 51), -1);
    ck_assert_int_eq(qrt_vgroups_add_run(b, k, NULL, who + 60, click + 60, 10), 0);
    ta = qrt_vgroups_text(b, &la);
    ck_assert_str_eq(ta, "1:x 46 24 37\n");
    free(ta);
    ck_assert_int_eq(qrt_vgroups_add_ref(b, k, who, click, 20), -1);   /* (counted) */
    qrt_vgroups_free(b);

    /* share 1 of 2: as the whole's visitors of that share added one at a time */
    ck_assert_int_eq(qrt_vgroups_share(s, 1, 2), 0);
    ck_assert_int_eq(qrt_vgroups_share(w, 1, 2), 0);
    k = qrt_vgroups_group(s, "x", 1);
    ck_assert_int_eq(qrt_vgroups_group(w, "x", 1), k);
    ck_assert_int_eq(qrt_vgroups_add_ref(s, k, who, click, 100), 0);
    for (i = 0; i < 100; i++) {
        ck_assert_int_eq(qrt_vgroups_add_to(w, k, click[i], who[i]), 0);
    }
    ta = qrt_vgroups_text(s, &la);
    tb = qrt_vgroups_text(w, &lb);
    ck_assert_str_eq(ta, tb);
    free(ta);
    free(tb);
    qrt_vgroups_free(s);
    qrt_vgroups_free(w);
}
END_TEST

/* Runs of plain groups held by reference take none of the bound's memory: groups may
 * hold more visits in all than the bound (a report by date over the days of many
 * trackers, in one walk), and one group more than the bound (counted in bands of its
 * visitors), as many copied visits as the bound besides. A set's runs count against the
 * bound, and so do its members' once they are members; a share is refused once visits
 * are held. The counts are those of the same visits added one at a time without a
 * bound, in one thread and in two. */
static void refs_outside_the_bound(int threads)
{
    enum { N = 8000 };
    static apr_int64_t who[N];
    static unsigned char click[N];
    qrt_vgroups_t *g = qrt_vgroups_make(100), *w = qrt_vgroups_make(100000);
    qrt_vgroups_t *h = qrt_vgroups_make(100), *s = qrt_vgroups_make(100);
    apr_uint32_t day[5], wday[5], set, two[2];
    apr_size_t i;
    int d;

    for (i = 0; i < N; i++) {
        who[i] = i % 97 == 5 ? 0 : (apr_int64_t)(1 + (i * 7) % 3001) * 104729;
        click[i] = i % 4 == 0;
    }
    qrt_vgroups_threads(g, threads, 1);
    for (d = 0; d < 5; d++) {
        char key[8];

        snprintf(key, sizeof(key), "d%d", d);
        day[d] = qrt_vgroups_group(g, key, strlen(key));
        wday[d] = qrt_vgroups_group(w, key, strlen(key));
        ck_assert_uint_eq(qrt_vgroups_group(h, key, strlen(key)), day[d]);
    }
    /* four days of 90 visits by reference: 360 in all, past the bound of 100; then the
     * first day to 250 visits and the second to 6,090, each past it */
    for (d = 0; d < 4; d++) {
        ck_assert_int_eq(qrt_vgroups_add_ref(g, day[d], who + 90 * d, click + 90 * d, 50), 0);
        ck_assert_int_eq(qrt_vgroups_add_ref(g, day[d], who + 90 * d + 50, click + 90 * d + 50,
                                             40), 0);
        for (i = 90 * (apr_size_t)d; i < 90 * (apr_size_t)d + 90; i++) {
            ck_assert_int_eq(qrt_vgroups_add_to(w, wday[d], click[i], who[i]), 0);
        }
    }
    ck_assert_int_eq(qrt_vgroups_add_ref(g, day[0], who + 400, click + 400, 80), 0);
    ck_assert_int_eq(qrt_vgroups_add_ref(g, day[0], who + 480, click + 480, 80), 0);
    for (i = 400; i < 560; i++) {
        ck_assert_int_eq(qrt_vgroups_add_to(w, wday[0], click[i], who[i]), 0);
    }
    for (i = 1000; i < 7000; i += 600) {
        ck_assert_int_eq(qrt_vgroups_add_ref(g, day[1], who + i, click + i, 600), 0);
    }
    for (i = 1000; i < 7000; i++) {
        ck_assert_int_eq(qrt_vgroups_add_to(w, wday[1], click[i], who[i]), 0);
    }
    /* the bound's copies besides: 10 one at a time, a fifth day of 90, not one more */
    for (i = 0; i < 10; i++) {
        ck_assert_int_eq(qrt_vgroups_add_to(g, day[2], click[360 + i], who[360 + i]), 0);
        ck_assert_int_eq(qrt_vgroups_add_to(w, wday[2], click[360 + i], who[360 + i]), 0);
    }
    ck_assert_int_eq(qrt_vgroups_add_run(g, day[4], NULL, who + 300, click + 300, 91), -1);
    ck_assert_int_eq(qrt_vgroups_add_run(g, day[4], NULL, who + 300, click + 300, 90), 0);
    ck_assert_int_eq(qrt_vgroups_add_run(w, wday[4], NULL, who + 300, click + 300, 90), 0);
    ck_assert_int_eq(qrt_vgroups_add_run(g, 0, day, who, click, 1), -1);
    ck_assert_int_eq(qrt_vgroups_add_to(g, day[2], 0, who[0]), -1);
    /* a share, once visits are held */
    ck_assert_int_eq(qrt_vgroups_share(h, 0, 2), 0);
    ck_assert_int_eq(qrt_vgroups_share(g, 0, 2), -1);
    same_counts(g, w);
    qrt_vgroups_free(h);

    /* two counts whose day passes the bound together, absorbed */
    g = qrt_vgroups_make(100);
    h = qrt_vgroups_make(100);
    w = qrt_vgroups_make(100000);
    qrt_vgroups_threads(g, threads, 1);
    day[0] = qrt_vgroups_group(g, "d0", 2);
    day[1] = qrt_vgroups_group(h, "d0", 2);
    day[2] = qrt_vgroups_group(h, "d1", 2);
    wday[0] = qrt_vgroups_group(w, "d0", 2);
    wday[1] = qrt_vgroups_group(w, "d1", 2);
    ck_assert_int_eq(qrt_vgroups_add_ref(g, day[0], who, click, 60), 0);
    ck_assert_int_eq(qrt_vgroups_add_ref(h, day[1], who + 60, click + 60, 60), 0);
    ck_assert_int_eq(qrt_vgroups_add_ref(h, day[2], who + 120, click + 120, 90), 0);
    ck_assert_int_eq(qrt_vgroups_absorb(g, h), 0);
    qrt_vgroups_free(h);
    ck_assert_int_eq(qrt_vgroups_add_run(w, wday[0], NULL, who, click, 120), 0);
    ck_assert_int_eq(qrt_vgroups_add_run(w, wday[1], NULL, who + 120, click + 120, 90), 0);
    same_counts(g, w);

    /* a set's runs count against the bound in all */
    two[0] = qrt_vgroups_group(s, "a", 1);
    two[1] = qrt_vgroups_group(s, "b", 1);
    set = qrt_vgroups_set(s, two, 2);
    ck_assert_int_eq(qrt_vgroups_add_ref(s, set, who, click, 60), 0);
    ck_assert_int_eq(qrt_vgroups_add_ref(s, set, who + 60, click + 60, 60), -1);
    ck_assert_int_eq(qrt_vgroups_add_ref(s, two[0], who + 60, click + 60, 60), -1);
    ck_assert_int_eq(qrt_vgroups_add_ref(s, two[0], who + 60, click + 60, 40), 0);
    qrt_vgroups_free(s);
    /* a group's visits held by reference count against it once it is a set's member */
    s = qrt_vgroups_make(100);
    two[0] = qrt_vgroups_group(s, "c", 1);
    two[1] = qrt_vgroups_group(s, "e", 1);
    ck_assert_int_eq(qrt_vgroups_add_ref(s, two[0], who, click, 70), 0);
    ck_assert_int_eq(qrt_vgroups_add_run(s, two[1], NULL, who + 70, click + 70, 40), 0);
    ck_assert_uint_eq(qrt_vgroups_set(s, two, 2), 0);
    ck_assert_uint_eq(qrt_vgroups_set(s, two, 1), 0);
    ck_assert_uint_gt(qrt_vgroups_set(s, two + 1, 1), 0);
    ck_assert_int_eq(qrt_vgroups_add_run(s, two[1], NULL, who, click, 61), -1);
    ck_assert_int_eq(qrt_vgroups_add_run(s, two[1], NULL, who, click, 60), 0);
    /* (c, held by reference, is no member: outside the bound) */
    ck_assert_int_eq(qrt_vgroups_add_ref(s, two[0], who + 70, click + 70, 300), 0);
    qrt_vgroups_free(s);
}

/* Group "" of g (its visits who[0, n) added by reference in runs of step) counted as the
 * same visits copied into w; the counts by halves of the runs and those of them counted
 * in bands after all moved on by halves and banded. */
static void halves_against_copies(qrt_vgroups_t *g, qrt_vgroups_t *w, const apr_int64_t *who,
                                  const unsigned char *click, apr_size_t n, apr_size_t step,
                                  apr_size_t halves, apr_size_t banded)
{
    apr_uint32_t k = qrt_vgroups_group(g, "", 0), kw = qrt_vgroups_group(w, "", 0);
    apr_size_t i, h0, b0, h1, b1;

    for (i = 0; i < n; i += step) {
        ck_assert_int_eq(qrt_vgroups_add_ref(g, k, who + i, click + i, step), 0);
    }
    ck_assert_int_eq(qrt_vgroups_add_run(w, kw, NULL, who, click, n), 0);
    qrt_vgroups_split_counts(&h0, &b0);
    same_counts(g, w);
    qrt_vgroups_split_counts(&h1, &b1);
    ck_assert_uint_eq(h1, h0 + halves);
    ck_assert_uint_eq(b1, b0 + banded);
}

/* A group of a million visits or more by reference, in two threads (in halves of its
 * runs: in one round within the bound, in rounds of two bands past it) and in one, is
 * counted as the same visits copied. */
static void a_big_group_by_reference(int threads, apr_size_t max)
{
    enum { N = 1200000 };
    static apr_int64_t who[N];
    static unsigned char click[N];
    qrt_vgroups_t *g = qrt_vgroups_make(max), *w = qrt_vgroups_make(1 << 22);
    apr_size_t i;

    for (i = 0; i < N; i++) {
        apr_uint64_t r = 1 + (apr_uint64_t)rnd(700000);

        who[i] = i % 1009 == 3 ? 0 : (apr_int64_t)(r * APR_UINT64_C(0x9E3779B97F4A7C15));
        click[i] = rnd(6) == 0;
    }
    qrt_vgroups_threads(g, threads, 1);
    halves_against_copies(g, w, who, click, N, 40000, threads == 2, 0);
}

/* A group past the bound whose visitors all fall in one part (chosen against the hash):
 * its one band overflows that part's room and is spread again, counted first; the
 * visitor 0 after the overflow still counts once. */
static void a_band_past_its_room(void)
{
    enum { N = 20000 };
    static apr_int64_t who[N];
    static unsigned char click[N];
    qrt_vgroups_t *g = qrt_vgroups_make(10000), *w = qrt_vgroups_make(100000);
    apr_uint32_t k = qrt_vgroups_group(g, "x", 1), kw = qrt_vgroups_group(w, "x", 1);
    apr_size_t i;

    for (i = 0; i < N; i++) {
        who[i] = i + 1 < N ? (apr_int64_t)unmix((apr_uint64_t)(i % 15000) + 1) : 0;
        click[i] = i % 7 == 0;
    }
    for (i = 0; i < N; i += 1000) {
        ck_assert_int_eq(qrt_vgroups_add_ref(g, k, who + i, click + i, 1000), 0);
    }
    ck_assert_int_eq(qrt_vgroups_add_run(w, kw, NULL, who, click, N), 0);
    same_counts(g, w);
}

/* A group within the bound and of a million visits or more, counted by two threads
 * that each spread half of its runs and count half of its parts: its copied chunks and
 * its runs held by reference, halved inside the chunks; and one whose visitors all fall
 * in one part (chosen against the hash), which overflows that part's room in both halves
 * and is counted in bands instead, within the bound and past it. Counted as the same visits copied in one thread. */
static void a_big_group_in_halves(void)
{
    enum { N = 1200000 };
    static apr_int64_t who[N];
    static unsigned char click[N];
    qrt_vgroups_t *g = qrt_vgroups_make(1 << 21), *w = qrt_vgroups_make(1 << 22);
    apr_uint32_t k = qrt_vgroups_group(g, "", 0), kw = qrt_vgroups_group(w, "", 0);
    apr_size_t i, halves, banded, halves1, banded1, max;

    for (i = 0; i < N; i++) {
        apr_uint64_t r = 1 + (apr_uint64_t)rnd(800000);

        who[i] = i % 1013 == 7 ? 0 : (apr_int64_t)(r * APR_UINT64_C(0x9E3779B97F4A7C15));
        click[i] = rnd(5) == 0;
    }
    qrt_vgroups_threads(g, 2, 1);
    qrt_vgroups_split_counts(&halves, &banded);
    /* 700,000 copied (the halves meet at 600,000, in the chunks), 500,000 by reference */
    ck_assert_int_eq(qrt_vgroups_add_run(g, k, NULL, who, click, 700000), 0);
    for (i = 700000; i < N; i += 50000) {
        ck_assert_int_eq(qrt_vgroups_add_ref(g, k, who + i, click + i, 50000), 0);
    }
    ck_assert_int_eq(qrt_vgroups_add_run(w, kw, NULL, who, click, N), 0);
    same_counts(g, w);
    qrt_vgroups_split_counts(&halves1, &banded1);
    ck_assert_uint_eq(halves1, halves + 1);
    ck_assert_uint_eq(banded1, banded);

    /* every mixed visitor below 2^24: all in the first of the parts, within the bound
     * and past it (in rounds, the first of which overflows) */
    for (i = 0; i < N; i++) {
        who[i] = i % 997 == 3 ? 0 : (apr_int64_t)unmix(1 + (apr_uint64_t)rnd(600000));
    }
    for (max = 1 << 21; max >= 1 << 18; max >>= 3) {
        g = qrt_vgroups_make(max);
        qrt_vgroups_threads(g, 2, 1);
        halves_against_copies(g, qrt_vgroups_make(1 << 22), who, click, N, 60000, 1, 1);
    }
}

START_TEST(refs_of_plain_groups_outside_the_bound)
{
    a_band_past_its_room();
    refs_outside_the_bound(1);
    refs_outside_the_bound(2);
    a_big_group_by_reference(2, 1 << 21);
    a_big_group_by_reference(1, 1 << 18);
    a_big_group_by_reference(2, 1 << 18);
    a_big_group_in_halves();
}
END_TEST

START_TEST(bounded)
{
    qrt_vgroups_t *g = qrt_vgroups_make(100);
    int i;

    apr_size_t len;
    char *text;

    for (i = 0; i < 100; i++) {
        ck_assert_int_eq(qrt_vgroups_add(g, i % 2 ? "x" : "y", 1, 0, i % 30), 0);
    }
    /* the 101st visit does not fit, of a known group and visitor or not */
    ck_assert_int_eq(qrt_vgroups_add(g, "x", 1, 1, 7), -1);
    ck_assert_int_eq(qrt_vgroups_add(g, "z", 1, 0, 100), -1);
    text = qrt_vgroups_text(g, &len);
    ck_assert_str_eq(text, "1:y 50 0 15\n1:x 50 0 15\n");
    /* nothing more once written */
    ck_assert_int_eq(qrt_vgroups_add(g, "x", 1, 1, 7), -1);
    free(text);
    qrt_vgroups_free(g);
}
END_TEST

/* Runs of visits (one group each, or a group a visit) count as the same visits one at
 * a time: the same text, byte for byte, over runs of 0 to 300 visits and every kind of
 * run; a run past the bound counts none of its visits, one naming no group neither. */
START_TEST(runs_count_as_single_visits)
{
    enum { N = 60000, G = 40 };
    static apr_int64_t who[N];
    static unsigned char click[N];
    static apr_uint32_t grp[N];
    qrt_vgroups_t *one = qrt_vgroups_make(1 << 20), *runs = qrt_vgroups_make(1 << 20), *b;
    apr_uint32_t num[G + 1];
    apr_size_t i, n, la, lb;
    char *ta, *tb;
    int k;

    for (k = 0; k < G; k++) {
        const char *key = apr_psprintf(pool, "g%d", k);

        num[k] = qrt_vgroups_group(runs, key, strlen(key));
        ck_assert_uint_gt(num[k], 0);
    }
    for (i = 0; i < N;) {
        int same = rnd(2) == 0;
        apr_uint32_t k0 = (apr_uint32_t)rnd(G);

        n = (apr_size_t)rnd(301);
        if (i + n > N) {
            n = N - i;
        }
        for (k = 0; k < (int)n; k++) {
            apr_uint32_t kk = same ? k0 : (apr_uint32_t)rnd(G);
            const char *key = apr_psprintf(pool, "g%u", kk);

            who[i + k] = (apr_int64_t)((apr_uint64_t)rnd(3000) * APR_UINT64_C(0x9E3779B97F4A7C15));
            click[i + k] = rnd(4) == 0 ? (unsigned char)(1 + rnd(3)) : 0;
            grp[i + k] = num[kk];
            ck_assert_int_eq(qrt_vgroups_add(one, key, strlen(key), click[i + k], who[i + k]), 0);
        }
        ck_assert_int_eq(qrt_vgroups_add_run(runs, same ? num[k0] : 0, same ? NULL : grp + i,
                                             who + i, click + i, n), 0);
        i += n;
    }
    ta = qrt_vgroups_text(one, &la);
    tb = qrt_vgroups_text(runs, &lb);
    ck_assert_ptr_nonnull(ta);
    ck_assert_ptr_nonnull(tb);
    /* (the groups were made in another order: compared as sets of lines) */
    ck_assert_uint_eq(la, lb);
    for (k = 0; k < G; k++) {
        const char *line = strstr(ta, apr_psprintf(pool, "%d:g%d ", k < 10 ? 2 : 3, k));
        const char *end;

        ck_assert_ptr_nonnull(line);
        end = strchr(line, '\n');
        ck_assert_ptr_nonnull(strstr(tb, apr_pstrndup(pool, line, (apr_size_t)(end - line + 1))));
    }
    free(ta);
    free(tb);
    qrt_vgroups_free(one);
    qrt_vgroups_free(runs);

    b = qrt_vgroups_make(10);
    k = (int)qrt_vgroups_group(b, "x", 1);
    ck_assert_int_eq(qrt_vgroups_add_run(b, (apr_uint32_t)k, NULL, who, click, 8), 0);
    ck_assert_int_eq(qrt_vgroups_add_run(b, (apr_uint32_t)k, NULL, who + 8, click + 8, 3), -1);
    grp[0] = (apr_uint32_t)k;
    grp[1] = 7;
    ck_assert_int_eq(qrt_vgroups_add_run(b, 0, grp, who + 8, click + 8, 2), -1);
    ck_assert_int_eq(qrt_vgroups_add_run(b, (apr_uint32_t)k, NULL, who + 8, click + 8, 2), 0);
    ta = qrt_vgroups_text(b, &la);
    n = (apr_size_t)(click[0] != 0) + (click[1] != 0);
    for (i = 2; i < 10; i++) {
        n += click[i] != 0;
    }
    tb = apr_psprintf(pool, "1:x %d %d ", (int)(10 - n), (int)n);
    ck_assert_int_eq(strncmp(ta, tb, strlen(tb)), 0);
    free(ta);
    qrt_vgroups_free(b);
}
END_TEST

/* Groups of 1 to 40 visits (a group's visitors span chunks of 4, 8, 16 ...; those of up
 * to 16 are compared, larger ones go through a table), added interleaved, visitor 0 and
 * repeats among them: each group's count exact. */
START_TEST(small_groups_across_chunks)
{
    qrt_vgroups_t *g = qrt_vgroups_make(1 << 20);
    apr_array_header_t *out = apr_array_make(pool, 64, sizeof(qrt_vgroup_t));
    apr_size_t len;
    char *text;
    int m, i;

    for (i = 0; i < 40; i++) {
        for (m = 1; m <= 40; m++) {
            if (i < m) {
                const char *key = apr_psprintf(pool, "%d", m);
                apr_int64_t who = (apr_int64_t)((apr_uint64_t)(i % (m / 2 + 1))
                                                * APR_UINT64_C(0x9E3779B97F4A7C15));

                ck_assert_int_eq(qrt_vgroups_add(g, key, strlen(key), i % 3 == 0, who), 0);
            }
        }
    }
    text = qrt_vgroups_text(g, &len);
    ck_assert_ptr_nonnull(text);
    ck_assert_int_eq(qrt_vgroups_parse(pool, text, len, out), APR_SUCCESS);
    ck_assert_int_eq(out->nelts, 40);
    for (i = 0; i < out->nelts; i++) {
        qrt_vgroup_t *x = &APR_ARRAY_IDX(out, i, qrt_vgroup_t);

        m = atoi(x->key);
        ck_assert_int_eq(x->scans + x->clicks, m);
        ck_assert_int_eq(x->clicks, (m + 2) / 3);
        ck_assert_int_eq(x->uniques, m < m / 2 + 1 ? m : m / 2 + 1);
    }
    free(text);
    qrt_vgroups_free(g);
}
END_TEST

START_TEST(visitor_ids_and_damaged_text)
{
    apr_array_header_t *out = apr_array_make(pool, 4, sizeof(qrt_vgroup_t));
    static const char *const bad[] = { "1:a 1 2\n", "2:a 1 2 3\n", "x:a 1 2 3\n",
                                       "1:a 1 2 3", "1:a 1 -2 3\n", "9:a 1 2 3\n",
                                       "1:a1 2 3\n" };
    apr_int64_t id = 0;
    int i;

    ck_assert_int_eq(qrt_vgroups_visitor_id("ffffffffffffffff", 16, &id), 0);
    ck_assert(id == -1);
    ck_assert_int_eq(qrt_vgroups_visitor_id("00000000000000a1", 16, &id), 0);
    ck_assert(id == 0xa1);
    ck_assert_int_eq(qrt_vgroups_visitor_id("00000000000000A1", 16, &id), -1);
    ck_assert_int_eq(qrt_vgroups_visitor_id("a1", 2, &id), -1);
    ck_assert_int_eq(qrt_vgroups_parse(pool, "", 0, out), APR_SUCCESS);
    ck_assert_int_eq(out->nelts, 0);
    ck_assert_int_eq(qrt_vgroups_parse(pool, "0: 1 2 3\n3:x y 0 0 1\n", 21, out), APR_SUCCESS);
    ck_assert_int_eq(out->nelts, 2);
    ck_assert_str_eq(APR_ARRAY_IDX(out, 1, qrt_vgroup_t).key, "x y");
    for (i = 0; i < (int)(sizeof(bad) / sizeof(*bad)); i++) {
        ck_assert_int_eq(qrt_vgroups_parse(pool, bad[i], strlen(bad[i]), out), APR_EINVAL);
    }
}
END_TEST

/* One count of nv visits over ng groups, visitors drawn from a pool of nv / 3 scaled by
 * salt, checked against the visits: 0 when every figure is right. Counts follow one
 * another on the arrays the last count kept (larger than needed, holding its visitors). */
static int count_checked(apr_pool_t *p, apr_size_t nv, int ng, apr_uint64_t salt,
                         apr_uint64_t *state)
{
    apr_uint64_t **ids = calloc((apr_size_t)ng, sizeof(*ids));
    apr_size_t *n = calloc((apr_size_t)ng, sizeof(*n)), i, len;
    qrt_vgroups_t *g = qrt_vgroups_make(nv + 1);
    apr_array_header_t *out = apr_array_make(p, 8, sizeof(qrt_vgroup_t));
    char *text;
    int k, bad = 0;

    for (k = 0; k < ng; k++) {
        ids[k] = malloc(nv * sizeof(**ids));
    }
    for (i = 0; i < nv; i++) {
        char key[16];
        apr_uint64_t who;

        *state = *state * APR_UINT64_C(6364136223846793005) + APR_UINT64_C(1442695040888963407);
        k = (int)((*state >> 33) % (apr_uint64_t)ng);
        who = ((*state >> 13) % (nv / 3 + 1)) * salt;
        ids[k][n[k]++] = who;
        apr_snprintf(key, sizeof(key), "g%d", k);
        bad |= qrt_vgroups_add(g, key, strlen(key), 0, (apr_int64_t)who) != 0;
    }
    text = qrt_vgroups_text(g, &len);
    bad |= !text || qrt_vgroups_parse(p, text, len, out) != APR_SUCCESS;
    for (k = 0; !bad && k < out->nelts; k++) {
        qrt_vgroup_t *x = &APR_ARRAY_IDX(out, k, qrt_vgroup_t);
        int j = atoi(x->key + 1);

        bad |= x->scans != (apr_int64_t)n[j] || x->uniques != distinct(ids[j], n[j]);
    }
    for (k = 0; k < ng; k++) {
        free(ids[k]);
    }
    free(ids);
    free(n);
    free(text);
    qrt_vgroups_free(g);
    return bad;
}

static int turn_bad[2];

static void *APR_THREAD_FUNC counts_in_turn(apr_thread_t *th, void *arg)
{
    int me = (int)(apr_uintptr_t)arg;
    apr_uint64_t state = (apr_uint64_t)me + 1;
    apr_pool_t *p;
    int r, bad = 0;

    (void)th;
    apr_pool_create(&p, NULL);
    for (r = 0; r < 6; r++) {
        bad |= count_checked(p, r % 2 ? 3000 : 120000, r % 3 ? 5 : 1, 2 * state + 1, &state);
        apr_pool_clear(p);
    }
    apr_pool_destroy(p);
    turn_bad[me] = bad;
    return NULL;
}

/* The arrays a count keeps for the next (qrt_vgroups.c's spares): a large count, then
 * smaller ones on its larger arrays still holding its visitors, then two threads counting
 * at once (one of them without the spares), each figure exact. */
START_TEST(counts_again_on_kept_arrays)
{
    apr_uint64_t state = 7;
    apr_thread_t *th[2];
    apr_status_t rv;
    int k;

    ck_assert_int_eq(count_checked(pool, 400000, 3, 0x9E3779B97F4A7C15, &state), 0);
    ck_assert_int_eq(count_checked(pool, 5000, 40, 3, &state), 0);
    ck_assert_int_eq(count_checked(pool, 100000, 1, 5, &state), 0);
    ck_assert_int_eq(count_checked(pool, 20, 2, 11, &state), 0);
    for (k = 0; k < 2; k++) {
        turn_bad[k] = -1;
        ck_assert_int_eq(apr_thread_create(&th[k], NULL, counts_in_turn,
                                           (void *)(apr_uintptr_t)k, pool), APR_SUCCESS);
    }
    for (k = 0; k < 2; k++) {
        apr_thread_join(&rv, th[k]);
        ck_assert_int_eq(turn_bad[k], 0);
    }
    ck_assert_int_eq(count_checked(pool, 50000, 7, 13, &state), 0);
}
END_TEST

/* The spares are freed once unused for the idle time given, not before; counts go on
 * exact after (on arrays of their own, then kept again). */
START_TEST(spares_released_once_idle)
{
    apr_uint64_t state = 17;
    apr_size_t held;

    ck_assert_int_eq(count_checked(pool, 400000, 3, 0x9E3779B97F4A7C15, &state), 0);
    held = qrt_vgroups_spares_held();
    /* (the slab of 400,000 visitors and the parts they were spread over) */
    ck_assert_uint_ge(held, (apr_size_t)400000 * 8);
    qrt_vgroups_spares_release(apr_time_from_sec(3600));
    ck_assert_uint_eq(qrt_vgroups_spares_held(), held);
    qrt_vgroups_spares_release(0);
    ck_assert_uint_eq(qrt_vgroups_spares_held(), 0);
    ck_assert_int_eq(count_checked(pool, 100000, 5, 3, &state), 0);
    ck_assert_uint_gt(qrt_vgroups_spares_held(), 0);
    ck_assert_int_eq(count_checked(pool, 20000, 40, 5, &state), 0);
}
END_TEST

/* The groups of one set of visits counted whole, or in shares of their visitors (2, 8 and
 * 64 of them) whose groups are summed: the same visits, clicks and distinct visitors in
 * every group. The visits go in as runs of one group, runs of many, single visits and
 * visits of sets (a tag report's), a visitor 0 among them; a share counts only its own
 * visits against the bound. split_adds sends each run to g[0] or g[1] (num[h][i]: count
 * h's number of group "k<i>", set[h] its sets); share_adds all of them to one count. */
static void split_adds(qrt_vgroups_t **g, apr_uint64_t seed0, apr_uint32_t (*set)[3],
                       apr_uint32_t (*num)[13])
{
    apr_uint64_t st = seed0;
    apr_int64_t vis[64];
    unsigned char clk[64];
    apr_uint32_t grp[64];
    int i, j;

    for (i = 0; i < 3000; i++) {
        int n = 1 + (int)(i % 50), h = (int)((st >> 33) % 2);

        for (j = 0; j < n; j++) {
            st = st * APR_UINT64_C(6364136223846793005) + APR_UINT64_C(1442695040888963407);
            vis[j] = (st >> 20) % 97 == 0 ? 0 : (apr_int64_t)((st >> 24) % 20000) * 0x9E3779B9;
            clk[j] = (unsigned char)((st >> 40) % 5 == 0);
            grp[j] = num[h][1 + (st >> 45) % 12];
        }
        switch (i % 4) {
        case 0:
            ck_assert_int_eq(qrt_vgroups_add_run(g[h], grp[0], NULL, vis, clk, (apr_size_t)n),
                             0);
            break;
        case 1:
            ck_assert_int_eq(qrt_vgroups_add_run(g[h], 0, grp, vis, clk, (apr_size_t)n), 0);
            break;
        case 2:
            ck_assert_int_eq(qrt_vgroups_add_run(g[h], set[h][i % 3], NULL, vis, clk,
                                                 (apr_size_t)n), 0);
            break;
        default:
            for (j = 0; j < n; j++) {
                ck_assert_int_eq(qrt_vgroups_add_to(g[h], grp[j], clk[j], vis[j]), 0);
            }
            break;
        }
    }
}

static void share_adds(qrt_vgroups_t *g, apr_uint64_t seed0, const apr_uint32_t *set)
{
    qrt_vgroups_t *two[2] = { g, g };
    apr_uint32_t sets[2][3], num[2][13];
    int h, i;

    /* (both halves the one count, its groups "k<i>" numbered i) */
    for (h = 0; h < 2; h++) {
        memcpy(sets[h], set, sizeof(sets[h]));
        for (i = 0; i < 13; i++) {
            num[h][i] = (apr_uint32_t)i;
        }
    }
    split_adds(two, seed0, sets, num);
}

static qrt_vgroups_t *share_groups(apr_size_t max, apr_uint32_t *set)
{
    qrt_vgroups_t *g = qrt_vgroups_make(max);
    apr_uint32_t k, m[3][3] = { { 1, 2, 0 }, { 3, 4, 5 }, { 12, 0, 0 } };
    int nm[3] = { 2, 3, 1 };

    ck_assert_ptr_nonnull(g);
    for (k = 1; k <= 12; k++) {
        char key[8];

        apr_snprintf(key, sizeof(key), "k%u", k);
        ck_assert_uint_eq(qrt_vgroups_group(g, key, strlen(key)), k);
    }
    for (k = 0; k < 3; k++) {
        set[k] = qrt_vgroups_set(g, m[k], (apr_size_t)nm[k]);
        ck_assert_uint_gt(set[k], 12);
    }
    return g;
}

/* g's groups read back into out; g freed. */
static void share_read(qrt_vgroups_t *g, apr_array_header_t *out)
{
    apr_size_t len;
    char *text = qrt_vgroups_text(g, &len);

    ck_assert_ptr_nonnull(text);
    ck_assert_int_eq(qrt_vgroups_parse(pool, text, len, out), APR_SUCCESS);
    free(text);
    qrt_vgroups_free(g);
}

/* The groups "k1" .. "k12" of out added to sum. */
static void share_sum(const apr_array_header_t *out, apr_int64_t (*sum)[3])
{
    int i;

    for (i = 0; i < out->nelts; i++) {
        const qrt_vgroup_t *x = &APR_ARRAY_IDX(out, i, qrt_vgroup_t);
        int j = atoi(x->key + 1) - 1;

        ck_assert(j >= 0 && j < 12);
        sum[j][0] += x->scans;
        sum[j][1] += x->clicks;
        sum[j][2] += x->uniques;
    }
}

/* The groups of share_adds counted whole, into whole: their visits. */
static apr_size_t share_whole(apr_array_header_t *whole)
{
    apr_uint32_t set[3];
    qrt_vgroups_t *g = share_groups(1 << 20, set);
    apr_size_t total = 0;
    int i;

    share_adds(g, 11, set);
    share_read(g, whole);
    for (i = 0; i < whole->nelts; i++) {
        total += (apr_size_t)(APR_ARRAY_IDX(whole, i, qrt_vgroup_t).scans
                              + APR_ARRAY_IDX(whole, i, qrt_vgroup_t).clicks);
    }
    return total;
}

/* sum (of n shares) is whole. */
static void share_check(const apr_array_header_t *whole, apr_int64_t (*sum)[3], apr_uint32_t n)
{
    int i;

    for (i = 0; i < whole->nelts; i++) {
        const qrt_vgroup_t *x = &APR_ARRAY_IDX(whole, i, qrt_vgroup_t);
        int j = atoi(x->key + 1) - 1;

        ck_assert_msg(sum[j][0] == x->scans && sum[j][1] == x->clicks
                      && sum[j][2] == x->uniques,
                      "%u shares, group %s: %lld/%lld/%lld, whole %lld/%lld/%lld", n,
                      x->key, (long long)sum[j][0], (long long)sum[j][1],
                      (long long)sum[j][2], (long long)x->scans, (long long)x->clicks,
                      (long long)x->uniques);
    }
}

START_TEST(shares_add_up_to_the_whole)
{
    static const apr_uint32_t ns[] = { 2, 8, 64 };
    apr_array_header_t *whole = apr_array_make(pool, 16, sizeof(qrt_vgroup_t));
    apr_uint32_t set[3];
    qrt_vgroups_t *g;
    apr_size_t total = share_whole(whole);
    int k, q;

    ck_assert_int_eq(whole->nelts, 12);
    for (q = 0; q < 3; q++) {
        apr_int64_t sum[12][3];

        memset(sum, 0, sizeof(sum));
        for (k = 0; k < (int)ns[q]; k++) {
            apr_array_header_t *out = apr_array_make(pool, 16, sizeof(qrt_vgroup_t));

            /* bounded at half the visits: a share counts its own alone */
            g = share_groups(total / 2, set);
            ck_assert_int_eq(qrt_vgroups_share(g, (apr_uint32_t)k, ns[q]), 0);
            share_adds(g, 11, set);
            share_read(g, out);
            share_sum(out, sum);
        }
        share_check(whole, sum, ns[q]);
    }
    /* shares refused: not a power of two, k past n, too many, after a visit */
    g = qrt_vgroups_make(100);
    ck_assert_int_eq(qrt_vgroups_share(g, 0, 3), -1);
    ck_assert_int_eq(qrt_vgroups_share(g, 4, 4), -1);
    ck_assert_int_eq(qrt_vgroups_share(g, 0, 0), -1);
    ck_assert_int_eq(qrt_vgroups_share(g, 0, QRT_VGROUPS_SHARES * 2), -1);
    ck_assert_int_eq(qrt_vgroups_add(g, "a", 1, 0, 5), 0);
    ck_assert_int_eq(qrt_vgroups_share(g, 0, 2), -1);
    qrt_vgroups_free(g);
}
END_TEST

/* Visits picked for a count (qrt_vgroups_pick) and added as picked count as the same
 * visits added whole (qrt_vgroups_add_run), in every share of 1, 2 and 8 and without
 * one; the positions are those of the share's visitors, in order; past the bound
 * refused. */
START_TEST(picked_visits_count_as_the_run)
{
    enum { N = 5000, G = 30 };
    static apr_int64_t who[N];
    static unsigned char click[N];
    static apr_uint32_t grp[N];
    static const apr_uint32_t ns[] = { 1, 2, 8 };
    apr_uint32_t at[256], pg[256], num[2][G + 1];
    apr_int64_t pw[256];
    unsigned char pc[256];
    apr_size_t i, r, la, lb;
    int q, k, h;

    for (i = 0; i < N; i++) {
        who[i] = i % 501 == 9 ? 0 : (apr_int64_t)((1 + (apr_uint64_t)rnd(1500))
                                                    * APR_UINT64_C(0x9E3779B97F4A7C15));
        click[i] = rnd(3) == 0;
        grp[i] = 1 + (apr_uint32_t)rnd(G);
    }
    for (q = 0; q < 3; q++) {
        for (k = 0; k < (int)ns[q]; k++) {
            qrt_vgroups_t *g[2];
            char *ta, *tb;

            for (h = 0; h < 2; h++) {
                ck_assert_ptr_nonnull(g[h] = qrt_vgroups_make(N));
                if (ns[q] > 1) {
                    ck_assert_int_eq(qrt_vgroups_share(g[h], (apr_uint32_t)k, ns[q]), 0);
                }
                for (i = 1; i <= G; i++) {
                    char key[8];

                    apr_snprintf(key, sizeof(key), "g%u", (unsigned)i);
                    num[h][i] = qrt_vgroups_group(g[h], key, strlen(key));
                    ck_assert_uint_eq(num[h][i], i);
                }
            }
            ck_assert_int_eq(qrt_vgroups_add_run(g[0], 0, grp, who, click, N), 0);
            for (i = 0; i < N; i += 256) {
                apr_size_t m = N - i < 256 ? N - i : 256, picked, want = 0;

                picked = qrt_vgroups_pick(g[1], who + i, m, at);
                for (r = 0; r < m; r++) {
                    /* (of the share: a count of that share alone takes the visit) */
                    apr_array_header_t *out = apr_array_make(pool, 2, sizeof(qrt_vgroup_t));
                    qrt_vgroups_t *one = qrt_vgroups_make(10);
                    char *t;
                    int in;

                    if (ns[q] > 1) {
                        ck_assert_int_eq(qrt_vgroups_share(one, (apr_uint32_t)k, ns[q]), 0);
                    }
                    ck_assert_uint_eq(qrt_vgroups_group(one, "x", 1), 1);
                    ck_assert_int_eq(qrt_vgroups_add_to(one, 1, 0, who[i + r]), 0);
                    ck_assert_ptr_nonnull(t = qrt_vgroups_text(one, &la));
                    ck_assert_int_eq(qrt_vgroups_parse(pool, t, la, out), APR_SUCCESS);
                    in = out->nelts == 1 && APR_ARRAY_IDX(out, 0, qrt_vgroup_t).scans == 1;
                    free(t);
                    qrt_vgroups_free(one);
                    ck_assert_int_eq(in, want < picked && at[want] == r);
                    want += (apr_size_t)in;
                }
                ck_assert_uint_eq(want, picked);
                ck_assert(ns[q] > 1 || picked == m);
                for (r = 0; r < picked; r++) {
                    ck_assert_uint_lt(at[r], m);
                    ck_assert(!r || at[r] > at[r - 1]);
                    pg[r] = grp[i + at[r]];
                    pw[r] = who[i + at[r]];
                    pc[r] = click[i + at[r]];
                }
                ck_assert_int_eq(qrt_vgroups_add_picked(g[1], pg, pw, pc, picked), 0);
            }
            ta = qrt_vgroups_text(g[0], &la);
            tb = qrt_vgroups_text(g[1], &lb);
            ck_assert_ptr_nonnull(ta);
            ck_assert_ptr_nonnull(tb);
            ck_assert_str_eq(ta, tb);
            free(ta);
            free(tb);
            qrt_vgroups_free(g[0]);
            qrt_vgroups_free(g[1]);
        }
    }
    /* past the bound: none of them counted */
    {
        qrt_vgroups_t *g = qrt_vgroups_make(100);

        ck_assert_uint_eq(qrt_vgroups_group(g, "a", 1), 1);
        for (r = 0; r < 101; r++) {
            pg[r] = 1;
        }
        ck_assert_int_eq(qrt_vgroups_add_picked(g, pg, who, click, 101), -1);
        ck_assert_int_eq(qrt_vgroups_add_picked(g, pg, who, click, 100), 0);
        qrt_vgroups_free(g);
    }
}
END_TEST

/* Two counts bounded at max (in share k of n when n > 1), the second's groups made in
 * the reverse order: num[h][i] is count h's number of group "k<i>". */
static void split_groups(qrt_vgroups_t **g, apr_size_t max, apr_uint32_t k, apr_uint32_t n,
                         apr_uint32_t (*set)[3], apr_uint32_t (*num)[13])
{
    static const apr_uint32_t m[3][3] = { { 1, 2, 0 }, { 3, 4, 5 }, { 12, 0, 0 } };
    static const int nm[3] = { 2, 3, 1 };
    int h, i, q;

    for (h = 0; h < 2; h++) {
        ck_assert_ptr_nonnull(g[h] = qrt_vgroups_make(max));
        if (n > 1) {
            ck_assert_int_eq(qrt_vgroups_share(g[h], k, n), 0);
        }
        for (i = 1; i <= 12; i++) {
            char key[8];
            int at = h ? 13 - i : i;

            apr_snprintf(key, sizeof(key), "k%d", at);
            num[h][at] = qrt_vgroups_group(g[h], key, strlen(key));
            ck_assert_uint_gt(num[h][at], 0);
        }
        for (i = 0; i < 3; i++) {
            apr_uint32_t mem[3];
            int at = h ? 2 - i : i;

            for (q = 0; q < nm[at]; q++) {
                mem[q] = num[h][m[at][q]];
            }
            set[h][at] = qrt_vgroups_set(g[h], mem, (apr_size_t)nm[at]);
            ck_assert_uint_gt(set[h][at], 12);
        }
    }
}

/* The visits of share_adds added to two counts, each run to one or the other (the
 * second's groups and sets made in another order, so numbered otherwise), the second then
 * absorbed into the first: the same groups as the whole counted at once, also in shares;
 * past the bound refused. */
START_TEST(two_counts_absorbed_are_the_whole)
{
    static const apr_uint32_t ns[] = { 1, 2, 8 };
    apr_array_header_t *whole = apr_array_make(pool, 16, sizeof(qrt_vgroup_t));
    apr_uint32_t set[2][3], num[2][13];
    qrt_vgroups_t *g[2];
    apr_size_t total = share_whole(whole), len;
    char *text;
    int q;
    apr_uint32_t k;

    for (q = 0; q < 3; q++) {
        apr_int64_t sum[12][3];

        memset(sum, 0, sizeof(sum));
        for (k = 0; k < ns[q]; k++) {
            apr_array_header_t *out = apr_array_make(pool, 16, sizeof(qrt_vgroup_t));

            split_groups(g, 1 << 20, k, ns[q], set, num);
            split_adds(g, 11, set, num);
            ck_assert_int_eq(qrt_vgroups_absorb(g[0], g[1]), 0);
            qrt_vgroups_free(g[1]);
            share_read(g[0], out);
            share_sum(out, sum);
        }
        share_check(whole, sum, ns[q]);
    }
    /* past the first's bound: refused, and the first is then no count to trust, but the
     * second is as it was */
    split_groups(g, total * 3 / 4, 0, 1, set, num);
    split_adds(g, 11, set, num);
    ck_assert_int_eq(qrt_vgroups_absorb(g[0], g[1]), -1);
    ck_assert_int_eq(qrt_vgroups_add_to(g[1], num[1][3], 0, 42), 0);
    qrt_vgroups_free(g[0]);
    /* nor after a count */
    g[0] = qrt_vgroups_make(100);
    text = qrt_vgroups_text(g[0], &len);
    free(text);
    ck_assert_int_eq(qrt_vgroups_absorb(g[0], g[1]), -1);
    ck_assert_int_eq(qrt_vgroups_absorb(g[1], g[0]), -1);
    qrt_vgroups_free(g[0]);
    qrt_vgroups_free(g[1]);
}
END_TEST

/* A count in two threads (the groups shared out between them) gives the count in one,
 * sets and their members among the groups, and groups of every size. */
START_TEST(two_threads_count_as_one)
{
    apr_uint32_t set[3];
    apr_array_header_t *one = apr_array_make(pool, 16, sizeof(qrt_vgroup_t));
    apr_array_header_t *two = apr_array_make(pool, 16, sizeof(qrt_vgroup_t));
    qrt_vgroups_t *a = share_groups(1 << 20, set), *b = share_groups(1 << 20, set);
    apr_size_t la, lb;
    char *ta, *tb;
    int i, k;

    share_adds(a, 5, set);
    share_adds(b, 5, set);
    /* and groups of no set: a large one, many small ones */
    for (k = 0; k < 200; k++) {
        char key[16];
        apr_uint32_t ga, gb;

        apr_snprintf(key, sizeof(key), "p%d", k);
        ga = qrt_vgroups_group(a, key, strlen(key));
        gb = qrt_vgroups_group(b, key, strlen(key));
        for (i = 0; i < (k ? 1 + k * 7 % 300 : 50000); i++) {
            apr_int64_t who = (apr_int64_t)((i * 2654435761u + (unsigned)k) % 40000);

            ck_assert_int_eq(qrt_vgroups_add_to(a, ga, i % 3 == 0, who), 0);
            ck_assert_int_eq(qrt_vgroups_add_to(b, gb, i % 3 == 0, who), 0);
        }
    }
    qrt_vgroups_threads(b, 2, 1);
    ta = qrt_vgroups_text(a, &la);
    tb = qrt_vgroups_text(b, &lb);
    ck_assert_ptr_nonnull(ta);
    ck_assert_ptr_nonnull(tb);
    ck_assert_str_eq(ta, tb);
    ck_assert_int_eq(qrt_vgroups_parse(pool, ta, la, one), APR_SUCCESS);
    ck_assert_int_eq(qrt_vgroups_parse(pool, tb, lb, two), APR_SUCCESS);
    ck_assert_int_eq(one->nelts, 212);
    free(ta);
    free(tb);
    qrt_vgroups_free(a);
    qrt_vgroups_free(b);
}
END_TEST

/* A count in radix mode (qrt_vgroups_radix) gives the text of a count without it: the
 * same calls (visits one at a time, runs of one group and of many, picked, by
 * reference) into two counts each, half of them into a second count absorbed before the
 * count, by one thread and by two; few groups and many, visitors 0, repeating, and
 * sharing their low or high bits. */
static void radix_adds(qrt_vgroups_t *g[2], int ngroups, apr_uint64_t s0)
{
    static apr_int64_t who[600];
    static unsigned char clk[600];
    static apr_uint32_t grp[600];
    apr_uint32_t num[2][400];
    int i, j, h, k;

    seed = s0;
    /* the second count's groups made in another order */
    for (h = 0; h < 2; h++) {
        for (k = 0; k < ngroups; k++) {
            char key[16];
            int kk = h ? ngroups - 1 - k : k;

            apr_snprintf(key, sizeof(key), "g%d", kk);
            ck_assert_uint_ne(num[h][kk] = qrt_vgroups_group(g[h], key, strlen(key)), 0);
        }
    }
    for (i = 0; i < 3000; i++) {
        int n = (int)rnd(600) + 1, kind = (int)rnd(5);

        h = (int)rnd(2);
        for (j = 0; j < n; j++) {
            apr_uint64_t w = (apr_uint64_t)rnd(kind == 0 ? 3 : 30000);

            who[j] = (apr_int64_t)(kind == 1 ? w << 44 : kind == 2 ? w | (APR_UINT64_C(7) << 60)
                                   : w * APR_UINT64_C(0x9E3779B97F4A7C15));
            clk[j] = rnd(5) == 0;
            grp[j] = num[h][rnd(ngroups)];
        }
        switch (kind) {
        case 0:
            ck_assert_int_eq(qrt_vgroups_add_to(g[h], grp[0], clk[0], who[0]), 0);
            break;
        case 1:
            ck_assert_int_eq(qrt_vgroups_add_run(g[h], grp[0], NULL, who, clk, (apr_size_t)n), 0);
            break;
        case 2:
            ck_assert_int_eq(qrt_vgroups_add_run(g[h], 0, grp, who, clk, (apr_size_t)n), 0);
            break;
        case 3:
            ck_assert_int_eq(qrt_vgroups_add_picked(g[h], grp, who, clk, (apr_size_t)n), 0);
            break;
        default: {
            /* (held by reference: kept until the count) */
            apr_int64_t *kept = apr_pmemdup(pool, who, (apr_size_t)n * sizeof(*who));
            unsigned char *kc = apr_pmemdup(pool, clk, (apr_size_t)n);

            ck_assert_int_eq(qrt_vgroups_add_ref(g[h], grp[0], kept, kc, (apr_size_t)n), 0);
            break;
        }
        }
    }
}

/* g[1] absorbed by g[0], counted by threads: g[0]'s text (both freed). */
static char *radix_text(qrt_vgroups_t *g[2], int threads, apr_size_t *len)
{
    char *text;

    ck_assert_int_eq(qrt_vgroups_absorb(g[0], g[1]), 0);
    qrt_vgroups_free(g[1]);
    qrt_vgroups_threads(g[0], threads, 1);
    text = qrt_vgroups_text(g[0], len);
    ck_assert_ptr_nonnull(text);
    qrt_vgroups_free(g[0]);
    return text;
}

/* The two texts are the same (both freed). */
static void radix_same(char *text[2], const apr_size_t len[2])
{
    ck_assert_uint_eq(len[0], len[1]);
    ck_assert_str_eq(text[0], text[1]);
    free(text[0]);
    free(text[1]);
}

START_TEST(radix_counts_as_the_chunks)
{
    static const int ngroups[] = { 1, 5, 300 };
    int q, threads;

    for (q = 0; q < 3; q++) {
        for (threads = 1; threads <= 2; threads++) {
            char *text[2];
            apr_size_t len[2];
            int radix;

            for (radix = 0; radix < 2; radix++) {
                qrt_vgroups_t *g[2];

                g[0] = qrt_vgroups_make(1 << 22);
                g[1] = qrt_vgroups_make(1 << 22);
                ck_assert_ptr_nonnull(g[0]);
                ck_assert_ptr_nonnull(g[1]);
                if (radix) {
                    ck_assert_int_eq(qrt_vgroups_radix(g[0], 0), 0);
                    ck_assert_int_eq(qrt_vgroups_radix(g[1], 0), 0);
                }
                radix_adds(g, ngroups[q], 77 + (apr_uint64_t)q);
                text[radix] = radix_text(g, threads, &len[radix]);
            }
            radix_same(text, len);
        }
    }
}
END_TEST

/* The same with sets (radix by masks): split_adds' visits of plain groups and of sets
 * whose members are also added to on their own, in two counts numbered otherwise, the
 * second absorbed; by one thread and by two. And a set past 64 bits refused. */
START_TEST(radix_sets_count_as_the_chunks)
{
    apr_uint32_t set[2][3], num[2][13];
    int threads, radix, k;

    for (threads = 1; threads <= 2; threads++) {
        char *text[2];
        apr_size_t len[2];

        for (radix = 0; radix < 2; radix++) {
            qrt_vgroups_t *g[2];

            split_groups(g, 1 << 20, 0, 1, set, num);
            if (radix) {
                ck_assert_int_eq(qrt_vgroups_radix(g[0], 1), 0);
                ck_assert_int_eq(qrt_vgroups_radix(g[1], 1), 0);
            }
            split_adds(g, 23 + (apr_uint64_t)threads, set, num);
            text[radix] = radix_text(g, threads, &len[radix]);
        }
        radix_same(text, len);
    }
    /* 64 groups of one bit each take them all: a 65th is past the bound */
    {
        qrt_vgroups_t *g = qrt_vgroups_make(1000);
        apr_uint32_t a[70], two[2];

        ck_assert_ptr_nonnull(g);
        ck_assert_int_eq(qrt_vgroups_radix(g, 1), 0);
        for (k = 0; k < 70; k++) {
            char key[8];

            apr_snprintf(key, sizeof(key), "b%d", k);
            a[k] = qrt_vgroups_group(g, key, strlen(key));
        }
        for (k = 0; k < 32; k++) {
            two[0] = a[2 * k];
            two[1] = a[2 * k + 1];
            ck_assert_int_eq(qrt_vgroups_add_to(g, qrt_vgroups_set(g, two, 2), 0, k), 0);
        }
        two[0] = a[64];
        two[1] = a[0];
        ck_assert_int_eq(qrt_vgroups_add_to(g, qrt_vgroups_set(g, two, 2), 0, 99), -1);
        ck_assert_int_eq(qrt_vgroups_add_to(g, a[65], 0, 99), -1);
        ck_assert_int_eq(qrt_vgroups_add_to(g, a[1], 1, 5), 0);
        {
            apr_array_header_t *out = apr_array_make(pool, 64, sizeof(qrt_vgroup_t));
            int i;

            share_read(g, out);
            ck_assert_int_eq(out->nelts, 70);
            for (i = 0; i < out->nelts; i++) {
                const qrt_vgroup_t *x = &APR_ARRAY_IDX(out, i, qrt_vgroup_t);
                int b = atoi(x->key + 1);

                ck_assert_int_eq(x->scans, b < 64 ? 1 : 0);
                ck_assert_int_eq(x->clicks, b == 1 ? 1 : 0);
                ck_assert_int_eq(x->uniques, b == 1 ? 2 : b < 64 ? 1 : 0);
            }
        }
    }
}
END_TEST

/* What radix mode refuses: after a visit, with a share, sets; a group past its values'
 * bits; a count absorbed that is not in radix mode, nor into one that is not. */
START_TEST(radix_refusals)
{
    qrt_vgroups_t *g = qrt_vgroups_make(1000), *h = qrt_vgroups_make(1000);
    apr_uint32_t a, b, k, many = 0;
    char key[16];

    ck_assert_ptr_nonnull(g);
    ck_assert_ptr_nonnull(h);
    a = qrt_vgroups_group(g, "a", 1);
    ck_assert_int_eq(qrt_vgroups_add_to(g, a, 0, 1), 0);
    ck_assert_int_eq(qrt_vgroups_radix(g, 0), -1);
    qrt_vgroups_free(g);
    g = qrt_vgroups_make(1000);
    ck_assert_int_eq(qrt_vgroups_share(g, 1, 2), 0);
    ck_assert_int_eq(qrt_vgroups_radix(g, 0), -1);
    qrt_vgroups_free(g);
    g = qrt_vgroups_make(1000);
    a = qrt_vgroups_group(g, "a", 1);
    b = qrt_vgroups_group(g, "b", 1);
    ck_assert_int_eq(qrt_vgroups_radix(g, 0), 0);
    ck_assert_int_eq(qrt_vgroups_radix(g, 0), -1);
    {
        apr_uint32_t both[] = { a, b };

        ck_assert_uint_eq(qrt_vgroups_set(g, both, 2), 0);
    }
    ck_assert_int_eq(qrt_vgroups_share(g, 0, 2), -1);
    for (k = 0; k < QRT_VRADIX_GROUPS + 5; k++) {
        apr_snprintf(key, sizeof(key), "k%u", k);
        many = qrt_vgroups_group(g, key, strlen(key));
    }
    ck_assert_uint_ge(many, QRT_VRADIX_GROUPS);
    ck_assert_int_eq(qrt_vgroups_add_to(g, many, 0, 5), -1);
    ck_assert_int_eq(qrt_vgroups_add_to(g, a, 0, 5), 0);
    /* mixed absorbs refused */
    ck_assert_int_eq(qrt_vgroups_add_to(h, qrt_vgroups_group(h, "a", 1), 0, 6), 0);
    ck_assert_int_eq(qrt_vgroups_absorb(g, h), -1);
    ck_assert_int_eq(qrt_vgroups_absorb(h, g), -1);
    qrt_vgroups_free(g);
    qrt_vgroups_free(h);
}
END_TEST

static Suite *vgroups_suite(void)
{
    Suite *s = suite_create("qrt_vgroups");
    TCase *tc = tcase_create("core");

    /* (as the other suites: several cases fill and count arrays of millions of entries,
     * whose page faults alone took past Check's default 4 s on a machine reclaiming
     * freed pages eagerly) */
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, counts_as_the_visits);
    tcase_add_test(tc, ids_sharing_their_low_bits);
    tcase_add_test(tc, a_large_group);
    tcase_add_test(tc, groups_of_any_size_in_parts);
    tcase_add_test(tc, sets_count_as_their_groups);
    tcase_add_test(tc, sets_of_few_groups_count_as_their_groups);
    tcase_add_test(tc, bounded);
    tcase_add_test(tc, runs_count_as_single_visits);
    tcase_add_test(tc, small_groups_across_chunks);
    tcase_add_test(tc, visitor_ids_and_damaged_text);
    tcase_add_test(tc, counts_again_on_kept_arrays);
    tcase_add_test(tc, spares_released_once_idle);
    tcase_add_test(tc, shares_add_up_to_the_whole);
    tcase_add_test(tc, picked_visits_count_as_the_run);
    tcase_add_test(tc, two_counts_absorbed_are_the_whole);
    tcase_add_test(tc, two_threads_count_as_one);
    tcase_add_test(tc, radix_counts_as_the_chunks);
    tcase_add_test(tc, radix_refusals);
    tcase_add_test(tc, radix_sets_count_as_the_chunks);
    tcase_add_test(tc, refs_count_as_copies);
    tcase_add_test(tc, refs_absorbed_from_other_numbers);
    tcase_add_test(tc, refs_bounded_and_shared);
    tcase_add_test(tc, refs_of_plain_groups_outside_the_bound);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(vgroups_suite());
}
