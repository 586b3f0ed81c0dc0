/* qrt_aggcache: sealed report values (qrt_aggblob.h) a process keeps in memory.
 *
 * A report over a long window decodes a sealed value per day, and reading their text
 * through SQL costs more than decoding them (SQLite walks their overflow pages, the
 * driver copies them). A
 * value is kept under its key (account, level, bucket, kind) and its seal (schema 48:
 * a hash of its text, qrt_aggcache_seal), so a report lists its window's seals from
 * an index and reads the text of those it does not hold only: a value replaced in
 * the store has another seal, and one of another database with the same key and seal
 * has the same text.
 *
 * Kept values are never changed: a reader holds one until qrt_aggcache_release, and a
 * value replaced or pushed out meanwhile is freed by its last reader. At most max_bytes
 * of text are kept (the least recently used goes first); a value longer than an eighth
 * of that is not kept. Thread-safe. Unit-tested in test/unit/test_aggcache.c. */
#ifndef QRT_AGGCACHE_H
#define QRT_AGGCACHE_H

#include <apr_pools.h>

typedef struct qrt_aggcache_t qrt_aggcache_t;
typedef struct qrt_aggcache_ent_t qrt_aggcache_ent_t;

typedef struct {
    apr_int64_t account, bucket;
    int level, kind;
} qrt_aggcache_key_t;

/* A cache that lives as long as p (its values are freed with it); NULL when its lock
 * cannot be made. */
qrt_aggcache_t *qrt_aggcache_make(apr_pool_t *p, apr_size_t max_bytes);

/* The seal of a value's text: never 0 (0 is "no seal"). */
apr_int64_t qrt_aggcache_seal(const char *data, apr_size_t len);

/* The kept text of key under seal (NUL-terminated, read-only), held in *ent until
 * qrt_aggcache_release; NULL when not kept (or kept under another seal). */
const char *qrt_aggcache_get(qrt_aggcache_t *c, const qrt_aggcache_key_t *key,
                             apr_int64_t seal, qrt_aggcache_ent_t **ent);
/* The same, with its length (values that are bytes, not text; 8-byte aligned). */
const char *qrt_aggcache_get_len(qrt_aggcache_t *c, const qrt_aggcache_key_t *key,
                                 apr_int64_t seal, qrt_aggcache_ent_t **ent, apr_size_t *len);
void qrt_aggcache_release(qrt_aggcache_t *c, qrt_aggcache_ent_t *ent);
/* The same for n keys under one lock: of each key i whose data[i] is still NULL, the
 * kept value under seals[i] in data[i], lens[i] and ents[i] (left as they are when not
 * kept); the number found. qrt_aggcache_release_many lets go of ents[0..n) (NULL ones
 * skipped) and sets them NULL. */
int qrt_aggcache_get_many(qrt_aggcache_t *c, const qrt_aggcache_key_t *keys,
                          const apr_int64_t *seals, int n, const char **data,
                          apr_size_t *lens, qrt_aggcache_ent_t **ents);
void qrt_aggcache_release_many(qrt_aggcache_t *c, qrt_aggcache_ent_t **ents, int n);

/* Keeps a copy of data (len bytes) under key and seal, replacing what key held. */
void qrt_aggcache_put(qrt_aggcache_t *c, const qrt_aggcache_key_t *key, apr_int64_t seal,
                      const char *data, apr_size_t len);
/* The same, holding the copy kept in *ent (when ent is not NULL) until
 * qrt_aggcache_release: the copy, or NULL when it is not kept (too long, or no memory). */
const char *qrt_aggcache_put_held(qrt_aggcache_t *c, const qrt_aggcache_key_t *key,
                                  apr_int64_t seal, const char *data, apr_size_t len,
                                  qrt_aggcache_ent_t **ent);

/* The bytes it keeps at most. */
apr_size_t qrt_aggcache_max_bytes(const qrt_aggcache_t *c);
/* Values and bytes kept now (for tests). */
void qrt_aggcache_usage(qrt_aggcache_t *c, int *values, apr_size_t *bytes);

#endif
