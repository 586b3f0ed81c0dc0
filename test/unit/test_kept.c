/* qrt_kept: values kept under a key, a bucket and a seal, in memory shared by processes:
 * a value is found under its seal only, a full set gives up the value put longest ago, a
 * table attached again keeps its values, and processes that write and read the same
 * slots at once never read a torn value. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qrt_kept.h"
#include "qrt_check.h"

static void *shared(size_t size)
{
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    ck_assert_ptr_ne(m, MAP_FAILED);
    return m;
}

static void value(int64_t v[4], uint64_t key, int64_t bucket, int64_t seal)
{
    /* (in unsigned arithmetic, which wraps where int64_t's would overflow) */
    v[0] = (int64_t)(key + (uint64_t)bucket);
    v[1] = (int64_t)((uint64_t)v[0] * 3 + (uint64_t)seal);
    v[2] = v[1] ^ 0x5555;
    v[3] = (int64_t)(key * 7 - (uint64_t)seal);
}

START_TEST(a_value_is_found_under_its_seal)
{
    size_t size = qrt_kept_size(4096);      /* (200 values in 1,024 sets of four) */
    qrt_kept_t *t = qrt_kept_attach(shared(size), size, 1);
    int64_t v[4], got[4];
    uint64_t k;

    ck_assert_ptr_nonnull(t);
    for (k = 1; k <= 200; k++) {
        value(v, k * 0x9E3779B97F4A7C15ull, (int64_t)k - 100, (int64_t)k * 2 + 1);
        qrt_kept_put(t, k * 0x9E3779B97F4A7C15ull, (int64_t)k - 100, (int64_t)k * 2 + 1, v);
    }
    for (k = 1; k <= 200; k++) {
        value(v, k * 0x9E3779B97F4A7C15ull, (int64_t)k - 100, (int64_t)k * 2 + 1);
        ck_assert_int_eq(qrt_kept_get(t, k * 0x9E3779B97F4A7C15ull, (int64_t)k - 100,
                                      (int64_t)k * 2 + 1, got), 1);
        ck_assert_mem_eq(got, v, sizeof(v));
        /* another seal, bucket or key: none */
        ck_assert_int_eq(qrt_kept_get(t, k * 0x9E3779B97F4A7C15ull, (int64_t)k - 100,
                                      (int64_t)k * 2 + 3, got), 0);
        ck_assert_int_eq(qrt_kept_get(t, k * 0x9E3779B97F4A7C15ull, (int64_t)k - 99,
                                      (int64_t)k * 2 + 1, got), 0);
        ck_assert_int_eq(qrt_kept_get(t, k * 0x9E3779B97F4A7C15ull + 1, (int64_t)k - 100,
                                      (int64_t)k * 2 + 1, got), 0);
    }
    /* a new seal replaces the value; seal 0 is never kept */
    value(v, 0x9E3779B97F4A7C15ull, -99, 77);
    qrt_kept_put(t, 0x9E3779B97F4A7C15ull, -99, 77, v);
    ck_assert_int_eq(qrt_kept_get(t, 0x9E3779B97F4A7C15ull, -99, 3, got), 0);
    ck_assert_int_eq(qrt_kept_get(t, 0x9E3779B97F4A7C15ull, -99, 77, got), 1);
    ck_assert_mem_eq(got, v, sizeof(v));
    qrt_kept_put(t, 5, 5, 0, v);
    ck_assert_int_eq(qrt_kept_get(t, 5, 5, 0, got), 0);
    /* attached again (a graceful restart): kept; over other bytes: formatted, empty */
    t = qrt_kept_attach(t, size, 0);
    ck_assert_int_eq(qrt_kept_get(t, 0x9E3779B97F4A7C15ull, -99, 77, got), 1);
    memset(t, 0xA5, 64);
    t = qrt_kept_attach(t, size, 0);
    ck_assert_int_eq(qrt_kept_get(t, 0x9E3779B97F4A7C15ull, -99, 77, got), 0);
    ck_assert_ptr_null(qrt_kept_attach(t, 16, 1));
    ck_assert_int_eq(qrt_kept_get(NULL, 1, 1, 1, got), 0);
}
END_TEST

/* One set of four: the fifth value put gives up the one put longest ago (a value put
 * again counts as put anew). */
START_TEST(a_full_set_gives_up_the_oldest)
{
    size_t size = qrt_kept_size(4);
    qrt_kept_t *t = qrt_kept_attach(shared(size), size, 1);
    int64_t v[4], got[4];
    int k;

    for (k = 1; k <= 4; k++) {
        value(v, (uint64_t)k, k, k);
        qrt_kept_put(t, (uint64_t)k, k, k, v);
    }
    value(v, 1, 1, 9);
    qrt_kept_put(t, 1, 1, 9, v);            /* 1 again, under a new seal: the newest */
    value(v, 5, 5, 5);
    qrt_kept_put(t, 5, 5, 5, v);
    ck_assert_int_eq(qrt_kept_get(t, 2, 2, 2, got), 0);
    ck_assert_int_eq(qrt_kept_get(t, 1, 1, 9, got), 1);
    for (k = 3; k <= 5; k++) {
        ck_assert_int_eq(qrt_kept_get(t, (uint64_t)k, k, k, got), 1);
        value(v, (uint64_t)k, k, k);
        ck_assert_mem_eq(got, v, sizeof(v));
    }
}
END_TEST

/* Two processes put and get the same 64 keys' values (each key's under seals that change)
 * in a table of 16 slots for 200,000 rounds: every value read is one that was put whole
 * under the seal asked, and a value put by one process is read by the other. */
START_TEST(processes_never_read_a_torn_value)
{
    size_t size = qrt_kept_size(16);
    qrt_kept_t *t = qrt_kept_attach(shared(size), size, 1);
    int64_t *seen = shared(2 * sizeof(int64_t));
    pid_t pid[2];
    int w, status;

    for (w = 0; w < 2; w++) {
        pid[w] = fork();
        ck_assert_int_ge(pid[w], 0);
        if (pid[w] == 0) {
            unsigned x = 12345u + (unsigned)w * 777u;
            int64_t v[4], got[4], hits = 0;
            int i;

            for (i = 0; i < 200000; i++) {
                uint64_t key;
                int64_t seal;

                x = x * 1103515245u + 12345u;
                key = (x >> 8) % 64;
                seal = (int64_t)((x >> 20) % 3) + 1;
                if (x & 1) {
                    value(v, key, 0, seal);
                    qrt_kept_put(t, key, 0, seal, v);
                }
                else if (qrt_kept_get(t, key, 0, seal, got)) {
                    value(v, key, 0, seal);
                    if (memcmp(got, v, sizeof(v)) != 0) {
                        _exit(1);
                    }
                    hits++;
                }
            }
            seen[w] = hits;
            _exit(0);
        }
    }
    for (w = 0; w < 2; w++) {
        ck_assert_int_eq(waitpid(pid[w], &status, 0), pid[w]);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a torn value read");
        ck_assert_int_gt(seen[w], 1000);
    }
}
END_TEST

static Suite *kept_suite(void)
{
    Suite *s = suite_create("qrt_kept");
    TCase *tc = tcase_create("kept");

    tcase_add_test(tc, a_value_is_found_under_its_seal);
    tcase_add_test(tc, a_full_set_gives_up_the_oldest);
    tcase_add_test(tc, processes_never_read_a_torn_value);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(kept_suite());
}
