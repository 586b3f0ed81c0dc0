/* qrtrack-admin: accounts and API tokens in mod_qrtrack's database, and copies of it.
 *
 * Uses the same core (schema, store functions, token hashing) as the module. */
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <apr_general.h>
#include <apr_strings.h>
#include <apr_time.h>
#include <apr_lib.h>
#include <apr_dbd.h>

#include "qrt_apconf.h"
#include "qrt_dbfile.h"
#include "qrt_dblimit.h"
#include "qrt_schema.h"
#include "qrt_store.h"
#include "qrt_store_compact.h"
#include "qrt_store_copy.h"
#include "qrt_store_purge.h"
#include "qrt_store_agg_rebuild.h"
#include "qrt_store_agg_blob.h"
#include "qrt_token.h"
#include "qrt_valid.h"
#include "qrt_date.h"
#include "qrt_import.h"
#include "qrt_peer.h"
#include "qrt_spool.h"
#include <jansson.h>
#include <unistd.h>

/* Visits per import transaction. Each commit writes every page the batch dirtied to the
 * WAL; the visitor-keyed indexes put a batch's visits on pages all over the file, so
 * fewer, larger commits write far less. A tracker's own visits of many visitors dirty
 * the last page of each visitor's, address's and user agent's run of index entries
 * once a commit, so larger batches help there too, at the cost of memory. A batch also ends
 * at ADMIN_IMPORT_BYTES of lines, so that long lines make smaller batches: two batches
 * at a time (the one written and the one read ahead) hold about twice that in strings
 * at most, with the store's work for each visit. */
/* --timeout's default: seconds one statement of a short command (account, token,
 * visitor-key) may run or wait for a lock. The long ones (init, visits import and
 * purge, aggregates, copy-to) run without a bound: their statements may take minutes
 * on a large database, and nothing waits for them but their operator. */
#define ADMIN_TIMEOUT_DEFAULT 30

#define ADMIN_IMPORT_BATCH 25000
/* SQLite's: a batch's index pages are written to the WAL once a commit, so larger
 * batches write fewer of them again (a commit still holds the write lock well under a
 * scan's wait). */
#define ADMIN_IMPORT_BATCH_SQLITE 40000
/* Trackers per transaction of trackers import. */
#define ADMIN_TRACKER_BATCH 1000
/* token add --count: at most this many tokens in one run */
#define ADMIN_TOKENS_MAX 1000
#define ADMIN_IMPORT_BYTES (16 << 20)

/* Without --driver/--params: the installed tool (make install, the Debian package)
 * reads DBDriver/DBDParams from the Apache config, else uses the package's database;
 * build/qrtrack-admin reads a config only when told to, else uses var/qrtrack.db. */
#ifdef QRT_ADMIN_INSTALLED
#ifndef QRT_ADMIN_APACHE_CONF
#define QRT_ADMIN_APACHE_CONF "/etc/apache2/apache2.conf"
#endif
#ifndef QRT_ADMIN_DEFAULT_DB
#define QRT_ADMIN_DEFAULT_DB "/var/lib/qrtrack/qrtrack.db"
#endif
#else
#define QRT_ADMIN_APACHE_CONF NULL
#define QRT_ADMIN_DEFAULT_DB "var/qrtrack.db"
#endif

typedef struct {
    apr_pool_t *p;
    qrt_db_t db;
    const char *driver;
    const char *params;
    int timeout_ms;             /* of each statement; 0 = none */
} admin_ctx;

static const char *const admin_apache_conf = QRT_ADMIN_APACHE_CONF;

static void admin_help(void)
{
    printf("usage: qrtrack-admin [--driver D] [--params P] [--apache-config FILE]\n"
           "                     [--timeout SECONDS] COMMAND\n"
           "  init\n"
           "  account add NAME [--plan free|starter|professional|enterprise]\n"
           "  account list\n"
           "  account plan ACCOUNT PLAN\n"
           "  token add ACCOUNT [--name LABEL] [--scope read|write] [--expires TIME]\n"
           "                          [--count N]\n"
           "                          (TIME: 30d, 12h, 90m, 2w or 2027-01-01T00:00:00+0000;\n"
           "                          N tokens alike, 1 to 1000, one a line)\n"
           "  token list ACCOUNT\n"
           "  token revoke TOKEN_ID\n"
           "  trackers import ACCOUNT --from shlink|yourls|kutt|csv FILE [--dry-run]\n"
           "                          (a peer's export, codes kept; - for stdin; exit\n"
           "                          status 2 when some rows failed)\n"
           "  visits import FILE      (JSON lines of visits; - for stdin)\n"
           "  visits purge DAYS       (erase what visits older than DAYS say about\n"
           "                          their visitors, as QRTrackVisitRetention does)\n"
           "  aggregates rebuild      (recompute report aggregates from visits)\n"
           "  aggregates seal         (seal settled days' aggregates now)\n"
           "  compact                 (PostgreSQL: give back the room the visits' tables\n"
           "                          leave in their indexes' pages, built again online)\n"
           "  visitor-key show|new    (how visitor ids are made; new: a new secret)\n"
           "  visitor-key rotate daily|none  (the visit's day part of the id, or not)\n"
           "  copy-to DRIVER PARAMS   (all the data into an empty database, ids kept)\n"
           "  spool refused FILE      (a node's spool file, QRTrackSpoolDir/qrtrack-spool.db:\n"
           "                          the visits the database refused, as JSON lines)\n"
           "  spool retry FILE        (those visits back in the spool, to be replayed)\n"
           "ACCOUNT is an account id or name. --driver and --params mean what mod_dbd's\n"
           "DBDriver and DBDParams mean. Without them, the database is the one that\n"
           "DBDriver/DBDParams name at server level in the Apache configuration (and\n"
           "the files it includes): FILE of --apache-config, else\n"
           "$APACHE_CONFDIR/apache2.conf, else %s.\n"
           "When it names none: --driver sqlite3 --params %s\n"
           "--timeout: how long one statement of account, token and visitor-key may\n"
           "run or wait for a lock (default %d, 0 = no limit); the other commands\n"
           "run without one.\n",
           admin_apache_conf ? admin_apache_conf : "none (this build reads one only when told)",
           QRT_ADMIN_DEFAULT_DB, ADMIN_TIMEOUT_DEFAULT);
}

/* Wrong words on the command line: one line on stderr, exit status 2. */
static void admin_usage(void)
{
    fputs("qrtrack-admin: bad arguments (qrtrack-admin --help lists the commands)\n",
          stderr);
}

static int admin_fail(const char *fmt, const char *a, const char *b)
{
    fputs("qrtrack-admin: ", stderr);
    fprintf(stderr, fmt, a ? a : "", b ? b : "");
    fputc('\n', stderr);
    return 1;
}

/* Opens db (driver name and params as mod_dbd's DBDriver and DBDParams), sets up
 * or checks its schema, and prepares every statement. */
static int admin_connect(admin_ctx *c, qrt_db_t *db, const char *name,
                         const char *params, int init)
{
    const apr_dbd_driver_t *driver;
    const qrt_dialect_t *dialect;
    const char *err = NULL;
    int from = 0, to = 0;

    apr_dbd_init(c->p);
    if (apr_dbd_get_driver(c->p, name, &driver) != APR_SUCCESS) {
        return admin_fail("no database driver '%s' (install libaprutil1-dbd-%s)",
                          name, name);
    }
    db->driver = driver;
    dialect = qrt_dialect_of(driver);
    if (!dialect) {
        return admin_fail("database driver '%s': qrtrack-admin runs on sqlite3 or pgsql%s",
                          name, "");
    }
    if ((err = qrt_dialect_self_check(driver)) != NULL) {
        fprintf(stderr, "qrtrack-admin: warning: %s self-check: %s; apr_dbd's portable "
                "calls are used there instead\n", dialect->label, err);
        err = NULL;
    }
    /* (SQLite's memory and temporary databases end with the command: an account added
     * there was gone at the next one, which said nothing) */
    if (dialect->embedded && (!*params || !strcmp(params, ":memory:")
                              || strstr(params, "mode=memory"))) {
        return admin_fail("an SQLite database is a file's path, not '%s'%s", params, "");
    }
    if (dialect->embedded) {
        /* Created 0640 before SQLite opens it (its -wal and -shm take its mode). */
        int e = qrt_dbfile_private(params);

        if (e && e != ENOENT) {
            fprintf(stderr, "qrtrack-admin: warning: cannot make %s private (mode %04o): "
                    "%s\n", params, QRT_DBFILE_MODE, strerror(e));
        }
    }
    if (apr_dbd_open_ex(driver, c->p, params, &db->handle, &err) != APR_SUCCESS) {
        db->handle = NULL;
        return admin_fail("cannot open the database %s: %s", params, err);
    }
    if (dialect->embedded) {
        qrt_schema_pragma(c->p, driver, db->handle, "PRAGMA busy_timeout = 10000");
    }
    if (qrt_db_limit(driver, db->handle, c->p, c->timeout_ms, NULL) != APR_SUCCESS) {
        return admin_fail("cannot set the statement timeout: %s%s",
                          apr_dbd_error(driver, db->handle, 1), NULL);
    }
    if (!init) {
        /* An empty database is set up on first use; an older one is left to
         * `init` (or httpd's start), which migrate it while nothing runs on it. */
        int v = qrt_schema_version(c->p, driver, db->handle);

        if (v < 0) {
            return admin_fail("cannot read the schema version: %s%s",
                              apr_dbd_error(driver, db->handle, 1), NULL);
        }
        if (v != 0 && v < qrt_schema_latest()) {
            return admin_fail("the database schema is older than this build: run "
                              "'qrtrack-admin init'%s%s", NULL, NULL);
        }
        init = v == 0;
    }
    if (init) {
        err = qrt_schema_migrate(c->p, driver, db->handle, &from, &to);
        if (err) {
            return admin_fail("schema migration failed: %s%s", err, NULL);
        }
    }
    if (!init) {
        /* a command runs a few statements: each prepared when first run */
        qrt_db_prepare_lazily(db, c->p);
        return 0;
    }
    /* init: every statement of this build prepared against the schema it made */
    err = qrt_db_prepare_all(db, c->p);
    if (err) {
        return admin_fail("%s%s", err, NULL);
    }
    return 0;
}

static int admin_open(admin_ctx *c, int init)
{
    return admin_connect(c, &c->db, c->driver, c->params, init);
}

static int admin_find_account(admin_ctx *c, const char *ref, qrt_account_t *a)
{
    apr_status_t rv = qrt_store_account_find(&c->db, c->p, ref, a);

    if (rv == APR_NOTFOUND) {
        return admin_fail("no account '%s'%s", ref, NULL);
    }
    if (rv != APR_SUCCESS) {
        return admin_fail("%s%s", c->db.error, NULL);
    }
    return 0;
}

static void admin_time(char *buf, apr_int64_t t)
{
    if (t) {
        qrt_date_format(buf, t, 0);
    }
    else {
        strcpy(buf, "-");
    }
}

static int admin_account(admin_ctx *c, int argc, const char *const *argv)
{
    qrt_account_t a;
    int i;

    if (argc >= 2 && !strcmp(argv[0], "add")) {
        const char *plan = "professional";
        apr_int64_t id;

        for (i = 2; i < argc; i++) {
            if (!strcmp(argv[i], "--plan") && i + 1 < argc) {
                plan = argv[++i];
            }
            else {
                admin_usage();
                return 2;
            }
        }
        if (!qrt_valid_account_name(argv[1])) {
            return admin_fail("bad account name '%s': 1 to 64 letters, digits, '.', "
                              "'_' or '-', not starting with a digit%s", argv[1], NULL);
        }
        if (!qrt_plan_valid(plan)) {
            return admin_fail("bad plan '%s' (one of %s)", plan, QRT_PLANS);
        }
        if (admin_open(c, 0)) {
            return 1;
        }
        if (qrt_store_account_find(&c->db, c->p, argv[1], &a) == APR_SUCCESS) {
            return admin_fail("account '%s' exists already%s", argv[1], NULL);
        }
        if (qrt_store_account_add(&c->db, c->p, argv[1], plan, &id) != APR_SUCCESS) {
            return admin_fail("%s%s", c->db.error, NULL);
        }
        printf("%" APR_INT64_T_FMT "\n", id);
        return 0;
    }
    if (argc == 1 && !strcmp(argv[0], "list")) {
        apr_array_header_t *list;
        char buf[QRT_DATE_LEN];

        if (admin_open(c, 0)) {
            return 1;
        }
        if (qrt_store_account_list(&c->db, c->p, &list) != APR_SUCCESS) {
            return admin_fail("%s%s", c->db.error, NULL);
        }
        printf("id\tname\tplan\tcreated_at\n");
        for (i = 0; i < list->nelts; i++) {
            qrt_account_t *x = &APR_ARRAY_IDX(list, i, qrt_account_t);

            admin_time(buf, x->created_at);
            printf("%" APR_INT64_T_FMT "\t%s\t%s\t%s\n", x->id, x->name, x->plan, buf);
        }
        return 0;
    }
    if (argc == 3 && !strcmp(argv[0], "plan")) {
        if (!qrt_plan_valid(argv[2])) {
            return admin_fail("bad plan '%s' (one of %s)", argv[2], QRT_PLANS);
        }
        if (admin_open(c, 0) || admin_find_account(c, argv[1], &a)) {
            return 1;
        }
        if (qrt_store_account_set_plan(&c->db, c->p, a.id, argv[2]) != APR_SUCCESS) {
            return admin_fail("%s%s", c->db.error ? c->db.error : "not updated", NULL);
        }
        return 0;
    }
    admin_usage();
    return 2;
}

static int admin_token(admin_ctx *c, int argc, const char *const *argv)
{
    qrt_account_t a;
    int i;

    if (argc >= 2 && !strcmp(argv[0], "add")) {
        const char *name = "default", *token, *scope = QRT_SCOPE_WRITE;
        apr_int64_t id, expires_at = 0;
        apr_dbd_transaction_t *tx = NULL;
        apr_array_header_t *made, *ids;
        apr_status_t rv = APR_SUCCESS;
        int count = 1;

        for (i = 2; i < argc; i++) {
            if (!strcmp(argv[i], "--name") && i + 1 < argc) {
                name = argv[++i];
            }
            else if (!strcmp(argv[i], "--scope") && i + 1 < argc) {
                scope = argv[++i];
                if (strcmp(scope, QRT_SCOPE_READ) && strcmp(scope, QRT_SCOPE_WRITE)) {
                    return admin_fail("bad scope '%s' (read or write)%s", scope, NULL);
                }
            }
            else if (!strcmp(argv[i], "--count") && i + 1 < argc) {
                char *end;
                long n = strtol(argv[++i], &end, 10);

                if (*argv[i] == '\0' || *end != '\0' || n < 1 || n > ADMIN_TOKENS_MAX) {
                    return admin_fail("bad --count '%s' (1 to %s)", argv[i],
                                      APR_STRINGIFY(ADMIN_TOKENS_MAX));
                }
                count = (int)n;
            }
            else if (!strcmp(argv[i], "--expires") && i + 1 < argc) {
                if (qrt_token_expiry_parse(argv[++i], apr_time_sec(apr_time_now()),
                                           &expires_at) != 0) {
                    return admin_fail("bad --expires '%s' (a duration like 30d, 12h, "
                                      "90m, 2w, or a time to come like "
                                      "2027-01-01T00:00:00+0000)%s", argv[i], NULL);
                }
            }
            else {
                admin_usage();
                return 2;
            }
        }
        if (strlen(name) > 128) {
            return admin_fail("token name longer than 128 bytes%s%s", NULL, NULL);
        }
        /* (shown by token list, one line a token, and in a tracker's history: the API's
         * text, which PostgreSQL refuses otherwise anyway) */
        if (!*name || strchr(name, '\t') || qrt_valid_text(name, strlen(name), 0)) {
            return admin_fail("bad --name: give 1 to 128 bytes of UTF-8 text without "
                              "tabs, line ends or other control characters%s%s", NULL, NULL);
        }
        if (admin_open(c, 0) || admin_find_account(c, argv[1], &a)) {
            return 1;
        }
        /* (several in one transaction: all of them made, or none) */
        if (count > 1 && qrt_db_begin(&c->db, c->p, &tx) != APR_SUCCESS) {
            return admin_fail("%s%s", c->db.error, NULL);
        }
        made = apr_array_make(c->p, count, sizeof(const char *));
        ids = apr_array_make(c->p, count, sizeof(apr_int64_t));
        for (i = 0; i < count && rv == APR_SUCCESS; i++) {
            token = qrt_token_generate(c->p);
            if (!token) {
                rv = APR_EGENERAL;
                c->db.error = "no randomness available";
                break;
            }
            rv = qrt_store_token_add(&c->db, c->p, a.id, name, qrt_token_shown(c->p, token),
                                     qrt_token_digest(c->p, token), scope, expires_at, &id);
            APR_ARRAY_PUSH(made, const char *) = token;
            APR_ARRAY_PUSH(ids, apr_int64_t) = id;
        }
        if (tx) {
            if (rv != APR_SUCCESS) {
                qrt_db_rollback_only(&c->db, tx);
            }
            if (qrt_db_end(&c->db, c->p, tx) != APR_SUCCESS && rv == APR_SUCCESS) {
                rv = APR_EGENERAL;
            }
        }
        if (rv != APR_SUCCESS) {
            return admin_fail("%s%s", c->db.error ? c->db.error : "not added", NULL);
        }
        for (i = 0; i < made->nelts; i++) {
            printf("%s\n", APR_ARRAY_IDX(made, i, const char *));
        }
        /* A token is shown once: one its maker never saw (a full disk, a closed output)
         * would stay live, unknown to anyone. */
        if (fflush(stdout) != 0 || ferror(stdout)) {
            int e = errno;

            for (i = 0; i < ids->nelts; i++) {
                qrt_store_token_revoke(&c->db, c->p, APR_ARRAY_IDX(ids, i, apr_int64_t));
            }
            return admin_fail("cannot write the new tokens (%s): revoked again%s",
                              strerror(e ? e : EIO), NULL);
        }
        return 0;
    }
    if (argc == 2 && !strcmp(argv[0], "list")) {
        apr_array_header_t *list;
        char b1[QRT_DATE_LEN], b2[QRT_DATE_LEN], b3[QRT_DATE_LEN];

        if (admin_open(c, 0) || admin_find_account(c, argv[1], &a)) {
            return 1;
        }
        if (qrt_store_token_list(&c->db, c->p, a.id, &list) != APR_SUCCESS) {
            return admin_fail("%s%s", c->db.error, NULL);
        }
        printf("id\tprefix\tname\tcreated_at\trevoked_at\tscope\texpires_at\n");
        for (i = 0; i < list->nelts; i++) {
            qrt_token_t *t = &APR_ARRAY_IDX(list, i, qrt_token_t);

            admin_time(b1, t->created_at);
            admin_time(b2, t->revoked_at);
            admin_time(b3, t->expires_at);
            printf("%" APR_INT64_T_FMT "\t%s...\t%s\t%s\t%s\t%s\t%s\n", t->id, t->prefix,
                   t->name, b1, b2, t->scope ? t->scope : QRT_SCOPE_WRITE, b3);
        }
        return 0;
    }
    if (argc == 2 && !strcmp(argv[0], "revoke")) {
        char *end;
        apr_int64_t id = apr_strtoi64(argv[1], &end, 10);
        apr_status_t rv;

        if (!*argv[1] || *end || id <= 0) {
            return admin_fail("bad token id '%s'%s", argv[1], NULL);
        }
        if (admin_open(c, 0)) {
            return 1;
        }
        rv = qrt_store_token_revoke(&c->db, c->p, id);
        if (rv == APR_NOTFOUND) {
            return admin_fail("no live token with id %s%s", argv[1], NULL);
        }
        if (rv != APR_SUCCESS) {
            return admin_fail("%s%s", c->db.error, NULL);
        }
        return 0;
    }
    admin_usage();
    return 2;
}

static int admin_import_flush(admin_ctx *c, apr_pool_t *p, qrt_visit_t *v, int n)
{
    apr_dbd_transaction_t *tx;
    apr_status_t rv;

    if (n == 0) {
        return 0;
    }
    if (qrt_db_begin(&c->db, p, &tx) != APR_SUCCESS) {
        return admin_fail("%s%s", c->db.error, NULL);
    }
    rv = qrt_store_visits_record(&c->db, p, v, n);
    if (rv != APR_SUCCESS) {
        qrt_db_rollback_only(&c->db, tx);
    }
    if (qrt_db_end(&c->db, p, tx) != APR_SUCCESS || rv != APR_SUCCESS) {
        return admin_fail("import failed: %s%s", c->db.error ? c->db.error : "", NULL);
    }
    qrt_dict_cache_commit(c->db.dict);
    return 0;
}

/* visits import FILE: one JSON visit object per line (CONTRACT section 2 fields),
 * read and parsed a batch ahead in qrt_import's thread while this one writes. */
static int admin_visits_import(admin_ctx *c, const char *path)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    qrt_import_reader_t *r;
    const qrt_import_batch_t *b;
    apr_pool_t *bp;
    long total = 0;
    int i, batch, failed = 0;
    qrt_visitor_key_t key;
    apr_hash_t *live;           /* tracker ids found live */

    if (!f) {
        return admin_fail("cannot read %s%s", path, NULL);
    }
    if (admin_open(c, 0)) {
        return 1;
    }
    if (qrt_dialect_embedded(c->db.driver)) {
        int nrows;

        /* Each batch is on the disk when its commit returns (the WAL synced: FULL,
         * where the module's connections keep NORMAL). Copying the WAL back into the
         * database file is left to the server's checkpoint thread (mod_qrtrack_wal.c)
         * while one runs; SQLite does it past 64 MB of WAL, and at the close of the
         * last connection. A larger page cache for the indexes a batch touches (128 MB:
         * fewer pages read again from the file, and fewer dirty pages spilled to the WAL
         * before the commit), and the statement journal kept in memory (a batch's
         * statements of many rows outgrow SQLite's 64 KB before it spills to a temporary
         * file). */
        apr_dbd_query(c->db.driver, c->db.handle, &nrows, "PRAGMA synchronous = FULL");
        qrt_schema_pragma(c->p, c->db.driver, c->db.handle, "PRAGMA wal_autocheckpoint = 16384");
        qrt_schema_pragma(c->p, c->db.driver, c->db.handle, "PRAGMA cache_size = -131072");
        qrt_schema_pragma(c->p, c->db.driver, c->db.handle, "PRAGMA temp_store = MEMORY");
    }
    if (qrt_store_visitor_key(&c->db, c->p, &key) != APR_SUCCESS) {
        return admin_fail("cannot read the visitor key: %s%s",
                          c->db.error ? c->db.error : "malformed", NULL);
    }
    apr_pool_create(&bp, c->p);
    /* Bounded by the keys' bytes too (16 MB a dictionary), so long new strings
     * cannot fill the process. */
    c->db.dict = qrt_dict_cache_make(c->p, 1 << 18, 16 << 20);
    live = apr_hash_make(c->p);
    /* A file is read by time (qrt_import.h): a run checked whole, then written in
     * time order. A pipe, as its lines come. */
    batch = qrt_dialect_embedded(c->db.driver) ? ADMIN_IMPORT_BATCH_SQLITE : ADMIN_IMPORT_BATCH;
    r = qrt_import_start_by_time(c->p, f, &key, batch, ADMIN_IMPORT_BYTES, QRT_IMPORT_RUN);
    if (!r) {
        r = qrt_import_start(c->p, f, &key, batch, ADMIN_IMPORT_BYTES);
    }
    if (!r) {
        return admin_fail("cannot start the import's reader%s", "", NULL);
    }
    while (!failed && (b = qrt_import_next(r)) != NULL) {
        /* Each tracker looked up once per import (two queries a visit before): a
         * by-time run's all before any of its visits is written. */
        for (i = 0; i < b->ntrackers + b->n && !failed; i++) {
            apr_int64_t id = i < b->ntrackers ? b->trackers[i]
                           : b->v[i - b->ntrackers].tracker_id;
            long line = i < b->ntrackers ? b->tracker_line[i] : b->line[i - b->ntrackers];
            qrt_tracker_t t;

            if (apr_hash_get(live, &id, sizeof(id))) {
                continue;
            }
            if (qrt_store_tracker_get(&c->db, bp, id, &t) != APR_SUCCESS) {
                failed = admin_fail("line %s: bad %s", apr_ltoa(c->p, line),
                                    "tracker_id (no such tracker)");
            }
            else {
                apr_hash_set(live, apr_pmemdup(c->p, &id, sizeof(id)), sizeof(id), "");
            }
        }
        /* A line that is not a visit fails its batch whole, unwritten (the batches
         * before it are committed). */
        if (!failed && b->error) {
            failed = admin_fail("line %s: %s", apr_ltoa(c->p, b->error_line), b->error);
        }
        if (!failed) {
            failed = admin_import_flush(c, bp, b->v, b->n);
            total += failed ? 0 : b->n;
            apr_pool_clear(bp);
        }
    }
    if (!failed && qrt_import_read_error(r)) {
        failed = admin_fail("cannot read %s: %s", path, strerror(qrt_import_read_error(r)));
    }
    qrt_import_stop(r);
    if (f != stdin) {
        fclose(f);
    }
    if (failed) {
        return 1;
    }
    printf("%ld\n", total);
    return 0;
}

/* visits purge DAYS: one whole pass of QRTrackVisitRetention's purge (every
 * visit older than DAYS days), in steps of their own commits; prints how many
 * visits it erased. */
static int admin_visits_purge(admin_ctx *c, const char *days_arg)
{
    qrt_purge_cursor_t cur;
    apr_pool_t *sp;
    apr_int64_t days;
    long total = 0;
    int purged, done = 0;
    char *end;

    days = apr_strtoi64(days_arg, &end, 10);
    if (!*days_arg || *end || days < 1 || days > 36500) {
        return admin_fail("DAYS must be a whole number from 1 to 36500, not '%s'%s",
                          days_arg, NULL);
    }
    if (admin_open(c, 0)) {
        return 1;
    }
    qrt_purge_cursor_init(&cur, QRT_PURGE_TMIN,
                          qrt_purge_edge(apr_time_sec(apr_time_now()), (int)days));
    apr_pool_create(&sp, c->p);
    while (!done) {
        if (qrt_store_purge_step(&c->db, sp, &cur, 2000, &purged, &done) != APR_SUCCESS) {
            return admin_fail("purge failed: %s%s", c->db.error ? c->db.error : "", NULL);
        }
        total += purged;
        apr_pool_clear(sp);
        if (cur.waiting) {
            apr_sleep(apr_time_from_msec(10));
        }
    }
    if (cur.truncate_failed) {
        fprintf(stderr, "qrtrack-admin: warning: the WAL could not be emptied within %d "
                "seconds (a reader or another checkpoint held it): the erased strings "
                "may stay in the -wal file until the next purge that erases any\n",
                QRT_PURGE_TRUNCATE_S);
    }
    printf("%ld\n", total);
    return 0;
}

/* trackers import: the state of one run. */
typedef struct {
    admin_ctx *c;
    apr_int64_t account_id;
    int dry_run;
    int by_line;                /* rows placed by line, else by item number (JSON) */
    int progress;               /* stderr is a terminal */
    int shown;                  /* a progress line is on it */
    apr_time_t shown_at;
    long rows, imported, failed;
    apr_hash_t *seen;           /* dry run: codes that would be made */
    qrt_tracker_t *t;           /* the batch's good rows */
    int n;
    long *line;                 /* every row of the batch: where it is, why it fails */
    const char **err;
    int rows_n;
} admin_trk;

static void admin_trk_clear(admin_trk *s)
{
    if (s->shown) {
        fputs("\r\033[K", stderr);
        s->shown = 0;
    }
}

static void admin_trk_fail(admin_trk *s, long line, const char *why)
{
    admin_trk_clear(s);
    fprintf(stderr, "%s %ld: %s\n", s->by_line ? "line" : "row", line, why);
    s->failed++;
}

/* A \r progress line every half second while stderr is a terminal. */
static void admin_trk_progress(admin_trk *s)
{
    apr_time_t now;

    if (!s->progress) {
        return;
    }
    now = apr_time_now();
    if (now - s->shown_at >= apr_time_from_msec(500)) {
        fprintf(stderr, "\r%ld rows read, %ld %s, %ld failed", s->rows, s->imported,
                s->dry_run ? "to import" : "imported", s->failed);
        fflush(stderr);
        s->shown = 1;
        s->shown_at = now;
    }
}

/* The batch's trackers through qrt_store_tracker_import, res[i] for each; a batch the
 * database refuses (not a taken code) is tried again a tracker at a time, so that only
 * its bad ones fail (res[i] APR_EGENERAL, why[i] the database's message). 0, or 1 when
 * the database cannot go on. */
static int admin_trk_store(admin_trk *s, apr_pool_t *p, qrt_tracker_t *t, int n,
                           apr_status_t *res, const char **why)
{
    apr_status_t rv;
    int i;

    if (n == 0) {
        return 0;
    }
    rv = qrt_store_tracker_import(&s->c->db, p, t, n, s->dry_run, res);
    if (rv == APR_SUCCESS) {
        return 0;
    }
    if (qrt_db_lost(&s->c->db) || (n > 1 && s->dry_run)) {
        return admin_fail("import failed: %s%s", s->c->db.error ? s->c->db.error : "", NULL);
    }
    if (n == 1) {
        res[0] = APR_EGENERAL;
        why[0] = apr_pstrcat(p, "the database refused it: ",
                             s->c->db.error ? s->c->db.error : "unknown error", NULL);
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (admin_trk_store(s, p, t + i, 1, res + i, why + i)) {
            return 1;
        }
    }
    return 0;
}

/* Stores the batch's good rows and reports every row's failure in the file's order. */
static int admin_trk_flush(admin_trk *s, apr_pool_t *p)
{
    apr_status_t *res = apr_palloc(p, sizeof(*res) * (s->n ? s->n : 1));
    const char **why = apr_pcalloc(p, sizeof(*why) * (s->n ? s->n : 1));
    int i, k = 0;

    if (admin_trk_store(s, p, s->t, s->n, res, why)) {
        return 1;
    }
    for (i = 0; i < s->rows_n; i++) {
        const char *err = s->err[i];

        if (!err) {
            qrt_tracker_t *t = &s->t[k];

            if (res[k] == APR_EEXIST
                || (s->seen && apr_hash_get(s->seen, t->code, APR_HASH_KEY_STRING))) {
                err = apr_psprintf(p, "the code %s is taken", t->code);
            }
            else if (res[k] != APR_SUCCESS) {
                err = why[k];
            }
            else if (s->seen) {
                apr_hash_set(s->seen, apr_pstrdup(s->c->p, t->code), APR_HASH_KEY_STRING, "");
            }
            k++;
        }
        if (err) {
            admin_trk_fail(s, s->line[i], err);
        }
        else {
            s->imported++;
        }
    }
    s->n = s->rows_n = 0;
    return 0;
}

/* trackers import ACCOUNT --from FORMAT FILE [--dry-run]: a peer's export read by
 * qrt_peer, in transactions of ADMIN_TRACKER_BATCH trackers. Exit status 0 when every
 * row was imported, 2 when some failed (one line each on stderr), 1 when the import
 * could not go on (the batches before stay). */
static int admin_trackers_import(admin_ctx *c, const char *account, int fmt,
                                 const char *path, int dry_run)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    admin_trk s;
    qrt_account_t a;
    qrt_peer_reader_t *r;
    qrt_peer_row_t row;
    apr_pool_t *bp, *rp;
    apr_int64_t now = apr_time_sec(apr_time_now());
    int rc, fatal = 0;

    if (!f) {
        return admin_fail("cannot read %s: %s", path, strerror(errno));
    }
    if (admin_open(c, 0) || admin_find_account(c, account, &a)) {
        return 1;
    }
    memset(&s, 0, sizeof(s));
    s.c = c;
    s.account_id = a.id;
    s.dry_run = dry_run;
    s.progress = isatty(fileno(stderr));
    s.seen = dry_run ? apr_hash_make(c->p) : NULL;
    s.t = apr_pcalloc(c->p, sizeof(*s.t) * ADMIN_TRACKER_BATCH);
    s.line = apr_pcalloc(c->p, sizeof(*s.line) * ADMIN_TRACKER_BATCH);
    s.err = apr_pcalloc(c->p, sizeof(*s.err) * ADMIN_TRACKER_BATCH);
    apr_pool_create(&bp, c->p);
    apr_pool_create(&rp, c->p);
    r = qrt_peer_open_file(rp, (qrt_peer_format_t)fmt, f);
    while (!fatal && (rc = qrt_peer_next(r, bp, &row)) == 1) {
        s.by_line = qrt_peer_by_line(r);
        s.rows++;
        s.line[s.rows_n] = row.line;
        s.err[s.rows_n++] = row.error;
        if (!row.error) {
            qrt_tracker_t *t = &s.t[s.n++];

            memset(t, 0, sizeof(*t));
            t->account_id = a.id;
            t->code = row.code;
            t->name = row.name;
            t->type = "website";
            t->redirect_url = row.url;
            t->tags = row.tags;
            t->created_at = row.created_at ? row.created_at : now;
        }
        if (s.rows_n == ADMIN_TRACKER_BATCH) {
            fatal = admin_trk_flush(&s, bp);
            apr_pool_clear(bp);
        }
        admin_trk_progress(&s);
    }
    if (!fatal) {
        fatal = admin_trk_flush(&s, bp);
    }
    admin_trk_clear(&s);
    if (!fatal && rc < 0) {
        fatal = admin_fail("%s: %s", path, qrt_peer_error(r));
    }
    if (f != stdin) {
        fclose(f);
    }
    printf("%simported %ld, failed %ld\n", dry_run ? "dry run: would have " : "",
           s.imported, s.failed);
    return fatal ? 1 : s.failed ? 2 : 0;
}

static int admin_trackers(admin_ctx *c, int argc, const char *const *argv)
{
    const char *account = NULL, *path = NULL;
    int i, fmt = -1, dry_run = 0;

    if (argc < 1 || strcmp(argv[0], "import")) {
        admin_usage();
        return 2;
    }
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--from") && i + 1 < argc) {
            fmt = qrt_peer_format_named(argv[++i]);
            if (fmt < 0) {
                return admin_fail("--from: '%s' is not shlink, yourls, kutt or csv%s",
                                  argv[i], NULL);
            }
        }
        else if (!strcmp(argv[i], "--dry-run")) {
            dry_run = 1;
        }
        else if (!account && (strncmp(argv[i], "--", 2) || !argv[i][2])) {
            account = argv[i];
        }
        else if (!path && (strncmp(argv[i], "--", 2) || !argv[i][2])) {
            path = argv[i];
        }
        else {
            admin_usage();
            return 2;
        }
    }
    if (!account || !path || fmt < 0) {
        admin_usage();
        return 2;
    }
    return admin_trackers_import(c, account, fmt, path, dry_run);
}

static int admin_visits(admin_ctx *c, int argc, const char *const *argv)
{
    if (argc == 2 && !strcmp(argv[0], "import")) {
        return admin_visits_import(c, argv[1]);
    }
    if (argc == 2 && !strcmp(argv[0], "purge")) {
        return admin_visits_purge(c, argv[1]);
    }
    admin_usage();
    return 2;
}

/* Recomputes db's report aggregates from its visits, in one transaction. */
static int admin_seal(admin_ctx *c, qrt_db_t *db);

static int admin_rebuild(admin_ctx *c, qrt_db_t *db)
{
    apr_dbd_transaction_t *tx;
    apr_status_t rv;

    if (qrt_db_begin(db, c->p, &tx) != APR_SUCCESS) {
        return admin_fail("%s%s", db->error, NULL);
    }
    rv = qrt_store_agg_rebuild(db, c->p);
    if (rv != APR_SUCCESS) {
        qrt_db_rollback_only(db, tx);
    }
    if (qrt_db_end(db, c->p, tx) != APR_SUCCESS || rv != APR_SUCCESS) {
        return admin_fail("rebuild failed: %s%s", db->error ? db->error : "", NULL);
    }
    /* PostgreSQL: the link and gap rows were written a share of the visitors at a time,
     * each share's rows all over their indexes, whose pages then stay two thirds full;
     * they are built again, packed, concurrently (as `compact` does). The rebuild stands
     * if this fails (`compact` does it later). */
    if (qrt_dialect_of(db->driver) && qrt_dialect_of(db->driver)->compact) {
        static const char *const aggs[] = { "agg_link", "agg_gaps", NULL };

        if (qrt_store_compact_tables(db, c->p, aggs, NULL, NULL) != APR_SUCCESS) {
            fprintf(stderr, "qrtrack-admin: the rebuilt aggregates' indexes were not "
                    "packed (qrtrack-admin compact packs them): %s\n",
                    db->error ? db->error : "failed");
        }
    }
    /* Then the settled days sealed (the servers' writers would, in their idle time). */
    return admin_seal(c, db);
}

/* Seals every settled day's aggregates now (qrt_store_agg_blob.h). */
static int admin_seal(admin_ctx *c, qrt_db_t *db)
{
    apr_status_t rv = qrt_store_agg_blob_relist(db, c->p);

    if (rv != APR_SUCCESS) {
        return admin_fail("listing the days to seal failed: %s%s",
                          db->error ? db->error : "", NULL);
    }
    for (;;) {
        apr_pool_t *sp;
        int sealed = 0, more = 0;

        apr_pool_create(&sp, c->p);
        rv = qrt_store_agg_blob_seal(db, sp, apr_time_sec(apr_time_now()), 256, &sealed,
                                     &more, NULL);
        apr_pool_destroy(sp);
        if (rv != APR_SUCCESS) {
            return admin_fail("sealing the aggregates failed: %s%s",
                              db->error ? db->error : "", NULL);
        }
        if (!more) {
            break;
        }
    }
    return 0;
}

static int admin_aggregates(admin_ctx *c, int argc, const char *const *argv)
{
    if (argc != 1 || (strcmp(argv[0], "rebuild") && strcmp(argv[0], "seal"))) {
        admin_usage();
        return 2;
    }
    if (admin_open(c, 0)) {
        return 1;
    }
    return strcmp(argv[0], "seal") ? admin_rebuild(c, &c->db) : admin_seal(c, &c->db);
}

static void admin_compact_step(void *ctx, const char *what, int done, double seconds)
{
    *(int *)ctx = !done;            /* (a line begun) */
    if (!done) {
        printf("compacting %s ...", what);
    }
    else {
        printf(" %.1f s\n", seconds);
    }
    fflush(stdout);
}

/* spool refused FILE: one JSON line a refused visit: its sequence number, when and why
 * it was refused, and its fields as visits import names them. */
static apr_status_t admin_refused_line(void *ctx, apr_int64_t seq, const qrt_visit_t *v,
                                       const char *why, apr_int64_t at)
{
    static const char *const names[] = { "source", "ip", "country", "city", "browser",
                                         "browser_version", "os", "device", "referer",
                                         "user_agent", "destination" };
    const char *vals[] = { v->source, v->ip, v->country, v->city, v->browser,
                           v->browser_version, v->os, v->device, v->referer,
                           v->user_agent, v->destination };
    json_t *o = json_object();
    char when[QRT_DATE_LEN], start[QRT_DATE_LEN], *line;
    apr_size_t i;

    (void)ctx;
    qrt_date_format(when, at, 0);
    qrt_date_format(start, v->visit_start, 0);
    json_object_set_new(o, "seq", json_integer((json_int_t)seq));
    json_object_set_new(o, "refused_at", json_string(when));
    json_object_set_new(o, "error", json_string(why));
    json_object_set_new(o, "tracker_id", json_integer((json_int_t)v->tracker_id));
    json_object_set_new(o, "visit_start", json_string(start));
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        json_object_set_new(o, names[i], vals[i] ? json_string(vals[i]) : json_null());
    }
    json_object_set_new(o, "bot", json_boolean(v->bot));
    line = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!line) {
        return APR_ENOMEM;
    }
    puts(line);
    free(line);
    return APR_SUCCESS;
}

/* spool refused|retry FILE: a node's spool, opened as the server's writer opens it
 * (a server running meanwhile waits for it, briefly, as for its own). */
static int admin_spool(admin_ctx *c, int argc, const char *const *argv)
{
    qrt_spool_t *sp;
    const char *err = NULL;
    apr_int64_t n = 0;
    apr_status_t rv;

    if (argc != 2 || (strcmp(argv[0], "refused") && strcmp(argv[0], "retry"))) {
        admin_usage();
        return 2;
    }
    if (access(argv[1], F_OK) != 0) {
        return admin_fail("no spool at %s%s", argv[1], NULL);
    }
    /* (opened as a spool, any SQLite file became one: the main database got its tables) */
    if (!qrt_spool_is_spool(argv[1], &err)) {
        return admin_fail("%s is not a node's spool: %s", argv[1], err);
    }
    if (qrt_spool_open(c->p, argv[1], QRT_SPOOL_VISITS, &sp, &err) != APR_SUCCESS) {
        return admin_fail("cannot open the spool: %s%s", err ? err : "unknown error", NULL);
    }
    if (!strcmp(argv[0], "refused")) {
        rv = qrt_spool_refused_each(sp, c->p, admin_refused_line, NULL);
        if (rv != APR_SUCCESS) {
            return admin_fail("cannot read the refused visits: %s%s", qrt_spool_error(sp),
                              NULL);
        }
        return 0;
    }
    if (qrt_spool_refused_retry(sp, &n) != APR_SUCCESS) {
        return admin_fail("cannot put the refused visits back: %s%s", qrt_spool_error(sp),
                          NULL);
    }
    printf("%" APR_INT64_T_FMT " visits back in the spool (the server replays them within "
           "seconds)\n", n);
    return 0;
}

/* compact: the dialect's compaction (qrt_store_compact.h), with the database's size
 * before and after. */
static int admin_compact(admin_ctx *c)
{
    apr_int64_t before = 0, after = 0;
    apr_status_t rv;
    int begun = 0;

    if (admin_open(c, 0)) {
        return 1;
    }
    if (qrt_store_db_bytes(&c->db, c->p, &before) != APR_SUCCESS) {
        return admin_fail("cannot read the database's size: %s%s", c->db.error, NULL);
    }
    rv = qrt_store_compact(&c->db, c->p, admin_compact_step, &begun);
    if (rv != APR_SUCCESS) {
        if (begun) {
            printf("\n");
        }
        return admin_fail("compaction failed: %s%s", c->db.error ? c->db.error : "", NULL);
    }
    if (qrt_store_db_bytes(&c->db, c->p, &after) != APR_SUCCESS) {
        return admin_fail("cannot read the database's size: %s%s", c->db.error, NULL);
    }
    printf("database: %.1f MB before, %.1f MB after\n", (double)before / 1e6,
           (double)after / 1e6);
    return 0;
}

/* copy-to, once both databases are open: the checks, the rows (read in one
 * transaction of the source, so from one snapshot of it), the sequences, the
 * aggregates, and the summary. */
static int admin_copy_run(admin_ctx *c, qrt_db_t *to)
{
    qrt_copy_report_t r;
    apr_dbd_transaction_t *tx;
    const char *table;
    apr_status_t rv;
    int i;

    rv = qrt_store_copy_check_empty(to, c->p, &table);
    if (rv == APR_EEXIST) {
        return admin_fail("the target database is not empty (%s has rows): copy-to "
                          "needs an empty one%s", table, NULL);
    }
    if (rv != APR_SUCCESS) {
        return admin_fail("%s%s", to->error, NULL);
    }
    rv = qrt_store_copy_check_empty(&c->db, c->p, &table);
    if (rv == APR_SUCCESS) {
        return admin_fail("nothing to copy: the source database %s is empty%s",
                          c->params, NULL);
    }
    if (rv != APR_EEXIST || qrt_db_begin(&c->db, c->p, &tx) != APR_SUCCESS) {
        return admin_fail("%s%s", c->db.error, NULL);
    }
    rv = qrt_store_copy_all(&c->db, to, c->p, &r);
    qrt_db_end(&c->db, c->p, tx);
    if (rv != APR_SUCCESS) {
        return admin_fail("copy failed, the target holds part of it (empty it before "
                          "trying again): %s%s", r.error, NULL);
    }
    if (qrt_store_copy_sequences(to, c->p) != APR_SUCCESS) {
        return admin_fail("%s%s", to->error, NULL);
    }
    /* The copied visitor ids were made with the source's key: new visits must be too. */
    for (i = 0; i < 2; i++) {
        static const char *const names[] = { "visitor_key", "visitor_rotation" };
        const char *v = NULL;

        if (qrt_store_setting_get(&c->db, c->p, names[i], &v) != APR_SUCCESS
            || qrt_store_setting_set(to, c->p, names[i], v) != APR_SUCCESS) {
            return admin_fail("cannot copy the setting %s: %s", names[i],
                              c->db.error ? c->db.error : to->error ? to->error : "");
        }
    }
    if (admin_rebuild(c, to)) {
        return 1;
    }
    printf("copied");
    for (i = 0; i < QRT_COPY_TABLES; i++) {
        printf("%s %s %" APR_INT64_T_FMT, i ? "," : "", r.table[i], r.rows[i]);
    }
    printf("; report aggregates rebuilt\n");
    return 0;
}

/* visitor-key show | new | rotate daily|none: how visitor ids are made. A new key,
 * or another rotation, takes effect when httpd next starts (or a graceful restart);
 * unique visitors then count a returning visitor once more. */
static int admin_visitor_key(admin_ctx *c, int argc, const char *const *argv)
{
    qrt_visitor_key_t k;
    const char *rotation = NULL, *key;

    if (!((argc == 1 && (!strcmp(argv[0], "show") || !strcmp(argv[0], "new")))
          || (argc == 2 && !strcmp(argv[0], "rotate")
              && (!strcmp(argv[1], "daily") || !strcmp(argv[1], "none"))))) {
        admin_usage();
        return 2;
    }
    if (admin_open(c, 0)) {
        return 1;
    }
    if (!strcmp(argv[0], "new")) {
        key = qrt_visitor_key_generate(c->p);
        if (!key || qrt_store_setting_set(&c->db, c->p, "visitor_key", key) != APR_SUCCESS) {
            return admin_fail("cannot set a new visitor key: %s%s",
                              c->db.error ? c->db.error : "no randomness", NULL);
        }
    }
    else if (!strcmp(argv[0], "rotate")
             && qrt_store_setting_set(&c->db, c->p, "visitor_rotation", argv[1])
                != APR_SUCCESS) {
        return admin_fail("cannot set the rotation: %s%s", c->db.error, NULL);
    }
    if (qrt_store_visitor_key(&c->db, c->p, &k) != APR_SUCCESS
        || qrt_store_setting_get(&c->db, c->p, "visitor_rotation", &rotation)
           != APR_SUCCESS) {
        return admin_fail("cannot read the visitor key: %s%s",
                          c->db.error ? c->db.error : "malformed", NULL);
    }
    /* Never the key itself. */
    printf("visitor ids: %s, rotation %s\n",
           k.keylen ? "keyed with this installation's secret" : "unkeyed (from before "
           "version 6: 'qrtrack-admin visitor-key new' gives them a key)", rotation);
    return 0;
}

/* copy-to DRIVER PARAMS: everything of this database into an empty one. */
static int admin_copy_to(admin_ctx *c, int argc, const char *const *argv)
{
    qrt_db_t to;
    int rc;

    if (argc != 2) {
        admin_usage();
        return 2;
    }
    if (admin_open(c, 0)) {
        return 1;
    }
    memset(&to, 0, sizeof(to));
    rc = admin_connect(c, &to, argv[0], argv[1], 1);
    if (!rc) {
        rc = admin_copy_run(c, &to);
    }
    if (to.handle) {
        apr_dbd_close(to.driver, to.handle);
    }
    return rc;
}

/* The database when --driver and --params are not both given: DBDriver/DBDParams
 * from the Apache configuration (an explicit one must be readable), else the default. */
static int admin_database(admin_ctx *c, const char *conf)
{
    const char *confdir = getenv("APACHE_CONFDIR"), *root = NULL, *err;
    qrt_apconf_dbd_t d;
    int asked = 1;

    if (c->driver || c->params) {
        c->driver = c->driver ? c->driver : "sqlite3";
        c->params = c->params ? c->params : QRT_ADMIN_DEFAULT_DB;
        return 0;
    }
    c->driver = "sqlite3";
    c->params = QRT_ADMIN_DEFAULT_DB;
    if (!conf && confdir && *confdir) {
        conf = apr_pstrcat(c->p, confdir, "/apache2.conf", NULL);
        root = confdir;
    }
    if (!conf) {
        conf = admin_apache_conf;
        asked = 0;
    }
    if (!conf) {
        return 0;
    }
    err = qrt_apconf_read_dbd(c->p, conf, root, &d);
    if (err) {
        if (!asked && d.missing) {
            return 0;
        }
        return admin_fail("%s%s", err, NULL);
    }
    if (!d.driver && !d.params) {
        return 0;
    }
    if (!d.driver || !d.params) {
        return admin_fail("the Apache configuration %s has %s but no DBDriver and "
                          "DBDParams pair at server level (give --driver and --params)",
                          conf, d.driver ? apr_pstrcat(c->p, "DBDriver at ", d.driver_at,
                                                       NULL)
                                         : apr_pstrcat(c->p, "DBDParams at ", d.params_at,
                                                       NULL));
    }
    c->driver = d.driver;
    c->params = d.params;
    return 0;
}

int main(int argc, const char *const *argv)
{
    admin_ctx c;
    const char *apache_conf = NULL;
    apr_int64_t timeout = ADMIN_TIMEOUT_DEFAULT;
    int i = 1, j, rc;

    /* Each connection of this program is used by its main thread alone. */
    qrt_dialect_sqlite_tune(1);
    apr_app_initialize(&argc, &argv, NULL);
    atexit(apr_terminate);
    memset(&c, 0, sizeof(c));
    apr_pool_create(&c.p, NULL);
    while (i + 1 < argc && !strncmp(argv[i], "--", 2)) {
        if (!strcmp(argv[i], "--driver")) {
            c.driver = argv[i + 1];
        }
        else if (!strcmp(argv[i], "--params")) {
            c.params = argv[i + 1];
        }
        else if (!strcmp(argv[i], "--apache-config")) {
            apache_conf = argv[i + 1];
        }
        else if (!strcmp(argv[i], "--timeout")) {
            if (qrt_parse_int(argv[i + 1], 0, 3600, &timeout) != 0) {
                return admin_fail("--timeout: '%s' is not a number of seconds (0 to "
                                  "3600, 0 = no limit)%s", argv[i + 1], NULL);
            }
        }
        else {
            break;
        }
        i += 2;
    }
    /* (help, asked before the command or of it: `token --help`, `trackers import -h`) */
    for (j = i; j < argc && j <= i + 2; j++) {
        if (!strcmp(argv[j], "--help") || !strcmp(argv[j], "-h")) {
            admin_help();
            return 0;
        }
    }
    if (i < argc && admin_database(&c, apache_conf)) {
        return 1;
    }
    if (i >= argc) {
        admin_usage();
        return 2;
    }
    if (!strcmp(argv[i], "account") || !strcmp(argv[i], "token")
        || !strcmp(argv[i], "visitor-key")) {
        c.timeout_ms = (int)timeout * 1000;
    }
    if (!strcmp(argv[i], "init") && argc == i + 1) {
        rc = admin_open(&c, 1);
        if (!rc) {
            printf("schema version %d\n", qrt_schema_latest());
        }
    }
    else if (!strcmp(argv[i], "account")) {
        rc = admin_account(&c, argc - i - 1, argv + i + 1);
    }
    else if (!strcmp(argv[i], "token")) {
        rc = admin_token(&c, argc - i - 1, argv + i + 1);
    }
    else if (!strcmp(argv[i], "trackers")) {
        rc = admin_trackers(&c, argc - i - 1, argv + i + 1);
    }
    else if (!strcmp(argv[i], "visits")) {
        rc = admin_visits(&c, argc - i - 1, argv + i + 1);
    }
    else if (!strcmp(argv[i], "aggregates")) {
        rc = admin_aggregates(&c, argc - i - 1, argv + i + 1);
    }
    else if (!strcmp(argv[i], "visitor-key")) {
        rc = admin_visitor_key(&c, argc - i - 1, argv + i + 1);
    }
    else if (!strcmp(argv[i], "compact") && argc == i + 1) {
        rc = admin_compact(&c);
    }
    else if (!strcmp(argv[i], "copy-to")) {
        rc = admin_copy_to(&c, argc - i - 1, argv + i + 1);
    }
    else if (!strcmp(argv[i], "spool")) {
        rc = admin_spool(&c, argc - i - 1, argv + i + 1);
    }
    else {
        admin_usage();
        rc = 2;
    }
    /* (what a command printed must have been written: a full disk or a closed output
     * is a failure, not a success with nothing shown) */
    if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout))) {
        rc = admin_fail("cannot write the output (%s)%s", strerror(errno ? errno : EIO),
                        NULL);
    }
    if (c.db.handle) {
        apr_dbd_close(c.db.driver, c.db.handle);
    }
    return rc;
}
