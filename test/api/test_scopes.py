"""Token scopes and expiry (CONTRACT section 7, "Token scopes and history").

`qrtrack-admin token add ACCOUNT --scope read|write --expires TIME`: a read token gets 403
`This token is read-only.` on every route that the route table marks API_WRITES (every
route that creates, changes or deletes something), and reads as a write token does; a
token past its expiry gets the 401 of an unknown token. `token list` shows both.
"""
import os
import re
import time

import pytest

from conftest import TOP, Api
from lib.wait import wait_until

READ_ONLY = {"message": "This token is read-only."}


def route_table():
    """(method, pattern, access) of every route of mod_qrtrack_api.c's table."""
    with open(os.path.join(TOP, "mod_qrtrack", "mod_qrtrack_api.c"), encoding="utf-8") as f:
        src = f.read()
    table = src[src.index("api_routes[] = {"):]
    table = table[:table.index("};")]
    return re.findall(r'\{\s*"([A-Z]+)",\s*"([^"]+)",\s*(API_[A-Z]+),', table)


def path_of(pattern, tid):
    return pattern.replace("#", str(tid)).replace("*", str(tid))


@pytest.fixture
def read_api(server):
    with Api(server, server.token("acme", "--scope", "read", "--name", "viewer")) as s:
        yield s


def test_every_route_says_whether_it_writes():
    routes = route_table()
    assert len(routes) == len(re.findall(r'\{\s*"[A-Z]+",\s*"/', open(os.path.join(
        TOP, "mod_qrtrack", "mod_qrtrack_api.c"), encoding="utf-8").read()))
    for method, pattern, access in routes:
        if method == "GET":
            assert access == "API_READS", (method, pattern)
        elif (method, pattern) == ("POST", "/qrCode"):
            # An image of the text sent: nothing is stored.
            assert access == "API_READS"
        elif (method, pattern) in {("POST", "/report"), ("POST", "/report/tag-crosstab"),
                                   ("POST", "/dashboard/scansAnalytics")}:
            # The GETs' parameters in the body (long tracker lists): nothing is stored.
            assert access == "API_READS"
        else:
            assert access == "API_WRITES", (method, pattern)


def test_a_read_token_is_refused_every_write_route_and_changes_nothing(api, read_api, server):
    t = api.post("/tracker", json={"redirect_url": "https://example.com/keep",
                                   "name": "keep"}).json()
    before = api.get("/tracker", params={"rows": 1000}).json()
    history = api.get("/tracker/%d/history" % t["tracker_id"]).json()
    bodies = {"POST": {"redirect_url": "https://example.com/new"},
              "PATCH": {"redirect_url": "https://example.com/changed"}}
    writes = [(m, p) for m, p, a in route_table() if a == "API_WRITES"]
    assert {("POST", "/tracker"), ("POST", "/tracker/qrcode"), ("PATCH", "/tracker/#"),
            ("DELETE", "/tracker/#")} <= set(writes)
    for method, pattern in writes:
        path = path_of(pattern, t["tracker_id"])
        for kw in ({"json": bodies.get(method)}, {"data": {"redirect_url": "https://x.example/"}},
                   {"data": "{not json", "headers": {"Content-Type": "application/json"}}):
            r = read_api.request(method, path, **kw)
            assert r.status_code == 403, (method, path, r.status_code, r.text)
            assert r.json() == READ_ONLY
        # Through the query string and a body token too.
        r = server_request(server, read_api.token, method, path)
        assert r.status_code == 403 and r.json() == READ_ONLY
    assert api.get("/tracker", params={"rows": 1000}).json() == before
    assert api.get("/tracker/%d/history" % t["tracker_id"]).json() == history
    r = api.patch("/tracker/%d" % t["tracker_id"], json={"name": "still writable"})
    assert r.status_code == 200


def server_request(server, token, method, path):
    with Api(server) as s:
        return s.request(method, path, params={"api_token": token},
                         json={"redirect_url": "https://example.com/q"})


def test_a_read_token_reads_everything(api, read_api):
    t = api.post("/tracker", json={"redirect_url": "https://example.com/r",
                                   "tags": ["campaign:spring"]}).json()
    tid = t["tracker_id"]
    for path in ("/tracker", "/tracker/show/%d" % tid, "/tracker/analytics/%d" % tid,
                 "/tracker/%d/history" % tid, "/visits/tracker/%d" % tid,
                 "/visits/tracker/%d/download/csv" % tid, "/report/?report=name",
                 "/report/tag-crosstab?row=campaign&col=campaign",
                 "/dashboard/scansAnalytics", "/tracker/%d/qrcode" % tid):
        r = read_api.get(path)
        assert r.status_code == 200, (path, r.status_code, r.text)
    assert read_api.head("/tracker").status_code == 200
    r = read_api.post("/qrCode", json={"type": "url", "url": "https://example.com/"})
    assert r.status_code == 200 and r.headers["Content-Type"] == "image/png"
    assert read_api.get("/account").json()["token"] == {"scope": "read", "expires_at": None}
    # A plain write token's answer is what it was before scopes.
    assert api.get("/account").json() == {"name": "acme", "plan": "professional",
                                          "rate_limit": 120}


def test_an_expired_token_is_refused_as_an_unknown_one(server, anon):
    tok = server.token("acme", "--expires", "1h")
    with Api(server, tok) as s:
        acc = s.get("/account").json()
        assert acc["token"]["scope"] == "write"
        at = time.strptime(acc["token"]["expires_at"], "%Y-%m-%dT%H:%M:%S+0000")
        assert 3500 < time.mktime(at) - time.mktime(time.gmtime()) <= 3600
        unknown = anon.get("/account", headers={"Authorization": "Bearer qrt_" + "x" * 40})
        server.sql("UPDATE tokens SET expires_at = %d WHERE prefix = '%s'"
                   % (int(time.time()) - 1, tok[:8]))
        r = s.get("/account")
        assert r.status_code == 401 and r.json() == unknown.json() == {"message": "Unauthenticated."}
        assert r.headers.get("WWW-Authenticate") == unknown.headers.get("WWW-Authenticate")
        assert s.post("/tracker", json={"redirect_url": "https://example.com/"}).status_code == 401


def test_a_token_stops_working_when_its_time_comes(server):
    tok = server.token("acme", "--expires", "3s")
    with Api(server, tok) as s:
        assert s.get("/account").status_code == 200
        wait_until(lambda: s.get("/account").status_code == 401, timeout=15, interval=0.2,
                   what="the token to expire")


def test_token_list_shows_scope_and_expiry(server):
    server.account("scoped")
    server.token("scoped", "--scope", "read", "--name", "viewer", "--expires",
                 "2099-01-01T00:00:00+0000")
    server.token("scoped", "--scope", "write", "--expires", "30d")
    server.token("scoped")
    lines = server.admin("token", "list", "scoped").stdout.splitlines()
    assert lines[0].split("\t") == ["id", "prefix", "name", "created_at", "revoked_at",
                                    "scope", "expires_at"]
    rows = [line.split("\t") for line in lines[1:]]
    assert [(r[2], r[5], r[6]) for r in rows][0] == ("viewer", "read", "2099-01-01T00:00:00+0000")
    assert rows[1][5] == "write" and rows[1][6].endswith("+0000")
    assert rows[2][5] == "write" and rows[2][6] == "-"


@pytest.mark.parametrize("args", [
    ("--scope", "admin"), ("--scope",), ("--expires", "yesterday"), ("--expires", "0d"),
    ("--expires", "2001-01-01T00:00:00+0000"), ("--expires", "30"), ("--expires", "-1d"),
])
def test_token_add_refuses_bad_scopes_and_times(server, args):
    p = server.admin("token", "add", "acme", *args, check=False)
    assert p.returncode != 0 and not p.stdout.strip(), (args, p.stdout)
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_token_add_count_makes_that_many_alike_or_none(server):
    server.account("fleet")
    p = server.admin("token", "add", "fleet", "--count", "3", "--scope", "read",
                     "--name", "device")
    made = p.stdout.split()
    server.tokens += made
    assert len(made) == 3 and len(set(made)) == 3
    assert all(re.fullmatch(r"qrt_[0-9A-Za-z]{40}", t) for t in made), made
    for tok in made:
        with Api(server, tok) as api:
            assert api.get("/account").json()["name"] == "fleet"
            r = api.post("/tracker", json={"redirect_url": "https://example.com/"})
            assert r.status_code == 403, r.text
    rows = [l.split("\t") for l in server.admin("token", "list", "fleet").stdout.splitlines()[1:]]
    assert sorted(r[1] for r in rows) == sorted(t[:8] + "..." for t in made)
    assert {(r[2], r[5]) for r in rows} == {("device", "read")}
    for bad in ("0", "1001", "-2", "3x", ""):
        p = server.admin("token", "add", "fleet", "--count", bad, check=False)
        assert p.returncode != 0 and not p.stdout.strip(), (bad, p.stdout)
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert len(server.admin("token", "list", "fleet").stdout.splitlines()) == 4
