/* Unit tests for the statement table compiled from sql/statements (qrt_sql.h): every
 * name once, every PostgreSQL form on a statement, each backend's count, the many-row
 * forms on a statement of one row, and every SQLite statement prepared on a freshly
 * migrated database. The names the code uses are macros of qrt_sql.h: a mistyped one
 * does not compile. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>

#include "qrt_schema.h"
#include "qrt_store.h"
#include "qrt_check.h"
#include "qrt_check_db.h"

QRT_CHECK_POOL

static const qrt_sql_t *stmt_find(const char *name)
{
    int i;

    for (i = 0; qrt_sql_statements[i].name; i++) {
        if (!strcmp(qrt_sql_statements[i].name, name)) {
            return &qrt_sql_statements[i];
        }
    }
    return NULL;
}

/* What a restart without its database compares (mod_qrtrack_db.c): the same for every
 * call, and made of the build's text (not the hash of nothing). */
START_TEST(build_id_is_stable_and_made_of_the_text)
{
    apr_uint64_t id = qrt_schema_build_id();

    ck_assert(id == qrt_schema_build_id());
    ck_assert(id != 0 && id != 14695981039346656037ULL);
}
END_TEST

START_TEST(memo_round_trips_and_refuses_what_it_did_not_write)
{
    static const char *const bad[] = {
        "", "qrtrack-memo-2 0000000000000001 0 0 -\n",
        "qrtrack-memo-1 0000000000000001 2 0 -\n",                /* daily is 0 or 1 */
        "qrtrack-memo-1 0000000000000001 0 33 -\n",               /* longer than a key */
        "qrtrack-memo-1 0000000000000001 0 2 abc\n",              /* odd length */
        "qrtrack-memo-1 0000000000000001 0 2 abcg\n",             /* not hex */
        "qrtrack-memo-1 0000000000000001 0 2 abcd extra\n",
        "qrtrack-memo-1 0000000000000001 0 0 ab\n",
        "qrtrack-memo-1 zz 0 0 -\n",
    };
    qrt_visitor_key_t key, got;
    apr_uint64_t build = 0;
    unsigned i;

    memset(&key, 0, sizeof(key));
    for (i = 0; i < sizeof(key.key); i++) {
        key.key[i] = (unsigned char)(i * 37 + 1);
    }
    key.keylen = 32;
    key.daily = 1;
    memset(&got, 0xee, sizeof(got));
    ck_assert_int_eq(qrt_schema_memo_parse(qrt_schema_memo_format(pool, 0xfedcba9876543210ULL,
                                                                  &key), &build, &got), 0);
    ck_assert(build == 0xfedcba9876543210ULL);
    ck_assert_int_eq(got.keylen, 32);
    ck_assert_int_eq(got.daily, 1);
    ck_assert_int_eq(memcmp(got.key, key.key, 32), 0);
    /* An unkeyed database (before schema 6) keeps its "no key". */
    key.keylen = 0;
    key.daily = 0;
    ck_assert_int_eq(qrt_schema_memo_parse(qrt_schema_memo_format(pool, 7, &key), &build, &got), 0);
    ck_assert(build == 7);
    ck_assert_int_eq(got.keylen, 0);
    ck_assert_int_eq(got.daily, 0);
    for (i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        build = 99;
        ck_assert_msg(qrt_schema_memo_parse(bad[i], &build, &got) == -1, "%s", bad[i]);
        ck_assert(build == 99);
    }
    ck_assert_int_eq(qrt_schema_memo_parse(NULL, &build, &got), -1);
}
END_TEST

START_TEST(names_once_forms_on_statements)
{
    int i, j, sqlite = 0, pg = 0;

    for (i = 0; qrt_sql_statements[i].name; i++) {
        const qrt_sql_t *s = &qrt_sql_statements[i];

        ck_assert_msg(s->sql || s->pgsql, "%s has no SQL", s->name);
        for (j = 0; j < i; j++) {
            ck_assert_msg(strcmp(qrt_sql_statements[j].name, s->name), "%s twice", s->name);
        }
        sqlite += s->sql != NULL;
        pg++;
    }
    ck_assert_int_eq(i, QRT_SQL_COUNT);
    /* each backend prepares its own: a PostgreSQL form replaces its statement */
    ck_assert_int_eq(qrt_store_statement_count("sqlite3"), sqlite);
    ck_assert_int_eq(qrt_store_statement_count("pgsql"), pg);
}
END_TEST

START_TEST(many_rows_forms_have_their_statement)
{
    int i;

    for (i = 0; qrt_sql_statements[i].name; i++) {
        const char *name = qrt_sql_statements[i].name;
        size_t n = strlen(name);

        if (n > 5 && !strcmp(name + n - 5, "_many")) {
            const qrt_sql_t *one = stmt_find(apr_pstrmemdup(pool, name, n - 5));

            /* qrt_db_exec_rows / qrt_db_each_rows: "<name>_many" on PostgreSQL, the
             * statement of one row elsewhere */
            ck_assert_msg(one && one->sql, "%s: no statement of one row", name);
            ck_assert_msg(qrt_sql_statements[i].sql == NULL, "%s: PostgreSQL only", name);
        }
    }
}
END_TEST

START_TEST(sqlite_prepares_every_statement)
{
    const char *dir;
    qrt_db_t db;

    /* (prepares them all, and fails on the first that SQLite refuses) */
    dir = qrt_check_db_temp(pool, "stmts", &db);
    ck_assert_int_eq(apr_hash_count(db.prepared), qrt_store_statement_count("sqlite3"));
    qrt_check_db_remove(pool, &db, dir);
}
END_TEST

static Suite *statements_suite(void)
{
    Suite *s = suite_create("statements");
    TCase *tc = tcase_create("table");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, build_id_is_stable_and_made_of_the_text);
    tcase_add_test(tc, memo_round_trips_and_refuses_what_it_did_not_write);
    tcase_add_test(tc, names_once_forms_on_statements);
    tcase_add_test(tc, many_rows_forms_have_their_statement);
    tcase_add_test(tc, sqlite_prepares_every_statement);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(statements_suite());
}
