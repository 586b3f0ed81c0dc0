/* Unit tests for qrt_store_purge: the retention's edge, when passes run, and the
 * steps of a pass on a SQLite database: exactly the visits before the edge lose
 * address, user agent, referer, browser version, OS and device, in every tracker
 * (deleted ones too), with ties of visit_start across step boundaries; what the
 * aggregates read stays; each step reads and changes at most its batch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/wait.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>
#include <apr_dbd.h>

#include "qrt_schema.h"
#include "qrt_store_purge.h"
#include "qrt_check.h"
#include "qrt_check_db.h"

static apr_pool_t *pool;
static qrt_db_t db;
static const char *dir;

static void exec_sql(const char *sql)
{
    qrt_check_db_exec(&db, sql);
}

static apr_int64_t count(const char *sql)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_int64_t n = -1;

    ck_assert_int_eq(apr_dbd_select(db.driver, pool, db.handle, &res, sql, 0), 0);
    while (apr_dbd_get_row(db.driver, pool, res, &row, -1) == 0) {
        n = apr_atoi64(apr_dbd_get_entry(db.driver, row, 0));
    }
    return n;
}

static void setup(void)
{
    int i;

    apr_pool_create(&pool, NULL);
    dir = qrt_check_db_temp(pool, "store-purge", &db);
    exec_sql("INSERT INTO accounts VALUES (1, 'acme', 'professional', 0)");
    /* Trackers 2 and 5 (deleted) with visits; 3 with none. */
    exec_sql("INSERT INTO trackers (id, account_id, code, name, type, redirect_url, "
             "created_at, updated_at, deleted_at) VALUES "
             "(2, 1, 'aaaaaaaa', 'a', 'website', 'https://e.example/', 0, 0, NULL), "
             "(3, 1, 'bbbbbbbb', 'b', 'website', 'https://e.example/', 0, 0, NULL), "
             "(5, 1, 'cccccccc', 'c', 'website', 'https://e.example/', 0, 0, 9)");
    exec_sql("BEGIN");
    for (i = 0; i < 200; i++) {
        /* visit_start 1000 + i / 4: four visits share each second; tracker 5 gets
         * every third; NULL referers on some. */
        exec_sql(apr_psprintf(pool, "INSERT INTO visits (id, tracker_id, visit_start, "
                 "source, ip, country, city, browser, browser_version, os, device, referer, "
                 "user_agent, bot, visitor) VALUES (%d, %d, %d, 'scan', '192.0.2.0', 'DE', "
                 "'Berlin', 'Chrome', '120', 'Android', 'mobile', %s, 'UA %d', %d, "
                 "'%016x')", i + 1, i % 3 ? 2 : 5, 1000 + i / 4,
                 i % 5 ? "'https://r.example/'" : "NULL", i, i % 17 == 0, i % 13));
    }
    exec_sql("COMMIT");
}

static void teardown(void)
{
    qrt_check_db_remove(pool, &db, dir);
    apr_pool_destroy(pool);
}

/* Runs a pass over [lo, before) in steps of batch; returns rows erased. */
static int run_pass(apr_int64_t lo, apr_int64_t before, int batch, int *steps)
{
    qrt_purge_cursor_t c;
    int total = 0, purged, done = 0;

    *steps = 0;
    qrt_purge_cursor_init(&c, lo, before);
    while (!done) {
        ck_assert_int_eq(qrt_store_purge_step(&db, pool, &c, batch, &purged, &done),
                         APR_SUCCESS);
        ck_assert_int_le(purged, batch);
        total += purged;
        ck_assert_int_lt(++*steps, 1000);
    }
    return total;
}

START_TEST(test_edge)
{
    ck_assert_int_eq(qrt_purge_edge(86400 * 40 + 59, 30), 86400 * 10);
    ck_assert_int_eq(qrt_purge_edge(86400 * 40 + 61, 30), 86400 * 10 + 60);
    ck_assert_int_eq(qrt_purge_edge(86400 * 40, 1), 86400 * 39);
}
END_TEST

START_TEST(test_schedule)
{
    qrt_purge_state_t s;
    apr_int64_t now = 1800000000;

    memset(&s, 0, sizeof(s));
    ck_assert_int_eq(qrt_purge_due(&s, now, 0), 0);
    /* The first pass is a full one, up to the edge. */
    ck_assert_int_eq(qrt_purge_due(&s, now, 30), 1);
    ck_assert_int_eq(s.full, 1);
    ck_assert(s.c.lo == QRT_PURGE_TMIN && s.c.before == qrt_purge_edge(now, 30));
    ck_assert_int_eq(qrt_purge_due(&s, now + 5, 30), 1);      /* still that pass */
    ck_assert(s.c.before == qrt_purge_edge(now, 30));
    qrt_purge_finish(&s, now + 5, 1);
    ck_assert_int_eq(qrt_purge_due(&s, now + 6, 30), 0);
    ck_assert_int_eq(qrt_purge_due(&s, now + 5 + QRT_PURGE_EVERY - 1, 30), 0);
    /* Then from where the last one stopped. */
    ck_assert_int_eq(qrt_purge_due(&s, now + 5 + QRT_PURGE_EVERY, 30), 1);
    ck_assert_int_eq(s.full, 0);
    ck_assert(s.c.lo == qrt_purge_edge(now, 30));
    ck_assert(s.c.before == qrt_purge_edge(now + 5 + QRT_PURGE_EVERY, 30));
    /* A failed step: a minute later, the same range again. */
    qrt_purge_finish(&s, now + 700, 0);
    ck_assert_int_eq(qrt_purge_due(&s, now + 759, 30), 0);
    ck_assert_int_eq(qrt_purge_due(&s, now + 760, 30), 1);
    ck_assert(s.c.lo == qrt_purge_edge(now, 30));
    qrt_purge_finish(&s, now + 760, 1);
    /* A day after the last full pass, a full one again. */
    ck_assert_int_eq(qrt_purge_due(&s, now + 5 + QRT_PURGE_FULL, 30), 1);
    ck_assert_int_eq(s.full, 1);
    ck_assert(s.c.lo == QRT_PURGE_TMIN);
    /* Another retention: everything anew, a full pass at once. */
    ck_assert_int_eq(qrt_purge_due(&s, now + 5 + QRT_PURGE_FULL, 7), 1);
    ck_assert(s.full == 1 && s.c.before == qrt_purge_edge(now + 5 + QRT_PURGE_FULL, 7));
}
END_TEST

START_TEST(test_pass_erases_exactly_the_old_visits)
{
    int steps, batch;

    /* Visits before 1030 (ids 1..120) in small steps that split ties of visit_start. */
    for (batch = 3; batch <= 7; batch += 4) {
        ck_assert_int_eq(run_pass(QRT_PURGE_TMIN, 1030, batch, &steps),
                         batch == 3 ? 120 : 0);
        ck_assert_int_ge(steps, 120 / batch);
    }
    ck_assert_int_eq(count("SELECT COUNT(*) FROM visits WHERE visit_start < 1030 AND "
                           "(ip IS NOT NULL OR user_agent IS NOT NULL OR referer IS NOT NULL "
                           "OR browser_version IS NOT NULL OR os IS NOT NULL "
                           "OR device IS NOT NULL)"), 0);
    /* What the aggregates read stays, on every row. */
    ck_assert_int_eq(count("SELECT COUNT(*) FROM visits WHERE visitor IS NOT NULL AND "
                           "browser = 'Chrome' AND country = 'DE' AND city = 'Berlin' AND "
                           "source = 'scan'"), 200);
    ck_assert_int_eq(count("SELECT SUM(bot) FROM visits"), 12);
    /* The younger ones are whole. */
    ck_assert_int_eq(count("SELECT COUNT(*) FROM visits WHERE visit_start >= 1030 AND "
                           "ip IS NOT NULL AND user_agent IS NOT NULL AND os IS NOT NULL"), 80);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM visits WHERE visit_start >= 1030 AND "
                           "referer IS NULL"), 16);
    /* A later pass from the last edge: only what reached the new one. */
    ck_assert_int_eq(run_pass(1030, 1031, 2, &steps), 4);
    ck_assert_int_eq(run_pass(QRT_PURGE_TMIN, 2000, 1000, &steps), 76);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM visits WHERE ip IS NOT NULL"), 0);
}
END_TEST

/* The bytes of a file hold s (0 when the file is missing). */
static int file_holds(const char *name, const char *s)
{
    char *data = NULL;
    apr_size_t len = 0, n = strlen(s), i;
    FILE *f = fopen(apr_pstrcat(pool, dir, "/", name, NULL), "rb");
    int found = 0;

    if (!f) {
        return 0;
    }
    data = malloc(8 << 20);
    ck_assert_ptr_nonnull(data);
    len = fread(data, 1, 8 << 20, f);
    fclose(f);
    for (i = 0; i + n <= len && !found; i++) {
        found = !memcmp(data + i, s, n);
    }
    free(data);
    return found;
}

/* Visit rows whose user agent, referer or address id has no dictionary row. */
static apr_int64_t dangling(void)
{
    return count("SELECT COUNT(*) FROM visit_rows v WHERE NOT EXISTS (SELECT 1 FROM "
                 "visit_uas u WHERE u.id = v.ua_id) OR (v.ref_id IS NOT NULL AND NOT EXISTS "
                 "(SELECT 1 FROM visit_referers r WHERE r.id = v.ref_id)) OR (v.ip_id IS NOT "
                 "NULL AND NOT EXISTS (SELECT 1 FROM visit_ips i WHERE i.id = v.ip_id))");
}

/* After the walk, the dictionary rows no visit refers to are deleted, a bounded range
 * of ids a step, those still referred to kept, the user agent entries with a browser
 * name only kept; the generation moves; the bytes are gone from the file and the WAL. */
START_TEST(test_pass_deletes_the_strings_no_visit_refers_to)
{
    apr_int64_t gen0 = count("SELECT gen FROM visit_dict_gen");
    qrt_purge_cursor_t c;
    int steps, purged, done = 0;

    exec_sql("INSERT INTO visits (id, tracker_id, visit_start, source, ip, country, city, "
             "browser, user_agent, referer, bot, visitor) VALUES (201, 2, 1001, 'scan', "
             "'198.51.100.0', 'DE', 'Berlin', 'Chrome', 'UA unique-agent', "
             "'https://example.com/?user=alice', 0, '00000000000000aa')");
    ck_assert(file_holds("t.db", "user=alice") || file_holds("t.db-wal", "user=alice"));
    /* Visits before 1030 (ids 1..120 and 201), in steps of 3 ids at most. */
    qrt_purge_cursor_init(&c, QRT_PURGE_TMIN, 1030);
    for (steps = 0; !done; steps++) {
        apr_int64_t before = c.erased;

        ck_assert_int_eq(qrt_store_purge_step(&db, pool, &c, 3, &purged, &done),
                         APR_SUCCESS);
        ck_assert_int_le(c.erased - before, 3);
        ck_assert_int_lt(steps, 1000);
    }
    /* 'UA 0'..'UA 119' and the unique one, its referer and its address. */
    ck_assert_int_eq(c.erased, 123);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM visit_uas WHERE user_agent IS NOT NULL"), 80);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM visit_uas WHERE user_agent = 'UA 120'"), 1);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM visit_uas WHERE user_agent IS NULL AND "
                           "browser = 'Chrome'"), 1);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM visit_referers"), 1);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM visit_ips"), 1);
    ck_assert_int_eq(dangling(), 0);
    ck_assert_int_gt(count("SELECT gen FROM visit_dict_gen"), gen0);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM visits WHERE user_agent = 'UA 151' AND "
                           "referer IS NOT NULL AND ip = '192.0.2.0'"), 1);
    /* Gone from the bytes of the database, and of its WAL (emptied). */
    ck_assert(!file_holds("t.db", "user=alice") && !file_holds("t.db-wal", "user=alice"));
    ck_assert(!file_holds("t.db", "unique-agent") && !file_holds("t.db-wal", "unique-agent"));
    ck_assert(!file_holds("t.db", "198.51.100.0") && !file_holds("t.db-wal", "198.51.100.0"));
    /* Everything: the shared referer and address go too; a pass with nothing to
     * delete leaves the generation. */
    ck_assert_int_eq(run_pass(QRT_PURGE_TMIN, 2000, 50, &steps), 80);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM visit_uas WHERE user_agent IS NOT NULL"), 0);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM visit_referers"), 0);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM visit_ips"), 0);
    ck_assert_int_eq(dangling(), 0);
    ck_assert(!file_holds("t.db", "r.example") && !file_holds("t.db-wal", "r.example"));
    gen0 = count("SELECT gen FROM visit_dict_gen");
    ck_assert_int_eq(run_pass(QRT_PURGE_TMIN, 2000, 50, &steps), 0);
    ck_assert_int_eq(count("SELECT gen FROM visit_dict_gen"), gen0);
}
END_TEST

/* Another process holds the WAL's checkpoint lock (as another connection's checkpoint
 * does, such as each child's WAL thread every 100 ms) for `ms`: SQLite's unix VFS
 * locks byte 120 + 1 of the -shm file. Returns the holder's pid once it holds it. */
static pid_t hold_checkpoint_lock(int ms)
{
    int fds[2];
    char c;
    pid_t pid;

    ck_assert_int_eq(pipe(fds), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct flock l;
        int fd = open(apr_pstrcat(pool, dir, "/t.db-shm", NULL), O_RDWR);

        memset(&l, 0, sizeof(l));
        l.l_type = F_WRLCK;
        l.l_whence = SEEK_SET;
        l.l_start = 121;
        l.l_len = 1;
        if (fd < 0 || fcntl(fd, F_SETLK, &l) != 0) {
            _exit(1);
        }
        if (write(fds[1], "x", 1) != 1) {
            _exit(1);
        }
        usleep(ms * 1000);
        _exit(0);
    }
    close(fds[1]);
    ck_assert_int_eq(read(fds[0], &c, 1), 1);
    close(fds[0]);
    return pid;
}

/* A checkpoint of another connection under way when the pass ends: the pass waits
 * (steps that say so, QRT_PURGE_RETRY_MS apart) and empties the WAL once it is over,
 * instead of giving up after tries that all meet the same checkpoint. */
START_TEST(test_the_pass_waits_for_another_checkpoint_to_empty_the_wal)
{
    qrt_purge_cursor_t c;
    int steps = 0, waits = 0, purged, done = 0, status = -1;
    apr_time_t start;
    pid_t holder;

    exec_sql("INSERT INTO visits (id, tracker_id, visit_start, source, ip, country, city, "
             "browser, user_agent, referer, bot, visitor) VALUES (201, 2, 1001, 'scan', "
             "'198.51.100.0', 'DE', 'Berlin', 'Chrome', 'UA unique-agent', "
             "'https://example.com/?user=alice', 0, '00000000000000aa')");
    ck_assert(file_holds("t.db-wal", "user=alice"));
    holder = hold_checkpoint_lock(600);
    start = apr_time_now();
    qrt_purge_cursor_init(&c, QRT_PURGE_TMIN, 1030);
    while (!done) {
        ck_assert_int_eq(qrt_store_purge_step(&db, pool, &c, 50, &purged, &done),
                         APR_SUCCESS);
        if (c.waiting) {
            waits++;
            usleep(10000);
        }
        ck_assert_int_lt(++steps, 10000);
    }
    ck_assert_int_eq(waitpid(holder, &status, 0), holder);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_int_gt(waits, 0);
    ck_assert_int_eq(c.truncate_failed, 0);
    ck_assert_int_ge(apr_time_now() - start, apr_time_from_msec(500));
    ck_assert(!file_holds("t.db-wal", "user=alice") && !file_holds("t.db", "user=alice"));
    ck_assert(!file_holds("t.db-wal", "unique-agent") && !file_holds("t.db", "unique-agent"));
}
END_TEST

START_TEST(test_empty_and_inverted_ranges)
{
    int steps;

    ck_assert_int_eq(run_pass(QRT_PURGE_TMIN, 500, 10, &steps), 0);
    ck_assert_int_eq(run_pass(2000, 1500, 10, &steps), 0);
    ck_assert_int_eq(steps, 1);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM visits WHERE ip IS NOT NULL"), 200);
}
END_TEST

static Suite *store_purge_suite(void)
{
    Suite *s = suite_create("qrt_store_purge");
    TCase *tc = tcase_create("store_purge");

    tcase_add_test(tc, test_edge);
    tcase_add_test(tc, test_schedule);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_pass_erases_exactly_the_old_visits);
    tcase_add_test(tc, test_pass_deletes_the_strings_no_visit_refers_to);
    tcase_add_test(tc, test_the_pass_waits_for_another_checkpoint_to_empty_the_wal);
    tcase_add_test(tc, test_empty_and_inverted_ranges);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(store_purge_suite());
}
