/* qrt_queue_os: the scan queue's OS seam on Linux (futex(2), kill(2), /proc). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#include "qrt_clock.h"
#include "qrt_queue.h"

static apr_time_t os_now(void *ctx)
{
    (void)ctx;
    return qrt_clock_now();
}

/* bits == 0: FUTEX_WAIT with a relative timeout; otherwise FUTEX_WAIT_BITSET,
 * whose timeout is absolute on CLOCK_MONOTONIC. */
static void os_wait(void *ctx, volatile apr_uint32_t *word, apr_uint32_t seen,
                    apr_uint32_t bits, apr_interval_time_t timeout)
{
    struct timespec ts;

    (void)ctx;
    if (bits == 0) {
        ts.tv_sec = timeout / APR_USEC_PER_SEC;
        ts.tv_nsec = (timeout % APR_USEC_PER_SEC) * 1000;
        syscall(SYS_futex, word, FUTEX_WAIT, seen, &ts, NULL, 0);
        return;
    }
    ts = qrt_clock_after(timeout);
    syscall(SYS_futex, word, FUTEX_WAIT_BITSET, seen, &ts, NULL, bits);
}

static void os_wake(void *ctx, volatile apr_uint32_t *word, int n, apr_uint32_t bits)
{
    (void)ctx;
    if (bits == 0) {
        syscall(SYS_futex, word, FUTEX_WAKE, n, NULL, NULL, 0);
    }
    else {
        syscall(SYS_futex, word, FUTEX_WAKE_BITSET, n, NULL, NULL, bits);
    }
}

/* The process's id, asked once a process: every scan names its process when it queues
 * its visit, and getpid() is a system call each time (glibc keeps no copy), a microsecond
 * on a virtual machine. 0 until asked; a fork's child forgets its parent's
 * (pthread_atfork, registered before the first copy is kept). */
static pid_t os_pid;
static pthread_once_t os_pid_once = PTHREAD_ONCE_INIT;

static void os_pid_forget(void)
{
    __atomic_store_n(&os_pid, 0, __ATOMIC_RELAXED);
}

static void os_pid_watch_forks(void)
{
    pthread_atfork(NULL, NULL, os_pid_forget);
}

static pid_t os_self(void *ctx)
{
    pid_t pid = __atomic_load_n(&os_pid, __ATOMIC_RELAXED);

    (void)ctx;
    if (pid == 0) {
        pthread_once(&os_pid_once, os_pid_watch_forks);
        pid = getpid();
        __atomic_store_n(&os_pid, pid, __ATOMIC_RELAXED);
    }
    return pid;
}

static int os_exited(void *ctx, pid_t pid)
{
    (void)ctx;
    return kill(pid, 0) != 0 && errno == ESRCH;
}

/* No such process, or a zombie its parent has not reaped yet. A child killed with
 * SIGKILL stays one until httpd's parent process looks, up to a second later, and
 * kill(pid, 0) succeeds on a zombie: /proc's state tells it within QRT_QUEUE_STALE. */
static int os_gone(void *ctx, pid_t pid)
{
    char path[64], buf[512], *end;
    ssize_t n;
    int fd;

    (void)ctx;
    if (kill(pid, 0) != 0) {
        return errno == ESRCH;
    }
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return errno == ENOENT;
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return 0;
    }
    buf[n] = '\0';
    /* "pid (comm) state ...": comm may hold any character, ')' included */
    end = strrchr(buf, ')');
    return end && end[1] == ' ' && (end[2] == 'Z' || end[2] == 'X');
}

const qrt_queue_os_t qrt_queue_os_linux = {
    os_now, os_wait, os_wake, os_self, os_exited, os_gone, NULL, NULL
};
