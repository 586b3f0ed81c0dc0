/* Unit tests for qrt_date. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>

#include "qrt_date.h"
#include "qrt_check.h"

#define DAY_9999_12_31 APR_INT64_C(2932896)
#define T_9999_END APR_INT64_C(253402300799)

static int parse_ok(const char *s, apr_int64_t want_t, int want_off)
{
    apr_int64_t t = 0;
    int off = 0;

    return qrt_date_parse(s, &t, &off) == 0 && t == want_t
           && off == want_off;
}

static int parse_bad(const char *s)
{
    apr_int64_t t = 12345;
    int off = 678;

    return qrt_date_parse(s, &t, &off) == -1 && t == 12345 && off == 678;
}

START_TEST(parse_known_values)
{
    ck_assert(parse_ok("1970-01-01T00:00:00+0000", 0, 0));
    ck_assert(parse_ok("1970-01-01T00:00:00Z", 0, 0));
    ck_assert(parse_ok("1970-01-01T00:00:01-0000", 1, 0));
    ck_assert(parse_ok("2026-11-20T10:00:00+0000", APR_INT64_C(1795168800),
                       0));
    ck_assert(parse_ok("2000-03-01T00:00:00Z", APR_INT64_C(951868800), 0));
    ck_assert(parse_ok("2038-01-19T03:14:08+00:00", APR_INT64_C(2147483648),
                       0));
    ck_assert(parse_ok("2024-02-29T12:34:56+0000", APR_INT64_C(1709210096),
                       0));
    ck_assert(parse_ok("9999-12-31T23:59:59Z", T_9999_END, 0));
}
END_TEST

START_TEST(parse_offsets)
{
    apr_int64_t base = APR_INT64_C(1704067200);   /* 2024-01-01T00:00Z */

    ck_assert(parse_ok("2024-01-01T02:00:00+0200", base, 7200));
    ck_assert(parse_ok("2024-01-01T02:00:00+02:00", base, 7200));
    ck_assert(parse_ok("2024-01-01T02:00:00 0200", base, 7200));
    ck_assert(parse_ok("2024-01-01T02:00:00 02:00", base, 7200));
    ck_assert(parse_ok("2023-12-31T18:30:00-0530", base, -19800));
    ck_assert(parse_ok("2023-12-31T18:30:00-05:30", base, -19800));
    ck_assert(parse_ok("2024-01-01T14:00:00+1400", base, 50400));
    ck_assert(parse_ok("2023-12-31T10:00:00-14:00", base, -50400));
    ck_assert(parse_ok("2024-01-01T00:45:00+0045", base, 2700));
    ck_assert(parse_ok("2024-01-01T00:00:00+0000", base, 0));
    ck_assert(parse_ok("2024-01-01T00:00:00-00:00", base, 0));
    ck_assert(parse_ok("2024-01-01T00:00:00 0000", base, 0));
    /* the extremes of the written range */
    ck_assert(parse_ok("9999-12-31T23:59:59-1400", T_9999_END + 50400,
                       -50400));
    ck_assert(parse_ok("9999-12-31T23:59:59+1400", T_9999_END - 50400,
                       50400));
    ck_assert(parse_ok("1970-01-01T00:00:00+1400", -50400, 50400));
    ck_assert(parse_ok("1970-01-01T00:00:00-1400", 50400, -50400));
}
END_TEST

START_TEST(parse_leap_days)
{
    apr_int64_t t;
    int off;

    ck_assert_int_eq(qrt_date_parse("2024-02-29T00:00:00+0000", &t, &off), 0);
    ck_assert_int_eq(qrt_date_parse("2000-02-29T00:00:00+0000", &t, &off), 0);
    ck_assert_int_eq(qrt_date_parse("1972-02-29T00:00:00+0000", &t, &off), 0);
    ck_assert_int_eq(qrt_date_parse("2400-02-29T00:00:00+0000", &t, &off), 0);
    ck_assert_int_eq(qrt_date_parse("9996-02-29T00:00:00+0000", &t, &off), 0);
    ck_assert(parse_bad("2023-02-29T00:00:00+0000"));
    ck_assert(parse_bad("2100-02-29T00:00:00+0000"));
    ck_assert(parse_bad("1900-02-29T00:00:00+0000"));
    ck_assert(parse_bad("9999-02-29T00:00:00+0000"));
    ck_assert(parse_bad("2024-02-30T00:00:00+0000"));
    ck_assert(parse_bad("2000-02-30T00:00:00+0000"));
}
END_TEST

START_TEST(parse_rejects)
{
    static const char *const bad[] = {
        "",
        "2024",
        "2024-01-01",
        "2024-01-01T00:00:00",              /* missing offset */
        "2024-01-01T00:00:00+",
        "2024-01-01T00:00:00+0",
        "2024-01-01T00:00:00+00",
        "2024-01-01T00:00:00+000",
        "2024-01-01T00:00:00+00:0",
        "2024-01-01T00:00:00+00000",
        "2024-01-01T00:00:00+00:000",
        "2024-01-01T00:00:00+0000 ",        /* trailing bytes */
        "2024-01-01T00:00:00+0000x",
        "2024-01-01T00:00:00Z ",
        "2024-01-01T00:00:00ZZ",
        "2024-01-01T00:00:00Z+0000",
        "2024-01-01T00:00:00z",             /* lowercase z */
        "2024-01-01t00:00:00+0000",         /* lowercase t */
        "2024-01-01 00:00:00+0000",         /* space instead of T */
        "2024-01-01T00:00:00.5+0000",       /* fractional seconds */
        "2024-01-01T00:00:00.000Z",
        "2024-01-01T00:00+0000",            /* no seconds */
        " 2024-01-01T00:00:00+0000",        /* leading space */
        "+2024-01-01T00:00:00+0000",
        "02024-01-01T00:00:00+0000",
        "2024-1-01T00:00:00+0000",
        "2024-01-1T00:00:00+0000",
        "2024-01-01T0:00:00+0000",
        "2024/01/01T00:00:00+0000",
        "2024-01-01T00-00-00+0000",
        "2024-01-01T00:00:00+00-00",
        "2024-01-01T00:00:00++0000",
        "2024-01-01T00:00:00--0000",
        "2024-01-01T00:00:00 +0000",
        "2024-01-01T00:00:00  0000",
        "2024-01-01T00:00:00\t0000",
        "2024-01-01T00:00:00+-100",
        "2024-01-01T00:00:00+ 100",
        "2024-01-01T00:00:00+1a00",
        "2024-01-01T00:00:00GMT",
        "2024-01-01T00:00:00UTC",
        "2024-01-01T00:00:00+0060",         /* offset minutes >= 60 */
        "2024-01-01T00:00:00+00:99",
        "2024-01-01T00:00:00+1401",         /* offset above 14:00 */
        "2024-01-01T00:00:00-14:01",
        "2024-01-01T00:00:00+1500",
        "2024-01-01T00:00:00+9999",
        "2024-01-01T24:00:00+0000",         /* hour, minute, second */
        "2024-01-01T99:00:00+0000",
        "2024-01-01T00:60:00+0000",
        "2024-01-01T00:00:60+0000",         /* no leap seconds */
        "2024-00-01T00:00:00+0000",         /* month, day */
        "2024-13-01T00:00:00+0000",
        "2024-01-00T00:00:00+0000",
        "2024-01-32T00:00:00+0000",
        "2024-04-31T00:00:00+0000",
        "2024-06-31T00:00:00+0000",
        "2024-09-31T00:00:00+0000",
        "2024-11-31T00:00:00+0000",
        "1969-12-31T23:59:59+0000",         /* years */
        "0000-01-01T00:00:00+0000",
        "10000-01-01T00:00:00+0000",
        "-001-01-01T00:00:00+0000",
        "2024-01-01T00:00:00+0000\n",
        "2024-01-01T00:00:00+0000\xff",
        "\xff\xfe\xfd\xfc-01-01T00:00:00+0000",
        "２０２４-01-01T00:00:00+0000",      /* fullwidth digits */
        "2024-01-01T00:00:00\xe2\x88\x92" "0100", /* U+2212 minus */
        "2024-01-01T00:00:00%2B0000",       /* still URL-encoded */
    };
    apr_size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(parse_bad(bad[i]), "accepted \"%s\"", bad[i]);
    }
    ck_assert_int_eq(qrt_date_parse(NULL, NULL, NULL), -1);
}
END_TEST

/* Every proper prefix of a valid string is rejected, and so is every
 * single-byte change to a byte that is not a digit in a digit position. */
START_TEST(parse_prefixes_and_mutations)
{
    static const char *const good[] = {
        "2024-02-29T23:59:59+0000",
        "2024-02-29T23:59:59-05:30",
        "2024-02-29T23:59:59 0530",
        "2024-02-29T23:59:59Z",
    };
    apr_size_t g, i;
    int c;

    for (g = 0; g < sizeof(good) / sizeof(good[0]); g++) {
        char buf[64];
        apr_size_t len = strlen(good[g]);

        ck_assert_int_eq(qrt_date_parse(good[g], NULL, NULL), 0);
        for (i = 0; i < len; i++) {
            memcpy(buf, good[g], i);
            buf[i] = '\0';
            ck_assert_msg(parse_bad(buf), "accepted prefix \"%s\"", buf);
        }
        for (i = 0; i < len; i++) {
            for (c = 1; c < 256; c++) {
                int ok;

                strcpy(buf, good[g]);
                if (c == (unsigned char)buf[i]) {
                    continue;
                }
                buf[i] = (char)c;
                ok = qrt_date_parse(buf, NULL, NULL) == 0;
                if (ok) {
                    /* only a digit for a digit, or another accepted
                     * offset sign, may still parse */
                    int was_digit = good[g][i] >= '0' && good[g][i] <= '9';
                    int is_digit = c >= '0' && c <= '9';
                    int sign_swap = i == 19 && (c == '+' || c == '-'
                                                || c == ' ');

                    ck_assert_msg((was_digit && is_digit) || sign_swap,
                                  "accepted mutation \"%s\"", buf);
                }
            }
        }
    }
}
END_TEST

START_TEST(parse_null_outputs)
{
    ck_assert_int_eq(qrt_date_parse("2024-01-01T00:00:00Z", NULL, NULL), 0);
    ck_assert_int_eq(qrt_date_parse_day("2024-01-01", NULL), 0);
}
END_TEST

static void check_format(apr_int64_t t, int off, const char *want)
{
    char buf[64];

    memset(buf, 'X', sizeof(buf));
    qrt_date_format(buf, t, off);
    ck_assert_str_eq(buf, want);
    ck_assert_uint_eq(strlen(buf), QRT_DATE_LEN - 1);
    /* nothing written past the NUL */
    ck_assert_int_eq(buf[QRT_DATE_LEN], 'X');
}

START_TEST(format_values)
{
    check_format(0, 0, "1970-01-01T00:00:00+0000");
    check_format(-1, 0, "1969-12-31T23:59:59+0000");
    check_format(0, 19800, "1970-01-01T05:30:00+0530");
    check_format(0, -19800, "1969-12-31T18:30:00-0530");
    check_format(APR_INT64_C(1704067200), 7200, "2024-01-01T02:00:00+0200");
    check_format(APR_INT64_C(1709210096), 0, "2024-02-29T12:34:56+0000");
    check_format(APR_INT64_C(1795168800), 0, "2026-11-20T10:00:00+0000");
    check_format(APR_INT64_C(951868800) - 1, 0, "2000-02-29T23:59:59+0000");
    check_format(T_9999_END, 0, "9999-12-31T23:59:59+0000");
    check_format(T_9999_END + 50400, -50400, "9999-12-31T23:59:59-1400");
    check_format(-APR_INT64_C(62167219200), 0, "0000-01-01T00:00:00+0000");
}
END_TEST

START_TEST(format_clamps)
{
    /* local times outside 0000..9999 clamp instead of overflowing */
    check_format(T_9999_END + 1, 0, "9999-12-31T23:59:59+0000");
    check_format(T_9999_END + 50400, 0, "9999-12-31T23:59:59+0000");
    check_format(APR_INT64_MAX, 0, "9999-12-31T23:59:59+0000");
    check_format(APR_INT64_MAX, 50400, "9999-12-31T23:59:59+1400");
    check_format(APR_INT64_MAX, -50400, "9999-12-31T23:59:59-1400");
    check_format(APR_INT64_MIN, 0, "0000-01-01T00:00:00+0000");
    check_format(APR_INT64_MIN, -50400, "0000-01-01T00:00:00-1400");
    check_format(-APR_INT64_C(62167219201), 0, "0000-01-01T00:00:00+0000");
    /* offsets: whole minutes toward zero, at most 14:00 */
    check_format(0, 90, "1970-01-01T00:01:00+0001");
    check_format(0, -90, "1969-12-31T23:59:00-0001");
    check_format(0, 59, "1970-01-01T00:00:00+0000");
    check_format(0, -59, "1970-01-01T00:00:00+0000");
    check_format(0, 50460, "1970-01-01T14:00:00+1400");
    check_format(0, 2147483647, "1970-01-01T14:00:00+1400");
    check_format(0, -2147483647 - 1, "1969-12-31T10:00:00-1400");
}
END_TEST

START_TEST(clamp_to_utc_years)
{
    apr_int64_t t;
    char buf[QRT_DATE_LEN], again[QRT_DATE_LEN];

    ck_assert_int_eq(QRT_DATE_T_MAX, T_9999_END);
    ck_assert_int_eq(qrt_date_clamp(-1), 0);
    ck_assert_int_eq(qrt_date_clamp(APR_INT64_MIN), 0);
    ck_assert_int_eq(qrt_date_clamp(0), 0);
    ck_assert_int_eq(qrt_date_clamp(T_9999_END), T_9999_END);
    ck_assert_int_eq(qrt_date_clamp(T_9999_END + 1), T_9999_END);
    ck_assert_int_eq(qrt_date_clamp(APR_INT64_MAX), T_9999_END);
    ck_assert_int_eq(qrt_date_clamp(1778630400), 1778630400);
    /* every time parsed, clamped and written in UTC parses back to itself */
    ck_assert_int_eq(qrt_date_parse("1970-01-01T00:00:00+0100", &t, NULL), 0);
    ck_assert_int_eq(t, -3600);
    qrt_date_format(buf, qrt_date_clamp(t), 0);
    ck_assert_str_eq(buf, "1970-01-01T00:00:00+0000");
    ck_assert_int_eq(qrt_date_parse("9999-12-31T23:59:59-1400", &t, NULL), 0);
    qrt_date_format(buf, qrt_date_clamp(t), 0);
    ck_assert_str_eq(buf, "9999-12-31T23:59:59+0000");
    ck_assert_int_eq(qrt_date_parse(buf, &t, NULL), 0);
    qrt_date_format(again, qrt_date_clamp(t), 0);
    ck_assert_str_eq(again, buf);
}
END_TEST

START_TEST(round_trips)
{
    static const char *const in[][2] = {
        { "2024-01-01T02:00:00+02:00", "2024-01-01T02:00:00+0200" },
        { "2024-01-01T02:00:00 0200", "2024-01-01T02:00:00+0200" },
        { "2024-01-01T02:00:00 02:00", "2024-01-01T02:00:00+0200" },
        { "2024-01-01T02:00:00+0200", "2024-01-01T02:00:00+0200" },
        { "2024-01-01T02:00:00Z", "2024-01-01T02:00:00+0000" },
        { "2024-01-01T02:00:00-00:00", "2024-01-01T02:00:00+0000" },
        { "2023-12-31T18:30:00-05:30", "2023-12-31T18:30:00-0530" },
        { "2024-02-29T23:59:59-1400", "2024-02-29T23:59:59-1400" },
        { "2024-03-01T00:00:00+14:00", "2024-03-01T00:00:00+1400" },
        { "9999-12-31T23:59:59-1400", "9999-12-31T23:59:59-1400" },
        { "1970-01-01T00:00:00+1400", "1970-01-01T00:00:00+1400" },
        { "2000-02-29T12:00:00+0545", "2000-02-29T12:00:00+0545" },
    };
    apr_size_t i;

    for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
        apr_int64_t t;
        int off;
        char buf[QRT_DATE_LEN];

        ck_assert_int_eq(qrt_date_parse(in[i][0], &t, &off), 0);
        qrt_date_format(buf, t, off);
        ck_assert_str_eq(buf, in[i][1]);
        /* and the canonical form parses to the same instant */
        {
            apr_int64_t t2;
            int off2;

            ck_assert_int_eq(qrt_date_parse(buf, &t2, &off2), 0);
            ck_assert(t2 == t);
            ck_assert_int_eq(off2, off);
        }
    }
}
END_TEST

/* Every second-of-day and a spread of instants through the whole range
 * survive format -> parse in every quarter-hour offset. */
START_TEST(round_trip_sweep)
{
    apr_int64_t t;
    int off;
    char buf[QRT_DATE_LEN];

    for (t = APR_INT64_C(1709164800); t < APR_INT64_C(1709164800) + 86400;
         t += 7) {
        apr_int64_t back;
        int boff;

        qrt_date_format(buf, t, -19800);
        ck_assert_int_eq(qrt_date_parse(buf, &back, &boff), 0);
        ck_assert(back == t && boff == -19800);
    }
    for (t = 50400; t <= T_9999_END - 50400; t += APR_INT64_C(86399) * 97) {
        for (off = -50400; off <= 50400; off += 900) {
            apr_int64_t back;
            int boff;

            qrt_date_format(buf, t, off);
            ck_assert_msg(qrt_date_parse(buf, &back, &boff) == 0, "%s", buf);
            ck_assert(back == t && boff == off);
        }
    }
}
END_TEST

/* Walks every day from 0000-01-01 to 9999-12-31 with a naive calendar and
 * checks both conversions, the day parser and the day formatter. */
START_TEST(every_day)
{
    static const int dim[12] = { 31, 28, 31, 30, 31, 30,
                                 31, 31, 30, 31, 30, 31 };
    apr_int64_t days = -APR_INT64_C(719528);
    int y, m, d;

    for (y = 0; y <= 9999; y++) {
        int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

        for (m = 1; m <= 12; m++) {
            int n = dim[m - 1] + (m == 2 && leap);

            for (d = 1; d <= n; d++, days++) {
                apr_int64_t yy, parsed;
                int mm, dd;
                char buf[QRT_DAY_LEN], want[QRT_DAY_LEN + 8];

                if (qrt_date_days_from_civil(y, m, d) != days) {
                    ck_abort_msg("days_from_civil %d-%d-%d", y, m, d);
                }
                qrt_date_civil_from_days(days, &yy, &mm, &dd);
                if (yy != y || mm != m || dd != d) {
                    ck_abort_msg("civil_from_days %d-%d-%d", y, m, d);
                }
                qrt_date_format_day(buf, days);
                want[0] = (char)('0' + y / 1000);
                want[1] = (char)('0' + y / 100 % 10);
                want[2] = (char)('0' + y / 10 % 10);
                want[3] = (char)('0' + y % 10);
                want[4] = '-';
                want[5] = (char)('0' + m / 10);
                want[6] = (char)('0' + m % 10);
                want[7] = '-';
                want[8] = (char)('0' + d / 10);
                want[9] = (char)('0' + d % 10);
                want[10] = '\0';
                if (strcmp(buf, want) != 0) {
                    ck_abort_msg("format_day %s != %s", buf, want);
                }
                if (y >= 1970) {
                    if (qrt_date_parse_day(want, &parsed) != 0
                        || parsed != days) {
                        ck_abort_msg("parse_day %s", want);
                    }
                }
                else if (qrt_date_parse_day(want, &parsed) != -1) {
                    ck_abort_msg("parse_day accepted %s", want);
                }
            }
        }
    }
    ck_assert(days == DAY_9999_12_31 + 1);
}
END_TEST

START_TEST(parse_day_cases)
{
    apr_int64_t days = 77;

    ck_assert_int_eq(qrt_date_parse_day("1970-01-01", &days), 0);
    ck_assert(days == 0);
    ck_assert_int_eq(qrt_date_parse_day("2024-01-01", &days), 0);
    ck_assert(days == 19723);
    ck_assert_int_eq(qrt_date_parse_day("9999-12-31", &days), 0);
    ck_assert(days == DAY_9999_12_31);
    ck_assert_int_eq(qrt_date_parse_day("2024-02-29", &days), 0);
    ck_assert_int_eq(qrt_date_parse_day("2000-02-29", &days), 0);
    days = 77;
    ck_assert_int_eq(qrt_date_parse_day("2023-02-29", &days), -1);
    ck_assert_int_eq(qrt_date_parse_day("2100-02-29", &days), -1);
    ck_assert_int_eq(qrt_date_parse_day("1969-12-31", &days), -1);
    ck_assert_int_eq(qrt_date_parse_day("10000-01-01", &days), -1);
    ck_assert_int_eq(qrt_date_parse_day("2024-01-01T00:00:00Z", &days), -1);
    ck_assert_int_eq(qrt_date_parse_day("2024-01-01 ", &days), -1);
    ck_assert_int_eq(qrt_date_parse_day(" 2024-01-01", &days), -1);
    ck_assert_int_eq(qrt_date_parse_day("2024-1-1", &days), -1);
    ck_assert_int_eq(qrt_date_parse_day("20240101", &days), -1);
    ck_assert_int_eq(qrt_date_parse_day("2024-01", &days), -1);
    ck_assert_int_eq(qrt_date_parse_day("2024-13-01", &days), -1);
    ck_assert_int_eq(qrt_date_parse_day("2024-00-10", &days), -1);
    ck_assert_int_eq(qrt_date_parse_day("2024-01-00", &days), -1);
    ck_assert_int_eq(qrt_date_parse_day("2024-04-31", &days), -1);
    ck_assert_int_eq(qrt_date_parse_day("", &days), -1);
    ck_assert_int_eq(qrt_date_parse_day(NULL, &days), -1);
    ck_assert(days == 77);
}
END_TEST

START_TEST(format_day_clamps)
{
    char buf[32];

    memset(buf, 'X', sizeof(buf));
    qrt_date_format_day(buf, 0);
    ck_assert_str_eq(buf, "1970-01-01");
    ck_assert_int_eq(buf[QRT_DAY_LEN], 'X');
    qrt_date_format_day(buf, -1);
    ck_assert_str_eq(buf, "1969-12-31");
    qrt_date_format_day(buf, DAY_9999_12_31 + 1);
    ck_assert_str_eq(buf, "9999-12-31");
    qrt_date_format_day(buf, APR_INT64_MAX);
    ck_assert_str_eq(buf, "9999-12-31");
    qrt_date_format_day(buf, APR_INT64_MIN);
    ck_assert_str_eq(buf, "0000-01-01");
    ck_assert_int_eq(buf[QRT_DAY_LEN], 'X');
}
END_TEST

START_TEST(day_of_values)
{
    apr_int64_t jan1 = APR_INT64_C(1704067200);   /* 2024-01-01T00:00Z */

    ck_assert(qrt_date_day_of(0, 0) == 0);
    ck_assert(qrt_date_day_of(86399, 0) == 0);
    ck_assert(qrt_date_day_of(86400, 0) == 1);
    ck_assert(qrt_date_day_of(-1, 0) == -1);
    ck_assert(qrt_date_day_of(-86400, 0) == -1);
    ck_assert(qrt_date_day_of(-86401, 0) == -2);
    /* a negative offset moves an early UTC time to the previous day */
    ck_assert(qrt_date_day_of(jan1, -3600) == 19722);
    ck_assert(qrt_date_day_of(jan1 + 3599, -3600) == 19722);
    ck_assert(qrt_date_day_of(jan1 + 3600, -3600) == 19723);
    ck_assert(qrt_date_day_of(jan1 + 50399, -50400) == 19722);
    /* a positive one moves a late UTC time to the next day */
    ck_assert(qrt_date_day_of(jan1 - 1, 3600) == 19723);
    ck_assert(qrt_date_day_of(jan1 - 3601, 3600) == 19722);
    ck_assert(qrt_date_day_of(jan1 - 1, 0) == 19722);
    /* near the epoch, below zero */
    ck_assert(qrt_date_day_of(0, -1) == -1);
    ck_assert(qrt_date_day_of(3600, -7200) == -1);
    ck_assert(qrt_date_day_of(-50400, 50400) == 0);
    /* the parsed extremes */
    ck_assert(qrt_date_day_of(T_9999_END + 50400, -50400) == DAY_9999_12_31);
    ck_assert(qrt_date_day_of(T_9999_END + 50400, 0) == DAY_9999_12_31 + 1);
    /* saturates instead of overflowing */
    ck_assert(qrt_date_day_of(APR_INT64_MAX, 50400)
              == APR_INT64_MAX / 86400);
    ck_assert(qrt_date_day_of(APR_INT64_MIN, -50400)
              == APR_INT64_MIN / 86400 - 1);
    ck_assert(qrt_date_day_of(APR_INT64_MAX, -50400)
              == (APR_INT64_MAX - 50400) / 86400);
}
END_TEST

/* day_of agrees with the date that format prints in the same offset. */
START_TEST(day_of_matches_format)
{
    apr_int64_t t;
    int off;

    for (t = -200000; t < 200000; t += 1799) {
        for (off = -50400; off <= 50400; off += 1800) {
            char buf[QRT_DATE_LEN], day[QRT_DAY_LEN];

            qrt_date_format(buf, t, off);
            qrt_date_format_day(day, qrt_date_day_of(t, off));
            ck_assert_msg(strncmp(buf, day, 10) == 0, "%s vs %s", buf, day);
        }
    }
}
END_TEST

static Suite *date_suite(void)
{
    Suite *s = suite_create("qrt_date");
    TCase *tc = tcase_create("date");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, parse_known_values);
    tcase_add_test(tc, parse_offsets);
    tcase_add_test(tc, parse_leap_days);
    tcase_add_test(tc, parse_rejects);
    tcase_add_test(tc, parse_prefixes_and_mutations);
    tcase_add_test(tc, parse_null_outputs);
    tcase_add_test(tc, format_values);
    tcase_add_test(tc, format_clamps);
    tcase_add_test(tc, clamp_to_utc_years);
    tcase_add_test(tc, round_trips);
    tcase_add_test(tc, round_trip_sweep);
    tcase_add_test(tc, every_day);
    tcase_add_test(tc, parse_day_cases);
    tcase_add_test(tc, format_day_clamps);
    tcase_add_test(tc, day_of_values);
    tcase_add_test(tc, day_of_matches_format);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(date_suite());
}
