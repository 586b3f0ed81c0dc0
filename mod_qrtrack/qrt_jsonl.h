/* qrt_jsonl: the members of one flat JSON object, as `qrtrack-admin visits import`
 * reads a line (no httpd, no jansson).
 *
 * A visit line is an object of strings, integers, booleans and nulls. Reading it
 * with jansson is a large share of an import's work: its lexer
 * takes one character at a time through a callback, and it builds a value and a
 * hash table per line. qrt_jsonl_flat reads the common line in one pass, in place;
 * whatever it does not take whole (an escape in a key, \u0000 or a lone surrogate, a
 * nested value, a number with a fraction or an exponent, too many members) it
 * declines, and the caller
 * reads the line with jansson instead (admin_jmembers in qrtrack-admin gives
 * the same members). What it takes, jansson takes alike: test/unit/test_jsonl.c
 * and test/fuzz/fuzz_jsonl.c compare the two. */
#ifndef QRT_JSONL_H
#define QRT_JSONL_H

#include <apr.h>

typedef enum {
    QRT_JV_NULL,
    QRT_JV_FALSE,
    QRT_JV_TRUE,
    QRT_JV_INT,
    QRT_JV_STR,
    QRT_JV_OTHER                /* a real number, an array or an object (jansson's) */
} qrt_jv_type;

/* One member. key and str are NUL-terminated (in the line, or the caller's). */
typedef struct {
    const char *key;
    apr_size_t keylen;
    qrt_jv_type type;
    const char *str;            /* QRT_JV_STR */
    apr_size_t len;             /* its bytes */
    apr_int64_t num;            /* QRT_JV_INT */
} qrt_jv_t;

#define QRT_JSONL_DECLINED 1

/* Reads line (len bytes; whitespace around the object allowed) as one JSON object
 * whose keys are strings without escapes and whose values are strings, integers (no
 * fraction, no exponent, within 64 bits), true, false or null; its strings valid UTF-8
 * without raw control characters. 0 and *n members in out (at most max; keys may
 * repeat, in the line's order), or QRT_JSONL_DECLINED (out undefined): not of that
 * form, or not JSON at all. Taken whole, the strings are cut out of line in place
 * (each closing quote becomes a NUL) and their escapes written out in place, as
 * jansson reads them; declined, line is as it came. */
int qrt_jsonl_flat(char *line, apr_size_t len, qrt_jv_t *out, int max, int *n);

/* The last member named key (JSON's last duplicate wins, as with jansson), or
 * NULL. */
const qrt_jv_t *qrt_jsonl_get(const qrt_jv_t *m, int n, const char *key);

/* The first member whose name an earlier one has too (the later of the two), or NULL:
 * for a reader that refuses such an object, as the API does. */
const qrt_jv_t *qrt_jsonl_repeated(const qrt_jv_t *m, int n);

#endif
