/* Unit tests for qrt_import: one line read into a visit (both readers, every
 * rejection), and the reader thread's batches: their sizes and line numbers, blank
 * lines, a bad line ending the input after the visits before it, a reader stopped
 * early, an empty input and a pipe; a by-time reader's runs in time order, a bad
 * line failing its run, and a file cut after its first reading. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <sys/resource.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>

#include "qrt_import.h"
#include "qrt_check.h"

QRT_CHECK_POOL

static const char *PLAIN =
    "{\"tracker_id\": 7, \"visit_start\": \"2026-03-01T10:00:00+0100\", \"source\": \"scan\","
    " \"ip\": \"203.0.113.9\", \"country\": \"DE\", \"city\": \"K\xc3\xb6ln\", \"referer\": null,"
    " \"bot\": false, \"user_agent\": \"UA/1\"}";

static int line(const char *text, qrt_visit_t *v, const char **why)
{
    char *buf = apr_pstrdup(pool, text);

    return qrt_import_line(pool, buf, strlen(buf), NULL, v, why);
}

START_TEST(reads_a_visit_either_way)
{
    /* the same visit with escapes: jansson reads it, the one-pass reader declines */
    const char *escaped =
        "{\"tracker_id\": 7, \"visit_start\": \"2026-03-01T10:00:00+0100\", \"source\": "
        "\"scan\", \"ip\": \"203.0.113.9\", \"country\": \"DE\", \"city\": \"K\\u00f6ln\","
        " \"referer\": null, \"bot\": false, \"user_agent\": \"UA\\/1\"}";
    qrt_visitor_key_t key;
    qrt_visit_t a, b;
    const char *why;

    ck_assert_int_eq(line(PLAIN, &a, &why), 1);
    ck_assert_ptr_null(why);
    ck_assert_int_eq(line(escaped, &b, &why), 1);
    ck_assert_int_eq(a.tracker_id, 7);
    ck_assert_int_eq(a.visit_start, 1772355600);       /* 09:00 UTC */
    ck_assert_str_eq(a.source, "scan");
    ck_assert_str_eq(a.city, "K\xc3\xb6ln");
    ck_assert_str_eq(b.city, a.city);
    ck_assert_str_eq(b.user_agent, "UA/1");
    ck_assert_str_eq(a.user_agent, "UA/1");
    ck_assert_ptr_null(a.referer);
    ck_assert_ptr_null(a.browser);
    ck_assert_str_eq(a.device, "other");
    ck_assert_int_eq(a.bot, 0);
    ck_assert(a.visitor == b.visitor);
    /* the address anonymised as a scan's (QRTrackAnonymizeIP's default), the visitor
     * id computed from it as the scan path does */
    ck_assert_str_eq(a.ip, "203.0.113.0");
    ck_assert_str_eq(b.ip, "203.0.113.0");
    memset(&key, 0, sizeof(key));
    ck_assert(a.visitor == qrt_visitor_id(&key, a.visit_start, "203.0.113.0", "UA/1"));
    /* a bot without a device is a "bot" device */
    ck_assert_int_eq(line("{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\","
                          " \"source\": \"click\", \"bot\": true}", &a, &why), 1);
    ck_assert_int_eq(a.bot, 1);
    ck_assert_str_eq(a.device, "bot");
    ck_assert_str_eq(a.source, "click");
    ck_assert_ptr_null(a.destination);
    /* where the visit went (schema 25): optional, null as absent */
    ck_assert_int_eq(line("{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\","
                          " \"source\": \"scan\", \"destination\": \"https://a.example/x?y=1\"}",
                          &a, &why), 1);
    ck_assert_str_eq(a.destination, "https://a.example/x?y=1");
    ck_assert_int_eq(line("{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\","
                          " \"source\": \"scan\", \"destination\": null}", &a, &why), 1);
    ck_assert_ptr_null(a.destination);
}
END_TEST

/* Addresses as a scan stores them; the five devices; times from 1970 on. */
START_TEST(addresses_devices_and_times_as_the_module_has_them)
{
    static const char *const ips[][2] = {
        { "198.51.100.77", "198.51.100.0" },
        { "2001:DB8:ABCD:12::1", "2001:db8:abcd::" },
        { "::ffff:192.0.2.33", "192.0.2.0" },
        { "2001:db8:1::", "2001:db8:1::" },
    };
    static const char *const devices[] = { "mobile", "tablet", "desktop", "bot", "other" };
    qrt_visit_t v;
    const char *why;
    size_t i;

    for (i = 0; i < sizeof(ips) / sizeof(ips[0]); i++) {
        const char *l = apr_psprintf(pool, "{\"tracker_id\": 1, \"visit_start\": "
                                     "\"2026-03-01T10:00:00Z\", \"source\": \"scan\", "
                                     "\"ip\": \"%s\"}", ips[i][0]);

        ck_assert_int_eq(line(l, &v, &why), 1);
        ck_assert_str_eq(v.ip, ips[i][1]);
    }
    for (i = 0; i < sizeof(devices) / sizeof(devices[0]); i++) {
        const char *l = apr_psprintf(pool, "{\"tracker_id\": 1, \"visit_start\": "
                                     "\"2026-03-01T10:00:00Z\", \"source\": \"scan\", "
                                     "\"device\": \"%s\"}", devices[i]);

        ck_assert_int_eq(line(l, &v, &why), 1);
        ck_assert_str_eq(v.device, devices[i]);
    }
    /* the first second of 1970 in UTC, and the last of 9999 */
    ck_assert_int_eq(line("{\"tracker_id\": 1, \"visit_start\": \"1970-01-01T00:00:00Z\","
                          " \"source\": \"scan\"}", &v, &why), 1);
    ck_assert_int_eq(v.visit_start, 0);
    ck_assert_int_eq(line("{\"tracker_id\": 1, \"visit_start\": \"9999-12-31T23:59:59Z\","
                          " \"source\": \"scan\"}", &v, &why), 1);
    ck_assert_int_eq(v.visit_start, 253402300799LL);
    /* a country code in upper case, as a scan's: "de" and "DE" are one country */
    ck_assert_int_eq(line("{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\","
                          " \"source\": \"scan\", \"country\": \"de\"}", &v, &why), 1);
    ck_assert_str_eq(v.country, "DE");
}
END_TEST

START_TEST(blank_lines_are_nothing)
{
    qrt_visit_t v;
    const char *why;

    ck_assert_int_eq(line("", &v, &why), 0);
    ck_assert_int_eq(line(" \t\r\n", &v, &why), 0);
    ck_assert_ptr_null(why);
}
END_TEST

START_TEST(rejects_what_is_not_a_visit)
{
    static const struct {
        const char *line, *why;
    } bad[] = {
        { "{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\"", "not a JSON object" },
        { "[1, 2]", "not a JSON object" },
        { "{\"tracker_id\": 1, \"city\": \"\xff\"}", "not a JSON object" },
        { "{\"tracker_id\": \"1\", \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": \"scan\"}",
          "bad tracker_id" },
        { "{\"tracker_id\": 0, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": \"scan\"}",
          "bad tracker_id" },
        { "{\"tracker_id\": 1.0, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": \"scan\"}",
          "bad tracker_id" },
        { "{\"tracker_id\": 1, \"visit_start\": \"2026-02-30T10:00:00Z\", \"source\": \"scan\"}",
          "bad visit_start" },
        { "{\"tracker_id\": 1, \"source\": \"scan\"}", "bad visit_start" },
        { "{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": \"view\"}",
          "bad source (scan or click)" },
        { "{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": \"scan\","
          " \"bot\": \"no\"}", "bad bot" },
        { "{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": \"scan\","
          " \"city\": [\"x\"]}", "bad city (not a string)" },
        { "{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": \"scan\","
          " \"country\": \"ABCDEFGHI\"}", "bad country (more than 8 bytes)" },
        { "{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": \"scan\","
          " \"city\": \"a\\u0000b\"}", "not a JSON object" },
        /* trailing garbage after a whole object */
        { "{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": \"scan\"}"
          " x", "not a JSON object" },
        { "{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": \"scan\"}"
          "{}", "not a JSON object" },
        /* addresses that are not addresses */
        { "{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": \"scan\","
          " \"ip\": \"<script>\"}", "bad ip" },
        { "{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": \"scan\","
          " \"ip\": \"203.0.113.256\"}", "bad ip" },
        { "{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": \"scan\","
          " \"ip\": \"fe80::1%eth0\"}", "bad ip" },
        { "{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": \"scan\","
          " \"ip\": \"\"}", "bad ip" },
        /* a device the module never gives */
        { "{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": \"scan\","
          " \"device\": \"<script>\"}", "bad device (mobile, tablet, desktop, bot or other)" },
        { "{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": \"scan\","
          " \"device\": \"Mobile\"}", "bad device (mobile, tablet, desktop, bot or other)" },
        { "{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": \"scan\","
          " \"device\": \"\"}", "bad device (mobile, tablet, desktop, bot or other)" },
        /* a destination that is no URL a scan sends to, or no string */
        { "{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": \"scan\","
          " \"destination\": \"javascript:alert(1)\"}", "bad destination (an http or https URL)" },
        { "{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": \"scan\","
          " \"destination\": \"\"}", "bad destination (an http or https URL)" },
        { "{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": \"scan\","
          " \"destination\": 7}", "bad destination (not a string)" },
        /* a number no 64 bits hold */
        { "{\"tracker_id\": 99999999999999999999, \"visit_start\": \"2026-03-01T10:00:00Z\","
          " \"source\": \"scan\"}", "a number out of range (at most 2^63 - 1)" },
        /* a member named twice: refused, as the API refuses it, whichever reader reads
         * the line (the one-pass one; jansson, for a line with a nested value) */
        { "{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": \"scan\","
          " \"tracker_id\": 2}", "tracker_id named twice" },
        { "{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": \"scan\","
          " \"city\": \"A\", \"x\": {}, \"city\": \"B\"}", "a member named twice" },
        { "{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": \"scan\","
          " \"a\\u001bb\": 1, \"a\\u001bb\": 2}", "a member named twice" },
        /* before 1970 in UTC */
        { "{\"tracker_id\": 1, \"visit_start\": \"1970-01-01T00:59:59+0100\", \"source\": \"scan\"}",
          "bad visit_start" },
        { "{\"tracker_id\": 1, \"visit_start\": \"1969-12-31T23:59:59Z\", \"source\": \"scan\"}",
          "bad visit_start" },
    };
    qrt_visit_t v;
    const char *why;
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(line(bad[i].line, &v, &why) == -1, "taken: %s", bad[i].line);
        ck_assert_msg(why && !strcmp(why, bad[i].why), "%s: %s", bad[i].line, why);
    }
}
END_TEST

/* A NUL byte anywhere in a line: at its start, inside, after a whole object. */
START_TEST(nul_bytes_are_errors)
{
    static const char visit[] = "{\"tracker_id\": 1, \"visit_start\": "
                                "\"2026-03-01T10:00:00Z\", \"source\": \"scan\"}";
    char buf[256];
    qrt_visit_t v;
    const char *why;
    size_t n = sizeof(visit) - 1;

    memcpy(buf, "\0\0\0\n", 4);
    ck_assert_int_eq(qrt_import_line(pool, buf, 4, NULL, &v, &why), -1);
    ck_assert_str_eq(why, "a NUL byte");
    memcpy(buf, "\0", 1);
    memcpy(buf + 1, visit, n);
    ck_assert_int_eq(qrt_import_line(pool, buf, n + 1, NULL, &v, &why), -1);
    ck_assert_str_eq(why, "a NUL byte");
    memcpy(buf, visit, n);
    memcpy(buf + n, "\0garbage\n", 10);
    ck_assert_int_eq(qrt_import_line(pool, buf, n + 9, NULL, &v, &why), -1);
    ck_assert_str_eq(why, "a NUL byte");
    memcpy(buf, visit, n);
    buf[20] = '\0';
    ck_assert_int_eq(qrt_import_line(pool, buf, n, NULL, &v, &why), -1);
    ck_assert_str_eq(why, "a NUL byte");
    memcpy(buf, "  \0\n", 4);
    ck_assert_int_eq(qrt_import_line(pool, buf, 4, NULL, &v, &why), -1);
    ck_assert_str_eq(why, "a NUL byte");
}
END_TEST

/* Through the reader: the line with the NUL ends the input, named by its number. */
START_TEST(a_nul_line_ends_the_input)
{
    FILE *f = tmpfile();
    qrt_import_reader_t *r;
    const qrt_import_batch_t *b;
    int k;

    for (k = 0; k < 2; k++) {
        int batch = k ? 2 : 100;           /* in the first batch, then in a later one */

        ck_assert_ptr_nonnull(f);
        fputs("{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": "
              "\"scan\"}\n\n{\"tracker_id\": 2, \"visit_start\": \"2026-03-01T10:00:00Z\", "
              "\"source\": \"scan\"}\n", f);
        fwrite("\0\0\0\0\n", 1, 5, f);
        fputs("{\"tracker_id\": 3, \"visit_start\": \"2026-03-01T10:00:00Z\", \"source\": "
              "\"scan\"}\n", f);
        rewind(f);
        r = qrt_import_start(pool, f, NULL, batch, 0);
        ck_assert_ptr_nonnull(r);
        while ((b = qrt_import_next(r)) != NULL && !b->error) {
        }
        ck_assert_ptr_nonnull(b);
        ck_assert_str_eq(b->error, "a NUL byte");
        ck_assert_int_eq(b->error_line, 4);
        qrt_import_stop(r);
        fclose(f);
        f = tmpfile();
    }
    fclose(f);
}
END_TEST

/* A file of lines: visits of tracker i + 1 for each '+', blank for ' ', the line bad
 * for '!'. */
static FILE *input(const char *shape)
{
    FILE *f = tmpfile();
    int i;

    ck_assert_ptr_nonnull(f);
    for (i = 0; shape[i]; i++) {
        if (shape[i] == '+') {
            fprintf(f, "{\"tracker_id\": %d, \"visit_start\": \"2026-03-01T10:00:00Z\","
                    " \"source\": \"scan\", \"ip\": \"10.0.0.%d\", \"city\": \"c%d\"}\n",
                    i + 1, i % 250, i % 250);
        }
        else if (shape[i] == '!') {
            fprintf(f, "{\"tracker_id\": %d, \"bot\": 1}\n", i + 1);
        }
        else {
            fputs("  \n", f);
        }
    }
    rewind(f);
    return f;
}

/* Each batch's visits must be the lines' own: tracker id i + 1 on line i + 1. */
static void check_batch(const qrt_import_batch_t *b)
{
    int i;

    for (i = 0; i < b->n; i++) {
        char city[32];

        /* (no allocation from the test's pool here: the reader thread clears its own
         * pools meanwhile, and APR reads its allocator's free list size unlocked) */
        snprintf(city, sizeof(city), "c%ld", (b->line[i] - 1) % 250);
        ck_assert_int_eq(b->v[i].tracker_id, b->line[i]);
        ck_assert_str_eq(b->v[i].city, city);
        ck_assert_str_eq(b->v[i].ip, "10.0.0.0");
    }
}

START_TEST(batches_keep_their_lines)
{
    FILE *f = input("++ +++ ++ +");      /* visits on lines 1 2 4 5 6 8 9 11 */
    qrt_import_reader_t *r = qrt_import_start(pool, f, NULL, 3, 0);
    const qrt_import_batch_t *b;
    static const long want[3][3] = { { 1, 2, 4 }, { 5, 6, 8 }, { 9, 11, 0 } };
    int k = 0, i;

    ck_assert_ptr_nonnull(r);
    while ((b = qrt_import_next(r)) != NULL) {
        ck_assert_int_lt(k, 3);
        ck_assert_int_eq(b->n, k < 2 ? 3 : 2);
        ck_assert_ptr_null(b->error);
        for (i = 0; i < b->n; i++) {
            ck_assert_int_eq(b->line[i], want[k][i]);
        }
        check_batch(b);
        k++;
    }
    ck_assert_int_eq(k, 3);
    ck_assert_int_eq(qrt_import_read_error(r), 0);
    ck_assert_ptr_null(qrt_import_next(r));     /* and stays at the end */
    qrt_import_stop(r);
    fclose(f);
}
END_TEST

START_TEST(a_bad_line_ends_the_input)
{
    FILE *f = input("++++!++");
    qrt_import_reader_t *r = qrt_import_start(pool, f, NULL, 3, 0);
    const qrt_import_batch_t *b;

    b = qrt_import_next(r);
    ck_assert_int_eq(b->n, 3);
    ck_assert_ptr_null(b->error);
    check_batch(b);
    b = qrt_import_next(r);
    ck_assert_int_eq(b->n, 1);                  /* line 4, then the bad line 5 */
    ck_assert_int_eq(b->line[0], 4);
    ck_assert_str_eq(b->error, "bad visit_start");
    ck_assert_int_eq(b->error_line, 5);
    ck_assert_ptr_null(qrt_import_next(r));
    qrt_import_stop(r);
    fclose(f);
    /* on a batch's first line: a batch of no visits, with the error */
    f = input("+++!");
    r = qrt_import_start(pool, f, NULL, 3, 0);
    ck_assert_int_eq(qrt_import_next(r)->n, 3);
    b = qrt_import_next(r);
    ck_assert_int_eq(b->n, 0);
    ck_assert_int_eq(b->error_line, 4);
    ck_assert_ptr_null(qrt_import_next(r));
    qrt_import_stop(r);
    fclose(f);
}
END_TEST

/* The first batch is read whole, then parsed in two halves by two threads
 * (qrt_import.c): its visits, their lines and its first bad line are the same as
 * one thread's, with blank lines anywhere. */
static const char *shape_of(int n, int blank_every, int bad1, int bad2)
{
    char *shape = apr_palloc(pool, (apr_size_t)n + 1);
    int i;

    for (i = 0; i < n; i++) {
        shape[i] = i == bad1 || i == bad2 ? '!'
                 : blank_every && i % blank_every == blank_every - 1 ? ' ' : '+';
    }
    shape[n] = '\0';
    return shape;
}

/* Takes the batches of shape (size visits each): visits seen, and the error's line. */
static int take_all(const char *shape, int size, long *error_line, int *first_n)
{
    FILE *f = input(shape);
    qrt_import_reader_t *r = qrt_import_start(pool, f, NULL, size, 0);
    const qrt_import_batch_t *b;
    long last = 0;
    int total = 0, i;

    *error_line = 0;
    *first_n = -1;
    ck_assert_ptr_nonnull(r);
    while ((b = qrt_import_next(r)) != NULL) {
        check_batch(b);
        for (i = 0; i < b->n; i++) {
            ck_assert_int_gt(b->line[i], last);             /* in order, none twice */
            ck_assert_int_eq(shape[b->line[i] - 1], '+');
            last = b->line[i];
        }
        if (*first_n < 0) {
            *first_n = b->n;
        }
        total += b->n;
        if (b->error) {
            *error_line = b->error_line;
            ck_assert_str_eq(b->error, "bad visit_start");
        }
    }
    qrt_import_stop(r);
    fclose(f);
    return total;
}

START_TEST(first_batch_in_two_halves)
{
    long err;
    int first;

    /* 2,000 lines, every seventh blank: 1,715 visits, batches of 500 */
    ck_assert_int_eq(take_all(shape_of(2000, 7, -1, -1), 500, &err, &first), 1715);
    ck_assert_int_eq(first, 500);
    ck_assert_int_eq(err, 0);
    /* blank lines only in the first half, then visits */
    {
        char *s = apr_pstrdup(pool, shape_of(400, 0, -1, -1));

        memset(s, ' ', 150);
        ck_assert_int_eq(take_all(s, 200, &err, &first), 250);
        ck_assert_int_eq(first, 200);
    }
    /* a bad line in the second half of the first batch: the visits before it */
    ck_assert_int_eq(take_all(shape_of(300, 0, 250, -1), 400, &err, &first), 250);
    ck_assert_int_eq(err, 251);
    /* bad lines in both halves: the first one counts */
    ck_assert_int_eq(take_all(shape_of(300, 5, 40, 250), 400, &err, &first), 32);
    ck_assert_int_eq(err, 41);
    /* a bad first line */
    ck_assert_int_eq(take_all(shape_of(300, 0, 0, 200), 400, &err, &first), 0);
    ck_assert_int_eq(err, 1);
}
END_TEST

START_TEST(stops_early_and_ends_empty)
{
    char *shape = apr_palloc(pool, 20001);
    FILE *f;
    qrt_import_reader_t *r;
    const qrt_import_batch_t *b;

    memset(shape, '+', 20000);
    shape[20000] = '\0';
    f = input(shape);
    r = qrt_import_start(pool, f, NULL, 10, 0);
    b = qrt_import_next(r);
    ck_assert_int_eq(b->n, 10);
    check_batch(b);
    qrt_import_stop(r);                         /* the reader was a batch ahead */
    fclose(f);
    /* stopped before taking anything */
    f = input(shape);
    qrt_import_stop(qrt_import_start(pool, f, NULL, 7, 0));
    fclose(f);
    /* nothing to read, or blank lines only */
    f = input("");
    r = qrt_import_start(pool, f, NULL, 3, 0);
    ck_assert_ptr_null(qrt_import_next(r));
    ck_assert_int_eq(qrt_import_read_error(r), 0);
    qrt_import_stop(r);
    fclose(f);
    f = input("   ");
    r = qrt_import_start(pool, f, NULL, 3, 0);
    ck_assert_ptr_null(qrt_import_next(r));
    qrt_import_stop(r);
    fclose(f);
    ck_assert_ptr_null(qrt_import_start(pool, stdin, NULL, 0, 0));
}
END_TEST

START_TEST(reads_a_pipe)
{
    FILE *src = input("+++++ ++++");
    char buf[4096];
    size_t got, total = 0;
    int fd[2], k = 0;
    FILE *f;
    qrt_import_reader_t *r;
    const qrt_import_batch_t *b;

    ck_assert_int_eq(pipe(fd), 0);
    while ((got = fread(buf, 1, sizeof(buf), src)) > 0) {
        ck_assert_int_eq(write(fd[1], buf, got), (ssize_t)got);
    }
    close(fd[1]);
    fclose(src);
    f = fdopen(fd[0], "r");
    r = qrt_import_start(pool, f, NULL, 4, 0);
    while ((b = qrt_import_next(r)) != NULL) {
        check_batch(b);
        total += (size_t)b->n;
        k++;
    }
    ck_assert_int_eq(total, 9);
    ck_assert_int_eq(k, 3);
    qrt_import_stop(r);
    fclose(f);
}
END_TEST

/* With a byte budget, a batch ends at the line that brings its text to the budget
 * (blank lines count), or at size visits, whichever comes first: the first batch
 * (read whole, parsed in two halves) as the others. */
START_TEST(batches_end_at_their_bytes)
{
    const char *shape = shape_of(120, 7, -1, -1);
    const apr_size_t budget = 300;
    FILE *f = input(shape);
    qrt_import_reader_t *r;
    const qrt_import_batch_t *b;
    char buf[512];
    int want[120], nwant = 0, k = 0, in_batch = 0, i;
    apr_size_t used = 0;

    /* the batches the rule makes, from the lines' own lengths */
    for (i = 0; fgets(buf, sizeof(buf), f); i++) {
        used += strlen(buf);
        in_batch += shape[i] == '+';
        if (in_batch == 8 || used >= budget) {
            want[nwant++] = in_batch;
            in_batch = 0;
            used = 0;
        }
    }
    if (in_batch) {
        want[nwant++] = in_batch;
    }
    ck_assert_int_gt(nwant, 10);
    rewind(f);
    r = qrt_import_start(pool, f, NULL, 8, budget);
    ck_assert_ptr_nonnull(r);
    while ((b = qrt_import_next(r)) != NULL) {
        ck_assert_int_lt(k, nwant);
        ck_assert_int_eq(b->n, want[k]);
        ck_assert_int_lt(b->n, 8);                  /* the budget, not the size */
        check_batch(b);
        k++;
    }
    ck_assert_int_eq(k, nwant);
    qrt_import_stop(r);
    fclose(f);
}
END_TEST

/* ---- by time ------------------------------------------------------------------ */

/* A file of n lines: on line i + 1 a visit of tracker i + 1 at second when[i] of
 * 2026-03-01, or a blank line where when[i] < 0, or a bad line where it is -2. */
static FILE *timed_input(const int *when, int n)
{
    FILE *f = tmpfile();
    int i;

    ck_assert_ptr_nonnull(f);
    for (i = 0; i < n; i++) {
        if (when[i] >= 0) {
            fprintf(f, "{\"tracker_id\": %d, \"visit_start\": \"2026-03-01T%02d:%02d:%02dZ\","
                    " \"source\": \"scan\", \"ip\": \"10.0.0.%d\", \"city\": \"c%d\"}\n",
                    i + 1, when[i] / 3600, when[i] / 60 % 60, when[i] % 60, i % 250, i % 250);
        }
        else if (when[i] == -2) {
            fprintf(f, "{\"tracker_id\": %d, \"bot\": 1}\n", i + 1);
        }
        else {
            fputs(" \n", f);
        }
    }
    rewind(f);
    return f;
}

/* Takes a by-time reader's batches of f: each run's visits must come in (time, line)
 * order, every visit of the file once; the first batch of a run lists its trackers.
 * Returns the visits seen; *runs the runs, *error_line the error's line (0 none). */
static int take_by_time(FILE *f, const int *when, int n, int size, long run, int *runs,
                        long *error_line)
{
    qrt_import_reader_t *r = qrt_import_start_by_time(pool, f, NULL, size, 0, run);
    const qrt_import_batch_t *b;
    char *seen = apr_pcalloc(pool, (apr_size_t)n + 1);
    long in_run = 0, last_line = 0;
    int total = 0, last_t = -1, i;

    ck_assert_ptr_nonnull(r);
    *runs = 0;
    *error_line = 0;
    while ((b = qrt_import_next(r)) != NULL) {
        if (b->error) {
            ck_assert_int_eq(b->n, 0);          /* a bad run hands out nothing */
            *error_line = b->error_line;
            ck_assert_str_eq(b->error, "bad visit_start");
            continue;
        }
        check_batch(b);
        if (b->ntrackers > 0) {
            /* a new run: its trackers (here one a line, named on its own line) */
            ck_assert_int_eq(in_run % run, 0);
            (*runs)++;
            last_t = -1;
            last_line = 0;
            for (i = 0; i < b->ntrackers; i++) {
                ck_assert_int_eq(b->tracker_line[i], b->trackers[i]);
                ck_assert_int_ge(when[b->trackers[i] - 1], 0);
            }
            in_run = 0;
        }
        ck_assert_int_gt(*runs, 0);
        for (i = 0; i < b->n; i++) {
            int t = when[b->line[i] - 1];

            ck_assert_int_ge(t, last_t);
            if (t == last_t) {
                ck_assert_int_gt(b->line[i], last_line);
            }
            ck_assert_int_eq(b->v[i].visit_start % 86400, t);
            ck_assert_int_eq(seen[b->line[i]], 0);
            seen[b->line[i]] = 1;
            last_t = t;
            last_line = b->line[i];
        }
        in_run += b->n;
        total += b->n;
    }
    ck_assert_int_eq(qrt_import_read_error(r), 0);
    qrt_import_stop(r);
    return total;
}

START_TEST(by_time_hands_each_run_out_in_time_order)
{
    int when[200], runs, i;
    long err;
    FILE *f;

    /* shuffled times with ties (every third line at 10:00:00), blank lines between */
    for (i = 0; i < 200; i++) {
        when[i] = i % 11 == 10 ? -1 : i % 3 == 0 ? 36000 : (i * 7919) % 86400;
    }
    for (i = 1; i <= 400; i *= 2) {             /* runs of 1 to 256 visits */
        f = timed_input(when, 200);
        ck_assert_int_eq(take_by_time(f, when, 200, 7, i, &runs, &err), 182);
        ck_assert_int_eq(err, 0);
        ck_assert_int_eq(runs, (182 + i - 1) / i);
        fclose(f);
    }
    /* the same through a first batch of two halves (64 lines or more) */
    f = timed_input(when, 200);
    ck_assert_int_eq(take_by_time(f, when, 200, 150, 1000, &runs, &err), 182);
    ck_assert_int_eq(runs, 1);
    fclose(f);
}
END_TEST

/* when's file through a by-time reader (batches of 4, runs of run visits): the visits
 * handed out, the runs and the bad line must be these. */
static void bad_run(const int *when, int n, long run, int visits, int runs, long line)
{
    FILE *f = timed_input(when, n);
    int got_runs;
    long err;

    ck_assert_int_eq(take_by_time(f, when, n, 4, run, &got_runs, &err), visits);
    ck_assert_int_eq(got_runs, runs);
    ck_assert_int_eq(err, line);
    fclose(f);
}

/* A line of 512 MB, read under an address-space limit that could not hold it: an error
 * at its line (a line of more than 16 MB), read to its end in bounded memory, never the end
 * of the input, for a pipe's reader and a file's by time (nothing of the run handed out).
 * getline kept such a line whole: the limit made it fail with ENOMEM, which was taken for
 * the end (the import ended as though the file stopped there); without a limit a line of
 * 400 MB took 1.3 GB. The long line is a hole in a sparse file: no disk written. */
static FILE *with_a_line_too_long(void)
{
    FILE *f = tmpfile();
    long at;

    ck_assert_ptr_nonnull(f);
    fprintf(f, "{\"tracker_id\": 1, \"visit_start\": \"2026-03-01T10:00:00Z\", "
            "\"source\": \"scan\"}\n");
    at = ftell(f);
    ck_assert_int_eq(fseek(f, at + (512L << 20), SEEK_SET), 0);
    fprintf(f, "\n{\"tracker_id\": 2, \"visit_start\": \"2026-03-01T10:00:00Z\", "
            "\"source\": \"scan\"}\n");
    rewind(f);
    return f;
}

#ifdef __SANITIZE_ADDRESS__
/* (make test-asan: an allocation the limit refuses returns NULL, as without the sanitizer,
 * rather than ending the process) */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}
#endif

static void limit_address_space(void)
{
    struct rlimit rl;
    unsigned long pages = 0;
    FILE *statm = fopen("/proc/self/statm", "r");

    ck_assert_ptr_nonnull(statm);
    ck_assert_int_eq(fscanf(statm, "%lu", &pages), 1);
    fclose(statm);
    /* what the process maps now, and room for the reader's threads, not for the line */
    rl.rlim_cur = rl.rlim_max = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (256UL << 20);
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &rl), 0);
}

START_TEST(a_line_too_long_for_memory_is_an_error_not_the_end)
{
    const qrt_import_batch_t *b;
    qrt_import_reader_t *r;
    FILE *f = with_a_line_too_long();
    int seen = 0;

    limit_address_space();
    r = qrt_import_start(pool, f, NULL, 1000, 0);
    ck_assert_ptr_nonnull(r);
    while ((b = qrt_import_next(r)) != NULL && !b->error) {
        seen += b->n;
    }
    ck_assert_ptr_nonnull(b);
    ck_assert_str_eq(b->error, "a line of more than 16 MB");
    ck_assert_int_eq(b->error_line, 2);
    ck_assert_int_eq(qrt_import_read_error(r), 0);
    ck_assert_int_le(seen, 1);
    qrt_import_stop(r);
    fclose(f);
}
END_TEST

START_TEST(by_time_a_line_too_long_for_memory_fails_its_run_unwritten)
{
    qrt_import_reader_t *r;
    FILE *f = with_a_line_too_long();

    const qrt_import_batch_t *b;

    limit_address_space();
    r = qrt_import_start_by_time(pool, f, NULL, 1000, 0, 1000);
    ck_assert_ptr_nonnull(r);
    b = qrt_import_next(r);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(b->n, 0);
    ck_assert_str_eq(b->error, "a line of more than 16 MB");
    ck_assert_int_eq(b->error_line, 2);
    ck_assert_int_eq(qrt_import_read_error(r), 0);
    qrt_import_stop(r);
    fclose(f);
}
END_TEST

START_TEST(by_time_a_bad_line_fails_its_run_unwritten)
{
    int when[100], i;

    for (i = 0; i < 100; i++) {
        when[i] = 50000 - i * 13;
    }
    when[71] = -2;                      /* line 72, in the third run of 30: two runs out */
    bad_run(when, 100, 30, 60, 2, 72);
    bad_run(when, 100, 1000, 0, 0, 72); /* in a run of all: nothing */
    /* on the first line, and among 64 or more (two threads check a chunk) */
    when[71] = 10;
    when[0] = -2;
    bad_run(when, 100, 1000, 0, 0, 1);
    when[0] = 10;
    when[40] = when[90] = -2;
    bad_run(when, 100, 1000, 0, 0, 41);
}
END_TEST

START_TEST(by_time_wants_a_file_and_sees_it_cut)
{
    int when[40], fd[2], i, total = 0;
    qrt_import_reader_t *r;
    const qrt_import_batch_t *b;
    FILE *f, *p;

    for (i = 0; i < 40; i++) {
        when[i] = 40 - i;
    }
    ck_assert_int_eq(pipe(fd), 0);
    p = fdopen(fd[0], "r");
    ck_assert_ptr_null(qrt_import_start_by_time(pool, p, NULL, 4, 0, 10));
    fclose(p);
    close(fd[1]);
    f = timed_input(when, 40);
    ck_assert_ptr_null(qrt_import_start_by_time(pool, f, NULL, 4, 0, 0));
    /* cut short after its first reading: a read error, not a visit more of the cut */
    r = qrt_import_start_by_time(pool, f, NULL, 2, 0, 100);
    b = qrt_import_next(r);
    ck_assert_int_eq(b->n, 2);
    ck_assert_int_eq(b->line[0], 40);           /* the latest line, the earliest time */
    ck_assert_int_eq(ftruncate(fileno(f), 100), 0);
    total = b->n;
    while ((b = qrt_import_next(r)) != NULL) {
        ck_assert_ptr_null(b->error);
        total += b->n;
    }
    ck_assert_int_lt(total, 40);
    ck_assert_int_eq(qrt_import_read_error(r), EIO);
    qrt_import_stop(r);
    fclose(f);
    /* stopped early, in its first run */
    f = timed_input(when, 40);
    r = qrt_import_start_by_time(pool, f, NULL, 3, 0, 100);
    ck_assert_int_eq(qrt_import_next(r)->n, 3);
    qrt_import_stop(r);
    qrt_import_stop(qrt_import_start_by_time(pool, f, NULL, 3, 0, 100));
    fclose(f);
}
END_TEST

/* A file in time order is read by the MB (adjacent lines at once), a line longer than
 * that alone; batches still end at size visits or at the line that brings their text to
 * the byte budget, as a pipe's do. */
START_TEST(by_time_reads_adjacent_lines_at_once)
{
    FILE *f = tmpfile();
    char *pad = malloc(1536 * 1024 + 1);
    long len[300];
    int k, i, total = 0;
    qrt_import_reader_t *r;
    const qrt_import_batch_t *b;

    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(pad);
    memset(pad, 'x', 1536 * 1024);
    pad[1536 * 1024] = '\0';
    for (i = 0; i < 300; i++) {
        long at = ftell(f);

        fprintf(f, "{\"tracker_id\": %d, \"visit_start\": \"2026-03-01T10:%02d:%02dZ\","
                " \"source\": \"scan\", \"ip\": \"10.0.0.%d\", \"city\": \"c%d\", \"pad\": \"%s\"}\n",
                i + 1, i / 60, i % 60, i % 250, i % 250, i == 150 ? pad : i % 7 ? "" : "yy");
        len[i] = ftell(f) - at;
    }
    free(pad);
    rewind(f);
    for (k = 0; k < 2; k++) {
        apr_size_t budget = k ? 3000 : 0, used = 0;
        int want_n = 0, line = 0;

        r = qrt_import_start_by_time(pool, f, NULL, 40, budget, 1000);
        ck_assert_ptr_nonnull(r);
        total = 0;
        while ((b = qrt_import_next(r)) != NULL) {
            check_batch(b);
            /* the batch the rule makes from the lines' own lengths */
            want_n = 0;
            used = 0;
            while (line < 300 && want_n < 40 && !(budget && used >= budget)) {
                used += (apr_size_t)len[line++];
                want_n++;
            }
            ck_assert_int_eq(b->n, want_n);
            for (i = 0; i < b->n; i++) {
                ck_assert_int_eq(b->line[i], total + i + 1);
            }
            if (b->line[0] <= 151 && b->line[b->n - 1] >= 151) {
                ck_assert_int_eq(strlen(b->v[150 - total].city), 4);
            }
            total += b->n;
        }
        ck_assert_int_eq(total, 300);
        ck_assert_int_eq(qrt_import_read_error(r), 0);
        qrt_import_stop(r);
        rewind(f);
    }
    fclose(f);
}
END_TEST

static Suite *import_suite(void)
{
    Suite *s = suite_create("qrt_import");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, reads_a_visit_either_way);
    tcase_add_test(tc, blank_lines_are_nothing);
    tcase_add_test(tc, rejects_what_is_not_a_visit);
    tcase_add_test(tc, addresses_devices_and_times_as_the_module_has_them);
    tcase_add_test(tc, nul_bytes_are_errors);
    tcase_add_test(tc, a_nul_line_ends_the_input);
    tcase_add_test(tc, batches_keep_their_lines);
    tcase_add_test(tc, a_bad_line_ends_the_input);
    tcase_add_test(tc, first_batch_in_two_halves);
    tcase_add_test(tc, stops_early_and_ends_empty);
    tcase_add_test(tc, reads_a_pipe);
    tcase_add_test(tc, batches_end_at_their_bytes);
    tcase_add_test(tc, by_time_hands_each_run_out_in_time_order);
    tcase_add_test(tc, by_time_a_bad_line_fails_its_run_unwritten);
    tcase_add_test(tc, by_time_wants_a_file_and_sees_it_cut);
    tcase_add_test(tc, a_line_too_long_for_memory_is_an_error_not_the_end);
    tcase_add_test(tc, by_time_a_line_too_long_for_memory_fails_its_run_unwritten);
    tcase_add_test(tc, by_time_reads_adjacent_lines_at_once);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(import_suite());
}
