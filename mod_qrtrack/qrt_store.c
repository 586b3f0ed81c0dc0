/* qrt_store: the statement registry and thin helpers over apr_dbd. */
#include <stdlib.h>
#include <string.h>
#include <apr_lib.h>
#include <apr_strings.h>
#include <sqlite3.h>
#include "qrt_store.h"
#include "qrt_dbwatch.h"
#include "qrt_schema.h"
#include "qrt_dialect.h"
#include "qrt_walvfs.h"
#include "qrt_vset.h"

/* The statements are written in the files of sql/statements; tools/gen_statements.py compiles
 * them into qrt_sql_statements (one entry a name, with PostgreSQL's own form if any). */
void qrt_store_each_statement(const qrt_dialect_t *d, qrt_stmt_fn *f, void *ctx)
{
    int i, pg = d && d->id == QRT_DIALECT_PGSQL;

    for (i = 0; qrt_sql_statements[i].name; i++) {
        const qrt_sql_t *st = &qrt_sql_statements[i];
        const char *sql = pg && st->pgsql ? st->pgsql : st->sql;

        /* (a statement of PostgreSQL alone has no SQLite form) */
        if (sql) {
            f(ctx, st->name, sql);
        }
    }
}

/* A deadline on the call about to start on db's connection, when the calling thread has
 * a limit (qrt_dbwatch.h): a token for store_unwatch. */
static int store_watch(const qrt_db_t *db)
{
    const qrt_dialect_t *d;

    if (!qrt_dbwatch_limit_ms() || !db->handle) {
        return 0;
    }
    d = qrt_dialect_of(db->driver);
    return d && d->socket ? qrt_dbwatch_arm(d->socket(db->driver, db->handle)) : 0;
}

/* Ends what store_watch armed; a call whose deadline passed says so in db->error (its
 * connection is shut down: the caller sees a lost connection, qrt_db_lost). */
static void store_unwatch(qrt_db_t *db, int token)
{
    if (qrt_dbwatch_disarm(token)) {
        db->error = apr_psprintf(db->pool, "no connection to the server: " QRT_DB_UNANSWERED
                                 " %d ms (%s)", qrt_dbwatch_limit_ms(),
                                 db->error ? db->error : "the call was cut short");
    }
}

int qrt_db_schema_version(qrt_db_t *db, apr_pool_t *p)
{
    int w = store_watch(db);
    int v = qrt_schema_version(p, db->driver, db->handle);

    if (v < 0) {
        db->error = apr_pstrdup(p, apr_dbd_error(db->driver, db->handle, 1));
    }
    store_unwatch(db, w);
    return v;
}

int qrt_db_dialect_is(const qrt_db_t *db, qrt_dialect_id_t id)
{
    const qrt_dialect_t *d = qrt_dialect_of(db->driver);

    return d && d->id == id;
}

void qrt_db_setup(const apr_dbd_driver_t *driver, apr_dbd_t *handle)
{
    const qrt_dialect_t *d = qrt_dialect_of(driver);

    if (d) {
        d->setup(driver, handle);
    }
}

int qrt_db_retryable(const qrt_db_t *db)
{
    const char *e = db->error;

    return db->again || (e && (strstr(e, " 40P01:") || strstr(e, " 40001:")
                 || strstr(e, "deadlock detected")
                 || strstr(e, "could not serialize access")));
}

int qrt_db_lost(const qrt_db_t *db)
{
    const char *e = db->error;

    return e && (strstr(e, " 57P01:") || strstr(e, " 57P02:") || strstr(e, " 57P03:")
                 || strstr(e, " 57P05:") || strstr(e, " 25P03:")
                 || strstr(e, ": 08") || strstr(e, "server closed the connection")
                 || strstr(e, "no connection to the server"));
}

int qrt_db_unanswered(const qrt_db_t *db)
{
    return db->error && strstr(db->error, QRT_DB_UNANSWERED) != NULL;
}

int qrt_db_busy_or_full(const qrt_db_t *db)
{
    const char *e = db->error;

    /* SQLite: SQLITE_FULL, SQLITE_BUSY past the busy timeout. PostgreSQL: 53100
     * disk_full, 53200 out_of_memory, 53300 too_many_connections, 55P03
     * lock_not_available (lock_timeout), 57014 query_canceled (statement_timeout). */
    return e && (strstr(e, "database or disk is full") || strstr(e, "database is locked")
                 || strstr(e, " 53100:") || strstr(e, " 53200:") || strstr(e, " 53300:")
                 || strstr(e, " 55P03:") || strstr(e, " 57014:"));
}

int qrt_db_read_only(const qrt_db_t *db)
{
    const char *e = db->error;

    return e && (strstr(e, " 25006:") || strstr(e, "attempt to write a readonly database"));
}

int qrt_db_refuses_writes(const qrt_db_t *db)
{
    return qrt_db_read_only(db) || (db->error && strstr(db->error, " 53100:"));
}

int qrt_db_locked(const qrt_db_t *db)
{
    const char *e = db->error;

    return e && (strstr(e, "database is locked") || strstr(e, " 55P03:"));
}

int qrt_db_refuses_rows(const qrt_db_t *db)
{
    const char *e = db->error, *c;

    if (!e) {
        return 0;
    }
    if (strstr(e, "constraint failed") || strstr(e, "datatype mismatch")
        || strstr(e, "string or blob too big")) {
        return 1;
    }
    /* PQERRORS_VERBOSE: the SQLSTATE after the severity (" 23505:"), in any language:
     * the first word of five digits and capitals, one a digit at least, before a colon */
    for (c = strchr(e, ' '); c; c = strchr(c + 1, ' ')) {
        int i, digits = 0;

        for (i = 1; i <= 5 && ((c[i] >= '0' && c[i] <= '9') || (c[i] >= 'A' && c[i] <= 'Z'));
             i++) {
            digits += c[i] <= '9';
        }
        if (i == 6 && c[6] == ':' && digits) {
            return !strncmp(c + 1, "22", 2) || !strncmp(c + 1, "23", 2)
                   || !strncmp(c + 1, "P0001", 5);
        }
    }
    return 0;
}

typedef struct {
    const char *label;
    const char *sql;
} store_find_ctx;

static void store_find_one(void *ctx, const char *label, const char *sql)
{
    store_find_ctx *f = ctx;

    if (!f->sql && !strcmp(label, f->label)) {
        f->sql = sql;
    }
}

/* Statement label's SQL on db's backend ("<label>*<n>": label's for n rows,
 * store_rows), or NULL when there is none. */
static const char *store_sql_of(qrt_db_t *db, apr_pool_t *p, const char *label)
{
    store_find_ctx f = { label, NULL };
    const char *rows = strchr(label, '*');

    if (rows) {
        f.label = apr_pstrmemdup(p, label, (apr_size_t)(rows - label));
    }
    qrt_store_each_statement(qrt_dialect_of(db->driver), store_find_one, &f);
    return f.sql && rows ? qrt_db_sql_rows(p, f.sql, atoi(rows + 1)) : f.sql;
}

/* apr_dbd_prepare, and on SQLite a statement that outlives a change of the schema made
 * elsewhere (qrt_dialect_sqlite_renew). */
static int store_prepare(qrt_db_t *db, apr_pool_t *p, const char *sql, const char *label,
                         apr_dbd_prepared_t **stmt)
{
    int rv = apr_dbd_prepare(db->driver, p, db->handle, sql, label, stmt);

    if (rv == 0 && *stmt && qrt_dialect_embedded(db->driver)) {
        qrt_dialect_sqlite_renew(*stmt);
    }
    return rv;
}

/* PostgreSQL: apr_dbd's check of a pooled connection re-opens a lost one in place
 * (PQreset), without the prepared statements, which then fail with SQLSTATE 26000.
 * A pooled connection whose server restarted fails its first statement as lost:
 * outside a transaction it is re-opened in place here. Prepares the statements
 * again; 1 when the statement that failed may simply run again (no transaction was
 * open: a failed statement inside one has ended it). */
static int store_reprepare(qrt_db_t *db, apr_pool_t *p)
{
    const qrt_dialect_t *d = qrt_dialect_of(db->driver);
    apr_hash_index_t *hi;
    const char *error = db->error;
    int tx;

    if (!error || !d || !d->remote) {
        return 0;
    }
    /* Cut by its deadline: the server did not answer (frozen, or packets dropped), and
     * a reset in place would wait for it again, up to PGCONNECT_TIMEOUT, past the
     * deadline the caller was promised. */
    if (qrt_dbwatch_cut()) {
        return 0;
    }
    if (qrt_db_lost(db) && !db->in_tx) {
        if (apr_dbd_check_conn(db->driver, p, db->handle) != APR_SUCCESS) {
            return 0;       /* still gone: the caller answers 503 */
        }
        d->setup(db->driver, db->handle);
    }
    /* (26000 is PostgreSQL's SQLSTATE for a statement the session does not have) */
    else if (!strstr(error, " 26000:")) {
        return 0;
    }
    tx = d->in_transaction(db->driver, db->handle);
    if (tx > 0) {
        return 0;           /* in a transaction: it failed */
    }
    /* The statements this connection had, and only those: one prepared later finds
     * none of its name on the server. The server knows a statement by its label, so
     * the driver's records of the old ones stay good once it has them again. */
    for (hi = db->prepared ? apr_hash_first(p, db->prepared) : NULL; hi;
         hi = apr_hash_next(hi)) {
        const char *label = apr_hash_this_key(hi);
        const char *sql = store_sql_of(db, p, label);
        apr_dbd_prepared_t *stmt = NULL;

        if (sql) {
            store_prepare(db, p, sql, label, &stmt);
        }
    }
    db->error = error;
    return tx == 0;         /* (unknown: prepared for the next, this one not run again) */
}

static apr_status_t store_ignore_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    (void)ctx;
    (void)db;
    (void)row;
    return APR_SUCCESS;
}

apr_status_t qrt_store_write_lock(qrt_db_t *db, apr_pool_t *p)
{
    static const apr_int64_t key = 0x71727472;      /* "qrtr" */
    const void *args[] = { &key };

    if (!qrt_dialect_remote(db->driver)) {
        return APR_SUCCESS;         /* (SQLite's writer is alone by BEGIN IMMEDIATE) */
    }
    return qrt_db_each(db, p, SQL_write_lock, args, store_ignore_row, NULL);
}

apr_status_t qrt_store_write_trylock(qrt_db_t *db, apr_pool_t *p, int *got)
{
    static const apr_int64_t key = 0x71727472;      /* the same lock */
    const void *args[] = { &key };
    apr_int64_t taken = 0;
    apr_status_t rv;

    *got = 1;
    if (!qrt_dialect_remote(db->driver)) {
        return APR_SUCCESS;
    }
    rv = qrt_db_select_int(db, p, SQL_write_trylock, args, &taken);
    *got = rv == APR_SUCCESS && taken == 1;
    return rv;
}

apr_status_t qrt_store_write_lock_gen(qrt_db_t *db, apr_pool_t *p, apr_int64_t *gen)
{
    static const apr_int64_t key = 0x71727472;      /* the same lock */
    const void *args[] = { &key };

    return qrt_db_select_int(db, p, SQL_write_lock_gen, args, gen);
}

apr_status_t qrt_store_write_lock_gen_hold(qrt_db_t *db, apr_pool_t *p,
                                           qrt_pipe_rows_t **rows)
{
    static const apr_int64_t key = 0x71727472;      /* the same lock */
    const void *args[] = { &key };

    return qrt_db_hold_select(db, p, SQL_write_lock_gen, args, rows);
}

typedef struct {
    qrt_db_t *db;
    apr_pool_t *p;
    const char *err;
} prepare_ctx;

static void store_prepare_one(void *ctx, const char *label, const char *sql)
{
    prepare_ctx *c = ctx;
    apr_dbd_prepared_t *stmt = NULL;
    int rv;

    if (c->err || apr_hash_get(c->db->prepared, label, APR_HASH_KEY_STRING)) {
        return;
    }
    rv = store_prepare(c->db, c->p, sql, label, &stmt);
    if (rv != 0) {
        c->err = apr_psprintf(c->p, "cannot prepare %s: %s", label,
                              apr_dbd_error(c->db->driver, c->db->handle, rv));
        return;
    }
    apr_hash_set(c->db->prepared, label, APR_HASH_KEY_STRING, stmt);
}

static void store_count_one(void *ctx, const char *label, const char *sql)
{
    (void)label;
    (void)sql;
    ++*(int *)ctx;
}

int qrt_store_statement_count(const char *driver)
{
    int n = 0;

    qrt_store_each_statement(qrt_dialect_named(driver), store_count_one, &n);
    return n;
}

void qrt_db_prepare_lazily(qrt_db_t *db, apr_pool_t *p)
{
    qrt_db_setup(db->driver, db->handle);
    if (!db->prepared) {
        db->prepared = apr_hash_make(p);
    }
    if (!db->pool) {
        /* what is prepared later (store_stmt) lives as long as these */
        db->pool = p;
    }
}

const char *qrt_db_prepare_all(qrt_db_t *db, apr_pool_t *p)
{
    prepare_ctx c = { db, p, NULL };

    qrt_db_prepare_lazily(db, p);
    qrt_store_each_statement(qrt_dialect_of(db->driver), store_prepare_one, &c);
    return c.err;
}

/* A statement by its label, prepared on this connection when first needed (in the
 * connection's pool): a connection of mod_dbd's prepares none when it opens, and one
 * that could not prepare them all (a table locked from outside, SQLite busy) has the
 * rest prepared so. */
static apr_dbd_prepared_t *store_stmt(qrt_db_t *db, apr_pool_t *p, const char *label)
{
    apr_pool_t *cp = db->pool ? db->pool : p;
    apr_dbd_prepared_t *stmt = db->prepared && label
        ? apr_hash_get(db->prepared, label, APR_HASH_KEY_STRING) : NULL;
    const char *sql;
    int rv;

    if (stmt) {
        return stmt;
    }
    if (!label) {
        /* (a form a statement does not have on this backend) */
        db->error = "no statement";
        return NULL;
    }
    sql = store_sql_of(db, p, label);
    if (!sql) {
        db->error = apr_psprintf(p, "no statement %s", label);
        return NULL;
    }
    rv = store_prepare(db, cp, sql, label, &stmt);
    if (rv != 0 || !stmt) {
        db->error = apr_psprintf(p, "cannot prepare %s: %s", label,
                                 apr_dbd_error(db->driver, db->handle, rv));
        /* A pooled connection whose server restarted: re-opened in place (outside a
         * transaction), then this one prepared there. */
        if (!store_reprepare(db, p)) {
            return NULL;
        }
        stmt = NULL;
        rv = store_prepare(db, cp, sql, label, &stmt);
        if (rv != 0 || !stmt) {
            db->error = apr_psprintf(p, "cannot prepare %s: %s", label,
                                     apr_dbd_error(db->driver, db->handle, rv));
            return NULL;
        }
    }
    if (!db->prepared) {
        db->prepared = apr_hash_make(cp);
    }
    apr_hash_set(db->prepared, apr_pstrdup(cp, label), APR_HASH_KEY_STRING, stmt);
    return stmt;
}

/* ---- PostgreSQL's pipelined transaction ------------------------------------------ */

/* The values of statement label's args as text (from p), by its placeholders as
 * apr_dbd reads them (%d an int, %lld an apr_int64_t, %s a string, a NULL pointer
 * SQL NULL): how many, or -1 for a statement whose values are not held that way (a
 * blob) or that does not exist. */
static int store_text_values(qrt_db_t *db, apr_pool_t *p, const char *label,
                             const void **args, const char ***values)
{
    store_find_ctx f = { label, NULL };
    const char *c;
    int n = 0, i = 0;

    if (!label) {
        return -1;
    }
    qrt_store_each_statement(qrt_dialect_of(db->driver), store_find_one, &f);
    for (c = f.sql; c && *c; c++) {
        if (c[0] == '%' && c[1] == '%') {
            c++;
        }
        else if (c[0] == '%' && apr_isalpha(c[1])) {
            n++;
        }
    }
    if (!f.sql) {
        return -1;
    }
    *values = apr_palloc(p, (apr_size_t)(n > 0 ? n : 1) * sizeof(**values));
    for (c = f.sql; *c; c++) {
        if (c[0] == '%' && c[1] == '%') {
            c++;
            continue;
        }
        if (c[0] != '%' || !apr_isalpha(c[1])) {
            continue;
        }
        if (!args[i]) {
            (*values)[i] = NULL;
        }
        else if (c[1] == 's') {
            (*values)[i] = apr_pstrdup(p, args[i]);
        }
        else if (c[1] == 'd') {
            (*values)[i] = apr_itoa(p, *(const int *)args[i]);
        }
        else if (!strncmp(c + 1, "lld", 3)) {
            (*values)[i] = apr_psprintf(p, "%" APR_INT64_T_FMT, *(const apr_int64_t *)args[i]);
        }
        else {
            return -1;
        }
        i++;
    }
    return n;
}

/* Statement label with args, held for the next round trip: APR_ENOTIMPL when it
 * cannot be (it runs at once). */
static apr_status_t store_later(qrt_db_t *db, const char *label, const void **args)
{
    apr_pool_t *lp = db->later->pool;
    const char **values;
    qrt_pipe_cmd_t *c;
    int n = store_text_values(db, lp, label, args, &values);

    /* sent by its name: prepared first when the connection prepares lazily */
    if (n < 0 || !store_stmt(db, lp, label)) {
        return APR_ENOTIMPL;
    }
    c = apr_array_push(db->later);
    c->label = apr_pstrdup(lp, label);
    c->sql = NULL;
    c->nvalues = n;
    c->values = values;
    c->rows = NULL;
    return APR_SUCCESS;
}

static void store_later_sql(qrt_db_t *db, const char *sql)
{
    qrt_pipe_cmd_t *c = apr_array_push(db->later);

    c->label = NULL;
    c->sql = sql;
    c->nvalues = 0;
    c->values = NULL;
    c->rows = NULL;
}

/* Sends the held statements, then (label not NULL) label with args, in one round
 * trip; *first: the first column of label's first row; rows (not NULL): its rows.
 * APR_ENOTIMPL, nothing sent, when label's values cannot be sent as text. */
static apr_status_t store_flush_rows(qrt_db_t *db, apr_pool_t *p, const char *label,
                                     const void **args, const char **first,
                                     qrt_pipe_rows_t *rows)
{
    const qrt_dialect_t *d = qrt_dialect_of(db->driver);
    const qrt_pipe_cmd_t *cmds, *bad;
    const char *error = NULL, *got = NULL;
    int n, failed = -1, rc;

    if (label) {
        const char **values;
        int nv = store_text_values(db, p, label, args, &values);
        qrt_pipe_cmd_t *c;

        if (nv < 0) {
            db->error = apr_psprintf(p, "no statement %s", label);
            return APR_ENOTIMPL;
        }
        /* sent by its name: prepared first when the connection prepares lazily (a
         * failure keeps store_stmt's error: a connection the server ended says so, and
         * the scan writer commits on a new one) */
        if (!store_stmt(db, p, label)) {
            return APR_EGENERAL;
        }
        c = apr_array_push(db->later);
        c->label = label;
        c->sql = NULL;
        c->nvalues = nv;
        c->values = values;
        c->rows = rows;
    }
    cmds = (const qrt_pipe_cmd_t *)db->later->elts;
    n = db->later->nelts;
    db->later->nelts = 0;
    if (n == 0) {
        return APR_SUCCESS;
    }
    rc = d->pipeline(db->driver, db->handle, p, cmds, n, &got, &failed, &error);
    if (first) {
        *first = got;
    }
    if (rc == 0) {
        return APR_SUCCESS;
    }
    if (rc < 0 || failed < 0 || failed >= n) {
        db->error = apr_psprintf(p, "pipeline: %s", error ? error : "not available");
        return APR_EGENERAL;
    }
    bad = &cmds[failed];
    db->error = apr_psprintf(p, "%s: %s", bad->label ? bad->label
                             : !strcmp(bad->sql, "BEGIN") ? "begin" : "commit", error);
    return APR_EGENERAL;
}

static apr_status_t store_flush(qrt_db_t *db, apr_pool_t *p, const char *label,
                                const void **args, const char **first)
{
    return store_flush_rows(db, p, label, args, first, NULL);
}

static apr_status_t db_hold_select_unwatched(qrt_db_t *db, apr_pool_t *p, const char *label,
                                             const void **args, qrt_pipe_rows_t **out)
{
    qrt_pipe_rows_t *rows;
    qrt_pipe_cmd_t *c;

    *out = NULL;
    if (!db->later || store_later(db, label, args) != APR_SUCCESS) {
        return APR_ENOTIMPL;
    }
    c = &APR_ARRAY_IDX(db->later, db->later->nelts - 1, qrt_pipe_cmd_t);
    c->rows = rows = apr_pcalloc(p, sizeof(*rows));
    rows->pool = p;
    *out = rows;
    return APR_SUCCESS;
}

apr_status_t qrt_db_hold_select(qrt_db_t *db, apr_pool_t *p, const char *label,
                                const void **args, qrt_pipe_rows_t **out)
{
    int w = store_watch(db);
    apr_status_t rv = db_hold_select_unwatched(db, p, label, args, out);

    store_unwatch(db, w);
    return rv;
}

apr_status_t qrt_db_begin_pipelined(qrt_db_t *db, apr_pool_t *p)
{
    const qrt_dialect_t *d = qrt_dialect_of(db->driver);

    if (!d || !d->pipeline
        || d->pipeline(db->driver, db->handle, p, NULL, 0, NULL, NULL, NULL) != 0) {
        return APR_ENOTIMPL;
    }
    db->later = apr_array_make(p, 16, sizeof(qrt_pipe_cmd_t));
    store_later_sql(db, "BEGIN");
    /* The statements pipelined (the scan writer's, the webhook worker's records) are
     * index seeks, inserts and upserts of arrays whatever their values: planned once,
     * not again at every execution (PostgreSQL re-plans a statement of array arguments
     * each time). This transaction's alone; the setting is PostgreSQL 12's. */
    if (d->server_version && d->server_version(db->driver, db->handle) >= 120000) {
        store_later_sql(db, "SET LOCAL plan_cache_mode = force_generic_plan");
    }
    if (db->lock_wait_ms > 0) {
        store_later_sql(db, apr_psprintf(p, "SET LOCAL lock_timeout = %d", db->lock_wait_ms));
    }
    db->in_tx = 1;
    return APR_SUCCESS;
}

static apr_status_t db_end_pipelined_unwatched(qrt_db_t *db, apr_pool_t *p, apr_status_t rv)
{
    const qrt_dialect_t *d = qrt_dialect_of(db->driver);

    if (!db->later) {
        return rv;
    }
    if (rv == APR_SUCCESS) {
        store_later_sql(db, "COMMIT");
        rv = store_flush(db, p, NULL, NULL, NULL);
    }
    db->later = NULL;
    db->in_tx = 0;
    /* A statement failed (or its transaction is aborted): roll back what reached
     * the server. A failed COMMIT has ended its transaction already. */
    if (rv != APR_SUCCESS && d->in_transaction(db->driver, db->handle) != 0) {
        int nrows = 0;

        apr_dbd_query(db->driver, db->handle, &nrows, "ROLLBACK");
    }
    return rv;
}

apr_status_t qrt_db_end_pipelined(qrt_db_t *db, apr_pool_t *p, apr_status_t rv)
{
    int w = store_watch(db);

    rv = db_end_pipelined_unwatched(db, p, rv);
    store_unwatch(db, w);
    return rv;
}

static int native_ok(const qrt_db_t *db);
static int native_exec(const qrt_db_t *db, apr_dbd_prepared_t *prep, const void **args,
                       int *n, const char **error);

/* SQLite's own transaction: a statement of it failed, so it is rolled back at its end
 * and the statements after fail (as in apr_dbd's transactions). */
static void store_tx_failed(qrt_db_t *db)
{
    if (db->native_tx) {
        db->tx_failed = 1;
    }
}

static int store_tx_dead(qrt_db_t *db, apr_pool_t *p, const char *label)
{
    if (db->native_tx && db->tx_failed) {
        db->error = apr_psprintf(p, "%s: not run, a statement before it in the "
                                 "transaction failed", label);
        return 1;
    }
    return 0;
}

static apr_status_t db_exec_unwatched(qrt_db_t *db, apr_pool_t *p, const char *label,
                                      int *nrows, const void **args)
{
    apr_dbd_prepared_t *stmt;
    int n = 0, rv;

    if (db->later) {
        /* in a pipelined transaction: held when no count is asked for */
        if (!nrows && store_later(db, label, args) == APR_SUCCESS) {
            return APR_SUCCESS;
        }
        if (store_flush(db, p, NULL, NULL, NULL) != APR_SUCCESS) {
            return APR_EGENERAL;
        }
    }
    if (store_tx_dead(db, p, label)) {
        return APR_EGENERAL;
    }
    stmt = store_stmt(db, p, label);
    if (!stmt) {
        return APR_EGENERAL;
    }
    if (native_ok(db)) {
        const char *error = NULL;

        switch (native_exec(db, stmt, args, &n, &error)) {
        case 1:
            if (nrows) {
                *nrows = n;
            }
            return APR_SUCCESS;
        case -1:
            db->error = apr_psprintf(p, "%s: %s", label, error);
            store_tx_failed(db);
            return APR_EGENERAL;
        default:
            break;
        }
        if (sqlite3_get_autocommit(apr_dbd_native_handle(db->driver, db->handle))) {
            /* apr_dbd runs it (an argument native_bound does not bind: a logo's blob),
             * in a transaction of its own whose BEGIN waits for the lock here: so it
             * never waits holding apr_dbd_sqlite3's mutex of the whole process. */
            apr_dbd_transaction_t *tx;
            apr_status_t trv = qrt_db_begin(db, p, &tx);

            if (trv != APR_SUCCESS) {
                return trv;
            }
            return qrt_db_end_with(db, p, tx, qrt_db_exec(db, p, label, nrows, args));
        }
    }
    rv = apr_dbd_pbquery(db->driver, p, db->handle, &n, stmt, args);
    if (rv != 0) {
        db->error = apr_psprintf(p, "%s: %s", label,
                                 apr_dbd_error(db->driver, db->handle, rv));
        if (store_reprepare(db, p)) {
            rv = apr_dbd_pbquery(db->driver, p, db->handle, &n, stmt, args);
        }
    }
    if (rv != 0) {
        db->error = apr_psprintf(p, "%s: %s", label,
                                 apr_dbd_error(db->driver, db->handle, rv));
        store_tx_failed(db);
        return APR_EGENERAL;
    }
    if (nrows) {
        *nrows = n;
    }
    return APR_SUCCESS;
}

apr_status_t qrt_db_exec(qrt_db_t *db, apr_pool_t *p, const char *label,
                         int *nrows, const void **args)
{
    int w = store_watch(db);
    apr_status_t rv = db_exec_unwatched(db, p, label, nrows, args);

    store_unwatch(db, w);
    return rv;
}

static apr_status_t db_select_unwatched(qrt_db_t *db, apr_pool_t *p, const char *label,
                                        apr_dbd_results_t **res, const void **args)
{
    apr_dbd_prepared_t *stmt;
    int rv;

    *res = NULL;
    if (db->later && store_flush(db, p, NULL, NULL, NULL) != APR_SUCCESS) {
        return APR_EGENERAL;
    }
    if (store_tx_dead(db, p, label)) {
        return APR_EGENERAL;
    }
    stmt = store_stmt(db, p, label);
    if (!stmt) {
        return APR_EGENERAL;
    }
    /* Random access: the whole result is read at once. The pgsql driver's
     * sequential mode sleeps 100 ms on an empty result and reports a failing
     * statement as an empty one; SQLite's driver reads the whole result anyway. */
    rv = apr_dbd_pbselect(db->driver, p, db->handle, res, stmt, 1, args);
    if (rv != 0) {
        db->error = apr_psprintf(p, "%s: %s", label,
                                 apr_dbd_error(db->driver, db->handle, rv));
        if (store_reprepare(db, p)) {
            rv = apr_dbd_pbselect(db->driver, p, db->handle, res, stmt, 1, args);
        }
    }
    if (rv != 0) {
        db->error = apr_psprintf(p, "%s: %s", label,
                                 apr_dbd_error(db->driver, db->handle, rv));
        store_tx_failed(db);
        return APR_EGENERAL;
    }
    return APR_SUCCESS;
}

apr_status_t qrt_db_select(qrt_db_t *db, apr_pool_t *p, const char *label,
                           apr_dbd_results_t **res, const void **args)
{
    int w = store_watch(db);
    apr_status_t rv = db_select_unwatched(db, p, label, res, args);

    store_unwatch(db, w);
    return rv;
}

/* ---- SQLite's rows, read without apr_dbd's copies -------------------------- */

/* apr_dbd_sqlite3 turns every column of every row into text and copies it, with the
 * column's name, under a mutex shared by every connection of the process; qrt_db_each
 * and qrt_db_select_int read SQLite's rows themselves (an import seeks a visitor's
 * previous visit, a dictionary key, for every visit). The rows are read whole first,
 * as apr_dbd's random access does, so a row's callback may run other statements, the
 * same one among them. */

typedef struct {
    int type;                   /* SQLITE_INTEGER, SQLITE_NULL, else text */
    apr_int64_t i;
    const char *s;              /* the text (an integer's when first asked for) */
} native_col;

typedef struct native_row {
    apr_pool_t *p;
    native_col *cols;
    int ncols;
    struct native_row *next;
} native_row;

/* The row a qrt_row_fn of qrt_db_each is called on, on this thread: qrt_db_str
 * and qrt_db_int tell it from apr_dbd's rows by its address. */
static __thread native_row *native_current;

/* 1 when db's selects may be read natively: an embedded database (SQLite built
 * thread-safe: apr_dbd's mutex is then not needed, a connection is used by one thread
 * at a time; qrt_dialect_sqlite_stmt says whether apr_dbd's statement may be read). */
static int native_ok(const qrt_db_t *db)
{
    return sqlite3_threadsafe() != 0 && qrt_dialect_embedded(db->driver);
}

/* apr_dbd's statement prep, reset and bound to args (which outlive its rows), to be
 * stepped natively; NULL when it cannot be run here (a statement that writes unless
 * writes, an argument of another type: apr_dbd then runs it). */
static sqlite3_stmt *native_bound(apr_dbd_prepared_t *prep, const void **args, int writes)
{
    const apr_dbd_type_e *types = NULL;
    int i, nargs = 0, rc = SQLITE_OK;
    sqlite3_stmt *st = qrt_dialect_sqlite_stmt(prep, &nargs, &types);

    if (!st || (!writes && !sqlite3_stmt_readonly(st)) || sqlite3_reset(st) != SQLITE_OK) {
        return NULL;
    }
    for (i = 0; i < nargs && rc == SQLITE_OK; i++) {
        const void *v = args[i];

        if (!v) {
            rc = sqlite3_bind_null(st, i + 1);
        }
        else if (types[i] == APR_DBD_TYPE_LONGLONG) {
            rc = sqlite3_bind_int64(st, i + 1, *(const apr_int64_t *)v);
        }
        else if (types[i] == APR_DBD_TYPE_INT) {
            rc = sqlite3_bind_int(st, i + 1, *(const int *)v);
        }
        else if (types[i] == APR_DBD_TYPE_STRING || types[i] == APR_DBD_TYPE_TEXT) {
            rc = sqlite3_bind_text(st, i + 1, v, -1, SQLITE_STATIC);
        }
        else {
            rc = SQLITE_MISUSE;
        }
    }
    return rc == SQLITE_OK ? st : NULL;
}

/* Row r's columns from st's current row: strings copied into copy, or SQLite's own
 * (valid until the next step) when copy is NULL. held: the caller holds the connection's
 * mutex over the row (native_stream), so that each column's value is taken in one call
 * into SQLite and read from there (its type, its integer or text): the value an
 * sqlite3_column_value returns may be read so only under that mutex. Each call into
 * SQLite's column API takes the mutex, a tenth of a cold report's read of its blocks. */
static void native_fill(sqlite3_stmt *st, native_row *r, apr_pool_t *copy, int held)
{
    int k;

    for (k = 0; k < r->ncols; k++) {
        native_col *c = &r->cols[k];
        sqlite3_value *v = held ? sqlite3_column_value(st, k) : NULL;

        c->type = v ? sqlite3_value_type(v) : sqlite3_column_type(st, k);
        c->i = 0;
        c->s = NULL;
        if (c->type == SQLITE_INTEGER) {
            c->i = v ? sqlite3_value_int64(v) : sqlite3_column_int64(st, k);
        }
        else if (c->type != SQLITE_NULL) {
            const char *t = (const char *)(v ? sqlite3_value_text(v) : sqlite3_column_text(st, k));
            apr_size_t n = (apr_size_t)(v ? sqlite3_value_bytes(v) : sqlite3_column_bytes(st, k));

            c->s = t && copy ? apr_pstrmemdup(copy, t, n) : t;
            c->type = t ? SQLITE_TEXT : SQLITE_NULL;
        }
    }
}

/* The first step of a bound statement. SQLITE_BUSY (a lock another connection holds,
 * past the connection's busy handler) is tried again QRT_SQLITE_TRIES times, 100 ms
 * apart, as apr_dbd_sqlite3 does, but without its mutex: apr_dbd holds one mutex of the
 * whole process while a statement waits, so a wait there stalls every connection of
 * the process, the one holding the lock among them when it is this process's. */
static int native_step(sqlite3_stmt *st)
{
    int rc, tries = 1;

    while ((rc = sqlite3_step(st)) == SQLITE_BUSY && tries++ < QRT_SQLITE_TRIES) {
        apr_sleep(apr_time_from_msec(100));
    }
    return rc;
}

/* native_step for db's statement, or, when db->lock_wait_ms is set outside a
 * transaction (the scan writers' idle work under their mutex: a purge's single
 * statements), one try that waits that long, the connection's busy timeout busy_ms
 * again after it. */
static int native_step_of(const qrt_db_t *db, sqlite3_stmt *st)
{
    sqlite3 *h;
    int rc;

    if (db->lock_wait_ms <= 0 || db->native_tx) {
        return native_step(st);
    }
    h = sqlite3_db_handle(st);
    sqlite3_busy_timeout(h, db->lock_wait_ms);
    rc = sqlite3_step(st);
    sqlite3_busy_timeout(h, db->busy_ms);
    return rc;
}

/* Runs a statement that writes natively: 1 when it did (*n: the rows it changed), 0
 * when it cannot run here (apr_dbd then runs it), -1 when it failed (*error). */
static int native_exec(const qrt_db_t *db, apr_dbd_prepared_t *prep, const void **args,
                       int *n, const char **error)
{
    sqlite3_stmt *st = native_bound(prep, args, 1);
    int rc;

    if (!st) {
        return 0;
    }
    for (rc = native_step_of(db, st); rc == SQLITE_ROW; rc = sqlite3_step(st)) {
    }
    if (rc == SQLITE_DONE) {
        *n = sqlite3_changes(sqlite3_db_handle(st));
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        *error = sqlite3_errmsg(sqlite3_db_handle(st));
    }
    return rc == SQLITE_DONE ? 1 : -1;
}

/* Runs a statement and reads its rows into *rows (NULL: none): 1 when it did; 0 when
 * it cannot be read here (an argument of another type: apr_dbd then runs it); -1 when
 * it failed (SQLite's message in *error: not run again, which would wait for a lock as
 * long again). */
static int native_select(const qrt_db_t *db, apr_pool_t *p, apr_dbd_prepared_t *prep,
                         const void **args, native_row **rows, const char **error)
{
    sqlite3_stmt *st = native_bound(prep, args, 1);
    native_row **tail = rows;
    int rc, ncols;

    *rows = NULL;
    if (!st) {
        return 0;
    }
    ncols = sqlite3_column_count(st);
    for (rc = native_step_of(db, st); rc == SQLITE_ROW; rc = sqlite3_step(st)) {
        native_row *r = apr_palloc(p, sizeof(*r));

        r->p = p;
        r->ncols = ncols;
        r->cols = apr_palloc(p, (apr_size_t)(ncols > 0 ? ncols : 1) * sizeof(*r->cols));
        r->next = NULL;
        native_fill(st, r, p, 0);
        *tail = r;
        tail = &r->next;
    }
    /* (a legacy statement's error is told by the reset: "SQL logic error" before) */
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        *error = apr_pstrdup(p, sqlite3_errmsg(sqlite3_db_handle(st)));
    }
    return rc == SQLITE_DONE ? 1 : -1;
}

/* Steps a bound statement and calls fn on each row as it comes, in one row whose
 * strings are SQLite's own (valid while fn runs): 1 when it did, 0 when it cannot be
 * read here, -1 when it failed; *frv: the first error fn returned (the rows stop). */
static int native_stream(apr_pool_t *p, apr_dbd_prepared_t *prep, const void **args,
                         qrt_db_t *db, qrt_row_fn *fn, void *ctx, apr_status_t *frv,
                         const char **error)
{
    sqlite3_stmt *st = native_bound(prep, args, 0);
    native_row r, *outer = native_current;
    int rc = SQLITE_OK;

    *frv = APR_SUCCESS;
    if (!st) {
        return 0;
    }
    r.p = p;
    r.ncols = sqlite3_column_count(st);
    r.cols = apr_palloc(p, (apr_size_t)(r.ncols > 0 ? r.ncols : 1) * sizeof(*r.cols));
    r.next = NULL;
    /* The connection's mutex held over the rows (SQLite's serialized mode takes it in
     * each step and each column's call; held here, those only count it up): rows of a
     * report's days not sealed come by the ten thousand. */
    sqlite3_mutex_enter(sqlite3_db_mutex(sqlite3_db_handle(st)));
    while (*frv == APR_SUCCESS && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        native_fill(st, &r, NULL, 1);
        native_current = &r;
        *frv = fn(ctx, db, (apr_dbd_row_t *)&r);
        native_current = outer;
    }
    sqlite3_mutex_leave(sqlite3_db_mutex(sqlite3_db_handle(st)));
    if (*frv != APR_SUCCESS) {
        sqlite3_reset(st);
        return 1;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        *error = apr_pstrdup(p, sqlite3_errmsg(sqlite3_db_handle(st)));
    }
    return rc == SQLITE_DONE ? 1 : -1;
}

/* The rows of label natively when db allows it: 1 when *rows holds them, 0 when
 * apr_dbd is to run it, -1 when it failed (db->error says why). */
static int native_rows(qrt_db_t *db, apr_pool_t *p, const char *label, const void **args,
                       native_row **rows)
{
    apr_dbd_prepared_t *stmt;
    const char *error = NULL;
    int rc;

    if (!native_ok(db) || !(stmt = store_stmt(db, p, label))) {
        return 0;
    }
    if (store_tx_dead(db, p, label)) {
        return -1;
    }
    rc = native_select(db, p, stmt, args, rows, &error);
    if (rc < 0) {
        db->error = apr_psprintf(p, "%s: %s", label, error);
        store_tx_failed(db);
    }
    return rc;
}

static native_col *native_col_of(apr_dbd_row_t *row, int col)
{
    native_row *r = (native_row *)row;

    return col >= 0 && col < r->ncols ? &r->cols[col] : NULL;
}

/* A native column as an integer, as qrt_db_int reads apr_dbd's text: dflt for NULL
 * (or no such column) and for "". */
static apr_int64_t native_col_int(const native_col *c, apr_int64_t dflt)
{
    if (!c || c->type == SQLITE_NULL) {
        return dflt;
    }
    return c->type == SQLITE_INTEGER ? c->i : (*c->s ? apr_atoi64(c->s) : dflt);
}

apr_status_t qrt_db_select_int(qrt_db_t *db, apr_pool_t *p, const char *label,
                               const void **args, apr_int64_t *v)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    native_row *nrows;
    apr_status_t rv;
    int first = 1;

    *v = 0;
    if (db->later && db->later->nelts > 0) {
        /* in a pipelined transaction: one round trip with what is held */
        const char *first = NULL;

        rv = store_flush(db, p, label, args, &first);
        *v = first && *first ? apr_atoi64(first) : 0;
        return rv;
    }
    switch (native_rows(db, p, label, args, &nrows)) {
    case -1:
        return APR_EGENERAL;
    case 1:
        *v = nrows ? native_col_int(native_col_of((apr_dbd_row_t *)nrows, 0), 0) : 0;
        return APR_SUCCESS;
    default:
        break;
    }
    rv = qrt_db_select(db, p, label, &res, args);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        if (first) {
            *v = qrt_db_int(db, row, 0, 0);
            first = 0;
        }
    }
    return APR_SUCCESS;
}

static apr_status_t db_each_stream_unwatched(qrt_db_t *db, apr_pool_t *p, const char *label,
                                             const void **args, qrt_row_fn *fn, void *ctx)
{
    apr_dbd_prepared_t *stmt;
    const char *error = NULL;
    apr_status_t frv = APR_SUCCESS;
    int rc;

    if (!native_ok(db) || !(stmt = store_stmt(db, p, label))) {
        return qrt_db_each(db, p, label, args, fn, ctx);
    }
    if (store_tx_dead(db, p, label)) {
        return APR_EGENERAL;
    }
    rc = native_stream(p, stmt, args, db, fn, ctx, &frv, &error);
    if (rc < 0) {
        db->error = apr_psprintf(p, "%s: %s", label, error);
        store_tx_failed(db);
        return APR_EGENERAL;
    }
    return rc > 0 ? frv : qrt_db_each(db, p, label, args, fn, ctx);
}

apr_status_t qrt_db_each_stream(qrt_db_t *db, apr_pool_t *p, const char *label,
                                const void **args, qrt_row_fn *fn, void *ctx)
{
    int w = store_watch(db);
    apr_status_t rv = db_each_stream_unwatched(db, p, label, args, fn, ctx);

    store_unwatch(db, w);
    return rv;
}

/* fn on each of rows, read as rows of qrt_db_each. */
static apr_status_t native_each(qrt_db_t *db, native_row *rows, qrt_row_fn *fn, void *ctx)
{
    native_row *outer = native_current, *r;
    apr_status_t rv = APR_SUCCESS;

    for (r = rows; r && rv == APR_SUCCESS; r = r->next) {
        native_current = r;
        rv = fn(ctx, db, (apr_dbd_row_t *)r);
    }
    native_current = outer;
    return rv;
}

/* The rows a pipelined command returned, as native rows of text (from their pool). */
static native_row *pipe_native(const qrt_pipe_rows_t *rows)
{
    native_row *head = NULL, **tail = &head;
    int r, c;

    for (r = 0; r < rows->nrows; r++) {
        native_row *x = apr_palloc(rows->pool, sizeof(*x));

        x->p = rows->pool;
        x->ncols = rows->ncols;
        x->cols = apr_palloc(rows->pool, (apr_size_t)(rows->ncols > 0 ? rows->ncols : 1)
                                         * sizeof(*x->cols));
        x->next = NULL;
        for (c = 0; c < rows->ncols; c++) {
            const char *v = rows->values[r * rows->ncols + c];

            x->cols[c].type = v ? SQLITE_TEXT : SQLITE_NULL;
            x->cols[c].i = 0;
            x->cols[c].s = v;
        }
        *tail = x;
        tail = &x->next;
    }
    return head;
}

apr_status_t qrt_db_held_each(qrt_db_t *db, const qrt_pipe_rows_t *rows, qrt_row_fn *fn,
                              void *ctx)
{
    if (!rows || !rows->done) {
        db->error = "a held select has not run";
        return APR_EINCOMPLETE;
    }
    return native_each(db, pipe_native(rows), fn, ctx);
}

static apr_status_t db_each_unwatched(qrt_db_t *db, apr_pool_t *p, const char *label,
                                      const void **args, qrt_row_fn *fn, void *ctx)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    native_row *nrows;
    apr_status_t rv;
    int native;

    if (db->later) {
        /* in a pipelined transaction: the held statements and this one in one round
         * trip, its rows read whole (a statement whose values are not text: apart) */
        qrt_pipe_rows_t rows;

        memset(&rows, 0, sizeof(rows));
        rows.pool = p;
        rv = store_flush_rows(db, p, label, args, NULL, &rows);
        if (rv != APR_ENOTIMPL) {
            return rv == APR_SUCCESS ? native_each(db, pipe_native(&rows), fn, ctx) : rv;
        }
        db->error = NULL;
    }
    native = native_rows(db, p, label, args, &nrows);
    if (native < 0) {
        return APR_EGENERAL;
    }
    if (native > 0) {
        return native_each(db, nrows, fn, ctx);
    }
    rv = qrt_db_select(db, p, label, &res, args);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        if (rv == APR_SUCCESS) {
            rv = fn(ctx, db, row);
        }
    }
    return rv;
}

apr_status_t qrt_db_each(qrt_db_t *db, apr_pool_t *p, const char *label,
                         const void **args, qrt_row_fn *fn, void *ctx)
{
    int w = store_watch(db);
    apr_status_t rv = db_each_unwatched(db, p, label, args, fn, ctx);

    store_unwatch(db, w);
    return rv;
}

const char *qrt_db_id_list(qrt_db_t *db, apr_pool_t *p, const apr_array_header_t *ids)
{
    apr_array_header_t *t = apr_array_make(p, ids->nelts ? ids->nelts : 1,
                                           sizeof(const char *));
    int pg = qrt_db_dialect_is(db, QRT_DIALECT_PGSQL), i;

    for (i = 0; i < ids->nelts; i++) {
        APR_ARRAY_PUSH(t, const char *) =
            apr_psprintf(p, "%" APR_INT64_T_FMT, APR_ARRAY_IDX(ids, i, apr_int64_t));
    }
    return apr_pstrcat(p, pg ? "{" : "[", apr_array_pstrcat(p, t, ','), pg ? "}" : "]",
                       NULL);
}

/* v in decimal at o (no NUL): its length. An import writes millions of numbers into its
 * arrays, which apr_snprintf's general formatter takes several times as long to write. */
static int db_decimal(char *o, apr_int64_t v)
{
    char tmp[20];
    apr_uint64_t u = v < 0 ? 0 - (apr_uint64_t)v : (apr_uint64_t)v;
    int n = 0, len;

    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    len = n + (v < 0);
    if (v < 0) {
        *o++ = '-';
    }
    while (n > 0) {
        *o++ = tmp[--n];
    }
    return len;
}

char *qrt_db_array(apr_pool_t *p, char type, const void **args, int nargs, int col, int n)
{
    apr_size_t len = 3;
    char *out, *o;
    int i;

    for (i = 0; i < n; i++) {
        const void *v = args[(apr_size_t)i * nargs + col];

        /* a quoted string may double in length; a number takes at most 20 bytes */
        len += 5 + (!v ? 4 : type == 's' ? 2 * strlen(v) : 20);
    }
    o = out = apr_palloc(p, len);
    *o++ = '{';
    for (i = 0; i < n; i++) {
        const void *v = args[(apr_size_t)i * nargs + col];
        const char *s;

        if (i > 0) {
            *o++ = ',';
        }
        if (!v) {
            memcpy(o, "NULL", 4);
            o += 4;
        }
        else if (type == 's') {
            *o++ = '"';
            for (s = v; *s; s++) {
                if (*s == '"' || *s == '\\') {
                    *o++ = '\\';
                }
                *o++ = *s;
            }
            *o++ = '"';
        }
        else {
            o += db_decimal(o, type == 'i' ? (apr_int64_t)*(const int *)v
                                           : *(const apr_int64_t *)v);
        }
    }
    *o++ = '}';
    *o = '\0';
    return out;
}

/* PostgreSQL: the statement "<label>_many" and its arguments, one array a column. */
static const char *store_many(apr_pool_t *p, const char *label, const char *types,
                              const void **args, int n, const void ***cols)
{
    int c, nargs = (int)strlen(types);

    *cols = apr_palloc(p, (nargs > 0 ? nargs : 1) * sizeof(**cols));
    for (c = 0; c < nargs; c++) {
        (*cols)[c] = qrt_db_array(p, types[c], args, nargs, c, n);
    }
    return apr_pstrcat(p, label, "_many", NULL);
}

char *qrt_db_sql_rows(apr_pool_t *p, const char *sql, int n)
{
    const char *open = strstr(sql, " VALUES ("), *c;
    char *out, *o;
    apr_size_t len;
    int depth = 0, i;

    if (!open || n < 1) {
        return NULL;
    }
    open += strlen(" VALUES ");
    for (c = open; *c; c++) {
        if (*c == '\'') {
            c = strchr(c + 1, '\'');
            if (!c) {
                return NULL;
            }
        }
        else if (*c == '(') {
            depth++;
        }
        else if (*c == ')' && --depth == 0) {
            break;
        }
    }
    if (!*c) {
        return NULL;
    }
    len = (apr_size_t)(c + 1 - open);
    out = o = apr_palloc(p, strlen(sql) + (apr_size_t)(n - 1) * (len + 2) + 16);
    if (n > 1 && !strncmp(sql, "INSERT INTO ", 12)) {
        memcpy(o, "INSERT OR FAIL INTO ", 20);
        o += 20;
        sql += 12;
    }
    memcpy(o, sql, (apr_size_t)(open - sql));
    o += open - sql;
    for (i = 0; i < n; i++) {
        if (i) {
            memcpy(o, ", ", 2);
            o += 2;
        }
        memcpy(o, open, len);
        o += len;
    }
    strcpy(o, c + 1);
    return out;
}

/* The rows of qrt_db_exec_rows (fn NULL) and of qrt_db_each_rows. */
static apr_status_t store_rows(qrt_db_t *db, apr_pool_t *p, const char *label,
                               const char *types, const void **args, int n,
                               qrt_row_fn *fn, void *ctx)
{
    apr_status_t rv = APR_SUCCESS;
    int i, k, nargs = (int)strlen(types);
    const void **cols;

    if (qrt_dialect_remote(db->driver)) {
        /* (one statement of many rows: one round trip) */
        const char *as = store_many(p, label, types, args, n, &cols);

        return fn ? qrt_db_each(db, p, as, cols, fn, ctx) : qrt_db_exec(db, p, as, NULL, cols);
    }
    if (fn) {
        /* rows that come back: one statement a row */
        for (i = 0; i < n && rv == APR_SUCCESS; i++) {
            rv = qrt_db_each(db, p, label, args + (apr_size_t)i * nargs, fn, ctx);
        }
        return rv;
    }
    for (i = 0; i < n && rv == APR_SUCCESS; i += k) {
        /* The largest power of two of rows left, up to QRT_DB_ROWS_MAX: a label has
         * a few forms, each prepared once. */
        for (k = 1; k * 2 <= n - i && k * 2 <= QRT_DB_ROWS_MAX; k *= 2) {
        }
        rv = qrt_db_exec(db, p, k == 1 ? label : apr_psprintf(p, "%s*%d", label, k), NULL,
                         args + (apr_size_t)i * nargs);
    }
    return rv;
}

static apr_status_t db_exec_rows_unwatched(qrt_db_t *db, apr_pool_t *p, const char *label,
                                           const char *types, const void **args, int n)
{
    return n > 0 ? store_rows(db, p, label, types, args, n, NULL, NULL) : APR_SUCCESS;
}

apr_status_t qrt_db_exec_rows(qrt_db_t *db, apr_pool_t *p, const char *label,
                              const char *types, const void **args, int n)
{
    int w = store_watch(db);
    apr_status_t rv = db_exec_rows_unwatched(db, p, label, types, args, n);

    store_unwatch(db, w);
    return rv;
}

static apr_status_t db_each_rows_unwatched(qrt_db_t *db, apr_pool_t *p, const char *label,
                                           const char *types, const void **args, int n,
                                           qrt_row_fn *fn, void *ctx)
{
    return n > 0 ? store_rows(db, p, label, types, args, n, fn, ctx) : APR_SUCCESS;
}

apr_status_t qrt_db_each_rows(qrt_db_t *db, apr_pool_t *p, const char *label,
                              const char *types, const void **args, int n,
                              qrt_row_fn *fn, void *ctx)
{
    int w = store_watch(db);
    apr_status_t rv = db_each_rows_unwatched(db, p, label, types, args, n, fn, ctx);

    store_unwatch(db, w);
    return rv;
}

int qrt_db_row(qrt_db_t *db, apr_pool_t *p, apr_dbd_results_t *res,
               apr_dbd_row_t **row)
{
    return qrt_dialect_of(db->driver)->next_row(db->driver, p, res, row);
}

const char *qrt_db_str(qrt_db_t *db, apr_dbd_row_t *row, int col)
{
    const char *s = NULL;

    if (native_current && row == (apr_dbd_row_t *)native_current) {
        native_col *c = native_col_of(row, col);

        if (c && c->type == SQLITE_INTEGER && !c->s) {
            c->s = apr_psprintf(native_current->p, "%" APR_INT64_T_FMT, c->i);
        }
        return c ? c->s : NULL;
    }

    /* Not apr_dbd_get_entry: the pgsql driver gives "" for an SQL NULL. */
    if (apr_dbd_datum_get(db->driver, row, col, APR_DBD_TYPE_STRING, &s) != APR_SUCCESS) {
        return NULL;
    }
    return s;
}

apr_int64_t qrt_db_int(qrt_db_t *db, apr_dbd_row_t *row, int col, apr_int64_t dflt)
{
    const char *e;

    if (native_current && row == (apr_dbd_row_t *)native_current) {
        return native_col_int(native_col_of(row, col), dflt);
    }
    e = qrt_db_str(db, row, col);

    return (e && *e) ? apr_atoi64(e) : dflt;
}

void qrt_db_ints(qrt_db_t *db, apr_dbd_row_t *row, int first, int n, apr_int64_t *out)
{
    int k;

    if (native_current && row == (apr_dbd_row_t *)native_current) {
        for (k = 0; k < n; k++) {
            out[k] = native_col_int(native_col_of(row, first + k), 0);
        }
        return;
    }
    for (k = 0; k < n; k++) {
        out[k] = qrt_db_int(db, row, first + k, 0);
    }
}

apr_status_t qrt_db_int_list_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    APR_ARRAY_PUSH((apr_array_header_t *)ctx, apr_int64_t) = qrt_db_int(db, row, 0, 0);
    return APR_SUCCESS;
}

/* Adds a dictionary row: *id is its id, 0 when the key was there already. The
 * added row's id: a dialect whose inserts return it (RETURNING) selects it, else it
 * is the connection's last rowid. */
static apr_status_t dict_add(qrt_db_t *db, apr_pool_t *p, const char *add,
                             const void **args, apr_int64_t *id)
{
    apr_status_t rv;
    int added = 0;

    const qrt_dialect_t *d = qrt_dialect_of(db->driver);

    if (!d->last_rowid) {
        return qrt_db_select_int(db, p, add, args, id);
    }
    rv = qrt_db_exec(db, p, add, &added, args);
    if (rv == APR_SUCCESS && added > 0) {
        *id = d->last_rowid(db->driver, db->handle);
    }
    return rv;
}

apr_status_t qrt_store_dict_id(qrt_db_t *db, apr_pool_t *p, qrt_dict_cache_t *c, int dict,
                               const char *key, const char *add, const char *get,
                               const void **args, apr_int64_t *id)
{
    apr_status_t rv = APR_SUCCESS;
    int found = 0;

    *id = qrt_dict_cache_get(c, dict, key);
    if (*id) {
        return APR_SUCCESS;
    }
    /* Added first: a value the cache does not know is most often new (an import, a
     * new user agent); one the table has already adds nothing, then is found. When
     * most such values lately were there already (an import of visitors seen
     * before), looked up first instead: one index seek, not two. */
    if (qrt_dict_cache_lookup_first(c, dict)) {
        rv = qrt_db_select_int(db, p, get, args, id);
        found = rv == APR_SUCCESS && *id;
    }
    if (rv == APR_SUCCESS && !found) {
        rv = dict_add(db, p, add, args, id);
        if (rv == APR_SUCCESS && !*id) {
            rv = qrt_db_select_int(db, p, get, args, id);
            found = 1;
        }
    }
    if (rv == APR_SUCCESS && !*id) {
        db->error = apr_psprintf(p, "%s found no row after %s", get, add);
        rv = APR_EGENERAL;
    }
    if (rv == APR_SUCCESS) {
        qrt_dict_cache_missed(c, dict, found);
        qrt_dict_cache_stage(c, dict, key, *id);
    }
    return rv;
}

static void store_tx_unlock(qrt_db_t *db)
{
    if (db->tx_locked) {
        db->tx_locked = 0;
        db->tx_lock(0);
    }
}

static apr_status_t native_tx_cleanup(void *data);

/* What qrt_db_begin gives for SQLite's own transaction: not NULL, as callers that
 * begin only sometimes test it to know whether one is open; never given to apr_dbd. */
static char native_tx_mark;
#define NATIVE_TX ((apr_dbd_transaction_t *)(void *)&native_tx_mark)

/* SQLite: sql (one statement without rows) on the connection itself; once: with the
 * connection's busy handler alone, else SQLITE_BUSY tried again as native_step does
 * (the same statement stepped again: a busy handler under QRTrackStatementTimeout
 * counts the tries in one statement's time). */
static int native_run_as(sqlite3 *h, const char *sql, int once)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(h, sql, -1, &st, NULL);

    if (rc == SQLITE_OK) {
        rc = once ? sqlite3_step(st) : native_step(st);
        rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
    }
    sqlite3_finalize(st);
    return rc;
}

static int native_run(sqlite3 *h, const char *sql)
{
    return native_run_as(h, sql, 0);
}

/* Ends SQLite's own transaction: COMMIT, or ROLLBACK when asked or when a statement
 * failed (then APR_SUCCESS, as apr_dbd's end; the statement said why). A COMMIT that
 * fails rolls back what is left of it. */
static apr_status_t native_tx_end(qrt_db_t *db, apr_pool_t *p)
{
    sqlite3 *h = apr_dbd_native_handle(db->driver, db->handle);
    int rollback = db->tx_failed || db->tx_rollback, rc;

    db->native_tx = db->tx_failed = db->tx_rollback = 0;
    if (db->tx_pool) {
        apr_pool_cleanup_kill(db->tx_pool, db, native_tx_cleanup);
        db->tx_pool = NULL;
    }
    if (!rollback) {
        rc = native_run(h, "COMMIT");
        if (rc == SQLITE_OK) {
            return APR_SUCCESS;
        }
        db->error = apr_psprintf(p, "commit: %s", sqlite3_errmsg(h));
    }
    if (!sqlite3_get_autocommit(h)) {
        rc = sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
        if (rc != SQLITE_OK && rollback) {
            db->error = apr_psprintf(p, "rollback: %s", sqlite3_errmsg(h));
            return APR_EGENERAL;
        }
    }
    return rollback ? APR_SUCCESS : APR_EGENERAL;
}

/* The pool of qrt_db_begin went before qrt_db_end (an error path that left): the
 * connection goes back to its pool with no transaction open. */
static apr_status_t native_tx_cleanup(void *data)
{
    qrt_db_t *db = data;

    db->tx_pool = NULL;
    if (db->native_tx) {
        sqlite3 *h = apr_dbd_native_handle(db->driver, db->handle);

        db->native_tx = db->tx_failed = db->tx_rollback = 0;
        db->in_tx = 0;
        if (h && !sqlite3_get_autocommit(h)) {
            sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
        }
        store_tx_unlock(db);
    }
    return APR_SUCCESS;
}

static apr_status_t db_begin_unwatched(qrt_db_t *db, apr_pool_t *p, apr_dbd_transaction_t **t)
{
    const char *error = NULL;

    if (db->tx_lock && !db->tx_locked) {
        if (db->tx_lock(1) != APR_SUCCESS) {
            db->error = "begin: the writers' lock cannot be taken";
            return APR_EGENERAL;
        }
        db->tx_locked = 1;
    }
    if (native_ok(db)) {
        /* SQLite: BEGIN IMMEDIATE waits for the database's lock here, outside
         * apr_dbd's mutex; once it holds the lock nothing in the transaction waits. */
        sqlite3 *h = apr_dbd_native_handle(db->driver, db->handle);
        int rc = SQLITE_MISUSE, tries;

        *t = NULL;
        for (tries = 1; h && db->tx_locked; tries++) {
            /* Under the lock outside the database, SQLite's lock is held by no scan
             * writer (they wait for that one) but by an API request or another
             * program: it is waited for with that lock given back, not held through
             * the tries with the scans' commits behind it. */
            if ((rc = native_run_as(h, "BEGIN IMMEDIATE", 1)) != SQLITE_BUSY
                || tries >= QRT_SQLITE_TRIES) {
                break;
            }
            store_tx_unlock(db);
            apr_sleep(apr_time_from_msec(100));
            if (db->tx_lock(1) != APR_SUCCESS) {
                db->error = "begin: the writers' lock cannot be taken";
                return APR_EGENERAL;
            }
            db->tx_locked = 1;
        }
        if (h && !db->tx_locked && db->lock_wait_ms > 0) {
            sqlite3_busy_timeout(h, db->lock_wait_ms);
            rc = native_run_as(h, "BEGIN IMMEDIATE", 1);
            sqlite3_busy_timeout(h, db->busy_ms);
        }
        else if (h && !db->tx_locked) {
            rc = native_run(h, "BEGIN IMMEDIATE");
        }
        if (rc != SQLITE_OK) {
            db->error = apr_psprintf(p, "begin: %s", h ? sqlite3_errmsg(h) : "no connection");
            store_tx_unlock(db);
            return APR_EGENERAL;
        }
        db->native_tx = 1;
        db->tx_failed = db->tx_rollback = 0;
        db->tx_pool = p;
        apr_pool_cleanup_register(p, db, native_tx_cleanup, apr_pool_cleanup_null);
        db->in_tx = 1;
        *t = NATIVE_TX;
        return APR_SUCCESS;
    }
    if (qrt_dialect_of(db->driver)->begin(db->driver, p, db->handle, t, &error) != 0) {
        db->error = apr_psprintf(p, "begin: %s", error ? error : "");
        store_tx_unlock(db);
        return APR_EGENERAL;
    }
    db->in_tx = 1;
    return APR_SUCCESS;
}

apr_status_t qrt_db_begin(qrt_db_t *db, apr_pool_t *p, apr_dbd_transaction_t **t)
{
    int w = store_watch(db);
    apr_status_t rv = db_begin_unwatched(db, p, t);

    store_unwatch(db, w);
    return rv;
}

void qrt_db_rollback_only(qrt_db_t *db, apr_dbd_transaction_t *t)
{
    if (t == NATIVE_TX) {
        db->tx_rollback = 1;
    }
    else if (t) {
        apr_dbd_transaction_mode_set(db->driver, t, APR_DBD_TRANSACTION_ROLLBACK);
    }
}

static apr_status_t db_end_unwatched(qrt_db_t *db, apr_pool_t *p, apr_dbd_transaction_t *t)
{
    int rv;

    db->in_tx = 0;
    if (t == NATIVE_TX || db->native_tx) {
        apr_status_t nrv = db->native_tx ? native_tx_end(db, p) : APR_SUCCESS;

        store_tx_unlock(db);
        return nrv;
    }
    if (!t) {
        store_tx_unlock(db);
        return APR_SUCCESS;
    }
    rv = apr_dbd_transaction_end(db->driver, p, t);
    store_tx_unlock(db);
    if (rv != 0) {
        db->error = apr_psprintf(p, "commit: %s",
                                 apr_dbd_error(db->driver, db->handle, rv));
        return APR_EGENERAL;
    }
    return APR_SUCCESS;
}

apr_status_t qrt_db_end(qrt_db_t *db, apr_pool_t *p, apr_dbd_transaction_t *t)
{
    int w = store_watch(db);
    apr_status_t rv = db_end_unwatched(db, p, t);

    store_unwatch(db, w);
    return rv;
}

apr_status_t qrt_db_end_with(qrt_db_t *db, apr_pool_t *p, apr_dbd_transaction_t *t,
                             apr_status_t rv)
{
    if (rv != APR_SUCCESS) {
        qrt_db_rollback_only(db, t);
    }
    if (qrt_db_end(db, p, t) != APR_SUCCESS && rv == APR_SUCCESS) {
        rv = APR_EGENERAL;
    }
    return rv;
}

/* One command without rows outside apr_dbd's transactions: 0, or -1 with *error (from
 * p; error NULL: not asked). SQLite's runs on the connection itself, as
 * qrt_db_begin's do (apr_dbd would wait for a lock under a mutex of the process). */
static int snapshot_run(qrt_db_t *db, apr_pool_t *p, const char *sql, const char **error)
{
    int rc, n = 0;

    if (native_ok(db)) {
        sqlite3 *h = apr_dbd_native_handle(db->driver, db->handle);

        if (!h || native_run(h, sql) != SQLITE_OK) {
            if (error) {
                *error = apr_pstrdup(p, h ? sqlite3_errmsg(h) : "no connection");
            }
            return -1;
        }
        return 0;
    }
    rc = apr_dbd_query(db->driver, db->handle, &n, sql);
    if (rc != 0) {
        if (error) {
            *error = apr_pstrdup(p, apr_dbd_error(db->driver, db->handle, rc));
        }
        return -1;
    }
    return 0;
}

static apr_status_t snapshot_cleanup(void *data)
{
    qrt_db_t *db = data;

    db->snapshot_pool = NULL;
    /* (a read-only transaction: COMMIT keeps nothing but what SET changed; on
     * PostgreSQL it ends one that a failed statement aborted, as ROLLBACK would) */
    if (snapshot_run(db, NULL, "COMMIT", NULL) != 0 && native_ok(db)) {
        sqlite3 *h = apr_dbd_native_handle(db->driver, db->handle);

        if (h && !sqlite3_get_autocommit(h)) {
            sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
        }
    }
    return APR_SUCCESS;
}

static apr_status_t db_snapshot_begin_unwatched(qrt_db_t *db, apr_pool_t *p)
{
    const qrt_dialect_t *d = qrt_dialect_of(db->driver);
    const char *error = NULL;

    if (db->in_tx || db->snapshot_pool || !d) {
        return APR_SUCCESS;
    }
    if (snapshot_run(db, p, d->snapshot_sql, &error) != 0) {
        db->error = apr_psprintf(p, "begin a snapshot: %s", error);
        return APR_EGENERAL;
    }
    db->snapshot_pool = p;
    apr_pool_cleanup_register(p, db, snapshot_cleanup, apr_pool_cleanup_null);
    return APR_SUCCESS;
}

apr_status_t qrt_db_snapshot_begin(qrt_db_t *db, apr_pool_t *p)
{
    int w = store_watch(db);
    apr_status_t rv = db_snapshot_begin_unwatched(db, p);

    store_unwatch(db, w);
    return rv;
}

void qrt_db_snapshot_end(qrt_db_t *db)
{
    if (db->snapshot_pool) {
        apr_pool_cleanup_run(db->snapshot_pool, db, snapshot_cleanup);
    }
}
