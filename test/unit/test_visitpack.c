/* Unit tests for qrt_visitpack: visits through the bytes of a queue slot. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>

#include "qrt_visitpack.h"
#include "qrt_check.h"

QRT_CHECK_POOL

static qrt_visit_t sample(void)
{
    qrt_visit_t v;

    memset(&v, 0, sizeof(v));
    v.tracker_id = 42;
    v.visit_start = 1795000000;
    v.source = "scan";
    v.ip = "203.0.113.0";
    v.country = "DE";
    v.city = "M\xc3\xbcnchen";
    v.browser = "Mobile Safari";
    v.browser_version = "17.0";
    v.os = "iOS";
    v.device = "mobile";
    v.referer = NULL;
    v.user_agent = "Mozilla/5.0 (iPhone)";
    v.bot = 1;
    v.visitor = (apr_int64_t)APR_UINT64_C(0x0123456789abcdef);
    v.destination = "https://example.com/a";
    v.over_destination = NULL;
    v.capped = QRT_VISIT_CAP_COUNT;
    return v;
}

static void same(const char *a, const char *b)
{
    if (!a || !b) {
        ck_assert_ptr_eq(a, b);
    }
    else {
        ck_assert_str_eq(a, b);
    }
}

static void assert_same(const qrt_visit_t *a, const qrt_visit_t *b)
{
    ck_assert_int_eq(a->tracker_id, b->tracker_id);
    ck_assert_int_eq(a->visit_start, b->visit_start);
    ck_assert_int_eq(a->bot, b->bot);
    same(a->source, b->source);
    same(a->ip, b->ip);
    same(a->country, b->country);
    same(a->city, b->city);
    same(a->browser, b->browser);
    same(a->browser_version, b->browser_version);
    same(a->os, b->os);
    same(a->device, b->device);
    same(a->referer, b->referer);
    same(a->user_agent, b->user_agent);
    ck_assert_int_eq(a->visitor, b->visitor);
    same(a->destination, b->destination);
    same(a->over_destination, b->over_destination);
    ck_assert_int_eq(a->capped, b->capped);
}

START_TEST(round_trip)
{
    qrt_visit_t v = sample(), w;
    char buf[8192];
    apr_size_t n = qrt_visit_pack(buf, sizeof(buf), &v);

    ck_assert_uint_gt(n, 0);
    ck_assert_int_eq(qrt_visit_unpack(pool, buf, n, &w), 0);
    assert_same(&v, &w);
    /* empty strings stay empty, NULLs stay NULL */
    v.country = "";
    v.city = NULL;
    n = qrt_visit_pack(buf, sizeof(buf), &v);
    ck_assert_int_eq(qrt_visit_unpack(pool, buf, n, &w), 0);
    assert_same(&v, &w);
}
END_TEST

/* Too long for the buffer as a whole: every string is cut to 255 bytes, on a
 * character boundary. */
START_TEST(long_strings_are_cut)
{
    qrt_visit_t v = sample(), w;
    char buf[QRT_VISITPACK_MIN_SIZE], *big = malloc(5001);
    apr_size_t n, i;

    for (i = 0; i < 5000; i += 2) {
        big[i] = '\xc3';          /* "é" repeated: cutting at 255 would split one */
        big[i + 1] = '\xa9';
    }
    big[5000] = '\0';
    v.referer = big;
    v.user_agent = big;
    v.os = big;
    n = qrt_visit_pack(buf, sizeof(buf), &v);
    ck_assert_uint_gt(n, 0);
    ck_assert_int_eq(qrt_visit_unpack(pool, buf, n, &w), 0);
    ck_assert_uint_eq(strlen(w.referer), 254);
    ck_assert_int_eq(strncmp(w.referer, big, 254), 0);
    ck_assert_uint_eq(strlen(w.user_agent), 254);
    ck_assert_uint_eq(strlen(w.os), 254);
    ck_assert_int_eq(w.visitor, v.visitor);
    ck_assert_int_eq(w.tracker_id, 42);
    /* with room, nothing is cut */
    {
        char *room = malloc(65536);

        n = qrt_visit_pack(room, 65536, &v);
        ck_assert_int_eq(qrt_visit_unpack(pool, room, n, &w), 0);
        ck_assert_str_eq(w.referer, big);
        free(room);
    }
    free(big);
}
END_TEST

START_TEST(too_small)
{
    qrt_visit_t v = sample();
    char buf[16];

    ck_assert_uint_eq(qrt_visit_pack(buf, sizeof(buf), &v), 0);
}
END_TEST

/* Every prefix of a packed visit, and one byte more, is refused. */
START_TEST(truncated_or_padded_bytes)
{
    qrt_visit_t v = sample(), w;
    char buf[8192];
    apr_size_t n = qrt_visit_pack(buf, sizeof(buf), &v), k;

    for (k = 0; k < n; k++) {
        ck_assert_int_eq(qrt_visit_unpack(pool, buf, k, &w), -1);
    }
    ck_assert_int_eq(qrt_visit_unpack(pool, buf, n + 1, &w), -1);
}
END_TEST

/* Bytes qrt_visit_pack never writes are refused: a NUL inside a string, a string
 * longer than QRT_VISITPACK_STR_MAX. */
START_TEST(foreign_bytes)
{
    qrt_visit_t v = sample(), w;
    char buf[QRT_VISITPACK_STR_MAX + 512];
    apr_size_t n, fixed = 8 + 8 + sizeof(int) + 8;     /* ids, time, bot, visitor */
    apr_uint16_t len;
    char *s;

    v.source = "scan";
    n = qrt_visit_pack(buf, sizeof(buf), &v);
    ck_assert_int_gt(n, 0);
    ck_assert_int_eq(qrt_visit_unpack(pool, buf, n, &w), 0);
    /* "scan" -> "s\0an" */
    buf[fixed + 2 + 1] = '\0';
    ck_assert_int_eq(qrt_visit_unpack(pool, buf, n, &w), -1);

    s = apr_palloc(pool, QRT_VISITPACK_STR_MAX + 2);
    memset(s, 'a', QRT_VISITPACK_STR_MAX + 1);
    s[QRT_VISITPACK_STR_MAX + 1] = '\0';
    memset(&v, 0, sizeof(v));
    v.source = "scan";
    n = qrt_visit_pack(buf, sizeof(buf), &v);
    /* The first string's length raised past the maximum, its bytes there. */
    len = QRT_VISITPACK_STR_MAX + 1;
    memcpy(buf + fixed, &len, 2);
    memcpy(buf + fixed + 2, s, len);
    ck_assert_int_eq(qrt_visit_unpack(pool, buf, fixed + 2 + len + 10 * 2 + 1 + 2 * 2, &w), -1);
}
END_TEST

/* A visit as earlier versions packed it (spool files): without the cap flag and the
 * destinations. qrt_visit_unpack_any reads it; qrt_visit_unpack does not. */
START_TEST(the_older_form_reads)
{
    qrt_visit_t v = sample(), w;
    char buf[8192];
    apr_size_t n, old;

    v.destination = NULL;
    v.over_destination = NULL;
    v.capped = 0;
    n = qrt_visit_pack(buf, sizeof(buf), &v);
    old = n - 1 - 2 - 2;            /* the flag and two NULL strings */
    ck_assert_int_eq(qrt_visit_unpack(pool, buf, old, &w), -1);
    ck_assert_int_eq(qrt_visit_unpack_any(pool, buf, old, &w), 0);
    assert_same(&v, &w);
    ck_assert_int_eq(qrt_visit_unpack_any(pool, buf, n, &w), 0);
    assert_same(&v, &w);
    /* an unknown cap flag is refused */
    v = sample();
    n = qrt_visit_pack(buf, sizeof(buf), &v);
    buf[n - (2 + strlen(v.destination)) - 2 - 1] = 7;
    ck_assert_int_eq(qrt_visit_unpack(pool, buf, n, &w), -1);
}
END_TEST

static Suite *visitpack_suite(void)
{
    Suite *s = suite_create("qrt_visitpack");
    TCase *tc = tcase_create("visitpack");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, long_strings_are_cut);
    tcase_add_test(tc, too_small);
    tcase_add_test(tc, truncated_or_padded_bytes);
    tcase_add_test(tc, foreign_bytes);
    tcase_add_test(tc, the_older_form_reads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(visitpack_suite());
}
