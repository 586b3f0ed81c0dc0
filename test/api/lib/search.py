"""Search oracles over the visits a test made."""
import json
import os
import pytest
from lib.api import Api
from lib.server import start_server
from lib.visits import T0, export, import_visits, listing, new_tracker, ts, visit


FIELDS = ["browser", "os", "device", "country", "city", "referer", "user_agent", "ip"]


IPHONE = ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 "
          "(KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1")


def fold(s):
    """ASCII letters lowered, nothing else (SQLite's LIKE; the pattern on PostgreSQL)."""
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in s)


def oracle(visits, word):
    w = fold(word)
    return [v for v in visits
            if any(v[f] is not None and w in fold(str(v[f])) for f in FIELDS)]


def _epoch(s):
    import calendar
    import time
    return calendar.timegm(time.strptime(s[:19], "%Y-%m-%dT%H:%M:%S"))
