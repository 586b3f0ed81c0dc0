/* mod_qrtrack_config.c: the directives and the configuration they make. */
#ifndef MOD_QRTRACK_CONFIG_H
#define MOD_QRTRACK_CONFIG_H

#include "httpd.h"
#include "http_config.h"

/* The command table of the module record. */
extern const command_rec qrt_cmds[];
/* Per-server configuration (qrt_server_conf): made with every field unset, merged
 * virtual host over main server. */
void *qrt_create_server_conf(apr_pool_t *p, server_rec *s);
void *qrt_merge_server_conf(apr_pool_t *p, void *basev, void *addv);
/* The process-wide settings (qrt_global) back to their defaults, before the
 * configuration is read (pre_config). */
void qrt_config_defaults(void);

#endif
