/* mod_qrtrack_tracker.c: the trackers' endpoints, and what other endpoints take from them. */
#ifndef MOD_QRTRACK_TRACKER_H
#define MOD_QRTRACK_TRACKER_H

#include "mod_qrtrack_private.h"
#include "qrt_qr.h"

/* The caller's live tracker whose id is the path segment seg: 404 for a
 * non-numeric, unknown or deleted id, 403 for another account's. */
qrt_err_t *qrt_tracker_load(qrt_req_t *q, const char *seg, qrt_tracker_t *t);
/* The public JSON of a tracker. */
json_t *qrt_tracker_json(qrt_req_t *q, const qrt_tracker_t *t);
/* QR image options size, margin, ecc (NULL = default); errors with status. */
qrt_err_t *qrt_qr_opts_parse(qrt_req_t *q, int status, const char *size,
                             const char *margin, const char *ecc, qrt_qr_opts_t *o);
/* Writes a PNG of text as the response (Content-Length set). */
qrt_err_t *qrt_respond_png(qrt_req_t *q, const char *text, const qrt_qr_opts_t *o,
                           int status_on_error);

/* Handlers (the route table in mod_qrtrack_api.c). */
qrt_err_t *qrt_tracker_qrcode(qrt_req_t *q);
qrt_err_t *qrt_tracker_list(qrt_req_t *q);
qrt_err_t *qrt_tracker_create(qrt_req_t *q);
qrt_err_t *qrt_tracker_show(qrt_req_t *q);
qrt_err_t *qrt_tracker_update(qrt_req_t *q);
qrt_err_t *qrt_tracker_delete(qrt_req_t *q);
qrt_err_t *qrt_tracker_image(qrt_req_t *q);
/* GET /tracker/<id>/history */
qrt_err_t *qrt_tracker_history(qrt_req_t *q);

#endif
