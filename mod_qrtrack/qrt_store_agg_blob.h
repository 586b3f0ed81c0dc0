/* qrt_store_agg_blob: the sealed report aggregates (qrt_aggblob.h) in the table
 * agg_blob (account_id, level, bucket, kind, data): sealing, invalidation and
 * fetching.
 *
 * A unit is one account's bucket: a day (level 1: counters of every kind, links,
 * visits, quarter-hours, links by previous day) or 16 or 256 days (counters). A unit
 * is sealed once no visit can be expected in it: its last day ended
 * QRT_AGGBLOB_SETTLE seconds ago, or it starts after tomorrow (visits imported ahead
 * of time). Every transaction that changes a day's counters (scans, clicks, firsts),
 * links, gaps or quarter-hours deletes that day's units and puts the day on the work
 * list agg_unsealed (qrt_store_agg_blob_invalidate, from the accumulator's flushes),
 * so a sealed value is never stale: where one is missing, the readers read the rows.
 * Sealing takes a settled day off the list, reads its rows and writes its values (and
 * its 16- and 256-day buckets' when they are settled and unsealed) in one transaction
 * under the store's write lock.
 *
 * SQLite (schema 17) reads a day's links and gaps by time from its rows only while the
 * day is not sealed: agg_link and agg_gaps are keyed by the previous visit's time,
 * and their indexes by time (agg_link_u, agg_gaps_u) hold the rows with unsealed = 1
 * alone. Sealing a day sets unsealed = 0 on its rows; whatever drops its values sets
 * unsealed = 1 again first, on the rows the links value lists (by (previous_time,
 * visit_time)). The rows stay the truth: a
 * day whose values went behind the store's back (with counters, off the work list)
 * is read along all the account's rows, and qrt_store_agg_blob_relist puts its rows
 * back by time. PostgreSQL keeps its tables keyed by time: unsealed stays 1 there. */
#ifndef QRT_STORE_AGG_BLOB_H
#define QRT_STORE_AGG_BLOB_H

#include "qrt_store.h"
#include "qrt_aggblob.h"

#define QRT_AGGBLOB_SETTLE 600

/* Deletes the sealed units holding day (its day, 16 and 256 days) and puts the day on
 * the work list. */
apr_status_t qrt_store_agg_blob_invalidate(qrt_db_t *db, apr_pool_t *p,
                                           apr_int64_t account, apr_int64_t day);

/* Every sealed unit; every day with counters goes on the work list (the rebuild). */
apr_status_t qrt_store_agg_blob_clear(qrt_db_t *db, apr_pool_t *p);

/* Puts on the work list every day (and the first day of every 16- or 256-day bucket)
 * that has counters and no sealed value: for sealed values deleted behind the
 * store's back (qrtrack-admin aggregates seal runs it first). On SQLite, the rows of
 * days without a links value are read by time again first (one pass over them all). */
apr_status_t qrt_store_agg_blob_relist(qrt_db_t *db, apr_pool_t *p);

/* Seals at most max settled days of the work list at time now (with their buckets),
 * each in its own transaction; *sealed says how many units, *more whether other days
 * are due. busy NULL: each day waits for the store's write lock. Else (a server's idle
 * moments) on PostgreSQL a day whose lock another writer holds (an import's batch, a
 * node's commit) is left for later: *busy 1, and the days after it too. */
apr_status_t qrt_store_agg_blob_seal(qrt_db_t *db, apr_pool_t *p, apr_int64_t now,
                                     int max, int *sealed, int *more, int *busy);

/* Whether the unit b of lvl (a day, 16 or 256 days) may be sealed at time now: it
 * ended QRT_AGGBLOB_SETTLE seconds ago, or starts after tomorrow. */
int qrt_store_agg_blob_due(int lvl, apr_int64_t b, apr_int64_t now);

/* The sealed values of kind for buckets [b0, b1] of lvl, in bucket order: those the
 * process keeps (qrt_store_agg_blob_cache) from memory, the others read. fn must not
 * keep data after it returns. */
typedef apr_status_t qrt_aggblob_fn(void *ctx, apr_int64_t b, const char *data);
apr_status_t qrt_store_agg_blob_fetch(qrt_db_t *db, apr_pool_t *p, apr_int64_t account,
                                      int kind, int lvl, apr_int64_t b0, apr_int64_t b1,
                                      qrt_aggblob_fn *fn, void *ctx);

/* The same, each value with its seal (0: none), or, for a bucket that want_ix(ctx, b)
 * says may be, a kept index of it (qrt_aggidx.h) instead, under ixkind and the value's
 * seal: fn gets data or ix (ixlen bytes), the other NULL. */
typedef apr_status_t qrt_aggblob_ix_fn(void *ctx, apr_int64_t b, const char *data,
                                       apr_int64_t seal, const char *ix, apr_size_t ixlen);
apr_status_t qrt_store_agg_blob_fetch_ix(qrt_db_t *db, apr_pool_t *p, apr_int64_t account,
                                         int kind, int lvl, apr_int64_t b0, apr_int64_t b1,
                                         int ixkind, int (*want_ix)(void *, apr_int64_t),
                                         qrt_aggblob_ix_fn *fn, void *ctx);

/* Whether the process keeps sealed values; keeps len bytes derived from the value of
 * (account, lvl, b) under kind and the value's seal (no cache: nothing). */
int qrt_store_agg_blob_cached(void);
void qrt_store_agg_blob_keep(apr_int64_t account, int lvl, apr_int64_t b, int kind,
                             apr_int64_t seal, const char *data, apr_size_t len);

/* The cache of sealed values that qrt_store_agg_blob_fetch uses in this process from
 * now on (NULL: none, as in qrtrack-admin): set once, before threads read. */
struct qrt_aggcache_t;
void qrt_store_agg_blob_cache(struct qrt_aggcache_t *c);
/* The process's kept values (NULL: none are kept). */
struct qrt_aggcache_t *qrt_store_agg_blob_kept(void);
struct qrt_strid_t;
/* The numbers of the strings of kept blocks of visits (qrt_strid.h), set with the cache
 * by the module (NULL: none). */
void qrt_store_agg_blob_strids(struct qrt_strid_t *ids);
struct qrt_strid_t *qrt_store_agg_blob_strid(void);

#endif
