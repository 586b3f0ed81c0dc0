/* The shared main() of the unit tests: runs one check suite with APR set up and
 * turns the outcome into the exit status make looks at. */
#ifndef QRT_CHECK_H
#define QRT_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <check.h>
#include <apr_general.h>

/* Check's assertions write the place of each one that passes to the test's runner (a
 * system call each: most of the time of the suites that assert in long loops). Here a
 * passing assertion does nothing; a failing one reports as before. A test that crashes
 * is reported at its last mark_point() (or its start), not at its last assertion. */
#undef ck_assert_msg
#define ck_assert_msg(expr, ...) \
    ((expr) ? (void)0 \
            : _ck_assert_failed(__FILE__, __LINE__, "Assertion '"#expr"' failed", \
                                ## __VA_ARGS__))

/* A directory of the run's own, made before its tests fork and removed after them:
 * qrt_check_db.h keeps there a database migrated once, which each new test database
 * copies instead of migrating again (some sixty migrations, a large part of a suite's
 * time). Empty: no such directory, each database is migrated. */
static char qrt_check_tpl_dir[64];

static void qrt_check_tpl_begin(void)
{
    strcpy(qrt_check_tpl_dir, "/tmp/qrt-unit-tpl-XXXXXX");
    if (!mkdtemp(qrt_check_tpl_dir)) {
        qrt_check_tpl_dir[0] = '\0';
    }
}

static void qrt_check_tpl_end(void)
{
    char path[96];

    if (qrt_check_tpl_dir[0]) {
        snprintf(path, sizeof(path), "%s/t.db", qrt_check_tpl_dir);
        unlink(path);
        rmdir(qrt_check_tpl_dir);
        qrt_check_tpl_dir[0] = '\0';
    }
}

static int qrt_check_run(Suite *s)
{
    SRunner *sr;
    int failed;

    apr_initialize();
    qrt_check_tpl_begin();
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    qrt_check_tpl_end();
    apr_terminate();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* Runs the suite that make() builds one named case at a time, each in a process of
 * its own, QRT_CHECK_JOBS of them at once (default 2: the long suites' cases share the
 * machine's two cores), and prints each case's output in the order of names. With
 * CK_RUN_CASE set, or one job, it runs as qrt_check_run. A case that runs no test fails. */
__attribute__((unused)) static int qrt_check_run_cases(Suite *(*make)(void), const char *const *names, int n)
{
    const char *env = getenv("QRT_CHECK_JOBS");
    int jobs = env ? atoi(env) : 2, running = 0, next = 0, failed = 0, i;
    FILE **out;
    pid_t *pids;

    if (jobs <= 1 || getenv("CK_RUN_CASE") || n <= 1) {
        return qrt_check_run(make());
    }
    out = calloc((size_t)n, sizeof(*out));
    pids = calloc((size_t)n, sizeof(*pids));
    if (!out || !pids) {
        return EXIT_FAILURE;
    }
    qrt_check_tpl_begin();
    while (next < n || running > 0) {
        int status;
        pid_t pid;

        while (next < n && running < jobs) {
            out[next] = tmpfile();
            if (!out[next]) {
                return EXIT_FAILURE;
            }
            fflush(stdout);
            fflush(stderr);
            pid = fork();
            if (pid < 0) {
                return EXIT_FAILURE;
            }
            if (pid == 0) {
                SRunner *sr;
                int bad;

                dup2(fileno(out[next]), 1);
                dup2(fileno(out[next]), 2);
                apr_initialize();
                sr = srunner_create(make());
                srunner_run(sr, NULL, names[next], CK_NORMAL);
                bad = srunner_ntests_failed(sr) > 0 || srunner_ntests_run(sr) == 0;
                srunner_free(sr);
                apr_terminate();
                fflush(stdout);
                _exit(bad ? EXIT_FAILURE : EXIT_SUCCESS);
            }
            pids[next++] = pid;
            running++;
        }
        pid = wait(&status);
        if (pid < 0) {
            return EXIT_FAILURE;
        }
        for (i = 0; i < next; i++) {
            if (pids[i] == pid) {
                running--;
                if (!WIFEXITED(status) || WEXITSTATUS(status) != EXIT_SUCCESS) {
                    failed++;
                }
            }
        }
    }
    for (i = 0; i < n; i++) {
        char buf[4096];
        size_t k;

        printf("-- case: %s\n", names[i]);
        rewind(out[i]);
        while ((k = fread(buf, 1, sizeof(buf), out[i])) > 0) {
            fwrite(buf, 1, k, stdout);
        }
        fclose(out[i]);
    }
    if (failed) {
        printf("%d of %d cases failed\n", failed, n);
    }
    qrt_check_tpl_end();
    free(out);
    free(pids);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* A test case's pool: `QRT_CHECK_POOL` defines `pool` with `setup` and `teardown`
 * for tcase_add_checked_fixture. */
#define QRT_CHECK_POOL \
    static apr_pool_t *pool; \
    static void setup(void) \
    { \
        apr_initialize(); \
        apr_pool_create(&pool, NULL); \
    } \
    static void teardown(void) \
    { \
        apr_pool_destroy(pool); \
        apr_terminate(); \
    }

#endif
