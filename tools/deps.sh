#!/bin/sh
# Installs the Debian packages mod_qrtrack needs to build, run and test.
# Runs apt-get only when something is missing, so a second `make test` is quick.
set -e
PKGS="apache2 apache2-dev libaprutil1-dbd-sqlite3 libjansson-dev libqrencode-dev
libpng-dev libssl-dev libsqlite3-dev sqlite3 libmaxminddb-dev libpcre2-dev libyaml-dev
uap-core check pkg-config make gcc clang libclang-rt-14-dev zbar-tools wrk
python3-pytest python3-pytest-xdist python3-requests libmaxmind-db-writer-perl curl procps
postgresql libaprutil1-dbd-pgsql memcached python3-jsonschema python3-psycopg2
chromium chromium-driver python3-selenium
debhelper dpkg-dev fakeroot build-essential
libcairo2-dev zlib1g-dev librsvg2-bin poppler-utils ghostscript unzip libcurl4-openssl-dev
gdb openssl libfaketime"
# openssl: the certificate of test_tls.py's TLS site.
# libfaketime: test_clock.py sets the test server's wall clock back.
# python3-psycopg2: the tests read PostgreSQL through kept connections (test/api/lib/pg.py).
# gdb: a test server's child that crashes leaves a core, whose backtrace the test's
# failure prints (test/api/lib/server.py).
# The Debian package (test/api/test_package.py) builds with debhelper and dh-apache2,
# which apache2-dev provides.
missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
if [ -n "$missing" ]; then
    echo "deps: installing$missing"
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    # Installing apache2 (or anything with a service) must not leave the system's
    # server running: invoke-rc.d asks /usr/sbin/policy-rc.d, which says no (101)
    # while we install; one that was there already stays as it is.
    pidfile=/var/run/apache2/apache2.pid
    running_before=""
    [ -s $pidfile ] && kill -0 "$(cat $pidfile)" 2>/dev/null && running_before=yes
    policy=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        policy=/usr/sbin/policy-rc.d
        printf '#!/bin/sh\n# mod_qrtrack tools/deps.sh: no service starts while it installs\nexit 101\n' \
            | $SUDO tee $policy >/dev/null
        $SUDO chmod 755 $policy
    fi
    rc=0
    { $SUDO apt-get update \
      && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends \
             $missing; } || rc=$?
    [ -z "$policy" ] || $SUDO rm -f "$policy"
    # Should an apache2 have started anyway, stop it by the PID in its pid file.
    if [ -z "$running_before" ] && [ -s $pidfile ] && pid=$(cat $pidfile) \
       && kill -0 "$pid" 2>/dev/null; then
        echo "deps: stopping the apache2 that the installation started (pid $pid)"
        $SUDO kill -TERM "$pid" || true
    fi
    [ $rc = 0 ] || exit $rc
fi

# The OpenAPI linter (@redocly/cli, pinned with its whole tree in openapi/package-lock.json)
# goes to build/redocly. Node.js and npm come from Debian unless a node is already there.
if ! command -v npm >/dev/null 2>&1; then
    echo "deps: installing nodejs npm"
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends nodejs npm
fi
top=$(cd "$(dirname "$0")/.." && pwd)
lint="$top/build/redocly"
if [ ! -x "$lint/node_modules/.bin/redocly" ] \
   || ! cmp -s "$top/openapi/package-lock.json" "$lint/package-lock.json"; then
    echo "deps: installing the OpenAPI linter in build/redocly"
    rm -rf "$lint"
    mkdir -p "$lint"
    cp "$top/openapi/package.json" "$top/openapi/package-lock.json" "$lint/"
    (cd "$lint" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi
