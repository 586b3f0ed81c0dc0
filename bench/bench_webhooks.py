#!/usr/bin/python3
"""make bench, webhook deliveries: BENCH_EVENTS (default 20,000) outbox events over
BENCH_TRACKERS (default 2,000) trackers of one webhook, delivered by the worker to a
receiver on a loopback port (answers 200 at once, keep-alive). The events are
written while the webhook is disabled; the clock starts when it is enabled and stops
when the last event is marked delivered. Target: 2,000 events/s. Twice: events with their
bodies written (tracker events), then scan events as the scan writer makes them, each naming
its visit (imported before), whose body the worker renders when it takes it. BENCH_TRACKERS=1
measures one busy tracker, whose events go out in order, in runs."""
import json
import os
import socket
import sys
import threading
import time

import benchlib  # noqa: F401  (puts test/api on the path)
from benchlib import NAME
from conftest import start_server
from lib import webhooks as wh
from lib.api import Api
from lib.env import free_port
from lib.wait import wait_until

EVENTS = int(os.environ.get("BENCH_EVENTS", "20000"))
TRACKERS = int(os.environ.get("BENCH_TRACKERS", "2000"))
TARGET = 2000


def header(buf, end, name):
    """The value of header name (lower case) in the request head buf[:end], or None."""
    head = buf[:end].lower()
    at = head.find(b"\r\n" + name + b":")
    if at < 0:
        return None
    stop = head.find(b"\r\n", at + 2)
    return buf[at + 3 + len(name):stop if stop > 0 else end].strip()


class FastReceiver:
    """HTTP/1.1 on 127.0.0.1 that reads each request (headers and Content-Length body)
    and answers 200 at once, keep-alive: counts requests and the distinct webhook-ids.
    A thread a connection with blocking sockets (the worker keeps a few connections):
    it takes a fraction of the CPU an asyncio loop takes a request, CPU that the
    benches' scans and deliveries share on the same machine."""

    def __init__(self):
        self.port = free_port()
        self.count = 0
        self.ids = set()
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", self.port))
        self.sock.listen(256)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._conn, args=(conn,), daemon=True).start()

    def _conn(self, conn):
        buf = b""
        try:
            while True:
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                    continue
                n = int(header(buf, end, b"content-length") or 0)
                mid = header(buf, end, b"webhook-id")
                while len(buf) < end + 4 + n:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                buf = buf[end + 4 + n:]
                with self.lock:
                    self.count += 1
                    self.ids.add(mid)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        except OSError:
            pass
        finally:
            conn.close()

    def stop(self):
        self.sock.close()


def add_visit_events(srv, wid):
    """TRACKERS trackers (bulk creates), one imported visit per event over them, and a
    scan.created event naming each visit by its key, as the scan writer writes it (no
    body)."""
    tids = []
    with Api(srv, srv.token("acme")) as a:
        for k in range(0, TRACKERS, 1000):
            r = a.post("/tracker/bulk", json={"trackers": [
                {"redirect_url": "https://example.com/%d" % i}
                for i in range(k, min(TRACKERS, k + 1000))]})
            assert r.status_code == 200, r.text
            tids += [d["tracker"]["tracker_id"] for d in r.json()["data"]]
    now = int(time.time())
    path = os.path.join(srv.dir, "visits.jsonl")
    with open(path, "w") as f:
        for i in range(EVENTS):
            f.write(json.dumps({
                "tracker_id": tids[i % len(tids)],
                "visit_start": time.strftime("%Y-%m-%dT%H:%M:%S+0000",
                                             time.gmtime(now - EVENTS + i)),
                "source": "scan", "ip": "198.51.%d.7" % (i % 256), "country": "DE",
                "city": "Berlin", "browser": "Firefox", "browser_version": "120", "os": "Linux",
                "device": "desktop", "referer": "https://news.example/%d" % (i % 500),
                "user_agent": "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 "
                              "Firefox/120.0 b%d" % (i % 100)}) + "\n")
    os.chmod(path, 0o644)
    srv.admin("visits", "import", path)
    rows = [l.split("|") for l in srv.sql("SELECT id, tracker_id, visit_start FROM visit_rows "
                                          "ORDER BY id").split()]
    values = ["(%d, '%s', 'scan.created', %s, %s, '', %d, %d, %s)"
              % (wid, wh.new_msg_id(), t, v, now, now, at) for v, t, at in rows]
    for k in range(0, len(values), 500):
        srv.sql("INSERT INTO webhook_events (webhook_id, msg_id, event_type, tracker_id, "
                "visit_id, body, created_at, next_attempt_at, visit_start) VALUES "
                + ",".join(values[k:k + 500]))


def run(visits):
    rec = FastReceiver()
    srv = start_server(extra="QRTrackWebhookAllow 127.0.0.1/32\nQRTrackRateLimit 0\n",
                       accounts=[("acme", "professional")])
    try:
        wid, _ = wh.add_webhook(srv, "http://127.0.0.1:%d/bench" % rec.port)
        srv.sql("UPDATE webhooks SET disabled_at = 1 WHERE id = %d" % wid)
        if visits:
            add_visit_events(srv, wid)
        else:
            wh.add_events(srv, wid, [i % TRACKERS + 1 for i in range(EVENTS)])
        t0 = time.monotonic()
        srv.sql("UPDATE webhooks SET disabled_at = NULL WHERE id = %d" % wid)
        wait_until(lambda: int(srv.sql("SELECT COUNT(*) FROM webhook_events WHERE state = 1 "
                                       "AND webhook_id = %d" % wid).strip()) >= EVENTS,
                   timeout=600, interval=0.05, what="every event delivered")
        took = time.monotonic() - t0
        rate = EVENTS / took
        print("webhooks, %s: %d %s over %d trackers delivered in %.2f s: %.0f events/s "
              "(target >= %d; %d requests received, %d distinct webhook-ids)"
              % (NAME, EVENTS, "scan events rendered from their visits" if visits
                 else "events with their bodies", TRACKERS, took, rate, TARGET, rec.count,
                 len(rec.ids)), flush=True)
        return 0 if rate >= TARGET else 2
    finally:
        srv.cleanup()
        rec.stop()


def main():
    return max(run(False), run(True))


if __name__ == "__main__":
    sys.exit(main())
