/* mod_qrtrack core: QR code to PNG (libqrencode + libpng). */

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>
#include <qrencode.h>

#include "apr_strings.h"

#include "qrt_qr.h"

/* Largest input any QR code holds (numeric, version 40-L); 8-bit data
 * tops out at 2953 bytes. Checked before the int cast for libqrencode. */
#define QRT_QR_MAX_INPUT      7089

/* Upper bound for qrt_qr_png_buf(); a 2048 px 1-bit PNG is far smaller. */
#define QRT_QR_MAX_PNG        (64 * 1024 * 1024)

/* libqrencode keeps lazily built tables in static memory and guards them
 * with a mutex only when built with pthread (Debian 12's libqrencode4 is:
 * it imports pthread_mutex_lock). Encoding is serialised here as well so
 * that any build is safe; encoding is short next to the PNG part, which runs
 * unlocked. Build with
 * -DQRT_QRENCODE_THREADSAFE to drop the lock for a known-safe library. */
#ifndef QRT_QRENCODE_THREADSAFE
static pthread_mutex_t qrt_qr_mutex = PTHREAD_MUTEX_INITIALIZER;
#define QRT_QR_LOCK()   pthread_mutex_lock(&qrt_qr_mutex)
#define QRT_QR_UNLOCK() pthread_mutex_unlock(&qrt_qr_mutex)
#else
#define QRT_QR_LOCK()
#define QRT_QR_UNLOCK()
#endif

typedef struct {
    qrt_write_fn write;
    void *ctx;
    apr_status_t write_rv;   /* status of a failed write, else APR_SUCCESS */
    char msg[120];           /* first libpng error message */
} qrt_qr_io_t;

typedef struct {
    char *buf;
    apr_size_t len;
    apr_size_t cap;
} qrt_qr_mem_t;

void qrt_qr_opts_default(qrt_qr_opts_t *o)
{
    o->size = QRT_QR_SIZE_DEFAULT;
    o->margin = QRT_QR_MARGIN_DEFAULT;
    o->ecc = QRT_QR_ECC_DEFAULT;
}

static void qrt_qr_png_error(png_structp png, png_const_charp msg)
{
    qrt_qr_io_t *io = png_get_error_ptr(png);

    if (io && !io->msg[0]) {
        apr_cpystrn(io->msg, msg ? msg : "unknown error", sizeof(io->msg));
    }
    png_longjmp(png, 1);
}

static void qrt_qr_png_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

static void qrt_qr_png_write(png_structp png, png_bytep data, png_size_t len)
{
    qrt_qr_io_t *io = png_get_io_ptr(png);
    apr_status_t rv;

    rv = io->write(io->ctx, data, len);
    if (rv != APR_SUCCESS) {
        io->write_rv = rv;
        png_error(png, "write failed");
    }
}

static void qrt_qr_png_flush(png_structp png)
{
    (void)png;
}

static apr_status_t qrt_qr_fail(apr_status_t rv, const char **err,
                                const char *msg)
{
    if (err) {
        *err = msg;
    }
    return rv;
}

static int qrt_qr_level(char ecc, QRecLevel *level)
{
    switch (ecc) {
    case 'L': case 'l':
        *level = QR_ECLEVEL_L;
        return 1;
    case 'M': case 'm':
        *level = QR_ECLEVEL_M;
        return 1;
    case 'Q': case 'q':
        *level = QR_ECLEVEL_Q;
        return 1;
    case 'H': case 'h':
        *level = QR_ECLEVEL_H;
        return 1;
    }
    return 0;
}

/* Non-ASCII text that is well-formed UTF-8 (no overlong forms, no
 * surrogates, at most U+10FFFF). */
static int qrt_qr_is_utf8(const unsigned char *s, apr_size_t len)
{
    apr_size_t i = 0;
    int high = 0;

    while (i < len) {
        unsigned char c = s[i];
        apr_size_t n, k;
        unsigned long cp, min;

        if (c < 0x80) {
            i++;
            continue;
        }
        high = 1;
        if (c >= 0xc2 && c <= 0xdf) {
            n = 1;
            cp = c & 0x1f;
            min = 0x80;
        }
        else if (c >= 0xe0 && c <= 0xef) {
            n = 2;
            cp = c & 0x0f;
            min = 0x800;
        }
        else if (c >= 0xf0 && c <= 0xf4) {
            n = 3;
            cp = c & 0x07;
            min = 0x10000;
        }
        else {
            return 0;
        }
        if (len - i <= n) {
            return 0;
        }
        for (k = 1; k <= n; k++) {
            if ((s[i + k] & 0xc0) != 0x80) {
                return 0;
            }
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
            return 0;
        }
        i += n + 1;
    }
    return high;
}

/* Encode text and copy the modules into pool memory: one byte per module,
 * 1 = dark. *width is the number of modules per side. Text that is
 * non-ASCII UTF-8 gets an ECI 26 (UTF-8) header: without it readers guess
 * the character set, and zbar and ZXing take some UTF-8 for Shift JIS. */
static apr_status_t qrt_qr_modules(apr_pool_t *p, const char *text,
                                   apr_size_t len, QRecLevel level,
                                   unsigned char **mods, int *width,
                                   const char **err)
{
    const unsigned char *data = (const unsigned char *)text;
    int utf8 = qrt_qr_is_utf8(data, len);
    QRinput *in;
    QRcode *qr = NULL;
    int e, i, n;
    unsigned char *m;

    QRT_QR_LOCK();
    errno = 0;
    in = QRinput_new2(0, level);
    if (in) {
        if ((!utf8 || QRinput_appendECIheader(in, 26) == 0)
            && QRinput_append(in, QR_MODE_8, (int)len, data) == 0) {
            qr = QRcode_encodeInput(in);
        }
    }
    e = errno;
    if (in) {
        QRinput_free(in);
    }
    QRT_QR_UNLOCK();

    if (!qr) {
        if (e == ERANGE) {
            return qrt_qr_fail(APR_EINVAL, err, "data too long for a QR code");
        }
        if (e == ENOMEM) {
            return qrt_qr_fail(APR_ENOMEM, err, "out of memory");
        }
        return qrt_qr_fail(APR_EINVAL, err, "data cannot be QR encoded");
    }
    if (qr->width <= 0 || qr->width > 177) {
        QRcode_free(qr);
        return qrt_qr_fail(APR_EGENERAL, err, "QR encoder returned bad width");
    }
    n = qr->width * qr->width;
    m = apr_palloc(p, n);
    for (i = 0; i < n; i++) {
        m[i] = qr->data[i] & 1;
    }
    *width = qr->width;
    QRcode_free(qr);
    *mods = m;
    return APR_SUCCESS;
}

apr_status_t qrt_qr_encode(apr_pool_t *p, const char *text, apr_size_t len, char ecc,
                           unsigned char **mods, int *width, const char **err)
{
    QRecLevel level;

    if (!qrt_qr_level(ecc, &level)) {
        return qrt_qr_fail(APR_EINVAL, err, "ecc must be L, M, Q or H");
    }
    if (len == 0 || !text) {
        return qrt_qr_fail(APR_EINVAL, err, "no data to encode");
    }
    if (len > QRT_QR_MAX_INPUT) {
        return qrt_qr_fail(APR_EINVAL, err, "data too long for a QR code");
    }
    return qrt_qr_modules(p, text, len, level, mods, width, err);
}

/* Everything libpng touches after setjmp() is set up before it, so a
 * longjmp() skips no cleanup: the only resource is the png/info pair,
 * destroyed on both paths. */
static int qrt_qr_write_png(qrt_qr_io_t *io, png_uint_32 img,
                            const unsigned char *mods, int width, int margin,
                            int scale, int off, unsigned char *row,
                            apr_size_t rowbytes)
{
    png_structp png;
    png_infop info;
    volatile int ok = 0;

    png = png_create_write_struct(PNG_LIBPNG_VER_STRING, io,
                                  qrt_qr_png_error, qrt_qr_png_warning);
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
        int cur = -2;    /* module row now held in row; -1 = all white */
        int total = width + 2 * margin;

        png_set_write_fn(png, io, qrt_qr_png_write, qrt_qr_png_flush);
        png_set_IHDR(png, info, img, img, 1, PNG_COLOR_TYPE_GRAY,
                     PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                     PNG_FILTER_TYPE_DEFAULT);
        png_set_filter(png, 0, PNG_FILTER_NONE);
        png_write_info(png, info);

        for (y = 0; y < img; y++) {
            long my = (long)y - off;
            int want = -1;

            if (my >= 0 && my < (long)total * scale) {
                my = my / scale - margin;
                if (my >= 0 && my < width) {
                    want = (int)my;
                }
            }
            if (want != cur) {
                memset(row, 0xff, rowbytes);
                if (want >= 0) {
                    const unsigned char *src = mods + (apr_size_t)want * width;
                    int mx, k;

                    for (mx = 0; mx < width; mx++) {
                        long x0;

                        if (!src[mx]) {
                            continue;
                        }
                        x0 = off + (long)(mx + margin) * scale;
                        for (k = 0; k < scale; k++) {
                            long x = x0 + k;
                            row[x >> 3] &= (unsigned char)~(0x80u >> (x & 7));
                        }
                    }
                }
                cur = want;
            }
            png_write_row(png, row);
        }
        png_write_end(png, info);
        ok = 1;
    }
    png_destroy_write_struct(&png, &info);
    return ok;
}

apr_status_t qrt_qr_png(apr_pool_t *p, const char *text, apr_size_t len,
                        const qrt_qr_opts_t *o, qrt_write_fn write,
                        void *ctx, const char **err)
{
    qrt_qr_opts_t defaults;
    QRecLevel level;
    unsigned char *mods, *row;
    int width, total, scale, off;
    apr_size_t img, rowbytes;
    qrt_qr_io_t io;
    apr_status_t rv;

    if (!o) {
        qrt_qr_opts_default(&defaults);
        o = &defaults;
    }
    if (!write) {
        return qrt_qr_fail(APR_EINVAL, err, "no output");
    }
    if (o->size < QRT_QR_SIZE_MIN || o->size > QRT_QR_SIZE_MAX) {
        return qrt_qr_fail(APR_EINVAL, err, "size must be 64 to 2048 pixels");
    }
    if (o->margin < QRT_QR_MARGIN_MIN || o->margin > QRT_QR_MARGIN_MAX) {
        return qrt_qr_fail(APR_EINVAL, err, "margin must be 0 to 16 modules");
    }
    if (!qrt_qr_level(o->ecc, &level)) {
        return qrt_qr_fail(APR_EINVAL, err, "ecc must be L, M, Q or H");
    }
    if (len == 0 || !text) {
        return qrt_qr_fail(APR_EINVAL, err, "no data to encode");
    }
    if (len > QRT_QR_MAX_INPUT) {
        return qrt_qr_fail(APR_EINVAL, err, "data too long for a QR code");
    }

    rv = qrt_qr_modules(p, text, len, level, &mods, &width, err);
    if (rv != APR_SUCCESS) {
        return rv;
    }

    /* at most 177 + 32 = 209 modules; size at most 2048: no overflow */
    total = width + 2 * o->margin;
    scale = o->size / total;
    if (scale < 2) {
        scale = 2;              /* (1-pixel modules: no scanner reads them) */
    }
    img = (apr_size_t)total * scale;
    off = 0;
    if (img < (apr_size_t)o->size) {
        off = (int)(((apr_size_t)o->size - img) / 2);
        img = o->size;
    }
    rowbytes = (img + 7) / 8;
    row = apr_palloc(p, rowbytes);

    memset(&io, 0, sizeof(io));
    io.write = write;
    io.ctx = ctx;
    io.write_rv = APR_SUCCESS;
    if (!qrt_qr_write_png(&io, (png_uint_32)img, mods, width, o->margin,
                          scale, off, row, rowbytes)) {
        if (io.write_rv != APR_SUCCESS) {
            return qrt_qr_fail(io.write_rv, err, "writing the PNG failed");
        }
        if (err) {
            *err = apr_pstrcat(p, "PNG encoding failed: ", io.msg, NULL);
        }
        return APR_EGENERAL;
    }
    return APR_SUCCESS;
}

static apr_status_t qrt_qr_mem_write(void *ctx, const void *buf,
                                     apr_size_t len)
{
    qrt_qr_mem_t *m = ctx;

    if (len > QRT_QR_MAX_PNG - m->len) {
        return APR_ENOSPC;
    }
    if (m->len + len > m->cap) {
        apr_size_t cap = m->cap ? m->cap : 4096;
        char *nb;

        while (cap < m->len + len) {
            cap *= 2;
        }
        nb = realloc(m->buf, cap);
        if (!nb) {
            return APR_ENOMEM;
        }
        m->buf = nb;
        m->cap = cap;
    }
    memcpy(m->buf + m->len, buf, len);
    m->len += len;
    return APR_SUCCESS;
}

apr_status_t qrt_qr_png_buf(apr_pool_t *p, const char *text, apr_size_t len,
                            const qrt_qr_opts_t *o, const char **png,
                            apr_size_t *png_len, const char **err)
{
    qrt_qr_mem_t m;
    apr_status_t rv;

    memset(&m, 0, sizeof(m));
    rv = qrt_qr_png(p, text, len, o, qrt_qr_mem_write, &m, err);
    if (rv == APR_SUCCESS) {
        *png = apr_pmemdup(p, m.buf, m.len);
        *png_len = m.len;
    }
    free(m.buf);
    return rv;
}
