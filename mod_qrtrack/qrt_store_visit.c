/* qrt_store_visit: recording visits with their counters. */
#include <stdlib.h>
#include <string.h>
#include <apr_hash.h>
#include <apr_strings.h>
#include "qrt_store.h"
#include "qrt_store_agg_write.h"

#define VISIT_NARGS 10
#define VISIT_TYPES "llii" "llllll"         /* qrt_db_exec_rows */
#define VISIT_ID_TYPES "lllii" "llllll"     /* the same with the id first (SQLite) */

/* What a batch adds to one tracker's counters. */
typedef struct {
    apr_int64_t tracker_id;
    apr_int64_t scans, clicks, bots, uniques, last;
    apr_int64_t max_id;             /* the newest id (trackers.last_visit_id) */
} visit_counters;

static int visit_counters_cmp(const void *a, const void *b)
{
    apr_int64_t x = ((const visit_counters *)a)->tracker_id;
    apr_int64_t y = ((const visit_counters *)b)->tracker_id;

    return x < y ? -1 : x > y;
}

/* A visitor on a tracker, as a hash key. */
typedef struct {
    apr_int64_t tracker, visitor;
} visit_tv_key;

static int visit_id_cmp(const void *a, const void *b)
{
    apr_int64_t x = *(const apr_int64_t *)a, y = *(const apr_int64_t *)b;

    return x < y ? -1 : x > y;
}

typedef struct {
    const char *get, *add;
} dict_labels;

static const dict_labels dict_label[QRT_DICTS] = {
    [QRT_DICT_UA] = { SQL_dict_ua_get, SQL_dict_ua_add },
    [QRT_DICT_PLACE] = { SQL_dict_place_get, SQL_dict_place_add },
    [QRT_DICT_REF] = { SQL_dict_ref_get, SQL_dict_ref_add },
    [QRT_DICT_IP] = { SQL_dict_ip_get, SQL_dict_ip_add },
    [QRT_DICT_DEST] = { SQL_dict_dest_get, SQL_dict_dest_add },
};

/* The id of a dictionary row (key, then the add statement's arguments after it). */
static apr_status_t dict_id(qrt_db_t *db, apr_pool_t *p, qrt_dict_cache_t *c, int d,
                            const void **add_args, apr_int64_t *id)
{
    return qrt_store_dict_id(db, p, c, d, add_args[0], dict_label[d].add, dict_label[d].get,
                             add_args, id);
}

/* A visit row's dictionary ids; ref, ip and dest 0 for NULL. */
typedef struct {
    apr_int64_t ua, place, ref, ip, dest;
    int click;
} visit_ids;

/* The visits' dictionaries (k-th: QRT_DICT_* visit_dict[k]), with the values of a row of
 * each (its add statement's arguments, the key first). */
#define VISIT_DICTS 5
static const int visit_dict[VISIT_DICTS] = { QRT_DICT_UA, QRT_DICT_PLACE, QRT_DICT_REF,
                                             QRT_DICT_IP, QRT_DICT_DEST };
static const char *const visit_dict_types[VISIT_DICTS] = { "ssssss", "sss", "s", "s", "s" };

/* Visit x's row of dictionary d as add arguments (in p): NULL when x has none
 * (no referer, no address, sent nowhere). */
static const void **visit_dict_args(apr_pool_t *p, const qrt_visit_t *x, int d)
{
    const void **a = apr_palloc(p, 6 * sizeof(*a));

    if (d == QRT_DICT_UA) {
        const char *ua[] = { x->user_agent, x->browser, x->browser_version, x->os, x->device };

        a[0] = qrt_dict_key(p, ua, 5);
        memcpy(a + 1, ua, sizeof(ua));
    }
    else if (d == QRT_DICT_PLACE) {
        const char *place[] = { x->country, x->city };

        a[0] = qrt_dict_key(p, place, 2);
        memcpy(a + 1, place, sizeof(place));
    }
    else {
        a[0] = d == QRT_DICT_REF ? x->referer : d == QRT_DICT_IP ? x->ip : x->destination;
    }
    return a[0] ? a : NULL;
}

/* Visit x's ids; dargs: its rows' add arguments (visit_dict_args, VISIT_DICTS); known:
 * the ids the cache gave for them before (visits_dicts_pgsql; 0: look up), or NULL. */
static apr_status_t visit_dict_ids(qrt_db_t *db, apr_pool_t *p, qrt_dict_cache_t *c,
                                   const qrt_visit_t *x, const void ***dargs,
                                   const apr_int64_t *known, visit_ids *out)
{
    apr_int64_t *id[VISIT_DICTS] = { &out->ua, &out->place, &out->ref, &out->ip,
                                     &out->dest };
    apr_status_t rv = APR_SUCCESS;
    int k;

    out->ref = out->ip = out->dest = 0;
    out->click = x->source && !strcmp(x->source, "click");
    for (k = 0; k < VISIT_DICTS && rv == APR_SUCCESS; k++) {
        const void **args = dargs[k];

        if (args && known && known[k] > 0) {
            *id[k] = known[k];
        }
        else if (args) {
            rv = dict_id(db, p, c, visit_dict[k], args, id[k]);
        }
    }
    return rv;
}

typedef struct {
    qrt_dict_cache_t *c;
    int d;
} dict_many_ctx;

/* A (key, id) row of a dictionary statement of many rows: staged in the cache. */
static apr_status_t dict_many_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    dict_many_ctx *x = ctx;

    qrt_dict_cache_stage(x->c, x->d, qrt_db_str(db, row, 0), qrt_db_int(db, row, 1, 0));
    return APR_SUCCESS;
}

/* Moves those of the m rows (nargs values each, the key first) whose keys the cache
 * does not know to the front, in their order: how many there are. */
static int dicts_unknown(qrt_dict_cache_t *c, int d, const void **rows, int m, int nargs)
{
    int i, left = 0;

    for (i = 0; i < m; i++) {
        if (!qrt_dict_cache_get(c, d, rows[(apr_size_t)i * nargs])) {
            memmove(rows + (apr_size_t)left * nargs, rows + (apr_size_t)i * nargs,
                    nargs * sizeof(*rows));
            left++;
        }
    }
    return left;
}

/* PostgreSQL: the batch's dictionary values that the cache does not know, added (the
 * rows added come back with their ids) then the others found, in two statements a
 * dictionary, where one value at a time cost a round trip or two each (an import of
 * new user agents: one a visit). When most such values lately were there already
 * (qrt_dict_cache_lookup_first: an import of visitors seen before), found first and
 * the rest added: an insert that conflicts costs PostgreSQL more than a lookup. What
 * they stage, visit_dict_ids then finds; known[i * VISIT_DICTS + k] is the id the cache
 * knew already (0: none), which visit_dict_ids then takes without a second lookup. */
static apr_status_t visits_dicts_pgsql(qrt_db_t *db, apr_pool_t *p, qrt_dict_cache_t *c,
                                       const void ***dargs, int n, apr_int64_t *known)
{
    apr_status_t rv = APR_SUCCESS;
    int k, i;

    for (k = 0; k < VISIT_DICTS && rv == APR_SUCCESS; k++) {
        int d = visit_dict[k], nargs = (int)strlen(visit_dict_types[k]), m = 0, left, added;
        const void **rows = apr_palloc(p, (apr_size_t)(n > 0 ? n : 1) * nargs * sizeof(*rows));
        apr_hash_t *seen = apr_hash_make(p);
        dict_many_ctx ctx = { c, d };

        for (i = 0; i < n; i++) {
            const void **args = dargs[(apr_size_t)i * VISIT_DICTS + k];
            apr_int64_t *kn = &known[(apr_size_t)i * VISIT_DICTS + k];

            *kn = args ? qrt_dict_cache_get(c, d, args[0]) : 0;
            if (!args || *kn || apr_hash_get(seen, args[0], APR_HASH_KEY_STRING)) {
                continue;
            }
            apr_hash_set(seen, args[0], APR_HASH_KEY_STRING, "");
            memcpy(rows + (apr_size_t)m * nargs, args, nargs * sizeof(*args));
            m++;
        }
        left = m;
        if (m > 0 && qrt_dict_cache_lookup_first(c, d)) {
            /* (a statement's keys: one every nargs values) */
            const void **keys = apr_palloc(p, (apr_size_t)m * sizeof(*keys));

            for (i = 0; i < m; i++) {
                keys[i] = rows[(apr_size_t)i * nargs];
            }
            rv = qrt_db_each_rows(db, p, dict_label[d].get, "s", keys, m, dict_many_row,
                                  &ctx);
            left = rv == APR_SUCCESS ? dicts_unknown(c, d, rows, m, nargs) : 0;
        }
        if (rv == APR_SUCCESS && left > 0) {
            rv = qrt_db_each_rows(db, p, dict_label[d].add, visit_dict_types[k], rows, left,
                                  dict_many_row, &ctx);
        }
        added = left;
        if (rv == APR_SUCCESS && left > 0) {
            /* there already (after a lookup: added by another writer meanwhile),
             * found now */
            const void **keys = apr_palloc(p, (apr_size_t)left * sizeof(*keys));

            left = dicts_unknown(c, d, rows, left, nargs);
            added -= left;
            for (i = 0; i < left; i++) {
                keys[i] = rows[(apr_size_t)i * nargs];
            }
            rv = qrt_db_each_rows(db, p, dict_label[d].get, "s", keys, left, dict_many_row,
                                  &ctx);
        }
        /* what the values the cache did not know turned out to be, for the next batch */
        if (rv == APR_SUCCESS) {
            qrt_dict_cache_missed_batch(c, d, m - added, added);
        }
    }
    return rv;
}

/* visit_floor's buckets of the batch's ids (ascending with the visits) lowered to
 * the earliest time of their visits (SQLite: schema 14, PostgreSQL: schema 57). */
static apr_status_t visits_floor(qrt_db_t *db, apr_pool_t *p, const qrt_visit_t *v, int n)
{
    apr_status_t rv = APR_SUCCESS;
    int i = 0;

    while (i < n && rv == APR_SUCCESS) {
        apr_int64_t bucket = v[i].id >> QRT_VISIT_FLOOR_SHIFT, min = v[i].visit_start;
        const void *args[] = { &bucket, &min };

        for (i++; i < n && v[i].id >> QRT_VISIT_FLOOR_SHIFT == bucket; i++) {
            if (v[i].visit_start < min) {
                min = v[i].visit_start;
            }
        }
        rv = qrt_db_exec(db, p, SQL_visit_floor, NULL, args);
    }
    return rv;
}

/* Visits by the key of visit_rows (SQLite): tracker, time, id. */
static int visit_key_cmp(const void *a, const void *b)
{
    const qrt_visit_t *x = *(const qrt_visit_t *const *)a, *y = *(const qrt_visit_t *const *)b;

    if (x->tracker_id != y->tracker_id) {
        return x->tracker_id < y->tracker_id ? -1 : 1;
    }
    if (x->visit_start != y->visit_start) {
        return x->visit_start < y->visit_start ? -1 : 1;
    }
    return x->id < y->id ? -1 : x->id > y->id;
}

/* SQLite: a batch of at least this many visits counts its dictionary references
 * itself (visits_refs), fewer through the trigger visit_refs_ins. */
#define VISIT_REFS_BATCH_MIN 256

/* The argument of each counted dictionary in a visit's VISIT_NARGS, and its statement. */
static const struct {
    int arg;
    const char *label;
} visit_refs[] = {
    { 5, SQL_visit_refs_ua }, { 7, SQL_visit_refs_referer },
    { 8, SQL_visit_refs_ip }, { 9, SQL_visit_refs_dest },
};

/* The batch's rows (args) that name an entry of dictionary k of visit_refs: entry id ->
 * apr_int64_t count, keyed by the rows' own id pointers. */
static apr_hash_t *visits_refs_count(apr_pool_t *p, const void **args, int n, apr_size_t k)
{
    apr_hash_t *count = apr_hash_make(p);
    int i;

    for (i = 0; i < n; i++) {
        const apr_int64_t *id = args[(apr_size_t)i * VISIT_NARGS + visit_refs[k].arg];
        apr_int64_t *c;

        if (!id) {
            continue;
        }
        c = apr_hash_get(count, id, sizeof(*id));
        if (!c) {
            c = apr_pcalloc(p, sizeof(*c));
            apr_hash_set(count, id, sizeof(*id), c);
        }
        (*c)++;
    }
    return count;
}

/* SQLite: the references of the batch's rows (args), one UPDATE per distinct entry of
 * each dictionary instead of four per row in the trigger. */
static apr_status_t visits_refs(qrt_db_t *db, apr_pool_t *p, const void **args, int n)
{
    apr_size_t k;

    for (k = 0; k < sizeof(visit_refs) / sizeof(visit_refs[0]); k++) {
        apr_hash_t *count = visits_refs_count(p, args, n, k);
        apr_hash_index_t *hi;

        for (hi = apr_hash_first(p, count); hi; hi = apr_hash_next(hi)) {
            const void *key, *args1[2];
            void *val;
            apr_status_t rv;

            apr_hash_this(hi, &key, NULL, &val);
            args1[0] = val;
            args1[1] = key;
            rv = qrt_db_exec(db, p, visit_refs[k].label, NULL, args1);
            if (rv != APR_SUCCESS) {
                return rv;
            }
        }
    }
    return APR_SUCCESS;
}

/* SQLite: the batch's references appended to visit_refs_due, one row per distinct
 * entry of each dictionary (d 1 to 4, in visit_refs' order), settled together once
 * QRT_REFS_SETTLE_ROWS rows were appended: an entry named by several batches in between
 * is updated once. */
static apr_status_t visits_refs_due(qrt_db_t *db, apr_pool_t *p, const void **args, int n)
{
    apr_array_header_t *rows = apr_array_make(p, n * 2 + 1, sizeof(const void *));
    apr_size_t k;
    apr_status_t rv;

    for (k = 0; k < sizeof(visit_refs) / sizeof(visit_refs[0]); k++) {
        apr_hash_t *count = visits_refs_count(p, args, n, k);
        apr_hash_index_t *hi;
        apr_int64_t *d = apr_palloc(p, sizeof(*d));

        *d = (apr_int64_t)k + 1;
        for (hi = apr_hash_first(p, count); hi; hi = apr_hash_next(hi)) {
            const void *key;
            void *val;

            apr_hash_this(hi, &key, NULL, &val);
            APR_ARRAY_PUSH(rows, const void *) = d;
            APR_ARRAY_PUSH(rows, const void *) = key;
            APR_ARRAY_PUSH(rows, const void *) = val;
        }
    }
    if (rows->nelts == 0) {
        return APR_SUCCESS;
    }
    rv = qrt_db_exec_rows(db, p, SQL_visit_refs_due_add, "lll", (const void **)rows->elts,
                          rows->nelts / 3);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    *db->refs_due += rows->nelts / 3;
    return *db->refs_due >= QRT_REFS_SETTLE_ROWS ? qrt_store_refs_settle(db, p)
                                                 : APR_SUCCESS;
}

apr_status_t qrt_store_refs_settle(qrt_db_t *db, apr_pool_t *p)
{
    static const char *const settle[] = {
        SQL_visit_refs_settle_ua, SQL_visit_refs_settle_referer, SQL_visit_refs_settle_ip,
        SQL_visit_refs_settle_dest, SQL_visit_refs_settle_end,
    };
    const void *none[] = { NULL };
    apr_size_t k;
    apr_status_t rv;

    if (!qrt_dialect_embedded(db->driver)) {
        return APR_SUCCESS;
    }
    for (k = 0; k < sizeof(settle) / sizeof(settle[0]); k++) {
        if ((rv = qrt_db_exec(db, p, settle[k], NULL, none)) != APR_SUCCESS) {
            return rv;
        }
    }
    /* (a transaction rolled back after this keeps the rows: settled with later ones) */
    if (db->refs_due) {
        *db->refs_due = 0;
    }
    return APR_SUCCESS;
}

/* SQLite: the batch's ids from visit_seq (its writers follow one another, so the ids
 * follow one another), then its rows, each with its id in front of its arguments. */
static apr_status_t visits_insert_sqlite(qrt_db_t *db, apr_pool_t *p, qrt_visit_t *v,
                                         const void **args, int n)
{
    const void **with_id = apr_palloc(p, (apr_size_t)(n > 0 ? n : 1) * (VISIT_NARGS + 1)
                                         * sizeof(*with_id));
    const qrt_visit_t **order = apr_palloc(p, (apr_size_t)(n > 0 ? n : 1) * sizeof(*order));
    apr_int64_t count = n, last = 0, first;
    const void *seq_args[] = { &count }, *none[] = { NULL }, *range[] = { &first, &last };
    int batch;
    apr_status_t rv;
    int i;

    if (n <= 0) {
        return APR_SUCCESS;
    }
    rv = qrt_db_exec(db, p, SQL_visit_ids, NULL, seq_args);
    if (rv == APR_SUCCESS) {
        rv = qrt_db_select_int(db, p, SQL_agg_max_id, none, &last);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    for (i = 0; i < n; i++) {
        v[i].id = last - n + 1 + i;
        order[i] = &v[i];
    }
    /* The ids follow the batch's order; the rows go in by the table's key (tracker,
     * time, id), so that each B-tree page is visited once a run, not once a row. */
    qsort(order, n, sizeof(*order), visit_key_cmp);
    for (i = 0; i < n; i++) {
        apr_size_t at = (apr_size_t)(order[i] - v);

        with_id[(apr_size_t)i * (VISIT_NARGS + 1)] = &v[at].id;
        memcpy(with_id + (apr_size_t)i * (VISIT_NARGS + 1) + 1,
               args + at * VISIT_NARGS, VISIT_NARGS * sizeof(*args));
    }
    /* A large batch: visit_refs_ins skips its rows while their range is in
     * visit_refs_batch (within the caller's transaction), visits_refs counts them. */
    first = last - n + 1;
    batch = n >= VISIT_REFS_BATCH_MIN || db->refs_due;
    if (batch) {
        rv = qrt_db_exec(db, p, SQL_visit_refs_batch_add, NULL, range);
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    rv = qrt_db_exec_rows(db, p, SQL_visit_add_id, VISIT_ID_TYPES, with_id, n);
    if (rv == APR_SUCCESS && batch) {
        rv = db->refs_due ? visits_refs_due(db, p, args, n) : visits_refs(db, p, args, n);
        if (rv == APR_SUCCESS) {
            rv = qrt_db_exec(db, p, SQL_visit_refs_batch_end, NULL, range);
        }
    }
    return rv == APR_SUCCESS ? visits_floor(db, p, v, n) : rv;
}

/* Inserts the visits. On SQLite the ids come from visit_seq; on PostgreSQL the
 * ids come back from the inserts of many rows (a statement takes its ids from the
 * sequence in the order of its rows, and statements run in order). The strings go
 * to the dictionaries (through db->dict, or a cache of this batch alone). */
static apr_status_t visits_insert(qrt_db_t *db, apr_pool_t *p, qrt_visit_t *v, int n,
                                  apr_int64_t *dict_ids)
{
    const void **args = apr_palloc(p, (apr_size_t)(n > 0 ? n : 1) * VISIT_NARGS
                                      * sizeof(*args));
    visit_ids *ids = apr_palloc(p, (apr_size_t)(n > 0 ? n : 1) * sizeof(*ids));
    qrt_dict_cache_t *c = db->dict ? db->dict : qrt_dict_cache_make(p, 1 << 20, 0);
    const void ***dargs = apr_palloc(p, (apr_size_t)(n > 0 ? n : 1) * VISIT_DICTS
                                        * sizeof(*dargs));
    apr_array_header_t *row_ids;     /* PostgreSQL: the ids the inserts return */
    apr_int64_t *known = NULL;       /* PostgreSQL: the ids the cache knew (visit_dict_ids) */
    apr_status_t rv;
    int i, k;

    for (i = 0; i < n; i++) {
        for (k = 0; k < VISIT_DICTS; k++) {
            dargs[(apr_size_t)i * VISIT_DICTS + k] = visit_dict_args(p, &v[i], visit_dict[k]);
        }
    }
    if (qrt_dialect_remote(db->driver)) {
        known = apr_palloc(p, (apr_size_t)(n > 0 ? n : 1) * VISIT_DICTS * sizeof(*known));
        rv = visits_dicts_pgsql(db, p, c, dargs, n, known);
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    for (i = 0; i < n; i++) {
        qrt_visit_t *x = &v[i];
        visit_ids *d = &ids[i];

        rv = visit_dict_ids(db, p, c, x, dargs + (apr_size_t)i * VISIT_DICTS,
                            known ? known + (apr_size_t)i * VISIT_DICTS : NULL, d);
        if (rv != APR_SUCCESS) {
            return rv;
        }
        dict_ids[2 * i] = d->ua;
        dict_ids[2 * i + 1] = d->place;
        {
            const void *one[] = { &x->tracker_id, &x->visit_start, &d->click, &x->bot,
                                  &x->visitor, &d->ua, &d->place, d->ref ? &d->ref : NULL,
                                  d->ip ? &d->ip : NULL, d->dest ? &d->dest : NULL };

            memcpy(args + (apr_size_t)i * VISIT_NARGS, one, sizeof(one));
        }
        x->id = 0;
    }
    if (qrt_dialect_embedded(db->driver)) {
        return visits_insert_sqlite(db, p, v, args, n);
    }
    row_ids = apr_array_make(p, n > 0 ? n : 1, sizeof(apr_int64_t));
    rv = qrt_db_each_rows(db, p, SQL_visit_add, VISIT_TYPES, args, n, qrt_db_int_list_row,
                          row_ids);
    if (rv == APR_SUCCESS && row_ids->nelts != n) {
        db->error = "INSERT INTO visit_rows returned too few ids";
        rv = APR_EGENERAL;
    }
    qsort(row_ids->elts, row_ids->nelts, sizeof(apr_int64_t), visit_id_cmp);
    for (i = 0; i < n && rv == APR_SUCCESS; i++) {
        v[i].id = APR_ARRAY_IDX(row_ids, i, apr_int64_t);
    }
    return rv == APR_SUCCESS ? visits_floor(db, p, v, n) : rv;
}

/* is_new[i] = -1 for visit i when it is the batch's first visit of its visitor on its
 * tracker (0 otherwise): whether the visitor has one there from before, the aggregates
 * find out from the visitor's previous visits, which they seek anyway
 * (qrt_store_agg_write_visits). No table says it (schema 16 on SQLite, 47 on
 * PostgreSQL). Called before the batch's rows are written. */
static apr_status_t visits_visitors(const qrt_visit_t *v, int n, apr_pool_t *p,
                                    int *is_new)
{
    apr_hash_t *seen = apr_hash_make(p);
    int i;

    for (i = 0; i < n; i++) {
        visit_tv_key *key = apr_palloc(p, sizeof(*key));

        key->tracker = v[i].tracker_id;
        key->visitor = v[i].visitor;
        if (v[i].bot || apr_hash_get(seen, key, sizeof(*key))) {
            continue;           /* a visitor back on the same tracker within the batch */
        }
        apr_hash_set(seen, key, sizeof(*key), "");
        is_new[i] = -1;
    }
    return APR_SUCCESS;
}

/* The batch's counters on its trackers' rows (is_new known). */
static apr_status_t visits_counters(qrt_db_t *db, apr_pool_t *p, const qrt_visit_t *v,
                                    const int *is_new, int n)
{
    visit_counters *acc = apr_pcalloc(p, (n > 0 ? n : 1) * sizeof(*acc));
    apr_status_t rv = APR_SUCCESS;
    int i, j, nacc = 0;

    for (i = 0; i < n; i++) {
        const qrt_visit_t *x = &v[i];
        visit_counters *c = NULL;

        for (j = 0; j < nacc; j++) {
            if (acc[j].tracker_id == x->tracker_id) {
                c = &acc[j];
                break;
            }
        }
        if (!c) {
            c = &acc[nacc++];
            c->tracker_id = x->tracker_id;
        }
        if (x->id > c->max_id) {
            c->max_id = x->id;
        }
        if (x->bot) {
            c->bots++;
            continue;
        }
        if (!strcmp(x->source, "click")) {
            c->clicks++;
        }
        else {
            c->scans++;
        }
        c->uniques += is_new[i] > 0;
        if (x->visit_start > c->last) {
            c->last = x->visit_start;
        }
    }
    /* Rows in one order (by tracker id) whoever writes them. */
    qsort(acc, nacc, sizeof(*acc), visit_counters_cmp);
    for (j = 0; j < nacc && rv == APR_SUCCESS; j++) {
        visit_counters *c = &acc[j];
        const void *args[] = { &c->scans, &c->clicks, &c->bots, &c->uniques,
                               &c->last, &c->last, &c->max_id, &c->max_id,
                               &c->tracker_id };

        rv = qrt_db_exec(db, p, SQL_tracker_counters, NULL, args);
    }
    return rv;
}

apr_status_t qrt_store_visits_record(qrt_db_t *db, apr_pool_t *p,
                                     const qrt_visit_t *in, int n)
{
    return qrt_store_visits_record_ids(db, p, in, n, NULL, NULL);
}

/* The dictionaries' generation read under the write lock with the batch's inserts
 * (qrt_store_write_lock_gen_hold). When it moved since the cache's (a purge deleted
 * dictionary rows), ids the batch took from the cache may name rows that are gone: the
 * transaction fails, to be run again from its start (db->again), with the cache
 * emptied. */
static apr_status_t visits_generation(qrt_db_t *db, apr_pool_t *p,
                                      const qrt_pipe_rows_t *rows)
{
    apr_array_header_t *gen = apr_array_make(p, 1, sizeof(apr_int64_t));
    apr_status_t rv = qrt_db_held_each(db, rows, qrt_db_int_list_row, gen);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (gen->nelts != 1) {
        db->error = "write_lock_gen: no generation";
        return APR_EGENERAL;
    }
    if (qrt_dict_cache_generation(db->dict, APR_ARRAY_IDX(gen, 0, apr_int64_t))) {
        db->error = "the dictionaries changed while the batch was written (a purge): "
                    "run again";
        db->again = 1;
        return APR_EAGAIN;
    }
    return APR_SUCCESS;
}

/* The batch's trackers, for trackers_live: a list of the distinct ids. */
static const char *visits_tracker_list(qrt_db_t *db, apr_pool_t *p, const qrt_visit_t *v,
                                       int n, apr_hash_t **set)
{
    apr_array_header_t *ids = apr_array_make(p, 8, sizeof(apr_int64_t));
    int i;

    *set = apr_hash_make(p);
    for (i = 0; i < n; i++) {
        if (!apr_hash_get(*set, &v[i].tracker_id, sizeof(v[i].tracker_id))) {
            apr_hash_set(*set, &v[i].tracker_id, sizeof(v[i].tracker_id), "");
            APR_ARRAY_PUSH(ids, apr_int64_t) = v[i].tracker_id;
        }
    }
    return qrt_db_id_list(db, p, ids);
}

/* The batch's trackers that trackers_live did not name (live: its ids) onto gone: 1
 * when there were any (the call then fails, to be run again without their visits). */
static int visits_gone(qrt_db_t *db, apr_hash_t *set, const apr_array_header_t *live,
                       apr_array_header_t *gone)
{
    apr_hash_index_t *hi;
    int i, before = gone->nelts;

    for (i = 0; i < live->nelts; i++) {
        apr_hash_set(set, &APR_ARRAY_IDX(live, i, apr_int64_t), sizeof(apr_int64_t), NULL);
    }
    for (hi = apr_hash_first(NULL, set); hi; hi = apr_hash_next(hi)) {
        const void *key;

        apr_hash_this(hi, &key, NULL, NULL);
        APR_ARRAY_PUSH(gone, apr_int64_t) = *(const apr_int64_t *)key;
    }
    if (gone->nelts == before) {
        return 0;
    }
    db->error = "trackers of the batch were deleted while their scans waited: run again "
                "without their visits";
    db->again = 1;
    return 1;
}

apr_status_t qrt_store_visits_record_ids(qrt_db_t *db, apr_pool_t *p,
                                         const qrt_visit_t *in, int n, apr_int64_t *ids,
                                         apr_array_header_t *gone)
{
    int *is_new = apr_pcalloc(p, (n > 0 ? n : 1) * sizeof(int));
    apr_int64_t *dict_ids = apr_pcalloc(p, (n > 0 ? n : 1) * 2 * sizeof(*dict_ids));
    qrt_visit_t *v = apr_pmemdup(p, in, (n > 0 ? n : 1) * sizeof(*v));
    qrt_store_agg_held_t *held = NULL;
    qrt_pipe_rows_t *gen_rows = NULL, *live_rows = NULL;
    apr_array_header_t *live = NULL;
    apr_hash_t *set = NULL;
    apr_status_t rv;
    int i;

    /* What an earlier transaction staged and did not see committed is forgotten. */
    qrt_dict_cache_abort(db->dict);
    if (!db->dict) {
        rv = qrt_store_write_lock(db, p);
    }
    else if (qrt_store_write_lock_gen_hold(db, p, &gen_rows) == APR_SUCCESS) {
        /* PostgreSQL, pipelined: the lock and the generation go with the inserts'
         * round trip (every statement still runs under the lock, after it); the ids
         * taken from the cache meanwhile are checked against it there
         * (visits_generation). */
        rv = APR_SUCCESS;
    }
    else {
        /* Under the write lock (PostgreSQL) or in the write transaction (SQLite), as
         * the purge's deletions of dictionary rows are: ids kept from before one are
         * forgotten (a deleted row's id may be given again to another string). One
         * round trip with the lock. */
        apr_int64_t gen = 0;

        rv = qrt_store_write_lock_gen(db, p, &gen);
        if (rv == APR_SUCCESS) {
            qrt_dict_cache_generation(db->dict, gen);
        }
    }
    if (rv == APR_SUCCESS && gone) {
        /* After the lock, which a tracker's deletion takes too. PostgreSQL, pipelined:
         * held, read once the inserts' round trip has run it (a deletion is rare: the
         * batch is then rolled back and run again). Else read now, before any write. */
        const void *args[1];

        args[0] = visits_tracker_list(db, p, v, n, &set);
        live = apr_array_make(p, 8, sizeof(apr_int64_t));
        rv = gen_rows ? qrt_db_hold_select(db, p, SQL_trackers_live, args, &live_rows)
                      : APR_ENOTIMPL;
        if (rv == APR_ENOTIMPL) {
            db->error = NULL;
            rv = qrt_db_each(db, p, SQL_trackers_live, args, qrt_db_int_list_row, live);
            if (rv == APR_SUCCESS && visits_gone(db, set, live, gone)) {
                return APR_EAGAIN;
            }
        }
    }
    if (rv == APR_SUCCESS) {
        rv = visits_visitors(v, n, p, is_new);
    }
    if (rv == APR_SUCCESS) {
        /* (PostgreSQL, pipelined: the aggregates' first reads go with the inserts) */
        rv = qrt_store_agg_write_hold(db, p, v, n, &held);
    }
    if (rv == APR_SUCCESS) {
        rv = visits_insert(db, p, v, n, dict_ids);
    }
    if (rv == APR_SUCCESS && gen_rows) {
        rv = visits_generation(db, p, gen_rows);
    }
    if (rv == APR_SUCCESS && live_rows) {
        rv = qrt_db_held_each(db, live_rows, qrt_db_int_list_row, live);
        if (rv == APR_SUCCESS && visits_gone(db, set, live, gone)) {
            rv = APR_EAGAIN;
        }
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    for (i = 0; ids && i < n; i++) {
        ids[i] = v[i].id;
    }
    /* The aggregates first, which find the visitors new to a tracker, then the
     * counters (in a pipelined transaction the counters' update goes with the COMMIT).
     * Whatever else writes the trackers' rows or the aggregates takes the write lock
     * first, so the order of their row locks does not matter. (tracker_routing's rows
     * are locked before the write lock: the scan writer's caps, qrt_store_visits_cap,
     * and a change of a tracker's routing, qrt_store_tracker_patch.) */
    rv = qrt_store_agg_write_visits(db, p, v, is_new, dict_ids, n, held);
    return rv == APR_SUCCESS ? visits_counters(db, p, v, is_new, n) : rv;
}
