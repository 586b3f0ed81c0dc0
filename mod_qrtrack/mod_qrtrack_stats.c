/* mod_qrtrack_stats: where every glue file finds the server's counters. The scan
 * file makes their shared memory and hands it over here, so that the files that
 * count (rate, wal, scan) do not call one another for it. */
#include <stddef.h>

#include "mod_qrtrack_stats.h"

static qrt_stats_t *stats;

void qrt_stats_attach(qrt_stats_t *st)
{
    stats = st;
}

qrt_stats_t *qrt_stats(void)
{
    return stats;
}
