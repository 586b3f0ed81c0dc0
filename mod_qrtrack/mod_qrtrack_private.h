/* mod_qrtrack: what the whole httpd glue shares (the module record, the limits and
 * defaults, the per-server configuration, an API request and its error). What a
 * file exports is declared in its own header, mod_qrtrack_<file>.h; the files call
 * one another without a circle (make callgraph):
 *
 * mod_qrtrack.c          module record, start-up and child hooks (calls down only)
 * mod_qrtrack_config.c   directives: the command table, setters, defaults, merging;
 *                        the server-wide settings, read-only after post_config
 * mod_qrtrack_api.c      the qrtrack-api handler: body, auth, rate limit, routes
 * mod_qrtrack_<resource>.c  one file per resource of the API: account, tracker,
 *                        qrcode, style, visits, report, openapi, health
 * mod_qrtrack_dashboard.c  the qrtrack-dashboard handler, the analysts' web page
 * mod_qrtrack_params.c   query parameters shared by several endpoints
 * mod_qrtrack_http.c     error values (the one store-error helper), responses,
 *                        request parts: what every API handler answers with
 * mod_qrtrack_rate.c     per-token counters and the scan budget in shared memory
 * mod_qrtrack_ratemc.c   per-token windows in memcached (QRTrackRateLimitStore)
 * mod_qrtrack_scan.c     the scan and click handlers, the writer thread
 * mod_qrtrack_spool.c    the spool and snapshot used while the database is away
 * mod_qrtrack_queue.c    the visits waiting for their commit, in shared memory
 * mod_qrtrack_wal.c      SQLite WAL checkpoints off the commit path
 * mod_qrtrack_ua.c       the user-agent regexes
 * mod_qrtrack_db.c       DBDriver checked, the schema migrated, mod_dbd's connections
 * mod_qrtrack_status.c   the module's section of mod_status's page
 * mod_qrtrack_redact.c   ?api_token= values kept out of logs and mod_status
 * mod_qrtrack_stats.c    the server's counters (shared memory made by scan)
 * mod_qrtrack_util.c     throttled log lines, global mutexes
 */
#ifndef MOD_QRTRACK_PRIVATE_H
#define MOD_QRTRACK_PRIVATE_H

#include <apr_dbd.h>
#include "httpd.h"
#include "http_config.h"
#include "http_log.h"
#include "http_protocol.h"
#include "mod_dbd.h"
#include <apr_global_mutex.h>
#include <apr_shm.h>
#include <jansson.h>

#include "qrt_store.h"

extern module AP_MODULE_DECLARE_DATA qrtrack_module;

#define QRT_DEFAULT_RATE_LIMIT   120
#define QRT_DEFAULT_MAX_BODY     (1024 * 1024)
#define QRT_DEFAULT_RATE_SLOTS   8192
/* QRTrackRateLimitTimeout: milliseconds a memcached call may take. */
#define QRT_DEFAULT_RATE_MC_TIMEOUT 50
#define QRT_DEFAULT_SCAN_WAIT    10         /* seconds */
#define QRT_DEFAULT_STATEMENT_TIMEOUT 15    /* seconds */
#define QRT_DEFAULT_WEBHOOK_LIMIT 10        /* webhooks an account */
#define QRT_DEFAULT_WEBHOOK_OUTBOX_LIMIT 100000 /* pending events a webhook */
#define QRT_DEFAULT_REPORT_CACHE 128     /* MB of sealed report values a child keeps */
/* Retry-After of a 503 for a database that is away, full or too slow now. */
#define QRT_DB_RETRY_AFTER       5
/* Bounds on what one request may make the server do (README: "Limits"). */
#define QRT_QUERY_FIELDS_MAX     1024       /* parameters of a query string */
#define QRT_FORM_FIELDS_MAX      10000      /* fields of an urlencoded body: above tags' 1000 */
#define QRT_TRACKER_IDS_MAX      1000       /* ids in trackers[] (reports, KPIs) */
#define QRT_PAGE_MAX             100000000  /* page of a listing */
/* SQLite's busy timeout per try (QRT_SQLITE_TRIES tries, 100 ms apart: qrt_store.h). */
#define QRT_SQLITE_BUSY_MS_STR   "500"
#define QRT_RATE_WINDOW          apr_time_from_sec(60)
#define QRT_MUTEX_TYPE           "qrtrack-ratelimit"
#define QRT_MUTEX_WRITER         "qrtrack-writer"
#define QRT_MUTEX_BUDGET         "qrtrack-scanbudget"
#define QRT_MUTEX_GATE           "qrtrack-gate"
#define QRT_MUTEX_WEBHOOK        "qrtrack-webhook"
/* Client addresses QRTrackScanBudget tracks at once (24 bytes of shared memory each). */
#define QRT_SCAN_BUDGET_SLOTS    65536
/* The spool's directory when QRTrackSpoolDir is not set on PostgreSQL. */
#ifndef QRT_STATE_DIR
#define QRT_STATE_DIR "/var/lib/qrtrack"
#endif

/* The longest QRTrackPublicURL: with the scan path and the longest code after it, a URL
 * that a QR code holds at error correction H (1,273 bytes at version 40) and scanners
 * read (qrt_check_config checks the sum with the paths configured). */
#define QRT_PUBLIC_URL_MAX 512
/* Bytes a QR code holds at error correction H, version 40 (byte mode). */
#define QRT_QR_BYTES_MAX_H 1273

/* Per-server configuration; -1 / NULL mean "not set here" for merging. */
typedef struct {
    const char *public_url;     /* base of URLs encoded in QR images (at most
                                 * QRT_PUBLIC_URL_MAX bytes) */
    const char *scan_prefix;    /* the <Location> of qrtrack-scan inside this server's
                                 * own section (learnt from the tree; NULL: none) */
    const char *click_prefix;   /* ... of qrtrack-click */
    int rate_limit;             /* requests per minute per token, 0 = off */
    apr_hash_t *account_limits; /* account name -> int* */
    apr_off_t max_body;         /* request body limit of the API, bytes */
    int anonymize_ip;           /* On by default */
    const char *geoip_path;     /* QRTrackGeoIPDatabase */
    void *geoip;                /* opened MMDB_s*, or NULL */
    apr_array_header_t *cors_origins; /* QRTrackCORSOrigin: "*" or scheme://host[:port];
                                       * empty = none, NULL = not set here */
} qrt_server_conf;

/* An error on its way to the one place that writes error bodies. */
typedef struct {
    int status;
    const char *message;
    json_t *errors;             /* {"field": ["..."]} for 400/422, else NULL */
    const char *allow;          /* Allow header for 405 */
    long retry_after;           /* Retry-After for 429/503, 0 = none */
} qrt_err_t;

/* One API request as the resource handlers see it. */
typedef struct {
    request_rec *r;
    qrt_server_conf *conf;
    qrt_db_t db;                /* this request's connection (ap_dbd_acquire) */
    const char *path;           /* path below the API prefix, e.g. "/tracker/show/7" */
    const char *const *seg;     /* path segments matched by the route's '*'s */
    apr_table_t *query;         /* decoded query string (repeated keys kept) */
    json_t *json;               /* JSON object body, or NULL */
    apr_table_t *form;          /* urlencoded or multipart body fields, or NULL */
    const char *body;           /* the body's bytes as read (NULL when empty) */
    apr_size_t body_len;
    int csv;                    /* a text/csv body (POST /tracker/bulk only) */
    const char *params;         /* the query parameters its route takes (qrt_params_known) */
    qrt_auth_t auth;            /* the caller */
    long rate_limit;            /* the caller's limit per minute (0 = off) */
} qrt_req_t;

typedef qrt_err_t *qrt_handler_fn(qrt_req_t *q);

#endif
