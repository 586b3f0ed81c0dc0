/* mod_qrtrack: tokens kept out of logs and mod_status.
 *
 * The API accepts its token as ?api_token= (the specification says so), the
 * name looked up case-insensitively and %-decoded (API%5FToken= too): every such
 * spelling is redacted (qrt_form_redact compares the same way). httpd
 * shows the request line in access logs (%r), in mod_status and in mod_log_forensic,
 * and the query string in access logs (%q). So:
 *  - right after the request line is read (post_read_request, before mod_status
 *    copies it at SERVER_BUSY_WRITE), each api_token value in r->the_request
 *    becomes "[redacted]", and in r->unparsed_uri until the URI is translated
 *    (httpd names it in its error lines about a path it refuses);
 *  - in the same step, each api_token value in the query of the Referer header (a
 *    page's address, which Debian's formats log, httpd's error lines name and a
 *    scan keeps as the visit's referer);
 *  - just before the access logs are written (log_transaction), the same happens
 *    to r->args, the_request, unparsed_uri, parsed_uri.query and the Referer of every
 *    request of the chain (internal redirects included; requests httpd refused early,
 *    before post_read_request, too).
 * The request line and the Referer, logged whole, are redacted past a fragment, a raw
 * space or a comma as well (redact_all).
 * The handlers in between, the API's and any other application's on the server,
 * see the query string and the URI as the client sent them.
 *
 * Tokens cannot be kept out of httpd's own debug lines: from `LogLevel core:trace5`
 * httpd writes each request line as read, from `http:trace4` every request's headers
 * (Authorization too), and mod_http2 its headers from `http2:trace2`. A server or
 * virtual host set to log so gets a warning at start-up (QRT00124).
 */
#include <string.h>
#include <apr_strings.h>

#include "mod_qrtrack_private.h"
#include "mod_qrtrack_redact.h"
#include "qrt_form.h"
#include "http_core.h"
#include "http_request.h"
#include "scoreboard.h"

APLOG_USE_MODULE(qrtrack);

#define REDACT_NAME "api_token"
#define REDACT_MASK "[redacted]"
#define NOTE_UNPARSED "qrtrack-unparsed-uri"

/* line (a request line or URI) with the api_token values of its query string
 * (after the first '?', up to a space or '#') redacted; NULL when it has none. */
static char *redact_line(apr_pool_t *p, const char *line)
{
    const char *q = line ? strchr(line, '?') : NULL;
    apr_size_t len;
    char *query, *red;

    if (!q) {
        return NULL;
    }
    len = strcspn(q + 1, " #");
    query = apr_pstrmemdup(p, q + 1, len);
    red = qrt_form_redact(p, query, REDACT_NAME, REDACT_MASK);
    if (!red) {
        return NULL;
    }
    return apr_pstrcat(p, apr_pstrmemdup(p, line, q + 1 - line), red, q + 1 + len, NULL);
}

/* text (a request line or a header, logged whole) with every api_token value after its
 * first '?' redacted, its pieces split at any of & # ; , ? and blanks: a token after a
 * fragment, a raw space or in the second of two joined Referer headers is written to the
 * logs as well. NULL when it has none. */
static char *redact_all(apr_pool_t *p, const char *text)
{
    static const char delims[] = "&#;,? \t";
    const char *q = text ? strchr(text, '?') : NULL, *s;
    apr_array_header_t *out;
    int found = 0;

    if (!q) {
        return NULL;
    }
    out = apr_array_make(p, 8, sizeof(const char *));
    APR_ARRAY_PUSH(out, const char *) = apr_pstrmemdup(p, text, q + 1 - text);
    for (s = q + 1; *s; ) {
        apr_size_t n = strcspn(s, delims);
        const char *piece = apr_pstrmemdup(p, s, n);
        char *red = n && memchr(piece, '=', n)
                    ? qrt_form_redact(p, piece, REDACT_NAME, REDACT_MASK) : NULL;

        found |= red != NULL;
        APR_ARRAY_PUSH(out, const char *) = red ? red : piece;
        s += n;
        if (*s) {
            APR_ARRAY_PUSH(out, const char *) = apr_pstrmemdup(p, s, 1);
            s++;
        }
    }
    return found ? apr_array_pstrcat(p, out, '\0') : NULL;
}

const char *qrt_redact_referer(apr_pool_t *p, const char *referer)
{
    char *line = redact_all(p, referer);

    return line ? line : referer;
}

/* The Referer of r, redacted: a link followed from a page whose address carried a token
 * (an API answer opened with ?api_token= in a browser, which sends a same-origin page's
 * whole address) brings it there: Debian's formats log it, httpd's error lines name it,
 * and a scan keeps it as the visit's referer (listings, CSV, webhooks). */
static void redact_referer(request_rec *r)
{
    const char *referer = apr_table_get(r->headers_in, "Referer");
    char *line;

    if (referer && (line = redact_all(r->pool, referer)) != NULL) {
        apr_table_setn(r->headers_in, "Referer", line);
    }
}

static int redact_post_read_request(request_rec *r)
{
    char *line, *uri;

    redact_referer(r);
    if (!r->args || !strchr(r->args, '=')) {
        return DECLINED;
    }
    if ((line = redact_all(r->pool, r->the_request)) != NULL) {
        r->the_request = line;
    }
    /* httpd's own lines about a path it refuses (AH10244, AH00026) show
     * unparsed_uri: redacted until the URI is translated (redact_pre_translate). */
    if ((uri = redact_line(r->pool, r->unparsed_uri)) != NULL) {
        apr_table_setn(r->notes, NOTE_UNPARSED, r->unparsed_uri);
        r->unparsed_uri = uri;
    }
    if (r->parsed_uri.password) {
        /* mod_status shows such a request unparsed from parsed_uri. */
        r->parsed_uri.query = qrt_form_redact(r->pool, r->args, REDACT_NAME, REDACT_MASK);
    }
    return DECLINED;
}

/* The URI as sent, back for the handlers: when the URI is translated, or, for a request
 * whose translation a module did before (a DONE from pre_translate_name), at its fixups. */
static int redact_restore(request_rec *r)
{
    const char *uri = apr_table_get(r->notes, NOTE_UNPARSED);

    if (uri) {
        r->unparsed_uri = (char *)uri;
        apr_table_unset(r->notes, NOTE_UNPARSED);
    }
    return DECLINED;
}

/* Before the other modules translate the URI, except for a path with an encoded slash
 * under AllowEncodedSlashes Off: httpd refuses it (404) right after this hook, naming
 * unparsed_uri (AH00026), and no handler runs. */
static int redact_pre_translate(request_rec *r)
{
    core_dir_config *d = ap_get_core_module_config(r->per_dir_config);
    const char *path = r->parsed_uri.path;

    if (d && !d->allow_encoded_slashes && path
        && (strstr(path, "%2f") || strstr(path, "%2F"))) {
        return DECLINED;
    }
    return redact_restore(r);
}

/* Also requests that httpd refused before post_read_request (a fragment in the
 * request line, say): their line is still logged. */
static int redact_log_transaction(request_rec *r)
{
    request_rec *o = r;
    int line_changed = 0;

    while (o->prev) {
        o = o->prev;
    }
    for (; o; o = o->next) {
        char *s;

        if (o->args && (s = qrt_form_redact(o->pool, o->args, REDACT_NAME,
                                            REDACT_MASK)) != NULL) {
            o->args = s;
        }
        if ((s = redact_all(o->pool, o->the_request)) != NULL) {
            o->the_request = s;
            line_changed = 1;
        }
        /* (a request httpd refused while reading its headers never came to
         * post_read_request: its Referer is logged as sent) */
        redact_referer(o);
        if ((s = redact_line(o->pool, o->unparsed_uri)) != NULL) {
            o->unparsed_uri = s;
        }
        /* mod_log_config's %r and mod_status rebuild a request line that
         * carries a password (an absolute URI with user:pw@) from parsed_uri,
         * also when httpd answered 400 before post_read_request. */
        if (o->parsed_uri.query
            && (s = qrt_form_redact(o->pool, o->parsed_uri.query, REDACT_NAME,
                                    REDACT_MASK)) != NULL) {
            o->parsed_uri.query = s;
            line_changed = 1;
        }
    }
    if (line_changed) {
        /* mod_status keeps showing a worker's last request line. */
        ap_update_child_status(r->connection->sbh, SERVER_BUSY_LOG, r);
    }
    return DECLINED;
}

/* The levels from which a module writes each request's line or headers, where a
 * token may be, to the error log. */
typedef struct {
    const char *file;               /* the module's source file, as httpd links it */
    const char *name;               /* its name in LogLevel */
    int level;
    const char *what;               /* what it writes */
} redact_header_log;

static const redact_header_log header_logs[] = {
    { "core.c", "core", APLOG_TRACE5, "line, API tokens in ?api_token= included" },
    { "http_core.c", "http", APLOG_TRACE4, "headers, API tokens in Authorization included" },
    { "mod_http2.c", "http2", APLOG_TRACE2, "headers, API tokens in Authorization included" },
};

static int redact_post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp,
                              server_rec *s)
{
    server_rec *sp;
    apr_size_t i;

    (void)pconf;
    (void)plog;
    if (ap_state_query(AP_SQ_MAIN_STATE) == AP_SQ_MS_CREATE_PRE_CONFIG) {
        return OK;                  /* (the first of the two passes: warned in the second) */
    }
    for (i = 0; i < sizeof(header_logs) / sizeof(header_logs[0]); i++) {
        module *m = ap_find_linked_module(header_logs[i].file);
        int main_logs = m && ap_get_server_module_loglevel(s, m->module_index)
                             >= header_logs[i].level;

        /* (once for the main server, and for each virtual host that logs so where the
         * main server does not) */
        for (sp = s; m && sp; sp = sp->next) {
            apr_port_t port = sp->port ? sp->port : sp->addrs ? sp->addrs->host_port : 0;

            if (ap_get_server_module_loglevel(sp, m->module_index) < header_logs[i].level
                || (sp != s && main_logs)) {
                continue;
            }
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, sp, "QRT00124: LogLevel %s:trace%d "
                         "or above writes every request's %s, to the error log (%s%s%s%s)",
                         header_logs[i].name, header_logs[i].level - APLOG_DEBUG,
                         header_logs[i].what,
                         sp == s ? "the main server " : "",
                         sp->server_hostname ? sp->server_hostname : "", port ? ":" : "",
                         port ? apr_itoa(ptemp, port) : "");
        }
    }
    return OK;
}

void qrt_redact_register(void)
{
    /* Before the modules that write the request line at once or log it. */
    static const char *const loggers[] = { "mod_log_forensic.c", "mod_log_config.c",
                                           NULL };

    ap_hook_post_read_request(redact_post_read_request, NULL, loggers,
                              APR_HOOK_REALLY_FIRST);
    ap_hook_pre_translate_name(redact_pre_translate, NULL, NULL, APR_HOOK_REALLY_FIRST);
    ap_hook_translate_name(redact_restore, NULL, NULL, APR_HOOK_REALLY_FIRST);
    ap_hook_fixups(redact_restore, NULL, NULL, APR_HOOK_REALLY_FIRST);
    ap_hook_log_transaction(redact_log_transaction, NULL, loggers,
                            APR_HOOK_REALLY_FIRST);
    ap_hook_post_config(redact_post_config, NULL, NULL, APR_HOOK_MIDDLE);
}
