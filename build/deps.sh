#!/bin/sh
# Installs the Debian packages mod_qrtrack needs to build, run and test.
# Runs apt-get only when something is missing, so a second `make test` is quick.
set -e
PKGS="apache2 apache2-dev libaprutil1-dbd-sqlite3 libjansson-dev libqrencode-dev
libpng-dev libssl-dev libsqlite3-dev sqlite3 libmaxminddb-dev libpcre2-dev libyaml-dev
uap-core check pkg-config make gcc clang libclang-rt-14-dev zbar-tools wrk
python3-pytest python3-requests libmaxmind-db-writer-perl curl procps
postgresql libaprutil1-dbd-pgsql memcached python3-jsonschema
chromium chromium-driver python3-selenium"
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
    $SUDO apt-get update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends $missing
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
