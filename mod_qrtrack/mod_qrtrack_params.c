/* mod_qrtrack_params: query parameters shared by several endpoints. */
#include <stdlib.h>
#include <string.h>
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
    w->offset = w->has_start ? off_start : (w->has_end ? off_end : 0);
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
} list_ctx;

static int params_collect(void *data, const char *key, const char *value)
{
    list_ctx *c = data;
    char *copy, *tok, *last = NULL;

    (void)key;
    copy = apr_pstrdup(c->p, value);
    if (!*copy) {
        APR_ARRAY_PUSH(c->out, const char *) = copy;
        return 1;
    }
    for (tok = apr_strtok(copy, ",", &last); tok; tok = apr_strtok(NULL, ",", &last)) {
        APR_ARRAY_PUSH(c->out, const char *) = tok;
    }
    return 1;
}

apr_array_header_t *qrt_query_list(qrt_req_t *q, const char *name)
{
    list_ctx c;

    c.p = q->r->pool;
    c.out = apr_array_make(q->r->pool, 4, sizeof(const char *));
    if (q->query) {
        apr_table_do(params_collect, &c, q->query, name,
                     apr_pstrcat(q->r->pool, name, "[]", NULL), NULL);
    }
    return c.out;
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
