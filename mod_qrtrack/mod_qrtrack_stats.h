/* mod_qrtrack_stats.c: the server's counters, shown by mod_status. */
#ifndef MOD_QRTRACK_STATS_H
#define MOD_QRTRACK_STATS_H

#include <apr_time.h>

/* The server's counters since it started (shared memory made by mod_qrtrack_scan.c,
 * kept across graceful restarts), shown by mod_status (mod_qrtrack_status.c).
 * Updated with atomic adds; read without a lock. */
typedef struct {
    apr_time_t started;             /* when the shared memory was made */
    apr_uint64_t visits;            /* visits committed */
    apr_uint64_t commits;           /* transactions committed */
    apr_uint64_t commit_failures;   /* batches that answered 503 */
    apr_uint64_t commit_retries;    /* conflicts run again (PostgreSQL) */
    apr_uint64_t last_batch;        /* visits of the last commit */
    apr_uint64_t queue_full;        /* scans answered 503: queue full */
    apr_uint64_t scan_timeouts;     /* scans answered 503: no commit in QRTrackScanWait */
    apr_uint64_t wal_frames;        /* SQLite: WAL length at the last checkpoint */
    apr_uint64_t wal_copied;        /* and how much of it was copied back */
    apr_uint64_t checkpoints;       /* checkpoints run */
    apr_uint64_t rate_limited;      /* API requests answered 429 */
    apr_uint64_t rate_full;         /* API requests refused: rate table full */
    apr_uint64_t budget_refused;    /* scans answered 429: QRTrackScanBudget */
    apr_uint64_t budget_full;       /* scans let through: budget table full */
    apr_uint64_t purged;            /* visits erased by QRTrackVisitRetention */
    apr_uint64_t purge_passes;      /* its passes finished */
    apr_uint64_t sealed;            /* report aggregate units sealed by the writers */
    apr_uint64_t webhook_dropped;   /* webhook events dropped by QRTrackWebhookOutboxLimit */
    apr_uint64_t webhook_backlog;   /* webhook events pending, as the worker last counted */
    apr_uint64_t webhook_delivered; /* webhook events delivered (2xx) */
    apr_uint64_t webhook_failed;    /* webhook events failed (retries spent, or 410) */
    apr_uint64_t wal_kicks;         /* SQLite: checkpoint rounds commits asked for */
    apr_uint64_t wal_commit_copies; /* SQLite: checkpoints commits ran themselves */
    apr_uint64_t kept_waits;        /* scans after which their connection was kept waiting
                                     * for its next request (QRTrackScanKeepAlive) */
    apr_uint64_t kept_ended;        /* such connections ended by the module (at
                                     * KeepAliveTimeout, or the child's stop) */
} qrt_stats_t;

/* The counters, or NULL before post_config made them. */
qrt_stats_t *qrt_stats(void);
/* Hands the counters' shared memory over (mod_qrtrack_scan.c, at post_config). */
void qrt_stats_attach(qrt_stats_t *st);
#define QRT_STAT_ADD(field, n) do {                                              \
        qrt_stats_t *st_ = qrt_stats();                                          \
        if (st_) {                                                               \
            __atomic_add_fetch(&st_->field, (apr_uint64_t)(n), __ATOMIC_RELAXED); \
        }                                                                        \
    } while (0)
#define QRT_STAT_SET(field, v) do {                                              \
        qrt_stats_t *st_ = qrt_stats();                                          \
        if (st_) {                                                               \
            __atomic_store_n(&st_->field, (apr_uint64_t)(v), __ATOMIC_RELAXED);  \
        }                                                                        \
    } while (0)

#endif
