/* mod_qrtrack core: streamed ZIP of stored entries (APPNOTE.TXT 4.3: local header with
 * flag bit 3, data, data descriptor; central directory; end record). */

#include <string.h>

#include <zlib.h>

#include "apr_strings.h"
#include "apr_tables.h"

#include "qrt_zip.h"

#define ZIP_FLAGS      0x0808   /* bit 3: sizes in the data descriptor; bit 11: UTF-8 name */
#define ZIP_VERSION    20
#define ZIP_LIMIT      0xffffffffULL

typedef struct {
    const char *name;
    apr_uint32_t crc, size, offset;
} zip_rec_t;

struct qrt_zip_t {
    apr_pool_t *p;
    qrt_write_fn write;
    void *ctx;
    apr_uint16_t dos_time, dos_date;
    apr_uint64_t offset;        /* bytes written */
    apr_array_header_t *recs;   /* zip_rec_t */
    int open;                   /* an entry is open */
    apr_uint32_t crc;
    apr_uint64_t size;
    apr_status_t rv;            /* first failure: every later call returns it */
};

static void put16(unsigned char *b, unsigned v)
{
    b[0] = v & 0xff;
    b[1] = v >> 8 & 0xff;
}

static void put32(unsigned char *b, apr_uint32_t v)
{
    b[0] = v & 0xff;
    b[1] = v >> 8 & 0xff;
    b[2] = v >> 16 & 0xff;
    b[3] = v >> 24 & 0xff;
}

static apr_status_t zip_out(qrt_zip_t *z, const void *buf, apr_size_t len)
{
    if (z->rv != APR_SUCCESS) {
        return z->rv;
    }
    if (z->offset + len > ZIP_LIMIT) {
        return z->rv = APR_ENOSPC;
    }
    z->rv = z->write(z->ctx, buf, len);
    z->offset += len;
    return z->rv;
}

qrt_zip_t *qrt_zip_open(apr_pool_t *p, qrt_write_fn write, void *ctx, apr_time_t mtime)
{
    qrt_zip_t *z = apr_pcalloc(p, sizeof(*z));
    apr_time_exp_t t;

    z->p = p;
    z->write = write;
    z->ctx = ctx;
    z->recs = apr_array_make(p, 64, sizeof(zip_rec_t));
    z->rv = APR_SUCCESS;
    if (apr_time_exp_gmt(&t, mtime) != APR_SUCCESS || t.tm_year < 80) {
        memset(&t, 0, sizeof(t));
        t.tm_year = 80;
        t.tm_mday = 1;
    }
    z->dos_time = (apr_uint16_t)(t.tm_hour << 11 | t.tm_min << 5 | t.tm_sec / 2);
    z->dos_date = (apr_uint16_t)((t.tm_year - 80) << 9 | (t.tm_mon + 1) << 5 | t.tm_mday);
    return z;
}

apr_status_t qrt_zip_entry(qrt_zip_t *z, const char *name)
{
    unsigned char h[30];
    apr_size_t n = name ? strlen(name) : 0;
    zip_rec_t *rec;
    apr_status_t rv;

    if (z->open && (rv = qrt_zip_entry_end(z)) != APR_SUCCESS) {
        return rv;
    }
    if (z->rv != APR_SUCCESS) {
        return z->rv;
    }
    if (n == 0 || n > QRT_ZIP_NAME_MAX) {
        return APR_EINVAL;
    }
    if (z->recs->nelts >= QRT_ZIP_ENTRIES_MAX) {
        return APR_ENOSPC;
    }
    rec = apr_array_push(z->recs);
    rec->name = apr_pstrmemdup(z->p, name, n);
    rec->offset = (apr_uint32_t)z->offset;
    put32(h, 0x04034b50);
    put16(h + 4, ZIP_VERSION);
    put16(h + 6, ZIP_FLAGS);
    put16(h + 8, 0);                    /* stored */
    put16(h + 10, z->dos_time);
    put16(h + 12, z->dos_date);
    put32(h + 14, 0);                   /* CRC and sizes: in the data descriptor */
    put32(h + 18, 0);
    put32(h + 22, 0);
    put16(h + 26, (unsigned)n);
    put16(h + 28, 0);
    if (zip_out(z, h, sizeof(h)) != APR_SUCCESS || zip_out(z, name, n) != APR_SUCCESS) {
        return z->rv;
    }
    z->open = 1;
    z->crc = (apr_uint32_t)crc32(0L, Z_NULL, 0);
    z->size = 0;
    return APR_SUCCESS;
}

apr_status_t qrt_zip_write(void *ctx, const void *buf, apr_size_t len)
{
    qrt_zip_t *z = ctx;
    const unsigned char *b = buf;
    apr_size_t done = 0;

    if (!z->open) {
        return z->rv != APR_SUCCESS ? z->rv : APR_EINVAL;
    }
    while (done < len) {
        uInt chunk = len - done > 0x40000000 ? 0x40000000 : (uInt)(len - done);

        z->crc = (apr_uint32_t)crc32(z->crc, b + done, chunk);
        done += chunk;
    }
    z->size += len;
    return zip_out(z, buf, len);
}

apr_status_t qrt_zip_entry_end(qrt_zip_t *z)
{
    unsigned char d[16];
    zip_rec_t *rec;

    if (!z->open) {
        return z->rv;
    }
    z->open = 0;
    rec = &APR_ARRAY_IDX(z->recs, z->recs->nelts - 1, zip_rec_t);
    rec->crc = z->crc;
    rec->size = (apr_uint32_t)z->size;
    put32(d, 0x08074b50);
    put32(d + 4, rec->crc);
    put32(d + 8, rec->size);
    put32(d + 12, rec->size);
    return zip_out(z, d, sizeof(d));
}

apr_status_t qrt_zip_close(qrt_zip_t *z)
{
    unsigned char h[46], e[22];
    apr_uint64_t start;
    int i;

    if (qrt_zip_entry_end(z) != APR_SUCCESS) {
        return z->rv;
    }
    start = z->offset;
    for (i = 0; i < z->recs->nelts; i++) {
        const zip_rec_t *rec = &APR_ARRAY_IDX(z->recs, i, zip_rec_t);
        apr_size_t n = strlen(rec->name);

        put32(h, 0x02014b50);
        put16(h + 4, 3 << 8 | ZIP_VERSION);    /* made by: Unix */
        put16(h + 6, ZIP_VERSION);
        put16(h + 8, ZIP_FLAGS);
        put16(h + 10, 0);
        put16(h + 12, z->dos_time);
        put16(h + 14, z->dos_date);
        put32(h + 16, rec->crc);
        put32(h + 20, rec->size);
        put32(h + 24, rec->size);
        put16(h + 28, (unsigned)n);
        put16(h + 30, 0);               /* extra */
        put16(h + 32, 0);               /* comment */
        put16(h + 34, 0);               /* disk */
        put16(h + 36, 0);               /* internal attributes */
        put32(h + 38, 0100644UL << 16); /* external: a regular file, rw-r--r-- */
        put32(h + 42, rec->offset);
        if (zip_out(z, h, sizeof(h)) != APR_SUCCESS
            || zip_out(z, rec->name, n) != APR_SUCCESS) {
            return z->rv;
        }
    }
    put32(e, 0x06054b50);
    put16(e + 4, 0);
    put16(e + 6, 0);
    put16(e + 8, (unsigned)z->recs->nelts);
    put16(e + 10, (unsigned)z->recs->nelts);
    put32(e + 12, (apr_uint32_t)(z->offset - start));
    put32(e + 16, (apr_uint32_t)start);
    put16(e + 20, 0);
    return zip_out(z, e, sizeof(e));
}

apr_uint64_t qrt_zip_offset(const qrt_zip_t *z)
{
    return z->offset;
}
