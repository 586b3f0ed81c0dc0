"""The API tests' library: servers, PostgreSQL, memcached, the OpenAPI checker,
the API clients, visits and waiting. Test files import from here (or from conftest,
which re-exports it), never from each other."""
