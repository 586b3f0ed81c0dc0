/* Fuzz target for qrt_form.c.
 *
 * Input: byte 0 picks the limits and seeds the chunk sizes; the rest is a
 * multipart body (boundary "fzB") fed once whole and once in random-size
 * chunks; both runs must agree exactly. The same bytes go through the
 * urlencoded parser and, cut at the first NUL, through the Content-Type
 * parser.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "apr_general.h"
#include "apr_strings.h"
#include "apr_tables.h"

#include "qrt_form.h"

#define FZ_CT "multipart/form-data; boundary=fzB"

typedef struct {
    apr_status_t rv;
    const char *err;
    apr_table_t *fields;
} fz_result_t;

static void fz_run(apr_pool_t *p, const qrt_multipart_limits_t *l,
                   const char *body, size_t len, uint32_t seed,
                   int chunked, fz_result_t *res)
{
    qrt_multipart_t *mp;
    size_t off = 0;

    res->err = NULL;
    res->fields = apr_table_make(p, 4);
    mp = qrt_multipart_create(p, FZ_CT, l, &res->err);
    if (!mp) {
        abort();
    }
    res->rv = APR_SUCCESS;
    while (off < len && res->rv == APR_SUCCESS) {
        size_t n = len - off;

        if (chunked) {
            seed = seed * 1103515245u + 12345u;
            /* mostly tiny chunks, sometimes empty or large ones */
            n = (seed >> 16) % ((seed & 1) ? 8 : 300);
            if (n > len - off) {
                n = len - off;
            }
        }
        res->rv = qrt_multipart_feed(mp, body + off, n, &res->err);
        off += n;
    }
    if (res->rv == APR_SUCCESS) {
        res->rv = qrt_multipart_finish(mp, res->fields, &res->err);
    }
    if (res->rv != APR_SUCCESS && !res->err) {
        abort();
    }
}

static void fz_same(const fz_result_t *a, const fz_result_t *b)
{
    const apr_array_header_t *x = apr_table_elts(a->fields);
    const apr_array_header_t *y = apr_table_elts(b->fields);
    const apr_table_entry_t *ex = (const apr_table_entry_t *)x->elts;
    const apr_table_entry_t *ey = (const apr_table_entry_t *)y->elts;
    int i;

    if (a->rv != b->rv || x->nelts != y->nelts) {
        abort();
    }
    if (a->rv != APR_SUCCESS && strcmp(a->err, b->err)) {
        abort();
    }
    for (i = 0; i < x->nelts; i++) {
        if (strcmp(ex[i].key, ey[i].key) || strcmp(ex[i].val, ey[i].val)
            || !*ex[i].key) {
            abort();
        }
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    apr_initialize();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p;
    qrt_multipart_limits_t l;
    fz_result_t whole, chunked;
    apr_table_t *t;
    const char *body, *err;
    size_t len;
    uint8_t ctl;
    char *ct;

    if (size < 1) {
        return 0;
    }
    ctl = data[0];
    body = (const char *)data + 1;
    len = size - 1;

    apr_pool_create(&p, NULL);

    qrt_multipart_limits_default(&l);
    if (ctl & 0x80) {
        /* small limits so that every limit is reached */
        l.max_parts = ctl & 7;
        l.max_part_size = (ctl >> 3) & 15;
        l.max_header_size = 40 + ((ctl >> 3) & 15) * 4;
    }
    fz_run(p, &l, body, len, 0, 0, &whole);
    fz_run(p, &l, body, len, ctl * 2654435761u, 1, &chunked);
    fz_same(&whole, &chunked);

    t = apr_table_make(p, 4);
    err = NULL;
    if (qrt_form_urlencoded(p, body, len, t, &err) != APR_SUCCESS) {
        if (!err || apr_table_elts(t)->nelts != 0) {
            abort();
        }
    }

    /* the Content-Type parser; a multipart/form-data prefix makes it
     * reach the parameters more often */
    ct = apr_pstrmemdup(p, body, len < 256 ? len : 256);
    err = NULL;
    if (!qrt_multipart_create(p, ct, NULL, &err) && !err) {
        abort();
    }
    ct = apr_pstrcat(p, "multipart/form-data;", ct, NULL);
    err = NULL;
    if (!qrt_multipart_create(p, ct, NULL, &err) && !err) {
        abort();
    }

    apr_pool_destroy(p);
    return 0;
}
