/* qrt_dblimit: how long one statement may run, and why a connection was refused.
 *
 * PostgreSQL: the session's statement_timeout and lock_timeout. SQLite: handlers on
 * the native handle; a statement is timed from its start (SQLite's statement trace),
 * its lock waits (busy handler) and its work (progress handler) both count, and a
 * statement past its time ends with "interrupted" or "database is locked". */
#ifndef QRT_DBLIMIT_H
#define QRT_DBLIMIT_H

#include <apr_pools.h>
#include <apr_dbd.h>

#include "qrt_store.h"

/* SQLite: the state of a connection's bound. */
typedef struct qrt_db_limit qrt_db_limit_t;

/* Puts every later statement of the connection under ms milliseconds (0: leaves the
 * database's own settings). PostgreSQL: one round trip; SQLite: handlers whose state
 * lives in p, which must live as long as the connection, given in *out (optional;
 * NULL for PostgreSQL). Run it again on a PostgreSQL connection that was re-opened
 * in place (qrt_db_session changed). */
apr_status_t qrt_db_limit(const apr_dbd_driver_t *driver, apr_dbd_t *handle,
                          apr_pool_t *p, int ms, qrt_db_limit_t **out);
/* SQLite: the connection is taken by a new user (a request): the time of the last
 * statement it ran no longer counts against a wait before its next one (a prepare).
 * Nothing for NULL. */
void qrt_db_limit_idle(qrt_db_limit_t *l);
/* The SQL that sets the limit on PostgreSQL ("RESET ..." for 0). */
const char *qrt_db_limit_sql(apr_pool_t *p, int ms);
/* Which server session a connection is: PostgreSQL's backend pid (it changes when
 * libpq re-opens a lost connection in place, which loses session settings); 1 for
 * SQLite; 0 when unknown. */
int qrt_db_session(const apr_dbd_driver_t *driver, apr_dbd_t *handle);

/* 1 when db's last error is a statement that ran out of its time: PostgreSQL
 * 57014 (statement_timeout, or cancelled) and 55P03 (lock_timeout); SQLite
 * "interrupted" (the progress handler) and "database is locked" (past the wait). */
int qrt_db_timed_out(const qrt_db_t *db);

/* Why the database refused a new connection, from the driver's message. */
typedef enum {
    QRT_DB_REFUSED_OTHER = 0,
    QRT_DB_REFUSED_SLOTS,       /* PostgreSQL: max_connections (less the reserved
                                 * ones) all taken */
    QRT_DB_REFUSED_ROLE_LIMIT,  /* the role's or the database's CONNECTION LIMIT */
    QRT_DB_REFUSED_UNREACHABLE, /* no server there, or it is starting or stopping */
    QRT_DB_REFUSED_AUTH,        /* password, pg_hba.conf, no such role or database */
    QRT_DB_REFUSED_FILE         /* SQLite: the file or its directory */
} qrt_db_refusal_t;
qrt_db_refusal_t qrt_db_refusal(const qrt_dialect_t *dialect, const char *err);
/* 1 when err says that a server took no new connection within its connect_timeout
 * (libpq's "timeout expired"): silent, or merely slow to take it (a host whose CPU is
 * saturated): not that it is down, as a refusal does. */
int qrt_db_connect_silent(const char *err);
/* What an administrator should do about it: one sentence, no secret (err is left
 * out: the caller logs it beside). */
const char *qrt_db_refusal_advice(qrt_db_refusal_t why);

#endif
