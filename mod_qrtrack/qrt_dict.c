/* qrt_dict: dictionary keys and the committer's cache of dictionary ids. */
#include <string.h>
#include <apr_hash.h>
#include <apr_strings.h>
#include "qrt_dict.h"

char *qrt_dict_key(apr_pool_t *p, const char *const *fields, int n)
{
    apr_size_t len = 1;
    char *out, *o;
    int i;

    for (i = 0; i < n; i++) {
        len += fields[i] ? strlen(fields[i]) + 21 : 1;
    }
    o = out = apr_palloc(p, len);
    for (i = 0; i < n; i++) {
        apr_size_t l;

        if (!fields[i]) {
            *o++ = '-';
            continue;
        }
        l = strlen(fields[i]);
        o += apr_snprintf(o, 22, "%" APR_SIZE_T_FMT ":", l);
        memcpy(o, fields[i], l);
        o += l;
    }
    *o = '\0';
    return out;
}

struct qrt_dict_cache {
    apr_pool_t *parent;
    int max;
    apr_size_t max_bytes;           /* of a dictionary's kept keys; 0: no bound */
    apr_pool_t *pool[QRT_DICTS];    /* kept entries of each dictionary */
    apr_hash_t *kept[QRT_DICTS];
    apr_size_t bytes[QRT_DICTS];    /* their keys' bytes */
    apr_pool_t *pending_pool;
    apr_hash_t *pending[QRT_DICTS];
    int npending;
    int found[QRT_DICTS];           /* misses found lately, less those added, bounded */
    apr_int64_t gen;                /* the dictionaries' generation of the kept entries */
    int gen_known;
};

#define DICT_FOUND_MAX 16

static void dict_pending_reset(qrt_dict_cache_t *c)
{
    int d;

    apr_pool_clear(c->pending_pool);
    for (d = 0; d < QRT_DICTS; d++) {
        c->pending[d] = apr_hash_make(c->pending_pool);
    }
    c->npending = 0;
}

static void dict_kept_reset(qrt_dict_cache_t *c, int d)
{
    apr_pool_clear(c->pool[d]);
    c->kept[d] = apr_hash_make(c->pool[d]);
    c->bytes[d] = 0;
}

qrt_dict_cache_t *qrt_dict_cache_make(apr_pool_t *p, int max, apr_size_t max_bytes)
{
    qrt_dict_cache_t *c = apr_pcalloc(p, sizeof(*c));
    int d;

    c->parent = p;
    c->max = max > 0 ? max : 1;
    c->max_bytes = max_bytes;
    for (d = 0; d < QRT_DICTS; d++) {
        apr_pool_create(&c->pool[d], p);
        apr_pool_tag(c->pool[d], "qrt_dict_cache");
        c->kept[d] = apr_hash_make(c->pool[d]);
    }
    apr_pool_create(&c->pending_pool, p);
    apr_pool_tag(c->pending_pool, "qrt_dict_pending");
    dict_pending_reset(c);
    return c;
}

apr_int64_t qrt_dict_cache_get(qrt_dict_cache_t *c, int dict, const char *key)
{
    const apr_int64_t *id;

    if (!c || dict < 0 || dict >= QRT_DICTS || !key) {
        return 0;
    }
    id = apr_hash_get(c->kept[dict], key, APR_HASH_KEY_STRING);
    if (!id) {
        id = apr_hash_get(c->pending[dict], key, APR_HASH_KEY_STRING);
    }
    return id ? *id : 0;
}

void qrt_dict_cache_stage(qrt_dict_cache_t *c, int dict, const char *key, apr_int64_t id)
{
    apr_int64_t *v;
    const char *k;

    if (!c || dict < 0 || dict >= QRT_DICTS || !key || id <= 0
        || apr_hash_get(c->kept[dict], key, APR_HASH_KEY_STRING)) {
        return;
    }
    k = apr_pstrdup(c->pending_pool, key);
    v = apr_palloc(c->pending_pool, sizeof(*v));
    *v = id;
    apr_hash_set(c->pending[dict], k, APR_HASH_KEY_STRING, v);
    c->npending++;
}

void qrt_dict_cache_commit(qrt_dict_cache_t *c)
{
    apr_hash_index_t *hi;
    int d;

    if (!c) {
        return;
    }
    for (d = 0; d < QRT_DICTS; d++) {
        for (hi = apr_hash_first(c->pending_pool, c->pending[d]); hi;
             hi = apr_hash_next(hi)) {
            const void *key;
            void *val;
            apr_int64_t *v;
            apr_size_t len;

            apr_hash_this(hi, &key, NULL, &val);
            len = strlen(key) + 1;
            if ((int)apr_hash_count(c->kept[d]) >= c->max
                || (c->max_bytes && c->bytes[d] + len > c->max_bytes)) {
                dict_kept_reset(c, d);      /* full: start over */
            }
            v = apr_palloc(c->pool[d], sizeof(*v));
            *v = *(const apr_int64_t *)val;
            apr_hash_set(c->kept[d], apr_pmemdup(c->pool[d], key, len), (apr_ssize_t)len - 1, v);
            c->bytes[d] += len;
        }
    }
    dict_pending_reset(c);
}

void qrt_dict_cache_abort(qrt_dict_cache_t *c)
{
    if (c) {
        dict_pending_reset(c);
    }
}

int qrt_dict_cache_generation(qrt_dict_cache_t *c, apr_int64_t gen)
{
    static const int purged[] = { QRT_DICT_UA, QRT_DICT_REF, QRT_DICT_IP, QRT_DICT_DEST };
    int i, moved;

    if (!c || (c->gen_known && c->gen == gen)) {
        return 0;
    }
    moved = c->gen_known;
    for (i = 0; i < (int)(sizeof(purged) / sizeof(purged[0])); i++) {
        dict_kept_reset(c, purged[i]);
        apr_hash_clear(c->pending[purged[i]]);
    }
    c->gen = gen;
    c->gen_known = 1;
    return moved;
}

int qrt_dict_cache_count(const qrt_dict_cache_t *c, int dict)
{
    return c && dict >= 0 && dict < QRT_DICTS ? (int)apr_hash_count(c->kept[dict]) : 0;
}

int qrt_dict_cache_lookup_first(const qrt_dict_cache_t *c, int dict)
{
    return c && dict >= 0 && dict < QRT_DICTS && c->found[dict] > 0;
}

void qrt_dict_cache_missed_batch(qrt_dict_cache_t *c, int dict, int found, int added)
{
    long v;

    if (!c || dict < 0 || dict >= QRT_DICTS) {
        return;
    }
    v = (long)c->found[dict] + found - added;
    c->found[dict] = v > DICT_FOUND_MAX ? DICT_FOUND_MAX
                     : v < -DICT_FOUND_MAX ? -DICT_FOUND_MAX : (int)v;
}

void qrt_dict_cache_missed(qrt_dict_cache_t *c, int dict, int found)
{
    if (!c || dict < 0 || dict >= QRT_DICTS) {
        return;
    }
    if (found && c->found[dict] < DICT_FOUND_MAX) {
        c->found[dict]++;
    }
    else if (!found && c->found[dict] > -DICT_FOUND_MAX) {
        c->found[dict]--;
    }
}
