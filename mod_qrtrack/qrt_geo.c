/* qrt_geo: libmaxminddb lookups. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
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

int qrt_geo_copy(apr_pool_t *p, const char *path, const char **err)
{
    char buf[65536];
    int in, fd;
    ssize_t n = 0;

    if ((in = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        *err = apr_psprintf(p, "cannot open it: %s", strerror(errno));
        return -1;
    }
    fd = memfd_create("qrtrack-geoip", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    while (fd >= 0 && (n = read(in, buf, sizeof(buf))) > 0) {
        ssize_t off = 0, w;

        while (off < n && (w = write(fd, buf + off, (size_t)(n - off))) > 0) {
            off += w;
        }
        if (off < n) {
            n = -1;
            break;
        }
    }
    if (fd < 0 || n < 0) {
        *err = apr_psprintf(p, "cannot copy it into memory: %s", strerror(errno));
        close(in);
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    close(in);
    /* (the copy can change no more: nothing may write, grow or shrink it) */
    fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
    return fd;
}

qrt_geo_t *qrt_geo_open_copy(apr_pool_t *p, int fd, const char *path, const char **err)
{
    qrt_geo_t *g = apr_pcalloc(p, sizeof(*g));
    int rc;

    /* libmaxminddb opens a file by its name: the copy's, through /proc (the mapping
     * keeps the copy once its descriptors are closed); the file itself where /proc is
     * not mounted. */
    rc = MMDB_open(apr_psprintf(p, "/proc/self/fd/%d", fd), MMDB_MODE_MMAP, &g->mmdb);
    if (rc == MMDB_FILE_OPEN_ERROR && path) {
        rc = MMDB_open(path, MMDB_MODE_MMAP, &g->mmdb);
    }
    if (rc != MMDB_SUCCESS) {
        *err = apr_pstrdup(p, MMDB_strerror(rc));
        return NULL;
    }
    apr_pool_cleanup_register(p, g, geo_close, apr_pool_cleanup_null);
    return g;
}

qrt_geo_t *qrt_geo_open(apr_pool_t *p, const char *path, const char **err)
{
    int fd = qrt_geo_copy(p, path, err);
    qrt_geo_t *g;

    if (fd < 0) {
        return NULL;
    }
    g = qrt_geo_open_copy(p, fd, path, err);
    close(fd);
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
