/* make bench, images: QR images per second on one core, the core alone (no httpd):
 * today's PNG (qrt_qr_png) next to qrt_render's PNG (default colours, brand colours,
 * a logo), SVG (with and without a logo), PDF and EPS; and, to show why qrt_render
 * draws PNG with libpng and SVG as text, the same images through cairo's image surface
 * (its PNG writer) and cairo's SVG surface. Each figure runs for BENCH_SECONDS
 * (default 1) on the same 36-byte scan URL at the default size (300 px, margin 4, M). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cairo.h>
#include <cairo-svg.h>

#include "apr_general.h"
#include "apr_pools.h"

#include "qrt_qr.h"
#include "qrt_render.h"

static const char *url = "https://qr.example.com/q/AbCdEf123456";

static apr_status_t sink(void *ctx, const void *buf, apr_size_t len)
{
    (void)buf;
    *(apr_size_t *)ctx += len;
    return APR_SUCCESS;
}

static cairo_status_t cairo_sink(void *ctx, const unsigned char *buf, unsigned int len)
{
    (void)buf;
    *(apr_size_t *)ctx += len;
    return CAIRO_STATUS_SUCCESS;
}

typedef int bench_fn(apr_pool_t *p, void *arg, apr_size_t *bytes);

static int b_today_png(apr_pool_t *p, void *arg, apr_size_t *bytes)
{
    (void)arg;
    return qrt_qr_png(p, url, strlen(url), NULL, sink, bytes, NULL) == APR_SUCCESS;
}

static int b_encode(apr_pool_t *p, void *arg, apr_size_t *bytes)
{
    unsigned char *mods;
    int width;

    (void)arg;
    *bytes += 0;
    return qrt_qr_encode(p, url, strlen(url), 'M', &mods, &width, NULL) == APR_SUCCESS;
}

static int b_render(apr_pool_t *p, void *arg, apr_size_t *bytes)
{
    return qrt_render(p, url, strlen(url), arg, sink, bytes, NULL) == APR_SUCCESS;
}

/* The modules drawn as rectangles on a cairo surface (cairo's way of drawing them). */
static void cairo_modules(cairo_t *cr, const unsigned char *mods, int width, double scale)
{
    int x, y, total = width + 8;

    cairo_scale(cr, scale, scale);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_rectangle(cr, 0, 0, total, total);
    cairo_fill(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    for (y = 0; y < width; y++) {
        for (x = 0; x < width; x++) {
            int n = 0;

            while (x + n < width && mods[y * width + x + n]) {
                n++;
            }
            if (n) {
                cairo_rectangle(cr, x + 4, y + 4, n, 1);
                x += n;
            }
        }
    }
    cairo_fill(cr);
}

static int b_cairo_png(apr_pool_t *p, void *arg, apr_size_t *bytes)
{
    unsigned char *mods;
    int width, scale, ok;
    cairo_surface_t *s;
    cairo_t *cr;

    (void)arg;
    if (qrt_qr_encode(p, url, strlen(url), 'M', &mods, &width, NULL) != APR_SUCCESS) {
        return 0;
    }
    scale = 300 / (width + 8);
    s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 300, 300);
    cr = cairo_create(s);
    cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);
    cairo_modules(cr, mods, width, scale);
    cairo_destroy(cr);
    ok = cairo_surface_write_to_png_stream(s, cairo_sink, bytes) == CAIRO_STATUS_SUCCESS;
    cairo_surface_destroy(s);
    return ok;
}

static int b_cairo_svg(apr_pool_t *p, void *arg, apr_size_t *bytes)
{
    unsigned char *mods;
    int width, ok;
    cairo_surface_t *s;
    cairo_t *cr;

    (void)arg;
    if (qrt_qr_encode(p, url, strlen(url), 'M', &mods, &width, NULL) != APR_SUCCESS) {
        return 0;
    }
    s = cairo_svg_surface_create_for_stream(cairo_sink, bytes, width + 8, width + 8);
    cr = cairo_create(s);
    cairo_modules(cr, mods, width, 1);
    cairo_destroy(cr);
    cairo_surface_finish(s);
    ok = cairo_surface_status(s) == CAIRO_STATUS_SUCCESS;
    cairo_surface_destroy(s);
    return ok;
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double run(const char *label, bench_fn *fn, void *arg, double seconds, double ref)
{
    apr_pool_t *p;
    apr_size_t bytes = 0;
    double start = now(), took, rate;
    long n = 0;

    apr_pool_create(&p, NULL);
    do {
        int i;

        for (i = 0; i < 20; i++, n++) {
            if (!fn(p, arg, &bytes)) {
                fprintf(stderr, "%s: failed\n", label);
                exit(1);
            }
            apr_pool_clear(p);
        }
        took = now() - start;
    } while (took < seconds);
    apr_pool_destroy(p);
    rate = n / took;
    printf("  %-34s %9.0f images/s  %7zu bytes each", label, rate, bytes / n);
    if (ref > 0) {
        printf("  (%.2f x today's PNG)", rate / ref);
    }
    printf("\n");
    return rate;
}

/* Two figures measured in alternating blocks of 20 images, so that a change in the
 * machine's load falls on both alike; prints B's rate over A's. */
static double run_pair(const char *label, bench_fn *a, void *aarg, bench_fn *b, void *barg,
                       double seconds)
{
    apr_pool_t *p;
    apr_size_t bytes = 0;
    double ta = 0, tb = 0, t0;
    long n = 0;
    int i;

    apr_pool_create(&p, NULL);
    while (ta + tb < 2 * seconds) {
        t0 = now();
        for (i = 0; i < 20; i++) {
            a(p, aarg, &bytes);
            apr_pool_clear(p);
        }
        ta += now() - t0;
        t0 = now();
        for (i = 0; i < 20; i++) {
            b(p, barg, &bytes);
            apr_pool_clear(p);
        }
        tb += now() - t0;
        n += 20;
    }
    apr_pool_destroy(p);
    printf("  %-34s %9.2f x (side by side: %.0f against %.0f images/s)\n", label, ta / tb,
           n / tb, n / ta);
    return ta / tb;
}

int main(void)
{
    const char *env = getenv("BENCH_SECONDS");
    double secs = env ? atof(env) : 1.0, today, rate;
    qrt_render_opts_t png, colours, logo_png, photo_png, svg, svg_logo, pdf, eps;
    qrt_logo_t logo, photo;
    unsigned char *px, *photo_px;
    int x, y, fail = 0;

    apr_initialize();
    /* a logo as logos are: a red disc with a white bar, anti-aliased edges */
    px = malloc(128 * 128 * 4);
    photo_px = malloc(128 * 128 * 4);
    for (y = 0; y < 128; y++) {
        for (x = 0; x < 128; x++) {
            unsigned char *q = px + (y * 128 + x) * 4, *f = photo_px + (y * 128 + x) * 4;
            double d = sqrt((x - 63.5) * (x - 63.5) + (y - 63.5) * (y - 63.5));
            int bar = y >= 56 && y < 72 && x >= 24 && x < 104;

            q[0] = 0xd0;
            q[1] = bar ? 0xff : 0x20;
            q[2] = bar ? 0xff : 0x20;
            q[3] = d < 62 ? 255 : d < 64 ? (unsigned char)(255 * (64 - d) / 2) : 0;
            /* and a photo: a colour gradient, more colours than a palette holds */
            f[0] = (unsigned char)(x * 2);
            f[1] = (unsigned char)(y * 2);
            f[2] = 0x80;
            f[3] = 255;
        }
    }
    logo.width = logo.height = 128;
    logo.rgba = px;
    photo.width = photo.height = 128;
    photo.rgba = photo_px;
    qrt_render_opts_default(&png);
    colours = png;
    colours.fg = 0x1a237e;
    colours.bg = 0xfff8e1;
    logo_png = colours;
    logo_png.logo = &logo;
    photo_png = colours;
    photo_png.logo = &photo;
    svg = png;
    svg.format = QRT_FMT_SVG;
    svg_logo = svg;
    svg_logo.logo = &logo;
    pdf = png;
    pdf.format = QRT_FMT_PDF;
    eps = png;
    eps.format = QRT_FMT_EPS;

    printf("images per second, one core, %.1f s each:\n", secs);
    run("modules only (libqrencode)", b_encode, NULL, secs, 0);
    today = run("PNG today (qrt_qr_png)", b_today_png, NULL, secs, 0);
    run("PNG qrt_render, black on white", b_render, &png, secs, today);
    rate = run("PNG qrt_render, brand colours", b_render, &colours, secs, today);
    rate = today * run_pair("PNG colours / today, interleaved", b_today_png, NULL, b_render,
                            &colours, secs);
    if (rate < 0.8 * today) {
        printf("  target missed: PNG with colours under 0.8 x today's PNG\n");
        fail = 1;
    }
    rate = run("PNG qrt_render, colours + logo", b_render, &logo_png, secs, today);
    if (rate < 1000) {
        printf("  target missed: a logo under 1,000 images/s\n");
        fail = 1;
    }
    run("PNG qrt_render, colours + photo", b_render, &photo_png, secs, today);
    run("PNG through cairo (image surface)", b_cairo_png, NULL, secs, today);
    rate = run("SVG qrt_render (text)", b_render, &svg, secs, today);
    if (rate < 5000) {
        printf("  target missed: SVG under 5,000 images/s\n");
        fail = 1;
    }
    run("SVG qrt_render + logo", b_render, &svg_logo, secs, today);
    run("SVG through cairo (SVG surface)", b_cairo_svg, NULL, secs, today);
    run("PDF qrt_render (cairo)", b_render, &pdf, secs, today);
    run("EPS qrt_render (cairo)", b_render, &eps, secs, today);
    free(px);
    free(photo_px);
    apr_terminate();
    return fail ? 2 : 0;
}
