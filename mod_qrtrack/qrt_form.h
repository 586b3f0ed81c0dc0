/* mod_qrtrack core: form bodies.
 *
 * A bounded streaming multipart/form-data parser (RFC 7578 / RFC 2046)
 * and an application/x-www-form-urlencoded parser. No httpd header here.
 */

#ifndef QRT_FORM_H
#define QRT_FORM_H

#include "apr.h"
#include "apr_errno.h"
#include "apr_pools.h"
#include "apr_tables.h"

/* 1 when the Content-Type value ct is the media type type ("application/json"), in any
 * case, alone or with parameters ("application/json; charset=utf-8"); 0 for another
 * ("application/jsonx", "application/json-seq") or a NULL ct. */
int qrt_form_type_is(const char *ct, const char *type);

typedef struct {
    apr_size_t max_parts;        /* default 32 */
    apr_size_t max_part_size;    /* bytes of one part's body, default 64 KiB */
    apr_size_t max_header_size;  /* bytes of one part's header block, default 8 KiB */
} qrt_multipart_limits_t;

/* Fill *l with the defaults: 32 parts, 64 KiB per part, 8 KiB of headers. */
void qrt_multipart_limits_default(qrt_multipart_limits_t *l);

typedef struct qrt_multipart_t qrt_multipart_t;

/* Create a parser in pool p. content_type is the whole Content-Type header
 * value; the boundary (quoted or not, 1..70 chars, RFC 2046) is taken from
 * it. l may be NULL for the defaults; it is copied. Returns NULL with *err
 * when it is not multipart/form-data or has no valid boundary. Parts are
 * held in p until it is cleared; scratch buffers are freed by a cleanup
 * on p. */
qrt_multipart_t *qrt_multipart_create(apr_pool_t *p, const char *content_type,
                                      const qrt_multipart_limits_t *l,
                                      const char **err);

/* Feed body bytes in chunks split anywhere (even inside a boundary or
 * CRLF). Returns APR_SUCCESS, APR_ENOSPC when a limit is exceeded,
 * APR_EINVAL when malformed; *err says what. After an error every later
 * call returns the same error. Memory stays bounded by the limits:
 * about max_parts * max_part_size + max_part_size + max_header_size. */
apr_status_t qrt_multipart_feed(qrt_multipart_t *mp, const char *buf,
                                apr_size_t len, const char **err);

/* After the last chunk: APR_EINVAL if the closing boundary was never seen.
 * Adds each part's form-data name and value to fields (apr_table_add, so
 * repeated names are kept in order); values are NUL-terminated copies; a
 * value containing a NUL byte -> APR_EINVAL (nothing is added then).
 * Parts with a filename are included too (value = file content). */
apr_status_t qrt_multipart_finish(qrt_multipart_t *mp, apr_table_t *fields,
                                  const char **err);

/* The same, but the parts named file (NULL: none) may hold any bytes and are not added
 * to fields: *data and *len get the first one's (in the parser's pool; NULL and 0 when
 * there is none). */
apr_status_t qrt_multipart_finish_file(qrt_multipart_t *mp, apr_table_t *fields,
                                       const char *file, const char **data,
                                       apr_size_t *len, const char **err);

/* application/x-www-form-urlencoded (also used for query strings):
 * '&'-separated, '+' -> space, %XX decoded, keys without '=' get "", empty
 * pieces (a&&b) are skipped. apr_table_add keeps repeated keys in order.
 * %00, a raw NUL byte or a bad % escape -> APR_EINVAL with *err, and
 * nothing is added to fields. body may be NULL when len is 0. */
apr_status_t qrt_form_urlencoded(apr_pool_t *p, const char *body,
                                 apr_size_t len, apr_table_t *fields,
                                 const char **err);

/* The query string with the value of every name= pair (key compared after
 * %-decoding and case-insensitively, as an APR table looks it up, so
 * API%5FToken= counts too) replaced by mask; NULL when
 * no pair has that key. Everything else is kept byte for byte. */
char *qrt_form_redact(apr_pool_t *p, const char *query, const char *name,
                      const char *mask);

/* The same with at most max_fields non-empty pieces (0 = no limit): more ->
 * APR_ENOSPC with *err "more than N fields", before anything is decoded or
 * added. */
apr_status_t qrt_form_urlencoded_max(apr_pool_t *p, const char *body,
                                     apr_size_t len, apr_size_t max_fields,
                                     apr_table_t *fields, const char **err);

#endif /* QRT_FORM_H */
