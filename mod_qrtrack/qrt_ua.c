/*
 * qrt_ua: user-agent classification with the uap-core regexes.yaml.
 *
 * The three parser lists of regexes.yaml are compiled once with PCRE2 (no
 * UTF mode, so any bytes are a valid subject; JIT where available). A parse
 * runs the uap-core algorithm (first matching regex wins, $1..$9 in the
 * replacements) for the browser and the os, decides "bot" from uap's
 * "Spider" device rules and the browser family, and derives the device
 * class from a few tokens. Results are kept in a bounded 2-way set
 * associative cache keyed by the examined bytes of the user-agent.
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* memmem */
#endif

#define PCRE2_CODE_UNIT_WIDTH 8

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcre2.h>
#include <yaml.h>

#include <apr_lib.h>
#include <apr_strings.h>
#include <apr_tables.h>
#if APR_HAS_THREADS
#include <apr_thread_mutex.h>
#endif

#include "qrt_hash.h"
#include "qrt_ua.h"
#include "qrt_valid.h"

/* replacement slots: family, v1, v2, v3, v4 */
#define QRT_UA_NREP 5

/* the cache: QRT_UA_CACHE_SLOTS / 2 sets of 2 ways, under striped locks */
#define QRT_UA_CACHE_WAYS 2
#define QRT_UA_CACHE_SETS (QRT_UA_CACHE_SLOTS / QRT_UA_CACHE_WAYS)
#define QRT_UA_CACHE_STRIPES 64

/* bound on backtracking of one regex (uap regexes need far less) */
#define QRT_UA_MATCH_LIMIT 1000000

enum {
    QRT_UA_DEV_MOBILE,
    QRT_UA_DEV_TABLET,
    QRT_UA_DEV_DESKTOP,
    QRT_UA_DEV_BOT,
    QRT_UA_DEV_OTHER
};

static const char *const qrt_ua_devices[] = {
    "mobile", "tablet", "desktop", "bot", "other"
};

typedef struct {
    pcre2_code *re;
    const char *rep[QRT_UA_NREP];   /* NULL when the rule has none */
    char **pf;                      /* every match contains one of these */
    apr_size_t *pflen;
    int npf;                        /* 0: no prefilter */
    int spider;                     /* device rule whose family is "Spider" */
} qrt_ua_rule_t;

typedef struct {
    qrt_ua_rule_t *rules;
    int n;
} qrt_ua_list_t;

typedef struct {
    char *block;            /* malloc'd: browser\0 [version\0] os\0 key */
    apr_size_t slen;        /* bytes of the strings part of block */
    apr_size_t klen;
    apr_uint64_t hash;
    apr_size_t version_off; /* 0 when there is no version */
    apr_size_t os_off;
    unsigned char device;
    unsigned char bot;
} qrt_ua_slot_t;

typedef struct {
#if APR_HAS_THREADS
    apr_thread_mutex_t *mutex;
#endif
    apr_uint64_t hits;
    apr_uint64_t misses;
    char pad[40];           /* keep stripes on separate cache lines */
} qrt_ua_stripe_t;

struct qrt_ua_db_t {
    qrt_ua_list_t ua;
    qrt_ua_list_t os;
    qrt_ua_list_t dev;
    int *spiders;           /* indexes of the "Spider" rules in dev */
    int nspiders;
    uint32_t ovector_pairs;
    pcre2_match_context *mctx;
    pcre2_code *botfamily;  /* browser families that are crawlers */
    qrt_ua_slot_t *slots;   /* QRT_UA_CACHE_SETS * QRT_UA_CACHE_WAYS */
    unsigned char *victim;  /* per set: the way to replace next */
    qrt_ua_stripe_t stripes[QRT_UA_CACHE_STRIPES];
    int jit;                /* compile for PCRE2's JIT too */
};

/* A browser family naming a crawler or an automated client. */
static const char qrt_ua_botfamily_re[] =
    "bot|spider|crawl|slurp|archiver|indexer|scraper|preview|headless"
    "|phantomjs|lighthouse|pingdom|uptime|validator|fetcher|ptst";

/* ---------------------------------------------------------------- load */

static apr_status_t qrt_ua_cleanup(void *data)
{
    qrt_ua_db_t *db = data;
    qrt_ua_list_t *lists[3];
    int i, j;

    lists[0] = &db->ua;
    lists[1] = &db->os;
    lists[2] = &db->dev;
    for (i = 0; i < 3; i++) {
        for (j = 0; j < lists[i]->n; j++) {
            pcre2_code_free(lists[i]->rules[j].re);
            lists[i]->rules[j].re = NULL;
        }
        lists[i]->n = 0;
    }
    pcre2_code_free(db->botfamily);
    db->botfamily = NULL;
    pcre2_match_context_free(db->mctx);
    db->mctx = NULL;
    if (db->slots) {
        for (i = 0; i < QRT_UA_CACHE_SETS * QRT_UA_CACHE_WAYS; i++) {
            free(db->slots[i].block);
            db->slots[i].block = NULL;
        }
    }
    return APR_SUCCESS;
}

static const char *qrt_ua_scalar(yaml_node_t *node)
{
    if (!node || node->type != YAML_SCALAR_NODE) {
        return NULL;
    }
    return (const char *)node->data.scalar.value;
}

static pcre2_code *qrt_ua_compile(apr_pool_t *p, const char *pattern,
                                  uint32_t options, int jit, const char **err)
{
    pcre2_code *re;
    int errcode;
    PCRE2_SIZE erroff;
    PCRE2_UCHAR msg[256];

    re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, options,
                       &errcode, &erroff, NULL);
    if (!re) {
        pcre2_get_error_message(errcode, msg, sizeof(msg));
        *err = apr_psprintf(p, "%s at offset %lu", (const char *)msg,
                            (unsigned long)erroff);
        return NULL;
    }
    /* without JIT support the interpreter is used: not an error */
    if (jit) {
        pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    }
    return re;
}

/* ----------------------------------------------------------- prefilter */

/*
 * Most regexes can only match a subject that contains one of a few
 * strings ("Chrome/" for one, "bot", "spider" or "crawl" for another). At
 * load time a small conservative analysis of each pattern finds such a set
 * of lower-case strings; at parse time a regex whose set has no string in
 * the lower-cased subject is skipped without calling PCRE2. Whatever the
 * analysis does not understand yields no requirement (or no prefilter at
 * all), never a wrong one. Comparing in lower case only lets more
 * subjects through, so one set serves caseless and case-sensitive rules.
 */

#define QRT_UA_PF_EXACT_MAX 16      /* strings of an exact set */
#define QRT_UA_PF_ANY_MAX 256       /* strings of a requirement */
#define QRT_UA_PF_STR_MAX 64        /* bytes of one string */
#define QRT_UA_BIGRAM_BITS 4096     /* bitmap of the pairs of a subject */

typedef struct {
    int exact;          /* the node matches exactly one of strs */
    int n;              /* number of strs; not exact and 0: no requirement */
    char **strs;
} qrt_ua_pf_t;

typedef struct {
    apr_pool_t *p;      /* scratch */
    const char *re;
    apr_size_t i;
    int fail;           /* met a construct the analysis does not know */
} qrt_ua_pfp_t;

/* Lower-case text of typical browser user-agents: strings found in it
 * make poor filters and count less when choosing one. */
static const char qrt_ua_pf_common[] =
    "mozilla/5.0 (windows nt 10.0; win64; x64) applewebkit/537.36 "
    "(khtml, like gecko) chrome/120.0.0.0 safari/537.36 edg/120.0.0.0\n"
    "mozilla/5.0 (iphone; cpu iphone os 17_1 like mac os x) "
    "applewebkit/605.1.15 (khtml, like gecko) version/17.1 mobile/15e148 "
    "safari/604.1\n"
    "mozilla/5.0 (ipad; cpu os 17_1 like mac os x) applewebkit/605.1.15 "
    "(khtml, like gecko) crios/120.0.6099.119 mobile/15e148 safari/604.1\n"
    "mozilla/5.0 (linux; android 13; sm-s918b) applewebkit/537.36 "
    "(khtml, like gecko) samsungbrowser/23.0 chrome/115.0.0.0 "
    "mobile safari/537.36\n"
    "mozilla/5.0 (macintosh; intel mac os x 10.15; rv:120.0) "
    "gecko/20100101 firefox/120.0\n"
    "mozilla/5.0 (x11; linux x86_64) applewebkit/537.36 "
    "(khtml, like gecko) chrome/120.0.0.0 safari/537.36\n";

static void qrt_ua_lower(char *dst, const char *src, apr_size_t n)
{
    apr_size_t i;

    for (i = 0; i < n; i++) {
        dst[i] = (src[i] >= 'A' && src[i] <= 'Z') ? src[i] + ('a' - 'A')
                                                  : src[i];
    }
}

static qrt_ua_pf_t qrt_ua_pf_none(void)
{
    qrt_ua_pf_t r;

    r.exact = 0;
    r.n = 0;
    r.strs = NULL;
    return r;
}

static qrt_ua_pf_t qrt_ua_pf_exact(apr_pool_t *p, const char *s,
                                   apr_size_t len)
{
    qrt_ua_pf_t r;

    r.exact = 1;
    r.n = 1;
    r.strs = apr_palloc(p, sizeof(char *));
    r.strs[0] = apr_pstrmemdup(p, s, len);
    qrt_ua_lower(r.strs[0], r.strs[0], len);
    return r;
}

/* What a node requires of every subject it matches: a set of strings one
 * of which is contained, or n == 0 for nothing. */
static qrt_ua_pf_t qrt_ua_pf_req(qrt_ua_pf_t x)
{
    int k;

    for (k = 0; k < x.n; k++) {
        if (!x.strs[k][0]) {
            return qrt_ua_pf_none();
        }
    }
    x.exact = 0;
    return x;
}

/* How well a requirement filters: its weakest string's length, discounted
 * when that string is common in browser user-agents. */
static double qrt_ua_pf_score(qrt_ua_pf_t x)
{
    double best = 0, w;
    int k;

    for (k = 0; k < x.n; k++) {
        w = (double)strlen(x.strs[k]);
        if (strstr(qrt_ua_pf_common, x.strs[k])) {
            w /= 10;
        }
        if (k == 0 || w < best) {
            best = w;
        }
    }
    return best;
}

/* The better of two requirements. */
static qrt_ua_pf_t qrt_ua_pf_better(qrt_ua_pf_t a, qrt_ua_pf_t b)
{
    double sa, sb;

    a = qrt_ua_pf_req(a);
    b = qrt_ua_pf_req(b);
    if (!a.n || !b.n) {
        return a.n ? a : b;
    }
    sa = qrt_ua_pf_score(a);
    sb = qrt_ua_pf_score(b);
    if (sa != sb) {
        return sa > sb ? a : b;
    }
    return a.n <= b.n ? a : b;
}

/* The exact set of a followed by b, or n == 0 when it would be too big. */
static qrt_ua_pf_t qrt_ua_pf_product(apr_pool_t *p, qrt_ua_pf_t a,
                                     qrt_ua_pf_t b)
{
    qrt_ua_pf_t r;
    int j, k;

    r.exact = 1;
    r.n = 0;
    r.strs = NULL;
    if (a.n * b.n > QRT_UA_PF_EXACT_MAX) {
        return r;
    }
    for (j = 0; j < a.n; j++) {
        for (k = 0; k < b.n; k++) {
            if (strlen(a.strs[j]) + strlen(b.strs[k]) > QRT_UA_PF_STR_MAX) {
                r.n = 0;
                return r;
            }
        }
    }
    r.strs = apr_palloc(p, sizeof(char *) * a.n * b.n);
    for (j = 0; j < a.n; j++) {
        for (k = 0; k < b.n; k++) {
            r.strs[r.n++] = apr_pstrcat(p, a.strs[j], b.strs[k], NULL);
        }
    }
    return r;
}

/* The union of sets; a string containing another one is dropped from a
 * requirement (the shorter one is present whenever it is). */
static qrt_ua_pf_t qrt_ua_pf_union(apr_pool_t *p, qrt_ua_pf_t *xs, int nx,
                                   int exact)
{
    qrt_ua_pf_t r;
    int i, j, k, total = 0;

    for (i = 0; i < nx; i++) {
        total += xs[i].n;
    }
    r.exact = exact;
    r.n = 0;
    r.strs = apr_palloc(p, sizeof(char *) * (total + 1));
    for (i = 0; i < nx; i++) {
        for (k = 0; k < xs[i].n; k++) {
            const char *s = xs[i].strs[k];
            int keep = 1;

            for (j = 0; j < r.n && keep; j++) {
                if (!strcmp(r.strs[j], s)
                    || (!exact && strstr(s, r.strs[j]))) {
                    keep = 0;
                }
            }
            if (!keep) {
                continue;
            }
            if (!exact) {
                /* s may be contained in strings kept earlier */
                for (j = 0; j < r.n; ) {
                    if (strstr(r.strs[j], s)) {
                        r.strs[j] = r.strs[--r.n];
                    }
                    else {
                        j++;
                    }
                }
            }
            r.strs[r.n++] = (char *)s;
        }
    }
    return r;
}

static qrt_ua_pf_t qrt_ua_pf_alt(qrt_ua_pfp_t *ps);

/* A character class: a small set of single characters, or nothing. */
static qrt_ua_pf_t qrt_ua_pf_class(qrt_ua_pfp_t *ps)
{
    const char *re = ps->re;
    char members[5];
    int n = 0, complex = 0, k;
    qrt_ua_pf_t r;

    ps->i++;
    if (re[ps->i] == '^') {
        complex = 1;
        ps->i++;
    }
    if (re[ps->i] == ']') {
        members[n++] = ']';
        ps->i++;
    }
    while (re[ps->i] && re[ps->i] != ']') {
        char c = re[ps->i];

        if (c == '[' && re[ps->i + 1] == ':') {
            ps->fail = 1;
            return qrt_ua_pf_none();
        }
        if (c == '\\') {
            c = re[ps->i + 1];
            if (!c) {
                break;
            }
            if (apr_isalnum(c)) {
                complex = 1;
            }
            ps->i += 2;
            if (re[ps->i] == '-' && re[ps->i + 1] && re[ps->i + 1] != ']') {
                complex = 1;        /* a range from an escaped character */
                ps->i += re[ps->i + 1] == '\\' ? 3 : 2;
            }
        }
        else if (re[ps->i + 1] == '-' && re[ps->i + 2]
                 && re[ps->i + 2] != ']') {
            complex = 1;
            ps->i += re[ps->i + 2] == '\\' ? 5 : 3;
            continue;
        }
        else {
            ps->i++;
        }
        c = apr_tolower(c);
        for (k = 0; k < n && members[k] != c; k++) {
        }
        if (k == n) {
            if (n == 4) {
                complex = 1;
            }
            else {
                members[n++] = c;
            }
        }
    }
    if (!re[ps->i]) {
        ps->fail = 1;
        return qrt_ua_pf_none();
    }
    ps->i++;
    if (complex || !n) {
        return qrt_ua_pf_none();
    }
    r.exact = 1;
    r.n = n;
    r.strs = apr_palloc(ps->p, sizeof(char *) * n);
    for (k = 0; k < n; k++) {
        r.strs[k] = apr_pstrmemdup(ps->p, &members[k], 1);
    }
    return r;
}

static qrt_ua_pf_t qrt_ua_pf_atom(qrt_ua_pfp_t *ps)
{
    const char *re = ps->re;
    char c = re[ps->i], e;
    qrt_ua_pf_t r;

    switch (c) {
    case '(':
        ps->i++;
        if (re[ps->i] == '?') {
            if (re[ps->i + 1] != ':') {
                ps->fail = 1;       /* lookaround, options, names */
                return qrt_ua_pf_none();
            }
            ps->i += 2;
        }
        r = qrt_ua_pf_alt(ps);
        if (re[ps->i] != ')') {
            ps->fail = 1;
            return qrt_ua_pf_none();
        }
        ps->i++;
        return r;
    case '[':
        return qrt_ua_pf_class(ps);
    case '\\':
        e = re[ps->i + 1];
        if (!e) {
            ps->fail = 1;
            return qrt_ua_pf_none();
        }
        ps->i += 2;
        if (apr_isalnum(e)) {
            if (strchr("bBAzZG", e)) {
                return qrt_ua_pf_exact(ps->p, "", 0);
            }
            if (!strchr("dDwWsShHvV", e)) {
                ps->fail = 1;       /* \x, \Q, back references... */
            }
            return qrt_ua_pf_none();
        }
        return qrt_ua_pf_exact(ps->p, &e, 1);
    case '.':
        ps->i++;
        return qrt_ua_pf_none();
    case '^':
    case '$':
        ps->i++;
        return qrt_ua_pf_exact(ps->p, "", 0);
    case '*':
    case '+':
    case '?':
    case '{':
        ps->fail = 1;
        return qrt_ua_pf_none();
    default:
        ps->i++;
        return qrt_ua_pf_exact(ps->p, &c, 1);
    }
}

/* Applies the quantifiers that follow an atom. */
static qrt_ua_pf_t qrt_ua_pf_quant(qrt_ua_pfp_t *ps, qrt_ua_pf_t x)
{
    const char *re = ps->re;

    for (;;) {
        char c = re[ps->i];
        long min, max;
        char *end;

        if (c == '?' || c == '*') {
            min = 0;
            max = -1;
            ps->i++;
        }
        else if (c == '+') {
            min = 1;
            max = -1;
            ps->i++;
        }
        else if (c == '{') {
            if (!apr_isdigit(re[ps->i + 1])) {
                ps->fail = 1;
                return x;
            }
            min = max = strtol(re + ps->i + 1, &end, 10);
            if (*end == ',') {
                end++;
                max = apr_isdigit(*end) ? strtol(end, &end, 10) : -1;
            }
            if (*end != '}') {
                ps->fail = 1;
                return x;
            }
            ps->i = (apr_size_t)(end + 1 - re);
        }
        else {
            return x;
        }
        if (re[ps->i] == '?' || re[ps->i] == '+') {
            ps->i++;                /* lazy or possessive */
        }
        if (min == 0) {
            x = qrt_ua_pf_none();
        }
        else if (min != 1 || max != 1) {
            x = qrt_ua_pf_req(x);
        }
    }
}

static qrt_ua_pf_t qrt_ua_pf_seq(qrt_ua_pfp_t *ps)
{
    const char *re = ps->re;
    qrt_ua_pf_t best = qrt_ua_pf_none();
    qrt_ua_pf_t tail = qrt_ua_pf_exact(ps->p, "", 0), x, prod;
    int all_exact = 1;

    while (!ps->fail && re[ps->i] && re[ps->i] != '|' && re[ps->i] != ')') {
        x = qrt_ua_pf_quant(ps, qrt_ua_pf_atom(ps));
        if (x.exact) {
            prod = qrt_ua_pf_product(ps->p, tail, x);
            if (prod.n) {
                tail = prod;
            }
            else {
                best = qrt_ua_pf_better(best, tail);
                tail = x;
                all_exact = 0;
            }
        }
        else {
            best = qrt_ua_pf_better(best, tail);
            best = qrt_ua_pf_better(best, x);
            tail = qrt_ua_pf_exact(ps->p, "", 0);
            all_exact = 0;
        }
    }
    if (all_exact) {
        return tail;
    }
    return qrt_ua_pf_better(best, tail);
}

static qrt_ua_pf_t qrt_ua_pf_alt(qrt_ua_pfp_t *ps)
{
    apr_array_header_t *alts;
    qrt_ua_pf_t x, *xs;
    int all_exact, total = 0, k;

    x = qrt_ua_pf_seq(ps);
    if (ps->fail || ps->re[ps->i] != '|') {
        return x;
    }
    alts = apr_array_make(ps->p, 8, sizeof(qrt_ua_pf_t));
    *(qrt_ua_pf_t *)apr_array_push(alts) = x;
    while (!ps->fail && ps->re[ps->i] == '|') {
        ps->i++;
        *(qrt_ua_pf_t *)apr_array_push(alts) = qrt_ua_pf_seq(ps);
    }
    if (ps->fail) {
        return qrt_ua_pf_none();
    }
    xs = (qrt_ua_pf_t *)alts->elts;
    all_exact = 1;
    for (k = 0; k < alts->nelts; k++) {
        all_exact = all_exact && xs[k].exact;
        total += xs[k].n;
    }
    if (all_exact && total <= QRT_UA_PF_EXACT_MAX) {
        return qrt_ua_pf_union(ps->p, xs, alts->nelts, 1);
    }
    for (k = 0; k < alts->nelts; k++) {
        xs[k] = qrt_ua_pf_req(xs[k]);
        if (!xs[k].n) {
            return qrt_ua_pf_none();
        }
    }
    x = qrt_ua_pf_union(ps->p, xs, alts->nelts, 0);
    return x.n <= QRT_UA_PF_ANY_MAX ? x : qrt_ua_pf_none();
}

/* Sets the prefilter of rule from its pattern. */
static void qrt_ua_pf_rule(apr_pool_t *p, apr_pool_t *scratch,
                           qrt_ua_rule_t *rule, const char *regex)
{
    qrt_ua_pfp_t ps;
    qrt_ua_pf_t x;
    int k;

    ps.p = scratch;
    ps.re = regex;
    ps.i = 0;
    ps.fail = 0;
    x = qrt_ua_pf_alt(&ps);
    if (ps.fail || regex[ps.i]) {
        return;
    }
    x = qrt_ua_pf_req(x);
    for (k = 0; k < x.n; k++) {
        if (strlen(x.strs[k]) < 2) {
            return;                 /* filters too little to be worth it */
        }
    }
    rule->npf = x.n;
    rule->pf = apr_palloc(p, sizeof(char *) * (x.n + 1));
    rule->pflen = apr_palloc(p, sizeof(apr_size_t) * (x.n + 1));
    for (k = 0; k < x.n; k++) {
        rule->pf[k] = apr_pstrdup(p, x.strs[k]);
        rule->pflen[k] = strlen(x.strs[k]);
    }
}

/* Compile one parser list (a sequence of mappings). keys[] names the
 * replacement keys in slot order. */
static int qrt_ua_load_list(qrt_ua_db_t *db, apr_pool_t *p,
                            apr_pool_t *scratch, yaml_document_t *doc,
                            yaml_node_t *seq, const char *section,
                            const char *const *keys, qrt_ua_list_t *list,
                            const char **err)
{
    yaml_node_item_t *item;
    int n = 0;

    if (seq->type != YAML_SEQUENCE_NODE) {
        *err = apr_psprintf(p, "%s is not a list", section);
        return 0;
    }
    list->rules = apr_pcalloc(p, sizeof(qrt_ua_rule_t)
                              * (seq->data.sequence.items.top
                                 - seq->data.sequence.items.start + 1));
    for (item = seq->data.sequence.items.start;
         item < seq->data.sequence.items.top; item++) {
        yaml_node_t *map = yaml_document_get_node(doc, *item);
        yaml_node_pair_t *pair;
        qrt_ua_rule_t *rule = &list->rules[n];
        const char *regex = NULL;
        uint32_t options = 0, groups = 0;
        const char *cerr;
        int k;

        if (!map || map->type != YAML_MAPPING_NODE) {
            *err = apr_psprintf(p, "%s #%d is not a mapping", section, n);
            return 0;
        }
        for (pair = map->data.mapping.pairs.start;
             pair < map->data.mapping.pairs.top; pair++) {
            const char *key, *value;

            key = qrt_ua_scalar(yaml_document_get_node(doc, pair->key));
            value = qrt_ua_scalar(yaml_document_get_node(doc, pair->value));
            if (!key || !value) {
                continue;
            }
            if (!strcmp(key, "regex")) {
                regex = value;
            }
            else if (!strcmp(key, "regex_flag")) {
                if (strchr(value, 'i')) {
                    options |= PCRE2_CASELESS;
                }
            }
            else {
                for (k = 0; k < QRT_UA_NREP && keys[k]; k++) {
                    if (!strcmp(key, keys[k])) {
                        rule->rep[k] = apr_pstrdup(p, value);
                    }
                }
            }
        }
        if (!regex) {
            *err = apr_psprintf(p, "%s #%d has no regex", section, n);
            return 0;
        }
        rule->re = qrt_ua_compile(p, regex, options, db->jit, &cerr);
        if (!rule->re) {
            *err = apr_psprintf(p, "%s #%d: %s: %s", section, n, regex, cerr);
            return 0;
        }
        list->n = ++n;
        qrt_ua_pf_rule(p, scratch, rule, regex);
        apr_pool_clear(scratch);
        rule->spider = (rule->rep[0] && !strcmp(rule->rep[0], "Spider"));
        pcre2_pattern_info(rule->re, PCRE2_INFO_CAPTURECOUNT, &groups);
        if (groups + 1 > db->ovector_pairs) {
            db->ovector_pairs = groups + 1;
        }
    }
    return 1;
}

qrt_ua_db_t *qrt_ua_load(apr_pool_t *p, const char *yaml_path,
                         const char **err)
{
    return qrt_ua_load_ex(p, yaml_path, 1, err);
}

qrt_ua_db_t *qrt_ua_load_ex(apr_pool_t *p, const char *yaml_path, int jit,
                            const char **err)
{
    static const char *const ua_keys[] = {
        "family_replacement", "v1_replacement", "v2_replacement",
        "v3_replacement", NULL
    };
    static const char *const os_keys[] = {
        "os_replacement", "os_v1_replacement", "os_v2_replacement",
        "os_v3_replacement", "os_v4_replacement"
    };
    static const char *const dev_keys[] = {
        "device_replacement", NULL
    };
    qrt_ua_db_t *db;
    FILE *f;
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_node_t *root;
    yaml_node_pair_t *pair;
    apr_pool_t *scratch;
    const char *cerr;
    int ok = 1, i;

    *err = NULL;
    db = apr_pcalloc(p, sizeof(*db));
    db->jit = jit;
    db->ovector_pairs = 10;     /* $1..$9 */
    apr_pool_cleanup_register(p, db, qrt_ua_cleanup, apr_pool_cleanup_null);

    f = fopen(yaml_path, "rb");
    if (!f) {
        *err = apr_psprintf(p, "cannot open %s: %s", yaml_path,
                            strerror(errno));
        return NULL;
    }
    if (!yaml_parser_initialize(&parser)) {
        fclose(f);
        *err = "cannot initialise the YAML parser";
        return NULL;
    }
    yaml_parser_set_input_file(&parser, f);
    if (!yaml_parser_load(&parser, &doc)) {
        *err = apr_psprintf(p, "%s: YAML error at line %lu: %s", yaml_path,
                            (unsigned long)parser.problem_mark.line + 1,
                            parser.problem ? parser.problem : "?");
        yaml_parser_delete(&parser);
        fclose(f);
        return NULL;
    }
    yaml_parser_delete(&parser);
    fclose(f);

    apr_pool_create(&scratch, p);
    root = yaml_document_get_root_node(&doc);
    if (!root || root->type != YAML_MAPPING_NODE) {
        *err = apr_psprintf(p, "%s: not a uap-core regexes file", yaml_path);
        yaml_document_delete(&doc);
        return NULL;
    }
    for (pair = root->data.mapping.pairs.start;
         ok && pair < root->data.mapping.pairs.top; pair++) {
        const char *key = qrt_ua_scalar(yaml_document_get_node(&doc,
                                                               pair->key));
        yaml_node_t *value = yaml_document_get_node(&doc, pair->value);

        if (!key || !value) {
            continue;
        }
        if (!strcmp(key, "user_agent_parsers")) {
            ok = qrt_ua_load_list(db, p, scratch, &doc, value, key, ua_keys,
                                  &db->ua, err);
        }
        else if (!strcmp(key, "os_parsers")) {
            ok = qrt_ua_load_list(db, p, scratch, &doc, value, key, os_keys,
                                  &db->os, err);
        }
        else if (!strcmp(key, "device_parsers")) {
            ok = qrt_ua_load_list(db, p, scratch, &doc, value, key, dev_keys,
                                  &db->dev, err);
        }
    }
    yaml_document_delete(&doc);
    apr_pool_destroy(scratch);
    if (!ok) {
        *err = apr_psprintf(p, "%s: %s", yaml_path, *err);
        return NULL;
    }
    if (!db->ua.n || !db->os.n) {
        *err = apr_psprintf(p, "%s: no user_agent_parsers or os_parsers",
                            yaml_path);
        return NULL;
    }

    db->spiders = apr_palloc(p, sizeof(int) * (db->dev.n + 1));
    for (i = 0; i < db->dev.n; i++) {
        if (db->dev.rules[i].spider) {
            db->spiders[db->nspiders++] = i;
        }
    }

    db->botfamily = qrt_ua_compile(p, qrt_ua_botfamily_re, PCRE2_CASELESS, db->jit,
                                   &cerr);
    db->mctx = pcre2_match_context_create(NULL);
    if (!db->botfamily || !db->mctx) {
        *err = "cannot set up PCRE2";
        return NULL;
    }
    pcre2_set_match_limit(db->mctx, QRT_UA_MATCH_LIMIT);

    db->slots = apr_pcalloc(p, sizeof(qrt_ua_slot_t)
                            * QRT_UA_CACHE_SETS * QRT_UA_CACHE_WAYS);
    db->victim = apr_pcalloc(p, QRT_UA_CACHE_SETS);
#if APR_HAS_THREADS
    for (i = 0; i < QRT_UA_CACHE_STRIPES; i++) {
        if (apr_thread_mutex_create(&db->stripes[i].mutex,
                                    APR_THREAD_MUTEX_DEFAULT, p)
            != APR_SUCCESS) {
            *err = "cannot create the cache mutexes";
            return NULL;
        }
    }
#endif
    return db;
}

/* --------------------------------------------------------------- match */

/* A subject being classified: the examined bytes, a lower-case copy of
 * them and a bitmap of its character pairs for the prefilters, and the
 * match data. */
typedef struct {
    const char *s;
    const char *lower;
    apr_size_t len;
    pcre2_match_data *md;
    unsigned char bigrams[QRT_UA_BIGRAM_BITS / 8];  /* pairs in lower */
} qrt_ua_subject_t;

#define QRT_UA_BIGRAM(a, b) \
    ((((unsigned)(unsigned char)(a) << 5) ^ (unsigned char)(b)) \
     & (QRT_UA_BIGRAM_BITS - 1))

static void qrt_ua_subject(qrt_ua_subject_t *subj, const char *ua,
                           apr_size_t len, char *lower, pcre2_match_data *md)
{
    apr_size_t i;
    unsigned h;

    qrt_ua_lower(lower, ua, len);
    subj->s = ua;
    subj->lower = lower;
    subj->len = len;
    subj->md = md;
    memset(subj->bigrams, 0, sizeof(subj->bigrams));
    for (i = 1; i < len; i++) {
        h = QRT_UA_BIGRAM(lower[i - 1], lower[i]);
        subj->bigrams[h >> 3] |= (unsigned char)(1 << (h & 7));
    }
}

/* Whether the subject contains one of the prefilter strings of rule. */
static int qrt_ua_pf_pass(const qrt_ua_rule_t *rule,
                          const qrt_ua_subject_t *subj)
{
    int k;
    apr_size_t j;
    unsigned h;

    for (k = 0; k < rule->npf; k++) {
        const char *s = rule->pf[k];

        /* all its character pairs must be there before memmem() */
        for (j = 1; j < rule->pflen[k]; j++) {
            h = QRT_UA_BIGRAM(s[j - 1], s[j]);
            if (!(subj->bigrams[h >> 3] & (1 << (h & 7)))) {
                break;
            }
        }
        if (j == rule->pflen[k]
            && memmem(subj->lower, subj->len, s, rule->pflen[k])) {
            return 1;
        }
    }
    return 0;
}

/* The number of valid ovector pairs (highest set group + 1) on a match of
 * re over subj, 0 otherwise (errors and limits count as no match: the
 * result is then the next rule's or "Other"). */
static int qrt_ua_match(const qrt_ua_db_t *db, const pcre2_code *re,
                        const char *subj, apr_size_t len,
                        pcre2_match_data *md)
{
    int rc;

    rc = pcre2_match(re, (PCRE2_SPTR)subj, len, 0, 0, md, db->mctx);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
        rc = pcre2_match(re, (PCRE2_SPTR)subj, len, 0, PCRE2_NO_JIT, md,
                         db->mctx);
    }
    return rc > 0 ? rc : 0;
}

/* qrt_ua_match() of a rule, skipped when its prefilter rules it out. */
static int qrt_ua_rule_match(const qrt_ua_db_t *db, const qrt_ua_rule_t *rule,
                             const qrt_ua_subject_t *subj)
{
    if (rule->npf && !qrt_ua_pf_pass(rule, subj)) {
        return 0;
    }
    return qrt_ua_match(db, rule->re, subj->s, subj->len, subj->md);
}

/* First rule of list that matches (its match in subj->md, *rc valid
 * pairs), or NULL. */
static const qrt_ua_rule_t *qrt_ua_first(const qrt_ua_db_t *db,
                                         const qrt_ua_list_t *list,
                                         const qrt_ua_subject_t *subj,
                                         int *rc)
{
    int i;

    for (i = 0; i < list->n; i++) {
        *rc = qrt_ua_rule_match(db, &list->rules[i], subj);
        if (*rc) {
            return &list->rules[i];
        }
    }
    return NULL;
}

/* Group n of the last match (rc valid pairs) as *l bytes at *s, or 0 when
 * unset. */
static int qrt_ua_group(pcre2_match_data *md, int rc, const char *subj,
                        int n, const char **s, apr_size_t *l)
{
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);

    if (n >= rc || ov[2 * n] == PCRE2_UNSET) {
        return 0;
    }
    *s = subj + ov[2 * n];
    *l = ov[2 * n + 1] - ov[2 * n];
    return 1;
}

/* The value of slot k of a matched rule: its replacement with $1..$9
 * expanded, or group k + 1. Trimmed; NULL when empty. */
static const char *qrt_ua_value(const qrt_ua_rule_t *rule, int k,
                                pcre2_match_data *md, int rc,
                                const char *subj, apr_pool_t *p)
{
    const char *rep = rule->rep[k], *s, *r;
    apr_size_t len = 0, l;
    char *buf, *o;

    if (!rep) {
        if (!qrt_ua_group(md, rc, subj, k + 1, &s, &l)) {
            return NULL;
        }
        buf = apr_pstrmemdup(p, s, l);
    }
    else {
        for (r = rep; *r; r++) {
            if (r[0] == '$' && r[1] >= '1' && r[1] <= '9') {
                if (qrt_ua_group(md, rc, subj, r[1] - '0', &s, &l)) {
                    len += l;
                }
                r++;
            }
            else {
                len++;
            }
        }
        buf = o = apr_palloc(p, len + 1);
        for (r = rep; *r; r++) {
            if (r[0] == '$' && r[1] >= '1' && r[1] <= '9') {
                if (qrt_ua_group(md, rc, subj, r[1] - '0', &s, &l)) {
                    memcpy(o, s, l);
                    o += l;
                }
                r++;
            }
            else {
                *o++ = *r;
            }
        }
        *o = '\0';
    }
    while (*buf == ' ' || *buf == '\t') {
        buf++;
    }
    l = strlen(buf);
    while (l > 0 && (buf[l - 1] == ' ' || buf[l - 1] == '\t')) {
        buf[--l] = '\0';
    }
    return l ? buf : NULL;
}

/* uap device family "Spider": the first device rule that matches is one
 * of the Spider rules. Only the (few) Spider rules run unless one matches;
 * then the rules before it decide whether it is really the first. */
static int qrt_ua_spider(const qrt_ua_db_t *db, const qrt_ua_subject_t *subj)
{
    int i, j;

    for (i = 0; i < db->nspiders; i++) {
        int k = db->spiders[i];

        if (qrt_ua_rule_match(db, &db->dev.rules[k], subj)) {
            for (j = 0; j < k; j++) {
                if (!db->dev.rules[j].spider
                    && qrt_ua_rule_match(db, &db->dev.rules[j], subj)) {
                    return 0;
                }
            }
            return 1;
        }
    }
    return 0;
}

static int qrt_ua_has(const char *ua, apr_size_t len, const char *token)
{
    return memmem(ua, len, token, strlen(token)) != NULL;
}

static int qrt_ua_prefix(const char *s, const char *prefix)
{
    return !strncmp(s, prefix, strlen(prefix));
}

static int qrt_ua_os_in(const char *os, const char *const *list)
{
    for (; *list; list++) {
        if (!strcmp(os, *list)) {
            return 1;
        }
    }
    return 0;
}

/* Device class from a few tokens and the os family. */
static int qrt_ua_device(const char *ua, apr_size_t len, const char *os)
{
    static const char *const tv_tokens[] = {
        "SmartTV", "SMART-TV", "Smart-TV", "SmartTv", "GoogleTV",
        "Android TV", "AndroidTV", "CrKey", "BRAVIA", "AppleTV",
        "Apple TV", "HbbTV", "NetCast", "Web0S", "Roku", "PlayStation",
        "Xbox", "Nintendo", "AFTB", "AFTM", "AFTS", "AFTT", "AFTK", "AFTN",
        "AFTR", "AFTA", "OculusBrowser", NULL
    };
    static const char *const tv_os[] = {
        "ATV OS X", "tvOS", "Chromecast", "GoogleTV", "FireHbbTV", "Roku",
        "Web0S", "WebTV", "WatchOS", "Panasonic", "Philips", "Sony", "LG",
        "Samsung", "VRE", NULL
    };
    static const char *const tablet_tokens[] = {
        "iPad", "Kindle", "Silk/", "; KF", "PlayBook", "RIM Tablet",
        "Nexus 7", "Nexus 9", "Nexus 10", NULL
    };
    static const char *const mobile_tokens[] = {
        "iPhone", "iPod", "Windows Phone", "Windows Mobile", "BlackBerry",
        "BB10", "Opera Mini", "Opera Mobi", "Symbian", "SymbOS", "Series40",
        "KAIOS", "KaiOS", "MIDP", "CLDC", "J2ME", "Mobi", "UCWEB",
        "UP.Browser", "UP.Link", "Obigo", "Teleca", "NetFront", "DoCoMo",
        "KDDI",
        "SonyEricsson", "Nokia", "NOKIA", "SAMSUNG-", "SIE-", "MOT-", "LG-",
        "LGE-", "Alcatel-", "ALCATEL-", "BREW", "Brew", "WAP", "MAUI", NULL
    };
    static const char *const mobile_os[] = {
        "Android", "iOS", "Windows Phone", "Windows Mobile", "Windows CE",
        "BlackBerry OS", "Symbian OS", "Symbian^3", "Symbian^3 Anna",
        "Symbian^3 Belle", "Nokia Series 40", "Nokia Series 30 Plus",
        "MeeGo", "Maemo", "KaiOS", "Firefox OS", "webOS", "Bada", "Tizen",
        "Sailfish", "Brew MP", "BREW", NULL
    };
    static const char *const desktop_os[] = {
        "Mac OS X", "Mac OS", "Linux", "Ubuntu", "Kubuntu", "Xubuntu",
        "Lubuntu", "Fedora", "Debian", "Mint", "Linux Mint", "Arch Linux",
        "Gentoo", "Red Hat", "SUSE", "openSUSE", "Slackware", "Mandriva",
        "Mageia", "CentOS", "Chrome OS", "FreeBSD", "OpenBSD", "NetBSD",
        "DragonFly BSD", "BSD", "Solaris", "SunOS", "Haiku", "BeOS", "OS/2",
        "AIX", "HP-UX", "IRIX", "SerenityOS", NULL
    };
    int i, windows;

    windows = qrt_ua_prefix(os, "Windows")
              && strcmp(os, "Windows Phone") && strcmp(os, "Windows Mobile")
              && strcmp(os, "Windows CE");

    if (qrt_ua_os_in(os, tv_os)) {
        return QRT_UA_DEV_OTHER;
    }
    for (i = 0; tv_tokens[i]; i++) {
        if (qrt_ua_has(ua, len, tv_tokens[i])) {
            return QRT_UA_DEV_OTHER;
        }
    }
    for (i = 0; tablet_tokens[i]; i++) {
        if (qrt_ua_has(ua, len, tablet_tokens[i])) {
            return QRT_UA_DEV_TABLET;
        }
    }
    if (!strcmp(os, "BlackBerry Tablet OS") || !strcmp(os, "WeTab")
        || (!windows && qrt_ua_has(ua, len, "Tablet"))) {
        return QRT_UA_DEV_TABLET;
    }
    if (!strcmp(os, "Android") || qrt_ua_has(ua, len, "Android")) {
        /* browsers say "Mobile" on phones only; apps rarely say either */
        if (qrt_ua_has(ua, len, "Mobi")
            || !qrt_ua_has(ua, len, "Mozilla/")) {
            return QRT_UA_DEV_MOBILE;
        }
        return QRT_UA_DEV_TABLET;
    }
    if (qrt_ua_os_in(os, mobile_os)) {
        return QRT_UA_DEV_MOBILE;
    }
    for (i = 0; mobile_tokens[i]; i++) {
        if (qrt_ua_has(ua, len, mobile_tokens[i])) {
            return QRT_UA_DEV_MOBILE;
        }
    }
    if (windows || qrt_ua_os_in(os, desktop_os)) {
        return QRT_UA_DEV_DESKTOP;
    }
    return QRT_UA_DEV_OTHER;
}

/* The uncached classification of the first len bytes of ua. */
static void qrt_ua_classify(const qrt_ua_db_t *db, const char *ua,
                            apr_size_t len, apr_pool_t *p, qrt_ua_t *out)
{
    pcre2_match_data *md;
    const qrt_ua_rule_t *rule;
    const char *v;
    char lower[QRT_UA_MAX_LEN];
    qrt_ua_subject_t subj;
    int bot, rc;

    md = pcre2_match_data_create(db->ovector_pairs, NULL);
    if (!md) {
        return;
    }
    qrt_ua_subject(&subj, ua, len, lower, md);

    rule = qrt_ua_first(db, &db->ua, &subj, &rc);
    if (rule) {
        v = qrt_ua_value(rule, 0, md, rc, ua, p);
        out->browser = v ? v : "Other";
        out->browser_version = qrt_ua_value(rule, 1, md, rc, ua, p);
    }
    rule = qrt_ua_first(db, &db->os, &subj, &rc);
    if (rule) {
        v = qrt_ua_value(rule, 0, md, rc, ua, p);
        out->os = v ? v : "Other";
    }

    bot = qrt_ua_spider(db, &subj);
    if (!bot && strcmp(out->browser, "Other")) {
        bot = qrt_ua_match(db, db->botfamily, out->browser,
                           strlen(out->browser), md);
    }
    pcre2_match_data_free(md);

    out->bot = bot;
    out->device = qrt_ua_devices[bot ? QRT_UA_DEV_BOT
                                     : qrt_ua_device(ua, len, out->os)];
}

/* --------------------------------------------------------------- cache */

static void qrt_ua_lock(qrt_ua_stripe_t *st)
{
#if APR_HAS_THREADS
    apr_thread_mutex_lock(st->mutex);
#endif
}

static void qrt_ua_unlock(qrt_ua_stripe_t *st)
{
#if APR_HAS_THREADS
    apr_thread_mutex_unlock(st->mutex);
#endif
}

static int qrt_ua_cache_get(qrt_ua_db_t *db, apr_uint64_t h, const char *ua,
                            apr_size_t len, apr_pool_t *p, qrt_ua_t *out)
{
    apr_size_t set = (apr_size_t)(h >> 20) & (QRT_UA_CACHE_SETS - 1);
    qrt_ua_stripe_t *st = &db->stripes[set & (QRT_UA_CACHE_STRIPES - 1)];
    qrt_ua_slot_t *slot;
    int way;

    qrt_ua_lock(st);
    for (way = 0; way < QRT_UA_CACHE_WAYS; way++) {
        slot = &db->slots[set * QRT_UA_CACHE_WAYS + way];
        if (slot->block && slot->hash == h && slot->klen == len
            && !memcmp(slot->block + slot->slen, ua, len)) {
            char *copy = apr_pmemdup(p, slot->block, slot->slen);

            out->browser = copy;
            out->browser_version = slot->version_off ? copy
                                   + slot->version_off : NULL;
            out->os = copy + slot->os_off;
            out->device = qrt_ua_devices[slot->device];
            out->bot = slot->bot;
            db->victim[set] = (unsigned char)(1 - way);
            st->hits++;
            qrt_ua_unlock(st);
            return 1;
        }
    }
    st->misses++;
    qrt_ua_unlock(st);
    return 0;
}

static void qrt_ua_cache_put(qrt_ua_db_t *db, apr_uint64_t h, const char *ua,
                             apr_size_t len, const qrt_ua_t *res)
{
    apr_size_t set = (apr_size_t)(h >> 20) & (QRT_UA_CACHE_SETS - 1);
    qrt_ua_stripe_t *st = &db->stripes[set & (QRT_UA_CACHE_STRIPES - 1)];
    apr_size_t lb = strlen(res->browser) + 1, lo = strlen(res->os) + 1;
    apr_size_t lv = res->browser_version ? strlen(res->browser_version) + 1
                                         : 0;
    qrt_ua_slot_t *slot, fresh;
    char *old = NULL;
    int way, dev;

    fresh.block = malloc(lb + lv + lo + len);
    if (!fresh.block) {
        return;
    }
    memcpy(fresh.block, res->browser, lb);
    if (lv) {
        memcpy(fresh.block + lb, res->browser_version, lv);
    }
    memcpy(fresh.block + lb + lv, res->os, lo);
    memcpy(fresh.block + lb + lv + lo, ua, len);
    fresh.slen = lb + lv + lo;
    fresh.klen = len;
    fresh.hash = h;
    fresh.version_off = lv ? lb : 0;
    fresh.os_off = lb + lv;
    fresh.bot = (unsigned char)res->bot;
    fresh.device = QRT_UA_DEV_OTHER;
    for (dev = 0; dev <= QRT_UA_DEV_OTHER; dev++) {
        if (!strcmp(res->device, qrt_ua_devices[dev])) {
            fresh.device = (unsigned char)dev;
        }
    }

    qrt_ua_lock(st);
    way = db->victim[set];
    for (dev = 0; dev < QRT_UA_CACHE_WAYS; dev++) {
        slot = &db->slots[set * QRT_UA_CACHE_WAYS + dev];
        if (!slot->block
            || (slot->hash == h && slot->klen == len
                && !memcmp(slot->block + slot->slen, ua, len))) {
            /* an empty way, or another thread cached it meanwhile */
            way = dev;
            break;
        }
    }
    slot = &db->slots[set * QRT_UA_CACHE_WAYS + way];
    old = slot->block;
    *slot = fresh;
    db->victim[set] = (unsigned char)(1 - way);
    qrt_ua_unlock(st);
    free(old);
}

/* -------------------------------------------------------------- public */

void qrt_ua_parse(qrt_ua_db_t *db, const char *ua, apr_pool_t *p,
                  qrt_ua_t *out)
{
    apr_size_t len;
    apr_uint64_t h;

    out->browser = "Other";
    out->browser_version = NULL;
    out->os = "Other";
    out->device = qrt_ua_devices[QRT_UA_DEV_OTHER];
    out->bot = 0;
    if (!db || !ua || !*ua) {
        return;
    }
    /* everything past QRT_UA_MAX_LEN is ignored, by the regexes and by
     * the cache key alike, so equal prefixes mean equal results */
    len = strnlen(ua, QRT_UA_MAX_LEN);
    h = qrt_hash64(ua, len);
    if (qrt_ua_cache_get(db, h, ua, len, p, out)) {
        return;
    }
    qrt_ua_classify(db, ua, len, p, out);
    /* Names made of the user agent's own bytes are stored and put in JSON: always
     * valid UTF-8 (an ill-formed sequence becomes U+FFFD). */
    out->browser = qrt_valid_utf8_clean(p, out->browser, strlen(out->browser), 0);
    out->os = qrt_valid_utf8_clean(p, out->os, strlen(out->os), 0);
    if (out->browser_version) {
        out->browser_version = qrt_valid_utf8_clean(p, out->browser_version,
                                                    strlen(out->browser_version), 0);
    }
    qrt_ua_cache_put(db, h, ua, len, out);
}

void qrt_ua_cache_stats(qrt_ua_db_t *db, apr_uint64_t *hits,
                        apr_uint64_t *misses)
{
    int i;

    *hits = *misses = 0;
    for (i = 0; i < QRT_UA_CACHE_STRIPES; i++) {
        qrt_ua_lock(&db->stripes[i]);
        *hits += db->stripes[i].hits;
        *misses += db->stripes[i].misses;
        qrt_ua_unlock(&db->stripes[i]);
    }
}
