/* Unit tests for qrt_form.c: multipart/form-data and urlencoded bodies. */

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "apr_general.h"
#include "apr_strings.h"
#include "apr_tables.h"

#include "qrt_form.h"
#include "qrt_check.h"

#define CT "multipart/form-data; boundary=XyZ123"
#define B  "XyZ123"

QRT_CHECK_POOL

typedef struct {
    apr_status_t feed_rv;    /* first failing feed, or APR_SUCCESS */
    apr_status_t rv;         /* overall result */
    const char *err;
    apr_table_t *fields;
} result_t;

/* Parse body with a fresh parser, fed in chunks of `chunk` bytes
 * (0 = all at once). */
static result_t run_lim(const char *ct, const qrt_multipart_limits_t *l,
                        const char *body, apr_size_t len, apr_size_t chunk)
{
    result_t res;
    qrt_multipart_t *mp;
    apr_size_t off = 0;

    memset(&res, 0, sizeof(res));
    res.fields = apr_table_make(pool, 4);
    mp = qrt_multipart_create(pool, ct, l, &res.err);
    ck_assert_msg(mp != NULL, "create failed: %s", res.err);
    if (chunk == 0) {
        chunk = len ? len : 1;
    }
    while (off < len) {
        apr_size_t n = len - off < chunk ? len - off : chunk;

        res.rv = qrt_multipart_feed(mp, body + off, n, &res.err);
        if (res.rv != APR_SUCCESS) {
            res.feed_rv = res.rv;
            /* the error sticks */
            ck_assert_int_eq(qrt_multipart_feed(mp, "x", 1, &res.err),
                             res.rv);
            ck_assert_int_eq(qrt_multipart_finish(mp, res.fields, &res.err),
                             res.rv);
            ck_assert_int_eq(apr_table_elts(res.fields)->nelts, 0);
            return res;
        }
        off += n;
    }
    res.rv = qrt_multipart_finish(mp, res.fields, &res.err);
    if (res.rv != APR_SUCCESS) {
        ck_assert_ptr_nonnull(res.err);
        ck_assert_int_eq(apr_table_elts(res.fields)->nelts, 0);
    }
    return res;
}

static result_t run(const char *body, apr_size_t chunk)
{
    return run_lim(CT, NULL, body, strlen(body), chunk);
}

/* Check fields against name/value pairs, in order, NULL-terminated. */
static void expect_fields(apr_table_t *t, ...)
{
    const apr_array_header_t *arr = apr_table_elts(t);
    const apr_table_entry_t *e = (const apr_table_entry_t *)arr->elts;
    const char *k;
    va_list ap;
    int i = 0;

    va_start(ap, t);
    while ((k = va_arg(ap, const char *)) != NULL) {
        const char *v = va_arg(ap, const char *);

        ck_assert_msg(i < arr->nelts, "missing field %s", k);
        ck_assert_str_eq(e[i].key, k);
        ck_assert_str_eq(e[i].val, v);
        i++;
    }
    va_end(ap);
    ck_assert_int_eq(arr->nelts, i);
}

static const char normal_body[] =
    "This is the preamble, ignored. --" B " is not at a line start\r\n"
    "\r\n"
    "--" B "\r\n"
    "Content-Disposition: form-data; name=\"type\"\r\n"
    "\r\n"
    "wifi\r\n"
    "--" B "\r\n"
    "Content-Disposition: form-data; name=\"network_name\"\r\n"
    "Content-Type: text/plain; charset=utf-8\r\n"
    "\r\n"
    "Caf\xc3\xa9 \"5G\"\r\n"
    "--" B "\r\n"
    "Content-Disposition: form-data; name=\"multi\"\r\n"
    "\r\n"
    "line1\r\nline2\r\n--XyZ12x is no boundary\r\n-- \r\n--XyZ12\r\r\n"
    "--" B "\r\n"
    "Content-Disposition: form-data; name=\"empty\"\r\n"
    "\r\n"
    "\r\n"
    "--" B "\r\n"
    "Content-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n"
    "Content-Type: text/plain\r\n"
    "\r\n"
    "file\r\ncontent\r\r\n"
    "--" B "\r\n"
    "Content-Disposition: form-data; name=\"type\"\r\n"
    "\r\n"
    "url\r\n"
    "--" B "--\r\n"
    "This is the epilogue.\r\n--" B "\r\ngarbage that is ignored\r\n";

static void expect_normal(const result_t *res)
{
    ck_assert_msg(res->rv == APR_SUCCESS, "rv %d: %s", res->rv, res->err);
    expect_fields(res->fields,
                  "type", "wifi",
                  "network_name", "Caf\xc3\xa9 \"5G\"",
                  "multi", "line1\r\nline2\r\n--XyZ12x is no boundary"
                           "\r\n-- \r\n--XyZ12\r",
                  "empty", "",
                  "file", "file\r\ncontent\r",
                  "type", "url",
                  NULL);
}

START_TEST(test_create)
{
    static const char *good[] = {
        "multipart/form-data; boundary=abc",
        "Multipart/Form-Data;boundary=abc",
        "multipart/form-data; charset=utf-8; boundary=\"----WebKitFormBoundary7MA4YWxkTrZu0gW\"",
        "multipart/form-data; BOUNDARY = abc ; foo=bar;",
        "multipart/form-data; boundary=\"a b'()+_,-./:=?\"",
        "multipart/form-data; boundary=----=_Part_0_1.2",
        "  multipart/form-data ;boundary=1",
        "multipart/form-data; boundary=1234567890123456789012345678901234567890123456789012345678901234567890",
        NULL
    };
    static const char *bad[] = {
        "multipart/form-data",
        "multipart/form-data;",
        "multipart/form-data; boundary=",
        "multipart/form-data; boundary=\"\"",
        "multipart/form-data; boundary=\"abc \"",
        "multipart/form-data; boundary=a@b",
        "multipart/form-data; boundary=\"a\\\"b\"",
        "multipart/form-data; boundary=\"abc",
        "multipart/form-data; boundary=a; boundary=b",
        "multipart/form-data; boundary=12345678901234567890123456789012345678901234567890123456789012345678901",
        "multipart/form-data boundary=abc",
        "multipart/form-dataX; boundary=abc",
        "multipart/mixed; boundary=abc",
        "multipart; boundary=abc",
        "text/plain; boundary=abc",
        "application/x-www-form-urlencoded",
        "",
        "multipart/form-data; =abc",
        "multipart/form-data; boundary abc",
        "multipart/form-data; boundary=\"a\x01\"",
        NULL
    };
    const char *err;
    int i;

    for (i = 0; good[i]; i++) {
        err = NULL;
        ck_assert_msg(qrt_multipart_create(pool, good[i], NULL, &err) != NULL,
                      "rejected %s: %s", good[i], err);
    }
    for (i = 0; bad[i]; i++) {
        err = NULL;
        ck_assert_msg(qrt_multipart_create(pool, bad[i], NULL, &err) == NULL,
                      "accepted %s", bad[i]);
        ck_assert_ptr_nonnull(err);
    }
    err = NULL;
    ck_assert_ptr_null(qrt_multipart_create(pool, NULL, NULL, &err));
    ck_assert_ptr_nonnull(err);
}
END_TEST

START_TEST(test_file_part_keeps_its_bytes)
{
    static const char body[] =
        "--XyZ123\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nbrand\r\n"
        "--XyZ123\r\nContent-Disposition: form-data; name=\"logo\"; filename=\"l.png\"\r\n"
        "Content-Type: image/png\r\n\r\n\x89PNG\0\0\r\n\r\n--XyZ123--\r\n";
    apr_table_t *fields = apr_table_make(pool, 4);
    const char *err = NULL, *data = NULL;
    apr_size_t len = 0;
    qrt_multipart_t *mp = qrt_multipart_create(pool, CT, NULL, &err);

    ck_assert_int_eq(qrt_multipart_feed(mp, body, sizeof(body) - 1, &err), APR_SUCCESS);
    ck_assert_int_eq(qrt_multipart_finish_file(mp, fields, "logo", &data, &len, &err),
                     APR_SUCCESS);
    ck_assert_str_eq(apr_table_get(fields, "name"), "brand");
    ck_assert_ptr_null(apr_table_get(fields, "logo"));
    ck_assert_uint_eq(len, 8);
    ck_assert_mem_eq(data, "\x89PNG\0\0\r\n", 8);
    /* without naming it, the same body is refused (a NUL in a field) */
    mp = qrt_multipart_create(pool, CT, NULL, &err);
    ck_assert_int_eq(qrt_multipart_feed(mp, body, sizeof(body) - 1, &err), APR_SUCCESS);
    ck_assert_int_eq(qrt_multipart_finish_file(mp, apr_table_make(pool, 4), "other", &data,
                                               &len, &err), APR_EINVAL);
    ck_assert_ptr_null(data);
}
END_TEST

START_TEST(test_limits_default)
{
    qrt_multipart_limits_t l;

    qrt_multipart_limits_default(&l);
    ck_assert_uint_eq(l.max_parts, 32);
    ck_assert_uint_eq(l.max_part_size, 64 * 1024);
    ck_assert_uint_eq(l.max_header_size, 8 * 1024);
}
END_TEST

START_TEST(test_normal)
{
    result_t res = run(normal_body, 0);

    expect_normal(&res);
}
END_TEST

START_TEST(test_every_chunk_size)
{
    apr_size_t len = strlen(normal_body), c;

    for (c = 1; c <= len; c++) {
        result_t res = run(normal_body, c);

        expect_normal(&res);
    }
}
END_TEST

START_TEST(test_random_chunks)
{
    apr_size_t len = strlen(normal_body);
    unsigned seed = 12345;
    int round;

    for (round = 0; round < 200; round++) {
        qrt_multipart_t *mp;
        apr_table_t *t = apr_table_make(pool, 4);
        const char *err = NULL;
        apr_size_t off = 0;
        result_t res;

        mp = qrt_multipart_create(pool, CT, NULL, &err);
        while (off < len) {
            apr_size_t n;

            seed = seed * 1103515245u + 12345u;
            n = 1 + (seed >> 16) % 17;
            if (n > len - off) {
                n = len - off;
            }
            ck_assert_int_eq(qrt_multipart_feed(mp, normal_body + off, n,
                                                &err), APR_SUCCESS);
            off += n;
        }
        memset(&res, 0, sizeof(res));
        res.rv = qrt_multipart_finish(mp, t, &res.err);
        res.fields = t;
        expect_normal(&res);
    }
}
END_TEST

START_TEST(test_empty_chunks)
{
    qrt_multipart_t *mp;
    apr_table_t *t = apr_table_make(pool, 4);
    const char *err;
    apr_size_t i, len = strlen(normal_body);

    mp = qrt_multipart_create(pool, CT, NULL, &err);
    for (i = 0; i < len; i++) {
        ck_assert_int_eq(qrt_multipart_feed(mp, normal_body + i, 0, &err),
                         APR_SUCCESS);
        ck_assert_int_eq(qrt_multipart_feed(mp, normal_body + i, 1, &err),
                         APR_SUCCESS);
    }
    ck_assert_int_eq(qrt_multipart_finish(mp, t, &err), APR_SUCCESS);
    ck_assert_str_eq(apr_table_get(t, "type"), "wifi");
    ck_assert_str_eq(apr_table_get(t, "file"), "file\r\ncontent\r");
}
END_TEST

START_TEST(test_no_preamble_and_padding)
{
    /* boundary first; transport padding after a delimiter */
    result_t res = run("--" B " \t\r\n"
                       "Content-Disposition: form-data; name=\"a\"\r\n"
                       "\r\n"
                       "1\r\n"
                       "--" B "\t\r\n"
                       "Content-Disposition: form-data; name=\"b\"\r\n"
                       "\r\n"
                       "2\r\n"
                       "--" B "--", 1);

    ck_assert_msg(res.rv == APR_SUCCESS, "%s", res.err);
    expect_fields(res.fields, "a", "1", "b", "2", NULL);
}
END_TEST

START_TEST(test_bare_lf_headers)
{
    static const char body[] =
        "--" B "\n"
        "Content-Disposition: form-data; name=\"a\"\n"
        "X-Other: y\r\n"
        "\n"
        "v1\r\n"
        "--" B "\r\n"
        "Content-Disposition: form-data; name=\"b\"\r\n"
        "\n"
        "v2\n\r\n"
        "--" B "--\n";
    apr_size_t c;

    for (c = 0; c <= 5; c++) {
        result_t res = run(body, c);

        ck_assert_msg(res.rv == APR_SUCCESS, "%s", res.err);
        expect_fields(res.fields, "a", "v1", "b", "v2\n", NULL);
    }
}
END_TEST

START_TEST(test_header_case_and_quoting)
{
    result_t res = run("--" B "\r\n"
                       "content-DISPOSITION:FORM-DATA;NAME=\"a;b\"\r\n"
                       "\r\n"
                       "1\r\n"
                       "--" B "\r\n"
                       "Content-Disposition: form-data; name=\"q\\\"x\\\\y\"; "
                       "filename=\"C:\\\\dir\\\\f;n.txt\"\r\n"
                       "\r\n"
                       "2\r\n"
                       "--" B "\r\n"
                       "Content-Disposition: form-data ; name = plain ;\r\n"
                       "\r\n"
                       "3\r\n"
                       "--" B "\r\n"
                       "Content-Disposition: form-data; filename=\"name=x\"; "
                       "name=\"n\xc3\xa4me\"; filename*=UTF-8''a%20b\r\n"
                       "\r\n"
                       "4\r\n"
                       "--" B "--\r\n", 3);

    ck_assert_msg(res.rv == APR_SUCCESS, "%s", res.err);
    expect_fields(res.fields, "a;b", "1", "q\"x\\y", "2", "plain", "3",
                  "n\xc3\xa4me", "4", NULL);
}
END_TEST

START_TEST(test_boundary_lookalikes)
{
    /* partial delimiters in content, CRs before the real one, a quoted
     * boundary with a space and punctuation */
    static const char ct[] = "multipart/form-data; boundary=\"a b:c\"";
    static const char body[] =
        "--a b:c\r\n"
        "Content-Disposition: form-data; name=\"v\"\r\n"
        "\r\n"
        "\r\r\n\r\n-\r\n--\r\n--a\r\n--a b\r\n--a b:\r\r\r\n"
        "--a b:c\r\n"
        "Content-Disposition: form-data; name=\"w\"\r\n"
        "\r\n"
        "--a b:c"
        "\r\n--a b:c--";
    apr_size_t c;

    for (c = 0; c <= 9; c++) {
        result_t res = run_lim(ct, NULL, body, strlen(body), c);

        ck_assert_msg(res.rv == APR_SUCCESS, "%s", res.err);
        expect_fields(res.fields,
                      "v", "\r\r\n\r\n-\r\n--\r\n--a\r\n--a b\r\n--a b:\r\r",
                      "w", "--a b:c", NULL);
    }
}
END_TEST

START_TEST(test_zero_parts)
{
    result_t res = run("preamble\r\n--" B "--\r\nepilogue", 1);

    ck_assert_int_eq(res.rv, APR_SUCCESS);
    expect_fields(res.fields, NULL);
}
END_TEST

START_TEST(test_limit_parts)
{
    qrt_multipart_limits_t l;
    const char *two =
        "--" B "\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n"
        "--" B "\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n2\r\n"
        "--" B "--\r\n";
    const char *three =
        "--" B "\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n"
        "--" B "\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n2\r\n"
        "--" B "\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n3\r\n"
        "--" B "--\r\n";
    result_t res;
    apr_size_t c;

    qrt_multipart_limits_default(&l);
    l.max_parts = 2;
    for (c = 0; c <= 2; c++) {
        res = run_lim(CT, &l, two, strlen(two), c);
        ck_assert_int_eq(res.rv, APR_SUCCESS);
        expect_fields(res.fields, "a", "1", "a", "2", NULL);
        res = run_lim(CT, &l, three, strlen(three), c);
        ck_assert_int_eq(res.feed_rv, APR_ENOSPC);
        ck_assert_str_eq(res.err, "too many parts");
    }
    l.max_parts = 0;
    res = run_lim(CT, &l, two, strlen(two), 0);
    ck_assert_int_eq(res.rv, APR_ENOSPC);
}
END_TEST

START_TEST(test_limit_part_size)
{
    qrt_multipart_limits_t l;
    const char *fmt = "--" B "\r\nContent-Disposition: form-data; name=\"a\"%s"
                      "\r\n\r\n%s\r\n--" B "--\r\n";
    static const char *ok[] = {"", "12345", "1234\r", "\r\n--X", NULL};
    static const char *big[] = {"123456", "1234\r\n", "\r\n--XyZ1",
                                "12345\r\n--XyZ12", "\r\n--XyZ12", NULL};
    result_t res;
    apr_size_t c;
    int i;

    qrt_multipart_limits_default(&l);
    l.max_part_size = 5;
    for (c = 0; c <= 3; c++) {
        for (i = 0; ok[i]; i++) {
            const char *b = apr_psprintf(pool, fmt, "", ok[i]);

            res = run_lim(CT, &l, b, strlen(b), c);
            ck_assert_msg(res.rv == APR_SUCCESS, "%s: %s", ok[i], res.err);
            expect_fields(res.fields, "a", ok[i], NULL);
            /* file parts count the same */
            b = apr_psprintf(pool, fmt, "; filename=\"f.bin\"", ok[i]);
            res = run_lim(CT, &l, b, strlen(b), c);
            ck_assert_int_eq(res.rv, APR_SUCCESS);
        }
        for (i = 0; big[i]; i++) {
            const char *b = apr_psprintf(pool, fmt, "; filename=\"f\"", big[i]);

            res = run_lim(CT, &l, b, strlen(b), c);
            ck_assert_msg(res.feed_rv == APR_ENOSPC, "%s: rv %d", big[i],
                          res.rv);
            ck_assert_str_eq(res.err, "part too large");
        }
    }
}
END_TEST

START_TEST(test_limit_default_part_size)
{
    apr_size_t n = 64 * 1024, c;
    char *v = apr_palloc(pool, n + 2);
    const char *head = "--" B "\r\nContent-Disposition: form-data; "
                       "name=\"big\"\r\n\r\n";
    const char *tail = "\r\n--" B "--";
    char *body;
    apr_size_t blen;
    result_t res;

    memset(v, 'x', n + 1);
    v[n + 1] = '\0';
    body = apr_pstrcat(pool, head, v, tail, NULL);
    blen = strlen(body);
    res = run_lim(CT, NULL, body, blen, 4096);
    ck_assert_int_eq(res.feed_rv, APR_ENOSPC);
    v[n] = '\0';
    body = apr_pstrcat(pool, head, v, tail, NULL);
    blen = strlen(body);
    for (c = 0; c < 3; c++) {
        res = run_lim(CT, NULL, body, blen, c == 0 ? 0 : (c == 1 ? 1 : 1000));
        ck_assert_int_eq(res.rv, APR_SUCCESS);
        ck_assert_uint_eq(strlen(apr_table_get(res.fields, "big")), n);
    }
}
END_TEST

START_TEST(test_limit_header_size)
{
    qrt_multipart_limits_t l;
    const char *hdr = "Content-Disposition: form-data; name=\"a\"\r\n\r\n";
    const char *body = apr_pstrcat(pool, "--" B "\r\n", hdr,
                                   "v\r\n--" B "--\r\n", NULL);
    result_t res;
    apr_size_t c;

    qrt_multipart_limits_default(&l);
    for (c = 0; c <= 2; c++) {
        l.max_header_size = strlen(hdr);
        res = run_lim(CT, &l, body, strlen(body), c);
        ck_assert_int_eq(res.rv, APR_SUCCESS);
        l.max_header_size = strlen(hdr) - 1;
        res = run_lim(CT, &l, body, strlen(body), c);
        ck_assert_int_eq(res.feed_rv, APR_ENOSPC);
        ck_assert_str_eq(res.err, "part headers too large");
    }
    /* an endless header line is cut off at the default limit */
    {
        apr_size_t n = 100000;
        char *junk = apr_palloc(pool, n + 1);

        memset(junk, 'h', n);
        junk[n] = '\0';
        body = apr_pstrcat(pool, "--" B "\r\nX-Junk: ", junk, NULL);
        res = run_lim(CT, NULL, body, strlen(body), 777);
        ck_assert_int_eq(res.feed_rv, APR_ENOSPC);
    }
}
END_TEST

START_TEST(test_big_preamble_epilogue)
{
    /* megabytes outside the parts are skipped, not stored */
    apr_size_t n = 4 * 1024 * 1024;
    char *junk = apr_palloc(pool, n + 1);
    char *body;
    result_t res;

    memset(junk, '\r', n);
    junk[n] = '\0';
    body = apr_pstrcat(pool, junk, "\r\n--" B "\r\n"
                       "Content-Disposition: form-data; name=\"a\"\r\n\r\n1"
                       "\r\n--" B "--", junk, NULL);
    res = run_lim(CT, NULL, body, strlen(body), 65536);
    ck_assert_int_eq(res.rv, APR_SUCCESS);
    expect_fields(res.fields, "a", "1", NULL);
}
END_TEST

typedef struct {
    const char *body;
    apr_status_t rv;
    const char *err;      /* NULL: any message */
} bad_case_t;

#define CD "Content-Disposition: form-data; name=\"a\"\r\n"
#define OPEN "--" B "\r\n"
#define CLOSE "\r\n--" B "--\r\n"

static const bad_case_t bad_cases[] = {
    /* structure */
    {"", APR_EINVAL, "multipart body ends without closing boundary"},
    {"just text", APR_EINVAL, "multipart body ends without closing boundary"},
    {OPEN, APR_EINVAL, "multipart body ends without closing boundary"},
    {OPEN CD, APR_EINVAL, "multipart body ends without closing boundary"},
    {OPEN CD "\r\nvalue", APR_EINVAL,
     "multipart body ends without closing boundary"},
    {OPEN CD "\r\nvalue\r\n--" B, APR_EINVAL,
     "multipart body ends without closing boundary"},
    {OPEN CD "\r\nvalue\r\n--" B "-", APR_EINVAL,
     "multipart body ends without closing boundary"},
    {OPEN CD "\r\nvalue\r\n--" B "\r\n", APR_EINVAL,
     "multipart body ends without closing boundary"},
    {OPEN CD "\r\nvalue\r\n--XyZ12", APR_EINVAL,
     "multipart body ends without closing boundary"},
    {OPEN CD "\r\nvalue--" B "--", APR_EINVAL,
     "multipart body ends without closing boundary"},
    {"--" B "x\r\n" CD "\r\nv" CLOSE, APR_EINVAL, "garbage after boundary"},
    {OPEN CD "\r\nv\r\n--" B "-x", APR_EINVAL, "garbage after boundary"},
    {OPEN CD "\r\nv\r\n--" B " x\r\n", APR_EINVAL, "garbage after boundary"},
    {OPEN CD "\r\nv\r\n--" B "\rx", APR_EINVAL, "garbage after boundary"},
    {OPEN CD "\r\nv\r\n--" B "0--", APR_EINVAL, "garbage after boundary"},
    /* headers */
    {OPEN "\r\nv" CLOSE, APR_EINVAL, "part has no Content-Disposition"},
    {OPEN "Content-Type: text/plain\r\n\r\nv" CLOSE, APR_EINVAL,
     "part has no Content-Disposition"},
    {OPEN "Content-Disposition: form-data\r\n\r\nv" CLOSE, APR_EINVAL,
     "part has no name"},
    {OPEN "Content-Disposition: form-data; filename=\"f\"\r\n\r\nv" CLOSE,
     APR_EINVAL, "part has no name"},
    {OPEN "Content-Disposition: form-data; name=\"\"\r\n\r\nv" CLOSE,
     APR_EINVAL, "part has an empty name"},
    {OPEN "Content-Disposition: form-data; name=\"a\"; name=\"b\"\r\n\r\nv"
     CLOSE, APR_EINVAL, "part has two name parameters"},
    {OPEN CD CD "\r\nv" CLOSE, APR_EINVAL,
     "part has two Content-Disposition headers"},
    {OPEN "Content-Disposition: attachment; name=\"a\"\r\n\r\nv" CLOSE,
     APR_EINVAL, "part is not form-data"},
    {OPEN "Content-Disposition: name=\"a\"\r\n\r\nv" CLOSE, APR_EINVAL,
     "part is not form-data"},
    {OPEN "Content-Disposition: form-data; name=\"a\r\n\r\nv" CLOSE,
     APR_EINVAL, "malformed Content-Disposition"},
    {OPEN "Content-Disposition: form-data; name=\"a\\\"\r\n\r\nv" CLOSE,
     APR_EINVAL, "malformed Content-Disposition"},
    {OPEN "Content-Disposition: form-data; name\r\n\r\nv" CLOSE,
     APR_EINVAL, "malformed Content-Disposition"},
    {OPEN "Content-Disposition: form-data; name=\r\n\r\nv" CLOSE,
     APR_EINVAL, "malformed Content-Disposition"},
    {OPEN "Content-Disposition: form-data; name=\"a\" x\r\n\r\nv" CLOSE,
     APR_EINVAL, "malformed Content-Disposition"},
    {OPEN "Content-Disposition: form-data, name=\"a\"\r\n\r\nv" CLOSE,
     APR_EINVAL, "malformed Content-Disposition"},
    {OPEN "Content-Disposition: form-data; name=\"a\tb\x01\"\r\n\r\nv" CLOSE,
     APR_EINVAL, "malformed Content-Disposition"},
    {OPEN "Content-Disposition form-data; name=\"a\"\r\n\r\nv" CLOSE,
     APR_EINVAL, "malformed part header"},
    {OPEN "Content-Disposition : form-data; name=\"a\"\r\n\r\nv" CLOSE,
     APR_EINVAL, "malformed part header"},
    {OPEN ": x\r\n" CD "\r\nv" CLOSE, APR_EINVAL, "malformed part header"},
    {OPEN CD " folded\r\n\r\nv" CLOSE, APR_EINVAL, "folded part header"},
    {OPEN "Content-Disposition: form-data;\r\n name=\"a\"\r\n\r\nv" CLOSE,
     APR_EINVAL, "folded part header"},
    {OPEN "Content-Disposition: form-data; name=\"a\"\r\r\n\r\nv" CLOSE,
     APR_EINVAL, "bad byte in part header"},
    {OPEN "X-A: a\rb\r\n" CD "\r\nv" CLOSE, APR_EINVAL,
     "bad byte in part header"},
    {NULL, 0, NULL}
};

START_TEST(test_malformed)
{
    int i;
    apr_size_t c;

    for (i = 0; bad_cases[i].body; i++) {
        for (c = 0; c <= 3; c++) {
            result_t res = run(bad_cases[i].body, c);

            ck_assert_msg(res.rv == bad_cases[i].rv,
                          "case %d chunk %u: rv %d (%s)", i, (unsigned)c,
                          res.rv, res.err ? res.err : "-");
            if (bad_cases[i].err) {
                ck_assert_msg(!strcmp(res.err, bad_cases[i].err),
                              "case %d: err '%s', want '%s'", i, res.err,
                              bad_cases[i].err);
            }
        }
    }
}
END_TEST

START_TEST(test_nul_bytes)
{
    static const char in_value[] =
        OPEN CD "\r\n" "a\0b" CLOSE;
    static const char in_header[] =
        OPEN "Content-Disposition: form-data; name=\"a\0\"\r\n\r\nv" CLOSE;
    static const char ok_first[] =
        OPEN CD "\r\nok\r\n" OPEN "Content-Disposition: form-data; "
        "name=\"f\"; filename=\"x.bin\"\r\n\r\n\0\1\2" CLOSE;
    result_t res;
    apr_size_t c;

    for (c = 0; c <= 2; c++) {
        res = run_lim(CT, NULL, in_value, sizeof(in_value) - 1, c);
        ck_assert_int_eq(res.feed_rv, APR_SUCCESS);
        ck_assert_int_eq(res.rv, APR_EINVAL);
        ck_assert_str_eq(res.err, "a form field contains a NUL byte");
        res = run_lim(CT, NULL, in_header, sizeof(in_header) - 1, c);
        ck_assert_int_eq(res.feed_rv, APR_EINVAL);
        ck_assert_str_eq(res.err, "bad byte in part header");
        /* nothing is added when any part has a NUL */
        res = run_lim(CT, NULL, ok_first, sizeof(ok_first) - 1, c);
        ck_assert_int_eq(res.rv, APR_EINVAL);
        ck_assert_int_eq(apr_table_elts(res.fields)->nelts, 0);
    }
}
END_TEST

START_TEST(test_pool_cleanup)
{
    /* a parser abandoned mid-part frees its buffers with its pool */
    apr_pool_t *sub;
    qrt_multipart_t *mp;
    const char *err;
    int i;

    for (i = 0; i < 100; i++) {
        apr_pool_create(&sub, pool);
        mp = qrt_multipart_create(sub, CT, NULL, &err);
        ck_assert_ptr_nonnull(mp);
        ck_assert_int_eq(qrt_multipart_feed(mp, OPEN "X-H: 12345", 15, &err),
                         APR_SUCCESS);
        ck_assert_int_eq(qrt_multipart_feed(mp, "\r\n" CD "\r\nsome value",
                                            strlen(CD) + 14, &err),
                         APR_SUCCESS);
        apr_pool_destroy(sub);
    }
}
END_TEST

/* --- urlencoded --------------------------------------------------------- */

static apr_status_t urlenc(const char *s, apr_table_t **t, const char **err)
{
    *t = apr_table_make(pool, 4);
    *err = NULL;
    return qrt_form_urlencoded(pool, s, strlen(s), *t, err);
}

START_TEST(test_urlencoded)
{
    apr_table_t *t;
    const char *err;

    ck_assert_int_eq(urlenc("a=1&b=2&a=3", &t, &err), APR_SUCCESS);
    expect_fields(t, "a", "1", "b", "2", "a", "3", NULL);
    ck_assert_int_eq(urlenc("name=J%C3%BCrgen+M%c3%bcller&x=%2B%20%41+%26%3d",
                            &t, &err), APR_SUCCESS);
    expect_fields(t, "name", "J\xc3\xbcrgen M\xc3\xbcller", "x", "+ A &=",
                  NULL);
    ck_assert_int_eq(urlenc("flag&x=1&other", &t, &err), APR_SUCCESS);
    expect_fields(t, "flag", "", "x", "1", "other", "", NULL);
    ck_assert_int_eq(urlenc("=v&a=&b==c&%41+b=%7e", &t, &err), APR_SUCCESS);
    expect_fields(t, "", "v", "a", "", "b", "=c", "A b", "~", NULL);
    ck_assert_int_eq(urlenc("&&a=1&&&", &t, &err), APR_SUCCESS);
    expect_fields(t, "a", "1", NULL);
    ck_assert_int_eq(urlenc("trackers[]=1&trackers%5B%5D=2", &t, &err),
                     APR_SUCCESS);
    expect_fields(t, "trackers[]", "1", "trackers[]", "2", NULL);
    ck_assert_int_eq(urlenc("", &t, &err), APR_SUCCESS);
    expect_fields(t, NULL);
    t = apr_table_make(pool, 1);
    ck_assert_int_eq(qrt_form_urlencoded(pool, NULL, 0, t, &err),
                     APR_SUCCESS);
    expect_fields(t, NULL);
    /* len is honoured, no NUL needed */
    t = apr_table_make(pool, 1);
    ck_assert_int_eq(qrt_form_urlencoded(pool, "a=1&b=2", 3, t, &err),
                     APR_SUCCESS);
    expect_fields(t, "a", "1", NULL);
    t = apr_table_make(pool, 1);
    ck_assert_int_eq(qrt_form_urlencoded(pool, "a=%41", 4, t, &err),
                     APR_EINVAL);
}
END_TEST

START_TEST(test_urlencoded_bad)
{
    static const char *bad[] = {
        "%00", "a=%00", "a=1&b=x%00y", "a=%", "a=%4", "a=%zz", "a=%G1",
        "%=1", "a%2=1", "a=1&b=%", "a=%%41", "a=1%0",
        NULL
    };
    apr_table_t *t;
    const char *err;
    int i;

    for (i = 0; bad[i]; i++) {
        ck_assert_msg(urlenc(bad[i], &t, &err) == APR_EINVAL,
                      "accepted %s", bad[i]);
        ck_assert_ptr_nonnull(err);
        /* nothing is added on error */
        ck_assert_int_eq(apr_table_elts(t)->nelts, 0);
    }
    t = apr_table_make(pool, 1);
    ck_assert_int_eq(qrt_form_urlencoded(pool, "a=1&b=x\0y", 9, t, &err),
                     APR_EINVAL);
    ck_assert_int_eq(apr_table_elts(t)->nelts, 0);
    ck_assert_int_eq(qrt_form_urlencoded(pool, "\0", 1, t, &err),
                     APR_EINVAL);
}
END_TEST

START_TEST(test_redact)
{
    static const char *cases[][2] = {
        { "api_token=abc", "api_token=[r]" },
        { "a=1&api_token=abc&b=2", "a=1&api_token=[r]&b=2" },
        { "api_token=abc&api_token=def", "api_token=[r]&api_token=[r]" },
        { "api%5Ftoken=abc", "api%5Ftoken=[r]" },
        { "api%5ftoken=abc&x=%zz", "api%5ftoken=[r]&x=%zz" },
        { "api_token=", "api_token=[r]" },
        { "a=1&&api_token=a%zz", "a=1&&api_token=[r]" },
        { "api_token=a=b&c", "api_token=[r]&c" },
        { "api_token%zz=1&api_token=2", "api_token%zz=1&api_token=[r]" },
        /* Matched the way the API looks the parameter up: case-insensitively,
         * the name %-decoded. */
        { "API_TOKEN=abc", "API_TOKEN=[r]" },
        { "a=1&Api_Token=abc", "a=1&Api_Token=[r]" },
        { "API%5FTOKEN=abc", "API%5FTOKEN=[r]" },
        { "%41pi%5fToKeN=abc&b=2", "%41pi%5fToKeN=[r]&b=2" },
        { "API_TOKEN%zz=1&API_TOKEN=2", "API_TOKEN%zz=1&API_TOKEN=[r]" },
        { NULL, NULL }
    };
    static const char *untouched[] = {
        "", "a=1", "api_token", "api_tokens=1", "xapi_token=1", "a=api_token=1",
        "api+token=1", "API_TOKENS=1", "api%5Ftoken%00=1", NULL
    };
    int i;

    for (i = 0; cases[i][0]; i++) {
        char *out = qrt_form_redact(pool, cases[i][0], "api_token", "[r]");

        ck_assert_msg(out != NULL, "not redacted: %s", cases[i][0]);
        ck_assert_str_eq(out, cases[i][1]);
    }
    for (i = 0; untouched[i]; i++) {
        ck_assert_msg(qrt_form_redact(pool, untouched[i], "api_token", "[r]") == NULL,
                      "redacted: %s", untouched[i]);
    }
    ck_assert_ptr_null(qrt_form_redact(pool, NULL, "api_token", "[r]"));
}
END_TEST

START_TEST(test_type_is)
{
    const char *urlenc = "application/x-www-form-urlencoded";

    ck_assert(qrt_form_type_is("application/x-www-form-urlencoded", urlenc));
    ck_assert(qrt_form_type_is("Application/X-WWW-Form-URLEncoded; charset=UTF-8", urlenc));
    ck_assert(qrt_form_type_is(" application/x-www-form-urlencoded ;charset=utf-8", urlenc));
    ck_assert(qrt_form_type_is("application/json", "application/json"));
    ck_assert(!qrt_form_type_is("application/x-www-form-urlencodedXYZ", urlenc));
    ck_assert(!qrt_form_type_is("application/x-www-form-urlencoded x", urlenc));
    ck_assert(!qrt_form_type_is("application/json-seq", "application/json"));
    ck_assert(!qrt_form_type_is("application/jsonp", "application/json"));
    ck_assert(!qrt_form_type_is("text/json", "application/json"));
    ck_assert(!qrt_form_type_is("application", "application/json"));
    ck_assert(!qrt_form_type_is("", "application/json"));
    ck_assert(!qrt_form_type_is(NULL, "application/json"));
}
END_TEST

START_TEST(test_urlencoded_max)
{
    apr_table_t *t = apr_table_make(pool, 4);
    const char *err = NULL;
    char *big;
    int i;

    /* Empty pieces do not count; exactly max is fine. */
    ck_assert_int_eq(qrt_form_urlencoded_max(pool, "a=1&&b=2&", 9, 2, t, &err),
                     APR_SUCCESS);
    expect_fields(t, "a", "1", "b", "2", NULL);
    t = apr_table_make(pool, 4);
    ck_assert_int_eq(qrt_form_urlencoded_max(pool, "a=1&b=2&c", 9, 2, t, &err),
                     APR_ENOSPC);
    ck_assert_str_eq(err, "more than 2 fields");
    ck_assert_int_eq(apr_table_elts(t)->nelts, 0);
    /* Counted before decoding: a bad escape past the limit is not looked at. */
    ck_assert_int_eq(qrt_form_urlencoded_max(pool, "a&b&%zz", 7, 2, t, &err),
                     APR_ENOSPC);
    /* 0 = no limit */
    ck_assert_int_eq(qrt_form_urlencoded_max(pool, "a&b&c", 5, 0, t, &err),
                     APR_SUCCESS);
    big = apr_palloc(pool, 40001);
    for (i = 0; i < 40000; i += 2) {
        big[i] = 'x';
        big[i + 1] = '&';
    }
    big[40000] = '\0';
    t = apr_table_make(pool, 4);
    ck_assert_int_eq(qrt_form_urlencoded_max(pool, big, 40000, 1024, t, &err),
                     APR_ENOSPC);
    ck_assert_str_eq(err, "more than 1024 fields");
    ck_assert_int_eq(apr_table_elts(t)->nelts, 0);
}
END_TEST

static Suite *form_suite(void)
{
    Suite *s = suite_create("qrt_form");
    TCase *tc = tcase_create("form");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_create);
    tcase_add_test(tc, test_limits_default);
    tcase_add_test(tc, test_normal);
    tcase_add_test(tc, test_file_part_keeps_its_bytes);
    tcase_add_test(tc, test_every_chunk_size);
    tcase_add_test(tc, test_random_chunks);
    tcase_add_test(tc, test_empty_chunks);
    tcase_add_test(tc, test_no_preamble_and_padding);
    tcase_add_test(tc, test_bare_lf_headers);
    tcase_add_test(tc, test_header_case_and_quoting);
    tcase_add_test(tc, test_boundary_lookalikes);
    tcase_add_test(tc, test_zero_parts);
    tcase_add_test(tc, test_limit_parts);
    tcase_add_test(tc, test_limit_part_size);
    tcase_add_test(tc, test_limit_default_part_size);
    tcase_add_test(tc, test_limit_header_size);
    tcase_add_test(tc, test_big_preamble_epilogue);
    tcase_add_test(tc, test_malformed);
    tcase_add_test(tc, test_nul_bytes);
    tcase_add_test(tc, test_pool_cleanup);
    tcase_add_test(tc, test_urlencoded);
    tcase_add_test(tc, test_urlencoded_bad);
    tcase_add_test(tc, test_redact);
    tcase_add_test(tc, test_urlencoded_max);
    tcase_add_test(tc, test_type_is);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(form_suite());
}
