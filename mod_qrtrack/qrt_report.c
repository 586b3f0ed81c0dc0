/* qrt_report: the report engine (see qrt_report.h). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <apr_strings.h>
#include <apr_thread_proc.h>

#include "qrt_aggcache.h"
#include "qrt_date.h"
#include "qrt_json.h"
#include "qrt_kept.h"
#include "qrt_report.h"
#include "qrt_spare.h"
#include "qrt_store_agg_blob.h"
#include "qrt_store_visits_read.h"
#include "qrt_vgroups.h"

static const char *const report_types[] = {
    "name", "type", "tag", "date", "browser", "city", "country", "destination", NULL
};

const char *qrt_report_type_name(int type)
{
    return type >= 0 && type < QRT_REPORT_NTYPES ? report_types[type] : NULL;
}

int qrt_report_type_parse(const char *name)
{
    int type;

    for (type = 0; name && report_types[type]; type++) {
        if (!strcmp(name, report_types[type])) {
            return type;
        }
    }
    return -1;
}

/* Records what failed for the caller's log. */
static apr_status_t report_fail(qrt_report_scope_t *sc, apr_status_t rv, const char *what)
{
    sc->failed = what;
    return rv;
}

/* ---- the scope --------------------------------------------------------------- */

/* The report aggregates' tags of the account's trackers, read by a report by tag when
 * the cache had none at this version: kept with the scope when the report's windows go
 * (after its answer), for the reports after it. */
typedef struct {
    qrt_report_cache_t *cache;
    apr_int64_t account, version;
    apr_pool_t *wp;
} report_tags_keep;

static apr_status_t report_tags_kept(void *data)
{
    report_tags_keep *k = data;

    qrt_report_cache_put_agg_tags(k->cache, k->account, k->version,
                                  qrt_store_agg_read_tags_got(k->wp, k->account));
    return APR_SUCCESS;
}

apr_status_t qrt_report_scope(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                              const apr_array_header_t *ids, qrt_report_cache_t *cache,
                              qrt_report_scope_t **out)
{
    qrt_report_scope_t *sc = apr_pcalloc(p, sizeof(*sc));
    apr_hash_t *byid = apr_hash_make(p);
    apr_int64_t version = 0;
    apr_status_t rv;
    int i, kept = 0;

    *out = sc;
    sc->db = db;
    sc->p = p;
    apr_pool_create(&sc->wp, p);
    qrt_store_agg_read_share(sc->wp);
    sc->account_id = account_id;
    if (cache) {
        /* The version before anything is read: a change made meanwhile raises it, and
         * what is read is kept under the older one, which no later request asks for. */
        if ((rv = qrt_store_trackers_version(db, p, account_id, &version)) != APR_SUCCESS) {
            return report_fail(sc, rv, "reading the trackers' version");
        }
        kept = qrt_report_cache_get(cache, account_id, version, p, &sc->live, &sc->state);
        {
            apr_hash_t *tags = qrt_report_cache_agg_tags(cache, account_id, version, p);
            report_tags_keep *k;

            if (tags) {
                qrt_store_agg_read_tags_use(sc->wp, account_id, tags);
            }
            else {
                k = apr_palloc(p, sizeof(*k));
                k->cache = cache;
                k->account = account_id;
                k->version = version;
                k->wp = sc->wp;
                apr_pool_cleanup_register(sc->wp, k, report_tags_kept,
                                          apr_pool_cleanup_null);
            }
        }
    }
    if (!kept && ids && ids->nelts <= QRT_AGG_RAW_IDS) {
        /* Fewer listed than the account has: only those are read. */
        apr_int64_t count = 0;

        if ((rv = qrt_store_agg_read_count(db, p, account_id, &count)) != APR_SUCCESS) {
            return report_fail(sc, rv, "counting trackers");
        }
        if (ids->nelts < count) {
            rv = qrt_store_agg_read_trackers_in(db, p, account_id,
                                                (const apr_int64_t *)ids->elts, ids->nelts,
                                                &sc->live);
            if (rv != APR_SUCCESS) {
                return report_fail(sc, rv, "listing trackers");
            }
            sc->nlive = count;
        }
    }
    if (!sc->live
        && (rv = qrt_store_agg_read_trackers(db, p, account_id, &sc->live)) != APR_SUCCESS) {
        return report_fail(sc, rv, "listing trackers");
    }
    sc->list = apr_array_make(p, (ids ? ids->nelts : sc->live->nelts) + 1,
                              sizeof(qrt_report_tracker_t *));
    sc->covered = apr_hash_make(p);
    for (i = 0; i < sc->live->nelts; i++) {
        qrt_report_tracker_t *t = &APR_ARRAY_IDX(sc->live, i, qrt_report_tracker_t);

        if (ids) {
            apr_hash_set(byid, &t->id, sizeof(t->id), t);
        }
        else if (!apr_hash_get(sc->covered, &t->id, sizeof(t->id))) {
            /* all of them: the live trackers themselves */
            apr_hash_set(sc->covered, &t->id, sizeof(t->id), t);
            APR_ARRAY_PUSH(sc->list, qrt_report_tracker_t *) = t;
        }
    }
    for (i = 0; ids && i < ids->nelts; i++) {
        apr_int64_t id = APR_ARRAY_IDX(ids, i, apr_int64_t);
        qrt_report_tracker_t *t = apr_hash_get(byid, &id, sizeof(id));

        if (t && !apr_hash_get(sc->covered, &t->id, sizeof(t->id))) {
            apr_hash_set(sc->covered, &t->id, sizeof(t->id), t);
            APR_ARRAY_PUSH(sc->list, qrt_report_tracker_t *) = t;
        }
    }
    if (!sc->nlive) {
        sc->nlive = sc->live->nelts;
    }
    sc->everything = sc->list->nelts == sc->nlive;
    if (kept) {
        sc->agg_ok = sc->everything && !sc->state.deleted;
        sc->acc_ok = !sc->state.deleted;
        sc->acc_dirty_tags = sc->state.dirty_tags;
        return APR_SUCCESS;
    }
    if (!sc->everything) {
        /* The account-level aggregates are not read for the list itself: nothing to check
         * for it. A long list read every live tracker: the aggregates' state says whether
         * the list may be counted as the account less the trackers it leaves out
         * (report_co), and is kept for the next with them, as the account's own reports
         * keep them. */
        sc->state.dirty_tags = apr_hash_make(p);
        if (sc->live->nelts == sc->nlive) {
            qrt_agg_state_t state;

            if (qrt_store_agg_read_state(db, p, account_id, &state) == APR_SUCCESS) {
                sc->acc_ok = !state.deleted;
                sc->acc_dirty_tags = state.dirty_tags;
                if (cache) {
                    qrt_report_cache_put(cache, account_id, version, sc->live, &state);
                }
            }
        }
        return APR_SUCCESS;
    }
    if ((rv = qrt_store_agg_read_state(db, p, account_id, &sc->state)) != APR_SUCCESS) {
        return report_fail(sc, rv, "checking the report aggregates");
    }
    sc->agg_ok = sc->acc_ok = !sc->state.deleted;
    sc->acc_dirty_tags = sc->state.dirty_tags;
    if (cache && sc->live->nelts == sc->nlive) {
        /* Every live tracker was read (not a short list's own): kept for the next. */
        qrt_report_cache_put(cache, account_id, version, sc->live, &sc->state);
    }
    return APR_SUCCESS;
}

/* The covered tracker ids when they are not all of the account's, else NULL. */
static const apr_int64_t *report_only(qrt_report_scope_t *sc)
{
    apr_int64_t *ids;
    int i;

    if (sc->everything) {
        return NULL;
    }
    ids = apr_palloc(sc->p, (sc->list->nelts + 1) * sizeof(*ids));
    for (i = 0; i < sc->list->nelts; i++) {
        ids[i] = APR_ARRAY_IDX(sc->list, i, qrt_report_tracker_t *)->id;
    }
    return ids;
}

/* T-kind totals of the covered trackers: tracker id -> qrt_agg_row_t*. */
static apr_status_t report_per_tracker(qrt_report_scope_t *sc, apr_int64_t s,
                                       apr_int64_t e, int uniques, apr_hash_t **out)
{
    apr_array_header_t *rows;
    apr_status_t rv;
    int i;

    *out = apr_hash_make(sc->p);
    rv = qrt_store_agg_read_window(sc->db, sc->wp, sc->account_id, QRT_AGG_T, report_only(sc),
                              sc->list->nelts, s, e, uniques, &rows);
    if (rv != APR_SUCCESS) {
        return report_fail(sc, rv, "summing tracker aggregates");
    }
    for (i = 0; i < rows->nelts; i++) {
        qrt_agg_row_t *r = &APR_ARRAY_IDX(rows, i, qrt_agg_row_t);

        if (apr_hash_get(sc->covered, &r->grp, sizeof(r->grp))) {
            apr_hash_set(*out, &r->grp, sizeof(r->grp), r);
        }
    }
    return APR_SUCCESS;
}

/* ---- reading the visits themselves (subsets, stale aggregates) ------------ */

typedef struct {
    qrt_agg_groups_t *g;
    int type;                       /* QRT_REPORT_*, -1: one group "" */
    int offset;
    apr_hash_t *tags;               /* tag report: the tags to count */
    const qrt_report_tracker_t *t;
    apr_int64_t n;                  /* the visits read */
    char buf[32];
} report_raw;

static void report_raw_visit(void *ctx, apr_int64_t tracker_id, apr_int64_t t, int click,
                             const char *visitor, const char *browser,
                             const char *country, const char *city)
{
    report_raw *c = ctx;
    int i;

    (void)tracker_id;
    c->n++;
    switch (c->type) {
    case QRT_REPORT_TYPE:
        qrt_agg_groups_add(c->g, c->t->type, click, visitor);
        break;
    case QRT_REPORT_TAG:
        for (i = 0; i < c->t->tags->nelts; i++) {
            const char *tag = APR_ARRAY_IDX(c->t->tags, i, qrt_report_tag_t).tag;

            if (!c->tags || apr_hash_get(c->tags, tag, APR_HASH_KEY_STRING)) {
                qrt_agg_groups_add(c->g, tag, click, visitor);
            }
        }
        break;
    case QRT_REPORT_DATE:
        apr_snprintf(c->buf, sizeof(c->buf), "%" APR_INT64_T_FMT,
                     qrt_date_day_of(t, c->offset));
        qrt_agg_groups_add(c->g, c->buf, click, visitor);
        break;
    case QRT_REPORT_BROWSER:
        qrt_agg_groups_add(c->g, browser, click, visitor);
        break;
    case QRT_REPORT_CITY:
        qrt_agg_groups_add(c->g, city, click, visitor);
        break;
    case QRT_REPORT_COUNTRY:
        qrt_agg_groups_add(c->g, country, click, visitor);
        break;
    default:
        qrt_agg_groups_add(c->g, "", click, visitor);
        break;
    }
}

/* ---- listed trackers' visits from their blocks (qrt_vcols) ------------------------ */

#define REPORT_LV_MAX ((apr_size_t)1 << 21)    /* (visit, group) pairs: 32 MB, twice */
/* A count whose every visit is of one group (by browser, country or city) spreads its
 * visits as they are added (qrt_vgroups_radix): 8 bytes a visit, so QRT_REPORT_LV_RADIX
 * times as many in one walk (6 M, 48 MB), where the bound above would walk them in four
 * shares. */

static apr_size_t report_lv_max = REPORT_LV_MAX;

void qrt_report_lv_max(apr_size_t max)
{
    report_lv_max = max ? max : REPORT_LV_MAX;
}

/* The bound of a count in one walk that spreads its visits as added. */
#define REPORT_LV_RADIX_MAX (QRT_REPORT_LV_RADIX * report_lv_max)

typedef struct {
    qrt_vgroups_t *g;
    int type, offset;
    apr_hash_t *tags;               /* tag report: the tags to count */
    apr_hash_t *trackers;           /* id -> qrt_report_tracker_t* */
    apr_hash_t *sets;               /* tag report: tracker id -> the set of its tags */
    apr_int64_t s, e;
    apr_array_header_t *fixed;      /* apr_uint32_t: the groups of a block's every visit */
    apr_uint32_t *map;              /* a block's entry -> group (0: not yet) */
    apr_size_t mapcap;
    apr_uint32_t *bynum;            /* a string's number (qrt_strid.h) -> its group */
    apr_size_t numcap;
    apr_int64_t last_day;
    apr_uint32_t last_group;
    apr_uint32_t *daygrp;           /* by date: day - day0 -> its group (0: not yet) */
    apr_int64_t day0, ndays;
    int over;                       /* the groups passed their bound: visits only seen */
    int radix;                      /* its visits may be spread as added (by browser ...) */
    int radix_on;                   /* ... and a count in one share spreads them */
    apr_size_t seen;                /* the visits in [s, e] of the blocks walked */
    apr_pool_t *p;
} report_lv;

static apr_uint32_t report_lv_group(report_lv *c, const char *key)
{
    return qrt_vgroups_group(c->g, key, strlen(key));
}

/* The group of entry e of a block's column col: by its string's number, else by its
 * text; 0 without memory (or for a number the process did not give). */
static apr_uint32_t report_lv_ent(report_lv *c, const qrt_vcols_t *v, int col, apr_uint32_t e)
{
    qrt_strid_t *ids = qrt_store_agg_blob_strid();
    const char *text;
    apr_uint32_t id, grp;

    if (!qrt_vcols_entry_ok(v, col, e)) {
        return 0;                   /* (a damaged block: the report counts another way) */
    }
    text = qrt_vcols_text(v, col, e);
    id = qrt_vcols_num(v, col, e);
    if (text) {
        return report_lv_group(c, text);
    }
    if (id < c->numcap && c->bynum[id]) {
        return c->bynum[id];
    }
    if (!ids || !(text = qrt_strid_str(ids, id, c->p))
        || !(grp = report_lv_group(c, text))) {
        return 0;
    }
    if (id >= c->numcap) {
        /* (numbers are given from 1 up: the table grows to twice the largest seen) */
        apr_size_t n = (apr_size_t)id * 2 + 64;
        apr_uint32_t *more = apr_pcalloc(c->p, n * sizeof(*more));

        if (c->numcap) {
            memcpy(more, c->bynum, c->numcap * sizeof(*more));
        }
        c->bynum = more;
        c->numcap = n;
    }
    c->bynum[id] = grp;
    return grp;
}

/* Narrows [*lo, *hi] to the UTC seconds of local day `day` (offset seconds east of
 * UTC), where they can be told without overflow (else to no more than the one second
 * asked, as the day is then asked again at each visit). */
static void report_lv_day(apr_int64_t day, int offset, apr_int64_t *lo, apr_int64_t *hi)
{
    const apr_int64_t far = (apr_int64_t)1 << 40;   /* days: far from overflow */

    if (day > -far && day < far) {
        apr_int64_t a = day * 86400 - offset, b = a + 86399;

        if (a > *lo) {
            *lo = a;
        }
        if (b < *hi) {
            *hi = b;
        }
    }
    else {
        *lo = *hi = APR_INT64_MIN;
    }
}

/* One block: its visits in [s, e] counted into their groups, and into c->seen. Once the
 * groups pass their bound (c->over) the walk goes on only counting the visits in c->seen,
 * for the shares to know how many there are. APR_EAGAIN without memory for a group. */
static apr_status_t report_lv_block(void *ctx, apr_int64_t tracker_id, const qrt_vcols_t *v)
{
    report_lv *c = ctx;
    const qrt_report_tracker_t *t = apr_hash_get(c->trackers, &tracker_id, sizeof(tracker_id));
    const apr_uint32_t *fixed;
    apr_size_t k;
    int i, nfixed, col = -1, inside, texts;

    if (!t) {
        return APR_SUCCESS;
    }
    c->fixed->nelts = 0;
    switch (c->type) {
    case QRT_REPORT_TYPE:
        APR_ARRAY_PUSH(c->fixed, apr_uint32_t) = report_lv_group(c, t->type);
        break;
    case QRT_REPORT_TAG: {
        /* the set of the tracker's tags: a visit is added once, not once a tag */
        apr_uint32_t *set = apr_hash_get(c->sets, &t->id, sizeof(t->id));

        if (!set) {
            apr_array_header_t *tags = apr_array_make(c->p, 4, sizeof(apr_uint32_t));

            for (i = 0; i < t->tags->nelts; i++) {
                const char *tag = APR_ARRAY_IDX(t->tags, i, qrt_report_tag_t).tag;

                if (!c->tags || apr_hash_get(c->tags, tag, APR_HASH_KEY_STRING)) {
                    if (!(APR_ARRAY_PUSH(tags, apr_uint32_t) = report_lv_group(c, tag))) {
                        return APR_EAGAIN;
                    }
                }
            }
            set = apr_palloc(c->p, sizeof(*set));
            *set = 0;
            if (tags->nelts && !(*set = qrt_vgroups_set(c->g, (apr_uint32_t *)(void *)tags->elts,
                                                        (apr_size_t)tags->nelts))) {
                return APR_EAGAIN;
            }
            apr_hash_set(c->sets, &t->id, sizeof(t->id), set);
        }
        if (!*set) {
            return APR_SUCCESS;
        }
        APR_ARRAY_PUSH(c->fixed, apr_uint32_t) = *set;
        break;
    }
    case QRT_REPORT_DATE:
        break;
    case QRT_REPORT_BROWSER:
        col = QRT_VCOLS_BROWSER;
        break;
    case QRT_REPORT_CITY:
        col = QRT_VCOLS_CITY;
        break;
    case QRT_REPORT_COUNTRY:
        col = QRT_VCOLS_COUNTRY;
        break;
    default:
        APR_ARRAY_PUSH(c->fixed, apr_uint32_t) = report_lv_group(c, "");
        break;
    }
    if (col >= 0 && !v->nent[col] && v->n) {
        return APR_EINVAL;          /* (a block of no strings: never handed to these) */
    }
    fixed = (const apr_uint32_t *)(void *)c->fixed->elts;
    nfixed = c->fixed->nelts;
    for (i = 0; i < nfixed; i++) {
        if (!fixed[i]) {
            return APR_EAGAIN;
        }
    }
    inside = v->tmin >= c->s && v->tmax <= c->e;
    if (c->over) {
        for (k = 0; k < v->n && !inside; k++) {
            apr_int64_t when = qrt_vcols_time(v, k);

            c->seen += when >= c->s && when <= c->e;
        }
        c->seen += inside ? v->n : 0;
        return APR_SUCCESS;
    }
    texts = v->strbytes > 0;
    if (col >= 0 && texts) {
        if (c->mapcap < v->nent[col]) {
            c->mapcap = (apr_size_t)v->nent[col] * 2;
            c->map = apr_palloc(c->p, c->mapcap * sizeof(*c->map));
        }
        memset(c->map, 0, v->nent[col] * sizeof(*c->map));
    }
    /* Runs of the visits in [s, e] (of one local day, by date), each counted at once. */
    for (k = 0; k < v->n;) {
        apr_int64_t when = qrt_vcols_time(v, k), lo = c->s, hi = c->e;
        apr_size_t j;

        if (when < c->s || when > c->e) {
            k++;
            continue;
        }
        if (c->type == QRT_REPORT_DATE) {
            apr_int64_t day = qrt_date_day_of(when, c->offset);

            if (!c->last_group || day != c->last_day) {
                /* (a day's group kept by the day: blocks of each tracker go over the
                 * same days again) */
                apr_uint32_t *kept = c->daygrp && day >= c->day0 && day - c->day0 < c->ndays
                                     ? &c->daygrp[day - c->day0] : NULL;

                if (kept && *kept) {
                    c->last_group = *kept;
                }
                else {
                    char buf[32];

                    apr_snprintf(buf, sizeof(buf), "%" APR_INT64_T_FMT, day);
                    if (!(c->last_group = report_lv_group(c, buf))) {
                        return APR_EAGAIN;
                    }
                    if (kept) {
                        *kept = c->last_group;
                    }
                }
                c->last_day = day;
            }
            report_lv_day(day, c->offset, &lo, &hi);
        }
        /* (a block inside the window is one run, but by date) */
        for (j = inside && c->type != QRT_REPORT_DATE ? v->n : k + 1;
             j < v->n && qrt_vcols_time(v, j) >= lo && qrt_vcols_time(v, j) <= hi; j++) {
        }
        c->seen += j - k;
        if (col >= 0) {
            apr_uint32_t grp[256], at[256];
            apr_int64_t who[256];
            unsigned char clk[256];
            apr_size_t m, q, r;

            /* 256 visits at a time: those the count takes (a share's visitors, when it
             * counts in shares) picked first, and only they mapped to their groups */
            for (q = k; q < j; q += m) {
                apr_size_t picked;

                m = j - q < 256 ? j - q : 256;
                picked = qrt_vgroups_pick(c->g, v->visitor + q, m, at);
                for (r = 0; r < picked; r++) {
                    apr_size_t at_q = q + at[r];
                    apr_uint32_t x = qrt_vcols_idx(v, col, at_q), num;

                    if (x >= v->nent[col]) {
                        return APR_EINVAL;
                    }
                    /* a string's number to its group, in a table of the count's; a block
                     * that holds texts maps its entries (read once a block) */
                    num = v->ent[col][x];
                    if (texts) {
                        if (!(grp[r] = c->map[x])
                            && !(grp[r] = c->map[x] = report_lv_ent(c, v, col, x))) {
                            return APR_EAGAIN;
                        }
                    }
                    else if (!(num < c->numcap && (grp[r] = c->bynum[num]))
                             && !(grp[r] = report_lv_ent(c, v, col, x))) {
                        return APR_EAGAIN;
                    }
                    if (picked < m) {
                        who[r] = v->visitor[at_q];
                        clk[r] = v->click[at_q];
                    }
                }
                if (qrt_vgroups_add_picked(c->g, grp, picked < m ? who : v->visitor + q,
                                           picked < m ? clk : v->click + q, picked) < 0) {
                    c->over = 1;
                    return APR_SUCCESS;
                }
            }
        }
        /* (the run read where it is: the blocks are held until the count) */
        else if (c->type == QRT_REPORT_DATE) {
            if (qrt_vgroups_add_ref(c->g, c->last_group, v->visitor + k, v->click + k,
                                    j - k) < 0) {
                c->over = 1;
                return APR_SUCCESS;
            }
        }
        else {
            for (i = 0; i < nfixed; i++) {
                if (qrt_vgroups_add_ref(c->g, fixed[i], v->visitor + k, v->click + k,
                                        j - k) < 0) {
                    c->over = 1;
                    return APR_SUCCESS;
                }
            }
        }
        k = j;
    }
    return APR_SUCCESS;
}

/* The listed trackers' blocks of a report, read once and held for its counts. */
#define REPORT_LV_BLKS 65536
typedef struct {
    apr_int64_t tracker;
    qrt_vcols_t v;
} report_lv_blk;

typedef struct report_lv_early report_lv_early;

typedef struct {
    apr_array_header_t *blks;       /* report_lv_blk */
    apr_int64_t s, e;
    apr_size_t seen;                /* their visits in [s, e] */
    apr_size_t thin;                /* ... of blocks of under REPORT_LV_THICK visits a day */
    report_lv_early *early;         /* the walk begun while the days not sealed are read */
} report_lv_set;

/* A block of this many visits a day on average or more (a little over the shortest run
 * that qrt_vgroups holds by reference, 16) is likely read by date in runs of a day held
 * where they are, not copied (report_lv_groups). */
#define REPORT_LV_THICK 20

static apr_status_t report_lv_keep(void *ctx, apr_int64_t tracker_id, const qrt_vcols_t *v)
{
    report_lv_set *set = ctx;
    report_lv_blk *b = apr_array_push(set->blks);
    apr_size_t k, was = set->seen;

    b->tracker = tracker_id;
    b->v = *v;
    if (v->tmin >= set->s && v->tmax <= set->e) {
        set->seen += v->n;
    }
    else if (v->tmin <= set->e && v->tmax >= set->s) {
        for (k = 0; k < v->n; k++) {
            apr_int64_t when = qrt_vcols_time(v, k);

            set->seen += when >= set->s && when <= set->e;
        }
    }
    if (v->n && (apr_int64_t)v->n < REPORT_LV_THICK * ((v->tmax - v->tmin) / 86400 + 1)) {
        set->thin += set->seen - was;
    }
    return APR_SUCCESS;
}

/* Listed reports of this many visits in their window or more are walked and counted in
 * two threads where the machine has two CPUs or more (report_lv_groups). */
#define REPORT_LV_PAR_MIN ((apr_size_t)200000)

static apr_size_t report_lv_par_min = REPORT_LV_PAR_MIN;
static int report_lv_par_set;       /* (tests: two threads whatever the CPUs) */

void qrt_report_lv_par(apr_size_t min)
{
    report_lv_par_min = min ? min : REPORT_LV_PAR_MIN;
    report_lv_par_set = min != 0;
}

/* A count of c's kind over seen visits spreads them as added: past the bound of a count
 * that copies them into its groups, up to REPORT_LV_RADIX_MAX. (Below it the groups' own
 * chunks count them as fast: a visit written to one of a thousand parts as it comes
 * costs about what the later spread of a group's chunks does.) */
static int report_lv_radix(const report_lv *c, apr_size_t seen)
{
    return c->radix && seen > report_lv_max && seen <= REPORT_LV_RADIX_MAX;
}

/* A walk's state set up for a count of share k of n (all visitors when n is 1) in a pool
 * of its own, a child of p (p used by no other thread): 0, or -1 without memory. */
static int report_lv_begin(report_lv *c, apr_pool_t *p, apr_uint32_t k, apr_uint32_t n)
{
    /* a count's groups are numbered afresh: what maps to them goes with them */
    if (apr_pool_create(&c->p, p) != APR_SUCCESS) {
        c->p = NULL;
        c->g = NULL;
        return -1;
    }
    c->sets = apr_hash_make(c->p);
    c->fixed = apr_array_make(c->p, 8, sizeof(apr_uint32_t));
    c->map = c->bynum = NULL;
    c->mapcap = c->numcap = 0;
    c->last_group = 0;
    c->last_day = 0;
    c->over = 0;
    c->seen = 0;
    c->daygrp = NULL;
    if (c->type == QRT_REPORT_DATE && c->s > QRT_AGG_TMIN + 86400 && c->e < QRT_AGG_TMAX - 86400
        && (c->e - c->s) / 86400 < 65536) {
        c->day0 = qrt_date_day_of(c->s, c->offset);
        c->ndays = qrt_date_day_of(c->e, c->offset) - c->day0 + 1;
        c->daygrp = apr_pcalloc(c->p, (apr_size_t)c->ndays * sizeof(*c->daygrp));
    }
    if (!(c->g = qrt_vgroups_make(c->radix_on && n == 1 ? REPORT_LV_RADIX_MAX
                                                         : report_lv_max))
        || (n > 1 && qrt_vgroups_share(c->g, k, n) != 0)
        || (c->radix_on && n == 1
            && qrt_vgroups_radix(c->g, c->type == QRT_REPORT_TAG) != 0)) {
        return -1;
    }
    return 0;
}

static void report_lv_end(report_lv *c)
{
    qrt_vgroups_free(c->g);
    c->g = NULL;
    if (c->p) {
        apr_pool_destroy(c->p);
        c->p = NULL;
    }
}

/* A walk of held blocks: those two threads share (claimed REPORT_LV_CLAIM at a time
 * from *cursor, up to shared; none without cursor), then [from, to). APR_SUCCESS,
 * APR_EAGAIN past the bound (c->over) or without memory for a group. */
#define REPORT_LV_CLAIM 16

typedef struct {
    report_lv *c;
    const report_lv_blk *blks;      /* (the set's blocks as they were when it began: the
                                     * set's array may grow, elsewhere, meanwhile) */
    int *cursor, shared;
    int from, to;
    apr_status_t rv;
} report_lv_part;

static void report_lv_walk(report_lv_part *w)
{
    int i, end;

    w->rv = APR_SUCCESS;
    while (w->cursor && w->rv == APR_SUCCESS && !w->c->over
           && (i = __atomic_fetch_add(w->cursor, REPORT_LV_CLAIM, __ATOMIC_RELAXED))
              < w->shared) {
        end = i + REPORT_LV_CLAIM < w->shared ? i + REPORT_LV_CLAIM : w->shared;
        for (; i < end && w->rv == APR_SUCCESS && !w->c->over; i++) {
            w->rv = report_lv_block(w->c, w->blks[i].tracker, &w->blks[i].v);
        }
    }
    for (i = w->from; i < w->to && w->rv == APR_SUCCESS && !w->c->over; i++) {
        w->rv = report_lv_block(w->c, w->blks[i].tracker, &w->blks[i].v);
    }
    if (w->rv == APR_SUCCESS && w->c->over) {
        w->rv = APR_EAGAIN;
    }
}

static void report_lv_walk_any(void *data)
{
    report_lv_walk(data);
}

/* Pools for a second thread's half, kept cleared between counts: a pool of its own
 * allocator costs the allocator's first blocks, which APR maps and unmaps, each time.
 * What a kept pool's allocator keeps of the memory it freed is bounded. */
#define REPORT_LV_POOLS 4
#define REPORT_LV_POOL_KEEP ((apr_size_t)256 << 10)
static apr_pool_t *report_lv_pools[REPORT_LV_POOLS];

/* A pool with an allocator of its own (a second thread's), or NULL. */
static apr_pool_t *report_lv_pool(void)
{
    apr_allocator_t *a;
    apr_pool_t *p;
    int i;

    for (i = 0; i < REPORT_LV_POOLS; i++) {
        if ((p = __atomic_exchange_n(&report_lv_pools[i], NULL, __ATOMIC_ACQ_REL))) {
            return p;
        }
    }
    if (apr_allocator_create(&a) != APR_SUCCESS) {
        return NULL;
    }
    apr_allocator_max_free_set(a, REPORT_LV_POOL_KEEP);
    if (apr_pool_create_unmanaged_ex(&p, NULL, a) != APR_SUCCESS) {
        apr_allocator_destroy(a);
        return NULL;
    }
    apr_allocator_owner_set(a, p);
    return p;
}

/* p, from report_lv_pool, cleared and kept for the next count, or destroyed. */
static void report_lv_pool_done(apr_pool_t *p)
{
    int i;

    apr_pool_clear(p);
    for (i = 0; i < REPORT_LV_POOLS; i++) {
        apr_pool_t *none = NULL;

        if (__atomic_compare_exchange_n(&report_lv_pools[i], &none, p, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            return;
        }
    }
    apr_pool_destroy(p);
}

/* One count of the held blocks' visits of share k of n of their visitors (all of them
 * when n is 1), into acc (group key -> qrt_vgroup_t, summed over the shares, in sc->p):
 * APR_EAGAIN when the share's groups grow past their bound; APR_ENOTIMPL without memory.
 * With par, a second thread walks the later half of the blocks (by their visits) into
 * groups of its own, which the first then adds to its own before the count: each block
 * is read once, by one of the two. */
/* What walking a block costs besides its visits, in visits: split by visits alone, the
 * thread that took a list's quiet trackers (their visits in many small blocks) walked
 * several times longer than the other. */
#define REPORT_LV_BLOCK_COST 256

/* The walk a second thread begins once the sealed days' blocks are held, while the
 * request's thread reads the days not sealed through SQL (report_lv_ready): a count in
 * one share, whose blocks the two threads then claim in turn (REPORT_LV_CLAIM at a
 * time), the request's adding the days read last. */
struct report_lv_early {
    const report_lv *proto;
    report_lv c;                    /* the second thread's groups */
    report_lv_part w;
    apr_pool_t *tp;
    qrt_spare_job job;
    int cursor;                     /* the next sealed block to claim */
    int started;
};

static apr_uint64_t report_lv_early_begun, report_lv_early_dropped;

void qrt_report_lv_early_counts(apr_uint64_t *begun, apr_uint64_t *dropped)
{
    *begun = __atomic_load_n(&report_lv_early_begun, __ATOMIC_RELAXED);
    *dropped = __atomic_load_n(&report_lv_early_dropped, __ATOMIC_RELAXED);
}

/* The second thread stopped (it claims no more blocks) and its groups let go of, unless
 * a count took them. */
static void report_lv_early_end(report_lv_early *e)
{
    if (e && e->started) {
        __atomic_fetch_add(&report_lv_early_dropped, 1, __ATOMIC_RELAXED);
        __atomic_store_n(&e->cursor, e->w.shared, __ATOMIC_RELAXED);
        qrt_spare_wait(&e->job);
        report_lv_end(&e->c);
        report_lv_pool_done(e->tp);
        e->started = 0;
    }
}

static apr_status_t report_lv_count(qrt_report_scope_t *sc, const report_lv *proto,
                                    const report_lv_set *set, apr_uint32_t k, apr_uint32_t n,
                                    int par, apr_hash_t *acc)
{
    apr_pool_t *p = sc->p, *tp = NULL;
    report_lv c[2];
    report_lv_part w[2];
    apr_array_header_t *groups;
    apr_status_t rv;
    apr_size_t len = 0;
    char *text = NULL;
    int i, half = set->blks->nelts, helped = 0;
    qrt_spare_job job;
    report_lv_early *early = set->early;

    c[0] = c[1] = *proto;
    c[1].p = NULL;
    c[1].g = NULL;
    c[0].radix_on = c[1].radix_on = report_lv_radix(proto, set->seen);
    if (early && early->started && k == 0 && n == 1 && par) {
        /* the second thread's walk, begun before the days not sealed were read: this
         * thread claims the sealed blocks left, then walks those read after them (its
         * count spreads its visits as added, or not, as the second's does) */
        c[0].radix_on = early->c.radix_on;
        if (report_lv_begin(&c[0], p, k, n) < 0) {
            report_lv_end(&c[0]);
            report_lv_early_end(early);
            return APR_ENOTIMPL;
        }
        w[0].c = &c[0];
        w[0].blks = (const report_lv_blk *)(void *)set->blks->elts;
        w[0].cursor = &early->cursor;
        w[0].shared = early->w.shared;
        w[0].from = early->w.shared;
        w[0].to = set->blks->nelts;
        report_lv_walk(&w[0]);
        qrt_spare_wait(&early->job);
        c[1] = early->c;
        w[1] = early->w;
        w[1].c = &c[1];
        tp = early->tp;
        early->started = 0;         /* (its groups and pool are this count's now) */
    }
    else if (par && set->blks->nelts > 1) {
        /* the block where the first half of the work ends: a block's visits, and its own
         * cost besides (its tracker looked up, its runs begun), about that of
         * REPORT_LV_BLOCK_COST visits: a list's quiet trackers have many small blocks */
        apr_size_t all = 0, upto = 0;

        for (i = 0; i < set->blks->nelts; i++) {
            all += APR_ARRAY_IDX(set->blks, i, report_lv_blk).v.n + REPORT_LV_BLOCK_COST;
        }
        for (half = 0; half < set->blks->nelts && upto < all / 2; half++) {
            upto += APR_ARRAY_IDX(set->blks, half, report_lv_blk).v.n + REPORT_LV_BLOCK_COST;
        }
        if (!(tp = report_lv_pool())) {
            half = set->blks->nelts;
        }
    }
    if (!c[0].g) {
        if (report_lv_begin(&c[0], p, k, n) < 0
            || (half < set->blks->nelts && report_lv_begin(&c[1], tp, k, n) < 0)) {
            report_lv_end(&c[0]);
            report_lv_end(&c[1]);
            if (tp) {
                report_lv_pool_done(tp);
            }
            return APR_ENOTIMPL;
        }
        for (i = 0; i < 2; i++) {
            w[i].c = &c[i];
            w[i].blks = (const report_lv_blk *)(void *)set->blks->elts;
            w[i].cursor = NULL;
            w[i].shared = 0;
            w[i].from = i ? half : 0;
            w[i].to = i ? set->blks->nelts : half;
            w[i].rv = APR_SUCCESS;
        }
        /* (the second half in a kept thread, in tp, whose allocator no other thread
         * uses) */
        helped = c[1].g && qrt_spare_start(&job, report_lv_walk_any, &w[1]) == 0;
        report_lv_walk(&w[0]);
        if (helped) {
            qrt_spare_wait(&job);
        }
        else if (c[1].g) {
            report_lv_walk(&w[1]);  /* (no thread: the later half here) */
        }
    }
    rv = w[0].rv != APR_SUCCESS ? w[0].rv : c[1].g ? w[1].rv : APR_SUCCESS;
    if (rv == APR_EAGAIN && !c[0].over && !c[1].over) {
        rv = APR_ENOTIMPL;          /* (no memory for a group: not the bound) */
    }
    if (rv == APR_SUCCESS && c[1].g && qrt_vgroups_absorb(c[0].g, c[1].g) != 0) {
        rv = APR_EAGAIN;            /* (the two halves together past the bound) */
    }
    report_lv_end(&c[1]);
    if (tp) {
        report_lv_pool_done(tp);
    }
    if (rv == APR_SUCCESS) {
        if (par) {
            qrt_vgroups_threads(c[0].g, 2, report_lv_par_set ? 1 : 0);
        }
        text = qrt_vgroups_text(c[0].g, &len);
        groups = apr_array_make(c[0].p, 16, sizeof(qrt_vgroup_t));
        rv = text && qrt_vgroups_parse(c[0].p, text, len, groups) == APR_SUCCESS
             ? APR_SUCCESS : APR_ENOTIMPL;
        for (i = 0; rv == APR_SUCCESS && i < groups->nelts; i++) {
            qrt_vgroup_t *x = &APR_ARRAY_IDX(groups, i, qrt_vgroup_t), *sum;

            if (x->scans + x->clicks == 0) {
                continue;
            }
            if (!(sum = apr_hash_get(acc, x->key, APR_HASH_KEY_STRING))) {
                sum = apr_pcalloc(p, sizeof(*sum));
                sum->key = apr_pstrdup(p, x->key);
                apr_hash_set(acc, sum->key, APR_HASH_KEY_STRING, sum);
            }
            sum->scans += x->scans;
            sum->clicks += x->clicks;
            sum->uniques += x->uniques;
        }
    }
    free(text);
    report_lv_end(&c[0]);
    return rv;
}

/* The groups of the trackers read (at most QRT_AGG_LISTED_MAX) from their blocks, into
 * out: APR_ENOTIMPL when there are none to read (no cache), when the store would read
 * too many visits through SQL, or when the visits need more than REPORT_LV_SHARES
 * shares (out is then as it was). The blocks are read once and held; their visits are
 * counted in as many shares of their visitors as the bound of one count takes
 * (qrt_vgroups_share: each visitor in one share, so the shares' distinct visitors add
 * up), a walk of the held blocks each. A window of many visits is walked by two threads
 * where the machine has two CPUs or more, each half of the blocks once (a walk reads
 * its blocks from memory, which the two would otherwise both read whole). */
#define REPORT_LV_SHARES 64

/* The shares one count of seen visits takes: 1 while they keep within the bound, else
 * enough for them with a margin (the shares of many visitors are nearly even); 0 past
 * REPORT_LV_SHARES. */
static apr_uint32_t report_lv_shares(apr_size_t seen)
{
    apr_size_t want = seen + seen / 16;
    apr_uint32_t m = 2;

    if (seen <= report_lv_max) {
        return 1;
    }
    while (m <= REPORT_LV_SHARES && want / m >= report_lv_max) {
        m *= 2;
    }
    return m <= REPORT_LV_SHARES ? m : 0;
}

/* The shares of a count of c's kind: one when it spreads its visits as added. */
static apr_uint32_t report_lv_shares_of(const report_lv *c, apr_size_t seen)
{
    return report_lv_radix(c, seen) ? 1 : report_lv_shares(seen);
}

/* The held blocks' visits counted in n shares, summed into out: APR_SUCCESS, APR_EAGAIN
 * when a share passed the bound (out as it was), or another error. */
static apr_status_t report_lv_counts(qrt_report_scope_t *sc, const report_lv *proto,
                                     const report_lv_set *set, apr_uint32_t n, int par,
                                     qrt_agg_groups_t *out)
{
    apr_hash_t *acc = apr_hash_make(sc->p);
    apr_hash_index_t *hi;
    apr_status_t rv = APR_SUCCESS;
    apr_uint32_t k;

    for (k = 0; k < n && rv == APR_SUCCESS; k++) {
        rv = report_lv_count(sc, proto, set, k, n, par, acc);
    }
    if (rv == APR_SUCCESS) {
        for (hi = apr_hash_first(sc->p, acc); hi; hi = apr_hash_next(hi)) {
            qrt_vgroup_t *x = apr_hash_this_val(hi);

            qrt_agg_groups_set(out, x->key, x->scans, x->clicks, x->uniques);
        }
    }
    return rv;
}

static int report_lv_cpus(void)
{
#ifdef _SC_NPROCESSORS_ONLN
    long n = sysconf(_SC_NPROCESSORS_ONLN);

    return n > 0 ? (int)n : 1;
#else
    return 1;
#endif
}

/* A window of seen visits is walked and counted by two threads. */
static int report_lv_two(apr_size_t seen)
{
    return seen >= report_lv_par_min && (report_lv_par_set || report_lv_cpus() >= 2);
}

/* Scans and clicks a UTC day from day d0 for ndays days, taken from the blocks a count
 * holds (a dashboard's series over listed trackers: no statement of its own); filled is
 * set when the count succeeded. */
typedef struct {
    apr_int64_t d0, ndays;
    apr_int64_t *scans, *clicks;
    int filled;
} report_lv_daily;

/* Blocks [i0, i1) of a daily series' count: scans of day d at cnt[d], clicks at
 * cnt[ndays + d]. A block whose visits were added in time order (SQL gives no order,
 * though its index usually does) has their counts by UTC day, which a window of whole
 * days adds; in another, each day's are counted in registers (a visit's kind and
 * whether it is in the window added, not branched on: either is as likely as not) and
 * added to the day's counts when its day ends. */
typedef struct {
    const report_lv_set *set;
    apr_int64_t s, e, d0, ndays;
    int i0, i1;
    apr_int64_t *cnt;
} report_lv_dayrun;

/* A block's visits in [s, e] into the days' counts, by its table of days (s and e the
 * bounds of whole UTC days, as d0's are: qrt_agg_fdiv's days, the tables' too): a day in
 * the window adds its counts, no visit is read. */
static void report_lv_days_table(const qrt_vcols_t *v, apr_int64_t s, apr_int64_t e,
                                 apr_int64_t d0, apr_int64_t nd, apr_int64_t *cnt)
{
    apr_uint32_t i;

    for (i = 0; i < v->ndays; i++) {
        apr_int64_t day = v->day0 + i, d = day - d0;

        if (d >= 0 && d < nd && day * QRT_AGG_DAY >= s && day * QRT_AGG_DAY <= e) {
            cnt[d] += (apr_int64_t)v->days[2 * i] - v->days[2 * i + 1];
            cnt[nd + d] += v->days[2 * i + 1];
        }
    }
}

static int report_lv_runs = 1;

void qrt_report_lv_runs(int on)
{
    report_lv_runs = on;
}

static void report_lv_days_some(void *data)
{
    const report_lv_dayrun *r = data;
    const apr_int64_t s = r->s, e = r->e, d0 = r->d0, nd = r->ndays;
    apr_int64_t *cnt = r->cnt;
    int i;

    /* (a window of whole days, as a dashboard's: the blocks' tables serve) */
    const int tables = report_lv_runs && qrt_agg_fdiv(s, QRT_AGG_DAY) * QRT_AGG_DAY == s
                       && qrt_agg_fdiv(e + 1, QRT_AGG_DAY) * QRT_AGG_DAY == e + 1;

    memset(cnt, 0, 2 * (apr_size_t)nd * sizeof(*cnt));
    for (i = r->i0; i < r->i1; i++) {
        const qrt_vcols_t *v = &APR_ARRAY_IDX(r->set->blks, i, report_lv_blk).v;
        apr_int64_t d = -1, from = 1, to = 0;      /* (the day of the last visit) */
        apr_int64_t visits = 0, clicks = 0;
        apr_size_t k, n = v->n;

        if (v->tmax < s || v->tmin > e) {
            continue;
        }
        if (v->ndays && tables) {
            report_lv_days_table(v, s, e, d0, nd, cnt);
            continue;
        }
        for (k = 0; k < n; k++) {
            apr_int64_t when = qrt_vcols_time(v, k), in;

            if (when < from || when > to) {
                if (d >= 0 && d < nd) {
                    cnt[d] += visits - clicks;
                    cnt[nd + d] += clicks;
                }
                visits = clicks = 0;
                d = qrt_agg_fdiv(when, QRT_AGG_DAY);
                from = d * QRT_AGG_DAY;
                to = from + QRT_AGG_DAY - 1;
                d -= d0;
            }
            in = (when >= s) & (when <= e);
            visits += in;
            clicks += in & (v->click[k] != 0);
        }
        if (d >= 0 && d < nd) {
            cnt[d] += visits - clicks;
            cnt[nd + d] += clicks;
        }
    }
}

/* The daily series from the held blocks; a window that took two threads to count has the
 * second thread count the blocks of its second half of the visits. */
static void report_lv_days(apr_pool_t *p, const report_lv_set *set, apr_int64_t s,
                           apr_int64_t e, report_lv_daily *daily)
{
    report_lv_dayrun r[2];
    qrt_spare_job job;
    apr_size_t half = 0;
    apr_int64_t d;
    int i, threaded = 0;

    for (i = 0; i < 2; i++) {
        r[i].set = set;
        r[i].s = s;
        r[i].e = e;
        r[i].d0 = daily->d0;
        r[i].ndays = daily->ndays;
        r[i].cnt = apr_palloc(p, 2 * (apr_size_t)daily->ndays * sizeof(*r[i].cnt));
    }
    r[0].i0 = 0;
    r[0].i1 = r[1].i0 = r[1].i1 = set->blks->nelts;
    if (set->blks->nelts >= 2 && report_lv_two(set->seen)) {
        for (i = 0; i < set->blks->nelts && half < set->seen / 2; i++) {
            half += APR_ARRAY_IDX(set->blks, i, report_lv_blk).v.n;
        }
        r[0].i1 = r[1].i0 = i;
        threaded = qrt_spare_start(&job, report_lv_days_some, &r[1]) == 0;
    }
    report_lv_days_some(&r[0]);
    if (threaded) {
        qrt_spare_wait(&job);
    }
    else if (r[1].i0 < r[1].i1) {
        report_lv_days_some(&r[1]);
    }
    else {
        memset(r[1].cnt, 0, 2 * (apr_size_t)daily->ndays * sizeof(*r[1].cnt));
    }
    for (d = 0; d < daily->ndays; d++) {
        daily->scans[d] = r[0].cnt[d] + r[1].cnt[d];
        daily->clicks[d] = r[0].cnt[daily->ndays + d] + r[1].cnt[daily->ndays + d];
    }
}

/* By date, by type and for the whole (a dashboard's), the runs of a tracker's visits
 * (of a day, by date) are held where they are, outside the bound (qrt_vgroups_add_ref:
 * a group past it is counted in bands of its visitors): a window of n shares (more than
 * one) is tried in one walk first, then in shares should the runs copied (shorter than
 * 16 visits) pass the bound. By date that takes blocks thick enough; otherwise a block's
 * visits in the window are one run, and the blocks too few for their short runs to pass
 * it. */
static int report_lv_by_ref(const report_lv *c, const report_lv_set *set, apr_uint32_t n)
{
    return n > 1 && (c->type == QRT_REPORT_DATE ? set->thin <= report_lv_max / 2
                     : c->type == QRT_REPORT_TYPE || c->type < 0);
}

/* The sealed days' blocks are held (qrt_store_agg_read_listed, before it reads the days
 * not sealed): a window that will be counted in one walk by two threads (one share, or
 * its runs held by reference) has a second thread begin its walk now
 * (report_lv_early); should the days read after make it a count in shares, that walk is
 * dropped. */
static void report_lv_ready(void *ctx)
{
    report_lv_set *set = ctx;
    report_lv_early *e = set->early;
    apr_uint32_t n;

    if (!e || e->started || set->blks->nelts < 2 || !report_lv_two(set->seen)) {
        return;
    }
    n = report_lv_shares_of(e->proto, set->seen);
    if (!(n == 1 || report_lv_by_ref(e->proto, set, n)) || !(e->tp = report_lv_pool())) {
        return;
    }
    e->c = *e->proto;
    e->c.radix_on = report_lv_radix(e->proto, set->seen);
    e->cursor = 0;
    e->w.c = &e->c;
    e->w.blks = (const report_lv_blk *)(void *)set->blks->elts;
    e->w.cursor = &e->cursor;
    e->w.shared = set->blks->nelts;
    e->w.from = e->w.to = 0;
    e->w.rv = APR_SUCCESS;
    if (report_lv_begin(&e->c, e->tp, 0, 1) < 0
        || qrt_spare_start(&e->job, report_lv_walk_any, &e->w) != 0) {
        report_lv_end(&e->c);
        report_lv_pool_done(e->tp);
        return;
    }
    e->started = 1;
    __atomic_fetch_add(&report_lv_early_begun, 1, __ATOMIC_RELAXED);
}

static apr_status_t report_lv_groups(qrt_report_scope_t *sc, apr_array_header_t *read,
                                     int type, int offset, apr_hash_t *tags,
                                     apr_int64_t s, apr_int64_t e, qrt_agg_groups_t *out,
                                     report_lv_daily *daily)
{
    apr_pool_t *p = sc->p;
    apr_int64_t *ids = apr_palloc(p, (apr_size_t)read->nelts * sizeof(*ids) + 1);
    apr_array_header_t *held = apr_array_make(p, 256, sizeof(void *));
    apr_status_t rv;
    apr_uint32_t n;
    report_lv_set set;
    report_lv_early early;
    report_lv c;
    int i, par, by_ref;

    memset(&c, 0, sizeof(c));
    c.type = type;
    c.offset = offset;
    c.tags = tags;
    /* (each visit of one group, of a thousand at most: a browser, a country, a city; or
     * of the set of its tracker's tags, of 64 tags at most) */
    c.radix = type == QRT_REPORT_BROWSER || type == QRT_REPORT_CITY
              || type == QRT_REPORT_COUNTRY || type == QRT_REPORT_TAG;
    c.s = s;
    c.e = e;
    c.trackers = apr_hash_make(p);
    for (i = 0; i < read->nelts; i++) {
        qrt_report_tracker_t *t = APR_ARRAY_IDX(read, i, qrt_report_tracker_t *);

        ids[i] = t->id;
        apr_hash_set(c.trackers, &t->id, sizeof(t->id), t);
    }
    /* (room for about as many blocks as the window holds of each tracker: a block a
     * span of 16 days (the store's LV_SPAN), and some days apart at either end; at most
     * REPORT_LV_BLKS. Grown from small, the array was copied at each doubling into
     * memory the system maps afresh) */
    {
        apr_int64_t ws = s < QRT_AGG_TMIN ? QRT_AGG_TMIN : s, we = e > QRT_AGG_TMAX
                                                                  ? QRT_AGG_TMAX : e;
        apr_int64_t each = we >= ws ? (we - ws) / (16 * 86400) + 40 : 40;
        apr_int64_t want = each * read->nelts;

        set.blks = apr_array_make(p, 1, sizeof(report_lv_blk));
        set.blks->nalloc = (int)(want < 256 ? 256 : want > REPORT_LV_BLKS ? REPORT_LV_BLKS
                                                                          : want);
        set.blks->elts = apr_palloc(p, (apr_size_t)set.blks->nalloc * sizeof(report_lv_blk));
    }
    set.s = s;
    set.e = e;
    set.seen = 0;
    set.thin = 0;
    memset(&early, 0, sizeof(early));
    early.proto = &c;
    set.early = &early;
    /* More trackers than the database counts in one statement have no way below but
     * reading their visits a tracker at a time and counting them in sets of visitors,
     * slower and larger: their blocks are read up to twice the cache's bytes, not four
     * fifths of them. */
    rv = qrt_store_agg_read_listed(sc->db, p, sc->account_id, ids, read->nelts, s, e,
                                   type == QRT_REPORT_BROWSER || type == QRT_REPORT_CITY
                                   || type == QRT_REPORT_COUNTRY,
                                   read->nelts > QRT_AGG_RAW_IDS, held, report_lv_keep,
                                   report_lv_ready, &set);
    sc->counted += (apr_int64_t)set.seen;
    /* (the store would read too many visits through SQL: the way below) */
    n = rv == APR_SUCCESS ? report_lv_shares_of(&c, set.seen) : 0;
    /* (a count in shares tried in one walk first: report_lv_by_ref) */
    by_ref = report_lv_by_ref(&c, &set, n);
    par = report_lv_two(set.seen);
    if (rv != APR_SUCCESS || !par || !(n == 1 || by_ref)
        || (early.started && early.c.radix_on != report_lv_radix(&c, set.seen))) {
        /* (no count in one walk by two threads: the second thread's walk stopped before
         * the shares' walks, rather than run on beside them; nor one begun copying the
         * visits into its groups where the days read after took the window past their
         * bound: it is counted spreading them as added, from the start) */
        report_lv_early_end(&early);
    }
    for (; rv == APR_SUCCESS && n > 0 && n <= REPORT_LV_SHARES; n *= 2) {
        rv = report_lv_counts(sc, &c, &set, by_ref ? 1 : n, par, out);
        if (rv == APR_SUCCESS) {
            n = by_ref ? 1 : n;
            if ((int)n > sc->lv_shares) {
                sc->lv_shares = (int)n;
            }
            break;
        }
        if (rv == APR_EAGAIN) {
            /* (a share passed the bound after all: twice as many; out is as it was) */
            rv = APR_SUCCESS;
            if (by_ref) {
                by_ref = 0;
                n /= 2;             /* (then the shares the visits take) */
            }
        }
    }
    /* (a second thread's walk that no count took, however the loop ended: stopped before
     * the held blocks are let go of) */
    report_lv_early_end(&early);
    if (rv == APR_SUCCESS && (n == 0 || n > REPORT_LV_SHARES)) {
        rv = APR_ENOTIMPL;
    }
    if (rv == APR_SUCCESS && daily) {
        report_lv_days(p, &set, s, e, daily);
        daily->filled = 1;
    }
    qrt_store_agg_read_listed_release(held);
    return rv == APR_EAGAIN || rv == APR_ENOTIMPL ? APR_ENOTIMPL : rv;
}

static int report_str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A report by tag whose (visit, tag) pairs pass the blocks' bound, read again in two
 * halves of its tags (each tag's distinct visitors are its own: the halves' groups are
 * disjoint), each half split again while it passes the bound; into out, only when
 * every part was counted (APR_ENOTIMPL, and out as it was, when a single tag passes it
 * or the child keeps no blocks). */
static apr_status_t report_lv_tag_halves(qrt_report_scope_t *sc, apr_array_header_t *read,
                                         int offset, apr_hash_t *tags, apr_int64_t s,
                                         apr_int64_t e, qrt_agg_groups_t *out)
{
    apr_pool_t *p = sc->p;
    apr_hash_t *seen = apr_hash_make(p), *half[2];
    apr_array_header_t *names = apr_array_make(p, 16, sizeof(const char *)), *part[2];
    qrt_agg_groups_t *got[2];
    apr_hash_index_t *hi;
    apr_status_t rv = APR_SUCCESS;
    int i, j, k;

    if (!qrt_store_agg_blob_kept()) {
        return APR_ENOTIMPL;
    }
    for (i = 0; i < read->nelts; i++) {
        qrt_report_tracker_t *t = APR_ARRAY_IDX(read, i, qrt_report_tracker_t *);

        for (j = 0; j < t->tags->nelts; j++) {
            const char *tag = APR_ARRAY_IDX(t->tags, j, qrt_report_tag_t).tag;

            if ((!tags || apr_hash_get(tags, tag, APR_HASH_KEY_STRING))
                && !apr_hash_get(seen, tag, APR_HASH_KEY_STRING)) {
                apr_hash_set(seen, tag, APR_HASH_KEY_STRING, tag);
                APR_ARRAY_PUSH(names, const char *) = tag;
            }
        }
    }
    if (names->nelts < 2) {
        return APR_ENOTIMPL;
    }
    qsort(names->elts, (size_t)names->nelts, sizeof(const char *), report_str_cmp);
    for (k = 0; k < 2; k++) {
        half[k] = apr_hash_make(p);
        for (i = k ? names->nelts / 2 : 0; i < (k ? names->nelts : names->nelts / 2); i++) {
            const char *tag = APR_ARRAY_IDX(names, i, const char *);

            apr_hash_set(half[k], tag, APR_HASH_KEY_STRING, tag);
        }
        /* the trackers with a tag of the half */
        part[k] = apr_array_make(p, read->nelts, sizeof(qrt_report_tracker_t *));
        for (i = 0; i < read->nelts; i++) {
            qrt_report_tracker_t *t = APR_ARRAY_IDX(read, i, qrt_report_tracker_t *);

            for (j = 0; j < t->tags->nelts; j++) {
                if (apr_hash_get(half[k], APR_ARRAY_IDX(t->tags, j, qrt_report_tag_t).tag,
                                 APR_HASH_KEY_STRING)) {
                    APR_ARRAY_PUSH(part[k], qrt_report_tracker_t *) = t;
                    break;
                }
            }
        }
        got[k] = qrt_agg_groups_make(p);
        rv = report_lv_groups(sc, part[k], QRT_REPORT_TAG, offset, half[k], s, e, got[k],
                              NULL);
        if (rv == APR_ENOTIMPL) {
            rv = report_lv_tag_halves(sc, part[k], offset, half[k], s, e, got[k]);
        }
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    for (k = 0; k < 2; k++) {
        for (hi = apr_hash_first(p, got[k]->groups); hi; hi = apr_hash_next(hi)) {
            qrt_agg_group_t *x = apr_hash_this_val(hi);

            qrt_agg_groups_set(out, x->key, x->scans, x->clicks, x->uniques);
        }
    }
    return APR_SUCCESS;
}

/* Groups of the covered trackers' visits in [s, e] (only trackers with one of tags,
 * when tags is given): counted by the database for a few trackers, else here.
 * type -1: one group "" of every visit. */
static apr_status_t report_raw_groups(qrt_report_scope_t *sc, int type, int offset,
                                      apr_hash_t *tags, apr_int64_t s, apr_int64_t e,
                                      qrt_agg_groups_t **out)
{
    static const int by[] = { QRT_AGG_RAW_ALL, QRT_AGG_RAW_TYPE, QRT_AGG_RAW_TAG,
                              QRT_AGG_RAW_DATE, QRT_AGG_RAW_BROWSER, QRT_AGG_RAW_CITY,
                              QRT_AGG_RAW_COUNTRY };
    apr_pool_t *p = sc->p;
    apr_array_header_t *read = apr_array_make(p, 16, sizeof(qrt_report_tracker_t *));
    apr_status_t rv;
    report_raw c;
    int i, j;

    for (i = 0; i < sc->list->nelts; i++) {
        qrt_report_tracker_t *t = APR_ARRAY_IDX(sc->list, i, qrt_report_tracker_t *);
        int wanted = !tags;

        for (j = 0; j < t->tags->nelts && !wanted; j++) {
            wanted = apr_hash_get(tags, APR_ARRAY_IDX(t->tags, j, qrt_report_tag_t).tag,
                                  APR_HASH_KEY_STRING) != NULL;
        }
        if (wanted) {
            APR_ARRAY_PUSH(read, qrt_report_tracker_t *) = t;
        }
    }
    memset(&c, 0, sizeof(c));
    c.g = *out = qrt_agg_groups_make(p);
    sc->raw_trackers += read->nelts;
    if (read->nelts > 0 && read->nelts <= QRT_AGG_LISTED_MAX) {
        rv = report_lv_groups(sc, read, type, offset, tags, s, e, c.g, NULL);
        if (rv == APR_ENOTIMPL && type == QRT_REPORT_TAG) {
            rv = report_lv_tag_halves(sc, read, offset, tags, s, e, c.g);
        }
        if (rv == APR_SUCCESS) {
            return APR_SUCCESS;
        }
        if (rv != APR_ENOTIMPL) {
            return report_fail(sc, rv, "grouping visits");
        }
    }
    if (read->nelts > 0 && read->nelts <= QRT_AGG_RAW_IDS) {
        apr_int64_t ids[QRT_AGG_RAW_IDS];
        apr_array_header_t *rows;

        for (i = 0; i < read->nelts; i++) {
            ids[i] = APR_ARRAY_IDX(read, i, qrt_report_tracker_t *)->id;
        }
        rv = qrt_store_agg_read_raw_groups(sc->db, p, type >= QRT_REPORT_TYPE ? by[type] : by[0],
                                      ids, read->nelts, s, e, offset, &rows);
        if (rv != APR_SUCCESS) {
            return report_fail(sc, rv, "grouping visits");
        }
        for (i = 0; i < rows->nelts; i++) {
            qrt_agg_row_t *r = &APR_ARRAY_IDX(rows, i, qrt_agg_row_t);

            qrt_agg_groups_set(c.g, type == QRT_REPORT_DATE
                                    ? apr_psprintf(p, "%" APR_INT64_T_FMT, r->grp)
                                    : r->val,
                               r->scans, r->clicks, r->uniques);
        }
        return APR_SUCCESS;
    }
    c.type = type;
    c.offset = offset;
    c.tags = tags;
    for (i = 0; i < read->nelts; i++) {
        c.t = APR_ARRAY_IDX(read, i, qrt_report_tracker_t *);
        rv = qrt_store_agg_read_raw(sc->db, p, c.t->id, s, e, report_raw_visit, &c);
        sc->counted += c.n;
        c.n = 0;
        if (rv != APR_SUCCESS) {
            return report_fail(sc, rv, "reading visits");
        }
    }
    return c.g->nomem ? report_fail(sc, APR_ENOMEM, "counting distinct visitors")
                      : APR_SUCCESS;
}

/* ---- lists that leave a few trackers out ------------------------------------------ */

/* A list of all the account's live trackers but a few ("the others") whose visits in the
 * window are few is counted from the account-level aggregates, less what the others hold:
 * their visits, and per group their visitors who have no visit of that group in the
 * window on a listed tracker. Those are found by reading the window's visits of each
 * visitor the others had (the visitors' index): the cost is in proportion to the others'
 * visits and their visitors' (checked on the first few visitors), where counting the listed
 * trackers' visits is in proportion to theirs (a list of all trackers but one took seconds where all of them take
 * milliseconds). Date, browser, city and country reports, whose groups are the visits'
 * own, and the dashboard's distinct visitors of a period (type -1: one group). */
static void report_add_row(apr_array_header_t *rows, apr_int64_t id, const char *key,
                           apr_int64_t scans, apr_int64_t clicks, apr_int64_t uniques);

#define REPORT_CO_MAX ((apr_int64_t)100000)     /* the others' visits in the window, at most */
#define REPORT_CO_RATIO 32                      /* ... and a 32nd of the listed ones,
                                                 * with their visitors' visits */
#define REPORT_CO_FIRST 2000                    /* visitors read before the rest */

static apr_int64_t report_co_ratio = REPORT_CO_RATIO;
static apr_uint64_t report_co_made;             /* (atomic) */
static apr_uint64_t report_co_bounded;          /* (atomic) */

void qrt_report_co_ratio(apr_int64_t ratio)
{
    report_co_ratio = ratio ? ratio : REPORT_CO_RATIO;
}

apr_uint64_t qrt_report_co_count(void)
{
    return __atomic_load_n(&report_co_made, __ATOMIC_RELAXED);
}

apr_uint64_t qrt_report_co_bounded_count(void)
{
    return __atomic_load_n(&report_co_bounded, __ATOMIC_RELAXED);
}

typedef struct {
    apr_int64_t scans, clicks;      /* the others' visits of the group */
    apr_int64_t alone;              /* their visitors with none of it on a listed tracker */
} report_co_group;

typedef struct {
    report_co_group *g;
    int listed;                     /* the visitor has a visit of the group listed */
} report_co_pair;

typedef struct {
    apr_pool_t *p;
    int type, offset;
    int second;                     /* reading the visitors' own visits */
    apr_int64_t read;               /* ... and how many were read */
    apr_hash_t *covered;            /* the listed trackers */
    apr_hash_t *want;               /* by tag: the listed trackers' tags */
    const qrt_report_tracker_t *t;  /* by tag: the tracker read (its tags the groups) */
    apr_hash_t *groups;             /* key -> report_co_group */
    apr_hash_t *pairs;              /* key "\1" visitor -> report_co_pair */
    apr_hash_t *seen;               /* visitor -> itself */
    apr_array_header_t *visitors;   /* apr_int64_t: the others' visitors, each once */
    char buf[32];
} report_co_ctx;

static const char *report_co_key(report_co_ctx *c, apr_int64_t t, const char *browser,
                                 const char *country, const char *city)
{
    switch (c->type) {
    case QRT_REPORT_DATE:
        apr_snprintf(c->buf, sizeof(c->buf), "%" APR_INT64_T_FMT,
                     qrt_date_day_of(t, c->offset));
        return c->buf;
    case QRT_REPORT_BROWSER:
        return browser;
    case QRT_REPORT_CITY:
        return city;
    case QRT_REPORT_COUNTRY:
        return country;
    default:
        return "";
    }
}

/* One visit of group key: an others' visit (first pass) or one of their visitors' on a
 * listed tracker (second). */
static void report_co_one(report_co_ctx *c, const char *key, int click, const char *visitor)
{
    const char *pk = apr_pstrcat(c->p, key, "\1", visitor, NULL);
    report_co_pair *x = apr_hash_get(c->pairs, pk, APR_HASH_KEY_STRING);

    if (c->second) {
        if (x) {
            x->listed = 1;          /* the group is not theirs alone */
        }
        return;
    }
    if (!x) {
        report_co_group *g = apr_hash_get(c->groups, key, APR_HASH_KEY_STRING);

        if (!g) {
            g = apr_pcalloc(c->p, sizeof(*g));
            apr_hash_set(c->groups, apr_pstrdup(c->p, key), APR_HASH_KEY_STRING, g);
        }
        x = apr_pcalloc(c->p, sizeof(*x));
        x->g = g;
        apr_hash_set(c->pairs, pk, APR_HASH_KEY_STRING, x);
        if (!apr_hash_get(c->seen, visitor, APR_HASH_KEY_STRING)) {
            const char *v = apr_pstrdup(c->p, visitor);

            apr_hash_set(c->seen, v, APR_HASH_KEY_STRING, v);
            APR_ARRAY_PUSH(c->visitors, apr_int64_t) = apr_atoi64(v);
        }
    }
    if (click) {
        x->g->clicks++;
    }
    else {
        x->g->scans++;
    }
}

static void report_co_visit(void *ctx, apr_int64_t tracker_id, apr_int64_t t, int click,
                            const char *visitor, const char *browser, const char *country,
                            const char *city)
{
    report_co_ctx *c = ctx;
    const qrt_report_tracker_t *tr = c->t;
    int i;

    if (c->second) {
        c->read++;
        /* (another account's tracker, or one left out: none of a listed group) */
        if (!(tr = apr_hash_get(c->covered, &tracker_id, sizeof(tracker_id)))) {
            return;
        }
    }
    if (c->type != QRT_REPORT_TAG) {
        report_co_one(c, report_co_key(c, t, browser, country, city), click, visitor);
        return;
    }
    for (i = 0; i < tr->tags->nelts; i++) {
        const char *tag = APR_ARRAY_IDX(tr->tags, i, qrt_report_tag_t).tag;

        if (apr_hash_get(c->want, tag, APR_HASH_KEY_STRING)) {
            report_co_one(c, tag, click, visitor);
        }
    }
}

/* The rows all of the account's live trackers make of report type (tag, date, browser,
 * city, country; -1: one row, key "", of all their visits) from the account-level
 * aggregates: APR_ENOTIMPL where they do not hold. */
static apr_status_t report_co_all(qrt_report_scope_t *sc, int type, int offset,
                                  apr_int64_t s, apr_int64_t e, apr_array_header_t *rows)
{
    static const int kinds[] = { 0, 0, 0, 0, QRT_AGG_B, QRT_AGG_Y, QRT_AGG_C };
    apr_array_header_t *list;
    apr_status_t rv;
    int i;

    if (type == QRT_REPORT_TAG) {
        rv = qrt_store_agg_read_window(sc->db, sc->wp, sc->account_id, QRT_AGG_G, NULL, 0, s,
                                       e, 1, &list);
        for (i = 0; rv == APR_SUCCESS && i < list->nelts; i++) {
            qrt_agg_row_t *r = &APR_ARRAY_IDX(list, i, qrt_agg_row_t);

            report_add_row(rows, 0, r->val, r->scans, r->clicks, r->uniques);
        }
        return rv;
    }
    if (type == QRT_REPORT_DATE) {
        rv = qrt_store_agg_read_days(sc->db, sc->p, sc->account_id, s, e, offset, &list);
        for (i = 0; rv == APR_SUCCESS && i < list->nelts; i++) {
            qrt_agg_day_t *d = &APR_ARRAY_IDX(list, i, qrt_agg_day_t);

            report_add_row(rows, d->day, "", d->scans, d->clicks, d->uniques);
        }
        return rv;
    }
    rv = qrt_store_agg_read_window(sc->db, sc->wp, sc->account_id,
                                   type < 0 ? QRT_AGG_A : kinds[type], NULL, 0, s, e, 1, &list);
    for (i = 0; rv == APR_SUCCESS && i < list->nelts; i++) {
        qrt_agg_row_t *r = &APR_ARRAY_IDX(list, i, qrt_agg_row_t);

        report_add_row(rows, 0, type < 0 ? "" : r->val, r->scans, r->clicks, r->uniques);
    }
    return rv;
}

/* The live trackers a scope leaves out (apr_int64_t) when it may be counted as the
 * account less those: the account-level aggregates hold, every live tracker is known
 * and at most QRT_AGG_LISTED_MAX are left out; else NULL. */
static apr_array_header_t *report_co_others(qrt_report_scope_t *sc)
{
    apr_array_header_t *others;
    int i;

    if (sc->everything || !sc->acc_ok || sc->live->nelts != sc->nlive) {
        return NULL;
    }
    others = apr_array_make(sc->p, 8, sizeof(apr_int64_t));
    for (i = 0; i < sc->live->nelts; i++) {
        qrt_report_tracker_t *t = &APR_ARRAY_IDX(sc->live, i, qrt_report_tracker_t);

        if (!apr_hash_get(sc->covered, &t->id, sizeof(t->id))) {
            APR_ARRAY_PUSH(others, apr_int64_t) = t->id;
        }
    }
    return others->nelts > 0 && others->nelts <= QRT_AGG_LISTED_MAX ? others : NULL;
}

/* The visits of the listed trackers (*listed) and of the others (*others) over the UTC
 * days [d0, d1] from the trackers' counters (whole days: nothing read in part). */
static apr_status_t report_co_days(qrt_report_scope_t *sc, apr_int64_t d0, apr_int64_t d1,
                                   apr_int64_t *listed, apr_int64_t *others)
{
    apr_array_header_t *rows;
    apr_status_t rv;
    int i;

    *listed = *others = 0;
    if (d0 > d1) {
        return APR_SUCCESS;
    }
    rv = qrt_store_agg_read_window(sc->db, sc->wp, sc->account_id, QRT_AGG_T, NULL, 0,
                                   d0 * QRT_AGG_DAY, (d1 + 1) * QRT_AGG_DAY - 1, 0, &rows);
    for (i = 0; rv == APR_SUCCESS && i < rows->nelts; i++) {
        qrt_agg_row_t *r = &APR_ARRAY_IDX(rows, i, qrt_agg_row_t);

        *(apr_hash_get(sc->covered, &r->grp, sizeof(r->grp)) ? listed : others)
            += r->scans + r->clicks;
    }
    return rv;
}

/* 1 when counters read at once tell that the trackers a list leaves out hold too many of
 * the window's visits for report_co (past REPORT_CO_MAX, or past a report_co_ratio-th of
 * the listed ones'), as its exact sums below would: the others' visits on the window's
 * whole UTC days, and on its part days the account's visits in their whole quarter-hours
 * less all the listed trackers' visits of those days, or, where more, those visits split
 * between the listed trackers and the others as the part days' whole are (the account's
 * quarter-hours hold no tracker: the first hour of a day whose visits run on past it, a
 * window ending early in a day or visits ahead of the clock, is otherwise a bound of
 * nothing); against the listed trackers' visits on every day the window touches. The
 * exact sums read the part days' visits of the whole account (a window that ends now:
 * today's so far), which in a busy account costs more than counting a list of a hundred
 * trackers itself. (An estimate that says too many where the sums would not costs the
 * listed trackers' own count, exact as well.) */
static int report_co_too_many(qrt_report_scope_t *sc, apr_int64_t s, apr_int64_t e)
{
    apr_int64_t d0, d1, w0, w1, listed, others, inner_listed = 0, inner_others = 0, part = 0;
    apr_int64_t n, theirs;

    if (s < QRT_AGG_TMIN || e > QRT_AGG_TMAX || s > e) {
        return 0;
    }
    d0 = qrt_agg_fdiv(s, QRT_AGG_DAY);
    d1 = qrt_agg_fdiv(e, QRT_AGG_DAY);
    w0 = d0 + (d0 * QRT_AGG_DAY < s);
    w1 = d1 - ((d1 + 1) * QRT_AGG_DAY - 1 > e);
    if (report_co_days(sc, d0, d1, &listed, &others) != APR_SUCCESS
        || (w0 <= w1 && (w0 != d0 || w1 != d1)
            && report_co_days(sc, w0, w1, &inner_listed, &inner_others) != APR_SUCCESS)) {
        return 0;
    }
    if (w0 == d0 && w1 == d1) {
        inner_listed = listed;
        inner_others = others;
    }
    /* the part days: [s, the first whole day) and (the last whole day, e], or the
     * window itself when it holds no whole day */
    if (w0 > w1) {
        if (qrt_store_agg_read_quarters(sc->db, sc->wp, sc->account_id, s, e, &part)
            != APR_SUCCESS) {
            return 0;
        }
    }
    else {
        if (w0 > d0) {
            if (qrt_store_agg_read_quarters(sc->db, sc->wp, sc->account_id, s,
                                            w0 * QRT_AGG_DAY - 1, &n) != APR_SUCCESS) {
                return 0;
            }
            part += n;
        }
        if (w1 < d1) {
            if (qrt_store_agg_read_quarters(sc->db, sc->wp, sc->account_id,
                                            (w1 + 1) * QRT_AGG_DAY, e, &n) != APR_SUCCESS) {
                return 0;
            }
            part += n;
        }
    }
    {
        apr_int64_t edge_listed = listed - inner_listed, edge_others = others - inner_others;
        apr_int64_t lower = part - edge_listed, share = 0;

        if (part > 0 && edge_others > 0) {
            share = (apr_int64_t)((double)part * (double)edge_others
                                  / (double)(edge_listed + edge_others));
        }
        theirs = inner_others + (lower > share ? lower : share > 0 ? share : 0);
    }
    return theirs > REPORT_CO_MAX || (report_co_ratio > 0 && theirs * report_co_ratio > listed);
}

static apr_status_t report_co(qrt_report_scope_t *sc, int type, int offset, apr_int64_t s,
                              apr_int64_t e, apr_array_header_t *rows)
{
    apr_array_header_t *all, *others, *totals;
    apr_int64_t theirs = 0, everyone = 0;
    apr_hash_index_t *hi;
    apr_status_t rv;
    report_co_ctx c;
    int i;

    if ((type != QRT_REPORT_DATE && type != QRT_REPORT_BROWSER && type != QRT_REPORT_CITY
         && type != QRT_REPORT_COUNTRY && type != QRT_REPORT_TAG && type != -1)
        || !(others = report_co_others(sc))) {
        return APR_ENOTIMPL;
    }
    memset(&c, 0, sizeof(c));
    c.p = sc->p;
    if (type == QRT_REPORT_TAG) {
        /* the listed trackers' tags, each a row; one the aggregates no longer hold (a
         * tracker gained or lost it since) the listed trackers' own count gives */
        c.want = apr_hash_make(c.p);
        for (i = 0; i < sc->list->nelts; i++) {
            const qrt_report_tracker_t *t = APR_ARRAY_IDX(sc->list, i, qrt_report_tracker_t *);
            int j;

            for (j = 0; j < t->tags->nelts; j++) {
                const char *tag = APR_ARRAY_IDX(t->tags, j, qrt_report_tag_t).tag;

                if (sc->acc_dirty_tags
                    && apr_hash_get(sc->acc_dirty_tags, tag, APR_HASH_KEY_STRING)) {
                    return APR_ENOTIMPL;
                }
                apr_hash_set(c.want, tag, APR_HASH_KEY_STRING, tag);
            }
        }
    }
    if (report_co_too_many(sc, s, e)) {
        __atomic_fetch_add(&report_co_bounded, 1, __ATOMIC_RELAXED);
        return APR_ENOTIMPL;
    }
    /* the others' visits, and everyone's, from the aggregates */
    rv = qrt_store_agg_read_window(sc->db, sc->wp, sc->account_id, QRT_AGG_T,
                                   (const apr_int64_t *)others->elts, others->nelts, s, e, 0,
                                   &totals);
    if (rv != APR_SUCCESS) {
        return report_fail(sc, rv, "summing tracker aggregates");
    }
    for (i = 0; i < totals->nelts; i++) {
        qrt_agg_row_t *r = &APR_ARRAY_IDX(totals, i, qrt_agg_row_t);

        /* (the others' rows alone: past a few of them the read gives every tracker's) */
        if (!apr_hash_get(sc->covered, &r->grp, sizeof(r->grp))) {
            theirs += r->scans + r->clicks;
        }
    }
    all = apr_array_make(sc->p, 64, sizeof(qrt_report_row_t));
    rv = report_co_all(sc, type, offset, s, e, all);
    if (rv == APR_ENOTIMPL) {
        return rv;
    }
    if (rv != APR_SUCCESS) {
        return report_fail(sc, rv, "summing report aggregates");
    }
    if (type == QRT_REPORT_TAG) {
        /* (a visit counts in each of its tracker's tags: everyone's visits apart) */
        apr_array_header_t *one = apr_array_make(sc->p, 1, sizeof(qrt_report_row_t));

        if ((rv = report_co_all(sc, -1, 0, s, e, one)) != APR_SUCCESS) {
            return report_fail(sc, rv, "summing account aggregates");
        }
        for (i = 0; i < one->nelts; i++) {
            everyone += APR_ARRAY_IDX(one, i, qrt_report_row_t).scans
                        + APR_ARRAY_IDX(one, i, qrt_report_row_t).clicks;
        }
    }
    for (i = 0; type != QRT_REPORT_TAG && i < all->nelts; i++) {
        everyone += APR_ARRAY_IDX(all, i, qrt_report_row_t).scans
                    + APR_ARRAY_IDX(all, i, qrt_report_row_t).clicks;
    }
    if (theirs > REPORT_CO_MAX
        || (report_co_ratio > 0 && theirs * report_co_ratio > everyone - theirs)) {
        return APR_ENOTIMPL;
    }
    c.type = type;
    c.offset = offset;
    c.covered = sc->covered;
    c.groups = apr_hash_make(c.p);
    c.pairs = apr_hash_make(c.p);
    c.seen = apr_hash_make(c.p);
    c.visitors = apr_array_make(c.p, 64, sizeof(apr_int64_t));
    for (i = 0; i < sc->live->nelts; i++) {
        c.t = &APR_ARRAY_IDX(sc->live, i, qrt_report_tracker_t);
        if (apr_hash_get(sc->covered, &c.t->id, sizeof(c.t->id))) {
            continue;               /* (the others: report_co_others) */
        }
        rv = qrt_store_agg_read_raw(sc->db, sc->p, c.t->id, s, e, report_co_visit, &c);
        if (rv != APR_SUCCESS) {
            return report_fail(sc, rv, "reading visits");
        }
    }
    /* Their visitors' visits: the first REPORT_CO_FIRST visitors' tell how many all of
     * theirs are (a visitor may have thousands), which the bound holds to as well. */
    c.second = 1;
    for (i = 0; i < 2 && c.visitors->nelts > (i ? REPORT_CO_FIRST : 0); i++) {
        apr_array_header_t part = *c.visitors;

        if (i == 0) {
            part.nelts = part.nelts < REPORT_CO_FIRST ? part.nelts : REPORT_CO_FIRST;
        }
        else {
            part.elts += (apr_size_t)REPORT_CO_FIRST * sizeof(apr_int64_t);
            part.nelts -= REPORT_CO_FIRST;
        }
        rv = qrt_store_agg_read_visitors(sc->db, sc->p, &part, s, e, report_co_visit, &c);
        if (rv != APR_SUCCESS) {
            return report_fail(sc, rv, "reading the visitors' visits");
        }
        if (i == 0 && report_co_ratio > 0
            && (theirs + c.read * c.visitors->nelts / part.nelts) * report_co_ratio
               > everyone - theirs) {
            return APR_ENOTIMPL;
        }
    }
    for (hi = apr_hash_first(c.p, c.pairs); hi; hi = apr_hash_next(hi)) {
        report_co_pair *x = apr_hash_this_val(hi);

        x->g->alone += !x->listed;
    }
    sc->counted += apr_hash_count(c.pairs);
    /* everyone's rows less the others' (the report reads one snapshot of the database; a
     * group never goes below none, whatever the aggregates hold) */
    if (type == QRT_REPORT_TAG) {
        /* every listed tag a row, zeros included; the aggregates' rows of the others' tags
         * alone are not the list's */
        apr_hash_t *byval = apr_hash_make(c.p);

        for (i = 0; i < all->nelts; i++) {
            qrt_report_row_t *r = &APR_ARRAY_IDX(all, i, qrt_report_row_t);

            apr_hash_set(byval, r->key, APR_HASH_KEY_STRING, r);
        }
        all = apr_array_make(c.p, (int)apr_hash_count(c.want) + 1, sizeof(qrt_report_row_t));
        for (hi = apr_hash_first(c.p, c.want); hi; hi = apr_hash_next(hi)) {
            const char *tag = apr_hash_this_val(hi);
            qrt_report_row_t *r = apr_hash_get(byval, tag, APR_HASH_KEY_STRING);

            report_add_row(all, 0, tag, r ? r->scans : 0, r ? r->clicks : 0,
                           r ? r->uniques : 0);
        }
    }
    for (i = 0; i < all->nelts; i++) {
        qrt_report_row_t *r = &APR_ARRAY_IDX(all, i, qrt_report_row_t);
        report_co_group *g = apr_hash_get(c.groups, type == QRT_REPORT_DATE
                                          ? apr_psprintf(c.p, "%" APR_INT64_T_FMT, r->id)
                                          : r->key, APR_HASH_KEY_STRING);
        apr_int64_t scans = r->scans, clicks = r->clicks, uniques = r->uniques;

        if (g) {
            scans = scans > g->scans ? scans - g->scans : 0;
            clicks = clicks > g->clicks ? clicks - g->clicks : 0;
            uniques = uniques > g->alone ? uniques - g->alone : 0;
        }
        if (scans + clicks > 0 || type == QRT_REPORT_TAG) {
            report_add_row(rows, r->id, r->key, scans, clicks,
                           uniques < scans + clicks ? uniques : scans + clicks);
        }
    }
    sc->co_others = others->nelts;
    __atomic_add_fetch(&report_co_made, 1, __ATOMIC_RELAXED);
    return APR_SUCCESS;
}

/* ---- the report (6) --------------------------------------------------------- */

static int report_row_cmp_type(const qrt_report_row_t *x, const qrt_report_row_t *y,
                               int type)
{
    apr_int64_t vx = x->scans + x->clicks, vy = y->scans + y->clicks;

    if (type == QRT_REPORT_DATE) {
        return x->id < y->id ? -1 : x->id > y->id;
    }
    if (vx != vy) {
        return vx > vy ? -1 : 1;
    }
    if (type == QRT_REPORT_NAME) {
        return x->id < y->id ? -1 : x->id > y->id;
    }
    if (!*x->key || !*y->key) {
        return (!*x->key) - (!*y->key);         /* null last */
    }
    return strcmp(x->key, y->key);
}

static void report_add_row(apr_array_header_t *rows, apr_int64_t id, const char *key,
                           apr_int64_t scans, apr_int64_t clicks, apr_int64_t uniques)
{
    qrt_report_row_t *r = apr_array_push(rows);

    r->id = id;
    r->key = key;
    r->scans = scans;
    r->clicks = clicks;
    r->uniques = uniques;
}

static void report_from_groups(apr_array_header_t *rows, qrt_agg_groups_t *g, int date)
{
    apr_hash_index_t *hi;

    for (hi = apr_hash_first(g->p, g->groups); hi; hi = apr_hash_next(hi)) {
        qrt_agg_group_t *x = apr_hash_this_val(hi);

        report_add_row(rows, date ? apr_atoi64(x->key) : 0, date ? "" : x->key, x->scans,
                       x->clicks, x->uniques);
    }
}

static apr_status_t report_name(qrt_report_scope_t *sc, apr_int64_t s, apr_int64_t e,
                                apr_array_header_t *rows)
{
    apr_hash_t *per;
    apr_status_t rv = report_per_tracker(sc, s, e, 1, &per);
    int i;

    if (rv != APR_SUCCESS) {
        return rv;
    }
    for (i = 0; i < sc->list->nelts; i++) {
        qrt_report_tracker_t *t = APR_ARRAY_IDX(sc->list, i, qrt_report_tracker_t *);
        qrt_agg_row_t *r = apr_hash_get(per, &t->id, sizeof(t->id));

        report_add_row(rows, t->id, t->name, r ? r->scans : 0, r ? r->clicks : 0,
                       r ? r->uniques : 0);
    }
    return APR_SUCCESS;
}

/* type and tag: counts summed over the trackers of each value, distinct visitors from
 * the account-level aggregates where they hold, else from the visits. */
static apr_status_t report_tracker_values(qrt_report_scope_t *sc, int type,
                                          apr_int64_t s, apr_int64_t e,
                                          apr_array_header_t *rows)
{
    apr_pool_t *p = sc->p;
    apr_hash_t *per = NULL, *sums = apr_hash_make(p), *fast = apr_hash_make(p), *slow = NULL;
    apr_hash_index_t *hi;
    qrt_agg_groups_t *raw = NULL;
    apr_status_t rv;
    int i, j;

    if (!sc->agg_ok) {
        /* all of the account's trackers but a few: by tag, the account's tags less those
         * few trackers'; by type, when every live tracker has the same, the account less
         * them */
        const char *one = NULL;
        apr_array_header_t *got = rows;

        for (i = 0; type == QRT_REPORT_TYPE && i < sc->live->nelts; i++) {
            const char *t = APR_ARRAY_IDX(sc->live, i, qrt_report_tracker_t).type;

            one = !i || (one && !strcmp(one, t)) ? t : NULL;
        }
        if (type == QRT_REPORT_TYPE) {
            got = apr_array_make(p, 1, sizeof(qrt_report_row_t));
        }
        rv = type == QRT_REPORT_TAG ? report_co(sc, type, 0, s, e, rows)
             : one ? report_co(sc, -1, 0, s, e, got) : APR_ENOTIMPL;
        if (rv == APR_SUCCESS && type == QRT_REPORT_TYPE) {
            qrt_report_row_t *x = got->nelts ? &APR_ARRAY_IDX(got, 0, qrt_report_row_t) : NULL;

            report_add_row(rows, 0, one, x ? x->scans : 0, x ? x->clicks : 0,
                           x ? x->uniques : 0);
        }
        if (rv != APR_ENOTIMPL) {
            return rv;
        }
    }
    /* No aggregate gives a value's distinct visitors when !agg_ok (a list of trackers,
     * or an account whose trackers' deletions are not repaired yet): every value's
     * visits and clicks then come from the visits' groups that count its visitors, and
     * the trackers' counters are not read, whose days not sealed cost a probe a tracker. */
    if (sc->agg_ok && (rv = report_per_tracker(sc, s, e, 0, &per)) != APR_SUCCESS) {
        return rv;
    }
    /* Counts: value -> row. */
    for (i = 0; i < sc->list->nelts; i++) {
        qrt_report_tracker_t *t = APR_ARRAY_IDX(sc->list, i, qrt_report_tracker_t *);
        qrt_agg_row_t *r = per ? apr_hash_get(per, &t->id, sizeof(t->id)) : NULL;
        int n = type == QRT_REPORT_TYPE ? 1 : t->tags->nelts;

        for (j = 0; j < n; j++) {
            const char *v = type == QRT_REPORT_TYPE ? t->type
                            : APR_ARRAY_IDX(t->tags, j, qrt_report_tag_t).tag;
            qrt_report_row_t *x = apr_hash_get(sums, v, APR_HASH_KEY_STRING);

            if (!x) {
                x = apr_pcalloc(p, sizeof(*x));
                x->key = v;
                apr_hash_set(sums, v, APR_HASH_KEY_STRING, x);
            }
            if (r) {
                x->scans += r->scans;
                x->clicks += r->clicks;
            }
        }
    }
    /* Distinct visitors. */
    if (type == QRT_REPORT_TYPE) {
        if (sc->agg_ok && apr_hash_count(sums) == 1) {
            apr_array_header_t *all;

            rv = qrt_store_agg_read_window(sc->db, sc->wp, sc->account_id, QRT_AGG_A, NULL, 0, s, e,
                                      1, &all);
            if (rv != APR_SUCCESS) {
                return report_fail(sc, rv, "summing account aggregates");
            }
            for (hi = apr_hash_first(p, sums); hi; hi = apr_hash_next(hi)) {
                qrt_report_row_t *x = apr_hash_this_val(hi);

                x->uniques = all->nelts
                             ? APR_ARRAY_IDX(all, 0, qrt_agg_row_t).uniques : 0;
                apr_hash_set(fast, x->key, APR_HASH_KEY_STRING, x);
            }
        }
    }
    else if (sc->agg_ok) {
        apr_array_header_t *tags;

        rv = qrt_store_agg_read_window(sc->db, sc->wp, sc->account_id, QRT_AGG_G, NULL, 0, s, e, 1,
                                  &tags);
        if (rv != APR_SUCCESS) {
            return report_fail(sc, rv, "summing tag aggregates");
        }
        for (hi = apr_hash_first(p, sums); hi; hi = apr_hash_next(hi)) {
            qrt_report_row_t *x = apr_hash_this_val(hi);

            if (!apr_hash_get(sc->state.dirty_tags, x->key, APR_HASH_KEY_STRING)) {
                apr_hash_set(fast, x->key, APR_HASH_KEY_STRING, x);
            }
        }
        for (i = 0; i < tags->nelts; i++) {
            qrt_agg_row_t *r = &APR_ARRAY_IDX(tags, i, qrt_agg_row_t);
            qrt_report_row_t *x = apr_hash_get(fast, r->val, APR_HASH_KEY_STRING);

            if (x) {
                x->uniques = r->uniques;
            }
        }
    }
    for (hi = apr_hash_first(p, sums); hi; hi = apr_hash_next(hi)) {
        qrt_report_row_t *x = apr_hash_this_val(hi);

        if (!apr_hash_get(fast, x->key, APR_HASH_KEY_STRING)
            && (!per || x->scans + x->clicks > 0)) {
            if (!slow) {
                slow = apr_hash_make(p);
            }
            apr_hash_set(slow, x->key, APR_HASH_KEY_STRING, x);
        }
    }
    if (slow) {
        rv = report_raw_groups(sc, type, 0, type == QRT_REPORT_TAG ? slow : NULL, s, e,
                               &raw);
        if (rv != APR_SUCCESS) {
            return rv;
        }
        for (hi = apr_hash_first(p, slow); hi; hi = apr_hash_next(hi)) {
            qrt_report_row_t *x = apr_hash_this_val(hi);
            qrt_agg_group_t *g = qrt_agg_groups_get(raw, x->key);

            x->uniques = g ? g->uniques : 0;
            if (!per) {
                x->scans = g ? g->scans : 0;
                x->clicks = g ? g->clicks : 0;
            }
        }
    }
    for (hi = apr_hash_first(p, sums); hi; hi = apr_hash_next(hi)) {
        qrt_report_row_t *x = apr_hash_this_val(hi);

        report_add_row(rows, 0, x->key, x->scans, x->clicks, x->uniques);
    }
    return APR_SUCCESS;
}

/* By date over listed trackers, [s, e] counted from their visits: the account less the
 * trackers left out where it may be, else the listed ones' visits. */
static apr_status_t report_date_counted(qrt_report_scope_t *sc, apr_int64_t s, apr_int64_t e,
                                        int offset, apr_array_header_t *rows)
{
    qrt_agg_groups_t *g;
    apr_status_t rv = report_co(sc, QRT_REPORT_DATE, offset, s, e, rows);

    if (rv != APR_ENOTIMPL) {
        return rv;
    }
    rv = report_raw_groups(sc, QRT_REPORT_DATE, offset, NULL, s, e, &g);
    if (rv == APR_SUCCESS) {
        report_from_groups(rows, g, 1);
    }
    return rv;
}

/* A local day's row of a report by date over a list, kept in the server's table of kept
 * days (qrt_kept_used: shared by its children) under the seals of the UTC days it spans:
 * while they stay,
 * none of its visits changed, so neither did its visits, clicks and distinct visitors
 * (one group a day: a day's count is the same in any window that holds it whole). The
 * key is the list's (a hash of the account, the offset and the sorted tracker ids) and
 * the day; check, a second hash of the same, tells two lists whose first hashes meet. */
#define REPORT_KEPT_RUN 8           /* kept days in a row the window is cut around, at least */
#define REPORT_KEPT_MAX 4000        /* whole days of a window kept, at most */

typedef struct {
    apr_int64_t scans, clicks, uniques, check;
} report_kept_day;

static apr_uint64_t report_kept_mix(apr_uint64_t h, apr_uint64_t v)
{
    h = (h ^ v) * APR_UINT64_C(0x9E3779B97F4A7C15);
    return h ^ (h >> 31);
}

static int report_id_cmp(const void *a, const void *b)
{
    apr_int64_t x = *(const apr_int64_t *)a, y = *(const apr_int64_t *)b;

    return x < y ? -1 : x > y;
}

/* The list's two hashes (above). */
static void report_kept_hashes(const qrt_report_scope_t *sc, int offset, apr_uint64_t *h1,
                               apr_uint64_t *h2)
{
    apr_int64_t *ids = apr_palloc(sc->p, ((apr_size_t)sc->list->nelts + 1) * sizeof(*ids));
    int i;

    for (i = 0; i < sc->list->nelts; i++) {
        ids[i] = APR_ARRAY_IDX(sc->list, i, qrt_report_tracker_t *)->id;
    }
    qsort(ids, (size_t)sc->list->nelts, sizeof(*ids), report_id_cmp);
    *h1 = report_kept_mix(APR_UINT64_C(0x51ED270B27A1C6F5), (apr_uint64_t)sc->account_id);
    *h2 = report_kept_mix(APR_UINT64_C(0x2545F4914F6CDD1D), (apr_uint64_t)sc->account_id);
    *h1 = report_kept_mix(*h1, (apr_uint64_t)(apr_int64_t)offset);
    *h2 = report_kept_mix(*h2, (apr_uint64_t)(apr_int64_t)offset + 1);
    for (i = 0; i < sc->list->nelts; i++) {
        *h1 = report_kept_mix(*h1, (apr_uint64_t)ids[i]);
        *h2 = report_kept_mix(*h2 + 0x632BE59BD9B4E019, (apr_uint64_t)ids[i] * 3 + 1);
    }
    *h2 += (apr_uint64_t)sc->list->nelts;
}

/* Report by date over a list whose window holds REPORT_KEPT_RUN whole local days or more:
 * the longest run of them kept (above) is taken as kept and the rest of the window counted,
 * or the window counted whole when no such run is kept; then every whole day counted whose
 * UTC days are sealed is kept. APR_ENOTIMPL when this does not apply (no cache, a window
 * too short or too long). */
static apr_status_t report_date_kept(qrt_report_scope_t *sc, apr_int64_t s, apr_int64_t e,
                                     int offset, apr_array_header_t *rows)
{
    qrt_kept_t *table = qrt_kept_used();
    const apr_int64_t far = (apr_int64_t)1 << 40;
    apr_array_header_t *sealed;
    apr_int64_t a, b, u0, u1, d, *dayseal, *useal;
    report_kept_day *kept;
    apr_uint64_t h1, h2;
    apr_status_t rv;
    int i, n, c0 = 0, c1 = -1, run0 = 0, start = rows->nelts;

    if (!table || !sc->list->nelts || s > e || s <= -far || e >= far) {
        return APR_ENOTIMPL;
    }
    /* the window's whole local days, [a, b] */
    a = qrt_date_day_of(s, offset);
    if (a * QRT_AGG_DAY - offset < s) {
        a++;
    }
    b = qrt_date_day_of(e, offset);
    if ((b + 1) * QRT_AGG_DAY - offset - 1 > e) {
        b--;
    }
    if (b - a + 1 < REPORT_KEPT_RUN || b - a + 1 > REPORT_KEPT_MAX) {
        return APR_ENOTIMPL;
    }
    n = (int)(b - a + 1);
    u0 = qrt_agg_fdiv(a * QRT_AGG_DAY - offset, QRT_AGG_DAY);
    u1 = qrt_agg_fdiv((b + 1) * QRT_AGG_DAY - offset - 1, QRT_AGG_DAY);
    rv = qrt_store_agg_day_seals(sc->db, sc->p, sc->account_id, u0, u1, &sealed);
    if (rv != APR_SUCCESS) {
        return report_fail(sc, rv, "reading the days' seals");
    }
    useal = apr_pcalloc(sc->p, (apr_size_t)(u1 - u0 + 1) * sizeof(*useal));
    for (i = 0; i < sealed->nelts; i++) {
        const qrt_agg_day_seal_t *x = &APR_ARRAY_IDX(sealed, i, qrt_agg_day_seal_t);

        if (x->day >= u0 && x->day <= u1) {
            useal[x->day - u0] = x->seal;
        }
    }
    report_kept_hashes(sc, offset, &h1, &h2);
    dayseal = apr_pcalloc(sc->p, (apr_size_t)n * sizeof(*dayseal));
    kept = apr_pcalloc(sc->p, (apr_size_t)n * sizeof(*kept));
    for (i = 0; i < n; i++) {
        apr_int64_t lo = (a + i) * QRT_AGG_DAY - offset;
        apr_int64_t sa = useal[qrt_agg_fdiv(lo, QRT_AGG_DAY) - u0];
        apr_int64_t sb = useal[qrt_agg_fdiv(lo + QRT_AGG_DAY - 1, QRT_AGG_DAY) - u0];

        /* (a day not sealed is counted, not looked up) */
        if (sa && sb) {
            /* (both days' seals, the same day's twice at offset 0: mixed in turn) */
            dayseal[i] = (apr_int64_t)(report_kept_mix(report_kept_mix(h1, (apr_uint64_t)sa),
                                                       (apr_uint64_t)sb) | 1);
        }
    }
    for (i = 0; i < n; i++) {
        int64_t v[4];

        if (dayseal[i] && qrt_kept_get(table, h1, a + i, dayseal[i], v)
            && v[3] == (apr_int64_t)h2) {
            kept[i].scans = v[0];
            kept[i].clicks = v[1];
            kept[i].uniques = v[2];
            kept[i].check = v[3];
        }
        /* the longest run of kept days */
        if (!kept[i].check) {
            run0 = i + 1;
        }
        else if (i - run0 > c1 - c0) {
            c0 = run0;
            c1 = i;
        }
    }
    if (c1 - c0 + 1 < REPORT_KEPT_RUN) {
        c0 = 0;
        c1 = -1;
        rv = report_date_counted(sc, s, e, offset, rows);
    }
    else {
        rv = APR_SUCCESS;
        if (s < (a + c0) * QRT_AGG_DAY - offset) {
            rv = report_date_counted(sc, s, (a + c0) * QRT_AGG_DAY - offset - 1, offset, rows);
        }
        if (rv == APR_SUCCESS && (a + c1 + 1) * QRT_AGG_DAY - offset <= e) {
            rv = report_date_counted(sc, (a + c1 + 1) * QRT_AGG_DAY - offset, e, offset, rows);
        }
        sc->kept_days += c1 - c0 + 1;
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    /* the whole sealed days counted now, kept (a day of no visits as zeros) */
    for (i = 0; i < n; i++) {
        if (dayseal[i] && (i < c0 || i > c1)) {
            kept[i].scans = kept[i].clicks = kept[i].uniques = 0;
            kept[i].check = (apr_int64_t)h2;
        }
        else {
            dayseal[i] = 0;
        }
    }
    for (i = start; i < rows->nelts; i++) {
        const qrt_report_row_t *r = &APR_ARRAY_IDX(rows, i, qrt_report_row_t);

        d = r->id - a;
        if (d >= 0 && d < n && dayseal[d]) {
            kept[d].scans = r->scans;
            kept[d].clicks = r->clicks;
            kept[d].uniques = r->uniques;
        }
    }
    for (i = 0; i < n; i++) {
        if (dayseal[i]) {
            const int64_t v[4] = { kept[i].scans, kept[i].clicks, kept[i].uniques,
                                   kept[i].check };

            qrt_kept_put(table, h1, a + i, dayseal[i], v);
        }
    }
    /* the kept run's rows */
    for (i = c0; i <= c1; i++) {
        if (kept[i].scans || kept[i].clicks) {
            report_add_row(rows, a + i, "", kept[i].scans, kept[i].clicks, kept[i].uniques);
        }
    }
    return APR_SUCCESS;
}

static apr_status_t report_date(qrt_report_scope_t *sc, apr_int64_t s, apr_int64_t e,
                                int offset, apr_array_header_t *rows)
{
    apr_array_header_t *days;
    apr_status_t rv = APR_ENOTIMPL;
    int i;

    if (sc->agg_ok) {
        rv = qrt_store_agg_read_days(sc->db, sc->p, sc->account_id, s, e, offset, &days);
        if (rv != APR_SUCCESS && rv != APR_ENOTIMPL) {
            return report_fail(sc, rv, "summing day aggregates");
        }
    }
    if (rv == APR_SUCCESS) {
        for (i = 0; i < days->nelts; i++) {
            qrt_agg_day_t *d = &APR_ARRAY_IDX(days, i, qrt_agg_day_t);

            report_add_row(rows, d->day, "", d->scans, d->clicks, d->uniques);
        }
        return APR_SUCCESS;
    }
    rv = report_date_kept(sc, s, e, offset, rows);
    return rv != APR_ENOTIMPL ? rv : report_date_counted(sc, s, e, offset, rows);
}

static apr_status_t report_values(qrt_report_scope_t *sc, int type, apr_int64_t s,
                                  apr_int64_t e, apr_array_header_t *rows)
{
    static const int kinds[] = { 0, 0, 0, 0, QRT_AGG_B, QRT_AGG_Y, QRT_AGG_C };
    apr_array_header_t *list;
    qrt_agg_groups_t *g;
    apr_status_t rv;
    int i;

    if (sc->agg_ok) {
        rv = qrt_store_agg_read_window(sc->db, sc->wp, sc->account_id, kinds[type], NULL, 0, s, e,
                                  1, &list);
        if (rv != APR_SUCCESS) {
            return report_fail(sc, rv, "summing report aggregates");
        }
        for (i = 0; i < list->nelts; i++) {
            qrt_agg_row_t *r = &APR_ARRAY_IDX(list, i, qrt_agg_row_t);

            report_add_row(rows, 0, r->val, r->scans, r->clicks, r->uniques);
        }
        return APR_SUCCESS;
    }
    rv = report_co(sc, type, 0, s, e, rows);
    if (rv != APR_ENOTIMPL) {
        return rv;
    }
    rv = report_raw_groups(sc, type, 0, NULL, s, e, &g);
    if (rv == APR_SUCCESS) {
        report_from_groups(rows, g, 0);
    }
    return rv;
}

/* ---- where visits went (schema 25) --------------------------------------------- */

static void report_dest_visit(void *ctx, apr_int64_t dest_id, int click, apr_int64_t visitor)
{
    char key[24] = "", who[24];

    if (dest_id > 0) {
        apr_snprintf(key, sizeof(key), "%" APR_INT64_T_FMT, dest_id);
    }
    apr_snprintf(who, sizeof(who), "%" APR_INT64_T_FMT, visitor);
    qrt_agg_groups_add(ctx, key, click, who);
}

/* Group x counted into *into too (its visitors once each): *into is x when unset.
 * 0, or -1 without memory. */
static int report_dest_merge(qrt_agg_group_t **into, qrt_agg_group_t *x)
{
    if (!*into) {
        *into = x;
        return 0;
    }
    return qrt_agg_group_merge(*into, x);
}

/* report=destination over all of the account's trackers, from the account's aggregates
 * (every visit) less the visits that have a destination (read alone): the row of
 * none has the visitors of the window but those whose every visit in it went to a
 * destination. APR_ENOTIMPL when a destination has no URL any more (purged): its
 * visits count as none's, read from the visits. */
static apr_status_t report_destination_agg(qrt_report_scope_t *sc, apr_int64_t s,
                                           apr_int64_t e, apr_array_header_t *rows)
{
    apr_array_header_t *all, *groups;
    apr_int64_t scans = 0, clicks = 0, uniques = 0, only = 0;
    apr_status_t rv;
    int i, first = rows->nelts;

    rv = qrt_store_agg_read_window(sc->db, sc->wp, sc->account_id, QRT_AGG_A, NULL, 0, s, e, 1,
                                   &all);
    if (rv != APR_SUCCESS) {
        return report_fail(sc, rv, "summing account aggregates");
    }
    if (all->nelts) {
        qrt_agg_row_t *a = &APR_ARRAY_IDX(all, 0, qrt_agg_row_t);

        scans = a->scans;
        clicks = a->clicks;
        uniques = a->uniques;
    }
    rv = qrt_store_visits_dest_groups(sc->db, sc->p, sc->account_id, s, e, &groups, &only);
    if (rv != APR_SUCCESS) {
        return report_fail(sc, rv, "reading where visits went");
    }
    for (i = 0; i < groups->nelts; i++) {
        qrt_visit_dest_group_t *g = &APR_ARRAY_IDX(groups, i, qrt_visit_dest_group_t);
        const char *url = NULL;

        rv = qrt_store_visits_destination_url(sc->db, sc->p, g->dest_id, &url);
        if (rv != APR_SUCCESS) {
            return report_fail(sc, rv, "reading where visits went");
        }
        if (!url) {
            rows->nelts = first;
            return APR_ENOTIMPL;
        }
        report_add_row(rows, 0, url, g->scans, g->clicks, g->uniques);
        scans -= g->scans;
        clicks -= g->clicks;
    }
    if (scans + clicks > 0) {
        report_add_row(rows, 0, "", scans, clicks, uniques - only);
    }
    return APR_SUCCESS;
}

/* report=destination over listed trackers (schema 61): their visits in the window counted
 * as one group (from their blocks, as any report over them reads them), less the visits
 * that went to a destination, read alone along visits_tracker_dest; the row of none has the
 * visitors of the window but those whose every visit in it went to a destination, each of
 * the destinations' visitors looked up along visits_visitor. APR_ENOTIMPL (rows as they
 * were) when the destinations' visits pass a sixteenth of all (and 4,096), past which
 * reading every visit costs less than a look-up for each of their visitors, or when a
 * destination has no URL any more (purged: its visits count as none's). */
typedef struct {
    qrt_agg_groups_t *g;            /* destination id -> its visits and visitors */
    qrt_agg_vset_t *seen;           /* every destination's visitors ... */
    apr_array_header_t *who;        /* ... each once, as numbers */
} report_dest_listed_ctx;

#define REPORT_DEST_LOOKUPS 4096    /* the destinations' visits read alone, at least */

static apr_int64_t report_dest_most;        /* (tests: the bound itself; 0, the rule) */

static apr_int64_t report_trim_every = QRT_REPORT_TRIM_VISITS;
static apr_int64_t report_trim_sum;         /* (atomic: the visits counted since) */

int qrt_report_trim_due(apr_int64_t counted)
{
    apr_int64_t every = __atomic_load_n(&report_trim_every, __ATOMIC_RELAXED), sum;

    if (counted <= 0) {
        return 0;
    }
    sum = __atomic_add_fetch(&report_trim_sum, counted, __ATOMIC_RELAXED);
    while (sum >= every) {
        /* (the one that takes a mark's worth off the sum trims; a request of more
         * than one mark's worth trims once, the rest dropped) */
        if (__atomic_compare_exchange_n(&report_trim_sum, &sum, sum % every, 0,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            return 1;
        }
    }
    return 0;
}

void qrt_report_trim_every(apr_int64_t visits)
{
    __atomic_store_n(&report_trim_every, visits > 0 ? visits : QRT_REPORT_TRIM_VISITS,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&report_trim_sum, 0, __ATOMIC_RELAXED);
}

void qrt_report_dest_lookups(apr_int64_t most)
{
    report_dest_most = most;
}

static void report_dest_listed_visit(void *ctx, apr_int64_t dest_id, int click,
                                     apr_int64_t visitor)
{
    report_dest_listed_ctx *c = ctx;
    char key[24], who[24];

    apr_snprintf(key, sizeof(key), "%" APR_INT64_T_FMT, dest_id);
    apr_snprintf(who, sizeof(who), "%" APR_INT64_T_FMT, visitor);
    qrt_agg_groups_add(c->g, key, click, who);
    switch (qrt_agg_vset_add(c->seen, who)) {
    case 1:
        APR_ARRAY_PUSH(c->who, apr_int64_t) = visitor;
        break;
    case -1:
        c->g->nomem = 1;
        break;
    }
}

static apr_status_t report_destination_listed(qrt_report_scope_t *sc, apr_int64_t s,
                                              apr_int64_t e, apr_array_header_t *rows)
{
    apr_pool_t *p = sc->p, *vp;
    apr_hash_t *listed = apr_hash_make(p);
    apr_hash_index_t *hi;
    qrt_agg_groups_t *all;
    qrt_agg_group_t *x;
    report_dest_listed_ctx c;
    apr_int64_t scans, clicks, uniques, most, only = 0, n = 0, *ids;
    apr_status_t rv;
    int i, j, first = rows->nelts;

    rv = report_raw_groups(sc, -1, 0, NULL, s, e, &all);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    x = qrt_agg_groups_get(all, "");
    scans = x ? x->scans : 0;
    clicks = x ? x->clicks : 0;
    uniques = x ? x->uniques : 0;
    most = (scans + clicks) / 16;
    if (most < REPORT_DEST_LOOKUPS) {
        most = REPORT_DEST_LOOKUPS;
    }
    if (report_dest_most) {
        most = report_dest_most;
    }
    c.g = qrt_agg_groups_make(p);
    c.seen = qrt_agg_vset_make(p);
    c.who = apr_array_make(p, 64, sizeof(apr_int64_t));
    ids = apr_palloc(p, (apr_size_t)(sc->list->nelts + 1) * sizeof(*ids));
    for (i = 0; i < sc->list->nelts; i++) {
        qrt_report_tracker_t *t = APR_ARRAY_IDX(sc->list, i, qrt_report_tracker_t *);

        ids[i] = t->id;
        apr_hash_set(listed, &t->id, sizeof(t->id), t);
    }
    rv = qrt_store_visits_trackers_dests(sc->db, p, ids, sc->list->nelts, s, e, most,
                                         report_dest_listed_visit, &c, &n);
    sc->counted += n;
    if (rv != APR_SUCCESS) {
        return report_fail(sc, rv, "reading where visits went");
    }
    if (n > most) {
        return APR_ENOTIMPL;
    }
    if (c.g->nomem) {
        return report_fail(sc, APR_ENOMEM, "counting distinct visitors");
    }
    /* the destinations' visitors with no visit without one on a listed tracker */
    apr_pool_create(&vp, p);
    for (i = 0; i < c.who->nelts; i++) {
        apr_array_header_t *trackers;
        int other = 0;

        rv = qrt_store_visits_visitor_rest(sc->db, vp, APR_ARRAY_IDX(c.who, i, apr_int64_t), s,
                                           e, &trackers);
        if (rv != APR_SUCCESS) {
            apr_pool_destroy(vp);
            return report_fail(sc, rv, "reading where visits went");
        }
        for (j = 0; j < trackers->nelts && !other; j++) {
            other = apr_hash_get(listed, &APR_ARRAY_IDX(trackers, j, apr_int64_t),
                                 sizeof(apr_int64_t)) != NULL;
        }
        only += !other;
        apr_pool_clear(vp);
    }
    apr_pool_destroy(vp);
    for (hi = apr_hash_first(p, c.g->groups); hi; hi = apr_hash_next(hi)) {
        qrt_agg_group_t *d = apr_hash_this_val(hi);
        const char *url = NULL;

        rv = qrt_store_visits_destination_url(sc->db, p, apr_atoi64(d->key), &url);
        if (rv != APR_SUCCESS) {
            return report_fail(sc, rv, "reading where visits went");
        }
        if (!url) {
            rows->nelts = first;
            return APR_ENOTIMPL;
        }
        report_add_row(rows, 0, url, d->scans, d->clicks, d->uniques);
        scans -= d->scans;
        clicks -= d->clicks;
    }
    if (scans + clicks > 0) {
        report_add_row(rows, 0, "", scans, clicks, uniques - only);
    }
    sc->dest_alone = 1;
    return APR_SUCCESS;
}

static apr_status_t report_destination(qrt_report_scope_t *sc, apr_int64_t s, apr_int64_t e,
                                       apr_array_header_t *rows)
{
    qrt_agg_groups_t *g;
    qrt_agg_group_t *none = NULL;
    apr_hash_index_t *hi;
    apr_status_t rv;
    int i;

    if (sc->agg_ok) {
        rv = report_destination_agg(sc, s, e, rows);
        if (rv != APR_ENOTIMPL) {
            return rv;
        }
    }
    else {
        rv = report_destination_listed(sc, s, e, rows);
        if (rv != APR_ENOTIMPL) {
            return rv;
        }
    }
    g = qrt_agg_groups_make(sc->p);
    for (i = 0; i < sc->list->nelts; i++) {
        const qrt_report_tracker_t *t = APR_ARRAY_IDX(sc->list, i, qrt_report_tracker_t *);

        rv = qrt_store_visits_destinations(sc->db, sc->p, t->id, s, e, report_dest_visit, g);
        if (rv != APR_SUCCESS) {
            return report_fail(sc, rv, "reading where visits went");
        }
    }
    sc->raw_trackers += sc->list->nelts;
    if (g->nomem) {
        return report_fail(sc, APR_ENOMEM, "counting distinct visitors");
    }
    for (hi = apr_hash_first(sc->p, g->groups); hi; hi = apr_hash_next(hi)) {
        qrt_agg_group_t *x = apr_hash_this_val(hi);
        const char *url = NULL;

        sc->counted += x->scans + x->clicks;
        if (!*x->key) {
            if (report_dest_merge(&none, x) != 0) {
                return report_fail(sc, APR_ENOMEM, "counting distinct visitors");
            }
            continue;
        }
        rv = qrt_store_visits_destination_url(sc->db, sc->p, apr_atoi64(x->key), &url);
        if (rv != APR_SUCCESS) {
            return report_fail(sc, rv, "reading where visits went");
        }
        if (!url) {
            /* purged since its visits were read: they have none now */
            if (report_dest_merge(&none, x) != 0) {
                return report_fail(sc, APR_ENOMEM, "counting distinct visitors");
            }
            continue;
        }
        report_add_row(rows, 0, url, x->scans, x->clicks, x->uniques);
    }
    if (none) {
        report_add_row(rows, 0, "", none->scans, none->clicks, none->uniques);
    }
    return APR_SUCCESS;
}

/* qsort has no context: rows carry their type through a wrapper per type. */
#define REPORT_CMP(T) \
    static int report_cmp_##T(const void *a, const void *b) \
    { \
        return report_row_cmp_type(a, b, QRT_REPORT_##T); \
    }
REPORT_CMP(NAME)
REPORT_CMP(DATE)
REPORT_CMP(TYPE)

apr_status_t qrt_report_rows(qrt_report_scope_t *sc, int type, apr_int64_t s,
                             apr_int64_t e, int offset, apr_array_header_t **out)
{
    apr_array_header_t *rows = apr_array_make(sc->p, 16, sizeof(qrt_report_row_t));
    apr_status_t rv;

    *out = rows;
    switch (type) {
    case QRT_REPORT_NAME:
        rv = report_name(sc, s, e, rows);
        break;
    case QRT_REPORT_TYPE:
    case QRT_REPORT_TAG:
        rv = report_tracker_values(sc, type, s, e, rows);
        break;
    case QRT_REPORT_DATE:
        rv = report_date(sc, s, e, offset, rows);
        break;
    case QRT_REPORT_BROWSER:
    case QRT_REPORT_CITY:
    case QRT_REPORT_COUNTRY:
        rv = report_values(sc, type, s, e, rows);
        break;
    case QRT_REPORT_DESTINATION:
        rv = report_destination(sc, s, e, rows);
        break;
    default:
        return report_fail(sc, APR_EINVAL, "choosing the report type");
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    /* Every type but name and date sorts by visits, then key. */
    qsort(rows->elts, rows->nelts, sizeof(qrt_report_row_t),
          type == QRT_REPORT_NAME ? report_cmp_NAME
          : type == QRT_REPORT_DATE ? report_cmp_DATE : report_cmp_TYPE);
    return APR_SUCCESS;
}

/* ---- the tag crosstab (7) -------------------------------------------------- */

static int report_strcmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The values of dimension dim among t's tags. */
static apr_array_header_t *report_dim_values(apr_pool_t *p, const qrt_report_tracker_t *t,
                                             const char *dim)
{
    apr_array_header_t *out = apr_array_make(p, 2, sizeof(const char *));
    int i;

    for (i = 0; i < t->tags->nelts; i++) {
        qrt_report_tag_t *g = &APR_ARRAY_IDX(t->tags, i, qrt_report_tag_t);

        if (g->dimension && !strcmp(g->dimension, dim)) {
            APR_ARRAY_PUSH(out, const char *) = g->value;
        }
    }
    return out;
}

/* The sorted distinct values, and value -> index (stored as index + 1). */
static apr_array_header_t *report_index(apr_pool_t *p, apr_hash_t *set, apr_hash_t *idx)
{
    apr_array_header_t *list = apr_array_make(p, apr_hash_count(set) + 1,
                                              sizeof(const char *));
    apr_hash_index_t *hi;
    int i;

    for (hi = apr_hash_first(p, set); hi; hi = apr_hash_next(hi)) {
        APR_ARRAY_PUSH(list, const char *) = apr_hash_this_key(hi);
    }
    qsort(list->elts, list->nelts, sizeof(const char *), report_strcmp);
    for (i = 0; i < list->nelts; i++) {
        apr_hash_set(idx, APR_ARRAY_IDX(list, i, const char *), APR_HASH_KEY_STRING,
                     (void *)(apr_uintptr_t)(i + 1));
    }
    return list;
}

/* The index of a value of report_index. */
static int report_at(apr_hash_t *idx, apr_array_header_t *list, int i)
{
    return (int)(apr_uintptr_t)apr_hash_get(idx, APR_ARRAY_IDX(list, i, const char *),
                                            APR_HASH_KEY_STRING) - 1;
}

apr_status_t qrt_report_crosstab(qrt_report_scope_t *sc, const char *row, const char *col,
                                 apr_int64_t s, apr_int64_t e, qrt_report_crosstab_t *out)
{
    apr_pool_t *p = sc->p;
    apr_hash_t *per, *rset = apr_hash_make(p), *cset = apr_hash_make(p);
    apr_hash_t *ridx = apr_hash_make(p), *cidx = apr_hash_make(p);
    apr_array_header_t **rv, **cv;
    apr_status_t st;
    int i, j, k, nr, nc, n = sc->list->nelts;

    memset(out, 0, sizeof(*out));
    rv = apr_pcalloc(p, (n + 1) * sizeof(*rv));
    cv = apr_pcalloc(p, (n + 1) * sizeof(*cv));
    for (i = 0; i < n; i++) {
        qrt_report_tracker_t *t = APR_ARRAY_IDX(sc->list, i, qrt_report_tracker_t *);

        rv[i] = report_dim_values(p, t, row);
        cv[i] = report_dim_values(p, t, col);
        if (rv[i]->nelts && cv[i]->nelts) {
            for (j = 0; j < rv[i]->nelts; j++) {
                apr_hash_set(rset, APR_ARRAY_IDX(rv[i], j, const char *),
                             APR_HASH_KEY_STRING, "");
            }
            for (j = 0; j < cv[i]->nelts; j++) {
                apr_hash_set(cset, APR_ARRAY_IDX(cv[i], j, const char *),
                             APR_HASH_KEY_STRING, "");
            }
        }
    }
    /* Bounded before anything is read or allocated in proportion to the matrix. */
    out->nrows = nr = (int)apr_hash_count(rset);
    out->ncols = nc = (int)apr_hash_count(cset);
    if (nr > QRT_REPORT_XT_MAX || nc > QRT_REPORT_XT_MAX) {
        return APR_ENOSPC;
    }
    if ((st = report_per_tracker(sc, s, e, 0, &per)) != APR_SUCCESS) {
        return st;
    }
    out->rows = report_index(p, rset, ridx);
    out->cols = report_index(p, cset, cidx);
    /* At most QRT_REPORT_XT_MAX^2 counts: 2 MB. */
    out->matrix = apr_pcalloc(p, ((apr_size_t)nr * nc + 1) * sizeof(*out->matrix));
    out->row_totals = apr_pcalloc(p, (nr + 1) * sizeof(*out->row_totals));
    out->col_totals = apr_pcalloc(p, (nc + 1) * sizeof(*out->col_totals));
    for (i = 0; i < n; i++) {
        qrt_report_tracker_t *t = APR_ARRAY_IDX(sc->list, i, qrt_report_tracker_t *);
        qrt_agg_row_t *x = apr_hash_get(per, &t->id, sizeof(t->id));
        apr_int64_t visits = x ? x->scans + x->clicks : 0;

        if (!rv[i]->nelts || !cv[i]->nelts || !visits) {
            continue;
        }
        out->total += visits;
        for (j = 0; j < rv[i]->nelts; j++) {
            int ri = report_at(ridx, rv[i], j);

            out->row_totals[ri] += visits;
            for (k = 0; k < cv[i]->nelts; k++) {
                out->matrix[(apr_size_t)ri * nc + report_at(cidx, cv[i], k)] += visits;
            }
        }
        for (k = 0; k < cv[i]->nelts; k++) {
            out->col_totals[report_at(cidx, cv[i], k)] += visits;
        }
    }
    return APR_SUCCESS;
}

/* ---- portfolio KPIs (8) ---------------------------------------------------- */

static apr_status_t dash_period_load(qrt_report_scope_t *sc, qrt_report_period_t *pd,
                                     apr_hash_t **per, report_lv_daily *daily)
{
    apr_int64_t s = pd->d0 * QRT_AGG_DAY, e = (pd->d1 + 1) * QRT_AGG_DAY - 1;
    apr_array_header_t *co;
    apr_hash_index_t *hi;
    apr_status_t rv = report_per_tracker(sc, s, e, 0, per);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    for (hi = apr_hash_first(sc->p, *per); hi; hi = apr_hash_next(hi)) {
        qrt_agg_row_t *r = apr_hash_this_val(hi);

        pd->scans += r->scans;
        pd->clicks += r->clicks;
        pd->active += r->scans + r->clicks > 0;
    }
    if (sc->agg_ok) {
        apr_array_header_t *all;

        rv = qrt_store_agg_read_window(sc->db, sc->wp, sc->account_id, QRT_AGG_A, NULL, 0, s, e,
                                  1, &all);
        if (rv != APR_SUCCESS) {
            return report_fail(sc, rv, "summing account aggregates");
        }
        pd->uniques = all->nelts ? APR_ARRAY_IDX(all, 0, qrt_agg_row_t).uniques : 0;
    }
    else if (pd->scans + pd->clicks > 0
             && (rv = report_co(sc, -1, 0, s, e, co = apr_array_make(sc->p, 1,
                                                                      sizeof(qrt_report_row_t))))
                != APR_ENOTIMPL) {
        /* all the account's trackers but a few, whose visits are few */
        if (rv != APR_SUCCESS) {
            return rv;
        }
        pd->uniques = co->nelts ? APR_ARRAY_IDX(co, 0, qrt_report_row_t).uniques : 0;
    }
    else if (pd->scans + pd->clicks > 0 && sc->list->nelts <= QRT_AGG_LISTED_MAX) {
        /* Listed trackers: their blocks of visits as the child keeps them (as a report
         * over them reads them), which give the period's series of days too; without
         * them (no cache, too many visitors), COUNT(DISTINCT) in the database for up to
         * 64 trackers, no visit row transferred. */
        qrt_agg_groups_t *g = qrt_agg_groups_make(sc->p);
        qrt_agg_group_t *x;
        apr_int64_t ids[QRT_AGG_RAW_IDS];
        int i;

        rv = report_lv_groups(sc, apr_array_copy(sc->p, sc->list), -1, 0, NULL, s, e, g,
                              daily);
        if (rv == APR_SUCCESS) {
            x = qrt_agg_groups_get(g, "");
            pd->uniques = x ? x->uniques : 0;
            return APR_SUCCESS;
        }
        if (rv != APR_ENOTIMPL) {
            return report_fail(sc, rv, "grouping visits");
        }
        if (sc->list->nelts > QRT_AGG_RAW_IDS) {
            /* (more than a statement takes: read a tracker at a time) */
            if ((rv = report_raw_groups(sc, -1, 0, NULL, s, e, &g)) != APR_SUCCESS) {
                return rv;
            }
            x = qrt_agg_groups_get(g, "");
            pd->uniques = x ? x->uniques : 0;
            return APR_SUCCESS;
        }
        for (i = 0; i < sc->list->nelts; i++) {
            ids[i] = APR_ARRAY_IDX(sc->list, i, qrt_report_tracker_t *)->id;
        }
        rv = qrt_store_agg_read_raw_uniques(sc->db, sc->p, ids, sc->list->nelts, s, e,
                                       &pd->uniques);
        if (rv != APR_SUCCESS) {
            return report_fail(sc, rv, "counting distinct visitors");
        }
    }
    else if (pd->scans + pd->clicks > 0) {
        qrt_agg_groups_t *g;
        qrt_agg_group_t *x;

        if ((rv = report_raw_groups(sc, -1, 0, NULL, s, e, &g)) != APR_SUCCESS) {
            return rv;
        }
        x = qrt_agg_groups_get(g, "");
        pd->uniques = x ? x->uniques : 0;
    }
    return APR_SUCCESS;
}

static int dash_top_cmp(const void *a, const void *b)
{
    const qrt_report_top_t *x = a, *y = b;
    apr_int64_t vx = x->scans + x->clicks, vy = y->scans + y->clicks;

    if (vx != vy) {
        return vx > vy ? -1 : 1;
    }
    return x->id < y->id ? -1 : x->id > y->id;
}

apr_status_t qrt_report_dashboard(qrt_report_scope_t *sc, apr_int64_t d0, apr_int64_t d1,
                                  int compare, qrt_report_dashboard_t *out)
{
    apr_pool_t *p = sc->p;
    apr_int64_t len = d1 - d0 + 1;
    apr_array_header_t *daily, *minus, *top = apr_array_make(p, 16, sizeof(qrt_report_top_t));
    apr_hash_t *per, *prev_per;
    report_lv_daily days;
    apr_status_t rv;
    int i;

    memset(out, 0, sizeof(*out));
    out->cur.d0 = d0;
    out->cur.d1 = d1;
    out->scans = apr_pcalloc(p, len * sizeof(*out->scans));
    out->clicks = apr_pcalloc(p, len * sizeof(*out->clicks));
    days.d0 = d0;
    days.ndays = len;
    days.scans = out->scans;
    days.clicks = out->clicks;
    days.filled = 0;
    if ((rv = dash_period_load(sc, &out->cur, &per, &days)) != APR_SUCCESS) {
        return rv;
    }
    out->prev.d1 = d0 - 1;
    out->prev.d0 = out->prev.d1 - len + 1;
    if (compare && (rv = dash_period_load(sc, &out->prev, &prev_per, NULL)) != APR_SUCCESS) {
        return rv;
    }
    /* Scans and clicks per day, zero days included: from the blocks the distinct
     * visitors were counted from, else from the aggregates. */
    if (!days.filled) {
        apr_array_header_t *others = report_co_others(sc);

        if (others && others->nelts < sc->list->nelts) {
            /* all of the account's trackers but a few: the account's days less theirs
             * (a row a day each, where the listed trackers' would be a row a tracker) */
            rv = qrt_store_agg_read_daily(sc->db, p, sc->account_id, QRT_AGG_A, d0, d1,
                                          &daily);
            if (rv == APR_SUCCESS) {
                rv = qrt_store_agg_read_daily_listed(sc->db, p, sc->account_id,
                                                     (const apr_int64_t *)others->elts,
                                                     others->nelts, d0, d1, &minus);
            }
            for (i = 0; rv == APR_SUCCESS && i < minus->nelts; i++) {
                qrt_agg_daily_t *x = &APR_ARRAY_IDX(minus, i, qrt_agg_daily_t);

                if (x->day >= d0 && x->day <= d1) {
                    out->scans[x->day - d0] -= x->scans;
                    out->clicks[x->day - d0] -= x->clicks;
                }
            }
        }
        else if (!sc->agg_ok && !sc->everything) {
            /* listed trackers: summed by the database, a row a day */
            rv = qrt_store_agg_read_daily_listed(sc->db, p, sc->account_id, report_only(sc),
                                                 sc->list->nelts, d0, d1, &daily);
        }
        else {
            rv = qrt_store_agg_read_daily(sc->db, p, sc->account_id,
                                          sc->agg_ok ? QRT_AGG_A : QRT_AGG_T, d0, d1, &daily);
        }
        if (rv != APR_SUCCESS) {
            return report_fail(sc, rv, "reading daily aggregates");
        }
        for (i = 0; i < daily->nelts; i++) {
            qrt_agg_daily_t *x = &APR_ARRAY_IDX(daily, i, qrt_agg_daily_t);

            if (x->day < d0 || x->day > d1
                || (!sc->agg_ok && sc->everything
                    && !apr_hash_get(sc->covered, &x->grp, sizeof(x->grp)))) {
                continue;
            }
            out->scans[x->day - d0] += x->scans;
            out->clicks[x->day - d0] += x->clicks;
        }
    }
    /* The busiest trackers of the period. */
    for (i = 0; i < sc->list->nelts; i++) {
        qrt_report_tracker_t *t = APR_ARRAY_IDX(sc->list, i, qrt_report_tracker_t *);
        qrt_agg_row_t *r = apr_hash_get(per, &t->id, sizeof(t->id));

        if (r && r->scans + r->clicks > 0) {
            qrt_report_top_t *x = apr_array_push(top);

            x->id = t->id;
            x->name = t->name;
            x->scans = r->scans;
            x->clicks = r->clicks;
        }
    }
    qsort(top->elts, top->nelts, sizeof(qrt_report_top_t), dash_top_cmp);
    if (top->nelts > QRT_REPORT_TOP) {
        top->nelts = QRT_REPORT_TOP;
    }
    out->top = top;
    return APR_SUCCESS;
}

/* ---- a row as the API writes it ------------------------------------------------ */

apr_size_t qrt_report_row_json(char *out, apr_size_t cap, int type, const qrt_report_row_t *r)
{
    const char *key = r->key ? r->key : "";
    apr_size_t klen = strlen(key), need, k;
    char day[QRT_DAY_LEN];

    /* the key quoted at most 6 bytes a byte; the rest: names and five numbers */
    need = QRT_JSON_QUOTED_MAX(klen) + 32 + 5 * 21 + 80;
    if (need >= cap) {
        return need;
    }
    switch (type) {
    case QRT_REPORT_NAME:
        /* (no name: no key, as the JSON object without it) */
        k = (apr_size_t)apr_snprintf(out, cap, "{\"tracker_id\":%" APR_INT64_T_FMT "%s",
                                     r->id, r->key ? ",\"name\":" : "");
        if (r->key) {
            k += qrt_json_quote(out + k, key, klen);
        }
        break;
    case QRT_REPORT_DATE:
        qrt_date_format_day(day, r->id);
        k = (apr_size_t)apr_snprintf(out, cap, "{\"date\":\"%s\"", day);
        break;
    default:
        k = (apr_size_t)apr_snprintf(out, cap, "{\"%s\":", qrt_report_type_name(type));
        if (*key) {
            k += qrt_json_quote(out + k, key, klen);
        }
        else {
            memcpy(out + k, "null", 4);
            k += 4;
        }
        break;
    }
    k += (apr_size_t)apr_snprintf(out + k, cap - k, ",\"visits\":%" APR_INT64_T_FMT
                                  ",\"scans\":%" APR_INT64_T_FMT ",\"clicks\":%"
                                  APR_INT64_T_FMT ",\"unique_visitors\":%" APR_INT64_T_FMT
                                  "}", r->scans + r->clicks, r->scans, r->clicks,
                                  r->uniques);
    return k;
}
