/* mod_qrtrack_bulk.c: POST /tracker/bulk. */
#ifndef MOD_QRTRACK_BULK_H
#define MOD_QRTRACK_BULK_H

#include "mod_qrtrack_private.h"

qrt_err_t *qrt_tracker_bulk(qrt_req_t *q);

#endif
