/* qrt_store_bulk: see qrt_store_bulk.h. */
#include <string.h>
#include <apr_strings.h>
#include <apr_time.h>
#include "qrt_store_bulk.h"

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

    if (!e || (statement && (strncmp(e, statement, n) != 0 || e[n] != ':'))) {
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
