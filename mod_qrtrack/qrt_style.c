/* mod_qrtrack core: named image styles' rules (qrt_style.h). */
#include <string.h>
#include <apr_strings.h>

#include "qrt_style.h"
#include "qrt_render.h"


int qrt_style_name_valid(const char *name)
{
    apr_size_t n = name ? strlen(name) : 0;

    return n >= 1 && n <= QRT_STYLE_NAME_MAX
           && strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                           "0123456789_-") == n;
}

const char *qrt_style_colours_check(apr_pool_t *p, unsigned fg, unsigned bg)
{
    double ratio = qrt_contrast_ratio(fg, bg);

    if (qrt_luminance(fg) >= qrt_luminance(bg)) {
        return "fg must be darker than bg (scanners need dark modules on a light "
               "background)";
    }
    if (ratio < QRT_STYLE_CONTRAST_MIN) {
        return apr_psprintf(p, "the contrast of fg on bg is %.2f, below 4.5 (WCAG)",
                            (int)(ratio * 100) / 100.0);
    }
    return NULL;
}
