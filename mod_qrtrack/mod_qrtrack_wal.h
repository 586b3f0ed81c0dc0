/* mod_qrtrack_wal.c: this child's WAL checkpoint thread (SQLite only). */
#ifndef MOD_QRTRACK_WAL_H
#define MOD_QRTRACK_WAL_H

#include "httpd.h"
#include <apr_dbd.h>
#include <apr_global_mutex.h>

/* Started before the writer; writers is the mutex the scan writers commit under. */
void qrt_wal_child_init(apr_pool_t *pchild, server_rec *s, apr_global_mutex_t *writers);
/* 1 when the thread runs: connections then leave checkpoints to it. */
int qrt_wal_running(void);
/* While the thread runs, an SQLite connection of this child (driver and handle of
 * apr_dbd) wakes it after a commit that made the WAL long, and copies the WAL itself
 * past QRT_WAL_FALLBACK_FRAMES. 0 when set; -1 when the thread does not run. */
int qrt_wal_hook(const apr_dbd_driver_t *driver, apr_dbd_t *handle);
/* While the thread runs, a commit that leaves the WAL longer than this many frames
 * (6 MB of 4 KB pages) copies it back itself: the thread fell behind (it skips a
 * round while another child's thread copies, and commits can add a few MB between
 * two rounds), and the WAL must stay below journal_size_limit's 8 MB. */
#define QRT_WAL_FALLBACK_FRAMES 1536

#endif
