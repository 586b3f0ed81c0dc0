/* qrt_spare: jobs run on another thread, which is kept for the next job; threads past
 * the kept number end; qrt_spare_end ends them all; a forked child starts afresh. */
#include <check.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include <apr_general.h>

#include "qrt_spare.h"
#include "qrt_check.h"

typedef struct {
    pthread_t ran_on;
    int value;
    /* a gate: the job waits until it opens (0: does not wait) */
    pthread_mutex_t *mu;
    pthread_cond_t *cv;
    int *open;
    int *started;
} job_arg;

static void job_fn(void *data)
{
    job_arg *a = data;

    a->ran_on = pthread_self();
    a->value *= 2;
    if (a->mu) {
        pthread_mutex_lock(a->mu);
        (*a->started)++;
        pthread_cond_broadcast(a->cv);
        while (!*a->open) {
            pthread_cond_wait(a->cv, a->mu);
        }
        pthread_mutex_unlock(a->mu);
    }
}

/* One job on another thread, waited for. */
static void one_job(job_arg *a)
{
    qrt_spare_job job;

    ck_assert_int_eq(qrt_spare_start(&job, job_fn, a), 0);
    qrt_spare_wait(&job);
}

START_TEST(a_job_runs_on_another_thread_kept_for_the_next)
{
    job_arg a = { .value = 21 }, b = { .value = 5 };
    int live, idle;

    qrt_spare_keep(QRT_SPARE_KEEP);
    one_job(&a);
    ck_assert_int_eq(a.value, 42);
    ck_assert(!pthread_equal(a.ran_on, pthread_self()));
    qrt_spare_counts(&live, &idle);
    ck_assert_int_eq(live, 1);
    ck_assert_int_eq(idle, 1);
    one_job(&b);
    ck_assert_int_eq(b.value, 10);
    ck_assert(pthread_equal(a.ran_on, b.ran_on));   /* the same thread, kept */
    qrt_spare_end();
    qrt_spare_counts(&live, &idle);
    ck_assert_int_eq(live, 0);
    ck_assert_int_eq(idle, 0);
    /* after the end nothing runs elsewhere: the caller runs the job */
    {
        qrt_spare_job job;

        ck_assert_int_eq(qrt_spare_start(&job, job_fn, &a), -1);
    }
    qrt_spare_keep(QRT_SPARE_KEEP);
    one_job(&a);
    ck_assert_int_eq(a.value, 84);
    qrt_spare_end();
}
END_TEST

/* The threads that exist and wait, once as many as live exist (a thread counts as
 * waiting or ended just after its job's end is seen), or after a second. */
static void settle(int live, int *nlive, int *nidle)
{
    int i;

    for (i = 0; i < 1000; i++) {
        qrt_spare_counts(nlive, nidle);
        if (*nlive == live) {
            return;
        }
        usleep(1000);
    }
}

/* Jobs at once each get a thread of their own (none waits for another's); once done,
 * only the kept number stays. */
START_TEST(jobs_at_once_never_queue_and_only_the_kept_stay)
{
    enum { N = 7 };
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    int open = 0, started = 0, i, j, live, idle;
    job_arg a[N];
    qrt_spare_job job[N];

    qrt_spare_keep(3);
    for (i = 0; i < N; i++) {
        a[i] = (job_arg){ .value = i, .mu = &mu, .cv = &cv, .open = &open,
                          .started = &started };
        ck_assert_int_eq(qrt_spare_start(&job[i], job_fn, &a[i]), 0);
    }
    /* every job runs at the same time: all of them start before any may end */
    pthread_mutex_lock(&mu);
    while (started < N) {
        pthread_cond_wait(&cv, &mu);
    }
    open = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (i = 0; i < N; i++) {
        qrt_spare_wait(&job[i]);
        ck_assert_int_eq(a[i].value, 2 * i);
        for (j = 0; j < i; j++) {
            ck_assert(!pthread_equal(a[i].ran_on, a[j].ran_on));
        }
    }
    settle(3, &live, &idle);
    ck_assert_int_eq(live, 3);
    ck_assert_int_eq(idle, 3);
    qrt_spare_keep(1);
    settle(1, &live, &idle);
    ck_assert_int_eq(live, 1);
    ck_assert_int_eq(idle, 1);
    qrt_spare_end();
    qrt_spare_keep(QRT_SPARE_KEEP);
}
END_TEST

/* With none kept, each job's thread ends after it. */
START_TEST(none_kept)
{
    job_arg a = { .value = 1 };
    int live, idle;

    qrt_spare_keep(0);
    one_job(&a);
    ck_assert_int_eq(a.value, 2);
    settle(0, &live, &idle);
    ck_assert_int_eq(live, 0);
    ck_assert_int_eq(idle, 0);
    qrt_spare_keep(QRT_SPARE_KEEP);
}
END_TEST

/* The parent's kept thread is not the child's: the child's first job gets a new one. */
START_TEST(a_forked_child_starts_afresh)
{
    job_arg a = { .value = 3 };
    int status, live, idle;
    pid_t pid;

    qrt_spare_keep(QRT_SPARE_KEEP);
    one_job(&a);
    qrt_spare_counts(&live, &idle);
    ck_assert_int_eq(idle, 1);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        job_arg b = { .value = 4 };
        qrt_spare_job job;

        qrt_spare_counts(&live, &idle);
        if (live != 0 || idle != 0 || qrt_spare_start(&job, job_fn, &b) != 0) {
            _exit(1);
        }
        qrt_spare_wait(&job);
        _exit(b.value == 8 ? 0 : 2);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 0);
    one_job(&a);
    ck_assert_int_eq(a.value, 12);
    qrt_spare_end();
}
END_TEST

static Suite *spare_suite(void)
{
    Suite *s = suite_create("qrt_spare");
    TCase *tc = tcase_create("spare");

    tcase_add_test(tc, a_job_runs_on_another_thread_kept_for_the_next);
    tcase_add_test(tc, jobs_at_once_never_queue_and_only_the_kept_stay);
    tcase_add_test(tc, none_kept);
    tcase_add_test(tc, a_forked_child_starts_afresh);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(spare_suite());
}
