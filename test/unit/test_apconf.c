/* Unit tests for qrt_apconf: DBDriver/DBDParams from an Apache config tree written
 * to a temporary directory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

static Suite *apconf_suite(void)
{
    Suite *s = suite_create("qrt_apconf");
    TCase *tc = tcase_create("apconf");

    tcase_add_checked_fixture(tc, tree_setup, tree_teardown);
    tcase_add_test(tc, words);
    tcase_add_test(tc, debian_layout);
    tcase_add_test(tc, last_wins_quotes_vars);
    tcase_add_test(tc, nothing_missing_loops);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(apconf_suite());
}
