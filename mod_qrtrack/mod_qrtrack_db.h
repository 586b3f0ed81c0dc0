/* mod_qrtrack_db: the database's set-up at start-up and mod_dbd's connections. */
#ifndef MOD_QRTRACK_DB_H
#define MOD_QRTRACK_DB_H

#include "httpd.h"
#include "mod_dbd.h"

/* post_config (parent): mod_dbd's optional functions found, or an error status. */
int qrt_dbd_find_fns(server_rec *s);
/* post_config (parent): DBDriver/DBDParams checked, the dialect's self-check logged,
 * the schema migrated and the visitor key read; OK or an error status. */
int qrt_dbd_schema_setup(apr_pool_t *ptemp, server_rec *s);
/* post_config: how many statements each connection prepares. */
void qrt_dbd_count_statements(void);
/* mod_dbd's post_connect hook: tune, prepare, limit. */
apr_status_t qrt_dbd_post_connect(apr_pool_t *p, dbd_cfg_t *cfg, ap_dbd_t *dbd);

#endif
