"""Trackers, scans and QR images: endpoints 1-4 and 11, /q and /l, visit recording."""
import base64
import contextlib
import concurrent.futures
import json
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import urllib.parse

import pytest
import requests

from conftest import Api, HTTPD, Server, apxs, sqlite_only, start_server
from lib.qr import IPHONE, decode_qr  # noqa: F401
from lib.rawhttp import get_many
from lib.wait import wait_until

WIN_CHROME = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like "
              "Gecko) Chrome/120.0.0.0 Safari/537.36")
GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"

# mod_status, whose ?auto lines the WAL tests read
STATUS = ("LoadModule status_module %s/mod_status.so\n<Location /server-status>\n"
          "    SetHandler server-status\n</Location>\n")


def png_size(png_bytes):
    return struct.unpack(">II", png_bytes[16:24])


def create(api, **body):
    body.setdefault("redirect_url", "https://example.com/spring")
    r = api.post("/tracker", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def scan(server, t, ua=IPHONE, kind="q", **kw):
    return requests.get("%s/%s/%s" % (server.base, kind, t["code"]), allow_redirects=False,
                        headers={"User-Agent": ua, **kw.pop("headers", {})}, timeout=30, **kw)


# -- endpoint 1: POST /tracker/qrcode -------------------------------------------------

def test_qrcode_json_payload_decodes_to_scan_url(server, api):
    r = api.post("/tracker/qrcode", json={"redirect_url": "https://www.example.com/x?a=1"})
    assert r.status_code == 200, r.text
    body = r.json()
    t, qr = body["tracker"], body["qr"]
    assert qr["content_type"] == "image/png" and qr["encoding"] == "base64"
    assert t["name"] == "www.example.com"
    assert t["scan_url"] == "%s/q/%s" % (server.base, t["code"])
    assert t["short_url"] == "%s/l/%s" % (server.base, t["code"])
    assert decode_qr(base64.b64decode(qr["data"])) == t["scan_url"]
    # Scanning it redirects to the destination.
    r = requests.get(t["scan_url"], allow_redirects=False, headers={"User-Agent": IPHONE})
    assert r.status_code == 302 and r.headers["Location"] == "https://www.example.com/x?a=1"


def test_qrcode_png_with_accept_header(server, api):
    r = api.post("/tracker/qrcode", json={"redirect_url": "https://example.org/", "name": "Flyer"},
                 headers={"Accept": "image/png"})
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "image/png"
    assert int(r.headers["Content-Length"]) == len(r.content)
    tid = int(r.headers["X-Tracker-Id"])
    t = api.get("/tracker/show/%d" % tid).json()
    assert t["name"] == "Flyer"
    assert decode_qr(r.content) == t["scan_url"]


def test_qrcode_answers_json_when_the_accept_header_prefers_it(server, api):
    """The Accept header's q values choose between the image and JSON: JSON of a higher q
    gets JSON; the image named with JSON at the same q (or JSON not named) gets the image."""
    for accept, image in (("image/png;q=0.1, application/json", False),
                          ("application/json;q=0.9, image/svg+xml", True),
                          ("application/json, image/png", True),
                          ("image/png;q=0.5, application/json;q=0.5", True),
                          # image/* names PNG and SVG (RFC 9110); */* alone names no image
                          ("image/*", True),
                          ("image/*, application/json;q=0.1", True),
                          ("image/*;q=0.1, application/json", False),
                          ("*/*", False)):
        r = api.post("/tracker/qrcode", json={"redirect_url": "https://example.org/q"},
                     headers={"Accept": accept})
        assert r.status_code == 200, (accept, r.text)
        if image:
            assert r.headers["Content-Type"].startswith("image/"), accept
            assert "X-Tracker-Id" in r.headers
        else:
            assert r.headers["Content-Type"].startswith("application/json"), accept
            body = r.json()
            assert decode_qr(base64.b64decode(body["qr"]["data"])) == body["tracker"]["scan_url"]


def test_qrcode_needs_a_token(anon):
    r = anon.post("/tracker/qrcode", json={"redirect_url": "https://example.org/"})
    assert r.status_code == 401


def test_qrcode_validation(api):
    for body, field in [({}, "redirect_url"), ({"redirect_url": "ftp://x.org/"}, "redirect_url"),
                        ({"redirect_url": 5}, "redirect_url"),
                        ({"redirect_url": "https://x.org/", "name": ["a"]}, "name")]:
        r = api.post("/tracker/qrcode", json=body)
        assert r.status_code == 422, (body, r.text)
        assert field in r.json()["errors"]


# -- endpoints 2-4 and the extras -----------------------------------------------------------

def test_create_and_show(api):
    t = create(api, name="Spring", tags=["region:eu", "campaign:spring", "region:eu"])
    assert isinstance(t["tracker_id"], int)
    assert t["type"] == "website" and t["tags"] == ["campaign:spring", "region:eu"]
    assert len(t["code"]) >= 6 and t["code"].isalnum()
    assert t["totalScans"] == 0 and t["totalClicks"] == 0
    assert t["created_at"].endswith("+0000")
    shown = api.get("/tracker/show/%d" % t["tracker_id"]).json()
    assert shown == t


def test_a_scheme_in_capitals_is_kept_and_described(server, api):
    # (RFC 3986: a scheme in any case; the answers stay as the OpenAPI document says them,
    # which api checks on every response)
    r = api.post("/tracker", json={"redirect_url": "HTTPS://Example.COM/Up"})
    assert r.status_code == 200, r.text
    t = r.json()
    assert t["redirect_url"] == "HTTPS://Example.COM/Up"
    assert api.get("/tracker/show/%d" % t["tracker_id"]).json() == t
    scan = requests.get("%s/q/%s" % (server.base, t["code"]), allow_redirects=False, timeout=30)
    assert scan.status_code == 302 and scan.headers["Location"] == "HTTPS://Example.COM/Up"


def test_codes_are_random(api):
    codes = [create(api)["code"] for _ in range(5)]
    assert len(set(codes)) == 5


def test_urlencoded_create(api):
    r = api.post("/tracker", data={"redirect_url": "https://example.net/a", "tags[]": ["a:1", "b"]})
    assert r.status_code == 200, r.text
    assert r.json()["tags"] == ["a:1", "b"] and r.json()["name"] == "example.net"


@pytest.mark.parametrize("body,field", [
    ({}, "redirect_url"),
    ({"redirect_url": "javascript:alert(1)"}, "redirect_url"),
    ({"redirect_url": "https://"}, "redirect_url"),
    ({"redirect_url": "https://example.com/" + "a" * 2040}, "redirect_url"),
    ({"redirect_url": "https://exa mple.com/"}, "redirect_url"),
    ({"redirect_url": ["https://example.com/"]}, "redirect_url"),
    ({"redirect_url": "https://example.com/", "name": ""}, "name"),
    ({"redirect_url": "https://example.com/", "name": "x" * 256}, "name"),
    ({"redirect_url": "https://example.com/", "name": "a\u0001b"}, "name"),
    ({"redirect_url": "https://example.com/", "type": "vcard"}, "type"),
    ({"redirect_url": "https://example.com/", "type": 1}, "type"),
    ({"redirect_url": "https://example.com/", "tags": "a"}, "tags"),
    ({"redirect_url": "https://example.com/", "tags": [1]}, "tags"),
    ({"redirect_url": "https://example.com/", "tags": ["x" * 65]}, "tags"),
    ({"redirect_url": "https://example.com/", "tags": [""]}, "tags"),
    ({"redirect_url": "https://example.com/", "tags": ["t%d" % i for i in range(21)]}, "tags"),
])
def test_create_validation(api, body, field):
    r = api.post("/tracker", json=body)
    assert r.status_code == 422, r.text
    err = r.json()
    assert field in err["errors"] and err["message"]


def test_several_bad_fields_are_all_named(api):
    r = api.post("/tracker", json={"redirect_url": "ftp://x", "name": 3, "type": "x"})
    assert r.status_code == 422
    assert set(r.json()["errors"]) == {"redirect_url", "name", "type"}


def test_sql_metacharacters_are_data(api):
    name = "Robert'); DROP TABLE trackers;--"
    t = create(api, name=name, tags=["x:'\"%_"])
    assert api.get("/tracker/show/%d" % t["tracker_id"]).json()["name"] == name
    assert api.get("/tracker").status_code == 200


def test_list_is_paged_and_own_account_only(server):
    server.account("lister")
    with Api(server, server.token("lister")) as a:
        ids = [create(a, name="t%d" % i)["tracker_id"] for i in range(5)]
        r = a.get("/tracker", params={"rows": 2, "page": 2})
        assert r.status_code == 200
        body = r.json()
        assert [t["tracker_id"] for t in body["data"]] == ids[2:4]
        assert body["meta"] == {"current_page": 2, "per_page": 2, "total": 5, "last_page": 3}
        assert a.get("/tracker", params={"page": 9}).json()["data"] == []
        for bad in [{"rows": 0}, {"rows": 1001}, {"page": 0}, {"page": "x"}]:
            r = a.get("/tracker", params=bad)
            assert r.status_code == 422 and list(bad)[0] in r.json()["errors"]
    with Api(server, server.token("other")) as o:
        others = {t["tracker_id"] for t in o.get("/tracker", params={"rows": 1000}).json()["data"]}
        assert not others & set(ids)


def test_show_unknown_and_non_numeric_is_404(api):
    for tid in ["abc", "999999999", "0", "-1", "1.5", "9" * 30]:
        assert api.get("/tracker/show/" + tid).status_code == 404, tid


def test_other_accounts_tracker_is_403_everywhere(api, other_api):
    t = create(api)
    tid = t["tracker_id"]
    for method, path, kw in [("GET", "/tracker/show/%d", {}),
                             ("PATCH", "/tracker/%d", {"json": {"name": "x"}}),
                             ("DELETE", "/tracker/%d", {}),
                             ("GET", "/tracker/%d/qrcode", {})]:
        r = other_api.request(method, path % tid, **kw)
        assert r.status_code == 403, (method, path, r.text)
        assert "not accessible" in r.json()["message"]
    assert api.get("/tracker/show/%d" % tid).json()["name"] == t["name"]


def test_a_destination_beyond_ascii_is_sent_as_a_uri(server, api):
    """Location is a URI (RFC 9110): a path, query or fragment in UTF-8 goes percent-encoded
    (it went as raw bytes); the host, an IDN, as written, which clients turn into its ASCII
    form; the tracker shows the destination as given."""
    url = "https://m\u00fcnchen.example/stra\u00dfe?q=\u00fc#\u00e4"
    t = create(api, redirect_url=url)
    assert t["redirect_url"] == url
    r = scan(server, t)
    assert r.status_code == 302
    raw = r.raw.headers["Location"].encode("latin-1")
    assert raw == "https://m\u00fcnchen.example/stra%C3%9Fe?q=%C3%BC#%C3%A4".encode(), raw


def test_patch_moves_the_destination(server, api):
    t = create(api, redirect_url="https://old.example.com/", tags=["a:1"])
    assert scan(server, t).headers["Location"] == "https://old.example.com/"
    r = api.patch("/tracker/%d" % t["tracker_id"],
                  json={"redirect_url": "https://new.example.com/", "tags": ["b:2"]})
    assert r.status_code == 200, r.text
    assert r.json()["redirect_url"] == "https://new.example.com/"
    assert r.json()["tags"] == ["b:2"] and r.json()["name"] == t["name"]
    assert r.json()["code"] == t["code"]
    assert scan(server, t).headers["Location"] == "https://new.example.com/"
    assert api.patch("/tracker/%d" % t["tracker_id"],
                     json={"redirect_url": "mailto:x@y"}).status_code == 422


def test_patch_null_for_a_field_that_cannot_go_is_422_and_changes_nothing(api):
    """In a PATCH null removes a field that can go (rules, validity, cap, password); the
    destination, name, type, code and tags cannot: 422 naming the field, where a 200 that
    kept them told the client they were gone."""
    t = create(api, redirect_url="https://keep.example.com/", name="kept", tags=["a:1"])
    tid = t["tracker_id"]
    for field in ("redirect_url", "name", "type", "code", "tags"):
        r = api.patch("/tracker/%d" % tid, json={field: None})
        assert r.status_code == 422, (field, r.text)
        assert field in r.json()["errors"], r.text
    r = api.patch("/tracker/%d" % tid, json={"name": None, "tags": None, "max_scans": None})
    assert r.status_code == 422 and set(r.json()["errors"]) == {"name", "tags"}, r.text
    now = api.get("/tracker/show/%d" % tid).json()
    assert (now["redirect_url"], now["name"], now["tags"]) == \
        ("https://keep.example.com/", "kept", ["a:1"])
    # [] removes the tags; null removes a field that can go
    r = api.patch("/tracker/%d" % tid, json={"tags": [], "max_scans": None})
    assert r.status_code == 200 and r.json()["tags"] == [], r.text


def test_an_unknown_field_of_a_json_body_is_422_and_a_tracker_read_can_be_sent_back(api):
    """A typo ("max_scan") answered 200 and set no cap: now 422 naming it, nothing created
    or changed. The fields a tracker is read with are taken and ignored, so that a client
    may send back, changed, what it read."""
    before = api.get("/tracker").json()["meta"]["total"]
    for path, body in (("/tracker", {"redirect_url": "https://example.com/", "max_scan": 5}),
                       ("/tracker/qrcode", {"redirect_url": "https://example.com/",
                                            "validUntil": "2030-01-01T00:00:00Z"}),
                       ("/tracker", {"redirect_url": "https://example.com/", "Name": "x"})):
        r = api.post(path, json=body)
        assert r.status_code == 422, r.text
        unknown = [k for k in body if k != "redirect_url"]
        assert list(r.json()["errors"]) == unknown, r.text
        assert "Unknown field '%s'" % unknown[0] in r.json()["message"], r.text
    assert api.get("/tracker").json()["meta"]["total"] == before
    t = create(api, name="read", tags=["a:1"])
    r = api.patch("/tracker/%d" % t["tracker_id"], json={"max_scan": 1, "name": "changed"})
    assert r.status_code == 422 and set(r.json()["errors"]) == {"max_scan"}, r.text
    assert api.get("/tracker/show/%d" % t["tracker_id"]).json()["name"] == "read"
    # several: each named (the first five), with the other fields' errors
    r = api.post("/tracker", json=dict({"x%d" % i: i for i in range(8)}, name=""))
    assert r.status_code == 422, r.text
    assert set(r.json()["errors"]) == {"x0", "x1", "x2", "x3", "x4", "name"}, r.text
    assert r.json()["message"] == "The given data was invalid."
    # a long name is cut in the answer
    r = api.post("/tracker", json={"redirect_url": "https://example.com/", "k" * 5000: 1})
    assert r.status_code == 422 and list(r.json()["errors"]) == ["k" * 64], r.text[:200]
    # what GET answers, sent back with a change, is taken
    got = api.get("/tracker/show/%d" % t["tracker_id"]).json()
    got["name"] = "sent back"
    r = api.patch("/tracker/%d" % t["tracker_id"], json=got)
    assert r.status_code == 200, r.text
    assert (r.json()["name"], r.json()["tags"], r.json()["code"]) == \
        ("sent back", ["a:1"], t["code"])
    assert r.json()["tracker_id"] == t["tracker_id"]
    # an HTML form's other fields (its buttons) are not refused
    r = api.post("/tracker", data={"redirect_url": "https://example.com/", "submit": "Save"})
    assert r.status_code == 200, r.text


def test_form_tags_in_each_list_form_and_a_name_with_a_tab(api):
    # tags[0]=…&tags[1]=… (PHP's http_build_query, jQuery) as tags[]= and tags=
    for fields in ({"tags[0]": "b:2", "tags[1]": "a:1"}, {"tags[]": ["b:2", "a:1"]},
                   {"tags": ["b:2", "a:1"]}):
        r = api.post("/tracker", data=dict(fields, redirect_url="https://example.com/f"))
        assert r.status_code == 200, (fields, r.text)
        assert r.json()["tags"] == ["a:1", "b:2"], (fields, r.text)
    t = create(api, tags=["c:3"])
    r = api.patch("/tracker/%d" % t["tracker_id"], data={"tags[0]": "d:4"})
    assert r.status_code == 200 and r.json()["tags"] == ["d:4"], r.text
    # a name that shows nothing (a list would show nothing to click), as a tag
    for name in ("   ", "\u200b", " \u00a0\u3000"):
        r = api.post("/tracker", json={"redirect_url": "https://example.com/", "name": name})
        assert r.status_code == 422 and "name" in r.json()["errors"], (repr(name), r.text)
    t = create(api, name="  padded  ")
    assert t["name"] == "  padded  "
    r = api.patch("/tracker/%d" % t["tracker_id"], json={"name": " "})
    assert r.status_code == 422 and "name" in r.json()["errors"], r.text
    # a TAB is a control character in a name, as in a tag
    for name in ("\t", "a\tb"):
        r = api.post("/tracker", json={"redirect_url": "https://example.com/", "name": name})
        assert r.status_code == 422 and "name" in r.json()["errors"], (name, r.text)


def test_delete(server, api):
    t = create(api)
    assert api.delete("/tracker/%d" % t["tracker_id"]).status_code == 204
    assert api.get("/tracker/show/%d" % t["tracker_id"]).status_code == 404
    assert scan(server, t).status_code == 404
    assert api.delete("/tracker/%d" % t["tracker_id"]).status_code == 404


def test_tracker_image_options(api):
    t = create(api)
    r = api.get("/tracker/%d/qrcode" % t["tracker_id"], params={"size": 512, "margin": 2, "ecc": "H"})
    assert r.status_code == 200 and r.headers["Content-Type"] == "image/png"
    assert png_size(r.content) == (512, 512)
    assert decode_qr(r.content) == t["scan_url"]
    r = api.get("/tracker/%d/qrcode" % t["tracker_id"])
    assert png_size(r.content) == (300, 300)
    for bad in [{"size": 10}, {"size": 5000}, {"margin": 17}, {"ecc": "X"}, {"size": "big"}]:
        r = api.get("/tracker/%d/qrcode" % t["tracker_id"], params=bad)
        assert r.status_code == 422 and list(bad)[0] in r.json()["errors"]


def test_route_errors(api):
    assert api.get("/tracker/5").status_code == 405
    assert api.get("/tracker/5").headers["Allow"] == "PATCH, DELETE"
    assert api.put("/tracker").status_code == 405
    assert api.get("/tracker/abc/qrcode").status_code == 404


# -- scans and clicks ----------------------------------------------------------------------

def test_scans_clicks_and_bots_are_counted(server, api):
    t = create(api)
    for _ in range(3):
        r = scan(server, t)
        assert r.status_code == 302 and r.headers["Location"] == t["redirect_url"]
        assert r.headers["Cache-Control"] == "no-store"
    for _ in range(2):
        assert scan(server, t, kind="l", ua=WIN_CHROME).status_code == 302
    assert scan(server, t, ua=GOOGLEBOT).status_code == 302
    shown = api.get("/tracker/show/%d" % t["tracker_id"]).json()
    assert shown["totalScans"] == 3 and shown["totalClicks"] == 2
    rows = server.sql("SELECT source, bot, browser, os, device, ip FROM visits "
                      "WHERE tracker_id = %d ORDER BY id" % t["tracker_id"]).splitlines()
    assert rows[:3] == ["scan|0|Mobile Safari|iOS|mobile|127.0.0.0"] * 3
    assert rows[3:5] == ["click|0|Chrome|Windows|desktop|127.0.0.0"] * 2
    assert rows[5].startswith("scan|1|Googlebot|") and rows[5].endswith("|bot|127.0.0.0")


def test_visit_keeps_referer_and_agent(server, api):
    t = create(api)
    scan(server, t, headers={"Referer": "https://news.example/ü?a=1".encode()})
    # Bytes that are not UTF-8 (here Latin-1) are stored as U+FFFD, never raw.
    scan(server, t, headers={"Referer": "https://x.example/\xfc".encode("latin-1")})
    rows = server.sql("SELECT referer, user_agent FROM visits WHERE tracker_id = %d "
                      "ORDER BY id" % t["tracker_id"]).splitlines()
    assert rows == ["https://news.example/ü?a=1|" + IPHONE,
                    "https://x.example/\ufffd|" + IPHONE]


def test_a_referer_and_agent_of_broken_sequences_are_kept_to_their_bytes(server, api):
    """Each broken sequence becomes U+FFFD, three bytes: cut to 2048 and 1024 bytes before
    that, they were kept at up to three times those."""
    t = create(api)
    scan(server, t, headers={"Referer": b"\xe2\x82" * 2000, "User-Agent": b"\xe2\x82" * 1000})
    v = api.get("/visits/tracker/%d" % t["tracker_id"]).json()["data"][0]
    assert 2040 <= len(v["referer"].encode()) <= 2048, len(v["referer"].encode())
    assert 1016 <= len(v["user_agent"].encode()) <= 1024, len(v["user_agent"].encode())
    assert set(v["referer"]) == {"\ufffd"} and set(v["user_agent"]) == {"\ufffd"}


def test_visit_text_with_quotes_braces_and_backslashes_is_stored_as_sent(server, api):
    """Every character that means something to SQL or to an array literal (the
    PostgreSQL write path sends a batch's columns as arrays) is stored as sent."""
    t = create(api)
    odd = ['Mozilla/5.0 "quoted" \\back\\slash {brace,comma} NULL',
           "it's; DROP TABLE visits; --", "{}", '"', "\\", "NULL"]
    for ua in odd:
        assert scan(server, t, ua=ua, headers={"Referer": "https://r.example/" + ua}
                    ).status_code == 302
    r = api.get("/visits/tracker/%d" % t["tracker_id"], params={"rows": 10})
    got = [(v["user_agent"], v["referer"]) for v in reversed(r.json()["data"])]
    assert got == [(ua, "https://r.example/" + ua) for ua in odd]


def test_head_redirects_without_recording(server, api):
    t = create(api)
    r = requests.head(t["scan_url"], allow_redirects=False)
    assert r.status_code == 302 and r.headers["Location"] == t["redirect_url"]
    assert server.sql("SELECT COUNT(*) FROM visits WHERE tracker_id = %d" % t["tracker_id"]).strip() == "0"


def test_scan_errors(server, api):
    t = create(api)
    assert requests.post(t["scan_url"], allow_redirects=False).status_code == 405
    for path in ["/q/nope!", "/q/AAAAAAAA", "/q/", "/l/zz", "/q/%s/extra" % t["code"],
                 "/q/" + "a" * 100]:
        assert requests.get(server.base + path, allow_redirects=False).status_code == 404, path


def test_concurrent_scans_are_all_recorded(server, api):
    t = create(api)

    def one(i):
        return scan(server, t, kind="q" if i % 2 else "l").status_code
    with concurrent.futures.ThreadPoolExecutor(max_workers=32) as ex:
        codes = list(ex.map(one, range(300)))
    assert codes.count(302) == 300
    shown = api.get("/tracker/show/%d" % t["tracker_id"]).json()
    assert shown["totalScans"] == 150 and shown["totalClicks"] == 150
    assert server.sql("SELECT COUNT(*) FROM visits WHERE tracker_id = %d" % t["tracker_id"]).strip() == "300"


def children(srv):
    with open(os.path.join(srv.dir, "run", "httpd.pid")) as f:
        parent = f.read().strip()
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", parent], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def test_redirected_scans_survive_killed_children():
    srv = start_server(accounts=[("acme", "professional")])
    try:
        with Api(srv, srv.token("acme")) as a:
            t = create(a)
        codes = []
        with requests.Session() as s:
            for _ in range(25):
                codes.append(s.get(t["scan_url"], allow_redirects=False,
                                   headers={"User-Agent": IPHONE}).status_code)
        for pid in children(srv):
            os.kill(pid, signal.SIGKILL)
        assert codes.count(302) == 25
        assert srv.sql("SELECT COUNT(*) FROM visits").strip() == "25"
    finally:
        srv.cleanup()


def wait_for_children(srv, n, old=()):
    def new_children():
        kids = [p for p in children(srv) if p not in old]
        return kids if len(kids) >= n else None
    return wait_until(new_children, timeout=20, interval=0.1,
                      what="httpd to start %d new children" % n)


def scans_at_once(srv, items, connections=16):
    """GET each (path, headers) of items below srv over that many keep-alive connections at
    once, one request in flight on each (lib/rawhttp.py: scans from many connections
    without requests' own cost a call): the status codes, in the order of items."""
    u = urllib.parse.urlsplit(srv.base)
    base = u.path.rstrip("/")
    parts = [list(range(k, len(items), connections)) for k in range(connections)]

    def run(part):
        return get_many(u.hostname, u.port, [(base + items[i][0], items[i][1]) for i in part],
                        depth=1)
    codes = [None] * len(items)
    with concurrent.futures.ThreadPoolExecutor(max_workers=connections) as ex:
        for part, got in zip(parts, ex.map(run, parts)):
            for i, code in zip(part, got):
                codes[i] = code
    return codes


def scans_with(one, total, action, after=20, then_stop=False):
    """one(i) for i < total on 16 threads; the thread that finishes the after-th runs
    action() at once, while the other threads' scans are being served. (Waiting for them
    in the calling thread, the action could come seconds late: 16 threads busy with
    requests can keep the calling thread from the interpreter that long.) With then_stop,
    the calls not begun by then are not made (their result is None). The results."""
    lock = threading.Lock()
    state = {"done": 0, "acted": False}

    def run(i):
        if then_stop and state["acted"]:
            return None
        result = one(i)
        with lock:
            state["done"] += 1
            mine = state["done"] == after
        if mine:
            action()
            state["acted"] = True
        return result
    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as ex:
        results = list(ex.map(run, range(total)))
    assert state["acted"], "fewer than %d scans ended" % after
    return results


def test_scans_go_on_when_the_committing_child_is_killed():
    """One child's writer commits the visits of all children. Killing each child in
    turn (so one of them held that role) leaves the others to take over: every
    later scan is redirected and recorded."""
    srv = start_server(accounts=[("acme", "professional")])
    try:
        with Api(srv, srv.token("acme")) as a:
            t = create(a)
        sent = 0
        for victim in children(srv):
            with requests.Session() as s:
                for _ in range(10):
                    r = s.get(t["scan_url"], allow_redirects=False, timeout=30)
                    assert r.status_code == 302
                    sent += 1
            before = children(srv)
            os.kill(victim, signal.SIGKILL)
            wait_for_children(srv, 1, old=before)
            with requests.Session() as s:
                for _ in range(10):
                    r = s.get(t["scan_url"], allow_redirects=False, timeout=30)
                    assert r.status_code == 302
                    sent += 1
        assert int(srv.sql("SELECT COUNT(*) FROM visits").strip()) == sent
    finally:
        srv.cleanup()


def test_children_killed_mid_scan_leave_the_queue_usable():
    """Requests killed while their visits waited leave slots behind; with only four
    slots, the queue must get them back or every later scan would be a 503."""
    srv = start_server(extra="QRTrackScanQueue 4\n", accounts=[("acme", "professional")])
    try:
        with Api(srv, srv.token("acme")) as a:
            t = create(a)

        def one(_):
            try:
                return scan(srv, t).status_code
            except requests.RequestException:
                return None
        for _ in range(5):
            before = []

            def kill():
                before.extend(children(srv))
                for pid in before:
                    os.kill(pid, signal.SIGKILL)
            # the scans not yet sent are not needed: those in flight were killed
            scans_with(one, 3000, kill, then_stop=True)
            wait_for_children(srv, 2, old=before)
        codes = [scan(srv, t).status_code for _ in range(20)]
        assert codes == [302] * 20, srv.error_log()[-6000:]
        recorded = int(srv.sql("SELECT COUNT(*) FROM visits").strip())
        assert recorded >= 20
    finally:
        srv.cleanup()


def test_scans_across_a_graceful_restart_are_all_answered_and_recorded():
    """The queue of waiting visits outlives a graceful restart: scans running while the
    children are replaced get 302 (or 503), and every 302 has its visit."""
    srv = start_server(accounts=[("acme", "professional")])
    try:
        with Api(srv, srv.token("acme")) as a:
            t = create(a)

        def one(_):
            return scan(srv, t).status_code

        def graceful():
            subprocess.run([HTTPD, "-f", srv.conf, "-k", "graceful"], check=True,
                           capture_output=True)
        codes = scans_with(one, 3000, graceful)
        assert set(codes) <= {302, 503}
        assert codes.count(302) > 0
        assert int(srv.sql("SELECT COUNT(*) FROM visits").strip()) == codes.count(302)
    finally:
        srv.cleanup()


@sqlite_only("the WAL file and the qrtrack-wal thread are SQLite's")
def test_the_wal_is_copied_back_while_scans_go_on():
    """Commits leave checkpoints to each child's qrtrack-wal thread: the database file
    itself grows while scans are committed to the WAL."""
    srv = start_server(accounts=[("acme", "professional")])
    try:
        with Api(srv, srv.token("acme")) as a:
            t = create(a)
        db = os.path.join(srv.dir, "qrtrack.db")
        before = os.path.getsize(db)

        codes = scans_at_once(srv, [("/q/" + t["code"], {"User-Agent": IPHONE})] * 3000)
        assert codes == [302] * 3000
        wait_until(lambda: os.path.getsize(db) > before, timeout=20, interval=0.1,
                   what="the database file to grow")
        names = set()
        for comm in __import__("glob").glob("/proc/[0-9]*/task/*/comm"):
            try:
                with open(comm) as f:
                    names.add(f.read().strip())
            except OSError:
                pass
        assert {"qrtrack-wal", "qrtrack-writer"} <= names
    finally:
        srv.cleanup()


@sqlite_only("the WAL and its checkpoint thread are SQLite's")
def test_commits_that_lengthen_the_wal_wake_the_checkpoint_thread():
    """Scans from many visitors dirty several pages each (their dictionary entries and
    index keys), so the WAL grows by MBs between two of the thread's rounds. Commits
    that leave it long wake the thread at once instead of copying it back themselves
    on the writer's time (mod_status counts both)."""
    from lib.server import qrtrack_status
    srv = start_server(extra=STATUS % apxs("LIBEXECDIR"), accounts=[("acme", "professional")])
    try:
        with Api(srv, srv.token("acme")) as a:
            t = create(a)

        codes = scans_at_once(srv, [("/q/" + t["code"], {
            "User-Agent": "Mozilla/5.0 (X11; Linux x86_64; wake-%d) AppleWebKit/537.36 (KHTML, "
                          "like Gecko) Chrome/%d.0.0.0 Safari/537.36" % (i, 100 + i % 40),
            "Referer": "https://ref-%d.example/page/%d?utm_source=qr" % (i % 997, i)})
            for i in range(6000)])
        assert codes == [302] * 6000
        st = qrtrack_status(srv)
        commits = int(st["QRTrackCommits"])
        kicks, by_commits = int(st["QRTrackCheckpointKicks"]), int(st["QRTrackCommitCheckpoints"])
        assert kicks > 0, st
        # (a busy machine may starve the thread now and then: rarely, not as a rule)
        assert by_commits * 20 < commits, st
        assert int(srv.sql("SELECT COUNT(*) FROM visits").strip()) == 6000
        assert int(srv.sql("SELECT COUNT(*) FROM visit_uas").strip()) >= 6000
    finally:
        srv.cleanup()


@sqlite_only("the WAL and its checkpoint thread are SQLite's")
def test_the_checkpoint_thread_is_woken_by_what_commits_add_not_by_the_wal_length():
    """Under a steady stream of scans the WAL stays some hundreds of pages long between
    two copies. Commits wake the checkpoint thread once they have added QRT_WAL_KICK
    pages since its last copy, not every time the WAL is long: woken after every commit,
    it ran a checkpoint (and its fsyncs) for each."""
    from lib.server import qrtrack_status
    srv = start_server(extra=STATUS % apxs("LIBEXECDIR"), accounts=[("acme", "professional")])
    try:
        with Api(srv, srv.token("acme")) as a:
            t = create(a)
        before = qrtrack_status(srv)
        codes = scans_at_once(srv, [("/q/" + t["code"], {}) for _ in range(3000)],
                              connections=4)
        assert codes == [302] * 3000
        st = qrtrack_status(srv)
        commits = int(st["QRTrackCommits"]) - int(before["QRTrackCommits"])
        kicks = int(st["QRTrackCheckpointKicks"]) - int(before["QRTrackCheckpointKicks"])
        # (each commit adds some 10-30 pages: a kick every 17 commits or more; woken by
        # the WAL's length, one every 4 commits)
        assert commits >= 300, st
        assert kicks * 8 < commits, st
        assert int(st["QRTrackCommitCheckpoints"]) == 0, st
        assert int(srv.sql("SELECT COUNT(*) FROM visits").strip()) == 3000
    finally:
        srv.cleanup()


def test_a_visitor_with_many_visits_elsewhere_counts_once_on_each_tracker():
    """The writer seeks a visitor's previous visit on the tracker of each new visit (is it
    new there?). A visitor with many visits elsewhere (one address and user agent behind a
    proxy; SQLite seeks it from the tracker's side too) is new on a tracker it never
    visited, and not new back on one, however many visits lie between, or however many of
    another's came to that tracker meanwhile."""
    srv = start_server(accounts=[("acme", "professional")])
    try:
        with Api(srv, srv.token("acme")) as a:
            ta, tb, tc = create(a), create(a), create(a)
        u = urllib.parse.urlsplit(srv.base)

        def scans(t, n, ua):
            path = "%s/q/%s" % (u.path.rstrip("/"), t["code"])
            assert get_many(u.hostname, u.port, [(path, {"User-Agent": ua})] * n) == [302] * n

        kiosk, other = IPHONE, IPHONE.replace("17_0", "16_6")
        scans(ta, 300, kiosk)
        scans(tb, 1, kiosk)         # new on b, after 300 elsewhere
        scans(tc, 100, kiosk)
        scans(tb, 1, kiosk)         # back on b past 100 elsewhere
        scans(ta, 1, kiosk)         # back on a past 102
        scans(tc, 10, kiosk)
        scans(ta, 1, kiosk)         # back on a past 10
        scans(tb, 1100, other)      # 1,100 of another's on b
        scans(tc, 70, kiosk)
        scans(tb, 1, kiosk)         # back on b past 70 of its own and 1,100 others'
        with Api(srv, srv.token("acme")) as a:
            for t, scanned in ((ta, 302), (tb, 1103), (tc, 180)):
                got = a.get("/tracker/analytics/%d" % t["tracker_id"]).json()
                distinct = int(srv.sql("SELECT COUNT(DISTINCT visitor) FROM visit_rows WHERE "
                                       "tracker_id = %d AND bot = 0" % t["tracker_id"]).strip())
                assert got["totalScans"] == scanned, got
                assert got["uniqueVisitors"] == distinct == (2 if t is tb else 1), (got, distinct)
    finally:
        srv.cleanup()


def test_full_scan_queue_answers_503_and_loses_nothing():
    srv = start_server(extra="QRTrackScanQueue 1\n", accounts=[("acme", "professional")])
    try:
        with Api(srv, srv.token("acme")) as a:
            t = create(a)

        def one(_):
            return scan(srv, t)
        with concurrent.futures.ThreadPoolExecutor(max_workers=40) as ex:
            rs = list(ex.map(one, range(400)))
        codes = [r.status_code for r in rs]
        assert set(codes) <= {302, 503}
        assert codes.count(503) > 0, "a queue of 1 under 40 concurrent scans never filled"
        assert all(r.headers.get("Retry-After") for r in rs if r.status_code == 503)
        assert int(srv.sql("SELECT COUNT(*) FROM visits").strip()) == codes.count(302)
    finally:
        srv.cleanup()


def test_ip_anonymisation_off_and_geo_from_environment():
    extra = ("QRTrackAnonymizeIP Off\n"
             "LoadModule setenvif_module %s/mod_setenvif.so\n"
             "SetEnvIf X-Test-Country \"^([A-Z]{2})$\" MM_COUNTRY_CODE=$1\n"
             "SetEnvIf X-Test-City \"^(.+)$\" MM_CITY_NAME=$1\n" % apxs("LIBEXECDIR"))
    srv = start_server(extra=extra, accounts=[("acme", "professional")])
    try:
        with Api(srv, srv.token("acme")) as a:
            t = create(a)
        scan(srv, t, headers={"X-Test-Country": "DE", "X-Test-City": "Berlin"})
        scan(srv, t)
        rows = srv.sql("SELECT ip, country, city FROM visits ORDER BY id").splitlines()
        assert rows == ["127.0.0.1|DE|Berlin", "127.0.0.1||"]
    finally:
        srv.cleanup()


MMDB_WRITER = r'''
use strict;
use MaxMind::DB::Writer::Tree;
my $tree = MaxMind::DB::Writer::Tree->new(
    ip_version => 6, record_size => 24, database_type => 'GeoIP2-City',
    languages => ['en'], description => { en => 'qrtrack test' },
    remove_reserved_networks => 0,
    map_key_type_callback => sub { $_[0] =~ /^(country|city|names)$/ ? 'map' : 'utf8_string' },
    alias_ipv6_to_ipv4 => 1);
$tree->insert_network('127.0.0.0/8', {
    country => { iso_code => 'FR' }, city => { names => { en => 'Paris' } } });
open my $fh, '>:raw', $ARGV[0] or die;
$tree->write_tree($fh);
close $fh;
'''


def write_mmdb(path, country="FR", city="Paris"):
    """A City database at path that places 127.0.0.0/8 in city, country."""
    subprocess.run(["perl", "-e", MMDB_WRITER.replace("'FR'", "'%s'" % country)
                    .replace("'Paris'", "'%s'" % city), path], check=True)


def geo_server():
    """A server reading a City database that places 127.0.0.0/8 in Paris, FR: (server,
    the database's directory, its file)."""
    d = tempfile.mkdtemp(prefix="qrtrack-mmdb-")
    os.chmod(d, 0o755)
    path = os.path.join(d, "City.mmdb")
    write_mmdb(path)
    os.chmod(path, 0o644)
    return start_server(extra="QRTrackGeoIPDatabase %s\n" % path,
                        accounts=[("acme", "professional")]), d, path


def test_geo_from_mmdb_database():
    srv, d, path = geo_server()
    try:
        with Api(srv, srv.token("acme")) as a:
            t = create(a)
        assert scan(srv, t).status_code == 302
        assert srv.sql("SELECT ip, country, city FROM visits").strip() == "127.0.0.0|FR|Paris"
    finally:
        srv.cleanup()
        os.unlink(path)
        os.rmdir(d)


@contextlib.contextmanager
def geo_with_berlin():
    """geo_server() with a tracker, and beside its database another that places the same
    addresses in Berlin, DE: (server, its database, the other, the tracker); all removed
    after."""
    srv, d, path = geo_server()
    new = os.path.join(d, "New.mmdb")
    try:
        write_mmdb(new, "DE", "Berlin")
        with Api(srv, srv.token("acme")) as a:
            t = create(a)
        yield srv, path, new, t
    finally:
        srv.cleanup()
        for f in (path, new):
            if os.path.exists(f):
                os.unlink(f)
        os.rmdir(d)


def test_a_geoip_file_overwritten_in_place_changes_nothing_until_a_graceful_restart():
    """An administrator copies a new database over the old one with cp, which truncates
    the file and then writes it in place: the children go on with the database they
    read at start (a mapping of the file itself would crash them with SIGBUS at every
    scan, or read half-written data), and `apachectl graceful` reads the new one."""
    with geo_with_berlin() as (srv, path, new, t):
        assert scan(srv, t).status_code == 302
        with open(path, "r+b") as f:
            f.truncate(0)
            f.flush()
            # Scans while the file is empty, as in the middle of a copy.
            assert [scan(srv, t).status_code for _ in range(4)] == [302] * 4
            with open(new, "rb") as src:
                f.write(src.read())
        assert [scan(srv, t).status_code for _ in range(4)] == [302] * 4
        rows = srv.sql("SELECT ip, country, city FROM visits").split()
        assert rows == ["127.0.0.0|FR|Paris"] * 9, rows
        subprocess.run([HTTPD, "-f", srv.conf, "-k", "graceful"], check=True,
                       capture_output=True)

        def berlin():
            assert scan(srv, t).status_code == 302
            return srv.sql("SELECT COUNT(*) FROM visits WHERE city = 'Berlin'").strip() != "0"
        wait_until(berlin, timeout=30, what="a visit placed by the new database")


def test_a_geoip_file_that_cannot_be_read_at_a_restart_leaves_the_copy_read_before():
    """A download cut short or a file removed before logrotate's nightly graceful: the
    server goes on with the copy it read last (QRT00135) instead of ending httpd
    ("Configuration Failed", every site down until someone starts it); once the file
    reads again, the next graceful reads it. A first start still needs it."""
    with geo_with_berlin() as (srv, path, new, t):
        def newest_city():
            assert scan(srv, t).status_code == 302
            return srv.sql("SELECT city FROM visits ORDER BY visit_start DESC, id DESC "
                           "LIMIT 1").strip()
        assert newest_city() == "Paris"
        said = 0
        for broken in (b"\x00not a database\n" * 100, b""):
            with open(path, "wb") as f:
                f.write(broken)
            subprocess.run([HTTPD, "-f", srv.conf, "-k", "graceful"], check=True,
                           capture_output=True)
            wait_until(lambda: srv.error_log().count("QRT00135") > said, timeout=30,
                       what="QRT00135 after the graceful")
            said = srv.error_log().count("QRT00135")
            wait_until(lambda: srv.error_log().count("resuming normal operations") >= said + 1,
                       timeout=30, what="the restart to finish")
            assert srv.proc.poll() is None, srv.error_log()[-3000:]
            assert [newest_city() for _ in range(4)] == ["Paris"] * 4
        assert "Configuration Failed" not in srv.error_log()
        # A file that is not there at all: apachectl's own reading of the configuration
        # refuses, and the server goes on as it was.
        os.unlink(path)
        assert subprocess.run([HTTPD, "-f", srv.conf, "-k", "graceful"],
                              capture_output=True).returncode != 0
        assert srv.proc.poll() is None and newest_city() == "Paris"
        shutil.copyfile(new, path)
        subprocess.run([HTTPD, "-f", srv.conf, "-k", "graceful"], check=True,
                       capture_output=True)
        wait_until(lambda: newest_city() == "Berlin", timeout=30,
                   what="a visit placed by the file read again")
        srv.stop()
        with open(path, "wb") as f:
            f.write(b"\x00not a database\n")
        with pytest.raises(AssertionError):
            srv.start()
        assert "QRT00007" in srv.error_log()


# -- endpoint 11: POST /qrCode ----------------------------------------------------------------

def unescape_wifi(payload):
    """Splits a WIFI: payload into its fields, undoing the backslash escapes."""
    assert payload.startswith("WIFI:") and payload.endswith(";;")
    fields, key, cur, i, body = {}, None, "", 0, payload[5:-1]
    while i < len(body):
        c = body[i]
        if c == "\\":
            cur += body[i + 1]
            i += 2
            continue
        if c == ":" and key is None:
            key, cur = cur, ""
        elif c == ";":
            fields[key] = cur
            key, cur = None, ""
        else:
            cur += c
        i += 1
    return fields


def test_plain_url_qr(server, api):
    before = server.sql("SELECT COUNT(*) FROM trackers").strip()
    r = api.post("/qrCode", files={"type": (None, "url"), "url": (None, "https://example.com/a?b=c&d=é")})
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "image/png"
    assert int(r.headers["Content-Length"]) == len(r.content)
    assert decode_qr(r.content) == "https://example.com/a?b=c&d=é"
    assert server.sql("SELECT COUNT(*) FROM trackers").strip() == before


def test_wifi_qr_with_special_characters(api):
    name, password = 'Café;Net:"5\\G",x', 'p;a:s"s\\w,d'
    r = api.post("/qrCode", files={"type": (None, "wifi"), "network_name": (None, name),
                                   "network_password": (None, password),
                                   "network_encryption": (None, "wpa2")})
    assert r.status_code == 200, r.text
    payload = decode_qr(r.content)
    fields = unescape_wifi(payload)
    assert fields == {"T": "WPA", "S": name, "P": password}


def test_wifi_nopass_hidden_and_urlencoded(api):
    r = api.post("/qrCode", data={"type": "wifi", "network_name": "Guest",
                                  "network_encryption": "nopass", "network_hidden": "true",
                                  "size": "400", "ecc": "q"})
    assert r.status_code == 200, r.text
    assert png_size(r.content) == (400, 400)
    assert unescape_wifi(decode_qr(r.content)) == {"T": "nopass", "S": "Guest", "H": "true"}
    r = api.post("/qrCode", data={"type": "wifi", "network_name": "Old", "network_password": "k",
                                  "network_encryption": "WEP"})
    assert unescape_wifi(decode_qr(r.content)) == {"T": "WEP", "S": "Old", "P": "k"}


def test_plain_qr_from_a_json_body_takes_numbers_and_booleans(api):
    """A JSON body's numbers and booleans were read as absent: "size": 400 drew the default
    300 unseen. They are taken as their text is; a list, an object or an unknown field is
    400 naming it."""
    r = api.post("/qrCode", json={"type": "wifi", "network_name": "Guest", "size": 400,
                                  "network_encryption": "nopass", "network_hidden": True,
                                  "margin": 0})
    assert r.status_code == 200, r.text
    assert png_size(r.content) == (400, 400)
    assert unescape_wifi(decode_qr(r.content)) == {"T": "nopass", "S": "Guest", "H": "true"}
    r = api.post("/qrCode", json={"type": "url", "url": "https://example.com/j", "size": 250.0,
                                  "format": "svg", "size_mm": 25.4})
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("image/svg"), r.text
    assert 'width="25.4mm"' in r.text, r.text[:300]
    for body, fields in (({"size": [300]}, {"size"}), ({"sise": 300}, {"sise"}),
                         ({"margin": {"v": 1}, "colour": "#000000"}, {"margin", "colour"}),
                         ({"size": 63}, {"size"}), ({"network_hidden": False}, set())):
        r = api.post("/qrCode", json=dict({"type": "url", "url": "https://example.com/"},
                                          **body))
        if not fields:
            assert r.status_code == 200, (body, r.text)
            continue
        assert r.status_code == 400, (body, r.text)
        assert set(r.json()["errors"]) == fields, (body, r.text)


@pytest.mark.parametrize("form,field", [
    ({}, "type"),
    ({"type": "sms"}, "type"),
    ({"type": "url"}, "url"),
    ({"type": "url", "url": "notaurl"}, "url"),
    ({"type": "url", "url": "ftp://example.com/"}, "url"),
    ({"type": "wifi"}, "network_name"),
    ({"type": "wifi", "network_name": "x"}, "network_password"),
    ({"type": "wifi", "network_name": "x", "network_password": "y", "network_encryption": "WPA9"},
     "network_encryption"),
    ({"type": "wifi", "network_name": "x", "network_encryption": "nopass", "network_hidden": "maybe"},
     "network_hidden"),
    ({"type": "url", "url": "https://example.com/", "size": "63"}, "size"),
    ({"type": "url", "url": "https://example.com/", "margin": "-1"}, "margin"),
    ({"type": "url", "url": "https://example.com/", "ecc": "Z"}, "ecc"),
    ({"type": "wifi", "network_name": "x" * 2000, "network_encryption": "nopass"}, "network_name"),
])
def test_plain_qr_validation_is_400(api, form, field):
    files = {k: (None, v) for k, v in form.items()} or {"x": (None, "")}
    r = api.post("/qrCode", files=files)
    assert r.status_code == 400, r.text
    assert field in r.json()["errors"]


def test_plain_qr_too_much_data_is_400(api):
    r = api.post("/qrCode", files={"type": (None, "url"),
                                   "url": (None, "https://example.com/" + "a" * 2000),
                                   "ecc": (None, "H"), "size": (None, "64")})
    assert r.status_code in (200, 400)
    if r.status_code == 200:
        assert decode_qr(r.content).startswith("https://example.com/")


def test_plain_qr_needs_token(anon):
    r = anon.post("/qrCode", files={"type": (None, "url"), "url": (None, "https://example.com/")})
    assert r.status_code == 401


def test_broken_multipart_is_400_json(api):
    r = api.post("/qrCode", data=b"--b\r\nContent-Disposition: form-data; name=\"type\"\r\n\r\nurl",
                 headers={"Content-Type": "multipart/form-data; boundary=b"})
    assert r.status_code == 400 and r.json()["message"]
    r = api.post("/qrCode", data=b"x", headers={"Content-Type": "multipart/form-data"})
    assert r.status_code == 400


def test_cold_burst_with_a_small_connection_pool_does_not_deadlock():
    # Every scan of a code no child has cached looks it up in the database; those
    # lookups must not hold connections while their visits wait for the writer.
    srv = start_server(extra="DBDMin 1\nDBDMax 1\nDBDKeep 1\n", accounts=[("acme", "professional")])
    try:
        with Api(srv, srv.token("acme")) as a:
            ts = [create(a) for _ in range(3)]

        def one(i):
            return scan(srv, ts[i % 3]).status_code
        with concurrent.futures.ThreadPoolExecutor(max_workers=48) as ex:
            codes = list(ex.map(one, range(240)))
        assert codes.count(302) == 240
        assert srv.sql("SELECT COUNT(*) FROM visits").strip() == "240"
    finally:
        srv.cleanup()
