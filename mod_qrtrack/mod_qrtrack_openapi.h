/* mod_qrtrack_openapi.c: GET <api>/openapi.json, before any token is asked for. */
#ifndef MOD_QRTRACK_OPENAPI_H
#define MOD_QRTRACK_OPENAPI_H

#include "mod_qrtrack_private.h"

qrt_err_t *qrt_openapi_show(qrt_req_t *q);

#endif
