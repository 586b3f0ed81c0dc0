"""The dashboard (SetHandler qrtrack-dashboard): its files over HTTP, and the page in a
real browser, Debian's headless Chromium driven through chromedriver (python3-selenium),
one browser session for all the checks. A screenshot goes to build/dashboard.png."""
import os
import re
import shutil
import tempfile
import time

import pytest
import requests
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from conftest import BUILD, Api
from lib.qr import IPHONE
from lib.visits import import_visits, ts
from lib.wait import wait_until

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
NAMES = ["Spring flyer", "Summer <b>poster</b>", "Shop window"]     # markup stays text
DAY = 86400


# -- the handler over HTTP -------------------------------------------------------------

def test_page_and_files(server):
    base = server.base + "/qrtrack"
    r = requests.get(base, allow_redirects=False, timeout=10)
    # A path, not a URL built from the Host header (which anyone can set).
    assert r.status_code == 301 and r.headers["Location"] == "/qrtrack/"
    r = requests.get(base, headers={"Host": "evil.example"}, allow_redirects=False, timeout=10)
    assert "evil" not in r.headers["Location"]
    r = requests.get(base + "/", timeout=10)
    assert r.status_code == 200 and r.headers["Content-Type"] == "text/html; charset=utf-8"
    assert '<meta name="qrtrack-api" content="/api">' in r.text
    csp = r.headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "connect-src 'self'" in csp
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    for name, ctype in [("app.js", "text/javascript; charset=utf-8"),
                        ("app.css", "text/css; charset=utf-8"), ("favicon.svg", "image/svg+xml"),
                        ("index.html", "text/html; charset=utf-8")]:
        r = requests.get(base + "/" + name, timeout=10)
        assert r.status_code == 200 and r.headers["Content-Type"] == ctype, name
        with open(os.path.join(os.path.dirname(__file__), "..", "..", "dashboard", name), "rb") as f:
            want = f.read()
        if name != "index.html":
            assert r.content == want, name
        etag = r.headers["ETag"]
        assert requests.get(base + "/" + name, headers={"If-None-Match": etag},
                            timeout=10).status_code == 304
        h = requests.head(base + "/" + name, timeout=10)
        assert h.status_code == 200 and h.content == b""
    assert requests.get(base + "/qrtrack.json", timeout=10).status_code == 404
    assert requests.get(base + "/nope.js", timeout=10).status_code == 404
    r = requests.post(base + "/", timeout=10)
    assert r.status_code == 405 and "GET" in r.headers["Allow"]
    # Nothing in the page names another server.
    page = requests.get(base + "/", timeout=10).text + requests.get(base + "/app.js", timeout=10).text
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in page


# -- the page in Chromium --------------------------------------------------------------

@pytest.fixture(scope="module")
def account(server):
    """An account with three tagged trackers and visits over the last 30 days and the
    30 before (the previous period of the KPIs)."""
    server.account("dashco")
    tok = server.token("dashco")
    tags = [["campaign:spring", "region:eu"], ["campaign:summer", "region:us"],
            ["campaign:spring", "region:us", "shop"]]
    trackers = []
    with Api(server, tok) as api:
        for name, tg in zip(NAMES, tags):
            r = api.post("/tracker", json={"redirect_url": "https://example.com/" + tg[0][9:],
                                           "name": name, "tags": tg})
            assert r.status_code == 200, r.text
            trackers.append(r.json())
    now = int(time.time())
    browsers = [("Chrome", "Android", "mobile", "DE", "Berlin"), ("Safari", "iOS", "mobile", "FR", "Paris"),
                ("Firefox", "Linux", "desktop", "US", "Boston")]
    visits = []
    for i, t in enumerate(trackers):
        for k in range(0, 26, i + 1):
            for n in range(1 + (k % 3)):
                b = browsers[(k + n + i) % 3]
                visits.append({"tracker_id": t["tracker_id"], "visit_start": ts(now - k * DAY - n * 60 - 5),
                               "source": "click" if n == 2 else "scan", "ip": "198.51.100.%d" % (k + n),
                               "country": b[3], "city": b[4], "browser": b[0], "browser_version": "1",
                               "os": b[1], "device": b[2], "referer": None, "user_agent": "UA %d" % n,
                               "bot": False})
        for k in range(31 + i, 58, 2):
            visits.append({"tracker_id": t["tracker_id"], "visit_start": ts(now - k * DAY),
                           "source": "scan", "ip": "192.0.2.%d" % k, "country": "DE", "city": "Berlin",
                           "browser": "Chrome", "browser_version": "1", "os": "Android",
                           "device": "mobile", "referer": None, "user_agent": "old", "bot": False})
    import_visits(server, visits)
    return {"token": tok, "trackers": trackers}


class Browser:
    """One headless Chromium for the whole module; its console entries are collected."""

    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="qrtrack-chromium-")
        self.downloads = os.path.join(self.profile, "downloads")
        os.mkdir(self.downloads)
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        opts.add_experimental_option("prefs", {"download.default_directory": self.downloads,
                                               "download.prompt_for_download": False})
        for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--no-default-browser-check",
                  "--disable-extensions", "--password-store=basic", "--window-size=1280,1000",
                  "--user-data-dir=" + self.profile]:
            opts.add_argument(a)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
        self.driver.set_page_load_timeout(30)

    def open(self, url):
        """A fresh document (not a same-page fragment change)."""
        self.driver.get("about:blank")
        self.driver.get(url)

    def wait(self, cond, timeout=15, what="the page"):
        # An element read while the page re-renders its table goes stale: look again.
        return wait_until(cond, timeout=timeout, interval=0.1, what=what, ignore=(
            NoSuchElementException, StaleElementReferenceException))

    def text(self, css):
        """The text of the first element matching css, looked up again if the page
        replaced it between the lookup and the read."""
        return wait_until(lambda: [self.driver.find_element(By.CSS_SELECTOR, css).text],
                          timeout=10, ignore=(StaleElementReferenceException,),
                          what="a steady " + css)[0]

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def severe(self):
        return [e for e in self.driver.get_log("browser") if e["level"] == "SEVERE"]

    def quit(self):
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    b = Browser()
    yield b
    b.quit()


def rows(b, table_id):
    return b.driver.find_elements(By.CSS_SELECTOR, "#%s tbody tr" % table_id)


def day_bars(b, chart_id):
    """The chart's <svg> (its data-days and drawn size) and its number of day bars,
    read at once (a chart may be drawn again at any time)."""
    return b.js("var s = document.querySelector('#' + arguments[0] + ' svg');"
                "if (!s) return [null, 0];"
                "var r = s.getBoundingClientRect();"
                "return [{days: s.getAttribute('data-days'), width: r.width, height: r.height},"
                "        s.querySelectorAll('g.day').length];", chart_id)


def signed_in(b, account):
    """Waits for the page to show the account's trackers and the first tracker's chart."""
    b.wait(lambda: len(rows(b, "trackers")) == len(NAMES), what="the trackers")
    b.wait(lambda: b.driver.find_elements(By.CSS_SELECTOR, "#detail-chart svg"), what="a chart")
    b.wait(lambda: b.driver.find_elements(By.CSS_SELECTOR, "#kpis .kpi"), what="the KPIs")
    b.wait(lambda: b.driver.find_elements(By.CSS_SELECTOR, "#crosstab table"), what="the crosstab")
    b.wait(lambda: b.driver.find_elements(By.CSS_SELECTOR, "#report tbody tr"), what="the report")
    b.wait(lambda: len(rows(b, "visits")) > 1, what="the visits")


def test_sign_in_with_the_token_in_the_address(server, account, browser):
    b = browser
    b.open(server.base + "/qrtrack/#token=" + account["token"])
    signed_in(b, account)
    # The token left the address bar (and the history entry) at once, and lives in
    # sessionStorage only.
    assert account["token"] not in b.driver.current_url
    assert b.js("return location.hash") == ""
    assert b.js("return sessionStorage.getItem('qrtrack.token')") == account["token"]
    assert b.js("return localStorage.length") == 0
    assert b.js("return document.cookie") == ""
    names = [r.find_element(By.CSS_SELECTOR, "td.name").text for r in rows(b, "trackers")]
    assert sorted(names) == sorted(NAMES)               # as text: the markup is not markup
    assert "dashco" in b.driver.find_element(By.ID, "who").text
    assert b.driver.find_element(By.ID, "message").is_displayed() is False
    # An icon, served by the module.
    icon = b.js("return document.querySelector('link[rel=icon]').href")
    assert icon == server.base + "/qrtrack/favicon.svg"
    assert b.severe() == []


def test_charts_one_bar_a_day(server, account, browser):
    b = browser
    for chart in ("portfolio-chart", "detail-chart"):
        svg, n = day_bars(b, chart)
        assert n == 30 and svg["days"] == "30", chart
        assert svg["width"] >= 200 and svg["height"] >= 100, (chart, svg)
    # The portfolio chart draws what the API says, day by day.
    with Api(server, account["token"]) as api:
        daily = api.get("/dashboard/scansAnalytics").json()["daily"]
    dates = b.js("return Array.from(document.querySelectorAll('#portfolio-chart g.day'))"
                 ".map(g => g.getAttribute('data-date'))")
    assert dates == [d["date"] for d in daily]
    titles = b.js("return Array.from(document.querySelectorAll('#portfolio-chart g.day title'))"
                  ".map(t => t.textContent)")
    assert titles[-1] == "%s: %d scans, %d clicks" % (daily[-1]["date"], daily[-1]["scans"],
                                                       daily[-1]["clicks"])
    # Another period: 7 bars.
    b.driver.find_element(By.CSS_SELECTOR, "#period button[data-days='7']").click()
    b.wait(lambda: day_bars(b, "portfolio-chart")[1] == 7, what="7 days")
    b.wait(lambda: day_bars(b, "detail-chart")[1] == 7, what="7 days of the tracker")
    b.driver.find_element(By.CSS_SELECTOR, "#period button[data-days='30']").click()
    b.wait(lambda: day_bars(b, "portfolio-chart")[1] == 30, what="30 days again")
    b.wait(lambda: len(rows(b, "visits")) > 1, what="the visits")
    assert b.severe() == []


def test_kpis_breakdowns_reports_crosstab_and_a_screenshot(server, account, browser):
    b = browser
    d = b.driver
    with Api(server, account["token"]) as api:
        kpis = api.get("/dashboard/scansAnalytics").json()["kpis"]
    cards = d.find_elements(By.CSS_SELECTOR, "#kpis .kpi")
    assert len(cards) == 4
    assert cards[0].find_element(By.CSS_SELECTOR, ".value").text.startswith(
        "{:,}".format(kpis["totalScans"]["value"]))
    assert "previous 30 days: " + "{:,}".format(kpis["totalScans"]["previous"]) in cards[0].text
    # The first tracker's breakdowns: browser, country, city (reports), OS and device.
    heads = [h.text for h in d.find_elements(By.CSS_SELECTOR, "#breakdowns h4")]
    assert heads[:3] == ["Browser", "Country", "City"] and heads[3].startswith("OS")
    assert "Chrome" in d.find_element(By.ID, "breakdowns").text
    # Every report type, as a table.
    sel = d.find_element(By.ID, "report-type")
    for value, key in [("country", "DE"), ("browser", "Safari"), ("tag", "campaign:spring"),
                       ("name", NAMES[1])]:
        d.execute_script("arguments[0].value = arguments[1]; "
                         "arguments[0].dispatchEvent(new Event('change'))", sel, value)
        b.wait(lambda: key in d.find_element(By.ID, "report").text, what=value)
    # The crosstab campaign x region.
    xt = d.find_element(By.ID, "crosstab").text
    assert "spring" in xt and "summer" in xt and "eu" in xt and "us" in xt
    # Filtering the trackers.
    f = d.find_element(By.ID, "filter-text")
    f.send_keys("summer")
    b.wait(lambda: len(rows(b, "trackers")) == 1)
    f.clear()
    f.send_keys(" ")
    f.clear()
    d.execute_script("arguments[0].dispatchEvent(new Event('input'))", f)
    b.wait(lambda: len(rows(b, "trackers")) == 3)
    # The selected tracker's visits as CSV (fetched with the token in the header).
    tid = d.find_element(By.CSS_SELECTOR, "#trackers tr.selected").get_attribute("data-id")
    d.find_element(By.ID, "detail-csv").click()
    csv = os.path.join(b.downloads, "tracker-%s-visits.csv" % tid)
    b.wait(lambda: os.path.exists(csv) and os.path.getsize(csv) > 0, what="the CSV file")
    with open(csv, encoding="utf-8") as f:
        lines = f.read().splitlines()
    assert lines[0].startswith("id,visit_start,source,tracker_id,tracker_name,")
    assert len(lines) > 10
    # The screenshot, for a person to look at: the whole page.
    height = b.js("return document.documentElement.scrollHeight")
    tall = min(max(height + 140, 1000), 4000)
    d.set_window_size(1280, tall)
    b.wait(lambda: d.get_window_size()["height"] == tall, what="the window's new size")
    path = os.path.join(BUILD, "dashboard.png")
    assert d.save_screenshot(path) and os.path.getsize(path) > 10000
    d.set_window_size(1280, 1000)
    assert b.severe() == []


def test_latest_visits_follow_new_scans(server, account, browser):
    b = browser
    t = next(x for x in account["trackers"]
             if x["tracker_id"] == int(b.driver.find_element(By.CSS_SELECTOR, "#trackers tr.selected")
                                       .get_attribute("data-id")))
    before = b.text("#visits tbody tr")
    r = requests.get(t["scan_url"], headers={"User-Agent": "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) "
                                             "Gecko/20100101 Firefox/120.0", "Referer": "https://poll.example/"},
                     allow_redirects=False, timeout=10)
    assert r.status_code == 302
    # The page polls every 15 s (since_id and If-None-Match) and when it becomes visible.
    b.js("document.dispatchEvent(new Event('visibilitychange'))")
    b.wait(lambda: "poll.example" in b.text("#visits tbody tr"), what="the new visit on top")
    assert b.text("#visits tbody tr") != before
    # Nothing new: a 304 changes nothing. The page writes when it checked once it has
    # handled the answer.
    b.js("document.getElementById('visits-live').textContent = ''")
    b.js("document.dispatchEvent(new Event('visibilitychange'))")
    b.wait(lambda: b.text("#visits-live").startswith("checked"), what="the poll's answer")
    assert "poll.example" in b.text("#visits tbody tr")
    assert b.severe() == []


def no_data(b):
    assert not b.driver.find_element(By.ID, "app").is_displayed()
    assert rows(b, "trackers") == []
    assert b.driver.find_elements(By.CSS_SELECTOR, "svg.chart-svg") == []
    assert b.js("return sessionStorage.getItem('qrtrack.token')") is None


def test_a_wrong_token_is_refused(server, account, browser):
    b = browser
    # Not a token at all: refused by the page itself, nothing is asked of the API.
    b.open(server.base + "/qrtrack/#token=qrt_wrong")
    b.wait(lambda: b.driver.find_element(By.ID, "message").is_displayed(), what="a message")
    assert "not an API token" in b.driver.find_element(By.ID, "message").text
    assert "qrt_wrong" not in b.driver.current_url
    assert b.driver.find_element(By.ID, "signin").is_displayed()
    no_data(b)
    assert b.severe() == []
    # A token of the right form that the server does not know: 401.
    unknown = "qrt_" + "Z" * 40
    b.open(server.base + "/qrtrack/#token=" + unknown)
    b.wait(lambda: b.driver.find_element(By.ID, "message").is_displayed(), what="a message")
    assert "not accepted" in b.driver.find_element(By.ID, "message").text
    assert unknown not in b.driver.current_url
    no_data(b)
    # The browser records the refused request itself (a network entry), and nothing else.
    for e in b.severe():
        assert e["source"] == "network" and "/api/account" in e["message"] and "401" in e["message"], e
    # The token field signs in too.
    field = b.driver.find_element(By.ID, "token")
    field.send_keys(account["token"])
    b.driver.find_element(By.CSS_SELECTOR, "#signin-form button").click()
    signed_in(b, account)
    assert not b.driver.find_element(By.ID, "message").is_displayed()
    # Signing out forgets the token and the data.
    b.driver.find_element(By.ID, "signout").click()
    b.wait(lambda: b.driver.find_element(By.ID, "signin").is_displayed())
    no_data(b)
    assert b.severe() == []


# -- managing trackers from the page ----------------------------------------------------

STORE = "https://apps.example/ios"
GERMAN = "https://example.com/de"


@pytest.fixture(scope="module")
def editor(server):
    """An account of its own, with no tracker yet, and an API client of its token."""
    server.account("editco")
    tok = server.token("editco")
    with Api(server, tok) as api:
        yield {"token": tok, "api": api}


def field(b, form, name):
    return b.driver.find_element(By.CSS_SELECTOR, '#%s [data-field="%s"]' % (form, name))


def type_into(elem, text):
    elem.clear()
    elem.send_keys(text)


def save(b, form="edit-form"):
    b.driver.find_element(By.CSS_SELECTOR, "#%s button[type=submit]" % form).click()


def active_field(b):
    return b.js("return document.activeElement.getAttribute('data-field')")


def only_refused_writes(b):
    """The browser's own records of the 422s the tests asked for, and nothing else."""
    for e in b.severe():
        assert e["source"] == "network" and "/api/tracker" in e["message"] and "422" in e["message"], e


def saved(b):
    b.wait(lambda: b.text("#detail-saved") == "Saved.", what="Saved.")
    assert not b.driver.find_element(By.ID, "edit-form").is_displayed()


def scan(t, method="GET", **kw):
    return requests.request(method, t["scan_url"], headers={"User-Agent": IPHONE},
                            allow_redirects=False, timeout=10, **kw)


def test_create_a_tracker_from_the_page(server, editor, browser):
    b = browser
    d = b.driver
    b.open(server.base + "/qrtrack/#token=" + editor["token"])
    b.wait(lambda: "No trackers yet" in b.text("#trackers tbody"), what="an empty list")
    d.find_element(By.ID, "new-tracker").click()
    b.wait(lambda: d.find_element(By.ID, "create-form").is_displayed(), what="the form")
    assert active_field(b) == "redirect_url"
    assert d.find_element(By.ID, "new-tracker").get_attribute("aria-expanded") == "true"
    # A bad destination: the API's message beside the field, the focus on it.
    d.switch_to.active_element.send_keys("ftp://example.com/x")
    save(b, "create-form")
    b.wait(lambda: d.find_elements(By.CSS_SELECTOR, "#create-form .field .err"), what="the error")
    url = field(b, "create-form", "redirect_url")
    assert url.get_attribute("aria-invalid") == "true" and active_field(b) == "redirect_url"
    assert "redirect_url" in b.text("#create-form .field .err") or "URL" in b.text("#create-form .field .err")
    type_into(url, "https://example.com/launch")
    type_into(field(b, "create-form", "name"), "Launch <i>poster</i>")
    type_into(field(b, "create-form", "tags"), "print, campaign:launch,")
    save(b, "create-form")
    b.wait(lambda: len(rows(b, "trackers")) == 1 and "Launch" in b.text("#trackers tbody"), what="the tracker")
    b.wait(lambda: b.text("#detail-name") == "Launch <i>poster</i>", what="its detail")
    assert not d.find_element(By.ID, "create-form").is_displayed()
    assert "no rules" in b.text("#detail-settings")
    data = editor["api"].get("/tracker").json()["data"]
    assert len(data) == 1
    t = data[0]
    assert t["name"] == "Launch <i>poster</i>" and t["redirect_url"] == "https://example.com/launch"
    assert t["tags"] == ["campaign:launch", "print"] and t["rules"] == []
    only_refused_writes(b)


def test_edit_destination_rules_and_password(server, editor, browser):
    b = browser
    d = b.driver
    t = editor["api"].get("/tracker").json()["data"][0]
    d.find_element(By.ID, "detail-edit").click()
    b.wait(lambda: d.find_element(By.ID, "edit-form").is_displayed(), what="the editor")
    assert active_field(b) == "redirect_url"
    type_into(field(b, "edit-form", "redirect_url"), "https://example.com/launch-v2")
    # The first rule with the keyboard: Add rule, then the focus is in its URL field.
    d.find_element(By.ID, "rule-add").send_keys(Keys.ENTER)
    b.wait(lambda: active_field(b) == "rules.0.redirect_url", what="the new rule's URL focused")
    d.switch_to.active_element.send_keys(STORE)
    type_into(field(b, "edit-form", "rules.0.os"), "iOS")
    # The second with the mouse.
    d.find_element(By.ID, "rule-add").click()
    b.wait(lambda: active_field(b) == "rules.1.redirect_url", what="the second rule")
    type_into(field(b, "edit-form", "rules.1.redirect_url"), GERMAN)
    type_into(field(b, "edit-form", "rules.1.country"), "DE, AT")
    type_into(field(b, "edit-form", "rules.1.language"), "de")
    for day in range(1, 6):
        field(b, "edit-form", "rules.1.weekdays").find_element(
            By.CSS_SELECTOR, "input[value='%d']" % day).click()
    type_into(field(b, "edit-form", "rules.1.hours"), "08:00-18:00")
    type_into(field(b, "edit-form", "rules.1.utc_offset"), "+0100")
    type_into(field(b, "edit-form", "valid_until"), "2030-01-01T00:00:00+0000")
    type_into(field(b, "edit-form", "max_scans"), "100")
    type_into(field(b, "edit-form", "expired_url"), "https://example.com/over")
    type_into(field(b, "edit-form", "password"), "open sesame")
    # Every control has a label (its own, or a name for the checkboxes of the weekdays).
    unlabelled = b.js("return Array.from(document.querySelectorAll('#edit-form input, #create-form input'))"
                      ".filter(e => !e.labels.length && !e.getAttribute('aria-label')).map(e => e.outerHTML)")
    assert unlabelled == []
    # The editor, for a person to look at.
    d.set_window_size(1280, min(max(b.js("return document.documentElement.scrollHeight") + 140, 1000), 4000))
    b.js("document.getElementById('edit-form').scrollIntoView()")
    assert d.find_element(By.ID, "edit-form").screenshot(os.path.join(BUILD, "dashboard-edit.png"))
    d.set_window_size(1280, 1000)
    save(b)
    saved(b)
    # Stored, as one PATCH: the destination, both rules in order, the limits, a password.
    s = editor["api"].get("/tracker/show/%d" % t["tracker_id"]).json()
    assert s["redirect_url"] == "https://example.com/launch-v2"
    assert s["rules"] == [{"redirect_url": STORE, "os": ["iOS"]},
                          {"redirect_url": GERMAN, "country": ["DE", "AT"], "language": ["de"],
                           "weekdays": [1, 2, 3, 4, 5], "hours": "08:00-18:00", "utc_offset": "+0100"}]
    assert s["valid_until"] == "2030-01-01T00:00:00+0000" and s["valid_from"] is None
    assert s["max_scans"] == 100 and s["expired_url"] == "https://example.com/over"
    assert s["password_protected"] is True and "password" not in s
    # The tracker's view says so; the password itself is nowhere on the page.
    settings = b.text("#detail-settings")
    for want in ["2 rules", "expires 2030-01-01", "max 100 scans", "password protected"]:
        assert want in settings, settings
    assert "open sesame" not in d.page_source
    assert b.js("return document.getElementById('ed-password').value") == ""
    assert "launch-v2" in b.text("#detail-dest")
    # An iPhone gets the password form, then the first rule's destination.
    r = scan(s)
    assert r.status_code == 200 and 'name="password"' in r.text
    r = scan(s, "POST", data={"password": "open sesame"})
    assert r.status_code == 302 and r.headers["Location"] == STORE
    only_refused_writes(b)


def test_a_bad_rule_field_is_shown_on_its_row(server, editor, browser):
    b = browser
    d = b.driver
    t = editor["api"].get("/tracker").json()["data"][0]
    d.find_element(By.ID, "detail-edit").click()
    b.wait(lambda: d.find_element(By.ID, "edit-form").is_displayed(), what="the editor")
    # The rows come back from the tracker, in order.
    assert field(b, "edit-form", "rules.0.os").get_attribute("value") == "iOS"
    assert field(b, "edit-form", "rules.1.country").get_attribute("value") == "DE, AT"
    hours = field(b, "edit-form", "rules.1.hours")
    type_into(hours, "25:00-26:00")
    save(b)
    b.wait(lambda: hours.get_attribute("aria-invalid") == "true", what="the hours marked")
    err = hours.find_element(By.XPATH, "./following-sibling::p[@class='err']")
    assert "HH:MM" in err.text and err.is_displayed()
    assert hours.get_attribute("aria-describedby") == err.get_attribute("id")
    assert active_field(b) == "rules.1.hours"
    # Only that field: the first rule's hours and the form's other fields are not marked.
    assert d.find_elements(By.CSS_SELECTOR, "#edit-form [aria-invalid=true]") == [hours]
    assert "Not saved" in b.text("#edit-form .form-status")
    assert d.find_element(By.ID, "edit-form").is_displayed()
    s = editor["api"].get("/tracker/show/%d" % t["tracker_id"]).json()
    assert s["rules"][1]["hours"] == "08:00-18:00"
    # Fixed, moved up, the other rule removed, the password removed: one save.
    type_into(hours, "09:00-17:00")
    d.find_element(By.CSS_SELECTOR, "#edit-form button[aria-label='Move rule 2 up']").click()
    assert active_field(b) is None and b.js("return document.activeElement.getAttribute('aria-label')") \
        == "Move rule 1 down"                             # the focus stays with the moved rule
    assert d.find_elements(By.CSS_SELECTOR, "#edit-form .err") == []
    assert field(b, "edit-form", "rules.0.redirect_url").get_attribute("value") == GERMAN
    d.find_element(By.CSS_SELECTOR, "#edit-form button[aria-label='Remove rule 2']").click()
    assert len(d.find_elements(By.CSS_SELECTOR, "#rules > li")) == 1
    d.find_element(By.ID, "ed-password-remove").click()
    assert not d.find_element(By.ID, "ed-password").is_enabled()
    save(b)
    saved(b)
    s = editor["api"].get("/tracker/show/%d" % t["tracker_id"]).json()
    assert [r["redirect_url"] for r in s["rules"]] == [GERMAN] and s["rules"][0]["hours"] == "09:00-17:00"
    assert s["password_protected"] is False and s["max_scans"] == 100
    assert "1 rule" in b.text("#detail-settings") and "password" not in b.text("#detail-settings")
    # Without a password and without the iPhone rule, a scan goes to the destination.
    assert scan(s).headers["Location"] == "https://example.com/launch-v2"
    # Escape closes the editor and gives the focus back to its button.
    d.find_element(By.ID, "detail-edit").click()
    b.wait(lambda: d.find_element(By.ID, "edit-form").is_displayed(), what="the editor")
    d.switch_to.active_element.send_keys(Keys.ESCAPE)
    b.wait(lambda: not d.find_element(By.ID, "edit-form").is_displayed(), what="closed")
    assert b.js("return document.activeElement.id") == "detail-edit"
    only_refused_writes(b)


def test_the_editor_at_phone_width(server, editor, browser):
    b = browser
    d = b.driver
    d.set_window_size(390, 844)
    try:
        d.find_element(By.ID, "detail-edit").click()
        b.wait(lambda: d.find_element(By.ID, "edit-form").is_displayed(), what="the editor")
        d.find_element(By.ID, "rule-add").click()
        # Nothing sticks out sideways: the page does not scroll horizontally.
        wide = b.js("var w = document.documentElement.clientWidth;"
                    "return Array.from(document.querySelectorAll('#edit-form input, #edit-form button'))"
                    ".filter(e => e.getBoundingClientRect().right > w + 1).map(e => e.id || e.outerHTML);")
        assert wide == []
        assert b.js("return document.documentElement.scrollWidth <= document.documentElement.clientWidth")
        b.js("document.getElementById('edit-form').scrollIntoView()")
        assert d.save_screenshot(os.path.join(BUILD, "dashboard-phone.png"))
        d.find_element(By.CSS_SELECTOR, "#edit-form [data-cancel]").click()
        b.wait(lambda: not d.find_element(By.ID, "edit-form").is_displayed(), what="closed")
    finally:
        d.set_window_size(1280, 1000)
    # Read-only (for tokens with scopes): body.readonly hides every control that writes.
    assert d.find_element(By.ID, "new-tracker").is_displayed()
    b.js("document.body.classList.add('readonly')")
    try:
        assert b.js("return Array.from(document.querySelectorAll('[data-write]'))"
                    ".filter(e => e.offsetParent !== null).length") == 0
        assert not d.find_element(By.ID, "detail-edit").is_displayed()
    finally:
        b.js("document.body.classList.remove('readonly')")
    only_refused_writes(b)


def test_download_a_trackers_code_in_a_style_and_format(server, account, browser):
    """The tracker's view offers the account's styles (GET /style) and the formats; its
    link names the image endpoint with both, and a click downloads <code>.<format>
    (fetched with the token in the header), which decodes to the tracker's scan URL."""
    from lib.qr import decode_qr
    b = browser
    d = b.driver
    with Api(server, account["token"]) as api:
        r = api.post("/style", json={"name": "brand", "fg": "#1A237E", "margin": 6})
        assert r.status_code in (200, 201), r.text
        b.open(server.base + "/qrtrack/#token=" + account["token"])
        signed_in(b, account)
        b.wait(lambda: "brand" in [o.get_attribute("value") for o in
                                   d.find_elements(By.CSS_SELECTOR, "#detail-style option")],
               what="the style among the choices")
        tid = d.find_element(By.CSS_SELECTOR, "#trackers tr.selected").get_attribute("data-id")
        t = api.get("/tracker/show/%s" % tid).json()
    d.execute_script("var s = document.getElementById('detail-style'); s.value = 'brand';"
                     "s.dispatchEvent(new Event('change'));"
                     "var f = document.getElementById('detail-format'); f.value = 'svg';"
                     "f.dispatchEvent(new Event('change'));")
    href = d.find_element(By.ID, "detail-code").get_attribute("href")
    assert "/api/tracker/%s/qrcode?" % tid in href
    assert "format=svg" in href and "style=brand" in href and account["token"] not in href
    d.execute_script("var f = document.getElementById('detail-format'); f.value = 'png';"
                     "f.dispatchEvent(new Event('change'));")
    d.find_element(By.ID, "detail-code").click()
    png = os.path.join(b.downloads, "%s.png" % t["code"])
    b.wait(lambda: os.path.exists(png) and os.path.getsize(png) > 0, what="the code's file")
    b.wait(lambda: "Downloaded %s.png" % t["code"] in b.text("#detail-saved"), what="the note")
    with open(png, "rb") as f:
        assert decode_qr(f.read()) == t["scan_url"]
    assert b.severe() == []


def open_first_tracker(b, server, token):
    """Signs in with token and opens the first tracker's view, its history included."""
    b.open(server.base + "/qrtrack/#token=" + token)
    b.wait(lambda: rows(b, "trackers") and "No trackers" not in b.text("#trackers tbody"),
           what="the trackers")
    rows(b, "trackers")[0].click()
    b.wait(lambda: b.driver.find_elements(By.CSS_SELECTOR, "#history li[data-kind]"),
           what="the tracker's history")


@pytest.fixture(scope="module")
def historian(server):
    """An account of its own with one tracker made and changed through the API (its
    destination, then a password), so the history tests need no other test's trackers."""
    server.account("histco")
    tok = server.token("histco")
    with Api(server, tok) as api:
        r = api.post("/tracker", json={"redirect_url": "https://example.com/launch"})
        assert r.status_code == 200, r.text
        tid = r.json()["tracker_id"]
        r = api.patch("/tracker/%d" % tid, json={"redirect_url": "https://example.com/launch-v2"})
        assert r.status_code == 200, r.text
        r = api.patch("/tracker/%d" % tid, json={"password": "open sesame"})
        assert r.status_code == 200, r.text
        yield {"token": tok, "api": api}


def test_a_trackers_view_shows_its_history(server, historian, browser):
    b = browser
    open_first_tracker(b, server, historian["token"])
    items = b.driver.find_elements(By.CSS_SELECTOR, "#history li")
    kinds = [i.get_attribute("data-kind") for i in items]
    assert kinds[-1] == "created" and "updated" in kinds, kinds
    text = b.text("#history")
    assert "redirect_url: https://example.com/launch → https://example.com/launch-v2" in text
    assert "password: – → ***" in text and "default" in text
    assert b.severe() == []


def test_long_names_wrap_and_a_right_to_left_name_stays_in_its_place(server, browser):
    """A name without break points (underscores, 255 bytes) pushed the tables out of their
    cards and the page sideways; a right-to-left override in a name turned the rest of its
    history line around. Names wrap in their cells, and each history value is isolated."""
    server.account("wideco")
    tok = server.token("wideco")
    long_name = "spring_2026_flyer_berlin_mitte_store_window_A4_v2_" * 5
    rtl = "\u202eSpring"
    with Api(server, tok) as api:
        for name in (long_name[:255], "x" * 255):
            r = api.post("/tracker", json={"redirect_url": "https://example.com/" + "w" * 2000,
                                           "name": name})
            assert r.status_code == 200, r.text
        r = api.post("/tracker", json={"redirect_url": "https://example.com/r", "name": rtl,
                                       "tags": ["campaign:spring"]})
        assert r.status_code == 200, r.text
        for t in api.get("/tracker").json()["data"]:       # (the top trackers list them)
            assert requests.get("%s/q/%s" % (server.base, t["code"]), allow_redirects=False,
                                timeout=10).status_code == 302
    b = browser
    b.driver.set_window_size(1280, 900)
    open_first_tracker(b, server, tok)
    b.wait(lambda: len(rows(b, "trackers")) == 3, what="the three trackers")
    width = b.js("return [document.documentElement.scrollWidth, "
                 "document.documentElement.clientWidth]")
    assert width[0] <= width[1], width
    b.wait(lambda: b.driver.find_elements(By.CSS_SELECTOR, "#top-trackers table"),
           what="the top trackers")
    for table in ("#trackers", "#top-trackers table"):
        over = b.js("var t = document.querySelector(arguments[0]), c = t.closest('.card');"
                    "return [t.getBoundingClientRect().right, c.getBoundingClientRect().right];",
                    table)
        assert over[0] <= over[1] + 1, (table, over)
    # the right-to-left tracker's history: each value in an element of its own
    b.js("var want = arguments[0], rows = document.querySelectorAll('#trackers tbody tr');"
         "Array.prototype.forEach.call(rows, function (r) {"
         "  if (r.querySelector('td.name').textContent === want)"
         "    r.querySelector('td.name button').click(); });", rtl)
    b.wait(lambda: b.js("var h = document.querySelector('#history li[data-kind=created]');"
                        "return h && h.textContent.indexOf(arguments[0]) >= 0;", rtl),
           what="the right-to-left tracker's history")
    values = b.js("return Array.prototype.map.call(document.querySelectorAll("
                  "'#history li[data-kind=created] bdi'), function (x) { return x.textContent; });")
    assert rtl in values and "campaign:spring" in values, values
    assert b.severe() == []
    b.driver.set_window_size(1280, 1000)


def test_a_read_token_sees_everything_and_no_editing(server, historian, browser):
    b = browser
    d = b.driver
    tok = server.token("histco", "--scope", "read", "--name", "viewer")
    open_first_tracker(b, server, tok)
    assert "read-only token" in b.text("#who")
    assert b.js("return document.body.classList.contains('readonly')")
    assert b.js("return Array.from(document.querySelectorAll('[data-write]'))"
                ".filter(e => e.offsetParent !== null).length") == 0
    assert not d.find_element(By.ID, "new-tracker").is_displayed()
    assert not d.find_element(By.ID, "detail-edit").is_displayed()
    assert d.find_elements(By.CSS_SELECTOR, "#detail-chart svg")
    assert "created" in b.text("#history")
    # A write token signs in with its controls back.
    open_first_tracker(b, server, historian["token"])
    assert not b.js("return document.body.classList.contains('readonly')")
    assert d.find_element(By.ID, "detail-edit").is_displayed()
    assert b.severe() == []


def test_the_webhooks_card_shows_state_waiting_events_and_attempts(server, browser):
    """An account with a webhook: the card lists its URL and events, its state, the
    events waiting and its latest attempts (a receiver that cannot be reached: the
    attempt's error), and a webhook disabled after failures says so. Its button enables it
    again, and disables it (not shown to a read-only token). An account without webhooks
    does not see the card."""
    b = browser
    d = b.driver
    server.account("hookco")
    tok = server.token("hookco")
    with Api(server, tok) as api:
        r = api.post("/webhook", json={"url": "https://receiver.invalid/hook",
                                       "events": ["tracker.created"]})
        assert r.status_code == 200, r.text
        hook = r.json()
        assert api.post("/tracker", json={"redirect_url": "https://example.com/hooked"}
                        ).status_code == 200
        # the worker's first attempt fails (the name resolves nowhere)
        wait_until(lambda: api.get("/webhook/%d/deliveries" % hook["id"]).json()["data"],
                   timeout=30, what="a delivery attempt")

    def card():
        b.open(server.base + "/qrtrack/#token=" + tok)
        b.wait(lambda: d.find_elements(By.CSS_SELECTOR, "#webhooks tbody tr"),
               what="the webhooks")
        return d.find_element(By.CSS_SELECTOR, "#webhooks tbody tr")

    def state(row):
        """The state cell's text, and the text of its button (None: no button shown)."""
        cell = row.find_elements(By.TAG_NAME, "td")[2]
        shown = [x.text for x in cell.find_elements(By.TAG_NAME, "button") if x.is_displayed()]
        return cell.find_element(By.TAG_NAME, "span").text, (shown or [None])[0]

    row = card()
    assert d.find_element(By.ID, "webhooks-card").is_displayed()
    cells = [c.text for c in row.find_elements(By.TAG_NAME, "td")]
    assert cells[0] == "https://receiver.invalid/hook" and cells[1] == "tracker.created"
    assert state(row) == ("active", "Disable") and cells[4] == "0"
    assert "tracker.created #1" in cells[5], cells
    server.sql("UPDATE webhooks SET disabled_at = 1790000000, failures = 10, "
               "disabled_reason = 'failed 10 events in a row' WHERE id = %d" % hook["id"])
    row = card()
    cells = [c.text for c in row.find_elements(By.TAG_NAME, "td")]
    text, button = state(row)
    assert text.startswith("disabled 2026-09-21") and "failed 10 events" in text
    assert button == "Enable again" and cells[4] == "10"
    # Enable again: PATCH /webhook/<id>, and the card drawn again from the server's answer
    row.find_element(By.CSS_SELECTOR, "td button").click()
    b.wait(lambda: state(d.find_element(By.CSS_SELECTOR, "#webhooks tbody tr")) ==
           ("active", "Disable"), what="the webhook enabled again")
    with Api(server, tok) as api:
        shown = api.get("/webhook/%d" % hook["id"]).json()
    assert (shown["disabled_at"], shown["failures"]) == (None, 0)
    assert d.find_element(By.CSS_SELECTOR, "#webhooks tbody tr td:nth-child(5)").text == "0"
    # Send failed again: the event whose retries were spent waits again, and the page says
    server.sql("UPDATE webhook_events SET state = 2 WHERE webhook_id = %d" % hook["id"])
    again = [x for x in d.find_elements(By.CSS_SELECTOR, "#webhooks tbody tr td button")
             if x.text == "Send failed again"]
    assert len(again) == 1
    again[0].click()
    b.wait(lambda: "1 failed event waits for delivery again." in b.text("#message"),
           what="the recovery's message")
    assert server.sql("SELECT state FROM webhook_events WHERE webhook_id = %d AND state = 2"
                      % hook["id"]).strip() == ""
    # Send a test: a webhook.test event for it, whose attempt the card then lists
    test = [x for x in d.find_elements(By.CSS_SELECTOR, "#webhooks tbody tr td button")
            if x.text == "Send a test"]
    assert len(test) == 1
    test[0].click()
    b.wait(lambda: re.search(r"A test event \(msg_[\w-]{22}\) waits for delivery\.",
                             b.text("#message")),
           what=lambda: "the test's message (shown: %r)" % b.text("#message"))
    with Api(server, tok) as api:
        wait_until(lambda: [a for a in api.get("/webhook/%d/deliveries" % hook["id"]).json()
                            ["data"] if a["event_type"] == "webhook.test"],
                   timeout=30, what="the test event's attempt")
    row = card()
    assert "webhook.test #1" in row.find_elements(By.TAG_NAME, "td")[5].text
    # and Disable: its deliveries stop
    d.find_element(By.CSS_SELECTOR, "#webhooks tbody tr td button").click()
    b.wait(lambda: state(d.find_element(By.CSS_SELECTOR, "#webhooks tbody tr"))[1] ==
           "Enable again", what="the webhook disabled")
    with Api(server, tok) as api:
        assert api.get("/webhook/%d" % hook["id"]).json()["disabled_reason"] == \
            "disabled through the API"
    # A read-only token sees the state, and no button.
    reader = server.admin("token", "add", "hookco", "--scope", "read").stdout.split()[0]
    b.open(server.base + "/qrtrack/#token=" + reader)
    b.wait(lambda: d.find_elements(By.CSS_SELECTOR, "#webhooks tbody tr"), what="the webhooks")
    text, button = state(d.find_element(By.CSS_SELECTOR, "#webhooks tbody tr"))
    assert text.startswith("disabled ") and button is None
    # An account without webhooks: no card.
    server.account("nohookco")
    b.open(server.base + "/qrtrack/#token=" + server.token("nohookco"))
    b.wait(lambda: "No trackers" in b.text("#trackers tbody"), what="the empty list")
    assert not d.find_element(By.ID, "webhooks-card").is_displayed()
    assert b.severe() == []


# -- fixes from a hunt: stale edits, tags, sign-in errors, big crosstabs, polling ------

class stubbed_fetch:
    """A wrapper of window.fetch installed before app.js runs, in every document opened
    while it is in force: script is the body of function (url, opts, real) returning a
    promise of a Response, or undefined to let the request through."""

    def __init__(self, b, script):
        self.b = b
        self.source = ("(function () { var real = window.fetch; window.fetch = function (url, opts) {"
                       " var r = (function (url, opts, real) { %s })(String(url), opts, real);"
                       " return r === undefined ? real(url, opts) : r; }; })();" % script)

    def __enter__(self):
        self.id = self.b.driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument",
                                                {"source": self.source})["identifier"]
        return self

    def __exit__(self, *exc):
        self.b.driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": self.id})


def message(b):
    return b.js("var m = document.getElementById('message'); return m.hidden ? '' : m.textContent")


def open_tracker(b, tid):
    b.driver.find_element(By.CSS_SELECTOR, '#trackers tr[data-id="%d"] button.link' % tid).click()


def open_editor(b):
    b.driver.find_element(By.ID, "detail-edit").click()
    b.wait(lambda: b.driver.find_element(By.ID, "edit-form").is_displayed(), what="the editor")


def history_total(api, tid):
    return api.get("/tracker/%d/history" % tid).json()["meta"]["total"]


@pytest.fixture(scope="module")
def colleagues(server):
    """An account of its own with two trackers and two tokens: the page's and a colleague's."""
    server.account("teamco")
    tok = server.token("teamco", "--name", "dashboard")
    other = server.token("teamco", "--name", "colleague")
    with Api(server, tok) as api, Api(server, other) as colleague:
        made = []
        for body in ({"redirect_url": "https://example.com/a", "name": "flyer"},
                     {"redirect_url": "https://example.com/b", "name": "  padded name  ",
                      "tags": ["size:10,5", " spaced tag ", "plain"]}):
            r = api.post("/tracker", json=body)
            assert r.status_code == 200, r.text
            made.append(r.json())
        yield {"token": tok, "api": api, "colleague": colleague, "trackers": made}


def api_calls(b):
    """The API requests the page has made since it was opened (each one counted by the
    token's rate limit), by path, but for the polls of the open tracker's visits."""
    return b.js("return performance.getEntriesByType('resource').map(e => new URL(e.name))"
                ".filter(u => u.pathname.startsWith('/api/') && !u.searchParams.has('since_id'))"
                ".map(u => u.pathname)")


def test_the_open_tracker_is_told_to_screen_readers(server, account, browser):
    """The open tracker's row is coloured, and its name's button carries aria-current,
    the one in the list that does: when another tracker is opened, and when the list is
    drawn again (a filter)."""
    b = browser
    d = b.driver

    def current():
        return b.js("return Array.from(document.querySelectorAll("
                    "'#trackers button[aria-current=\"true\"]'))"
                    ".map(x => [x.closest('tr').getAttribute('data-id'),"
                    "           x.closest('tr').className])")

    b.open(server.base + "/qrtrack/#token=" + account["token"])
    signed_in(b, account)
    first = d.find_element(By.CSS_SELECTOR, "#trackers tr.selected").get_attribute("data-id")
    assert current() == [[first, "selected"]]
    other = [r.get_attribute("data-id") for r in rows(b, "trackers")
             if r.get_attribute("data-id") != first][0]
    d.find_element(By.CSS_SELECTOR, "#trackers tr[data-id='%s'] td.name button" % other).click()
    b.wait(lambda: current() == [[other, "selected"]], what="the other tracker as current")
    name = d.find_element(By.CSS_SELECTOR, "#trackers tr[data-id='%s'] td.name" % other).text
    box = d.find_element(By.ID, "filter-text")
    box.send_keys(name)
    b.wait(lambda: len(rows(b, "trackers")) == 1, what="the list filtered")
    b.wait(lambda: current() == [[other, "selected"]], what="the current tracker after a filter")
    box.clear()
    box.send_keys(Keys.BACKSPACE)
    assert b.severe() == []


def test_opening_the_page_costs_what_the_guide_says(server, account, browser):
    """docs/dashboard.md: opening the page costs the token 13 requests of its rate limit
    (the account, the portfolio, the trackers, the report, the styles, the webhooks, and
    the first tracker's seven), one more when trackers carry dimension tags (the crosstab),
    and none more for the account's webhooks: their state and latest attempts come with
    the list (it cost one more a webhook). The poll of the open tracker's visits (every
    15 s, since_id) is the guide's four a minute, not counted here."""
    b = browser

    def settled(want):
        b.wait(lambda: len(api_calls(b)) >= want,
               what=lambda: "%d API requests (those made: %r)" % (want, api_calls(b)))
        time.sleep(1)       # (nothing more comes)
        return api_calls(b)

    b.open(server.base + "/qrtrack/#token=" + account["token"])
    signed_in(b, account)
    calls = settled(14)
    assert len(calls) == 14 and calls.count("/api/report/tag-crosstab") == 1, calls
    server.account("hookcost")
    tok = server.token("hookcost")
    with Api(server, tok) as api:
        assert api.post("/tracker", json={"redirect_url": "https://example.com/c",
                                          "tags": ["plain"]}).status_code == 200
        for i in range(3):
            assert api.post("/webhook", json={"url": "https://receiver.invalid/%d" % i,
                                              "events": ["tracker.created"]}
                            ).status_code == 200
    b.open(server.base + "/qrtrack/#token=" + tok)
    b.wait(lambda: len(rows(b, "webhooks")) == 3, what="the webhooks")
    b.wait(lambda: b.driver.find_elements(By.CSS_SELECTOR, "#detail-chart svg"),
           what="the tracker's view")
    calls = settled(13)
    assert len(calls) == 13, calls
    assert calls.count("/api/webhook") == 1 and "/api/report/tag-crosstab" not in calls, calls


def test_the_editor_starts_from_the_tracker_as_it_is_now_and_sends_only_changes(server, colleagues, browser):
    """A change made elsewhere after the page opened is shown in the editor, and a Save
    that renames the tracker keeps it: only the name is sent."""
    b = browser
    d = b.driver
    api, t = colleagues["api"], colleagues["trackers"][0]
    tid = t["tracker_id"]
    b.open(server.base + "/qrtrack/#token=" + colleagues["token"])
    b.wait(lambda: len(rows(b, "trackers")) == 2, what="the trackers")
    open_tracker(b, tid)
    b.wait(lambda: b.text("#detail-name") == "flyer", what="the tracker")
    rules = [{"redirect_url": "https://apps.example/ios", "os": ["iOS"]}]
    r = colleagues["colleague"].patch("/tracker/%d" % tid, json={
        "redirect_url": "https://example.com/b2", "rules": rules, "max_scans": 500})
    assert r.status_code == 200, r.text
    open_editor(b)
    assert field(b, "edit-form", "redirect_url").get_attribute("value") == "https://example.com/b2"
    assert field(b, "edit-form", "max_scans").get_attribute("value") == "500"
    assert field(b, "edit-form", "rules.0.os").get_attribute("value") == "iOS"
    assert "b2" in b.text("#detail-dest")                   # the view follows too
    type_into(field(b, "edit-form", "name"), "flyer (print)")
    save(b)
    saved(b)
    s = api.get("/tracker/show/%d" % tid).json()
    assert s["name"] == "flyer (print)"
    assert s["redirect_url"] == "https://example.com/b2" and s["rules"] == rules and s["max_scans"] == 500
    h = api.get("/tracker/%d/history" % tid).json()["data"][0]
    assert list(h["changes"]) == ["name"], h
    # A Save with nothing changed sends nothing.
    n = history_total(api, tid)
    open_editor(b)
    save(b)
    b.wait(lambda: not d.find_element(By.ID, "edit-form").is_displayed(), what="closed")
    assert "Nothing changed" in b.text("#detail-saved")
    assert history_total(api, tid) == n
    assert api.get("/tracker/show/%d" % tid).json() == s
    assert b.severe() == []


def test_tags_with_commas_and_spaces_survive_the_editor(server, colleagues, browser):
    """One tag a line: a tag with a comma stays one tag, and neither a name nor a tag the
    user did not edit loses its spaces."""
    b = browser
    api, t = colleagues["api"], colleagues["trackers"][1]
    tid = t["tracker_id"]
    before = api.get("/tracker/show/%d" % tid).json()
    assert before["name"] == "  padded name  " and " spaced tag " in before["tags"]
    b.open(server.base + "/qrtrack/#token=" + server.token("teamco"))
    b.wait(lambda: len(rows(b, "trackers")) == 2, what="the trackers")
    open_tracker(b, tid)
    b.wait(lambda: b.js("return document.getElementById('detail-name').textContent") == "  padded name  ",
           what="the tracker")
    open_editor(b)
    tags = field(b, "edit-form", "tags")
    assert tags.tag_name == "textarea"
    assert tags.get_attribute("value").split("\n") == before["tags"]
    # An untouched Save changes nothing.
    save(b)
    b.wait(lambda: "Nothing changed" in b.text("#detail-saved"), what="nothing sent")
    assert api.get("/tracker/show/%d" % tid).json() == before
    # A tag added on a line of its own (a comma in it too); the others stay as they were.
    open_editor(b)
    tags = field(b, "edit-form", "tags")
    b.js("var t = arguments[0]; t.value = t.value + '\\n  new, one  \\n'; t.dispatchEvent(new Event('input'))", tags)
    save(b)
    saved(b)
    after = api.get("/tracker/show/%d" % tid).json()
    assert sorted(after["tags"]) == sorted(before["tags"] + ["new, one"])
    assert after["name"] == "  padded name  "
    assert b.severe() == []


def test_a_sign_in_that_fails_but_for_the_token_keeps_it(server, colleagues, browser):
    """A 429 or a 503 of GET /account at sign-in: the message, and the token kept in the
    tab, so that a reload later signs in. A 401 forgets it."""
    b = browser
    tok = server.token("teamco")                  # a token of its own: its own rate limit
    for status, words in [(429, "Rate limit"), (503, "busy")]:
        stub = ("if (/\\/api\\/account/.test(url)) return Promise.resolve(new Response("
                "JSON.stringify({message: 'busy'}), {status: %d, headers: {'Retry-After': '7',"
                " 'Content-Type': 'application/json'}}));" % status)
        with stubbed_fetch(b, stub):
            b.open(server.base + "/qrtrack/#token=" + tok)
            b.wait(lambda: message(b), what="a message")
            assert words in message(b) and "Signing in failed" in message(b), message(b)
            assert b.js("return sessionStorage.getItem('qrtrack.token')") == tok
            assert tok not in b.driver.current_url
        # The server answers again: a reload signs in with the kept token.
        b.driver.refresh()
        b.wait(lambda: len(rows(b, "trackers")) == 2, what="signed in after the reload")
        b.wait(lambda: message(b) == "", what="no message")
    # A refused token is forgotten.
    with stubbed_fetch(b, "if (/\\/api\\/account/.test(url)) return Promise.resolve(new Response("
                          "JSON.stringify({message: 'no'}), {status: 401}));"):
        b.driver.refresh()
        b.wait(lambda: "not accepted" in message(b), what="the 401")
        assert b.js("return sessionStorage.getItem('qrtrack.token')") is None
    b.severe()                                              # (read, so the next test starts afresh)


def test_a_big_crosstab_is_drawn(server, colleagues, browser):
    """A crosstab of 400 x 400 cells (an answer made up in the browser): drawn, not a
    RangeError of Math.max over every cell."""
    b = browser
    n = 400
    stub = ("if (/tag-crosstab/.test(url)) { var N = %d, rows = [], m = [], i, j;"
            " for (i = 0; i < N; i++) { rows.push('v' + i); var r = []; for (j = 0; j < N; j++) r.push(i === j ? i + 1 : 0); m.push(r); }"
            " var tot = rows.map(function (x, i) { return i + 1; });"
            " return Promise.resolve(new Response(JSON.stringify({data: {rows: rows, cols: rows, matrix: m,"
            " row_totals: tot, col_totals: tot, total: N * (N + 1) / 2}}), {status: 200,"
            " headers: {'Content-Type': 'application/json'}})); }" % n)
    with stubbed_fetch(b, stub):
        b.open(server.base + "/qrtrack/#token=" + server.token("teamco"))
        b.wait(lambda: len(rows(b, "trackers")) == 2, what="the trackers")
        b.js("var s = document.getElementById('xt-row'); s.appendChild(new Option('a', 'a'));"
             "s.value = 'a'; var c = document.getElementById('xt-col'); c.appendChild(new Option('b', 'b'));"
             "c.value = 'b'; s.dispatchEvent(new Event('change'));")
        b.wait(lambda: b.js("return document.querySelectorAll('#crosstab tbody tr').length") == n + 1,
               timeout=40, what="the crosstab")
    assert message(b) == ""
    assert [e for e in b.severe() if "RangeError" in e["message"]] == []
    # The largest cell is the darkest.
    assert b.js("var r = document.querySelectorAll('#crosstab tbody tr')[arguments[0] - 1];"
                "return [r.cells[arguments[0]].style.color, r.cells[1].style.color]", n) == ["rgb(255, 255, 255)", ""]


@pytest.fixture(scope="module")
def poller(server):
    """An account with one tracker: a scan now, then an imported visit of an hour ago (a
    higher id, an earlier time)."""
    server.account("pollco")
    tok = server.token("pollco")
    with Api(server, tok) as api:
        t = api.post("/tracker", json={"redirect_url": "https://example.com/a", "name": "one"}).json()
        r = requests.get(t["scan_url"], headers={"User-Agent": "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) "
                                                 "Gecko/20100101 Firefox/120.0"}, allow_redirects=False, timeout=10)
        assert r.status_code == 302
        wait_until(lambda: api.get("/visits/tracker/%d" % t["tracker_id"]).json()["data"], timeout=10,
                   what="the scan listed")
        import_visits(server, [{"tracker_id": t["tracker_id"], "visit_start": ts(int(time.time()) - 3600),
                                "source": "scan", "ip": "198.51.100.7", "country": "FR", "city": "Paris",
                                "browser": "Safari", "browser_version": "17", "os": "iOS", "device": "mobile",
                                "referer": None, "user_agent": "old", "bot": False}])
        data = api.get("/visits/tracker/%d" % t["tracker_id"]).json()["data"]
        assert len(data) == 2 and data[0]["id"] < data[1]["id"], data   # newest first by time
        yield {"token": tok, "tracker": t}


def test_polling_asks_since_the_highest_id_seen(server, poller, browser):
    b = browser
    b.open(server.base + "/qrtrack/#token=" + poller["token"])
    b.wait(lambda: len(rows(b, "visits")) == 2 and "Paris" in b.text("#visits tbody"), what="two visits")
    for _ in range(3):
        b.js("document.getElementById('visits-live').textContent = ''")
        b.js("document.dispatchEvent(new Event('visibilitychange'))")
        b.wait(lambda: b.text("#visits-live").startswith("checked"), what="the poll's answer")
    assert len(rows(b, "visits")) == 2
    assert b.severe() == []


def test_a_failed_tracker_load_shows_no_other_trackers_data(server, colleagues, poller, browser):
    """A tracker whose view fails to load (here a 429 of its analytics): its heading with
    nothing of the tracker shown before, the error, no polling with the other tracker's
    since_id; the next check loads it and the error goes."""
    b = browser
    api = colleagues["api"]
    t1, t2 = colleagues["trackers"]
    now = int(time.time())
    import_visits(server, [{"tracker_id": t1["tracker_id"], "visit_start": ts(now - 600 + k), "source": "scan",
                            "ip": "198.51.100.%d" % k, "country": "DE", "city": "Berlin", "browser": "Chrome",
                            "browser_version": "1", "os": "Android", "device": "mobile", "referer": None,
                            "user_agent": "UA", "bot": False} for k in range(3)])
    b.open(server.base + "/qrtrack/#token=" + server.token("teamco"))
    b.wait(lambda: len(rows(b, "trackers")) == 2, what="the trackers")
    open_tracker(b, t1["tracker_id"])
    b.wait(lambda: "Berlin" in b.text("#visits tbody"), what="the first tracker's visits")
    b.js("window.__fail = true")
    # The analytics of the second tracker fail while window.__fail is set (a 429).
    b.js("""var real = window.fetch, id = arguments[0]; window.__asked = [];
            window.fetch = function (url, opts) {
              window.__asked.push(String(url));
              if (window.__fail && String(url).indexOf('/tracker/analytics/' + id) >= 0)
                return Promise.resolve(new Response(JSON.stringify({message: 'slow down'}),
                  {status: 429, headers: {'Retry-After': '7'}}));
              return real(url, opts); };""", t2["tracker_id"])
    open_tracker(b, t2["tracker_id"])
    b.wait(lambda: "Rate limit" in message(b), what="the error")
    assert b.js("return document.getElementById('detail-name').textContent") == t2["name"]
    assert "Berlin" not in b.text("#visits") and b.text("#detail-stats") == ""
    assert b.js("return document.querySelectorAll('#detail-chart svg, #breakdowns .breakdown').length") == 0
    # A check while it fails polls nothing of the first tracker: it loads the view again.
    b.js("window.__asked = []; document.dispatchEvent(new Event('visibilitychange'))")
    b.wait(lambda: b.js("return window.__asked.length") > 0, what="a request")
    time.sleep(1)
    asked = b.js("return window.__asked")
    assert not [u for u in asked if "since_id" in u], asked
    assert [u for u in asked if "/tracker/analytics/%d" % t2["tracker_id"] in u], asked
    assert "Berlin" not in b.text("#visits") and "Rate limit" in message(b)
    # The limit passed: the next try (every 15 s) loads the tracker, and the error goes.
    b.js("window.__fail = false")
    b.wait(lambda: b.driver.find_elements(By.CSS_SELECTOR, "#detail-chart svg"), timeout=25,
           what="the chart")
    b.wait(lambda: message(b) == "", what="the error gone")
    assert "No visits yet" in b.text("#visits tbody") and "Berlin" not in b.text("#visits")
    assert b.text("#detail-stats")
    assert api.get("/tracker/show/%d" % t2["tracker_id"]).status_code == 200


@pytest.fixture(scope="module")
def protoco(server):
    """An account whose tags are named like Object.prototype's properties."""
    server.account("protoco")
    with Api(server, server.token("protoco")) as api:
        for tg in (["__proto__", "__proto__:eu", "campaign:spring"], ["__proto__:us", "campaign:summer"]):
            assert api.post("/tracker", json={"redirect_url": "https://example.com/a", "tags": tg}).status_code == 200
    return server


def test_tags_named_like_object_properties_are_listed(server, protoco, browser):
    b = browser
    b.open(server.base + "/qrtrack/#token=" + server.token("protoco"))
    b.wait(lambda: len(rows(b, "trackers")) == 2, what="the trackers")
    b.wait(lambda: b.driver.find_elements(By.CSS_SELECTOR, "#crosstab table"), what="the crosstab")
    opts = b.js("return Array.from(document.querySelectorAll('#filter-tag option')).map(o => o.value)")
    assert "__proto__" in opts and "__proto__:eu" in opts
    dims = b.js("return Array.from(document.querySelectorAll('#xt-row option')).map(o => o.value)")
    assert dims == ["__proto__", "campaign"]
    assert b.severe() == []


def test_a_charts_scale_of_large_numbers_fits_its_margin(server, protoco, browser):
    """"4,000,000" and every other label of the scale start inside the chart (a day of
    2.5 million scans, made up in the browser)."""
    b = browser
    stub = ("if (/scansAnalytics/.test(url)) return real(url, opts).then(function (r) {"
            " return r.json().then(function (j) { j.daily[j.daily.length - 1].scans = 2500000;"
            " return new Response(JSON.stringify(j), {status: 200, headers: {'Content-Type': 'application/json'}}); }); });")
    with stubbed_fetch(b, stub):
        b.open(server.base + "/qrtrack/#token=" + server.token("protoco"))
        b.wait(lambda: len(rows(b, "trackers")) == 2, what="the trackers")
        b.wait(lambda: b.driver.find_elements(By.CSS_SELECTOR, "#portfolio-chart svg"), what="the chart")
    labels = b.js("return Array.from(document.querySelectorAll('#portfolio-chart text.axis'))"
                  ".map(t => [t.textContent, t.getBBox().x])")
    assert "4,000,000" in [x[0] for x in labels]
    assert [x for x in labels if x[1] < 0] == []


def test_the_period_buttons_say_which_is_pressed(server, protoco, browser):
    b = browser
    b.open(server.base + "/qrtrack/#token=" + server.token("protoco"))
    b.wait(lambda: len(rows(b, "trackers")) == 2, what="the trackers")
    pressed = lambda: b.js("return Array.from(document.querySelectorAll('#period button'))"
                           ".map(e => e.getAttribute('aria-pressed'))")
    assert pressed() == ["false", "true", "false"]
    b.driver.find_element(By.CSS_SELECTOR, "#period button[data-days='7']").click()
    assert pressed() == ["true", "false", "false"]
    b.wait(lambda: day_bars(b, "portfolio-chart")[1] == 7, what="7 days")
    b.driver.find_element(By.CSS_SELECTOR, "#period button[data-days='30']").click()
    assert pressed() == ["false", "true", "false"]
    b.wait(lambda: day_bars(b, "portfolio-chart")[1] == 30, what="30 days again")
    assert b.severe() == []
