/* qrt_walvfs: a commit's WAL frames in one write, published only once written, on a
 * real file system (SQLite's own API, no apr_dbd). A second connection on SQLite's
 * plain "unix" VFS reads what the first one commits: it sees the file, never the
 * buffer. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <check.h>
#include <sqlite3.h>

#include "qrt_check.h"
#include "qrt_walvfs.h"

#define ROW_BYTES 3000              /* a row a little under a page: many pages a commit */

static char dir[64];

static void setup(void)
{
    strcpy(dir, "/tmp/qrt-walvfs-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static char *path_of(const char *name)
{
    static char buf[128];

    snprintf(buf, sizeof(buf), "%s/%s", dir, name);
    return buf;
}

static void exec_ok(sqlite3 *h, const char *sql)
{
    char *err = NULL;
    int rc = sqlite3_exec(h, sql, NULL, NULL, &err);

    ck_assert_msg(rc == SQLITE_OK, "%s: %s", sql, err ? err : "?");
}

static void setup_db(sqlite3 *h)
{
    sqlite3_busy_timeout(h, 5000);
    exec_ok(h, "PRAGMA journal_mode = WAL");
    exec_ok(h, "PRAGMA synchronous = NORMAL");
    exec_ok(h, "PRAGMA wal_autocheckpoint = 0");
    exec_ok(h, "CREATE TABLE IF NOT EXISTS r (id INTEGER PRIMARY KEY, body BLOB NOT NULL)");
}

/* A database in WAL mode as the module's connections use it (synchronous = NORMAL,
 * checkpoints left to someone else), through vfs (NULL: the default). */
static sqlite3 *open_db(const char *path, const char *vfs)
{
    sqlite3 *h = NULL;

    ck_assert_int_eq(sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                                     vfs), SQLITE_OK);
    setup_db(h);
    return h;
}

/* The same, its WAL writes gathered (as the store's connections are). */
static sqlite3 *open_gathered(const char *path)
{
    sqlite3 *h = open_db(path, NULL);

    ck_assert_int_eq(qrt_walvfs_enable(h), 1);
    return h;
}

static long long select_int(sqlite3 *h, const char *sql)
{
    sqlite3_stmt *st;
    long long v;

    ck_assert_int_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Rows first..first+n-1, each ROW_BYTES of a byte made from its id: SQLite's
 * result code. */
static int insert_rows(sqlite3 *h, int first, int n)
{
    static char body[ROW_BYTES];
    sqlite3_stmt *st;
    int i, rc;

    rc = sqlite3_prepare_v2(h, "INSERT INTO r (id, body) VALUES (?, ?)", -1, &st, NULL);
    for (i = 0; rc == SQLITE_OK && i < n; i++) {
        memset(body, 'a' + (first + i) % 26, sizeof(body));
        sqlite3_bind_int(st, 1, first + i);
        sqlite3_bind_blob(st, 2, body, sizeof(body), SQLITE_STATIC);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(h);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

/* The same rows in one transaction. */
static int commit_rows(sqlite3 *h, int first, int n)
{
    int rc;

    if ((rc = sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL)) != SQLITE_OK) {
        return rc;
    }
    rc = insert_rows(h, first, n);
    if (rc == SQLITE_OK) {
        rc = sqlite3_exec(h, "COMMIT", NULL, NULL, NULL);
    }
    if (rc != SQLITE_OK) {
        sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
    }
    return rc;
}

/* The rows are exactly 1..n, each with its own bytes, and the file is sound. */
static void check_rows(sqlite3 *h, int n)
{
    char sql[256];

    ck_assert_int_eq(select_int(h, "SELECT COUNT(*) FROM r"), n);
    if (n > 0) {
        ck_assert_int_eq(select_int(h, "SELECT MIN(id) FROM r"), 1);
        ck_assert_int_eq(select_int(h, "SELECT MAX(id) FROM r"), n);
    }
    snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM r WHERE length(body) != %d OR "
             "hex(substr(body, 1, 1)) != hex(char(97 + id %% 26)) OR "
             "hex(substr(body, %d, 1)) != hex(char(97 + id %% 26))", ROW_BYTES, ROW_BYTES);
    ck_assert_int_eq(select_int(h, sql), 0);
    ck_assert_int_eq(select_int(h, "SELECT \"ok\" = (SELECT integrity_check FROM "
                                   "pragma_integrity_check)"), 1);
}

/* Write system calls this process has made (pwrite included), -1 unknown. (No
 * ck_assert here: each one writes to Check's pipe.) */
static long long writes_made(void)
{
    char line[128];
    long long n = -1;
    FILE *f = fopen("/proc/self/io", "r");

    while (f && fgets(line, sizeof(line), f)) {
        if (sscanf(line, "syscw: %lld", &n) == 1) {
            break;
        }
    }
    if (f) {
        fclose(f);
    }
    return n;
}

START_TEST(is_the_default)
{
    sqlite3 *h = open_db(path_of("a.db"), NULL);
    char *name = NULL;

    ck_assert_str_eq(sqlite3_vfs_find(NULL)->zName, "qrt-wal");
    /* again is harmless */
    ck_assert_int_eq(qrt_walvfs_register(), SQLITE_OK);
    ck_assert_str_eq(sqlite3_vfs_find(NULL)->zName, "qrt-wal");
    ck_assert_int_eq(sqlite3_file_control(h, "main", SQLITE_FCNTL_VFSNAME, &name), SQLITE_OK);
    ck_assert_str_eq(name, "qrt-wal/unix");
    sqlite3_free(name);
    sqlite3_close(h);
    /* unregistered (a module unloaded), the VFS it wrapped is the default again */
    qrt_walvfs_unregister();
    ck_assert_str_eq(sqlite3_vfs_find(NULL)->zName, "unix");
    ck_assert_ptr_null(sqlite3_vfs_find("qrt-wal"));
    ck_assert_int_eq(qrt_walvfs_register(), SQLITE_OK);
    ck_assert_str_eq(sqlite3_vfs_find(NULL)->zName, "qrt-wal");
}
END_TEST

/* Write system calls of a commit of 20 rows (about 25 pages) on h, after a first one
 * (which writes the WAL's header and reserves its space). */
static long long commit_writes(sqlite3 *h)
{
    long long before;
    int rc;

    ck_assert_int_eq(commit_rows(h, 1, 1), SQLITE_OK);
    before = writes_made();
    rc = commit_rows(h, 2, 20);
    before = writes_made() - before;
    ck_assert_int_eq(rc, SQLITE_OK);
    check_rows(h, 21);
    sqlite3_close(h);
    return before;
}

/* A commit's WAL frames: one write on a connection enabled (after its WAL was opened,
 * or before), two a page through unix, and as unix on a connection of qrt-wal that
 * was not enabled (another library's). */
START_TEST(one_write_a_commit)
{
    sqlite3 *e = NULL;
    struct statfs fs;
    int in_place;

    /* (elsewhere than on ext2/3/4, XFS or tmpfs the WAL is written as unix writes it) */
    ck_assert_int_eq(statfs(dir, &fs), 0);
    in_place = fs.f_type == 0xEF53 || fs.f_type == 0x58465342 || fs.f_type == 0x01021994;
    if (!in_place) {
        ck_assert_int_ge(commit_writes(open_gathered(path_of("a.db"))), 40);
        return;
    }
    ck_assert_int_eq(commit_writes(open_gathered(path_of("a.db"))), 1);
    ck_assert_int_eq(sqlite3_open_v2(path_of("e.db"), &e, SQLITE_OPEN_READWRITE
                                     | SQLITE_OPEN_CREATE, NULL), SQLITE_OK);
    ck_assert_int_eq(qrt_walvfs_enable(e), 1);
    exec_ok(e, "PRAGMA journal_mode = WAL");
    exec_ok(e, "CREATE TABLE r (id INTEGER PRIMARY KEY, body BLOB NOT NULL)");
    ck_assert_int_eq(commit_writes(e), 1);
    ck_assert_int_ge(commit_writes(open_db(path_of("u.db"), "unix")), 40);
    ck_assert_int_ge(commit_writes(open_db(path_of("p.db"), NULL)), 40);
    /* (a connection of another VFS is not this one's to enable) */
    e = open_db(path_of("u.db"), "unix");
    ck_assert_int_eq(qrt_walvfs_enable(e), 0);
    sqlite3_close(e);
}
END_TEST

/* Every commit is in the file when another connection can see it: small ones, ones
 * larger than the buffer, and the first after a checkpoint started the WAL over. */
START_TEST(readers_see_each_commit)
{
    sqlite3 *h = open_gathered(path_of("a.db")), *u = open_db(path_of("a.db"), "unix");
    int i, n = 0;

    for (i = 1; i <= 60; i++) {
        int rows = i % 3 == 0 ? 60 : i % 5;    /* 60 rows: past one buffer */

        ck_assert_int_eq(commit_rows(h, n + 1, rows), SQLITE_OK);
        n += rows;
        check_rows(u, n);
        if (i % 20 == 0) {
            /* a checkpoint by the reader: the next commit starts the WAL over */
            ck_assert_int_eq(sqlite3_wal_checkpoint_v2(u, NULL, SQLITE_CHECKPOINT_TRUNCATE,
                                                       NULL, NULL), SQLITE_OK);
        }
    }
    sqlite3_close(h);
    check_rows(u, n);
    sqlite3_close(u);
}
END_TEST

/* A transaction larger than its cache reads back pages it wrote to the WAL before
 * its commit. */
START_TEST(spilled_pages_read_back)
{
    sqlite3 *h = open_gathered(path_of("a.db")), *u;
    int i;

    exec_ok(h, "PRAGMA cache_size = 8");
    for (i = 0; i < 3; i++) {
        exec_ok(h, "BEGIN IMMEDIATE");
        ck_assert_int_eq(insert_rows(h, 1 + i * 150, 150), SQLITE_OK);
        check_rows(h, 150 * (i + 1));
        exec_ok(h, "COMMIT");
    }
    u = open_db(path_of("a.db"), "unix");
    check_rows(u, 450);
    sqlite3_close(u);
    sqlite3_close(h);
}
END_TEST

/* Another process reading all the while never finds a commit it can see without
 * all of its pages: it checks the newest rows, those of the last commit or two. */
START_TEST(concurrent_reader)
{
    sqlite3 *h = open_gathered(path_of("c.db")), *u;
    pid_t pid, done;
    int status = 0, n = 0, size = 1;

    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        sqlite3 *r = open_db(path_of("c.db"), "unix");
        sqlite3_stmt *st;
        int bad = 0, i;

        sqlite3_prepare_v2(r, "WITH m(m) AS (SELECT COALESCE(MAX(id), 0) FROM r) "
                           "SELECT MIN(m.m, 31), COUNT(r.id) FROM m LEFT JOIN r ON "
                           "r.id > m.m - 31 AND length(r.body) = 3000 AND "
                           "hex(substr(r.body, 3000, 1)) = hex(char(97 + r.id % 26))",
                           -1, &st, NULL);
        for (i = 0; i < 40000 && !bad; i++) {
            int rc = sqlite3_step(st);

            if (rc == SQLITE_ROW) {
                bad = sqlite3_column_int64(st, 0) != sqlite3_column_int64(st, 1);
            }
            else if (rc != SQLITE_BUSY) {
                bad = 2;
            }
            sqlite3_reset(st);
        }
        _exit(bad);
    }
    while ((done = waitpid(pid, &status, WNOHANG)) == 0 && n < 30000) {
        size = size % 30 + 1;
        ck_assert_int_eq(commit_rows(h, n + 1, size), SQLITE_OK);
        n += size;
    }
    if (done == 0) {
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    }
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 0);
    sqlite3_close(h);
    u = open_db(path_of("c.db"), "unix");
    check_rows(u, n);
    sqlite3_close(u);
}
END_TEST

/* A transaction too large for its cache writes pages to the WAL before its commit;
 * rolled back, what was written for it must not land on another connection's
 * commits later (here at the start of a WAL emptied by a checkpoint). */
START_TEST(rollback_after_spill)
{
    sqlite3 *h = open_gathered(path_of("a.db")), *u = open_db(path_of("a.db"), "unix");
    int n;

    ck_assert_int_eq(commit_rows(h, 1, 5), SQLITE_OK);
    ck_assert_int_eq(sqlite3_wal_checkpoint_v2(u, NULL, SQLITE_CHECKPOINT_TRUNCATE,
                                               NULL, NULL), SQLITE_OK);
    exec_ok(h, "PRAGMA cache_size = 8");
    exec_ok(h, "BEGIN IMMEDIATE");
    ck_assert_int_eq(insert_rows(h, 1000, 20), SQLITE_OK);
    exec_ok(h, "ROLLBACK");
    for (n = 5; n < 35; n += 10) {
        ck_assert_int_eq(commit_rows(u, n + 1, 10), SQLITE_OK);
    }
    check_rows(h, 35);
    ck_assert_int_eq(commit_rows(h, 36, 5), SQLITE_OK);
    sqlite3_close(h);
    check_rows(u, 40);
    sqlite3_close(u);
}
END_TEST

/* A child process with a pipe to its parent (fd[1] its end): fork's result. */
static pid_t fork_piped(int fd[2])
{
    pid_t pid;

    ck_assert_int_eq(pipe(fd), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    return pid;
}

/* In locking_mode EXCLUSIVE (no shared-memory calls to end a commit) a commit is in
 * the file when it returns: a writer killed right after keeps it. */
START_TEST(exclusive_mode_writes_at_once)
{
    int fd[2], done = 0;
    pid_t pid = fork_piped(fd);
    sqlite3 *u;

    if (pid == 0) {
        sqlite3 *h = NULL;

        close(fd[0]);
        sqlite3_open_v2(path_of("x.db"), &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
        qrt_walvfs_enable(h);
        exec_ok(h, "PRAGMA locking_mode = EXCLUSIVE");
        setup_db(h);
        done = commit_rows(h, 1, 20) == SQLITE_OK;
        if (write(fd[1], &done, sizeof(done)) != sizeof(done)) {
            _exit(1);
        }
        pause();
        _exit(0);
    }
    close(fd[1]);
    ck_assert_int_eq(read(fd[0], &done, sizeof(done)), sizeof(done));
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(fd[0]);
    ck_assert_int_eq(done, 1);
    u = open_db(path_of("x.db"), "unix");
    check_rows(u, 20);
    sqlite3_close(u);
}
END_TEST

/* A writer killed at any moment leaves every commit it finished, and nothing else. */
START_TEST(killed_writer_keeps_its_commits)
{
    int round;

    for (round = 0; round < 6; round++) {
        int fd[2], last = 0, got;
        pid_t pid;
        sqlite3 *u;

        pid = fork_piped(fd);
        if (pid == 0) {
            sqlite3 *h = open_gathered(path_of("k.db"));
            int n = (int)select_int(h, "SELECT COUNT(*) FROM r"), size = 1;

            close(fd[0]);
            for (;;) {
                size = size % 40 + 7;
                if (commit_rows(h, n + 1, size) != SQLITE_OK) {
                    _exit(1);
                }
                n += size;
                if (write(fd[1], &n, sizeof(n)) != sizeof(n)) {
                    _exit(1);
                }
            }
        }
        close(fd[1]);
        while (last < 200 * (round + 1) && read(fd[0], &got, sizeof(got)) == sizeof(got)) {
            last = got;
        }
        /* a moment later than a commit's end: mid-way through the next */
        usleep(200 * round);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        while (read(fd[0], &got, sizeof(got)) == sizeof(got)) {
            last = got;
        }
        close(fd[0]);
        u = open_db(path_of("k.db"), "unix");
        got = (int)select_int(u, "SELECT COUNT(*) FROM r");
        /* the commit under way may have finished before the kill, unreported */
        ck_assert_int_ge(got, last);
        ck_assert_int_le(got, last + 47);
        check_rows(u, got);
        sqlite3_close(u);
    }
}
END_TEST

/* A WAL that cannot grow (here a file-size limit; a full disk alike): the commit that
 * needs the room fails with SQLite's error, and every commit reported before it is
 * there in full. */
START_TEST(no_room_fails_the_commit)
{
    int fd[2], result[2] = { 0, 0 };
    pid_t pid;
    sqlite3 *u;

    pid = fork_piped(fd);
    if (pid == 0) {
        sqlite3 *h = open_gathered(path_of("f.db"));
        struct rlimit lim;
        int n = 0, rc = SQLITE_OK;

        ck_assert_int_eq(commit_rows(h, 1, 1), SQLITE_OK);
        n = 1;
        signal(SIGXFSZ, SIG_IGN);
        lim.rlim_cur = lim.rlim_max = 3 * 1024 * 1024;
        setrlimit(RLIMIT_FSIZE, &lim);
        while (rc == SQLITE_OK && n < 5000) {
            if ((rc = commit_rows(h, n + 1, 9)) == SQLITE_OK) {
                n += 9;
            }
        }
        result[0] = n;
        result[1] = rc;
        ck_assert_int_eq(write(fd[1], result, sizeof(result)), sizeof(result));
        sqlite3_close(h);
        _exit(0);
    }
    close(fd[1]);
    ck_assert_int_eq(read(fd[0], result, sizeof(result)), sizeof(result));
    close(fd[0]);
    waitpid(pid, NULL, 0);
    ck_assert_int_ne(result[1], SQLITE_OK);
    ck_assert_int_gt(result[0], 100);
    u = open_db(path_of("f.db"), "unix");
    check_rows(u, result[0]);
    sqlite3_close(u);
}
END_TEST

static Suite *walvfs_suite(void)
{
    Suite *s = suite_create("walvfs");
    TCase *tc = tcase_create("wal");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, is_the_default);
    tcase_add_test(tc, one_write_a_commit);
    tcase_add_test(tc, readers_see_each_commit);
    tcase_add_test(tc, rollback_after_spill);
    tcase_add_test(tc, spilled_pages_read_back);
    tcase_add_test(tc, concurrent_reader);
    tcase_add_test(tc, killed_writer_keeps_its_commits);
    tcase_add_test(tc, exclusive_mode_writes_at_once);
    tcase_add_test(tc, no_room_fails_the_commit);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (qrt_walvfs_register() != SQLITE_OK) {
        fprintf(stderr, "test_walvfs: qrt_walvfs_register failed\n");
        return EXIT_FAILURE;
    }
    return qrt_check_run(walvfs_suite());
}
