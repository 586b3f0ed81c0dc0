/* qrt_visitpack: a visit as bytes in a fixed buffer, and back. */
#ifndef QRT_VISITPACK_H
#define QRT_VISITPACK_H

#include <apr_pools.h>
#include "qrt_store.h"

/* Strings are cut to this many bytes (on a UTF-8 character boundary). */
#define QRT_VISITPACK_STR_MAX   8192
/* ... and to this many when the visit as a whole does not fit. */
#define QRT_VISITPACK_STR_SHORT 255
/* A buffer this large holds any visit (its 12 strings cut short, and a flag). */
#define QRT_VISITPACK_MIN_SIZE  (29 + 12 * (2 + QRT_VISITPACK_STR_SHORT))

/* Writes v into buf; the bytes used, 0 when even the short form does not fit. */
apr_size_t qrt_visit_pack(char *buf, apr_size_t size, const qrt_visit_t *v);

/* Reads a packed visit of len bytes (strings copied into p); -1 when the bytes
 * are not one whole packed visit as qrt_visit_pack writes them (a string longer
 * than QRT_VISITPACK_STR_MAX or with a NUL byte inside included). */
int qrt_visit_unpack(apr_pool_t *p, const char *buf, apr_size_t len, qrt_visit_t *v);
/* The same, also reading the older form, without the cap flag and destinations, that
 * spool files written by earlier versions hold. */
int qrt_visit_unpack_any(apr_pool_t *p, const char *buf, apr_size_t len, qrt_visit_t *v);

#endif /* QRT_VISITPACK_H */
