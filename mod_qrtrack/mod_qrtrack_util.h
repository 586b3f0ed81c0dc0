/* mod_qrtrack_util.c: throttled log lines, global mutexes. */
#ifndef MOD_QRTRACK_UTIL_H
#define MOD_QRTRACK_UTIL_H

#include <apr_global_mutex.h>
#include "httpd.h"

/* A line about a condition that may repeat for every request or
 * batch is logged once per QRT_LOG_EVERY: qrt_log_due says whether now,
 * and how many were left out since the last one (*skipped). */
#define QRT_LOG_EVERY apr_time_from_sec(10)
typedef struct {
    apr_time_t last;
    apr_uint32_t skipped;
} qrt_log_throttle_t;
int qrt_log_due(qrt_log_throttle_t *t, apr_uint32_t *skipped);
/* The same, once per every: a condition already said and bound to last (the database
 * refusing writes for hours) every QRT_LOG_QUIET. */
#define QRT_LOG_QUIET apr_time_from_sec(300)
int qrt_log_due_every(qrt_log_throttle_t *t, apr_interval_time_t every,
                      apr_uint32_t *skipped);

/* The rations of the module's throttled lines, one of each for the server: they are
 * in shared memory, so that a condition every child meets (the database away, a full
 * disk, a refused webhook) is said once per QRT_LOG_EVERY by the node, not once by each
 * child, and the count of lines left out is the node's. Before post_config (and in a
 * process that never ran it) each process has its own. */
enum {
    QRT_R_DB_LIMIT, QRT_R_DB_REFUSED, QRT_R_HEALTH, QRT_R_HTTP_TIMEOUT, QRT_R_HTTP_ERROR,
    QRT_R_BUDGET, QRT_R_QUEUE_FULL, QRT_R_QUEUE_TIMEOUT, QRT_R_COMMIT, QRT_R_COMMIT_QUIET,
    QRT_R_PURGE, QRT_R_SEAL, QRT_R_LOOKUP, QRT_R_UNKNOWN, QRT_R_CAPPED, QRT_R_READ_ONLY,
    QRT_R_LOCKED, QRT_R_WEBHOOK, QRT_R_WEBHOOK_DROP, QRT_R_SNAP, QRT_R_SPOOL, QRT_R_REPLAY,
    QRT_R_REFUSED, QRT_R_SCHEMA, QRT_R_WAL, QRT_R_WH_DB, QRT_R_WH_DB_QUIET, QRT_R_WH_DISABLED,
    QRT_R_WH_BAD, QRT_R_SQLITE,
    QRT_RATIONS
};
qrt_log_throttle_t *qrt_ration(int which);
/* The shared rations, made once in the process pool (kept over graceful restarts). */
apr_status_t qrt_rations_post_config(server_rec *s);

/* Anonymous shared memory of at least size bytes, made once in the process pool under
 * key so that it outlives graceful restarts (a smaller one, kept from a build that
 * needed less, is made anew): its address, *fresh set when it was just made (zeroed).
 * NULL when it cannot be made (rv says why). */
void *qrt_shm_kept(server_rec *s, const char *key, apr_size_t size, int *fresh,
                   apr_status_t *rv);

/* A global mutex of the given (registered) type, created once in
 * the process pool so that it survives graceful restarts. */
apr_status_t qrt_global_mutex(server_rec *s, const char *type, apr_global_mutex_t **m);

#endif
