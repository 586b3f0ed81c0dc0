/* mod_qrtrack_account: GET /account, who the token belongs to. */
#include "mod_qrtrack_private.h"
#include "mod_qrtrack_account.h"
#include "mod_qrtrack_http.h"

APLOG_USE_MODULE(qrtrack);

qrt_err_t *qrt_account_show(qrt_req_t *q)
{
    json_t *j = json_object();

    json_object_set_new(j, "name", json_string(q->auth.account_name));
    json_object_set_new(j, "plan", json_string(q->auth.plan));
    json_object_set_new(j, "rate_limit", json_integer(q->rate_limit));
    return qrt_respond_json(q, HTTP_OK, j);
}
