/* mod_qrtrack core: form bodies (multipart/form-data, urlencoded). */

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "apr_strings.h"

#include "qrt_form.h"

#define QRT_MP_BOUNDARY_MAX 70

typedef enum {
    QRT_MP_PREAMBLE,     /* before the first delimiter, bytes dropped */
    QRT_MP_AFTER_DELIM,  /* just after "--boundary" */
    QRT_MP_DASH,         /* after "--boundary-", want the second '-' */
    QRT_MP_PAD,          /* transport padding after a delimiter */
    QRT_MP_PAD_CR,       /* CR after a delimiter, want LF */
    QRT_MP_HEADERS,      /* in a part's header block */
    QRT_MP_BODY,         /* in a part's body */
    QRT_MP_EPILOGUE,     /* after the close delimiter, bytes dropped */
    QRT_MP_ERROR
} qrt_mp_state_e;

/* Growable scratch buffer from malloc, reused across parts. */
typedef struct {
    char *data;
    apr_size_t len;
    apr_size_t cap;
} qrt_mp_buf_t;

typedef struct {
    const char *name;
    const char *value;   /* NUL-terminated, may hold NULs before len */
    apr_size_t len;
} qrt_mp_part_t;

struct qrt_multipart_t {
    apr_pool_t *pool;
    qrt_multipart_limits_t lim;
    char *delim;             /* "\r\n--" boundary */
    apr_size_t dlen;
    apr_size_t match;        /* bytes of delim matched so far */
    qrt_mp_state_e state;
    qrt_mp_buf_t hdr;
    apr_size_t line_start;   /* offset of the current header line in hdr */
    qrt_mp_buf_t body;
    const char *name;        /* form-data name of the current part */
    apr_array_header_t *parts;
    apr_status_t rv;         /* sticky error */
    const char *err;
};

void qrt_multipart_limits_default(qrt_multipart_limits_t *l)
{
    l->max_parts = 32;
    l->max_part_size = 64 * 1024;
    l->max_header_size = 8 * 1024;
}

/* --- character classes ------------------------------------------------ */

static int qrt_form_is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* RFC 7230 tchar */
static int qrt_form_is_tchar(char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
        || (c >= '0' && c <= '9')) {
        return 1;
    }
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* RFC 2046 bcharsnospace */
static int qrt_form_is_bchar(char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
        || (c >= '0' && c <= '9')) {
        return 1;
    }
    return c != '\0' && strchr("'()+_,-./:=?", c) != NULL;
}

static int qrt_form_is_ctl(char c)
{
    unsigned char u = (unsigned char)c;

    return (u < 0x20 && c != '\t') || u == 0x7f;
}

static int qrt_form_eq(const char *s, apr_size_t n, const char *lit)
{
    return strlen(lit) == n && strncasecmp(s, lit, n) == 0;
}

static const char *qrt_form_skip_ows(const char *s, const char *e)
{
    while (s < e && qrt_form_is_ows(*s)) {
        s++;
    }
    return s;
}

static const char *qrt_form_token(const char *s, const char *e)
{
    while (s < e && qrt_form_is_tchar(*s)) {
        s++;
    }
    return s;
}

/* Parse the next `; name=value` parameter of a header value in [*ps, e).
 * Quoted values are unescaped into pool memory; unquoted ones are any run
 * of visible characters up to ';' or white space. Returns 1 with a
 * parameter, 0 at the end, -1 when malformed. */
static int qrt_form_next_param(apr_pool_t *p, const char **ps, const char *e,
                               const char **name, apr_size_t *nlen,
                               const char **val, apr_size_t *vlen)
{
    const char *s = qrt_form_skip_ows(*ps, e);
    const char *t;

    if (s == e) {
        *ps = s;
        return 0;
    }
    if (*s != ';') {
        return -1;
    }
    s = qrt_form_skip_ows(s + 1, e);
    if (s == e) {
        /* a trailing ';' is harmless */
        *ps = s;
        return 0;
    }
    t = qrt_form_token(s, e);
    if (t == s) {
        return -1;
    }
    *name = s;
    *nlen = t - s;
    s = qrt_form_skip_ows(t, e);
    if (s == e || *s != '=') {
        return -1;
    }
    s = qrt_form_skip_ows(s + 1, e);
    if (s < e && *s == '"') {
        char *out = apr_palloc(p, e - s);
        apr_size_t n = 0;

        for (s++; ; s++) {
            if (s == e) {
                return -1;
            }
            if (*s == '"') {
                s++;
                break;
            }
            if (*s == '\\') {
                if (++s == e) {
                    return -1;
                }
            }
            if (qrt_form_is_ctl(*s)) {
                return -1;
            }
            out[n++] = *s;
        }
        out[n] = '\0';
        *val = out;
        *vlen = n;
    }
    else {
        t = s;
        while (t < e && *t != ';' && *t != '"' && !qrt_form_is_ows(*t)
               && !qrt_form_is_ctl(*t)) {
            t++;
        }
        if (t == s) {
            return -1;
        }
        *val = apr_pstrmemdup(p, s, t - s);
        *vlen = t - s;
        s = t;
    }
    *ps = s;
    return 1;
}

/* --- multipart ---------------------------------------------------------- */

static apr_status_t qrt_mp_cleanup(void *data)
{
    qrt_multipart_t *mp = data;

    free(mp->hdr.data);
    free(mp->body.data);
    mp->hdr.data = mp->body.data = NULL;
    mp->hdr.cap = mp->body.cap = 0;
    mp->hdr.len = mp->body.len = 0;
    return APR_SUCCESS;
}

static apr_status_t qrt_mp_fail(qrt_multipart_t *mp, apr_status_t rv,
                                const char *msg)
{
    mp->state = QRT_MP_ERROR;
    mp->rv = rv;
    mp->err = msg;
    return rv;
}

/* Append n bytes, keeping b->len <= limit. */
static apr_status_t qrt_mp_append(qrt_multipart_t *mp, qrt_mp_buf_t *b,
                                  const char *data, apr_size_t n,
                                  apr_size_t limit, const char *toobig)
{
    if (n == 0) {
        return APR_SUCCESS;
    }
    if (n > limit || b->len > limit - n) {
        return qrt_mp_fail(mp, APR_ENOSPC, toobig);
    }
    if (b->len + n > b->cap) {
        apr_size_t cap = b->cap ? b->cap : (limit < 1024 ? limit : 1024);
        char *nd;

        while (cap < b->len + n) {
            cap = (cap > limit / 2) ? limit : cap * 2;
        }
        nd = realloc(b->data, cap);
        if (!nd) {
            return qrt_mp_fail(mp, APR_ENOMEM, "out of memory");
        }
        b->data = nd;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
    return APR_SUCCESS;
}

int qrt_form_type_is(const char *ct, const char *type)
{
    const char *e, *t, *slash = strchr(type, '/');

    if (!ct || !slash) {
        return 0;
    }
    e = ct + strlen(ct);
    ct = qrt_form_skip_ows(ct, e);
    t = qrt_form_token(ct, e);
    if ((apr_size_t)(t - ct) != (apr_size_t)(slash - type)
        || strncasecmp(ct, type, (apr_size_t)(slash - type)) != 0 || t == e || *t != '/') {
        return 0;
    }
    ct = t + 1;
    t = qrt_form_token(ct, e);
    if (!qrt_form_eq(ct, t - ct, slash + 1)) {
        return 0;
    }
    t = qrt_form_skip_ows(t, e);
    return t == e || *t == ';';
}

qrt_multipart_t *qrt_multipart_create(apr_pool_t *p, const char *content_type,
                                      const qrt_multipart_limits_t *l,
                                      const char **err)
{
    qrt_multipart_t *mp;
    const char *s, *e, *t, *boundary = NULL;
    const char *pname, *pval;
    apr_size_t nlen, vlen, blen = 0, i;
    int r;

    if (!content_type) {
        *err = "no Content-Type";
        return NULL;
    }
    s = content_type;
    e = s + strlen(s);
    s = qrt_form_skip_ows(s, e);
    t = qrt_form_token(s, e);
    if (!qrt_form_eq(s, t - s, "multipart") || t == e || *t != '/') {
        *err = "Content-Type is not multipart/form-data";
        return NULL;
    }
    s = t + 1;
    t = qrt_form_token(s, e);
    if (!qrt_form_eq(s, t - s, "form-data")) {
        *err = "Content-Type is not multipart/form-data";
        return NULL;
    }
    s = t;
    while ((r = qrt_form_next_param(p, &s, e, &pname, &nlen,
                                    &pval, &vlen)) > 0) {
        if (qrt_form_eq(pname, nlen, "boundary")) {
            if (boundary) {
                *err = "Content-Type has two boundary parameters";
                return NULL;
            }
            boundary = pval;
            blen = vlen;
        }
    }
    if (r < 0) {
        *err = "malformed Content-Type parameters";
        return NULL;
    }
    if (!boundary) {
        *err = "multipart Content-Type without boundary";
        return NULL;
    }
    if (blen < 1 || blen > QRT_MP_BOUNDARY_MAX
        || boundary[blen - 1] == ' ') {
        *err = "invalid multipart boundary";
        return NULL;
    }
    for (i = 0; i < blen; i++) {
        if (!qrt_form_is_bchar(boundary[i]) && boundary[i] != ' ') {
            *err = "invalid multipart boundary";
            return NULL;
        }
    }

    mp = apr_pcalloc(p, sizeof(*mp));
    mp->pool = p;
    if (l) {
        mp->lim = *l;
    }
    else {
        qrt_multipart_limits_default(&mp->lim);
    }
    mp->dlen = blen + 4;
    mp->delim = apr_palloc(p, mp->dlen + 1);
    memcpy(mp->delim, "\r\n--", 4);
    memcpy(mp->delim + 4, boundary, blen);
    mp->delim[mp->dlen] = '\0';
    /* the body may start with "--boundary": act as if a CRLF came first */
    mp->match = 2;
    mp->state = QRT_MP_PREAMBLE;
    mp->parts = apr_array_make(p, 8, sizeof(qrt_mp_part_t));
    mp->rv = APR_SUCCESS;
    apr_pool_cleanup_register(p, mp, qrt_mp_cleanup, apr_pool_cleanup_null);
    return mp;
}

/* Parse a Content-Disposition value; sets mp->name. */
static apr_status_t qrt_mp_disposition(qrt_multipart_t *mp, const char *s,
                                       const char *e)
{
    const char *t, *pname, *pval, *name = NULL;
    apr_size_t nlen, vlen, namelen = 0;
    int r;

    t = qrt_form_token(s, e);
    if (!qrt_form_eq(s, t - s, "form-data")) {
        return qrt_mp_fail(mp, APR_EINVAL, "part is not form-data");
    }
    s = t;
    while ((r = qrt_form_next_param(mp->pool, &s, e, &pname, &nlen,
                                    &pval, &vlen)) > 0) {
        if (qrt_form_eq(pname, nlen, "name")) {
            if (name) {
                return qrt_mp_fail(mp, APR_EINVAL,
                                   "part has two name parameters");
            }
            name = pval;
            namelen = vlen;
        }
    }
    if (r < 0) {
        return qrt_mp_fail(mp, APR_EINVAL, "malformed Content-Disposition");
    }
    if (!name) {
        return qrt_mp_fail(mp, APR_EINVAL, "part has no name");
    }
    if (namelen == 0) {
        return qrt_mp_fail(mp, APR_EINVAL, "part has an empty name");
    }
    mp->name = name;
    return APR_SUCCESS;
}

/* Parse the header block [0, len) of mp->hdr: lines ending in LF or CRLF,
 * without the blank line that ended it. */
static apr_status_t qrt_mp_headers(qrt_multipart_t *mp, apr_size_t len)
{
    const char *s = mp->hdr.data;
    const char *end = s + len;
    const char *cd = NULL, *cd_end = NULL;

    mp->name = NULL;
    while (s < end) {
        const char *nl = memchr(s, '\n', end - s);
        const char *le = nl ? nl : end;
        const char *colon, *v, *ve;

        if (le > s && le[-1] == '\r') {
            le--;
        }
        if (memchr(s, '\r', le - s) || memchr(s, '\0', le - s)) {
            return qrt_mp_fail(mp, APR_EINVAL, "bad byte in part header");
        }
        if (qrt_form_is_ows(*s)) {
            return qrt_mp_fail(mp, APR_EINVAL, "folded part header");
        }
        colon = memchr(s, ':', le - s);
        if (!colon || colon == s || qrt_form_token(s, colon) != colon) {
            return qrt_mp_fail(mp, APR_EINVAL, "malformed part header");
        }
        v = qrt_form_skip_ows(colon + 1, le);
        ve = le;
        while (ve > v && qrt_form_is_ows(ve[-1])) {
            ve--;
        }
        if (qrt_form_eq(s, colon - s, "Content-Disposition")) {
            if (cd) {
                return qrt_mp_fail(mp, APR_EINVAL,
                                   "part has two Content-Disposition headers");
            }
            cd = v;
            cd_end = ve;
        }
        s = nl ? nl + 1 : end;
    }
    /* parsed once every line is known to be well-formed */
    if (!cd) {
        return qrt_mp_fail(mp, APR_EINVAL, "part has no Content-Disposition");
    }
    return qrt_mp_disposition(mp, cd, cd_end);
}

static apr_status_t qrt_mp_start_part(qrt_multipart_t *mp)
{
    if ((apr_size_t)mp->parts->nelts >= mp->lim.max_parts) {
        return qrt_mp_fail(mp, APR_ENOSPC, "too many parts");
    }
    mp->hdr.len = 0;
    mp->line_start = 0;
    mp->state = QRT_MP_HEADERS;
    return APR_SUCCESS;
}

static void qrt_mp_end_part(qrt_multipart_t *mp)
{
    qrt_mp_part_t *part = apr_array_push(mp->parts);
    char *v = apr_palloc(mp->pool, mp->body.len + 1);

    if (mp->body.len) {
        memcpy(v, mp->body.data, mp->body.len);
    }
    v[mp->body.len] = '\0';
    part->name = mp->name;
    part->value = v;
    part->len = mp->body.len;
    mp->body.len = 0;
}

/* Consume header bytes; returns bytes used or sets an error. */
static apr_size_t qrt_mp_feed_headers(qrt_multipart_t *mp, const char *buf,
                                      apr_size_t len)
{
    const char *nl = memchr(buf, '\n', len);
    apr_size_t n = nl ? (apr_size_t)(nl - buf) + 1 : len;
    const char *line;
    apr_size_t llen;

    if (qrt_mp_append(mp, &mp->hdr, buf, n, mp->lim.max_header_size,
                      "part headers too large") != APR_SUCCESS) {
        return n;
    }
    if (!nl) {
        return n;
    }
    line = mp->hdr.data + mp->line_start;
    llen = mp->hdr.len - mp->line_start;
    if (llen == 1 || (llen == 2 && line[0] == '\r')) {
        /* blank line: end of the header block */
        if (qrt_mp_headers(mp, mp->line_start) == APR_SUCCESS) {
            mp->body.len = 0;
            mp->match = 0;
            mp->state = QRT_MP_BODY;
        }
    }
    else {
        mp->line_start = mp->hdr.len;
    }
    return n;
}

/* Look for the delimiter in the preamble or a body; bytes that are not
 * part of it are kept (body) or dropped (preamble). Returns bytes used. */
static apr_size_t qrt_mp_feed_delim(qrt_multipart_t *mp, const char *buf,
                                    apr_size_t len, int keep)
{
    apr_size_t i = 0;

    while (i < len) {
        if (mp->match == 0) {
            const char *cr = memchr(buf + i, '\r', len - i);
            apr_size_t n = cr ? (apr_size_t)(cr - (buf + i)) : len - i;

            if (keep && qrt_mp_append(mp, &mp->body, buf + i, n,
                                      mp->lim.max_part_size,
                                      "part too large") != APR_SUCCESS) {
                return len;
            }
            i += n;
            if (cr) {
                mp->match = 1;
                i++;
            }
            continue;
        }
        if (buf[i] == mp->delim[mp->match]) {
            i++;
            if (++mp->match == mp->dlen) {
                if (keep) {
                    qrt_mp_end_part(mp);
                }
                mp->match = 0;
                mp->state = QRT_MP_AFTER_DELIM;
                return i;
            }
            continue;
        }
        /* Mismatch: only delim[0] is a CR, so no suffix of the matched
         * prefix starts another match; it is all data. buf[i] is looked
         * at again from the start. */
        if (keep && qrt_mp_append(mp, &mp->body, mp->delim, mp->match,
                                  mp->lim.max_part_size,
                                  "part too large") != APR_SUCCESS) {
            return len;
        }
        mp->match = 0;
    }
    return i;
}

apr_status_t qrt_multipart_feed(qrt_multipart_t *mp, const char *buf,
                                apr_size_t len, const char **err)
{
    apr_size_t i = 0;

    while (i < len && mp->state != QRT_MP_ERROR) {
        char c = buf[i];

        switch (mp->state) {
        case QRT_MP_PREAMBLE:
            i += qrt_mp_feed_delim(mp, buf + i, len - i, 0);
            break;
        case QRT_MP_BODY:
            i += qrt_mp_feed_delim(mp, buf + i, len - i, 1);
            break;
        case QRT_MP_HEADERS:
            i += qrt_mp_feed_headers(mp, buf + i, len - i);
            break;
        case QRT_MP_AFTER_DELIM:
        case QRT_MP_PAD:
            i++;
            if (c == '-' && mp->state == QRT_MP_AFTER_DELIM) {
                mp->state = QRT_MP_DASH;
            }
            else if (qrt_form_is_ows(c)) {
                mp->state = QRT_MP_PAD;
            }
            else if (c == '\r') {
                mp->state = QRT_MP_PAD_CR;
            }
            else if (c == '\n') {
                qrt_mp_start_part(mp);
            }
            else {
                qrt_mp_fail(mp, APR_EINVAL, "garbage after boundary");
            }
            break;
        case QRT_MP_PAD_CR:
            i++;
            if (c == '\n') {
                qrt_mp_start_part(mp);
            }
            else {
                qrt_mp_fail(mp, APR_EINVAL, "garbage after boundary");
            }
            break;
        case QRT_MP_DASH:
            i++;
            if (c == '-') {
                mp->state = QRT_MP_EPILOGUE;
            }
            else {
                qrt_mp_fail(mp, APR_EINVAL, "garbage after boundary");
            }
            break;
        case QRT_MP_EPILOGUE:
            i = len;
            break;
        case QRT_MP_ERROR:
            break;
        }
    }
    if (mp->state == QRT_MP_ERROR) {
        *err = mp->err;
        return mp->rv;
    }
    return APR_SUCCESS;
}

apr_status_t qrt_multipart_finish(qrt_multipart_t *mp, apr_table_t *fields,
                                  const char **err)
{
    return qrt_multipart_finish_file(mp, fields, NULL, NULL, NULL, err);
}

apr_status_t qrt_multipart_finish_file(qrt_multipart_t *mp, apr_table_t *fields,
                                       const char *file, const char **data,
                                       apr_size_t *len, const char **err)
{
    const qrt_mp_part_t *parts = (const qrt_mp_part_t *)mp->parts->elts;
    int i;

    if (data) {
        *data = NULL;
        *len = 0;
    }
    if (mp->state == QRT_MP_ERROR) {
        *err = mp->err;
        return mp->rv;
    }
    if (mp->state != QRT_MP_EPILOGUE) {
        *err = "multipart body ends without closing boundary";
        return APR_EINVAL;
    }
    for (i = 0; i < mp->parts->nelts; i++) {
        if (file && !strcmp(parts[i].name, file)) {
            continue;
        }
        if (memchr(parts[i].value, '\0', parts[i].len)) {
            *err = "a form field contains a NUL byte";
            return APR_EINVAL;
        }
    }
    for (i = 0; i < mp->parts->nelts; i++) {
        if (!file || strcmp(parts[i].name, file)) {
            apr_table_add(fields, parts[i].name, parts[i].value);
        }
        else if (data && !*data) {
            *data = parts[i].value;
            *len = parts[i].len;
        }
    }
    /* the scratch buffers are no longer needed */
    qrt_mp_cleanup(mp);
    return APR_SUCCESS;
}

/* --- urlencoded --------------------------------------------------------- */

static int qrt_form_hex(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* Decode [s, e) into out (room for e - s + 1); NULL on a bad escape or
 * a NUL byte. */
static char *qrt_form_decode(char *out, const char *s, const char *e)
{
    char *o = out;

    while (s < e) {
        char c = *s++;

        if (c == '+') {
            c = ' ';
        }
        else if (c == '%') {
            int hi, lo;

            if (e - s < 2 || (hi = qrt_form_hex(s[0])) < 0
                || (lo = qrt_form_hex(s[1])) < 0) {
                return NULL;
            }
            c = (char)(hi * 16 + lo);
            s += 2;
        }
        if (c == '\0') {
            return NULL;
        }
        *o++ = c;
    }
    *o = '\0';
    return out;
}

apr_status_t qrt_form_urlencoded(apr_pool_t *p, const char *body,
                                 apr_size_t len, apr_table_t *fields,
                                 const char **err)
{
    return qrt_form_urlencoded_max(p, body, len, 0, fields, err);
}

apr_status_t qrt_form_urlencoded_max(apr_pool_t *p, const char *body,
                                     apr_size_t len, apr_size_t max_fields,
                                     apr_table_t *fields, const char **err)
{
    const char *s = body;
    const char *e;
    apr_array_header_t *pairs;
    const char **kv;
    int i;

    if (len == 0) {
        return APR_SUCCESS;
    }
    e = body + len;
    if (max_fields > 0) {
        /* Counted before anything is decoded: the work stays bounded. */
        apr_size_t n = 0;
        const char *c = body, *amp;

        while (c < e) {
            amp = memchr(c, '&', e - c);
            n += (amp ? amp : e) > c;
            c = amp ? amp + 1 : e;
        }
        if (n > max_fields) {
            *err = apr_psprintf(p, "more than %" APR_SIZE_T_FMT " fields", max_fields);
            return APR_ENOSPC;
        }
    }
    pairs = apr_array_make(p, 8, 2 * sizeof(const char *));
    while (s < e) {
        const char *amp = memchr(s, '&', e - s);
        const char *pe = amp ? amp : e;
        const char *eq = memchr(s, '=', pe - s);
        const char *ke = eq ? eq : pe;
        char *k, *v = "";

        if (pe > s) {
            k = qrt_form_decode(apr_palloc(p, ke - s + 1), s, ke);
            if (k && eq) {
                v = qrt_form_decode(apr_palloc(p, pe - eq), eq + 1, pe);
            }
            if (!k || !v) {
                *err = "bad %-escape or NUL byte in form data";
                return APR_EINVAL;
            }
            kv = apr_array_push(pairs);
            kv[0] = k;
            kv[1] = v;
        }
        s = amp ? amp + 1 : e;
    }
    kv = (const char **)pairs->elts;
    for (i = 0; i < pairs->nelts; i++) {
        apr_table_add(fields, kv[2 * i], kv[2 * i + 1]);
    }
    return APR_SUCCESS;
}

char *qrt_form_redact(apr_pool_t *p, const char *query, const char *name,
                      const char *mask)
{
    const char *s = query;
    const char *e;
    apr_size_t nlen = strlen(name), mlen = strlen(mask), pairs = 1;
    char *out, *o, *k;
    int found = 0;

    if (!query) {
        return NULL;
    }
    e = query + strlen(query);
    for (o = (char *)query; (o = strchr(o, '&')) != NULL; o++) {
        pairs++;
    }
    out = o = apr_palloc(p, (e - s) + pairs * mlen + 1);
    k = apr_palloc(p, (e - s) + 1);
    while (s < e) {
        const char *amp = memchr(s, '&', e - s);
        const char *pe = amp ? amp : e;
        const char *eq = memchr(s, '=', pe - s);
        const char *ke = eq ? eq : pe;
        const char *copy_to = pe;
        int hit = 0;

        /* Compared the way the API looks a parameter up (an APR table:
         * case-insensitively, the key %-decoded); a key that does not decode
         * is compared as it is written. */
        if (eq && (apr_size_t)(ke - s) >= nlen
            && ((qrt_form_decode(k, s, ke) && !strcasecmp(k, name))
                || ((apr_size_t)(ke - s) == nlen && !strncasecmp(s, name, nlen)))) {
            copy_to = eq + 1;
            found = hit = 1;
        }
        memcpy(o, s, copy_to - s);
        o += copy_to - s;
        if (hit) {
            memcpy(o, mask, mlen);
            o += mlen;
        }
        if (amp) {
            *o++ = '&';
        }
        s = amp ? amp + 1 : e;
    }
    *o = '\0';
    return found ? out : NULL;
}
