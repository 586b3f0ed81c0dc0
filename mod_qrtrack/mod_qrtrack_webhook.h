/* mod_qrtrack_webhook.c: the webhooks' endpoints (CONTRACT section 7, "Webhooks"). */
#ifndef MOD_QRTRACK_WEBHOOK_H
#define MOD_QRTRACK_WEBHOOK_H

#include "mod_qrtrack_private.h"

/* Handlers (the route table in mod_qrtrack_api.c). */
qrt_err_t *qrt_webhook_create(qrt_req_t *q);
qrt_err_t *qrt_webhook_list(qrt_req_t *q);
qrt_err_t *qrt_webhook_show(qrt_req_t *q);
qrt_err_t *qrt_webhook_update(qrt_req_t *q);
qrt_err_t *qrt_webhook_secret(qrt_req_t *q);
qrt_err_t *qrt_webhook_recover(qrt_req_t *q);
qrt_err_t *qrt_webhook_test(qrt_req_t *q);
qrt_err_t *qrt_webhook_delete(qrt_req_t *q);
qrt_err_t *qrt_webhook_deliveries(qrt_req_t *q);

#endif
