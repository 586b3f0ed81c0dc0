/* Unit tests for qrt_render.c: every format (rasterised with rsvg-convert, pdftoppm or
 * ghostscript) decodes with zbarimg; colours, contrast, SVG's shape, bounds. */

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apr_strings.h"

#include "qrt_render.h"
#include "qrt_check.h"

QRT_CHECK_POOL

typedef struct {
    char *buf;
    apr_size_t len, cap;
} mem_t;

static apr_status_t mem_write(void *ctx, const void *buf, apr_size_t len)
{
    mem_t *m = ctx;

    if (m->len + len + 1 > m->cap) {
        apr_size_t cap = (m->cap + len + 1) * 2;
        char *nb = apr_palloc(pool, cap);

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

static apr_status_t fail_write(void *ctx, const void *buf, apr_size_t len)
{
    (void)ctx;
    (void)buf;
    (void)len;
    return APR_ECONNABORTED;
}

static char *run_out(const char *cmd)
{
    char *out = apr_pcalloc(pool, 4096);
    size_t n;
    FILE *f = popen(cmd, "r");

    ck_assert_ptr_nonnull(f);
    n = fread(out, 1, 4095, f);
    if (pclose(f) != 0) {
        return NULL;
    }
    while (n > 0 && out[n - 1] == '\n') {
        n--;
    }
    out[n] = '\0';
    return out;
}

/* The image of text in o's format, rasterised as the API tests do, decoded. */
static char *render_decode(const qrt_render_opts_t *o, const char *text, mem_t *m)
{
    char dir[] = "/tmp/qrt_test_render_XXXXXX";
    const char *ext = qrt_render_ext(o->format), *conv = NULL, *err = NULL;
    char *src, *png, *out;
    FILE *f;

    memset(m, 0, sizeof(*m));
    ck_assert_int_eq(qrt_render(pool, text, strlen(text), o, mem_write, m, &err),
                     APR_SUCCESS);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    src = apr_psprintf(pool, "%s/in.%s", dir, ext);
    png = apr_psprintf(pool, "%s/out.png", dir);
    f = fopen(src, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(m->buf, 1, m->len, f), m->len);
    fclose(f);
    switch (o->format) {
    case QRT_FMT_PNG:
        png = src;
        break;
    case QRT_FMT_SVG:
        conv = apr_psprintf(pool, "rsvg-convert -w 400 -o %s %s", png, src);
        break;
    case QRT_FMT_PDF:
        conv = apr_psprintf(pool, "pdftoppm -png -r 200 -singlefile %s %s/out", src, dir);
        break;
    case QRT_FMT_EPS:
        conv = apr_psprintf(pool, "gs -q -dSAFER -dBATCH -dNOPAUSE -dEPSCrop "
                            "-sDEVICE=png16m -r200 -sOutputFile=%s %s", png, src);
        break;
    }
    if (conv) {
        ck_assert_int_eq(system(apr_pstrcat(pool, conv, " >/dev/null 2>&1", NULL)), 0);
    }
    out = run_out(apr_psprintf(pool, "zbarimg --raw -q %s 2>/dev/null", png));
    system(apr_psprintf(pool, "rm -rf %s", dir));
    return out;
}

static const char *url = "https://qr.example.com/s/AbCdEf123456";

/* A synthetic logo: an opaque red disc on a transparent square. */
static qrt_logo_t *make_logo(int w, int h)
{
    qrt_logo_t *l = apr_palloc(pool, sizeof(*l));
    unsigned char *px = apr_palloc(pool, (apr_size_t)w * h * 4);
    int x, y;

    for (y = 0; y < h; y++) {
        for (x = 0; x < w; x++) {
            unsigned char *p = px + ((apr_size_t)y * w + x) * 4;
            int dx = 2 * x - w, dy = 2 * y - h, in = dx * dx + dy * dy < w * h;

            p[0] = 0xd0;
            p[1] = (unsigned char)(x * 255 / w);
            p[2] = 0x20;
            p[3] = in ? 255 : 0;
        }
    }
    l->width = w;
    l->height = h;
    l->rgba = px;
    return l;
}

/* format x ecc x colours: 4 x 4 x 2 */
START_TEST(test_formats_decode)
{
    qrt_render_opts_t o;
    mem_t m;
    char *got;

    qrt_render_opts_default(&o);
    o.format = (qrt_img_format_t)(_i % 4);
    o.ecc = "LMQH"[(_i / 4) % 4];
    if (_i / 16) {
        o.fg = 0x1a237e;
        o.bg = 0xfff8e1;
    }
    got = render_decode(&o, url, &m);
    ck_assert_msg(got && !strcmp(got, url), "format %d ecc %c: got %s", o.format, o.ecc,
                  got ? got : "(nothing)");
}
END_TEST

/* A photo-like logo: more colours than a PNG palette holds. */
static qrt_logo_t *make_photo(int w, int h)
{
    qrt_logo_t *l = make_logo(w, h);
    unsigned char *px = (unsigned char *)l->rgba;
    int i;

    for (i = 0; i < w * h; i++) {
        px[4 * i] = (unsigned char)(i * 7);
        px[4 * i + 2] = (unsigned char)(i / w * 3);
        px[4 * i + 3] = 255;
    }
    return l;
}

/* formats x (a logo of few colours, a photo) */
START_TEST(test_logo_decodes)
{
    qrt_render_opts_t o;
    mem_t m;
    char *got;

    qrt_render_opts_default(&o);
    o.format = (qrt_img_format_t)(_i % 4);
    o.ecc = 'L';                        /* a logo forces H */
    o.logo = _i < 4 ? make_logo(80, 60) : make_photo(90, 90);
    o.fg = 0x202020;
    got = render_decode(&o, url, &m);
    ck_assert_msg(got && !strcmp(got, url), "format %d: got %s", o.format,
                  got ? got : "(nothing)");
    if (o.format == QRT_FMT_SVG) {
        mem_t again;
        const char *err = NULL;

        ck_assert_ptr_nonnull(strstr(m.buf, "href=\"data:image/png;base64,iVBORw0KGgo"));
        /* the logo encoded once beforehand (a ZIP's SVGs): the same file */
        o.logo_png64 = qrt_render_logo_png64(pool, o.logo);
        ck_assert_ptr_nonnull(o.logo_png64);
        ck_assert_ptr_nonnull(strstr(m.buf, o.logo_png64));
        memset(&again, 0, sizeof(again));
        ck_assert_int_eq(qrt_render(pool, url, strlen(url), &o, mem_write, &again, &err),
                         APR_SUCCESS);
        ck_assert_uint_eq(again.len, m.len);
        ck_assert(memcmp(again.buf, m.buf, m.len) == 0);
    }
    if (o.format == QRT_FMT_PNG) {
        /* few colours: an 8-bit palette; a photo: RGB */
        ck_assert_int_eq((unsigned char)m.buf[24], 8);
        ck_assert_int_eq((unsigned char)m.buf[25], _i < 4 ? 3 : 2);
    }
}
END_TEST

static int count(const char *s, const char *needle)
{
    int n = 0;

    while ((s = strstr(s, needle)) != NULL) {
        n++;
        s++;
    }
    return n;
}

START_TEST(test_svg_shape)
{
    qrt_render_opts_t o;
    mem_t m;
    const char *err = NULL;

    qrt_render_opts_default(&o);
    o.format = QRT_FMT_SVG;
    o.size_mm = 30;
    o.fg = 0x0000aa;
    memset(&m, 0, sizeof(m));
    ck_assert_int_eq(qrt_render(pool, url, strlen(url), &o, mem_write, &m, &err),
                     APR_SUCCESS);
    ck_assert_int_eq(count(m.buf, "<path"), 1);
    ck_assert_int_eq(count(m.buf, "<rect"), 1);
    ck_assert_ptr_nonnull(strstr(m.buf, "width=\"30mm\" height=\"30mm\""));
    /* version 3 at M: 29 modules + 2 x 4 quiet zone */
    ck_assert_ptr_nonnull(strstr(m.buf, "viewBox=\"0 0 37 37\""));
    ck_assert_ptr_nonnull(strstr(m.buf, "width=\"37\" height=\"37\" fill=\"#FFFFFF\""));
    ck_assert_ptr_nonnull(strstr(m.buf, "<path fill=\"#0000AA\""));
    /* no unit without size_mm */
    o.size_mm = 0;
    memset(&m, 0, sizeof(m));
    ck_assert_int_eq(qrt_render(pool, url, strlen(url), &o, mem_write, &m, &err),
                     APR_SUCCESS);
    ck_assert_ptr_null(strstr(m.buf, "mm\""));
}
END_TEST

/* The widest image a PDF or EPS holds (its "/Width N" entries), 0 for none. */
static int widest_image(const mem_t *m)
{
    const char *at = m->buf, *end = m->buf + m->len;
    int most = 0;

    while ((at = memmem(at, (apr_size_t)(end - at), "/Width ", 7)) != NULL) {
        int w = atoi(at + 7);

        most = w > most ? w : most;
        at += 7;
    }
    return most;
}

/* PDF and EPS (_i: 0, 1) with a 1024-pixel logo: at the default 50 mm the logo's box
 * (about 17 mm) needs some 400 pixels at 600 a printed inch, so every 2 x 2 of the logo's
 * become one (512); at 1000 mm it needs more than the logo has, which goes in whole. The
 * code decodes either way, and the smaller image is the average of the larger's. */
START_TEST(test_logo_print_resolution)
{
    qrt_render_opts_t o;
    mem_t m;
    char *got;

    qrt_render_opts_default(&o);
    o.format = _i ? QRT_FMT_EPS : QRT_FMT_PDF;
    o.logo = make_photo(1024, 1024);
    o.fg = 0x202020;
    got = render_decode(&o, url, &m);
    ck_assert_msg(got && !strcmp(got, url), "format %d: got %s", o.format,
                  got ? got : "(nothing)");
    ck_assert_int_eq(widest_image(&m), 512);
    o.size_mm = 1000;
    memset(&m, 0, sizeof(m));
    got = render_decode(&o, url, &m);
    ck_assert_msg(got && !strcmp(got, url), "format %d at 1000 mm: got %s", o.format,
                  got ? got : "(nothing)");
    ck_assert_int_eq(widest_image(&m), 1024);
    /* a logo the box needs all of goes in as it is */
    o.size_mm = 0;
    o.logo = make_photo(300, 200);
    memset(&m, 0, sizeof(m));
    got = render_decode(&o, url, &m);
    ck_assert(got && !strcmp(got, url));
    ck_assert_int_eq(widest_image(&m), 300);
}
END_TEST

/* A logo with partly transparent pixels (anti-aliased edges, as most logos have) in an
 * EPS: blended over the pad's colour into an opaque image, not drawn by cairo as a
 * fallback image of the page (1 s and 110 MB at 1,000 mm); it decodes, and a pixel of no
 * alpha shows the background. */
START_TEST(test_logo_translucent_eps)
{
    qrt_render_opts_t o;
    qrt_logo_t *l = make_logo(64, 64);
    mem_t m;
    char *got;
    int i;
    unsigned char *px = (unsigned char *)l->rgba;

    for (i = 0; i < 64 * 64; i++) {
        px[4 * i + 3] = (unsigned char)(i % 256);           /* every alpha */
    }
    qrt_render_opts_default(&o);
    o.format = QRT_FMT_EPS;
    o.logo = l;
    o.fg = 0x202020;
    o.bg = 0xfff8e0;
    o.size_mm = 300;
    got = render_decode(&o, url, &m);
    ck_assert_msg(got && !strcmp(got, url), "got %s", got ? got : "(nothing)");
    ck_assert_ptr_null(strstr(m.buf, "Fallback Image"));
    ck_assert_uint_lt(m.len, 100000);
    ck_assert_int_eq(widest_image(&m), 64);
}
END_TEST

/* Every small size decodes: its modules are 2 pixels or more (a code whose quiet zone
 * and modules fill size only at 1 pixel a module came out so, exact and unreadable). */
START_TEST(test_small_png_sizes_decode)
{
    static const char *const texts[] = { "https://e.com/", "https://qr.example.com/s/AbCdEf12",
                                         NULL };
    qrt_render_opts_t o;
    mem_t m;
    char *got;
    int size, t;

    for (t = 0; texts[t]; t++) {
        for (size = QRT_QR_SIZE_MIN; size <= 100; size += 3) {
            qrt_render_opts_default(&o);
            o.size = size;
            o.ecc = 'H';
            got = render_decode(&o, texts[t], &m);
            ck_assert_msg(got && !strcmp(got, texts[t]), "size %d, %s: got %s", size,
                          texts[t], got ? got : "(nothing)");
        }
    }
}
END_TEST

START_TEST(test_pdf_eps_headers)
{
    qrt_render_opts_t o;
    mem_t m;
    const char *err = NULL;

    qrt_render_opts_default(&o);
    o.format = QRT_FMT_PDF;
    o.size_mm = 25.4;                   /* 72 pt */
    memset(&m, 0, sizeof(m));
    ck_assert_int_eq(qrt_render(pool, url, strlen(url), &o, mem_write, &m, &err),
                     APR_SUCCESS);
    ck_assert(!memcmp(m.buf, "%PDF-", 5));
    ck_assert_ptr_nonnull(memmem(m.buf, m.len, "/MediaBox [ 0 0 72 72 ]", 23));
    o.format = QRT_FMT_EPS;
    memset(&m, 0, sizeof(m));
    ck_assert_int_eq(qrt_render(pool, url, strlen(url), &o, mem_write, &m, &err),
                     APR_SUCCESS);
    ck_assert(!memcmp(m.buf, "%!PS-Adobe-3.0 EPSF-3.0", 23));
    ck_assert_ptr_nonnull(strstr(m.buf, "%%BoundingBox: 0 0 72 72\n"
                                        "%%HiResBoundingBox: 0 0 72.000 72.000\n"));
}
END_TEST

/* An EPS's %%BoundingBox is in whole points (rounded up); the exact size is in the
 * %%HiResBoundingBox line after it, in the header's comments, and the rest of the file is
 * cairo's, byte for byte. */
START_TEST(test_eps_gives_its_exact_size_in_the_header)
{
    static const char url[] = "https://qr.example.com/q/AbC12xyz";
    qrt_render_opts_t o;
    mem_t m;
    const char *err = NULL, *hires, *end;

    qrt_render_opts_default(&o);
    o.format = QRT_FMT_EPS;
    o.size_mm = 35.5;                   /* 100.629... points */
    memset(&m, 0, sizeof(m));
    ck_assert_int_eq(qrt_render(pool, url, strlen(url), &o, mem_write, &m, &err),
                     APR_SUCCESS);
    m.buf[m.len] = '\0';
    ck_assert_ptr_nonnull(strstr(m.buf, "\n%%BoundingBox: 0 0 101 101\n"
                                        "%%HiResBoundingBox: 0 0 100.630 100.630\n"));
    hires = strstr(m.buf, "%%HiResBoundingBox");
    end = strstr(m.buf, "%%EndComments");
    ck_assert_ptr_nonnull(end);
    ck_assert(hires < end);
    ck_assert_ptr_null(strstr(hires + 1, "%%HiResBoundingBox"));
    ck_assert(!memcmp(m.buf + m.len - 6, "%%EOF\n", 6));
}
END_TEST

START_TEST(test_png_palette)
{
    qrt_render_opts_t o;
    mem_t m;
    const char *err = NULL;

    qrt_render_opts_default(&o);
    o.fg = 0x123456;
    o.bg = 0xfedcba;
    memset(&m, 0, sizeof(m));
    ck_assert_int_eq(qrt_render(pool, url, strlen(url), &o, mem_write, &m, &err),
                     APR_SUCCESS);
    ck_assert(!memcmp(m.buf, "\x89PNG", 4));
    ck_assert_int_eq((unsigned char)m.buf[24], 1);     /* bit depth */
    ck_assert_int_eq((unsigned char)m.buf[25], 3);     /* palette */
    ck_assert(!memcmp(m.buf + 37, "PLTE\xfe\xdc\xba\x12\x34\x56", 10));
}
END_TEST

START_TEST(test_bad_options)
{
    qrt_render_opts_t o;
    mem_t m;
    const char *err = NULL;
    qrt_logo_t big = { QRT_RENDER_LOGO_MAX + 1, 10, (const unsigned char *)"" };

    memset(&m, 0, sizeof(m));
    qrt_render_opts_default(&o);
    o.size_mm = 9.99;
    o.format = QRT_FMT_SVG;
    ck_assert_int_eq(qrt_render(pool, url, strlen(url), &o, mem_write, &m, &err),
                     APR_EINVAL);
    ck_assert_str_eq(err, "size_mm must be 10 to 1000");
    o.size_mm = 1000.5;
    ck_assert_int_eq(qrt_render(pool, url, strlen(url), &o, mem_write, &m, &err),
                     APR_EINVAL);
    o.size_mm = 0;
    o.margin = 17;
    ck_assert_int_eq(qrt_render(pool, url, strlen(url), &o, mem_write, &m, &err),
                     APR_EINVAL);
    o.margin = 4;
    o.ecc = 'X';
    ck_assert_int_eq(qrt_render(pool, url, strlen(url), &o, mem_write, &m, &err),
                     APR_EINVAL);
    o.ecc = 'M';
    o.logo = &big;
    ck_assert_int_eq(qrt_render(pool, url, strlen(url), &o, mem_write, &m, &err),
                     APR_EINVAL);
    o.logo = NULL;
    o.format = QRT_FMT_PNG;
    o.size = 63;
    ck_assert_int_eq(qrt_render(pool, url, strlen(url), &o, mem_write, &m, &err),
                     APR_EINVAL);
    o.size = 300;
    o.format = (qrt_img_format_t)9;
    ck_assert_int_eq(qrt_render(pool, url, strlen(url), &o, mem_write, &m, &err),
                     APR_EINVAL);
    ck_assert_int_eq(qrt_render(pool, "", 0, NULL, mem_write, &m, &err), APR_EINVAL);
}
END_TEST

START_TEST(test_write_failure)
{
    qrt_render_opts_t o;
    const char *err = NULL;

    qrt_render_opts_default(&o);
    o.format = (qrt_img_format_t)_i;
    ck_assert_int_eq(qrt_render(pool, url, strlen(url), &o, fail_write, NULL, &err),
                     APR_ECONNABORTED);
}
END_TEST

START_TEST(test_colours)
{
    unsigned c = 0;
    qrt_img_format_t f;

    ck_assert(qrt_colour_parse("#1a2B3c", &c));
    ck_assert_uint_eq(c, 0x1a2b3c);
    ck_assert(!qrt_colour_parse("1a2b3c", &c));
    ck_assert(!qrt_colour_parse("#1a2b3", &c));
    ck_assert(!qrt_colour_parse("#1a2b3cd", &c));
    ck_assert(!qrt_colour_parse("#1a2b3g", &c));
    ck_assert(!qrt_colour_parse(NULL, &c));
    ck_assert(!qrt_colour_parse("# 12345", &c));
    ck_assert_double_eq_tol(qrt_contrast_ratio(0x000000, 0xffffff), 21.0, 1e-9);
    ck_assert_double_eq_tol(qrt_contrast_ratio(0xffffff, 0x000000), 21.0, 1e-9);
    ck_assert_double_eq_tol(qrt_contrast_ratio(0x777777, 0x777777), 1.0, 1e-9);
    /* WCAG's example: #767676 on white is 4.54 */
    ck_assert_double_eq_tol(qrt_contrast_ratio(0x767676, 0xffffff), 4.54, 0.01);
    ck_assert(qrt_contrast_ratio(0x777777, 0xffffff) < 4.5);
    ck_assert(qrt_luminance(0x000000) < qrt_luminance(0x010101));
    ck_assert_str_eq(qrt_render_mime(QRT_FMT_EPS), "application/postscript");
    ck_assert_str_eq(qrt_render_ext(QRT_FMT_SVG), "svg");
    ck_assert(qrt_render_format_parse("PDF", &f) && f == QRT_FMT_PDF);
    ck_assert(!qrt_render_format_parse("jpeg", &f));
}
END_TEST

static Suite *render_suite(void)
{
    Suite *s = suite_create("qrt_render");
    TCase *tc = tcase_create("render");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_formats_decode, 0, 32);
    tcase_add_loop_test(tc, test_logo_decodes, 0, 8);
    tcase_add_test(tc, test_svg_shape);
    tcase_add_loop_test(tc, test_logo_print_resolution, 0, 2);
    tcase_add_test(tc, test_logo_translucent_eps);
    tcase_add_test(tc, test_eps_gives_its_exact_size_in_the_header);
    tcase_add_test(tc, test_small_png_sizes_decode);
    tcase_add_test(tc, test_pdf_eps_headers);
    tcase_add_test(tc, test_png_palette);
    tcase_add_test(tc, test_bad_options);
    tcase_add_loop_test(tc, test_write_failure, 0, 4);
    tcase_add_test(tc, test_colours);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(render_suite());
}
