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
/* The visitor id of a visit (17 bytes with NUL): 16 hex digits of SHA-256 over the
 * address as stored and the user agent. NULLs count as empty. */
void qrt_visitor_id(char *out, const char *ip, const char *user_agent);
/* 1 if t could be a token at all: 1..QRT_TOKEN_MAX printable ASCII bytes. */
int qrt_token_plausible(const char *t);

#endif
