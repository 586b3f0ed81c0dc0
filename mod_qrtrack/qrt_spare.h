/* qrt_spare: a second thread for a request's work, kept between jobs (no database, no
 * httpd).
 *
 * A report splits a long count in two halves, the second on another thread. Made and
 * ended for each count, that thread costs its creation, its stack's first pages and its
 * end every time; here the thread stays once its job is done and waits for the next
 * one. At most a few threads wait (qrt_spare_keep); a job that finds none waiting gets
 * a new thread, which ends after its job when enough wait already. Jobs never queue
 * behind each other: each runs at once, or the caller is told to run it itself.
 *
 * A child process made by fork() starts with no thread kept (the parent's are not
 * its). Unit-tested in test/unit/test_spare.c. */
#ifndef QRT_SPARE_H
#define QRT_SPARE_H

#include <apr.h>

typedef void qrt_spare_fn(void *arg);

/* One job, the caller's (on its stack, say) until qrt_spare_wait returns. */
typedef struct qrt_spare_job {
    qrt_spare_fn *fn;
    void *arg;
    int done;                       /* (under the module's lock) */
    int dbwatch_ms;                 /* the caller's limit on database calls, which fn's
                                     * thread keeps while it runs (qrt_dbwatch.h) */
} qrt_spare_job;

/* Runs fn(arg) on another thread: 0, and the caller waits for it with qrt_spare_wait;
 * or -1 when no thread can be had (out of threads, or after qrt_spare_end), and the
 * caller runs fn itself. */
int qrt_spare_start(qrt_spare_job *job, qrt_spare_fn *fn, void *arg);
/* Returns once the job that qrt_spare_start took has run. */
void qrt_spare_wait(qrt_spare_job *job);
/* How many threads may wait for a job (QRT_SPARE_KEEP until set; 0: none waits). */
void qrt_spare_keep(int n);
/* Ends every thread, once its job is done, and waits for them: the process (an httpd
 * child) is about to end or unload the code. qrt_spare_start runs nothing after it,
 * until qrt_spare_keep is called again. */
void qrt_spare_end(void);
/* Threads that exist now and threads that wait for a job (tests). */
void qrt_spare_counts(int *live, int *idle);

#define QRT_SPARE_KEEP 4

#endif
