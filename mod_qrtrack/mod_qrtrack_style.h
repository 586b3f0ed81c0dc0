/* mod_qrtrack_style.c: named image styles, POST/GET/DELETE /style (CONTRACT section 7,
 * "Print-grade images"), and the style an image request names. */
#ifndef MOD_QRTRACK_STYLE_H
#define MOD_QRTRACK_STYLE_H

#include "mod_qrtrack_private.h"

#include "qrt_render.h"

/* POST /style: creates or replaces a style by name (JSON, or multipart with a file part
 * "logo"). */
qrt_err_t *qrt_style_create(qrt_req_t *q);
/* GET /style */
qrt_err_t *qrt_style_list(qrt_req_t *q);
/* GET /style/<name> */
qrt_err_t *qrt_style_show(qrt_req_t *q);
/* DELETE /style/<name> */
qrt_err_t *qrt_style_delete(qrt_req_t *q);

/* Applies to o the caller's style name, or, when name is NULL, the account's "default"
 * style if it has one: colours and logo, and ECC and margin unless the request gave
 * them itself (a logo forces ECC H). 404 naming "style" for an unknown name; NULL when
 * applied or when there is nothing to apply. */
qrt_err_t *qrt_style_apply(qrt_req_t *q, const char *name, qrt_render_opts_t *o);

/* The multipart part that holds a logo's bytes, and the most bytes POST /style
 * lets one part carry (the logo's own bound is checked after, with a clear 422). */
#define QRT_STYLE_LOGO_FIELD "logo"
#define QRT_STYLE_PART_MAX (512 * 1024)

#endif
