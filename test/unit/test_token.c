/* Unit tests for qrt_token: digests and visitor ids. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>

#include "qrt_token.h"
#include "qrt_check.h"

QRT_CHECK_POOL

START_TEST(sha256_vector)
{
    char out[65];

    qrt_sha256_hex("abc", 3, out);
    ck_assert_str_eq(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
END_TEST

/* 16 hex digits of SHA-256 over "ip\nuser agent" (expected values from Python's
 * hashlib). */
START_TEST(visitor_ids)
{
    char out[17], *ua = malloc(3001);

    qrt_visitor_id(out, "203.0.113.0", "Mozilla/5.0");
    ck_assert_str_eq(out, "adac31003b6ece80");
    qrt_visitor_id(out, NULL, NULL);
    ck_assert_str_eq(out, "01ba4719c80b6fe9");
    /* longer than the stack buffer */
    memset(ua, 'x', 3000);
    ua[3000] = '\0';
    qrt_visitor_id(out, "10.0.0.0", ua);
    ck_assert_str_eq(out, "727e5271fa5b8918");
    free(ua);
}
END_TEST

START_TEST(tokens)
{
    apr_pool_t *p = pool;
    char *t;

    t = qrt_token_generate(p);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(qrt_token_plausible(t), 1);
    ck_assert_int_eq(qrt_token_plausible(""), 0);
    ck_assert_int_eq(qrt_token_plausible("qrt_a\nb"), 0);
    ck_assert_uint_eq(strlen(qrt_token_digest(p, t)), 64);
}
END_TEST

static Suite *token_suite(void)
{
    Suite *s = suite_create("qrt_token");
    TCase *tc = tcase_create("token");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, sha256_vector);
    tcase_add_test(tc, visitor_ids);
    tcase_add_test(tc, tokens);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(token_suite());
}
