/* mod_qrtrack_whsend.c: the webhook delivery worker. */
#ifndef MOD_QRTRACK_WHSEND_H
#define MOD_QRTRACK_WHSEND_H

#include "httpd.h"

/* post_config: the worker's mutex (one worker delivers per server). */
apr_status_t qrt_whsend_post_config(server_rec *s);
/* child_init: starts this child's worker thread, stopped when pchild is cleared. */
void qrt_whsend_child_init(apr_pool_t *pchild, server_rec *s);

#endif
