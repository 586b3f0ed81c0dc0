/* qrt_children: waiting for child processes to end without reaping them. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "qrt_children.h"
#include "qrt_clock.h"

/* How often the processes are looked at: a new generation waits this long at most
 * after the last of them has ended. */
#define CHILDREN_POLL apr_time_from_msec(2)

static int child_ended(pid_t pid)
{
    siginfo_t info;

    if (pid <= 0) {
        return 1;
    }
    memset(&info, 0, sizeof(info));
    while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
        if (errno != EINTR) {
            return 1;           /* ECHILD: not (or no longer) a child of ours */
        }
    }
    return info.si_pid == pid;
}

int qrt_children_wait_ended(const pid_t *pids, int n, apr_interval_time_t max)
{
    apr_time_t until = qrt_clock_now() + max;
    int i, left;

    for (;;) {
        for (left = 0, i = 0; i < n; i++) {
            left += !child_ended(pids[i]);
        }
        if (!left || qrt_clock_now() >= until) {
            return left;
        }
        apr_sleep(CHILDREN_POLL);
    }
}

int qrt_turn_take(volatile apr_uint32_t *holder, pid_t me)
{
    apr_uint32_t was = 0;

    if (__atomic_compare_exchange_n(holder, &was, (apr_uint32_t)me, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        return 1;
    }
    if (was != (apr_uint32_t)me && (kill((pid_t)was, 0) == 0 || errno != ESRCH)) {
        return 0;
    }
    return __atomic_compare_exchange_n(holder, &was, (apr_uint32_t)me, 0, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE);
}

void qrt_turn_give(volatile apr_uint32_t *holder, pid_t me)
{
    apr_uint32_t was = (apr_uint32_t)me;

    /* (only its own: a holder taken over for dead gives nothing back) */
    __atomic_compare_exchange_n(holder, &was, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}
