/* qrt_trim: memory the process freed, kept by the allocator, is given back to the
 * system (the process's resident memory falls), in a release build as under
 * AddressSanitizer. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qrt_trim.h"
#include "qrt_check.h"

/* The process's resident memory, in KB. */
static long resident_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, resident = 0;

    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fscanf(f, "%ld %ld", &size, &resident), 2);
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

#define BLOCKS 4096
#define BLOCK (16 * 1024)

/* 64 MB in blocks small enough for the allocator's heap (not each mapped apart), written,
 * then freed but for the last (the heap's top stays held, so nothing is given back on
 * its own): the memory stays resident until qrt_trim. */
START_TEST(freed_memory_is_given_back)
{
    static char *block[BLOCKS];
    long before, held, after;
    int i;

    for (i = 0; i < BLOCKS; i++) {
        block[i] = malloc(BLOCK);
        ck_assert_ptr_nonnull(block[i]);
        memset(block[i], i & 0xff, BLOCK);
    }
    before = resident_kb();
    for (i = 0; i < BLOCKS - 1; i++) {
        free(block[i]);
    }
    held = resident_kb();
    ck_assert_msg(held > before - 16 * 1024, "freed memory went back on its own: "
                  "%ld KB, then %ld", before, held);
    ck_assert_int_eq(qrt_trim(), 1);       /* (glibc, or the sanitizer: both hand back) */
    after = resident_kb();
    ck_assert_msg(after < held - 32 * 1024, "resident %ld KB after the trim, %ld before",
                  after, held);
    free(block[BLOCKS - 1]);
}
END_TEST

static Suite *trim_suite(void)
{
    Suite *s = suite_create("qrt_trim");
    TCase *tc = tcase_create("trim");

    tcase_add_test(tc, freed_memory_is_given_back);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(trim_suite());
}
