/* qrt_dbfile: an SQLite database file private to the server's user and group.
 *
 * SQLite creates a database 0644 less the umask, and gives its -wal and -shm files
 * the database's mode: any local user could read the visitor key, the token digests
 * and the visits. So the module's start and qrtrack-admin create the file themselves
 * before SQLite opens it. No httpd header. */
#ifndef QRT_DBFILE_H
#define QRT_DBFILE_H

/* The mode of the database and of the files SQLite makes beside it. */
#define QRT_DBFILE_MODE 0640

/* path (an SQLite DBDParams): created QRT_DBFILE_MODE when it does not exist,
 * whatever the umask; an existing one, and its -wal and -shm files, lose any bit
 * beyond QRT_DBFILE_MODE (group write, anything for others). ":memory:", "" and
 * "file:" URIs are left to SQLite. 0, or an errno (EPERM: a file of another user's,
 * which only its owner or root can narrow). */
int qrt_dbfile_private(const char *path);

#endif
