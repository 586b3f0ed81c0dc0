/* qrt_history: the changes a tracker's history row records. */
#include <string.h>
#include "qrt_date.h"
#include "qrt_history.h"
#include "qrt_json.h"

static json_t *history_str(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *history_time(int has, apr_int64_t t)
{
    char buf[QRT_DATE_LEN];

    if (!has) {
        return json_null();
    }
    qrt_date_format(buf, t, 0);
    return json_string(buf);
}

static json_t *history_tags(const apr_array_header_t *tags)
{
    json_t *a = json_array();
    int i;

    for (i = 0; tags && i < tags->nelts; i++) {
        json_array_append_new(a, json_string(APR_ARRAY_IDX(tags, i, const char *)));
    }
    return a;
}

/* The rules as JSON (the stored canonical text parsed); [] for none. */
static json_t *history_rules(apr_pool_t *p, const char *rules)
{
    const char *err = NULL;
    json_t *j = rules ? qrt_json_parse(p, rules, strlen(rules), &err) : NULL;

    return j ? json_incref(j) : json_array();
}

/* Adds "field": [old, new] to o when they differ (JSON equality); takes both. */
static void history_put(json_t *o, const char *field, json_t *old, json_t *new)
{
    if (json_equal(old, new)) {
        json_decref(old);
        json_decref(new);
        return;
    }
    json_object_set_new(o, field, json_pack("[oo]", old, new));
}

const char *qrt_history_changes(apr_pool_t *p, const qrt_tracker_t *before,
                                const qrt_tracker_t *after, int password_sent)
{
    json_t *o = qrt_json_own(p, json_object());
    const qrt_route_src_t *b = before ? &before->route : NULL, *a = &after->route;
    int had = before && before->password_protected;

    history_put(o, "redirect_url", before ? history_str(before->redirect_url) : json_null(),
                history_str(after->redirect_url));
    history_put(o, "name", before ? history_str(before->name) : json_null(),
                history_str(after->name));
    history_put(o, "tags", before ? history_tags(before->tags) : json_null(),
                after->tags && after->tags->nelts ? history_tags(after->tags)
                : before ? json_array() : json_null());
    history_put(o, "rules", b ? history_rules(p, b->rules) : json_null(),
                a->rules && strcmp(a->rules, "[]") ? history_rules(p, a->rules)
                : b ? json_array() : json_null());
    history_put(o, "valid_from", b ? history_time(b->has_from, b->valid_from) : json_null(),
                history_time(a->has_from, a->valid_from));
    history_put(o, "valid_until", b ? history_time(b->has_until, b->valid_until)
                                    : json_null(),
                history_time(a->has_until, a->valid_until));
    history_put(o, "max_scans", b && b->max_scans > 0 ? json_integer(b->max_scans)
                                                      : json_null(),
                a->max_scans > 0 ? json_integer(a->max_scans) : json_null());
    history_put(o, "expired_url", b ? history_str(b->expired_url) : json_null(),
                history_str(a->expired_url));
    if (password_sent && (had || after->password_protected)) {
        json_object_set_new(o, "password", json_pack("[oo]",
                            had ? json_string("***") : json_null(),
                            after->password_protected ? json_string("***") : json_null()));
    }
    return qrt_json_dump(p, o, NULL);
}
