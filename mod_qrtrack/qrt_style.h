/* mod_qrtrack core: named image styles (CONTRACT section 7, "Print-grade images"):
 * what a style is, its name and colour rules. The store functions are in
 * qrt_store_style.h, the logo in qrt_logo.h. No httpd header here. */
#ifndef QRT_STYLE_H
#define QRT_STYLE_H

#include "apr.h"
#include "apr_pools.h"

#define QRT_STYLE_NAME_MAX   64
#define QRT_STYLE_PER_ACCOUNT 100
#define QRT_STYLE_DEFAULT    "default"
/* WCAG's contrast ratio a style's colours need at least. */
#define QRT_STYLE_CONTRAST_MIN 4.5

typedef struct {
    const char *name;
    const char *fg, *bg;        /* "#RRGGBB", upper case */
    char ecc;                   /* 'L', 'M', 'Q', 'H' ('H' with a logo) */
    int margin;                 /* modules */
    const unsigned char *logo;  /* the sanitised PNG (qrt_logo_sanitise), or NULL */
    apr_size_t logo_len;
    int logo_width, logo_height;
    apr_int64_t created_at, updated_at;   /* epoch seconds */
    apr_int64_t version;        /* the installation's count of style writes at its last:
                                 * never the same for two writes (children's caches) */
} qrt_style_t;

/* 1 when name is [A-Za-z0-9_-]{1,64}. */
int qrt_style_name_valid(const char *name);

/* NULL when fg on bg scans well (contrast at least QRT_STYLE_CONTRAST_MIN and fg the
 * darker), else why not, in p. */
const char *qrt_style_colours_check(apr_pool_t *p, unsigned fg, unsigned bg);

#endif /* QRT_STYLE_H */
