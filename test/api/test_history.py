"""A tracker's history (CONTRACT section 7, "Token scopes and history").

`GET /tracker/<id>/history`: every create, change and delete, newest first, with the
token's label and `{"field": [old, new]}`; passwords as "***"; paged like the other
lists; another account's tracker is 404; a deleted tracker's history stays readable.
Rows are written in the transaction of the change: a refused change leaves none.
"""
import concurrent.futures
import threading

import pytest
import requests

from conftest import BACKEND, Api, two_nodes

SECRET = "correct horse battery staple"


@pytest.fixture
def ci(server):
    tok = server.token("acme", "--name", "ci")
    with Api(server, tok) as s:
        yield s


def history(api, tid, **params):
    r = api.get("/tracker/%d/history" % tid, params=params)
    assert r.status_code == 200, r.text
    return r.json()


def test_create_change_delete_are_recorded_newest_first(ci, api):
    t = ci.post("/tracker", json={"redirect_url": "https://example.com/a", "name": "flyer",
                                  "tags": ["campaign:spring"], "password": SECRET}).json()
    tid = t["tracker_id"]
    rules = [{"redirect_url": "https://example.com/ios", "os": ["iOS"]}]
    r = ci.patch("/tracker/%d" % tid, json={
        "redirect_url": "https://example.com/b", "name": "poster",
        "tags": ["campaign:autumn", "region:eu"], "rules": rules,
        "valid_from": "2026-01-01T00:00:00+0100", "valid_until": None, "max_scans": 500,
        "expired_url": "https://example.com/over", "password": None})
    assert r.status_code == 200, r.text
    r = api.patch("/tracker/%d" % tid, json={"password": SECRET + "!"})
    assert r.status_code == 200
    assert api.delete("/tracker/%d" % tid).status_code == 204

    h = history(api, tid)
    assert [e["kind"] for e in h["data"]] == ["deleted", "updated", "updated", "created"]
    assert [e["token"] for e in h["data"]] == ["default", "default", "ci", "ci"]
    assert h["meta"]["total"] == 4
    deleted, password, change, created = h["data"]
    assert deleted["changes"] == {}
    assert password["changes"] == {"password": [None, "***"]}
    assert change["changes"] == {
        "redirect_url": ["https://example.com/a", "https://example.com/b"],
        "name": ["flyer", "poster"],
        "tags": [["campaign:spring"], ["campaign:autumn", "region:eu"]],
        "rules": [[], rules],
        "valid_from": [None, "2025-12-31T23:00:00+0000"],
        "max_scans": [None, 500],
        "expired_url": [None, "https://example.com/over"],
        "password": ["***", None],
    }
    assert created["changes"] == {
        "redirect_url": [None, "https://example.com/a"], "name": [None, "flyer"],
        "tags": [None, ["campaign:spring"]], "password": [None, "***"]}
    for e in h["data"]:
        assert e["at"].endswith("+0000")
    assert SECRET not in str(h)


def test_a_change_that_changes_nothing_or_is_refused_leaves_no_row(api, server):
    t = api.post("/tracker", json={"redirect_url": "https://example.com/same",
                                   "name": "same"}).json()
    tid = t["tracker_id"]
    assert api.patch("/tracker/%d" % tid, json={"name": "same"}).status_code == 200
    assert api.patch("/tracker/%d" % tid, json={}).status_code == 200
    assert api.patch("/tracker/%d" % tid, json={"redirect_url": "ftp://x",
                                                "name": "new"}).status_code == 422
    h = history(api, tid)
    assert [e["kind"] for e in h["data"]] == ["created"]
    n = server.sql("SELECT COUNT(*) FROM tracker_history WHERE tracker_id = %d" % tid)
    assert n.strip() == "1"


def test_pages_like_the_other_lists(api):
    tid = api.post("/tracker", json={"redirect_url": "https://example.com/0"}).json()["tracker_id"]
    for i in range(1, 6):
        assert api.patch("/tracker/%d" % tid,
                         json={"redirect_url": "https://example.com/%d" % i}).status_code == 200
    first = history(api, tid, rows=2)
    assert first["meta"] == {"current_page": 1, "per_page": 2, "total": 6, "last_page": 3}
    assert first["data"][0]["changes"]["redirect_url"][1] == "https://example.com/5"
    last = history(api, tid, rows=2, page=3)
    assert [e["kind"] for e in last["data"]] == ["updated", "created"]
    assert history(api, tid, rows=2, page=4)["data"] == []
    assert api.get("/tracker/%d/history" % tid, params={"rows": 0}).status_code == 422
    assert api.get("/tracker/%d/history" % tid, params={"page": "x"}).status_code == 422


def test_other_accounts_and_unknown_ids_are_not_found(api, other_api):
    tid = api.post("/tracker", json={"redirect_url": "https://example.com/mine"}).json()["tracker_id"]
    for who, path in ((other_api, "/tracker/%d/history" % tid),
                      (api, "/tracker/999999999/history"),
                      (api, "/tracker/99999999999999999999999/history")):
        r = who.get(path)
        assert r.status_code == 404 and r.json() == {"message": "Tracker not found."}, path
    assert api.get("/tracker/abc/history").status_code == 404
    assert api.post("/tracker/%d/history" % tid).status_code == 405


def test_a_deleted_trackers_history_stays_readable(api, other_api):
    tid = api.post("/tracker", json={"redirect_url": "https://example.com/gone"}).json()["tracker_id"]
    assert api.delete("/tracker/%d" % tid).status_code == 204
    assert api.get("/tracker/show/%d" % tid).status_code == 404
    h = history(api, tid)
    assert [e["kind"] for e in h["data"]] == ["deleted", "created"]
    assert other_api.get("/tracker/%d/history" % tid).status_code == 404


def test_a_form_create_is_recorded_with_the_tokens_label(api):
    """A form body creates with history too; the label is the token's --name."""
    r = api.post("/tracker", data={"redirect_url": "https://example.com/form",
                                   "tags[]": ["b", "a"]})
    assert r.status_code == 200, r.text
    h = history(api, r.json()["tracker_id"])
    assert h["data"][0]["changes"]["tags"] == [None, ["a", "b"]]
    assert h["data"][0]["token"] == "default"


def test_bulk_and_keyed_creates_and_imports_are_recorded(server, ci, api):
    """Trackers made by POST /tracker/bulk, under an Idempotency-Key, or by
    `qrtrack-admin trackers import` have their "created" row too: the bulk's and the
    keyed create's with the token's label, the import's with none."""
    r = ci.post("/tracker/bulk", json={"trackers": [
        {"redirect_url": "https://example.com/bulk-h", "name": "bulk"}]})
    assert r.status_code == 200, r.text
    bulk = r.json()["data"][0]["tracker"]
    r = ci.post("/tracker", json={"redirect_url": "https://example.com/keyed-h"},
                headers={"Idempotency-Key": "history-keyed"})
    assert r.status_code == 200, r.text
    keyed = r.json()
    for t in (bulk, keyed):
        h = history(api, t["tracker_id"])
        assert [(e["kind"], e["token"]) for e in h["data"]] == [("created", "ci")]
        assert h["data"][0]["changes"]["redirect_url"] == [None, t["redirect_url"]]
    path = server.dir + "/history-import.csv"
    with open(path, "w") as f:
        f.write("code,redirect_url,name,tags,created_at\n"
                "hist-import-1,https://example.com/imported,imported,,\n")
    server.admin("trackers", "import", "acme", "--from", "csv", path)
    tid = int(server.sql("SELECT id FROM trackers WHERE code = 'hist-import-1'").strip())
    h = history(api, tid)
    assert [(e["kind"], e["token"]) for e in h["data"]] == [("created", None)]


# ---- PATCHes at once ---------------------------------------------------------------

RULES = [{"redirect_url": "https://example.com/r", "os": ["iOS"]}]


def patch_bodies(rnd):
    """One PATCH a field, as (field, body, [old, new] as the history and the tracker show
    them). The tracker starts as {"redirect_url": .../orig, "name": "orig"}."""
    return [
        ("name", {"name": "name-%d" % rnd}, ["orig", "name-%d" % rnd]),
        ("redirect_url", {"redirect_url": "https://example.com/new-%d" % rnd},
         ["https://example.com/orig", "https://example.com/new-%d" % rnd]),
        ("tags", {"tags": ["t:%d" % rnd]}, [[], ["t:%d" % rnd]]),
        ("expired_url", {"expired_url": "https://example.com/exp-%d" % rnd},
         [None, "https://example.com/exp-%d" % rnd]),
        ("max_scans", {"max_scans": 1000 + rnd}, [None, 1000 + rnd]),
        ("valid_until", {"valid_until": "2099-01-01T00:00:00+0000"},
         [None, "2099-01-01T00:00:00+0000"]),
        ("valid_from", {"valid_from": "2001-01-01T00:00:00+0000"},
         [None, "2001-01-01T00:00:00+0000"]),
        ("rules", {"rules": RULES}, [[], RULES]),
        ("password", {"password": SECRET}, [None, "***"]),
    ]


def patches_at_once(bases, tokens, s, rounds):
    """Rounds of nine PATCHes at once of one new tracker, each of another field (the
    password among them), sent in turn to the API bases given, each with the token
    tokens[field] (labelled with the field's name): every one answers 200 with the value
    it sent, the tracker ends with every value sent, and its history has one "updated"
    row a PATCH, under that PATCH's token, with that PATCH's field alone."""
    with concurrent.futures.ThreadPoolExecutor(9) as ex:
        for rnd in range(rounds):
            tid = s.post("/tracker", json={"redirect_url": "https://example.com/orig",
                                           "name": "orig"}).json()["tracker_id"]
            patches = patch_bodies(rnd)
            start = threading.Barrier(len(patches))

            def patch(i):
                field, body = patches[i][0], patches[i][1]
                start.wait()
                return requests.patch(
                    "%s/tracker/%d" % (bases[i % len(bases)], tid), json=body, timeout=30,
                    headers={"Authorization": "Bearer " + tokens[field]})

            answers = list(ex.map(patch, range(len(patches))))
            assert [r.status_code for r in answers] == [200] * len(patches), \
                (rnd, [(r.status_code, r.text) for r in answers])
            final = s.get("/tracker/show/%d" % tid).json()
            for (field, _, (_, new)), r in zip(patches, answers):
                if field == "password":
                    assert r.json()["password_protected"] is True, rnd
                    assert final["password_protected"] is True, rnd
                else:
                    assert r.json()[field] == new, (rnd, field, r.json())
                    assert final[field] == new, (rnd, field, final)
            h = history(s, tid, rows=100)["data"]
            updated = sorted((e for e in h if e["kind"] == "updated"),
                             key=lambda e: e["token"])
            assert [e["kind"] for e in h].count("created") == 1 and len(h) == 10, (rnd, h)
            want = sorted(({"token": field, "changes": {field: change}}
                           for field, _, change in patches), key=lambda e: e["token"])
            assert [{"token": e["token"], "changes": e["changes"]} for e in updated] \
                == want, rnd


def field_tokens(servers):
    """A token of acme a field of patch_bodies, labelled with the field's name, known to
    every server given (the first makes them)."""
    tokens = {}
    for field, _, _ in patch_bodies(0):
        tokens[field] = servers[0].token("acme", "--name", field)
        for srv in servers[1:]:
            srv.tokens.append(tokens[field])
    return tokens


def test_patches_at_once_of_different_fields_keep_every_change(server, api):
    """Each PATCH reads the tracker, lays its fields on it and writes it in one
    transaction under the tracker's lock: PATCHes at once of different fields (a password
    among them) all take effect, as if made one after another, and the history records
    each with its own field and token (before, the last writer put back the fields it had
    read before the others wrote them, under its own token)."""
    patches_at_once([server.api_base], field_tokens([server]), api, 8)


@pytest.mark.skipif(BACKEND != "pgsql", reason="several nodes share a PostgreSQL database: "
                    "this test runs in the PostgreSQL pass (as test_nodes.py)")
def test_patches_at_once_on_two_nodes_keep_every_change():
    """The same rounds, each burst's PATCHes alternating between two nodes on one
    database."""
    with two_nodes() as (a, b):
        tokens = field_tokens([a, b])
        tok = a.token("acme")
        b.tokens.append(tok)
        with Api(b, tok) as s:
            patches_at_once([a.api_base, b.api_base], tokens, s, 6)
