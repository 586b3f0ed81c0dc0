/* qrt_pages: the small HTML pages a visitor of a scan URL sees (password form, too many
 * tries, expired code).
 *
 * Each is a complete UTF-8 document (the glue sends it as text/html; charset=utf-8)
 * with a small inline <style> and nothing else: no external resource, no JavaScript,
 * no hidden field. lang="en", a <title>, one <main> and <h1>, a viewport for phones,
 * colours of at least 4.5:1 contrast and a visible focus ring. Every interpolated
 * string is HTML-escaped. Results are allocated in p.
 */
#ifndef QRT_PAGES_H
#define QRT_PAGES_H

#include <apr_pools.h>

/* The message of a wrong password on the form. */
#define QRT_PAGE_WRONG_PASSWORD "Wrong password. Try again."

/* The password form: method="post" of the field "password" to action (the scan URL's
 * path as requested, still percent-encoded; escaped here). An action that is not a
 * path of this site (not starting with one '/', e.g. "//host/..." or "/\host") is
 * left out, so the form posts back to the page's own URL. wrong=1 adds a visible
 * error QRT_PAGE_WRONG_PASSWORD with role="alert", tied to the field. A referer (NULL
 * or "" for none) goes with the form as the hidden field "referer" (escaped), so that
 * the visit the form records keeps the page that sent the visitor. */
const char *qrt_page_password(apr_pool_t *p, const char *action, int wrong,
                              const char *referer);

/* The 429 page after too many wrong tries (says to wait about a minute). */
const char *qrt_page_too_many(apr_pool_t *p);

/* The 410 page of an expired code ("This code is no longer active."). */
const char *qrt_page_expired(apr_pool_t *p);

/* s with & < > " ' replaced by entities (&amp; &lt; &gt; &quot; &#39;), for text and
 * attribute values: s itself when it has none, else a copy in p; "" for NULL. */
const char *qrt_html_escape(apr_pool_t *p, const char *s);

#endif /* QRT_PAGES_H */
