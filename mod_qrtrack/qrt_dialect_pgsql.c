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
#include "qrt_dialect.h"

const char *qrt_dialect_pgsql_check(void);

typedef int verbosity_fn(void *conn, int verbosity);
typedef int status_fn(const void *conn);

static pthread_mutex_t look_lock = PTHREAD_MUTEX_INITIALIZER;
static int looked;
static verbosity_fn *set_verbosity;     /* PQsetErrorVerbosity */
static status_fn *tx_status;            /* PQtransactionStatus */
static status_fn *backend_pid;          /* PQbackendPID */
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

/* The pgsql driver makes the transaction only when BEGIN succeeds, then uses it
 * either way: a BEGIN that fails (a lost connection) would crash the process. Its
 * transaction is three zeroed words (mode, error, handle): it is given one. */
static int pg_begin(const apr_dbd_driver_t *driver, apr_pool_t *p, apr_dbd_t *handle,
                    apr_dbd_transaction_t **t, const char **error)
{
    int rv;

    *t = apr_pcalloc(p, 8 * sizeof(void *));
    rv = apr_dbd_transaction_start(driver, p, handle, t);
    if (rv != 0) {
        *error = apr_pstrdup(p, apr_dbd_error(driver, handle, rv));
        if (*t) {
            /* The driver took it as the connection's: let go of it again. */
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

const qrt_dialect_t qrt_dialect_pgsql = {
    QRT_DIALECT_PGSQL, "pgsql", "PostgreSQL", 0, 1,
    pg_setup, pg_in_transaction, pg_session, pg_begin, pg_next_row, NULL
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
