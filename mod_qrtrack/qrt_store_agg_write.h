/* qrt_store_agg_write: the report aggregates as visits are committed and trackers
 * change (qrt_store_agg_write.c). */
#ifndef QRT_STORE_AGG_WRITE_H
#define QRT_STORE_AGG_WRITE_H

#include "qrt_store.h"

typedef struct qrt_store_agg_held qrt_store_agg_held_t;

/* Report aggregates for n visits, inside the caller's transaction; is_new[i] is 1
 * when visit i is its visitor's first on that tracker, 0 when not, and -1 when the
 * caller does not know yet (SQLite: the first visit of its visitor and tracker in
 * the batch, not a bot): it is then found here, from the seeks the aggregates make
 * anyway, and set to 0 or 1. dict_ids[2 i] and [2 i + 1]: the ids of visit i's
 * user agent and place rows (schema 7). held: what qrt_store_agg_write_hold held
 * for these visits, or NULL. */
apr_status_t qrt_store_agg_write_visits(qrt_db_t *db, apr_pool_t *p, const qrt_visit_t *v,
                                        int *is_new, const apr_int64_t *dict_ids, int n,
                                        const qrt_store_agg_held_t *held);

/* PostgreSQL's pipelined transaction (qrt_db_begin_pipelined): what
 * qrt_store_agg_write_visits reads before anything else, held (qrt_db_hold_select)
 * so that it goes with the round trip that inserts the visits: the aggregated state
 * of the batch's trackers and each visitor's latest visit, sought before the batch's
 * rows are written (the same visit the seek after them finds below the visitor's
 * first id of the batch: the writers take the write lock first). Called before the
 * visits are inserted, with the same visits; *held (from p) goes to
 * qrt_store_agg_write_visits, NULL when nothing was held (another dialect, no
 * pipeline): whatever did not come is read there as before. */
apr_status_t qrt_store_agg_write_hold(qrt_db_t *db, apr_pool_t *p, const qrt_visit_t *v,
                                      int n, qrt_store_agg_held_t **held);

/* After a tracker was deleted or its tags changed (in the same transaction): brings
 * the account-level aggregates in line, visitor by visitor, so that reports over the
 * whole account stay on the aggregates. APR_EAGAIN when the tracker has more visitors
 * than is reasonable inside a request: nothing changes, the reports count distinct
 * visitors from the visits (still exact) until "qrtrack-admin aggregates rebuild". */
apr_status_t qrt_store_agg_write_tracker_changed(qrt_db_t *db, apr_pool_t *p,
                                                 apr_int64_t tracker_id);

/* How many of a visitor's visits before one that comes out of order are read first
 * (64); when those lack a group of the visits after it, all are read. Set to n when
 * n > 0 (the unit tests read all with small ones). Returns what it was. */
apr_int64_t qrt_store_agg_write_probe(apr_int64_t n);

#endif
