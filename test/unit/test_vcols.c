/* Unit tests for qrt_vcols: a block read back as built (times, visitors, sources and
 * strings, shared strings stored once), an empty block, damaged blocks refused; and
 * qrt_vgroups' numbered groups counting as qrt_vgroups_add does. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>

#include "qrt_vcols.h"
#include "qrt_vgroups.h"
#include "qrt_check.h"

QRT_CHECK_POOL

/* A visitor id of either sign. */
static apr_int64_t who(apr_size_t i)
{
    /* (in unsigned arithmetic, which wraps: 2 << 62 does not fit a signed 64-bit) */
    return (apr_int64_t)((apr_uint64_t)(i * 2654435761u)
                         - (apr_uint64_t)(i % 3) * (APR_UINT64_C(1) << 62));
}

START_TEST(block_read_back)
{
    static const char *const browsers[] = { "Chrome", "Safari", "", "Firefox" };
    static const char *const cities[] = { "Berlin", "Paris", "Zürich" };
    qrt_vcols_builder_t *b = qrt_vcols_builder_make(pool);
    const char *data;
    apr_size_t len = 0, i;
    qrt_vcols_t v;

    for (i = 0; i < 1000; i++) {
        qrt_vcols_add(b, APR_INT64_C(1767225600) + (apr_int64_t)i * 7, i % 5 == 0,
                      who(i),
                      browsers[i % 4], i % 7 ? "DE" : NULL, cities[i % 3]);
    }
    ck_assert_uint_eq(qrt_vcols_count(b), 1000);
    data = qrt_vcols_block(b, &len);
    ck_assert_uint_eq(len % 8, 0);
    ck_assert_uint_eq((apr_uintptr_t)data % 8, 0);
    ck_assert_int_eq(qrt_vcols_open(&v, data, len), APR_SUCCESS);
    ck_assert_int_eq(qrt_vcols_check(&v), APR_SUCCESS);
    ck_assert_uint_eq(v.n, 1000);
    /* 4 browsers (one of them ""), "DE", 3 cities: "" once */
    ck_assert_uint_eq(v.nstr, 8);
    for (i = 0; i < 1000; i++) {
        ck_assert(v.t[i] == APR_INT64_C(1767225600) + (apr_int64_t)i * 7);
        ck_assert(v.visitor[i] == who(i));
        ck_assert_int_eq(v.click[i], i % 5 == 0);
        ck_assert_str_eq(qrt_vcols_str(&v, v.browser[i]), browsers[i % 4]);
        ck_assert_str_eq(qrt_vcols_str(&v, v.country[i]), i % 7 ? "DE" : "");
        ck_assert_str_eq(qrt_vcols_str(&v, v.city[i]), cities[i % 3]);
    }
}
END_TEST

START_TEST(empty_and_damaged)
{
    qrt_vcols_builder_t *b = qrt_vcols_builder_make(pool);
    const char *data;
    char *copy;
    apr_size_t len = 0, cut;
    qrt_vcols_t v;

    data = qrt_vcols_block(b, &len);
    ck_assert_int_eq(qrt_vcols_open(&v, data, len), APR_SUCCESS);
    ck_assert_uint_eq(v.n, 0);
    ck_assert_int_eq(qrt_vcols_open(&v, NULL, 0), APR_EINVAL);
    ck_assert_int_eq(qrt_vcols_open(&v, data, 8), APR_EINVAL);

    b = qrt_vcols_builder_make(pool);
    qrt_vcols_add(b, 10, 0, 1, "a", "b", "c");
    qrt_vcols_add(b, 20, 1, 2, "a", "b", "d");
    data = qrt_vcols_block(b, &len);
    copy = apr_palloc(pool, len);
    /* cut short, or a byte of the header, an index or a source changed */
    for (cut = 8; cut < len; cut += 8) {
        ck_assert_int_eq(qrt_vcols_open(&v, data, cut), APR_EINVAL);
    }
    memcpy(copy, data, len);
    copy[0] ^= 1;
    ck_assert_int_eq(qrt_vcols_open(&v, copy, len), APR_EINVAL);
    memcpy(copy, data, len);
    copy[16 + 32] = 9;                  /* the first browser index */
    ck_assert_int_eq(qrt_vcols_open(&v, copy, len), APR_SUCCESS);
    ck_assert_int_eq(qrt_vcols_check(&v), APR_EINVAL);
    memcpy(copy, data, len);
    copy[16 + 32 + 24 + 16 + 16] = 2;   /* the first click (after 4 string offsets and
                                         * their 4 numbers) */
    ck_assert_int_eq(qrt_vcols_open(&v, copy, len), APR_SUCCESS);
    ck_assert_int_eq(qrt_vcols_check(&v), APR_EINVAL);
    memcpy(copy, data, len);
    ck_assert_int_eq(qrt_vcols_open(&v, copy, len), APR_SUCCESS);
    ck_assert_int_eq(qrt_vcols_check(&v), APR_SUCCESS);
    ck_assert_uint_eq(v.nstr, 4);
    ck_assert_str_eq(qrt_vcols_str(&v, v.city[1]), "d");
}
END_TEST

START_TEST(numbered_groups)
{
    qrt_vgroups_t *a = qrt_vgroups_make(1000), *b = qrt_vgroups_make(1000);
    apr_uint32_t gx, gy;
    apr_size_t la, lb;
    char *ta, *tb;
    int i;

    gy = qrt_vgroups_group(b, "y", 1);
    gx = qrt_vgroups_group(b, "x", 1);
    ck_assert_uint_gt(gx, 0);
    ck_assert_uint_ne(gx, gy);
    ck_assert_uint_eq(qrt_vgroups_group(b, "x", 1), gx);
    for (i = 0; i < 300; i++) {
        ck_assert_int_eq(qrt_vgroups_add(a, i % 3 ? "x" : "y", 1, i % 4 == 0, i % 37), 0);
        ck_assert_int_eq(qrt_vgroups_add_to(b, i % 3 ? gx : gy, i % 4 == 0, i % 37), 0);
    }
    /* no such group */
    ck_assert_int_eq(qrt_vgroups_add_to(b, 0, 0, 1), -1);
    ck_assert_int_eq(qrt_vgroups_add_to(b, 3, 0, 1), -1);
    ta = qrt_vgroups_text(a, &la);
    tb = qrt_vgroups_text(b, &lb);
    /* (the groups in the order they were made: y first in both) */
    ck_assert_str_eq(ta, tb);
    ck_assert_uint_eq(qrt_vgroups_group(b, "z", 1), 0);
    ck_assert_int_eq(qrt_vgroups_add_to(b, gx, 0, 1), -1);
    free(ta);
    free(tb);
    qrt_vgroups_free(a);
    qrt_vgroups_free(b);
}
END_TEST

/* Blocks made with a table of string numbers: a string has one number in every block,
 * another string another; a block made without one, or past the table's bound, has 0. */
START_TEST(strings_numbered_across_blocks)
{
    qrt_strid_t *ids = qrt_strid_make(pool, 3, 1 << 20);
    qrt_vcols_builder_t *a = qrt_vcols_builder_make(pool), *b = qrt_vcols_builder_make(pool);
    qrt_vcols_builder_t *none = qrt_vcols_builder_make(pool);
    qrt_vcols_t va, vb, vn;
    const char *da, *db, *dn;
    apr_size_t la, lb, ln;

    ck_assert_ptr_nonnull(ids);
    qrt_vcols_builder_ids(a, ids);
    qrt_vcols_builder_ids(b, ids);
    qrt_vcols_add(a, 1, 0, 7, "Firefox", "DE", "Berlin");
    qrt_vcols_add(b, 2, 0, 8, "Chrome", "DE", "Berlin");
    qrt_vcols_add(b, 3, 1, 9, "Firefox", "FR", "Paris");
    qrt_vcols_add(none, 4, 0, 9, "Firefox", "DE", "Berlin");
    da = qrt_vcols_block(a, &la);
    db = qrt_vcols_block(b, &lb);
    dn = qrt_vcols_block(none, &ln);
    ck_assert_int_eq(qrt_vcols_open(&va, da, la), APR_SUCCESS);
    ck_assert_int_eq(qrt_vcols_open(&vb, db, lb), APR_SUCCESS);
    ck_assert_int_eq(qrt_vcols_open(&vn, dn, ln), APR_SUCCESS);
    /* Firefox, DE, Berlin: 1, 2, 3 */
    ck_assert_uint_eq(va.strid[va.browser[0]], 1);
    ck_assert_uint_eq(va.strid[va.country[0]], 2);
    ck_assert_uint_eq(va.strid[va.city[0]], 3);
    ck_assert_uint_eq(vb.strid[vb.country[0]], 2);
    ck_assert_uint_eq(vb.strid[vb.city[0]], 3);
    ck_assert_uint_eq(vb.strid[vb.browser[1]], 1);
    /* the table holds 3: Chrome, FR and Paris have none */
    ck_assert_uint_eq(vb.strid[vb.browser[0]], 0);
    ck_assert_uint_eq(vb.strid[vb.country[1]], 0);
    ck_assert_uint_eq(vb.strid[vb.city[1]], 0);
    ck_assert_str_eq(qrt_vcols_str(&vb, vb.city[1]), "Paris");
    ck_assert_uint_eq(qrt_strid_count(ids), 3);
    ck_assert_uint_eq(vn.strid[vn.city[0]], 0);
    ck_assert_int_eq(qrt_vcols_check(&vb), APR_SUCCESS);
}
END_TEST

/* A block of no strings: times, visitors and sources only, in fewer bytes than the same
 * visits with their strings; its string columns NULL; a damaged source still refused. */
START_TEST(a_block_of_no_strings)
{
    qrt_vcols_builder_t *bare = qrt_vcols_builder_make(pool), *full = qrt_vcols_builder_make(pool);
    const char *db;
    char *copy;
    apr_size_t lb, lf;
    qrt_vcols_t v;
    int i;

    qrt_vcols_builder_bare(bare);
    for (i = 0; i < 10; i++) {
        qrt_vcols_add(bare, 100 + i, i % 3 == 0, 1000 + i, "Firefox", "DE", "Berlin");
        qrt_vcols_add(full, 100 + i, i % 3 == 0, 1000 + i, "Firefox", "DE", "Berlin");
    }
    db = qrt_vcols_block(bare, &lb);
    ck_assert_ptr_nonnull(qrt_vcols_block(full, &lf));
    ck_assert_uint_lt(lb + 10 * 12, lf + 1);
    ck_assert_int_eq(qrt_vcols_open(&v, db, lb), APR_SUCCESS);
    ck_assert_int_eq(qrt_vcols_check(&v), APR_SUCCESS);
    ck_assert_uint_eq(v.n, 10);
    ck_assert_uint_eq(v.nstr, 0);
    ck_assert_ptr_null(v.browser);
    ck_assert_ptr_null(v.city);
    for (i = 0; i < 10; i++) {
        ck_assert_int_eq(v.t[i], 100 + i);
        ck_assert_int_eq(v.visitor[i], 1000 + i);
        ck_assert_uint_eq(v.click[i], i % 3 == 0);
    }
    copy = apr_pmemdup(pool, db, lb);
    copy[16 + 160] = 2;                 /* the first source, after times and visitors */
    ck_assert_int_eq(qrt_vcols_open(&v, copy, lb), APR_SUCCESS);
    ck_assert_int_eq(qrt_vcols_check(&v), APR_EINVAL);
    /* cut short */
    ck_assert_int_eq(qrt_vcols_open(&v, db, lb - 8), APR_EINVAL);
}
END_TEST

static Suite *vcols_suite(void)
{
    Suite *s = suite_create("qrt_vcols");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, block_read_back);
    tcase_add_test(tc, strings_numbered_across_blocks);
    tcase_add_test(tc, a_block_of_no_strings);
    tcase_add_test(tc, empty_and_damaged);
    tcase_add_test(tc, numbered_groups);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(vcols_suite());
}
