/* qrt_store_history: each tracker's history of creates, changes and deletes (schema 29). */
#include <apr_strings.h>
#include <apr_time.h>
#include "qrt_store.h"

apr_status_t qrt_store_history_add(qrt_db_t *db, apr_pool_t *p, apr_int64_t tracker_id,
                                   apr_int64_t account_id, const char *token_label,
                                   const char *kind, const char *changes_json)
{
    apr_int64_t now = apr_time_sec(apr_time_now());
    const void *args[] = { &tracker_id, &account_id, &now, token_label, kind,
                           changes_json ? changes_json : "{}" };

    return qrt_db_exec(db, p, SQL_history_add, NULL, args);
}

apr_status_t qrt_store_history_list(qrt_db_t *db, apr_pool_t *p, apr_int64_t tracker_id,
                                    apr_int64_t offset, apr_int64_t limit,
                                    apr_array_header_t **out, apr_int64_t *total)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *cargs[] = { &tracker_id };
    const void *args[] = { &tracker_id, &limit, &offset };
    apr_status_t rv;

    *out = apr_array_make(p, (int)(limit < 64 ? limit : 64), sizeof(qrt_history_t));
    rv = qrt_db_select_int(db, p, SQL_history_count, cargs, total);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = qrt_db_select(db, p, SQL_history_page, &res, args);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        qrt_history_t *h = apr_array_push(*out);

        h->id = qrt_db_int(db, row, 0, 0);
        h->at = qrt_db_int(db, row, 1, 0);
        h->token_label = apr_pstrdup(p, qrt_db_str(db, row, 2));
        h->kind = apr_pstrdup(p, qrt_db_str(db, row, 3));
        h->changes = apr_pstrdup(p, qrt_db_str(db, row, 4));
    }
    return APR_SUCCESS;
}

apr_status_t qrt_store_history_account(qrt_db_t *db, apr_pool_t *p, apr_int64_t tracker_id,
                                       apr_int64_t *account_id)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *args[] = { &tracker_id };
    apr_status_t rv = qrt_db_select(db, p, SQL_history_tracker_account, &res, args);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = APR_NOTFOUND;
    while (qrt_db_row(db, p, res, &row) == 0) {
        *account_id = qrt_db_int(db, row, 0, 0);
        rv = APR_SUCCESS;
    }
    return rv;
}
