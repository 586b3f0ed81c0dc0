/* qrt_history: what a tracker's history row says changed (CONTRACT section 7, "Token
 * scopes and history"). */
#ifndef QRT_HISTORY_H
#define QRT_HISTORY_H

#include <apr_pools.h>
#include "qrt_store.h"

/* The JSON object text {"field": [old, new], ...} of every field that differs between
 * before and after: redirect_url, name, tags, rules, valid_from, valid_until, max_scans,
 * expired_url, and password as "***" (or null when there is none) on both sides.
 * before NULL: a tracker made, every field it has set as [null, value].
 * password_sent: the change sent a password (after->password_protected says whether it
 * has one now), recorded even when one replaces another. "{}" when nothing differs. */
const char *qrt_history_changes(apr_pool_t *p, const qrt_tracker_t *before,
                                const qrt_tracker_t *after, int password_sent);

#endif
