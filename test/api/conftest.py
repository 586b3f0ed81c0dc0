"""Black-box tests of mod_qrtrack against a real, two-process httpd (event MPM).

The server is started once per session on a free loopback port with a config
generated from conf/httpd.conf.in, and stopped by its PID at the end. Any crash
line in its error log fails the run.

QRT_TEST_BACKEND=sqlite (default) or pgsql chooses the database. For pgsql the
session starts a throwaway PostgreSQL cluster from Debian's packages (initdb into a
temporary directory as the postgres user, a free loopback port) and gives every
server its own database in it; the cluster is stopped by its PID at the end.
"""
import pytest

import lib.server

# Everything shared lives in lib/; re-exported here for the tests and benches that
# import it from conftest.
from lib.env import *  # noqa: F401,F403
from lib.env import TOP, BUILD, ADMIN, MODULE, REPORTS, OPENAPI, BACKEND, HTTPD, apxs  # noqa: F401
from lib.pg import PgCluster, pg_cluster  # noqa: F401
from lib.memcached import Memcached  # noqa: F401
from lib.server import Server, configtest, start_server, started, two_nodes  # noqa: F401
from lib.openapi import OpenApiDoc, openapi  # noqa: F401
from lib.api import Api, PlainApi  # noqa: F401
from lib.wait import wait_until  # noqa: F401


@pytest.fixture(scope="session")
def server():
    srv = start_server(
        extra="QRTrackAccountRateLimit bigco 300\n",
        accounts=[("acme", "professional"), ("other", "professional"),
                  ("bigco", "enterprise"), ("freebie", "free"), ("startup", "starter")])
    yield srv
    srv.stop()
    logs = srv.error_log() + srv.access_log()
    leaked = [t for t in srv.tokens if t in logs]
    srv.cleanup()
    assert not leaked, "a token appears in a log"


@pytest.fixture
def token(server):
    """A fresh token of account acme: each test gets its own rate-limit window."""
    return server.unused_token("acme")


@pytest.fixture
def api(server, token):
    with Api(server, token) as s:
        yield s


@pytest.fixture
def other_api(server):
    """A caller of another account."""
    with Api(server, server.unused_token("other")) as s:
        yield s


@pytest.fixture
def anon(server):
    with Api(server) as s:
        yield s
# Tests marked slow without touching their files: the package build, the browser tests
# (those using the `browser` fixture) and the long timing tests named here.
SLOW_MODULES = {"test_package.py"}
SLOW_TESTS = {   # the longest of the SQLite pass, as pytest --durations lists them
    "test_long_new_strings_do_not_grow_the_writer",
    "test_immediate_stops_under_scans_crash_nothing_and_lose_nothing_acknowledged",
    "test_children_killed_mid_scan_leave_the_queue_usable",
    "test_a_full_disk_answers_503_and_service_returns_under_load_once_space_is_freed",
    "test_a_database_locked_from_outside_keeps_scans_redirected_and_records_them_after",
    "test_writes_on_a_sqlite_database_locked_from_outside_answer_503_within_the_timeout",
    "test_the_writers_seal_settled_days",
    "test_imported_visits_make_their_days_stale_at_once",
    "test_memcached_down_counts_per_node_then_back_to_memcached",
    "test_kill_9_of_the_delivering_child_loses_no_event",
    "test_a_hanging_receiver_keeps_the_childrens_memory_flat",
}


# Slow tests that assert nothing about time, nor about memory that other tests' load could
# move (the hanging receiver's test measures its own server's children, mostly waiting
# out delivery timeouts): they run two at a time with the rest.
UNBOUND_SLOW_TESTS = {
    "test_the_writers_seal_settled_days",
    "test_imported_visits_make_their_days_stale_at_once",
    "test_a_hanging_receiver_keeps_the_childrens_memory_flat",
}


# Tests that `make test` runs alone, after the others have run two at a time (pytest-xdist):
# those that assert a time bound or a memory bound under load, the browser's (a browser
# beside two passes' servers takes as much CPU again as it saves here), and the slow ones
# but those above and the package build.
SERIAL_MODULES = {
    "test_ratelimit_cluster.py", "test_timeouts.py", "test_faults.py", "test_outage.py",
    "test_crosstab_bounds.py", "test_dict_bound.py", "test_nodes.py", "test_dashboard.py",
    "test_graceful.py",
}
# ... and single tests that assert a time bound, in modules whose other tests need not wait
SERIAL_TESTS = {
    "test_a_hanging_receiver_times_out_and_scans_keep_their_latency",
    "test_a_hanging_receiver_does_not_hold_up_other_webhooks",
    # (its checkpoint thread must get the CPU as soon as a commit wakes it, which the
    # shared passes' group, whose processes get only the CPU left over, does not promise)
    "test_commits_that_lengthen_the_wal_wake_the_checkpoint_thread",
    # (a bulk of 1,000 trackers in 5 s: in the shared passes' group, which gets only the
    # CPU left over, PostgreSQL's took 6 s once)
    "test_bulk_of_1000_in_one_transaction_under_a_second",
}
# ... but tests of those modules that only wait for the module's own clock (the snapshot's
# margin of 10 s), asserting no bound that other tests' load could move
SHARED_TESTS = {
    "test_a_bulk_of_trackers_is_written_to_the_snapshot_a_few_times_not_every_second",
}


# The longest modules first (a module's tests run on one worker: --dist loadfile), so that
# the short ones fill the workers' ends rather than a long one running last on its own.
LONG_MODULES = ["test_package.py", "test_listed_hold.py", "test_reports.py",
                "test_webhooks_delivery.py", "test_trackers.py",
                "test_visits.py", "test_styles.py", "test_sealed.py", "test_pg_visits_brin.py",
                "test_search_bound.py", "test_print.py", "test_dict_refs.py",
                "test_pg_visit_indexes.py", "test_pg_narrow_links.py", "test_compact.py",
                "test_migrate.py"]


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONG_MODULES)}
    items.sort(key=lambda item: rank.get(item.fspath.basename, len(LONG_MODULES)))
    for item in items:
        slow = (item.fspath.basename in SLOW_MODULES
                or "browser" in getattr(item, "fixturenames", ())
                or item.name.split("[")[0] in SLOW_TESTS)
        if slow:
            item.add_marker(pytest.mark.slow)
        unbound = (item.fspath.basename in SLOW_MODULES
                   or item.name.split("[")[0] in UNBOUND_SLOW_TESTS)
        if ((slow and not unbound) or item.fspath.basename in SERIAL_MODULES
                or item.name.split("[")[0] in SERIAL_TESTS) \
                and item.name.split("[")[0] not in SHARED_TESTS:
            item.add_marker(pytest.mark.serial)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    lib.server.CLEANED.clear()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failing test's report carries the module's latest log lines of each server (a
    failure seen only in CI then says whether a node left the database, say)."""
    outcome = yield
    rep = outcome.get_result()
    if rep.failed and call.when in ("setup", "call"):
        text = lib.server.log_digest()
        if text:
            rep.sections.append(("qrtrack error logs", text))
