/* mod_qrtrack_bulk: POST /tracker/bulk (CONTRACT section 7, "Bulk, migration and
 * custom codes"). Every row is read as the body of POST /tracker is; the valid ones
 * are created in one transaction (mod_qrtrack_idem.c), the others answered with
 * their errors, each under its row number (1 = the first tracker). */
#include <string.h>
#include "httpd.h"
#include "http_config.h"
#include "http_log.h"
#include "http_protocol.h"
#include <apr_strings.h>
#include <apr_hash.h>

#include "mod_qrtrack_bulk.h"
#include "mod_qrtrack_http.h"
#include "mod_qrtrack_idem.h"
#include "mod_qrtrack_tracker.h"
#include "qrt_csv.h"
#include "qrt_json.h"

APLOG_USE_MODULE(qrtrack);

/* Rows a request may hold. */
#define BULK_ROWS_MAX 1000
/* Rows of a request that may set a password: each is hashed slowly. */
#define BULK_PASSWORDS_MAX 10
/* CSV: bytes of one record, fields of one record. */
#define BULK_CSV_RECORD_MAX 65536
#define BULK_CSV_FIELDS_MAX 32

typedef struct {
    int n;
    qrt_tracker_t **t;          /* NULL for a row that failed */
    json_t **errors;            /* the failed rows' {"field": [...]} */
} bulk_rows;

/* The CSV columns, each a tracker field of the same name. */
static const char *const bulk_columns[] = {
    "redirect_url", "name", "code", "tags", "type", "valid_from", "valid_until",
    "max_scans", "expired_url", "password", "rules", NULL
};

static void bulk_row_error(qrt_req_t *q, bulk_rows *b, int i, const char *field,
                           const char *msg)
{
    json_t *list;

    b->t[i] = NULL;
    if (!b->errors[i]) {
        b->errors[i] = qrt_json_own(q->r->pool, json_object());
    }
    list = json_object_get(b->errors[i], field);
    if (!list) {
        list = json_array();
        json_object_set_new(b->errors[i], field, list);
    }
    json_array_append_new(list, json_string(msg));
}

static qrt_err_t *bulk_too_many(qrt_req_t *q)
{
    return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "trackers", apr_psprintf(
                           q->r->pool, "A request may create at most %d trackers.",
                           BULK_ROWS_MAX));
}

/* Row i from its object (NULL: the row is not an object). */
static void bulk_read_row(qrt_req_t *q, bulk_rows *b, int i, json_t *obj, int *passwords)
{
    qrt_tracker_t *t;
    qrt_err_t *e;
    json_t *pw;

    if (!json_is_object(obj)) {
        bulk_row_error(q, b, i, "tracker", "Each tracker must be a JSON object.");
        return;
    }
    pw = json_object_get(obj, "password");
    if (pw && !json_is_null(pw) && ++*passwords > BULK_PASSWORDS_MAX) {
        bulk_row_error(q, b, i, "password", apr_psprintf(q->r->pool, "At most %d trackers "
                       "of a request may set a password.", BULK_PASSWORDS_MAX));
        return;
    }
    t = apr_pcalloc(q->r->pool, sizeof(*t));
    e = qrt_tracker_read(q, obj, t);
    if (e) {
        b->t[i] = NULL;
        b->errors[i] = e->errors ? e->errors : qrt_json_own(q->r->pool, json_pack(
                                                                "{s:[s]}", "tracker", e->message));
        return;
    }
    b->t[i] = t;
}

static void bulk_alloc(qrt_req_t *q, bulk_rows *b, int n)
{
    b->n = n;
    b->t = apr_pcalloc(q->r->pool, (n > 0 ? n : 1) * sizeof(*b->t));
    b->errors = apr_pcalloc(q->r->pool, (n > 0 ? n : 1) * sizeof(*b->errors));
}

static qrt_err_t *bulk_from_json(qrt_req_t *q, bulk_rows *b)
{
    json_t *list = q->json ? json_object_get(q->json, "trackers") : NULL, *v;
    int passwords = 0;
    size_t i;

    if (!list || !json_is_array(list)) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "trackers", "The trackers "
                               "field is required: an array of trackers.");
    }
    if (json_array_size(list) == 0) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "trackers", "The trackers "
                               "field must hold at least one tracker.");
    }
    if (json_array_size(list) > BULK_ROWS_MAX) {
        return bulk_too_many(q);
    }
    bulk_alloc(q, b, (int)json_array_size(list));
    json_array_foreach(list, i, v) {
        bulk_read_row(q, b, (int)i, v, &passwords);
    }
    return NULL;
}

/* The header row: each column's index in bulk_columns, in col. */
static qrt_err_t *bulk_csv_header(qrt_req_t *q, const char **f, int n, int *col)
{
    int i, k, url = 0;

    for (i = 0; i < n; i++) {
        const char *name = f[i];

        while (*name == ' ') {
            name++;
        }
        for (k = 0; bulk_columns[k] && strcasecmp(bulk_columns[k], name); k++) {
        }
        if (!bulk_columns[k]) {
            return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "csv", apr_psprintf(
                                   q->r->pool, "Unknown column '%.64s' in the header row; "
                                   "the columns are redirect_url, name, code, tags, type, "
                                   "valid_from, valid_until, max_scans, expired_url, "
                                   "password and rules.",
                                   qrt_csv_utf8_clean(q->r->pool, name, strlen(name))));
        }
        for (url = 0; url < i; url++) {
            if (col[url] == k) {
                return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "csv", apr_psprintf(
                                       q->r->pool, "The column %s is in the header row "
                                       "twice.", bulk_columns[k]));
            }
        }
        col[i] = k;
    }
    for (i = 0; i < n && col[i] != 0; i++) {
    }
    if (i == n) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "csv", "The header row must "
                               "name the redirect_url column.");
    }
    return NULL;
}

/* A CSV record as the JSON object of a tracker: empty cells are left out, tags are
 * split on ';' (blanks around each taken off), max_scans is a number when it is one, rules is JSON text. NULL and
 * *why for a cell that is not UTF-8. */
static json_t *bulk_csv_object(qrt_req_t *q, const char **f, int n, const int *col,
                               const char **why)
{
    json_t *o = qrt_json_own(q->r->pool, json_object());
    int i;

    for (i = 0; i < n; i++) {
        const char *name = bulk_columns[col[i]], *v = f[i];
        json_t *x = NULL;

        if (!*v) {
            continue;
        }
        if (!strcmp(name, "tags")) {
            char *copy = apr_pstrdup(q->r->pool, v), *tag, *last = NULL;

            x = json_array();
            for (tag = apr_strtok(copy, ";", &last); tag; tag = apr_strtok(NULL, ";", &last)) {
                char *end;

                /* the blanks around each tag go ("a; b" is a and b, as "a;b") */
                while (*tag == ' ' || *tag == '\t') {
                    tag++;
                }
                for (end = tag + strlen(tag); end > tag && (end[-1] == ' ' || end[-1] == '\t');
                     end--) {
                }
                *end = '\0';
                if (*tag) {
                    json_array_append_new(x, json_string(tag));
                }
            }
        }
        else if (!strcmp(name, "max_scans") && strspn(v, "0123456789") == strlen(v)
                 && strlen(v) <= 18) {
            x = json_integer(apr_atoi64(v));
        }
        else if (!strcmp(name, "rules")) {
            const char *err;

            x = qrt_json_parse(q->r->pool, v, strlen(v), &err);
            x = x ? json_incref(x) : json_string(v);
        }
        else {
            x = json_string(v);
        }
        if (!x) {
            /* jansson refuses a string that is not UTF-8. */
            *why = apr_psprintf(q->r->pool, "The %s column is not UTF-8 text.", name);
            return NULL;
        }
        json_object_set_new(o, name, x);
    }
    return o;
}

static qrt_err_t *bulk_from_csv(qrt_req_t *q, bulk_rows *b)
{
    apr_pool_t *p = q->r->pool;
    qrt_csv_reader_t *rd = qrt_csv_reader_make(p, q->body, q->body_len, BULK_CSV_RECORD_MAX,
                                               BULK_CSV_FIELDS_MAX);
    int col[BULK_CSV_FIELDS_MAX], ncol, n, line, passwords = 0;
    apr_array_header_t *recs = apr_array_make(p, 64, sizeof(json_t *));
    apr_array_header_t *bad = apr_array_make(p, 4, sizeof(const char *));
    const char **f, *err;
    qrt_err_t *e;
    apr_status_t rv;
    int i;

    rv = qrt_csv_read(rd, p, &f, &ncol, &line, &err);
    if (rv == APR_EOF) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "csv", "The CSV body needs a "
                               "header row and at least one tracker.");
    }
    if (rv != APR_SUCCESS) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "csv", apr_psprintf(p,
                               "The header row is not valid CSV: %s.", err));
    }
    if ((e = bulk_csv_header(q, f, ncol, col)) != NULL) {
        return e;
    }
    /* Each record: its object, or NULL and its message in bad. */
    while ((rv = qrt_csv_read(rd, p, &f, &n, &line, &err)) != APR_EOF) {
        const char *why = NULL;

        if (recs->nelts >= BULK_ROWS_MAX) {
            return bulk_too_many(q);
        }
        if (rv != APR_SUCCESS) {
            why = apr_psprintf(p, "Line %d is not valid CSV: %s.", line, err);
        }
        else if (n != ncol) {
            why = apr_psprintf(p, "Line %d has %d fields; the header row has %d.", line, n,
                               ncol);
        }
        APR_ARRAY_PUSH(recs, json_t *) = why ? NULL : bulk_csv_object(q, f, n, col, &why);
        APR_ARRAY_PUSH(bad, const char *) = why;
    }
    if (recs->nelts == 0) {
        return qrt_error_field(q, HTTP_UNPROCESSABLE_ENTITY, "csv", "The CSV body needs a "
                               "header row and at least one tracker.");
    }
    bulk_alloc(q, b, recs->nelts);
    for (i = 0; i < recs->nelts; i++) {
        const char *why = APR_ARRAY_IDX(bad, i, const char *);

        if (why) {
            bulk_row_error(q, b, i, "csv", why);
        }
        else {
            bulk_read_row(q, b, i, APR_ARRAY_IDX(recs, i, json_t *), &passwords);
        }
    }
    return NULL;
}

/* Codes the client chose: one row each in this request, and not taken already. */
static qrt_err_t *bulk_check_codes(qrt_req_t *q, bulk_rows *b)
{
    apr_hash_t *seen = apr_hash_make(q->r->pool);
    int i, taken;

    for (i = 0; i < b->n; i++) {
        const char *code = b->t[i] ? b->t[i]->code : NULL;
        int *first;

        if (!code) {
            continue;
        }
        first = apr_hash_get(seen, code, APR_HASH_KEY_STRING);
        if (first) {
            bulk_row_error(q, b, i, "code", apr_psprintf(q->r->pool, "The code '%s' is "
                           "also in row %d.", code, *first + 1));
            continue;
        }
        first = apr_palloc(q->r->pool, sizeof(int));
        *first = i;
        apr_hash_set(seen, code, APR_HASH_KEY_STRING, first);
        if (qrt_store_code_taken(&q->db, q->r->pool, code, &taken) != APR_SUCCESS) {
            return qrt_error_store(q, "checking a code");
        }
        if (taken) {
            bulk_row_error(q, b, i, "code", apr_psprintf(q->r->pool, "The code '%s' is "
                           "already taken.", code));
        }
    }
    return NULL;
}

/* A code taken while the request ran: that row fails, the others go on. */
static int bulk_taken(qrt_req_t *q, void *ctx, qrt_tracker_t **t, int i)
{
    bulk_rows *b = ctx;
    const char *code = t[i]->code;

    bulk_row_error(q, b, i, "code", apr_psprintf(q->r->pool, "The code '%s' is already "
                   "taken.", code));
    return 1;
}

static qrt_err_t *bulk_answer(qrt_req_t *q, void *ctx, qrt_tracker_t **t, int n,
                              qrt_idem_t *a)
{
    bulk_rows *b = ctx;
    json_t *data = json_array(), *j = json_object(), *meta = json_object();
    apr_size_t len;
    int i, created = 0;

    for (i = 0; i < n; i++) {
        json_t *row = json_object();

        json_object_set_new(row, "row", json_integer(i + 1));
        if (t[i]) {
            json_object_set_new(row, "tracker", qrt_tracker_json(q, t[i]));
            created++;
        }
        else {
            json_object_set(row, "errors", b->errors[i]);
        }
        json_array_append_new(data, row);
    }
    json_object_set_new(meta, "created", json_integer(created));
    json_object_set_new(meta, "failed", json_integer(n - created));
    json_object_set_new(j, "data", data);
    json_object_set_new(j, "meta", meta);
    qrt_json_own(q->r->pool, j);
    a->status = HTTP_OK;
    a->content_type = QRT_JSON_TYPE;
    a->body = qrt_json_dump(q->r->pool, j, &len);
    return NULL;
}

/* POST /tracker/bulk */
qrt_err_t *qrt_tracker_bulk(qrt_req_t *q)
{
    qrt_idem_req_t idem;
    bulk_rows b;
    qrt_err_t *e;
    int replayed, i;

    memset(&b, 0, sizeof(b));
    if ((e = qrt_idem_start(q, &idem, &replayed)) != NULL || replayed) {
        return e;
    }
    if (q->form) {
        return qrt_error(q, HTTP_UNSUPPORTED_MEDIA_TYPE, "Unsupported Content-Type: send "
                         "application/json or text/csv.");
    }
    e = q->csv ? bulk_from_csv(q, &b) : bulk_from_json(q, &b);
    if (e) {
        return e;
    }
    if ((e = bulk_check_codes(q, &b)) != NULL) {
        return e;
    }
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, q->r, "QRT00963: bulk of %d rows (%s)", b.n,
                  q->csv ? "CSV" : "JSON");
    for (i = 0; i < b.n; i++) {
        if (b.t[i]) {
            qrt_tracker_by_request(q, b.t[i]);
        }
    }
    return qrt_create_trackers(q, &idem, b.t, b.n, bulk_answer, bulk_taken, &b);
}
