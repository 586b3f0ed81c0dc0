/* The shared main() of the unit tests: runs one check suite with APR set up and
 * turns the outcome into the exit status make looks at. */
#ifndef QRT_CHECK_H
#define QRT_CHECK_H

#include <stdlib.h>
#include <check.h>
#include <apr_general.h>

static int qrt_check_run(Suite *s)
{
    SRunner *sr;
    int failed;

    apr_initialize();
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    apr_terminate();
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
