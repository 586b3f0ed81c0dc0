/* qrt_mc: a small memcached client with a deadline on every call, and the gate
 * shared by a server's processes (see qrt_mc.h). */
#include <string.h>
#include <apr_network_io.h>
#include <apr_strings.h>
#include <apr_thread_mutex.h>

#include "qrt_clock.h"
#include "qrt_mc.h"
#include "qrt_rate.h"
#include "qrt_resolve.h"

/* A server named by a host name is looked up again when its connection is opened this
 * long after the last answer (a lookup waited for within the call's deadline, the last
 * address standing in when none comes: qrt_resolve.h). */
#define MC_RESOLVE_FRESH apr_time_from_sec(30)

/* A command and an answer both fit here: "add <250-byte key> ..." with its value,
 * "VALUE <key> <flags> <bytes> <cas>\r\n<value>\r\nEND\r\n". */
#define MC_BUF 1024

typedef struct mc_conn {
    apr_pool_t *p;                  /* the connection's own (unmanaged) pool */
    apr_socket_t *sock;
    apr_time_t idle_since;
    struct mc_conn *next;
} mc_conn;

typedef struct {
    const char *host;
    apr_port_t port;
    qrt_resolver_t *resolver;       /* NULL: host is an address */
    apr_thread_mutex_t *lock;       /* guards what follows */
    apr_sockaddr_t *sa;             /* of sa_addr, made at the first connect */
    char sa_addr[QRT_ADDR_MAX];
    apr_pool_t *sa_pool, *sa_pool_before;   /* sa's, and the one before (a thread may
                                             * be connecting to it still) */
    mc_conn *idle;                  /* most recently used first */
    int nidle;
} mc_server;

struct qrt_mc_t {
    mc_server *servers;
    int n;
    apr_interval_time_t timeout;
    apr_interval_time_t idle_ttl;
    int max_idle;
};

typedef enum { ANSWER_LINE, ANSWER_GET } mc_answer_kind;

static void conn_close(mc_conn *c)
{
    apr_socket_close(c->sock);
    apr_pool_destroy(c->p);
}

static apr_status_t mc_cleanup(void *data)
{
    qrt_mc_t *mc = data;
    int i;

    for (i = 0; i < mc->n; i++) {
        mc_server *sv = &mc->servers[i];

        while (sv->idle) {
            mc_conn *c = sv->idle;

            sv->idle = c->next;
            conn_close(c);
        }
        sv->nidle = 0;
        if (sv->sa_pool) {
            apr_pool_destroy(sv->sa_pool);
            sv->sa_pool = NULL;
            sv->sa = NULL;
        }
        if (sv->sa_pool_before) {
            apr_pool_destroy(sv->sa_pool_before);
            sv->sa_pool_before = NULL;
        }
    }
    return APR_SUCCESS;
}

apr_status_t qrt_mc_create(apr_pool_t *p, const apr_array_header_t *servers,
                           apr_interval_time_t timeout, int max_idle,
                           apr_interval_time_t idle_ttl, qrt_mc_t **out)
{
    const qrt_rate_server_t *sv = (const qrt_rate_server_t *)servers->elts;
    qrt_mc_t *mc;
    apr_status_t rv;
    int i;

    if (servers->nelts < 1 || timeout <= 0) {
        return APR_EINVAL;
    }
    mc = apr_pcalloc(p, sizeof(*mc));
    mc->n = servers->nelts;
    mc->servers = apr_pcalloc(p, sizeof(mc_server) * mc->n);
    mc->timeout = timeout;
    mc->max_idle = max_idle;
    mc->idle_ttl = idle_ttl;
    for (i = 0; i < mc->n; i++) {
        mc->servers[i].host = apr_pstrdup(p, sv[i].host);
        mc->servers[i].port = sv[i].port;
        if (!qrt_resolve_addrs_valid(sv[i].host)
            && !(mc->servers[i].resolver = qrt_resolver_make(sv[i].host, NULL, NULL))) {
            return APR_ENOMEM;
        }
        rv = apr_thread_mutex_create(&mc->servers[i].lock, APR_THREAD_MUTEX_DEFAULT, p);
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    apr_pool_cleanup_register(p, mc, mc_cleanup, apr_pool_cleanup_null);
    *out = mc;
    return APR_SUCCESS;
}

/* Microseconds left before deadline, or 0 when it has passed. */
static apr_interval_time_t time_left(apr_time_t deadline)
{
    apr_time_t now = qrt_clock_now();

    return deadline > now ? deadline - now : 0;
}

static apr_status_t as_timeup(apr_status_t rv)
{
    return APR_STATUS_IS_TIMEUP(rv) || APR_STATUS_IS_EAGAIN(rv) ? APR_TIMEUP : rv;
}

/* sv's address by the deadline: a host name's is looked up within it (getaddrinfo would
 * hold the call, and every call waiting for the lock, for as long as DNS does not
 * answer), so APR is given a numeric address, which it reads without a lookup. */
static apr_status_t server_addr(mc_server *sv, apr_time_t deadline, apr_sockaddr_t **sa)
{
    char addr[QRT_ADDR_MAX], *comma;
    const char *host = sv->host, *why;
    apr_status_t rv = APR_SUCCESS;

    if (sv->resolver) {
        if (qrt_resolve(sv->resolver, time_left(deadline), MC_RESOLVE_FRESH, addr, &why) < 0) {
            return APR_TIMEUP;      /* (no address in time: as a server that is silent) */
        }
        /* the first IPv4 address, as APR's lookup of any family gives it, else the first */
        for (host = addr; strchr(host, ':') && (comma = strchr(host, ',')) != NULL;
             host = comma + 1) {
        }
        if (strchr(host, ':')) {
            host = addr;
        }
        if ((comma = strchr((char *)host, ',')) != NULL) {
            *comma = '\0';
        }
    }
    apr_thread_mutex_lock(sv->lock);
    if (!sv->sa || strcmp(sv->sa_addr, host)) {
        apr_sockaddr_t *n = NULL;
        apr_pool_t *p;

        rv = strlen(host) < sizeof(sv->sa_addr)
             ? apr_pool_create_unmanaged_ex(&p, NULL, NULL) : APR_EINVAL;
        if (rv == APR_SUCCESS) {
            rv = apr_sockaddr_info_get(&n, host, APR_UNSPEC, sv->port, 0, p);
            if (rv == APR_SUCCESS) {
                if (sv->sa_pool_before) {
                    apr_pool_destroy(sv->sa_pool_before);
                }
                sv->sa_pool_before = sv->sa_pool;
                sv->sa_pool = p;
                sv->sa = n;
                strcpy(sv->sa_addr, host);
            }
            else {
                apr_pool_destroy(p);
            }
        }
    }
    *sa = sv->sa;
    apr_thread_mutex_unlock(sv->lock);
    return *sa ? APR_SUCCESS : rv;
}

static apr_status_t conn_open(mc_server *sv, apr_time_t deadline, mc_conn **out)
{
    apr_sockaddr_t *sa;
    apr_interval_time_t left;
    apr_pool_t *p;
    mc_conn *c;
    apr_status_t rv;

    rv = server_addr(sv, deadline, &sa);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = apr_pool_create_unmanaged_ex(&p, NULL, NULL);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    c = apr_pcalloc(p, sizeof(*c));
    c->p = p;
    rv = apr_socket_create(&c->sock, sa->family, SOCK_STREAM, APR_PROTO_TCP, p);
    if (rv != APR_SUCCESS) {
        apr_pool_destroy(p);
        return rv;
    }
    left = time_left(deadline);
    if (left == 0) {
        rv = APR_TIMEUP;
    }
    else {
        apr_socket_opt_set(c->sock, APR_TCP_NODELAY, 1);
        rv = apr_socket_timeout_set(c->sock, left);
        if (rv == APR_SUCCESS) {
            rv = as_timeup(apr_socket_connect(c->sock, sa));
        }
    }
    if (rv != APR_SUCCESS) {
        conn_close(c);
        return rv;
    }
    *out = c;
    return APR_SUCCESS;
}

/* An idle connection of sv (NULL if none is fresh enough). */
static mc_conn *conn_take(qrt_mc_t *mc, mc_server *sv)
{
    apr_time_t now = qrt_clock_now();
    mc_conn *c, *stale = NULL;

    apr_thread_mutex_lock(sv->lock);
    c = sv->idle;
    if (c) {
        sv->idle = c->next;
        sv->nidle--;
        if (now - c->idle_since > mc->idle_ttl) {
            /* The rest are older still. */
            stale = c;
            c->next = sv->idle;
            sv->idle = NULL;
            sv->nidle = 0;
            c = NULL;
        }
    }
    apr_thread_mutex_unlock(sv->lock);
    while (stale) {
        mc_conn *next = stale->next;

        conn_close(stale);
        stale = next;
    }
    return c;
}

static void conn_give_back(qrt_mc_t *mc, mc_server *sv, mc_conn *c)
{
    int keep;

    c->idle_since = qrt_clock_now();
    apr_thread_mutex_lock(sv->lock);
    keep = sv->nidle < mc->max_idle;
    if (keep) {
        c->next = sv->idle;
        sv->idle = c;
        sv->nidle++;
    }
    apr_thread_mutex_unlock(sv->lock);
    if (!keep) {
        conn_close(c);
    }
}

/* A connection that failed: closed, and the idle ones of its server with it (a
 * memcached that went away leaves them all dead). */
static void conn_drop(mc_server *sv, mc_conn *c)
{
    mc_conn *idle;

    conn_close(c);
    apr_thread_mutex_lock(sv->lock);
    idle = sv->idle;
    sv->idle = NULL;
    sv->nidle = 0;
    apr_thread_mutex_unlock(sv->lock);
    while (idle) {
        mc_conn *next = idle->next;

        conn_close(idle);
        idle = next;
    }
}

static apr_status_t send_all(mc_conn *c, const char *buf, apr_size_t len,
                             apr_time_t deadline)
{
    while (len > 0) {
        apr_interval_time_t left = time_left(deadline);
        apr_size_t n = len;
        apr_status_t rv;

        if (left == 0) {
            return APR_TIMEUP;
        }
        apr_socket_timeout_set(c->sock, left);
        rv = apr_socket_send(c->sock, buf, &n);
        if (rv != APR_SUCCESS && n == 0) {
            return as_timeup(rv);
        }
        buf += n;
        len -= n;
    }
    return APR_SUCCESS;
}

/* Bytes of a complete answer at the start of buf (used bytes), 0 while it is
 * incomplete, -1 when it cannot be a valid one. */
static apr_ssize_t answer_length(mc_answer_kind kind, const char *buf, apr_size_t used)
{
    const char *eol = memchr(buf, '\n', used);
    apr_size_t line;
    apr_int64_t bytes;
    const char *p;

    if (!eol) {
        return 0;
    }
    line = (apr_size_t)(eol - buf) + 1;
    if (line < 2 || buf[line - 2] != '\r') {
        return -1;
    }
    if (kind == ANSWER_LINE || strncmp(buf, "VALUE ", 6) != 0) {
        return (apr_ssize_t)line;
    }
    /* VALUE <key> <flags> <bytes>[ <cas>]\r\n: the data, \r\n, END\r\n follow. */
    p = buf + 6;
    p = memchr(p, ' ', (apr_size_t)(eol - p));         /* after the key */
    p = p ? memchr(p + 1, ' ', (apr_size_t)(eol - p - 1)) : NULL;   /* after flags */
    if (!p || p[1] < '0' || p[1] > '9') {
        return -1;
    }
    bytes = apr_atoi64(p + 1);
    if (bytes < 0 || bytes > QRT_MC_MAX_VALUE) {
        return -1;
    }
    if (used < line + (apr_size_t)bytes + 7) {
        return 0;
    }
    return (apr_ssize_t)(line + (apr_size_t)bytes + 7);
}

/* Reads one whole answer into buf (MC_BUF bytes, NUL-terminated): *len its length.
 * *got says whether any byte came. */
static apr_status_t recv_answer(mc_conn *c, mc_answer_kind kind, char *buf,
                                apr_size_t *len, apr_time_t deadline, int *got)
{
    apr_size_t used = 0;
    apr_ssize_t whole = 0;

    while (whole == 0) {
        apr_interval_time_t left = time_left(deadline);
        apr_size_t n = MC_BUF - 1 - used;
        apr_status_t rv;

        if (n == 0) {
            return APR_EGENERAL;
        }
        if (left == 0) {
            return APR_TIMEUP;
        }
        apr_socket_timeout_set(c->sock, left);
        rv = apr_socket_recv(c->sock, buf + used, &n);
        used += n;
        if (n > 0) {
            *got = 1;
            whole = answer_length(kind, buf, used);
        }
        if (rv != APR_SUCCESS && whole == 0) {
            return as_timeup(rv);
        }
    }
    /* Anything beyond the answer means the stream is out of step. */
    if (whole < 0 || (apr_size_t)whole != used) {
        return APR_EGENERAL;
    }
    buf[used] = '\0';
    *len = used;
    return APR_SUCCESS;
}

static int conn_gone(apr_status_t rv)
{
    return rv == APR_EOF || APR_STATUS_IS_ECONNRESET(rv) || APR_STATUS_IS_EPIPE(rv)
        || APR_STATUS_IS_ECONNABORTED(rv);
}

/* Sends cmd to the server and reads its answer into ans (MC_BUF bytes). */
static apr_status_t mc_call(qrt_mc_t *mc, int server, const char *cmd, apr_size_t len,
                            mc_answer_kind kind, char *ans, apr_size_t *anslen)
{
    apr_time_t deadline = qrt_clock_now() + mc->timeout;
    mc_server *sv;
    apr_status_t rv;
    int attempt;

    if (server < 0 || server >= mc->n) {
        return APR_EINVAL;
    }
    sv = &mc->servers[server];
    for (attempt = 0; ; attempt++) {
        mc_conn *c = attempt == 0 ? conn_take(mc, sv) : NULL;
        int reused = c != NULL, got = 0;

        if (!c) {
            rv = conn_open(sv, deadline, &c);
            if (rv != APR_SUCCESS) {
                return rv;
            }
        }
        rv = send_all(c, cmd, len, deadline);
        if (rv == APR_SUCCESS) {
            rv = recv_answer(c, kind, ans, anslen, deadline, &got);
        }
        if (rv == APR_SUCCESS) {
            conn_give_back(mc, sv, c);
            return APR_SUCCESS;
        }
        conn_drop(sv, c);
        /* A kept connection the server had closed: it never saw the command. */
        if (!reused || got || !conn_gone(rv)) {
            return rv;
        }
    }
}

static int key_ok(const char *key)
{
    apr_size_t n = strlen(key), i;

    if (n < 1 || n > 250) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (key[i] <= ' ' || key[i] > '~') {
            return 0;
        }
    }
    return 1;
}

apr_status_t qrt_mc_get(qrt_mc_t *mc, int server, const char *key, char *val,
                        apr_size_t size)
{
    char cmd[MC_BUF], ans[MC_BUF];
    apr_size_t len = 0, line, klen;
    apr_int64_t bytes;
    const char *p;
    apr_status_t rv;

    if (!key_ok(key)) {
        return APR_EINVAL;
    }
    rv = mc_call(mc, server, cmd, (apr_size_t)apr_snprintf(cmd, sizeof(cmd),
                                                           "get %s\r\n", key),
                 ANSWER_GET, ans, &len);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (!strcmp(ans, "END\r\n")) {
        return APR_NOTFOUND;
    }
    /* VALUE <key> <flags> <bytes>...: answer_length checked the layout. */
    klen = strlen(key);
    if (strncmp(ans, "VALUE ", 6) != 0 || strncmp(ans + 6, key, klen) != 0
        || ans[6 + klen] != ' ') {
        return APR_EGENERAL;
    }
    line = (apr_size_t)(strchr(ans, '\n') - ans) + 1;
    p = strchr(ans + 7 + klen, ' ');
    bytes = p ? apr_atoi64(p + 1) : -1;
    if (bytes < 0 || line + (apr_size_t)bytes + 7 != len
        || memcmp(ans + line + bytes, "\r\nEND\r\n", 7) != 0) {
        return APR_EGENERAL;
    }
    if ((apr_size_t)bytes >= size) {
        return APR_ENOSPC;
    }
    memcpy(val, ans + line, (apr_size_t)bytes);
    val[bytes] = '\0';
    return APR_SUCCESS;
}

apr_status_t qrt_mc_add(qrt_mc_t *mc, int server, const char *key, const char *val,
                        apr_uint32_t ttl)
{
    char cmd[MC_BUF], ans[MC_BUF];
    apr_size_t len = 0, vlen = strlen(val);
    int n;
    apr_status_t rv;

    if (!key_ok(key) || vlen > QRT_MC_MAX_VALUE) {
        return APR_EINVAL;
    }
    n = apr_snprintf(cmd, sizeof(cmd), "add %s 0 %u %" APR_SIZE_T_FMT "\r\n%s\r\n",
                     key, ttl, vlen, val);
    rv = mc_call(mc, server, cmd, (apr_size_t)n, ANSWER_LINE, ans, &len);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (!strcmp(ans, "STORED\r\n")) {
        return APR_SUCCESS;
    }
    return !strcmp(ans, "NOT_STORED\r\n") ? APR_EEXIST : APR_EGENERAL;
}

static apr_status_t mc_delta(qrt_mc_t *mc, int server, const char *verb, const char *key,
                             apr_uint32_t delta, apr_uint64_t *value)
{
    char cmd[MC_BUF], ans[MC_BUF];
    apr_size_t len = 0, i;
    apr_uint64_t v = 0;
    apr_status_t rv;

    if (!key_ok(key)) {
        return APR_EINVAL;
    }
    rv = mc_call(mc, server, cmd, (apr_size_t)apr_snprintf(cmd, sizeof(cmd),
                                                           "%s %s %u\r\n", verb, key,
                                                           delta),
                 ANSWER_LINE, ans, &len);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (!strcmp(ans, "NOT_FOUND\r\n")) {
        return APR_NOTFOUND;
    }
    /* The new value: 1-20 digits (old servers pad it with spaces). */
    for (i = 0; ans[i] >= '0' && ans[i] <= '9'; i++) {
        if (i >= 20 || v > (APR_UINT64_MAX - (apr_uint64_t)(ans[i] - '0')) / 10) {
            return APR_EGENERAL;
        }
        v = v * 10 + (apr_uint64_t)(ans[i] - '0');
    }
    if (i == 0) {
        return APR_EGENERAL;
    }
    while (ans[i] == ' ') {
        i++;
    }
    if (strcmp(ans + i, "\r\n") != 0) {
        return APR_EGENERAL;
    }
    if (value) {
        *value = v;
    }
    return APR_SUCCESS;
}

apr_status_t qrt_mc_incr(qrt_mc_t *mc, int server, const char *key, apr_uint32_t delta,
                         apr_uint64_t *value)
{
    return mc_delta(mc, server, "incr", key, delta, value);
}

apr_status_t qrt_mc_decr(qrt_mc_t *mc, int server, const char *key, apr_uint32_t delta,
                         apr_uint64_t *value)
{
    return mc_delta(mc, server, "decr", key, delta, value);
}

/* ---- the shared gate ------------------------------------------------------------
 *
 * GCC's atomics on the shared memory itself (lock-free: no process-local mutex as
 * APR's generic fallback would take). */
#define LOAD(x)         __atomic_load_n(&(x), __ATOMIC_SEQ_CST)
#define STORE(x, v)     __atomic_store_n(&(x), (v), __ATOMIC_SEQ_CST)
#define ADD(x, v)       __atomic_add_fetch(&(x), (v), __ATOMIC_SEQ_CST)
#define SUB(x, v)       __atomic_sub_fetch(&(x), (v), __ATOMIC_SEQ_CST)

/* 1 when x was expected and is now v. */
static int cas32(volatile apr_uint32_t *x, apr_uint32_t expected, apr_uint32_t v)
{
    return __atomic_compare_exchange_n(x, &expected, v, 0, __ATOMIC_SEQ_CST,
                                       __ATOMIC_SEQ_CST);
}

static int cas64(volatile apr_uint64_t *x, apr_uint64_t expected, apr_uint64_t v)
{
    return __atomic_compare_exchange_n(x, &expected, v, 0, __ATOMIC_SEQ_CST,
                                       __ATOMIC_SEQ_CST);
}

apr_size_t qrt_mc_shared_size(apr_uint32_t nservers)
{
    return sizeof(qrt_mc_shared_t) + sizeof(qrt_mc_gate_t) * (nservers ? nservers - 1 : 0);
}

void qrt_mc_shared_init(qrt_mc_shared_t *sh, apr_uint32_t nservers, apr_uint32_t cap)
{
    memset(sh, 0, qrt_mc_shared_size(nservers));
    sh->nservers = nservers;
    sh->cap = cap;
}

qrt_mc_pass_t qrt_mc_enter(qrt_mc_shared_t *sh, int server, apr_time_t now,
                           apr_interval_time_t probe_every)
{
    qrt_mc_gate_t *g = &sh->gates[server];
    qrt_mc_pass_t pass = QRT_MC_GO;

    if (LOAD(g->down)) {
        apr_uint64_t last = LOAD(g->probe_at);

        if (qrt_clock_within((apr_time_t)last, now, probe_every)
            || !cas64(&g->probe_at, last, (apr_uint64_t)now)) {
            return QRT_MC_DOWN;
        }
        pass = QRT_MC_PROBE;
    }
    if (ADD(sh->inflight, 1) > sh->cap) {
        SUB(sh->inflight, 1);
        return QRT_MC_BUSY;
    }
    return pass;
}

int qrt_mc_leave(qrt_mc_shared_t *sh, int server, apr_status_t rv, apr_time_t now)
{
    qrt_mc_gate_t *g = &sh->gates[server];

    SUB(sh->inflight, 1);
    if (rv == APR_SUCCESS) {
        return cas32(&g->down, 1, 0) ? 1 : 0;
    }
    STORE(g->why, (apr_uint32_t)rv);
    if (LOAD(g->down)) {
        return 0;
    }
    /* The next probe comes a probe interval from now. */
    STORE(g->probe_at, (apr_uint64_t)now);
    return cas32(&g->down, 0, 1) ? -1 : 0;
}

int qrt_mc_all_up(const qrt_mc_shared_t *sh)
{
    apr_uint32_t i;

    for (i = 0; i < sh->nservers; i++) {
        if (LOAD(sh->gates[i].down)) {
            return 0;
        }
    }
    return 1;
}

int qrt_mc_warn_due(qrt_mc_shared_t *sh, qrt_mc_warn_t *w, apr_time_t now,
                    apr_interval_time_t interval, apr_uint32_t *missed)
{
    apr_uint32_t m = ADD(w->missed, 1);
    apr_uint64_t last = LOAD(w->last);

    ADD(sh->fallbacks, 1);
    if ((last != 0 && qrt_clock_within((apr_time_t)last, now, interval))
        || !cas64(&w->last, last, (apr_uint64_t)now)) {
        return 0;
    }
    SUB(w->missed, m);
    STORE(w->owed, 1);
    *missed = m;
    return 1;
}

int qrt_mc_back_due(qrt_mc_warn_t *w)
{
    return cas32(&w->owed, 1, 0);
}
