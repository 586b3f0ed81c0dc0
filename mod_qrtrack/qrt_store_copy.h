/* qrt_store_copy: a whole database copied into an empty one, ids kept
 * (qrtrack-admin copy-to: SQLite to PostgreSQL, and back). */
#ifndef QRT_STORE_COPY_H
#define QRT_STORE_COPY_H

#include "qrt_store.h"

/* The copied tables, in the order they are copied (a row's references first). */
#define QRT_COPY_TABLES 13
/* Rows per page: one read of the source, one transaction of the target. */
#define QRT_COPY_PAGE 2000

typedef struct {
    const char *table[QRT_COPY_TABLES];   /* the tables' names */
    apr_int64_t rows[QRT_COPY_TABLES];    /* rows copied, per table */
    const char *error;                    /* what failed (table, statement, message) */
} qrt_copy_report_t;

/* APR_SUCCESS when db holds no account, token, tracker, tag, visit or visitor;
 * APR_EEXIST with *table naming one that has rows. */
apr_status_t qrt_store_copy_check_empty(qrt_db_t *db, apr_pool_t *p, const char **table);

/* Copies accounts, tokens (digest and prefix, as stored), trackers (counters and
 * deletion included), tracker_tags and visits from `from` into `to`, ids kept, in
 * pages keyed by primary key (memory stays flat), each page in one transaction of
 * `to`; then the trackers' visitors come from the copied visits (PostgreSQL's
 * tracker_visitors made from them in one statement; SQLite keeps none: schema 16),
 * and the report's "tracker_visitors" row count is their (tracker, visitor) pairs. The report aggregates are not copied: rebuild them on
 * `to` afterwards (qrt_store_agg_rebuild, qrt_store_agg_rebuild.h). Fills *out, out->error on failure. */
apr_status_t qrt_store_copy_all(qrt_db_t *from, qrt_db_t *to, apr_pool_t *p,
                                qrt_copy_report_t *out);

/* After rows were inserted with their ids: on PostgreSQL, sets the id sequences of
 * accounts, tokens, trackers and visits past the largest id (new rows get fresh
 * ids); nothing to do on SQLite, whose keys follow the largest id by themselves. */
apr_status_t qrt_store_copy_sequences(qrt_db_t *db, apr_pool_t *p);

#endif
