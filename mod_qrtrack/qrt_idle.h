/* qrt_idle: connections waiting for their next request, each with its own deadline (no
 * database, no httpd).
 *
 * The glue keeps a scan's keep-alive connection in the MPM's "wait for I/O" state
 * rather than its keep-alive queue (mod_qrtrack_keepalive.c says why); the MPM then
 * times it out only at Timeout, so the module ends it itself at its KeepAliveTimeout.
 * This is the list it keeps them in: a node per connection, put on the list with its
 * deadline when the connection starts waiting, taken off when its next request comes
 * (or its pool ends), and expired when the deadline passes. The caller locks. Nodes
 * belong to the caller (a connection's pool). Unit-tested in test/unit/test_idle.c. */
#ifndef QRT_IDLE_H
#define QRT_IDLE_H

#include <apr.h>

typedef struct qrt_idle_node {
    struct qrt_idle_node *prev, *next;
    apr_int64_t deadline;
    int listed;
} qrt_idle_node_t;

typedef struct {
    qrt_idle_node_t head;           /* a ring: head.next is the first node */
    apr_size_t n;
} qrt_idle_t;

typedef void qrt_idle_fn(qrt_idle_node_t *node, void *baton);

void qrt_idle_init(qrt_idle_t *l);

/* Puts node on the list with its deadline (first taken off it, when listed). */
void qrt_idle_add(qrt_idle_t *l, qrt_idle_node_t *node, apr_int64_t deadline);

/* Takes node off the list: 1 when it was on it, 0 otherwise. */
int qrt_idle_remove(qrt_idle_t *l, qrt_idle_node_t *node);

/* Takes off the list every node whose deadline is at or before now and calls fn on
 * each (once off the list: fn may free it). Returns the earliest deadline of the nodes
 * left, or 0 when none is. */
apr_int64_t qrt_idle_expire(qrt_idle_t *l, apr_int64_t now, qrt_idle_fn *fn, void *baton);

/* Takes every node off the list, calling fn on each. */
void qrt_idle_drain(qrt_idle_t *l, qrt_idle_fn *fn, void *baton);

#endif
