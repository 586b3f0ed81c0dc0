/* mod_qrtrack_errpage.c: httpd's own error pages on the API's paths as JSON errors. */
#ifndef MOD_QRTRACK_ERRPAGE_H
#define MOD_QRTRACK_ERRPAGE_H

void qrt_errpage_register(void);

#endif
