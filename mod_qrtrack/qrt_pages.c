/* qrt_pages: the visitor-facing HTML pages of the password gate and of expired codes. */
#include <string.h>
#include <apr_strings.h>
#include "qrt_pages.h"

/* Shared by every page. Text #1a1a1a, errors #b91c1c, the button's white on #1d4ed8
 * and the field's border #52525b all keep WCAG AA contrast on white. */
static const char page_style[] =
    "<style>"
    "body{margin:0;padding:1rem;background:#f4f4f5;color:#1a1a1a;"
    "font:1rem/1.5 system-ui,-apple-system,\"Segoe UI\",Roboto,sans-serif}"
    "main{max-width:24rem;margin:8vh auto;padding:1.5rem;background:#fff;"
    "border-radius:.5rem;box-shadow:0 1px 3px rgba(0,0,0,.2)}"
    "h1{font-size:1.375rem;line-height:1.3;margin:0 0 .75rem}"
    "p{margin:0 0 1rem}"
    "label{display:block;font-weight:600;margin-bottom:.25rem}"
    "input{box-sizing:border-box;width:100%;font:inherit;padding:.625rem;color:inherit;"
    "background:#fff;border:2px solid #52525b;border-radius:.375rem}"
    "button{box-sizing:border-box;width:100%;margin-top:1rem;font:inherit;font-weight:600;"
    "padding:.625rem;color:#fff;background:#1d4ed8;border:0;border-radius:.375rem;"
    "cursor:pointer}"
    "button:hover{background:#1e40af}"
    ":focus-visible{outline:3px solid #1d4ed8;outline-offset:2px}"
    ".error{color:#b91c1c;font-weight:600}"
    "main>:last-child{margin-bottom:0}"
    "</style>";

static const char *page(apr_pool_t *p, const char *title, const char *body)
{
    return apr_pstrcat(p,
                       "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
                       "<meta charset=\"utf-8\">\n"
                       "<meta name=\"viewport\" content=\"width=device-width, "
                       "initial-scale=1\">\n"
                       "<meta name=\"robots\" content=\"noindex\">\n"
                       "<title>", title, "</title>\n", page_style, "\n</head>\n<body>\n"
                       "<main>\n", body, "</main>\n</body>\n</html>\n", NULL);
}

const char *qrt_html_escape(apr_pool_t *p, const char *s)
{
    apr_size_t extra = 0, n;
    const char *c;
    char *out, *o;

    if (!s) {
        return "";
    }
    for (c = s; *c; c++) {
        switch (*c) {
        case '&': extra += 4; break;
        case '<': case '>': extra += 3; break;
        case '"': case '\'': extra += 4; break;
        default: break;
        }
    }
    if (!extra) {
        return s;
    }
    n = (apr_size_t)(c - s);
    o = out = apr_palloc(p, n + extra + 1);
    for (c = s; *c; c++) {
        const char *e = NULL;

        switch (*c) {
        case '&': e = "&amp;"; break;
        case '<': e = "&lt;"; break;
        case '>': e = "&gt;"; break;
        case '"': e = "&quot;"; break;
        case '\'': e = "&#39;"; break;
        default: *o++ = *c; continue;
        }
        memcpy(o, e, strlen(e));
        o += strlen(e);
    }
    *o = '\0';
    return out;
}

/* A path of this site: one '/' then not another '/' or '\' (which browsers read as a
 * scheme-relative URL to another host). */
static int same_site_path(const char *action)
{
    return action && action[0] == '/' && action[1] != '/' && action[1] != '\\';
}

const char *qrt_page_password(apr_pool_t *p, const char *action, int wrong,
                              const char *referer)
{
    const char *act = same_site_path(action)
        ? apr_pstrcat(p, " action=\"", qrt_html_escape(p, action), "\"", NULL) : "";
    /* (the page that sent the visitor, carried to the visit the form records: the POST's
     * own Referer would name this page, and its Referrer-Policy sends none) */
    const char *from = referer && *referer
        ? apr_pstrcat(p, "<input type=\"hidden\" name=\"referer\" value=\"",
                      qrt_html_escape(p, referer), "\">\n", NULL) : "";

    return page(p, "Password required", apr_pstrcat(p,
        "<h1>This code is protected</h1>\n"
        "<p>Enter the password to continue.</p>\n",
        wrong ? "<p id=\"error\" class=\"error\" role=\"alert\">"
                QRT_PAGE_WRONG_PASSWORD "</p>\n" : "",
        "<form method=\"post\"", act, ">\n", from,
        "<label for=\"password\">Password</label>\n"
        "<input id=\"password\" name=\"password\" type=\"password\" "
        "autocomplete=\"current-password\" required",
        wrong ? " aria-invalid=\"true\" aria-describedby=\"error\"" : "", ">\n"
        "<button type=\"submit\">Continue</button>\n"
        "</form>\n", NULL));
}

const char *qrt_page_too_many(apr_pool_t *p)
{
    return page(p, "Too many tries",
                "<h1>Too many tries</h1>\n"
                "<p>Too many wrong passwords were entered from your network.</p>\n"
                "<p>Please wait about a minute, then try again.</p>\n");
}

const char *qrt_page_expired(apr_pool_t *p)
{
    return page(p, "Code no longer active",
                "<h1>This code is no longer active.</h1>\n"
                "<p>The link behind this QR code has expired or is no longer "
                "available.</p>\n");
}
