/* qrt_store: named store functions over apr_dbd prepared statements.
 *
 * Every SQL statement of the project is written whole in the files of sql/statements under a
 * name; the build compiles them into a table (qrt_sql.h, generated), and the code names
 * each by its macro SQL_<name> (a mistyped name does not compile). Every connection prepares them with
 * qrt_db_prepare_all(): the module's (mod_dbd's post_connect, after SQLite's busy
 * timeout is set), the scan writers', qrtrack-admin's and the tests'.
 * Callers never build SQL: they call qrt_store_<thing>_<verb>(). */
#ifndef QRT_STORE_H
#define QRT_STORE_H

#include <apr_pools.h>
#include <apr_tables.h>
#include <apr_hash.h>
#include <apr_dbd.h>
#include <jansson.h>

#include "qrt_token.h"
#include "qrt_dict.h"
#include "qrt_dialect.h"
#include "qrt_sql.h"

/* One connection: what ap_dbd_t carries. */
typedef struct {
    const apr_dbd_driver_t *driver;
    apr_dbd_t *handle;
    apr_hash_t *prepared;   /* label -> apr_dbd_prepared_t* */
    const char *error;      /* last error message, or NULL */
    apr_pool_t *pool;       /* the connection's: statements it prepares on first use
                             * live there (NULL: the pool of the call) */
    qrt_dict_cache_t *dict; /* the visits' dictionary ids known to a writer that
                             * keeps them across transactions, or NULL */
    int in_tx;              /* inside qrt_db_begin .. qrt_db_end */
    apr_array_header_t *later;  /* in a pipelined transaction: the statements held
                                 * (qrt_pipe_cmd_t), else NULL */
    /* A lock outside the database held from qrt_db_begin to qrt_db_end (lock 1 takes
     * it, 0 gives it back), or NULL: on SQLite the webhook worker takes the scan
     * writers' mutex, so that it waits for their commits there, in turn with them,
     * and not in SQLite's busy wait. */
    apr_status_t (*tx_lock)(int lock);
    int tx_locked;
    int again;              /* the transaction failed only for a reason that running
                             * it again from its start removes (qrt_db_retryable) */
    /* SQLite: the transaction of qrt_db_begin is the connection's own, run without
     * apr_dbd (which would wait for SQLite's lock holding a mutex of the whole
     * process); tx_failed: a statement of it failed (it is rolled back); tx_rollback:
     * qrt_db_rollback_only; tx_pool: where its end is a cleanup. */
    int native_tx, tx_failed, tx_rollback;
    apr_pool_t *tx_pool;
    /* Inside qrt_db_snapshot_begin .. end: the pool whose cleanup ends it. */
    apr_pool_t *snapshot_pool;
    /* SQLite: non-NULL on a connection whose batches of visits append their dictionary
     * references to visit_refs_due (schema 62) instead of adding them to refs: the rows
     * appended since it last settled them (qrt_store_refs_settle), which it does once
     * they pass QRT_REFS_SETTLE_ROWS. */
    apr_int64_t *refs_due;
    /* > 0: how long the next transactions wait for a lock held elsewhere. PostgreSQL:
     * the lock_timeout (ms) of pipelined ones (qrt_db_begin_pipelined) instead of the
     * connection's. SQLite: qrt_db_begin's BEGIN IMMEDIATE, and a statement outside a
     * transaction, waits that long, once, instead of QRT_SQLITE_TRIES tries 100 ms
     * apart; busy_ms is then the connection's busy timeout again. */
    int lock_wait_ms;
    int busy_ms;
} qrt_db_t;

/* SQLite: a statement that meets a lock is tried this many times, 100 ms apart, each
 * try waiting as the connection's busy handler says (as apr_dbd_sqlite3 does). */
#define QRT_SQLITE_TRIES 17

/* Calls f on every statement, with its SQL in dialect d (NULL: the portable form,
 * SQLite's): a statement written differently for
 * PostgreSQL has its own form in the statement files ("-- name: <name> [pgsql]"). */
typedef void qrt_stmt_fn(void *ctx, const char *label, const char *sql);
void qrt_store_each_statement(const qrt_dialect_t *d, qrt_stmt_fn *f, void *ctx);

/* 1 when db's connection speaks dialect id: where the two schemas differ (each
 * caller says how); a difference of behaviour asks a fact of qrt_dialect_t. */
int qrt_db_dialect_is(const qrt_db_t *db, qrt_dialect_id_t id);
/* Per-connection set-up that every program does: PostgreSQL error messages carry
 * their SQLSTATE (for qrt_db_retryable). */
void qrt_db_setup(const apr_dbd_driver_t *driver, apr_dbd_t *handle);
/* 1 when db's last error is a transaction that lost a deadlock or a serialization
 * conflict (SQLSTATE 40P01, 40001), or one that db->again says must be run again
 * from its start. */
int qrt_db_retryable(const qrt_db_t *db);
/* 1 when db's last error says the connection to the database was lost (the server
 * stopped or restarted, the network failed, it ended a session idle past its
 * idle_session_timeout or idle_in_transaction_session_timeout): worth a 503, not a 500. */
int qrt_db_lost(const qrt_db_t *db);
/* qrt_schema_version under the calling thread's deadline (qrt_dbwatch): -1, db->error
 * set, when it cannot be read. */
int qrt_db_schema_version(qrt_db_t *db, apr_pool_t *p);
/* 1 when db's last call was cut by its deadline (qrt_dbwatch): the server gave no
 * answer at all, not even its own statement_timeout's. */
#define QRT_DB_UNANSWERED "no answer within"
int qrt_db_unanswered(const qrt_db_t *db);
/* 1 when db's last error is the database's disk or memory full, or a lock held
 * elsewhere past the time allowed: the request may succeed later (503). */
int qrt_db_busy_or_full(const qrt_db_t *db);
/* 1 when db's last error is the database refusing writes while it answers reads: a
 * PostgreSQL hot standby (a balancer or a failover's address pointing at it) or
 * default_transaction_read_only (SQLSTATE 25006), SQLite's file or file system made
 * read-only (SQLITE_READONLY). It may take them later (503; scans spool). */
int qrt_db_read_only(const qrt_db_t *db);
/* 1 when db's last error says the database takes no writes for now while it may still
 * answer reads: qrt_db_read_only, or PostgreSQL's disk full (53100; a server elsewhere,
 * whose full disk is not the node's). Not SQLite's full disk: its spool shares that
 * file system unless QRTrackSpoolDir says otherwise. */
int qrt_db_refuses_writes(const qrt_db_t *db);
/* 1 when db's last error is a lock held elsewhere past the time the call may wait for
 * it: SQLite's SQLITE_BUSY (another program's transaction: an administrator's shell,
 * a VACUUM), PostgreSQL's lock_timeout (55P03: LOCK TABLE, VACUUM FULL, a CREATE INDEX
 * or ALTER TABLE, a row an open transaction holds). Nothing of the transaction was
 * recorded; it may go through later. */
int qrt_db_locked(const qrt_db_t *db);
/* 1 when db's last error says the statement's own rows were refused, which trying again
 * will not change: PostgreSQL's data exceptions (class 22), integrity constraint
 * violations (class 23) and a trigger's RAISE EXCEPTION (P0001); SQLite's failed
 * constraints (a trigger's RAISE(ABORT) among them only when its message says so),
 * datatype mismatches and values too big. Not a lock, a lost connection, a missing table
 * or any other fault of the database itself. */
int qrt_db_refuses_rows(const qrt_db_t *db);
/* Taken first by every transaction that writes visits, counters or report
 * aggregates: their writers follow one another across all the nodes that share a
 * PostgreSQL database (an advisory lock held to the end of the transaction), so
 * unique visitors and aggregates stay exact and they cannot deadlock each other.
 * Nothing on SQLite, whose writers already follow one another. */
apr_status_t qrt_store_write_lock(qrt_db_t *db, apr_pool_t *p);
/* The same lock if no other transaction holds it (*got 1), else not waited for (*got
 * 0): for work that may wait for a later moment (sealing a day). *got 1 on SQLite. */
apr_status_t qrt_store_write_trylock(qrt_db_t *db, apr_pool_t *p, int *got);
/* The same lock, and the dictionaries' generation (schema 22) read under it in the same
 * round trip: *gen. On SQLite, the generation alone (its writers hold the database's
 * write lock already). */
apr_status_t qrt_store_write_lock_gen(qrt_db_t *db, apr_pool_t *p, apr_int64_t *gen);
/* The same, in a pipelined transaction: held for the next round trip (qrt_db_hold_select;
 * APR_ENOTIMPL outside one), the generation in *rows' first column once it ran. */
apr_status_t qrt_store_write_lock_gen_hold(qrt_db_t *db, apr_pool_t *p,
                                           qrt_pipe_rows_t **rows);

/* Prepares on db every statement that db->prepared lacks (all of them on a new
 * connection), after qrt_db_setup; p must live as long as the connection. NULL
 * or error (the statements prepared before it stay). */
const char *qrt_db_prepare_all(qrt_db_t *db, apr_pool_t *p);
/* The same setup with no statement prepared yet: each is prepared when it is first
 * run, in p (for a short-lived tool that runs a few of them: preparing them all
 * costs more than its work). */
void qrt_db_prepare_lazily(qrt_db_t *db, apr_pool_t *p);
/* How many statements a connection of the named driver prepares. */
int qrt_store_statement_count(const char *driver);

/* The apr_int64_t ids as one statement argument of a list of ids: "[1,2]" for SQLite's
 * json_each, "{1,2}" for PostgreSQL's CAST(%s AS BIGINT[]). */
const char *qrt_db_id_list(qrt_db_t *db, apr_pool_t *p, const apr_array_header_t *ids);

/* Runs a statement that changes rows; *nrows (optional) gets the count.
 * args holds one pointer per placeholder (char* for %s, apr_int64_t* for %lld,
 * NULL for an SQL NULL). */
apr_status_t qrt_db_exec(qrt_db_t *db, apr_pool_t *p, const char *label,
                         int *nrows, const void **args);
/* Called on each row of qrt_db_each. */
typedef apr_status_t qrt_row_fn(void *ctx, qrt_db_t *db, apr_dbd_row_t *row);
/* Runs the one-row statement label for n rows (args: one value per letter of types,
 * row after row; a letter says what its pointers point to: 'l' apr_int64_t, 'i' int,
 * 's' a string, NULL an SQL NULL). On PostgreSQL one statement does all the rows:
 * the statement "<label>_many" (PostgreSQL only), which takes each column as an
 * array (one %s each, written by qrt_db_array). On SQLite, label's VALUES list is
 * repeated for up to QRT_DB_ROWS_MAX rows a statement (qrt_db_sql_rows): a statement
 * costs no round trip there, but its start and end cost as much as the b-tree work
 * of a row. */
apr_status_t qrt_db_exec_rows(qrt_db_t *db, apr_pool_t *p, const char *label,
                              const char *types, const void **args, int n);
#define QRT_DB_ROWS_MAX 32
/* sql, an "INSERT ... VALUES (...) [rest]" of one row, for n rows (its parenthesised
 * list of values n times, comma-separated); NULL when sql has no such list. An
 * "INSERT INTO" of several rows becomes "INSERT OR FAIL INTO": a row that breaks a
 * constraint (other than the one an upsert handles) fails the statement without
 * undoing the rows before it, so SQLite keeps no statement journal (a copy of every
 * page the statement changes, spilled to a temporary file past 64 KB: an import's
 * rows touch hundreds). Every caller ends its transaction with a rollback when a
 * statement fails, as it must on PostgreSQL. */
char *qrt_db_sql_rows(apr_pool_t *p, const char *sql, int n);
/* The same for a query: fn is called on the rows it answers (one statement a row on
 * SQLite). */
apr_status_t qrt_db_each_rows(qrt_db_t *db, apr_pool_t *p, const char *label,
                              const char *types, const void **args, int n,
                              qrt_row_fn *fn, void *ctx);
/* Column col of n rows of args (nargs values a row) as a PostgreSQL array literal:
 * {1,NULL,3} for type 'l' or 'i', {"a\"b",NULL} for 's'. */
char *qrt_db_array(apr_pool_t *p, char type, const void **args, int nargs, int col, int n);
/* Runs a query; *res gets the results. */
apr_status_t qrt_db_select(qrt_db_t *db, apr_pool_t *p, const char *label,
                           apr_dbd_results_t **res, const void **args);
/* Runs a query and gives the first column of its first row as an integer in *v (0
 * when it answers no row or NULL); every row is read. */
apr_status_t qrt_db_select_int(qrt_db_t *db, apr_pool_t *p, const char *label,
                               const void **args, apr_int64_t *v);
/* Runs a query and calls fn on every row; every row is read before fn is called,
 * and the first error fn returns is the result. On SQLite, this and
 * qrt_db_select_int read the rows from SQLite itself, not through apr_dbd (whose
 * rows are text): qrt_db_str and qrt_db_int read fn's row either way. */
apr_status_t qrt_db_each(qrt_db_t *db, apr_pool_t *p, const char *label,
                         const void **args, qrt_row_fn *fn, void *ctx);
/* The same, fn called on each row as SQLite reads it (not the rows copied first):
 * fn runs no statement on db, and keeps no string of the row past its call. */
apr_status_t qrt_db_each_stream(qrt_db_t *db, apr_pool_t *p, const char *label,
                                const void **args, qrt_row_fn *fn, void *ctx);
/* Next row, 0 when there is one, -1 at the end. */
int qrt_db_row(qrt_db_t *db, apr_pool_t *p, apr_dbd_results_t *res,
               apr_dbd_row_t **row);
/* Column col of row as text (NULL for SQL NULL) or as integer (dflt for NULL). */
const char *qrt_db_str(qrt_db_t *db, apr_dbd_row_t *row, int col);
apr_int64_t qrt_db_int(qrt_db_t *db, apr_dbd_row_t *row, int col, apr_int64_t dflt);
/* Columns [first, first + n) of row as qrt_db_int reads each (dflt 0) into out: a row
 * of many integer columns, read a few million times by a cold report, tells once whether
 * it is a native row. */
void qrt_db_ints(qrt_db_t *db, apr_dbd_row_t *row, int first, int n, apr_int64_t *out);
/* A qrt_db_each callback: appends column 0 as an integer to ctx, an array of
 * apr_int64_t. */
apr_status_t qrt_db_int_list_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row);

/* The id of a dictionary row (the visits' dictionaries, agg_bcy, agg_vals) whose key is
 * key: from the cache c (pending entries included), else added by the statement add
 * (INSERT ... ON CONFLICT DO NOTHING: SQLite's last rowid, or PostgreSQL's form with
 * RETURNING id), else found by get; both take args.
 * The id is staged in c (kept only once the transaction commits). */
apr_status_t qrt_store_dict_id(qrt_db_t *db, apr_pool_t *p, qrt_dict_cache_t *c, int dict,
                               const char *key, const char *add, const char *get,
                               const void **args, apr_int64_t *id);
/* Transactions: start, then end (commits, or rolls back after qrt_db_rollback_only). */
apr_status_t qrt_db_begin(qrt_db_t *db, apr_pool_t *p, apr_dbd_transaction_t **t);
void qrt_db_rollback_only(qrt_db_t *db, apr_dbd_transaction_t *t);
apr_status_t qrt_db_end(qrt_db_t *db, apr_pool_t *p, apr_dbd_transaction_t *t);
/* The end of a transaction whose work came to rv: rolled back unless rv is APR_SUCCESS,
 * else committed; rv, or APR_EGENERAL when the commit failed. */
apr_status_t qrt_db_end_with(qrt_db_t *db, apr_pool_t *p, apr_dbd_transaction_t *t,
                             apr_status_t rv);
/* A reader's snapshot: every statement from here to qrt_db_snapshot_end reads the
 * database as it was at the first one (SQLite: a deferred transaction, which WAL keeps
 * on one state; PostgreSQL: REPEATABLE READ, READ ONLY), so that a report that reads
 * a dozen statements does not mix a day's rows from before a commit (the writers
 * sealing it, an import) with its sealed values from after. Nothing to do inside a
 * transaction already. Ended by qrt_db_snapshot_end, or when p is cleared (before
 * the connection goes back to mod_dbd when p is the request's). On failure db->error
 * says why and nothing is open. */
apr_status_t qrt_db_snapshot_begin(qrt_db_t *db, apr_pool_t *p);
void qrt_db_snapshot_end(qrt_db_t *db);
/* A pipelined transaction (PostgreSQL with libpq's pipeline mode): BEGIN and every
 * qrt_db_exec that asks for no row count are held, then sent in one round trip with
 * the next statement that reads, or with the COMMIT of qrt_db_end_pipelined; their
 * errors come back there. Statements run in the order of the calls. APR_ENOTIMPL
 * when the connection has no pipeline (then qrt_db_begin). p lives until the end. */
apr_status_t qrt_db_begin_pipelined(qrt_db_t *db, apr_pool_t *p);
/* Commits the transaction when rv is APR_SUCCESS (the held statements and COMMIT in
 * one round trip), else rolls it back: rv, or the commit's error. */
apr_status_t qrt_db_end_pipelined(qrt_db_t *db, apr_pool_t *p, apr_status_t rv);
/* In a pipelined transaction, a select held like a statement that reads nothing: it
 * runs with the next round trip, and *rows (from p) keeps what it returned, for
 * qrt_db_held_each. APR_ENOTIMPL outside one (or for a statement that cannot be
 * held): the caller runs the select itself when it needs the rows. */
apr_status_t qrt_db_hold_select(qrt_db_t *db, apr_pool_t *p, const char *label,
                                const void **args, qrt_pipe_rows_t **rows);
/* fn on each row of a held select, as qrt_db_each calls it; APR_EINCOMPLETE when the
 * select has not run (its round trip failed, or has not come yet). */
apr_status_t qrt_db_held_each(qrt_db_t *db, const qrt_pipe_rows_t *rows, qrt_row_fn *fn,
                              void *ctx);

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
/* The installation's settings (qrt_settings, schema 6): a value by name (APR_NOTFOUND
 * when there is none), a new value for an existing name. */
apr_status_t qrt_store_setting_get(qrt_db_t *db, apr_pool_t *p, const char *name,
                                   const char **value);
apr_status_t qrt_store_setting_set(qrt_db_t *db, apr_pool_t *p, const char *name,
                                   const char *value);
/* How this installation makes visitor ids (settings visitor_key and
 * visitor_rotation; APR_EINVAL when they are malformed). */
apr_status_t qrt_store_visitor_key(qrt_db_t *db, apr_pool_t *p, qrt_visitor_key_t *k);
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
    const char *scope;        /* QRT_SCOPE_READ or QRT_SCOPE_WRITE (schema 29) */
    apr_int64_t expires_at;   /* 0: never */
} qrt_token_t;

/* A token's scope: a read token may make no request that changes something. */
#define QRT_SCOPE_READ  "read"
#define QRT_SCOPE_WRITE "write"

/* The caller behind a live token. */
typedef struct {
    apr_int64_t token_id;
    apr_int64_t account_id;
    const char *account_name;
    const char *plan;
    const char *token_name;     /* the token's label, as the history records it */
    int read_only;              /* scope read */
    apr_int64_t expires_at;     /* 0: never */
} qrt_auth_t;

/* scope: QRT_SCOPE_READ or QRT_SCOPE_WRITE; expires_at 0 for never. */
apr_status_t qrt_store_token_add(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                 const char *name, const char *prefix,
                                 const char *digest, const char *scope,
                                 apr_int64_t expires_at, apr_int64_t *id);
apr_status_t qrt_store_token_list(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                  apr_array_header_t **out);
/* APR_NOTFOUND when there is no live token with that id. */
apr_status_t qrt_store_token_revoke(qrt_db_t *db, apr_pool_t *p, apr_int64_t id);
/* APR_NOTFOUND for an unknown, revoked or expired digest. */
apr_status_t qrt_store_token_auth(qrt_db_t *db, apr_pool_t *p, const char *digest,
                                  qrt_auth_t *out);

/* Trackers */
#define QRT_TAGS_MAX 20

/* A tracker's routing fields (tracker_routing, schema 24; qrt_route.h compiles them). */
typedef struct {
    const char *rules;              /* canonical JSON text of the rules, NULL: none */
    int has_from, has_until;
    apr_int64_t valid_from, valid_until;    /* epoch seconds, inclusive */
    apr_int64_t max_scans;          /* 0: no cap */
    const char *expired_url;        /* NULL: 410 when expired */
    const char *password_hash;      /* qrt_password_hash's text, NULL: no password */
} qrt_route_src_t;

typedef struct {
    apr_int64_t id;
    apr_int64_t account_id;
    const char *code;
    const char *name;
    const char *type;
    const char *redirect_url;
    apr_int64_t created_at;
    apr_int64_t updated_at;
    apr_int64_t total_scans;
    apr_int64_t total_clicks;
    apr_int64_t total_bots;
    apr_int64_t unique_visitors;
    apr_int64_t last_visit;         /* 0 when none */
    apr_array_header_t *tags;       /* const char *, sorted */
    qrt_route_src_t route;          /* read: password_hash is NULL, see password_protected */
    int password_protected;
    int route_set;                  /* write: save route (create and PATCH) */
    int password_keep;              /* write: keep the stored password_hash */
    unsigned sent;                  /* write (qrt_store_tracker_patch): QRT_TRACKER_SENT_*,
                                     * the fields a PATCH sent */
    apr_int64_t redirected;         /* scans sent on while max_scans is set */
    /* write: the tracker (a const qrt_tracker_t *) as the API shows it, for the data of
     * webhook events (qrt_store_webhook.h); NULL: the store's own rendering */
    json_t *(*event_json)(void *ctx, const void *tracker);
    void *event_ctx;
    const char *changed_by;         /* write: the token label the history records (NULL:
                                     * qrtrack-admin or another program) */
} qrt_tracker_t;

/* Inserts t (code, name, type, redirect_url, tags, account_id set by the caller)
 * with its tags and its history row "created" in one transaction; sets t->id and the
 * times. APR_EEXIST when the code is taken (the caller picks another). */
apr_status_t qrt_store_tracker_add(qrt_db_t *db, apr_pool_t *p, qrt_tracker_t *t);
/* qrtrack-admin trackers import: n trackers of one account (code, name, type,
 * redirect_url, tags, account_id and created_at set by the caller) in one transaction of
 * their own; sets each one's id. res[i] gets APR_SUCCESS, or APR_EEXIST when t[i]'s code
 * is taken (by any tracker, deleted ones too, or by an earlier one of t), and t[i] is
 * not made. With dry_run, only res is set and nothing is written. Any other error: no
 * tracker of t is made. */
apr_status_t qrt_store_tracker_import(qrt_db_t *db, apr_pool_t *p, qrt_tracker_t *t, int n,
                                      int dry_run, apr_status_t *res);
/* A live (not deleted) tracker by id, with tags and counters; APR_NOTFOUND. */
apr_status_t qrt_store_tracker_get(qrt_db_t *db, apr_pool_t *p, apr_int64_t id,
                                   qrt_tracker_t *out);
/* The same without its tags (their list left empty): one statement fewer. */
apr_status_t qrt_store_tracker_head(qrt_db_t *db, apr_pool_t *p, apr_int64_t id,
                                    qrt_tracker_t *out);
/* One page of an account's live trackers, by id; *total gets the count. */
apr_status_t qrt_store_tracker_list(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                    apr_int64_t offset, apr_int64_t limit,
                                    apr_array_header_t **out, apr_int64_t *total);
/* Saves name, redirect_url, tags and routing of t (by t->id) and sets updated_at;
 * a history row "updated" with the fields that changed, in the same transaction. */
apr_status_t qrt_store_tracker_update(qrt_db_t *db, apr_pool_t *p, qrt_tracker_t *t);

/* The fields of a PATCH (qrt_tracker_t's sent). */
#define QRT_TRACKER_SENT_NAME         0x001
#define QRT_TRACKER_SENT_REDIRECT_URL 0x002
#define QRT_TRACKER_SENT_TAGS         0x004
#define QRT_TRACKER_SENT_RULES        0x008
#define QRT_TRACKER_SENT_VALID_FROM   0x010
#define QRT_TRACKER_SENT_VALID_UNTIL  0x020
#define QRT_TRACKER_SENT_MAX_SCANS    0x040
#define QRT_TRACKER_SENT_EXPIRED_URL  0x080
#define QRT_TRACKER_SENT_PASSWORD     0x100
#define QRT_TRACKER_SENT_ROUTE        0x1f8     /* rules .. password: tracker_routing */

/* A PATCH: the fields of t that t->sent names (their values in t, password_hash already
 * hashed) laid onto the tracker t->id as this transaction reads it, under its lock
 * (PostgreSQL: the write lock, taken after the tracker's row of tracker_routing when a
 * routing field was sent, as the scan writer takes them; SQLite: the write
 * transaction), and saved as qrt_store_tracker_update does: the fields not sent keep
 * what the row holds, whatever another PATCH wrote meanwhile (concurrent PATCHes end as
 * if run one after another). t becomes the tracker as saved (for the answer).
 * APR_NOTFOUND: no live tracker of t->account_id with that id; APR_EINVAL: the result's
 * valid_until would be before its valid_from (nothing written). */
apr_status_t qrt_store_tracker_patch(qrt_db_t *db, apr_pool_t *p, qrt_tracker_t *t);
/* Marks a tracker deleted: its code stops redirecting; visits and history are kept.
 * The history row "deleted" names no token. */
apr_status_t qrt_store_tracker_delete(qrt_db_t *db, apr_pool_t *p, apr_int64_t id);
/* The same for t as the caller read it (t->id; its event_json renders the webhook
 * events' data). */
apr_status_t qrt_store_tracker_delete_shown(qrt_db_t *db, apr_pool_t *p,
                                            const qrt_tracker_t *t);
/* The same, recording token_label in the history row. */
apr_status_t qrt_store_tracker_delete_by(qrt_db_t *db, apr_pool_t *p, apr_int64_t id,
                                         const char *token_label);

/* A tracker's history (schema 29, qrt_store_history.c; kinds QRT_HISTORY_*). */
typedef struct {
    apr_int64_t id;
    apr_int64_t at;                 /* epoch seconds */
    const char *token_label;        /* NULL: not made through the API */
    const char *kind;
    const char *changes;            /* JSON object text {"field": [old, new]} */
} qrt_history_t;

#define QRT_HISTORY_CREATED "created"
#define QRT_HISTORY_UPDATED "updated"
#define QRT_HISTORY_DELETED "deleted"

/* Adds one history row of tracker_id (of account_id) at the present time. Call it
 * inside the transaction that makes the change, so that both commit or neither:
 * changes_json is qrt_history_changes()'s text ("{}" for a delete). */
apr_status_t qrt_store_history_add(qrt_db_t *db, apr_pool_t *p, apr_int64_t tracker_id,
                                   apr_int64_t account_id, const char *token_label,
                                   const char *kind, const char *changes_json);
/* One page of a tracker's history, newest first (array of qrt_history_t); *total
 * gets the count. */
apr_status_t qrt_store_history_list(qrt_db_t *db, apr_pool_t *p, apr_int64_t tracker_id,
                                    apr_int64_t offset, apr_int64_t limit,
                                    apr_array_header_t **out, apr_int64_t *total);
/* The account of a tracker, deleted or not; APR_NOTFOUND when there is none. */
apr_status_t qrt_store_history_account(qrt_db_t *db, apr_pool_t *p, apr_int64_t tracker_id,
                                       apr_int64_t *account_id);
/* The version of an account's trackers as reports see them (schema 18): triggers
 * raise it in the transaction of every change that can change a report's scope (a
 * tracker made, saved or deleted, its tags, the aggregates' snapshot of them), by the
 * store or by hand. Reports reuse the scope they read while it stays
 * (qrt_report_cache.h). 0 before any change. */
apr_status_t qrt_store_trackers_version(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                        apr_int64_t *version);
/* The hot path: id, destination and routing of a live tracker by its public code. */
apr_status_t qrt_store_tracker_by_code(qrt_db_t *db, apr_pool_t *p, const char *code,
                                       apr_int64_t *id, const char **redirect_url,
                                       qrt_route_src_t *route);
/* In the scan writer's transaction: takes one of max_scans for a visit of tracker id
 * (count: 1 for a scan that counts, 0 for one that only asks). *ok 1 when the visit is
 * sent on, 0 when the cap was reached. */
apr_status_t qrt_store_tracker_cap_take(qrt_db_t *db, apr_pool_t *p, apr_int64_t id,
                                        int count, int *ok);
/* Outside the writer, counting nothing: *open 1 when a scan of tracker id would be sent
 * on now, 0 when max_scans were sent on already. */
apr_status_t qrt_store_tracker_cap_open(qrt_db_t *db, apr_pool_t *p, apr_int64_t id,
                                        int *open);
/* Ids of the account's live trackers among ids (n of them, none twice): *owned gets how
 * many belong to the account, in one statement; used to answer 403 for foreign ids in
 * lists. */
apr_status_t qrt_store_tracker_owned(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                     const apr_int64_t *ids, int n, int *owned);
/* All live tracker ids of an account (array of apr_int64_t). */
apr_status_t qrt_store_tracker_ids(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                   apr_array_header_t **out);

/* Visits */
#define QRT_VISIT_REFERER_MAX 2048  /* bytes of a referer kept (cut on a character) */

typedef struct {
    apr_int64_t id;                 /* set when read back */
    apr_int64_t tracker_id;
    apr_int64_t visit_start;        /* epoch seconds, UTC */
    const char *source;             /* "scan" or "click" */
    const char *ip;                 /* as stored (anonymised by default) */
    const char *country;            /* ISO code or NULL */
    const char *city;
    const char *browser;
    const char *browser_version;
    const char *os;
    const char *device;             /* mobile, tablet, desktop, bot, other */
    const char *referer;
    const char *user_agent;
    int bot;
    apr_int64_t visitor;            /* identifies (ip, user agent): qrt_visitor_id() */
    const char *destination;        /* where the visitor was sent, NULL: nowhere */
    const char *over_destination;   /* where instead when max_scans were reached (the two
                                     * swapped once the writer found it over) */
    int capped;                     /* QRT_VISIT_CAP_*: its tracker has max_scans */
    int cap_outcome;                /* set by the scan writer: for a capped visit, and
                                     * QRT_VISIT_GONE for one of a deleted tracker */
} qrt_visit_t;

/* A capped visit (qrt_visit_t.capped): one that counts against max_scans, or one that
 * only asks whether the cap is reached (a bot, a click). */
enum { QRT_VISIT_CAP_NONE, QRT_VISIT_CAP_COUNT, QRT_VISIT_CAP_ASK };
/* What the scan writer found (qrt_visit_t.cap_outcome). GONE: the visit's tracker was
 * deleted while its scan waited for the commit; it is not recorded (the scan answers
 * 404, as a scan after the deletion does). */
enum { QRT_VISIT_CAP_SENT, QRT_VISIT_CAP_OVER, QRT_VISIT_CAP_UNKNOWN, QRT_VISIT_GONE };

/* Schema 7: the visit rows joined to the dictionaries the report aggregates read
 * (browser; country and city), for statements that need those strings. The view
 * "visits" joins all four; SQLite reads every joined row even when an aggregate
 * uses none of its columns, so statements that need no string read visit_rows. */
#define QRT_VISITS_BCC "visit_rows v LEFT JOIN visit_uas vu ON vu.id = v.ua_id " \
    "LEFT JOIN visit_places vp ON vp.id = v.place_id"
/* The same with one of the two, for statements that need only its strings: SQLite
 * 3.40 looks up a LEFT JOIN's row even when no column of it is used (a seek a visit:
 * a third of a browser report over a few listed trackers). */
#define QRT_VISITS_B "visit_rows v LEFT JOIN visit_uas vu ON vu.id = v.ua_id"
#define QRT_VISITS_CC "visit_rows v LEFT JOIN visit_places vp ON vp.id = v.place_id"
#define QRT_VISIT_SOURCE "CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END"

/* SQLite's visit_floor (schema 14): the earliest visit_start per bucket of ids,
 * a bucket being id >> this (polls: qrt_store_visits_read.h). */
#define QRT_VISIT_FLOOR_SHIFT 12

/* In the same transaction: decides every capped visit of a batch (qrt_visit_t.capped)
 * with qrt_store_tracker_cap_take, setting its cap_outcome and, when over the cap, its
 * destination to over_destination, taking the trackers' row locks in tracker id order
 * (no deadlock between two nodes' writers). Run again on a batch whose earlier attempt was
 * rolled back, it undoes that attempt's choice first: a visit found under the cap now
 * records the destination it is sent to. */
apr_status_t qrt_store_visits_cap(qrt_db_t *db, apr_pool_t *p, qrt_visit_t *visits, int n);
/* Records n visits inside the caller's transaction: the rows, each tracker's
 * counters (totalScans, totalClicks, bots, uniqueVisitors, lastVisit, its newest
 * id), visit_floor and the report aggregates
 * (qrt_store_agg_write_visits, qrt_store_agg_write.h). The writer thread and the
 * importer both come through here. */
apr_status_t qrt_store_visits_record(qrt_db_t *db, apr_pool_t *p,
                                     const qrt_visit_t *v, int n);
/* The same; ids (n of them, or NULL) gets the visits' new ids. gone (apr_int64_t, or
 * NULL: no check): the visits' trackers are checked under the write lock, so that no
 * visit is recorded after its tracker's deletion committed (nor its webhook event made
 * after tracker.deleted). When some are deleted (or gone), their ids are pushed onto
 * gone and the call fails with db->again set (APR_EAGAIN): the caller rolls the
 * transaction back and runs it again without their visits. */
apr_status_t qrt_store_visits_record_ids(qrt_db_t *db, apr_pool_t *p,
                                         const qrt_visit_t *v, int n, apr_int64_t *ids,
                                         apr_array_header_t *gone);
/* SQLite: adds the references waiting in visit_refs_due (schema 62) to the
 * dictionaries' refs and empties it, inside the caller's transaction; resets
 * db->refs_due. Nothing to do on PostgreSQL. */
apr_status_t qrt_store_refs_settle(qrt_db_t *db, apr_pool_t *p);
#define QRT_REFS_SETTLE_ROWS 32768

#endif
