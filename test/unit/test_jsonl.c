/* Unit tests for qrt_jsonl: what the one-pass reader takes, jansson reads alike (the
 * same members, the same values; the last duplicate wins in both); what it declines
 * it leaves as it came. Fixed cases, then random changes of visit lines. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>
#include <jansson.h>

#include "qrt_jsonl.h"
#include "qrt_check.h"

#define MAXM 32

/* 0 when the reader declines line; 1 when it takes it and jansson agrees on every
 * member; the test fails when they disagree. */
static int agree(const char *line)
{
    apr_size_t len = strlen(line);
    char *buf = malloc(len + 1);
    qrt_jv_t m[MAXM];
    json_error_t je;
    json_t *o, *v;
    const char *k;
    int n = -1, rc, i;

    memcpy(buf, line, len + 1);
    rc = qrt_jsonl_flat(buf, len, m, MAXM, &n);
    if (rc != 0) {
        ck_assert_int_eq(rc, QRT_JSONL_DECLINED);
        ck_assert_msg(memcmp(buf, line, len + 1) == 0, "declined but changed: %s", line);
        free(buf);
        return 0;
    }
    o = json_loads(line, 0, &je);
    ck_assert_msg(o && json_is_object(o), "taken, but jansson says %s: %s", je.text, line);
    /* every member jansson has: the last of its name in ours, the same value */
    json_object_foreach(o, k, v) {
        const qrt_jv_t *x = qrt_jsonl_get(m, n, k);

        ck_assert_msg(x != NULL, "no member %s: %s", k, line);
        ck_assert_int_eq(x->keylen, strlen(k));
        if (json_is_string(v)) {
            ck_assert_msg(x->type == QRT_JV_STR && x->len == json_string_length(v)
                          && memcmp(x->str, json_string_value(v), x->len) == 0
                          && x->str[x->len] == '\0', "string %s: %s", k, line);
        }
        else if (json_is_integer(v)) {
            ck_assert_msg(x->type == QRT_JV_INT && x->num == json_integer_value(v),
                          "integer %s: %s", k, line);
        }
        else if (json_is_true(v) || json_is_false(v) || json_is_null(v)) {
            ck_assert_int_eq(x->type, json_is_true(v) ? QRT_JV_TRUE : json_is_false(v)
                             ? QRT_JV_FALSE : QRT_JV_NULL);
        }
        else {
            ck_abort_msg("taken with a %d value: %s", json_typeof(v), line);
        }
    }
    /* and no member jansson lacks */
    for (i = 0; i < n; i++) {
        ck_assert_msg(json_object_get(o, m[i].key) != NULL, "extra %s: %s", m[i].key, line);
    }
    json_decref(o);
    free(buf);
    return 1;
}

START_TEST(takes_the_common_lines)
{
    static const char *const taken[] = {
        "{\"tracker_id\": 12, \"visit_start\": \"2026-11-25T10:00:00+0000\", "
        "\"source\": \"scan\", \"ip\": \"203.0.113.0\", \"country\": \"DE\", "
        "\"city\": \"M\xc3\xbcnchen\", \"browser\": \"Chrome\", \"bot\": false, "
        "\"referer\": null}\n",
        "{}", " \t{ } \r\n", "{\"a\":1}", "{\"a\":-0}", "{\"a\":0}",
        "{\"a\":9223372036854775807}", "{\"a\":-9223372036854775808}",
        "{\"a\":true,\"b\":false,\"c\":null}", "{\"\":\"\"}",
        "{\"a\":\"x\",\"a\":\"y\"}", "{\"a\":\"\xe2\x82\xac \xf0\x9f\x98\x80\"}",
        "{\"a\":\"\x7f\"}", "{\"k\" : \"v\" , \"n\" : 3 }",
        /* escapes, written out as jansson does */
        "{\"a\":\"x\\ny\"}", "{\"a\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"}",
        "{\"city\":\"M\\u00fcnchen\",\"b\":\"S\\u00E3o\"}", "{\"a\":\"\\u20ac\\u0001\"}",
        "{\"a\":\"\\ud83d\\ude00!\\uDBFF\\uDFFF\\u007f\\u07FF\\u0800\\uffff\"}",
        "{\"a\":\"https:\\/\\/example.com\\/x\", \"b\": \"\\\\\", \"a\": \"\\\"\"}",
        "{\"a\":\"\\u00fc\xc3\xbc\"}",
    };
    qrt_jv_t m[MAXM];
    char buf[64];
    int n;
    size_t i;

    for (i = 0; i < sizeof(taken) / sizeof(taken[0]); i++) {
        ck_assert_msg(agree(taken[i]), "declined: %s", taken[i]);
    }
    /* the last duplicate wins */
    strcpy(buf, "{\"a\":\"x\",\"a\":\"y\"}");
    ck_assert_int_eq(qrt_jsonl_flat(buf, strlen(buf), m, MAXM, &n), 0);
    ck_assert_int_eq(n, 2);
    ck_assert_str_eq(qrt_jsonl_get(m, n, "a")->str, "y");
    ck_assert_ptr_null(qrt_jsonl_get(m, n, "b"));
}
END_TEST

START_TEST(declines_the_rest)
{
    static const char *const declined[] = {
        /* jansson's to read (or refuse) */
        "{\"a\\u0041\":1}", "{\"a\":[1]}", "{\"a\":{}}", "{\"a\":1.5}",
        "{\"a\":1e3}", "{\"a\":1E3}", "{\"a\":\"\\u0000\"}", "{\"a\":\"\\ud800\"}",
        "{\"a\":\"\\udc00\\ud800\"}", "{\"a\":\"\\ud800\\u0041\"}", "{\"a\":\"\\ud800x\"}",
        "{\"a\":\"\\x41\"}", "{\"a\":\"\\u12\"}", "{\"a\":\"\\u12G4\"}", "{\"a\":\"\\\"}",
        "{\"a\":\"\\ud83d\\ude0\"}", "{\"a\":\"\\\"}", "{\"a\":\"x\\\"}",
        /* not JSON, or not an object */
        "", " ", "[]", "1", "\"a\"", "{", "}", "{\"a\"}", "{\"a\":}", "{\"a\" 1}", "{,}",
        "{\"a\":1,}", "{\"a\":1 \"b\":2}", "{\"a\":01}", "{\"a\":-}", "{\"a\":+1}",
        "{\"a\":tru}", "{\"a\":truee}", "{\"a\":nul}", "{\"a\":1} x", "{} {}",
        "{\"a\":\"x}", "{\"a\":\"\x01\"}", "{\"a\":\"\t\"}", "{a:1}", "{'a':1}",
        "{\"a\":\"\xc3\"}", "{\"a\":\"\xc0\xaf\"}", "{\"a\":\"\xed\xa0\x80\"}",
        "{\"a\":\"\xff\"}", "{\"a\":9223372036854775808}",
        "{\"a\":-9223372036854775809}", "{\"a\":99999999999999999999}",
        "\xef\xbb\xbf{}",
    };
    char many[1024];
    size_t i;
    int k;

    for (i = 0; i < sizeof(declined) / sizeof(declined[0]); i++) {
        ck_assert_msg(!agree(declined[i]), "taken: %s", declined[i]);
    }
    /* more members than the caller has room for */
    strcpy(many, "{");
    for (k = 0; k <= MAXM; k++) {
        sprintf(many + strlen(many), "%s\"k%d\":%d", k ? "," : "", k, k);
    }
    strcat(many, "}");
    ck_assert(!agree(many));
}
END_TEST

/* A NUL byte inside the given length: never taken, wherever it is (the import
 * calls such a line an error, qrt_import.c). */
START_TEST(declines_nul_bytes)
{
    static const char obj[] = "{\"a\":\"x\",\"b\":1}";
    char buf[64];
    qrt_jv_t m[MAXM];
    apr_size_t n = sizeof(obj) - 1, at;
    int nm;

    for (at = 0; at <= n; at++) {
        /* the object with a NUL at byte at, and "xy" after it */
        memcpy(buf, obj, at);
        buf[at] = '\0';
        memcpy(buf + at + 1, obj + at, n - at);
        memcpy(buf + n + 1, "xy", 3);
        ck_assert_msg(qrt_jsonl_flat(buf, n + 3, m, MAXM, &nm) == QRT_JSONL_DECLINED,
                      "taken with a NUL at %zu", (size_t)at);
    }
    memcpy(buf, obj, n);
    memcpy(buf + n, "\0", 1);
    ck_assert_int_eq(qrt_jsonl_flat(buf, n + 1, m, MAXM, &nm), QRT_JSONL_DECLINED);
}
END_TEST

/* Random changes of visit lines: a byte replaced, inserted or deleted, a few times
 * over; whatever the reader takes, jansson reads alike. */
START_TEST(random_changes_agree)
{
    static const char *const base[] = {
        "{\"tracker_id\":7,\"visit_start\":\"2026-01-01T00:00:00Z\",\"source\":\"click\","
        "\"ip\":\"2001:db8::\",\"bot\":true,\"user_agent\":\"Mozilla/5.0 (X11)\"}",
        "{ \"a\" : -12 , \"b\" : null , \"c\" : \"\xc3\xa9t\xc3\xa9\" }",
        "{\"a\":\"x\\u00e9\\n\\\"y\\/\",\"b\":\"\\ud83d\\ude00\\u20AC\\\\\"}",
    };
    static const char alphabet[] = "{}[]:,\"\\ -+.0123456789eEtrufalsn\t\n\x01\x7f\xc3\xa9\xff"
                                   "\\\\uuUdDcCbfAF";
    unsigned int seed = 4242;
    char line[512];
    int iter, taken = 0, j;

    for (iter = 0; iter < 300000; iter++) {
        size_t len;

        strcpy(line, base[iter % 3]);
        for (j = 0; j < 1 + iter % 3; j++) {
            size_t at;
            char c;

            len = strlen(line);
            seed = seed * 1103515245 + 12345;
            at = (seed >> 8) % (len + 1);
            c = alphabet[(seed >> 20) % (sizeof(alphabet) - 1)];
            switch ((seed >> 4) % 3) {
            case 0:
                if (at < len) {
                    line[at] = c;
                }
                break;
            case 1:
                if (len + 2 < sizeof(line)) {
                    memmove(line + at + 1, line + at, len - at + 1);
                    line[at] = c;
                }
                break;
            default:
                if (at < len) {
                    memmove(line + at, line + at + 1, len - at);
                }
            }
        }
        taken += agree(line);
    }
    /* the changes leave many lines readable: the comparison is not empty */
    ck_assert_int_gt(taken, 1000);
}
END_TEST

static Suite *jsonl_suite(void)
{
    Suite *s = suite_create("qrt_jsonl");
    TCase *tc = tcase_create("jsonl");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, takes_the_common_lines);
    tcase_add_test(tc, declines_the_rest);
    tcase_add_test(tc, declines_nul_bytes);
    tcase_add_test(tc, random_changes_agree);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(jsonl_suite());
}
