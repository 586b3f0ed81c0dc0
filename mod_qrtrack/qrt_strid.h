/* qrt_strid: a number for each string a process has seen (no database, no httpd).
 *
 * A report over listed trackers groups their visits by browser, country or city, which
 * the blocks of visits (qrt_vcols) hold as strings of their own: each block's strings
 * were looked up in the report's groups by their text, block after block, the same
 * few hundred cities again. A block now also holds each string's number here, taken
 * once when it is made, and a report finds a number's group in a table of numbers.
 * Numbers are never reused while the table lives; once it holds max_ids strings or
 * max_bytes of them it hands out 0 ("none": the report looks that string up by its
 * text). A block may then hold a string's number alone, and a report read the string
 * back by its number. Thread-safe. Unit-tested in test/unit/test_strid.c. */
#ifndef QRT_STRID_H
#define QRT_STRID_H

#include <apr_pools.h>

typedef struct qrt_strid_t qrt_strid_t;

/* An empty table that lives as long as p; NULL when its lock cannot be made. */
qrt_strid_t *qrt_strid_make(apr_pool_t *p, apr_uint32_t max_ids, apr_size_t max_bytes);
/* The numbers of the n NUL-terminated strings s[i] in ids[i], under one lock: the
 * number a string had, else a new one (from 1 up), or 0 when the table is full or
 * without memory. */
void qrt_strid_get_many(qrt_strid_t *t, const char *const *s, apr_size_t n,
                        apr_uint32_t *ids);
/* The string numbered id, copied into p; NULL for a number not given out. */
const char *qrt_strid_str(qrt_strid_t *t, apr_uint32_t id, apr_pool_t *p);
/* The strings numbered so far. */
apr_uint32_t qrt_strid_count(qrt_strid_t *t);

#endif
