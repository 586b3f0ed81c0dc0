/* qrt_json: pool-bound jansson helpers. */
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>
#include "qrt_date.h"
#include "qrt_json.h"

static apr_status_t json_release(void *data)
{
    json_decref((json_t *)data);
    return APR_SUCCESS;
}

json_t *qrt_json_own(apr_pool_t *p, json_t *j)
{
    if (j) {
        apr_pool_cleanup_register(p, j, json_release, apr_pool_cleanup_null);
    }
    return j;
}

char *qrt_json_dump(apr_pool_t *p, const json_t *j, apr_size_t *len)
{
    char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    char *out;

    if (!s) {
        out = apr_pstrdup(p, "null");
    }
    else {
        out = apr_pstrdup(p, s);
        free(s);
    }
    if (len) {
        *len = strlen(out);
    }
    return out;
}

apr_size_t qrt_json_quote(char *out, const char *s, apr_size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    apr_size_t i, k = 0;

    out[k++] = '"';
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        switch (c) {
        case '"':  out[k++] = '\\'; out[k++] = '"'; break;
        case '\\': out[k++] = '\\'; out[k++] = '\\'; break;
        case '\b': out[k++] = '\\'; out[k++] = 'b'; break;
        case '\f': out[k++] = '\\'; out[k++] = 'f'; break;
        case '\n': out[k++] = '\\'; out[k++] = 'n'; break;
        case '\r': out[k++] = '\\'; out[k++] = 'r'; break;
        case '\t': out[k++] = '\\'; out[k++] = 't'; break;
        default:
            if (c < 0x20) {
                memcpy(out + k, "\\u00", 4);
                out[k + 4] = hex[c >> 4];
                out[k + 5] = hex[c & 15];
                k += 6;
            }
            else {
                out[k++] = (char)c;
            }
        }
    }
    out[k++] = '"';
    return k;
}

json_t *qrt_json_str(const char *s)
{
    return s ? json_string(s) : json_null();
}

json_t *qrt_json_time(apr_int64_t t)
{
    char buf[QRT_DATE_LEN];

    if (!t) {
        return json_null();
    }
    qrt_date_format(buf, t, 0);
    return json_string(buf);
}

json_t *qrt_json_parse(apr_pool_t *p, const char *buf, apr_size_t len, const char **err)
{
    json_error_t e;
    json_t *j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &e);

    if (!j) {
        *err = apr_psprintf(p, "%s (line %d, column %d)", e.text, e.line, e.column);
        return NULL;
    }
    return qrt_json_own(p, j);
}
