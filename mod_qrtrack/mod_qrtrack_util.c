/* mod_qrtrack_util: helpers of every glue file: throttled log lines and the
 * module's global mutexes. */
#include "httpd.h"
#include "http_config.h"
#include "http_log.h"
#include "util_mutex.h"
#include <apr_shm.h>
#include <apr_strings.h>
#include <string.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_util.h"
#include "qrt_clock.h"

APLOG_USE_MODULE(qrtrack);

#define RATIONS_KEY "qrtrack-log-rations"

static qrt_log_throttle_t own_rations[QRT_RATIONS];
static qrt_log_throttle_t *rations = own_rations;

qrt_log_throttle_t *qrt_ration(int which)
{
    return &rations[which];
}

void *qrt_shm_kept(server_rec *s, const char *key, apr_size_t size, int *fresh,
                   apr_status_t *rv)
{
    apr_pool_t *pp = s->process->pool;
    apr_shm_t *shm = NULL;

    *fresh = 0;
    *rv = APR_SUCCESS;
    apr_pool_userdata_get((void **)&shm, key, pp);
    if (shm && apr_shm_size_get(shm) < size) {
        shm = NULL;
    }
    if (!shm) {
        *rv = apr_shm_create(&shm, size, NULL, pp);
        if (*rv != APR_SUCCESS) {
            return NULL;
        }
        memset(apr_shm_baseaddr_get(shm), 0, size);
        apr_pool_userdata_set(shm, key, apr_pool_cleanup_null, pp);
        *fresh = 1;
    }
    return apr_shm_baseaddr_get(shm);
}

apr_status_t qrt_rations_post_config(server_rec *s)
{
    apr_status_t rv;
    int fresh;
    void *mem = qrt_shm_kept(s, RATIONS_KEY, sizeof(qrt_log_throttle_t) * QRT_RATIONS,
                             &fresh, &rv);

    if (!mem) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "QRT00144: cannot create shared "
                     "memory for the rations of log lines");
        return rv;
    }
    rations = mem;
    return APR_SUCCESS;
}

int qrt_log_due(qrt_log_throttle_t *t, apr_uint32_t *skipped)
{
    return qrt_log_due_every(t, QRT_LOG_EVERY, skipped);
}

int qrt_log_due_every(qrt_log_throttle_t *t, apr_interval_time_t every,
                      apr_uint32_t *skipped)
{
    apr_time_t now = qrt_clock_now(), seen = __atomic_load_n(&t->last, __ATOMIC_RELAXED);

    /* (0: never logged, whatever the clock says since the machine's boot. now < seen:
     * another thread took its time after this one and logged first, or, an interval or
     * more ahead, a time of another clock, never this one's) */
    if ((seen != 0 && qrt_clock_within(seen, now, every))
        || !__atomic_compare_exchange_n(&t->last, &seen, now, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
        __atomic_add_fetch(&t->skipped, 1, __ATOMIC_RELAXED);
        return 0;
    }
    *skipped = __atomic_exchange_n(&t->skipped, 0, __ATOMIC_RELAXED);
    return 1;
}

apr_status_t qrt_global_mutex(server_rec *s, const char *type, apr_global_mutex_t **m)
{
    apr_pool_t *pp = s->process->pool;
    const char *key = apr_pstrcat(pp, "qrtrack-mutex-", type, NULL);
    apr_global_mutex_t *found = NULL;
    apr_status_t rv;

    apr_pool_userdata_get((void **)&found, key, pp);
    if (!found) {
        rv = ap_global_mutex_create(&found, NULL, type, NULL, s, pp, 0);
        if (rv != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "QRT00009: cannot create the "
                         "%s mutex", type);
            return rv;
        }
        apr_pool_userdata_set(found, key, apr_pool_cleanup_null, pp);
    }
    *m = found;
    return APR_SUCCESS;
}
