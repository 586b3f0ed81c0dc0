/* Unit tests for qrt_store.c: the array literals of PostgreSQL's statements of many
 * rows (qrt_db_exec_rows), and how errors are classed. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>

#include "qrt_store.h"
#include "qrt_check.h"

QRT_CHECK_POOL

START_TEST(array_of_numbers)
{
    apr_int64_t a = 1, b = -9223372036854775807LL - 1, c = 42;
    int i0 = 0, i1 = 1;
    /* two columns a row: an apr_int64_t and an int */
    const void *args[] = { &a, &i0, NULL, &i1, &b, NULL, &c, &i0 };

    ck_assert_str_eq(qrt_db_array(pool, 'l', args, 2, 0, 4),
                     "{1,NULL,-9223372036854775808,42}");
    ck_assert_str_eq(qrt_db_array(pool, 'i', args, 2, 1, 4), "{0,1,NULL,0}");
    ck_assert_str_eq(qrt_db_array(pool, 'l', args, 2, 0, 0), "{}");
}
END_TEST

START_TEST(array_of_strings)
{
    const void *args[] = { "plain", "", NULL, "a \"quoted\" word", "back\\slash",
                           "{brace,comma}", "NULL", "ü\xe2\x82\xac" };

    ck_assert_str_eq(qrt_db_array(pool, 's', args, 1, 0, 8),
                     "{\"plain\",\"\",NULL,\"a \\\"quoted\\\" word\",\"back\\\\slash\","
                     "\"{brace,comma}\",\"NULL\",\"ü\xe2\x82\xac\"}");
}
END_TEST

START_TEST(array_of_long_strings)
{
    /* every character escaped: the literal is twice the text, plus quotes */
    char *s = malloc(10001);
    const void *args[1];
    char *out;

    memset(s, '"', 10000);
    s[10000] = '\0';
    args[0] = s;
    out = qrt_db_array(pool, 's', args, 1, 0, 1);
    ck_assert_uint_eq(strlen(out), 2 + 2 + 20000);
    ck_assert_int_eq(out[0], '{');
    ck_assert_int_eq(out[strlen(out) - 1], '}');
    free(s);
}
END_TEST

/* How a driver's error message is read: retry the transaction, the connection is
 * gone, or the database is busy or full (a 503). */
START_TEST(error_classes)
{
    qrt_db_t db;

    memset(&db, 0, sizeof(db));
    ck_assert_int_eq(qrt_db_busy_or_full(&db), 0);
    db.error = "database or disk is full";
    ck_assert_int_eq(qrt_db_busy_or_full(&db), 1);
    ck_assert_int_eq(qrt_db_lost(&db), 0);
    db.error = "database is locked";
    ck_assert_int_eq(qrt_db_busy_or_full(&db), 1);
    db.error = "ERROR: 53100: could not extend file: No space left on device";
    ck_assert_int_eq(qrt_db_busy_or_full(&db), 1);
    db.error = "ERROR: 55P03: canceling statement due to lock timeout";
    ck_assert_int_eq(qrt_db_busy_or_full(&db), 1);
    ck_assert_int_eq(qrt_db_retryable(&db), 0);
    db.error = "ERROR: 40P01: deadlock detected";
    ck_assert_int_eq(qrt_db_busy_or_full(&db), 0);
    ck_assert_int_eq(qrt_db_retryable(&db), 1);
    db.error = "FATAL: 57P01: terminating connection due to administrator command";
    ck_assert_int_eq(qrt_db_lost(&db), 1);
    ck_assert_int_eq(qrt_db_busy_or_full(&db), 0);
    db.error = "ERROR: 23505: duplicate key value violates unique constraint";
    ck_assert_int_eq(qrt_db_busy_or_full(&db), 0);
    ck_assert_int_eq(qrt_db_lost(&db), 0);
}
END_TEST

static Suite *store_suite(void)
{
    Suite *s = suite_create("store");
    TCase *tc = tcase_create("array");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, array_of_numbers);
    tcase_add_test(tc, array_of_strings);
    tcase_add_test(tc, array_of_long_strings);
    tcase_add_test(tc, error_classes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(store_suite());
}
