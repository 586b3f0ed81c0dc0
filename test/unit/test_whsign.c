/* qrt_whsign: the Standard Webhooks test vector, secrets' parsing. */
#include <string.h>
#include <check.h>
#include <apr_general.h>
#include <apr_pools.h>

#include "qrt_whsign.h"
#include "qrt_check.h"

/* The specification's libraries' vector (libraries/go/webhook_test.go, TestWebhookSign). */
START_TEST(spec_vector)
{
    qrt_whsign_key_t k;
    char sig[QRT_WHSIGN_SIG_LEN];
    const char *body = "{\"test\": 2432232314}";

    ck_assert_int_eq(qrt_whsign_key_parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", &k), 0);
    ck_assert_int_eq((int)k.len, 24);
    ck_assert_int_eq(qrt_whsign_sign(&k, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body,
                                     strlen(body), sig), 0);
    ck_assert_str_eq(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    /* without the prefix, as the libraries accept it */
    ck_assert_int_eq(qrt_whsign_key_parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", &k), 0);
    ck_assert_int_eq(qrt_whsign_sign(&k, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body,
                                     strlen(body), sig), 0);
    ck_assert_str_eq(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    /* another timestamp, another body byte: another signature */
    qrt_whsign_sign(&k, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265331, body, strlen(body), sig);
    ck_assert_str_ne(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    qrt_whsign_sign(&k, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body, strlen(body) - 1,
                    sig);
    ck_assert_str_ne(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}
END_TEST

/* A 32-byte key as mod_qrtrack makes them; the body may hold NUL bytes. */
START_TEST(key_32_bytes)
{
    qrt_whsign_key_t k;
    char sig[QRT_WHSIGN_SIG_LEN];
    static const char body[] = { 'a', 0, 'b' };

    ck_assert_int_eq(qrt_whsign_key_parse(
        "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", &k), 0);
    ck_assert_int_eq((int)k.len, 32);
    ck_assert_int_eq(k.key[0], 0);
    ck_assert_int_eq(k.key[31], 31);
    ck_assert_int_eq(qrt_whsign_sign(&k, "msg_x", 1, body, sizeof(body), sig), 0);
    ck_assert_int_eq((int)strlen(sig), QRT_WHSIGN_SIG_LEN - 1);
    ck_assert(!strncmp(sig, "v1,", 3));
}
END_TEST

START_TEST(bad_secrets)
{
    static const char *bad[] = {
        "", "whsec_", "whsec_abc", "whsec_ab=c", "whsec_a===", "whsec_ab!d",
        "whsec_ab d", "whsec_====", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n",
        "whsec_-_abcdef",   /* URL-safe base64 is not the specification's */
        /* 66 bytes: longer than QRT_WHSIGN_KEY_MAX */
        "whsec_" "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        NULL
    };
    qrt_whsign_key_t k;
    int i;

    for (i = 0; bad[i]; i++) {
        ck_assert_msg(qrt_whsign_key_parse(bad[i], &k) == -1, "accepted '%s'", bad[i]);
        ck_assert_int_eq((int)k.len, 0);
    }
    ck_assert_int_eq(qrt_whsign_key_parse(NULL, &k), -1);
    /* 64 bytes: the longest */
    ck_assert_int_eq(qrt_whsign_key_parse(
        "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==",
        &k), 0);
    ck_assert_int_eq((int)k.len, 64);
}
END_TEST

static Suite *whsign_suite(void)
{
    Suite *s = suite_create("qrt_whsign");
    TCase *tc = tcase_create("whsign");

    tcase_add_test(tc, spec_vector);
    tcase_add_test(tc, key_32_bytes);
    tcase_add_test(tc, bad_secrets);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(whsign_suite());
}
