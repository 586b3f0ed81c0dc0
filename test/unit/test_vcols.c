/* Unit tests for qrt_vcols: a block read back as built (times, visitors, sources and
 * strings, shared strings stored once), an empty block, damaged blocks refused; and
 * qrt_vgroups' numbered groups counting as qrt_vgroups_add does. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>

#include "qrt_vcols.h"
#include "qrt_vgroups.h"
#include "qrt_check.h"

QRT_CHECK_POOL

/* A visitor id of either sign. */
static apr_int64_t who(apr_size_t i)
{
    /* (in unsigned arithmetic, which wraps: 2 << 62 does not fit a signed 64-bit) */
    return (apr_int64_t)((apr_uint64_t)(i * 2654435761u)
                         - (apr_uint64_t)(i % 3) * (APR_UINT64_C(1) << 62));
}

START_TEST(block_read_back)
{
    static const char *const browsers[] = { "Chrome", "Safari", "", "Firefox" };
    static const char *const cities[] = { "Berlin", "Paris", "Zürich" };
    qrt_vcols_builder_t *b = qrt_vcols_builder_make(pool);
    const char *data;
    apr_size_t len = 0, i;
    qrt_vcols_t v;

    for (i = 0; i < 1000; i++) {
        qrt_vcols_add(b, APR_INT64_C(1767225600) + (apr_int64_t)i * 7, i % 5 == 0,
                      who(i),
                      browsers[i % 4], i % 7 ? "DE" : NULL, cities[i % 3]);
    }
    ck_assert_uint_eq(qrt_vcols_count(b), 1000);
    data = qrt_vcols_block(b, &len);
    ck_assert_uint_eq(len % 8, 0);
    ck_assert_uint_eq((apr_uintptr_t)data % 8, 0);
    ck_assert_int_eq(qrt_vcols_open(&v, data, len), APR_SUCCESS);
    ck_assert_int_eq(qrt_vcols_check(&v), APR_SUCCESS);
    ck_assert_uint_eq(v.n, 1000);
    /* 4 browsers (one of them ""), "DE" and "", 3 cities */
    ck_assert_uint_eq(v.nent[QRT_VCOLS_BROWSER], 4);
    ck_assert_uint_eq(v.nent[QRT_VCOLS_COUNTRY], 2);
    ck_assert_uint_eq(v.nent[QRT_VCOLS_CITY], 3);
    for (i = 0; i < 1000; i++) {
        ck_assert(qrt_vcols_time(&v, i) == APR_INT64_C(1767225600) + (apr_int64_t)i * 7);
        ck_assert(v.visitor[i] == who(i));
        ck_assert_int_eq(v.click[i], i % 5 == 0);
        ck_assert_str_eq(qrt_vcols_string(&v, NULL, QRT_VCOLS_BROWSER, i, pool),
                         browsers[i % 4]);
        ck_assert_str_eq(qrt_vcols_string(&v, NULL, QRT_VCOLS_COUNTRY, i, pool),
                         i % 7 ? "DE" : "");
        ck_assert_str_eq(qrt_vcols_string(&v, NULL, QRT_VCOLS_CITY, i, pool), cities[i % 3]);
    }
    ck_assert_ptr_null(qrt_vcols_string(&v, NULL, QRT_VCOLS_CITY, 1000, pool));
    /* times from the first in 4 bytes, an index of each column in 1: the header, 8 + 4 +
     * 3 + 1 bytes a visit, 9 entries, one day's counts (8) and the texts (without numbers:
     * every one) */
    ck_assert_ptr_nonnull(v.t32);
    ck_assert_int_eq(v.tmin, APR_INT64_C(1767225600));
    ck_assert_int_eq(v.tmax, APR_INT64_C(1767225600) + 999 * 7);
    ck_assert_uint_eq(v.width[QRT_VCOLS_CITY], 1);
    ck_assert_uint_eq(v.strbytes, 23 + 4 + 21);
    ck_assert_uint_eq(v.ndays, 1);
    ck_assert_uint_eq(len, (40 + 1000 * 16 + 9 * 4 + 8 + 48 + 7) / 8 * 8);
}
END_TEST

/* A block whose visits came in time order (ties included), 8 a day or more, counts its
 * visits and clicks by UTC day, a day's visits the run after the days' before (days
 * without a visit counted 0, days before 1970 by their floor); one with a visit earlier
 * than the one before, fewer visits a day, or spanning more than 64 days has no table; a
 * table that does not match its visits fails the check. */
START_TEST(visits_counted_by_day)
{
    static const apr_int64_t asc[] = { -86401, -1, 0, 100, 100, 86399, 3 * 86400 + 5,
                                       3 * 86400 + 5 };
    static const int clicks[] = { 1, 0, 1, 1, 0, 0, 1, 1 };
    static const apr_uint32_t want[] = { 1, 1, 1, 0, 4, 2, 0, 0, 0, 0, 2, 2 };
    qrt_vcols_builder_t *b = qrt_vcols_builder_make(pool);
    const char *data;
    char *copy;
    apr_size_t len = 0, i, j;
    qrt_vcols_t v;

    /* 6 days, each visit 6 times: 48 visits */
    for (i = 0; i < sizeof(asc) / sizeof(asc[0]); i++) {
        for (j = 0; j < 6; j++) {
            qrt_vcols_add(b, asc[i], clicks[i], who(i), "Chrome", "DE", "Berlin");
        }
    }
    data = qrt_vcols_block(b, &len);
    ck_assert_int_eq(qrt_vcols_open(&v, data, len), APR_SUCCESS);
    ck_assert_int_eq(qrt_vcols_check(&v), APR_SUCCESS);
    ck_assert_uint_eq(v.ndays, 6);
    ck_assert_int_eq(v.day0, -2);
    for (i = 0; i < 12; i++) {
        ck_assert_uint_eq(v.days[i], 6 * want[i]);
    }
    /* the same block with a day's clicks told wrong, or its times put out of order */
    copy = apr_pmemdup(pool, data, len);
    ck_assert_int_eq(qrt_vcols_open(&v, copy, len), APR_SUCCESS);
    ((apr_uint32_t *)(void *)v.days)[5]--;
    ck_assert_int_eq(qrt_vcols_check(&v), APR_EINVAL);
    memcpy(copy, data, len);
    ck_assert_int_eq(qrt_vcols_open(&v, copy, len), APR_SUCCESS);
    {
        apr_uint32_t *t = (apr_uint32_t *)(void *)v.t32, x = t[6];

        t[6] = t[12];
        t[12] = x;
    }
    ck_assert_int_eq(qrt_vcols_check(&v), APR_EINVAL);
    /* one visit out of order, or a visit fewer: no table */
    for (i = 0; i < 2; i++) {
        b = qrt_vcols_builder_make(pool);
        for (j = 0; j < 48 - i; j++) {
            qrt_vcols_add(b, asc[j / 6] + (!i && j == 20 ? 30 : 0), 0, who(j),
                          "Chrome", "DE", "Berlin");
        }
        data = qrt_vcols_block(b, &len);
        ck_assert_int_eq(qrt_vcols_open(&v, data, len), APR_SUCCESS);
        ck_assert_int_eq(qrt_vcols_check(&v), APR_SUCCESS);
        ck_assert_uint_eq(v.ndays, 0);
        ck_assert_ptr_null(v.days);
    }
    /* 512 visits over 64 days: a table; over 65: none */
    for (i = 0; i < 2; i++) {
        b = qrt_vcols_builder_make(pool);
        for (j = 0; j < 512; j++) {
            qrt_vcols_add(b, j < 511 ? 7 + (apr_int64_t)j * 10000
                                     : (63 + (apr_int64_t)i) * 86400 + 7, 0, who(j),
                          NULL, NULL, NULL);
        }
        data = qrt_vcols_block(b, &len);
        ck_assert_int_eq(qrt_vcols_open(&v, data, len), APR_SUCCESS);
        ck_assert_int_eq(qrt_vcols_check(&v), APR_SUCCESS);
        ck_assert_uint_eq(v.ndays, i ? 0 : 64);
    }
}
END_TEST

/* An empty block; blocks cut short or with a byte of the header, an entry, an index or
 * a source changed. */
START_TEST(empty_and_damaged)
{
    qrt_vcols_builder_t *b = qrt_vcols_builder_make(pool);
    const char *data;
    char *copy;
    apr_size_t len = 0, cut, at_idx, at_ent, at_click;
    qrt_vcols_t v;

    data = qrt_vcols_block(b, &len);
    ck_assert_int_eq(qrt_vcols_open(&v, data, len), APR_SUCCESS);
    ck_assert_uint_eq(v.n, 0);
    ck_assert_int_eq(qrt_vcols_open(&v, NULL, 0), APR_EINVAL);
    ck_assert_int_eq(qrt_vcols_open(&v, data, 8), APR_EINVAL);

    b = qrt_vcols_builder_make(pool);
    qrt_vcols_add(b, 10, 0, 1, "a", "b", "c");
    qrt_vcols_add(b, 20, 1, 2, "a", "b", "d");
    data = qrt_vcols_block(b, &len);
    copy = apr_palloc(pool, len);
    for (cut = 8; cut < len; cut += 8) {
        ck_assert_int_eq(qrt_vcols_open(&v, data, cut), APR_EINVAL);
    }
    /* (where the parts lie, from the block opened whole) */
    ck_assert_int_eq(qrt_vcols_open(&v, data, len), APR_SUCCESS);
    at_idx = (apr_size_t)((const char *)v.idx[QRT_VCOLS_CITY] - data);
    at_ent = (apr_size_t)((const char *)v.ent[QRT_VCOLS_BROWSER] - data);
    at_click = (apr_size_t)((const char *)v.click - data);
    /* the header 40, visitors 16, times 8, indexes 3 x 2 (padded to 8), entries 4 x 4,
     * sources 2, texts 8, padding (two visits a day: no table of days) */
    ck_assert_uint_eq(at_idx, 40 + 16 + 8 + 2 + 2);
    ck_assert_uint_eq(at_ent, 40 + 16 + 8 + 8);
    ck_assert_uint_eq(at_click, at_ent + 16);
    ck_assert_uint_eq(len, 104);
    memcpy(copy, data, len);
    copy[0] ^= 1;
    ck_assert_int_eq(qrt_vcols_open(&v, copy, len), APR_EINVAL);
    /* an entry damaged: the block opens, the entry is refused where it is used, and by
     * the check */
    memcpy(copy, data, len);
    copy[at_ent] = 9;                   /* the browser's text: past the texts */
    ck_assert_int_eq(qrt_vcols_open(&v, copy, len), APR_SUCCESS);
    ck_assert(!qrt_vcols_entry_ok(&v, QRT_VCOLS_BROWSER, 0));
    ck_assert(qrt_vcols_entry_ok(&v, QRT_VCOLS_CITY, 0));
    ck_assert_ptr_null(qrt_vcols_string(&v, NULL, QRT_VCOLS_BROWSER, 0, pool));
    ck_assert_int_eq(qrt_vcols_check(&v), APR_EINVAL);
    memcpy(copy, data, len);
    copy[at_ent] = 1;                   /* ... or inside one */
    ck_assert_int_eq(qrt_vcols_open(&v, copy, len), APR_SUCCESS);
    ck_assert(!qrt_vcols_entry_ok(&v, QRT_VCOLS_BROWSER, 0));
    ck_assert_int_eq(qrt_vcols_check(&v), APR_EINVAL);
    memcpy(copy, data, len);
    memset(copy + at_ent, 0, 4);        /* ... or number 0 */
    ck_assert_int_eq(qrt_vcols_open(&v, copy, len), APR_SUCCESS);
    ck_assert(!qrt_vcols_entry_ok(&v, QRT_VCOLS_BROWSER, 0));
    ck_assert_int_eq(qrt_vcols_check(&v), APR_EINVAL);
    ck_assert(!qrt_vcols_entry_ok(&v, QRT_VCOLS_CITY, 2));   /* (past the entries) */
    memcpy(copy, data, len);
    copy[at_idx + 1] = 2;               /* the second visit's city: no such entry */
    ck_assert_int_eq(qrt_vcols_open(&v, copy, len), APR_SUCCESS);
    ck_assert_int_eq(qrt_vcols_check(&v), APR_EINVAL);
    ck_assert_ptr_null(qrt_vcols_string(&v, NULL, QRT_VCOLS_CITY, 1, pool));
    memcpy(copy, data, len);
    copy[at_click] = 2;                 /* the first source */
    ck_assert_int_eq(qrt_vcols_open(&v, copy, len), APR_SUCCESS);
    ck_assert_int_eq(qrt_vcols_check(&v), APR_EINVAL);
    memcpy(copy, data, len);
    copy[28] = 9;                       /* the latest time: before the second visit's */
    ck_assert_int_eq(qrt_vcols_open(&v, copy, len), APR_SUCCESS);
    ck_assert_int_eq(qrt_vcols_check(&v), APR_EINVAL);
    memcpy(copy, data, len);
    copy[24] = 1;                       /* wide times, with a latest time told */
    ck_assert_int_eq(qrt_vcols_open(&v, copy, len), APR_EINVAL);
    memcpy(copy, data, len);
    copy[24] = 4;                       /* the flags: none such */
    ck_assert_int_eq(qrt_vcols_open(&v, copy, len), APR_EINVAL);
    memcpy(copy, data, len);
    copy[16] = 0;                       /* the countries' entries: none, the others some */
    ck_assert_int_eq(qrt_vcols_open(&v, copy, len), APR_EINVAL);
    memcpy(copy, data, len);
    ck_assert_int_eq(qrt_vcols_open(&v, copy, len), APR_SUCCESS);
    ck_assert_int_eq(qrt_vcols_check(&v), APR_SUCCESS);
    ck_assert_str_eq(qrt_vcols_string(&v, NULL, QRT_VCOLS_CITY, 1, pool), "d");
    ck_assert_int_eq(qrt_vcols_time(&v, 1), 20);
}
END_TEST

/* Times 2^32 seconds apart or more take 8 bytes, a column of more than 65,536 entries
 * 4 bytes an index (of 256 or fewer 1, else 2); each reads back as built. */
START_TEST(wide_times_and_many_entries)
{
    qrt_vcols_builder_t *w = qrt_vcols_builder_make(pool), *m = qrt_vcols_builder_make(pool);
    const char *dw, *dm;
    apr_size_t lw, lm, i;
    qrt_vcols_t v;
    char city[32];

    /* 1970, just under 2^32 seconds later (narrow), then 9999 (wide) */
    qrt_vcols_add(w, 0, 0, 1, "A", "DE", "x");
    qrt_vcols_add(w, APR_INT64_C(4294967295), 1, 2, "B", "DE", "x");
    dw = qrt_vcols_block(w, &lw);
    ck_assert_int_eq(qrt_vcols_open(&v, dw, lw), APR_SUCCESS);
    ck_assert_ptr_nonnull(v.t32);
    ck_assert_int_eq(qrt_vcols_time(&v, 1), APR_INT64_C(4294967295));
    qrt_vcols_add(w, APR_INT64_C(253402300799), 0, 3, "A", "FR", "y");
    dw = qrt_vcols_block(w, &lw);
    ck_assert_int_eq(qrt_vcols_open(&v, dw, lw), APR_SUCCESS);
    ck_assert_int_eq(qrt_vcols_check(&v), APR_SUCCESS);
    ck_assert_ptr_null(v.t32);
    ck_assert_ptr_nonnull(v.t64);
    ck_assert(v.tmin == APR_INT64_MIN && v.tmax == APR_INT64_MAX);
    ck_assert_int_eq(qrt_vcols_time(&v, 0), 0);
    ck_assert_int_eq(qrt_vcols_time(&v, 1), APR_INT64_C(4294967295));
    ck_assert_int_eq(qrt_vcols_time(&v, 2), APR_INT64_C(253402300799));
    ck_assert_str_eq(qrt_vcols_string(&v, NULL, QRT_VCOLS_COUNTRY, 2, pool), "FR");
    ck_assert_str_eq(qrt_vcols_string(&v, NULL, QRT_VCOLS_BROWSER, 1, pool), "B");
    /* times as far apart as int64 goes */
    w = qrt_vcols_builder_make(pool);
    qrt_vcols_add(w, APR_INT64_MIN, 0, 1, NULL, NULL, NULL);
    qrt_vcols_add(w, APR_INT64_MAX, 0, 1, NULL, NULL, NULL);
    dw = qrt_vcols_block(w, &lw);
    ck_assert_int_eq(qrt_vcols_open(&v, dw, lw), APR_SUCCESS);
    ck_assert(qrt_vcols_time(&v, 0) == APR_INT64_MIN);
    ck_assert(qrt_vcols_time(&v, 1) == APR_INT64_MAX);
    ck_assert_str_eq(qrt_vcols_string(&v, NULL, QRT_VCOLS_CITY, 1, pool), "");

    for (i = 0; i < 70001; i++) {
        apr_snprintf(city, sizeof(city), "c%" APR_SIZE_T_FMT, i);
        qrt_vcols_add(m, 1000 - (apr_int64_t)i, (int)(i & 1), (apr_int64_t)i, "Firefox",
                      i % 200 ? "DE" : city, city);
    }
    dm = qrt_vcols_block(m, &lm);
    ck_assert_int_eq(qrt_vcols_open(&v, dm, lm), APR_SUCCESS);
    ck_assert_int_eq(qrt_vcols_check(&v), APR_SUCCESS);
    ck_assert_uint_eq(v.width[QRT_VCOLS_BROWSER], 1);
    ck_assert_uint_eq(v.width[QRT_VCOLS_COUNTRY], 2);
    ck_assert_uint_eq(v.width[QRT_VCOLS_CITY], 4);
    /* (70,001 one-byte indexes before them: each column aligned to its width) */
    ck_assert_uint_eq((apr_uintptr_t)v.idx[QRT_VCOLS_COUNTRY] % 2, 0);
    ck_assert_uint_eq((apr_uintptr_t)v.idx[QRT_VCOLS_CITY] % 4, 0);
    ck_assert_uint_eq(v.nent[QRT_VCOLS_CITY], 70001);
    ck_assert_int_eq(v.base, 1000 - 70000);
    for (i = 0; i < 70001; i += 997) {
        apr_snprintf(city, sizeof(city), "c%" APR_SIZE_T_FMT, i);
        ck_assert_str_eq(qrt_vcols_string(&v, NULL, QRT_VCOLS_CITY, i, pool), city);
        ck_assert_str_eq(qrt_vcols_string(&v, NULL, QRT_VCOLS_COUNTRY, i, pool),
                         i % 200 ? "DE" : city);
        ck_assert_str_eq(qrt_vcols_string(&v, NULL, QRT_VCOLS_BROWSER, i, pool), "Firefox");
        ck_assert_int_eq(qrt_vcols_time(&v, i), 1000 - (apr_int64_t)i);
        ck_assert_int_eq(v.click[i], (int)(i & 1));
    }
}
END_TEST

START_TEST(numbered_groups)
{
    qrt_vgroups_t *a = qrt_vgroups_make(1000), *b = qrt_vgroups_make(1000);
    apr_uint32_t gx, gy;
    apr_size_t la, lb;
    char *ta, *tb;
    int i;

    gy = qrt_vgroups_group(b, "y", 1);
    gx = qrt_vgroups_group(b, "x", 1);
    ck_assert_uint_gt(gx, 0);
    ck_assert_uint_ne(gx, gy);
    ck_assert_uint_eq(qrt_vgroups_group(b, "x", 1), gx);
    for (i = 0; i < 300; i++) {
        ck_assert_int_eq(qrt_vgroups_add(a, i % 3 ? "x" : "y", 1, i % 4 == 0, i % 37), 0);
        ck_assert_int_eq(qrt_vgroups_add_to(b, i % 3 ? gx : gy, i % 4 == 0, i % 37), 0);
    }
    /* no such group */
    ck_assert_int_eq(qrt_vgroups_add_to(b, 0, 0, 1), -1);
    ck_assert_int_eq(qrt_vgroups_add_to(b, 3, 0, 1), -1);
    ta = qrt_vgroups_text(a, &la);
    tb = qrt_vgroups_text(b, &lb);
    /* (the groups in the order they were made: y first in both) */
    ck_assert_str_eq(ta, tb);
    ck_assert_uint_eq(qrt_vgroups_group(b, "z", 1), 0);
    ck_assert_int_eq(qrt_vgroups_add_to(b, gx, 0, 1), -1);
    free(ta);
    free(tb);
    qrt_vgroups_free(a);
    qrt_vgroups_free(b);
}
END_TEST

#define NUM(v, col, k) qrt_vcols_num((v), (col), qrt_vcols_idx((v), (col), (k)))

START_TEST(strings_numbered_across_blocks)
{
    qrt_strid_t *ids = qrt_strid_make(pool, 3, 1 << 20);
    qrt_vcols_builder_t *a = qrt_vcols_builder_make(pool), *b = qrt_vcols_builder_make(pool);
    qrt_vcols_builder_t *none = qrt_vcols_builder_make(pool);
    qrt_vcols_t va, vb, vn;
    const char *da, *db, *dn;
    apr_size_t la, lb, ln;

    ck_assert_ptr_nonnull(ids);
    qrt_vcols_builder_ids(a, ids);
    qrt_vcols_builder_ids(b, ids);
    qrt_vcols_add(a, 1, 0, 7, "Firefox", "DE", "Berlin");
    qrt_vcols_add(b, 2, 0, 8, "Chrome", "DE", "Berlin");
    qrt_vcols_add(b, 3, 1, 9, "Firefox", "FR", "Paris");
    qrt_vcols_add(none, 4, 0, 9, "Firefox", "DE", "Berlin");
    da = qrt_vcols_block(a, &la);
    db = qrt_vcols_block(b, &lb);
    dn = qrt_vcols_block(none, &ln);
    ck_assert_int_eq(qrt_vcols_open(&va, da, la), APR_SUCCESS);
    ck_assert_int_eq(qrt_vcols_open(&vb, db, lb), APR_SUCCESS);
    ck_assert_int_eq(qrt_vcols_open(&vn, dn, ln), APR_SUCCESS);
    /* Firefox, DE, Berlin: 1, 2, 3 */
    ck_assert_uint_eq(NUM(&va, QRT_VCOLS_BROWSER, 0), 1);
    ck_assert_uint_eq(NUM(&va, QRT_VCOLS_COUNTRY, 0), 2);
    ck_assert_uint_eq(NUM(&va, QRT_VCOLS_CITY, 0), 3);
    ck_assert_uint_eq(NUM(&vb, QRT_VCOLS_COUNTRY, 0), 2);
    ck_assert_uint_eq(NUM(&vb, QRT_VCOLS_CITY, 0), 3);
    ck_assert_uint_eq(NUM(&vb, QRT_VCOLS_BROWSER, 1), 1);
    /* the table holds 3: Chrome, FR and Paris have none, and their texts instead; a
     * number's string is read back from the table */
    ck_assert_uint_eq(NUM(&vb, QRT_VCOLS_BROWSER, 0), 0);
    ck_assert_uint_eq(NUM(&vb, QRT_VCOLS_COUNTRY, 1), 0);
    ck_assert_uint_eq(NUM(&vb, QRT_VCOLS_CITY, 1), 0);
    ck_assert_str_eq(qrt_vcols_string(&vb, NULL, QRT_VCOLS_CITY, 1, pool), "Paris");
    ck_assert_str_eq(qrt_vcols_string(&vb, NULL, QRT_VCOLS_BROWSER, 0, pool), "Chrome");
    ck_assert_ptr_null(qrt_vcols_string(&vb, NULL, QRT_VCOLS_BROWSER, 1, pool));
    ck_assert_str_eq(qrt_vcols_string(&vb, ids, QRT_VCOLS_BROWSER, 1, pool), "Firefox");
    ck_assert_str_eq(qrt_vcols_string(&vb, ids, QRT_VCOLS_CITY, 0, pool), "Berlin");
    ck_assert_uint_eq(vb.strbytes, 7 + 3 + 6);
    ck_assert_uint_eq(qrt_strid_count(ids), 3);
    ck_assert_uint_eq(NUM(&vn, QRT_VCOLS_CITY, 0), 0);
    ck_assert_str_eq(qrt_vcols_string(&vn, ids, QRT_VCOLS_CITY, 0, pool), "Berlin");
    ck_assert_int_eq(qrt_vcols_check(&vb), APR_SUCCESS);
}
END_TEST

/* A block of no strings: times, visitors and sources only, in fewer bytes than the same
 * visits with their strings; no entries; a damaged source still refused. */
START_TEST(a_block_of_no_strings)
{
    qrt_vcols_builder_t *bare = qrt_vcols_builder_make(pool), *full = qrt_vcols_builder_make(pool);
    const char *db;
    char *copy;
    apr_size_t lb, lf;
    qrt_vcols_t v;
    int i;

    qrt_vcols_builder_bare(bare);
    for (i = 0; i < 10; i++) {
        qrt_vcols_add(bare, 100 + i, i % 3 == 0, 1000 + i, "Firefox", "DE", "Berlin");
        qrt_vcols_add(full, 100 + i, i % 3 == 0, 1000 + i, "Firefox", "DE", "Berlin");
    }
    db = qrt_vcols_block(bare, &lb);
    ck_assert_ptr_nonnull(qrt_vcols_block(full, &lf));
    ck_assert_uint_lt(lb, lf);
    ck_assert_int_eq(qrt_vcols_open(&v, db, lb), APR_SUCCESS);
    ck_assert_int_eq(qrt_vcols_check(&v), APR_SUCCESS);
    ck_assert_uint_eq(v.n, 10);
    ck_assert_uint_eq(v.nent[QRT_VCOLS_BROWSER] + v.nent[QRT_VCOLS_CITY], 0);
    ck_assert_ptr_null(v.idx[QRT_VCOLS_CITY]);
    ck_assert_ptr_null(qrt_vcols_string(&v, NULL, QRT_VCOLS_CITY, 0, pool));
    /* header, then 8 + 4 + 1 bytes a visit, one day's counts */
    ck_assert_uint_eq(lb, (40 + 10 * 13 + 8 + 7) / 8 * 8);
    for (i = 0; i < 10; i++) {
        ck_assert_int_eq(qrt_vcols_time(&v, i), 100 + i);
        ck_assert_int_eq(v.visitor[i], 1000 + i);
        ck_assert_uint_eq(v.click[i], i % 3 == 0);
    }
    copy = apr_pmemdup(pool, db, lb);
    copy[40 + 80 + 40 + 8] = 2;         /* the first source, after visitors, times, days */
    ck_assert_int_eq(qrt_vcols_open(&v, copy, lb), APR_SUCCESS);
    ck_assert_int_eq(qrt_vcols_check(&v), APR_EINVAL);
    /* cut short */
    ck_assert_int_eq(qrt_vcols_open(&v, db, lb - 8), APR_EINVAL);
}
END_TEST

/* Visits added by their strings' entries (qrt_vcols_entry, taken once for a string shared
 * by many visits) make the same block, byte for byte, as the same visits added by text,
 * with and without numbers, and in a block of no strings. */
START_TEST(visits_added_by_entry)
{
    static const char *const browsers[] = { "Chrome", "Safari", "", "Firefox", NULL };
    static const char *const cities[] = { "Berlin", "Paris", "Zürich" };
    qrt_strid_t *ids = qrt_strid_make(pool, 4, 1 << 20), *ids2 = qrt_strid_make(pool, 4, 1 << 20);
    int numbered, bare;

    for (numbered = 0; numbered < 2; numbered++) {
        for (bare = 0; bare < 2; bare++) {
            qrt_vcols_builder_t *byt = qrt_vcols_builder_make(pool);
            qrt_vcols_builder_t *bye = qrt_vcols_builder_make(pool);
            qrt_vcols_builder_t *byn = qrt_vcols_builder_make(pool);
            const char *dt, *de, *dn, *seen[QRT_VCOLS_COLS][16];
            apr_size_t lt, le, ln, i, nseen[QRT_VCOLS_COLS] = { 0, 0, 0 };

            if (numbered) {
                qrt_vcols_builder_ids(byt, ids);
                qrt_vcols_builder_ids(bye, ids2);
                qrt_vcols_builder_ids(byn, qrt_strid_make(pool, 4, 1 << 20));
            }
            if (bare) {
                qrt_vcols_builder_bare(byt);
                qrt_vcols_builder_bare(bye);
                qrt_vcols_builder_bare(byn);
            }
            for (i = 0; i < 700; i++) {
                const char *br = browsers[i % 5], *co = i % 7 ? "DE" : NULL;
                const char *ci = cities[(i / 3) % 3];
                apr_uint32_t e[QRT_VCOLS_COLS];
                apr_int64_t t = APR_INT64_C(1767225600) + (apr_int64_t)(i * 13 % 700);

                qrt_vcols_add(byt, t, i % 4 == 0, who(i), br, co, ci);
                e[QRT_VCOLS_BROWSER] = bare ? 0 : qrt_vcols_entry(bye, QRT_VCOLS_BROWSER, br);
                e[QRT_VCOLS_COUNTRY] = bare ? 0 : qrt_vcols_entry(bye, QRT_VCOLS_COUNTRY, co);
                e[QRT_VCOLS_CITY] = bare ? 0 : qrt_vcols_entry(bye, QRT_VCOLS_CITY, ci);
                qrt_vcols_add_entries(bye, t, i % 4 == 0, who(i), e);
                /* numbered by the caller: each text's entry made once, in order met */
                if (!bare) {
                    const char *txt[QRT_VCOLS_COLS] = { br ? br : "", co ? co : "", ci };
                    int c;

                    for (c = 0; c < QRT_VCOLS_COLS; c++) {
                        apr_size_t k;

                        for (k = 0; k < nseen[c] && strcmp(seen[c][k], txt[c]); k++) {
                        }
                        if (k == nseen[c]) {
                            seen[c][nseen[c]++] = txt[c];
                            ck_assert_uint_eq(qrt_vcols_entry_new(byn, c, txt[c]), k);
                        }
                        e[c] = (apr_uint32_t)k;
                    }
                }
                qrt_vcols_add_entries(byn, t, i % 4 == 0, who(i), e);
            }
            /* an entry taken again is the same one */
            if (!bare) {
                ck_assert_uint_eq(qrt_vcols_entry(bye, QRT_VCOLS_CITY, "Paris"), 1);
                ck_assert_uint_eq(qrt_vcols_entry(bye, QRT_VCOLS_BROWSER, NULL),
                                  qrt_vcols_entry(bye, QRT_VCOLS_BROWSER, ""));
            }
            dt = qrt_vcols_block(byt, &lt);
            de = qrt_vcols_block(bye, &le);
            dn = qrt_vcols_block(byn, &ln);
            ck_assert_uint_eq(lt, le);
            ck_assert_int_eq(memcmp(dt, de, lt), 0);
            ck_assert_uint_eq(lt, ln);
            ck_assert_int_eq(memcmp(dt, dn, lt), 0);
        }
    }
}
END_TEST

static Suite *vcols_suite(void)
{
    Suite *s = suite_create("qrt_vcols");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, block_read_back);
    tcase_add_test(tc, visits_counted_by_day);
    tcase_add_test(tc, visits_added_by_entry);
    tcase_add_test(tc, strings_numbered_across_blocks);
    tcase_add_test(tc, a_block_of_no_strings);
    tcase_add_test(tc, empty_and_damaged);
    tcase_add_test(tc, wide_times_and_many_entries);
    tcase_add_test(tc, numbered_groups);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(vcols_suite());
}
