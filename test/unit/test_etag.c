/* Unit tests for qrt_etag. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>

#include "qrt_etag.h"
#include "qrt_check.h"

QRT_CHECK_POOL

START_TEST(make_is_weak_and_stable)
{
    const char *a = qrt_etag_make(pool, "abc", 3);
    const char *b = qrt_etag_make(pool, "abc", 3);
    const char *c = qrt_etag_make(pool, "abd", 3);
    const char *e = qrt_etag_make(pool, "", 0);
    apr_size_t i;

    ck_assert_str_eq(a, b);
    ck_assert_str_ne(a, c);
    /* MD5("abc") = 900150983cd24fb0d6963f7d28e17f72 */
    ck_assert_str_eq(a, "W/\"900150983cd24fb0d6963f7d28e17f72\"");
    ck_assert_str_eq(e, "W/\"d41d8cd98f00b204e9800998ecf8427e\"");
    ck_assert_uint_eq(strlen(a), 2 + 2 + 32);
    for (i = 3; i < 35; i++) {
        ck_assert(strchr("0123456789abcdef", a[i]) != NULL);
    }
}
END_TEST

START_TEST(match_forms)
{
    const char *tag = "W/\"0123abcd\"";

    ck_assert_int_eq(qrt_etag_match("W/\"0123abcd\"", tag), 1);
    ck_assert_int_eq(qrt_etag_match("\"0123abcd\"", tag), 1);            /* weak compare */
    ck_assert_int_eq(qrt_etag_match("*", tag), 1);
    ck_assert_int_eq(qrt_etag_match("  *  ", tag), 1);
    ck_assert_int_eq(qrt_etag_match("\"x\", W/\"0123abcd\"", tag), 1);
    ck_assert_int_eq(qrt_etag_match("\"x\",W/\"0123abcd\" ,\"y\"", tag), 1);
    ck_assert_int_eq(qrt_etag_match(" ,, \"0123abcd\"", tag), 1);
    ck_assert_int_eq(qrt_etag_match("\"0123abcd\"", "\"0123abcd\""), 1);
}
END_TEST

START_TEST(no_match)
{
    const char *tag = "W/\"0123abcd\"";

    ck_assert_int_eq(qrt_etag_match(NULL, tag), 0);
    ck_assert_int_eq(qrt_etag_match("", tag), 0);
    ck_assert_int_eq(qrt_etag_match("   ", tag), 0);
    ck_assert_int_eq(qrt_etag_match("\"0123abcde\"", tag), 0);
    ck_assert_int_eq(qrt_etag_match("\"0123abc\"", tag), 0);
    ck_assert_int_eq(qrt_etag_match("\"0123ABCD\"", tag), 0);
    ck_assert_int_eq(qrt_etag_match("0123abcd", tag), 0);               /* unquoted */
    ck_assert_int_eq(qrt_etag_match("w/\"0123abcd\"", tag), 0);         /* W is upper case */
    ck_assert_int_eq(qrt_etag_match("\"0123abcd", tag), 0);             /* unclosed */
    ck_assert_int_eq(qrt_etag_match("W/", tag), 0);
    ck_assert_int_eq(qrt_etag_match("*, \"x\"", tag), 0);
    ck_assert_int_eq(qrt_etag_match("\"x\" junk, \"0123abcd\"", tag), 0);
    ck_assert_int_eq(qrt_etag_match("\"\"", tag), 0);
    ck_assert_int_eq(qrt_etag_match("\"0123abcd\"", NULL), 0);
    ck_assert_int_eq(qrt_etag_match("\"0123abcd\"", "0123abcd"), 0);
}
END_TEST

START_TEST(hostile_headers)
{
    char *big = apr_palloc(pool, 100001);
    int i;

    for (i = 0; i < 100000; i++) {
        big[i] = (i % 7 == 0) ? '"' : (i % 5 == 0 ? ',' : 'W');
    }
    big[100000] = '\0';
    ck_assert_int_eq(qrt_etag_match(big, "W/\"zz\""), 0);
    ck_assert_int_eq(qrt_etag_match("\"\xff\xfe\", \"zz\"", "W/\"zz\""), 1);
}
END_TEST

static Suite *etag_suite(void)
{
    Suite *s = suite_create("qrt_etag");
    TCase *tc = tcase_create("etag");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, make_is_weak_and_stable);
    tcase_add_test(tc, match_forms);
    tcase_add_test(tc, no_match);
    tcase_add_test(tc, hostile_headers);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(etag_suite());
}
