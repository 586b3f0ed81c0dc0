"""Custom codes, POST /tracker/bulk and Idempotency-Key (CONTRACT section 7, "Bulk,
migration and custom codes"), and the old short URLs of a peer kept working by a
RewriteRule (docs/operations.md)."""
import base64
import concurrent.futures
import json
import secrets
import time

import pytest
import requests

from conftest import Api, apxs, start_server
from lib.qr import IPHONE, decode_qr
from lib.wait import wait_until


def uniq(prefix="c"):
    """A code no other test uses (codes are unique across the installation)."""
    return "%s-%s" % (prefix, secrets.token_hex(6))


def scan(server, code, host=None, path=None):
    headers = {"User-Agent": IPHONE}
    if host:
        headers["Host"] = host
    return requests.get(server.base + (path or "/q/" + code), headers=headers,
                        allow_redirects=False, timeout=30)


def count_trackers(server, where):
    return int(server.sql("SELECT COUNT(*) FROM trackers WHERE %s" % where).split()[0])


# -- custom codes ---------------------------------------------------------------------

def test_a_custom_code_is_kept_and_scans(server, api):
    code = uniq("Spring_")
    r = api.post("/tracker", json={"redirect_url": "https://example.com/c", "code": code})
    assert r.status_code == 200, r.text
    t = r.json()
    assert t["code"] == code and t["scan_url"].endswith("/q/" + code)
    r = scan(server, code)
    assert r.status_code == 302 and r.headers["Location"] == "https://example.com/c"
    wait_until(lambda: api.get("/tracker/show/%d" % t["tracker_id"]).json()["totalScans"] == 1,
               what="the scan counted")


def test_codes_are_case_sensitive(server, api):
    code = uniq("Case")
    assert api.post("/tracker", json={"redirect_url": "https://example.com/u",
                                      "code": code}).status_code == 200
    r = api.post("/tracker", json={"redirect_url": "https://example.com/l",
                                   "code": code.lower()})
    assert r.status_code == 200, r.text
    assert scan(server, code).headers["Location"] == "https://example.com/u"
    assert scan(server, code.lower()).headers["Location"] == "https://example.com/l"
    assert scan(server, code.upper()).status_code == 404


def test_a_taken_code_is_409_for_any_account(api, other_api):
    code = uniq()
    assert api.post("/tracker", json={"redirect_url": "https://example.com/a",
                                      "code": code}).status_code == 200
    for client in (api, other_api):
        r = client.post("/tracker", json={"redirect_url": "https://example.com/b", "code": code})
        assert r.status_code == 409, r.text
        assert code in r.json()["message"]
    r = other_api.post("/tracker/qrcode", json={"redirect_url": "https://example.com/b",
                                                "code": code})
    assert r.status_code == 409


def test_a_deleted_trackers_code_stays_taken(api):
    code = uniq()
    t = api.post("/tracker", json={"redirect_url": "https://example.com/a", "code": code}).json()
    assert api.delete("/tracker/%d" % t["tracker_id"]).status_code == 204
    r = api.post("/tracker", json={"redirect_url": "https://example.com/b", "code": code})
    assert r.status_code == 409


@pytest.mark.parametrize("code", ["ab", "a" * 65, "has space", "dot.ted", "sl/ash", "é-abc",
                                  "", "abc%20", 12345, ["abc"]])
def test_malformed_codes_are_422(api, code):
    r = api.post("/tracker", json={"redirect_url": "https://example.com/a", "code": code})
    assert r.status_code == 422, r.text
    assert "code" in r.json()["errors"]


def test_edge_lengths_and_characters(server, api):
    for code in ("a-_", "Z" * 60 + secrets.token_hex(2)):
        r = api.post("/tracker", json={"redirect_url": "https://example.com/e", "code": code})
        assert r.status_code in (200, 409), r.text
        assert scan(server, code).status_code == 302


def test_a_code_in_a_form_body(api):
    code = uniq()
    r = api.post("/tracker", data={"redirect_url": "https://example.com/f", "code": code})
    assert r.status_code == 200 and r.json()["code"] == code


def test_qrcode_with_a_custom_code_encodes_it(api):
    code = uniq("qr")
    r = api.post("/tracker/qrcode", json={"redirect_url": "https://example.com/q", "code": code})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["tracker"]["code"] == code
    assert decode_qr(base64.b64decode(body["qr"]["data"])).endswith("/q/" + code)


def test_patch_cannot_move_a_code(api):
    t = api.post("/tracker", json={"redirect_url": "https://example.com/p"}).json()
    r = api.patch("/tracker/%d" % t["tracker_id"], json={"code": uniq()})
    assert r.status_code == 422 and "code" in r.json()["errors"]
    # Its own code sent back is no change.
    r = api.patch("/tracker/%d" % t["tracker_id"], json={"code": t["code"], "name": "Same"})
    assert r.status_code == 200 and r.json()["code"] == t["code"]


def test_concurrent_creates_of_one_code_make_one_tracker(server, token):
    code = uniq("race")

    def one(i):
        with Api(server, token) as s:
            return s.post("/tracker", json={"redirect_url": "https://example.com/%d" % i,
                                            "code": code}).status_code

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(one, range(8)))
    assert codes.count(200) == 1 and codes.count(409) == 7, codes
    assert count_trackers(server, "code = '%s'" % code) == 1


# -- POST /tracker/bulk ---------------------------------------------------------------

def test_bulk_json_per_row_results(server, api):
    taken = uniq()
    api.post("/tracker", json={"redirect_url": "https://example.com/t", "code": taken})
    mine = uniq("bulk")
    rows = [
        {"redirect_url": "https://example.com/1", "name": "One", "code": mine,
         "tags": ["campaign:bulk"]},
        {"redirect_url": "ftp://nope"},
        {"redirect_url": "https://example.com/3", "code": taken},
        "not an object",
        {"redirect_url": "https://example.com/5", "code": mine},
        {"redirect_url": "https://example.com/6", "max_scans": 3,
         "valid_until": "2099-01-01T00:00:00+0000"},
    ]
    r = api.post("/tracker/bulk", json={"trackers": rows})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["meta"] == {"created": 2, "failed": 4}
    data = body["data"]
    assert [d["row"] for d in data] == [1, 2, 3, 4, 5, 6]
    assert data[0]["tracker"]["code"] == mine and data[0]["tracker"]["tags"] == ["campaign:bulk"]
    assert "redirect_url" in data[1]["errors"]
    assert "code" in data[2]["errors"] and "taken" in data[2]["errors"]["code"][0]
    assert "tracker" in data[3]["errors"]
    assert "row 1" in data[4]["errors"]["code"][0]
    assert data[5]["tracker"]["max_scans"] == 3
    assert scan(server, mine).headers["Location"] == "https://example.com/1"
    shown = api.get("/tracker/show/%d" % data[5]["tracker"]["tracker_id"]).json()
    assert shown["redirect_url"] == "https://example.com/6"


def test_a_bulk_row_with_an_unknown_field_fails_alone(api):
    rows = [{"redirect_url": "https://example.com/u1", "max_scan": 3},
            {"redirect_url": "https://example.com/u2", "max_scans": 3}]
    r = api.post("/tracker/bulk", json={"trackers": rows})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["meta"] == {"created": 1, "failed": 1}, r.text
    assert list(body["data"][0]["errors"]) == ["max_scan"], r.text
    assert body["data"][1]["tracker"]["max_scans"] == 3


def test_a_bulk_racing_with_creates_of_its_codes_fails_only_their_rows(server):
    """Creates of some of a bulk's codes while it runs: those rows fail as taken, the rest
    are created (each try that met a taken code leaves it out; four such tries made a 500
    that created nothing on SQLite)."""
    server.account("bulkrace")
    server.account("bulkrace2")
    tok, tok2 = server.token("bulkrace"), server.token("bulkrace2")
    for rnd in range(5):
        codes = [uniq("br%d-%d-" % (rnd, i)) for i in range(1000)]

        def bulk():
            with Api(server, tok) as s:
                return s.post("/tracker/bulk", json={"trackers": [
                    {"redirect_url": "https://example.com/b", "code": c} for c in codes]})

        def singles(raced):
            with Api(server, tok2) as s:
                return [s.post("/tracker", json={"redirect_url": "https://example.com/s",
                                                 "code": c}).status_code for c in raced]

        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            firsts = [pool.submit(singles, codes[k::-40]) for k in (999, 979)]
            r = pool.submit(bulk).result()
            won = sum((f.result() for f in firsts), [])
        assert r.status_code == 200, r.text
        meta = r.json()["meta"]
        assert meta["created"] + meta["failed"] == 1000
        assert meta["failed"] == won.count(200), (meta, won)
        assert count_trackers(server, "code IN (%s)" % ",".join("'%s'" % c for c in codes)) \
            == 1000


def test_bulk_csv_with_bom_crlf_quotes_and_tags(server, api):
    a, b = uniq("csv"), uniq("csv")
    csv = ("\ufeffredirect_url,name,code,tags,max_scans\r\n"
           "https://example.com/a,\"Flyer, A\",%s, campaign:spring ;\tregion:eu ,10\r\n"
           "https://example.com/b,\"Say \"\"hi\"\"\",%s,,\r\n"
           "https://example.com/c,Bad code,no spaces,,\r\n"
           "https://example.com/d,Short row\r\n"
           "notaurl,x,,,\r\n" % (a, b))
    r = api.post("/tracker/bulk", data=csv.encode(), headers={"Content-Type": "text/csv"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["meta"] == {"created": 2, "failed": 3}
    first = body["data"][0]["tracker"]
    assert first["name"] == "Flyer, A" and first["code"] == a
    # (the blanks around each tag taken off, on both sides)
    assert first["tags"] == ["campaign:spring", "region:eu"] and first["max_scans"] == 10
    assert body["data"][1]["tracker"]["name"] == 'Say "hi"'
    assert "code" in body["data"][2]["errors"]
    assert "csv" in body["data"][3]["errors"] and "Line 5" in body["data"][3]["errors"]["csv"][0]
    assert "redirect_url" in body["data"][4]["errors"]
    assert scan(server, b).headers["Location"] == "https://example.com/b"


def test_bulk_csv_routing_columns(server, api):
    code = uniq("route")
    rules = '[{""redirect_url"": ""https://example.com/de"", ""country"": [""DE""]}]'
    csv = ("Redirect_URL,type,valid_from,valid_until,expired_url,max_scans,rules,code\n"
           "https://example.com/r,website,2020-01-01T00:00:00+0000,2099-01-01T00:00:00Z,"
           "https://example.com/gone,5,\"%s\",%s\n"
           "https://example.com/r2,website,not a time,,,-1,[,\n" % (rules, code))
    r = api.post("/tracker/bulk", data=csv.encode(), headers={"Content-Type": "text/csv"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["meta"] == {"created": 1, "failed": 1}
    t = body["data"][0]["tracker"]
    assert t["max_scans"] == 5 and t["expired_url"] == "https://example.com/gone"
    assert t["rules"][0]["country"] == ["DE"] and t["valid_from"].startswith("2020-01-01")
    errors = body["data"][1]["errors"]
    assert {"valid_from", "max_scans", "rules"} <= set(errors), errors
    assert scan(server, code).headers["Location"] == "https://example.com/r"


def test_bulk_csv_header_errors(api):
    for csv, word in [("name,code\r\nx,y\r\n", "redirect_url"),
                      ("redirect_url,colour\r\nhttps://e.com/,red\r\n", "colour"),
                      ("redirect_url,redirect_url\r\nhttps://e.com/,x\r\n", "twice"),
                      ("redirect_url\r\n", "at least one"),
                      ("", "")]:
        r = api.post("/tracker/bulk", data=csv.encode(), headers={"Content-Type": "text/csv"})
        assert r.status_code == 422, (csv, r.text)
        assert word in r.text


def test_bulk_malformed_csv_rows_are_row_errors(api):
    csv = ('redirect_url,name\n"https://example.com/open,x\n')
    r = api.post("/tracker/bulk", data=csv.encode(), headers={"Content-Type": "text/csv"})
    assert r.status_code == 200, r.text
    assert r.json()["meta"] == {"created": 0, "failed": 1}
    csv = ('redirect_url,name\nhttps://example.com/a,x"y\nhttps://example.com/b,ok\n')
    r = api.post("/tracker/bulk", data=csv.encode(), headers={"Content-Type": "text/csv"})
    assert r.json()["meta"] == {"created": 1, "failed": 1}


def test_bulk_csv_bytes_that_are_not_utf8_fail_their_row(api):
    csv = b"redirect_url,name\nhttps://example.com/a,caf\xe9\nhttps://example.com/b,ok\n"
    r = api.post("/tracker/bulk", data=csv, headers={"Content-Type": "text/csv"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["meta"] == {"created": 1, "failed": 1}
    assert "UTF-8" in body["data"][0]["errors"]["csv"][0]


def test_bulk_bounds(api):
    r = api.post("/tracker/bulk", json={"trackers": [{"redirect_url": "https://e.com/"}] * 1001})
    assert r.status_code == 422 and "1000" in r.json()["message"]
    csv = "redirect_url\n" + "https://e.com/\n" * 1001
    r = api.post("/tracker/bulk", data=csv.encode(), headers={"Content-Type": "text/csv"})
    assert r.status_code == 422 and "1000" in r.json()["message"]
    for body in ({}, {"trackers": []}, {"trackers": {"a": 1}}, {"trackers": "x"}):
        r = api.post("/tracker/bulk", json=body)
        assert r.status_code == 422 and "trackers" in r.json()["errors"], body
    r = api.post("/tracker/bulk", data="{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    r = api.post("/tracker/bulk", data={"redirect_url": "https://e.com/"})
    assert r.status_code == 415
    # the 415 names what bulk takes; an empty CSV's 422 names the CSV, not a JSON field
    r = api.post("/tracker/bulk", data=b"redirect_url\n", headers={"Content-Type": "text/plain"})
    assert r.status_code == 415 and "text/csv" in r.json()["message"] \
        and "form" not in r.json()["message"], r.text
    r = api.post("/tracker/bulk", data=b"", headers={"Content-Type": "text/csv"})
    assert r.status_code == 422 and list(r.json()["errors"]) == ["csv"], r.text
    long_line = "redirect_url,name\nhttps://e.com/," + "x" * 70000 + "\n"
    r = api.post("/tracker/bulk", data=long_line.encode(), headers={"Content-Type": "text/csv"})
    assert r.status_code == 200 and r.json()["meta"] == {"created": 0, "failed": 1}
    # text/csv is taken by the bulk endpoint only.
    r = api.post("/tracker", data=b"redirect_url\nhttps://e.com/\n",
                 headers={"Content-Type": "text/csv"})
    assert r.status_code == 415


def test_bulk_passwords_are_bounded(api):
    rows = [{"redirect_url": "https://example.com/%d" % i, "password": "pw-%d" % i}
            for i in range(12)]
    r = api.post("/tracker/bulk", json={"trackers": rows})
    assert r.status_code == 200, r.text
    assert r.json()["meta"] == {"created": 10, "failed": 2}
    assert "password" in r.json()["data"][11]["errors"]


def test_bulk_of_1000_in_one_transaction_under_a_second(server, api):
    tag = "batch:" + secrets.token_hex(4)
    rows = [{"redirect_url": "https://example.com/%d" % i, "tags": [tag]} for i in range(1000)]
    t0 = time.monotonic()
    r = api.post("/tracker/bulk", json={"trackers": rows})
    took = time.monotonic() - t0
    assert r.status_code == 200, r.text
    assert r.json()["meta"] == {"created": 1000, "failed": 0}
    codes = {d["tracker"]["code"] for d in r.json()["data"]}
    assert len(codes) == 1000
    assert int(server.sql("SELECT COUNT(*) FROM tracker_tags WHERE tag = '%s'" % tag)
               .split()[0]) == 1000
    # Generous for a loaded machine; bench/bench_bulk.py measures it.
    assert took < 5, took


def test_bulk_row_limits_and_other_accounts(api, other_api):
    code = uniq()
    r = other_api.post("/tracker/bulk", json={"trackers": [{"redirect_url": "https://e.com/",
                                                            "code": code}]})
    assert r.json()["meta"]["created"] == 1
    r = api.post("/tracker/bulk", json={"trackers": [{"redirect_url": "https://e.com/",
                                                      "code": code}]})
    assert r.json()["meta"] == {"created": 0, "failed": 1}


def test_bulk_needs_a_token(anon):
    r = anon.post("/tracker/bulk", json={"trackers": [{"redirect_url": "https://e.com/"}]})
    assert r.status_code == 401


# -- Idempotency-Key ------------------------------------------------------------------

def test_the_same_key_answers_the_first_answer_and_creates_nothing(server, api):
    key = "retry-" + secrets.token_hex(8)
    body = {"redirect_url": "https://example.com/idem"}
    first = api.post("/tracker", json=body, headers={"Idempotency-Key": key})
    assert first.status_code == 200 and "Idempotent-Replayed" not in first.headers
    again = api.post("/tracker", json=body, headers={"Idempotency-Key": key})
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
    assert again.content == first.content
    tid = first.json()["tracker_id"]
    assert count_trackers(server, "redirect_url = 'https://example.com/idem' AND id >= %d"
                          % tid) == 1
    # Another body under the same key: 422; a new key creates again.
    r = api.post("/tracker", json={"redirect_url": "https://example.com/other"},
                 headers={"Idempotency-Key": key})
    assert r.status_code == 422 and "Idempotency-Key" in r.json()["errors"]
    r = api.post("/tracker", json=body, headers={"Idempotency-Key": key + "x"})
    assert r.json()["tracker_id"] != tid


def test_keys_are_per_token(server, api, other_api):
    key = "shared-" + secrets.token_hex(8)
    body = {"redirect_url": "https://example.com/pt"}
    a = api.post("/tracker", json=body, headers={"Idempotency-Key": key})
    b = other_api.post("/tracker", json=body, headers={"Idempotency-Key": key})
    assert a.status_code == b.status_code == 200
    assert a.json()["tracker_id"] != b.json()["tracker_id"]
    assert "Idempotent-Replayed" not in b.headers


@pytest.mark.parametrize("key", ["", "x" * 256, "tab\there", "caf\u00e9"])
def test_malformed_keys_are_422(api, key):
    r = api.post("/tracker", json={"redirect_url": "https://example.com/k"},
                 headers={"Idempotency-Key": key.encode("utf-8")})
    assert r.status_code == 422, r.text
    assert "Idempotency-Key" in r.json()["errors"]


def test_qrcode_png_and_json_are_replayed(api):
    key = "qr-" + secrets.token_hex(8)
    body = {"redirect_url": "https://example.com/qrk"}
    png = api.post("/tracker/qrcode", json=body, headers={"Idempotency-Key": key,
                                                          "Accept": "image/png"})
    assert png.status_code == 200 and png.headers["Content-Type"] == "image/png"
    again = api.post("/tracker/qrcode", json=body, headers={"Idempotency-Key": key,
                                                            "Accept": "image/png"})
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.content == png.content
    assert again.headers["X-Tracker-Id"] == png.headers["X-Tracker-Id"]
    # The same key asking for JSON is another request.
    r = api.post("/tracker/qrcode", json=body, headers={"Idempotency-Key": key})
    assert r.status_code == 422
    key2 = key + "j"
    j1 = api.post("/tracker/qrcode", json=body, headers={"Idempotency-Key": key2})
    j2 = api.post("/tracker/qrcode", json=body, headers={"Idempotency-Key": key2})
    assert j1.status_code == 200 and j2.content == j1.content
    assert decode_qr(base64.b64decode(j2.json()["qr"]["data"])) == j1.json()["tracker"]["scan_url"]


def test_bulk_is_replayed(server, api):
    key = "bulk-" + secrets.token_hex(8)
    tag = "idem:" + secrets.token_hex(4)
    body = {"trackers": [{"redirect_url": "https://example.com/b%d" % i, "tags": [tag]}
                         for i in range(20)]}
    first = api.post("/tracker/bulk", json=body, headers={"Idempotency-Key": key})
    again = api.post("/tracker/bulk", json=body, headers={"Idempotency-Key": key})
    assert first.status_code == again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true" and again.content == first.content
    assert int(server.sql("SELECT COUNT(*) FROM tracker_tags WHERE tag = '%s'" % tag)
               .split()[0]) == 20


def test_errors_are_not_kept(api):
    key = "err-" + secrets.token_hex(8)
    r = api.post("/tracker", json={"redirect_url": "ftp://x"}, headers={"Idempotency-Key": key})
    assert r.status_code == 422
    r = api.post("/tracker", json={"redirect_url": "ftp://x"}, headers={"Idempotency-Key": key})
    assert r.status_code == 422 and "Idempotent-Replayed" not in r.headers


def test_concurrent_requests_with_one_key_create_one_tracker(server, token):
    key = "conc-" + secrets.token_hex(8)
    url = "https://example.com/conc-" + secrets.token_hex(4)

    def one(_):
        with Api(server, token) as s:
            r = s.post("/tracker", json={"redirect_url": url}, headers={"Idempotency-Key": key})
            return r.status_code, r.json().get("tracker_id")

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        got = list(pool.map(one, range(6)))
    assert {g[0] for g in got} == {200}, got
    assert len({g[1] for g in got}) == 1, got
    assert count_trackers(server, "redirect_url = '%s'" % url) == 1


def test_keys_older_than_a_day_are_purged_and_forgotten(server, api):
    key = "old-" + secrets.token_hex(8)
    body = {"redirect_url": "https://example.com/old"}
    first = api.post("/tracker", json=body, headers={"Idempotency-Key": key}).json()
    server.sql("UPDATE idempotency_keys SET created_at = created_at - 90000 "
               "WHERE idem_key = '%s'" % key)
    again = api.post("/tracker", json=body, headers={"Idempotency-Key": key})
    assert again.status_code == 200 and "Idempotent-Replayed" not in again.headers
    assert again.json()["tracker_id"] != first["tracker_id"]
    stale = int(server.sql("SELECT COUNT(*) FROM idempotency_keys WHERE created_at < %d"
                           % (time.time() - 86400 - 60)).split()[0])
    assert stale == 0


# -- a peer's old short URLs, mapped onto /q by mod_rewrite -----------------------------

REWRITE = """
LoadModule rewrite_module {libexec}/mod_rewrite.so
<VirtualHost *:*>
    ServerName 127.0.0.1
</VirtualHost>
<VirtualHost *:*>
    ServerName old-links.example
    RewriteEngine On
    RewriteRule "^/([A-Za-z0-9_-]{{3,64}})$" "/q/$1" [PT]
</VirtualHost>
"""


@pytest.fixture(scope="module")
def rewriting():
    srv = start_server(extra=REWRITE.format(libexec=apxs("LIBEXECDIR")),
                       accounts=[("acme", "professional")])
    yield srv
    srv.cleanup()


def test_old_short_urls_redirect_through_a_rewrite_rule(rewriting):
    srv = rewriting
    with Api(srv, srv.token("acme")) as api:
        code = "abc123"
        t = api.post("/tracker", json={"redirect_url": "https://example.com/old",
                                       "code": code}).json()
        r = scan(srv, code, host="old-links.example", path="/" + code)
        assert r.status_code == 302 and r.headers["Location"] == "https://example.com/old"
        wait_until(lambda: api.get("/tracker/show/%d" % t["tracker_id"]).json()["totalScans"]
                   == 1, what="the visit through the old host name")
        # Paths the rule does not take stay 404 there; the new host is unchanged.
        assert scan(srv, code, host="old-links.example", path="/a/b").status_code == 404
        assert scan(srv, "nope-code", host="old-links.example",
                    path="/nope-code").status_code == 404
        assert api.get("/account").status_code == 200
