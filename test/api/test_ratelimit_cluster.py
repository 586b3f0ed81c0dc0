"""QRTrackRateLimitStore memcache (CONTRACT section 5): per-token windows shared by
several nodes through memcached.

Two nodes are two httpd servers on one database (the second made with shared_db=),
both naming one memcached: together they admit exactly a token's limit. While
memcached cannot be reached each node counts in its own shared memory (README,
"Rate limits"), says so in its error log at most every 30 s per child, and goes
back to memcached once it answers again. Runs on both backends.
"""
import concurrent.futures
import re
import signal
import socket
import time
import urllib.parse

import pytest

from conftest import Api, Memcached, Server, configtest, free_port

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

def test_two_nodes_admit_exactly_the_limit_together(memcached):
    nodes = Nodes("memcache " + memcached.addr)
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
    nodes = Nodes("memcache " + memcached.addr, extra="QRTrackAccountRateLimit bigco 300\n",
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
    streak = 0
    while streak < 10:
        assert time.time() - t0 < timeout, "counting did not go back to memcached"
        tok = nodes.token()
        ra, rb = nodes.get(0, tok), nodes.get(1, tok)
        assert ra.status_code == rb.status_code == 200
        if (remaining(ra), remaining(rb)) == (119, 118):
            streak += 1
        else:
            streak = 0
            time.sleep(0.2)
    return time.time() - t0


def test_memcached_down_counts_per_node_then_back_to_memcached():
    mc = MemcachedAt()
    port = mc.port
    nodes = None
    try:
        nodes = Nodes("memcache " + mc.addr)
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
        # counts in memcached, and the limit is exact across nodes again.
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


def test_memcached_that_hangs_does_not_hold_every_request():
    """A memcached that accepts connections but never answers (SIGSTOP): the calls
    already made wait for it, later requests of that child count in shared memory
    after 2 s; all finish once it answers again."""
    mc = MemcachedAt()
    nodes = None
    try:
        # One child, so that the request stuck on memcached is in the same process
        # as the ones that follow.
        nodes = Nodes("memcache " + mc.addr, n=1,
                      extra="StartServers 1\nServerLimit 1\nMaxRequestWorkers 25\n")
        tok = nodes.token()
        assert remaining(nodes.get(0, tok)) == 119
        mc.proc.send_signal(signal.SIGSTOP)
        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as ex:
            stuck = ex.submit(nodes.get, 0, tok)
            time.sleep(3)
            assert not stuck.done()
            tok2 = nodes.token()
            t = time.time()
            rs = [nodes.get(0, tok2) for _ in range(5)]
            assert time.time() - t < 3
            assert [remaining(r) for r in rs] == [119, 118, 117, 116, 115]
            assert WARN_STALL in nodes[0].error_log()
            mc.proc.send_signal(signal.SIGCONT)
            r = stuck.result(timeout=20)
            assert r.status_code == 200 and remaining(r) == 118
        # Back to memcached at once: the first token's window carries on there
        # (in shared memory it would be the token's first request: 119).
        assert remaining(nodes.get(0, tok)) == 117
        assert BACK in nodes[0].error_log()
    finally:
        mc.stop()
        if nodes:
            nodes.cleanup()


# -- configuration ----------------------------------------------------------------------

def test_configtest_accepts_the_store_forms():
    for line in ["QRTrackRateLimitStore shm",
                 "QRTrackRateLimitStore memcache 127.0.0.1:11211",
                 "QRTrackRateLimitStore memcache 10.0.0.5:11211,10.0.0.6:11211",
                 "QRTrackRateLimitStore memcache localhost:11211"]:
        rc, out = configtest(line + "\n")
        assert rc == 0, (line, out)


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
                 "<VirtualHost *:80>\nQRTrackRateLimitStore shm\n</VirtualHost>"]:
        rc, out = configtest(line + "\n")
        assert rc != 0, line
        assert "QRTrackRateLimitStore" in out, (line, out)
