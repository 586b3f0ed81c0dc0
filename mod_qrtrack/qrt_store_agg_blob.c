/* qrt_store_agg_blob: sealing, invalidating and fetching the sealed report
 * aggregates (see qrt_store_agg_blob.h and qrt_aggblob.h). */
#include <string.h>
#include <apr_strings.h>
#include "qrt_store.h"
#include "qrt_agg.h"
#include "qrt_store_agg_acc.h"
#include "qrt_store_agg_blob.h"

#define AB_TODO_MAX 64              /* units looked at per seal call */
#define AB_FETCH_ROWS 16            /* sealed values fetched per statement */

const qrt_stmt_t qrt_store_agg_blob_stmts[] = {
    { "qrt_ab_fetch",
      "SELECT b, data FROM agg_blob WHERE account_id = %lld AND lvl = %lld "
      "AND b BETWEEN %lld AND %lld AND kind = %lld ORDER BY b LIMIT %lld" },
    { "qrt_ab_put",
      "INSERT INTO agg_blob (account_id, lvl, b, kind, data) "
      "VALUES (%lld, %lld, %lld, %lld, %s) "
      "ON CONFLICT (account_id, lvl, b, kind) DO UPDATE SET data = excluded.data" },
    { "qrt_ab_inval",
      "DELETE FROM agg_blob WHERE account_id = %lld AND ((lvl = 1 AND b = %lld) "
      "OR (lvl = 2 AND b = %lld) OR (lvl = 3 AND b = %lld))" },
    { "qrt_ab_drop_unit",
      "DELETE FROM agg_blob WHERE account_id = %lld AND lvl = %lld AND b = %lld" },
    { "qrt_ab_clear", "DELETE FROM agg_blob" },
    /* units with counters and no sealed value yet */
    { "qrt_ab_todo",
      "SELECT c.account_id, c.b FROM agg_cnt c WHERE c.kind = 2 AND c.lvl = %lld "
      "AND NOT EXISTS (SELECT 1 FROM agg_blob x WHERE x.account_id = c.account_id "
      "AND x.lvl = c.lvl AND x.b = c.b AND x.kind = 2) ORDER BY c.account_id, c.b" },
    /* what a unit holds */
    { "qrt_ab_counts",
      "SELECT grp, val, scans, clicks, firsts FROM agg_cnt WHERE kind = %lld "
      "AND account_id = %lld AND lvl = %lld AND b = %lld" },
    { "qrt_ab_quarters",
      "SELECT q, '', scans, clicks, g FROM agg_day WHERE account_id = %lld "
      "AND q BETWEEN %lld AND %lld" },
    { "qrt_ab_pdays",
      "SELECT p, n FROM agg_link WHERE account_id = %lld AND t BETWEEN %lld AND %lld" },
    { "qrt_ab_links",
      "SELECT t, p, flags, tracker_id, browser, country, city, n FROM agg_link "
      "WHERE account_id = %lld AND t BETWEEN %lld AND %lld" },
    { "qrt_ab_gaps",
      "SELECT t, p, grp, val, COUNT(*) FROM agg_gap WHERE kind = %lld "
      "AND account_id = %lld AND t BETWEEN %lld AND %lld GROUP BY t, p, grp, val" },
    { "qrt_ab_visits",
      "SELECT v.visit_start, CASE WHEN v.click = 1 THEN 1 ELSE 0 END, v.tracker_id, "
      "COALESCE(vu.browser, ''), COALESCE(vp.country, ''), COALESCE(vp.city, '') "
      "FROM agg_trk k CROSS JOIN " QRT_VISITS_BCC " WHERE k.account_id = %lld "
      "AND v.tracker_id = k.tracker_id AND v.visit_start BETWEEN %lld AND %lld "
      "AND v.bot = 0" },
    { NULL, NULL }
};

apr_status_t qrt_store_agg_blob_invalidate(qrt_db_t *db, apr_pool_t *p,
                                           apr_int64_t account, apr_int64_t day)
{
    apr_int64_t b2 = qrt_agg_bucket(2, day), b3 = qrt_agg_bucket(3, day);
    const void *args[] = { &account, &day, &b2, &b3 };

    return qrt_db_exec(db, p, "qrt_ab_inval", NULL, args);
}

apr_status_t qrt_store_agg_blob_clear(qrt_db_t *db, apr_pool_t *p)
{
    const void *none[] = { NULL };

    return qrt_db_exec(db, p, "qrt_ab_clear", NULL, none);
}

/* Days [*d0, *d1) of a bucket. */
static void ab_days(int lvl, apr_int64_t b, apr_int64_t *d0, apr_int64_t *d1)
{
    apr_int64_t size = lvl == 1 ? 1 : lvl == 2 ? 16 : 256;

    *d0 = b * size;
    *d1 = *d0 + size;
}

int qrt_store_agg_blob_due(int lvl, apr_int64_t b, apr_int64_t now)
{
    apr_int64_t d0, d1;

    ab_days(lvl, b, &d0, &d1);
    return d1 * QRT_AGG_DAY + QRT_AGGBLOB_SETTLE <= now
           || d0 * QRT_AGG_DAY > now + QRT_AGG_DAY;
}

/* ---- building a unit -------------------------------------------------------------- */

static apr_status_t ab_count_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    qrt_aggblob_add_count(ctx, qrt_db_int(db, row, 0, 0), qrt_store_agg_acc_col(db, row, 1),
                          qrt_db_int(db, row, 2, 0), qrt_db_int(db, row, 3, 0),
                          qrt_db_int(db, row, 4, 0));
    return APR_SUCCESS;
}

static apr_status_t ab_link_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    qrt_aggblob_add_link(ctx, qrt_db_int(db, row, 0, 0), qrt_db_int(db, row, 1, 0),
                         (int)qrt_db_int(db, row, 2, 0), qrt_db_int(db, row, 3, 0),
                         qrt_store_agg_acc_col(db, row, 4), qrt_store_agg_acc_col(db, row, 5),
                         qrt_store_agg_acc_col(db, row, 6), qrt_db_int(db, row, 7, 1));
    return APR_SUCCESS;
}

typedef struct {
    qrt_aggblob_builder_t *b;
    int kind;
} ab_gap_ctx;

static apr_status_t ab_gap_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    ab_gap_ctx *c = ctx;

    qrt_aggblob_add_gap(c->b, c->kind, qrt_db_int(db, row, 0, 0), qrt_db_int(db, row, 1, 0),
                        qrt_db_int(db, row, 2, 0), qrt_store_agg_acc_col(db, row, 3),
                        qrt_db_int(db, row, 4, 1));
    return APR_SUCCESS;
}

static apr_status_t ab_visit_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    qrt_aggblob_add_visit(ctx, qrt_db_int(db, row, 0, 0), (int)qrt_db_int(db, row, 1, 0),
                          qrt_db_int(db, row, 2, 0), qrt_store_agg_acc_col(db, row, 3),
                          qrt_store_agg_acc_col(db, row, 4), qrt_store_agg_acc_col(db, row, 5));
    return APR_SUCCESS;
}

typedef struct {
    apr_pool_t *p;
    apr_hash_t *days;           /* day of p -> links */
} ab_pdays;

static apr_status_t ab_pday_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    ab_pdays *c = ctx;
    apr_int64_t day = qrt_agg_fdiv(qrt_db_int(db, row, 0, 0), QRT_AGG_DAY);
    apr_int64_t *n = apr_hash_get(c->days, &day, sizeof(day));

    if (!n) {
        n = apr_pcalloc(c->p, sizeof(*n));
        apr_hash_set(c->days, apr_pmemdup(c->p, &day, sizeof(day)), sizeof(day), n);
    }
    *n += qrt_db_int(db, row, 1, 0);
    return APR_SUCCESS;
}

static apr_status_t ab_put(qrt_db_t *db, apr_pool_t *p, apr_int64_t account, int lvl,
                           apr_int64_t b, int kind, const char *data)
{
    apr_int64_t l = lvl, k = kind;
    const void *args[] = { &account, &l, &b, &k, data };

    return qrt_db_exec(db, p, "qrt_ab_put", NULL, args);
}

/* Reads a unit's rows and writes its sealed values (inside the caller's transaction). */
static apr_status_t ab_build(qrt_db_t *db, apr_pool_t *p, apr_int64_t account, int lvl,
                             apr_int64_t b)
{
    apr_int64_t l = lvl, d0, d1, s, e;
    apr_status_t rv = APR_SUCCESS;
    int kind;

    ab_days(lvl, b, &d0, &d1);
    s = d0 * QRT_AGG_DAY;
    e = d1 * QRT_AGG_DAY - 1;
    /* The kind-2 value goes last: its presence says the unit is sealed. */
    for (kind = QRT_AGG_G; kind >= QRT_AGG_T && rv == APR_SUCCESS; kind--) {
        qrt_aggblob_builder_t *bl;
        apr_int64_t k = kind;
        const void *args[] = { &k, &account, &l, &b };

        if (kind == QRT_AGG_A && lvl == 1) {
            /* A day's links and visits before its account counters. */
            qrt_aggblob_builder_t *lb = qrt_aggblob_builder_make(p, s);
            qrt_aggblob_builder_t *vb = qrt_aggblob_builder_make(p, s);
            const void *largs[] = { &account, &s, &e };
            static const int gap_kinds[] = { QRT_AGG_T, QRT_AGG_B, QRT_AGG_C, QRT_AGG_Y,
                                             QRT_AGG_G, 0 };
            int i;

            rv = qrt_db_each(db, p, "qrt_ab_links", largs, ab_link_row, lb);
            for (i = 0; gap_kinds[i] && rv == APR_SUCCESS; i++) {
                apr_int64_t gk = gap_kinds[i];
                const void *gargs[] = { &gk, &account, &s, &e };
                ab_gap_ctx gc = { lb, gap_kinds[i] };

                rv = qrt_db_each(db, p, "qrt_ab_gaps", gargs, ab_gap_row, &gc);
            }
            if (rv == APR_SUCCESS) {
                rv = qrt_db_each(db, p, "qrt_ab_visits", largs, ab_visit_row, vb);
            }
            if (rv == APR_SUCCESS) {
                rv = ab_put(db, p, account, lvl, b, QRT_AGGBLOB_LINKS, qrt_aggblob_links(lb));
            }
            if (rv == APR_SUCCESS) {
                rv = ab_put(db, p, account, lvl, b, QRT_AGGBLOB_VISITS,
                            qrt_aggblob_visits(vb));
            }
            if (rv == APR_SUCCESS) {
                ab_pdays pd;

                pd.days = apr_hash_make(p);
                pd.p = p;
                rv = qrt_db_each(db, p, "qrt_ab_pdays", largs, ab_pday_row, &pd);
                if (rv == APR_SUCCESS) {
                    qrt_aggblob_builder_t *hb = qrt_aggblob_builder_make(p, 0);
                    apr_hash_index_t *hi;

                    for (hi = apr_hash_first(p, pd.days); hi; hi = apr_hash_next(hi)) {
                        const apr_int64_t *day = apr_hash_this_key(hi);
                        const apr_int64_t *n = apr_hash_this_val(hi);

                        qrt_aggblob_add_count(hb, *day, "", *n, 0, 0);
                    }
                    rv = ab_put(db, p, account, lvl, b, QRT_AGGBLOB_PDAYS,
                                qrt_aggblob_counts(hb));
                }
            }
            if (rv == APR_SUCCESS) {
                qrt_aggblob_builder_t *qb = qrt_aggblob_builder_make(p, 0);
                apr_int64_t q0 = b * (QRT_AGG_DAY / QRT_AGG_QUARTER);
                apr_int64_t q1 = q0 + QRT_AGG_DAY / QRT_AGG_QUARTER - 1;
                const void *qargs[] = { &account, &q0, &q1 };

                rv = qrt_db_each(db, p, "qrt_ab_quarters", qargs, ab_count_row, qb);
                if (rv == APR_SUCCESS) {
                    rv = ab_put(db, p, account, lvl, b, QRT_AGGBLOB_QUARTERS,
                                qrt_aggblob_counts(qb));
                }
            }
        }
        if (rv != APR_SUCCESS) {
            break;
        }
        bl = qrt_aggblob_builder_make(p, 0);
        rv = qrt_db_each(db, p, "qrt_ab_counts", args, ab_count_row, bl);
        if (rv == APR_SUCCESS) {
            rv = ab_put(db, p, account, lvl, b, kind, qrt_aggblob_counts(bl));
        }
    }
    return rv;
}

typedef struct {
    apr_array_header_t *units;      /* apr_int64_t pairs: account, b */
    int lvl;
    apr_int64_t now;
    int max;
    int more;
} ab_todo;

static apr_status_t ab_todo_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    ab_todo *c = ctx;
    apr_int64_t b = qrt_db_int(db, row, 1, 0);

    if (!qrt_store_agg_blob_due(c->lvl, b, c->now)) {
        return APR_SUCCESS;
    }
    if (c->units->nelts / 2 >= c->max) {
        c->more = 1;
        return APR_SUCCESS;
    }
    APR_ARRAY_PUSH(c->units, apr_int64_t) = qrt_db_int(db, row, 0, 0);
    APR_ARRAY_PUSH(c->units, apr_int64_t) = b;
    return APR_SUCCESS;
}

apr_status_t qrt_store_agg_blob_seal(qrt_db_t *db, apr_pool_t *p, apr_int64_t now,
                                     int max, int *sealed, int *more)
{
    apr_pool_t *up;
    apr_status_t rv = APR_SUCCESS;
    ab_todo c;
    int lvl, i;

    *sealed = 0;
    *more = 0;
    apr_pool_create(&up, p);
    for (lvl = 1; lvl <= QRT_AGG_LEVELS && rv == APR_SUCCESS; lvl++) {
        apr_int64_t l = lvl;
        const void *args[] = { &l };

        memset(&c, 0, sizeof(c));
        c.units = apr_array_make(up, 16, sizeof(apr_int64_t));
        c.lvl = lvl;
        c.now = now;
        c.max = max - *sealed < AB_TODO_MAX ? max - *sealed : AB_TODO_MAX;
        if (c.max <= 0) {
            *more = 1;
            break;
        }
        rv = qrt_db_each(db, up, "qrt_ab_todo", args, ab_todo_row, &c);
        *more |= c.more;
        for (i = 0; i + 1 < c.units->nelts && rv == APR_SUCCESS; i += 2) {
            apr_int64_t account = APR_ARRAY_IDX(c.units, i, apr_int64_t);
            apr_int64_t b = APR_ARRAY_IDX(c.units, i + 1, apr_int64_t);
            const void *dargs[] = { &account, &l, &b };
            apr_dbd_transaction_t *tx;
            apr_pool_t *bp;

            apr_pool_create(&bp, up);
            rv = qrt_db_begin(db, bp, &tx);
            if (rv != APR_SUCCESS) {
                break;
            }
            /* The store's write lock (PostgreSQL), then a write: on SQLite that takes
             * the database's write lock (waiting for it) before anything is read. */
            rv = qrt_store_write_lock(db, bp);
            if (rv == APR_SUCCESS) {
                rv = qrt_db_exec(db, bp, "qrt_ab_drop_unit", NULL, dargs);
            }
            if (rv == APR_SUCCESS) {
                rv = ab_build(db, bp, account, lvl, b);
            }
            if (rv != APR_SUCCESS) {
                qrt_db_rollback_only(db, tx);
            }
            if (qrt_db_end(db, bp, tx) != APR_SUCCESS && rv == APR_SUCCESS) {
                rv = APR_EGENERAL;
            }
            apr_pool_destroy(bp);
            if (rv == APR_SUCCESS) {
                (*sealed)++;
            }
        }
        apr_pool_clear(up);
    }
    apr_pool_destroy(up);
    return rv;
}

/* ---- fetching --------------------------------------------------------------------- */

typedef struct {
    qrt_aggblob_fn *fn;
    void *ctx;
    int rows;
    apr_int64_t last;
} ab_fetch_ctx;

static apr_status_t ab_fetch_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    ab_fetch_ctx *c = ctx;
    const char *data = qrt_db_str(db, row, 1);

    c->rows++;
    c->last = qrt_db_int(db, row, 0, 0);
    return c->fn(c->ctx, c->last, data ? data : "");
}

apr_status_t qrt_store_agg_blob_fetch(qrt_db_t *db, apr_pool_t *p, apr_int64_t account,
                                      int kind, int lvl, apr_int64_t b0, apr_int64_t b1,
                                      qrt_aggblob_fn *fn, void *ctx)
{
    apr_int64_t l = lvl, k = kind, from = b0, limit = AB_FETCH_ROWS;
    const void *args[] = { &account, &l, &from, &b1, &k, &limit };
    ab_fetch_ctx c = { fn, ctx, 0, 0 };
    apr_status_t rv = APR_SUCCESS;
    apr_pool_t *fp;

    /* A few values at a time, each few in a pool of its own: a long window holds at
     * most AB_FETCH_ROWS fetched values at once (the drivers copy every row). */
    apr_pool_create(&fp, p);
    while (rv == APR_SUCCESS) {
        c.rows = 0;
        rv = qrt_db_each(db, fp, "qrt_ab_fetch", args, ab_fetch_row, &c);
        apr_pool_clear(fp);
        if (c.rows < AB_FETCH_ROWS || c.last >= b1) {
            break;
        }
        from = c.last + 1;
    }
    apr_pool_destroy(fp);
    return rv;
}
