/* Unit tests for qrt_spool: the node's spool of visits and snapshot of codes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
#include <sqlite3.h>
#include <apr_general.h>
#include <apr_strings.h>

#include "qrt_spool.h"
#include "qrt_check.h"

QRT_CHECK_POOL

static char dir[64];

static void dir_setup(void)
{
    setup();
    strcpy(dir, "/tmp/qrt-spool-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void dir_teardown(void)
{
    char cmd[96];

    apr_snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    teardown();
    ck_assert_int_eq(system(cmd), 0);
}

static const char *path(const char *name)
{
    return apr_pstrcat(pool, dir, "/", name, NULL);
}

static qrt_visit_t visit(apr_int64_t tracker, apr_int64_t t)
{
    qrt_visit_t v;

    memset(&v, 0, sizeof(v));
    v.tracker_id = tracker;
    v.visit_start = t;
    v.source = "scan";
    v.ip = "203.0.113.0";
    v.user_agent = "Mozilla/5.0 (iPhone)";
    v.device = "mobile";
    v.visitor = 77;
    return v;
}

static qrt_spool_t *open_kind(const char *name, qrt_spool_kind_t kind, apr_pool_t *p)
{
    qrt_spool_t *s = NULL;
    const char *err = NULL;

    ck_assert_int_eq(qrt_spool_open(p, path(name), kind, &s, &err), APR_SUCCESS);
    ck_assert_ptr_nonnull(s);
    return s;
}

START_TEST(a_lost_commits_visits_keep_its_token_and_their_numbers)
{
    qrt_spool_t *s = open_kind("live.db", QRT_SPOOL_VISITS, pool);
    qrt_visit_t in[6], *out;
    apr_int64_t *seq, token, from, upto;
    int i, got;

    for (i = 0; i < 6; i++) {
        in[i] = visit(10 + i, 1000 + i);
    }
    ck_assert_int_eq(qrt_spool_live(s, &token, &from, &upto), APR_SUCCESS);
    ck_assert(token == 0 && from == 0 && upto == 0);
    ck_assert_int_eq(qrt_spool_append(s, in, 2, 0), APR_SUCCESS);
    ck_assert_int_eq(qrt_spool_append(s, in + 2, 3, -77), APR_SUCCESS);
    ck_assert_int_eq(qrt_spool_append(s, in + 5, 1, 0), APR_SUCCESS);
    ck_assert_int_eq(qrt_spool_live(s, &token, &from, &upto), APR_SUCCESS);
    ck_assert_int_eq(token, -77);
    ck_assert_int_eq(qrt_spool_peek(s, pool, 10, &seq, &out, &got), APR_SUCCESS);
    ck_assert_int_eq(got, 6);
    /* the second batch's numbers, not the others' */
    ck_assert_int_eq(from, seq[2]);
    ck_assert_int_eq(upto, seq[4]);
    ck_assert_int_eq(out[2].tracker_id, 12);
    ck_assert_int_eq(out[4].tracker_id, 14);
}
END_TEST

START_TEST(visits_come_back_in_order_and_go_once_dropped)
{
    qrt_spool_t *s = open_kind("spool.db", QRT_SPOOL_VISITS, pool);
    qrt_visit_t in[5], *out;
    apr_int64_t *seq, n;
    int i, got;

    for (i = 0; i < 5; i++) {
        in[i] = visit(10 + i, 1000 + i);
    }
    ck_assert_int_eq(qrt_spool_append(s, in, 3, 0), APR_SUCCESS);
    ck_assert_int_eq(qrt_spool_append(s, in + 3, 2, 0), APR_SUCCESS);
    ck_assert_int_eq(qrt_spool_count(s, &n), APR_SUCCESS);
    ck_assert_int_eq(n, 5);
    ck_assert_int_eq(qrt_spool_peek(s, pool, 4, &seq, &out, &got), APR_SUCCESS);
    ck_assert_int_eq(got, 4);
    for (i = 0; i < got; i++) {
        ck_assert_int_eq(out[i].tracker_id, 10 + i);
        ck_assert_int_eq(out[i].visit_start, 1000 + i);
        ck_assert_str_eq(out[i].user_agent, "Mozilla/5.0 (iPhone)");
        ck_assert_int_eq(out[i].visitor, 77);
        ck_assert(i == 0 || seq[i] > seq[i - 1]);
    }
    ck_assert_int_eq(qrt_spool_drop(s, seq[2]), APR_SUCCESS);
    ck_assert_int_eq(qrt_spool_peek(s, pool, 10, &seq, &out, &got), APR_SUCCESS);
    ck_assert_int_eq(got, 2);
    ck_assert_int_eq(out[0].tracker_id, 13);
    ck_assert_int_eq(out[1].tracker_id, 14);
    ck_assert_int_eq(qrt_spool_drop(s, seq[1]), APR_SUCCESS);
    ck_assert_int_eq(qrt_spool_count(s, &n), APR_SUCCESS);
    ck_assert_int_eq(n, 0);
}
END_TEST

START_TEST(sequence_numbers_are_never_reused_after_a_drop)
{
    qrt_spool_t *s = open_kind("spool.db", QRT_SPOOL_VISITS, pool);
    qrt_visit_t v = visit(1, 1), *out;
    apr_int64_t *seq, first;
    int got;

    ck_assert_int_eq(qrt_spool_append(s, &v, 1, 0), APR_SUCCESS);
    ck_assert_int_eq(qrt_spool_peek(s, pool, 1, &seq, &out, &got), APR_SUCCESS);
    first = seq[0];
    ck_assert_int_eq(qrt_spool_drop(s, first), APR_SUCCESS);
    ck_assert_int_eq(qrt_spool_append(s, &v, 1, 0), APR_SUCCESS);
    ck_assert_int_eq(qrt_spool_peek(s, pool, 1, &seq, &out, &got), APR_SUCCESS);
    ck_assert_int_eq(got, 1);
    ck_assert_int_gt(seq[0], first);
}
END_TEST

typedef struct {
    int n;
    apr_int64_t seq[8], tracker[8], at[8];
    char why[8][64];
} refused_seen;

static apr_status_t see_refused(void *ctx, apr_int64_t seq, const qrt_visit_t *v,
                                const char *why, apr_int64_t at)
{
    refused_seen *r = ctx;

    ck_assert_int_lt(r->n, 8);
    ck_assert_str_eq(v->user_agent, "Mozilla/5.0 (iPhone)");
    r->seq[r->n] = seq;
    r->tracker[r->n] = v->tracker_id;
    r->at[r->n] = at;
    apr_cpystrn(r->why[r->n], why, sizeof(r->why[0]));
    r->n++;
    return APR_SUCCESS;
}

/* Asserts that s holds n visits, of trackers[0..n) in that order (sequence numbers in
 * *seq). */
static void spool_holds(qrt_spool_t *s, int n, const apr_int64_t *trackers,
                        apr_int64_t **seq)
{
    qrt_visit_t *out;
    apr_int64_t count;
    int i, got;

    ck_assert_int_eq(qrt_spool_count(s, &count), APR_SUCCESS);
    ck_assert_int_eq(count, n);
    ck_assert_int_eq(qrt_spool_peek(s, pool, n + 1, seq, &out, &got), APR_SUCCESS);
    ck_assert_int_eq(got, n);
    for (i = 0; i < n; i++) {
        ck_assert_int_eq(out[i].tracker_id, trackers[i]);
        ck_assert_int_eq(out[i].visitor, 77);
    }
}

START_TEST(a_refused_visit_is_set_aside_and_put_back_behind_the_others)
{
    qrt_spool_t *s = open_kind("spool.db", QRT_SPOOL_VISITS, pool);
    qrt_visit_t in[4], *out;
    apr_int64_t *seq, n, refused_seq, last;
    refused_seen seen;
    int i, got;

    for (i = 0; i < 4; i++) {
        in[i] = visit(20 + i, 2000 + i);
    }
    ck_assert_int_eq(qrt_spool_append(s, in, 4, 0), APR_SUCCESS);
    ck_assert_int_eq(qrt_spool_peek(s, pool, 4, &seq, &out, &got), APR_SUCCESS);
    refused_seq = seq[1];
    last = seq[3];
    ck_assert_int_eq(qrt_spool_refuse(s, refused_seq, "CHECK constraint failed", 1700000000),
                     APR_SUCCESS);
    /* out of the spool: the others come back, in order */
    spool_holds(s, 3, (const apr_int64_t[]){ 20, 22, 23 }, &seq);
    /* kept with why and when */
    ck_assert_int_eq(qrt_spool_refused_count(s, &n), APR_SUCCESS);
    ck_assert_int_eq(n, 1);
    memset(&seen, 0, sizeof(seen));
    ck_assert_int_eq(qrt_spool_refused_each(s, pool, see_refused, &seen), APR_SUCCESS);
    ck_assert_int_eq(seen.n, 1);
    ck_assert_int_eq(seen.seq[0], refused_seq);
    ck_assert_int_eq(seen.tracker[0], 21);
    ck_assert_int_eq(seen.at[0], 1700000000);
    ck_assert_str_eq(seen.why[0], "CHECK constraint failed");
    /* a refused visit survives the file's close */
    s = open_kind("spool.db", QRT_SPOOL_VISITS, pool);
    ck_assert_int_eq(qrt_spool_drop(s, last), APR_SUCCESS);
    ck_assert_int_eq(qrt_spool_refused_count(s, &n), APR_SUCCESS);
    ck_assert_int_eq(n, 1);
    /* put back: at the end, under a new sequence number (past the ones dropped, which
     * the database's mark may have passed) */
    ck_assert_int_eq(qrt_spool_append(s, in + 3, 1, 0), APR_SUCCESS);
    ck_assert_int_eq(qrt_spool_refused_retry(s, &n), APR_SUCCESS);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(qrt_spool_refused_count(s, &n), APR_SUCCESS);
    ck_assert_int_eq(n, 0);
    spool_holds(s, 2, (const apr_int64_t[]){ 23, 21 }, &seq);
    ck_assert_int_gt(seq[1], last);
    ck_assert_int_eq(qrt_spool_refused_retry(s, &n), APR_SUCCESS);
    ck_assert_int_eq(n, 0);
}
END_TEST

START_TEST(refused_visits_past_the_retention_go)
{
    qrt_spool_t *s = open_kind("spool.db", QRT_SPOOL_VISITS, pool);
    qrt_visit_t in[3];
    apr_int64_t *seq, n;
    refused_seen seen;
    int i;

    for (i = 0; i < 3; i++) {
        in[i] = visit(30 + i, 3000 + i);
    }
    ck_assert_int_eq(qrt_spool_append(s, in, 3, 0), APR_SUCCESS);
    spool_holds(s, 3, (const apr_int64_t[]){ 30, 31, 32 }, &seq);
    ck_assert_int_eq(qrt_spool_refuse(s, seq[0], "old", 100), APR_SUCCESS);
    ck_assert_int_eq(qrt_spool_refuse(s, seq[1], "new", 200), APR_SUCCESS);
    ck_assert_int_eq(qrt_spool_refused_expire(s, 100, &n), APR_SUCCESS);
    ck_assert_int_eq(n, 0);
    ck_assert_int_eq(qrt_spool_refused_expire(s, 150, &n), APR_SUCCESS);
    ck_assert_int_eq(n, 1);
    memset(&seen, 0, sizeof(seen));
    ck_assert_int_eq(qrt_spool_refused_each(s, pool, see_refused, &seen), APR_SUCCESS);
    ck_assert_int_eq(seen.n, 1);
    ck_assert_int_eq(seen.tracker[0], 31);
    ck_assert_str_eq(seen.why[0], "new");
    /* the spool's own visits are not touched */
    spool_holds(s, 1, (const apr_int64_t[]){ 32 }, &seq);
}
END_TEST

START_TEST(a_replay_halves_down_to_the_refused_visit_then_grows_back)
{
    qrt_replay_t r;
    int i;

    qrt_replay_init(&r, 500);
    ck_assert_int_eq(r.size, 500);
    /* 500 refused: 250, 125, ... down to one */
    ck_assert_int_eq(qrt_replay_refused(&r, 1, 500), QRT_REPLAY_SMALLER);
    ck_assert_int_eq(r.size, 250);
    qrt_replay_ok(&r);                  /* the first 250 went in */
    ck_assert_int_eq(r.size, 500);
    for (i = 0; r.size > 1; i++) {
        ck_assert_int_eq(qrt_replay_refused(&r, 251, r.size), QRT_REPLAY_SMALLER);
    }
    ck_assert_int_eq(i, 8);
    /* alone at the head: tried QRT_REPLAY_TRIES times, then set aside */
    for (i = 1; i < QRT_REPLAY_TRIES; i++) {
        ck_assert_int_eq(qrt_replay_refused(&r, 251, 1), QRT_REPLAY_PAUSE);
    }
    ck_assert_int_eq(qrt_replay_refused(&r, 251, 1), QRT_REPLAY_REFUSE);
    /* the next head starts its count afresh, as does one after a success */
    ck_assert_int_eq(qrt_replay_refused(&r, 252, 1), QRT_REPLAY_PAUSE);
    qrt_replay_ok(&r);
    ck_assert_int_eq(r.size, 2);
    ck_assert_int_eq(qrt_replay_refused(&r, 252, 1), QRT_REPLAY_PAUSE);
    ck_assert_int_eq(qrt_replay_refused(&r, 253, 1), QRT_REPLAY_PAUSE);
    ck_assert_int_eq(qrt_replay_refused(&r, 253, 1), QRT_REPLAY_PAUSE);
    ck_assert_int_eq(qrt_replay_refused(&r, 253, 1), QRT_REPLAY_REFUSE);
    for (i = 0; i < 9; i++) {
        qrt_replay_ok(&r);
    }
    ck_assert_int_eq(r.size, 500);
}
END_TEST

START_TEST(the_node_id_is_made_once_and_kept)
{
    apr_pool_t *p1, *p2;
    qrt_spool_t *a, *b;
    char node[17];

    apr_pool_create(&p1, pool);
    a = open_kind("spool.db", QRT_SPOOL_VISITS, p1);
    ck_assert_int_eq(strlen(qrt_spool_node(a)), 16);
    strcpy(node, qrt_spool_node(a));
    apr_pool_destroy(p1);
    apr_pool_create(&p2, pool);
    b = open_kind("spool.db", QRT_SPOOL_VISITS, p2);
    ck_assert_str_eq(qrt_spool_node(b), node);
    apr_pool_destroy(p2);
}
END_TEST

/* A process killed right after its append returned: the visits are in the file. */
START_TEST(an_append_survives_the_death_of_its_process)
{
    qrt_spool_t *s;
    apr_int64_t n;
    int status;
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        apr_pool_t *cp;
        qrt_visit_t v[3] = { visit(1, 1), visit(2, 2), visit(3, 3) };

        apr_pool_create(&cp, NULL);
        s = open_kind("spool.db", QRT_SPOOL_VISITS, cp);
        _exit(qrt_spool_append(s, v, 3, 0) == APR_SUCCESS ? 0 : 1);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    s = open_kind("spool.db", QRT_SPOOL_VISITS, pool);
    ck_assert_int_eq(qrt_spool_count(s, &n), APR_SUCCESS);
    ck_assert_int_eq(n, 3);
}
END_TEST

START_TEST(files_are_made_0640_whatever_the_umask)
{
    mode_t old = umask(0);
    struct stat st;
    qrt_spool_t *s = open_kind("spool.db", QRT_SPOOL_VISITS, pool);
    qrt_visit_t v = visit(1, 1);

    umask(old);
    ck_assert_int_eq(qrt_spool_append(s, &v, 1, 0), APR_SUCCESS);
    ck_assert_int_eq(stat(path("spool.db"), &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0640);
    ck_assert_int_eq(stat(path("spool.db-wal"), &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0640);
}
END_TEST

START_TEST(the_snapshot_answers_sweeps_and_keeps_its_numbers)
{
    qrt_spool_t *s = open_kind("snap.db", QRT_SPOOL_SNAPSHOT, pool);
    apr_int64_t id = 0, n, v;
    const char *url = NULL, *route = "x";

    ck_assert_int_eq(qrt_snap_get(s, pool, "abc", &id, &url, &route), APR_NOTFOUND);
    ck_assert_int_eq(qrt_snap_begin(s), APR_SUCCESS);
    ck_assert_int_eq(qrt_snap_put(s, "abc", 7, "https://example.com/a", NULL, 1), APR_SUCCESS);
    ck_assert_int_eq(qrt_snap_put(s, "def", 8, "https://example.com/d", NULL, 1), APR_SUCCESS);
    ck_assert_int_eq(qrt_snap_put(s, "x'; DROP TABLE codes; --", 9, "https://e.com/?q=%s", NULL, 1),
                     APR_SUCCESS);
    ck_assert_int_eq(qrt_snap_commit(s), APR_SUCCESS);
    ck_assert_int_eq(qrt_snap_get(s, pool, "abc", &id, &url, &route), APR_SUCCESS);
    ck_assert_int_eq(id, 7);
    ck_assert_str_eq(url, "https://example.com/a");
    ck_assert_ptr_null(route);
    ck_assert_int_eq(qrt_snap_get(s, pool, "x'; DROP TABLE codes; --", &id, &url, &route),
                     APR_SUCCESS);
    ck_assert_str_eq(url, "https://e.com/?q=%s");

    /* A new destination, a deleted code, and a sweep that saw only abc. */
    ck_assert_int_eq(qrt_snap_begin(s), APR_SUCCESS);
    ck_assert_int_eq(qrt_snap_put(s, "abc", 7, "https://example.com/b", "{\"max_scans\":3}", 2),
                     APR_SUCCESS);
    ck_assert_int_eq(qrt_snap_del(s, "def"), APR_SUCCESS);
    ck_assert_int_eq(qrt_snap_sweep(s, 2), APR_SUCCESS);
    ck_assert_int_eq(qrt_snap_meta_set(s, "gen", 2), APR_SUCCESS);
    ck_assert_int_eq(qrt_snap_commit(s), APR_SUCCESS);
    ck_assert_int_eq(qrt_snap_get(s, pool, "abc", &id, &url, &route), APR_SUCCESS);
    ck_assert_str_eq(url, "https://example.com/b");
    ck_assert_str_eq(route, "{\"max_scans\":3}");
    ck_assert_int_eq(qrt_snap_get(s, pool, "def", &id, &url, &route), APR_NOTFOUND);
    ck_assert_int_eq(qrt_snap_count(s, &n), APR_SUCCESS);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(qrt_snap_meta_get(s, "gen", &v), APR_SUCCESS);
    ck_assert_int_eq(v, 2);
    ck_assert_int_eq(qrt_snap_meta_get(s, "never", &v), APR_SUCCESS);
    ck_assert_int_eq(v, 0);

    /* A transaction rolled back leaves the snapshot as it was. */
    ck_assert_int_eq(qrt_snap_begin(s), APR_SUCCESS);
    ck_assert_int_eq(qrt_snap_del(s, "abc"), APR_SUCCESS);
    qrt_snap_rollback(s);
    ck_assert_int_eq(qrt_snap_get(s, pool, "abc", &id, &url, &route), APR_SUCCESS);
}
END_TEST

/* A snapshot file from before codes kept their routing starts again, numbers and all:
 * the next sweep then reads every code with its routing. */
/* A tool handed a path tells a spool from another SQLite file (a node's main database, a
 * snapshot, an empty file) without writing to it. */
START_TEST(a_spool_is_told_from_other_files_without_writing)
{
    sqlite3 *db;
    struct stat before, after;
    const char *why = NULL;

    (void)open_kind("spool.db", QRT_SPOOL_VISITS, pool);
    ck_assert_int_eq(qrt_spool_is_spool(path("spool.db"), &why), 1);
    ck_assert_ptr_null(why);
    (void)open_kind("snap.db", QRT_SPOOL_SNAPSHOT, pool);
    ck_assert_int_eq(qrt_spool_is_spool(path("snap.db"), &why), 0);
    ck_assert_str_eq(why, "it has not the tables of a node's spool");
    ck_assert_int_eq(sqlite3_open(path("main.db"), &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, "CREATE TABLE trackers (id INTEGER PRIMARY KEY)", NULL,
                                  NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    ck_assert_int_eq(stat(path("main.db"), &before), 0);
    ck_assert_int_eq(qrt_spool_is_spool(path("main.db"), &why), 0);
    ck_assert_int_eq(stat(path("main.db"), &after), 0);
    ck_assert_int_eq(before.st_size, after.st_size);
    ck_assert_int_eq(before.st_mtime, after.st_mtime);
    ck_assert_int_eq(sqlite3_open(path("main.db"), &db), SQLITE_OK);
    {
        sqlite3_stmt *st;

        ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM sqlite_master", -1, &st,
                                            NULL), SQLITE_OK);
        ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
        ck_assert_int_eq(sqlite3_column_int(st, 0), 1);
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    fclose(fopen(path("empty"), "w"));
    ck_assert_int_eq(qrt_spool_is_spool(path("empty"), &why), 0);
    {
        FILE *f = fopen(path("text"), "w");

        fputs("not a database at all, just words\n", f);
        fclose(f);
    }
    ck_assert_int_eq(qrt_spool_is_spool(path("text"), &why), 0);
    ck_assert_str_eq(why, "it cannot be read as an SQLite database");
}
END_TEST

START_TEST(a_snapshot_without_routing_starts_again)
{
    sqlite3 *db;
    qrt_spool_t *s;
    apr_int64_t n = -1, v = -1;

    ck_assert_int_eq(sqlite3_open(path("old.db"), &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, "CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT "
                                  "NOT NULL); INSERT INTO meta VALUES ('hwm', '99'); "
                                  "CREATE TABLE codes (code TEXT PRIMARY KEY, tracker_id "
                                  "INTEGER NOT NULL, url TEXT NOT NULL, gen INTEGER NOT NULL) "
                                  "WITHOUT ROWID; INSERT INTO codes VALUES ('abc', 1, "
                                  "'https://e.com/', 1)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    s = open_kind("old.db", QRT_SPOOL_SNAPSHOT, pool);
    ck_assert_int_eq(qrt_snap_count(s, &n), APR_SUCCESS);
    ck_assert_int_eq(n, 0);
    ck_assert_int_eq(qrt_snap_meta_get(s, "hwm", &v), APR_SUCCESS);
    ck_assert_int_eq(v, 0);
    ck_assert_int_eq(qrt_snap_put(s, "abc", 1, "https://e.com/", "{}", 1), APR_SUCCESS);
}
END_TEST

START_TEST(a_file_that_cannot_be_made_says_why)
{
    qrt_spool_t *s = NULL;
    const char *err = NULL;

    ck_assert_int_ne(qrt_spool_open(pool, "/nonexistent-dir/spool.db", QRT_SPOOL_VISITS,
                                    &s, &err), APR_SUCCESS);
    ck_assert_ptr_null(s);
    ck_assert_ptr_nonnull(err);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent-dir/spool.db"));
}
END_TEST

static Suite *spool_suite(void)
{
    Suite *s = suite_create("qrt_spool");
    TCase *tc = tcase_create("spool");

    tcase_add_checked_fixture(tc, dir_setup, dir_teardown);
    tcase_add_test(tc, visits_come_back_in_order_and_go_once_dropped);
    tcase_add_test(tc, a_lost_commits_visits_keep_its_token_and_their_numbers);
    tcase_add_test(tc, sequence_numbers_are_never_reused_after_a_drop);
    tcase_add_test(tc, a_refused_visit_is_set_aside_and_put_back_behind_the_others);
    tcase_add_test(tc, refused_visits_past_the_retention_go);
    tcase_add_test(tc, a_replay_halves_down_to_the_refused_visit_then_grows_back);
    tcase_add_test(tc, the_node_id_is_made_once_and_kept);
    tcase_add_test(tc, an_append_survives_the_death_of_its_process);
    tcase_add_test(tc, files_are_made_0640_whatever_the_umask);
    tcase_add_test(tc, the_snapshot_answers_sweeps_and_keeps_its_numbers);
    tcase_add_test(tc, a_snapshot_without_routing_starts_again);
    tcase_add_test(tc, a_file_that_cannot_be_made_says_why);
    tcase_add_test(tc, a_spool_is_told_from_other_files_without_writing);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(spool_suite());
}
