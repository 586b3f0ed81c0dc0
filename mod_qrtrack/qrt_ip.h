/* qrt_ip: canonical text and anonymisation of client IP addresses. */
#ifndef QRT_IP_H
#define QRT_IP_H

#include <apr_pools.h>

/* Anonymise a textual IP (as inet_pton reads it; no zone id, no spaces):
 * IPv4 -> last octet 0 (203.0.113.77 -> 203.0.113.0); IPv6 -> first 48 bits
 * kept, the rest zero, in RFC 5952 text (2001:db8:abcd:12::1 ->
 * 2001:db8:abcd::); IPv4-mapped ::ffff:a.b.c.d and IPv4-compatible
 * ::a.b.c.d are treated as IPv4 and written a.b.c.0; a 6to4 address
 * (2002:AABB:CCDD::/48 holds the IPv4 address AA.BB.CC.DD) also loses the
 * embedded address's last byte (2002:c000:204::1 -> 2002:c000:200::); Teredo
 * and NAT64 keep their client's IPv4 in the bits dropped. NULL or invalid
 * input -> NULL. Result in p. */
const char *qrt_ip_anonymize(apr_pool_t *p, const char *ip);

/* Canonical text of a valid IP: dotted quad for IPv4 and IPv4-mapped IPv6,
 * RFC 5952 for other IPv6 (lowercase, no leading zeros, the longest run of
 * two or more zero groups, the first on a tie, as "::"). NULL if invalid. */
const char *qrt_ip_canonical(apr_pool_t *p, const char *ip);

/* The network a client's guesses count against: an IPv4 address (IPv4-mapped and
 * -compatible IPv6 too) as its dotted quad; other IPv6 as its /64 in RFC 5952 text
 * (2001:db8:1:2:aaaa::1 -> 2001:db8:1:2::), the smallest network one subscriber is given,
 * whose 2^64 addresses would otherwise each get their own count. Text that is no address
 * comes back as it is (NULL as ""). Result in p. */
const char *qrt_ip_guess_key(apr_pool_t *p, const char *ip);

#endif /* QRT_IP_H */
