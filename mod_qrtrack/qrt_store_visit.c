/* qrt_store_visit: visits, counters and aggregates. */
#include "qrt_store.h"

const qrt_stmt_t qrt_store_visit_stmts[] = {
    { NULL, NULL }
};
