/* libFuzzer target for qrt_jsonl.c, the one-pass reader of visit lines, and for
 * qrt_import_line, which reads a visit from one.
 *
 * The input, cut at its first NUL, is a line: what qrt_jsonl_flat takes, jansson must
 * read as an object with the same members and values (the last duplicate winning);
 * what it declines must be left as it came. qrt_import_line must take it as a visit
 * (a positive tracker id, a source of scan or click, a time, text fields within their
 * bounds), call it blank, or reject it with a reason.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <apr_general.h>
#include "qrt_import.h"
#include "qrt_jsonl.h"

#define FZ_FAIL(what) \
    do { fprintf(stderr, "fuzz_jsonl: %s (line %d)\n", what, __LINE__); abort(); } while (0)
#define FZ_MAX 16

/* qrt_import_line on its own copy of the line. */
static void fz_import(const char *text, size_t len)
{
    static apr_pool_t *p;
    char *line = malloc(len + 1);
    const char *why = NULL;
    qrt_visit_t v;
    int rc;

    if (!p) {
        apr_initialize();
        apr_pool_create(&p, NULL);
    }
    memcpy(line, text, len + 1);
    rc = qrt_import_line(p, line, len, NULL, &v, &why);
    if (rc > 0 && (why || v.tracker_id <= 0 || !v.source || !v.device
                   || (strcmp(v.source, "scan") && strcmp(v.source, "click"))
                   || (v.city && strlen(v.city) > 128)
                   || (v.user_agent && strlen(v.user_agent) > 1024))) {
        FZ_FAIL("a visit out of bounds");
    }
    if ((rc < 0 && !why) || (rc == 0 && why)) {
        FZ_FAIL("a rejection without its reason");
    }
    free(line);
    apr_pool_clear(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *line = malloc(size + 1), *copy = malloc(size + 1);
    qrt_jv_t m[FZ_MAX];
    json_error_t je;
    json_t *o, *v;
    const char *k;
    size_t len;
    int n = 0, i;

    memcpy(line, data, size);
    line[size] = '\0';
    len = strlen(line);
    fz_import(line, len);
    memcpy(copy, line, len + 1);
    if (qrt_jsonl_flat(line, len, m, FZ_MAX, &n) != 0) {
        if (memcmp(line, copy, len + 1) != 0) {
            FZ_FAIL("declined, but changed");
        }
        free(line);
        free(copy);
        return 0;
    }
    o = json_loads(copy, 0, &je);
    if (!o || !json_is_object(o)) {
        FZ_FAIL("taken, but not a JSON object to jansson");
    }
    json_object_foreach(o, k, v) {
        const qrt_jv_t *x = qrt_jsonl_get(m, n, k);

        if (!x) {
            FZ_FAIL("a member missing");
        }
        if (json_is_string(v)) {
            if (x->type != QRT_JV_STR || x->len != json_string_length(v)
                || memcmp(x->str, json_string_value(v), x->len) != 0) {
                FZ_FAIL("a string differs");
            }
        }
        else if (json_is_integer(v)) {
            if (x->type != QRT_JV_INT || x->num != json_integer_value(v)) {
                FZ_FAIL("an integer differs");
            }
        }
        else if ((json_is_true(v) && x->type != QRT_JV_TRUE)
                 || (json_is_false(v) && x->type != QRT_JV_FALSE)
                 || (json_is_null(v) && x->type != QRT_JV_NULL)
                 || json_is_real(v) || json_is_array(v) || json_is_object(v)) {
            FZ_FAIL("a value differs");
        }
    }
    for (i = 0; i < n; i++) {
        if (!json_object_get(o, m[i].key)) {
            FZ_FAIL("an extra member");
        }
    }
    json_decref(o);
    free(line);
    free(copy);
    return 0;
}
