/* qrt_idle: connections waiting for their next request, each with its own deadline. */
#include "qrt_idle.h"

void qrt_idle_init(qrt_idle_t *l)
{
    l->head.prev = l->head.next = &l->head;
    l->head.listed = 0;
    l->n = 0;
}

int qrt_idle_remove(qrt_idle_t *l, qrt_idle_node_t *node)
{
    if (!node->listed) {
        return 0;
    }
    node->prev->next = node->next;
    node->next->prev = node->prev;
    node->prev = node->next = NULL;
    node->listed = 0;
    l->n--;
    return 1;
}

void qrt_idle_add(qrt_idle_t *l, qrt_idle_node_t *node, apr_int64_t deadline)
{
    qrt_idle_remove(l, node);
    node->deadline = deadline;
    node->prev = l->head.prev;
    node->next = &l->head;
    l->head.prev->next = node;
    l->head.prev = node;
    node->listed = 1;
    l->n++;
}

apr_int64_t qrt_idle_expire(qrt_idle_t *l, apr_int64_t now, qrt_idle_fn *fn, void *baton)
{
    qrt_idle_node_t *node = l->head.next, *next;
    apr_int64_t earliest = 0;

    /* Deadlines differ by the servers' KeepAliveTimeout, so the list is not in their
     * order: every node is looked at (a child's idle connections, a sweep at most every
     * few tens of milliseconds). */
    while (node != &l->head) {
        next = node->next;
        if (node->deadline <= now) {
            qrt_idle_remove(l, node);
            fn(node, baton);
        }
        else if (!earliest || node->deadline < earliest) {
            earliest = node->deadline;
        }
        node = next;
    }
    return earliest;
}

void qrt_idle_drain(qrt_idle_t *l, qrt_idle_fn *fn, void *baton)
{
    qrt_idle_expire(l, APR_INT64_MAX, fn, baton);
}
