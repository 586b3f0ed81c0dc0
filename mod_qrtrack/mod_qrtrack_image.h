/* mod_qrtrack_image.c: QR images as responses (format, colours, sizes) and the ZIP of them. */
#ifndef MOD_QRTRACK_IMAGE_H
#define MOD_QRTRACK_IMAGE_H

#include "mod_qrtrack_private.h"
#include "qrt_render.h"

/* Where an endpoint reads its image parameters from (query, body). */
typedef const char *qrt_image_get_fn(qrt_req_t *q, const char *name);

/* The image options of a request: format (or the Accept header), size, size_mm, margin,
 * ecc, fg, bg, read through get. A bad value is an error with status naming the field;
 * a fg/bg pair that is not dark on light at contrast 4.5 is a 422 naming both. */
qrt_err_t *qrt_image_opts(qrt_req_t *q, int status, qrt_image_get_fn *get,
                          qrt_render_opts_t *o);
/* The image of text as the response (Content-Type of its format, Content-Length). */
qrt_err_t *qrt_respond_image(qrt_req_t *q, const char *text, const qrt_render_opts_t *o,
                             int status_on_error);
/* The image of text in r->pool: *buf, *len. NULL, or a 500 (logged). */
qrt_err_t *qrt_image_buf(qrt_req_t *q, const char *text, const qrt_render_opts_t *o,
                         const char **buf, apr_size_t *len);
/* Whether the Accept header asks for an image (any of the four formats), JSON not
 * preferred to it (application/json of a higher q). */
int qrt_image_accepted(qrt_req_t *q);
/* Getters for qrt_image_opts: the query; the body, then the query. */
const char *qrt_image_from_query(qrt_req_t *q, const char *name);
const char *qrt_image_from_body(qrt_req_t *q, const char *name);

/* GET /tracker/qrcodes?trackers=1,2|tag=T&format=...: a ZIP of <code>.<ext>, streamed. */
qrt_err_t *qrt_image_zip(qrt_req_t *q);

#endif
