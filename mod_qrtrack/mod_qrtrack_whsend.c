/* mod_qrtrack_whsend: the webhook delivery worker.
 *
 * Each child runs a thread (qrtrack-hooks in `ps -L`); the one that holds the
 * qrtrack-webhook mutex (a try-lock every WH_IDLE, kept until the child stops, freed
 * by the kernel if the child dies) delivers for the server. Several nodes share the
 * outbox: a worker takes due events under a lease (claimed_until, WH_LEASE), so an
 * event taken by a worker that died is taken again once the lease ends (at least
 * once). Deliveries go out with libcurl's multi interface, many at once over reused
 * connections, each within WH_TIMEOUT_MS; every connection's resolved address is
 * checked with qrt_netguard before it is made (QRTrackWebhookAllow). No lock a scan
 * takes is held while an HTTP request is in flight, and the worker has its own
 * database connection. */
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>
#include <curl/curl.h>
#include "httpd.h"
#include "http_log.h"
#include <apr_dbd.h>
#include <apr_lib.h>
#include <apr_strings.h>
#include <apr_thread_proc.h>
#include <apr_thread_mutex.h>

#include "mod_qrtrack_private.h"
#include "qrt_clock.h"
#include "qrt_dbwatch.h"
#include "mod_qrtrack_scan.h"
#include "mod_qrtrack_config.h"
#include "mod_qrtrack_db.h"
#include "mod_qrtrack_stats.h"
#include "mod_qrtrack_util.h"
#include "mod_qrtrack_whsend.h"
#include "qrt_dialect.h"
#include "mod_qrtrack_spool.h"
#include "qrt_netguard.h"
#include "qrt_retry.h"
#include "qrt_schema.h"
#include "qrt_store_whsend.h"
#include "qrt_version.h"
#include "qrt_webhook.h"
#include "qrt_whsign.h"

APLOG_USE_MODULE(qrtrack);

/* SQLite: how long one try of the worker's statements waits for the lock (ms). */
#define WH_SQLITE_BUSY_MS 20

#define WH_IDLE          apr_time_from_msec(200)   /* outbox polled when idle */
#define WH_CLAIM_GAP     apr_time_from_msec(20)    /* between claims while events come */
#define WH_RECORD_GAP    apr_time_from_msec(50)    /* an outcome waits for others so long */
#define WH_BATCH         512        /* events taken at once, all in flight together */
#define WH_RUN           64         /* events of one webhook and tracker taken at once */
#define WH_LEASE         30         /* seconds an event stays taken by a worker */
#define WH_TIMEOUT_MS    10000L     /* a delivery, connection included */
#define WH_ANSWER_MAX    (64 * 1024)    /* bytes of an answer read; then it is cut */
#define WH_ERROR_MAX     255        /* webhook_attempts.error */
#define WH_RECONNECT     apr_time_from_sec(1)
#define WH_BACKLOG_EVERY apr_time_from_sec(1)
#define WH_BUSY_EVERY    apr_time_from_msec(50)    /* the scan committer's pace looked at */

static struct {
    apr_thread_t *thread;
    qrt_cond_t *wake;           /* the loop's pause, cut short by the stop */
    int stopping;               /* under wake's lock; read unlocked by the delivery loop */
    CURLM *multi;               /* the thread's, woken by the stop */
    apr_global_mutex_t *active; /* held by the server's delivering worker */
    server_rec *s;
} wh;

/* This server's id in the leases its workers take (webhook_events.claimed_by): made once
 * in the parent's life, the same across graceful restarts, as the mutex is. */
static apr_int64_t wh_owner;


static int wh_stopping(void)
{
    return __atomic_load_n(&wh.stopping, __ATOMIC_RELAXED);
}

/* One delivery in flight. */
typedef struct {
    const qrt_whsend_event_t *ev;   /* &evc */
    qrt_whsend_event_t evc;
    apr_pool_t *p;              /* the item's, from its claim to its record */
    int in_use;
    apr_int64_t started;        /* the attempt's time */
    CURL *easy;
    struct curl_slist *headers;
    /* When the answer's Retry-After asks to be tried again (epoch seconds), counted from
     * when the answer came, not from the attempt's start: -1, none */
    apr_int64_t retry_at;
    apr_size_t answer;          /* bytes of the answer's body */
    int cut;                    /* the answer was longer than WH_ANSWER_MAX */
    int refused;                /* a connection refused by qrt_netguard */
    char refused_addr[INET6_ADDRSTRLEN];
    int done;
    CURLcode code;
    long status;
    char errbuf[CURL_ERROR_SIZE];
    /* a run: the events of one webhook and tracker taken together, each sent once the
     * one before it was delivered */
    int next;                   /* the slot of the next in its run, + 1 (0: none) */
    int waiting;                /* not started: the one before it is in flight */
    int skipped;                /* never tried: the one before it was not delivered */
    apr_int64_t run_until;      /* no later one starts after this (its lease runs) */
    int run_full;               /* the last of a run of WH_RUN: more of its webhook and
                                 * tracker may be due */
} wh_item;

/* Every connection's address, resolved, before connect(): DNS rebinding cannot
 * send a delivery where the guard would not. */
static curl_socket_t wh_open_socket(void *clientp, curlsocktype purpose,
                                    struct curl_sockaddr *a)
{
    wh_item *it = clientp;

    if (purpose != CURLSOCKTYPE_IPCXN
        || !qrt_netguard_allowed(&a->addr, qrt_config()->webhook_allow)) {
        it->refused = 1;
        if (a->family == AF_INET) {
            inet_ntop(AF_INET, &((struct sockaddr_in *)&a->addr)->sin_addr,
                      it->refused_addr, sizeof(it->refused_addr));
        }
        else if (a->family == AF_INET6) {
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&a->addr)->sin6_addr,
                      it->refused_addr, sizeof(it->refused_addr));
        }
        else {
            apr_cpystrn(it->refused_addr, "an address of another family",
                        sizeof(it->refused_addr));
        }
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static size_t wh_header(char *b, size_t size, size_t n, void *ud)
{
    wh_item *it = ud;
    size_t len = size * n;
    apr_int64_t now, after;

    if (len >= 5 && !strncmp(b, "HTTP/", 5)) {
        it->retry_at = -1;          /* a new answer (after a 100 Continue) */
    }
    else if (len > 12 && len < 128 && !strncasecmp(b, "Retry-After:", 12)) {
        char v[128];
        size_t k = len - 12;

        memcpy(v, b + 12, k);
        while (k > 0 && (v[k - 1] == '\r' || v[k - 1] == '\n' || v[k - 1] == ' ')) {
            k--;
        }
        v[k] = '\0';
        now = apr_time_sec(apr_time_now());
        after = qrt_retry_after_parse(v, now);
        it->retry_at = after < 0 ? -1 : now + after;
    }
    return len;
}

/* The answer's body is not kept; a long one is cut (its status still counts). */
static size_t wh_body(char *b, size_t size, size_t n, void *ud)
{
    wh_item *it = ud;

    (void)b;
    it->answer += size * n;
    if (it->answer > WH_ANSWER_MAX) {
        it->cut = 1;
        return 0;
    }
    return size * n;
}

/* A msg_id goes into a header as it is: URL-safe characters only. */
static int wh_msg_id_ok(const char *s)
{
    size_t n = 0;

    for (; *s; s++, n++) {
        if (!apr_isalnum(*s) && *s != '_' && *s != '-') {
            return 0;
        }
    }
    return n > 0 && n <= 64;
}

/* The easy handle of one delivery; NULL (and it->errbuf says why) when the event
 * cannot be sent as it is stored. */
/* secret's signature of the event at now into sig: 0, or -1 (not a whsec_ secret). */
static int wh_sign(const wh_item *it, const char *secret, apr_int64_t now, char *sig)
{
    qrt_whsign_key_t key;
    int rc = qrt_whsign_key_parse(secret, &key) != 0
             || qrt_whsign_sign(&key, it->ev->msg_id, now, it->ev->body,
                                strlen(it->ev->body), sig) != 0 ? -1 : 0;

    memset(&key, 0, sizeof(key));
    return rc;
}

static CURL *wh_easy(apr_pool_t *p, wh_item *it, apr_int64_t now)
{
    char sig[QRT_WHSIGN_SIG_LEN], prev[QRT_WHSIGN_SIG_LEN];
    const char *sigs;
    CURL *e;

    if (!wh_msg_id_ok(it->ev->msg_id)) {
        apr_cpystrn(it->errbuf, "the event's msg_id is not URL-safe text", CURL_ERROR_SIZE);
        return NULL;
    }
    if (wh_sign(it, it->ev->secret, now, sig) != 0) {
        apr_cpystrn(it->errbuf, "the webhook's secret is not a whsec_ secret",
                    CURL_ERROR_SIZE);
        return NULL;
    }
    /* While a replaced secret is still kept (POST /webhook/<id>/secret), its signature
     * follows the new one's, space-separated as Standard Webhooks lists several: a
     * receiver that has not taken the new secret yet still verifies. */
    sigs = sig;
    if (it->ev->secret_prev && it->ev->secret_prev_until > now
        && wh_sign(it, it->ev->secret_prev, now, prev) == 0) {
        sigs = apr_pstrcat(p, sig, " ", prev, NULL);
    }
    e = curl_easy_init();
    if (!e) {
        apr_cpystrn(it->errbuf, "out of memory", CURL_ERROR_SIZE);
        return NULL;
    }
    it->headers = curl_slist_append(NULL, "content-type: application/json");
    it->headers = curl_slist_append(it->headers,
                                    apr_pstrcat(p, "webhook-id: ", it->ev->msg_id, NULL));
    it->headers = curl_slist_append(it->headers, apr_psprintf(p, "webhook-timestamp: %"
                                                              APR_INT64_T_FMT, now));
    it->headers = curl_slist_append(it->headers,
                                    apr_pstrcat(p, "webhook-signature: ", sigs, NULL));
    it->headers = curl_slist_append(it->headers, "Expect:");
    curl_easy_setopt(e, CURLOPT_URL, it->ev->url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_PROXY, "");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, WH_TIMEOUT_MS);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, WH_TIMEOUT_MS);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, it->ev->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(it->ev->body));
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, it->headers);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "mod_qrtrack/" QRTRACK_VERSION);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, wh_open_socket);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, it);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, wh_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, it);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, wh_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, it);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, it->errbuf);
    curl_easy_setopt(e, CURLOPT_PRIVATE, it);
    return e;
}

static void wh_item_done(CURLM *multi, wh_item *it)
{
    if (it->easy) {
        curl_multi_remove_handle(multi, it->easy);
        curl_easy_cleanup(it->easy);
        it->easy = NULL;
    }
    curl_slist_free_all(it->headers);
    it->headers = NULL;
}

/* Whether a delivery that ended got a 2xx (or a 2xx whose long answer was cut). */
static int wh_delivered(const wh_item *it)
{
    return it->done && !it->skipped && it->status >= 100
           && (it->code == CURLE_OK || (it->code == CURLE_WRITE_ERROR && it->cut))
           && qrt_retry_outcome(it->status) == QRT_RETRY_DELIVERED;
}

/* Starts one delivery; a failure to start makes it done at once. */
static void wh_start(CURLM *multi, wh_item *it)
{
    it->retry_at = -1;
    it->easy = wh_easy(it->p, it, it->started);
    if (!it->easy || curl_multi_add_handle(multi, it->easy) != CURLM_OK) {
        it->done = 1;
        it->code = CURLE_FAILED_INIT;
        wh_item_done(multi, it);
    }
}

/* The slots of the deliveries in flight, waiting their turn in a run, or waiting to be
 * recorded. */
typedef struct {
    wh_item items[WH_BATCH];
    int in_flight;              /* started, not done */
    int waiting;                /* in a run, after one in flight */
    int done;                   /* done, not recorded */
    apr_time_t first_done;
    int more_due;               /* a full run was delivered: its next events may be due */
    apr_pool_t *tp;
    apr_uint32_t rnd;
} wh_slots_t;

/* it has ended: the next of its run starts if it was delivered (while the run's lease
 * allows), else it and every later one of the run end untried, their leases given back
 * when recorded: a tracker's events go out in order. */
static void wh_run_next(wh_slots_t *sl, CURLM *multi, wh_item *it)
{
    while (it->next) {
        wh_item *n = &sl->items[it->next - 1];
        apr_int64_t now = apr_time_sec(apr_time_now());

        n->waiting = 0;
        if (wh_delivered(it) && now < it->run_until) {
            n->started = now;
            wh_start(multi, n);
            if (!n->done) {
                return;
            }
        }
        else {
            n->done = 1;
            n->skipped = 1;
        }
        it = n;
    }
}

/* Moves on every delivery in flight; the number still running. */
static int wh_progress(wh_slots_t *sl, CURLM *multi)
{
    int running = 0, left;
    CURLMsg *msg;

    curl_multi_perform(multi, &running);
    while ((msg = curl_multi_info_read(multi, &left))) {
        wh_item *it = NULL;

        if (msg->msg != CURLMSG_DONE) {
            continue;
        }
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&it);
        it->done = 1;
        it->code = msg->data.result;
        curl_easy_getinfo(it->easy, CURLINFO_RESPONSE_CODE, &it->status);
        wh_item_done(multi, it);
        wh_run_next(sl, multi, it);
    }
    return running;
}

/* What an attempt came to, for the store. */
static void wh_result(apr_pool_t *p, const wh_item *it, apr_uint32_t r,
                      qrt_whsend_result_t *res)
{
    apr_int64_t now = it->started;
    int answered = it->done && it->status >= 100
                   && (it->code == CURLE_OK || (it->code == CURLE_WRITE_ERROR && it->cut));
    apr_int64_t delay;

    memset(res, 0, sizeof(*res));
    res->ev = it->ev;
    res->attempt = it->ev->attempts + 1;
    res->at = now;
    if (!it->done || it->skipped) {
        res->kind = QRT_WHSEND_RELEASE;
        return;
    }
    if (answered) {
        res->http_status = it->status;
        switch (qrt_retry_outcome(it->status)) {
        case QRT_RETRY_DELIVERED:
            res->kind = QRT_WHSEND_DELIVERED;
            return;
        case QRT_RETRY_GONE:
            res->kind = QRT_WHSEND_GONE;
            return;
        default:
            break;
        }
    }
    else if (it->refused) {
        res->error = apr_psprintf(p, "refused: %s is not a public address "
                                  "(QRTrackWebhookAllow)", it->refused_addr);
    }
    else if (it->code == CURLE_OPERATION_TIMEDOUT) {
        res->error = apr_psprintf(p, "timeout: no answer within %ld s",
                                  WH_TIMEOUT_MS / 1000);
    }
    else {
        res->error = apr_pstrdup(p, it->errbuf[0] ? it->errbuf
                                                  : curl_easy_strerror(it->code));
    }
    if (res->error && strlen(res->error) > WH_ERROR_MAX) {
        res->error = apr_pstrndup(p, res->error, WH_ERROR_MAX);
    }
    delay = qrt_retry_next(res->attempt, r, answered && it->retry_at >= 0
                                            ? (it->retry_at > now ? it->retry_at - now : 0)
                                            : -1);
    if (delay < 0) {
        res->kind = QRT_WHSEND_FAILED;
    }
    else {
        res->kind = QRT_WHSEND_RETRY;
        res->next_at = now + delay;
    }
}

/* xorshift32: the retries' jitter needs no more. */
static apr_uint32_t wh_random(apr_uint32_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

/* Counts the slots in flight, waiting in a run and done (the time the first of those
 * done since the last record ended). */
static void wh_count(wh_slots_t *sl)
{
    int i, done = 0, in_flight = 0, waiting = 0;

    for (i = 0; i < WH_BATCH; i++) {
        const wh_item *it = &sl->items[i];

        if (it->in_use) {
            done += it->done;
            waiting += !it->done && it->waiting;
            in_flight += !it->done && !it->waiting;
        }
    }
    if (done > 0 && sl->done == 0) {
        sl->first_done = qrt_clock_now();
    }
    sl->in_flight = in_flight;
    sl->waiting = waiting;
    sl->done = done;
}

/* The slots of one claim's events in run order: by webhook, tracker and id. */
typedef struct {
    apr_int64_t webhook_id, tracker_id, id;
    int slot;
} wh_order;

static int wh_by_run(const void *a, const void *b)
{
    const wh_order *x = a, *y = b;

    if (x->webhook_id != y->webhook_id) {
        return x->webhook_id < y->webhook_id ? -1 : 1;
    }
    if (x->tracker_id != y->tracker_id) {
        return x->tracker_id < y->tracker_id ? -1 : 1;
    }
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Takes up to the free slots' number of due events, in runs of up to WH_RUN events of
 * one webhook and tracker, and starts the first of each run. The number taken, or -1
 * on a database error. */
static int wh_claim(wh_slots_t *sl, qrt_db_t *db, CURLM *multi, apr_pool_t *rp)
{
    apr_array_header_t *evs = NULL;
    apr_int64_t now = apr_time_sec(apr_time_now());
    int i, k = 0, run, gone = 0, free = WH_BATCH - sl->in_flight - sl->done - sl->waiting;
    wh_order *order;

    if (free <= 0) {
        return 0;
    }
    if (qrt_store_whsend_claim(db, rp, now, now + WH_LEASE, wh_owner, free, WH_RUN, &evs,
                               &gone)
        != APR_SUCCESS) {
        return -1;
    }
    if (gone > 0) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, wh.s, "QRT01100: %d webhook events dropped: "
                     "their visits were deleted before delivery", gone);
    }
    order = apr_palloc(rp, sizeof(*order) * (apr_size_t)(evs->nelts > 0 ? evs->nelts : 1));
    for (i = 0; i < evs->nelts; i++) {
        const qrt_whsend_event_t *e = &APR_ARRAY_IDX(evs, i, qrt_whsend_event_t);
        wh_item *it;

        while (sl->items[k].in_use) {
            k++;
        }
        it = &sl->items[k];
        memset(it, 0, sizeof(*it));
        it->in_use = 1;
        apr_pool_create(&it->p, sl->tp);
        it->evc = *e;
        it->evc.msg_id = apr_pstrdup(it->p, e->msg_id);
        it->evc.body = apr_pstrdup(it->p, e->body);
        it->evc.event_type = apr_pstrdup(it->p, e->event_type);
        it->evc.url = apr_pstrdup(it->p, e->url);
        it->evc.secret = apr_pstrdup(it->p, e->secret);
        it->evc.secret_prev = e->secret_prev ? apr_pstrdup(it->p, e->secret_prev) : NULL;
        it->ev = &it->evc;
        it->started = now;
        it->run_until = now + WH_LEASE / 2;
        order[i].webhook_id = e->webhook_id;
        order[i].tracker_id = e->tracker_id;
        order[i].id = e->id;
        order[i].slot = k;
    }
    qsort(order, (size_t)evs->nelts, sizeof(*order), wh_by_run);
    for (i = 0, run = 0; i < evs->nelts; i++) {
        if (i > 0 && order[i].webhook_id == order[i - 1].webhook_id
            && order[i].tracker_id == order[i - 1].tracker_id) {
            sl->items[order[i - 1].slot].next = order[i].slot + 1;
            sl->items[order[i].slot].waiting = 1;
            run++;
        }
        else {
            run = 1;
        }
        /* the claim took as many of them as a run holds: the rest wait for this one */
        sl->items[order[i].slot].run_full = run >= WH_RUN;
    }
    for (i = 0; i < evs->nelts; i++) {
        wh_item *it = &sl->items[order[i].slot];

        if (!it->waiting) {
            wh_start(multi, it);
            if (it->done) {
                wh_run_next(sl, multi, it);
            }
        }
    }
    wh_count(sl);
    return evs->nelts;
}

/* Records what the done deliveries (and, when `all`, those still in flight, given
 * back) came to, and frees their slots. APR_SUCCESS, or the store's error: the events
 * then come back when their lease ends, delivered again (at least once). */
static apr_status_t wh_record(wh_slots_t *sl, qrt_db_t *db, CURLM *multi, apr_pool_t *rp,
                              int all)
{
    qrt_whsend_result_t *res = apr_pcalloc(rp, sizeof(*res) * WH_BATCH);
    int i, n = 0, delivered = 0, failed = 0, disabled = 0;
    apr_uint32_t more = 0;
    apr_status_t rv = APR_SUCCESS;

    for (i = 0; i < WH_BATCH; i++) {
        wh_item *it = &sl->items[i];

        if (!it->in_use || (!it->done && !all)) {
            continue;
        }
        wh_item_done(multi, it);
        wh_result(rp, it, wh_random(&sl->rnd), &res[n]);
        delivered += res[n].kind == QRT_WHSEND_DELIVERED;
        if (it->run_full && res[n].kind == QRT_WHSEND_DELIVERED) {
            sl->more_due = 1;
        }
        failed += res[n].kind == QRT_WHSEND_FAILED || res[n].kind == QRT_WHSEND_GONE;
        if (it->done && it->code == CURLE_FAILED_INIT && qrt_log_due(qrt_ration(QRT_R_WH_BAD), &more)) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, wh.s, "QRT01031: webhook %"
                         APR_INT64_T_FMT " event %" APR_INT64_T_FMT " cannot be sent: %s "
                         "(and %u more such lines since this one was last logged)",
                         it->ev->webhook_id, it->ev->id, it->errbuf, more);
        }
        n++;
    }
    if (n > 0 && db) {
        rv = qrt_store_whsend_record(db, rp, res, n, QRT_RETRY_DISABLE_AFTER, &disabled);
    }
    for (i = 0; i < WH_BATCH; i++) {
        wh_item *it = &sl->items[i];

        if (it->in_use && (it->done || all)) {
            apr_pool_destroy(it->p);
            memset(it, 0, sizeof(*it));
        }
    }
    sl->done = 0;
    if (all) {
        sl->in_flight = sl->waiting = 0;
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    QRT_STAT_ADD(webhook_delivered, delivered);
    QRT_STAT_ADD(webhook_failed, failed);
    if (disabled && qrt_log_due(qrt_ration(QRT_R_WH_DISABLED), &more)) {
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, wh.s, "QRT01032: %d webhooks disabled "
                     "(410 Gone, or %d events in a row failed every attempt; and %u more "
                     "such lines since this one was last logged)", disabled,
                     QRT_RETRY_DISABLE_AFTER, more);
    }
    return APR_SUCCESS;
}

/* The worker's own connection (not mod_dbd's: it must not take a request's), opened
 * within QRT_DB_CONNECT_QUICK_S, then PGCONNECT_TIMEOUT (qrt_db_connect_patient): the
 * child's end waits for this thread, and a server that takes each new connection longer
 * than 2 s is still reached. */
static qrt_db_t *wh_connect(apr_pool_t *cp, int *silent_runs)
{
    const apr_dbd_driver_t *driver;
    qrt_db_t *db;
    const char *err;
    apr_uint32_t more = 0;

    apr_pool_clear(cp);
    db = apr_pcalloc(cp, sizeof(*db));
    if (qrt_db_connect_patient(cp, &driver, &db->handle, silent_runs, &err)
        != APR_SUCCESS) {
        if (qrt_log_due(qrt_ration(QRT_R_WH_DB), &more)) {
            ap_log_error(APLOG_MARK, APLOG_ERR, 0, wh.s, "QRT01033: the webhook worker "
                         "cannot open the database: %s (and %u more such lines since "
                         "this one was last logged)", err, more);
        }
        return NULL;
    }
    db->driver = driver;
    db->pool = cp;
    if (qrt_dialect_embedded(driver)) {
        /* Short waits, then QRT_SQLITE_TRIES tries 100 ms apart; a transaction that
         * still meets the lock fails and is tried again. (Its statements run natively,
         * qrt_store.c; one that fell back to apr_dbd_sqlite3 would wait holding its
         * mutex of the whole process, and stall this child's API and scan writer.) */
        qrt_schema_pragma(cp, driver, db->handle,
                          "PRAGMA busy_timeout = " APR_STRINGIFY(WH_SQLITE_BUSY_MS));
        /* Its transactions (leases, records) wait for the scan writers' commits on
         * their mutex, in turn with them, not in SQLite's busy wait. */
        db->tx_lock = qrt_scan_writers_lock;
    }
    qrt_db_prepare_lazily(db, cp);
    return db;
}

static void wh_disconnect(qrt_db_t *db)
{
    if (db) {
        apr_dbd_close(db->driver, db->handle);
    }
}

/* Waits up to t for a stop; 1 when stopping. */
static int wh_wait(apr_interval_time_t t)
{
    int stop;

    qrt_cond_lock(wh.wake);
    if (!wh.stopping) {
        qrt_cond_timedwait(wh.wake, t);
    }
    stop = wh.stopping;
    qrt_cond_unlock(wh.wake);
    return stop;
}

/* 1 while the worker leaves the database alone: on SQLite, while visits wait in the
 * node's spool. Its transactions take the scan writers' mutex, and the database the spool
 * waits for (a lock held by another program, a read-only file) would keep it waiting
 * there through SQLite's busy tries, the scans' batches behind it. Deliveries in flight
 * go on; their outcomes are recorded once the spool has been replayed. */
static int wh_paused(const qrt_db_t *db)
{
    return db && qrt_dialect_embedded(db->driver) && qrt_spool_pending();
}

static void wh_db_failed(qrt_db_t **db, apr_time_t now, apr_time_t *reconnect_at)
{
    apr_uint32_t more = 0;

    /* (a database that refuses writes refuses them every second, for as long as it
     * lasts: said every QRT_LOG_QUIET) */
    if (qrt_db_refuses_writes(*db) ? qrt_log_due_every(qrt_ration(QRT_R_WH_DB_QUIET), QRT_LOG_QUIET, &more)
                                   : qrt_log_due(qrt_ration(QRT_R_WH_DB), &more)) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, wh.s, "QRT01034: the webhook worker's "
                     "database work failed: %s; connecting again (and %u more such lines "
                     "since this one was last logged)",
                     (*db)->error ? (*db)->error : "unknown error", more);
    }
    wh_disconnect(*db);
    *db = NULL;
    *reconnect_at = now + WH_RECONNECT;
}

/* The delivering worker's loop: events are taken whenever slots are free (at most
 * every WH_CLAIM_GAP while events keep coming, every WH_IDLE when none are due) and
 * sent at once; what ended is recorded in batches. A receiver that hangs holds its
 * slots, not the others' deliveries. */
/* The CPU this thread has used (microseconds). */
static apr_time_t wh_cpu(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) {
        return 0;
    }
    return (apr_time_t)ts.tv_sec * APR_USEC_PER_SEC + ts.tv_nsec / 1000;
}

/* The worker's work for giving way (microseconds): its own CPU, and on a database server
 * the time it waited for its statements, which is mostly that server's CPU spent for it. */
static apr_time_t wh_remote_spent;

static apr_time_t wh_used(void)
{
    return wh_cpu() + wh_remote_spent;
}

/* Adds the time since `since` to the worker's work when the database is a server's. */
static void wh_remote_done(qrt_db_t *db, apr_time_t since)
{
    if (db && qrt_dialect_remote(db->driver)) {
        wh_remote_spent += qrt_clock_now() - since;
    }
}

/* The time this thread ran and waited to run (ns, Linux's schedstat); *waited stays as
 * it is when the system does not tell. */
static void wh_sched(apr_int64_t *ran, apr_int64_t *waited)
{
    long long r, w;
    FILE *f = fopen("/proc/thread-self/schedstat", "r");

    if (f) {
        if (fscanf(f, "%lld %lld", &r, &w) == 2) {
            *ran = r;
            *waited = w;
        }
        fclose(f);
    }
}

/* The microseconds some task waited for a CPU since boot (Linux's pressure stall
 * information, its "some" line), -1 when the system does not tell. */
static apr_int64_t wh_stalled(void)
{
    long long total = -1;
    FILE *f = fopen("/proc/pressure/cpu", "r");

    if (f) {
        if (fscanf(f, "some avg10=%*f avg60=%*f avg300=%*f total=%lld", &total) != 1) {
            total = -1;
        }
        fclose(f);
    }
    return total;
}

static void *APR_THREAD_FUNC wh_main(apr_thread_t *thread, void *data)
{
    apr_pool_t *tp = data, *cp, *rp;
    qrt_db_t *db = NULL;
    int active = 0, taken_over = 0, silent_runs = 0;
    apr_time_t reconnect_at = 0, backlog_at = 0, claim_at = 0, last_claim = 0;
    apr_time_t busy_at = 0, seen_at = 0, cpu_mark = 0;
    apr_uint32_t seen_batches = 0;
    apr_int64_t seen_ran = 0, seen_waited = 0, seen_stalled = -1;
    int busy = 0;
    wh_slots_t *sl = apr_pcalloc(tp, sizeof(*sl));

    (void)thread;
    prctl(PR_SET_NAME, "qrtrack-hooks", 0, 0, 0);
    /* (its database calls end when a server stops answering: qrt_dbwatch.h) */
    qrt_dbwatch_limit(qrt_db_call_limit_ms());
    sl->tp = tp;
    sl->rnd = (apr_uint32_t)apr_time_now() ^ ((apr_uint32_t)getpid() << 16) ^ 1u;
    apr_pool_create(&cp, tp);
    apr_pool_create(&rp, tp);
    while (!wh_stopping()) {
        /* (the loop's times are qrt_clock_now's: a step of the wall clock moves none) */
        apr_time_t now = qrt_clock_now(), wait, next_claim;
        int free, paused;

        if (!active) {
            active = apr_global_mutex_trylock(wh.active) == APR_SUCCESS;
        }
        /* Deliveries give way to scans (QRT_WEBHOOK_SLICE): a pause after each slice of
         * CPU while scans keep the committer busy and the CPU is contended (between
         * steps: no lock held, no transaction open). */
        if (now >= busy_at) {
            qrt_queue_t *q = qrt_scan_queue();
            apr_uint32_t batches = q ? qrt_queue_batches_done(q) : 0;
            apr_int64_t ran = 0, waited = -1, stalled = wh_stalled();

            wh_sched(&ran, &waited);
            busy = q && seen_at
                   && qrt_webhook_give_way(batches - seen_batches, now - seen_at,
                                           stalled < 0 || seen_stalled < 0
                                               ? -1 : stalled - seen_stalled,
                                           ran - seen_ran, waited < 0 ? -1
                                                                      : waited - seen_waited);
            seen_stalled = stalled;
            seen_batches = batches;
            seen_ran = ran;
            seen_waited = waited;
            seen_at = now;
            busy_at = now + WH_BUSY_EVERY;
            if (!busy) {
                cpu_mark = wh_used();
            }
        }
        if (busy && wh_used() - cpu_mark >= QRT_WEBHOOK_SLICE) {
            apr_sleep(QRT_WEBHOOK_PAUSE);
            cpu_mark = wh_used();
            now = qrt_clock_now();
        }
        /* (Not while the node counts the database as unreachable: its keeper tries a
         * connection each second and says when it answers again, QRT00105.) */
        if (active && !db && now >= reconnect_at && !qrt_db_down()) {
            db = wh_connect(cp, &silent_runs);
            if (!db) {
                reconnect_at = now + WH_RECONNECT;
            }
        }
        paused = wh_paused(db);
        /* The worker before this one (this server's) is gone: what it had leased and
         * neither recorded nor gave back is taken again now, not when its leases end. */
        if (db && !paused && !taken_over) {
            int n = 0;

            if (qrt_store_whsend_takeover(db, rp, wh_owner, &n) != APR_SUCCESS) {
                wh_db_failed(&db, now, &reconnect_at);
                apr_pool_clear(rp);
                continue;
            }
            taken_over = 1;
            if (n > 0) {
                ap_log_error(APLOG_MARK, APLOG_INFO, 0, wh.s, "QRT01038: %d webhook events "
                             "leased by this server's previous delivering worker taken "
                             "again", n);
            }
            apr_pool_clear(rp);
        }
        free = WH_BATCH - sl->in_flight - sl->done - sl->waiting;
        /* events are taken in large takes (half the slots free), or every WH_IDLE
         * while slots are held by slow receivers */
        next_claim = free >= WH_BATCH / 2 ? claim_at
                     : (claim_at > last_claim + WH_IDLE ? claim_at : last_claim + WH_IDLE);
        if (db && !paused && free > 0 && now >= next_claim) {
            int got = wh_claim(sl, db, wh.multi, rp);

            wh_remote_done(db, now);

            if (got < 0) {
                wh_db_failed(&db, now, &reconnect_at);
            }
            last_claim = now;
            /* all it asked for: more may be due at once */
            claim_at = got == free ? now : now + (got > 0 ? WH_CLAIM_GAP : WH_IDLE);
            apr_pool_clear(rp);
            continue;
        }
        if (sl->in_flight > 0) {
            wh_progress(sl, wh.multi);
            wh_count(sl);
        }
        if (!paused && sl->done > 0 && (sl->in_flight == 0 || sl->done >= WH_BATCH / 2
                                        || now - sl->first_done >= WH_RECORD_GAP || !db)) {
            apr_time_t at = qrt_clock_now();

            if (wh_record(sl, db, wh.multi, rp, 0) != APR_SUCCESS && db) {
                wh_db_failed(&db, now, &reconnect_at);
            }
            wh_remote_done(db, at);
            /* a busy tracker's next run is taken now, not after the claims' gap */
            if (sl->more_due) {
                sl->more_due = 0;
                claim_at = now;
            }
            apr_pool_clear(rp);
            continue;
        }
        if (db && !paused && now >= backlog_at) {
            apr_int64_t backlog = 0;

            if (qrt_store_whsend_backlog(db, rp, &backlog) == APR_SUCCESS) {
                QRT_STAT_SET(webhook_backlog, backlog);
            }
            backlog_at = now + WH_BACKLOG_EVERY;
            apr_pool_clear(rp);
        }
        wait = db && !paused ? next_claim - now : WH_IDLE;
        if (!paused && sl->done > 0 && sl->first_done + WH_RECORD_GAP - now < wait) {
            wait = sl->first_done + WH_RECORD_GAP - now;
        }
        if (wait < 0 || wait > WH_IDLE) {
            wait = wait < 0 ? 0 : WH_IDLE;
        }
        if (sl->in_flight > 0) {
            curl_multi_poll(wh.multi, NULL, 0, (int)(wait / 1000) + 1, NULL);
        }
        else if (wait > 0) {
            wh_wait(wait);
        }
    }
    /* stopping: what is in flight is broken off and given back */
    if (sl->in_flight + sl->done + sl->waiting > 0) {
        wh_record(sl, db, wh.multi, rp, 1);
    }
    wh_disconnect(db);
    if (active) {
        apr_global_mutex_unlock(wh.active);
    }
    return NULL;
}

static apr_status_t wh_stop(void *data)
{
    apr_status_t rv;

    (void)data;
    if (!wh.thread) {
        return APR_SUCCESS;
    }
    qrt_cond_lock(wh.wake);
    __atomic_store_n(&wh.stopping, 1, __ATOMIC_RELAXED);
    qrt_cond_broadcast(wh.wake);
    qrt_cond_unlock(wh.wake);
    curl_multi_wakeup(wh.multi);
    apr_thread_join(&rv, wh.thread);
    wh.thread = NULL;
    curl_multi_cleanup(wh.multi);
    wh.multi = NULL;
    return APR_SUCCESS;
}

apr_status_t qrt_whsend_post_config(server_rec *s)
{
    apr_pool_t *pp = s->process->pool;
    apr_int64_t *owner = NULL;

    apr_pool_userdata_get((void **)&owner, "qrtrack-webhook-owner", pp);
    if (!owner) {
        apr_uint64_t r = 0;

        owner = apr_palloc(pp, sizeof(*owner));
        if (apr_generate_random_bytes((unsigned char *)&r, sizeof(r)) != APR_SUCCESS) {
            r = (apr_uint64_t)apr_time_now() ^ ((apr_uint64_t)getpid() << 32);
        }
        *owner = (apr_int64_t)(r & APR_UINT64_C(0x7fffffffffffffff)) | 1;
        apr_pool_userdata_set(owner, "qrtrack-webhook-owner", apr_pool_cleanup_null, pp);
    }
    wh_owner = *owner;
    return qrt_global_mutex(s, QRT_MUTEX_WEBHOOK, &wh.active);
}

void qrt_whsend_child_init(apr_pool_t *pchild, server_rec *s)
{
    apr_global_mutex_t *active = wh.active;
    apr_pool_t *tp;
    apr_status_t rv;

    memset(&wh, 0, sizeof(wh));
    wh.s = s;
    if (!active || !qrt_config()->dbd_driver || !qrt_config()->webhook_delivery) {
        return;
    }
    rv = apr_global_mutex_child_init(&active, apr_global_mutex_lockfile(active), pchild);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, s, "QRT01035: cannot attach the webhook "
                     "worker's mutex; this child delivers no webhooks");
        return;
    }
    wh.active = active;
    /* before any thread of this child uses libcurl */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK
        || !(wh.multi = curl_multi_init())) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "QRT01036: cannot set libcurl up; this "
                     "child delivers no webhooks");
        return;
    }
    curl_multi_setopt(wh.multi, CURLMOPT_MAX_HOST_CONNECTIONS, 32L);
    curl_multi_setopt(wh.multi, CURLMOPT_MAXCONNECTS, 64L);
    if (qrt_cond_create(&wh.wake, pchild) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "QRT01036: cannot set the webhook "
                     "worker's pause up; this child delivers no webhooks");
        curl_multi_cleanup(wh.multi);
        wh.multi = NULL;
        return;
    }
    apr_pool_create(&tp, pchild);
    apr_pool_tag(tp, "qrtrack-hooks");
    rv = apr_thread_create(&wh.thread, NULL, wh_main, tp, pchild);
    if (rv != APR_SUCCESS) {
        wh.thread = NULL;
        curl_multi_cleanup(wh.multi);
        wh.multi = NULL;
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, s, "QRT01037: cannot start the webhook "
                     "worker thread; this child delivers no webhooks");
        return;
    }
    apr_pool_pre_cleanup_register(pchild, NULL, wh_stop);
}
