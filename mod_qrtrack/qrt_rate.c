/* qrt_rate: fixed-size open-addressing table of per-token request windows. */
#include <string.h>
#include <apr_strings.h>
#include "qrt_rate.h"

#define RATE_MAX_PROBE 64

apr_size_t qrt_rate_table_size(apr_uint32_t nslots)
{
    return sizeof(qrt_rate_table_t) + (apr_size_t)nslots * sizeof(qrt_rate_slot_t);
}

void qrt_rate_table_init(qrt_rate_table_t *t, apr_uint32_t nslots)
{
    memset(t, 0, qrt_rate_table_size(nslots));
    t->nslots = nslots;
    t->probe = nslots < RATE_MAX_PROBE ? nslots : RATE_MAX_PROBE;
}

static apr_uint32_t rate_hash(apr_uint64_t key, apr_uint32_t n)
{
    key ^= key >> 33;
    key *= APR_UINT64_C(0xff51afd7ed558ccd);
    key ^= key >> 33;
    return (apr_uint32_t)(key % n);
}

static int rate_open(const qrt_rate_slot_t *s, apr_int64_t window_usec, apr_time_t now)
{
    return s->key != 0 && now - s->window_start < window_usec && now >= s->window_start;
}

static long rate_secs_left(apr_int64_t end, apr_time_t now)
{
    apr_int64_t left = end - now;

    return left <= 0 ? 1 : (long)((left + APR_USEC_PER_SEC - 1) / APR_USEC_PER_SEC);
}

qrt_rate_verdict_t qrt_rate_hit(qrt_rate_table_t *t, apr_uint64_t key, long limit,
                                apr_int64_t window_usec, apr_time_t now,
                                qrt_rate_result_t *res)
{
    qrt_rate_slot_t *slot = NULL, *spare = NULL;
    apr_uint32_t i, h = rate_hash(key, t->nslots);
    qrt_rate_verdict_t verdict;

    res->limit = limit;
    res->remaining = 0;
    for (i = 0; i < t->probe; i++) {
        qrt_rate_slot_t *s = &t->slots[(h + i) % t->nslots];

        if (s->key == key) {
            slot = s;
            break;
        }
        if (!spare && !rate_open(s, window_usec, now)) {
            spare = s;
        }
    }
    if (!slot) {
        if (!spare) {
            /* Every slot near the key holds a live window: refuse rather than
             * let the token through uncounted. The earliest one ends first. */
            apr_int64_t first = 0;

            for (i = 0; i < t->probe; i++) {
                qrt_rate_slot_t *s = &t->slots[(h + i) % t->nslots];

                if (!first || s->window_start < first) {
                    first = s->window_start;
                }
            }
            res->reset = (first + window_usec) / APR_USEC_PER_SEC + 1;
            res->retry_after = rate_secs_left(first + window_usec, now);
            return QRT_RATE_FULL;
        }
        slot = spare;
        slot->key = key;
        slot->count = 0;
        slot->window_start = now;
    }
    if (!rate_open(slot, window_usec, now)) {
        slot->count = 0;
        slot->window_start = now;
    }
    slot->limit = (apr_uint32_t)limit;
    verdict = qrt_rate_judge(slot->window_start, (apr_uint64_t)slot->count + 1, limit,
                             window_usec, now, res);
    if (verdict == QRT_RATE_OK) {
        slot->count++;
    }
    return verdict;
}

qrt_rate_verdict_t qrt_rate_judge(apr_int64_t window_start, apr_uint64_t n, long limit,
                                  apr_int64_t window_usec, apr_time_t now,
                                  qrt_rate_result_t *res)
{
    apr_int64_t end = window_start + window_usec;

    res->limit = limit;
    res->reset = (end + APR_USEC_PER_SEC - 1) / APR_USEC_PER_SEC;
    if (n > (apr_uint64_t)limit) {
        res->remaining = 0;
        res->retry_after = rate_secs_left(end, now);
        return QRT_RATE_LIMITED;
    }
    res->remaining = limit - (long)n;
    res->retry_after = 0;
    return QRT_RATE_OK;
}

apr_uint32_t qrt_rate_active(const qrt_rate_table_t *t, apr_int64_t window_usec,
                             apr_time_t now)
{
    apr_uint32_t i, n = 0;

    for (i = 0; i < t->nslots; i++) {
        n += rate_open(&t->slots[i], window_usec, now);
    }
    return n;
}

/* One "HOST:PORT" of the list. */
static const char *rate_server_parse(apr_pool_t *p, const char *item,
                                     qrt_rate_server_t *sv)
{
    char *host = NULL, *scope = NULL;
    apr_port_t port = 0;

    if (*item == '[') {
        return apr_psprintf(p, "'%s': apr_memcache connects over IPv4 only "
                            "(give a name or an IPv4 address)", item);
    }
    if (apr_parse_addr_port(&host, &scope, &port, item, p) != APR_SUCCESS
        || !host || !*host || scope || strpbrk(host, " \t")) {
        return apr_psprintf(p, "'%s' is not HOST:PORT", item);
    }
    if (port == 0) {
        return apr_psprintf(p, "'%s' is not HOST:PORT (the port is missing or 0)",
                            item);
    }
    if (strchr(host, ':')) {
        return apr_psprintf(p, "'%s': apr_memcache connects over IPv4 only "
                            "(give a name or an IPv4 address)", item);
    }
    sv->host = host;
    sv->port = port;
    return NULL;
}

const char *qrt_rate_servers_parse(apr_pool_t *p, const char *list,
                                   apr_array_header_t **servers)
{
    apr_array_header_t *a = apr_array_make(p, 2, sizeof(qrt_rate_server_t));
    const char *start = list, *end;

    for (;;) {
        const char *err;
        char *item;

        end = strchr(start, ',');
        item = end ? apr_pstrmemdup(p, start, (apr_size_t)(end - start))
                   : apr_pstrdup(p, start);
        if (!*item) {
            return apr_psprintf(p, "'%s' has an empty server (HOST:PORT[,HOST:PORT...])",
                                list);
        }
        if (a->nelts == QRT_RATE_MAX_SERVERS) {
            return apr_psprintf(p, "more than %d servers", QRT_RATE_MAX_SERVERS);
        }
        err = rate_server_parse(p, item, apr_array_push(a));
        if (err) {
            return err;
        }
        if (!end) {
            break;
        }
        start = end + 1;
    }
    *servers = a;
    return NULL;
}
