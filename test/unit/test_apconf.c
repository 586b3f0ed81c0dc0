/* Unit tests for qrt_apconf: DBDriver/DBDParams from an Apache config tree written
 * to a temporary directory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>

#include "qrt_apconf.h"
#include "qrt_check.h"

QRT_CHECK_POOL

static char root[64];

static void put(const char *name, const char *text)
{
    char *path = apr_pstrcat(pool, root, "/", name, NULL);
    FILE *f;

    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void tree_setup(void)
{
    setup();
    strcpy(root, "/tmp/qrt-apconf-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(root));
}

static void tree_teardown(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
    teardown();
}

static const char *conf(const char *name)
{
    return apr_pstrcat(pool, root, "/", name, NULL);
}

START_TEST(words)
{
    const char *l = "  DBDParams \"host=db user=q password='a b'\"  'it''s' \"a\\\"b\" x\\y  ";

    ck_assert_str_eq(qrt_apconf_word(pool, &l), "DBDParams");
    ck_assert_str_eq(qrt_apconf_word(pool, &l), "host=db user=q password='a b'");
    ck_assert_str_eq(qrt_apconf_word(pool, &l), "it");
    ck_assert_str_eq(qrt_apconf_word(pool, &l), "s");
    ck_assert_str_eq(qrt_apconf_word(pool, &l), "a\"b");
    ck_assert_str_eq(qrt_apconf_word(pool, &l), "x\\y");
    ck_assert_str_eq(qrt_apconf_word(pool, &l), "");
}
END_TEST

/* Debian's layout: apache2.conf includes mods-enabled/ by globs, relative to the
 * ServerRoot; a module's conf wraps the lines in <IfModule>; sites hold vhosts. */
START_TEST(debian_layout)
{
    qrt_apconf_dbd_t d;
    const char *err;

    ck_assert_int_eq(mkdir(conf("mods-enabled"), 0755), 0);
    ck_assert_int_eq(mkdir(conf("sites-enabled"), 0755), 0);
    /* a ServerRoot directive moves the root the includes are relative to */
    put("apache2.conf", apr_pstrcat(pool, "# DBDriver pgsql\n",
                                    "ServerRoot \"/nowhere\"\n",
                                    "ServerRoot \"", root, "\"\n",
                                    "IncludeOptional mods-enabled/*.load\n"
                                    "IncludeOptional mods-enabled/*.conf\n"
                                    "Include ports.conf\n"
                                    "IncludeOptional conf-enabled/*.conf\n"
                                    "IncludeOptional sites-enabled/*.conf\n", NULL));
    put("ports.conf", "Listen 80\n");
    put("mods-enabled/dbd.load", "LoadModule dbd_module /x/mod_dbd.so\n");
    put("mods-enabled/qrtrack.conf", "<IfModule qrtrack_module>\n"
        "    # comment\n"
        "    dbdriver  sqlite3\n"
        "    DBDPARAMS /var/lib/qrtrack/qrtrack.db\n"
        "</IfModule>\n");
    put("sites-enabled/000-default.conf", "<VirtualHost *:80>\n"
        "    DBDriver pgsql\n    DBDParams \"host=vhost\"\n"
        "    <IfModule x>\n    DBDParams inner\n    </IfModule>\n"
        "</VirtualHost>\n"
        "DBDParamsNot x\n");
    err = qrt_apconf_read_dbd(pool, conf("apache2.conf"), NULL, &d);
    ck_assert_ptr_null(err);
    ck_assert_str_eq(d.driver, "sqlite3");
    ck_assert_str_eq(d.params, "/var/lib/qrtrack/qrtrack.db");
    ck_assert_str_eq(d.params_at, apr_pstrcat(pool, root, "/mods-enabled/qrtrack.conf:4",
                                              NULL));
    ck_assert_int_eq(d.files, 5);
    ck_assert_int_eq(d.missing, 0);
}
END_TEST

/* The last value at server level wins (as in mod_dbd); quotes, continuation lines,
 * ${VAR} from Define and the environment; directories; sections after vhosts. */
START_TEST(last_wins_quotes_vars)
{
    qrt_apconf_dbd_t d;
    const char *err;

    ck_assert_int_eq(mkdir(conf("d"), 0755), 0);
    setenv("QRT_APCONF_TEST_HOST", "db.internal", 1);
    put("main.conf", "DBDriver sqlite3\nDBDParams /first.db\n"
        "<VirtualHost *:80>\n<Location /x>\n</Location>\nDBDParams /vhost.db\n"
        "</VirtualHost>\n"
        "Define DBNAME qrtrack\n"
        "Include d\n");
    put("d/a.conf", "<IfDefine !X>\n<IfVersion >= 2.4>\n"
        "  DBDriver   \"pgsql\"\n"
        "  DBDParams \"host=${QRT_APCONF_TEST_HOST} \\\n"
        "dbname=${DBNAME} password='x y' ${UNSET}\"\n"
        "</IfVersion>\n</IfDefine>\n");
    err = qrt_apconf_read_dbd(pool, conf("main.conf"), NULL, &d);
    ck_assert_ptr_null(err);
    ck_assert_str_eq(d.driver, "pgsql");
    ck_assert_str_eq(d.params, "host=db.internal dbname=qrtrack password='x y' ${UNSET}");
    ck_assert_str_eq(d.params_at, apr_pstrcat(pool, root, "/d/a.conf:4", NULL));
    ck_assert_int_eq(d.files, 2);
}
END_TEST

START_TEST(nothing_missing_loops)
{
    qrt_apconf_dbd_t d;
    const char *err;

    put("plain.conf", "Listen 80\nInclude missing.conf\nIncludeOptional none/*.conf\n");
    err = qrt_apconf_read_dbd(pool, conf("plain.conf"), NULL, &d);
    ck_assert_ptr_null(err);
    ck_assert_ptr_null(d.driver);
    ck_assert_ptr_null(d.params);

    err = qrt_apconf_read_dbd(pool, conf("absent.conf"), NULL, &d);
    ck_assert_ptr_nonnull(err);
    ck_assert_ptr_nonnull(strstr(err, "absent.conf"));
    ck_assert_int_eq(d.missing, 1);

    put("loop.conf", "DBDriver sqlite3\nInclude loop.conf\n");
    err = qrt_apconf_read_dbd(pool, conf("loop.conf"), NULL, &d);
    ck_assert_ptr_nonnull(err);
    ck_assert_ptr_nonnull(strstr(err, "nested"));
    ck_assert_int_eq(d.missing, 0);

    /* relative includes against an explicit ServerRoot */
    put("inc.conf", "DBDParams /from/inc.db\n");
    put("top.conf", "Include inc.conf\n");
    err = qrt_apconf_read_dbd(pool, conf("top.conf"), root, &d);
    ck_assert_ptr_null(err);
    ck_assert_str_eq(d.params, "/from/inc.db");
    ck_assert_ptr_null(d.driver);
}
END_TEST

/* A directory of symlinks to itself: httpd says it recurses; so does the reader,
 * at once, and a tree that fans out without a loop stops at the file budget. */
START_TEST(directory_loops_end)
{
    qrt_apconf_dbd_t d;
    const char *err;
    int i;

    ck_assert_int_eq(mkdir(conf("d"), 0755), 0);
    for (i = 0; i < 8; i++) {
        ck_assert_int_eq(symlink(".", conf(apr_psprintf(pool, "d/l%d", i))), 0);
    }
    put("d/a.conf", "DBDriver sqlite3\n");
    put("main.conf", "Include d\n");
    err = qrt_apconf_read_dbd(pool, conf("main.conf"), NULL, &d);
    ck_assert_ptr_nonnull(err);
    ck_assert_msg(strstr(err, "loop") != NULL, "%s", err);

    /* a file that includes the directory it lies in */
    ck_assert_int_eq(mkdir(conf("e"), 0755), 0);
    put("e/self.conf", apr_pstrcat(pool, "Include ", root, "/e\n", NULL));
    put("main2.conf", "Include e/*.conf\n");
    err = qrt_apconf_read_dbd(pool, conf("main2.conf"), NULL, &d);
    ck_assert_ptr_nonnull(err);
    ck_assert_msg(strstr(err, "loop") != NULL, "%s", err);

    /* a fan-out without a loop: 6 levels of 8 links to the next level */
    for (i = 0; i < 7; i++) {
        int j;

        ck_assert_int_eq(mkdir(conf(apr_psprintf(pool, "f%d", i)), 0755), 0);
        for (j = 0; j < 8 && i > 0; j++) {
            ck_assert_int_eq(symlink(conf(apr_psprintf(pool, "f%d", i - 1)),
                                     conf(apr_psprintf(pool, "f%d/l%d", i, j))), 0);
        }
    }
    put("f0/x.conf", "Listen 80\n");
    put("main3.conf", "Include f6\n");
    err = qrt_apconf_read_dbd(pool, conf("main3.conf"), NULL, &d);
    ck_assert_ptr_nonnull(err);
    ck_assert_msg(strstr(err, "more than") != NULL, "%s", err);
    ck_assert_int_le(d.files, QRT_APCONF_MAX_FILES);
}
END_TEST

/* Include /dev/zero, a FIFO: refused as httpd refuses them, without reading. */
START_TEST(regular_files_only)
{
    qrt_apconf_dbd_t d;
    const char *err;

    put("zero.conf", "Include /dev/zero\n");
    err = qrt_apconf_read_dbd(pool, conf("zero.conf"), NULL, &d);
    ck_assert_ptr_nonnull(err);
    ck_assert_msg(strstr(err, "/dev/zero") && strstr(err, "not a regular file"), "%s", err);

    ck_assert_int_eq(mkfifo(conf("fifo"), 0600), 0);
    put("fifo.conf", "IncludeOptional fifo\n");
    err = qrt_apconf_read_dbd(pool, conf("fifo.conf"), NULL, &d);
    ck_assert_ptr_nonnull(err);
    ck_assert_msg(strstr(err, "not a regular file") != NULL, "%s", err);

    err = qrt_apconf_read_dbd(pool, "/dev/zero", NULL, &d);
    ck_assert_ptr_nonnull(err);
    ck_assert_int_eq(d.missing, 0);
}
END_TEST

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static size_t peak_kb(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (size_t)ru.ru_maxrss;
}

/* Continuation lines joined in linear time and memory. */
START_TEST(long_continuations)
{
    static const int counts[] = { 5000, 30000, 300000 };
    qrt_apconf_dbd_t d;
    const char *err;
    int i, k;

    for (k = 0; k < 3; k++) {
        FILE *f = fopen(conf("cont.conf"), "w");
        double t;

        ck_assert_ptr_nonnull(f);
        fputs("DBDParams \"a", f);
        for (i = 0; i < counts[k]; i++) {
            fputs("bcdefghijklmnop\\\n", f);
        }
        fputs("z\"\nDBDriver pgsql\n", f);
        fclose(f);
        t = now_ms();
        err = qrt_apconf_read_dbd(pool, conf("cont.conf"), NULL, &d);
        t = now_ms() - t;
        ck_assert_ptr_null(err);
        ck_assert_str_eq(d.driver, "pgsql");
        ck_assert_uint_eq(strlen(d.params), 2 + 15 * (size_t)counts[k]);
        ck_assert_msg(t < 1000, "%d continuation lines took %.0f ms", counts[k], t);
    }
    /* 300,000 lines of 17 bytes: a few MB, not quadratic gigabytes */
    ck_assert_msg(peak_kb() < 256 * 1024, "peak %zu kB", peak_kb());

    /* a logical line longer than the cap is refused */
    {
        FILE *f = fopen(conf("huge.conf"), "w");
        char chunk[4096];

        memset(chunk, 'x', sizeof(chunk) - 3);
        memcpy(chunk + sizeof(chunk) - 3, "\\\n", 3);
        ck_assert_ptr_nonnull(f);
        for (i = 0; i < (int)(QRT_APCONF_MAX_LINE / 4000) + 2; i++) {
            fputs(chunk, f);
        }
        fputs("\n", f);
        fclose(f);
        err = qrt_apconf_read_dbd(pool, conf("huge.conf"), NULL, &d);
        ck_assert_ptr_nonnull(err);
        ck_assert_msg(strstr(err, "huge.conf:1") && strstr(err, "longer than"), "%s", err);
    }
}
END_TEST

/* ${VAR} expanded in a loop, not by recursion, and within a length cap. */
START_TEST(many_variables)
{
    qrt_apconf_dbd_t d;
    const char *err;
    FILE *f;
    double t;
    int i;

    f = fopen(conf("vars.conf"), "w");
    ck_assert_ptr_nonnull(f);
    fputs("Define A x\nDBDParams ", f);
    for (i = 0; i < 300000; i++) {
        fputs("${A}", f);
    }
    fputs("${NOPE}\nDBDriver sqlite3\n", f);
    fclose(f);
    t = now_ms();
    err = qrt_apconf_read_dbd(pool, conf("vars.conf"), NULL, &d);
    t = now_ms() - t;
    ck_assert_ptr_null(err);
    ck_assert_uint_eq(strlen(d.params), 300000 + 7);
    ck_assert_str_eq(d.params + 300000, "${NOPE}");
    ck_assert_msg(t < 1000, "took %.0f ms", t);

    /* undefined: left as written, in a loop too */
    f = fopen(conf("undef.conf"), "w");
    ck_assert_ptr_nonnull(f);
    fputs("DBDParams ", f);
    for (i = 0; i < 300000; i++) {
        fputs("${U}", f);
    }
    fputs("\n", f);
    fclose(f);
    err = qrt_apconf_read_dbd(pool, conf("undef.conf"), NULL, &d);
    ck_assert_ptr_null(err);
    ck_assert_uint_eq(strlen(d.params), 4 * 300000);

    /* a value that grows past the cap is refused, not allocated */
    f = fopen(conf("big.conf"), "w");
    ck_assert_ptr_nonnull(f);
    fputs("Define B ", f);
    for (i = 0; i < 4000; i++) {
        fputs("yyyyyyyyyy", f);
    }
    fputs("\nDBDParams ", f);
    for (i = 0; i < 300000; i++) {
        fputs("${B}", f);
    }
    fputs("\n", f);
    fclose(f);
    err = qrt_apconf_read_dbd(pool, conf("big.conf"), NULL, &d);
    ck_assert_ptr_nonnull(err);
    ck_assert_msg(strstr(err, "big.conf:2") && strstr(err, "longer than"), "%s", err);

    /* a value that names a variable is not expanded again */
    put("again.conf", "Define C ${D}\nDefine D z\nDBDParams ${C}-${D}\n");
    err = qrt_apconf_read_dbd(pool, conf("again.conf"), NULL, &d);
    ck_assert_ptr_null(err);
    ck_assert_str_eq(d.params, "${D}-z");
}
END_TEST

static Suite *apconf_suite(void)
{
    Suite *s = suite_create("qrt_apconf");
    TCase *tc = tcase_create("apconf");

    tcase_add_checked_fixture(tc, tree_setup, tree_teardown);
    tcase_add_test(tc, words);
    tcase_add_test(tc, debian_layout);
    tcase_add_test(tc, last_wins_quotes_vars);
    tcase_add_test(tc, nothing_missing_loops);
    tcase_add_test(tc, directory_loops_end);
    tcase_add_test(tc, regular_files_only);
    tcase_add_test(tc, long_continuations);
    tcase_add_test(tc, many_variables);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(apconf_suite());
}
