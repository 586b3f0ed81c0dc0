/* qrt_webhook: webhooks' event types, secrets, message ids, destination URLs and the
 * bodies of the events (CONTRACT section 7, "Webhooks"; no httpd header). */
#ifndef QRT_WEBHOOK_H
#define QRT_WEBHOOK_H

#include <apr_pools.h>
#include <apr_time.h>
#include <sys/socket.h>
#include <jansson.h>

/* webhooks.events: a bit per event type. */
#define QRT_WEBHOOK_SCAN_CREATED     1
#define QRT_WEBHOOK_CLICK_CREATED    2
#define QRT_WEBHOOK_TRACKER_CREATED  4
#define QRT_WEBHOOK_TRACKER_UPDATED  8
#define QRT_WEBHOOK_TRACKER_DELETED  16
#define QRT_WEBHOOK_TRACKER_EXPIRED  32
#define QRT_WEBHOOK_EVENTS_ALL       63
/* webhook.test (POST /webhook/<id>/test): sent to the one webhook asked, whatever its
 * events; never a subscription (qrt_webhook_event_bit does not know its name), so a bit
 * far from those a new event type would take. */
#define QRT_WEBHOOK_TEST             (1 << 30)

/* webhook_events.state */
#define QRT_WEBHOOK_PENDING   0
#define QRT_WEBHOOK_DELIVERED 1
#define QRT_WEBHOOK_FAILED    2
#define QRT_WEBHOOK_DROPPED   3

/* A destination URL: at most this many bytes. */
#define QRT_WEBHOOK_URL_MAX 2048

/* The bit of an event name ("scan.created"), 0 for an unknown name. */
int qrt_webhook_event_bit(const char *name);
/* The name of a single event bit (QRT_WEBHOOK_TEST's too), NULL for anything else. */
const char *qrt_webhook_event_name(int bit);
/* A bit mask as a JSON array of names, in bit order. */
json_t *qrt_webhook_events_json(int mask);

/* "whsec_" + base64 of 32 random bytes (Standard Webhooks). NULL when the system
 * has no randomness to give. */
const char *qrt_webhook_secret_make(apr_pool_t *p);
/* "msg_" + 22 random URL-safe characters (132 bits): an event's webhook-id. */
const char *qrt_webhook_msg_id(apr_pool_t *p);
/* n such ids from one draw of the system's randomness (a batch's events): an array of
 * n strings, NULL when there is none to give. */
const char **qrt_webhook_msg_ids(apr_pool_t *p, int n);

/* Deliveries give way to scans: while the scan committer finishes at least
 * QRT_WEBHOOK_BUSY_RATE batches a second and the CPU is contended, the worker pauses
 * QRT_WEBHOOK_PAUSE after each QRT_WEBHOOK_SLICE of work (its CPU, and on a database
 * server the time its statements took there): a fortieth of a core at most, a share of
 * the CPU, not what the scans need. Its deliveries go on,
 * later (the outbox keeps them), and at full speed while the CPU has room. The CPU is
 * contended when some task waited for a CPU at least QRT_WEBHOOK_STALL_SHARE percent of
 * the time (Linux's pressure stall information), or, where the system does not tell,
 * when the worker itself waited to run at least as long as it ran. */
#define QRT_WEBHOOK_BUSY_RATE   50
#define QRT_WEBHOOK_STALL_SHARE 25
#define QRT_WEBHOOK_SLICE       apr_time_from_msec(1)
#define QRT_WEBHOOK_PAUSE       apr_time_from_msec(39)
/* Whether to give way, from what happened in the last elapsed microseconds: batches the
 * committer finished; stalled, the microseconds some task waited for a CPU (< 0 when the
 * system does not tell); the time the worker ran and waited to run (nanoseconds; waited
 * < 0 when the system does not tell). With neither measure the batches alone decide. */
int qrt_webhook_give_way(apr_uint32_t batches, apr_int64_t elapsed, apr_int64_t stalled,
                         apr_int64_t ran, apr_int64_t waited);

/* A destination URL: absolute http or https, at most QRT_WEBHOOK_URL_MAX bytes, no
 * userinfo (qrt_valid_redirect_url otherwise). NULL when fine, else the reason. */
const char *qrt_webhook_url_check(apr_pool_t *p, const char *url);

/* When host (as qrt_url_host gives it: a name, a dotted quad or an [IPv6] literal)
 * is a literal IP address: 1 and the address in *out, else 0 (a name is checked
 * when it is resolved, at delivery). */
int qrt_netguard_literal(const char *host, struct sockaddr_storage *out);

/* The complete body of an event: {"type", "timestamp", "data"} (data's reference
 * taken), compact JSON in p. */
char *qrt_webhook_body(apr_pool_t *p, int type_bit, apr_int64_t at, json_t *data);

#endif
