/* qrt_jsonl: a flat JSON object's members, read in one pass (see qrt_jsonl.h). */
#include <string.h>
#include "qrt_jsonl.h"
#include "qrt_valid.h"

typedef struct {
    char *s, *end;
} jl_in;

static void jl_space(jl_in *in)
{
    while (in->s < in->end
           && (*in->s == ' ' || *in->s == '\t' || *in->s == '\n' || *in->s == '\r')) {
        in->s++;
    }
}

/* Four hex digits at s: their value, or -1. */
static long jl_hex4(const char *s)
{
    long v = 0;
    int i;

    for (i = 0; i < 4; i++) {
        char c = s[i];

        v <<= 4;
        if (c >= '0' && c <= '9') {
            v |= c - '0';
        }
        else if (c >= 'a' && c <= 'f') {
            v |= c - 'a' + 10;
        }
        else if (c >= 'A' && c <= 'F') {
            v |= c - 'A' + 10;
        }
        else {
            return -1;
        }
    }
    return v;
}

/* The escape at s (its backslash; at least 2 bytes before end): its bytes, and in
 * *cp the code point it stands for; 0 for one jansson refuses or this reader leaves
 * to it (\u0000, a lone or reversed surrogate, an unknown letter). */
static apr_size_t jl_escape(const char *s, const char *end, long *cp)
{
    long hi, lo;

    switch (s[1]) {
    case '"': *cp = '"'; return 2;
    case '\\': *cp = '\\'; return 2;
    case '/': *cp = '/'; return 2;
    case 'b': *cp = '\b'; return 2;
    case 'f': *cp = '\f'; return 2;
    case 'n': *cp = '\n'; return 2;
    case 'r': *cp = '\r'; return 2;
    case 't': *cp = '\t'; return 2;
    case 'u':
        break;
    default:
        return 0;
    }
    if (end - s < 6 || (hi = jl_hex4(s + 2)) <= 0 || (hi >= 0xDC00 && hi <= 0xDFFF)) {
        return 0;
    }
    if (hi < 0xD800 || hi > 0xDBFF) {
        *cp = hi;
        return 6;
    }
    if (end - s < 12 || s[6] != '\\' || s[7] != 'u' || (lo = jl_hex4(s + 8)) < 0xDC00
        || lo > 0xDFFF) {
        return 0;
    }
    *cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
    return 12;
}

/* A string at in->s (its opening quote): its bytes start at *out, *len of them as
 * they stand in the line (the closing quote becomes a NUL once the whole line is
 * read; escapes, *escaped set, are written out in place then). -1 for anything
 * this reader leaves to jansson or that is not JSON. */
static int jl_string(jl_in *in, const char **out, apr_size_t *len, int *escaped)
{
    char *start;

    if (in->s >= in->end || *in->s != '"') {
        return -1;
    }
    *escaped = 0;
    start = ++in->s;
    while (in->s < in->end) {
        unsigned char c = (unsigned char)*in->s;

        if (c == '"') {
            *out = start;
            *len = (apr_size_t)(in->s - start);
            in->s++;
            return 0;
        }
        if (c == '\\') {
            long cp;
            apr_size_t k = in->end - in->s >= 2 ? jl_escape(in->s, in->end, &cp) : 0;

            if (!k) {
                return -1;
            }
            *escaped = 1;
            in->s += k;
        }
        else if (c < 0x20) {
            return -1;              /* not JSON */
        }
        else if (c < 0x80) {
            in->s++;
        }
        else {
            long cp;
            apr_size_t k = qrt_valid_utf8_char((const unsigned char *)in->s,
                                               (apr_size_t)(in->end - in->s), &cp);

            if (cp < 0) {
                return -1;
            }
            in->s += k;
        }
    }
    return -1;
}

/* Writes a string's escapes out in place (jl_string took them): its new length. */
static apr_size_t jl_unescape(char *s, apr_size_t len)
{
    const char *r = s, *end = s + len;
    char *w = s;

    while (r < end) {
        long cp;
        apr_size_t k;

        if (*r != '\\') {
            *w++ = *r++;
            continue;
        }
        k = jl_escape(r, end, &cp);
        r += k;
        if (cp < 0x80) {
            *w++ = (char)cp;
        }
        else if (cp < 0x800) {
            *w++ = (char)(0xC0 | (cp >> 6));
            *w++ = (char)(0x80 | (cp & 0x3F));
        }
        else if (cp < 0x10000) {
            *w++ = (char)(0xE0 | (cp >> 12));
            *w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
            *w++ = (char)(0x80 | (cp & 0x3F));
        }
        else {
            *w++ = (char)(0xF0 | (cp >> 18));
            *w++ = (char)(0x80 | ((cp >> 12) & 0x3F));
            *w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
            *w++ = (char)(0x80 | (cp & 0x3F));
        }
    }
    return (apr_size_t)(w - s);
}

/* An integer within 64 bits, no fraction or exponent. */
static int jl_int(jl_in *in, apr_int64_t *out)
{
    apr_uint64_t v = 0, limit;
    int neg = 0, digits = 0;

    if (in->s < in->end && *in->s == '-') {
        neg = 1;
        in->s++;
    }
    limit = neg ? (apr_uint64_t)APR_INT64_MAX + 1 : (apr_uint64_t)APR_INT64_MAX;
    if (in->s < in->end && *in->s == '0' && in->s + 1 < in->end && in->s[1] >= '0'
        && in->s[1] <= '9') {
        return -1;                  /* a leading zero: not JSON */
    }
    while (in->s < in->end && *in->s >= '0' && *in->s <= '9') {
        unsigned d = (unsigned)(*in->s - '0');

        if (v > (limit - d) / 10) {
            return -1;
        }
        v = v * 10 + d;
        in->s++;
        digits++;
    }
    if (!digits || (in->s < in->end && (*in->s == '.' || *in->s == 'e' || *in->s == 'E'))) {
        return -1;
    }
    *out = neg ? (apr_int64_t)(0 - v) : (apr_int64_t)v;
    return 0;
}

static int jl_word(jl_in *in, const char *w)
{
    apr_size_t n = strlen(w);

    if ((apr_size_t)(in->end - in->s) < n || memcmp(in->s, w, n) != 0) {
        return -1;
    }
    in->s += n;
    return 0;
}

static int jl_value(jl_in *in, qrt_jv_t *m, int *escaped)
{
    char c = in->s < in->end ? *in->s : '\0';

    m->str = NULL;
    m->len = 0;
    m->num = 0;
    *escaped = 0;
    if (c == '"') {
        m->type = QRT_JV_STR;
        return jl_string(in, &m->str, &m->len, escaped);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        m->type = QRT_JV_INT;
        return jl_int(in, &m->num);
    }
    if (c == 't') {
        m->type = QRT_JV_TRUE;
        return jl_word(in, "true");
    }
    if (c == 'f') {
        m->type = QRT_JV_FALSE;
        return jl_word(in, "false");
    }
    if (c == 'n') {
        m->type = QRT_JV_NULL;
        return jl_word(in, "null");
    }
    return -1;
}

int qrt_jsonl_flat(char *line, apr_size_t len, qrt_jv_t *out, int max, int *n)
{
    jl_in in;
    unsigned long long escaped = 0;     /* members whose value has escapes (up to 64) */
    int i;

    in.s = line;
    in.end = line + len;
    *n = 0;
    jl_space(&in);
    if (in.s >= in.end || *in.s++ != '{') {
        return QRT_JSONL_DECLINED;
    }
    jl_space(&in);
    if (in.s < in.end && *in.s == '}') {
        in.s++;
    }
    else {
        for (;;) {
            qrt_jv_t *m;
            int esc;

            if (*n >= max) {
                return QRT_JSONL_DECLINED;
            }
            m = &out[(*n)++];
            jl_space(&in);
            /* (a key with an escape: jansson's) */
            if (jl_string(&in, &m->key, &m->keylen, &esc) != 0 || esc) {
                return QRT_JSONL_DECLINED;
            }
            jl_space(&in);
            if (in.s >= in.end || *in.s++ != ':') {
                return QRT_JSONL_DECLINED;
            }
            jl_space(&in);
            if (jl_value(&in, m, &esc) != 0 || (esc && *n > 64)) {
                return QRT_JSONL_DECLINED;
            }
            if (esc) {
                escaped |= 1ULL << (*n - 1);
            }
            jl_space(&in);
            if (in.s < in.end && *in.s == ',') {
                in.s++;
                continue;
            }
            if (in.s < in.end && *in.s == '}') {
                in.s++;
                break;
            }
            return QRT_JSONL_DECLINED;
        }
    }
    jl_space(&in);
    if (in.s != in.end) {
        return QRT_JSONL_DECLINED;
    }
    /* Taken whole: only now is the line changed (a declined one goes to jansson as
     * it came). */
    for (i = 0; i < *n; i++) {
        ((char *)out[i].key)[out[i].keylen] = '\0';
        if (out[i].type == QRT_JV_STR) {
            if (i < 64 && (escaped >> i & 1)) {
                out[i].len = jl_unescape((char *)out[i].str, out[i].len);
            }
            ((char *)out[i].str)[out[i].len] = '\0';
        }
    }
    return 0;
}

const qrt_jv_t *qrt_jsonl_get(const qrt_jv_t *m, int n, const char *key)
{
    apr_size_t len = strlen(key);
    int i;

    for (i = n - 1; i >= 0; i--) {
        if (m[i].keylen == len && !memcmp(m[i].key, key, len)) {
            return &m[i];
        }
    }
    return NULL;
}

const qrt_jv_t *qrt_jsonl_repeated(const qrt_jv_t *m, int n)
{
    int i, j;

    /* (a line's members are few: QRT's readers take at most a few dozen) */
    for (i = 1; i < n; i++) {
        for (j = 0; j < i; j++) {
            if (m[i].keylen == m[j].keylen && !memcmp(m[i].key, m[j].key, m[i].keylen)) {
                return &m[i];
            }
        }
    }
    return NULL;
}
