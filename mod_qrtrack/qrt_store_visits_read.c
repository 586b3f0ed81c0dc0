/* qrt_store_visits_read: visit listings, search, polling and export. */
#include <string.h>
#include <apr_strings.h>
#include "qrt_store_visits_read.h"

#define VR_COLS "v.id, v.tracker_id, v.visit_start, " \
    "CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END, i.ip, g.country, g.city, " \
    "u.browser, u.browser_version, u.os, u.device, r.referer, u.user_agent, v.bot"
/* A visit row with its dictionaries' strings (schema 7). */
#define VR_FROM " FROM visit_rows v LEFT JOIN visit_ips i ON i.id = v.ip_id " \
    "LEFT JOIN visit_places g ON g.id = v.place_id LEFT JOIN visit_uas u ON " \
    "u.id = v.ua_id LEFT JOIN visit_referers r ON r.id = v.ref_id"

/* tracker, window and since_id: 4 arguments, the first three bounds of (tracker_id,
 * visit_start), which also gives the order without a sort (the '+' keeps SQLite off
 * the id index, which would read the whole tracker). */
#define VR_FILTER "v.tracker_id = %lld AND v.visit_start >= %lld " \
                  "AND v.visit_start <= %lld AND +v.id > %lld"
#define VR_ORDER " ORDER BY v.visit_start DESC, v.id DESC"
/* PostgreSQL's polls (since_id > 0) want the few visits above an id: they take the
 * id range of visits_tracker_id and sort those. (SQLite's walk the time order from
 * the floor of their ids: vr_floor.) */
#define VR_SINCE "v.tracker_id = %lld AND +v.visit_start >= %lld " \
                 "AND +v.visit_start <= %lld AND v.id > %lld"
#define VR_ORDER_SINCE " ORDER BY +v.visit_start DESC, +v.id DESC"
/* Visits of one second below an id: (tracker_id, visit_start, id) is a seek. */
#define VR_SAME "v.tracker_id = %lld AND v.visit_start = %lld AND v.id > %lld " \
                "AND v.id < %lld"

/* Search, bounded by the tracker's own data: the text is tested on the strings of
 * the tracker's visits, never on the installation-wide dictionaries as a whole (other
 * accounts' scans fill them). One bound LIKE pattern per searched column, 8 arguments
 * in this order: browser, os, device, user_agent (visit_uas), country, city
 * (visit_places), referer, ip. SQLite's LIKE ignores ASCII case by itself (and its
 * lower() folds nothing more), so its form skips lower(); PostgreSQL's reads the
 * columns' lowercase copies (schema 19: col_lc), and lower() of the addresses (L_IP:
 * their dictionary has none). */
#define VR_NSEARCH 8
#define VR_LIKE_S(col) col " LIKE %s ESCAPE '\\'"
#define VR_LIKE_S_IP(col) VR_LIKE_S(col)
#define VR_LIKE_CI(col) col "_lc LIKE %s ESCAPE '\\'"
#define VR_LIKE_CI_IP(col) "lower(" col ") LIKE %s ESCAPE '\\'"
/* Each dictionary's entries that hold the text (its 1, 2, 1 or 4 patterns), at most
 * VR_IDS_MAX + 1 of them, read once per request: from the entries the tracker's visits
 * name (_own: the tracker, then the patterns) or from the whole dictionary when it is
 * smaller than the tracker (_all: the patterns), whichever is fewer. */
#define VR_IDS_MAX 10000
/* (the cost of an entry of a dictionary, up to 2 KB tested against each pattern,
 * in visits' index entries; bench/bench_search.py checks the balance) */
#define VR_OWN_COST 4
#define VR_IDS_LIMIT " LIMIT 10001"
#define VR_D_UA(L) L("browser") " OR " L("os") " OR " L("device") " OR " L("user_agent")
#define VR_D_PLACE(L) L("country") " OR " L("city")
#define VR_D_REF(L) L("referer")
#define VR_D_IP(L) L##_IP("ip")
#define VR_IDS_ALL(T, D) "SELECT id FROM " T " WHERE " D VR_IDS_LIMIT
#define VR_IDS_OWN(T, col, D) "SELECT id FROM " T " WHERE id IN (SELECT " col " FROM " \
    "visit_rows WHERE tracker_id = %lld AND " col " IS NOT NULL) AND (" D ")" VR_IDS_LIMIT
/* PostgreSQL tests an entry by a scalar subquery on its key, which it runs for each
 * row (a join, IN or EXISTS it may plan as the whole dictionary scanned and hashed:
 * everyone's strings). The tracker's entries of user agents, places and referers are
 * its keys of visit_dict_counts (schema 19), its addresses those its visits name. */
#define VR_ONE_PG(T, key, D) "(SELECT " D " FROM " T " x WHERE x.id = " key ")"
#define VR_IDS_OWN_PG(T, d, D) "SELECT k.id FROM visit_dict_counts k WHERE k.tracker_id " \
    "= %lld AND k.d = " d " AND " VR_ONE_PG(T, "k.id", D) VR_IDS_LIMIT
#define VR_IDS_OWN_IP_PG "SELECT k.id FROM (SELECT DISTINCT ip_id AS id FROM visit_rows " \
    "WHERE tracker_id = %lld AND ip_id IS NOT NULL) k WHERE " \
    VR_ONE_PG("visit_ips", "k.id", VR_D_IP(VR_LIKE_CI)) VR_IDS_LIMIT
/* The matched ids travel as one text argument: a JSON array to SQLite, an array
 * literal to PostgreSQL. */
#define VR_IN_S(col) col " IN (SELECT value FROM json_each(%s))"
#define VR_IN_CI(col) col " = ANY (CAST(%s AS BIGINT[]))"
/* Walking the visits (time or id order) and testing each on its own strings (the
 * dictionaries joined as the rows are read: VR_FROM). */
#define VR_SEARCH(L) " AND (" L("u.browser") " OR " L("u.os") " OR " L("u.device") \
    " OR " L("u.user_agent") " OR " L("g.country") " OR " L("g.city") " OR " \
    L("r.referer") " OR " L##_IP("i.ip") ")"
#define VR_S  VR_SEARCH(VR_LIKE_S)
/* (PostgreSQL: each dictionary's entry of the row by its key, VR_ONE_PG) */
#define VR_CI " AND (" VR_ONE_PG("visit_uas", "v.ua_id", VR_D_UA(VR_LIKE_CI)) " OR " \
    VR_ONE_PG("visit_places", "v.place_id", VR_D_PLACE(VR_LIKE_CI)) " OR " \
    VR_ONE_PG("visit_referers", "v.ref_id", VR_D_REF(VR_LIKE_CI)) " OR " \
    VR_ONE_PG("visit_ips", "v.ip_id", VR_D_IP(VR_LIKE_CI)) ")"
/* Picking the matched visits through the indexes visits_ua, visits_place,
 * visits_ref, visits_ip (tracker, then the dictionary's ids: tracker before each). */
#define VR_UNION(K, U, IN) "SELECT " K " FROM visit_rows v WHERE tracker_id = %lld AND " \
    IN("ua_id") " " U " SELECT " K " FROM visit_rows v WHERE tracker_id = " \
    "%lld AND " IN("place_id") " " U " SELECT " K " FROM visit_rows v WHERE " \
    "tracker_id = %lld AND " IN("ref_id") " " U " SELECT " K " FROM " \
    "visit_rows v WHERE tracker_id = %lld AND " IN("ip_id")
/* A visit found again from an index: by its key in SQLite's table (schema 11: WITHOUT
 * ROWID, key (tracker_id, visit_start, id), which every index ends with), by its id in
 * PostgreSQL's. SQLite gets the matched keys as a table (UNION: once each) and reads
 * the rows by key; an IN list would draw it to walking the table in order. */
#define VR_KEY "v.tracker_id, v.visit_start, v.id"
#define VR_KEY_PG "v.id"
#define VR_PICKED_PG(IN) "v.id IN (" VR_UNION("v.id", "UNION ALL", IN) ")"
#define VR_PICKS(IN) "(" VR_UNION(VR_KEY, "UNION", IN) ") m"
#define VR_PICK_ROWS " CROSS JOIN visit_rows v ON v.tracker_id = m.tracker_id AND " \
    "v.visit_start = m.visit_start AND v.id = m.id LEFT JOIN visit_ips i ON i.id = " \
    "v.ip_id LEFT JOIN visit_places g ON g.id = v.place_id LEFT JOIN visit_uas u ON " \
    "u.id = v.ua_id LEFT JOIN visit_referers r ON r.id = v.ref_id"
/* (The '+'s: the window must not pass to v.visit_start, which would make SQLite walk
 * the tracker's window for each match instead of seeking its key.) */
#define VR_PICK_WINDOW_M " WHERE +m.visit_start >= %lld AND +m.visit_start <= %lld"
/* (Searches with since_id > 0 walk the ids: no id bound here, which would draw
 * SQLite to the id index.) */
#define VR_PICK_WINDOW " AND v.visit_start >= %lld AND v.visit_start <= %lld"
/* The count when one dictionary alone matches: its index alone (tracker, the
 * dictionary's ids, window). */
#define VR_COUNT1(col, IN) "SELECT COUNT(*) FROM visit_rows WHERE tracker_id = %lld AND " \
    IN(col) " AND visit_start >= %lld AND visit_start <= %lld"
/* PostgreSQL (schema 19), the window unbounded: the sum of the matched entries'
 * visit counts of the tracker (d: 1 user agents, 2 places, 3 referers). */
#define VR_TOTAL1(d) "SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM visit_dict_counts " \
    "WHERE tracker_id = %lld AND d = " d " AND " VR_IN_CI("id")
/* The tracker's size (its visits ever recorded) and each dictionary's (its highest
 * id): which way its matched entries are read. */
#define VR_SIZES "SELECT (SELECT total_scans + total_clicks + total_bots FROM trackers " \
    "WHERE id = %lld), (SELECT COALESCE(MAX(id), 0) FROM visit_uas), (SELECT " \
    "COALESCE(MAX(id), 0) FROM visit_places), (SELECT COALESCE(MAX(id), 0) FROM " \
    "visit_referers), (SELECT COALESCE(MAX(id), 0) FROM visit_ips)"

#define VR_SELECT "SELECT " VR_COLS VR_FROM " WHERE "
#define VR_COUNT "SELECT COUNT(*) FROM visit_rows v WHERE "
/* (a search's count tests each row's strings: with them) */
#define VR_COUNT_J "SELECT COUNT(*)" VR_FROM " WHERE "
#define VR_LIMIT " LIMIT %lld OFFSET %lld"
/* A page: its ids first (without a search, the rows it skips are read from the index
 * alone, with no dictionary looked up), then their rows with their strings. */
#define VR_PAGE_K(K, from, where, order) "SELECT " VR_COLS VR_FROM " WHERE (" K ") IN " \
    "(SELECT " K from " WHERE " where order VR_LIMIT ")" order
#define VR_PAGE(where, order) VR_PAGE_K(VR_KEY, " FROM visit_rows v", where, order)
#define VR_PAGE_PG(where, order) VR_PAGE_K(VR_KEY_PG, " FROM visit_rows v", where, order)
#define VR_PAGE_J(where, order) VR_PAGE_K(VR_KEY, VR_FROM, where, order)
#define VR_PAGE_PG_J(where, order) VR_PAGE_K(VR_KEY_PG, VR_FROM, where, order)

/* Each query in up to three forms: label, label_s (search, SQLite), and label_ci
 * (search, PostgreSQL: in the table below, as they read its dictionaries' lowercase
 * columns). */
const qrt_stmt_t qrt_store_visits_read_stmts[] = {
    { "qrt_visits_count",          VR_COUNT VR_FILTER },
    /* (a search's count in a window walked: SQLite's polls, from their floor, and
     * searches that match too many entries of the tracker to list them) */
    { "qrt_visits_count_s",        VR_COUNT_J VR_FILTER VR_S },
    /* The first rows (offset 0: the first page, each chunk of an export): along
     * the index with their strings, no ids first and no sort. */
    { "qrt_visits_first",          VR_SELECT VR_FILTER VR_ORDER VR_LIMIT },
    { "qrt_visits_first_s",        VR_SELECT VR_FILTER VR_S VR_ORDER VR_LIMIT },
    { "qrt_visits_page",           VR_PAGE(VR_FILTER, VR_ORDER) },
    { "qrt_visits_page_s",         VR_PAGE_J(VR_FILTER VR_S, VR_ORDER) },
    /* SQLite (schema 14): the earliest visit_start of the ids from a bucket up, how
     * many buckets say so, and the highest id handed out */
    { "qrt_visits_floor",
      "SELECT COUNT(*), COALESCE(MIN(min_start), 0), (SELECT last FROM visit_seq) "
      "FROM visit_floor WHERE bucket >= %lld" },
    { "qrt_visits_same",           VR_SELECT VR_SAME " ORDER BY v.id DESC LIMIT %lld" },
    { "qrt_visits_same_s",         VR_SELECT VR_SAME VR_S " ORDER BY v.id DESC LIMIT %lld" },
    /* (SQLite, schema 14: kept by the writer and the view's triggers) */
    { "qrt_visits_max_id",
      "SELECT last_visit_id FROM trackers WHERE id = %lld" },
    /* search without since_id: the matched entries, then the visits that name them */
    { "qrt_visits_sizes",          VR_SIZES },
    { "qrt_visits_ids_ua_all_s",   VR_IDS_ALL("visit_uas", VR_D_UA(VR_LIKE_S)) },
    { "qrt_visits_ids_place_all_s", VR_IDS_ALL("visit_places", VR_D_PLACE(VR_LIKE_S)) },
    { "qrt_visits_ids_ref_all_s",  VR_IDS_ALL("visit_referers", VR_D_REF(VR_LIKE_S)) },
    { "qrt_visits_ids_ip_all_s",   VR_IDS_ALL("visit_ips", VR_D_IP(VR_LIKE_S)) },
    { "qrt_visits_ids_ua_own_s",   VR_IDS_OWN("visit_uas", "ua_id", VR_D_UA(VR_LIKE_S)) },
    { "qrt_visits_ids_place_own_s",
      VR_IDS_OWN("visit_places", "place_id", VR_D_PLACE(VR_LIKE_S)) },
    { "qrt_visits_ids_ref_own_s",
      VR_IDS_OWN("visit_referers", "ref_id", VR_D_REF(VR_LIKE_S)) },
    { "qrt_visits_ids_ip_own_s",   VR_IDS_OWN("visit_ips", "ip_id", VR_D_IP(VR_LIKE_S)) },
    { "qrt_visits_count_ua_s",     VR_COUNT1("ua_id", VR_IN_S) },
    { "qrt_visits_count_place_s",  VR_COUNT1("place_id", VR_IN_S) },
    { "qrt_visits_count_ref_s",    VR_COUNT1("ref_id", VR_IN_S) },
    { "qrt_visits_count_ip_s",     VR_COUNT1("ip_id", VR_IN_S) },
    { "qrt_visits_count_pick_s",
      "SELECT COUNT(*) FROM " VR_PICKS(VR_IN_S) VR_PICK_WINDOW_M },
    { "qrt_visits_page_pick_s",
      "SELECT " VR_COLS " FROM " VR_PICKS(VR_IN_S) VR_PICK_ROWS VR_PICK_WINDOW_M
      VR_ORDER VR_LIMIT },
    { NULL, NULL }
};

/* PostgreSQL's forms of the statements that find visits again by their id, and its own. */
const qrt_stmt_t qrt_store_visits_read_pgsql[] = {
    { "qrt_visits_page",           VR_PAGE_PG(VR_FILTER, VR_ORDER) },
    { "qrt_visits_page_s",         VR_PAGE_PG_J(VR_FILTER VR_S, VR_ORDER) },
    { "qrt_visits_page_ci",        VR_PAGE_PG(VR_FILTER VR_CI, VR_ORDER) },
    /* Polls by the id index visits_tracker_id (SQLite's take the floor instead) */
    { "qrt_visits_since_count",    VR_COUNT VR_SINCE },
    { "qrt_visits_since_count_ci", VR_COUNT VR_SINCE VR_CI },
    { "qrt_visits_since_page",     VR_PAGE_PG(VR_SINCE, VR_ORDER_SINCE) },
    { "qrt_visits_since_page_ci",  VR_PAGE_PG(VR_SINCE VR_CI, VR_ORDER_SINCE) },
    { "qrt_visits_max_id",
      "SELECT MAX(id) FROM visit_rows WHERE tracker_id = %lld" },
    /* (SQLite's alone: PostgreSQL's polls take visits_tracker_id) */
    { "qrt_visits_floor",          "SELECT 0, 0, %lld" },
    /* the time of a tracker's first and last visit (two probes of
     * visits_tracker_visitor), -1 for the last when it has none */
    { "qrt_visits_span",
      "SELECT COALESCE(MIN(visit_start), 0), COALESCE(MAX(visit_start), -1) "
      "FROM visit_rows WHERE tracker_id = %lld" },
    { "qrt_visits_total_ua_ci",    VR_TOTAL1("1") },
    { "qrt_visits_total_place_ci", VR_TOTAL1("2") },
    { "qrt_visits_total_ref_ci",   VR_TOTAL1("3") },
    /* (SQLite's forms read a JSON array: these are prepared here too, as arrays) */
    { "qrt_visits_count_ua_s",     VR_COUNT1("ua_id", VR_IN_CI) },
    { "qrt_visits_count_place_s",  VR_COUNT1("place_id", VR_IN_CI) },
    { "qrt_visits_count_ref_s",    VR_COUNT1("ref_id", VR_IN_CI) },
    { "qrt_visits_count_ip_s",     VR_COUNT1("ip_id", VR_IN_CI) },
    { "qrt_visits_count_pick_s",   VR_COUNT VR_PICKED_PG(VR_IN_CI) VR_PICK_WINDOW },
    { "qrt_visits_page_pick_s",
      VR_SELECT VR_PICKED_PG(VR_IN_CI) VR_PICK_WINDOW VR_ORDER VR_LIMIT },
    { "qrt_visits_count_pick_ci",  VR_COUNT VR_PICKED_PG(VR_IN_CI) VR_PICK_WINDOW },
    { "qrt_visits_page_pick_ci",
      VR_SELECT VR_PICKED_PG(VR_IN_CI) VR_PICK_WINDOW VR_ORDER VR_LIMIT },
    /* the search forms (SQLite has its _s forms) */
    { "qrt_visits_count_ci",       VR_COUNT VR_FILTER VR_CI },
    { "qrt_visits_first_ci",       VR_SELECT VR_FILTER VR_CI VR_ORDER VR_LIMIT },
    { "qrt_visits_same_ci",        VR_SELECT VR_SAME VR_CI " ORDER BY v.id DESC LIMIT %lld" },
    { "qrt_visits_ids_ua_all_ci",  VR_IDS_ALL("visit_uas", VR_D_UA(VR_LIKE_CI)) },
    { "qrt_visits_ids_place_all_ci", VR_IDS_ALL("visit_places", VR_D_PLACE(VR_LIKE_CI)) },
    { "qrt_visits_ids_ref_all_ci", VR_IDS_ALL("visit_referers", VR_D_REF(VR_LIKE_CI)) },
    { "qrt_visits_ids_ip_all_ci",  VR_IDS_ALL("visit_ips", VR_D_IP(VR_LIKE_CI)) },
    { "qrt_visits_ids_ua_own_ci",
      VR_IDS_OWN_PG("visit_uas", "1", VR_D_UA(VR_LIKE_CI)) },
    { "qrt_visits_ids_place_own_ci",
      VR_IDS_OWN_PG("visit_places", "2", VR_D_PLACE(VR_LIKE_CI)) },
    { "qrt_visits_ids_ref_own_ci",
      VR_IDS_OWN_PG("visit_referers", "3", VR_D_REF(VR_LIKE_CI)) },
    { "qrt_visits_ids_ip_own_ci",  VR_IDS_OWN_IP_PG },
    { "qrt_visits_count_ua_ci",    VR_COUNT1("ua_id", VR_IN_CI) },
    { "qrt_visits_count_place_ci", VR_COUNT1("place_id", VR_IN_CI) },
    { "qrt_visits_count_ref_ci",   VR_COUNT1("ref_id", VR_IN_CI) },
    { "qrt_visits_count_ip_ci",    VR_COUNT1("ip_id", VR_IN_CI) },
    { NULL, NULL }
};

/* The label of a query in the form that f and the driver need. */
static const char *vr_label(qrt_db_t *db, apr_pool_t *p, const char *base,
                            const qrt_visit_filter_t *f)
{
    if (!f->search) {
        return base;
    }
    return apr_pstrcat(p, base, qrt_db_dialect_is(db, QRT_DIALECT_SQLITE) ? "_s" : "_ci",
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
    }
    return APR_SUCCESS;
}

static apr_status_t vr_page(qrt_db_t *db, apr_pool_t *p, const qrt_visit_filter_t *f,
                            int since, apr_int64_t offset, apr_int64_t limit,
                            apr_array_header_t *out);

/* The form suffix of a search statement for db's driver. */
static const char *vr_form(qrt_db_t *db)
{
    return qrt_db_dialect_is(db, QRT_DIALECT_SQLITE) ? "_s" : "_ci";
}

/* A search's entries of each dictionary (0 user agents, 1 places, 2 referers, 3
 * ips) that hold the text and that the tracker's visits may name, each list one
 * argument of the statements that take them; mask: the dictionaries with any; over:
 * 1 when one has more than VR_IDS_MAX (the search then walks the visits); size: the
 * tracker's visits ever recorded. Read once per request, in the request's pool. */
typedef struct {
    const char *list[4];
    int mask;
    int over;
    apr_int64_t size;
} vr_ids_t;

static const char *const vr_dict[] = { "ua", "place", "ref", "ip" };
static const int vr_per[] = { 4, 2, 1, 1 };

/* The list of n ids for db's driver: "[1,2]" to SQLite's json_each, "{1,2}" to
 * PostgreSQL. */
static const char *vr_list(qrt_db_t *db, apr_pool_t *p, const apr_array_header_t *ids)
{
    apr_array_header_t *t = apr_array_make(p, ids->nelts ? ids->nelts : 1,
                                           sizeof(const char *));
    int pg = qrt_db_dialect_is(db, QRT_DIALECT_PGSQL), i;

    for (i = 0; i < ids->nelts; i++) {
        *(const char **)apr_array_push(t) =
            apr_psprintf(p, "%" APR_INT64_T_FMT, APR_ARRAY_IDX(ids, i, apr_int64_t));
    }
    return apr_pstrcat(p, pg ? "{" : "[", apr_array_pstrcat(p, t, ','), pg ? "}" : "]",
                       NULL);
}

/* Reads f's matched entries into *ids: for each dictionary, from the entries the
 * tracker's visits name (other accounts' strings are never read), or from the whole
 * dictionary when it holds fewer than a VR_OWN_COST-th as many entries as the tracker
 * has visits (a large tracker in an installation of few distinct strings, whose
 * index entries cost more to read than the dictionary's strings): either way no more
 * than the tracker's own data. PostgreSQL has the tracker's own entries of user
 * agents, places and referers at hand (visit_dict_counts): always those. */
static apr_status_t vr_ids(qrt_db_t *db, apr_pool_t *p, const qrt_visit_filter_t *f,
                           vr_ids_t *ids)
{
    const char *pattern = qrt_visits_like_pattern(p, f->search);
    const void *targs[] = { &f->tracker_id };
    apr_int64_t dsize[4] = { 0, 0, 0, 0 };
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    apr_status_t rv;
    int pg = qrt_db_dialect_is(db, QRT_DIALECT_PGSQL), d, i;

    memset(ids, 0, sizeof(*ids));
    if ((rv = qrt_db_select(db, p, "qrt_visits_sizes", &res, targs)) != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        ids->size = qrt_db_int(db, row, 0, 0);
        for (d = 0; d < 4; d++) {
            dsize[d] = qrt_db_int(db, row, d + 1, 0);
        }
    }
    for (d = 0; d < 4; d++) {
        apr_array_header_t *got = apr_array_make(p, 16, sizeof(apr_int64_t));
        const void *args[1 + 4];
        int own = (pg && d < 3) || dsize[d] * VR_OWN_COST > ids->size, n = 0;

        if (own) {
            args[n++] = &f->tracker_id;
        }
        for (i = 0; i < vr_per[d]; i++) {
            args[n++] = pattern;
        }
        rv = qrt_db_each(db, p, apr_pstrcat(p, "qrt_visits_ids_", vr_dict[d],
                                            own ? "_own" : "_all", vr_form(db), NULL),
                         args, qrt_db_int_list_row, got);
        if (rv != APR_SUCCESS) {
            return rv;
        }
        if (got->nelts > VR_IDS_MAX) {
            ids->over = 1;
            return APR_SUCCESS;
        }
        if (got->nelts) {
            ids->mask |= 1 << d;
        }
        ids->list[d] = vr_list(db, p, got);
    }
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
 * or bounds around its first and last visit), whose kept counts then answer. */
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
    if ((rv = qrt_db_select(db, p, "qrt_visits_span", &res, args)) != APR_SUCCESS) {
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
 * all of the tracker's visits and not its addresses: the sum of its entries' counts),
 * else the union of the picks. */
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
        return qrt_db_select_int(db, p, vr_label(db, p, "qrt_visits_count", f), a.v, total);
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
                    return qrt_db_select_int(db, p, apr_pstrcat(p, "qrt_visits_total_",
                                                                vr_dict[d], "_ci", NULL),
                                             args, total);
                }
            }
            args[n++] = &f->start;
            args[n++] = &f->end;
            return qrt_db_select_int(db, p, apr_pstrcat(p, "qrt_visits_count_", vr_dict[d],
                                                        vr_form(db), NULL), args, total);
        }
    }
    a.n = 0;
    vr_push_picked(&a, f, ids);
    vr_push(&a, &f->start);
    vr_push(&a, &f->end);
    return qrt_db_select_int(db, p, apr_pstrcat(p, "qrt_visits_count_pick", vr_form(db), NULL),
                  a.v, total);
}

/* A poll on SQLite (schema 14): the visits above since_id lie at or after the
 * earliest visit_start of the ids from its bucket up (visit_floor), so a poll is
 * the tracker's window from there, walked in time order, the id tested on each
 * row. *g gets f with its start raised to that floor (past the end when no id is
 * above since_id; left as it is when a bucket up to the highest id is missing:
 * rows that SQL wrote into visit_rows itself), and *floored 1. PostgreSQL takes
 * its id index instead: *g is f, *floored 0. */
static apr_status_t vr_floor(qrt_db_t *db, apr_pool_t *p, const qrt_visit_filter_t *f,
                             qrt_visit_filter_t *g, int *floored)
{
    apr_int64_t bucket = f->since_id >> QRT_VISIT_FLOOR_SHIFT;
    apr_int64_t buckets = 0, floor = 0, last = 0;
    const void *args[] = { &bucket };
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    apr_status_t rv;

    *g = *f;
    *floored = 0;
    if (f->since_id <= 0 || qrt_db_dialect_is(db, QRT_DIALECT_PGSQL)) {
        return APR_SUCCESS;
    }
    rv = qrt_db_select(db, p, "qrt_visits_floor", &res, args);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        buckets = qrt_db_int(db, row, 0, 0);
        floor = qrt_db_int(db, row, 1, 0);
        last = qrt_db_int(db, row, 2, 0);
    }
    *floored = 1;
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
    int floored;

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
    if ((rv = vr_floor(db, p, f, &g, &floored)) != APR_SUCCESS) {
        return rv;
    }
    a.n = 0;
    vr_push_filter(&a, p, &g);
    return qrt_db_select_int(db, p, vr_label(db, p, g.since_id > 0 && !floored
                                                        ? "qrt_visits_since_count"
                                                        : "qrt_visits_count", &g),
                             a.v, total);
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
    /* Rows walked (offset + limit) * size / total, against total picked and sorted. */
    if (ids.over
        || (double)(offset + limit) * (double)size <= 2.0 * (double)total * (double)total) {
        return vr_page(db, p, f, 0, offset, limit, out);
    }
    vr_push_picked(&a, f, &ids);
    vr_push(&a, &f->start);
    vr_push(&a, &f->end);
    vr_push(&a, &limit);
    vr_push(&a, &offset);
    return vr_read(db, p, apr_pstrcat(p, "qrt_visits_page_pick", vr_form(db), NULL), a.v,
                   out);
}

/* One page by offset into out: along the time index, or (since, PostgreSQL) the
 * visits above since_id found by id and sorted. */
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
                                          : offset == 0 ? "qrt_visits_first"
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
    qrt_visit_filter_t g;
    apr_status_t rv;
    int floored;

    *out = vr_array(p, limit);
    if (f->search && f->since_id <= 0) {
        return vr_search_page(db, p, f, offset, limit, *out);
    }
    if ((rv = vr_floor(db, p, f, &g, &floored)) != APR_SUCCESS) {
        return rv;
    }
    return vr_page(db, p, &g, g.since_id > 0 && !floored, offset, limit, *out);
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
    int floored;

    *out = vr_array(p, limit);
    if (limit <= 0) {
        return APR_SUCCESS;
    }
    /* (since_id on SQLite: the window from the floor of its ids) */
    if ((rv = vr_floor(db, p, f, &g, &floored)) != APR_SUCCESS) {
        return rv;
    }
    f = &g;
    older = g;
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
    const void *args[] = { &tracker_id };

    return qrt_db_select_int(db, p, "qrt_visits_max_id", args, max_id);
}
