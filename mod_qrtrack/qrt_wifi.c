/* mod_qrtrack core: Wi-Fi network QR payloads. */

#include <string.h>
#include <strings.h>

#include "apr_strings.h"

#include "qrt_wifi.h"

const char *qrt_wifi_encryption(const char *in)
{
    if (!in || !*in) {
        return "WPA";
    }
    if (!strcasecmp(in, "WPA") || !strcasecmp(in, "WPA2")
        || !strcasecmp(in, "WPA3")) {
        return "WPA";
    }
    if (!strcasecmp(in, "WEP")) {
        return "WEP";
    }
    if (!strcasecmp(in, "nopass")) {
        return "nopass";
    }
    return NULL;
}

static int qrt_wifi_special(char c)
{
    return c == '\\' || c == ';' || c == ',' || c == ':' || c == '"';
}

const char *qrt_wifi_escape(apr_pool_t *p, const char *s)
{
    apr_size_t n = 0;
    const char *in;
    char *out, *o;

    if (!s) {
        return "";
    }
    for (in = s; *in; in++) {
        n += qrt_wifi_special(*in) ? 2 : 1;
    }
    out = o = apr_palloc(p, n + 1);
    for (in = s; *in; in++) {
        if (qrt_wifi_special(*in)) {
            *o++ = '\\';
        }
        *o++ = *in;
    }
    *o = '\0';
    return out;
}

const char *qrt_wifi_payload(apr_pool_t *p, const char *ssid,
                             const char *password, const char *enc,
                             int hidden)
{
    const char *pw = "";
    const char *norm = qrt_wifi_encryption(enc);

    /* a normalised value maps to itself; anything else goes in escaped */
    enc = norm ? norm : qrt_wifi_escape(p, enc);
    if (strcmp(enc, "nopass")) {
        pw = apr_pstrcat(p, "P:", qrt_wifi_escape(p, password), ";", NULL);
    }
    return apr_pstrcat(p, "WIFI:T:", enc, ";S:", qrt_wifi_escape(p, ssid),
                       ";", pw, hidden ? "H:true;" : "", ";", NULL);
}
