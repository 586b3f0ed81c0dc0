/* libFuzzer target for qrt_render.c, every image format with colours and a logo.
 *
 * Byte 0 picks the format (2 bits), the error correction (2 bits), a logo (1 bit) and
 * the margin; byte 1 the PNG size (64..319 px); bytes 2-3 the logo's width and height
 * (1..16 px, its pixels the input's bytes over again); bytes 4-9 fg and bg. The rest is
 * the text. Either a clear error, or an image of the format: a PNG that libpng reads
 * back at least the size asked, with a first row of bg when there is a margin; an SVG
 * of one path and one rect that ends its document; a PDF or EPS with its header. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <png.h>
#include <apr_general.h>
#include <apr_strings.h>
#include "qrt_render.h"

typedef struct {
    apr_pool_t *p;
    char *buf;
    apr_size_t len, cap;
} fz_mem_t;

static apr_status_t fz_write(void *ctx, const void *buf, apr_size_t len)
{
    fz_mem_t *m = ctx;

    if (m->len + len + 1 > m->cap) {
        apr_size_t cap = (m->len + len + 1) * 2;
        char *nb = apr_palloc(m->p, cap);

        if (m->len) {
            memcpy(nb, m->buf, m->len);
        }
        m->buf = nb;
        m->cap = cap;
    }
    memcpy(m->buf + m->len, buf, len);
    m->len += len;
    m->buf[m->len] = '\0';
    return APR_SUCCESS;
}

static int fz_count(const char *s, const char *needle)
{
    int n = 0;

    while ((s = strstr(s, needle)) != NULL) {
        n++;
        s++;
    }
    return n;
}

static void fz_check_png(const fz_mem_t *m, const qrt_render_opts_t *o)
{
    png_image img;
    png_bytep px;
    size_t i;

    memset(&img, 0, sizeof(img));
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&img, m->buf, m->len)) {
        abort();
    }
    if (img.width != img.height || img.width < (png_uint_32)o->size) {
        abort();
    }
    img.format = PNG_FORMAT_RGB;
    px = malloc(PNG_IMAGE_SIZE(img));
    if (!px || !png_image_finish_read(&img, NULL, px, 0, NULL)) {
        abort();
    }
    for (i = 0; o->margin > 0 && i < img.width; i++) {
        unsigned rgb = (unsigned)px[3 * i] << 16 | px[3 * i + 1] << 8 | px[3 * i + 2];

        if (rgb != o->bg) {
            abort();
        }
    }
    free(px);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int init;
    static const char eccs[] = "LMQH";
    apr_pool_t *p;
    qrt_render_opts_t o;
    qrt_logo_t logo;
    fz_mem_t m;
    const char *err = NULL;
    apr_status_t rv;

    if (!init) {
        apr_initialize();
        init = 1;
    }
    if (size < 10) {
        return 0;
    }
    apr_pool_create(&p, NULL);
    qrt_render_opts_default(&o);
    o.format = (qrt_img_format_t)(data[0] & 3);
    o.ecc = eccs[data[0] >> 2 & 3];
    o.margin = (data[0] >> 5) * 2;
    o.size = QRT_QR_SIZE_MIN + data[1];
    o.fg = (unsigned)data[4] << 16 | data[5] << 8 | data[6];
    o.bg = (unsigned)data[7] << 16 | data[8] << 8 | data[9];
    if (data[0] & 0x10) {
        unsigned char *px;
        int i;

        logo.width = 1 + data[2] % 16;
        logo.height = 1 + data[3] % 16;
        px = apr_palloc(p, (apr_size_t)logo.width * logo.height * 4);
        for (i = 0; i < logo.width * logo.height * 4; i++) {
            px[i] = data[i % size];
        }
        logo.rgba = px;
        o.logo = &logo;
    }
    memset(&m, 0, sizeof(m));
    m.p = p;
    rv = qrt_render(p, (const char *)data + 10, size - 10, &o, fz_write, &m, &err);
    if (rv != APR_SUCCESS) {
        if (!err || !*err || (rv != APR_EINVAL && rv != APR_ENOMEM)) {
            abort();
        }
        apr_pool_destroy(p);
        return 0;
    }
    switch (o.format) {
    case QRT_FMT_PNG:
        fz_check_png(&m, &o);
        break;
    case QRT_FMT_SVG:
        if (fz_count(m.buf, "<path") != 1 || fz_count(m.buf, "<rect") != 1
            || m.len < 7 || strcmp(m.buf + m.len - 7, "</svg>\n")) {
            abort();
        }
        break;
    case QRT_FMT_PDF:
        if (m.len < 5 || memcmp(m.buf, "%PDF-", 5)) {
            abort();
        }
        break;
    case QRT_FMT_EPS:
        if (m.len < 23 || memcmp(m.buf, "%!PS-Adobe-3.0 EPSF-3.0", 23)) {
            abort();
        }
        break;
    }
    apr_pool_destroy(p);
    return 0;
}
