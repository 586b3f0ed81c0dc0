/* libFuzzer target for qrt_ua.c, the user-agent classifier, with uap-core's own
 * regexes.yaml (QRT_FUZZ_UA_REGEXES, default Debian's uap-core package).
 *
 * Any bytes as a user agent: every result field is set, the device is one of the
 * five names, a bot is a "bot" device, and a second parse (from the cache) gives
 * the same answer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <apr_general.h>
#include <apr_strings.h>
#include "qrt_ua.h"

static qrt_ua_db_t *db;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static apr_pool_t *pool;
    const char *path = getenv("QRT_FUZZ_UA_REGEXES");
    const char *err = NULL;

    (void)argc;
    (void)argv;
    apr_initialize();
    /* The regexes are freed by the pool's cleanup (LeakSanitizer looks at exit). */
    atexit(apr_terminate);
    apr_pool_create(&pool, NULL);
    db = qrt_ua_load(pool, path ? path : "/usr/share/uap-core/regexes.yaml", &err);
    if (!db) {
        abort();
    }
    return 0;
}

static int fz_same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *devices[] = { "mobile", "tablet", "desktop", "bot", "other" };
    apr_pool_t *p;
    qrt_ua_t a, b;
    char *ua;
    int i, known = 0;

    apr_pool_create(&p, NULL);
    ua = apr_pstrmemdup(p, (const char *)data, size);
    qrt_ua_parse(db, ua, p, &a);
    if (!a.browser || !a.os || !a.device) {
        abort();
    }
    for (i = 0; i < 5; i++) {
        known |= !strcmp(a.device, devices[i]);
    }
    if (!known || (a.bot && strcmp(a.device, "bot") != 0)) {
        abort();
    }
    qrt_ua_parse(db, ua, p, &b);
    if (strcmp(a.browser, b.browser) || strcmp(a.os, b.os) || strcmp(a.device, b.device)
        || !fz_same(a.browser_version, b.browser_version) || a.bot != b.bot) {
        abort();
    }
    apr_pool_destroy(p);
    return 0;
}
