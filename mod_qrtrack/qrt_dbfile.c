/* qrt_dbfile: an SQLite database file private to the server (see qrt_dbfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qrt_dbfile.h"

/* fd's mode without the bits beyond QRT_DBFILE_MODE. */
static int dbfile_narrow(int fd)
{
    struct stat st;

    if (fstat(fd, &st) != 0) {
        return errno;
    }
    if (S_ISREG(st.st_mode) && (st.st_mode & 07777 & ~QRT_DBFILE_MODE)
        && fchmod(fd, st.st_mode & 07777 & QRT_DBFILE_MODE) != 0) {
        return errno;
    }
    return 0;
}

int qrt_dbfile_private(const char *path)
{
    static const char *const suffix[] = { "-wal", "-shm" };
    char side[4096];
    int fd, rc, i;

    if (!path[0] || !strcmp(path, ":memory:") || !strncmp(path, "file:", 5)) {
        return 0;
    }
    /* Read-only is enough to fchmod a file of one's own (a reader of the database
     * may have no write access); the mode on creation is the umask's to narrow, so
     * it is fchmod'ed too. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0 && errno == ENOENT) {
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
                  QRT_DBFILE_MODE);
        if (fd < 0 && errno == EEXIST) {
            fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        }
    }
    if (fd < 0) {
        return errno;
    }
    rc = dbfile_narrow(fd);
    close(fd);
    for (i = 0; i < 2 && !rc; i++) {
        if (snprintf(side, sizeof(side), "%s%s", path, suffix[i]) >= (int)sizeof(side)) {
            return ENAMETOOLONG;
        }
        fd = open(side, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
            if (errno != ENOENT) {
                rc = errno;
            }
            continue;
        }
        rc = dbfile_narrow(fd);
        close(fd);
    }
    return rc;
}
