/* mod_qrtrack_health: GET <api>/health, for load balancers and monitors.
 *
 * No token and not counted (the API handler sends the path here first). 200
 * {"status":"ok",...} when a database connection answers with the schema this
 * module needs; 503 {"status":"unavailable",...} with Retry-After when not, so
 * a balancer takes the node out until its database is back. */
#include <apr_strings.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_config.h"
#include "mod_qrtrack_db.h"
#include "mod_qrtrack_health.h"
#include "mod_qrtrack_http.h"
#include "mod_qrtrack_lookup.h"
#include "mod_qrtrack_scan.h"
#include "mod_qrtrack_spool.h"
#include "mod_qrtrack_util.h"
#include "qrt_dbwatch.h"
#include "qrt_json.h"
#include "qrt_schema.h"
#include "qrt_version.h"

/* How recent the keeper's last answer (it asks each second) must be for a check whose
 * lookup connection the server did not take in time to ask on mod_dbd's. */
#define HEALTH_ANSWERED apr_time_from_sec(2)

APLOG_USE_MODULE(qrtrack);

static apr_status_t health_version(qrt_db_t *db, apr_pool_t *p, void *ctx)
{
    int *version = ctx;

    *version = qrt_db_schema_version(db, p);
    return *version < 0 ? APR_EGENERAL : APR_SUCCESS;
}

qrt_err_t *qrt_health_show(qrt_req_t *q)
{
    request_rec *r = q->r;
    ap_dbd_t *dbd;
    qrt_db_t own;
    const char *problem = NULL;
    int version = -1, status = HTTP_OK, was;
    apr_status_t rv;
    json_t *j;

    if (r->method_number != M_GET) {
        qrt_err_t *e = qrt_error(q, HTTP_METHOD_NOT_ALLOWED, apr_psprintf(r->pool,
                                 "The %s method is not supported for this route. "
                                 "Supported methods: GET, HEAD.", r->method));
        e->allow = "GET, HEAD";
        return e;
    }
    /* The child's lookup connection: a balancer's health check must not wait for one of
     * mod_dbd's, which long API requests may all hold. Its users hold it for a lookup
     * each, QRTrackScanWait at most, as long as the check itself may take: a server
     * that does not answer (its processes frozen) is said within that, and for a few
     * seconds after a call got no answer, at once (qrt_lookup_run_wait). mod_dbd's pool
     * only when that connection cannot be opened, to say why. */
    was = qrt_dbwatch_limit_ms();
    qrt_dbwatch_limit(qrt_scan_wait_seconds() * 1000);
    rv = qrt_db_down() ? APR_EAGAIN
         : qrt_lookup_run_wait(r->pool, health_version, &version, &own,
                               apr_time_from_sec(qrt_scan_wait_seconds()));
    if (rv != APR_SUCCESS && rv != APR_TIMEUP && rv != APR_EAGAIN && qrt_db_lost(&own)
        && !qrt_db_unanswered(&own)) {
        /* A connection the server ended (it restarted since): once more, on a new one;
         * a balancer would take the node out for it. */
        rv = qrt_lookup_run_wait(r->pool, health_version, &version, &own,
                                 apr_time_from_sec(qrt_scan_wait_seconds()));
    }
    if (rv == APR_TIMEUP && qrt_lookup_paused_connecting()
        && qrt_db_answered_within(HEALTH_ANSWERED)) {
        /* The server did not take the lookup connection in time, yet answered the
         * node's keeper a moment ago on a connection it has: slow to take new ones (a
         * host so busy that it forks each backend late), not silent. One of mod_dbd's
         * connections, open already or opened within PGCONNECT_TIMEOUT, asks it; a
         * balancer would take the node out for a 503. A silent server answered no
         * keeper within HEALTH_ANSWERED: 503 at once, as before. */
        rv = APR_EAGAIN;
    }
    if (rv == APR_TIMEUP) {
        problem = "the database does not answer";
    }
    else if (rv == APR_EAGAIN) {
        dbd = qrt_db_down() ? NULL : qrt_dbd_acquire(r);
        if (!dbd) {
            problem = "no database connection";
            if (!qrt_db_down()) {
                qrt_dbd_refused(r);
                qrt_db_mark_down(r->server, problem);
            }
        }
        else {
            memset(&own, 0, sizeof(own));
            own.driver = dbd->driver;
            own.handle = dbd->handle;
            own.pool = r->pool;
            version = qrt_db_schema_version(&own, r->pool);
            if (version < 0 && qrt_db_unanswered(&own)) {
                qrt_lookup_unanswered();
            }
        }
    }
    qrt_dbwatch_limit(was);
    if (!problem && version < 0) {
        problem = "the database does not answer";
    }
    else if (!problem && version < qrt_schema_latest()) {
        problem = "the database's schema is older than this module's";
    }
    j = json_object();
    json_object_set_new(j, "status", json_string(problem ? "unavailable" : "ok"));
    json_object_set_new(j, "version", json_string(QRTRACK_VERSION));
    json_object_set_new(j, "database", json_string(problem ? "unavailable" : "ok"));
    json_object_set_new(j, "driver", json_string(qrt_dbd_dialect()
                                                 ? qrt_dbd_dialect()->driver
                                                 : qrt_config()->dbd_driver));
    if (version >= 0) {
        json_object_set_new(j, "schema", json_integer(version));
    }
    if (qrt_spool_enabled()) {
        qrt_spool_status_t sp;

        qrt_spool_status(&sp);
        /* Scans keep their redirects while the database is away (from the snapshot,
         * their visits spooled) or refuses writes, and while spooled visits wait (new
         * ones go behind them): a balancer that sends scans here may keep doing so. */
        json_object_set_new(j, "scans", json_string(sp.reachable && !sp.spooled ? "ok"
                                                    : "spooling"));
        json_object_set_new(j, "spooled", json_integer((json_int_t)sp.spooled));
    }
    if (problem) {
        apr_uint32_t more = 0;

        if (qrt_log_due(qrt_ration(QRT_R_HEALTH), &more)) {
            ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, "QRT00069: health check: %s "
                          "(and %u more since this line was last logged)", problem, more);
        }
        json_object_set_new(j, "message", json_string(problem));
        apr_table_setn(r->err_headers_out, "Retry-After", "5");
        status = HTTP_SERVICE_UNAVAILABLE;
    }
    return qrt_respond_json(q, status, j);
}
