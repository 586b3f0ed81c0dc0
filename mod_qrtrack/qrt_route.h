/* qrt_route: what a scan of a tracker does (CONTRACT section 7, "Redirect rules and
 * validity"): the tracker's destination, its rules, validity window, scan cap and
 * password gate, compiled into one block that the scan path's cache copies with
 * malloc and memcpy and decides from in place. */
#ifndef QRT_ROUTE_H
#define QRT_ROUTE_H

#include <apr_pools.h>
#include "qrt_rules.h"
#include "qrt_store.h"

/* Whether any field is set (a tracker without any redirects as it always did). */
int qrt_route_src_any(const qrt_route_src_t *s);

typedef struct qrt_route qrt_route_t;

/* Compiles tracker id's routing: the block (allocated in p) and its size. NULL, or a
 * message when the stored rules do not parse (then *out is NULL). */
const char *qrt_route_build(apr_pool_t *p, apr_int64_t id, const char *url,
                            const qrt_route_src_t *src, const qrt_route_t **out,
                            apr_size_t *size);
apr_int64_t qrt_route_id(const qrt_route_t *r);

typedef enum {
    QRT_ROUTE_GO,                   /* redirect to url */
    QRT_ROUTE_EXPIRED               /* outside the validity window: url is expired_url
                                     * or NULL (410) */
} qrt_route_verdict_t;

/* The decision for one visit, its strings copied into the caller's pool. */
typedef struct {
    apr_int64_t id;
    qrt_route_verdict_t verdict;
    const char *url;
    const char *expired_url;        /* where a scan over the cap goes (NULL: 410) */
    const char *password_hash;      /* the gate, NULL: none */
    int capped;                     /* max_scans is set: the scan writer decides */
} qrt_route_decision_t;

/* Decides for the visit described by f at f->now: validity first, then the rules
 * (first match wins), else the tracker's own destination. Copies into p only the
 * strings of the decision (no allocation that grows with the rule count). */
void qrt_route_decide(apr_pool_t *p, const qrt_route_t *r, const qrt_rule_facts_t *f,
                      qrt_route_decision_t *out);

/* The routing fields as one JSON text (a node's snapshot keeps it), NULL when none is
 * set; and back (0, or -1 when text is not what qrt_route_src_encode wrote). */
const char *qrt_route_src_encode(apr_pool_t *p, const qrt_route_src_t *s);
int qrt_route_src_decode(apr_pool_t *p, const char *text, qrt_route_src_t *s);

#endif /* QRT_ROUTE_H */
