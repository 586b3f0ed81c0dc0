/* Unit tests for qrt_webhook: event names, secrets, message ids, destination URLs, the
 * check of literal addresses and the events' bodies. */
#include <string.h>

#include <check.h>
#include <apr_general.h>
#include <apr_base64.h>
#include <apr_strings.h>

#include "qrt_webhook.h"
#include "qrt_netguard.h"
#include "qrt_check.h"

QRT_CHECK_POOL

START_TEST(event_names)
{
    static const char *const names[] = { "scan.created", "click.created", "tracker.created",
                                         "tracker.updated", "tracker.deleted",
                                         "tracker.expired" };
    int i;
    json_t *all;

    for (i = 0; i < 6; i++) {
        ck_assert_int_eq(qrt_webhook_event_bit(names[i]), 1 << i);
        ck_assert_str_eq(qrt_webhook_event_name(1 << i), names[i]);
    }
    ck_assert_int_eq(qrt_webhook_event_bit("scan.deleted"), 0);
    ck_assert_int_eq(qrt_webhook_event_bit("Scan.created"), 0);
    ck_assert_int_eq(qrt_webhook_event_bit(""), 0);
    ck_assert_int_eq(qrt_webhook_event_bit(NULL), 0);
    ck_assert_ptr_null(qrt_webhook_event_name(3));
    ck_assert_ptr_null(qrt_webhook_event_name(64));
    /* the test event has a name, and is no event to subscribe to */
    ck_assert_str_eq(qrt_webhook_event_name(QRT_WEBHOOK_TEST), "webhook.test");
    ck_assert_int_eq(qrt_webhook_event_bit("webhook.test"), 0);
    all = qrt_webhook_events_json(QRT_WEBHOOK_TEST);
    ck_assert_int_eq(json_array_size(all), 0);
    json_decref(all);
    all = qrt_webhook_events_json(QRT_WEBHOOK_EVENTS_ALL);
    ck_assert_int_eq(json_array_size(all), 6);
    ck_assert_str_eq(json_string_value(json_array_get(all, 5)), "tracker.expired");
    json_decref(all);
}
END_TEST

START_TEST(secrets_and_message_ids)
{
    const char *a = qrt_webhook_secret_make(pool), *b = qrt_webhook_secret_make(pool);
    unsigned char key[64];
    const char *m = qrt_webhook_msg_id(pool), *n = qrt_webhook_msg_id(pool);

    ck_assert_ptr_nonnull(a);
    ck_assert(!strncmp(a, "whsec_", 6));
    ck_assert_uint_eq(strlen(a), 6 + 44);
    ck_assert_int_eq(apr_base64_decode_len(a + 6) >= 32, 1);
    ck_assert_int_eq(apr_base64_decode_binary(key, a + 6), 32);
    ck_assert_str_ne(a, b);
    ck_assert(!strncmp(m, "msg_", 4));
    ck_assert_uint_eq(strlen(m), 26);
    ck_assert_uint_eq(strspn(m + 4, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                    "0123456789-_"), 22);
    ck_assert_str_ne(m, n);
}
END_TEST

/* Giving way: QRT_WEBHOOK_BUSY_RATE batches a second or more, and a CPU some task waited
 * for QRT_WEBHOOK_STALL_SHARE percent of the time, or a worker that waited to run at least
 * as long as it ran (or a system that tells neither). */
START_TEST(deliveries_give_way_to_busy_scans)
{
    apr_int64_t ms100 = apr_time_from_msec(100);
    apr_int64_t stall = ms100 * QRT_WEBHOOK_STALL_SHARE / 100;
    apr_uint32_t per100 = QRT_WEBHOOK_BUSY_RATE / 10, per10s = QRT_WEBHOOK_BUSY_RATE * 10;

    /* the pressure measure */
    ck_assert_int_eq(qrt_webhook_give_way(per100, ms100, stall, 1000, 0), 1);
    ck_assert_int_eq(qrt_webhook_give_way(per100, ms100, ms100, 1000, 0), 1);
    ck_assert_int_eq(qrt_webhook_give_way(per100, ms100, stall - 1, 1000, 0), 0);
    ck_assert_int_eq(qrt_webhook_give_way(per100, ms100, 0, 1000, 0), 0);
    ck_assert_int_eq(qrt_webhook_give_way(per100 - 1, ms100, ms100, 1000, 0), 0);
    /* a worker that waited as long as it ran gives way under little pressure too */
    ck_assert_int_eq(qrt_webhook_give_way(per100, ms100, 0, 1000, 1000), 1);
    /* without the pressure measure the worker's own wait decides */
    ck_assert_int_eq(qrt_webhook_give_way(per100, ms100, -1, 1000, 1000), 1);
    ck_assert_int_eq(qrt_webhook_give_way(per100, ms100, -1, 1000, 5000), 1);
    ck_assert_int_eq(qrt_webhook_give_way(per100, ms100, -1, 1000, -1), 1);
    ck_assert_int_eq(qrt_webhook_give_way(per100, ms100, 0, 1000, -1), 0);
    ck_assert_int_eq(qrt_webhook_give_way(per100, ms100, -1, 1000, 999), 0);
    ck_assert_int_eq(qrt_webhook_give_way(per100, ms100, -1, 0, 0), 0);
    ck_assert_int_eq(qrt_webhook_give_way(per100 - 1, ms100, -1, 1000, 5000), 0);
    ck_assert_int_eq(qrt_webhook_give_way(0, ms100, ms100, 1000, 5000), 0);
    ck_assert_int_eq(qrt_webhook_give_way(1000, 0, 0, 1000, 5000), 0);
    ck_assert_int_eq(qrt_webhook_give_way(per10s - 1, apr_time_from_sec(10), -1, 1000, 5000), 0);
    ck_assert_int_eq(qrt_webhook_give_way(per10s, apr_time_from_sec(10), -1, 1000, 5000), 1);
    ck_assert_int_eq(qrt_webhook_give_way(per10s, apr_time_from_sec(10), apr_time_from_sec(3),
                                          1000, 0), 1);
    /* a count that wrapped: the caller's unsigned difference */
    ck_assert_int_eq(qrt_webhook_give_way((apr_uint32_t)(per100 - 2 - 0xFFFFFFFEu), ms100, -1,
                                          1000, 5000), 1);
}
END_TEST

/* A batch's ids, drawn at once: each well formed, none the same as another. */
START_TEST(message_ids_of_a_batch)
{
    const char **ids = qrt_webhook_msg_ids(pool, 300);
    int i, j;

    ck_assert_ptr_nonnull(ids);
    for (i = 0; i < 300; i++) {
        ck_assert(!strncmp(ids[i], "msg_", 4));
        ck_assert_uint_eq(strlen(ids[i]), 26);
        ck_assert_uint_eq(strspn(ids[i] + 4, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                             "0123456789-_"), 22);
        for (j = 0; j < i; j++) {
            ck_assert_str_ne(ids[i], ids[j]);
        }
    }
    ck_assert_ptr_nonnull(qrt_webhook_msg_ids(pool, 0));
}
END_TEST

START_TEST(urls)
{
    char *long_url = apr_pstrcat(pool, "https://hooks.example.com/",
                                 apr_pstrndup(pool, memset(apr_palloc(pool, 2100), 'a', 2100),
                                              2100), NULL);

    ck_assert_ptr_null(qrt_webhook_url_check(pool, "https://hooks.example.com/qr"));
    ck_assert_ptr_null(qrt_webhook_url_check(pool, "http://hooks.example.com:8080/x?a=b@c"));
    ck_assert_ptr_null(qrt_webhook_url_check(pool, "https://hooks.example.com/p@th"));
    ck_assert_ptr_nonnull(qrt_webhook_url_check(pool, NULL));
    ck_assert_ptr_nonnull(qrt_webhook_url_check(pool, "ftp://hooks.example.com/"));
    ck_assert_ptr_nonnull(qrt_webhook_url_check(pool, "//hooks.example.com/"));
    ck_assert_ptr_nonnull(qrt_webhook_url_check(pool, "https://u:p@hooks.example.com/"));
    ck_assert_ptr_nonnull(qrt_webhook_url_check(pool, "https://u@hooks.example.com"));
    ck_assert_ptr_nonnull(qrt_webhook_url_check(pool, long_url));
}
END_TEST

/* 1 when host is a literal address that is refused, 0 when it is a literal that is
 * not, -1 when it is no literal. */
static int refused(const char *host)
{
    struct sockaddr_storage ss;

    if (!qrt_netguard_literal(host, &ss)) {
        return -1;
    }
    return !qrt_netguard_allowed((const struct sockaddr *)&ss, NULL);
}

START_TEST(literal_addresses)
{
    static const char *const bad[] = {
        "127.0.0.1", "127.255.255.254", "10.0.0.1", "172.16.0.1", "172.31.255.255",
        "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.1",
        "255.255.255.255", "[::1]", "[::]", "[::ffff:127.0.0.1]", "[::ffff:10.0.0.1]",
        "[::ffff:169.254.169.254]", "[::127.0.0.1]", "[fe80::1]", "[fd00:ec2::254]",
        "[fc00::1]", "[ff02::1]", "[64:ff9b::a9fe:a9fe]", "[fec0::1]",
        /* documentation blocks: no receiver lives there (qrt_netguard refuses them) */
        "203.0.113.7", "[2001:db8::1]"
    };
    static const char *const good[] = {
        "93.184.216.34", "8.8.8.8", "172.32.0.1", "100.128.0.1", "192.169.0.1",
        "[2606:4700::1111]", "[::ffff:8.8.8.8]", "[64:ff9b::808:808]"
    };
    static const char *const names[] = {
        "hooks.example.com", "localhost", "127.0.0.1.nip.io", "[not-an-address]", "",
        "0x7f.1", "[::1"
    };
    apr_size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(refused(bad[i]) == 1, "%s", bad[i]);
    }
    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        ck_assert_msg(refused(good[i]) == 0, "%s", good[i]);
    }
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        ck_assert_msg(refused(names[i]) == -1, "%s", names[i]);
    }
    ck_assert_int_eq(refused(NULL), -1);
}
END_TEST

START_TEST(bodies)
{
    json_t *data = json_object(), *j;
    const char *body;

    json_object_set_new(data, "id", json_integer(7));
    body = qrt_webhook_body(pool, QRT_WEBHOOK_SCAN_CREATED, 1790000000, data);
    j = json_loads(body, 0, NULL);
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(json_object_size(j), 3);
    ck_assert_str_eq(json_string_value(json_object_get(j, "type")), "scan.created");
    ck_assert_str_eq(json_string_value(json_object_get(j, "timestamp")),
                     "2026-09-21T14:13:20+0000");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "data"), "id")), 7);
    json_decref(j);
}
END_TEST

static Suite *webhook_suite(void)
{
    Suite *s = suite_create("webhook");
    TCase *tc = tcase_create("webhook");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, event_names);
    tcase_add_test(tc, secrets_and_message_ids);
    tcase_add_test(tc, message_ids_of_a_batch);
    tcase_add_test(tc, deliveries_give_way_to_busy_scans);
    tcase_add_test(tc, urls);
    tcase_add_test(tc, literal_addresses);
    tcase_add_test(tc, bodies);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(webhook_suite());
}
