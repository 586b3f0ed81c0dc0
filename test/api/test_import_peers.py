"""qrtrack-admin trackers import: a peer's export (Shlink, YOURLS, Kutt, our CSV) becomes
trackers whose old codes scan at once, with their names, tags and creation times; bad rows
fail with their line, the rest is imported; a dry run writes nothing; a second import of
the same file fails every row as taken."""
import os
import shutil
import uuid

import pytest
import requests

from conftest import wait_until

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "peers")

# Per fixture: its format, the rows it imports (code, destination, name, tags,
# created_at), the rows that fail (line or JSON item, words of the reason), and how a
# failure is placed ("line" or "row").
CASES = {
    "shlink_export.csv": ("shlink", "line", [
        ("spring24", "https://shop.example.com/spring?utm_source=qr",
         "Spring campaign – landing", ["campaign:spring", "region:eu"],
         "2023-03-14T09:26:53+0000"),
        ("cafe-menu", "https://cafe.example.com/menu", 'Café menu, "summer"',
         ["menu", "print"], "2023-04-01T10:00:00+0000"),
        ("tokyo_hq", "https://example.jp/office/tokyo", "東京 オフィス", [],
         "2023-05-20T18:45:10+0000"),
    ], [(5, "http or https"), (6, "short code")]),
    "shlink_api.json": ("shlink", "row", [
        ("shl-api1", "https://docs.example.com/guide", "Guide — «Démarrage»",
         ["docs", "team:support"], "2022-11-05T07:15:00+0000"),
        ("shl-api3", "http://legacy.example.com/path?q=1", "legacy.example.com", [],
         "2021-01-31T23:59:59+0000"),
    ], [(2, "no destination URL")]),
    "yourls_url.csv": ("yourls", "line", [
        ("yrl-flyer", "https://www.example.com/flyer-2019", "Flyer 2019 – Ünïcode", [],
         "2019-09-09T10:11:12+0000"),
        ("yrl_blog", "https://blog.example.com/post/42", 'Blog, post "42"', [],
         "2020-02-02T02:02:02+0000"),
    ], [(3, "short code")]),
    "yourls_dump.sql": ("yourls", "line", [
        ("sql-menu", "https://restaurant.example.com/carte?lang=fr&x=1", "La carte d'été", [],
         "2021-07-14T12:00:00+0000"),
        ("sql_poster", "https://museum.example.com/expo", 'Affiche "Expo" — Zürich', [],
         "2021-08-01T08:30:00+0000"),
    ], [(43, "http or https")]),
    "kutt_links.json": ("kutt", "row", [
        ("kutt-ev", "https://events.example.com/2022", "Évènement 2022", [],
         "2022-03-03T03:03:03+0000"),
        ("kutt_doc", "https://docs.example.net/start", "docs.example.net", [],
         "2022-04-01T10:00:00+0000"),
    ], [(2, "http or https")]),
    "trackers.csv": ("csv", "line", [
        ("own-poster", "https://www.example.com/poster", "Poster Ä1 – 2024",
         ["campaign:poster", "region:eu"], "2024-02-29T12:00:00+0000"),
        ("own_card", "https://www.example.com/card", "www.example.com", ["card"],
         "2024-03-01T00:00:00+0000"),
    ], [(4, "not a date"), (5, "more than 20 tags")]),
}


def place(server, name=None, text=None):
    """A copy of a fixture (or text) that the server's user can read."""
    path = os.path.join(server.dir, "peer-%s-%s" % (uuid.uuid4().hex, name or "rows.csv"))
    if text is None:
        shutil.copyfile(os.path.join(FIXTURES, name), path)
    else:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    os.chmod(path, 0o644)
    return path


def run_import(server, account, fmt, path, *extra):
    return server.admin("trackers", "import", account, "--from", fmt, path, *extra, check=False)


def trackers_by_code(api):
    out, page = {}, 1
    while True:
        r = api.get("/tracker", params={"rows": 1000, "page": page})
        assert r.status_code == 200, r.text
        for t in r.json()["data"]:
            out[t["code"]] = t
        if page >= r.json()["meta"]["last_page"]:
            return out
        page += 1


def failures(stderr):
    return [line for line in stderr.splitlines() if line.strip()]


@pytest.mark.parametrize("fixture", sorted(CASES))
def test_peer_export_imported(server, api, fixture):
    fmt, unit, good, bad = CASES[fixture]
    path = place(server, fixture)
    p = run_import(server, "acme", fmt, path)
    assert p.returncode == 2, p.stderr
    assert p.stdout.strip() == "imported %d, failed %d" % (len(good), len(bad))
    lines = failures(p.stderr)
    assert len(lines) == len(bad), p.stderr
    for (n, why), line in zip(bad, lines):
        assert line.startswith("%s %d: " % (unit, n)) and why in line, line

    mine = trackers_by_code(api)
    for code, url, name, tags, created in good:
        t = mine[code]
        shown = api.get("/tracker/show/%d" % t["tracker_id"])
        assert shown.status_code == 200
        t = shown.json()
        assert (t["redirect_url"], t["name"], t["tags"], t["created_at"]) == \
            (url, name, sorted(tags), created)
        assert t["scan_url"].endswith("/q/" + code)
        # the old code scans at once and its visit is recorded
        r = requests.get("%s/q/%s" % (server.base, code), allow_redirects=False)
        assert r.status_code == 302 and r.headers["Location"] == url
        wait_until(lambda: api.get("/tracker/show/%d" % t["tracker_id"]).json()["totalScans"] == 1,
                   what="the visit of /q/%s" % code)

    # the same file again: every row fails, the good ones as taken
    again = run_import(server, "acme", fmt, path)
    assert again.returncode == 2
    assert again.stdout.strip() == "imported 0, failed %d" % (len(good) + len(bad))
    taken = [line for line in failures(again.stderr) if "is taken" in line]
    assert len(taken) == len(good), again.stderr
    for (code, *_), line in zip(good, taken):
        assert line.startswith(unit + " ") and ("the code %s is taken" % code) in line


def test_dry_run_writes_nothing(server, api):
    a, b = "dry-" + uuid.uuid4().hex[:10], "dry_" + uuid.uuid4().hex[:10]
    path = place(server, text="code,redirect_url,name,tags,created_at\n"
                 "%s,https://example.com/a,A,x,2024-01-01\n"
                 "%s,https://example.com/b,,,\n"
                 "%s,https://example.com/dup,,,\n"
                 "no,https://example.com/short,,,\n" % (a, b, a))
    p = run_import(server, "acme", "csv", path, "--dry-run")
    assert p.returncode == 2, p.stderr
    assert p.stdout.strip() == "dry run: would have imported 2, failed 2"
    assert failures(p.stderr) == [
        "line 4: the code %s is taken" % a,
        "line 5: the short code is not 3 to 64 letters, digits, '_' or '-'"]
    mine = trackers_by_code(api)
    assert a not in mine and b not in mine
    assert requests.get("%s/q/%s" % (server.base, a), allow_redirects=False).status_code == 404

    p = run_import(server, "acme", "csv", path)
    assert p.stdout.strip() == "imported 2, failed 2"
    r = requests.get("%s/q/%s" % (server.base, a), allow_redirects=False)
    assert r.status_code == 302 and r.headers["Location"] == "https://example.com/a"


def test_clean_import_exits_0_and_codes_are_the_accounts(server, api, other_api):
    code = "clean-" + uuid.uuid4().hex[:8]
    path = place(server, text="code,redirect_url\n%s,https://example.com/clean\n" % code)
    p = run_import(server, "other", "csv", path)
    assert (p.returncode, p.stdout.strip(), p.stderr) == (0, "imported 1, failed 0", "")
    assert code in trackers_by_code(other_api)
    assert code not in trackers_by_code(api)


def test_a_csv_row_of_other_fields_than_the_header_fails_alone(server, api):
    """A row whose field count is not the first line's fails on its own (an unquoted comma
    made the fields slide: "Smith, John" was named "Smith" and tagged "John"); a first
    line that names a column twice is not of the format."""
    a, b, c = ("ragged-%d-" % i + uuid.uuid4().hex[:8] for i in range(3))
    path = place(server, text="code,redirect_url,name,tags\n"
                 "%s,https://example.com/a,Smith, John,vip\n"
                 "%s,https://example.com/b\n"
                 "%s,https://example.com/c,\"Smith, John\",vip\n" % (a, b, c))
    p = run_import(server, "acme", "csv", path)
    assert p.returncode == 2 and p.stdout.strip() == "imported 1, failed 2", p.stdout
    assert failures(p.stderr) == ["line 2: it has 5 fields; the first line has 4",
                                  "line 3: it has 2 fields; the first line has 4"]
    mine = trackers_by_code(api)
    assert a not in mine and b not in mine
    assert (mine[c]["name"], mine[c]["tags"]) == ("Smith, John", ["vip"])
    p = run_import(server, "acme", "csv",
                   place(server, text="code,code,redirect_url\nx1,x2,https://example.com/\n"))
    assert p.returncode == 1 and "names the code column twice" in p.stderr, p.stderr


def test_fatal_errors_exit_1(server):
    path = place(server, text="a,b\n1,2\n")
    p = run_import(server, "acme", "shlink", path)
    assert p.returncode == 1 and "longUrl" in p.stderr
    assert run_import(server, "nobody-here", "csv", path).returncode == 1
    assert run_import(server, "acme", "csv", path + ".missing").returncode == 1
    p = run_import(server, "acme", "bitly", path)
    assert p.returncode == 1 and "bitly" in p.stderr
    p = run_import(server, "acme", "kutt", place(server, text='{"data": [1,'))
    assert p.returncode == 1 and "not JSON" in p.stderr
    p = server.admin("trackers", "import", "acme", path, check=False)
    assert p.returncode == 2 and "bad arguments" in p.stderr


def test_an_empty_input_is_no_export(server, api):
    """A file of nothing, or of blank lines (a failed export, a wrong path), exits 1 saying
    so, in every format, from a file and from stdin; a header without rows is an export of
    no short URL (exit 0)."""
    before = len(trackers_by_code(api))
    for fmt in ("shlink", "yourls", "kutt", "csv"):
        for text in ("", "\n", "\ufeff\r\n  \n"):
            p = run_import(server, "acme", fmt, place(server, text=text))
            assert p.returncode == 1 and "it is empty" in p.stderr, (fmt, text, p.stderr)
            assert p.stdout.strip() == "imported 0, failed 0", p.stdout
        p = server.admin("trackers", "import", "acme", "--from", fmt, "-", input="",
                         check=False)
        assert p.returncode == 1 and "it is empty" in p.stderr, (fmt, p.stderr)
    p = run_import(server, "acme", "csv", place(server, text="code,redirect_url\n"))
    assert p.returncode == 0 and p.stdout.strip() == "imported 0, failed 0", p.stderr
    assert len(trackers_by_code(api)) == before


def test_help_lists_trackers_import(server):
    out = server.admin("--help").stdout
    assert "trackers import ACCOUNT --from shlink|yourls|kutt|csv FILE [--dry-run]" in out
