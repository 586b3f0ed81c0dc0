/* mod_qrtrack_redact.c: ?api_token= values out of the request line, logs and mod_status. */
#ifndef MOD_QRTRACK_REDACT_H
#define MOD_QRTRACK_REDACT_H


void qrt_redact_register(void);

#endif
