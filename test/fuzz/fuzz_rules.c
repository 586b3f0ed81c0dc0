/* libFuzzer target for qrt_rules.c.
 *
 * The input, cut at its first NUL, is read three ways:
 * - as an Accept-Language header: the tag chosen is a piece of the header, a language tag
 *   that fits the buffer, its length returned;
 * - as the stored text of a rule set: either refused with a message, or a block whose
 *   canonical JSON parses back to itself and the same bytes;
 * - as a recipe: its bytes pick rules, keys and values (valid ones and near misses) and the
 *   facts of a visit, so that valid rule sets are common; a valid set is matched against
 *   the facts, and a copy of its block (malloc + memcpy) answers the same.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <apr_general.h>
#include <apr_strings.h>
#include "qrt_rules.h"
#include "qrt_valid.h"

#define FZ_FAIL(what) \
    do { fprintf(stderr, "fuzz_rules: %s (line %d)\n", what, __LINE__); abort(); } while (0)

static int tag_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
           || c == '-';
}

static void fz_accept_language(const char *h, size_t len)
{
    char out[QRT_RULES_LANG_BUF], small[4];
    apr_size_t n, i;

    n = qrt_accept_language_first(h, out, sizeof(out));
    if (n != strlen(out) || n >= sizeof(out)) {
        FZ_FAIL("a tag longer than its buffer or its length");
    }
    if (n && (!memmem(h, len < QRT_ACCEPT_LANGUAGE_SCAN ? len : QRT_ACCEPT_LANGUAGE_SCAN,
                      out, n))) {
        FZ_FAIL("a tag that is no piece of the header's first bytes");
    }
    for (i = 0; i < n; i++) {
        if (!tag_char(out[i])) {
            FZ_FAIL("a tag with a byte no language tag has");
        }
    }
    n = qrt_accept_language_first(h, small, sizeof(small));
    if (n != strlen(small) || n >= sizeof(small)) {
        FZ_FAIL("a tag longer than a small buffer");
    }
}

/* A valid set's canon reads back to itself, from text and from JSON alike. */
static void fz_round_trip(apr_pool_t *p, const qrt_rules_t *r, apr_size_t size,
                          const char *canon)
{
    const qrt_rules_t *r2 = NULL;
    apr_size_t size2 = 0;
    const char *canon2 = NULL, *field = NULL, *msg;
    json_error_t e;
    json_t *j;

    if (!r || !canon || size != qrt_rules_size(r) || qrt_rules_count(r) < 1
        || qrt_rules_count(r) > QRT_RULES_MAX) {
        FZ_FAIL("a valid set without its block, size or canon");
    }
    if (qrt_rules_parse_text(p, canon, &r2, &size2) || size2 != size || memcmp(r, r2, size)) {
        FZ_FAIL("a canon that does not read back as the same block");
    }
    j = json_loads(canon, 0, &e);
    msg = qrt_rules_parse(p, j, &r2, &size2, &canon2, &field);
    if (msg || !canon2 || strcmp(canon, canon2) || memcmp(r, r2, size)) {
        FZ_FAIL("a canon that is not its own canon");
    }
    json_decref(j);
}

/* The facts of a visit from a few bytes. */
static void fz_facts(const unsigned char *d, size_t n, qrt_rule_facts_t *f)
{
    static const char *const dev[] = { "mobile", "tablet", "desktop", "bot", "other", "x", NULL };
    static const char *const os[] = { "iOS", "android", "Mac OS X", "Other", "", NULL };
    static const char *const cc[] = { "DE", "at", "FR", "", "DEU", NULL };
    static const char *const lang[] = { "de", "de-AT", "DE-at", "en-US", "", "d", NULL };
    apr_uint64_t t = 0;
    size_t i;

    memset(f, 0, sizeof(*f));
    if (n < 5) {
        return;
    }
    f->device = dev[d[0] % 7];
    f->os = os[d[1] % 6];
    f->country = cc[d[2] % 6];
    f->language = lang[d[3] % 7];
    for (i = 4; i < n && i < 12; i++) {
        t = (t << 8) | d[i];
    }
    /* mostly around 2026, sometimes anything */
    f->now = (d[4] & 1) ? (apr_int64_t)t : APR_INT64_C(1777852800) + (apr_int64_t)(t % 2000000);
}

static void fz_match(const qrt_rules_t *r, const qrt_rule_facts_t *f)
{
    int m = qrt_rules_match(r, f), m2;
    qrt_rules_t *copy;
    const char *url;

    if (m < -1 || m >= qrt_rules_count(r)) {
        FZ_FAIL("a match out of range");
    }
    if (m >= 0 && (!(url = qrt_rules_url(r, m)) || qrt_valid_redirect_url(url))) {
        FZ_FAIL("a matched rule without a valid URL");
    }
    copy = malloc(qrt_rules_size(r));
    memcpy(copy, r, qrt_rules_size(r));
    m2 = qrt_rules_match(copy, f);
    free(copy);
    if (m2 != m) {
        FZ_FAIL("a copied block that answers otherwise");
    }
}

/* Values that fit a key (mostly valid, a few near misses); list: given as a JSON list. */
typedef struct {
    const char *key;
    int list;
    const char *v[8];
} fz_key;

static const fz_key FZ_KEYS[] = {
    { "device", 1, { "mobile", "tablet", "desktop", "bot", "other", "Mobile", "phone", NULL } },
    { "os", 1, { "iOS", "Android", "Mac OS X", "Other", "ios", "", NULL } },
    { "country", 1, { "DE", "at", "FR", "ch", "DEU", "D1", NULL } },
    { "language", 1, { "de", "de-AT", "en", "en-US", "zh-Hant-TW", "de_AT", "de-", NULL } },
    { "from", 0, { "2026-05-01T00:00:00+0200", "2026-05-10T12:00:00Z",
                   "1970-01-01T00:00:00+1400", "2026-05-01", NULL } },
    { "until", 0, { "2026-05-31T23:59:59Z", "2026-05-20T00:00:00-0500",
                    "9999-12-31T23:59:59-1400", "2026-02-30T00:00:00Z", NULL } },
    { "weekdays", 1, { NULL } },
    { "hours", 0, { "22:00-06:00", "09:00-17:30", "00:00-00:01", "23:00-24:00", "00:00-24:00",
                    "9:00-10:00", NULL } },
    { "utc_offset", 0, { "+0100", "-05:30", "+1400", "-0000", "+1401", "Z", NULL } },
    { "redirect_url", 0, { "https://a.example/x", "http://[::1]:8080/", "ftp://a.example/",
                           NULL } },
    { "x", 0, { "y", NULL } },
};
#define FZ_NKEYS (sizeof(FZ_KEYS) / sizeof(FZ_KEYS[0]))

static json_t *fz_value(const fz_key *k, unsigned x)
{
    json_t *v;
    size_t n = 0;

    while (n < 8 && k->v[n]) {
        n++;
    }
    if (!n) {                       /* weekdays: one to three of 0..8 */
        v = json_array();
        json_array_append_new(v, json_integer((x & 7) ? (x & 7) : 8));
        if (x & 0x40) {
            json_array_append_new(v, json_integer((x >> 3) % 7 + 1));
        }
        if (x & 0x80) {
            json_array_append_new(v, json_integer((x >> 4) % 9));
        }
        return v;
    }
    if (!k->list) {
        return json_string(k->v[x % n]);
    }
    v = json_array();
    json_array_append_new(v, json_string(k->v[x % n]));
    if (x & 0x80) {
        json_array_append_new(v, json_string(k->v[(x / 3) % n]));
    }
    return v;
}

/* A rule set built from the input's bytes: three bytes a member (which rule, which key,
 * which value), mostly values that fit their key, now and then one of another type. */
static json_t *fz_recipe(const unsigned char *d, size_t n, size_t *used)
{
    json_t *a = json_array(), *o = NULL, *v;
    size_t i = 0;

    while (i + 3 <= n && json_array_size(a) <= QRT_RULES_MAX) {
        unsigned op = d[i], x = d[i + 2];
        const fz_key *k = &FZ_KEYS[d[i + 1] % FZ_NKEYS];

        i += 3;
        if (!o || op % 8 == 0) {
            o = json_object();
            json_object_set_new(o, "redirect_url", json_string("https://a.example/r"));
            json_array_append_new(a, o);
        }
        switch ((op >> 3) % 8) {
        case 0:
            v = (x & 1) ? json_null() : json_integer(x);
            break;
        case 1:
            v = json_array();
            break;
        default:
            v = fz_value(k, x);
            break;
        }
        json_object_set_new(o, k->key, v);
    }
    *used = i;
    return a;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static apr_pool_t *p;
    const qrt_rules_t *r = NULL;
    apr_size_t bsize = 0, used = 0;
    const char *canon = NULL, *field = NULL, *msg;
    qrt_rule_facts_t f;
    char *text;
    json_t *j;

    if (!p) {
        apr_initialize();
        apr_pool_create(&p, NULL);
    }
    text = apr_pstrmemdup(p, (const char *)data, size);
    fz_accept_language(text, strlen(text));

    msg = qrt_rules_parse_text(p, text, &r, &bsize);
    if (!msg && r) {
        j = json_loads(text, JSON_DECODE_ANY, NULL);
        if (qrt_rules_parse(p, j, &r, &bsize, &canon, &field)) {
            FZ_FAIL("text accepted and its JSON refused");
        }
        json_decref(j);
        fz_round_trip(p, r, bsize, canon);
        fz_facts(data, size, &f);
        fz_match(r, &f);
    }

    j = fz_recipe(data, size, &used);
    r = NULL;
    msg = qrt_rules_parse(p, j, &r, &bsize, &canon, &field);
    if (msg && (!field || strncmp(field, "rules", 5))) {
        FZ_FAIL("an error without its path");
    }
    if (!msg && r) {
        fz_round_trip(p, r, bsize, canon);
        fz_facts(data + used, size - used, &f);
        fz_match(r, &f);
    }
    json_decref(j);
    apr_pool_clear(p);
    return 0;
}
