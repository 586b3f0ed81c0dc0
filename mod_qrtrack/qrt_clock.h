/* qrt_clock: time that no step of the wall clock moves (CLOCK_MONOTONIC), for the
 * module's intervals, deadlines and pauses, and a condition to wait on it.
 *
 * apr_time_now() follows the wall clock, and so does APR's apr_thread_cond_timedwait,
 * which waits until an instant of CLOCK_REALTIME. When the wall clock is set back (an
 * NTP step at boot, an administrator's correction), "next at now + 1 s" and a pause of
 * 100 ms begun just before both last as much longer: an hour set back stopped the
 * snapshot's refresh, the webhooks' deliveries and the WAL's checkpoints for an hour.
 * Times that are stored, shown, or compared with stored ones (a visit's, a delivery's
 * due time) stay the wall clock's. */
#ifndef QRT_CLOCK_H
#define QRT_CLOCK_H

#include <apr_errno.h>
#include <apr_pools.h>
#include <apr_time.h>
#include <time.h>

/* Microseconds on CLOCK_MONOTONIC: the same clock in every process of the machine. */
apr_time_t qrt_clock_now(void);

/* The instant t from now (t < 0 counts as 0) on the same clock, as the timespec that
 * waits until an instant of CLOCK_MONOTONIC take (pthread_cond_clockwait,
 * FUTEX_WAIT_BITSET). */
struct timespec qrt_clock_after(apr_interval_time_t t);

/* Whether now is less than interval from last, on either side. For a throttle that acts
 * once per interval on times that threads took before they raced for it: a time a little
 * before the last (a request stamped when it began, that then waited) is within the
 * interval, not a clock set back; one an interval or more away on either side is not. */
int qrt_clock_within(apr_time_t last, apr_time_t now, apr_interval_time_t interval);

/* A mutex and a condition whose timed wait is on qrt_clock_now's clock. */
typedef struct qrt_cond_t qrt_cond_t;

/* Made in p, destroyed with it. */
apr_status_t qrt_cond_create(qrt_cond_t **c, apr_pool_t *p);
void qrt_cond_lock(qrt_cond_t *c);
void qrt_cond_unlock(qrt_cond_t *c);
/* With the lock held: waits until signalled. */
void qrt_cond_wait(qrt_cond_t *c);
/* With the lock held: waits until signalled or for t at most (APR_TIMEUP). */
apr_status_t qrt_cond_timedwait(qrt_cond_t *c, apr_interval_time_t t);
void qrt_cond_signal(qrt_cond_t *c);
void qrt_cond_broadcast(qrt_cond_t *c);

#endif
