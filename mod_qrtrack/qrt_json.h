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
/* Parses len bytes as a JSON document (duplicate keys refused, no NUL in strings),
 * owned by p. NULL with *err (in p) on failure. */
json_t *qrt_json_parse(apr_pool_t *p, const char *buf, apr_size_t len, const char **err);

#endif
