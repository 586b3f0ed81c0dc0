/* Unit tests for qrt_qr.c: PNGs decoded back with zbarimg and libpng. */

#include <check.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apr_general.h"
#include "apr_strings.h"
#include "apr_thread_proc.h"

#include "qrt_qr.h"
#include "qrt_check.h"

QRT_CHECK_POOL

/* Write png to a temp file, run zbarimg on it, return what it printed
 * (without the newline --raw adds) or NULL when nothing was found. */
static char *zbar_decode(const char *png, apr_size_t len, int binary,
                         apr_size_t *outlen)
{
    char path[] = "/tmp/qrt_test_qr_XXXXXX";
    char cmd[256];
    char *out;
    apr_size_t n = 0, cap = 1 << 16;
    size_t r;
    FILE *f;
    int fd, status;

    fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, png, len), (ssize_t)len);
    close(fd);
    snprintf(cmd, sizeof(cmd), "zbarimg --raw -q %s %s 2>/dev/null",
             binary ? "-Sbinary" : "", path);
    f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    out = apr_palloc(pool, cap);
    while ((r = fread(out + n, 1, cap - 1 - n, f)) > 0) {
        n += r;
    }
    status = pclose(f);
    unlink(path);
    if (status != 0) {
        return NULL;
    }
    if (!binary && n > 0 && out[n - 1] == '\n') {
        n--;
    }
    out[n] = '\0';
    *outlen = n;
    return out;
}

typedef struct {
    png_uint_32 w, h;
    int depth, type;
    unsigned char *px;   /* w*h bytes, 0 black, 255 white */
} image_t;

typedef struct {
    const unsigned char *data;
    apr_size_t len, pos;
} reader_t;

static void read_mem(png_structp png, png_bytep out, png_size_t n)
{
    reader_t *r = png_get_io_ptr(png);

    if (n > r->len - r->pos) {
        png_error(png, "short");
    }
    memcpy(out, r->data + r->pos, n);
    r->pos += n;
}

static png_uint_32 be32(const unsigned char *b)
{
    return ((png_uint_32)b[0] << 24) | ((png_uint_32)b[1] << 16)
           | ((png_uint_32)b[2] << 8) | b[3];
}

/* Check signature and IHDR by hand, then decode pixels with libpng. */
static void decode_png(const char *png, apr_size_t len, image_t *img)
{
    static const unsigned char sig[8] = {137, 80, 78, 71, 13, 10, 26, 10};
    const unsigned char *b = (const unsigned char *)png;
    reader_t r;
    png_structp ps;
    png_infop pi;
    png_uint_32 y;
    png_bytep *rows;

    ck_assert_uint_gt(len, 33);
    ck_assert(memcmp(b, sig, 8) == 0);
    ck_assert(memcmp(b + 12, "IHDR", 4) == 0);
    img->w = be32(b + 16);
    img->h = be32(b + 20);
    img->depth = b[24];
    img->type = b[25];
    ck_assert(img->depth == 1 || img->depth == 8);
    ck_assert_int_eq(img->type, 0);   /* grayscale */

    r.data = b;
    r.len = len;
    r.pos = 0;
    ps = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    pi = png_create_info_struct(ps);
    if (setjmp(png_jmpbuf(ps))) {
        ck_abort_msg("libpng cannot read the image");
    }
    png_set_read_fn(ps, &r, read_mem);
    png_read_info(ps, pi);
    png_set_expand_gray_1_2_4_to_8(ps);
    png_read_update_info(ps, pi);
    ck_assert_uint_eq(png_get_image_width(ps, pi), img->w);
    ck_assert_uint_eq(png_get_rowbytes(ps, pi), img->w);
    img->px = apr_palloc(pool, (apr_size_t)img->w * img->h);
    rows = apr_palloc(pool, img->h * sizeof(*rows));
    for (y = 0; y < img->h; y++) {
        rows[y] = img->px + (apr_size_t)y * img->w;
    }
    png_read_image(ps, rows);
    png_read_end(ps, NULL);
    png_destroy_read_struct(&ps, &pi, NULL);
}

static int dark(const image_t *img, png_uint_32 x, png_uint_32 y)
{
    return img->px[(apr_size_t)y * img->w + x] == 0;
}

/* Geometry: find the dark bounding box, check everything around it is
 * white, that it is square, a whole number of pixels per module and
 * centred within one pixel; returns the module size in pixels. */
static int check_geometry(const image_t *img, int margin, int *modules)
{
    png_uint_32 x, y, x0 = img->w, y0 = img->h, x1 = 0, y1 = 0;
    png_uint_32 side, fx;
    int scale;

    for (y = 0; y < img->h; y++) {
        for (x = 0; x < img->w; x++) {
            if (dark(img, x, y)) {
                if (x < x0) x0 = x;
                if (y < y0) y0 = y;
                if (x > x1) x1 = x;
                if (y > y1) y1 = y;
            }
        }
    }
    ck_assert_uint_lt(x0, x1);
    side = x1 - x0 + 1;
    ck_assert_uint_eq(side, y1 - y0 + 1);
    ck_assert_uint_eq(x0, y0);
    /* finder pattern at top-left: 7 dark modules, then a light one */
    for (fx = x0; fx < x1 && dark(img, fx, y0); fx++) {
    }
    ck_assert_uint_eq((fx - x0) % 7, 0);
    scale = (int)((fx - x0) / 7);
    ck_assert_int_ge(scale, 1);
    ck_assert_uint_eq(side % scale, 0);
    *modules = (int)(side / scale);
    ck_assert_int_eq((*modules - 17) % 4, 0);
    /* quiet zone of margin modules at least, padding even within 1 px */
    ck_assert_uint_ge(x0, (png_uint_32)(margin * scale));
    ck_assert_uint_le(x0 > img->w - 1 - x1 ? x0 - (img->w - 1 - x1)
                                           : (img->w - 1 - x1) - x0, 1);
    return scale;
}

static void roundtrip(const char *text, int size, int margin, char ecc)
{
    qrt_qr_opts_t o;
    const char *png, *err = NULL;
    apr_size_t len, dlen;
    image_t img;
    char *dec;
    int scale, modules;
    apr_status_t rv;

    qrt_qr_opts_default(&o);
    o.size = size;
    o.margin = margin;
    o.ecc = ecc;
    rv = qrt_qr_png_buf(pool, text, strlen(text), &o, &png, &len, &err);
    ck_assert_msg(rv == APR_SUCCESS, "encode failed: %s", err);
    decode_png(png, len, &img);
    ck_assert_uint_eq(img.w, img.h);
    scale = check_geometry(&img, margin, &modules);
    /* 2 pixels a module at least: a code that needs more than size has grows */
    if (2 * (modules + 2 * margin) <= size) {
        ck_assert_uint_eq(img.w, (png_uint_32)size);
        ck_assert_int_eq(scale, size / (modules + 2 * margin));
    }
    else {
        ck_assert_int_eq(scale, 2);
        ck_assert_uint_eq(img.w, (png_uint_32)(2 * (modules + 2 * margin)));
    }
    if (scale < 2) {
        /* zbar does not find codes drawn one pixel per module; the
         * geometry above is all that is checked then */
        return;
    }
    dec = zbar_decode(png, len, 0, &dlen);
    ck_assert_msg(dec != NULL, "zbarimg found no code (size %d margin %d "
                  "ecc %c)", size, margin, ecc);
    ck_assert_uint_eq(dlen, strlen(text));
    ck_assert_str_eq(dec, text);
}

static const char *texts[] = {
    "https://qr.example.com/r/AbC123?utm_source=print&x=%41",
    "Grüße aus Köln – 日本語のテキスト ☃ 😀",
    "WIFI:T:WPA;S:My\\;Net\\,work\\:5G;P:p\\\\a\\\"ss;H:true;;",
    "x",
    "Café Größe ☕ – UTF-8 that zbar takes for Shift JIS without an ECI",
};
#define NTEXTS ((int)(sizeof(texts) / sizeof(texts[0])))

START_TEST(test_roundtrip_defaults)
{
    qrt_qr_opts_t o;

    qrt_qr_opts_default(&o);
    ck_assert_int_eq(o.size, 300);
    ck_assert_int_eq(o.margin, 4);
    ck_assert_int_eq(o.ecc, 'M');
    roundtrip(texts[_i], 300, 4, 'M');
}
END_TEST

START_TEST(test_roundtrip_variants)
{
    static const int sizes[] = {64, 97, 300, 512, 2048};
    static const int margins[] = {0, 1, 4, 16};
    static const char eccs[] = "LMQH";
    int t = _i;

    roundtrip(texts[t % NTEXTS], sizes[(t + t / 5) % 5], margins[(t / 5) % 4],
              eccs[(t / 3) % 4]);
}
END_TEST

START_TEST(test_null_opts_and_lowercase_ecc)
{
    const char *png, *err;
    apr_size_t len, dlen;
    qrt_qr_opts_t o;
    image_t img;
    char *dec;

    ck_assert_int_eq(qrt_qr_png_buf(pool, "abc", 3, NULL, &png, &len, &err),
                     APR_SUCCESS);
    decode_png(png, len, &img);
    ck_assert_uint_eq(img.w, 300);
    qrt_qr_opts_default(&o);
    o.ecc = 'h';
    ck_assert_int_eq(qrt_qr_png_buf(pool, "abc", 3, &o, &png, &len, &err),
                     APR_SUCCESS);
    dec = zbar_decode(png, len, 0, &dlen);
    ck_assert_ptr_nonnull(dec);
    ck_assert_str_eq(dec, "abc");
}
END_TEST

START_TEST(test_large_code_bigger_than_size)
{
    /* 2953 bytes is the 8-bit capacity of version 40-L: 177 modules */
    char *text = apr_palloc(pool, 2954);
    const char *png, *err;
    apr_size_t len;
    qrt_qr_opts_t o;
    image_t img;
    int i;

    for (i = 0; i < 2953; i++) {
        text[i] = "abcdefghijklmnopqrstuvwxyz0123456789/"[i % 37];
    }
    text[2953] = '\0';
    qrt_qr_opts_default(&o);
    o.size = 64;
    o.margin = 2;
    o.ecc = 'L';
    ck_assert_int_eq(qrt_qr_png_buf(pool, text, 2953, &o, &png, &len, &err),
                     APR_SUCCESS);
    decode_png(png, len, &img);
    ck_assert_uint_eq(img.w, 2 * (177 + 4));
    ck_assert_uint_eq(img.h, 2 * (177 + 4));
    roundtrip(text, 1000, 4, 'L');
}
END_TEST

START_TEST(test_too_long)
{
    char *text = apr_palloc(pool, 8000);
    const char *png = NULL, *err = NULL;
    apr_size_t len = 0;
    qrt_qr_opts_t o;

    memset(text, 'a', 8000);
    qrt_qr_opts_default(&o);
    o.ecc = 'L';
    ck_assert_int_eq(qrt_qr_png_buf(pool, text, 2954, &o, &png, &len, &err),
                     APR_EINVAL);
    ck_assert_str_eq(err, "data too long for a QR code");
    ck_assert_ptr_null(png);
    o.ecc = 'H';
    err = NULL;
    ck_assert_int_eq(qrt_qr_png_buf(pool, text, 1274, &o, &png, &len, &err),
                     APR_EINVAL);
    ck_assert_str_eq(err, "data too long for a QR code");
    ck_assert_int_eq(qrt_qr_png_buf(pool, text, 1273, &o, &png, &len, &err),
                     APR_SUCCESS);
    err = NULL;
    ck_assert_int_eq(qrt_qr_png_buf(pool, text, 8000, &o, &png, &len, &err),
                     APR_EINVAL);
    ck_assert_str_eq(err, "data too long for a QR code");
    err = NULL;
    ck_assert_int_eq(qrt_qr_png_buf(pool, text, (apr_size_t)-1, &o, &png,
                                    &len, &err), APR_EINVAL);
    ck_assert_str_eq(err, "data too long for a QR code");
}
END_TEST

START_TEST(test_bad_options)
{
    const char *png, *err;
    apr_size_t len;
    qrt_qr_opts_t o;

    qrt_qr_opts_default(&o);
    o.size = 63;
    ck_assert_int_eq(qrt_qr_png_buf(pool, "a", 1, &o, &png, &len, &err),
                     APR_EINVAL);
    o.size = 2049;
    ck_assert_int_eq(qrt_qr_png_buf(pool, "a", 1, &o, &png, &len, &err),
                     APR_EINVAL);
    qrt_qr_opts_default(&o);
    o.margin = -1;
    ck_assert_int_eq(qrt_qr_png_buf(pool, "a", 1, &o, &png, &len, &err),
                     APR_EINVAL);
    o.margin = 17;
    ck_assert_int_eq(qrt_qr_png_buf(pool, "a", 1, &o, &png, &len, &err),
                     APR_EINVAL);
    qrt_qr_opts_default(&o);
    o.ecc = 'X';
    ck_assert_int_eq(qrt_qr_png_buf(pool, "a", 1, &o, &png, &len, &err),
                     APR_EINVAL);
    ck_assert_str_eq(err, "ecc must be L, M, Q or H");
    o.ecc = '\0';
    ck_assert_int_eq(qrt_qr_png_buf(pool, "a", 1, &o, &png, &len, &err),
                     APR_EINVAL);
    qrt_qr_opts_default(&o);
    ck_assert_int_eq(qrt_qr_png_buf(pool, "", 0, &o, &png, &len, &err),
                     APR_EINVAL);
    ck_assert_int_eq(qrt_qr_png_buf(pool, NULL, 5, &o, &png, &len, &err),
                     APR_EINVAL);
    ck_assert_int_eq(qrt_qr_png(pool, "a", 1, &o, NULL, NULL, &err),
                     APR_EINVAL);
    /* err may be NULL */
    ck_assert_int_eq(qrt_qr_png_buf(pool, "", 0, &o, &png, &len, NULL),
                     APR_EINVAL);
}
END_TEST

START_TEST(test_binary_bytes)
{
    char text[256];
    const char *png, *err;
    apr_size_t len, dlen;
    char *dec;
    int i;

    for (i = 0; i < 256; i++) {
        text[i] = (char)i;
    }
    ck_assert_int_eq(qrt_qr_png_buf(pool, text, 256, NULL, &png, &len, &err),
                     APR_SUCCESS);
    dec = zbar_decode(png, len, 1, &dlen);
    ck_assert_ptr_nonnull(dec);
    ck_assert_uint_eq(dlen, 256);
    ck_assert(memcmp(dec, text, 256) == 0);
}
END_TEST

typedef struct {
    apr_size_t limit, seen, calls;
} failing_t;

static apr_status_t failing_write(void *ctx, const void *buf, apr_size_t len)
{
    failing_t *f = ctx;

    (void)buf;
    f->calls++;
    if (f->seen + len > f->limit) {
        return APR_EGENERAL + 7;
    }
    f->seen += len;
    return APR_SUCCESS;
}

START_TEST(test_write_failure)
{
    apr_size_t limits[] = {0, 1, 8, 33, 40, 100, 0};
    const char *err, *png;
    apr_size_t full;
    failing_t f;
    unsigned k;

    /* the last limit is one byte short of the whole image */
    ck_assert_int_eq(qrt_qr_png_buf(pool, texts[0], strlen(texts[0]), NULL,
                                    &png, &full, &err), APR_SUCCESS);
    ck_assert_uint_gt(full, 101);
    limits[6] = full - 1;
    for (k = 0; k < sizeof(limits) / sizeof(limits[0]); k++) {
        memset(&f, 0, sizeof(f));
        f.limit = limits[k];
        err = NULL;
        ck_assert_int_eq(qrt_qr_png(pool, texts[0], strlen(texts[0]), NULL,
                                    failing_write, &f, &err),
                         APR_EGENERAL + 7);
        ck_assert_str_eq(err, "writing the PNG failed");
        ck_assert_uint_le(f.seen, limits[k]);
    }
    /* and a big enough sink works with the same callback */
    memset(&f, 0, sizeof(f));
    f.limit = full;
    ck_assert_int_eq(qrt_qr_png(pool, texts[0], strlen(texts[0]), NULL,
                                failing_write, &f, &err), APR_SUCCESS);
    ck_assert_uint_eq(f.seen, full);
}
END_TEST

#define NTHREADS 4
#define NLOOPS   25

typedef struct {
    const char *ref;
    apr_size_t ref_len;
    int failures;
} thread_arg_t;

static void *APR_THREAD_FUNC encode_thread(apr_thread_t *t, void *data)
{
    thread_arg_t *a = data;
    apr_pool_t *p;
    int i;

    apr_pool_create(&p, NULL);
    for (i = 0; i < NLOOPS; i++) {
        const char *png, *err;
        apr_size_t len;
        qrt_qr_opts_t o;

        qrt_qr_opts_default(&o);
        o.ecc = "LMQH"[i % 4];
        if (qrt_qr_png_buf(p, texts[1], strlen(texts[1]), &o, &png, &len,
                           &err) != APR_SUCCESS) {
            a->failures++;
        }
        else if (o.ecc == 'Q' && (len != a->ref_len
                                  || memcmp(png, a->ref, len))) {
            a->failures++;
        }
        apr_pool_clear(p);
    }
    apr_pool_destroy(p);
    /* A plain return ends the thread (apr_thread_exit unwinds under ASan). */
    (void)t;
    return NULL;
}

START_TEST(test_threads)
{
    apr_thread_t *th[NTHREADS];
    thread_arg_t args[NTHREADS];
    const char *ref, *err;
    apr_size_t ref_len;
    qrt_qr_opts_t o;
    apr_status_t trv;
    int i;

    qrt_qr_opts_default(&o);
    o.ecc = 'Q';
    ck_assert_int_eq(qrt_qr_png_buf(pool, texts[1], strlen(texts[1]), &o,
                                    &ref, &ref_len, &err), APR_SUCCESS);
    for (i = 0; i < NTHREADS; i++) {
        args[i].ref = ref;
        args[i].ref_len = ref_len;
        args[i].failures = 0;
        ck_assert_int_eq(apr_thread_create(&th[i], NULL, encode_thread,
                                           &args[i], pool), APR_SUCCESS);
    }
    for (i = 0; i < NTHREADS; i++) {
        apr_thread_join(&trv, th[i]);
        ck_assert_int_eq(args[i].failures, 0);
    }
}
END_TEST

static Suite *qr_suite(void)
{
    Suite *s = suite_create("qrt_qr");
    TCase *tc = tcase_create("qr");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_roundtrip_defaults, 0, NTEXTS);
    tcase_add_loop_test(tc, test_roundtrip_variants, 0, 20);
    tcase_add_test(tc, test_null_opts_and_lowercase_ecc);
    tcase_add_test(tc, test_large_code_bigger_than_size);
    tcase_add_test(tc, test_too_long);
    tcase_add_test(tc, test_bad_options);
    tcase_add_test(tc, test_binary_bytes);
    tcase_add_test(tc, test_write_failure);
    tcase_add_test(tc, test_threads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(qr_suite());
}
