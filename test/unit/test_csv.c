/* Unit tests for qrt_csv. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>
#include <apr_tables.h>

#include "qrt_csv.h"
#include "qrt_valid.h"
#include "qrt_check.h"

#define FFFD "\xEF\xBF\xBD"

QRT_CHECK_POOL

static void cell_is(const char *in, const char *want)
{
    const char *got = qrt_csv_cell(pool, in);

    ck_assert_msg(strcmp(got, want) == 0, "cell(\"%s\") = [%s], want [%s]",
                  in ? in : "(null)", got, want);
}

START_TEST(plain_cells)
{
    cell_is(NULL, "");
    cell_is("", "");
    cell_is("abc", "abc");
    cell_is("a b", "a b");
    cell_is("Zürich", "Zürich");
    cell_is("東京 😀", "東京 😀");
    cell_is("'", "'");
    cell_is("'quoted'", "'quoted'");
    cell_is("5", "5");
    cell_is("2024-01-01T00:00:00+0000", "2024-01-01T00:00:00+0000");
    cell_is("203.0.113.0", "203.0.113.0");
    cell_is("2001:db8::", "2001:db8::");
    cell_is("a=b", "a=b");
    cell_is("a-b", "a-b");
    cell_is("x@y", "x@y");
    cell_is("in\tside", "in\tside");
    cell_is("Mozilla/5.0 (X11; Linux x86_64)", "Mozilla/5.0 (X11; Linux x86_64)");
}
END_TEST

START_TEST(quoted_cells)
{
    cell_is("a,b", "\"a,b\"");
    cell_is(",", "\",\"");
    cell_is("a\"b", "\"a\"\"b\"");
    cell_is("\"", "\"\"\"\"");
    cell_is("\"\"", "\"\"\"\"\"\"");
    cell_is("say \"hi\", ok", "\"say \"\"hi\"\", ok\"");
    cell_is("line\nbreak", "\"line\nbreak\"");
    cell_is("cr\rhere", "\"cr\rhere\"");
    cell_is("crlf\r\n", "\"crlf\r\n\"");
    cell_is("\n", "\"\n\"");
    cell_is(" lead", "\" lead\"");
    cell_is("trail ", "\"trail \"");
    cell_is("trail\t", "\"trail\t\"");
    cell_is(" ", "\" \"");
    cell_is("Mozilla/5.0 (KHTML, like Gecko)", "\"Mozilla/5.0 (KHTML, like Gecko)\"");
}
END_TEST

START_TEST(formula_guard)
{
    cell_is("=cmd", "\"'=cmd\"");
    cell_is("=1+2", "\"'=1+2\"");
    cell_is("=HYPERLINK(\"http://x\",\"y\")",
            "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\"");
    cell_is("+1", "\"'+1\"");
    cell_is("+49 30 1234", "\"'+49 30 1234\"");
    cell_is("-5", "\"'-5\"");
    cell_is("-", "\"'-\"");
    cell_is("@x", "\"'@x\"");
    cell_is("@SUM(A1)", "\"'@SUM(A1)\"");
    cell_is("\tx", "\"'\tx\"");
    cell_is("\rx", "\"'\rx\"");
    cell_is("\r", "\"'\r\"");
    cell_is("=", "\"'=\"");
    cell_is("=a,b\nc\"d", "\"'=a,b\nc\"\"d\"");
    /* a guard character later in the value is harmless */
    cell_is("a=cmd", "a=cmd");
    cell_is("1-2", "1-2");
    /* and only the first byte counts, after cleaning */
    cell_is("\xff=cmd", FFFD "=cmd");
    cell_is("=\xff", "\"'=" FFFD "\"");
}
END_TEST

START_TEST(invalid_utf8)
{
    cell_is("\xff", FFFD);
    cell_is("a\xff" "b", "a" FFFD "b");
    cell_is("a\xC3", "a" FFFD);
    cell_is("\xC3" "A", FFFD "A");
    cell_is("\xE2\x82" "x", FFFD "x");                  /* one subpart */
    cell_is("\xF0\x9F\x98" "A", FFFD "A");
    cell_is("\xC0\xAF", FFFD FFFD);                    /* overlong */
    cell_is("\xE0\x80\xAF", FFFD FFFD FFFD);
    cell_is("\xED\xA0\x80", FFFD FFFD FFFD);           /* surrogate */
    cell_is("\xF4\x90\x80\x80", FFFD FFFD FFFD FFFD);  /* > U+10FFFF */
    cell_is("\xF8\x88\x80\x80\x80", FFFD FFFD FFFD FFFD FFFD);
    cell_is("\x80\x80", FFFD FFFD);
    cell_is("ok\xC3\xA9\xC3", "ok\xC3\xA9" FFFD);
    cell_is("a,\xff", "\"a," FFFD "\"");
    cell_is(FFFD, FFFD);
}
END_TEST

START_TEST(clean)
{
    ck_assert_str_eq(qrt_csv_utf8_clean(pool, NULL, 5), "");
    ck_assert_str_eq(qrt_csv_utf8_clean(pool, "", 0), "");
    ck_assert_str_eq(qrt_csv_utf8_clean(pool, "abc", 3), "abc");
    ck_assert_str_eq(qrt_csv_utf8_clean(pool, "abc", 2), "ab");
    /* embedded NUL through len */
    ck_assert_str_eq(qrt_csv_utf8_clean(pool, "a\0b", 3), "a" FFFD "b");
    ck_assert_str_eq(qrt_csv_utf8_clean(pool, "\0\0", 2), FFFD FFFD);
    /* a sequence cut by len */
    ck_assert_str_eq(qrt_csv_utf8_clean(pool, "\xC3\xA9", 1), FFFD);
    ck_assert_str_eq(qrt_csv_utf8_clean(pool, "\xF0\x9F\x98\x80", 3), FFFD);
    ck_assert_str_eq(qrt_csv_utf8_clean(pool, "\xF0\x9F\x98\x80", 4),
                     "\xF0\x9F\x98\x80");
    /* the worst case growth: every byte becomes three */
    {
        char in[300], want[900 + 1];
        int i;

        for (i = 0; i < 300; i++) {
            in[i] = (char)0xFF;
            memcpy(want + 3 * i, FFFD, 3);
        }
        want[900] = '\0';
        ck_assert_str_eq(qrt_csv_utf8_clean(pool, in, 300), want);
    }
}
END_TEST

START_TEST(rows)
{
    static const char *const header[] = {
        "id", "visit_start", "source", "tracker_id", "tracker_name", "ip",
        "country", "city", "browser", "browser_version", "os", "device",
        "referer", "user_agent", "bot"
    };
    const char *cells[] = { "1", NULL, "b,c", "=x", "", "q\"" };

    ck_assert_str_eq(qrt_csv_row(pool, header, 15),
                     "id,visit_start,source,tracker_id,tracker_name,ip,"
                     "country,city,browser,browser_version,os,device,"
                     "referer,user_agent,bot\r\n");
    ck_assert_str_eq(qrt_csv_row(pool, cells, 6),
                     "1,,\"b,c\",\"'=x\",,\"q\"\"\"\r\n");
    ck_assert_str_eq(qrt_csv_row(pool, cells, 1), "1\r\n");
    ck_assert_str_eq(qrt_csv_row(pool, cells, 2), "1,\r\n");
    ck_assert_str_eq(qrt_csv_row(pool, cells, 0), "\r\n");
    ck_assert_str_eq(qrt_csv_row(pool, cells, -3), "\r\n");
    ck_assert_str_eq(qrt_csv_row(pool, NULL, 3), ",,\r\n");
    ck_assert_str_eq(qrt_csv_row(pool, NULL, 0), "\r\n");
}
END_TEST

/* A reference RFC 4180 reader for one row: returns the fields, or NULL if
 * the text is not exactly one well-formed record ending in CRLF. */
static apr_array_header_t *read_row(const char *s)
{
    apr_array_header_t *out = apr_array_make(pool, 8, sizeof(char *));
    apr_size_t len = strlen(s), i = 0;

    if (len < 2 || s[len - 2] != '\r' || s[len - 1] != '\n') {
        return NULL;
    }
    len -= 2;
    for (;;) {
        char *f = apr_palloc(pool, len + 1);
        apr_size_t o = 0;

        if (i < len && s[i] == '"') {
            i++;
            for (;;) {
                if (i >= len) {
                    return NULL;            /* unterminated */
                }
                if (s[i] == '"') {
                    if (i + 1 < len && s[i + 1] == '"') {
                        f[o++] = '"';
                        i += 2;
                        continue;
                    }
                    i++;
                    break;
                }
                f[o++] = s[i++];
            }
            if (i < len && s[i] != ',') {
                return NULL;
            }
        }
        else {
            while (i < len && s[i] != ',') {
                if (s[i] == '"' || s[i] == '\r' || s[i] == '\n') {
                    return NULL;            /* must have been quoted */
                }
                f[o++] = s[i++];
            }
        }
        f[o] = '\0';
        APR_ARRAY_PUSH(out, char *) = f;
        if (i >= len) {
            return out;
        }
        i++;                                /* the comma */
    }
}

/* What a reader must get back for a value: cleaned, guarded. */
static const char *expected(const char *v)
{
    const char *c;

    if (!v) {
        return "";
    }
    c = qrt_csv_utf8_clean(pool, v, strlen(v));
    if (c[0] && strchr("=+-@\t\r", c[0])) {
        return apr_pstrcat(pool, "'", c, NULL);
    }
    return c;
}

START_TEST(random_round_trip)
{
    static const char alphabet[] = "a ,\"\r\n\t=+-@'\xC3\xA9\xff\x80\xE2";
    unsigned int seed = 4242;
    int n;

    for (n = 0; n < 20000; n++) {
        const char *cells[5];
        apr_array_header_t *got;
        const char *row;
        int i, j;

        for (i = 0; i < 5; i++) {
            int len;
            char *v;

            seed = seed * 1103515245 + 12345;
            len = (int)((seed >> 16) % 8);
            v = apr_palloc(pool, len + 1);
            for (j = 0; j < len; j++) {
                seed = seed * 1103515245 + 12345;
                v[j] = alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
            }
            v[len] = '\0';
            cells[i] = (seed & 0x100000) ? v : (len ? v : NULL);
        }
        row = qrt_csv_row(pool, cells, 5);
        ck_assert_ptr_null(qrt_valid_text(row, strlen(row), 1));
        got = read_row(row);
        ck_assert_msg(got != NULL, "unreadable row [%s]", row);
        ck_assert_int_eq(got->nelts, 5);
        for (i = 0; i < 5; i++) {
            ck_assert_str_eq(APR_ARRAY_IDX(got, i, char *), expected(cells[i]));
        }
        if ((n & 255) == 0) {
            apr_pool_clear(pool);
        }
    }
}
END_TEST

START_TEST(long_cell)
{
    apr_size_t n = 1 << 20;
    char *v = apr_palloc(pool, n + 1);
    const char *c;
    apr_size_t i;

    for (i = 0; i < n; i++) {
        v[i] = '"';
    }
    v[n] = '\0';
    c = qrt_csv_cell(pool, v);
    ck_assert_uint_eq(strlen(c), 2 * n + 2);
    v[0] = '=';
    c = qrt_csv_cell(pool, v);
    ck_assert_uint_eq(strlen(c), 2 * (n - 1) + 2 + 2);
}
END_TEST

/* Reads all of s; returns the records as "a|b|c" joined by "\n", errors as "!E<line>". */
static const char *read_all(const char *s, apr_size_t len, apr_size_t max_record,
                            int max_fields)
{
    qrt_csv_reader_t *rd = qrt_csv_reader_make(pool, s, len, max_record, max_fields);
    const char *out = "", **f, *err;
    apr_status_t rv;
    int n, i, line;

    while ((rv = qrt_csv_read(rd, pool, &f, &n, &line, &err)) != APR_EOF) {
        if (rv != APR_SUCCESS) {
            ck_assert_ptr_nonnull(err);
            out = apr_psprintf(pool, "%s!%s%d\n", out, rv == APR_ENOSPC ? "S" : "E", line);
            continue;
        }
        out = apr_psprintf(pool, "%s%d:", out, line);
        for (i = 0; i < n; i++) {
            out = apr_pstrcat(pool, out, i ? "|" : "", f[i], NULL);
        }
        out = apr_pstrcat(pool, out, "\n", NULL);
    }
    return out;
}

#define READS(in, want) ck_assert_str_eq(read_all(in, strlen(in), 1000, 50), want)

START_TEST(reader_basic)
{
    READS("", "");
    READS("a,b,c", "1:a|b|c\n");
    READS("a,b\r\nc,d\r\n", "1:a|b\n2:c|d\n");
    READS("a,b\nc,d\n", "1:a|b\n2:c|d\n");
    READS("a,b\rc,d", "1:a|b\n2:c|d\n");
    READS("\xEF\xBB\xBFredirect_url,name\n", "1:redirect_url|name\n");
    READS("a,,c,\n", "1:a||c|\n");
    READS("\n\r\n\na\n\n", "4:a\n");
    READS(",", "1:|\n");
}
END_TEST

START_TEST(reader_quoted)
{
    READS("\"a,b\",\"c\"\"d\"\n", "1:a,b|c\"d\n");
    READS("\"line\r\nbreak\",x\ny\n", "1:line\r\nbreak|x\n3:y\n");
    READS("\"\",\"\"\n", "1:|\n");
    READS("\"x\"", "1:x\n");
    READS("'=1',\"=2\"", "1:'=1'|=2\n");
}
END_TEST

START_TEST(reader_malformed)
{
    READS("a\"b,c\nd\n", "!E1\n2:d\n");
    READS("\"a\"b,c\nd\n", "!E1\n2:d\n");
    READS("x\n\"open,c\nd\n", "1:x\n!E2\n");
    {
        static const char nul[] = "a\0b\nc\n";

        ck_assert_str_eq(read_all(nul, sizeof(nul) - 1, 1000, 50), "!E1\n2:c\n");
    }
}
END_TEST

START_TEST(reader_bounds)
{
    ck_assert_str_eq(read_all("abcdef,g\nab\n", 12, 5, 50), "!S1\n2:ab\n");
    ck_assert_str_eq(read_all("abcde\n", 6, 5, 50), "1:abcde\n");
    ck_assert_str_eq(read_all("\"abcdefgh\"\nab\n", 14, 5, 50), "!S1\n2:ab\n");
    ck_assert_str_eq(read_all("a,b,c\na,b\n", 10, 100, 2), "!S1\n2:a|b\n");
    ck_assert_str_eq(read_all("a,b,\n", 5, 100, 2), "!S1\n");
    ck_assert_str_eq(read_all(NULL, 0, 100, 2), "");
}
END_TEST

static Suite *csv_suite(void)
{
    Suite *s = suite_create("qrt_csv");
    TCase *tc = tcase_create("csv");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, plain_cells);
    tcase_add_test(tc, quoted_cells);
    tcase_add_test(tc, formula_guard);
    tcase_add_test(tc, invalid_utf8);
    tcase_add_test(tc, clean);
    tcase_add_test(tc, rows);
    tcase_add_test(tc, random_round_trip);
    tcase_add_test(tc, long_cell);
    tcase_add_test(tc, reader_basic);
    tcase_add_test(tc, reader_quoted);
    tcase_add_test(tc, reader_malformed);
    tcase_add_test(tc, reader_bounds);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(csv_suite());
}
