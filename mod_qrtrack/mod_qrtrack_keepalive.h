/* mod_qrtrack_keepalive.c: a scan's keep-alive connection waits for its next request
 * even when every worker of its child is busy (event MPM). */
#ifndef MOD_QRTRACK_KEEPALIVE_H
#define MOD_QRTRACK_KEEPALIVE_H

#include "httpd.h"

/* r waited for its visit's commit: its connection waits for the next request as above. */
void qrt_keepalive_mark(request_rec *r);

void qrt_keepalive_child_init(apr_pool_t *pchild, server_rec *s);

/* The child stops: every waiting connection is ended now, none waits again. */
void qrt_keepalive_stopping(void);

void qrt_keepalive_register(void);

#endif
