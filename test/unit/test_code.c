/* Unit tests for qrt_code. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>

#include "qrt_code.h"
#include "qrt_check.h"

static const char alphabet[] =
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

START_TEST(generate_lengths)
{
    static const int lens[] = { 0, 1, 6, 8, 22, 32, 63, 64, 65, 200, 1000 };
    apr_size_t k;

    for (k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
        int n = lens[k];
        char *buf = malloc(n + 16);

        memset(buf, 'X' | 0x80, n + 16);
        ck_assert_int_eq(qrt_code_generate(buf, n), APR_SUCCESS);
        ck_assert_uint_eq(strlen(buf), (apr_size_t)n);
        ck_assert_uint_eq(strspn(buf, alphabet), (apr_size_t)n);
        /* nothing past the NUL was touched */
        ck_assert_int_eq((unsigned char)buf[n + 1], 'X' | 0x80);
        if (n >= 6 && n <= 32) {
            ck_assert_int_eq(qrt_code_valid(buf), 1);
        }
        free(buf);
    }
}
END_TEST

START_TEST(generate_bad_args)
{
    char buf[4] = "abc";

    ck_assert_int_eq(qrt_code_generate(NULL, 6), APR_EINVAL);
    ck_assert_int_eq(qrt_code_generate(buf, -1), APR_EINVAL);
    ck_assert_str_eq(buf, "abc");
}
END_TEST

START_TEST(generate_unique)
{
    char a[23], b[23];
    int i;

    for (i = 0; i < 1000; i++) {
        ck_assert_int_eq(qrt_code_generate(a, 22), APR_SUCCESS);
        ck_assert_int_eq(qrt_code_generate(b, 22), APR_SUCCESS);
        ck_assert_str_ne(a, b);
    }
}
END_TEST

/* Each of the 62 characters turns up about equally often: with 62 * 4000
 * draws the expected count is 4000 and its standard deviation about 63;
 * a biased "byte % 62" would give the first 8 characters 5/4 as many. */
START_TEST(generate_uniform)
{
    enum { PER = 4000, N = 62 * PER };
    int counts[62] = { 0 };
    char *buf = malloc(N + 1);
    int i;

    ck_assert_int_eq(qrt_code_generate(buf, N), APR_SUCCESS);
    for (i = 0; i < N; i++) {
        const char *at = strchr(alphabet, buf[i]);

        ck_assert_ptr_nonnull(at);
        counts[at - alphabet]++;
    }
    for (i = 0; i < 62; i++) {
        ck_assert_msg(counts[i] > PER - 600 && counts[i] < PER + 600,
                      "'%c' drawn %d times", alphabet[i], counts[i]);
    }
    free(buf);
}
END_TEST

START_TEST(valid)
{
    ck_assert_int_eq(qrt_code_valid("k3J9xQ"), 1);
    ck_assert_int_eq(qrt_code_valid("000000"), 1);
    ck_assert_int_eq(qrt_code_valid("zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"), 1);
    ck_assert_int_eq(qrt_code_valid("zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"), 0);
    ck_assert_int_eq(qrt_code_valid("k3J9x"), 0);
    ck_assert_int_eq(qrt_code_valid(""), 0);
    ck_assert_int_eq(qrt_code_valid(NULL), 0);
    ck_assert_int_eq(qrt_code_valid("k3J9x-"), 0);
    ck_assert_int_eq(qrt_code_valid("k3J9x_"), 0);
    ck_assert_int_eq(qrt_code_valid("k3J9x "), 0);
    ck_assert_int_eq(qrt_code_valid(" k3J9x"), 0);
    ck_assert_int_eq(qrt_code_valid("k3J9x/"), 0);
    ck_assert_int_eq(qrt_code_valid("k3J9x."), 0);
    ck_assert_int_eq(qrt_code_valid("k3J9x%"), 0);
    ck_assert_int_eq(qrt_code_valid("k3J9xQ\n"), 0);
    ck_assert_int_eq(qrt_code_valid("k3J9xé"), 0);
    ck_assert_int_eq(qrt_code_valid("k3J9x\xff"), 0);
    ck_assert_int_eq(qrt_code_valid("../../etc"), 0);
    ck_assert_int_eq(qrt_code_valid("k3J9xQ'; DROP TABLE x;--"), 0);
}
END_TEST

START_TEST(valid_long)
{
    apr_size_t n = 1 << 20;
    char *s = malloc(n + 1);

    memset(s, 'a', n);
    s[n] = '\0';
    ck_assert_int_eq(qrt_code_valid(s), 0);
    free(s);
}
END_TEST

START_TEST(custom_valid)
{
    char s[QRT_CODE_CUSTOM_MAX + 2];

    ck_assert_int_eq(qrt_code_custom_valid("abc"), 1);
    ck_assert_int_eq(qrt_code_custom_valid("a-b_C9"), 1);
    ck_assert_int_eq(qrt_code_custom_valid("---"), 1);
    ck_assert_int_eq(qrt_code_custom_valid("k3J9xQ"), 1);
    ck_assert_int_eq(qrt_code_custom_valid("ab"), 0);
    ck_assert_int_eq(qrt_code_custom_valid(""), 0);
    ck_assert_int_eq(qrt_code_custom_valid(NULL), 0);
    ck_assert_int_eq(qrt_code_custom_valid("abc/"), 0);
    ck_assert_int_eq(qrt_code_custom_valid("ab.c"), 0);
    ck_assert_int_eq(qrt_code_custom_valid("ab c"), 0);
    ck_assert_int_eq(qrt_code_custom_valid("abc%20"), 0);
    ck_assert_int_eq(qrt_code_custom_valid("ab\xc3\xa9"), 0);
    ck_assert_int_eq(qrt_code_custom_valid("../../etc"), 0);
    memset(s, 'z', QRT_CODE_CUSTOM_MAX);
    s[QRT_CODE_CUSTOM_MAX] = '\0';
    ck_assert_int_eq(qrt_code_custom_valid(s), 1);
    s[QRT_CODE_CUSTOM_MAX] = 'z';
    s[QRT_CODE_CUSTOM_MAX + 1] = '\0';
    ck_assert_int_eq(qrt_code_custom_valid(s), 0);
}
END_TEST

static Suite *code_suite(void)
{
    Suite *s = suite_create("qrt_code");
    TCase *tc = tcase_create("code");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, generate_lengths);
    tcase_add_test(tc, generate_bad_args);
    tcase_add_test(tc, generate_unique);
    tcase_add_test(tc, generate_uniform);
    tcase_add_test(tc, valid);
    tcase_add_test(tc, valid_long);
    tcase_add_test(tc, custom_valid);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(code_suite());
}
