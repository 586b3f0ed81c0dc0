/* qrt_store_visits_read: visit listings, search, polling and export. */
#include <string.h>
#include <apr_strings.h>
#include "qrt_store_visits_read.h"

/* Search, bounded by the tracker's own data: the text is tested on the strings of
 * the tracker's visits, never on the installation-wide dictionaries as a whole (other
 * accounts' scans fill them). One bound LIKE pattern per searched column, 8 arguments
 * in this order: browser, os, device, user_agent (visit_uas), country, city
 * (visit_places), referer, ip. SQLite's LIKE ignores ASCII case by itself (and its
 * lower() folds nothing more), so its form skips lower(); PostgreSQL's reads the
 * columns' lowercase copies (schema 19: col_lc), and lower() of the addresses (L_IP:
 * their dictionary has none). */
#define VR_NSEARCH 8
/* Each dictionary's entries that hold the text (its 1, 2, 1 or 4 patterns), at most
 * VR_IDS_MAX + 1 of them, read once per request: from the entries the tracker's visits
 * name (_own: the tracker, then the patterns) or from the whole dictionary when it is
 * smaller than the tracker (_all: the patterns), whichever is fewer. */
#define VR_IDS_MAX 10000
/* (an entry of a dictionary, up to 2 KB tested against each pattern, against a
 * visit's index entry: measured with bench_search.py) */
#define VR_OWN_COST 4
/* A tracker's own entries of a dictionary are read by a descent of its index per entry
 * (PostgreSQL: qrt_own_ids, schema 64; SQLite: a recursive statement) for up to one entry
 * per VR_SKIP_PER visits, then the rest of the index in one pass: a descent costs about as
 * much as reading a hundred index entries, so a tracker of many distinct strings pays at
 * most about 40 % more, and one of few pays a few descents. */
#define VR_SKIP_PER 256
/* A pick has a fixed cost that a walk has not (PostgreSQL plans it at each execution, with
 * its union of four index reads): a walk of up to this many rows costs less. */
#define VR_WALK_SMALL 64

/* A read's statement in its three forms: without a search, with a search on SQLite
 * (_s), with a search on PostgreSQL (_ci: its lower-cased columns). */
enum { VR_PLAIN, VR_SQLITE, VR_PGSQL };
static const char *const vr_count[3] = {
    SQL_visits_count, SQL_visits_count_s, SQL_visits_count_ci };
static const char *const vr_first[3] = {
    SQL_visits_first, SQL_visits_first_s, SQL_visits_first_ci };
static const char *const vr_page_forms[3] = {
    SQL_visits_page, SQL_visits_page_s, SQL_visits_page_ci };
static const char *const vr_same[3] = {
    SQL_visits_same, SQL_visits_same_s, SQL_visits_same_ci };

/* The form of a search statement for db's driver. */
static int vr_form(qrt_db_t *db)
{
    return qrt_db_dialect_is(db, QRT_DIALECT_SQLITE) ? VR_SQLITE : VR_PGSQL;
}

static const char *vr_label(qrt_db_t *db, const char *const forms[3],
                            const qrt_visit_filter_t *f)
{
    return f->search ? forms[vr_form(db)] : forms[VR_PLAIN];
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
    const void *v[4 + VR_NSEARCH + 8];   /* a pick: 4 trackers, 8 patterns, 5 more */
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
        v->destination = vr_dup(db, p, row, 14);
    }
    return APR_SUCCESS;
}

static apr_status_t vr_page(qrt_db_t *db, apr_pool_t *p, const qrt_visit_filter_t *f,
                            apr_int64_t offset, apr_int64_t limit, apr_array_header_t *out);

/* A search's entries of each dictionary (0 user agents, 1 places, 2 referers, 3
 * ips) that hold the text and that the tracker's visits may name, each list one
 * argument of the statements that take them; mask: the dictionaries with any; over:
 * 1 when one has more than VR_IDS_MAX (the search then walks the visits); size: the
 * tracker's visits ever recorded; skip: the descents per dictionary before the rest of
 * the tracker's index is read in one pass (VR_SKIP_PER). Read once per request,
 * in the request's pool. */
typedef struct {
    const char *list[4];
    int mask;
    int over;
    apr_int64_t size;
    apr_int64_t skip;
} vr_ids_t;

/* A search's statements of each dictionary: its matched entries among all, among the
 * tracker's own, the visits that name them, each by form (SQLite, PostgreSQL); the
 * total of the tracker's visits that name one entry (PostgreSQL, not the ips). */
static const char *const vr_ids_all[4][2] = {
    { SQL_visits_ids_ua_all_s, SQL_visits_ids_ua_all_ci },
    { SQL_visits_ids_place_all_s, SQL_visits_ids_place_all_ci },
    { SQL_visits_ids_ref_all_s, SQL_visits_ids_ref_all_ci },
    { SQL_visits_ids_ip_all_s, SQL_visits_ids_ip_all_ci } };
static const char *const vr_ids_own[4][2] = {
    { SQL_visits_ids_ua_own_s, SQL_visits_ids_ua_own_ci },
    { SQL_visits_ids_place_own_s, SQL_visits_ids_place_own_ci },
    { SQL_visits_ids_ref_own_s, SQL_visits_ids_ref_own_ci },
    { SQL_visits_ids_ip_own_s, SQL_visits_ids_ip_own_ci } };
static const char *const vr_count_named[4][2] = {
    { SQL_visits_count_ua_s, SQL_visits_count_ua_ci },
    { SQL_visits_count_place_s, SQL_visits_count_place_ci },
    { SQL_visits_count_ref_s, SQL_visits_count_ref_ci },
    { SQL_visits_count_ip_s, SQL_visits_count_ip_ci } };
static const char *const vr_total_named[3] = {
    SQL_visits_total_ua_ci, SQL_visits_total_place_ci, SQL_visits_total_ref_ci };
static const char *const vr_count_pick[2] = { SQL_visits_count_pick_s, SQL_visits_count_pick_ci };
static const char *const vr_page_pick[2] = { SQL_visits_page_pick_s, SQL_visits_page_pick_ci };
static const int vr_per[] = { 4, 2, 1, 1 };

/* Sets ids' lists, mask and over from each dictionary's matched entries. */
static void vr_ids_set(qrt_db_t *db, apr_pool_t *p, apr_array_header_t *const got[4],
                       vr_ids_t *ids)
{
    int d;

    for (d = 0; d < 4; d++) {
        if (got[d]->nelts > VR_IDS_MAX) {
            ids->over = 1;
            return;
        }
        if (got[d]->nelts) {
            ids->mask |= 1 << d;
        }
        ids->list[d] = qrt_db_id_list(db, p, got[d]);
    }
}

/* PostgreSQL's matched entries of all four dictionaries from the tracker's own, in one
 * statement (visits_ids_own4_ci). */
static apr_status_t vr_ids_own4(qrt_db_t *db, apr_pool_t *p, const qrt_visit_filter_t *f,
                                const char *pattern, vr_ids_t *ids)
{
    const void *args[4 * 2 + 4 + 2 + 1 + 1];
    apr_array_header_t *got[4];
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    apr_status_t rv;
    int d, i, n = 0;

    for (d = 0; d < 4; d++) {
        got[d] = apr_array_make(p, 16, sizeof(apr_int64_t));
        args[n++] = &f->tracker_id;
        args[n++] = &ids->skip;
        for (i = 0; i < vr_per[d]; i++) {
            args[n++] = pattern;
        }
    }
    if ((rv = qrt_db_select(db, p, SQL_visits_ids_own4_ci, &res, args)) != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        d = (int)qrt_db_int(db, row, 0, -1);
        if (d >= 0 && d < 4) {
            APR_ARRAY_PUSH(got[d], apr_int64_t) = qrt_db_int(db, row, 1, 0);
        }
    }
    vr_ids_set(db, p, got, ids);
    return APR_SUCCESS;
}

/* Reads f's matched entries into *ids: for each dictionary, from the entries the
 * tracker's visits name (other accounts' strings are never read), or from the whole
 * dictionary when it holds fewer than a VR_OWN_COST-th as many entries as the tracker
 * has visits (a large tracker in an installation of few distinct strings, whose
 * index entries cost more to read than the dictionary's strings): either way no more
 * than the tracker's own data. PostgreSQL reads the tracker's own entries of all four
 * in one statement when it reads them all. */
static apr_status_t vr_ids(qrt_db_t *db, apr_pool_t *p, const qrt_visit_filter_t *f,
                           vr_ids_t *ids)
{
    const char *pattern = qrt_visits_like_pattern(p, f->search);
    const void *targs[] = { &f->tracker_id };
    apr_int64_t dsize[4] = { 0, 0, 0, 0 };
    apr_array_header_t *got[4];
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    apr_status_t rv;
    int own[4], owned = 0, d, i;

    memset(ids, 0, sizeof(*ids));
    if ((rv = qrt_db_select(db, p, SQL_visits_sizes, &res, targs)) != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        ids->size = qrt_db_int(db, row, 0, 0);
        for (d = 0; d < 4; d++) {
            dsize[d] = qrt_db_int(db, row, d + 1, 0);
        }
    }
    for (d = 0; d < 4; d++) {
        owned += own[d] = dsize[d] * VR_OWN_COST > ids->size;
    }
    ids->skip = ids->size / VR_SKIP_PER;
    if (owned == 4 && qrt_db_dialect_is(db, QRT_DIALECT_PGSQL)) {
        return vr_ids_own4(db, p, f, pattern, ids);
    }
    for (d = 0; d < 4; d++) {
        const void *args[2 + 4];
        int n = 0;

        got[d] = apr_array_make(p, 16, sizeof(apr_int64_t));
        if (own[d]) {
            args[n++] = &f->tracker_id;
            args[n++] = &ids->skip;
        }
        for (i = 0; i < vr_per[d]; i++) {
            args[n++] = pattern;
        }
        rv = qrt_db_each(db, p, (own[d] ? vr_ids_own : vr_ids_all)[d][vr_form(db) - 1],
                         args, qrt_db_int_list_row, got[d]);
        if (rv != APR_SUCCESS) {
            return rv;
        }
        if (got[d]->nelts > VR_IDS_MAX) {
            /* (the search walks the visits: the other dictionaries are not read) */
            ids->over = 1;
            return APR_SUCCESS;
        }
    }
    vr_ids_set(db, p, got, ids);
    return APR_SUCCESS;
}

/* The 4 + 4 arguments of a pick (tracker, then each dictionary's ids). */
static void vr_push_picked(vr_args *a, const qrt_visit_filter_t *f, const vr_ids_t *ids)
{
    int d;

    for (d = 0; d < 4; d++) {
        vr_push(a, &f->tracker_id);
        vr_push(a, ids->list[d]);
    }
}

/* PostgreSQL: *whole 1 when f's window holds every visit of the tracker (no bounds,
 * or bounds around its first and last visit), which are then counted along the index
 * of the tracker and entry alone (its entries hold no time: tested, each visit would
 * be read from the table). */
static apr_status_t vr_whole(qrt_db_t *db, apr_pool_t *p, const qrt_visit_filter_t *f,
                             int *whole)
{
    const void *args[] = { &f->tracker_id };
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    apr_int64_t first = 0, last = -1;
    apr_status_t rv;

    *whole = f->start == APR_INT64_MIN && f->end == APR_INT64_MAX;
    if (*whole) {
        return APR_SUCCESS;
    }
    if ((rv = qrt_db_select(db, p, SQL_visits_span, &res, args)) != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        first = qrt_db_int(db, row, 0, 0);
        last = qrt_db_int(db, row, 1, -1);
    }
    *whole = f->start <= first && last <= f->end;
    return APR_SUCCESS;
}

/* The count of a search without since_id, given its matched entries: the tracker's
 * window walked, each visit tested, when they are too many to list; else one
 * dictionary's index when it alone matches (on PostgreSQL, over a window that holds
 * all of the tracker's visits and not its addresses: without the window), else the
 * union of the picks. */
static apr_status_t vr_search_count(qrt_db_t *db, apr_pool_t *p,
                                    const qrt_visit_filter_t *f, const vr_ids_t *ids,
                                    apr_int64_t *total)
{
    const void *args[4];
    vr_args a;
    int d, n = 0;

    *total = 0;
    if (ids->over) {
        a.n = 0;
        vr_push_filter(&a, p, f);
        return qrt_db_select_int(db, p, vr_label(db, vr_count, f), a.v, total);
    }
    if (!ids->mask) {
        return APR_SUCCESS;
    }
    for (d = 0; d < 4; d++) {
        if (ids->mask == 1 << d) {
            args[n++] = &f->tracker_id;
            args[n++] = ids->list[d];
            if (d < 3 && qrt_db_dialect_is(db, QRT_DIALECT_PGSQL)) {
                int whole;
                apr_status_t rv = vr_whole(db, p, f, &whole);

                if (rv != APR_SUCCESS) {
                    return rv;
                }
                if (whole) {
                    return qrt_db_select_int(db, p, vr_total_named[d],
                                             args, total);
                }
            }
            args[n++] = &f->start;
            args[n++] = &f->end;
            return qrt_db_select_int(db, p, vr_count_named[d][vr_form(db) - 1],
                                     args, total);
        }
    }
    a.n = 0;
    vr_push_picked(&a, f, ids);
    vr_push(&a, &f->start);
    vr_push(&a, &f->end);
    return qrt_db_select_int(db, p, vr_count_pick[vr_form(db) - 1],
                  a.v, total);
}

/* A poll (SQLite: schema 14, PostgreSQL: 57): the visits above since_id lie at or
 * after the earliest visit_start of the ids from its bucket up (visit_floor), so a
 * poll is the tracker's window from there, walked in time order, the id tested on
 * each row. *g gets f with its start raised to that floor (past the end when no id
 * is above since_id; left as it is when a bucket up to the highest id is missing:
 * rows that SQL wrote into visit_rows itself, or ids that were rolled back). */
static apr_status_t vr_floor(qrt_db_t *db, apr_pool_t *p, const qrt_visit_filter_t *f,
                             qrt_visit_filter_t *g)
{
    apr_int64_t bucket = f->since_id >> QRT_VISIT_FLOOR_SHIFT;
    apr_int64_t buckets = 0, floor = 0, last = 0;
    const void *args[] = { &bucket };
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    apr_status_t rv;

    *g = *f;
    if (f->since_id <= 0) {
        return APR_SUCCESS;
    }
    rv = qrt_db_select(db, p, SQL_visits_floor, &res, args);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        buckets = qrt_db_int(db, row, 0, 0);
        floor = qrt_db_int(db, row, 1, 0);
        last = qrt_db_int(db, row, 2, 0);
    }
    if (last <= f->since_id) {
        g->start = APR_INT64_MAX;
        g->end = APR_INT64_MIN;
    }
    else if (buckets == (last >> QRT_VISIT_FLOOR_SHIFT) - bucket + 1 && floor > f->start) {
        g->start = floor;
    }
    return APR_SUCCESS;
}

apr_status_t qrt_store_visits_count(qrt_db_t *db, apr_pool_t *p,
                                    const qrt_visit_filter_t *f, apr_int64_t *total)
{
    qrt_visit_filter_t g;
    vr_ids_t ids;
    vr_args a;
    apr_status_t rv;

    if (f->search && f->since_id <= 0) {
        if (f->matched && *f->matched >= 0) {
            *total = *f->matched;
            return APR_SUCCESS;
        }
        *total = 0;
        rv = vr_ids(db, p, f, &ids);
        if (rv == APR_SUCCESS) {
            rv = vr_search_count(db, p, f, &ids, total);
        }
        if (rv == APR_SUCCESS && f->matched) {
            *f->matched = *total;
        }
        return rv;
    }
    if ((rv = vr_floor(db, p, f, &g)) != APR_SUCCESS) {
        return rv;
    }
    a.n = 0;
    vr_push_filter(&a, p, &g);
    return qrt_db_select_int(db, p, vr_label(db, vr_count, &g), a.v, total);
}

/* A search's page without since_id: nothing when no entry matches; else, knowing
 * how many visits match, either the walk along the time index testing each visit
 * (when matches are dense enough that the page is near: a common word, or entries
 * too many to list), or the matches picked through the dictionaries' indexes and
 * sorted (a rare value, or a page deep down). */
static apr_status_t vr_search_page(qrt_db_t *db, apr_pool_t *p,
                                   const qrt_visit_filter_t *f, apr_int64_t offset,
                                   apr_int64_t limit, apr_array_header_t *out)
{
    apr_int64_t total = -1, size;
    double walked;
    vr_ids_t ids;
    vr_args a;
    apr_status_t rv;

    rv = vr_ids(db, p, f, &ids);
    if (rv == APR_SUCCESS) {
        rv = vr_search_count(db, p, f, &ids, &total);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (f->matched) {
        *f->matched = total;
    }
    if (total <= offset || limit <= 0) {
        return APR_SUCCESS;
    }
    size = ids.size < total ? total : ids.size;
    a.n = 0;
    /* Rows walked, (offset + limit) * size / total and at most the tracker's size, against
     * total picked and sorted. */
    walked = (double)(offset + limit) * (double)size / (double)total;
    if (walked > (double)size) {
        walked = (double)size;
    }
    if (ids.over || walked <= 2.0 * (double)total || walked <= VR_WALK_SMALL) {
        return vr_page(db, p, f, offset, limit, out);
    }
    vr_push_picked(&a, f, &ids);
    vr_push(&a, &f->start);
    vr_push(&a, &f->end);
    vr_push(&a, &limit);
    vr_push(&a, &offset);
    return vr_read(db, p, vr_page_pick[vr_form(db) - 1], a.v,
                   out);
}

/* One page by offset into out, along the time index. */
static apr_status_t vr_page(qrt_db_t *db, apr_pool_t *p, const qrt_visit_filter_t *f,
                            apr_int64_t offset, apr_int64_t limit, apr_array_header_t *out)
{
    vr_args a;

    a.n = 0;
    vr_push_filter(&a, p, f);
    vr_push(&a, &limit);
    vr_push(&a, &offset);
    return vr_read(db, p, vr_label(db, offset == 0 ? vr_first : vr_page_forms, f), a.v, out);
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
    qrt_visit_filter_t g;
    apr_status_t rv;

    *out = vr_array(p, limit);
    if (f->search && f->since_id <= 0) {
        return vr_search_page(db, p, f, offset, limit, *out);
    }
    if ((rv = vr_floor(db, p, f, &g)) != APR_SUCCESS) {
        return rv;
    }
    return vr_page(db, p, &g, offset, limit, *out);
}

apr_status_t qrt_store_visits_after(qrt_db_t *db, apr_pool_t *p,
                                    const qrt_visit_filter_t *f, apr_int64_t after_start,
                                    apr_int64_t after_id, apr_int64_t limit,
                                    apr_array_header_t **out)
{
    qrt_visit_filter_t g, older;
    apr_int64_t rest;
    vr_args a;
    apr_status_t rv;

    *out = vr_array(p, limit);
    if (limit <= 0) {
        return APR_SUCCESS;
    }
    /* (since_id: the window from the floor of its ids) */
    if ((rv = vr_floor(db, p, f, &g)) != APR_SUCCESS) {
        return rv;
    }
    f = &g;
    older = g;
    /* Always along the time index: each chunk starts where the last one ended, so
     * the whole export reads the index once, since_id or not. */
    if (after_id <= 0) {
        return vr_page(db, p, f, 0, limit, *out);
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
        rv = vr_read(db, p, vr_label(db, vr_same, f), a.v, *out);
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
    return vr_page(db, p, &older, 0, rest, *out);
}

apr_status_t qrt_store_visits_max_id(qrt_db_t *db, apr_pool_t *p, apr_int64_t tracker_id,
                                     apr_int64_t *max_id)
{
    const void *args[] = { &tracker_id };

    return qrt_db_select_int(db, p, SQL_visits_max_id, args, max_id);
}

/* ---- where visits went (schema 25) ------------------------------------------------ */

/* Visits read per query of qrt_store_visits_destinations. */
#define VR_DEST_PAGE 5000

typedef struct {
    apr_int64_t last_t, last_id;
    long n;
    qrt_visit_dest_fn *fn;
    void *ctx;
} vr_dest_ctx;

static apr_status_t vr_dest_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    vr_dest_ctx *c = ctx;

    c->last_t = qrt_db_int(db, row, 0, 0);
    c->last_id = qrt_db_int(db, row, 1, 0);
    c->n++;
    c->fn(c->ctx, qrt_db_int(db, row, 2, 0), qrt_db_int(db, row, 3, 0) != 0,
          qrt_db_int(db, row, 4, 0));
    return APR_SUCCESS;
}

apr_status_t qrt_store_visits_destinations(qrt_db_t *db, apr_pool_t *p,
                                           apr_int64_t tracker_id, apr_int64_t s,
                                           apr_int64_t e, qrt_visit_dest_fn *fn, void *ctx)
{
    apr_int64_t limit = VR_DEST_PAGE, from = s;
    apr_status_t rv = APR_SUCCESS;
    apr_pool_t *pp;
    vr_dest_ctx c;

    memset(&c, 0, sizeof(c));
    c.fn = fn;
    c.ctx = ctx;
    c.last_t = s;
    c.last_id = -1;             /* every id at visit_start == s */
    apr_pool_create(&pp, p);
    for (;;) {
        const void *args[] = { &tracker_id, &from, &e, &c.last_t, &c.last_id, &limit };
        long before = c.n;

        rv = qrt_db_each(db, pp, SQL_visits_dest_page, args, vr_dest_row, &c);
        apr_pool_clear(pp);
        if (rv != APR_SUCCESS || c.n - before < limit) {
            break;
        }
        from = c.last_t;
    }
    apr_pool_destroy(pp);
    return rv;
}

#define QRT_VISITS_DEST_IDS 64      /* trackers a statement of report_dest_trackers takes */

typedef struct {
    qrt_visit_dest_fn *fn;
    void *ctx;
    apr_int64_t n;
} vr_tdest_ctx;

static apr_status_t vr_tdest_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    vr_tdest_ctx *c = ctx;

    c->n++;
    c->fn(c->ctx, qrt_db_int(db, row, 0, 0), qrt_db_int(db, row, 1, 0) != 0,
          qrt_db_int(db, row, 2, 0));
    return APR_SUCCESS;
}

apr_status_t qrt_store_visits_trackers_dests(qrt_db_t *db, apr_pool_t *p,
                                            const apr_int64_t *ids, int n, apr_int64_t s,
                                            apr_int64_t e, apr_int64_t most,
                                            qrt_visit_dest_fn *fn, void *ctx,
                                            apr_int64_t *count)
{
    apr_int64_t slot[QRT_VISITS_DEST_IDS], limit;
    const void *args[QRT_VISITS_DEST_IDS + 3];
    vr_tdest_ctx c = { fn, ctx, 0 };
    apr_status_t rv = APR_SUCCESS;
    int i, k;

    /* up to QRT_VISITS_DEST_IDS trackers a statement, the others' slots 0 (no tracker) */
    for (k = 0; k < n && rv == APR_SUCCESS && c.n <= most; k += QRT_VISITS_DEST_IDS) {
        for (i = 0; i < QRT_VISITS_DEST_IDS; i++) {
            slot[i] = k + i < n ? ids[k + i] : 0;
            args[i] = &slot[i];
        }
        limit = most - c.n + 1;
        args[QRT_VISITS_DEST_IDS] = &s;
        args[QRT_VISITS_DEST_IDS + 1] = &e;
        args[QRT_VISITS_DEST_IDS + 2] = &limit;
        rv = qrt_db_each(db, p, SQL_report_dest_trackers, args, vr_tdest_row, &c);
    }
    *count = c.n;
    return rv;
}

apr_status_t qrt_store_visits_visitor_rest(qrt_db_t *db, apr_pool_t *p, apr_int64_t visitor,
                                           apr_int64_t s, apr_int64_t e,
                                           apr_array_header_t **trackers)
{
    const void *args[] = { &visitor, &s, &e };

    *trackers = apr_array_make(p, 4, sizeof(apr_int64_t));
    return qrt_db_each(db, p, SQL_report_dest_visitor_rest, args, qrt_db_int_list_row,
                       *trackers);
}

apr_status_t qrt_store_visits_destination_url(qrt_db_t *db, apr_pool_t *p, apr_int64_t id,
                                              const char **url)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *args[] = { &id };
    apr_status_t rv = qrt_db_select(db, p, SQL_visits_dest_url, &res, args);

    *url = NULL;
    if (rv != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        if (!*url) {
            *url = vr_dup(db, p, row, 0);
        }
    }
    return APR_SUCCESS;
}

static apr_status_t vr_dest_group_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    qrt_visit_dest_group_t *g = apr_array_push(ctx);

    g->dest_id = qrt_db_int(db, row, 0, 0);
    g->scans = qrt_db_int(db, row, 1, 0);
    g->clicks = qrt_db_int(db, row, 2, 0);
    g->uniques = qrt_db_int(db, row, 3, 0);
    return APR_SUCCESS;
}

apr_status_t qrt_store_visits_dest_groups(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                          apr_int64_t s, apr_int64_t e,
                                          apr_array_header_t **groups, apr_int64_t *only)
{
    const void *args[] = { &s, &e, &account_id, &s, &e, &account_id };
    apr_status_t rv;

    *groups = apr_array_make(p, 8, sizeof(qrt_visit_dest_group_t));
    *only = 0;
    rv = qrt_db_each(db, p, SQL_report_dest_groups, args, vr_dest_group_row, *groups);
    if (rv != APR_SUCCESS || (*groups)->nelts == 0) {
        return rv;
    }
    return qrt_db_select_int(db, p, SQL_report_dest_only_visitors, args, only);
}
