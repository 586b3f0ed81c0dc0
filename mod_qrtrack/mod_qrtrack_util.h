/* mod_qrtrack_util.c: throttled log lines, global mutexes. */
#ifndef MOD_QRTRACK_UTIL_H
#define MOD_QRTRACK_UTIL_H

#include <apr_global_mutex.h>
#include "httpd.h"

/* A line about a condition that may repeat for every request or
 * batch is logged once per QRT_LOG_EVERY per child: qrt_log_due says whether now,
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

/* A global mutex of the given (registered) type, created once in
 * the process pool so that it survives graceful restarts. */
apr_status_t qrt_global_mutex(server_rec *s, const char *type, apr_global_mutex_t **m);

#endif
