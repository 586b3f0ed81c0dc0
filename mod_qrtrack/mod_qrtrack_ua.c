/* mod_qrtrack_ua: the user-agent regexes (QRTrackUserAgentRegexes), loaded once in
 * post_config; every scan parses its User-Agent with them. */
#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_config.h"
#include "mod_qrtrack_ua.h"

APLOG_USE_MODULE(qrtrack);

#define QRT_DEFAULT_UA_REGEXES "/usr/share/uap-core/regexes.yaml"

/* In the configuration pool; read-only once post_config has loaded it. */
static qrt_ua_db_t *ua_db;

apr_status_t qrt_uadb_post_config(apr_pool_t *pconf, server_rec *s)
{
    const char *path = qrt_config()->ua_regexes ? qrt_config()->ua_regexes
                                                : QRT_DEFAULT_UA_REGEXES;
    const char *err = NULL;

    /* httpd's first pass over the configuration at start-up only checks it (the second
     * builds the server): the regexes are compiled, not for the JIT, which takes most
     * of the load's time */
    ua_db = qrt_ua_load_ex(pconf, path,
                           ap_state_query(AP_SQ_MAIN_STATE) != AP_SQ_MS_CREATE_PRE_CONFIG,
                           &err);
    if (!ua_db) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, "QRT00008: "
                     "QRTrackUserAgentRegexes %s: %s", path, err ? err : "");
        return APR_EGENERAL;
    }
    return APR_SUCCESS;
}

qrt_ua_db_t *qrt_uadb(void)
{
    return ua_db;
}
