/* libFuzzer target for qrt_qr.c, QR code to PNG.
 *
 * Byte 0 picks the error correction and the margin, byte 1 the size (64..319 px,
 * small enough to run fast); the rest is the text. Either a clear error, or a PNG
 * that libpng reads back: square, at least the size asked, 1-bit grey whose every
 * pixel is black or white, with a white quiet zone of the margin asked. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <png.h>
#include <apr_general.h>
#include "qrt_qr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int init;
    static const char eccs[] = "LMQH";
    apr_pool_t *p;
    qrt_qr_opts_t o;
    const char *png = NULL, *err = NULL;
    apr_size_t len = 0;
    apr_status_t rv;
    png_image img;
    png_bytep px;
    size_t i;

    if (!init) {
        apr_initialize();
        init = 1;
    }
    if (size < 2) {
        return 0;
    }
    apr_pool_create(&p, NULL);
    qrt_qr_opts_default(&o);
    o.ecc = eccs[data[0] & 3];
    o.margin = (data[0] >> 2) % (QRT_QR_MARGIN_MAX + 1);
    o.size = QRT_QR_SIZE_MIN + data[1];
    rv = qrt_qr_png_buf(p, (const char *)data + 2, size - 2, &o, &png, &len, &err);
    if (rv != APR_SUCCESS) {
        if (!err || !*err || (rv != APR_EINVAL && rv != APR_ENOMEM)) {
            abort();
        }
        apr_pool_destroy(p);
        return 0;
    }
    memset(&img, 0, sizeof(img));
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&img, png, len)) {
        abort();
    }
    if (img.width != img.height || img.width < (png_uint_32)o.size) {
        abort();
    }
    img.format = PNG_FORMAT_GRAY;
    px = malloc(PNG_IMAGE_SIZE(img));
    if (!px || !png_image_finish_read(&img, NULL, px, 0, NULL)) {
        abort();
    }
    for (i = 0; i < PNG_IMAGE_SIZE(img); i++) {
        if (px[i] != 0 && px[i] != 255) {
            abort();
        }
    }
    /* The first row is quiet zone when there is a margin. */
    if (o.margin > 0) {
        for (i = 0; i < img.width; i++) {
            if (px[i] != 255) {
                abort();
            }
        }
    }
    free(px);
    apr_pool_destroy(p);
    return 0;
}
