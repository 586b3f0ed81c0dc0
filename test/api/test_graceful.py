"""Scans across a graceful restart (Debian's logrotate runs `apache2ctl graceful` every
day). The previous generation's children stop accepting at once and end once their
requests are answered; httpd's parent starts a new child for each one it reaps, but if
its first look after reading the configuration finds none ended it sleeps a second and
then starts the rest one a second. The module's post_config waits (at most a second) for
the old children to end, so that scans wait only as long as the slowest old request."""
import contextlib
import json
import os
import socket
import subprocess
import time
import types

import pytest
import requests

from conftest import start_server
from lib.env import HTTPD
from lib.load import Load
from lib.server import child_pids
from lib.wait import wait_until


class Held:
    """POST /api/tracker requests whose bodies stop halfway, opened until every child of
    srv serves one of them (a request whose body is incomplete keeps its worker, so the
    child cannot end before it is answered). finish() sends the rest and reads each
    answer."""

    def __init__(self, srv, token):
        self.srv = srv
        body = json.dumps({"redirect_url": "https://example.com/held"}).encode()
        self.rest = body[len(body) // 2:]
        head = ("POST /api/tracker HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                "Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n"
                "\r\n" % (token, len(body))).encode() + body[:len(body) // 2]
        kids = set(child_pids(srv.proc.pid, httpd_only=True))
        self.socks = []
        held_by = set()
        while held_by != kids:
            assert len(self.socks) < 40, "the requests all went to %s of %s" % (held_by, kids)
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
            s.sendall(head)
            self.socks.append(s)
            port = s.getsockname()[1]
            held_by |= wait_until(lambda: self.holder(port), timeout=10,
                                  what="a child to take the connection")

    def holder(self, port):
        """{pid} of the child that holds the server's end of the connection from port."""
        inode = None
        with open("/proc/net/tcp") as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                local, remote = fields[1], fields[2]
                if int(local.split(":")[1], 16) == self.srv.port \
                        and int(remote.split(":")[1], 16) == port:
                    inode = fields[9]
        if not inode or inode == "0":
            return None
        for pid in child_pids(self.srv.proc.pid, httpd_only=True):
            try:
                for fd in os.listdir("/proc/%d/fd" % pid):
                    if os.readlink("/proc/%d/fd/%s" % (pid, fd)) == "socket:[%s]" % inode:
                        return {pid}
            except OSError:
                continue
        return None

    def close(self):
        for s in self.socks:
            s.close()

    def finish(self):
        """Sends the rest of every body; returns the answers' status lines."""
        for s in self.socks:
            s.sendall(self.rest)
        out = []
        for s in self.socks:
            data = b""
            while b"\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            out.append(data.split(b"\r\n", 1)[0].decode())
        self.close()
        return out


def graceful(srv):
    subprocess.run([HTTPD, "-f", srv.conf, "-k", "graceful"], check=True)


@contextlib.contextmanager
def restart_case(mpm="event"):
    """A started server with a token of its account and a tracker's code (.srv, .token,
    .code), whose .held and .scans, once set, are closed with it."""
    srv = start_server(accounts=[("acme", "professional")], mpm=mpm)
    case = types.SimpleNamespace(srv=srv, held=None, scans=None)
    try:
        case.token = srv.token("acme")
        r = requests.post(srv.base + "/api/tracker",
                          json={"redirect_url": "https://example.com/g"},
                          headers={"Authorization": "Bearer " + case.token}, timeout=30)
        case.code = r.json()["code"]
        yield case
    finally:
        if case.held:
            case.held.close()
        if case.scans:
            case.scans.finish()
        srv.cleanup()


def answered(held, scans):
    """Lets the held requests end and waits for 20 scans begun after that: (when they
    ended, monotonic; every scan), each held request and each scan answered."""
    answers = held.finish()
    done = time.monotonic()
    wait_until(lambda: sum(1 for s, _, c in scans.results if s > done and c == 302) >= 20,
               timeout=30, what="scans after the restart")
    results = scans.finish()
    assert all(a.startswith("HTTP/1.1 200") for a in answers), answers
    assert [r for r in results if r[2] != 302] == []
    return done, results


@pytest.mark.parametrize("mpm", ["event", "worker", "prefork"])
def test_scans_wait_no_longer_than_the_old_childrens_last_requests(mpm):
    with restart_case(mpm) as case:
        srv = case.srv
        scans = case.scans = Load(srv, case.code, threads=4)
        wait_until(lambda: sum(1 for r in scans.results if r[2] == 302) >= 20, timeout=30,
                   what="scans before the restart")
        case.held = Held(srv, case.token)
        signalled = time.monotonic()
        configured = srv.error_log().count("QRT00065")
        graceful(srv)
        # The held requests end 0.1 s after the parent has read its configuration again
        # (QRT00065, its last line before it waits for the old children): after the
        # MPM's first look without the wait, well within the wait with it.
        wait_until(lambda: srv.error_log().count("QRT00065") > configured, timeout=30,
                   interval=0.01, what="the parent to read its configuration again")
        time.sleep(0.1)
        done, results = answered(case.held, scans)
        # Scans waiting since the old children stopped accepting are answered at once
        # once those children's last requests are. Without the wait, httpd's parent slept
        # a second after its first look and then started a new child a second later:
        # the first scan came 2 s after the restart.
        first = min(end for _, end, _ in results if end > done) - done
        assert first < 0.8, (first, done - signalled)
        assert "QRT00132" not in srv.error_log()
        wait_until(lambda: int(srv.sql("SELECT COUNT(*) FROM visits").strip()) == len(results),
                   timeout=30, what="every scan's visit")


def test_an_old_child_busy_past_the_wait_is_logged_and_left_to_httpd():
    with restart_case() as case:
        srv = case.srv
        case.held = Held(srv, case.token)
        case.scans = Load(srv, case.code, threads=4)
        graceful(srv)
        wait_until(lambda: "QRT00132" in srv.error_log(), timeout=10, what="QRT00132")
        answered(case.held, case.scans)
        line = [l for l in srv.error_log().splitlines() if "QRT00132" in l]
        assert len(line) == 1 and "notice" in line[0], line
        assert "2 of the previous generation's 2 children" in line[0], line
