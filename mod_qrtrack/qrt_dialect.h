/* qrt_dialect: what differs between the databases mod_qrtrack runs on, in one place.
 *
 * The rest of the code never compares driver names: it asks the dialect of its
 * connection for a fact ("is the database a file of this server?") or a function
 * (set-up, transaction state, the server process). Two dialects: SQLite (one
 * server, apr_dbd's "sqlite3") and PostgreSQL (several servers, apr_dbd's "pgsql").
 *
 * Two tricks reach below apr_dbd, each checked once before use, with a fall-back:
 * SQLite's rows are read natively through apr_dbd_sqlite3's prepared statement,
 * whose layout is private to apr-util; PostgreSQL's connections are asked things
 * apr_dbd does not expose through libpq's functions, found at run time. */
#ifndef QRT_DIALECT_H
#define QRT_DIALECT_H

#include <apr_pools.h>
#include <apr_dbd.h>

typedef enum {
    QRT_DIALECT_SQLITE,
    QRT_DIALECT_PGSQL
} qrt_dialect_id_t;

/* The rows a pipelined command returned, as text (NULL: SQL NULL): row r's column c
 * is values[r * ncols + c], allocated from pool; done once the command ran. */
typedef struct {
    apr_pool_t *pool;
    int nrows, ncols, done;
    const char **values;
} qrt_pipe_rows_t;

/* One command of a pipeline (qrt_dialect_t.pipeline): a prepared statement by its
 * label with its values as text (NULL: SQL NULL), or, label NULL, the SQL of a
 * command without values (BEGIN, COMMIT); rows, when not NULL, receives every row
 * it returns. */
typedef struct {
    const char *label;
    const char *sql;
    int nvalues;
    const char **values;
    qrt_pipe_rows_t *rows;
} qrt_pipe_cmd_t;

typedef struct qrt_dialect_t {
    qrt_dialect_id_t id;
    const char *driver;         /* apr_dbd's name of the driver */
    const char *label;          /* for people: "SQLite", "PostgreSQL" */
    /* The database is a file of this server: its mode and owner, its WAL and the
     * checkpoints, the spool beside it, lock waits by busy timeout, a writer that
     * is alone by BEGIN IMMEDIATE. */
    unsigned embedded : 1;
    /* Every statement is a round trip to a server that several nodes share: writes
     * send many rows a statement and read what they need first, writers of several
     * nodes take an advisory lock, cached codes expire. */
    unsigned remote : 1;
    /* The per-connection set-up every program does (after apr_dbd_open). */
    void (*setup)(const apr_dbd_driver_t *driver, apr_dbd_t *handle);
    /* 1 when the connection is inside a transaction, 0 when not, -1 unknown. */
    int (*in_transaction)(const apr_dbd_driver_t *driver, apr_dbd_t *handle);
    /* The connection's server process (PostgreSQL's backend PID), 0 when unknown;
     * 1 for an embedded database (the session is this process's). */
    int (*session)(const apr_dbd_driver_t *driver, apr_dbd_t *handle);
    /* apr_dbd_transaction_start, made safe for the driver; on failure the driver's
     * message is in *error (from p) and *t is NULL. */
    int (*begin)(const apr_dbd_driver_t *driver, apr_pool_t *p, apr_dbd_t *handle,
                 apr_dbd_transaction_t **t, const char **error);
    /* The next row of a random-access result (*row NULL: the first), as
     * apr_dbd_get_row(..., -1) would give it, but with every row's strings living as
     * long as p: 0, or -1 after the last. */
    int (*next_row)(const apr_dbd_driver_t *driver, apr_pool_t *p,
                    apr_dbd_results_t *res, apr_dbd_row_t **row);
    /* The id of the row the connection's last INSERT added; NULL when the dialect's
     * insert statements return it themselves (RETURNING). */
    apr_int64_t (*last_rowid)(const apr_dbd_driver_t *driver, apr_dbd_t *handle);
    /* Runs the n commands in order in one round trip (PostgreSQL: libpq's pipeline
     * mode); NULL where the dialect has none. 0 when every one succeeded (*first: the
     * first column of the last command's first row, from p, NULL for none; each
     * command's rows in its rows, when it has one); 1 when
     * command *failed failed (*error: its message, from p; the later ones were not
     * run); -1 when the connection cannot (n 0: asks only that). */
    int (*pipeline)(const apr_dbd_driver_t *driver, apr_dbd_t *handle, apr_pool_t *p,
                    const qrt_pipe_cmd_t *cmds, int n, const char **first, int *failed,
                    const char **error);
    /* The server's version as PostgreSQL numbers it (150004), 0 when unknown; NULL
     * where the dialect has none. */
    int (*server_version)(const apr_dbd_driver_t *driver, apr_dbd_t *handle);
    /* What `qrtrack-admin compact` runs, one statement at a time outside a transaction,
     * to give back the room that the tables growing with the visits leave in their
     * pages (qrt_store_compact.h): each a label for people, then its SQL (constant text:
     * some cannot be prepared); NULL-terminated. NULL: no compaction while servers run. */
    const char *const (*compact)[2];
    /* Starts a transaction that only reads and sees one state of the database from its
     * first statement to its end (qrt_db_snapshot_begin). */
    const char *snapshot_sql;
    /* The connection's socket, -1 when unknown; NULL for an embedded database (its
     * calls wait for no server: qrt_dbwatch.h). */
    int (*socket)(const apr_dbd_driver_t *driver, apr_dbd_t *handle);
    /* The host name that a connection with these parameters looks up, NULL for none
     * (an address, a socket: qrt_resolve.h); NULL where the dialect connects to no host. */
    const char *(*host_to_resolve)(apr_pool_t *p, const char *params);
    /* params connecting to host at its addresses addrs (comma-separated, numeric). */
    const char *(*with_addresses)(apr_pool_t *p, const char *params, const char *host,
                                  const char *addrs);
    /* params whose connection attempt waits at most seconds for the server, unless they
     * say how long themselves; NULL where no server is waited for. */
    const char *(*connect_within)(apr_pool_t *p, const char *params, int seconds);
} qrt_dialect_t;

/* The dialect of apr_dbd's driver named name, or NULL for a driver mod_qrtrack
 * does not support. */
const qrt_dialect_t *qrt_dialect_named(const char *name);
/* The dialect of an apr_dbd driver (NULL: unsupported). */
const qrt_dialect_t *qrt_dialect_of(const apr_dbd_driver_t *driver);
/* 1 when the driver's database is a file of this server (SQLite). */
int qrt_dialect_embedded(const apr_dbd_driver_t *driver);
/* 1 when the driver's statements are round trips to a shared server (PostgreSQL). */
int qrt_dialect_remote(const apr_dbd_driver_t *driver);

/* Checks once that the tricks of the dialect of driver hold in this process (apr_dbd's
 * private layout for SQLite, libpq's functions for PostgreSQL); NULL when they do,
 * else a message saying what failed and that the portable path is used instead.
 * Runs by itself at first need; a program calls it at start-up to log the answer. */
const char *qrt_dialect_self_check(const apr_dbd_driver_t *driver);

/* ---- SQLite ------------------------------------------------------------------ */

/* SQLite, before its first use in the process: no statistics of its memory (each of
 * its allocations takes a mutex for them), and, when own_connections says no
 * connection is ever used by two threads at once, no mutex on each connection either.
 * A process where another library may share a connection between threads (httpd's
 * other modules) keeps those. Then the WAL's writes of a commit are made one
 * (qrt_walvfs, SQLite's default VFS from here on). */
void qrt_dialect_sqlite_tune(int own_connections);
/* SQLite's own log of a damaged database or a failed system call (its error log: which
 * check failed, at which line of its source, or which call, on which file), handed to
 * fn (NULL: to nobody) from whichever thread met it; its other lines (a schema changed,
 * a WAL recovered, an automatic index) are not. fn must not call SQLite. Takes effect
 * where qrt_dialect_sqlite_tune ran before SQLite started. */
typedef void qrt_sqlite_log_fn(int code, const char *msg);
void qrt_dialect_sqlite_log(qrt_sqlite_log_fn *fn);
/* Before the code that qrt_dialect_sqlite_tune gave SQLite is unloaded (httpd unloads
 * and loads its modules again at a start and a restart, maybe elsewhere in memory,
 * while SQLite stays loaded with the database driver): SQLite is shut down and its log
 * hook cleared, which it allows only while shut down, so that it never calls into code
 * that is gone. Every connection of the process must be closed: in httpd's parent,
 * between two readings of the configuration, none is open. */
void qrt_dialect_sqlite_untune(void);
/* The sqlite3_stmt inside apr_dbd_sqlite3's prepared statement, with its number of
 * arguments and their types; NULL when native reads are off (the self-check failed,
 * or SQLite is not thread-safe). */
struct sqlite3_stmt *qrt_dialect_sqlite_stmt(const apr_dbd_prepared_t *prep, int *nargs,
                                             const apr_dbd_type_e **types);
/* Makes apr_dbd_sqlite3's statement, which it prepares with the legacy sqlite3_prepare
 * (a change of the schema by any connection, an administrator's CREATE INDEX or DROP
 * TRIGGER, leaves such a statement failing with SQLITE_SCHEMA for as long as its
 * connection lives), one of sqlite3_prepare_v2, which SQLite prepares again by itself
 * after such a change. Nothing when the self-check failed. */
void qrt_dialect_sqlite_renew(apr_dbd_prepared_t *prep);
/* For tests: what the self-check sees in place of apr_dbd_sqlite3's prepared
 * statement (0: the real layout; 1: a layout that does not match). */
void qrt_dialect_sqlite_test_break(int broken);

/* ---- PostgreSQL -------------------------------------------------------------- */

/* For tests: the libpq function named sym is taken as missing ("" none). */
void qrt_dialect_pgsql_test_hide(const char *sym);

#endif
