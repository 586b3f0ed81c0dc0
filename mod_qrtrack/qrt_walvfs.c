/* qrt_walvfs: SQLite's WAL frames written in one system call a commit (see
 * qrt_walvfs.h). */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sqlite3.h>

#include "qrt_walvfs.h"

/* What one buffer holds: a commit of 30 pages (a batch of about 100 scans). Only a
 * connection that writes gets one, kept while its WAL is open. */
#define WALVFS_BUFFER  (128 * 1024)
/* File systems that write an overwritten block in place: once allocated, a block
 * takes no more space (ext2/3/4, XFS, tmpfs). Copy-on-write ones (btrfs, ZFS) may
 * need room for any write, so their WALs are written as SQLite writes them. */
#define WALVFS_EXT4    0xEF53
#define WALVFS_XFS     0x58465342
#define WALVFS_TMPFS   0x01021994

typedef struct walvfs_file walvfs_file;

struct walvfs_file {
    sqlite3_file base;          /* pMethods: walvfs_methods */
    sqlite3_file *real;         /* the wrapped VFS's file, right after this struct */
    walvfs_file *wal;           /* main database: its WAL while open */
    walvfs_file *db;            /* WAL: its main database, NULL once closed */
    const char *name;           /* WAL: its path (SQLite keeps it until the close) */
    int enabled;                /* main database: qrt_walvfs_enable'd */
    int exclusive;              /* main database: locked EXCLUSIVE (walvfs_lock) */
    int is_wal;
    int fd;                     /* WAL: a descriptor of our own to reserve space, or -1 */
    int len;                    /* bytes buffered, written at off */
    sqlite3_int64 off;
    sqlite3_int64 reserved;     /* the WAL is allocated up to here this transaction */
    char *buf;                  /* WALVFS_BUFFER bytes, allocated at the first write */
};

static sqlite3_vfs walvfs;
static sqlite3_vfs *walvfs_base;

/* ---- the buffer ------------------------------------------------------------------- */

static int walvfs_flush(walvfs_file *w)
{
    int n = w->len;

    if (n == 0) {
        return SQLITE_OK;
    }
    w->len = 0;
    return w->real->pMethods->xWrite(w->real, w->buf, n, w->off);
}

/* The frames of a commit, written before it is published. A failure here cannot be
 * returned (the shared-memory calls that end a commit have no error to give), so it
 * is tried once more; the reservation made when the buffer started leaves only an
 * I/O error, which SQLite would not have seen either (synchronous = NORMAL syncs
 * the WAL at checkpoints, not at commits). */
static void walvfs_publish(walvfs_file *db)
{
    walvfs_file *w = db->wal;

    if (w && w->len) {
        char *buf = w->buf;
        int n = w->len;
        sqlite3_int64 off = w->off;

        if (walvfs_flush(w) != SQLITE_OK) {
            w->real->pMethods->xWrite(w->real, buf, n, off);
        }
    }
    if (w) {
        /* A commit or a lock: the next transaction reserves again (the WAL may be
         * truncated between two, by this connection or another). */
        w->reserved = 0;
    }
}

/* Room for a buffer starting at off: 1 when the WAL's blocks are allocated through
 * its end. SQLite writes a WAL from its start without gaps, so the blocks below its
 * size are; past it, fallocate(2) allocates them (and extends the file: SQLite reads
 * a WAL only as far as its frames are valid). */
static int walvfs_reserve(walvfs_file *w, sqlite3_int64 off)
{
    sqlite3_int64 end = off + WALVFS_BUFFER, from;
    struct stat st;

    if (end <= w->reserved) {
        return 1;
    }
    if (fstat(w->fd, &st) != 0) {
        return 0;
    }
    if (end > st.st_size) {
        /* (the buffer's length and no more: a WAL's size is what an administrator
         * watches, and past journal_size_limit SQLite truncates it) */
        from = off < st.st_size ? off : st.st_size;
        if (fallocate(w->fd, 0, from, end - from) != 0) {
            return 0;
        }
        st.st_size = end;
    }
    w->reserved = st.st_size;
    return 1;
}

/* ---- the file's methods ------------------------------------------------------------- */

static int walvfs_close(sqlite3_file *f)
{
    walvfs_file *w = (walvfs_file *)f;
    int rc = walvfs_flush(w), rc2;

    if (w->is_wal && w->db) {
        w->db->wal = NULL;
    }
    if (!w->is_wal && w->wal) {
        w->wal->db = NULL;
    }
    rc2 = w->real->pMethods->xClose(w->real);
    if (w->fd >= 0) {
        /* (no lock is held on a WAL: closing this one drops none of SQLite's) */
        close(w->fd);
        w->fd = -1;
    }
    sqlite3_free(w->buf);
    w->buf = NULL;
    return rc != SQLITE_OK ? rc : rc2;
}

static int walvfs_read(sqlite3_file *f, void *p, int n, sqlite3_int64 off)
{
    walvfs_file *w = (walvfs_file *)f;
    int rc = walvfs_flush(w);

    return rc != SQLITE_OK ? rc : w->real->pMethods->xRead(w->real, p, n, off);
}

static int walvfs_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off)
{
    walvfs_file *w = (walvfs_file *)f;
    int rc;

    if (!w->is_wal) {
        return w->real->pMethods->xWrite(w->real, p, n, off);
    }
    if (w->len > 0 && off == w->off + w->len && w->len + n <= WALVFS_BUFFER) {
        memcpy(w->buf + w->len, p, n);
        w->len += n;
        return SQLITE_OK;
    }
    if ((rc = walvfs_flush(w)) != SQLITE_OK) {
        return rc;
    }
    /* A new buffer, where it fits, has memory and its place in the file is
     * reserved; anything else is written at once. */
    if (n < WALVFS_BUFFER && w->db && !w->db->exclusive && w->fd >= 0
        && (w->buf || (w->buf = sqlite3_malloc(WALVFS_BUFFER))) && walvfs_reserve(w, off)) {
        memcpy(w->buf, p, n);
        w->off = off;
        w->len = n;
        return SQLITE_OK;
    }
    return w->real->pMethods->xWrite(w->real, p, n, off);
}

static int walvfs_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    walvfs_file *w = (walvfs_file *)f;
    int rc = walvfs_flush(w);

    w->reserved = 0;
    return rc != SQLITE_OK ? rc : w->real->pMethods->xTruncate(w->real, size);
}

static int walvfs_sync(sqlite3_file *f, int flags)
{
    walvfs_file *w = (walvfs_file *)f;
    int rc = walvfs_flush(w);

    return rc != SQLITE_OK ? rc : w->real->pMethods->xSync(w->real, flags);
}

static int walvfs_size(sqlite3_file *f, sqlite3_int64 *size)
{
    walvfs_file *w = (walvfs_file *)f;
    int rc = walvfs_flush(w);

    return rc != SQLITE_OK ? rc : w->real->pMethods->xFileSize(w->real, size);
}

/* A main database locked EXCLUSIVE: in locking_mode EXCLUSIVE SQLite keeps its WAL
 * index in its own memory and makes no shared-memory call, so nothing would write a
 * buffer out at the commit. Its WAL is written as SQLite writes it meanwhile. */
static int walvfs_lock(sqlite3_file *f, int lock)
{
    walvfs_file *w = (walvfs_file *)f;
    int rc;

    if (lock == SQLITE_LOCK_EXCLUSIVE) {
        walvfs_publish(w);
    }
    rc = w->real->pMethods->xLock(w->real, lock);
    if (rc == SQLITE_OK && lock == SQLITE_LOCK_EXCLUSIVE) {
        w->exclusive = 1;
    }
    return rc;
}

static int walvfs_unlock(sqlite3_file *f, int lock)
{
    walvfs_file *w = (walvfs_file *)f;
    int rc = w->real->pMethods->xUnlock(w->real, lock);

    if (lock < SQLITE_LOCK_EXCLUSIVE) {
        w->exclusive = 0;
    }
    return rc;
}

static int walvfs_check_reserved(sqlite3_file *f, int *out)
{
    walvfs_file *w = (walvfs_file *)f;

    return w->real->pMethods->xCheckReservedLock(w->real, out);
}

static int walvfs_control(sqlite3_file *f, int op, void *arg)
{
    walvfs_file *w = (walvfs_file *)f;
    int rc = walvfs_flush(w);

    if (rc != SQLITE_OK) {
        return rc;
    }
    rc = w->real->pMethods->xFileControl(w->real, op, arg);
    if (op == SQLITE_FCNTL_VFSNAME && rc == SQLITE_OK) {
        /* (as SQLite's own shims do: this one's name before the wrapped one's) */
        char *name = *(char **)arg;

        *(char **)arg = sqlite3_mprintf("%s/%z", walvfs.zName, name);
    }
    return rc;
}

static int walvfs_sector(sqlite3_file *f)
{
    walvfs_file *w = (walvfs_file *)f;

    return w->real->pMethods->xSectorSize(w->real);
}

static int walvfs_device(sqlite3_file *f)
{
    walvfs_file *w = (walvfs_file *)f;

    return w->real->pMethods->xDeviceCharacteristics(w->real);
}

/* The shared-memory calls come on the main database's file: each first writes out
 * what its WAL holds. */
static int walvfs_shm_map(sqlite3_file *f, int pg, int size, int extend,
                          void volatile **out)
{
    walvfs_file *w = (walvfs_file *)f;

    if (w->real->pMethods->iVersion < 2) {
        return SQLITE_IOERR;
    }
    return w->real->pMethods->xShmMap(w->real, pg, size, extend, out);
}

static int walvfs_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    walvfs_file *w = (walvfs_file *)f;

    if (w->real->pMethods->iVersion < 2) {
        return SQLITE_IOERR;
    }
    walvfs_publish(w);
    return w->real->pMethods->xShmLock(w->real, offset, n, flags);
}

static void walvfs_shm_barrier(sqlite3_file *f)
{
    walvfs_file *w = (walvfs_file *)f;

    walvfs_publish(w);
    if (w->real->pMethods->iVersion >= 2) {
        w->real->pMethods->xShmBarrier(w->real);
    }
}

static int walvfs_shm_unmap(sqlite3_file *f, int del)
{
    walvfs_file *w = (walvfs_file *)f;

    if (w->real->pMethods->iVersion < 2) {
        return SQLITE_OK;
    }
    walvfs_publish(w);
    return w->real->pMethods->xShmUnmap(w->real, del);
}

static int walvfs_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **out)
{
    walvfs_file *w = (walvfs_file *)f;

    *out = NULL;
    if (w->real->pMethods->iVersion < 3 || walvfs_flush(w) != SQLITE_OK) {
        return SQLITE_OK;   /* (no mapping: SQLite reads instead) */
    }
    return w->real->pMethods->xFetch(w->real, off, n, out);
}

static int walvfs_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
    walvfs_file *w = (walvfs_file *)f;

    if (w->real->pMethods->iVersion < 3) {
        return SQLITE_OK;
    }
    return w->real->pMethods->xUnfetch(w->real, off, p);
}

static const sqlite3_io_methods walvfs_methods = {
    3, walvfs_close, walvfs_read, walvfs_write, walvfs_truncate, walvfs_sync,
    walvfs_size, walvfs_lock, walvfs_unlock, walvfs_check_reserved, walvfs_control,
    walvfs_sector, walvfs_device, walvfs_shm_map, walvfs_shm_lock, walvfs_shm_barrier,
    walvfs_shm_unmap, walvfs_fetch, walvfs_unfetch
};

/* ---- the VFS ------------------------------------------------------------------------ */

/* The WAL opened again, for fstat and fallocate alone. Never as 0, 1 or 2 (as SQLite
 * does): something writing to a closed stderr must not write into the WAL. */
static int walvfs_open_fd(const char *name)
{
    int fd = open(name, O_RDWR | O_CLOEXEC), high;

    if (fd >= 0 && fd < 3) {
        high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        close(fd);
        fd = high;
    }
    return fd;
}

/* A WAL whose writes are to be gathered: its descriptor, on a file system that
 * overwrites in place. */
static void walvfs_wal_setup(walvfs_file *w)
{
    struct statfs fs;

    w->fd = walvfs_open_fd(w->name);
    if (w->fd >= 0 && (fstatfs(w->fd, &fs) != 0
                       || (fs.f_type != WALVFS_EXT4 && fs.f_type != WALVFS_XFS
                           && fs.f_type != WALVFS_TMPFS))) {
        close(w->fd);
        w->fd = -1;
    }
}

static int walvfs_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f,
                       int flags, int *out)
{
    walvfs_file *w = (walvfs_file *)f;
    int rc;

    (void)vfs;
    memset(w, 0, sizeof(*w));
    w->fd = -1;
    w->real = (sqlite3_file *)(w + 1);
    rc = walvfs_base->xOpen(walvfs_base, name, w->real, flags, out);
    /* (SQLite closes a file whose pMethods is set, even when its open failed) */
    w->base.pMethods = w->real->pMethods ? &walvfs_methods : NULL;
    if (rc == SQLITE_OK && (flags & SQLITE_OPEN_WAL) && name) {
        sqlite3_file *db = sqlite3_database_file_object(name);

        w->is_wal = 1;
        w->name = name;
        if (db && db->pMethods == &walvfs_methods) {
            w->db = (walvfs_file *)db;
            w->db->wal = w;
            if (w->db->enabled) {
                walvfs_wal_setup(w);
            }
        }
    }
    return rc;
}

static int walvfs_delete(sqlite3_vfs *vfs, const char *name, int sync)
{
    (void)vfs;
    return walvfs_base->xDelete(walvfs_base, name, sync);
}

static int walvfs_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
    (void)vfs;
    return walvfs_base->xAccess(walvfs_base, name, flags, out);
}

static int walvfs_fullpath(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
    (void)vfs;
    return walvfs_base->xFullPathname(walvfs_base, name, n, out);
}

static void *walvfs_dlopen(sqlite3_vfs *vfs, const char *name)
{
    (void)vfs;
    return walvfs_base->xDlOpen(walvfs_base, name);
}

static void walvfs_dlerror(sqlite3_vfs *vfs, int n, char *out)
{
    (void)vfs;
    walvfs_base->xDlError(walvfs_base, n, out);
}

static void (*walvfs_dlsym(sqlite3_vfs *vfs, void *h, const char *sym))(void)
{
    (void)vfs;
    return walvfs_base->xDlSym(walvfs_base, h, sym);
}

static void walvfs_dlclose(sqlite3_vfs *vfs, void *h)
{
    (void)vfs;
    walvfs_base->xDlClose(walvfs_base, h);
}

static int walvfs_random(sqlite3_vfs *vfs, int n, char *out)
{
    (void)vfs;
    return walvfs_base->xRandomness(walvfs_base, n, out);
}

static int walvfs_sleep(sqlite3_vfs *vfs, int us)
{
    (void)vfs;
    return walvfs_base->xSleep(walvfs_base, us);
}

static int walvfs_time(sqlite3_vfs *vfs, double *out)
{
    (void)vfs;
    return walvfs_base->xCurrentTime(walvfs_base, out);
}

static int walvfs_error(sqlite3_vfs *vfs, int n, char *out)
{
    (void)vfs;
    return walvfs_base->xGetLastError(walvfs_base, n, out);
}

static int walvfs_time64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
    (void)vfs;
    return walvfs_base->xCurrentTimeInt64(walvfs_base, out);
}

int qrt_walvfs_register(void)
{
    sqlite3_vfs *base;

    if (walvfs_base) {
        return SQLITE_OK;
    }
    base = sqlite3_vfs_find(NULL);
    /* (the wrapped VFS must know shared memory and 64-bit time: unix does) */
    if (!base || base->iVersion < 2) {
        return SQLITE_ERROR;
    }
    walvfs_base = base;
    walvfs.iVersion = 2;
    walvfs.szOsFile = (int)sizeof(walvfs_file) + base->szOsFile;
    walvfs.mxPathname = base->mxPathname;
    walvfs.zName = "qrt-wal";
    walvfs.xOpen = walvfs_open;
    walvfs.xDelete = walvfs_delete;
    walvfs.xAccess = walvfs_access;
    walvfs.xFullPathname = walvfs_fullpath;
    walvfs.xDlOpen = walvfs_dlopen;
    walvfs.xDlError = walvfs_dlerror;
    walvfs.xDlSym = walvfs_dlsym;
    walvfs.xDlClose = walvfs_dlclose;
    walvfs.xRandomness = walvfs_random;
    walvfs.xSleep = walvfs_sleep;
    walvfs.xCurrentTime = walvfs_time;
    walvfs.xGetLastError = walvfs_error;
    walvfs.xCurrentTimeInt64 = walvfs_time64;
    return sqlite3_vfs_register(&walvfs, 1);
}

void qrt_walvfs_unregister(void)
{
    if (walvfs_base) {
        sqlite3_vfs_unregister(&walvfs);
        sqlite3_vfs_register(walvfs_base, 1);
        walvfs_base = NULL;
    }
}

int qrt_walvfs_enable(sqlite3 *h)
{
    sqlite3_file *f = NULL;
    walvfs_file *db;

    if (!h || sqlite3_file_control(h, "main", SQLITE_FCNTL_FILE_POINTER, &f) != SQLITE_OK
        || !f || f->pMethods != &walvfs_methods) {
        return 0;
    }
    db = (walvfs_file *)f;
    db->enabled = 1;
    if (db->wal && db->wal->fd < 0) {
        walvfs_wal_setup(db->wal);
    }
    return 1;
}
