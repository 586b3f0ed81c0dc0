/* mod_qrtrack_report: endpoints 6, 7 and 8 (placeholder). */
#include "mod_qrtrack.h"

qrt_err_t *qrt_report_show(qrt_req_t *q)
{
    return qrt_error(q, HTTP_NOT_IMPLEMENTED, "Not implemented yet.");
}

qrt_err_t *qrt_report_crosstab(qrt_req_t *q)
{
    return qrt_error(q, HTTP_NOT_IMPLEMENTED, "Not implemented yet.");
}

qrt_err_t *qrt_dashboard_scans(qrt_req_t *q)
{
    return qrt_error(q, HTTP_NOT_IMPLEMENTED, "Not implemented yet.");
}
