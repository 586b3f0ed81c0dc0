#!/usr/bin/python3
"""make bench, reports: every report type, the tag crosstab and the portfolio KPIs of
an account with BENCH_VISITS (default 10,000,000) visits over BENCH_TRACKERS (1,000)
trackers and the year 2026.

The trackers, their tags and the visits are generated straight into the database with
sqlite3 bulk SQL (recursive CTE, indexes dropped and rebuilt around the load) while
the server is stopped, in time order as live scans arrive; then `qrtrack-admin
aggregates rebuild` builds the report aggregates and the server is started again.

The visits: trackers are picked with a skew (a few busy ones, a long tail); 60 % of
the visits come from one-time visitors, 40 % from 400,000 returning visitors (about 10
visits each at random times of the year, half of them on a home tracker); a visitor
keeps its browser, city and country; 20 % clicks, 3 % bots. Every tracker has a
campaign (50) and a region (5) tag, one in seven also a channel tag.

Prints the generation and rebuild times, the aggregate table sizes, then the median
latency of BENCH_REPEAT requests for each report type over the whole year and over one
week (the last one, and one in the middle of the year), for the crosstab and the
dashboard, a report over 10 listed trackers, and the import rate of the write path.
Target: every report figure under 100 ms. Exit status 1 when one is not.

Environment: BENCH_VISITS, BENCH_TRACKERS, BENCH_REPEAT (requests per figure),
BENCH_IMPORT (visits of the import figures), BENCH_DB=path: measure an existing
database built by this script (hard-linked into the server's directory, so on the same
file system; no generation, no rebuild, no import: the file is left as it was).
"""
import json
import os
import statistics
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "api"))
from conftest import Api, start_server  # noqa: E402

N = int(os.environ.get("BENCH_VISITS", "10000000"))
TRACKERS = int(os.environ.get("BENCH_TRACKERS", "1000"))
REPEAT = int(os.environ.get("BENCH_REPEAT", "5"))
IMPORT = int(os.environ.get("BENCH_IMPORT", "20000"))
KEPT = os.environ.get("BENCH_DB")
T0 = 1767225600                 # 2026-01-01T00:00:00+0000
SPAN = 365 * 86400
POOL = 400000                   # returning visitors
TARGET_MS = 100.0

LOAD_SQL = """
PRAGMA journal_mode = WAL;
PRAGMA cache_size = -1000000;
PRAGMA temp_store = MEMORY;
BEGIN;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {trackers})
INSERT INTO trackers (account_id, code, name, type, redirect_url, created_at, updated_at)
SELECT {account}, 'bench' || x, 'tracker ' || x, 'website',
       'https://example.com/t/' || x, {t0} - 86400, {t0} - 86400 FROM c;
CREATE TEMP TABLE bt AS SELECT id, ROW_NUMBER() OVER (ORDER BY id) - 1 AS i
    FROM trackers WHERE account_id = {account};
INSERT INTO tracker_tags (tracker_id, tag, dimension, value)
    SELECT id, 'campaign:c' || (i % 50), 'campaign', 'c' || (i % 50) FROM bt;
INSERT INTO tracker_tags (tracker_id, tag, dimension, value)
    SELECT id, 'region:' || r, 'region', r FROM (SELECT id, CASE i % 5 WHEN 0 THEN 'eu'
        WHEN 1 THEN 'us' WHEN 2 THEN 'apac' WHEN 3 THEN 'latam' ELSE 'mea' END AS r
        FROM bt);
INSERT INTO tracker_tags (tracker_id, tag, dimension, value)
    SELECT id, 'channel:' || CASE WHEN i % 2 = 0 THEN 'print' ELSE 'web' END, 'channel',
           CASE WHEN i % 2 = 0 THEN 'print' ELSE 'web' END FROM bt WHERE i % 7 = 0;
DROP INDEX visits_tracker_id;
DROP INDEX visits_tracker_visitor;
DROP INDEX visits_visitor;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {n}),
h AS (SELECT x, (x * 2654435761) % 4294967291 AS h1, (x * 1597334677) % 4294967279 AS h2,
             (x * 3812015801) % 4294967231 AS h3, (x * 2246822519) % 4294967197 AS h4
      FROM c),
v AS (SELECT x, h1, h2, h3, h4, (h2 % 100) < 40 AS ret,
             CASE WHEN (h2 % 100) < 40 THEN h3 % {pool} ELSE 1000000 + x END AS vid
      FROM h),
w AS (SELECT x, h1, h2, h3, h4, vid,
             CASE WHEN ret AND (h4 / 7) % 2 = 0 THEN (vid * 7919) % {trackers}
                  ELSE ((h1 % {trackers}) * ((h4 / 13) % {trackers})) / {trackers} END
                  AS ti,
             (vid * 2654435761) % 4294967291 AS vh,
             (h3 / 7) % 33 = 0 AS isbot
      FROM v)
INSERT INTO visits (tracker_id, visit_start, source, ip, country, city, browser,
                    browser_version, os, device, referer, user_agent, bot, visitor)
SELECT bt.id, {t0} + ((x - 1) * {span}) / {n},
       CASE WHEN (h2 / 100) % 5 = 0 THEN 'click' ELSE 'scan' END,
       '203.0.' || (vid % 250) || '.0',
       char(68 + ((vh / 10) % 300) % 40 / 10, 65 + ((vh / 10) % 300) % 10),
       'City ' || ((vh / 10) % 300),
       CASE WHEN isbot THEN 'Googlebot' ELSE CASE vh % 10
            WHEN 0 THEN 'Chrome Mobile' WHEN 1 THEN 'Chrome Mobile'
            WHEN 2 THEN 'Chrome Mobile' WHEN 3 THEN 'Chrome Mobile'
            WHEN 4 THEN 'Mobile Safari' WHEN 5 THEN 'Mobile Safari'
            WHEN 6 THEN 'Mobile Safari' WHEN 7 THEN 'Samsung Internet'
            WHEN 8 THEN 'Firefox' ELSE 'Edge' END END,
       '120', 'Android', CASE WHEN isbot THEN 'bot' ELSE 'mobile' END, NULL,
       'Mozilla/5.0 (bench ' || (vh % 5000) || ')', isbot, printf('%016x', vid)
FROM w JOIN bt ON bt.i = w.ti;
CREATE INDEX visits_tracker_id ON visits (tracker_id, id);
CREATE INDEX visits_tracker_visitor ON visits (tracker_id, visit_start, id, visitor, bot);
CREATE INDEX visits_visitor ON visits (visitor, visit_start);
INSERT INTO tracker_visitors (tracker_id, visitor, first_visit)
    SELECT tracker_id, visitor, MIN(visit_start) FROM visits WHERE bot = 0
    GROUP BY tracker_id, visitor;
CREATE TEMP TABLE sums AS SELECT tracker_id,
    SUM(bot = 0 AND source = 'scan') AS s, SUM(bot = 0 AND source = 'click') AS c,
    SUM(bot) AS b, MAX(CASE WHEN bot = 0 THEN visit_start END) AS l
    FROM visits GROUP BY tracker_id;
UPDATE trackers SET
    total_scans = (SELECT s FROM sums WHERE tracker_id = trackers.id),
    total_clicks = (SELECT c FROM sums WHERE tracker_id = trackers.id),
    total_bots = (SELECT b FROM sums WHERE tracker_id = trackers.id),
    last_visit = (SELECT l FROM sums WHERE tracker_id = trackers.id),
    unique_visitors = (SELECT COUNT(*) FROM tracker_visitors v
                       WHERE v.tracker_id = trackers.id)
WHERE account_id = {account} AND id IN (SELECT tracker_id FROM sums);
COMMIT;
"""


def sqlite(srv, sql, capture=False):
    p = subprocess.run(srv.as_user + ["sqlite3", "-bail", srv.db], input=sql, text=True,
                       check=True, stdout=subprocess.PIPE if capture else subprocess.DEVNULL)
    return p.stdout


def fmt(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S+0000", time.gmtime(t))


def timed(session, path, params):
    times = []
    r = None
    for _ in range(REPEAT):
        t = time.perf_counter()
        r = session.get(path, params=params)
        times.append((time.perf_counter() - t) * 1000)
        assert r.status_code == 200, (path, params, r.status_code, r.text[:300])
    return statistics.median(times), r.json()


def main():
    srv = start_server(accounts=[("bench", "professional")])
    worst = 0.0
    try:
        account = [int(line.split("\t")[0])
                   for line in srv.admin("account", "list").stdout.splitlines()
                   if line.split("\t")[1:2] == ["bench"]][0]
        srv.stop()
        gen = rebuild = 0.0
        if KEPT:
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(srv.db + suffix):
                    os.unlink(srv.db + suffix)
            os.link(KEPT, srv.db)
        else:
            started = time.time()
            sqlite(srv, LOAD_SQL.format(n=N, trackers=TRACKERS, account=account, t0=T0,
                                        span=SPAN, pool=POOL))
            gen = time.time() - started
            started = time.time()
            srv.admin("aggregates", "rebuild")
            rebuild = time.time() - started
        sizes = sqlite(srv, "SELECT (SELECT COUNT(*) FROM visits), "
                            "(SELECT COUNT(*) FROM agg_cnt), (SELECT COUNT(*) FROM agg_link), "
                            "(SELECT COUNT(*) FROM agg_gap), (SELECT COUNT(*) FROM agg_day);",
                       capture=True).strip().split("|")
        mb = os.path.getsize(srv.db) / 1e6
        srv.start()
        print("reports bench: %s visits over %d trackers in 2026, generated in %.0f s, "
              "aggregates rebuilt in %.0f s; database %.0f MB%s"
              % (sizes[0], TRACKERS, gen, rebuild, mb, " (BENCH_DB)" if KEPT else ""))
        print("  aggregate rows: agg_cnt %s, agg_link %s, agg_gap %s, agg_day %s"
              % tuple(sizes[1:]))

        calls = [0]
        session = [None]

        def api():
            # The rate limit is per token per minute: a new token every 50 requests.
            if session[0] is None or calls[0] >= 50:
                if session[0]:
                    session[0].close()
                session[0] = Api(srv, srv.token("bench"))
                calls[0] = 0
            calls[0] += REPEAT
            return session[0]

        year = {"visit_start": fmt(T0), "visit_start_end": fmt(T0 + SPAN - 1)}
        last_week = {"visit_start": fmt(T0 + SPAN - 7 * 86400),
                     "visit_start_end": fmt(T0 + SPAN - 1)}
        mid_week = {"visit_start": fmt(T0 + 151 * 86400),
                    "visit_start_end": fmt(T0 + 158 * 86400 - 1)}
        plus2 = {"visit_start": "2026-01-01T00:00:00+0200",
                 "visit_start_end": "2026-12-31T23:59:59+0200"}
        india = {"visit_start": "2026-06-01T09:30:00+0530",
                 "visit_start_end": "2026-06-08T09:29:59+0530"}

        def figure(label, path, params, note=""):
            nonlocal worst
            ms, body = timed(api(), path, params)
            worst = max(worst, ms)
            print("  %-34s %8.1f ms  %s" % (label, ms, note(body) if callable(note) else note),
                  flush=True)
            return body

        def rows(body):
            d = body["data"]
            return "%d rows, %d visits" % (len(d), sum(r["visits"] for r in d))

        for kind in ["name", "type", "tag", "date", "browser", "city", "country"]:
            figure("report=%s, year" % kind, "/report/", dict(year, report=kind), rows)
            figure("report=%s, last week" % kind, "/report/", dict(last_week, report=kind),
                   rows)
            figure("report=%s, week in June" % kind, "/report/",
                   dict(mid_week, report=kind), rows)
        figure("report=date, year in +0200", "/report/", dict(plus2, report="date"), rows)
        figure("report=city, week in +0530 09:30", "/report/", dict(india, report="city"),
               rows)
        figure("report=name, no window", "/report/", {"report": "name"}, rows)
        for label, params in [("year", year), ("last week", last_week),
                              ("week in June", mid_week)]:
            figure("crosstab campaign x region, " + label, "/report/tag-crosstab",
                   dict(params, row="campaign", col="region"),
                   lambda b: "total %d" % b["data"]["total"])
        kp = lambda b: "scans %d, uniques %d" % (b["kpis"]["totalScans"]["value"],
                                                 b["kpis"]["uniqueVisitors"]["value"])
        figure("dashboard, December vs November", "/dashboard/scansAnalytics",
               {"dateStart": "2026-12-02", "dateEnd": "2026-12-31"}, kp)
        figure("dashboard, the year vs 2025", "/dashboard/scansAnalytics",
               {"dateStart": "2026-01-01", "dateEnd": "2026-12-31"}, kp)
        first = api().get("/tracker", params={"rows": 10}).json()["data"]
        ids = [t["tracker_id"] for t in first]
        figure("report=browser, 10 trackers, week", "/report/",
               dict(mid_week, report="browser", **{"trackers[]": ids}), rows)
        figure("dashboard, 10 trackers, 30 days", "/dashboard/scansAnalytics",
               {"dateStart": "2026-12-02", "dateEnd": "2026-12-31", "trackers": ids}, kp)
        print("  slowest report figure: %.1f ms (target < %.0f ms)" % (worst, TARGET_MS))
        if KEPT:
            return 0 if worst < TARGET_MS else 1

        # The write path: an import (counters, visitor rows, aggregates) at the end of
        # the year, in time order, then one with out-of-order times.
        for label, order in [("in time order", 1), ("shuffled times", 0)]:
            path = os.path.join(srv.dir, "bench-%s.jsonl" % uuid.uuid4().hex)
            with open(path, "w") as f:
                for i in range(IMPORT):
                    k = i if order else (i * 7919) % IMPORT
                    vid = (i * 104729) % (POOL * 2)
                    f.write(json.dumps({
                        "tracker_id": ids[i % len(ids)],
                        "visit_start": fmt(T0 + SPAN + k * 10 + (0 if order else 86400 * 2)),
                        "source": "click" if i % 5 == 0 else "scan",
                        "ip": "203.0.%d.0" % (vid % 250), "country": "DE",
                        "city": "City %d" % (vid % 300), "browser": "Chrome Mobile",
                        "user_agent": "Mozilla/5.0 (bench %d)" % vid}) + "\n")
            os.chmod(path, 0o644)
            started = time.time()
            srv.admin("visits", "import", path)
            took = time.time() - started
            os.unlink(path)
            print("  import %d visits, %-15s: %6.1f s  (%.0f visits/s)"
                  % (IMPORT, label, took, IMPORT / took))
        return 0 if worst < TARGET_MS else 1
    except BaseException:
        print(srv.error_log()[-4000:], file=sys.stderr)
        raise
    finally:
        if KEPT and os.path.exists(srv.db):
            srv.stop()
            os.unlink(srv.db)       # the link only: BENCH_DB stays
        srv.cleanup()


if __name__ == "__main__":
    sys.exit(main())
