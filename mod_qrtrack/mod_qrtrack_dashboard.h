/* mod_qrtrack_dashboard.c: the qrtrack-dashboard handler, the analysts' web page. */
#ifndef MOD_QRTRACK_DASHBOARD_H
#define MOD_QRTRACK_DASHBOARD_H

#include "httpd.h"

int qrt_dashboard_handler(request_rec *r);

#endif
