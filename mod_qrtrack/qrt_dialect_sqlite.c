/* qrt_dialect_sqlite: SQLite through apr_dbd_sqlite3 (one server, a file). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <apr_strings.h>
#include "qrt_dialect.h"
#include "qrt_walvfs.h"
#include "qrt_vset.h"
#include "qrt_vgroups.h"

const char *qrt_dialect_sqlite_check(void);

/* apr_dbd_sqlite3's prepared statement (apr-util 1.x): its sqlite3_stmt first, then
 * what apr_dbd_prepare found of its arguments. Private to apr-util, so checked
 * (sqlite_check) before the native reads use it. */
typedef struct {
    sqlite3_stmt *stmt;
    void *next;
    int nargs;
    int nvals;
    apr_dbd_type_e *types;
} sqlite_prep;

/* qrt_ndistinct(x): the number of distinct non-NULL x, counted in a qrt_vset;
 * -1 when the set would grow past QRT_NDISTINCT_MAX members (the caller then asks
 * the database's COUNT(DISTINCT)). */
#define QRT_NDISTINCT_MAX ((apr_size_t)1 << 22)

typedef struct {
    qrt_vset_t *set;
    int over;
} ndistinct_ctx;

static void ndistinct_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    ndistinct_ctx *c = sqlite3_aggregate_context(ctx, sizeof(*c));
    const unsigned char *s;
    int rc;

    (void)argc;
    if (!c || c->over || sqlite3_value_type(argv[0]) == SQLITE_NULL) {
        return;
    }
    if (!c->set) {
        c->set = qrt_vset_make(QRT_NDISTINCT_MAX);
    }
    if (!c->set) {
        rc = -1;
    }
    else if (sqlite3_value_type(argv[0]) == SQLITE_INTEGER) {
        rc = qrt_vset_add_id(c->set, sqlite3_value_int64(argv[0]));
    }
    else {
        s = sqlite3_value_text(argv[0]);
        rc = s ? qrt_vset_add(c->set, (const char *)s,
                              (apr_size_t)sqlite3_value_bytes(argv[0])) : -1;
    }
    if (rc < 0) {
        c->over = 1;
        qrt_vset_free(c->set);
        c->set = NULL;
    }
}

static void ndistinct_final(sqlite3_context *ctx)
{
    ndistinct_ctx *c = sqlite3_aggregate_context(ctx, 0);

    if (c && c->over) {
        sqlite3_result_int64(ctx, -1);
    }
    else {
        /* -1 here too when the pass that counts found no memory. */
        sqlite3_result_int64(ctx, c && c->set ? (sqlite3_int64)qrt_vset_count(c->set) : 0);
    }
    if (c) {
        qrt_vset_free(c->set);
        c->set = NULL;
    }
}

/* qrt_vgroups(key, click, visitor): the visits grouped by key, in qrt_vgroups' text
 * form (NULL key: ""); '-' past QRT_VGROUPS_MAX visits (16 bytes each, twice while
 * they are counted), or when a visitor is text that is no id (the caller then asks
 * the database's GROUP BY). */
#define QRT_VGROUPS_MAX ((apr_size_t)1 << 20)

typedef struct {
    qrt_vgroups_t *g;
    int over;
    int has_int;                    /* the previous key was last_int, written in buf */
    sqlite3_int64 last_int;
    char buf[24];
} vgroups_ctx;

static void vgroups_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    vgroups_ctx *c = sqlite3_aggregate_context(ctx, sizeof(*c));
    const char *key;
    apr_size_t klen;
    apr_int64_t who;

    (void)argc;
    if (!c || c->over || sqlite3_value_type(argv[2]) == SQLITE_NULL) {
        return;
    }
    if (!c->g && !(c->g = qrt_vgroups_make(QRT_VGROUPS_MAX))) {
        c->over = 1;
        return;
    }
    if (sqlite3_value_type(argv[2]) == SQLITE_INTEGER) {
        who = sqlite3_value_int64(argv[2]);
    }
    else {
        const char *text = (const char *)sqlite3_value_text(argv[2]);

        if (!text || qrt_vgroups_visitor_id(text, (apr_size_t)sqlite3_value_bytes(argv[2]),
                                            &who) < 0) {
            c->over = 1;
            return;
        }
    }
    if (sqlite3_value_type(argv[0]) == SQLITE_INTEGER) {
        /* (a day number: written once for its run of visits, not by SQLite each time) */
        sqlite3_int64 v = sqlite3_value_int64(argv[0]);

        if (!c->has_int || v != c->last_int) {
            apr_snprintf(c->buf, sizeof(c->buf), "%" APR_INT64_T_FMT, (apr_int64_t)v);
            c->last_int = v;
            c->has_int = 1;
        }
        key = c->buf;
        klen = strlen(c->buf);
    }
    else {
        key = (const char *)sqlite3_value_text(argv[0]);
        klen = key ? (apr_size_t)sqlite3_value_bytes(argv[0]) : 0;
    }
    if (qrt_vgroups_add(c->g, key ? key : "", klen, sqlite3_value_int(argv[1]) == 1, who) < 0) {
        c->over = 1;
    }
}

static void vgroups_final(sqlite3_context *ctx)
{
    vgroups_ctx *c = sqlite3_aggregate_context(ctx, 0);
    apr_size_t len = 0;
    char *text;

    if (c && c->over) {
        sqlite3_result_text(ctx, "-", 1, SQLITE_STATIC);
    }
    else if (!c || !c->g) {
        sqlite3_result_text(ctx, "", 0, SQLITE_STATIC);
    }
    else if ((text = qrt_vgroups_text(c->g, &len)) != NULL) {
        sqlite3_result_text(ctx, text, (int)len, free);
    }
    else {
        sqlite3_result_text(ctx, "-", 1, SQLITE_STATIC);
    }
    if (c) {
        qrt_vgroups_free(c->g);
        c->g = NULL;
    }
}

static void qrt_sqlite_functions(sqlite3 *h)
{
    sqlite3_create_function_v2(h, "qrt_ndistinct", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                               NULL, NULL, ndistinct_step, ndistinct_final, NULL);
    sqlite3_create_function_v2(h, "qrt_vgroups", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                               NULL, NULL, vgroups_step, vgroups_final, NULL);
}

static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;
static int check_state;             /* 0 not yet, 1 the layout holds, -1 it does not */
static const char *check_error;
static int test_broken;

static void sqlite_setup(const apr_dbd_driver_t *driver, apr_dbd_t *handle)
{
    sqlite3 *h = apr_dbd_native_handle(driver, handle);

    if (h) {
        /* (a commit's WAL frames in one write, qrt_walvfs) */
        qrt_walvfs_enable(h);
        qrt_sqlite_functions(h);
    }
}

static int sqlite_in_transaction(const apr_dbd_driver_t *driver, apr_dbd_t *handle)
{
    sqlite3 *h = apr_dbd_native_handle(driver, handle);

    return h ? !sqlite3_get_autocommit(h) : -1;
}

static int sqlite_session(const apr_dbd_driver_t *driver, apr_dbd_t *handle)
{
    (void)driver;
    (void)handle;
    return 1;
}

/* The sqlite3 driver makes the transaction, makes it the connection's and apr_dbd
 * registers its end as a cleanup of p even when BEGIN fails (SQLite busy): left so,
 * the connection would keep a pointer into p once p is cleared, and the cleanup would
 * run on a connection closed by then. A failed BEGIN's transaction is ended at once
 * (a ROLLBACK that finds none). */
static int sqlite_begin(const apr_dbd_driver_t *driver, apr_pool_t *p, apr_dbd_t *handle,
                        apr_dbd_transaction_t **t, const char **error)
{
    int rv;

    *t = NULL;
    rv = apr_dbd_transaction_start(driver, p, handle, t);
    if (rv != 0) {
        *error = apr_pstrdup(p, apr_dbd_error(driver, handle, rv));
        if (*t) {
            apr_dbd_transaction_mode_set(driver, *t, APR_DBD_TRANSACTION_ROLLBACK);
            apr_dbd_transaction_end(driver, p, *t);
        }
        *t = NULL;
    }
    return rv;
}

static int sqlite_next_row(const apr_dbd_driver_t *driver, apr_pool_t *p,
                           apr_dbd_results_t *res, apr_dbd_row_t **row)
{
    return apr_dbd_get_row(driver, p, res, row, -1) == 0 ? 0 : -1;
}

static apr_int64_t sqlite_last_rowid(const apr_dbd_driver_t *driver, apr_dbd_t *handle)
{
    return sqlite3_last_insert_rowid(apr_dbd_native_handle(driver, handle));
}

const qrt_dialect_t qrt_dialect_sqlite = {
    QRT_DIALECT_SQLITE, "sqlite3", "SQLite", 1, 0,
    sqlite_setup, sqlite_in_transaction, sqlite_session, sqlite_begin, sqlite_next_row,
    sqlite_last_rowid, NULL, NULL,
    /* (no compaction: VACUUM would pack the file, but it holds the write lock while it
     * copies, and it makes every server's prepared statements stale) */
    NULL,
    /* (deferred: its first read takes the snapshot, which WAL keeps to its end) */
    "BEGIN DEFERRED", NULL, NULL, NULL, NULL
};

static qrt_sqlite_log_fn *sqlite_log_fn;

static void sqlite_log(void *arg, int code, const char *msg)
{
    qrt_sqlite_log_fn *fn = __atomic_load_n(&sqlite_log_fn, __ATOMIC_ACQUIRE);
    int primary = code & 0xff;

    (void)arg;
    if (fn && (primary == SQLITE_CORRUPT || primary == SQLITE_IOERR
               || primary == SQLITE_NOTADB)) {
        fn(code, msg ? msg : "");
    }
}

void qrt_dialect_sqlite_log(qrt_sqlite_log_fn *fn)
{
    __atomic_store_n(&sqlite_log_fn, fn, __ATOMIC_RELEASE);
}

void qrt_dialect_sqlite_tune(int own_connections)
{
    /* (SQLITE_MISUSE once SQLite has started: it keeps what it had) */
    if (own_connections) {
        sqlite3_config(SQLITE_CONFIG_MULTITHREAD);
    }
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    sqlite3_config(SQLITE_CONFIG_LOG, sqlite_log, NULL);
    /* (after the settings: registering a VFS starts SQLite) */
    qrt_walvfs_register();
}

void qrt_dialect_sqlite_untune(void)
{
    if (sqlite3_shutdown() == SQLITE_OK) {
        sqlite3_config(SQLITE_CONFIG_LOG, NULL, NULL);
    }
}

/* Prepares a statement through apr_dbd on a database in memory and finds its
 * sqlite3_stmt where the layout says: the pointer must be one of the connection's
 * own statements (compared, never followed, before it is known), with the SQL and
 * the argument that apr_dbd made of it. */
static const char *layout_check(apr_pool_t *p)
{
    const apr_dbd_driver_t *driver = NULL;
    apr_dbd_t *handle = NULL;
    apr_dbd_prepared_t *prep = NULL;
    const sqlite_prep *sp;
    sqlite3_stmt *own, *found = NULL;
    const char *err = NULL;
    sqlite3 *h;

    if (!sqlite3_threadsafe()) {
        return "SQLite is built without threads";
    }
    if (apr_dbd_get_driver(p, "sqlite3", &driver) != APR_SUCCESS
        || apr_dbd_open_ex(driver, p, ":memory:", &handle, &err) != APR_SUCCESS) {
        return apr_psprintf(p, "cannot open a database in memory: %s", err ? err : "");
    }
    if (apr_dbd_prepare(driver, p, handle, "SELECT %lld", NULL, &prep) != 0) {
        apr_dbd_close(driver, handle);
        return "cannot prepare a statement";
    }
    h = apr_dbd_native_handle(driver, handle);
    sp = (const sqlite_prep *)((const char *)prep + (test_broken ? sizeof(void *) : 0));
    for (own = sqlite3_next_stmt(h, NULL); own; own = sqlite3_next_stmt(h, own)) {
        if (own == sp->stmt) {
            found = own;
        }
    }
    if (!found || strcmp(sqlite3_sql(found), "SELECT ?") != 0 || sp->nargs != 1
        || sp->nvals != 1 || !sp->types || sp->types[0] != APR_DBD_TYPE_LONGLONG) {
        err = "apr_dbd_sqlite3's prepared statement is not laid out as this build "
              "expects";
    }
    apr_dbd_close(driver, handle);
    return err;
}

const char *qrt_dialect_sqlite_check(void)
{
    pthread_mutex_lock(&check_lock);
    if (!check_state) {
        apr_pool_t *p = NULL;
        const char *e = apr_pool_create(&p, NULL) == APR_SUCCESS ? layout_check(p)
                                                                  : "no memory";

        free((void *)check_error);
        check_error = e ? strdup(e) : NULL;
        __atomic_store_n(&check_state, e ? -1 : 1, __ATOMIC_RELEASE);
        if (p) {
            apr_pool_destroy(p);
        }
    }
    pthread_mutex_unlock(&check_lock);
    return check_state > 0 ? NULL
           : (check_error ? check_error : "the check failed");
}

sqlite3_stmt *qrt_dialect_sqlite_stmt(const apr_dbd_prepared_t *prep, int *nargs,
                                      const apr_dbd_type_e **types)
{
    const sqlite_prep *sp = (const sqlite_prep *)prep;

    if (__atomic_load_n(&check_state, __ATOMIC_ACQUIRE) == 0) {
        qrt_dialect_sqlite_check();
    }
    if (__atomic_load_n(&check_state, __ATOMIC_ACQUIRE) < 0 || !sp
        || sp->nargs != sp->nvals) {
        return NULL;
    }
    *nargs = sp->nargs;
    *types = sp->types;
    return sp->stmt;
}

void qrt_dialect_sqlite_renew(apr_dbd_prepared_t *prep)
{
    sqlite_prep *sp = (sqlite_prep *)prep;
    sqlite3_stmt *fresh = NULL;

    if (__atomic_load_n(&check_state, __ATOMIC_ACQUIRE) == 0) {
        qrt_dialect_sqlite_check();
    }
    if (__atomic_load_n(&check_state, __ATOMIC_ACQUIRE) < 0 || !sp || !sp->stmt
        || !sqlite3_sql(sp->stmt)) {
        return;
    }
    /* (the driver's record points at sp: it finalizes the new one when it closes) */
    if (sqlite3_prepare_v2(sqlite3_db_handle(sp->stmt), sqlite3_sql(sp->stmt), -1, &fresh,
                           NULL) == SQLITE_OK && fresh) {
        sqlite3_finalize(sp->stmt);
        sp->stmt = fresh;
    }
    else {
        sqlite3_finalize(fresh);
    }
}

void qrt_dialect_sqlite_test_break(int broken)
{
    pthread_mutex_lock(&check_lock);
    test_broken = broken;
    __atomic_store_n(&check_state, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&check_lock);
}
