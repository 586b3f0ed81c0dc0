/* qrt_store_compact: see qrt_store_compact.h. */
#include <string.h>
#include <apr_strings.h>
#include <apr_time.h>
#include "qrt_store_compact.h"

apr_status_t qrt_store_db_bytes(qrt_db_t *db, apr_pool_t *p, apr_int64_t *bytes)
{
    return qrt_db_select_int(db, p, SQL_compact_db_bytes, NULL, bytes);
}

apr_status_t qrt_store_compact(qrt_db_t *db, apr_pool_t *p, qrt_store_compact_fn *each,
                               void *ctx)
{
    return qrt_store_compact_tables(db, p, NULL, each, ctx);
}

/* 1 when step i runs for tables: the first step (the leftovers, and the lock) always,
 * the others when their table is listed (or tables is NULL). */
static int compact_step_runs(const char *what, int i, const char *const *tables)
{
    if (i == 0 || !tables) {
        return 1;
    }
    for (; *tables; tables++) {
        if (!strcmp(*tables, what)) {
            return 1;
        }
    }
    return 0;
}

apr_status_t qrt_store_compact_tables(qrt_db_t *db, apr_pool_t *p,
                                      const char *const *tables,
                                      qrt_store_compact_fn *each, void *ctx)
{
    const qrt_dialect_t *d = qrt_dialect_of(db->driver);
    int i;

    if (!d || !d->compact) {
        db->error = "SQLite has none while servers run (with every server stopped, "
                    "sqlite3 FILE VACUUM packs the file)";
        return APR_ENOTIMPL;
    }
    if (db->in_tx) {
        db->error = "compaction runs outside a transaction";
        return APR_EINVAL;
    }
    for (i = 0; d->compact[i][0]; i++) {
        apr_time_t started = apr_time_now();
        int nrows = 0, rv;

        if (!compact_step_runs(d->compact[i][0], i, tables)) {
            continue;
        }
        if (each) {
            each(ctx, d->compact[i][0], 0, 0);
        }
        /* (constant text, no argument: REINDEX CONCURRENTLY, VACUUM and DO cannot be
         * prepared, and must not run inside a transaction) */
        rv = apr_dbd_query(db->driver, db->handle, &nrows, d->compact[i][1]);
        if (rv != 0) {
            const char *e = apr_dbd_error(db->driver, db->handle, rv);

            db->error = apr_psprintf(p, "%s: %s", d->compact[i][0], e ? e : "failed");
            return APR_EGENERAL;
        }
        if (each) {
            each(ctx, d->compact[i][0], 1,
                 (double)(apr_time_now() - started) / APR_USEC_PER_SEC);
        }
    }
    return APR_SUCCESS;
}
