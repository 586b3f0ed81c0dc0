/* mod_qrtrack_queue.c: visits waiting for their commit, shared by all children;
 * the queue itself and its functions are the core's (qrt_queue.h). */
#ifndef MOD_QRTRACK_QUEUE_H
#define MOD_QRTRACK_QUEUE_H

#include "httpd.h"
#include "qrt_queue.h"

/* In post_config: nslots visits may wait at once; kept across graceful restarts. */
apr_status_t qrt_queue_create(server_rec *s, apr_uint32_t nslots, qrt_queue_t **q);

#endif
