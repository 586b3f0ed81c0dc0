/* mod_qrtrack core: Wi-Fi network QR payloads (WIFI:T:..;S:..;P:..;;).
 *
 * No httpd header here; the module, the admin tool and the unit tests
 * all link this file.
 */

#ifndef QRT_WIFI_H
#define QRT_WIFI_H

#include "apr_pools.h"

/* Normalise an encryption name, case-insensitive: WPA, WPA2, WPA3 -> "WPA";
 * WEP -> "WEP"; nopass -> "nopass"; NULL or "" -> "WPA"; anything else
 * -> NULL. The result is a static string. */
const char *qrt_wifi_encryption(const char *in);

/* Copy s from pool p with each of \ ; , : " preceded by a backslash.
 * NULL gives "". */
const char *qrt_wifi_escape(apr_pool_t *p, const char *s);

/* Build WIFI:T:<enc>;S:<ssid>;P:<password>;[H:true;]; with ssid and
 * password escaped; for enc "nopass" the P field is left out. enc should
 * be a value returned by qrt_wifi_encryption(); it is normalised again
 * (NULL or "" -> "WPA") and an unknown value goes in escaped. NULL ssid
 * or password count as "". Allocated from p. */
const char *qrt_wifi_payload(apr_pool_t *p, const char *ssid,
                             const char *password, const char *enc,
                             int hidden);

#endif /* QRT_WIFI_H */
