/* qrt_dict: the visits' dictionaries (schema 7) seen from C: the key of a
 * dictionary row, and the committer's cache of key -> id.
 *
 * A visit row holds the ids of its user agent (with browser, browser_version, os
 * and device), its place (country, city), its referer and its ip, each a row of a
 * dictionary table (sql/007_lean_visits.sql). The writer finds the ids in a cache
 * first; ids it learns inside a transaction stay pending until the transaction
 * has committed (qrt_dict_cache_commit), so a rolled-back insert never leaves a
 * dangling id in the cache. The cache is bounded: a dictionary that reaches its
 * maximum of entries, or of its keys' bytes (user agents and referers reach 1 and 2
 * KB), starts over empty. */
#ifndef QRT_DICT_H
#define QRT_DICT_H

#include <apr_pools.h>

/* The visits' dictionaries, agg_bcy (a link's browser, country and city, schema 12),
 * agg_vals (a gap's value, schema 13) and the visits' destinations (schema 25). */
enum { QRT_DICT_UA, QRT_DICT_PLACE, QRT_DICT_REF, QRT_DICT_IP, QRT_DICT_BCY, QRT_DICT_VAL,
       QRT_DICT_DEST, QRT_DICTS };

/* The key of a dictionary row of n fields: each field as its length in bytes
 * (decimal), ':' and its bytes, or '-' for NULL; concatenated. In p. */
char *qrt_dict_key(apr_pool_t *p, const char *const *fields, int n);

typedef struct qrt_dict_cache qrt_dict_cache_t;

/* A cache of at most max entries per dictionary, and of at most max_bytes bytes of
 * their keys (0: no bound but max), in subpools of p. */
qrt_dict_cache_t *qrt_dict_cache_make(apr_pool_t *p, int max, apr_size_t max_bytes);
/* The id of key in dict (pending ones included), 0 when unknown. */
apr_int64_t qrt_dict_cache_get(qrt_dict_cache_t *c, int dict, const char *key);
/* Learns key -> id inside the current transaction. */
void qrt_dict_cache_stage(qrt_dict_cache_t *c, int dict, const char *key, apr_int64_t id);
/* The transaction committed: what it staged is kept. */
void qrt_dict_cache_commit(qrt_dict_cache_t *c);
/* The transaction rolled back (or may have): what it staged is forgotten. */
void qrt_dict_cache_abort(qrt_dict_cache_t *c);
/* Whether a key the cache does not know should be looked up in its table before it
 * is added: when most such keys of dict lately were there already (an import of
 * visitors seen before), not when most were new (the default). */
int qrt_dict_cache_lookup_first(const qrt_dict_cache_t *c, int dict);
/* What a key the cache did not know turned out to be: found (1) or added (0). */
void qrt_dict_cache_missed(qrt_dict_cache_t *c, int dict, int found);
/* The same for a batch's keys: found of them were there, added were not. */
void qrt_dict_cache_missed_batch(qrt_dict_cache_t *c, int dict, int found, int added);
/* The visits' dictionaries' generation, read in the writer's transaction (schema 22:
 * visit_dict_gen, raised by each deletion of dictionary rows no visit refers to any
 * more, qrt_store_purge.h). When it is not the one the cache was filled under, the
 * entries of the user agent, referer, address and destination dictionaries (those a
 * purge deletes from) are forgotten, and the cache is under gen from then on: 1 then, else 0. */
int qrt_dict_cache_generation(qrt_dict_cache_t *c, apr_int64_t gen);
/* Entries kept in dict (not counting pending ones). */
int qrt_dict_cache_count(const qrt_dict_cache_t *c, int dict);

#endif
