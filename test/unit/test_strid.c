/* Unit tests for qrt_strid: equal strings one number, others their own, from 1 up,
 * each read back by its number;
 * the bounds of numbers and bytes (0 past them, the numbers given still given); two
 * threads numbering the same strings at once agree. */
#include <stdio.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>
#include <apr_thread_proc.h>

#include "qrt_strid.h"
#include "qrt_check.h"

QRT_CHECK_POOL

START_TEST(one_number_a_string)
{
    qrt_strid_t *t = qrt_strid_make(pool, 100000, 1 << 24);
    const char *s[4] = { "Berlin", "Paris", "Berlin", "" };
    apr_uint32_t ids[4], again[4];
    char buf[32];
    const char *one[1] = { buf };
    int i;

    ck_assert_ptr_nonnull(t);
    qrt_strid_get_many(t, s, 4, ids);
    ck_assert_uint_eq(ids[0], 1);
    ck_assert_uint_eq(ids[1], 2);
    ck_assert_uint_eq(ids[2], 1);
    ck_assert_uint_eq(ids[3], 3);
    /* many more (the table grows), then the first ones again */
    for (i = 0; i < 50000; i++) {
        apr_uint32_t id;

        apr_snprintf(buf, sizeof(buf), "city %d", i);
        qrt_strid_get_many(t, one, 1, &id);
        ck_assert_uint_eq(id, (apr_uint32_t)i + 4);
    }
    qrt_strid_get_many(t, s, 4, again);
    ck_assert_mem_eq(again, ids, sizeof(ids));
    /* a prefix or an extension of a string is another string */
    s[0] = "Berli";
    s[1] = "Parisx";
    qrt_strid_get_many(t, s, 2, again);
    ck_assert_uint_eq(again[0], 50004);
    ck_assert_uint_eq(again[1], 50005);
    ck_assert_uint_eq(qrt_strid_count(t), 50005);
    /* each number's string read back (the arena has moved meanwhile) */
    ck_assert_str_eq(qrt_strid_str(t, 1, pool), "Berlin");
    ck_assert_str_eq(qrt_strid_str(t, 3, pool), "");
    ck_assert_str_eq(qrt_strid_str(t, 4, pool), "city 0");
    ck_assert_str_eq(qrt_strid_str(t, 50003, pool), "city 49999");
    ck_assert_str_eq(qrt_strid_str(t, 50005, pool), "Parisx");
    ck_assert_ptr_null(qrt_strid_str(t, 0, pool));
    ck_assert_ptr_null(qrt_strid_str(t, 50006, pool));
}
END_TEST

START_TEST(bounded)
{
    qrt_strid_t *few = qrt_strid_make(pool, 2, 1 << 20), *small = qrt_strid_make(pool, 100, 16);
    const char *s[3] = { "a", "b", "c" };
    const char *w[3] = { "0123456", "789abcd", "x" };
    apr_uint32_t ids[3];

    qrt_strid_get_many(few, s, 3, ids);
    ck_assert_uint_eq(ids[0], 1);
    ck_assert_uint_eq(ids[1], 2);
    ck_assert_uint_eq(ids[2], 0);
    qrt_strid_get_many(few, s, 2, ids);
    ck_assert_uint_eq(ids[0], 1);
    ck_assert_uint_eq(ids[1], 2);
    /* 16 bytes: two strings of 7 and their NULs, then no room for "x" and its NUL */
    qrt_strid_get_many(small, w, 3, ids);
    ck_assert_uint_eq(ids[0], 1);
    ck_assert_uint_eq(ids[1], 2);
    ck_assert_uint_eq(ids[2], 0);
    ck_assert_uint_eq(qrt_strid_count(small), 2);
}
END_TEST

#define NT 2000
static qrt_strid_t *shared;
static apr_uint32_t got[2][NT];

static void *APR_THREAD_FUNC number(apr_thread_t *th, void *arg)
{
    int k = (int)(apr_uintptr_t)arg, i;

    for (i = 0; i < NT; i++) {
        char buf[32];
        const char *one[1] = { buf };
        int x = k ? NT - 1 - i : i;

        apr_snprintf(buf, sizeof(buf), "s%d", x);
        qrt_strid_get_many(shared, one, 1, &got[k][x]);
    }
    (void)th;
    return NULL;
}

START_TEST(two_threads_agree)
{
    apr_thread_t *th[2];
    apr_status_t rv;
    int k, i;

    shared = qrt_strid_make(pool, NT * 2, 1 << 20);
    for (k = 0; k < 2; k++) {
        ck_assert_int_eq(apr_thread_create(&th[k], NULL, number, (void *)(apr_uintptr_t)k,
                                           pool), APR_SUCCESS);
    }
    for (k = 0; k < 2; k++) {
        apr_thread_join(&rv, th[k]);
    }
    for (i = 0; i < NT; i++) {
        ck_assert_uint_gt(got[0][i], 0);
        ck_assert_uint_eq(got[0][i], got[1][i]);
    }
    ck_assert_uint_eq(qrt_strid_count(shared), NT);
}
END_TEST

static Suite *strid_suite(void)
{
    Suite *s = suite_create("qrt_strid");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, one_number_a_string);
    tcase_add_test(tc, bounded);
    tcase_add_test(tc, two_threads_agree);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(strid_suite());
}
