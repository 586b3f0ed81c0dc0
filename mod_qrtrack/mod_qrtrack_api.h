/* mod_qrtrack_api.c: the qrtrack-api handler. */
#ifndef MOD_QRTRACK_API_H
#define MOD_QRTRACK_API_H

#include "httpd.h"

int qrt_api_handler(request_rec *r);
/* The first <Location> of qrtrack-api, e.g. "/api" (the default when there is none). */
const char *qrt_api_prefix(void);

#endif
