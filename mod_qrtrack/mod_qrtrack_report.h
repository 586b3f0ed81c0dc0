/* mod_qrtrack_report.c: reports, the tag crosstab and the dashboard's figures. */
#ifndef MOD_QRTRACK_REPORT_H
#define MOD_QRTRACK_REPORT_H

#include "mod_qrtrack_private.h"

/* The child's kept report scopes (qrt_report_cache.h). */
void qrt_report_child_init(apr_pool_t *pchild, server_rec *s);
/* Hands back the memory the reports' kept allocators hold, of those unused for idle
 * (qrt_poolkeep_release; the scan writer's rounds call it). */
void qrt_report_pools_release(apr_interval_time_t idle);
/* The table of kept days the children share (made in the parent). */
apr_status_t qrt_report_post_config(server_rec *s);
qrt_err_t *qrt_report_show(qrt_req_t *q);
qrt_err_t *qrt_report_crosstab_show(qrt_req_t *q);
qrt_err_t *qrt_dashboard_scans(qrt_req_t *q);
/* The same three as POSTs of their parameters in the body (qrt_params_from_body): a list
 * of 1,000 tracker ids may not fit the request line httpd reads (LimitRequestLine). */
qrt_err_t *qrt_report_post(qrt_req_t *q);
qrt_err_t *qrt_report_crosstab_post(qrt_req_t *q);
qrt_err_t *qrt_dashboard_scans_post(qrt_req_t *q);

#endif
