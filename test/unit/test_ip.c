/* Unit tests for qrt_ip. */
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <check.h>
#include <apr_general.h>

#include "qrt_ip.h"
#include "qrt_check.h"

QRT_CHECK_POOL

static void anon_is(const char *in, const char *want)
{
    const char *got = qrt_ip_anonymize(pool, in);

    if (!want) {
        ck_assert_msg(got == NULL, "anonymize(%s) = %s, want NULL",
                      in ? in : "(null)", got);
        return;
    }
    ck_assert_msg(got != NULL, "anonymize(%s) = NULL", in);
    ck_assert_msg(strcmp(got, want) == 0, "anonymize(%s) = %s, want %s",
                  in, got, want);
}

static void canon_is(const char *in, const char *want)
{
    const char *got = qrt_ip_canonical(pool, in);

    if (!want) {
        ck_assert_msg(got == NULL, "canonical(%s) = %s, want NULL",
                      in ? in : "(null)", got);
        return;
    }
    ck_assert_msg(got != NULL, "canonical(%s) = NULL", in);
    ck_assert_msg(strcmp(got, want) == 0, "canonical(%s) = %s, want %s",
                  in, got, want);
}

START_TEST(anonymize_v4)
{
    anon_is("203.0.113.77", "203.0.113.0");
    anon_is("203.0.113.0", "203.0.113.0");
    anon_is("0.0.0.0", "0.0.0.0");
    anon_is("255.255.255.255", "255.255.255.0");
    anon_is("127.0.0.1", "127.0.0.0");
    anon_is("10.1.2.3", "10.1.2.0");
}
END_TEST

START_TEST(anonymize_v6)
{
    anon_is("2001:db8:abcd:12::1", "2001:db8:abcd::");
    anon_is("2001:DB8:ABCD:0012:0000:0000:0000:0001", "2001:db8:abcd::");
    anon_is("2001:0db8:abcd:ffff:ffff:ffff:ffff:ffff", "2001:db8:abcd::");
    anon_is("2001:db8::1", "2001:db8::");
    anon_is("2001:0:0:1::", "2001::");
    anon_is("2001::abcd:1", "2001::");
    anon_is("0:0:1::", "0:0:1::");
    anon_is("1:0:0:2::", "1::");
    anon_is("0:1:0:5::", "0:1::");
    anon_is("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ffff:ffff:ffff::");
    anon_is("::1", "::");
    anon_is("::", "::");
    anon_is("fe80::1", "fe80::");
    anon_is("64:ff9b::192.0.2.33", "64:ff9b::");  /* NAT64: the IPv4 goes */
}
END_TEST

START_TEST(anonymize_mapped)
{
    anon_is("::ffff:192.0.2.33", "192.0.2.0");
    anon_is("::FFFF:192.0.2.33", "192.0.2.0");
    anon_is("::ffff:c000:0221", "192.0.2.0");
    anon_is("0:0:0:0:0:ffff:203.0.113.77", "203.0.113.0");
    anon_is("::ffff:0.0.0.0", "0.0.0.0");
    /* not mapped: ::ffff:0:a.b.c.d (SIIT) and ::fffe:... stay IPv6 */
    anon_is("::ffff:0:192.0.2.33", "::");
    anon_is("::fffe:192.0.2.33", "::");
}
END_TEST

/* Addresses that carry an IPv4 address: it is anonymised as IPv4 is (issue 13). */
START_TEST(anonymize_embedded_v4)
{
    /* IPv4-compatible (deprecated) ::a.b.c.d: as IPv4 */
    anon_is("::1.2.3.4", "1.2.3.0");
    anon_is("::c000:221", "192.0.2.0");
    anon_is("0:0:0:0:0:0:203.0.113.77", "203.0.113.0");
    /* not compatible: ::1, ::2 and the like (first byte of the "IPv4" 0) */
    anon_is("::2", "::");
    anon_is("::0.255.1.2", "::");
    /* 6to4: 2002:AABB:CCDD::/48 is the IPv4 AA.BB.CC.DD; its last byte goes */
    anon_is("2002:c000:0204::1", "2002:c000:200::");
    anon_is("2002:c000:204:1234:5678::9", "2002:c000:200::");
    anon_is("2002:cb00:71ff::", "2002:cb00:7100::");
    anon_is("2002::1", "2002::");
    /* Teredo 2001:0::/32: server IPv4 (public), flags, port, then the client's
     * IPv4 XOR ffff:ffff in the last 32 bits: dropped with the rest of the /64 */
    anon_is("2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001:0:4136::");
    /* mapped: as IPv4 (see anonymize_mapped) */
    anon_is("::ffff:192.0.2.4", "192.0.2.0");
}
END_TEST

START_TEST(invalid)
{
    static const char *const bad[] = {
        "",
        " ",
        "1.2.3",
        "1.2.3.4.5",
        "256.1.1.1",
        "1.2.3.256",
        "01.2.3.4",
        "1.2.3.04",
        "0x1.2.3.4",
        "1.2.3.-4",
        " 1.2.3.4",
        "1.2.3.4 ",
        "1.2.3.4\n",
        "1.2.3.4/24",
        "1.2.3.4:80",
        "fe80::1%eth0",
        "fe80::1%1",
        "[::1]",
        "::1]",
        ":::",
        "1:2:3:4:5:6:7:8:9",
        "1:2:3:4:5:6:7",
        "1::2::3",
        "12345::",
        "g::",
        "::ffff:1.2.3",
        "::ffff:256.0.0.1",
        "localhost",
        "unknown",
        "\xff",
    };
    apr_size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        anon_is(bad[i], NULL);
        canon_is(bad[i], NULL);
    }
    anon_is(NULL, NULL);
    canon_is(NULL, NULL);
}
END_TEST

/* The network a client's password guesses count against. */
START_TEST(guess_key)
{
    ck_assert_str_eq(qrt_ip_guess_key(pool, "203.0.113.77"), "203.0.113.77");
    ck_assert_str_eq(qrt_ip_guess_key(pool, "::ffff:203.0.113.77"), "203.0.113.77");
    ck_assert_str_eq(qrt_ip_guess_key(pool, "2001:db8:1:2:aaaa::1"), "2001:db8:1:2::");
    ck_assert_str_eq(qrt_ip_guess_key(pool, "2001:DB8:1:2:ffff:ffff:ffff:ffff"),
                     "2001:db8:1:2::");
    ck_assert_str_eq(qrt_ip_guess_key(pool, "2001:db8:1:3::1"), "2001:db8:1:3::");
    ck_assert_str_eq(qrt_ip_guess_key(pool, "::1"), "::");
    ck_assert_str_eq(qrt_ip_guess_key(pool, "not an address"), "not an address");
    ck_assert_str_eq(qrt_ip_guess_key(pool, NULL), "");
}
END_TEST

START_TEST(canonical)
{
    canon_is("203.0.113.77", "203.0.113.77");
    canon_is("::ffff:203.0.113.77", "203.0.113.77");
    canon_is("::FFFF:CB00:714D", "203.0.113.77");
    canon_is("::", "::");
    canon_is("::1", "::1");
    canon_is("0:0:0:0:0:0:0:1", "::1");
    canon_is("1::", "1::");
    canon_is("2001:DB8::1", "2001:db8::1");
    canon_is("2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1");
    /* the longest run wins; the first one on a tie */
    canon_is("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1");
    canon_is("1:0:0:2:0:0:0:3", "1:0:0:2::3");
    canon_is("1:0:0:0:2:0:0:3", "1::2:0:0:3");
    /* a single zero group is not compressed */
    canon_is("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1");
    canon_is("1:2:3:4:5:6:7:0", "1:2:3:4:5:6:7:0");
    canon_is("0:1:2:3:4:5:6:7", "0:1:2:3:4:5:6:7");
    canon_is("1:2:3:4:5:6:0:0", "1:2:3:4:5:6::");
    canon_is("0:0:1:2:3:4:5:6", "::1:2:3:4:5:6");
    /* plain IPv6 that glibc's inet_ntop would write as a dotted quad */
    canon_is("::1:2", "::1:2");
    canon_is("::1.2.3.4", "::102:304");
    canon_is("::ffff:0:1.2.3.4", "::ffff:0:102:304");
    canon_is("2001:db8::ffff:1.2.3.4", "2001:db8::ffff:102:304");
    canon_is("ABCD:EF01:2345:6789:ABCD:EF01:2345:6789",
             "abcd:ef01:2345:6789:abcd:ef01:2345:6789");
    canon_is("fe80:0:0:0:0200:5eff:fe00:5301", "fe80::200:5eff:fe00:5301");
}
END_TEST

/* 1 when no group of the IPv6 text has a leading zero. */
static int groups_minimal(const char *c)
{
    const char *g = c;

    while (*g) {
        apr_size_t len = strcspn(g, ":");

        if (len > 1 && g[0] == '0') {
            return 0;
        }
        g += len;
        if (*g == ':') {
            g++;
        }
    }
    return 1;
}

/* Random addresses: the text reads back to the same bytes, has no leading
 * zeros or upper case, and agrees with inet_ntop whenever inet_ntop does
 * not print a dotted quad. */
START_TEST(random_v6)
{
    unsigned int seed = 777;
    int n;

    for (n = 0; n < 100000; n++) {
        unsigned char a[16], back[16];
        char text[INET6_ADDRSTRLEN], ref[INET6_ADDRSTRLEN];
        const char *c;
        int i;

        for (i = 0; i < 16; i += 2) {
            seed = seed * 1103515245 + 12345;
            /* zero groups are common so that runs get tested */
            if ((seed >> 16) % 3 == 0) {
                a[i] = a[i + 1] = 0;
            }
            else {
                a[i] = (unsigned char)(seed >> 8);
                a[i + 1] = (unsigned char)(seed >> 24);
            }
        }
        inet_ntop(AF_INET6, a, text, sizeof(text));
        c = qrt_ip_canonical(pool, text);
        ck_assert_ptr_nonnull(c);
        if (memcmp(a, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) == 0) {
            continue;
        }
        ck_assert_int_eq(inet_pton(AF_INET6, c, back), 1);
        ck_assert(memcmp(a, back, 16) == 0);
        ck_assert_msg(groups_minimal(c), "leading zero in %s", c);
        ck_assert_ptr_null(strpbrk(c, "ABCDEF."));
        ck_assert_ptr_null(strstr(c, ":::"));
        strcpy(ref, text);
        if (!strchr(ref, '.')) {
            ck_assert_str_eq(c, ref);
        }
        /* anonymising keeps the first 48 bits (but the last byte of a 6to4
         * address's IPv4); an IPv4-compatible address becomes IPv4 */
        {
            const char *an = qrt_ip_anonymize(pool, c);
            unsigned char ab[16], want[16];

            if (memcmp(a, "\0\0\0\0\0\0\0\0\0\0\0\0", 12) == 0 && a[12] != 0) {
                ck_assert_int_eq(inet_pton(AF_INET, an, ab), 1);
                ck_assert(memcmp(ab, a + 12, 3) == 0 && ab[3] == 0);
            }
            else {
                memset(want, 0, sizeof(want));
                memcpy(want, a, 6);
                if (a[0] == 0x20 && a[1] == 0x02) {
                    want[5] = 0;
                }
                ck_assert_int_eq(inet_pton(AF_INET6, an, ab), 1);
                ck_assert(memcmp(ab, want, 16) == 0);
            }
        }
        if ((n & 1023) == 0) {
            apr_pool_clear(pool);
        }
    }
}
END_TEST

static Suite *ip_suite(void)
{
    Suite *s = suite_create("qrt_ip");
    TCase *tc = tcase_create("ip");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, anonymize_v4);
    tcase_add_test(tc, anonymize_v6);
    tcase_add_test(tc, anonymize_mapped);
    tcase_add_test(tc, anonymize_embedded_v4);
    tcase_add_test(tc, invalid);
    tcase_add_test(tc, canonical);
    tcase_add_test(tc, guess_key);
    tcase_add_test(tc, random_v6);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(ip_suite());
}
