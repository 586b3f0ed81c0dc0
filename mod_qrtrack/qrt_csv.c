/* qrt_csv: see qrt_csv.h. */
#include <string.h>

#include <apr_strings.h>

#include "qrt_csv.h"
#include "qrt_valid.h"

static const char replacement[] = "\xEF\xBF\xBD";

/* 1 when s (len bytes) is well-formed UTF-8 without NUL. */
static int utf8_clean(const char *s, apr_size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    apr_size_t i = 0;
    long cp;

    while (i < len) {
        i += qrt_valid_utf8_char(u + i, len - i, &cp);
        if (cp <= 0) {
            return 0;
        }
    }
    return 1;
}

const char *qrt_csv_utf8_clean(apr_pool_t *p, const char *s, apr_size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    apr_size_t i = 0, o = 0, n;
    char *out;
    long cp;

    if (!s) {
        return "";
    }
    /* Each input byte becomes at most 3 output bytes. */
    out = apr_palloc(p, len * 3 + 1);
    while (i < len) {
        n = qrt_valid_utf8_char(u + i, len - i, &cp);
        if (cp <= 0) {
            memcpy(out + o, replacement, 3);
            o += 3;
        }
        else {
            memcpy(out + o, s + i, n);
            o += n;
        }
        i += n;
    }
    out[o] = '\0';
    return out;
}

const char *qrt_csv_cell(apr_pool_t *p, const char *v)
{
    apr_size_t len, i, quotes = 0;
    int guard, wrap;
    char *out, *o;

    if (!v || v[0] == '\0') {
        return "";
    }
    len = strlen(v);
    if (!utf8_clean(v, len)) {
        v = qrt_csv_utf8_clean(p, v, len);
        len = strlen(v);
    }
    guard = strchr("=+-@\t\r", v[0]) != NULL;
    wrap = guard || v[0] == ' ' || v[len - 1] == ' ' || v[len - 1] == '\t';
    for (i = 0; i < len; i++) {
        if (v[i] == '"') {
            quotes++;
            wrap = 1;
        }
        else if (v[i] == ',' || v[i] == '\r' || v[i] == '\n') {
            wrap = 1;
        }
    }
    if (!wrap) {
        return v;
    }
    o = out = apr_palloc(p, len + quotes + guard + 3);
    *o++ = '"';
    if (guard) {
        *o++ = '\'';
    }
    for (i = 0; i < len; i++) {
        if (v[i] == '"') {
            *o++ = '"';
        }
        *o++ = v[i];
    }
    *o++ = '"';
    *o = '\0';
    return out;
}

const char *qrt_csv_row(apr_pool_t *p, const char *const *cells, int n)
{
    const char **done;
    apr_size_t *lens, total = 2;
    char *out, *o;
    int i;

    if (n <= 0) {
        return "\r\n";
    }
    done = apr_palloc(p, sizeof(*done) * n);
    lens = apr_palloc(p, sizeof(*lens) * n);
    for (i = 0; i < n; i++) {
        done[i] = qrt_csv_cell(p, cells ? cells[i] : NULL);
        lens[i] = strlen(done[i]);
        total += lens[i] + (i > 0 ? 1 : 0);
    }
    o = out = apr_palloc(p, total + 1);
    for (i = 0; i < n; i++) {
        if (i > 0) {
            *o++ = ',';
        }
        memcpy(o, done[i], lens[i]);
        o += lens[i];
    }
    memcpy(o, "\r\n", 3);
    return out;
}
