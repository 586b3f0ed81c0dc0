/* qrt_token: API tokens. A token is shown once; only its SHA-256 digest and a
 * short display prefix are stored. */
#ifndef QRT_TOKEN_H
#define QRT_TOKEN_H

#include <apr_pools.h>

#define QRT_TOKEN_PREFIX     "qrt_"
#define QRT_TOKEN_RANDOM     40      /* base62 characters after the prefix */
#define QRT_TOKEN_SHOWN      8       /* characters kept for display */
#define QRT_TOKEN_MAX        256     /* longer presented tokens are refused unhashed */

/* A new random token, e.g. "qrt_3kJ9...". NULL if the system has no randomness. */
char *qrt_token_generate(apr_pool_t *p);
/* Lower-case hex SHA-256 of len bytes (out holds 65 bytes). */
void qrt_sha256_hex(const void *data, apr_size_t len, char *out);
/* The digest stored for token. */
const char *qrt_token_digest(apr_pool_t *p, const char *token);
/* The display prefix stored for token. */
const char *qrt_token_shown(apr_pool_t *p, const char *token);
/* How visitor ids are made: this installation's secret (qrt_settings visitor_key,
 * 32 random bytes; none in a database from before schema version 6) and whether
 * the visit's UTC day is part of the id (visitor_rotation "daily"). */
typedef struct {
    unsigned char key[32];
    int keylen;                 /* 0: unkeyed */
    int daily;
} qrt_visitor_key_t;

/* Reads the settings: hexkey is "" or 64 hex digits, rotation NULL, "none" or
 * "daily". 0, or -1 (and an unkeyed, non-rotating *k) when they are malformed. */
int qrt_visitor_key_parse(qrt_visitor_key_t *k, const char *hexkey, const char *rotation);
/* A new secret: 64 hex digits in p, or NULL without randomness. */
char *qrt_visitor_key_generate(apr_pool_t *p);
/* The visitor id of a visit: the first 8 bytes, big-endian, as a signed 64-bit
 * integer (schema 9; before, their 16 hex digits) of HMAC-SHA-256 under k's key over
 * [the UTC day of visit_start, when k is daily] the address as stored and the user
 * agent; plain SHA-256 of the same when k is NULL or unkeyed (the ids of databases
 * from before version 6). NULLs count as empty. */
apr_int64_t qrt_visitor_id(const qrt_visitor_key_t *k, apr_int64_t visit_start,
                           const char *ip, const char *user_agent);
/* When a token made at now with --expires s ends (epoch seconds, in *at): s is a
 * duration, a whole number followed by s, m, h, d or w ("30d", "12h"; at most 100 years),
 * or a time as the API writes them ("2027-01-01T00:00:00+0000"). 0, or -1 for anything
 * else, a time not after now included. */
int qrt_token_expiry_parse(const char *s, apr_int64_t now, apr_int64_t *at);
/* 1 if t could be a token at all: 1..QRT_TOKEN_MAX printable ASCII bytes. */
int qrt_token_plausible(const char *t);

#endif
