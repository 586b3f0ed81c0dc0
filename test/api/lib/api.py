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

    def __init__(self, server, token=None):
        super().__init__()
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
        return super().request(method, url, *args, **kwargs)


class Api(PlainApi):
    """PlainApi whose every response is held to the OpenAPI document."""

    def request(self, method, url, *args, **kwargs):
        r = super().request(method, url, *args, **kwargs)
        openapi().check(r, self.server.api_base)
        return r
