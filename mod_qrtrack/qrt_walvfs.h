/* qrt_walvfs: SQLite's WAL frames written in one system call a commit (no database,
 * no httpd).
 *
 * SQLite writes each frame of a commit to the WAL in two pwrite calls, its 24-byte
 * header and then its page, so a commit of 16 pages costs 32 system calls, each
 * taking the file's locks and touching one or two page-cache pages. This VFS wraps
 * the default one ("unix") and gathers a write transaction's consecutive WAL writes
 * in a buffer, written in one call before anything can see them. It does so for the
 * connections it is asked to (qrt_walvfs_enable: the module's and qrtrack-admin's);
 * those of any other library in the process (httpd's other modules) pass through it
 * to "unix" unchanged. A WAL's writes are gathered:
 *   - before SQLite publishes the commit: the first shared-memory call on the
 *     database file after the frames (the barrier between the two copies of the WAL
 *     index header, or a lock), so a reader that accepts the new header finds every
 *     frame in the file;
 *   - before any other call on the WAL file (a read, a size, a truncation, a sync, a
 *     close), or a write that does not follow the buffer, or when it is full.
 * The blocks a buffer will be written to are allocated (fallocate(2)) when it starts,
 * so the deferred write only overwrites allocated blocks; where that cannot be had
 * (no room: SQLite's own error from a plain write follows; a copy-on-write file
 * system, which may need room for any write) the WAL is written as SQLite writes it.
 * A connection in locking_mode EXCLUSIVE (which makes no shared-memory call) has its
 * WAL written as SQLite writes it while its database is locked so. Every other file,
 * and every other call, goes straight to the wrapped VFS. */
#ifndef QRT_WALVFS_H
#define QRT_WALVFS_H

#include <sqlite3.h>

/* Registers the VFS "qrt-wal" as SQLite's default, wrapping the default before it
 * (once a process; again is harmless). SQLITE_OK or SQLite's error. Call after any
 * sqlite3_config(): registering starts SQLite. */
int qrt_walvfs_register(void);
/* The VFS wrapped becomes the default again. For a module about to be unloaded (its
 * code, this VFS's, goes away with it); its connections must be closed first. */
void qrt_walvfs_unregister(void);
/* The WAL writes of connection h (its main database) gathered from now on: 1, or 0
 * when h was not opened through this VFS (registered after it, or another VFS named). */
int qrt_walvfs_enable(sqlite3 *h);

#endif
