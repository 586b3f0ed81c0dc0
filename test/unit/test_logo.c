/* Unit tests for qrt_logo.c, qrt_style.c and qrt_store_style.c: logos checked before
 * decoding, re-encoded with their pixels only; colour rules; styles stored on SQLite. */

#include <check.h>
#include <png.h>
#include <string.h>

#include "apr_general.h"
#include "apr_strings.h"
#include "apr_time.h"

#include "qrt_logo.h"
#include "qrt_qr.h"
#include "qrt_render.h"
#include "qrt_store_style.h"
#include "qrt_check.h"
#include "qrt_check_db.h"

QRT_CHECK_POOL

typedef struct {
    unsigned char *buf;
    apr_size_t len, cap;
} mem_t;

static void mem_write(png_structp png, png_bytep data, png_size_t n)
{
    mem_t *m = png_get_io_ptr(png);

    if (m->len + n > m->cap) {
        apr_size_t cap = (m->len + n) * 2;
        unsigned char *b = apr_palloc(pool, cap);

        if (m->len) {
            memcpy(b, m->buf, m->len);
        }
        m->buf = b;
        m->cap = cap;
    }
    memcpy(m->buf + m->len, data, n);
    m->len += n;
}

static void mem_flush(png_structp png)
{
    (void)png;
}

/* An RGBA PNG of w x h whose pixel (x, y) is (x, y, x ^ y, 200), with a tEXt chunk. */
static mem_t make_png(int w, int h)
{
    mem_t m = { NULL, 0, 0 };
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    png_text text;
    unsigned char *row = apr_palloc(pool, (apr_size_t)w * 4);
    int x, y;

    ck_assert_int_eq(setjmp(png_jmpbuf(png)), 0);
    png_set_write_fn(png, &m, mem_write, mem_flush);
    png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_RGB_ALPHA, PNG_INTERLACE_ADAM7,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    memset(&text, 0, sizeof(text));
    text.compression = PNG_TEXT_COMPRESSION_NONE;
    text.key = "Comment";
    text.text = "secret-comment";
    png_set_text(png, info, &text, 1);
    png_write_info(png, info);
    png_set_interlace_handling(png);
    for (y = 0; y < h; y++) {
        for (x = 0; x < w; x++) {
            row[4 * x] = (unsigned char)x;
            row[4 * x + 1] = (unsigned char)y;
            row[4 * x + 2] = (unsigned char)(x ^ y);
            row[4 * x + 3] = 200;
        }
    }
    for (x = 0; x < 7; x++) {       /* Adam7: every row once per pass */
        for (y = 0; y < h; y++) {
            for (int i = 0; i < w; i++) {
                row[4 * i] = (unsigned char)i;
                row[4 * i + 1] = (unsigned char)y;
                row[4 * i + 2] = (unsigned char)(i ^ y);
                row[4 * i + 3] = 200;
            }
            png_write_row(png, row);
        }
    }
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return m;
}

static int mem_has(const unsigned char *b, apr_size_t n, const char *s)
{
    apr_size_t k = strlen(s), i;

    for (i = 0; i + k <= n; i++) {
        if (!memcmp(b + i, s, k)) {
            return 1;
        }
    }
    return 0;
}

START_TEST(test_sanitise_keeps_pixels_only)
{
    mem_t m = make_png(40, 30);
    const unsigned char *png, *rgba;
    apr_size_t len;
    const char *err = NULL;
    int w, h, x, y;

    ck_assert(mem_has(m.buf, m.len, "secret-comment"));
    ck_assert_int_eq(qrt_logo_sanitise(pool, m.buf, m.len, &png, &len, &w, &h, &err),
                     APR_SUCCESS);
    ck_assert_int_eq(w, 40);
    ck_assert_int_eq(h, 30);
    ck_assert(!mem_has(png, len, "secret-comment"));
    ck_assert(!mem_has(png, len, "tEXt"));
    ck_assert_int_eq(qrt_logo_decode(pool, png, len, &w, &h, &rgba, &err), APR_SUCCESS);
    for (y = 0; y < h; y++) {
        for (x = 0; x < w; x++) {
            const unsigned char *px = rgba + ((apr_size_t)y * w + x) * 4;

            ck_assert_int_eq(px[0], x);
            ck_assert_int_eq(px[1], y);
            ck_assert_int_eq(px[2], x ^ y);
            ck_assert_int_eq(px[3], 200);
        }
    }
}
END_TEST

START_TEST(test_gray_becomes_opaque_rgba)
{
    const char *qr, *err = NULL;
    const unsigned char *rgba;
    apr_size_t len, i;
    int w, h;

    ck_assert_int_eq(qrt_qr_png_buf(pool, "logo", 4, NULL, &qr, &len, &err), APR_SUCCESS);
    ck_assert_int_eq(qrt_logo_decode(pool, (const unsigned char *)qr, len, &w, &h, &rgba,
                                     &err), APR_SUCCESS);
    ck_assert_int_ge(w, 64);
    for (i = 0; i < (apr_size_t)w * h; i++) {
        ck_assert(rgba[4 * i] == 0 || rgba[4 * i] == 255);
        ck_assert_int_eq(rgba[4 * i], rgba[4 * i + 2]);
        ck_assert_int_eq(rgba[4 * i + 3], 255);
    }
}
END_TEST

/* A PNG signature and an IHDR that claims w x h, then nothing but zeros. */
static unsigned char *bomb(apr_size_t len, apr_uint32_t w, apr_uint32_t h)
{
    static const unsigned char head[16] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n',
                                            0, 0, 0, 13, 'I', 'H', 'D', 'R' };
    unsigned char *b = apr_pcalloc(pool, len);

    memcpy(b, head, 16);
    b[16] = w >> 24; b[17] = w >> 16; b[18] = w >> 8; b[19] = w;
    b[20] = h >> 24; b[21] = h >> 16; b[22] = h >> 8; b[23] = h;
    b[24] = 8;
    b[25] = 6;
    return b;
}

START_TEST(test_bomb_refused_before_decoding)
{
    const unsigned char *rgba, *b = bomb(200 * 1024, 20000, 20000);
    const char *err = NULL;
    apr_time_t t0 = apr_time_now();
    int w, h;

    ck_assert_int_eq(qrt_logo_decode(pool, b, 200 * 1024, &w, &h, &rgba, &err), APR_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "1024"));
    ck_assert_int_lt(apr_time_now() - t0, apr_time_from_msec(50));
    ck_assert_int_eq(qrt_logo_header(bomb(64, 1025, 10), 64, &w, &h, &err), APR_EINVAL);
    ck_assert_int_eq(qrt_logo_header(bomb(64, 10, 0), 64, &w, &h, &err), APR_EINVAL);
    ck_assert_int_eq(qrt_logo_header(bomb(64, 1024, 1024), 64, &w, &h, &err), APR_SUCCESS);
    ck_assert_int_eq(w, 1024);
}
END_TEST

START_TEST(test_bad_inputs)
{
    mem_t m = make_png(20, 20);
    const unsigned char *rgba, *big = bomb(QRT_LOGO_MAX_BYTES + 1, 10, 10);
    const char *err = NULL;
    int w, h;
    apr_size_t n;

    ck_assert_int_eq(qrt_logo_decode(pool, big, QRT_LOGO_MAX_BYTES + 1, &w, &h, &rgba,
                                     &err), APR_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "262144"));
    ck_assert_int_eq(qrt_logo_decode(pool, (const unsigned char *)"GIF89a", 6, &w, &h,
                                     &rgba, &err), APR_EINVAL);
    ck_assert_int_eq(qrt_logo_decode(pool, NULL, 0, &w, &h, &rgba, &err), APR_EINVAL);
    for (n = 33; n < m.len; n += 7) {     /* every cut of a good image */
        ck_assert_int_eq(qrt_logo_decode(pool, m.buf, n, &w, &h, &rgba, &err), APR_EINVAL);
    }
    /* zeros where the IDAT should be: a CRC error, not a crash */
    ck_assert_int_eq(qrt_logo_decode(pool, bomb(4096, 100, 100), 4096, &w, &h, &rgba, &err),
                     APR_EINVAL);
}
END_TEST

START_TEST(test_colours_and_names)
{
    unsigned c;

    ck_assert_int_eq(qrt_colour_parse("#1a2B3c", &c), 1);
    ck_assert_uint_eq(c, 0x1a2b3c);
    ck_assert_int_eq(qrt_colour_parse("1a2b3c", &c), 0);
    ck_assert_int_eq(qrt_colour_parse("#1a2b3g", &c), 0);
    ck_assert_int_eq(qrt_colour_parse("#1a2b3c4", &c), 0);
    ck_assert_int_eq(qrt_colour_parse(NULL, &c), 0);
    ck_assert(qrt_contrast_ratio(0x000000, 0xffffff) > 20.99);
    ck_assert(qrt_contrast_ratio(0xffffff, 0x000000) > 20.99);
    ck_assert(qrt_contrast_ratio(0x777777, 0xffffff) < 4.5);
    ck_assert(qrt_contrast_ratio(0x767676, 0xffffff) >= 4.5);
    ck_assert_ptr_null(qrt_style_colours_check(pool, 0x767676, 0xffffff));
    ck_assert_ptr_nonnull(strstr(qrt_style_colours_check(pool, 0x777777, 0xffffff), "4.4"));
    ck_assert_ptr_nonnull(strstr(qrt_style_colours_check(pool, 0xffffff, 0x000000),
                                 "darker"));
    ck_assert(qrt_style_name_valid("default"));
    ck_assert(qrt_style_name_valid("Brand_2-dark"));
    ck_assert(!qrt_style_name_valid(""));
    ck_assert(!qrt_style_name_valid("a b"));
    ck_assert(!qrt_style_name_valid("a/b"));
    ck_assert(!qrt_style_name_valid(apr_psprintf(pool, "%065d", 1)));
    ck_assert(qrt_style_name_valid(apr_psprintf(pool, "%064d", 1)));
}
END_TEST

START_TEST(test_store_styles)
{
    qrt_db_t db;
    const char *dir = qrt_check_db_temp(pool, "style", &db);
    mem_t m = make_png(16, 8);
    qrt_style_t s, got, st;
    apr_array_header_t *list;
    apr_int64_t acc = 0, n = 0, v = 0;
    int created = 0, rows = 0;

    ck_assert_int_eq(qrt_store_account_add(&db, pool, "a", "enterprise", &acc), APR_SUCCESS);
    memset(&s, 0, sizeof(s));
    s.name = "brand";
    s.fg = "#112233";
    s.bg = "#FFFFFF";
    s.ecc = 'H';
    s.margin = 6;
    ck_assert_int_eq(qrt_logo_sanitise(pool, m.buf, m.len, &s.logo, &s.logo_len,
                                       &s.logo_width, &s.logo_height, NULL), APR_SUCCESS);
    ck_assert_int_eq(qrt_store_style_put(&db, pool, acc, &s, 0, &created, NULL),
                     APR_SUCCESS);
    ck_assert_int_eq(created, 1);
    ck_assert_int_eq(qrt_store_style_get(&db, pool, acc, "brand", &got), APR_SUCCESS);
    ck_assert_str_eq(got.fg, "#112233");
    ck_assert_int_eq(got.ecc, 'H');
    ck_assert_int_eq(got.margin, 6);
    ck_assert_int_eq(got.logo_width, 16);
    ck_assert_int_eq(got.logo_len, s.logo_len);
    ck_assert_mem_eq(got.logo, s.logo, s.logo_len);
    ck_assert_int_eq(got.version, 1);
    s.logo = NULL;
    s.ecc = 'L';
    ck_assert_int_eq(qrt_store_style_put(&db, pool, acc, &s, 0, &created, &st),
                     APR_SUCCESS);
    ck_assert_int_eq(created, 0);
    /* stored: what was written, its times and version read back in the transaction */
    ck_assert_str_eq(st.fg, "#112233");
    ck_assert_int_eq(st.ecc, 'L');
    ck_assert_int_eq(st.logo_len, 0);
    ck_assert_int_eq(st.created_at, got.created_at);
    ck_assert_int_ge(st.updated_at, got.updated_at);
    ck_assert_int_eq(st.version, 2);
    ck_assert_int_eq(qrt_store_style_get(&db, pool, acc, "brand", &got), APR_SUCCESS);
    ck_assert_ptr_null(got.logo);
    ck_assert_int_eq(got.logo_width, 0);
    ck_assert_int_eq(got.version, 2);
    ck_assert_int_eq(qrt_store_style_version(&db, pool, acc, "brand", &v), APR_SUCCESS);
    ck_assert_int_eq(v, 2);
    s.name = "another";
    ck_assert_int_eq(qrt_store_style_put(&db, pool, acc, &s, 0, &created, NULL),
                     APR_SUCCESS);
    ck_assert_int_eq(qrt_store_style_list(&db, pool, acc, &list), APR_SUCCESS);
    ck_assert_int_eq(list->nelts, 2);
    ck_assert_str_eq(APR_ARRAY_IDX(list, 0, qrt_style_t).name, "another");
    ck_assert_int_eq(qrt_store_style_count(&db, pool, acc, &n), APR_SUCCESS);
    ck_assert_int_eq(n, 2);
    /* at a limit of 2: a new name refused and nothing written, a name kept replaced */
    s.name = "third";
    created = -1;
    ck_assert_int_eq(qrt_store_style_put(&db, pool, acc, &s, 2, &created, NULL),
                     APR_ENOSPC);
    ck_assert_int_eq(created, 0);
    ck_assert_int_eq(qrt_store_style_version(&db, pool, acc, "third", &v), APR_SUCCESS);
    ck_assert_int_eq(v, 0);
    s.name = "another";
    ck_assert_int_eq(qrt_store_style_put(&db, pool, acc, &s, 2, &created, NULL),
                     APR_SUCCESS);
    ck_assert_int_eq(created, 0);
    /* versions: one count for every write (brand 1 and 2, another 3, the refused none) */
    ck_assert_int_eq(qrt_store_style_version(&db, pool, acc, "another", &v), APR_SUCCESS);
    ck_assert_int_eq(v, 4);
    ck_assert_int_eq(qrt_store_style_get(&db, pool, acc + 1, "brand", &got), APR_NOTFOUND);
    ck_assert_int_eq(qrt_store_style_delete(&db, pool, acc, "brand"), APR_SUCCESS);
    ck_assert_int_eq(qrt_store_style_delete(&db, pool, acc, "brand"), APR_NOTFOUND);
    /* made again: created, with a version it never had (a child may hold 1 or 2) */
    s.name = "brand";
    ck_assert_int_eq(qrt_store_style_put(&db, pool, acc, &s, 0, &created, NULL),
                     APR_SUCCESS);
    ck_assert_int_eq(created, 1);
    ck_assert_int_eq(qrt_store_style_version(&db, pool, acc, "brand", &v), APR_SUCCESS);
    ck_assert_int_eq(v, 5);
    /* a database without the count (made or copied before it): the count starts from the
     * greatest version stored, before a delete takes one away, so brand deleted and made
     * again gets 6, not one more than another's 4 (its own 5 again) */
    ck_assert_int_eq(apr_dbd_query(db.driver, db.handle, &rows, "DELETE FROM qrt_settings "
                                   "WHERE name = 'style_version'"), 0);
    ck_assert_int_eq(rows, 1);
    ck_assert_int_eq(qrt_store_style_delete(&db, pool, acc, "brand"), APR_SUCCESS);
    ck_assert_int_eq(qrt_store_style_put(&db, pool, acc, &s, 0, &created, NULL),
                     APR_SUCCESS);
    ck_assert_int_eq(created, 1);
    ck_assert_int_eq(qrt_store_style_version(&db, pool, acc, "brand", &v), APR_SUCCESS);
    ck_assert_int_eq(v, 6);
    qrt_check_db_remove(pool, &db, dir);
}
END_TEST

static Suite *logo_suite(void)
{
    Suite *s = suite_create("qrt_logo");
    TCase *tc = tcase_create("logo");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_sanitise_keeps_pixels_only);
    tcase_add_test(tc, test_gray_becomes_opaque_rgba);
    tcase_add_test(tc, test_bomb_refused_before_decoding);
    tcase_add_test(tc, test_bad_inputs);
    tcase_add_test(tc, test_colours_and_names);
    tcase_add_test(tc, test_store_styles);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(logo_suite());
}
