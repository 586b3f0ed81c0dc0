/* mod_qrtrack_style: named image styles per account, POST/GET/DELETE /style, and
 * qrt_style_apply, which image requests call to use one (CONTRACT section 7). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <apr_base64.h>
#include <apr_lib.h>
#include <apr_strings.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_http.h"
#include "mod_qrtrack_style.h"
#include "qrt_json.h"
#include "qrt_logo.h"
#include "qrt_store_style.h"
#include "qrt_style.h"
#include "qrt_valid.h"

APLOG_USE_MODULE(qrtrack);

#define STYLE_FG_DEFAULT "#000000"
#define STYLE_BG_DEFAULT "#FFFFFF"
/* base64 characters that hold QRT_LOGO_MAX_BYTES */
#define STYLE_LOGO_B64_MAX (((QRT_LOGO_MAX_BYTES + 2) / 3) * 4)

/* ---- responses ------------------------------------------------------------------ */

static json_t *style_json(apr_pool_t *p, const qrt_style_t *s, int with_data)
{
    json_t *j = json_object(), *logo = json_null();
    char ecc[2] = { s->ecc, '\0' };

    json_object_set_new(j, "name", json_string(s->name));
    json_object_set_new(j, "fg", json_string(s->fg));
    json_object_set_new(j, "bg", json_string(s->bg));
    json_object_set_new(j, "ecc", json_string(ecc));
    json_object_set_new(j, "margin", json_integer(s->margin));
    json_object_set_new(j, "has_logo", json_boolean(s->logo_len > 0));
    if (s->logo_len > 0) {
        logo = json_object();
        json_object_set_new(logo, "width", json_integer(s->logo_width));
        json_object_set_new(logo, "height", json_integer(s->logo_height));
        json_object_set_new(logo, "bytes", json_integer((json_int_t)s->logo_len));
        json_object_set_new(logo, "content_type", json_string("image/png"));
        if (with_data && s->logo) {
            char *b64 = apr_palloc(p, apr_base64_encode_len((int)s->logo_len));

            apr_base64_encode_binary(b64, s->logo, (int)s->logo_len);
            json_object_set_new(logo, "data", json_string(b64));
        }
    }
    json_object_set_new(j, "logo", logo);
    json_object_set_new(j, "created_at", qrt_json_time(s->created_at));
    json_object_set_new(j, "updated_at", qrt_json_time(s->updated_at));
    return j;
}

/* ---- POST /style ---------------------------------------------------------------- */

/* A string field of the body; a JSON value of another type is an error (NULL). JSON
 * null is the same as no field. */
static const char *style_str(qrt_req_t *q, qrt_err_t **e, const char *field)
{
    if (q->json) {
        json_t *v = json_object_get(q->json, field);

        if (v && !json_is_string(v) && !json_is_null(v)) {
            qrt_error_collect(q, e, HTTP_UNPROCESSABLE_ENTITY, field,
                              apr_psprintf(q->r->pool, "The %s field must be a string.",
                              field));
            return NULL;
        }
        return v && json_is_string(v) ? json_string_value(v) : NULL;
    }
    return q->form ? apr_table_get(q->form, field) : NULL;
}

static int style_margin(qrt_req_t *q, qrt_err_t **e)
{
    const char *msg = "The margin must be an integer from 0 to 16 (modules).";
    json_t *v = q->json ? json_object_get(q->json, "margin") : NULL;
    const char *s;
    apr_int64_t m;

    if (v && json_is_integer(v)) {
        m = json_integer_value(v);
        if (m < QRT_QR_MARGIN_MIN || m > QRT_QR_MARGIN_MAX) {
            qrt_error_collect(q, e, HTTP_UNPROCESSABLE_ENTITY, "margin", msg);
        }
        return (int)m;
    }
    if (v && !json_is_null(v) && !json_is_string(v)) {
        qrt_error_collect(q, e, HTTP_UNPROCESSABLE_ENTITY, "margin", msg);
        return QRT_QR_MARGIN_DEFAULT;
    }
    s = v && json_is_string(v) ? json_string_value(v)
        : q->form ? apr_table_get(q->form, "margin") : NULL;
    if (s && qrt_parse_int(s, QRT_QR_MARGIN_MIN, QRT_QR_MARGIN_MAX, &m) != 0) {
        qrt_error_collect(q, e, HTTP_UNPROCESSABLE_ENTITY, "margin", msg);
        return QRT_QR_MARGIN_DEFAULT;
    }
    return s ? (int)m : QRT_QR_MARGIN_DEFAULT;
}

/* fg and bg: each "#RRGGBB", together dark on light (a pair refused names both). */
static void style_colours(qrt_req_t *q, qrt_err_t **e, qrt_style_t *s)
{
    const char *fg = style_str(q, e, "fg"), *bg = style_str(q, e, "bg"), *why;
    unsigned f = 0, b = 0;
    int ok = 1;

    fg = fg ? fg : STYLE_FG_DEFAULT;
    bg = bg ? bg : STYLE_BG_DEFAULT;
    if (!qrt_colour_parse(fg, &f)) {
        qrt_error_collect(q, e, HTTP_UNPROCESSABLE_ENTITY, "fg",
                          "The fg must be a colour written #RRGGBB.");
        ok = 0;
    }
    if (!qrt_colour_parse(bg, &b)) {
        qrt_error_collect(q, e, HTTP_UNPROCESSABLE_ENTITY, "bg",
                          "The bg must be a colour written #RRGGBB.");
        ok = 0;
    }
    if (ok && (why = qrt_style_colours_check(q->r->pool, f, b)) != NULL) {
        why = apr_psprintf(q->r->pool, "The colours fg %s and bg %s cannot be used: %s.",
                           fg, bg, why);
        qrt_error_collect(q, e, HTTP_UNPROCESSABLE_ENTITY, "fg", why);
        qrt_error_collect(q, e, HTTP_UNPROCESSABLE_ENTITY, "bg", why);
    }
    s->fg = apr_psprintf(q->r->pool, "#%06X", f);
    s->bg = apr_psprintf(q->r->pool, "#%06X", b);
}

/* The logo field: base64 of a PNG, checked and re-encoded (qrt_logo_sanitise). */
static void style_logo(qrt_req_t *q, qrt_err_t **e, qrt_style_t *s)
{
    const char *b64 = style_str(q, e, "logo"), *err = NULL;
    apr_size_t n = b64 ? strlen(b64) : 0;
    unsigned char *raw;
    int len;

    if (!n) {
        return;
    }
    if (n > STYLE_LOGO_B64_MAX + 4) {
        qrt_error_collect(q, e, HTTP_UNPROCESSABLE_ENTITY, "logo",
                          "The logo must be a PNG of at most 262144 bytes.");
        return;
    }
    if (strspn(b64, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
        != n || n % 4 != 0) {
        qrt_error_collect(q, e, HTTP_UNPROCESSABLE_ENTITY, "logo",
                          "The logo must be a PNG, in base64 in a JSON body or "
                          "as a file part of a multipart body.");
        return;
    }
    raw = apr_palloc(q->r->pool, apr_base64_decode_len(b64));
    len = apr_base64_decode_binary(raw, b64);
    if (qrt_logo_sanitise(q->r->pool, raw, (apr_size_t)len, &s->logo, &s->logo_len,
                          &s->logo_width, &s->logo_height, &err) != APR_SUCCESS) {
        qrt_error_collect(q, e, HTTP_UNPROCESSABLE_ENTITY, "logo", apr_pstrcat(q->r->pool,
                          "The logo cannot be used: ", err ? err : "unknown error", ".",
                          NULL));
        s->logo = NULL;
        s->logo_len = 0;
    }
}

/* The fields a style's body may have: those it sets, and those only read (ignored). */
static const char *const style_fields[] = {
    "name", "fg", "bg", "ecc", "margin", "logo", "has_logo", "created_at", "updated_at", NULL
};

static qrt_err_t *style_from_body(qrt_req_t *q, qrt_style_t *s)
{
    qrt_err_t *e = NULL;
    const char *ecc;

    memset(s, 0, sizeof(*s));
    if (!q->json && !q->form) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "name", "The name field is "
                               "required (send JSON or multipart/form-data).");
    }
    qrt_body_fields_known(q, &e, HTTP_UNPROCESSABLE_ENTITY, style_fields, "a style");
    s->name = style_str(q, &e, "name");
    if (!s->name || !*s->name) {
        qrt_error_collect(q, &e, HTTP_UNPROCESSABLE_ENTITY, "name",
                          "The name field is required.");
    }
    else if (!qrt_style_name_valid(s->name)) {
        qrt_error_collect(q, &e, HTTP_UNPROCESSABLE_ENTITY, "name",
                          "The name must be 1 to 64 characters of A-Z, a-z, "
                          "0-9, _ and -.");
    }
    style_colours(q, &e, s);
    ecc = style_str(q, &e, "ecc");
    s->ecc = QRT_QR_ECC_DEFAULT;
    if (ecc && (strlen(ecc) != 1 || !strchr("LMQHlmqh", ecc[0]))) {
        qrt_error_collect(q, &e, HTTP_UNPROCESSABLE_ENTITY, "ecc",
                          "The ecc must be one of L, M, Q, H.");
    }
    else if (ecc) {
        s->ecc = apr_toupper(ecc[0]);
    }
    s->margin = style_margin(q, &e);
    style_logo(q, &e, s);
    if (s->logo) {
        s->ecc = 'H';               /* a logo hides modules: the most correction */
    }
    return e;
}

qrt_err_t *qrt_style_create(qrt_req_t *q)
{
    qrt_style_t s, got;
    int created = 0;
    qrt_err_t *e = style_from_body(q, &s);
    apr_status_t rv;

    if (e) {
        return e;
    }
    /* answered from what the transaction wrote: a DELETE of the name committed right
     * after it must not turn the answer into a store error */
    rv = qrt_store_style_put(&q->db, q->r->pool, q->auth.account_id, &s,
                             QRT_STYLE_PER_ACCOUNT, &created, &got);
    if (rv == APR_ENOSPC) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "name",
                               apr_psprintf(q->r->pool, "This account has %d styles, the "
                               "most it may keep: delete one or replace one by its name.",
                               QRT_STYLE_PER_ACCOUNT));
    }
    if (rv != APR_SUCCESS) {
        return qrt_error_store(q, "storing a style");
    }
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, q->r, "QRT00930: style %s %s (%s logo)",
                  s.name, created ? "created" : "replaced", s.logo ? "with a" : "no");
    return qrt_respond_json(q, created ? HTTP_CREATED : HTTP_OK,
                            style_json(q->r->pool, &got, 0));
}

/* ---- GET, DELETE ------------------------------------------------------------------ */

qrt_err_t *qrt_style_list(qrt_req_t *q)
{
    apr_array_header_t *list;
    json_t *data = json_array(), *j = json_object();
    int i;

    if (qrt_store_style_list(&q->db, q->r->pool, q->auth.account_id, &list)
        != APR_SUCCESS) {
        json_decref(data);
        json_decref(j);
        return qrt_error_store(q, "listing styles");
    }
    for (i = 0; i < list->nelts; i++) {
        json_array_append_new(data, style_json(q->r->pool,
                                               &APR_ARRAY_IDX(list, i, qrt_style_t), 0));
    }
    json_object_set_new(j, "data", data);
    return qrt_respond_json(q, HTTP_OK, j);
}

static qrt_err_t *style_not_found(qrt_req_t *q, const char *name)
{
    return qrt_error(q, HTTP_NOT_FOUND, qrt_style_name_valid(name)
                     ? apr_psprintf(q->r->pool, "No style named %s.", name)
                     : "No style of that name (names are 1 to 64 of A-Z, a-z, 0-9, _ and -).");
}

qrt_err_t *qrt_style_show(qrt_req_t *q)
{
    qrt_style_t s;
    apr_status_t rv = APR_NOTFOUND;

    if (qrt_style_name_valid(q->seg[0])) {
        rv = qrt_store_style_get(&q->db, q->r->pool, q->auth.account_id, q->seg[0], &s);
    }
    if (rv == APR_NOTFOUND) {
        return style_not_found(q, q->seg[0]);
    }
    if (rv != APR_SUCCESS) {
        return qrt_error_store(q, "reading a style");
    }
    return qrt_respond_json(q, HTTP_OK, style_json(q->r->pool, &s, 1));
}

qrt_err_t *qrt_style_delete(qrt_req_t *q)
{
    apr_status_t rv = APR_NOTFOUND;

    if (qrt_style_name_valid(q->seg[0])) {
        rv = qrt_store_style_delete(&q->db, q->r->pool, q->auth.account_id, q->seg[0]);
    }
    if (rv == APR_NOTFOUND) {
        return style_not_found(q, q->seg[0]);
    }
    if (rv != APR_SUCCESS) {
        return qrt_error_store(q, "deleting a style");
    }
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, q->r, "QRT00931: style %s deleted",
                  q->seg[0]);
    q->r->status = HTTP_NO_CONTENT;
    return NULL;
}

/* ---- a style applied to an image ---------------------------------------------------- */

/* A style as an image needs it: its logo decoded to RGBA. Each child keeps the last
 * STYLE_CACHE_SLOTS it used (at most STYLE_CACHE_BYTES of pixels) under the style's
 * version, so an image costs one small query, not a PNG decode. */
#define STYLE_CACHE_SLOTS 16
#define STYLE_CACHE_BYTES (16 * 1024 * 1024)

typedef struct {
    apr_int64_t account_id, version;   /* version 0: an empty slot */
    char name[QRT_STYLE_NAME_MAX + 1];
    char fg[8], bg[8];
    char ecc;
    int margin;
    int width, height;                 /* the logo's, 0 without one */
    unsigned char *rgba;               /* the pixels (in pixels->rgba when cached) */
    struct style_pixels *pixels;       /* the cache's shared copy, or NULL */
    apr_uint64_t used;                 /* when it was last used (a counter) */
} style_slot_t;

/* A logo's pixels, shared read-only by the cache and the requests drawing with it: the
 * last of them to let go frees it, so a request never copies megabytes of RGBA. */
typedef struct style_pixels {
    int refs;                          /* under style_cache_lock */
    unsigned char rgba[];
} style_pixels;

static style_slot_t style_cache[STYLE_CACHE_SLOTS];
static apr_size_t style_cache_bytes;
static apr_uint64_t style_cache_clock;
static pthread_mutex_t style_cache_lock = PTHREAD_MUTEX_INITIALIZER;

static apr_size_t style_slot_bytes(const style_slot_t *s)
{
    return (apr_size_t)s->width * s->height * 4;
}

/* Drops one reference to px; the caller holds style_cache_lock. */
static void style_pixels_drop(style_pixels *px)
{
    if (px && --px->refs == 0) {
        free(px);
    }
}

static apr_status_t style_pixels_release(void *data)
{
    pthread_mutex_lock(&style_cache_lock);
    style_pixels_drop(data);
    pthread_mutex_unlock(&style_cache_lock);
    return APR_SUCCESS;
}

static void style_slot_free(style_slot_t *s)
{
    style_cache_bytes -= style_slot_bytes(s);
    style_pixels_drop(s->pixels);
    memset(s, 0, sizeof(*s));
}

/* A copy of the cached slot for (account, name, version) into *out, sharing its pixels
 * until p is cleared: 1, or 0 when it is not cached. */
static int style_cache_get(apr_pool_t *p, apr_int64_t account, const char *name,
                           apr_int64_t version, style_slot_t *out)
{
    int i, hit = 0;

    pthread_mutex_lock(&style_cache_lock);
    for (i = 0; i < STYLE_CACHE_SLOTS; i++) {
        style_slot_t *s = &style_cache[i];

        if (s->version == version && s->account_id == account && !strcmp(s->name, name)) {
            *out = *s;
            if (s->pixels) {
                s->pixels->refs++;
                apr_pool_cleanup_register(p, s->pixels, style_pixels_release,
                                          apr_pool_cleanup_null);
            }
            s->used = ++style_cache_clock;
            hit = 1;
            break;
        }
    }
    pthread_mutex_unlock(&style_cache_lock);
    return hit;
}

/* Keeps a copy of in (replacing older versions of the same style, then the least
 * recently used slots while the pixels would pass STYLE_CACHE_BYTES). */
static void style_cache_put(const style_slot_t *in)
{
    apr_size_t bytes = style_slot_bytes(in);
    style_slot_t *free_slot = NULL;
    int i;

    if (bytes > STYLE_CACHE_BYTES) {
        return;
    }
    pthread_mutex_lock(&style_cache_lock);
    for (i = 0; i < STYLE_CACHE_SLOTS; i++) {
        style_slot_t *s = &style_cache[i];

        if (s->version && s->account_id == in->account_id && !strcmp(s->name, in->name)) {
            style_slot_free(s);
        }
    }
    for (;;) {
        style_slot_t *lru = NULL;

        free_slot = NULL;
        for (i = 0; i < STYLE_CACHE_SLOTS; i++) {
            style_slot_t *s = &style_cache[i];

            if (!s->version) {
                free_slot = free_slot ? free_slot : s;
            }
            else if (!lru || s->used < lru->used) {
                lru = s;
            }
        }
        if (free_slot && style_cache_bytes + bytes <= STYLE_CACHE_BYTES) {
            break;
        }
        style_slot_free(lru);
    }
    *free_slot = *in;
    free_slot->rgba = NULL;
    free_slot->pixels = NULL;
    if (bytes && (free_slot->pixels = malloc(sizeof(style_pixels) + bytes)) != NULL) {
        free_slot->pixels->refs = 1;
        memcpy(free_slot->pixels->rgba, in->rgba, bytes);
        free_slot->rgba = free_slot->pixels->rgba;
        style_cache_bytes += bytes;
    }
    if (bytes && !free_slot->rgba) {
        memset(free_slot, 0, sizeof(*free_slot));
    }
    else {
        free_slot->used = ++style_cache_clock;
    }
    pthread_mutex_unlock(&style_cache_lock);
}

/* The style (its logo decoded) from the cache or the database: APR_SUCCESS,
 * APR_NOTFOUND, or the store's error. */
static apr_status_t style_load(qrt_req_t *q, const char *name, style_slot_t *out)
{
    apr_pool_t *p = q->r->pool;
    apr_int64_t account = q->auth.account_id, version = 0;
    qrt_style_t s;
    const unsigned char *rgba = NULL;
    const char *err = NULL;
    apr_status_t rv = qrt_store_style_version(&q->db, p, account, name, &version);

    if (rv != APR_SUCCESS || version == 0) {
        return rv != APR_SUCCESS ? rv : APR_NOTFOUND;
    }
    if (style_cache_get(p, account, name, version, out)) {
        return APR_SUCCESS;
    }
    rv = qrt_store_style_get(&q->db, p, account, name, &s);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    memset(out, 0, sizeof(*out));
    out->account_id = account;
    out->version = s.version;
    apr_cpystrn(out->name, s.name, sizeof(out->name));
    apr_cpystrn(out->fg, s.fg, sizeof(out->fg));
    apr_cpystrn(out->bg, s.bg, sizeof(out->bg));
    out->ecc = s.ecc;
    out->margin = s.margin;
    if (s.logo && qrt_logo_decode(p, s.logo, s.logo_len, &out->width, &out->height,
                                  &rgba, &err) != APR_SUCCESS) {
        /* stored only after the same decode succeeded: the row was changed by hand */
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, q->r, "QRT00932: the logo of style %s "
                      "cannot be decoded (%s): the style is used without it", name,
                      err ? err : "unknown");
        out->width = out->height = 0;
        rgba = NULL;
    }
    out->rgba = (unsigned char *)rgba;
    style_cache_put(out);
    return APR_SUCCESS;
}

/* 1 when the request itself gave parameter field (query, form or JSON body). */
static int style_given(qrt_req_t *q, const char *field)
{
    return qrt_query(q, field) || (q->form && apr_table_get(q->form, field))
           || (q->json && json_object_get(q->json, field));
}

static void style_fill(qrt_req_t *q, const style_slot_t *s, qrt_render_opts_t *o)
{
    if (!style_given(q, "margin")) {
        o->margin = s->margin;
    }
    if (!style_given(q, "ecc")) {
        o->ecc = s->ecc;
    }
    if (!style_given(q, "fg")) {
        qrt_colour_parse(s->fg, &o->fg);
    }
    if (!style_given(q, "bg")) {
        qrt_colour_parse(s->bg, &o->bg);
    }
    if (s->rgba) {
        qrt_logo_t *logo = apr_palloc(q->r->pool, sizeof(*logo));

        logo->width = s->width;
        logo->height = s->height;
        logo->rgba = s->rgba;
        o->logo = logo;
    }
    if (s->rgba) {
        o->ecc = 'H';
    }
}

qrt_err_t *qrt_style_apply(qrt_req_t *q, const char *name, qrt_render_opts_t *o)
{
    style_slot_t s;
    apr_status_t rv;

    if (name && !*name) {
        name = NULL;                /* style= empty: as if not given */
    }
    if (name && !qrt_style_name_valid(name)) {
        return style_not_found(q, name);
    }
    rv = style_load(q, name ? name : QRT_STYLE_DEFAULT, &s);
    if (rv == APR_NOTFOUND) {
        return name ? style_not_found(q, name) : NULL;
    }
    if (rv != APR_SUCCESS) {
        return qrt_error_store(q, "reading a style");
    }
    style_fill(q, &s, o);
    return NULL;
}
