/* qrt_store_bulk: see qrt_store_bulk.h. */
#include <string.h>
#include <apr_strings.h>
#include <apr_hash.h>
#include <apr_time.h>
#include "qrt_store_bulk.h"
#include "qrt_store_webhook.h"
#include "qrt_history.h"
#include "qrt_valid.h"

typedef struct {
    apr_hash_t *by_code;        /* code -> qrt_tracker_t* */
    int got;
} bulk_ids;

/* A row of bulk_tracker_add: id, code. */
static apr_status_t bulk_id_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    bulk_ids *b = ctx;
    const char *code = qrt_db_str(db, row, 1);
    qrt_tracker_t *t = code ? apr_hash_get(b->by_code, code, APR_HASH_KEY_STRING) : NULL;

    if (t) {
        t->id = qrt_db_int(db, row, 0, 0);
        b->got++;
    }
    return APR_SUCCESS;
}

/* The tags of the inserted t[0..n), ntags in all, many rows a statement. */
static apr_status_t bulk_tags_insert(qrt_db_t *db, apr_pool_t *p, qrt_tracker_t **t, int n,
                                     int ntags)
{
    const void **targs = apr_palloc(p, (apr_size_t)ntags * 4 * sizeof(void *));
    int i, j, k = 0;

    for (i = 0; i < n; i++) {
        for (j = 0; t[i] && t[i]->tags && j < t[i]->tags->nelts; j++, k++) {
            const char *tag = APR_ARRAY_IDX(t[i]->tags, j, const char *), *dim, *value;

            qrt_tag_split(p, tag, &dim, &value);
            targs[4 * k] = &t[i]->id;
            targs[4 * k + 1] = tag;
            targs[4 * k + 2] = dim;
            targs[4 * k + 3] = value;
        }
    }
    return qrt_db_exec_rows(db, p, SQL_bulk_tag_add, "lsss", targs, ntags);
}

apr_status_t qrt_store_trackers_insert_tx(qrt_db_t *db, apr_pool_t *p, qrt_tracker_t **t,
                                          int n)
{
    apr_int64_t now = apr_time_sec(apr_time_now());
    bulk_ids ids = { apr_hash_make(p), 0 };
    const void **args = apr_palloc(p, (n > 0 ? n : 1) * 7 * sizeof(void *));
    apr_status_t rv;
    int i, m = 0, ntags = 0;

    for (i = 0; i < n; i++) {
        if (!t[i]) {
            continue;
        }
        t[i]->id = 0;
        t[i]->created_at = t[i]->updated_at = now;
        apr_hash_set(ids.by_code, t[i]->code, APR_HASH_KEY_STRING, t[i]);
        args[7 * m] = &t[i]->account_id;
        args[7 * m + 1] = t[i]->code;
        args[7 * m + 2] = t[i]->name;
        args[7 * m + 3] = t[i]->type;
        args[7 * m + 4] = t[i]->redirect_url;
        args[7 * m + 5] = &t[i]->created_at;
        args[7 * m + 6] = &t[i]->updated_at;
        m++;
        ntags += t[i]->tags ? t[i]->tags->nelts : 0;
    }
    rv = qrt_db_each_rows(db, p, SQL_bulk_tracker_add, "lssssll", args, m, bulk_id_row, &ids);
    if (rv == APR_SUCCESS && ids.got != m) {
        db->error = apr_psprintf(p, "bulk_tracker_add: %d of %d rows came back", ids.got, m);
        rv = APR_EGENERAL;
    }
    if (rv == APR_SUCCESS && ntags > 0) {
        rv = bulk_tags_insert(db, p, t, n, ntags);
    }
    for (i = 0; i < n && rv == APR_SUCCESS; i++) {
        if (t[i] && t[i]->route_set) {
            rv = qrt_store_tracker_route_tx(db, p, t[i]);
        }
    }
    /* tracker.created and the history row, in this transaction as a single create's
     * (qrt_store_tracker_add) */
    if (rv == APR_SUCCESS) {
        rv = qrt_store_webhook_tracker_events(db, p, QRT_WEBHOOK_TRACKER_CREATED, t, n);
    }
    for (i = 0; i < n && rv == APR_SUCCESS; i++) {
        if (t[i]) {
            rv = qrt_store_history_add(db, p, t[i]->id, t[i]->account_id, t[i]->changed_by,
                                       QRT_HISTORY_CREATED,
                                       qrt_history_changes(p, NULL, t[i], t[i]->route_set
                                                           && !t[i]->password_keep));
        }
    }
    return rv;
}

apr_status_t qrt_store_code_taken(qrt_db_t *db, apr_pool_t *p, const char *code,
                                  int *taken)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *args[] = { code };
    apr_status_t rv = qrt_db_select(db, p, SQL_tracker_code_taken, &res, args);

    *taken = 0;
    if (rv != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        *taken = 1;
    }
    return APR_SUCCESS;
}

int qrt_store_unique_violation(const qrt_db_t *db, const char *statement)
{
    const char *e = db->error;
    apr_size_t n = statement ? strlen(statement) : 0;

    /* Its PostgreSQL form of many rows is "<statement>_many". */
    if (!e || (statement && (strncmp(e, statement, n) != 0
                             || (e[n] != ':' && strncmp(e + n, "_many:", 6) != 0)))) {
        return 0;
    }
    return strstr(e, "UNIQUE constraint failed") != NULL || strstr(e, " 23505:") != NULL
           || strstr(e, "duplicate key value") != NULL;
}

apr_status_t qrt_store_idem_get(qrt_db_t *db, apr_pool_t *p, apr_int64_t token_id,
                                const char *key, qrt_idem_t *out)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    apr_int64_t since = apr_time_sec(apr_time_now()) - QRT_IDEM_TTL;
    const void *args[] = { &token_id, key, &since };
    apr_status_t rv = qrt_db_select(db, p, SQL_idem_get, &res, args);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = APR_NOTFOUND;
    while (qrt_db_row(db, p, res, &row) == 0) {
        out->request_hash = apr_pstrdup(p, qrt_db_str(db, row, 0));
        out->status = (int)qrt_db_int(db, row, 1, 0);
        out->content_type = apr_pstrdup(p, qrt_db_str(db, row, 2));
        out->body = apr_pstrdup(p, qrt_db_str(db, row, 3));
        out->tracker_id = qrt_db_int(db, row, 4, 0);
        rv = APR_SUCCESS;
    }
    return rv;
}

apr_status_t qrt_store_idem_add(qrt_db_t *db, apr_pool_t *p, apr_int64_t token_id,
                                const char *key, const qrt_idem_t *in)
{
    apr_int64_t status = in->status;
    apr_int64_t now = apr_time_sec(apr_time_now());
    const void *args[] = { &token_id, key, in->request_hash, &status, in->content_type,
                           in->body, in->tracker_id ? &in->tracker_id : NULL, &now };

    return qrt_db_exec(db, p, SQL_idem_add, NULL, args);
}

apr_status_t qrt_store_idem_purge(qrt_db_t *db, apr_pool_t *p)
{
    apr_int64_t before = apr_time_sec(apr_time_now()) - QRT_IDEM_TTL;
    const void *args[] = { &before };

    return qrt_db_exec(db, p, SQL_idem_purge, NULL, args);
}
