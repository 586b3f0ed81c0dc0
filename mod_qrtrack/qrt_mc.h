/* qrt_mc: a small memcached client with a deadline on every call, and the gate
 * that all processes of a server share in front of it.
 *
 * The client speaks the text protocol's get, add, incr and decr over apr_sockets
 * (apr_memcache 1.6 blocks without limit once connected). Each call (connecting,
 * sending and reading the answer together) gives up after the client's timeout;
 * its connection is then closed, since its stream is no longer in step. Idle
 * connections are kept per server and reused; one found closed by the server (a
 * memcached restarted) is replaced by a new connection once, within the call.
 * Every answer is read into a bounded buffer and checked whole.
 *
 * The gate (qrt_mc_shared_t, in shared memory) holds per server whether it is down,
 * and for the whole server the calls in flight: a request enters it before talking
 * to memcached and is told to go, to probe (the one request a second that tries a
 * server that is down), or to fall back to shared memory at once. */
#ifndef QRT_MC_H
#define QRT_MC_H

#include <apr.h>
#include <apr_pools.h>
#include <apr_tables.h>
#include <apr_time.h>

typedef struct qrt_mc_t qrt_mc_t;

/* Largest answer read (a get's value is at most QRT_MC_MAX_VALUE bytes). */
#define QRT_MC_MAX_VALUE 256

/* A client of servers (qrt_rate_server_t) allocated in p; each call gives up after
 * timeout (APR_TIMEUP). At most max_idle idle connections are kept per server, each
 * for at most idle_ttl. Thread-safe once created. */
apr_status_t qrt_mc_create(apr_pool_t *p, const apr_array_header_t *servers,
                           apr_interval_time_t timeout, int max_idle,
                           apr_interval_time_t idle_ttl, qrt_mc_t **mc);

/* The calls name their server by index (0 .. servers - 1). Keys are 1-250 bytes,
 * printable, without spaces (APR_EINVAL otherwise). Every call answers APR_TIMEUP
 * when its deadline passed, APR_EGENERAL for an answer that is not what memcached
 * says, or the socket's error. */

/* The key's value, NUL-terminated into val (size bytes): APR_SUCCESS, APR_NOTFOUND,
 * or APR_ENOSPC when it does not fit. */
apr_status_t qrt_mc_get(qrt_mc_t *mc, int server, const char *key, char *val,
                        apr_size_t size);
/* Stores val under key for ttl seconds unless the key exists: APR_SUCCESS or
 * APR_EEXIST. */
apr_status_t qrt_mc_add(qrt_mc_t *mc, int server, const char *key, const char *val,
                        apr_uint32_t ttl);
/* Adds (incr) or subtracts (decr, memcached stops at 0) delta: APR_SUCCESS with the
 * new value in *value (may be NULL), or APR_NOTFOUND. */
apr_status_t qrt_mc_incr(qrt_mc_t *mc, int server, const char *key, apr_uint32_t delta,
                         apr_uint64_t *value);
apr_status_t qrt_mc_decr(qrt_mc_t *mc, int server, const char *key, apr_uint32_t delta,
                         apr_uint64_t *value);

/* ---- the shared gate ------------------------------------------------------------ */

typedef struct {
    volatile apr_uint32_t down;     /* 1 while requests bypass this server */
    volatile apr_uint32_t why;      /* the apr_status_t that put it down */
    volatile apr_uint64_t probe_at; /* apr_time_t of the last probe (or going down) */
} qrt_mc_gate_t;

/* Warnings of one kind at most once an interval, whichever process logs them. */
typedef struct {
    volatile apr_uint64_t last;     /* apr_time_t of the last warning, 0 = none yet */
    volatile apr_uint32_t missed;   /* requests counted in shared memory since */
    volatile apr_uint32_t owed;     /* 1 once a warning went out: a server that
                                     * answers again is then said so once */
} qrt_mc_warn_t;

typedef struct {
    volatile apr_uint32_t inflight; /* requests talking to memcached now */
    apr_uint32_t cap;               /* at most this many */
    apr_uint32_t nservers;
    volatile apr_uint64_t fallbacks; /* requests counted in shared memory instead */
    qrt_mc_warn_t warn_down;
    qrt_mc_warn_t warn_busy;
    qrt_mc_gate_t gates[1];         /* one per server */
} qrt_mc_shared_t;

typedef enum {
    QRT_MC_GO = 0,                  /* the server is up: call it */
    QRT_MC_PROBE,                   /* it is down, and this request tries it */
    QRT_MC_DOWN,                    /* it is down: fall back */
    QRT_MC_BUSY                     /* cap calls in flight already: fall back */
} qrt_mc_pass_t;

apr_size_t qrt_mc_shared_size(apr_uint32_t nservers);
void qrt_mc_shared_init(qrt_mc_shared_t *sh, apr_uint32_t nservers, apr_uint32_t cap);

/* Before calling server at now: GO and PROBE count the request in flight (leave
 * it with qrt_mc_leave); DOWN and BUSY do not. A down server gets one PROBE per
 * probe_every, server-wide. */
qrt_mc_pass_t qrt_mc_enter(qrt_mc_shared_t *sh, int server, apr_time_t now,
                           apr_interval_time_t probe_every);
/* After the calls of a GO or PROBE pass: rv their outcome (APR_SUCCESS when
 * memcached answered them all). 1 when this request brought the server back up,
 * -1 when it put it down, 0 when its state did not change. */
int qrt_mc_leave(qrt_mc_shared_t *sh, int server, apr_status_t rv, apr_time_t now);
/* 1 when every server is up. */
int qrt_mc_all_up(const qrt_mc_shared_t *sh);

/* Counts one request counted in shared memory under w; 1 when a warning is due
 * (none for interval), with *missed the requests so counted since the last one
 * (this one included). */
int qrt_mc_warn_due(qrt_mc_shared_t *sh, qrt_mc_warn_t *w, apr_time_t now,
                    apr_interval_time_t interval, apr_uint32_t *missed);
/* 1 when a server that answers again is to be logged: once after any number of
 * warnings under w (so never more often than they are). */
int qrt_mc_back_due(qrt_mc_warn_t *w);

#endif
