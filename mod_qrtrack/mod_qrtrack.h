/* mod_qrtrack: the httpd glue shared by the module's files.
 *
 * mod_qrtrack.c          module record, start-up and child hooks
 * mod_qrtrack_config.c   directives: the command table, setters, defaults, merging
 * mod_qrtrack_http.c     error values (the one store-error helper), responses,
 *                        request parts: what every API handler answers with
 * mod_qrtrack_util.c     throttled log lines, global mutexes
 * mod_qrtrack_stats.c    the server's counters (shared memory made by scan)
 * mod_qrtrack_api.c      the qrtrack-api handler: body, auth, rate limit, routes
 * mod_qrtrack_rate.c     per-token counters in shared memory
 * mod_qrtrack_ratemc.c   per-token windows in memcached (QRTrackRateLimitStore)
 * mod_qrtrack_scan.c     the scan and click handlers, the writer thread
 * mod_qrtrack_queue.c   the visits waiting for their commit, in shared memory
 * mod_qrtrack_wal.c      SQLite WAL checkpoints off the commit path
 * mod_qrtrack_account.c  GET /account
 * mod_qrtrack_openapi.c  GET /openapi.json, the OpenAPI document (no token)
 * mod_qrtrack_health.c   GET /health, for load balancers (no token)
 * mod_qrtrack_dashboard.c  the qrtrack-dashboard handler, the analysts' web page
 * mod_qrtrack_status.c   the module's section of mod_status's page
 * mod_qrtrack_redact.c   ?api_token= values kept out of logs and mod_status
 * mod_qrtrack_db.c       QRTrackStatementTimeout on mod_dbd's connections; why none
 * mod_qrtrack_<resource>.c  one file per resource of the API
 */
#ifndef MOD_QRTRACK_H
#define MOD_QRTRACK_H

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
#include "qrt_rate.h"
#include "qrt_qr.h"

extern module AP_MODULE_DECLARE_DATA qrtrack_module;

#define QRT_DEFAULT_RATE_LIMIT   120
#define QRT_DEFAULT_MAX_BODY     (1024 * 1024)
#define QRT_DEFAULT_RATE_SLOTS   8192
/* QRTrackRateLimitTimeout: milliseconds a memcached call may take. */
#define QRT_DEFAULT_RATE_MC_TIMEOUT 50
#define QRT_DEFAULT_SCAN_WAIT    10         /* seconds */
#define QRT_DEFAULT_STATEMENT_TIMEOUT 15    /* seconds */
/* Retry-After of a 503 for a database that is away, full or too slow now. */
#define QRT_DB_RETRY_AFTER       5
/* Bounds on what one request may make the server do (README: "Limits"). */
#define QRT_QUERY_FIELDS_MAX     1024       /* parameters of a query string */
#define QRT_FORM_FIELDS_MAX      10000      /* fields of an urlencoded body: above tags' 1000 */
#define QRT_TRACKER_IDS_MAX      1000       /* ids in trackers[] (reports, KPIs) */
#define QRT_PAGE_MAX             100000000  /* page of a listing */
/* SQLite's busy timeout per try: apr_dbd_sqlite3 tries a statement that meets a
 * lock up to 17 times, sleeping 100 ms between tries. */
#define QRT_SQLITE_TRIES         17
#define QRT_SQLITE_BUSY_MS_STR   "500"
/* PostgreSQL: how long a new connection waits for a table's lock to prepare a
 * statement (PREPARE of an INSERT takes the table's lock). */
#define QRT_PREPARE_LOCK_MS_STR  "100"
#define QRT_RATE_WINDOW          apr_time_from_sec(60)
#define QRT_MUTEX_TYPE           "qrtrack-ratelimit"
#define QRT_MUTEX_WRITER         "qrtrack-writer"
#define QRT_MUTEX_BUDGET         "qrtrack-scanbudget"
/* Client addresses QRTrackScanBudget tracks at once (24 bytes of shared memory each). */
#define QRT_SCAN_BUDGET_SLOTS    65536

/* Per-server configuration; -1 / NULL mean "not set here" for merging. */
typedef struct {
    const char *public_url;     /* base of URLs encoded in QR images */
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
    qrt_auth_t auth;            /* the caller */
    long rate_limit;            /* the caller's limit per minute (0 = off) */
} qrt_req_t;

typedef qrt_err_t *qrt_handler_fn(qrt_req_t *q);

#include "mod_qrtrack_config.h"
#include "mod_qrtrack_ua.h"
#include "mod_qrtrack_http.h"
#include "mod_qrtrack_util.h"

/* mod_qrtrack.c: mod_dbd's functions, found at start-up (mod_qrtrack refuses to
 * start without mod_dbd, so they are set wherever a request runs). */
ap_dbd_t *qrt_dbd_acquire(request_rec *r);
ap_dbd_t *qrt_dbd_open(apr_pool_t *p, server_rec *s);
void qrt_dbd_close(server_rec *s, ap_dbd_t *dbd);

/* mod_qrtrack_db.c: DBDriver's dialect, NULL before post_config checked it. */
const qrt_dialect_t *qrt_dbd_dialect(void);
/* How visitor ids are made, read from the database in post_config. */
const qrt_visitor_key_t *qrt_dbd_visitor_key(void);
/* QRTrackStatementTimeout in milliseconds (0 = off). */
int qrt_statement_timeout_ms(void);
/* Puts dbd's statements under QRTrackStatementTimeout: set once a connection, and
 * again on a PostgreSQL connection that libpq re-opened in place. */
void qrt_dbd_limit(ap_dbd_t *dbd, server_rec *s);
/* Logs why mod_dbd gave r no connection (the driver's message and what to do about
 * it), at most every QRT_LOG_EVERY a child. */
void qrt_dbd_refused(request_rec *r);

/* mod_qrtrack.c: per-connection SQLite settings (busy timeout, synchronous);
 * nothing for other drivers. */
void qrt_db_tune(const apr_dbd_driver_t *driver, apr_dbd_t *handle, apr_pool_t *p);

/* mod_qrtrack_scan.c: the scan and click handlers and this child's writer */
int qrt_scan_handler(request_rec *r);
int qrt_scan_map_to_storage(request_rec *r);
void qrt_scan_child_init(apr_pool_t *pchild, server_rec *s);
apr_status_t qrt_scan_post_config(server_rec *s);
/* QRTrackScanWait in seconds (its default when not set). */
int qrt_scan_wait_seconds(void);
/* Every child forgets its cached codes: call after a tracker changes or goes. */
void qrt_scan_invalidate(void);

#include "mod_qrtrack_stats.h"

/* mod_qrtrack_spool.c: while the database cannot be reached, scans are answered from
 * this node's snapshot of codes and their visits kept in its spool, replayed later.
 * The spool's directory when QRTrackSpoolDir is not set on PostgreSQL: */
#ifndef QRT_STATE_DIR
#define QRT_STATE_DIR "/var/lib/qrtrack"
#endif
typedef struct {
    const char *node;               /* the node's id */
    apr_int64_t *seq;               /* the visits' sequence numbers, ascending */
    qrt_visit_t *visits;
    int n;
} qrt_spool_batch_t;
typedef struct {
    int enabled, reachable;
    apr_uint64_t spooled, replayed, spooled_total, snapshot_answers;
} qrt_spool_status_t;
apr_status_t qrt_spool_post_config(apr_pool_t *pconf, apr_pool_t *ptemp, server_rec *s);
void qrt_spool_child_init(apr_pool_t *pchild, server_rec *s);
int qrt_spool_enabled(void);
/* Whether the database is known to be unreachable (every child sees it at once). */
int qrt_db_down(void);
/* Says it cannot be reached (logged once); the keeper then probes it until it
 * answers, and says so. */
void qrt_db_mark_down(server_rec *s, const char *why);
void qrt_db_mark_up(server_rec *s);
/* Whether db's last error means the database cannot be reached (not a lock, not
 * a statement's own failure). */
int qrt_db_unreachable(const qrt_db_t *db);
/* Whether visits wait in the spool: new ones then go behind them. */
int qrt_spool_pending(void);
void qrt_spool_status(qrt_spool_status_t *st);
/* A code from the snapshot: APR_NOTFOUND when it is not there. */
apr_status_t qrt_snapshot_lookup(request_rec *r, const char *code, apr_int64_t *id,
                                 const char **url);
/* The writer: n visits into the spool, durably (APR_ENOSPC past QRTrackSpoolLimit,
 * APR_ENOTIMPL without a spool). */
apr_status_t qrt_spool_put(server_rec *s, const qrt_visit_t *v, int n);
/* The oldest spooled visits, at most max (b->n = 0: none). */
apr_status_t qrt_spool_next(apr_pool_t *p, server_rec *s, int max, qrt_spool_batch_t *b);
/* b is in the database now (recorded of them were new to it): out of the spool. */
void qrt_spool_replayed(server_rec *s, const qrt_spool_batch_t *b, int recorded);

/* mod_qrtrack_redact.c: ?api_token= values out of the request line, logs and
 * mod_status. */
void qrt_redact_register(void);

/* mod_qrtrack_status.c: the module's section of mod_status's page */
void qrt_status_register(void);

/* mod_qrtrack_queue.c: visits waiting for their commit, shared by all children;
 * the queue itself and its functions are the core's (qrt_queue.h). */
#include "qrt_queue.h"
/* In post_config: nslots visits may wait at once; kept across graceful restarts. */
apr_status_t qrt_queue_create(server_rec *s, apr_uint32_t nslots, qrt_queue_t **q);
/* mod_qrtrack_scan.c: the server's queue, or NULL */
qrt_queue_t *qrt_scan_queue(void);

/* mod_qrtrack_wal.c: this child's WAL checkpoint thread (SQLite only), started
 * before the writer; writers is the mutex the scan writers commit under. */
void qrt_wal_child_init(apr_pool_t *pchild, server_rec *s, apr_global_mutex_t *writers);
/* 1 when the thread runs: connections then leave checkpoints to it. */
int qrt_wal_running(void);

/* mod_qrtrack_api.c: the qrtrack-api handler */
int qrt_api_handler(request_rec *r);
/* The first <Location> of qrtrack-api, e.g. "/api" (the default when there is none). */
const char *qrt_api_prefix(void);

/* mod_qrtrack_openapi.c: GET <api>/openapi.json, before any token is asked for */
qrt_err_t *qrt_openapi_show(qrt_req_t *q);
/* mod_qrtrack_health.c: GET <api>/health (no token): 200 or 503 */
qrt_err_t *qrt_health_show(qrt_req_t *q);

/* mod_qrtrack_dashboard.c: the qrtrack-dashboard handler, the analysts' web page */
int qrt_dashboard_handler(request_rec *r);

/* mod_qrtrack_rate.c */
apr_status_t qrt_rate_post_config(apr_pool_t *pconf, apr_pool_t *plog, server_rec *s);
void qrt_rate_child_init(apr_pool_t *p, server_rec *s);
/* In post_config: QRTrackScanBudget's table and mutex (kept across graceful
 * restarts). */
apr_status_t qrt_budget_post_config(server_rec *s);
/* A scan or click counted against its client address's QRTrackScanBudget: OK, or
 * HTTP_TOO_MANY_REQUESTS with Retry-After set (the scan is then not recorded). */
int qrt_budget_check(request_rec *r);
/* Counts the request; sets the X-RateLimit headers; an error for 429/503. */
qrt_err_t *qrt_rate_check(qrt_req_t *q);
/* 1 and *n the tokens' slots in use now, or 0 before post_config made the table. */
int qrt_rate_slots_in_use(apr_time_t now, apr_uint32_t *n);

/* mod_qrtrack_ratemc.c: QRTrackRateLimitStore memcache */
/* In post_config: the gate all children share (nothing for the shm store). */
apr_status_t qrt_ratemc_post_config(apr_pool_t *pconf, server_rec *s);
void qrt_ratemc_child_init(apr_pool_t *pchild, server_rec *s);
/* With the memcache store: 1, *up 1 while every server answers (0 while one is
 * bypassed) and *fallbacks the requests counted in shared memory instead. Else 0. */
int qrt_ratemc_status(int *up, apr_uint64_t *fallbacks);
/* 1 when this child counts in memcached. */
int qrt_ratemc_enabled(void);
/* Counts the request in the token's window in memcached: APR_SUCCESS with *res and
 * *verdict (OK or LIMITED), or an error (logged, at most every 30 s server-wide) when
 * memcached cannot be reached, did not answer within QRTrackRateLimitTimeout, is
 * bypassed meanwhile, or has the most calls in flight: the caller then counts in
 * shared memory. */
apr_status_t qrt_ratemc_hit(request_rec *r, apr_int64_t token_id, long limit,
                            qrt_rate_result_t *res, qrt_rate_verdict_t *verdict);

/* mod_qrtrack_params.c: query parameters shared by several endpoints */
typedef struct {
    int has_start, has_end;
    apr_int64_t start, end;     /* epoch seconds, both inclusive */
    int offset;                 /* seconds east of UTC of visit_start (else of
                                 * visit_start_end, else 0): days of date rows */
} qrt_window_t;
/* visit_start / visit_start_end in every accepted form; 422 naming the parameter
 * (also when the start is after the end). */
qrt_err_t *qrt_params_window(qrt_req_t *q, qrt_window_t *w);
/* Every value of a list parameter: name=1&name=2, name[]=1, name=1,2. */
apr_array_header_t *qrt_query_list(qrt_req_t *q, const char *name);
/* Tracker ids of a list parameter (name and name[]): 422 for a non-integer, 403 when
 * any is not the caller's live tracker; none given -> every tracker of the account.
 * *ids is an array of apr_int64_t. */
qrt_err_t *qrt_params_trackers(qrt_req_t *q, const char *name, apr_array_header_t **ids);
/* page and rows (rows 1..1000, default 25): 422 naming the parameter. */
qrt_err_t *qrt_params_paging(qrt_req_t *q, apr_int64_t *page, apr_int64_t *rows);
/* The paging "meta" object of a list. */
json_t *qrt_paging_meta(apr_int64_t page, apr_int64_t rows, apr_int64_t total);

/* mod_qrtrack_tracker.c */
/* The caller's live tracker whose id is the path segment seg: 404 for a
 * non-numeric, unknown or deleted id, 403 for another account's. */
qrt_err_t *qrt_tracker_load(qrt_req_t *q, const char *seg, qrt_tracker_t *t);
/* The public JSON of a tracker. */
json_t *qrt_tracker_json(qrt_req_t *q, const qrt_tracker_t *t);

/* QR image options size, margin, ecc (NULL = default); errors with status. */
qrt_err_t *qrt_qr_opts_parse(qrt_req_t *q, int status, const char *size,
                             const char *margin, const char *ecc, qrt_qr_opts_t *o);
/* Writes a PNG of text as the response (Content-Length set). */
qrt_err_t *qrt_respond_png(qrt_req_t *q, const char *text, const qrt_qr_opts_t *o,
                           int status_on_error);

/* Resource handlers: the route table in mod_qrtrack_api.c maps paths to these. */
qrt_err_t *qrt_account_show(qrt_req_t *q);          /* mod_qrtrack_account.c */
qrt_err_t *qrt_tracker_qrcode(qrt_req_t *q);        /* mod_qrtrack_tracker.c */
qrt_err_t *qrt_tracker_list(qrt_req_t *q);
qrt_err_t *qrt_tracker_create(qrt_req_t *q);
qrt_err_t *qrt_tracker_show(qrt_req_t *q);
qrt_err_t *qrt_tracker_update(qrt_req_t *q);
qrt_err_t *qrt_tracker_delete(qrt_req_t *q);
qrt_err_t *qrt_tracker_image(qrt_req_t *q);
qrt_err_t *qrt_qrcode_plain(qrt_req_t *q);          /* mod_qrtrack_qrcode.c */
qrt_err_t *qrt_tracker_analytics(qrt_req_t *q);     /* mod_qrtrack_visits.c */
qrt_err_t *qrt_visits_list(qrt_req_t *q);
qrt_err_t *qrt_visits_csv(qrt_req_t *q);
/* mod_qrtrack_report.c: the child's kept report scopes (qrt_report_cache.h). */
void qrt_report_child_init(apr_pool_t *pchild, server_rec *s);
qrt_err_t *qrt_report_show(qrt_req_t *q);           /* mod_qrtrack_report.c */
qrt_err_t *qrt_report_crosstab_show(qrt_req_t *q);
qrt_err_t *qrt_dashboard_scans(qrt_req_t *q);

#endif
