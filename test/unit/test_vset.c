/* Unit tests for qrt_vset: exact distinct counts against apr_hash for visitor ids
 * (16 hex digits, made distinct in a hash table), other strings and both mixed, through
 * the arrays' growth and with many repeats; upper case and lower case ids stay
 * distinct; ids added as numbers are the same members as their digits; the bound
 * refuses ids past it, repeats of members never. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>
#include <apr_hash.h>
#include <apr_strings.h>

#include "qrt_vset.h"
#include "qrt_check.h"

START_TEST(exact_counts)
{
    apr_pool_t *p;
    int round;

    apr_pool_create(&p, NULL);
    for (round = 0; round < 4; round++) {
        apr_hash_t *ref = apr_hash_make(p);
        qrt_vset_t *set = qrt_vset_make(1000000);
        int i, n = 20000 * (round + 1);

        ck_assert_ptr_nonnull(set);
        for (i = 0; i < n; i++) {
            unsigned long x = (unsigned long)random() % (unsigned long)(n / 2 + 1);
            const char *s = round == 1 ? apr_psprintf(p, "v%lu", x)
                            : round == 2 && i % 3 == 0 ? apr_psprintf(p, "%015lx", x)
                            : apr_psprintf(p, "%016lx", x * 2654435761UL);
            ck_assert_int_eq(qrt_vset_add(set, s, strlen(s)), 0);
            apr_hash_set(ref, s, APR_HASH_KEY_STRING, "");
            if (i == n / 3) {
                /* Counting midway changes nothing. */
                ck_assert_int_eq(qrt_vset_count(set), apr_hash_count(ref));
            }
        }
        ck_assert_int_eq(qrt_vset_count(set), apr_hash_count(ref));
        qrt_vset_free(set);
        apr_pool_clear(p);
    }
    apr_pool_destroy(p);
}
END_TEST

START_TEST(case_and_bytes)
{
    qrt_vset_t *set = qrt_vset_make(100);

    ck_assert_int_eq(qrt_vset_add(set, "00000000000000ab", 16), 0);
    ck_assert_int_eq(qrt_vset_add(set, "00000000000000AB", 16), 0);
    ck_assert_int_eq(qrt_vset_add(set, "00000000000000ab", 16), 0);
    ck_assert_int_eq(qrt_vset_add(set, "0000000000000000", 16), 0);
    ck_assert_int_eq(qrt_vset_add(set, "ffffffffffffffff", 16), 0);
    ck_assert_int_eq(qrt_vset_add(set, "a\0b", 3), 0);
    ck_assert_int_eq(qrt_vset_add(set, "a\0c", 3), 0);
    ck_assert_int_eq(qrt_vset_add(set, "a", 1), 0);
    ck_assert_int_eq(qrt_vset_add(set, "a\0b", 3), 0);
    ck_assert_int_eq(qrt_vset_add(set, "", 0), 0);
    ck_assert_int_eq(qrt_vset_count(set), 8);
    qrt_vset_free(set);
    qrt_vset_free(NULL);
}
END_TEST

/* Schema 9's ids added as numbers are the members their 16 hex digits are (negative
 * ones included: the digits are the two's complement); other numbers are others. */
START_TEST(ids_as_numbers)
{
    qrt_vset_t *set = qrt_vset_make(1000);
    const char *h1 = "ffffffffffffffff", *h2 = "0123456789abcdef";

    ck_assert_ptr_nonnull(set);
    ck_assert_int_eq(qrt_vset_add_id(set, -1), 0);
    ck_assert_int_eq(qrt_vset_add(set, h1, strlen(h1)), 0);
    ck_assert_int_eq(qrt_vset_add(set, h2, strlen(h2)), 0);
    ck_assert_int_eq(qrt_vset_add_id(set, (apr_int64_t)APR_UINT64_C(0x0123456789abcdef)), 0);
    ck_assert_int_eq(qrt_vset_add_id(set, APR_INT64_MIN), 0);
    ck_assert_int_eq(qrt_vset_add_id(set, 0), 0);
    ck_assert_int_eq(qrt_vset_count(set), 4);
    /* 0 cannot sit in the counting pass's table: counted again, it is still one. */
    ck_assert_int_eq(qrt_vset_add_id(set, 0), 0);
    ck_assert_int_eq(qrt_vset_add(set, "0000000000000000", 16), 0);
    ck_assert_int_eq(qrt_vset_count(set), 4);
    ck_assert_int_eq(qrt_vset_add_id(set, 7), 0);
    ck_assert_int_eq(qrt_vset_count(set), 5);
    qrt_vset_free(set);
}
END_TEST

START_TEST(bounded)
{
    qrt_vset_t *set = qrt_vset_make(16384);
    char buf[32];
    int i, refused = 0;

    /* Repeats of members never fill it. */
    for (i = 0; i < 100000; i++) {
        apr_snprintf(buf, sizeof(buf), "%016x", i % 5000);
        ck_assert_int_eq(qrt_vset_add(set, buf, 16), 0);
    }
    ck_assert_int_eq(qrt_vset_count(set), 5000);
    /* New ids do, past the bound. */
    for (i = 0; i < 20000 && !refused; i++) {
        apr_snprintf(buf, sizeof(buf), "%016x", 100000 + i);
        refused = qrt_vset_add(set, buf, 16) < 0;
    }
    ck_assert_int_eq(refused, 1);
    qrt_vset_free(set);
}
END_TEST

static Suite *vset_suite(void)
{
    Suite *s = suite_create("vset");
    TCase *tc = tcase_create("set");

    tcase_add_test(tc, exact_counts);
    tcase_add_test(tc, case_and_bytes);
    tcase_add_test(tc, ids_as_numbers);
    tcase_add_test(tc, bounded);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(vset_suite());
}
