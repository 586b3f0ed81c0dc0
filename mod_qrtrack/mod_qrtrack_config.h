/* mod_qrtrack_config.c: the directives and the configuration they make. */
#ifndef MOD_QRTRACK_CONFIG_H
#define MOD_QRTRACK_CONFIG_H

#include "httpd.h"
#include "http_config.h"
#include "qrt_netguard.h"

/* The server-wide settings: made with their defaults when the main server's
 * configuration is made (in the configuration pool, so a restart starts from the
 * defaults again), written by the directives' setters and, in post_config, by
 * qrt_config_post_config; read-only afterwards, through qrt_config(). */
typedef struct {
    apr_uint32_t rate_slots;        /* QRTrackRateLimitSlots */
    const char *ua_regexes;         /* QRTrackUserAgentRegexes (NULL: the default) */
    int scan_queue;                 /* QRTrackScanQueue (0: from the MPM) */
    int scan_wait;                  /* QRTrackScanWait, seconds (0 = default) */
    int scan_budget;                /* QRTrackScanBudget: scans a minute per client
                                     * address, 0 = off */
    int visit_retention;            /* QRTrackVisitRetention, days (0 = for ever) */
    int rate_mc_timeout;            /* QRTrackRateLimitTimeout, ms a memcached call */
    int statement_timeout;          /* QRTrackStatementTimeout, seconds (0 = off) */
    const char *spool_dir;          /* QRTrackSpoolDir ("off", or NULL: the default) */
    apr_int64_t spool_limit;        /* QRTrackSpoolLimit, visits (0 = the default) */
    int webhook_limit;              /* QRTrackWebhookLimit, webhooks an account */
    apr_int64_t webhook_outbox_limit; /* QRTrackWebhookOutboxLimit, pending events a webhook */
    int report_cache;               /* QRTrackReportCache, MB of sealed values a child keeps */
    /* QRTrackRateLimitStore memcache: its servers (qrt_rate_server_t) and the list
     * as written (for log lines); NULL = shm */
    const apr_array_header_t *rate_mc_servers;
    const char *rate_mc_list;
    const qrt_cidr_list_t *webhook_allow;   /* QRTrackWebhookAllow (NULL: none) */
    int webhook_delivery;           /* QRTrackWebhookDelivery: 1 On (default), 0 Off */
    int scan_keepalive;             /* QRTrackScanKeepAlive: 1 On (default), 0 Off */

    /* Learnt from the configuration tree in post_config: */
    const char *dbd_driver;         /* DBDriver and DBDParams of the main server */
    const char *dbd_params;         /* (unquoted; NULL when not given) */
    const char *api_prefix;         /* first <Location> of qrtrack-api, default "/api" */
    const apr_array_header_t *api_prefixes; /* every <Location> of qrtrack-api */
    const char *scan_prefix;        /* <Location> of qrtrack-scan, default "/q": the last
                                     * in the tree (qrt_scan_prefix is a server's) */
    const char *click_prefix;       /* <Location> of qrtrack-click, default "/l" */
} qrt_config_t;

/* The scan and click paths of server s, which its codes' URLs carry: the <Location> in
 * s's own <VirtualHost>, else the main server's (outside any), else the last in the
 * configuration (a host of the API alone whose QRTrackPublicURL names the scans' host),
 * else "/q" and "/l". */
const char *qrt_scan_prefix(const server_rec *s);
const char *qrt_click_prefix(const server_rec *s);

/* The server-wide settings (never NULL; the defaults before any configuration). */
const qrt_config_t *qrt_config(void);

/* The command table of the module record. */
extern const command_rec qrt_cmds[];
/* Per-server configuration (qrt_server_conf): the main server's made with the
 * defaults, a virtual host's with every field unset, merged over the main
 * server's. The first call also makes the server-wide settings. */
void *qrt_create_server_conf(apr_pool_t *p, server_rec *s);
void *qrt_merge_server_conf(apr_pool_t *p, void *basev, void *addv);
/* post_config, first: what the server-wide settings take from the configuration
 * tree (DBDriver, DBDParams, the handlers' <Location>s). */
void qrt_config_post_config(apr_pool_t *pconf);
/* Learns each server's own scan and click paths from the tree (in check_config, once
 * qrt_config_post_config has run). */
void qrt_config_server_prefixes(apr_pool_t *pconf, server_rec *s);

#endif
