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

# Everything shared lives in lib/; re-exported here for the tests and benches that
# import it from conftest.
from lib.env import *  # noqa: F401,F403
from lib.env import TOP, BUILD, ADMIN, MODULE, REPORTS, OPENAPI, BACKEND, HTTPD, apxs  # noqa: F401
from lib.pg import PgCluster, pg_cluster  # noqa: F401
from lib.memcached import Memcached  # noqa: F401
from lib.server import Server, configtest, start_server  # noqa: F401
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
    return server.token("acme")


@pytest.fixture
def api(server, token):
    with Api(server, token) as s:
        yield s


@pytest.fixture
def other_api(server):
    """A caller of another account."""
    with Api(server, server.token("other")) as s:
        yield s


@pytest.fixture
def anon(server):
    with Api(server) as s:
        yield s
