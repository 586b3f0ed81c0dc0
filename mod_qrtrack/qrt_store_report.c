/* qrt_store_report: the report aggregates, kept as visits are committed
 * (qrt_store_agg_record), recomputed from the visits (qrt_store_agg_rebuild) and read
 * by the report endpoints. The model is described in qrt_agg.h.
 *
 * Write path, per non-bot visit, in id order:
 *   - the visitor's latest earlier visit in the account (one index seek on
 *     visits (visitor, visit_start)) is the previous visit in the account; when it
 *     also has the visit's tracker, browser, country, city or tags it is the previous
 *     visit there too, else one more seek finds it;
 *   - counters (per day, merged per batch and rolled up to 16 and 256 days), one
 *     agg_link row, agg_gap rows for the groups where the previous visit differs,
 *     one agg_day row;
 *   - a visit older than the visitor's latest in the account (an import out of
 *     order) recomputes that visitor's contributions in the account instead.
 *
 * The account-level kinds cover the trackers listed in agg_trk with the tags in
 * agg_tag at the time; qrt_store_agg_state tells the readers when trackers were
 * deleted or retagged since, and the rebuild brings them up to date. */
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>
#include "qrt_store.h"
#include "qrt_store_report.h"

#define AGG_SCAN_PAGE   50000       /* visits per page of the rebuild */
#define AGG_RAW_PAGE    20000       /* visits per page of the raw reads */
#define AGG_LINK_FLUSH  200000      /* pending link rows that make the rebuild write */
#define AGG_FEW         64          /* listed trackers read one by one up to this many */
#define AGG_REPAIR_MAX  20000       /* visitors of a tracker repaired in place at most */
/* Bounds that hold every time of a link. */
#define AGG_LO (-(APR_INT64_C(1) << 50))
#define AGG_HI (APR_INT64_C(1) << 50)
/* Shift that keeps the day arithmetic of agg_day on non-negative numbers. */
#define AGG_DAY_SHIFT APR_INT64_C(10000000)

#define CNT_INSERT "INSERT INTO agg_cnt (kind, account_id, lvl, b, grp, val, scans, " \
    "clicks, firsts, rets) "
#define LINK_INSERT "INSERT INTO agg_link (account_id, t, p, flags, tracker_id, browser, " \
    "country, city, n) "
#define LINK_UPSERT " ON CONFLICT (account_id, t, p, flags, tracker_id, browser, country, " \
    "city) DO UPDATE SET n = agg_link.n + excluded.n"
#define GAP_INSERT "INSERT INTO agg_gap (kind, account_id, t, p, grp, val) "
#define BIGINTS "CAST(%s AS BIGINT[])"
#define TEXTS "CAST(%s AS TEXT[])"
#define CNT_UPSERT " ON CONFLICT (kind, account_id, lvl, b, grp, val) DO UPDATE SET " \
    "scans = agg_cnt.scans + excluded.scans, clicks = agg_cnt.clicks + excluded.clicks, " \
    "firsts = agg_cnt.firsts + excluded.firsts, rets = agg_cnt.rets + excluded.rets"
#define CNT_RANGE "SELECT grp, val, scans, clicks, firsts, rets FROM agg_cnt " \
    "WHERE kind = %lld AND account_id = %lld AND lvl = %lld AND b BETWEEN %lld AND %lld"
#define CNT_RANGE1 "SELECT grp, val, scans, clicks, firsts, rets FROM agg_cnt " \
    "WHERE kind = %lld AND account_id = %lld AND grp = %lld AND lvl = %lld " \
    "AND b BETWEEN %lld AND %lld"
#define RAW_SUMS "SUM(CASE WHEN v.source = 'click' THEN 0 ELSE 1 END), " \
    "SUM(CASE WHEN v.source = 'click' THEN 1 ELSE 0 END)"
#define RAW_FROM " FROM agg_trk k CROSS JOIN visits v WHERE k.account_id = %lld " \
    "AND v.tracker_id = k.tracker_id AND v.visit_start BETWEEN %lld AND %lld " \
    "AND v.bot = 0"
#define LT_WHERE " WHERE account_id = %lld AND t BETWEEN %lld AND %lld " \
    "AND +p BETWEEN %lld AND %lld"
#define LP_WHERE " WHERE account_id = %lld AND p BETWEEN %lld AND %lld " \
    "AND +t BETWEEN %lld AND %lld"
#define LG_FROM "SELECT 0, g.tag, SUM(l.n) FROM agg_link l CROSS JOIN agg_tag g " \
    "WHERE l.account_id = %lld AND "
#define LG_TAIL " AND (l.flags & 16) <> 0 AND g.tracker_id = l.tracker_id GROUP BY g.tag"
#define SEEK_COLS "SELECT v.visit_start, v.id, v.tracker_id, COALESCE(v.browser, ''), " \
    "COALESCE(v.country, ''), COALESCE(v.city, '') FROM visits v CROSS JOIN agg_trk k " \
    "WHERE v.visitor = %s AND k.tracker_id = v.tracker_id AND k.account_id = %lld " \
    "AND v.bot = 0 AND v.id < %lld"
#define SEEK_ORDER " ORDER BY v.visit_start DESC, v.id DESC LIMIT 1"
#define ID8 "%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld"
#define IN64 "(" ID8 ", " ID8 ", " ID8 ", " ID8 ", " ID8 ", " ID8 ", " ID8 ", " ID8 ")"
#define RG_SUMS "SUM(CASE WHEN v.source = 'click' THEN 0 ELSE 1 END), " \
    "SUM(CASE WHEN v.source = 'click' THEN 1 ELSE 0 END), COUNT(DISTINCT v.visitor)"
#define RG_WHERE " WHERE v.tracker_id IN " IN64 " AND v.visit_start BETWEEN %lld AND %lld " \
    "AND v.bot = 0"
#define VISIT_COLS "v.id, v.visit_start, v.tracker_id, v.source, " \
    "COALESCE(v.browser, ''), COALESCE(v.country, ''), COALESCE(v.city, '')"

const qrt_stmt_t qrt_store_report_stmts[] = {
    /* write path */
    /* the account of an aggregated tracker, once per tag of its snapshot (or once
     * with a NULL tag) */
    { "qrt_agg_trk_get",
      "SELECT k.account_id, g.tag FROM agg_trk k LEFT JOIN agg_tag g "
      "ON g.tracker_id = k.tracker_id WHERE k.tracker_id = %lld" },
    { "qrt_agg_trk_add",
      "INSERT INTO agg_trk (tracker_id, account_id, type) "
      "SELECT id, account_id, type FROM trackers WHERE id = %lld" },
    { "qrt_agg_tag_snap",
      "INSERT INTO agg_tag (tracker_id, tag) "
      "SELECT tracker_id, tag FROM tracker_tags WHERE tracker_id = %lld" },
    { "qrt_agg_max_id",
      "SELECT MAX(id) FROM visits" },
    { "qrt_agg_seek_a", SEEK_COLS SEEK_ORDER },
    { "qrt_agg_seek_t",
      "SELECT v.visit_start FROM visits v WHERE v.visitor = %s AND v.tracker_id = %lld "
      "AND v.bot = 0 AND v.id < %lld" SEEK_ORDER },
    { "qrt_agg_seek_b", SEEK_COLS " AND COALESCE(v.browser, '') = %s" SEEK_ORDER },
    { "qrt_agg_seek_c", SEEK_COLS " AND COALESCE(v.country, '') = %s" SEEK_ORDER },
    { "qrt_agg_seek_y", SEEK_COLS " AND COALESCE(v.city, '') = %s" SEEK_ORDER },
    { "qrt_agg_seek_g",
      SEEK_COLS " AND EXISTS (SELECT 1 FROM agg_tag g WHERE g.tracker_id = v.tracker_id "
      "AND g.tag = %s)" SEEK_ORDER },
    { "qrt_agg_visitor",
      "SELECT " VISIT_COLS " FROM visits v CROSS JOIN agg_trk k WHERE v.visitor = %s "
      "AND k.tracker_id = v.tracker_id AND k.account_id = %lld AND v.bot = 0 "
      "AND v.id <= %lld ORDER BY v.visit_start, v.id" },
    { "qrt_agg_cnt_add", CNT_INSERT "VALUES (%lld, %lld, %lld, %lld, %lld, %s, %lld, %lld, "
      "%lld, %lld)" CNT_UPSERT },
    { "qrt_agg_day_add",
      "INSERT INTO agg_day (account_id, q, g, scans, clicks) "
      "VALUES (%lld, %lld, %lld, %lld, %lld) ON CONFLICT (account_id, q, g) "
      "DO UPDATE SET scans = agg_day.scans + excluded.scans, "
      "clicks = agg_day.clicks + excluded.clicks" },
    { "qrt_agg_link_add", LINK_INSERT "VALUES (%lld, %lld, %lld, %lld, %lld, %s, %s, %s, "
      "%lld)" LINK_UPSERT },
    { "qrt_agg_link_drop",
      "DELETE FROM agg_link WHERE account_id = %lld AND t = %lld AND p = %lld "
      "AND flags = %lld AND tracker_id = %lld AND browser = %s AND country = %s "
      "AND city = %s AND n <= 0" },
    { "qrt_agg_gap_add", GAP_INSERT "VALUES (%lld, %lld, %lld, %lld, %lld, %s)" },
    { "qrt_agg_gap_del",
      "DELETE FROM agg_gap WHERE id = (SELECT id FROM agg_gap WHERE kind = %lld "
      "AND account_id = %lld AND t = %lld AND p = %lld AND grp = %lld AND val = %s "
      "LIMIT 1)" },
    /* a tracker deleted or retagged */
    { "qrt_agg_trk_now",
      "SELECT account_id, CASE WHEN deleted_at IS NULL THEN 0 ELSE 1 END FROM trackers "
      "WHERE id = %lld" },
    { "qrt_agg_tags_now",
      "SELECT tag FROM tracker_tags WHERE tracker_id = %lld" },
    { "qrt_agg_trk_visitors",
      "SELECT visitor FROM tracker_visitors WHERE tracker_id = %lld" },
    { "qrt_agg_trk_nvisitors",
      "SELECT COUNT(*) FROM tracker_visitors WHERE tracker_id = %lld" },
    { "qrt_agg_trk_del", "DELETE FROM agg_trk WHERE tracker_id = %lld" },
    { "qrt_agg_tag_del", "DELETE FROM agg_tag WHERE tracker_id = %lld" },
    /* rebuild */
    { "qrt_agg_clear_cnt", "DELETE FROM agg_cnt" },
    { "qrt_agg_clear_link", "DELETE FROM agg_link" },
    { "qrt_agg_clear_gap", "DELETE FROM agg_gap" },
    { "qrt_agg_clear_day", "DELETE FROM agg_day" },
    { "qrt_agg_clear_tag", "DELETE FROM agg_tag" },
    { "qrt_agg_clear_trk", "DELETE FROM agg_trk" },
    { "qrt_agg_trk_all",
      "INSERT INTO agg_trk (tracker_id, account_id, type) "
      "SELECT id, account_id, type FROM trackers WHERE deleted_at IS NULL" },
    { "qrt_agg_tag_all",
      "INSERT INTO agg_tag (tracker_id, tag) SELECT g.tracker_id, g.tag "
      "FROM tracker_tags g "
      "JOIN trackers t ON t.id = g.tracker_id WHERE t.deleted_at IS NULL" },
    { "qrt_agg_trk_load", "SELECT tracker_id, account_id FROM agg_trk" },
    { "qrt_agg_tag_load", "SELECT tracker_id, tag FROM agg_tag" },
    { "qrt_agg_scan_page",
      "SELECT v.visitor, " VISIT_COLS " FROM visits v WHERE v.visitor > %s AND v.bot = 0 "
      "ORDER BY v.visitor, v.visit_start, v.id LIMIT %lld" },
    { "qrt_agg_scan_one",
      "SELECT v.visitor, " VISIT_COLS " FROM visits v WHERE v.visitor = %s AND v.bot = 0 "
      "ORDER BY v.visit_start, v.id" },
    /* reads: counters over full days (at most 5 bucket ranges) */
    { "qrt_agg_cnt_sum",
      "SELECT grp, val, SUM(scans), SUM(clicks), SUM(firsts), SUM(rets) FROM ("
      CNT_RANGE " UNION ALL " CNT_RANGE " UNION ALL " CNT_RANGE " UNION ALL "
      CNT_RANGE " UNION ALL " CNT_RANGE ") x GROUP BY grp, val" },
    { "qrt_agg_cnt_sum1",
      "SELECT grp, val, SUM(scans), SUM(clicks), SUM(firsts), SUM(rets) FROM ("
      CNT_RANGE1 " UNION ALL " CNT_RANGE1 " UNION ALL " CNT_RANGE1 " UNION ALL "
      CNT_RANGE1 " UNION ALL " CNT_RANGE1 ") x GROUP BY grp, val" },
    { "qrt_agg_cnt_days",
      "SELECT b, grp, SUM(scans), SUM(clicks) FROM agg_cnt WHERE kind = %lld "
      "AND account_id = %lld AND lvl = 1 AND b BETWEEN %lld AND %lld GROUP BY b, grp" },
    { "qrt_agg_cnt_days1",
      "SELECT b, grp, SUM(scans), SUM(clicks) FROM agg_cnt WHERE kind = %lld "
      "AND account_id = %lld AND grp = %lld AND lvl = 1 AND b BETWEEN %lld AND %lld "
      "GROUP BY b, grp" },
    /* reads: visits of the partial days at a window's edges, per kind */
    { "qrt_agg_raw_1", "SELECT v.tracker_id, '', " RAW_SUMS RAW_FROM
      " GROUP BY v.tracker_id" },
    { "qrt_agg_raw_2", "SELECT 0, '', " RAW_SUMS RAW_FROM },
    { "qrt_agg_raw_1t", "SELECT v.tracker_id, '', " RAW_SUMS " FROM visits v "
      "WHERE v.tracker_id = %lld AND v.visit_start BETWEEN %lld AND %lld AND v.bot = 0 "
      "GROUP BY v.tracker_id" },
    { "qrt_agg_raw_3", "SELECT 0, COALESCE(v.browser, ''), " RAW_SUMS RAW_FROM
      " GROUP BY COALESCE(v.browser, '')" },
    { "qrt_agg_raw_4", "SELECT 0, COALESCE(v.country, ''), " RAW_SUMS RAW_FROM
      " GROUP BY COALESCE(v.country, '')" },
    { "qrt_agg_raw_5", "SELECT 0, COALESCE(v.city, ''), " RAW_SUMS RAW_FROM
      " GROUP BY COALESCE(v.city, '')" },
    { "qrt_agg_raw_6", "SELECT 0, g.tag, " RAW_SUMS " FROM agg_trk k CROSS JOIN visits v "
      "CROSS JOIN agg_tag g WHERE k.account_id = %lld AND v.tracker_id = k.tracker_id "
      "AND v.visit_start BETWEEN %lld AND %lld AND v.bot = 0 "
      "AND g.tracker_id = v.tracker_id GROUP BY g.tag" },
    /* reads: links by time (t) and by previous time (p), per kind */
    { "qrt_agg_lt_1", "SELECT tracker_id, '', SUM(n) FROM agg_link" LT_WHERE
      " AND (flags & 1) <> 0 GROUP BY tracker_id" },
    { "qrt_agg_lt_2", "SELECT 0, '', SUM(n) FROM agg_link" LT_WHERE },
    { "qrt_agg_lt_3", "SELECT 0, browser, SUM(n) FROM agg_link" LT_WHERE
      " AND (flags & 2) <> 0 GROUP BY browser" },
    { "qrt_agg_lt_4", "SELECT 0, country, SUM(n) FROM agg_link" LT_WHERE
      " AND (flags & 4) <> 0 GROUP BY country" },
    { "qrt_agg_lt_5", "SELECT 0, city, SUM(n) FROM agg_link" LT_WHERE
      " AND (flags & 8) <> 0 GROUP BY city" },
    { "qrt_agg_lt_6", LG_FROM "l.t BETWEEN %lld AND %lld AND +l.p BETWEEN %lld AND %lld"
      LG_TAIL },
    { "qrt_agg_lp_1", "SELECT tracker_id, '', SUM(n) FROM agg_link" LP_WHERE
      " AND (flags & 1) <> 0 GROUP BY tracker_id" },
    { "qrt_agg_lp_2", "SELECT 0, '', SUM(n) FROM agg_link" LP_WHERE },
    { "qrt_agg_lp_3", "SELECT 0, browser, SUM(n) FROM agg_link" LP_WHERE
      " AND (flags & 2) <> 0 GROUP BY browser" },
    { "qrt_agg_lp_4", "SELECT 0, country, SUM(n) FROM agg_link" LP_WHERE
      " AND (flags & 4) <> 0 GROUP BY country" },
    { "qrt_agg_lp_5", "SELECT 0, city, SUM(n) FROM agg_link" LP_WHERE
      " AND (flags & 8) <> 0 GROUP BY city" },
    { "qrt_agg_lp_6", LG_FROM "l.p BETWEEN %lld AND %lld AND +l.t BETWEEN %lld AND %lld"
      LG_TAIL },
    { "qrt_agg_gt",
      "SELECT grp, val, COUNT(*) FROM agg_gap WHERE kind = %lld AND account_id = %lld "
      "AND t BETWEEN %lld AND %lld AND +p BETWEEN %lld AND %lld GROUP BY grp, val" },
    { "qrt_agg_gp",
      "SELECT grp, val, COUNT(*) FROM agg_gap WHERE kind = %lld AND account_id = %lld "
      "AND p BETWEEN %lld AND %lld AND +t BETWEEN %lld AND %lld GROUP BY grp, val" },
    /* reads: local days (quarter-hours, k = quarter-hour of the local day) */
    { "qrt_agg_day_sum",
      "SELECT d, SUM(scans), SUM(clicks), SUM(CASE WHEN g > k THEN scans + clicks "
      "ELSE 0 END) FROM (SELECT (q * 900 + %lld) / 86400 AS d, "
      "(q * 900 + %lld - ((q * 900 + %lld) / 86400) * 86400) / 900 AS k, "
      "g, scans, clicks "
      "FROM agg_day WHERE account_id = %lld AND q BETWEEN %lld AND %lld) x GROUP BY d" },
    /* reads: state and trackers */
    { "qrt_agg_deleted",
      "SELECT COUNT(*) FROM agg_trk k LEFT JOIN trackers t ON t.id = k.tracker_id "
      "WHERE k.account_id = %lld AND (t.id IS NULL OR t.deleted_at IS NOT NULL "
      "OR t.account_id <> k.account_id)" },
    { "qrt_agg_dirty_tags",
      "SELECT a.tag FROM agg_tag a JOIN agg_trk k ON k.tracker_id = a.tracker_id "
      "WHERE k.account_id = %lld AND NOT EXISTS (SELECT 1 FROM tracker_tags c "
      "WHERE c.tracker_id = a.tracker_id AND c.tag = a.tag) UNION "
      "SELECT c.tag FROM tracker_tags c JOIN agg_trk k ON k.tracker_id = c.tracker_id "
      "WHERE k.account_id = %lld AND NOT EXISTS (SELECT 1 FROM agg_tag a "
      "WHERE a.tracker_id = c.tracker_id AND a.tag = c.tag)" },
    { "qrt_agg_raw_visits",
      "SELECT visit_start, id, visitor, source, COALESCE(browser, ''), "
      "COALESCE(country, ''), COALESCE(city, '') FROM visits WHERE tracker_id = %lld "
      "AND visit_start BETWEEN %lld AND %lld AND bot = 0 "
      "AND (visit_start > %lld OR id > %lld) ORDER BY visit_start, id LIMIT %lld" },
    /* reads: a few listed trackers' visits grouped, with distinct visitors */
    { "qrt_agg_rg_0", "SELECT 0, '', " RG_SUMS " FROM visits v" RG_WHERE },
    { "qrt_agg_rg_1", "SELECT 0, t.type, " RG_SUMS " FROM visits v "
      "JOIN trackers t ON t.id = v.tracker_id" RG_WHERE " GROUP BY t.type" },
    { "qrt_agg_rg_2", "SELECT 0, g.tag, " RG_SUMS " FROM visits v "
      "JOIN tracker_tags g ON g.tracker_id = v.tracker_id" RG_WHERE " GROUP BY g.tag" },
    { "qrt_agg_rg_3", "SELECT (v.visit_start + %lld) / 86400, '', " RG_SUMS
      " FROM visits v" RG_WHERE " GROUP BY 1" },
    { "qrt_agg_rg_4", "SELECT 0, COALESCE(v.browser, ''), " RG_SUMS " FROM visits v"
      RG_WHERE " GROUP BY COALESCE(v.browser, '')" },
    { "qrt_agg_rg_5", "SELECT 0, COALESCE(v.city, ''), " RG_SUMS " FROM visits v"
      RG_WHERE " GROUP BY COALESCE(v.city, '')" },
    { "qrt_agg_rg_6", "SELECT 0, COALESCE(v.country, ''), " RG_SUMS " FROM visits v"
      RG_WHERE " GROUP BY COALESCE(v.country, '')" },
    /* distinct visitors only: answered from the index visits_tracker_visitor */
    { "qrt_agg_rg_u", "SELECT COUNT(DISTINCT v.visitor) FROM visits v" RG_WHERE },
    { "qrt_agg_rep_trackers",
      "SELECT id, name, type FROM trackers WHERE account_id = %lld "
      "AND deleted_at IS NULL ORDER BY id" },
    { "qrt_agg_rep_tags",
      "SELECT g.tracker_id, g.tag, g.dimension, g.value FROM tracker_tags g "
      "JOIN trackers t ON t.id = g.tracker_id WHERE t.account_id = %lld "
      "AND t.deleted_at IS NULL" },
    { NULL, NULL }
};

/* PostgreSQL's statements of many rows (qrt_db_exec_rows). */
const qrt_stmt_t qrt_store_report_pgsql[] = {
    { "qrt_agg_cnt_add_many", CNT_INSERT "SELECT * FROM unnest(" BIGINTS ", " BIGINTS ", "
      BIGINTS ", " BIGINTS ", " BIGINTS ", " TEXTS ", " BIGINTS ", " BIGINTS ", "
      BIGINTS ", " BIGINTS ")" CNT_UPSERT },
    { "qrt_agg_link_add_many", LINK_INSERT "SELECT * FROM unnest(" BIGINTS ", " BIGINTS ", "
      BIGINTS ", " BIGINTS ", " BIGINTS ", " TEXTS ", " TEXTS ", " TEXTS ", " BIGINTS ")"
      LINK_UPSERT },
    { "qrt_agg_gap_add_many", GAP_INSERT "SELECT * FROM unnest(" BIGINTS ", " BIGINTS ", "
      BIGINTS ", " BIGINTS ", " BIGINTS ", " TEXTS ")" },
    { NULL, NULL }
};

/* ---- helpers ------------------------------------------------------------ */


static const char *agg_str(qrt_db_t *db, apr_dbd_row_t *row, int col)
{
    const char *s = qrt_db_str(db, row, col);

    return s ? s : "";
}

static const char *agg_nz(const char *s)
{
    return s ? s : "";
}

static int agg_strcmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int agg_has_tag(const char *const *tags, int n, const char *tag)
{
    return bsearch(&tag, tags, n, sizeof(*tags), agg_strcmp) != NULL;
}

/* ---- aggregated trackers ------------------------------------------------- */

typedef struct {
    apr_int64_t id;
    apr_int64_t account;
    const char **tags;          /* snapshot in agg_tag, sorted */
    int ntags;
} agg_trk_t;

static apr_status_t agg_int_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    apr_int64_t *out = ctx;

    *out = qrt_db_int(db, row, 0, 0);
    return APR_SUCCESS;
}

typedef struct {
    apr_pool_t *p;
    apr_int64_t account;        /* 0 when the tracker is not aggregated */
    apr_array_header_t *tags;
} agg_tags_ctx;

static apr_status_t agg_trk_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_tags_ctx *c = ctx;
    const char *tag = qrt_db_str(db, row, 1);

    c->account = qrt_db_int(db, row, 0, 0);
    if (tag) {
        APR_ARRAY_PUSH(c->tags, const char *) = apr_pstrdup(c->p, tag);
    }
    return APR_SUCCESS;
}

/* The aggregated tracker id from the cache, else from agg_trk; with create, a
 * tracker not yet aggregated is added with its current tags. */
static apr_status_t agg_trk_get(qrt_db_t *db, apr_pool_t *p, apr_hash_t *cache,
                                apr_int64_t id, int create, agg_trk_t **out)
{
    agg_trk_t *k = apr_hash_get(cache, &id, sizeof(id));
    const void *args[] = { &id };
    agg_tags_ctx tc;
    apr_status_t rv;

    if (k) {
        *out = k;
        return APR_SUCCESS;
    }
    tc.p = p;
    tc.account = 0;
    tc.tags = apr_array_make(p, 4, sizeof(const char *));
    rv = qrt_db_each(db, p, "qrt_agg_trk_get", args, agg_trk_row, &tc);
    if (rv == APR_SUCCESS && tc.account == 0 && create) {
        rv = qrt_db_exec(db, p, "qrt_agg_trk_add", NULL, args);
        if (rv == APR_SUCCESS) {
            rv = qrt_db_exec(db, p, "qrt_agg_tag_snap", NULL, args);
        }
        if (rv == APR_SUCCESS) {
            rv = qrt_db_each(db, p, "qrt_agg_trk_get", args, agg_trk_row, &tc);
        }
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (tc.account == 0) {
        db->error = apr_psprintf(p, "no tracker %" APR_INT64_T_FMT, id);
        return APR_NOTFOUND;
    }
    qsort(tc.tags->elts, tc.tags->nelts, sizeof(const char *), agg_strcmp);
    k = apr_pcalloc(p, sizeof(*k));
    k->id = id;
    k->account = tc.account;
    k->tags = (const char **)tc.tags->elts;
    k->ntags = tc.tags->nelts;
    apr_hash_set(cache, &k->id, sizeof(k->id), k);
    *out = k;
    return APR_SUCCESS;
}

/* ---- the accumulator: changes merged before they are written ------------- */

typedef struct {
    apr_int64_t account, grp, b;
    const char *val;            /* interned */
    int kind, lvl;
} cnt_key;
typedef struct {
    cnt_key k;
    apr_int64_t scans, clicks, firsts, rets;
} cnt_ent;

typedef struct {
    apr_int64_t account, q;
    int g;
} day_key;
typedef struct {
    day_key k;
    apr_int64_t scans, clicks;
} day_ent;

typedef struct {
    apr_int64_t account, t, p, tracker;
    const char *browser, *country, *city;   /* interned */
    int flags;
} lnk_key;
typedef struct {
    lnk_key k;
    apr_int64_t n;
} lnk_ent;

typedef struct {
    apr_int64_t account, t, p, grp;
    const char *val;            /* interned */
    int kind;
} gap_key;
typedef struct {
    gap_key k;
    apr_int64_t n;
} gap_ent;

typedef struct {
    qrt_db_t *db;
    apr_pool_t *p;              /* strings, counters, days */
    apr_pool_t *lp;             /* links and gaps: cleared when written */
    apr_hash_t *strs;
    apr_hash_t *cnt, *day, *lnk, *gap;
    int nlinks;
} agg_acc;

static agg_acc *acc_make(qrt_db_t *db, apr_pool_t *p)
{
    agg_acc *a = apr_pcalloc(p, sizeof(*a));

    a->db = db;
    a->p = p;
    apr_pool_create(&a->lp, p);
    a->strs = apr_hash_make(p);
    a->cnt = apr_hash_make(p);
    a->day = apr_hash_make(p);
    a->lnk = apr_hash_make(a->lp);
    a->gap = apr_hash_make(a->lp);
    return a;
}

/* One pointer per distinct string, so that keys compare as bytes. */
static const char *acc_str(agg_acc *a, const char *s)
{
    const char *k = apr_hash_get(a->strs, s, APR_HASH_KEY_STRING);

    if (!k) {
        k = apr_pstrdup(a->p, s);
        apr_hash_set(a->strs, k, APR_HASH_KEY_STRING, k);
    }
    return k;
}

/* The entry of h for a key of klen bytes: an entry of esize bytes that starts with
 * its key, made zeroed in p when new (*made says so when not NULL). */
static void *acc_entry(apr_pool_t *p, apr_hash_t *h, const void *key, apr_size_t klen,
                       apr_size_t esize, int *made)
{
    void *e = apr_hash_get(h, key, klen);

    if (made) {
        *made = !e;
    }
    if (!e) {
        e = apr_pcalloc(p, esize);
        memcpy(e, key, klen);
        apr_hash_set(h, e, klen, e);
    }
    return e;
}

static cnt_ent *acc_cnt_ent(agg_acc *a, apr_hash_t *h, const cnt_key *k)
{
    return acc_entry(a->p, h, k, sizeof(*k), sizeof(cnt_ent), NULL);
}

static void acc_cnt(agg_acc *a, int kind, apr_int64_t account, apr_int64_t grp,
                    const char *val, apr_int64_t day, apr_int64_t scans,
                    apr_int64_t clicks, apr_int64_t firsts, apr_int64_t rets)
{
    cnt_key k;
    cnt_ent *e;

    memset(&k, 0, sizeof(k));
    k.account = account;
    k.grp = grp;
    k.b = day;
    k.val = val;
    k.kind = kind;
    k.lvl = 1;
    e = acc_cnt_ent(a, a->cnt, &k);
    e->scans += scans;
    e->clicks += clicks;
    e->firsts += firsts;
    e->rets += rets;
}

static void acc_day(agg_acc *a, apr_int64_t account, apr_int64_t q, int g,
                    apr_int64_t scans, apr_int64_t clicks)
{
    day_key k;
    day_ent *e;

    memset(&k, 0, sizeof(k));
    k.account = account;
    k.q = q;
    k.g = g;
    e = acc_entry(a->p, a->day, &k, sizeof(k), sizeof(*e), NULL);
    e->scans += scans;
    e->clicks += clicks;
}

static void acc_link(agg_acc *a, int sign, apr_int64_t account, apr_int64_t t,
                     apr_int64_t p, int flags, apr_int64_t tracker, const char *browser,
                     const char *country, const char *city)
{
    lnk_key k;
    lnk_ent *e;
    int made;

    memset(&k, 0, sizeof(k));
    k.account = account;
    k.t = t;
    k.p = p;
    k.tracker = tracker;
    k.browser = browser;
    k.country = country;
    k.city = city;
    k.flags = flags;
    e = acc_entry(a->lp, a->lnk, &k, sizeof(k), sizeof(*e), &made);
    a->nlinks += made;
    e->n += sign;
}

static void acc_gap(agg_acc *a, int sign, int kind, apr_int64_t account, apr_int64_t t,
                    apr_int64_t p, apr_int64_t grp, const char *val)
{
    gap_key k;
    gap_ent *e;
    int made;

    memset(&k, 0, sizeof(k));
    k.account = account;
    k.t = t;
    k.p = p;
    k.grp = grp;
    k.val = val;
    k.kind = kind;
    e = acc_entry(a->lp, a->gap, &k, sizeof(k), sizeof(*e), &made);
    a->nlinks += made;
    e->n += sign;
}

#define RUN_ROWS 256            /* rows written by one run of statements */
#define RUN_ARGS 10             /* the most values of a row */

/* Rows on their way to the database, RUN_ROWS at most at a time: on PostgreSQL one
 * statement a run (qrt_db_exec_rows). No run may upsert one key twice. */
typedef struct {
    qrt_db_t *db;
    apr_pool_t *p;              /* values of the run's rows; cleared after each run */
    const char *label, *types;
    int nargs, n;
    const void *args[RUN_ROWS * RUN_ARGS];
} row_run;

static row_run *run_make(apr_pool_t *p, qrt_db_t *db, const char *label,
                         const char *types)
{
    row_run *r = apr_pcalloc(p, sizeof(*r));

    r->db = db;
    r->label = label;
    r->types = types;
    r->nargs = (int)strlen(types);
    apr_pool_create(&r->p, p);
    return r;
}

static apr_status_t run_flush(row_run *r)
{
    apr_status_t rv = qrt_db_exec_rows(r->db, r->p, r->label, r->types, r->args, r->n);

    r->n = 0;
    apr_pool_clear(r->p);
    return rv;
}

static apr_status_t run_add(row_run *r, const void **one)
{
    memcpy(r->args + (apr_size_t)r->n * r->nargs, one, r->nargs * sizeof(*one));
    return ++r->n == RUN_ROWS ? run_flush(r) : APR_SUCCESS;
}

/* A small number as a value of the run (it lives until the run is written). */
static const apr_int64_t *run_int(row_run *r, apr_int64_t v)
{
    apr_int64_t *x = apr_palloc(r->p, sizeof(*x));

    *x = v;
    return x;
}

static apr_status_t cnt_run_add(row_run *r, const cnt_ent *e)
{
    const void *one[] = { run_int(r, e->k.kind), &e->k.account, run_int(r, e->k.lvl),
                          &e->k.b, &e->k.grp, e->k.val, &e->scans, &e->clicks,
                          &e->firsts, &e->rets };

    if (!e->scans && !e->clicks && !e->firsts && !e->rets) {
        return APR_SUCCESS;
    }
    return run_add(r, one);
}

/* Writes the counters (each day also into its 16- and 256-day buckets) and days. */
static apr_status_t acc_flush_counts(agg_acc *a)
{
    apr_pool_t *p;
    apr_hash_t *roll;
    apr_hash_index_t *hi;
    row_run *run;
    apr_status_t rv = APR_SUCCESS;

    apr_pool_create(&p, a->p);
    roll = apr_hash_make(p);
    run = run_make(p, a->db, "qrt_agg_cnt_add", "lllllsllll");
    for (hi = apr_hash_first(p, a->cnt);
         hi && rv == APR_SUCCESS; hi = apr_hash_next(hi)) {
        cnt_ent *e = apr_hash_this_val(hi);
        int lvl;

        rv = cnt_run_add(run, e);
        for (lvl = 2; lvl <= QRT_AGG_LEVELS; lvl++) {
            cnt_key k = e->k;
            cnt_ent *r;

            k.lvl = lvl;
            k.b = qrt_agg_bucket(lvl, e->k.b);
            r = acc_cnt_ent(a, roll, &k);
            r->scans += e->scans;
            r->clicks += e->clicks;
            r->firsts += e->firsts;
            r->rets += e->rets;
        }
    }
    for (hi = apr_hash_first(p, roll);
         hi && rv == APR_SUCCESS; hi = apr_hash_next(hi)) {
        rv = cnt_run_add(run, apr_hash_this_val(hi));
    }
    if (rv == APR_SUCCESS) {
        rv = run_flush(run);
    }
    for (hi = apr_hash_first(p, a->day);
         hi && rv == APR_SUCCESS; hi = apr_hash_next(hi)) {
        day_ent *e = apr_hash_this_val(hi);
        apr_int64_t g = e->k.g;
        const void *dargs[] = { &e->k.account, &e->k.q, &g, &e->scans, &e->clicks };

        if (e->scans || e->clicks) {
            rv = qrt_db_exec(a->db, p, "qrt_agg_day_add", NULL, dargs);
        }
    }
    apr_hash_clear(a->cnt);
    apr_hash_clear(a->day);
    apr_pool_destroy(p);
    return rv;
}

/* Writes the links and gaps (adds or deletes rows) and forgets them. */
static apr_status_t acc_flush_links(agg_acc *a)
{
    apr_pool_t *p;
    apr_hash_index_t *hi;
    row_run *links, *gaps;
    apr_status_t rv = APR_SUCCESS;

    apr_pool_create(&p, a->p);
    links = run_make(p, a->db, "qrt_agg_link_add", "lllllsssl");
    gaps = run_make(p, a->db, "qrt_agg_gap_add", "llllls");
    for (hi = apr_hash_first(p, a->lnk);
         hi && rv == APR_SUCCESS; hi = apr_hash_next(hi)) {
        lnk_ent *e = apr_hash_this_val(hi);
        const void *args[] = { &e->k.account, &e->k.t, &e->k.p, run_int(links, e->k.flags),
                               &e->k.tracker, e->k.browser, e->k.country, e->k.city,
                               &e->n };

        if (e->n != 0) {
            rv = run_add(links, args);
        }
    }
    if (rv == APR_SUCCESS) {
        rv = run_flush(links);
    }
    for (hi = apr_hash_first(p, a->lnk);
         hi && rv == APR_SUCCESS; hi = apr_hash_next(hi)) {
        lnk_ent *e = apr_hash_this_val(hi);
        apr_int64_t flags = e->k.flags;
        const void *args[] = { &e->k.account, &e->k.t, &e->k.p, &flags, &e->k.tracker,
                               e->k.browser, e->k.country, e->k.city, &e->n };

        if (e->n < 0) {
            /* Links taken away: a row that counts none any more goes. */
            rv = qrt_db_exec(a->db, p, "qrt_agg_link_drop", NULL, args);
        }
    }
    for (hi = apr_hash_first(p, a->gap);
         hi && rv == APR_SUCCESS; hi = apr_hash_next(hi)) {
        gap_ent *e = apr_hash_this_val(hi);
        apr_int64_t kind = e->k.kind, i;
        const void *args[] = { &kind, &e->k.account, &e->k.t, &e->k.p, &e->k.grp,
                               e->k.val };

        for (i = 0; i < (e->n < 0 ? -e->n : e->n) && rv == APR_SUCCESS; i++) {
            if (e->n > 0) {
                args[0] = run_int(gaps, kind);
                rv = run_add(gaps, args);
            }
            else {
                rv = qrt_db_exec(a->db, p, "qrt_agg_gap_del", NULL, args);
            }
        }
    }
    if (rv == APR_SUCCESS) {
        rv = run_flush(gaps);
    }
    apr_pool_destroy(p);
    apr_pool_clear(a->lp);
    a->lnk = apr_hash_make(a->lp);
    a->gap = apr_hash_make(a->lp);
    a->nlinks = 0;
    return rv;
}

/* ---- what one visit adds to the aggregates ------------------------------- */

/* The previous visit of the visitor in one group. */
typedef struct {
    int has;
    int same;                   /* it is the previous visit in the account */
    apr_int64_t t;
} agg_prev;

typedef struct {
    agg_prev a, tr, br, co, ci;
    agg_prev *tag;              /* per tag of the visit */
    int fg;                     /* the previous visit in the account has all its tags */
} agg_prevs;

static void emit_group(agg_acc *a, int sign, int kind, apr_int64_t account,
                       apr_int64_t grp, const char *val, apr_int64_t day, int click,
                       const agg_prev *pv)
{
    acc_cnt(a, kind, account, grp, val, day, sign * !click, sign * click,
            sign * !pv->has, 0);
    if (pv->has) {
        acc_cnt(a, kind, account, grp, val, qrt_agg_fdiv(pv->t, QRT_AGG_DAY), 0, 0, 0,
                sign);
    }
}

/* Adds (sign 1) or takes away (sign -1) the contribution of visit x, whose previous
 * visits in its groups are pv, to the aggregates of the account. */
static void agg_emit(agg_acc *a, int sign, apr_int64_t account, const qrt_agg_visit_t *x,
                     const agg_prevs *pv)
{
    apr_int64_t day = qrt_agg_fdiv(x->t, QRT_AGG_DAY), q;
    const char *br = acc_str(a, x->browser), *co = acc_str(a, x->country);
    const char *ci = acc_str(a, x->city), *empty = acc_str(a, "");
    int j, g;

    emit_group(a, sign, QRT_AGG_T, account, x->tracker, empty, day, x->click, &pv->tr);
    emit_group(a, sign, QRT_AGG_A, account, 0, empty, day, x->click, &pv->a);
    emit_group(a, sign, QRT_AGG_B, account, 0, br, day, x->click, &pv->br);
    emit_group(a, sign, QRT_AGG_C, account, 0, co, day, x->click, &pv->co);
    emit_group(a, sign, QRT_AGG_Y, account, 0, ci, day, x->click, &pv->ci);
    for (j = 0; j < x->ntags; j++) {
        emit_group(a, sign, QRT_AGG_G, account, 0, acc_str(a, x->tags[j]), day, x->click,
                   &pv->tag[j]);
    }
    q = qrt_agg_fdiv(x->t, QRT_AGG_QUARTER);
    g = QRT_AGG_QDAY;
    if (pv->a.has) {
        int flags = (pv->tr.has && pv->tr.same ? QRT_AGG_F_T : 0)
                    | (pv->br.has && pv->br.same ? QRT_AGG_F_B : 0)
                    | (pv->co.has && pv->co.same ? QRT_AGG_F_C : 0)
                    | (pv->ci.has && pv->ci.same ? QRT_AGG_F_Y : 0)
                    | (pv->fg ? QRT_AGG_F_G : 0);
        apr_int64_t gap = q - qrt_agg_fdiv(pv->a.t, QRT_AGG_QUARTER);

        acc_link(a, sign, account, x->t, pv->a.t, flags, x->tracker, br, co, ci);
        if (pv->tr.has && !pv->tr.same) {
            acc_gap(a, sign, QRT_AGG_T, account, x->t, pv->tr.t, x->tracker, empty);
        }
        if (pv->br.has && !pv->br.same) {
            acc_gap(a, sign, QRT_AGG_B, account, x->t, pv->br.t, 0, br);
        }
        if (pv->co.has && !pv->co.same) {
            acc_gap(a, sign, QRT_AGG_C, account, x->t, pv->co.t, 0, co);
        }
        if (pv->ci.has && !pv->ci.same) {
            acc_gap(a, sign, QRT_AGG_Y, account, x->t, pv->ci.t, 0, ci);
        }
        for (j = 0; j < x->ntags && !pv->fg; j++) {
            if (pv->tag[j].has) {
                acc_gap(a, sign, QRT_AGG_G, account, x->t, pv->tag[j].t, 0,
                        acc_str(a, x->tags[j]));
            }
        }
        g = gap < QRT_AGG_QDAY ? (int)gap : QRT_AGG_QDAY;
    }
    acc_day(a, account, q, g, sign * !x->click, sign * x->click);
}

static void agg_prev_of(agg_prev *o, const qrt_agg_visit_t *v, int idx, int a)
{
    o->has = idx >= 0;
    o->same = idx >= 0 && idx == a;
    o->t = idx >= 0 ? v[idx].t : 0;
}

/* Adds or takes away the contributions of a visitor's visits in an account
 * (sorted by time, then id). */
static void agg_emit_list(agg_acc *a, apr_pool_t *p, int sign, apr_int64_t account,
                          const qrt_agg_visit_t *v, int n)
{
    qrt_agg_prev_t *ch = apr_palloc(p, (n > 0 ? n : 1) * sizeof(*ch));
    int i, j;

    qrt_agg_chain(p, v, n, ch);
    for (i = 0; i < n; i++) {
        agg_prevs pv;

        agg_prev_of(&pv.a, v, ch[i].a, ch[i].a);
        agg_prev_of(&pv.tr, v, ch[i].tr, ch[i].a);
        agg_prev_of(&pv.br, v, ch[i].br, ch[i].a);
        agg_prev_of(&pv.co, v, ch[i].co, ch[i].a);
        agg_prev_of(&pv.ci, v, ch[i].ci, ch[i].a);
        pv.tag = apr_palloc(p, (v[i].ntags > 0 ? v[i].ntags : 1) * sizeof(agg_prev));
        for (j = 0; j < v[i].ntags; j++) {
            agg_prev_of(&pv.tag[j], v, ch[i].tag[j], ch[i].a);
        }
        pv.fg = ch[i].a >= 0 && ch[i].fg;
        agg_emit(a, sign, account, &v[i], &pv);
    }
}

/* ---- write path ------------------------------------------------------------ */

typedef struct {
    int has;
    apr_int64_t t, id, tracker;
    const char *browser, *country, *city;
} agg_seek_row;

static apr_status_t agg_seek_a_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_seek_row *s = ctx;

    s->has = 1;
    s->t = qrt_db_int(db, row, 0, 0);
    s->id = qrt_db_int(db, row, 1, 0);
    s->tracker = qrt_db_int(db, row, 2, 0);
    s->browser = agg_str(db, row, 3);
    s->country = agg_str(db, row, 4);
    s->city = agg_str(db, row, 5);
    return APR_SUCCESS;
}

/* The time of the latest visit a seek finds, into *pv (has = 0 when none). */
static apr_status_t agg_seek(qrt_db_t *db, apr_pool_t *p, const char *label,
                             const void **args, agg_prev *pv)
{
    agg_seek_row s;
    apr_status_t rv;

    memset(&s, 0, sizeof(s));
    rv = qrt_db_each(db, p, label, args, agg_seek_a_row, &s);
    pv->has = s.has;
    pv->same = 0;
    pv->t = s.t;
    return rv;
}

typedef struct {
    apr_pool_t *p;
    apr_array_header_t *list;   /* qrt_agg_visit_t */
} agg_list_ctx;

/* One visit of a visitor's history (its tags are filled in after the query: no
 * query may run while another's rows are being read). */
static apr_status_t agg_visit_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_list_ctx *c = ctx;
    qrt_agg_visit_t *x = apr_array_push(c->list);
    const char *src = qrt_db_str(db, row, 3);

    memset(x, 0, sizeof(*x));
    x->id = qrt_db_int(db, row, 0, 0);
    x->t = qrt_db_int(db, row, 1, 0);
    x->tracker = qrt_db_int(db, row, 2, 0);
    x->click = src && !strcmp(src, "click");
    x->browser = apr_pstrdup(c->p, agg_str(db, row, 4));
    x->country = apr_pstrdup(c->p, agg_str(db, row, 5));
    x->city = apr_pstrdup(c->p, agg_str(db, row, 6));
    return APR_SUCCESS;
}

static apr_status_t agg_history(qrt_db_t *db, apr_pool_t *p, apr_pool_t *tp,
                                apr_hash_t *trk, const char *visitor,
                                apr_int64_t account, apr_int64_t id,
                                qrt_agg_visit_t **out, int *n);

/* A visit older than the visitor's latest in the account: the visitor's
 * contributions there are taken away and added again with the new visit. */
static apr_status_t agg_recompute(agg_acc *a, qrt_db_t *db, apr_pool_t *p,
                                  apr_hash_t *trk, const char *visitor,
                                  apr_int64_t account, apr_int64_t id)
{
    qrt_agg_visit_t *all, *old;
    apr_status_t rv;
    int i, n = 0, nold = 0;

    rv = agg_history(db, p, p, trk, visitor, account, id, &all, &n);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    old = apr_palloc(p, (n > 0 ? n : 1) * sizeof(*old));
    for (i = 0; i < n; i++) {
        if (all[i].id != id) {
            old[nold++] = all[i];
        }
    }
    agg_emit_list(a, p, -1, account, old, nold);
    agg_emit_list(a, p, 1, account, all, n);
    return APR_SUCCESS;
}

/* A visitor's visits in the account up to id (in p), with their trackers' snapshot
 * tags (the tracker cache trk lives in tp). */
static apr_status_t agg_history(qrt_db_t *db, apr_pool_t *p, apr_pool_t *tp,
                                apr_hash_t *trk, const char *visitor,
                                apr_int64_t account, apr_int64_t id,
                                qrt_agg_visit_t **out, int *n)
{
    agg_list_ctx c;
    const void *args[] = { visitor, &account, &id };
    qrt_agg_visit_t *all;
    apr_status_t rv;
    int i;

    c.p = p;
    c.list = apr_array_make(p, 16, sizeof(qrt_agg_visit_t));
    rv = qrt_db_each(db, p, "qrt_agg_visitor", args, agg_visit_row, &c);
    all = (qrt_agg_visit_t *)c.list->elts;
    for (i = 0; i < c.list->nelts && rv == APR_SUCCESS; i++) {
        agg_trk_t *k;

        rv = agg_trk_get(db, tp, trk, all[i].tracker, 0, &k);
        if (rv == APR_SUCCESS) {
            all[i].tags = k->tags;
            all[i].ntags = k->ntags;
        }
    }
    *out = all;
    *n = c.list->nelts;
    return rv;
}

/* The previous visit in one dimension (browser, country or city): the previous
 * visit in the account when that one had the same value, else one more seek. */
static apr_status_t agg_prev_dim(qrt_db_t *db, apr_pool_t *p, const qrt_visit_t *v,
                                 const qrt_agg_visit_t *x, apr_int64_t account,
                                 const char *last_val, const char *val,
                                 const char *label, const agg_prev *in_account,
                                 agg_prev *out)
{
    const void *args[] = { v->visitor, &account, &x->id, val };

    if (!strcmp(last_val, val)) {
        *out = *in_account;
        return APR_SUCCESS;
    }
    return agg_seek(db, p, label, args, out);
}

/* Prevs of an in-order visit x (no later visit of its visitor in the account). */
static apr_status_t agg_prevs_inorder(qrt_db_t *db, apr_pool_t *p, apr_hash_t *trk,
                                      const qrt_visit_t *v, const qrt_agg_visit_t *x,
                                      apr_int64_t account, int is_new,
                                      const agg_seek_row *last, agg_prevs *pv)
{
    agg_trk_t *lk;
    apr_status_t rv = APR_SUCCESS;
    int j;

    memset(pv, 0, sizeof(*pv));
    pv->tag = apr_pcalloc(p, (x->ntags > 0 ? x->ntags : 1) * sizeof(agg_prev));
    if (!last->has) {
        return APR_SUCCESS;
    }
    pv->a.has = pv->a.same = 1;
    pv->a.t = last->t;
    if (last->tracker == x->tracker) {
        pv->tr = pv->a;
    }
    else if (!is_new) {
        const void *args[] = { v->visitor, &x->tracker, &x->id };

        rv = agg_seek(db, p, "qrt_agg_seek_t", args, &pv->tr);
    }
    if (rv == APR_SUCCESS) {
        rv = agg_prev_dim(db, p, v, x, account, last->browser, x->browser,
                          "qrt_agg_seek_b", &pv->a, &pv->br);
    }
    if (rv == APR_SUCCESS) {
        rv = agg_prev_dim(db, p, v, x, account, last->country, x->country,
                          "qrt_agg_seek_c", &pv->a, &pv->co);
    }
    if (rv == APR_SUCCESS) {
        rv = agg_prev_dim(db, p, v, x, account, last->city, x->city,
                          "qrt_agg_seek_y", &pv->a, &pv->ci);
    }
    if (rv == APR_SUCCESS) {
        rv = agg_trk_get(db, p, trk, last->tracker, 0, &lk);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    pv->fg = qrt_agg_subset(x->tags, x->ntags, lk->tags, lk->ntags);
    for (j = 0; j < x->ntags && rv == APR_SUCCESS; j++) {
        if (agg_has_tag(lk->tags, lk->ntags, x->tags[j])) {
            pv->tag[j] = pv->a;
        }
        else {
            const void *args[] = { v->visitor, &account, &x->id, x->tags[j] };

            rv = agg_seek(db, p, "qrt_agg_seek_g", args, &pv->tag[j]);
        }
    }
    return rv;
}

apr_status_t qrt_store_agg_record(qrt_db_t *db, apr_pool_t *p, const qrt_visit_t *v,
                                  const int *is_new, int n)
{
    apr_pool_t *sp;
    agg_acc *a;
    apr_hash_t *trk, *batch_last;
    apr_int64_t base = 0;
    apr_status_t rv = APR_SUCCESS;
    int i, need_ids = 0;

    for (i = 0; i < n; i++) {
        need_ids |= v[i].id <= 0;
    }
    if (n <= 0) {
        return APR_SUCCESS;
    }
    apr_pool_create(&sp, p);
    a = acc_make(db, sp);
    trk = apr_hash_make(sp);
    batch_last = apr_hash_make(sp);
    if (need_ids) {
        /* The batch's rows are the newest: ids follow the insertion order. */
        const void *args[] = { NULL };
        apr_int64_t max = 0;

        rv = qrt_db_each(db, sp, "qrt_agg_max_id", args, agg_int_row, &max);
        base = max - n + 1;
    }
    for (i = 0; i < n && rv == APR_SUCCESS; i++) {
        qrt_agg_visit_t x;
        agg_seek_row last, *seen;
        agg_prevs pv;
        agg_trk_t *k;
        const char *seen_key;

        if (v[i].bot) {
            continue;
        }
        rv = agg_trk_get(db, sp, trk, v[i].tracker_id, 1, &k);
        if (rv != APR_SUCCESS) {
            break;
        }
        memset(&x, 0, sizeof(x));
        x.id = need_ids ? base + i : v[i].id;
        x.t = v[i].visit_start;
        x.tracker = v[i].tracker_id;
        x.click = v[i].source && !strcmp(v[i].source, "click");
        x.browser = agg_nz(v[i].browser);
        x.country = agg_nz(v[i].country);
        x.city = agg_nz(v[i].city);
        x.tags = k->tags;
        x.ntags = k->ntags;
        memset(&last, 0, sizeof(last));
        seen_key = apr_psprintf(sp, "%s/%" APR_INT64_T_FMT, v[i].visitor, k->account);
        seen = apr_hash_get(batch_last, seen_key, APR_HASH_KEY_STRING);
        if (seen && seen->t <= x.t) {
            /* The visitor's latest visit in the account is an earlier one of this
             * batch, recorded in order: no need to look for it. */
            last = *seen;
        }
        else {
            const void *args[] = { v[i].visitor, &k->account, &x.id };

            rv = qrt_db_each(db, sp, "qrt_agg_seek_a", args, agg_seek_a_row, &last);
        }
        if (rv != APR_SUCCESS) {
            break;
        }
        if (last.has && last.t > x.t) {
            apr_hash_set(batch_last, seen_key, APR_HASH_KEY_STRING, NULL);
            rv = agg_recompute(a, db, sp, trk, v[i].visitor, k->account, x.id);
            continue;
        }
        seen = apr_palloc(sp, sizeof(*seen));
        seen->has = 1;
        seen->t = x.t;
        seen->id = x.id;
        seen->tracker = x.tracker;
        seen->browser = x.browser;
        seen->country = x.country;
        seen->city = x.city;
        apr_hash_set(batch_last, seen_key, APR_HASH_KEY_STRING, seen);
        rv = agg_prevs_inorder(db, sp, trk, &v[i], &x, k->account,
                               is_new ? is_new[i] : 0, &last, &pv);
        if (rv == APR_SUCCESS) {
            agg_emit(a, 1, k->account, &x, &pv);
        }
    }
    if (rv == APR_SUCCESS) {
        rv = acc_flush_counts(a);
    }
    if (rv == APR_SUCCESS) {
        rv = acc_flush_links(a);
    }
    apr_pool_destroy(sp);
    return rv;
}

/* ---- a tracker deleted or retagged ---------------------------------------- */

typedef struct {
    apr_pool_t *p;
    apr_array_header_t *list;
} agg_strs_ctx;

static apr_status_t agg_strs_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_strs_ctx *c = ctx;

    APR_ARRAY_PUSH(c->list, const char *) = apr_pstrdup(c->p, agg_str(db, row, 0));
    return APR_SUCCESS;
}

static apr_status_t agg_trk_now_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    apr_int64_t *out = ctx;

    out[0] = qrt_db_int(db, row, 0, 0);
    out[1] = qrt_db_int(db, row, 1, 1);
    return APR_SUCCESS;
}

apr_status_t qrt_store_agg_tracker_changed(qrt_db_t *db, apr_pool_t *p,
                                           apr_int64_t tracker_id)
{
    const void *args[] = { &tracker_id }, *none[] = { NULL };
    apr_int64_t now[2] = { 0, 1 }, nvis = 0, maxid = 0;
    apr_pool_t *sp, *vp;
    apr_hash_t *trk;
    agg_trk_t *k;
    agg_strs_ctx tags, visitors;
    agg_acc *a;
    apr_status_t rv;
    int i, j;

    apr_pool_create(&sp, p);
    trk = apr_hash_make(sp);
    rv = agg_trk_get(db, sp, trk, tracker_id, 0, &k);
    if (rv == APR_NOTFOUND) {
        apr_pool_destroy(sp);
        return APR_SUCCESS;         /* never aggregated: its first visit snapshots it */
    }
    tags.p = visitors.p = sp;
    tags.list = apr_array_make(sp, 4, sizeof(const char *));
    visitors.list = apr_array_make(sp, 64, sizeof(const char *));
    if (rv == APR_SUCCESS) {
        rv = qrt_db_each(db, sp, "qrt_agg_trk_now", args, agg_trk_now_row, now);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_db_each(db, sp, "qrt_agg_tags_now", args, agg_strs_row, &tags);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_db_each(db, sp, "qrt_agg_trk_nvisitors", args, agg_int_row, &nvis);
    }
    if (rv == APR_SUCCESS && nvis > AGG_REPAIR_MAX) {
        apr_pool_destroy(sp);
        return APR_EAGAIN;          /* reports count from the visits until a rebuild */
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_db_each(db, sp, "qrt_agg_trk_visitors", args, agg_strs_row, &visitors);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_db_each(db, sp, "qrt_agg_max_id", none, agg_int_row, &maxid);
    }
    qsort(tags.list->elts, tags.list->nelts, sizeof(const char *), agg_strcmp);
    a = acc_make(db, sp);
    apr_pool_create(&vp, sp);
    for (i = 0; i < visitors.list->nelts && rv == APR_SUCCESS; i++) {
        const char *visitor = APR_ARRAY_IDX(visitors.list, i, const char *);
        qrt_agg_visit_t *old, *cur;
        int n = 0, m = 0;

        rv = agg_history(db, vp, sp, trk, visitor, k->account, maxid, &old, &n);
        if (rv != APR_SUCCESS) {
            break;
        }
        cur = apr_palloc(vp, (n > 0 ? n : 1) * sizeof(*cur));
        for (j = 0; j < n; j++) {
            if (old[j].tracker != tracker_id) {
                cur[m++] = old[j];
            }
            else if (!now[1] && now[0] == k->account) {
                cur[m] = old[j];
                cur[m].tags = (const char *const *)tags.list->elts;
                cur[m++].ntags = tags.list->nelts;
            }
        }
        agg_emit_list(a, vp, -1, k->account, old, n);
        agg_emit_list(a, vp, 1, k->account, cur, m);
        if (a->nlinks > AGG_LINK_FLUSH) {
            rv = acc_flush_links(a);
        }
        apr_pool_clear(vp);
    }
    if (rv == APR_SUCCESS) {
        rv = acc_flush_counts(a);
    }
    if (rv == APR_SUCCESS) {
        rv = acc_flush_links(a);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_db_exec(db, sp, "qrt_agg_tag_del", NULL, args);
    }
    if (rv == APR_SUCCESS) {
        rv = (now[1] || now[0] != k->account)
             ? qrt_db_exec(db, sp, "qrt_agg_trk_del", NULL, args)
             : qrt_db_exec(db, sp, "qrt_agg_tag_snap", NULL, args);
    }
    apr_pool_destroy(sp);
    return rv;
}

/* ---- rebuild --------------------------------------------------------------- */

typedef struct {
    agg_acc *a;
    apr_hash_t *trk;            /* tracker id -> agg_trk_t */
    apr_pool_t *vp;             /* the current visitor's visits */
    const char *visitor;        /* current visitor (in vp), or NULL */
    apr_array_header_t *run;    /* its visits: qrt_agg_visit_t, account in .id's place */
    apr_array_header_t *accts;  /* account of each visit of run */
    const char *last;           /* the page starts after this visitor */
    long rows;
} agg_rb;

static apr_status_t rb_trk_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_rb *c = ctx;
    agg_trk_t *k = apr_pcalloc(c->a->p, sizeof(*k));

    k->id = qrt_db_int(db, row, 0, 0);
    k->account = qrt_db_int(db, row, 1, 0);
    k->tags = apr_pcalloc(c->a->p, sizeof(const char *));
    apr_hash_set(c->trk, &k->id, sizeof(k->id), k);
    return APR_SUCCESS;
}

static apr_status_t rb_tag_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    apr_hash_t *tags = ctx;
    apr_int64_t id = qrt_db_int(db, row, 0, 0);
    apr_array_header_t *list = apr_hash_get(tags, &id, sizeof(id));

    if (!list) {
        apr_int64_t *key = apr_palloc(apr_hash_pool_get(tags), sizeof(*key));

        *key = id;
        list = apr_array_make(apr_hash_pool_get(tags), 4, sizeof(const char *));
        apr_hash_set(tags, key, sizeof(*key), list);
    }
    APR_ARRAY_PUSH(list, const char *) = apr_pstrdup(apr_hash_pool_get(tags),
                                                     agg_str(db, row, 1));
    return APR_SUCCESS;
}

/* Emits the finished visitor's visits, account by account. */
static void rb_visitor_done(agg_rb *c)
{
    qrt_agg_visit_t *all = (qrt_agg_visit_t *)c->run->elts;
    apr_int64_t *acct = (apr_int64_t *)c->accts->elts;
    int n = c->run->nelts, i, j, m;
    char *done;

    if (n == 0) {
        return;
    }
    done = apr_pcalloc(c->vp, n);
    for (i = 0; i < n; i++) {
        qrt_agg_visit_t *list;

        if (done[i]) {
            continue;
        }
        list = apr_palloc(c->vp, n * sizeof(*list));
        for (j = i, m = 0; j < n; j++) {
            if (!done[j] && acct[j] == acct[i]) {
                list[m++] = all[j];
                done[j] = 1;
            }
        }
        agg_emit_list(c->a, c->vp, 1, acct[i], list, m);
    }
}

static void rb_reset(agg_rb *c)
{
    apr_pool_clear(c->vp);
    c->visitor = NULL;
    c->run = apr_array_make(c->vp, 16, sizeof(qrt_agg_visit_t));
    c->accts = apr_array_make(c->vp, 16, sizeof(apr_int64_t));
}

static apr_status_t rb_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_rb *c = ctx;
    const char *visitor = agg_str(db, row, 0), *src;
    apr_int64_t tracker = qrt_db_int(db, row, 3, 0);
    agg_trk_t *k = apr_hash_get(c->trk, &tracker, sizeof(tracker));
    qrt_agg_visit_t *x;

    c->rows++;
    if (!c->visitor || strcmp(c->visitor, visitor)) {
        rb_visitor_done(c);
        rb_reset(c);
        c->visitor = apr_pstrdup(c->vp, visitor);
    }
    if (!k) {
        return APR_SUCCESS;         /* a deleted tracker */
    }
    x = apr_array_push(c->run);
    memset(x, 0, sizeof(*x));
    x->id = qrt_db_int(db, row, 1, 0);
    x->t = qrt_db_int(db, row, 2, 0);
    x->tracker = tracker;
    src = qrt_db_str(db, row, 4);
    x->click = src && !strcmp(src, "click");
    x->browser = acc_str(c->a, agg_str(db, row, 5));
    x->country = acc_str(c->a, agg_str(db, row, 6));
    x->city = acc_str(c->a, agg_str(db, row, 7));
    x->tags = k->tags;
    x->ntags = k->ntags;
    APR_ARRAY_PUSH(c->accts, apr_int64_t) = k->account;
    return APR_SUCCESS;
}

apr_status_t qrt_store_agg_rebuild(qrt_db_t *db, apr_pool_t *p)
{
    static const char *const clear[] = {
        "qrt_agg_clear_cnt", "qrt_agg_clear_link", "qrt_agg_clear_gap",
        "qrt_agg_clear_day", "qrt_agg_clear_tag", "qrt_agg_clear_trk",
        "qrt_agg_trk_all", "qrt_agg_tag_all", NULL
    };
    const void *none[] = { NULL };
    apr_pool_t *rp, *pp;
    apr_hash_t *tags;
    apr_hash_index_t *hi;
    agg_rb c;
    apr_status_t rv = APR_SUCCESS;
    apr_int64_t limit = AGG_SCAN_PAGE;
    int i;

    apr_pool_create(&rp, p);
    apr_pool_create(&pp, rp);
    if (!strcmp(apr_dbd_name(db->driver), "sqlite3")) {
        /* The rebuild writes links in visitor order, all over the indexes: give this
         * connection (qrtrack-admin's) a cache that holds them. A setting, not data. */
        int nrows = 0;

        apr_dbd_query(db->driver, db->handle, &nrows, "PRAGMA cache_size = -524288");
    }
    rv = qrt_store_write_lock(db, rp);
    for (i = 0; clear[i] && rv == APR_SUCCESS; i++) {
        rv = qrt_db_exec(db, rp, clear[i], NULL, none);
    }
    memset(&c, 0, sizeof(c));
    c.a = acc_make(db, rp);
    c.trk = apr_hash_make(rp);
    apr_pool_create(&c.vp, rp);
    rb_reset(&c);
    tags = apr_hash_make(rp);
    if (rv == APR_SUCCESS) {
        rv = qrt_db_each(db, pp, "qrt_agg_trk_load", none, rb_trk_row, &c);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_db_each(db, pp, "qrt_agg_tag_load", none, rb_tag_row, tags);
    }
    for (hi = apr_hash_first(rp, tags);
         hi && rv == APR_SUCCESS; hi = apr_hash_next(hi)) {
        const apr_int64_t *id = apr_hash_this_key(hi);
        apr_array_header_t *list = apr_hash_this_val(hi);
        agg_trk_t *k = apr_hash_get(c.trk, id, sizeof(*id));

        if (k) {
            qsort(list->elts, list->nelts, sizeof(const char *), agg_strcmp);
            k->tags = (const char **)list->elts;
            k->ntags = list->nelts;
        }
    }
    apr_pool_clear(pp);
    c.last = "";
    while (rv == APR_SUCCESS) {
        const char *from = apr_pstrdup(pp, c.last);
        const void *args[] = { from, &limit };
        long before = c.rows;

        rv = qrt_db_each(db, pp, "qrt_agg_scan_page", args, rb_row, &c);
        if (rv != APR_SUCCESS || c.rows - before < limit) {
            break;                  /* the last page: its last visitor is whole */
        }
        /* A full page: the last visitor may go on in the next one; read it whole. */
        {
            const char *whole = apr_pstrdup(pp, c.visitor);
            const void *one[] = { whole };

            rb_reset(&c);
            rv = qrt_db_each(db, pp, "qrt_agg_scan_one", one, rb_row, &c);
            c.last = apr_pstrdup(rp, whole);
        }
        rb_visitor_done(&c);
        rb_reset(&c);
        if (rv == APR_SUCCESS && c.a->nlinks > AGG_LINK_FLUSH) {
            rv = acc_flush_links(c.a);
        }
        apr_pool_clear(pp);
    }
    if (rv == APR_SUCCESS) {
        rb_visitor_done(&c);
        rv = acc_flush_links(c.a);
    }
    if (rv == APR_SUCCESS) {
        rv = acc_flush_counts(c.a);
    }
    apr_pool_destroy(rp);
    return rv;
}

/* ---- reads: one kind over a window ----------------------------------------- */

typedef struct {
    qrt_agg_row_t row;
    apr_int64_t firsts, rets;   /* counters of the full days */
    apr_int64_t pv;             /* visits of the partial days */
    apr_int64_t pt, pp;         /* links with t, with p in the partial days */
    apr_int64_t link;           /* the L or R link count */
} agg_grp;

typedef struct {
    apr_pool_t *p;
    apr_hash_t *groups;         /* grp bytes + val -> agg_grp */
    int field;                  /* which link count a link query adds to */
} agg_win;

enum { F_PT, F_PP, F_LINK };

static agg_grp *win_group(agg_win *w, apr_int64_t grp, const char *val)
{
    char buf[320], *key = buf;
    apr_size_t n = strlen(val);
    agg_grp *g;

    if (n + sizeof(grp) > sizeof(buf)) {
        key = apr_palloc(w->p, n + sizeof(grp));
    }
    memcpy(key, &grp, sizeof(grp));
    memcpy(key + sizeof(grp), val, n);
    g = apr_hash_get(w->groups, key, n + sizeof(grp));
    if (!g) {
        g = apr_pcalloc(w->p, sizeof(*g));
        g->row.grp = grp;
        g->row.val = apr_pstrdup(w->p, val);
        key = apr_pmemdup(w->p, key, n + sizeof(grp));
        apr_hash_set(w->groups, key, n + sizeof(grp), g);
    }
    return g;
}

static apr_status_t win_cnt_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_win *w = ctx;
    agg_grp *g = win_group(w, qrt_db_int(db, row, 0, 0), agg_str(db, row, 1));

    g->row.scans += qrt_db_int(db, row, 2, 0);
    g->row.clicks += qrt_db_int(db, row, 3, 0);
    g->firsts += qrt_db_int(db, row, 4, 0);
    g->rets += qrt_db_int(db, row, 5, 0);
    return APR_SUCCESS;
}

static apr_status_t win_raw_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_win *w = ctx;
    apr_int64_t scans = qrt_db_int(db, row, 2, 0), clicks = qrt_db_int(db, row, 3, 0);
    agg_grp *g;

    if (scans + clicks == 0) {
        return APR_SUCCESS;
    }
    g = win_group(w, qrt_db_int(db, row, 0, 0), agg_str(db, row, 1));
    g->row.scans += scans;
    g->row.clicks += clicks;
    g->pv += scans + clicks;
    return APR_SUCCESS;
}

static apr_status_t win_link_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_win *w = ctx;
    agg_grp *g = win_group(w, qrt_db_int(db, row, 0, 0), agg_str(db, row, 1));
    apr_int64_t n = qrt_db_int(db, row, 2, 0);

    if (w->field == F_PT) {
        g->pt += n;
    }
    else if (w->field == F_PP) {
        g->pp += n;
    }
    else {
        g->link += n;
    }
    return APR_SUCCESS;
}

/* Counter sums of a kind over the full days [d0, d1) into w, for one tracker when grp
 * is given (kind QRT_AGG_T). */
static apr_status_t win_counters(qrt_db_t *db, apr_pool_t *p, agg_win *w, int kind,
                                 apr_int64_t account, const apr_int64_t *grp,
                                 apr_int64_t d0, apr_int64_t d1)
{
    qrt_agg_range_t r[5];
    apr_int64_t vals[5][5];
    const void *args[30];
    int n = qrt_agg_split_days(d0, d1, r), i, k = 0;

    if (n == 0) {
        return APR_SUCCESS;
    }
    for (i = 0; i < 5; i++) {
        vals[i][0] = kind;
        vals[i][1] = account;
        vals[i][2] = i < n ? r[i].lvl : 0;
        vals[i][3] = i < n ? r[i].b0 : 1;
        vals[i][4] = i < n ? r[i].b1 : 0;
        args[k++] = &vals[i][0];
        args[k++] = &vals[i][1];
        if (grp) {
            args[k++] = grp;
        }
        args[k++] = &vals[i][2];
        args[k++] = &vals[i][3];
        args[k++] = &vals[i][4];
    }
    return qrt_db_each(db, p, grp ? "qrt_agg_cnt_sum1" : "qrt_agg_cnt_sum", args,
                    win_cnt_row, w);
}

/* Links of a kind with t in [t0, t1] and p in [p0, p1], scanned by t or by p, added
 * to field of the groups. */
static apr_status_t win_links(qrt_db_t *db, apr_pool_t *p, agg_win *w, int kind,
                              apr_int64_t account, int by_p, apr_int64_t t0,
                              apr_int64_t t1, apr_int64_t p0, apr_int64_t p1, int field)
{
    char label[16];
    apr_int64_t k = kind;
    const void *largs[5], *gargs[6];
    apr_status_t rv;

    w->field = field;
    apr_snprintf(label, sizeof(label), "qrt_agg_l%c_%d", by_p ? 'p' : 't', kind);
    largs[0] = gargs[1] = &account;
    largs[1] = gargs[2] = by_p ? &p0 : &t0;
    largs[2] = gargs[3] = by_p ? &p1 : &t1;
    largs[3] = gargs[4] = by_p ? &t0 : &p0;
    largs[4] = gargs[5] = by_p ? &t1 : &p1;
    gargs[0] = &k;
    rv = qrt_db_each(db, p, label, largs, win_link_row, w);
    if (rv == APR_SUCCESS && kind != QRT_AGG_A) {
        rv = qrt_db_each(db, p, by_p ? "qrt_agg_gp" : "qrt_agg_gt", gargs, win_link_row, w);
    }
    return rv;
}

static apr_int64_t win_total(agg_win *w, int what)
{
    apr_hash_index_t *hi;
    apr_int64_t sum = 0;

    for (hi = apr_hash_first(w->p, w->groups); hi; hi = apr_hash_next(hi)) {
        agg_grp *g = apr_hash_this_val(hi);

        sum += what ? g->rets : g->row.scans + g->row.clicks - g->firsts;
    }
    return sum;
}

/* Which link scan is cheapest: by p before s (0), by t inside (1), by t after e (2),
 * estimated from the account's counters. */
static apr_status_t win_choose(qrt_db_t *db, apr_pool_t *p, apr_int64_t account,
                               apr_int64_t s, apr_int64_t e, int *form)
{
    apr_int64_t ds = qrt_agg_fdiv(s, QRT_AGG_DAY), de = qrt_agg_fdiv(e, QRT_AGG_DAY);
    apr_int64_t lo = qrt_agg_fdiv(QRT_AGG_TMIN, QRT_AGG_DAY);
    apr_int64_t hi = qrt_agg_fdiv(QRT_AGG_TMAX, QRT_AGG_DAY);
    apr_int64_t before, inside, after;
    agg_win w;
    apr_status_t rv;

    w.p = p;
    w.groups = apr_hash_make(p);
    rv = win_counters(db, p, &w, QRT_AGG_A, account, NULL, lo, ds);
    before = win_total(&w, 1);
    w.groups = apr_hash_make(p);
    if (rv == APR_SUCCESS) {
        rv = win_counters(db, p, &w, QRT_AGG_A, account, NULL, ds, de + 1);
    }
    inside = win_total(&w, 0);
    w.groups = apr_hash_make(p);
    if (rv == APR_SUCCESS) {
        rv = win_counters(db, p, &w, QRT_AGG_A, account, NULL, de + 1, hi + 1);
    }
    after = win_total(&w, 0);
    *form = (before <= inside && before <= after) ? 0 : (inside <= after ? 1 : 2);
    return rv;
}

apr_status_t qrt_store_agg_window(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                  int kind, const apr_int64_t *only, int nonly,
                                  apr_int64_t s, apr_int64_t e, int want_uniques,
                                  apr_array_header_t **out)
{
    int few = kind == QRT_AGG_T && only && nonly <= AGG_FEW;
    qrt_agg_window_t ws;
    agg_win w;
    apr_hash_index_t *hi;
    apr_status_t rv = APR_SUCCESS;
    char label[16];
    int i, j, form = 0;

    *out = apr_array_make(p, 16, sizeof(qrt_agg_row_t));
    if (kind < QRT_AGG_T || kind > QRT_AGG_G) {
        return APR_EINVAL;
    }
    if (s < QRT_AGG_TMIN) {
        s = QRT_AGG_TMIN;
    }
    if (e > QRT_AGG_TMAX) {
        e = QRT_AGG_TMAX;
    }
    if (s > e) {
        return APR_SUCCESS;
    }
    w.p = p;
    w.groups = apr_hash_make(p);
    qrt_agg_window_split(s, e, &ws);
    if (few) {
        /* A few listed trackers: their own counters and visits. */
        for (j = 0; j < nonly && rv == APR_SUCCESS; j++) {
            rv = win_counters(db, p, &w, kind, account_id, &only[j], ws.d0, ws.d1);
            for (i = 0; i < ws.nparts && rv == APR_SUCCESS; i++) {
                const void *args[] = { &only[j], &ws.part[i][0], &ws.part[i][1] };

                rv = qrt_db_each(db, p, "qrt_agg_raw_1t", args, win_raw_row, &w);
            }
        }
    }
    else {
        rv = win_counters(db, p, &w, kind, account_id, NULL, ws.d0, ws.d1);
        apr_snprintf(label, sizeof(label), "qrt_agg_raw_%d", kind);
        for (i = 0; i < ws.nparts && rv == APR_SUCCESS; i++) {
            const void *args[] = { &account_id, &ws.part[i][0], &ws.part[i][1] };

            rv = qrt_db_each(db, p, label, args, win_raw_row, &w);
        }
    }
    if (rv == APR_SUCCESS && want_uniques) {
        if (s == QRT_AGG_TMIN) {
            form = 0;
        }
        else if (e == QRT_AGG_TMAX) {
            form = 2;
        }
        else {
            rv = win_choose(db, p, account_id, s, e, &form);
        }
    }
    if (rv == APR_SUCCESS && want_uniques) {
        /* The partial days: links by t (for firsts) or by p (for rets). */
        for (i = 0; i < ws.nparts && rv == APR_SUCCESS; i++) {
            if (form == 2) {
                rv = win_links(db, p, &w, kind, account_id, 1, AGG_LO, AGG_HI,
                               ws.part[i][0], ws.part[i][1], F_PP);
            }
            else {
                rv = win_links(db, p, &w, kind, account_id, 0, ws.part[i][0],
                               ws.part[i][1], AGG_LO, AGG_HI, F_PT);
            }
        }
        if (rv == APR_SUCCESS && form == 0 && s > QRT_AGG_TMIN) {
            rv = win_links(db, p, &w, kind, account_id, 1, s, e, AGG_LO, s - 1, F_LINK);
        }
        else if (rv == APR_SUCCESS && form == 1) {
            rv = win_links(db, p, &w, kind, account_id, 0, s, e, AGG_LO, s - 1, F_LINK);
        }
        else if (rv == APR_SUCCESS && form == 2 && e < QRT_AGG_TMAX) {
            rv = win_links(db, p, &w, kind, account_id, 0, e + 1, AGG_HI, s, e, F_LINK);
        }
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    for (hi = apr_hash_first(p, w.groups); hi; hi = apr_hash_next(hi)) {
        agg_grp *g = apr_hash_this_val(hi);
        qrt_agg_row_t *r;

        if (g->row.scans + g->row.clicks <= 0) {
            continue;
        }
        r = apr_array_push(*out);
        *r = g->row;
        if (want_uniques) {
            r->uniques = form == 2
                ? g->row.scans + g->row.clicks - g->rets - g->pp + g->link
                : g->firsts + g->pv - g->pt + g->link;
        }
    }
    return APR_SUCCESS;
}

/* ---- reads: local days, daily series ------------------------------------- */

typedef struct {
    apr_pool_t *p;
    apr_array_header_t *days;
} agg_days_ctx;

static apr_status_t days_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_days_ctx *c = ctx;
    qrt_agg_day_t *d = apr_array_push(c->days);

    d->day = qrt_db_int(db, row, 0, 0) - AGG_DAY_SHIFT;
    d->scans = qrt_db_int(db, row, 1, 0);
    d->clicks = qrt_db_int(db, row, 2, 0);
    d->uniques = qrt_db_int(db, row, 3, 0);
    return APR_SUCCESS;
}

static int days_cmp(const void *a, const void *b)
{
    const qrt_agg_day_t *x = a, *y = b;

    return x->day < y->day ? -1 : x->day > y->day;
}

/* One partial local day as a window of the account. */
static apr_status_t days_piece(qrt_db_t *db, apr_pool_t *p, apr_int64_t account,
                               apr_int64_t s, apr_int64_t e, apr_int64_t day,
                               apr_array_header_t *out)
{
    apr_array_header_t *rows;
    apr_status_t rv = qrt_store_agg_window(db, p, account, QRT_AGG_A, NULL, 0, s, e, 1,
                                           &rows);

    if (rv == APR_SUCCESS && rows->nelts > 0) {
        qrt_agg_row_t *r = &APR_ARRAY_IDX(rows, 0, qrt_agg_row_t);
        qrt_agg_day_t *d = apr_array_push(out);

        d->day = day;
        d->scans = r->scans;
        d->clicks = r->clicks;
        d->uniques = r->uniques;
    }
    return rv;
}

apr_status_t qrt_store_agg_days(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                apr_int64_t s, apr_int64_t e, int offset,
                                apr_array_header_t **out)
{
    apr_int64_t off = offset, ld0, ld1, shifted = offset + AGG_DAY_SHIFT * QRT_AGG_DAY;
    apr_status_t rv = APR_SUCCESS;
    agg_days_ctx c;
    int i;

    *out = apr_array_make(p, 32, sizeof(qrt_agg_day_t));
    if (offset % QRT_AGG_QUARTER != 0) {
        return APR_ENOTIMPL;
    }
    if (s < QRT_AGG_TMIN) {
        s = QRT_AGG_TMIN;
    }
    if (e > QRT_AGG_TMAX) {
        e = QRT_AGG_TMAX;
    }
    if (s > e) {
        return APR_SUCCESS;
    }
    /* Local days [ld0, ld1) lie whole inside the window. */
    ld0 = -qrt_agg_fdiv(-(s + off), QRT_AGG_DAY);
    ld1 = qrt_agg_fdiv(e + 1 + off, QRT_AGG_DAY);
    c.p = p;
    c.days = *out;
    if (ld0 > ld1) {
        return days_piece(db, p, account_id, s, e, ld1, *out);
    }
    if (ld0 < ld1) {
        apr_int64_t q0 = (ld0 * QRT_AGG_DAY - off) / QRT_AGG_QUARTER;
        apr_int64_t q1 = (ld1 * QRT_AGG_DAY - off) / QRT_AGG_QUARTER - 1;
        const void *args[] = { &shifted, &shifted, &shifted, &account_id, &q0, &q1 };

        rv = qrt_db_each(db, p, "qrt_agg_day_sum", args, days_row, &c);
    }
    if (rv == APR_SUCCESS && s < ld0 * QRT_AGG_DAY - off) {
        rv = days_piece(db, p, account_id, s, ld0 * QRT_AGG_DAY - off - 1, ld0 - 1, *out);
    }
    if (rv == APR_SUCCESS && ld1 * QRT_AGG_DAY - off <= e) {
        rv = days_piece(db, p, account_id, ld1 * QRT_AGG_DAY - off, e, ld1, *out);
    }
    /* Drop days that only had zero rows, then sort. */
    for (i = 0; i < (*out)->nelts; i++) {
        qrt_agg_day_t *d = &APR_ARRAY_IDX(*out, i, qrt_agg_day_t);

        if (d->scans + d->clicks <= 0) {
            *d = APR_ARRAY_IDX(*out, (*out)->nelts - 1, qrt_agg_day_t);
            (*out)->nelts--;
            i--;
        }
    }
    qsort((*out)->elts, (*out)->nelts, sizeof(qrt_agg_day_t), days_cmp);
    return rv;
}

static apr_status_t daily_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    apr_array_header_t *out = ctx;
    qrt_agg_daily_t *d = apr_array_push(out);

    d->day = qrt_db_int(db, row, 0, 0);
    d->grp = qrt_db_int(db, row, 1, 0);
    d->scans = qrt_db_int(db, row, 2, 0);
    d->clicks = qrt_db_int(db, row, 3, 0);
    return APR_SUCCESS;
}

apr_status_t qrt_store_agg_daily(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                 int kind, const apr_int64_t *only, int nonly,
                                 apr_int64_t d0, apr_int64_t d1, apr_array_header_t **out)
{
    apr_int64_t k = kind;
    apr_status_t rv = APR_SUCCESS;
    int i;

    *out = apr_array_make(p, 64, sizeof(qrt_agg_daily_t));
    if (kind == QRT_AGG_T && only && nonly <= AGG_FEW) {
        for (i = 0; i < nonly && rv == APR_SUCCESS; i++) {
            const void *args[] = { &k, &account_id, &only[i], &d0, &d1 };

            rv = qrt_db_each(db, p, "qrt_agg_cnt_days1", args, daily_row, *out);
        }
        return rv;
    }
    {
        const void *args[] = { &k, &account_id, &d0, &d1 };

        return qrt_db_each(db, p, "qrt_agg_cnt_days", args, daily_row, *out);
    }
}

/* ---- reads: state, raw visits, trackers ---------------------------------- */

static apr_status_t state_tag_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    qrt_agg_state_t *st = ctx;
    apr_pool_t *p = apr_hash_pool_get(st->dirty_tags);
    const char *tag = apr_pstrdup(p, agg_str(db, row, 0));

    apr_hash_set(st->dirty_tags, tag, APR_HASH_KEY_STRING, tag);
    return APR_SUCCESS;
}

apr_status_t qrt_store_agg_state(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                 qrt_agg_state_t *st)
{
    const void *args[] = { &account_id, &account_id };
    apr_int64_t deleted = 0;
    apr_status_t rv;

    st->deleted = 0;
    st->dirty_tags = apr_hash_make(p);
    rv = qrt_db_each(db, p, "qrt_agg_deleted", args, agg_int_row, &deleted);
    st->deleted = deleted > 0;
    if (rv == APR_SUCCESS) {
        rv = qrt_db_each(db, p, "qrt_agg_dirty_tags", args, state_tag_row, st);
    }
    return rv;
}

typedef struct {
    apr_int64_t tracker, last_t, last_id;
    long n;
    qrt_agg_visit_fn *fn;
    void *ctx;
} raw_ctx;

static apr_status_t raw_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    raw_ctx *c = ctx;
    const char *src = qrt_db_str(db, row, 3);

    c->last_t = qrt_db_int(db, row, 0, 0);
    c->last_id = qrt_db_int(db, row, 1, 0);
    c->n++;
    c->fn(c->ctx, c->tracker, c->last_t, src && !strcmp(src, "click"),
          agg_str(db, row, 2), agg_str(db, row, 4), agg_str(db, row, 5),
          agg_str(db, row, 6));
    return APR_SUCCESS;
}

apr_status_t qrt_store_agg_raw(qrt_db_t *db, apr_pool_t *p, apr_int64_t tracker_id,
                               apr_int64_t s, apr_int64_t e, qrt_agg_visit_fn *fn,
                               void *ctx)
{
    apr_pool_t *pp;
    apr_int64_t limit = AGG_RAW_PAGE, from = s;
    raw_ctx c;
    apr_status_t rv = APR_SUCCESS;

    memset(&c, 0, sizeof(c));
    c.tracker = tracker_id;
    c.fn = fn;
    c.ctx = ctx;
    c.last_t = s - 1;
    c.last_id = -1;
    apr_pool_create(&pp, p);
    for (;;) {
        const void *args[] = { &tracker_id, &from, &e, &c.last_t, &c.last_id, &limit };
        long before = c.n;

        rv = qrt_db_each(db, pp, "qrt_agg_raw_visits", args, raw_row, &c);
        apr_pool_clear(pp);
        if (rv != APR_SUCCESS || c.n - before < limit) {
            break;
        }
        from = c.last_t;
    }
    apr_pool_destroy(pp);
    return rv;
}

static apr_status_t rg_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_days_ctx *c = ctx;
    qrt_agg_row_t *r;

    if (qrt_db_int(db, row, 2, 0) + qrt_db_int(db, row, 3, 0) == 0) {
        return APR_SUCCESS;
    }
    r = apr_array_push(c->days);
    r->grp = qrt_db_int(db, row, 0, 0);
    r->val = apr_pstrdup(c->p, agg_str(db, row, 1));
    r->scans = qrt_db_int(db, row, 2, 0);
    r->clicks = qrt_db_int(db, row, 3, 0);
    r->uniques = qrt_db_int(db, row, 4, 0);
    return APR_SUCCESS;
}

apr_status_t qrt_store_agg_raw_groups(qrt_db_t *db, apr_pool_t *p, int by,
                                      const apr_int64_t *ids, int n, apr_int64_t s,
                                      apr_int64_t e, int offset, apr_array_header_t **out)
{
    apr_int64_t slot[QRT_AGG_RAW_IDS], shifted = offset + AGG_DAY_SHIFT * QRT_AGG_DAY;
    const void *args[QRT_AGG_RAW_IDS + 3];
    agg_days_ctx c;
    char label[16];
    apr_status_t rv;
    int i, k = 0;

    *out = apr_array_make(p, 16, sizeof(qrt_agg_row_t));
    if (by < QRT_AGG_RAW_ALL || by > QRT_AGG_RAW_COUNTRY || n > QRT_AGG_RAW_IDS) {
        return APR_EINVAL;
    }
    if (by == QRT_AGG_RAW_DATE) {
        args[k++] = &shifted;
    }
    for (i = 0; i < QRT_AGG_RAW_IDS; i++) {
        slot[i] = i < n ? ids[i] : 0;
        args[k++] = &slot[i];
    }
    args[k++] = &s;
    args[k++] = &e;
    c.p = p;
    c.days = *out;
    apr_snprintf(label, sizeof(label), "qrt_agg_rg_%d", by);
    rv = qrt_db_each(db, p, label, args, rg_row, &c);
    for (i = 0; i < (*out)->nelts && by == QRT_AGG_RAW_DATE; i++) {
        APR_ARRAY_IDX(*out, i, qrt_agg_row_t).grp -= AGG_DAY_SHIFT;
    }
    return rv;
}

apr_status_t qrt_store_agg_raw_uniques(qrt_db_t *db, apr_pool_t *p,
                                       const apr_int64_t *ids, int n, apr_int64_t s,
                                       apr_int64_t e, apr_int64_t *out)
{
    apr_int64_t slot[QRT_AGG_RAW_IDS];
    const void *args[QRT_AGG_RAW_IDS + 2];
    int i;

    *out = 0;
    if (n > QRT_AGG_RAW_IDS) {
        return APR_EINVAL;
    }
    for (i = 0; i < QRT_AGG_RAW_IDS; i++) {
        slot[i] = i < n ? ids[i] : 0;
        args[i] = &slot[i];
    }
    args[QRT_AGG_RAW_IDS] = &s;
    args[QRT_AGG_RAW_IDS + 1] = &e;
    return qrt_db_each(db, p, "qrt_agg_rg_u", args, agg_int_row, out);
}

typedef struct {
    apr_pool_t *p;
    apr_array_header_t *list;
    apr_hash_t *byid;
} rep_ctx;

static apr_status_t rep_tracker_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    rep_ctx *c = ctx;
    qrt_report_tracker_t *t = apr_array_push(c->list);

    t->id = qrt_db_int(db, row, 0, 0);
    t->name = apr_pstrdup(c->p, agg_str(db, row, 1));
    t->type = apr_pstrdup(c->p, agg_str(db, row, 2));
    t->tags = apr_array_make(c->p, 2, sizeof(qrt_report_tag_t));
    return APR_SUCCESS;
}

static apr_status_t rep_tag_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    rep_ctx *c = ctx;
    apr_int64_t id = qrt_db_int(db, row, 0, 0);
    qrt_report_tracker_t *t = apr_hash_get(c->byid, &id, sizeof(id));
    qrt_report_tag_t *g;
    const char *dim = qrt_db_str(db, row, 2);

    if (!t) {
        return APR_SUCCESS;
    }
    g = apr_array_push(t->tags);
    g->tag = apr_pstrdup(c->p, agg_str(db, row, 1));
    g->dimension = dim ? apr_pstrdup(c->p, dim) : NULL;
    g->value = apr_pstrdup(c->p, agg_str(db, row, 3));
    return APR_SUCCESS;
}

static int rep_tag_cmp(const void *a, const void *b)
{
    return strcmp(((const qrt_report_tag_t *)a)->tag, ((const qrt_report_tag_t *)b)->tag);
}

apr_status_t qrt_store_report_trackers(qrt_db_t *db, apr_pool_t *p,
                                       apr_int64_t account_id, apr_array_header_t **out)
{
    const void *args[] = { &account_id };
    rep_ctx c;
    apr_status_t rv;
    int i;

    c.p = p;
    c.list = apr_array_make(p, 16, sizeof(qrt_report_tracker_t));
    c.byid = apr_hash_make(p);
    *out = c.list;
    rv = qrt_db_each(db, p, "qrt_agg_rep_trackers", args, rep_tracker_row, &c);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    for (i = 0; i < c.list->nelts; i++) {
        qrt_report_tracker_t *t = &APR_ARRAY_IDX(c.list, i, qrt_report_tracker_t);

        apr_hash_set(c.byid, &t->id, sizeof(t->id), t);
    }
    rv = qrt_db_each(db, p, "qrt_agg_rep_tags", args, rep_tag_row, &c);
    for (i = 0; i < c.list->nelts; i++) {
        qrt_report_tracker_t *t = &APR_ARRAY_IDX(c.list, i, qrt_report_tracker_t);

        qsort(t->tags->elts, t->tags->nelts, sizeof(qrt_report_tag_t), rep_tag_cmp);
    }
    return rv;
}
