/* qrt_store_style: an account's named image styles (schema 27, sql/statements/style.sql). */
#ifndef QRT_STORE_STYLE_H
#define QRT_STORE_STYLE_H

#include "qrt_store.h"
#include "qrt_style.h"

/* Creates or replaces account_id's style s->name (every field of s but the times and
 * version, which the store sets: the version, at each write the next of a count of the
 * installation's, is never one a style of that name had before, deleted ones included);
 * *created 1 when it is new. APR_ENOSPC when the name is new and the account has limit
 * styles already (limit 0: no limit). stored (or NULL): s as written, with the times
 * and version read back in the same transaction, so a delete committed right after
 * cannot take it from the caller's answer. */
apr_status_t qrt_store_style_put(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                 const qrt_style_t *s, int limit, int *created,
                                 qrt_style_t *stored);
/* account_id's styles by name, into *out (qrt_style_t; logo NULL, logo_len its size). */
apr_status_t qrt_store_style_list(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                  apr_array_header_t **out);
/* One style with its logo; APR_NOTFOUND when account_id has none of that name. */
apr_status_t qrt_store_style_get(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                 const char *name, qrt_style_t *out);
/* The style's version alone (*version 0 when there is no such style). */
apr_status_t qrt_store_style_version(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                     const char *name, apr_int64_t *version);
apr_status_t qrt_store_style_count(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                   apr_int64_t *n);
/* APR_NOTFOUND when there was no such style. After the account's row, as a write. */
apr_status_t qrt_store_style_delete(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                    const char *name);

#endif
