"""A client that sends scan after scan on one keep-alive connection (a load balancer, a
proxy) keeps it while every worker thread of the child is busy: httpd's event MPM would
close it when its next request comes and no worker is idle (mod_qrtrack_keepalive.c).
The connection still ends at KeepAliveTimeout, after MaxKeepAliveRequests, and when the
server stops; pipelined scans are all answered; QRTrackScanKeepAlive Off leaves the MPM's
own handling."""
import select
import socket
import threading
import time

import pytest
import requests

from conftest import Api, start_server
from lib.env import apxs
from lib.server import qrtrack_status
from lib.webhooks import STATUS_CONF
from lib.qr import IPHONE
from lib.rawhttp import ClosedBeforeAnswer, read_answer

# One child of four threads: with the scans of six other clients at once, its workers are
# all busy most of the time.
ONE_CHILD = ("StartServers 1\nThreadsPerChild 4\nMaxRequestWorkers 4\nMaxSpareThreads 4\n"
             "MinSpareThreads 1\n")
SCANS = 150


def tracker(srv, url="https://example.com/ka"):
    with Api(srv, srv.token("acme")) as a:
        return a.post("/tracker", json={"redirect_url": url}).json()


def recorded(srv, t):
    return int(srv.sql("SELECT COUNT(*) FROM visits WHERE tracker_id = %d"
                       % t["tracker_id"]).strip())


class Conn:
    """A keep-alive connection that sends GET requests and reads their answers."""

    def __init__(self, srv, timeout=30, host=None):
        self.srv = srv
        self.host = host or "127.0.0.1:%d" % srv.port
        self.sock = socket.create_connection(("127.0.0.1", srv.port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.sock.makefile("rb")

    def request(self, path):
        return ("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\n\r\n"
                % (path, self.host, IPHONE)).encode()

    def get(self, path):
        """(status, whether the answer says Connection: close)."""
        self.sock.sendall(self.request(path))
        code, _, close = read_answer(self.f)
        return code, close

    def ends_within(self, seconds):
        """Seconds until the server ends the connection (its reading side gets the end
        of the stream), or None when it is still open after `seconds` (and usable)."""
        t0 = time.monotonic()
        if not select.select([self.sock], [], [], seconds)[0]:
            return None
        try:
            data = self.f.read(1)
        except ConnectionResetError:
            data = b""
        assert data == b"", data
        return time.monotonic() - t0

    def close(self):
        self.f.close()
        self.sock.close()


def waiting(srv, host=None, t=None):
    """A tracker (t, or a new one), its scan path and a connection that scanned it twice
    (with Host: host): after its second request, the connection waits for the next one
    (t, path, connection)."""
    t = t or tracker(srv)
    path = "/q/" + t["code"]
    c = Conn(srv, host=host)
    assert c.get(path) == (302, False)
    assert c.get(path) == (302, False)
    return t, path, c


def busy_clients(url, stop, counts, n=6):
    """n clients scanning url one connection a scan until stop is set."""
    def run():
        with requests.Session() as s:
            while not stop.is_set():
                r = s.get(url, allow_redirects=False, timeout=60,
                          headers={"User-Agent": IPHONE, "Connection": "close"})
                with lock:
                    counts[r.status_code] = counts.get(r.status_code, 0) + 1
    lock = threading.Lock()
    threads = [threading.Thread(target=run, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    return threads


def persistent_client(srv, path, scans, out):
    """scans scans on keep-alive connections, a new one whenever the server ends one:
    out gets the statuses and, for each connection the server ended without saying so in
    an answer (Connection: close after MaxKeepAliveRequests), how many answers it had
    given."""
    c, answered = Conn(srv), 0
    while len(out["codes"]) < scans:
        try:
            code, close = c.get(path)
        except (ClosedBeforeAnswer, ConnectionResetError, BrokenPipeError):
            out["ended_after"].append(answered)
            c.close()
            c, answered = Conn(srv), 0
            continue
        out["codes"].append(code)
        answered += 1
        if close:
            c.close()
            c, answered = Conn(srv), 0
    c.close()


@pytest.mark.parametrize("keepalive", ["On", "Off"])
def test_a_client_that_reuses_its_connection_keeps_it_while_every_worker_waits(keepalive):
    """Two clients scan 150 times each on keep-alive connections while six others scan one
    connection a scan: from its second answer on, a connection is never ended by the
    server (On); the MPM's own handling ends some (Off, the contrast that shows the load
    makes it: about one reused connection in twenty scans here, so the two clients' 300
    scans leave no doubt). Every answered scan is recorded, once."""
    srv = start_server(extra=ONE_CHILD + "QRTrackScanKeepAlive %s\n" % keepalive,
                       accounts=[("acme", "professional")])
    try:
        t = tracker(srv)
        path = "/q/" + t["code"]
        stop, counts = threading.Event(), {}
        busy = busy_clients(srv.base + path, stop, counts)
        outs = [{"codes": [], "ended_after": []} for _ in range(2)]
        clients = [threading.Thread(target=persistent_client, args=(srv, path, SCANS, o))
                   for o in outs]
        try:
            for c in clients:
                c.start()
            for c in clients:
                c.join(120)
        finally:
            stop.set()
            for b in busy:
                b.join(60)
        assert all(o["codes"] == [302] * SCANS for o in outs), outs
        assert set(counts) == {302}, counts
        ended = [n for o in outs for n in o["ended_after"] if n >= 2]
        if keepalive == "On":
            assert ended == [], outs
        else:
            assert ended, "the MPM ended no reused connection: the load was not enough " \
                          "to show the difference (%s)" % outs
        assert recorded(srv, t) == 2 * SCANS + counts[302]
    finally:
        srv.cleanup()


def test_a_waiting_connection_ends_at_keepalive_timeout_and_after_max_requests():
    """KeepAliveTimeout 1 (Timeout stays 60): a connection that scanned twice, then waits,
    is ended by the server after about a second. MaxKeepAliveRequests 3: the answer to the
    fourth request (the third kept alive), as httpd counts, says Connection: close and the
    connection ends. mod_status counts the scans after which a connection waited (the
    second of the first connection; the second and third of the other) and the one
    connection the module ended."""
    srv = start_server(extra="KeepAliveTimeout 1\nMaxKeepAliveRequests 3\n"
                       + STATUS_CONF % apxs("LIBEXECDIR"),
                       accounts=[("acme", "professional")])
    try:
        t, path, c = waiting(srv)
        took = c.ends_within(10)
        assert took is not None, "the connection was still open 10 s after its last scan"
        assert 0.7 <= took <= 4, took
        c.close()
        c = Conn(srv)
        assert [c.get(path) for _ in range(4)] == [(302, False)] * 3 + [(302, True)]
        took = c.ends_within(10)
        assert took is not None and took < 1, took
        c.close()
        assert recorded(srv, t) == 6
        st = qrtrack_status(srv)
        assert (st["QRTrackScanKeepAliveWaits"], st["QRTrackScanKeepAliveEnded"]) \
            == ("3", "1"), st
    finally:
        srv.cleanup()


# The main server keeps connections alive 30 s, one name-based host 1 s.
VHOSTS = """
KeepAliveTimeout 30
<VirtualHost *:*>
    ServerName 127.0.0.1
</VirtualHost>
<VirtualHost *:*>
    ServerName quick.example
    KeepAliveTimeout 1
</VirtualHost>
"""


def test_each_virtual_host_s_keepalive_timeout_holds():
    """A waiting connection ends at the KeepAliveTimeout of the virtual host its scans
    went to, as httpd picks it (the host's own when set, else the address's first host's):
    quick.example's after about a second, the default host's not within four."""
    srv = start_server(extra=VHOSTS, accounts=[("acme", "professional")])
    quick = slow = None
    try:
        t, _, quick = waiting(srv, host="quick.example")
        _, _, slow = waiting(srv, t=t)
        took = quick.ends_within(10)
        assert took is not None and 0.7 <= took <= 4, took
        assert slow.ends_within(3) is None
        assert slow.get("/q/" + t["code"]) == (302, False)
        assert recorded(srv, t) == 5
    finally:
        for c in (quick, slow):
            if c:
                c.close()
        srv.cleanup()


@pytest.mark.parametrize("mpm", ["event", "worker", "prefork"])
def test_pipelined_scans_on_a_waiting_connection_are_all_answered(mpm):
    """Scans sent at once, on a connection that waits for its next request, are each
    answered in order and recorded once; the connection then serves the API too. Under
    the worker and prefork MPMs (which keep a connection on its thread) the same holds."""
    srv = start_server(accounts=[("acme", "professional")], mpm=mpm)
    try:
        t, path, c = waiting(srv)
        c.sock.sendall(c.request(path) * 5)
        assert [read_answer(c.f)[0] for _ in range(5)] == [302] * 5
        assert c.get("/api/openapi.json")[0] == 200
        assert c.get(path) == (302, False)
        c.close()
        assert recorded(srv, t) == 8
    finally:
        srv.cleanup()


def test_the_server_stops_at_once_with_a_connection_waiting():
    """KeepAliveTimeout 30: a graceful stop with a connection waiting after its scans ends
    that connection at once and the server exits within seconds (it would otherwise wait
    for the connection's Timeout)."""
    srv = start_server(extra="KeepAliveTimeout 30\n", accounts=[("acme", "professional")])
    c = None
    try:
        _, _, c = waiting(srv)
        t0 = time.monotonic()
        srv.stop()
        assert time.monotonic() - t0 < 10
        assert c.ends_within(5) is not None
    finally:
        if c:
            c.close()
        srv.cleanup()
