/* qrt_store_copy: a whole database copied into an empty one, ids kept.
 *
 * Each table is read in pages keyed by its primary key (WHERE key > last ORDER BY
 * key LIMIT n): the drivers read a whole result into memory, so a page is what a
 * read costs, and each page is cleared before the next. Every column travels as
 * it is stored, NULLs included; integers are bound as integers (%lld), texts as
 * texts (%s), so both drivers store the types their columns declare. */
#include <string.h>
#include <apr_strings.h>
#include "qrt_store_copy.h"

/* How a copied table's pages follow one another: by column 0, or by columns 0 and 1
 * when column 1 is text, or (visits) by columns 0, 2 and 1. */
enum { KEY_ID, KEY_TEXT, KEY_VISIT };

/* One copied table: its statements and the kinds of its columns ('b': a blob, read
 * as hex and written back as bytes; the last column, as apr_dbd takes a blob's four
 * arguments where a NULL takes one). */
typedef struct {
    const char *name;
    const char *page;       /* label: the rows after a key, in key order, LIMIT %lld */
    const char *add;        /* label: one row, its columns in the page's order */
    const char *cols;       /* per column: 'i' integer, 's' text (NULL kept in both) */
    int key;                /* KEY_ID, KEY_TEXT or KEY_VISIT */
    const char *blob;       /* the name of the 'b' column, which apr_dbd's blob needs */
} copy_table;

/* In copy order: a row's references come before it (PostgreSQL checks them). */
static const copy_table copy_tables[QRT_COPY_TABLES] = {
    { "accounts", SQL_copy_accounts_page, SQL_copy_accounts_add, "issi", KEY_ID, NULL },
    { "tokens", SQL_copy_tokens_page, SQL_copy_tokens_add, "iisssiisi", KEY_ID, NULL },
    { "trackers", SQL_copy_trackers_page, SQL_copy_trackers_add,
      "iissssiiiiiiii", KEY_ID, NULL },
    { "tracker_tags", SQL_copy_tags_page, SQL_copy_tags_add, "isss", KEY_TEXT, NULL },
    { "tracker_routing", SQL_copy_routing_page, SQL_copy_routing_add, "isiiissi", KEY_ID, NULL },
    { "visits", SQL_copy_visits_page, SQL_copy_visits_add,
      "iiissssssssssiss", KEY_VISIT, NULL },
    /* not read from the source: made from the copied visits (copy_visitors) */
    { "tracker_visitors", NULL, NULL, NULL, KEY_ID, NULL },
    { "tracker_history", SQL_copy_history_page, SQL_copy_history_add, "iiiisss", KEY_ID, NULL },
    { "styles", SQL_copy_styles_page, SQL_copy_styles_add, "iissssiiiiiib", KEY_ID, "logo" },
    { "webhooks", SQL_copy_webhooks_page, SQL_copy_webhooks_add, "iisisiiissi", KEY_ID, NULL },
    { "webhook_events", SQL_copy_webhook_events_page, SQL_copy_webhook_events_add,
      "iissisiiiiiii", KEY_ID, NULL },
    { "webhook_attempts", SQL_copy_webhook_attempts_page, SQL_copy_webhook_attempts_add,
      "iiiiisii", KEY_ID, NULL },
    { "webhook_drops", SQL_copy_webhook_drops_page, SQL_copy_webhook_drops_add, "iiii", KEY_ID,
      NULL },
};

/* Where a table's copy has got to: the key of the last row copied. */
typedef struct {
    apr_int64_t id;         /* column 0 */
    apr_int64_t id2;        /* column 1, for a KEY_VISIT table */
    apr_int64_t id3;        /* column 2, for a KEY_VISIT table */
    const char *text;       /* column 1, for a KEY_TEXT table */
    apr_pool_t *pool;       /* holds text; cleared per page */
} copy_key;

apr_status_t qrt_store_copy_check_empty(qrt_db_t *db, apr_pool_t *p, const char **table)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *none[] = { NULL };
    apr_status_t rv = qrt_db_select(db, p, SQL_copy_nonempty, &res, none);

    *table = NULL;
    if (rv != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        if (!*table) {
            *table = apr_pstrdup(p, qrt_db_str(db, row, 0));
        }
    }
    return *table ? APR_EEXIST : APR_SUCCESS;
}

static int copy_hex(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Writes one row of the source to the target as it is. */
static apr_status_t copy_row(qrt_db_t *from, qrt_db_t *to, apr_pool_t *pp,
                             const copy_table *t, apr_dbd_row_t *row)
{
    const void *args[20];
    int i;

    for (i = 0; t->cols[i]; i++) {
        const char *s = qrt_db_str(from, row, i);

        if (s && t->cols[i] == 'i') {
            apr_int64_t *v = apr_palloc(pp, sizeof(*v));

            *v = apr_atoi64(s);
            args[i] = v;
        }
        else if (s && *s && t->cols[i] == 'b') {
            apr_size_t n = strlen(s) / 2, j, *len = apr_palloc(pp, sizeof(*len));
            unsigned char *b = apr_palloc(pp, n ? n : 1);

            for (j = 0; j < n; j++) {
                int hi = copy_hex(s[2 * j]), lo = copy_hex(s[2 * j + 1]);

                if (hi < 0 || lo < 0) {
                    to->error = apr_psprintf(pp, "%s: a blob that is not hex", t->name);
                    return APR_EGENERAL;
                }
                b[j] = (unsigned char)(hi << 4 | lo);
            }
            *len = n;
            args[i] = b;
            args[i + 1] = len;
            args[i + 2] = t->name;
            args[i + 3] = t->blob;
        }
        else {
            args[i] = t->cols[i] == 'b' ? NULL : s;
        }
    }
    return qrt_db_exec(to, pp, t->add, NULL, args);
}

/* The page of t after k, written to the target in one transaction; *n gets its
 * row count and k the key of its last row. Everything lives in pp. */
static apr_status_t copy_page(qrt_db_t *from, qrt_db_t *to, apr_pool_t *pp,
                              const copy_table *t, copy_key *k, int *n)
{
    apr_int64_t limit = QRT_COPY_PAGE;
    const void *by_id[] = { &k->id, &limit };
    const void *by_text[] = { &k->id, k->text, &limit };
    const void *by_visit[] = { &k->id, &k->id3, &k->id2, &limit };
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    apr_dbd_transaction_t *tx;
    const char *last = NULL;
    apr_status_t rv;

    *n = 0;
    rv = qrt_db_select(from, pp, t->page, &res, t->key == KEY_TEXT ? by_text
                       : t->key == KEY_VISIT ? by_visit
                       : by_id);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = qrt_db_begin(to, pp, &tx);
    while (qrt_db_row(from, pp, res, &row) == 0) {
        if (rv == APR_SUCCESS) {
            rv = copy_row(from, to, pp, t, row);
            k->id = qrt_db_int(from, row, 0, 0);
            last = qrt_db_str(from, row, 1);
            if (t->key == KEY_VISIT) {
                k->id2 = qrt_db_int(from, row, 1, 0);
                k->id3 = qrt_db_int(from, row, 2, 0);
            }
            (*n)++;
        }
    }
    if (rv != APR_SUCCESS) {
        qrt_db_rollback_only(to, tx);
    }
    if (qrt_db_end(to, pp, tx) != APR_SUCCESS) {
        rv = APR_EGENERAL;
    }
    if (rv == APR_SUCCESS && t->key == KEY_TEXT && last) {
        apr_pool_clear(k->pool);
        k->text = apr_pstrdup(k->pool, last);
    }
    return rv;
}

/* Copies every row of t; *rows gets their count, *err what failed. */
static apr_status_t copy_table_rows(qrt_db_t *from, qrt_db_t *to, apr_pool_t *p,
                                    const copy_table *t, apr_int64_t *rows,
                                    const char **err)
{
    apr_pool_t *pp;
    copy_key k;
    apr_status_t rv;
    int n;

    apr_pool_create(&pp, p);
    apr_pool_create(&k.pool, p);
    k.id = k.id2 = k.id3 = APR_INT64_MIN;
    k.text = "";
    *rows = 0;
    do {
        from->error = to->error = NULL;
        rv = copy_page(from, to, pp, t, &k, &n);
        if (rv == APR_SUCCESS) {
            *rows += n;
        }
        else {
            *err = apr_psprintf(p, "%s: %s", t->name, from->error ? from->error
                                : to->error ? to->error : "failed");
        }
        apr_pool_clear(pp);
    } while (rv == APR_SUCCESS && n == QRT_COPY_PAGE);
    apr_pool_destroy(pp);
    apr_pool_destroy(k.pool);
    return rv;
}

/* A tracker's visitors on the target, read from the visits copied (schema 16 on
 * SQLite, 47 on PostgreSQL); *rows gets the (tracker, visitor) pairs. */
static apr_status_t copy_visitors(qrt_db_t *to, apr_pool_t *p, apr_int64_t *rows,
                                  const char **err)
{
    const void *none[] = { NULL };
    apr_status_t rv;

    to->error = NULL;
    rv = qrt_db_select_int(to, p, SQL_copy_visitors_count, none, rows);
    if (rv != APR_SUCCESS) {
        *err = apr_psprintf(p, "tracker_visitors: %s", to->error ? to->error : "failed");
    }
    return rv;
}

apr_status_t qrt_store_copy_all(qrt_db_t *from, qrt_db_t *to, apr_pool_t *p,
                                qrt_copy_report_t *out)
{
    apr_status_t rv = APR_SUCCESS;
    int i;

    memset(out, 0, sizeof(*out));
    for (i = 0; i < QRT_COPY_TABLES; i++) {
        out->table[i] = copy_tables[i].name;
    }
    for (i = 0; i < QRT_COPY_TABLES && rv == APR_SUCCESS; i++) {
        rv = copy_tables[i].page
             ? copy_table_rows(from, to, p, &copy_tables[i], &out->rows[i], &out->error)
             : copy_visitors(to, p, &out->rows[i], &out->error);
    }
    return rv;
}

apr_status_t qrt_store_copy_sequences(qrt_db_t *db, apr_pool_t *p)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *none[] = { NULL };
    apr_status_t rv;

    if (!qrt_db_dialect_is(db, QRT_DIALECT_PGSQL)) {
        return APR_SUCCESS;
    }
    rv = qrt_db_select(db, p, SQL_copy_pg_sequences, &res, none);
    while (rv == APR_SUCCESS && qrt_db_row(db, p, res, &row) == 0) {
    }
    return rv;
}
