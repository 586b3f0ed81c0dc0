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

/* A string without escapes at in->s (its opening quote): its bytes start at *out
 * (the closing quote becomes its NUL once the whole line is read). -1 for anything
 * else. */
static int jl_string(jl_in *in, const char **out, apr_size_t *len)
{
    char *start;

    if (in->s >= in->end || *in->s != '"') {
        return -1;
    }
    start = ++in->s;
    while (in->s < in->end) {
        unsigned char c = (unsigned char)*in->s;

        if (c == '"') {
            *out = start;
            *len = (apr_size_t)(in->s - start);
            in->s++;
            return 0;
        }
        if (c == '\\' || c < 0x20) {
            return -1;              /* an escape (jansson's), or not JSON */
        }
        if (c < 0x80) {
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

static int jl_value(jl_in *in, qrt_jv_t *m)
{
    char c = in->s < in->end ? *in->s : '\0';

    m->str = NULL;
    m->len = 0;
    m->num = 0;
    if (c == '"') {
        m->type = QRT_JV_STR;
        return jl_string(in, &m->str, &m->len);
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

            if (*n >= max) {
                return QRT_JSONL_DECLINED;
            }
            m = &out[(*n)++];
            jl_space(&in);
            if (jl_string(&in, &m->key, &m->keylen) != 0) {
                return QRT_JSONL_DECLINED;
            }
            jl_space(&in);
            if (in.s >= in.end || *in.s++ != ':') {
                return QRT_JSONL_DECLINED;
            }
            jl_space(&in);
            if (jl_value(&in, m) != 0) {
                return QRT_JSONL_DECLINED;
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
            ((char *)out[i].str)[out[i].len] = '\0';
        }
    }
    return 0;
}

const qrt_jv_t *qrt_jsonl_get(const qrt_jv_t *m, int n, const char *key)
{
    int i;

    for (i = n - 1; i >= 0; i--) {
        if (!strcmp(m[i].key, key)) {
            return &m[i];
        }
    }
    return NULL;
}
