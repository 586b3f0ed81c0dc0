/* mod_qrtrack_qrcode.c: POST <api>/qrCode, a QR image of a URL or Wi-Fi network. */
#ifndef MOD_QRTRACK_QRCODE_H
#define MOD_QRTRACK_QRCODE_H

#include "mod_qrtrack_private.h"

qrt_err_t *qrt_qrcode_plain(qrt_req_t *q);

#endif
