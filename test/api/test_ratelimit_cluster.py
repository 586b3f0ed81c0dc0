"""QRTrackRateLimitStore memcache (CONTRACT section 5): per-token windows shared by
several nodes through memcached.

Two nodes are two httpd servers on one database (the second made with shared_db=),
both naming one memcached: together they admit exactly a token's limit. While
memcached cannot be reached each node counts in its own shared memory (docs/operations.md,
"Rate limits"), says so in its error log at most every 30 s per child, and goes
back to memcached once it answers again. Runs on both backends.
"""
import concurrent.futures
import re
import signal
import socket
import threading
import time
import urllib.parse

import pytest
import requests

from conftest import Api, Memcached, PlainApi, Server, apxs, configtest, free_port
from lib.server import qrtrack_status
from lib.wait import sample, wait_until

STATUS = "LoadModule status_module %s/mod_status.so\n<Location /server-status>\n" \
         "    SetHandler server-status\n</Location>\n"

WARN_DOWN = "QRT00016"
WARN_STALL = "QRT00017"
BACK = "QRT00018"


class MemcachedAt(Memcached):
    """Memcached, and the keys it holds."""

    def keys(self):
        """Every live key (memcached's LRU crawler)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            s.sendall(b"lru_crawler metadump all\r\n")
            buf = b""
            while not buf.endswith(b"END\r\n"):
                chunk = s.recv(65536)
                assert chunk, "memcached closed the connection: %r" % buf
                buf += chunk
        return [urllib.parse.unquote(l.split()[0][len("key="):])
                for l in buf.decode().splitlines() if l.startswith("key=")]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
        super().stop()


@pytest.fixture
def memcached():
    mc = MemcachedAt()
    yield mc
    mc.stop()


class Nodes:
    """Two nodes of one cluster: one database, one memcached list; the first
    creates the database, accounts and tokens."""

    def __init__(self, store, extra="", accounts=(("acme", "professional"),),
                 loglevel="warn", n=2):
        conf = "QRTrackRateLimitStore %s\n%s" % (store, extra)
        self.servers = []
        try:
            first = Server(extra=conf, loglevel=loglevel)
            self.servers.append(first)
            first.admin("init")
            for name, plan in accounts:
                first.account(name, plan)
            for _ in range(n - 1):
                self.servers.append(Server(extra=conf, loglevel=loglevel, shared_db=first))
            for srv in self.servers:
                srv.start()
        except BaseException:
            self.cleanup()
            raise

    def __getitem__(self, i):
        return self.servers[i]

    def token(self, account="acme"):
        tok = self.servers[0].token(account)
        for srv in self.servers[1:]:
            srv.tokens.append(tok)
        return tok

    def get(self, i, token, path="/account"):
        with Api(self.servers[i % len(self.servers)], token) as s:
            return s.get(path)

    def fire(self, token, n, start=0):
        """n requests of token at once, request i to node i % 2."""
        with concurrent.futures.ThreadPoolExecutor(max_workers=32) as ex:
            return list(ex.map(lambda i: self.get(i, token), range(start, start + n)))

    def logs(self):
        return "".join(s.error_log() + s.access_log() for s in self.servers)

    def cleanup(self):
        """Stops every node, then removes their files (the first holds the SQLite
        database); no crash line and no token in any log."""
        for srv in self.servers:
            srv.stop()
        logs = self.logs()
        leaked = [t for srv in self.servers for t in srv.tokens if t in logs]
        for srv in reversed(self.servers):
            srv.cleanup()
        assert not leaked, "a token appears in a log"


def remaining(r):
    return int(r.headers["X-RateLimit-Remaining"])


def check_limited(rs, limit):
    """The 429s of one window: the same Reset on every node, Retry-After to it."""
    now = time.time()
    resets = set()
    for r in rs:
        assert r.status_code == 429
        assert r.json() == {"message": "Too Many Attempts."}
        assert r.headers["X-RateLimit-Limit"] == str(limit)
        assert r.headers["X-RateLimit-Remaining"] == "0"
        assert 1 <= int(r.headers["Retry-After"]) <= 60
        reset = int(r.headers["X-RateLimit-Reset"])
        assert now - 5 < reset <= now + 61, (reset, now)
        resets.add(reset)
    assert len(resets) == 1, resets


# -- two nodes, one memcached -----------------------------------------------------------

# The exact-count tests need every memcached call answered: on a loaded test machine
# one may take longer than the default 50 ms, and a call past it counts in shared
# memory by design (the tests of the timeout itself keep the default).
EXACT = "QRTrackRateLimitTimeout 1000\n"

def test_two_nodes_admit_exactly_the_limit_together(memcached):
    nodes = Nodes("memcache " + memcached.addr, extra=EXACT)
    try:
        tok = nodes.token()
        # One after the other, alternating: the count carries over between nodes.
        first = [nodes.get(i, tok) for i in range(10)]
        assert [r.status_code for r in first] == [200] * 10
        assert [remaining(r) for r in first] == list(range(119, 109, -1))
        assert all(r.headers["X-RateLimit-Limit"] == "120" for r in first)
        # Then all at once, still alternating: 200 in all, exactly 120 admitted.
        rs = first + nodes.fire(tok, 190, start=10)
        ok = [r for r in rs if r.status_code == 200]
        limited = [r for r in rs if r.status_code != 200]
        assert len(ok) == 120 and len(limited) == 80, sorted(r.status_code for r in rs)
        assert sorted(remaining(r) for r in ok) == list(range(120))
        check_limited(limited, 120)
        # Both nodes refuse the token now; another token has its own window.
        assert nodes.get(0, tok).status_code == 429
        assert nodes.get(1, tok).status_code == 429
        other = nodes.token()
        assert remaining(nodes.get(1, other)) == 119
        assert remaining(nodes.get(0, other)) == 118
        # The windows are keyed by token id, never by the token.
        keys = memcached.keys()
        assert keys and all(re.fullmatch(r"qrtrack:r[wc]:\d+(:\d+)?", k) for k in keys), keys
        assert not any(t in k for k in keys for t in (tok, other))
        assert WARN_DOWN not in nodes.logs()
    finally:
        nodes.cleanup()


def test_account_override_across_nodes(memcached):
    nodes = Nodes("memcache " + memcached.addr,
                  extra=EXACT + "QRTrackAccountRateLimit bigco 300\n",
                  accounts=[("acme", "professional"), ("bigco", "enterprise")])
    try:
        big, small = nodes.token("bigco"), nodes.token("acme")
        with concurrent.futures.ThreadPoolExecutor(max_workers=32) as ex:
            futs = [ex.submit(nodes.get, i, big) for i in range(310)]
            futs += [ex.submit(nodes.get, i, small) for i in range(130)]
            rs = [f.result() for f in futs]
        rb, rsm = rs[:310], rs[310:]
        assert [r.status_code for r in rb].count(200) == 300
        assert all(r.headers["X-RateLimit-Limit"] == "300" for r in rb)
        assert sorted(remaining(r) for r in rb if r.status_code == 200) == list(range(300))
        check_limited([r for r in rb if r.status_code != 200], 300)
        assert [r.status_code for r in rsm].count(200) == 120
        assert all(r.headers["X-RateLimit-Limit"] == "120" for r in rsm)
        check_limited([r for r in rsm if r.status_code != 200], 120)
    finally:
        nodes.cleanup()


# -- memcached cannot be reached ------------------------------------------------------------

def wait_shared(nodes, timeout=30):
    """Fresh tokens, one request on each node, until both count in memcached (the
    second answer continues the first) ten times in a row; the seconds it took."""
    t0 = time.time()

    def ten_in_a_row():
        for _ in range(10):
            tok = nodes.token()
            ra, rb = nodes.get(0, tok), nodes.get(1, tok)
            assert ra.status_code == rb.status_code == 200
            if (remaining(ra), remaining(rb)) != (119, 118):
                return False
        return True
    wait_until(ten_in_a_row, timeout=timeout, interval=0.2,
               what="counting to go back to memcached")
    return time.time() - t0


def test_memcached_down_counts_per_node_then_back_to_memcached():
    mc = MemcachedAt()
    port = mc.port
    nodes = None
    try:
        # (EXACT: the last step counts exactly in memcached, which a loaded machine's
        # slow answers must not turn into a bypass; a stopped memcached refuses at once)
        nodes = Nodes("memcache " + mc.addr, extra=EXACT)
        tok = nodes.token()
        assert [remaining(nodes.get(i, tok)) for i in range(4)] == [119, 118, 117, 116]

        mc.stop()
        down = time.time()
        # Every request is still answered, at once: each node counts on its own.
        tok2 = nodes.token()
        times, rs = [], []
        for i in range(40):
            t = time.time()
            rs.append(nodes.get(i, tok2))
            times.append(time.time() - t)
        assert all(r.status_code == 200 for r in rs)
        assert max(times) < 1.0, max(times)
        assert [remaining(r) for r in rs[0::2]] == list(range(119, 99, -1))
        assert [remaining(r) for r in rs[1::2]] == list(range(119, 99, -1))
        # ... with its limit exact on the node (this node's shared memory).
        tok3 = nodes.token()
        one = [nodes.get(0, tok3) for _ in range(121)]
        assert [r.status_code for r in one].count(200) == 120
        assert one[-1].status_code == 429 and int(one[-1].headers["Retry-After"]) >= 1
        assert int(one[-1].headers["X-RateLimit-Reset"]) > time.time()
        # The error log says so: not once per request (at most every 30 s a child).
        elapsed = time.time() - down
        for srv in nodes.servers:
            warnings = srv.error_log().count(WARN_DOWN)
            assert 1 <= warnings <= 2 * (1 + int(elapsed // 30)), srv.error_log()
            assert mc.addr in srv.error_log()

        # memcached again, on the same port: counting goes back to it.
        mc = MemcachedAt(port)
        back = time.time()
        wait_shared(nodes)
        # A child that has not asked since tries the server again once 5 s have
        # passed since it last found it dead (apr_memcache): by then every child
        # counts in memcached, and the limit is exact across nodes again (apr_memcache's
        # fixed retry delay: a window to wait out, so a sleep).
        time.sleep(max(0, back + 6 - time.time()))
        tok4 = nodes.token()
        rs = nodes.fire(tok4, 130)
        # On failure: which child counted where, and why (QRT00016/17/18 lines).
        assert [r.status_code for r in rs].count(200) == 120, "\n".join(
            l for srv in nodes.servers for l in srv.error_log().splitlines()
            if "QRT0001" in l)
        assert sorted(remaining(r) for r in rs if r.status_code == 200) == list(range(120))
        assert any(k.startswith("qrtrack:rw:") for k in mc.keys())
        assert BACK in nodes.logs()
    finally:
        mc.stop()
        if nodes:
            nodes.cleanup()


def test_memcached_never_there_from_the_start():
    port = free_port()  # nothing listens there
    nodes = Nodes("memcache 127.0.0.1:%d" % port, n=1)
    try:
        tok = nodes.token()
        t = time.time()
        rs = [nodes.get(0, tok) for _ in range(125)]
        assert time.time() - t < 20
        assert [r.status_code for r in rs].count(200) == 120
        assert [remaining(r) for r in rs[:120]] == list(range(119, -1, -1))
        check_limited(rs[120:], 120)
        log = nodes[0].error_log()
        assert 1 <= log.count(WARN_DOWN) <= 2, log
    finally:
        nodes.cleanup()


class SlowMemcached:
    """A fake memcached on a loopback port (get, add, incr, decr, as memcached
    answers them) that answers every command `delay` seconds late; started and
    stopped by the test."""

    def __init__(self, delay):
        self.delay = delay
        self.data = {}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.addr = "127.0.0.1:%d" % self.port
        self.thread = threading.Thread(target=self.accept, daemon=True)
        self.thread.start()

    def accept(self):
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def answer(self, words, data):
        with self.lock:
            if words[0] == b"get":
                v = self.data.get(words[1])
                return (b"END\r\n" if v is None else
                        b"VALUE %s 0 %d\r\n%s\r\nEND\r\n" % (words[1], len(v), v))
            if words[0] == b"add":
                if words[1] in self.data:
                    return b"NOT_STORED\r\n"
                self.data[words[1]] = data
                return b"STORED\r\n"
            if words[0] in (b"incr", b"decr") and words[1] in self.data:
                v = int(self.data[words[1]]) + int(words[2]) * (1 if words[0] == b"incr" else -1)
                self.data[words[1]] = b"%d" % max(v, 0)
                return self.data[words[1]] + b"\r\n"
            return b"NOT_FOUND\r\n" if words[0] in (b"incr", b"decr") else b"ERROR\r\n"

    def serve(self, conn):
        buf = b""
        conn.settimeout(0.2)
        with conn:
            while not self.stopping.is_set():
                if b"\r\n" not in buf:
                    try:
                        chunk = conn.recv(4096)
                    except socket.timeout:
                        continue
                    except OSError:
                        return
                    if not chunk:
                        return
                    buf += chunk
                    continue
                line, rest = buf.split(b"\r\n", 1)
                words = line.split()
                data = b""
                if words and words[0] == b"add":
                    n = int(words[4])
                    while len(rest) < n + 2:
                        chunk = conn.recv(4096)
                        if not chunk:
                            return
                        rest += chunk
                    data, rest = rest[:n], rest[n + 2:]
                buf = rest
                if not words:
                    continue
                if self.stopping.wait(self.delay):
                    return
                try:
                    conn.sendall(self.answer(words, data))
                except OSError:
                    return

    def stop(self):
        self.stopping.set()
        self.thread.join()
        self.sock.close()


class ApiLoad:
    """clients threads, each a keep-alive session to node i % n, asking GET /account
    with its token over and over for `seconds`; every answer as (seconds, status)."""

    def __init__(self, nodes, tokens, clients=30, seconds=4):
        self.results = []
        self.lock = threading.Lock()
        self.until = time.time() + seconds
        self.threads = [threading.Thread(target=self.run, daemon=True,
                                         args=(nodes[i % len(nodes.servers)],
                                               tokens[i % len(tokens)]))
                        for i in range(clients)]
        for t in self.threads:
            t.start()

    def run(self, srv, token):
        with PlainApi(srv, token) as s:
            while time.time() < self.until:
                t = time.time()
                try:
                    try:
                        status = s.get("/account", timeout=10).status_code
                    except requests.ConnectionError:
                        # The event MPM may close an idle keep-alive connection when
                        # busy, as HTTP allows; a client sends an idempotent GET again
                        # (on a new connection), and its time counts in full.
                        status = s.get("/account", timeout=10).status_code
                except requests.RequestException:
                    status = None
                with self.lock:
                    self.results.append((time.time() - t, status))

    def finish(self):
        for t in self.threads:
            t.join(timeout=30)
        return self.results


def slowest_served(nodes, path, n=5):
    """The n longest times (seconds) the nodes' access logs give requests whose path
    ends in path (%D)."""
    took = [int(line.rsplit(None, 1)[1]) / 1e6 for srv in nodes.servers
            for line in srv.access_log().splitlines() if '%s"' % path in line]
    return sorted(took)[-n:]


class Slowest(float):
    """The slowest answer's seconds, printed with what it answered and when."""

    def __new__(cls, took, what=""):
        self = super().__new__(cls, took)
        self.what = what
        return self

    def __repr__(self):
        return "%.3f (%s)" % (self, self.what)


def probe_meanwhile(nodes, code, load):
    """/api/health and a scan of code on every node, every 0.2 s while load runs:
    the slowest answer (seconds, a Slowest) and every status seen."""
    def probe():
        out = []
        for srv in nodes.servers:
            for url in (srv.api_base + "/health", "%s/q/%s" % (srv.base, code)):
                t = time.time()
                r = requests.get(url, timeout=10, allow_redirects=False)
                out.append((time.time() - t, r.status_code, "%s %d at %s" % (
                    url, r.status_code, time.strftime("%H:%M:%S", time.localtime(t)))))
        return out
    seen = [x for probes in sample(probe, interval=0.2, during=lambda: any(
        t.is_alive() for t in load.threads)) for x in probes]
    worst = max(seen, default=(0.0, None, ""))
    return Slowest(worst[0], worst[2]), {st for _, st, _ in seen}


SMALL = "StartServers 1\nServerLimit 1\nMaxRequestWorkers 25\n"
BIG = "QRTrackAccountRateLimit bigco 1000000\n"


def test_memcached_that_hangs_does_not_hold_any_request(memcached):
    """A memcached that accepts connections but never answers (SIGSTOP), under the
    load of 30 clients on two nodes of 25 workers each: every API request is
    answered within 1 s (each call gives up after QRTrackRateLimitTimeout, then
    memcached is bypassed by every child at once), scans and /api/health answer
    meanwhile; once it runs again the windows go back to it, exact across nodes. (Each
    child's database connections are all opened at its start, as in
    test_calls_in_flight_are_capped: the load's first requests opened them, each with its
    statements, and on a busy PostgreSQL the servers took up to 1.2 s to answer them.)"""
    nodes = Nodes("memcache " + memcached.addr,
                  extra=SMALL + BIG + "DBDMax 25\nDBDMin 25\nDBDKeep 25\n",
                  accounts=[("acme", "professional"), ("bigco", "enterprise")])
    try:
        tok = nodes.token()
        assert [remaining(nodes.get(i, tok)) for i in range(2)] == [119, 118]
        with Api(nodes[0], tok) as s:
            r = s.post("/tracker", json={"redirect_url": "https://example.com/hang"})
            assert r.status_code == 200, r.text
            code = r.json()["code"]
        busy = [nodes.token("bigco") for _ in range(3)]

        memcached.proc.send_signal(signal.SIGSTOP)
        try:
            load = ApiLoad(nodes, busy, clients=30, seconds=4)
            slowest, statuses = probe_meanwhile(nodes, code, load)
            results = load.finish()
        finally:
            memcached.proc.send_signal(signal.SIGCONT)
        times = sorted(t for t, _ in results)
        assert len(results) > 100, len(results)
        assert {st for _, st in results} == {200}, [st for _, st in results if st != 200]
        # (the message says whether the servers took that long: their %D of the load's
        # requests, or only the client saw it)
        assert times[-1] < 1.0, (times[-10:], "served in", slowest_served(nodes, "/account"))
        assert statuses == {200, 302} and slowest < 1.0, (statuses, slowest)
        log = nodes.logs()
        assert WARN_STALL in log and "bypassed" in log
        for srv in nodes.servers:
            # Once a node, not once a child or a request (at most every 30 s).
            assert srv.error_log().count(WARN_STALL) == 1, srv.error_log()

        # Running again: the first token's window carries on in memcached after its
        # three requests (two reads and the POST; in node 0's shared memory this
        # would be its first request: 119).
        wait_shared(nodes)
        assert remaining(nodes.get(0, tok)) == 116
        tok2 = nodes.token()
        rs = nodes.fire(tok2, 130)
        assert [r.status_code for r in rs].count(200) == 120
        assert sorted(remaining(r) for r in rs if r.status_code == 200) == list(range(120))
        check_limited([r for r in rs if r.status_code != 200], 120)
        assert BACK in nodes.logs()
    finally:
        nodes.cleanup()


def test_slow_memcached_is_bypassed():
    """A memcached that answers every command 1.5 s late: API requests are answered
    at once all the same (in shared memory), the error log says it is bypassed, and
    mod_status says the store has fallen back."""
    slow = SlowMemcached(1.5)
    nodes = None
    try:
        nodes = Nodes("memcache " + slow.addr, extra=STATUS % apxs("LIBEXECDIR") + BIG,
                      accounts=[("acme", "professional"), ("bigco", "enterprise")], n=1)
        st = qrtrack_status(nodes[0])
        assert st["QRTrackRateLimitStore"] == "memcache"
        assert st["QRTrackRateLimitStoreUp"] == "1"
        assert st["QRTrackRateLimitStoreFallbacks"] == "0"
        tok = nodes.token()
        t = time.time()
        rs = [nodes.get(0, tok) for _ in range(5)]
        assert time.time() - t < 2.5
        assert [remaining(r) for r in rs] == [119, 118, 117, 116, 115]

        load = ApiLoad(nodes, [nodes.token("bigco") for _ in range(3)], clients=30,
                       seconds=3)
        results = load.finish()
        assert {st for _, st in results} == {200}
        assert max(t for t, _ in results) < 1.0, max(t for t, _ in results)
        log = nodes[0].error_log()
        assert WARN_STALL in log and "bypassed" in log and slow.addr in log, log
        assert log.count(WARN_STALL) == 1, log
        st = qrtrack_status(nodes[0])
        assert st["QRTrackRateLimitStoreUp"] == "0"
        assert int(st["QRTrackRateLimitStoreFallbacks"]) >= len(results)
    finally:
        if nodes:
            nodes.cleanup()
        slow.stop()


def test_calls_in_flight_are_capped():
    """A memcached slow but within QRTrackRateLimitTimeout: at most half of
    MaxRequestWorkers wait for it (here 12 of 25), the other requests count in
    shared memory at once, and /api/health answers meanwhile. (A request waiting for
    memcached holds one of its child's database connections: mod_dbd's DBDMax,
    10 by default, is raised here so that the workers are what is measured; and they
    are all opened at the child's start, so that no request pays for opening one and
    preparing its statements, which a busy PostgreSQL can make take a second.)"""
    slow = SlowMemcached(0.5)
    nodes = None
    try:
        nodes = Nodes("memcache " + slow.addr, extra=SMALL + BIG
                      + "QRTrackRateLimitTimeout 2000\nDBDMax 25\nDBDMin 25\nDBDKeep 25\n",
                      accounts=[("acme", "professional"), ("bigco", "enterprise")], n=1)
        load = ApiLoad(nodes, [nodes.token("bigco") for _ in range(3)], clients=20,
                       seconds=3)
        def probe():
            t = time.time()
            st = requests.get(nodes[0].api_base + "/health", timeout=10).status_code
            return time.time() - t, st
        seen = sample(probe, interval=0.2,
                      during=lambda: any(t.is_alive() for t in load.threads))
        slowest = max([took for took, _ in seen], default=0.0)
        statuses = {st for _, st in seen}
        results = load.finish()
        assert {st for _, st in results} == {200}
        assert statuses == {200} and slowest < 1.0, (statuses, slowest, [
            l for l in nodes[0].access_log().splitlines() if "health" in l])
        # The ones that waited took a few half-seconds; the others no time at all.
        fast = [t for t, _ in results if t < 0.25]
        assert len(fast) > len(results) / 2, sorted(t for t, _ in results)
        assert any(t > 1.0 for t, _ in results)
        log = nodes[0].error_log()
        assert "QRT00084" in log and WARN_STALL not in log, log
    finally:
        if nodes:
            nodes.cleanup()
        slow.stop()


# -- configuration ----------------------------------------------------------------------

def test_configtest_accepts_the_store_forms():
    for line in ["QRTrackRateLimitStore shm",
                 "QRTrackRateLimitStore memcache 127.0.0.1:11211",
                 "QRTrackRateLimitStore memcache 10.0.0.5:11211,10.0.0.6:11211",
                 "QRTrackRateLimitStore memcache localhost:11211"]:
        rc, out = configtest(line + "\n")
        assert rc == 0, (line, out)


def test_timeout_values():
    for v in ("1", "50", "10000"):
        rc, out = configtest("QRTrackRateLimitTimeout %s\n" % v)
        assert rc == 0, (v, out)
    for line in ["QRTrackRateLimitTimeout 0", "QRTrackRateLimitTimeout 10001",
                 "QRTrackRateLimitTimeout 50ms", "QRTrackRateLimitTimeout -5",
                 "<VirtualHost *:80>\nQRTrackRateLimitTimeout 50\n</VirtualHost>"]:
        rc, out = configtest(line + "\n")
        assert rc != 0, line
        assert "QRTrackRateLimitTimeout" in out, (line, out)
    rc, out = configtest("QRTrackRateLimitTimeout 0\n")
    assert "from 1 to 10000" in out, out


def test_bad_store_values_fail_configtest():
    for line in ["QRTrackRateLimitStore memcache",
                 "QRTrackRateLimitStore memcache nohostport",
                 "QRTrackRateLimitStore redis",
                 "QRTrackRateLimitStore redis 127.0.0.1:6379",
                 "QRTrackRateLimitStore shm 127.0.0.1:11211",
                 "QRTrackRateLimitStore memcache 127.0.0.1:0",
                 "QRTrackRateLimitStore memcache 127.0.0.1:99999",
                 "QRTrackRateLimitStore memcache 127.0.0.1:11211,",
                 "QRTrackRateLimitStore memcache [::1]:11211",
                 # (an IPv6 literal without brackets, which apr_memcache cannot reach)
                 "QRTrackRateLimitStore memcache ::1:11211",
                 "<VirtualHost *:80>\nQRTrackRateLimitStore shm\n</VirtualHost>"]:
        rc, out = configtest(line + "\n")
        assert rc != 0, line
        assert "QRTrackRateLimitStore" in out, (line, out)
