"""Black-box tests of mod_qrtrack against a real, two-process httpd (event MPM).

The server is started once per session on a free loopback port with a config
generated from conf/httpd.conf.in, and stopped by its PID at the end. Any crash
line in its error log fails the run.
"""
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest
import requests

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(TOP, "build")
ADMIN = os.path.join(BUILD, "qrtrack-admin")
MODULE = os.path.join(BUILD, "mod_qrtrack.so")

CRASH = re.compile(r"exit signal|Segmentation fault|AH00052|double free|"
                   r"AddressSanitizer|Aborted|core dumped|stack smashing")


def apxs(var):
    return subprocess.check_output(["apxs", "-q", var], text=True).strip()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One throwaway httpd with mod_qrtrack, its data in a fresh directory."""

    def __init__(self, extra="", loglevel="warn"):
        # Not pytest's tmp_path: it is 0700 and the children run as www-data.
        self.dir = tempfile.mkdtemp(prefix="qrtrack-test-")
        os.chmod(self.dir, 0o755)
        for sub in ("run", "logs"):
            os.makedirs(os.path.join(self.dir, sub))
        self.port = free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        self.api_base = self.base + "/api"
        self.db = os.path.join(self.dir, "qrtrack.db")
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
                .replace("@LIBEXEC@", apxs("LIBEXECDIR")).replace("@MODULE@", MODULE)
                .replace("@LOGLEVEL@", loglevel).replace("@USER@", user)
                .replace("@EXTRA@", extra))
        self.conf = os.path.join(self.dir, "httpd.conf")
        with open(self.conf, "w") as f:
            f.write(conf)
        self.proc = None
        self.tokens = []

    # -- administration ---------------------------------------------------
    def admin(self, *args, check=True):
        cmd = self.as_user + [ADMIN, "--params", self.db] + list(args)
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
        self.proc = subprocess.Popen([os.path.join(apxs("SBINDIR"), "apache2"),
                                      "-f", self.conf, "-DFOREGROUND"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("httpd exited: %s\n%s" % (
                    self.proc.stderr.read().decode(), self.error_log()))
            try:
                requests.get(self.base + "/api/account", timeout=1)
                return self
            except requests.ConnectionError:
                time.sleep(0.05)
        raise AssertionError("httpd did not come up:\n" + self.error_log())

    def stop(self):
        """graceful-stop (SIGWINCH): children finish their requests, then exit.

        An immediate stop (SIGTERM) while workers are busy makes the event MPM
        close their sockets from another thread, which can crash a dying child in
        the MPM itself (apr_os_sock_get); a graceful stop avoids that path."""
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
        return [l for l in self.error_log().splitlines() if CRASH.search(l)]

    def cleanup(self):
        """Stops the server and removes its files; fails on any crash line."""
        self.stop()
        crashes = self.crash_lines()
        shutil.rmtree(self.dir, ignore_errors=True)
        assert not crashes, "crash lines in the error log:\n" + "\n".join(crashes)

    def sql(self, query):
        """Reads the database directly (tests only: checks what was stored)."""
        p = subprocess.run(self.as_user + ["sqlite3", "-cmd", ".timeout 10000",
                                           self.db, query],
                           capture_output=True, text=True, check=True)
        return p.stdout


class Api(requests.Session):
    """A requests session bound to the API base URL and one token."""

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


def start_server(extra="", accounts=()):
    srv = Server(extra=extra)
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
