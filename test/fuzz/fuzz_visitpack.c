/* libFuzzer target for qrt_visitpack.c, the visits' form in the shared-memory queue.
 *
 * The input is read twice:
 *  - as packed bytes: qrt_visit_unpack must refuse them or give a visit that packs
 *    back to the same bytes;
 *  - as a visit: 28 bytes of integers, then the 10 strings separated by NUL bytes
 *    (a string "\x01" stands for NULL), packed into a buffer whose size the first
 *    byte picks: it always fits (in the short form at worst), unpacks to the same
 *    integers and to prefixes of the strings cut on a UTF-8 character boundary, and
 *    packs back to the same bytes.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <apr_general.h>
#include <apr_strings.h>
#include <stdio.h>
#include "qrt_visitpack.h"

#define FZ_FAIL(what) do { fprintf(stderr, "fuzz_visitpack: %s (line %d)\n", what, __LINE__); abort(); } while (0)

static const size_t fz_str[] = {
    offsetof(qrt_visit_t, source), offsetof(qrt_visit_t, ip),
    offsetof(qrt_visit_t, country), offsetof(qrt_visit_t, city),
    offsetof(qrt_visit_t, browser), offsetof(qrt_visit_t, browser_version),
    offsetof(qrt_visit_t, os), offsetof(qrt_visit_t, device),
    offsetof(qrt_visit_t, referer), offsetof(qrt_visit_t, user_agent),
    offsetof(qrt_visit_t, destination), offsetof(qrt_visit_t, over_destination)
};
#define FZ_STRINGS (sizeof(fz_str) / sizeof(fz_str[0]))
#define FZ_FIELD(v, i) (*(const char **)((char *)(v) + fz_str[i]))

static void fz_check_cut(const char *orig, const char *got)
{
    size_t n;

    if (!orig || !got) {
        if (orig || got) {
            FZ_FAIL("invariant");
        }
        return;
    }
    n = strlen(got);
    if (n > strlen(orig) || memcmp(orig, got, n) != 0) {
        FZ_FAIL("invariant");
    }
    if (n < strlen(orig) && ((unsigned char)orig[n] & 0xC0) == 0x80) {
        FZ_FAIL("invariant");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int init;
    apr_pool_t *p;
    qrt_visit_t v, w;
    char *buf, *again, *copy, *s, *end;
    apr_size_t bufsize, n;
    size_t i;

    if (!init) {
        apr_initialize();
        init = 1;
    }
    apr_pool_create(&p, NULL);

    /* 1. Arbitrary bytes as a packed visit. */
    memset(&w, 0, sizeof(w));
    if (qrt_visit_unpack(p, (const char *)data, size, &w) == 0) {
        buf = apr_palloc(p, size + 1);
        n = qrt_visit_pack(buf, size + 1, &w);
        if (n != size || memcmp(buf, data, size) != 0) {
            FZ_FAIL("invariant");
        }
    }

    /* 2. Bytes as a visit. */
    if (size >= 29) {
        memset(&v, 0, sizeof(v));
        bufsize = QRT_VISITPACK_MIN_SIZE + (apr_size_t)data[0] * 97;
        memcpy(&v.tracker_id, data + 1, 8);
        memcpy(&v.visit_start, data + 9, 8);
        memcpy(&v.bot, data + 17, sizeof(v.bot));
        memcpy(&v.visitor, data + 21, 8);
        copy = apr_pstrmemdup(p, (const char *)data + 29, size - 29);
        end = copy + (size - 29);
        for (i = 0, s = copy; i < FZ_STRINGS; i++) {
            if (s > end) {
                FZ_FIELD(&v, i) = NULL;
                continue;
            }
            FZ_FIELD(&v, i) = strcmp(s, "\x01") ? s : NULL;
            s += strlen(s) + 1;
        }
        buf = apr_palloc(p, bufsize);
        n = qrt_visit_pack(buf, bufsize, &v);
        if (n == 0 || n > bufsize) {
            FZ_FAIL("invariant");
        }
        memset(&w, 0, sizeof(w));
        if (qrt_visit_unpack(p, buf, n, &w) != 0) {
            FZ_FAIL("invariant");
        }
        if (w.tracker_id != v.tracker_id || w.visit_start != v.visit_start
            || w.bot != v.bot || w.visitor != v.visitor) {
            FZ_FAIL("invariant");
        }
        for (i = 0; i < FZ_STRINGS; i++) {
            fz_check_cut(FZ_FIELD(&v, i), FZ_FIELD(&w, i));
        }
        again = apr_palloc(p, bufsize);
        if (qrt_visit_pack(again, bufsize, &w) != n || memcmp(again, buf, n) != 0) {
            FZ_FAIL("invariant");
        }
    }
    apr_pool_destroy(p);
    return 0;
}
