/* Unit tests for qrt_token: digests and visitor ids. */
#include <stdlib.h>
#include <string.h>

#include <pthread.h>
#include <stdio.h>
#include <check.h>
#include <apr_general.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "qrt_token.h"
#include "qrt_check.h"

QRT_CHECK_POOL

START_TEST(sha256_vector)
{
    char out[65];

    qrt_sha256_hex("abc", 3, out);
    ck_assert_str_eq(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
END_TEST

/* The first 8 bytes (big-endian, as a signed 64-bit number) of SHA-256 over
 * "ip\nuser agent" without a key (the ids of databases from before schema version
 * 6), of HMAC-SHA-256 under the key with one (expected values from Python's hashlib
 * and hmac, as the hex digits of those bytes). */
#define VID(hex) ((apr_int64_t)APR_UINT64_C(hex))
START_TEST(visitor_ids)
{
    char *ua = malloc(3001);
    qrt_visitor_key_t k, none;
    const char *hexkey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
    apr_int64_t day_end = 1795564799;       /* 2026-11-24T23:59:59Z */

    ck_assert_int_eq(qrt_visitor_id(NULL, 0, "203.0.113.0", "Mozilla/5.0"),
                     VID(0xadac31003b6ece80));
    ck_assert_int_eq(qrt_visitor_id(NULL, 0, NULL, NULL), VID(0x01ba4719c80b6fe9));
    ck_assert_int_eq(qrt_visitor_key_parse(&none, "", "none"), 0);
    ck_assert_int_eq(qrt_visitor_id(&none, day_end, "203.0.113.0", "Mozilla/5.0"),
                     VID(0xadac31003b6ece80));
    /* longer than any stack buffer */
    memset(ua, 'x', 3000);
    ua[3000] = '\0';
    ck_assert_int_eq(qrt_visitor_id(NULL, 0, "10.0.0.0", ua), VID(0x727e5271fa5b8918));

    /* keyed */
    ck_assert_int_eq(qrt_visitor_key_parse(&k, hexkey, "none"), 0);
    ck_assert_int_eq(k.keylen, 32);
    ck_assert_int_eq(qrt_visitor_id(&k, day_end, "203.0.113.0", "Mozilla/5.0"),
                     VID(0x146b2bc6f35240ce));
    ck_assert_int_eq(qrt_visitor_id(&k, 0, "10.0.0.0", ua), VID(0xe0cd731beca35b90));
    /* daily: the visit's UTC day is part of it */
    ck_assert_int_eq(qrt_visitor_key_parse(&k, hexkey, "daily"), 0);
    ck_assert_int_eq(qrt_visitor_id(&k, day_end, "203.0.113.0", "Mozilla/5.0"),
                     VID(0xf92995227101ad38));
    ck_assert_int_eq(qrt_visitor_id(&k, day_end - 86399, "203.0.113.0", "Mozilla/5.0"),
                     VID(0xf92995227101ad38));
    ck_assert_int_eq(qrt_visitor_id(&k, day_end + 1, "203.0.113.0", "Mozilla/5.0"),
                     VID(0x04bc272b3766a157));
    ck_assert_int_eq(qrt_visitor_key_parse(&k, "", "daily"), 0);
    ck_assert_int_eq(qrt_visitor_id(&k, day_end, "203.0.113.0", "Mozilla/5.0"),
                     VID(0xd708a5231c9fca9f));
    /* malformed settings */
    ck_assert_int_eq(qrt_visitor_key_parse(&k, "abc", "none"), -1);
    ck_assert_int_eq(qrt_visitor_key_parse(&k, hexkey, "weekly"), -1);
    ck_assert_int_eq(k.keylen, 0);
    free(ua);
}
END_TEST

START_TEST(visitor_keys)
{
    const char *a = qrt_visitor_key_generate(pool), *b = qrt_visitor_key_generate(pool);
    qrt_visitor_key_t k;

    ck_assert_ptr_nonnull(a);
    ck_assert_uint_eq(strlen(a), 64);
    ck_assert_str_ne(a, b);
    ck_assert_int_eq(qrt_visitor_key_parse(&k, a, NULL), 0);
    ck_assert_int_eq(k.keylen, 32);
    ck_assert_int_eq(k.daily, 0);
}
END_TEST

START_TEST(tokens)
{
    apr_pool_t *p = pool;
    char *t;

    t = qrt_token_generate(p);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(qrt_token_plausible(t), 1);
    ck_assert_int_eq(qrt_token_plausible(""), 0);
    ck_assert_int_eq(qrt_token_plausible("qrt_a\nb"), 0);
    ck_assert_uint_eq(strlen(qrt_token_digest(p, t)), 64);
}
END_TEST

/* More keys than the process keeps padded states for (qrt_token.c keeps 4), each
 * used twice and from several threads: every id equals OpenSSL's one-shot HMAC, the
 * padded states' and the full computation's alike. */
typedef struct {
    int first;
    int bad;
} many_keys_job;

static void *many_keys_run(void *arg)
{
    many_keys_job *job = arg;
    static const char msg[] = "198.51.100.0\nMozilla/5.0 (X11; Linux x86_64)";
    int round, i;

    for (round = 0; round < 2; round++) {
        for (i = 0; i < 7; i++) {
            qrt_visitor_key_t k;
            char hexkey[65];
            unsigned char raw[32], md[EVP_MAX_MD_SIZE];
            unsigned int n = 0, b;
            apr_uint64_t want = 0;
            int key = (job->first + i) % 7;

            for (b = 0; b < 32; b++) {
                raw[b] = (unsigned char)(key * 37 + b);
                sprintf(hexkey + 2 * b, "%02x", raw[b]);
            }
            if (qrt_visitor_key_parse(&k, hexkey, "none") != 0) {
                job->bad++;
                continue;
            }
            HMAC(EVP_sha256(), raw, sizeof(raw), (const unsigned char *)msg, strlen(msg), md,
                 &n);
            for (b = 0; b < 8; b++) {
                want = want << 8 | md[b];
            }
            if (qrt_visitor_id(&k, 0, "198.51.100.0", "Mozilla/5.0 (X11; Linux x86_64)")
                != (apr_int64_t)want) {
                job->bad++;
            }
        }
    }
    return NULL;
}

START_TEST(visitor_ids_many_keys_many_threads)
{
    pthread_t t[4];
    many_keys_job job[4];
    int i;

    for (i = 0; i < 4; i++) {
        job[i].first = i * 2;
        job[i].bad = 0;
        ck_assert_int_eq(pthread_create(&t[i], NULL, many_keys_run, &job[i]), 0);
    }
    for (i = 0; i < 4; i++) {
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
        ck_assert_int_eq(job[i].bad, 0);
    }
}
END_TEST

START_TEST(expiry)
{
    apr_int64_t now = 1780000000, at = 0;

    ck_assert_int_eq(qrt_token_expiry_parse("30d", now, &at), 0);
    ck_assert(at == now + 30 * 86400);
    ck_assert_int_eq(qrt_token_expiry_parse("12h", now, &at), 0);
    ck_assert(at == now + 12 * 3600);
    ck_assert_int_eq(qrt_token_expiry_parse("90m", now, &at), 0);
    ck_assert(at == now + 90 * 60);
    ck_assert_int_eq(qrt_token_expiry_parse("2w", now, &at), 0);
    ck_assert(at == now + 14 * 86400);
    ck_assert_int_eq(qrt_token_expiry_parse("5s", now, &at), 0);
    ck_assert(at == now + 5);
    ck_assert_int_eq(qrt_token_expiry_parse("2027-01-01T00:00:00+0000", now, &at), 0);
    ck_assert(at == 1798761600);
    /* Not a duration, nothing, zero, past times, too far, overflow. */
    ck_assert_int_eq(qrt_token_expiry_parse("", now, &at), -1);
    ck_assert_int_eq(qrt_token_expiry_parse("d", now, &at), -1);
    ck_assert_int_eq(qrt_token_expiry_parse("30", now, &at), -1);
    ck_assert_int_eq(qrt_token_expiry_parse("30x", now, &at), -1);
    ck_assert_int_eq(qrt_token_expiry_parse("30dd", now, &at), -1);
    ck_assert_int_eq(qrt_token_expiry_parse("-3d", now, &at), -1);
    ck_assert_int_eq(qrt_token_expiry_parse("0d", now, &at), -1);
    ck_assert_int_eq(qrt_token_expiry_parse("2020-01-01T00:00:00+0000", now, &at), -1);
    ck_assert_int_eq(qrt_token_expiry_parse("36700d", now, &at), -1);
    ck_assert_int_eq(qrt_token_expiry_parse("99999999999999999999999d", now, &at), -1);
    ck_assert_int_eq(qrt_token_expiry_parse(NULL, now, &at), -1);
}
END_TEST

static Suite *token_suite(void)
{
    Suite *s = suite_create("qrt_token");
    TCase *tc = tcase_create("token");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, sha256_vector);
    tcase_add_test(tc, visitor_ids);
    tcase_add_test(tc, visitor_keys);
    tcase_add_test(tc, visitor_ids_many_keys_many_threads);
    tcase_add_test(tc, tokens);
    tcase_add_test(tc, expiry);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(token_suite());
}
