/* qrt_store_visit: recording visits with their counters. */
#include <stdlib.h>
#include <string.h>
#include <apr_hash.h>
#include <apr_strings.h>
#include "qrt_store.h"

const qrt_stmt_t qrt_store_visit_stmts[] = {
    /* qrt_store_write_lock: SQLite never runs it */
    { "qrt_write_lock", "SELECT %lld" },
    { "qrt_visit_add",
      "INSERT INTO visits (tracker_id, visit_start, source, ip, country, city, browser, "
      "browser_version, os, device, referer, user_agent, bot, visitor) VALUES "
      "(%lld, %lld, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %d, %s) RETURNING id" },
    { "qrt_visit_add_noid",
      "INSERT INTO visits (tracker_id, visit_start, source, ip, country, city, browser, "
      "browser_version, os, device, referer, user_agent, bot, visitor) VALUES "
      "(%lld, %lld, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %d, %s)" },
    { "qrt_visitor_add",
      "INSERT INTO tracker_visitors (tracker_id, visitor, first_visit) VALUES "
      "(%lld, %s, %lld) ON CONFLICT (tracker_id, visitor) DO NOTHING" },
    { "qrt_tracker_counters",
      "UPDATE trackers SET total_scans = total_scans + %lld, "
      "total_clicks = total_clicks + %lld, total_bots = total_bots + %lld, "
      "unique_visitors = unique_visitors + %lld, "
      "last_visit = CASE WHEN %lld > COALESCE(last_visit, 0) THEN %lld "
      "ELSE last_visit END WHERE id = %lld" },
    { NULL, NULL }
};

/* PostgreSQL's own forms (qrt_store_each_statement). */
const qrt_stmt_t qrt_store_visit_pgsql[] = {
    { "qrt_write_lock", "SELECT pg_advisory_xact_lock(%lld)" },
    { NULL, NULL }
};

/* What a batch adds to one tracker's counters. */
typedef struct {
    apr_int64_t tracker_id;
    apr_int64_t scans, clicks, bots, uniques, last;
} visit_counters;

static int visit_counters_cmp(const void *a, const void *b)
{
    apr_int64_t x = ((const visit_counters *)a)->tracker_id;
    apr_int64_t y = ((const visit_counters *)b)->tracker_id;

    return x < y ? -1 : x > y;
}

apr_status_t qrt_store_visits_record(qrt_db_t *db, apr_pool_t *p,
                                     const qrt_visit_t *in, int n)
{
    visit_counters *acc = apr_pcalloc(p, (n > 0 ? n : 1) * sizeof(*acc));
    int *is_new = apr_pcalloc(p, (n > 0 ? n : 1) * sizeof(int));
    qrt_visit_t *v = apr_pmemdup(p, in, (n > 0 ? n : 1) * sizeof(*v));
    int i, j, nacc = 0;
    int sqlite = !strcmp(apr_dbd_name(db->driver), "sqlite3");
    apr_hash_t *seen = apr_hash_make(p);
    apr_status_t rv = qrt_store_write_lock(db, p);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    for (i = 0; i < n; i++) {
        qrt_visit_t *x = &v[i];
        const void *args[] = { &x->tracker_id, &x->visit_start, x->source, x->ip,
                               x->country, x->city, x->browser, x->browser_version,
                               x->os, x->device, x->referer, x->user_agent, &x->bot,
                               x->visitor };
        visit_counters *c = NULL;
        apr_dbd_results_t *res;
        apr_dbd_row_t *row = NULL;

        x->id = 0;
        if (sqlite) {
            /* One writer at a time (SQLite's write lock): the batch's ids follow
             * one another, and the aggregates read them in one query. */
            rv = qrt_db_exec(db, p, "qrt_visit_add_noid", NULL, args);
            if (rv != APR_SUCCESS) {
                return rv;
            }
        }
        else {
            rv = qrt_db_select(db, p, "qrt_visit_add", &res, args);
            if (rv != APR_SUCCESS) {
                return rv;
            }
            while (qrt_db_row(db, p, res, &row) == 0) {
                x->id = qrt_db_int(db, row, 0, 0);
            }
            if (x->id <= 0) {
                db->error = "INSERT INTO visits returned no id";
                return APR_EGENERAL;
            }
        }
        if (!x->bot) {
            const void *vargs[] = { &x->tracker_id, x->visitor, &x->visit_start };
            const char *key = apr_psprintf(p, "%" APR_INT64_T_FMT "/%s", x->tracker_id,
                                           x->visitor);
            int added = 0;

            /* A visitor back on the same tracker within the batch is known. */
            if (!apr_hash_get(seen, key, APR_HASH_KEY_STRING)) {
                rv = qrt_db_exec(db, p, "qrt_visitor_add", &added, vargs);
                if (rv != APR_SUCCESS) {
                    return rv;
                }
                apr_hash_set(seen, key, APR_HASH_KEY_STRING, key);
            }
            is_new[i] = added > 0;
        }
        for (j = 0; j < nacc; j++) {
            if (acc[j].tracker_id == x->tracker_id) {
                c = &acc[j];
                break;
            }
        }
        if (!c) {
            c = &acc[nacc++];
            c->tracker_id = x->tracker_id;
        }
        if (x->bot) {
            c->bots++;
            continue;
        }
        if (!strcmp(x->source, "click")) {
            c->clicks++;
        }
        else {
            c->scans++;
        }
        c->uniques += is_new[i];
        if (x->visit_start > c->last) {
            c->last = x->visit_start;
        }
    }
    /* Rows in one order (by tracker id) whoever writes them. */
    qsort(acc, nacc, sizeof(*acc), visit_counters_cmp);
    for (j = 0; j < nacc; j++) {
        visit_counters *c = &acc[j];
        const void *args[] = { &c->scans, &c->clicks, &c->bots, &c->uniques,
                               &c->last, &c->last, &c->tracker_id };

        rv = qrt_db_exec(db, p, "qrt_tracker_counters", NULL, args);
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    return qrt_store_agg_record(db, p, v, is_new, n);
}
