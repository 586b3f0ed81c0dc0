/* qrt_store_qrcodes: the trackers' codes a ZIP of their QR images is made of. */
#ifndef QRT_STORE_QRCODES_H
#define QRT_STORE_QRCODES_H

#include "qrt_store.h"

typedef struct {
    apr_int64_t id;
    const char *code;
} qrt_qrcode_ref_t;

/* The codes of the account's live trackers ids[0..n-1], in that order (array of
 * qrt_qrcode_ref_t); APR_NOTFOUND when one is not a live tracker of the account. */
apr_status_t qrt_store_qrcodes_by_ids(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                      const apr_int64_t *ids, int n, apr_array_header_t **out);
/* The account's live trackers tagged tag, by id, at most limit of them. */
apr_status_t qrt_store_qrcodes_by_tag(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                      const char *tag, apr_int64_t limit,
                                      apr_array_header_t **out);

#endif
