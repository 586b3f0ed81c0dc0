"""Clients of the API: PlainApi (no checks) and Api (held to the OpenAPI document)."""
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

from lib.openapi import openapi


class PlainApi(requests.Session):
    """A requests session bound to the API base URL and one token (no checks: the
    benchmarks time requests with it)."""

    # httpd closes a connection left idle for KeepAliveTimeout (5 s in the tests'
    # configuration): a request sent on it at that moment finds it closed unanswered.
    # As RFC 9112 (9.3.1) lets a client, an idempotent one is sent again on a new
    # connection then, and only then: a connection idle this long or more (a test's own
    # step, a large image decoded on a busy machine, can take that long).
    IDLE_CLOSED = 4.0
    IDEMPOTENT = ("GET", "HEAD", "OPTIONS", "PUT", "DELETE")

    def __init__(self, server, token=None):
        super().__init__()
        self.last_answer = None
        # loopback only: no proxy or .netrc from the environment (requests would look
        # through all of os.environ for them on every request)
        self.trust_env = False
        self.server = server
        self.token = token
        if token:
            self.headers["Authorization"] = "Bearer " + token

    def request(self, method, url, *args, **kwargs):
        if url.startswith("/"):
            url = self.server.api_base + url
        kwargs.setdefault("timeout", 30)
        kwargs.setdefault("allow_redirects", False)
        idle = time.monotonic() - self.last_answer if self.last_answer is not None else 0
        try:
            r = super().request(method, url, *args, **kwargs)
        except requests.ConnectionError as e:
            if (idle < self.IDLE_CLOSED or method.upper() not in self.IDEMPOTENT
                    or "RemoteDisconnected" not in repr(e)
                    and "ConnectionResetError" not in repr(e)):
                raise
            r = super().request(method, url, *args, **kwargs)
        self.last_answer = time.monotonic()
        return r


class Api(PlainApi):
    """PlainApi whose every response is held to the OpenAPI document."""

    def request(self, method, url, *args, **kwargs):
        r = super().request(method, url, *args, **kwargs)
        openapi().check(r, self.server.api_base)
        return r
