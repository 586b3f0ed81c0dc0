/* qrt_spool: a node's own durable files for the times its database cannot be reached.
 *
 * Two SQLite files, each opened by one connection per user (they are not shared
 * between threads):
 *
 *   the spool      visits committed on this node while the database could not take
 *                  them, oldest first, each with a sequence number of this node; they
 *                  go into the database, in order, once it answers again. The node's
 *                  id (random, made once) is kept here: with the sequence it names a
 *                  visit uniquely, so a replay interrupted between the database's
 *                  commit and the spool's deletion does not record a visit twice.
 *   the snapshot   code -> (tracker id, destination, routing) of every live tracker, kept
 *                  current from the database, read when it cannot be reached.
 *
 * Both are created 0640; the spool is synchronous (FULL), so a visit appended is on
 * disk when qrt_spool_append returns. */
#ifndef QRT_SPOOL_H
#define QRT_SPOOL_H

#include <apr_pools.h>
#include "qrt_store.h"

typedef struct qrt_spool qrt_spool_t;

typedef enum { QRT_SPOOL_VISITS, QRT_SPOOL_SNAPSHOT } qrt_spool_kind_t;

/* Opens (creating it and its tables when missing) the file at path; the connection is
 * closed with p. APR_SUCCESS, QRT_SPOOL_EDAMAGED when the file is not an SQLite database
 * or a damaged one (SQLITE_NOTADB, SQLITE_CORRUPT: a disk's or a copy's fault), or
 * another error; *err says why. */
#define QRT_SPOOL_EDAMAGED APR_EBADF
apr_status_t qrt_spool_open(apr_pool_t *p, const char *path, qrt_spool_kind_t kind,
                            qrt_spool_t **s, const char **err);
/* Whether the file at path is a node's spool of visits (its tables meta, visits and
 * refused), read without writing anything: 1, or 0 with *why (static text). For a tool
 * handed a path, which qrt_spool_open would turn into a spool (adding its tables to the
 * main database, say). */
int qrt_spool_is_spool(const char *path, const char **why);
/* The last error of s, for log lines. */
const char *qrt_spool_error(qrt_spool_t *s);
/* 1 when an error of s said its file is damaged (as QRT_SPOOL_EDAMAGED). */
int qrt_spool_damaged(const qrt_spool_t *s);
/* Moves the file at path (and its -wal and -shm files) aside, to
 * "<path>.damaged-<stamp>" (*aside, in p), so that a new one can be made where it was and
 * the old one kept to be looked at or recovered. APR_SUCCESS or rename(2)'s error. */
apr_status_t qrt_spool_set_aside(apr_pool_t *p, const char *path, apr_int64_t stamp,
                                 const char **aside);

/* ---- the spool of visits --------------------------------------------------------- */

/* This node's id: 16 hex digits, made when the spool file was created. */
const char *qrt_spool_node(qrt_spool_t *s);
/* Appends n visits in one durable transaction. live, not 0: the token of the commit
 * they come from, whose answer may have been lost (it may be in the database): kept
 * with their sequence numbers (qrt_spool_live) in the same transaction. */
apr_status_t qrt_spool_append(qrt_spool_t *s, const qrt_visit_t *v, int n,
                              apr_int64_t live);
/* The token and the sequence numbers (from, upto) of the last visits appended with one
 * (0, 0, 0: none). */
apr_status_t qrt_spool_live(qrt_spool_t *s, apr_int64_t *token, apr_int64_t *from,
                            apr_int64_t *upto);
/* Visits waiting in the spool. */
apr_status_t qrt_spool_count(qrt_spool_t *s, apr_int64_t *n);
/* The oldest visits, at most max: their sequence numbers in seq[], visits in v[]
 * (allocated from p); *n how many. */
apr_status_t qrt_spool_peek(qrt_spool_t *s, apr_pool_t *p, int max, apr_int64_t **seq,
                            qrt_visit_t **v, int *n);
/* Deletes the visits up to sequence number upto (included). */
apr_status_t qrt_spool_drop(qrt_spool_t *s, apr_int64_t upto);

/* ---- visits the database refused for good ----------------------------------------- */

/* Moves visit seq out of the spool into its refused visits, with why (the database's
 * error) and at (seconds since 1970), in one durable transaction. */
apr_status_t qrt_spool_refuse(qrt_spool_t *s, apr_int64_t seq, const char *why,
                              apr_int64_t at);
/* Refused visits kept. */
apr_status_t qrt_spool_refused_count(qrt_spool_t *s, apr_int64_t *n);
/* Calls fn on each refused visit, oldest first (what fn gets lives until the next call;
 * a status other than APR_SUCCESS stops the walk and is returned). */
typedef apr_status_t qrt_spool_refused_fn(void *ctx, apr_int64_t seq, const qrt_visit_t *v,
                                          const char *why, apr_int64_t at);
apr_status_t qrt_spool_refused_each(qrt_spool_t *s, apr_pool_t *p, qrt_spool_refused_fn *fn,
                                    void *ctx);
/* Deletes the refused visits set aside before `before` (seconds since 1970): they hold
 * their visitors' addresses and user agents, which QRTrackVisitRetention bounds; *n how
 * many. */
apr_status_t qrt_spool_refused_expire(qrt_spool_t *s, apr_int64_t before, apr_int64_t *n);
/* Moves every refused visit back to the end of the spool, in their order, with new
 * sequence numbers (the database's mark of this node may have passed the old ones);
 * *n how many. */
apr_status_t qrt_spool_refused_retry(qrt_spool_t *s, apr_int64_t *n);

/* ---- the replay's way past a visit the database refuses ------------------------------ */

/* How many visits the next replay takes, and what to do when the database refuses a
 * replay's rows (qrt_db_refuses_rows): a batch is halved until the visit it refuses is
 * alone at the head, which is set aside once it was refused QRT_REPLAY_TRIES times in a
 * row (a replay a second apart); the batches then grow back. */
#define QRT_REPLAY_TRIES 3
typedef struct {
    int max, size;
    apr_int64_t head;           /* the visit refused alone, and how many times */
    int head_fails;
} qrt_replay_t;
typedef enum { QRT_REPLAY_PAUSE, QRT_REPLAY_SMALLER, QRT_REPLAY_REFUSE } qrt_replay_act_t;
void qrt_replay_init(qrt_replay_t *r, int max);
/* The replay of r->size visits went in. */
void qrt_replay_ok(qrt_replay_t *r);
/* The database refused the rows of a replay of n visits, the first of them seq:
 * SMALLER (take r->size now), PAUSE (the head alone: try it again after the pause),
 * or REFUSE (set the head aside). */
qrt_replay_act_t qrt_replay_refused(qrt_replay_t *r, apr_int64_t seq, int n);

/* ---- the snapshot ----------------------------------------------------------------- */

/* APR_NOTFOUND when code is not in the snapshot. *route: the routing as
 * qrt_route_src_encode wrote it, NULL when none. */
apr_status_t qrt_snap_get(qrt_spool_t *s, apr_pool_t *p, const char *code,
                          apr_int64_t *id, const char **url, const char **route);
/* Changes are made between begin and commit (rollback on an error). */
apr_status_t qrt_snap_begin(qrt_spool_t *s);
apr_status_t qrt_snap_commit(qrt_spool_t *s);
void qrt_snap_rollback(qrt_spool_t *s);
/* Sets code's entry; gen marks it as seen by the sweep of that generation. */
apr_status_t qrt_snap_put(qrt_spool_t *s, const char *code, apr_int64_t id,
                          const char *url, const char *route, apr_int64_t gen);
apr_status_t qrt_snap_del(qrt_spool_t *s, const char *code);
/* Deletes every entry that the sweep of generation gen did not see. */
apr_status_t qrt_snap_sweep(qrt_spool_t *s, apr_int64_t gen);
/* Entries in the snapshot. */
apr_status_t qrt_snap_count(qrt_spool_t *s, apr_int64_t *n);
/* Numbers kept with the snapshot across restarts (0 when never set). */
apr_status_t qrt_snap_meta_get(qrt_spool_t *s, const char *name, apr_int64_t *v);
apr_status_t qrt_snap_meta_set(qrt_spool_t *s, const char *name, apr_int64_t v);

#endif /* QRT_SPOOL_H */
