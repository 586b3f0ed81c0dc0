/* mod_qrtrack_wal.c: this child's WAL checkpoint thread (SQLite only). */
#ifndef MOD_QRTRACK_WAL_H
#define MOD_QRTRACK_WAL_H

#include "httpd.h"
#include <apr_global_mutex.h>

/* Started before the writer; writers is the mutex the scan writers commit under. */
void qrt_wal_child_init(apr_pool_t *pchild, server_rec *s, apr_global_mutex_t *writers);
/* 1 when the thread runs: connections then leave checkpoints to it. */
int qrt_wal_running(void);

#endif
