/* qrt_resolve: the host libpq would look up, and lookups waited for a bound of time with
 * the last address found standing in for an answer that does not come. */
#include <netdb.h>
#include <string.h>
#include <unistd.h>
#include <check.h>
#include <apr_pools.h>
#include <apr_time.h>

#include "qrt_clock.h"
#include "qrt_resolve.h"
#include "qrt_check.h"

static apr_pool_t *pool;

static void setup(void)
{
    apr_pool_create(&pool, NULL);
}

static void teardown(void)
{
    apr_pool_destroy(pool);
}

static const char *host_of(const char *params)
{
    return qrt_resolve_pg_host(pool, params);
}

START_TEST(the_host_to_look_up)
{
    ck_assert_str_eq(host_of("host=db.example.com port=5432 dbname=q user=u"), "db.example.com");
    ck_assert_str_eq(host_of("dbname=q host = 'db.example.com' user=u"), "db.example.com");
    ck_assert_str_eq(host_of("password='a b\\' host=x' host=db\\ 1"), "db 1");
    ck_assert_str_eq(host_of("host=localhost"), "localhost");
    /* nothing to look up: a socket, an address, several hosts, hostaddr, a URI, no host */
    ck_assert_ptr_null(host_of("host=/var/run/postgresql dbname=q"));
    ck_assert_ptr_null(host_of("host=@abstract dbname=q"));
    ck_assert_ptr_null(host_of("host=127.0.0.1 port=5432"));
    ck_assert_ptr_null(host_of("host=::1"));
    ck_assert_ptr_null(host_of("host=a.example.com,b.example.com"));
    ck_assert_ptr_null(host_of("host=db.example.com hostaddr=10.0.0.5"));
    ck_assert_ptr_null(host_of("postgresql://u@db.example.com/q"));
    ck_assert_ptr_null(host_of("dbname=q user=u"));
    ck_assert_ptr_null(host_of("host="));
    ck_assert_ptr_null(host_of(NULL));
    /* not a string libpq reads: left to it */
    ck_assert_ptr_null(host_of("host=db.example.com password='open"));
    ck_assert_ptr_null(host_of("host db.example.com"));
    /* the last host= stands, as in libpq */
    ck_assert_str_eq(host_of("host=a.example.com host=b.example.com"), "b.example.com");
    /* the address, or each of a name's, as libpq's lists: the later keywords win */
    ck_assert_str_eq(qrt_resolve_pg_params(pool, "host=db.example.com dbname=q",
                                           "db.example.com", "10.1.2.3"),
                     "host=db.example.com dbname=q host='db.example.com' hostaddr=10.1.2.3");
    ck_assert_str_eq(qrt_resolve_pg_params(pool, "host=localhost", "localhost", "::1,127.0.0.1"),
                     "host=localhost host='localhost,localhost' hostaddr=::1,127.0.0.1");
    ck_assert_ptr_null(host_of(qrt_resolve_pg_params(pool, "host=db.example.com",
                                                     "db.example.com", "10.1.2.3")));
    ck_assert(qrt_resolve_addrs_valid("10.1.2.3"));
    ck_assert(qrt_resolve_addrs_valid("2001:db8::1,10.1.2.3"));
    ck_assert(!qrt_resolve_addrs_valid(""));
    ck_assert(!qrt_resolve_addrs_valid("10.1.2.3,"));
    ck_assert(!qrt_resolve_addrs_valid("10.1.2.3,,10.1.2.4"));
    ck_assert(!qrt_resolve_addrs_valid("10.1.2.3 hostaddr=10.9.9.9"));
    ck_assert(!qrt_resolve_addrs_valid("db.example.com"));
    ck_assert(!qrt_resolve_addrs_valid("1.1.1.1,1.1.1.2,1.1.1.3,1.1.1.4,1.1.1.5,1.1.1.6,"
                                       "1.1.1.7,1.1.1.8,1.1.1.9"));
}
END_TEST

START_TEST(a_connection_string_is_bounded_unless_it_says_how_long)
{
    ck_assert_str_eq(qrt_resolve_pg_connect_within(pool, "host=db dbname=q", 2),
                     "host=db dbname=q connect_timeout=2");
    /* the administrator's own bound stands, however written */
    ck_assert_str_eq(qrt_resolve_pg_connect_within(pool, "host=db connect_timeout=10", 2),
                     "host=db connect_timeout=10");
    ck_assert_str_eq(qrt_resolve_pg_connect_within(pool, "connect_timeout = '0' host=db", 2),
                     "connect_timeout = '0' host=db");
    /* a password that merely contains the word is no bound */
    ck_assert_str_eq(qrt_resolve_pg_connect_within(pool, "password='connect_timeout=9'", 2),
                     "password='connect_timeout=9' connect_timeout=2");
    /* a URI, or what libpq would not read, is left to libpq */
    ck_assert_str_eq(qrt_resolve_pg_connect_within(pool, "postgresql://u@db/q", 2),
                     "postgresql://u@db/q");
    ck_assert_str_eq(qrt_resolve_pg_connect_within(pool, "host=db password='open", 2),
                     "host=db password='open");
    ck_assert_ptr_null(qrt_resolve_pg_connect_within(pool, NULL, 2));
}
END_TEST

/* A lookup of the test's: the answer, how long it takes, how many were made. */
static volatile int fake_code;
static volatile int fake_ms;
static volatile int fake_calls;
static char fake_addr[QRT_ADDR_MAX] = "192.0.2.10";

static int fake_lookup(const char *host, char out[QRT_ADDR_MAX])
{
    (void)host;
    __atomic_add_fetch(&fake_calls, 1, __ATOMIC_SEQ_CST);
    if (fake_ms) {
        usleep((useconds_t)fake_ms * 1000);
    }
    if (fake_code == 0) {
        strcpy(out, fake_addr);
    }
    return fake_code;
}

static void fake(int code, int ms, const char *addr)
{
    fake_code = code;
    fake_ms = ms;
    fake_calls = 0;
    strcpy(fake_addr, addr);
}

#define MS(n) apr_time_from_msec(n)

START_TEST(an_answer_in_time_is_taken_and_kept_a_while)
{
    qrt_resolver_t *r = qrt_resolver_make("db.example.com", NULL, fake_lookup);
    char addr[QRT_ADDR_MAX];
    const char *why;

    fake(0, 0, "192.0.2.10");
    ck_assert_int_eq(qrt_resolve(r, MS(1000), MS(500), addr, &why), 1);
    ck_assert_str_eq(addr, "192.0.2.10");
    ck_assert_int_eq(fake_calls, 1);
    /* fresh: no other lookup */
    ck_assert_int_eq(qrt_resolve(r, MS(1000), MS(500), addr, &why), 1);
    ck_assert_int_eq(fake_calls, 1);
    /* past it, DNS moved the name: followed */
    fake(0, 0, "2001:db8::7");
    ck_assert_int_eq(qrt_resolve(r, MS(1000), 0, addr, &why), 1);
    ck_assert_str_eq(addr, "2001:db8::7");
    ck_assert_int_eq(fake_calls, 1);
}
END_TEST

START_TEST(a_stalled_lookup_gives_the_last_address_within_the_wait)
{
    qrt_resolver_t *r = qrt_resolver_make("db.example.com", "192.0.2.10", fake_lookup);
    char addr[QRT_ADDR_MAX];
    const char *why;
    apr_time_t t;
    int i;

    fake(0, 600, "192.0.2.20");
    t = qrt_clock_now();
    ck_assert_int_eq(qrt_resolve(r, MS(100), 0, addr, &why), 0);
    t = qrt_clock_now() - t;
    ck_assert_str_eq(addr, "192.0.2.10");
    ck_assert_str_eq(why, "no answer in time");
    ck_assert_int_ge(t, MS(100));
    ck_assert_int_lt(t, MS(500));
    /* one lookup in flight at a time: the next callers wait for that one */
    for (i = 0; i < 3; i++) {
        ck_assert_int_eq(qrt_resolve(r, MS(20), 0, addr, &why), 0);
    }
    ck_assert_int_eq(fake_calls, 1);
    /* its late answer is kept for the next */
    usleep(700000);
    qrt_resolver_known(r, addr);
    ck_assert_str_eq(addr, "192.0.2.20");
    ck_assert_int_eq(qrt_resolve(r, MS(100), MS(5000), addr, &why), 1);
    ck_assert_str_eq(addr, "192.0.2.20");
    ck_assert_int_eq(fake_calls, 1);
}
END_TEST

START_TEST(no_address_before_and_no_answer_is_none)
{
    qrt_resolver_t *r = qrt_resolver_make("db.example.com", "not an address", fake_lookup);
    char addr[QRT_ADDR_MAX];
    const char *why;

    fake(0, 300, "192.0.2.30");
    ck_assert_int_eq(qrt_resolve(r, MS(50), 0, addr, &why), -1);
    ck_assert_str_eq(why, "no answer in time");
    /* the lookup in flight answers the next caller */
    ck_assert_int_eq(qrt_resolve(r, MS(2000), 0, addr, &why), 1);
    ck_assert_str_eq(addr, "192.0.2.30");
    ck_assert_int_eq(fake_calls, 1);
}
END_TEST

START_TEST(a_failing_resolver_keeps_the_address_a_name_gone_does_not)
{
    qrt_resolver_t *r = qrt_resolver_make("db.example.com", "192.0.2.10", fake_lookup);
    char addr[QRT_ADDR_MAX];
    const char *why;

    fake(EAI_AGAIN, 0, "");
    ck_assert_int_eq(qrt_resolve(r, MS(1000), 0, addr, &why), 0);
    ck_assert_str_eq(addr, "192.0.2.10");
    ck_assert_str_eq(why, gai_strerror(EAI_AGAIN));
    fake(EAI_FAIL, 0, "");
    ck_assert_int_eq(qrt_resolve(r, MS(1000), 0, addr, &why), 0);
    fake(EAI_NONAME, 0, "");
    ck_assert_int_eq(qrt_resolve(r, MS(1000), 0, addr, &why), -1);
    ck_assert_str_eq(why, gai_strerror(EAI_NONAME));
    qrt_resolver_known(r, addr);
    ck_assert_str_eq(addr, "");
    /* an answer that is not an address counts as a failure */
    fake(0, 0, "db.example.com");
    ck_assert_int_eq(qrt_resolve(r, MS(1000), 0, addr, &why), -1);
}
END_TEST

START_TEST(a_lookup_aside_is_bounded)
{
    char addr[QRT_ADDR_MAX] = "";
    apr_time_t t;

    fake(0, 0, "192.0.2.40");
    ck_assert_int_eq(qrt_resolve_aside("db.example.com", MS(2000), fake_lookup, addr), 0);
    ck_assert_str_eq(addr, "192.0.2.40");
    fake(EAI_NONAME, 0, "");
    ck_assert_int_eq(qrt_resolve_aside("db.example.com", MS(2000), fake_lookup, addr),
                     EAI_NONAME);
    fake(0, 3000, "192.0.2.50");
    t = qrt_clock_now();
    ck_assert_int_eq(qrt_resolve_aside("db.example.com", MS(200), fake_lookup, addr),
                     EAI_AGAIN);
    t = qrt_clock_now() - t;
    ck_assert_int_ge(t, MS(200));
    ck_assert_int_lt(t, MS(2000));
    /* the system's own lookup of a name every machine has: each address once */
    ck_assert_int_eq(qrt_resolve_aside("localhost", MS(5000), NULL, addr), 0);
    ck_assert(qrt_resolve_addrs_valid(addr));
    ck_assert_ptr_nonnull(strstr(addr, "127.0.0.1"));
    ck_assert_ptr_null(strstr(strstr(addr, "127.0.0.1") + 1, "127.0.0.1"));
}
END_TEST

static Suite *resolve_suite(void)
{
    Suite *s = suite_create("qrt_resolve");
    TCase *tc = tcase_create("resolve");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, the_host_to_look_up);
    tcase_add_test(tc, a_connection_string_is_bounded_unless_it_says_how_long);
    tcase_add_test(tc, an_answer_in_time_is_taken_and_kept_a_while);
    tcase_add_test(tc, a_stalled_lookup_gives_the_last_address_within_the_wait);
    tcase_add_test(tc, no_address_before_and_no_answer_is_none);
    tcase_add_test(tc, a_failing_resolver_keeps_the_address_a_name_gone_does_not);
    tcase_add_test(tc, a_lookup_aside_is_bounded);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(resolve_suite());
}
