/* qrt_report: the report engine of endpoints 6, 7 and 8 (no httpd).
 *
 * Given an account, the trackers a request covers, a window (inclusive epoch
 * seconds, QRT_AGG_TMIN / QRT_AGG_TMAX for an open bound) and its UTC offset, it
 * plans where each number comes from and answers plain C structs; the glue
 * (mod_qrtrack_report.c) parses the parameters and writes the JSON.
 *
 * Planning: per-tracker figures (the name report, every count, the crosstab, the
 * dashboard's scans and clicks) come from the per-tracker aggregates, exact and fast
 * for any set of trackers. Distinct visitors across trackers come from the
 * account-level aggregates when the report covers every tracker of the account and
 * no aggregated tracker was deleted (for a tag: retagged) since; otherwise they are
 * counted from the covered trackers' visits in the window (by the database for up to
 * QRT_AGG_RAW_IDS trackers, else here), exact but in proportion to those visits.
 *
 * Decisions (beyond CONTRACT section 4): bots never count; tags and types are the
 * trackers' current ones. name, type and tag rows list every covered tracker, type
 * or tag, zeros included; date, browser, city and country rows only groups with
 * visits. An unknown browser, city or country is one group with key "" (sorted after
 * the named ones among equal visit counts). Rows: visits descending, then tracker id
 * (name) or key bytes; date rows by day.
 *
 * destination (schema 25: where each visit was sent) has no aggregates: it is read from
 * the covered trackers' visits in the window (qrt_store_visits_destinations), one pass
 * along each tracker's time order, distinct visitors counted here; exact, its cost in
 * proportion to those visits. Its unknown group "" holds the visits sent nowhere (a
 * 410 page), those recorded before schema 25 and those whose destination was purged.
 *
 * Unit-tested against an oracle in test/unit/test_report.c. */
#ifndef QRT_REPORT_H
#define QRT_REPORT_H

#include <apr_pools.h>
#include <apr_tables.h>
#include <apr_hash.h>

#include "qrt_agg.h"
#include "qrt_store.h"
#include "qrt_store_agg_read.h"
#include "qrt_report_cache.h"

/* Report types, in the order of qrt_report_type_name. */
enum { QRT_REPORT_NAME, QRT_REPORT_TYPE, QRT_REPORT_TAG, QRT_REPORT_DATE,
       QRT_REPORT_BROWSER, QRT_REPORT_CITY, QRT_REPORT_COUNTRY, QRT_REPORT_DESTINATION,
       QRT_REPORT_NTYPES };

/* "name", "type", ... for a type; NULL past the last. */
const char *qrt_report_type_name(int type);
/* The type of a name, or -1. */
int qrt_report_type_parse(const char *name);

/* Crosstab: the most distinct values of one dimension on the covered trackers. */
#define QRT_REPORT_XT_MAX 500
/* Dashboard: the busiest trackers listed. */
#define QRT_REPORT_TOP 10

/* The trackers one request covers, and whether the account-level aggregates hold. */
typedef struct {
    qrt_db_t *db;
    apr_pool_t *p;
    apr_pool_t *wp;                 /* the windows' reads: a child of p, whose userdata
                                     * keeps what one scope's windows share (a partial
                                     * day's visits, the tags: qrt_store_agg_read.c) */
    apr_int64_t account_id;
    apr_array_header_t *live;       /* qrt_report_tracker_t: the account's trackers (a
                                     * short list's own only, when fewer than nlive) */
    apr_int64_t nlive;              /* the account's live trackers */
    apr_array_header_t *list;       /* qrt_report_tracker_t *: the covered ones */
    apr_hash_t *covered;            /* id -> qrt_report_tracker_t * */
    int everything;                 /* every live tracker of the account is covered */
    int agg_ok;                     /* ... and the account-level aggregates are usable */
    int acc_ok;                     /* the account-level aggregates are usable, the scope
                                     * covering every live tracker or not (a long list:
                                     * report_co) */
    apr_hash_t *acc_dirty_tags;     /* ... but for these tags (NULL: none known) */
    qrt_agg_state_t state;
    int raw_trackers;               /* trackers whose visits were read (for the log) */
    int lv_shares;                  /* the most shares of their visitors listed trackers'
                                     * visits were counted in (for the log) */
    int co_others;                  /* the trackers a list left out, when it was counted as
                                     * the account less those (for the log) */
    int dest_alone;                 /* report=destination over listed trackers read the
                                     * visits with a destination alone (tests) */
    apr_int64_t counted;            /* visits counted one by one from the visits or
                                     * their blocks (qrt_report_trim_due) */
    int kept_days;                  /* report=date over a list: the days taken as kept
                                     * (for the log) */
    const char *failed;             /* after an error: what the engine was doing */
} qrt_report_scope_t;

/* The scope of the account's trackers among ids (apr_int64_t; ids of other accounts
 * are the caller's business: they are left out here), or of all of them when ids is
 * NULL (their ids are not read apart then). With a cache (may be NULL), the
 * scope of every tracker is taken from it while the account's trackers version stays,
 * and kept there when read. */
apr_status_t qrt_report_scope(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                              const apr_array_header_t *ids, qrt_report_cache_t *cache,
                              qrt_report_scope_t **out);

/* One row of a report. */
typedef struct {
    apr_int64_t id;                 /* name: tracker id; date: day number */
    const char *key;                /* name: tracker name; date: ""; others: the
                                     * value, "" for none */
    apr_int64_t scans, clicks, uniques;
} qrt_report_row_t;

/* Row r of report type as the JSON object of the API's report (keys in its order,
 * compact, strings escaped as json_dumps does), into out of cap bytes with its NUL.
 * Returns the length it takes (without the NUL): when that is cap or more, out holds
 * nothing usable and a buffer of that length + 1 is needed. */
apr_size_t qrt_report_row_json(char *out, apr_size_t cap, int type, const qrt_report_row_t *r);

/* The rows of report type over [s, e] (days of the date report in offset, seconds
 * east of UTC), sorted. Array of qrt_report_row_t. */
/* For tests: the (visit, group) pairs a report counts from the listed trackers' blocks
 * in one walk at most (0: the default, 2 M; a report by browser, country or city,
 * whose visits are spread as added, QRT_REPORT_LV_RADIX times as many); past it a report
 * is counted in shares of its visitors, past 64 shares a report by tag in halves of its
 * tags, any other from the visits a tracker at a time. */
#define QRT_REPORT_LV_RADIX 3
void qrt_report_lv_max(apr_size_t max);
/* For tests: the visits of a window from which its listed trackers' blocks are counted
 * in two threads, whatever the CPUs (0: the default, 200,000 visits where the machine
 * has two CPUs or more). */
void qrt_report_lv_par(apr_size_t min);
/* For tests: a dashboard's daily series takes the counts by day of the blocks that have
 * them (1, the default) or counts every block's visits (0). */
void qrt_report_lv_runs(int on);
/* For tests: the walks a second thread began on a listed window's blocks while its days not
 * sealed were read, and those let go of unused (the window then passed the bound), since
 * the process started. */
void qrt_report_lv_early_counts(apr_uint64_t *begun, apr_uint64_t *dropped);
/* For tests: a list that leaves out trackers whose visits in the window, and their
 * visitors', are at most 1/ratio of the listed trackers' visits (0: the default, 32; -1:
 * any number) is counted as the account less those; the reports so counted since the
 * process started. */
void qrt_report_co_ratio(apr_int64_t ratio);
apr_uint64_t qrt_report_co_count(void);
/* For tests: the lists told from the aggregates' counters alone (whole days, the
 * account's quarter-hours) that the trackers they leave out hold too many visits, since
 * the process started. */
apr_uint64_t qrt_report_co_bounded_count(void);
/* For tests: the visits with a destination that report=destination over listed trackers
 * reads alone, at most (0: the default, a sixteenth of their visits and 4,096); past it,
 * every visit. */
void qrt_report_dest_lookups(apr_int64_t most);

/* Whether the process should hand back to the system the memory its reports freed,
 * given a request's counted visits (qrt_report_scope_t): counting visits one by one
 * takes and frees arrays of megabytes, and the C library keeps what a thread freed in
 * that thread's heap, at its peak, so a process whose threads each ran such a report
 * would hold each one's peak. Once every QRT_REPORT_TRIM_VISITS visits so counted,
 * summed over the process's requests, it answers 1 (once, for a request of several
 * times as many too); else 0. Thread-safe. */
#define QRT_REPORT_TRIM_VISITS ((apr_int64_t)2000000)
int qrt_report_trim_due(apr_int64_t counted);
/* For tests: the visits between two trims (0: QRT_REPORT_TRIM_VISITS); the sum so far
 * starts again from 0. */
void qrt_report_trim_every(apr_int64_t visits);

apr_status_t qrt_report_rows(qrt_report_scope_t *sc, int type, apr_int64_t s,
                             apr_int64_t e, int offset, apr_array_header_t **out);

/* The tag crosstab: rows and cols are the values (sorted by bytes) of the two
 * dimensions on covered trackers that have both. matrix[r * ncols + c] = visits of
 * the trackers tagged with both row:r and col:c; row_totals, col_totals and total
 * count every visit once. */
typedef struct {
    apr_array_header_t *rows, *cols;    /* const char * */
    apr_int64_t *matrix;
    apr_int64_t *row_totals, *col_totals, total;
    int nrows, ncols;                   /* set even when over the limit */
} qrt_report_crosstab_t;

/* APR_ENOSPC (nothing read, nrows and ncols set) when a dimension has more than
 * QRT_REPORT_XT_MAX values; the matrix takes at most QRT_REPORT_XT_MAX^2 counts. */
apr_status_t qrt_report_crosstab(qrt_report_scope_t *sc, const char *row, const char *col,
                                 apr_int64_t s, apr_int64_t e, qrt_report_crosstab_t *out);

/* Portfolio KPIs over UTC days [d0, d1] and the period of the same length before. */
typedef struct {
    apr_int64_t d0, d1;             /* days, inclusive */
    apr_int64_t scans, clicks, uniques, active;
} qrt_report_period_t;
typedef struct {
    apr_int64_t id;
    const char *name;
    apr_int64_t scans, clicks;
} qrt_report_top_t;
typedef struct {
    qrt_report_period_t cur, prev;  /* prev only with compare */
    apr_int64_t *scans, *clicks;    /* per day of cur, zeros included */
    apr_array_header_t *top;        /* qrt_report_top_t: at most QRT_REPORT_TOP
                                     * trackers with visits, by visits then id */
} qrt_report_dashboard_t;

apr_status_t qrt_report_dashboard(qrt_report_scope_t *sc, apr_int64_t d0, apr_int64_t d1,
                                  int compare, qrt_report_dashboard_t *out);

#endif
