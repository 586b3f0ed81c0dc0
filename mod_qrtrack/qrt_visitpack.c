/* qrt_visitpack: a visit as bytes in a fixed buffer (the shared-memory queue of
 * visits waiting for their commit, mod_qrtrack_queue.c), and back. */
#include <string.h>
#include <apr_strings.h>
#include "qrt_visitpack.h"

typedef struct {
    char *at, *end;
} pack_buf;

static int pack_bytes(pack_buf *b, const void *v, apr_size_t n)
{
    if ((apr_size_t)(b->end - b->at) < n) {
        return -1;
    }
    memcpy(b->at, v, n);
    b->at += n;
    return 0;
}

/* A string as a 16-bit length (0xFFFF for NULL) and its bytes, cut to max on a
 * UTF-8 character boundary. */
static int pack_str(pack_buf *b, const char *s, apr_size_t max)
{
    apr_uint16_t n = 0xFFFF;
    apr_size_t len = 0;

    if (max > QRT_VISITPACK_STR_MAX) {
        max = QRT_VISITPACK_STR_MAX;
    }
    if (s) {
        len = strlen(s);
        if (len > max) {
            len = max;
            while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80) {
                len--;
            }
        }
        n = (apr_uint16_t)len;
    }
    if (pack_bytes(b, &n, sizeof(n)) != 0) {
        return -1;
    }
    return s ? pack_bytes(b, s, len) : 0;
}

static apr_size_t pack_with(char *buf, apr_size_t size, const qrt_visit_t *v,
                            apr_size_t max)
{
    pack_buf b;
    int rc = 0;

    b.at = buf;
    b.end = buf + size;
    rc |= pack_bytes(&b, &v->tracker_id, sizeof(v->tracker_id));
    rc |= pack_bytes(&b, &v->visit_start, sizeof(v->visit_start));
    rc |= pack_bytes(&b, &v->bot, sizeof(v->bot));
    rc |= pack_bytes(&b, &v->visitor, sizeof(v->visitor));
    rc |= pack_str(&b, v->source, max);
    rc |= pack_str(&b, v->ip, max);
    rc |= pack_str(&b, v->country, max);
    rc |= pack_str(&b, v->city, max);
    rc |= pack_str(&b, v->browser, max);
    rc |= pack_str(&b, v->browser_version, max);
    rc |= pack_str(&b, v->os, max);
    rc |= pack_str(&b, v->device, max);
    rc |= pack_str(&b, v->referer, max);
    rc |= pack_str(&b, v->user_agent, max);
    /* Fields added later (an older spool's visits end before them:
     * qrt_visit_unpack_any reads both). */
    {
        unsigned char capped = (unsigned char)v->capped;

        rc |= pack_bytes(&b, &capped, 1);
        rc |= pack_str(&b, v->destination, max);
        rc |= pack_str(&b, v->over_destination, max);
    }
    return rc ? 0 : (apr_size_t)(b.at - buf);
}

apr_size_t qrt_visit_pack(char *buf, apr_size_t size, const qrt_visit_t *v)
{
    apr_size_t n = pack_with(buf, size, v, QRT_VISITPACK_STR_MAX);

    if (n == 0) {
        /* Too long for the buffer as a whole: every string cut to 255 bytes. */
        n = pack_with(buf, size, v, QRT_VISITPACK_STR_SHORT);
    }
    return n;
}

static int unpack_str(apr_pool_t *p, const char **at, const char *end, const char **out)
{
    apr_uint16_t n;

    if (end - *at < (apr_ssize_t)sizeof(n)) {
        return -1;
    }
    memcpy(&n, *at, sizeof(n));
    *at += sizeof(n);
    if (n == 0xFFFF) {
        *out = NULL;
        return 0;
    }
    /* Only what qrt_visit_pack writes: at most STR_MAX bytes, no NUL inside. */
    if (n > QRT_VISITPACK_STR_MAX || end - *at < (apr_ssize_t)n || memchr(*at, '\0', n)) {
        return -1;
    }
    *out = apr_pstrmemdup(p, *at, n);
    *at += n;
    return 0;
}

static int visit_unpack(apr_pool_t *p, const char *buf, apr_size_t len, qrt_visit_t *v,
                        int legacy)
{
    const char *at = buf, *end = buf + len;
    const apr_size_t fixed = sizeof(v->tracker_id) + sizeof(v->visit_start) + sizeof(v->bot)
                             + sizeof(v->visitor);
    int rc = 0;

    memset(v, 0, sizeof(*v));
    if (len < fixed) {
        return -1;
    }
    memcpy(&v->tracker_id, at, sizeof(v->tracker_id));
    at += sizeof(v->tracker_id);
    memcpy(&v->visit_start, at, sizeof(v->visit_start));
    at += sizeof(v->visit_start);
    memcpy(&v->bot, at, sizeof(v->bot));
    at += sizeof(v->bot);
    memcpy(&v->visitor, at, sizeof(v->visitor));
    at += sizeof(v->visitor);
    rc |= unpack_str(p, &at, end, &v->source);
    rc |= unpack_str(p, &at, end, &v->ip);
    rc |= unpack_str(p, &at, end, &v->country);
    rc |= unpack_str(p, &at, end, &v->city);
    rc |= unpack_str(p, &at, end, &v->browser);
    rc |= unpack_str(p, &at, end, &v->browser_version);
    rc |= unpack_str(p, &at, end, &v->os);
    rc |= unpack_str(p, &at, end, &v->device);
    rc |= unpack_str(p, &at, end, &v->referer);
    rc |= unpack_str(p, &at, end, &v->user_agent);
    if (!rc && !legacy) {
        unsigned char capped;

        if (at == end || (capped = (unsigned char)*at++) > QRT_VISIT_CAP_ASK) {
            return -1;
        }
        v->capped = capped;
        rc |= unpack_str(p, &at, end, &v->destination);
        rc |= unpack_str(p, &at, end, &v->over_destination);
    }
    return rc || at != end ? -1 : 0;
}

int qrt_visit_unpack(apr_pool_t *p, const char *buf, apr_size_t len, qrt_visit_t *v)
{
    return visit_unpack(p, buf, len, v, 0);
}

int qrt_visit_unpack_any(apr_pool_t *p, const char *buf, apr_size_t len, qrt_visit_t *v)
{
    /* The two forms never read as each other: the older ends where the newer goes on. */
    return visit_unpack(p, buf, len, v, 0) == 0 ? 0 : visit_unpack(p, buf, len, v, 1);
}
