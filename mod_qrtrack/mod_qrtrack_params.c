/* mod_qrtrack_params: query parameters shared by several endpoints. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <apr_strings.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_http.h"
#include "mod_qrtrack_params.h"
#include "qrt_date.h"
#include "qrt_valid.h"

APLOG_USE_MODULE(qrtrack);

#define PARAMS_DATE_FORM "must be a date-time like 2026-11-20T10:00:00+0000"

static qrt_err_t *params_date(qrt_req_t *q, const char *name, int *has,
                              apr_int64_t *t, int *offset)
{
    const char *v = qrt_query(q, name);

    *has = 0;
    if (!v) {
        return NULL;
    }
    if (qrt_date_parse(v, t, offset) != 0) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, name,
                               apr_psprintf(q->r->pool, "The %s parameter %s.", name,
                                            PARAMS_DATE_FORM));
    }
    *has = 1;
    return NULL;
}

qrt_err_t *qrt_params_window(qrt_req_t *q, qrt_window_t *w)
{
    qrt_err_t *e;
    int off_start = 0, off_end = 0;

    memset(w, 0, sizeof(*w));
    e = params_date(q, "visit_start", &w->has_start, &w->start, &off_start);
    if (e) {
        return e;
    }
    e = params_date(q, "visit_start_end", &w->has_end, &w->end, &off_end);
    if (e) {
        return e;
    }
    /* (days in the offset of visit_start, UTC without one: CONTRACT section 4) */
    w->offset = w->has_start ? off_start : 0;
    if (w->has_start && w->has_end && w->start > w->end) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "visit_start_end",
                               "The visit_start_end parameter must not be before "
                               "visit_start.");
    }
    return NULL;
}

typedef struct {
    apr_pool_t *p;
    apr_array_header_t *out;
    const char *name;           /* the list's name */
} list_ctx;

/* (as PHP's http_build_query and jQuery's param write a list: dropped as an unknown
 * parameter, such a list would widen a report to the whole account without a word) */
int qrt_params_list_key(const char *key, const char *name)
{
    apr_size_t n = strlen(name), d;

    if (strncasecmp(key, name, n) != 0) {
        return 0;
    }
    key += n;
    if (!*key || !strcmp(key, "[]")) {
        return 1;
    }
    d = key[0] == '[' ? strspn(key + 1, "0123456789") : 0;
    return d > 0 && d <= 9 && !strcmp(key + 1 + d, "]");
}

static int params_collect(void *data, const char *key, const char *value)
{
    list_ctx *c = data;
    apr_size_t n = strlen(c->name);
    const char *at;

    if (!qrt_params_list_key(key, c->name)) {
        /* (a key of the list's name with brackets of another form, "trackers[x]",
         * "trackers[0][1]": an item that is no id, 422, rather than a list dropped) */
        if (!strncasecmp(key, c->name, n) && key[n] == '[') {
            APR_ARRAY_PUSH(c->out, const char *) = key;
        }
        return 1;
    }
    if (!*value || !value[strspn(value, ",")]) {
        /* given, and empty ("trackers=", "trackers=,": an empty selection joined with
         * commas): one empty item, never no list at all (every tracker) */
        APR_ARRAY_PUSH(c->out, const char *) = "";
        return 1;
    }
    /* each item between commas, an empty one too ("1,,2", "1,": 422 as "trackers[]=") */
    for (at = value;; at++) {
        const char *end = strchr(at, ',');

        APR_ARRAY_PUSH(c->out, const char *) = end ? apr_pstrmemdup(c->p, at,
                                                                     (apr_size_t)(end - at))
                                                   : apr_pstrdup(c->p, at);
        if (!end) {
            break;
        }
        at = end;
    }
    return 1;
}

apr_array_header_t *qrt_query_list(qrt_req_t *q, const char *name)
{
    list_ctx c;

    c.p = q->r->pool;
    c.out = apr_array_make(q->r->pool, 4, sizeof(const char *));
    c.name = name;
    if (q->query) {
        apr_table_do(params_collect, &c, q->query, NULL);
    }
    return c.out;
}

/* ---- a POST's body as the query's parameters ---------------------------------- */

typedef struct {
    qrt_req_t *q;
    const char *both;           /* a name the query has too */
    int n;                      /* values added */
} body_ctx;

/* The query has name, or its twin with or without "[]" (both name one list). */
static int params_in_query(qrt_req_t *q, const char *name)
{
    apr_size_t n = strlen(name);
    const char *base = n > 2 && !strcmp(name + n - 2, "[]")
        ? apr_pstrndup(q->r->pool, name, n - 2) : name;

    return q->query && (apr_table_get(q->query, base)
                        || apr_table_get(q->query, apr_pstrcat(q->r->pool, base, "[]",
                                                               NULL)));
}

static int params_form_field(void *data, const char *key, const char *value)
{
    body_ctx *c = data;

    (void)value;
    if (!strcmp(key, "api_token")) {
        return 1;               /* (the caller's token, read by authentication) */
    }
    if (!c->both && c->q->query && params_in_query(c->q, key)) {
        c->both = key;
    }
    c->n++;
    return 1;
}

/* One JSON value as a parameter's text; NULL for a type a parameter cannot have. */
static const char *params_json_text(apr_pool_t *p, json_t *v)
{
    if (json_is_string(v)) {
        return json_string_value(v);
    }
    if (json_is_integer(v)) {
        return apr_psprintf(p, "%" APR_INT64_T_FMT, (apr_int64_t)json_integer_value(v));
    }
    if (json_is_boolean(v)) {
        return json_is_true(v) ? "true" : "false";
    }
    return NULL;
}

qrt_err_t *qrt_params_from_body(qrt_req_t *q)
{
    apr_pool_t *p = q->r->pool;
    apr_table_t *add = apr_table_make(p, 8);
    body_ctx c;

    memset(&c, 0, sizeof(c));
    c.q = q;
    if (q->form) {
        apr_table_do(params_form_field, &c, q->form, NULL);
        if (!c.both) {
            add = q->form;
        }
    }
    else if (q->json) {
        const char *key;
        json_t *v;

        json_object_foreach(q->json, key, v) {
            const char *text;
            size_t i;

            if (json_is_null(v) || !strcmp(key, "api_token")) {
                continue;
            }
            if (!c.both && params_in_query(q, key)) {
                c.both = key;
                break;
            }
            if (!json_is_array(v)) {
                if (!(text = params_json_text(p, v))) {
                    return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, key,
                                           apr_psprintf(p, "The %s field must be a string, "
                                                        "an integer, true or false, or a "
                                                        "list of strings and integers.",
                                                        key));
                }
                apr_table_addn(add, key, text);
                c.n++;
                continue;
            }
            if (c.n + json_array_size(v) > QRT_FORM_FIELDS_MAX) {
                c.n = QRT_FORM_FIELDS_MAX + 1;
                break;
            }
            /* An empty list is an empty value, as name[]= in a query: never the
             * parameter left out (for trackers, which would be every tracker). */
            if (json_array_size(v) == 0) {
                apr_table_addn(add, key, "");
                c.n++;
                continue;
            }
            for (i = 0; i < json_array_size(v); i++) {
                json_t *x = json_array_get(v, i);

                if (!json_is_string(x) && !json_is_integer(x)) {
                    return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, key,
                                           apr_psprintf(p, "The %s list must hold strings "
                                                        "and integers only.", key));
                }
                apr_table_addn(add, key, params_json_text(p, x));
                c.n++;
            }
        }
    }
    else if (q->body || q->csv) {
        return qrt_error(q, HTTP_UNSUPPORTED_MEDIA_TYPE, "The body must be JSON "
                         "(application/json) or a form (application/x-www-form-urlencoded "
                         "or multipart/form-data).");
    }
    if (c.n > QRT_FORM_FIELDS_MAX) {
        return qrt_error(q, HTTP_REQUEST_ENTITY_TOO_LARGE, apr_psprintf(p, "Too many "
                         "parameters in the body (at most %d).", QRT_FORM_FIELDS_MAX));
    }
    if (c.both) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, c.both, apr_psprintf(p,
                               "The %s parameter is given both in the query and in the "
                               "body; give it once.", c.both));
    }
    /* (a JSON list, or a name again in another case, is no way around "once" either) */
    if (q->json && !q->form) {
        qrt_err_t *e = qrt_params_once(q, add);

        if (e) {
            return e;
        }
    }
    if (!apr_is_empty_table(add)) {
        q->query = q->query ? apr_table_overlay(p, q->query, add) : add;
    }
    return qrt_params_known(q);
}

/* Messages about unknown parameters in one answer. */
#define PARAMS_UNKNOWN_MAX 5

/* "a, b and c" of the names "a b c" ("trackers[]" written "trackers"). */
static const char *params_list_text(apr_pool_t *p, const char *names)
{
    const char *at = names, *text = NULL, *prev = NULL;

    while (*at) {
        apr_size_t n = strcspn(at, " ");
        const char *name = apr_pstrmemdup(p, at, n > 2 && !strncmp(at + n - 2, "[]", 2)
                                                 ? n - 2 : n);

        if (prev) {
            text = text ? apr_pstrcat(p, text, ", ", prev, NULL) : prev;
        }
        prev = name;
        at += n;
        at += strspn(at, " ");
    }
    return text ? apr_pstrcat(p, text, " and ", prev, NULL) : prev ? prev : "";
}

static int params_name_known(const char *names, const char *key)
{
    const char *at = names;

    if (!strcasecmp(key, "api_token") || !strcmp(key, "_")) {
        return 1;
    }
    while (at && *at) {
        apr_size_t n = strcspn(at, " ");

        if (n > 2 && !strncmp(at + n - 2, "[]", 2)) {
            /* (any key of the list's name with brackets: the list's own check names
             * those of another form, "trackers[x]") */
            if (!strncasecmp(key, at, n - 2) && (!key[n - 2] || key[n - 2] == '[')) {
                return 1;
            }
        }
        else if (strlen(key) == n && !strncasecmp(key, at, n)) {
            return 1;
        }
        at += n;
        at += strspn(at, " ");
    }
    return 0;
}

qrt_err_t *qrt_params_known(qrt_req_t *q)
{
    const apr_array_header_t *a = q->query ? apr_table_elts(q->query) : NULL;
    const apr_table_entry_t *t = a ? (const apr_table_entry_t *)a->elts : NULL;
    apr_pool_t *p = q->r->pool;
    qrt_err_t *e = NULL;
    int i, n = 0;

    if (!a || !q->params) {
        return NULL;
    }
    for (i = 0; i < a->nelts && n < PARAMS_UNKNOWN_MAX; i++) {
        const char *name, *msg;

        if (!t[i].key || params_name_known(q->params, t[i].key)) {
            continue;
        }
        name = qrt_valid_utf8_clean(p, t[i].key, strlen(t[i].key), 64);
        msg = *q->params
            ? apr_psprintf(p, "Unknown parameter '%s': this endpoint takes %s.", name,
                           params_list_text(p, q->params))
            : apr_psprintf(p, "Unknown parameter '%s': this endpoint takes none.", name);
        qrt_error_collect(q, &e, HTTP_UNPROCESSABLE_ENTITY, name, msg);
        n++;
    }
    return e;
}

qrt_err_t *qrt_params_once(qrt_req_t *q, const apr_table_t *t)
{
    const apr_array_header_t *a = t ? apr_table_elts(t) : NULL;
    const apr_table_entry_t *e = a ? (const apr_table_entry_t *)a->elts : NULL;
    apr_hash_t *seen;
    int i;

    if (!a || a->nelts < 2) {
        return NULL;
    }
    seen = apr_hash_make(q->r->pool);
    for (i = 0; i < a->nelts; i++) {
        const char *key = e[i].key;
        char *low;

        /* (the lists: a name again adds to it) */
        if (!key || qrt_params_list_key(key, "trackers") || qrt_params_list_key(key, "tags")) {
            continue;
        }
        low = apr_pstrdup(q->r->pool, key);
        ap_str_tolower(low);
        if (apr_hash_get(seen, low, APR_HASH_KEY_STRING)) {
            return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, key, apr_psprintf(
                                   q->r->pool, "The %s parameter is given more than once; "
                                   "give it once.", key));
        }
        apr_hash_set(seen, low, APR_HASH_KEY_STRING, low);
    }
    return NULL;
}

static int params_id_cmp(const void *a, const void *b)
{
    apr_int64_t x = *(const apr_int64_t *)a, y = *(const apr_int64_t *)b;

    return x < y ? -1 : x > y;
}

/* The ids of trackers[] (or the account's live trackers without it): at most
 * QRT_TRACKER_IDS_MAX values, counted before any is parsed; repeats dropped in
 * O(n log n); every id must be the account's (403 otherwise). */
qrt_err_t *qrt_params_trackers(qrt_req_t *q, const char *name, apr_array_header_t **ids)
{
    apr_array_header_t *raw = qrt_query_list(q, name);
    apr_int64_t *vals;
    int i, n = 0, owned = 0;

    if (raw->nelts == 0) {
        if (qrt_store_tracker_ids(&q->db, q->r->pool, q->auth.account_id, ids)
            != APR_SUCCESS) {
            return qrt_error_store(q, "listing trackers");
        }
        return NULL;
    }
    if (raw->nelts > QRT_TRACKER_IDS_MAX) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, name,
                               apr_psprintf(q->r->pool, "At most %d tracker ids may be "
                                            "given.", QRT_TRACKER_IDS_MAX));
    }
    if (raw->nelts == 1 && !*APR_ARRAY_IDX(raw, 0, const char *)) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, name,
                               apr_psprintf(q->r->pool, "The %s list is empty: give at "
                                            "least one tracker id, or leave the parameter "
                                            "out for every tracker.", name));
    }
    *ids = apr_array_make(q->r->pool, raw->nelts, sizeof(apr_int64_t));
    for (i = 0; i < raw->nelts; i++) {
        apr_int64_t id;

        if (qrt_parse_int(APR_ARRAY_IDX(raw, i, const char *), 1, APR_INT64_MAX, &id)
            != 0) {
            return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, name,
                                   apr_psprintf(q->r->pool, "The %s parameter must be "
                                                "a list of tracker ids.", name));
        }
        APR_ARRAY_PUSH(*ids, apr_int64_t) = id;
    }
    vals = (apr_int64_t *)(*ids)->elts;
    qsort(vals, (*ids)->nelts, sizeof(apr_int64_t), params_id_cmp);
    for (i = 0; i < (*ids)->nelts; i++) {
        if (n == 0 || vals[n - 1] != vals[i]) {
            vals[n++] = vals[i];
        }
    }
    (*ids)->nelts = n;
    if (qrt_store_tracker_owned(&q->db, q->r->pool, q->auth.account_id, vals,
                                (*ids)->nelts, &owned) != APR_SUCCESS) {
        return qrt_error_store(q, "checking tracker ids");
    }
    if (owned != (*ids)->nelts) {
        return qrt_error(q, HTTP_FORBIDDEN,
                         "One or more trackers are not accessible to this account.");
    }
    return NULL;
}

qrt_err_t *qrt_params_paging(qrt_req_t *q, apr_int64_t *page, apr_int64_t *rows)
{
    const char *v;

    *page = 1;
    *rows = 25;
    v = qrt_query(q, "page");
    if (v && qrt_parse_int(v, 1, QRT_PAGE_MAX, page) != 0) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "page",
                               apr_psprintf(q->r->pool, "The page parameter must be an "
                                            "integer from 1 to %d.", QRT_PAGE_MAX));
    }
    v = qrt_query(q, "rows");
    if (v && qrt_parse_int(v, 1, 1000, rows) != 0) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "rows",
                               "The rows parameter must be an integer from 1 to 1000.");
    }
    return NULL;
}

json_t *qrt_paging_meta(apr_int64_t page, apr_int64_t rows, apr_int64_t total)
{
    json_t *m = json_object();
    apr_int64_t last = total > 0 ? (total + rows - 1) / rows : 1;

    json_object_set_new(m, "current_page", json_integer(page));
    json_object_set_new(m, "per_page", json_integer(rows));
    json_object_set_new(m, "total", json_integer(total));
    json_object_set_new(m, "last_page", json_integer(last));
    return m;
}
