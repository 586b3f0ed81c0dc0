/* mod_qrtrack_util: helpers of every glue file: throttled log lines and the
 * module's global mutexes. */
#include "httpd.h"
#include "http_config.h"
#include "http_log.h"
#include "util_mutex.h"
#include <apr_strings.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_util.h"
#include "qrt_clock.h"

APLOG_USE_MODULE(qrtrack);

int qrt_log_due(qrt_log_throttle_t *t, apr_uint32_t *skipped)
{
    return qrt_log_due_every(t, QRT_LOG_EVERY, skipped);
}

int qrt_log_due_every(qrt_log_throttle_t *t, apr_interval_time_t every,
                      apr_uint32_t *skipped)
{
    apr_time_t now = qrt_clock_now(), seen = __atomic_load_n(&t->last, __ATOMIC_RELAXED);

    /* (0: never logged, whatever the clock says since the machine's boot; now < seen:
     * a time of another clock, never this one's) */
    if ((seen != 0 && now >= seen && now - seen < every)
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
