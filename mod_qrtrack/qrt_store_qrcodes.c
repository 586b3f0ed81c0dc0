/* qrt_store_qrcodes: the trackers' codes a ZIP of their QR images is made of. */

#include "qrt_sql.h"
#include "qrt_store_qrcodes.h"

apr_status_t qrt_store_qrcodes_by_ids(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                      const apr_int64_t *ids, int n, apr_array_header_t **out)
{
    int i;

    *out = apr_array_make(p, n > 0 ? n : 1, sizeof(qrt_qrcode_ref_t));
    for (i = 0; i < n; i++) {
        apr_dbd_results_t *res;
        apr_dbd_row_t *row = NULL;
        const void *args[] = { &ids[i], &account_id };
        apr_status_t rv = qrt_db_select(db, p, SQL_qrcodes_code, &res, args);
        qrt_qrcode_ref_t *ref;
        const char *code = NULL;

        if (rv != APR_SUCCESS) {
            return rv;
        }
        while (qrt_db_row(db, p, res, &row) == 0) {
            code = qrt_db_str(db, row, 0);
        }
        if (!code || !*code) {
            return APR_NOTFOUND;
        }
        ref = apr_array_push(*out);
        ref->id = ids[i];
        ref->code = code;
    }
    return APR_SUCCESS;
}

apr_status_t qrt_store_qrcodes_by_tag(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                      const char *tag, apr_int64_t limit,
                                      apr_array_header_t **out)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *args[] = { &account_id, tag, &limit };
    apr_status_t rv = qrt_db_select(db, p, SQL_qrcodes_by_tag, &res, args);

    *out = apr_array_make(p, 16, sizeof(qrt_qrcode_ref_t));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        qrt_qrcode_ref_t *ref = apr_array_push(*out);

        ref->id = qrt_db_int(db, row, 0, 0);
        ref->code = qrt_db_str(db, row, 1);
    }
    return APR_SUCCESS;
}
