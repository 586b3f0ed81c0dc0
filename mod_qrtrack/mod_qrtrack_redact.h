/* mod_qrtrack_redact.c: ?api_token= values out of the request line, logs and mod_status. */
#ifndef MOD_QRTRACK_REDACT_H
#define MOD_QRTRACK_REDACT_H

#include <apr_pools.h>

void qrt_redact_register(void);
/* referer (a Referer header's value, or one carried by the password form) with every
 * api_token value after its first '?' redacted, as a request's Referer header is; the
 * same pointer when it holds none. */
const char *qrt_redact_referer(apr_pool_t *p, const char *referer);

#endif
