/* qrt_rules: see qrt_rules.h. */
#include <string.h>

#include <apr_strings.h>
#include <jansson.h>

#include "qrt_date.h"
#include "qrt_json.h"
#include "qrt_rules.h"
#include "qrt_valid.h"

/* flags of a compiled rule */
#define RULE_HOURS 1

/* One compiled rule. Lists live after the rules in the same block, at byte offsets from
 * its start: os and language as entries of one length byte then the lower-case bytes,
 * country as pairs of upper-case letters. */
typedef struct {
    apr_int64_t from, until;        /* inclusive; the int64 extremes when absent */
    apr_int32_t offset;             /* seconds east of UTC for weekdays and hours */
    apr_uint32_t url;               /* the redirect URL, NUL-ended */
    apr_uint32_t os, language, country;
    apr_uint16_t hours_start;       /* minute of the day, inclusive */
    apr_uint16_t hours_end;         /* minute of the day, exclusive (may be <= start) */
    apr_byte_t n_os, n_language, n_country;
    apr_byte_t device;             /* bit per DEVICES entry; 0: any */
    apr_byte_t weekdays;           /* bit 0 = Monday; 0: any */
    apr_byte_t flags;
} rule_c;

struct qrt_rules {
    apr_uint32_t size;
    apr_uint32_t count;
    rule_c rule[];
};

static const char *const DEVICES[] = { "mobile", "tablet", "desktop", "bot", "other" };
#define N_DEVICES (sizeof(DEVICES) / sizeof(DEVICES[0]))

/* ---------------------------------------------------------------- helpers */

static int lower(int c)
{
    return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}

static int is_alpha(int c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static int is_digit(int c)
{
    return c >= '0' && c <= '9';
}

/* s (n bytes, any case) equals the lower-case l (n bytes). */
static int eq_lower(const char *s, const unsigned char *l, apr_size_t n)
{
    apr_size_t i;

    for (i = 0; i < n; i++) {
        if (lower((unsigned char)s[i]) != l[i]) {
            return 0;
        }
    }
    return 1;
}

/* A language tag of n bytes: subtags of 1 to 8 letters or digits joined by single '-',
 * the first of letters only, QRT_RULES_LANG_MAX bytes at most. */
static int lang_tag_ok(const char *s, apr_size_t n)
{
    apr_size_t i, run = 0, sub = 0;

    if (n == 0 || n > QRT_RULES_LANG_MAX) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        int c = (unsigned char)s[i];

        if (c == '-') {
            if (run == 0) {
                return 0;
            }
            run = 0;
            sub++;
        }
        else if (is_alpha(c) || (sub > 0 && is_digit(c))) {
            if (++run > 8) {
                return 0;
            }
        }
        else {
            return 0;
        }
    }
    return run > 0;
}

/* "+hhmm", "-hhmm", "+hh:mm" or "-hh:mm", at most 14:00: 0 and *sec, else -1. */
static int parse_offset(const char *s, apr_size_t n, apr_int32_t *sec)
{
    int sign, h, m;

    if (n == 6 && s[3] == ':') {
        if (!is_digit(s[4]) || !is_digit(s[5])) {
            return -1;
        }
        m = (s[4] - '0') * 10 + (s[5] - '0');
    }
    else if (n == 5) {
        if (!is_digit(s[3]) || !is_digit(s[4])) {
            return -1;
        }
        m = (s[3] - '0') * 10 + (s[4] - '0');
    }
    else {
        return -1;
    }
    if ((s[0] != '+' && s[0] != '-') || !is_digit(s[1]) || !is_digit(s[2])) {
        return -1;
    }
    sign = s[0] == '-' ? -1 : 1;
    h = (s[1] - '0') * 10 + (s[2] - '0');
    if (m > 59 || h * 3600 + m * 60 > QRT_DATE_MAX_OFFSET) {
        return -1;
    }
    *sec = sign * (h * 3600 + m * 60);
    return 0;
}

/* "HH:MM" at s: minute of the day (24:00 only when allow24), else -1. */
static int parse_hhmm(const char *s, int allow24)
{
    int h, m;

    if (!is_digit(s[0]) || !is_digit(s[1]) || s[2] != ':' || !is_digit(s[3])
        || !is_digit(s[4])) {
        return -1;
    }
    h = (s[0] - '0') * 10 + (s[1] - '0');
    m = (s[3] - '0') * 10 + (s[4] - '0');
    if (m > 59 || h > 24 || (h == 24 && (m != 0 || !allow24))) {
        return -1;
    }
    return h * 60 + m;
}

/* -------------------------------------------------------------- validation */

/* A rule as validated, before it is laid out in the block. */
typedef struct {
    const char *url;
    const char *os[QRT_RULES_LIST_MAX];
    const char *language[QRT_RULES_LIST_MAX];
    char country[2 * QRT_RULES_LIST_MAX];
    apr_size_t n_os, n_language, n_country;
    apr_int64_t from, until;
    apr_int32_t offset;
    int hours_start, hours_end;
    int has_from, has_until, has_hours, has_offset;
    apr_byte_t device, weekdays;
} rule_src;

typedef struct {
    apr_pool_t *p;
    int index;                  /* the rule's position */
    const char *field;          /* set with the message on error */
} rule_ctx;

static const char *rule_fail(rule_ctx *x, const char *key, const char *msg)
{
    x->field = key ? apr_psprintf(x->p, "rules.%d.%s", x->index, key)
                   : apr_psprintf(x->p, "rules.%d", x->index);
    return msg;
}

/* A list of 1 to max strings: NULL and its size in *n, else the message. */
static const char *rule_list(rule_ctx *x, const char *key, json_t *v, apr_size_t max,
                             apr_size_t *n, const char *what)
{
    apr_size_t i;

    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > max) {
        return rule_fail(x, key, apr_psprintf(x->p, "The %s must be a list of 1 to %"
                                              APR_SIZE_T_FMT " %s.", key, max, what));
    }
    *n = json_array_size(v);
    for (i = 0; i < *n; i++) {
        if (!json_is_string(json_array_get(v, i))) {
            return rule_fail(x, key, apr_psprintf(x->p, "The %s must be a list of 1 to %"
                                                  APR_SIZE_T_FMT " %s.", key, max, what));
        }
    }
    return NULL;
}

static const char *rule_device(rule_ctx *x, json_t *v, rule_src *s)
{
    const char *msg = "The device must be a list of: mobile, tablet, desktop, bot, other.";
    apr_size_t i, k, n;

    if (rule_list(x, "device", v, QRT_RULES_LIST_MAX, &n, "device names")) {
        return rule_fail(x, "device", msg);
    }
    for (i = 0; i < n; i++) {
        json_t *e = json_array_get(v, i);
        const char *d = json_string_value(e);
        apr_size_t len = json_string_length(e);

        for (k = 0; k < N_DEVICES; k++) {
            if (len == strlen(DEVICES[k])
                && eq_lower(d, (const unsigned char *)DEVICES[k], len)) {
                break;
            }
        }
        if (k == N_DEVICES) {
            return rule_fail(x, "device", msg);
        }
        s->device |= (apr_byte_t)(1u << k);
    }
    return NULL;
}

static const char *rule_os(rule_ctx *x, json_t *v, rule_src *s)
{
    apr_size_t i;
    const char *msg = rule_list(x, "os", v, QRT_RULES_LIST_MAX, &s->n_os, "os names");

    if (msg) {
        return msg;
    }
    for (i = 0; i < s->n_os; i++) {
        json_t *e = json_array_get(v, i);
        apr_size_t len = json_string_length(e);

        if (len == 0 || len > QRT_RULES_OS_MAX
            || qrt_valid_text(json_string_value(e), len, 0)) {
            return rule_fail(x, "os", apr_psprintf(x->p, "Each os must be 1 to %d bytes of "
                                                   "text without control characters.",
                                                   QRT_RULES_OS_MAX));
        }
        s->os[i] = json_string_value(e);
    }
    return NULL;
}

static const char *rule_country(rule_ctx *x, json_t *v, rule_src *s)
{
    apr_size_t i;
    const char *msg = rule_list(x, "country", v, QRT_RULES_LIST_MAX, &s->n_country,
                                "country codes");

    if (msg) {
        return msg;
    }
    for (i = 0; i < s->n_country; i++) {
        json_t *e = json_array_get(v, i);
        const char *c = json_string_value(e);

        if (json_string_length(e) != 2 || !is_alpha((unsigned char)c[0])
            || !is_alpha((unsigned char)c[1])) {
            return rule_fail(x, "country", "Each country must be an ISO 3166 alpha-2 code "
                             "(two letters, e.g. DE).");
        }
        s->country[2 * i] = (char)(lower((unsigned char)c[0]) - ('a' - 'A'));
        s->country[2 * i + 1] = (char)(lower((unsigned char)c[1]) - ('a' - 'A'));
    }
    return NULL;
}

static const char *rule_language(rule_ctx *x, json_t *v, rule_src *s)
{
    apr_size_t i;
    const char *msg = rule_list(x, "language", v, QRT_RULES_LIST_MAX, &s->n_language,
                                "language tags");

    if (msg) {
        return msg;
    }
    for (i = 0; i < s->n_language; i++) {
        json_t *e = json_array_get(v, i);

        if (!lang_tag_ok(json_string_value(e), json_string_length(e))) {
            return rule_fail(x, "language", apr_psprintf(x->p, "Each language must be a "
                             "language tag of letters, digits and '-', at most %d bytes "
                             "(e.g. de or de-AT).", QRT_RULES_LANG_MAX));
        }
        s->language[i] = json_string_value(e);
    }
    return NULL;
}

/* A time, clamped to what UTC can write (1970 to 9999), so that the canon reads back. */
static const char *rule_time(rule_ctx *x, const char *key, json_t *v, apr_int64_t *t)
{
    if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)
        || qrt_date_parse(json_string_value(v), t, NULL)) {
        return rule_fail(x, key, apr_psprintf(x->p, "The %s must be a time like "
                                              "2026-05-01T00:00:00+0200.", key));
    }
    *t = qrt_date_clamp(*t);
    return NULL;
}

static const char *rule_weekdays(rule_ctx *x, json_t *v, rule_src *s)
{
    apr_size_t i, n = json_is_array(v) ? json_array_size(v) : 0;

    for (i = 0; n <= QRT_RULES_WEEKDAYS_MAX && i < n; i++) {
        json_t *e = json_array_get(v, i);

        if (!json_is_integer(e) || json_integer_value(e) < 1 || json_integer_value(e) > 7) {
            break;
        }
        s->weekdays |= (apr_byte_t)(1u << (json_integer_value(e) - 1));
    }
    if (n == 0 || n > QRT_RULES_WEEKDAYS_MAX || i < n) {
        return rule_fail(x, "weekdays", "The weekdays must be a list of 1 to 7 integers "
                         "from 1 (Monday) to 7 (Sunday).");
    }
    return NULL;
}

static const char *rule_hours(rule_ctx *x, json_t *v, rule_src *s)
{
    const char *h = json_is_string(v) ? json_string_value(v) : NULL;

    if (!h || json_string_length(v) != 11 || h[5] != '-'
        || (s->hours_start = parse_hhmm(h, 0)) < 0
        || (s->hours_end = parse_hhmm(h + 6, 1)) < 0
        || s->hours_start == s->hours_end % (24 * 60)) {
        return rule_fail(x, "hours", "The hours must be \"HH:MM-HH:MM\" (24-hour clock, "
                         "end exclusive and at most 24:00, start and end different).");
    }
    s->has_hours = 1;
    return NULL;
}

static const char *rule_offset(rule_ctx *x, json_t *v, rule_src *s)
{
    if (!json_is_string(v)
        || parse_offset(json_string_value(v), json_string_length(v), &s->offset)) {
        return rule_fail(x, "utc_offset", "The utc_offset must be +hhmm, -hhmm, +hh:mm or "
                         "-hh:mm, at most 14:00.");
    }
    s->has_offset = 1;
    return NULL;
}

static const char *const KEYS[] = {
    "redirect_url", "device", "os", "country", "language", "from", "until", "weekdays",
    "hours", "utc_offset"
};

static int rule_known(const char *key)
{
    apr_size_t i;

    for (i = 0; i < sizeof(KEYS) / sizeof(KEYS[0]); i++) {
        if (strcmp(key, KEYS[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

/* One known key of a rule object (v not null). */
static const char *rule_key(rule_ctx *x, const char *key, json_t *v, rule_src *s)
{
    const char *why;

    if (strcmp(key, "redirect_url") == 0) {
        if (!json_is_string(v)) {
            return rule_fail(x, key, "The redirect_url field must be a string.");
        }
        why = strlen(json_string_value(v)) != json_string_length(v)
              ? "may not contain a NUL byte" : qrt_valid_redirect_url(json_string_value(v));
        if (why) {
            return rule_fail(x, key, apr_pstrcat(x->p, "The redirect_url ", why, ".", NULL));
        }
        s->url = json_string_value(v);
        return NULL;
    }
    if (strcmp(key, "device") == 0) {
        return rule_device(x, v, s);
    }
    if (strcmp(key, "os") == 0) {
        return rule_os(x, v, s);
    }
    if (strcmp(key, "country") == 0) {
        return rule_country(x, v, s);
    }
    if (strcmp(key, "language") == 0) {
        return rule_language(x, v, s);
    }
    if (strcmp(key, "from") == 0) {
        s->has_from = 1;
        return rule_time(x, key, v, &s->from);
    }
    if (strcmp(key, "until") == 0) {
        s->has_until = 1;
        return rule_time(x, key, v, &s->until);
    }
    if (strcmp(key, "weekdays") == 0) {
        return rule_weekdays(x, v, s);
    }
    if (strcmp(key, "hours") == 0) {
        return rule_hours(x, v, s);
    }
    return rule_offset(x, v, s);
}

static const char *rule_check(rule_ctx *x, json_t *o, rule_src *s)
{
    const char *key, *msg;
    json_t *v;

    if (!json_is_object(o)) {
        return rule_fail(x, NULL, "A rule must be an object.");
    }
    json_object_foreach(o, key, v) {
        if (!rule_known(key)) {
            /* The field named as sent (made valid UTF-8, cut to 64 bytes). */
            const char *shown = qrt_valid_utf8_clean(x->p, key, strlen(key), 64);

            return rule_fail(x, *shown ? shown : NULL,
                             apr_psprintf(x->p, "A rule has no field '%s'.", shown));
        }
        if (!json_is_null(v) && (msg = rule_key(x, key, v, s)) != NULL) {
            return msg;
        }
    }
    if (!s->url) {
        return rule_fail(x, "redirect_url", "The redirect_url field is required.");
    }
    if (!s->device && !s->n_os && !s->n_country && !s->n_language && !s->has_from
        && !s->has_until && !s->weekdays && !s->has_hours) {
        return rule_fail(x, NULL, "A rule needs at least one condition: device, os, "
                         "country, language, from, until, weekdays or hours.");
    }
    if (s->has_from && s->has_until && s->from > s->until) {
        return rule_fail(x, "until", "The until must not be before from.");
    }
    return NULL;
}

/* ------------------------------------------------------------ canonical JSON */

static json_t *rule_canon(const rule_src *s)
{
    json_t *o = json_object(), *a;
    char buf[QRT_DATE_LEN];
    apr_size_t i;

    json_object_set_new(o, "redirect_url", json_string(s->url));
    if (s->device) {
        a = json_array();
        for (i = 0; i < N_DEVICES; i++) {
            if (s->device & (1u << i)) {
                json_array_append_new(a, json_string(DEVICES[i]));
            }
        }
        json_object_set_new(o, "device", a);
    }
    if (s->n_os) {
        a = json_array();
        for (i = 0; i < s->n_os; i++) {
            json_array_append_new(a, json_string(s->os[i]));
        }
        json_object_set_new(o, "os", a);
    }
    if (s->n_country) {
        a = json_array();
        for (i = 0; i < s->n_country; i++) {
            json_array_append_new(a, json_stringn(s->country + 2 * i, 2));
        }
        json_object_set_new(o, "country", a);
    }
    if (s->n_language) {
        a = json_array();
        for (i = 0; i < s->n_language; i++) {
            json_array_append_new(a, json_string(s->language[i]));
        }
        json_object_set_new(o, "language", a);
    }
    if (s->has_from) {
        qrt_date_format(buf, s->from, 0);
        json_object_set_new(o, "from", json_string(buf));
    }
    if (s->has_until) {
        qrt_date_format(buf, s->until, 0);
        json_object_set_new(o, "until", json_string(buf));
    }
    if (s->weekdays) {
        a = json_array();
        for (i = 0; i < 7; i++) {
            if (s->weekdays & (1u << i)) {
                json_array_append_new(a, json_integer((json_int_t)i + 1));
            }
        }
        json_object_set_new(o, "weekdays", a);
    }
    if (s->has_hours) {
        apr_snprintf(buf, sizeof(buf), "%02d:%02d-%02d:%02d", s->hours_start / 60,
                     s->hours_start % 60, s->hours_end / 60, s->hours_end % 60);
        json_object_set_new(o, "hours", json_string(buf));
    }
    if (s->has_offset) {
        int a_off = s->offset < 0 ? -s->offset : s->offset;

        apr_snprintf(buf, sizeof(buf), "%c%02d%02d", s->offset < 0 ? '-' : '+',
                     a_off / 3600, a_off % 3600 / 60);
        json_object_set_new(o, "utc_offset", json_string(buf));
    }
    return o;
}

/* ------------------------------------------------------------------ layout */

/* Bytes a rule adds after the rule records. */
static apr_size_t rule_extra(const rule_src *s)
{
    apr_size_t i, n = strlen(s->url) + 1 + 2 * s->n_country;

    for (i = 0; i < s->n_os; i++) {
        n += 1 + strlen(s->os[i]);
    }
    for (i = 0; i < s->n_language; i++) {
        n += 1 + strlen(s->language[i]);
    }
    return n;
}

/* A string list as entries of one length byte and the lower-case bytes, at pos. */
static apr_size_t put_list(char *base, apr_size_t pos, const char *const *v, apr_size_t n)
{
    apr_size_t i, k, len;

    for (i = 0; i < n; i++) {
        len = strlen(v[i]);
        base[pos++] = (char)len;
        for (k = 0; k < len; k++) {
            base[pos++] = (char)lower((unsigned char)v[i][k]);
        }
    }
    return pos;
}

static qrt_rules_t *rules_layout(apr_pool_t *p, const rule_src *src, int count,
                                 apr_size_t *size)
{
    apr_size_t total = sizeof(qrt_rules_t) + (apr_size_t)count * sizeof(rule_c), pos;
    qrt_rules_t *r;
    char *base;
    int i;

    for (i = 0; i < count; i++) {
        total += rule_extra(&src[i]);
    }
    r = apr_pcalloc(p, total);
    base = (char *)r;
    r->size = (apr_uint32_t)total;
    r->count = (apr_uint32_t)count;
    pos = sizeof(qrt_rules_t) + (apr_size_t)count * sizeof(rule_c);
    for (i = 0; i < count; i++) {
        const rule_src *s = &src[i];
        rule_c *c = &r->rule[i];
        apr_size_t len = strlen(s->url);

        c->from = s->has_from ? s->from : APR_INT64_MIN;
        c->until = s->has_until ? s->until : APR_INT64_MAX;
        c->offset = s->offset;
        c->url = (apr_uint32_t)pos;
        memcpy(base + pos, s->url, len + 1);
        pos += len + 1;
        c->os = (apr_uint32_t)pos;
        c->n_os = (apr_byte_t)s->n_os;
        pos = put_list(base, pos, s->os, s->n_os);
        c->language = (apr_uint32_t)pos;
        c->n_language = (apr_byte_t)s->n_language;
        pos = put_list(base, pos, s->language, s->n_language);
        c->country = (apr_uint32_t)pos;
        c->n_country = (apr_byte_t)s->n_country;
        memcpy(base + pos, s->country, 2 * s->n_country);
        pos += 2 * s->n_country;
        c->device = s->device;
        c->weekdays = s->weekdays;
        if (s->has_hours) {
            c->flags |= RULE_HOURS;
            c->hours_start = (apr_uint16_t)s->hours_start;
            c->hours_end = (apr_uint16_t)s->hours_end;
        }
    }
    *size = total;
    return r;
}

/* ------------------------------------------------------------------- parse */

static const char *rules_parse(apr_pool_t *p, const json_t *j, const qrt_rules_t **out,
                               apr_size_t *size, const char **canon, const char **field)
{
    rule_src *src;
    rule_ctx x;
    json_t *c = NULL;
    apr_size_t n, i;
    const char *msg;

    if (!j || json_is_null(j)) {
        n = 0;
    }
    else if (!json_is_array(j)) {
        *field = "rules";
        return "The rules field must be a list of rule objects.";
    }
    else if ((n = json_array_size(j)) > QRT_RULES_MAX) {
        *field = "rules";
        return apr_psprintf(p, "A tracker may have at most %d rules.", QRT_RULES_MAX);
    }
    if (n == 0) {
        *out = NULL;
        *size = 0;
        if (canon) {
            *canon = NULL;
        }
        return NULL;
    }
    src = apr_pcalloc(p, n * sizeof(*src));
    x.p = p;
    x.field = NULL;
    for (i = 0; i < n; i++) {
        x.index = (int)i;
        msg = rule_check(&x, json_array_get(j, i), &src[i]);
        if (msg) {
            *field = x.field;
            return msg;
        }
    }
    if (canon) {
        c = qrt_json_own(p, json_array());
        for (i = 0; i < n; i++) {
            json_array_append_new(c, rule_canon(&src[i]));
        }
        *canon = qrt_json_dump(p, c, NULL);
    }
    *out = rules_layout(p, src, (int)n, size);
    return NULL;
}

const char *qrt_rules_parse(apr_pool_t *p, const void *json_array, const qrt_rules_t **out,
                            apr_size_t *size, const char **canon, const char **field)
{
    const char *ignored;

    return rules_parse(p, json_array, out, size, canon, field ? field : &ignored);
}

const char *qrt_rules_parse_text(apr_pool_t *p, const char *text, const qrt_rules_t **out,
                                 apr_size_t *size)
{
    const char *field = NULL, *msg;
    json_error_t e;
    json_t *j;

    if (!text) {
        *out = NULL;
        *size = 0;
        return NULL;
    }
    j = qrt_json_own(p, json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &e));
    if (!j) {
        return apr_psprintf(p, "The stored rules are not JSON: %s (line %d, column %d).",
                            e.text, e.line, e.column);
    }
    msg = rules_parse(p, j, out, size, NULL, &field);
    if (msg) {
        return apr_pstrcat(p, field, ": ", msg, NULL);
    }
    return NULL;
}

/* ------------------------------------------------------------------- match */

/* The visitor's value v (vlen bytes, any case) is in the list of n entries at l. */
static int in_list(const unsigned char *l, apr_size_t n, const char *v, apr_size_t vlen)
{
    apr_size_t i;

    for (i = 0; i < n; i++, l += 1 + l[0]) {
        if (l[0] == vlen && eq_lower(v, l + 1, vlen)) {
            return 1;
        }
    }
    return 0;
}

/* Some tag of the list at l is the visitor's tag v or a prefix of it up to a '-'. */
static int lang_in_list(const unsigned char *l, apr_size_t n, const char *v, apr_size_t vlen)
{
    apr_size_t i;

    for (i = 0; i < n; i++, l += 1 + l[0]) {
        if (l[0] <= vlen && (l[0] == vlen || v[l[0]] == '-') && eq_lower(v, l + 1, l[0])) {
            return 1;
        }
    }
    return 0;
}

static int country_in_list(const char *l, apr_size_t n, char c0, char c1)
{
    apr_size_t i;

    for (i = 0; i < n; i++, l += 2) {
        if (l[0] == c0 && l[1] == c1) {
            return 1;
        }
    }
    return 0;
}

/* Weekday and hours of a rule, read in its offset at now. */
static int rule_clock(const rule_c *c, apr_int64_t now)
{
    apr_int64_t local = now + c->offset, day = local / 86400, sec = local % 86400;
    int minute, wd;

    if (sec < 0) {
        sec += 86400;
        day--;
    }
    if (c->weekdays) {
        wd = (int)(((day % 7) + 7 + 3) % 7);       /* day 0 was a Thursday; 0 = Monday */
        if (!(c->weekdays & (1u << wd))) {
            return 0;
        }
    }
    if (c->flags & RULE_HOURS) {
        minute = (int)(sec / 60);
        if (c->hours_start < c->hours_end) {
            return minute >= c->hours_start && minute < c->hours_end;
        }
        return minute >= c->hours_start || minute < c->hours_end;
    }
    return 1;
}

static unsigned device_bit(const char *d)
{
    apr_size_t k, len;

    if (!d) {
        return 0;
    }
    len = strlen(d);
    for (k = 0; k < N_DEVICES; k++) {
        if (len == strlen(DEVICES[k]) && eq_lower(d, (const unsigned char *)DEVICES[k], len)) {
            return 1u << k;
        }
    }
    return 0;
}

int qrt_rules_match(const qrt_rules_t *r, const qrt_rule_facts_t *f)
{
    const char *base = (const char *)r;
    apr_size_t os_len, lang_len;
    apr_int64_t now;
    unsigned dev;
    char c0 = 0, c1 = 0;
    apr_uint32_t i;

    if (!r || !f) {
        return -1;
    }
    dev = device_bit(f->device);
    os_len = f->os ? strlen(f->os) : 0;
    lang_len = f->language ? strlen(f->language) : 0;
    if (f->country && f->country[0] && f->country[1] && !f->country[2]) {
        c0 = (char)(lower((unsigned char)f->country[0]) - ('a' - 'A'));
        c1 = (char)(lower((unsigned char)f->country[1]) - ('a' - 'A'));
    }
    /* far beyond any time a rule names, and no overflow when an offset is added */
    now = f->now;
    if (now > APR_INT64_C(1) << 62) {
        now = APR_INT64_C(1) << 62;
    }
    else if (now < -(APR_INT64_C(1) << 62)) {
        now = -(APR_INT64_C(1) << 62);
    }
    for (i = 0; i < r->count; i++) {
        const rule_c *c = &r->rule[i];

        if (now < c->from || now > c->until || (c->device && !(c->device & dev))) {
            continue;
        }
        if (c->n_country && !country_in_list(base + c->country, c->n_country, c0, c1)) {
            continue;
        }
        if ((c->weekdays || (c->flags & RULE_HOURS)) && !rule_clock(c, now)) {
            continue;
        }
        if (c->n_os && (!os_len || !in_list((const unsigned char *)base + c->os, c->n_os,
                                            f->os, os_len))) {
            continue;
        }
        if (c->n_language
            && (!lang_len || !lang_in_list((const unsigned char *)base + c->language,
                                           c->n_language, f->language, lang_len))) {
            continue;
        }
        return (int)i;
    }
    return -1;
}

const char *qrt_rules_url(const qrt_rules_t *r, int i)
{
    if (!r || i < 0 || (apr_uint32_t)i >= r->count) {
        return NULL;
    }
    return (const char *)r + r->rule[i].url;
}

int qrt_rules_count(const qrt_rules_t *r)
{
    return r ? (int)r->count : 0;
}

apr_size_t qrt_rules_size(const qrt_rules_t *r)
{
    return r ? r->size : 0;
}

/* --------------------------------------------------------- Accept-Language */

static int is_ows(int c)
{
    return c == ' ' || c == '\t';
}

/* An entry's weight "q=..." at s[i..end) after its ';': 0..1000, or -1 when malformed. */
static int accept_q(const char *s, apr_size_t i, apr_size_t end)
{
    int q, digits = 0, scale = 100;

    while (i < end && is_ows((unsigned char)s[i])) {
        i++;
    }
    if (i + 2 > end || (s[i] != 'q' && s[i] != 'Q') || s[i + 1] != '=') {
        return -1;
    }
    i += 2;
    if (i >= end || (s[i] != '0' && s[i] != '1')) {
        return -1;
    }
    q = s[i++] == '1' ? 1000 : 0;
    if (i < end && s[i] == '.') {
        for (i++; i < end && is_digit((unsigned char)s[i]); i++) {
            if (++digits > 3 || (q == 1000 && s[i] != '0')) {
                return -1;
            }
            q += (s[i] - '0') * scale;
            scale /= 10;
        }
    }
    while (i < end && is_ows((unsigned char)s[i])) {
        i++;
    }
    return i == end ? q : -1;
}

apr_size_t qrt_accept_language_first(const char *h, char *out, apr_size_t outlen)
{
    apr_size_t n, i = 0, best_at = 0, best_len = 0;
    int best_q = 0, entries = 0, cut;

    if (out && outlen) {
        out[0] = '\0';
    }
    if (!h || !out || outlen < 2) {
        return 0;
    }
    n = strnlen(h, QRT_ACCEPT_LANGUAGE_SCAN + 1);
    cut = n > QRT_ACCEPT_LANGUAGE_SCAN;
    if (cut) {
        n = QRT_ACCEPT_LANGUAGE_SCAN;
    }
    while (i < n && entries < QRT_ACCEPT_LANGUAGE_ENTRIES) {
        apr_size_t end = i, tag, tlen;
        int q = 1000;

        while (end < n && h[end] != ',') {
            end++;
        }
        if (end == n && cut) {
            break;                  /* the bound cut this entry */
        }
        while (i < end && is_ows((unsigned char)h[i])) {
            i++;
        }
        tag = i;
        while (i < end && !is_ows((unsigned char)h[i]) && h[i] != ';') {
            i++;
        }
        tlen = i - tag;
        if (tlen) {
            entries++;
            while (i < end && is_ows((unsigned char)h[i])) {
                i++;
            }
            if (i < end) {
                q = h[i] == ';' ? accept_q(h, i + 1, end) : -1;
            }
            if (q > best_q && tlen < outlen && lang_tag_ok(h + tag, tlen)) {
                best_q = q;
                best_at = tag;
                best_len = tlen;
            }
        }
        i = end + 1;
    }
    memcpy(out, h + best_at, best_len);
    out[best_len] = '\0';
    return best_len;
}
