/* qrt_tries: wrong password tries per client address and tracker, in a fixed-size table.
 *
 * The glue puts the table in shared memory (every child of a server sees it) and
 * holds one global mutex around every call: nothing here locks or allocates. An
 * entry is keyed by the address text (the first QRT_TRIES_ADDR - 1 bytes) and the
 * tracker id, and keeps the times of its latest QRT_TRIES_MAX_LIMIT wrong tries, so
 * "blocked" is exact over a sliding window: the limit-th latest try lies within the
 * window. Times are in seconds (now, window); a try more than a window in the future
 * (the clock stepped back) no longer counts.
 *
 * A key lives in one of a few dozen neighbouring slots chosen by a hash seeded at
 * init (qrt_tries_init draws the seed), so no one can aim keys at a neighbourhood.
 * A new key takes, in order: a free slot or one whose tries have all left the
 * window; else the slot of the live entry with the fewest tries in the window
 * (the oldest latest try on a tie), unless that entry is blocked (holds at least
 * the limit of the latest qrt_tries_blocked call). When every entry near the key
 * is blocked the try is not recorded (qrt_tries_dropped counts it): filling the
 * table never unblocks an address before its window has passed. As keys cannot be
 * aimed, a neighbourhood full of blocked entries takes blocked entries in most of
 * the table, `limit` wrong tries (each a password verify) per slot per window: size
 * the table so that slots * limit is well above the verifies the server's cores can
 * do in one window.
 */
#ifndef QRT_TRIES_H
#define QRT_TRIES_H

#include <apr.h>

/* Tries kept per entry: the largest limit honoured (a larger limit counts as this). */
#define QRT_TRIES_MAX_LIMIT 16
/* Bytes kept of an address, its NUL included (an IPv6 text with a zone fits). */
#define QRT_TRIES_ADDR      64

typedef struct qrt_tries qrt_tries_t;

/* Bytes for a table of slots entries (slots >= 1). */
apr_size_t qrt_tries_size(apr_uint32_t slots);
/* Clears and sets up the table; t points at qrt_tries_size(slots) bytes, 8-aligned. */
void qrt_tries_init(qrt_tries_t *t, apr_uint32_t slots);

/* Key: the client address text and the tracker id. Returns 1 when this address is
 * blocked for that tracker now (>= limit wrong tries within window seconds), else 0.
 * limit is taken within 1..QRT_TRIES_MAX_LIMIT, window at least 1. */
int qrt_tries_blocked(qrt_tries_t *t, const char *addr, apr_int64_t tracker, apr_int64_t now,
                      int limit, int window);

/* Records one wrong try at now (see above for a full table). */
void qrt_tries_fail(qrt_tries_t *t, const char *addr, apr_int64_t tracker, apr_int64_t now,
                    int window);

/* A try that begins: 1 when the key is blocked (as qrt_tries_blocked: nothing is
 * recorded), else 0 with the try recorded as wrong at now, before its password is
 * checked. Tries checked at once then count each other: a burst of guesses gets no more
 * checks than the limit. A try whose password was right takes its try back
 * (qrt_tries_forgive). */
int qrt_tries_begin(qrt_tries_t *t, const char *addr, apr_int64_t tracker, apr_int64_t now,
                    int limit, int window);
/* Takes back the latest try of the key recorded at `at` (a try begun at `at` whose
 * password was right, or that checked no password); nothing when there is none. */
void qrt_tries_forgive(qrt_tries_t *t, const char *addr, apr_int64_t tracker,
                       apr_int64_t at);

/* Entries holding a try within window at now (for status and tests). */
apr_uint32_t qrt_tries_active(const qrt_tries_t *t, apr_int64_t now, int window);
/* Wrong tries not recorded because every entry near their key was blocked. */
apr_uint64_t qrt_tries_dropped(const qrt_tries_t *t);

#endif /* QRT_TRIES_H */
