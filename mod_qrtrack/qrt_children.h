/* qrt_children: waiting for child processes to end without reaping them.
 *
 * httpd's parent, after a graceful restart has read the configuration again, replaces
 * each child of the previous generation with a new one as it reaps it, but only while
 * it finds one to reap each time it looks: the first time it finds none it sleeps a
 * second, and from then on starts new children one a second (its idle maintenance),
 * so no child accepts anything for one to three seconds. The module's post_config
 * waits here, briefly, for those children to end first (see mod_qrtrack.c). */
#ifndef QRT_CHILDREN_H
#define QRT_CHILDREN_H

#include <sys/types.h>
#include <apr.h>
#include <apr_time.h>

/* Waits until every process of pids (children of this process; n of them) has ended,
 * or until max has passed. The processes are left to be reaped by whoever waits for
 * them (waitid's WNOWAIT). A pid that is not a child of this process counts as ended.
 * Returns how many had not ended. */
int qrt_children_wait_ended(const pid_t *pids, int n, apr_interval_time_t max);

/* A turn that one process at a time takes (the snapshot's keeper among a server's
 * children): *holder is 0 while free, else the pid of the process that holds it. me
 * takes it when it is free, or when its holder has ended (killed in its turn: no one
 * would take it again), or is me (a pid used again). Returns 1 when me holds it;
 * qrt_turn_give frees it. The holder's pid may be a zombie's for as long as its parent
 * has not reaped it. */
int qrt_turn_take(volatile apr_uint32_t *holder, pid_t me);
void qrt_turn_give(volatile apr_uint32_t *holder, pid_t me);

#endif
