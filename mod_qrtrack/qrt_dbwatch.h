/* qrt_dbwatch: a deadline on each blocking call to a database server.
 *
 * A server that stops answering without closing its connections (its processes frozen,
 * its host gone from the network without a reset) leaves libpq waiting in poll() with no
 * end: the server's own statement_timeout cannot fire, and the TCP stack of a host that
 * is up still acknowledges what is sent. A thread that has a limit (qrt_dbwatch_limit)
 * arms it around each call on a connection's socket; a watchdog thread of the process
 * shuts down the socket of a call past its deadline (shutdown(2)), which ends the wait:
 * libpq sees the connection closed, and the caller the lost connection it already knows
 * how to handle. Threads without a limit (background work that may run long) and
 * processes that never start the watchdog arm nothing. */
#ifndef QRT_DBWATCH_H
#define QRT_DBWATCH_H

/* How much longer than a server-side timeout a call's deadline is: the server
 * cancels a slow statement first, so a deadline passes only when it cannot. */
#define QRT_DBWATCH_MARGIN_MS 5000

/* Starts the process's watchdog (once; later calls do nothing): 0, or an errno. */
int qrt_dbwatch_start(void);
/* Stops it (the slots stay as they are; arming does nothing until a start). */
void qrt_dbwatch_stop(void);
/* The calling thread's limit for one call, in milliseconds; 0: none (the default). */
void qrt_dbwatch_limit(int ms);
int qrt_dbwatch_limit_ms(void);
/* Arms the calling thread's limit on socket fd (>= 0) for a call about to start: a
 * token for qrt_dbwatch_disarm, 0 when nothing was armed (no limit, no watchdog, fd
 * < 0, a call of this thread already armed: the outer call's deadline holds). */
int qrt_dbwatch_arm(int fd);
/* 1 when the calling thread's armed call is past its deadline and its socket was shut
 * down: the server did not answer in time, and a new connection to it (a reset in
 * place) would wait as long again. */
int qrt_dbwatch_cut(void);
/* Ends what token armed: 1 when its deadline passed and the socket was shut down. */
int qrt_dbwatch_disarm(int token);
/* How long the oldest call armed now has waited, in ms (0: none). */
long long qrt_dbwatch_oldest_ms(void);
/* Cuts every armed call that has waited ms or more, as if its deadline had passed (the
 * server was found not to answer: mod_qrtrack_probe.c): how many. */
int qrt_dbwatch_cut_older(int ms);
/* Calls whose deadline passed since the process started (or were cut as above). */
unsigned long qrt_dbwatch_fired(void);

#endif
