/* mod_qrtrack core: a style's logo, checked, decoded and written again (qrt_logo.h). */
#include <setjmp.h>
#include <string.h>
#include <png.h>
#include <apr_strings.h>

#include "qrt_logo.h"

/* Text, profiles and other metadata are never read: only the pixels are kept. */
static const png_byte logo_skipped[] = "tEXt\0zTXt\0iTXt\0iCCP\0sPLT\0eXIf\0tIME\0pHYs\0";

/* Bytes libpng may allocate for one ancillary chunk, and how many it caches. */
#define LOGO_CHUNK_MALLOC_MAX (64 * 1024)
#define LOGO_CHUNK_CACHE_MAX  32

typedef struct {
    apr_pool_t *p;
    const unsigned char *in;    /* reading */
    apr_size_t len, off;
    unsigned char *out;         /* writing */
    apr_size_t out_len, out_cap;
    char msg[128];
} logo_io_t;

static apr_status_t logo_fail(const char **err, const char *msg)
{
    if (err) {
        *err = msg;
    }
    return APR_EINVAL;
}

static apr_uint32_t logo_be32(const unsigned char *b)
{
    return ((apr_uint32_t)b[0] << 24) | ((apr_uint32_t)b[1] << 16)
           | ((apr_uint32_t)b[2] << 8) | (apr_uint32_t)b[3];
}

apr_status_t qrt_logo_header(const unsigned char *buf, apr_size_t len, int *width,
                             int *height, const char **err)
{
    static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    apr_uint32_t w, h;

    if (!buf || len < 33 || memcmp(buf, sig, 8) != 0) {
        return logo_fail(err, "not a PNG image");
    }
    if (logo_be32(buf + 8) != 13 || memcmp(buf + 12, "IHDR", 4) != 0) {
        return logo_fail(err, "not a PNG image (no IHDR chunk first)");
    }
    w = logo_be32(buf + 16);
    h = logo_be32(buf + 20);
    if (w == 0 || h == 0 || w > QRT_LOGO_MAX_DIM || h > QRT_LOGO_MAX_DIM) {
        return logo_fail(err, "the image is larger than 1024 x 1024 pixels (or empty)");
    }
    *width = (int)w;
    *height = (int)h;
    return APR_SUCCESS;
}

static void logo_png_error(png_structp png, png_const_charp msg)
{
    logo_io_t *io = png_get_error_ptr(png);

    if (io && !io->msg[0]) {
        apr_cpystrn(io->msg, msg ? msg : "unknown error", sizeof(io->msg));
    }
    png_longjmp(png, 1);
}

static void logo_png_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

static void logo_png_read(png_structp png, png_bytep data, png_size_t n)
{
    logo_io_t *io = png_get_io_ptr(png);

    if (n > io->len - io->off) {
        png_error(png, "the image data ends early");
    }
    memcpy(data, io->in + io->off, n);
    io->off += n;
}

static void logo_png_write(png_structp png, png_bytep data, png_size_t n)
{
    logo_io_t *io = png_get_io_ptr(png);

    if (n > io->out_cap - io->out_len) {
        apr_size_t cap = io->out_cap ? io->out_cap : 64 * 1024;
        unsigned char *b;

        while (cap - io->out_len < n) {
            cap *= 2;
        }
        b = apr_palloc(io->p, cap);
        if (io->out_len) {
            memcpy(b, io->out, io->out_len);
        }
        io->out = b;
        io->out_cap = cap;
    }
    memcpy(io->out + io->out_len, data, n);
    io->out_len += n;
}

static void logo_png_flush(png_structp png)
{
    (void)png;
}

/* The transforms that make every PNG colour type 8-bit RGBA. */
static void logo_to_rgba(png_structp png, png_infop info)
{
    int type = png_get_color_type(png, info);

    png_set_expand(png);
    png_set_strip_16(png);
    if (type == PNG_COLOR_TYPE_GRAY || type == PNG_COLOR_TYPE_GRAY_ALPHA) {
        png_set_gray_to_rgb(png);
    }
    if (!(type & PNG_COLOR_MASK_ALPHA) && !png_get_valid(png, info, PNG_INFO_tRNS)) {
        png_set_add_alpha(png, 0xff, PNG_FILLER_AFTER);
    }
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
}

/* Reads io->in into *rgba; longjmps back here on any libpng error. */
static apr_status_t logo_read(logo_io_t *io, int *width, int *height,
                              const unsigned char **rgba, const char **err)
{
    png_structp png;
    png_infop info = NULL;
    unsigned char *volatile pixels = NULL;
    png_bytep *volatile rows = NULL;
    png_uint_32 w, h, y;

    png = png_create_read_struct(PNG_LIBPNG_VER_STRING, io, logo_png_error,
                                 logo_png_warning);
    if (!png || !(info = png_create_info_struct(png))) {
        png_destroy_read_struct(png ? &png : NULL, NULL, NULL);
        return APR_ENOMEM;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        *err = apr_pstrcat(io->p, "the PNG image cannot be decoded: ", io->msg, NULL);
        return APR_EINVAL;
    }
    png_set_user_limits(png, QRT_LOGO_MAX_DIM, QRT_LOGO_MAX_DIM);
    png_set_chunk_malloc_max(png, LOGO_CHUNK_MALLOC_MAX);
    png_set_chunk_cache_max(png, LOGO_CHUNK_CACHE_MAX);
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, NULL, 0);
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, logo_skipped,
                                (int)(sizeof(logo_skipped) / 5));
    png_set_read_fn(png, io, logo_png_read);
    png_read_info(png, info);
    w = png_get_image_width(png, info);
    h = png_get_image_height(png, info);
    logo_to_rgba(png, info);
    if (png_get_rowbytes(png, info) != (png_size_t)w * 4) {
        png_error(png, "unexpected row size");
    }
    pixels = apr_palloc(io->p, (apr_size_t)w * h * 4);
    rows = apr_palloc(io->p, h * sizeof(png_bytep));
    for (y = 0; y < h; y++) {
        rows[y] = pixels + (apr_size_t)y * w * 4;
    }
    png_read_image(png, rows);
    png_read_end(png, NULL);
    png_destroy_read_struct(&png, &info, NULL);
    *width = (int)w;
    *height = (int)h;
    *rgba = pixels;
    return APR_SUCCESS;
}

apr_status_t qrt_logo_decode(apr_pool_t *p, const unsigned char *buf, apr_size_t len,
                             int *width, int *height, const unsigned char **rgba,
                             const char **err)
{
    logo_io_t io;
    const char *e = NULL;
    apr_status_t rv;
    int w, h;

    if (len > QRT_LOGO_MAX_BYTES) {
        return logo_fail(err, "the image is larger than 262144 bytes");
    }
    if ((rv = qrt_logo_header(buf, len, &w, &h, err)) != APR_SUCCESS) {
        return rv;
    }
    memset(&io, 0, sizeof(io));
    io.p = p;
    io.in = buf;
    io.len = len;
    rv = logo_read(&io, width, height, rgba, &e);
    if (rv != APR_SUCCESS && err) {
        *err = e ? e : "out of memory";
    }
    return rv;
}

/* Writes rgba as a plain RGBA PNG into io->out. */
static apr_status_t logo_write(logo_io_t *io, int width, int height,
                               const unsigned char *rgba, const char **err)
{
    png_structp png;
    png_infop info = NULL;
    int y;

    png = png_create_write_struct(PNG_LIBPNG_VER_STRING, io, logo_png_error,
                                  logo_png_warning);
    if (!png || !(info = png_create_info_struct(png))) {
        png_destroy_write_struct(png ? &png : NULL, NULL);
        return APR_ENOMEM;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        *err = apr_pstrcat(io->p, "the PNG image cannot be written: ", io->msg, NULL);
        return APR_EGENERAL;
    }
    png_set_write_fn(png, io, logo_png_write, logo_png_flush);
    png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8,
                 PNG_COLOR_TYPE_RGB_ALPHA, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (y = 0; y < height; y++) {
        png_write_row(png, (png_const_bytep)(rgba + (apr_size_t)y * width * 4));
    }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return APR_SUCCESS;
}

apr_status_t qrt_logo_sanitise(apr_pool_t *p, const unsigned char *buf, apr_size_t len,
                               const unsigned char **png, apr_size_t *png_len,
                               int *width, int *height, const char **err)
{
    const unsigned char *rgba;
    logo_io_t io;
    const char *e = NULL;
    apr_status_t rv = qrt_logo_decode(p, buf, len, width, height, &rgba, err);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    memset(&io, 0, sizeof(io));
    io.p = p;
    rv = logo_write(&io, *width, *height, rgba, &e);
    if (rv != APR_SUCCESS) {
        if (err) {
            *err = e ? e : "out of memory";
        }
        return rv;
    }
    *png = io.out;
    *png_len = io.out_len;
    return APR_SUCCESS;
}
