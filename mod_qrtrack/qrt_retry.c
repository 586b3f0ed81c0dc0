/* qrt_retry: the webhook delivery's retry schedule, Retry-After, answers' meaning. */
#include <string.h>
#include <apr_lib.h>
#include <apr_date.h>
#include <apr_time.h>

#include "qrt_retry.h"

static const apr_int64_t schedule[QRT_RETRY_STEPS] = {
    5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600, 24 * 3600
};

qrt_retry_outcome_t qrt_retry_outcome(long http_status)
{
    if (http_status >= 200 && http_status <= 299) {
        return QRT_RETRY_DELIVERED;
    }
    if (http_status == 410) {
        return QRT_RETRY_GONE;
    }
    return QRT_RETRY_AGAIN;
}

apr_int64_t qrt_retry_delay(int attempt, apr_uint32_t r)
{
    apr_int64_t step, d;

    if (attempt < 1 || attempt > QRT_RETRY_STEPS) {
        return -1;
    }
    step = schedule[attempt - 1];
    /* step * (0.9 + 0.2 * r / 2^32), in integers (in milliseconds: 5 s gets its jitter) */
    d = step * 900 + (apr_int64_t)((step * 200 * (apr_uint64_t)r) >> 32);
    d = (d + 500) / 1000;
    return d < 1 ? 1 : d;
}

apr_int64_t qrt_retry_after_parse(const char *value, apr_int64_t now)
{
    apr_time_t t;
    apr_int64_t v = 0;
    const char *s = value;

    if (!value) {
        return -1;
    }
    while (*s == ' ' || *s == '\t') {
        s++;
    }
    if (apr_isdigit(*s)) {
        for (; apr_isdigit(*s); s++) {
            if (v <= QRT_RETRY_AFTER_MAX) {
                v = v * 10 + (*s - '0');
            }
        }
        while (*s == ' ' || *s == '\t') {
            s++;
        }
        if (*s) {
            return -1;
        }
        return v > QRT_RETRY_AFTER_MAX ? QRT_RETRY_AFTER_MAX : v;
    }
    t = apr_date_parse_http(s);
    if (t == APR_DATE_BAD) {
        return -1;
    }
    v = apr_time_sec(t) - now;
    return v < 0 ? 0 : (v > QRT_RETRY_AFTER_MAX ? QRT_RETRY_AFTER_MAX : v);
}

apr_int64_t qrt_retry_next(int attempt, apr_uint32_t r, apr_int64_t retry_after)
{
    apr_int64_t d = qrt_retry_delay(attempt, r);

    if (d < 0) {
        return -1;
    }
    return retry_after > d ? retry_after : d;
}
