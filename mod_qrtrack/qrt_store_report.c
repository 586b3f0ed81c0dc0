/* qrt_store_report: report aggregates (placeholder until the reports land). */
#include "qrt_store.h"

const qrt_stmt_t qrt_store_report_stmts[] = {
    { NULL, NULL }
};

apr_status_t qrt_store_agg_record(qrt_db_t *db, apr_pool_t *p, const qrt_visit_t *v,
                                  const int *is_new, int n)
{
    (void)db; (void)p; (void)v; (void)is_new; (void)n;
    return APR_SUCCESS;
}

apr_status_t qrt_store_agg_rebuild(qrt_db_t *db, apr_pool_t *p)
{
    (void)db; (void)p;
    return APR_SUCCESS;
}
