/* qrt_etag: see qrt_etag.h. */
#include <string.h>

#include <apr_md5.h>
#include <apr_strings.h>

#include "qrt_etag.h"

const char *qrt_etag_make(apr_pool_t *p, const char *seed, apr_size_t len)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char digest[APR_MD5_DIGESTSIZE];
    char *out = apr_palloc(p, 2 + 1 + APR_MD5_DIGESTSIZE * 2 + 1 + 1), *o = out;
    int i;

    apr_md5(digest, seed, len);
    memcpy(o, "W/\"", 3);
    o += 3;
    for (i = 0; i < APR_MD5_DIGESTSIZE; i++) {
        *o++ = hex[digest[i] >> 4];
        *o++ = hex[digest[i] & 15];
    }
    *o++ = '"';
    *o = '\0';
    return out;
}

/* The opaque part of an entity tag at s ("..." after an optional W/), its
 * length in *len; NULL when s does not start with one. *end gets the byte
 * after it. */
static const char *etag_opaque(const char *s, apr_size_t *len, const char **end)
{
    const char *close;

    if (s[0] == 'W' && s[1] == '/') {
        s += 2;
    }
    if (*s != '"') {
        return NULL;
    }
    close = strchr(s + 1, '"');
    if (!close) {
        return NULL;
    }
    *len = (apr_size_t)(close - (s + 1));
    *end = close + 1;
    return s + 1;
}

int qrt_etag_match(const char *header, const char *etag)
{
    const char *mine, *end, *s = header;
    apr_size_t mine_len, len;

    if (!header || !etag) {
        return 0;
    }
    mine = etag_opaque(etag, &mine_len, &end);
    if (!mine) {
        return 0;
    }
    for (;;) {
        const char *theirs;

        while (*s == ' ' || *s == '\t' || *s == ',') {
            s++;
        }
        if (*s == '\0') {
            return 0;
        }
        if (*s == '*') {
            s++;
            while (*s == ' ' || *s == '\t') {
                s++;
            }
            /* "*" must stand alone; "*, ..." is malformed: no match. */
            return *s == '\0';
        }
        theirs = etag_opaque(s, &len, &end);
        if (!theirs) {
            return 0;
        }
        if (len == mine_len && memcmp(theirs, mine, len) == 0) {
            return 1;
        }
        s = end;
        while (*s == ' ' || *s == '\t') {
            s++;
        }
        if (*s != ',' && *s != '\0') {
            return 0;
        }
    }
}
