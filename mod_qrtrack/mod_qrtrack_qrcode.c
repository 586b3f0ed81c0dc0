/* mod_qrtrack_qrcode: POST /qrCode (spec endpoint 11), a plain QR image for a URL
 * or a Wi-Fi network. Untracked: it creates no tracker. Every bad field is a 400 (a fg/bg
 * pair of too little contrast: 422, as on every image endpoint). */
#include <string.h>
#include <apr_strings.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_http.h"
#include "mod_qrtrack_qrcode.h"
#include "mod_qrtrack_image.h"
#include "qrt_valid.h"
#include "qrt_wifi.h"

APLOG_USE_MODULE(qrtrack);

#define QRCODE_FIELD_MAX 1024

/* A form field (multipart or urlencoded), or a JSON field (a number or boolean as
 * text: a JSON body may send "size": 300 or "network_hidden": true). */
static const char *qrcode_field(qrt_req_t *q, const char *name)
{
    return qrt_body_str(q, name);
}

/* The fields of the body; in a JSON body any other is 400, as a list or an object for
 * one of these is (read as absent, it would draw the default unseen). */
static const char *const qrcode_fields[] = {
    "type", "url", "network_name", "network_password", "network_encryption",
    "network_hidden", "size", "margin", "ecc", "style", "format", "size_mm", "fg", "bg", NULL
};

static void qrcode_json_check(qrt_req_t *q, qrt_err_t **e)
{
    int i;

    qrt_body_fields_known(q, e, HTTP_BAD_REQUEST, qrcode_fields, "a QR code request");
    for (i = 0; q->json && qrcode_fields[i]; i++) {
        json_t *v = json_object_get(q->json, qrcode_fields[i]);

        if (json_is_array(v) || json_is_object(v)) {
            qrt_error_collect(q, e, HTTP_BAD_REQUEST, qrcode_fields[i],
                              apr_psprintf(q->r->pool, "The %s field "
                              "must be a string or a number.", qrcode_fields[i]));
        }
    }
}

/* A text field: valid UTF-8 without control characters, 1..QRCODE_FIELD_MAX bytes. */
static const char *qrcode_text(qrt_req_t *q, qrt_err_t **e, const char *field,
                               int required)
{
    const char *v = qrcode_field(q, field);
    apr_size_t n;

    if (!v || !*v) {
        if (required) {
            qrt_error_collect(q, e, HTTP_BAD_REQUEST, field, apr_psprintf(q->r->pool,
                              "The %s field is required.", field));
        }
        return NULL;
    }
    n = strlen(v);
    if (n > QRCODE_FIELD_MAX || qrt_valid_text(v, n, 0)) {
        qrt_error_collect(q, e, HTTP_BAD_REQUEST, field, apr_psprintf(q->r->pool,
                          "The %s field must be at "
                          "most %d bytes of valid UTF-8 text without control characters.",
                          field, QRCODE_FIELD_MAX));
        return NULL;
    }
    return v;
}

/* The body's fields but style (the image's other options checked as if none were named). */
static const char *qrcode_no_style(qrt_req_t *q, const char *name)
{
    return strcmp(name, "style") ? qrt_image_from_body(q, name) : NULL;
}

qrt_err_t *qrt_qrcode_plain(qrt_req_t *q)
{
    qrt_err_t *e = NULL, *unknown_style = NULL;
    qrt_render_opts_t o;
    const char *type = qrcode_field(q, "type"), *text = NULL;

    if (!q->form && !q->json) {
        return qrt_error_field(q, HTTP_BAD_REQUEST, "type", "The type field is required "
                               "(send multipart/form-data, a urlencoded form or JSON).");
    }
    e = qrt_image_opts(q, HTTP_BAD_REQUEST, qrt_image_from_body, &o);
    if (e && e->status == HTTP_NOT_FOUND) {
        /* An unknown style is 404 alone; with fields that are invalid besides, 400 names
         * them and the style. The other options are checked without it. */
        unknown_style = e;
        e = qrt_image_opts(q, HTTP_BAD_REQUEST, qrcode_no_style, &o);
    }
    if (e && e->status != HTTP_BAD_REQUEST && e->status != HTTP_UNPROCESSABLE_ENTITY) {
        return e;                   /* (the store's failure) */
    }
    qrcode_json_check(q, &e);
    if (!type || !*type) {
        qrt_error_collect(q, &e, HTTP_BAD_REQUEST, "type", "The type field is required.");
    }
    else if (!strcmp(type, "url")) {
        const char *url = qrcode_field(q, "url"), *why;

        if (!url || !*url) {
            qrt_error_collect(q, &e, HTTP_BAD_REQUEST, "url", "The url field is required.");
        }
        else if ((why = qrt_valid_redirect_url(url)) != NULL) {
            qrt_error_collect(q, &e, HTTP_BAD_REQUEST, "url", apr_pstrcat(q->r->pool,
                              "The url ", why, ".", NULL));
        }
        else {
            text = url;
        }
    }
    else if (!strcmp(type, "wifi")) {
        const char *name = qrcode_text(q, &e, "network_name", 1);
        const char *enc_in = qrcode_field(q, "network_encryption");
        const char *enc = qrt_wifi_encryption(enc_in);
        const char *hidden = qrcode_field(q, "network_hidden");
        const char *password;
        int is_hidden = 0;

        if (!enc) {
            qrt_error_collect(q, &e, HTTP_BAD_REQUEST, "network_encryption",
                              "The network_encryption must be "
                              "one of WPA, WPA2, WPA3, WEP, nopass.");
        }
        password = qrcode_text(q, &e, "network_password",
                               enc && strcmp(enc, "nopass") != 0);
        if (hidden && *hidden) {
            if (!strcasecmp(hidden, "true") || !strcmp(hidden, "1")) {
                is_hidden = 1;
            }
            else if (strcasecmp(hidden, "false") && strcmp(hidden, "0")) {
                qrt_error_collect(q, &e, HTTP_BAD_REQUEST, "network_hidden",
                                  "The network_hidden field must be true or false.");
            }
        }
        if (!e) {
            text = qrt_wifi_payload(q->r->pool, name, password, enc, is_hidden);
        }
    }
    else {
        qrt_error_collect(q, &e, HTTP_BAD_REQUEST, "type",
                          "The type must be one of: url, wifi.");
    }
    if (unknown_style) {
        if (!e) {
            return unknown_style;
        }
        qrt_error_collect(q, &e, HTTP_BAD_REQUEST, "style", unknown_style->message);
    }
    if (e) {
        return e;
    }
    return qrt_respond_image(q, text, &o, HTTP_BAD_REQUEST);
}
