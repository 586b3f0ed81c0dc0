/* mod_qrtrack_status: the module's section of mod_status's page.
 *
 * /server-status shows a table; /server-status?auto adds "QRTrack<Name>: value"
 * lines that monitoring reads: the queue of visits waiting for their commit, what
 * the committers did since the server started, SQLite's WAL and the rate limiter. */
#include "httpd.h"
#include "http_config.h"
#include "http_log.h"
#include "http_protocol.h"
#include "mod_status.h"
#include <apr_optional_hooks.h>
#include <apr_strings.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_config.h"
#include "mod_qrtrack_db.h"
#include "mod_qrtrack_rate.h"
#include "mod_qrtrack_ratemc.h"
#include "mod_qrtrack_scan.h"
#include "mod_qrtrack_spool.h"
#include "mod_qrtrack_stats.h"
#include "mod_qrtrack_status.h"
#include "qrt_version.h"

APLOG_USE_MODULE(qrtrack);

typedef struct {
    const char *name;               /* after "QRTrack" in ?auto */
    const char *label;              /* the HTML table's */
    const char *value;
} status_line;

static void status_add(apr_array_header_t *a, const char *name, const char *label,
                       const char *value)
{
    status_line *l = apr_array_push(a);

    l->name = name;
    l->label = label;
    l->value = value;
}

static void status_num(apr_array_header_t *a, apr_pool_t *p, const char *name,
                       const char *label, apr_uint64_t v)
{
    status_add(a, name, label, apr_psprintf(p, "%" APR_UINT64_T_FMT, v));
}

static apr_uint64_t status_read(const apr_uint64_t *v)
{
    return __atomic_load_n(v, __ATOMIC_RELAXED);
}

static int qrt_status_hook(request_rec *r, int flags)
{
    apr_array_header_t *a = apr_array_make(r->pool, 24, sizeof(status_line));
    qrt_stats_t *st = qrt_stats();
    qrt_queue_t *queue = qrt_scan_queue();
    apr_time_t now = apr_time_now();
    apr_uint32_t in_use = 0;
    const status_line *l;
    int i;

    status_add(a, "Version", "Version", QRTRACK_VERSION);
    status_add(a, "Database", "Database driver",
               qrt_config()->dbd_driver ? qrt_config()->dbd_driver : "none");
    if (queue) {
        qrt_queue_stats_t qs;

        qrt_queue_stats(queue, &qs);
        status_num(a, r->pool, "QueueCapacity", "Scan queue capacity (visits)", qs.capacity);
        status_num(a, r->pool, "QueueDepth", "Visits waiting for their commit",
                   qs.queued + qs.taken);
        status_num(a, r->pool, "QueueQueued", "Visits queued", qs.queued);
        status_num(a, r->pool, "QueueCommitting", "Visits being committed", qs.taken);
        status_num(a, r->pool, "Committer", "Committing child (pid, 0 = none)",
                   (apr_uint64_t)qs.committer);
        status_num(a, r->pool, "Batches", "Batches taken", qs.batches);
    }
    if (st) {
        status_num(a, r->pool, "Uptime", "Seconds since start",
                   (apr_uint64_t)apr_time_sec(now - st->started));
        status_num(a, r->pool, "VisitsCommitted", "Visits committed",
                   status_read(&st->visits));
        status_num(a, r->pool, "Commits", "Commits", status_read(&st->commits));
        status_num(a, r->pool, "LastBatch", "Visits in the last commit",
                   status_read(&st->last_batch));
        status_num(a, r->pool, "CommitRetries", "Commits run again after a conflict",
                   status_read(&st->commit_retries));
        status_num(a, r->pool, "CommitFailures", "Commits failed (scans answered 503)",
                   status_read(&st->commit_failures));
        status_num(a, r->pool, "QueueFull", "Scans refused, queue full (503)",
                   status_read(&st->queue_full));
        status_num(a, r->pool, "ScanTimeouts", "Scans answered 503 after QRTrackScanWait",
                   status_read(&st->scan_timeouts));
        status_num(a, r->pool, "ScanKeepAliveWaits", "Scans after which their connection "
                   "waited for its next request (QRTrackScanKeepAlive)",
                   status_read(&st->kept_waits));
        status_num(a, r->pool, "ScanKeepAliveEnded", "Such connections ended by the module "
                   "at KeepAliveTimeout or a stop", status_read(&st->kept_ended));
        if (qrt_dbd_dialect() && qrt_dbd_dialect()->embedded) {
            status_num(a, r->pool, "WALFrames", "WAL frames at the last checkpoint",
                       status_read(&st->wal_frames));
            status_num(a, r->pool, "WALFramesCopied", "WAL frames copied back then",
                       status_read(&st->wal_copied));
            status_num(a, r->pool, "Checkpoints", "WAL checkpoints",
                       status_read(&st->checkpoints));
            status_num(a, r->pool, "CheckpointKicks", "WAL checkpoint rounds asked for by "
                       "commits", status_read(&st->wal_kicks));
            status_num(a, r->pool, "CommitCheckpoints", "WAL checkpoints run by commits "
                       "(the checkpoint thread fell behind)",
                       status_read(&st->wal_commit_copies));
        }
        status_num(a, r->pool, "RateLimited", "API requests over their limit (429)",
                   status_read(&st->rate_limited));
        status_num(a, r->pool, "RateLimitRefusals", "API requests refused, rate table "
                   "full (503)", status_read(&st->rate_full));
        status_num(a, r->pool, "ScanBudgetRefusals", "Scans over QRTrackScanBudget (429)",
                   status_read(&st->budget_refused));
        status_num(a, r->pool, "ScanBudgetFull", "Scans let through uncounted, "
                   "QRTrackScanBudget's table full", status_read(&st->budget_full));
        status_num(a, r->pool, "VisitsPurged", "Visits erased by QRTrackVisitRetention",
                   status_read(&st->purged));
        status_num(a, r->pool, "PurgePasses", "QRTrackVisitRetention passes finished",
                   status_read(&st->purge_passes));
        status_num(a, r->pool, "WebhookBacklog", "Webhook events pending",
                   status_read(&st->webhook_backlog));
        status_num(a, r->pool, "WebhookDelivered", "Webhook events delivered",
                   status_read(&st->webhook_delivered));
        status_num(a, r->pool, "WebhookFailed", "Webhook events failed (every attempt spent, "
                   "or 410)", status_read(&st->webhook_failed));
        status_num(a, r->pool, "AggregatesSealed", "Report aggregate units of settled days "
                   "sealed", status_read(&st->sealed));
        status_num(a, r->pool, "WebhookDropped", "Webhook events dropped past "
                   "QRTrackWebhookOutboxLimit", status_read(&st->webhook_dropped));
    }
    {
        qrt_spool_status_t sp;

        qrt_spool_status(&sp);
        status_num(a, r->pool, "DatabaseReachable", "Database reachable (1) or not (0)",
                   (apr_uint64_t)sp.reachable);
        status_num(a, r->pool, "SpoolVisits", "Visits in this node's spool, waiting for "
                   "the database", sp.spooled);
        status_num(a, r->pool, "SpoolReplayed", "Spooled visits replayed into the "
                   "database", sp.replayed);
        status_num(a, r->pool, "SpoolVisitsTotal", "Visits spooled since start",
                   sp.spooled_total);
        status_num(a, r->pool, "SpoolRefused", "Spooled visits the database refused for "
                   "good, set aside in this node's spool (qrtrack-admin spool refused)",
                   sp.refused);
        status_num(a, r->pool, "SnapshotAnswers", "Codes answered from the snapshot",
                   sp.snapshot_answers);
        status_num(a, r->pool, "SnapshotWrites", "Codes written to the snapshot",
                   sp.snapshot_writes);
    }
    status_num(a, r->pool, "VisitRetention", "QRTrackVisitRetention (days, 0 = for ever)",
               (apr_uint64_t)qrt_config()->visit_retention);
    status_num(a, r->pool, "ScanBudget", "QRTrackScanBudget (scans a minute per client "
               "address, 0 = off)", (apr_uint64_t)qrt_config()->scan_budget);
    status_add(a, "RateLimitStore", "Rate-limit store",
               qrt_config()->rate_mc_list ? "memcache" : "shm");
    {
        apr_uint64_t fallbacks = 0;
        int up = 0;

        if (qrt_ratemc_status(&up, &fallbacks)) {
            status_num(a, r->pool, "RateLimitStoreUp", "memcached answers (0 = bypassed: "
                       "counting in shared memory)", (apr_uint64_t)up);
            status_num(a, r->pool, "RateLimitStoreFallbacks", "API requests counted in "
                       "shared memory while memcached was bypassed", fallbacks);
        }
    }
    status_num(a, r->pool, "RateLimitSlots", "Rate-limit slots", qrt_config()->rate_slots);
    if (qrt_rate_slots_in_use(now, &in_use)) {
        status_num(a, r->pool, "RateLimitSlotsInUse", "Rate-limit slots in use", in_use);
    }

    l = (const status_line *)a->elts;
    if (flags & AP_STATUS_SHORT) {
        for (i = 0; i < a->nelts; i++) {
            ap_rprintf(r, "QRTrack%s: %s\n", l[i].name, l[i].value);
        }
        return OK;
    }
    ap_rputs("<hr />\n<h2>mod_qrtrack</h2>\n", r);
    if (flags & AP_STATUS_NOTABLE) {
        for (i = 0; i < a->nelts; i++) {
            ap_rprintf(r, "%s: %s<br />\n", l[i].label, ap_escape_html(r->pool, l[i].value));
        }
        return OK;
    }
    ap_rputs("<table border=\"0\">\n", r);
    for (i = 0; i < a->nelts; i++) {
        ap_rprintf(r, "<tr><th align=\"left\">%s</th><td>%s</td></tr>\n", l[i].label,
                   ap_escape_html(r->pool, l[i].value));
    }
    ap_rputs("</table>\n", r);
    return OK;
}

void qrt_status_register(void)
{
    APR_OPTIONAL_HOOK(ap, status_hook, qrt_status_hook, NULL, NULL, APR_HOOK_MIDDLE);
}
