"""Webhooks for the delivery tests: subscriptions and outbox events written straight into
the database as CONTRACT section 7 and sql/026_webhooks.sql say (until the webhook API
makes them), a receiver on a loopback port, and the Standard Webhooks verification."""
import base64
import hashlib
import hmac
import http.server
import json
import secrets
import sys
import threading
import time

from lib.env import free_port

# webhooks.events bits (qrt_webhook.h)
EVENTS = {"scan.created": 1, "click.created": 2, "tracker.created": 4,
          "tracker.updated": 8, "tracker.deleted": 16, "tracker.expired": 32}
PENDING, DELIVERED, FAILED, DROPPED = 0, 1, 2, 3


def new_secret():
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def new_msg_id():
    return "msg_" + secrets.token_urlsafe(18)      # 24 URL-safe characters


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _q(s):
    return "NULL" if s is None else "'" + str(s).replace("'", "''") + "'"


def _one(srv, query):
    return srv.sql(query).strip().splitlines()[0]


def account_id(srv, name="acme"):
    return int(_one(srv, "SELECT id FROM accounts WHERE name = %s" % _q(name)))


def add_webhook(srv, url, account="acme", events=("tracker.expired",), secret=None):
    """A subscription; (id, secret). By default to an event the tests never make happen:
    a test's events are the ones it adds (add_event), not those of other tests' scans."""
    secret = secret or new_secret()
    mask = sum(EVENTS[e] for e in events)
    wid = int(_one(srv, "INSERT INTO webhooks (account_id, url, events, secret, created_at) "
                        "VALUES (%d, %s, %d, %s, %d) RETURNING id"
                   % (account_id(srv, account), _q(url), mask, _q(secret), int(time.time()))))
    return wid, secret


def event_body(etype, data, t):
    return json.dumps({"type": etype, "timestamp": iso(t), "data": data},
                      separators=(",", ":"))


def add_events(srv, webhook_id, trackers, etype="scan.created", due=None):
    """Outbox rows, one per tracker id of `trackers` (in that order, ids ascending), as
    the writer makes them; their msg_ids."""
    now = int(time.time())
    rows, ids = [], []
    for i, tid in enumerate(trackers):
        mid = new_msg_id()
        ids.append(mid)
        body = event_body(etype, {"tracker_id": tid, "seq": i}, now)
        rows.append("(%d, %s, %s, %s, %s, %d, %d)" % (
            webhook_id, _q(mid), _q(etype), "NULL" if tid is None else int(tid), _q(body), now,
            due if due is not None else now))
    for k in range(0, len(rows), 500):
        srv.sql("INSERT INTO webhook_events (webhook_id, msg_id, event_type, tracker_id, body, "
                "created_at, next_attempt_at) VALUES " + ",".join(rows[k:k + 500]))
    return ids


def add_event(srv, webhook_id, tracker_id=1, etype="scan.created"):
    return add_events(srv, webhook_id, [tracker_id], etype)[0]


def events(srv, webhook_id):
    """{msg_id: (state, attempts)}"""
    out = {}
    for line in srv.sql("SELECT msg_id, state, attempts FROM webhook_events WHERE webhook_id "
                        "= %d" % webhook_id).splitlines():
        mid, state, attempts = line.split("|")
        out[mid] = (int(state), int(attempts))
    return out


def attempts(srv, webhook_id):
    """[(event msg_id, attempt, http_status or None, error, at, next_attempt_at or None)]
    in order."""
    out = []
    for line in srv.sql("SELECT e.msg_id, a.attempt, a.http_status, a.error, a.at, "
                        "a.next_attempt_at FROM webhook_attempts a JOIN webhook_events e "
                        "ON e.id = a.event_id WHERE a.webhook_id = %d ORDER BY a.id"
                        % webhook_id).splitlines():
        mid, n, status, error, at, nxt = line.split("|", 5)
        out.append((mid, int(n), int(status) if status else None, error, int(at),
                    int(nxt) if nxt else None))
    return out


def webhook_row(srv, webhook_id):
    """(failures, disabled_at or None, disabled_reason)"""
    f, at, why = _one(srv, "SELECT failures, disabled_at, disabled_reason FROM webhooks "
                           "WHERE id = %d" % webhook_id).split("|", 2)
    return int(f), int(at) if at else None, why


def verify(secret, headers, body):
    """The Standard Webhooks check a receiver makes: True when one of the signatures of
    webhook-signature is HMAC-SHA256(key, id.timestamp.body) with the secret's key."""
    key = base64.b64decode(secret[len("whsec_"):] if secret.startswith("whsec_") else secret)
    signed = ("%s.%s." % (headers["webhook-id"], headers["webhook-timestamp"])).encode() + body
    want = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    for sig in headers["webhook-signature"].split(" "):
        version, _, value = sig.partition(",")
        if version == "v1" and hmac.compare_digest(value, want):
            return True
    return False


class Receiver:
    """An HTTP/1.1 receiver on 127.0.0.1 (keep-alive). Every request is recorded as
    (time, path, headers with lower-case names, body); `respond(path, n)` (n: the
    request's number on that path, from 0) gives (status, headers dict, delay in
    seconds), default 200 at once."""

    def __init__(self, respond=None):
        self.requests = []
        self.lock = threading.Lock()
        self.respond = respond or (lambda path, n: (200, {}, 0))
        self.counts = {}
        self.stopping = threading.Event()
        rec = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # the answer's head and body go in two writes: without TCP_NODELAY the body
            # waits for the worker's delayed ACK, some 40 ms a delivery
            disable_nagle_algorithm = True

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("content-length", "0"))
                body = self.rfile.read(n)
                with rec.lock:
                    k = rec.counts.get(self.path, 0)
                    rec.counts[self.path] = k + 1
                    rec.requests.append((time.time(), self.path,
                                         {h.lower(): v for h, v in self.headers.items()}, body,
                                         self.client_address[1]))
                status, headers, delay = rec.respond(self.path, k)
                if delay:
                    rec.stopping.wait(delay)
                out = b'{"ok":true}'
                try:
                    self.send_response(status)
                    for h, v in headers.items():
                        self.send_header(h, v)
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                except OSError:
                    pass

        class Srv(http.server.ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 256

            def handle_error(self, request, client_address):
                # a sender that gave up on a delivery (its timeout, a child killed)
                # resets the connection: expected here, not the receiver's failure
                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)

        self.port = free_port()
        self.httpd = Srv(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path="/hook"):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def got(self, path=None):
        with self.lock:
            return [r for r in self.requests if path is None or r[1] == path]

    def stop(self):
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def status_lines(srv):
    from lib.server import qrtrack_status
    return qrtrack_status(srv)


STATUS_CONF = ("LoadModule status_module %s/mod_status.so\n<Location /server-status>\n"
               "    SetHandler server-status\n</Location>\n")
