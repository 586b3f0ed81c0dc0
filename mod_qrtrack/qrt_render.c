/* mod_qrtrack core: print-grade QR images (PNG, SVG, PDF, EPS) from one module grid.
 *
 * The grid (qrt_qr_encode) and the logo's pad are computed once; each format then walks
 * the same runs of dark modules: PNG rows through libpng, SVG as one <path> of runs,
 * PDF and EPS as one filled cairo path of the same runs. */

#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cairo.h>
#include <cairo-pdf.h>
#include <cairo-ps.h>
#include <png.h>
#include <zlib.h>

#include "apr_base64.h"
#include "apr_lib.h"
#include "apr_strings.h"

#include "qrt_render.h"

/* Where a logo goes: a square pad of bg colour on whole modules, the logo fitted in it. */
typedef struct {
    const unsigned char *mods;
    int width;              /* modules a side, without the quiet zone */
    int margin;
    int total;              /* width + 2 * margin */
    int pad0, pad1;         /* pad's modules [pad0, pad1) in symbol coordinates; 0,0 = none */
    double lx, ly, lw, lh;  /* the logo's box in modules of the whole image */
} render_grid_t;

typedef struct {
    qrt_write_fn write;
    void *ctx;
    apr_status_t rv;        /* first failed write */
    char buf[8192];
    apr_size_t n;
    apr_size_t sent;        /* bytes written out of buf so far */
    char hires[80];         /* EPS: the line to put after %%BoundingBox; "" once done */
} render_out_t;

static apr_status_t render_fail(apr_status_t rv, const char **err, const char *msg)
{
    if (err) {
        *err = msg;
    }
    return rv;
}

void qrt_render_opts_default(qrt_render_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->format = QRT_FMT_PNG;
    o->size = QRT_QR_SIZE_DEFAULT;
    o->size_mm = 0;
    o->margin = QRT_QR_MARGIN_DEFAULT;
    o->ecc = QRT_QR_ECC_DEFAULT;
    o->fg = 0x000000;
    o->bg = 0xffffff;
    o->logo = NULL;
}

static const char *const render_mimes[] = {
    "image/png", "image/svg+xml", "application/pdf", "application/postscript"
};
static const char *const render_exts[] = { "png", "svg", "pdf", "eps" };

const char *qrt_render_mime(qrt_img_format_t f)
{
    return (unsigned)f < 4 ? render_mimes[f] : render_mimes[0];
}

const char *qrt_render_ext(qrt_img_format_t f)
{
    return (unsigned)f < 4 ? render_exts[f] : render_exts[0];
}

int qrt_render_format_parse(const char *s, qrt_img_format_t *f)
{
    int i;

    for (i = 0; s && i < 4; i++) {
        if (!strcasecmp(s, render_exts[i])) {
            *f = (qrt_img_format_t)i;
            return 1;
        }
    }
    return 0;
}

/* ---- colours ------------------------------------------------------------------- */

int qrt_colour_parse(const char *s, unsigned *rgb)
{
    unsigned v = 0;
    int i;

    if (!s || s[0] != '#' || strlen(s) != 7) {
        return 0;
    }
    for (i = 1; i < 7; i++) {
        int c = (unsigned char)s[i];

        if (!apr_isxdigit(c)) {
            return 0;
        }
        v = (v << 4) | (unsigned)(apr_isdigit(c) ? c - '0' : (apr_tolower(c) - 'a' + 10));
    }
    *rgb = v;
    return 1;
}

static double render_channel(unsigned c)
{
    double v = (double)(c & 0xff) / 255.0;

    return v <= 0.03928 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4);
}

double qrt_luminance(unsigned rgb)
{
    return 0.2126 * render_channel(rgb >> 16) + 0.7152 * render_channel(rgb >> 8)
           + 0.0722 * render_channel(rgb);
}

double qrt_contrast_ratio(unsigned fg, unsigned bg)
{
    double a = qrt_luminance(fg), b = qrt_luminance(bg);

    return a > b ? (a + 0.05) / (b + 0.05) : (b + 0.05) / (a + 0.05);
}

/* ---- the grid ------------------------------------------------------------------ */

static int render_dark(const render_grid_t *g, int x, int y)
{
    if (g->pad1 > g->pad0 && x >= g->pad0 && x < g->pad1 && y >= g->pad0 && y < g->pad1) {
        return 0;
    }
    return g->mods[(apr_size_t)y * g->width + x];
}

/* The pad: the largest square of whole modules, centred, at most 20 % of the symbol;
 * the logo keeps its aspect ratio inside it, a module of pad around it. */
static void render_logo_box(render_grid_t *g, const qrt_logo_t *logo)
{
    int w = g->width, pad = (int)floor(w * sqrt(0.2));
    double inner, k;

    if ((w - pad) % 2) {
        pad--;
    }
    while (pad > 0 && (double)pad * pad > 0.2 * w * w) {
        pad -= 2;
    }
    if (pad < 3) {
        return;
    }
    g->pad0 = (w - pad) / 2;
    g->pad1 = g->pad0 + pad;
    inner = pad - 2;
    k = logo->width >= logo->height ? inner / logo->width : inner / logo->height;
    g->lw = logo->width * k;
    g->lh = logo->height * k;
    g->lx = g->margin + g->pad0 + (pad - g->lw) / 2;
    g->ly = g->margin + g->pad0 + (pad - g->lh) / 2;
}

/* ---- buffered text output -------------------------------------------------------- */

static void out_flush(render_out_t *o)
{
    if (o->n && o->rv == APR_SUCCESS) {
        o->rv = o->write(o->ctx, o->buf, o->n);
    }
    o->sent += o->n;
    o->n = 0;
}

static void out_put(render_out_t *o, const char *s, apr_size_t len)
{
    if (len > sizeof(o->buf) - o->n) {
        out_flush(o);
        if (len > sizeof(o->buf)) {
            if (o->rv == APR_SUCCESS) {
                o->rv = o->write(o->ctx, s, len);
            }
            return;
        }
    }
    memcpy(o->buf + o->n, s, len);
    o->n += len;
}

static void out_str(render_out_t *o, const char *s)
{
    out_put(o, s, strlen(s));
}

/* ---- logo as PNG (SVG's data: URI) -------------------------------------------------- */

typedef struct {
    apr_pool_t *p;
    char *buf;
    apr_size_t len, cap;
} render_mem_t;

static apr_status_t render_mem_write(void *ctx, const void *buf, apr_size_t len)
{
    render_mem_t *m = ctx;

    if (m->len + len > m->cap) {
        apr_size_t cap = m->cap ? m->cap * 2 : 16384;
        char *nb;

        while (cap < m->len + len) {
            cap *= 2;
        }
        nb = apr_palloc(m->p, cap);
        if (m->len) {
            memcpy(nb, m->buf, m->len);
        }
        m->buf = nb;
        m->cap = cap;
    }
    memcpy(m->buf + m->len, buf, len);
    m->len += len;
    return APR_SUCCESS;
}

typedef struct {
    render_out_t *out;
    char msg[120];
} render_png_io_t;

static void render_png_error(png_structp png, png_const_charp msg)
{
    render_png_io_t *io = png_get_error_ptr(png);

    if (io && !io->msg[0]) {
        apr_cpystrn(io->msg, msg ? msg : "unknown error", sizeof(io->msg));
    }
    png_longjmp(png, 1);
}

static void render_png_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

static void render_png_write(png_structp png, png_bytep data, png_size_t len)
{
    render_png_io_t *io = png_get_io_ptr(png);

    out_put(io->out, (const char *)data, len);
    if (io->out->rv != APR_SUCCESS) {
        png_error(png, "write failed");
    }
}

static void render_png_flush(png_structp png)
{
    (void)png;
}

/* Writes rows produced by row_fn(ctx, y, row) as a PNG of w x h, colour type type,
 * bit depth depth (palette: the 2 colours bg, fg). */
typedef void render_row_fn(void *ctx, png_uint_32 y, unsigned char *row);

static int render_png_rows(render_png_io_t *io, png_uint_32 w, png_uint_32 h, int depth,
                           int type, png_color *pal, int npal, render_row_fn *row_fn,
                           void *ctx, unsigned char *row)
{
    png_structp png;
    png_infop info;
    volatile int ok = 0;

    png = png_create_write_struct(PNG_LIBPNG_VER_STRING, io, render_png_error,
                                  render_png_warning);
    if (!png) {
        apr_cpystrn(io->msg, "cannot create PNG writer", sizeof(io->msg));
        return 0;
    }
    info = png_create_info_struct(png);
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        apr_cpystrn(io->msg, "cannot create PNG info", sizeof(io->msg));
        return 0;
    }
    if (setjmp(png_jmpbuf(png)) == 0) {
        png_uint_32 y;

        png_set_write_fn(png, io, render_png_write, render_png_flush);
        png_set_IHDR(png, info, w, h, depth, type, PNG_INTERLACE_NONE,
                     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
        if (type == PNG_COLOR_TYPE_PALETTE) {
            png_set_PLTE(png, info, pal, npal);
            png_set_filter(png, 0, PNG_FILTER_NONE);
            if (depth == 8) {
                /* a byte a pixel in runs: run-length matching is what deflate finds */
                png_set_compression_strategy(png, Z_RLE);
            }
        }
        else {
            /* SUB turns flat colour into zeros; one filter spares libpng trying five. */
            png_set_filter(png, 0, PNG_FILTER_SUB);
            png_set_compression_level(png, 3);
        }
        png_write_info(png, info);
        for (y = 0; y < h; y++) {
            row_fn(ctx, y, row);
            png_write_row(png, row);
        }
        png_write_end(png, info);
        ok = 1;
    }
    png_destroy_write_struct(&png, &info);
    return ok;
}

static void render_logo_row(void *ctx, png_uint_32 y, unsigned char *row)
{
    const qrt_logo_t *l = ctx;

    memcpy(row, l->rgba + (apr_size_t)y * l->width * 4, (apr_size_t)l->width * 4);
}

/* The logo as a PNG in pool memory (its pixels only, re-encoded). */
static apr_status_t render_logo_png(apr_pool_t *p, const qrt_logo_t *l, char **png,
                                    apr_size_t *len)
{
    render_mem_t m;
    render_out_t out;
    render_png_io_t io;
    unsigned char *row = apr_palloc(p, (apr_size_t)l->width * 4);

    memset(&m, 0, sizeof(m));
    m.p = p;
    memset(&out, 0, sizeof(out));
    out.write = render_mem_write;
    out.ctx = &m;
    memset(&io, 0, sizeof(io));
    io.out = &out;
    if (!render_png_rows(&io, l->width, l->height, 8, PNG_COLOR_TYPE_RGB_ALPHA, NULL, 0,
                         render_logo_row, (void *)l, row)) {
        return APR_EGENERAL;
    }
    out_flush(&out);
    *png = m.buf;
    *len = m.len;
    return APR_SUCCESS;
}

const char *qrt_render_logo_png64(apr_pool_t *p, const qrt_logo_t *logo)
{
    char *png, *b64;
    apr_size_t len;

    if (render_logo_png(p, logo, &png, &len) != APR_SUCCESS) {
        return NULL;
    }
    b64 = apr_palloc(p, apr_base64_encode_len((int)len));
    apr_base64_encode(b64, png, (int)len);
    return b64;
}

/* ---- PNG -------------------------------------------------------------------------- */

typedef struct {
    const render_grid_t *g;
    const qrt_render_opts_t *o;
    int scale, off;
    png_uint_32 img;
    int cur;                    /* module row in row (palette rows repeat); -2 = none */
    /* logo: the logo's pixel box and per-column source x; with an exact palette, the
     * box's pixels as palette indices (else RGB rows blend it row by row) */
    long bx0, by0, bx1, by1;
    int *srcx;
    unsigned char *boxidx;
    png_color pal[256];
    int npal;
} render_png_t;

/* A logo of few colours: the box blended over bg once, as indices of a palette of bg,
 * fg and the box's own colours (PNG at one byte a pixel, losslessly). 0 when the box
 * has more colours than a palette holds (the caller writes RGB). */
static int render_logo_palette(apr_pool_t *p, render_png_t *c)
{
    const qrt_logo_t *l = c->o->logo;
    long bw = c->bx1 - c->bx0, bh = c->by1 - c->by0, x, y;
    unsigned keys[512];
    unsigned char vals[512];
    unsigned cols[2];
    int k;

    memset(keys, 0xff, sizeof(keys));  /* 0xffffffff: empty (no 0xRRGGBB is) */
    cols[0] = c->o->bg;
    cols[1] = c->o->fg;
    c->npal = 0;
    c->boxidx = apr_palloc(p, (apr_size_t)(bw > 0 ? bw : 1) * (bh > 0 ? bh : 1));
    for (k = 0; k < 2 + bw * bh; k++) {
        unsigned rgb, h;

        if (k < 2) {
            rgb = cols[k];
        }
        else {
            const unsigned char *s;
            unsigned a, bg = c->o->bg, ch[3];
            int i;

            x = (k - 2) % bw;
            y = (k - 2) / bw;
            s = l->rgba + ((apr_size_t)(y * l->height / bh) * l->width + c->srcx[x]) * 4;
            a = s[3];
            for (i = 0; i < 3; i++) {
                unsigned b = bg >> (16 - 8 * i) & 0xff;

                ch[i] = (s[i] * a + b * (255 - a) + 127) / 255;
            }
            rgb = ch[0] << 16 | ch[1] << 8 | ch[2];
        }
        for (h = (rgb * 2654435761u) >> 23; keys[h] != 0xffffffffu && keys[h] != rgb;
             h = (h + 1) & 511) {
        }
        if (keys[h] != rgb || k == 1) {     /* fg is index 1 even when it equals bg */
            if (c->npal == 256) {
                return 0;
            }
            keys[h] = rgb;
            vals[h] = (unsigned char)c->npal;
            c->pal[c->npal].red = rgb >> 16 & 0xff;
            c->pal[c->npal].green = rgb >> 8 & 0xff;
            c->pal[c->npal].blue = rgb & 0xff;
            c->npal++;
        }
        if (k >= 2) {
            c->boxidx[k - 2] = vals[h];
        }
    }
    return 1;
}

/* The module row of image row y, or -1 for quiet zone and border. */
static int render_png_mrow(const render_png_t *c, png_uint_32 y)
{
    long my = (long)y - c->off;

    if (my < 0 || my >= (long)c->g->total * c->scale) {
        return -1;
    }
    my = my / c->scale - c->g->margin;
    return my >= 0 && my < c->g->width ? (int)my : -1;
}

static void render_palette_row(void *ctx, png_uint_32 y, unsigned char *row)
{
    render_png_t *c = ctx;
    int want = render_png_mrow(c, y), mx, k;
    apr_size_t rowbytes = (c->img + 7) / 8;

    if (want == c->cur) {
        return;
    }
    memset(row, 0, rowbytes);
    for (mx = 0; want >= 0 && mx < c->g->width; mx++) {
        long x0;

        if (!render_dark(c->g, mx, want)) {
            continue;
        }
        x0 = c->off + (long)(mx + c->g->margin) * c->scale;
        for (k = 0; k < c->scale; k++) {
            long x = x0 + k;

            row[x >> 3] |= (unsigned char)(0x80u >> (x & 7));
        }
    }
    c->cur = want;
}

/* 8-bit palette rows (a logo of few colours): 0 bg, 1 fg, the box from boxidx. */
static void render_index_row(void *ctx, png_uint_32 y, unsigned char *row)
{
    render_png_t *c = ctx;
    int want = render_png_mrow(c, y), mx, in_box = (long)y >= c->by0 && (long)y < c->by1;

    if (want != c->cur || in_box || c->cur == -3) {
        memset(row, 0, c->img);
        for (mx = 0; want >= 0 && mx < c->g->width; mx++) {
            if (render_dark(c->g, mx, want)) {
                memset(row + c->off + (long)(mx + c->g->margin) * c->scale, 1, c->scale);
            }
        }
        c->cur = want;
        if (in_box) {
            memcpy(row + c->bx0, c->boxidx + ((long)y - c->by0) * (c->bx1 - c->bx0),
                   c->bx1 - c->bx0);
            c->cur = -3;                    /* the next row is built again */
        }
    }
}

static void render_rgb_row(void *ctx, png_uint_32 y, unsigned char *row)
{
    render_png_t *c = ctx;
    const qrt_logo_t *l = c->o->logo;
    int want = render_png_mrow(c, y), mx, k;
    unsigned fg = c->o->fg, bg = c->o->bg;
    png_uint_32 x;

    for (x = 0; x < c->img; x++) {
        row[3 * x] = bg >> 16 & 0xff;
        row[3 * x + 1] = bg >> 8 & 0xff;
        row[3 * x + 2] = bg & 0xff;
    }
    for (mx = 0; want >= 0 && mx < c->g->width; mx++) {
        long x0;

        if (!render_dark(c->g, mx, want)) {
            continue;
        }
        x0 = c->off + (long)(mx + c->g->margin) * c->scale;
        for (k = 0; k < c->scale; k++) {
            unsigned char *px = row + 3 * (x0 + k);

            px[0] = fg >> 16 & 0xff;
            px[1] = fg >> 8 & 0xff;
            px[2] = fg & 0xff;
        }
    }
    if (l && (long)y >= c->by0 && (long)y < c->by1) {
        long sy = ((long)y - c->by0) * l->height / (c->by1 - c->by0);
        const unsigned char *src = l->rgba + (apr_size_t)sy * l->width * 4;
        long bx;

        for (bx = c->bx0; bx < c->bx1; bx++) {
            const unsigned char *s = src + 4 * c->srcx[bx - c->bx0];
            unsigned char *px = row + 3 * bx;
            unsigned a = s[3];

            for (k = 0; k < 3; k++) {
                px[k] = (unsigned char)((s[k] * a + px[k] * (255 - a) + 127) / 255);
            }
        }
    }
}

static apr_status_t render_png(apr_pool_t *p, const render_grid_t *g,
                               const qrt_render_opts_t *o, render_out_t *out,
                               const char **err)
{
    render_png_t c;
    render_png_io_t io;
    apr_size_t img;
    unsigned char *row;
    int ok;

    if (o->size < QRT_QR_SIZE_MIN || o->size > QRT_QR_SIZE_MAX) {
        return render_fail(APR_EINVAL, err, "size must be 64 to 2048 pixels");
    }
    memset(&c, 0, sizeof(c));
    c.g = g;
    c.o = o;
    c.cur = -2;
    /* at least 2 pixels a module: a code of 1-pixel modules (size 65 for a version 3
     * code and its quiet zone) is exact but no scanner reads it; the image is larger
     * than size then, as when the code needs more pixels than size has */
    c.scale = o->size / g->total;
    if (c.scale < 2) {
        c.scale = 2;
    }
    img = (apr_size_t)g->total * c.scale;
    if (img < (apr_size_t)o->size) {
        c.off = (int)(((apr_size_t)o->size - img) / 2);
        img = o->size;
    }
    c.img = (png_uint_32)img;
    memset(&io, 0, sizeof(io));
    io.out = out;
    if (o->logo && g->pad1 > g->pad0) {
        long i;

        c.bx0 = c.off + (long)floor(g->lx * c.scale);
        c.by0 = c.off + (long)floor(g->ly * c.scale);
        c.bx1 = c.off + (long)ceil((g->lx + g->lw) * c.scale);
        c.by1 = c.off + (long)ceil((g->ly + g->lh) * c.scale);
        if (c.bx1 <= c.bx0 || c.by1 <= c.by0) {
            c.by1 = c.by0;
        }
        c.srcx = apr_palloc(p, sizeof(int) * (c.bx1 - c.bx0 + 1));
        for (i = 0; i < c.bx1 - c.bx0; i++) {
            c.srcx[i] = (int)(i * o->logo->width / (c.bx1 - c.bx0));
        }
        if (render_logo_palette(p, &c)) {
            row = apr_palloc(p, img);
            ok = render_png_rows(&io, c.img, c.img, 8, PNG_COLOR_TYPE_PALETTE, c.pal,
                                 c.npal, render_index_row, &c, row);
        }
        else {
            row = apr_palloc(p, img * 3);
            ok = render_png_rows(&io, c.img, c.img, 8, PNG_COLOR_TYPE_RGB, NULL, 0,
                                 render_rgb_row, &c, row);
        }
    }
    else {
        png_color pal[2];

        pal[0].red = o->bg >> 16 & 0xff;
        pal[0].green = o->bg >> 8 & 0xff;
        pal[0].blue = o->bg & 0xff;
        pal[1].red = o->fg >> 16 & 0xff;
        pal[1].green = o->fg >> 8 & 0xff;
        pal[1].blue = o->fg & 0xff;
        row = apr_palloc(p, (img + 7) / 8);
        ok = render_png_rows(&io, c.img, c.img, 1, PNG_COLOR_TYPE_PALETTE, pal, 2,
                             render_palette_row, &c, row);
    }
    if (!ok) {
        if (out->rv != APR_SUCCESS) {
            return render_fail(out->rv, err, "writing the image failed");
        }
        if (err) {
            *err = apr_pstrcat(p, "PNG encoding failed: ", io.msg, NULL);
        }
        return APR_EGENERAL;
    }
    return APR_SUCCESS;
}

/* ---- SVG --------------------------------------------------------------------------- */

/* Text, not cairo's SVG surface: one <path> of row runs, no per-module shapes. */
static apr_status_t render_svg(apr_pool_t *p, const render_grid_t *g,
                               const qrt_render_opts_t *o, render_out_t *out,
                               const char **err)
{
    char tmp[160];
    int x, y;

    out_str(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\"");
    if (o->size_mm > 0) {
        snprintf(tmp, sizeof(tmp), " width=\"%gmm\" height=\"%gmm\"", o->size_mm, o->size_mm);
        out_str(out, tmp);
    }
    snprintf(tmp, sizeof(tmp), " viewBox=\"0 0 %d %d\" shape-rendering=\"crispEdges\">\n"
             "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#%06X\"/>\n"
             "<path fill=\"#%06X\" d=\"", g->total, g->total, g->total, g->total,
             o->bg & 0xffffff, o->fg & 0xffffff);
    out_str(out, tmp);
    for (y = 0; y < g->width; y++) {
        for (x = 0; x < g->width; x++) {
            int n = 0;

            while (x + n < g->width && render_dark(g, x + n, y)) {
                n++;
            }
            if (n) {
                int len = snprintf(tmp, sizeof(tmp), "M%d %dh%dv1h-%dz", x + g->margin,
                                   y + g->margin, n, n);

                out_put(out, tmp, len);
                x += n;
            }
        }
    }
    out_str(out, "\"/>\n");
    if (o->logo && g->pad1 > g->pad0) {
        const char *b64 = o->logo_png64 ? o->logo_png64 : qrt_render_logo_png64(p, o->logo);

        if (!b64) {
            return render_fail(APR_EGENERAL, err, "encoding the logo failed");
        }
        snprintf(tmp, sizeof(tmp), "<image x=\"%.4f\" y=\"%.4f\" width=\"%.4f\" "
                 "height=\"%.4f\" preserveAspectRatio=\"xMidYMid meet\" "
                 "href=\"data:image/png;base64,", g->lx, g->ly, g->lw, g->lh);
        out_str(out, tmp);
        out_str(out, b64);
        out_str(out, "\"/>\n");
    }
    out_str(out, "</svg>\n");
    out_flush(out);
    return out->rv == APR_SUCCESS ? APR_SUCCESS
           : render_fail(out->rv, err, "writing the image failed");
}

/* ---- PDF and EPS (cairo) ------------------------------------------------------------ */

/* EPS: cairo's %%BoundingBox is in whole points, rounded up (a 35.5 mm code is placed
 * as 35.63 mm). The %%HiResBoundingBox line after it gives the exact size to the DSC
 * readers that take it (Illustrator, InDesign, Ghostscript, TeX's graphicx): put in once
 * the header's comments are all in the buffer (cairo writes them first, a few hundred
 * bytes); a header that did not fit is left as cairo wrote it. */
static void render_eps_hires(render_out_t *o)
{
    const char *end = memmem(o->buf, o->n, "%%EndComments", 13), *bb, *eol;
    apr_size_t len = strlen(o->hires);

    if (!end && o->sent == 0) {
        return;                                 /* (more of the header to come) */
    }
    bb = end ? memmem(o->buf, (apr_size_t)(end - o->buf), "%%BoundingBox:", 14) : NULL;
    eol = bb ? memchr(bb, '\n', (apr_size_t)(end - bb)) : NULL;
    if (eol && o->sent == 0 && o->n + len <= sizeof(o->buf)) {
        char *at = o->buf + (eol + 1 - o->buf);

        memmove(at + len, at, o->n - (apr_size_t)(at - o->buf));
        memcpy(at, o->hires, len);
        o->n += len;
    }
    o->hires[0] = '\0';
}

static cairo_status_t render_cairo_write(void *closure, const unsigned char *data,
                                         unsigned int len)
{
    render_out_t *out = closure;

    out_put(out, (const char *)data, len);
    if (out->hires[0]) {
        render_eps_hires(out);
    }
    return out->rv == APR_SUCCESS ? CAIRO_STATUS_SUCCESS : CAIRO_STATUS_WRITE_ERROR;
}

static void render_cairo_rgb(cairo_t *cr, unsigned rgb)
{
    cairo_set_source_rgb(cr, (rgb >> 16 & 0xff) / 255.0, (rgb >> 8 & 0xff) / 255.0,
                         (rgb & 0xff) / 255.0);
}

/* Logo pixels a printed inch of its box needs: past them an image only makes each PDF or
 * EPS larger and slower to write (each document deflates its own copy of the pixels, the
 * most of its time with a large logo). */
#define RENDER_LOGO_DPI 600.0

/* The logo as a cairo image (premultiplied ARGB), painted into its box (module_pt points a
 * module): each f x f of its pixels averaged into one where the box needs f times fewer
 * than the logo has, at RENDER_LOGO_DPI. flatten: blended over bg (its pad's colour)
 * into an opaque image, for PostScript, which has no transparency: cairo drew a logo
 * with any partly transparent pixel there as a fallback image of the whole page (1 s
 * and 110 MB for a 1,000 mm EPS). */
static void render_cairo_logo(cairo_t *cr, const render_grid_t *g, const qrt_logo_t *l,
                              double module_pt, int flatten, unsigned bg)
{
    double need_w = ceil(g->lw * module_pt / 72.0 * RENDER_LOGO_DPI);
    double need_h = ceil(g->lh * module_pt / 72.0 * RENDER_LOGO_DPI);
    int f = (int)fmin(l->width / fmax(need_w, 1.0), l->height / fmax(need_h, 1.0));
    int w, h, stride, x, y;
    cairo_surface_t *img;
    unsigned char *dst;

    f = f < 1 ? 1 : f;
    w = (l->width + f - 1) / f;
    h = (l->height + f - 1) / f;
    img = cairo_image_surface_create(flatten ? CAIRO_FORMAT_RGB24 : CAIRO_FORMAT_ARGB32, w, h);
    if (cairo_surface_status(img) != CAIRO_STATUS_SUCCESS) {
        cairo_surface_destroy(img);
        return;
    }
    cairo_surface_flush(img);
    dst = cairo_image_surface_get_data(img);
    stride = cairo_image_surface_get_stride(img);
    for (y = 0; y < h; y++) {
        uint32_t *d = (uint32_t *)(dst + (apr_size_t)y * stride);
        int y1 = (y + 1) * f < l->height ? (y + 1) * f : l->height;

        for (x = 0; x < w; x++) {
            int x1 = (x + 1) * f < l->width ? (x + 1) * f : l->width, sx, sy;
            apr_uint64_t a = 0, r = 0, gr = 0, b = 0, n;

            for (sy = y * f; sy < y1; sy++) {
                const unsigned char *s = l->rgba + ((apr_size_t)sy * l->width + x * f) * 4;

                for (sx = x * f; sx < x1; sx++, s += 4) {
                    a += s[3];
                    r += (apr_uint64_t)s[0] * s[3];
                    gr += (apr_uint64_t)s[1] * s[3];
                    b += (apr_uint64_t)s[2] * s[3];
                }
            }
            /* (one pixel, n 1: (c * a + 127) / 255 and a, as premultiplied) */
            n = (apr_uint64_t)(y1 - y * f) * (apr_uint64_t)(x1 - x * f);
            if (flatten) {
                /* each pixel c * a + bg * (255 - a), averaged */
                apr_uint64_t rest = 255 * n - a;

                r += (apr_uint64_t)(bg >> 16 & 0xff) * rest;
                gr += (apr_uint64_t)(bg >> 8 & 0xff) * rest;
                b += (apr_uint64_t)(bg & 0xff) * rest;
                a = 255 * n;
            }
            d[x] = (uint32_t)((a + n / 2) / n) << 24
                   | (uint32_t)((r + 127 * n) / (255 * n)) << 16
                   | (uint32_t)((gr + 127 * n) / (255 * n)) << 8
                   | (uint32_t)((b + 127 * n) / (255 * n));
        }
    }
    cairo_surface_mark_dirty(img);
    cairo_save(cr);
    cairo_translate(cr, g->lx, g->ly);
    cairo_scale(cr, g->lw / w, g->lh / h);
    cairo_set_source_surface(cr, img, 0, 0);
    cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_GOOD);
    cairo_paint(cr);
    cairo_restore(cr);
    cairo_surface_destroy(img);
}

static apr_status_t render_cairo(const render_grid_t *g, const qrt_render_opts_t *o,
                                 render_out_t *out, const char **err)
{
    double mm = o->size_mm > 0 ? o->size_mm : QRT_RENDER_MM_DEFAULT;
    double pt = mm * 72.0 / 25.4;
    cairo_surface_t *s;
    cairo_status_t st;
    cairo_t *cr;
    long mpt;
    int x, y;

    if (o->format == QRT_FMT_PDF) {
        s = cairo_pdf_surface_create_for_stream(render_cairo_write, out, pt, pt);
    }
    else {
        s = cairo_ps_surface_create_for_stream(render_cairo_write, out, pt, pt);
        cairo_ps_surface_set_eps(s, 1);
        /* (the page is filled: the ink's box is the page's; thousandths of a point in
         * integers, whatever LC_NUMERIC another module set) */
        mpt = lround(pt * 1000.0);
        snprintf(out->hires, sizeof(out->hires),
                 "%%%%HiResBoundingBox: 0 0 %ld.%03ld %ld.%03ld\n",
                 mpt / 1000, mpt % 1000, mpt / 1000, mpt % 1000);
    }
    cr = cairo_create(s);
    cairo_scale(cr, pt / g->total, pt / g->total);
    render_cairo_rgb(cr, o->bg);
    cairo_rectangle(cr, 0, 0, g->total, g->total);
    cairo_fill(cr);
    render_cairo_rgb(cr, o->fg);
    for (y = 0; y < g->width; y++) {
        for (x = 0; x < g->width; x++) {
            int n = 0;

            while (x + n < g->width && render_dark(g, x + n, y)) {
                n++;
            }
            if (n) {
                cairo_rectangle(cr, x + g->margin, y + g->margin, n, 1);
                x += n;
            }
        }
    }
    cairo_fill(cr);
    if (o->logo && g->pad1 > g->pad0) {
        render_cairo_logo(cr, g, o->logo, pt / g->total, o->format != QRT_FMT_PDF, o->bg);
    }
    cairo_show_page(cr);
    st = cairo_status(cr);
    cairo_destroy(cr);
    cairo_surface_finish(s);
    if (st == CAIRO_STATUS_SUCCESS) {
        st = cairo_surface_status(s);
    }
    cairo_surface_destroy(s);
    out_flush(out);
    if (out->rv != APR_SUCCESS) {
        return render_fail(out->rv, err, "writing the image failed");
    }
    if (st != CAIRO_STATUS_SUCCESS) {
        return render_fail(st == CAIRO_STATUS_NO_MEMORY ? APR_ENOMEM : APR_EGENERAL, err,
                           cairo_status_to_string(st));
    }
    return APR_SUCCESS;
}

/* ---- entry -------------------------------------------------------------------------- */

apr_status_t qrt_render(apr_pool_t *p, const char *text, apr_size_t len,
                        const qrt_render_opts_t *o, qrt_write_fn write, void *ctx,
                        const char **err)
{
    qrt_render_opts_t defaults;
    render_grid_t g;
    render_out_t *out;
    unsigned char *mods;
    char ecc;
    apr_status_t rv;

    if (!o) {
        qrt_render_opts_default(&defaults);
        o = &defaults;
    }
    if (!write) {
        return render_fail(APR_EINVAL, err, "no output");
    }
    if ((unsigned)o->format > QRT_FMT_EPS) {
        return render_fail(APR_EINVAL, err, "format must be png, svg, pdf or eps");
    }
    if (o->margin < QRT_QR_MARGIN_MIN || o->margin > QRT_QR_MARGIN_MAX) {
        return render_fail(APR_EINVAL, err, "margin must be 0 to 16 modules");
    }
    if (o->size_mm != 0 && !(o->size_mm >= QRT_RENDER_MM_MIN
                             && o->size_mm <= QRT_RENDER_MM_MAX)) {
        return render_fail(APR_EINVAL, err, "size_mm must be 10 to 1000");
    }
    if (o->fg > 0xffffff || o->bg > 0xffffff) {
        return render_fail(APR_EINVAL, err, "colours must be 0xRRGGBB");
    }
    if (o->logo && (!o->logo->rgba || o->logo->width < 1 || o->logo->height < 1
                    || o->logo->width > QRT_RENDER_LOGO_MAX
                    || o->logo->height > QRT_RENDER_LOGO_MAX)) {
        return render_fail(APR_EINVAL, err, "logo must be 1 to 1024 pixels a side");
    }
    ecc = o->logo ? 'H' : o->ecc;
    rv = qrt_qr_encode(p, text, len, ecc, &mods, &g.width, err);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    g.mods = mods;
    g.margin = o->margin;
    g.total = g.width + 2 * o->margin;
    g.pad0 = g.pad1 = 0;
    if (o->logo) {
        render_logo_box(&g, o->logo);
    }
    out = apr_pcalloc(p, sizeof(*out));
    out->write = write;
    out->ctx = ctx;
    out->rv = APR_SUCCESS;
    switch (o->format) {
    case QRT_FMT_PNG:
        rv = render_png(p, &g, o, out, err);
        if (rv == APR_SUCCESS) {
            out_flush(out);
            rv = out->rv;
        }
        return rv;
    case QRT_FMT_SVG:
        return render_svg(p, &g, o, out, err);
    default:
        return render_cairo(&g, o, out, err);
    }
}
