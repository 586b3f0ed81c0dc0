/* Unit tests for qrt_aggcache: a value comes back only for its key and seal, as it was
 * kept (a copy), held by a reader after it was replaced or pushed out, the least
 * recently used value pushed out first, a value too long never kept, seals never 0
 * and different for different texts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>

#include "qrt_aggcache.h"
#include "qrt_check.h"

QRT_CHECK_POOL

static qrt_aggcache_key_t key(apr_int64_t account, int level, apr_int64_t bucket, int kind)
{
    qrt_aggcache_key_t k;

    k.account = account;
    k.level = level;
    k.bucket = bucket;
    k.kind = kind;
    return k;
}

static void put(qrt_aggcache_t *c, qrt_aggcache_key_t k, const char *text)
{
    qrt_aggcache_put(c, &k, qrt_aggcache_seal(text, strlen(text)), text, strlen(text));
}

/* The text kept for k under text's seal, or NULL (released at once). */
static int kept(qrt_aggcache_t *c, qrt_aggcache_key_t k, const char *text)
{
    qrt_aggcache_ent_t *e;
    const char *got = qrt_aggcache_get(c, &k, qrt_aggcache_seal(text, strlen(text)), &e);
    int same = got && !strcmp(got, text);

    ck_assert(!got || same);
    qrt_aggcache_release(c, e);
    return same;
}

START_TEST(kept_for_its_key_and_seal)
{
    qrt_aggcache_t *c = qrt_aggcache_make(pool, 1 << 20);
    char buf[16];
    qrt_aggcache_ent_t *e;
    qrt_aggcache_key_t k5 = key(1, 5, 1, 10);
    int n;
    apr_size_t bytes;

    strcpy(buf, "L3abc");
    put(c, key(1, 1, 20000, 10), buf);
    strcpy(buf, "gone");            /* a copy was kept */
    ck_assert(kept(c, key(1, 1, 20000, 10), "L3abc"));
    ck_assert(!kept(c, key(1, 1, 20000, 10), "L3abd"));    /* another seal */
    ck_assert(!kept(c, key(2, 1, 20000, 10), "L3abc"));
    ck_assert(!kept(c, key(1, 2, 20000, 10), "L3abc"));
    ck_assert(!kept(c, key(1, 1, 20001, 10), "L3abc"));
    ck_assert(!kept(c, key(1, 1, 20000, 11), "L3abc"));
    /* seal 0 (not known) is never kept nor found */
    qrt_aggcache_put(c, &k5, 0, "x", 1);
    ck_assert_ptr_null(qrt_aggcache_get(c, &k5, 0, &e));
    ck_assert_ptr_null(e);
    qrt_aggcache_usage(c, &n, &bytes);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq((int)bytes, 5);
    /* a replacement under another seal */
    put(c, key(1, 1, 20000, 10), "L3xyz!");
    ck_assert(!kept(c, key(1, 1, 20000, 10), "L3abc"));
    ck_assert(kept(c, key(1, 1, 20000, 10), "L3xyz!"));
    qrt_aggcache_usage(c, &n, &bytes);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq((int)bytes, 6);
}
END_TEST

START_TEST(held_after_it_is_replaced)
{
    qrt_aggcache_t *c = qrt_aggcache_make(pool, 1 << 20);
    qrt_aggcache_key_t k = key(7, 1, 3, 10);
    qrt_aggcache_ent_t *e, *e2;
    const char *got;

    put(c, k, "first");
    got = qrt_aggcache_get(c, &k, qrt_aggcache_seal("first", 5), &e);
    ck_assert_str_eq(got, "first");
    put(c, k, "second");
    ck_assert_str_eq(got, "first");     /* still the reader's */
    ck_assert(kept(c, k, "second"));
    got = qrt_aggcache_get(c, &k, qrt_aggcache_seal("second", 6), &e2);
    qrt_aggcache_release(c, e);
    ck_assert_str_eq(got, "second");
    qrt_aggcache_release(c, e2);
    qrt_aggcache_release(c, NULL);      /* nothing held: nothing to do */
}
END_TEST

/* qrt_aggcache_put_held: the copy kept, held by the caller through its replacement and
 * its being pushed out (the cache full of others), freed at its release (ASan: no leak,
 * no use after free); a value too long for the cache is neither kept nor held. */
START_TEST(put_and_held)
{
    qrt_aggcache_t *c = qrt_aggcache_make(pool, 64);
    qrt_aggcache_key_t k = key(3, 1, 9, 10);
    qrt_aggcache_ent_t *e = NULL, *e2 = NULL;
    char buf[8];
    const char *got;
    int i, n;
    apr_size_t bytes;

    strcpy(buf, "block");
    got = qrt_aggcache_put_held(c, &k, qrt_aggcache_seal(buf, 5), buf, 5, &e);
    ck_assert_ptr_nonnull(e);
    ck_assert_ptr_ne(got, buf);                 /* the cache's copy */
    strcpy(buf, "gone!");
    ck_assert_str_eq(got, "block");
    ck_assert(kept(c, k, "block"));
    put(c, k, "other");                         /* replaced */
    for (i = 0; i < 20; i++) {                  /* and the cache filled with others */
        put(c, key(4, 1, i, 10), "xxxxxxx");
    }
    ck_assert(!kept(c, k, "block"));
    ck_assert_str_eq(got, "block");             /* still the holder's */
    qrt_aggcache_usage(c, &n, &bytes);
    ck_assert_uint_le(bytes, 64);
    qrt_aggcache_release(c, e);
    /* too long (more than an eighth of the cache): not kept, nothing held */
    ck_assert_ptr_null(qrt_aggcache_put_held(c, &k, 1, "0123456789", 10, &e2));
    ck_assert_ptr_null(e2);
    ck_assert(!kept(c, k, "0123456789"));
    ck_assert_uint_eq(qrt_aggcache_max_bytes(c), 64);
}
END_TEST

START_TEST(least_recently_used_goes)
{
    /* 100 bytes kept at most: values of 10 bytes (at most an eighth each) */
    qrt_aggcache_t *c = qrt_aggcache_make(pool, 100);
    qrt_aggcache_ent_t *e;
    qrt_aggcache_key_t k1 = key(1, 1, 1, 10), k2 = key(1, 1, 2, 10);
    const char *held;
    char text[16];
    int i, n;
    apr_size_t bytes;

    for (i = 0; i < 10; i++) {
        snprintf(text, sizeof(text), "value-%04d", i);
        put(c, key(1, 1, i, 10), text);
    }
    ck_assert(kept(c, key(1, 1, 0, 10), "value-0000"));     /* 0, 1, 2 used: 3 goes next */
    /* held while pushed out: still readable, freed on release */
    ck_assert_ptr_nonnull(qrt_aggcache_get(c, &k1, qrt_aggcache_seal("value-0001", 10), &e));
    qrt_aggcache_release(c, e);
    held = qrt_aggcache_get(c, &k2, qrt_aggcache_seal("value-0002", 10), &e);
    ck_assert_ptr_nonnull(held);
    put(c, key(1, 1, 10, 10), "value-0010");
    put(c, key(1, 1, 11, 10), "value-0011");
    put(c, key(1, 1, 12, 10), "value-0012");
    ck_assert_str_eq(held, "value-0002");           /* pushed out, still held */
    qrt_aggcache_release(c, e);
    ck_assert(kept(c, key(1, 1, 0, 10), "value-0000"));
    ck_assert(!kept(c, key(1, 1, 3, 10), "value-0003"));
    ck_assert(!kept(c, key(1, 1, 5, 10), "value-0005"));
    ck_assert(kept(c, key(1, 1, 1, 10), "value-0001"));
    ck_assert(kept(c, key(1, 1, 6, 10), "value-0006"));
    ck_assert(kept(c, key(1, 1, 12, 10), "value-0012"));
    qrt_aggcache_usage(c, &n, &bytes);
    ck_assert_int_eq(n, 10);
    ck_assert_int_eq((int)bytes, 100);
    /* longer than an eighth of the cache: not kept, nothing pushed out */
    put(c, key(1, 1, 99, 10), "a value of 13");
    ck_assert(!kept(c, key(1, 1, 99, 10), "a value of 13"));
    qrt_aggcache_usage(c, &n, &bytes);
    ck_assert_int_eq(n, 10);
}
END_TEST

START_TEST(many_values_and_seals)
{
    qrt_aggcache_t *c = qrt_aggcache_make(pool, 1 << 24);
    qrt_aggcache_key_t k = key(1, 1, 1, 10);
    qrt_aggcache_ent_t *e;
    char text[32];
    int i;

    /* (the table grows past its first slots) */
    for (i = 0; i < 5000; i++) {
        snprintf(text, sizeof(text), "v%d", i);
        put(c, key(i % 3, 1 + i % 3, i, 10 + i % 4), text);
    }
    for (i = 0; i < 5000; i++) {
        snprintf(text, sizeof(text), "v%d", i);
        ck_assert(kept(c, key(i % 3, 1 + i % 3, i, 10 + i % 4), text));
    }
    ck_assert(qrt_aggcache_seal("", 0) > 0);
    ck_assert(qrt_aggcache_seal("a", 1) > 0);
    ck_assert(qrt_aggcache_seal("a", 1) != qrt_aggcache_seal("b", 1));
    ck_assert(qrt_aggcache_seal("ab", 2) != qrt_aggcache_seal("ba", 2));
    ck_assert(qrt_aggcache_seal("ab", 2) == qrt_aggcache_seal("abc", 2));
    /* no cache: nothing kept, nothing found */
    qrt_aggcache_put(NULL, &k, 5, "x", 1);
    ck_assert_ptr_null(qrt_aggcache_get(NULL, &k, 5, &e));
}
END_TEST

START_TEST(many_at_once)
{
    qrt_aggcache_t *c = qrt_aggcache_make(pool, 1 << 20);
    static const char *const texts[] = { "one", "two", "three", "four" };
    qrt_aggcache_key_t keys[4];
    apr_int64_t seals[4];
    const char *data[4] = { NULL, NULL, NULL, NULL };
    apr_size_t lens[4] = { 0, 0, 0, 0 };
    qrt_aggcache_ent_t *ents[4] = { NULL, NULL, NULL, NULL };
    int i;

    for (i = 0; i < 4; i++) {
        keys[i] = key(7, 1, 100 + i, 400);
        seals[i] = qrt_aggcache_seal(texts[i], strlen(texts[i]));
        if (i != 2) {
            put(c, keys[i], texts[i]);
        }
    }
    seals[3] = seals[3] + 1;            /* kept under another seal */
    ck_assert_int_eq(qrt_aggcache_get_many(c, keys, seals, 4, data, lens, ents), 2);
    ck_assert_str_eq(data[0], "one");
    ck_assert_uint_eq(lens[1], 3);
    ck_assert_str_eq(data[1], "two");
    ck_assert(!data[2] && !ents[2] && !data[3] && !ents[3]);
    /* held while replaced; a second pass fills only the ones still missing */
    put(c, keys[0], "uno");
    put(c, keys[2], texts[2]);
    ck_assert_int_eq(qrt_aggcache_get_many(c, keys, seals, 4, data, lens, ents), 1);
    ck_assert_str_eq(data[0], "one");
    ck_assert_str_eq(data[2], "three");
    qrt_aggcache_release_many(c, ents, 4);
    for (i = 0; i < 4; i++) {
        ck_assert(ents[i] == NULL);
    }
    ck_assert(kept(c, keys[0], "uno"));
    ck_assert(!kept(c, keys[0], "one"));
}
END_TEST

static Suite *aggcache_suite(void)
{
    Suite *s = suite_create("qrt_aggcache");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, kept_for_its_key_and_seal);
    tcase_add_test(tc, held_after_it_is_replaced);
    tcase_add_test(tc, put_and_held);
    tcase_add_test(tc, least_recently_used_goes);
    tcase_add_test(tc, many_values_and_seals);
    tcase_add_test(tc, many_at_once);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(aggcache_suite());
}
