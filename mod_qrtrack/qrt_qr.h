/* mod_qrtrack core: QR code to PNG (libqrencode + libpng).
 *
 * No httpd header here; the module, the admin tool and the unit tests
 * all link this file.
 */

#ifndef QRT_QR_H
#define QRT_QR_H

#include "apr.h"
#include "apr_errno.h"
#include "apr_pools.h"

#define QRT_QR_SIZE_MIN      64
#define QRT_QR_SIZE_MAX      2048
#define QRT_QR_SIZE_DEFAULT  300
#define QRT_QR_MARGIN_MIN    0
#define QRT_QR_MARGIN_MAX    16
#define QRT_QR_MARGIN_DEFAULT 4
#define QRT_QR_ECC_DEFAULT   'M'

/* Sink for PNG bytes; return APR_SUCCESS to go on, anything else aborts
 * the image and becomes the return value of qrt_qr_png(). */
typedef apr_status_t (*qrt_write_fn)(void *ctx, const void *buf,
                                     apr_size_t len);

typedef struct {
    int size;    /* wanted image width/height in pixels, 64..2048 (default 300) */
    int margin;  /* quiet zone in modules, 0..16 (default 4) */
    char ecc;    /* 'L','M','Q','H' (default 'M') */
} qrt_qr_opts_t;

/* Fill *o with the defaults: size 300, margin 4, ecc 'M'. */
void qrt_qr_opts_default(qrt_qr_opts_t *o);

/* Encode len bytes of text (8-bit mode; works for any bytes incl. UTF-8)
 * and write a 1-bit grayscale PNG through write(ctx,...). Text that is
 * non-ASCII well-formed UTF-8 is marked with an ECI 26 (UTF-8) header so
 * readers do not guess another character set; ASCII and other bytes are
 * plain 8-bit data. o may be NULL
 * for the defaults. Each module is a whole number of pixels; the image is
 * exactly size x size unless the code needs more pixels at scale 1, then
 * it is larger. Thread-safe.
 * Returns APR_SUCCESS; APR_EINVAL for bad input (empty or too long data,
 * options out of range); APR_ENOMEM; APR_EGENERAL for a libpng failure;
 * or the status returned by write. On failure *err (if err is not NULL)
 * is a short English message, e.g. "data too long for a QR code". Bytes
 * already written before a failure are not taken back. */
apr_status_t qrt_qr_png(apr_pool_t *p, const char *text, apr_size_t len,
                        const qrt_qr_opts_t *o, qrt_write_fn write,
                        void *ctx, const char **err);

/* Same as qrt_qr_png(), collecting the PNG into memory from pool p:
 * *png and *png_len are set on success only. */
apr_status_t qrt_qr_png_buf(apr_pool_t *p, const char *text, apr_size_t len,
                            const qrt_qr_opts_t *o, const char **png,
                            apr_size_t *png_len, const char **err);

/* The modules of text's QR code at ecc ('L','M','Q','H'), one byte each, row by row,
 * 1 = dark, in pool memory; *width modules a side (no quiet zone). Same encoding
 * (and errors) as qrt_qr_png(); every image format draws from this. */
apr_status_t qrt_qr_encode(apr_pool_t *p, const char *text, apr_size_t len, char ecc,
                           unsigned char **mods, int *width, const char **err);

#endif /* QRT_QR_H */
