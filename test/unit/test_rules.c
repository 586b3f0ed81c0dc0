/* Unit tests for qrt_rules: validation and its error paths, the canonical JSON, matching
 * of every condition, a block copied elsewhere, and Accept-Language. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>
#include <apr_tables.h>

#include "qrt_json.h"
#include "qrt_rules.h"
#include "qrt_check.h"

QRT_CHECK_POOL

/* 2026-05-03T23:30:00Z, a Sunday */
#define SUN_2330 APR_INT64_C(1777851000)
/* 2026-05-04T00:00:00Z, a Monday */
#define MON_0000 APR_INT64_C(1777852800)
/* 2026-05-01T00:00:00+0200 */
#define MAY1_CEST APR_INT64_C(1777586400)
/* 2026-05-31T23:59:59Z */
#define MAY31_END APR_INT64_C(1780271999)

/* Any JSON value, owned by the pool. */
static json_t *json_any(const char *text, const char **err)
{
    json_error_t e;
    json_t *j = json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &e);

    *err = j ? NULL : apr_pstrdup(pool, e.text);
    return qrt_json_own(pool, j);
}

static const char *last_canon;
static apr_size_t last_size;

/* Compiles json text, which must be valid; keeps its canon in last_canon. */
static const qrt_rules_t *compile(const char *text)
{
    const char *err = NULL, *field = NULL, *msg;
    const qrt_rules_t *r = (const qrt_rules_t *)1;
    json_t *j = json_any(text, &err);

    ck_assert_msg(j != NULL, "test JSON: %s", err);
    last_canon = "unset";
    msg = qrt_rules_parse(pool, j, &r, &last_size, &last_canon, &field);
    ck_assert_msg(msg == NULL, "%s: %s at %s", text, msg, field);
    return r;
}

/* json text must be refused with an error at field. */
static void refused(const char *text, const char *field)
{
    const char *err = NULL, *got = NULL, *msg, *canon = "unset";
    const qrt_rules_t *r = (const qrt_rules_t *)1;
    apr_size_t size = 12345;
    json_t *j = json_any(text, &err);

    ck_assert_msg(j != NULL, "test JSON: %s", err);
    msg = qrt_rules_parse(pool, j, &r, &size, &canon, &got);
    ck_assert_msg(msg != NULL, "accepted: %s", text);
    ck_assert_msg(got && strcmp(got, field) == 0, "%s: field %s, want %s (%s)", text,
                  got ? got : "(null)", field, msg);
    ck_assert(*msg >= 'A' && *msg <= 'Z' && msg[strlen(msg) - 1] == '.');
    ck_assert(r == (const qrt_rules_t *)1 && size == 12345 && strcmp(canon, "unset") == 0);
}

static int match(const qrt_rules_t *r, const char *device, const char *os,
                 const char *country, const char *language, apr_int64_t now)
{
    qrt_rule_facts_t f;

    f.device = device;
    f.os = os;
    f.country = country;
    f.language = language;
    f.now = now;
    return qrt_rules_match(r, &f);
}

/* A one-rule set of the given condition (JSON members after redirect_url). */
static const qrt_rules_t *one(const char *cond)
{
    return compile(apr_psprintf(pool, "[{\"redirect_url\":\"https://a.example/\",%s}]", cond));
}

START_TEST(none)
{
    const char *canon = "unset", *field = NULL;
    const qrt_rules_t *r = (const qrt_rules_t *)1;
    apr_size_t size = 1;

    ck_assert_ptr_null(qrt_rules_parse(pool, NULL, &r, &size, &canon, &field));
    ck_assert(r == NULL && size == 0 && canon == NULL);
    r = (const qrt_rules_t *)1;
    ck_assert_ptr_null(qrt_rules_parse(pool, qrt_json_own(pool, json_null()), &r, &size,
                                       &canon, &field));
    ck_assert(r == NULL && size == 0 && canon == NULL);
    r = compile("[]");
    ck_assert(r == NULL && last_size == 0 && last_canon == NULL);
    ck_assert_int_eq(qrt_rules_count(NULL), 0);
    ck_assert_int_eq(match(NULL, "mobile", "iOS", "DE", "de", SUN_2330), -1);
    ck_assert_ptr_null(qrt_rules_url(NULL, 0));
    ck_assert_int_eq(qrt_rules_size(NULL), 0);
    r = (const qrt_rules_t *)1;
    ck_assert_ptr_null(qrt_rules_parse_text(pool, NULL, &r, &size));
    ck_assert(r == NULL && size == 0);
    r = (const qrt_rules_t *)1;
    ck_assert_ptr_null(qrt_rules_parse_text(pool, "[]", &r, &size));
    ck_assert(r == NULL && size == 0);
    r = (const qrt_rules_t *)1;
    ck_assert_ptr_null(qrt_rules_parse_text(pool, "null", &r, &size));
    ck_assert(r == NULL && size == 0);
}
END_TEST

START_TEST(device)
{
    const qrt_rules_t *r = one("\"device\":[\"mobile\",\"Tablet\"]");

    ck_assert_str_eq(last_canon, "[{\"redirect_url\":\"https://a.example/\","
                     "\"device\":[\"mobile\",\"tablet\"]}]");
    ck_assert_int_eq(qrt_rules_count(r), 1);
    ck_assert_int_eq(qrt_rules_size(r), last_size);
    ck_assert_int_eq(match(r, "mobile", "iOS", NULL, NULL, 0), 0);
    ck_assert_int_eq(match(r, "tablet", "iOS", NULL, NULL, 0), 0);
    ck_assert_int_eq(match(r, "desktop", "iOS", NULL, NULL, 0), -1);
    ck_assert_int_eq(match(r, "bot", NULL, NULL, NULL, 0), -1);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, 0), -1);
    ck_assert_int_eq(match(r, "mobilex", NULL, NULL, NULL, 0), -1);
    ck_assert_str_eq(qrt_rules_url(r, 0), "https://a.example/");
    ck_assert_ptr_null(qrt_rules_url(r, 1));
    ck_assert_ptr_null(qrt_rules_url(r, -1));
    r = one("\"device\":[\"other\",\"bot\",\"desktop\",\"bot\"]");
    ck_assert_str_eq(last_canon, "[{\"redirect_url\":\"https://a.example/\","
                     "\"device\":[\"desktop\",\"bot\",\"other\"]}]");
    ck_assert_int_eq(match(r, "bot", NULL, NULL, NULL, 0), 0);
    ck_assert_int_eq(match(r, "other", NULL, NULL, NULL, 0), 0);
    ck_assert_int_eq(match(r, "mobile", NULL, NULL, NULL, 0), -1);
}
END_TEST

START_TEST(os)
{
    const qrt_rules_t *r = one("\"os\":[\"iOS\",\"Mac OS X\"]");

    ck_assert_str_eq(last_canon, "[{\"redirect_url\":\"https://a.example/\","
                     "\"os\":[\"iOS\",\"Mac OS X\"]}]");
    ck_assert_int_eq(match(r, "mobile", "iOS", NULL, NULL, 0), 0);
    ck_assert_int_eq(match(r, "mobile", "ios", NULL, NULL, 0), 0);
    ck_assert_int_eq(match(r, "desktop", "MAC OS X", NULL, NULL, 0), 0);
    ck_assert_int_eq(match(r, "desktop", "Mac OS", NULL, NULL, 0), -1);
    ck_assert_int_eq(match(r, "desktop", "Mac OS X 10", NULL, NULL, 0), -1);
    ck_assert_int_eq(match(r, "mobile", "Android", NULL, NULL, 0), -1);
    ck_assert_int_eq(match(r, "mobile", "", NULL, NULL, 0), -1);
    ck_assert_int_eq(match(r, "mobile", NULL, NULL, NULL, 0), -1);
}
END_TEST

START_TEST(country)
{
    const qrt_rules_t *r = one("\"country\":[\"de\",\"At\",\"CH\"]");

    ck_assert_str_eq(last_canon, "[{\"redirect_url\":\"https://a.example/\","
                     "\"country\":[\"DE\",\"AT\",\"CH\"]}]");
    ck_assert_int_eq(match(r, "mobile", "iOS", "DE", NULL, 0), 0);
    ck_assert_int_eq(match(r, "mobile", "iOS", "AT", NULL, 0), 0);
    ck_assert_int_eq(match(r, "mobile", "iOS", "ch", NULL, 0), 0);
    ck_assert_int_eq(match(r, "mobile", "iOS", "FR", NULL, 0), -1);
    ck_assert_int_eq(match(r, "mobile", "iOS", "DEU", NULL, 0), -1);
    ck_assert_int_eq(match(r, "mobile", "iOS", "D", NULL, 0), -1);
    ck_assert_int_eq(match(r, "mobile", "iOS", "", NULL, 0), -1);
    ck_assert_int_eq(match(r, "mobile", "iOS", NULL, NULL, 0), -1);
}
END_TEST

START_TEST(language)
{
    const qrt_rules_t *r = one("\"language\":[\"de\"]");

    ck_assert_str_eq(last_canon, "[{\"redirect_url\":\"https://a.example/\","
                     "\"language\":[\"de\"]}]");
    ck_assert_int_eq(match(r, NULL, NULL, NULL, "de", 0), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, "de-AT", 0), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, "DE-at", 0), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, "de-Latn-DE", 0), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, "den", 0), -1);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, "d", 0), -1);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, "en", 0), -1);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, "", 0), -1);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, 0), -1);

    r = one("\"language\":[\"de-AT\",\"fr\"]");
    ck_assert_str_eq(last_canon, "[{\"redirect_url\":\"https://a.example/\","
                     "\"language\":[\"de-AT\",\"fr\"]}]");
    ck_assert_int_eq(match(r, NULL, NULL, NULL, "de-AT", 0), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, "de-at", 0), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, "de", 0), -1);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, "de-CH", 0), -1);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, "de-ATX", 0), -1);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, "fr-CA", 0), 0);
}
END_TEST

START_TEST(from_until)
{
    const qrt_rules_t *r = one("\"from\":\"2026-05-01T00:00:00+0200\","
                               "\"until\":\"2026-05-31T23:59:59Z\"");

    ck_assert_str_eq(last_canon, "[{\"redirect_url\":\"https://a.example/\","
                     "\"from\":\"2026-04-30T22:00:00+0000\","
                     "\"until\":\"2026-05-31T23:59:59+0000\"}]");
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MAY1_CEST - 1), -1);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MAY1_CEST), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MAY31_END), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MAY31_END + 1), -1);

    r = one("\"from\":\"2026-05-01T00:00:00+0200\"");
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MAY1_CEST - 1), -1);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, APR_INT64_MAX), 0);
    r = one("\"until\":\"2026-05-01T00:00:00+0200\"");
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MAY1_CEST), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, APR_INT64_MIN), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MAY1_CEST + 1), -1);
    /* one instant: from == until */
    r = one("\"from\":\"2026-05-01T00:00:00+0200\",\"until\":\"2026-04-30T22:00:00Z\"");
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MAY1_CEST), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MAY1_CEST + 1), -1);
}
END_TEST

START_TEST(weekdays)
{
    const qrt_rules_t *r = one("\"weekdays\":[7,1,7]");

    ck_assert_str_eq(last_canon, "[{\"redirect_url\":\"https://a.example/\","
                     "\"weekdays\":[1,7]}]");
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, SUN_2330), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MON_0000), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MON_0000 + 86400), -1);

    /* Sunday 23:30 UTC is Monday 00:30 in +0100 */
    r = one("\"weekdays\":[1],\"utc_offset\":\"+01:00\"");
    ck_assert_str_eq(last_canon, "[{\"redirect_url\":\"https://a.example/\","
                     "\"weekdays\":[1],\"utc_offset\":\"+0100\"}]");
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, SUN_2330), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, SUN_2330 - 1801), -1);
    r = one("\"weekdays\":[7],\"utc_offset\":\"+0100\"");
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, SUN_2330), -1);
    /* and Monday 00:00 UTC is still Sunday in -0530 */
    r = one("\"weekdays\":[7],\"utc_offset\":\"-0530\"");
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MON_0000), 0);
    /* every day; before 1970 too */
    r = one("\"weekdays\":[1,2,3,4,5,6,7],\"utc_offset\":\"+1400\"");
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, -86400 * 3 - 1), 0);
    /* 1969-12-31 was a Wednesday */
    r = one("\"weekdays\":[3]");
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, -1), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, -86400), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, -86401), -1);
}
END_TEST

START_TEST(hours)
{
    const qrt_rules_t *r = one("\"hours\":\"09:00-17:30\"");

    ck_assert_str_eq(last_canon, "[{\"redirect_url\":\"https://a.example/\","
                     "\"hours\":\"09:00-17:30\"}]");
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MON_0000 + 9 * 3600 - 1), -1);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MON_0000 + 9 * 3600), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MON_0000 + 17 * 3600 + 1799), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MON_0000 + 17 * 3600 + 1800), -1);

    /* wraps midnight */
    r = one("\"hours\":\"22:00-06:00\"");
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MON_0000 - 2 * 3600 - 1), -1);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MON_0000 - 2 * 3600), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MON_0000), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MON_0000 + 6 * 3600 - 1), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MON_0000 + 6 * 3600), -1);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MON_0000 + 12 * 3600), -1);

    /* read in the offset: 08:00 UTC is 09:00 in +0100 */
    r = one("\"hours\":\"09:00-10:00\",\"utc_offset\":\"+0100\"");
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MON_0000 + 8 * 3600), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MON_0000 + 9 * 3600), -1);
    r = one("\"hours\":\"23:00-24:00\",\"utc_offset\":\"-00:00\"");
    ck_assert_str_eq(last_canon, "[{\"redirect_url\":\"https://a.example/\","
                     "\"hours\":\"23:00-24:00\",\"utc_offset\":\"+0000\"}]");
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MON_0000 - 1), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MON_0000), -1);
    r = one("\"hours\":\"23:00-24:00\",\"utc_offset\":\"-0030\"");
    ck_assert_str_eq(last_canon, "[{\"redirect_url\":\"https://a.example/\","
                     "\"hours\":\"23:00-24:00\",\"utc_offset\":\"-0030\"}]");
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MON_0000 - 1801), -1);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MON_0000 - 1800), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MON_0000 + 1799), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MON_0000 + 1800), -1);

    /* weekdays and hours each in the offset: Friday 22:00 to Saturday 06:00 local */
    r = one("\"weekdays\":[6],\"hours\":\"00:00-06:00\",\"utc_offset\":\"+0200\"");
    /* Saturday 2026-05-02 01:00+0200 = Friday 23:00Z */
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MON_0000 - 2 * 86400 - 3600), 0);
    ck_assert_int_eq(match(r, NULL, NULL, NULL, NULL, MON_0000 - 2 * 86400 + 4 * 3600), -1);
}
END_TEST

START_TEST(all_conditions)
{
    const qrt_rules_t *r = compile(
        "[{\"utc_offset\":\"+0100\",\"hours\":\"00:00-01:00\",\"weekdays\":[1],"
        "\"until\":\"2026-12-31T00:00:00Z\",\"from\":\"2026-01-01T00:00:00Z\","
        "\"language\":[\"de\"],\"country\":[\"at\"],\"os\":[\"iOS\"],\"device\":[\"mobile\"],"
        "\"redirect_url\":\"https://a.example/at\"}]");

    ck_assert_str_eq(last_canon,
                     "[{\"redirect_url\":\"https://a.example/at\",\"device\":[\"mobile\"],"
                     "\"os\":[\"iOS\"],\"country\":[\"AT\"],\"language\":[\"de\"],"
                     "\"from\":\"2026-01-01T00:00:00+0000\","
                     "\"until\":\"2026-12-31T00:00:00+0000\",\"weekdays\":[1],"
                     "\"hours\":\"00:00-01:00\",\"utc_offset\":\"+0100\"}]");
    ck_assert_int_eq(match(r, "mobile", "iOS", "AT", "de-AT", SUN_2330), 0);
    /* each fact alone failing fails the rule */
    ck_assert_int_eq(match(r, "tablet", "iOS", "AT", "de-AT", SUN_2330), -1);
    ck_assert_int_eq(match(r, "mobile", "Android", "AT", "de-AT", SUN_2330), -1);
    ck_assert_int_eq(match(r, "mobile", "iOS", "DE", "de-AT", SUN_2330), -1);
    ck_assert_int_eq(match(r, "mobile", "iOS", "AT", "en", SUN_2330), -1);
    ck_assert_int_eq(match(r, "mobile", "iOS", "AT", "de-AT", SUN_2330 + 3600), -1);
    ck_assert_int_eq(match(r, "mobile", "iOS", "AT", "de-AT", SUN_2330 + 7 * 86400), 0);
    ck_assert_int_eq(match(r, "mobile", "iOS", "AT", "de-AT", SUN_2330 + 245 * 86400), -1);
}
END_TEST

START_TEST(first_match_wins)
{
    const qrt_rules_t *r = compile(
        "[{\"redirect_url\":\"https://a.example/0\",\"country\":[\"DE\"],\"device\":[\"mobile\"]},"
        "{\"redirect_url\":\"https://a.example/1\",\"country\":[\"DE\"]},"
        "{\"redirect_url\":\"https://a.example/2\",\"device\":[\"mobile\"]},"
        "{\"redirect_url\":\"https://a.example/3\",\"country\":[\"DE\"]}]");

    ck_assert_int_eq(qrt_rules_count(r), 4);
    ck_assert_int_eq(match(r, "mobile", NULL, "DE", NULL, 0), 0);
    ck_assert_int_eq(match(r, "desktop", NULL, "DE", NULL, 0), 1);
    ck_assert_int_eq(match(r, "mobile", NULL, "FR", NULL, 0), 2);
    ck_assert_int_eq(match(r, "desktop", NULL, "FR", NULL, 0), -1);
    ck_assert_str_eq(qrt_rules_url(r, 0), "https://a.example/0");
    ck_assert_str_eq(qrt_rules_url(r, 3), "https://a.example/3");
}
END_TEST

/* The canon parses to itself, from a json_t and from stored text alike, and both blocks
 * are the same bytes. */
static void round_trip(const char *text)
{
    const qrt_rules_t *r = compile(text), *r2 = NULL;
    const char *canon = last_canon;
    apr_size_t size = last_size, size2 = 0;

    compile(canon);
    ck_assert_str_eq(last_canon, canon);
    ck_assert_int_eq(last_size, size);
    ck_assert_ptr_null(qrt_rules_parse_text(pool, canon, &r2, &size2));
    ck_assert_int_eq(size2, size);
    ck_assert(memcmp(r, r2, size) == 0);
}

START_TEST(canonical_round_trip)
{
    round_trip("[{\"redirect_url\":\"https://a.example/x?y=1\",\"device\":[\"Bot\",\"mobile\"],"
               "\"os\":[\"Mac OS X\",\"\\u00fcOS\"],\"country\":[\"de\",\"de\"],"
               "\"language\":[\"zh-Hant-TW\"],\"from\":\"1970-01-01T00:00:00Z\","
               "\"until\":\"9999-12-31T23:59:59-1400\",\"weekdays\":[7,6,5,4,3,2,1],"
               "\"hours\":\"22:15-06:45\",\"utc_offset\":\"-14:00\"},"
               "{\"redirect_url\":\"http://b.example\",\"hours\":\"00:00-00:01\","
               "\"utc_offset\":null,\"os\":null}]");
    round_trip("[{\"redirect_url\":\"https://a.example/\",\"until\":\"2026-05-01T00:00:00 0200\"}]");
}
END_TEST

START_TEST(memcpy_copy)
{
    const qrt_rules_t *r = compile(
        "[{\"redirect_url\":\"https://a.example/0\",\"os\":[\"Android\"],\"language\":[\"de\"]},"
        "{\"redirect_url\":\"https://a.example/1\",\"country\":[\"FR\"],\"weekdays\":[7],"
        "\"utc_offset\":\"+0100\"}]");
    apr_size_t size = qrt_rules_size(r);
    qrt_rules_t *copy = malloc(size);
    char *scratch;

    ck_assert_int_eq(size, last_size);
    memcpy(copy, r, size);
    /* the original's memory is gone and overwritten */
    apr_pool_clear(pool);
    scratch = apr_palloc(pool, size);
    memset(scratch, 0x5a, size);
    ck_assert_int_eq(qrt_rules_count(copy), 2);
    ck_assert_int_eq(match(copy, "mobile", "Android", NULL, "de-DE", 0), 0);
    ck_assert_int_eq(match(copy, "mobile", "iOS", "FR", "de-DE", SUN_2330 - 3600), 1);
    ck_assert_int_eq(match(copy, "mobile", "iOS", "FR", "de-DE", SUN_2330), -1);
    ck_assert_str_eq(qrt_rules_url(copy, 1), "https://a.example/1");
    free(copy);
}
END_TEST

START_TEST(caps)
{
    apr_array_header_t *a = apr_array_make(pool, 64, sizeof(char *));
    const char *list50, *list51;
    int i;

    for (i = 0; i < QRT_RULES_MAX; i++) {
        APR_ARRAY_PUSH(a, const char *) = apr_psprintf(pool,
            "{\"redirect_url\":\"https://a.example/%d\",\"hours\":\"%02d:00-%02d:30\"}",
            i, i, i);
    }
    ck_assert_int_eq(qrt_rules_count(compile(apr_pstrcat(pool, "[",
                                     apr_array_pstrcat(pool, a, ','), "]", NULL))),
                     QRT_RULES_MAX);
    APR_ARRAY_PUSH(a, const char *) = "{\"redirect_url\":\"https://a.example/\",\"os\":[\"x\"]}";
    refused(apr_pstrcat(pool, "[", apr_array_pstrcat(pool, a, ','), "]", NULL), "rules");

    apr_array_clear(a);
    for (i = 0; i < QRT_RULES_LIST_MAX; i++) {
        APR_ARRAY_PUSH(a, const char *) = "\"DE\"";
    }
    list50 = apr_array_pstrcat(pool, a, ',');
    list51 = apr_pstrcat(pool, list50, ",\"DE\"", NULL);
    one(apr_pstrcat(pool, "\"country\":[", list50, "]", NULL));
    refused(apr_pstrcat(pool, "[{\"redirect_url\":\"https://a.example/\",\"country\":[",
                        list51, "]}]", NULL), "rules.0.country");
    refused(apr_pstrcat(pool, "[{\"redirect_url\":\"https://a.example/\",\"device\":[",
                        apr_array_pstrcat(pool, a, ','), ",\"DE\"]}]", NULL),
            "rules.0.device");
    one("\"weekdays\":[1,1,1,1,1,1,1]");
    refused("[{\"redirect_url\":\"https://a.example/\",\"weekdays\":[1,2,3,4,5,6,7,1]}]",
            "rules.0.weekdays");
    one(apr_psprintf(pool, "\"os\":[\"%s\"]", apr_pstrndup(pool,
        "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz",
        QRT_RULES_OS_MAX)));
    refused(apr_psprintf(pool, "[{\"redirect_url\":\"https://a.example/\",\"os\":[\"%s\"]}]",
            apr_pstrndup(pool,
            "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz",
            QRT_RULES_OS_MAX + 1)), "rules.0.os");
    /* 35 bytes */
    one("\"language\":[\"abcdefgh-1234567-abcdefgh-1234567-a\"]");
    refused("[{\"redirect_url\":\"https://a.example/\","
            "\"language\":[\"abcdefgh-12345678-abcdefgh-1234567-a\"]}]", "rules.0.language");
}
END_TEST

#define URL "\"redirect_url\":\"https://a.example/\""

START_TEST(errors)
{
    refused("{}", "rules");
    refused("\"x\"", "rules");
    refused("7", "rules");
    refused("[7]", "rules.0");
    refused("[null]", "rules.0");
    refused("[[]]", "rules.0");
    refused("[{" URL ",\"os\":[\"x\"]}, \"x\"]", "rules.1");
    /* no condition */
    refused("[{" URL "}]", "rules.0");
    refused("[{" URL ",\"utc_offset\":\"+0100\"}]", "rules.0");
    refused("[{" URL ",\"device\":null,\"from\":null}]", "rules.0");
    /* unknown keys, even null ones */
    refused("[{" URL ",\"devices\":[\"mobile\"]}]", "rules.0.devices");
    refused("[{" URL ",\"os\":[\"x\"],\"x\":null}]", "rules.0.x");
    refused("[{" URL ",\"os\":[\"x\"],\"\":1}]", "rules.0");
    /* redirect_url */
    refused("[{\"os\":[\"x\"]}]", "rules.0.redirect_url");
    refused("[{\"redirect_url\":null,\"os\":[\"x\"]}]", "rules.0.redirect_url");
    refused("[{\"redirect_url\":5,\"os\":[\"x\"]}]", "rules.0.redirect_url");
    refused("[{\"redirect_url\":\"ftp://a.example/\",\"os\":[\"x\"]}]", "rules.0.redirect_url");
    refused("[{\"redirect_url\":\"javascript:alert(1)\",\"os\":[\"x\"]}]",
            "rules.0.redirect_url");
    refused("[{" URL ",\"os\":[\"x\"]},{\"redirect_url\":\"\",\"os\":[\"x\"]}]",
            "rules.1.redirect_url");
    /* device */
    refused("[{" URL ",\"device\":\"mobile\"}]", "rules.0.device");
    refused("[{" URL ",\"device\":[]}]", "rules.0.device");
    refused("[{" URL ",\"device\":[\"phone\"]}]", "rules.0.device");
    refused("[{" URL ",\"device\":[1]}]", "rules.0.device");
    refused("[{" URL ",\"device\":[null]}]", "rules.0.device");
    /* os */
    refused("[{" URL ",\"os\":\"iOS\"}]", "rules.0.os");
    refused("[{" URL ",\"os\":[]}]", "rules.0.os");
    refused("[{" URL ",\"os\":[\"\"]}]", "rules.0.os");
    refused("[{" URL ",\"os\":[\"a\\nb\"]}]", "rules.0.os");
    refused("[{" URL ",\"os\":[{}]}]", "rules.0.os");
    refused("[{" URL ",\"os\":{\"a\":1}}]", "rules.0.os");
    /* country */
    refused("[{" URL ",\"country\":\"DE\"}]", "rules.0.country");
    refused("[{" URL ",\"country\":[]}]", "rules.0.country");
    refused("[{" URL ",\"country\":[\"DEU\"]}]", "rules.0.country");
    refused("[{" URL ",\"country\":[\"D\"]}]", "rules.0.country");
    refused("[{" URL ",\"country\":[\"D1\"]}]", "rules.0.country");
    refused("[{" URL ",\"country\":[\"\\u00c4T\"]}]", "rules.0.country");
    refused("[{" URL ",\"country\":[49]}]", "rules.0.country");
    /* language */
    refused("[{" URL ",\"language\":\"de\"}]", "rules.0.language");
    refused("[{" URL ",\"language\":[]}]", "rules.0.language");
    refused("[{" URL ",\"language\":[\"\"]}]", "rules.0.language");
    refused("[{" URL ",\"language\":[\"de_AT\"]}]", "rules.0.language");
    refused("[{" URL ",\"language\":[\"de-\"]}]", "rules.0.language");
    refused("[{" URL ",\"language\":[\"-de\"]}]", "rules.0.language");
    refused("[{" URL ",\"language\":[\"de--AT\"]}]", "rules.0.language");
    refused("[{" URL ",\"language\":[\"*\"]}]", "rules.0.language");
    refused("[{" URL ",\"language\":[\"1de\"]}]", "rules.0.language");
    refused("[{" URL ",\"language\":[\"deutschen\"]}]", "rules.0.language");
    refused("[{" URL ",\"language\":[\"de AT\"]}]", "rules.0.language");
    /* from, until */
    refused("[{" URL ",\"from\":1777586400}]", "rules.0.from");
    refused("[{" URL ",\"from\":\"2026-05-01\"}]", "rules.0.from");
    refused("[{" URL ",\"from\":\"2026-05-01T00:00:00\"}]", "rules.0.from");
    refused("[{" URL ",\"until\":\"2026-02-30T00:00:00Z\"}]", "rules.0.until");
    refused("[{" URL ",\"until\":[\"2026-05-01T00:00:00Z\"]}]", "rules.0.until");
    refused("[{" URL ",\"from\":\"2026-05-01T00:00:01Z\",\"until\":\"2026-05-01T00:00:00Z\"}]",
            "rules.0.until");
    refused("[{" URL ",\"until\":\"2026-05-01T00:00:00Z\",\"from\":\"2026-05-01T02:00:00+0159\"}]",
            "rules.0.until");
    /* weekdays */
    refused("[{" URL ",\"weekdays\":1}]", "rules.0.weekdays");
    refused("[{" URL ",\"weekdays\":[]}]", "rules.0.weekdays");
    refused("[{" URL ",\"weekdays\":[0]}]", "rules.0.weekdays");
    refused("[{" URL ",\"weekdays\":[8]}]", "rules.0.weekdays");
    refused("[{" URL ",\"weekdays\":[-1]}]", "rules.0.weekdays");
    refused("[{" URL ",\"weekdays\":[1.0]}]", "rules.0.weekdays");
    refused("[{" URL ",\"weekdays\":[\"1\"]}]", "rules.0.weekdays");
    refused("[{" URL ",\"weekdays\":[true]}]", "rules.0.weekdays");
    refused("[{" URL ",\"weekdays\":[9223372036854775807]}]", "rules.0.weekdays");
    /* hours */
    refused("[{" URL ",\"hours\":9}]", "rules.0.hours");
    refused("[{" URL ",\"hours\":\"9:00-17:00\"}]", "rules.0.hours");
    refused("[{" URL ",\"hours\":\"09:00-17:00 \"}]", "rules.0.hours");
    refused("[{" URL ",\"hours\":\"09:00 17:00\"}]", "rules.0.hours");
    refused("[{" URL ",\"hours\":\"09:00-09:00\"}]", "rules.0.hours");
    refused("[{" URL ",\"hours\":\"00:00-24:00\"}]", "rules.0.hours");
    refused("[{" URL ",\"hours\":\"24:00-06:00\"}]", "rules.0.hours");
    refused("[{" URL ",\"hours\":\"22:00-24:01\"}]", "rules.0.hours");
    refused("[{" URL ",\"hours\":\"25:00-06:00\"}]", "rules.0.hours");
    refused("[{" URL ",\"hours\":\"09:60-10:00\"}]", "rules.0.hours");
    refused("[{" URL ",\"hours\":\"09:0a-10:00\"}]", "rules.0.hours");
    refused("[{" URL ",\"hours\":\"\"}]", "rules.0.hours");
    /* utc_offset */
    refused("[{" URL ",\"hours\":\"09:00-10:00\",\"utc_offset\":100}]", "rules.0.utc_offset");
    refused("[{" URL ",\"hours\":\"09:00-10:00\",\"utc_offset\":\"0100\"}]", "rules.0.utc_offset");
    refused("[{" URL ",\"hours\":\"09:00-10:00\",\"utc_offset\":\"+1401\"}]", "rules.0.utc_offset");
    refused("[{" URL ",\"hours\":\"09:00-10:00\",\"utc_offset\":\"-15:00\"}]",
            "rules.0.utc_offset");
    refused("[{" URL ",\"hours\":\"09:00-10:00\",\"utc_offset\":\"+0160\"}]", "rules.0.utc_offset");
    refused("[{" URL ",\"hours\":\"09:00-10:00\",\"utc_offset\":\"+01\"}]", "rules.0.utc_offset");
    refused("[{" URL ",\"hours\":\"09:00-10:00\",\"utc_offset\":\"Z\"}]", "rules.0.utc_offset");
    refused("[{" URL ",\"hours\":\"09:00-10:00\",\"utc_offset\":\"+01:00 \"}]",
            "rules.0.utc_offset");
    /* the index is the rule's */
    refused("[{" URL ",\"os\":[\"x\"]},{" URL ",\"os\":[\"x\"]},{" URL ",\"os\":[\"x\"]},"
            "{" URL ",\"hours\":\"x\"}]", "rules.3.hours");
}
END_TEST

/* A json_t made by code may hold NUL bytes that parsed text cannot: each is refused. */
static void refused_nul(const char *key, json_t *v, const char *field)
{
    json_t *a = qrt_json_own(pool, json_array()), *o = json_object();
    const qrt_rules_t *r = NULL;
    const char *canon = NULL, *got = NULL;
    apr_size_t size = 0;

    json_object_set_new(o, "redirect_url", json_string("https://a.example/"));
    json_object_set_new(o, "os", json_pack("[s]", "iOS"));
    json_object_set_new(o, key, v);
    json_array_append_new(a, o);
    ck_assert_ptr_nonnull(qrt_rules_parse(pool, a, &r, &size, &canon, &got));
    ck_assert_str_eq(got, field);
}

START_TEST(nul_bytes)
{
    refused_nul("redirect_url", json_stringn("https://a.example/\0x", 20),
                "rules.0.redirect_url");
    refused_nul("os", json_pack("[o]", json_stringn("iOS\0x", 5)), "rules.0.os");
    refused_nul("country", json_pack("[o]", json_stringn("D\0", 2)), "rules.0.country");
    refused_nul("language", json_pack("[o]", json_stringn("de\0", 3)), "rules.0.language");
    refused_nul("from", json_stringn("2026-05-01T00:00:00Z\0x", 22), "rules.0.from");
    refused_nul("hours", json_stringn("09:00-10:00\0", 12), "rules.0.hours");
    refused_nul("utc_offset", json_stringn("+0100\0", 6), "rules.0.utc_offset");
    refused_nul("device", json_pack("[o]", json_stringn("bot\0", 4)), "rules.0.device");
}
END_TEST

START_TEST(stored_text)
{
    const qrt_rules_t *r = (const qrt_rules_t *)1;
    apr_size_t size = 7;
    const char *msg;

    msg = qrt_rules_parse_text(pool, "[{", &r, &size);
    ck_assert_ptr_nonnull(msg);
    ck_assert(r == (const qrt_rules_t *)1 && size == 7);
    msg = qrt_rules_parse_text(pool, "[{\"redirect_url\":\"https://a.example/\"}]", &r, &size);
    ck_assert_ptr_nonnull(msg);
    ck_assert(strstr(msg, "rules.0") != NULL);
    msg = qrt_rules_parse_text(pool, "[{\"redirect_url\":\"https://a.example/\","
                               "\"country\":[\"DE\"]}]", &r, &size);
    ck_assert_ptr_null(msg);
    ck_assert_int_eq(match(r, NULL, NULL, "DE", NULL, 0), 0);
    ck_assert_int_eq(size, qrt_rules_size(r));
}
END_TEST

/* ---------------------------------------------------------- Accept-Language */

static const char *first(const char *h)
{
    static char out[QRT_RULES_LANG_BUF];
    apr_size_t n;

    memset(out, 'x', sizeof(out));
    n = qrt_accept_language_first(h, out, sizeof(out));
    ck_assert_int_eq(n, strlen(out));
    return out;
}

START_TEST(accept_language)
{
    ck_assert_str_eq(first("de-AT"), "de-AT");
    ck_assert_str_eq(first("de-AT,de;q=0.9,en;q=0.8"), "de-AT");
    ck_assert_str_eq(first("en;q=0.5, fr;q=0.9 , de;q=0.7"), "fr");
    ck_assert_str_eq(first("  en-GB  ;  q=0.5 ,\tfr ; q=1"), "fr");
    ck_assert_str_eq(first("en;q=0.8,fr;q=0.8"), "en");
    ck_assert_str_eq(first("en;q=0.8,fr;Q=0.801"), "fr");
    ck_assert_str_eq(first("en,fr;q=1.000"), "en");
    ck_assert_str_eq(first("en;q=0.001,fr;q=0"), "en");
    /* q=0 is never chosen, '*' is ignored */
    ck_assert_str_eq(first("en;q=0"), "");
    ck_assert_str_eq(first("en;q=0.000,de;q=0.0"), "");
    ck_assert_str_eq(first("*"), "");
    ck_assert_str_eq(first("*,de;q=0.5"), "de");
    ck_assert_str_eq(first("*;q=1,en;q=0.1"), "en");
    /* malformed entries are skipped */
    ck_assert_str_eq(first("en;q=2,de;q=0.5"), "de");
    ck_assert_str_eq(first("en;q=1.5,de;q=0.5"), "de");
    ck_assert_str_eq(first("en;q=0.1234,de;q=0.5"), "de");
    ck_assert_str_eq(first("en;q=,de;q=0.5"), "de");
    ck_assert_str_eq(first("en;q=0.5x,de;q=0.1"), "de");
    ck_assert_str_eq(first("en;level=1,de;q=0.1"), "de");
    ck_assert_str_eq(first("en fr,de;q=0.1"), "de");
    ck_assert_str_eq(first("de_AT,de;q=0.1"), "de");
    ck_assert_str_eq(first("-de,en-,de--at,1x,\xc3\xa4,es;q=0.1"), "es");
    ck_assert_str_eq(first("deutschen,es;q=0.1"), "es");
    ck_assert_str_eq(first("en;q=.5,de;q=0.1"), "de");
    ck_assert_str_eq(first("en;;q=0.5,de;q=0.1"), "de");
    ck_assert_str_eq(first(";q=1,,, ,de;q=0.1"), "de");
    ck_assert_str_eq(first("en;q=0. ,de;q=0.1"), "de");
    ck_assert_str_eq(first(""), "");
    ck_assert_str_eq(first(",,,"), "");
    ck_assert_int_eq(qrt_accept_language_first(NULL, NULL, 0), 0);
    /* the output's size bounds the tag */
    {
        char small[3] = "zz";

        ck_assert_int_eq(qrt_accept_language_first("de", small, sizeof(small)), 2);
        ck_assert_str_eq(small, "de");
        ck_assert_int_eq(qrt_accept_language_first("de-AT,fr;q=0.5", small, sizeof(small)), 2);
        ck_assert_str_eq(small, "fr");
        ck_assert_int_eq(qrt_accept_language_first("de-AT", small, 1), 0);
        ck_assert_str_eq(small, "");
    }
    /* a 35-byte tag fits, 36 bytes are too long */
    ck_assert_str_eq(first("abcdefgh-1234567-abcdefgh-1234567-a"),
                     "abcdefgh-1234567-abcdefgh-1234567-a");
    ck_assert_str_eq(first("abcdefgh-12345678-abcdefgh-1234567-a,en;q=0.1"), "en");
}
END_TEST

START_TEST(accept_language_bounds)
{
    apr_array_header_t *a = apr_array_make(pool, 128, sizeof(char *));
    char *big, *h;
    int i;

    /* 100 entries: only the first 64 count */
    for (i = 0; i < 100; i++) {
        APR_ARRAY_PUSH(a, const char *) = apr_psprintf(pool, "l%c%c;q=0.%03d",
                                                       'a' + i / 26, 'a' + i % 26, i + 1);
    }
    h = apr_array_pstrcat(pool, a, ',');
    ck_assert_str_eq(first(h), "lcl");
    ck_assert_str_eq(first(h), apr_psprintf(pool, "l%c%c", 'a' + 63 / 26, 'a' + 63 % 26));
    /* empty elements do not count as entries */
    ck_assert_str_eq(first(apr_pstrcat(pool, ",,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,"
                                       ",,,,,,,,,,,,,,,,,,,,,,,,", h, NULL)), "lcl");

    /* a huge header: only the first 4096 bytes are looked at */
    big = apr_palloc(pool, 100001);
    memset(big, ' ', 100000);
    big[100000] = '\0';
    memcpy(big, "en;q=0.1,", 9);
    memcpy(big + 5000, ",de", 3);
    ck_assert_str_eq(first(big), "en");
    /* an entry the bound cuts is left out */
    memset(big, ' ', 100000);
    memcpy(big, "en;q=0.1,", 9);
    memcpy(big + QRT_ACCEPT_LANGUAGE_SCAN - 2, "de", 2);
    ck_assert_str_eq(first(big), "en");
    /* one that ends at the bound and the header with it counts */
    big[QRT_ACCEPT_LANGUAGE_SCAN] = '\0';
    ck_assert_str_eq(first(big), "de");
    /* no byte after a NUL is read: the header ends there */
    h = apr_pstrdup(pool, "fr;q=0.1,de");
    h[9] = '\0';
    ck_assert_str_eq(first(h), "fr");
}
END_TEST

static Suite *rules_suite(void)
{
    Suite *s = suite_create("qrt_rules");
    TCase *tc = tcase_create("rules");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, none);
    tcase_add_test(tc, device);
    tcase_add_test(tc, os);
    tcase_add_test(tc, country);
    tcase_add_test(tc, language);
    tcase_add_test(tc, from_until);
    tcase_add_test(tc, weekdays);
    tcase_add_test(tc, hours);
    tcase_add_test(tc, all_conditions);
    tcase_add_test(tc, first_match_wins);
    tcase_add_test(tc, canonical_round_trip);
    tcase_add_test(tc, memcpy_copy);
    tcase_add_test(tc, caps);
    tcase_add_test(tc, errors);
    tcase_add_test(tc, nul_bytes);
    tcase_add_test(tc, stored_text);
    tcase_add_test(tc, accept_language);
    tcase_add_test(tc, accept_language_bounds);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(rules_suite());
}
