/* qrt_store_agg_rebuild: every report aggregate recomputed from the visits table
 * (qrtrack-admin aggregates rebuild, after a bulk load or a copy), visitor by visitor
 * in pages, through the accumulator of qrt_store_agg_acc.c. */
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>
#include "qrt_store.h"
#include "qrt_store_agg_acc.h"
#include "qrt_store_agg_rebuild.h"

#define AGG_SCAN_PAGE   50000       /* visits per page of the rebuild */

/* ---- rebuild --------------------------------------------------------------- */

typedef struct {
    qrt_store_agg_acc_t *a;
    apr_hash_t *trk;            /* tracker id -> qrt_store_agg_trk_t */
    apr_pool_t *vp;             /* the current visitor's visits */
    int has_visitor;            /* a current visitor */
    apr_int64_t visitor;
    apr_array_header_t *run;    /* its visits: qrt_agg_visit_t, account in .id's place */
    apr_array_header_t *accts;  /* account of each visit of run */
    apr_int64_t from;           /* the page starts at this visitor */
    long rows;
} agg_rb;

static apr_status_t rb_trk_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_rb *c = ctx;
    qrt_store_agg_trk_t *k = apr_pcalloc(c->a->p, sizeof(*k));

    k->id = qrt_db_int(db, row, 0, 0);
    k->account = qrt_db_int(db, row, 1, 0);
    k->tags = apr_pcalloc(c->a->p, sizeof(const char *));
    apr_hash_set(c->trk, &k->id, sizeof(k->id), k);
    return APR_SUCCESS;
}

static apr_status_t rb_tag_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    apr_hash_t *tags = ctx;
    apr_int64_t id = qrt_db_int(db, row, 0, 0);
    apr_array_header_t *list = apr_hash_get(tags, &id, sizeof(id));

    if (!list) {
        apr_int64_t *key = apr_palloc(apr_hash_pool_get(tags), sizeof(*key));

        *key = id;
        list = apr_array_make(apr_hash_pool_get(tags), 4, sizeof(const char *));
        apr_hash_set(tags, key, sizeof(*key), list);
    }
    APR_ARRAY_PUSH(list, const char *) = apr_pstrdup(apr_hash_pool_get(tags),
                                                     qrt_store_agg_acc_col(db, row, 1));
    return APR_SUCCESS;
}

/* Emits the finished visitor's visits, account by account. */
static void rb_visitor_done(agg_rb *c)
{
    qrt_agg_visit_t *all = (qrt_agg_visit_t *)c->run->elts;
    apr_int64_t *acct = (apr_int64_t *)c->accts->elts;
    int n = c->run->nelts, i, j, m;
    char *done;

    if (n == 0) {
        return;
    }
    done = apr_pcalloc(c->vp, n);
    for (i = 0; i < n; i++) {
        qrt_agg_visit_t *list;

        if (done[i]) {
            continue;
        }
        list = apr_palloc(c->vp, n * sizeof(*list));
        for (j = i, m = 0; j < n; j++) {
            if (!done[j] && acct[j] == acct[i]) {
                list[m++] = all[j];
                done[j] = 1;
            }
        }
        qrt_store_agg_acc_emit_list(c->a, c->vp, 1, acct[i], list, m, 0);
    }
}

static void rb_reset(agg_rb *c)
{
    apr_pool_clear(c->vp);
    c->has_visitor = 0;
    c->run = apr_array_make(c->vp, 16, sizeof(qrt_agg_visit_t));
    c->accts = apr_array_make(c->vp, 16, sizeof(apr_int64_t));
}

static apr_status_t rb_row(void *ctx, qrt_db_t *db, apr_dbd_row_t *row)
{
    agg_rb *c = ctx;
    apr_int64_t visitor = qrt_db_int(db, row, 0, 0);
    const char *src;
    apr_int64_t tracker = qrt_db_int(db, row, 3, 0);
    qrt_store_agg_trk_t *k = apr_hash_get(c->trk, &tracker, sizeof(tracker));
    qrt_agg_visit_t *x;

    c->rows++;
    if (!c->has_visitor || c->visitor != visitor) {
        rb_visitor_done(c);
        rb_reset(c);
        c->has_visitor = 1;
        c->visitor = visitor;
    }
    if (!k) {
        return APR_SUCCESS;         /* a deleted tracker */
    }
    x = apr_array_push(c->run);
    memset(x, 0, sizeof(*x));
    x->id = qrt_db_int(db, row, 1, 0);
    x->t = qrt_db_int(db, row, 2, 0);
    x->tracker = tracker;
    src = qrt_db_str(db, row, 4);
    x->click = src && !strcmp(src, "click");
    x->browser = qrt_store_agg_acc_intern(c->a, qrt_store_agg_acc_col(db, row, 5));
    x->country = qrt_store_agg_acc_intern(c->a, qrt_store_agg_acc_col(db, row, 6));
    x->city = qrt_store_agg_acc_intern(c->a, qrt_store_agg_acc_col(db, row, 7));
    x->tags = k->tags;
    x->ntags = k->ntags;
    APR_ARRAY_PUSH(c->accts, apr_int64_t) = k->account;
    return APR_SUCCESS;
}

apr_status_t qrt_store_agg_rebuild(qrt_db_t *db, apr_pool_t *p)
{
    static const char *const clear[] = {
        SQL_agg_blob_clear, SQL_agg_clear_cnt, SQL_agg_clear_link, SQL_agg_clear_gap,
        SQL_agg_clear_day, SQL_agg_clear_tag, SQL_agg_clear_trk,
        SQL_agg_trk_all, SQL_agg_tag_all, NULL
    };
    const void *none[] = { NULL };
    apr_pool_t *rp, *pp;
    apr_hash_t *tags;
    apr_hash_index_t *hi;
    agg_rb c;
    apr_status_t rv = APR_SUCCESS;
    apr_int64_t limit = AGG_SCAN_PAGE;
    int i;

    apr_pool_create(&rp, p);
    apr_pool_create(&pp, rp);
    if (qrt_dialect_embedded(db->driver)) {
        /* The rebuild writes links in visitor order, all over the indexes: give this
         * connection (qrtrack-admin's) a cache that holds them. A setting, not data. */
        int nrows = 0;

        apr_dbd_query(db->driver, db->handle, &nrows, "PRAGMA cache_size = -524288");
    }
    rv = qrt_store_write_lock(db, rp);
    for (i = 0; clear[i] && rv == APR_SUCCESS; i++) {
        rv = qrt_db_exec(db, rp, clear[i], NULL, none);
    }
    memset(&c, 0, sizeof(c));
    c.a = qrt_store_agg_acc_make(db, rp);
    c.trk = apr_hash_make(rp);
    apr_pool_create(&c.vp, rp);
    rb_reset(&c);
    tags = apr_hash_make(rp);
    if (rv == APR_SUCCESS) {
        rv = qrt_db_each(db, pp, SQL_agg_trk_load, none, rb_trk_row, &c);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_db_each(db, pp, SQL_agg_tag_load, none, rb_tag_row, tags);
    }
    for (hi = apr_hash_first(rp, tags);
         hi && rv == APR_SUCCESS; hi = apr_hash_next(hi)) {
        const apr_int64_t *id = apr_hash_this_key(hi);
        apr_array_header_t *list = apr_hash_this_val(hi);
        qrt_store_agg_trk_t *k = apr_hash_get(c.trk, id, sizeof(*id));

        if (k) {
            qsort(list->elts, list->nelts, sizeof(const char *), qrt_store_agg_acc_strcmp);
            k->tags = (const char **)list->elts;
            k->ntags = list->nelts;
        }
    }
    apr_pool_clear(pp);
    c.from = APR_INT64_MIN;
    while (rv == APR_SUCCESS) {
        const void *args[] = { &c.from, &limit };
        long before = c.rows;

        rv = qrt_db_each(db, pp, SQL_agg_scan_page, args, rb_row, &c);
        if (rv != APR_SUCCESS || c.rows - before < limit) {
            break;                  /* the last page: its last visitor is whole */
        }
        /* A full page: the last visitor may go on in the next one; read it whole. */
        {
            apr_int64_t whole = c.visitor;
            const void *one[] = { &whole };

            rb_reset(&c);
            rv = qrt_db_each(db, pp, SQL_agg_scan_one, one, rb_row, &c);
            if (whole == APR_INT64_MAX) {
                break;              /* no visitor can follow */
            }
            c.from = whole + 1;
        }
        rb_visitor_done(&c);
        rb_reset(&c);
        if (rv == APR_SUCCESS && c.a->nlinks > AGG_LINK_FLUSH) {
            rv = qrt_store_agg_acc_flush_links(c.a);
        }
        apr_pool_clear(pp);
    }
    if (rv == APR_SUCCESS) {
        rb_visitor_done(&c);
        rv = qrt_store_agg_acc_flush_links(c.a);
    }
    if (rv == APR_SUCCESS) {
        rv = qrt_store_agg_acc_flush_counts(c.a);
    }
    apr_pool_destroy(rp);
    return rv;
}
