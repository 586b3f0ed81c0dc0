/* qrt_store_purge: erasing what old visits say about their visitors
 * (QRTrackVisitRetention, qrtrack-admin visits purge). See qrt_store_purge.h. */
#include <string.h>
#include <sqlite3.h>
#include "qrt_clock.h"
#include "qrt_store_purge.h"

apr_int64_t qrt_purge_edge(apr_int64_t now, int days)
{
    return now - now % 60 - (apr_int64_t)days * 86400;
}

int qrt_purge_due(qrt_purge_state_t *s, apr_int64_t now, int days)
{
    if (days != s->days) {
        /* Started, or the retention changed at a graceful restart: all anew. */
        memset(s, 0, sizeof(*s));
        s->days = days;
    }
    if (days <= 0) {
        return 0;
    }
    if (!s->active) {
        apr_int64_t before = qrt_purge_edge(now, days);

        if (now < s->next_due) {
            return 0;
        }
        s->full = !s->last_full || now - s->last_full >= QRT_PURGE_FULL;
        qrt_purge_cursor_init(&s->c, s->full ? QRT_PURGE_TMIN : s->last_before, before);
        s->active = 1;
    }
    return 1;
}

void qrt_purge_finish(qrt_purge_state_t *s, apr_int64_t now, int ok)
{
    s->active = 0;
    if (ok) {
        s->last_before = s->c.before;
        if (s->full) {
            s->last_full = now;
        }
        s->next_due = now + QRT_PURGE_EVERY;
    }
    else {
        s->next_due = now + 60;
    }
}

void qrt_purge_cursor_init(qrt_purge_cursor_t *c, apr_int64_t lo, apr_int64_t before)
{
    c->lo = lo;
    c->before = before;
    c->tracker = 0;
    c->t = c->id = 0;
    c->started = 0;
    c->dict = 0;
    c->dict_after = 0;
    c->erased = 0;
    c->truncate_since = c->truncate_next = 0;
    c->waiting = c->truncate_failed = 0;
}

/* The dictionaries swept after the walk, in order (c->dict - 1). */
static const struct {
    const char *end, *del;
} purge_dicts[] = {
    { SQL_purge_ua_end, SQL_purge_ua_del },
    { SQL_purge_ref_end, SQL_purge_ref_del },
    { SQL_purge_ip_end, SQL_purge_ip_del },
    { SQL_purge_dest_end, SQL_purge_dest_del },
};
#define PURGE_DICTS ((int)(sizeof(purge_dicts) / sizeof(purge_dicts[0])))

static apr_status_t purge_next_tracker(qrt_db_t *db, apr_pool_t *p, qrt_purge_cursor_t *c)
{
    const void *args[] = { &c->tracker };
    apr_int64_t next = 0;
    apr_status_t rv = qrt_db_select_int(db, p, SQL_purge_next_tracker, args, &next);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (next <= 0) {
        /* Every tracker walked: the dictionaries next. */
        c->dict = 1;
        c->dict_after = 0;
        return APR_SUCCESS;
    }
    c->tracker = next;
    c->started = 0;
    return APR_SUCCESS;
}

/* SQLite: what the connection deletes is overwritten (rows, index entries, freed
 * pages), not left in free space. */
static void purge_secure_delete(qrt_db_t *db)
{
    if (qrt_dialect_embedded(db->driver)) {
        sqlite3_exec(apr_dbd_native_handle(db->driver, db->handle),
                     "PRAGMA secure_delete = ON", NULL, NULL, NULL);
    }
}

/* SQLite, after a pass that deleted rows: the WAL, which still holds the pages as
 * they were before, copied back and emptied; 0 when done. A reader that holds the WAL
 * makes it give up after a short wait (the writers wait meanwhile), another
 * connection's checkpoint at once: a later step tries again (QRT_PURGE_RETRY_MS). */
#define PURGE_TRUNCATE_WAIT_MS 50
static int purge_truncate_wal(qrt_db_t *db)
{
    sqlite3 *h;
    sqlite3_stmt *st = NULL;
    int ms = 0, rc;

    if (!qrt_dialect_embedded(db->driver)) {
        return 0;
    }
    h = apr_dbd_native_handle(db->driver, db->handle);
    /* (the connection's own wait, set again after) */
    if (sqlite3_prepare_v2(h, "PRAGMA busy_timeout", -1, &st, NULL) == SQLITE_OK
        && sqlite3_step(st) == SQLITE_ROW) {
        ms = sqlite3_column_int(st, 0);
    }
    sqlite3_finalize(st);
    sqlite3_busy_timeout(h, PURGE_TRUNCATE_WAIT_MS);
    rc = sqlite3_wal_checkpoint_v2(h, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    sqlite3_busy_timeout(h, ms);
    return rc == SQLITE_OK ? 0 : -1;
}

/* The pass's last step(s): the WAL emptied when the pass deleted dictionary rows.
 * Until a try succeeds or QRT_PURGE_TRUNCATE_S have passed since the first failed,
 * the step says it is waiting (c->waiting) and tries again at most every
 * QRT_PURGE_RETRY_MS. */
static apr_status_t purge_truncate_step(qrt_db_t *db, qrt_purge_cursor_t *c, int *done)
{
    apr_time_t now;

    if (c->erased <= 0) {
        *done = 1;
        return APR_SUCCESS;
    }
    now = qrt_clock_now();
    if (c->truncate_next && now < c->truncate_next) {
        c->waiting = 1;
        return APR_SUCCESS;
    }
    if (purge_truncate_wal(db) == 0) {
        *done = 1;
        return APR_SUCCESS;
    }
    if (!c->truncate_since) {
        c->truncate_since = now;
    }
    if (now - c->truncate_since >= apr_time_from_sec(QRT_PURGE_TRUNCATE_S)) {
        /* Given up: the strings leave the WAL at a later pass's or checkpoint's end. */
        c->truncate_failed = 1;
        *done = 1;
        return APR_SUCCESS;
    }
    c->truncate_next = now + apr_time_from_msec(QRT_PURGE_RETRY_MS);
    c->waiting = 1;
    return APR_SUCCESS;
}

/* Deletes the rows of dictionary d with after < id <= end that no visit refers to,
 * in one transaction under the writers' lock; raises the generation when it did. */
static apr_status_t purge_sweep_range(qrt_db_t *db, apr_pool_t *p, int d,
                                      apr_int64_t after, apr_int64_t end, int *deleted)
{
    const void *args[] = { &after, &end }, *none[] = { NULL };
    apr_dbd_transaction_t *tx;
    apr_status_t rv;

    *deleted = 0;
    purge_secure_delete(db);
    if ((rv = qrt_db_begin(db, p, &tx)) != APR_SUCCESS) {
        return rv;
    }
    rv = qrt_store_write_lock(db, p);
    if (rv == APR_SUCCESS) {
        /* SQLite: the scan writer's references not added to refs yet (schema 62) */
        rv = qrt_store_refs_settle(db, p);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_db_exec(db, p, purge_dicts[d].del, deleted, args);
    }
    if (rv == APR_SUCCESS && *deleted > 0) {
        rv = qrt_db_exec(db, p, SQL_purge_gen, NULL, none);
    }
    rv = qrt_db_end_with(db, p, tx, rv);
    if (rv != APR_SUCCESS) {
        *deleted = 0;
    }
    return rv;
}

/* A step of the sweep: the next `batch` ids of the dictionary at hand, or on to the
 * next dictionary when none is left (*done after the last). */
static apr_status_t purge_sweep_step(qrt_db_t *db, apr_pool_t *p, qrt_purge_cursor_t *c,
                                     int batch, int *done)
{
    apr_int64_t n = batch > 0 ? batch : 1, end = 0;
    const void *args[] = { &c->dict_after, &n };
    int d = c->dict - 1, deleted = 0;
    apr_status_t rv;

    if ((rv = qrt_db_select_int(db, p, purge_dicts[d].end, args, &end)) != APR_SUCCESS) {
        return rv;
    }
    if (end <= c->dict_after) {
        if (c->dict < PURGE_DICTS) {
            c->dict++;
            c->dict_after = 0;
            return APR_SUCCESS;
        }
        return purge_truncate_step(db, c, done);
    }
    if ((rv = purge_sweep_range(db, p, d, c->dict_after, end, &deleted)) != APR_SUCCESS) {
        return rv;
    }
    c->erased += deleted;
    c->dict_after = end;
    return APR_SUCCESS;
}

apr_status_t qrt_store_purge_step(qrt_db_t *db, apr_pool_t *p, qrt_purge_cursor_t *c,
                                  int batch, int *purged, int *done)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    apr_int64_t t, id, skip = batch > 1 ? batch - 1 : 0, et, eid;
    int found = 0, nrows = 0;
    apr_status_t rv;

    *purged = 0;
    *done = 0;
    c->waiting = 0;
    if (c->lo >= c->before) {
        *done = 1;
        return APR_SUCCESS;
    }
    if (c->dict) {
        return purge_sweep_step(db, p, c, batch, done);
    }
    if (c->tracker == 0 || !c->started) {
        if (c->tracker == 0 && (rv = purge_next_tracker(db, p, c)) != APR_SUCCESS) {
            return rv;
        }
        if (c->dict) {
            return APR_SUCCESS;
        }
        c->started = 1;
        c->t = c->lo;
        c->id = -1;                 /* every id at visit_start == lo */
    }
    t = c->t;
    id = c->id;
    {
        const void *args[] = { &c->tracker, &t, &c->before, &t, &id, &skip };

        if ((rv = qrt_db_select(db, p, SQL_purge_step_end, &res, args)) != APR_SUCCESS) {
            return rv;
        }
        while (qrt_db_row(db, p, res, &row) == 0) {
            et = qrt_db_int(db, row, 0, 0);
            eid = qrt_db_int(db, row, 1, 0);
            found = 1;
        }
    }
    if (!found) {
        /* Fewer than batch rows left: the rest of the tracker's range. */
        et = c->before;
        eid = 0;
    }
    {
        const void *args[] = { &c->tracker, &t, &c->before, &t, &id, &et, &et, &eid };

        if ((rv = qrt_db_exec(db, p, SQL_purge_stubs, NULL, args)) != APR_SUCCESS
            || (rv = qrt_db_exec(db, p, SQL_purge_erase, &nrows, args)) != APR_SUCCESS) {
            return rv;
        }
    }
    *purged = nrows;
    if (found) {
        c->t = et;
        c->id = eid;
    }
    else {
        /* This tracker is done: the next one at the next step. */
        rv = purge_next_tracker(db, p, c);
    }
    return rv;
}
