/*
 * qrt_ua: user-agent classification with the uap-core regexes.yaml.
 *
 * browser and os follow uap-core exactly (first matching regex wins);
 * bot is uap's device family "Spider" or a crawler-like browser family;
 * device is derived from a few tokens of the user-agent and the os.
 * Results are cached per db: at most QRT_UA_CACHE_SLOTS entries of at
 * most QRT_UA_MAX_LEN bytes of key each (about 2.5 MB at worst).
 *
 * Core file: APR, PCRE2 and libyaml only, no httpd headers.
 */

#ifndef QRT_UA_H
#define QRT_UA_H

#include <apr_pools.h>

/* Number of bytes of a user-agent string that are examined; the rest is
 * ignored (bounds the regex cost of hostile input). */
#define QRT_UA_MAX_LEN 512

/* Number of slots of the per-db result cache (a power of two). */
#define QRT_UA_CACHE_SLOTS 4096

typedef struct {
    const char *browser;          /* uap family, e.g. "Chrome", "Mobile Safari", "Firefox", "Other" */
    const char *browser_version;  /* major version string, or NULL */
    const char *os;               /* uap os family, e.g. "Android", "iOS", "Windows", "Mac OS X", "Linux", "Other" */
    const char *device;           /* exactly one of "mobile", "tablet", "desktop", "bot", "other" */
    int bot;                      /* 1 for crawlers/spiders/bots */
} qrt_ua_t;

typedef struct qrt_ua_db_t qrt_ua_db_t;

/* Load and compile regexes.yaml (user_agent_parsers, os_parsers and
 * device_parsers). Call once at server start, in the parent: forked
 * children share the compiled regexes and each has its own copy of the
 * cache, shared by its threads. Everything (compiled regexes, cache
 * entries) is released by a cleanup of p. Returns NULL and sets *err (in
 * p or static) on failure. */
qrt_ua_db_t *qrt_ua_load(apr_pool_t *p, const char *yaml_path,
                         const char **err);
/* The same; with jit 0 the regexes are compiled for PCRE2's interpreter alone (checked
 * as qrt_ua_load checks them, and parsed the same, more slowly): for a load that only
 * checks the file, such as httpd's first pass over its configuration. */
qrt_ua_db_t *qrt_ua_load_ex(apr_pool_t *p, const char *yaml_path, int jit,
                            const char **err);

/* Classify ua (NULL or empty gives browser "Other", os "Other", device
 * "other", bot 0). Only the first QRT_UA_MAX_LEN bytes are examined; any
 * bytes are accepted. Thread-safe. Result strings are allocated in p (a
 * request pool) or are static. */
void qrt_ua_parse(qrt_ua_db_t *db, const char *ua, apr_pool_t *p,
                  qrt_ua_t *out);

/* Counters of the result cache, for tests and status pages (approximate
 * when read while other threads parse). */
void qrt_ua_cache_stats(qrt_ua_db_t *db, apr_uint64_t *hits,
                        apr_uint64_t *misses);

#endif /* QRT_UA_H */
