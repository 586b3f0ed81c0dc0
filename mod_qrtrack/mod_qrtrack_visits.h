/* mod_qrtrack_visits.c: a tracker's visits: analytics, listing, CSV export. */
#ifndef MOD_QRTRACK_VISITS_H
#define MOD_QRTRACK_VISITS_H

#include "mod_qrtrack_private.h"

qrt_err_t *qrt_tracker_analytics(qrt_req_t *q);
qrt_err_t *qrt_visits_list(qrt_req_t *q);
qrt_err_t *qrt_visits_csv(qrt_req_t *q);

#endif
