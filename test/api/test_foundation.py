"""Foundation: authentication, plans, errors, body limits, rate limits, directives."""
import concurrent.futures
import os
import re
import subprocess

import pytest
import requests

from conftest import Api, apxs, configtest, HTTPD, Server, start_server, started
from lib.wait import wait_until


def json_error(r, status):
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["Content-Type"].startswith("application/json")
    body = r.json()
    assert isinstance(body.get("message"), str) and body["message"]
    return body


# -- authentication ------------------------------------------------------------

def test_no_token_is_401(anon):
    body = json_error(anon.get("/account"), 401)
    assert body == {"message": "Unauthenticated."}


def test_unknown_and_malformed_tokens_are_401(anon):
    for h in ["Bearer qrt_nope", "Bearer ", "Basic dXNlcjpwYXNz", "Bearer " + "x" * 5000,
              "Bearer qrt_a\tb"]:
        json_error(anon.get("/account", headers={"Authorization": h}), 401)
    json_error(anon.get("/account", params={"api_token": "' OR 1=1 --"}), 401)


def test_bearer_header(api):
    r = api.get("/account")
    assert r.status_code == 200
    assert r.json() == {"name": "acme", "plan": "professional", "rate_limit": 120}
    assert r.headers["Content-Type"] == "application/json; charset=utf-8"


def test_query_parameter(anon, token):
    r = anon.get("/account", params={"api_token": token})
    assert r.status_code == 200 and r.json()["name"] == "acme"


def test_json_body(anon, token):
    r = anon.get("/account", json={"api_token": token})
    assert r.status_code == 200 and r.json()["name"] == "acme"


def test_urlencoded_body(anon, token):
    r = anon.get("/account", data={"api_token": token})
    assert r.status_code == 200 and r.json()["name"] == "acme"


def test_multipart_body(anon, token):
    r = anon.get("/account", files={"api_token": (None, token)})
    assert r.status_code == 200 and r.json()["name"] == "acme"


def test_revoked_token_is_401(server, anon):
    tok = server.token("acme")
    assert anon.get("/account", params={"api_token": tok}).status_code == 200
    tid = server.admin("token", "list", "acme").stdout.strip().splitlines()[-1].split("\t")[0]
    server.admin("token", "revoke", tid)
    json_error(anon.get("/account", params={"api_token": tok}), 401)


def test_tokens_are_stored_hashed(server, token):
    stored = server.sql("SELECT prefix, digest FROM tokens")
    assert token not in stored
    assert token[:8] in stored


def test_plans_without_api_access_get_403(server, anon):
    for account, plan in [("freebie", "free"), ("startup", "starter")]:
        tok = server.token(account)
        body = json_error(anon.get("/account", params={"api_token": tok}), 403)
        assert plan in body["message"] and "Professional" in body["message"]


def test_enterprise_plan_has_access(server, anon):
    tok = server.token("bigco")
    r = anon.get("/account", params={"api_token": tok})
    assert r.status_code == 200
    assert r.json() == {"name": "bigco", "plan": "enterprise", "rate_limit": 300}


def test_plan_change_takes_effect(server, anon):
    server.account("mover", "professional")
    tok = server.token("mover")
    assert anon.get("/account", params={"api_token": tok}).status_code == 200
    server.admin("account", "plan", "mover", "free")
    json_error(anon.get("/account", params={"api_token": tok}), 403)


# -- routing and errors ----------------------------------------------------------

def test_unknown_route_is_404_json(api):
    for path in ["/nope", "/account/x", "/", "/tracker/show"]:
        body = json_error(api.get(path), 404)
        assert "errors" not in body


def test_wrong_method_is_405_with_allow(api):
    r = api.post("/account", json={})
    json_error(r, 405)
    assert r.headers["Allow"] == "GET, HEAD"


def test_head_answers_like_get_without_body(api):
    r = api.head("/account")
    assert r.status_code == 200 and r.content == b""


def test_trailing_slash_is_accepted(api):
    assert api.get("/account/").status_code == 200


# (on a route that takes a POST: a route that does not is 405 whatever the body)
def test_malformed_json_is_400(api):
    for body in [b"{bad", b"[1,2]", b'{"a":1,"a":2}', b'"x"', b'{"a":"\\u0000"}']:
        json_error(api.post("/tracker", data=body,
                             headers={"Content-Type": "application/json"}), 400)


def test_unsupported_content_type_is_415(api):
    json_error(api.post("/tracker", data=b"hello", headers={"Content-Type": "text/plain"}), 415)
    # a media type that only begins like a supported one is not it
    for ct in ("application/jsonx", "application/json-seq", "application/x-www-form-urlencoded2",
               "multipart/form-datax; boundary=x", "text/csvx"):
        body = b'{"redirect_url": "https://example.com/"}'
        json_error(api.post("/tracker", data=body, headers={"Content-Type": ct}), 415)
    r = api.post("/tracker", data=b'{"redirect_url": "https://example.com/"}',
                 headers={"Content-Type": "Application/JSON ; charset=utf-8"})
    assert r.status_code == 200, r.text


def test_body_over_limit_is_413_json(api):
    big = b"{" + b" " * (1024 * 1024 + 10) + b"}"
    r = api.post("/account", data=big, headers={"Content-Type": "application/json"})
    json_error(r, 413)


def test_chunked_body_over_limit_is_413_json(api):
    def gen():
        for _ in range(300):
            yield b" " * 4096
    r = api.post("/account", data=gen(), headers={"Content-Type": "application/json"})
    json_error(r, 413)


def test_broken_multipart_is_400(api):
    r = api.post("/tracker", data=b"--x\r\nno headers here",
                 headers={"Content-Type": "multipart/form-data; boundary=x"})
    json_error(r, 400)


def test_bad_query_encoding_is_400(server, token):
    import http.client
    import json
    for q in ["a=%zz", "a=%00", "a=%4"]:
        c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        c.request("GET", "/api/account?" + q, headers={"Authorization": "Bearer " + token})
        r = c.getresponse()
        assert r.status == 400, q
        assert "query" in json.loads(r.read())["message"]
        c.close()


# -- rate limits -------------------------------------------------------------------

def fire(server, token, n, path="/account"):
    def one(_):
        with Api(server, token) as s:
            return s.get(path)
    with concurrent.futures.ThreadPoolExecutor(max_workers=32) as ex:
        return list(ex.map(one, range(n)))


def test_rate_limit_headers_on_every_authenticated_response(api):
    r = api.get("/account")
    assert r.headers["X-RateLimit-Limit"] == "120"
    assert r.headers["X-RateLimit-Remaining"] == "119"
    r = api.get("/nope")
    assert r.status_code == 404
    assert r.headers["X-RateLimit-Remaining"] == "118"


def test_130_concurrent_requests_exactly_120_pass(server, token):
    rs = fire(server, token, 130)
    ok = [r for r in rs if r.status_code == 200]
    limited = [r for r in rs if r.status_code == 429]
    assert len(ok) == 120 and len(limited) == 10, sorted(r.status_code for r in rs)
    for r in limited:
        assert r.json() == {"message": "Too Many Attempts."}
        assert 1 <= int(r.headers["Retry-After"]) <= 60
        assert int(r.headers["X-RateLimit-Reset"]) > 0
        assert r.headers["X-RateLimit-Remaining"] == "0"
    assert sorted(int(r.headers["X-RateLimit-Remaining"]) for r in ok) == list(range(120))


def test_account_override_gets_exactly_300(server):
    tok = server.token("bigco")
    rs = fire(server, tok, 310)
    codes = [r.status_code for r in rs]
    assert codes.count(200) == 300 and codes.count(429) == 10
    assert all(r.headers["X-RateLimit-Limit"] == "300" for r in rs)


def test_limits_are_per_token(server, token):
    fire(server, token, 121)
    with Api(server, token) as s:
        assert s.get("/account").status_code == 429
    with Api(server, server.token("acme")) as s:
        assert s.get("/account").status_code == 200


def test_unauthenticated_requests_are_not_counted(server, token, anon):
    for _ in range(5):
        anon.get("/account")
    with Api(server, token) as s:
        assert s.get("/account").headers["X-RateLimit-Remaining"] == "119"


def test_full_rate_table_refuses_instead_of_passing():
    srv = Server(extra="QRTrackRateLimitSlots 16\n")
    try:
        srv.admin("init")
        srv.account("acme")
        toks = [srv.token("acme") for _ in range(20)]
        srv.start()
        codes = []
        for t in toks:
            with Api(srv, t) as s:
                codes.append(s.get("/account").status_code)
        assert codes[:16] == [200] * 16
        assert set(codes[16:]) == {503}
        with Api(srv, toks[-1]) as s:
            r = s.get("/account")
            assert r.status_code == 503 and int(r.headers["Retry-After"]) >= 1
        # A token that has a slot keeps being counted.
        with Api(srv, toks[0]) as s:
            assert s.get("/account").headers["X-RateLimit-Remaining"] == "118"
        assert "QRTrackRateLimitSlots" in srv.error_log()
    finally:
        srv.cleanup()


def test_rate_limit_off(server):
    srv, tok = started(extra="QRTrackRateLimit 0\n")
    try:
        rs = fire(srv, tok, 150)
        assert all(r.status_code == 200 for r in rs)
        assert "X-RateLimit-Limit" not in rs[0].headers
    finally:
        srv.cleanup()


def test_counters_survive_graceful_restart(server):
    srv, tok = started()
    try:
        fire(srv, tok, 100)
        subprocess.run([HTTPD, "-f", srv.conf,
                        "-k", "graceful"], check=True, capture_output=True)
        def account():
            with Api(srv, tok) as s:
                return [s.get("/account")]
        r = wait_until(account, timeout=20, interval=0.1, ignore=(requests.ConnectionError,),
                       what="the restarted server to answer")[0]
        assert r.status_code == 200
        assert int(r.headers["X-RateLimit-Remaining"]) == 19
    finally:
        srv.cleanup()


# -- configuration -------------------------------------------------------------------

def test_configtest_accepts_the_generated_config():
    rc, out = configtest("")
    assert rc == 0, out


def test_bad_directive_values_fail_configtest():
    for line, name in [("QRTrackRateLimit abc", "QRTrackRateLimit"),
                       ("QRTrackRateLimit -5", "QRTrackRateLimit"),
                       ("QRTrackRateLimit 99999999999999999999", "QRTrackRateLimit"),
                       ("QRTrackAccountRateLimit acme lots", "QRTrackAccountRateLimit"),
                       ("QRTrackAccountRateLimit \"bad name'\" 10", "QRTrackAccountRateLimit"),
                       ("QRTrackMaxBody 12x", "QRTrackMaxBody"),
                       ("QRTrackRateLimitSlots 0", "QRTrackRateLimitSlots"),
                       ("QRTrackPublicURL ftp://x", "QRTrackPublicURL"),
                       ("QRTrackAnonymizeIP maybe", "QRTrackAnonymizeIP"),
                       ("QRTrackGeoIPDatabase /nonexistent.mmdb", "QRTrackGeoIPDatabase")]:
        rc, out = configtest(line + "\n")
        assert rc != 0, line
        assert name in out, (line, out)


def test_what_the_config_names_outside_itself_is_checked_by_configtest(tmp_path):
    """Files and directories the directives name, and a <VirtualHost> of another database,
    fail `apache2 -t` naming the directive: Debian's `apachectl graceful` runs that test
    first, so a running server goes on rather than end at the restart (the checks ran
    only once the server started, which -t never does)."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("user_agent_parsers: [\n")
    ro = tmp_path / "root-only"
    ro.mkdir(mode=0o755)
    cases = [("QRTrackUserAgentRegexes /nonexistent.yaml", "QRTrackUserAgentRegexes"),
             ("QRTrackUserAgentRegexes %s" % bad, "QRTrackUserAgentRegexes"),
             ("QRTrackGeoIPDatabase /etc/passwd", "QRTrackGeoIPDatabase"),
             ("QRTrackSpoolDir /nonexistent/dir", "QRTrackSpoolDir"),
             ("<VirtualHost *:*>\nServerName z.example\nDBDParams /tmp/other.db\n"
              "</VirtualHost>", "DBDParams"),
             # (root's directory, which the server's User, www-data, cannot write)
             ("QRTrackSpoolDir %s" % ro, "QRTrackSpoolDir")]
    os.chmod(tmp_path, 0o755)
    for line, name in cases:
        rc, out = configtest(line + "\n")
        assert rc != 0 and name in out, (line, out)


def test_a_config_made_bad_under_a_running_server_fails_configtest_and_it_goes_on():
    srv = start_server(accounts=[("acme", "professional")])
    try:
        tok = srv.token("acme")
        with open(srv.conf, "a") as f:
            f.write("QRTrackUserAgentRegexes /nonexistent.yaml\n")
        p = subprocess.run([HTTPD, "-t", "-f", srv.conf], capture_output=True, text=True)
        assert p.returncode != 0 and "QRTrackUserAgentRegexes" in p.stdout + p.stderr
        with Api(srv, tok) as s:
            assert s.get("/account").status_code == 200
    finally:
        srv.cleanup()


def test_a_spool_directory_the_user_cannot_write_stops_the_start(tmp_path):
    """Else the server ran, and every scan of a database outage answered 503 with its
    visit lost, the spool's files being root's."""
    os.chmod(tmp_path, 0o755)
    ro = tmp_path / "spool"
    ro.mkdir(mode=0o755)
    srv = Server(extra="QRTrackSpoolDir %s\n" % ro, initialized=True)
    try:
        srv.init()
        # (through Server.start, so that a server that does start is stopped by its PID,
        # children included, when the test ends)
        with pytest.raises(AssertionError) as e:
            srv.start()
        out = str(e.value) + srv.error_log()
        assert re.search(r"QRT00108: QRTrackSpoolDir \S+ is not writable by the server's "
                         r"User", out), out
    finally:
        srv.cleanup()


def test_admin_cli_errors_exit_non_zero(server):
    for args in [("account", "add", "acme"), ("account", "add", "9lives"),
                 ("account", "add", "x", "--plan", "gold"), ("account", "plan", "nobody", "free"),
                 ("token", "add", "nobody"), ("token", "revoke", "999999"),
                 ("token", "revoke", "abc"), ("bogus",)]:
        p = server.admin(*args, check=False)
        assert p.returncode != 0, args
        assert p.stderr.strip(), args
        assert len(p.stderr.strip().splitlines()) == 1, (args, p.stderr)


def test_admin_token_names_are_text_and_unwritten_tokens_are_revoked(server):
    """A token's name is shown by `token list` (a line a token, tab-separated) and in the
    history: bytes that are not UTF-8 text, a tab or a line end are refused. A token the
    output could not show (a full disk, a closed output) is revoked again and the command
    fails: it was kept live, seen by nobody, and the command exited 0."""
    before = server.admin("token", "list", "acme").stdout.count("\n")
    for name in ("a\tb", "a\nb", "\x1b[31m", ""):
        p = server.admin("token", "add", "acme", "--name", name, check=False)
        assert p.returncode == 1 and "--name" in p.stderr, (name, p.stderr)
    p = subprocess.run(server.as_user + [server.admin_tool, "--driver", server.driver,
                                         "--params", server.db, "token", "add", "acme",
                                         "--name", "b\xff".encode("latin-1")],
                       capture_output=True)
    assert p.returncode == 1 and b"--name" in p.stderr, p.stderr
    with open("/dev/full", "w") as full:
        for extra in ((), ("--count", "5")):
            p = subprocess.run(server.as_user + [server.admin_tool, "--driver", server.driver,
                                                 "--params", server.db, "token", "add",
                                                 "acme", "--name", "lost", *extra],
                               stdout=full, stderr=subprocess.PIPE, text=True)
            assert p.returncode == 1 and "cannot write the new tokens" in p.stderr, p.stderr
    listed = server.admin("token", "list", "acme").stdout.splitlines()
    lost = [l for l in listed if "\tlost\t" in l]
    assert len(lost) == 6 and all(l.split("\t")[4] != "-" for l in lost), lost
    assert len(listed) == before + 6
    # and any command's output that cannot be written fails it
    with open("/dev/full", "w") as full:
        p = subprocess.run(server.as_user + [server.admin_tool, "--driver", server.driver,
                                             "--params", server.db, "account", "list"],
                           stdout=full, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 1 and "cannot write the output" in p.stderr, p.stderr


def test_admin_refuses_an_sqlite_database_that_ends_with_the_command(server):
    """An empty or in-memory SQLite database took the command (`account add` printed the
    new id, exit 0) and was gone at the next one."""
    for params in ("", ":memory:", "file:x?mode=memory"):
        p = subprocess.run([server.admin_tool, "--driver", "sqlite3", "--params", params,
                            "account", "add", "ghost"], capture_output=True, text=True)
        assert p.returncode == 1 and "is a file's path" in p.stderr, (params, p.stderr)
        assert p.stdout == "", p.stdout


def test_admin_help_is_asked_of_a_command_too(server):
    """`qrtrack-admin token --help` (or `trackers import -h`) said "bad arguments" and
    exited 2; it prints the commands, as `--help` does."""
    for args in (("--help",), ("token", "--help"), ("trackers", "import", "-h"),
                 ("account", "add", "--help")):
        p = server.admin(*args, check=False)
        assert p.returncode == 0 and "trackers import ACCOUNT" in p.stdout, (args, p.stderr)


def test_admin_spool_commands_take_only_a_spool(server):
    """`spool refused` and `spool retry` handed another SQLite file (the node's snapshot,
    SQLite's main database) refuse it and write nothing: they made it a spool, adding
    their tables to the main database."""
    files = [os.path.join(server.dir, "qrtrack-snapshot.db")]
    if server.backend == "sqlite":
        files.append(server.db)
    for f in files:
        assert os.path.exists(f), f
        for cmd in ("refused", "retry"):
            p = server.admin("spool", cmd, f, check=False)
            assert p.returncode == 1 and "is not a node's spool" in p.stderr, (f, p.stderr)
        tables = subprocess.run(server.as_user + ["sqlite3", "-readonly", f, "SELECT name FROM "
                                                  "sqlite_master WHERE name = 'refused'"],
                                capture_output=True, text=True, check=True).stdout
        assert tables.strip() == "", (f, tables)
    spool = os.path.join(server.dir, "qrtrack-spool.db")
    assert server.admin("spool", "refused", spool).returncode == 0


def test_admin_cli_lists(server):
    out = server.admin("account", "list").stdout
    assert "\tacme\tprofessional\t" in out and "\tfreebie\tfree\t" in out
    tok = server.token("other")
    out = server.admin("token", "list", "other").stdout
    assert tok[:8] in out and tok not in out
