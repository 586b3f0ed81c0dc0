"""Every place where a request's size multiplies work or memory is bounded, and the
bound is named in a 4xx (issue 13): tracker lists of reports and the dashboard, search
patterns, page sizes, multipart part counts, JSON depth and body size, long query
strings. (Tags: test_hardening.py; the crosstab: test_crosstab_bounds.py.)"""
import json
import time

import requests


def timed(fn):
    started = time.monotonic()
    r = fn()
    return r, time.monotonic() - started


def test_tracker_lists_are_bounded(server, api, token):
    # More ids than a request line holds (httpd's LimitRequestLine, 8190 bytes): 414
    # from httpd itself; the module's own bound (1000 ids, 422) sits above it.
    for path, params in (("/report/", {"report": "name"}), ("/dashboard/scansAnalytics", {})):
        params = dict(params, **{"trackers[]": list(range(1, 1002))})
        r, took = timed(lambda: requests.get(server.api_base + path, params=params,
                                             headers={"Authorization": "Bearer " + token},
                                             timeout=10))
        assert r.status_code == 414 and took < 2.0
    # As many as a request line holds, none of them the account's: 403 at once.
    for path, params in (("/report/", {"report": "name"}), ("/dashboard/scansAnalytics", {})):
        params = dict(params, **{"trackers[]": list(range(10 ** 6, 10 ** 6 + 300))})
        r, took = timed(lambda: api.get(path, params=params))
        assert r.status_code == 403, r.text[:200]
        assert took < 2.0


def test_search_patterns_and_pages_are_bounded(api):
    t = api.post("/tracker", json={"redirect_url": "https://example.com/s"}).json()
    url = "/visits/tracker/%d" % t["tracker_id"]
    r = api.get(url, params={"search": "x" * 257})
    assert r.status_code == 422
    assert "256" in r.json()["errors"]["search"][0]
    r = api.get(url, params={"rows": 1001})
    assert r.status_code == 422 and "rows" in r.json()["errors"]
    # Multi-byte: 256 characters are fine whatever their bytes.
    assert api.get(url, params={"search": "\u20ac" * 256}).status_code == 200


def test_multipart_part_counts_are_bounded(api):
    boundary = "b0undary"
    parts = "".join('--%s\r\nContent-Disposition: form-data; name="f%d"\r\n\r\nv\r\n'
                    % (boundary, i) for i in range(200))
    body = parts + "--%s--\r\n" % boundary
    r = api.post("/qrCode", data=body.encode(),
                 headers={"Content-Type": "multipart/form-data; boundary=" + boundary})
    assert r.status_code == 413, r.text
    assert "parts" in r.json()["message"]


def test_json_depth_and_size_are_bounded(api):
    r, took = timed(lambda: api.post("/tracker", data="[" * 100000 + "]" * 100000,
                                     headers={"Content-Type": "application/json"}))
    assert r.status_code == 400 and took < 2.0, r.text[:200]
    big = json.dumps({"redirect_url": "https://example.com/", "name": "x" * (1024 * 1024)})
    r = api.post("/tracker", data=big, headers={"Content-Type": "application/json"})
    assert r.status_code == 413
    assert "1048576" in r.json()["message"]


def test_long_query_strings_stop_at_httpd(server, token):
    r = requests.get(server.api_base + "/tracker", timeout=10,
                     params={"api_token": token, "x": "y" * 9000})
    assert r.status_code == 414


def test_query_parameter_count_bounded(api):
    r = api.get("/tracker?" + "&".join("p%d=1" % i for i in range(1100)))
    assert r.status_code == 400, r.text[:300]
    assert "1024" in r.json()["message"]
    r = api.get("/tracker?" + "&".join("p%d=1" % i for i in range(1000)))
    assert r.status_code == 200


def test_urlencoded_field_count_bounded(api):
    """10000 fields at most: above the 1000 tags[] a form may send (past those, 422
    errors.tags as in JSON: test_hardening), below what a 1 MB body could hold."""
    body = "redirect_url=https%3A%2F%2Fexample.com%2F&" + "&".join("f%d=1" % i
                                                                    for i in range(10100))
    r = api.post("/tracker", data=body,
                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 413, r.text[:300]
    assert "10000" in r.json()["message"]
    body = "redirect_url=https%3A%2F%2Fexample.com%2F&" + "&".join("f%d=1" % i
                                                                    for i in range(9000))
    r = api.post("/tracker", data=body,
                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 200, r.text[:300]
