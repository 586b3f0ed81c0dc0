/* qrt_poolkeep: allocators kept from one request's work to the next (no database, no
 * httpd).
 *
 * A request's pool takes its memory from its connection's allocator, which keeps at most
 * MaxMemFree of what the request freed (2 MB by default) and hands the rest back to the
 * system as the request ends; Debian's APR maps each of its blocks on its own, so the next
 * request that needs as much maps, faults in and unmaps them all again (a report over a
 * long list builds some thousands of blocks; on a virtual machine each unmap interrupts
 * the other core to flush its TLB). A pool made here under the request's pool takes its
 * memory from one of a few allocators kept by the process instead, each of which keeps up
 * to a bound of what its last user freed: the next request finds its blocks mapped. An
 * allocator left unused for a while is handed back (qrt_poolkeep_release).
 *
 * An allocator serves one pool at a time (it has no lock): it is taken while the pool
 * lives and put back once the pool and its subpools are destroyed. When every kept one is
 * in use, the pool gets an allocator of its own, destroyed with it. Unit-tested in
 * test/unit/test_poolkeep.c. */
#ifndef QRT_POOLKEEP_H
#define QRT_POOLKEEP_H

#include <apr_pools.h>
#include <apr_time.h>

typedef struct qrt_poolkeep qrt_poolkeep_t;

/* At most n allocators (up to 16) kept, each keeping up to keep bytes of freed memory;
 * made in p, whose end destroys the ones kept. */
qrt_poolkeep_t *qrt_poolkeep_make(apr_pool_t *p, int n, apr_size_t keep);
/* A pool under parent (destroyed with it, or before) whose memory comes from a kept
 * allocator; NULL when no allocator can be made. With k NULL, a plain subpool. */
apr_pool_t *qrt_poolkeep_pool(qrt_poolkeep_t *k, apr_pool_t *parent);
/* Destroys the kept allocators (and the memory they keep) not used since before
 * now - idle; the number destroyed. */
int qrt_poolkeep_release(qrt_poolkeep_t *k, apr_time_t now, apr_time_t idle);
/* Allocators kept now, waiting for a pool (tests). */
int qrt_poolkeep_idle(qrt_poolkeep_t *k);

#endif
