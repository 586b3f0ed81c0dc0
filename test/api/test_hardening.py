"""Hostile-but-valid input stays cheap and privacy holds for every address form
(issue 13): tag lists refused before any per-tag work, over-long multi-byte tags named
in errors.tags, addresses that embed an IPv4 address anonymised as IPv4 is, and user
agents that are not UTF-8 still giving report rows that all carry their key."""
import json
import socket
import time

import pytest
import requests

from conftest import Api, apxs, start_server


def test_a_huge_tag_list_is_refused_before_any_tag_is_read(api):
    for tags in (["t%d" % i for i in range(40000)], ["same"] * 40000,
                 ["x" * 20] * 40000, [1] * 1001):
        started = time.monotonic()
        r = api.post("/tracker", json={"redirect_url": "https://example.com/", "tags": tags})
        took = time.monotonic() - started
        assert r.status_code == 422, r.text[:200]
        assert r.json()["errors"]["tags"] == ["A tracker may have at most 20 tags."]
        assert took < 2.0, took
    # The same as form fields.
    body = "&".join(["redirect_url=https%3A%2F%2Fexample.com%2F"] + ["tags[]=t%d" % i
                                                                   for i in range(5000)])
    r = api.post("/tracker", data=body,
                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 422 and "tags" in r.json()["errors"]


def test_duplicates_count_once_and_the_limit_is_on_distinct_tags(api):
    r = api.post("/tracker", json={"redirect_url": "https://example.com/",
                                   "tags": ["b", "a", "b", "a"] * 100})
    assert r.status_code == 200, r.text
    assert r.json()["tags"] == ["a", "b"]
    r = api.post("/tracker", json={"redirect_url": "https://example.com/",
                                   "tags": ["t%02d" % i for i in range(20)] * 2})
    assert r.status_code == 200 and len(r.json()["tags"]) == 20
    r = api.post("/tracker", json={"redirect_url": "https://example.com/",
                                   "tags": ["t%02d" % i for i in range(21)]})
    assert r.status_code == 422
    assert r.json()["errors"]["tags"] == ["A tracker may have at most 20 tags."]


def test_bad_tags_are_named_in_valid_utf8(api):
    # 60 three-byte characters: 180 bytes, over the 64-byte limit; the message quotes
    # the tag cut on a character boundary, so the JSON (and errors.tags) is whole.
    long_tag = "\u20ac" * 60
    r = api.post("/tracker", json={"redirect_url": "https://example.com/",
                                   "tags": ["ok", long_tag]})
    assert r.status_code == 422, r.text
    msgs = r.json()["errors"]["tags"]
    assert len(msgs) == 1 and "\u20ac" * 21 in msgs[0] and "64" in msgs[0]
    # Many bad tags: a few messages, not one per tag.
    r = api.post("/tracker", json={"redirect_url": "https://example.com/",
                                   "tags": ["\u20ac" * 30 + str(i) for i in range(200)]})
    assert r.status_code == 422
    assert 1 <= len(r.json()["errors"]["tags"]) <= 5


REMOTEIP = """
LoadModule remoteip_module {libexec}/mod_remoteip.so
RemoteIPHeader X-Forwarded-For
RemoteIPInternalProxy 127.0.0.1
"""


def test_addresses_that_carry_an_ipv4_address_lose_its_last_byte():
    srv = start_server(extra=REMOTEIP.format(libexec=apxs("LIBEXECDIR")),
                       accounts=[("acme", "professional")])
    try:
        with Api(srv, srv.token("acme")) as a:
            t = a.post("/tracker", json={"redirect_url": "https://example.com/ip"}).json()
            sent = {
                "2002:c000:0204::1": "2002:c000:200::",            # 6to4 of 192.0.2.4
                "::ffff:192.0.2.5": "192.0.2.0",                  # IPv4-mapped
                "::c000:206": "192.0.2.0",                        # IPv4-compatible
                "2001:0:4136:e378:8000:63bf:3f3d:fdfb": "2001:0:4136::",  # Teredo
                "203.0.113.77": "203.0.113.0",
                "2001:db8:abcd:12::1": "2001:db8:abcd::",
            }
            for ip in sent:
                r = requests.get("%s/q/%s" % (srv.base, t["code"]), allow_redirects=False,
                                 headers={"X-Forwarded-For": ip}, timeout=10)
                assert r.status_code == 302
            r = a.get("/visits/tracker/%d" % t["tracker_id"], params={"rows": 100})
            assert r.status_code == 200
            stored = sorted(v["ip"] for v in r.json()["data"])
        assert stored == sorted(sent.values())
        dump = srv.sql("SELECT * FROM visits")
        for secret in ("c000:204", "192.0.2.4", "192.0.2.5", "c000:206", "192.0.2.6",
                       "3f3d:fdfb", "203.0.113.77"):
            assert secret not in dump, secret
    finally:
        srv.cleanup()


def raw_scan(srv, code, ua):
    """A scan whose User-Agent is the given bytes, sent as they are."""
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    try:
        s.sendall(b"GET /q/" + code.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  b"User-Agent: " + ua + b"\r\nConnection: close\r\n\r\n")
        return int(s.recv(4096).split(b" ", 2)[1])
    finally:
        s.close()


def test_user_agents_that_are_not_utf8_give_rows_that_carry_their_key(server, api):
    t = api.post("/tracker", json={"redirect_url": "https://example.com/ua",
                                   "tags": ["ua:bytes"]}).json()
    for ua in (b"\xff\xfe\xfd/1.0 CFNetwork/1.0 Darwin/1.0",
               b"caf\xe9-crawler/1.0", b"Mozilla/5.0 (compatible; \xe9t\xe9bot/2.1)",
               b"\xed\xa0\x80Browser/3.1",
               b"Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 "
               b"(KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"):
        assert raw_scan(server, t["code"], ua) == 302
    a = api.get("/tracker/analytics/%d" % t["tracker_id"]).json()
    # totalScans leaves bots out (CONTRACT section 2).
    assert a["totalScans"] + a["bots"] == 5 and a["bots"] >= 1
    for kind in ("browser", "city", "country"):
        r = api.get("/report/", params={"report": kind, "trackers[]": [t["tracker_id"]]})
        assert r.status_code == 200, r.text
        rows = r.json()["data"]
        # Reports leave bots out.
        assert sum(row["visits"] for row in rows) == a["totalScans"]
        assert all(kind in row for row in rows), rows
        if kind == "browser":
            assert any("\ufffd" in (row[kind] or "") for row in rows), rows
    # And the visits themselves read back as JSON strings.
    r = api.get("/visits/tracker/%d" % t["tracker_id"])
    assert r.status_code == 200
    assert all(isinstance(v["browser"], str) and isinstance(v["user_agent"], str)
               for v in r.json()["data"])
    json.dumps(r.json(), ensure_ascii=False).encode("utf-8")


def test_a_scan_budget_per_client_address_answers_429_unrecorded():
    srv = start_server(extra=REMOTEIP.format(libexec=apxs("LIBEXECDIR"))
                       + "QRTrackScanBudget 5\nLoadModule status_module %s/mod_status.so\n"
                       "<Location /server-status>\n    SetHandler server-status\n"
                       "</Location>\n" % apxs("LIBEXECDIR"),
                       accounts=[("acme", "professional")])
    try:
        with Api(srv, srv.token("acme")) as a:
            t = a.post("/tracker", json={"redirect_url": "https://example.com/b"}).json()

        def scan(ip, path="q", method="GET"):
            return requests.request(method, "%s/%s/%s" % (srv.base, path, t["code"]),
                                    allow_redirects=False, timeout=10,
                                    headers={"X-Forwarded-For": ip})

        # HEAD records nothing and counts nothing.
        assert all(scan("198.51.100.7", method="HEAD").status_code == 302 for _ in range(3))
        codes = [scan("198.51.100.7", "q" if i % 2 else "l").status_code for i in range(8)]
        assert codes == [302] * 5 + [429] * 3
        r = scan("198.51.100.7")
        assert r.status_code == 429 and 1 <= int(r.headers["Retry-After"]) <= 60
        # Another address, even in the same /24, has its own budget.
        assert scan("198.51.100.8").status_code == 302
        assert scan("2001:db8::1").status_code == 302
        with Api(srv, srv.token("acme")) as a:
            got = a.get("/tracker/analytics/%d" % t["tracker_id"]).json()
        assert got["totalScans"] + got["totalClicks"] == 7
        assert int(srv.sql("SELECT COUNT(*) FROM visits").strip()) == 7
        auto = requests.get(srv.base + "/server-status?auto", timeout=10).text
        assert "QRTrackScanBudget: 5" in auto
        assert "QRTrackScanBudgetRefusals: 4" in auto
    finally:
        srv.cleanup()


def test_without_a_scan_budget_nothing_is_counted(server, api):
    t = api.post("/tracker", json={"redirect_url": "https://example.com/nb"}).json()
    for _ in range(30):
        r = requests.get("%s/q/%s" % (server.base, t["code"]), allow_redirects=False,
                         timeout=10)
        assert r.status_code == 302


def test_a_bad_scan_budget_fails_configtest():
    from conftest import configtest
    for value in ("-1", "abc", "5x"):
        rc, out = configtest("QRTrackScanBudget %s\n" % value)
        assert rc != 0 and "QRTrackScanBudget" in out, out


def read_all(sock, deadline=10):
    """Everything the server sends until it closes the connection (or goes quiet)."""
    sock.settimeout(deadline)
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        if not chunk:
            break
        data += chunk
    return data


@pytest.mark.parametrize("body", [
    b"zz\r\n{}\r\n0\r\n\r\n",                     # a chunk size that is not hex
    b"5\r\n{}{}{}{}\r\n0\r\n\r\n",                # a chunk longer than its size
    b"2\r\n{}XX0\r\n\r\n",                        # no CRLF after the chunk
    b"fffffffffffffffffffff\r\n{}\r\n0\r\n\r\n",  # a size that overflows
])
def test_a_malformed_chunked_body_gets_exactly_one_response(server, token, body):
    """httpd answers a broken chunked body itself (400): nothing is written after it."""
    s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    try:
        s.sendall(b"POST /api/tracker HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  b"Authorization: Bearer " + token.encode() + b"\r\n"
                  b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                  b"Connection: close\r\n\r\n" + body)
        data = read_all(s)
    finally:
        s.close()
    assert data.startswith(b"HTTP/1.1 4"), data[:200]
    assert data.count(b"HTTP/1.") == 1, data
    head, rest = data.split(b"\r\n\r\n", 1)
    assert not (b"<html" in rest.lower() and b'{"message"' in rest), data
    for line in head.split(b"\r\n")[1:]:
        if line.lower().startswith(b"content-length:"):
            assert len(rest) == int(line.split(b":")[1]), data
    assert not server.crash_lines()
