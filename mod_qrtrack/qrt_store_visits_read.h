/* qrt_store_visits_read: reading a tracker's visits (listing, search, polling,
 * export). The writer side is qrt_store_visits_record (qrt_store.h).
 *
 * Order everywhere: newest first, visit_start descending, ties by id descending.
 * Listings and exports walk (tracker_id, visit_start, id): SQLite's table itself
 * (schema 11), PostgreSQL's index visits_tracker_visitor; no sort. Polls
 * (since_id > 0) walk that order from the floor of the ids above since_id
 * (visit_floor: SQLite's schema 14, PostgreSQL's 57).
 * Searches (schema 7) read only the tracker's own strings: the entries of the
 * dictionaries of user agents, places, referers and ips that its visits name and
 * that hold the text (once per request), then count the tracker's visits with
 * those ids through the dictionaries' indexes, and page them either along the time
 * index, each visit tested on its own strings (matches dense enough, or too many
 * entries to list), or picked through those indexes and sorted. Polls and exports
 * test each visit they read on its own strings. */
#ifndef QRT_STORE_VISITS_READ_H
#define QRT_STORE_VISITS_READ_H

#include "qrt_store.h"

/* Which visits of one tracker: all bounds inclusive, open ends as
 * APR_INT64_MIN / APR_INT64_MAX (qrt_visit_filter_init sets them). */
typedef struct {
    apr_int64_t tracker_id;
    apr_int64_t start;          /* visit_start >= start */
    apr_int64_t end;            /* visit_start <= end */
    apr_int64_t since_id;       /* id > since_id (0: all) */
    const char *search;         /* NULL, or text that one of browser, os, device,
                                 * country, city, referer, user_agent, ip contains
                                 * (ASCII letters case-insensitively) */
    apr_int64_t *matched;       /* NULL, or where a search's page leaves how many
                                 * visits the search matches (-1 before), which
                                 * qrt_store_visits_count then answers */
} qrt_visit_filter_t;

/* Most visits read per query of an export. */
#define QRT_VISITS_CHUNK 1000

/* A filter of every visit of tracker_id. */
void qrt_visit_filter_init(qrt_visit_filter_t *f, apr_int64_t tracker_id);

/* How many visits f selects (a scan of the index range, or with a search of
 * the rows: callers avoid it when they know the answer otherwise). */
apr_status_t qrt_store_visits_count(qrt_db_t *db, apr_pool_t *p,
                                    const qrt_visit_filter_t *f, apr_int64_t *total);

/* Visits offset..offset+limit-1 of f in listing order: an array of qrt_visit_t
 * (visitor left NULL), everything allocated in p. */
apr_status_t qrt_store_visits_page(qrt_db_t *db, apr_pool_t *p,
                                   const qrt_visit_filter_t *f, apr_int64_t offset,
                                   apr_int64_t limit, apr_array_header_t **out);

/* Keyed paging for exports: at most limit visits of f that come after the
 * visit (after_start, after_id) in listing order (after_id 0: from the top).
 * Cost does not grow with the depth. Array of qrt_visit_t in p. */
apr_status_t qrt_store_visits_after(qrt_db_t *db, apr_pool_t *p,
                                    const qrt_visit_filter_t *f, apr_int64_t after_start,
                                    apr_int64_t after_id, apr_int64_t limit,
                                    apr_array_header_t **out);

/* The highest visit id of a tracker, 0 when it has none (SQLite: the tracker's
 * last_visit_id, schema 14; PostgreSQL: one index probe). */
apr_status_t qrt_store_visits_max_id(qrt_db_t *db, apr_pool_t *p, apr_int64_t tracker_id,
                                     apr_int64_t *max_id);

/* Where visits went (schema 25, report=destination): fn is called for each visit of
 * tracker_id that is no bot with s <= visit_start <= e, in time order, with its
 * destination's id (0: none), whether it is a click, and its visitor id. Read along
 * the tracker's time order (SQLite: the table's key; PostgreSQL: visits_tracker_visitor,
 * then each row) in keyed pages: its cost grows with those visits, its memory does not. */
typedef void qrt_visit_dest_fn(void *ctx, apr_int64_t dest_id, int click,
                               apr_int64_t visitor);
apr_status_t qrt_store_visits_destinations(qrt_db_t *db, apr_pool_t *p,
                                           apr_int64_t tracker_id, apr_int64_t s,
                                           apr_int64_t e, qrt_visit_dest_fn *fn, void *ctx);
/* report=destination over all of account_id's trackers (schema 50): the visits that are
 * no bots with s <= visit_start <= e and a destination, by destination (groups, of
 * qrt_visit_dest_group_t), and *only: how many of their visitors have no visit without
 * one in the window. Read along visits_dest: the cost grows with those visits alone. */
typedef struct {
    apr_int64_t dest_id, scans, clicks, uniques;
} qrt_visit_dest_group_t;
apr_status_t qrt_store_visits_dest_groups(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                          apr_int64_t s, apr_int64_t e,
                                          apr_array_header_t **groups, apr_int64_t *only);
/* report=destination over listed trackers (schema 61): fn for each visit of the n trackers
 * ids that is no bot with s <= visit_start <= e and a destination (along
 * visits_tracker_dest), at most most + 1 of them: *count how many (most + 1 tells there
 * are more). */
apr_status_t qrt_store_visits_trackers_dests(qrt_db_t *db, apr_pool_t *p,
                                            const apr_int64_t *ids, int n, apr_int64_t s,
                                            apr_int64_t e, apr_int64_t most,
                                            qrt_visit_dest_fn *fn, void *ctx,
                                            apr_int64_t *count);
/* The trackers (apr_int64_t) of visitor's visits that are no bots with s <= visit_start
 * <= e and no destination, each once. */
apr_status_t qrt_store_visits_visitor_rest(qrt_db_t *db, apr_pool_t *p, apr_int64_t visitor,
                                           apr_int64_t s, apr_int64_t e,
                                           apr_array_header_t **trackers);
/* The URL of destination id, in p; NULL when there is none (purged meanwhile). */
apr_status_t qrt_store_visits_destination_url(qrt_db_t *db, apr_pool_t *p, apr_int64_t id,
                                              const char **url);

/* The LIKE pattern of a search text: ASCII letters lowered, '\\', '%' and '_'
 * escaped with '\\', wrapped in '%'. In p. */
const char *qrt_visits_like_pattern(apr_pool_t *p, const char *search);

#endif
