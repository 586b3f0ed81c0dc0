/* qrt_json: jansson values that live and die with an APR pool. */
#ifndef QRT_JSON_H
#define QRT_JSON_H

#include <apr_pools.h>
#include <jansson.h>

/* Hands j's reference to pool p: it is released when p is cleared. Returns j. */
json_t *qrt_json_own(apr_pool_t *p, json_t *j);
/* Compact serialisation of j into p; *len (optional) gets its length. */
char *qrt_json_dump(apr_pool_t *p, const json_t *j, apr_size_t *len);
/* A JSON string, or null for NULL. */
json_t *qrt_json_str(const char *s);
/* Epoch seconds as "YYYY-MM-DDTHH:MM:SS+0000", or null when t is 0. */
json_t *qrt_json_time(apr_int64_t t);
/* n bytes of s as a JSON string with its quotes, escaped as json_dumps escapes (", \\,
 * control characters; UTF-8 as it is), into out, which holds QRT_JSON_QUOTED_MAX(n)
 * bytes; returns its length (no NUL is written). */
#define QRT_JSON_QUOTED_MAX(n) (6 * (apr_size_t)(n) + 2)
apr_size_t qrt_json_quote(char *out, const char *s, apr_size_t n);
/* Parses len bytes as a JSON document (duplicate keys refused, no NUL in strings),
 * owned by p. NULL with *err (in p) on failure. */
json_t *qrt_json_parse(apr_pool_t *p, const char *buf, apr_size_t len, const char **err);

#endif
