/* qrt_password: the password of a protected tracker, stored only as a slow salted hash.
 *
 * The hash is PBKDF2-HMAC-SHA256 (OpenSSL's PKCS5_PBKDF2_HMAC) with a 16-byte salt from
 * RAND_bytes and a 32-byte derived key, encoded as
 *   "pbkdf2-sha256$<iterations>$<salt, base64>$<key, base64>"
 * (standard base64 with padding: 24 and 44 characters). PBKDF2 rather than scrypt:
 * it costs CPU only, so a verify in one of httpd's worker threads allocates nothing
 * (scrypt at a comparable cost wants 16 MB per verify, per thread at once), and the
 * number of verifies is bounded by the wrong-try limit (qrt_tries). The iteration
 * count makes one verify cost a few tens of milliseconds on a current server core
 * (docs/design.md, "Password gate"). A stored hash may ask for between
 * QRT_PASSWORD_ITER_MIN and QRT_PASSWORD_ITER_MAX iterations (so the default can be
 * raised later); anything outside is malformed and never verified.
 *
 * Every function is thread-safe and allocates, if at all, in the pool it is given.
 */
#ifndef QRT_PASSWORD_H
#define QRT_PASSWORD_H

#include <apr_pools.h>

/* Longest password, in bytes. */
#define QRT_PASSWORD_MAX        128
/* Iterations of a new hash. */
#define QRT_PASSWORD_ITERATIONS 150000
/* Iterations a stored hash may ask for: fewer is too weak, more costs too much CPU. */
#define QRT_PASSWORD_ITER_MIN   10000
#define QRT_PASSWORD_ITER_MAX   1000000
/* The encoding's prefix, algorithm and separator. */
#define QRT_PASSWORD_SCHEME     "pbkdf2-sha256$"

/* Hash pw (len bytes, 1..QRT_PASSWORD_MAX) with a fresh random salt: returns the
 * encoded string, allocated in p; NULL on failure (length out of range, no
 * randomness, OpenSSL error). Takes as long as a verify. */
const char *qrt_password_hash(apr_pool_t *p, const char *pw, apr_size_t len);

/* 1 when pw (len bytes) matches encoded (constant-time compare of the derived key), 0
 * when not, when len is out of 1..QRT_PASSWORD_MAX, or when encoded is NULL or
 * malformed (wrong scheme, iterations outside the bounds above, salt or key of the
 * wrong length or not base64, anything after the key). Never crashes on hostile
 * input. */
int qrt_password_verify(const char *encoded, const char *pw, apr_size_t len);

/* Validation of a new password from the API: NULL when acceptable, else a sentence
 * for the API's error body (length 1..QRT_PASSWORD_MAX bytes, valid UTF-8, no
 * control characters: C0, DEL, C1). A NULL pw is "missing". */
const char *qrt_password_check(const char *pw, apr_size_t len);

#endif /* QRT_PASSWORD_H */
