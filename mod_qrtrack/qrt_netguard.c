/* qrt_netguard: the addresses a webhook delivery refuses, and QRTrackWebhookAllow. */
#include <string.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <apr_strings.h>
#include <apr_lib.h>

#include "qrt_netguard.h"

/* 1 when the first bits of a and b agree. */
static int prefix_eq(const unsigned char *a, const unsigned char *b, int bits)
{
    int whole = bits / 8, rest = bits % 8;

    if (memcmp(a, b, (size_t)whole) != 0) {
        return 0;
    }
    if (rest) {
        unsigned char mask = (unsigned char)(0xff << (8 - rest));

        return (a[whole] & mask) == (b[whole] & mask);
    }
    return 1;
}

const char *qrt_cidr_list_add(apr_pool_t *p, qrt_cidr_list_t *list, const char *text)
{
    qrt_cidr_t c;
    const char *slash = strchr(text, '/');
    char *host = slash ? apr_pstrndup(p, text, (apr_size_t)(slash - text)) : (char *)text;
    int max, i;

    memset(&c, 0, sizeof(c));
    if (inet_pton(AF_INET, host, c.addr) == 1) {
        c.family = AF_INET;
        max = 32;
    }
    else if (inet_pton(AF_INET6, host, c.addr) == 1) {
        c.family = AF_INET6;
        max = 128;
    }
    else {
        return apr_psprintf(p, "'%s' is not an IPv4 or IPv6 address or CIDR block", text);
    }
    c.bits = max;
    if (slash) {
        const char *d = slash + 1;
        char *end;
        long v;

        if (!*d || strlen(d) > 3 || !apr_isdigit(*d)) {
            return apr_psprintf(p, "'%s': the prefix length is not a number", text);
        }
        v = strtol(d, &end, 10);
        if (*end || v < 0 || v > max) {
            return apr_psprintf(p, "'%s': the prefix length must be 0 to %d", text, max);
        }
        c.bits = (int)v;
    }
    for (i = c.bits; i < max; i++) {
        if (c.addr[i / 8] & (0x80 >> (i % 8))) {
            return apr_psprintf(p, "'%s' has bits set past its prefix length", text);
        }
    }
    if (!list->cidrs) {
        list->cidrs = apr_array_make(p, 4, sizeof(qrt_cidr_t));
    }
    *(qrt_cidr_t *)apr_array_push(list->cidrs) = c;
    return NULL;
}

static int list_match(const qrt_cidr_list_t *list, int family, const unsigned char *a)
{
    int i;

    if (!list || !list->cidrs) {
        return 0;
    }
    for (i = 0; i < list->cidrs->nelts; i++) {
        const qrt_cidr_t *c = &APR_ARRAY_IDX(list->cidrs, i, qrt_cidr_t);

        if (c->family == family && prefix_eq(a, c->addr, c->bits)) {
            return 1;
        }
    }
    return 0;
}

/* The address bytes of sa (4 or 16), or NULL for another family. */
static const unsigned char *sa_bytes(const struct sockaddr *sa, int *family)
{
    *family = sa ? sa->sa_family : AF_UNSPEC;
    if (*family == AF_INET) {
        return (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr;
    }
    if (*family == AF_INET6) {
        return (const unsigned char *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
    }
    return NULL;
}

int qrt_cidr_list_match(const qrt_cidr_list_t *list, const struct sockaddr *sa)
{
    int family;
    const unsigned char *a = sa_bytes(sa, &family);

    return a ? list_match(list, family, a) : 0;
}

typedef struct {
    unsigned char net[16];
    int bits;
} block_t;

/* IPv4 blocks no delivery goes to. */
static const block_t refused4[] = {
    { { 0 }, 8 },                       /* "this network", 0.0.0.0 */
    { { 10 }, 8 },
    { { 100, 64 }, 10 },                /* shared address space (CGNAT) */
    { { 127 }, 8 },
    { { 169, 254 }, 16 },               /* link-local, cloud metadata */
    { { 172, 16 }, 12 },
    { { 192, 0, 0 }, 24 },              /* IETF protocol assignments */
    { { 192, 0, 2 }, 24 },              /* documentation */
    { { 192, 88, 99 }, 24 },            /* 6to4 relay anycast */
    { { 192, 168 }, 16 },
    { { 198, 18 }, 15 },                /* benchmarking */
    { { 198, 51, 100 }, 24 },
    { { 203, 0, 113 }, 24 },
    { { 224 }, 4 },                     /* multicast */
    { { 240 }, 4 },                     /* reserved, 255.255.255.255 broadcast */
};

/* IPv6 blocks refused outright (the forms that carry an IPv4 address are read
 * for it instead). */
static const block_t refused6[] = {
    { { 0x01, 0x00 }, 64 },             /* discard-only 100::/64 */
    { { 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 }, 48 },    /* NAT64 local use */
    { { 0x20, 0x01, 0x0d, 0xb8 }, 32 }, /* documentation */
    { { 0xfc }, 7 },                    /* unique local */
    { { 0xfe, 0x80 }, 10 },             /* link-local */
    { { 0xfe, 0xc0 }, 10 },             /* site-local (deprecated) */
    { { 0xff }, 8 },                    /* multicast */
};

static int in_blocks(const block_t *b, size_t n, const unsigned char *a)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (prefix_eq(a, b[i].net, b[i].bits)) {
            return 1;
        }
    }
    return 0;
}

/* The IPv4 address an IPv6 one carries (mapped, translated, compatible, NAT64,
 * 6to4), into v4; 0 when it carries none. */
static int embedded_v4(const unsigned char *a, unsigned char *v4)
{
    static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
    static const unsigned char translated[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0 };
    static const unsigned char zero[12] = { 0 };
    static const unsigned char nat64[12] = { 0x00, 0x64, 0xff, 0x9b };

    if (!memcmp(a, mapped, 12) || !memcmp(a, translated, 12) || !memcmp(a, zero, 12)
        || !memcmp(a, nat64, 12)) {
        memcpy(v4, a + 12, 4);
        return 1;
    }
    if (a[0] == 0x20 && a[1] == 0x02) {
        memcpy(v4, a + 2, 4);
        return 1;
    }
    return 0;
}

int qrt_netguard_allowed(const struct sockaddr *sa, const qrt_cidr_list_t *allow)
{
    int family;
    const unsigned char *a = sa_bytes(sa, &family);
    unsigned char v4[4];

    if (!a) {
        return 0;
    }
    if (list_match(allow, family, a)) {
        return 1;
    }
    if (family == AF_INET) {
        return !in_blocks(refused4, sizeof(refused4) / sizeof(refused4[0]), a);
    }
    if (embedded_v4(a, v4)) {
        /* ::, ::1 and every other form fall here: judged as the IPv4 they carry
         * (0.0.0.0/8 is refused) */
        if (list_match(allow, AF_INET, v4)) {
            return 1;
        }
        return !in_blocks(refused4, sizeof(refused4) / sizeof(refused4[0]), v4);
    }
    return !in_blocks(refused6, sizeof(refused6) / sizeof(refused6[0]), a);
}
