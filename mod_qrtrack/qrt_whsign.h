/* qrt_whsign: Standard Webhooks signatures (https://www.standardwebhooks.com/).
 *
 * A webhook's secret is "whsec_" followed by the standard base64 of its key (32
 * random bytes when mod_qrtrack makes it); a delivery's webhook-signature header is
 * "v1," followed by the base64 of HMAC-SHA256(key, msg_id "." timestamp "." body),
 * the timestamp being the webhook-timestamp header (epoch seconds, decimal). */
#ifndef QRT_WHSIGN_H
#define QRT_WHSIGN_H

#include <apr.h>

#define QRT_WHSIGN_PREFIX   "whsec_"
/* Longest key accepted: 64 bytes (a 88-character base64 text). */
#define QRT_WHSIGN_KEY_MAX  64
/* "v1," and the base64 of a 32-byte HMAC, and a NUL. */
#define QRT_WHSIGN_SIG_LEN  (3 + 44 + 1)

typedef struct {
    unsigned char key[QRT_WHSIGN_KEY_MAX];
    apr_size_t len;
} qrt_whsign_key_t;

/* The key of secret: "whsec_" and padded standard base64 of 1 to QRT_WHSIGN_KEY_MAX
 * bytes (the prefix may be left out, as the specification's libraries allow).
 * 0, or -1 (and *key zeroed) for anything else. */
int qrt_whsign_key_parse(const char *secret, qrt_whsign_key_t *key);

/* The webhook-signature header's value for one delivery, into out
 * (QRT_WHSIGN_SIG_LEN bytes). 0, or -1 when OpenSSL fails (out is then ""). */
int qrt_whsign_sign(const qrt_whsign_key_t *key, const char *msg_id, apr_int64_t timestamp,
                    const char *body, apr_size_t body_len, char *out);

#endif
