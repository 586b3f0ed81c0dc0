/* qrt_ip: see qrt_ip.h.
 *
 * Parsing is inet_pton's. IPv4 is written with inet_ntop; IPv6 is written
 * here by the rules of RFC 5952 because glibc's inet_ntop prints some plain
 * IPv6 addresses in the deprecated IPv4-compatible form (::1:2 as
 * "::0.1.0.2"), which is not canonical. */
#include <string.h>
#include <arpa/inet.h>

#include <apr_strings.h>

#include "qrt_ip.h"

#define V6_TEXT_LEN 40              /* 8 groups of 4 + 7 colons + NUL */

static const char *v4_text(apr_pool_t *p, const unsigned char *a)
{
    char buf[INET_ADDRSTRLEN];

    if (!inet_ntop(AF_INET, a, buf, sizeof(buf))) {
        return NULL;
    }
    return apr_pstrdup(p, buf);
}

static const char *v6_text(apr_pool_t *p, const unsigned char *a)
{
    static const char hex[] = "0123456789abcdef";
    unsigned int g[8];
    int i, best = -1, best_len = 0, run = -1;
    char buf[V6_TEXT_LEN], *o = buf;

    for (i = 0; i < 8; i++) {
        g[i] = ((unsigned int)a[2 * i] << 8) | a[2 * i + 1];
    }
    /* The longest run of zero groups; the first one on a tie. */
    for (i = 0; i <= 8; i++) {
        if (i < 8 && g[i] == 0) {
            if (run < 0) {
                run = i;
            }
        }
        else if (run >= 0) {
            if (i - run > best_len) {
                best = run;
                best_len = i - run;
            }
            run = -1;
        }
    }
    if (best_len < 2) {
        best = -1;                  /* a single zero group stays "0" */
    }
    for (i = 0; i < 8; i++) {
        int shift, started = 0;

        if (i == best) {
            *o++ = ':';
            *o++ = ':';
            i += best_len - 1;
            continue;
        }
        if (i > 0 && i != best + best_len) {
            *o++ = ':';
        }
        for (shift = 12; shift >= 0; shift -= 4) {
            unsigned int nib = (g[i] >> shift) & 0xF;

            if (nib || started || shift == 0) {
                *o++ = hex[nib];
                started = 1;
            }
        }
    }
    *o = '\0';
    return apr_pstrdup(p, buf);
}

static int is_mapped(const unsigned char *a)
{
    static const unsigned char prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0,
                                              0, 0, 0xff, 0xff };

    return memcmp(a, prefix, sizeof(prefix)) == 0;
}

/* Parses ip; returns 4 (a holds IPv4, mapped ones unwrapped), 6 or 0. */
static int parse(const char *ip, unsigned char *a)
{
    unsigned char a6[16];

    if (!ip) {
        return 0;
    }
    if (inet_pton(AF_INET, ip, a) == 1) {
        return 4;
    }
    if (inet_pton(AF_INET6, ip, a6) == 1) {
        if (is_mapped(a6)) {
            memcpy(a, a6 + 12, 4);
            return 4;
        }
        memcpy(a, a6, 16);
        return 6;
    }
    return 0;
}

/* IPv4-compatible IPv6 (::a.b.c.d, deprecated): 96 zero bits, then an IPv4
 * address (not ::1 or the like: its first byte is not 0). */
static int is_compatible(const unsigned char *a)
{
    static const unsigned char zero[12];

    return memcmp(a, zero, sizeof(zero)) == 0 && a[12] != 0;
}

const char *qrt_ip_anonymize(apr_pool_t *p, const char *ip)
{
    unsigned char a[16];

    switch (parse(ip, a)) {
    case 4:
        a[3] = 0;
        return v4_text(p, a);
    case 6:
        if (is_compatible(a)) {
            memmove(a, a + 12, 4);
            a[3] = 0;
            return v4_text(p, a);
        }
        /* 6to4 (2002::/16): the /48 is 2002 and the site's whole IPv4 address:
         * its last byte goes as an IPv4 address's does. Teredo (2001:0::/32)
         * and NAT64 (64:ff9b::/96) carry the client's IPv4 in the last 32 bits,
         * which the /48 drops. */
        if (a[0] == 0x20 && a[1] == 0x02) {
            a[5] = 0;
        }
        memset(a + 6, 0, 10);
        return v6_text(p, a);
    default:
        return NULL;
    }
}

const char *qrt_ip_canonical(apr_pool_t *p, const char *ip)
{
    unsigned char a[16];

    switch (parse(ip, a)) {
    case 4:
        return v4_text(p, a);
    case 6:
        return v6_text(p, a);
    default:
        return NULL;
    }
}

const char *qrt_ip_guess_key(apr_pool_t *p, const char *ip)
{
    unsigned char a[16];

    switch (parse(ip, a)) {
    case 4:
        return v4_text(p, a);
    case 6:
        if (is_compatible(a)) {
            return v4_text(p, a + 12);
        }
        memset(a + 8, 0, 8);
        return v6_text(p, a);
    default:
        return ip ? ip : "";
    }
}
