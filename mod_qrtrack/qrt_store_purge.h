/* qrt_store_purge: QRTrackVisitRetention's purge of old visits.
 *
 * A visit older than the retention leaves every listing, search and export (the
 * readers' window starts at the retention's edge: mod_qrtrack_visits.c), and what
 * it says about the visitor is erased from its row: address, user agent, referer,
 * browser version, OS, device and (schema 25) where it was sent, which a rule may have
 * chosen by device, OS or language (schema 7: its referer, address and destination ids
 * are dropped and
 * its user agent entry is swapped for one that holds the browser name only). What the report aggregates are computed from
 * stays (time, tracker, source, bot flag, browser name, country, city, keyed
 * visitor id), so every report, the rebuild, a tracker's deletion or retagging and
 * the previous-visit seeks of later visits give the numbers they gave before.
 *
 * The purge walks each tracker's visits by (visit_start, id) (SQLite: the table's
 * own key, schema 11), a bounded step at a time: a step reads at most `batch`
 * entries and changes at most `batch` rows, so it holds the database's
 * write lock for a few milliseconds whatever the size of the database.
 *
 * Then (schema 22) the pass sweeps the user agent, referer, address and (schema 25)
 * destination dictionaries
 * by id, at most `batch` ids a step: the rows no visit refers to any more are deleted
 * (the user agent entries that hold a browser name only are kept: they say nothing
 * about a visitor), so the strings the erased visits held are gone from the database,
 * not just from the visits. Each such step is a transaction under the writers' lock
 * (PostgreSQL: qrt_store_write_lock; SQLite: its write lock) that also raises
 * visit_dict_gen when it deleted rows: writers that keep dictionary ids across
 * commits read it in each transaction and forget their ids when it moved
 * (qrt_dict_cache_generation), so a new visit never gets a deleted id. On SQLite
 * the connection deletes with secure_delete (the bytes are overwritten, in the
 * table, its indexes and the pages freed), and a pass that deleted rows ends with a
 * TRUNCATE checkpoint, so the older page images in the WAL go too (tried again for
 * QRT_PURGE_TRUNCATE_S while readers or checkpoints hold the WAL; after that the next
 * pass that deletes tries again). */
#ifndef QRT_STORE_PURGE_H
#define QRT_STORE_PURGE_H

#include "qrt_store.h"

/* Before any visit (the open lower bound of a full pass). */
#define QRT_PURGE_TMIN (-(APR_INT64_C(1) << 40))

/* Where a pass stands: visits with lo <= visit_start < before are purged, tracker
 * by tracker (in id order), each from the position (t, id) on. Plain data: it may
 * live in shared memory. */
typedef struct {
    apr_int64_t lo, before;
    apr_int64_t tracker;            /* the tracker being walked; 0 before the first */
    apr_int64_t t, id;              /* last position done in it */
    int started;                    /* tracker's walk has begun (t, id are set) */
    int dict;                       /* 0: walking visits; 1-4: sweeping the user agents,
                                     * referers, addresses, destinations (after the walk) */
    apr_int64_t dict_after;         /* last dictionary id swept */
    apr_int64_t erased;             /* dictionary rows the pass deleted so far */
    apr_int64_t truncate_since;     /* SQLite: when the first try at emptying the WAL at
                                     * the pass's end failed (qrt_clock_now); 0 before */
    apr_int64_t truncate_next;      /* not tried again before then */
    int waiting;                    /* the last step only waited to try again: a caller
                                     * that steps in a loop sleeps a little */
    int truncate_failed;            /* the pass ended without emptying the WAL */
} qrt_purge_cursor_t;

/* SQLite: emptying the WAL is tried every QRT_PURGE_RETRY_MS for QRT_PURGE_TRUNCATE_S
 * seconds. A try fails at once while another connection checkpoints (each child's WAL
 * thread copies every 100 ms, with fsyncs) and after a short wait while a reader holds
 * the WAL; tries back to back would all meet the same checkpoint. */
#define QRT_PURGE_RETRY_MS   100
#define QRT_PURGE_TRUNCATE_S 30

/* The retention's edge at now (seconds): visits before it are purged and listed
 * nowhere. Moves by whole minutes, so a listing's entity tag stays put within one. */
apr_int64_t qrt_purge_edge(apr_int64_t now, int days);

/* When passes run (kept by the server in shared memory, under its writers' mutex):
 * a pass starts at most every QRT_PURGE_EVERY seconds and covers the visits that
 * reached the edge since the last one; every QRT_PURGE_FULL seconds (and at start,
 * or when the retention changes) a pass covers every visit, which also catches
 * visits imported with old times since. */
#define QRT_PURGE_EVERY 600
#define QRT_PURGE_FULL  86400
typedef struct {
    qrt_purge_cursor_t c;
    int active, full, days;
    apr_int64_t next_due, last_before, last_full;
} qrt_purge_state_t;

/* 1 when a step of a pass is to run now (a pass due is started); 0 when not.
 * days 0 = no retention: nothing runs. */
int qrt_purge_due(qrt_purge_state_t *s, apr_int64_t now, int days);
/* The pass ended: ok 1 after its last step, 0 after a failed one (tried again
 * a minute later). */
void qrt_purge_finish(qrt_purge_state_t *s, apr_int64_t now, int ok);

/* A new pass over [lo, before). */
void qrt_purge_cursor_init(qrt_purge_cursor_t *c, apr_int64_t lo, apr_int64_t before);

/* One step of the pass: *purged gets the visit rows it erased, *done 1 when the pass
 * has walked every tracker and swept the dictionaries (c->erased: the dictionary rows
 * deleted). Each statement of the walk commits on its own, each sweep step is one
 * transaction: not to be called inside one. */
apr_status_t qrt_store_purge_step(qrt_db_t *db, apr_pool_t *p, qrt_purge_cursor_t *c,
                                  int batch, int *purged, int *done);

#endif
