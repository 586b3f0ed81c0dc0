/* qrt_route: a tracker's routing compiled into one relocatable block. */
#include <string.h>
#include <apr_strings.h>
#include <jansson.h>
#include "qrt_json.h"
#include "qrt_route.h"

#define ROUTE_HAS_FROM  1u
#define ROUTE_HAS_UNTIL 2u
#define ROUTE_NONE      0xFFFFFFFFu     /* an absent string's offset */

/* Offsets count from the start of the block; the rules block is 8-byte aligned. */
struct qrt_route {
    apr_int64_t id, valid_from, valid_until, max_scans;
    apr_uint32_t flags, size;
    apr_uint32_t url, expired_url, password_hash, rules, rules_size;
    apr_uint32_t pad;
};

int qrt_route_src_any(const qrt_route_src_t *s)
{
    return s->rules || s->has_from || s->has_until || s->max_scans > 0 || s->expired_url
        || s->password_hash;
}

static apr_size_t route_align(apr_size_t n)
{
    return (n + 7) & ~(apr_size_t)7;
}

static apr_uint32_t route_put(char *base, apr_size_t *at, const char *s)
{
    apr_uint32_t off;
    apr_size_t n;

    if (!s) {
        return ROUTE_NONE;
    }
    n = strlen(s) + 1;
    off = (apr_uint32_t)*at;
    memcpy(base + *at, s, n);
    *at += n;
    return off;
}

const char *qrt_route_build(apr_pool_t *p, apr_int64_t id, const char *url,
                            const qrt_route_src_t *src, const qrt_route_t **out,
                            apr_size_t *size)
{
    const qrt_rules_t *rules = NULL;
    apr_size_t rsize = 0, n, at;
    struct qrt_route *r;
    char *base;

    *out = NULL;
    if (src && src->rules) {
        const char *err = qrt_rules_parse_text(p, src->rules, &rules, &rsize);

        if (err) {
            return err;
        }
    }
    n = sizeof(*r) + strlen(url) + 1;
    if (src) {
        n += (src->expired_url ? strlen(src->expired_url) + 1 : 0)
            + (src->password_hash ? strlen(src->password_hash) + 1 : 0);
    }
    n = route_align(n) + (rules ? rsize : 0);
    base = apr_pcalloc(p, n);
    r = (struct qrt_route *)base;
    r->id = id;
    r->size = (apr_uint32_t)n;
    at = sizeof(*r);
    r->url = route_put(base, &at, url);
    r->expired_url = route_put(base, &at, src ? src->expired_url : NULL);
    r->password_hash = route_put(base, &at, src ? src->password_hash : NULL);
    r->rules = ROUTE_NONE;
    if (rules) {
        at = route_align(at);
        memcpy(base + at, rules, rsize);
        r->rules = (apr_uint32_t)at;
        r->rules_size = (apr_uint32_t)rsize;
    }
    if (src) {
        r->flags = (src->has_from ? ROUTE_HAS_FROM : 0) | (src->has_until ? ROUTE_HAS_UNTIL : 0);
        r->valid_from = src->valid_from;
        r->valid_until = src->valid_until;
        r->max_scans = src->max_scans;
    }
    *out = r;
    *size = n;
    return NULL;
}

apr_int64_t qrt_route_id(const qrt_route_t *r)
{
    return r->id;
}

static const char *route_str(apr_pool_t *p, const qrt_route_t *r, apr_uint32_t off)
{
    return off == ROUTE_NONE ? NULL : apr_pstrdup(p, (const char *)r + off);
}

void qrt_route_decide(apr_pool_t *p, const qrt_route_t *r, const qrt_rule_facts_t *f,
                      qrt_route_decision_t *out)
{
    const char *base = (const char *)r;

    memset(out, 0, sizeof(*out));
    out->id = r->id;
    out->capped = r->max_scans > 0;
    out->expired_url = route_str(p, r, r->expired_url);
    out->password_hash = route_str(p, r, r->password_hash);
    if (((r->flags & ROUTE_HAS_FROM) && f->now < r->valid_from)
        || ((r->flags & ROUTE_HAS_UNTIL) && f->now > r->valid_until)) {
        out->verdict = QRT_ROUTE_EXPIRED;
        out->url = out->expired_url;
        return;
    }
    out->verdict = QRT_ROUTE_GO;
    if (r->rules != ROUTE_NONE) {
        const qrt_rules_t *rules = (const qrt_rules_t *)(base + r->rules);
        int i = qrt_rules_match(rules, f);

        if (i >= 0) {
            out->url = apr_pstrdup(p, qrt_rules_url(rules, i));
            return;
        }
    }
    out->url = route_str(p, r, r->url);
}

const char *qrt_route_src_encode(apr_pool_t *p, const qrt_route_src_t *s)
{
    json_t *j;

    if (!qrt_route_src_any(s)) {
        return NULL;
    }
    j = qrt_json_own(p, json_object());
    if (s->rules) {
        json_object_set_new(j, "rules", json_string(s->rules));
    }
    if (s->has_from) {
        json_object_set_new(j, "valid_from", json_integer(s->valid_from));
    }
    if (s->has_until) {
        json_object_set_new(j, "valid_until", json_integer(s->valid_until));
    }
    if (s->max_scans > 0) {
        json_object_set_new(j, "max_scans", json_integer(s->max_scans));
    }
    if (s->expired_url) {
        json_object_set_new(j, "expired_url", json_string(s->expired_url));
    }
    if (s->password_hash) {
        json_object_set_new(j, "password_hash", json_string(s->password_hash));
    }
    return qrt_json_dump(p, j, NULL);
}

static const char *route_json_str(apr_pool_t *p, json_t *j, const char *key, int *bad)
{
    json_t *v = json_object_get(j, key);

    if (!v) {
        return NULL;
    }
    if (!json_is_string(v)) {
        *bad = 1;
        return NULL;
    }
    return apr_pstrdup(p, json_string_value(v));
}

static apr_int64_t route_json_int(json_t *j, const char *key, int *has, int *bad)
{
    json_t *v = json_object_get(j, key);

    *has = v != NULL;
    if (v && !json_is_integer(v)) {
        *bad = 1;
        return 0;
    }
    return v ? (apr_int64_t)json_integer_value(v) : 0;
}

int qrt_route_src_decode(apr_pool_t *p, const char *text, qrt_route_src_t *s)
{
    const char *err = NULL;
    json_t *j;
    int bad = 0, has;

    memset(s, 0, sizeof(*s));
    if (!text) {
        return 0;
    }
    j = qrt_json_parse(p, text, strlen(text), &err);
    if (!j || !json_is_object(j)) {
        return -1;
    }
    s->rules = route_json_str(p, j, "rules", &bad);
    s->valid_from = route_json_int(j, "valid_from", &s->has_from, &bad);
    s->valid_until = route_json_int(j, "valid_until", &s->has_until, &bad);
    s->max_scans = route_json_int(j, "max_scans", &has, &bad);
    s->expired_url = route_json_str(p, j, "expired_url", &bad);
    s->password_hash = route_json_str(p, j, "password_hash", &bad);
    return bad ? -1 : 0;
}
