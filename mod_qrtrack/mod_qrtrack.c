/* mod_qrtrack: the module record and its hooks.
 *
 * At start-up the parent brings the database schema up to date (before any child
 * connects), registers every prepared statement with mod_dbd, sets up the
 * shared-memory rate table and loads the user-agent regexes. */
#include <errno.h>
#include <unistd.h>
#include <sys/stat.h>
#include <apr_dbd.h>
#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "http_main.h"
#include "http_request.h"
#include "ap_mpm.h"
#include "mpm_common.h"
#include "http_connection.h"
#include "scoreboard.h"
#include "unixd.h"
#include "util_mutex.h"
#include "mod_dbd.h"
#include <apr_strings.h>
#include <apr_atomic.h>
#include <apr_thread_mutex.h>
#include <apr_allocator.h>
#include <apr_optional_hooks.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_api.h"
#include "mod_qrtrack_config.h"
#include "mod_qrtrack_dashboard.h"
#include "mod_qrtrack_db.h"
#include "mod_qrtrack_gate.h"
#include "mod_qrtrack_keepalive.h"
#include "mod_qrtrack_probe.h"
#include "mod_qrtrack_rate.h"
#include "mod_qrtrack_redact.h"
#include "mod_qrtrack_errpage.h"
#include "qrt_children.h"
#include "qrt_clock.h"
#include "qrt_dbwatch.h"
#include "mod_qrtrack_report.h"
#include "mod_qrtrack_lookup.h"
#include "mod_qrtrack_scan.h"
#include "mod_qrtrack_spool.h"
#include "mod_qrtrack_status.h"
#include "mod_qrtrack_ua.h"
#include "mod_qrtrack_util.h"
#include "mod_qrtrack_whsend.h"
#include "qrt_dbfile.h"
#include "qrt_geo.h"
#include "qrt_schema.h"
#include "qrt_code.h"
#include "qrt_valid.h"
#include "qrt_version.h"
#include "qrt_walvfs.h"

#if APR_HAS_PROC_PTHREAD_SERIALIZE
#define QRT_MUTEX_MECH APR_LOCK_PROC_PTHREAD
#else
#define QRT_MUTEX_MECH APR_LOCK_DEFAULT
#endif

static apr_status_t qrtrack_walvfs_unload(void *data)
{
    (void)data;
    qrt_walvfs_unregister();
    return APR_SUCCESS;
}

static apr_status_t qrtrack_sqlite_unload(void *data)
{
    (void)data;
    qrt_dialect_sqlite_untune();
    return APR_SUCCESS;
}

static int qrt_pre_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp)
{
    (void)plog;
    (void)ptemp;
    /* before the first connection (post_config's migration); other modules of the
     * server may use SQLite too: its per-connection mutexes stay */
    qrt_dialect_sqlite_tune(0);
    /* before mod_dbd reads DBDParams */
    qrt_dbd_resolve_pre_config(pconf);
    /* SQLite may outlive this module across a restart (the database driver stays
     * loaded): it must not keep a VFS or a log hook whose code is unloaded (the
     * cleanups run last registered first: the VFS goes, then SQLite is shut down and
     * its hook cleared, so the next pre_config's settings take effect again). */
    apr_pool_cleanup_register(pconf, NULL, qrtrack_sqlite_unload, apr_pool_cleanup_null);
    apr_pool_cleanup_register(pconf, NULL, qrtrack_walvfs_unload, apr_pool_cleanup_null);
    /* Both mutexes are taken on every API request or commit: a process-shared
     * pthread mutex needs no system call when it is free. `Mutex` can override. */
    if (ap_mutex_register(pconf, QRT_MUTEX_WRITER, NULL, QRT_MUTEX_MECH, 0)
        != APR_SUCCESS
        || ap_mutex_register(pconf, QRT_MUTEX_BUDGET, NULL, QRT_MUTEX_MECH, 0)
           != APR_SUCCESS
        || ap_mutex_register(pconf, QRT_MUTEX_GATE, NULL, QRT_MUTEX_MECH, 0)
           != APR_SUCCESS
        /* held by the delivering child for as long as it lives: APR's default
         * mechanism, which the kernel frees when that child dies */
        || ap_mutex_register(pconf, QRT_MUTEX_WEBHOOK, NULL, APR_LOCK_DEFAULT, 0)
           != APR_SUCCESS) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    return ap_mutex_register(pconf, QRT_MUTEX_TYPE, NULL, QRT_MUTEX_MECH, 0);
}

/* ---- a graceful restart ------------------------------------------------------------
 *
 * The parent has told the previous generation's children to stop before it reads the
 * configuration again, and they stop accepting at once: until new children start, new
 * connections wait in the listen queue. httpd's MPMs start the new children one for one
 * as they reap the old ones, but only while each look finds one to reap: the first look
 * that finds none sleeps a second, and the children not replaced by then are replaced by
 * idle maintenance, one a second. Children that end a moment after the parent has read
 * the configuration (requests still finishing, the module's threads stopping) thus left
 * every scan waiting one to three seconds. Here, the last thing the parent does before
 * its MPM runs again, it waits for them to end, so that its first look reaps them all.
 * A child still busy after RESTART_WAIT (a long download) is left to httpd, which would
 * have waited a second for it anyway. A second, as httpd's own sleep: on a busy host
 * children took more than 500 ms to answer their last requests and end. At the first
 * start there is no scoreboard yet, and a restart that is not graceful has reaped its
 * children already. */
#define RESTART_WAIT apr_time_from_msec(1000)

static void restart_wait_children(apr_pool_t *ptemp, server_rec *s)
{
    int limit = 0, n = 0, i, left;
    pid_t *pids;

    if (!ap_scoreboard_image
        || ap_mpm_query(AP_MPMQ_HARD_LIMIT_DAEMONS, &limit) != APR_SUCCESS || limit <= 0) {
        return;
    }
    pids = apr_pcalloc(ptemp, sizeof(*pids) * (apr_size_t)limit);
    for (i = 0; i < limit; i++) {
        process_score *ps = ap_get_scoreboard_process(i);

        if (ps && ps->pid > 0) {
            pids[n++] = ps->pid;
        }
    }
    if (n && (left = qrt_children_wait_ended(pids, n, RESTART_WAIT)) > 0) {
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, "QRT00132: %d of the previous "
                     "generation's %d children still serve requests %d ms into the restart: "
                     "httpd replaces them once they end", left, n,
                     (int)apr_time_as_msec(RESTART_WAIT));
    }
}

/* The GeoIP database is read at each start and restart (qrt_geo.h: a private copy). A
 * file that cannot be read at a restart (a download cut short, a file removed before
 * logrotate's nightly graceful) would end httpd, every site with it: the copy of the
 * last read that worked is kept in the process pool, which outlives restarts, and a
 * restart goes on with it (QRT00135). The first start still needs the file. */
static qrt_geo_t *geoip_open(apr_pool_t *pconf, server_rec *s, const char *path,
                             const char **err)
{
    apr_pool_t *pp = s->process->pool;
    const char *key = apr_pstrcat(pconf, "qrtrack-geoip:", path, NULL), *why = NULL;
    void *v = NULL;
    int *kept, fd;
    qrt_geo_t *g;

    apr_pool_userdata_get(&v, key, pp);
    kept = v;
    if ((fd = qrt_geo_copy(pconf, path, err)) >= 0) {
        if ((g = qrt_geo_open_copy(pconf, fd, path, err)) != NULL) {
            if (!kept) {
                kept = apr_palloc(pp, sizeof(*kept));
                *kept = -1;
                apr_pool_userdata_set(kept, key, apr_pool_cleanup_null, pp);
            }
            if (*kept >= 0) {
                close(*kept);
            }
            *kept = fd;
            return g;
        }
        close(fd);
    }
    if (!kept || *kept < 0 || !(g = qrt_geo_open_copy(pconf, *kept, NULL, &why))) {
        return NULL;
    }
    ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "QRT00135: QRTrackGeoIPDatabase %s: %s; "
                 "going on with the copy read before, until a restart can read it",
                 path, *err);
    return g;
}

/* SQLite's own line on a damaged database or a failed system call: which check or call
 * failed, and where (qrt_dialect_sqlite_log), in the server's log, rationed. */
static server_rec *qrt_sqlite_server;

static void qrt_sqlite_said(int code, const char *msg)
{
    server_rec *s = __atomic_load_n(&qrt_sqlite_server, __ATOMIC_ACQUIRE);
    apr_uint32_t more;

    if (s && qrt_log_due(qrt_ration(QRT_R_SQLITE), &more)) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "QRT00145: SQLite: %s (code %d; and %u "
                     "more since this line was last logged)", msg, code, more);
    }
}

/* (the configuration's server goes with pconf at a restart) */
static apr_status_t qrt_sqlite_server_gone(void *data)
{
    (void)data;
    __atomic_store_n(&qrt_sqlite_server, NULL, __ATOMIC_RELEASE);
    return APR_SUCCESS;
}

/* What the configuration names outside itself (DBDriver/DBDParams, SQLite's directory,
 * the GeoIP database, the user-agent regexes, the node's directory), checked once the
 * configuration is read: httpd runs this hook for `apachectl configtest` too (post_config
 * it does not), so a bad value fails the test that Debian's `apachectl graceful` runs
 * first, and the running server goes on, where it would have ended at the restart. The
 * regexes are loaded here, into pconf, for post_config and the children. */
static int qrt_check_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp,
                            server_rec *s)
{
    server_rec *sp;
    int rv;

    (void)plog;
    qrt_config_post_config(pconf);
    qrt_config_server_prefixes(pconf, s);
    /* A scan URL (the base, the longer path, the longest code) must fit a QR code at
     * error correction H: else every image of such a code at ecc=H answered 500. */
    for (sp = s; sp; sp = sp->next) {
        qrt_server_conf *c = ap_get_module_config(sp->module_config, &qrtrack_module);
        apr_size_t path = strlen(qrt_scan_prefix(sp)), click = strlen(qrt_click_prefix(sp));

        if (c->public_url && strlen(c->public_url) + (path > click ? path : click) + 1
                             + QRT_CODE_CUSTOM_MAX > QRT_QR_BYTES_MAX_H) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, 0, sp, "QRT00023: QRTrackPublicURL %s with "
                         "the scan or click path and a code of %d characters makes a URL "
                         "longer than a QR code holds at error correction H (%d bytes): "
                         "shorten it or the <Location>", c->public_url,
                         QRT_CODE_CUSTOM_MAX, QRT_QR_BYTES_MAX_H);
            return HTTP_INTERNAL_SERVER_ERROR;
        }
    }
    rv = qrt_dbd_find_fns(s);
    if (rv != OK) {
        return rv;
    }
    rv = qrt_dbd_config_check(ptemp, s);
    if (rv != OK) {
        return rv;
    }
    /* The GeoIP database only under configtest: a restart that cannot read it goes on
     * with the copy read before (geoip_open, in post_config), which the process that
     * sends `-k graceful` does not have. */
    for (sp = s; ap_state_query(AP_SQ_RUN_MODE) == AP_SQ_RM_CONFIG_TEST && sp;
         sp = sp->next) {
        qrt_server_conf *c = ap_get_module_config(sp->module_config, &qrtrack_module);
        const char *err = NULL;
        qrt_geo_t *g = NULL;
        int fd;

        if (!c->geoip_path) {
            continue;
        }
        if ((fd = qrt_geo_copy(ptemp, c->geoip_path, &err)) >= 0) {
            g = qrt_geo_open_copy(ptemp, fd, c->geoip_path, &err);
            close(fd);
        }
        if (!g) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, 0, sp, "QRT00007: "
                         "QRTrackGeoIPDatabase %s: %s", c->geoip_path, err ? err : "");
            return HTTP_INTERNAL_SERVER_ERROR;
        }
    }
    if (qrt_uadb_post_config(pconf, s) != APR_SUCCESS
        || qrt_spool_check_config(ptemp, s) != APR_SUCCESS) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    return OK;
}

static int qrt_post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp,
                           server_rec *s)
{
    server_rec *sp;
    int rv;

    qrt_config_post_config(pconf);
    if (qrt_rations_post_config(s) != APR_SUCCESS) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    __atomic_store_n(&qrt_sqlite_server, s, __ATOMIC_RELEASE);
    apr_pool_cleanup_register(pconf, NULL, qrt_sqlite_server_gone, apr_pool_cleanup_null);
    qrt_dialect_sqlite_log(qrt_sqlite_said);
    /* A PostgreSQL server that takes connections and then never answers (its processes
     * frozen) would hold libpq's connection attempts for ever: 5 s, unless the
     * environment or DBDParams' connect_timeout says otherwise (set here, in the parent
     * before any thread, for every connection its children open: mod_dbd's too). */
    setenv("PGCONNECT_TIMEOUT", "5", 0);
    rv = qrt_dbd_find_fns(s);
    if (rv != OK) {
        return rv;
    }
    rv = qrt_dbd_schema_setup(ptemp, s);
    if (rv != OK) {
        return rv;
    }
    for (sp = s; sp; sp = sp->next) {
        qrt_server_conf *c = ap_get_module_config(sp->module_config, &qrtrack_module);
        const char *err = NULL;

        if (c->geoip_path && !c->geoip) {
            c->geoip = geoip_open(pconf, sp, c->geoip_path, &err);
            if (!c->geoip) {
                ap_log_error(APLOG_MARK, APLOG_CRIT, 0, sp, "QRT00007: "
                             "QRTrackGeoIPDatabase %s: %s", c->geoip_path, err);
                return HTTP_INTERNAL_SERVER_ERROR;
            }
        }
    }
    /* (the user-agent regexes: loaded by qrt_check_config) */
    if (qrt_scan_post_config(s) != APR_SUCCESS
        || qrt_spool_post_config(pconf, ptemp, s) != APR_SUCCESS
        || qrt_report_post_config(s) != APR_SUCCESS) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    if (qrt_rate_post_config(pconf, plog, s) != APR_SUCCESS
        || qrt_budget_post_config(s) != APR_SUCCESS
        || qrt_gate_post_config(s) != APR_SUCCESS
        || qrt_whsend_post_config(s) != APR_SUCCESS) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    if (ap_state_query(AP_SQ_MAIN_STATE) != AP_SQ_MS_CREATE_PRE_CONFIG) {
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, "QRT00065: mod_qrtrack/%s "
                     "configured (DBDriver %s)", QRTRACK_VERSION, qrt_config()->dbd_driver);
        restart_wait_children(ptemp, s);
    }
    return OK;
}

/* ---- an immediate stop ---------------------------------------------------------------
 *
 * httpd's event MPM, stopped at once, sets its state to stopping, then closes the socket
 * of every connection its workers serve (close_worker_sockets), then runs child_stopping.
 * It reads those sockets without a lock against the workers: a connection whose pool is
 * destroyed (its memory unmapped) while that runs leaves the MPM a dangling socket, and
 * the child dies with SIGSEGV in apr_os_sock_get. Any busy server meets it now and then,
 * with or without this module (a plain Redirect load: about one stop in 80 here). A
 * connection's pool therefore keeps its memory, while the child is stopping and until
 * child_stopping has run (at most STOP_HOLD), so no socket the MPM reads is freed.
 * Only threaded MPMs read other threads' sockets: prefork runs child_stopping only once
 * its last connection is done, so a hold there made every child of a graceful restart
 * that was serving a request end a second late. */
#define STOP_HOLD apr_time_from_sec(1)
static volatile apr_uint32_t child_stopped;
static int mpm_threaded;

static apr_status_t conn_hold(void *data)
{
    apr_time_t until;
    int state;

    (void)data;
    if (apr_atomic_read32(&child_stopped)
        || ap_mpm_query(AP_MPMQ_MPM_STATE, &state) != APR_SUCCESS
        || state != AP_MPMQ_STOPPING) {
        return APR_SUCCESS;
    }
    until = qrt_clock_now() + STOP_HOLD;
    while (!apr_atomic_read32(&child_stopped) && qrt_clock_now() < until) {
        apr_sleep(apr_time_from_msec(2));
    }
    return APR_SUCCESS;
}

static int qrt_pre_connection(conn_rec *c, void *csd)
{
    (void)csd;
    if (mpm_threaded) {
        apr_pool_cleanup_register(c->pool, NULL, conn_hold, apr_pool_cleanup_null);
    }
    return OK;
}

static void qrt_child_stopping(apr_pool_t *pchild, int graceful)
{
    (void)pchild;
    (void)graceful;
    apr_atomic_set32(&child_stopped, 1);
    qrt_keepalive_stopping();
}

/* The module's threads (scan writer, WAL, keeper, webhooks) allocate from pools under
 * pchild, so they share its allocator with the threads that serve requests. The
 * prefork MPM makes that allocator without a mutex (one thread serves there): its
 * requests' pools and the writer's then raced in it, and a child crashed now and then
 * in apr_palloc or apr_pool_destroy. The event and worker MPMs' allocator has one. */
static void qrt_child_allocator_lock(apr_pool_t *pchild, server_rec *s)
{
    apr_allocator_t *a = apr_pool_allocator_get(pchild);
    apr_thread_mutex_t *m = NULL;
    apr_status_t rv;

    if (!a || apr_allocator_mutex_get(a)) {
        return;
    }
    rv = apr_thread_mutex_create(&m, APR_THREAD_MUTEX_DEFAULT, pchild);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "QRT00121: cannot make the child's "
                     "memory allocator safe for the module's threads");
        return;
    }
    apr_allocator_mutex_set(a, m);
}

static apr_status_t qrt_dbwatch_end(void *data)
{
    (void)data;
    qrt_dbwatch_stop();
    return APR_SUCCESS;
}

/* Before mod_dbd's child_init (qrt_dbd_child_min). */
static void qrt_child_init_dbd(apr_pool_t *p, server_rec *s)
{
    (void)p;
    qrt_dbd_child_min(s, qrt_db_down());
}

static void qrt_child_init(apr_pool_t *p, server_rec *s)
{
    int threaded = AP_MPMQ_NOT_SUPPORTED;

    qrt_child_allocator_lock(p, s);
    qrt_dbd_resolve_child_init();
    apr_atomic_set32(&child_stopped, 0);
    mpm_threaded = ap_mpm_query(AP_MPMQ_IS_THREADED, &threaded) == APR_SUCCESS
                   && threaded != AP_MPMQ_NOT_SUPPORTED;
    /* (a deadline on the calls of the threads that set a limit: qrt_dbwatch.h; the
     * watchdog ends with the child, before the module's code may be unloaded) */
    if (qrt_dbd_dialect() && qrt_dbd_dialect()->socket) {
        if (qrt_dbwatch_start() != 0) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "QRT00126: cannot start the "
                         "database watchdog thread: a database server that stops answering "
                         "holds the requests that wait for it");
        }
        else {
            apr_pool_cleanup_register(p, NULL, qrt_dbwatch_end, apr_pool_cleanup_null);
        }
    }
    qrt_rate_child_init(p, s);
    qrt_gate_child_init(p, s);
    qrt_spool_child_init(p, s);
    qrt_probe_child_init(p, s);
    qrt_lookup_child_init(p, s);
    qrt_scan_child_init(p, s);
    qrt_keepalive_child_init(p, s);
    qrt_report_child_init(p, s);
    qrt_whsend_child_init(p, s);
}

/* The module's handlers serve no file: when the request's SetHandler (its <Location>'s,
 * known after the location walk that precedes translate_name) names one of them, the
 * URI is translated to no file and the filesystem walk is skipped, as mod_proxy does for
 * what it proxies. Translated by core, a path segment longer than a file name answered
 * 403 (AH00127) before the handler, and each request looked for files and .htaccess; a
 * path prefix alone would skip the walk for another virtual host's files under the same
 * path. Last of the translators: Redirect, Alias and rewrites still apply first. */
static const char *const qrt_handlers[] = { "qrtrack-api", "qrtrack-scan", "qrtrack-click",
                                            "qrtrack-dashboard", NULL };

static int qrt_translate_name(request_rec *r)
{
    core_dir_config *d = ap_get_core_module_config(r->per_dir_config);
    const char *h = NULL, *err = NULL;
    int i;

    if (d && d->expr_handler) {
        h = ap_expr_str_exec(r, d->expr_handler, &err);
    }
    for (i = 0; h && !err && qrt_handlers[i]; i++) {
        if (!strcmp(h, qrt_handlers[i])) {
            /* The deadline of each database call of the request's thread: a scan's
             * lookup within its QRTrackScanWait, an API statement well past
             * QRTrackStatementTimeout (by then the server would have cancelled it). */
            qrt_dbwatch_limit(i == 1 || i == 2 ? qrt_scan_wait_seconds() * 1000
                              : qrt_db_call_limit_ms());
            ap_set_module_config(r->request_config, &qrtrack_module, (void *)qrt_handlers[i]);
            r->filename = apr_pstrcat(r->pool, qrt_handlers[i], ":", r->uri, NULL);
            return OK;
        }
    }
    return DECLINED;
}

static int qrt_map_to_storage(request_rec *r)
{
    return ap_get_module_config(r->request_config, &qrtrack_module) ? OK : DECLINED;
}

static void qrt_register_hooks(apr_pool_t *p)
{
    static const char *const before_dbd[] = { "mod_dbd.c", NULL };
    static const char *const after_http[] = { "http_core.c", NULL };

    (void)p;
    ap_hook_pre_config(qrt_pre_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_check_config(qrt_check_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_post_config(qrt_post_config, NULL, before_dbd, APR_HOOK_MIDDLE);
    ap_hook_child_init(qrt_child_init, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_child_init(qrt_child_init_dbd, NULL, before_dbd, APR_HOOK_MIDDLE);
    ap_hook_pre_connection(qrt_pre_connection, NULL, NULL, APR_HOOK_REALLY_FIRST);
    ap_hook_child_stopping(qrt_child_stopping, NULL, NULL, APR_HOOK_REALLY_FIRST);
    ap_hook_handler(qrt_api_handler, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_handler(qrt_scan_handler, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_handler(qrt_dashboard_handler, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_translate_name(qrt_translate_name, NULL, NULL, APR_HOOK_LAST);
    /* (after mod_http's, which answers TRACE: TraceEnable off holds for the module's
     * paths too) */
    ap_hook_map_to_storage(qrt_map_to_storage, after_http, NULL, APR_HOOK_MIDDLE);
    APR_OPTIONAL_HOOK(dbd, post_connect, qrt_dbd_post_connect, NULL, NULL,
                      APR_HOOK_MIDDLE);
    qrt_status_register();
    qrt_redact_register();
    qrt_errpage_register();
    qrt_keepalive_register();
}

AP_DECLARE_MODULE(qrtrack) = {
    STANDARD20_MODULE_STUFF,
    NULL,
    NULL,
    qrt_create_server_conf,
    qrt_merge_server_conf,
    qrt_cmds,
    qrt_register_hooks,
    AP_MODULE_FLAG_NONE
};
