/* qrt_code: the public random codes of trackers. */
#ifndef QRT_CODE_H
#define QRT_CODE_H

#include <apr_errno.h>

/* Shortest and longest code that qrt_code_valid accepts. */
#define QRT_CODE_MIN 6
#define QRT_CODE_MAX 32

/* Fill buf with n random base62 characters [0-9A-Za-z] from
 * apr_generate_random_bytes (unbiased: rejection sampling) and
 * NUL-terminate it (buf holds n + 1 bytes). n = 0 gives "". APR_EINVAL for
 * a NULL buf or a negative n; otherwise the status of the random source
 * (buf is then "" when it fails). */
apr_status_t qrt_code_generate(char *buf, int n);

/* 1 if s is QRT_CODE_MIN..QRT_CODE_MAX characters of base62, else 0 (a
 * cheap check before a database lookup; NULL gives 0). */
int qrt_code_valid(const char *s);

/* Shortest and longest code a client may choose (POST /tracker "code"). */
#define QRT_CODE_CUSTOM_MIN 3
#define QRT_CODE_CUSTOM_MAX 64

/* 1 if s is QRT_CODE_CUSTOM_MIN..QRT_CODE_CUSTOM_MAX characters of [A-Za-z0-9_-],
 * else 0 (NULL gives 0). Every generated code passes it too, so the scan path
 * checks codes with it. */
int qrt_code_custom_valid(const char *s);

#endif /* QRT_CODE_H */
