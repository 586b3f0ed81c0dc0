/* qrt_store: named store functions over apr_dbd prepared statements.
 *
 * Every SQL statement of the project lives in a qrt_store_*.c file as a labelled
 * entry of a statement table. The module registers them with ap_dbd_prepare at
 * start-up; qrtrack-admin and the tests prepare them with qrt_db_prepare_all().
 * Callers never build SQL: they call qrt_store_<thing>_<verb>(). */
#ifndef QRT_STORE_H
#define QRT_STORE_H

#include <apr_pools.h>
#include <apr_tables.h>
#include <apr_hash.h>
#include <apr_dbd.h>

/* One connection: what ap_dbd_t carries, minus the pool. */
typedef struct {
    const apr_dbd_driver_t *driver;
    apr_dbd_t *handle;
    apr_hash_t *prepared;   /* label -> apr_dbd_prepared_t* */
    const char *error;      /* last error message, or NULL */
} qrt_db_t;

typedef struct {
    const char *label;
    const char *sql;
} qrt_stmt_t;

/* All statements, ended by an entry whose label is NULL; fn calls f on each. */
typedef void qrt_stmt_fn(void *ctx, const char *label, const char *sql);
void qrt_store_each_statement(qrt_stmt_fn *f, void *ctx);

/* Prepares every statement on db (for programs outside httpd). NULL or error. */
const char *qrt_db_prepare_all(qrt_db_t *db, apr_pool_t *p);

/* Runs a statement that changes rows; *nrows (optional) gets the count.
 * args holds one pointer per placeholder (char* for %s, apr_int64_t* for %lld,
 * NULL for an SQL NULL). */
apr_status_t qrt_db_exec(qrt_db_t *db, apr_pool_t *p, const char *label,
                         int *nrows, const void **args);
/* Runs a query; *res gets the results. */
apr_status_t qrt_db_select(qrt_db_t *db, apr_pool_t *p, const char *label,
                           apr_dbd_results_t **res, const void **args);
/* Next row, 0 when there is one, -1 at the end. */
int qrt_db_row(qrt_db_t *db, apr_pool_t *p, apr_dbd_results_t *res,
               apr_dbd_row_t **row);
/* Column col of row as text (NULL for SQL NULL) or as integer (dflt for NULL). */
const char *qrt_db_str(qrt_db_t *db, apr_dbd_row_t *row, int col);
apr_int64_t qrt_db_int(qrt_db_t *db, apr_dbd_row_t *row, int col, apr_int64_t dflt);
/* Transactions: start, then end (commits, or rolls back after qrt_db_rollback_only). */
apr_status_t qrt_db_begin(qrt_db_t *db, apr_pool_t *p, apr_dbd_transaction_t **t);
void qrt_db_rollback_only(qrt_db_t *db, apr_dbd_transaction_t *t);
apr_status_t qrt_db_end(qrt_db_t *db, apr_pool_t *p, apr_dbd_transaction_t *t);

/* Accounts */
#define QRT_PLANS "free|starter|professional|enterprise"
typedef struct {
    apr_int64_t id;
    const char *name;
    const char *plan;
    apr_int64_t created_at;
} qrt_account_t;

/* 1 if plan is one of QRT_PLANS. */
int qrt_plan_valid(const char *plan);
/* 1 if the plan has API access (professional, enterprise). */
int qrt_plan_has_api(const char *plan);

apr_status_t qrt_store_account_add(qrt_db_t *db, apr_pool_t *p, const char *name,
                                   const char *plan, apr_int64_t *id);
/* By decimal id or by name; APR_NOTFOUND when there is none. */
apr_status_t qrt_store_account_find(qrt_db_t *db, apr_pool_t *p,
                                    const char *id_or_name, qrt_account_t *out);
/* Array of qrt_account_t, by id. */
apr_status_t qrt_store_account_list(qrt_db_t *db, apr_pool_t *p,
                                    apr_array_header_t **out);
apr_status_t qrt_store_account_set_plan(qrt_db_t *db, apr_pool_t *p,
                                        apr_int64_t id, const char *plan);

/* Tokens: only the SHA-256 digest (hex) and a display prefix are stored. */
typedef struct {
    apr_int64_t id;
    apr_int64_t account_id;
    const char *name;
    const char *prefix;
    apr_int64_t created_at;
    apr_int64_t revoked_at;   /* 0 when live */
} qrt_token_t;

/* The caller behind a live token. */
typedef struct {
    apr_int64_t token_id;
    apr_int64_t account_id;
    const char *account_name;
    const char *plan;
} qrt_auth_t;

apr_status_t qrt_store_token_add(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                 const char *name, const char *prefix,
                                 const char *digest, apr_int64_t *id);
apr_status_t qrt_store_token_list(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                  apr_array_header_t **out);
/* APR_NOTFOUND when there is no live token with that id. */
apr_status_t qrt_store_token_revoke(qrt_db_t *db, apr_pool_t *p, apr_int64_t id);
/* APR_NOTFOUND for an unknown or revoked digest. */
apr_status_t qrt_store_token_auth(qrt_db_t *db, apr_pool_t *p, const char *digest,
                                  qrt_auth_t *out);

#endif
