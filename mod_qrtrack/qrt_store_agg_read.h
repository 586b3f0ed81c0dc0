/* qrt_store_agg_read: reads of the report aggregates (qrt_store_agg_read.c).
 *
 * The aggregates (see qrt_agg.h) are kept per tracker (kind QRT_AGG_T, valid for any
 * set of trackers) and per account (the other kinds: valid for "every tracker of the
 * account" while the account has deleted no tracker and retagged none since they
 * were built, see qrt_store_agg_read_state). Windows are inclusive epoch seconds; pass
 * QRT_AGG_TMIN / QRT_AGG_TMAX for an open bound. */
#ifndef QRT_STORE_AGG_READ_H
#define QRT_STORE_AGG_READ_H

#include "qrt_store.h"
#include "qrt_agg.h"
#include "qrt_vcols.h"

/* One group's totals over a window. */
typedef struct {
    apr_int64_t grp;            /* tracker id for QRT_AGG_T, else 0 */
    const char *val;            /* browser, country, city or tag; "" for none */
    apr_int64_t scans, clicks;
    apr_int64_t uniques;        /* distinct visitors (when asked for) */
} qrt_agg_row_t;

/* Every group of a kind with visits in [s, e] among the account's aggregated
 * trackers (for QRT_AGG_T: one row per tracker, deleted ones included; the caller
 * keeps those it covers; with only, the nonly trackers listed are read one by one
 * when they are few, and other trackers may appear too). Array of qrt_agg_row_t. */
apr_status_t qrt_store_agg_read_window(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                       int kind, const apr_int64_t *only, int nonly,
                                       apr_int64_t s, apr_int64_t e, int want_uniques,
                                       apr_array_header_t **out);

/* From now on, the windows read in p share what they read of partial days' visits and of
 * the trackers' tags (kept in p's userdata until p goes): for the pool of one report's
 * windows, which read the database as it is while nothing is written. Without it, each
 * window reads them itself. */
void qrt_store_agg_read_share(apr_pool_t *p);

/* The trackers' tags as the report aggregates hold them (agg_tag: tracker id, an
 * apr_int64_t key -> apr_array_header_t of const char *) for account's windows read in
 * p, a pool marked by qrt_store_agg_read_share: a map kept from an earlier report under
 * the same trackers version (agg_tag and agg_trk raise it) is handed in with _use, read
 * only, living longer than p; _got is the map p holds for account (handed in or read by a
 * window of kind tag), NULL when none. */
void qrt_store_agg_read_tags_use(apr_pool_t *p, apr_int64_t account, apr_hash_t *map);
apr_hash_t *qrt_store_agg_read_tags_got(apr_pool_t *p, apr_int64_t account);

/* One local day of the date report. */
typedef struct {
    apr_int64_t day;            /* days since 1970-01-01 in the offset */
    apr_int64_t scans, clicks, uniques;
} qrt_agg_day_t;

/* The account's visits (scans and clicks, bots apart, as its aggregates count them) in
 * the quarter-hours that lie wholly in [s, e], from its quarter-hour counters: no more
 * than its visits in [s, e]. */
apr_status_t qrt_store_agg_read_quarters(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                         apr_int64_t s, apr_int64_t e, apr_int64_t *n);

/* The account's visits in [s, e] per local day of the offset (seconds east of UTC),
 * days with visits only, ascending. APR_ENOTIMPL when the offset is not a multiple
 * of 15 minutes (the caller counts from the visits). */
apr_status_t qrt_store_agg_read_days(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                     apr_int64_t s, apr_int64_t e, int offset,
                                     apr_array_header_t **out);

/* One UTC day of one group: scans and clicks. */
typedef struct {
    apr_int64_t day;
    apr_int64_t grp;
    apr_int64_t scans, clicks;
} qrt_agg_daily_t;

/* Scans and clicks per UTC day in [d0, d1] (day numbers) for QRT_AGG_A (grp 0) or
 * per tracker and day for QRT_AGG_T (every tracker of the account). Array of
 * qrt_agg_daily_t. */
apr_status_t qrt_store_agg_read_daily(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                      int kind, apr_int64_t d0, apr_int64_t d1,
                                      apr_array_header_t **out);
/* Scans and clicks per UTC day in [d0, d1] of the n trackers ids together (grp 0, a row a
 * day with visits; up to 64 trackers summed by a statement, the statements' rows of a
 * day added here). */
apr_status_t qrt_store_agg_read_daily_listed(qrt_db_t *db, apr_pool_t *p,
                                             apr_int64_t account_id, const apr_int64_t *ids,
                                             int n, apr_int64_t d0, apr_int64_t d1,
                                             apr_array_header_t **out);

/* Whether the account-level aggregates still describe the account's live trackers. */
typedef struct {
    int deleted;                /* an aggregated tracker was deleted since */
    apr_hash_t *dirty_tags;     /* tag -> tag: trackers gained or lost it since */
} qrt_agg_state_t;
apr_status_t qrt_store_agg_read_state(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                      qrt_agg_state_t *st);

/* Visits read one by one (raw paths): non-bot visits of one tracker in [s, e]. */
typedef void qrt_agg_visit_fn(void *ctx, apr_int64_t tracker_id, apr_int64_t t, int click,
                              const char *visitor, const char *browser,
                              const char *country, const char *city);
apr_status_t qrt_store_agg_read_raw(qrt_db_t *db, apr_pool_t *p, apr_int64_t tracker_id,
                                    apr_int64_t s, apr_int64_t e, qrt_agg_visit_fn *fn,
                                    void *ctx);

/* The non-bot visits in [s, e] of the visitors listed (apr_int64_t, as visit_rows holds
 * them), on any tracker of any account: fn for each, as above (its tracker's id given). */
apr_status_t qrt_store_agg_read_visitors(qrt_db_t *db, apr_pool_t *p,
                                         const apr_array_header_t *visitors, apr_int64_t s,
                                         apr_int64_t e, qrt_agg_visit_fn *fn, void *ctx);

/* The visits of at most QRT_AGG_RAW_IDS trackers in [s, e] grouped by the database,
 * distinct visitors included: one group (ALL, val ""), per tracker type, per current
 * tag, per local day of offset (grp = day number, val ""), per browser, city or
 * country (val "" for none). Groups with visits only. Array of qrt_agg_row_t. */
#define QRT_AGG_RAW_IDS 64
enum { QRT_AGG_RAW_ALL, QRT_AGG_RAW_TYPE, QRT_AGG_RAW_TAG, QRT_AGG_RAW_DATE,
       QRT_AGG_RAW_BROWSER, QRT_AGG_RAW_CITY, QRT_AGG_RAW_COUNTRY };
apr_status_t qrt_store_agg_read_raw_groups(qrt_db_t *db, apr_pool_t *p, int by,
                                           const apr_int64_t *ids, int n, apr_int64_t s,
                                           apr_int64_t e, int offset,
                                           apr_array_header_t **out);

/* The account's UTC days in [d0, d1] whose aggregates are sealed (its counters, links
 * and visits), with a seal of the three (qrt_agg_day_seal_t, by day): while a day keeps
 * its seal, no visit of it changed; the listed trackers' blocks are kept under it. */
typedef struct {
    apr_int64_t day, seal;
} qrt_agg_day_seal_t;
apr_status_t qrt_store_agg_day_seals(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                     apr_int64_t d0, apr_int64_t d1, apr_array_header_t **out);

/* The non-bot visits of at most QRT_AGG_LISTED_MAX trackers (ids, n) around [s, e], a
 * block (qrt_vcols.h) at a time: of each tracker and day whose aggregates are sealed,
 * the block this process keeps under the day's seals (read from the visits, and kept,
 * when it has none); of the other days, blocks of the visits in [s, e] read at once.
 * A block may hold visits outside [s, e] (of the window's first and last day): fn
 * leaves them out. Without strings, the blocks of days not sealed hold "" for the
 * browser, country and city. APR_ENOTIMPL when the process keeps no sealed values
 * (nothing was read); APR_EAGAIN when more visits would be read through SQL than four
 * fifths of the cache hold (at least 2 M; the caller counts them in the database), or
 * with any set (a caller whose other way costs more, in time and memory) than make
 * blocks of twice the cache's bytes (at least 4 M). With held NULL a block is valid during fn
 * only; else every block stays valid until qrt_store_agg_read_listed_release(held):
 * those kept are held in the cache (held gets them), those read now are copied into p. */
#define QRT_AGG_LISTED_MAX 1000
typedef apr_status_t qrt_agg_vcols_fn(void *ctx, apr_int64_t tracker_id,
                                      const qrt_vcols_t *v);
/* With held, ready (unless NULL) is called once every sealed day's block has gone to fn,
 * before the days not sealed are read through SQL (today's, say): the caller may begin
 * on the blocks it has in another thread meanwhile (they stay valid; fn is not called
 * from that thread). */
typedef void qrt_agg_ready_fn(void *ctx);
apr_status_t qrt_store_agg_read_listed(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                       const apr_int64_t *ids, int n, apr_int64_t s,
                                       apr_int64_t e, int strings, int any,
                                       apr_array_header_t *held, qrt_agg_vcols_fn *fn,
                                       qrt_agg_ready_fn *ready, void *ctx);
/* Tests: the visits qrt_store_agg_read_listed may read through SQL (0: its own rule). */
void qrt_store_agg_read_listed_bound(apr_size_t most);
/* Lets go of the blocks held for qrt_store_agg_read_listed (held is then empty). */
void qrt_store_agg_read_listed_release(apr_array_header_t *held);
/* A second connection for qrt_store_agg_read_listed: once a list of min trackers or
 * more (0: QRT_AGG_HELP_MIN) meets a block not kept, a second thread reads and keeps
 * the blocks of its trackers from the last one back, over a connection take gives
 * (NULL when none is free now: the request reads them all itself), while the request
 * goes on from the first; where the two meet, the thread stops and gives the connection
 * back (broken: a statement of it failed; spans: the blocks of 16 days it read), and the
 * request finds the rest kept. take and give are called by one thread at a time, each
 * take followed by its give before the next take. Without take (the default), none. Set
 * before the threads start. */
#define QRT_AGG_HELP_MIN 16
typedef qrt_db_t *qrt_agg_help_take_fn(void);
typedef void qrt_agg_help_give_fn(qrt_db_t *db, int broken, apr_size_t spans);
void qrt_store_agg_read_helper(qrt_agg_help_take_fn *take, qrt_agg_help_give_fn *give,
                               int min);
/* Tests: with on, a request that starts the second thread waits until the thread has
 * tried its first block (or stopped), so that its share does not hang on the scheduler. */
void qrt_store_agg_read_helper_sync(int on);
/* The spans of blocks second threads have read and kept so far (tests). */
apr_size_t qrt_store_agg_read_helped(void);

/* The distinct visitors of the non-bot visits of at most QRT_AGG_RAW_IDS trackers in
 * [s, e], counted by the database along (tracker_id, visit_start) (none is
 * transferred). */
apr_status_t qrt_store_agg_read_raw_uniques(qrt_db_t *db, apr_pool_t *p,
                                            const apr_int64_t *ids, int n, apr_int64_t s,
                                            apr_int64_t e, apr_int64_t *out);

/* A live tracker as the reports see it. */
typedef struct {
    const char *tag, *dimension, *value;    /* dimension NULL without a colon */
} qrt_report_tag_t;
typedef struct {
    apr_int64_t id;
    const char *name;
    const char *type;
    apr_array_header_t *tags;               /* qrt_report_tag_t, by tag */
} qrt_report_tracker_t;

/* The account's live trackers by id, with their current tags. */
apr_status_t qrt_store_agg_read_trackers(qrt_db_t *db, apr_pool_t *p,
                                         apr_int64_t account_id, apr_array_header_t **out);
/* The same for the trackers among ids (at most QRT_AGG_RAW_IDS), and the number of
 * the account's live trackers. */
apr_status_t qrt_store_agg_read_trackers_in(qrt_db_t *db, apr_pool_t *p,
                                            apr_int64_t account_id, const apr_int64_t *ids,
                                            int n, apr_array_header_t **out);
apr_status_t qrt_store_agg_read_count(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                      apr_int64_t *out);

#endif
