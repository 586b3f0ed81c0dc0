/* Unit tests for qrt_report_cache: a scope comes back only for its account and
 * version, as it was kept (a copy: the caller's own can go), held by a request after
 * it was replaced or pushed out, the newer of two reads kept, the least recently used
 * account pushed out first, a scope of too many trackers never kept. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>

#include "qrt_report_cache.h"
#include "qrt_check.h"

QRT_CHECK_POOL

/* n trackers (ids from first), each named "<tag>-<id>" with the tags tag and
 * "region:<tag>", in p; dirty names the state's one dirty tag (or NULL). */
static apr_array_header_t *scope(apr_pool_t *p, int first, int n, const char *tag,
                                 const char *dirty, qrt_agg_state_t *st)
{
    apr_array_header_t *live = apr_array_make(p, n, sizeof(qrt_report_tracker_t));
    int i;

    for (i = 0; i < n; i++) {
        qrt_report_tracker_t *t = apr_array_push(live);
        qrt_report_tag_t *g;

        t->id = first + i;
        t->name = apr_psprintf(p, "%s-%d", tag, first + i);
        t->type = "website";
        t->tags = apr_array_make(p, 2, sizeof(qrt_report_tag_t));
        g = apr_array_push(t->tags);
        g->tag = apr_pstrdup(p, tag);
        g->dimension = NULL;
        g->value = NULL;
        g = apr_array_push(t->tags);
        g->tag = apr_psprintf(p, "region:%s", tag);
        g->dimension = "region";
        g->value = apr_pstrdup(p, tag);
    }
    st->deleted = dirty != NULL;
    st->dirty_tags = apr_hash_make(p);
    if (dirty) {
        apr_hash_set(st->dirty_tags, dirty, APR_HASH_KEY_STRING, dirty);
    }
    return live;
}

/* The scope got is the one made by scope(first, n, tag, dirty). */
static void check_scope(const apr_array_header_t *live, const qrt_agg_state_t *st,
                        int first, int n, const char *tag, const char *dirty)
{
    int i;

    ck_assert_int_eq(live->nelts, n);
    for (i = 0; i < n; i++) {
        const qrt_report_tracker_t *t = &APR_ARRAY_IDX(live, i, qrt_report_tracker_t);
        const qrt_report_tag_t *g;
        char name[64];

        snprintf(name, sizeof(name), "%s-%d", tag, first + i);
        ck_assert_int_eq(t->id, first + i);
        ck_assert_str_eq(t->name, name);
        ck_assert_str_eq(t->type, "website");
        ck_assert_int_eq(t->tags->nelts, 2);
        g = &APR_ARRAY_IDX(t->tags, 0, qrt_report_tag_t);
        ck_assert_str_eq(g->tag, tag);
        ck_assert_ptr_null(g->dimension);
        ck_assert_ptr_null(g->value);
        g = &APR_ARRAY_IDX(t->tags, 1, qrt_report_tag_t);
        ck_assert_str_eq(g->dimension, "region");
        ck_assert_str_eq(g->value, tag);
    }
    ck_assert_int_eq(st->deleted, dirty != NULL);
    ck_assert_int_eq(apr_hash_count(st->dirty_tags), dirty ? 1 : 0);
    if (dirty) {
        ck_assert_ptr_nonnull(apr_hash_get(st->dirty_tags, dirty, APR_HASH_KEY_STRING));
    }
}

START_TEST(kept_for_its_account_and_version)
{
    qrt_report_cache_t *c = qrt_report_cache_make(pool, 4, 100);
    apr_pool_t *mine, *req;
    apr_array_header_t *live, *got;
    qrt_agg_state_t st, gst;

    apr_pool_create(&mine, pool);
    apr_pool_create(&req, pool);
    live = scope(mine, 1, 30, "spring", "autumn", &st);
    ck_assert_int_eq(qrt_report_cache_get(c, 7, 3, req, &got, &gst), 0);
    qrt_report_cache_put(c, 7, 3, live, &st);
    /* a copy: the scope read can go */
    apr_pool_destroy(mine);
    ck_assert_int_eq(qrt_report_cache_count(c), 1);
    ck_assert_int_eq(qrt_report_cache_get(c, 7, 3, req, &got, &gst), 1);
    check_scope(got, &gst, 1, 30, "spring", "autumn");
    /* another version, another account: not this one */
    ck_assert_int_eq(qrt_report_cache_get(c, 7, 4, req, &got, &gst), 0);
    ck_assert_int_eq(qrt_report_cache_get(c, 7, 2, req, &got, &gst), 0);
    ck_assert_int_eq(qrt_report_cache_get(c, 8, 3, req, &got, &gst), 0);
    apr_pool_destroy(req);
}
END_TEST

/* A map of the report aggregates' tags: trackers first .. first + n - 1, each with tag
 * and "region:<id % 3>", in p. */
static apr_hash_t *tag_map(apr_pool_t *p, int first, int n, const char *tag, int ntags)
{
    apr_hash_t *map = apr_hash_make(p);
    int i, j;

    for (i = 0; i < n; i++) {
        apr_int64_t *id = apr_palloc(p, sizeof(*id));
        apr_array_header_t *tags = apr_array_make(p, 2, sizeof(const char *));

        *id = first + i;
        APR_ARRAY_PUSH(tags, const char *) = apr_pstrdup(p, tag);
        for (j = 1; j < ntags; j++) {
            APR_ARRAY_PUSH(tags, const char *) = apr_psprintf(p, "region:%d-%d",
                                                              (first + i) % 3, j);
        }
        apr_hash_set(map, id, sizeof(*id), tags);
    }
    return map;
}

static void check_tag_map(apr_hash_t *map, int first, int n, const char *tag, int ntags)
{
    int i, j;

    ck_assert_ptr_nonnull(map);
    ck_assert_int_eq(apr_hash_count(map), n);
    for (i = 0; i < n; i++) {
        apr_int64_t id = first + i;
        apr_array_header_t *tags = apr_hash_get(map, &id, sizeof(id));
        char want[64];

        ck_assert_ptr_nonnull(tags);
        ck_assert_int_eq(tags->nelts, ntags);
        ck_assert_str_eq(APR_ARRAY_IDX(tags, 0, const char *), tag);
        for (j = 1; j < ntags; j++) {
            snprintf(want, sizeof(want), "region:%d-%d", (first + i) % 3, j);
            ck_assert_str_eq(APR_ARRAY_IDX(tags, j, const char *), want);
        }
    }
}

START_TEST(agg_tags_kept_with_their_scope)
{
    qrt_report_cache_t *c = qrt_report_cache_make(pool, 4, 100);
    apr_pool_t *mine, *req, *later;
    apr_array_header_t *got;
    apr_hash_t *map;
    qrt_agg_state_t st, gst;

    apr_pool_create(&mine, pool);
    apr_pool_create(&req, pool);
    apr_pool_create(&later, pool);
    /* no scope kept: no map kept either */
    qrt_report_cache_put_agg_tags(c, 7, 3, tag_map(mine, 1, 10, "spring", 2));
    ck_assert_ptr_null(qrt_report_cache_agg_tags(c, 7, 3, req));
    qrt_report_cache_put(c, 7, 3, scope(pool, 1, 10, "spring", NULL, &st), &st);
    ck_assert_ptr_null(qrt_report_cache_agg_tags(c, 7, 3, req));
    /* kept as a copy, for its version and account alone; a second map does not replace it */
    qrt_report_cache_put_agg_tags(c, 7, 3, tag_map(mine, 1, 10, "spring", 2));
    qrt_report_cache_put_agg_tags(c, 7, 3, tag_map(mine, 1, 4, "autumn", 1));
    apr_pool_destroy(mine);
    map = qrt_report_cache_agg_tags(c, 7, 3, req);
    check_tag_map(map, 1, 10, "spring", 2);
    ck_assert_ptr_null(qrt_report_cache_agg_tags(c, 7, 4, req));
    ck_assert_ptr_null(qrt_report_cache_agg_tags(c, 8, 3, req));
    ck_assert_int_eq(qrt_report_cache_get(c, 7, 3, req, &got, &gst), 1);
    /* a change: the scope at version 4 comes without a map; the request still reads its
     * map of version 3 until its pool goes (the sanitizer build would see a read of
     * freed memory) */
    qrt_report_cache_put(c, 7, 4, scope(pool, 1, 12, "summer", NULL, &st), &st);
    ck_assert_ptr_null(qrt_report_cache_agg_tags(c, 7, 3, later));
    ck_assert_ptr_null(qrt_report_cache_agg_tags(c, 7, 4, later));
    check_tag_map(map, 1, 10, "spring", 2);
    apr_pool_destroy(req);
    /* too many trackers, or a tracker of too many tags: not kept */
    apr_pool_create(&mine, pool);
    qrt_report_cache_put_agg_tags(c, 7, 4, tag_map(mine, 1, 101, "summer", 1));
    ck_assert_ptr_null(qrt_report_cache_agg_tags(c, 7, 4, later));
    qrt_report_cache_put_agg_tags(c, 7, 4, tag_map(mine, 1, 12, "summer", 65));
    ck_assert_ptr_null(qrt_report_cache_agg_tags(c, 7, 4, later));
    qrt_report_cache_put_agg_tags(c, 7, 4, tag_map(mine, 1, 12, "summer", 64));
    apr_pool_destroy(mine);
    check_tag_map(qrt_report_cache_agg_tags(c, 7, 4, later), 1, 12, "summer", 64);
    apr_pool_destroy(later);
}
END_TEST

START_TEST(held_after_it_is_replaced)
{
    qrt_report_cache_t *c = qrt_report_cache_make(pool, 4, 100);
    apr_pool_t *req, *later;
    apr_array_header_t *got, *now;
    qrt_agg_state_t st, gst, nst;

    apr_pool_create(&req, pool);
    apr_pool_create(&later, pool);
    qrt_report_cache_put(c, 7, 3, scope(pool, 1, 10, "spring", NULL, &st), &st);
    ck_assert_int_eq(qrt_report_cache_get(c, 7, 3, req, &got, &gst), 1);
    /* a change: version 4 replaces 3 while a request still reads 3 */
    qrt_report_cache_put(c, 7, 4, scope(pool, 1, 12, "summer", "spring", &st), &st);
    ck_assert_int_eq(qrt_report_cache_count(c), 1);
    ck_assert_int_eq(qrt_report_cache_get(c, 7, 3, later, &now, &nst), 0);
    ck_assert_int_eq(qrt_report_cache_get(c, 7, 4, later, &now, &nst), 1);
    check_scope(now, &nst, 1, 12, "summer", "spring");
    /* the request's scope is intact until its pool goes (the sanitizer build would
     * see a read of freed memory) */
    check_scope(got, &gst, 1, 10, "spring", NULL);
    apr_pool_destroy(req);
    check_scope(now, &nst, 1, 12, "summer", "spring");
    apr_pool_destroy(later);
    /* a read that began before the change is not kept over it */
    qrt_report_cache_put(c, 7, 3, scope(pool, 1, 10, "spring", NULL, &st), &st);
    apr_pool_create(&later, pool);
    ck_assert_int_eq(qrt_report_cache_get(c, 7, 3, later, &now, &nst), 0);
    ck_assert_int_eq(qrt_report_cache_get(c, 7, 4, later, &now, &nst), 1);
    apr_pool_destroy(later);
}
END_TEST

START_TEST(least_recently_used_goes)
{
    qrt_report_cache_t *c = qrt_report_cache_make(pool, 3, 100);
    apr_pool_t *req;
    apr_array_header_t *got;
    qrt_agg_state_t st, gst;
    int a;

    apr_pool_create(&req, pool);
    for (a = 1; a <= 3; a++) {
        qrt_report_cache_put(c, a, 1, scope(pool, a * 100, 5, "t", NULL, &st), &st);
    }
    /* account 1 used again: 2 is now the least recently used */
    ck_assert_int_eq(qrt_report_cache_get(c, 1, 1, req, &got, &gst), 1);
    qrt_report_cache_put(c, 4, 1, scope(pool, 400, 5, "t", NULL, &st), &st);
    ck_assert_int_eq(qrt_report_cache_count(c), 3);
    ck_assert_int_eq(qrt_report_cache_get(c, 2, 1, req, &got, &gst), 0);
    for (a = 1; a <= 4; a++) {
        if (a != 2) {
            ck_assert_int_eq(qrt_report_cache_get(c, a, 1, req, &got, &gst), 1);
            check_scope(got, &gst, a * 100, 5, "t", NULL);
        }
    }
    apr_pool_destroy(req);
}
END_TEST

START_TEST(too_many_trackers_not_kept)
{
    qrt_report_cache_t *c = qrt_report_cache_make(pool, 3, 100);
    apr_pool_t *req;
    apr_array_header_t *got;
    qrt_agg_state_t st, gst;

    apr_pool_create(&req, pool);
    qrt_report_cache_put(c, 1, 1, scope(pool, 1, 101, "t", NULL, &st), &st);
    ck_assert_int_eq(qrt_report_cache_count(c), 0);
    qrt_report_cache_put(c, 1, 1, scope(pool, 1, 100, "t", NULL, &st), &st);
    ck_assert_int_eq(qrt_report_cache_get(c, 1, 1, req, &got, &gst), 1);
    check_scope(got, &gst, 1, 100, "t", NULL);
    /* an account without trackers has a scope too */
    qrt_report_cache_put(c, 2, 5, scope(pool, 1, 0, "t", NULL, &st), &st);
    ck_assert_int_eq(qrt_report_cache_get(c, 2, 5, req, &got, &gst), 1);
    ck_assert_int_eq(got->nelts, 0);
    /* no cache: nothing kept, nothing found */
    qrt_report_cache_put(NULL, 1, 1, got, &gst);
    ck_assert_int_eq(qrt_report_cache_get(NULL, 1, 1, req, &got, &gst), 0);
    apr_pool_destroy(req);
}
END_TEST

START_TEST(freed_with_its_pool_while_held)
{
    apr_pool_t *cp, *req;
    qrt_report_cache_t *c;
    apr_array_header_t *got;
    qrt_agg_state_t st, gst;

    /* the child's pool goes after its requests' (httpd's order): nothing leaks, as the
     * sanitizer build checks */
    apr_pool_create(&cp, pool);
    c = qrt_report_cache_make(cp, 2, 100);
    qrt_report_cache_put(c, 1, 1, scope(pool, 1, 3, "t", NULL, &st), &st);
    qrt_report_cache_put(c, 2, 1, scope(pool, 1, 3, "t", NULL, &st), &st);
    apr_pool_create(&req, cp);
    ck_assert_int_eq(qrt_report_cache_get(c, 1, 1, req, &got, &gst), 1);
    apr_pool_destroy(cp);
}
END_TEST

static Suite *report_cache_suite(void)
{
    Suite *s = suite_create("qrt_report_cache");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, kept_for_its_account_and_version);
    tcase_add_test(tc, held_after_it_is_replaced);
    tcase_add_test(tc, agg_tags_kept_with_their_scope);
    tcase_add_test(tc, least_recently_used_goes);
    tcase_add_test(tc, too_many_trackers_not_kept);
    tcase_add_test(tc, freed_with_its_pool_while_held);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(report_cache_suite());
}
