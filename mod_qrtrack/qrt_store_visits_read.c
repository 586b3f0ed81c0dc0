/* qrt_store_visits_read: visit listings, search, polling and export. */
#include <string.h>
#include <apr_strings.h>
#include "qrt_store_visits_read.h"

#define VR_COLS "id, tracker_id, visit_start, source, ip, country, city, browser, " \
                "browser_version, os, device, referer, user_agent, bot"

/* tracker, window and since_id: 4 arguments, every one a bound of the index
 * (tracker_id, visit_start), which also gives the order without a sort. */
#define VR_FILTER "tracker_id = %lld AND visit_start >= %lld AND visit_start <= %lld " \
                  "AND id > %lld"
#define VR_ORDER " ORDER BY visit_start DESC, id DESC"
/* Polls (since_id > 0) want the few visits above an id: the '+'s keep SQLite off
 * the time index, so it takes the id range of (tracker_id, id) and sorts those. */
#define VR_SINCE "tracker_id = %lld AND +visit_start >= %lld AND +visit_start <= %lld " \
                 "AND id > %lld"
#define VR_ORDER_SINCE " ORDER BY +visit_start DESC, +id DESC"
/* Visits of one second below an id: (tracker_id, visit_start, rowid) is a seek. */
#define VR_SAME "tracker_id = %lld AND visit_start = %lld AND id > %lld AND id < %lld"

/* Search: one bound LIKE pattern per searched column, 8 arguments. SQLite's LIKE
 * ignores ASCII case by itself (and its lower() folds nothing more), so its form
 * skips lower(), which costs 2.5 times the scan; other drivers get lower(). */
#define VR_NSEARCH 8
#define VR_LIKE_S(col) col " LIKE %s ESCAPE '\\'"
#define VR_LIKE_CI(col) "lower(" col ") LIKE %s ESCAPE '\\'"
#define VR_SEARCH(L) " AND (" L("browser") " OR " L("os") " OR " L("device") " OR " \
                     L("country") " OR " L("city") " OR " L("referer") " OR " \
                     L("user_agent") " OR " L("ip") ")"
#define VR_S  VR_SEARCH(VR_LIKE_S)
#define VR_CI VR_SEARCH(VR_LIKE_CI)

#define VR_SELECT "SELECT " VR_COLS " FROM visits WHERE "
#define VR_COUNT "SELECT COUNT(*) FROM visits WHERE "
#define VR_LIMIT " LIMIT %lld OFFSET %lld"

/* Each query in three forms: label, label_s (search, SQLite), label_ci (search). */
const qrt_stmt_t qrt_store_visits_read_stmts[] = {
    { "qrt_visits_count",          VR_COUNT VR_FILTER },
    { "qrt_visits_count_s",        VR_COUNT VR_FILTER VR_S },
    { "qrt_visits_count_ci",       VR_COUNT VR_FILTER VR_CI },
    { "qrt_visits_page",           VR_SELECT VR_FILTER VR_ORDER VR_LIMIT },
    { "qrt_visits_page_s",         VR_SELECT VR_FILTER VR_S VR_ORDER VR_LIMIT },
    { "qrt_visits_page_ci",        VR_SELECT VR_FILTER VR_CI VR_ORDER VR_LIMIT },
    { "qrt_visits_since_count",    VR_COUNT VR_SINCE },
    { "qrt_visits_since_count_s",  VR_COUNT VR_SINCE VR_S },
    { "qrt_visits_since_count_ci", VR_COUNT VR_SINCE VR_CI },
    { "qrt_visits_since_page",     VR_SELECT VR_SINCE VR_ORDER_SINCE VR_LIMIT },
    { "qrt_visits_since_page_s",   VR_SELECT VR_SINCE VR_S VR_ORDER_SINCE VR_LIMIT },
    { "qrt_visits_since_page_ci",  VR_SELECT VR_SINCE VR_CI VR_ORDER_SINCE VR_LIMIT },
    { "qrt_visits_same",           VR_SELECT VR_SAME " ORDER BY id DESC LIMIT %lld" },
    { "qrt_visits_same_s",         VR_SELECT VR_SAME VR_S " ORDER BY id DESC LIMIT %lld" },
    { "qrt_visits_same_ci",        VR_SELECT VR_SAME VR_CI " ORDER BY id DESC LIMIT %lld" },
    { "qrt_visits_max_id",
      "SELECT MAX(id) FROM visits WHERE tracker_id = %lld" },
    { NULL, NULL }
};

/* The label of a query in the form that f and the driver need. */
static const char *vr_label(qrt_db_t *db, apr_pool_t *p, const char *base,
                            const qrt_visit_filter_t *f)
{
    if (!f->search) {
        return base;
    }
    return apr_pstrcat(p, base, strcmp(apr_dbd_name(db->driver), "sqlite3") ? "_ci" : "_s",
                       NULL);
}

void qrt_visit_filter_init(qrt_visit_filter_t *f, apr_int64_t tracker_id)
{
    memset(f, 0, sizeof(*f));
    f->tracker_id = tracker_id;
    f->start = APR_INT64_MIN;
    f->end = APR_INT64_MAX;
}

const char *qrt_visits_like_pattern(apr_pool_t *p, const char *search)
{
    apr_size_t len = search ? strlen(search) : 0;
    char *out = apr_palloc(p, len * 2 + 3), *o = out;
    const char *s;

    *o++ = '%';
    for (s = search; s && *s; s++) {
        char c = *s;

        if (c == '\\' || c == '%' || c == '_') {
            *o++ = '\\';
        }
        else if (c >= 'A' && c <= 'Z') {
            c = (char)(c - 'A' + 'a');
        }
        *o++ = c;
    }
    *o++ = '%';
    *o = '\0';
    return out;
}

/* args: up to 4 leading arguments, then the search patterns, then up to 2 more. */
typedef struct {
    const void *v[4 + VR_NSEARCH + 2];
    int n;
} vr_args;

static void vr_push(vr_args *a, const void *v)
{
    a->v[a->n++] = v;
}

static void vr_push_search(vr_args *a, apr_pool_t *p, const qrt_visit_filter_t *f)
{
    const char *pattern;
    int i;

    if (!f->search) {
        return;
    }
    pattern = qrt_visits_like_pattern(p, f->search);
    for (i = 0; i < VR_NSEARCH; i++) {
        vr_push(a, pattern);
    }
}

static void vr_push_filter(vr_args *a, apr_pool_t *p, const qrt_visit_filter_t *f)
{
    vr_push(a, &f->tracker_id);
    vr_push(a, &f->start);
    vr_push(a, &f->end);
    vr_push(a, &f->since_id);
    vr_push_search(a, p, f);
}

static const char *vr_dup(qrt_db_t *db, apr_pool_t *p, apr_dbd_row_t *row, int col)
{
    const char *s = qrt_db_str(db, row, col);

    /* Some drivers free a row's values when the next row is read: copy. */
    return s ? apr_pstrdup(p, s) : NULL;
}

static apr_status_t vr_read(qrt_db_t *db, apr_pool_t *p, const char *label,
                            const void **args, apr_array_header_t *out)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    apr_status_t rv = qrt_db_select(db, p, label, &res, args);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        qrt_visit_t *v = apr_array_push(out);

        memset(v, 0, sizeof(*v));
        v->id = qrt_db_int(db, row, 0, 0);
        v->tracker_id = qrt_db_int(db, row, 1, 0);
        v->visit_start = qrt_db_int(db, row, 2, 0);
        v->source = vr_dup(db, p, row, 3);
        v->ip = vr_dup(db, p, row, 4);
        v->country = vr_dup(db, p, row, 5);
        v->city = vr_dup(db, p, row, 6);
        v->browser = vr_dup(db, p, row, 7);
        v->browser_version = vr_dup(db, p, row, 8);
        v->os = vr_dup(db, p, row, 9);
        v->device = vr_dup(db, p, row, 10);
        v->referer = vr_dup(db, p, row, 11);
        v->user_agent = vr_dup(db, p, row, 12);
        v->bot = qrt_db_int(db, row, 13, 0) != 0;
    }
    return APR_SUCCESS;
}

apr_status_t qrt_store_visits_count(qrt_db_t *db, apr_pool_t *p,
                                    const qrt_visit_filter_t *f, apr_int64_t *total)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    vr_args a;
    apr_status_t rv;

    a.n = 0;
    vr_push_filter(&a, p, f);
    rv = qrt_db_select(db, p, vr_label(db, p, f->since_id > 0 ? "qrt_visits_since_count"
                                                             : "qrt_visits_count", f),
                       &res, a.v);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    *total = 0;
    while (qrt_db_row(db, p, res, &row) == 0) {
        *total = qrt_db_int(db, row, 0, 0);
    }
    return APR_SUCCESS;
}

/* One page by offset into out: along the time index, or (since) the visits
 * above since_id found by id and sorted. */
static apr_status_t vr_page(qrt_db_t *db, apr_pool_t *p, const qrt_visit_filter_t *f,
                            int since, apr_int64_t offset, apr_int64_t limit,
                            apr_array_header_t *out)
{
    vr_args a;

    a.n = 0;
    vr_push_filter(&a, p, f);
    vr_push(&a, &limit);
    vr_push(&a, &offset);
    return vr_read(db, p, vr_label(db, p, since ? "qrt_visits_since_page"
                                                : "qrt_visits_page", f), a.v, out);
}

static apr_array_header_t *vr_array(apr_pool_t *p, apr_int64_t limit)
{
    return apr_array_make(p, limit > 0 && limit < QRT_VISITS_CHUNK ? (int)limit
                                                                   : QRT_VISITS_CHUNK,
                          sizeof(qrt_visit_t));
}

apr_status_t qrt_store_visits_page(qrt_db_t *db, apr_pool_t *p,
                                   const qrt_visit_filter_t *f, apr_int64_t offset,
                                   apr_int64_t limit, apr_array_header_t **out)
{
    *out = vr_array(p, limit);
    return vr_page(db, p, f, f->since_id > 0, offset, limit, *out);
}

apr_status_t qrt_store_visits_after(qrt_db_t *db, apr_pool_t *p,
                                    const qrt_visit_filter_t *f, apr_int64_t after_start,
                                    apr_int64_t after_id, apr_int64_t limit,
                                    apr_array_header_t **out)
{
    qrt_visit_filter_t older = *f;
    apr_int64_t rest;
    vr_args a;
    apr_status_t rv;

    *out = vr_array(p, limit);
    if (limit <= 0) {
        return APR_SUCCESS;
    }
    /* Always along the time index: each chunk starts where the last one ended, so
     * the whole export reads the index once, since_id or not. */
    if (after_id <= 0) {
        return vr_page(db, p, f, 0, 0, limit, *out);
    }
    /* First the rest of the second of the last visit written (a seek on
     * tracker_id, visit_start, id)... */
    if (after_start >= f->start && after_start <= f->end) {
        a.n = 0;
        vr_push(&a, &f->tracker_id);
        vr_push(&a, &after_start);
        vr_push(&a, &f->since_id);
        vr_push(&a, &after_id);
        vr_push_search(&a, p, f);
        vr_push(&a, &limit);
        rv = vr_read(db, p, vr_label(db, p, "qrt_visits_same", f), a.v, *out);
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    /* ...then the older seconds. */
    rest = limit - (*out)->nelts;
    if (rest <= 0 || after_start <= f->start) {
        return APR_SUCCESS;
    }
    older.end = after_start - 1 < f->end ? after_start - 1 : f->end;
    return vr_page(db, p, &older, 0, 0, rest, *out);
}

apr_status_t qrt_store_visits_max_id(qrt_db_t *db, apr_pool_t *p, apr_int64_t tracker_id,
                                     apr_int64_t *max_id)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *args[] = { &tracker_id };
    apr_status_t rv = qrt_db_select(db, p, "qrt_visits_max_id", &res, args);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    *max_id = 0;
    while (qrt_db_row(db, p, res, &row) == 0) {
        *max_id = qrt_db_int(db, row, 0, 0);
    }
    return APR_SUCCESS;
}
