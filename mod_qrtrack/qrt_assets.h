/* qrt_assets: files embedded at build time (tools/embed_files.sh writes
 * build/gen/qrt_assets.c from openapi/ and dashboard/): the OpenAPI document
 * and the dashboard's page, script, style and icon. */
#ifndef QRT_ASSETS_H
#define QRT_ASSETS_H

#include <apr.h>

typedef struct {
    const char *name;               /* base name, e.g. "app.js" */
    const char *type;               /* Content-Type */
    const unsigned char *data;      /* the bytes, followed by a NUL */
    apr_size_t len;                 /* without that NUL */
} qrt_asset_t;

/* Every embedded file, ended by a NULL name. */
extern const qrt_asset_t qrt_assets[];

/* The asset of that base name, or NULL. */
const qrt_asset_t *qrt_asset_find(const char *name);

#endif /* QRT_ASSETS_H */
