/* qrt_import: the lines of `qrtrack-admin visits import`, read into batches of
 * visits ahead of the writer (no httpd).
 *
 * A line is one JSON visit object (CONTRACT section 2's fields). qrt_import_line
 * reads one: the common line in one pass (qrt_jsonl), any other through jansson,
 * with the same members either way; it checks each field's type and bounds and
 * computes the visitor id. Whether the tracker exists is the writer's question:
 * it needs the database.
 *
 * The reader runs in a thread of its own, so that reading and parsing the next
 * batch overlaps the writer's transaction of the one before (on two CPUs the
 * parsing leaves the commit path).
 * It fills two batches in turn, each with its own pool: the writer holds one
 * while the reader fills the other. Memory stays at two batches whatever the
 * file's length.
 *
 * A by-time reader (a regular file) reads each run of up to `run` visits twice:
 * first every line of the run is checked (by two threads) and only its time, offset
 * and length kept (24 bytes a visit), then the run's visits come out in batches in
 * time order, each line read again at its offset. Visits stored in time order find
 * their visitor's previous visit already stored, so the aggregates extend each
 * visitor's chain instead of splitting it (the writer's cost of shuffled input). */
#ifndef QRT_IMPORT_H
#define QRT_IMPORT_H

#include <stdio.h>
#include <apr_pools.h>
#include "qrt_store.h"
#include "qrt_token.h"

/* Reads line (len bytes; the reader may cut it in place) into v, its strings in p.
 * 1: a visit; 0: a blank line (nothing in v); -1: not a visit, *why says what
 * ("not a JSON object", "bad tracker_id", "a NUL byte", ...). As a scan has them:
 * the ip anonymised (qrt_ip_anonymize, QRTrackAnonymizeIP's default; the visitor id
 * computed from it), the device one of the five, visit_start from 1970-01-01T00:00:00Z
 * to 9999-12-31T23:59:59Z; an optional destination (schema 25) an http or https URL. */
int qrt_import_line(apr_pool_t *p, char *line, apr_size_t len,
                    const qrt_visitor_key_t *key, qrt_visit_t *v, const char **why);

/* A batch: n visits, each with the number of its line; error set on the batch after
 * which the input stops at a line that is not a visit (error_line, what). A by-time
 * reader's first batch of each run also lists the run's ntrackers tracker ids, each
 * with the first line that names it, for the writer to check before it writes any of
 * the run (NULL and 0 on other batches). */
typedef struct {
    qrt_visit_t *v;
    long *line;
    int n;
    const char *error;
    long error_line;
    apr_int64_t *trackers;
    long *tracker_line;
    int ntrackers;
} qrt_import_batch_t;

typedef struct qrt_import_reader qrt_import_reader_t;

/* Starts reading f in a thread, in batches of at most size visits; with bytes, a
 * batch also ends with the line that brings its lines' text to bytes or more (what a
 * batch holds then stays near bytes whatever its lines' length). The reader lives in
 * a subpool of p. NULL when the thread cannot start. */
qrt_import_reader_t *qrt_import_start(apr_pool_t *p, FILE *f, const qrt_visitor_key_t *key,
                                      int size, apr_size_t bytes);
/* Visits of a by-time reader's run at most in qrtrack-admin (96 MB of offsets). */
#define QRT_IMPORT_RUN 4000000

/* The same, by time: f (a regular file, read from where it stands) is read in runs of
 * up to run visits. A run's lines are all checked before any of its visits is handed
 * out: a bad line makes the run's first batch one of no visits, with the error (the
 * runs before it handed out whole). Then its visits come in batches in the order of
 * their visit_start, equal times in the order of their lines. A line found changed at
 * its second reading ends the input there as a bad line; a file cut shorter, as a read
 * error. NULL when f is not a regular file or the thread cannot start. */
qrt_import_reader_t *qrt_import_start_by_time(apr_pool_t *p, FILE *f,
                                              const qrt_visitor_key_t *key, int size,
                                              apr_size_t bytes, long run);
/* The next batch, once read (the batch before is handed back to the reader: it
 * must no longer be used); NULL after the last one, or after a read error
 * (qrt_import_read_error). A batch with error set is the last. */
const qrt_import_batch_t *qrt_import_next(qrt_import_reader_t *r);
/* The input's read error (errno), 0 when it ended normally. */
int qrt_import_read_error(const qrt_import_reader_t *r);
/* Stops the reader (at any point: the writer may give up early) and waits for its
 * thread. */
void qrt_import_stop(qrt_import_reader_t *r);

#endif
