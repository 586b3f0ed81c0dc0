/* qrt_dblimit: how long one statement may run, and why a connection was refused
 * (qrt_dblimit.h). */
#include <string.h>
#include <apr_strings.h>
#include <apr_time.h>
#include <sqlite3.h>

#include "qrt_clock.h"
#include "qrt_dblimit.h"

/* SQLite: the bound of one connection. Used by one thread at a time, as the
 * connection is. */
struct qrt_db_limit {
    apr_interval_time_t limit;
    apr_time_t started;         /* when the last statement started; 0: none since the
                                 * connection was last taken (qrt_db_limit_idle) */
    apr_time_t busy_since;      /* when a wait outside a statement (a prepare) began */
};
typedef struct qrt_db_limit sqlite_limit;

/* Virtual machine steps between two looks at the clock (a few microseconds). */
#define LIMIT_PROGRESS_STEPS 2000

/* A statement starts (not again when it is stepped again after SQLITE_BUSY, as
 * apr_dbd does: its retries count in its time). Not cleared when it ends: SQLite
 * reports an end at each SQLITE_BUSY too. */
static int limit_trace(unsigned type, void *ctx, void *p, void *x)
{
    sqlite_limit *l = ctx;

    (void)p;
    /* (a trigger's program starts with "--": part of its statement) */
    if (type == SQLITE_TRACE_STMT && (!x || strncmp(x, "--", 2) != 0)) {
        l->started = qrt_clock_now();
    }
    return 0;
}

static int limit_progress(void *ctx)
{
    const sqlite_limit *l = ctx;

    return l->started && qrt_clock_now() - l->started > l->limit;
}

/* Waits for a lock in short sleeps, as SQLite's busy timeout does, until the
 * statement's time is over (or, outside a statement, the limit from the first try). */
static int limit_busy(void *ctx, int n)
{
    static const int steps_ms[] = { 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100 };
    sqlite_limit *l = ctx;
    apr_time_t now = qrt_clock_now(), from;
    apr_interval_time_t left, step;

    if (n == 0) {
        l->busy_since = now;
    }
    from = l->started ? l->started : l->busy_since;
    left = from + l->limit - now;
    if (left <= 0) {
        return 0;
    }
    step = apr_time_from_msec(steps_ms[n < 12 ? n : 11]);
    apr_sleep(step < left ? step : left);
    return 1;
}

const char *qrt_db_limit_sql(apr_pool_t *p, int ms)
{
    if (ms <= 0) {
        return "RESET statement_timeout; RESET lock_timeout";
    }
    /* A lock wait ends with its own message (55P03) rather than the statement's. */
    return apr_psprintf(p, "SET statement_timeout = %d; SET lock_timeout = %d", ms, ms);
}

apr_status_t qrt_db_limit(const apr_dbd_driver_t *driver, apr_dbd_t *handle,
                          apr_pool_t *p, int ms, qrt_db_limit_t **out)
{
    sqlite3 *h;
    sqlite_limit *l;
    int nrows = 0;

    if (out) {
        *out = NULL;
    }
    if (ms <= 0) {
        return APR_SUCCESS;
    }
    if (qrt_dialect_remote(driver)) {
        /* (the session's statement_timeout and lock_timeout) */
        return apr_dbd_query(driver, handle, &nrows, qrt_db_limit_sql(p, ms)) == 0
               ? APR_SUCCESS : APR_EGENERAL;
    }
    h = apr_dbd_native_handle(driver, handle);
    if (!h) {
        return APR_EGENERAL;
    }
    l = apr_pcalloc(p, sizeof(*l));
    l->limit = apr_time_from_msec(ms);
    /* (replaces any busy timeout: the two are one handler in SQLite) */
    sqlite3_busy_handler(h, limit_busy, l);
    sqlite3_progress_handler(h, LIMIT_PROGRESS_STEPS, limit_progress, l);
    if (out) {
        *out = l;
    }
    return sqlite3_trace_v2(h, SQLITE_TRACE_STMT, limit_trace, l) == SQLITE_OK
           ? APR_SUCCESS : APR_EGENERAL;
}

void qrt_db_limit_idle(qrt_db_limit_t *l)
{
    if (l) {
        l->started = 0;
    }
}

int qrt_db_session(const apr_dbd_driver_t *driver, apr_dbd_t *handle)
{
    const qrt_dialect_t *d = qrt_dialect_of(driver);

    return d ? d->session(driver, handle) : 0;
}

int qrt_db_timed_out(const qrt_db_t *db)
{
    const char *e = db->error;

    return e && (strstr(e, " 57014:") || strstr(e, " 55P03:")
                 || strstr(e, "canceling statement due to")
                 || strstr(e, "interrupted") || strstr(e, "database is locked"));
}

qrt_db_refusal_t qrt_db_refusal(const qrt_dialect_t *dialect, const char *err)
{
    if (dialect && dialect->embedded) {
        return QRT_DB_REFUSED_FILE;
    }
    if (!err) {
        return QRT_DB_REFUSED_OTHER;
    }
    if (strstr(err, "too many connections for role")
        || strstr(err, "too many connections for database")) {
        return QRT_DB_REFUSED_ROLE_LIMIT;
    }
    if (strstr(err, "too many clients") || strstr(err, "connection slots are reserved")
        || strstr(err, "53300")) {
        return QRT_DB_REFUSED_SLOTS;
    }
    if (strstr(err, "password") || strstr(err, "pg_hba.conf")
        || strstr(err, "does not exist") || strstr(err, "authentication")) {
        return QRT_DB_REFUSED_AUTH;
    }
    if (strstr(err, "could not connect") || strstr(err, "Connection refused")
        || strstr(err, "starting up") || strstr(err, "shutting down")
        || strstr(err, "in recovery") || strstr(err, "timeout expired")
        || strstr(err, "could not translate host name") || strstr(err, "No route to host")
        /* (the module's own lookup of DBDParams' host: qrt_resolve.h) */
        || strstr(err, "cannot look up the database host")) {
        return QRT_DB_REFUSED_UNREACHABLE;
    }
    return QRT_DB_REFUSED_OTHER;
}

int qrt_db_connect_silent(const char *err)
{
    return err && strstr(err, "timeout expired") != NULL;
}

const char *qrt_db_refusal_advice(qrt_db_refusal_t why)
{
    switch (why) {
    case QRT_DB_REFUSED_SLOTS:
        return "PostgreSQL has no connection slot left: max_connections must be at "
               "least nodes x (ServerLimit x (DBDMax + 5) + 1) + "
               "superuser_reserved_connections "
               "(+ reserved_connections from PostgreSQL 16) + every other client "
               "(qrtrack-admin, psql, backups); raise it, or lower DBDMax";
    case QRT_DB_REFUSED_ROLE_LIMIT:
        return "the database user's or the database's CONNECTION LIMIT is reached: "
               "raise it (ALTER ROLE/DATABASE ... CONNECTION LIMIT) to at least "
               "nodes x (ServerLimit x (DBDMax + 5) + 1) + other clients, or lower DBDMax";
    case QRT_DB_REFUSED_UNREACHABLE:
        return "the database server does not answer (down, starting, or a wrong host "
               "or port in DBDParams)";
    case QRT_DB_REFUSED_AUTH:
        return "the database refused the login: check the user, password and dbname "
               "of DBDParams, and pg_hba.conf";
    case QRT_DB_REFUSED_FILE:
        return "SQLite cannot open the database: check DBDParams, and that the file "
               "and its directory belong to the server's User";
    default:
        return "check DBDriver and DBDParams";
    }
}
