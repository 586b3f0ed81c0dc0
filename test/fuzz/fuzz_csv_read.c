/* libFuzzer target for the bounded CSV reader (qrt_csv_read): whatever the bytes,
 * it ends, keeps its bounds (fields per record, bytes per field), and every record
 * it reads, written back with every field quoted, reads back to the same fields. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <apr_general.h>
#include <apr_strings.h>
#include "qrt_csv.h"

#define MAX_RECORD 64
#define MAX_FIELDS 6

/* The fields quoted, quotes doubled, joined by ',' and ended by CRLF. */
static const char *quote_all(apr_pool_t *p, const char **f, int n, apr_size_t *len)
{
    char *out, *o;
    apr_size_t room = 3;
    int i;

    for (i = 0; i < n; i++) {
        room += 2 * strlen(f[i]) + 3;
    }
    o = out = apr_palloc(p, room);
    for (i = 0; i < n; i++) {
        const char *s;

        if (i) {
            *o++ = ',';
        }
        *o++ = '"';
        for (s = f[i]; *s; s++) {
            if (*s == '"') {
                *o++ = '"';
            }
            *o++ = *s;
        }
        *o++ = '"';
    }
    *o++ = '\r';
    *o++ = '\n';
    *len = (apr_size_t)(o - out);
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int init;
    apr_pool_t *p;
    qrt_csv_reader_t *rd;
    const char **f, *err;
    apr_status_t rv;
    int n, i, line, last = 0, records = 0;

    if (!init) {
        apr_initialize();
        init = 1;
    }
    apr_pool_create(&p, NULL);
    rd = qrt_csv_reader_make(p, (const char *)data, size, MAX_RECORD, MAX_FIELDS);
    while ((rv = qrt_csv_read(rd, p, &f, &n, &line, &err)) != APR_EOF) {
        if (++records > (int)size + 1 || line < last) {
            abort();
        }
        last = line;
        if (rv != APR_SUCCESS) {
            if (!err || (rv != APR_EINVAL && rv != APR_ENOSPC)) {
                abort();
            }
            continue;
        }
        if (n < 1 || n > MAX_FIELDS) {
            abort();
        }
        for (i = 0; i < n; i++) {
            if (strlen(f[i]) > MAX_RECORD) {
                abort();
            }
        }
        {
            apr_size_t len;
            const char *again = quote_all(p, f, n, &len), **g;
            qrt_csv_reader_t *r2 = qrt_csv_reader_make(p, again, len, 4 * MAX_RECORD,
                                                       MAX_FIELDS);
            int m, l2;

            if (qrt_csv_read(r2, p, &g, &m, &l2, &err) != APR_SUCCESS || m != n) {
                abort();
            }
            for (i = 0; i < n; i++) {
                if (strcmp(f[i], g[i]) != 0) {
                    abort();
                }
            }
        }
    }
    apr_pool_destroy(p);
    return 0;
}
