"""The API's HTTP surface for operations (CONTRACT section 6): tokens sent as
?api_token= never reach an access log (Debian's formats, %q, mod_log_forensic) or
mod_status; OPTIONS and CORS preflights; GET /api/health for load balancers; TRACE off."""
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile

import pytest
import requests

from conftest import TOP, Api, Server, apxs, configtest, start_server
from lib.wait import wait_until

# Debian's LogFormats (apache2.conf) and a format with every query item.
LOGS = r"""
LoadModule status_module {libexec}/mod_status.so
LoadModule log_forensic_module {libexec}/mod_log_forensic.so
LoadModule rewrite_module {libexec}/mod_rewrite.so
ExtendedStatus On
LogFormat "%v:%p %h %l %u %t \"%r\" %>s %O \"%{{Referer}}i\" \"%{{User-Agent}}i\"" vhost_combined
LogFormat "%h %l %u %t \"%r\" %>s %O \"%{{Referer}}i\" \"%{{User-Agent}}i\"" combined
LogFormat "%r|%q|%U%q|%<r|%>q" queries
CustomLog {dir}/logs/other_vhosts_access.log vhost_combined
CustomLog {dir}/logs/combined.log combined
CustomLog {dir}/logs/queries.log queries
ForensicLog {dir}/logs/forensic.log
<Location /server-status>
    SetHandler server-status
</Location>
# Another application on the same server, with its own api_token parameter.
RewriteEngine On
RewriteRule ^/other$ /elsewhere [R=302]
"""

with open(os.path.join(TOP, "mod_qrtrack", "qrt_version.h")) as f:
    VERSION = re.search(r'QRTRACK_VERSION\s+"([^"]+)"', f.read()).group(1)


def logging_server(loglevel="warn"):
    """A server that logs in Debian's formats, %q's and mod_log_forensic's, with the
    account acme: started."""
    srv = Server(loglevel=loglevel)
    try:
        with open(srv.conf) as f:
            conf = f.read()
        with open(srv.conf, "w") as f:
            f.write(conf + LOGS.format(libexec=apxs("LIBEXECDIR"), dir=srv.dir))
        srv.admin("init")
        srv.account("acme", "professional")
        srv.start()
    except BaseException:
        srv.cleanup()
        raise
    return srv


@pytest.fixture(scope="module")
def logged():
    srv = logging_server()
    yield srv
    srv.cleanup()


def logs(srv):
    text = ""
    for name in sorted(os.listdir(os.path.join(srv.dir, "logs"))):
        with open(os.path.join(srv.dir, "logs", name), errors="replace") as f:
            text += f.read()
    return text


def read_log(srv, name):
    with open(os.path.join(srv.dir, "logs", name), errors="replace") as f:
        return f.read()


def status_showing(srv, text):
    """/server-status once it shows text (a request still being served)."""
    def shown():
        status = requests.get(srv.base + "/server-status", timeout=10).text
        return status if text in status else None
    return wait_until(shown, timeout=10, what="server-status to show " + text)


def slow_request(srv, target, body=b'{"redirect_url": "https://example.com/slow"}'):
    """A request whose body is still on its way: mod_status shows it meanwhile."""
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    s.sendall(("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               "Content-Length: %d\r\n\r\n" % (target, len(body))).encode() + body[:5])
    return s, body[5:]


def raw_get(srv, target):
    """GET target exactly as written (requests would re-encode %5F as _): the status."""
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    try:
        s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
                   % target).encode())
        return int(s.recv(4096).split(b" ", 2)[1])
    finally:
        s.close()


def test_a_token_in_the_query_reaches_no_log_and_no_server_status(logged):
    tok = logged.token("acme")
    base = logged.api_base
    # The token still works from the query string, the key %-encoded too.
    r = requests.get(base + "/account?api_token=" + tok, timeout=10)
    assert r.status_code == 200, r.text
    assert raw_get(logged, "/api/account?x=1&api%5Ftoken=" + tok + "&y=2") == 200
    r = requests.get(base + "/tracker?page=zz&api_token=" + tok, timeout=10)
    assert r.status_code in (200, 400, 422), r.text
    wrong = tok[:-4] + "AAAA"
    assert requests.get(base + "/account?api_token=" + wrong, timeout=10).status_code == 401
    # Requests that httpd itself refuses, and says so in its error log.
    assert raw_get(logged, "/api/%zz?api_token=" + tok) == 400
    assert raw_get(logged, "/api/../../etc?api_token=" + tok) == 400
    assert raw_get(logged, "/api/account?api_token=" + tok + "#fragment") == 400
    assert raw_get(logged, "/api/" + "a" * 9000 + "?api_token=" + tok) == 414
    # Through the scan path and a path that does not exist too.
    requests.get(logged.base + "/q/NOPE?api_token=" + tok, timeout=10, allow_redirects=False)
    requests.get(base + "/nothing?api_token=" + tok, timeout=10)

    # While a request is being served, mod_status shows its line redacted.
    sock, rest = slow_request(logged, "/api/tracker?api_token=" + tok)
    try:
        status = status_showing(logged, "/api/tracker?api_token=")
        assert "/api/tracker?api_token=[redacted]" in status
        assert tok not in status and tok[:20] not in status
        sock.sendall(rest)
        assert sock.recv(4096).startswith(b"HTTP/1.1 200 ")
    finally:
        sock.close()

    def written():
        """The logs once the last request (the slow one) is in them."""
        combined = read_log(logged, "combined.log")
        assert '"POST /api/tracker?api_token=[redacted] HTTP/1.1" 200' in combined
        assert '"GET /api/account?api_token=[redacted] HTTP/1.1" 200' in combined
        assert '"GET /api/account?x=1&api%5Ftoken=[redacted]&y=2 HTTP/1.1" 200' in combined
        assert ("GET /api/account?api_token=[redacted] HTTP/1.1|?api_token=[redacted]|"
                "/api/account?api_token=[redacted]|") in read_log(logged, "queries.log")
        assert "api_token=[redacted]" in read_log(logged, "forensic.log")
        assert re.search(r"AH10244: invalid URI path \(/api/%zz\?api_token=\[redacted\]\)",
                         logged.error_log())
        return True

    wait_until(written, timeout=10, ignore=(AssertionError,), what="the logs' redacted lines")
    text = logs(logged)
    assert tok not in text and tok[:20] not in text and wrong[:20] not in text


def raw_status(srv, line):
    """Send a request line exactly as written: the status of the answer."""
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    try:
        s.sendall(("%s\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" % line).encode())
        return int(s.recv(4096).split(b" ", 2)[1])
    finally:
        s.close()


SPELLINGS = ("API_TOKEN", "Api_Token", "API%5FTOKEN", "api%5ftoken", "%41PI_token")


def test_every_spelling_that_authenticates_is_redacted(logged):
    """The API looks its parameter up case-insensitively, the name %-decoded: each
    spelling that authenticates is redacted in every log format, in mod_status, on
    the API's, the scan's and the click's paths, and when httpd answers 400."""
    tok = logged.token("acme")
    # mod_log_forensic logs headers: the tracker is made with another token.
    with Api(logged, logged.token("acme")) as a:
        t = a.post("/tracker", json={"redirect_url": "https://example.com/s"}).json()
    for name in SPELLINGS:
        assert raw_get(logged, "/api/account?x=1&%s=%s" % (name, tok)) == 200, name
        assert raw_get(logged, "/q/%s?%s=%s" % (t["code"], name, tok)) == 302, name
        assert raw_get(logged, "/l/%s?%s=%s&y=2" % (t["code"], name, tok)) == 302, name
        assert raw_get(logged, "/api/account?%s=%s#frag" % (name, tok)) == 400, name
        # An absolute URI with a user and a password: httpd answers 400, and
        # mod_log_config and mod_status rebuild the line from parsed_uri.
        st = raw_status(logged, "GET http://user:pw@127.0.0.1:%d/api/account?%s=%s HTTP/1.1"
                        % (logged.port, name, tok))
        assert st in (400, 200), (name, st)
        st = raw_status(logged, "GET http://user:pw@127.0.0.1:%d/q/%s?%s=%s HTTP/1.1"
                        % (logged.port, t["code"], name, tok))
        assert st in (400, 302), (name, st)

        # While a request is served, and after, mod_status shows it redacted.
        sock, rest = slow_request(logged, "/api/tracker?%s=%s" % (name, tok))
        try:
            status = status_showing(logged, "/api/tracker?" + name)
            assert "/api/tracker?%s=[redacted]" % name in status, name
            assert tok[:20] not in status
            sock.sendall(rest)
            assert sock.recv(4096).startswith(b"HTTP/1.1 200 ")
        finally:
            sock.close()
        status = requests.get(logged.base + "/server-status", timeout=10).text
        auto = requests.get(logged.base + "/server-status?auto", timeout=10).text
        assert tok[:20] not in status and tok[:20] not in auto, name

    # Every request's line, once written: a child writes it after its answer went out,
    # so a thread the machine's load holds back may write it after later requests' lines.
    def written():
        want = ["/%s=[redacted]" % (path % name) for name in SPELLINGS
                for path in ("api/tracker?%s", "api/account?x=1&%s", "api/account?%s",
                             "q/" + t["code"] + "?%s", "l/" + t["code"] + "?%s")]
        return all(w in read_log(logged, log) for w in want
                   for log in ("combined.log", "other_vhosts_access.log", "queries.log"))
    wait_until(written, timeout=10, what="every request's line in the logs")
    text = logs(logged)
    assert tok[:20] not in text
    with open(os.path.join(logged.dir, "logs", "combined.log")) as f:
        combined = f.read()
    with open(os.path.join(logged.dir, "logs", "other_vhosts_access.log")) as f:
        vhost = f.read()
    with open(os.path.join(logged.dir, "logs", "queries.log")) as f:
        queries = f.read()
    for name in SPELLINGS:
        for log in (combined, vhost):
            assert '"GET /api/account?x=1&%s=[redacted] HTTP/1.1" 200' % name in log, name
            assert '"GET /q/%s?%s=[redacted] HTTP/1.1" 302' % (t["code"], name) in log, name
            assert '"GET /l/%s?%s=[redacted]&y=2 HTTP/1.1" 302' % (t["code"], name) in log
            assert ("/api/account?%s=[redacted] HTTP/1.1\" 400" % name) in log, name
            assert re.search(r'"GET http://user:XXXXXXXX@127\.0\.0\.1:%d/api/account\?%s'
                             r'=\[redacted\] HTTP/1\.1" (400|200)'
                             % (logged.port, re.escape(name)), log), name
        assert ("GET /api/account?x=1&%s=[redacted] HTTP/1.1|?x=1&%s=[redacted]|"
                "/api/account?x=1&%s=[redacted]|" % (name, name, name)) in queries
        assert ("|/q/%s?%s=[redacted]|" % (t["code"], name)) in queries


def raw_request(srv, line, headers):
    """A request sent exactly as written, with headers: the status of the answer."""
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    try:
        s.sendall(("%s\r\nHost: 127.0.0.1\r\n%sConnection: close\r\n\r\n"
                   % (line, "".join("%s: %s\r\n" % h for h in headers))).encode())
        return int(s.recv(4096).split(b" ", 2)[1])
    finally:
        s.close()


def test_a_token_in_a_referer_reaches_no_log_and_no_visit(logged):
    """A browser sends the address of the page a link was followed from as the Referer:
    from an API answer opened with ?api_token= (a browser's JSON viewer makes its URLs
    links, and the scan and click links are on the same origin, whose Referer is the
    whole address), a scan or click sends the token along. Debian's formats log the
    Referer, httpd's error lines name it, and a scan keeps it as the visit's referer,
    which the visit listings, the CSV export and webhooks show: each gets it redacted,
    whatever the spelling. The API's answers ask browsers to send no Referer at all."""
    tok = logged.token("acme")
    with Api(logged, logged.token("acme")) as a:
        t = a.post("/tracker", json={"redirect_url": "https://example.com/r"})
        assert t.status_code == 200, t.text
        assert t.headers["Referrer-Policy"] == "no-referrer"
        t = t.json()
        assert a.get("/account").headers["Referrer-Policy"] == "no-referrer"
        assert a.get("/nothing").headers["Referrer-Policy"] == "no-referrer"
        sent = []
        for name in ("api_token",) + SPELLINGS:
            page = "%s/tracker/%d?x=1&%s=%s" % (logged.api_base, t["tracker_id"], name, tok)
            assert raw_request(logged, "GET /q/%s HTTP/1.1" % t["code"],
                               [("Referer", page)]) == 302, name
            assert raw_request(logged, "GET /l/%s HTTP/1.1" % t["code"],
                               [("Referer", page)]) == 302, name
            # httpd's error line about a path it refuses names the Referer
            assert raw_request(logged, "GET /api/%zz HTTP/1.1",
                               [("Referer", page)]) == 400, name
            sent.append(page.replace(tok, "[redacted]"))
        r = a.get("/visits/tracker/%d" % t["tracker_id"], params={"rows": 100})
        assert r.status_code == 200, r.text
        assert sorted(v["referer"] for v in r.json()["data"]) == sorted(sent * 2)
        csv = a.get("/visits/tracker/%d/download/csv" % t["tracker_id"])
        assert csv.status_code == 200 and "[redacted]" in csv.text and tok[:20] not in csv.text
    wait_until(lambda: read_log(logged, "combined.log").count('"GET /api/%zz HTTP/1.1" 400')
               >= len(sent), timeout=10, what="the requests in the log")
    assert re.search(r"AH10244: .*, referer: http://127\.0\.0\.1:%d/api/tracker/%d\?x=1&"
                     r"api_token=\[redacted\]" % (logged.port, t["tracker_id"]),
                     logged.error_log()), logged.error_log()[-2000:]
    assert tok[:20] not in logs(logged)


def test_tokens_in_requests_httpd_refuses_and_in_odd_places_reach_no_log():
    """A request httpd refuses while reading its headers (a bad header line, an Expect it
    does not know, two Host headers) never comes to the module's first hook: its Referer
    is still logged redacted. A path with an encoded slash, which httpd refuses after the
    URI is read, is named redacted in its line at LogLevel info (AH00026). A token after a
    fragment, a raw space or a comma (two Referer headers joined) is redacted too, in the
    request line and in the Referer, and the visit a scan records keeps none."""
    srv = logging_server(loglevel="info")
    try:
        tok = srv.token("acme")
        page = "http://127.0.0.1/page?api_token=" + tok
        for headers, status in (([("Bad Header", "1")], 400), ([("Expect", "foo")], 417),
                                ([("Host", "other")], 400)):
            assert raw_request(srv, "GET /api/health HTTP/1.1",
                               [("Referer", page)] + headers) == status, headers
        assert raw_request(srv, "GET /api/tracker/show/a%2Fb?api_token=" + tok
                           + " HTTP/1.1", []) == 404
        assert raw_request(srv, "GET /api/account?a=1#&api_token=" + tok + " HTTP/1.1",
                           []) == 400
        with Api(srv, srv.token("acme")) as a:
            t = a.post("/tracker", json={"redirect_url": "https://example.com/r"}).json()
            odd = ("http://127.0.0.1/p?a#&api_token=" + tok,
                   "http://127.0.0.1/p?x=a b&api_token=" + tok)
            for referer in odd:
                assert raw_request(srv, "GET /q/%s HTTP/1.1" % t["code"],
                                   [("Referer", referer)]) == 302, referer
            assert raw_request(srv, "GET /q/%s HTTP/1.1" % t["code"],
                               [("Referer", "http://127.0.0.1/p?a=1"),
                                ("Referer", page)]) == 302
            r = a.get("/visits/tracker/%d" % t["tracker_id"])
            referers = [v["referer"] for v in r.json()["data"]]
            assert len(referers) == 3 and all("[redacted]" in x for x in referers), referers
            assert tok[:20] not in r.text

        def written():
            combined = read_log(srv, "combined.log")
            assert combined.count('"GET /api/health HTTP/1.1"') == 3
            assert combined.count('?api_token=[redacted]"') >= 3
            assert re.search(r"AH00026: .*\(/api/tracker/show/a%2Fb\?api_token=\[redacted\]\)",
                             srv.error_log())
            return True
        wait_until(written, timeout=10, ignore=(AssertionError,), what="the requests logged")
        for name in os.listdir(os.path.join(srv.dir, "logs")):
            text = read_log(srv, name)
            if name == "error.log":
                # (httpd's own line about an Expect it refuses, at info, is written while
                # the headers are read, before any module runs: docs/api.md says so)
                text = "".join(l for l in text.splitlines(True) if "AH00570:" not in l)
            assert tok[:20] not in text, (name, [l for l in text.splitlines() if tok[:20] in l])
    finally:
        srv.cleanup()


def test_another_application_keeps_its_own_api_token_parameter(logged):
    """Only the request line is redacted before the handlers run: other handlers on
    the server (here mod_rewrite's redirect) see the query string as sent."""
    r = requests.get(logged.base + "/other?api_token=abc123&x=1", timeout=10,
                     allow_redirects=False)
    assert r.status_code == 302
    assert r.headers["Location"].endswith("/elsewhere?api_token=abc123&x=1")
    wait_until(lambda: '"GET /other?api_token=[redacted]&x=1 HTTP/1.1" 302'
               in read_log(logged, "combined.log"), timeout=10, what="the redirect in the log")


HEADER_LOGS = """
LoadModule http2_module {lib}/mod_http2.so
Protocols h2c http/1.1
<VirtualHost *:*>
    ServerName plain.example
</VirtualHost>
<VirtualHost *:*>
    ServerName debug.example
    LogLevel warn http:trace4
</VirtualHost>
<VirtualHost *:*>
    ServerName debug2.example
    LogLevel warn http2:trace2
</VirtualHost>
<VirtualHost *:*>
    ServerName debug3.example
    LogLevel warn core:trace5
</VirtualHost>
"""


def test_a_server_whose_debug_lines_write_the_request_headers_is_warned_at_start():
    """httpd writes every request header to the error log from http:trace4 (mod_http2 from
    http2:trace2), Authorization and its token included, and each request line as read
    (?api_token= and all) from core:trace5: the module cannot keep the token out of those
    lines, so it says so at start-up, for each virtual host set to log them (QRT00124), and
    says nothing for the others."""
    srv = start_server(extra=HEADER_LOGS.format(lib=apxs("LIBEXECDIR")),
                       accounts=[("acme", "professional")])
    try:
        tok = srv.token("acme")
        warned = [l for l in srv.error_log().splitlines() if "QRT00124" in l]
        assert len(warned) == 3, warned
        assert any("http:trace4" in l and "headers" in l and "(debug.example)" in l
                   for l in warned), warned
        assert any("http2:trace2" in l and "(debug2.example)" in l for l in warned), warned
        assert any("core:trace5" in l and "?api_token=" in l and "(debug3.example)" in l
                   for l in warned), warned
        assert all("[qrtrack:warn]" in l for l in warned), warned
        # what the warning is about: httpd's own line names the header, token and all
        r = requests.get(srv.api_base + "/account", timeout=10,
                         headers={"Host": "debug.example", "Authorization": "Bearer " + tok})
        assert r.status_code == 200
        wait_until(lambda: "Authorization: Bearer " + tok in srv.error_log(), timeout=10,
                   what="httpd's trace line of the request's headers")
    finally:
        srv.stop()
        srv.cleanup()
    # set for the whole server: one line, for the main server, not one per virtual host
    srv = start_server(extra="LogLevel warn http:trace5\n" + HEADER_LOGS.format(
        lib=apxs("LIBEXECDIR")))
    try:
        warned = [l for l in srv.error_log().splitlines() if "QRT00124" in l]
        assert len(warned) == 3, warned
        assert any("http:trace4" in l and "(the main server " in l for l in warned), warned
        assert any("http2:trace2" in l and "(debug2.example)" in l for l in warned), warned
    finally:
        srv.stop()
        srv.cleanup()
    srv = start_server(accounts=[("acme", "professional")])
    try:
        assert "QRT00124" not in srv.error_log()
    finally:
        srv.stop()
        srv.cleanup()


CORS = "QRTrackCORSOrigin https://app.example.com http://localhost:8080\n"


@pytest.fixture(scope="module")
def cors():
    srv = start_server(extra=CORS, accounts=[("acme", "professional")])
    yield srv
    srv.cleanup()


def test_a_preflight_from_an_allowed_origin_needs_no_token(cors):
    r = requests.options(cors.api_base + "/tracker", timeout=10, headers={
        "Origin": "https://app.example.com", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})
    assert r.status_code == 204, r.text
    assert r.content == b""
    assert r.headers["Access-Control-Allow-Origin"] == "https://app.example.com"
    assert r.headers["Allow"] == "GET, HEAD, POST, OPTIONS"
    assert r.headers["Access-Control-Allow-Methods"] == "GET, HEAD, POST, OPTIONS"
    allowed = [h.strip().lower() for h in r.headers["Access-Control-Allow-Headers"].split(",")]
    assert "authorization" in allowed and "content-type" in allowed
    assert int(r.headers["Access-Control-Max-Age"]) > 0
    assert "Origin" in r.headers["Vary"]
    assert "X-RateLimit-Remaining" not in r.headers
    # Paths with an id: their own methods.
    r = requests.options(cors.api_base + "/tracker/12", timeout=10, headers={
        "Origin": "http://localhost:8080", "Access-Control-Request-Method": "PATCH"})
    assert r.status_code == 204
    assert r.headers["Access-Control-Allow-Origin"] == "http://localhost:8080"
    assert r.headers["Access-Control-Allow-Methods"] == "PATCH, DELETE, OPTIONS"


def test_other_origins_get_no_cors_headers(cors):
    for origin in ("https://evil.example", "https://app.example.com.evil.example",
                   "http://app.example.com", "null"):
        r = requests.options(cors.api_base + "/tracker", timeout=10, headers={
            "Origin": origin, "Access-Control-Request-Method": "POST"})
        assert r.status_code == 204
        assert "Access-Control-Allow-Origin" not in r.headers
        assert "Access-Control-Allow-Methods" not in r.headers
        r = requests.get(cors.api_base + "/tracker", timeout=10, headers={"Origin": origin})
        assert r.status_code == 401
        assert "Access-Control-Allow-Origin" not in r.headers


def test_cors_answers_carry_the_origin_on_success_and_on_errors(cors):
    tok = cors.token("acme")
    with Api(cors, tok) as a:
        r = a.get("/tracker", headers={"Origin": "https://app.example.com"})
        assert r.status_code == 200
        assert r.headers["Access-Control-Allow-Origin"] == "https://app.example.com"
        exposed = r.headers["Access-Control-Expose-Headers"]
        for h in ("X-RateLimit-Remaining", "Retry-After", "ETag", "Content-Disposition"):
            assert h in exposed
        r = a.get("/tracker/show/999999", headers={"Origin": "https://app.example.com"})
        assert r.status_code == 404
        assert r.headers["Access-Control-Allow-Origin"] == "https://app.example.com"
    r = requests.get(cors.api_base + "/account", timeout=10,
                     headers={"Origin": "https://app.example.com"})
    assert r.status_code == 401
    assert r.headers["Access-Control-Allow-Origin"] == "https://app.example.com"
    # The OpenAPI document is public: any origin, said once.
    r = requests.get(cors.api_base + "/openapi.json", timeout=10,
                     headers={"Origin": "https://app.example.com"})
    assert r.status_code == 200 and r.headers["Access-Control-Allow-Origin"] == "*"


def raw_exchange(server, head, body):
    """Sends head (its lines), then, once the server answered "100 Continue", body; the
    status lines read, in order (a client that waits for it forever: an answer that neither
    refuses nor says 100 first times out)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        f = sock.makefile("rb")
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        seen = []
        while True:
            status = f.readline()
            if not status:
                return seen
            seen.append(int(status.split()[1]))
            length = 0
            while True:
                line = f.readline()
                if line in (b"\r\n", b"\n", b""):
                    break
                k, _, v = line.partition(b":")
                if k.strip().lower() == b"content-length":
                    length = int(v)
            f.read(length)
            if seen[-1] != 100:
                return seen
            sock.sendall(body)


def test_a_client_waiting_for_100_continue_is_refused_before_it_sends_its_body(server,
                                                                               token):
    """With its token in the header or the query, a request that waits for "100
    Continue" is answered 401, 404 or 405 first: it was told to go on, sent its body, then
    refused. A good one goes on as before."""
    body = json.dumps({"redirect_url": "https://example.com/e"}).encode()

    def head(path, auth, method="POST"):
        return ["%s /api%s HTTP/1.1" % (method, path), "Host: localhost",
                "Content-Type: application/json", "Content-Length: %d" % len(body),
                "Expect: 100-continue", "Connection: close"] + (
                    ["Authorization: Bearer " + auth] if auth else [])
    assert raw_exchange(server, head("/tracker", "qrt_" + "x" * 40), body) == [401]
    assert raw_exchange(server, head("/tracker?api_token=qrt_%s" % ("y" * 40), None), body) \
        == [401]
    assert raw_exchange(server, head("/nope", token), body) == [404]
    assert raw_exchange(server, head("/account", token, method="PUT"), body) == [405]
    assert raw_exchange(server, head("/tracker", token), body) == [100, 200]


def test_a_wrong_method_or_path_is_405_or_404_whatever_the_body(server, token):
    """The route is found before the body is read as JSON or a form: a wrong body of a
    wrong request said 400 or 415."""
    with Api(server, token) as a:
        for method, path, kw in (("PUT", "/account", {"data": "abc"}),
                                 ("PUT", "/account", {"data": "abc",
                                                      "headers": {"Content-Type": "text/plain"}}),
                                 ("DELETE", "/tracker/show/1", {"data": "a=%zz", "headers": {
                                     "Content-Type": "application/x-www-form-urlencoded"}})):
            r = a.request(method, path, **kw)
            assert r.status_code == 405 and r.headers["Allow"], (method, path, r.text)
        r = a.request("POST", "/nope", data="[1", headers={"Content-Type": "application/json"})
        assert r.status_code == 404, r.text
        # (a right route still says what is wrong with its body)
        r = a.request("POST", "/tracker", data="{", headers={"Content-Type": "application/json"})
        assert r.status_code == 400, r.text


def test_a_parameter_given_twice_is_422_but_lists_take_many(server, token):
    """A scalar parameter given twice (in the query or a form body, in any case) is 422
    naming it: the first value went through and the second, valid or not, was never
    looked at. The lists (trackers, tags) take a name as many times as they like."""
    with Api(server, token) as a:
        t = a.post("/tracker", json={"redirect_url": "https://example.com/twice"}).json()
        for path, query in (("/tracker", "rows=1&rows=5000"), ("/tracker", "rows=5000&rows=1"),
                            ("/tracker", "rows=1&ROWS=2"),
                            ("/report/", "report=name&report=bogus"),
                            ("/tracker/%d/qrcode" % t["tracker_id"], "size=300&size=99999")):
            r = a.get("%s?%s" % (path, query))
            assert r.status_code == 422 and "more than once" in r.text, (path, query, r.text)
        r = a.post("/tracker", data="redirect_url=https%3A%2F%2Fa.example%2F&redirect_url="
                   "https%3A%2F%2Fb.example%2F",
                   headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert r.status_code == 422 and "redirect_url" in r.json()["errors"], r.text
        # the lists
        r = a.get("/report/?report=name&trackers=%d&trackers=%d" % (t["tracker_id"],
                                                                    t["tracker_id"]))
        assert r.status_code == 200, r.text
        r = a.get("/report/?report=name&trackers[]=%d&trackers[]=%d" % (t["tracker_id"],
                                                                        t["tracker_id"]))
        assert r.status_code == 200, r.text
        r = a.post("/tracker", data="redirect_url=https%3A%2F%2Fa.example%2F&tags[]=x&tags[]=y",
                   headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert r.status_code == 200 and sorted(r.json()["tags"]) == ["x", "y"], r.text


def test_an_unknown_parameter_of_a_report_or_listing_is_422_naming_it(server, token):
    """A parameter that the reports, the visits and the ZIP of images do not take was
    ignored: "tracker=5" for "trackers" answered the report of every tracker, "serach" the
    visits unsearched, as if each were what was asked. It is 422 naming it and what the
    endpoint takes; api_token and "_" (a cache buster) go everywhere, names in any case as
    the others; the export takes a listing's page and rows (and ignores them)."""
    with Api(server, token) as a:
        t = a.post("/tracker", json={"redirect_url": "https://example.com/q"}).json()
        tid = t["tracker_id"]
        for path, query, unknown in (
                ("/report/", "report=name&tracker=%d" % tid, {"tracker"}),
                ("/report/tag-crosstab", "row=a&col=b&visit_start_end_=x", {"visit_start_end_"}),
                ("/dashboard/scansAnalytics", "date_start=2026-01-01", {"date_start"}),
                ("/visits/tracker/%d" % tid, "serach=iphone", {"serach"}),
                ("/visits/tracker/%d/download/csv" % tid, "since=3", {"since"}),
                ("/tracker/qrcodes", "tracker=%d" % tid, {"tracker"}),
                ("/report/", "report=name&a=1&b=2&c=3&d=4&e=5&f=6&g=7", {"a", "b", "c", "d", "e"})):
            r = a.get("%s?%s" % (path, query))
            assert r.status_code == 422, (path, query, r.text)
            assert set(r.json()["errors"]) == unknown, (path, query, r.text)
        r = a.get("/report/?report=name&tracker=%d" % tid)
        assert r.json()["errors"]["tracker"] == ["Unknown parameter 'tracker': this endpoint "
                                                 "takes report, trackers, visit_start and "
                                                 "visit_start_end."], r.text
        r = a.head("/report/?report=name&nope=1")
        assert r.status_code == 422
        # in a POST's body too
        r = a.post("/report/", json={"report": "name", "tracker": [tid]})
        assert r.status_code == 422 and set(r.json()["errors"]) == {"tracker"}, r.text
        r = a.post("/report/", data={"report": "name", "Tracker": str(tid)})
        assert r.status_code == 422 and set(r.json()["errors"]) == {"Tracker"}, r.text
        # what is taken
        for path, query in (("/report/", "REPORT=name&trackers[0]=%d&_=1700000000" % tid),
                            ("/report/", "report=name&trackers=%d&api_token=%s" % (tid, token)),
                            ("/visits/tracker/%d" % tid, "search=iph&since_id=0&rows=5&page=1"),
                            ("/visits/tracker/%d/download/csv" % tid, "rows=5&page=2"),
                            ("/tracker/qrcodes", "trackers=%d&format=svg&size=100" % tid)):
            r = a.get("%s?%s" % (path, query))
            assert r.status_code == 200, (path, query, r.text)


def test_options_without_cors_configured(server):
    r = requests.options(server.api_base + "/tracker/show/5", timeout=10,
                         headers={"Origin": "https://app.example.com",
                                  "Access-Control-Request-Method": "GET"})
    assert r.status_code == 204
    assert r.headers["Allow"] == "GET, HEAD, OPTIONS"
    assert not [h for h in r.headers if h.lower().startswith("access-control-")]
    for path in ("/openapi.json", "/health"):
        r = requests.options(server.api_base + path, timeout=10)
        assert r.status_code == 204 and r.headers["Allow"] == "GET, HEAD, OPTIONS"
    r = requests.options(server.api_base + "/nothing/here", timeout=10)
    assert r.status_code == 404
    assert r.json() == {"message": "Not Found."}


def test_a_star_allows_every_origin():
    srv = start_server(extra="QRTrackCORSOrigin *\n")
    try:
        r = requests.options(srv.api_base + "/qrCode", timeout=10, headers={
            "Origin": "https://anyone.example", "Access-Control-Request-Method": "POST"})
        assert r.status_code == 204
        assert r.headers["Access-Control-Allow-Origin"] == "*"
    finally:
        srv.cleanup()


@pytest.mark.parametrize("value", ["https://app.example.com/", "https://app.example.com/x",
                                   "ftp://app.example.com", "app.example.com",
                                   "https://app.example.com?x=1"])
def test_a_cors_origin_that_is_not_an_origin_fails_configtest(value):
    rc, out = configtest("QRTrackCORSOrigin %s\n" % value)
    assert rc != 0
    assert "QRTrackCORSOrigin" in out and "is not an origin" in out


def test_a_cors_origin_s_port_is_a_port_and_its_scheme_s_own_is_left_out():
    """A browser's Origin leaves out its scheme's own port: configured with it
    (http://app.example.com:80), the origin matched no request. A port past 65535 is no
    port."""
    for value in ("https://app.example.com:99999", "https://app.example.com:0"):
        rc, out = configtest("QRTrackCORSOrigin %s\n" % value)
        assert rc != 0 and "QRTrackCORSOrigin" in out, (value, out)
    srv = start_server(extra="QRTrackCORSOrigin http://app.example.com:80 "
                             "https://secure.example.com:443 https://other.example.com:8443\n",
                       accounts=[("acme", "professional")])
    try:
        for origin in ("http://app.example.com", "https://secure.example.com",
                       "https://other.example.com:8443"):
            r = requests.options(srv.api_base + "/tracker", timeout=10, headers={
                "Origin": origin, "Access-Control-Request-Method": "POST"})
            assert r.headers.get("Access-Control-Allow-Origin") == origin, (origin, r.headers)
    finally:
        srv.cleanup()


def test_health_needs_no_token_and_names_the_version(server):
    with Api(server) as a:
        r = a.get("/health")
        assert r.status_code == 200, r.text
        h = r.json()
        assert h["status"] == "ok" and h["database"] == "ok"
        assert h["version"] == VERSION
        assert h["driver"] == server.driver
        assert h["schema"] >= 1
        assert "X-RateLimit-Remaining" not in r.headers
        assert a.head("/health").status_code == 200
        r = a.post("/health")
        assert r.status_code == 405 and r.headers["Allow"] == "GET, HEAD"


def test_health_says_503_while_the_database_cannot_serve():
    srv = start_server()
    try:
        assert requests.get(srv.api_base + "/health", timeout=10).status_code == 200
        # The schema table emptied from outside: the module cannot trust the database.
        saved = srv.sql("SELECT version FROM qrt_schema").split()
        srv.sql("DELETE FROM qrt_schema")
        r = requests.get(srv.api_base + "/health", timeout=10)
        assert r.status_code == 503, r.text
        assert r.json()["status"] == "unavailable" and r.json()["database"] == "unavailable"
        assert int(r.headers["Retry-After"]) >= 1
        assert "QRT00069" in srv.error_log()
        for v in saved:
            srv.sql("INSERT INTO qrt_schema (version) VALUES (%d)" % int(v))
        assert requests.get(srv.api_base + "/health", timeout=10).status_code == 200
    finally:
        srv.cleanup()


def test_trace_is_off_in_the_shipped_configs(server):
    s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    try:
        s.sendall(b"TRACE /api/account HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  b"Authorization: Bearer qrt_secret\r\nConnection: close\r\n\r\n")
        answer = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            answer += chunk
    finally:
        s.close()
    assert answer.startswith(b"HTTP/1.1 405"), answer[:200]
    assert b"qrt_secret" not in answer
    for name in ("httpd.conf.in", "qrtrack-site.conf"):
        with open(os.path.join(TOP, "conf", name)) as f:
            assert re.search(r"^\s*TraceEnable off\s*$", f.read(), re.M | re.I), name


# A second site on the same server with files of its own under the module's paths (its
# <Location>s set no handler of the module), one directory of them denied.
FILES_SITE = """
<VirtualHost *:*>
    ServerName files.example
    DocumentRoot "{root}"
    <Location /q>
        SetHandler none
    </Location>
    <Location /api>
        SetHandler none
    </Location>
    <Directory "{root}">
        Require all granted
    </Directory>
    <Directory "{root}/api">
        Require all denied
    </Directory>
</VirtualHost>
<VirtualHost *:*>
    ServerName qr.example
</VirtualHost>
"""


def test_the_module_maps_its_own_paths_to_no_file_and_no_other_site_s():
    """The module's handlers serve no file: a request for them skips httpd's mapping to a
    file (a path segment longer than a file name was 403 from it, in HTML), and only for
    them: another site's files under the same paths keep their own access rules."""
    # (where the server's user can read them)
    root = tempfile.mkdtemp(prefix="qrtrack-site-")
    os.chmod(root, 0o755)
    for d in ("q", "api"):
        os.mkdir(os.path.join(root, d), 0o755)
        with open(os.path.join(root, d, "page.txt"), "w") as f:
            f.write("page of the other site\n")
        os.chmod(os.path.join(root, d, "page.txt"), 0o644)
    srv = start_server(extra=FILES_SITE.format(root=root), accounts=[("acme", "professional")])
    try:
        files = {"Host": "files.example:%d" % srv.port}
        r = requests.get(srv.base + "/q/page.txt", headers=files, timeout=10)
        assert (r.status_code, r.text) == (200, "page of the other site\n")
        assert requests.get(srv.base + "/api/page.txt", headers=files,
                            timeout=10).status_code == 403
        with Api(srv, srv.token("acme")) as a:
            qr = {"Host": "qr.example:%d" % srv.port}
            t = a.post("/tracker", json={"redirect_url": "https://example.com/"},
                       headers=qr).json()
            for n in (300, 4000):
                r = a.get("/tracker/show/" + "7" * n, headers=qr)
                assert r.status_code in (404, 422), r.text[:200]
                assert r.headers["Content-Type"].startswith("application/json")
            r = requests.get(srv.base + "/q/" + "z" * 4000, headers=qr, timeout=10,
                             allow_redirects=False)
            assert r.status_code == 404, r.text[:200]
            r = requests.get(t["scan_url"], headers=qr, timeout=10, allow_redirects=False)
            assert r.status_code == 302
            # (TraceEnable off holds for the module's paths: no scan answers a TRACE)
            r = requests.request("TRACE", t["scan_url"], headers=qr, timeout=10)
            assert r.status_code == 405
            assert a.get("/tracker/show/%d" % t["tracker_id"],
                         headers=qr).json()["totalScans"] == 1
        assert "AH00127" not in srv.error_log()
    finally:
        srv.stop()
        srv.cleanup()
        shutil.rmtree(root)


def raw_answers(srv, data, n=1):
    """data sent as written on one connection, then n answers read:
    [(status, {header: value} with lower-case names, body)]."""
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    out = []
    try:
        s.sendall(data)
        f = s.makefile("rb")
        for _ in range(n):
            status = int(f.readline().split()[1])
            headers = {}
            while True:
                line = f.readline()
                if line in (b"\r\n", b""):
                    break
                k, _, v = line.decode("latin-1").partition(":")
                headers[k.strip().lower()] = v.strip()
            length = int(headers.get("content-length", 0))
            head = data.startswith(b"HEAD ") and not out
            out.append((status, headers, b"" if head else f.read(length)))
    finally:
        s.close()
    return out


# Requests that httpd itself refuses before any handler runs, on the API's paths.
REFUSED = [
    (b"GET /api/tracker/1%00 HTTP/1.1\r\nHost: x\r\n", 404, "Not Found."),
    (b"GET /api/tracker/1%2f2 HTTP/1.1\r\nHost: x\r\n", 404, "Not Found."),
    (b"GET /api/%zz HTTP/1.1\r\nHost: x\r\n", 400, "Bad Request."),
    (b"GET /api/account HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 9000 + b"\r\n", 400,
     "Bad Request."),
    (b"GET /api/account HTTP/1.1\r\n", 400, "Bad Request."),
    (b"POST /api/tracker HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n", 400,
     "Bad Request."),
    (b"POST /api/tracker HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n", 400,
     "Bad Request."),
    (b"TRACE /api/account HTTP/1.1\r\nHost: x\r\n", 405, "Method Not Allowed."),
]


@pytest.mark.parametrize("request_head,status,message", REFUSED,
                         ids=["nul", "encoded-slash", "bad-escape", "long-header", "no-host",
                              "bad-length", "bad-encoding", "trace"])
def test_what_httpd_refuses_on_the_api_paths_is_a_json_error(server, request_head, status,
                                                             message):
    [(got, headers, body)] = raw_answers(server, request_head
                                         + b"Authorization: Bearer qrt_secret\r\n"
                                         b"Connection: close\r\n\r\n")
    assert got == status, body[:300]
    assert headers["content-type"] == "application/json; charset=utf-8", headers
    assert json.loads(body) == {"message": message}
    assert b"qrt_secret" not in body


def test_a_refused_request_keeps_its_connection_and_a_head_gets_no_body(server):
    tok = server.unused_token("acme")
    [(s1, h1, b1), (s2, h2, b2)] = raw_answers(
        server, b"GET /api/tracker/1%00 HTTP/1.1\r\nHost: x\r\n\r\n"
        b"GET /api/account HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
        + tok.encode() + b"\r\nConnection: close\r\n\r\n", n=2)
    assert (s1, json.loads(b1)) == (404, {"message": "Not Found."})
    assert h1.get("connection", "").lower() != "close"
    assert s2 == 200 and json.loads(b2)["name"] == "acme"
    [(s3, h3, b3)] = raw_answers(server, b"HEAD /api/tracker/1%00 HTTP/1.1\r\nHost: x\r\n"
                                         b"Connection: close\r\n\r\n")
    assert s3 == 404 and h3["content-type"] == "application/json; charset=utf-8"
    assert int(h3["content-length"]) == len(b1) and b3 == b""


def test_outside_the_api_and_under_an_errordocument_httpd_keeps_its_pages():
    """The scan path serves browsers, another path another application: httpd's HTML
    pages stay. An ErrorDocument the administrator set under the API's <Location>
    stays theirs."""
    srv = start_server(extra='<Location /api/tracker>\n    ErrorDocument 404 "not here"\n'
                             '</Location>\n')
    try:
        for target in (b"/q/ab%00", b"/elsewhere/ab%00"):
            [(status, headers, body)] = raw_answers(
                srv, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert status in (400, 404) and headers["content-type"].startswith("text/html")
        [(status, headers, body)] = raw_answers(
            srv, b"GET /api/tracker/1%00 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert (status, body) == (404, b"not here")
        # ... and the other paths of the API still answer JSON
        [(status, headers, body)] = raw_answers(
            srv, b"GET /api/style/1%00 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert (status, json.loads(body)) == (404, {"message": "Not Found."})
    finally:
        srv.cleanup()
