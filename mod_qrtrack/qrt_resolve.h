/* qrt_resolve: the database server's address, found within a bound of time.
 *
 * libpq looks a host name up (getaddrinfo) each time it opens a connection, and no
 * timeout of its own covers the lookup: a DNS server that stops answering holds every
 * connection being opened for the resolver's timeouts (5 s a try, two tries a
 * nameserver by default). A graceful restart while DNS did not answer kept every scan
 * unanswered for some 40 s that way: the parent's check of the database, mod_dbd's
 * connection as each child starts, then each child's writer, each waited the lookup out.
 *
 * Here a name is looked up aside (a thread in a child, a process in httpd's parent, which
 * unloads the module at a restart: no thread of its may outlive it), waited for a bound of
 * time, and the address is given to libpq as `hostaddr` (its `host` stays for
 * authentication and TLS). When no answer comes in time or the resolver fails for now,
 * the last address found is used; an address that changes in DNS (a failover that moves
 * the name) is followed at the next connection after the lookup answers. */
#ifndef QRT_RESOLVE_H
#define QRT_RESOLVE_H

#include <apr_pools.h>
#include <apr_time.h>

/* A name's addresses, numeric, comma-separated in the order the resolver gave them (at
 * most QRT_ADDRS of them: libpq tries them in turn, as it tries a name's), and the end. */
#define QRT_ADDRS    8
#define QRT_ADDR_MAX (QRT_ADDRS * 47)

/* The host name to look up in libpq's connection string params (key=value pairs), or
 * NULL where libpq needs no lookup or there is nothing to do: no host (a Unix socket),
 * a socket directory, an address already, several hosts, hostaddr given, a URI. */
const char *qrt_resolve_pg_host(apr_pool_t *p, const char *params);

/* params with the host's addresses as hostaddr (host repeated for each: libpq's lists,
 * which the later keywords make win). */
const char *qrt_resolve_pg_params(apr_pool_t *p, const char *params, const char *host,
                                  const char *addr);

/* params with connect_timeout=seconds added, unless they give a connect_timeout (or are
 * a URI, or not a connection string libpq reads): as they are then. */
const char *qrt_resolve_pg_connect_within(apr_pool_t *p, const char *params, int seconds);

/* Whether addr is a list of addresses as above. */
int qrt_resolve_addrs_valid(const char *addr);

/* How a name is looked up: 0 and its addresses in out (as above), or a getaddrinfo
 * EAI_* code. The default is getaddrinfo's; tests give their own. */
typedef int (*qrt_lookup_fn)(const char *host, char out[QRT_ADDR_MAX]);

/* Whether an EAI_* code says that the name has no address (as opposed to a resolver
 * that failed for now, whose last answer still stands). */
int qrt_resolve_is_final(int code);

/* A process's lookups of one host: at most one in flight (a thread), whose answer, even
 * when it comes after its waiter gave up, is kept for the next. Made with malloc: it
 * lives as long as the process (a lookup thread may outlive any pool). */
typedef struct qrt_resolver_t qrt_resolver_t;

/* known: an address found before (a parent's, copied into its child), or NULL. */
qrt_resolver_t *qrt_resolver_make(const char *host, const char *known, qrt_lookup_fn fn);

/* The address of host: a lookup's answer within wait (one found in the last `fresh` is
 * taken without another), else the last address found. 1 and addr: answered now; 0 and
 * addr: the last address found, as none came in time (*why says what happened); -1: no
 * address (*why). */
int qrt_resolve(qrt_resolver_t *r, apr_interval_time_t wait, apr_interval_time_t fresh,
                char addr[QRT_ADDR_MAX], const char **why);

/* The last address found, "" if none (read without waiting). */
void qrt_resolver_known(qrt_resolver_t *r, char addr[QRT_ADDR_MAX]);

/* One lookup in a process of its own (a grandchild, so that no child is left for the
 * caller to reap), waited for wait at most: for a process that must not leave a thread
 * behind (httpd's parent). 0 and addr, an EAI_* code, or EAI_AGAIN when no answer came
 * in time. */
int qrt_resolve_aside(const char *host, apr_interval_time_t wait, qrt_lookup_fn fn,
                      char addr[QRT_ADDR_MAX]);

/* getaddrinfo's lookup (TCP addresses of any family, each once). */
int qrt_lookup_system(const char *host, char out[QRT_ADDR_MAX]);

#endif
