/* qrt_store_tracker: trackers and their tags. */
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>
#include <apr_time.h>
#include "qrt_store.h"
#include "qrt_store_agg_write.h"
#include "qrt_store_bulk.h"
#include "qrt_store_webhook.h"
#include "qrt_history.h"
#include "qrt_valid.h"

static apr_int64_t tracker_now(void)
{
    return apr_time_sec(apr_time_now());
}

/* The routing columns rules, valid_from, valid_until, max_scans, expired_url from
 * column col on (the password hash is read only by the scan path). */
static void tracker_route_read(qrt_db_t *db, apr_pool_t *p, apr_dbd_row_t *row, int col,
                               qrt_route_src_t *r)
{
    memset(r, 0, sizeof(*r));
    r->rules = apr_pstrdup(p, qrt_db_str(db, row, col));
    r->has_from = qrt_db_str(db, row, col + 1) != NULL;
    r->valid_from = qrt_db_int(db, row, col + 1, 0);
    r->has_until = qrt_db_str(db, row, col + 2) != NULL;
    r->valid_until = qrt_db_int(db, row, col + 2, 0);
    r->max_scans = qrt_db_int(db, row, col + 3, 0);
    r->expired_url = apr_pstrdup(p, qrt_db_str(db, row, col + 4));
}

static void tracker_read(qrt_db_t *db, apr_pool_t *p, apr_dbd_row_t *row,
                         qrt_tracker_t *t)
{
    t->id = qrt_db_int(db, row, 0, 0);
    t->account_id = qrt_db_int(db, row, 1, 0);
    t->code = apr_pstrdup(p, qrt_db_str(db, row, 2));
    t->name = apr_pstrdup(p, qrt_db_str(db, row, 3));
    t->type = apr_pstrdup(p, qrt_db_str(db, row, 4));
    t->redirect_url = apr_pstrdup(p, qrt_db_str(db, row, 5));
    t->created_at = qrt_db_int(db, row, 6, 0);
    t->updated_at = qrt_db_int(db, row, 7, 0);
    t->total_scans = qrt_db_int(db, row, 8, 0);
    t->total_clicks = qrt_db_int(db, row, 9, 0);
    t->total_bots = qrt_db_int(db, row, 10, 0);
    t->unique_visitors = qrt_db_int(db, row, 11, 0);
    t->last_visit = qrt_db_int(db, row, 12, 0);
    t->tags = apr_array_make(p, 4, sizeof(const char *));
    tracker_route_read(db, p, row, 13, &t->route);
    t->password_protected = qrt_db_int(db, row, 18, 0) != 0;
    t->redirected = qrt_db_int(db, row, 19, 0);
    t->route_set = 0;
    t->password_keep = 0;
    t->sent = 0;
    t->changed_by = NULL;
}

/* The report aggregates follow a tracker's new tags or its deletion. Too big a
 * tracker is left to "qrtrack-admin aggregates rebuild" (reports stay exact). */
static apr_status_t tracker_aggregates_follow(qrt_db_t *db, apr_pool_t *p, apr_int64_t id)
{
    apr_status_t rv = qrt_store_agg_write_tracker_changed(db, p, id);

    return rv == APR_EAGAIN ? APR_SUCCESS : rv;
}

static apr_status_t tracker_tags_save(qrt_db_t *db, apr_pool_t *p, qrt_tracker_t *t)
{
    int i;

    for (i = 0; t->tags && i < t->tags->nelts; i++) {
        const char *tag = APR_ARRAY_IDX(t->tags, i, const char *), *dim, *value;
        const void *args[4];
        apr_status_t rv;

        qrt_tag_split(p, tag, &dim, &value);
        args[0] = &t->id;
        args[1] = tag;
        args[2] = dim;
        args[3] = value;
        rv = qrt_db_exec(db, p, SQL_tracker_tag_add, NULL, args);
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    return APR_SUCCESS;
}

/* Saves t's routing when the caller set it (route_set); a kept password stays. */
static apr_status_t tracker_route_save(qrt_db_t *db, apr_pool_t *p, qrt_tracker_t *t)
{
    const qrt_route_src_t *r = &t->route;
    const char *hash = r->password_hash;
    const void *args[7];

    if (!t->route_set) {
        return APR_SUCCESS;
    }
    if (t->password_keep) {
        const void *hargs[] = { &t->id };
        apr_dbd_results_t *res;
        apr_dbd_row_t *row = NULL;
        apr_status_t rv = qrt_db_select(db, p, SQL_tracker_password_hash, &res, hargs);

        if (rv != APR_SUCCESS) {
            return rv;
        }
        while (qrt_db_row(db, p, res, &row) == 0) {
            hash = apr_pstrdup(p, qrt_db_str(db, row, 0));
        }
    }
    args[0] = &t->id;
    args[1] = r->rules;
    args[2] = r->has_from ? &r->valid_from : NULL;
    args[3] = r->has_until ? &r->valid_until : NULL;
    args[4] = r->max_scans > 0 ? &r->max_scans : NULL;
    args[5] = r->expired_url;
    args[6] = hash;
    t->password_protected = hash != NULL;
    return qrt_db_exec(db, p, SQL_tracker_routing_put, NULL, args);
}

apr_status_t qrt_store_tracker_add(qrt_db_t *db, apr_pool_t *p, qrt_tracker_t *t)
{
    apr_dbd_transaction_t *tx;
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *check[] = { t->code };
    apr_status_t rv;
    int taken = 0;

    rv = qrt_db_select(db, p, SQL_tracker_code_taken, &res, check);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        taken = 1;
    }
    if (taken) {
        return APR_EEXIST;
    }
    t->created_at = t->updated_at = tracker_now();
    rv = qrt_db_begin(db, p, &tx);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    {
        const void *args[] = { &t->account_id, t->code, t->name, t->type,
                               t->redirect_url, &t->created_at, &t->updated_at };

        rv = qrt_db_select(db, p, SQL_tracker_add, &res, args);
    }
    if (rv == APR_SUCCESS) {
        rv = APR_EGENERAL;
        while (qrt_db_row(db, p, res, &row) == 0) {
            t->id = qrt_db_int(db, row, 0, 0);
            rv = APR_SUCCESS;
        }
    }
    if (rv == APR_SUCCESS) {
        rv = tracker_tags_save(db, p, t);
    }
    if (rv == APR_SUCCESS) {
        rv = tracker_route_save(db, p, t);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_store_webhook_tracker_event(db, p, QRT_WEBHOOK_TRACKER_CREATED, t);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_store_history_add(db, p, t->id, t->account_id, t->changed_by,
                                   QRT_HISTORY_CREATED,
                                   qrt_history_changes(p, NULL, t, t->route_set
                                                       && !t->password_keep));
    }
    return qrt_db_end_with(db, p, tx, rv);
}

apr_status_t qrt_store_tracker_head(qrt_db_t *db, apr_pool_t *p, apr_int64_t id,
                                    qrt_tracker_t *out)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *args[] = { &id };
    apr_status_t rv = qrt_db_select(db, p, SQL_tracker_get, &res, args);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = APR_NOTFOUND;
    while (qrt_db_row(db, p, res, &row) == 0) {
        tracker_read(db, p, row, out);
        rv = APR_SUCCESS;
    }
    return rv;
}

apr_status_t qrt_store_tracker_get(qrt_db_t *db, apr_pool_t *p, apr_int64_t id,
                                   qrt_tracker_t *out)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *args[] = { &id };
    apr_status_t rv = qrt_store_tracker_head(db, p, id, out);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = qrt_db_select(db, p, SQL_tracker_tags, &res, args);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        APR_ARRAY_PUSH(out->tags, const char *) = apr_pstrdup(p, qrt_db_str(db, row, 0));
    }
    return APR_SUCCESS;
}

apr_status_t qrt_store_tracker_list(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                    apr_int64_t offset, apr_int64_t limit,
                                    apr_array_header_t **out, apr_int64_t *total)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *cargs[] = { &account_id };
    const void *args[] = { &account_id, &limit, &offset };
    apr_status_t rv;
    int i = 0;

    *out = apr_array_make(p, (int)(limit < 64 ? limit : 64), sizeof(qrt_tracker_t));
    *total = 0;
    rv = qrt_db_select(db, p, SQL_tracker_count, &res, cargs);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        *total = qrt_db_int(db, row, 0, 0);
    }
    rv = qrt_db_select(db, p, SQL_tracker_page, &res, args);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        tracker_read(db, p, row, apr_array_push(*out));
    }
    rv = qrt_db_select(db, p, SQL_tracker_page_tags, &res, args);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    /* Both result sets are ordered by tracker id: merge them. */
    while (qrt_db_row(db, p, res, &row) == 0) {
        apr_int64_t id = qrt_db_int(db, row, 0, 0);

        while (i < (*out)->nelts && APR_ARRAY_IDX(*out, i, qrt_tracker_t).id < id) {
            i++;
        }
        if (i < (*out)->nelts && APR_ARRAY_IDX(*out, i, qrt_tracker_t).id == id) {
            APR_ARRAY_PUSH(APR_ARRAY_IDX(*out, i, qrt_tracker_t).tags, const char *) =
                apr_pstrdup(p, qrt_db_str(db, row, 1));
        }
    }
    return APR_SUCCESS;
}

/* The fields patch->sent names, from patch onto t (the tracker as the transaction read
 * it); the rest of t stays as read. */
static void tracker_patch_onto(qrt_tracker_t *t, const qrt_tracker_t *patch)
{
    unsigned sent = patch->sent;

    if (sent & QRT_TRACKER_SENT_NAME) {
        t->name = patch->name;
    }
    if (sent & QRT_TRACKER_SENT_REDIRECT_URL) {
        t->redirect_url = patch->redirect_url;
    }
    if (sent & QRT_TRACKER_SENT_TAGS) {
        t->tags = patch->tags;
    }
    if (sent & QRT_TRACKER_SENT_RULES) {
        t->route.rules = patch->route.rules;
    }
    if (sent & QRT_TRACKER_SENT_VALID_FROM) {
        t->route.has_from = patch->route.has_from;
        t->route.valid_from = patch->route.valid_from;
    }
    if (sent & QRT_TRACKER_SENT_VALID_UNTIL) {
        t->route.has_until = patch->route.has_until;
        t->route.valid_until = patch->route.valid_until;
    }
    if (sent & QRT_TRACKER_SENT_MAX_SCANS) {
        t->route.max_scans = patch->route.max_scans;
    }
    if (sent & QRT_TRACKER_SENT_EXPIRED_URL) {
        t->route.expired_url = patch->route.expired_url;
    }
    if (sent & QRT_TRACKER_SENT_PASSWORD) {
        t->route.password_hash = patch->route.password_hash;
    }
    t->route_set = (sent & QRT_TRACKER_SENT_ROUTE) != 0;
    t->password_keep = !(sent & QRT_TRACKER_SENT_PASSWORD);
    t->sent = sent;
    t->event_json = patch->event_json;
    t->event_ctx = patch->event_ctx;
    t->changed_by = patch->changed_by;
}

/* PostgreSQL: the tracker's row of tracker_routing, locked (made when missing: the
 * change writes one anyway) before the write lock by a change that writes it. The scan
 * writer locks it first too (tracker_cap_take, before the visits take the write lock):
 * taken after the write lock, a PATCH and a capped scan's commit each held the lock the
 * other waited for (40P01). SQLite's write transaction is alone. */
static apr_status_t tracker_routing_lock(qrt_db_t *db, apr_pool_t *p, apr_int64_t id)
{
    const void *args[] = { &id };

    if (!qrt_dialect_remote(db->driver)) {
        return APR_SUCCESS;
    }
    return qrt_db_exec(db, p, SQL_tracker_routing_lock, NULL, args);
}

/* qrt_store_tracker_update (t whole) and qrt_store_tracker_patch (t's sent fields laid
 * onto the row read here, under the lock). */
static apr_status_t tracker_update(qrt_db_t *db, apr_pool_t *p, qrt_tracker_t *t, int patch)
{
    apr_dbd_transaction_t *tx;
    const void *args[] = { t->name, t->redirect_url, &t->updated_at, &t->id };
    const void *targs[] = { &t->id };
    qrt_tracker_t before;
    apr_status_t rv;
    int n = 0;

    rv = qrt_db_begin(db, p, &tx);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (t->route_set) {
        rv = tracker_routing_lock(db, p, t->id);
    }
    /* The aggregates change too: after the visits' writers, never across them. Every
     * change of a tracker takes this lock (PostgreSQL; SQLite's write transaction is
     * alone): what is read below stays as read until the commit. */
    if (rv == APR_SUCCESS) {
        rv = qrt_store_write_lock(db, p);
    }
    if (rv == APR_SUCCESS) {
        /* The history compares with what this transaction replaces. */
        rv = qrt_store_tracker_get(db, p, t->id, &before);
    }
    if (rv == APR_SUCCESS && patch) {
        qrt_tracker_t merged = before;
        const qrt_route_src_t *r = &merged.route;

        tracker_patch_onto(&merged, t);
        if (merged.account_id != t->account_id) {
            rv = APR_NOTFOUND;
        }
        else if (r->has_from && r->has_until && r->valid_from > r->valid_until) {
            db->error = "valid_until before valid_from";
            rv = APR_EINVAL;
        }
        else {
            *t = merged;
            args[0] = t->name;
            args[1] = t->redirect_url;
        }
    }
    t->updated_at = tracker_now();
    if (rv == APR_SUCCESS) {
        rv = qrt_db_exec(db, p, SQL_tracker_update, &n, args);
    }
    if (rv == APR_SUCCESS && n == 0) {
        rv = APR_NOTFOUND;
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_db_exec(db, p, SQL_tracker_tags_clear, NULL, targs);
    }
    if (rv == APR_SUCCESS) {
        rv = tracker_tags_save(db, p, t);
    }
    if (rv == APR_SUCCESS) {
        rv = tracker_route_save(db, p, t);
    }
    if (rv == APR_SUCCESS) {
        rv = tracker_aggregates_follow(db, p, t->id);
    }
    if (rv == APR_SUCCESS) {
        const char *changes = qrt_history_changes(p, &before, t, t->route_set
                                                  && !t->password_keep);

        /* A PATCH that changes nothing leaves no row, and announces nothing. */
        if (strcmp(changes, "{}") != 0) {
            const char *expired = qrt_store_tracker_patch_expiry(&before, t, t->updated_at);

            rv = qrt_store_webhook_tracker_event(db, p, QRT_WEBHOOK_TRACKER_UPDATED, t);
            if (rv == APR_SUCCESS && expired) {
                rv = qrt_store_webhook_tracker_expired(db, p, t, expired, t->updated_at);
            }
            if (rv == APR_SUCCESS) {
                rv = qrt_store_history_add(db, p, t->id, before.account_id, t->changed_by,
                                           QRT_HISTORY_UPDATED, changes);
            }
        }
    }
    return qrt_db_end_with(db, p, tx, rv);
}

apr_status_t qrt_store_tracker_update(qrt_db_t *db, apr_pool_t *p, qrt_tracker_t *t)
{
    return tracker_update(db, p, t, 0);
}

apr_status_t qrt_store_tracker_patch(qrt_db_t *db, apr_pool_t *p, qrt_tracker_t *t)
{
    return tracker_update(db, p, t, 1);
}

apr_status_t qrt_store_tracker_delete(qrt_db_t *db, apr_pool_t *p, apr_int64_t id)
{
    qrt_tracker_t t;

    memset(&t, 0, sizeof(t));
    t.id = id;
    return qrt_store_tracker_delete_shown(db, p, &t);
}

apr_status_t qrt_store_tracker_delete_by(qrt_db_t *db, apr_pool_t *p, apr_int64_t id,
                                         const char *token_label)
{
    qrt_tracker_t t;

    memset(&t, 0, sizeof(t));
    t.id = id;
    t.changed_by = token_label;
    return qrt_store_tracker_delete_shown(db, p, &t);
}

apr_status_t qrt_store_tracker_delete_shown(qrt_db_t *db, apr_pool_t *p,
                                            const qrt_tracker_t *t)
{
    apr_int64_t id = t->id;
    apr_dbd_transaction_t *tx;
    apr_int64_t now = tracker_now(), account_id = 0;
    /* updated_at too: the nodes' snapshots of codes learn of deletions from it. */
    const void *args[] = { &now, &now, &id };
    const void *oargs[] = { &id };
    int n = 0;
    apr_status_t rv = qrt_db_begin(db, p, &tx);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = qrt_store_write_lock(db, p);
    if (rv == APR_SUCCESS) {
        rv = qrt_db_select_int(db, p, SQL_tracker_owner, oargs, &account_id);
    }
    if (rv == APR_SUCCESS) {
        /* (before the deletion: a tracker known by its id alone is read for the data) */
        rv = qrt_store_webhook_tracker_event(db, p, QRT_WEBHOOK_TRACKER_DELETED, t);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_db_exec(db, p, SQL_tracker_delete, &n, args);
    }
    if (rv == APR_SUCCESS && n == 0) {
        rv = APR_NOTFOUND;
    }
    if (rv == APR_SUCCESS) {
        rv = tracker_aggregates_follow(db, p, id);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_store_history_add(db, p, id, account_id, t->changed_by,
                                   QRT_HISTORY_DELETED, "{}");
    }
    return qrt_db_end_with(db, p, tx, rv);
}

apr_status_t qrt_store_tracker_by_code(qrt_db_t *db, apr_pool_t *p, const char *code,
                                       apr_int64_t *id, const char **redirect_url,
                                       qrt_route_src_t *route)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *args[] = { code };
    apr_status_t rv = qrt_db_select(db, p, SQL_tracker_by_code, &res, args);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = APR_NOTFOUND;
    while (qrt_db_row(db, p, res, &row) == 0) {
        *id = qrt_db_int(db, row, 0, 0);
        *redirect_url = apr_pstrdup(p, qrt_db_str(db, row, 1));
        tracker_route_read(db, p, row, 2, route);
        route->password_hash = apr_pstrdup(p, qrt_db_str(db, row, 7));
        rv = APR_SUCCESS;
    }
    return rv;
}

apr_status_t qrt_store_tracker_owned(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                     const apr_int64_t *ids, int n, int *owned)
{
    apr_array_header_t list;
    apr_int64_t count = 0;
    const void *args[2];
    apr_status_t rv;

    *owned = 0;
    if (n <= 0) {
        return APR_SUCCESS;
    }
    memset(&list, 0, sizeof(list));
    list.pool = p;
    list.elt_size = sizeof(apr_int64_t);
    list.nelts = list.nalloc = n;
    list.elts = (char *)(apr_uintptr_t)ids;
    args[0] = qrt_db_id_list(db, p, &list);
    args[1] = &account_id;
    rv = qrt_db_select_int(db, p, SQL_tracker_owned_count, args, &count);
    *owned = (int)count;
    return rv;
}

apr_status_t qrt_store_tracker_ids(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                   apr_array_header_t **out)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *args[] = { &account_id };
    apr_status_t rv = qrt_db_select(db, p, SQL_tracker_ids, &res, args);

    *out = apr_array_make(p, 16, sizeof(apr_int64_t));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        APR_ARRAY_PUSH(*out, apr_int64_t) = qrt_db_int(db, row, 0, 0);
    }
    return APR_SUCCESS;
}

apr_status_t qrt_store_trackers_version(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                        apr_int64_t *version)
{
    const void *args[] = { &account_id };

    *version = 0;                   /* (no row: no change since schema 18) */
    return qrt_db_select_int(db, p, SQL_trackers_version, args, version);
}

apr_status_t qrt_store_tracker_cap_take(qrt_db_t *db, apr_pool_t *p, apr_int64_t id,
                                        int count, int *ok)
{
    apr_int64_t n = count ? 1 : 0;
    const void *args[] = { &n, &id };
    int rows = 0;
    apr_status_t rv = qrt_db_exec(db, p, SQL_tracker_cap_take, &rows, args);

    *ok = rows > 0;
    return rv;
}

apr_status_t qrt_store_tracker_cap_open(qrt_db_t *db, apr_pool_t *p, apr_int64_t id,
                                        int *open)
{
    const void *args[] = { &id };
    apr_int64_t one = 0;
    apr_status_t rv = qrt_db_select_int(db, p, SQL_tracker_cap_open, args, &one);

    *open = one == 1;
    return rv;
}

/* Over the cap, a visit's two destinations are swapped (and swapped back by the next
 * attempt), so that either attempt's choice can be undone. */
static void visit_cap_outcome(qrt_visit_t *v, int outcome)
{
    if ((v->cap_outcome == QRT_VISIT_CAP_OVER) != (outcome == QRT_VISIT_CAP_OVER)) {
        const char *swap = v->destination;

        v->destination = v->over_destination;
        v->over_destination = swap;
    }
    v->cap_outcome = outcome;
}

/* Capped visits by tracker id, then as they came (qsort's order of equal keys is not
 * its input's, so the index breaks ties). */
typedef struct {
    apr_int64_t tracker_id;
    int i;
} visit_cap_key;

static int visit_cap_cmp(const void *a, const void *b)
{
    const visit_cap_key *x = a, *y = b;

    if (x->tracker_id != y->tracker_id) {
        return x->tracker_id < y->tracker_id ? -1 : 1;
    }
    return x->i < y->i ? -1 : x->i > y->i;
}

/* The caps' row locks are taken in tracker id order, whatever order the visits came in:
 * two writers (two nodes) whose batches cap the same trackers in opposite orders would
 * otherwise each wait for the other's row until PostgreSQL's deadlock check ended one.
 * Within a tracker the visits keep their order: the first to come takes the last scan. */
apr_status_t qrt_store_visits_cap(qrt_db_t *db, apr_pool_t *p, qrt_visit_t *visits, int n)
{
    visit_cap_key *keys = NULL;
    int i, m = 0;

    for (i = 0; i < n; i++) {
        if (visits[i].capped != QRT_VISIT_CAP_NONE) {
            if (!keys) {
                keys = apr_palloc(p, sizeof(*keys) * (apr_size_t)(n - i));
            }
            keys[m].tracker_id = visits[i].tracker_id;
            keys[m++].i = i;
        }
    }
    if (m > 1) {
        qsort(keys, (size_t)m, sizeof(*keys), visit_cap_cmp);
    }
    for (i = 0; i < m; i++) {
        qrt_visit_t *v = &visits[keys[i].i];
        apr_status_t rv;
        int ok = 1;

        rv = qrt_store_tracker_cap_take(db, p, v->tracker_id,
                                        v->capped == QRT_VISIT_CAP_COUNT, &ok);
        if (rv != APR_SUCCESS) {
            return rv;
        }
        visit_cap_outcome(v, ok ? QRT_VISIT_CAP_SENT : QRT_VISIT_CAP_OVER);
    }
    return APR_SUCCESS;
}

/* tracker_import_taken: marks each code that comes back in the hash ctx. */
static apr_status_t tracker_import_taken_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    apr_hash_t *taken = ctx;
    const char *code = qrt_db_str(db, row, 0);

    if (code) {
        code = apr_pstrdup(apr_hash_pool_get(taken), code);
        apr_hash_set(taken, code, APR_HASH_KEY_STRING, "");
    }
    return APR_SUCCESS;
}

/* tracker_import_add: the new tracker's id by its code (ctx: code -> tracker). */
static apr_status_t tracker_import_added_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    qrt_tracker_t *t = apr_hash_get(ctx, qrt_db_str(db, row, 1), APR_HASH_KEY_STRING);

    if (t) {
        t->id = qrt_db_int(db, row, 0, 0);
    }
    return APR_SUCCESS;
}

/* The batch's trackers whose codes are free (in new), their tags after them. */
static apr_status_t tracker_import_write(qrt_db_t *db, apr_pool_t *p, qrt_tracker_t **new,
                                         int m)
{
    apr_hash_t *by_code = apr_hash_make(p);
    const void **args = apr_palloc(p, sizeof(*args) * 7 * (m ? m : 1));
    apr_int64_t now = tracker_now();
    apr_array_header_t *tags;
    apr_status_t rv;
    int i, j, ntags = 0;

    for (i = 0; i < m; i++) {
        const void **a = args + (apr_size_t)i * 7;

        new[i]->updated_at = now;
        new[i]->id = 0;
        apr_hash_set(by_code, new[i]->code, APR_HASH_KEY_STRING, new[i]);
        a[0] = &new[i]->account_id;
        a[1] = new[i]->code;
        a[2] = new[i]->name;
        a[3] = new[i]->type;
        a[4] = new[i]->redirect_url;
        a[5] = &new[i]->created_at;
        a[6] = &new[i]->updated_at;
        ntags += new[i]->tags ? new[i]->tags->nelts : 0;
    }
    rv = qrt_db_each_rows(db, p, SQL_tracker_import_add, "lssssll", args, m,
                          tracker_import_added_row, by_code);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    tags = apr_array_make(p, ntags * 4 + 1, sizeof(const void *));
    for (i = 0; i < m; i++) {
        if (!new[i]->id) {
            db->error = "an imported tracker's id did not come back";
            return APR_EGENERAL;
        }
        for (j = 0; new[i]->tags && j < new[i]->tags->nelts; j++) {
            const char *tag = APR_ARRAY_IDX(new[i]->tags, j, const char *), *dim, *value;

            qrt_tag_split(p, tag, &dim, &value);
            APR_ARRAY_PUSH(tags, const void *) = &new[i]->id;
            APR_ARRAY_PUSH(tags, const void *) = tag;
            APR_ARRAY_PUSH(tags, const void *) = dim;
            APR_ARRAY_PUSH(tags, const void *) = value;
        }
    }
    rv = qrt_db_exec_rows(db, p, SQL_tracker_import_tag_add, "lsss",
                          (const void **)tags->elts, ntags);
    /* the history's "created" row of each, naming no token (qrtrack-admin) */
    for (i = 0; i < m && rv == APR_SUCCESS; i++) {
        rv = qrt_store_history_add(db, p, new[i]->id, new[i]->account_id, NULL,
                                   QRT_HISTORY_CREATED,
                                   qrt_history_changes(p, NULL, new[i], 0));
    }
    return rv;
}

apr_status_t qrt_store_tracker_import(qrt_db_t *db, apr_pool_t *p, qrt_tracker_t *t, int n,
                                      int dry_run, apr_status_t *res)
{
    apr_hash_t *taken = apr_hash_make(p);
    const void **codes = apr_palloc(p, sizeof(*codes) * (n ? n : 1));
    qrt_tracker_t **new = apr_palloc(p, sizeof(*new) * (n ? n : 1));
    apr_dbd_transaction_t *tx = NULL;
    apr_status_t rv;
    int i, m = 0;

    for (i = 0; i < n; i++) {
        codes[i] = t[i].code;
    }
    if (!dry_run) {
        rv = qrt_db_begin(db, p, &tx);
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    rv = qrt_db_each_rows(db, p, SQL_tracker_import_taken, "s", codes, n,
                          tracker_import_taken_row, taken);
    for (i = 0; i < n && rv == APR_SUCCESS; i++) {
        if (apr_hash_get(taken, t[i].code, APR_HASH_KEY_STRING)) {
            res[i] = APR_EEXIST;
            continue;
        }
        res[i] = APR_SUCCESS;
        apr_hash_set(taken, t[i].code, APR_HASH_KEY_STRING, "");
        new[m++] = &t[i];
    }
    if (rv == APR_SUCCESS && !dry_run) {
        rv = tracker_import_write(db, p, new, m);
    }
    if (tx) {
        rv = qrt_db_end_with(db, p, tx, rv);
    }
    return rv;
}

/* Declared in qrt_store_bulk.h: the routing of a tracker just inserted, in the
 * caller's transaction. */
apr_status_t qrt_store_tracker_route_tx(qrt_db_t *db, apr_pool_t *p, qrt_tracker_t *t)
{
    return tracker_route_save(db, p, t);
}
