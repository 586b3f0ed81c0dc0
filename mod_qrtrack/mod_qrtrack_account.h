/* mod_qrtrack_account.c: GET <api>/account. */
#ifndef MOD_QRTRACK_ACCOUNT_H
#define MOD_QRTRACK_ACCOUNT_H

#include "mod_qrtrack_private.h"

qrt_err_t *qrt_account_show(qrt_req_t *q);

#endif
