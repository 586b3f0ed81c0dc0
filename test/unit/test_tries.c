/* Unit tests of qrt_tries: wrong password tries per address and tracker. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>
#include <apr_general.h>
#include "qrt_tries.h"
#include "qrt_check.h"

#define T0 1700000000
#define MIN 60
#define LIMIT 10

static qrt_tries_t *table(apr_uint32_t n)
{
    qrt_tries_t *t = malloc(qrt_tries_size(n));

    ck_assert_ptr_nonnull(t);
    qrt_tries_init(t, n);
    return t;
}

static int blocked(qrt_tries_t *t, const char *addr, apr_int64_t tracker, apr_int64_t now)
{
    return qrt_tries_blocked(t, addr, tracker, now, LIMIT, MIN);
}

static void fail_n(qrt_tries_t *t, const char *addr, apr_int64_t tracker, apr_int64_t now,
                   int n)
{
    int i;

    for (i = 0; i < n; i++) {
        qrt_tries_fail(t, addr, tracker, now, MIN);
    }
}

START_TEST(limit_within_window)
{
    qrt_tries_t *t = table(1024);
    int i;

    for (i = 0; i < LIMIT; i++) {
        ck_assert_int_eq(blocked(t, "192.0.2.1", 7, T0 + i), 0);
        qrt_tries_fail(t, "192.0.2.1", 7, T0 + i, MIN);
    }
    ck_assert_int_eq(blocked(t, "192.0.2.1", 7, T0 + LIMIT - 1), 1);
    ck_assert_int_eq(blocked(t, "192.0.2.1", 7, T0 + 59), 1);
    ck_assert_int_eq(qrt_tries_active(t, T0 + 59, MIN), 1);
    /* A smaller limit blocks sooner, a larger later. */
    ck_assert_int_eq(qrt_tries_blocked(t, "192.0.2.1", 7, T0 + 30, 11, MIN), 0);
    ck_assert_int_eq(qrt_tries_blocked(t, "192.0.2.1", 7, T0 + 30, 3, MIN), 1);
    free(t);
}
END_TEST

/* A try that begins counts at once: limit of them begin, the next is blocked; a right
 * one taken back leaves room for one more; taking back a try that is not there changes
 * nothing. */
START_TEST(tries_count_from_their_start)
{
    qrt_tries_t *t = table(1024);
    int i;

    for (i = 0; i < LIMIT; i++) {
        ck_assert_int_eq(qrt_tries_begin(t, "192.0.2.9", 3, T0 + i / 4, LIMIT, MIN), 0);
    }
    ck_assert_int_eq(qrt_tries_begin(t, "192.0.2.9", 3, T0 + 3, LIMIT, MIN), 1);
    ck_assert_int_eq(blocked(t, "192.0.2.9", 3, T0 + 3), 1);
    /* the second try begun at T0 + 1 was right: the latest at that time goes, the
     * later ones keep their times (the oldest of the limit now counts from T0) */
    qrt_tries_forgive(t, "192.0.2.9", 3, T0 + 1);
    ck_assert_int_eq(blocked(t, "192.0.2.9", 3, T0 + 3), 0);
    qrt_tries_forgive(t, "192.0.2.9", 3, T0 + 7);       /* none then */
    qrt_tries_forgive(t, "192.0.2.8", 3, T0 + 1);       /* no such key */
    ck_assert_int_eq(blocked(t, "192.0.2.9", 3, T0 + 3), 0);
    ck_assert_int_eq(qrt_tries_begin(t, "192.0.2.9", 3, T0 + 3, LIMIT, MIN), 0);
    ck_assert_int_eq(qrt_tries_begin(t, "192.0.2.9", 3, T0 + 3, LIMIT, MIN), 1);
    /* the tries at T0 (four) leave the window first: then four more may begin */
    ck_assert_int_eq(blocked(t, "192.0.2.9", 3, T0 + MIN - 1), 1);
    ck_assert_int_eq(blocked(t, "192.0.2.9", 3, T0 + MIN), 0);
    for (i = 0; i < 4; i++) {
        ck_assert_int_eq(qrt_tries_begin(t, "192.0.2.9", 3, T0 + MIN, LIMIT, MIN), 0);
    }
    ck_assert_int_eq(qrt_tries_begin(t, "192.0.2.9", 3, T0 + MIN, LIMIT, MIN), 1);
    free(t);
}
END_TEST

START_TEST(window_slides)
{
    qrt_tries_t *t = table(1024);

    /* Ten tries at T0..T0+9: the first leaves the window at T0+60. */
    for (int i = 0; i < LIMIT; i++) {
        qrt_tries_fail(t, "192.0.2.1", 7, T0 + i, MIN);
    }
    ck_assert_int_eq(blocked(t, "192.0.2.1", 7, T0 + 59), 1);
    ck_assert_int_eq(blocked(t, "192.0.2.1", 7, T0 + 60), 0);
    /* One more try fills the window again, until the second try leaves it. */
    qrt_tries_fail(t, "192.0.2.1", 7, T0 + 60, MIN);
    ck_assert_int_eq(blocked(t, "192.0.2.1", 7, T0 + 60), 1);
    ck_assert_int_eq(blocked(t, "192.0.2.1", 7, T0 + 61), 0);
    /* Long after, the entry is forgotten, and counting starts over. */
    ck_assert_int_eq(qrt_tries_active(t, T0 + 200, MIN), 0);
    fail_n(t, "192.0.2.1", 7, T0 + 200, LIMIT - 1);
    ck_assert_int_eq(blocked(t, "192.0.2.1", 7, T0 + 200), 0);
    qrt_tries_fail(t, "192.0.2.1", 7, T0 + 200, MIN);
    ck_assert_int_eq(blocked(t, "192.0.2.1", 7, T0 + 200), 1);
    free(t);
}
END_TEST

START_TEST(sliding_not_fixed)
{
    qrt_tries_t *t = table(64);

    /* Tries spread over the window count together; no window boundary resets them. */
    qrt_tries_fail(t, "a", 1, T0, MIN);
    qrt_tries_fail(t, "a", 1, T0 + 40, MIN);
    qrt_tries_fail(t, "a", 1, T0 + 70, MIN);
    ck_assert_int_eq(qrt_tries_blocked(t, "a", 1, T0 + 70, 2, MIN), 1);
    ck_assert_int_eq(qrt_tries_blocked(t, "a", 1, T0 + 70, 3, MIN), 0);
    ck_assert_int_eq(qrt_tries_blocked(t, "a", 1, T0 + 99, 2, MIN), 1);
    ck_assert_int_eq(qrt_tries_blocked(t, "a", 1, T0 + 100, 2, MIN), 0);
    free(t);
}
END_TEST

START_TEST(keys_independent)
{
    qrt_tries_t *t = table(1024);

    fail_n(t, "192.0.2.1", 7, T0, LIMIT);
    ck_assert_int_eq(blocked(t, "192.0.2.1", 7, T0), 1);
    ck_assert_int_eq(blocked(t, "192.0.2.1", 8, T0), 0);
    ck_assert_int_eq(blocked(t, "192.0.2.2", 7, T0), 0);
    ck_assert_int_eq(blocked(t, "192.0.2.10", 7, T0), 0);
    ck_assert_int_eq(blocked(t, "192.0.2.", 7, T0), 0);
    ck_assert_int_eq(blocked(t, "2001:db8::1", 7, T0), 0);
    /* Tries of other keys do not add up. */
    fail_n(t, "192.0.2.1", 8, T0, LIMIT - 1);
    fail_n(t, "192.0.2.2", 7, T0, LIMIT - 1);
    ck_assert_int_eq(blocked(t, "192.0.2.1", 8, T0), 0);
    ck_assert_int_eq(blocked(t, "192.0.2.2", 7, T0), 0);
    ck_assert_int_eq(qrt_tries_active(t, T0, MIN), 3);
    free(t);
}
END_TEST

START_TEST(odd_input)
{
    qrt_tries_t *t = table(16);
    char long_a[200], long_b[200];

    /* Limits beyond the ring count as its size; below 1 as 1; a window below 1 as 1. */
    fail_n(t, "a", 1, T0, QRT_TRIES_MAX_LIMIT);
    ck_assert_int_eq(qrt_tries_blocked(t, "a", 1, T0, 1000, MIN), 1);
    ck_assert_int_eq(qrt_tries_blocked(t, "a", 1, T0, 0, 0), 1);
    ck_assert_int_eq(qrt_tries_blocked(t, "a", 1, T0 + 1, 0, 0), 0);
    /* A NULL address is the empty one. */
    fail_n(t, NULL, 2, T0, LIMIT);
    ck_assert_int_eq(blocked(t, "", 2, T0), 1);
    ck_assert_int_eq(blocked(t, NULL, 2, T0), 1);
    /* Addresses longer than the key compare by their first QRT_TRIES_ADDR - 1 bytes. */
    memset(long_a, 'x', sizeof(long_a));
    long_a[sizeof(long_a) - 1] = '\0';
    memcpy(long_b, long_a, sizeof(long_b));
    long_b[150] = 'y';
    fail_n(t, long_a, 3, T0, LIMIT);
    ck_assert_int_eq(blocked(t, long_b, 3, T0), 1);
    /* Tries stamped in the future (the clock stepped back) count up to a window. */
    fail_n(t, "b", 4, T0, LIMIT);
    ck_assert_int_eq(blocked(t, "b", 4, T0 - 59), 1);
    ck_assert_int_eq(blocked(t, "b", 4, T0 - 60), 0);
    free(t);
}
END_TEST

/* In a table of 8 slots every key shares one neighbourhood: the eviction policy shows. */
START_TEST(full_table_keeps_blocked_entries)
{
    qrt_tries_t *t = table(8);
    char addr[32];
    int i;

    fail_n(t, "198.51.100.7", 1, T0, LIMIT);
    ck_assert_int_eq(blocked(t, "198.51.100.7", 1, T0), 1);
    /* An attacker's many keys push one another out, never the blocked entry. */
    for (i = 0; i < 1000; i++) {
        snprintf(addr, sizeof(addr), "203.0.113.%d", i % 250);
        qrt_tries_fail(t, addr, 1000 + i, T0 + i % 50, MIN);
        ck_assert_int_eq(blocked(t, "198.51.100.7", 1, T0 + i % 50), 1);
    }
    ck_assert_int_eq(qrt_tries_active(t, T0 + 50, MIN), 8);
    ck_assert_int_eq(qrt_tries_dropped(t), 0);
    /* Blocked entries in every slot: a new key's try is dropped, none is unblocked. */
    for (i = 0; i < 7; i++) {
        snprintf(addr, sizeof(addr), "192.0.2.%d", i);
        fail_n(t, addr, 2, T0 + 50, LIMIT);
    }
    for (i = 0; i < 7; i++) {
        snprintf(addr, sizeof(addr), "192.0.2.%d", i);
        ck_assert_int_eq(blocked(t, addr, 2, T0 + 55), 1);
    }
    qrt_tries_fail(t, "192.0.2.99", 2, T0 + 55, MIN);
    ck_assert_int_eq(qrt_tries_dropped(t), 1);
    ck_assert_int_eq(blocked(t, "198.51.100.7", 1, T0 + 55), 1);
    /* Once the first block's window has passed, its slot serves again. */
    ck_assert_int_eq(blocked(t, "198.51.100.7", 1, T0 + 60), 0);
    fail_n(t, "192.0.2.99", 2, T0 + 60, LIMIT);
    ck_assert_int_eq(blocked(t, "192.0.2.99", 2, T0 + 60), 1);
    ck_assert_int_eq(qrt_tries_dropped(t), 1);
    free(t);
}
END_TEST

START_TEST(full_table_evicts_fewest_tries)
{
    qrt_tries_t *t = table(8);
    char addr[32];
    int i;

    /* Entries with 1..8 tries; a new key takes the slot of the one with a single try. */
    for (i = 0; i < 8; i++) {
        snprintf(addr, sizeof(addr), "192.0.2.%d", i);
        fail_n(t, addr, 5, T0 + i, i + 1);
    }
    qrt_tries_fail(t, "192.0.2.100", 5, T0 + 10, MIN);
    ck_assert_int_eq(qrt_tries_active(t, T0 + 10, MIN), 8);
    ck_assert_int_eq(qrt_tries_blocked(t, "192.0.2.0", 5, T0 + 10, 1, MIN), 0);
    for (i = 1; i < 8; i++) {
        snprintf(addr, sizeof(addr), "192.0.2.%d", i);
        ck_assert_int_eq(qrt_tries_blocked(t, addr, 5, T0 + 10, i + 1, MIN), 1);
    }
    /* Among equals the oldest latest try goes first: now 192.0.2.100 (1 try). */
    qrt_tries_fail(t, "192.0.2.101", 5, T0 + 11, MIN);
    ck_assert_int_eq(qrt_tries_blocked(t, "192.0.2.100", 5, T0 + 11, 1, MIN), 0);
    ck_assert_int_eq(qrt_tries_blocked(t, "192.0.2.101", 5, T0 + 11, 1, MIN), 1);
    /* Entries whose tries have left the window are taken before live ones. */
    qrt_tries_fail(t, "192.0.2.200", 5, T0 + 64, MIN);
    ck_assert_int_eq(qrt_tries_blocked(t, "192.0.2.200", 5, T0 + 64, 1, MIN), 1);
    ck_assert_int_eq(qrt_tries_blocked(t, "192.0.2.101", 5, T0 + 64, 1, MIN), 1);
    for (i = 5; i < 8; i++) {
        snprintf(addr, sizeof(addr), "192.0.2.%d", i);
        ck_assert_int_eq(qrt_tries_blocked(t, addr, 5, T0 + 64, i + 1, MIN), 1);
    }
    free(t);
}
END_TEST

START_TEST(big_table_holds_every_key)
{
    qrt_tries_t *t = table(4096);
    char addr[32];
    int i;

    /* Well below capacity, every key keeps its own count. */
    for (i = 0; i < 1000; i++) {
        snprintf(addr, sizeof(addr), "10.0.%d.%d", i / 256, i % 256);
        fail_n(t, addr, i % 3, T0, LIMIT);
    }
    for (i = 0; i < 1000; i++) {
        snprintf(addr, sizeof(addr), "10.0.%d.%d", i / 256, i % 256);
        ck_assert_int_eq(blocked(t, addr, i % 3, T0), 1);
        ck_assert_int_eq(blocked(t, addr, i % 3 + 1, T0), 0);
    }
    ck_assert_int_eq(qrt_tries_active(t, T0, MIN), 1000);
    ck_assert_int_eq(qrt_tries_dropped(t), 0);
    free(t);
}
END_TEST

static Suite *tries_suite(void)
{
    Suite *s = suite_create("qrt_tries");
    TCase *tc = tcase_create("tries");

    tcase_add_test(tc, limit_within_window);
    tcase_add_test(tc, tries_count_from_their_start);
    tcase_add_test(tc, window_slides);
    tcase_add_test(tc, sliding_not_fixed);
    tcase_add_test(tc, keys_independent);
    tcase_add_test(tc, odd_input);
    tcase_add_test(tc, full_table_keeps_blocked_entries);
    tcase_add_test(tc, full_table_evicts_fewest_tries);
    tcase_add_test(tc, big_table_holds_every_key);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(tries_suite());
}
