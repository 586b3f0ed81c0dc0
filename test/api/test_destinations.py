"""Where each visit went (CONTRACT section 7, "Visits gain destination"; schema 25):
the URL a scan was sent to (the tracker's redirect_url, a rule's, expired_url once the
cap is reached or outside the validity; null for a 410 page) is recorded with the
visit, listed in the JSON, carried by `visits import`, erased by the retention's purge,
and grouped by `report=destination`; the CSV header stays as it was."""
import datetime
import os
import time

import pytest
import requests

from conftest import Api, Server, start_server, started
from lib.counts import check_counts
from lib.env import LATEST_SCHEMA
from lib.migrations import before_dict_refs
from lib.qr import IPHONE
from lib.visits import CHROME, T0, export, import_visits, listing, visit

ANDROID = ("Mozilla/5.0 (Linux; Android 13; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/120.0.0.0 Mobile Safari/537.36")
DESKTOP = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like "
           "Gecko) Chrome/120.0.0.0 Safari/537.36")
HOME = "https://example.com/home"
STORE = "https://apps.apple.com/app/x"
EXPIRED = "https://example.com/expired"
DAY = 86400


def iso(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%S+0000")


PAST = iso(datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=2))


@pytest.fixture(scope="module")
def srv():
    s = start_server(accounts=[("acme", "professional")])
    yield s
    s.cleanup()


@pytest.fixture
def api(srv):
    with Api(srv, srv.token("acme")) as a:
        yield a


def create(api, **body):
    body.setdefault("redirect_url", HOME)
    r = api.post("/tracker", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def scan(srv, t, ua):
    r = requests.get("%s/q/%s" % (srv.base, t["code"]), allow_redirects=False,
                     headers={"User-Agent": ua}, timeout=30)
    assert r.status_code in (302, 410), r.text
    return r.headers["Location"] if r.status_code == 302 else None


def destinations(api, t):
    """The listed visits' destinations, oldest first."""
    data = listing(api, t["tracker_id"], rows=1000)["data"]
    return [v["destination"] for v in reversed(data)]


def report(api, tids, **params):
    r = api.get("/report/", params=dict(params, report="destination",
                                        **{"trackers[]": tids}))
    assert r.status_code == 200, r.text
    assert r.json()["meta"]["report"] == "destination"
    return [(x["destination"], x["visits"], x["scans"], x["clicks"], x["unique_visitors"])
            for x in r.json()["data"]]


def test_each_visit_records_where_it_was_sent(srv, api):
    t = create(api, rules=[{"redirect_url": STORE, "os": ["iOS"]}], max_scans=3,
               expired_url=EXPIRED)
    sent = [scan(srv, t, ua) for ua in (IPHONE, ANDROID, DESKTOP, ANDROID)]
    assert sent == [STORE, HOME, HOME, EXPIRED]
    assert destinations(api, t) == sent
    # Outside its validity: expired_url, or a 410 page (destination null).
    late = create(api, valid_until=PAST, expired_url=EXPIRED)
    gone = create(api, valid_until=PAST)
    assert scan(srv, late, ANDROID) == EXPIRED
    assert scan(srv, gone, ANDROID) is None
    assert destinations(api, late) == [EXPIRED]
    assert destinations(api, gone) == [None]
    # The CSV export keeps its header (csv_rows checks it) and its columns.
    rows = export(api, t["tracker_id"])
    assert len(rows) == 4 and all(len(r) == 15 for r in rows)
    # Grouped exactly: visits, then key; the 410 visit as null.
    assert report(api, [t["tracker_id"]]) == [(HOME, 2, 2, 0, 2), (STORE, 1, 1, 0, 1),
                                               (EXPIRED, 1, 1, 0, 1)]
    assert report(api, [t["tracker_id"], late["tracker_id"], gone["tracker_id"]]) == [
        (EXPIRED, 2, 2, 0, 1), (HOME, 2, 2, 0, 2), (STORE, 1, 1, 0, 1), (None, 1, 1, 0, 1)]
    # The view the import path and SQL by hand read has it too.
    assert srv.sql("SELECT destination FROM visits WHERE tracker_id = %d ORDER BY id"
                   % t["tracker_id"]).split() == sent


def test_import_carries_the_destination_and_the_report_counts_a_window(srv, api):
    t = create(api)
    a, b = "https://a.example/%d" % os.getpid(), "https://b.example/x?y=1"
    lines = [visit(t["tracker_id"], T0 + i * 3600, destination=[a, b, None][i % 3],
                   user_agent=CHROME + " v%d" % (i % 4),
                   source="click" if i % 4 == 0 else "scan")
             for i in range(12)]
    lines.append(visit(t["tracker_id"], T0 + 5, destination=a, bot=True,
                       user_agent="Googlebot/2.1", device="bot"))
    import_visits(srv, lines)
    got = listing(api, t["tracker_id"], rows=1000)["data"]
    assert sorted((v["visit_start"], v["destination"]) for v in got) == \
        sorted((v["visit_start"], v["destination"]) for v in lines)
    # The window's bounds are inclusive; bots are never counted.
    window = {"visit_start": lines[3]["visit_start"], "visit_start_end": lines[9]["visit_start"]}
    want = {}
    for v in lines[3:10]:
        g = want.setdefault(v["destination"], [0, 0, set()])
        g[0 if v["source"] == "scan" else 1] += 1
        g[2].add(v["user_agent"])
    expect = sorted(((d, g[0] + g[1], g[0], g[1], len(g[2])) for d, g in want.items()),
                    key=lambda r: (-r[1], r[0] is None, r[0] or ""))
    assert report(api, [t["tracker_id"]], **window) == expect
    assert report(api, [t["tracker_id"]], visit_start="2099-01-01T00:00:00Z") == []


def test_import_refuses_a_destination_that_is_no_url(srv, api):
    t = create(api)
    path = os.path.join(srv.dir, "bad-destination.jsonl")
    with open(path, "w") as f:
        f.write('{"tracker_id": %d, "visit_start": "2026-01-01T00:00:00Z", "source": "scan",'
                ' "destination": "javascript:alert(1)"}\n' % t["tracker_id"])
    os.chmod(path, 0o644)
    try:
        r = srv.admin("visits", "import", path, check=False)
    finally:
        os.unlink(path)
    assert r.returncode != 0 and "bad destination" in r.stdout + r.stderr
    assert listing(api, t["tracker_id"])["data"] == []


def test_the_purge_erases_destinations_no_visit_refers_to():
    """A visit made old and purged loses its destination, whose string then leaves
    visit_destinations; a younger visit's stays; a writer that kept the deleted id
    records the same URL afresh."""
    srv = Server(extra="QRTrackRateLimit 0\n")
    try:
        srv.admin("init")
        srv.account("acme")
        srv.start()
        old = "https://old.example/%d-%d" % (os.getpid(), time.time_ns())
        young = "https://young.example/%d" % os.getpid()
        with Api(srv, srv.token("acme")) as a:
            t_old = create(a, redirect_url=old)
            t_young = create(a, redirect_url=young)
            assert scan(srv, t_old, ANDROID) == old
            assert scan(srv, t_young, ANDROID) == young
            srv.sql("UPDATE visit_rows SET visit_start = visit_start - %d WHERE tracker_id "
                    "= %d" % (40 * DAY, t_old["tracker_id"]))
            assert srv.admin("visits", "purge", "30").stdout.strip() == "1"
            left = srv.sql("SELECT url FROM visit_destinations ORDER BY url").split()
            assert old not in left and young in left
            assert destinations(a, t_old) == [None]
            assert destinations(a, t_young) == [young]
            # The writer may have kept the deleted row's id: the new visit is whole.
            assert scan(srv, t_old, ANDROID) == old
            assert destinations(a, t_old) == [None, old]
            assert int(srv.sql("SELECT COUNT(*) FROM visit_rows v WHERE v.dest_id IS NOT NULL"
                               " AND NOT EXISTS (SELECT 1 FROM visit_destinations d WHERE "
                               "d.id = v.dest_id)").strip()) == 0
    finally:
        srv.cleanup()


# The view "visits" as schema 24 had it (sql/011 for SQLite, sql/009 for PostgreSQL).
OLD_VIEW = ("CREATE VIEW visits AS SELECT v.id AS id, v.tracker_id AS tracker_id, v.visit_start"
            " AS visit_start, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan' END AS source, "
            "i.ip AS ip, g.country AS country, g.city AS city, u.browser AS browser, "
            "u.browser_version AS browser_version, u.os AS os, u.device AS device, r.referer AS "
            "referer, u.user_agent AS user_agent, v.bot AS bot, %s AS visitor FROM visit_rows v "
            "LEFT JOIN visit_ips i ON i.id = v.ip_id LEFT JOIN visit_places g ON g.id = "
            "v.place_id LEFT JOIN visit_uas u ON u.id = v.ua_id LEFT JOIN visit_referers r ON "
            "r.id = v.ref_id")


def test_a_database_of_schema_24_migrates_and_its_visits_went_nowhere_known():
    srv, tok = started(extra="QRTrackRateLimit 0\n")
    try:
        with Api(srv, tok) as a:
            t = create(a)
            for ua in (IPHONE, ANDROID):
                assert scan(srv, t, ua) == HOME
        srv.stop()
        # Back to schema 24: no destinations, the view without them.
        visitor = ("CASE WHEN typeof(v.visitor) = 'integer' THEN printf('%016x', v.visitor) "
                   "ELSE v.visitor END" if srv.backend == "sqlite"
                   else "lpad(to_hex(v.visitor), 16, '0')")
        # (SQLite: schema 36's dictionary counts and their triggers, and their index
        # on PostgreSQL, came later too; and schema 50's visits_dest, 61's
        # visits_tracker_dest and 62's visit_refs_due)
        before_dict_refs(srv)
        later = ("DROP TABLE visit_refs_due; "
                 "DROP TRIGGER visit_refs_ins; DROP TRIGGER visit_refs_del; "
                 "DROP TRIGGER visit_refs_upd; ALTER TABLE visit_uas DROP COLUMN refs; "
                 "ALTER TABLE visit_referers DROP COLUMN refs; "
                 "ALTER TABLE visit_ips DROP COLUMN refs; " if srv.backend == "sqlite"
                 else "DROP INDEX visits_by_dest; ") + \
            "DROP INDEX visits_dest; DROP INDEX visits_tracker_dest; "
        srv.sql("DROP VIEW visits; " + later +
                "ALTER TABLE visit_rows DROP COLUMN dest_id; DROP TABLE visit_destinations; "
                + OLD_VIEW % visitor + "; UPDATE qrt_schema SET version = 24")
        srv.start()
        assert int(srv.sql("SELECT MAX(version) FROM qrt_schema")) == LATEST_SCHEMA
        check_counts(srv)
        with Api(srv, tok) as a:
            assert destinations(a, t) == [None, None]
            assert scan(srv, t, DESKTOP) == HOME
            assert destinations(a, t) == [None, None, HOME]
            assert report(a, [t["tracker_id"]]) == [(None, 2, 2, 0, 2), (HOME, 1, 1, 0, 1)]
        # The view writes it again (SQL by hand, older tools).
        srv.sql("INSERT INTO visits (tracker_id, visit_start, source, bot, visitor, user_agent,"
                " destination) VALUES (%d, %d, 'scan', 0, '00000000000000aa', '%s', "
                "'https://by-hand.example/')" % (t["tracker_id"], T0, CHROME))
        assert srv.sql("SELECT destination FROM visits WHERE visitor = '00000000000000aa'"
                       ).strip() == "https://by-hand.example/"
    finally:
        srv.cleanup()
