/* qrt_poolkeep: a pool made under a request's pool takes a kept allocator, which the next
 * such pool takes over with the memory the first freed, up to its bound; past the kept
 * number a pool has an allocator of its own; unused ones are released. */
#include <check.h>
#include <pthread.h>
#include <string.h>
#include <apr_allocator.h>
#include <apr_general.h>

#include "qrt_poolkeep.h"
#include "qrt_clock.h"
#include "qrt_check.h"

#define MB ((apr_size_t)1 << 20)

static apr_pool_t *root(void)
{
    apr_pool_t *p;

    ck_assert_int_eq(apr_pool_create(&p, NULL), APR_SUCCESS);
    return p;
}

/* A report's pool under a request's (parent): n bytes allocated in it and filled with c;
 * the block, and the pool's allocator in *a. */
static unsigned char *fill(qrt_poolkeep_t *k, apr_pool_t *parent, apr_size_t n, int c,
                           apr_allocator_t **a)
{
    apr_pool_t *p = qrt_poolkeep_pool(k, parent);
    unsigned char *b;

    ck_assert_ptr_nonnull(p);
    *a = apr_pool_allocator_get(p);
    b = apr_palloc(p, n);
    memset(b, c, n);
    return b;
}

START_TEST(the_next_pool_takes_the_memory_the_last_freed)
{
    apr_pool_t *top = root(), *r1, *r2;
    qrt_poolkeep_t *k = qrt_poolkeep_make(top, 2, 8 * MB);
    apr_allocator_t *a1, *a2;
    unsigned char *b1, *b2;

    ck_assert_int_eq(apr_pool_create(&r1, top), APR_SUCCESS);
    b1 = fill(k, r1, 2 * MB, 0x5a, &a1);
    ck_assert_ptr_ne(a1, apr_pool_allocator_get(r1));
    ck_assert_int_eq(qrt_poolkeep_idle(k), 0);
    apr_pool_destroy(r1);
    ck_assert_int_eq(qrt_poolkeep_idle(k), 1);
    /* the same allocator, and its block still mapped with what the first pool wrote:
     * not handed back to the system and mapped afresh (which would read zeros) */
    ck_assert_int_eq(apr_pool_create(&r2, top), APR_SUCCESS);
    {
        apr_pool_t *p = qrt_poolkeep_pool(k, r2);

        a2 = apr_pool_allocator_get(p);
        b2 = apr_palloc(p, 2 * MB);
    }
    ck_assert_ptr_eq(a2, a1);
    ck_assert_ptr_eq(b2, b1);
    ck_assert_int_eq(b2[0], 0x5a);
    ck_assert_int_eq(b2[2 * MB - 1], 0x5a);
    ck_assert_int_eq(qrt_poolkeep_idle(k), 0);
    apr_pool_destroy(r2);
    ck_assert_int_eq(qrt_poolkeep_idle(k), 1);
    apr_pool_destroy(top);
}
END_TEST

START_TEST(what_passes_the_bound_goes_back_to_the_system)
{
    apr_pool_t *top = root(), *r;
    qrt_poolkeep_t *k = qrt_poolkeep_make(top, 1, 1 * MB);
    apr_allocator_t *a1, *a2;
    apr_pool_t *p;
    unsigned char *b;

    ck_assert_int_eq(apr_pool_create(&r, top), APR_SUCCESS);
    (void)fill(k, r, 4 * MB, 0x77, &a1);
    apr_pool_destroy(r);
    ck_assert_int_eq(apr_pool_create(&r, top), APR_SUCCESS);
    p = qrt_poolkeep_pool(k, r);
    a2 = apr_pool_allocator_get(p);
    ck_assert_ptr_eq(a2, a1);
    /* the 4 MB block, past the 1 MB kept, was unmapped: a new one reads zeros */
    b = apr_palloc(p, 4 * MB);
    ck_assert_int_eq(b[0], 0);
    ck_assert_int_eq(b[4 * MB - 1], 0);
    apr_pool_destroy(top);
}
END_TEST

START_TEST(pools_at_once_past_the_kept_number_have_their_own)
{
    apr_pool_t *top = root(), *r1, *r2, *r3;
    qrt_poolkeep_t *k = qrt_poolkeep_make(top, 2, 8 * MB);
    apr_allocator_t *a1, *a2, *a3;

    ck_assert_int_eq(apr_pool_create(&r1, top), APR_SUCCESS);
    ck_assert_int_eq(apr_pool_create(&r2, top), APR_SUCCESS);
    ck_assert_int_eq(apr_pool_create(&r3, top), APR_SUCCESS);
    (void)fill(k, r1, 1000, 1, &a1);
    (void)fill(k, r2, 1000, 2, &a2);
    (void)fill(k, r3, 1000, 3, &a3);
    ck_assert_ptr_ne(a1, a2);
    ck_assert_ptr_ne(a1, a3);
    ck_assert_ptr_ne(a2, a3);
    apr_pool_destroy(r1);
    apr_pool_destroy(r2);
    apr_pool_destroy(r3);
    /* two kept, the third destroyed */
    ck_assert_int_eq(qrt_poolkeep_idle(k), 2);
    apr_pool_destroy(top);
}
END_TEST

START_TEST(a_pool_destroyed_first_or_a_parent_cleared_gives_it_back)
{
    apr_pool_t *top = root(), *r, *p;
    qrt_poolkeep_t *k = qrt_poolkeep_make(top, 1, 8 * MB);

    ck_assert_int_eq(apr_pool_create(&r, top), APR_SUCCESS);
    p = qrt_poolkeep_pool(k, r);
    ck_assert_ptr_nonnull(apr_palloc(p, 100000));
    apr_pool_destroy(p);
    /* (not back while the request lives: the parent's cleanup puts it back) */
    ck_assert_int_eq(qrt_poolkeep_idle(k), 0);
    apr_pool_clear(r);
    ck_assert_int_eq(qrt_poolkeep_idle(k), 1);
    p = qrt_poolkeep_pool(k, r);
    ck_assert_int_eq(qrt_poolkeep_idle(k), 0);
    apr_pool_clear(r);
    ck_assert_int_eq(qrt_poolkeep_idle(k), 1);
    apr_pool_destroy(top);
}
END_TEST

START_TEST(unused_ones_are_released)
{
    apr_pool_t *top = root(), *r;
    qrt_poolkeep_t *k = qrt_poolkeep_make(top, 2, 8 * MB);
    apr_allocator_t *a1, *a2;
    apr_time_t now;

    ck_assert_int_eq(apr_pool_create(&r, top), APR_SUCCESS);
    (void)fill(k, r, MB, 9, &a1);
    apr_pool_destroy(r);
    now = qrt_clock_now();
    ck_assert_int_eq(qrt_poolkeep_release(k, now, apr_time_from_sec(10)), 0);
    ck_assert_int_eq(qrt_poolkeep_idle(k), 1);
    ck_assert_int_eq(qrt_poolkeep_release(k, now + apr_time_from_sec(11),
                                          apr_time_from_sec(10)), 1);
    ck_assert_int_eq(qrt_poolkeep_idle(k), 0);
    /* the next pool gets a new one, kept in turn */
    ck_assert_int_eq(apr_pool_create(&r, top), APR_SUCCESS);
    (void)fill(k, r, MB, 9, &a2);
    apr_pool_destroy(r);
    ck_assert_int_eq(qrt_poolkeep_idle(k), 1);
    ck_assert_int_eq(qrt_poolkeep_release(NULL, now, 0), 0);
    apr_pool_destroy(top);
}
END_TEST

START_TEST(none_kept_is_a_plain_subpool)
{
    apr_pool_t *top = root(), *r, *p;

    ck_assert_int_eq(apr_pool_create(&r, top), APR_SUCCESS);
    p = qrt_poolkeep_pool(NULL, r);
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_eq(apr_pool_allocator_get(p), apr_pool_allocator_get(r));
    apr_pool_destroy(top);
}
END_TEST

/* Requests on several threads at once, and a releaser: each pool's memory is its own
 * while it lives (what one wrote is there at its end), and at most the kept number
 * wait after. */
typedef struct {
    qrt_poolkeep_t *k;
    apr_pool_t *top;
    int id;
    int bad;
} racer;

static pthread_mutex_t top_mu = PTHREAD_MUTEX_INITIALIZER;

static void *race(void *data)
{
    racer *x = data;
    int i;

    for (i = 0; i < 2000; i++) {
        apr_pool_t *r, *p;
        unsigned char *b;
        apr_size_t n = 1000 + (apr_size_t)((i * 7919 + x->id * 104729) % 300000);
        apr_size_t j;

        /* (the parent pool's own allocator has no lock: the threads make their
         * request pools under it in turn) */
        pthread_mutex_lock(&top_mu);
        apr_pool_create(&r, x->top);
        pthread_mutex_unlock(&top_mu);
        p = qrt_poolkeep_pool(x->k, r);
        b = apr_palloc(p, n);
        memset(b, x->id, n);
        for (j = 0; j < n; j += 4096) {
            x->bad += b[j] != x->id;
        }
        x->bad += b[n - 1] != x->id;
        pthread_mutex_lock(&top_mu);
        apr_pool_destroy(r);
        pthread_mutex_unlock(&top_mu);
        if (x->id == 1 && i % 50 == 0) {
            qrt_poolkeep_release(x->k, qrt_clock_now(), 0);
        }
    }
    return NULL;
}

START_TEST(requests_on_threads_at_once)
{
    apr_pool_t *top = root();
    qrt_poolkeep_t *k = qrt_poolkeep_make(top, 2, 4 * MB);
    pthread_t t[4];
    racer x[4];
    int i;

    for (i = 0; i < 4; i++) {
        x[i] = (racer){ .k = k, .top = top, .id = i + 1 };
        ck_assert_int_eq(pthread_create(&t[i], NULL, race, &x[i]), 0);
    }
    for (i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(x[i].bad, 0);
    }
    ck_assert_int_le(qrt_poolkeep_idle(k), 2);
    apr_pool_destroy(top);
}
END_TEST

static Suite *poolkeep_suite(void)
{
    Suite *s = suite_create("qrt_poolkeep");
    TCase *tc = tcase_create("poolkeep");

    tcase_add_test(tc, the_next_pool_takes_the_memory_the_last_freed);
    tcase_add_test(tc, what_passes_the_bound_goes_back_to_the_system);
    tcase_add_test(tc, pools_at_once_past_the_kept_number_have_their_own);
    tcase_add_test(tc, a_pool_destroyed_first_or_a_parent_cleared_gives_it_back);
    tcase_add_test(tc, unused_ones_are_released);
    tcase_add_test(tc, none_kept_is_a_plain_subpool);
    tcase_add_test(tc, requests_on_threads_at_once);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(poolkeep_suite());
}
