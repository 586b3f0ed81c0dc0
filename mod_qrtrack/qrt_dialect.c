/* qrt_dialect: the dialects by driver, and the facts callers ask. See qrt_dialect.h. */
#include <string.h>
#include "qrt_dialect.h"

extern const qrt_dialect_t qrt_dialect_sqlite;
extern const qrt_dialect_t qrt_dialect_pgsql;
const char *qrt_dialect_sqlite_check(void);
const char *qrt_dialect_pgsql_check(void);

static const qrt_dialect_t *const dialects[] = { &qrt_dialect_sqlite, &qrt_dialect_pgsql };

const qrt_dialect_t *qrt_dialect_named(const char *name)
{
    size_t i;

    for (i = 0; name && i < sizeof(dialects) / sizeof(dialects[0]); i++) {
        if (!strcmp(dialects[i]->driver, name)) {
            return dialects[i];
        }
    }
    return NULL;
}

/* apr_dbd loads a driver once per process and hands out the same struct after, so
 * each dialect remembers its driver's address: the hot path asks by pointer, not by
 * comparing names. */
static const apr_dbd_driver_t *dialect_seen[sizeof(dialects) / sizeof(dialects[0])];

const qrt_dialect_t *qrt_dialect_of(const apr_dbd_driver_t *driver)
{
    const qrt_dialect_t *d;
    size_t i;

    if (!driver) {
        return NULL;
    }
    for (i = 0; i < sizeof(dialects) / sizeof(dialects[0]); i++) {
        if (__atomic_load_n(&dialect_seen[i], __ATOMIC_ACQUIRE) == driver) {
            return dialects[i];
        }
    }
    d = qrt_dialect_named(apr_dbd_name(driver));
    for (i = 0; d && i < sizeof(dialects) / sizeof(dialects[0]); i++) {
        if (dialects[i] == d) {
            __atomic_store_n(&dialect_seen[i], driver, __ATOMIC_RELEASE);
        }
    }
    return d;
}

int qrt_dialect_embedded(const apr_dbd_driver_t *driver)
{
    const qrt_dialect_t *d = qrt_dialect_of(driver);

    return d && d->embedded;
}

int qrt_dialect_remote(const apr_dbd_driver_t *driver)
{
    const qrt_dialect_t *d = qrt_dialect_of(driver);

    return d && d->remote;
}

const char *qrt_dialect_self_check(const apr_dbd_driver_t *driver)
{
    const qrt_dialect_t *d = qrt_dialect_of(driver);

    if (!d) {
        return "not a driver mod_qrtrack supports (sqlite3 or pgsql)";
    }
    return d->id == QRT_DIALECT_SQLITE ? qrt_dialect_sqlite_check()
                                       : qrt_dialect_pgsql_check();
}
