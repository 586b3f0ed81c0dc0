/* Unit tests of qrt_password: hashes, verification of hostile encodings, validation. */
#include <stdlib.h>
#include <string.h>
#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>
#include <apr_time.h>
#include "qrt_password.h"
#include "qrt_check.h"

QRT_CHECK_POOL

#define PW "correct horse"
/* Computed with Python's hashlib.pbkdf2_hmac (salt bytes 0..15): an independent check
 * of the derivation and the encoding. */
#define VEC_10K "pbkdf2-sha256$10000$AAECAwQFBgcICQoLDA0ODw==$" \
                "5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8="
#define VEC_UTF8_PW "p\xc3\xa4ssw\xc3\xb6rd \xe2\x9c\x93"
#define VEC_UTF8 "pbkdf2-sha256$150000$AAECAwQFBgcICQoLDA0ODw==$" \
                 "ZyB9lmR01LPQKb23ojQLFq9HxiXrt0lgvaSkR6/maN0="

static int verify(const char *enc, const char *pw)
{
    return qrt_password_verify(enc, pw, strlen(pw));
}

START_TEST(round_trip)
{
    const char *h = qrt_password_hash(pool, PW, strlen(PW));

    ck_assert_ptr_nonnull(h);
    ck_assert_str_eq(apr_pstrndup(pool, h, strlen(QRT_PASSWORD_SCHEME)),
                     QRT_PASSWORD_SCHEME);
    ck_assert_int_eq(strlen(h), strlen("pbkdf2-sha256$150000$") + 24 + 1 + 44);
    ck_assert_int_eq(verify(h, PW), 1);
    ck_assert_int_eq(verify(h, "correct hors"), 0);
    ck_assert_int_eq(verify(h, "correct horse "), 0);
    ck_assert_int_eq(verify(h, "Correct horse"), 0);
    /* A NUL byte is part of the password as given by its length. */
    ck_assert_int_eq(qrt_password_verify(h, PW "\0x", strlen(PW) + 2), 0);
}
END_TEST

START_TEST(known_vectors)
{
    ck_assert_int_eq(verify(VEC_10K, PW), 1);
    ck_assert_int_eq(verify(VEC_10K, "correct horsf"), 0);
    ck_assert_int_eq(verify(VEC_UTF8, VEC_UTF8_PW), 1);
    ck_assert_int_eq(verify(VEC_UTF8, "passw\xc3\xb6rd \xe2\x9c\x93"), 0);
}
END_TEST

START_TEST(salted)
{
    const char *a = qrt_password_hash(pool, PW, strlen(PW));
    const char *b = qrt_password_hash(pool, PW, strlen(PW));

    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_str_ne(a, b);
    /* The salts differ, not only the keys. */
    ck_assert_int_ne(strncmp(a, b, strlen("pbkdf2-sha256$150000$") + 24), 0);
    ck_assert_int_eq(verify(a, PW), 1);
    ck_assert_int_eq(verify(b, PW), 1);
}
END_TEST

START_TEST(hash_refuses_bad_lengths)
{
    char big[QRT_PASSWORD_MAX + 2];

    memset(big, 'a', sizeof(big));
    ck_assert_ptr_null(qrt_password_hash(pool, "", 0));
    ck_assert_ptr_null(qrt_password_hash(pool, NULL, 3));
    ck_assert_ptr_null(qrt_password_hash(pool, big, QRT_PASSWORD_MAX + 1));
    ck_assert_ptr_nonnull(qrt_password_hash(pool, big, QRT_PASSWORD_MAX));
    ck_assert_int_eq(qrt_password_verify(VEC_10K, PW, 0), 0);
    ck_assert_int_eq(qrt_password_verify(VEC_10K, NULL, 3), 0);
    ck_assert_int_eq(qrt_password_verify(VEC_10K, big, QRT_PASSWORD_MAX + 1), 0);
}
END_TEST

/* Every malformed encoding is refused, and quickly (no derivation is attempted). */
START_TEST(malformed)
{
    static const char *const bad[] = {
        "",
        "pbkdf2-sha256",
        "pbkdf2-sha256$",
        "pbkdf2-sha256$10000",
        "pbkdf2-sha256$10000$",
        "pbkdf2-sha256$10000$AAECAwQFBgcICQoLDA0ODw==",
        "pbkdf2-sha256$10000$AAECAwQFBgcICQoLDA0ODw==$",
        "pbkdf2-sha256$10000$AAECAwQFBgcICQoLDA0ODw==$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8",
        "pbkdf2-sha256$10000$AAECAwQFBgcICQoLDA0ODw==$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8==",
        /* Something after the key. */
        VEC_10K "$",
        VEC_10K "x",
        /* Wrong prefix or case. */
        "pbkdf2-sha1$10000$AAECAwQFBgcICQoLDA0ODw==$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8=",
        "PBKDF2-SHA256$10000$AAECAwQFBgcICQoLDA0ODw==$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8=",
        "$pbkdf2-sha256$10000$AAECAwQFBgcICQoLDA0ODw==$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8=",
        "scrypt$10000$AAECAwQFBgcICQoLDA0ODw==$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8=",
        /* Iterations: huge, overflowing, too few, signed, padded, empty. */
        "pbkdf2-sha256$1000001$AAECAwQFBgcICQoLDA0ODw==$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8=",
        "pbkdf2-sha256$2147483647$AAECAwQFBgcICQoLDA0ODw==$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8=",
        "pbkdf2-sha256$18446744073709551617$AAECAwQFBgcICQoLDA0ODw==$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8=",
        "pbkdf2-sha256$9999$AAECAwQFBgcICQoLDA0ODw==$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8=",
        "pbkdf2-sha256$0$AAECAwQFBgcICQoLDA0ODw==$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8=",
        "pbkdf2-sha256$-10000$AAECAwQFBgcICQoLDA0ODw==$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8=",
        "pbkdf2-sha256$+10000$AAECAwQFBgcICQoLDA0ODw==$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8=",
        "pbkdf2-sha256$010000$AAECAwQFBgcICQoLDA0ODw==$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8=",
        "pbkdf2-sha256$ 10000$AAECAwQFBgcICQoLDA0ODw==$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8=",
        "pbkdf2-sha256$$AAECAwQFBgcICQoLDA0ODw==$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8=",
        /* Salt: short, long, not base64, bad padding, non-zero unused bits. */
        "pbkdf2-sha256$10000$AAECAwQFBgcICQoLDA0O$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8=",
        "pbkdf2-sha256$10000$AAECAwQFBgcICQoLDA0ODxA=$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8=",
        "pbkdf2-sha256$10000$AAECAwQFBgcICQoLDA0OD*==$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8=",
        "pbkdf2-sha256$10000$AAECAwQFBgcICQoLDA0ODw=A$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8=",
        "pbkdf2-sha256$10000$AAECAwQFBgcICQoLDA0ODx==$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8=",
        "pbkdf2-sha256$10000$AAECAwQFBgcICQoLDA0OD\n==$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8=",
        /* Key: not base64, non-zero unused bits, '=' inside. */
        "pbkdf2-sha256$10000$AAECAwQFBgcICQoLDA0ODw==$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L-=",
        "pbkdf2-sha256$10000$AAECAwQFBgcICQoLDA0ODw==$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L9=",
        "pbkdf2-sha256$10000$AAECAwQFBgcICQoLDA0ODw==$5RUHDgNTp9sBOWGYS4e6u57=z/Sq3/TQgaDP/8MW6L8=",
        /* Separators. */
        "pbkdf2-sha256$10000$AAECAwQFBgcICQoLDA0ODw==:5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8=",
        "pbkdf2-sha256$10000AAECAwQFBgcICQoLDA0ODw==$5RUHDgNTp9sBOWGYS4e6u57cz/Sq3/TQgaDP/8MW6L8=",
        NULL
    };
    apr_time_t start = apr_time_now();
    int i;

    ck_assert_int_eq(verify(NULL, PW), 0);
    for (i = 0; bad[i]; i++) {
        ck_assert_msg(verify(bad[i], PW) == 0, "accepted: %s", bad[i]);
    }
    /* The iterations are checked before any derivation: a hash asking for billions
     * is refused at once. */
    ck_assert_int_lt(apr_time_now() - start, apr_time_from_sec(2));
    /* The bounds themselves are accepted (the key is for 10000 iterations only). */
    ck_assert_int_eq(verify(VEC_10K, PW), 1);
}
END_TEST

START_TEST(hostile_bytes)
{
    char enc[256];
    unsigned int seed = 7;
    int i, j;

    /* Random mutations of a valid encoding: never crash, never accept. */
    for (i = 0; i < 400; i++) {
        strcpy(enc, VEC_10K);
        for (j = 0; j < 3; j++) {
            enc[rand_r(&seed) % strlen(VEC_10K)] = (char)(rand_r(&seed) % 255 + 1);
        }
        if (strcmp(enc, VEC_10K) != 0) {
            ck_assert_msg(verify(enc, PW) == 0, "accepted: %s", enc);
        }
    }
}
END_TEST

START_TEST(check)
{
    char big[QRT_PASSWORD_MAX + 1];

    memset(big, 'x', sizeof(big));
    ck_assert_ptr_null(qrt_password_check("s3cret", 6));
    ck_assert_ptr_null(qrt_password_check(" ", 1));
    ck_assert_ptr_null(qrt_password_check(VEC_UTF8_PW, strlen(VEC_UTF8_PW)));
    ck_assert_ptr_null(qrt_password_check(big, QRT_PASSWORD_MAX));
    ck_assert_str_eq(qrt_password_check(big, QRT_PASSWORD_MAX + 1),
                     "The password must be 1 to 128 bytes long.");
    ck_assert_str_eq(qrt_password_check("", 0), "The password must be 1 to 128 bytes long.");
    ck_assert_str_eq(qrt_password_check(NULL, 0), "The password is missing.");
    ck_assert_str_eq(qrt_password_check("a\xff", 2), "The password must be valid UTF-8.");
    ck_assert_str_eq(qrt_password_check("\xc3", 1), "The password must be valid UTF-8.");
    ck_assert_str_eq(qrt_password_check("\xc0\xaf", 2), "The password must be valid UTF-8.");
    ck_assert_str_eq(qrt_password_check("\xed\xa0\x80", 3), "The password must be valid UTF-8.");
    ck_assert_str_eq(qrt_password_check("a\0b", 3),
                     "The password may not contain control characters.");
    ck_assert_str_eq(qrt_password_check("a\tb", 3),
                     "The password may not contain control characters.");
    ck_assert_str_eq(qrt_password_check("a\nb", 3),
                     "The password may not contain control characters.");
    ck_assert_str_eq(qrt_password_check("a\x7f", 2),
                     "The password may not contain control characters.");
    ck_assert_str_eq(qrt_password_check("a\xc2\x85", 3),
                     "The password may not contain control characters.");
}
END_TEST

static Suite *password_suite(void)
{
    Suite *s = suite_create("qrt_password");
    TCase *tc = tcase_create("password");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, known_vectors);
    tcase_add_test(tc, salted);
    tcase_add_test(tc, hash_refuses_bad_lengths);
    tcase_add_test(tc, malformed);
    tcase_add_test(tc, hostile_bytes);
    tcase_add_test(tc, check);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(password_suite());
}
