/* mod_qrtrack_report: endpoints 6, 7 and 8.
 *
 *   GET /report/?report=<type>          qrt_report_show      (6)
 *   GET /report/tag-crosstab            qrt_report_crosstab  (7)
 *   GET /dashboard/scansAnalytics       qrt_dashboard_scans  (8)
 *
 * Decisions (beyond CONTRACT section 4):
 *   - Bots never count. Tags and types are the trackers' current ones, joined at
 *     query time: retagging a tracker relabels its past visits too.
 *   - name, type and tag reports list every covered tracker / type / tag, zeros
 *     included; date, browser, city and country list groups that have visits. An
 *     unknown (NULL or empty) browser, city or country is one group, written null,
 *     sorted after the named ones among equal visit counts. Ties on visits: name by
 *     tracker_id, others by key (bytes); date rows by date.
 *   - Crosstab: rows and cols are the values (sorted by bytes) of the two dimensions
 *     on covered trackers that have both. matrix[r][c] = visits of the trackers
 *     tagged with both row:r and col:c (a tracker with several values counts in each
 *     cell). row_totals[r], col_totals[c] and total count every visit once: visits of
 *     the trackers with value r (resp. c), and of all trackers with both dimensions.
 *     So total <= the sum of the cells, equal when no tracker has two values of one
 *     dimension.
 *   - Dashboard: compare accepts 0/1/false/true; with 0, previousPeriod is null and
 *     every KPI's previous and change are null. change is the percent change rounded
 *     to 0.1 (half away from zero), null when previous is 0. topTrackers: up to 10
 *     covered trackers with visits in the period, by visits then tracker_id. A period
 *     of more than 3660 days is 422.
 *
 * Numbers come from the report aggregates (qrt_store_report.h). Per-tracker figures
 * (the name report, every count, the crosstab, the dashboard's scans and clicks) are
 * exact and fast for any set of trackers. Distinct visitors across trackers come from
 * the account-level aggregates when the report covers every tracker of the account
 * and no aggregated tracker was deleted (for a tag: retagged) since; otherwise they
 * are counted from the covered trackers' visits in the window (by the database for
 * up to 64 trackers), exact but in proportion to those visits. */
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>
#include <apr_time.h>

#include "mod_qrtrack.h"
#include "qrt_agg.h"
#include "qrt_date.h"
#include "qrt_json.h"
#include "qrt_store_report.h"
#include "qrt_valid.h"

APLOG_USE_MODULE(qrtrack);

#define REP_TOP_TRACKERS 10
#define REP_MAX_DAYS 3660           /* dashboard period: at most ten years */
#define REP_DIM_MAX 64
/* Crosstab: at most this many distinct values of the row dimension, and of the col
 * dimension, on the covered trackers (422 beyond): the matrix stays under 2 MB. */
#define REP_XT_MAX 500

enum { REP_NAME, REP_TYPE, REP_TAG, REP_DATE, REP_BROWSER, REP_CITY, REP_COUNTRY };

static const char *const rep_types[] = {
    "name", "type", "tag", "date", "browser", "city", "country", NULL
};

/* ---- shared pieces -------------------------------------------------------- */

static qrt_err_t *rep_store_error(qrt_req_t *q, const char *what)
{
    ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, q->r, "QRT00501: store error while %s: %s",
                  what, q->db.error ? q->db.error : "unknown");
    return qrt_error(q, HTTP_INTERNAL_SERVER_ERROR, "Server Error");
}

/* The trackers a request covers. */
typedef struct {
    apr_array_header_t *live;       /* qrt_report_tracker_t: the account's trackers */
    apr_array_header_t *list;       /* qrt_report_tracker_t *: the covered ones, by id */
    apr_hash_t *covered;            /* id -> qrt_report_tracker_t * */
    int everything;                 /* every live tracker of the account is covered */
    int agg_ok;                     /* ... and the account-level aggregates are usable */
    qrt_agg_state_t state;
} rep_scope;

static qrt_err_t *rep_scope_load(qrt_req_t *q, const char *param, rep_scope *sc)
{
    apr_pool_t *p = q->r->pool;
    apr_array_header_t *ids;
    apr_hash_t *byid = apr_hash_make(p);
    qrt_err_t *e = qrt_params_trackers(q, param, &ids);
    int i;

    if (e) {
        return e;
    }
    if (qrt_store_report_trackers(&q->db, p, q->auth.account_id, &sc->live)
        != APR_SUCCESS) {
        return rep_store_error(q, "listing trackers");
    }
    for (i = 0; i < sc->live->nelts; i++) {
        qrt_report_tracker_t *t = &APR_ARRAY_IDX(sc->live, i, qrt_report_tracker_t);

        apr_hash_set(byid, &t->id, sizeof(t->id), t);
    }
    sc->list = apr_array_make(p, ids->nelts + 1, sizeof(qrt_report_tracker_t *));
    sc->covered = apr_hash_make(p);
    for (i = 0; i < ids->nelts; i++) {
        apr_int64_t id = APR_ARRAY_IDX(ids, i, apr_int64_t);
        qrt_report_tracker_t *t = apr_hash_get(byid, &id, sizeof(id));

        if (t && !apr_hash_get(sc->covered, &t->id, sizeof(t->id))) {
            apr_hash_set(sc->covered, &t->id, sizeof(t->id), t);
            APR_ARRAY_PUSH(sc->list, qrt_report_tracker_t *) = t;
        }
    }
    sc->everything = sc->list->nelts == sc->live->nelts;
    if (qrt_store_agg_state(&q->db, p, q->auth.account_id, &sc->state) != APR_SUCCESS) {
        return rep_store_error(q, "checking the report aggregates");
    }
    sc->agg_ok = sc->everything && !sc->state.deleted;
    if (sc->everything && sc->state.deleted) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, q->r, "QRT00502: trackers were deleted "
                      "since the report aggregates were built: distinct visitors are "
                      "counted from the visits (run qrtrack-admin aggregates rebuild)");
    }
    return NULL;
}

/* A window bound as given, written back in its own offset; null when absent. */
static json_t *rep_bound(qrt_req_t *q, const char *name)
{
    const char *v = qrt_query(q, name);
    char buf[QRT_DATE_LEN];
    apr_int64_t t;
    int off;

    if (!v || qrt_date_parse(v, &t, &off) != 0) {
        return json_null();
    }
    qrt_date_format(buf, t, off);
    return json_string(buf);
}

static void rep_window(const qrt_window_t *w, apr_int64_t *s, apr_int64_t *e)
{
    *s = w->has_start ? w->start : QRT_AGG_TMIN;
    *e = w->has_end ? w->end : QRT_AGG_TMAX;
}

/* The covered tracker ids when they are not all of the account's, else NULL. */
static const apr_int64_t *rep_only(apr_pool_t *p, rep_scope *sc)
{
    apr_int64_t *ids;
    int i;

    if (sc->everything) {
        return NULL;
    }
    ids = apr_palloc(p, (sc->list->nelts + 1) * sizeof(*ids));
    for (i = 0; i < sc->list->nelts; i++) {
        ids[i] = APR_ARRAY_IDX(sc->list, i, qrt_report_tracker_t *)->id;
    }
    return ids;
}

/* T-kind totals of the covered trackers: tracker id -> qrt_agg_row_t*. */
static qrt_err_t *rep_per_tracker(qrt_req_t *q, rep_scope *sc, apr_int64_t s,
                                  apr_int64_t e, int uniques, apr_hash_t **out)
{
    apr_array_header_t *rows;
    int i;

    *out = apr_hash_make(q->r->pool);
    if (qrt_store_agg_window(&q->db, q->r->pool, q->auth.account_id, QRT_AGG_T,
                             rep_only(q->r->pool, sc), sc->list->nelts, s, e, uniques,
                             &rows) != APR_SUCCESS) {
        return rep_store_error(q, "summing tracker aggregates");
    }
    for (i = 0; i < rows->nelts; i++) {
        qrt_agg_row_t *r = &APR_ARRAY_IDX(rows, i, qrt_agg_row_t);

        if (apr_hash_get(sc->covered, &r->grp, sizeof(r->grp))) {
            apr_hash_set(*out, &r->grp, sizeof(r->grp), r);
        }
    }
    return NULL;
}

/* ---- reading the visits themselves (subsets, stale aggregates) ------------ */

typedef struct {
    qrt_agg_groups_t *g;
    int type;                       /* REP_* */
    int offset;
    apr_hash_t *tags;               /* tag report: the tags to count */
    const qrt_report_tracker_t *t;
    char buf[32];
} rep_raw;

static void rep_raw_visit(void *ctx, apr_int64_t tracker_id, apr_int64_t t, int click,
                          const char *visitor, const char *browser, const char *country,
                          const char *city)
{
    rep_raw *c = ctx;
    int i;

    (void)tracker_id;
    switch (c->type) {
    case REP_TYPE:
        qrt_agg_groups_add(c->g, c->t->type, click, visitor);
        break;
    case REP_TAG:
        for (i = 0; i < c->t->tags->nelts; i++) {
            const char *tag = APR_ARRAY_IDX(c->t->tags, i, qrt_report_tag_t).tag;

            if (!c->tags || apr_hash_get(c->tags, tag, APR_HASH_KEY_STRING)) {
                qrt_agg_groups_add(c->g, tag, click, visitor);
            }
        }
        break;
    case REP_DATE:
        apr_snprintf(c->buf, sizeof(c->buf), "%" APR_INT64_T_FMT,
                     qrt_date_day_of(t, c->offset));
        qrt_agg_groups_add(c->g, c->buf, click, visitor);
        break;
    case REP_BROWSER:
        qrt_agg_groups_add(c->g, browser, click, visitor);
        break;
    case REP_CITY:
        qrt_agg_groups_add(c->g, city, click, visitor);
        break;
    case REP_COUNTRY:
        qrt_agg_groups_add(c->g, country, click, visitor);
        break;
    default:
        qrt_agg_groups_add(c->g, "", click, visitor);
        break;
    }
}

/* Groups of the covered trackers' visits in [s, e] (only trackers with one of tags,
 * when tags is given): counted by the database for a few trackers, else here. */
static qrt_err_t *rep_raw_groups(qrt_req_t *q, rep_scope *sc, int type, int offset,
                                 apr_hash_t *tags, apr_int64_t s, apr_int64_t e,
                                 qrt_agg_groups_t **out)
{
    static const int by[] = { QRT_AGG_RAW_ALL, QRT_AGG_RAW_TYPE, QRT_AGG_RAW_TAG,
                              QRT_AGG_RAW_DATE, QRT_AGG_RAW_BROWSER, QRT_AGG_RAW_CITY,
                              QRT_AGG_RAW_COUNTRY };
    apr_pool_t *p = q->r->pool;
    apr_array_header_t *read = apr_array_make(p, 16, sizeof(qrt_report_tracker_t *));
    rep_raw c;
    int i, j;

    for (i = 0; i < sc->list->nelts; i++) {
        qrt_report_tracker_t *t = APR_ARRAY_IDX(sc->list, i, qrt_report_tracker_t *);
        int wanted = !tags;

        for (j = 0; j < t->tags->nelts && !wanted; j++) {
            wanted = apr_hash_get(tags, APR_ARRAY_IDX(t->tags, j, qrt_report_tag_t).tag,
                                  APR_HASH_KEY_STRING) != NULL;
        }
        if (wanted) {
            APR_ARRAY_PUSH(read, qrt_report_tracker_t *) = t;
        }
    }
    memset(&c, 0, sizeof(c));
    c.g = *out = qrt_agg_groups_make(p);
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, q->r, "QRT00503: counting distinct "
                  "visitors of %d trackers from their visits", read->nelts);
    if (read->nelts > 0 && read->nelts <= QRT_AGG_RAW_IDS) {
        apr_int64_t ids[QRT_AGG_RAW_IDS];
        apr_array_header_t *rows;

        for (i = 0; i < read->nelts; i++) {
            ids[i] = APR_ARRAY_IDX(read, i, qrt_report_tracker_t *)->id;
        }
        if (qrt_store_agg_raw_groups(&q->db, p, type >= REP_TYPE ? by[type] : by[0], ids,
                                     read->nelts, s, e, offset, &rows) != APR_SUCCESS) {
            return rep_store_error(q, "grouping visits");
        }
        for (i = 0; i < rows->nelts; i++) {
            qrt_agg_row_t *r = &APR_ARRAY_IDX(rows, i, qrt_agg_row_t);

            qrt_agg_groups_set(c.g, type == REP_DATE ? apr_psprintf(p, "%" APR_INT64_T_FMT,
                                                                    r->grp) : r->val,
                               r->scans, r->clicks, r->uniques);
        }
        return NULL;
    }
    c.type = type;
    c.offset = offset;
    c.tags = tags;
    for (i = 0; i < read->nelts; i++) {
        c.t = APR_ARRAY_IDX(read, i, qrt_report_tracker_t *);
        if (qrt_store_agg_raw(&q->db, p, c.t->id, s, e, rep_raw_visit, &c) != APR_SUCCESS) {
            return rep_store_error(q, "reading visits");
        }
    }
    return NULL;
}

/* ---- the report (6) --------------------------------------------------------- */

typedef struct {
    int type;                       /* REP_*: how rows compare */
    apr_int64_t id;                 /* name: tracker id; date: day number */
    const char *key;                /* name: tracker name; other reports: the value,
                                     * "" for none (written null) */
    apr_int64_t scans, clicks, uniques;
} rep_row;

static int rep_row_cmp(const void *a, const void *b)
{
    const rep_row *x = a, *y = b;
    apr_int64_t vx = x->scans + x->clicks, vy = y->scans + y->clicks;

    if (x->type == REP_DATE) {
        return x->id < y->id ? -1 : x->id > y->id;
    }
    if (vx != vy) {
        return vx > vy ? -1 : 1;
    }
    if (x->type == REP_NAME) {
        return x->id < y->id ? -1 : x->id > y->id;
    }
    if (!*x->key || !*y->key) {
        return (!*x->key) - (!*y->key);         /* null last */
    }
    return strcmp(x->key, y->key);
}

static void rep_add_row(apr_array_header_t *rows, apr_int64_t id, const char *key,
                        apr_int64_t scans, apr_int64_t clicks, apr_int64_t uniques)
{
    rep_row *r = apr_array_push(rows);

    r->id = id;
    r->key = key;
    r->scans = scans;
    r->clicks = clicks;
    r->uniques = uniques;
}

static void rep_from_groups(apr_array_header_t *rows, qrt_agg_groups_t *g, int date)
{
    apr_hash_index_t *hi;

    for (hi = apr_hash_first(g->p, g->groups); hi; hi = apr_hash_next(hi)) {
        qrt_agg_group_t *x = apr_hash_this_val(hi);

        rep_add_row(rows, date ? apr_atoi64(x->key) : 0, x->key, x->scans, x->clicks,
                    x->uniques);
    }
}

static qrt_err_t *rep_name(qrt_req_t *q, rep_scope *sc, apr_int64_t s, apr_int64_t e,
                           apr_array_header_t *rows)
{
    apr_hash_t *per;
    qrt_err_t *err = rep_per_tracker(q, sc, s, e, 1, &per);
    int i;

    if (err) {
        return err;
    }
    for (i = 0; i < sc->list->nelts; i++) {
        qrt_report_tracker_t *t = APR_ARRAY_IDX(sc->list, i, qrt_report_tracker_t *);
        qrt_agg_row_t *r = apr_hash_get(per, &t->id, sizeof(t->id));

        rep_add_row(rows, t->id, t->name, r ? r->scans : 0, r ? r->clicks : 0,
                    r ? r->uniques : 0);
    }
    return NULL;
}

/* type and tag: counts summed over the trackers of each value, distinct visitors from
 * the account-level aggregates where they hold, else from the visits. */
static qrt_err_t *rep_tracker_values(qrt_req_t *q, rep_scope *sc, int type,
                                     apr_int64_t s, apr_int64_t e,
                                     apr_array_header_t *rows)
{
    apr_pool_t *p = q->r->pool;
    apr_hash_t *per, *sums = apr_hash_make(p), *fast = apr_hash_make(p), *slow = NULL;
    apr_hash_index_t *hi;
    qrt_agg_groups_t *raw = NULL;
    qrt_err_t *err = rep_per_tracker(q, sc, s, e, 0, &per);
    int i, j;

    if (err) {
        return err;
    }
    /* Counts: value -> row. */
    for (i = 0; i < sc->list->nelts; i++) {
        qrt_report_tracker_t *t = APR_ARRAY_IDX(sc->list, i, qrt_report_tracker_t *);
        qrt_agg_row_t *r = apr_hash_get(per, &t->id, sizeof(t->id));
        int n = type == REP_TYPE ? 1 : t->tags->nelts;

        for (j = 0; j < n; j++) {
            const char *v = type == REP_TYPE ? t->type
                            : APR_ARRAY_IDX(t->tags, j, qrt_report_tag_t).tag;
            rep_row *x = apr_hash_get(sums, v, APR_HASH_KEY_STRING);

            if (!x) {
                x = apr_pcalloc(p, sizeof(*x));
                x->key = v;
                apr_hash_set(sums, v, APR_HASH_KEY_STRING, x);
            }
            if (r) {
                x->scans += r->scans;
                x->clicks += r->clicks;
            }
        }
    }
    /* Distinct visitors. */
    if (type == REP_TYPE) {
        if (sc->agg_ok && apr_hash_count(sums) == 1) {
            apr_array_header_t *all;

            if (qrt_store_agg_window(&q->db, p, q->auth.account_id, QRT_AGG_A, NULL, 0,
                                     s, e, 1, &all) != APR_SUCCESS) {
                return rep_store_error(q, "summing account aggregates");
            }
            for (hi = apr_hash_first(p, sums); hi; hi = apr_hash_next(hi)) {
                rep_row *x = apr_hash_this_val(hi);

                x->uniques = all->nelts
                             ? APR_ARRAY_IDX(all, 0, qrt_agg_row_t).uniques : 0;
                apr_hash_set(fast, x->key, APR_HASH_KEY_STRING, x);
            }
        }
    }
    else if (sc->agg_ok) {
        apr_array_header_t *tags;

        if (qrt_store_agg_window(&q->db, p, q->auth.account_id, QRT_AGG_G, NULL, 0,
                                 s, e, 1, &tags) != APR_SUCCESS) {
            return rep_store_error(q, "summing tag aggregates");
        }
        for (hi = apr_hash_first(p, sums); hi; hi = apr_hash_next(hi)) {
            rep_row *x = apr_hash_this_val(hi);

            if (!apr_hash_get(sc->state.dirty_tags, x->key, APR_HASH_KEY_STRING)) {
                apr_hash_set(fast, x->key, APR_HASH_KEY_STRING, x);
            }
        }
        for (i = 0; i < tags->nelts; i++) {
            qrt_agg_row_t *r = &APR_ARRAY_IDX(tags, i, qrt_agg_row_t);
            rep_row *x = apr_hash_get(fast, r->val, APR_HASH_KEY_STRING);

            if (x) {
                x->uniques = r->uniques;
            }
        }
    }
    for (hi = apr_hash_first(p, sums); hi; hi = apr_hash_next(hi)) {
        rep_row *x = apr_hash_this_val(hi);

        if (!apr_hash_get(fast, x->key, APR_HASH_KEY_STRING)
            && x->scans + x->clicks > 0) {
            if (!slow) {
                slow = apr_hash_make(p);
            }
            apr_hash_set(slow, x->key, APR_HASH_KEY_STRING, x);
        }
    }
    if (slow) {
        err = rep_raw_groups(q, sc, type, 0, type == REP_TAG ? slow : NULL, s, e, &raw);
        if (err) {
            return err;
        }
        for (hi = apr_hash_first(p, slow); hi; hi = apr_hash_next(hi)) {
            rep_row *x = apr_hash_this_val(hi);
            qrt_agg_group_t *g = qrt_agg_groups_get(raw, x->key);

            x->uniques = g ? g->uniques : 0;
        }
    }
    for (hi = apr_hash_first(p, sums); hi; hi = apr_hash_next(hi)) {
        rep_row *x = apr_hash_this_val(hi);

        rep_add_row(rows, 0, x->key, x->scans, x->clicks, x->uniques);
    }
    return NULL;
}

static qrt_err_t *rep_date(qrt_req_t *q, rep_scope *sc, apr_int64_t s, apr_int64_t e,
                           int offset, apr_array_header_t *rows)
{
    apr_array_header_t *days;
    qrt_agg_groups_t *g;
    qrt_err_t *err;
    apr_status_t rv = APR_ENOTIMPL;
    int i;

    if (sc->agg_ok) {
        rv = qrt_store_agg_days(&q->db, q->r->pool, q->auth.account_id, s, e, offset,
                                &days);
        if (rv != APR_SUCCESS && rv != APR_ENOTIMPL) {
            return rep_store_error(q, "summing day aggregates");
        }
    }
    if (rv == APR_SUCCESS) {
        for (i = 0; i < days->nelts; i++) {
            qrt_agg_day_t *d = &APR_ARRAY_IDX(days, i, qrt_agg_day_t);

            rep_add_row(rows, d->day, "", d->scans, d->clicks, d->uniques);
        }
        return NULL;
    }
    err = rep_raw_groups(q, sc, REP_DATE, offset, NULL, s, e, &g);
    if (!err) {
        rep_from_groups(rows, g, 1);
    }
    return err;
}

static qrt_err_t *rep_values(qrt_req_t *q, rep_scope *sc, int type, apr_int64_t s,
                             apr_int64_t e, apr_array_header_t *rows)
{
    static const int kinds[] = { 0, 0, 0, 0, QRT_AGG_B, QRT_AGG_Y, QRT_AGG_C };
    apr_array_header_t *list;
    qrt_agg_groups_t *g;
    qrt_err_t *err;
    int i;

    if (sc->agg_ok) {
        if (qrt_store_agg_window(&q->db, q->r->pool, q->auth.account_id, kinds[type],
                                 NULL, 0, s, e, 1, &list) != APR_SUCCESS) {
            return rep_store_error(q, "summing report aggregates");
        }
        for (i = 0; i < list->nelts; i++) {
            qrt_agg_row_t *r = &APR_ARRAY_IDX(list, i, qrt_agg_row_t);

            rep_add_row(rows, 0, r->val, r->scans, r->clicks, r->uniques);
        }
        return NULL;
    }
    err = rep_raw_groups(q, sc, type, 0, NULL, s, e, &g);
    if (!err) {
        rep_from_groups(rows, g, 0);
    }
    return err;
}

static json_t *rep_row_json(int type, const rep_row *r)
{
    json_t *o = json_object();
    char day[QRT_DAY_LEN];

    switch (type) {
    case REP_NAME:
        json_object_set_new(o, "tracker_id", json_integer(r->id));
        json_object_set_new(o, "name", json_string(r->key));
        break;
    case REP_DATE:
        qrt_date_format_day(day, r->id);
        json_object_set_new(o, "date", json_string(day));
        break;
    default:
        json_object_set_new(o, rep_types[type],
                            *r->key ? json_string(r->key) : json_null());
        break;
    }
    json_object_set_new(o, "visits", json_integer(r->scans + r->clicks));
    json_object_set_new(o, "scans", json_integer(r->scans));
    json_object_set_new(o, "clicks", json_integer(r->clicks));
    json_object_set_new(o, "unique_visitors", json_integer(r->uniques));
    return o;
}

static json_t *rep_meta(qrt_req_t *q, rep_scope *sc)
{
    json_t *m = json_object();

    json_object_set_new(m, "tracker_count", json_integer(sc->list->nelts));
    json_object_set_new(m, "visit_start", rep_bound(q, "visit_start"));
    json_object_set_new(m, "visit_start_end", rep_bound(q, "visit_start_end"));
    return m;
}

qrt_err_t *qrt_report_show(qrt_req_t *q)
{
    const char *name = qrt_query(q, "report");
    apr_array_header_t *rows = apr_array_make(q->r->pool, 16, sizeof(rep_row));
    json_t *body, *data, *meta;
    qrt_window_t w;
    rep_scope sc;
    apr_int64_t s, e;
    qrt_err_t *err;
    int type, i;

    for (type = 0; rep_types[type]; type++) {
        if (name && !strcmp(name, rep_types[type])) {
            break;
        }
    }
    if (!rep_types[type]) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "report",
                               name ? "The report parameter must be one of name, type, "
                               "tag, date, browser, city, country."
                               : "The report parameter is required.");
    }
    if ((err = qrt_params_window(q, &w)) != NULL
        || (err = rep_scope_load(q, "trackers", &sc)) != NULL) {
        return err;
    }
    rep_window(&w, &s, &e);
    switch (type) {
    case REP_NAME:
        err = rep_name(q, &sc, s, e, rows);
        break;
    case REP_TYPE:
    case REP_TAG:
        err = rep_tracker_values(q, &sc, type, s, e, rows);
        break;
    case REP_DATE:
        err = rep_date(q, &sc, s, e, w.offset, rows);
        break;
    default:
        err = rep_values(q, &sc, type, s, e, rows);
        break;
    }
    if (err) {
        return err;
    }
    for (i = 0; i < rows->nelts; i++) {
        APR_ARRAY_IDX(rows, i, rep_row).type = type;
    }
    qsort(rows->elts, rows->nelts, sizeof(rep_row), rep_row_cmp);
    data = json_array();
    for (i = 0; i < rows->nelts; i++) {
        json_array_append_new(data, rep_row_json(type, &APR_ARRAY_IDX(rows, i, rep_row)));
    }
    meta = rep_meta(q, &sc);
    json_object_set_new(meta, "report", json_string(rep_types[type]));
    body = json_object();
    json_object_set_new(body, "data", data);
    json_object_set_new(body, "meta", meta);
    return qrt_respond_json(q, HTTP_OK, body);
}

/* ---- the tag crosstab (7) -------------------------------------------------- */

static qrt_err_t *rep_dimension(qrt_req_t *q, const char *name, const char **out)
{
    const char *v = qrt_query(q, name);

    *out = v;
    apr_pool_t *p = q->r->pool;

    if (!v || !*v) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, name, apr_psprintf(p,
                               "The %s parameter (a tag dimension) is required.", name));
    }
    if (strlen(v) > REP_DIM_MAX || qrt_valid_text(v, strlen(v), 0)) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, name, apr_psprintf(p,
                               "The %s parameter must be a tag dimension of at most %d "
                               "bytes of text.", name, REP_DIM_MAX));
    }
    return NULL;
}

static int rep_strcmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The values of dimension dim among t's tags. */
static apr_array_header_t *rep_dim_values(apr_pool_t *p, const qrt_report_tracker_t *t,
                                          const char *dim)
{
    apr_array_header_t *out = apr_array_make(p, 2, sizeof(const char *));
    int i;

    for (i = 0; i < t->tags->nelts; i++) {
        qrt_report_tag_t *g = &APR_ARRAY_IDX(t->tags, i, qrt_report_tag_t);

        if (g->dimension && !strcmp(g->dimension, dim)) {
            APR_ARRAY_PUSH(out, const char *) = g->value;
        }
    }
    return out;
}

/* The sorted distinct values, and value -> index (stored as index + 1). */
static apr_array_header_t *rep_index(apr_pool_t *p, apr_hash_t *set, apr_hash_t *idx)
{
    apr_array_header_t *list = apr_array_make(p, apr_hash_count(set) + 1,
                                              sizeof(const char *));
    apr_hash_index_t *hi;
    int i;

    for (hi = apr_hash_first(p, set); hi; hi = apr_hash_next(hi)) {
        APR_ARRAY_PUSH(list, const char *) = apr_hash_this_key(hi);
    }
    qsort(list->elts, list->nelts, sizeof(const char *), rep_strcmp);
    for (i = 0; i < list->nelts; i++) {
        apr_hash_set(idx, APR_ARRAY_IDX(list, i, const char *), APR_HASH_KEY_STRING,
                     (void *)(apr_uintptr_t)(i + 1));
    }
    return list;
}

/* The index of a value of rep_index. */
static int rep_at(apr_hash_t *idx, apr_array_header_t *list, int i)
{
    return (int)(apr_uintptr_t)apr_hash_get(idx, APR_ARRAY_IDX(list, i, const char *),
                                            APR_HASH_KEY_STRING) - 1;
}

/* The crosstab's body, written as it is made: the matrix (up to REP_XT_MAX squared
 * numbers) never exists as JSON values, only as text in the output filters' buffers
 * (apr_brigade_write passes every ~8 KB down; a body that fits in one buffer still
 * gets its Content-Length). */
typedef struct {
    request_rec *r;
    apr_bucket_brigade *bb;
    apr_status_t rv;
} rep_out;

static void rep_put(rep_out *o, const char *s, apr_size_t n)
{
    if (o->rv == APR_SUCCESS) {
        o->rv = apr_brigade_write(o->bb, ap_filter_flush, o->r->output_filters, s, n);
    }
}

static void rep_puts(rep_out *o, const char *s)
{
    rep_put(o, s, strlen(s));
}

/* A JSON value, compact, then released. */
static void rep_put_json(rep_out *o, json_t *j)
{
    apr_size_t len;
    char *s = qrt_json_dump(o->r->pool, j, &len);

    rep_put(o, s, len);
    json_decref(j);
}

static void rep_put_ints(rep_out *o, const apr_int64_t *v, int n)
{
    char buf[32];
    int i;

    rep_put(o, "[", 1);
    for (i = 0; i < n; i++) {
        apr_size_t len = apr_snprintf(buf, sizeof(buf), "%s%" APR_INT64_T_FMT,
                                      i ? "," : "", v[i]);

        rep_put(o, buf, len);
    }
    rep_put(o, "]", 1);
}

static json_t *rep_str_array(apr_array_header_t *v)
{
    json_t *a = json_array();
    int i;

    for (i = 0; i < v->nelts; i++) {
        json_array_append_new(a, json_string(APR_ARRAY_IDX(v, i, const char *)));
    }
    return a;
}

/* 422 when a dimension has more than REP_XT_MAX values on the covered trackers. */
static qrt_err_t *rep_xt_bound(qrt_req_t *q, const char *row, int nr, const char *col,
                               int nc)
{
    const char *names[2] = { "row", "col" };
    int counts[2], i;
    qrt_err_t *e = NULL;

    counts[0] = nr;
    counts[1] = nc;
    for (i = 0; i < 2; i++) {
        const char *msg;

        if (counts[i] <= REP_XT_MAX) {
            continue;
        }
        msg = apr_psprintf(q->r->pool, "The %s dimension (%s) has %d values on the "
                           "covered trackers; a crosstab allows at most %d values per "
                           "dimension (list fewer trackers with trackers[]).", names[i],
                           i ? col : row, counts[i], REP_XT_MAX);
        if (!e) {
            e = qrt_error(q, HTTP_UNPROCESSABLE_ENTITY, msg);
        }
        qrt_error_add(q, e, names[i], msg);
    }
    if (e) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, q->r, "QRT00200: crosstab refused: "
                      "%d x %d values, at most %d per dimension", nr, nc, REP_XT_MAX);
    }
    return e;
}

qrt_err_t *qrt_report_crosstab(qrt_req_t *q)
{
    request_rec *r = q->r;
    apr_pool_t *p = r->pool;
    apr_hash_t *per, *rset = apr_hash_make(p), *cset = apr_hash_make(p);
    apr_hash_t *ridx = apr_hash_make(p), *cidx = apr_hash_make(p);
    apr_array_header_t *rows, *cols, **rv, **cv;
    apr_int64_t *matrix, *rtot, *ctot, total = 0, s, e;
    const char *row, *col;
    json_t *meta;
    qrt_window_t w;
    rep_scope sc;
    rep_out o;
    qrt_err_t *err;
    char buf[32];
    int i, j, k, nr, nc, n;

    if ((err = rep_dimension(q, "row", &row)) != NULL
        || (err = rep_dimension(q, "col", &col)) != NULL
        || (err = qrt_params_window(q, &w)) != NULL
        || (err = rep_scope_load(q, "trackers", &sc)) != NULL) {
        return err;
    }
    rep_window(&w, &s, &e);
    n = sc.list->nelts;
    rv = apr_pcalloc(p, (n + 1) * sizeof(*rv));
    cv = apr_pcalloc(p, (n + 1) * sizeof(*cv));
    for (i = 0; i < n; i++) {
        qrt_report_tracker_t *t = APR_ARRAY_IDX(sc.list, i, qrt_report_tracker_t *);

        rv[i] = rep_dim_values(p, t, row);
        cv[i] = rep_dim_values(p, t, col);
        if (rv[i]->nelts && cv[i]->nelts) {
            for (j = 0; j < rv[i]->nelts; j++) {
                apr_hash_set(rset, APR_ARRAY_IDX(rv[i], j, const char *),
                             APR_HASH_KEY_STRING, "");
            }
            for (j = 0; j < cv[i]->nelts; j++) {
                apr_hash_set(cset, APR_ARRAY_IDX(cv[i], j, const char *),
                             APR_HASH_KEY_STRING, "");
            }
        }
    }
    /* Bounded before anything is read or allocated in proportion to the matrix. */
    if ((err = rep_xt_bound(q, row, (int)apr_hash_count(rset), col,
                            (int)apr_hash_count(cset))) != NULL) {
        return err;
    }
    if ((err = rep_per_tracker(q, &sc, s, e, 0, &per)) != NULL) {
        return err;
    }
    rows = rep_index(p, rset, ridx);
    cols = rep_index(p, cset, cidx);
    nr = rows->nelts;
    nc = cols->nelts;
    /* At most REP_XT_MAX^2 cells: 2 MB. */
    matrix = apr_pcalloc(p, ((apr_size_t)nr * nc + 1) * sizeof(*matrix));
    rtot = apr_pcalloc(p, (nr + 1) * sizeof(*rtot));
    ctot = apr_pcalloc(p, (nc + 1) * sizeof(*ctot));
    for (i = 0; i < n; i++) {
        qrt_report_tracker_t *t = APR_ARRAY_IDX(sc.list, i, qrt_report_tracker_t *);
        qrt_agg_row_t *x = apr_hash_get(per, &t->id, sizeof(t->id));
        apr_int64_t visits = x ? x->scans + x->clicks : 0;

        if (!rv[i]->nelts || !cv[i]->nelts || !visits) {
            continue;
        }
        total += visits;
        for (j = 0; j < rv[i]->nelts; j++) {
            int ri = rep_at(ridx, rv[i], j);

            rtot[ri] += visits;
            for (k = 0; k < cv[i]->nelts; k++) {
                matrix[(apr_size_t)ri * nc + rep_at(cidx, cv[i], k)] += visits;
            }
        }
        for (k = 0; k < cv[i]->nelts; k++) {
            ctot[rep_at(cidx, cv[i], k)] += visits;
        }
    }
    meta = rep_meta(q, &sc);
    json_object_set_new(meta, "row", json_string(row));
    json_object_set_new(meta, "col", json_string(col));
    r->status = HTTP_OK;
    ap_set_content_type(r, QRT_JSON_TYPE);
    o.r = r;
    o.bb = apr_brigade_create(p, r->connection->bucket_alloc);
    o.rv = APR_SUCCESS;
    rep_puts(&o, "{\"data\":{\"rows\":");
    rep_put_json(&o, rep_str_array(rows));
    rep_puts(&o, ",\"cols\":");
    rep_put_json(&o, rep_str_array(cols));
    rep_puts(&o, ",\"matrix\":[");
    for (i = 0; i < nr; i++) {
        if (i) {
            rep_put(&o, ",", 1);
        }
        rep_put_ints(&o, matrix + (apr_size_t)i * nc, nc);
    }
    rep_puts(&o, "],\"row_totals\":");
    rep_put_ints(&o, rtot, nr);
    rep_puts(&o, ",\"col_totals\":");
    rep_put_ints(&o, ctot, nc);
    apr_snprintf(buf, sizeof(buf), ",\"total\":%" APR_INT64_T_FMT "},\"meta\":", total);
    rep_puts(&o, buf);
    rep_put_json(&o, meta);
    rep_puts(&o, "}");
    if (o.rv == APR_SUCCESS) {
        APR_BRIGADE_INSERT_TAIL(o.bb, apr_bucket_eos_create(o.bb->bucket_alloc));
        o.rv = ap_pass_brigade(r->output_filters, o.bb);
    }
    if (o.rv != APR_SUCCESS) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, o.rv, r, "QRT00201: client went away "
                      "during a crosstab");
    }
    return NULL;
}

/* ---- portfolio KPIs (8) ---------------------------------------------------- */

typedef struct {
    apr_int64_t d0, d1;             /* days, inclusive */
    apr_int64_t scans, clicks, uniques, active;
    apr_hash_t *per;                /* tracker id -> qrt_agg_row_t* */
} dash_period;

static qrt_err_t *dash_day(qrt_req_t *q, const char *name, apr_int64_t *day, int *given)
{
    const char *v = qrt_query(q, name);

    *given = v != NULL;
    if (v && qrt_date_parse_day(v, day) != 0) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, name,
                               apr_psprintf(q->r->pool, "The %s parameter must be a date "
                                            "like 2026-11-20.", name));
    }
    return NULL;
}

static qrt_err_t *dash_period_load(qrt_req_t *q, rep_scope *sc, dash_period *pd)
{
    apr_int64_t s = pd->d0 * QRT_AGG_DAY, e = (pd->d1 + 1) * QRT_AGG_DAY - 1;
    apr_hash_index_t *hi;
    qrt_err_t *err = rep_per_tracker(q, sc, s, e, 0, &pd->per);

    if (err) {
        return err;
    }
    for (hi = apr_hash_first(q->r->pool, pd->per); hi; hi = apr_hash_next(hi)) {
        qrt_agg_row_t *r = apr_hash_this_val(hi);

        pd->scans += r->scans;
        pd->clicks += r->clicks;
        pd->active += r->scans + r->clicks > 0;
    }
    if (sc->agg_ok) {
        apr_array_header_t *all;

        if (qrt_store_agg_window(&q->db, q->r->pool, q->auth.account_id, QRT_AGG_A, NULL, 0,
                                 s, e, 1, &all) != APR_SUCCESS) {
            return rep_store_error(q, "summing account aggregates");
        }
        pd->uniques = all->nelts ? APR_ARRAY_IDX(all, 0, qrt_agg_row_t).uniques : 0;
    }
    else if (pd->scans + pd->clicks > 0 && sc->list->nelts <= QRT_AGG_RAW_IDS) {
        /* A few trackers: COUNT(DISTINCT) over an index, no visit row read. */
        apr_int64_t ids[QRT_AGG_RAW_IDS];
        int i;

        for (i = 0; i < sc->list->nelts; i++) {
            ids[i] = APR_ARRAY_IDX(sc->list, i, qrt_report_tracker_t *)->id;
        }
        if (qrt_store_agg_raw_uniques(&q->db, q->r->pool, ids, sc->list->nelts, s, e,
                                      &pd->uniques) != APR_SUCCESS) {
            return rep_store_error(q, "counting distinct visitors");
        }
    }
    else if (pd->scans + pd->clicks > 0) {
        qrt_agg_groups_t *g;
        qrt_agg_group_t *x;

        if ((err = rep_raw_groups(q, sc, -1, 0, NULL, s, e, &g)) != NULL) {
            return err;
        }
        x = qrt_agg_groups_get(g, "");
        pd->uniques = x ? x->uniques : 0;
    }
    return NULL;
}

static json_t *dash_kpi(apr_int64_t value, apr_int64_t previous, int compare)
{
    json_t *k = json_object();
    double pct;

    json_object_set_new(k, "value", json_integer(value));
    json_object_set_new(k, "previous", compare ? json_integer(previous) : json_null());
    json_object_set_new(k, "change", compare && qrt_agg_change(value, previous, &pct)
                                     ? json_real(pct) : json_null());
    return k;
}

static json_t *dash_dates(apr_int64_t d0, apr_int64_t d1)
{
    json_t *o = json_object();
    char buf[QRT_DAY_LEN];

    qrt_date_format_day(buf, d0);
    json_object_set_new(o, "dateStart", json_string(buf));
    qrt_date_format_day(buf, d1);
    json_object_set_new(o, "dateEnd", json_string(buf));
    return o;
}

typedef struct {
    apr_int64_t id;
    const char *name;
    apr_int64_t scans, clicks;
} dash_top;

static int dash_top_cmp(const void *a, const void *b)
{
    const dash_top *x = a, *y = b;
    apr_int64_t vx = x->scans + x->clicks, vy = y->scans + y->clicks;

    if (vx != vy) {
        return vx > vy ? -1 : 1;
    }
    return x->id < y->id ? -1 : x->id > y->id;
}

qrt_err_t *qrt_dashboard_scans(qrt_req_t *q)
{
    apr_pool_t *p = q->r->pool;
    const char *cmp = qrt_query(q, "compare");
    apr_int64_t today = qrt_agg_fdiv(apr_time_sec(apr_time_now()), QRT_AGG_DAY), len, d;
    apr_int64_t *scans, *clicks;
    apr_array_header_t *daily, *top = apr_array_make(p, 16, sizeof(dash_top));
    dash_period cur, prev;
    json_t *body, *kpis, *days, *tops;
    rep_scope sc;
    qrt_err_t *err;
    int has_start, has_end, compare = 1, i;
    char buf[QRT_DAY_LEN];

    memset(&cur, 0, sizeof(cur));
    memset(&prev, 0, sizeof(prev));
    if ((err = dash_day(q, "dateStart", &cur.d0, &has_start)) != NULL
        || (err = dash_day(q, "dateEnd", &cur.d1, &has_end)) != NULL) {
        return err;
    }
    if (!has_end) {
        cur.d1 = today;
    }
    if (!has_start) {
        cur.d0 = cur.d1 - 29;
    }
    if (cur.d0 > cur.d1) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "dateStart",
                               "The dateStart parameter must not be after dateEnd.");
    }
    len = cur.d1 - cur.d0 + 1;
    if (len > REP_MAX_DAYS) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "dateStart", apr_psprintf(p,
                               "The period may span at most %d days.", REP_MAX_DAYS));
    }
    if (cmp) {
        if (!strcmp(cmp, "0") || !strcasecmp(cmp, "false")) {
            compare = 0;
        }
        else if (strcmp(cmp, "1") && strcasecmp(cmp, "true")) {
            return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "compare",
                                   "The compare parameter must be 0 or 1.");
        }
    }
    if ((err = rep_scope_load(q, "trackers", &sc)) != NULL
        || (err = dash_period_load(q, &sc, &cur)) != NULL) {
        return err;
    }
    prev.d1 = cur.d0 - 1;
    prev.d0 = prev.d1 - len + 1;
    if (compare && (err = dash_period_load(q, &sc, &prev)) != NULL) {
        return err;
    }
    /* Scans and clicks per day, zero days included. */
    scans = apr_pcalloc(p, len * sizeof(*scans));
    clicks = apr_pcalloc(p, len * sizeof(*clicks));
    if (qrt_store_agg_daily(&q->db, p, q->auth.account_id,
                            sc.agg_ok ? QRT_AGG_A : QRT_AGG_T, rep_only(p, &sc),
                            sc.list->nelts, cur.d0, cur.d1, &daily) != APR_SUCCESS) {
        return rep_store_error(q, "reading daily aggregates");
    }
    for (i = 0; i < daily->nelts; i++) {
        qrt_agg_daily_t *x = &APR_ARRAY_IDX(daily, i, qrt_agg_daily_t);

        if (x->day < cur.d0 || x->day > cur.d1
            || (!sc.agg_ok && !apr_hash_get(sc.covered, &x->grp, sizeof(x->grp)))) {
            continue;
        }
        scans[x->day - cur.d0] += x->scans;
        clicks[x->day - cur.d0] += x->clicks;
    }
    days = json_array();
    for (d = 0; d < len; d++) {
        json_t *o = json_object();

        qrt_date_format_day(buf, cur.d0 + d);
        json_object_set_new(o, "date", json_string(buf));
        json_object_set_new(o, "scans", json_integer(scans[d]));
        json_object_set_new(o, "clicks", json_integer(clicks[d]));
        json_array_append_new(days, o);
    }
    /* The busiest trackers of the period. */
    for (i = 0; i < sc.list->nelts; i++) {
        qrt_report_tracker_t *t = APR_ARRAY_IDX(sc.list, i, qrt_report_tracker_t *);
        qrt_agg_row_t *r = apr_hash_get(cur.per, &t->id, sizeof(t->id));

        if (r && r->scans + r->clicks > 0) {
            dash_top *x = apr_array_push(top);

            x->id = t->id;
            x->name = t->name;
            x->scans = r->scans;
            x->clicks = r->clicks;
        }
    }
    qsort(top->elts, top->nelts, sizeof(dash_top), dash_top_cmp);
    tops = json_array();
    for (i = 0; i < top->nelts && i < REP_TOP_TRACKERS; i++) {
        dash_top *x = &APR_ARRAY_IDX(top, i, dash_top);
        json_t *o = json_object();

        json_object_set_new(o, "tracker_id", json_integer(x->id));
        json_object_set_new(o, "name", json_string(x->name));
        json_object_set_new(o, "scans", json_integer(x->scans));
        json_object_set_new(o, "clicks", json_integer(x->clicks));
        json_array_append_new(tops, o);
    }
    kpis = json_object();
    json_object_set_new(kpis, "totalScans", dash_kpi(cur.scans, prev.scans, compare));
    json_object_set_new(kpis, "totalClicks", dash_kpi(cur.clicks, prev.clicks, compare));
    json_object_set_new(kpis, "uniqueVisitors",
                        dash_kpi(cur.uniques, prev.uniques, compare));
    json_object_set_new(kpis, "activeTrackers",
                        dash_kpi(cur.active, prev.active, compare));
    body = json_object();
    json_object_set_new(body, "period", dash_dates(cur.d0, cur.d1));
    json_object_set_new(body, "previousPeriod",
                        compare ? dash_dates(prev.d0, prev.d1) : json_null());
    json_object_set_new(body, "kpis", kpis);
    json_object_set_new(body, "daily", days);
    json_object_set_new(body, "topTrackers", tops);
    return qrt_respond_json(q, HTTP_OK, body);
}
