/* mod_qrtrack_probe.c: a thread of each child that asks the database server whether it
 * answers when one of the child's calls has waited a second, and leaves the database at
 * once when it does not (a server whose processes are frozen). */
#ifndef MOD_QRTRACK_PROBE_H
#define MOD_QRTRACK_PROBE_H

#include "mod_qrtrack_private.h"

void qrt_probe_child_init(apr_pool_t *pchild, server_rec *s);

#endif
