"""Where things are, which backend runs, and small helpers every test may use."""
import atexit
import functools
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

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
# make test-asan points the tests at its sanitizer build (QRT_TEST_BUILD=build/asan).
BUILD = os.environ.get("QRT_TEST_BUILD") or os.path.join(TOP, "build")
ADMIN = os.path.join(BUILD, "qrtrack-admin")
MODULE = os.path.join(BUILD, "mod_qrtrack.so")
# Sanitizer reports of the servers and qrtrack-admin (make test-asan), else None.
REPORTS = os.path.join(BUILD, "reports") if os.path.isdir(os.path.join(BUILD, "reports")) \
    else None
if REPORTS:
    # A small quarantine (freed memory AddressSanitizer keeps aside, 256 MB by default): the
    # tests that watch the children's memory then see the module's, not the sanitizer's.
    os.environ["ASAN_OPTIONS"] = ("detect_leaks=0:quarantine_size_mb=4:"
                                  "thread_local_quarantine_size_kb=64:log_path=%s/asan"
                                  % REPORTS)
    os.environ["UBSAN_OPTIONS"] = "print_stacktrace=1:log_path=%s/ubsan" % REPORTS
OPENAPI = os.path.join(TOP, "openapi", "qrtrack.json")
# The schema version a migrated database ends at: the highest sql/NNN_*.sql.
SQL_DIR = os.path.join(TOP, "sql")
LATEST_SCHEMA = max(int(f[:3]) for f in os.listdir(SQL_DIR) if f[:3].isdigit())

BACKEND = os.environ.get("QRT_TEST_BACKEND", "sqlite")
assert BACKEND in ("sqlite", "pgsql"), "QRT_TEST_BACKEND is sqlite or pgsql"
def _pg_bin():
    """Debian's PostgreSQL server programs (the newest version installed)."""
    versions = sorted((d for d in os.listdir("/usr/lib/postgresql") if d.isdigit()), key=int) \
        if os.path.isdir("/usr/lib/postgresql") else []
    return "/usr/lib/postgresql/%s/bin" % (versions[-1] if versions else "15")


PG_BIN = _pg_bin()
# psql itself: /usr/bin/psql is Debian's pg_wrapper, a Perl script that costs about four
# times the client's own start on every call (the tests run it about a thousand times).
PSQL = os.path.join(PG_BIN, "psql")


def as_user(name):
    """The prefix that runs a command as user name (from root): setpriv changes the ids
    and execs, without runuser's PAM session (a process more, and twice the time, on
    each of the thousands of commands the tests run as www-data or postgres)."""
    return ["setpriv", "--reuid=" + name, "--regid=" + name, "--init-groups", "--"]

CRASH = re.compile(r"exit signal|Segmentation fault|AH00052|double free|"
                   r"AddressSanitizer|Aborted|core dumped|stack smashing")


@functools.lru_cache(maxsize=None)
def apxs(var):
    return subprocess.check_output(["apxs", "-q", var], text=True).strip()


# The server binary: build/asan/apache2 (the sanitizers' runtimes preloaded) under
# make test-asan.
HTTPD = os.path.join(BUILD, "apache2") if os.path.exists(os.path.join(BUILD, "apache2")) \
    else os.path.join(apxs("SBINDIR"), "apache2")


def sanitizer_reports():
    """Every sanitizer report written so far (make test-asan), as lines."""
    if not REPORTS:
        return []
    lines = []
    for name in sorted(os.listdir(REPORTS)):
        with open(os.path.join(REPORTS, name), errors="replace") as f:
            lines += ["%s: %s" % (name, l) for l in f.read().splitlines()]
    return lines


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sqlite_only(why):
    """A test of something only SQLite has (its WAL file, bytes that are not UTF-8
    in a text column, which PostgreSQL refuses to store): it runs in the SQLite
    pass of `make api` and says why it does not apply to PostgreSQL."""
    return pytest.mark.skipif(BACKEND != "sqlite", reason="SQLite only: " + why)
