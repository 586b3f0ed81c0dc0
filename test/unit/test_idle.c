/* qrt_idle: nodes listed with their deadlines, taken off when their deadline passes (in
 * any order of deadlines), by hand, or all at once. */
#include <check.h>
#include <stdlib.h>

#include "qrt_idle.h"
#include "qrt_check.h"

typedef struct {
    qrt_idle_node_t node;           /* first: the node is the entry */
    int id;
} entry;

typedef struct {
    int ids[16];
    int n;
    int free_them;
} seen;

static void note(qrt_idle_node_t *node, void *baton)
{
    seen *s = baton;
    entry *e = (entry *)node;

    ck_assert(!node->listed);
    ck_assert_int_lt(s->n, 16);
    s->ids[s->n++] = e->id;
    if (s->free_them) {
        free(e);
    }
}

static int saw(const seen *s, int id)
{
    int i;

    for (i = 0; i < s->n; i++) {
        if (s->ids[i] == id) {
            return 1;
        }
    }
    return 0;
}

START_TEST(expires_what_is_due_in_any_order)
{
    qrt_idle_t l;
    entry e[5] = { { .id = 0 }, { .id = 1 }, { .id = 2 }, { .id = 3 }, { .id = 4 } };
    apr_int64_t deadlines[5] = { 500, 100, 300, 100, 900 };
    seen s = { .n = 0 };
    int i;

    qrt_idle_init(&l);
    ck_assert_int_eq(qrt_idle_expire(&l, 1000, note, &s), 0);
    for (i = 0; i < 5; i++) {
        qrt_idle_add(&l, &e[i].node, deadlines[i]);
    }
    ck_assert_uint_eq(l.n, 5);
    /* nothing due yet: the earliest deadline is told */
    ck_assert_int_eq(qrt_idle_expire(&l, 99, note, &s), 100);
    ck_assert_int_eq(s.n, 0);
    /* due at its deadline, not after */
    ck_assert_int_eq(qrt_idle_expire(&l, 100, note, &s), 300);
    ck_assert_int_eq(s.n, 2);
    ck_assert(saw(&s, 1) && saw(&s, 3));
    ck_assert_uint_eq(l.n, 3);
    ck_assert_int_eq(qrt_idle_expire(&l, 600, note, &s), 900);
    ck_assert_int_eq(s.n, 4);
    ck_assert(saw(&s, 0) && saw(&s, 2));
    ck_assert_int_eq(qrt_idle_expire(&l, 900, note, &s), 0);
    ck_assert_int_eq(s.n, 5);
    ck_assert_uint_eq(l.n, 0);
    for (i = 0; i < 5; i++) {
        ck_assert(!e[i].node.listed);
    }
}
END_TEST

START_TEST(removed_nodes_are_not_expired_and_added_again_move)
{
    qrt_idle_t l;
    entry a = { .id = 1 }, b = { .id = 2 }, c = { .id = 3 };
    seen s = { .n = 0 };

    qrt_idle_init(&l);
    ck_assert_int_eq(qrt_idle_remove(&l, &a.node), 0);      /* never listed */
    qrt_idle_add(&l, &a.node, 100);
    qrt_idle_add(&l, &b.node, 200);
    qrt_idle_add(&l, &c.node, 300);
    /* the middle, the first and the last taken off by hand, each once */
    ck_assert_int_eq(qrt_idle_remove(&l, &b.node), 1);
    ck_assert_int_eq(qrt_idle_remove(&l, &b.node), 0);
    ck_assert_uint_eq(l.n, 2);
    /* a node added again keeps only its new deadline, listed once */
    qrt_idle_add(&l, &a.node, 400);
    qrt_idle_add(&l, &a.node, 250);
    ck_assert_uint_eq(l.n, 2);
    ck_assert_int_eq(qrt_idle_expire(&l, 200, note, &s), 250);
    ck_assert_int_eq(s.n, 0);
    ck_assert_int_eq(qrt_idle_expire(&l, 250, note, &s), 300);
    ck_assert_int_eq(s.n, 1);
    ck_assert_int_eq(s.ids[0], 1);
    ck_assert_int_eq(qrt_idle_remove(&l, &c.node), 1);
    ck_assert_uint_eq(l.n, 0);
    ck_assert_int_eq(qrt_idle_expire(&l, 1000, note, &s), 0);
    ck_assert_int_eq(s.n, 1);
    /* the list is usable again once empty */
    qrt_idle_add(&l, &b.node, 10);
    ck_assert_int_eq(qrt_idle_expire(&l, 10, note, &s), 0);
    ck_assert_int_eq(s.ids[1], 2);
}
END_TEST

/* fn may free what it is given (nodes that live in a connection's memory); draining
 * takes every node, due or not. */
START_TEST(fn_may_free_and_drain_takes_all)
{
    qrt_idle_t l;
    seen s = { .n = 0, .free_them = 1 };
    int i;

    qrt_idle_init(&l);
    for (i = 0; i < 6; i++) {
        entry *e = calloc(1, sizeof(*e));

        e->id = i;
        qrt_idle_add(&l, &e->node, i % 2 ? 100 : 1000);
    }
    ck_assert_int_eq(qrt_idle_expire(&l, 100, note, &s), 1000);
    ck_assert_int_eq(s.n, 3);
    ck_assert(saw(&s, 1) && saw(&s, 3) && saw(&s, 5));
    qrt_idle_drain(&l, note, &s);
    ck_assert_int_eq(s.n, 6);
    ck_assert(saw(&s, 0) && saw(&s, 2) && saw(&s, 4));
    ck_assert_uint_eq(l.n, 0);
    ck_assert_int_eq(qrt_idle_expire(&l, 5000, note, &s), 0);
}
END_TEST

static Suite *idle_suite(void)
{
    Suite *s = suite_create("qrt_idle");
    TCase *tc = tcase_create("idle");

    tcase_add_test(tc, expires_what_is_due_in_any_order);
    tcase_add_test(tc, removed_nodes_are_not_expired_and_added_again_move);
    tcase_add_test(tc, fn_may_free_and_drain_takes_all);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(idle_suite());
}
