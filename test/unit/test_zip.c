/* Unit tests for qrt_zip.c: archives read back by Python's zipfile and unzip -t. */

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apr_strings.h"

#include "qrt_zip.h"
#include "qrt_check.h"

QRT_CHECK_POOL

static apr_status_t file_write(void *ctx, const void *buf, apr_size_t len)
{
    return fwrite(buf, 1, len, ctx) == len ? APR_SUCCESS : APR_EGENERAL;
}

static apr_status_t fail_after(void *ctx, const void *buf, apr_size_t len)
{
    int *left = ctx;

    (void)buf;
    (void)len;
    return (*left)-- > 0 ? APR_SUCCESS : APR_ECONNABORTED;
}

static char *run_out(const char *cmd)
{
    char *out = apr_pcalloc(pool, 65536);
    size_t n;
    FILE *f = popen(cmd, "r");

    ck_assert_ptr_nonnull(f);
    n = fread(out, 1, 65535, f);
    if (pclose(f) != 0) {
        return NULL;
    }
    while (n > 0 && out[n - 1] == '\n') {
        n--;
    }
    out[n] = '\0';
    return out;
}

#define PYCHECK "/usr/bin/python3 -c 'import sys, zipfile, hashlib\n" \
    "z = zipfile.ZipFile(sys.argv[1])\n" \
    "assert z.testzip() is None\n" \
    "print(\" \".join(\"%%s:%%d:%%s\" %% (i.filename, i.file_size, " \
    "hashlib.md5(z.read(i)).hexdigest()[:8]) for i in z.infolist()))' %s"

START_TEST(test_roundtrip)
{
    char path[] = "/tmp/qrt_test_zip_XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "wb");
    qrt_zip_t *z = qrt_zip_open(pool, file_write, f, apr_time_from_sec(1767225600));
    char *big = apr_palloc(pool, 100000), *out, *want;
    int i;

    for (i = 0; i < 100000; i++) {
        big[i] = (char)(i * 7);
    }
    ck_assert_int_eq(qrt_zip_entry(z, "a.svg"), APR_SUCCESS);
    ck_assert_int_eq(qrt_zip_write(z, "hello ", 6), APR_SUCCESS);
    ck_assert_int_eq(qrt_zip_write(z, "world", 5), APR_SUCCESS);
    ck_assert_int_eq(qrt_zip_entry(z, "empty.png"), APR_SUCCESS);  /* ends a.svg */
    ck_assert_int_eq(qrt_zip_entry(z, "b.pdf"), APR_SUCCESS);
    ck_assert_int_eq(qrt_zip_write(z, big, 60000), APR_SUCCESS);
    ck_assert_int_eq(qrt_zip_write(z, big + 60000, 40000), APR_SUCCESS);
    ck_assert_int_eq(qrt_zip_entry_end(z), APR_SUCCESS);
    ck_assert_int_eq(qrt_zip_close(z), APR_SUCCESS);
    fclose(f);
    out = run_out(apr_psprintf(pool, PYCHECK, path));
    want = apr_psprintf(pool, "a.svg:11:5eb63bbb empty.png:0:d41d8cd9 b.pdf:100000:%s",
                        run_out(apr_psprintf(pool, "/usr/bin/python3 -c 'import hashlib; "
                                "print(hashlib.md5(bytes((i * 7) %% 256 for i in "
                                "range(100000))).hexdigest()[:8])'")));
    ck_assert_ptr_nonnull(out);
    ck_assert_str_eq(out, want);
    ck_assert_ptr_nonnull(run_out(apr_psprintf(pool, "unzip -tqq %s 2>&1", path)));
    /* the date as written: 2026-01-01 00:00 UTC */
    out = run_out(apr_psprintf(pool, "/usr/bin/python3 -c 'import sys, zipfile; "
                  "print(zipfile.ZipFile(sys.argv[1]).infolist()[0].date_time)' %s", path));
    ck_assert_str_eq(out, "(2026, 1, 1, 0, 0, 0)");
    unlink(path);
}
END_TEST

START_TEST(test_empty_archive)
{
    char path[] = "/tmp/qrt_test_zip_XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "wb");
    qrt_zip_t *z = qrt_zip_open(pool, file_write, f, 0);

    ck_assert_int_eq(qrt_zip_close(z), APR_SUCCESS);
    fclose(f);
    ck_assert_int_eq(qrt_zip_offset(z), 22);
    ck_assert_str_eq(run_out(apr_psprintf(pool, PYCHECK, path)), "");
    unlink(path);
}
END_TEST

START_TEST(test_bad_use)
{
    int left = 1000;
    qrt_zip_t *z = qrt_zip_open(pool, fail_after, &left, 0);
    char name[QRT_ZIP_NAME_MAX + 2];

    memset(name, 'n', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    ck_assert_int_eq(qrt_zip_write(z, "x", 1), APR_EINVAL);     /* no entry open */
    ck_assert_int_eq(qrt_zip_entry(z, ""), APR_EINVAL);
    ck_assert_int_eq(qrt_zip_entry(z, NULL), APR_EINVAL);
    ck_assert_int_eq(qrt_zip_entry(z, name), APR_EINVAL);
    name[QRT_ZIP_NAME_MAX] = '\0';
    ck_assert_int_eq(qrt_zip_entry(z, name), APR_SUCCESS);
}
END_TEST

START_TEST(test_write_failure_sticks)
{
    int left = 2;                       /* the local header and its name, then fail */
    qrt_zip_t *z = qrt_zip_open(pool, fail_after, &left, 0);

    ck_assert_int_eq(qrt_zip_entry(z, "a.png"), APR_SUCCESS);
    ck_assert_int_eq(qrt_zip_write(z, "abc", 3), APR_ECONNABORTED);
    left = 100;
    ck_assert_int_eq(qrt_zip_write(z, "abc", 3), APR_ECONNABORTED);
    ck_assert_int_eq(qrt_zip_entry(z, "b.png"), APR_ECONNABORTED);
    ck_assert_int_eq(qrt_zip_close(z), APR_ECONNABORTED);
}
END_TEST

static Suite *zip_suite(void)
{
    Suite *s = suite_create("qrt_zip");
    TCase *tc = tcase_create("zip");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_roundtrip);
    tcase_add_test(tc, test_empty_archive);
    tcase_add_test(tc, test_bad_use);
    tcase_add_test(tc, test_write_failure_sticks);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(zip_suite());
}
