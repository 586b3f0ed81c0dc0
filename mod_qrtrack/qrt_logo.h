/* mod_qrtrack core: a style's logo (CONTRACT section 7, "Print-grade images").
 *
 * A logo comes from the network: at most QRT_LOGO_MAX_BYTES of PNG whose header
 * (IHDR) is read before anything is decoded, so a small file that claims huge
 * dimensions is refused at once. What is kept is the pixels only: decoded to RGBA
 * and written again as a plain PNG, without text, colour profiles or any other
 * chunk of the original. No httpd header here.
 */
#ifndef QRT_LOGO_H
#define QRT_LOGO_H

#include "apr.h"
#include "apr_errno.h"
#include "apr_pools.h"

#define QRT_LOGO_MAX_BYTES  (256 * 1024)
#define QRT_LOGO_MAX_DIM    1024

/* Width and height from the PNG signature and IHDR of buf, without decoding: APR_SUCCESS;
 * APR_EINVAL with *err when buf is no PNG or its dimensions are 0 or above
 * QRT_LOGO_MAX_DIM. */
apr_status_t qrt_logo_header(const unsigned char *buf, apr_size_t len, int *width,
                             int *height, const char **err);

/* Decodes a PNG of at most QRT_LOGO_MAX_BYTES into straight-alpha RGBA, 8 bits a channel,
 * rows top to bottom (*rgba, width * height * 4 bytes in p). APR_SUCCESS, or APR_EINVAL
 * with *err (too large, no PNG, dimensions, a broken stream); APR_ENOMEM. */
apr_status_t qrt_logo_decode(apr_pool_t *p, const unsigned char *buf, apr_size_t len,
                             int *width, int *height, const unsigned char **rgba,
                             const char **err);

/* What a logo upload is stored as: buf decoded (qrt_logo_decode) and written again as an
 * RGBA PNG (*png, *png_len in p) that holds only IHDR, IDAT and IEND. */
apr_status_t qrt_logo_sanitise(apr_pool_t *p, const unsigned char *buf, apr_size_t len,
                               const unsigned char **png, apr_size_t *png_len,
                               int *width, int *height, const char **err);

#endif /* QRT_LOGO_H */
