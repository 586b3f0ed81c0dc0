/* libFuzzer target for qrt_logo.c, a style's logo from the network.
 *
 * The input is the uploaded file. Either a clear error, or a PNG of at most
 * QRT_LOGO_MAX_DIM pixels a side that qrt_logo_decode reads back to the same
 * dimensions and the same RGBA pixels, and whose chunks are IHDR, IDAT and IEND
 * only. (A corpus seeded with real PNGs goes much further than random bytes.) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <apr_general.h>
#include "qrt_logo.h"

/* 1 when every chunk of png (after the signature) is IHDR, IDAT or IEND. */
static int only_pixels(const unsigned char *png, apr_size_t len)
{
    apr_size_t off = 8;

    while (off + 12 <= len) {
        apr_size_t n = ((apr_size_t)png[off] << 24) | (png[off + 1] << 16)
                       | (png[off + 2] << 8) | png[off + 3];

        if (memcmp(png + off + 4, "IHDR", 4) && memcmp(png + off + 4, "IDAT", 4)
            && memcmp(png + off + 4, "IEND", 4)) {
            return 0;
        }
        off += 12 + n;
    }
    return off == len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int init;
    apr_pool_t *p;
    const unsigned char *png = NULL, *rgba1, *rgba2;
    const char *err = NULL;
    apr_size_t len = 0;
    int w = 0, h = 0, w2 = 0, h2 = 0;
    apr_status_t rv;

    if (!init) {
        apr_initialize();
        init = 1;
    }
    apr_pool_create(&p, NULL);
    rv = qrt_logo_sanitise(p, data, size, &png, &len, &w, &h, &err);
    if (rv != APR_SUCCESS) {
        if (!err || !*err || (rv != APR_EINVAL && rv != APR_ENOMEM)) {
            abort();
        }
        apr_pool_destroy(p);
        return 0;
    }
    if (w < 1 || h < 1 || w > QRT_LOGO_MAX_DIM || h > QRT_LOGO_MAX_DIM
        || !only_pixels(png, len)) {
        abort();
    }
    if (qrt_logo_decode(p, data, size, &w, &h, &rgba1, &err) != APR_SUCCESS
        || qrt_logo_decode(p, png, len, &w2, &h2, &rgba2, &err) != APR_SUCCESS
        || w2 != w || h2 != h || memcmp(rgba1, rgba2, (size_t)w * h * 4) != 0) {
        abort();
    }
    apr_pool_destroy(p);
    return 0;
}
