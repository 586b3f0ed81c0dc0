/* qrt_store_compact: `qrtrack-admin compact`, the room that the tables growing with the
 * visits leave in their pages given back.
 *
 * PostgreSQL: the B-tree indexes of visit_rows and of the report aggregates are built again,
 * concurrently (reads and writes, scans' commits among them, go on). A tracker's visits, a
 * visitor's and a day's links are added inside their indexes, behind other trackers' and
 * visitors'; a full page there splits in two halves, which stay half to two thirds full,
 * so that an index grows to about twice its packed size. A new build packs them (at
 * PostgreSQL's fill factor of 90 %). An index left by an interrupted run (invalid, yet
 * written by every insert) is dropped first.
 * SQLite has none while servers run: VACUUM would write the file again, every table and
 * index packed, but it holds the write lock while it copies (scans waiting past
 * QRTrackScanWait get 503), and it changes the schema's cookie, so that every statement
 * the servers prepared fails once. With every server stopped, `sqlite3 FILE VACUUM` does
 * it.
 *
 * Tested through qrtrack-admin in test/api/test_compact.py (both backends). */
#ifndef QRT_STORE_COMPACT_H
#define QRT_STORE_COMPACT_H

#include "qrt_store.h"

/* Told before (done 0) and after (done 1, with its seconds) each step of the compaction;
 * what: the step, for people. */
typedef void qrt_store_compact_fn(void *ctx, const char *what, int done, double seconds);

/* The database's size in bytes, in *bytes. */
apr_status_t qrt_store_db_bytes(qrt_db_t *db, apr_pool_t *p, apr_int64_t *bytes);

/* Runs the compaction (qrt_dialect_t.compact) on db, outside any transaction, each step
 * told to each (may be NULL). APR_SUCCESS; APR_ENOTIMPL where the database has none
 * (SQLite); or the first step's error (db->error says it; the steps before it stay
 * done). */
apr_status_t qrt_store_compact(qrt_db_t *db, apr_pool_t *p, qrt_store_compact_fn *each,
                               void *ctx);

/* The same for the tables listed (NULL-terminated; the step that drops an interrupted
 * run's indexes, and takes the compaction's lock, runs first in any case): after a
 * rebuild of the report aggregates, whose link and gap rows are written a share of the
 * visitors at a time, each share's spread over the whole index. */
apr_status_t qrt_store_compact_tables(qrt_db_t *db, apr_pool_t *p,
                                      const char *const *tables,
                                      qrt_store_compact_fn *each, void *ctx);

#endif
