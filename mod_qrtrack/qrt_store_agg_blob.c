/* qrt_store_agg_blob: sealing, invalidating and fetching the sealed report
 * aggregates (see qrt_store_agg_blob.h and qrt_aggblob.h). */
#include <string.h>
#include <apr_strings.h>
#include "qrt_store.h"
#include "qrt_agg.h"
#include "qrt_store_agg_acc.h"
#include "qrt_store_agg_blob.h"
#include "qrt_aggcache.h"

#define AB_TODO_MAX 64              /* units looked at per seal call */
#define AB_FETCH_ROWS 16            /* sealed values fetched per statement */

/* ---- a day's rows in and out of the indexes by time (SQLite, schema 17) ------------ */

typedef struct {
    qrt_db_t *db;
    apr_pool_t *p;
    apr_int64_t account;
    int found;
} ab_open_ctx;

/* The rows of a sealed day's value back to unsealed = 1, one (previous_time,
 * visit_time) each; -1 (the caller opens the whole day) when the value cannot be read. */
static apr_status_t ab_open_value(void *ctx, apr_int64_t b, const char *data)
{
    ab_open_ctx *c = ctx;
    apr_pool_t *sp;
    qrt_aggblob_t r;
    qrt_aggblob_link_t l;
    qrt_aggblob_gap_t g;
    apr_int64_t pp = 0, pt = 0, kind = 0;
    apr_status_t rv = APR_SUCCESS;
    int rc, any = 0;

    apr_pool_create(&sp, c->p);
    if (qrt_aggblob_open(&r, sp, data, b * QRT_AGG_DAY) != APR_SUCCESS) {
        apr_pool_destroy(sp);
        return APR_EGENERAL;
    }
    while (rv == APR_SUCCESS && (rc = qrt_aggblob_next_link(&r, &l)) > 0) {
        const void *args[] = { &c->account, &l.p, &l.t };

        /* (links alike but for their groups are one row each, next to each other) */
        if (!any || l.p != pp || l.t != pt) {
            rv = qrt_db_exec(c->db, sp, SQL_agg_blob_link_open, NULL, args);
        }
        any = 1;
        pp = l.p;
        pt = l.t;
    }
    any = 0;
    while (rv == APR_SUCCESS && rc == 0 && (rc = qrt_aggblob_next_gap(&r, &g)) > 0) {
        apr_int64_t k = g.kind;
        const void *args[] = { &k, &c->account, &g.p, &g.t };

        rc = 0;
        if (!any || k != kind || g.p != pp || g.t != pt) {
            rv = qrt_db_exec(c->db, sp, SQL_agg_blob_gap_open, NULL, args);
        }
        any = 1;
        kind = k;
        pp = g.p;
        pt = g.t;
    }
    apr_pool_destroy(sp);
    if (rv == APR_SUCCESS && rc < 0) {
        return APR_EGENERAL;
    }
    c->found = rv == APR_SUCCESS;
    return rv;
}

/* Before a day's sealed values go: its links and gaps back in agg_link_u and
 * agg_gaps_u (unsealed = 1), as its links value lists them. Without a value to read (damaged,
 * or gone behind the store's back: a day with counters, off the work list, unless the
 * caller took it off: listed), by the day's range of visit_time along every row of
 * the account. PostgreSQL keeps unsealed = 1 always: nothing to do. */
static apr_status_t ab_open_day(qrt_db_t *db, apr_pool_t *p, apr_int64_t account,
                                apr_int64_t day, int listed)
{
    ab_open_ctx c = { db, p, account, 0 };
    const void *dargs[] = { &account, &day };
    apr_int64_t lost = 0;
    apr_status_t rv;

    if (!qrt_db_dialect_is(db, QRT_DIALECT_SQLITE)) {
        return APR_SUCCESS;         /* (SQLite's schema flags rows read by time) */
    }
    rv = qrt_store_agg_blob_fetch(db, p, account, QRT_AGGBLOB_LINKS, 1, day, day,
                                  ab_open_value, &c);
    if (rv == APR_EGENERAL && !c.found) {
        lost = 1;                   /* a value that cannot be read */
    }
    else if (rv == APR_SUCCESS && !c.found && !listed) {
        rv = qrt_db_select_int(db, p, SQL_agg_blob_listed_or_empty, dargs, &lost);
    }
    if (lost) {
        apr_int64_t s = day * QRT_AGG_DAY, e = s + QRT_AGG_DAY - 1;
        const void *args[] = { &account, &s, &e };

        rv = qrt_db_exec(db, p, SQL_agg_blob_link_open_all, NULL, args);
        if (rv == APR_SUCCESS) {
            rv = qrt_db_exec(db, p, SQL_agg_blob_gap_open_all, NULL, args);
        }
    }
    return rv;
}

/* After a day is sealed: its links and gaps out of agg_link_u and agg_gaps_u
 * (unsealed = 0), read from its sealed value from now on (SQLite). */
static apr_status_t ab_close_day(qrt_db_t *db, apr_pool_t *p, apr_int64_t account,
                                 apr_int64_t s, apr_int64_t e)
{
    static const int gap_kinds[] = { QRT_AGG_T, QRT_AGG_B, QRT_AGG_C, QRT_AGG_Y, QRT_AGG_G,
                                     0 };
    const void *args[] = { &account, &s, &e };
    apr_status_t rv;
    int i;

    if (!qrt_db_dialect_is(db, QRT_DIALECT_SQLITE)) {
        return APR_SUCCESS;         /* (SQLite's schema flags rows read by time) */
    }
    rv = qrt_db_exec(db, p, SQL_agg_blob_link_sealed, NULL, args);
    for (i = 0; gap_kinds[i] && rv == APR_SUCCESS; i++) {
        apr_int64_t k = gap_kinds[i];
        const void *gargs[] = { &k, &account, &s, &e };

        rv = qrt_db_exec(db, p, SQL_agg_blob_gap_sealed, NULL, gargs);
    }
    return rv;
}

apr_status_t qrt_store_agg_blob_invalidate(qrt_db_t *db, apr_pool_t *p,
                                           apr_int64_t account, apr_int64_t day)
{
    apr_int64_t b2 = qrt_agg_bucket(2, day), b3 = qrt_agg_bucket(3, day);
    const void *args[] = { &account, &day, &b2, &b3 };
    apr_status_t rv = ab_open_day(db, p, account, day, 0);

    if (qrt_dialect_remote(db->driver)) {
        /* (both statements in one round trip: a server's commit of scans waits for each) */
        const void *both[] = { &account, &day, &b2, &b3, &account, &day };

        return rv == APR_SUCCESS ? qrt_db_exec(db, p, SQL_agg_blob_inval_unsealed, NULL, both)
                                 : rv;
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_db_exec(db, p, SQL_agg_blob_inval, NULL, args);
    }

    if (rv == APR_SUCCESS) {
        rv = qrt_db_exec(db, p, SQL_agg_blob_unsealed_add, NULL, args);
    }
    return rv;
}

apr_status_t qrt_store_agg_blob_relist(qrt_db_t *db, apr_pool_t *p)
{
    const void *none[] = { NULL };
    apr_status_t rv = APR_SUCCESS;

    /* Rows of days whose links value is gone (SQL by hand) read by time again
     * (SQLite, schema 17), before those days are sealed again from them. */
    if (qrt_db_dialect_is(db, QRT_DIALECT_SQLITE)) {
        rv = qrt_db_exec(db, p, SQL_agg_blob_link_open_lost, NULL, none);
        if (rv == APR_SUCCESS) {
            rv = qrt_db_exec(db, p, SQL_agg_blob_gap_open_lost, NULL, none);
        }
    }
    return rv == APR_SUCCESS ? qrt_db_exec(db, p, SQL_agg_blob_relist, NULL, none) : rv;
}

apr_status_t qrt_store_agg_blob_clear(qrt_db_t *db, apr_pool_t *p)
{
    apr_int64_t any = QRT_AGG_TMIN;
    const void *none[] = { NULL }, *args[] = { &any };
    apr_status_t rv = qrt_db_exec(db, p, SQL_agg_blob_clear, NULL, none);

    /* Every link and gap read by time from its row again (SQLite, schema 17). */
    if (rv == APR_SUCCESS && qrt_db_dialect_is(db, QRT_DIALECT_SQLITE)) {
        rv = qrt_db_exec(db, p, SQL_agg_blob_link_open_every, NULL, none);
    }
    if (rv == APR_SUCCESS && qrt_db_dialect_is(db, QRT_DIALECT_SQLITE)) {
        rv = qrt_db_exec(db, p, SQL_agg_blob_gap_open_every, NULL, none);
    }
    /* Every day with counters goes on the work list. */
    if (rv == APR_SUCCESS) {
        rv = qrt_db_exec(db, p, SQL_agg_blob_unsealed_all, NULL, args);
    }
    return rv;
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
    apr_int64_t l = lvl, k = kind, seal = qrt_aggcache_seal(data, strlen(data));
    const void *args[] = { &account, &l, &b, &k, data, &seal };

    return qrt_db_exec(db, p, SQL_agg_blob_put, NULL, args);
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
    /* Every kind's counters (a unit's kind-2 value says it is sealed: the readers of
     * 16- and 256-day buckets and qrt_store_agg_blob_relist look for it); a day also
     * gets its links, visits, quarter-hours and links by previous day. */
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

            rv = qrt_db_each(db, p, SQL_agg_blob_links, largs, ab_link_row, lb);
            for (i = 0; gap_kinds[i] && rv == APR_SUCCESS; i++) {
                apr_int64_t gk = gap_kinds[i];
                const void *gargs[] = { &gk, &account, &s, &e };
                ab_gap_ctx gc = { lb, gap_kinds[i] };

                rv = qrt_db_each(db, p, SQL_agg_blob_gaps, gargs, ab_gap_row, &gc);
            }
            if (rv == APR_SUCCESS) {
                rv = qrt_db_each(db, p, SQL_agg_blob_visits, largs, ab_visit_row, vb);
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
                rv = qrt_db_each(db, p, SQL_agg_blob_pdays, largs, ab_pday_row, &pd);
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
                rv = ab_close_day(db, p, account, s, e);
            }
            if (rv == APR_SUCCESS) {
                qrt_aggblob_builder_t *qb = qrt_aggblob_builder_make(p, 0);
                apr_int64_t q0 = b * (QRT_AGG_DAY / QRT_AGG_QUARTER);
                apr_int64_t q1 = q0 + QRT_AGG_DAY / QRT_AGG_QUARTER - 1;
                const void *qargs[] = { &account, &q0, &q1 };

                rv = qrt_db_each(db, p, SQL_agg_blob_quarters, qargs, ab_count_row, qb);
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
        rv = qrt_db_each(db, p, SQL_agg_blob_counts, args, ab_count_row, bl);
        if (rv == APR_SUCCESS) {
            rv = ab_put(db, p, account, lvl, b, kind, qrt_aggblob_counts(bl));
        }
    }
    return rv;
}

typedef struct {
    apr_array_header_t *days;       /* apr_int64_t pairs: account, day */
    apr_int64_t now;
    int max;
    int more;
} ab_todo;

static apr_status_t ab_todo_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    ab_todo *c = ctx;
    apr_int64_t day = qrt_db_int(db, row, 1, 0);

    if (!qrt_store_agg_blob_due(1, day, c->now)) {
        return APR_SUCCESS;         /* today's: later */
    }
    if (c->days->nelts / 2 >= c->max) {
        c->more = 1;
        return APR_SUCCESS;
    }
    APR_ARRAY_PUSH(c->days, apr_int64_t) = qrt_db_int(db, row, 0, 0);
    APR_ARRAY_PUSH(c->days, apr_int64_t) = day;
    return APR_SUCCESS;
}

/* Seals one unit (inside the caller's transaction). */
static apr_status_t ab_seal_unit(qrt_db_t *db, apr_pool_t *p, apr_int64_t account, int lvl,
                                 apr_int64_t b)
{
    apr_int64_t l = lvl;
    const void *args[] = { &account, &l, &b };
    /* (a day sealed already: its rows back by time first, read again below) */
    apr_status_t rv = lvl == 1 ? ab_open_day(db, p, account, b, 1) : APR_SUCCESS;

    if (rv == APR_SUCCESS) {
        rv = qrt_db_exec(db, p, SQL_agg_blob_drop_unit, NULL, args);
    }
    return rv == APR_SUCCESS ? ab_build(db, p, account, lvl, b) : rv;
}

/* Seals a day off the work list, and its 16- and 256-day buckets when they are due
 * and not sealed (one transaction). */
static apr_status_t ab_seal_day(qrt_db_t *db, apr_pool_t *p, apr_int64_t account,
                                apr_int64_t day, apr_int64_t now, int *units, int *busy)
{
    const void *dargs[] = { &account, &day };
    apr_dbd_transaction_t *tx;
    apr_status_t rv = qrt_db_begin(db, p, &tx);
    int lvl, got = 1;

    if (rv != APR_SUCCESS) {
        return rv;
    }
    /* The store's write lock (PostgreSQL), then a write: on SQLite that takes the
     * database's write lock (waiting for it) before anything is read, so no writer
     * changes the day's rows between reading them and taking it off the list. A
     * server's idle moment does not wait for the lock: an import's batch holds it
     * for a second, and sealing days the import is still writing would only take
     * turns with it (and its CPU). */
    rv = busy ? qrt_store_write_trylock(db, p, &got) : qrt_store_write_lock(db, p);
    if (rv == APR_SUCCESS && !got) {
        *busy = 1;
        qrt_db_rollback_only(db, tx);
        return qrt_db_end(db, p, tx);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_db_exec(db, p, SQL_agg_blob_unsealed_del, NULL, dargs);
    }
    if (rv == APR_SUCCESS) {
        apr_int64_t one = 1, has = 0;
        const void *uargs[] = { &account, &one, &day };

        /* A day without counters (its visits gone, or a bucket's first day listed by
         * qrt_store_agg_blob_relist) keeps no unit of its own. */
        rv = qrt_db_select_int(db, p, SQL_agg_blob_has_day, dargs, &has);
        if (rv == APR_SUCCESS && has) {
            rv = ab_seal_unit(db, p, account, 1, day);
            (*units)++;
        }
        else if (rv == APR_SUCCESS) {
            rv = ab_open_day(db, p, account, day, 1);
            if (rv == APR_SUCCESS) {
                rv = qrt_db_exec(db, p, SQL_agg_blob_drop_unit, NULL, uargs);
            }
        }
    }
    for (lvl = 2; lvl <= QRT_AGG_LEVELS && rv == APR_SUCCESS; lvl++) {
        apr_int64_t l = lvl, b = qrt_agg_bucket(lvl, day), n = 0;
        const void *args[] = { &account, &l, &b };

        if (!qrt_store_agg_blob_due(lvl, b, now)) {
            continue;
        }
        rv = qrt_db_select_int(db, p, SQL_agg_blob_sealed, args, &n);
        if (rv == APR_SUCCESS && n == 0) {
            rv = ab_seal_unit(db, p, account, lvl, b);
            (*units)++;
        }
    }
    return qrt_db_end_with(db, p, tx, rv);
}

/* Values sealed before schema 48 (seal NULL): the seal of at most max of them; *more
 * is set while some may be left. */
typedef struct {
    apr_int64_t v[5];           /* seal, account, level, bucket, kind */
    const char *data;
} ab_unhashed;

static apr_status_t ab_unhashed_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    apr_array_header_t *list = ctx;
    ab_unhashed *u = apr_array_push(list);
    const char *data = qrt_db_str(db, row, 4);
    int i;

    for (i = 0; i < 4; i++) {
        u->v[i + 1] = qrt_db_int(db, row, i, 0);
    }
    u->data = apr_pstrdup(list->pool, data ? data : "");
    u->v[0] = qrt_aggcache_seal(u->data, strlen(u->data));
    return APR_SUCCESS;
}

static apr_status_t ab_hash_some(qrt_db_t *db, apr_pool_t *p, int max, int *more)
{
    apr_int64_t limit = max;
    const void *args[] = { &limit };
    apr_array_header_t *list = apr_array_make(p, max, sizeof(ab_unhashed));
    apr_status_t rv;
    int i, hashed = 0;

    if (max <= 0) {
        return APR_SUCCESS;
    }
    rv = qrt_db_each(db, p, SQL_agg_blob_unhashed, args, ab_unhashed_row, list);
    for (i = 0; i < list->nelts && rv == APR_SUCCESS; i++) {
        ab_unhashed *u = &APR_ARRAY_IDX(list, i, ab_unhashed);
        const void *hargs[] = { &u->v[0], &u->v[1], &u->v[2], &u->v[3], &u->v[4], u->data };
        int n = 0;

        rv = qrt_db_exec(db, p, SQL_agg_blob_hash, &n, hargs);
        hashed += n;
    }
    /* (more only while values get their seal: one that cannot is left to be read) */
    if (list->nelts == max && hashed > 0) {
        *more = 1;
    }
    return rv;
}

apr_status_t qrt_store_agg_blob_seal(qrt_db_t *db, apr_pool_t *p, apr_int64_t now,
                                     int max, int *sealed, int *more, int *busy)
{
    const void *none[] = { NULL };
    apr_pool_t *up;
    apr_status_t rv;
    ab_todo c;
    int i;

    *sealed = 0;
    *more = 0;
    if (busy) {
        *busy = 0;
    }
    apr_pool_create(&up, p);
    memset(&c, 0, sizeof(c));
    c.days = apr_array_make(up, 16, sizeof(apr_int64_t));
    c.now = now;
    c.max = max < AB_TODO_MAX ? max : AB_TODO_MAX;
    rv = qrt_db_each(db, up, SQL_agg_blob_unsealed, none, ab_todo_row, &c);
    *more = c.more;
    for (i = 0; i + 1 < c.days->nelts && rv == APR_SUCCESS && !(busy && *busy); i += 2) {
        apr_pool_t *bp;

        apr_pool_create(&bp, up);
        rv = ab_seal_day(db, bp, APR_ARRAY_IDX(c.days, i, apr_int64_t),
                         APR_ARRAY_IDX(c.days, i + 1, apr_int64_t), now, sealed, busy);
        apr_pool_destroy(bp);
    }
    if (busy && *busy) {
        *more = 1;
    }
    else if (rv == APR_SUCCESS) {
        rv = ab_hash_some(db, up, c.max, more);
    }
    apr_pool_destroy(up);
    return rv;
}

/* ---- fetching --------------------------------------------------------------------- */

/* The process's kept values (NULL: every value is read from the store). */
static qrt_aggcache_t *ab_cache;

void qrt_store_agg_blob_cache(qrt_aggcache_t *c)
{
    ab_cache = c;
}

struct qrt_aggcache_t *qrt_store_agg_blob_kept(void)
{
    return ab_cache;
}

static struct qrt_strid_t *ab_strid;

void qrt_store_agg_blob_strids(struct qrt_strid_t *ids)
{
    ab_strid = ids;
}

struct qrt_strid_t *qrt_store_agg_blob_strid(void)
{
    return ab_strid;
}

int qrt_store_agg_blob_cached(void)
{
    return ab_cache != NULL;
}

void qrt_store_agg_blob_keep(apr_int64_t account, int lvl, apr_int64_t b, int kind,
                             apr_int64_t seal, const char *data, apr_size_t len)
{
    qrt_aggcache_key_t k;

    k.account = account;
    k.level = lvl;
    k.bucket = b;
    k.kind = kind;
    qrt_aggcache_put(ab_cache, &k, seal, data, len);
}

typedef struct {
    qrt_aggblob_fn *fn;         /* (or fn_ix, with the value's seal) */
    qrt_aggblob_ix_fn *fn_ix;
    int (*want_ix)(void *, apr_int64_t);
    void *ctx;
    int rows;
    apr_int64_t last;
    qrt_aggcache_key_t key;     /* (bucket: each row's) */
} ab_fetch_ctx;

static apr_status_t ab_call(ab_fetch_ctx *c, apr_int64_t b, const char *data,
                            apr_int64_t seal)
{
    return c->fn_ix ? c->fn_ix(c->ctx, b, data, seal, NULL, 0) : c->fn(c->ctx, b, data);
}

static apr_status_t ab_fetch_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    ab_fetch_ctx *c = ctx;
    const char *data = qrt_db_str(db, row, 1);
    apr_int64_t seal = qrt_db_int(db, row, 2, 0);

    c->rows++;
    c->last = qrt_db_int(db, row, 0, 0);
    if (ab_cache && data && seal && !(c->want_ix && c->want_ix(c->ctx, c->last))) {
        /* (a value read for its index: the index is kept, not the text) */
        c->key.bucket = c->last;
        qrt_aggcache_put(ab_cache, &c->key, seal, data, strlen(data));
    }
    return ab_call(c, c->last, data ? data : "", data ? seal : 0);
}

/* The stored values of buckets [b0, b1], a few at a time, each few in a pool of its own:
 * a long window holds at most AB_FETCH_ROWS fetched values at once (the drivers copy
 * every row). */
static apr_status_t ab_fetch_rows(qrt_db_t *db, apr_pool_t *p, ab_fetch_ctx *c,
                                  apr_int64_t b0, apr_int64_t b1)
{
    apr_int64_t l = c->key.level, k = c->key.kind, from = b0, limit = AB_FETCH_ROWS;
    const void *args[] = { &c->key.account, &l, &from, &b1, &k, &limit };
    apr_status_t rv = APR_SUCCESS;
    apr_pool_t *fp;

    apr_pool_create(&fp, p);
    while (rv == APR_SUCCESS) {
        c->rows = 0;
        rv = qrt_db_each(db, fp, SQL_agg_blob_fetch, args, ab_fetch_row, c);
        apr_pool_clear(fp);
        if (c->rows < AB_FETCH_ROWS || c->last >= b1) {
            break;
        }
        from = c->last + 1;
    }
    apr_pool_destroy(fp);
    return rv;
}

typedef struct {
    apr_int64_t bucket, seal;
} ab_seal;

static apr_status_t ab_seal_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    ab_seal *x = apr_array_push(ctx);

    x->bucket = qrt_db_int(db, row, 0, 0);
    x->seal = qrt_db_int(db, row, 1, 0);
    return APR_SUCCESS;
}

/* The values of buckets [b0, b1] into c's callback: those kept from memory (the index
 * of ixkind instead, when kept and want_ix says so), the others read, in bucket order. */
static apr_status_t ab_fetch(qrt_db_t *db, apr_pool_t *p, ab_fetch_ctx *c, apr_int64_t b0,
                             apr_int64_t b1, int ixkind, int (*want_ix)(void *, apr_int64_t))
{
    apr_int64_t l = c->key.level, k = c->key.kind;
    const void *args[] = { &c->key.account, &l, &k, &b0, &b1 };
    apr_array_header_t *seals;
    apr_status_t rv;
    int i, run = -1;

    if (!ab_cache) {
        return ab_fetch_rows(db, p, c, b0, b1);
    }
    /* The window's seals first (an index alone); the text of the values not kept,
     * run by run, in bucket order with the kept ones. */
    seals = apr_array_make(p, 64, sizeof(ab_seal));
    rv = qrt_db_each(db, p, SQL_agg_blob_seals, args, ab_seal_row, seals);
    for (i = 0; i <= seals->nelts && rv == APR_SUCCESS; i++) {
        ab_seal *x = i < seals->nelts ? &APR_ARRAY_IDX(seals, i, ab_seal) : NULL;
        qrt_aggcache_ent_t *ent = NULL;
        const char *data = NULL;
        apr_size_t ixlen = 0;
        int ix = 0;

        if (x) {
            c->key.bucket = x->bucket;
            if (want_ix && x->seal && want_ix(c->ctx, x->bucket)) {
                qrt_aggcache_key_t ik = c->key;

                ik.kind = ixkind;
                data = qrt_aggcache_get_len(ab_cache, &ik, x->seal, &ent, &ixlen);
                ix = data != NULL;
            }
            if (!data) {
                data = qrt_aggcache_get(ab_cache, &c->key, x->seal, &ent);
            }
        }
        if (x && !data) {
            if (run < 0) {
                run = i;
            }
            continue;
        }
        if (run >= 0) {
            rv = ab_fetch_rows(db, p, c, APR_ARRAY_IDX(seals, run, ab_seal).bucket,
                               APR_ARRAY_IDX(seals, i - 1, ab_seal).bucket);
            run = -1;
        }
        if (data && rv == APR_SUCCESS) {
            rv = ix ? c->fn_ix(c->ctx, x->bucket, NULL, x->seal, data, ixlen)
                 : ab_call(c, x->bucket, data, x->seal);
        }
        qrt_aggcache_release(ab_cache, ent);
    }
    return rv;
}

apr_status_t qrt_store_agg_blob_fetch(qrt_db_t *db, apr_pool_t *p, apr_int64_t account,
                                      int kind, int lvl, apr_int64_t b0, apr_int64_t b1,
                                      qrt_aggblob_fn *fn, void *ctx)
{
    ab_fetch_ctx c;

    memset(&c, 0, sizeof(c));
    c.fn = fn;
    c.ctx = ctx;
    c.key.account = account;
    c.key.level = lvl;
    c.key.kind = kind;
    return ab_fetch(db, p, &c, b0, b1, 0, NULL);
}

apr_status_t qrt_store_agg_blob_fetch_ix(qrt_db_t *db, apr_pool_t *p, apr_int64_t account,
                                         int kind, int lvl, apr_int64_t b0, apr_int64_t b1,
                                         int ixkind, int (*want_ix)(void *, apr_int64_t),
                                         qrt_aggblob_ix_fn *fn, void *ctx)
{
    ab_fetch_ctx c;

    memset(&c, 0, sizeof(c));
    c.fn_ix = fn;
    c.want_ix = want_ix;
    c.ctx = ctx;
    c.key.account = account;
    c.key.level = lvl;
    c.key.kind = kind;
    return ab_fetch(db, p, &c, b0, b1, ixkind, want_ix);
}
