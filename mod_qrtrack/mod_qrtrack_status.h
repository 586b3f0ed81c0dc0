/* mod_qrtrack_status.c: the module's section of mod_status's page. */
#ifndef MOD_QRTRACK_STATUS_H
#define MOD_QRTRACK_STATUS_H


void qrt_status_register(void);

#endif
