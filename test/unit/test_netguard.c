/* qrt_netguard: refused and allowed destinations, QRTrackWebhookAllow's blocks. */
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <check.h>
#include <apr_general.h>
#include <apr_pools.h>

#include "qrt_netguard.h"
#include "qrt_check.h"

QRT_CHECK_POOL

static struct sockaddr_storage ss;

static const struct sockaddr *addr(const char *text)
{
    memset(&ss, 0, sizeof(ss));
    if (strchr(text, ':')) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

        s6->sin6_family = AF_INET6;
        ck_assert_int_eq(inet_pton(AF_INET6, text, &s6->sin6_addr), 1);
    }
    else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

        s4->sin_family = AF_INET;
        ck_assert_int_eq(inet_pton(AF_INET, text, &s4->sin_addr), 1);
    }
    return (const struct sockaddr *)&ss;
}

START_TEST(refused)
{
    static const char *no[] = {
        "0.0.0.0", "0.1.2.3", "127.0.0.1", "127.255.255.254", "10.0.0.1", "10.255.255.255",
        "172.16.0.1", "172.31.255.255", "192.168.1.1", "100.64.0.1", "100.127.255.255",
        "169.254.169.254", "169.254.0.1", "224.0.0.1", "239.255.255.250",
        "255.255.255.255", "240.0.0.1", "192.0.2.1", "198.51.100.7", "203.0.113.9",
        "198.18.0.1", "192.0.0.8",
        "::", "::1", "fe80::1", "febf::1", "fc00::1", "fd12:3456::1", "ff02::1", "fec0::1",
        "2001:db8::1", "100::1",
        /* IPv4 in IPv6 clothing */
        "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254",
        "::ffff:0:192.168.0.1", "::127.0.0.1", "::10.1.2.3", "64:ff9b::127.0.0.1",
        "64:ff9b::a9fe:a9fe", "64:ff9b:1::1", "2002:7f00:1::1", "2002:a00:1::",
        "::ffff:0.0.0.0", "::ffff:255.255.255.255",
        NULL
    };
    int i;

    for (i = 0; no[i]; i++) {
        ck_assert_msg(!qrt_netguard_allowed(addr(no[i]), NULL), "%s allowed", no[i]);
    }
}
END_TEST

START_TEST(allowed)
{
    static const char *yes[] = {
        "93.184.216.34", "8.8.8.8", "1.1.1.1", "172.15.255.255", "172.32.0.1",
        "100.63.255.255", "100.128.0.1", "169.253.0.1", "11.0.0.1", "223.255.255.255",
        "2606:4700::1111", "2a00:1450:4001::200e", "::ffff:8.8.8.8", "64:ff9b::808:808",
        "2002:808:808::1",
        NULL
    };
    int i;

    for (i = 0; yes[i]; i++) {
        ck_assert_msg(qrt_netguard_allowed(addr(yes[i]), NULL), "%s refused", yes[i]);
    }
    /* anything that is not IPv4 or IPv6 */
    memset(&ss, 0, sizeof(ss));
    ss.ss_family = AF_UNIX;
    ck_assert(!qrt_netguard_allowed((struct sockaddr *)&ss, NULL));
    ck_assert(!qrt_netguard_allowed(NULL, NULL));
}
END_TEST

START_TEST(allow_list)
{
    qrt_cidr_list_t l = { NULL };

    ck_assert_ptr_null(qrt_cidr_list_add(pool, &l, "127.0.0.1/32"));
    ck_assert_ptr_null(qrt_cidr_list_add(pool, &l, "10.1.0.0/16"));
    ck_assert_ptr_null(qrt_cidr_list_add(pool, &l, "fd00::/8"));
    ck_assert_ptr_null(qrt_cidr_list_add(pool, &l, "::1"));
    ck_assert(qrt_netguard_allowed(addr("127.0.0.1"), &l));
    ck_assert(!qrt_netguard_allowed(addr("127.0.0.2"), &l));
    ck_assert(qrt_netguard_allowed(addr("10.1.200.3"), &l));
    ck_assert(!qrt_netguard_allowed(addr("10.2.0.1"), &l));
    ck_assert(qrt_netguard_allowed(addr("fd12::1"), &l));
    ck_assert(!qrt_netguard_allowed(addr("fc12::1"), &l));
    ck_assert(qrt_netguard_allowed(addr("::1"), &l));
    /* the IPv4 an IPv6 address carries is matched too */
    ck_assert(qrt_netguard_allowed(addr("::ffff:127.0.0.1"), &l));
    ck_assert(!qrt_netguard_allowed(addr("::ffff:127.0.0.3"), &l));
    ck_assert(!qrt_netguard_allowed(addr("169.254.169.254"), &l));
    ck_assert(qrt_cidr_list_match(&l, addr("10.1.2.3")));
    ck_assert(!qrt_cidr_list_match(&l, addr("8.8.8.8")));
    /* 0.0.0.0/0 allows every IPv4 address */
    ck_assert_ptr_null(qrt_cidr_list_add(pool, &l, "0.0.0.0/0"));
    ck_assert(qrt_netguard_allowed(addr("169.254.169.254"), &l));
    ck_assert(!qrt_netguard_allowed(addr("fe80::1"), &l));
}
END_TEST

START_TEST(bad_blocks)
{
    static const char *bad[] = {
        "", "/", "127.0.0.1/", "127.0.0.1/33", "::/129", "10.1.2.3/8", "127.0.0.1/-1",
        "127.0.0.1/ 8", "127.0.0.1/8x", "localhost", "1.2.3", "fe80::1%eth0",
        "10.0.0.0/0008", "::1/64", NULL
    };
    qrt_cidr_list_t l = { NULL };
    int i;

    for (i = 0; bad[i]; i++) {
        ck_assert_msg(qrt_cidr_list_add(pool, &l, bad[i]) != NULL, "accepted '%s'", bad[i]);
    }
    ck_assert_ptr_null(l.cidrs);
}
END_TEST

static Suite *netguard_suite(void)
{
    Suite *s = suite_create("qrt_netguard");
    TCase *tc = tcase_create("netguard");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, refused);
    tcase_add_test(tc, allowed);
    tcase_add_test(tc, allow_list);
    tcase_add_test(tc, bad_blocks);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(netguard_suite());
}
