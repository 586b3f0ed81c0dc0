/* mod_qrtrack core: a ZIP archive written as a stream (stored entries, data descriptors).
 *
 * Each entry's bytes go straight to the sink as they come; its CRC-32 (zlib) and size
 * follow in a data descriptor, and the central directory at the end repeats them. Only
 * the central directory's records (name, CRC, sizes, offset) are kept, so memory grows
 * with the number of entries, never with their bytes. No ZIP64: at most 65535 entries
 * and 4 GiB. No httpd header here.
 */
#ifndef QRT_ZIP_H
#define QRT_ZIP_H

#include "apr.h"
#include "apr_errno.h"
#include "apr_pools.h"
#include "apr_time.h"

#include "qrt_qr.h"             /* qrt_write_fn */

#define QRT_ZIP_ENTRIES_MAX 65535
#define QRT_ZIP_NAME_MAX    255

typedef struct qrt_zip_t qrt_zip_t;

/* A new archive writing through write(ctx, ...); entries are dated mtime (UTC). */
qrt_zip_t *qrt_zip_open(apr_pool_t *p, qrt_write_fn write, void *ctx, apr_time_t mtime);
/* Starts an entry named name (1..QRT_ZIP_NAME_MAX bytes, no NUL; UTF-8 flagged). An
 * entry still open is ended first. APR_EINVAL for a bad name, APR_ENOSPC past the
 * limits, or write's status. */
apr_status_t qrt_zip_entry(qrt_zip_t *z, const char *name);
/* The current entry's bytes (a qrt_write_fn: ctx is the qrt_zip_t). */
apr_status_t qrt_zip_write(void *z, const void *buf, apr_size_t len);
/* Ends the current entry (its data descriptor). */
apr_status_t qrt_zip_entry_end(qrt_zip_t *z);
/* Ends any open entry and writes the central directory; the archive is then complete. */
apr_status_t qrt_zip_close(qrt_zip_t *z);
/* Bytes written so far. */
apr_uint64_t qrt_zip_offset(const qrt_zip_t *z);

#endif /* QRT_ZIP_H */
