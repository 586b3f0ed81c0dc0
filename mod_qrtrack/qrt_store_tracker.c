/* qrt_store_tracker: trackers and their tags. */
#include "qrt_store.h"

const qrt_stmt_t qrt_store_tracker_stmts[] = {
    { NULL, NULL }
};
