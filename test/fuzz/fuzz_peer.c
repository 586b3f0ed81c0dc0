/* libFuzzer target for qrt_peer: the first byte picks the format (shlink, yourls, kutt,
 * csv), the rest is the export. Every row read is either refused with a reason and a
 * position, or one that the import may store: a valid code and URL, a name of text
 * within bounds, at most QRT_TAGS_MAX valid tags; positions never go back. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <apr_general.h>
#include <apr_strings.h>
#include "qrt_code.h"
#include "qrt_peer.h"
#include "qrt_store.h"
#include "qrt_valid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int init;
    apr_pool_t *p, *rp;
    qrt_peer_reader_t *r;
    qrt_peer_row_t row;
    long last = 0;
    int rc, i;

    if (!init) {
        apr_initialize();
        init = 1;
    }
    if (size < 1) {
        return 0;
    }
    apr_pool_create(&p, NULL);
    apr_pool_create(&rp, p);
    r = qrt_peer_open_mem(p, (qrt_peer_format_t)(data[0] % 4), (const char *)data + 1,
                          size - 1);
    while ((rc = qrt_peer_next(r, rp, &row)) == 1) {
        if (row.line < 1 || row.line < last) {
            abort();
        }
        last = row.line;
        if (!row.error) {
            if (!qrt_code_custom_valid(row.code) || qrt_valid_redirect_url(row.url)
                || !row.name || !*row.name || strlen(row.name) > QRT_PEER_NAME_MAX
                || qrt_valid_text(row.name, strlen(row.name), 0)
                || row.tags->nelts > QRT_TAGS_MAX) {
                abort();
            }
            for (i = 0; i < row.tags->nelts; i++) {
                if (qrt_valid_tag(APR_ARRAY_IDX(row.tags, i, const char *))) {
                    abort();
                }
            }
        }
        apr_pool_clear(rp);
    }
    if (rc == -1 && !qrt_peer_error(r)) {
        abort();
    }
    apr_pool_destroy(p);
    return 0;
}
