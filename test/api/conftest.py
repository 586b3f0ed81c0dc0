"""Black-box tests of mod_qrtrack against a real, two-process httpd (event MPM).

The server is started once per session on a free loopback port with a config
generated from conf/httpd.conf.in, and stopped by its PID at the end. Any crash
line in its error log fails the run.

QRT_TEST_BACKEND=sqlite (default) or pgsql chooses the database. For pgsql the
session starts a throwaway PostgreSQL cluster from Debian's packages (initdb into a
temporary directory as the postgres user, a free loopback port) and gives every
server its own database in it; the cluster is stopped by its PID at the end.
"""
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

from lib.wait import wait_until  # noqa: F401 (re-exported for the tests)

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# make test-asan points the tests at its sanitizer build (QRT_TEST_BUILD=build/asan).
BUILD = os.environ.get("QRT_TEST_BUILD") or os.path.join(TOP, "build")
ADMIN = os.path.join(BUILD, "qrtrack-admin")
MODULE = os.path.join(BUILD, "mod_qrtrack.so")
# Sanitizer reports of the servers and qrtrack-admin (make test-asan), else None.
REPORTS = os.path.join(BUILD, "reports") if os.path.isdir(os.path.join(BUILD, "reports")) \
    else None
if REPORTS:
    os.environ["ASAN_OPTIONS"] = "detect_leaks=0:log_path=%s/asan" % REPORTS
    os.environ["UBSAN_OPTIONS"] = "print_stacktrace=1:log_path=%s/ubsan" % REPORTS
OPENAPI = os.path.join(TOP, "openapi", "qrtrack.json")

BACKEND = os.environ.get("QRT_TEST_BACKEND", "sqlite")
assert BACKEND in ("sqlite", "pgsql"), "QRT_TEST_BACKEND is sqlite or pgsql"
def _pg_bin():
    """Debian's PostgreSQL server programs (the newest version installed)."""
    versions = sorted((d for d in os.listdir("/usr/lib/postgresql") if d.isdigit()), key=int) \
        if os.path.isdir("/usr/lib/postgresql") else []
    return "/usr/lib/postgresql/%s/bin" % (versions[-1] if versions else "15")


PG_BIN = _pg_bin()

CRASH = re.compile(r"exit signal|Segmentation fault|AH00052|double free|"
                   r"AddressSanitizer|Aborted|core dumped|stack smashing")


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


def _as_postgres(cmd, **kw):
    """Runs cmd as the postgres user when we are root (initdb refuses root)."""
    if os.geteuid() == 0:
        cmd = ["runuser", "-u", "postgres", "--"] + cmd
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


class PgCluster:
    """A throwaway PostgreSQL cluster on a free loopback port, stopped by PID."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="qrtrack-pg-")
        os.chmod(self.dir, 0o755)
        self.data = os.path.join(self.dir, "data")
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self.port = free_port()
        self.user = "qrtrack"
        self.proc = None
        self.ndb = 0
        p = _as_postgres([os.path.join(PG_BIN, "initdb"), "-D", self.data, "-U", "postgres",
                          "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8"])
        if p.returncode != 0:
            raise AssertionError("initdb failed: %s%s" % (p.stdout, p.stderr))
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            # Loopback only; a socket directory of its own. Throwaway test data needs
            # no fsync; benchmarks (QRT_PG_DURABLE=1) keep PostgreSQL's durable defaults.
            f.write("listen_addresses = '127.0.0.1'\nport = %d\n"
                    "unix_socket_directories = '%s'\nmax_connections = 300\n"
                    "shared_buffers = 256MB\n" % (self.port, self.dir))
            if os.environ.get("QRT_PG_DURABLE") != "1":
                f.write("fsync = off\nfull_page_writes = off\n")
            # More settings for a diagnosis, e.g. pg_stat_statements.
            f.write(os.environ.get("QRT_PG_CONF", "").replace(";", "\n") + "\n")
        self.log = open(os.path.join(self.dir, "postgres.log"), "w")
        self.start()
        self.psql("postgres", "CREATE ROLE %s LOGIN CREATEDB" % self.user, user="postgres")

    def start(self):
        """(Re)starts the postmaster on the same data and port."""
        cmd = [os.path.join(PG_BIN, "postgres"), "-D", self.data]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.time() + 30
        while True:
            if self.proc.poll() is not None:
                raise AssertionError("postgres exited:\n" + self.logtext())
            p = subprocess.run([os.path.join(PG_BIN, "pg_isready"), "-h", "127.0.0.1",
                                "-p", str(self.port)], capture_output=True)
            if p.returncode == 0:
                return
            if time.time() > deadline:
                raise AssertionError("postgres did not come up:\n" + self.logtext())
            time.sleep(0.1)

    def halt(self):
        """Stops the postmaster (fast shutdown, by its PID), keeping its files."""
        pid = self.postmaster_pid()
        if self.proc and self.proc.poll() is None:
            os.kill(pid or self.proc.pid, signal.SIGINT)
            self.proc.wait(timeout=30)

    def logtext(self):
        with open(os.path.join(self.dir, "postgres.log"), errors="replace") as f:
            return f.read()

    def psql(self, db, query, user=None):
        p = subprocess.run(["psql", "-X", "-q", "-At", "-F", "|", "-v", "ON_ERROR_STOP=1",
                            "-h", "127.0.0.1", "-p", str(self.port), "-U", user or self.user,
                            "-d", db, "-c", query], capture_output=True, text=True)
        if p.returncode != 0:
            raise AssertionError("psql %s: %s" % (query, p.stderr))
        return p.stdout

    def new_database(self):
        """A fresh empty database; its DBDParams."""
        self.ndb += 1
        name = "qrt_%d_%d" % (os.getpid(), self.ndb)
        self.psql("postgres", "CREATE DATABASE %s OWNER %s" % (name, self.user),
                  user="postgres")
        return name, self.params(name)

    def params(self, name):
        return "host=127.0.0.1 port=%d dbname=%s user=%s" % (self.port, name, self.user)

    def postmaster_pid(self):
        """The postmaster's PID (runuser started it: self.proc may be runuser)."""
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                return int(f.readline().strip())
        except (OSError, ValueError):
            return None

    def stop(self):
        """Fast shutdown (SIGINT to the postmaster, by its PID), then the files go."""
        if self.proc and self.proc.poll() is None:
            pid = self.postmaster_pid()
            try:
                os.kill(pid or self.proc.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                if pid:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


_pg = None


def pg_cluster():
    """The session's PostgreSQL cluster, started on first use."""
    global _pg
    if _pg is None:
        _pg = PgCluster()
        atexit.register(_pg.stop)
    return _pg


class Memcached:
    """Debian's memcached on a loopback port (a free one, or the given one to start it
    again where a stopped one was), stopped by its PID."""

    def __init__(self, port=None):
        self.port = port or free_port()
        self.addr = "127.0.0.1:%d" % self.port
        cmd = ["memcached", "-l", "127.0.0.1", "-p", str(self.port), "-U", "0", "-m", "16"]
        if os.geteuid() == 0:
            cmd += ["-u", "nobody"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    break
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise AssertionError("memcached did not come up: %s"
                                         % self.proc.stderr.read())
                time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Server:
    """One throwaway httpd with mod_qrtrack, its data in a fresh directory.

    backend: "sqlite" or "pgsql" (default QRT_TEST_BACKEND); shared_db: another
    Server whose database this one uses too (a second node of one cluster); build:
    another build directory's module and admin tool (bench_scan.py's reference)."""

    def __init__(self, extra="", loglevel="warn", backend=None, shared_db=None, build=None):
        # Not pytest's tmp_path: it is 0700 and the children run as www-data.
        self.dir = tempfile.mkdtemp(prefix="qrtrack-test-")
        os.chmod(self.dir, 0o755)
        for sub in ("run", "logs"):
            os.makedirs(os.path.join(self.dir, sub))
        self.port = free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        self.api_base = self.base + "/api"
        self.backend = shared_db.backend if shared_db else (backend or BACKEND)
        if shared_db:
            self.driver, self.db, self.dbname = shared_db.driver, shared_db.db, shared_db.dbname
        elif self.backend == "pgsql":
            self.driver = "pgsql"
            self.dbname, self.db = pg_cluster().new_database()
        else:
            self.driver, self.dbname = "sqlite3", None
            self.db = os.path.join(self.dir, "qrtrack.db")
        self.module = os.path.join(build, "mod_qrtrack.so") if build else MODULE
        self.admin_tool = os.path.join(build, "qrtrack-admin") if build else ADMIN
        self.as_user = []
        user = ""
        if os.geteuid() == 0:
            pw = pwd.getpwnam("www-data")
            for root, dirs, files in os.walk(self.dir):
                for name in [root] + [os.path.join(root, d) for d in dirs]:
                    os.chown(name, pw.pw_uid, pw.pw_gid)
            user = "User www-data\nGroup www-data"
            # The admin tool writes as the server's user, so every database
            # file (WAL included) stays the children's.
            self.as_user = ["runuser", "-u", "www-data", "--"]
        with open(os.path.join(TOP, "conf", "httpd.conf.in")) as f:
            conf = f.read()
        conf = (conf.replace("@DATA@", self.dir).replace("@PORT@", str(self.port))
                .replace("@LIBEXEC@", apxs("LIBEXECDIR")).replace("@MODULE@", self.module)
                .replace("@LOGLEVEL@", loglevel).replace("@USER@", user)
                .replace("@DBDRIVER@", self.driver).replace("@DBDPARAMS@", self.db)
                .replace("@EXTRA@", extra))
        self.conf = os.path.join(self.dir, "httpd.conf")
        with open(self.conf, "w") as f:
            f.write(conf)
        self.proc = None
        self.tokens = []

    # -- administration ---------------------------------------------------
    def admin(self, *args, check=True):
        cmd = self.as_user + [self.admin_tool, "--driver", self.driver, "--params", self.db] + list(args)
        p = subprocess.run(cmd, capture_output=True, text=True)
        if check and p.returncode != 0:
            raise AssertionError("qrtrack-admin %s failed: %s" % (args, p.stderr))
        return p

    def account(self, name, plan="professional"):
        return int(self.admin("account", "add", name, "--plan", plan).stdout.strip())

    def token(self, account="acme"):
        tok = self.admin("token", "add", account).stdout.strip()
        self.tokens.append(tok)
        return tok

    # -- life cycle ----------------------------------------------------------
    def start(self):
        self.proc = subprocess.Popen([HTTPD,
                                      "-f", self.conf, "-DFOREGROUND"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("httpd exited: %s\n%s" % (
                    self.proc.stderr.read().decode(), self.error_log()))
            try:
                requests.get(self.base + "/api/account", timeout=5)
                return self
            except (requests.ConnectionError, requests.Timeout):
                time.sleep(0.05)
        raise AssertionError("httpd did not come up:\n" + self.error_log())

    def stop(self):
        """graceful-stop (SIGWINCH), as Debian's apache2.service stops the server:
        children finish their requests, then exit (an immediate stop is tested in
        test_faults.py)."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGWINCH)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()

    def error_log(self):
        try:
            with open(os.path.join(self.dir, "logs", "error.log"), errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def access_log(self):
        try:
            with open(os.path.join(self.dir, "logs", "access.log"), errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def crash_lines(self):
        return [l for l in self.error_log().splitlines() if CRASH.search(l)] \
            + sanitizer_reports()

    def cleanup(self):
        """Stops the server and removes its files; fails on any crash line."""
        self.stop()
        crashes = self.crash_lines()
        shutil.rmtree(self.dir, ignore_errors=True)
        assert not crashes, "crash lines in the error log:\n" + "\n".join(crashes)

    def sql(self, query):
        """Reads the database directly (tests only: checks what was stored);
        rows as lines, columns joined by '|', as sqlite3 prints them."""
        if self.backend == "pgsql":
            return pg_cluster().psql(self.dbname, query)
        p = subprocess.run(self.as_user + ["sqlite3", "-cmd", ".timeout 10000",
                                           self.db, query],
                           capture_output=True, text=True, check=True)
        return p.stdout


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
            v = self._validators[key] = jsonschema.Draft202012Validator(inlined)
        return v

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
            errors = list(v.iter_errors(value))
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
            errors = sorted(self.validator(key + (media,), content[media]["schema"])
                            .iter_errors(body), key=lambda e: list(e.absolute_path))
            if errors:
                e = jsonschema.exceptions.best_match(errors)
                raise AssertionError("%s: the body does not match the OpenAPI document at "
                                     "/%s: %s" % (where, "/".join(map(str, e.absolute_path)),
                                                  e.message))
        elif media == "image/png" and r._content_consumed:
            assert r.content.startswith(b"\x89PNG\r\n\x1a\n"), "%s: not a PNG" % where


_openapi = None


def openapi():
    """The OpenAPI document (read once)."""
    global _openapi
    if _openapi is None:
        _openapi = OpenApiDoc(OPENAPI)
    return _openapi


class PlainApi(requests.Session):
    """A requests session bound to the API base URL and one token (no checks: the
    benchmarks time requests with it)."""

    def __init__(self, server, token=None):
        super().__init__()
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


def configtest(extra):
    """apache2 -t on a generated config with extra lines: (exit status, output)."""
    srv = Server(extra=extra)
    try:
        p = subprocess.run([HTTPD, "-t", "-f", srv.conf],
                           capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr
    finally:
        srv.cleanup()


def start_server(extra="", accounts=(), **kw):
    srv = Server(extra=extra, **kw)
    srv.admin("init")
    for name, plan in accounts:
        srv.account(name, plan)
    return srv.start()


@pytest.fixture(scope="session")
def server():
    srv = start_server(
        extra="QRTrackAccountRateLimit bigco 300\n",
        accounts=[("acme", "professional"), ("other", "professional"),
                  ("bigco", "enterprise"), ("freebie", "free"), ("startup", "starter")])
    yield srv
    srv.stop()
    logs = srv.error_log() + srv.access_log()
    leaked = [t for t in srv.tokens if t in logs]
    srv.cleanup()
    assert not leaked, "a token appears in a log"


@pytest.fixture
def token(server):
    """A fresh token of account acme: each test gets its own rate-limit window."""
    return server.token("acme")


@pytest.fixture
def api(server, token):
    with Api(server, token) as s:
        yield s


@pytest.fixture
def other_api(server):
    """A caller of another account."""
    with Api(server, server.token("other")) as s:
        yield s


@pytest.fixture
def anon(server):
    with Api(server) as s:
        yield s


# Tests marked slow without touching their files: the package build, the browser tests
# (those using the `browser` fixture) and the long timing tests named here.
SLOW_MODULES = {"test_package.py"}
SLOW_TESTS = {   # the longest of the SQLite pass, as pytest --durations lists them
    "test_long_new_strings_do_not_grow_the_writer",
    "test_immediate_stops_under_scans_crash_nothing_and_lose_nothing_acknowledged",
    "test_children_killed_mid_scan_leave_the_queue_usable",
    "test_a_full_disk_answers_503_and_service_returns_under_load_once_space_is_freed",
    "test_a_database_locked_from_outside_bounds_the_scans_wait_and_the_api_answers",
    "test_writes_on_a_sqlite_database_locked_from_outside_answer_503_within_the_timeout",
    "test_the_writers_seal_settled_days",
    "test_imported_visits_make_their_days_stale_at_once",
    "test_memcached_down_counts_per_node_then_back_to_memcached",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if (item.fspath.basename in SLOW_MODULES or "browser" in getattr(item, "fixturenames", ())
                or item.name.split("[")[0] in SLOW_TESTS):
            item.add_marker(pytest.mark.slow)
