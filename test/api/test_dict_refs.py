"""Dictionary counts (schema 36, SQLite; 63, PostgreSQL): each user agent, referer, address
and destination row counts the visit rows that name it, through every way visits change
(scans, imports, the purge's erasure, a tracker deleted, SQL by hand), and the retention's
sweep deletes the rows nobody names from those counts. A database of schema 31 (SQLite) or
62 (PostgreSQL), with visits, gets its counts on upgrade."""
import json
import os
import time

import pytest
import requests

from conftest import Api, Server, started
from lib.counts import check_counts, refs
from lib.migrations import before_dict_refs
from lib.retention import DAY, visit


def scan(srv, code, agent, referer):
    r = requests.get("%s/q/%s" % (srv.base, code), allow_redirects=False, timeout=30,
                     headers={"User-Agent": agent, "Referer": referer})
    assert r.status_code == 302, r.text


def tracker(a, url="https://example.com/"):
    r = a.post("/tracker", json={"redirect_url": url})
    assert r.status_code == 200, r.text
    tid = r.json()["tracker_id"]
    return tid, a.get("/tracker/show/%d" % tid).json()["code"]


def import_lines(srv, lines):
    path = os.path.join(srv.dir, "import-%d.jsonl" % time.time_ns())
    with open(path, "w") as f:
        f.write("".join(json.dumps(l) + "\n" for l in lines))
    srv.admin("visits", "import", path)


def populate(srv, a):
    """Two trackers, scans and imported visits sharing strings between them."""
    now = int(time.time())
    t1, c1 = tracker(a, "https://example.com/one")
    t2, c2 = tracker(a, "https://example.com/two")
    for k in range(6):
        scan(srv, (c1, c2)[k % 2], "refs-agent-%d" % (k % 3), "https://ref.example/%d" % (k % 2))
    import_lines(srv, [visit((t1, t2)[k % 2], now - (40 if k < 4 else 2) * DAY + k * 60,
                             "w%d" % (k % 3)) for k in range(8)])
    return now, (t1, c1), (t2, c2)


def strings(srv):
    return int(srv.sql("SELECT (SELECT COUNT(*) FROM visit_uas WHERE user_agent LIKE "
                       "'%%refs-agent-%%') + (SELECT COUNT(*) FROM visit_referers WHERE "
                       "referer LIKE 'https://ref.example/%%')").strip())


def test_counts_follow_every_change_and_the_sweep_uses_them():
    srv, tok = started(extra="QRTrackRateLimit 0\n")
    try:
        with Api(srv, tok) as a:
            now, (t1, c1), (t2, c2) = populate(srv, a)
            check_counts(srv)
            assert strings(srv) == 5
            # SQL by hand: a visit loses its referer, another moves to another agent
            srv.sql("UPDATE visit_rows SET ref_id = NULL WHERE id = (SELECT MIN(id) FROM "
                    "visit_rows WHERE ref_id IS NOT NULL)")
            srv.sql("UPDATE visit_rows SET ua_id = (SELECT MIN(ua_id) FROM visit_rows) "
                    "WHERE id = (SELECT MAX(id) FROM visit_rows)")
            check_counts(srv)
            # every scan made old: the purge erases them, the sweep deletes their strings
            srv.sql("UPDATE visit_rows SET visit_start = visit_start - %d WHERE ua_id IN "
                    "(SELECT id FROM visit_uas WHERE user_agent LIKE '%%refs-agent-%%')"
                    % (40 * DAY))
            old = srv.sql("SELECT COUNT(*) FROM visit_rows WHERE visit_start < %d"
                          % (now - 31 * DAY)).strip()
            assert int(old) >= 10
            assert srv.admin("visits", "purge", "30").stdout.strip() == old
            check_counts(srv)
            assert strings(srv) == 0
            # a tracker deleted: its visits' strings are no longer counted
            assert a.delete("/tracker/%d" % t2).status_code in (200, 204)
            check_counts(srv)
            scan(srv, c1, "refs-agent-again", "https://ref.example/again")
            check_counts(srv)
            assert strings(srv) == 2
    finally:
        srv.cleanup()


def test_scans_references_wait_until_a_sweep_settles_them():
    """Schema 62 (SQLite): the scan writer appends each batch's references to
    visit_refs_due instead of updating every entry it names; the retention's sweep adds
    them to refs first, in its own transaction, so an entry that only waiting references
    name is kept, and the table is empty after it."""
    srv, tok = started(extra="QRTrackRateLimit 0\n")
    try:
        if srv.backend != "sqlite":
            pytest.skip("SQLite's writer (PostgreSQL's triggers count at once, schema 63)")
        with Api(srv, tok) as a:
            _, c1 = tracker(a, "https://example.com/due")
        for k in range(30):
            scan(srv, c1, "due-agent-%d" % (k % 10), "https://due.example/%d" % (k % 7))
        assert int(srv.sql("SELECT COUNT(*) FROM visit_refs_due").strip()) > 0
        named = int(srv.sql("SELECT COUNT(*) FROM visit_uas WHERE user_agent LIKE "
                            "'due-agent-%%'").strip())
        assert named == 10
        # the scans' entries are not in refs yet: only their waiting rows name them
        assert srv.sql("SELECT SUM(%s) FROM visit_uas u WHERE user_agent LIKE "
                       "'due-agent-%%%%'" % refs(srv, "visit_uas", "u")).strip() == "0"
        check_counts(srv)
        srv.admin("visits", "purge", "30")
        assert int(srv.sql("SELECT COUNT(*) FROM visit_refs_due").strip()) == 0
        assert srv.sql("SELECT SUM(%s) FROM visit_uas u WHERE user_agent LIKE "
                       "'due-agent-%%%%'" % refs(srv, "visit_uas", "u")).strip() == "30"
        assert int(srv.sql("SELECT COUNT(*) FROM visit_referers WHERE referer LIKE "
                           "'https://due.example/%%'").strip()) == 7
        assert int(srv.sql("SELECT COUNT(*) FROM visit_uas WHERE user_agent LIKE "
                           "'due-agent-%%'").strip()) == 10
        check_counts(srv)
        # scans again, then their visits erased before anything settled: the sweep
        # settles, finds nobody names them, and deletes their strings
        for k in range(5):
            scan(srv, c1, "gone-agent-%d" % k, "https://gone.example/%d" % k)
        srv.sql("UPDATE visit_rows SET visit_start = visit_start - %d WHERE ua_id IN "
                "(SELECT id FROM visit_uas WHERE user_agent LIKE 'gone-agent-%%')" % (40 * DAY))
        srv.admin("visits", "purge", "30")
        check_counts(srv)
        assert int(srv.sql("SELECT COUNT(*) FROM visit_uas WHERE user_agent LIKE "
                           "'gone-agent-%%'").strip()) == 0
        assert int(srv.sql("SELECT COUNT(*) FROM visit_referers WHERE referer LIKE "
                           "'https://gone.example/%%'").strip()) == 0
        assert int(srv.sql("SELECT COUNT(*) FROM visit_uas WHERE user_agent LIKE "
                           "'due-agent-%%'").strip()) == 10
    finally:
        srv.cleanup()


def test_an_upgrade_from_schema_31_counts_the_visits():
    srv = Server(extra="QRTrackRateLimit 0\n")
    if srv.backend != "sqlite":
        srv.cleanup()
        pytest.skip("SQLite's schema 31 (PostgreSQL's upgrade: the next test)")
    try:
        srv.admin("init")
        srv.account("acme")
        tok = srv.token("acme")
        srv.start()
        with Api(srv, tok) as a:
            populate(srv, a)
        srv.stop()
        # the database as schema 31 left it: no counts, no triggers, the reverse indexes
        srv.sql("DROP TABLE visit_refs_due; "
                "DROP TRIGGER visit_refs_ins; DROP TRIGGER visit_refs_del; "
                "DROP TRIGGER visit_refs_upd; "
                "ALTER TABLE visit_uas DROP COLUMN refs; "
                "ALTER TABLE visit_referers DROP COLUMN refs; "
                "ALTER TABLE visit_ips DROP COLUMN refs; "
                "ALTER TABLE visit_destinations DROP COLUMN refs; "
                "CREATE INDEX visits_by_ua ON visit_rows (ua_id); "
                "CREATE INDEX visits_by_ref ON visit_rows (ref_id) WHERE ref_id IS NOT NULL; "
                "CREATE INDEX visits_by_ip ON visit_rows (ip_id) WHERE ip_id IS NOT NULL; "
                "CREATE INDEX visits_by_dest ON visit_rows (dest_id) WHERE dest_id IS NOT NULL; "
                "UPDATE qrt_schema SET version = 31;")
        srv.start()
        assert int(srv.sql("SELECT MAX(version) FROM qrt_schema").strip()) >= 36
        check_counts(srv)
        assert int(srv.sql("SELECT COUNT(*) FROM visit_uas WHERE refs > 0").strip()) > 0
        assert srv.sql("SELECT name FROM sqlite_master WHERE name LIKE 'visits_by_%'").strip() == ""
    finally:
        srv.cleanup()


def test_a_postgresql_upgrade_drops_the_sweeps_reverse_indexes():
    """Schemas 39 and 63 (PostgreSQL): the sweep reads the dictionaries' counts, so a
    database of schema 36 upgraded loses visits_by_ua and visits_by_ref (39), then
    visit_dict_counts with its index by entry, visits_by_ip and visits_by_dest (63), gets
    each entry's count from its visits, and its sweep still deletes only the strings
    nobody names."""
    srv = Server(extra="QRTrackRateLimit 0\n")
    if srv.backend != "pgsql":
        srv.cleanup()
        pytest.skip("PostgreSQL's indexes (SQLite counts in its dictionaries)")
    try:
        srv.admin("init")
        srv.account("acme")
        tok = srv.token("acme")
        srv.start()
        with Api(srv, tok) as a:
            now, _, _ = populate(srv, a)
        srv.stop()
        # the database as schema 36 left it
        before_dict_refs(srv)
        srv.sql("DROP INDEX visit_dict_counts_by_id; "
                "CREATE INDEX visits_by_ua ON visit_rows (ua_id); "
                "CREATE INDEX visits_by_ref ON visit_rows (ref_id) WHERE ref_id IS NOT NULL; "
                "UPDATE qrt_schema SET version = 36;")
        srv.start()
        assert int(srv.sql("SELECT MAX(version) FROM qrt_schema").strip()) >= 63
        names = set(srv.sql("SELECT indexname FROM pg_indexes WHERE indexname LIKE "
                            "'visit%%by%%'").split())
        assert names == set(), names
        assert int(srv.sql("SELECT COUNT(*) FROM visit_refs WHERE d = 1 AND n > 0").strip()) > 0
        check_counts(srv)
        assert strings(srv) == 5
        # half the scans made old: only the strings no younger visit names go
        srv.sql("UPDATE visit_rows SET visit_start = visit_start - %d WHERE ua_id IN "
                "(SELECT id FROM visit_uas WHERE user_agent = 'refs-agent-0')" % (40 * DAY))
        srv.admin("visits", "purge", "30")
        check_counts(srv)
        assert int(srv.sql("SELECT COUNT(*) FROM visit_uas WHERE user_agent = "
                           "'refs-agent-0'").strip()) == 0
        assert int(srv.sql("SELECT COUNT(*) FROM visit_uas WHERE user_agent LIKE "
                           "'refs-agent-%%'").strip()) == 2
        # referer /0 is still named by younger scans of agent 2, /1 by agent 1's
        assert int(srv.sql("SELECT COUNT(*) FROM visit_referers WHERE referer LIKE "
                           "'https://ref.example/%%'").strip()) == 2
    finally:
        srv.cleanup()


def test_a_large_import_batch_counts_its_references_once_per_entry():
    """SQLite counts a batch of 256 visits or more itself (visit_refs_batch holds its id
    range while it writes, so the trigger skips those rows); the counts are those of the
    rows, after large and small imports, and after a large batch that fails."""
    srv, tok = started(extra="QRTrackRateLimit 0\n")
    try:
        with Api(srv, tok) as a:
            now = int(time.time())
            t1, c1 = tracker(a, "https://example.com/one")
            t2, _ = tracker(a, "https://example.com/two")
            lines = []
            for k in range(700):
                v = visit((t1, t2)[k % 2], now - 5 * DAY + k * 37, "big%d" % (k % 7))
                v["ip"] = "10.%d.%d.1" % (k % 3, k % 11)
                if k % 5 == 0:
                    del v["referer"]
                lines.append(v)
            import_lines(srv, lines)
            check_counts(srv)
            import_lines(srv, lines[:3])
            scan(srv, c1, "big-agent", "https://ref.example/big")
            check_counts(srv)
            bad = lines[:400] + ["not a visit"]
            path = os.path.join(srv.dir, "bad.jsonl")
            with open(path, "w") as f:
                f.write("".join((l if isinstance(l, str) else json.dumps(l)) + "\n"
                                for l in bad))
            assert srv.admin("visits", "import", path, check=False).returncode != 0
            check_counts(srv)
            if srv.backend == "sqlite":
                assert srv.sql("SELECT COUNT(*) FROM visit_refs_batch").strip() == "0"
    finally:
        srv.cleanup()


def test_a_long_import_counts_each_new_entry_once():
    """An import of 20,000 visits, each naming its own user agent, referer and address:
    each entry counts one visit (SQLite: the importer counts a large batch itself, none
    waits in visit_refs_due; PostgreSQL: its triggers, in visit_refs), and every count is
    right."""
    srv, tok = started(extra="QRTrackRateLimit 0\n")
    try:
        with Api(srv, tok) as a:
            now = int(time.time())
            t1, _ = tracker(a, "https://example.com/long")
            lines = []
            for k in range(20000):
                v = visit(t1, now - 5 * DAY + k, "long%d" % k)
                v["ip"] = "10.%d.%d.%d" % (k >> 16, (k >> 8) & 255, k & 255)
                lines.append(v)
            import_lines(srv, lines)
        if srv.backend == "sqlite":
            assert int(srv.sql("SELECT COUNT(*) FROM visit_refs_due").strip()) == 0
        assert int(srv.sql("SELECT COUNT(*) FROM visit_uas u WHERE %s = 1 AND user_agent "
                           "LIKE '%%%%long%%%%'" % refs(srv, "visit_uas", "u")).strip()) > 10000
        check_counts(srv)
    finally:
        srv.cleanup()
