"""The OpenAPI document as a checker of every response."""
import atexit
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse

import jsonschema
import pytest
import requests

from lib import fastschema
from lib.env import OPENAPI


class OpenApiDoc:
    """openapi/qrtrack.json, as the tests hold every API response to it.

    check() fails (AssertionError) unless the response is one the document describes:
    - a documented path and method: the status is one of the operation's responses;
      the Content-Type is one of that response's media types (JSON exactly
      `application/json; charset=utf-8`), a JSON body validates against its schema
      (JSON Schema 2020-12, $refs resolved here), a PNG starts like one, a response
      without content has no body; its required headers are there and the documented
      headers that are there match their schemas. HEAD is checked as GET, without a body.
    - a documented path, another method: 405 with `Allow` naming exactly the document's
      methods (HEAD with GET), or a status that every authenticated operation documents
      (the body is read and authenticated before routing: 400, 401, 403, 413, 415, 429,
      500, 503), with that response's schema.
    - a path the document does not have: 404 (the document says so), or one of those
      common statuses.
    So the code cannot answer anything, or any field, that the document does not name."""

    METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            self.doc = json.load(f)
        self.templates = []          # (segments, template, path item, {param: schema})
        secured = []
        for tpl, item in self.doc["paths"].items():
            params = {}
            for method in self.METHODS:
                op = item.get(method)
                if not op:
                    continue
                for p in item.get("parameters", []) + op.get("parameters", []):
                    p = self.resolve(p)
                    if p["in"] == "path":
                        params[p["name"]] = self.inline(p["schema"])
                if op.get("security", self.doc.get("security")):
                    secured.append(op)
            self.templates.append((self._segments(tpl), tpl, item, params))
        self.common = set.intersection(*(set(op["responses"]) for op in secured))
        self.common_responses = {s: self.resolve(secured[0]["responses"][s])
                                 for s in self.common}
        self.not_found = self.resolve({"$ref": "#/components/responses/NotFound"})
        self._validators = {}
        self._fast = {}
        self._checked = 0

    # -- the document ------------------------------------------------------------
    def pointer(self, ref):
        assert ref.startswith("#/"), "only local $refs: " + ref
        node = self.doc
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def resolve(self, node):
        while isinstance(node, dict) and "$ref" in node:
            node = self.pointer(node["$ref"])
        return node

    def inline(self, node):
        """node with every $ref replaced by what it names (the document has no cycles)."""
        if isinstance(node, dict):
            if "$ref" in node:
                out = dict(self.inline(self.pointer(node["$ref"])))
                out.update({k: self.inline(v) for k, v in node.items() if k != "$ref"})
                return out
            return {k: self.inline(v) for k, v in node.items()}
        if isinstance(node, list):
            return [self.inline(v) for v in node]
        return node

    def validator(self, key, schema):
        v = self._validators.get(key)
        if v is None:
            inlined = self.inline(schema)
            jsonschema.Draft202012Validator.check_schema(inlined)
            v = jsonschema.Draft202012Validator(inlined)
            assert v.format_checker is None, "lib/fastschema.py takes format as no assertion"
            try:
                self._fast[key] = fastschema.compile_schema(inlined)
            except fastschema.Unsupported:
                self._fast[key] = None
            # (after _fast: a test's threads may check responses at once)
            self._validators[key] = v
        return v

    # Every SAMPLE-th instance checked is also checked by jsonschema, as are a few
    # mutations of it when it is small: the compiled checker must agree on each.
    SAMPLE = 64
    SAMPLE_BYTES = 16384

    def errors(self, key, schema, instance, size=0):
        """The jsonschema errors of instance under schema (key names it in the cache):
        none when the compiled checker finds it valid."""
        v = self.validator(key, schema)
        fast = self._fast[key]
        if fast is None:
            return list(v.iter_errors(instance))
        self._checked += 1
        if self._checked % self.SAMPLE == 0:
            self._agree(key, v, fast, instance, size <= self.SAMPLE_BYTES)
        if fast(instance):
            return []
        errors = list(v.iter_errors(instance))
        assert errors, "%r: lib/fastschema.py finds %s invalid, jsonschema valid" % (
            key, json.dumps(instance)[:400])
        return errors

    @staticmethod
    def _agree(key, v, fast, instance, mutate):
        cases = [instance] + (fastschema.mutations(instance) if mutate else [])
        for x in cases:
            assert fast(x) == v.is_valid(x), \
                "%r: lib/fastschema.py and jsonschema disagree (fast: %s) on %s" % (
                    key, fast(x), json.dumps(x)[:400])

    @staticmethod
    def _segments(path):
        return path.rstrip("/").split("/")

    @staticmethod
    def _param_ok(schema, value):
        if schema.get("type") == "integer":
            return re.fullmatch(r"[0-9]+", value) is not None
        return value != ""

    def match(self, path):
        """(template, path item) of a request path below the API's base, or None.
        Literal segments win over parameters, as OpenAPI says."""
        segs = [urllib.parse.unquote(s) for s in self._segments(path)]
        best = None
        for tsegs, tpl, item, params in self.templates:
            if len(tsegs) != len(segs):
                continue
            literal = 0
            for t, s in zip(tsegs, segs):
                if t.startswith("{") and t.endswith("}"):
                    if not self._param_ok(params[t[1:-1]], s):
                        break
                elif t != s:
                    break
                else:
                    literal += 1
            else:
                if best is None or literal > best[0]:
                    best = (literal, tpl, item)
        return best[1:] if best else None

    # -- a response ---------------------------------------------------------------
    def check(self, r, api_base):
        """Fails unless response r (to a request below api_base) is documented."""
        url = r.request.url
        if not (url == api_base or url.startswith(api_base + "/")
                or url.startswith(api_base + "?")):
            return
        path = urllib.parse.urlsplit(url).path[len(urllib.parse.urlsplit(api_base).path):]
        path = path or "/"
        method = r.request.method.lower()
        head = method == "head"
        if head:
            method = "get"
        status = str(r.status_code)
        where = "%s %s -> %s" % (r.request.method, path, status)
        m = self.match(path)
        if m is None:
            assert status in self.common or status == "404", \
                "%s: the path is not in the OpenAPI document (only 404 may answer it)" % where
            resp = self.common_responses.get(status, self.not_found)
            key = ("*", status)
        else:
            tpl, item = m
            op = item.get(method)
            if op is None:
                documented = [x.upper() for x in self.METHODS if x in item]
                if status == "405":
                    allow = set(documented) | ({"HEAD"} if "GET" in documented else set())
                    got = {x.strip() for x in r.headers.get("Allow", "").split(",") if x.strip()}
                    assert got == allow, "%s: Allow %r, the document has %s" % (
                        where, r.headers.get("Allow"), sorted(allow))
                    resp = {"content": {"application/json": {
                        "schema": {"$ref": "#/components/schemas/PlainError"}}}}
                else:
                    assert status in self.common, "%s: %s is not a method of %s in the " \
                        "OpenAPI document (%s)" % (where, method.upper(), tpl, documented)
                    resp = self.common_responses[status]
                key = (tpl, "*", status)
            else:
                assert status in op["responses"], "%s: status %s is not documented for " \
                    "%s %s (%s)" % (where, status, method.upper(), tpl, sorted(op["responses"]))
                resp = self.resolve(op["responses"][status])
                key = (tpl, method, status)
        self._check_headers(r, resp, key, where)
        self._check_body(r, resp, key, where, head)

    def _check_headers(self, r, resp, key, where):
        for name, h in resp.get("headers", {}).items():
            h = self.resolve(h)
            if name not in r.headers:
                assert not h.get("required"), "%s: header %s is missing" % (where, name)
                continue
            value = r.headers[name]
            v = self.validator(key + ("header", name), h["schema"])
            if v.schema.get("type") == "integer":
                assert re.fullmatch(r"-?[0-9]+", value), "%s: %s: %r" % (where, name, value)
                value = int(value)
            errors = self.errors(key + ("header", name), h["schema"], value)
            assert not errors, "%s: header %s %r: %s" % (where, name, value, errors[0].message)

    def _check_body(self, r, resp, key, where, head):
        content = resp.get("content")
        ctype = r.headers.get("Content-Type", "")
        media = ctype.split(";")[0].strip().lower()
        if not content:
            assert head or not r.content, "%s: a body the document does not describe" % where
            return
        assert media in content, "%s: Content-Type %r, the document has %s" % (
            where, ctype, sorted(content))
        if head:
            return
        if media == "application/json":
            assert ctype == "application/json; charset=utf-8", "%s: %r" % (where, ctype)
            try:
                body = json.loads(r.content)
            except ValueError as e:
                raise AssertionError("%s: not JSON: %s" % (where, e))
            errors = sorted(self.errors(key + (media,), content[media]["schema"], body,
                                        len(r.content)),
                            key=lambda e: list(e.absolute_path))
            if errors:
                e = jsonschema.exceptions.best_match(errors)
                raise AssertionError("%s: the body does not match the OpenAPI document at "
                                     "/%s: %s; there: %s" % (
                                         where, "/".join(map(str, e.absolute_path)),
                                         e.message, json.dumps(e.instance)[:400]))
        elif media == "image/png" and r._content_consumed:
            assert r.content.startswith(b"\x89PNG\r\n\x1a\n"), "%s: not a PNG" % where


_openapi = None


def openapi():
    """The OpenAPI document (read once)."""
    global _openapi
    if _openapi is None:
        _openapi = OpenApiDoc(OPENAPI)
    return _openapi
