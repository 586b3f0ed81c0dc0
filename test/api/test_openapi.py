"""The OpenAPI document: served without a token, complete, and the same as the code.

Every response the other tests get through `Api` is held to it (conftest.OpenApiDoc);
the tests here check the document itself and that the checker does fail."""
import json
import os
import re

import jsonschema
import pytest
import requests

from conftest import OPENAPI, TOP, Api, OpenApiDoc, openapi
from lib import fastschema

SPEC_PATHS = ["/tracker/qrcode", "/tracker", "/tracker/show/{tracker_id}",
              "/tracker/analytics/{tracker_id}", "/report/", "/report/tag-crosstab",
              "/dashboard/scansAnalytics", "/visits/tracker/{tracker_id}",
              "/visits/tracker/{tracker_id}/download/csv", "/qrCode"]


def test_served_without_a_token(server):
    r = requests.get(server.api_base + "/openapi.json", timeout=10)
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "application/json; charset=utf-8"
    doc = r.json()
    assert doc["openapi"].startswith("3.1.")
    assert doc["info"]["version"] == "1.0.0"
    assert doc["servers"] == [{"url": "/api", "description": "This server's API."}]
    with open(OPENAPI, encoding="utf-8") as f:
        mine = json.load(f)
    del doc["servers"], mine["servers"]
    assert doc == mine
    assert "X-RateLimit-Limit" not in r.headers
    assert r.headers["Access-Control-Allow-Origin"] == "*"


def test_not_counted_by_the_rate_limiter(api):
    assert api.get("/account").headers["X-RateLimit-Remaining"] == "119"
    for _ in range(3):
        r = api.get("/openapi.json")
        assert r.status_code == 200 and "X-RateLimit-Remaining" not in r.headers
    assert api.get("/account").headers["X-RateLimit-Remaining"] == "118"


def test_head_trailing_slash_and_other_methods(anon):
    r = anon.head("/openapi.json")
    assert r.status_code == 200 and r.content == b""
    assert anon.get("/openapi.json/").json()["openapi"].startswith("3.1.")
    r = anon.post("/openapi.json", json={})
    assert r.status_code == 405 and r.headers["Allow"] == "GET, HEAD"


def test_every_spec_path_is_there():
    doc = openapi().doc
    for path in SPEC_PATHS:
        assert path in doc["paths"], path
    for path, method in [("/account", "get"), ("/tracker/{tracker_id}", "patch"),
                         ("/tracker/{tracker_id}", "delete"),
                         ("/tracker/{tracker_id}/qrcode", "get")]:
        assert method in doc["paths"][path], (path, method)
    assert "image/png" in doc["paths"]["/tracker/qrcode"]["post"]["responses"]["200"]["content"]
    csv = doc["paths"]["/visits/tracker/{tracker_id}/download/csv"]["get"]
    assert "text/csv" in csv["responses"]["200"]["content"]
    assert set(doc["components"]["securitySchemes"]) == {"bearerAuth", "apiTokenQuery"}
    body = doc["components"]["schemas"]["TrackerCreate"]["properties"]
    assert "api_token" in body


def routes_in_code():
    """(METHOD, path template) of the route table in mod_qrtrack_api.c."""
    with open(os.path.join(TOP, "mod_qrtrack", "mod_qrtrack_api.c"), encoding="utf-8") as f:
        src = f.read()
    table = src[src.index("api_routes[] = {"):]
    table = table[:table.index("};")]
    out = set()
    for method, pattern in re.findall(r'\{\s*"([A-Z]+)",\s*"([^"]+)"', table):
        out.add((method, re.sub(r"[*#]", "{}", pattern.rstrip("/"))))
    return out


# Paths that need no token: the handler answers them before authenticating, outside the
# route table (their operations say `"security": []`).
NO_TOKEN = {"/openapi.json", "/health"}


def routes_in_document():
    out = set()
    for path, item in openapi().doc["paths"].items():
        if path in NO_TOKEN:
            continue
        for method in OpenApiDoc.METHODS:
            if method in item:
                out.add((method.upper(), re.sub(r"\{[^}]+\}", "{}", path.rstrip("/"))))
    return out


def test_document_and_route_table_name_the_same_endpoints():
    code, doc = routes_in_code(), routes_in_document()
    assert len(code) == 34
    assert code == doc, ("only in the code", code - doc, "only in the document", doc - code)


def test_the_paths_without_a_token_are_the_handlers_own():
    doc = openapi().doc
    with open(os.path.join(TOP, "mod_qrtrack", "mod_qrtrack_api.c"), encoding="utf-8") as f:
        src = f.read()
    free = {path for path, item in doc["paths"].items()
            if any(item.get(m, {}).get("security") == [] for m in OpenApiDoc.METHODS)}
    assert free == NO_TOKEN
    for path in NO_TOKEN:
        assert list(doc["paths"][path]) == ["get"]
        assert 'strcmp(q->path, "%s")' % path in src


def test_every_operation_documents_its_errors():
    doc = openapi().doc
    for path, item in doc["paths"].items():
        for method in OpenApiDoc.METHODS:
            op = item.get(method)
            if not op or path in NO_TOKEN:
                continue
            codes = set(op["responses"])
            # (414: any request line may pass httpd's LimitRequestLine, its query most of all)
            assert {"400", "401", "403", "413", "414", "415", "429", "500", "503"} <= codes, \
                (path, method)
            if "{tracker_id}" in path:
                assert "404" in codes, (path, method)
            assert op["description"] and op["operationId"]


# -- the checker fails on what the document does not say -------------------------------

class FakeRequest:
    def __init__(self, method, url):
        self.method, self.url = method, url


def fake(method, path, status, body=None, headers=None, content=None):
    r = requests.Response()
    r.status_code = status
    r.request = FakeRequest(method, "http://x/api" + path)
    r.headers.update(headers or {})
    if body is not None:
        r.headers.setdefault("Content-Type", "application/json; charset=utf-8")
        content = json.dumps(body).encode()
    r._content = content if content is not None else b""
    r._content_consumed = True
    return r


def check(r):
    openapi().check(r, "http://x/api")


ACCOUNT = {"name": "acme", "plan": "professional", "rate_limit": 120}


def test_checker_accepts_what_is_documented():
    check(fake("GET", "/account", 200, ACCOUNT))
    check(fake("GET", "/account/", 200, ACCOUNT))
    check(fake("HEAD", "/account", 200, headers={"Content-Type": "application/json; charset=utf-8"}))
    check(fake("GET", "/nope", 404, {"message": "Not Found."}))
    check(fake("GET", "/tracker/5", 405, {"message": "x"}, {"Allow": "PATCH, DELETE"}))
    check(fake("POST", "/account", 415, {"message": "x"}))
    check(fake("DELETE", "/tracker/5", 204))
    check(fake("GET", "/report/", 200, {"data": [{"country": None, "visits": 1, "scans": 1,
                                                   "clicks": 0, "unique_visitors": 1}],
                                         "meta": {"report": "country", "tracker_count": 1,
                                                  "visit_start": None, "visit_start_end": None}}))


@pytest.mark.parametrize("r", [
    fake("GET", "/account", 200, dict(ACCOUNT, extra=1)),                 # a field not documented
    fake("GET", "/account", 200, {"name": "acme", "plan": "professional"}),  # one missing
    fake("GET", "/account", 200, dict(ACCOUNT, plan="gold")),             # not in the enum
    fake("GET", "/account", 418, {"message": "teapot"}),                  # a status not documented
    fake("GET", "/account", 200, content=b"<html>", headers={"Content-Type": "text/html"}),
    fake("GET", "/account", 200, ACCOUNT, {"Content-Type": "application/json"}),  # no charset
    fake("GET", "/tracker/show/1", 404, {"message": "x", "errors": {"a": ["b"]}}),  # errors on 404
    fake("GET", "/tracker/analytics/1", 422, {"message": "x"}),           # not documented there
    fake("GET", "/report/", 422, {"message": "x"}),                       # 422 without errors
    fake("GET", "/newthing", 200, {"a": 1}),                               # a path not documented
    fake("PUT", "/account", 200, ACCOUNT),                                 # a method not documented
    fake("GET", "/tracker/5", 405, {"message": "x"}, {"Allow": "PATCH, DELETE, PUT"}),
    fake("GET", "/report/", 200, {"data": [{"browser": "x", "visits": 1, "scans": 1,
                                             "clicks": 0, "unique_visitors": 1}],
                                   "meta": {"report": "country", "tracker_count": 1,
                                            "visit_start": None, "visit_start_end": None}}),
    fake("GET", "/visits/tracker/1", 304),                                 # no ETag
    fake("GET", "/account", 429, {"message": "Too Many Attempts."}),       # no Retry-After
    fake("DELETE", "/tracker/5", 204, {"message": "x"}),                   # a body on 204
    fake("GET", "/tracker/1/qrcode", 200, content=b"GIF89a", headers={"Content-Type": "image/png"}),
], ids=lambda r: "%s %s %d" % (r.request.method, r.request.url[12:], r.status_code))
def test_checker_fails_on_what_is_not(r):
    with pytest.raises(AssertionError):
        check(r)


def test_the_documents_examples_pass_the_checker():
    doc = openapi()
    n = 0
    for name, schema in doc.doc["components"]["schemas"].items():
        for example in schema.get("examples", []):
            errors = list(doc.validator(("example", name), schema).iter_errors(example))
            assert not errors, (name, errors[0].message)
            n += 1
    assert n >= 6


# lib/fastschema.py answers for jsonschema on most responses (lib/openapi.py); it must
# never be the more lenient, nor the stricter.
TRICKY = [
    ({"type": "integer"}, [1, 1.0, 1.5, True, "1", None, 2 ** 64]),
    ({"type": "number", "minimum": 0, "maximum": 10}, [0, 10, 10.5, -0.5, True, False, "5"]),
    ({"type": ["string", "null"], "maxLength": 2, "minLength": 1}, ["", "a", "ab", "abc", None, 0]),
    ({"enum": [0, 1, "a", None]}, [0, 1, 0.0, 1.0, False, True, "a", None, "b", [0]]),
    ({"enum": [True]}, [True, 1, 1.0, "true"]),
    ({"const": 0}, [0, 0.0, False, None, [0]]),
    ({"pattern": "^[a-z]+$"}, ["abc", "ab1", "", 5, None]),
    ({"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}},
      "additionalProperties": False}, [{"a": "x"}, {}, {"a": 1}, {"a": "x", "b": 1}, [], "a"]),
    ({"additionalProperties": {"type": "integer"}, "properties": {"a": {}}},
     [{"a": "x", "b": 1}, {"b": "x"}, {}, 3]),
    ({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2},
     [[], [1], [1, 2], [1, 2, 3], [1, "2"], [True], {}]),
    ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, [1, 1.5, "x", True]),
    ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, [1, "x", 1.5, None]),
    ({"allOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]}],
      "properties": {"b": {"type": "string"}}, "unevaluatedProperties": False},
     [{"a": 1}, {"a": 1, "b": "x"}, {"a": 1, "c": 0}, {"b": "x"}, {"a": "1"}, []]),
    ({"properties": {"m": {"properties": {"r": {"const": "x"}}}},
      "if": {"properties": {"m": {"properties": {"r": {"const": "x"}}}}},
      "then": {"required": ["d"]}, "else": {"required": ["e"]}},
     [{"m": {"r": "x"}, "d": 1}, {"m": {"r": "x"}}, {"m": {"r": "y"}, "e": 1}, {"m": {"r": "y"}},
      {"d": 1}, {"e": 1}]),
    ({"type": "object", "minProperties": 1, "maxProperties": 1}, [{}, {"a": 1}, {"a": 1, "b": 2}]),
]


@pytest.mark.parametrize("schema,instances", TRICKY)
def test_the_compiled_checker_agrees_with_jsonschema_on_each_keyword(schema, instances):
    fast = fastschema.compile_schema(schema)
    ref = jsonschema.Draft202012Validator(schema)
    for x in instances:
        assert fast(x) == ref.is_valid(x), (schema, x)


def test_the_compiled_checker_agrees_with_jsonschema_on_mutated_examples():
    doc = openapi()
    n = invalid = 0
    for name, schema in doc.doc["components"]["schemas"].items():
        if not schema.get("examples"):
            continue
        inlined = doc.inline(schema)
        fast = fastschema.compile_schema(inlined)
        ref = jsonschema.Draft202012Validator(inlined)
        for example in schema["examples"]:
            for _ in range(50):
                for x in [example] + fastschema.mutations(example):
                    valid = ref.is_valid(x)
                    assert fast(x) == valid, (name, x)
                    n += 1
                    invalid += not valid
    assert n > 1000 and invalid > n // 4, (n, invalid)


def test_every_schema_of_the_document_compiles():
    """No response or header schema falls back to jsonschema alone."""
    doc = openapi()
    n = 0
    for tpl, item in doc.doc["paths"].items():
        for method in doc.METHODS:
            for status, resp in item.get(method, {}).get("responses", {}).items():
                resp = doc.resolve(resp)
                schemas = [c["schema"] for c in resp.get("content", {}).values() if "schema" in c]
                schemas += [doc.resolve(h)["schema"] for h in resp.get("headers", {}).values()]
                for schema in schemas:
                    fastschema.compile_schema(doc.inline(schema))
                    n += 1
    assert n > 300
