/* qrt_schema: applies the embedded migrations of sql/ to a database. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <apr_hash.h>
#include <apr_lib.h>
#include <apr_strings.h>
#include "qrt_dialect.h"
#include "qrt_schema.h"
#include "qrt_sql.h"

static apr_uint64_t build_id_add(apr_uint64_t h, const char *s)
{
    /* FNV-1a over the text and its terminating 0 (so that "ab","c" and "a","bc" differ) */
    do {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    } while (*s++);
    return h;
}

apr_uint64_t qrt_schema_build_id(void)
{
    apr_uint64_t h = 14695981039346656037ULL;
    int i;

    for (i = 0; qrt_migrations[i].name; i++) {
        h = build_id_add(h, qrt_migrations[i].name);
        h = build_id_add(h, qrt_migrations[i].sql);
    }
    for (i = 0; qrt_sql_statements[i].name; i++) {
        h = build_id_add(h, qrt_sql_statements[i].name);
        h = build_id_add(h, qrt_sql_statements[i].sql ? qrt_sql_statements[i].sql : "");
        h = build_id_add(h, qrt_sql_statements[i].pgsql ? qrt_sql_statements[i].pgsql : "");
    }
    return h;
}

#define MEMO_TAG "qrtrack-memo-1"

char *qrt_schema_memo_format(apr_pool_t *p, apr_uint64_t build, const qrt_visitor_key_t *key)
{
    char hex[2 * sizeof(key->key) + 1];
    int i, n = key->keylen < 0 ? 0 : key->keylen > (int)sizeof(key->key)
                                      ? (int)sizeof(key->key) : key->keylen;

    for (i = 0; i < n; i++) {
        apr_snprintf(hex + 2 * i, 3, "%02x", key->key[i]);
    }
    hex[2 * n] = '\0';
    return apr_psprintf(p, MEMO_TAG " %016" APR_UINT64_T_HEX_FMT " %d %d %s\n", build,
                        key->daily ? 1 : 0, n, n ? hex : "-");
}

int qrt_schema_memo_parse(const char *text, apr_uint64_t *build, qrt_visitor_key_t *key)
{
    qrt_visitor_key_t k;
    unsigned long long b;
    char hex[2 * sizeof(k.key) + 2];
    int daily, n, used = 0, i;

    memset(&k, 0, sizeof(k));
    if (!text || strncmp(text, MEMO_TAG " ", sizeof(MEMO_TAG)) != 0
        || sscanf(text + sizeof(MEMO_TAG), "%16llx %d %d %65s%n", &b, &daily, &n, hex, &used) != 4
        || (daily != 0 && daily != 1) || n < 0 || n > (int)sizeof(k.key)
        || (text[sizeof(MEMO_TAG) + used] != '\n' && text[sizeof(MEMO_TAG) + used] != '\0')
        || strlen(hex) != (n ? 2 * (size_t)n : 1) || (!n && strcmp(hex, "-"))) {
        return -1;
    }
    for (i = 0; i < n; i++) {
        unsigned int byte;

        if (!apr_isxdigit(hex[2 * i]) || !apr_isxdigit(hex[2 * i + 1])
            || sscanf(hex + 2 * i, "%2x", &byte) != 1) {
            return -1;
        }
        k.key[i] = (unsigned char)byte;
    }
    k.keylen = n;
    k.daily = daily;
    *build = (apr_uint64_t)b;
    *key = k;
    return 0;
}

int qrt_schema_latest(void)
{
    int i, v = 0;

    for (i = 0; qrt_migrations[i].name; i++) {
        if (qrt_migrations[i].version > v) {
            v = qrt_migrations[i].version;
        }
    }
    return v;
}

/* 1 when the migrations' SQL is SQLite's, 0 PostgreSQL's. */
static int schema_is_sqlite(const apr_dbd_driver_t *driver)
{
    const qrt_dialect_t *d = qrt_dialect_of(driver);

    return d && d->id == QRT_DIALECT_SQLITE;
}

/* The first column of the first row of a query into *v; -1 when it fails. */
static int schema_int(apr_pool_t *p, const apr_dbd_driver_t *driver, apr_dbd_t *handle,
                      const char *sql, int *v)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    int got = 0;

    *v = 0;
    if (apr_dbd_select(driver, p, handle, &res, sql, 0) != 0) {
        return -1;
    }
    while (apr_dbd_get_row(driver, p, res, &row, -1) == 0) {
        const char *e = apr_dbd_get_entry(driver, row, 0);

        if (!got && e) {
            *v = atoi(e);
        }
        got = 1;
    }
    return got ? 0 : -1;
}

int qrt_schema_version(apr_pool_t *p, const apr_dbd_driver_t *driver, apr_dbd_t *handle)
{
    const char *has = schema_is_sqlite(driver)
        ? "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' "
          "AND name = 'qrt_schema'"
        /* (the table the next statement reads, by the search path: information_schema's
         * view costs a new connection several milliseconds of catalog reads) */
        : "SELECT CASE WHEN to_regclass('qrt_schema') IS NULL THEN 0 ELSE 1 END";
    int n, v;

    if (schema_int(p, driver, handle, has, &n) != 0) {
        return -1;
    }
    if (n == 0) {
        return 0;
    }
    if (schema_int(p, driver, handle, "SELECT MAX(version) FROM qrt_schema", &v) != 0) {
        return -1;
    }
    return v;
}

void qrt_schema_pragma(apr_pool_t *p, const apr_dbd_driver_t *driver, apr_dbd_t *handle,
                       const char *sql)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;

    if (apr_dbd_select(driver, p, handle, &res, sql, 0) == 0) {
        while (apr_dbd_get_row(driver, p, res, &row, -1) == 0) {
        }
    }
}

/* Replaces {{ID}} by the driver's auto-increment primary key, and {{WITHOUT_ROWID}}
 * (after a table whose primary key is its order) by SQLite's clause for it. A
 * statement that starts with {{PGSQL}} is PostgreSQL's only: NULL for SQLite;
 * one with {{SQLITE}} SQLite's only. */
static char *schema_dialect(apr_pool_t *p, const apr_dbd_driver_t *driver,
                            const char *stmt)
{
    static const char *const marks[] = { "{{ID}}", "{{WITHOUT_ROWID}}", "{{PGSQL}}",
                                         "{{SQLITE}}" };
    const char *as[4];
    char *out = apr_pstrdup(p, stmt), *at;
    int i;

    if ((strstr(out, marks[2]) && schema_is_sqlite(driver))
        || (strstr(out, marks[3]) && !schema_is_sqlite(driver))) {
        return NULL;
    }
    as[0] = schema_is_sqlite(driver) ? "INTEGER PRIMARY KEY" : "BIGSERIAL PRIMARY KEY";
    as[1] = schema_is_sqlite(driver) ? " WITHOUT ROWID" : "";
    as[2] = as[3] = "";
    for (i = 0; i < 4; i++) {
        while ((at = strstr(out, marks[i])) != NULL) {
            *at = '\0';
            out = apr_pstrcat(p, out, as[i], at + strlen(marks[i]), NULL);
        }
    }
    return out;
}

#define SCHEMA_UNLESS "{{UNLESS_TABLE:"
#define SCHEMA_UNLESS_COLUMN "{{UNLESS_COLUMN:"

/* Whether the table (or view) name exists: 1, else 0. With a column (name is then
 * "table.column"), whether that table has that column. */
static int schema_has(apr_pool_t *p, const apr_dbd_driver_t *driver, apr_dbd_t *handle,
                      const char *name, int column)
{
    const char *dot = column ? strchr(name, '.') : NULL;
    const char *q;
    int n = 0;

    if (column && !dot) {
        return 0;
    }
    if (!column) {
        q = schema_is_sqlite(driver)
            ? apr_psprintf(p, "SELECT COUNT(*) FROM sqlite_master WHERE name = '%s'", name)
            : apr_psprintf(p, "SELECT COUNT(*) FROM information_schema.tables WHERE "
                              "table_name = '%s'", name);
    }
    else {
        const char *table = apr_pstrndup(p, name, (apr_size_t)(dot - name));

        q = schema_is_sqlite(driver)
            ? apr_psprintf(p, "SELECT COUNT(*) FROM pragma_table_info('%s') WHERE "
                              "name = '%s'", table, dot + 1)
            : apr_psprintf(p, "SELECT COUNT(*) FROM information_schema.columns WHERE "
                              "table_schema = current_schema() AND table_name = '%s' "
                              "AND column_name = '%s'", table, dot + 1);
    }
    if (schema_int(p, driver, handle, q, &n) != 0) {
        n = 0;
    }
    return n > 0;
}

/* A statement marked {{UNLESS_TABLE:name}} runs only when no table (or view) of
 * that name existed when its migration started; one marked
 * {{UNLESS_COLUMN:table.column}} only when that column did not (a migration that
 * renames it, run again on a database that says an older version than it is).
 * conds: mark's name -> "1" or "0", filled on the first statement that names it,
 * which is the migration's first. NULL when it runs, the statement without the
 * mark; "" when it is skipped. */
static const char *schema_unless(apr_pool_t *p, const apr_dbd_driver_t *driver,
                                 apr_dbd_t *handle, apr_hash_t *conds, const char *stmt)
{
    const char *at = strstr(stmt, SCHEMA_UNLESS), *end;
    const char *name, *seen, *key;
    int column = 0;
    apr_size_t len = strlen(SCHEMA_UNLESS);

    if (!at) {
        at = strstr(stmt, SCHEMA_UNLESS_COLUMN);
        column = 1;
        len = strlen(SCHEMA_UNLESS_COLUMN);
    }
    if (!at) {
        return NULL;
    }
    end = strstr(at, "}}");
    if (!end) {
        return NULL;
    }
    name = apr_pstrndup(p, at + len, (apr_size_t)(end - at) - len);
    key = apr_pstrcat(p, column ? "column " : "table ", name, NULL);
    seen = apr_hash_get(conds, key, APR_HASH_KEY_STRING);
    if (!seen) {
        seen = schema_has(p, driver, handle, name, column) ? "1" : "0";
        apr_hash_set(conds, key, APR_HASH_KEY_STRING, seen);
    }
    if (*seen == '1') {
        return "";
    }
    return apr_pstrcat(p, apr_pstrndup(p, stmt, (apr_size_t)(at - stmt)), end + 2, NULL);
}

static const char *schema_apply(apr_pool_t *p, const apr_dbd_driver_t *driver,
                                apr_dbd_t *handle, const qrt_migration_t *m)
{
    apr_hash_t *conds = apr_hash_make(p);
    apr_dbd_transaction_t *trans = NULL;
    char *sql = apr_pstrdup(p, m->sql), *line, *last = NULL;
    char *stmt = apr_pstrdup(p, "");
    const char *err = NULL;
    const qrt_dialect_t *d = qrt_dialect_of(driver);
    const char *berr = NULL;
    int nrows, rv;

    if (!d || d->begin(driver, p, handle, &trans, &berr) != 0) {
        return apr_psprintf(p, "%s: cannot start a transaction: %s", m->name,
                            berr ? berr : "no dialect");
    }
    for (line = apr_strtok(sql, "\n", &last); line && !err;
         line = apr_strtok(NULL, "\n", &last)) {
        apr_size_t n;

        if (strncmp(line, "--", 2) == 0) {
            continue;
        }
        n = strlen(line);
        while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\r')) {
            n--;
        }
        /* The driver stumbles on anything after the last ';': keep none. */
        stmt = apr_pstrcat(p, stmt, *stmt ? "\n" : "", apr_pstrndup(p, line, n), NULL);
        if (n > 0 && line[n - 1] == ';') {
            const char *own = schema_dialect(p, driver, stmt);

            if (own) {
                const char *kept = schema_unless(p, driver, handle, conds, own);

                own = !kept ? own : *kept ? kept : NULL;
            }

            rv = own ? apr_dbd_query(driver, handle, &nrows, own) : 0;
            if (rv != 0) {
                err = apr_psprintf(p, "%s: %s in: %s", m->name,
                                   apr_dbd_error(driver, handle, rv), stmt);
            }
            stmt = apr_pstrdup(p, "");
        }
    }
    if (err) {
        apr_dbd_transaction_mode_set(driver, trans,
                                     APR_DBD_TRANSACTION_ROLLBACK);
    }
    if (apr_dbd_transaction_end(driver, p, trans) != 0 && !err) {
        err = apr_psprintf(p, "%s: commit failed: %s", m->name,
                           apr_dbd_error(driver, handle, 1));
    }
    return err;
}

const char *qrt_schema_migrate(apr_pool_t *p, const apr_dbd_driver_t *driver,
                               apr_dbd_t *handle, int *from, int *to)
{
    int i, v;

    if (schema_is_sqlite(driver)) {
        /* Children may be closing their connections (a graceful restart): wait
         * for their locks rather than fail. */
        qrt_schema_pragma(p, driver, handle, "PRAGMA busy_timeout = 10000");
        qrt_schema_pragma(p, driver, handle, "PRAGMA journal_mode=WAL");
    }
    else {
        /* Several nodes starting at once on one database: one migrates, the others
         * wait here and then find it done. Held until this connection closes. */
        qrt_schema_pragma(p, driver, handle, "SELECT pg_advisory_lock(1903326834)");
    }
    v = qrt_schema_version(p, driver, handle);
    if (v < 0) {
        return apr_psprintf(p, "cannot read the schema version: %s",
                            apr_dbd_error(driver, handle, 1));
    }
    if (from) {
        *from = v;
    }
    for (i = 0; qrt_migrations[i].name; i++) {
        const qrt_migration_t *m = &qrt_migrations[i];
        const char *err;

        if (m->version <= v) {
            continue;
        }
        err = schema_apply(p, driver, handle, m);
        if (err) {
            return err;
        }
        v = m->version;
    }
    if (to) {
        *to = v;
    }
    return NULL;
}
