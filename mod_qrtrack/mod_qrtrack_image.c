/* mod_qrtrack_image: QR images as responses, for every image endpoint
 *   GET  /tracker/<id>/qrcode, POST /tracker/qrcode, POST /qrCode   (options, one image)
 *   GET  /tracker/qrcodes?trackers=..|tag=..                          (qrt_image_zip)
 * Options: format (png, svg, pdf, eps; or the Accept header), size (PNG pixels), size_mm
 * (SVG/PDF/EPS), margin, ecc, fg, bg. The drawing is the core's (qrt_render.c). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <apr_lib.h>
#include <apr_strings.h>
#include "util_filter.h"

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_config.h"
#include "mod_qrtrack_http.h"
#include "mod_qrtrack_image.h"
#include "mod_qrtrack_style.h"
#include "mod_qrtrack_params.h"
#include "qrt_store_qrcodes.h"
#include "qrt_valid.h"
#include "qrt_zip.h"

APLOG_USE_MODULE(qrtrack);

/* ---- options -------------------------------------------------------------------- */

const char *qrt_image_from_query(qrt_req_t *q, const char *name)
{
    return qrt_query(q, name);
}

const char *qrt_image_from_body(qrt_req_t *q, const char *name)
{
    const char *v = qrt_body_str(q, name);

    return v ? v : qrt_query(q, name);
}

/* The format the Accept header prefers: the highest q among the four types, each of the
 * q of its exact name, else (PNG and SVG) of the "image/" wildcard range (RFC 9110: the
 * most specific range); on equal q the first named exactly, then PNG before SVG. Other
 * wildcards choose nothing.
 * -1 = none acceptable. *json_q: the q of application/json (0 when not named). */
static int image_accept_json(qrt_req_t *q, double *best_q_out, double *json_q)
{
    const char *accept = apr_table_get(q->r->headers_in, "Accept");
    char *copy, *item, *last = NULL;
    double best_q = 0, wild = -1, named[QRT_FMT_EPS + 1] = { -1, -1, -1, -1 };
    int best = -1, f;

    *json_q = 0;
    *best_q_out = 0;

    if (!accept || strlen(accept) > 4096) {
        return -1;
    }
    copy = apr_pstrdup(q->r->pool, accept);
    for (item = apr_strtok(copy, ",", &last); item; item = apr_strtok(NULL, ",", &last)) {
        char *params = strchr(item, ';'), *end;
        const char *qv;
        double qual = 1;

        if (params) {
            *params++ = '\0';
            if ((qv = ap_strcasestr(params, "q=")) != NULL) {
                errno = 0;
                qual = strtod(qv + 2, &end);
                if (errno || end == qv + 2 || !(qual >= 0 && qual <= 1)) {
                    qual = 0;
                }
            }
        }
        apr_collapse_spaces(item, item);   /* (returns the end, not the start) */
        if (!strcasecmp(item, "application/json") && qual > *json_q) {
            *json_q = qual;
        }
        if (!strcasecmp(item, "image/*") && qual > wild) {
            wild = qual;
        }
        for (f = QRT_FMT_PNG; f <= QRT_FMT_EPS; f++) {
            if (!strcasecmp(item, qrt_render_mime((qrt_img_format_t)f))) {
                if (qual > named[f]) {
                    named[f] = qual;
                }
                if (qual > best_q) {
                    best_q = qual;
                    best = f;
                }
            }
        }
    }
    for (f = QRT_FMT_PNG; f <= QRT_FMT_SVG; f++) {
        if (named[f] < 0 && wild > best_q) {
            best_q = wild;
            best = f;
        }
    }
    *best_q_out = best_q;
    return best;
}

static int image_accept(qrt_req_t *q)
{
    double best_q, json_q;

    return image_accept_json(q, &best_q, &json_q);
}

/* An image type is named, and JSON is not preferred to it (a higher q). */
int qrt_image_accepted(qrt_req_t *q)
{
    double best_q, json_q;

    return image_accept_json(q, &best_q, &json_q) >= 0 && best_q >= json_q;
}

static void image_int(qrt_req_t *q, qrt_err_t **e, int status, const char *v,
                      const char *field, apr_int64_t min, apr_int64_t max, const char *msg,
                      int *out)
{
    apr_int64_t n;

    if (!v) {
        return;
    }
    if (qrt_parse_int(v, min, max, &n) != 0) {
        qrt_error_collect(q, e, status, field, msg);
        return;
    }
    *out = (int)n;
}

static void image_size_mm(qrt_req_t *q, qrt_err_t **e, int status, const char *v,
                          double *out)
{
    char *end;
    double mm;

    if (!v) {
        return;
    }
    errno = 0;
    mm = strtod(v, &end);
    if (!*v || strspn(v, "0123456789.") != strlen(v) || *end || errno || !isfinite(mm)
        || mm < QRT_RENDER_MM_MIN || mm > QRT_RENDER_MM_MAX || strlen(v) > 16) {
        qrt_error_collect(q, e, status, "size_mm",
                          "The size_mm must be a number from 10 to " "1000 (millimetres).");
        return;
    }
    *out = mm;
}

static void image_colour(qrt_req_t *q, qrt_err_t **e, int status, const char *v,
                         const char *field, unsigned *out, int *bad)
{
    if (v && !qrt_colour_parse(v, out)) {
        qrt_error_collect(q, e, status, field, apr_psprintf(q->r->pool, "The %s must be a "
                          "colour #RRGGBB.", field));
        *bad = 1;
    }
}

/* Scanners need dark modules on a light ground with enough contrast. */
static void image_contrast(qrt_req_t *q, qrt_err_t **e, const qrt_render_opts_t *o)
{
    double ratio = qrt_contrast_ratio(o->fg, o->bg);
    const char *msg;

    if (ratio >= QRT_RENDER_CONTRAST_MIN && qrt_luminance(o->fg) <= qrt_luminance(o->bg)) {
        return;
    }
    msg = apr_psprintf(q->r->pool, "The fg and bg colours must be dark on light with a "
                       "contrast ratio of at least 4.5 (#%06X on #%06X: %.2f%s).", o->fg,
                       o->bg, ratio, qrt_luminance(o->fg) > qrt_luminance(o->bg)
                       ? ", light on dark" : "");
    qrt_error_collect(q, e, HTTP_UNPROCESSABLE_ENTITY, "fg", msg);
    qrt_error_add(q, *e, "bg", msg);
    (*e)->message = msg;
    if (e[0]->errors && json_object_size(e[0]->errors) > 2) {
        (*e)->message = "The given data was invalid.";
    }
}

qrt_err_t *qrt_image_opts(qrt_req_t *q, int status, qrt_image_get_fn *get,
                          qrt_render_opts_t *o)
{
    qrt_err_t *e = NULL;
    const char *format = get(q, "format"), *ecc = get(q, "ecc");
    int bad_colour = 0;

    qrt_render_opts_default(o);
    /* A named style (style=<name>, else the account's "default"), before the explicit
     * parameters below, which override its values; an unknown name is 404. */
    if ((e = qrt_style_apply(q, get(q, "style"), o)) != NULL) {
        return e;
    }

    if (format) {
        if (!qrt_render_format_parse(format, &o->format)) {
            qrt_error_collect(q, &e, status, "format",
                              "The format must be one of png, svg, " "pdf, eps.");
        }
    }
    else {
        int f = image_accept(q);

        o->format = f >= 0 ? (qrt_img_format_t)f : QRT_FMT_PNG;
    }
    image_int(q, &e, status, get(q, "size"), "size", QRT_QR_SIZE_MIN, QRT_QR_SIZE_MAX,
              "The size must be an integer from 64 to 2048 (pixels).", &o->size);
    image_size_mm(q, &e, status, get(q, "size_mm"), &o->size_mm);
    image_int(q, &e, status, get(q, "margin"), "margin", QRT_QR_MARGIN_MIN,
              QRT_QR_MARGIN_MAX, "The margin must be an integer from 0 to 16 (modules).",
              &o->margin);
    if (ecc) {
        if (strlen(ecc) != 1 || !strchr("LMQHlmqh", ecc[0])) {
            qrt_error_collect(q, &e, status, "ecc", "The ecc must be one of L, M, Q, H.");
        }
        else {
            o->ecc = apr_toupper(ecc[0]);
        }
    }
    image_colour(q, &e, status, get(q, "fg"), "fg", &o->fg, &bad_colour);
    image_colour(q, &e, status, get(q, "bg"), "bg", &o->bg, &bad_colour);
    if (!bad_colour) {
        image_contrast(q, &e, o);
    }
    return e;
}

/* ---- one image ------------------------------------------------------------------ */

static apr_status_t image_bb_write(void *ctx, const void *buf, apr_size_t len)
{
    return apr_brigade_write(ctx, NULL, NULL, buf, len);
}

static qrt_err_t *image_render_bb(qrt_req_t *q, const char *text,
                                  const qrt_render_opts_t *o, int status_on_error,
                                  apr_bucket_brigade *bb)
{
    request_rec *r = q->r;
    const char *err = NULL;
    apr_status_t rv = qrt_render(r->pool, text, strlen(text), o, image_bb_write, bb, &err);

    if (rv == APR_SUCCESS) {
        return NULL;
    }
    apr_brigade_destroy(bb);
    if (rv != APR_EINVAL) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, rv, r, "QRT00900: QR image (%s) failed: %s",
                      qrt_render_ext(o->format), err ? err : "unknown");
        return qrt_error(q, HTTP_INTERNAL_SERVER_ERROR, "Server Error");
    }
    return qrt_error_field(q, status_on_error, "data",
                           apr_pstrcat(r->pool, "The QR code cannot be made: ",
                                       err ? err : "unknown error", ".", NULL));
}

qrt_err_t *qrt_respond_image(qrt_req_t *q, const char *text, const qrt_render_opts_t *o,
                             int status_on_error)
{
    request_rec *r = q->r;
    apr_bucket_brigade *bb = apr_brigade_create(r->pool, r->connection->bucket_alloc);
    qrt_err_t *e = image_render_bb(q, text, o, status_on_error, bb);

    if (e) {
        return e;
    }
    ap_set_content_type(r, qrt_render_mime(o->format));
    r->status = HTTP_OK;
    if (r->header_only) {
        apr_off_t len = 0;

        apr_brigade_length(bb, 1, &len);
        ap_set_content_length(r, len);
        apr_brigade_cleanup(bb);
    }
    APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_eos_create(bb->bucket_alloc));
    ap_pass_brigade(r->output_filters, bb);
    return NULL;
}

qrt_err_t *qrt_image_buf(qrt_req_t *q, const char *text, const qrt_render_opts_t *o,
                         const char **buf, apr_size_t *len)
{
    request_rec *r = q->r;
    apr_bucket_brigade *bb = apr_brigade_create(r->pool, r->connection->bucket_alloc);
    qrt_err_t *e = image_render_bb(q, text, o, HTTP_INTERNAL_SERVER_ERROR, bb);
    char *flat;

    if (e) {
        return e;
    }
    if (apr_brigade_pflatten(bb, &flat, len, r->pool) != APR_SUCCESS) {
        apr_brigade_destroy(bb);
        return qrt_error(q, HTTP_INTERNAL_SERVER_ERROR, "Server Error");
    }
    apr_brigade_destroy(bb);
    *buf = flat;
    return NULL;
}

/* ---- the ZIP of many -------------------------------------------------------------- */

typedef struct {
    request_rec *r;
    apr_bucket_brigade *bb;
} image_stream_t;

/* Through the brigade to the network as it fills: memory stays at a few buckets. */
static apr_status_t image_stream_write(void *ctx, const void *buf, apr_size_t len)
{
    image_stream_t *s = ctx;

    if (s->r->connection->aborted) {
        return APR_ECONNABORTED;
    }
    return apr_brigade_write(s->bb, ap_filter_flush, s->r->output_filters, buf, len);
}

/* Which trackers: trackers= (ids, the account's) or tag= (one tag), not both. */
static qrt_err_t *image_zip_refs(qrt_req_t *q, apr_array_header_t **refs)
{
    apr_array_header_t *ids;
    const char *tag = qrt_query(q, "tag"), *why;
    int by_ids = qrt_query_list(q, "trackers")->nelts > 0;
    apr_status_t rv;
    qrt_err_t *e;

    if (by_ids == (tag != NULL)) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, by_ids ? "tag" : "trackers",
                               "Give either trackers (a list of tracker ids) or tag.");
    }
    if (by_ids) {
        if ((e = qrt_params_trackers(q, "trackers", &ids)) != NULL) {
            return e;
        }
        rv = qrt_store_qrcodes_by_ids(&q->db, q->r->pool, q->auth.account_id,
                                      (const apr_int64_t *)ids->elts, ids->nelts, refs);
        if (rv == APR_NOTFOUND) {
            /* deleted between the check and the read */
            return qrt_error(q, HTTP_NOT_FOUND, "Tracker not found.");
        }
        return rv == APR_SUCCESS ? NULL : qrt_error_store(q, "reading tracker codes");
    }
    if ((why = qrt_valid_tag(tag)) != NULL) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "tag",
                               apr_pstrcat(q->r->pool, "The tag ", why, ".", NULL));
    }
    rv = qrt_store_qrcodes_by_tag(&q->db, q->r->pool, q->auth.account_id, tag,
                                  QRT_TRACKER_IDS_MAX + 1, refs);
    if (rv != APR_SUCCESS) {
        return qrt_error_store(q, "reading tracker codes");
    }
    if ((*refs)->nelts > QRT_TRACKER_IDS_MAX) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "tag",
                               apr_psprintf(q->r->pool, "At most %d trackers go in one "
                                            "archive; this tag has more.",
                                            QRT_TRACKER_IDS_MAX));
    }
    return NULL;
}

/* A failure once the headers are out: the client must not take the archive as whole,
 * so the chunked body gets no last chunk (as mod_proxy does for a broken backend). */
static void image_zip_abort(request_rec *r, apr_bucket_brigade *bb, apr_status_t rv,
                            const char *what)
{
    if (rv != APR_ECONNABORTED && !r->connection->aborted) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, rv, r, "QRT00901: ZIP of QR images failed: %s",
                      what);
    }
    apr_brigade_cleanup(bb);
    r->connection->keepalive = AP_CONN_CLOSE;
    APR_BRIGADE_INSERT_TAIL(bb, ap_bucket_error_create(HTTP_BAD_GATEWAY, NULL, r->pool,
                                                       bb->bucket_alloc));
    APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_eos_create(bb->bucket_alloc));
    ap_pass_brigade(r->output_filters, bb);
}

qrt_err_t *qrt_image_zip(qrt_req_t *q)
{
    request_rec *r = q->r;
    qrt_render_opts_t o;
    apr_array_header_t *refs = NULL;
    image_stream_t s;
    const char *base, *err = NULL;
    apr_pool_t *sub;
    qrt_zip_t *z;
    apr_status_t rv = APR_SUCCESS;
    qrt_err_t *e;
    int i;

    if ((e = qrt_image_opts(q, HTTP_UNPROCESSABLE_ENTITY, qrt_image_from_query, &o))
        != NULL) {
        return e;
    }
    if ((e = image_zip_refs(q, &refs)) != NULL) {
        return e;
    }
    ap_set_content_type(r, "application/zip");
    apr_table_setn(r->headers_out, "Content-Disposition",
                   "attachment; filename=\"qrcodes.zip\"");
    r->status = HTTP_OK;
    s.r = r;
    s.bb = apr_brigade_create(r->pool, r->connection->bucket_alloc);
    if (r->header_only) {
        APR_BRIGADE_INSERT_TAIL(s.bb, apr_bucket_eos_create(s.bb->bucket_alloc));
        ap_pass_brigade(r->output_filters, s.bb);
        return NULL;
    }
    base = apr_pstrcat(r->pool, qrt_public_base(q), qrt_scan_prefix(r->server), "/", NULL);
    if (o.format == QRT_FMT_SVG && o.logo) {
        /* (the logo's PNG encoded once, not once an SVG) */
        o.logo_png64 = qrt_render_logo_png64(r->pool, o.logo);
    }
    z = qrt_zip_open(r->pool, image_stream_write, &s, r->request_time);
    apr_pool_create(&sub, r->pool);
    for (i = 0; i < refs->nelts && rv == APR_SUCCESS; i++) {
        const qrt_qrcode_ref_t *ref = &APR_ARRAY_IDX(refs, i, qrt_qrcode_ref_t);
        const char *text;

        apr_pool_clear(sub);
        text = apr_pstrcat(sub, base, ref->code, NULL);
        rv = qrt_zip_entry(z, apr_pstrcat(sub, ref->code, ".", qrt_render_ext(o.format),
                                          NULL));
        if (rv == APR_SUCCESS) {
            rv = qrt_render(sub, text, strlen(text), &o, qrt_zip_write, z, &err);
            if (rv != APR_SUCCESS && !err) {
                err = "writing the archive";
            }
        }
        else {
            err = "writing the archive";
        }
    }
    if (rv == APR_SUCCESS && (rv = qrt_zip_close(z)) != APR_SUCCESS) {
        err = "writing the archive";
    }
    if (rv != APR_SUCCESS) {
        image_zip_abort(r, s.bb, rv, apr_pstrdup(r->pool, err ? err : "unknown"));
        apr_pool_destroy(sub);
        return NULL;
    }
    apr_pool_destroy(sub);
    APR_BRIGADE_INSERT_TAIL(s.bb, apr_bucket_eos_create(s.bb->bucket_alloc));
    ap_pass_brigade(r->output_filters, s.bb);
    return NULL;
}
