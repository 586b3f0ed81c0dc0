/* mod_qrtrack_tracker.c: the trackers' endpoints, and what other endpoints take from them. */
#ifndef MOD_QRTRACK_TRACKER_H
#define MOD_QRTRACK_TRACKER_H

#include "mod_qrtrack_private.h"
#include "qrt_qr.h"

/* The caller's live tracker whose id is the path segment seg: 404 for a
 * non-numeric, unknown or deleted id, 403 for another account's. */
qrt_err_t *qrt_tracker_load(qrt_req_t *q, const char *seg, qrt_tracker_t *t);
/* The same without the tracker's tags (t->tags left empty): for the visits' handlers. */
qrt_err_t *qrt_tracker_load_head(qrt_req_t *q, const char *seg, qrt_tracker_t *t);
/* The public JSON of a tracker. */
json_t *qrt_tracker_json(qrt_req_t *q, const qrt_tracker_t *t);
/* Fills t from obj as POST /tracker reads its body (what a row of POST
 * /tracker/bulk is); a 422 error naming the fields otherwise. */
qrt_err_t *qrt_tracker_read(qrt_req_t *q, json_t *obj, qrt_tracker_t *t);
/* 409 for a code already taken. */
qrt_err_t *qrt_tracker_code_taken_error(qrt_req_t *q, const char *code);
/* What the store records of a change of t made by this request: the webhook events
 * (tracker.created, ...) carry t as the answer shows it, the history the token's label. */
void qrt_tracker_by_request(qrt_req_t *q, qrt_tracker_t *t);

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
