/* qrt_retry: when a webhook delivery is tried again, and what an answer means.
 *
 * An event is tried at once, then again after about 5 s, 5 min, 30 min, 2 h, 5 h,
 * 10 h and 24 h (each delay with +-10 % jitter, so that the events of a receiver that
 * came back do not all arrive in the same second): eight attempts over about 42 h,
 * then the event is failed. A receiver's Retry-After (seconds, or an HTTP date) is
 * followed when it asks for more time than the schedule's next delay, up to
 * QRT_RETRY_AFTER_MAX; a shorter one is not: the schedule is the floor, so that no
 * answer makes the worker try again at once, over and over. */
#ifndef QRT_RETRY_H
#define QRT_RETRY_H

#include <apr.h>

/* Attempts an event gets: the first and QRT_RETRY_STEPS retries. */
#define QRT_RETRY_STEPS     7
#define QRT_RETRY_ATTEMPTS  (QRT_RETRY_STEPS + 1)
/* The longest wait a Retry-After may ask for: 24 h. */
#define QRT_RETRY_AFTER_MAX 86400
/* Events failed in a row (every retry spent) after which the webhook is disabled. */
#define QRT_RETRY_DISABLE_AFTER 10

/* What an answer means. */
typedef enum {
    QRT_RETRY_DELIVERED,    /* 2xx */
    QRT_RETRY_GONE,         /* 410: the webhook is disabled */
    QRT_RETRY_AGAIN         /* anything else, or no answer: try again (or fail) */
} qrt_retry_outcome_t;

qrt_retry_outcome_t qrt_retry_outcome(long http_status);

/* The schedule's delay in seconds after attempt number `attempt` (1 = the first)
 * failed, jittered by r (any 32-bit random number): 0.9 to 1.1 times the step, at
 * least 1 s. -1 when attempt was the last one (or is out of range). */
apr_int64_t qrt_retry_delay(int attempt, apr_uint32_t r);

/* The delay a Retry-After value asks for, in seconds from now (epoch seconds):
 * a number of seconds (digits only) or an HTTP date (RFC 9110's three forms);
 * capped at QRT_RETRY_AFTER_MAX, 0 for a date in the past; -1 when value is none of
 * these. */
apr_int64_t qrt_retry_after_parse(const char *value, apr_int64_t now);

/* The delay to wait after attempt number `attempt` failed: the schedule's
 * (qrt_retry_delay), or retry_after (a qrt_retry_after_parse result; -1 = none)
 * when that is longer. -1 when no attempt is left. */
apr_int64_t qrt_retry_next(int attempt, apr_uint32_t r, apr_int64_t retry_after);

#endif
