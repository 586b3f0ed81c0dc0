/* mod_qrtrack_tracker: trackers (spec endpoints 1-4, and PATCH, DELETE and the
 * image of a tracker from CONTRACT section 4). */
#include <string.h>
#include <stdlib.h>
#include <apr_strings.h>
#include <apr_base64.h>
#include <apr_lib.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_config.h"
#include "mod_qrtrack_http.h"
#include "mod_qrtrack_idem.h"
#include "mod_qrtrack_params.h"
#include "mod_qrtrack_scan.h"
#include "mod_qrtrack_tracker.h"
#include "mod_qrtrack_style.h"
#include "qrt_code.h"
#include "qrt_store_bulk.h"
#include "qrt_json.h"
#include "mod_qrtrack_image.h"
#include "qrt_valid.h"
#include "qrt_date.h"
#include "qrt_password.h"
#include "qrt_rules.h"

APLOG_USE_MODULE(qrtrack);

/* max_scans: at most this many. */
#define TRACKER_MAX_SCANS_MAX 1000000000

#define TRACKER_CODE_LEN 8
#define TRACKER_NAME_MAX 255

static json_t *tracker_time_json(int has, apr_int64_t t)
{
    char buf[QRT_DATE_LEN];

    if (!has) {
        return json_null();
    }
    qrt_date_format(buf, t, 0);
    return json_string(buf);
}

/* The routing fields of a tracker: null or [] when unset. */
static void tracker_route_json(qrt_req_t *q, json_t *j, const qrt_route_src_t *r)
{
    json_t *rules = NULL;

    if (r->rules) {
        const char *err = NULL;

        rules = qrt_json_parse(q->r->pool, r->rules, strlen(r->rules), &err);
        if (rules) {
            json_incref(rules);
        }
    }
    json_object_set_new(j, "rules", rules ? rules : json_array());
    json_object_set_new(j, "valid_from", tracker_time_json(r->has_from, r->valid_from));
    json_object_set_new(j, "valid_until", tracker_time_json(r->has_until, r->valid_until));
    json_object_set_new(j, "max_scans", r->max_scans > 0 ? json_integer(r->max_scans)
                                                         : json_null());
    json_object_set_new(j, "expired_url", qrt_json_str(r->expired_url));
}

json_t *qrt_tracker_json(qrt_req_t *q, const qrt_tracker_t *t)
{
    json_t *j = json_object(), *tags = json_array();
    const char *base = qrt_public_base(q);
    int i;

    for (i = 0; t->tags && i < t->tags->nelts; i++) {
        json_array_append_new(tags, json_string(APR_ARRAY_IDX(t->tags, i, const char *)));
    }
    json_object_set_new(j, "tracker_id", json_integer(t->id));
    json_object_set_new(j, "code", json_string(t->code));
    json_object_set_new(j, "name", json_string(t->name));
    json_object_set_new(j, "type", json_string(t->type));
    json_object_set_new(j, "redirect_url", json_string(t->redirect_url));
    json_object_set_new(j, "tags", tags);
    json_object_set_new(j, "scan_url", json_string(apr_pstrcat(q->r->pool, base,
                        qrt_scan_prefix(q->r->server), "/", t->code, NULL)));
    json_object_set_new(j, "short_url", json_string(apr_pstrcat(q->r->pool, base,
                        qrt_click_prefix(q->r->server), "/", t->code, NULL)));
    json_object_set_new(j, "created_at", qrt_json_time(t->created_at));
    json_object_set_new(j, "updated_at", qrt_json_time(t->updated_at));
    json_object_set_new(j, "totalScans", json_integer(t->total_scans));
    json_object_set_new(j, "totalClicks", json_integer(t->total_clicks));
    tracker_route_json(q, j, &t->route);
    json_object_set_new(j, "password_protected", json_boolean(t->password_protected));
    return j;
}

static qrt_err_t *tracker_load(qrt_req_t *q, const char *seg, qrt_tracker_t *t, int tags)
{
    apr_int64_t id;
    apr_status_t rv;

    memset(t, 0, sizeof(*t));
    if (!seg || qrt_parse_int(seg, 1, APR_INT64_MAX, &id) != 0) {
        return qrt_error(q, HTTP_NOT_FOUND, "Tracker not found.");
    }
    rv = tags ? qrt_store_tracker_get(&q->db, q->r->pool, id, t)
              : qrt_store_tracker_head(&q->db, q->r->pool, id, t);
    if (rv == APR_NOTFOUND) {
        return qrt_error(q, HTTP_NOT_FOUND, "Tracker not found.");
    }
    if (rv != APR_SUCCESS) {
        return qrt_error_store(q, "loading a tracker");
    }
    if (t->account_id != q->auth.account_id) {
        return qrt_error(q, HTTP_FORBIDDEN, "This tracker is not accessible to this account.");
    }
    return NULL;
}

qrt_err_t *qrt_tracker_load(qrt_req_t *q, const char *seg, qrt_tracker_t *t)
{
    return tracker_load(q, seg, t, 1);
}

qrt_err_t *qrt_tracker_load_head(qrt_req_t *q, const char *seg, qrt_tracker_t *t)
{
    return tracker_load(q, seg, t, 0);
}

/* ---- reading a tracker from the body ------------------------------------------ */

typedef struct {
    qrt_req_t *q;
    qrt_err_t *err;
} tracker_check;

static void tracker_invalid(tracker_check *c, const char *field, const char *msg)
{
    qrt_error_collect(c->q, &c->err, HTTP_UNPROCESSABLE_ENTITY, field, msg);
}

/* A string field: *present says whether it was sent; wrong types are errors. */
static const char *tracker_str(tracker_check *c, const char *field, int *present)
{
    qrt_req_t *q = c->q;

    *present = 0;
    if (q->json) {
        json_t *v = json_object_get(q->json, field);

        if (!v || json_is_null(v)) {
            return NULL;
        }
        *present = 1;
        if (!json_is_string(v)) {
            tracker_invalid(c, field, apr_psprintf(q->r->pool,
                            "The %s field must be a string.", field));
            return NULL;
        }
        return json_string_value(v);
    }
    if (q->form && apr_table_get(q->form, field)) {
        *present = 1;
        return apr_table_get(q->form, field);
    }
    return NULL;
}

static int tracker_tag_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Tag lists longer than this are refused before any tag is looked at. */
#define TRACKER_TAG_LIST_MAX 1000
/* Messages about single tags in one answer. */
#define TRACKER_TAG_ERRORS_MAX 5

typedef struct {
    apr_array_header_t *tags;
    int too_many;
    int seen;                   /* a tags field, in any of the list's forms */
} tag_form_ctx;

static int tracker_form_tag(void *data, const char *key, const char *value)
{
    tag_form_ctx *t = data;

    if (!qrt_params_list_key(key, "tags")) {
        return 1;
    }
    t->seen = 1;
    if (t->tags->nelts >= TRACKER_TAG_LIST_MAX) {
        t->too_many = 1;
        return 0;
    }
    APR_ARRAY_PUSH(t->tags, const char *) = value;
    return 1;
}

/* The tags field: a JSON array of strings, or tags[] form fields. NULL if absent.
 * Work is bounded: a list longer than TRACKER_TAG_LIST_MAX is refused unread; the
 * rest is checked, sorted and de-duplicated (n log n), then held to QRT_TAGS_MAX. */
static apr_array_header_t *tracker_tags(tracker_check *c)
{
    qrt_req_t *q = c->q;
    apr_array_header_t *tags = apr_array_make(q->r->pool, 4, sizeof(const char *));
    const char *too_many = apr_psprintf(q->r->pool, "A tracker may have at most %d tags.",
                                        QRT_TAGS_MAX);
    int i, n, bad = 0;

    if (q->json) {
        json_t *v = json_object_get(q->json, "tags"), *x;
        size_t k;

        if (!v || json_is_null(v)) {
            return NULL;
        }
        if (!json_is_array(v)) {
            tracker_invalid(c, "tags", "The tags field must be an array of strings.");
            return NULL;
        }
        if (json_array_size(v) > TRACKER_TAG_LIST_MAX) {
            tracker_invalid(c, "tags", too_many);
            return NULL;
        }
        json_array_foreach(v, k, x) {
            if (!json_is_string(x)) {
                tracker_invalid(c, "tags", "The tags field must be an array of strings.");
                return NULL;
            }
            APR_ARRAY_PUSH(tags, const char *) = json_string_value(x);
        }
    }
    else if (q->form) {
        tag_form_ctx t = { tags, 0, 0 };

        apr_table_do(tracker_form_tag, &t, q->form, NULL);
        if (t.too_many) {
            tracker_invalid(c, "tags", too_many);
            return NULL;
        }
        if (!t.seen) {
            return NULL;
        }
    }
    else {
        return NULL;
    }
    for (i = 0; i < tags->nelts; i++) {
        const char *tag = APR_ARRAY_IDX(tags, i, const char *);
        const char *why = qrt_valid_tag(tag);

        if (why && bad++ < TRACKER_TAG_ERRORS_MAX) {
            tracker_invalid(c, "tags", apr_psprintf(q->r->pool, "Tag '%.64s' %s.",
                                                    qrt_valid_utf8_clean(q->r->pool, tag, strlen(tag),
                                                                         QRT_TAG_MAX),
                                                    why));
        }
    }
    if (bad) {
        return NULL;
    }
    qsort(tags->elts, tags->nelts, sizeof(const char *), tracker_tag_cmp);
    for (i = 0, n = 0; i < tags->nelts; i++) {
        const char *tag = APR_ARRAY_IDX(tags, i, const char *);

        if (n == 0 || strcmp(APR_ARRAY_IDX(tags, n - 1, const char *), tag) != 0) {
            APR_ARRAY_IDX(tags, n++, const char *) = tag;
        }
    }
    tags->nelts = n;
    if (tags->nelts > QRT_TAGS_MAX) {
        tracker_invalid(c, "tags", too_many);
    }
    return tags;
}

/* A field of a JSON body as it was sent (JSON null included), NULL when absent; a form
 * field as a JSON string. A form field that is not UTF-8 text is an error (read as
 * absent, a password sent so left the tracker open). */
static json_t *tracker_field(tracker_check *c, const char *field)
{
    qrt_req_t *q = c->q;
    const char *v;
    json_t *j;

    if (q->json) {
        return json_object_get(q->json, field);
    }
    if (!q->form || !(v = apr_table_get(q->form, field))) {
        return NULL;
    }
    if (!(j = json_string(v))) {
        tracker_invalid(c, field, apr_psprintf(q->r->pool, "The %s field must be UTF-8 "
                                               "text.", field));
        return NULL;
    }
    return qrt_json_own(q->r->pool, j);
}

/* A time field: 1 and *t when a time, 0 for null or absent (*present says which). A
 * time past 1970..9999 in UTC (taken in its offset, as rules' times are) is kept as that
 * end, so that the time shown in UTC is the one kept, and may be sent back. */
static int tracker_time(tracker_check *c, const char *field, apr_int64_t *t, int *present)
{
    json_t *v = tracker_field(c, field);

    *present = v != NULL;
    if (!v || json_is_null(v)) {
        return 0;
    }
    if (!json_is_string(v) || qrt_date_parse(json_string_value(v), t, NULL) != 0) {
        tracker_invalid(c, field, apr_psprintf(c->q->r->pool, "The %s must be a time like "
                        "2026-05-01T00:00:00+0200.", field));
        return 0;
    }
    *t = qrt_date_clamp(*t);
    return 1;
}

/* The routing fields (CONTRACT section 7): rules, valid_from, valid_until, max_scans,
 * expired_url and password. Only the fields sent change; null clears one. */
static void tracker_route_from_body(tracker_check *c, qrt_tracker_t *t)
{
    qrt_req_t *q = c->q;
    apr_pool_t *p = q->r->pool;
    qrt_route_src_t *r = &t->route;
    json_t *v;
    apr_int64_t when;
    int present, has;

    v = tracker_field(c, "rules");
    if (v) {
        const qrt_rules_t *rules = NULL;
        const char *canon = NULL, *field = "rules", *why;
        apr_size_t size = 0;

        if (!q->json) {
            tracker_invalid(c, "rules", "The rules can only be sent in a JSON body.");
        }
        else if ((why = qrt_rules_parse(p, v, &rules, &size, &canon, &field)) != NULL) {
            tracker_invalid(c, field, why);
        }
        else {
            r->rules = canon;
        }
        t->route_set = 1;
        t->sent |= QRT_TRACKER_SENT_RULES;
    }
    has = tracker_time(c, "valid_from", &when, &present);
    if (present) {
        r->has_from = has;
        r->valid_from = has ? when : 0;
        t->route_set = 1;
        t->sent |= QRT_TRACKER_SENT_VALID_FROM;
    }
    has = tracker_time(c, "valid_until", &when, &present);
    if (present) {
        r->has_until = has;
        r->valid_until = has ? when : 0;
        t->route_set = 1;
        t->sent |= QRT_TRACKER_SENT_VALID_UNTIL;
    }
    if (r->has_from && r->has_until && r->valid_from > r->valid_until) {
        tracker_invalid(c, "valid_until", "The valid_until must not be before valid_from.");
    }
    v = tracker_field(c, "max_scans");
    if (v) {
        apr_int64_t n = 0;

        if (json_is_string(v) && !q->json) {
            if (qrt_parse_int(json_string_value(v), 1, TRACKER_MAX_SCANS_MAX, &n) != 0) {
                n = -1;
            }
        }
        else if (json_is_integer(v)) {
            n = json_integer_value(v);
            if (n < 1 || n > TRACKER_MAX_SCANS_MAX) {
                n = -1;
            }
        }
        else if (!json_is_null(v)) {
            n = -1;
        }
        if (n < 0) {
            tracker_invalid(c, "max_scans", apr_psprintf(p, "The max_scans must be an "
                            "integer from 1 to %d, or null.", TRACKER_MAX_SCANS_MAX));
        }
        else {
            r->max_scans = n;
        }
        t->route_set = 1;
        t->sent |= QRT_TRACKER_SENT_MAX_SCANS;
    }
    v = tracker_field(c, "expired_url");
    if (v) {
        const char *why = NULL;

        if (json_is_null(v)) {
            r->expired_url = NULL;
        }
        else if (!json_is_string(v)) {
            tracker_invalid(c, "expired_url", "The expired_url field must be a string.");
        }
        else if ((why = qrt_valid_redirect_url(json_string_value(v))) != NULL) {
            tracker_invalid(c, "expired_url", apr_pstrcat(p, "The expired_url ", why, ".",
                                                          NULL));
        }
        else {
            r->expired_url = json_string_value(v);
        }
        t->route_set = 1;
        t->sent |= QRT_TRACKER_SENT_EXPIRED_URL;
    }
    v = tracker_field(c, "password");
    t->password_keep = 1;
    if (v) {
        const char *why;

        t->route_set = 1;
        t->password_keep = 0;
        t->sent |= QRT_TRACKER_SENT_PASSWORD;
        r->password_hash = NULL;
        if (json_is_null(v)) {
            return;
        }
        if (!json_is_string(v)) {
            tracker_invalid(c, "password", "The password field must be a string.");
            return;
        }
        why = qrt_password_check(json_string_value(v), json_string_length(v));
        if (why) {
            tracker_invalid(c, "password", why);
            return;
        }
        if (!c->err) {
            /* Hashed only for a request that is otherwise valid: the hash is slow. */
            r->password_hash = qrt_password_hash(p, json_string_value(v),
                                                 json_string_length(v));
            if (!r->password_hash) {
                tracker_invalid(c, "password", "The password could not be stored.");
            }
        }
    }
}

/* A code the client chose: on create, [A-Za-z0-9_-]{3,64}; a PATCH may send the
 * tracker's own code back, never another (printed codes must not move). */
static void tracker_code_from_body(tracker_check *c, qrt_tracker_t *t, const char *code,
                                   int creating)
{
    if (!creating) {
        if (!t->code || strcmp(t->code, code) != 0) {
            tracker_invalid(c, "code", "The code of a tracker cannot change: printed "
                            "codes must keep working.");
        }
        return;
    }
    if (!qrt_code_custom_valid(code)) {
        tracker_invalid(c, "code", apr_psprintf(c->q->r->pool, "The code must be %d to %d "
                        "characters of A-Z, a-z, 0-9, _ and -.", QRT_CODE_CUSTOM_MIN,
                        QRT_CODE_CUSTOM_MAX));
        return;
    }
    t->code = code;
}

/* The fields a tracker's body may have: those it sets, and those only read (a tracker
 * as GET answers it may be sent back: they are ignored). */
static const char *const tracker_fields[] = {
    "code", "redirect_url", "name", "type", "tags", "rules", "valid_from", "valid_until",
    "max_scans", "expired_url", "password",
    "tracker_id", "scan_url", "short_url", "created_at", "updated_at", "totalScans",
    "totalClicks", "password_protected", NULL
};

/* Fills t from the body. creating: redirect_url is required and defaults apply;
 * otherwise only the fields sent change. t->sent gets the fields sent. */
static qrt_err_t *tracker_from_body(qrt_req_t *q, qrt_tracker_t *t, int creating)
{
    tracker_check c = { q, NULL };
    const char *url, *name, *type, *code, *why;
    apr_array_header_t *tags;
    int has_url, has_name, has_type, has_code;

    qrt_body_fields_known(q, &c.err, HTTP_UNPROCESSABLE_ENTITY, tracker_fields, "a tracker");
    url = tracker_str(&c, "redirect_url", &has_url);
    name = tracker_str(&c, "name", &has_name);
    type = tracker_str(&c, "type", &has_type);
    code = tracker_str(&c, "code", &has_code);
    tags = tracker_tags(&c);
    if (!creating && q->json) {
        /* null removes a field that can go (the smart ones); these cannot, and a PATCH
         * that answered 200 and kept them would say it did what it did not */
        static const char *const kept[] = { "redirect_url", "name", "type", "code", "tags",
                                            NULL };
        int i;

        for (i = 0; kept[i]; i++) {
            if (json_is_null(json_object_get(q->json, kept[i]))) {
                tracker_invalid(&c, kept[i], apr_psprintf(q->r->pool, "The %s field cannot "
                                "be removed (null): send a value, %sor leave it out.",
                                kept[i], strcmp(kept[i], "tags") ? "" : "[] for none, "));
            }
        }
    }

    if (has_code && code) {
        tracker_code_from_body(&c, t, code, creating);
    }

    if (has_url && url) {
        why = qrt_valid_redirect_url(url);
        if (why) {
            tracker_invalid(&c, "redirect_url", apr_pstrcat(q->r->pool,
                            "The redirect_url ", why, ".", NULL));
        }
        else {
            t->redirect_url = url;
            t->sent |= QRT_TRACKER_SENT_REDIRECT_URL;
        }
    }
    else if (creating && !c.err) {
        tracker_invalid(&c, "redirect_url", "The redirect_url field is required.");
    }
    if (has_name && name) {
        apr_size_t n = strlen(name);

        why = qrt_valid_text(name, n, 0);
        if (n == 0 || n > TRACKER_NAME_MAX || why || memchr(name, '\t', n)) {
            tracker_invalid(&c, "name", apr_psprintf(q->r->pool, "The name must be 1 to "
                            "%d bytes of valid UTF-8 text without control characters.",
                            TRACKER_NAME_MAX));
        }
        else if (qrt_valid_blank(name, n)) {
            /* (a list shows nothing to click or tell apart) */
            tracker_invalid(&c, "name", "The name may not be only white space.");
        }
        else {
            t->name = name;
            t->sent |= QRT_TRACKER_SENT_NAME;
        }
    }
    if (has_type && type) {
        if (strcmp(type, "website") != 0) {
            tracker_invalid(&c, "type", "The type must be one of: website.");
        }
        else {
            t->type = type;
        }
    }
    if (tags) {
        t->tags = tags;
        t->sent |= QRT_TRACKER_SENT_TAGS;
    }
    tracker_route_from_body(&c, t);
    if (c.err) {
        return c.err;
    }
    if (creating) {
        if (!t->type) {
            t->type = "website";
        }
        if (!t->name) {
            t->name = qrt_url_host(q->r->pool, t->redirect_url);
        }
        if (!t->tags) {
            t->tags = apr_array_make(q->r->pool, 1, sizeof(const char *));
        }
    }
    return NULL;
}

/* 409 for a code already taken. */
qrt_err_t *qrt_tracker_code_taken_error(qrt_req_t *q, const char *code)
{
    return qrt_error(q, HTTP_CONFLICT, apr_psprintf(q->r->pool, "The code '%s' is already "
                                                    "taken.", code));
}

/* A code the client chose: taken (before, or by a create that raced with this
 * one and won the UNIQUE constraint) -> 409. */
static qrt_err_t *tracker_insert_custom(qrt_req_t *q, qrt_tracker_t *t)
{
    apr_status_t rv = qrt_store_tracker_add(&q->db, q->r->pool, t);
    int taken = 0;

    if (rv == APR_EEXIST) {
        return qrt_tracker_code_taken_error(q, t->code);
    }
    if (rv != APR_SUCCESS && (qrt_store_unique_violation(&q->db, SQL_tracker_add)
                              || (qrt_store_code_taken(&q->db, q->r->pool, t->code, &taken)
                                  == APR_SUCCESS && taken))) {
        return qrt_tracker_code_taken_error(q, t->code);
    }
    if (rv != APR_SUCCESS) {
        return qrt_error_store(q, "creating a tracker");
    }
    return NULL;
}

/* The data of a webhook event about a tracker: the tracker as this request shows it. */
static json_t *tracker_event_json(void *ctx, const void *t)
{
    return qrt_tracker_json(ctx, t);
}

void qrt_tracker_by_request(qrt_req_t *q, qrt_tracker_t *t)
{
    t->event_json = tracker_event_json;
    t->event_ctx = q;
    t->changed_by = q->auth.token_name;
}

static qrt_err_t *tracker_insert(qrt_req_t *q, qrt_tracker_t *t)
{
    apr_status_t rv = APR_EEXIST;
    int tries;

    t->account_id = q->auth.account_id;
    qrt_tracker_by_request(q, t);
    if (t->code) {
        return tracker_insert_custom(q, t);
    }
    for (tries = 0; tries < 8 && rv == APR_EEXIST; tries++) {
        char *code = apr_palloc(q->r->pool, TRACKER_CODE_LEN + 1);

        if (qrt_code_generate(code, TRACKER_CODE_LEN) != APR_SUCCESS) {
            return qrt_error(q, HTTP_INTERNAL_SERVER_ERROR, "Server Error");
        }
        t->code = code;
        rv = qrt_store_tracker_add(&q->db, q->r->pool, t);
    }
    if (rv != APR_SUCCESS) {
        return qrt_error_store(q, "creating a tracker");
    }
    return NULL;
}

/* ---- QR images ------------------------------------------------------------------ */

static const char *tracker_scan_url(qrt_req_t *q, const qrt_tracker_t *t)
{
    return apr_pstrcat(q->r->pool, qrt_public_base(q), qrt_scan_prefix(q->r->server), "/",
                       t->code, NULL);
}

/* ---- creates under an Idempotency-Key (mod_qrtrack_idem.c) ----------------------- */

/* The JSON answer j, as qrt_respond_json would write it. */
static void tracker_answer_of(qrt_req_t *q, json_t *j, qrt_idem_t *a)
{
    apr_size_t len;

    qrt_json_own(q->r->pool, j);
    a->status = HTTP_OK;
    a->content_type = QRT_JSON_TYPE;
    a->body = qrt_json_dump(q->r->pool, j, &len);
}

static qrt_err_t *tracker_answer_json(qrt_req_t *q, void *ctx, qrt_tracker_t **t, int n,
                                      qrt_idem_t *a)
{
    (void)ctx;
    (void)n;
    tracker_answer_of(q, qrt_tracker_json(q, t[0]), a);
    return NULL;
}

/* A single create answers 409 for a taken code. */
static int tracker_taken_stop(qrt_req_t *q, void *ctx, qrt_tracker_t **t, int i)
{
    (void)q;
    (void)ctx;
    (void)t;
    (void)i;
    return 0;
}

/* POST /tracker/qrcode's answer: the image itself (Accept names an image type) or the
 * JSON with it in base64. */
static qrt_err_t *tracker_answer_qrcode(qrt_req_t *q, void *ctx, qrt_tracker_t **t, int n,
                                        qrt_idem_t *a)
{
    const qrt_render_opts_t *o = ctx;
    const char *scan = tracker_scan_url(q, t[0]), *img;
    apr_size_t len;
    json_t *j, *qr;
    qrt_err_t *e;
    char *b64;

    (void)n;
    if ((e = qrt_image_buf(q, scan, o, &img, &len)) != NULL) {
        return e;
    }
    b64 = apr_palloc(q->r->pool, apr_base64_encode_len((int)len));
    apr_base64_encode(b64, img, (int)len);
    if (qrt_image_accepted(q)) {
        a->status = HTTP_OK;
        a->content_type = qrt_render_mime(o->format);
        a->body = b64;
        a->tracker_id = t[0]->id;
        return NULL;
    }
    qr = json_object();
    json_object_set_new(qr, "content_type", json_string(qrt_render_mime(o->format)));
    json_object_set_new(qr, "encoding", json_string("base64"));
    json_object_set_new(qr, "data", json_string(b64));
    j = json_object();
    json_object_set_new(j, "tracker", qrt_tracker_json(q, t[0]));
    json_object_set_new(j, "qr", qr);
    tracker_answer_of(q, j, a);
    return NULL;
}

qrt_err_t *qrt_tracker_read(qrt_req_t *q, json_t *obj, qrt_tracker_t *t)
{
    json_t *json = q->json;
    apr_table_t *form = q->form;
    qrt_err_t *e;

    q->json = obj;
    q->form = NULL;
    e = tracker_from_body(q, t, 1);
    q->json = json;
    q->form = form;
    return e;
}

/* ---- endpoints -------------------------------------------------------------------- */

/* 1: POST /tracker/qrcode: JSON with the image in base64, or the image itself when
 * Accept names an image type. */
qrt_err_t *qrt_tracker_qrcode(qrt_req_t *q)
{
    qrt_tracker_t t;
    qrt_render_opts_t o;
    qrt_err_t *e;
    const char *img, *scan;
    apr_size_t len;
    json_t *j, *qr;
    char *b64;
    qrt_idem_req_t idem;
    int replayed;

    memset(&t, 0, sizeof(t));
    if ((e = qrt_idem_start(q, &idem, &replayed)) != NULL || replayed) {
        return e;
    }
    e = qrt_image_opts(q, HTTP_UNPROCESSABLE_ENTITY, qrt_image_from_query, &o);
    if (e) {
        return e;
    }
    if ((e = tracker_from_body(q, &t, 1)) != NULL) {
        return e;
    }
    if (idem.key) {
        qrt_tracker_t *list[1] = { &t };

        qrt_tracker_by_request(q, &t);
        return qrt_create_trackers(q, &idem, list, 1, tracker_answer_qrcode,
                                   tracker_taken_stop, &o);
    }
    if ((e = tracker_insert(q, &t)) != NULL) {
        return e;
    }
    scan = tracker_scan_url(q, &t);
    if (qrt_image_accepted(q)) {
        apr_table_setn(q->r->headers_out, "X-Tracker-Id", apr_off_t_toa(q->r->pool, t.id));
        return qrt_respond_image(q, scan, &o, HTTP_INTERNAL_SERVER_ERROR);
    }
    if ((e = qrt_image_buf(q, scan, &o, &img, &len)) != NULL) {
        return e;
    }
    b64 = apr_palloc(q->r->pool, apr_base64_encode_len((int)len));
    apr_base64_encode(b64, img, (int)len);
    qr = json_object();
    json_object_set_new(qr, "content_type", json_string(qrt_render_mime(o.format)));
    json_object_set_new(qr, "encoding", json_string("base64"));
    json_object_set_new(qr, "data", json_string(b64));
    j = json_object();
    json_object_set_new(j, "tracker", qrt_tracker_json(q, &t));
    json_object_set_new(j, "qr", qr);
    return qrt_respond_json(q, HTTP_OK, j);
}

/* 2: GET /tracker */
qrt_err_t *qrt_tracker_list(qrt_req_t *q)
{
    apr_array_header_t *list;
    apr_int64_t page, rows, total;
    json_t *data, *j;
    qrt_err_t *e;
    int i;

    if ((e = qrt_params_paging(q, &page, &rows)) != NULL) {
        return e;
    }
    if (qrt_store_tracker_list(&q->db, q->r->pool, q->auth.account_id,
                               (page - 1) * rows, rows, &list, &total) != APR_SUCCESS) {
        return qrt_error_store(q, "listing trackers");
    }
    data = json_array();
    for (i = 0; i < list->nelts; i++) {
        json_array_append_new(data, qrt_tracker_json(q, &APR_ARRAY_IDX(list, i,
                                                                       qrt_tracker_t)));
    }
    j = json_object();
    json_object_set_new(j, "data", data);
    json_object_set_new(j, "meta", qrt_paging_meta(page, rows, total));
    return qrt_respond_json(q, HTTP_OK, j);
}

/* 3: POST /tracker */
qrt_err_t *qrt_tracker_create(qrt_req_t *q)
{
    qrt_tracker_t t;
    qrt_err_t *e;
    qrt_idem_req_t idem;
    int replayed;

    memset(&t, 0, sizeof(t));
    if ((e = qrt_idem_start(q, &idem, &replayed)) != NULL || replayed) {
        return e;
    }
    if ((e = tracker_from_body(q, &t, 1)) != NULL) {
        return e;
    }
    if (idem.key) {
        qrt_tracker_t *list[1] = { &t };

        qrt_tracker_by_request(q, &t);
        return qrt_create_trackers(q, &idem, list, 1, tracker_answer_json,
                                   tracker_taken_stop, NULL);
    }
    if ((e = tracker_insert(q, &t)) != NULL) {
        return e;
    }
    return qrt_respond_json(q, HTTP_OK, qrt_tracker_json(q, &t));
}

/* 4: GET /tracker/show/<id> */
qrt_err_t *qrt_tracker_show(qrt_req_t *q)
{
    qrt_tracker_t t;
    qrt_err_t *e = qrt_tracker_load(q, q->seg[0], &t);

    return e ? e : qrt_respond_json(q, HTTP_OK, qrt_tracker_json(q, &t));
}

/* PATCH /tracker/<id>: the printed code keeps working and goes to the new place. The
 * body is checked against the tracker as read here (404, 403, 422 before any
 * transaction, the password hashed outside it); the fields it sent are then laid onto
 * the tracker as the store's transaction reads it under its lock
 * (qrt_store_tracker_patch), so that PATCHes at once keep each other's changes. */
qrt_err_t *qrt_tracker_update(qrt_req_t *q)
{
    qrt_tracker_t t;
    qrt_err_t *e = qrt_tracker_load_head(q, q->seg[0], &t);
    apr_status_t rv;

    if (e) {
        return e;
    }
    if ((e = tracker_from_body(q, &t, 0)) != NULL) {
        return e;
    }
    qrt_tracker_by_request(q, &t);
    rv = qrt_store_tracker_patch(&q->db, q->r->pool, &t);
    qrt_scan_invalidate();
    if (rv == APR_NOTFOUND) {
        return qrt_error(q, HTTP_NOT_FOUND, "Tracker not found.");
    }
    if (rv == APR_EINVAL) {
        /* (valid_from or valid_until, changed by another PATCH meanwhile) */
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "valid_until",
                               "The valid_until must not be before valid_from.");
    }
    if (rv != APR_SUCCESS) {
        return qrt_error_store(q, "updating a tracker");
    }
    return qrt_respond_json(q, HTTP_OK, qrt_tracker_json(q, &t));
}

/* DELETE /tracker/<id>: 204; the code stops redirecting, visits stay. */
qrt_err_t *qrt_tracker_delete(qrt_req_t *q)
{
    qrt_tracker_t t;
    qrt_err_t *e = qrt_tracker_load(q, q->seg[0], &t);
    apr_status_t rv;

    if (e) {
        return e;
    }
    qrt_tracker_by_request(q, &t);
    rv = qrt_store_tracker_delete_shown(&q->db, q->r->pool, &t);
    qrt_scan_invalidate();
    if (rv == APR_NOTFOUND) {
        return qrt_error(q, HTTP_NOT_FOUND, "Tracker not found.");
    }
    if (rv != APR_SUCCESS) {
        return qrt_error_store(q, "deleting a tracker");
    }
    q->r->status = HTTP_NO_CONTENT;
    return NULL;
}

/* GET /tracker/<id>/qrcode?format=&size=&size_mm=&margin=&ecc=&fg=&bg= */
qrt_err_t *qrt_tracker_image(qrt_req_t *q)
{
    qrt_tracker_t t;
    qrt_render_opts_t o;
    qrt_err_t *e = qrt_tracker_load(q, q->seg[0], &t);

    if (e) {
        return e;
    }
    e = qrt_image_opts(q, HTTP_UNPROCESSABLE_ENTITY, qrt_image_from_query, &o);
    if (e) {
        return e;
    }
    return qrt_respond_image(q, tracker_scan_url(q, &t), &o, HTTP_INTERNAL_SERVER_ERROR);
}

/* GET /tracker/<id>/history: the tracker's creates, changes and deletes, newest first,
 * paged like the other lists. A deleted tracker's history stays readable by its id;
 * another account's tracker is not found. */
qrt_err_t *qrt_tracker_history(qrt_req_t *q)
{
    apr_pool_t *p = q->r->pool;
    apr_int64_t id, owner = 0, page, rows, total = 0;
    apr_array_header_t *list;
    apr_status_t rv;
    json_t *data, *j;
    qrt_err_t *e;
    int i;

    if (qrt_parse_int(q->seg[0], 1, APR_INT64_MAX, &id) != 0) {
        return qrt_error(q, HTTP_NOT_FOUND, "Tracker not found.");
    }
    if ((e = qrt_params_paging(q, &page, &rows)) != NULL) {
        return e;
    }
    rv = qrt_store_history_account(&q->db, p, id, &owner);
    if (rv == APR_NOTFOUND || (rv == APR_SUCCESS && owner != q->auth.account_id)) {
        return qrt_error(q, HTTP_NOT_FOUND, "Tracker not found.");
    }
    if (rv != APR_SUCCESS
        || qrt_store_history_list(&q->db, p, id, (page - 1) * rows, rows, &list, &total)
           != APR_SUCCESS) {
        return qrt_error_store(q, "reading a tracker's history");
    }
    data = json_array();
    for (i = 0; i < list->nelts; i++) {
        const qrt_history_t *h = &APR_ARRAY_IDX(list, i, qrt_history_t);
        const char *err = NULL;
        json_t *changes = h->changes ? qrt_json_parse(p, h->changes, strlen(h->changes),
                                                      &err) : NULL;
        json_t *row = json_object();

        json_object_set_new(row, "at", qrt_json_time(h->at));
        json_object_set_new(row, "token", qrt_json_str(h->token_label));
        json_object_set_new(row, "kind", json_string(h->kind));
        json_object_set(row, "changes", json_is_object(changes) ? changes
                        : qrt_json_own(p, json_object()));
        json_array_append_new(data, row);
    }
    j = json_object();
    json_object_set_new(j, "data", data);
    json_object_set_new(j, "meta", qrt_paging_meta(page, rows, total));
    return qrt_respond_json(q, HTTP_OK, j);
}
