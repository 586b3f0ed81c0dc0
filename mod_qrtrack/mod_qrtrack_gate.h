/* mod_qrtrack_gate: the password form of a protected code and the expired page. */
#ifndef MOD_QRTRACK_GATE_H
#define MOD_QRTRACK_GATE_H

#include "httpd.h"

apr_status_t qrt_gate_post_config(server_rec *s);
void qrt_gate_child_init(apr_pool_t *p, server_rec *s);
/* *pass 1 when the request carries the right password (a POST of the form); else
 * the status for the handler to return (its page written: the form, 403, 429).
 * *referer is the form's field "referer" (the page that sent the visitor to the form),
 * NULL when the form has none. */
int qrt_gate_check(request_rec *r, apr_int64_t tracker, const char *hash, int *pass,
                   const char **referer);
/* Writes the 410 page of an expired code. */
int qrt_gate_expired(request_rec *r);

#endif
