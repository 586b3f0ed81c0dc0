/* libFuzzer target for the small text parsers: qrt_date_parse,
 * qrt_valid_redirect_url, qrt_url_host, qrt_csv_cell, qrt_ip_anonymize,
 * run on a NUL-terminated copy of the input, with a few invariants:
 * a parsed date formats and parses back to the same instant and offset, a
 * valid URL has a host that occurs in it, an anonymised IP is canonical
 * and anonymises to itself. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <apr_general.h>
#include <apr_strings.h>
#include "qrt_csv.h"
#include "qrt_date.h"
#include "qrt_ip.h"
#include "qrt_valid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int init;
    apr_pool_t *p;
    char *s;
    apr_int64_t t, t2;
    int off, off2;
    const char *host, *cell, *ip;

    if (!init) {
        apr_initialize();
        init = 1;
    }
    apr_pool_create(&p, NULL);
    s = apr_pstrmemdup(p, (const char *)data, size);

    if (qrt_date_parse(s, &t, &off) == 0) {
        char buf[QRT_DATE_LEN];

        qrt_date_format(buf, t, off);
        if (strlen(buf) != QRT_DATE_LEN - 1 || qrt_date_parse(buf, &t2, &off2)
            || t2 != t || off2 != off) {
            abort();
        }
    }

    host = qrt_url_host(p, s);
    if (qrt_valid_redirect_url(s) == NULL) {
        if (!host || !*host || !strstr(s, host)) {
            abort();
        }
    }
    else if (host) {
        abort();
    }

    cell = qrt_csv_cell(p, s);
    if (!cell) {
        abort();
    }
    if (*cell == '"' && (strlen(cell) < 2 || cell[strlen(cell) - 1] != '"')) {
        abort();
    }

    ip = qrt_ip_anonymize(p, s);
    if (ip) {
        const char *again = qrt_ip_anonymize(p, ip);
        const char *canon = qrt_ip_canonical(p, ip);

        if (!again || strcmp(again, ip) || !canon || strcmp(canon, ip)) {
            abort();
        }
    }
    apr_pool_destroy(p);
    return 0;
}
