/* mod_qrtrack_spool.c: while the database cannot be reached, scans are answered from
 * this node's snapshot of codes and their visits kept in its spool, replayed later. */
#ifndef MOD_QRTRACK_SPOOL_H
#define MOD_QRTRACK_SPOOL_H

#include "httpd.h"
#include "qrt_store.h"

typedef struct {
    const char *node;               /* the node's id */
    apr_int64_t *seq;               /* the visits' sequence numbers, ascending */
    qrt_visit_t *visits;
    int n;
    /* the last visits spooled from a commit whose answer was lost (0: none): its token
     * and their sequence numbers (qrt_spool_put) */
    apr_int64_t live_token, live_from, live_upto;
} qrt_spool_batch_t;
typedef struct {
    int enabled, reachable;
    apr_uint64_t spooled, replayed, spooled_total, snapshot_answers, snapshot_writes;
    apr_uint64_t refused;           /* visits set aside, refused for good */
} qrt_spool_status_t;
apr_status_t qrt_spool_post_config(apr_pool_t *pconf, apr_pool_t *ptemp, server_rec *s);
/* In the check_config hook (apachectl configtest too): the node's directory, when
 * QRTrackSpoolDir names one, is there; when there, the User can write it. */
apr_status_t qrt_spool_check_config(apr_pool_t *ptemp, server_rec *s);
void qrt_spool_child_init(apr_pool_t *pchild, server_rec *s);
int qrt_spool_enabled(void);
/* Whether the database is known to be unreachable (every child sees it at once). */
int qrt_db_down(void);
/* Says it cannot be reached (logged once); the keeper then probes it until it
 * answers, and says so. */
void qrt_db_mark_down(server_rec *s, const char *why);
void qrt_db_mark_up(server_rec *s);
/* Whether the server answered a round trip of the node's keeper (each second, on its own
 * connection, while the snapshot is kept) within the last `within`. */
int qrt_db_answered_within(apr_interval_time_t within);
/* Whether db's last error means the database cannot be reached (not a lock, not
 * a statement's own failure). */
int qrt_db_unreachable(const qrt_db_t *db);
/* Whether visits wait in the spool: new ones then go behind them. */
int qrt_spool_pending(void);
void qrt_spool_status(qrt_spool_status_t *st);
/* A code from the snapshot: APR_NOTFOUND when it is not there. *route: its routing
 * (qrt_route_src_encode's text), NULL when none. */
apr_status_t qrt_snapshot_lookup(request_rec *r, const char *code, apr_int64_t *id,
                                 const char **url, const char **route);
/* The writer: n visits into the spool, durably (APR_ENOSPC past QRTrackSpoolLimit,
 * APR_ENOTIMPL without a spool). */
apr_status_t qrt_spool_put(server_rec *s, const qrt_visit_t *v, int n, apr_int64_t live);
/* The key of this node's row of its last live commit's token in spool_marks ("<node>+live":
 * the scan writer writes it in each commit of a remote database, so that visits spooled
 * after a commit whose answer was lost are known at their replay to be in the database or
 * not); NULL without a spool. */
const char *qrt_spool_live_key(server_rec *s);
/* The oldest spooled visits, at most max (b->n = 0: none). */
apr_status_t qrt_spool_next(apr_pool_t *p, server_rec *s, int max, qrt_spool_batch_t *b);
/* b is in the database now (recorded of them were new to it): out of the spool. */
void qrt_spool_replayed(server_rec *s, const qrt_spool_batch_t *b, int recorded);
/* Whether an idle writer is due to count the spool (every few seconds a process), and
 * the count: visits put back by qrtrack-admin spool retry are then replayed without a
 * restart. Under the writers' mutex. */
int qrt_spool_recount_due(void);
void qrt_spool_recount(server_rec *s);
/* The database refused b's first visit for good (why: its error): set aside in the
 * spool's refused visits, out of the way of those behind it. */
void qrt_spool_refuse_head(server_rec *s, const qrt_spool_batch_t *b, const char *why);

#endif
