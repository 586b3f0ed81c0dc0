/* mod_qrtrack_account: GET /account, who the token belongs to. */
#include "mod_qrtrack_private.h"
#include "mod_qrtrack_account.h"
#include "mod_qrtrack_http.h"
#include "qrt_json.h"

APLOG_USE_MODULE(qrtrack);

qrt_err_t *qrt_account_show(qrt_req_t *q)
{
    json_t *j = json_object();

    json_object_set_new(j, "name", json_string(q->auth.account_name));
    json_object_set_new(j, "plan", json_string(q->auth.plan));
    json_object_set_new(j, "rate_limit", json_integer(q->rate_limit));
    /* A token with a scope or an expiry says so (the dashboard hides its editing for a
     * read one); a plain write token's answer stays as it always was. */
    if (q->auth.read_only || q->auth.expires_at) {
        json_object_set_new(j, "token", json_pack("{s:s,s:o}", "scope",
                            q->auth.read_only ? QRT_SCOPE_READ : QRT_SCOPE_WRITE,
                            "expires_at", q->auth.expires_at
                            ? qrt_json_time(q->auth.expires_at) : json_null()));
    }
    return qrt_respond_json(q, HTTP_OK, j);
}
