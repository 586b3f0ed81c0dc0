/* Unit tests for qrt_peer: each peer's export format, the rows' checks and the bounds. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>
#include <apr_tables.h>

#include "qrt_peer.h"
#include "qrt_date.h"
#include "qrt_check.h"

QRT_CHECK_POOL

/* Every row of text read as fmt: the last call's status in *end. */
static apr_array_header_t *rows_of(qrt_peer_format_t fmt, const char *text, apr_size_t len,
                                   int *end, const char **err)
{
    qrt_peer_reader_t *r = qrt_peer_open_mem(pool, fmt, text, len);
    apr_array_header_t *rows = apr_array_make(pool, 8, sizeof(qrt_peer_row_t));
    qrt_peer_row_t row;
    int rc;

    while ((rc = qrt_peer_next(r, pool, &row)) == 1) {
        APR_ARRAY_PUSH(rows, qrt_peer_row_t) = row;
    }
    *end = rc;
    *err = qrt_peer_error(r);
    return rows;
}

static apr_array_header_t *rows_ok(qrt_peer_format_t fmt, const char *text)
{
    const char *err;
    int end;
    apr_array_header_t *rows = rows_of(fmt, text, strlen(text), &end, &err);

    ck_assert_msg(end == 0, "reading ended with %d: %s", end, err ? err : "");
    return rows;
}

#define ROW(rows, i) (&APR_ARRAY_IDX(rows, i, qrt_peer_row_t))

static void row_is(const qrt_peer_row_t *r, long line, const char *code, const char *url,
                   const char *name, const char *tags, const char *created)
{
    apr_int64_t t = 0;
    const char *joined = apr_array_pstrcat(pool, r->tags, '|');

    ck_assert_msg(r->error == NULL, "line %ld: %s", r->line, r->error);
    ck_assert_int_eq(r->line, line);
    ck_assert_str_eq(r->code, code);
    ck_assert_str_eq(r->url, url);
    ck_assert_str_eq(r->name, name);
    ck_assert_str_eq(joined, tags);
    if (created) {
        ck_assert_int_eq(qrt_date_parse(created, &t, NULL), 0);
    }
    ck_assert_int_eq(r->created_at, t);
}

static void row_fails(const qrt_peer_row_t *r, long line, const char *why)
{
    ck_assert_int_eq(r->line, line);
    ck_assert_msg(r->error && strstr(r->error, why), "line %ld: error [%s], want [%s]",
                  r->line, r->error ? r->error : "(none)", why);
}

START_TEST(shlink_csv)
{
    const char *text =
        "\xEF\xBB\xBF" "createdAt,title,shortUrl,domain,shortCode,longUrl,tags,visits\r\n"
        "2023-01-15T10:12:00+00:00,Spring sale,https://s.test/spring,,spring,"
        "https://example.com/spring,campaign:spring|region:eu,12\r\n"
        "2023-02-01T08:00:00+01:00,\"Café, \"\"menu\"\"\",https://s.test/menu-2,,menu-2,"
        "https://example.com/menu?lang=fr&x=1,,0\r\n"
        "2023-03-01T00:00:00+00:00,Bad,https://s.test/ftp1,,ftp1,ftp://example.com/,,0\r\n"
        "2023-03-02T00:00:00+00:00,\"two\nlines\",https://s.test/ok3,,ok3,"
        "https://example.com/3,a| a |b|,0\r\n"
        "\r\n"
        "2023-03-03T00:00:00+00:00,,https://s.test/x,,x,https://example.com/x,,0\r\n";
    apr_array_header_t *rows = rows_ok(QRT_PEER_SHLINK, text);

    ck_assert_int_eq(rows->nelts, 5);
    row_is(ROW(rows, 0), 2, "spring", "https://example.com/spring", "Spring sale",
           "campaign:spring|region:eu", "2023-01-15T10:12:00+0000");
    row_is(ROW(rows, 1), 3, "menu-2", "https://example.com/menu?lang=fr&x=1",
           "Café, \"menu\"", "", "2023-02-01T08:00:00+0100");
    row_fails(ROW(rows, 2), 4, "destination URL");
    /* a quoted newline: the row starts on line 5 and the next one on line 7 */
    row_is(ROW(rows, 3), 5, "ok3", "https://example.com/3", "two lines", "a|b",
           "2023-03-02T00:00:00+0000");
    row_fails(ROW(rows, 4), 8, "short code");
}
END_TEST

START_TEST(shlink_csv_code_from_url)
{
    /* the older export: no shortCode column */
    const char *text =
        "createdAt,title,shortUrl,longUrl,tags,visits\n"
        "2022-05-05T05:05:05+00:00,Old,https://s.test/abc123/,https://example.org/,t1,3\n"
        "2022-05-05T05:05:05+00:00,Old,https://s.test/x/y/q_q-1?utm=1,https://example.org/,,3\n";
    apr_array_header_t *rows = rows_ok(QRT_PEER_SHLINK, text);

    ck_assert_int_eq(rows->nelts, 2);
    row_is(ROW(rows, 0), 2, "abc123", "https://example.org/", "Old", "t1",
           "2022-05-05T05:05:05+0000");
    ck_assert_str_eq(ROW(rows, 1)->code, "q_q-1");
}
END_TEST

START_TEST(shlink_csv_no_url_column)
{
    const char *err;
    int end;

    rows_of(QRT_PEER_SHLINK, "a,b,c\n1,2,3\n", 12, &end, &err);
    ck_assert_int_eq(end, -1);
    ck_assert_ptr_nonnull(strstr(err, "longUrl"));
}
END_TEST

START_TEST(shlink_json)
{
    const char *text =
        "{\"shortUrls\": {\"data\": ["
        "{\"shortCode\": \"jsn1\", \"shortUrl\": \"https://s.test/jsn1\", \"longUrl\": "
        "\"https://example.com/1\", \"dateCreated\": \"2021-06-01T12:00:00+02:00\", "
        "\"tags\": [\"x\", \"dim:v\"], \"title\": \"東京 \\ud83d\\ude00\"},"
        "{\"shortCode\": 5, \"longUrl\": \"https://example.com/2\"},"
        "{\"shortCode\": \"jsn3\", \"longUrl\": \"https://example.com/3\", \"title\": null,"
        " \"tags\": []}"
        "], \"pagination\": {\"currentPage\": 1}}}\n"
        "{\"shortUrls\": {\"data\": [{\"shortCode\": \"jsn4\", \"longUrl\": \"javascript:x\"}]}}";
    apr_array_header_t *rows = rows_ok(QRT_PEER_SHLINK, text);

    ck_assert_int_eq(rows->nelts, 4);
    row_is(ROW(rows, 0), 1, "jsn1", "https://example.com/1", "東京 😀", "x|dim:v",
           "2021-06-01T12:00:00+0200");
    row_fails(ROW(rows, 1), 2, "shortCode is not a string");
    row_is(ROW(rows, 2), 3, "jsn3", "https://example.com/3", "example.com", "", NULL);
    row_fails(ROW(rows, 3), 4, "destination URL");
}
END_TEST

START_TEST(kutt_json)
{
    const char *text =
        "{\"limit\": 10, \"skip\": 0, \"total\": 2, \"data\": ["
        "{\"id\": \"0b2c\", \"address\": \"kutt1\", \"banned\": false, "
        "\"created_at\": \"2020-10-10T10:10:10.123Z\", \"description\": \"Ünïcode\", "
        "\"target\": \"http://example.net/k\", \"visit_count\": 4, "
        "\"link\": \"https://kutt.it/kutt1\"},"
        "[1, 2],"
        "{\"address\": \"kutt3\", \"target\": \"https://example.net/3\", "
        "\"created_at\": \"yesterday\"}]}";
    apr_array_header_t *rows = rows_ok(QRT_PEER_KUTT, text);
    const char *err;
    int end;

    ck_assert_int_eq(rows->nelts, 3);
    ck_assert_int_eq(qrt_peer_by_line(qrt_peer_open_mem(pool, QRT_PEER_KUTT, "", 0)), 0);
    row_is(ROW(rows, 0), 1, "kutt1", "http://example.net/k", "Ünïcode", "",
           "2020-10-10T10:10:10+0000");
    row_fails(ROW(rows, 1), 2, "not an object");
    row_fails(ROW(rows, 2), 3, "creation time");

    rows_of(QRT_PEER_KUTT, "{\"data\": [", 10, &end, &err);
    ck_assert_int_eq(end, -1);
    ck_assert_ptr_nonnull(strstr(err, "not JSON"));
    rows_of(QRT_PEER_KUTT, "{\"links\": []}", 13, &end, &err);
    ck_assert_int_eq(end, -1);
    ck_assert_ptr_nonnull(strstr(err, "no data array"));
}
END_TEST

START_TEST(yourls_csv)
{
    const char *with =
        "keyword,url,title,timestamp,ip,clicks\n"
        "ylink1,https://example.com/y1,Y one,2019-01-02 03:04:05,127.0.0.1,7\n"
        "y2,https://example.com/y2,Short,2019-01-02 03:04:05,127.0.0.1,7\n";
    const char *without =
        "ylink3,https://example.com/y3,,0000-00-00 00:00:00,::1,0\n";
    apr_array_header_t *rows = rows_ok(QRT_PEER_YOURLS, with);

    ck_assert_int_eq(rows->nelts, 2);
    row_is(ROW(rows, 0), 2, "ylink1", "https://example.com/y1", "Y one", "",
           "2019-01-02T03:04:05+0000");
    row_fails(ROW(rows, 1), 3, "short code");
    rows = rows_ok(QRT_PEER_YOURLS, without);
    ck_assert_int_eq(rows->nelts, 1);
    row_is(ROW(rows, 0), 1, "ylink3", "https://example.com/y3", "example.com", "", NULL);
    /* a header in another order is a header (it was read as a row, the rest by position) */
    rows = rows_ok(QRT_PEER_YOURLS, "url,keyword,timestamp,title\n"
                   "https://example.com/y4,ylink4,2019-01-02 03:04:05,Y four\n");
    ck_assert_int_eq(rows->nelts, 1);
    row_is(ROW(rows, 0), 2, "ylink4", "https://example.com/y4", "Y four", "",
           "2019-01-02T03:04:05+0000");
}
END_TEST

START_TEST(yourls_sql)
{
    const char *text =
        "-- MySQL dump 10.13\n"
        "/*!40101 SET NAMES utf8mb4 */;\n"
        "DROP TABLE IF EXISTS `yourls_url`;\n"
        "CREATE TABLE `yourls_url` (\n"
        "  `keyword` varchar(100) NOT NULL DEFAULT '',\n"
        "  `title` text COMMENT 'a; b',\n"
        "  PRIMARY KEY (`keyword`)\n"
        ") ENGINE=InnoDB;\n"
        "INSERT INTO `yourls_options` VALUES (1,'version','1.9.2');\n"
        "LOCK TABLES `yourls_url` WRITE;\n"
        "INSERT INTO `yourls_url` VALUES "
        "('sql1','https://example.com/a?b=1&c=2','It\\'s \\\"quoted\\\"','2018-07-07 07:07:07',"
        "'10.0.0.1',3),\n"
        "('sql2','https://example.com/b','Line\\nbreak; and ''doubled''','2018-07-07 07:07:07',"
        "'10.0.0.1',-1),\n"
        "('s!','https://example.com/c',NULL,'2018-07-07 07:07:07','10.0.0.1',0);\n"
        "INSERT INTO yourls_url (`url`, `keyword`) VALUES ('https://example.com/d','sql4');\n"
        "UNLOCK TABLES;\n";
    apr_array_header_t *rows = rows_ok(QRT_PEER_YOURLS, text);

    ck_assert_int_eq(rows->nelts, 4);
    row_is(ROW(rows, 0), 11, "sql1", "https://example.com/a?b=1&c=2", "It's \"quoted\"", "",
           "2018-07-07T07:07:07+0000");
    row_is(ROW(rows, 1), 12, "sql2", "https://example.com/b", "Line break; and 'doubled'", "",
           "2018-07-07T07:07:07+0000");
    row_fails(ROW(rows, 2), 13, "short code");
    row_is(ROW(rows, 3), 14, "sql4", "https://example.com/d", "example.com", "", NULL);
}
END_TEST

START_TEST(yourls_sql_unclosed)
{
    const char *text = "INSERT INTO `yourls_url` VALUES ('sql1','https://example.com/a";
    const char *err;
    int end;

    rows_of(QRT_PEER_YOURLS, text, strlen(text), &end, &err);
    ck_assert_int_eq(end, -1);
    ck_assert_ptr_nonnull(strstr(err, "not closed"));
}
END_TEST

START_TEST(own_csv)
{
    const char *text =
        "code,redirect_url,name,tags,created_at\n"
        "own-1,https://example.com/o1,Own one,campaign:x; region:eu ;,2024-02-29T23:59:59Z\n"
        "own_2,https://example.com/o2,,,\n"
        "own3,https://example.com/o3,,a;b;c;d;e;f;g;h;i;j;k;l;m;n;o;p;q;r;s;t;u,\n"
        "own4,https://example.com/o4,,,2024-02-30\n"
        "own5,https://example.com/o5,\"ctl\x01name\",,2024-01-01\n";
    apr_array_header_t *rows = rows_ok(QRT_PEER_CSV, text);

    ck_assert_int_eq(rows->nelts, 5);
    row_is(ROW(rows, 0), 2, "own-1", "https://example.com/o1", "Own one",
           "campaign:x|region:eu", "2024-02-29T23:59:59+0000");
    row_is(ROW(rows, 1), 3, "own_2", "https://example.com/o2", "example.com", "", NULL);
    row_fails(ROW(rows, 2), 4, "more than 20 tags");
    row_fails(ROW(rows, 3), 5, "creation time");
    row_is(ROW(rows, 4), 6, "own5", "https://example.com/o5", "ctl name", "",
           "2024-01-01T00:00:00+0000");
}
END_TEST

START_TEST(bounds)
{
    apr_size_t big = QRT_PEER_RECORD_MAX + 100, i;
    char *text = apr_palloc(pool, big + 400);
    apr_array_header_t *rows;
    const char *err;
    char *o = text;
    int end;

    o += sprintf(o, "code,redirect_url,name\nlong1,https://example.com/,\"");
    for (i = 0; i < big; i++) {
        *o++ = 'n';
    }
    o += sprintf(o, "\"\nok1,https://example.com/,x\n");
    for (i = 0; i < 70; i++) {
        *o++ = ',';
    }
    o += sprintf(o, "\nnul1,https://example.com/,a");
    *o++ = '\0';
    o += sprintf(o, "b\nok2,https://example.com/,y\nok3,https://example.com/,\"open");
    rows = rows_of(QRT_PEER_CSV, text, (apr_size_t)(o - text), &end, &err);
    ck_assert_int_eq(end, 0);
    ck_assert_int_eq(rows->nelts, 6);
    row_fails(ROW(rows, 0), 2, "longer than 64 KB");
    ck_assert_ptr_null(ROW(rows, 1)->error);
    ck_assert_str_eq(ROW(rows, 1)->code, "ok1");
    row_fails(ROW(rows, 2), 4, "more than 64 columns");
    row_fails(ROW(rows, 3), 5, "NUL");
    ck_assert_str_eq(ROW(rows, 4)->code, "ok2");
    row_fails(ROW(rows, 5), 7, "not closed");
    /* a record that never ends (an input without line ends: /dev/zero) is refused once
     * 16 MB of it are past the bound, after the rows before it */
    big = ((apr_size_t)16 << 20) + QRT_PEER_RECORD_MAX + 2;
    text = apr_palloc(pool, big + 100);
    o = text + sprintf(text, "code,redirect_url\nok1,https://example.com/\n");
    memset(o, 0, big);
    rows = rows_of(QRT_PEER_CSV, text, (apr_size_t)(o - text) + big, &end, &err);
    ck_assert_int_eq(end, -1);
    ck_assert_int_eq(rows->nelts, 1);
    ck_assert_ptr_nonnull(err);
    ck_assert_msg(strstr(err, "line 3: a record of more than 16 MB") != NULL, "%s", err);
}
END_TEST

START_TEST(dates)
{
    apr_int64_t t;

    ck_assert_int_eq(qrt_peer_date("", &t), 0);
    ck_assert_int_eq(t, 0);
    ck_assert_int_eq(qrt_peer_date("null", &t), 0);
    ck_assert_int_eq(qrt_peer_date("2020-01-01", &t), 0);
    ck_assert_int_eq(t, 1577836800);
    ck_assert_int_eq(qrt_peer_date("2020-01-01 00:00:01", &t), 0);
    ck_assert_int_eq(t, 1577836801);
    ck_assert_int_eq(qrt_peer_date("2020-01-01T01:00:00+01:00", &t), 0);
    ck_assert_int_eq(t, 1577836800);
    ck_assert_int_eq(qrt_peer_date("2020-01-01T01:00:00.999+0100", &t), 0);
    ck_assert_int_eq(t, 1577836800);
    ck_assert_int_eq(qrt_peer_date("2019-12-31T19:00-05", &t), 0);
    ck_assert_int_eq(t, 1577836800);
    ck_assert_int_eq(qrt_peer_date("2020-01-01T00:00:00.5Z", &t), 0);
    ck_assert_int_eq(t, 1577836800);
    ck_assert_int_eq(qrt_peer_date("2020-13-01", &t), -1);
    ck_assert_int_eq(qrt_peer_date("2020-01-01T25:00:00Z", &t), -1);
    ck_assert_int_eq(qrt_peer_date("2020-01-01x", &t), -1);
    ck_assert_int_eq(qrt_peer_date("1577836800", &t), -1);
    ck_assert_int_eq(qrt_peer_date("2020-01-01T00:00:00+1500", &t), -1);
}
END_TEST

/* An input of nothing, or of blank space alone, is no export of any format (a failed
 * export, a wrong file): an error, not "imported 0". A header without rows is an export
 * of no short URL. */
START_TEST(empty_inputs)
{
    static const char *const empty[] = { "", "\n", "\r\n", " \t\r\n\n", "\xEF\xBB\xBF",
                                         "\xEF\xBB\xBF\r\n" };
    static const qrt_peer_format_t fmts[] = { QRT_PEER_SHLINK, QRT_PEER_YOURLS, QRT_PEER_KUTT,
                                              QRT_PEER_CSV };
    const char *err;
    size_t i, j;
    int end;

    for (i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
        for (j = 0; j < sizeof(empty) / sizeof(empty[0]); j++) {
            apr_array_header_t *rows = rows_of(fmts[i], empty[j], strlen(empty[j]), &end,
                                               &err);

            ck_assert_int_eq(rows->nelts, 0);
            ck_assert_msg(end == -1 && err && !strcmp(err, "it is empty"),
                          "format %d, input %zu: %d %s", (int)fmts[i], j, end, err ? err : "");
        }
    }
    ck_assert_int_eq(rows_ok(QRT_PEER_SHLINK, "shortCode,longUrl,title\n")->nelts, 0);
    ck_assert_int_eq(rows_ok(QRT_PEER_CSV, "code,redirect_url\r\n")->nelts, 0);
    ck_assert_int_eq(rows_ok(QRT_PEER_KUTT, "{\"data\": []}")->nelts, 0);
}
END_TEST

START_TEST(formats)
{
    ck_assert_int_eq(qrt_peer_format_named("shlink"), QRT_PEER_SHLINK);
    ck_assert_int_eq(qrt_peer_format_named("yourls"), QRT_PEER_YOURLS);
    ck_assert_int_eq(qrt_peer_format_named("kutt"), QRT_PEER_KUTT);
    ck_assert_int_eq(qrt_peer_format_named("csv"), QRT_PEER_CSV);
    ck_assert_int_eq(qrt_peer_format_named("bitly"), -1);
    ck_assert_int_eq(qrt_peer_format_named(NULL), -1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("peer");
    TCase *tc = tcase_create("peer");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, shlink_csv);
    tcase_add_test(tc, shlink_csv_code_from_url);
    tcase_add_test(tc, shlink_csv_no_url_column);
    tcase_add_test(tc, shlink_json);
    tcase_add_test(tc, kutt_json);
    tcase_add_test(tc, yourls_csv);
    tcase_add_test(tc, yourls_sql);
    tcase_add_test(tc, yourls_sql_unclosed);
    tcase_add_test(tc, own_csv);
    tcase_add_test(tc, bounds);
    tcase_add_test(tc, dates);
    tcase_add_test(tc, formats);
    tcase_add_test(tc, empty_inputs);
    suite_add_tcase(s, tc);
    return qrt_check_run(s);
}
