"""Visitor ids keyed with the installation's secret (issue 13): created with the
database, the same for every child and node, optionally rotated daily; a database
from before schema version 6 keeps its unkeyed ids, so unique visitors stay exact
across the upgrade; `qrtrack-admin visitor-key` shows and changes it (never printing
the key)."""
import hashlib
import hmac
import re
import time

import requests

from conftest import Api, Server, start_server

UA = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 " \
     "(KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"


def settings(srv):
    rows = dict(l.split("|", 1) for l in srv.sql(
        "SELECT name, value FROM qrt_settings").splitlines() if "|" in l)
    return rows["visitor_key"], rows["visitor_rotation"]


def expected(key, ip, ua, day=None):
    msg = ((day + "\n") if day else "") + ip + "\n" + ua
    if not key:
        return hashlib.sha256(msg.encode()).hexdigest()[:16]
    return hmac.new(bytes.fromhex(key), msg.encode(), hashlib.sha256).hexdigest()[:16]


def scan(srv, code, ua=UA):
    r = requests.get("%s/q/%s" % (srv.base, code), allow_redirects=False,
                     headers={"User-Agent": ua}, timeout=10)
    assert r.status_code == 302
    return r


def visitors(srv):
    return [l for l in srv.sql("SELECT visitor FROM visits ORDER BY id").split()]


def test_a_new_database_keys_its_visitor_ids():
    srv = start_server(accounts=[("acme", "professional")])
    other = start_server(accounts=[("acme", "professional")])
    try:
        key, rotation = settings(srv)
        assert re.fullmatch(r"[0-9a-f]{64}", key) and rotation == "none"
        assert settings(other)[0] != key
        out = srv.admin("visitor-key", "show").stdout
        assert "keyed with this installation's secret, rotation none" in out
        assert key not in out
        ids = []
        for s in (srv, other):
            with Api(s, s.token("acme")) as a:
                t = a.post("/tracker", json={"redirect_url": "https://example.com/k"}).json()
            scan(s, t["code"])
            scan(s, t["code"])
            with Api(s, s.token("acme")) as a:
                assert a.get("/tracker/analytics/%d" % t["tracker_id"]).json()[
                    "uniqueVisitors"] == 1
            ids.append(visitors(s))
        # HMAC under the key, not the plain hash anyone could recompute.
        assert ids[0] == [expected(key, "127.0.0.0", UA)] * 2
        assert ids[0][0] != expected("", "127.0.0.0", UA)
        # Another installation: another id for the same visitor.
        assert ids[1][0] != ids[0][0]
    finally:
        srv.cleanup()
        other.cleanup()


def test_daily_rotation_puts_the_day_in_the_id():
    srv = start_server(accounts=[("acme", "professional")])
    try:
        srv.stop()
        assert "rotation daily" in srv.admin("visitor-key", "rotate", "daily").stdout
        srv.start()
        key, rotation = settings(srv)
        assert rotation == "daily"
        with Api(srv, srv.token("acme")) as a:
            t = a.post("/tracker", json={"redirect_url": "https://example.com/d"}).json()
        before = time.strftime("%Y-%m-%d", time.gmtime())
        scan(srv, t["code"])
        after = time.strftime("%Y-%m-%d", time.gmtime())
        assert visitors(srv)[0] in (expected(key, "127.0.0.0", UA, before),
                                    expected(key, "127.0.0.0", UA, after))
        # Imported visits of other days: one visitor per day.
        lines = "\n".join(
            '{"tracker_id": %d, "visit_start": "%s", "source": "scan", "ip": "192.0.2.0", '
            '"user_agent": "%s"}' % (t["tracker_id"], ts, UA)
            for ts in ("2026-01-05T10:00:00+0000", "2026-01-05T22:00:00+0000",
                       "2026-01-06T01:00:00+0000"))
        path = srv.dir + "/import.jsonl"
        with open(path, "w") as f:
            f.write(lines + "\n")
        srv.admin("visits", "import", path)
        got = visitors(srv)[1:]
        assert got == [expected(key, "192.0.2.0", UA, "2026-01-05")] * 2 + \
            [expected(key, "192.0.2.0", UA, "2026-01-06")]
    finally:
        srv.cleanup()


def test_a_database_from_before_version_6_keeps_its_ids_until_told():
    srv = Server()
    try:
        srv.admin("init")
        srv.account("acme", "professional")
        tok = srv.token("acme")
        srv.start()
        with Api(srv, tok) as a:
            t = a.post("/tracker", json={"redirect_url": "https://example.com/u"}).json()
        srv.stop()
        # The database as version 5 left it: unkeyed ids, no settings table.
        srv.sql("UPDATE qrt_settings SET value = '' WHERE name = 'visitor_key'")
        path = srv.dir + "/import.jsonl"
        with open(path, "w") as f:
            f.write('{"tracker_id": %d, "visit_start": "2026-01-05T10:00:00+0000", '
                    '"source": "scan", "ip": "127.0.0.0", "user_agent": "%s"}\n'
                    % (t["tracker_id"], UA))
        srv.admin("visits", "import", path)
        srv.sql("DROP TABLE qrt_settings")
        srv.sql("UPDATE qrt_schema SET version = 5")
        srv.start()                             # migrates to 6
        assert settings(srv) == ("", "none")
        assert "unkeyed" in srv.admin("visitor-key", "show").stdout
        scan(srv, t["code"])
        assert visitors(srv) == [expected("", "127.0.0.0", UA)] * 2
        with Api(srv, tok) as a:
            assert a.get("/tracker/analytics/%d" % t["tracker_id"]).json()[
                "uniqueVisitors"] == 1
        # Given a key: new visits use it from the next start.
        srv.stop()
        assert "keyed" in srv.admin("visitor-key", "new").stdout
        key = settings(srv)[0]
        assert re.fullmatch(r"[0-9a-f]{64}", key)
        srv.start()
        scan(srv, t["code"])
        assert visitors(srv)[-1] == expected(key, "127.0.0.0", UA)
    finally:
        srv.cleanup()


def test_bad_visitor_key_commands_are_refused():
    srv = start_server()
    try:
        for args in (("visitor-key",), ("visitor-key", "rotate", "weekly"),
                     ("visitor-key", "show", "extra")):
            p = srv.admin(*args, check=False)
            assert p.returncode == 2, (args, p.stdout, p.stderr)
    finally:
        srv.cleanup()
