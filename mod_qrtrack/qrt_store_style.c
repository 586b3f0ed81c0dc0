/* qrt_store_style: an account's named image styles (qrt_store_style.h). */
#include <string.h>
#include <apr_strings.h>
#include <apr_time.h>

#include "qrt_store_style.h"

/* Makes sure the setting style_version is there (from the greatest version stored) before
 * a style is written or deleted: made later, it could start below a deleted one's. */
static apr_status_t style_version_start(qrt_db_t *db, apr_pool_t *p)
{
    apr_int64_t n = 0;
    apr_status_t rv = qrt_db_select_int(db, p, SQL_style_version_started, NULL, &n);

    return rv != APR_SUCCESS || n ? rv : qrt_db_exec(db, p, SQL_style_version_start, NULL,
                                                      NULL);
}

/* The installation's next style version, in the caller's transaction (style.sql). */
static apr_status_t style_version_next(qrt_db_t *db, apr_pool_t *p, apr_int64_t *version)
{
    int n = 0;
    apr_status_t rv = style_version_start(db, p);

    if (rv == APR_SUCCESS) {
        rv = qrt_db_exec(db, p, SQL_style_version_next, &n, NULL);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_db_select_int(db, p, SQL_style_version_last, NULL, version);
    }
    if (rv == APR_SUCCESS && (n != 1 || *version <= 0)) {
        db->error = "the setting style_version is missing or not a number";
        rv = APR_EGENERAL;
    }
    return rv;
}

/* The times and version of account_id's style s->name, into *stored with s's fields. */
static apr_status_t style_stored(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                 const qrt_style_t *s, qrt_style_t *stored)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *args[] = { &account_id, s->name };
    apr_status_t rv = qrt_db_select(db, p, SQL_style_stored, &res, args);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = APR_EGENERAL;
    *stored = *s;
    if (!s->logo) {
        /* as style_put writes it: no logo, no size */
        stored->logo_len = 0;
        stored->logo_width = stored->logo_height = 0;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        stored->created_at = qrt_db_int(db, row, 0, 0);
        stored->updated_at = qrt_db_int(db, row, 1, 0);
        stored->version = qrt_db_int(db, row, 2, 0);
        rv = APR_SUCCESS;
    }
    if (rv != APR_SUCCESS) {
        db->error = "the style just written is not there";
    }
    return rv;
}

apr_status_t qrt_store_style_put(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                 const qrt_style_t *s, int limit, int *created,
                                 qrt_style_t *stored)
{
    apr_int64_t now = apr_time_sec(apr_time_now()), version = 0, n = 0, next = 0;
    char ecc[2] = { s->ecc, '\0' };
    int margin = s->margin, w = s->logo_width, h = s->logo_height;
    apr_size_t len = s->logo_len;
    const void *args[] = { &account_id, s->name, s->fg, s->bg, ecc, &margin,
                           s->logo ? (const void *)&w : NULL,
                           s->logo ? (const void *)&h : NULL, &now, &now, &next,
                           s->logo, &len, "styles", "logo" };
    const void *aargs[] = { &account_id };
    apr_dbd_transaction_t *tx;
    apr_status_t rv;

    /* Whether the name is new, the count and the write in one transaction, after the
     * account's row is locked (PostgreSQL; SQLite's transaction is the one writer's):
     * requests at once for one name make it once, and for new names keep to the limit. */
    *created = 0;
    rv = qrt_db_begin(db, p, &tx);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = qrt_db_select_int(db, p, SQL_account_lock, aargs, &n);
    if (rv == APR_SUCCESS) {
        rv = qrt_store_style_version(db, p, account_id, s->name, &version);
    }
    if (rv == APR_SUCCESS && version == 0 && limit > 0) {
        rv = qrt_store_style_count(db, p, account_id, &n);
        if (rv == APR_SUCCESS && n >= limit) {
            rv = APR_ENOSPC;
        }
    }
    if (rv == APR_SUCCESS) {
        rv = style_version_next(db, p, &next);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_db_exec(db, p, SQL_style_put, NULL, args);
    }
    if (rv == APR_SUCCESS && stored) {
        rv = style_stored(db, p, account_id, s, stored);
    }
    rv = qrt_db_end_with(db, p, tx, rv);
    *created = rv == APR_SUCCESS && version == 0;
    return rv;
}

static int style_hex(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The logo's bytes from the hex the statement gives (NULL for none). */
static void style_logo(apr_pool_t *p, const char *hex, qrt_style_t *s)
{
    apr_size_t n = hex ? strlen(hex) / 2 : 0, i;
    unsigned char *b;

    s->logo = NULL;
    if (!n) {
        return;
    }
    b = apr_palloc(p, n);
    for (i = 0; i < n; i++) {
        int hi = style_hex(hex[2 * i]), lo = style_hex(hex[2 * i + 1]);

        if (hi < 0 || lo < 0) {
            return;
        }
        b[i] = (unsigned char)(hi << 4 | lo);
    }
    s->logo = b;
    s->logo_len = n;
}

static void style_read(qrt_db_t *db, apr_pool_t *p, apr_dbd_row_t *row, qrt_style_t *s)
{
    const char *ecc = qrt_db_str(db, row, 3);

    memset(s, 0, sizeof(*s));
    s->name = apr_pstrdup(p, qrt_db_str(db, row, 0));
    s->fg = apr_pstrdup(p, qrt_db_str(db, row, 1));
    s->bg = apr_pstrdup(p, qrt_db_str(db, row, 2));
    s->ecc = ecc && *ecc ? ecc[0] : 'M';
    s->margin = (int)qrt_db_int(db, row, 4, 4);
    s->logo_width = (int)qrt_db_int(db, row, 5, 0);
    s->logo_height = (int)qrt_db_int(db, row, 6, 0);
    s->logo_len = (apr_size_t)qrt_db_int(db, row, 7, 0);
    s->created_at = qrt_db_int(db, row, 8, 0);
    s->updated_at = qrt_db_int(db, row, 9, 0);
    s->version = qrt_db_int(db, row, 10, 1);
}

apr_status_t qrt_store_style_list(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                  apr_array_header_t **out)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *args[] = { &account_id };
    apr_status_t rv = qrt_db_select(db, p, SQL_style_list, &res, args);

    *out = apr_array_make(p, 8, sizeof(qrt_style_t));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        style_read(db, p, row, apr_array_push(*out));
    }
    return APR_SUCCESS;
}

apr_status_t qrt_store_style_get(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                 const char *name, qrt_style_t *out)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *args[] = { &account_id, name };
    apr_status_t rv = qrt_db_select(db, p, SQL_style_get, &res, args);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = APR_NOTFOUND;
    while (qrt_db_row(db, p, res, &row) == 0) {
        style_read(db, p, row, out);
        style_logo(p, qrt_db_str(db, row, 11), out);
        rv = APR_SUCCESS;
    }
    return rv;
}

apr_status_t qrt_store_style_version(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                     const char *name, apr_int64_t *version)
{
    const void *args[] = { &account_id, name };

    return qrt_db_select_int(db, p, SQL_style_version, args, version);
}

apr_status_t qrt_store_style_count(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                   apr_int64_t *n)
{
    const void *args[] = { &account_id };

    return qrt_db_select_int(db, p, SQL_style_count, args, n);
}

apr_status_t qrt_store_style_delete(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                    const char *name)
{
    const void *args[] = { &account_id, name }, *aargs[] = { &account_id };
    apr_int64_t id = 0;
    int n = 0;
    apr_dbd_transaction_t *tx;
    apr_status_t rv = qrt_db_begin(db, p, &tx);

    /* After the account's row, as qrt_store_style_put: a write of the name sees the
     * style there or not, not deleted in between; the versions' count is started
     * before this style's version goes away. */
    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = qrt_db_select_int(db, p, SQL_account_lock, aargs, &id);
    if (rv == APR_SUCCESS) {
        rv = style_version_start(db, p);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_db_exec(db, p, SQL_style_delete, &n, args);
    }
    rv = qrt_db_end_with(db, p, tx, rv);
    return rv != APR_SUCCESS ? rv : (n ? APR_SUCCESS : APR_NOTFOUND);
}
