/* mod_qrtrack_config: the module's directives, in the mod_md manner: one command
 * table, one setter per kind of value (cmd->info says where a whole number goes and
 * its bounds), defaults set in create/merge. The server-wide settings are one
 * struct made from their defaults with the main server's configuration, in the
 * configuration pool (a graceful restart starts from the defaults again); only this
 * file writes them, the rest of the glue reads them through qrt_config(). */
#include <string.h>
#include "httpd.h"
#include "http_config.h"
#include "http_log.h"
#include "http_main.h"
#include <apr_strings.h>
#include <apr_uri.h>
#include <apr_hash.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_config.h"
#include "qrt_rate.h"
#include "qrt_valid.h"

APLOG_USE_MODULE(qrtrack);

static const qrt_config_t defconf = {
    .rate_slots = QRT_DEFAULT_RATE_SLOTS,
    .rate_mc_timeout = QRT_DEFAULT_RATE_MC_TIMEOUT,
    .statement_timeout = QRT_DEFAULT_STATEMENT_TIMEOUT,
    .webhook_limit = QRT_DEFAULT_WEBHOOK_LIMIT,
    .webhook_outbox_limit = QRT_DEFAULT_WEBHOOK_OUTBOX_LIMIT,
    .report_cache = QRT_DEFAULT_REPORT_CACHE,
    .webhook_delivery = 1,
    .scan_keepalive = 1,
    .api_prefix = "/api",
    .scan_prefix = "/q",
    .click_prefix = "/l"
};

/* This configuration's settings, in its pool; NULL once the pool is cleared. */
static qrt_config_t *config;

static apr_status_t config_cleanup(void *data)
{
    (void)data;
    config = NULL;
    return APR_SUCCESS;
}

/* The settings being configured, made from the defaults on first use. */
static qrt_config_t *config_get(apr_pool_t *pconf)
{
    if (!config) {
        config = apr_pmemdup(pconf, &defconf, sizeof(*config));
        apr_pool_cleanup_register(pconf, NULL, config_cleanup, apr_pool_cleanup_null);
    }
    return config;
}

const qrt_config_t *qrt_config(void)
{
    return config ? config : &defconf;
}

void *qrt_create_server_conf(apr_pool_t *p, server_rec *s)
{
    qrt_server_conf *c = apr_pcalloc(p, sizeof(*c));

    config_get(p);
    if (!s->is_virtual) {
        /* the main server's are the defaults every virtual host merges over */
        c->rate_limit = QRT_DEFAULT_RATE_LIMIT;
        c->max_body = QRT_DEFAULT_MAX_BODY;
        c->anonymize_ip = 1;
    }
    else {
        c->rate_limit = -1;
        c->max_body = -1;
        c->anonymize_ip = -1;
    }
    return c;
}

void *qrt_merge_server_conf(apr_pool_t *p, void *basev, void *addv)
{
    qrt_server_conf *base = basev, *add = addv;
    qrt_server_conf *c = apr_pcalloc(p, sizeof(*c));

    c->public_url = add->public_url ? add->public_url : base->public_url;
    c->rate_limit = add->rate_limit != -1 ? add->rate_limit : base->rate_limit;
    c->account_limits = add->account_limits
        ? (base->account_limits
           ? apr_hash_overlay(p, add->account_limits, base->account_limits)
           : add->account_limits)
        : base->account_limits;
    c->max_body = add->max_body != -1 ? add->max_body : base->max_body;
    c->anonymize_ip = add->anonymize_ip != -1 ? add->anonymize_ip : base->anonymize_ip;
    c->geoip_path = add->geoip_path ? add->geoip_path : base->geoip_path;
    c->geoip = add->geoip_path ? add->geoip : base->geoip;
    c->cors_origins = add->cors_origins ? add->cors_origins : base->cors_origins;
    return c;
}

/* Parses a whole number in [min, max] for directive cmd. */
static const char *qrt_cmd_int(cmd_parms *cmd, const char *arg, apr_int64_t min,
                               apr_int64_t max, const char *what, apr_int64_t *out)
{
    if (qrt_parse_int(arg, min, max, out) != 0) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not %s (a whole number from %"
                            APR_INT64_T_FMT " to %" APR_INT64_T_FMT ")",
                            cmd->directive->directive, arg, what, min, max);
    }
    return NULL;
}

static const char *qrt_set_public_url(cmd_parms *cmd, void *dc, const char *arg)
{
    qrt_server_conf *c = ap_get_module_config(cmd->server->module_config,
                                              &qrtrack_module);
    const char *why = qrt_valid_redirect_url(arg);
    apr_size_t n = strlen(arg);
    apr_uri_t u;

    (void)dc;
    if (why) {
        return apr_psprintf(cmd->pool, "QRTrackPublicURL: '%s' %s", arg, why);
    }
    /* (the scan path goes after it: a query or fragment would take it in; a user and
     * password would be printed on every code) */
    if (apr_uri_parse(cmd->pool, arg, &u) != APR_SUCCESS || u.query || u.fragment
        || u.user || u.password || strchr(arg, '?') || strchr(arg, '#')) {
        return apr_psprintf(cmd->pool, "QRTrackPublicURL: '%s' is not a base URL "
                            "(scheme://host[:port][/path], without a query, a fragment, or "
                            "a user and password)", arg);
    }
    if (n > QRT_PUBLIC_URL_MAX) {
        return apr_psprintf(cmd->pool, "QRTrackPublicURL: more than %d bytes (a QR code "
                            "of the longest scan URL must stay readable)",
                            QRT_PUBLIC_URL_MAX);
    }
    while (n > 0 && arg[n - 1] == '/') {
        n--;
    }
    c->public_url = apr_pstrndup(cmd->pool, arg, n);
    return NULL;
}

static const char *qrt_set_rate_limit(cmd_parms *cmd, void *dc, const char *arg)
{
    qrt_server_conf *c = ap_get_module_config(cmd->server->module_config,
                                              &qrtrack_module);
    apr_int64_t v;
    const char *err = qrt_cmd_int(cmd, arg, 0, 1000000,
                                  "a number of requests per minute (0 = off)", &v);

    (void)dc;
    if (!err) {
        c->rate_limit = (int)v;
    }
    return err;
}

static const char *qrt_set_account_limit(cmd_parms *cmd, void *dc, const char *name,
                                         const char *arg)
{
    qrt_server_conf *c = ap_get_module_config(cmd->server->module_config,
                                              &qrtrack_module);
    apr_int64_t v;
    int *slot;
    const char *err = qrt_cmd_int(cmd, arg, 0, 1000000,
                                  "a number of requests per minute (0 = off)", &v);

    (void)dc;
    if (err) {
        return err;
    }
    if (!qrt_valid_account_name(name)) {
        return apr_psprintf(cmd->pool, "QRTrackAccountRateLimit: '%s' is no account's name "
                            "(1 to 64 of A-Z a-z 0-9 . _ -, not starting with a digit)",
                            name);
    }
    if (!c->account_limits) {
        c->account_limits = apr_hash_make(cmd->pool);
    }
    slot = apr_palloc(cmd->pool, sizeof(*slot));
    *slot = (int)v;
    apr_hash_set(c->account_limits, apr_pstrdup(cmd->pool, name),
                 APR_HASH_KEY_STRING, slot);
    return NULL;
}

static const char *qrt_set_max_body(cmd_parms *cmd, void *dc, const char *arg)
{
    qrt_server_conf *c = ap_get_module_config(cmd->server->module_config,
                                              &qrtrack_module);
    apr_int64_t v;
    const char *err = qrt_cmd_int(cmd, arg, 1024, 64 * 1024 * 1024,
                                  "a request body limit in bytes", &v);

    (void)dc;
    if (!err) {
        c->max_body = (apr_off_t)v;
    }
    return err;
}

static const char *qrt_set_anonymize(cmd_parms *cmd, void *dc, int on)
{
    qrt_server_conf *c = ap_get_module_config(cmd->server->module_config,
                                              &qrtrack_module);

    (void)dc;
    c->anonymize_ip = on;
    return NULL;
}

static const char *qrt_set_geoip(cmd_parms *cmd, void *dc, const char *arg)
{
    qrt_server_conf *c = ap_get_module_config(cmd->server->module_config,
                                              &qrtrack_module);
    const char *path = ap_server_root_relative(cmd->pool, arg);
    apr_finfo_t fi;

    (void)dc;
    if (!path || apr_stat(&fi, path, APR_FINFO_TYPE, cmd->pool) != APR_SUCCESS
        || fi.filetype != APR_REG) {
        return apr_psprintf(cmd->pool, "QRTrackGeoIPDatabase: '%s' is not a readable file",
                            arg);
    }
    c->geoip_path = path;
    return NULL;
}

/* QRTrackCORSOrigin: origins allowed to call the API from a browser page. */
static const char *qrt_set_cors_origin(cmd_parms *cmd, void *dc, const char *arg)
{
    qrt_server_conf *c = ap_get_module_config(cmd->server->module_config,
                                              &qrtrack_module);
    apr_uri_t u;
    apr_size_t n = strlen(arg);

    (void)dc;
    if (!c->cors_origins) {
        c->cors_origins = apr_array_make(cmd->pool, 4, sizeof(const char *));
    }
    if (!strcasecmp(arg, "none")) {
        apr_array_clear(c->cors_origins);
        return NULL;
    }
    if (strcmp(arg, "*") != 0
        && (apr_uri_parse(cmd->pool, arg, &u) != APR_SUCCESS || !u.scheme || !u.hostname
            || (strcasecmp(u.scheme, "http") && strcasecmp(u.scheme, "https"))
            || (u.path && *u.path) || u.query || u.fragment || u.user
            || arg[n - 1] == '/')) {
        return apr_psprintf(cmd->pool, "QRTrackCORSOrigin: '%s' is not an origin "
                            "(scheme://host[:port], no path, e.g. "
                            "https://app.example.com), * or none", arg);
    }
    if (strcmp(arg, "*") != 0 && u.port_str) {
        apr_int64_t port;

        if (qrt_parse_int(u.port_str, 1, 65535, &port) != 0) {
            return apr_psprintf(cmd->pool, "QRTrackCORSOrigin: '%s' has no port (1 to "
                                "65535)", arg);
        }
        /* (a browser's Origin leaves out its scheme's own port: with it, none matched) */
        if ((port == 80 && !strcasecmp(u.scheme, "http"))
            || (port == 443 && !strcasecmp(u.scheme, "https"))) {
            arg = apr_pstrndup(cmd->pool, arg, (apr_size_t)(strrchr(arg, ':') - arg));
        }
    }
    *(const char **)apr_array_push(c->cors_origins) = apr_pstrdup(cmd->pool, arg);
    return NULL;
}

/* A whole-number global directive: where it goes in qrt_config_t, its bounds and what
 * its error message calls it (cmd->info of its command_rec entry). */
typedef struct {
    size_t offset;
    int size;                   /* sizeof the field: int, apr_uint32_t or apr_int64_t */
    apr_int64_t min, max;
    const char *what;
} qrt_int_directive_t;

#define QRT_GLOBAL_INT(field, lo, hi, what) \
    { APR_OFFSETOF(qrt_config_t, field), (int)sizeof(((qrt_config_t *)0)->field), \
      (lo), (hi), (what) }

static const qrt_int_directive_t int_rate_slots =
    QRT_GLOBAL_INT(rate_slots, 16, 4 * 1024 * 1024, "a number of slots");
static const qrt_int_directive_t int_scan_budget =
    QRT_GLOBAL_INT(scan_budget, 0, 1000000, "a number of scans a minute (0 = off)");
static const qrt_int_directive_t int_visit_retention =
    QRT_GLOBAL_INT(visit_retention, 0, 36500, "a number of days (0 = keep visits for ever)");
static const qrt_int_directive_t int_spool_limit =
    QRT_GLOBAL_INT(spool_limit, 1000, APR_INT64_C(1000000000), "a number of visits");
static const qrt_int_directive_t int_rate_mc_timeout =
    QRT_GLOBAL_INT(rate_mc_timeout, 1, 10000, "a number of milliseconds");
static const qrt_int_directive_t int_statement_timeout =
    QRT_GLOBAL_INT(statement_timeout, 0, 3600, "a number of seconds (0 = off)");
static const qrt_int_directive_t int_scan_wait =
    QRT_GLOBAL_INT(scan_wait, 1, 3600, "a number of seconds");
static const qrt_int_directive_t int_scan_queue =
    QRT_GLOBAL_INT(scan_queue, 1, 1000000, "a number of visits");
static const qrt_int_directive_t int_webhook_limit =
    QRT_GLOBAL_INT(webhook_limit, 0, 1000, "a number of webhooks");
static const qrt_int_directive_t int_webhook_outbox_limit =
    QRT_GLOBAL_INT(webhook_outbox_limit, 10, APR_INT64_C(100000000), "a number of events");
static const qrt_int_directive_t int_report_cache =
    QRT_GLOBAL_INT(report_cache, 0, 65536, "a number of megabytes (0 = off)");

static const char *qrt_set_global_int(cmd_parms *cmd, void *dc, const char *arg)
{
    const qrt_int_directive_t *d = cmd->info;
    char *field = (char *)config_get(cmd->pool) + d->offset;
    apr_int64_t v;
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);

    (void)dc;
    if (err || (err = qrt_cmd_int(cmd, arg, d->min, d->max, d->what, &v))) {
        return err;
    }
    if (d->size == (int)sizeof(apr_int64_t)) {
        *(apr_int64_t *)field = v;
    }
    else if (d->size == (int)sizeof(int)) {
        *(int *)field = (int)v;     /* int and apr_uint32_t alike: bounds fit both */
    }
    return NULL;
}

static const char *qrt_set_spool_dir(cmd_parms *cmd, void *dc, const char *arg)
{
    qrt_config_t *g = config_get(cmd->pool);
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);

    (void)dc;
    if (err) {
        return err;
    }
    g->spool_dir = strcasecmp(arg, "off") ? ap_server_root_relative(cmd->pool, arg)
                                                  : "off";
    if (!g->spool_dir) {
        return apr_psprintf(cmd->pool, "QRTrackSpoolDir: '%s' is not a valid path", arg);
    }
    return NULL;
}

static const char *qrt_set_ua_regexes(cmd_parms *cmd, void *dc, const char *arg)
{
    qrt_config_t *g = config_get(cmd->pool);
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);

    (void)dc;
    if (err) {
        return err;
    }
    g->ua_regexes = ap_server_root_relative(cmd->pool, arg);
    return NULL;
}

static const char *qrt_set_rate_store(cmd_parms *cmd, void *dc, const char *kind,
                                      const char *list)
{
    qrt_config_t *g = config_get(cmd->pool);
    apr_array_header_t *servers = NULL;
    const char *name = cmd->directive->directive;
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);

    (void)dc;
    if (err) {
        return err;
    }
    if (!strcasecmp(kind, "shm") && !list) {
        g->rate_mc_servers = NULL;
        g->rate_mc_list = NULL;
        return NULL;
    }
    if (strcasecmp(kind, "memcache") != 0) {
        return apr_psprintf(cmd->pool, "%s: '%s%s%s' is not shm or memcache "
                            "HOST:PORT[,HOST:PORT...]", name, kind, list ? " " : "",
                            list ? list : "");
    }
    if (!list) {
        return apr_psprintf(cmd->pool, "%s: memcache needs its servers: memcache "
                            "HOST:PORT[,HOST:PORT...]", name);
    }
    err = qrt_rate_servers_parse(cmd->pool, list, &servers);
    if (err) {
        g->rate_mc_servers = NULL;
        return apr_psprintf(cmd->pool, "%s: %s", name, err);
    }
    g->rate_mc_servers = servers;
    g->rate_mc_list = apr_pstrdup(cmd->pool, list);
    return NULL;
}

/* QRTrackWebhookAllow: blocks webhook deliveries may reach although qrt_netguard
 * refuses them (repeatable; "none" clears the list). */
static const char *qrt_set_webhook_allow(cmd_parms *cmd, void *dc, const char *arg)
{
    qrt_config_t *g = config_get(cmd->pool);
    qrt_cidr_list_t *l = (qrt_cidr_list_t *)g->webhook_allow;
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);

    (void)dc;
    if (err) {
        return err;
    }
    if (!strcasecmp(arg, "none")) {
        g->webhook_allow = NULL;
        return NULL;
    }
    if (!l) {
        l = apr_pcalloc(cmd->pool, sizeof(*l));
    }
    err = qrt_cidr_list_add(cmd->pool, l, arg);
    if (err) {
        return apr_psprintf(cmd->pool, "QRTrackWebhookAllow: %s (give CIDR blocks, e.g. "
                            "10.0.0.0/8 or fd00::/8, or none)", err);
    }
    g->webhook_allow = l;
    return NULL;
}

/* QRTrackWebhookDelivery On|Off: whether this server delivers webhooks (Off: its
 * writers still fill the outbox, which another server, or this one later, delivers). */
static const char *qrt_set_webhook_delivery(cmd_parms *cmd, void *dc, int on)
{
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);

    (void)dc;
    if (err) {
        return err;
    }
    config_get(cmd->pool)->webhook_delivery = on;
    return NULL;
}

static const char *qrt_set_scan_keepalive(cmd_parms *cmd, void *dc, int on)
{
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);

    (void)dc;
    if (err) {
        return err;
    }
    config_get(cmd->pool)->scan_keepalive = on;
    return NULL;
}

/* ---- what post_config learns from the configuration tree ------------------------ */

/* The scan and click paths found inside one section of the tree: the main server's
 * (outside any <VirtualHost>) or a virtual host's, by the <VirtualHost> line's place
 * ("file:line", as httpd keeps it in the server_rec it made of it). */
typedef struct {
    const char *scan, *click;
} config_paths;

static config_paths *config_paths_of(apr_pool_t *p, apr_hash_t *by_host,
                                     const ap_directive_t *host)
{
    const char *key = host ? apr_psprintf(p, "%s:%d", host->filename, host->line_num) : "";
    config_paths *c = apr_hash_get(by_host, key, APR_HASH_KEY_STRING);

    if (!c) {
        c = apr_pcalloc(p, sizeof(*c));
        apr_hash_set(by_host, key, APR_HASH_KEY_STRING, c);
    }
    return c;
}

/* The <Location> paths whose SetHandler is one of the module's, found in the tree
 * (a section holding only core directives gets no per-dir config of ours, so the
 * tree is where the prefixes can be learnt); by_host (or NULL) gets each section's. */
static void config_find_prefixes(apr_pool_t *p, qrt_config_t *g, apr_array_header_t *api,
                                 const ap_directive_t *d, apr_hash_t *by_host,
                                 const ap_directive_t *host)
{
    for (; d; d = d->next) {
        if (!strcasecmp(d->directive, "<Location") && d->first_child) {
            const ap_directive_t *c;
            const char *args = d->args, *path;
            apr_size_t n;

            path = ap_getword_conf(p, &args);
            n = strlen(path);
            if (n && path[n - 1] == '>') {
                n--;
            }
            while (n > 1 && path[n - 1] == '/') {
                n--;
            }
            for (c = d->first_child; c; c = c->next) {
                const char *h = c->args;

                if (strcasecmp(c->directive, "SetHandler") || n == 0 || path[0] != '/') {
                    continue;
                }
                h = ap_getword_conf(p, &h);
                if (!strcmp(h, "qrtrack-api")) {
                    APR_ARRAY_PUSH(api, const char *) = apr_pstrndup(p, path, n);
                }
                else if (!strcmp(h, "qrtrack-scan")) {
                    g->scan_prefix = apr_pstrndup(p, path, n);
                    if (by_host) {
                        config_paths_of(p, by_host, host)->scan = g->scan_prefix;
                    }
                }
                else if (!strcmp(h, "qrtrack-click")) {
                    g->click_prefix = apr_pstrndup(p, path, n);
                    if (by_host) {
                        config_paths_of(p, by_host, host)->click = g->click_prefix;
                    }
                }
            }
        }
        else if (d->first_child) {
            config_find_prefixes(p, g, api, d->first_child, by_host,
                                 !strcasecmp(d->directive, "<VirtualHost") ? d : host);
        }
    }
}

void qrt_config_server_prefixes(apr_pool_t *pconf, server_rec *s)
{
    qrt_config_t *g = config_get(pconf);
    apr_array_header_t *api = apr_array_make(pconf, 2, sizeof(const char *));
    apr_hash_t *by_host = apr_hash_make(pconf);
    const char *scan = g->scan_prefix, *click = g->click_prefix;

    config_find_prefixes(pconf, g, api, ap_conftree, by_host, NULL);
    for (; s; s = s->next) {
        qrt_server_conf *c = ap_get_module_config(s->module_config, &qrtrack_module);
        const char *key = s->is_virtual && s->defn_name
            ? apr_psprintf(pconf, "%s:%d", s->defn_name, s->defn_line_number) : "";
        config_paths *own = apr_hash_get(by_host, key, APR_HASH_KEY_STRING);

        c->scan_prefix = own ? own->scan : NULL;
        c->click_prefix = own ? own->click : NULL;
    }
    g->scan_prefix = scan;
    g->click_prefix = click;
}

static const char *config_prefix(const server_rec *s, int click)
{
    const qrt_server_conf *c = ap_get_module_config(s->module_config, &qrtrack_module);
    const char *own = click ? c->click_prefix : c->scan_prefix;

    if (!own && s->is_virtual) {
        const server_rec *main = ap_server_conf;

        c = main ? ap_get_module_config(main->module_config, &qrtrack_module) : NULL;
        own = c ? (click ? c->click_prefix : c->scan_prefix) : NULL;
    }
    return own ? own : click ? qrt_config()->click_prefix : qrt_config()->scan_prefix;
}

const char *qrt_scan_prefix(const server_rec *s)
{
    return config_prefix(s, 0);
}

const char *qrt_click_prefix(const server_rec *s)
{
    return config_prefix(s, 1);
}

void qrt_config_post_config(apr_pool_t *pconf)
{
    qrt_config_t *g = config_get(pconf);
    apr_array_header_t *api = apr_array_make(pconf, 2, sizeof(const char *));
    const ap_directive_t *d;

    config_find_prefixes(pconf, g, api, ap_conftree, NULL, NULL);
    g->api_prefixes = api;
    if (api->nelts) {
        g->api_prefix = APR_ARRAY_IDX(api, 0, const char *);
    }
    /* DBDriver and DBDParams of the main server, without the quotes the tree
     * keeps (mod_qrtrack_db.c checks them) */
    for (d = ap_conftree; d; d = d->next) {
        const char *a = d->args;

        if (!strcasecmp(d->directive, "DBDriver")) {
            g->dbd_driver = ap_getword_conf(pconf, &a);
        }
        else if (!strcasecmp(d->directive, "DBDParams")) {
            g->dbd_params = ap_getword_conf(pconf, &a);
        }
    }
}

const command_rec qrt_cmds[] = {
    AP_INIT_TAKE1("QRTrackPublicURL", qrt_set_public_url, NULL, RSRC_CONF,
                  "Base URL of the scan and click links encoded in QR images, "
                  "e.g. https://qr.example.com (default: from the request)"),
    AP_INIT_TAKE1("QRTrackRateLimit", qrt_set_rate_limit, NULL, RSRC_CONF,
                  "API requests per minute per token (default 120, 0 = off)"),
    AP_INIT_TAKE2("QRTrackAccountRateLimit", qrt_set_account_limit, NULL, RSRC_CONF,
                  "Per-account override of QRTrackRateLimit: account name and "
                  "requests per minute"),
    AP_INIT_TAKE1("QRTrackMaxBody", qrt_set_max_body, NULL, RSRC_CONF,
                  "Largest API request body in bytes (default 1048576)"),
    AP_INIT_FLAG("QRTrackAnonymizeIP", qrt_set_anonymize, NULL, RSRC_CONF,
                 "Store visitor addresses truncated to /24 (IPv4) and /48 (IPv6) "
                 "(default On)"),
    AP_INIT_TAKE1("QRTrackGeoIPDatabase", qrt_set_geoip, NULL, RSRC_CONF,
                  "MaxMind-format City database (.mmdb) for visit country and city"),
    AP_INIT_ITERATE("QRTrackCORSOrigin", qrt_set_cors_origin, NULL, RSRC_CONF,
                    "Origins whose web pages may call the API (scheme://host[:port] "
                    "each, * for any, none to clear; default none)"),
    AP_INIT_TAKE1("QRTrackRateLimitSlots", qrt_set_global_int, (void *)&int_rate_slots, RSRC_CONF,
                  "Tokens tracked at once by the rate limiter (default 8192)"),
    AP_INIT_TAKE12("QRTrackRateLimitStore", qrt_set_rate_store, NULL, RSRC_CONF,
                   "Where the per-token windows live: shm (default: this server's "
                   "shared memory) or memcache HOST:PORT[,HOST:PORT...] (shared by "
                   "every node naming the same servers)"),
    AP_INIT_TAKE1("QRTrackRateLimitTimeout", qrt_set_global_int, (void *)&int_rate_mc_timeout, RSRC_CONF,
                  "Milliseconds a call to memcached (QRTrackRateLimitStore memcache) "
                  "may take before the request counts in shared memory and memcached "
                  "is bypassed until it answers again (default 50)"),
    AP_INIT_TAKE1("QRTrackScanQueue", qrt_set_global_int, (void *)&int_scan_queue, RSRC_CONF,
                  "Visits the server may hold waiting for their commit before scans "
                  "get 503 (default: 2 per worker thread of the server)"),
    AP_INIT_TAKE1("QRTrackScanBudget", qrt_set_global_int, (void *)&int_scan_budget, RSRC_CONF,
                  "Scans and clicks a minute from one client address before they get "
                  "429, unrecorded (default 0: no budget)"),
    AP_INIT_TAKE1("QRTrackScanWait", qrt_set_global_int, (void *)&int_scan_wait, RSRC_CONF,
                  "Seconds a scan waits for its commit before it gets 503, unrecorded "
                  "(default 10)"),
    AP_INIT_FLAG("QRTrackScanKeepAlive", qrt_set_scan_keepalive, NULL, RSRC_CONF,
                 "Whether a client that scans again on its keep-alive connection keeps it "
                 "while every worker of its child is busy, rather than the event MPM "
                 "closing it (default On)"),
    AP_INIT_TAKE1("QRTrackStatementTimeout", qrt_set_global_int, (void *)&int_statement_timeout, RSRC_CONF,
                  "Seconds one database statement of an API request may run or wait "
                  "for a lock before the request gets 503 (default 15, 0 = the "
                  "database's own settings)"),
    AP_INIT_TAKE1("QRTrackVisitRetention", qrt_set_global_int, (void *)&int_visit_retention, RSRC_CONF,
                  "Days a visit is kept whole: older visits leave the listings and "
                  "exports and lose what they say about the visitor; reports keep "
                  "counting them (default 0: for ever)"),
    AP_INIT_TAKE1("QRTrackSpoolDir", qrt_set_spool_dir, NULL, RSRC_CONF,
                  "Directory of this node's spool of visits and snapshot of codes, "
                  "used while the database cannot be reached, or off (default: the "
                  "SQLite database's directory, else " QRT_STATE_DIR ")"),
    AP_INIT_TAKE1("QRTrackSpoolLimit", qrt_set_global_int, (void *)&int_spool_limit, RSRC_CONF,
                  "Visits the spool may hold before scans get 503 while the database "
                  "cannot be reached (default 1000000)"),
    AP_INIT_TAKE1("QRTrackWebhookLimit", qrt_set_global_int, (void *)&int_webhook_limit, RSRC_CONF,
                  "Webhooks an account may have (default 10; 0: none)"),
    AP_INIT_TAKE1("QRTrackWebhookOutboxLimit", qrt_set_global_int, (void *)&int_webhook_outbox_limit, RSRC_CONF,
                  "Events waiting for delivery per webhook before the oldest are dropped "
                  "(default 100000)"),
    AP_INIT_TAKE1("QRTrackReportCache", qrt_set_global_int, (void *)&int_report_cache, RSRC_CONF,
                  "Megabytes of sealed report values each child keeps in memory (default "
                  "128; 0: reports read them from the database every time)"),
    AP_INIT_TAKE1("QRTrackUserAgentRegexes", qrt_set_ua_regexes, NULL, RSRC_CONF,
                  "uap-core regexes.yaml (default /usr/share/uap-core/regexes.yaml)"),
    AP_INIT_FLAG("QRTrackWebhookDelivery", qrt_set_webhook_delivery, NULL, RSRC_CONF,
                 "Whether this server delivers the webhooks' events (default On; Off: the "
                 "outbox is still written, for another server to deliver)"),
    AP_INIT_ITERATE("QRTrackWebhookAllow", qrt_set_webhook_allow, NULL, RSRC_CONF,
                    "CIDR blocks webhook deliveries may reach although they are loopback, "
                    "private, link-local or otherwise not public (repeatable; none to "
                    "clear; default none)"),
    { NULL }
};
