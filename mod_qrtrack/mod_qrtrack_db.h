/* mod_qrtrack_db.c: the database's set-up at start-up and mod_dbd's connections. */
#ifndef MOD_QRTRACK_DB_H
#define MOD_QRTRACK_DB_H

#include <apr_dbd.h>
#include "httpd.h"
#include "mod_dbd.h"
#include "qrt_dialect.h"
#include "qrt_store.h"
#include "qrt_token.h"

/* post_config (parent): mod_dbd's optional functions found, or an error status. */
int qrt_dbd_find_fns(server_rec *s);
/* post_config (parent): DBDriver/DBDParams checked, the dialect's self-check logged,
 * the schema migrated and the visitor key read; OK or an error status. */
int qrt_dbd_schema_setup(apr_pool_t *ptemp, server_rec *s);
/* What can be checked of DBDriver and DBDParams without connecting (in the check_config
 * hook, so that apachectl configtest fails on it): set in the main server, the same in
 * every <VirtualHost>, a driver the module runs on, SQLite's directory writable by the
 * User. OK, or the status with the reason logged. */
int qrt_dbd_config_check(apr_pool_t *ptemp, server_rec *s);
/* Whether the server's User may write path (a directory to create files in, or a file):
 * 1, 0, or -1 when it is not there. As root, the mode bits the children will meet. */
int qrt_user_can_write(const char *path, apr_pool_t *p);
/* Whether the server went on without its database as it started (QRT00133); then NULL
 * once the database, answering again, has this build's schema (checked once a
 * process), else why not, from p: until it has, the node stays on its snapshot and
 * spool (the schema may have changed meanwhile: a restored backup, another node's
 * upgrade). */
int qrt_dbd_schema_unchecked(void);
/* child_init, before mod_dbd's: a child started while the database could not be reached
 * (left: the node had left it before a graceful restart) opens no connection of
 * mod_dbd's as it starts (DBDMin 0 for it). */
void qrt_dbd_child_min(server_rec *s, int left);
const char *qrt_dbd_schema_recheck(apr_pool_t *p, const apr_dbd_driver_t *driver,
                                   apr_dbd_t *handle);
/* mod_dbd's post_connect hook: tune, set up (statements prepared when needed), limit. */
apr_status_t qrt_dbd_post_connect(apr_pool_t *p, dbd_cfg_t *cfg, ap_dbd_t *dbd);

/* mod_dbd's functions, found at start-up (mod_qrtrack refuses to start without
 * mod_dbd, so they are set wherever a request runs). */
ap_dbd_t *qrt_dbd_acquire(request_rec *r);
ap_dbd_t *qrt_dbd_open(apr_pool_t *p, server_rec *s);
void qrt_dbd_close(server_rec *s, ap_dbd_t *dbd);

/* DBDriver's dialect, NULL before post_config checked it. */
const qrt_dialect_t *qrt_dbd_dialect(void);
/* How visitor ids are made, read from the database in post_config. */
const qrt_visitor_key_t *qrt_dbd_visitor_key(void);
/* This node's directory of files (the spool, the snapshot, the note of the last check):
 * QRTrackSpoolDir, or by default the SQLite database's directory, else QRT_STATE_DIR;
 * NULL when off. Once the driver is known (qrt_dbd_dialect). */
const char *qrt_dbd_node_dir(apr_pool_t *p);
/* QRTrackStatementTimeout in milliseconds (0 = off). */
int qrt_statement_timeout_ms(void);
/* The deadline of one database call of a request or of the module's background threads
 * (qrt_dbwatch.h): well past QRTrackStatementTimeout, 0 (none) when that is 0. */
int qrt_db_call_limit_ms(void);
/* Puts dbd's statements under QRTrackStatementTimeout: set once a connection, and
 * again on a PostgreSQL connection that libpq re-opened in place. */
void qrt_dbd_limit(ap_dbd_t *dbd, server_rec *s);
/* Logs why mod_dbd gave r no connection (the driver's message and what to do about
 * it), at most every QRT_LOG_EVERY a child. */
void qrt_dbd_refused(request_rec *r);
/* Per-connection SQLite settings (busy timeout, synchronous); nothing for other
 * drivers. */
void qrt_db_tune(const apr_dbd_driver_t *driver, apr_dbd_t *handle, apr_pool_t *p);
/* Opens a connection of the module's own to the configured database, outside mod_dbd's
 * pool, living in p (its DBDParams as qrt_dbd_params_now gives them), tuned as
 * qrt_db_tune: APR_SUCCESS with *driver and *handle, or APR_EGENERAL with *err. */
apr_status_t qrt_db_connect_own(apr_pool_t *p, const apr_dbd_driver_t **driver,
                                apr_dbd_t **handle, const char **err);
/* The same, the server waited for at most seconds (0: PGCONNECT_TIMEOUT), unless
 * DBDParams say how long. */
apr_status_t qrt_db_connect_within(apr_pool_t *p, const apr_dbd_driver_t **driver,
                                   apr_dbd_t **handle, int seconds, const char **err);
/* How long the module's threads that must not wait for a silent server (a scan's lookup,
 * the webhook worker, the keeper, the probe) wait for a new connection: libpq's least
 * connect_timeout. A child's end waits for its threads, and with it a graceful restart's
 * new children when ServerLimit leaves no room beside the old ones: a lookup's connection
 * attempt that met a frozen server held both for PGCONNECT_TIMEOUT. */
#define QRT_DB_CONNECT_QUICK_S 2
/* qrt_db_connect_within for a background thread's own connection (the keeper's, the
 * webhook worker's), *silent_runs being its attempts in a row that the server did not
 * take in time (kept by the caller, from 0): QRT_DB_CONNECT_QUICK_S, and after
 * QRT_DB_SILENT_QUICK such attempts PGCONNECT_TIMEOUT, so that a server slow to take
 * connections (each backend forked late on a saturated host) is reached, where 2 s never
 * would. A silent server holds the thread, and the child's end, that long only then. */
#define QRT_DB_SILENT_QUICK 2
apr_status_t qrt_db_connect_patient(apr_pool_t *p, const apr_dbd_driver_t **driver,
                                    apr_dbd_t **handle, int *silent_runs,
                                    const char **err);
/* A connection of the module's own, outside mod_dbd's pool, living in p, the server
 * waited for at most connect_s (0: PGCONNECT_TIMEOUT): tuned (as qrt_db_tune), each
 * statement bounded by limit_ms (qrt_db_limit; *limit gets SQLite's state for
 * qrt_db_limit_idle, when limit is not NULL), statements prepared when first used. NULL
 * with *err (in p) when it cannot be opened now. */
struct qrt_db_limit;
qrt_db_t *qrt_db_open_own(apr_pool_t *p, int connect_s, int limit_ms,
                          struct qrt_db_limit **limit, const char **err);

/* A host name in DBDParams (PostgreSQL), looked up within a bound (qrt_resolve.h): as the
 * parent reads the configuration (before mod_dbd reads DBDParams: when no answer comes,
 * the address known before is written into it for this generation), then in each child
 * (its lookups), and the parameters the module's own connections open with: DBDParams
 * with hostaddr, or NULL and *err when no address can be had in time. */
void qrt_dbd_resolve_pre_config(apr_pool_t *pconf);
void qrt_dbd_resolve_child_init(void);
const char *qrt_dbd_params_now(apr_pool_t *p, const char **err);
/* DBDParams as written, for the one the parent gave mod_dbd (or params itself). */
const char *qrt_dbd_params_unpinned(const char *params);

#endif
