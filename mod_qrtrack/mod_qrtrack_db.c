/* mod_qrtrack_db: QRTrackStatementTimeout on mod_dbd's connections, and what the
 * error log says when mod_dbd has no connection to give.
 *
 * The limit is set once a connection (mod_dbd's post_connect, qrt_dbd_limit) and
 * looked at, without a round trip, each time a request takes the connection: a
 * PostgreSQL connection that libpq re-opened in place (apr_dbd's check of a pooled
 * connection) is a new session without the settings, and gets them again. The scan
 * writers' own connections are not mod_dbd's and keep their own bounds. */
#include <apr_strings.h>

#include "mod_qrtrack.h"
#include "qrt_dblimit.h"

APLOG_USE_MODULE(qrtrack);

#define LIMIT_KEY "qrtrack-statement-limit"

/* What was set on one connection, kept in the connection's pool. */
typedef struct {
    int set;                    /* the limit is on the connection */
    int session;                /* qrt_db_session when it was set */
    qrt_db_limit_t *sqlite;     /* SQLite: its state */
} dbd_limit_t;

int qrt_statement_timeout_ms(void)
{
    return qrt_global.statement_timeout * 1000;
}

void qrt_dbd_limit(ap_dbd_t *dbd, server_rec *s)
{
    static qrt_log_throttle_t throttle;
    dbd_limit_t *l = NULL;
    int session, ms = qrt_statement_timeout_ms();
    apr_uint32_t more = 0;

    if (!dbd || ms <= 0) {
        return;
    }
    apr_pool_userdata_get((void **)&l, LIMIT_KEY, dbd->pool);
    if (!l) {
        l = apr_pcalloc(dbd->pool, sizeof(*l));
        apr_pool_userdata_setn(l, LIMIT_KEY, NULL, dbd->pool);
    }
    session = qrt_db_session(dbd->driver, dbd->handle);
    if (l->set && (!session || session == l->session)) {
        qrt_db_limit_idle(l->sqlite);
        return;
    }
    if (qrt_db_limit(dbd->driver, dbd->handle, dbd->pool, ms, &l->sqlite) != APR_SUCCESS) {
        if (qrt_log_due(&throttle, &more)) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "QRT00093: cannot put a "
                         "database connection under QRTrackStatementTimeout (%d s): %s "
                         "(and %u more since this line was last logged)",
                         qrt_global.statement_timeout,
                         apr_dbd_error(dbd->driver, dbd->handle, 1), more);
        }
        return;
    }
    l->set = 1;
    l->session = session;
}

/* Opens a connection as mod_dbd would, only to learn why it cannot: mod_dbd keeps
 * the driver's message to its own log line. NULL when this one opens. Not on
 * SQLite, whose driver gives no message (and would create a missing file). */
static const char *dbd_refusal_message(apr_pool_t *p)
{
    const apr_dbd_driver_t *driver;
    apr_dbd_t *handle = NULL;
    const char *err = NULL;

    if (!qrt_global.dbd_driver || !qrt_global.dbd_params
        || apr_dbd_get_driver(p, qrt_global.dbd_driver, &driver) != APR_SUCCESS) {
        return "no database driver";
    }
    if (!qrt_dialect_remote(driver)) {
        return "see mod_dbd's AH00629 line";
    }
    if (apr_dbd_open_ex(driver, p, qrt_global.dbd_params, &handle, &err) == APR_SUCCESS
        && handle) {
        apr_dbd_close(driver, handle);
        return NULL;
    }
    return err && *err ? err : "the driver gives no reason";
}

void qrt_dbd_refused(request_rec *r)
{
    static qrt_log_throttle_t throttle;
    apr_uint32_t more = 0;
    const char *err;
    char *msg, *end;

    if (!qrt_log_due(&throttle, &more)) {
        return;
    }
    err = dbd_refusal_message(r->pool);
    if (!err) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, "QRT00022: mod_dbd gave no database "
                      "connection, though one opens now: see mod_dbd's own lines "
                      "(AH00629, AH00633) before this one (and %u more requests without "
                      "a connection since this line was last logged)", more);
        return;
    }
    /* libpq's message: lines, ending with a newline */
    msg = apr_pstrdup(r->pool, err);
    for (end = msg; *end; end++) {
        if (*end == '\n' || *end == '\r') {
            *end = ' ';
        }
    }
    while (end > msg && end[-1] == ' ') {
        *--end = '\0';
    }
    ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, "QRT00091: no database connection: "
                  "%s (%s; and %u more requests without a connection since this line "
                  "was last logged)",
                  qrt_db_refusal_advice(qrt_db_refusal(qrt_global.dialect, msg)),
                  msg, more);
}
