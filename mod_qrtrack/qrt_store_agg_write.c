/* qrt_store_agg_write: the report aggregates kept as visits are committed
 * (qrt_store_agg_write_visits) and brought in line when a tracker is deleted or
 * retagged (qrt_store_agg_write_tracker_changed). The model is described in qrt_agg.h.
 *
 * Write path, per non-bot visit, in id order:
 *   - the visitor's latest earlier visit in the account (one index seek on
 *     visits (visitor, visit_start)) is the previous visit in the account; when it
 *     also has the visit's tracker, browser, country, city or tags it is the previous
 *     visit there too, else one more seek finds it (on SQLite, and on PostgreSQL in an
 *     import's batch, the first seek reads the visitor's few visits before too, and the
 *     others are looked for among them first);
 *   - counters (per day, merged per batch and rolled up to 16 and 256 days), one
 *     agg_link row, agg_gaps rows for the groups where the previous visit differs,
 *     one agg_day row;
 *   - a visit older than the visitor's latest in the account (an import out of
 *     order, two nodes' clocks) and the visitor's later ones in the batch are
 *     deferred: after the loop, the contributions of the visitor's visits from the
 *     earliest of them on are recomputed, once a batch (agg_recompute).
 *
 * The account-level kinds cover the trackers listed in agg_trk with the tags in
 * agg_tag at the time; qrt_store_agg_read_state tells the readers when trackers were
 * deleted or retagged since, and the rebuild brings them up to date. */
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>
#include "qrt_hash.h"
#include "qrt_store.h"
#include "qrt_store_agg_acc.h"
#include "qrt_store_agg_write.h"

#define AGG_REPAIR_MAX  20000       /* visitors of a tracker repaired in place at most */
/* A visit out of order reads this many of the visitor's visits before it at most
 * (agg_recompute): enough for all of most visitors' (the unit tests make it smaller,
 * qrt_store_agg_write_probe) */
static apr_int64_t agg_probe = 64;

/* ---- write path ------------------------------------------------------------ */

/* A visitor's latest visit before another: its dictionary ids, and its strings
 * (NULL until agg_last_names reads them). */
typedef struct {
    int has;
    apr_int64_t t, id, tracker, ua, place;
    const char *browser, *country, *city;
} agg_seek_row;

/* s from the row's columns col to col + 4 (visit_start, id, tracker_id, ua_id,
 * place_id). */
static void agg_seek_fill(agg_seek_row *s, qrt_db_t *db, apr_dbd_row_t *row, int col)
{
    s->has = 1;
    s->t = qrt_db_int(db, row, col, 0);
    s->id = qrt_db_int(db, row, col + 1, 0);
    s->tracker = qrt_db_int(db, row, col + 2, 0);
    s->ua = qrt_db_int(db, row, col + 3, 0);
    s->place = qrt_db_int(db, row, col + 4, 0);
    s->browser = s->country = s->city = NULL;
}

static apr_status_t agg_seek_a_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_seek_fill(ctx, db, row, 0);
    return APR_SUCCESS;
}

typedef struct {
    apr_pool_t *p;
    int n;                      /* columns */
    const char *s[2];
} agg_names_ctx;

static apr_status_t agg_names_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_names_ctx *c = ctx;
    int i;

    for (i = 0; i < c->n; i++) {
        c->s[i] = apr_pstrdup(c->p, qrt_store_agg_acc_col(db, row, i));
    }
    return APR_SUCCESS;
}

/* last's browser, country and city, which x's are compared with: x's own when last
 * has x's dictionary rows (the same user agent, the same place: most visitors'
 * visits), else read from its rows. */
static apr_status_t agg_last_names(qrt_db_t *db, apr_pool_t *p, agg_seek_row *last,
                                   const qrt_agg_visit_t *x, apr_int64_t ua,
                                   apr_int64_t place)
{
    apr_status_t rv = APR_SUCCESS;

    if (!last->browser && last->ua == ua) {
        last->browser = x->browser;
    }
    else if (!last->browser) {
        agg_names_ctx c = { p, 1, { "", "" } };
        const void *args[] = { &last->ua };

        rv = qrt_db_each(db, p, SQL_agg_ua_browser, args, agg_names_row, &c);
        last->browser = c.s[0];
    }
    if (rv == APR_SUCCESS && !last->country && last->place == place) {
        last->country = x->country;
        last->city = x->city;
    }
    else if (rv == APR_SUCCESS && !last->country) {
        agg_names_ctx c = { p, 2, { "", "" } };
        const void *args[] = { &last->place };

        rv = qrt_db_each(db, p, SQL_agg_place_names, args, agg_names_row, &c);
        last->country = c.s[0];
        last->city = c.s[1];
    }
    return rv;
}

/* The time of the latest visit a seek finds, into *pv (has = 0 when none). */
static apr_status_t agg_seek(qrt_db_t *db, apr_pool_t *p, const char *label,
                             const void **args, qrt_store_agg_prev_t *pv)
{
    agg_seek_row s;
    apr_status_t rv;

    memset(&s, 0, sizeof(s));
    rv = qrt_db_each(db, p, label, args, agg_seek_a_row, &s);
    pv->has = s.has;
    pv->same = 0;
    pv->t = s.t;
    return rv;
}

typedef struct {
    apr_pool_t *p;
    apr_array_header_t *list;   /* qrt_agg_visit_t */
} agg_list_ctx;

/* One visit of a visitor's history (its tags are filled in after the query: no
 * query may run while another's rows are being read). */
static void agg_visit_fill(apr_pool_t *p, apr_array_header_t *list, qrt_db_t *db,
                           apr_dbd_row_t *row, int col)
{
    qrt_agg_visit_t *x = apr_array_push(list);
    const char *src = qrt_db_str(db, row, col + 3);

    memset(x, 0, sizeof(*x));
    x->id = qrt_db_int(db, row, col, 0);
    x->t = qrt_db_int(db, row, col + 1, 0);
    x->tracker = qrt_db_int(db, row, col + 2, 0);
    x->click = src && !strcmp(src, "click");
    x->browser = apr_pstrdup(p, qrt_store_agg_acc_col(db, row, col + 4));
    x->country = apr_pstrdup(p, qrt_store_agg_acc_col(db, row, col + 5));
    x->city = apr_pstrdup(p, qrt_store_agg_acc_col(db, row, col + 6));
}

static apr_status_t agg_visit_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_list_ctx *c = ctx;

    agg_visit_fill(c->p, c->list, db, row, 0);
    return APR_SUCCESS;
}

/* PostgreSQL: a deferred visitor's two lists of visits read for the whole batch
 * (agg_recompute_deferred): agg_visitor_from's and agg_visitor_before_of_kind's rows. */
typedef struct {
    int asked;
    apr_array_header_t *from, *before;
} agg_lists;

typedef struct {
    apr_pool_t *p;
    agg_lists *l;
    int before;
} agg_lists_ctx;

static apr_status_t agg_lists_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_lists_ctx *c = ctx;
    agg_lists *l = &c->l[qrt_db_int(db, row, 0, 0)];

    agg_visit_fill(c->p, c->before ? l->before : l->from, db, row, 1);
    return APR_SUCCESS;
}

/* A copy of a prefetched list (agg_recompute changes its list), or NULL. */
static apr_array_header_t *agg_lists_copy(apr_pool_t *p, const agg_lists *l, int before)
{
    return l && l->asked ? apr_array_copy(p, before ? l->before : l->from) : NULL;
}

/* Tags of the visits v[0..n) from their trackers (the cache trk lives in tp). */
static apr_status_t agg_tags(qrt_db_t *db, apr_pool_t *tp, apr_hash_t *trk,
                             qrt_agg_visit_t *v, int n)
{
    apr_status_t rv = APR_SUCCESS;
    int i;

    for (i = 0; i < n && rv == APR_SUCCESS; i++) {
        qrt_store_agg_trk_t *k;

        rv = qrt_store_agg_acc_trk_get(db, tp, trk, v[i].tracker, 0, &k);
        if (rv == APR_SUCCESS) {
            v[i].tags = k->tags;
            v[i].ntags = k->ntags;
        }
    }
    return rv;
}

static int agg_visit_cmp(const void *x, const void *y)
{
    const qrt_agg_visit_t *a = x, *b = y;

    if (a->t != b->t) {
        return a->t < b->t ? -1 : 1;
    }
    return a->id < b->id ? -1 : a->id > b->id;
}

/* The groups of visit x (tracker, browser, country, city; its tracker's tags come
 * with its tracker), marked in the table (mark) or looked up there: 1 when every one
 * is in it. */
static int agg_groups(apr_pool_t *p, apr_hash_t *groups, const qrt_agg_visit_t *x,
                      int mark)
{
    const char *k[4];
    int i;

    k[0] = apr_psprintf(p, "t %" APR_INT64_T_FMT, x->tracker);
    k[1] = apr_pstrcat(p, "b ", x->browser, NULL);
    k[2] = apr_pstrcat(p, "c ", x->country, NULL);
    k[3] = apr_pstrcat(p, "y ", x->city, NULL);
    for (i = 0; i < 4; i++) {
        if (mark) {
            apr_hash_set(groups, k[i], APR_HASH_KEY_STRING, k[i]);
        }
        else if (!apr_hash_get(groups, k[i], APR_HASH_KEY_STRING)) {
            return 0;
        }
    }
    return 1;
}

/* A visitor's visits of a batch out of order, in one account: re-chained once, after
 * the batch's other visits (agg_recompute). The first one out of order (id first) and
 * every later one of the visitor in the account are deferred; from, the earliest of
 * them by (time, id), is where the chain changes. */
typedef struct {
    apr_int64_t visitor, account;
    apr_int64_t first;          /* the first deferred visit's id: those below it count */
    apr_int64_t from_t, from_id;
    apr_int64_t upto;           /* the last deferred visit's id */
} agg_defer;

/* Deferred visits (in the database already) of a visitor in an account, d: the
 * contributions of the visitor's visits from d->from on, as they count now (ids below
 * d->first), are taken away, and those of all of its visits from there on (up to
 * d->upto) added. The visits before keep theirs (their previous visits do not change)
 * and are read only as the previous visits of the others: the latest agg_probe of them
 * when those have a visit in every group of the visits from d->from on (nearly always:
 * a visitor keeps its browser and place), else all of them. So the work follows the
 * visits after the earliest deferred one, once a batch, not the visitor's whole
 * history, unless one of them is the first in a group for long. */
static apr_status_t agg_recompute(qrt_store_agg_acc_t *a, qrt_db_t *db, apr_pool_t *p,
                                  apr_hash_t *trk, const agg_defer *d, const agg_lists *pl)
{
    const void *fargs[4] = { &d->visitor, &d->account, &d->upto, &d->from_t };
    const void *bargs[5] = { &d->visitor, &d->account, &d->from_id, &d->from_t, &agg_probe };
    agg_list_ctx c;
    qrt_agg_visit_t *v, *old, *all;
    apr_pool_t *rp;
    apr_status_t rv;
    int i, n, nb, nold = 0, nall = 0;

    /* The rows in a pool of their own: a batch may hold many visitors out of order.
     * (The trackers' cache stays in p.) */
    apr_pool_create(&rp, p);
    c.p = rp;
    c.list = agg_lists_copy(rp, pl, 0);
    if (c.list) {
        rv = APR_SUCCESS;
    }
    else {
        c.list = apr_array_make(rp, 16, sizeof(qrt_agg_visit_t));
        rv = qrt_db_each(db, rp, SQL_agg_visitor_from, fargs, agg_visit_row, &c);
    }
    /* (the visits at from_t itself before from_id are before it) */
    v = (qrt_agg_visit_t *)c.list->elts;
    for (i = 0, n = 0; i < c.list->nelts; i++) {
        if (v[i].t > d->from_t || v[i].id >= d->from_id) {
            v[n++] = v[i];
        }
    }
    if (rv == APR_SUCCESS && (n == 0 || v[0].id != d->from_id)) {
        db->error = "the visit out of order is not in the visitor's visits";
        rv = APR_EGENERAL;
    }
    if (rv == APR_SUCCESS) {
        rv = agg_tags(db, p, trk, v, n);
    }
    c.list = agg_lists_copy(rp, pl, 1);
    if (!c.list) {
        c.list = apr_array_make(rp, (int)agg_probe + 1, sizeof(qrt_agg_visit_t));
        if (rv == APR_SUCCESS) {
            rv = qrt_db_each(db, rp, SQL_agg_visitor_before_of_kind, bargs, agg_visit_row, &c);
        }
    }
    if (rv == APR_SUCCESS) {
        rv = agg_tags(db, p, trk, (qrt_agg_visit_t *)c.list->elts, c.list->nelts);
    }
    if (rv == APR_SUCCESS && c.list->nelts >= agg_probe) {
        /* More before: are those read the previous visits of every group? */
        apr_hash_t *groups = apr_hash_make(rp);
        int covered = 1;

        for (i = 0; i < c.list->nelts; i++) {
            agg_groups(rp, groups, &((qrt_agg_visit_t *)c.list->elts)[i], 1);
        }
        for (i = 0; i < n && covered; i++) {
            covered = agg_groups(rp, groups, &v[i], 0);
        }
        if (!covered) {
            c.list = apr_array_make(rp, 64, sizeof(qrt_agg_visit_t));
            rv = qrt_db_each(db, rp, SQL_agg_visitor_before_any, bargs, agg_visit_row, &c);
            if (rv == APR_SUCCESS) {
                rv = agg_tags(db, p, trk, (qrt_agg_visit_t *)c.list->elts, c.list->nelts);
            }
        }
    }
    if (rv != APR_SUCCESS) {
        apr_pool_destroy(rp);
        return rv;
    }
    /* The visits before, in order; then those from d->from on: as they count now (the
     * deferred ones left out), and all. */
    nb = c.list->nelts;
    old = apr_palloc(rp, (nb + n) * sizeof(*old));
    all = apr_palloc(rp, (nb + n) * sizeof(*all));
    if (nb > 0) {
        memcpy(old, c.list->elts, nb * sizeof(*old));
        qsort(old, nb, sizeof(*old), agg_visit_cmp);
    }
    memcpy(all, old, nb * sizeof(*all));
    nold = nall = nb;
    for (i = 0; i < n; i++) {
        all[nall++] = v[i];
        if (v[i].id < d->first) {
            old[nold++] = v[i];
        }
    }
    qrt_store_agg_acc_emit_list(a, rp, -1, d->account, old, nold, nb);
    qrt_store_agg_acc_emit_list(a, rp, 1, d->account, all, nall, nb);
    apr_pool_destroy(rp);
    return APR_SUCCESS;
}

/* A visitor's visits in the account up to id (in p), with their trackers' snapshot
 * tags (the tracker cache trk lives in tp). */
static apr_status_t agg_history(qrt_db_t *db, apr_pool_t *p, apr_pool_t *tp,
                                apr_hash_t *trk, apr_int64_t visitor,
                                apr_int64_t account, apr_int64_t id,
                                qrt_agg_visit_t **out, int *n)
{
    agg_list_ctx c;
    const void *args[] = { &visitor, &account, &id };
    qrt_agg_visit_t *all;
    apr_status_t rv;

    c.p = p;
    c.list = apr_array_make(p, 16, sizeof(qrt_agg_visit_t));
    rv = qrt_db_each(db, p, SQL_agg_visitor, args, agg_visit_row, &c);
    all = (qrt_agg_visit_t *)c.list->elts;
    if (rv == APR_SUCCESS) {
        rv = agg_tags(db, tp, trk, all, c.list->nelts);
    }
    *out = all;
    *n = c.list->nelts;
    return rv;
}

/* PostgreSQL: a visit's seeks made for the whole batch at once (agg_prefetch_seeks),
 * each the answer its own seek would give (all of the batch's rows are written by then,
 * and the seeks read nothing else the loop writes). */
enum { SEEK_TR, SEEK_BR, SEEK_CO, SEEK_CI, SEEKS };
typedef struct {
    char asked[SEEKS], has[SEEKS];
    apr_int64_t t[SEEKS];
} agg_seeks;

typedef struct {
    agg_seeks *s;
    int kind;
} agg_seeks_ctx;

static apr_status_t agg_seeks_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_seeks_ctx *c = ctx;
    agg_seeks *s = &c->s[qrt_db_int(db, row, 0, 0)];

    s->has[c->kind] = 1;
    s->t[c->kind] = qrt_db_int(db, row, 1, 0);
    return APR_SUCCESS;
}

/* A prefetched seek into *out: 1 when there is one. */
static int agg_seek_known(const agg_seeks *s, int kind, qrt_store_agg_prev_t *out)
{
    if (!s || !s->asked[kind]) {
        return 0;
    }
    out->has = s->has[kind];
    out->same = 0;
    out->t = s->has[kind] ? s->t[kind] : 0;
    return 1;
}

/* SQLite: a visitor's latest visits before one, anywhere (agg_seek_visitor_recent), read
 * with the seek of its previous visit. The previous visit on a tracker, browser, country
 * or city is the first of them that has it; when none has it and they are all of the
 * visitor's visits before (fewer than AGG_RECENT), there is none: a seek each is made only
 * when neither holds. The strings of their dictionary rows are read once a batch (names). */
#define AGG_RECENT 8
/* Only in batches this large (imports): a scan writer's batch of a few dozen visits, most
 * of the same visitor as their previous visit in every dimension, pays a row and its
 * strings for what one seek told before. */
#define AGG_RECENT_BATCH_MIN 256
typedef struct {
    apr_hash_t *ua, *place;         /* dictionary id -> browser; -> country, city */
} agg_names;

typedef struct {
    int n;                          /* rows read; -1: not usable */
    agg_seek_row r[AGG_RECENT];
    apr_int64_t ua, place;          /* the visit's own dictionary ids */
    agg_names *names;
} agg_recent;

static apr_status_t agg_recent_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_recent *rc = ctx;

    if (rc->n < AGG_RECENT) {
        agg_seek_fill(&rc->r[rc->n++], db, row, 0);
    }
    return APR_SUCCESS;
}

/* The previous visit on tracker among rc's: 1 when they tell. */
static int agg_recent_tracker(const agg_recent *rc, apr_int64_t tracker,
                              qrt_store_agg_prev_t *out)
{
    int i;

    if (!rc || rc->n < 0) {
        return 0;
    }
    for (i = 0; i < rc->n; i++) {
        if (rc->r[i].tracker == tracker) {
            out->has = 1;
            out->same = 0;
            out->t = rc->r[i].t;
            return 1;
        }
    }
    if (rc->n < AGG_RECENT) {
        memset(out, 0, sizeof(*out));
        return 1;
    }
    return 0;
}

static apr_status_t agg_name_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    const char **s = ctx;

    s[0] = qrt_store_agg_acc_col(db, row, 0);
    s[1] = qrt_store_agg_acc_col(db, row, 1);
    return APR_SUCCESS;
}

/* The value of kind (SEEK_BR, SEEK_CO, SEEK_CI) of a visit whose dictionary rows are
 * r's: x's own when r has x's rows, else from the batch's names (read once each). */
static apr_status_t agg_recent_value(qrt_db_t *db, apr_pool_t *p, const agg_recent *rc,
                                     const agg_seek_row *r, const qrt_agg_visit_t *x,
                                     int kind, const char **out)
{
    int br = kind == SEEK_BR;
    apr_int64_t id = br ? r->ua : r->place;
    apr_hash_t *h = br ? rc->names->ua : rc->names->place;
    const char **s;

    if (br ? r->ua == rc->ua : r->place == rc->place) {
        *out = br ? x->browser : kind == SEEK_CO ? x->country : x->city;
        return APR_SUCCESS;
    }
    s = apr_hash_get(h, &id, sizeof(id));
    if (!s) {
        const void *args[] = { &id };
        apr_int64_t *key = apr_pmemdup(p, &id, sizeof(id));
        apr_status_t rv;

        /* ("" when the row is not there, as the seeks' LEFT JOIN reads it) */
        s = apr_palloc(p, 2 * sizeof(*s));
        s[0] = s[1] = "";
        rv = qrt_db_each(db, p, br ? SQL_agg_ua_browser : SQL_agg_place_names, args,
                         agg_name_row, (void *)s);
        if (rv != APR_SUCCESS) {
            return rv;
        }
        s[0] = apr_pstrdup(p, s[0]);
        s[1] = apr_pstrdup(p, s[1]);
        apr_hash_set(h, key, sizeof(*key), s);
    }
    *out = br || kind == SEEK_CO ? s[0] : s[1];
    return APR_SUCCESS;
}

/* The previous visit in the account with value val of kind among rc's: *told 1 when
 * they tell. */
static apr_status_t agg_recent_dim(qrt_db_t *db, apr_pool_t *p, apr_hash_t *trk,
                                   const agg_recent *rc, const qrt_agg_visit_t *x,
                                   apr_int64_t account, int kind, const char *val,
                                   qrt_store_agg_prev_t *out, int *told)
{
    int i;

    *told = 0;
    if (!rc || rc->n < 0) {
        return APR_SUCCESS;
    }
    for (i = 0; i < rc->n; i++) {
        qrt_store_agg_trk_t *k;
        const char *had;
        apr_status_t rv = qrt_store_agg_acc_trk_get(db, p, trk, rc->r[i].tracker, 0, &k);

        if (rv == APR_NOTFOUND) {
            db->error = NULL;
            continue;               /* (not aggregated: not in the account's groups) */
        }
        if (rv == APR_SUCCESS && k->account != account) {
            continue;
        }
        if (rv == APR_SUCCESS) {
            rv = agg_recent_value(db, p, rc, &rc->r[i], x, kind, &had);
        }
        if (rv != APR_SUCCESS) {
            return rv;
        }
        if (!strcmp(had, val)) {
            out->has = 1;
            out->same = 0;
            out->t = rc->r[i].t;
            *told = 1;
            return APR_SUCCESS;
        }
    }
    if (rc->n < AGG_RECENT) {
        memset(out, 0, sizeof(*out));
        *told = 1;
    }
    return APR_SUCCESS;
}

/* The previous visit in one dimension (browser, country or city): the previous
 * visit in the account when that one had the same value, else one more seek. */
static apr_status_t agg_prev_dim(qrt_db_t *db, apr_pool_t *p, apr_hash_t *trk,
                                 const qrt_visit_t *v, const qrt_agg_visit_t *x,
                                 apr_int64_t account, const char *last_val, const char *val,
                                 const char *label, const qrt_store_agg_prev_t *in_account,
                                 const agg_seeks *s, const agg_recent *rc, int kind,
                                 qrt_store_agg_prev_t *out)
{
    const void *args[] = { &v->visitor, &account, &x->id, val };
    apr_status_t rv;
    int told;

    if (!strcmp(last_val, val)) {
        *out = *in_account;
        return APR_SUCCESS;
    }
    if (agg_seek_known(s, kind, out)) {
        return APR_SUCCESS;
    }
    rv = agg_recent_dim(db, p, trk, rc, x, account, kind, val, out, &told);
    if (rv != APR_SUCCESS || told) {
        return rv;
    }
    return agg_seek(db, p, label, args, out);
}

/* last, the visitor's latest visit before id anywhere (agg_seek_visitor: one row, no
 * join), kept when its tracker is aggregated in the account, as it nearly always is;
 * else sought again with the join on agg_trk (another account's tracker, or one no
 * longer aggregated). */
static apr_status_t agg_seek_account(qrt_db_t *db, apr_pool_t *p, apr_hash_t *trk,
                                     apr_int64_t visitor, apr_int64_t account,
                                     apr_int64_t id, agg_seek_row *last)
{
    const void *a_args[] = { &visitor, &account, &id };
    qrt_store_agg_trk_t *k = NULL;
    apr_status_t rv;

    if (!last->has) {
        return APR_SUCCESS;         /* none anywhere: none in the account */
    }
    rv = qrt_store_agg_acc_trk_get(db, p, trk, last->tracker, 0, &k);
    if (rv == APR_SUCCESS && k->account == account) {
        return APR_SUCCESS;
    }
    if (rv != APR_SUCCESS && rv != APR_NOTFOUND) {
        return rv;
    }
    db->error = NULL;
    memset(last, 0, sizeof(*last));
    return qrt_db_each(db, p, SQL_agg_seek_visitor_in_account, a_args, agg_seek_a_row, last);
}

/* The visitor's latest visit before id in the account; with rc (SQLite), the visits
 * before it anywhere too (rc->n -1 when the latest is not in the account). */
static apr_status_t agg_seek_prev(qrt_db_t *db, apr_pool_t *p, apr_hash_t *trk,
                                  apr_int64_t visitor, apr_int64_t account, apr_int64_t id,
                                  agg_seek_row *last, agg_recent *rc)
{
    const void *args[] = { &visitor, &id };
    apr_status_t rv;

    memset(last, 0, sizeof(*last));
    if (rc) {
        apr_int64_t limit = AGG_RECENT;
        const void *rargs[] = { &visitor, &id, &limit };

        rc->n = 0;
        rv = qrt_db_each(db, p, SQL_agg_seek_visitor_recent, rargs, agg_recent_row, rc);
        if (rv == APR_SUCCESS && rc->n > 0) {
            *last = rc->r[0];
        }
    }
    else {
        rv = qrt_db_each(db, p, SQL_agg_seek_visitor, args, agg_seek_a_row, last);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = agg_seek_account(db, p, trk, visitor, account, id, last);
    if (rc && rc->n > 0 && (!last->has || last->id != rc->r[0].id)) {
        rc->n = -1;                 /* (sought again in the account) */
    }
    return rv;
}

struct qrt_store_agg_held {
    int ntrk;
    apr_int64_t *trk;                   /* the batch's trackers */
    qrt_pipe_rows_t **trk_rows;         /* agg_trk_get of each */
    int nvisitors;
    apr_hash_t *visitors;               /* visitor -> its index in the seek (int) */
    qrt_pipe_rows_t *seek;              /* agg_seek_visitor_many, before the batch */
};

apr_status_t qrt_store_agg_write_hold(qrt_db_t *db, apr_pool_t *p, const qrt_visit_t *v,
                                      int n, qrt_store_agg_held_t **out)
{
    qrt_store_agg_held_t *h;
    apr_hash_t *trackers;
    apr_int64_t *num, before = APR_INT64_MAX;
    const void **flat, *cols[3];
    apr_status_t rv;
    int i;

    *out = NULL;
    if (!db->later || !qrt_dialect_remote(db->driver) || n <= 0) {
        return APR_SUCCESS;
    }
    h = apr_pcalloc(p, sizeof(*h));
    h->trk = apr_palloc(p, (apr_size_t)n * sizeof(*h->trk));
    h->trk_rows = apr_pcalloc(p, (apr_size_t)n * sizeof(*h->trk_rows));
    h->visitors = qrt_hash_make(p);
    trackers = qrt_hash_make(p);
    num = apr_palloc(p, (apr_size_t)n * sizeof(*num));
    flat = apr_palloc(p, (apr_size_t)n * 3 * sizeof(*flat));
    for (i = 0; i < n; i++) {
        if (v[i].bot) {
            continue;
        }
        if (!apr_hash_get(trackers, &v[i].tracker_id, sizeof(v[i].tracker_id))) {
            apr_hash_set(trackers, &v[i].tracker_id, sizeof(v[i].tracker_id), "");
            h->trk[h->ntrk++] = v[i].tracker_id;
        }
        if (!apr_hash_get(h->visitors, &v[i].visitor, sizeof(v[i].visitor))) {
            int *at = apr_palloc(p, sizeof(*at));

            *at = h->nvisitors;
            num[h->nvisitors] = h->nvisitors;
            flat[3 * h->nvisitors] = &num[h->nvisitors];
            flat[3 * h->nvisitors + 1] = &v[i].visitor;
            flat[3 * h->nvisitors + 2] = &before;
            apr_hash_set(h->visitors, &v[i].visitor, sizeof(v[i].visitor), at);
            h->nvisitors++;
        }
    }
    if (h->nvisitors == 0) {
        return APR_SUCCESS;
    }
    for (i = 0; i < h->ntrk; i++) {
        rv = qrt_store_agg_acc_trk_hold(db, p, h->trk[i], &h->trk_rows[i]);
        if (rv != APR_SUCCESS) {
            return rv == APR_ENOTIMPL ? APR_SUCCESS : rv;
        }
    }
    for (i = 0; i < 3; i++) {
        cols[i] = qrt_db_array(p, 'l', flat, 3, i, h->nvisitors);
    }
    rv = qrt_db_hold_select(db, p, SQL_agg_seek_visitor_many, cols, &h->seek);
    if (rv != APR_SUCCESS && rv != APR_ENOTIMPL) {
        return rv;
    }
    *out = h;
    return APR_SUCCESS;
}

/* A batch's visitors' previous visits sought at once (PostgreSQL). */
typedef struct {
    apr_int64_t key[2];             /* visitor, account */
    apr_int64_t before;             /* the id of its first visit of the batch */
    agg_seek_row last;
    int listed;                     /* imports: recent was read */
    int nr;                         /* its rows; -1: not usable */
    agg_seek_row *recent;           /* the visitor's latest visits before, latest first */
} agg_pre;

static void agg_pre_fill(agg_seek_row *s, qrt_db_t *db, apr_dbd_row_t *row)
{
    /* with its strings (no query a visit for them: a round trip each) */
    agg_seek_fill(s, db, row, 1);
    s->browser = qrt_store_agg_acc_col(db, row, 6);
    s->country = qrt_store_agg_acc_col(db, row, 7);
    s->city = qrt_store_agg_acc_col(db, row, 8);
}

static apr_status_t agg_pre_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_pre *pre = ctx;

    agg_pre_fill(&pre[qrt_db_int(db, row, 0, 0)].last, db, row);
    return APR_SUCCESS;
}

/* A row of agg_seek_visitor_recent_many: one of visitor at's latest visits. The rows
 * are gathered first, then handed out (most visitors have one or two, few eight). */
typedef struct {
    int at;
    agg_seek_row r;
} agg_recent_of;

typedef struct {
    agg_pre *pre;
    int m;
    apr_array_header_t *rows;       /* of agg_recent_of */
} agg_pre_recent_ctx;

static apr_status_t agg_pre_recent_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_pre_recent_ctx *c = ctx;
    apr_int64_t at = qrt_db_int(db, row, 0, -1);
    agg_recent_of *x;

    if (at < 0 || at >= c->m) {
        db->error = "agg_seek_visitor_recent_many: a row of no visitor";
        return APR_EGENERAL;
    }
    x = apr_array_push(c->rows);
    x->at = (int)at;
    agg_pre_fill(&x->r, db, row);
    c->pre[at].nr++;
    return APR_SUCCESS;
}

/* Latest first, as the seeks order them. */
static int agg_recent_cmp(const void *a, const void *b)
{
    const agg_seek_row *x = a, *y = b;

    if (x->t != y->t) {
        return x->t > y->t ? -1 : 1;
    }
    return x->id > y->id ? -1 : x->id < y->id;
}

/* A row of the held agg_seek_visitor_many: the visitor's latest visit, by its index. */
typedef struct {
    agg_seek_row *latest;
    int n;
} agg_held_seek;

static apr_status_t agg_held_seek_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_held_seek *c = ctx;
    apr_int64_t at = qrt_db_int(db, row, 0, -1);

    if (at < 0 || at >= c->n) {
        db->error = "agg_seek_visitor_many: a row of no visitor";
        return APR_EGENERAL;
    }
    agg_pre_fill(&c->latest[at], db, row);
    return APR_SUCCESS;
}

/* PostgreSQL: the previous visit in the account of each visitor's first visit of the
 * batch (not a bot), sought in one statement (agg_seek_visitor_many; in an import's batch
 * with the visits before it, agg_seek_visitor_recent_many); *out maps (visitor, account)
 * to its agg_pre, for that first visit alone. */
static apr_status_t agg_prefetch(qrt_db_t *db, apr_pool_t *p, apr_hash_t *trk,
                                 const qrt_visit_t *v, int n,
                                 const qrt_store_agg_held_t *held, apr_hash_t **out)
{
    agg_pre *pre = apr_pcalloc(p, (apr_size_t)(n > 0 ? n : 1) * sizeof(*pre));
    apr_int64_t *num = apr_palloc(p, (apr_size_t)(n > 0 ? n : 1) * sizeof(*num));
    const void **args = apr_palloc(p, (apr_size_t)(n > 0 ? n : 1) * 3 * sizeof(*args));
    apr_status_t rv = APR_SUCCESS;
    int i, m = 0;

    *out = qrt_hash_make(p);
    for (i = 0; i < n && rv == APR_SUCCESS; i++) {
        qrt_store_agg_trk_t *k;
        agg_pre *x = &pre[m];

        if (v[i].bot) {
            continue;
        }
        rv = qrt_store_agg_acc_trk_get(db, p, trk, v[i].tracker_id, 1, &k);
        if (rv != APR_SUCCESS) {
            break;
        }
        x->key[0] = v[i].visitor;
        x->key[1] = k->account;
        if (apr_hash_get(*out, x->key, sizeof(x->key))) {
            continue;
        }
        apr_hash_set(*out, x->key, sizeof(x->key), x);
        x->before = v[i].id;            /* (PostgreSQL: each visit has its id) */
        num[m] = m;
        args[3 * m] = &num[m];
        args[3 * m + 1] = &x->key[0];
        args[3 * m + 2] = &x->before;
        m++;
    }
    if (rv == APR_SUCCESS && held && held->seek && held->seek->done) {
        /* sought with the insert's round trip, before the batch's rows */
        agg_held_seek c;

        c.n = held->nvisitors;
        c.latest = apr_pcalloc(p, (apr_size_t)(c.n > 0 ? c.n : 1) * sizeof(*c.latest));
        rv = qrt_db_held_each(db, held->seek, agg_held_seek_row, &c);
        for (i = 0; i < m && rv == APR_SUCCESS; i++) {
            const int *at = apr_hash_get(held->visitors, &pre[i].key[0],
                                         sizeof(pre[i].key[0]));

            if (!at) {
                db->error = "a visitor of the batch was not sought";
                rv = APR_EGENERAL;
                break;
            }
            pre[i].last = c.latest[*at];
        }
    }
    else if (rv == APR_SUCCESS && n >= AGG_RECENT_BATCH_MIN) {
        /* an import's batch: each visitor's few latest visits, which answer most of the
         * seeks agg_prefetch_seeks would make (agg_guess_tell) */
        agg_pre_recent_ctx c = { pre, m, apr_array_make(p, m > 0 ? m : 1,
                                                        sizeof(agg_recent_of)) };
        agg_seek_row *flat;
        apr_size_t at = 0;

        rv = qrt_db_each_rows(db, p, SQL_agg_seek_visitor_recent, "lll", args, m,
                              agg_pre_recent_row, &c);
        flat = apr_palloc(p, (apr_size_t)(c.rows->nelts > 0 ? c.rows->nelts : 1)
                             * sizeof(*flat));
        for (i = 0; i < m; i++) {
            pre[i].listed = 1;
            pre[i].recent = flat + at;
            at += (apr_size_t)pre[i].nr;
            pre[i].nr = 0;
        }
        for (i = 0; i < c.rows->nelts && rv == APR_SUCCESS; i++) {
            const agg_recent_of *x = &APR_ARRAY_IDX(c.rows, i, agg_recent_of);

            pre[x->at].recent[pre[x->at].nr++] = x->r;
        }
        for (i = 0; i < m && rv == APR_SUCCESS; i++) {
            qsort(pre[i].recent, (apr_size_t)pre[i].nr, sizeof(*pre[i].recent),
                  agg_recent_cmp);
            if (pre[i].nr > AGG_RECENT) {
                pre[i].nr = AGG_RECENT;     /* (the statement reads no more) */
            }
            if (pre[i].nr > 0) {
                pre[i].last = pre[i].recent[0];
            }
        }
    }
    else if (rv == APR_SUCCESS) {
        rv = qrt_db_each_rows(db, p, SQL_agg_seek_visitor, "lll", args, m, agg_pre_row, pre);
    }
    for (i = 0; i < m && rv == APR_SUCCESS; i++) {
        rv = agg_seek_account(db, p, trk, pre[i].key[0], pre[i].key[1], pre[i].before,
                              &pre[i].last);
        if (!pre[i].listed
            || (pre[i].nr > 0 && (!pre[i].last.has || pre[i].last.id != pre[i].recent[0].id))) {
            pre[i].nr = -1;         /* (none read, or sought again in the account) */
        }
    }
    return rv;
}

/* One of a visitor's visits of the batch in the account, in order, latest first. */
typedef struct agg_hist agg_hist;
struct agg_hist {
    apr_int64_t t, tracker;
    const char *val[SEEKS];     /* (SEEK_BR, SEEK_CO, SEEK_CI) */
    agg_hist *next;
};

/* A visitor's latest visit as agg_prefetch_seeks guesses it (the batch's order). */
typedef struct {
    int has, seen;              /* seen: the batch's last visit is the latest (in order) */
    int deferred;               /* out of order: its later visits are deferred too */
    apr_int64_t tracker, seen_t, max_t;
    const char *browser, *country, *city;
    const agg_pre *pre;         /* imports: its visits before the batch (pre->recent) */
    agg_hist *hist;             /* imports: its visits of the batch so far */
} agg_guess;

/* The batch's own visits of a visitor agg_guess_tell looks through, at most: a visitor
 * with thousands of visits in a batch, each in a new city, would otherwise cost the
 * square of them; past these its seek is made. */
#define AGG_HIST_MAX 64

/* Imports: the answer of the seek of kind for a visit of g's visitor (on tracker, or with
 * value val) from the visits before it that g holds, into s: 1 when they tell, which
 * is when one of them has it, or they are all of the visitor's visits before. */
static apr_status_t agg_guess_tell(qrt_db_t *db, apr_pool_t *p, apr_hash_t *trk,
                                   const agg_guess *g, apr_int64_t account, int kind,
                                   apr_int64_t tracker, const char *val, agg_seeks *s,
                                   int *told)
{
    const agg_hist *h;
    int i, walked = 0;

    *told = 0;
    if (!g->pre || g->pre->nr < 0) {
        return APR_SUCCESS;
    }
    for (h = g->hist; h; h = h->next) {
        if (++walked > AGG_HIST_MAX) {
            return APR_SUCCESS;
        }
        if (kind == SEEK_TR ? h->tracker == tracker : !strcmp(h->val[kind], val)) {
            s->has[kind] = 1;
            s->t[kind] = h->t;
            s->asked[kind] = *told = 1;
            return APR_SUCCESS;
        }
    }
    for (i = 0; i < g->pre->nr; i++) {
        const agg_seek_row *r = &g->pre->recent[i];
        const char *had;

        if (kind == SEEK_TR) {
            if (r->tracker != tracker) {
                continue;
            }
        }
        else {
            /* the seeks of a dimension read the account's aggregated trackers alone */
            qrt_store_agg_trk_t *k;
            apr_status_t rv = qrt_store_agg_acc_trk_get(db, p, trk, r->tracker, 0, &k);

            if (rv == APR_NOTFOUND) {
                db->error = NULL;
                continue;
            }
            if (rv != APR_SUCCESS) {
                return rv;
            }
            had = kind == SEEK_BR ? r->browser : kind == SEEK_CO ? r->country : r->city;
            if (k->account != account || strcmp(had, val)) {
                continue;
            }
        }
        s->has[kind] = 1;
        s->t[kind] = r->t;
        s->asked[kind] = *told = 1;
        return APR_SUCCESS;
    }
    if (g->pre->nr < AGG_RECENT) {
        s->has[kind] = 0;
        s->asked[kind] = *told = 1;
    }
    return APR_SUCCESS;
}

/* What agg_prefetch_seeks found for the batch, by visit. */
typedef struct {
    agg_seeks *seeks;
    agg_pre *prev;              /* the latest visit before, when the batch's is not */
    char *prev_asked;
} agg_batch_reads;

/* The seeks the loop will likely make for the batch's visits (those whose visitor's
 * latest visit, as the batch's order and the prefetched previous visits tell, differs
 * in tracker, browser, country or city), in one statement a kind, where they cost a
 * round trip each. A guess that turns out wrong costs only its seek, made as before. */
static apr_status_t agg_prefetch_seeks(qrt_db_t *db, apr_pool_t *p, apr_hash_t *trk,
                                       const qrt_visit_t *v, const int *is_new, int n,
                                       apr_hash_t *prefetched, agg_batch_reads *out)
{
    static const char *const labels[SEEKS] = {
        SQL_agg_seek_visitor_on_tracker, SQL_agg_seek_visitor_browser,
        SQL_agg_seek_visitor_country, SQL_agg_seek_visitor_city };
    apr_size_t rows = (apr_size_t)(n > 0 ? n : 1);
    agg_seeks *seeks = apr_pcalloc(p, rows * sizeof(*seeks));
    apr_int64_t *num = apr_palloc(p, rows * sizeof(*num));
    const void **args[SEEKS];
    apr_hash_t *guess = qrt_hash_make(p);
    apr_status_t rv = APR_SUCCESS;
    int m[SEEKS] = { 0 }, i, kind, np = 0;
    const void **pargs = apr_palloc(p, rows * 3 * sizeof(*pargs));

    out->prev = apr_pcalloc(p, rows * sizeof(*out->prev));
    out->prev_asked = apr_pcalloc(p, rows);
    for (kind = 0; kind < SEEKS; kind++) {
        args[kind] = apr_palloc(p, rows * 5 * sizeof(*args[kind]));
    }
    for (i = 0; i < n && rv == APR_SUCCESS; i++) {
        qrt_store_agg_trk_t *k;
        apr_int64_t key[2];
        agg_guess *g;
        const char *val[SEEKS];

        if (v[i].bot) {
            continue;
        }
        rv = qrt_store_agg_acc_trk_get(db, p, trk, v[i].tracker_id, 1, &k);
        if (rv != APR_SUCCESS) {
            break;
        }
        key[0] = v[i].visitor;
        key[1] = k->account;
        g = apr_hash_get(guess, key, sizeof(key));
        if (!g) {
            agg_pre *pre = apr_hash_get(prefetched, key, sizeof(key));

            g = apr_pcalloc(p, sizeof(*g));
            g->pre = pre;
            if (pre && pre->last.has) {
                g->has = 1;
                g->tracker = pre->last.tracker;
                g->browser = pre->last.browser;
                g->country = pre->last.country;
                g->city = pre->last.city;
                g->max_t = pre->last.t;
            }
            g->seen = 1;            /* (its first visit: the prefetched one is the latest) */
            g->seen_t = g->max_t;
            apr_hash_set(guess, apr_pmemdup(p, key, sizeof(key)), sizeof(key), g);
        }
        else if (g->deferred) {
            continue;               /* (re-chained after the loop, with no seeks) */
        }
        else if (!g->seen || g->seen_t > v[i].visit_start) {
            /* the loop seeks the latest visit before this one */
            pargs[3 * np] = &num[i];
            pargs[3 * np + 1] = &v[i].visitor;
            pargs[3 * np + 2] = &v[i].id;
            out->prev_asked[i] = 1;
            np++;
        }
        num[i] = i;
        if (g->has && g->max_t > v[i].visit_start) {
            /* out of order: the loop defers the visitor's visits from it on */
            g->deferred = 1;
            continue;
        }
        val[SEEK_TR] = NULL;
        val[SEEK_BR] = qrt_store_agg_acc_nz(v[i].browser);
        val[SEEK_CO] = qrt_store_agg_acc_nz(v[i].country);
        val[SEEK_CI] = qrt_store_agg_acc_nz(v[i].city);
        if (g->has) {
            const char *had[SEEKS] = { NULL, g->browser, g->country, g->city };

            for (kind = 0; kind < SEEKS && rv == APR_SUCCESS; kind++) {
                const void **a = args[kind] + (apr_size_t)m[kind] * (kind ? 5 : 4);
                int told;

                if (kind == SEEK_TR ? g->tracker == v[i].tracker_id || is_new[i] > 0
                                    : had[kind] && !strcmp(had[kind], val[kind])) {
                    continue;
                }
                rv = agg_guess_tell(db, p, trk, g, k->account, kind, v[i].tracker_id,
                                    val[kind], &seeks[i], &told);
                if (rv != APR_SUCCESS || told) {
                    continue;
                }
                a[0] = &num[i];
                a[1] = &v[i].visitor;
                a[2] = kind == SEEK_TR ? (const void *)&v[i].tracker_id
                                       : (const void *)&k->account;
                a[3] = &v[i].id;
                a[4] = val[kind];
                seeks[i].asked[kind] = 1;
                m[kind]++;
            }
        }
        if (g->pre && g->pre->nr >= 0) {
            agg_hist *h = apr_palloc(p, sizeof(*h));

            h->t = v[i].visit_start;
            h->tracker = v[i].tracker_id;
            memcpy(h->val, val, sizeof(h->val));
            h->next = g->hist;
            g->hist = h;
        }
        g->has = g->seen = 1;
        g->seen_t = v[i].visit_start;
        if (v[i].visit_start > g->max_t) {
            g->max_t = v[i].visit_start;
        }
        g->tracker = v[i].tracker_id;
        g->browser = val[SEEK_BR];
        g->country = val[SEEK_CO];
        g->city = val[SEEK_CI];
    }
    for (kind = 0; kind < SEEKS && rv == APR_SUCCESS; kind++) {
        agg_seeks_ctx ctx = { seeks, kind };

        rv = qrt_db_each_rows(db, p, labels[kind], kind ? "lllls" : "llll", args[kind],
                              m[kind], agg_seeks_row, &ctx);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_db_each_rows(db, p, SQL_agg_seek_visitor, "lll", pargs, np, agg_pre_row,
                              out->prev);
    }
    out->seeks = seeks;
    return rv;
}

/* One chunk of a side of agg_seek_tracker_sqlite: rows read, the cursor (the last row's
 * time and id), and the match when one was found. */
typedef struct {
    int tracker_side;           /* rows of agg_seek_tracker_chunk, else _visitor_chunk */
    apr_int64_t visitor, tracker, before;
    apr_int64_t at_t, at_id;    /* the cursor: rows before (at_t, at_id) come next */
    int rows, found;
    apr_int64_t t;
} agg_seek_side;

static apr_status_t agg_seek_side_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_seek_side *s = ctx;
    apr_int64_t t = qrt_db_int(db, row, 2 - !s->tracker_side, 0);
    apr_int64_t id = qrt_db_int(db, row, 3 - !s->tracker_side, 0);
    int match = s->tracker_side
        ? qrt_db_int(db, row, 0, 0) == s->visitor && qrt_db_int(db, row, 1, 1) == 0
          && id < s->before
        : qrt_db_int(db, row, 0, 0) == s->tracker;

    s->rows++;
    s->at_t = t;
    s->at_id = id;
    if (match && !s->found) {
        s->found = 1;
        s->t = t;
    }
    return APR_SUCCESS;
}

#define SEEK_CHUNK_FIRST 32
#define SEEK_CHUNK_MAX   4096

/* SQLite: the latest visit of v's visitor before x on x's tracker, sought along the
 * visitor's visits and along the tracker's in turn, chunks growing from
 * SEEK_CHUNK_FIRST: both meet the same visit first (newest first, by time then id), so
 * the answer is that of agg_seek_visitor_on_tracker, at about twice the cost of the
 * shorter of the two walks instead of the visitor's whole one. A side that ends
 * without it ends the seek: there is none. */
static apr_status_t agg_seek_tracker_sqlite(qrt_db_t *db, apr_pool_t *p,
                                            const qrt_visit_t *v,
                                            const qrt_agg_visit_t *x,
                                            qrt_store_agg_prev_t *out)
{
    agg_seek_side side[2];
    apr_int64_t limit = SEEK_CHUNK_FIRST;
    int k;

    memset(side, 0, sizeof(side));
    for (k = 0; k < 2; k++) {
        side[k].tracker_side = k;
        side[k].visitor = v->visitor;
        side[k].tracker = x->tracker;
        side[k].before = x->id;
        side[k].at_t = APR_INT64_MAX;
        side[k].at_id = APR_INT64_MAX;
    }
    out->has = 0;
    out->same = 0;
    out->t = 0;
    for (;;) {
        for (k = 0; k < 2; k++) {
            agg_seek_side *s = &side[k];
            const void *va[] = { &s->visitor, &s->before, &s->at_t, &s->at_id, &limit };
            const void *ta[] = { &s->tracker, &s->at_t, &s->at_id, &limit };
            apr_status_t rv;

            s->rows = 0;
            rv = qrt_db_each(db, p, k ? SQL_agg_seek_tracker_chunk : SQL_agg_seek_visitor_chunk,
                             k ? ta : va, agg_seek_side_row, s);
            if (rv != APR_SUCCESS) {
                return rv;
            }
            if (s->found) {
                out->has = 1;
                out->t = s->t;
                return APR_SUCCESS;
            }
            if (s->rows < limit) {
                return APR_SUCCESS;
            }
        }
        if (limit < SEEK_CHUNK_MAX) {
            limit *= 2;
        }
    }
}

/* Whether the visitor has a visit before x on x's tracker (agg_seek_visitor_on_tracker). */
static apr_status_t agg_seek_tracker(qrt_db_t *db, apr_pool_t *p, const qrt_visit_t *v,
                                     const qrt_agg_visit_t *x, const agg_seeks *s,
                                     qrt_store_agg_prev_t *out)
{
    const void *args[] = { &v->visitor, &x->tracker, &x->id };

    if (agg_seek_known(s, SEEK_TR, out)) {
        return APR_SUCCESS;
    }
    if (qrt_dialect_embedded(db->driver)) {
        return agg_seek_tracker_sqlite(db, p, v, x, out);
    }
    return agg_seek(db, p, SQL_agg_seek_visitor_on_tracker, args, out);
}

/* Prevs of an in-order visit x (no later visit of its visitor in the account), and
 * *is_new when it is not known yet (-1: x is the first visit of its visitor and
 * tracker in the batch, so any visit before it there came before the batch). */
static apr_status_t agg_prevs_inorder(qrt_db_t *db, apr_pool_t *p, apr_hash_t *trk,
                                      const qrt_visit_t *v, const qrt_agg_visit_t *x,
                                      apr_int64_t account, int *is_new,
                                      const agg_seek_row *last, const agg_seeks *s,
                                      const agg_recent *rc, qrt_store_agg_prevs_t *pv)
{
    qrt_store_agg_trk_t *lk;
    apr_status_t rv = APR_SUCCESS;
    int j;

    memset(pv, 0, sizeof(*pv));
    pv->tag = apr_pcalloc(p, (x->ntags > 0 ? x->ntags : 1) * sizeof(qrt_store_agg_prev_t));
    if (!last->has) {
        /* no visit before x in the account: none on its tracker either */
        if (*is_new < 0) {
            *is_new = 1;
        }
        return APR_SUCCESS;
    }
    pv->a.has = pv->a.same = 1;
    pv->a.t = last->t;
    if (last->tracker == x->tracker) {
        pv->tr = pv->a;
        if (*is_new < 0) {
            *is_new = 0;
        }
    }
    else if (*is_new <= 0) {
        rv = agg_recent_tracker(rc, x->tracker, &pv->tr) ? APR_SUCCESS
             : agg_seek_tracker(db, p, v, x, s, &pv->tr);
        if (*is_new < 0) {
            *is_new = !pv->tr.has;
        }
    }
    if (rv == APR_SUCCESS) {
        rv = agg_prev_dim(db, p, trk, v, x, account, last->browser, x->browser,
                          SQL_agg_seek_visitor_browser, &pv->a, s, rc, SEEK_BR, &pv->br);
    }
    if (rv == APR_SUCCESS) {
        rv = agg_prev_dim(db, p, trk, v, x, account, last->country, x->country,
                          SQL_agg_seek_visitor_country, &pv->a, s, rc, SEEK_CO, &pv->co);
    }
    if (rv == APR_SUCCESS) {
        rv = agg_prev_dim(db, p, trk, v, x, account, last->city, x->city,
                          SQL_agg_seek_visitor_city, &pv->a, s, rc, SEEK_CI, &pv->ci);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_store_agg_acc_trk_get(db, p, trk, last->tracker, 0, &lk);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    pv->fg = qrt_agg_subset(x->tags, x->ntags, lk->tags, lk->ntags);
    for (j = 0; j < x->ntags && rv == APR_SUCCESS; j++) {
        if (qrt_store_agg_acc_has_tag(lk->tags, lk->ntags, x->tags[j])) {
            pv->tag[j] = pv->a;
        }
        else {
            const void *args[] = { &v->visitor, &account, &x->id, x->tags[j] };

            rv = agg_seek(db, p, SQL_agg_seek_visitor_tag, args, &pv->tag[j]);
        }
    }
    return rv;
}

/* The batch's deferred visitors re-chained, each once; on PostgreSQL their visits read
 * in two statements for all of them. */
static apr_status_t agg_recompute_deferred(qrt_store_agg_acc_t *a, qrt_db_t *db,
                                           apr_pool_t *p, apr_hash_t *trk,
                                           apr_array_header_t *defers)
{
    agg_defer **d = (agg_defer **)defers->elts;
    agg_lists *lists = NULL;
    apr_status_t rv = APR_SUCCESS;
    int i, n = defers->nelts;

    if (n > 0 && qrt_dialect_remote(db->driver)) {
        apr_int64_t *num = apr_palloc(p, n * sizeof(*num));
        const void **fargs = apr_palloc(p, (apr_size_t)n * 5 * sizeof(*fargs));
        const void **largs = apr_palloc(p, (apr_size_t)n * 6 * sizeof(*largs));
        agg_lists_ctx c;

        lists = apr_pcalloc(p, n * sizeof(*lists));
        for (i = 0; i < n; i++) {
            const void **f = fargs + (apr_size_t)i * 5, **l = largs + (apr_size_t)i * 6;

            num[i] = i;
            f[0] = l[0] = &num[i];
            f[1] = l[1] = &d[i]->visitor;
            f[2] = l[2] = &d[i]->account;
            f[3] = &d[i]->upto;
            f[4] = &d[i]->from_t;
            l[3] = &d[i]->from_id;
            l[4] = &d[i]->from_t;
            l[5] = &agg_probe;
            lists[i].asked = 1;
            lists[i].from = apr_array_make(p, 8, sizeof(qrt_agg_visit_t));
            lists[i].before = apr_array_make(p, 8, sizeof(qrt_agg_visit_t));
        }
        c.p = p;
        c.l = lists;
        c.before = 0;
        rv = qrt_db_each_rows(db, p, SQL_agg_visitor_from, "lllll", fargs, n, agg_lists_row,
                              &c);
        c.before = 1;
        if (rv == APR_SUCCESS) {
            rv = qrt_db_each_rows(db, p, SQL_agg_visitor_before_of_kind, "llllll", largs, n,
                                  agg_lists_row, &c);
        }
    }
    for (i = 0; i < n && rv == APR_SUCCESS; i++) {
        rv = agg_recompute(a, db, p, trk, d[i], lists ? &lists[i] : NULL);
    }
    return rv;
}

apr_status_t qrt_store_agg_write_visits(qrt_db_t *db, apr_pool_t *p, const qrt_visit_t *v,
                                        int *is_new, const apr_int64_t *dict_ids, int n,
                                        const qrt_store_agg_held_t *held)
{
    apr_pool_t *sp;
    qrt_store_agg_acc_t *a;
    apr_hash_t *trk, *batch_last, *deferred, *prefetched = NULL;
    apr_array_header_t *defers;     /* agg_defer *, in the order found */
    agg_batch_reads br = { NULL, NULL, NULL };     /* PostgreSQL: the batch's seeks */
    agg_seeks *seeks = NULL;
    agg_names *names = NULL;        /* SQLite: agg_recent's strings */
    apr_int64_t base = 0;
    apr_status_t rv = APR_SUCCESS;
    int i, need_ids = 0;

    for (i = 0; i < n; i++) {
        need_ids |= v[i].id <= 0;
    }
    if (n <= 0) {
        return APR_SUCCESS;
    }
    apr_pool_create(&sp, p);
    a = qrt_store_agg_acc_make(db, sp);
    /* (keys of visitor ids, accounts and trackers) */
    trk = qrt_hash_make(sp);
    batch_last = qrt_hash_make(sp);
    deferred = qrt_hash_make(sp);
    defers = apr_array_make(sp, 4, sizeof(agg_defer *));
    if (qrt_dialect_embedded(db->driver) && n >= AGG_RECENT_BATCH_MIN) {
        names = apr_palloc(sp, sizeof(*names));
        names->ua = apr_hash_make(sp);
        names->place = apr_hash_make(sp);
    }
    if (need_ids) {
        /* The batch's rows are the newest: ids follow the insertion order. */
        const void *args[] = { NULL };
        apr_int64_t max = 0;

        rv = qrt_db_each(db, sp, SQL_agg_max_id, args, qrt_store_agg_acc_int_row, &max);
        base = max - n + 1;
    }
    else if (qrt_dialect_remote(db->driver)) {
        /* (what the batch needs in a few round trips, not one a visit) */
        for (i = 0; held && i < held->ntrk; i++) {
            qrt_store_agg_acc_trk_put(db, sp, trk, held->trk[i], held->trk_rows[i]);
        }
        rv = agg_prefetch(db, sp, trk, v, n, held, &prefetched);
        if (rv == APR_SUCCESS) {
            rv = agg_prefetch_seeks(db, sp, trk, v, is_new, n, prefetched, &br);
            seeks = br.seeks;
        }
    }
    for (i = 0; i < n && rv == APR_SUCCESS; i++) {
        qrt_agg_visit_t x;
        agg_seek_row last, *seen;
        agg_defer *d;
        agg_pre *pre = NULL;
        qrt_store_agg_prevs_t pv;
        qrt_store_agg_trk_t *k;
        apr_int64_t *seen_key;
        agg_recent recent, *rc = NULL;

        if (v[i].bot) {
            continue;
        }
        rv = qrt_store_agg_acc_trk_get(db, sp, trk, v[i].tracker_id, 1, &k);
        if (rv != APR_SUCCESS) {
            break;
        }
        memset(&x, 0, sizeof(x));
        x.id = need_ids ? base + i : v[i].id;
        x.t = v[i].visit_start;
        x.tracker = v[i].tracker_id;
        x.click = v[i].source && !strcmp(v[i].source, "click");
        x.browser = qrt_store_agg_acc_nz(v[i].browser);
        x.country = qrt_store_agg_acc_nz(v[i].country);
        x.city = qrt_store_agg_acc_nz(v[i].city);
        x.tags = k->tags;
        x.ntags = k->ntags;
        memset(&last, 0, sizeof(last));
        seen_key = apr_palloc(sp, 2 * sizeof(*seen_key));   /* visitor, account */
        seen_key[0] = v[i].visitor;
        seen_key[1] = k->account;
        d = apr_hash_get(deferred, seen_key, 2 * sizeof(*seen_key));
        if (d) {
            /* the visitor's visits in the account are re-chained after the loop */
            if (x.t < d->from_t || (x.t == d->from_t && x.id < d->from_id)) {
                d->from_t = x.t;
                d->from_id = x.id;
            }
            d->upto = x.id;
            if (is_new[i] < 0) {
                qrt_store_agg_prev_t tr;

                rv = agg_seek_tracker(db, sp, &v[i], &x, seeks ? &seeks[i] : NULL, &tr);
                is_new[i] = !tr.has;
            }
            continue;
        }
        seen = apr_hash_get(batch_last, seen_key, 2 * sizeof(*seen_key));
        if (prefetched) {
            /* (the visitor's first visit here: what was sought for it, once) */
            pre = apr_hash_get(prefetched, seen_key, 2 * sizeof(*seen_key));
            apr_hash_set(prefetched, seen_key, 2 * sizeof(*seen_key), NULL);
        }
        if (seen && seen->t <= x.t) {
            /* The visitor's latest visit in the account is an earlier one of this
             * batch, recorded in order: no need to look for it. */
            last = *seen;
        }
        else if (pre) {
            last = pre->last;
        }
        else if (br.prev_asked && br.prev_asked[i]) {
            last = br.prev[i].last;
            rv = agg_seek_account(db, sp, trk, v[i].visitor, k->account, x.id, &last);
        }
        else {
            if (names) {
                rc = &recent;
                rc->ua = dict_ids[2 * i];
                rc->place = dict_ids[2 * i + 1];
                rc->names = names;
            }
            rv = agg_seek_prev(db, sp, trk, v[i].visitor, k->account, x.id, &last, rc);
        }
        if (rv != APR_SUCCESS) {
            break;
        }
        if (last.has && last.t > x.t) {
            apr_hash_set(batch_last, seen_key, 2 * sizeof(*seen_key), NULL);
            if (is_new[i] < 0) {
                qrt_store_agg_prev_t tr;

                if (!agg_recent_tracker(rc, x.tracker, &tr)) {
                    rv = agg_seek_tracker(db, sp, &v[i], &x, seeks ? &seeks[i] : NULL, &tr);
                }
                is_new[i] = !tr.has;
            }
            d = apr_pcalloc(sp, sizeof(*d));
            d->visitor = v[i].visitor;
            d->account = k->account;
            d->first = d->from_id = d->upto = x.id;
            d->from_t = x.t;
            apr_hash_set(deferred, seen_key, 2 * sizeof(*seen_key), d);
            APR_ARRAY_PUSH(defers, agg_defer *) = d;
            continue;
        }
        if (last.has && rc && rc->n > 0) {
            rv = agg_recent_value(db, sp, rc, &rc->r[0], &x, SEEK_BR, &last.browser);
            if (rv == APR_SUCCESS) {
                rv = agg_recent_value(db, sp, rc, &rc->r[0], &x, SEEK_CO, &last.country);
            }
            if (rv == APR_SUCCESS) {
                rv = agg_recent_value(db, sp, rc, &rc->r[0], &x, SEEK_CI, &last.city);
            }
        }
        else if (last.has) {
            rv = agg_last_names(db, sp, &last, &x, dict_ids[2 * i], dict_ids[2 * i + 1]);
        }
        if (rv != APR_SUCCESS) {
            break;
        }
        seen = apr_palloc(sp, sizeof(*seen));
        seen->has = 1;
        seen->t = x.t;
        seen->id = x.id;
        seen->tracker = x.tracker;
        seen->ua = dict_ids[2 * i];
        seen->place = dict_ids[2 * i + 1];
        seen->browser = x.browser;
        seen->country = x.country;
        seen->city = x.city;
        apr_hash_set(batch_last, seen_key, 2 * sizeof(*seen_key), seen);
        rv = agg_prevs_inorder(db, sp, trk, &v[i], &x, k->account, &is_new[i], &last,
                               seeks ? &seeks[i] : NULL, rc, &pv);
        if (rv == APR_SUCCESS) {
            qrt_store_agg_acc_emit(a, 1, k->account, &x, &pv);
        }
    }
    if (rv == APR_SUCCESS) {
        rv = agg_recompute_deferred(a, db, sp, trk, defers);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_store_agg_acc_flush_counts(a);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_store_agg_acc_flush_links(a);
    }
    apr_pool_destroy(sp);
    return rv;
}

/* ---- a tracker deleted or retagged ---------------------------------------- */

typedef struct {
    apr_pool_t *p;
    apr_array_header_t *list;
} agg_strs_ctx;

static apr_status_t agg_strs_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_strs_ctx *c = ctx;

    APR_ARRAY_PUSH(c->list, const char *) = apr_pstrdup(c->p,
                                                        qrt_store_agg_acc_col(db, row, 0));
    return APR_SUCCESS;
}

static apr_status_t agg_trk_now_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    apr_int64_t *out = ctx;

    out[0] = qrt_db_int(db, row, 0, 0);
    out[1] = qrt_db_int(db, row, 1, 1);
    return APR_SUCCESS;
}

apr_status_t qrt_store_agg_write_tracker_changed(qrt_db_t *db, apr_pool_t *p,
                                                 apr_int64_t tracker_id)
{
    const void *args[] = { &tracker_id }, *none[] = { NULL };
    apr_int64_t now[2] = { 0, 1 }, nvis = 0, maxid = 0;
    apr_pool_t *sp, *vp;
    apr_hash_t *trk;
    qrt_store_agg_trk_t *k;
    agg_strs_ctx tags;
    apr_array_header_t *visitors;
    qrt_store_agg_acc_t *a;
    apr_status_t rv;
    int i, j;

    apr_pool_create(&sp, p);
    trk = apr_hash_make(sp);
    rv = qrt_store_agg_acc_trk_get(db, sp, trk, tracker_id, 0, &k);
    if (rv == APR_NOTFOUND) {
        apr_pool_destroy(sp);
        return APR_SUCCESS;         /* never aggregated: its first visit snapshots it */
    }
    tags.p = sp;
    tags.list = apr_array_make(sp, 4, sizeof(const char *));
    visitors = apr_array_make(sp, 64, sizeof(apr_int64_t));
    if (rv == APR_SUCCESS) {
        rv = qrt_db_each(db, sp, SQL_agg_trk_now, args, agg_trk_now_row, now);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_db_each(db, sp, SQL_agg_tags_now, args, agg_strs_row, &tags);
    }
    if (rv == APR_SUCCESS) {
        apr_int64_t bound = AGG_REPAIR_MAX + 1;
        const void *nargs[] = { &tracker_id, &bound };

        rv = qrt_db_each(db, sp, SQL_agg_trk_visitor_count, nargs, qrt_store_agg_acc_int_row,
                         &nvis);
    }
    if (rv == APR_SUCCESS && nvis > AGG_REPAIR_MAX) {
        apr_pool_destroy(sp);
        return APR_EAGAIN;          /* reports count from the visits until a rebuild */
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_db_each(db, sp, SQL_agg_trk_visitors, args, qrt_db_int_list_row,
                         visitors);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_db_each(db, sp, SQL_agg_max_id, none, qrt_store_agg_acc_int_row, &maxid);
    }
    qsort(tags.list->elts, tags.list->nelts, sizeof(const char *),
          qrt_store_agg_acc_strcmp);
    a = qrt_store_agg_acc_make(db, sp);
    apr_pool_create(&vp, sp);
    for (i = 0; i < visitors->nelts && rv == APR_SUCCESS; i++) {
        apr_int64_t visitor = APR_ARRAY_IDX(visitors, i, apr_int64_t);
        qrt_agg_visit_t *old, *cur;
        int n = 0, m = 0;

        rv = agg_history(db, vp, sp, trk, visitor, k->account, maxid, &old, &n);
        if (rv != APR_SUCCESS) {
            break;
        }
        cur = apr_palloc(vp, (n > 0 ? n : 1) * sizeof(*cur));
        for (j = 0; j < n; j++) {
            if (old[j].tracker != tracker_id) {
                cur[m++] = old[j];
            }
            else if (!now[1] && now[0] == k->account) {
                cur[m] = old[j];
                cur[m].tags = (const char *const *)tags.list->elts;
                cur[m++].ntags = tags.list->nelts;
            }
        }
        qrt_store_agg_acc_emit_list(a, vp, -1, k->account, old, n, 0);
        qrt_store_agg_acc_emit_list(a, vp, 1, k->account, cur, m, 0);
        if (a->nlinks > AGG_LINK_FLUSH) {
            rv = qrt_store_agg_acc_flush_links(a);
        }
        apr_pool_clear(vp);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_store_agg_acc_flush_counts(a);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_store_agg_acc_flush_links(a);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_db_exec(db, sp, SQL_agg_tag_del, NULL, args);
    }
    if (rv == APR_SUCCESS) {
        rv = (now[1] || now[0] != k->account)
             ? qrt_db_exec(db, sp, SQL_agg_trk_del, NULL, args)
             : qrt_db_exec(db, sp, SQL_agg_tag_snap, NULL, args);
    }
    apr_pool_destroy(sp);
    return rv;
}

apr_int64_t qrt_store_agg_write_probe(apr_int64_t n)
{
    apr_int64_t was = agg_probe;

    if (n > 0) {
        agg_probe = n;
    }
    return was;
}
