/* mod_qrtrack_health.c: GET <api>/health (no token): 200 or 503. */
#ifndef MOD_QRTRACK_HEALTH_H
#define MOD_QRTRACK_HEALTH_H

#include "mod_qrtrack_private.h"

qrt_err_t *qrt_health_show(qrt_req_t *q);

#endif
