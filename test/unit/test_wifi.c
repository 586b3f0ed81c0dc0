/* Unit tests for qrt_wifi.c, with a QR round trip through zbarimg. */

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apr_general.h"
#include "apr_strings.h"
#include "apr_tables.h"

#include "qrt_qr.h"
#include "qrt_wifi.h"
#include "qrt_check.h"

QRT_CHECK_POOL

START_TEST(test_encryption)
{
    ck_assert_str_eq(qrt_wifi_encryption("WPA"), "WPA");
    ck_assert_str_eq(qrt_wifi_encryption("wpa"), "WPA");
    ck_assert_str_eq(qrt_wifi_encryption("WPA2"), "WPA");
    ck_assert_str_eq(qrt_wifi_encryption("wPa2"), "WPA");
    ck_assert_str_eq(qrt_wifi_encryption("WPA3"), "WPA");
    ck_assert_str_eq(qrt_wifi_encryption("wpa3"), "WPA");
    ck_assert_str_eq(qrt_wifi_encryption("WEP"), "WEP");
    ck_assert_str_eq(qrt_wifi_encryption("wep"), "WEP");
    ck_assert_str_eq(qrt_wifi_encryption("nopass"), "nopass");
    ck_assert_str_eq(qrt_wifi_encryption("NOPASS"), "nopass");
    ck_assert_str_eq(qrt_wifi_encryption("NoPass"), "nopass");
    ck_assert_str_eq(qrt_wifi_encryption(NULL), "WPA");
    ck_assert_str_eq(qrt_wifi_encryption(""), "WPA");
    ck_assert_ptr_null(qrt_wifi_encryption("WPA4"));
    ck_assert_ptr_null(qrt_wifi_encryption("WPA1"));
    ck_assert_ptr_null(qrt_wifi_encryption(" WPA"));
    ck_assert_ptr_null(qrt_wifi_encryption("WPA "));
    ck_assert_ptr_null(qrt_wifi_encryption("none"));
    ck_assert_ptr_null(qrt_wifi_encryption("WPA2-EAP"));
    ck_assert_ptr_null(qrt_wifi_encryption("no pass"));
    ck_assert_ptr_null(qrt_wifi_encryption("WE"));
}
END_TEST

START_TEST(test_escape)
{
    ck_assert_str_eq(qrt_wifi_escape(pool, NULL), "");
    ck_assert_str_eq(qrt_wifi_escape(pool, ""), "");
    ck_assert_str_eq(qrt_wifi_escape(pool, "plain Net-5G_x"), "plain Net-5G_x");
    ck_assert_str_eq(qrt_wifi_escape(pool, "\\"), "\\\\");
    ck_assert_str_eq(qrt_wifi_escape(pool, ";"), "\\;");
    ck_assert_str_eq(qrt_wifi_escape(pool, ","), "\\,");
    ck_assert_str_eq(qrt_wifi_escape(pool, ":"), "\\:");
    ck_assert_str_eq(qrt_wifi_escape(pool, "\""), "\\\"");
    ck_assert_str_eq(qrt_wifi_escape(pool, "a;b,c:d\"e\\f"),
                     "a\\;b\\,c\\:d\\\"e\\\\f");
    ck_assert_str_eq(qrt_wifi_escape(pool, "\\\\;;"), "\\\\\\\\\\;\\;");
    ck_assert_str_eq(qrt_wifi_escape(pool, "Café ☕"), "Café ☕");
    /* ' and other punctuation are left alone */
    ck_assert_str_eq(qrt_wifi_escape(pool, "it's=&?"), "it's=&?");
}
END_TEST

START_TEST(test_payload)
{
    ck_assert_str_eq(qrt_wifi_payload(pool, "Home", "secret", "WPA", 0),
                     "WIFI:T:WPA;S:Home;P:secret;;");
    ck_assert_str_eq(qrt_wifi_payload(pool, "Home", "secret", "WPA", 1),
                     "WIFI:T:WPA;S:Home;P:secret;H:true;;");
    ck_assert_str_eq(qrt_wifi_payload(pool, "Old", "12345", "WEP", 0),
                     "WIFI:T:WEP;S:Old;P:12345;;");
    ck_assert_str_eq(qrt_wifi_payload(pool, "Cafe", "ignored", "nopass", 0),
                     "WIFI:T:nopass;S:Cafe;;");
    ck_assert_str_eq(qrt_wifi_payload(pool, "Cafe", NULL, "nopass", 1),
                     "WIFI:T:nopass;S:Cafe;H:true;;");
    ck_assert_str_eq(qrt_wifi_payload(pool, NULL, NULL, NULL, 0),
                     "WIFI:T:WPA;S:;P:;;");
    /* a not yet normalised value is normalised */
    ck_assert_str_eq(qrt_wifi_payload(pool, "N", "p", "wpa3", 0),
                     "WIFI:T:WPA;S:N;P:p;;");
    ck_assert_str_eq(qrt_wifi_payload(pool, "N", "p", "NOPASS", 0),
                     "WIFI:T:nopass;S:N;;");
    ck_assert_str_eq(qrt_wifi_payload(pool, "a;b:c\"d\\e,f", "p;w:\"\\,x",
                                      "WPA", 1),
                     "WIFI:T:WPA;S:a\\;b\\:c\\\"d\\\\e\\,f;"
                     "P:p\\;w\\:\\\"\\\\\\,x;H:true;;");
}
END_TEST

/* Split a WIFI: payload into unescaped fields; NULL when malformed. */
static apr_table_t *parse_wifi(const char *s)
{
    apr_table_t *t = apr_table_make(pool, 4);
    char *buf = apr_palloc(pool, strlen(s) + 1);

    if (strncmp(s, "WIFI:", 5)) {
        return NULL;
    }
    s += 5;
    while (*s && *s != ';') {
        const char *colon = strchr(s, ':');
        char key[8];
        char *o = buf;

        if (!colon || colon - s >= (long)sizeof(key)) {
            return NULL;
        }
        memcpy(key, s, colon - s);
        key[colon - s] = '\0';
        for (s = colon + 1; *s && *s != ';'; s++) {
            if (*s == '\\') {
                s++;
                if (!*s) {
                    return NULL;
                }
            }
            *o++ = *s;
        }
        if (*s != ';') {
            return NULL;
        }
        s++;
        *o = '\0';
        apr_table_add(t, key, buf);
    }
    if (strcmp(s, ";")) {
        return NULL;
    }
    return t;
}

static char *zbar_decode(const char *png, apr_size_t len)
{
    char path[] = "/tmp/qrt_test_wifi_XXXXXX";
    char cmd[256];
    char *out = apr_palloc(pool, 4096);
    apr_size_t n = 0;
    size_t r;
    FILE *f;
    int fd;

    fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, png, len), (ssize_t)len);
    close(fd);
    snprintf(cmd, sizeof(cmd), "zbarimg --raw -q %s 2>/dev/null", path);
    f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    while ((r = fread(out + n, 1, 4095 - n, f)) > 0) {
        n += r;
    }
    ck_assert_int_eq(pclose(f), 0);
    unlink(path);
    if (n > 0 && out[n - 1] == '\n') {
        n--;
    }
    out[n] = '\0';
    return out;
}

static void qr_roundtrip(const char *ssid, const char *pw, const char *enc_in,
                         int hidden)
{
    const char *enc = qrt_wifi_encryption(enc_in);
    const char *payload, *png, *err;
    apr_size_t len;
    apr_table_t *t;
    char *dec;

    ck_assert_ptr_nonnull(enc);
    payload = qrt_wifi_payload(pool, ssid, pw, enc, hidden);
    ck_assert_int_eq(qrt_qr_png_buf(pool, payload, strlen(payload), NULL,
                                    &png, &len, &err), APR_SUCCESS);
    dec = zbar_decode(png, len);
    ck_assert_str_eq(dec, payload);
    t = parse_wifi(dec);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(apr_table_get(t, "T"), enc);
    ck_assert_str_eq(apr_table_get(t, "S"), ssid);
    if (strcmp(enc, "nopass")) {
        ck_assert_str_eq(apr_table_get(t, "P"), pw);
    }
    else {
        ck_assert_ptr_null(apr_table_get(t, "P"));
    }
    if (hidden) {
        ck_assert_str_eq(apr_table_get(t, "H"), "true");
    }
    else {
        ck_assert_ptr_null(apr_table_get(t, "H"));
    }
}

START_TEST(test_qr_special_chars)
{
    qr_roundtrip("My;Net,work:\"5G\"\\x", "p;a:s,s\"w\\o\\\\rd;", "WPA2", 1);
}
END_TEST

START_TEST(test_qr_utf8_and_plain)
{
    qr_roundtrip("Café Größe ☕;", "pässwörd:,", "wpa3", 0);
    qr_roundtrip("Guest", "", "nopass", 0);
    qr_roundtrip("Legacy", "0123456789", "WEP", 1);
    qr_roundtrip("Home", "correct horse battery staple", NULL, 0);
}
END_TEST

static Suite *wifi_suite(void)
{
    Suite *s = suite_create("qrt_wifi");
    TCase *tc = tcase_create("wifi");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_encryption);
    tcase_add_test(tc, test_escape);
    tcase_add_test(tc, test_payload);
    tcase_add_test(tc, test_qr_special_chars);
    tcase_add_test(tc, test_qr_utf8_and_plain);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(wifi_suite());
}
