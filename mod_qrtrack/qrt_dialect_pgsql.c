/* qrt_dialect_pgsql: PostgreSQL through apr_dbd_pgsql (several servers share it).
 *
 * apr_dbd does not expose everything a careful client asks of a connection; libpq,
 * loaded with the driver, does. Its functions are found at run time (the module is
 * not linked with libpq, which only PostgreSQL's users install); when one is
 * missing, what needs it is skipped, as the self-check says. */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <apr_strings.h>
#include "qrt_resolve.h"
#include "qrt_dialect.h"

const char *qrt_dialect_pgsql_check(void);

typedef int verbosity_fn(void *conn, int verbosity);
typedef int status_fn(const void *conn);
typedef int conn_fn(void *conn);
typedef int send_params_fn(void *conn, const char *command, int nparams, const void *types,
                           const char *const *values, const int *lengths, const int *formats,
                           int result_format);
typedef int send_prepared_fn(void *conn, const char *name, int nparams,
                             const char *const *values, const int *lengths,
                             const int *formats, int result_format);
typedef void *get_result_fn(void *conn);
typedef int result_int_fn(const void *res);
typedef char *result_str_fn(const void *res);
typedef char *conn_str_fn(const void *conn);
typedef void clear_fn(void *res);
typedef char *value_fn(const void *res, int row, int col);
typedef int isnull_fn(const void *res, int row, int col);

static pthread_mutex_t look_lock = PTHREAD_MUTEX_INITIALIZER;
static int looked;
static verbosity_fn *set_verbosity;     /* PQsetErrorVerbosity */
static status_fn *tx_status;            /* PQtransactionStatus */
static status_fn *backend_pid;          /* PQbackendPID */
static status_fn *server_version;       /* PQserverVersion */
static status_fn *socket_of;            /* PQsocket */
/* libpq 14's pipeline mode, and what reads its results */
static struct {
    conn_fn *enter, *exit, *sync;       /* PQenterPipelineMode, PQexitPipelineMode,
                                         * PQpipelineSync */
    send_params_fn *send_params;        /* PQsendQueryParams */
    send_prepared_fn *send_prepared;    /* PQsendQueryPrepared */
    get_result_fn *get_result;          /* PQgetResult */
    result_int_fn *status, *ntuples, *nfields;  /* PQresultStatus, PQntuples, PQnfields */
    result_str_fn *message, *cmd_status;  /* PQresultErrorMessage, PQcmdStatus */
    conn_str_fn *conn_message;          /* PQerrorMessage */
    clear_fn *clear;                    /* PQclear */
    value_fn *value;                    /* PQgetvalue */
    isnull_fn *isnull;                  /* PQgetisnull */
} pq;
static int pipeline_ok;
static char missing[200];              /* "libpq lacks" and their names */
static int nmissing;
static char hidden[64];

static void *pg_sym(const char *name)
{
    void *f = strcmp(hidden, name) ? dlsym(RTLD_DEFAULT, name) : NULL;

    if (!f) {
        apr_cpystrn(missing + strlen(missing), nmissing++ ? ", " : " ",
                    sizeof(missing) - strlen(missing));
        apr_cpystrn(missing + strlen(missing), name, sizeof(missing) - strlen(missing));
    }
    return f;
}

static void pg_look(void)
{
    if (__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
        return;
    }
    pthread_mutex_lock(&look_lock);
    if (!looked) {
        apr_cpystrn(missing, "libpq lacks", sizeof(missing));
        nmissing = 0;
        set_verbosity = (verbosity_fn *)pg_sym("PQsetErrorVerbosity");
        tx_status = (status_fn *)pg_sym("PQtransactionStatus");
        backend_pid = (status_fn *)pg_sym("PQbackendPID");
        server_version = (status_fn *)pg_sym("PQserverVersion");
        socket_of = (status_fn *)pg_sym("PQsocket");
        pq.enter = (conn_fn *)pg_sym("PQenterPipelineMode");
        pq.exit = (conn_fn *)pg_sym("PQexitPipelineMode");
        pq.sync = (conn_fn *)pg_sym("PQpipelineSync");
        pq.send_params = (send_params_fn *)pg_sym("PQsendQueryParams");
        pq.send_prepared = (send_prepared_fn *)pg_sym("PQsendQueryPrepared");
        pq.get_result = (get_result_fn *)pg_sym("PQgetResult");
        pq.status = (result_int_fn *)pg_sym("PQresultStatus");
        pq.ntuples = (result_int_fn *)pg_sym("PQntuples");
        pq.nfields = (result_int_fn *)pg_sym("PQnfields");
        pq.isnull = (isnull_fn *)pg_sym("PQgetisnull");
        pq.message = (result_str_fn *)pg_sym("PQresultErrorMessage");
        pq.cmd_status = (result_str_fn *)pg_sym("PQcmdStatus");
        pq.conn_message = (conn_str_fn *)pg_sym("PQerrorMessage");
        pq.clear = (clear_fn *)pg_sym("PQclear");
        pq.value = (value_fn *)pg_sym("PQgetvalue");
        pipeline_ok = pq.enter && pq.exit && pq.sync && pq.send_params && pq.send_prepared
                      && pq.get_result && pq.status && pq.ntuples && pq.message
                      && pq.cmd_status && pq.conn_message && pq.clear && pq.value
                      && pq.nfields && pq.isnull;
        __atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&look_lock);
}

static void pg_setup(const apr_dbd_driver_t *driver, apr_dbd_t *handle)
{
    int nrows = 0;

    pg_look();
    /* PQERRORS_VERBOSE (2) puts the SQLSTATE in every message, whatever the
     * language of the server's messages (qrt_db_retryable, qrt_db_lost). */
    if (set_verbosity) {
        set_verbosity(apr_dbd_native_handle(driver, handle), 2);
    }
    /* Parallel workers only where they save far more than their start: the
     * planner's default cost started workers for the reports' short statements, on
     * cores the web server shares. A setting of the session, not the server's. */
    apr_dbd_query(driver, handle, &nrows, "SET parallel_setup_cost = 10000");
}

static int pg_in_transaction(const apr_dbd_driver_t *driver, apr_dbd_t *handle)
{
    pg_look();
    /* PQTRANS_IDLE is 0 */
    return tx_status ? tx_status(apr_dbd_native_handle(driver, handle)) != 0 : -1;
}

static int pg_session(const apr_dbd_driver_t *driver, apr_dbd_t *handle)
{
    pg_look();
    return backend_pid ? backend_pid(apr_dbd_native_handle(driver, handle)) : 0;
}

static int pg_server_version(const apr_dbd_driver_t *driver, apr_dbd_t *handle)
{
    pg_look();
    return server_version && handle
           ? server_version(apr_dbd_native_handle(driver, handle)) : 0;
}

static int pg_socket(const apr_dbd_driver_t *driver, apr_dbd_t *handle)
{
    pg_look();
    return socket_of && handle ? socket_of(apr_dbd_native_handle(driver, handle)) : -1;
}

/* The pgsql driver's transaction (apr-util 1.x, whose ABI is frozen). */
typedef struct {
    int mode;
    int errnum;
    apr_dbd_t *handle;          /* set when BEGIN got an answer, success or not */
} pg_transaction;

/* The pgsql driver makes the transaction only when BEGIN succeeds, then uses it
 * either way: a BEGIN that fails (a lost connection) would crash the process. It is
 * given one, zeroed, and apr_dbd registers the driver's end of it as a cleanup of p
 * whether BEGIN succeeded or not. A BEGIN that got no answer at all (the connection
 * gone) leaves it without its handle: that cleanup would reach through the NULL
 * handle when p is cleared. So a failed BEGIN's transaction is always ended here, at
 * once (which removes the cleanup), given its handle first when the driver did not
 * set it; the ROLLBACK that sends fails at once on a connection known to be lost. */
static int pg_begin(const apr_dbd_driver_t *driver, apr_pool_t *p, apr_dbd_t *handle,
                    apr_dbd_transaction_t **t, const char **error)
{
    int rv;

    *t = apr_pcalloc(p, 8 * sizeof(void *));
    rv = apr_dbd_transaction_start(driver, p, handle, t);
    if (rv != 0) {
        *error = apr_pstrdup(p, apr_dbd_error(driver, handle, rv));
        if (*t) {
            pg_transaction *pt = (pg_transaction *)(void *)*t;

            if (!pt->handle) {
                pt->handle = handle;
            }
            pt->errnum = 1;         /* ended by ROLLBACK, not COMMIT */
            apr_dbd_transaction_end(driver, p, *t);
        }
        *t = NULL;
    }
    return rv;
}

/* The pgsql driver's row (apr-util 1.x, whose ABI is frozen): n is its 0-based
 * index in the result. */
typedef struct {
    int n;
    void *res;
} pg_row;

static int pg_next_row(const apr_dbd_driver_t *driver, apr_pool_t *p,
                       apr_dbd_results_t *res, apr_dbd_row_t **row)
{
    /* Asked for the row after the last, the driver frees the result at once, and
     * the strings of its rows with it: stop at the last row instead, so that they
     * live as long as the select's pool, as SQLite's do. */
    int next = *row ? ((pg_row *)*row)->n + 2 : 1;

    if (next > apr_dbd_num_tuples(driver, res)) {
        *row = NULL;
        return -1;
    }
    return apr_dbd_get_row(driver, p, res, row, next) == 0 ? 0 : -1;
}

/* libpq's ExecStatusType */
#define PGRES_COMMAND_OK 1
#define PGRES_TUPLES_OK 2
#define PGRES_PIPELINE_SYNC 10

/* The message of a failed command (or of the connection when it gave no result). */
static const char *pipe_error(apr_pool_t *p, void *conn, void *res)
{
    const char *m = res ? pq.message(res) : NULL;

    if (!m || !*m) {
        m = pq.conn_message(conn);
    }
    return apr_pstrdup(p, m && *m ? m : "no result from the server");
}

/* Every row of res into out (from out->pool). */
static void pipe_rows(void *res, qrt_pipe_rows_t *out)
{
    int r, c, nrows = pq.ntuples(res), ncols = pq.nfields(res);

    out->nrows = nrows;
    out->ncols = ncols;
    out->values = apr_palloc(out->pool, (apr_size_t)(nrows * ncols > 0 ? nrows * ncols : 1)
                                        * sizeof(*out->values));
    for (r = 0; r < nrows; r++) {
        for (c = 0; c < ncols; c++) {
            out->values[r * ncols + c] = pq.isnull(res, r, c)
                                         ? NULL : apr_pstrdup(out->pool, pq.value(res, r, c));
        }
    }
    out->done = 1;
}

/* Reads every result up to the pipeline's sync point: the first failure in
 * *failed, *error; the last command's first value in *first, each command's rows
 * in its rows. 0 when the sync point was reached (the connection may leave pipeline
 * mode), -1 when not. */
static int pipe_read(void *conn, apr_pool_t *p, const qrt_pipe_cmd_t *cmds, int n,
                     const char **first, int *failed, const char **error)
{
    int i;

    for (i = 0; i < n; i++) {
        void *res = pq.get_result(conn), *more;
        int st = res ? pq.status(res) : -1;

        if (!res) {
            if (*failed < 0) {
                *failed = i;
                *error = pipe_error(p, conn, NULL);
            }
            return -1;          /* the connection is gone */
        }
        if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && *failed < 0) {
            *failed = i;
            *error = pipe_error(p, conn, res);
        }
        /* A COMMIT of a transaction that failed ends it as ROLLBACK, and says so only
         * in its tag. */
        else if (st == PGRES_COMMAND_OK && !cmds[i].label && !strcmp(cmds[i].sql, "COMMIT")
                 && strcmp(pq.cmd_status(res), "COMMIT") && *failed < 0) {
            *failed = i;
            *error = apr_pstrcat(p, "the transaction was rolled back (", pq.cmd_status(res),
                                 ")", NULL);
        }
        if (i == n - 1 && *failed < 0 && st == PGRES_TUPLES_OK && pq.ntuples(res) > 0) {
            *first = apr_pstrdup(p, pq.value(res, 0, 0));
        }
        if (cmds[i].rows && *failed < 0 && st == PGRES_TUPLES_OK) {
            pipe_rows(res, cmds[i].rows);
        }
        pq.clear(res);
        /* each command's results end with a NULL */
        while ((more = pq.get_result(conn)) != NULL) {
            pq.clear(more);
        }
    }
    {
        void *res = pq.get_result(conn);
        int st = res ? pq.status(res) : -1;

        if (res) {
            pq.clear(res);
        }
        return st == PGRES_PIPELINE_SYNC ? 0 : -1;
    }
}

/* What is left of a pipeline that broke off: read (boundedly) up to its sync
 * point or the connection's end. */
static void pipe_drain(void *conn)
{
    int i, nulls = 0;

    for (i = 0; i < 256 && nulls < 2; i++) {
        void *res = pq.get_result(conn);

        if (!res) {
            nulls++;
            continue;
        }
        nulls = 0;
        if (pq.status(res) == PGRES_PIPELINE_SYNC) {
            pq.clear(res);
            return;
        }
        pq.clear(res);
    }
}

static int pg_pipeline(const apr_dbd_driver_t *driver, apr_dbd_t *handle, apr_pool_t *p,
                       const qrt_pipe_cmd_t *cmds, int n, const char **first, int *failed,
                       const char **error)
{
    void *conn;
    int i, sent = 0;

    pg_look();
    if (!pipeline_ok) {
        return -1;
    }
    if (n <= 0) {
        return 0;
    }
    conn = apr_dbd_native_handle(driver, handle);
    *first = NULL;
    *failed = -1;
    *error = NULL;
    if (!pq.enter(conn)) {
        *failed = 0;
        *error = pipe_error(p, conn, NULL);
        return 1;
    }
    for (i = 0; i < n; i++) {
        const qrt_pipe_cmd_t *c = &cmds[i];
        int ok = c->label ? pq.send_prepared(conn, c->label, c->nvalues,
                                             (const char *const *)c->values, NULL, NULL, 0)
                          : pq.send_params(conn, c->sql, 0, NULL, NULL, NULL, NULL, 0);

        if (!ok) {
            *failed = i;
            *error = pipe_error(p, conn, NULL);
            break;
        }
        sent++;
    }
    /* What was sent is read to its end even after a failure, so the connection
     * leaves pipeline mode in order (a lost one fails its next statement). */
    if (!pq.sync(conn) && *failed < 0) {
        *failed = sent;
        *error = pipe_error(p, conn, NULL);
    }
    if (pipe_read(conn, p, cmds, sent, first, failed, error) != 0) {
        pipe_drain(conn);
    }
    if (!pq.exit(conn) && *failed < 0) {
        *failed = n - 1;
        *error = pipe_error(p, conn, NULL);
    }
    if (*failed >= 0) {
        *first = NULL;
        return 1;
    }
    return 0;
}

/* Compaction: the B-tree indexes of the tables that grow with the visits, built again
 * (REINDEX ... CONCURRENTLY: writes and reads go on meanwhile). Their pages fill by halves:
 * a tracker's visits and a visitor's are added inside the index, behind other trackers'
 * and visitors', where a full page splits in two halves that stay half to two thirds
 * full; a new build fills them. An interrupted REINDEX CONCURRENTLY leaves its new or old
 * index behind, invalid (suffix _ccnew or _ccold) but still written by every insert:
 * those of these tables are dropped first (waiting at most 10 s for their table). One
 * compaction at a time: the first step takes an advisory lock ("qrtc") that the session
 * holds to its end, or fails, since a second one would drop the first's index being built
 * as a leftover. */
static const char *const pg_compact[][2] = {
    { "indexes left by an interrupted compaction",
      "DO $$ DECLARE r record; BEGIN IF NOT pg_try_advisory_lock(1903326307) THEN RAISE "
      "EXCEPTION 'another compaction of this database is running'; END IF; "
      "SET LOCAL lock_timeout = '10s'; FOR r IN SELECT "
      "c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON "
      "t.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE NOT "
      "i.indisvalid AND c.relname ~ '_cc(new|old)[0-9]*$' AND n.nspname = current_schema() "
      "AND t.relname IN ('visit_rows', 'agg_link', 'agg_gaps', 'agg_cnt', 'agg_day') "
      "LOOP EXECUTE format('DROP INDEX %I', r.relname); END LOOP; "
      "END $$" },
    { "visit_rows", "REINDEX TABLE CONCURRENTLY visit_rows" },
    { "agg_link", "REINDEX TABLE CONCURRENTLY agg_link" },
    { "agg_gaps", "REINDEX TABLE CONCURRENTLY agg_gaps" },
    { "agg_cnt", "REINDEX TABLE CONCURRENTLY agg_cnt" },
    { "agg_day", "REINDEX TABLE CONCURRENTLY agg_day" },
    { NULL, NULL }
};

const qrt_dialect_t qrt_dialect_pgsql = {
    QRT_DIALECT_PGSQL, "pgsql", "PostgreSQL", 0, 1,
    pg_setup, pg_in_transaction, pg_session, pg_begin, pg_next_row, NULL, pg_pipeline,
    pg_server_version, pg_compact,
    "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", pg_socket,
    /* libpq's connection string: host, hostaddr (qrt_resolve.c) */
    qrt_resolve_pg_host, qrt_resolve_pg_params, qrt_resolve_pg_connect_within
};

const char *qrt_dialect_pgsql_check(void)
{
    pg_look();
    return nmissing ? missing : NULL;
}

void qrt_dialect_pgsql_test_hide(const char *sym)
{
    pthread_mutex_lock(&look_lock);
    apr_cpystrn(hidden, sym ? sym : "", sizeof(hidden));
    looked = 0;
    pthread_mutex_unlock(&look_lock);
}
