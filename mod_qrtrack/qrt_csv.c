/* qrt_csv: see qrt_csv.h. */
#include <string.h>

#include <apr_strings.h>
#include <apr_tables.h>

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

/* ---- reading ------------------------------------------------------------- */

struct qrt_csv_reader_t {
    const char *buf;
    apr_size_t len, pos;
    apr_size_t max_record;
    int max_fields;
    int line;                   /* line of buf[pos], 1-based */
};

qrt_csv_reader_t *qrt_csv_reader_make(apr_pool_t *p, const char *buf, apr_size_t len,
                                      apr_size_t max_record, int max_fields)
{
    qrt_csv_reader_t *rd = apr_pcalloc(p, sizeof(*rd));

    rd->buf = buf ? buf : "";
    rd->len = buf ? len : 0;
    if (rd->len >= 3 && !memcmp(rd->buf, "\xEF\xBB\xBF", 3)) {
        rd->pos = 3;
    }
    rd->max_record = max_record;
    rd->max_fields = max_fields > 0 ? max_fields : 1;
    rd->line = 1;
    return rd;
}

/* Consumes a line break at pos (CRLF, LF or CR): 1, else 0. */
static int csv_eol(qrt_csv_reader_t *rd)
{
    if (rd->pos < rd->len && rd->buf[rd->pos] == '\r') {
        rd->pos++;
        if (rd->pos < rd->len && rd->buf[rd->pos] == '\n') {
            rd->pos++;
        }
        rd->line++;
        return 1;
    }
    if (rd->pos < rd->len && rd->buf[rd->pos] == '\n') {
        rd->pos++;
        rd->line++;
        return 1;
    }
    return 0;
}

/* After an error: on to the start of the next line (counting the lines passed). */
static void csv_skip_line(qrt_csv_reader_t *rd)
{
    while (rd->pos < rd->len && !csv_eol(rd)) {
        rd->pos++;
    }
}

/* One field from pos into out (at most the record's remaining budget); stops on
 * ',' (consumed, *more = 1), a line break or the end (not consumed). */
static apr_status_t csv_field(qrt_csv_reader_t *rd, apr_size_t start, char *out,
                              apr_size_t *olen, int *more, const char **err)
{
    const char *b = rd->buf;
    apr_size_t o = 0;

    *more = 0;
    if (rd->pos < rd->len && b[rd->pos] == '"') {
        rd->pos++;
        for (;;) {
            if (rd->pos >= rd->len) {
                *err = "a quoted field is not closed";
                return APR_EINVAL;
            }
            if (rd->pos - start > rd->max_record) {
                *err = "the record is too long";
                return APR_ENOSPC;
            }
            if (b[rd->pos] == '"') {
                if (rd->pos + 1 < rd->len && b[rd->pos + 1] == '"') {
                    out[o++] = '"';
                    rd->pos += 2;
                    continue;
                }
                rd->pos++;
                break;
            }
            if (b[rd->pos] == '\0') {
                *err = "a NUL byte";
                return APR_EINVAL;
            }
            if (b[rd->pos] == '\n' || (b[rd->pos] == '\r' && (rd->pos + 1 >= rd->len
                                                                || b[rd->pos + 1] != '\n'))) {
                rd->line++;
            }
            out[o++] = b[rd->pos++];
        }
        if (rd->pos < rd->len && b[rd->pos] != ',' && b[rd->pos] != '\r'
            && b[rd->pos] != '\n') {
            *err = "text after a closing quote";
            return APR_EINVAL;
        }
    }
    else {
        while (rd->pos < rd->len && b[rd->pos] != ',' && b[rd->pos] != '\r'
               && b[rd->pos] != '\n') {
            if (rd->pos - start >= rd->max_record) {
                *err = "the record is too long";
                return APR_ENOSPC;
            }
            if (b[rd->pos] == '"') {
                *err = "a quote inside an unquoted field";
                return APR_EINVAL;
            }
            if (b[rd->pos] == '\0') {
                *err = "a NUL byte";
                return APR_EINVAL;
            }
            out[o++] = b[rd->pos++];
        }
    }
    if (rd->pos < rd->len && b[rd->pos] == ',') {
        rd->pos++;
        *more = 1;
    }
    *olen = o;
    return APR_SUCCESS;
}

apr_status_t qrt_csv_read(qrt_csv_reader_t *rd, apr_pool_t *p, const char ***fields,
                          int *n, int *line, const char **err)
{
    apr_array_header_t *a;
    apr_size_t start, room;
    char *out;
    int more = 1;

    *fields = NULL;
    *n = 0;
    *err = NULL;
    while (rd->pos < rd->len && csv_eol(rd)) {
        /* blank lines */
    }
    if (rd->pos >= rd->len) {
        return APR_EOF;
    }
    *line = rd->line;
    start = rd->pos;
    /* A field never grows past the bytes it was read from: one buffer of the
     * record's bound holds every field of it. */
    room = rd->len - start < rd->max_record ? rd->len - start : rd->max_record;
    out = apr_palloc(p, room + 1);
    a = apr_array_make(p, 8, sizeof(const char *));
    while (more) {
        apr_size_t olen = 0;
        apr_status_t rv;

        if (a->nelts >= rd->max_fields) {
            *err = "too many fields";
            csv_skip_line(rd);
            return APR_ENOSPC;
        }
        rv = csv_field(rd, start, out, &olen, &more, err);
        if (rv != APR_SUCCESS) {
            csv_skip_line(rd);
            return rv;
        }
        APR_ARRAY_PUSH(a, const char *) = apr_pstrmemdup(p, out, olen);
        out += olen;
    }
    csv_eol(rd);
    *fields = (const char **)a->elts;
    *n = a->nelts;
    return APR_SUCCESS;
}
