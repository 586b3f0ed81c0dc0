/* qrt_netguard: which addresses a webhook delivery may connect to.
 *
 * A webhook's URL is the customer's, its host name resolved at every delivery: a
 * name that points (or is re-pointed, DNS rebinding) at this server's own networks
 * must not reach them. The delivery checks the address of every connection it opens
 * (after resolution, before connect) with qrt_netguard_allowed. */
#ifndef QRT_NETGUARD_H
#define QRT_NETGUARD_H

#include <sys/socket.h>
#include <apr_pools.h>
#include <apr_tables.h>

/* One CIDR block: family AF_INET or AF_INET6, the network's bytes, the prefix. */
typedef struct {
    int family;
    unsigned char addr[16];
    int bits;
} qrt_cidr_t;

/* QRTrackWebhookAllow's blocks (qrt_cidr_t), in the order given. */
typedef struct {
    apr_array_header_t *cidrs;
} qrt_cidr_list_t;

/* Adds text ("192.0.2.0/24", "2001:db8::/32", or an address alone: /32, /128) to
 * list (made in p on first use). NULL, or why text is not a block (bits set past the
 * prefix are an error: "10.1.2.3/8" is refused, to catch typos). */
const char *qrt_cidr_list_add(apr_pool_t *p, qrt_cidr_list_t *list, const char *text);

/* 1 when sa (AF_INET or AF_INET6) lies in one of list's blocks. */
int qrt_cidr_list_match(const qrt_cidr_list_t *list, const struct sockaddr *sa);

/* 1 when a delivery may connect to sa: a public address, or one in allow (may be
 * NULL). Refused (0): anything but IPv4 and IPv6; unspecified (0.0.0.0/8, ::),
 * loopback (127/8, ::1), private (10/8, 172.16/12, 192.168/16, fc00::/7), shared
 * address space (CGNAT, 100.64/10), link-local (169.254/16 with the cloud metadata
 * address 169.254.169.254, fe80::/10, fec0::/10), multicast (224/4, ff00::/8),
 * reserved and broadcast (240/4), the IETF's, documentation and benchmarking blocks
 * (192.0.0/24, 192.0.2/24, 198.18/15, 198.51.100/24, 203.0.113/24, 2001:db8::/32,
 * 100::/64), NAT64's local-use prefix (64:ff9b:1::/48); and an IPv4 address so
 * refused written as IPv6: IPv4-mapped (::ffff:0:0/96), IPv4-translated
 * (::ffff:0:0:0/96), IPv4-compatible (::/96), NAT64 (64:ff9b::/96) and 6to4
 * (2002::/16). allow is matched against the address as given and against the IPv4
 * address it carries. */
int qrt_netguard_allowed(const struct sockaddr *sa, const qrt_cidr_list_t *allow);

#endif
