/* qrt_geo: libmaxminddb lookups. */
#include <apr_strings.h>
#include <maxminddb.h>
#include "qrt_geo.h"

struct qrt_geo_t {
    MMDB_s mmdb;
};

static apr_status_t geo_close(void *data)
{
    MMDB_close(&((qrt_geo_t *)data)->mmdb);
    return APR_SUCCESS;
}

qrt_geo_t *qrt_geo_open(apr_pool_t *p, const char *path, const char **err)
{
    qrt_geo_t *g = apr_pcalloc(p, sizeof(*g));
    int rc = MMDB_open(path, MMDB_MODE_MMAP, &g->mmdb);

    if (rc != MMDB_SUCCESS) {
        *err = apr_pstrdup(p, MMDB_strerror(rc));
        return NULL;
    }
    apr_pool_cleanup_register(p, g, geo_close, apr_pool_cleanup_null);
    return g;
}

static const char *geo_string(apr_pool_t *p, MMDB_entry_s *entry, const char *const *path)
{
    MMDB_entry_data_s d;

    if (MMDB_aget_value(entry, &d, path) != MMDB_SUCCESS || !d.has_data
        || d.type != MMDB_DATA_TYPE_UTF8_STRING || d.data_size == 0) {
        return NULL;
    }
    return apr_pstrndup(p, d.utf8_string, d.data_size);
}

void qrt_geo_lookup(qrt_geo_t *g, apr_pool_t *p, const char *ip, const char **country,
                    const char **city)
{
    static const char *const country_path[] = { "country", "iso_code", NULL };
    static const char *const city_path[] = { "city", "names", "en", NULL };
    MMDB_lookup_result_s res;
    int gai_error = 0, mmdb_error = MMDB_SUCCESS;

    *country = *city = NULL;
    if (!g || !ip) {
        return;
    }
    res = MMDB_lookup_string(&g->mmdb, ip, &gai_error, &mmdb_error);
    if (gai_error != 0 || mmdb_error != MMDB_SUCCESS || !res.found_entry) {
        return;
    }
    *country = geo_string(p, &res.entry, country_path);
    *city = geo_string(p, &res.entry, city_path);
}
