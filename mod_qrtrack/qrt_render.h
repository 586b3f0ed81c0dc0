/* mod_qrtrack core: print-grade QR images, one drawing of the modules for every format.
 *
 * PNG through libpng (palette, or RGB with a logo), SVG written directly as text, PDF and
 * EPS through cairo's vector surfaces. No httpd header here.
 */
#ifndef QRT_RENDER_H
#define QRT_RENDER_H

#include "apr.h"
#include "apr_errno.h"
#include "apr_pools.h"

#include "qrt_qr.h"

typedef enum { QRT_FMT_PNG, QRT_FMT_SVG, QRT_FMT_PDF, QRT_FMT_EPS } qrt_img_format_t;

/* A logo's pixels: straight (not premultiplied) alpha, width*height*4 bytes RGBA. */
typedef struct { int width, height; const unsigned char *rgba; } qrt_logo_t;

typedef struct {
    qrt_img_format_t format;
    int size;           /* pixels, PNG: QRT_QR_SIZE_MIN..QRT_QR_SIZE_MAX */
    double size_mm;     /* 0 = default; SVG/PDF/EPS: QRT_RENDER_MM_MIN..QRT_RENDER_MM_MAX */
    int margin;         /* quiet zone in modules, QRT_QR_MARGIN_MIN..QRT_QR_MARGIN_MAX */
    char ecc;           /* 'L','M','Q','H' */
    unsigned fg, bg;    /* 0xRRGGBB */
    const qrt_logo_t *logo; /* NULL = none; forces ecc 'H'; <= 20 % of the symbol's area,
                             * centred on a light (bg) pad */
    const char *logo_png64; /* the logo as qrt_render_logo_png64 makes it, for an SVG;
                             * NULL: each SVG makes it again */
} qrt_render_opts_t;

#define QRT_RENDER_MM_MIN       10
#define QRT_RENDER_MM_MAX       1000
/* The physical size of PDF and EPS pages when size_mm is 0 (SVG then has no unit). */
#define QRT_RENDER_MM_DEFAULT   50
/* Logo pixels accepted per side (the caller bounds the file before decoding it). */
#define QRT_RENDER_LOGO_MAX     1024
/* WCAG 2 contrast a fg/bg pair must reach. */
#define QRT_RENDER_CONTRAST_MIN 4.5

/* Defaults: PNG, size 300, size_mm 0, margin 4, ecc 'M', black on white, no logo. */
void qrt_render_opts_default(qrt_render_opts_t *o);

/* The logo's pixels as a PNG in base64 (in p), as an SVG holds it: made once by a caller
 * that writes many SVGs with one logo (a ZIP of 1,000 SVGs encoded a 1024-pixel logo 1,000
 * times), given as opts' logo_png64. NULL when it cannot be encoded. */
const char *qrt_render_logo_png64(apr_pool_t *p, const qrt_logo_t *logo);

/* Encodes len bytes of text (as qrt_qr_png()) and writes the image in o->format
 * through write(ctx, ...); o NULL = defaults. Returns APR_SUCCESS; APR_EINVAL for bad
 * input or options (*err says which); APR_ENOMEM; APR_EGENERAL for a library failure;
 * or write's own status. Thread-safe. Bytes written before a failure stay written. */
apr_status_t qrt_render(apr_pool_t *p, const char *text, apr_size_t len,
                        const qrt_render_opts_t *o, qrt_write_fn write, void *ctx,
                        const char **err);

/* "image/png", "image/svg+xml", "application/pdf", "application/postscript". */
const char *qrt_render_mime(qrt_img_format_t f);
/* "png", "svg", "pdf", "eps". */
const char *qrt_render_ext(qrt_img_format_t f);
/* A format by its name ("png", ..., case-insensitive): 1, else 0. */
int qrt_render_format_parse(const char *s, qrt_img_format_t *f);

/* "#RRGGBB" (hex digits of either case) into 0xRRGGBB: 1, else 0. */
int qrt_colour_parse(const char *s, unsigned *rgb);
/* The WCAG 2 contrast ratio of two colours, 1..21 (order does not matter). */
double qrt_contrast_ratio(unsigned fg, unsigned bg);
/* WCAG 2 relative luminance of 0xRRGGBB, 0..1. */
double qrt_luminance(unsigned rgb);

#endif /* QRT_RENDER_H */
