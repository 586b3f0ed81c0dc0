/* mod_qrtrack_scan.c: the scan and click handlers and this child's writer. */
#ifndef MOD_QRTRACK_SCAN_H
#define MOD_QRTRACK_SCAN_H

#include "httpd.h"
#include "qrt_queue.h"

int qrt_scan_handler(request_rec *r);
void qrt_scan_child_init(apr_pool_t *pchild, server_rec *s);
apr_status_t qrt_scan_post_config(server_rec *s);
/* QRTrackScanWait in seconds (its default when not set). */
int qrt_scan_wait_seconds(void);
/* Every child forgets its cached codes: call after a tracker changes or goes. */
void qrt_scan_invalidate(void);
/* Webhooks were made or deleted: this server's scan writers read them again at once. */
void qrt_scan_webhooks_changed(void);
/* The server's queue, or NULL. */
qrt_queue_t *qrt_scan_queue(void);
/* Takes (lock 1) or gives back (0) the scan writers' mutex, for another writer of this
 * server's SQLite database (qrt_db_t.tx_lock); APR_SUCCESS when there is none. */
apr_status_t qrt_scan_writers_lock(int lock);

#endif
