/* mod_qrtrack_db: the database as the glue sees it: DBDriver/DBDParams found and
 * checked, the schema brought up to date at start-up, mod_dbd's connections set up,
 * prepared and handed out, QRTrackStatementTimeout on them, and what the error log
 * says when mod_dbd has no connection to give.
 *
 * The limit is set once a connection (mod_dbd's post_connect, qrt_dbd_limit) and
 * looked at, without a round trip, each time a request takes the connection: a
 * PostgreSQL connection that libpq re-opened in place (apr_dbd's check of a pooled
 * connection) is a new session without the settings, and gets them again. The scan
 * writers' own connections are not mod_dbd's and keep their own bounds. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>
#include <apr_strings.h>
#include <apr_dbd.h>
#include <apr_optional.h>
#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "http_main.h"
#include "unixd.h"
#include "mod_dbd.h"

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_config.h"
#include "mod_qrtrack_db.h"
#include "qrt_dbwatch.h"
#include "mod_qrtrack_util.h"
#include "mod_qrtrack_wal.h"
#include "qrt_dbfile.h"
#include "qrt_dblimit.h"
#include "qrt_resolve.h"
#include "qrt_schema.h"

APLOG_USE_MODULE(qrtrack);

#define LIMIT_KEY "qrtrack-statement-limit"

/* What was set on one connection, kept in the connection's pool. */
typedef struct {
    int set;                    /* the limit is on the connection */
    int session;                /* qrt_db_session when it was set */
    qrt_db_limit_t *sqlite;     /* SQLite: its state */
} dbd_limit_t;

/* Set in post_config (parent) and read-only afterwards. */
static const qrt_dialect_t *dbd_dialect;
static qrt_visitor_key_t visitor_key;

const qrt_dialect_t *qrt_dbd_dialect(void)
{
    return dbd_dialect;
}

const qrt_visitor_key_t *qrt_dbd_visitor_key(void)
{
    return &visitor_key;
}

int qrt_statement_timeout_ms(void)
{
    return qrt_config()->statement_timeout * 1000;
}

int qrt_db_call_limit_ms(void)
{
    int ms = qrt_statement_timeout_ms();

    return ms ? ms + QRT_DBWATCH_MARGIN_MS : 0;
}

void qrt_dbd_limit(ap_dbd_t *dbd, server_rec *s)
{
    dbd_limit_t *l = NULL;
    int session, ms = qrt_statement_timeout_ms();
    apr_uint32_t more = 0;

    if (!dbd || ms <= 0) {
        return;
    }
    apr_pool_userdata_get((void **)&l, LIMIT_KEY, dbd->pool);
    if (!l) {
        l = apr_pcalloc(dbd->pool, sizeof(*l));
        apr_pool_userdata_setn(l, LIMIT_KEY, NULL, dbd->pool);
    }
    session = qrt_db_session(dbd->driver, dbd->handle);
    if (l->set && (!session || session == l->session)) {
        qrt_db_limit_idle(l->sqlite);
        return;
    }
    if (qrt_db_limit(dbd->driver, dbd->handle, dbd->pool, ms, &l->sqlite) != APR_SUCCESS) {
        qrt_db_t was;

        memset(&was, 0, sizeof(was));
        was.error = apr_dbd_error(dbd->driver, dbd->handle, 1);
        /* A pooled connection the server closed while it was idle (its
         * idle_session_timeout, a restart since): opened again in place, its statements
         * prepared again by its first use (qrt_store.c), and limited then. */
        if (qrt_db_lost(&was)
            && apr_dbd_check_conn(dbd->driver, dbd->pool, dbd->handle) == APR_SUCCESS
            && qrt_db_limit(dbd->driver, dbd->handle, dbd->pool, ms, &l->sqlite)
               == APR_SUCCESS) {
            l->set = 1;
            l->session = qrt_db_session(dbd->driver, dbd->handle);
            return;
        }
        if (qrt_log_due(qrt_ration(QRT_R_DB_LIMIT), &more)) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "QRT00093: cannot put a "
                         "database connection under QRTrackStatementTimeout (%d s): %s "
                         "(and %u more since this line was last logged)",
                         qrt_config()->statement_timeout,
                         apr_dbd_error(dbd->driver, dbd->handle, 1), more);
        }
        return;
    }
    l->set = 1;
    l->session = session;
}

/* ---- the database server's address (qrt_resolve.h) -------------------------------
 *
 * A host name in DBDParams is looked up aside, within a bound, and libpq gets the address
 * as hostaddr: a DNS server that stops answering holds no connection for its timeouts.
 * httpd's parent looks it up in a process of its own as the configuration is read; when
 * no answer comes and it knew the address before (an earlier generation of this server),
 * DBDParams as mod_dbd reads it names that address for this generation (the connections a
 * child opens as it starts would wait the lookup out before it serves anything), and the
 * module's own connections use it until a lookup answers. A child looks it up in a thread
 * each time the module opens a connection (at most RESOLVE_WAIT), and every connection of
 * mod_dbd's after the first of a child gets the address known then. */
#define RESOLVE_START_WAIT apr_time_from_sec(2)
#define RESOLVE_WAIT       apr_time_from_sec(1)
#define RESOLVE_FRESH      apr_time_from_sec(1)
#define RESOLVE_DBD_FRESH  apr_time_from_sec(5)
#define RESOLVE_KEY        "qrtrack-db-address"
/* ... and in the node's directory, for a first start (read before the configuration is,
 * from QRTrackSpoolDir as written or the default: "host address\n") */
#define RESOLVE_FILE       "qrtrack-db-address"

/* The last address of a host this process knew, kept across generations. */
typedef struct {
    char host[256];
    char addr[QRT_ADDR_MAX];
} resolve_known_t;

static const qrt_dialect_t *resolve_dialect; /* DBDriver's */
static const char *resolve_host;            /* DBDParams' host name; NULL: none to look up */
static char start_addr[QRT_ADDR_MAX];       /* as this generation started ("" none) */
static const char *start_why;               /* why not */
static const char *dbd_params_original;     /* DBDParams as written */
static const char *dbd_params_pinned;       /* ... as mod_dbd reads it, naming start_addr:
                                             * the last one known, as no answer came */
static qrt_resolver_t *resolver;            /* a child's */

/* The node's directory as the configuration says (before it is read: the tree), NULL
 * when off. */
static const char *resolve_node_dir(apr_pool_t *p)
{
    const ap_directive_t *d;
    const char *dir = QRT_STATE_DIR, *a;

    for (d = ap_conftree; d; d = d->next) {
        if (!strcasecmp(d->directive, "QRTrackSpoolDir")) {
            a = d->args;
            dir = ap_getword_conf(p, &a);
        }
    }
    return strcasecmp(dir, "off") ? dir : NULL;
}

static void resolve_file_read(apr_pool_t *p, resolve_known_t *known)
{
    const char *dir = resolve_node_dir(p);
    char text[sizeof(known->host) + QRT_ADDR_MAX + 2], *sp, *nl;
    ssize_t got;
    int fd;

    if (!dir || (fd = open(apr_pstrcat(p, dir, "/" RESOLVE_FILE, NULL),
                           O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0) {
        return;
    }
    got = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (got <= 0) {
        return;
    }
    text[got] = '\0';
    if ((nl = strchr(text, '\n')) != NULL) {
        *nl = '\0';
    }
    if ((sp = strchr(text, ' ')) == NULL) {
        return;
    }
    *sp++ = '\0';
    if (!strcmp(text, known->host) && strlen(sp) < QRT_ADDR_MAX
        && qrt_resolve_addrs_valid(sp)) {
        strcpy(known->addr, sp);
    }
}

/* DBDParams as the directive's arguments hold it: in double quotes. */
static const char *conf_quoted(apr_pool_t *p, const char *v)
{
    char *out = apr_palloc(p, strlen(v) * 2 + 3), *o = out;

    *o++ = '"';
    for (; *v; v++) {
        if (*v == '"') {
            *o++ = '\\';
        }
        *o++ = *v;
    }
    *o++ = '"';
    *o = '\0';
    return out;
}

void qrt_dbd_resolve_pre_config(apr_pool_t *pconf)
{
    apr_pool_t *pp = ap_server_conf ? ap_server_conf->process->pool : NULL;
    ap_directive_t *d, *pd = NULL;
    const char *driver = NULL, *params = NULL, *host, *a;
    resolve_known_t *known = NULL;
    char addr[QRT_ADDR_MAX];
    int code;

    resolve_host = start_why = dbd_params_original = dbd_params_pinned = NULL;
    start_addr[0] = '\0';
    for (d = ap_conftree; d; d = d->next) {
        a = d->args;
        if (!strcasecmp(d->directive, "DBDriver")) {
            driver = ap_getword_conf(pconf, &a);
        }
        else if (!strcasecmp(d->directive, "DBDParams")) {
            params = ap_getword_conf(pconf, &a);
            pd = d;
        }
    }
    resolve_dialect = driver ? qrt_dialect_named(driver) : NULL;
    if (!pp || !resolve_dialect || !resolve_dialect->host_to_resolve || !params
        || !(host = resolve_dialect->host_to_resolve(pconf, params))
        || strlen(host) >= sizeof(known->host)) {
        return;
    }
    resolve_host = host;
    dbd_params_original = params;
    apr_pool_userdata_get((void **)&known, RESOLVE_KEY, pp);
    if (!known) {
        known = apr_pcalloc(pp, sizeof(*known));
        apr_pool_userdata_set(known, RESOLVE_KEY, apr_pool_cleanup_null, pp);
    }
    if (strcmp(known->host, host)) {
        strcpy(known->host, host);
        known->addr[0] = '\0';
    }
    if (!known->addr[0]) {
        resolve_file_read(pconf, known);
    }
    code = qrt_resolve_aside(host, RESOLVE_START_WAIT, NULL, addr);
    if (code == 0) {
        strcpy(known->addr, addr);
        strcpy(start_addr, addr);
        return;
    }
    start_why = gai_strerror(code);
    if (qrt_resolve_is_final(code)) {
        known->addr[0] = '\0';
    }
    if (!known->addr[0]) {
        return;
    }
    strcpy(start_addr, known->addr);
    dbd_params_pinned = resolve_dialect->with_addresses(pconf, params, host, start_addr);
    pd->args = conf_quoted(pconf, dbd_params_pinned);
    /* and a virtual host's that repeats it (one database per server: mod_dbd then
     * keeps one pool for both) */
    for (d = ap_conftree; d; d = d->next) {
        ap_directive_t *v;

        for (v = strcasecmp(d->directive, "<VirtualHost") ? NULL : d->first_child; v;
             v = v->next) {
            a = v->args;
            if (!strcasecmp(v->directive, "DBDParams")
                && !strcmp(ap_getword_conf(pconf, &a), params)) {
                v->args = pd->args;
            }
        }
    }
}

const char *qrt_dbd_params_unpinned(const char *params)
{
    return params && dbd_params_pinned && !strcmp(params, dbd_params_pinned)
           ? dbd_params_original : params;
}

void qrt_dbd_resolve_child_init(void)
{
    resolver = resolve_host ? qrt_resolver_make(resolve_host, start_addr, NULL) : NULL;
}

const char *qrt_dbd_params_now(apr_pool_t *p, const char **err)
{
    const char *params = qrt_dbd_params_unpinned(qrt_config()->dbd_params), *why = NULL;
    char addr[QRT_ADDR_MAX];

    *err = NULL;
    if (!resolve_host || !params) {
        return params;
    }
    if (!resolver) {
        /* httpd's parent: what the start found */
        if (start_addr[0]) {
            return resolve_dialect->with_addresses(p, params, resolve_host, start_addr);
        }
        why = start_why;
    }
    else if (qrt_resolve(resolver, RESOLVE_WAIT, RESOLVE_FRESH, addr, &why) >= 0) {
        return resolve_dialect->with_addresses(p, params, resolve_host, addr);
    }
    *err = apr_psprintf(p, "cannot look up the database host %s: %s", resolve_host,
                        why ? why : "no address");
    return NULL;
}

/* mod_dbd reads its DBDParams at each connection it opens: the next ones of the main
 * server's name the addresses known now (a lookup started here if the last answer is
 * older than RESOLVE_DBD_FRESH, not waited for). A string is made only when they change
 * (each stays: a thread may be opening a connection with it). */
static void dbd_params_follow(apr_pool_t *p, dbd_cfg_t *cfg)
{
    static char *made;              /* the last one set */
    const char *why, *cur = __atomic_load_n(&cfg->params, __ATOMIC_ACQUIRE), *want;
    char *last = __atomic_load_n(&made, __ATOMIC_ACQUIRE), *params;
    char addr[QRT_ADDR_MAX];

    if (!resolver || !cur || (cur != last && strcmp(cur, dbd_params_original)
                              && (!dbd_params_pinned || strcmp(cur, dbd_params_pinned)))
        || qrt_resolve(resolver, 0, RESOLVE_DBD_FRESH, addr, &why) < 0) {
        return;
    }
    want = resolve_dialect->with_addresses(p, dbd_params_original, resolve_host, addr);
    if ((last && !strcmp(last, want)) || !(params = strdup(want))) {
        return;
    }
    __atomic_store_n(&made, params, __ATOMIC_RELEASE);
    __atomic_store_n(&cfg->params, params, __ATOMIC_RELEASE);
}

/* Opens a connection as mod_dbd would, only to learn why it cannot: mod_dbd keeps
 * the driver's message to its own log line. NULL when this one opens. Not on
 * SQLite, whose driver gives no message (and would create a missing file). */
static const char *dbd_refusal_message(apr_pool_t *p)
{
    const apr_dbd_driver_t *driver;
    apr_dbd_t *handle = NULL;
    const char *err = NULL, *params;

    if (!qrt_config()->dbd_driver || !qrt_config()->dbd_params
        || apr_dbd_get_driver(p, qrt_config()->dbd_driver, &driver) != APR_SUCCESS) {
        return "no database driver";
    }
    if (!qrt_dialect_remote(driver)) {
        return "see mod_dbd's AH00629 line";
    }
    if ((params = qrt_dbd_params_now(p, &err)) == NULL) {
        return err;
    }
    if (apr_dbd_open_ex(driver, p, params, &handle, &err) == APR_SUCCESS
        && handle) {
        apr_dbd_close(driver, handle);
        return NULL;
    }
    return err && *err ? err : "the driver gives no reason";
}

void qrt_dbd_refused(request_rec *r)
{
    apr_uint32_t more = 0;
    const char *err;
    char *msg, *end;

    if (!qrt_log_due(qrt_ration(QRT_R_DB_REFUSED), &more)) {
        return;
    }
    err = dbd_refusal_message(r->pool);
    if (!err) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, "QRT00022: mod_dbd gave no database "
                      "connection, though one opens now: see mod_dbd's own lines "
                      "(AH00629, AH00633) before this one (and %u more requests without "
                      "a connection since this line was last logged)", more);
        return;
    }
    /* libpq's message: lines, ending with a newline */
    msg = apr_pstrdup(r->pool, err);
    for (end = msg; *end; end++) {
        if (*end == '\n' || *end == '\r') {
            *end = ' ';
        }
    }
    while (end > msg && end[-1] == ' ') {
        *--end = '\0';
    }
    ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, "QRT00091: no database connection: "
                  "%s (%s; and %u more requests without a connection since this line "
                  "was last logged)",
                  qrt_db_refusal_advice(qrt_db_refusal(dbd_dialect, msg)),
                  msg, more);
}

static const char *qrt_unquote(apr_pool_t *p, const char *a);

/* A DBDriver or DBDParams inside a <VirtualHost> that names another database than
 * the main server's: NULL when there is none, else the message that refuses it.
 * The module serves one database per httpd (one schema, one queue of visits). */
static const char *qrt_vhost_dbd(apr_pool_t *p, const char *driver, const char *params)
{
    const ap_directive_t *v, *d;

    for (v = ap_conftree; v; v = v->next) {
        if (strcasecmp(v->directive, "<VirtualHost")) {
            continue;
        }
        for (d = v->first_child; d; d = d->next) {
            int is_driver = !strcasecmp(d->directive, "DBDriver");
            const char *main_value = is_driver ? driver : params;

            if (!is_driver && strcasecmp(d->directive, "DBDParams")) {
                continue;
            }
            if (!main_value || strcmp(qrt_unquote(p, d->args), main_value)) {
                /* (the tree keeps the section's closing '>' in its args) */
                apr_size_t n = strlen(v->args);

                return apr_psprintf(p, "%s in <VirtualHost %.*s> (%s line %d) differs "
                                    "from the main server's: mod_qrtrack uses one "
                                    "database per server; set DBDriver and DBDParams "
                                    "once, outside <VirtualHost>", d->directive,
                                    (int)(n && v->args[n - 1] == '>' ? n - 1 : n), v->args,
                                    d->filename, d->line_num);
            }
        }
    }
    return NULL;
}

int qrt_user_can_write(const char *path, apr_pool_t *p)
{
    struct stat st;

    (void)p;
    if (stat(path, &st) != 0) {
        return -1;
    }
    if (geteuid() != 0) {
        return access(path, W_OK) == 0;
    }
    if (st.st_uid == ap_unixd_config.user_id) {
        return (st.st_mode & S_IWUSR) != 0;
    }
    if (st.st_gid == ap_unixd_config.group_id) {
        return (st.st_mode & S_IWGRP) != 0;
    }
    return (st.st_mode & S_IWOTH) != 0;
}

/* SQLite: the database's directory must take the WAL and shared-memory files the
 * children create, and the database itself (if there) must be writable: else
 * start-up stops here, naming the path, instead of every request answering 503. */
static const char *qrt_sqlite_writable(apr_pool_t *p, const char *params)
{
    const char *dir, *slash, *who;
    int ok;

    if (!strcmp(params, ":memory:") || !strncmp(params, "file:", 5)) {
        return NULL;
    }
    slash = strrchr(params, '/');
    dir = slash ? (slash == params ? "/" : apr_pstrndup(p, params, slash - params)) : ".";
    who = geteuid() == 0 ? apr_psprintf(p, "the server's User (uid %ld)",
                                        (long)ap_unixd_config.user_id)
                         : apr_psprintf(p, "this server (uid %ld)", (long)geteuid());
    ok = qrt_user_can_write(dir, p);
    if (ok < 0) {
        return apr_psprintf(p, "the database directory %s does not exist (DBDParams "
                            "%s): create it, writable by %s", dir, params, who);
    }
    if (!ok) {
        return apr_psprintf(p, "the database directory %s is not writable by %s "
                            "(SQLite creates %s-wal and %s-shm there): chown it to "
                            "the User", dir, who, params, params);
    }
    /* As root, the parent gives the file to the User after migrating it. */
    if (geteuid() != 0 && qrt_user_can_write(params, p) == 0) {
        return apr_psprintf(p, "the database %s is not writable by %s: chown it to "
                            "the User", params, who);
    }
    return NULL;
}

/* Strips the surrounding quotes that the config tree keeps in args. */
static const char *qrt_unquote(apr_pool_t *p, const char *a)
{
    return ap_getword_conf(p, &a);
}

const char *qrt_dbd_node_dir(apr_pool_t *p)
{
    const char *slash;

    if (qrt_config()->spool_dir) {
        return strcasecmp(qrt_config()->spool_dir, "off") ? qrt_config()->spool_dir : NULL;
    }
    if (qrt_dbd_dialect() && qrt_dbd_dialect()->embedded
        && qrt_config()->dbd_params && (slash = strrchr(qrt_config()->dbd_params, '/'))) {
        return slash == qrt_config()->dbd_params ? "/"
               : apr_pstrndup(p, qrt_config()->dbd_params, slash - qrt_config()->dbd_params);
    }
    if (qrt_dbd_dialect() && qrt_dbd_dialect()->embedded) {
        return ".";
    }
    return QRT_STATE_DIR;
}

/* ---- a restart while the database cannot be reached ---------------------------------
 *
 * Each start and restart checks the schema and reads the visitor key in the parent; a
 * restart that cannot reach the database would end httpd ("Configuration Failed"), every
 * site of the server with it, and it would not come back with the database: logrotate's
 * nightly graceful during a database's maintenance was enough. What the parent learnt at
 * its last successful check is kept in its process pool, which outlives restarts (the
 * module's statics do not: its DSO is loaded again): a restart of the same build (the
 * same migrations and statements) that finds the database unreachable, busy or full goes
 * on with it, and its children start as in an outage (the snapshot and the spool). A
 * first start reads the same from MEMO_FILE in the node's directory, written by the parent
 * (mode 0600: it holds the visitor key, which the children inherit in memory, never read);
 * another build still needs the database. */
#define RESTART_MEMO "qrtrack-restart-memo"
#define MEMO_FILE "qrtrack-start.memo"

typedef struct {
    apr_uint64_t build;         /* qrt_schema_build_id() of the build that checked */
    qrt_visitor_key_t key;
} restart_memo_t;

static restart_memo_t *restart_memo(server_rec *s, int create)
{
    void *v = NULL;

    apr_pool_userdata_get(&v, RESTART_MEMO, s->process->pool);
    if (!v && create) {
        v = apr_pcalloc(s->process->pool, sizeof(restart_memo_t));
        apr_pool_userdata_set(v, RESTART_MEMO, apr_pool_cleanup_null, s->process->pool);
    }
    return v;
}

/* NULL without the node's directory (QRTrackSpoolDir off, or missing: QRT00108 says so). */
static const char *memo_file(apr_pool_t *p)
{
    const char *dir = qrt_dbd_node_dir(p);
    struct stat st;

    return dir && stat(dir, &st) == 0 && S_ISDIR(st.st_mode)
           ? apr_pstrcat(p, dir, "/" MEMO_FILE, NULL) : NULL;
}

/* The node's file at path made to say text (written aside, then renamed), unless it
 * says it already. 0, or -1 with errno. */
static int node_file_put(apr_pool_t *p, const char *path, const char *text)
{
    const char *tmp;
    char old[256];
    size_t len = strlen(text);
    ssize_t got;
    int fd, ok;

    if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) >= 0) {
        got = read(fd, old, sizeof(old) - 1);
        close(fd);
        if (got == (ssize_t)len && !memcmp(old, text, len)) {
            return 0;
        }
    }
    tmp = apr_psprintf(p, "%s.%ld", path, (long)getpid());
    unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    ok = fd >= 0 && write(fd, text, len) == (ssize_t)len && fsync(fd) == 0;
    if (fd >= 0 && close(fd) != 0) {
        ok = 0;
    }
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;

        unlink(tmp);
        errno = e;
        return -1;
    }
    return 0;
}

/* The node's file made to say m, unless it says it already. */
static void memo_write(apr_pool_t *p, server_rec *s, const restart_memo_t *m)
{
    const char *path = memo_file(p);

    if (path && node_file_put(p, path, qrt_schema_memo_format(p, m->build, &m->key)) != 0) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, errno, s, "QRT00134: cannot write %s: "
                     "a first start while the database cannot be reached will fail", path);
    }
}

static int memo_read(apr_pool_t *p, restart_memo_t *m)
{
    const char *path = memo_file(p);
    char text[256];
    ssize_t got;
    int fd;

    if (!path || (fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0) {
        return -1;
    }
    got = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (got <= 0) {
        return -1;
    }
    text[got] = '\0';
    return qrt_schema_memo_parse(text, &m->build, &m->key);
}

/* The note of this build's last check (the process pool's, else the node's file; *first:
 * from the file), NULL when there is none for this build. */
static restart_memo_t *memo_of_this_build(apr_pool_t *ptemp, server_rec *s, int *first)
{
    restart_memo_t *m = restart_memo(s, 0), *disk;

    *first = 0;
    if (!m) {
        disk = apr_pcalloc(ptemp, sizeof(*disk));
        if (memo_read(ptemp, disk) == 0) {
            m = disk;
            *first = 1;
        }
    }
    return m && m->build == qrt_schema_build_id() ? m : NULL;
}

/* 1 when this process's server went on without its database (QRT00133): what was
 * checked then is this build's last check, so the schema is looked at again when the
 * database answers (qrt_dbd_schema_recheck). Set in the parent, inherited by the
 * children. */
static int schema_unchecked;

int qrt_dbd_schema_unchecked(void)
{
    return schema_unchecked;
}

/* mod_dbd's server config (mod_dbd.c, httpd 2.4): its first member is the dbd_cfg_t
 * that mod_dbd.h declares. */
typedef struct {
    dbd_cfg_t *cfg;
} dbd_svr_head_t;

void qrt_dbd_child_min(server_rec *s, int left)
{
    module *dbd = ap_find_linked_module("mod_dbd.c");
    server_rec *sp;

    /* A child of a server that went on without its database (QRT00133), or that had left
     * it before a graceful restart: mod_dbd opens DBDMin connections (1 by default) as
     * the child starts, before it accepts, each waiting up to PGCONNECT_TIMEOUT for a
     * server that does not answer (its processes frozen): that long without an answer
     * for every scan after the restart. This child opens its connections when they are
     * first needed. */
    if (!dbd || !dbd_dialect || dbd_dialect->embedded
        || (!schema_unchecked && !left)) {
        return;
    }
    for (sp = s; sp; sp = sp->next) {
        dbd_svr_head_t *svr = ap_get_module_config(sp->module_config, dbd);
        dbd_cfg_t *cfg = svr ? svr->cfg : NULL;

        /* (only a config laid out as known: its server, its driver) */
        if (cfg && cfg->server == sp && cfg->name && qrt_config()->dbd_driver
            && !strcmp(cfg->name, qrt_config()->dbd_driver)) {
            cfg->nmin = 0;
        }
    }
}

const char *qrt_dbd_schema_recheck(apr_pool_t *p, const apr_dbd_driver_t *driver,
                                   apr_dbd_t *handle)
{
    int v;

    if (!schema_unchecked) {
        return NULL;
    }
    v = qrt_schema_version(p, driver, handle);
    if (v == qrt_schema_latest()) {
        schema_unchecked = 0;
        return NULL;
    }
    return v < 0 ? "its schema version cannot be read"
                 : apr_psprintf(p, "its schema is version %d, this build's is %d", v,
                                qrt_schema_latest());
}

/* OK when a start may go on without the database (err: why it cannot be opened). */
static int start_without_database(apr_pool_t *ptemp, server_rec *s,
                                  const qrt_dialect_t *dialect, const char *params,
                                  const char *err)
{
    restart_memo_t *m;
    qrt_db_refusal_t why = qrt_db_refusal(dialect, err);
    int first;

    if ((why != QRT_DB_REFUSED_UNREACHABLE && why != QRT_DB_REFUSED_SLOTS
         && why != QRT_DB_REFUSED_ROLE_LIMIT) || !(m = memo_of_this_build(ptemp, s, &first))) {
        return DECLINED;
    }
    visitor_key = m->key;
    schema_unchecked = 1;
    /* Said once a start: httpd reads its configuration twice as it starts, and the second
     * pass meets the same (or finds the database back). */
    if (ap_state_query(AP_SQ_MAIN_STATE) != AP_SQ_MS_CREATE_PRE_CONFIG) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "QRT00133: the database cannot be "
                     "reached as the server %s (DBDParams %s): %s; this build checked its "
                     "schema before, so the server goes on as in an outage: scans are "
                     "answered from this node's snapshot and their visits kept in its "
                     "spool, the API answers 503, until the database answers",
                     first ? "starts" : "restarts", params, err ? err : "");
    }
    return OK;
}

/* A lock held elsewhere (VACUUM FULL, CREATE INDEX, ALTER TABLE, an open transaction that
 * locked a table) holds the check's statements: no child accepts meanwhile, so a restart
 * (logrotate's nightly graceful) under a lock of many minutes kept every scan waiting for
 * it. A build that checked this database before bounds its waits for locks, and past the
 * bound goes on with what it found then; its children meet the lock as any lock (the
 * scans' visits wait in the spool). A build that must migrate waits for its locks. */
#define CHECK_LOCK_WAIT_MS 1000
/* (libpq's least connect_timeout) */
#define CHECK_CONNECT_WAIT_S 2

static int lock_timed_out(const char *err)
{
    return err && (strstr(err, "55P03") || strstr(err, "lock timeout"));
}
int qrt_dbd_config_check(apr_pool_t *ptemp, server_rec *s)
{
    const char *name, *params, *err;
    const qrt_dialect_t *dialect;

    name = qrt_config()->dbd_driver;
    params = qrt_config()->dbd_params;
    if (!name || !params) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, "QRT00001: mod_qrtrack needs "
                     "DBDriver and DBDParams (mod_dbd) in the main server config");
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    err = qrt_vhost_dbd(ptemp, name, params);
    params = qrt_dbd_params_unpinned(params);
    dialect = qrt_dialect_named(name);
    if (!err && !dialect) {
        err = apr_psprintf(ptemp, "DBDriver %s: mod_qrtrack runs on sqlite3 or pgsql", name);
    }
    if (!err && dialect->embedded) {
        err = qrt_sqlite_writable(ptemp, params);
    }
    if (err) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, "QRT00060: %s", err);
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    dbd_dialect = dialect;
    return OK;
}

/* Creates or migrates the schema in the parent, before any child connects. */
int qrt_dbd_schema_setup(apr_pool_t *ptemp, server_rec *s)
{
    const char *name, *params, *err;
    const qrt_dialect_t *dialect;
    const apr_dbd_driver_t *driver;
    apr_dbd_t *handle;
    apr_status_t rv;
    restart_memo_t *known = NULL;
    int from = 0, to = 0, first = 0;

    schema_unchecked = 0;
    rv = qrt_dbd_config_check(ptemp, s);
    if (rv != OK) {
        return rv;
    }
    name = qrt_config()->dbd_driver;
    params = qrt_dbd_params_unpinned(qrt_config()->dbd_params);
    dialect = dbd_dialect;
    apr_dbd_init(ptemp);
    rv = apr_dbd_get_driver(ptemp, name, &driver);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "QRT00002: no apr_dbd driver "
                     "'%s' (install libaprutil1-dbd-%s)", name, name);
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    if ((err = qrt_dialect_self_check(driver)) != NULL) {
        /* The portable path is taken instead of the trick that failed. */
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "QRT00098: %s self-check: %s; "
                     "mod_qrtrack uses apr_dbd's portable calls there instead",
                     dialect->label, err);
        err = NULL;
    }
    if (dialect->embedded) {
        /* The database and the -wal and -shm files SQLite makes with its mode: 0640,
         * not the 0644 SQLite would create (whatever the umask). */
        int e = qrt_dbfile_private(params);

        if (e) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, APR_FROM_OS_ERROR(e), s,
                         "QRT00097: cannot make the database %s private (mode %04o)",
                         params, QRT_DBFILE_MODE);
        }
    }
    if (resolve_host && start_addr[0] && !dbd_params_pinned) {
        const char *dir = qrt_dbd_node_dir(ptemp);
        struct stat st;

        if (dir && stat(dir, &st) == 0 && S_ISDIR(st.st_mode)
            && node_file_put(ptemp, apr_pstrcat(ptemp, dir, "/" RESOLVE_FILE, NULL),
                             apr_pstrcat(ptemp, resolve_host, " ", start_addr, "\n", NULL))
               != 0) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, errno, s, "QRT00138: cannot write %s/"
                         RESOLVE_FILE ": a first start while DNS does not answer will wait "
                         "for it", dir);
        }
    }
    if (dbd_params_pinned && ap_state_query(AP_SQ_MAIN_STATE) != AP_SQ_MS_CREATE_PRE_CONFIG) {
        /* (once a start, as QRT00133) */
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "QRT00137: the database host %s "
                     "was not found by DNS within %d s as the configuration was read (%s): "
                     "connections go to its last address, %s, until a lookup answers",
                     resolve_host, (int)apr_time_sec(RESOLVE_START_WAIT), start_why,
                     start_addr);
    }
    {
        const char *open_params = qrt_dbd_params_now(ptemp, &err);

        /* No child accepts while this check waits: a build that may go on without the
         * database (start_without_database) waits CHECK_CONNECT_WAIT_S for a server that
         * does not answer (its processes frozen), not PGCONNECT_TIMEOUT, unless
         * DBDParams say how long. */
        if (open_params && dialect->connect_within && memo_of_this_build(ptemp, s, &first)) {
            open_params = dialect->connect_within(ptemp, open_params, CHECK_CONNECT_WAIT_S);
        }
        rv = open_params ? apr_dbd_open_ex(driver, ptemp, open_params, &handle, &err)
                         : APR_EGENERAL;
    }
    if (rv != APR_SUCCESS && !dialect->embedded
        && start_without_database(ptemp, s, dialect, params, err) == OK) {
        return OK;
    }
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "QRT00003: cannot open the "
                     "database (DBDParams %s): %s", params, err ? err : "");
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    if (!dialect->embedded && (known = memo_of_this_build(ptemp, s, &first)) != NULL) {
        int nrows = 0;

        apr_dbd_query(driver, handle, &nrows, apr_psprintf(ptemp, "SET lock_timeout = %d",
                                                           CHECK_LOCK_WAIT_MS));
    }
    err = qrt_schema_migrate(ptemp, driver, handle, &from, &to);
    if (!err) {
        /* How visitor ids are made: the same for every child and every node. Every
         * statement of this build is prepared against the schema first (a build that
         * does not match its database stops here, saying which statement), but not in
         * the second of the two passes httpd makes through its configuration as it
         * starts (generation 1), a moment after the first did it on the same database;
         * each restart checks again. */
        qrt_db_t db;
        const char *perr = NULL, *kerr = NULL;

        memset(&db, 0, sizeof(db));
        db.driver = driver;
        db.handle = handle;
        if (ap_state_query(AP_SQ_MAIN_STATE) == AP_SQ_MS_CREATE_CONFIG
            && ap_state_query(AP_SQ_CONFIG_GEN) == 1) {
            qrt_db_prepare_lazily(&db, ptemp);
        }
        else {
            perr = qrt_db_prepare_all(&db, ptemp);
        }
        if (!perr && qrt_store_visitor_key(&db, ptemp, &visitor_key) != APR_SUCCESS) {
            kerr = db.error ? db.error : "malformed";
        }
        if (known && (lock_timed_out(perr) || lock_timed_out(kerr))) {
            err = perr ? perr : kerr;
        }
        else if (perr) {
            apr_dbd_close(driver, handle);
            ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, "QRT00125: the database does "
                         "not match this build of mod_qrtrack: %s", perr);
            return HTTP_INTERNAL_SERVER_ERROR;
        }
        else if (kerr) {
            apr_dbd_close(driver, handle);
            ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, "QRT00075: cannot read the "
                         "visitor key (qrt_settings): %s", kerr);
            return HTTP_INTERNAL_SERVER_ERROR;
        }
    }
    apr_dbd_close(driver, handle);
    if (known && lock_timed_out(err)) {
        visitor_key = known->key;
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "QRT00136: a lock held elsewhere kept "
                     "the check of the database waiting past %d ms as the server %s (%s); "
                     "this build checked it before, so the server goes on: its scans meet "
                     "the lock as any lock (their visits wait in the spool until it goes)",
                     CHECK_LOCK_WAIT_MS, first ? "starts" : "restarts", err);
        return OK;
    }
    if (err) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, "QRT00004: schema migration "
                     "failed: %s", err);
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    if (from != to) {
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, "QRT00005: database schema "
                     "brought from version %d to %d", from, to);
    }
    {
        restart_memo_t *m = restart_memo(s, 1);

        m->build = qrt_schema_build_id();
        m->key = visitor_key;
        if (!dialect->embedded) {
            memo_write(ptemp, s, m);
        }
    }
    if (dialect->embedded && geteuid() == 0) {
        /* The children run as User: the files created here (or by qrtrack-admin
         * run as root) must be theirs. */
        static const char *const suffix[] = { "", "-wal", "-shm" };
        int i;

        for (i = 0; i < 3; i++) {
            const char *f = apr_pstrcat(ptemp, params, suffix[i], NULL);

            if (chown(f, ap_unixd_config.user_id, ap_unixd_config.group_id) != 0
                && (i == 0 || errno != ENOENT)) {
                ap_log_error(APLOG_MARK, APLOG_WARNING, errno, s, "QRT00006: cannot "
                             "give %s to the server's User", f);
            }
        }
    }
    return OK;
}

/* mod_dbd's functions, as optional functions: without mod_dbd the module still
 * loads and says what is missing, instead of "undefined symbol: ap_dbd_acquire". */
static APR_OPTIONAL_FN_TYPE(ap_dbd_acquire) *dbd_acquire_fn;
static APR_OPTIONAL_FN_TYPE(ap_dbd_open) *dbd_open_fn;
static APR_OPTIONAL_FN_TYPE(ap_dbd_close) *dbd_close_fn;

/* A connection mod_dbd hands out: QRTrackStatementTimeout, unless the connection
 * has it already (a PostgreSQL connection that was reset lost it). */
static ap_dbd_t *qrt_dbd_ready(ap_dbd_t *dbd, server_rec *s)
{
    if (dbd) {
        qrt_dbd_limit(dbd, s);
    }
    return dbd;
}

ap_dbd_t *qrt_dbd_acquire(request_rec *r)
{
    return dbd_acquire_fn ? qrt_dbd_ready(dbd_acquire_fn(r), r->server) : NULL;
}

ap_dbd_t *qrt_dbd_open(apr_pool_t *p, server_rec *s)
{
    ap_dbd_t *dbd = dbd_open_fn ? dbd_open_fn(p, s) : NULL;

    if (dbd && !qrt_dbd_ready(dbd, s)) {
        dbd_close_fn(s, dbd);
        return NULL;
    }
    return dbd;
}

void qrt_dbd_close(server_rec *s, ap_dbd_t *dbd)
{
    if (dbd_close_fn) {
        dbd_close_fn(s, dbd);
    }
}

int qrt_dbd_find_fns(server_rec *s)
{
    dbd_acquire_fn = APR_RETRIEVE_OPTIONAL_FN(ap_dbd_acquire);
    dbd_open_fn = APR_RETRIEVE_OPTIONAL_FN(ap_dbd_open);
    dbd_close_fn = APR_RETRIEVE_OPTIONAL_FN(ap_dbd_close);
    if (!dbd_acquire_fn || !dbd_open_fn || !dbd_close_fn) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, "QRT00010: mod_qrtrack needs mod_dbd: "
                     "load it (Debian: a2enmod dbd; else LoadModule dbd_module "
                     "modules/mod_dbd.so)");
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    return OK;
}

apr_status_t qrt_db_connect_own(apr_pool_t *p, const apr_dbd_driver_t **driver,
                                apr_dbd_t **handle, const char **err)
{
    return qrt_db_connect_within(p, driver, handle, 0, err);
}

apr_status_t qrt_db_connect_within(apr_pool_t *p, const apr_dbd_driver_t **driver,
                                   apr_dbd_t **handle, int seconds, const char **err)
{
    const char *params;

    *err = NULL;
    if (!qrt_config()->dbd_driver
        || apr_dbd_get_driver(p, qrt_config()->dbd_driver, driver) != APR_SUCCESS
        || !(params = qrt_dbd_params_now(p, err))
        || (seconds > 0 && dbd_dialect && dbd_dialect->connect_within
            && !(params = dbd_dialect->connect_within(p, params, seconds)))
        || apr_dbd_open_ex(*driver, p, params, handle, err) != APR_SUCCESS) {
        *err = *err ? *err : "no driver";
        return APR_EGENERAL;
    }
    qrt_db_tune(*driver, *handle, p);
    return APR_SUCCESS;
}

apr_status_t qrt_db_connect_patient(apr_pool_t *p, const apr_dbd_driver_t **driver,
                                    apr_dbd_t **handle, int *silent_runs,
                                    const char **err)
{
    int quick = *silent_runs < QRT_DB_SILENT_QUICK;

    if (qrt_db_connect_within(p, driver, handle, quick ? QRT_DB_CONNECT_QUICK_S : 0, err)
        != APR_SUCCESS) {
        *silent_runs = qrt_db_connect_silent(*err) ? *silent_runs + 1 : 0;
        return APR_EGENERAL;
    }
    *silent_runs = 0;
    return APR_SUCCESS;
}

qrt_db_t *qrt_db_open_own(apr_pool_t *p, int connect_s, int limit_ms,
                          struct qrt_db_limit **limit, const char **err)
{
    const apr_dbd_driver_t *driver;
    apr_dbd_t *handle;
    qrt_db_t *db;

    if (qrt_db_connect_within(p, &driver, &handle, connect_s, err) != APR_SUCCESS) {
        return NULL;
    }
    qrt_db_limit(driver, handle, p, limit_ms, limit);
    db = apr_pcalloc(p, sizeof(*db));
    db->driver = driver;
    db->handle = handle;
    db->pool = p;
    qrt_db_prepare_lazily(db, p);
    return db;
}

void qrt_db_tune(const apr_dbd_driver_t *driver, apr_dbd_t *handle, apr_pool_t *p)
{
    int nrows;

    /* (qrt_db_setup comes with qrt_db_prepare_lazily or qrt_db_prepare_all, which
     * every caller runs next: once a connection, not twice, with PostgreSQL's session
     * setting a round trip.) */
    if (!qrt_dialect_embedded(driver)) {
        return;
    }
    /* Wait for locks instead of failing: apr_dbd_sqlite3 itself runs a statement
     * that meets a lock 17 times, 100 ms apart, so this waits about 10 s in all. */
    qrt_schema_pragma(p, driver, handle, "PRAGMA busy_timeout = " QRT_SQLITE_BUSY_MS_STR);
    /* In WAL mode, NORMAL keeps every commit safe from a crash of the process;
     * only an operating-system crash may lose the last ones (README). */
    apr_dbd_query(driver, handle, &nrows, "PRAGMA synchronous = NORMAL");
    /* This child's checkpoint thread copies the WAL back (mod_qrtrack_wal.c), woken
     * by commits that made it long; the commit itself only when the thread has fallen
     * behind. */
    qrt_wal_hook(driver, handle);
    /* A WAL that grew under load is cut back when it starts over. */
    qrt_schema_pragma(p, driver, handle, "PRAGMA journal_size_limit = 8388608");
}

/* Every connection mod_dbd opens: SQLite's busy timeout and the session's settings,
 * then QRTrackStatementTimeout (on SQLite its handlers take the busy timeout's place).
 * A statement is prepared when a request first needs it on this connection
 * (qrt_store.c), not here: a new PostgreSQL connection that prepared all of them
 * (some 400 round trips, each parsed and planned by the server) held the requests
 * that waited for it, and a child that opens its connections under a burst opens
 * several at once. Nor are they registered with mod_dbd, so virtual hosts need
 * nothing. */
apr_status_t qrt_dbd_post_connect(apr_pool_t *p, dbd_cfg_t *cfg, ap_dbd_t *dbd)
{
    qrt_db_t db;

    qrt_db_tune(dbd->driver, dbd->handle, p);
    memset(&db, 0, sizeof(db));
    db.driver = dbd->driver;
    db.handle = dbd->handle;
    db.prepared = dbd->prepared;
    qrt_db_prepare_lazily(&db, dbd->pool);
    dbd->prepared = db.prepared;
    qrt_dbd_limit(dbd, cfg->server);
    if (resolve_host) {
        dbd_params_follow(p, cfg);
    }
    return APR_SUCCESS;
}
