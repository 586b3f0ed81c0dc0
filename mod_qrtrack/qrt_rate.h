/* qrt_rate: the per-token request counter table, kept in shared memory.
 *
 * Pure algorithm over a caller-supplied memory region; the caller serialises
 * access (the module holds a global mutex around qrt_rate_hit). Each token gets
 * a window that opens with its first request and lasts window_usec; at most
 * `limit` requests are admitted in it. Slots whose window has ended are free.
 *
 * Also the pure parts of the memcached store (QRTrackRateLimitStore memcache):
 * its server list, and the verdict for the n-th request of a window that both
 * stores share (qrt_rate_judge). */
#ifndef QRT_RATE_H
#define QRT_RATE_H

#include <apr.h>
#include <apr_network_io.h>
#include <apr_tables.h>
#include <apr_time.h>

typedef struct {
    apr_uint64_t key;           /* token id; 0 = never used */
    apr_int64_t window_start;   /* apr_time_t of the window's first request */
    apr_uint32_t count;         /* requests admitted in the window */
    apr_uint32_t limit;         /* the limit in force when last hit */
} qrt_rate_slot_t;

typedef struct {
    apr_uint32_t nslots;
    apr_uint32_t probe;         /* the longest probe sequence searched */
    qrt_rate_slot_t slots[1];
} qrt_rate_table_t;

typedef enum {
    QRT_RATE_OK = 0,            /* admitted and counted */
    QRT_RATE_LIMITED,           /* over the limit: answer 429 */
    QRT_RATE_FULL               /* no free slot near the key: refuse (503) */
} qrt_rate_verdict_t;

typedef struct {
    long limit;
    long remaining;             /* after this request */
    apr_int64_t reset;          /* epoch seconds at which the window ends */
    long retry_after;           /* seconds until a new request can pass (LIMITED/FULL) */
} qrt_rate_result_t;

/* Bytes needed for a table of nslots slots. */
apr_size_t qrt_rate_table_size(apr_uint32_t nslots);
/* Clears the region and sets it up for nslots slots. */
void qrt_rate_table_init(qrt_rate_table_t *t, apr_uint32_t nslots);
/* Counts one request of key (non-zero) against limit (> 0) at time now. */
qrt_rate_verdict_t qrt_rate_hit(qrt_rate_table_t *t, apr_uint64_t key, long limit,
                                apr_int64_t window_usec, apr_time_t now,
                                qrt_rate_result_t *res);
/* Slots holding a window still open at now (for status and tests). */
apr_uint32_t qrt_rate_active(const qrt_rate_table_t *t, apr_int64_t window_usec,
                             apr_time_t now);

/* The verdict for the n-th request (n >= 1, this one included) of a window that
 * opened at window_start, under limit (> 0): admitted while n <= limit. Both
 * stores decide with it, so their headers agree. */
qrt_rate_verdict_t qrt_rate_judge(apr_int64_t window_start, apr_uint64_t n, long limit,
                                  apr_int64_t window_usec, apr_time_t now,
                                  qrt_rate_result_t *res);

/* One memcached server of QRTrackRateLimitStore memcache. */
typedef struct {
    const char *host;
    apr_port_t port;
} qrt_rate_server_t;

#define QRT_RATE_MAX_SERVERS 64

/* Parses "HOST:PORT[,HOST:PORT...]" into *servers (qrt_rate_server_t). NULL, or
 * why not (naming the faulty part). */
const char *qrt_rate_servers_parse(apr_pool_t *p, const char *list,
                                   apr_array_header_t **servers);

#endif
