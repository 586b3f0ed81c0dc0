/* qrt_webhook: see qrt_webhook.h. */
#include <string.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <apr_strings.h>
#include <apr_base64.h>
#include <apr_general.h>

#include "qrt_webhook.h"
#include "qrt_date.h"
#include "qrt_json.h"
#include "qrt_valid.h"

static const char *const webhook_names[] = {
    "scan.created", "click.created", "tracker.created", "tracker.updated",
    "tracker.deleted", "tracker.expired"
};
#define WEBHOOK_NAMES (int)(sizeof(webhook_names) / sizeof(webhook_names[0]))

int qrt_webhook_event_bit(const char *name)
{
    int i;

    for (i = 0; name && i < WEBHOOK_NAMES; i++) {
        if (!strcmp(name, webhook_names[i])) {
            return 1 << i;
        }
    }
    return 0;
}

const char *qrt_webhook_event_name(int bit)
{
    int i;

    if (bit == QRT_WEBHOOK_TEST) {
        return "webhook.test";
    }
    for (i = 0; i < WEBHOOK_NAMES; i++) {
        if (bit == 1 << i) {
            return webhook_names[i];
        }
    }
    return NULL;
}

json_t *qrt_webhook_events_json(int mask)
{
    json_t *a = json_array();
    int i;

    for (i = 0; i < WEBHOOK_NAMES; i++) {
        if (mask & (1 << i)) {
            json_array_append_new(a, json_string(webhook_names[i]));
        }
    }
    return a;
}

const char *qrt_webhook_secret_make(apr_pool_t *p)
{
    unsigned char raw[32];
    char *out;

    if (apr_generate_random_bytes(raw, sizeof(raw)) != APR_SUCCESS) {
        return NULL;
    }
    out = apr_palloc(p, 6 + apr_base64_encode_len(sizeof(raw)));
    memcpy(out, "whsec_", 6);
    apr_base64_encode_binary(out + 6, raw, sizeof(raw));
    return out;
}

const char **qrt_webhook_msg_ids(apr_pool_t *p, int n)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    enum { RAW = 22 };
    const char **ids = apr_palloc(p, sizeof(*ids) * (apr_size_t)(n > 0 ? n : 1));
    unsigned char *raw = apr_palloc(p, (apr_size_t)(n > 0 ? n : 1) * RAW);
    char *out = apr_palloc(p, (apr_size_t)(n > 0 ? n : 1) * (4 + RAW + 1));
    int k, i;

    if (n > 0 && apr_generate_random_bytes(raw, (apr_size_t)n * RAW) != APR_SUCCESS) {
        return NULL;
    }
    for (k = 0; k < n; k++, out += 4 + RAW + 1) {
        memcpy(out, "msg_", 4);
        for (i = 0; i < RAW; i++) {
            out[4 + i] = alphabet[raw[k * RAW + i] & 63];   /* 64 symbols: no bias */
        }
        out[4 + RAW] = '\0';
        ids[k] = out;
    }
    return ids;
}

const char *qrt_webhook_msg_id(apr_pool_t *p)
{
    const char **ids = qrt_webhook_msg_ids(p, 1);

    return ids ? ids[0] : NULL;
}

int qrt_webhook_give_way(apr_uint32_t batches, apr_int64_t elapsed, apr_int64_t stalled,
                         apr_int64_t ran, apr_int64_t waited)
{
    if (elapsed <= 0
        || (apr_int64_t)batches * APR_USEC_PER_SEC < QRT_WEBHOOK_BUSY_RATE * elapsed) {
        return 0;
    }
    if (stalled >= 0 && stalled * 100 >= QRT_WEBHOOK_STALL_SHARE * elapsed) {
        return 1;
    }
    if (waited > 0 && waited >= ran) {
        return 1;
    }
    return stalled < 0 && waited < 0;
}

const char *qrt_webhook_url_check(apr_pool_t *p, const char *url)
{
    const char *why, *auth, *end;

    if (!url) {
        return "is required";
    }
    if (strlen(url) > QRT_WEBHOOK_URL_MAX) {
        return "may not be longer than 2048 bytes";
    }
    if ((why = qrt_valid_redirect_url(url)) != NULL) {
        return why;
    }
    /* (qrt_valid_redirect_url has checked the "scheme://" start) */
    auth = strstr(url, "//") + 2;
    end = auth + strcspn(auth, "/?#");
    if (memchr(auth, '@', (apr_size_t)(end - auth))) {
        return "may not contain a user name or password";
    }
    (void)p;
    return NULL;
}

int qrt_netguard_literal(const char *host, struct sockaddr_storage *out)
{
    char buf[64];
    apr_size_t len;

    memset(out, 0, sizeof(*out));
    if (!host || !*host) {
        return 0;
    }
    len = strlen(host);
    if (host[0] == '[' && host[len - 1] == ']' && len - 2 < sizeof(buf)) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)out;

        memcpy(buf, host + 1, len - 2);
        buf[len - 2] = '\0';
        if (inet_pton(AF_INET6, buf, &s6->sin6_addr) == 1) {
            s6->sin6_family = AF_INET6;
            return 1;
        }
        return 0;
    }
    {
        struct sockaddr_in *s4 = (struct sockaddr_in *)out;

        if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
            s4->sin_family = AF_INET;
            return 1;
        }
    }
    return 0;
}

char *qrt_webhook_body(apr_pool_t *p, int type_bit, apr_int64_t at, json_t *data)
{
    json_t *j = json_object();
    char when[QRT_DATE_LEN];
    char *out;

    qrt_date_format(when, at, 0);
    json_object_set_new(j, "type", json_string(qrt_webhook_event_name(type_bit)));
    json_object_set_new(j, "timestamp", json_string(when));
    json_object_set_new(j, "data", data ? data : json_object());
    out = qrt_json_dump(p, j, NULL);
    json_decref(j);
    return out;
}
