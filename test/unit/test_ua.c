/*
 * Unit tests of qrt_ua (user-agent classification).
 *
 * Needs Debian's uap-core (regexes.yaml and its test vectors); the
 * environment variable QRT_UAP_DIR overrides /usr/share/uap-core.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <check.h>
#include <yaml.h>

#include <apr_general.h>
#include <apr_pools.h>
#include <apr_strings.h>
#include <apr_thread_proc.h>

#include "qrt_ua.h"
#include "qrt_valid.h"
#include "qrt_check.h"

static const char *uap_dir = "/usr/share/uap-core";
static apr_pool_t *gpool;
static qrt_ua_db_t *gdb;
static const char *gerr;

static const char *uap_path(const char *rel)
{
    return apr_pstrcat(gpool, uap_dir, "/", rel, NULL);
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One test vector of uap-core. */
typedef struct {
    const char *ua;
    const char *family;     /* NULL when the file leaves it empty */
    const char *major;
} vector_t;

/* Reads the test_cases of a uap-core test file into *out; their count. */
static int load_vectors(apr_pool_t *p, const char *path, vector_t **out)
{
    FILE *f;
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_node_t *root, *seq = NULL;
    yaml_node_pair_t *pair;
    yaml_node_item_t *item;
    int n = 0;

    *out = NULL;
    f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    ck_assert(yaml_parser_initialize(&parser));
    yaml_parser_set_input_file(&parser, f);
    ck_assert_msg(yaml_parser_load(&parser, &doc), "YAML error in %s", path);
    yaml_parser_delete(&parser);
    fclose(f);

    root = yaml_document_get_root_node(&doc);
    ck_assert(root && root->type == YAML_MAPPING_NODE);
    for (pair = root->data.mapping.pairs.start;
         pair < root->data.mapping.pairs.top; pair++) {
        yaml_node_t *k = yaml_document_get_node(&doc, pair->key);

        if (k->type == YAML_SCALAR_NODE
            && !strcmp((char *)k->data.scalar.value, "test_cases")) {
            seq = yaml_document_get_node(&doc, pair->value);
        }
    }
    ck_assert(seq && seq->type == YAML_SEQUENCE_NODE);
    *out = apr_pcalloc(p, sizeof(vector_t) * (seq->data.sequence.items.top
                                              - seq->data.sequence.items.start
                                              + 1));
    for (item = seq->data.sequence.items.start;
         item < seq->data.sequence.items.top; item++) {
        yaml_node_t *map = yaml_document_get_node(&doc, *item);
        vector_t *v = &(*out)[n];

        for (pair = map->data.mapping.pairs.start;
             pair < map->data.mapping.pairs.top; pair++) {
            yaml_node_t *k = yaml_document_get_node(&doc, pair->key);
            yaml_node_t *val = yaml_document_get_node(&doc, pair->value);
            const char *key = (const char *)k->data.scalar.value;
            const char *s;

            if (val->type != YAML_SCALAR_NODE) {
                continue;
            }
            s = (const char *)val->data.scalar.value;
            if (!*s) {
                continue;
            }
            if (!strcmp(key, "user_agent_string")) {
                v->ua = apr_pstrdup(p, s);
            }
            else if (!strcmp(key, "family")) {
                v->family = apr_pstrdup(p, s);
            }
            else if (!strcmp(key, "major")) {
                v->major = apr_pstrdup(p, s);
            }
        }
        if (v->ua) {
            n++;
        }
    }
    yaml_document_delete(&doc);
    return n;
}

static int is_device(const char *d)
{
    return d && (!strcmp(d, "mobile") || !strcmp(d, "tablet")
                 || !strcmp(d, "desktop") || !strcmp(d, "bot")
                 || !strcmp(d, "other"));
}

static int same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

/* ------------------------------------------------------------------ */

/* A regexes file whose first user-agent regex does not compile: its path, in p. */
static const char *bad_regexes(apr_pool_t *p, const char *tag)
{
    const char *bad = apr_psprintf(p, "/tmp/qrt_ua_bad_%s_%ld.yaml", tag, (long)getpid());
    FILE *f = fopen(bad, "w");

    ck_assert_ptr_nonnull(f);
    fputs("user_agent_parsers:\n  - regex: '(unclosed'\n"
          "os_parsers:\n  - regex: 'x'\n", f);
    fclose(f);
    return bad;
}

START_TEST(test_load)
{
    apr_pool_t *p;
    const char *err;
    qrt_ua_db_t *db;
    const char *bad;
    FILE *f;

    ck_assert_msg(gdb != NULL, "load failed: %s", gerr ? gerr : "?");
    ck_assert_ptr_null(gerr);

    apr_pool_create(&p, NULL);
    db = qrt_ua_load(p, "/nonexistent/regexes.yaml", &err);
    ck_assert_ptr_null(db);
    ck_assert_ptr_nonnull(err);

    bad = bad_regexes(p, "jit");
    db = qrt_ua_load(p, bad, &err);
    ck_assert_ptr_null(db);
    ck_assert_ptr_nonnull(err);
    ck_assert_msg(strstr(err, "user_agent_parsers #0") != NULL, "%s", err);

    f = fopen(bad, "w");
    fputs("user_agent_parsers: [\n", f);
    fclose(f);
    db = qrt_ua_load(p, bad, &err);
    ck_assert_ptr_null(db);
    ck_assert_ptr_nonnull(err);
    remove(bad);
    apr_pool_destroy(p);
}
END_TEST

START_TEST(test_browser_agreement)
{
    static const char *const families[] = {
        "Chrome", "Mobile Safari", "Safari", "Firefox", "Edge",
        "Samsung Internet", "Opera", NULL
    };
    apr_pool_t *p, *rp;
    vector_t *v;
    int n, i, k, sel = 0, sel_ok = 0, all_ok = 0, major_ok = 0;
    qrt_ua_t r;

    apr_pool_create(&p, NULL);
    apr_pool_create(&rp, p);
    n = load_vectors(p, uap_path("tests/test_ua.yaml"), &v);
    ck_assert_int_gt(n, 1000);
    for (i = 0; i < n; i++) {
        const char *want = v[i].family ? v[i].family : "Other";

        apr_pool_clear(rp);
        qrt_ua_parse(gdb, v[i].ua, rp, &r);
        all_ok += !strcmp(r.browser, want);
        major_ok += same(r.browser_version, v[i].major);
        for (k = 0; families[k]; k++) {
            if (!strcmp(want, families[k])) {
                sel++;
                if (!strcmp(r.browser, want)) {
                    sel_ok++;
                }
                else {
                    printf("qrt_ua: mismatch: want %s, got %s: %s\n", want,
                           r.browser, v[i].ua);
                }
            }
        }
    }
    printf("qrt_ua: browser family agreement (Chrome, Mobile Safari, "
           "Safari, Firefox, Edge, Samsung Internet, Opera): %d/%d = "
           "%.1f%%\n", sel_ok, sel, 100.0 * sel_ok / sel);
    printf("qrt_ua: all of test_ua.yaml: family %d/%d = %.1f%%, "
           "major %d/%d = %.1f%%\n", all_ok, n, 100.0 * all_ok / n,
           major_ok, n, 100.0 * major_ok / n);
    fflush(stdout);
    ck_assert_int_gt(sel, 20);
    ck_assert_msg(sel_ok * 100 >= sel * 95, "agreement %d/%d below 95%%",
                  sel_ok, sel);
    ck_assert_msg(all_ok * 100 >= n * 95, "overall %d/%d below 95%%",
                  all_ok, n);
    apr_pool_destroy(p);
}
END_TEST

START_TEST(test_os_agreement)
{
    apr_pool_t *p, *rp;
    vector_t *v;
    int n, i, ok = 0;
    qrt_ua_t r;

    apr_pool_create(&p, NULL);
    apr_pool_create(&rp, p);
    n = load_vectors(p, uap_path("tests/test_os.yaml"), &v);
    ck_assert_int_gt(n, 100);
    for (i = 0; i < n; i++) {
        apr_pool_clear(rp);
        qrt_ua_parse(gdb, v[i].ua, rp, &r);
        ok += !strcmp(r.os, v[i].family ? v[i].family : "Other");
    }
    printf("qrt_ua: os family agreement (test_os.yaml): %d/%d = %.1f%%\n",
           ok, n, 100.0 * ok / n);
    fflush(stdout);
    ck_assert_msg(ok * 100 >= n * 95, "os agreement %d/%d below 95%%", ok,
                  n);
    apr_pool_destroy(p);
}
END_TEST

START_TEST(test_spiders)
{
    apr_pool_t *p, *rp;
    vector_t *v;
    int n, i, spiders = 0, flagged = 0, others = 0, false_pos = 0;
    qrt_ua_t r;

    apr_pool_create(&p, NULL);
    apr_pool_create(&rp, p);
    n = load_vectors(p, uap_path("tests/test_device.yaml"), &v);
    ck_assert_int_gt(n, 10000);
    for (i = 0; i < n; i++) {
        apr_pool_clear(rp);
        qrt_ua_parse(gdb, v[i].ua, rp, &r);
        ck_assert(is_device(r.device));
        ck_assert_int_eq(r.bot, !strcmp(r.device, "bot"));
        if (v[i].family && !strcmp(v[i].family, "Spider")) {
            spiders++;
            if (r.bot) {
                flagged++;
            }
            else {
                printf("qrt_ua: spider not flagged: %s\n", v[i].ua);
            }
        }
        else {
            others++;
            false_pos += r.bot;
        }
    }
    printf("qrt_ua: Spider vectors of test_device.yaml flagged bot: %d/%d; "
           "other vectors flagged bot: %d/%d\n", flagged, spiders,
           false_pos, others);
    fflush(stdout);
    ck_assert_int_gt(spiders, 50);
    ck_assert_int_eq(flagged, spiders);
    ck_assert_msg(false_pos * 1000 <= others, "too many false bots: %d",
                  false_pos);
    apr_pool_destroy(p);
}
END_TEST

typedef struct {
    const char *ua;
    const char *browser;
    const char *version;
    const char *os;
    const char *device;
    int bot;
} hand_t;

static const hand_t hand_cases[] = {
    { "Mozilla/5.0 (compatible; Googlebot/2.1; "
      "+http://www.google.com/bot.html)",
      "Googlebot", "2", "Other", "bot", 1 },
    { "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) "
      "AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.71 Mobile "
      "Safari/537.36 (compatible; Googlebot/2.1; "
      "+http://www.google.com/bot.html)",
      "Googlebot", "2", "Android", "bot", 1 },
    { "Mozilla/5.0 (compatible; bingbot/2.0; "
      "+http://www.bing.com/bingbot.htm)",
      "bingbot", "2", "Other", "bot", 1 },
    { "facebookexternalhit/1.1 "
      "(+http://www.facebook.com/externalhit_uatext.php)",
      "FacebookBot", "1", "Other", "bot", 1 },
    { "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1_2 like Mac OS X) "
      "AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1.2 "
      "Mobile/15E148 Safari/604.1",
      "Mobile Safari", "17", "iOS", "mobile", 0 },
    { "Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 "
      "(KHTML, like Gecko) Version/16.6 Mobile/15E148 Safari/604.1",
      "Mobile Safari", "16", "iOS", "tablet", 0 },
    { "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 "
      "(KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
      "Chrome", "120", "Windows", "desktop", 0 },
    { "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like "
      "Gecko) Chrome/120.0.0.0 Mobile Safari/537.36",
      "Chrome Mobile", "120", "Android", "mobile", 0 },
    { "Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 "
      "(KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
      "Chrome", "120", "Android", "tablet", 0 },
    { "Mozilla/5.0 (Linux; Android 13; SM-S918B) AppleWebKit/537.36 "
      "(KHTML, like Gecko) SamsungBrowser/23.0 Chrome/115.0.0.0 Mobile "
      "Safari/537.36",
      "Samsung Internet", "23", "Android", "mobile", 0 },
    { "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) "
      "AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 "
      "Safari/605.1.15",
      "Safari", "17", "Mac OS X", "desktop", 0 },
    { "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:120.0) Gecko/20100101 "
      "Firefox/120.0",
      "Firefox", "120", "Ubuntu", "desktop", 0 },
    { "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 "
      "(KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0.0.0",
      "Edge", "120", "Windows", "desktop", 0 },
    { "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 "
      "(KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
      "Chrome", "120", "Chrome OS", "desktop", 0 },
    { "Mozilla/5.0 (Linux; Android 9; KFTRWI) AppleWebKit/537.36 (KHTML, "
      "like Gecko) Silk/119.3.1 like Chrome/119.0.6045.193 Safari/537.36",
      "Amazon Silk", "119", "Android", "tablet", 0 },
    { "Mozilla/5.0 (Windows Phone 10.0; Android 6.0.1; Microsoft; Lumia "
      "950) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/52.0.2743.116 "
      "Mobile Safari/537.36 Edge/15.15063",
      "Edge Mobile", "15", "Windows Phone", "mobile", 0 },
    { "Mozilla/5.0 (Web0S; Linux/SmartTV) AppleWebKit/537.36 (KHTML, like "
      "Gecko) Chrome/79.0.3945.79 Safari/537.36 WebAppManager",
      NULL, NULL, NULL, "other", 0 },
    { "curl/8.4.0", "curl", "8", "Other", "other", 0 },
};

START_TEST(test_hand_cases)
{
    apr_pool_t *p;
    qrt_ua_t r;
    int pass, i;

    apr_pool_create(&p, NULL);
    /* twice: the second pass comes from the cache */
    for (pass = 0; pass < 2; pass++) {
        for (i = 0; i < (int)(sizeof(hand_cases) / sizeof(hand_cases[0]));
             i++) {
            const hand_t *h = &hand_cases[i];

            qrt_ua_parse(gdb, h->ua, p, &r);
            if (h->browser) {
                ck_assert_msg(!strcmp(r.browser, h->browser),
                              "browser %s, want %s: %s", r.browser,
                              h->browser, h->ua);
            }
            if (h->version) {
                ck_assert_msg(same(r.browser_version, h->version),
                              "version %s, want %s: %s",
                              r.browser_version ? r.browser_version : "NULL",
                              h->version, h->ua);
            }
            if (h->os) {
                ck_assert_msg(!strcmp(r.os, h->os), "os %s, want %s: %s",
                              r.os, h->os, h->ua);
            }
            ck_assert_msg(!strcmp(r.device, h->device),
                          "device %s, want %s: %s", r.device, h->device,
                          h->ua);
            ck_assert_msg(r.bot == h->bot, "bot %d, want %d: %s", r.bot,
                          h->bot, h->ua);
        }
    }
    apr_pool_destroy(p);
}
END_TEST

static void assert_empty_result(const qrt_ua_t *r)
{
    ck_assert_str_eq(r->browser, "Other");
    ck_assert_ptr_null(r->browser_version);
    ck_assert_str_eq(r->os, "Other");
    ck_assert_str_eq(r->device, "other");
    ck_assert_int_eq(r->bot, 0);
}

START_TEST(test_empty_and_garbage)
{
    apr_pool_t *p;
    qrt_ua_t r;
    char *junk;
    const char *iphone = hand_cases[4].ua;
    int i, round;
    unsigned seed = 12345;

    apr_pool_create(&p, NULL);
    qrt_ua_parse(gdb, NULL, p, &r);
    assert_empty_result(&r);
    qrt_ua_parse(gdb, "", p, &r);
    assert_empty_result(&r);
    qrt_ua_parse(NULL, "Mozilla/5.0", p, &r);
    assert_empty_result(&r);

    junk = apr_palloc(p, 10241);
    for (round = 0; round < 20; round++) {
        for (i = 0; i < 10240; i++) {
            seed = seed * 1103515245 + 12345;
            junk[i] = (char)((seed >> 16) & 0xff);
            if (!junk[i]) {
                junk[i] = (char)0xc0;   /* never end the string early */
            }
        }
        /* invalid UTF-8 on purpose: overlong, surrogate, stray bytes */
        memcpy(junk + 100, "\xc0\x80\xed\xa0\x80\xff\xfe\xf8\x88\x80", 10);
        junk[10240] = '\0';
        if (round == 1) {
            memset(junk, 'a', 10240);
        }
        if (round == 2) {
            for (i = 0; i + 13 < 10240; i += 13) {
                memcpy(junk + i, "Mozilla/5.0 (", 13);
            }
        }
        qrt_ua_parse(gdb, junk, p, &r);
        ck_assert_ptr_nonnull(r.browser);
        ck_assert_ptr_nonnull(r.os);
        ck_assert(is_device(r.device));
        if (round == 3) {
            /* a known user-agent with 10 KB of garbage behind it */
            memcpy(junk, iphone, strlen(iphone));
            qrt_ua_parse(gdb, junk, p, &r);
            ck_assert_str_eq(r.browser, "Mobile Safari");
            ck_assert_str_eq(r.os, "iOS");
        }
    }
    apr_pool_destroy(p);
}
END_TEST

/* ------------------------------------------------------- concurrency */

#define NTHREADS 4

typedef struct {
    vector_t *v;
    qrt_ua_t *want;
    int n;
    int iterations;
    unsigned seed;
    int errors;
} worker_t;

static void *APR_THREAD_FUNC worker(apr_thread_t *t, void *data)
{
    worker_t *w = data;
    apr_pool_t *p;
    qrt_ua_t r;
    int i;

    apr_pool_create(&p, NULL);
    for (i = 0; i < w->iterations; i++) {
        int k;

        w->seed = w->seed * 1103515245 + 12345;
        /* skewed: most lookups hit a small hot set, the rest churn */
        k = (w->seed >> 8) % (i % 4 ? 64 : (unsigned)w->n);
        qrt_ua_parse(gdb, w->v[k].ua, p, &r);
        if (strcmp(r.browser, w->want[k].browser)
            || !same(r.browser_version, w->want[k].browser_version)
            || strcmp(r.os, w->want[k].os)
            || strcmp(r.device, w->want[k].device)
            || r.bot != w->want[k].bot) {
            w->errors++;
        }
        if (i % 256 == 0) {
            apr_pool_clear(p);
        }
    }
    apr_pool_destroy(p);
    /* returning ends the thread as apr_thread_exit() would, without the
     * forced unwinding that upsets AddressSanitizer */
    (void)t;
    return NULL;
}

/* 1 when s is well-formed UTF-8. */
static int utf8_ok(const char *s)
{
    apr_size_t i = 0, n = strlen(s);
    long cp;

    while (i < n) {
        i += qrt_valid_utf8_char((const unsigned char *)s + i, n - i, &cp);
        if (cp <= 0) {
            return 0;
        }
    }
    return 1;
}

/* Names taken from the user agent's own bytes (uap's $1 captures) are valid UTF-8
 * whatever the bytes: what is not becomes U+FFFD. */
START_TEST(test_names_are_utf8)
{
    static const char *uas[] = {
        "\xff\xfe\xfd/1.0 CFNetwork/1.0 Darwin/1.0",
        "Mozilla/5.0 (compatible; \xe9" "t\xe9" "bot/2.1; +http://x)",
        "caf\xe9-crawler/1.0",
        "Mozilla/5.0 (Linux; Android 10; \xc0\xaf\xff) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/99.0 Mobile Safari/537.36",
        "\xed\xa0\x80" "Browser/3.1",
        "Opera/9.80 (\xfe\xff; U) Presto/2.2 Version/10.1 \xff\xff",
        NULL
    };
    apr_pool_t *p;
    qrt_ua_t r;
    int i, replaced = 0;

    apr_pool_create(&p, NULL);
    for (i = 0; uas[i]; i++) {
        qrt_ua_parse(gdb, uas[i], p, &r);
        ck_assert_msg(utf8_ok(r.browser), "browser of ua %d", i);
        ck_assert_msg(utf8_ok(r.os), "os of ua %d", i);
        ck_assert_msg(!r.browser_version || utf8_ok(r.browser_version), "version of ua %d", i);
        replaced |= strstr(r.browser, "\xEF\xBF\xBD") != NULL;
        /* Again, from the cache. */
        qrt_ua_parse(gdb, uas[i], p, &r);
        ck_assert(utf8_ok(r.browser) && utf8_ok(r.os));
    }
    /* At least one of them put the user agent's bytes into a name. */
    ck_assert(replaced);
    apr_pool_destroy(p);
}
END_TEST

START_TEST(test_threads)
{
    apr_pool_t *p;
    vector_t *a, *b, *v;
    qrt_ua_t *want;
    int na, nb, n, i, errors = 0;
    apr_thread_t *threads[NTHREADS];
    worker_t workers[NTHREADS];
    apr_status_t rv;
    apr_uint64_t hits, misses;

    apr_pool_create(&p, NULL);
    na = load_vectors(p, uap_path("tests/test_ua.yaml"), &a);
    nb = load_vectors(p, uap_path("tests/test_device.yaml"), &b);
    /* more distinct user-agents than cache slots, to force evictions */
    n = na + (nb < 6000 ? nb : 6000);
    ck_assert_int_gt(n, QRT_UA_CACHE_SLOTS);
    v = apr_palloc(p, sizeof(vector_t) * n);
    memcpy(v, a, sizeof(vector_t) * na);
    memcpy(v + na, b, sizeof(vector_t) * (n - na));
    want = apr_palloc(p, sizeof(qrt_ua_t) * n);
    for (i = 0; i < n; i++) {
        qrt_ua_parse(gdb, v[i].ua, p, &want[i]);
    }

    for (i = 0; i < NTHREADS; i++) {
        workers[i].v = v;
        workers[i].want = want;
        workers[i].n = n;
        workers[i].iterations = 40000;
        workers[i].seed = 777 + i;
        workers[i].errors = 0;
        rv = apr_thread_create(&threads[i], NULL, worker, &workers[i], p);
        ck_assert_int_eq(rv, APR_SUCCESS);
    }
    for (i = 0; i < NTHREADS; i++) {
        apr_thread_join(&rv, threads[i]);
        errors += workers[i].errors;
    }
    qrt_ua_cache_stats(gdb, &hits, &misses);
    printf("qrt_ua: %d threads x %d parses over %d user-agents: %d wrong "
           "results; cache hits %lu, misses %lu\n", NTHREADS,
           workers[0].iterations, n, errors, (unsigned long)hits,
           (unsigned long)misses);
    fflush(stdout);
    ck_assert_int_eq(errors, 0);
    ck_assert_uint_gt(hits, 0);
    apr_pool_destroy(p);
}
END_TEST

/* --------------------------------------------------------- benchmark */

START_TEST(test_benchmark)
{
    apr_pool_t *p, *rp;
    qrt_ua_db_t *db;
    const char *err;
    const char *ua = hand_cases[6].ua;
    vector_t *v;
    char **fresh;
    int i, n, iters = 200000, nfresh = 20000;
    double t0, cached, uncached, mixed, load;
    qrt_ua_t r;

    apr_pool_create(&p, NULL);
    apr_pool_create(&rp, p);
    t0 = now();
    db = qrt_ua_load(p, uap_path("regexes.yaml"), &err);
    load = now() - t0;
    ck_assert_ptr_nonnull(db);

    qrt_ua_parse(db, ua, rp, &r);
    t0 = now();
    for (i = 0; i < iters; i++) {
        qrt_ua_parse(db, ua, rp, &r);
        if (i % 1000 == 0) {
            apr_pool_clear(rp);
        }
    }
    cached = (now() - t0) / iters;

    /* distinct, realistic user-agents: every parse misses the cache */
    fresh = apr_palloc(p, sizeof(char *) * nfresh);
    for (i = 0; i < nfresh; i++) {
        fresh[i] = apr_psprintf(p, "Mozilla/5.0 (Linux; Android %d; SM-A%03d"
                                ") AppleWebKit/537.36 (KHTML, like Gecko) "
                                "Chrome/%d.0.%d.%d Mobile Safari/537.36",
                                8 + i % 6, i % 1000, 100 + i % 21, i, i % 97);
    }
    apr_pool_clear(rp);
    t0 = now();
    for (i = 0; i < nfresh; i++) {
        qrt_ua_parse(db, fresh[i], rp, &r);
        if (i % 1000 == 0) {
            apr_pool_clear(rp);
        }
    }
    uncached = (now() - t0) / nfresh;

    /* the whole of test_ua.yaml, unseen by this db: a varied mix */
    n = load_vectors(p, uap_path("tests/test_ua.yaml"), &v);
    t0 = now();
    for (i = 0; i < n; i++) {
        qrt_ua_parse(db, v[i].ua, rp, &r);
        if (i % 1000 == 0) {
            apr_pool_clear(rp);
        }
    }
    mixed = (now() - t0) / n;

    printf("qrt_ua: benchmark: load %.0f ms; cached %.0f ns/parse; "
           "uncached %.0f ns/parse (Chrome Mobile variants), %.0f ns/parse "
           "(test_ua.yaml mix)\n", load * 1e3, cached * 1e9, uncached * 1e9,
           mixed * 1e9);
    fflush(stdout);
    apr_pool_destroy(p);
}
END_TEST

/* Compiled for the interpreter alone, the regexes check bad files as the JIT's do and
 * parse every vector of test_ua.yaml the same. */
START_TEST(test_load_without_jit)
{
    apr_pool_t *p, *rp;
    qrt_ua_db_t *db;
    const char *err = NULL, *bad;
    vector_t *v;
    int i, n;

    apr_pool_create(&p, NULL);
    apr_pool_create(&rp, p);
    bad = bad_regexes(p, "nojit");
    ck_assert_ptr_null(qrt_ua_load_ex(p, bad, 0, &err));
    ck_assert_msg(err && strstr(err, "user_agent_parsers #0") != NULL, "%s", err);
    unlink(bad);
    err = NULL;
    db = qrt_ua_load_ex(p, uap_path("regexes.yaml"), 0, &err);
    ck_assert_msg(db != NULL, "load failed: %s", err ? err : "?");
    n = load_vectors(p, uap_path("tests/test_ua.yaml"), &v);
    ck_assert_int_gt(n, 100);
    for (i = 0; i < n; i++) {
        qrt_ua_t a, b;

        qrt_ua_parse(db, v[i].ua, rp, &a);
        qrt_ua_parse(gdb, v[i].ua, rp, &b);
        ck_assert_str_eq(a.browser, b.browser);
        ck_assert_msg((!a.browser_version && !b.browser_version)
                      || (a.browser_version && b.browser_version
                          && !strcmp(a.browser_version, b.browser_version)), "%s", v[i].ua);
        ck_assert_str_eq(a.os, b.os);
        ck_assert_str_eq(a.device, b.device);
        ck_assert_int_eq(a.bot, b.bot);
        if (i % 1000 == 0) {
            apr_pool_clear(rp);
        }
    }
    apr_pool_destroy(p);
}
END_TEST

static Suite *ua_suite(void)
{
    Suite *s = suite_create("qrt_ua");
    TCase *tc = tcase_create("ua");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_load);
    tcase_add_test(tc, test_load_without_jit);
    tcase_add_test(tc, test_browser_agreement);
    tcase_add_test(tc, test_os_agreement);
    tcase_add_test(tc, test_spiders);
    tcase_add_test(tc, test_hand_cases);
    tcase_add_test(tc, test_empty_and_garbage);
    tcase_add_test(tc, test_names_are_utf8);
    tcase_add_test(tc, test_threads);
    tcase_add_test(tc, test_benchmark);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    int status;
    const char *dir = getenv("QRT_UAP_DIR");

    apr_initialize();
    apr_pool_create(&gpool, NULL);
    if (dir && *dir) {
        uap_dir = dir;
    }
    /* loaded once, as in the httpd parent; forked tests inherit it */
    gdb = qrt_ua_load(gpool, uap_path("regexes.yaml"), &gerr);

    status = qrt_check_run(ua_suite());
    apr_pool_destroy(gpool);
    apr_terminate();
    return status;
}
