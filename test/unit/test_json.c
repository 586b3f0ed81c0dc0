/* Unit tests for qrt_json's quoting and qrt_report_row_json, against jansson's own
 * serialisation of the same values (the API's report rows were jansson objects). */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>
#include <jansson.h>

#include "qrt_date.h"
#include "qrt_json.h"
#include "qrt_report.h"
#include "qrt_check.h"

QRT_CHECK_POOL

/* What json_dumps writes for the string s (n bytes). */
static char *jansson_quoted(const char *s, apr_size_t n)
{
    json_t *j = json_stringn(s, n);
    char *d, *out;

    ck_assert_ptr_nonnull(j);
    d = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    out = apr_pstrdup(pool, d);
    free(d);
    json_decref(j);
    return out;
}

static const char *const samples[] = {
    "", "plain", "Berlin", "São Paulo", "東京", "quote \" and back\\slash",
    "slash / stays", "tab\tnew\nline\rret\bbs\fff", "\x01\x02\x1f\x7f", "emoji 😀",
    "line sep \xe2\x80\xa8 para sep \xe2\x80\xa9", "<script>alert(1)</script>",
    "' OR 1=1 --", "%s%n%d",
};

START_TEST(quote_is_jansson)
{
    apr_size_t i;

    for (i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
        apr_size_t n = strlen(samples[i]);
        char *out = apr_palloc(pool, QRT_JSON_QUOTED_MAX(n) + 1);
        apr_size_t k = qrt_json_quote(out, samples[i], n);

        ck_assert_uint_le(k, QRT_JSON_QUOTED_MAX(n));
        out[k] = '\0';
        ck_assert_str_eq(out, jansson_quoted(samples[i], n));
    }
    {
        /* every control character, and the most a byte can take */
        char all[32], *out = apr_palloc(pool, QRT_JSON_QUOTED_MAX(32) + 1);
        apr_size_t k;

        for (i = 0; i < 32; i++) {
            all[i] = (char)(i ? i : 1);
        }
        k = qrt_json_quote(out, all, 32);
        out[k] = '\0';
        ck_assert_str_eq(out, jansson_quoted(all, 32));
    }
}
END_TEST

/* The row as the API built it before: a jansson object, dumped. */
static char *jansson_row(int type, const qrt_report_row_t *r)
{
    json_t *o = json_object();
    char day[QRT_DAY_LEN], *d, *out;

    switch (type) {
    case QRT_REPORT_NAME:
        json_object_set_new(o, "tracker_id", json_integer(r->id));
        if (r->key) {
            json_object_set_new(o, "name", json_string(r->key));
        }
        break;
    case QRT_REPORT_DATE:
        qrt_date_format_day(day, r->id);
        json_object_set_new(o, "date", json_string(day));
        break;
    default:
        json_object_set_new(o, qrt_report_type_name(type),
                            *r->key ? json_string(r->key) : json_null());
        break;
    }
    json_object_set_new(o, "visits", json_integer(r->scans + r->clicks));
    json_object_set_new(o, "scans", json_integer(r->scans));
    json_object_set_new(o, "clicks", json_integer(r->clicks));
    json_object_set_new(o, "unique_visitors", json_integer(r->uniques));
    d = json_dumps(o, JSON_COMPACT);
    out = apr_pstrdup(pool, d);
    free(d);
    json_decref(o);
    return out;
}

START_TEST(rows_are_the_objects_they_were)
{
    const apr_int64_t ids[] = { 0, 1, 20787, -1, 9007199254740993LL, -719162 };
    apr_size_t i, j;
    int type;

    for (type = 0; type < QRT_REPORT_NTYPES; type++) {
        for (i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
            for (j = 0; j < sizeof(ids) / sizeof(ids[0]); j++) {
                qrt_report_row_t r;
                char out[512];
                apr_size_t n;

                r.id = type == QRT_REPORT_DATE ? (ids[j] % 3000000) : ids[j];
                r.key = type == QRT_REPORT_DATE ? "" : samples[i];
                r.scans = ids[j] < 0 ? 0 : ids[j] / 2;
                r.clicks = (apr_int64_t)i;
                r.uniques = (apr_int64_t)j;
                n = qrt_report_row_json(out, sizeof(out), type, &r);
                ck_assert_uint_lt(n, sizeof(out));
                ck_assert_uint_eq(n, strlen(out));
                ck_assert_str_eq(out, jansson_row(type, &r));
            }
        }
    }
    {
        /* a tracker without a name: no name key */
        qrt_report_row_t r = { 7, NULL, 1, 2, 3 };
        char out[256];

        qrt_report_row_json(out, sizeof(out), QRT_REPORT_NAME, &r);
        ck_assert_str_eq(out, jansson_row(QRT_REPORT_NAME, &r));
    }
}
END_TEST

START_TEST(a_small_buffer_says_what_it_needs)
{
    char *name = apr_palloc(pool, 3001), *big;
    qrt_report_row_t r = { 42, NULL, 5, 6, 7 };
    char small[64];
    apr_size_t need, n;

    memset(name, '"', 3000);        /* each byte quoted as two */
    name[3000] = '\0';
    r.key = name;
    need = qrt_report_row_json(small, sizeof(small), QRT_REPORT_NAME, &r);
    ck_assert_uint_ge(need, sizeof(small));
    big = apr_palloc(pool, need + 1);
    n = qrt_report_row_json(big, need + 1, QRT_REPORT_NAME, &r);
    ck_assert_uint_lt(n, need + 1);
    ck_assert_str_eq(big, jansson_row(QRT_REPORT_NAME, &r));
}
END_TEST

static Suite *json_suite(void)
{
    Suite *s = suite_create("qrt_json");
    TCase *tc = tcase_create("json");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, quote_is_jansson);
    tcase_add_test(tc, rows_are_the_objects_they_were);
    tcase_add_test(tc, a_small_buffer_says_what_it_needs);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(json_suite());
}
