/* libFuzzer target for qrt_apconf.c, qrtrack-admin's reader of an Apache configuration.
 *
 * The input is the main configuration file. It may include anything, so the target
 * first shuts itself in a small tree of its own (chroot, as root or in a user
 * namespace): a file, a directory with a symlink to itself, a FIFO, the input itself.
 * Whatever the input says (loops, globs, continuations, ${VAR}s), the reader must end
 * within its bounds: a result or an error message, never more files than its budget,
 * never a value longer than its line cap. Without a sandbox only the word splitter is
 * fuzzed. Run it from the directory its corpus is relative to: the chroot keeps the
 * working directory.
 */
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <apr_general.h>
#include <apr_strings.h>
#include "qrt_apconf.h"

#define FZ_FAIL(what) \
    do { fprintf(stderr, "fuzz_apconf: %s (line %d)\n", what, __LINE__); abort(); } while (0)

static int sandboxed;

/* LeakSanitizer reads /proc, which the sandbox has not: leaks are the unit tests'
 * (make test-asan), not this target's. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "detect_leaks=0";
}

static void fz_put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* A tree to include from, then chroot into it (the cwd stays outside, where
 * libFuzzer writes its corpus and crash files). */
static void fz_sandbox(void)
{
    char dir[] = "/tmp/fuzz-apconf-XXXXXX";

    if (!mkdtemp(dir)) {
        return;
    }
    if (chroot(dir) != 0 && (unshare(CLONE_NEWUSER) != 0 || chroot(dir) != 0)) {
        return;
    }
    mkdir("/conf.d", 0755);
    mkdir("/loop", 0755);
    fz_put("/conf.d/a.conf", "DBDriver sqlite3\nDBDParams /var/lib/x.db\n");
    fz_put("/conf.d/b.conf", "<IfModule x>\nDefine V pgsql\nDBDriver ${V}\n</IfModule>\n");
    fz_put("/loop/l.conf", "Include /loop\n");
    if (symlink("/loop", "/loop/self") != 0) {
        return;
    }
    mkfifo("/fifo", 0600);
    sandboxed = 1;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    apr_initialize();
    fz_sandbox();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static apr_pool_t *p;
    qrt_apconf_dbd_t d;
    const char *err, *l;
    char *text;
    FILE *f;

    if (!p) {
        apr_pool_create(&p, NULL);
    }
    text = apr_pstrmemdup(p, (const char *)data, size);
    for (l = text; *l;) {
        const char *before = l;

        qrt_apconf_word(p, &l);
        if (l == before && *l) {
            FZ_FAIL("the splitter did not advance");
        }
    }
    if (sandboxed && (f = fopen("/in.conf", "w")) != NULL) {
        fwrite(data, 1, size, f);
        fclose(f);
        err = qrt_apconf_read_dbd(p, "/in.conf", "/", &d);
        if (d.files > QRT_APCONF_MAX_FILES) {
            FZ_FAIL("more files read than the budget");
        }
        if (!err && d.files < 1) {
            FZ_FAIL("no error, but nothing read");
        }
        if ((d.driver && strlen(d.driver) > QRT_APCONF_MAX_LINE)
            || (d.params && strlen(d.params) > QRT_APCONF_MAX_LINE)) {
            FZ_FAIL("a value longer than the line cap");
        }
        if ((d.driver && !d.driver_at) || (d.params && !d.params_at)) {
            FZ_FAIL("a value without its place");
        }
    }
    apr_pool_clear(p);
    return 0;
}
