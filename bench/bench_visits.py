#!/usr/bin/python3
"""make bench, visits: the listing, search, polling and the CSV export of one tracker
with BENCH_VISITS (default 1,000,000) visits.

The visits are generated straight into the database with one sqlite3 bulk INSERT
(recursive CTE) while the server is stopped, the tracker's counters and visitor rows
are set from them, the report aggregates rebuilt, then the server is started again.
Prints the median time of several requests of each kind, and the children's
resident memory before and while a full CSV export streams (target: < 20 MB growth).

Environment: BENCH_VISITS (rows), BENCH_REPEAT (requests per figure), BENCH_ANALYZE=1
(run ANALYZE after the load). Exit status 1 when the export grows a child by 20 MB.
"""
import os
import statistics
import subprocess
import sys
import threading
import time

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "api"))
from conftest import Api, start_server  # noqa: E402

N = int(os.environ.get("BENCH_VISITS", "1000000"))
REPEAT = int(os.environ.get("BENCH_REPEAT", "5"))
# No ANALYZE by default: the service never runs it, and the plans do not need it.
ANALYZE = os.environ.get("BENCH_ANALYZE", "0") == "1"
T0 = 1790000000                 # 2026-09-21: 1M visits spread over 90 days from here
SPAN = 90 * 86400

BULK_SQL = """
PRAGMA journal_mode = WAL;
BEGIN;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {n})
INSERT INTO visits (tracker_id, visit_start, source, ip, country, city, browser,
                    browser_version, os, device, referer, user_agent, bot, visitor)
SELECT {tid},
       {t0} + (x * {span}) / {n},
       CASE WHEN x % 5 = 0 THEN 'click' ELSE 'scan' END,
       '203.0.' || (x % 250) || '.0',
       substr('DEUSFRJPBR', (x % 5) * 2 + 1, 2),
       CASE x % 5 WHEN 0 THEN 'Berlin' WHEN 1 THEN 'New York' WHEN 2 THEN 'Paris'
                  WHEN 3 THEN 'Tokyo' ELSE 'São Paulo' END,
       CASE WHEN x % 97 = 0 THEN 'Googlebot'
            WHEN x % 4 = 0 THEN 'Chrome Mobile' WHEN x % 4 = 1 THEN 'Mobile Safari'
            WHEN x % 4 = 2 THEN 'Firefox' ELSE 'Samsung Internet' END,
       CAST(100 + x % 25 AS TEXT),
       CASE WHEN x % 4 = 1 THEN 'iOS' WHEN x % 4 = 2 THEN 'Windows' ELSE 'Android' END,
       CASE WHEN x % 97 = 0 THEN 'bot' WHEN x % 4 = 2 THEN 'desktop' ELSE 'mobile' END,
       CASE WHEN x % 3 = 0 THEN NULL
            ELSE 'https://news.example/story/' || (x % 1000) || '?utm_source=qr' END,
       CASE WHEN x % 97 = 0
            THEN 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)'
            WHEN x % 10007 = 0
            THEN 'Mozilla/5.0 (Linux; Android 12; Kiosk-' || x || ') AppleWebKit/537.36'
            ELSE 'Mozilla/5.0 (Linux; Android 13; SM-S' || (900 + x % 100) ||
                 ') AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.' || (x % 5000) ||
                 '.0 Mobile Safari/537.36' END,
       CASE WHEN x % 97 = 0 THEN 1 ELSE 0 END,
       printf('%016x', x % 200003)
FROM c;
INSERT INTO tracker_visitors (tracker_id, visitor, first_visit)
    SELECT tracker_id, visitor, MIN(visit_start) FROM visits
    WHERE tracker_id = {tid} AND bot = 0 GROUP BY tracker_id, visitor;
UPDATE trackers SET
    total_scans = (SELECT COUNT(*) FROM visits WHERE tracker_id = {tid} AND bot = 0
                   AND source = 'scan'),
    total_clicks = (SELECT COUNT(*) FROM visits WHERE tracker_id = {tid} AND bot = 0
                    AND source = 'click'),
    total_bots = (SELECT COUNT(*) FROM visits WHERE tracker_id = {tid} AND bot = 1),
    unique_visitors = (SELECT COUNT(*) FROM tracker_visitors WHERE tracker_id = {tid}),
    last_visit = (SELECT MAX(visit_start) FROM visits WHERE tracker_id = {tid} AND bot = 0)
WHERE id = {tid};
COMMIT;
"""


def sqlite(srv, sql):
    subprocess.run(srv.as_user + ["sqlite3", "-bail", srv.db], input=sql, text=True,
                   check=True, stdout=subprocess.DEVNULL)


def children(srv):
    with open(os.path.join(srv.dir, "run", "httpd.pid")) as f:
        parent = f.read().strip()
    out = subprocess.run(["ps", "--ppid", parent, "-o", "pid="], capture_output=True,
                         text=True).stdout
    return [int(p) for p in out.split()]


def status_kb(pid, key):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except FileNotFoundError:
        pass
    return 0


def timed(session, url, repeat=REPEAT, expect=200, **kw):
    times = []
    r = None
    for _ in range(repeat):
        t = time.perf_counter()
        r = session.get(url, **kw)
        times.append((time.perf_counter() - t) * 1000)
        assert r.status_code == expect, (url, r.status_code, r.text[:300])
    return statistics.median(times), r


def main():
    srv = start_server(accounts=[("bench", "professional")])
    try:
        token = srv.token("bench")
        with Api(srv, token) as a:
            t = a.post("/tracker", json={"redirect_url": "https://example.com/spring",
                                         "name": "bench"}).json()
        tid = t["tracker_id"]
        srv.stop()

        started = time.time()
        sqlite(srv, BULK_SQL.format(n=N, tid=tid, t0=T0, span=SPAN))
        gen = time.time() - started
        rebuilt = srv.admin("aggregates", "rebuild", check=False).returncode == 0
        if ANALYZE:
            sqlite(srv, "ANALYZE;")
        size = os.path.getsize(srv.db) / 1e6
        srv.start()
        print("visits bench: %d visits on one tracker (generated in %.1f s, database "
              "%.0f MB%s%s)" % (N, gen, size, ", aggregates rebuilt" if rebuilt else "",
                                ", ANALYZE" if ANALYZE else ""))

        # The rate limit is per token per minute: each figure gets its own token.
        def api():
            return Api(srv, srv.token("bench"))

        url = "/visits/tracker/%d" % tid
        with api() as a:
            an = a.get("/tracker/analytics/%d" % tid).json()
            print("  analytics          : %s" % an)
            ms, r = timed(a, url)
            meta = r.json()["meta"]
            assert meta["total"] == N, meta
            print("  page 1 (25 rows)   : %8.1f ms   (total %d, last_page %d)"
                  % (ms, meta["total"], meta["last_page"]))
            ms, r = timed(a, url, params={"page": 20000})
            print("  page 20000         : %8.1f ms   (offset 499975)" % ms)
            ms, r = timed(a, url, params={"page": meta["last_page"]})
            print("  last page %-8d : %8.1f ms" % (meta["last_page"], ms))
            ms, r = timed(a, url, params={"rows": 1000, "page": 500})
            print("  rows=1000 page 500 : %8.1f ms   (%d bytes)" % (ms, len(r.content)))
        with api() as a:
            ms, r = timed(a, url, params={"search": "kiosk"})
            print("  search rare        : %8.1f ms   (kiosk: %d matches)"
                  % (ms, r.json()["meta"]["total"]))
            ms, r = timed(a, url, params={"search": "safari"})
            print("  search common      : %8.1f ms   (safari: %d matches)"
                  % (ms, r.json()["meta"]["total"]))
            ms, r = timed(a, url, params={"visit_start": "2026-10-01T00:00:00+0000",
                                          "visit_start_end": "2026-10-01T23:59:59+0000"})
            print("  one-day window     : %8.1f ms   (%d visits)"
                  % (ms, r.json()["meta"]["total"]))
        with api() as a:
            r = a.get(url)
            etag = r.headers["ETag"]
            newest = r.json()["data"][0]["id"]
            ms, _ = timed(a, url, repeat=20, expect=304, headers={"If-None-Match": etag})
            print("  poll, 304          : %8.1f ms" % ms)
            ms, r = timed(a, url, repeat=20, params={"since_id": newest})
            print("  poll since_id, 200 : %8.1f ms   (%d new)" % (ms, len(r.json()["data"])))
            ms, r = timed(a, url, repeat=20, params={"since_id": newest - 10})
            print("  poll since_id, 200 : %8.1f ms   (%d new)" % (ms, len(r.json()["data"])))

        # Memory: every child before, then sampled while one full export streams.
        pids = children(srv)
        before = {p: status_kb(p, "VmRSS") for p in pids}
        hwm_before = {p: status_kb(p, "VmHWM") for p in pids}
        peak = dict(before)
        done = threading.Event()

        def sample():
            while not done.is_set():
                for p in pids:
                    peak[p] = max(peak[p], status_kb(p, "VmRSS"))
                time.sleep(0.02)

        sampler = threading.Thread(target=sample)
        sampler.start()
        rows = nbytes = 0
        marks = []
        started = time.time()
        try:
            with requests.get(srv.api_base + url + "/download/csv",
                              headers={"Authorization": "Bearer " + srv.token("bench")},
                              stream=True, timeout=600) as r:
                assert r.status_code == 200, r.text
                mark = 1
                for chunk in r.iter_content(1 << 16):
                    nbytes += len(chunk)
                    rows += chunk.count(b"\n")
                    if rows >= N * mark // 4:
                        # Growth so far, so that a plateau shows from a leak.
                        marks.append(max(status_kb(p, "VmRSS") - before[p] for p in pids))
                        mark += 1
        finally:
            done.set()
            sampler.join()
        took = time.time() - started
        hwm_after = {p: status_kb(p, "VmHWM") for p in pids}
        assert rows == N + 1, (rows, N + 1)
        print("  CSV export         : %8.1f s    (%d rows, %.0f MB, %.0f MB/s, %.0f rows/s)"
              % (took, rows - 1, nbytes / 1e6, nbytes / 1e6 / took, (rows - 1) / took))
        worst = 0
        for p in pids:
            grow = peak[p] - before[p]
            worst = max(worst, grow)
            print("  child %-7d RSS  : before %7.1f MB  peak during export %7.1f MB  "
                  "growth %6.1f MB   (VmHWM %7.1f -> %7.1f MB)"
                  % (p, before[p] / 1024, peak[p] / 1024, grow / 1024,
                     hwm_before[p] / 1024, hwm_after[p] / 1024))
        print("  RSS growth at 1/4, 1/2, 3/4, all of the rows: %s MB"
              % ", ".join("%.1f" % (m / 1024) for m in marks))
        print("  largest growth     : %.1f MB (target < 20 MB)" % (worst / 1024))
        return 0 if worst < 20 * 1024 else 1
    except BaseException:
        print(srv.error_log()[-4000:], file=sys.stderr)
        raise
    finally:
        srv.cleanup()


if __name__ == "__main__":
    sys.exit(main())
