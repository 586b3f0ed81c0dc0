/* qrt_spool: the node's spool of visits and snapshot of codes (see qrt_spool.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sqlite3.h>
#include <apr_strings.h>
#include <apr_time.h>

#include "qrt_spool.h"
#include "qrt_visitpack.h"

/* A packed visit: what a slot of the scan queue holds at most. */
#define SPOOL_PACK_MAX 8192
#define SPOOL_BUSY_MS  2000

struct qrt_spool {
    sqlite3 *db;
    qrt_spool_kind_t kind;
    char node[17];
    char error[256];
    int damaged;                    /* an error said the file is damaged */
};

static const char *const spool_schema[] = {
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS visits (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
    "data BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS refused (seq INTEGER PRIMARY KEY, data BLOB NOT NULL, "
    "why TEXT NOT NULL, at INTEGER NOT NULL)",
    NULL
};

static const char *const snap_schema[] = {
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS codes (code TEXT PRIMARY KEY, tracker_id INTEGER NOT NULL, "
    "url TEXT NOT NULL, gen INTEGER NOT NULL, route TEXT) WITHOUT ROWID",
    NULL
};

static apr_status_t spool_fail(qrt_spool_t *s, const char *what)
{
    int rc = s->db ? sqlite3_errcode(s->db) & 0xff : SQLITE_OK;

    apr_snprintf(s->error, sizeof(s->error), "%s: %s", what,
                 s->db ? sqlite3_errmsg(s->db) : "not open");
    if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB) {
        s->damaged = 1;
    }
    return APR_EGENERAL;
}

const char *qrt_spool_error(qrt_spool_t *s)
{
    return s->error[0] ? s->error : "no error";
}

int qrt_spool_damaged(const qrt_spool_t *s)
{
    return s && s->damaged;
}

apr_status_t qrt_spool_set_aside(apr_pool_t *p, const char *path, apr_int64_t stamp,
                                 const char **aside)
{
    static const char *const ext[] = { "-wal", "-shm", "" };
    const char *to = apr_psprintf(p, "%s.damaged-%" APR_INT64_T_FMT, path, stamp);
    int i;

    *aside = to;
    /* (the log and the shared memory first: a file without its log reads as it was
     * before the log's last commits) */
    for (i = 0; i < 3; i++) {
        const char *from = apr_pstrcat(p, path, ext[i], NULL);

        if (rename(from, apr_pstrcat(p, to, ext[i], NULL)) != 0 && (errno != ENOENT || !*ext[i])) {
            return APR_FROM_OS_ERROR(errno);
        }
    }
    return APR_SUCCESS;
}

static apr_status_t spool_close(void *data)
{
    qrt_spool_t *s = data;

    if (s->db) {
        sqlite3_close_v2(s->db);
        s->db = NULL;
    }
    return APR_SUCCESS;
}

static int spool_exec(qrt_spool_t *s, const char *sql)
{
    return sqlite3_exec(s->db, sql, NULL, NULL, NULL);
}

/* One statement, prepared for this call (the files' statements are few and rare
 * next to the database's: a statement cache would be more code than it saves). */
static sqlite3_stmt *spool_prepare(qrt_spool_t *s, const char *sql)
{
    sqlite3_stmt *st = NULL;

    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        spool_fail(s, "prepare");
        return NULL;
    }
    return st;
}

/* Reads the node id into s->node: *found 0 when the file has none yet. */
static apr_status_t spool_node_read(qrt_spool_t *s, int *found)
{
    sqlite3_stmt *st = spool_prepare(s, "SELECT value FROM meta WHERE name = 'node'");
    int rc;

    *found = 0;
    if (!st) {
        return APR_EGENERAL;
    }
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_bytes(st, 0) == 16) {
        memcpy(s->node, sqlite3_column_text(st, 0), 16);
        s->node[16] = '\0';
        *found = 1;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? APR_SUCCESS
                                                 : spool_fail(s, "read the node id");
}

/* The node id, made from 8 random bytes the first time. */
static apr_status_t spool_node_id(qrt_spool_t *s)
{
    unsigned char raw[8];
    sqlite3_stmt *st;
    char hex[17];
    int found = 0, rc, i, fd;

    if (spool_node_read(s, &found) != APR_SUCCESS || found) {
        return found ? APR_SUCCESS : APR_EGENERAL;
    }
    fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, raw, sizeof(raw)) != (ssize_t)sizeof(raw)) {
        if (fd >= 0) {
            close(fd);
        }
        apr_snprintf(s->error, sizeof(s->error), "cannot read /dev/urandom");
        return APR_EGENERAL;
    }
    close(fd);
    for (i = 0; i < 8; i++) {
        apr_snprintf(hex + 2 * i, 3, "%02x", raw[i]);
    }
    st = spool_prepare(s, "INSERT OR IGNORE INTO meta (name, value) VALUES ('node', ?)");
    if (!st) {
        return APR_EGENERAL;
    }
    sqlite3_bind_text(st, 1, hex, 16, SQLITE_STATIC);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        return spool_fail(s, "write the node id");
    }
    /* Two processes may have raced to make it: the one kept is the one stored. */
    if (spool_node_read(s, &found) != APR_SUCCESS || !found) {
        return found ? APR_SUCCESS : spool_fail(s, "read the node id back");
    }
    return APR_SUCCESS;
}

int qrt_spool_is_spool(const char *path, const char **why)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int n = 0;

    *why = "it cannot be read as an SQLite database";
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK
        && sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' "
                              "AND name IN ('meta', 'visits', 'refused')", -1, &st, NULL)
           == SQLITE_OK
        && sqlite3_step(st) == SQLITE_ROW) {
        n = sqlite3_column_int(st, 0);
        *why = n == 3 ? NULL : "it has not the tables of a node's spool";
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n == 3;
}

apr_status_t qrt_spool_open(apr_pool_t *p, const char *path, qrt_spool_kind_t kind,
                            qrt_spool_t **out, const char **err)
{
    qrt_spool_t *s = apr_pcalloc(p, sizeof(*s));
    const char *const *ddl = kind == QRT_SPOOL_VISITS ? spool_schema : snap_schema;
    int fd, i;

    *out = NULL;
    s->kind = kind;
    /* Made 0640 before SQLite opens it: SQLite gives its -wal and -shm files the
     * database file's mode. */
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0) {
        *err = apr_psprintf(p, "cannot open %s: %s", path, strerror(errno));
        return APR_FROM_OS_ERROR(errno);
    }
    close(fd);
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL)
        != SQLITE_OK) {
        *err = apr_psprintf(p, "cannot open %s: %s", path,
                            s->db ? sqlite3_errmsg(s->db) : "out of memory");
        spool_close(s);
        return APR_EGENERAL;
    }
    apr_pool_cleanup_register(p, s, spool_close, apr_pool_cleanup_null);
    sqlite3_busy_timeout(s->db, SPOOL_BUSY_MS);
    if (spool_exec(s, "PRAGMA journal_mode = WAL") != SQLITE_OK
        || spool_exec(s, kind == QRT_SPOOL_VISITS ? "PRAGMA synchronous = FULL"
                                                  : "PRAGMA synchronous = NORMAL")
           != SQLITE_OK) {
        spool_fail(s, "set up");
        *err = apr_psprintf(p, "%s: %s", path, s->error);
        return s->damaged ? QRT_SPOOL_EDAMAGED : APR_EGENERAL;
    }
    /* A snapshot written before codes had their routing is started again: its
     * numbers (meta) go with it, so the next sweep reads every code afresh. */
    if (kind == QRT_SPOOL_SNAPSHOT
        && spool_exec(s, "SELECT route FROM codes LIMIT 0") != SQLITE_OK
        && spool_exec(s, "SELECT 1 FROM codes LIMIT 0") == SQLITE_OK
        && (spool_exec(s, "DROP TABLE codes") != SQLITE_OK
            || spool_exec(s, "DELETE FROM meta") != SQLITE_OK)) {
        spool_fail(s, "start its snapshot again");
        *err = apr_psprintf(p, "%s: %s", path, s->error);
        return s->damaged ? QRT_SPOOL_EDAMAGED : APR_EGENERAL;
    }
    for (i = 0; ddl[i]; i++) {
        if (spool_exec(s, ddl[i]) != SQLITE_OK) {
            spool_fail(s, "create its tables");
            *err = apr_psprintf(p, "%s: %s", path, s->error);
            return s->damaged ? QRT_SPOOL_EDAMAGED : APR_EGENERAL;
        }
    }
    if (kind == QRT_SPOOL_VISITS && spool_node_id(s) != APR_SUCCESS) {
        *err = apr_psprintf(p, "%s: %s", path, s->error);
        return s->damaged ? QRT_SPOOL_EDAMAGED : APR_EGENERAL;
    }
    *out = s;
    return APR_SUCCESS;
}

const char *qrt_spool_node(qrt_spool_t *s)
{
    return s->node;
}

static apr_status_t spool_change(qrt_spool_t *s, const char *sql, const char *t, ...);
static apr_status_t spool_int(qrt_spool_t *s, const char *sql, const char *arg,
                              apr_int64_t *v);

/* The meta rows of the visits of a commit whose answer was lost (qrt_spool_append). */
static apr_status_t spool_live_put(qrt_spool_t *s, apr_int64_t token, int n)
{
    apr_int64_t upto = (apr_int64_t)sqlite3_last_insert_rowid(s->db);
    char num[3][32];

    apr_snprintf(num[0], sizeof(num[0]), "%" APR_INT64_T_FMT, token);
    apr_snprintf(num[1], sizeof(num[1]), "%" APR_INT64_T_FMT, upto - n + 1);
    apr_snprintf(num[2], sizeof(num[2]), "%" APR_INT64_T_FMT, upto);
    return spool_change(s, "INSERT INTO meta (name, value) VALUES ('live_token', ?), "
                        "('live_from', ?), ('live_upto', ?) ON CONFLICT (name) DO UPDATE "
                        "SET value = excluded.value", "sss", num[0], num[1], num[2]);
}

apr_status_t qrt_spool_append(qrt_spool_t *s, const qrt_visit_t *v, int n, apr_int64_t live)
{
    char buf[SPOOL_PACK_MAX];
    sqlite3_stmt *st;
    int i, rc = SQLITE_DONE;

    if (spool_exec(s, "BEGIN IMMEDIATE") != SQLITE_OK) {
        return spool_fail(s, "begin");
    }
    st = spool_prepare(s, "INSERT INTO visits (data) VALUES (?)");
    for (i = 0; st && i < n && rc == SQLITE_DONE; i++) {
        apr_size_t len = qrt_visit_pack(buf, sizeof(buf), &v[i]);

        if (len == 0) {
            apr_snprintf(s->error, sizeof(s->error), "a visit could not be packed");
            break;
        }
        sqlite3_bind_blob(st, 1, buf, (int)len, SQLITE_STATIC);
        rc = sqlite3_step(st);
        sqlite3_reset(st);
    }
    if (st) {
        sqlite3_finalize(st);
    }
    if (!st || i < n || rc != SQLITE_DONE) {
        if (st && rc != SQLITE_DONE) {
            spool_fail(s, "append");
        }
        spool_exec(s, "ROLLBACK");
        return APR_EGENERAL;
    }
    /* (AUTOINCREMENT: the batch's sequence numbers follow each other) */
    if (live && n > 0 && spool_live_put(s, live, n) != APR_SUCCESS) {
        spool_exec(s, "ROLLBACK");
        return APR_EGENERAL;
    }
    if (spool_exec(s, "COMMIT") != SQLITE_OK) {
        spool_fail(s, "commit");
        spool_exec(s, "ROLLBACK");
        return APR_EGENERAL;
    }
    return APR_SUCCESS;
}

apr_status_t qrt_spool_live(qrt_spool_t *s, apr_int64_t *token, apr_int64_t *from,
                            apr_int64_t *upto)
{
    const char *sql = "SELECT CAST(value AS INTEGER) FROM meta WHERE name = ?";
    apr_status_t rv = spool_int(s, sql, "live_token", token);

    if (rv == APR_SUCCESS) {
        rv = spool_int(s, sql, "live_from", from);
    }
    if (rv == APR_SUCCESS) {
        rv = spool_int(s, sql, "live_upto", upto);
    }
    if (rv != APR_SUCCESS) {
        *token = *from = *upto = 0;
    }
    return rv;
}

/* The first column of the first row of sql (one optional text argument) in *v. */
static apr_status_t spool_int(qrt_spool_t *s, const char *sql, const char *arg,
                              apr_int64_t *v)
{
    sqlite3_stmt *st = spool_prepare(s, sql);
    int rc;

    *v = 0;
    if (!st) {
        return APR_EGENERAL;
    }
    if (arg) {
        sqlite3_bind_text(st, 1, arg, -1, SQLITE_STATIC);
    }
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? APR_SUCCESS : spool_fail(s, "read");
}

apr_status_t qrt_spool_count(qrt_spool_t *s, apr_int64_t *n)
{
    return spool_int(s, "SELECT COUNT(*) FROM visits", NULL, n);
}

apr_status_t qrt_spool_peek(qrt_spool_t *s, apr_pool_t *p, int max, apr_int64_t **seq,
                            qrt_visit_t **v, int *n)
{
    sqlite3_stmt *st = spool_prepare(s, "SELECT seq, data FROM visits ORDER BY seq "
                                        "LIMIT ?");
    int rc;

    *n = 0;
    *seq = apr_palloc(p, (max > 0 ? max : 1) * sizeof(**seq));
    *v = apr_palloc(p, (max > 0 ? max : 1) * sizeof(**v));
    if (!st) {
        return APR_EGENERAL;
    }
    sqlite3_bind_int(st, 1, max);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && *n < max) {
        const void *data = sqlite3_column_blob(st, 1);
        int len = sqlite3_column_bytes(st, 1);

        (*seq)[*n] = sqlite3_column_int64(st, 0);
        if (!data || qrt_visit_unpack_any(p, data, (apr_size_t)len, &(*v)[*n]) != 0) {
            sqlite3_finalize(st);
            apr_snprintf(s->error, sizeof(s->error), "visit %lld of the spool cannot "
                         "be read back", (long long)(*seq)[*n]);
            return APR_EGENERAL;
        }
        (*n)++;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? APR_SUCCESS : spool_fail(s, "peek");
}

apr_status_t qrt_spool_drop(qrt_spool_t *s, apr_int64_t upto)
{
    sqlite3_stmt *st = spool_prepare(s, "DELETE FROM visits WHERE seq <= ?");
    int rc;

    if (!st) {
        return APR_EGENERAL;
    }
    sqlite3_bind_int64(st, 1, upto);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? APR_SUCCESS : spool_fail(s, "drop");
}

/* ---- visits the database refused for good ------------------------------------------ */

static apr_status_t spool_change(qrt_spool_t *s, const char *sql, const char *t, ...);

apr_status_t qrt_spool_refuse(qrt_spool_t *s, apr_int64_t seq, const char *why,
                              apr_int64_t at)
{
    if (spool_exec(s, "BEGIN IMMEDIATE") != SQLITE_OK) {
        return spool_fail(s, "begin");
    }
    if (spool_change(s, "INSERT OR REPLACE INTO refused (seq, data, why, at) SELECT seq, "
                        "data, ?, ? FROM visits WHERE seq = ?", "sll", why ? why : "", at, seq)
            != APR_SUCCESS
        || spool_change(s, "DELETE FROM visits WHERE seq = ?", "l", seq) != APR_SUCCESS
        || (spool_exec(s, "COMMIT") != SQLITE_OK && spool_fail(s, "commit"))) {
        spool_exec(s, "ROLLBACK");
        return APR_EGENERAL;
    }
    return APR_SUCCESS;
}

apr_status_t qrt_spool_refused_count(qrt_spool_t *s, apr_int64_t *n)
{
    return spool_int(s, "SELECT COUNT(*) FROM refused", NULL, n);
}

apr_status_t qrt_spool_refused_each(qrt_spool_t *s, apr_pool_t *p, qrt_spool_refused_fn *fn,
                                    void *ctx)
{
    sqlite3_stmt *st = spool_prepare(s, "SELECT seq, data, why, at FROM refused ORDER BY seq");
    apr_pool_t *rp;
    apr_status_t rv = APR_SUCCESS;
    int rc;

    if (!st) {
        return APR_EGENERAL;
    }
    apr_pool_create(&rp, p);
    while (rv == APR_SUCCESS && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const void *data = sqlite3_column_blob(st, 1);
        const char *why = (const char *)sqlite3_column_text(st, 2);
        qrt_visit_t v;

        apr_pool_clear(rp);
        if (!data || qrt_visit_unpack_any(rp, data, (apr_size_t)sqlite3_column_bytes(st, 1),
                                          &v) != 0) {
            apr_snprintf(s->error, sizeof(s->error), "refused visit %lld cannot be read "
                         "back", (long long)sqlite3_column_int64(st, 0));
            rv = APR_EGENERAL;
            break;
        }
        rv = fn(ctx, sqlite3_column_int64(st, 0), &v, why ? why : "",
                sqlite3_column_int64(st, 3));
    }
    if (rv == APR_SUCCESS && rc != SQLITE_DONE) {
        rv = spool_fail(s, "refused");
    }
    sqlite3_finalize(st);
    apr_pool_destroy(rp);
    return rv;
}

apr_status_t qrt_spool_refused_expire(qrt_spool_t *s, apr_int64_t before, apr_int64_t *n)
{
    *n = 0;
    if (spool_change(s, "DELETE FROM refused WHERE at < ?", "l", before) != APR_SUCCESS) {
        return APR_EGENERAL;
    }
    *n = sqlite3_changes(s->db);
    return APR_SUCCESS;
}

apr_status_t qrt_spool_refused_retry(qrt_spool_t *s, apr_int64_t *n)
{
    *n = 0;
    if (spool_exec(s, "BEGIN IMMEDIATE") != SQLITE_OK) {
        return spool_fail(s, "begin");
    }
    if (spool_change(s, "INSERT INTO visits (data) SELECT data FROM refused ORDER BY seq", "")
        != APR_SUCCESS) {
        spool_exec(s, "ROLLBACK");
        return APR_EGENERAL;
    }
    *n = sqlite3_changes(s->db);
    if (spool_change(s, "DELETE FROM refused", "") != APR_SUCCESS
        || (spool_exec(s, "COMMIT") != SQLITE_OK && spool_fail(s, "commit"))) {
        spool_exec(s, "ROLLBACK");
        *n = 0;
        return APR_EGENERAL;
    }
    return APR_SUCCESS;
}

/* ---- the replay's way past a refused visit ------------------------------------------- */

void qrt_replay_init(qrt_replay_t *r, int max)
{
    memset(r, 0, sizeof(*r));
    r->max = r->size = max > 0 ? max : 1;
}

void qrt_replay_ok(qrt_replay_t *r)
{
    r->head = 0;
    r->head_fails = 0;
    r->size = r->size > r->max / 2 ? r->max : r->size * 2;
}

qrt_replay_act_t qrt_replay_refused(qrt_replay_t *r, apr_int64_t seq, int n)
{
    if (n > 1) {
        r->size = n / 2;
        return QRT_REPLAY_SMALLER;
    }
    r->size = 1;
    if (r->head != seq) {
        r->head = seq;
        r->head_fails = 0;
    }
    if (++r->head_fails < QRT_REPLAY_TRIES) {
        return QRT_REPLAY_PAUSE;
    }
    r->head = 0;
    r->head_fails = 0;
    return QRT_REPLAY_REFUSE;
}

/* ---- the snapshot ------------------------------------------------------------------ */

apr_status_t qrt_snap_get(qrt_spool_t *s, apr_pool_t *p, const char *code,
                          apr_int64_t *id, const char **url, const char **route)
{
    sqlite3_stmt *st = spool_prepare(s, "SELECT tracker_id, url, route FROM codes "
                                        "WHERE code = ?");
    apr_status_t rv = APR_NOTFOUND;
    int rc;

    if (!st) {
        return APR_EGENERAL;
    }
    sqlite3_bind_text(st, 1, code, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        *url = apr_pstrmemdup(p, (const char *)sqlite3_column_text(st, 1),
                              (apr_size_t)sqlite3_column_bytes(st, 1));
        *route = sqlite3_column_type(st, 2) == SQLITE_NULL ? NULL
            : apr_pstrmemdup(p, (const char *)sqlite3_column_text(st, 2),
                             (apr_size_t)sqlite3_column_bytes(st, 2));
        rv = APR_SUCCESS;
    }
    else if (rc != SQLITE_DONE) {
        rv = spool_fail(s, "look up");
    }
    sqlite3_finalize(st);
    return rv;
}

apr_status_t qrt_snap_begin(qrt_spool_t *s)
{
    return spool_exec(s, "BEGIN IMMEDIATE") == SQLITE_OK ? APR_SUCCESS
                                                        : spool_fail(s, "begin");
}

apr_status_t qrt_snap_commit(qrt_spool_t *s)
{
    if (spool_exec(s, "COMMIT") != SQLITE_OK) {
        spool_fail(s, "commit");
        spool_exec(s, "ROLLBACK");
        return APR_EGENERAL;
    }
    return APR_SUCCESS;
}

void qrt_snap_rollback(qrt_spool_t *s)
{
    spool_exec(s, "ROLLBACK");
}

/* Runs sql, which changes rows, with its arguments bound in order: text where t
 * says 's', integers where it says 'l'. */
static apr_status_t spool_change(qrt_spool_t *s, const char *sql, const char *t, ...)
{
    sqlite3_stmt *st = spool_prepare(s, sql);
    va_list ap;
    int i, rc;

    if (!st) {
        return APR_EGENERAL;
    }
    va_start(ap, t);
    for (i = 0; t[i]; i++) {
        if (t[i] == 's') {
            const char *v = va_arg(ap, const char *);

            if (v) {
                sqlite3_bind_text(st, i + 1, v, -1, SQLITE_TRANSIENT);
            }
            else {
                sqlite3_bind_null(st, i + 1);
            }
        }
        else {
            sqlite3_bind_int64(st, i + 1, va_arg(ap, apr_int64_t));
        }
    }
    va_end(ap);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? APR_SUCCESS : spool_fail(s, "write");
}

apr_status_t qrt_snap_put(qrt_spool_t *s, const char *code, apr_int64_t id,
                          const char *url, const char *route, apr_int64_t gen)
{
    return spool_change(s, "INSERT INTO codes (code, tracker_id, url, gen, route) "
                        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (code) DO UPDATE SET "
                        "tracker_id = excluded.tracker_id, url = excluded.url, "
                        "gen = excluded.gen, route = excluded.route", "slsls", code, id,
                        url, gen, route);
}

apr_status_t qrt_snap_del(qrt_spool_t *s, const char *code)
{
    return spool_change(s, "DELETE FROM codes WHERE code = ?", "s", code);
}

apr_status_t qrt_snap_sweep(qrt_spool_t *s, apr_int64_t gen)
{
    return spool_change(s, "DELETE FROM codes WHERE gen < ?", "l", gen);
}

apr_status_t qrt_snap_count(qrt_spool_t *s, apr_int64_t *n)
{
    return spool_int(s, "SELECT COUNT(*) FROM codes", NULL, n);
}

apr_status_t qrt_snap_meta_get(qrt_spool_t *s, const char *name, apr_int64_t *v)
{
    return spool_int(s, "SELECT CAST(value AS INTEGER) FROM meta WHERE name = ?", name, v);
}

apr_status_t qrt_snap_meta_set(qrt_spool_t *s, const char *name, apr_int64_t v)
{
    char num[32];

    apr_snprintf(num, sizeof(num), "%" APR_INT64_T_FMT, v);
    return spool_change(s, "INSERT INTO meta (name, value) VALUES (?, ?) "
                        "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                        "ss", name, num);
}
