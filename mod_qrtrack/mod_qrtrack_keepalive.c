/* mod_qrtrack: a client that sends scan after scan on one connection keeps it while every
 * worker of its child is busy (event MPM).
 *
 * A scan holds its worker thread until its visit is committed. When a keep-alive
 * connection's next request arrives and no worker of the child is idle, the event MPM
 * closes the connection rather than wait for one (its listener never waits for a thread
 * for a keep-alive connection), and the client connects again: accepting, closing and
 * connecting again then cost httpd and the client more CPU than the scan itself. For a
 * connection that waits for I/O (CONN_STATE_ASYNC_WAITIO, httpd 2.4.63 and later:
 * AP_MPMQ_CAN_WAITIO), the MPM waits for a thread instead, as for a new connection.
 *
 * So after a scan that waited for its commit (qrt_keepalive_mark) on a connection that
 * had already carried a request (a client that reuses its connections: a load balancer,
 * a proxy, an integration; a phone's one scan is left as it was), the process_connection
 * hook, which runs httpd's own around it, sends the response as the MPM's write
 * completion would (what the socket takes at once; anything left stays the MPM's) and
 * gives the connection back waiting to read its next request, instead of to the
 * keep-alive queue. A request already read ahead (pipelined), KeepAlive Off,
 * MaxKeepAliveRequests, a response not fully sent, an aborted connection or a stopping
 * child go the MPM's way, as do connections past half ThreadsPerChild waiting so at once
 * in the child: the MPM admits a new connection only while a child's connections are
 * few against its idle workers, and more connections kept waiting left new ones (a
 * client's next connection after MaxKeepAliveRequests, say) in the listen queue for
 * tens of milliseconds under load.
 *
 * The MPM times a waiting connection out at Timeout, not KeepAliveTimeout: the module
 * lists these connections (qrt_idle) and, past the KeepAliveTimeout of the request's
 * server (as the MPM would pick it), shuts their reading side (shutdown(SHUT_RD)). The
 * MPM then sees the connection readable, a worker reads the end of the stream and closes
 * it as after a keep-alive timeout; a request that came just before is still read and
 * answered (only reading is shut). A thread of the child (qrtrack-keepalv) sweeps the
 * list while any connection waits, at most every SWEEP_MAX (the MPM's timed callbacks
 * run only once something else wakes its listener: an idle server ran them seconds
 * late). A connection leaves the list when its next
 * request comes, before it is closed (pre_close_connection), and with its pool; on the
 * child's stop every listed one is shut at once, so none holds a stopping child. Used
 * only when Timeout exceeds KeepAliveTimeout by a second or more, so that the MPM never
 * closes a listed connection on its own first. QRTrackScanKeepAlive Off leaves every
 * connection to the MPM. */
#include <pthread.h>
#include <sys/prctl.h>
#include <apr_network_io.h>
#include <apr_thread_proc.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_keepalive.h"
#include "mod_qrtrack_config.h"
#include "mod_qrtrack_stats.h"
#include "ap_mpm.h"
#include "http_connection.h"
#include "http_core.h"
#include "qrt_clock.h"
#include "qrt_idle.h"

APLOG_USE_MODULE(qrtrack);

#define SWEEP_MIN apr_time_from_msec(10)
#define SWEEP_MAX apr_time_from_msec(250)

typedef struct {
    qrt_idle_node_t idle;           /* first: the list's node is the connection's state */
    conn_rec *c;
    apr_interval_time_t ttl;        /* set by a request that waited for a commit: its
                                     * server's KeepAliveTimeout; 0 otherwise */
    int in;                         /* inside the hook (which runs the others) */
} ka_conn_t;

/* The child's list, under ka_mu (a process-wide lock: connections' pools may end after
 * the child's pool, as the process exits). */
static pthread_mutex_t ka_mu = PTHREAD_MUTEX_INITIALIZER;
static qrt_idle_t ka_idle;
static int ka_stopping;             /* the child stops: no connection is listed again */
static volatile int ka_on;          /* event MPM that can wait for I/O, and the directive */
static apr_size_t ka_cap;           /* connections listed at once: half ThreadsPerChild */

/* The sweeping thread and its wake-up (in the child's pool) */
static qrt_cond_t *ka_cond;
static apr_thread_t *ka_thread;
static int ka_kick;                 /* (under ka_cond) a connection was listed on an
                                     * empty list */
static int ka_quit;                 /* (under ka_cond) */

/* Callers look at k->idle.listed before the lock: only the connection's own thread lists
 * it (ka_wait), and the sweep only takes nodes off, so a node seen unlisted stays so. */
static void ka_delist(ka_conn_t *k)
{
    pthread_mutex_lock(&ka_mu);
    qrt_idle_remove(&ka_idle, &k->idle);
    pthread_mutex_unlock(&ka_mu);
}

static apr_status_t ka_conn_cleanup(void *data)
{
    ka_delist(data);
    return APR_SUCCESS;
}

/* (under ka_mu) A listed connection's time is up, or the child stops. */
static void ka_shut(qrt_idle_node_t *node, void *baton)
{
    ka_conn_t *k = (ka_conn_t *)node;
    apr_socket_t *sock = ap_get_conn_socket(k->c);

    (void)baton;
    if (sock) {
        apr_socket_shutdown(sock, APR_SHUTDOWN_READ);
    }
    QRT_STAT_ADD(kept_ended, 1);
}

static void *APR_THREAD_FUNC ka_main(apr_thread_t *thread, void *data)
{
    apr_interval_time_t wait = -1;  /* until kicked */
    apr_time_t next, now;

    (void)thread;
    (void)data;
    prctl(PR_SET_NAME, "qrtrack-keepalv", 0, 0, 0);
    for (;;) {
        qrt_cond_lock(ka_cond);
        while (!ka_quit && !ka_kick) {
            if (wait < 0) {
                qrt_cond_wait(ka_cond);
            }
            else if (qrt_cond_timedwait(ka_cond, wait) == APR_TIMEUP) {
                break;
            }
        }
        ka_kick = 0;
        if (ka_quit) {
            qrt_cond_unlock(ka_cond);
            break;
        }
        qrt_cond_unlock(ka_cond);
        pthread_mutex_lock(&ka_mu);
        now = qrt_clock_now();
        next = qrt_idle_expire(&ka_idle, now, ka_shut, NULL);
        pthread_mutex_unlock(&ka_mu);
        wait = !next ? -1 : next - now < SWEEP_MIN ? SWEEP_MIN
               : next - now > SWEEP_MAX ? SWEEP_MAX : next - now;
    }
    return NULL;
}

static apr_status_t ka_thread_stop(void *data)
{
    apr_status_t rv;

    (void)data;
    if (!ka_thread) {
        return APR_SUCCESS;
    }
    qrt_cond_lock(ka_cond);
    ka_quit = 1;
    qrt_cond_signal(ka_cond);
    qrt_cond_unlock(ka_cond);
    apr_thread_join(&rv, ka_thread);
    ka_thread = NULL;
    return APR_SUCCESS;
}

void qrt_keepalive_mark(request_rec *r)
{
    conn_rec *c = r->connection;
    ka_conn_t *k;
    server_rec *s;

    if (!ka_on || c->master || !c->cs || c->keepalives < 1
        || !(k = ap_get_module_config(c->conn_config, &qrtrack_module))) {
        return;
    }
    /* the server whose KeepAliveTimeout and Timeout the MPM uses for the connection */
    s = r->server->keep_alive_timeout_set ? r->server : c->base_server;
    if (s->keep_alive_timeout > 0
        && s->timeout >= s->keep_alive_timeout + apr_time_from_sec(1)) {
        k->ttl = s->keep_alive_timeout;
    }
}

/* After the request: the response out as the MPM's write completion sends it, then the
 * connection listed and handed back waiting to read. */
static void ka_wait(conn_rec *c, ka_conn_t *k)
{
    conn_state_t *cs = c->cs;
    ap_filter_t *last = c->output_filters;
    int kick = 0;

    if (cs->state != CONN_STATE_WRITE_COMPLETION || c->keepalive != AP_CONN_KEEPALIVE
        || c->aborted || c->data_in_input_filters) {
        return;
    }
    while (last->next) {
        last = last->next;
    }
    if (last->frec->filter_func.out_func(last, NULL) != APR_SUCCESS
        || c->data_in_output_filters) {
        return;
    }
    pthread_mutex_lock(&ka_mu);
    if (!ka_stopping && ka_on && ka_idle.n < ka_cap) {
        qrt_idle_add(&ka_idle, &k->idle, qrt_clock_now() + k->ttl);
        kick = ka_idle.n == 1;
        cs->sense = CONN_SENSE_WANT_READ;
        cs->state = CONN_STATE_ASYNC_WAITIO;
    }
    pthread_mutex_unlock(&ka_mu);
    if (cs->state == CONN_STATE_ASYNC_WAITIO) {
        QRT_STAT_ADD(kept_waits, 1);
    }
    if (kick) {
        qrt_cond_lock(ka_cond);
        ka_kick = 1;
        qrt_cond_signal(ka_cond);
        qrt_cond_unlock(ka_cond);
    }
}

static int ka_process_connection(conn_rec *c)
{
    ka_conn_t *k;
    int rc;

    if (!ka_on || !c->cs || c->master) {
        return DECLINED;
    }
    k = ap_get_module_config(c->conn_config, &qrtrack_module);
    if (k && k->in) {
        return DECLINED;            /* run again from below: the other hooks' turn */
    }
    if (!k) {
        k = apr_pcalloc(c->pool, sizeof(*k));
        k->c = c;
        ap_set_module_config(c->conn_config, &qrtrack_module, k);
        apr_pool_cleanup_register(c->pool, k, ka_conn_cleanup, apr_pool_cleanup_null);
    }
    else if (k->idle.listed) {
        ka_delist(k);
    }
    k->ttl = 0;
    k->in = 1;
    rc = ap_run_process_connection(c);
    k->in = 0;
    if (rc == OK && k->ttl) {
        ka_wait(c, k);
    }
    return rc;
}

static int ka_pre_close(conn_rec *c)
{
    ka_conn_t *k = ap_get_module_config(c->conn_config, &qrtrack_module);

    if (k && k->idle.listed) {
        ka_delist(k);
    }
    return OK;
}

void qrt_keepalive_child_init(apr_pool_t *pchild, server_rec *s)
{
    int waitio = 0, threads = 0;
    apr_status_t rv;

    qrt_idle_init(&ka_idle);
    ka_stopping = 0;
    ka_kick = ka_quit = 0;
    ka_thread = NULL;
    ka_on = qrt_config()->scan_keepalive
            && ap_mpm_query(AP_MPMQ_CAN_WAITIO, &waitio) == APR_SUCCESS && waitio
            && ap_mpm_query(AP_MPMQ_MAX_THREADS, &threads) == APR_SUCCESS && threads > 0;
    ka_cap = threads > 1 ? (apr_size_t)threads / 2 : 1;
    if (!ka_on) {
        return;
    }
    rv = qrt_cond_create(&ka_cond, pchild);
    if (rv == APR_SUCCESS) {
        rv = apr_thread_create(&ka_thread, NULL, ka_main, NULL, pchild);
    }
    if (rv != APR_SUCCESS) {
        ka_on = 0;
        ka_thread = NULL;
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, s, "QRT00991: cannot start the "
                     "keep-alive thread: scans' keep-alive connections are left to the "
                     "MPM's keep-alive handling in this child");
        return;
    }
    apr_pool_pre_cleanup_register(pchild, NULL, ka_thread_stop);
}

void qrt_keepalive_stopping(void)
{
    pthread_mutex_lock(&ka_mu);
    ka_stopping = 1;
    qrt_idle_drain(&ka_idle, ka_shut, NULL);
    pthread_mutex_unlock(&ka_mu);
}

void qrt_keepalive_register(void)
{
    /* before httpd's own (APR_HOOK_REALLY_LAST), which it runs */
    ap_hook_process_connection(ka_process_connection, NULL, NULL, APR_HOOK_FIRST);
    ap_hook_pre_close_connection(ka_pre_close, NULL, NULL, APR_HOOK_MIDDLE);
}
