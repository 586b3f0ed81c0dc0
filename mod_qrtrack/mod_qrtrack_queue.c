/* mod_qrtrack_queue: the glue of the visits waiting for their commit (qrt_queue).
 *
 * The queue lives in httpd's shared memory, made once in the process pool so that
 * a graceful restart keeps it (and the visits waiting in it); its logic is the
 * core's qrt_queue, here given Linux's futexes and the module's log. */
#include "httpd.h"
#include "http_log.h"

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_queue.h"

APLOG_USE_MODULE(qrtrack);

/* The key names the meaning of the deadlines in the segment: a graceful restart into
 * a build whose deadlines are on another clock makes a segment of its own, since the
 * two cannot share one (builds before this key kept them on the wall clock). */
#define QUEUE_KEY      "qrtrack-queue-monotonic"
#define QUEUE_KEY_WALL "qrtrack-queue"

/* The OS seam: Linux's, with lines logged on the server given as logctx. */
static qrt_queue_os_t queue_os;

static void queue_log(void *ctx, void *logctx, int level, const char *msg)
{
    (void)ctx;
    ap_log_error(APLOG_MARK, level == QRT_QUEUE_LOG_ERR ? APLOG_ERR : APLOG_WARNING, 0,
                 (server_rec *)logctx, "%s", msg);
}

apr_status_t qrt_queue_create(server_rec *s, apr_uint32_t nslots, qrt_queue_t **out)
{
    apr_pool_t *pp = s->process->pool;
    apr_shm_t *shm = NULL;
    qrt_queue_t *q;
    apr_status_t rv;
    void *mem;

    queue_os = qrt_queue_os_linux;
    queue_os.log = queue_log;
    /* The handle is this generation's; the shared memory outlives it. */
    q = apr_pcalloc(s->process->pconf, sizeof(*q));
    /* A wall-clock build's segment stays with its children, which commit what they
     * queued there until they exit; this process lets go of its own mapping. */
    apr_pool_userdata_get((void **)&shm, QUEUE_KEY_WALL, pp);
    if (shm) {
        apr_pool_userdata_set(NULL, QUEUE_KEY_WALL, apr_pool_cleanup_null, pp);
        apr_shm_destroy(shm);
        shm = NULL;
    }
    /* Created once: a graceful restart keeps it (and the visits waiting in it). */
    apr_pool_userdata_get((void **)&shm, QUEUE_KEY, pp);
    if (shm) {
        mem = apr_shm_baseaddr_get(shm);
        if (qrt_queue_nslots(mem) != nslots) {
            ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, "QRT00053: QRTrackScanQueue "
                         "%u takes effect at the next full restart (now %u)",
                         nslots, qrt_queue_nslots(mem));
        }
        qrt_queue_attach(q, mem, &queue_os, s);
        *out = q;
        return APR_SUCCESS;
    }
    rv = apr_shm_create(&shm, qrt_queue_size(nslots), NULL, pp);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "QRT00054: cannot create shared "
                     "memory for %u waiting visits", nslots);
        return rv;
    }
    mem = apr_shm_baseaddr_get(shm);
    if (qrt_queue_init(mem, nslots) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, "QRT00055: cannot create the "
                     "queue's process-shared mutex");
        return APR_EGENERAL;
    }
    apr_pool_userdata_set(shm, QUEUE_KEY, apr_pool_cleanup_null, pp);
    qrt_queue_attach(q, mem, &queue_os, s);
    *out = q;
    return APR_SUCCESS;
}
