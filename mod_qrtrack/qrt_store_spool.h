/* qrt_store_spool: the database's side of a node's snapshot of codes and of the
 * replay of its spooled visits (qrt_spool.h). */
#ifndef QRT_STORE_SPOOL_H
#define QRT_STORE_SPOOL_H

#include "qrt_store.h"

/* A tracker as a node's snapshot keeps it. */
typedef struct {
    const char *code;
    apr_int64_t id;
    const char *url;
    int deleted;
    apr_int64_t updated;            /* trackers.updated_at */
    const char *route;              /* qrt_route_src_encode's text, NULL: none */
} qrt_snap_row_t;

typedef apr_status_t qrt_snap_row_fn(void *ctx, const qrt_snap_row_t *row);

/* Every tracker made, changed or deleted at or after since (updated_at). */
apr_status_t qrt_store_snap_changed(qrt_db_t *db, apr_pool_t *p, apr_int64_t since,
                                    qrt_snap_row_fn *fn, void *ctx);
/* Every tracker made, changed or deleted from from to to (updated_at, both included). */
apr_status_t qrt_store_snap_changed_between(qrt_db_t *db, apr_pool_t *p, apr_int64_t from,
                                            apr_int64_t to, qrt_snap_row_fn *fn, void *ctx);
/* The next limit live trackers after id after: *last the last one's id, *rows how
 * many (fewer than limit: the end). */
apr_status_t qrt_store_snap_page(qrt_db_t *db, apr_pool_t *p, apr_int64_t after,
                                 apr_int64_t limit, qrt_snap_row_fn *fn, void *ctx,
                                 apr_int64_t *last, int *rows);

/* The highest sequence number of node's spooled visits recorded (0: none yet). */
apr_status_t qrt_store_spool_mark(qrt_db_t *db, apr_pool_t *p, const char *node,
                                  apr_int64_t *seq);
/* Sets it, in the transaction that records them (also a live commit's token under its
 * node's live key). */
apr_status_t qrt_store_spool_mark_set(qrt_db_t *db, apr_pool_t *p, const char *node,
                                      apr_int64_t seq);
/* Makes the row of a node's live key (qrt_spool_live_key) unless it is there. */
apr_status_t qrt_store_spool_live_make(qrt_db_t *db, apr_pool_t *p, const char *key);
/* The token of the node's last live commit (0: none), waiting on PostgreSQL for a
 * transaction that wrote it and has not ended. */
apr_status_t qrt_store_spool_live(qrt_db_t *db, apr_pool_t *p, const char *key,
                                  apr_int64_t *token);

#endif /* QRT_STORE_SPOOL_H */
