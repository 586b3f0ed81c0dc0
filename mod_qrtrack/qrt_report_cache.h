/* qrt_report_cache: the report scopes a process read last, for its threads to share.
 *
 * A report over all of an account's trackers starts from their list (names, types,
 * tags) and from whether the report aggregates still match them (qrt_agg_state_t):
 * about a third of a report's time on 1,000 trackers. Both change only with the
 * account's trackers version (qrt_store_trackers_version, schema 18), which triggers
 * raise in the transaction of every such change, whoever makes it and on whichever
 * node. So a scope is kept
 * under the version read before it was read, and handed out while the store still
 * says that version: exact, whichever node or process made the change.
 *
 * The kept scopes are shared, never copied and never changed: a request holds its
 * scope until its pool goes, and a scope replaced or pushed out meanwhile is freed
 * by the last request that held it. At most max_accounts scopes of at most
 * max_trackers trackers each are kept (the least recently used goes first).
 * Thread-safe. Unit-tested in test/unit/test_report_cache.c. */
#ifndef QRT_REPORT_CACHE_H
#define QRT_REPORT_CACHE_H

#include <apr_pools.h>
#include <apr_tables.h>
#include "qrt_store_agg_read.h"

typedef struct qrt_report_cache_t qrt_report_cache_t;

/* A cache that lives as long as p (its scopes are freed with it). NULL when its lock
 * cannot be made. */
qrt_report_cache_t *qrt_report_cache_make(apr_pool_t *p, int max_accounts,
                                          int max_trackers);

/* The scope kept for account at version: *live (qrt_report_tracker_t, read-only) and
 * *state (its dirty_tags a copy in p), held until p is cleared. 1 when kept, else 0. */
int qrt_report_cache_get(qrt_report_cache_t *c, apr_int64_t account, apr_int64_t version,
                         apr_pool_t *p, apr_array_header_t **live, qrt_agg_state_t *state);

/* Keeps a copy of a scope read after the store said version (replacing the
 * account's kept one). Nothing is kept of more than max_trackers trackers. */
void qrt_report_cache_put(qrt_report_cache_t *c, apr_int64_t account, apr_int64_t version,
                          const apr_array_header_t *live, const qrt_agg_state_t *state);

/* The report aggregates' map of the trackers' tags kept with account's scope at version
 * (qrt_store_agg_read_tags_use: read-only, held until p is cleared), NULL when none. */
apr_hash_t *qrt_report_cache_agg_tags(qrt_report_cache_t *c, apr_int64_t account,
                                      apr_int64_t version, apr_pool_t *p);

/* Keeps a copy of map (qrt_store_agg_read_tags_got) with account's scope kept at
 * version, when there is one and it has none yet, and the map has at most max_trackers
 * trackers of at most 64 tags each. */
void qrt_report_cache_put_agg_tags(qrt_report_cache_t *c, apr_int64_t account,
                                   apr_int64_t version, apr_hash_t *map);

/* Scopes kept now (for tests). */
int qrt_report_cache_count(qrt_report_cache_t *c);

#endif
