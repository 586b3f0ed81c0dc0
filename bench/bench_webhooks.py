#!/usr/bin/python3
"""make bench, webhook deliveries: BENCH_EVENTS (default 20,000) outbox events over
BENCH_TRACKERS (default 2,000) trackers of one webhook, delivered by the worker to a
receiver on a loopback port (asyncio, answers 200 at once, keep-alive). The events are
written while the webhook is disabled; the clock starts when it is enabled and stops
when the last event is marked delivered. Target: 2,000 events/s. Twice: events with their
bodies written (tracker events), then scan events as the scan writer makes them, each naming
its visit (imported before), whose body the worker renders when it takes it. BENCH_TRACKERS=1
measures one busy tracker, whose events go out in order, in runs."""
import json
import asyncio
import os
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


class FastReceiver:
    """HTTP/1.1 on 127.0.0.1 that reads each request (headers and Content-Length body)
    and answers 200: counts requests and the distinct webhook-ids."""

    def __init__(self):
        self.port = free_port()
        self.count = 0
        self.ids = set()
        self.loop = asyncio.new_event_loop()
        started = threading.Event()
        threading.Thread(target=self._run, args=(started,), daemon=True).start()
        started.wait()

    def _run(self, started):
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._conn, "127.0.0.1", self.port, backlog=256))
        started.set()
        self.loop.run_forever()

    async def _conn(self, reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                n, mid = 0, None
                for line in head.split(b"\r\n"):
                    k, _, v = line.partition(b":")
                    k = k.strip().lower()
                    if k == b"content-length":
                        n = int(v)
                    elif k == b"webhook-id":
                        mid = v.strip()
                if n:
                    await reader.readexactly(n)
                self.count += 1
                self.ids.add(mid)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def stop(self):
        self.loop.call_soon_threadsafe(self.loop.stop)


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
