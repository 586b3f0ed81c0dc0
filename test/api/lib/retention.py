"""The retention tests' visits (one visitor each) and the snapshot of every figure the
aggregates give, compared before and after a purge."""
import time

DAY = 86400
UA = "Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/120.0 retention-%s"


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S+0000", time.gmtime(t))


def visit(tid, t, who, city="Berlin", browser="Firefox", source="scan"):
    return {"tracker_id": tid, "visit_start": iso(t), "source": source, "ip": "127.0.0.0",
            "country": "DE", "city": city, "browser": browser, "browser_version": "120",
            "os": "Linux", "device": "desktop", "referer": "https://old.example/%s" % who,
            "user_agent": UA % who}


def snapshot(a, tids, now):
    """Every figure the aggregates give, over windows in and out of the purged
    period, some with offsets (their partial days are read from the visits)."""
    out = {}
    windows = [{}, {"visit_start": iso(now - 60 * DAY), "visit_start_end": iso(now)},
               {"visit_start": time.strftime("%Y-%m-%dT09:30:00+0530",
                                             time.gmtime(now - 41 * DAY)),
                "visit_start_end": time.strftime("%Y-%m-%dT17:45:00+0530",
                                                 time.gmtime(now - 34 * DAY))},
               {"visit_start": iso(now - 38 * DAY + 3600),
                "visit_start_end": iso(now - 2 * DAY)}]
    for i, w in enumerate(windows):
        for rep in ("name", "type", "tag", "date", "browser", "city", "country"):
            for listed in (None, tids[:1]):
                q = dict(w, report=rep)
                if listed:
                    q["trackers[]"] = listed
                r = a.get("/report/", params=q)
                assert r.status_code == 200, r.text
                out["%d %s %s" % (i, rep, listed)] = r.json()["data"]
        r = a.get("/report/tag-crosstab", params=dict(w, row="campaign", col="region"))
        assert r.status_code == 200, r.text
        out["%d crosstab" % i] = r.json()["data"]
    day = lambda t: time.strftime("%Y-%m-%d", time.gmtime(t))
    for d0, d1 in ((now - 45 * DAY, now - 31 * DAY), (now - 60 * DAY, now)):
        r = a.get("/dashboard/scansAnalytics", params={"dateStart": day(d0),
                                                       "dateEnd": day(d1)})
        assert r.status_code == 200, r.text
        out["kpi %s" % day(d0)] = r.json()
    for tid in tids:
        out["analytics %d" % tid] = a.get("/tracker/analytics/%d" % tid).json()
    return out
