/* qrt_store_spool: what a node reads from the database for its snapshot of codes,
 * and the marks of the spooled visits it replayed (qrt_spool.h, schema 21). */
#include <string.h>
#include <apr_strings.h>
#include "qrt_store.h"
#include "qrt_store_spool.h"
#include "qrt_route.h"

typedef struct {
    qrt_snap_row_fn *fn;
    void *ctx;
    apr_pool_t *p;
    apr_int64_t last_id;
    int rows;
} snap_each_t;

static apr_status_t snap_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    snap_each_t *e = ctx;
    qrt_snap_row_t r;

    r.code = qrt_db_str(db, row, 0);
    r.id = qrt_db_int(db, row, 1, 0);
    r.url = qrt_db_str(db, row, 2);
    r.deleted = (int)qrt_db_int(db, row, 3, 0);
    r.updated = qrt_db_int(db, row, 4, 0);
    {
        qrt_route_src_t src;

        memset(&src, 0, sizeof(src));
        src.rules = qrt_db_str(db, row, 5);
        src.has_from = qrt_db_str(db, row, 6) != NULL;
        src.valid_from = qrt_db_int(db, row, 6, 0);
        src.has_until = qrt_db_str(db, row, 7) != NULL;
        src.valid_until = qrt_db_int(db, row, 7, 0);
        src.max_scans = qrt_db_int(db, row, 8, 0);
        src.expired_url = qrt_db_str(db, row, 9);
        src.password_hash = qrt_db_str(db, row, 10);
        r.route = qrt_route_src_encode(e->p, &src);
    }
    if (!r.code || !r.url) {
        return APR_SUCCESS;
    }
    e->last_id = r.id;
    e->rows++;
    return e->fn(e->ctx, &r);
}

apr_status_t qrt_store_snap_changed(qrt_db_t *db, apr_pool_t *p, apr_int64_t since,
                                    qrt_snap_row_fn *fn, void *ctx)
{
    snap_each_t e = { fn, ctx, p, 0, 0 };
    const void *args[] = { &since };

    return qrt_db_each(db, p, SQL_snap_changed, args, snap_row, &e);
}

apr_status_t qrt_store_snap_changed_between(qrt_db_t *db, apr_pool_t *p, apr_int64_t from,
                                            apr_int64_t to, qrt_snap_row_fn *fn, void *ctx)
{
    snap_each_t e = { fn, ctx, p, 0, 0 };
    const void *args[] = { &from, &to };

    return qrt_db_each(db, p, SQL_snap_changed_between, args, snap_row, &e);
}

apr_status_t qrt_store_snap_page(qrt_db_t *db, apr_pool_t *p, apr_int64_t after,
                                 apr_int64_t limit, qrt_snap_row_fn *fn, void *ctx,
                                 apr_int64_t *last, int *rows)
{
    snap_each_t e = { fn, ctx, p, after, 0 };
    const void *args[] = { &after, &limit };
    apr_status_t rv = qrt_db_each(db, p, SQL_snap_page, args, snap_row, &e);

    *last = e.last_id;
    *rows = e.rows;
    return rv;
}

apr_status_t qrt_store_spool_mark(qrt_db_t *db, apr_pool_t *p, const char *node,
                                  apr_int64_t *seq)
{
    const void *args[] = { node };

    return qrt_db_select_int(db, p, SQL_spool_mark, args, seq);
}

apr_status_t qrt_store_spool_mark_set(qrt_db_t *db, apr_pool_t *p, const char *node,
                                      apr_int64_t seq)
{
    const void *args[] = { node, &seq };

    return qrt_db_exec(db, p, SQL_spool_mark_set, NULL, args);
}

apr_status_t qrt_store_spool_live_make(qrt_db_t *db, apr_pool_t *p, const char *key)
{
    const void *args[] = { key };

    return qrt_db_exec(db, p, SQL_spool_live_make, NULL, args);
}

apr_status_t qrt_store_spool_live(qrt_db_t *db, apr_pool_t *p, const char *key,
                                  apr_int64_t *token)
{
    const void *args[] = { key };

    return qrt_db_select_int(db, p, SQL_spool_live, args, token);
}
