/* qrt_store_agg_rebuild: every report aggregate recomputed from the visits
 * (qrt_store_agg_rebuild.c). */
#ifndef QRT_STORE_AGG_REBUILD_H
#define QRT_STORE_AGG_REBUILD_H

#include "qrt_store.h"

/* Recomputes every report aggregate from the visits table (after a bulk load), in
 * its own transactions. */
apr_status_t qrt_store_agg_rebuild(qrt_db_t *db, apr_pool_t *p);

#endif
