/* mod_qrtrack dashboard: a page that reads the JSON API with the analyst's token, and
 * creates and edits trackers through it (POST /tracker, PATCH /tracker/<id>); a tracker's
 * code downloads in a chosen style (GET /style) and format.
 *
 * Sign-in: /qrtrack/#token=TOKEN (the token is taken out of the address bar at once
 * and kept in sessionStorage, this tab only) or the token field. Every call sends it
 * as `Authorization: Bearer`. Charts are hand-written SVG; nothing comes from
 * elsewhere. */
(function () {
  "use strict";

  var meta = document.querySelector('meta[name="qrtrack-api"]');
  var API = (meta && meta.content.indexOf("@") < 0 ? meta.content : "/api").replace(/\/+$/, "");
  var KEY = "qrtrack.token";
  var TOKEN_FORM = /^qrt_[0-9A-Za-z]{40}$/;
  var POLL_MS = 15000;
  var SVG = "http://www.w3.org/2000/svg";
  var fmt = new Intl.NumberFormat("en-US");

  /* A read token (GET /account's token.scope "read") sets state.canWrite to false at
   * sign-in: that one switch hides every [data-write] control (body.readonly in app.css)
   * and keeps the forms shut (applyWriteMode). */
  function canWrite(account) { return !account.token || account.token.scope !== "read"; }

  var state = {
    token: null, account: null, days: 30, trackers: [], selected: null,
    poll: null, visits: [], maxId: 0, etag: null, generation: 0, canWrite: false,
    /* loaded: the id of the tracker whose view (and polling state) is shown, null while
     * the selected one's is loading or failed to load; loadFailed: the id of the selected
     * tracker whose view failed to load (loaded again every POLL_MS). edit: the editor's tracker and what
     * its form was filled with (Save sends only the fields that differ from it). */
    loaded: null, loadFailed: null, edit: null, editLoading: false
  };

  function $(id) { return document.getElementById(id); }

  /* An element with attributes and children (strings become text nodes). */
  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    var k;
    for (k in attrs || {}) {
      if (k === "text") { e.textContent = attrs[k]; }
      else if (k === "cls") { e.className = attrs[k]; }
      else { e.setAttribute(k, attrs[k]); }
    }
    (children || []).forEach(function (c) {
      if (c !== null && c !== undefined) {
        e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
      }
    });
    return e;
  }

  function svg(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    var k;
    for (k in attrs) { e.setAttribute(k, attrs[k]); }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  function clear(node) { while (node.firstChild) { node.removeChild(node.firstChild); } return node; }
  function num(n) { return n === null || n === undefined ? "–" : fmt.format(n); }

  /* The largest of the numbers in list and floor (a loop: Math.max.apply over a long list
   * overflows the stack). */
  function maxOf(list, floor) {
    var m = floor, i;
    for (i = 0; i < list.length; i++) { if (list[i] > m) { m = list[i]; } }
    return m;
  }

  /* The highest visit id of list and floor. */
  function maxVisitId(list, floor) {
    return maxOf(list.map(function (v) { return v.id; }), floor);
  }

  function showMessage(text, info) {
    var m = $("message");
    m.textContent = text;
    m.className = info ? "message info" : "message";
    m.hidden = !text;
  }

  /* A load that ended well: the error of an earlier one is over, but what an action just
   * said (a test sent, events queued again) stays. */
  function clearError() {
    if ($("message").className !== "message info") { showMessage(""); }
  }

  /* ---- the API ------------------------------------------------------------ */

  function query(params) {
    var parts = [];
    Object.keys(params || {}).forEach(function (k) {
      var v = params[k];
      (Array.isArray(v) ? v : [v]).forEach(function (x) {
        if (x !== undefined && x !== null && x !== "") {
          parts.push(encodeURIComponent(k) + "=" + encodeURIComponent(x));
        }
      });
    });
    return parts.length ? "?" + parts.join("&") : "";
  }

  /* errors: the 400/422 body's {"field": ["message", ...]}, else null. */
  function ApiError(status, message, errors) {
    this.status = status;
    this.message = message;
    this.errors = errors || null;
  }

  /* method path, with body (sent as JSON) when given: {status, body, headers} for a 2xx
   * or 304; anything else rejects with an ApiError. */
  function call(method, path, params, headers, body, token) {
    var h = { "Accept": "application/json", "Authorization": "Bearer " + (token || state.token) };
    var opts = { method: method, headers: h, cache: "no-store", credentials: "omit" };
    var k;
    for (k in headers || {}) { h[k] = headers[k]; }
    if (body !== undefined) {
      h["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    return fetch(API + path + query(params), opts)
      .then(function (r) {
        if (r.status === 304) { return { status: 304, body: null, headers: r.headers }; }
        return r.json().then(function (body) {
          return { status: r.status, body: body, headers: r.headers };
        }, function () {
          return { status: r.status, body: null, headers: r.headers };
        });
      }, function () {
        throw new ApiError(0, "The server cannot be reached.");
      })
      .then(function (res) {
        if ((res.status >= 200 && res.status < 300) || res.status === 304) { return res; }
        var msg = res.body && res.body.message ? res.body.message : "HTTP " + res.status;
        if (res.status === 429) {
          msg = "Rate limit reached: try again in " + (res.headers.get("Retry-After") || "a few") + " s.";
        }
        throw new ApiError(res.status, msg, res.body && typeof res.body.errors === "object" ? res.body.errors : null);
      });
  }

  function get(path, params, headers, token) {
    return call("GET", path, params, headers, undefined, token);
  }

  /* A failed call: 401 ends the session, others say what went wrong. */
  function failed(err) {
    if (!(err instanceof ApiError)) { err = new ApiError(0, String(err)); }
    if (err.status === 401) {
      signOut("Your token was refused (401 Unauthenticated): it is unknown or revoked. Sign in again.");
    }
    else {
      showMessage(err.message);
    }
  }

  /* ---- dates ----------------------------------------------------------------- */

  function day(d) { return d.toISOString().slice(0, 10); }

  function period() {
    var end = new Date();
    var start = new Date(end.getTime() - (state.days - 1) * 86400000);
    return { start: day(start), end: day(end) };
  }

  function window_(p) {
    return { visit_start: p.start + "T00:00:00+0000", visit_start_end: p.end + "T23:59:59+0000" };
  }

  /* Every day of p, with the counts of rows (by date) or zeros. */
  function fillDays(p, rows) {
    var by = {};
    var out = [];
    var t = Date.parse(p.start + "T00:00:00Z");
    var end = Date.parse(p.end + "T00:00:00Z");
    (rows || []).forEach(function (r) { by[r.date] = r; });
    for (; t <= end; t += 86400000) {
      var d = day(new Date(t));
      out.push({ date: d, scans: by[d] ? by[d].scans : 0, clicks: by[d] ? by[d].clicks : 0 });
    }
    return out;
  }

  /* ---- the chart: stacked bars of scans and clicks per day ------------------------ */

  /* The top of the scale: four steps of 1, 2 or 5 times a power of ten. */
  function niceMax(v) {
    var q = Math.max(1, v / 4);
    var p = Math.pow(10, Math.floor(Math.log10(q)));
    var m = [1, 2, 5, 10].find(function (x) { return x * p >= q; });
    return 4 * m * p;
  }

  function drawChart(box, days, label) {
    var W = Math.max(360, Math.round(box.clientWidth || 800)), H = 250, L, R = 10, T = 12, B = 30;
    var max = niceMax(maxOf(days.map(function (d) { return d.scans + d.clicks; }), 0));
    /* The left margin fits the longest label of the scale (11px text: about 7px a digit). */
    L = Math.max(44, 12 + 7 * num(max).length);
    var step = (W - L - R) / days.length;
    var bw = Math.max(1, step * 0.72);
    var s = svg("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img", "class": "chart-svg",
                         "aria-label": label, "data-days": String(days.length) });
    var i, y, g, total = 0;
    s.appendChild(svg("title", {}, label));
    for (i = 0; i <= 4; i++) {
      y = T + (H - T - B) * (1 - i / 4);
      s.appendChild(svg("line", { x1: L, x2: W - R, y1: y, y2: y, "class": "grid-line" }));
      s.appendChild(svg("text", { x: L - 6, y: y + 4, "text-anchor": "end", "class": "axis" }, num(max * i / 4)));
    }
    days.forEach(function (d, k) {
      var x = L + k * step + (step - bw) / 2;
      var hs = (H - T - B) * d.scans / max;
      var hc = (H - T - B) * d.clicks / max;
      var base = H - B;
      total += d.scans + d.clicks;
      g = svg("g", { "class": "day", "data-date": d.date });
      g.appendChild(svg("title", {}, d.date + ": " + num(d.scans) + " scans, " + num(d.clicks) + " clicks"));
      g.appendChild(svg("rect", { x: x, y: base - hs, width: bw, height: hs, "class": "bar-scans" }));
      g.appendChild(svg("rect", { x: x, y: base - hs - hc, width: bw, height: hc, "class": "bar-clicks" }));
      /* An invisible full-height target, so that empty days show their tooltip too. */
      g.appendChild(svg("rect", { x: L + k * step, y: T, width: step, height: H - T - B, fill: "transparent" }));
      s.appendChild(g);
      if (k === 0 || k === days.length - 1 || (days.length > 10 && k % Math.ceil(days.length / 8) === 0
                                              && days.length - 1 - k > days.length / 12)) {
        s.appendChild(svg("text", { x: L + k * step + step / 2, y: H - 10, "text-anchor": "middle",
                                    "class": "axis" }, d.date.slice(5)));
      }
    });
    if (!total) {
      s.appendChild(svg("text", { x: (W + L) / 2, y: (H - B) / 2, "text-anchor": "middle", "class": "empty" },
                        "No visits in this period"));
    }
    clear(box).appendChild(s);
    box.appendChild(el("div", { cls: "legend" }, [
      el("span", {}, [el("i", { cls: "scans" }), "scans"]),
      el("span", {}, [el("i", { cls: "clicks" }), "clicks"])
    ]));
  }

  /* ---- portfolio ---------------------------------------------------------------- */

  function kpiCard(label, k) {
    var change;
    if (k.change === null || k.change === undefined) {
      change = el("span", { cls: "change flat", text: k.previous === 0 && k.value > 0 ? "new" : "–" });
    }
    else {
      change = el("span", { cls: "change " + (k.change > 0 ? "up" : k.change < 0 ? "down" : "flat"),
                            text: (k.change > 0 ? "▲ +" : k.change < 0 ? "▼ " : "") + k.change.toFixed(1) + "%" });
    }
    return el("div", { cls: "kpi" }, [
      el("div", { cls: "label", text: label }),
      el("div", { cls: "value" }, [num(k.value), change]),
      el("div", { cls: "prev", text: "previous " + state.days + " days: " + num(k.previous) })
    ]);
  }

  function loadPortfolio(gen) {
    var p = period();
    return get("/dashboard/scansAnalytics", { dateStart: p.start, dateEnd: p.end }).then(function (res) {
      var b = res.body;
      var top = clear($("top-trackers"));
      if (gen !== state.generation) { return; }
      clear($("kpis"));
      [["Scans", b.kpis.totalScans], ["Clicks", b.kpis.totalClicks],
       ["Unique visitors", b.kpis.uniqueVisitors], ["Active trackers", b.kpis.activeTrackers]]
        .forEach(function (x) { $("kpis").appendChild(kpiCard(x[0], x[1])); });
      $("portfolio-sub").textContent = b.period.dateStart + " – " + b.period.dateEnd +
        (b.previousPeriod ? " (vs " + b.previousPeriod.dateStart + " – " + b.previousPeriod.dateEnd + ")" : "");
      drawChart($("portfolio-chart"), b.daily, "Scans and clicks per day, all trackers");
      if (!b.topTrackers.length) {
        top.appendChild(el("p", { cls: "none", text: "No visits in this period." }));
        return;
      }
      top.appendChild(table(["Tracker", "Scans", "Clicks"], b.topTrackers.map(function (t) {
        return [trackerLink(t.tracker_id, t.name), num(t.scans), num(t.clicks)];
      }), [false, true, true]));
    });
  }

  /* ---- tables ---------------------------------------------------------------------- */

  function table(heads, rows, numeric, cls) {
    var t = el("table", { cls: "list" + (cls ? " " + cls : "") });
    var tr = el("tr");
    heads.forEach(function (h, i) { tr.appendChild(el("th", { cls: numeric && numeric[i] ? "num" : "", text: h })); });
    t.appendChild(el("thead", {}, [tr]));
    var body = el("tbody");
    rows.forEach(function (r) {
      var row = el("tr");
      r.forEach(function (c, i) {
        row.appendChild(el("td", { cls: numeric && numeric[i] ? "num" : "" },
                           [c === null ? el("span", { cls: "none", text: "unknown" }) : c]));
      });
      body.appendChild(row);
    });
    t.appendChild(body);
    return t;
  }

  /* A row of the trackers' list as the open tracker's or not: its colour, and for screen
   * readers aria-current on its name's button. */
  function markSelected(row, on) {
    var b = row.querySelector("td.name button");
    row.className = on ? "selected" : "";
    if (!b) { return; }
    if (on) { b.setAttribute("aria-current", "true"); }
    else { b.removeAttribute("aria-current"); }
  }

  function trackerLink(id, name) {
    var b = el("button", { type: "button", cls: "link", text: name });
    b.addEventListener("click", function () { selectTracker(id); });
    return b;
  }

  /* ---- trackers ---------------------------------------------------------------------- */

  function loadTrackers(gen) {
    var all = [];
    function page(n) {
      return get("/tracker", { rows: 1000, page: n }).then(function (res) {
        all = all.concat(res.body.data);
        if (n < res.body.meta.last_page && n < 50) { return page(n + 1); }
        return all;
      });
    }
    return page(1).then(function (list) {
      if (gen !== state.generation) { return; }
      state.trackers = list;
      fillTagFilter();
      renderTrackers();
      fillDimensions();
      if (list.length && !state.selected) { return selectTracker(list[0].tracker_id); }
      return true;
    });
  }

  /* The tag filter's choices: every tag of the account's trackers (the choice kept). */
  function fillTagFilter() {
    var tags = new Map();
    var sel = $("filter-tag");
    var was = sel.value;
    state.trackers.forEach(function (t) { t.tags.forEach(function (g) { tags.set(g, true); }); });
    clear(sel).appendChild(el("option", { value: "", text: "All tags" }));
    Array.from(tags.keys()).sort().forEach(function (g) { sel.appendChild(el("option", { value: g, text: g })); });
    sel.value = tags.has(was) ? was : "";
  }

  function trackerMatches(t, text, tag) {
    var hay;
    if (tag && t.tags.indexOf(tag) < 0) { return false; }
    if (!text) { return true; }
    hay = [t.name, t.redirect_url, t.code].concat(t.tags).join("\n").toLowerCase();
    return hay.indexOf(text.toLowerCase()) >= 0;
  }

  function renderTrackers() {
    var body = clear($("trackers").tBodies[0]);
    var text = $("filter-text").value.trim();
    var tag = $("filter-tag").value;
    var shown = state.trackers.filter(function (t) { return trackerMatches(t, text, tag); });
    $("tracker-count").textContent = shown.length === state.trackers.length
      ? "(" + state.trackers.length + ")" : "(" + shown.length + " of " + state.trackers.length + ")";
    if (!state.trackers.length) {
      body.appendChild(el("tr", {}, [el("td", { colspan: "6", cls: "none",
        text: state.canWrite ? "No trackers yet: create one with New tracker."
                             : "No trackers yet (this token only reads: a token of the account that may write creates them)." })]));
      return;
    }
    shown.forEach(function (t) {
      var csv = el("button", { type: "button", cls: "small", text: "CSV", title: "Download the visits as CSV" });
      var row;
      csv.addEventListener("click", function () { downloadCsv(t); });
      row = el("tr", { "data-id": String(t.tracker_id) }, [
        el("td", { cls: "name" }, [trackerLink(t.tracker_id, t.name)]),
        el("td", { cls: "dest", text: t.redirect_url }),
        el("td", { cls: "num", text: num(t.totalScans) }),
        el("td", { cls: "num", text: num(t.totalClicks) }),
        el("td", {}, t.tags.map(function (g) { return el("span", { cls: "tag", text: g }); })),
        el("td", {}, [csv])
      ]);
      markSelected(row, state.selected === t.tracker_id);
      body.appendChild(row);
    });
  }

  function downloadCsv(t) {
    fetch(API + "/visits/tracker/" + t.tracker_id + "/download/csv",
          { headers: { "Authorization": "Bearer " + state.token }, cache: "no-store", credentials: "omit" })
      .then(function (r) {
        if (!r.ok) { throw new ApiError(r.status, "The CSV export failed (HTTP " + r.status + ")."); }
        return r.blob();
      })
      .then(function (blob) {
        var url = URL.createObjectURL(blob);
        var a = el("a", { href: url, download: "tracker-" + t.tracker_id + "-visits.csv" });
        document.body.appendChild(a);
        a.click();
        a.remove();
        setTimeout(function () { URL.revokeObjectURL(url); }, 10000);
      })
      .catch(failed);
  }

  /* ---- a tracker's code: style and format ----------------------------------------- */

  var CODE_EXT = { "image/png": "png", "image/svg+xml": "svg", "application/pdf": "pdf",
                   "application/postscript": "eps" };

  /* The account's styles (GET /style) as the choices of #detail-style, the choice kept. */
  function loadStyles() {
    return get("/style").then(function (r) {
      var sel = $("detail-style");
      var keep = sel.value;
      clear(sel).appendChild(el("option", { value: "", text: "account default" }));
      r.body.data.forEach(function (st) {
        sel.appendChild(el("option", { value: st.name,
          text: st.name + (st.has_logo ? " (logo)" : "") }));
      });
      sel.value = r.body.data.some(function (st) { return st.name === keep; }) ? keep : "";
      codeLink();
    });
  }

  /* #detail-code links to the image endpoint with the chosen format and style (the
   * token is never in a URL: a click fetches it with the Authorization header). */
  function codeLink() {
    var q = new URLSearchParams({ format: $("detail-format").value });
    if ($("detail-style").value) { q.set("style", $("detail-style").value); }
    $("detail-code").setAttribute("href", state.selected === null ? "#"
      : API + "/tracker/" + state.selected + "/qrcode?" + q.toString());
  }

  function downloadCode(e) {
    var t = state.trackers.find(function (x) { return x.tracker_id === state.selected; });
    var href = $("detail-code").getAttribute("href");
    e.preventDefault();
    if (!t) { return; }
    fetch(href, { headers: { "Authorization": "Bearer " + state.token }, cache: "no-store",
                  credentials: "omit" })
      .then(function (r) {
        if (!r.ok) {
          return r.json().catch(function () { return {}; }).then(function (j) {
            throw new ApiError(r.status, j.message || "The code could not be made (HTTP " + r.status + ").");
          });
        }
        return r.blob();
      })
      .then(function (blob) {
        var ext = CODE_EXT[blob.type.split(";")[0]] || "png";
        var url = URL.createObjectURL(blob);
        var a = el("a", { href: url, download: t.code + "." + ext });
        document.body.appendChild(a);
        a.click();
        a.remove();
        setTimeout(function () { URL.revokeObjectURL(url); }, 10000);
        $("detail-saved").textContent = "Downloaded " + t.code + "." + ext + " (" + num(blob.size) + " bytes).";
      })
      .catch(failed);
  }

  /* ---- one tracker ------------------------------------------------------------------ */

  function stat(label, value) {
    return el("div", {}, [el("b", { text: value }), el("span", { text: label })]);
  }

  function breakdown(title, rows, key) {
    var box = el("div", { cls: "breakdown" }, [el("h4", { text: title })]);
    var max = maxOf(rows.map(function (r) { return r.visits; }), 1);
    if (!rows.length) { box.appendChild(el("p", { cls: "none", text: "No visits." })); }
    rows.slice(0, 8).forEach(function (r) {
      var bar = el("i");
      bar.style.width = (100 * r.visits / max).toFixed(1) + "%";
      box.appendChild(el("div", { cls: "row" }, [
        el("span", { text: r[key] === null ? "unknown" : r[key], title: r[key] === null ? "unknown" : r[key] }),
        el("span", { text: num(r.visits) }),
        el("div", { cls: "bar" }, [bar])
      ]));
    });
    return box;
  }

  /* OS and device shares of the latest visits (there is no report by them). */
  function shares(visits, key) {
    var by = {};
    visits.forEach(function (v) {
      if (!v.bot) { var k = v[key] === null ? "\u0000" : v[key]; by[k] = (by[k] || 0) + 1; }
    });
    return Object.keys(by).map(function (k) {
      var r = { visits: by[k] };
      r[key] = k === "\u0000" ? null : k;
      return r;
    }).sort(function (a, b) { return b.visits - a.visits; });
  }

  /* Forgets the shown tracker's numbers, visits and history and its polling state, so
   * that nothing of one tracker is shown under another's name. */
  function clearTrackerView() {
    stopPolling();
    state.loaded = null;
    state.loadFailed = null;
    state.visits = [];
    state.maxId = 0;
    state.etag = null;
    ["detail-stats", "detail-chart", "breakdowns", "history"].forEach(function (id) { clear($(id)); });
    clear($("visits").tBodies[0]);
    $("visits-live").textContent = "";
  }

  /* Shows tracker id: a promise of true once its view is loaded, false when it failed
   * (the message says why; the view stays empty, and is loaded again every POLL_MS and
   * when the tab becomes visible again). */
  function selectTracker(id) {
    var t = state.trackers.find(function (x) { return x.tracker_id === id; });
    var p = period();
    var gen = state.generation;
    var params = Object.assign({ "trackers[]": id }, window_(p));
    if (!t) { return Promise.resolve(false); }
    state.selected = id;
    clearTrackerView();
    Array.prototype.forEach.call($("trackers").tBodies[0].rows, function (r) {
      markSelected(r, r.getAttribute("data-id") === String(id));
    });
    $("detail").hidden = false;
    closeForm($("edit-form"), false);
    $("detail-saved").textContent = "";
    showDetailHead(t);
    codeLink();
    loadStyles().catch(failed);
    return Promise.all([
      get("/tracker/analytics/" + id),
      get("/report/", Object.assign({ report: "date" }, params)),
      get("/report/", Object.assign({ report: "browser" }, params)),
      get("/report/", Object.assign({ report: "country" }, params)),
      get("/report/", Object.assign({ report: "city" }, params)),
      get("/visits/tracker/" + id, { rows: 100 }),
      get("/tracker/" + id + "/history", { rows: 50 })
    ]).then(function (rs) {
      var a = rs[0].body;
      if (gen !== state.generation || state.selected !== id) { return; }
      clear($("detail-stats"));
      [["scans", num(a.totalScans)], ["clicks", num(a.totalClicks)], ["unique visitors", num(a.uniqueVisitors)],
       ["bot visits", num(a.bots)], ["last visit (UTC)", a.lastVisit ? a.lastVisit.slice(0, 16).replace("T", " ") : "never"]]
        .forEach(function (x) { $("detail-stats").appendChild(stat(x[0], x[1])); });
      drawChart($("detail-chart"), fillDays(p, rs[1].body.data), "Scans and clicks per day of " + t.name);
      state.visits = rs[5].body.data;
      state.maxId = maxVisitId(state.visits, 0);
      state.etag = null;
      state.loaded = id;
      clear($("breakdowns"));
      [breakdown("Browser", rs[2].body.data, "browser"), breakdown("Country", rs[3].body.data, "country"),
       breakdown("City", rs[4].body.data, "city"),
       breakdown("OS (latest " + state.visits.length + ")", shares(state.visits, "os"), "os"),
       breakdown("Device (latest " + state.visits.length + ")", shares(state.visits, "device"), "device")]
        .forEach(function (b) { $("breakdowns").appendChild(b); });
      renderVisits();
      renderHistory(rs[6].body.data);
      startPolling(id, gen);
      clearError();
      return true;
    }).catch(function (err) {
      if (gen !== state.generation || state.selected !== id) { return false; }
      failed(err);
      if (state.token && state.selected === id) { retryLater(id, gen); }
      return false;
    });
  }

  /* After a failed load of tracker id's view: loaded again every POLL_MS (not polled: it
   * has no visits of its own yet). */
  function retryLater(id, gen) {
    stopPolling();
    state.loaded = null;
    state.loadFailed = id;
    state.poll = setInterval(function () {
      if (!document.hidden && gen === state.generation && state.selected === id) { selectTracker(id); }
    }, POLL_MS);
  }

  /* A history value as text: lists joined, null as a dash. */
  function historyValue(v) {
    if (v === null || v === undefined) { return "–"; }
    if (Array.isArray(v)) {
      return v.length ? v.map(function (x) { return typeof x === "string" ? x : JSON.stringify(x); }).join(", ") : "none";
    }
    return typeof v === "string" ? v : JSON.stringify(v);
  }

  /* The tracker's history, newest first: when, which token, what changed from what. */
  function renderHistory(rows) {
    var list = clear($("history"));
    if (!rows.length) { list.appendChild(el("li", { cls: "none", text: "No changes recorded." })); }
    rows.forEach(function (h) {
      var parts = [
        el("span", { cls: "who", text: h.at.slice(0, 16).replace("T", " ") + " UTC · " + (h.token || "qrtrack-admin") + " · " }),
        h.kind
      ];
      /* each value isolated (<bdi>): a right-to-left override in a name turned the rest
       * of the line around */
      Object.keys(h.changes).forEach(function (k, i) {
        parts.push(i ? "; " : ": ", k + ": ", el("bdi", { text: historyValue(h.changes[k][0]) }),
                   " → ", el("bdi", { text: historyValue(h.changes[k][1]) }));
      });
      list.appendChild(el("li", { "data-kind": h.kind }, parts));
    });
  }

  function loadHistory(id, gen) {
    return get("/tracker/" + id + "/history", { rows: 50 }).then(function (res) {
      if (gen === state.generation && state.selected === id) { renderHistory(res.body.data); }
    });
  }

  /* The tracker's name, destination and a line of its routing settings. */
  function showDetailHead(t) {
    $("detail-name").textContent = t.name;
    clear($("detail-dest")).appendChild(document.createTextNode("→ " + t.redirect_url + "  ·  QR: " + t.scan_url));
    clear($("detail-settings"));
    settingsSummary(t).forEach(function (x) {
      $("detail-settings").appendChild(el("li", { text: x[0], title: x[1] || x[0] }));
    });
  }

  /* A time of the API (UTC, +0000) as a date, with the time of day when it is not 00:00. */
  function shortTime(s) {
    return /T00:00:00\+0000$/.test(s) ? s.slice(0, 10) : s.slice(0, 16).replace("T", " ") + " UTC";
  }

  function timeMs(s) { return Date.parse(s.replace(/([+-]\d\d)(\d\d)$/, "$1:$2")); }

  /* [text, tooltip] items: "2 rules", "expires 2026-06-01", "max 100 scans", ... */
  function settingsSummary(t) {
    var out = [];
    var rules = t.rules || [];
    var now = Date.now();
    out.push([rules.length ? rules.length + (rules.length === 1 ? " rule" : " rules") : "no rules",
              rules.map(function (r, i) { return (i + 1) + ". → " + r.redirect_url; }).join("\n")]);
    if (t.valid_from) {
      out.push([(timeMs(t.valid_from) > now ? "starts " : "valid from ") + shortTime(t.valid_from), t.valid_from]);
    }
    if (t.valid_until) {
      out.push([(timeMs(t.valid_until) < now ? "expired " : "expires ") + shortTime(t.valid_until), t.valid_until]);
    }
    if (t.max_scans) { out.push(["max " + num(t.max_scans) + " scans"]); }
    if (t.expired_url) { out.push(["when expired → " + t.expired_url]); }
    if (t.password_protected) { out.push(["password protected"]); }
    return out;
  }

  function renderVisits() {
    var body = clear($("visits").tBodies[0]);
    if (!state.visits.length) {
      body.appendChild(el("tr", {}, [el("td", { colspan: "8", cls: "none", text: "No visits yet." })]));
    }
    state.visits.slice(0, 100).forEach(function (v) { body.appendChild(visitRow(v)); });
    visitsChecked();
  }

  function visitRow(v) {
    var cells = [v.visit_start.slice(0, 19).replace("T", " "), v.source + (v.bot ? " (bot)" : ""),
                 v.country, v.city, v.browser ? v.browser + (v.browser_version ? " " + v.browser_version : "") : null,
                 v.os, v.device, v.referer];
    return el("tr", {}, cells.map(function (c) {
      return el("td", {}, [c === null ? el("span", { cls: "none", text: "–" }) : c]);
    }));
  }

  function visitsChecked() {
    $("visits-live").textContent = "checked " + new Date().toISOString().slice(11, 19) + " UTC, every " +
      POLL_MS / 1000 + " s";
  }

  /* New visits go on top of the rows already shown, which stay as they are. */
  function prependVisits(fresh) {
    var body = $("visits").tBodies[0];
    var first = body.firstChild;
    if (first && first.querySelector("td.none[colspan]")) { body.removeChild(first); first = null; }
    first = body.firstChild;
    fresh.slice(0, 100).forEach(function (v) { body.insertBefore(visitRow(v), first); });
    while (body.rows.length > 100) { body.removeChild(body.lastChild); }
  }

  /* New visits: since_id the highest id seen, If-None-Match the last ETag (304: nothing new). */
  function poll(id, gen) {
    var h = state.etag ? { "If-None-Match": state.etag } : {};
    if (document.hidden || state.loaded !== id) { return; }
    get("/visits/tracker/" + id, { since_id: state.maxId, rows: 100 }, h).then(function (res) {
      if (gen !== state.generation || state.selected !== id || state.loaded !== id) { return; }
      if (res.status === 200) {
        state.etag = res.headers.get("ETag");
        if (res.body.data.length) {
          state.visits = res.body.data.concat(state.visits).slice(0, 100);
          /* The highest id seen (the newest by time need not have it). */
          state.maxId = maxVisitId(res.body.data, state.maxId);
          prependVisits(res.body.data);
        }
      }
      visitsChecked();
    }).catch(failed);
  }

  function startPolling(id, gen) {
    stopPolling();
    state.poll = setInterval(function () { poll(id, gen); }, POLL_MS);
  }

  function stopPolling() {
    if (state.poll) { clearInterval(state.poll); state.poll = null; }
  }

  /* ---- creating and editing trackers ------------------------------------------------- */

  var uid = 0;

  /* The fields of a rule row: key, label, placeholder, kind (list: comma-separated). */
  var RULE_FIELDS = [
    ["redirect_url", "Send to URL", "an http or https address", "url"],
    ["device", "Devices", "mobile, tablet", "list"],
    ["os", "Operating systems", "iOS, Android", "list"],
    ["country", "Countries", "DE, AT", "list"],
    ["language", "Languages", "de, en-GB", "list"],
    ["from", "From", "2026-05-01T00:00:00+0200", "text"],
    ["until", "Until", "2026-05-31T23:59:59+0200", "text"],
    ["hours", "Hours", "08:00-18:00", "text"],
    ["utc_offset", "UTC offset", "+0100", "text"]
  ];
  var WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
  var WEEKDAY_NAMES = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];

  function applyWriteMode() {
    document.body.classList.toggle("readonly", !state.canWrite);
    if (!state.canWrite) {
      closeForm($("create-form"), false);
      closeForm($("edit-form"), false);
    }
  }

  function listOf(text) {
    return text.split(",").map(function (x) { return x.trim(); }).filter(function (x) { return x; });
  }

  function selected() {
    return state.trackers.find(function (x) { return x.tracker_id === state.selected; });
  }

  /* -- errors next to their fields -- */

  /* The element of form that a 400/422 error key names ("rules.2.hours": the third rule's
   * hours field); a key without an element of its own goes to its parent ("rules.2", "rules"). */
  function errorTarget(form, key) {
    var byField = {};
    var parts = key.split(".");
    Array.prototype.forEach.call(form.querySelectorAll("[data-field]"), function (e) {
      byField[e.getAttribute("data-field")] = e;
    });
    for (; parts.length; parts.pop()) {
      if (byField[parts.join(".")]) { return byField[parts.join(".")]; }
    }
    return null;
  }

  function isControl(e) { return /^(INPUT|SELECT|TEXTAREA)$/.test(e.tagName); }

  /* The error line of a field (below it, in its .field box) or of a group (a rule: under
   * its buttons; a fieldset: at its end), made on first use. */
  function errorLine(target) {
    var box = isControl(target) ? target.closest(".field") : target.tagName === "LI" ? target.firstChild : target;
    var line = box.querySelector(":scope > .err");
    if (!line) {
      line = el("p", { cls: "err", id: "err-" + (++uid) });
      if (target.tagName === "LI") { box.querySelector(".rule-tools").after(line); }
      else { box.appendChild(line); }
    }
    return line;
  }

  function clearErrors(form) {
    Array.prototype.forEach.call(form.querySelectorAll(".err"), function (e) { e.remove(); });
    Array.prototype.forEach.call(form.querySelectorAll("[aria-describedby]"), function (e) {
      e.removeAttribute("aria-invalid");
      e.removeAttribute("aria-describedby");
    });
    form.querySelector(".form-status").textContent = "";
  }

  /* A failed save: field errors beside their fields (the first one focused), the rest and a
   * summary in the form's status line; 401 signs out as everywhere. */
  function formFailed(form, err, what) {
    var first = null, loose = [], n = 0;
    if (!(err instanceof ApiError)) { err = new ApiError(0, String(err)); }
    if (err.status === 401) { failed(err); return; }
    clearErrors(form);
    Object.keys(err.errors || {}).forEach(function (key) {
      var msgs = [].concat(err.errors[key]).join(" ");
      var target = errorTarget(form, key);
      var line, control;
      n++;
      if (!target) { loose.push(key + ": " + msgs); return; }
      line = errorLine(target);
      line.textContent = (line.textContent ? line.textContent + " " : "") + msgs;
      /* A group's error is read with its first field, which is not marked invalid itself. */
      control = isControl(target) ? target : target.querySelector("input:not([disabled])");
      if (control) {
        if (control === target) { control.setAttribute("aria-invalid", "true"); }
        control.setAttribute("aria-describedby",
                             ((control.getAttribute("aria-describedby") || "") + " " + line.id).trim());
        first = first || control;
      }
    });
    form.querySelector(".form-status").textContent = what + ": " +
      (n ? (n === 1 ? "a field needs" : n + " fields need") + " fixing." : err.message) +
      (loose.length ? " " + loose.join(" ") : "");
    if (first) { first.focus(); }
  }

  function busy(form, on) {
    form.setAttribute("aria-busy", on ? "true" : "false");
    form.querySelector("button[type=submit]").disabled = on;
  }

  /* -- the forms: open, close -- */

  function opener(form) { return form.id === "create-form" ? $("new-tracker") : $("detail-edit"); }

  function openForm(form) {
    if (!state.canWrite) { return; }
    clearErrors(form);
    form.hidden = false;
    opener(form).setAttribute("aria-expanded", "true");
    form.querySelector("input").focus();
  }

  /* Closes form, forgetting a password typed into it; focusBack: to the button that opened it. */
  function closeForm(form, focusBack) {
    Array.prototype.forEach.call(form.querySelectorAll("input[type=password]"), function (e) { e.value = ""; });
    if (form.hidden) { return; }
    form.hidden = true;
    opener(form).setAttribute("aria-expanded", "false");
    if (focusBack) { opener(form).focus(); }
  }

  /* -- creating -- */

  function openCreate() {
    var f = $("create-form");
    if (!f.hidden) { closeForm(f, true); return; }
    ["cr-redirect_url", "cr-name", "cr-tags"].forEach(function (id) { $(id).value = ""; });
    openForm(f);
  }

  function submitCreate(e) {
    var f = $("create-form");
    var gen = state.generation;
    var body = { redirect_url: $("cr-redirect_url").value.trim() };
    var name = $("cr-name").value.trim(), tags = listOf($("cr-tags").value);
    e.preventDefault();
    if (name) { body.name = name; }
    if (tags.length) { body.tags = tags; }
    busy(f, true);
    call("POST", "/tracker", null, null, body).then(function (res) {
      if (gen !== state.generation) { return; }
      state.trackers.unshift(res.body);
      fillTagFilter();
      renderTrackers();
      if (tags.length) { fillDimensions(); }
      closeForm(f, false);
      selectTracker(res.body.tracker_id);
      $("detail-saved").textContent = "Created " + res.body.name + ".";
      $("detail-name").focus();
    }, function (err) {
      if (gen === state.generation) { formFailed(f, err, "The tracker was not created"); }
    }).then(function () { busy(f, false); });
  }

  /* -- editing: the rules -- */

  function ruleRow(rule) {
    var n = ++uid;
    var fields = el("div", { cls: "fields" });
    var days = el("fieldset", { cls: "field weekdays" }, [el("legend", { text: "Weekdays" })]);
    var tools = el("div", { cls: "rule-tools" });
    var li = el("li", { cls: "rule" }, [el("fieldset", {}, [el("legend"), tools, fields, days])]);
    RULE_FIELDS.forEach(function (f) {
      var v = rule[f[0]];
      var input = el("input", { id: "rule-" + n + "-" + f[0], type: f[3] === "url" ? "url" : "text",
                                placeholder: f[2], spellcheck: "false", "data-key": f[0] });
      input.value = v === undefined || v === null ? "" : Array.isArray(v) ? v.join(", ") : String(v);
      fields.appendChild(el("div", { cls: "field" + (f[3] === "url" ? " wide" : "") }, [
        el("label", { "for": input.id, text: f[1] }), input]));
    });
    WEEKDAYS.forEach(function (d, i) {
      var box = el("input", { type: "checkbox", value: String(i + 1), "aria-label": WEEKDAY_NAMES[i] });
      box.checked = (rule.weekdays || []).indexOf(i + 1) >= 0;
      days.appendChild(el("label", { title: WEEKDAY_NAMES[i] }, [box, d]));
    });
    [["up", "Move up"], ["down", "Move down"], ["remove", "Remove"]].forEach(function (b) {
      tools.appendChild(el("button", { type: "button", cls: "small", "data-act": b[0], text: b[1] }));
    });
    return li;
  }

  /* Numbers the rows in their order: legends, labels of the buttons, and the data-field
   * names ("rules.N.key") that 422 errors are matched against. */
  function renumberRules() {
    var rows = $("rules").children;
    Array.prototype.forEach.call(rows, function (li, i) {
      var name = "Rule " + (i + 1);
      li.setAttribute("data-field", "rules." + i);
      li.querySelector("legend").textContent = name;
      Array.prototype.forEach.call(li.querySelectorAll("[data-key]"), function (e) {
        e.setAttribute("data-field", "rules." + i + "." + e.getAttribute("data-key"));
      });
      li.querySelector(".weekdays").setAttribute("data-field", "rules." + i + ".weekdays");
      Array.prototype.forEach.call(li.querySelectorAll(".rule-tools button"), function (b) {
        var act = b.getAttribute("data-act");
        b.setAttribute("aria-label", act === "remove" ? "Remove rule " + (i + 1)
                                                      : "Move rule " + (i + 1) + " " + act);
        b.disabled = (act === "up" && i === 0) || (act === "down" && i === rows.length - 1);
      });
    });
    $("rule-add").disabled = rows.length >= 20;
  }

  /* A click on a rule's Move up / Move down / Remove; the focus stays on a button nearby. */
  function ruleAction(e) {
    var b = e.target.closest("button[data-act]");
    var li = b && b.closest("li.rule");
    var act, next;
    if (!li) { return; }
    act = b.getAttribute("data-act");
    clearErrors($("edit-form"));
    if (act === "remove") {
      next = li.nextElementSibling || li.previousElementSibling;
      li.remove();
      renumberRules();
      (next ? next.querySelector("button[data-act=remove]") : $("rule-add")).focus();
      return;
    }
    if (act === "up" && li.previousElementSibling) { li.parentNode.insertBefore(li, li.previousElementSibling); }
    if (act === "down" && li.nextElementSibling) { li.parentNode.insertBefore(li.nextElementSibling, li); }
    renumberRules();
    (b.disabled ? li.querySelector("button[data-act=" + (act === "up" ? "down" : "up") + "]") : b).focus();
  }

  function addRule() {
    var li = ruleRow({});
    $("rules").appendChild(li);
    renumberRules();
    li.querySelector("input").focus();
  }

  function collectRule(li) {
    var r = {};
    var days = [];
    RULE_FIELDS.forEach(function (f) {
      var v = li.querySelector('[data-key="' + f[0] + '"]').value.trim();
      if (f[3] === "list") {
        if (listOf(v).length) { r[f[0]] = listOf(v); }
      }
      else if (v || f[0] === "redirect_url") {
        r[f[0]] = v;
      }
    });
    Array.prototype.forEach.call(li.querySelectorAll(".weekdays input:checked"), function (c) {
      days.push(parseInt(c.value, 10));
    });
    if (days.length) { r.weekdays = days; }
    return r;
  }

  /* -- editing: the whole tracker -- */

  /* The editor's fields as they stand: the text of each input (as typed, untrimmed), the
   * tags' lines, and the rules as they would be sent. */
  function editorValues() {
    var v = {};
    ["redirect_url", "name", "tags", "valid_from", "valid_until", "max_scans", "expired_url"].forEach(function (k) {
      v[k] = $("ed-" + k).value;
    });
    v.rules = JSON.stringify(Array.prototype.map.call($("rules").children, collectRule));
    return v;
  }

  /* Opens the editor on the tracker as the API has it now (GET /tracker/show/<id>), not as
   * the list had it when the page opened: a change made elsewhere since is shown, and kept. */
  function openEditor() {
    var f = $("edit-form");
    var t = selected();
    var gen = state.generation;
    var id;
    if (!f.hidden) { closeForm(f, true); return; }
    if (!t || !state.canWrite || state.editLoading) { return; }
    id = t.tracker_id;
    state.editLoading = true;
    get("/tracker/show/" + id).then(function (res) {
      var i;
      if (gen !== state.generation || state.selected !== id || !f.hidden) { return; }
      i = state.trackers.findIndex(function (x) { return x.tracker_id === id; });
      if (i >= 0) { state.trackers[i] = res.body; }
      showDetailHead(res.body);
      fillEditor(res.body);
    }).catch(failed).then(function () { state.editLoading = false; });
  }

  function fillEditor(t) {
    var f = $("edit-form");
    $("ed-redirect_url").value = t.redirect_url;
    $("ed-name").value = t.name;
    /* One tag a line: a tag may hold commas, and keeps its spaces. */
    $("ed-tags").value = t.tags.join("\n");
    $("ed-valid_from").value = t.valid_from || "";
    $("ed-valid_until").value = t.valid_until || "";
    $("ed-max_scans").value = t.max_scans ? String(t.max_scans) : "";
    $("ed-expired_url").value = t.expired_url || "";
    $("ed-password").value = "";
    $("ed-password").disabled = false;
    $("ed-password-remove").checked = false;
    $("ed-password-remove-box").hidden = !t.password_protected;
    $("ed-password-state").textContent = t.password_protected
      ? "A scan asks for a password (it is never shown). Type a new one to change it."
      : "No password: scans go straight on. Type one to make scans ask for it.";
    clear($("rules"));
    (t.rules || []).forEach(function (r) { $("rules").appendChild(ruleRow(r)); });
    renumberRules();
    state.edit = { id: t.tracker_id, tags: t.tags.slice(), values: editorValues() };
    $("detail-saved").textContent = "";
    openForm(f);
  }

  /* The tags' lines: a line that is one of the tracker's tags as it was stays as it is;
   * others are trimmed; empty lines are dropped. */
  function tagLines(text, was) {
    return text.split(/\r?\n/).map(function (x) {
      return was.indexOf(x) >= 0 ? x : x.trim();
    }).filter(function (x) { return x.trim(); });
  }

  /* The PATCH body: only the fields changed since the form was filled (an emptied one
   * clears its setting); the password only when a new one is typed or its removal is
   * ticked. An empty object: nothing to send. */
  function editBody() {
    var now = editorValues(), was = state.edit.values;
    var body = {};
    var maxScans = now.max_scans.trim();
    function changed(k) { return now[k] !== was[k]; }
    if (changed("redirect_url")) { body.redirect_url = now.redirect_url.trim(); }
    if (changed("name")) { body.name = now.name.trim(); }
    if (changed("tags")) { body.tags = tagLines(now.tags, state.edit.tags); }
    if (changed("rules")) { body.rules = JSON.parse(now.rules); }
    ["valid_from", "valid_until", "expired_url"].forEach(function (k) {
      if (changed(k)) { body[k] = now[k].trim() || null; }
    });
    /* Not a small number: sent as typed, for the API to say what is wrong with it. */
    if (changed("max_scans")) {
      body.max_scans = /^[0-9]{1,10}$/.test(maxScans) ? parseInt(maxScans, 10) : maxScans || null;
    }
    if ($("ed-password-remove").checked) { body.password = null; }
    else if ($("ed-password").value) { body.password = $("ed-password").value; }
    return body;
  }

  function submitEdit(e) {
    var f = $("edit-form");
    var gen = state.generation;
    var t = selected();
    var before, body;
    e.preventDefault();
    if (!t || !state.edit || state.edit.id !== t.tracker_id) { return; }
    body = editBody();
    if (!Object.keys(body).length) {
      closeForm(f, true);
      $("detail-saved").textContent = "Nothing changed: nothing was sent.";
      return;
    }
    before = t.tags.join("\n");
    busy(f, true);
    call("PATCH", "/tracker/" + t.tracker_id, null, null, body).then(function (res) {
      var i = state.trackers.findIndex(function (x) { return x.tracker_id === t.tracker_id; });
      if (gen !== state.generation || i < 0) { return; }
      state.trackers[i] = res.body;
      fillTagFilter();
      renderTrackers();
      if (res.body.tags.join("\n") !== before) { fillDimensions(); }
      if (state.selected === t.tracker_id) {
        showDetailHead(res.body);
        closeForm(f, true);
        $("detail-saved").textContent = "Saved.";
        loadHistory(t.tracker_id, gen).catch(failed);
      }
    }, function (err) {
      if (gen === state.generation) { formFailed(f, err, "Not saved"); }
    }).then(function () { busy(f, false); });
  }

  function startForms() {
    $("new-tracker").addEventListener("click", openCreate);
    $("create-form").addEventListener("submit", submitCreate);
    $("detail-edit").addEventListener("click", openEditor);
    $("edit-form").addEventListener("submit", submitEdit);
    $("rule-add").addEventListener("click", addRule);
    $("rules").addEventListener("click", ruleAction);
    $("ed-password-remove").addEventListener("change", function () {
      $("ed-password").disabled = this.checked;
      if (this.checked) { $("ed-password").value = ""; }
    });
    ["create-form", "edit-form"].forEach(function (id) {
      var f = $(id);
      f.querySelector("[data-cancel]").addEventListener("click", function () { closeForm(f, true); });
      f.addEventListener("keydown", function (e) {
        if (e.key === "Escape") { e.preventDefault(); closeForm(f, true); }
      });
    });
  }

  /* ---- reports and crosstab ---------------------------------------------------------- */

  var KEYS = { name: "Tracker", type: "Type", tag: "Tag", date: "Date", browser: "Browser",
               city: "City", country: "Country" };

  function loadReport(gen) {
    var type = $("report-type").value;
    return get("/report/", Object.assign({ report: type }, window_(period()))).then(function (res) {
      var rows = res.body.data;
      var max = maxOf(rows.map(function (r) { return r.visits; }), 1);
      var box = $("report");
      if (gen !== state.generation) { return; }
      clear(box);
      var t = table([KEYS[type], "Visits", "Scans", "Clicks", "Unique visitors"], rows.map(function (r) {
        var meter = el("span", { cls: "meter" });
        meter.style.width = Math.round(60 * r.visits / max) + "px";
        return [type === "name" ? trackerLink(r.tracker_id, r.name) : r[type],
                el("span", {}, [meter, num(r.visits)]), num(r.scans), num(r.clicks), num(r.unique_visitors)];
      }), [false, true, true, true, true]);
      box.appendChild(t.tHead);
      box.appendChild(t.tBodies[0]);
      if (!rows.length) {
        box.appendChild(el("tbody", {}, [el("tr", {}, [el("td", { colspan: "5", cls: "none",
          text: "No visits in this period." })])]));
      }
    });
  }

  function dimensions() {
    var dims = new Map();
    state.trackers.forEach(function (t) {
      t.tags.forEach(function (g) { var i = g.indexOf(":"); if (i > 0) { dims.set(g.slice(0, i), true); } });
    });
    return Array.from(dims.keys()).sort();
  }

  function fillDimensions() {
    var dims = dimensions();
    var row = $("xt-row"), col = $("xt-col");
    var r0 = row.value, c0 = col.value;
    clear(row);
    clear(col);
    dims.forEach(function (d) {
      row.appendChild(el("option", { value: d, text: d }));
      col.appendChild(el("option", { value: d, text: d }));
    });
    if (dims.indexOf(r0) >= 0) { row.value = r0; }
    if (dims.indexOf(c0) >= 0) { col.value = c0; }
    else if (dims.length > 1) { col.value = dims[dims[0] === row.value ? 1 : 0]; }
    loadCrosstab(state.generation).catch(failed);
  }

  function loadCrosstab(gen) {
    var box = $("crosstab");
    var row = $("xt-row").value, col = $("xt-col").value;
    if (!row || !col) {
      clear(box).appendChild(el("p", { cls: "none",
        text: "Tag trackers with dimension:value tags (e.g. campaign:spring, region:eu) to cross them here." }));
      return Promise.resolve();
    }
    return get("/report/tag-crosstab", Object.assign({ row: row, col: col }, window_(period()))).then(function (res) {
      var d = res.body.data;
      var max = 1;
      d.matrix.forEach(function (row) { max = maxOf(row, max); });
      var t = el("table", { cls: "list heat" });
      var head = el("tr", {}, [el("th", { text: row + " \\ " + col })]);
      if (gen !== state.generation) { return; }
      d.cols.forEach(function (c) { head.appendChild(el("th", { cls: "num", text: c })); });
      head.appendChild(el("th", { cls: "num total", text: "total" }));
      t.appendChild(el("thead", {}, [head]));
      var body = el("tbody");
      d.rows.forEach(function (r, i) {
        var tr = el("tr", {}, [el("th", { cls: "rowhead", text: r })]);
        d.matrix[i].forEach(function (v, j) {
          var td = el("td", { cls: "cell", text: num(v), title: row + ":" + r + " × " + col + ":" + d.cols[j] });
          td.style.backgroundColor = "rgba(47, 111, 208, " + (v ? 0.1 + 0.75 * v / max : 0).toFixed(3) + ")";
          if (v / max > 0.6) { td.style.color = "#fff"; }
          tr.appendChild(td);
        });
        tr.appendChild(el("td", { cls: "cell total", text: num(d.row_totals[i]) }));
        body.appendChild(tr);
      });
      var tot = el("tr", {}, [el("th", { cls: "rowhead total", text: "total" })]);
      d.col_totals.forEach(function (v) { tot.appendChild(el("td", { cls: "cell total", text: num(v) })); });
      tot.appendChild(el("td", { cls: "cell total", text: num(d.total) }));
      body.appendChild(tot);
      t.appendChild(body);
      clear(box).appendChild(d.rows.length ? t : el("p", { cls: "none",
        text: "No tracker has both a " + row + " and a " + col + " tag." }));
    }, function (err) {
      /* Too many values of a dimension (422): said in the crosstab's own box. */
      if (gen !== state.generation || !(err instanceof ApiError) || err.status !== 422) { throw err; }
      clear(box).appendChild(el("p", { cls: "none", text: err.message }));
    });
  }

  /* ---- signing in and out ---------------------------------------------------------------- */

  function showSignIn(message) {
    $("app").hidden = true;
    $("who").hidden = true;
    $("period").hidden = true;
    $("signout").hidden = true;
    $("signin").hidden = false;
    showMessage(message || "");
    $("token").value = "";
    $("token").focus();
  }

  /* keepToken: the token stays in sessionStorage (sign-in failed for a reason other than
   * the token: a reload tries it again). */
  function signOut(message, keepToken) {
    stopPolling();
    if (!keepToken) { sessionStorage.removeItem(KEY); }
    state.generation++;
    state.token = null;
    state.account = null;
    state.trackers = [];
    state.selected = null;
    state.visits = [];
    state.loaded = null;
    state.loadFailed = null;
    state.edit = null;
    ["kpis", "portfolio-chart", "top-trackers", "detail-stats", "detail-chart", "breakdowns",
     "report", "crosstab", "history"].forEach(function (id) { clear($(id)); });
    clear($("trackers").tBodies[0]);
    clear($("visits").tBodies[0]);
    closeForm($("create-form"), false);
    closeForm($("edit-form"), false);
    $("detail").hidden = true;
    showSignIn(message);
  }

  function signIn(token) {
    token = (token || "").trim();
    if (!TOKEN_FORM.test(token)) {
      signOut("That is not an API token: a token is qrt_ followed by 40 letters and digits.");
      return;
    }
    get("/account", null, null, token).then(function (res) {
      sessionStorage.setItem(KEY, token);
      state.token = token;
      state.account = res.body;
      state.canWrite = canWrite(res.body);
      applyWriteMode();
      $("who").textContent = res.body.name + " · " + res.body.plan + " plan · " +
        (res.body.rate_limit ? res.body.rate_limit + " requests/min" : "no rate limit") +
        (state.canWrite ? "" : " · read-only token");
      $("signin").hidden = true;
      $("who").hidden = false;
      $("period").hidden = false;
      $("signout").hidden = false;
      $("app").hidden = false;
      showMessage("");
      loadAll();
    }, function (err) {
      if (err.status === 401) {
        signOut("This token was not accepted (401 Unauthenticated): it is unknown or revoked.");
      }
      else if (err.status === 403) {
        signOut("This token cannot use the API: " + err.message);
      }
      else {
        /* Not the token's fault (429 rate limit, 503, no connection): it is kept, and a
         * reload of the page later signs in with it. */
        if (!(err instanceof ApiError)) { err = new ApiError(0, String(err)); }
        sessionStorage.setItem(KEY, token);
        signOut("Signing in failed: " + err.message + " The token is kept: reload the page to try again.", true);
      }
    });
  }

  function loadAll() {
    var gen = ++state.generation;
    state.selected = null;
    stopPolling();
    closeForm($("edit-form"), false);
    $("detail").hidden = true;
    Promise.all([loadPortfolio(gen), loadTrackers(gen), loadReport(gen),
                 loadWebhooks(gen)]).then(function (r) {
      /* Everything loaded (the first tracker's view too): an earlier error is over. */
      if (gen === state.generation && r[1] !== false) { clearError(); }
    }, failed);
  }

  /* The account's webhooks: state, events waiting, and each one's latest attempts. */
  function attemptText(a) {
    var what = a.http_status ? "HTTP " + a.http_status : (a.error || "no answer");
    return shortTime(a.at) + " " + a.event_type + " #" + a.attempt + ": " + what +
      (a.next_attempt_at ? " (again " + shortTime(a.next_attempt_at) + ")" : "");
  }

  /* A button of a webhook's row, hidden for a read token: act() runs the request; the
   * button is used again only when it failed. */
  function hookButton(text, title, act) {
    var b = el("button", { type: "button", cls: "small", "data-write": "", text: text,
                           title: title });
    b.addEventListener("click", function () {
      b.disabled = true;
      act().catch(function (err) { b.disabled = false; failed(err); });
    });
    return b;
  }

  /* Disable / Enable again (PATCH /webhook/<id> {"enabled"}): the card is drawn again from
   * what the server then says. */
  function hookSwitch(id, enabled) {
    return hookButton(enabled ? "Disable" : "Enable again",
                      enabled ? "Stop deliveries (the events waiting are dropped)"
                              : "Deliver this webhook's events again", function () {
      return call("PATCH", "/webhook/" + id, null, null, { enabled: !enabled }).then(function () {
        return loadWebhooks(state.generation);
      });
    });
  }

  /* Send failed again (POST /webhook/<id>/recover): the events of the last week whose
   * retries were spent wait again; the message says how many. */
  function hookRecover(id) {
    return hookButton("Send failed again",
                      "Deliver again the events of the last week that failed every attempt",
                      function () {
      return call("POST", "/webhook/" + id + "/recover", null, null, {}).then(function (res) {
        showMessage(res.body.recovered === 1 ? "1 failed event waits for delivery again."
                    : num(res.body.recovered) + " failed events wait for delivery again.", true);
        return loadWebhooks(state.generation);
      });
    });
  }

  /* Send a test (POST /webhook/<id>/test): a webhook.test event waits for delivery; the
   * card is drawn again a few seconds later, its attempt among the latest. */
  function hookTest(id) {
    return hookButton("Send a test", "Send this webhook a webhook.test event", function () {
      return call("POST", "/webhook/" + id + "/test", null, null, {}).then(function (res) {
        var gen = state.generation;

        showMessage("A test event (" + res.body.event_id + ") waits for delivery.", true);
        setTimeout(function () {
          if (gen === state.generation) { loadWebhooks(gen).catch(failed); }
        }, 3000);
        return loadWebhooks(gen);
      });
    });
  }

  /* The webhooks with their state and latest attempts: one request (attempts=3). */
  function loadWebhooks(gen) {
    return get("/webhook", { rows: 100, attempts: 3 }).then(function (res) {
      if (gen !== state.generation) { return; }
      var hooks = res.body.data || [];
      $("webhook-count").textContent = hooks.length ? "(" + hooks.length + ")" : "";
      $("webhooks-card").hidden = hooks.length === 0;
      var body = clear($("webhooks").tBodies[0]);
      hooks.forEach(function (w) {
        var off = w.disabled_at ? "disabled " + shortTime(w.disabled_at) +
          (w.disabled_reason ? ": " + w.disabled_reason : "") : "active";
        var tr = el("tr", { "data-webhook": String(w.id) }, [
          el("td", { cls: "url", text: w.url }),
          el("td", { text: w.events.join(", ") }),
          el("td", { cls: w.disabled_at ? "bad" : "" }, [el("span", { text: off }), " ",
            hookSwitch(w.id, !w.disabled_at), " ",
            w.disabled_at ? null : hookRecover(w.id), " ",
            w.disabled_at ? null : hookTest(w.id)]),
          el("td", { cls: "num", text: num(w.pending) }),
          el("td", { cls: "num", text: num(w.failures) }),
          el("td", {}, (w.attempts || []).map(function (a) {
            return el("div", { cls: "attempt", text: attemptText(a) });
          }))
        ]);
        body.appendChild(tr);
      });
    });
  }

  /* #token=... : taken out of the address (and history) before anything else. */
  function tokenFromHash() {
    var m = /(?:^#|&)token=([^&]*)/.exec(location.hash);
    if (!m) { return null; }
    history.replaceState(null, "", location.pathname + location.search);
    try { return decodeURIComponent(m[1]); } catch (e) { return m[1]; }
  }

  function start() {
    var fromHash = tokenFromHash();
    $("openapi-link").href = API + "/openapi.json";
    $("signin-form").addEventListener("submit", function (e) {
      e.preventDefault();
      signIn($("token").value);
    });
    $("signout").addEventListener("click", function () { signOut("Signed out."); });
    $("period").addEventListener("click", function (e) {
      var d = e.target.getAttribute && e.target.getAttribute("data-days");
      if (!d) { return; }
      state.days = parseInt(d, 10);
      Array.prototype.forEach.call($("period").querySelectorAll("button"), function (b) {
        b.className = b === e.target ? "on" : "";
        b.setAttribute("aria-pressed", b === e.target ? "true" : "false");
      });
      loadAll();
    });
    startForms();
    $("filter-text").addEventListener("input", renderTrackers);
    $("filter-tag").addEventListener("change", renderTrackers);
    $("report-type").addEventListener("change", function () { loadReport(state.generation).catch(failed); });
    $("xt-row").addEventListener("change", function () { loadCrosstab(state.generation).catch(failed); });
    $("xt-col").addEventListener("change", function () { loadCrosstab(state.generation).catch(failed); });
    $("detail-style").addEventListener("change", codeLink);
    $("detail-format").addEventListener("change", codeLink);
    $("detail-code").addEventListener("click", downloadCode);
    $("detail-csv").addEventListener("click", function () {
      var t = state.trackers.find(function (x) { return x.tracker_id === state.selected; });
      if (t) { downloadCsv(t); }
    });
    document.addEventListener("visibilitychange", function () {
      if (document.hidden || state.selected === null) { return; }
      /* A view that failed to load is loaded again; a loaded one polls. */
      if (state.loaded === state.selected) { poll(state.selected, state.generation); }
      else if (state.loadFailed === state.selected) { selectTracker(state.selected); }
    });
    window.addEventListener("hashchange", function () {
      var t = tokenFromHash();
      if (t !== null) { signOut(); signIn(t); }
    });
    if (fromHash !== null) { signIn(fromHash); }
    else if (sessionStorage.getItem(KEY)) { signIn(sessionStorage.getItem(KEY)); }
    else { showSignIn(); }
  }

  start();
}());
