/* mod_qrtrack_ua.c: the user-agent regexes the scans parse with. */
#ifndef MOD_QRTRACK_UA_H
#define MOD_QRTRACK_UA_H

#include "httpd.h"
#include "qrt_ua.h"

/* post_config: QRTrackUserAgentRegexes (or uap-core's) loaded; an error, logged,
 * when it cannot be read. */
apr_status_t qrt_uadb_post_config(apr_pool_t *pconf, server_rec *s);
/* The loaded regexes (NULL before post_config). */
qrt_ua_db_t *qrt_uadb(void);

#endif
