/* qrt_valid: see qrt_valid.h. */
#include <string.h>
#include <arpa/inet.h>

#include <apr_lib.h>
#include <apr_strings.h>

#include "qrt_valid.h"

apr_size_t qrt_valid_utf8_char(const unsigned char *s, apr_size_t avail,
                               long *cp)
{
    unsigned char b, lo = 0x80, hi = 0xBF;
    apr_size_t need, i;
    long v;

    if (cp) {
        *cp = -1;
    }
    if (!s || avail == 0) {
        return 0;
    }
    b = s[0];
    if (b < 0x80) {
        if (cp) {
            *cp = b;
        }
        return 1;
    }
    if (b >= 0xC2 && b <= 0xDF) {
        need = 1;
        v = b & 0x1F;
    }
    else if (b >= 0xE0 && b <= 0xEF) {
        need = 2;
        v = b & 0x0F;
        if (b == 0xE0) {
            lo = 0xA0;              /* no overlongs */
        }
        else if (b == 0xED) {
            hi = 0x9F;              /* no surrogates */
        }
    }
    else if (b >= 0xF0 && b <= 0xF4) {
        need = 3;
        v = b & 0x07;
        if (b == 0xF0) {
            lo = 0x90;              /* no overlongs */
        }
        else if (b == 0xF4) {
            hi = 0x8F;              /* nothing above U+10FFFF */
        }
    }
    else {
        return 1;                   /* 80..C1, F5..FF never start a char */
    }
    for (i = 1; i <= need; i++) {
        if (i >= avail || s[i] < lo || s[i] > hi) {
            return i;
        }
        v = (v << 6) | (s[i] & 0x3F);
        lo = 0x80;
        hi = 0xBF;
    }
    if (cp) {
        *cp = v;
    }
    return need + 1;
}

const char *qrt_valid_utf8_clean(apr_pool_t *p, const char *s, apr_size_t len,
                                 apr_size_t max)
{
    const unsigned char *u = (const unsigned char *)s;
    apr_size_t i = 0, o = 0, n;
    char *out;
    long cp;
    int clean = 1;

    if (!s) {
        return "";
    }
    while (i < len) {
        i += qrt_valid_utf8_char(u + i, len - i, &cp);
        if (cp <= 0) {
            clean = 0;
            break;
        }
    }
    if (clean && (max == 0 || len <= max)) {
        return s[len] == '\0' ? s : apr_pstrmemdup(p, s, len);
    }
    /* Each input byte becomes at most 3 output bytes. */
    out = apr_palloc(p, len * 3 + 1);
    for (i = 0; i < len; i += n) {
        const char *from = s + i;
        apr_size_t k;

        n = qrt_valid_utf8_char(u + i, len - i, &cp);
        k = n;
        if (cp <= 0) {
            from = "\xEF\xBF\xBD";
            k = 3;
        }
        if (max && o + k > max) {
            break;
        }
        memcpy(out + o, from, k);
        o += k;
    }
    out[o] = '\0';
    return out;
}

const char *qrt_valid_text(const char *s, apr_size_t len, int allow_newlines)
{
    const unsigned char *u = (const unsigned char *)s;
    apr_size_t i = 0;
    long cp;

    if (!s) {
        return "is missing";
    }
    while (i < len) {
        if (u[i] >= 0x20 && u[i] < 0x7F) {
            i++;                    /* printable ASCII, the common case */
            continue;
        }
        i += qrt_valid_utf8_char(u + i, len - i, &cp);
        if (cp < 0) {
            return "must be valid UTF-8";
        }
        if (cp == 0) {
            return "may not contain NUL bytes";
        }
        if (cp == '\t' || (allow_newlines && (cp == '\r' || cp == '\n'))) {
            continue;
        }
        if (cp < 0x20 || cp == 0x7F) {
            return "may not contain control characters";
        }
    }
    return NULL;
}

/* Unicode white space (and the invisible zero-width space and BOM). */
static int is_space_cp(long cp)
{
    return cp == 0x20 || cp == 0x09 || cp == 0x0A || cp == 0x0B
        || cp == 0x0C || cp == 0x0D || cp == 0x85 || cp == 0xA0
        || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200B)
        || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F
        || cp == 0x3000 || cp == 0xFEFF;
}

static int is_control_cp(long cp)
{
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F);
}

static int is_alpha(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static int is_hex(int c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int lower(int c)
{
    return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c;
}

/* RFC 3986 userinfo: unreserved / pct-encoded / sub-delims / ":". */
static int valid_userinfo(const char *s, apr_size_t len)
{
    apr_size_t i;

    for (i = 0; i < len; i++) {
        int c = (unsigned char)s[i];

        if (c == '%') {
            if (i + 2 >= len || !is_hex(s[i + 1]) || !is_hex(s[i + 2])) {
                return 0;
            }
            i += 2;
        }
        else if (!is_alpha(c) && !is_digit(c)
                 && !strchr("-._~!$&'()*+,;=:", c)) {
            return 0;
        }
    }
    return 1;
}

/* A host that is not a bracketed IPv6 literal: dot-separated non-empty
 * labels of letters, digits, '-', '_' and non-ASCII (UTF-8, checked by the
 * caller), at most 253 bytes plus one optional trailing dot. */
static int valid_reg_host(const char *s, apr_size_t len)
{
    apr_size_t i, label_start = 0, last_start = 0;
    int rooted = 0, numeric = 1, hexnum;
    char v4[16];
    struct in_addr a;

    if (len > 1 && s[len - 1] == '.') {
        rooted = 1;
        len--;
    }
    if (len == 0 || len > 253) {
        return 0;
    }
    for (i = 0; i <= len; i++) {
        int c = (i < len) ? (unsigned char)s[i] : '.';

        if (c == '.') {
            if (i == label_start) {
                return 0;           /* empty label */
            }
            last_start = label_start;
            label_start = i + 1;
        }
        else if (!is_alpha(c) && !is_digit(c) && c != '-' && c != '_'
                 && c < 0x80) {
            return 0;
        }
    }
    /* A numeric last label makes the whole host an IPv4 address to a
     * browser (WHATWG URL "ends in a number"): insist on a dotted quad. */
    hexnum = len - last_start >= 2 && s[last_start] == '0'
             && lower(s[last_start + 1]) == 'x';
    for (i = last_start + (hexnum ? 2 : 0); i < len; i++) {
        if (hexnum ? !is_hex(s[i]) : !is_digit(s[i])) {
            numeric = 0;
            break;
        }
    }
    if (!numeric) {
        return 1;
    }
    if (rooted || len >= sizeof(v4)) {
        return 0;
    }
    memcpy(v4, s, len);
    v4[len] = '\0';
    return inet_pton(AF_INET, v4, &a) == 1;
}

/* Parses an http(s) URL; on success returns NULL and sets the host span. */
static const char *parse_url(const char *url, const char **host,
                             apr_size_t *host_len)
{
    const unsigned char *u = (const unsigned char *)url;
    const char *auth, *end, *at, *hp, *hend, *port = NULL;
    apr_size_t len, i;
    long cp;

    if (!url) {
        return "is required";
    }
    for (len = 0; url[len] != '\0'; len++) {
        if (len >= QRT_URL_MAX) {
            return "may not be longer than 2048 bytes";
        }
    }
    if (len == 0) {
        return "is required";
    }
    for (i = 0; i < len; ) {
        i += qrt_valid_utf8_char(u + i, len - i, &cp);
        if (cp < 0) {
            return "must be valid UTF-8";
        }
        if (is_control_cp(cp) || is_space_cp(cp)) {
            return "may not contain whitespace or control characters";
        }
        if (cp == '\\' || cp == '"' || cp == '<' || cp == '>') {
            return "may not contain \\, \", < or >";
        }
    }
    if (len >= 7 && lower(url[0]) == 'h' && lower(url[1]) == 't'
        && lower(url[2]) == 't' && lower(url[3]) == 'p') {
        if (url[4] == ':') {
            auth = url + 5;
        }
        else if (lower(url[4]) == 's' && url[5] == ':') {
            auth = url + 6;
        }
        else {
            return "must be an absolute http or https URL";
        }
    }
    else {
        return "must be an absolute http or https URL";
    }
    if (auth[0] != '/' || auth[1] != '/') {
        return "must be an absolute http or https URL";
    }
    auth += 2;
    end = auth + strcspn(auth, "/?#");

    /* userinfo@ : at most one '@', RFC 3986 characters only */
    at = NULL;
    for (hp = auth; hp < end; hp++) {
        if (*hp == '@') {
            if (at) {
                return "has an invalid user name or password";
            }
            at = hp;
        }
    }
    hp = auth;
    if (at) {
        if (!valid_userinfo(auth, at - auth)) {
            return "has an invalid user name or password";
        }
        hp = at + 1;
    }

    if (hp < end && *hp == '[') {
        char v6[64];
        struct in6_addr a6;
        const char *rb = memchr(hp, ']', end - hp);

        if (!rb || (apr_size_t)(rb - hp - 1) >= sizeof(v6)) {
            return "must have a valid host";
        }
        memcpy(v6, hp + 1, rb - hp - 1);
        v6[rb - hp - 1] = '\0';
        if (inet_pton(AF_INET6, v6, &a6) != 1) {
            return "must have a valid host";
        }
        hend = rb + 1;
        if (hend < end) {
            if (*hend != ':') {
                return "must have a valid host";
            }
            port = hend + 1;
        }
    }
    else {
        hend = memchr(hp, ':', end - hp);
        if (hend) {
            port = hend + 1;
        }
        else {
            hend = end;
        }
        if (!valid_reg_host(hp, hend - hp)) {
            return "must have a valid host";
        }
    }
    if (port) {
        long v = 0;
        const char *q;

        if (port == end || end - port > 5) {
            return "must have a port between 1 and 65535";
        }
        for (q = port; q < end; q++) {
            if (!is_digit(*q)) {
                return "must have a port between 1 and 65535";
            }
            v = v * 10 + (*q - '0');
        }
        if (v < 1 || v > 65535) {
            return "must have a port between 1 and 65535";
        }
    }
    if (host) {
        *host = hp;
    }
    if (host_len) {
        *host_len = hend - hp;
    }
    return NULL;
}

const char *qrt_valid_redirect_url(const char *url)
{
    return parse_url(url, NULL, NULL);
}

const char *qrt_url_host(apr_pool_t *p, const char *url)
{
    const char *host;
    apr_size_t len;

    if (parse_url(url, &host, &len)) {
        return NULL;
    }
    return apr_pstrmemdup(p, host, len);
}

const char *qrt_url_location(apr_pool_t *p, const char *url)
{
    static const char hex[] = "0123456789ABCDEF";
    const char *s, *rest;
    apr_size_t n = 0;
    char *out, *o;

    for (s = url; *s; s++) {
        n += (unsigned char)*s >= 0x80;
    }
    if (n == 0) {
        return url;
    }
    s = strstr(url, "//");
    rest = s ? s + 2 + strcspn(s + 2, "/?#") : url;
    out = o = apr_palloc(p, strlen(url) + 2 * n + 1);
    memcpy(o, url, (apr_size_t)(rest - url));
    o += rest - url;
    for (s = rest; *s; s++) {
        unsigned char c = (unsigned char)*s;

        if (c >= 0x80) {
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
        else {
            *o++ = (char)c;
        }
    }
    *o = '\0';
    return out;
}

const char *qrt_valid_tag(const char *tag)
{
    const unsigned char *u = (const unsigned char *)tag;
    apr_size_t len, i;
    int blank = 1;
    long cp;

    if (!tag) {
        return "is required";
    }
    for (len = 0; tag[len] != '\0'; len++) {
        if (len >= QRT_TAG_MAX) {
            return "may not be longer than 64 bytes";
        }
    }
    if (len == 0) {
        return "may not be empty";
    }
    for (i = 0; i < len; ) {
        i += qrt_valid_utf8_char(u + i, len - i, &cp);
        if (cp < 0) {
            return "must be valid UTF-8";
        }
        if (is_control_cp(cp)) {
            return "may not contain control characters";
        }
        if (!is_space_cp(cp)) {
            blank = 0;
        }
    }
    if (blank) {
        return "may not be only white space";
    }
    return NULL;
}

int qrt_valid_blank(const char *s, apr_size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    apr_size_t i;
    long cp;

    for (i = 0; i < len; ) {
        i += qrt_valid_utf8_char(u + i, len - i, &cp);
        if (cp < 0 || !is_space_cp(cp)) {
            return 0;
        }
    }
    return 1;
}

void qrt_tag_split(apr_pool_t *p, const char *tag, const char **dim,
                   const char **value)
{
    const char *colon = tag ? strchr(tag, ':') : NULL;
    const char *d = NULL, *v = NULL;

    if (tag && colon) {
        d = apr_pstrmemdup(p, tag, colon - tag);
        v = apr_pstrdup(p, colon + 1);
    }
    else if (tag) {
        v = apr_pstrdup(p, tag);
    }
    if (dim) {
        *dim = d;
    }
    if (value) {
        *value = v;
    }
}

int qrt_parse_int(const char *s, apr_int64_t min, apr_int64_t max,
                  apr_int64_t *out)
{
    apr_int64_t v = 0;
    const char *q;

    if (!s || s[0] == '\0' || (s[0] == '0' && s[1] != '\0')) {
        return -1;
    }
    for (q = s; *q; q++) {
        int d;

        if (!is_digit(*q)) {
            return -1;
        }
        d = *q - '0';
        if (v > (APR_INT64_MAX - d) / 10) {
            return -1;
        }
        v = v * 10 + d;
    }
    if (v < min || v > max) {
        return -1;
    }
    if (out) {
        *out = v;
    }
    return 0;
}

int qrt_valid_account_name(const char *s)
{
    apr_size_t n = 0;

    if (!s) {
        return 0;
    }
    for (; s[n]; n++) {
        if (!apr_isalnum(s[n]) && s[n] != '.' && s[n] != '_' && s[n] != '-') {
            return 0;
        }
    }
    return n >= 1 && n <= 64 && !apr_isdigit(s[0]);
}
