/* qrt_valid: validation of network input (text, URLs, tags, integers).
 *
 * Reasons are short English sentence tails meant to follow the field's
 * name ("The redirect_url " + reason), static strings, never NULL-checked
 * by the caller beyond "NULL means fine".
 */
#ifndef QRT_VALID_H
#define QRT_VALID_H

#include <apr_pools.h>

/* Longest redirect URL accepted, in bytes. */
#define QRT_URL_MAX 2048
/* Longest tag accepted, in bytes. */
#define QRT_TAG_MAX 64

/* Decode one UTF-8 character at s, which has avail (> 0) bytes. Returns
 * the number of bytes it spans (1..4) and sets *cp to its code point when
 * the sequence is well-formed; when it is not, returns the length (1..3) of
 * the maximal ill-formed subpart (to be replaced by one U+FFFD, as Unicode
 * recommends) and sets *cp to -1. Rejects overlongs, surrogates and code
 * points above U+10FFFF. */
apr_size_t qrt_valid_utf8_char(const unsigned char *s, apr_size_t avail,
                               long *cp);

/* s (len bytes) as valid UTF-8 without NUL: each maximal ill-formed subpart and
 * each NUL becomes U+FFFD; then cut to at most max bytes (0: no cut) on a
 * character boundary. s itself when it needs nothing, else a copy in p; "" for
 * a NULL s. */
const char *qrt_valid_utf8_clean(apr_pool_t *p, const char *s, apr_size_t len,
                                 apr_size_t max);

/* 1 when s (len bytes of valid UTF-8) holds only white space (Unicode's, and the
 * zero-width space and BOM) or nothing: a name or tag that shows nothing. */
int qrt_valid_blank(const char *s, apr_size_t len);

/* NULL when s (len bytes) is valid UTF-8 without NUL, C0 control characters
 * (TAB allowed; allow_newlines also allows CR and LF) or DEL, else a short
 * English reason. A NULL s is "is missing". */
const char *qrt_valid_text(const char *s, apr_size_t len, int allow_newlines);

/* 1 when s is an account's name (1 to 64 of A-Z a-z 0-9 . _ -, not starting with a digit:
 * a name is told from an id by its first character), else 0. */
int qrt_valid_account_name(const char *s);

/* redirect_url: absolute http or https URL (scheme case-insensitive), at
 * most QRT_URL_MAX bytes, "//" then a non-empty host (a DNS-style name of
 * letters, digits, '-', '_', '.' and non-ASCII UTF-8; a strict dotted-quad
 * IPv4 when the last label is numeric; or an [IPv6] literal), an optional
 * :port 1..65535, optional userinfo of RFC 3986 characters, then any path,
 * query and fragment that is valid UTF-8 without whitespace, control
 * characters, '\\', '"', '<' or '>'. NULL when fine, else the reason. */
const char *qrt_valid_redirect_url(const char *url);

/* The host part of a URL that qrt_valid_redirect_url accepts, without
 * userinfo and port, as written (https://www.example.com/x ->
 * www.example.com, http://[::1]:8080/ -> [::1]). NULL for any other URL. */
const char *qrt_url_host(apr_pool_t *p, const char *url);

/* url as a Location header carries it (a URI: RFC 9110): the bytes past its host that
 * are not ASCII (UTF-8 of a path, query or fragment) percent-encoded; the host as
 * written (an IDN, which clients turn into its ASCII form). url itself when all ASCII. */
const char *qrt_url_location(apr_pool_t *p, const char *url);

/* A tag: 1..QRT_TAG_MAX bytes of valid UTF-8, no control characters (C0,
 * DEL, C1), not only whitespace. NULL when fine, else the reason. */
const char *qrt_valid_tag(const char *tag);

/* Splits "dimension:value" at the first colon into copies in p: *dim = NULL
 * and *value = the whole tag when there is no colon; ":x" gives dim "" and
 * "x:" gives value "". A NULL tag gives NULL for both. */
void qrt_tag_split(apr_pool_t *p, const char *tag, const char **dim,
                   const char **value);

/* Parse a strictly decimal non-negative integer: digits only (no sign,
 * spaces or '+'), no leading zeros except "0" itself, no overflow, within
 * [min, max]. Returns 0 and sets *out, or -1 (*out left alone). Used for
 * page, rows, ids, since_id. */
int qrt_parse_int(const char *s, apr_int64_t min, apr_int64_t max,
                  apr_int64_t *out);

#endif /* QRT_VALID_H */
