/* Unit tests for qrt_vset: exact distinct counts against apr_hash for visitor ids
 * (16 hex digits), other strings and both mixed, through the table's growth; upper
 * case and lower case ids stay distinct; the bound refuses the member past it and
 * nothing else. */
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
            int had = apr_hash_get(ref, s, APR_HASH_KEY_STRING) != NULL;

            ck_assert_int_eq(qrt_vset_add(set, s, strlen(s)), had ? 0 : 1);
            apr_hash_set(ref, s, APR_HASH_KEY_STRING, "");
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

    ck_assert_int_eq(qrt_vset_add(set, "00000000000000ab", 16), 1);
    ck_assert_int_eq(qrt_vset_add(set, "00000000000000AB", 16), 1);
    ck_assert_int_eq(qrt_vset_add(set, "00000000000000ab", 16), 0);
    ck_assert_int_eq(qrt_vset_add(set, "a\0b", 3), 1);
    ck_assert_int_eq(qrt_vset_add(set, "a\0c", 3), 1);
    ck_assert_int_eq(qrt_vset_add(set, "a", 1), 1);
    ck_assert_int_eq(qrt_vset_add(set, "a\0b", 3), 0);
    ck_assert_int_eq(qrt_vset_add(set, "", 0), 1);
    ck_assert_int_eq(qrt_vset_count(set), 6);
    qrt_vset_free(set);
    qrt_vset_free(NULL);
}
END_TEST

START_TEST(bounded)
{
    qrt_vset_t *set = qrt_vset_make(3000);
    char buf[32];
    int i;

    for (i = 0; i < 3000; i++) {
        apr_snprintf(buf, sizeof(buf), "%016x", i);
        ck_assert_int_eq(qrt_vset_add(set, buf, 16), 1);
    }
    ck_assert_int_eq(qrt_vset_add(set, "ffffffffffffffff", 16), -1);
    ck_assert_int_eq(qrt_vset_add(set, "0000000000000007", 16), 0);     /* a member */
    ck_assert_int_eq(qrt_vset_count(set), 3000);
    qrt_vset_free(set);
}
END_TEST

static Suite *vset_suite(void)
{
    Suite *s = suite_create("vset");
    TCase *tc = tcase_create("set");

    tcase_add_test(tc, exact_counts);
    tcase_add_test(tc, case_and_bytes);
    tcase_add_test(tc, bounded);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(vset_suite());
}
