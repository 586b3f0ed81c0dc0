/* qrt_schema: versioned schema migrations, embedded from sql/ at build time. */
#ifndef QRT_SCHEMA_H
#define QRT_SCHEMA_H

#include <apr_pools.h>
#include <apr_dbd.h>

#include "qrt_token.h"

typedef struct {
    int version;        /* the schema version this file brings the database to */
    const char *name;   /* file name in sql/ */
    const char *sql;    /* statements, each ending with ';' at the end of a line */
} qrt_migration_t;

/* Every migration in sql/, in order, ended by an entry whose name is NULL. */
extern const qrt_migration_t qrt_migrations[];

/* The newest schema version this build knows. */
int qrt_schema_latest(void);

/* What this build asks of a database: a hash of every migration and every statement
 * (each backend's text). Two builds with the same one run on the same schema. */
apr_uint64_t qrt_schema_build_id(void);

/* What a node keeps of its last check of the database, to start without it (see
 * mod_qrtrack_db.c): the build id and the visitor key, as one line of text. parse:
 * 0, or -1 for a text that is not one (then *build and *key are left as they were). */
char *qrt_schema_memo_format(apr_pool_t *p, apr_uint64_t build, const qrt_visitor_key_t *key);
int qrt_schema_memo_parse(const char *text, apr_uint64_t *build, qrt_visitor_key_t *key);

/* The database's schema version, 0 for an empty database, -1 when it cannot be
 * read (a busy database must not look empty). */
int qrt_schema_version(apr_pool_t *p, const apr_dbd_driver_t *driver, apr_dbd_t *handle);

/* Runs a PRAGMA (or any statement) that may answer with rows, reading them. */
void qrt_schema_pragma(apr_pool_t *p, const apr_dbd_driver_t *driver, apr_dbd_t *handle,
                       const char *sql);

/* Brings the database to the newest version, one transaction per migration, and
 * turns on WAL for SQLite. *from and *to (optional) receive the versions before and
 * after. Returns NULL on success or an error message allocated in p. */
const char *qrt_schema_migrate(apr_pool_t *p, const apr_dbd_driver_t *driver,
                               apr_dbd_t *handle, int *from, int *to);

#endif
