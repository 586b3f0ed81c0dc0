/* Unit tests for qrt_valid. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <apr_general.h>
#include <apr_strings.h>

#include "qrt_valid.h"
#include "qrt_check.h"

QRT_CHECK_POOL

static apr_size_t utf8(const char *s, apr_size_t len, long *cp)
{
    return qrt_valid_utf8_char((const unsigned char *)s, len, cp);
}

START_TEST(utf8_chars)
{
    long cp;

    ck_assert_uint_eq(utf8("A", 1, &cp), 1);
    ck_assert_int_eq(cp, 'A');
    ck_assert_uint_eq(utf8("\0", 1, &cp), 1);
    ck_assert_int_eq(cp, 0);
    ck_assert_uint_eq(utf8("\xC2\x80", 2, &cp), 2);
    ck_assert_int_eq(cp, 0x80);
    ck_assert_uint_eq(utf8("\xC3\xA9", 2, &cp), 2);
    ck_assert_int_eq(cp, 0xE9);
    ck_assert_uint_eq(utf8("\xDF\xBF", 2, &cp), 2);
    ck_assert_int_eq(cp, 0x7FF);
    ck_assert_uint_eq(utf8("\xE0\xA0\x80", 3, &cp), 3);
    ck_assert_int_eq(cp, 0x800);
    ck_assert_uint_eq(utf8("\xED\x9F\xBF", 3, &cp), 3);
    ck_assert_int_eq(cp, 0xD7FF);
    ck_assert_uint_eq(utf8("\xEE\x80\x80", 3, &cp), 3);
    ck_assert_int_eq(cp, 0xE000);
    ck_assert_uint_eq(utf8("\xEF\xBF\xBD", 3, &cp), 3);
    ck_assert_int_eq(cp, 0xFFFD);
    ck_assert_uint_eq(utf8("\xF0\x90\x80\x80", 4, &cp), 4);
    ck_assert_int_eq(cp, 0x10000);
    ck_assert_uint_eq(utf8("\xF0\x9F\x98\x80", 4, &cp), 4);
    ck_assert_int_eq(cp, 0x1F600);
    ck_assert_uint_eq(utf8("\xF4\x8F\xBF\xBF", 4, &cp), 4);
    ck_assert_int_eq(cp, 0x10FFFF);

    /* ill-formed: length of the maximal subpart */
    ck_assert_uint_eq(utf8("\x80", 1, &cp), 1);
    ck_assert_int_eq(cp, -1);
    ck_assert_uint_eq(utf8("\xBF", 1, &cp), 1);
    ck_assert_uint_eq(utf8("\xC0\x80", 2, &cp), 1);     /* overlong */
    ck_assert_int_eq(cp, -1);
    ck_assert_uint_eq(utf8("\xC1\xBF", 2, &cp), 1);
    ck_assert_uint_eq(utf8("\xE0\x80\x80", 3, &cp), 1); /* overlong */
    ck_assert_uint_eq(utf8("\xE0\x9F\xBF", 3, &cp), 1);
    ck_assert_uint_eq(utf8("\xED\xA0\x80", 3, &cp), 1); /* surrogate */
    ck_assert_uint_eq(utf8("\xED\xBF\xBF", 3, &cp), 1);
    ck_assert_uint_eq(utf8("\xF0\x80\x80\x80", 4, &cp), 1);
    ck_assert_uint_eq(utf8("\xF0\x8F\xBF\xBF", 4, &cp), 1);
    ck_assert_uint_eq(utf8("\xF4\x90\x80\x80", 4, &cp), 1); /* > 10FFFF */
    ck_assert_uint_eq(utf8("\xF5\x80\x80\x80", 4, &cp), 1);
    ck_assert_uint_eq(utf8("\xFE", 1, &cp), 1);
    ck_assert_uint_eq(utf8("\xFF", 1, &cp), 1);
    /* truncated sequences */
    ck_assert_uint_eq(utf8("\xC3", 1, &cp), 1);
    ck_assert_int_eq(cp, -1);
    ck_assert_uint_eq(utf8("\xE2\x82", 2, &cp), 2);
    ck_assert_int_eq(cp, -1);
    ck_assert_uint_eq(utf8("\xF0\x9F\x98", 3, &cp), 3);
    ck_assert_int_eq(cp, -1);
    ck_assert_uint_eq(utf8("\xF0\x9F\x98\x80", 3, &cp), 3);  /* avail */
    ck_assert_int_eq(cp, -1);
    ck_assert_uint_eq(utf8("\xC3" "A", 2, &cp), 1);
    ck_assert_uint_eq(utf8("\xE2\x82" "A", 3, &cp), 2);
    ck_assert_uint_eq(utf8("\xF0\x9F\x98" "A", 4, &cp), 3);
    /* nothing to read */
    ck_assert_uint_eq(utf8("", 0, &cp), 0);
    ck_assert_int_eq(cp, -1);
    ck_assert_uint_eq(qrt_valid_utf8_char(NULL, 4, &cp), 0);
    ck_assert_uint_eq(utf8("A", 1, NULL), 1);
}
END_TEST

/* Every byte value as a lead, with every continuation: the decoder agrees
 * with a straightforward reference definition of well-formed UTF-8. */
START_TEST(utf8_exhaustive_two_bytes)
{
    int a, b;

    for (a = 0; a < 256; a++) {
        for (b = 0; b < 256; b++) {
            unsigned char s[2] = { (unsigned char)a, (unsigned char)b };
            long cp;
            apr_size_t n = qrt_valid_utf8_char(s, 2, &cp);

            if (a < 0x80) {
                ck_assert(n == 1 && cp == a);
            }
            else if (a >= 0xC2 && a <= 0xDF && b >= 0x80 && b <= 0xBF) {
                ck_assert(n == 2 && cp == (((a & 0x1F) << 6) | (b & 0x3F)));
            }
            else {
                ck_assert(cp == -1);
                ck_assert(n >= 1 && n <= 2);
            }
        }
    }
}
END_TEST

START_TEST(blank)
{
    ck_assert(qrt_valid_blank("", 0));
    ck_assert(qrt_valid_blank("   ", 3));
    ck_assert(qrt_valid_blank("\xe2\x80\x8b", 3));              /* zero-width space */
    ck_assert(qrt_valid_blank(" \xc2\xa0\xe3\x80\x80\xef\xbb\xbf", 9));
    ck_assert(!qrt_valid_blank("  a ", 4));
    ck_assert(!qrt_valid_blank(" \xc3\xbc", 3));                 /* u umlaut */
    ck_assert(!qrt_valid_blank("\xff", 1));                       /* not UTF-8 */
}
END_TEST

START_TEST(text)
{
    ck_assert_ptr_null(qrt_valid_text("hello", 5, 0));
    ck_assert_ptr_null(qrt_valid_text("", 0, 0));
    ck_assert_ptr_null(qrt_valid_text("tab\there", 8, 0));
    ck_assert_ptr_null(qrt_valid_text("Zürich 東京 😀", strlen("Zürich 東京 😀"),
                                      0));
    ck_assert_ptr_nonnull(qrt_valid_text(NULL, 0, 0));
    /* NUL inside the given length */
    ck_assert_ptr_nonnull(qrt_valid_text("ab\0cd", 5, 0));
    ck_assert_ptr_nonnull(qrt_valid_text("ab\0cd", 5, 1));
    ck_assert_ptr_null(qrt_valid_text("ab\0cd", 2, 0));
    ck_assert_ptr_nonnull(qrt_valid_text("\0", 1, 0));
    /* newlines only when allowed */
    ck_assert_ptr_nonnull(qrt_valid_text("a\nb", 3, 0));
    ck_assert_ptr_nonnull(qrt_valid_text("a\rb", 3, 0));
    ck_assert_ptr_null(qrt_valid_text("a\r\nb", 4, 1));
    /* other C0 and DEL */
    ck_assert_ptr_nonnull(qrt_valid_text("a\x01", 2, 1));
    ck_assert_ptr_nonnull(qrt_valid_text("a\x1b[31m", 6, 1));
    ck_assert_ptr_nonnull(qrt_valid_text("a\x1f", 2, 1));
    ck_assert_ptr_nonnull(qrt_valid_text("a\x7f", 2, 1));
    ck_assert_ptr_nonnull(qrt_valid_text("\x0b", 1, 1));
    ck_assert_ptr_nonnull(qrt_valid_text("\x0c", 1, 1));
    /* invalid UTF-8 */
    ck_assert_ptr_nonnull(qrt_valid_text("\xff", 1, 0));
    ck_assert_ptr_nonnull(qrt_valid_text("a\xC3", 2, 0));
    ck_assert_ptr_null(qrt_valid_text("a\xC3\xA9", 3, 0));
    ck_assert_ptr_nonnull(qrt_valid_text("a\xC3\xA9", 2, 0));
    ck_assert_ptr_nonnull(qrt_valid_text("\xED\xA0\x80", 3, 0));
    ck_assert_ptr_nonnull(qrt_valid_text("\xC0\xAF", 2, 0));
    ck_assert_str_eq(qrt_valid_text("\xff", 1, 0), "must be valid UTF-8");
    ck_assert_str_eq(qrt_valid_text("a\x01", 2, 0),
                     "may not contain control characters");
}
END_TEST

static char *repeat(char c, apr_size_t n)
{
    char *s = apr_palloc(pool, n + 1);

    memset(s, c, n);
    s[n] = '\0';
    return s;
}

START_TEST(url_good)
{
    static const char *const good[] = {
        "http://example.com",
        "https://example.com",
        "https://example.com/",
        "HTTPS://EXAMPLE.COM/Path",
        "HtTp://example.com",
        "https://www.example.com/spring?utm=1&x=y#top",
        "https://example.com:8443/x",
        "http://example.com:1/",
        "http://example.com:65535/",
        "http://example.com:080/",
        "http://localhost/",
        "http://localhost:8080",
        "http://127.0.0.1/",
        "http://203.0.113.7:8080/x",
        "http://[::1]/",
        "http://[::1]:8080/",
        "http://[2001:db8::1]",
        "http://[2001:DB8:0:0:0:0:0:1]/a",
        "http://[::ffff:192.0.2.1]/",
        "https://user:pass@example.com/",
        "https://user@example.com/",
        "https://us%20er@example.com/",
        "https://@example.com/",
        "https://example.com./",
        "https://my_host.example.com/",
        "https://xn--bcher-kva.example/",
        "https://bücher.example/straße?q=ö",
        "https://example.com/a%20b",
        "https://example.com/100%",
        "https://example.com/?q={x}|^`",
        "https://example.com?x",
        "https://example.com#frag",
        "https://example.com/@user",
        "https://example.com/path:with:colons",
        "https://1example.com/",
        "https://example.123abc/",
        "https://a/",
    };
    apr_size_t i;

    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        const char *why = qrt_valid_redirect_url(good[i]);

        ck_assert_msg(why == NULL, "rejected %s: %s", good[i], why);
    }
}
END_TEST

START_TEST(url_bad)
{
    static const char *const bad[] = {
        "",
        "javascript:alert(1)",
        "JavaScript://example.com/%0Aalert(1)",
        "data:text/html,<b>x</b>",
        "ftp://example.com/",
        "file:///etc/passwd",
        "mailto:a@example.com",
        "//example.com/x",
        "/relative/path",
        "example.com",
        "www.example.com/x",
        "http:/x",
        "http:/example.com",
        "http:example.com",
        "http:",
        "http:/",
        "http://",
        "https://",
        "http:///x",
        "http://?x",
        "http://#x",
        "httpx://example.com",
        "https s://example.com",
        " http://example.com",
        "http://example.com ",
        "http://exa mple.com/",
        "http://example.com/a b",
        "http://example.com/\t",
        "http://example.com/\n",
        "http://example.com/\r\nSet-Cookie: x=1",
        "http://example.com/\x7f",
        "http://example.com/\xC2\x85",          /* C1 NEL */
        "http://example.com/\xC2\xA0",          /* NBSP */
        "http://example.com/\xE3\x80\x80",      /* ideographic space */
        "http://example.com/\xff",
        "http://example.com/\xC3",
        "http://\xC0\xAE.example.com/",
        "http://example.com\\@evil.com/",
        "http://example.com/\\x",
        "http://example.com/\"onmouseover",
        "http://example.com/<script>",
        "http://user name@example.com/",
        "http://us\"er@example.com/",
        "http://a@b@example.com/",
        "http://us%2@example.com/",
        "http://us%@example.com/",
        "http://user@/",
        "http://user@:80/",
        "http://user:pass@/",
        "http://ex<ample.com/",
        "http://ex%41mple.com/",
        "http://example..com/",
        "http://.example.com/",
        "http://./",
        "http://example.com../",
        "http://exa!mple.com/",
        "http://example.com:/",
        "http://example.com:0/",
        "http://example.com:65536/",
        "http://example.com:123456/",
        "http://example.com:8a/",
        "http://example.com:-1/",
        "http://example.com:+80/",
        "http://example.com:80:80/",
        "http://[::1/",
        "http://[::1]x/",
        "http://[::1]:/",
        "http://[::1]:0/",
        "http://[example.com]/",
        "http://[1.2.3.4]/",
        "http://[fe80::1%25eth0]/",
        "http://[v1.fe80]/",
        "http://[]/",
        "http://::1/",
        "http://2001:db8::1/",
        "http://256.1.1.1/",
        "http://1.2.3/",
        "http://1.2.3.4.5/",
        "http://01.2.3.4/",
        "http://1.2.3.4./",
        "http://0x7f.0.0.1/",
        "http://0x7f000001/",
        "http://2130706433/",
        "http://example.0x1f/",
        "http://example.123/",
    };
    apr_size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(qrt_valid_redirect_url(bad[i]) != NULL,
                      "accepted \"%s\"", bad[i]);
    }
    ck_assert_str_eq(qrt_valid_redirect_url(NULL), "is required");
    ck_assert_str_eq(qrt_valid_redirect_url(""), "is required");
    ck_assert_str_eq(qrt_valid_redirect_url("javascript:alert(1)"),
                     "must be an absolute http or https URL");
    ck_assert_str_eq(qrt_valid_redirect_url("ftp://example.com/"),
                     "must be an absolute http or https URL");
    ck_assert_str_eq(qrt_valid_redirect_url("http:/x"),
                     "must be an absolute http or https URL");
    ck_assert_str_eq(qrt_valid_redirect_url("//example.com"),
                     "must be an absolute http or https URL");
    ck_assert_str_eq(qrt_valid_redirect_url("http://"),
                     "must have a valid host");
    ck_assert_str_eq(qrt_valid_redirect_url("http://a.com/ b"),
                     "may not contain whitespace or control characters");
    ck_assert_str_eq(qrt_valid_redirect_url("http://a.com:99999/"),
                     "must have a port between 1 and 65535");
}
END_TEST

START_TEST(url_length)
{
    const char *prefix = "https://example.com/";
    apr_size_t plen = strlen(prefix);
    char *s = repeat('a', QRT_URL_MAX + 10);
    char *big;

    memcpy(s, prefix, plen);
    s[QRT_URL_MAX] = '\0';
    ck_assert_ptr_null(qrt_valid_redirect_url(s));          /* 2048 */
    ck_assert_str_eq(qrt_url_host(pool, s), "example.com");
    s[QRT_URL_MAX] = 'a';
    s[QRT_URL_MAX + 1] = '\0';
    ck_assert_str_eq(qrt_valid_redirect_url(s),             /* 2049 */
                     "may not be longer than 2048 bytes");
    ck_assert_ptr_null(qrt_url_host(pool, s));
    /* a huge one is rejected without trouble */
    big = repeat('a', 1 << 20);
    memcpy(big, prefix, plen);
    ck_assert_str_eq(qrt_valid_redirect_url(big),
                     "may not be longer than 2048 bytes");
    /* a long host */
    s = apr_pstrcat(pool, "http://", repeat('a', 253), "/", NULL);
    ck_assert_ptr_null(qrt_valid_redirect_url(s));
    s = apr_pstrcat(pool, "http://", repeat('a', 253), "./", NULL);
    ck_assert_ptr_null(qrt_valid_redirect_url(s));
    s = apr_pstrcat(pool, "http://", repeat('a', 254), "/", NULL);
    ck_assert_ptr_nonnull(qrt_valid_redirect_url(s));
    /* a long bracketed thing */
    s = apr_pstrcat(pool, "http://[", repeat('1', 300), "]/", NULL);
    ck_assert_ptr_nonnull(qrt_valid_redirect_url(s));
}
END_TEST

/* A Location header's URI: the bytes past the host that are not ASCII percent-encoded,
 * the host (an IDN) as written; an ASCII URL unchanged, not copied. */
START_TEST(url_locations)
{
    static const char *const cases[][2] = {
        { "https://m\xc3\xbcnchen.de/stra\xc3\x9f" "e?q=\xc3\xbc#\xc3\xa4",
          "https://m\xc3\xbcnchen.de/stra%C3%9Fe?q=%C3%BC#%C3%A4" },
        { "http://example.com?x=\xe2\x82\xac", "http://example.com?x=%E2%82%AC" },
        { "https://user@\xc3\xa9.example:8443#\xc3\xa9",
          "https://user@\xc3\xa9.example:8443#%C3%A9" },
        { "https://example.com/a%20b?c=%C3%A9", "https://example.com/a%20b?c=%C3%A9" },
    };
    const char *ascii = "https://example.com/x?y=1";
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ck_assert_ptr_null(qrt_valid_redirect_url(cases[i][0]));
        ck_assert_str_eq(qrt_url_location(pool, cases[i][0]), cases[i][1]);
    }
    ck_assert_ptr_eq(qrt_url_location(pool, ascii), ascii);
}
END_TEST

START_TEST(url_hosts)
{
    static const char *const cases[][2] = {
        { "https://www.example.com/x", "www.example.com" },
        { "https://www.example.com", "www.example.com" },
        { "https://www.example.com?q", "www.example.com" },
        { "https://www.example.com#f", "www.example.com" },
        { "HTTPS://WWW.Example.COM/X", "WWW.Example.COM" },
        { "http://[::1]:8080/", "[::1]" },
        { "http://[2001:db8::1]", "[2001:db8::1]" },
        { "http://user:pw@host.example:81/p@q", "host.example" },
        { "http://@host.example/", "host.example" },
        { "http://203.0.113.7:8080/", "203.0.113.7" },
        { "http://example.com./", "example.com." },
        { "https://bücher.example/", "bücher.example" },
    };
    apr_size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *h = qrt_url_host(pool, cases[i][0]);

        ck_assert_msg(h != NULL, "no host for %s", cases[i][0]);
        ck_assert_str_eq(h, cases[i][1]);
    }
    ck_assert_ptr_null(qrt_url_host(pool, NULL));
    ck_assert_ptr_null(qrt_url_host(pool, ""));
    ck_assert_ptr_null(qrt_url_host(pool, "ftp://example.com/"));
    ck_assert_ptr_null(qrt_url_host(pool, "http://"));
    ck_assert_ptr_null(qrt_url_host(pool, "//example.com/"));
    ck_assert_ptr_null(qrt_url_host(pool, "http://a b/"));
}
END_TEST

/* Random bytes after "http://" never crash the parser, and whatever it
 * accepts has a host that is accepted on its own. */
START_TEST(url_random)
{
    unsigned int seed = 12345;
    int n;

    for (n = 0; n < 200000; n++) {
        char buf[40];
        int len = 7 + (int)((seed = seed * 1103515245 + 12345) >> 16) % 24;
        int i;
        const char *why, *host;
        static const char alphabet[] = "ab1.:/@[]%?#-_ \xC3\xA9\xff";

        memcpy(buf, "http://", 7);
        for (i = 7; i < len; i++) {
            seed = seed * 1103515245 + 12345;
            buf[i] = alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
        }
        buf[len] = '\0';
        why = qrt_valid_redirect_url(buf);
        host = qrt_url_host(pool, buf);
        ck_assert((why == NULL) == (host != NULL));
        if (host) {
            ck_assert(strlen(host) > 0);
            ck_assert_ptr_null(qrt_valid_redirect_url(
                apr_pstrcat(pool, "https://", host, NULL)));
        }
        if ((n & 1023) == 0) {
            apr_pool_clear(pool);
        }
    }
}
END_TEST

START_TEST(tags)
{
    char *s;

    ck_assert_ptr_null(qrt_valid_tag("campaign:spring"));
    ck_assert_ptr_null(qrt_valid_tag("x"));
    ck_assert_ptr_null(qrt_valid_tag("région:eu"));
    ck_assert_ptr_null(qrt_valid_tag("東京"));
    ck_assert_ptr_null(qrt_valid_tag(" padded "));
    ck_assert_ptr_null(qrt_valid_tag(":"));
    ck_assert_ptr_null(qrt_valid_tag("a:b:c"));
    ck_assert_ptr_null(qrt_valid_tag(repeat('a', 64)));
    ck_assert_str_eq(qrt_valid_tag(repeat('a', 65)),
                     "may not be longer than 64 bytes");
    ck_assert_ptr_nonnull(qrt_valid_tag(repeat('a', 100000)));
    /* 62 ASCII + a 2-byte char = 64 bytes; + 3-byte char = 65 */
    s = apr_pstrcat(pool, repeat('a', 62), "é", NULL);
    ck_assert_ptr_null(qrt_valid_tag(s));
    s = apr_pstrcat(pool, repeat('a', 62), "東", NULL);
    ck_assert_ptr_nonnull(qrt_valid_tag(s));
    ck_assert_str_eq(qrt_valid_tag(NULL), "is required");
    ck_assert_str_eq(qrt_valid_tag(""), "may not be empty");
    ck_assert_str_eq(qrt_valid_tag(" "), "may not be only white space");
    ck_assert_ptr_nonnull(qrt_valid_tag("   "));
    ck_assert_ptr_nonnull(qrt_valid_tag(" \xC2\xA0 "));         /* NBSP */
    ck_assert_ptr_nonnull(qrt_valid_tag("\xE3\x80\x80"));       /* U+3000 */
    ck_assert_ptr_nonnull(qrt_valid_tag("\xE2\x80\x8B"));       /* ZWSP */
    ck_assert_str_eq(qrt_valid_tag("a\tb"),
                     "may not contain control characters");
    ck_assert_ptr_nonnull(qrt_valid_tag("a\nb"));
    ck_assert_ptr_nonnull(qrt_valid_tag("a\rb"));
    ck_assert_ptr_nonnull(qrt_valid_tag("\x01"));
    ck_assert_ptr_nonnull(qrt_valid_tag("a\x7f"));
    ck_assert_ptr_nonnull(qrt_valid_tag("a\xC2\x85"));          /* C1 */
    ck_assert_ptr_nonnull(qrt_valid_tag("a\xC2\x9F"));
    ck_assert_str_eq(qrt_valid_tag("a\xff"), "must be valid UTF-8");
    ck_assert_ptr_nonnull(qrt_valid_tag("a\xC3"));
    ck_assert_ptr_nonnull(qrt_valid_tag("\xED\xA0\x80"));
}
END_TEST

START_TEST(tag_split)
{
    const char *dim = "x", *value = "x";

    qrt_tag_split(pool, "campaign:spring", &dim, &value);
    ck_assert_str_eq(dim, "campaign");
    ck_assert_str_eq(value, "spring");
    qrt_tag_split(pool, "a:b:c", &dim, &value);
    ck_assert_str_eq(dim, "a");
    ck_assert_str_eq(value, "b:c");
    qrt_tag_split(pool, "plain", &dim, &value);
    ck_assert_ptr_null(dim);
    ck_assert_str_eq(value, "plain");
    qrt_tag_split(pool, ":x", &dim, &value);
    ck_assert_str_eq(dim, "");
    ck_assert_str_eq(value, "x");
    qrt_tag_split(pool, "x:", &dim, &value);
    ck_assert_str_eq(dim, "x");
    ck_assert_str_eq(value, "");
    qrt_tag_split(pool, ":", &dim, &value);
    ck_assert_str_eq(dim, "");
    ck_assert_str_eq(value, "");
    qrt_tag_split(pool, "", &dim, &value);
    ck_assert_ptr_null(dim);
    ck_assert_str_eq(value, "");
    qrt_tag_split(pool, NULL, &dim, &value);
    ck_assert_ptr_null(dim);
    ck_assert_ptr_null(value);
    qrt_tag_split(pool, "a:b", NULL, NULL);
}
END_TEST

START_TEST(utf8_clean)
{
    const char *ok = "caf\xc3\xa9 \xe2\x82\xac";

    /* Nothing to do: the same string. */
    ck_assert_ptr_eq(qrt_valid_utf8_clean(pool, ok, strlen(ok), 0), ok);
    ck_assert_str_eq(qrt_valid_utf8_clean(pool, NULL, 0, 0), "");
    ck_assert_str_eq(qrt_valid_utf8_clean(pool, "a\xff" "b", 3, 0), "a\xEF\xBF\xBD" "b");
    /* One U+FFFD per maximal ill-formed subpart; NUL replaced too. */
    ck_assert_str_eq(qrt_valid_utf8_clean(pool, "\xe2\x82" "x", 3, 0), "\xEF\xBF\xBD" "x");
    ck_assert_str_eq(qrt_valid_utf8_clean(pool, "\xc0\x80", 2, 0),
                     "\xEF\xBF\xBD\xEF\xBF\xBD");
    ck_assert_str_eq(qrt_valid_utf8_clean(pool, "a\0b", 3, 0), "a\xEF\xBF\xBD" "b");
    /* Cut on a character boundary. */
    ck_assert_str_eq(qrt_valid_utf8_clean(pool, ok, strlen(ok), 4), "caf");
    ck_assert_str_eq(qrt_valid_utf8_clean(pool, ok, strlen(ok), 5), "caf\xc3\xa9");
    ck_assert_str_eq(qrt_valid_utf8_clean(pool, "\xff\xff", 2, 4), "\xEF\xBF\xBD");
    ck_assert_str_eq(qrt_valid_utf8_clean(pool, "abc", 3, 2), "ab");
}
END_TEST

START_TEST(ints)
{
    apr_int64_t v = 99;

    ck_assert_int_eq(qrt_parse_int("0", 0, 10, &v), 0);
    ck_assert(v == 0);
    ck_assert_int_eq(qrt_parse_int("1", 1, 10, &v), 0);
    ck_assert(v == 1);
    ck_assert_int_eq(qrt_parse_int("10", 1, 10, &v), 0);
    ck_assert(v == 10);
    ck_assert_int_eq(qrt_parse_int("1000", 1, 1000, &v), 0);
    ck_assert(v == 1000);
    ck_assert_int_eq(qrt_parse_int("9223372036854775807", 0, APR_INT64_MAX,
                                   &v), 0);
    ck_assert(v == APR_INT64_MAX);
    v = 99;
    ck_assert_int_eq(qrt_parse_int("9223372036854775808", 0, APR_INT64_MAX,
                                   &v), -1);
    ck_assert_int_eq(qrt_parse_int("9223372036854775810", 0, APR_INT64_MAX,
                                   &v), -1);
    ck_assert_int_eq(qrt_parse_int("18446744073709551616", 0, APR_INT64_MAX,
                                   &v), -1);
    ck_assert_int_eq(qrt_parse_int("99999999999999999999999999999999", 0,
                                   APR_INT64_MAX, &v), -1);
    ck_assert_int_eq(qrt_parse_int(repeat('9', 100000), 0, APR_INT64_MAX,
                                   &v), -1);
    ck_assert_int_eq(qrt_parse_int("1001", 1, 1000, &v), -1);
    ck_assert_int_eq(qrt_parse_int("0", 1, 1000, &v), -1);
    ck_assert_int_eq(qrt_parse_int("", 0, 10, &v), -1);
    ck_assert_int_eq(qrt_parse_int(NULL, 0, 10, &v), -1);
    ck_assert_int_eq(qrt_parse_int(" 1", 0, 10, &v), -1);
    ck_assert_int_eq(qrt_parse_int("1 ", 0, 10, &v), -1);
    ck_assert_int_eq(qrt_parse_int("\t1", 0, 10, &v), -1);
    ck_assert_int_eq(qrt_parse_int("1\n", 0, 10, &v), -1);
    ck_assert_int_eq(qrt_parse_int("1a", 0, 10, &v), -1);
    ck_assert_int_eq(qrt_parse_int("a1", 0, 10, &v), -1);
    ck_assert_int_eq(qrt_parse_int("0x1", 0, 10, &v), -1);
    ck_assert_int_eq(qrt_parse_int("01", 0, 10, &v), -1);
    ck_assert_int_eq(qrt_parse_int("00", 0, 10, &v), -1);
    ck_assert_int_eq(qrt_parse_int("+1", 0, 10, &v), -1);
    ck_assert_int_eq(qrt_parse_int("-1", -10, 10, &v), -1);
    ck_assert_int_eq(qrt_parse_int("-0", 0, 10, &v), -1);
    ck_assert_int_eq(qrt_parse_int("1.0", 0, 10, &v), -1);
    ck_assert_int_eq(qrt_parse_int("1e2", 0, 1000, &v), -1);
    ck_assert_int_eq(qrt_parse_int("1,000", 0, 10000, &v), -1);
    ck_assert_int_eq(qrt_parse_int("１", 0, 10, &v), -1);
    ck_assert(v == 99);
    ck_assert_int_eq(qrt_parse_int("5", 0, 10, NULL), 0);
}
END_TEST

START_TEST(account_names)
{
    static const char *const good[] = { "acme", "a", "Big.Co_2-x", NULL };
    static const char *const bad[] = { "", "9lives", "bad name'", "a b", "caf\xc3\xa9",
                                       "x;DROP", NULL };
    char max[66];
    int i;

    for (i = 0; good[i]; i++) {
        ck_assert_msg(qrt_valid_account_name(good[i]), "%s", good[i]);
    }
    for (i = 0; bad[i]; i++) {
        ck_assert_msg(!qrt_valid_account_name(bad[i]), "%s", bad[i]);
    }
    ck_assert(!qrt_valid_account_name(NULL));
    memset(max, 'a', 65);
    max[64] = '\0';
    ck_assert(qrt_valid_account_name(max));
    max[64] = 'a';
    max[65] = '\0';
    ck_assert(!qrt_valid_account_name(max));
}
END_TEST

static Suite *valid_suite(void)
{
    Suite *s = suite_create("qrt_valid");
    TCase *tc = tcase_create("valid");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, utf8_chars);
    tcase_add_test(tc, utf8_exhaustive_two_bytes);
    tcase_add_test(tc, text);
    tcase_add_test(tc, blank);
    tcase_add_test(tc, url_good);
    tcase_add_test(tc, url_bad);
    tcase_add_test(tc, url_length);
    tcase_add_test(tc, url_hosts);
    tcase_add_test(tc, url_locations);
    tcase_add_test(tc, url_random);
    tcase_add_test(tc, tags);
    tcase_add_test(tc, tag_split);
    tcase_add_test(tc, ints);
    tcase_add_test(tc, utf8_clean);
    tcase_add_test(tc, account_names);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qrt_check_run(valid_suite());
}
