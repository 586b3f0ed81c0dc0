/* Unit tests of qrt_pages: the visitor's HTML pages and HTML escaping. */
#include <stdlib.h>
#include <string.h>
#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>
#include "qrt_pages.h"
#include "qrt_valid.h"
#include "qrt_check.h"

QRT_CHECK_POOL

#define has(doc, s) ck_assert_msg(strstr(doc, s) != NULL, "missing: %s", s)
#define lacks(doc, s) ck_assert_msg(strstr(doc, s) == NULL, "present: %s", s)

static int count(const char *doc, const char *s)
{
    int n = 0;

    for (doc = strstr(doc, s); doc; doc = strstr(doc + 1, s)) {
        n++;
    }
    return n;
}

/* An attribute on...="..." anywhere (an escaped quote, &quot; or &#39;, is no attribute). */
static int event_handler(const char *doc)
{
    const char *c;

    for (c = strstr(doc, " on"); c; c = strstr(c + 1, " on")) {
        const char *e = c + 3;

        while (*e >= 'a' && *e <= 'z') {
            e++;
        }
        if (e[0] == '=' && e[1] != '&') {
            return 1;
        }
    }
    return 0;
}

/* What every page has: a complete, small, self-contained, accessible document. */
static void common(const char *doc)
{
    static const char *const pairs[][2] = {
        { "<html", "</html>" }, { "<head>", "</head>" }, { "<body>", "</body>" },
        { "<main>", "</main>" }, { "<title>", "</title>" }, { "<h1>", "</h1>" },
        { "<style>", "</style>" }
    };
    apr_size_t i;

    ck_assert_int_eq(strncmp(doc, "<!DOCTYPE html>", 15), 0);
    ck_assert_int_lt(strlen(doc), 2048);
    ck_assert_ptr_null(qrt_valid_text(doc, strlen(doc), 1));
    has(doc, "<html lang=\"en\">");
    has(doc, "<meta charset=\"utf-8\">");
    has(doc, "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    has(doc, ":focus-visible{outline:");
    for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        ck_assert_msg(count(doc, pairs[i][0]) == 1 && count(doc, pairs[i][1]) == 1,
                      "%s ... %s not once each", pairs[i][0], pairs[i][1]);
        ck_assert(strstr(doc, pairs[i][0]) < strstr(doc, pairs[i][1]));
    }
    /* Nothing from elsewhere, no script. */
    lacks(doc, "<script");
    lacks(doc, "src=");
    lacks(doc, "href=");
    lacks(doc, "url(");
    lacks(doc, "@import");
    lacks(doc, "http:");
    lacks(doc, "https:");
    lacks(doc, "javascript:");
    ck_assert_msg(!event_handler(doc), "an event handler attribute");
}

START_TEST(escape)
{
    const char *plain = "/q/abc";

    ck_assert_ptr_eq(qrt_html_escape(pool, plain), plain);
    ck_assert_str_eq(qrt_html_escape(pool, NULL), "");
    ck_assert_str_eq(qrt_html_escape(pool, ""), "");
    ck_assert_str_eq(qrt_html_escape(pool, "a&b<c>d\"e'f"),
                     "a&amp;b&lt;c&gt;d&quot;e&#39;f");
    ck_assert_str_eq(qrt_html_escape(pool, "&&"), "&amp;&amp;");
    ck_assert_str_eq(qrt_html_escape(pool, "&amp;"), "&amp;amp;");
    ck_assert_str_eq(qrt_html_escape(pool, "\xc3\xa4<"), "\xc3\xa4&lt;");
    ck_assert_str_eq(qrt_html_escape(pool, "'\"'"), "&#39;&quot;&#39;");
}
END_TEST

START_TEST(password_form)
{
    const char *doc = qrt_page_password(pool, "/q/abc", 0, NULL);

    common(doc);
    has(doc, "<title>Password required</title>");
    has(doc, "<form method=\"post\" action=\"/q/abc\">");
    has(doc, "<label for=\"password\">Password</label>");
    has(doc, "<input id=\"password\" name=\"password\" type=\"password\" "
             "autocomplete=\"current-password\" required>");
    has(doc, "<button type=\"submit\">");
    ck_assert_int_eq(count(doc, "<form"), 1);
    ck_assert_int_eq(count(doc, "</form>"), 1);
    ck_assert_int_eq(count(doc, "<input"), 1);
    lacks(doc, "hidden");
    lacks(doc, "role=\"alert\"");
    lacks(doc, QRT_PAGE_WRONG_PASSWORD);
    lacks(doc, "aria-invalid");
}
END_TEST

START_TEST(password_form_wrong)
{
    const char *doc = qrt_page_password(pool, "/q/abc", 1, NULL);

    common(doc);
    has(doc, "<p id=\"error\" class=\"error\" role=\"alert\">Wrong password. Try again.</p>");
    has(doc, "aria-invalid=\"true\" aria-describedby=\"error\"");
    has(doc, "<form method=\"post\" action=\"/q/abc\">");
    ck_assert_int_eq(count(doc, "role=\"alert\""), 1);
    /* The message is shown before the form. */
    ck_assert(strstr(doc, "role=\"alert\"") < strstr(doc, "<form"));
}
END_TEST

START_TEST(password_form_escapes_action)
{
    const char *doc = qrt_page_password(pool, "/q/a\"><script>alert('x')</script>&b", 1, NULL);

    common(doc);
    has(doc, "action=\"/q/a&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;b\"");
    ck_assert_int_eq(count(doc, "<form"), 1);

    doc = qrt_page_password(pool, "/q/x' onfocus='y", 0, NULL);
    common(doc);
    has(doc, "action=\"/q/x&#39; onfocus=&#39;y\"");
}
END_TEST

START_TEST(password_form_refuses_other_hosts)
{
    static const char *const other[] = {
        "//evil.example/q/abc", "/\\evil.example/q/abc", "https://evil.example/",
        "javascript:alert(1)", "q/abc", "", NULL
    };
    int i;

    for (i = 0; other[i]; i++) {
        const char *doc = qrt_page_password(pool, other[i], i % 2, NULL);

        common(doc);
        has(doc, "<form method=\"post\">");
        lacks(doc, "action=");
        lacks(doc, "evil");
    }
    common(qrt_page_password(pool, NULL, 0, NULL));
    has(qrt_page_password(pool, NULL, 0, NULL), "<form method=\"post\">");
}
END_TEST

/* doc without its hidden field hidden (a line of its own), which must be there. */
static const char *without(const char *doc, const char *hidden)
{
    const char *at = strstr(doc, hidden);

    ck_assert_msg(at != NULL, "missing: %s", hidden);
    return apr_pstrcat(pool, apr_pstrndup(pool, doc, (apr_size_t)(at - doc)),
                       at + strlen(hidden), NULL);
}

/* The page that sent the visitor goes with the form, escaped, on the first page and on
 * the page of a wrong password: the page is the one without a referer and that field.
 * None (NULL or "") adds no field. */
START_TEST(password_form_carries_the_referer)
{
    const char *doc = qrt_page_password(pool, "/q/abc", 0, "https://news.example/a?b=1&c=\"x\"");

    ck_assert_str_eq(without(doc, "<input type=\"hidden\" name=\"referer\" value=\""
                                  "https://news.example/a?b=1&amp;c=&quot;x&quot;\">\n"),
                     qrt_page_password(pool, "/q/abc", 0, NULL));
    has(doc, "<form method=\"post\" action=\"/q/abc\">\n<input type=\"hidden\"");
    doc = qrt_page_password(pool, "/q/abc", 1, "\"><script>alert(1)</script>");
    ck_assert_str_eq(without(doc, "<input type=\"hidden\" name=\"referer\" value=\""
                                  "&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;\">\n"),
                     qrt_page_password(pool, "/q/abc", 1, NULL));
    lacks(doc, "<script");
    ck_assert_str_eq(qrt_page_password(pool, "/q/abc", 0, ""),
                     qrt_page_password(pool, "/q/abc", 0, NULL));
}
END_TEST

START_TEST(too_many)
{
    const char *doc = qrt_page_too_many(pool);

    common(doc);
    has(doc, "<title>Too many tries</title>");
    has(doc, "about a minute");
    lacks(doc, "<form");
}
END_TEST

START_TEST(expired)
{
    const char *doc = qrt_page_expired(pool);

    common(doc);
    has(doc, "<h1>This code is no longer active.</h1>");
    lacks(doc, "<form");
}
END_TEST

static Suite *pages_suite(void)
{
    Suite *s = suite_create("qrt_pages");
    TCase *tc = tcase_create("pages");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, escape);
    tcase_add_test(tc, password_form);
    tcase_add_test(tc, password_form_wrong);
    tcase_add_test(tc, password_form_escapes_action);
    tcase_add_test(tc, password_form_refuses_other_hosts);
    tcase_add_test(tc, password_form_carries_the_referer);
    tcase_add_test(tc, too_many);
    tcase_add_test(tc, expired);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(pages_suite());
}
