#!/bin/sh
# `make run`: mod_qrtrack in the foreground on 127.0.0.1:PORT with its data in DATA.
set -e
PORT=${1:-8080}
DATA=${2:-var}
TOP=$(cd "$(dirname "$0")/.." && pwd)
# The database and its WAL files are the server's alone: 0750 directories, and
# files 0640 (the module and qrtrack-admin create the database so).
umask 027
mkdir -p "$DATA/run" "$DATA/logs"
DATA=$(cd "$DATA" && pwd)
chmod 0750 "$DATA" "$DATA/run" "$DATA/logs"
ADMIN="$TOP/build/qrtrack-admin --params $DATA/qrtrack.db"

USER_LINES=""
if [ "$(id -u)" = 0 ]; then
    # httpd's children may not run as root: they run as www-data, which must
    # be able to reach and write the data directory (SQLite keeps WAL files there).
    USER_LINES="User www-data
Group www-data"
    d="$DATA"
    while [ "$d" != "/" ]; do
        d=$(dirname "$d")
        if ! su -s /bin/sh www-data -c "test -x '$d'" 2>/dev/null; then
            echo "make run: allowing www-data to pass through $d (chmod o+x) to reach $DATA"
            chmod o+x "$d"
        fi
    done
fi

if [ ! -s "$DATA/qrtrack.db" ]; then
    $ADMIN init >/dev/null
    $ADMIN account add demo --plan professional >/dev/null
    $ADMIN token add demo --name "make run" > "$DATA/demo-token"
    chmod 600 "$DATA/demo-token"
    echo "make run: created the demo account and its token in $DATA"
fi
[ "$(id -u)" = 0 ] && chown -R www-data:www-data "$DATA"
TOKEN=$(cat "$DATA/demo-token" 2>/dev/null || true)

sed -e "s|@DATA@|$DATA|g" -e "s|@PORT@|$PORT|g" \
    -e "s|@LIBEXEC@|$(apxs -q LIBEXECDIR)|g" -e "s|@MODULE@|$TOP/build/mod_qrtrack.so|g" \
    -e "s|@LOGLEVEL@|warn|g" -e "s|@DBDRIVER@|sqlite3|g" \
    -e "s|@DBDPARAMS@|$DATA/qrtrack.db|g" -e "s|@EXTRA@||g" "$TOP/conf/httpd.conf.in" \
    | awk -v u="$USER_LINES" '{ if ($0 == "@USER@") print u; else print }' > "$DATA/httpd.conf"

B="http://127.0.0.1:$PORT"
cat <<MSG

mod_qrtrack on $B (data in $DATA, log in $DATA/logs/error.log). Ctrl-C stops it.
Demo token: $TOKEN
Dashboard:  $B/qrtrack/#token=$TOKEN
OpenAPI:    $B/api/openapi.json

  curl -s -H "Authorization: Bearer $TOKEN" $B/api/account
  curl -s -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" \\
       -d '{"redirect_url": "https://example.com/spring", "tags": ["campaign:spring"]}' $B/api/tracker
  curl -s "$B/api/tracker?api_token=$TOKEN"
  curl -s -o wifi.png -H "Authorization: Bearer $TOKEN" -F type=wifi -F network_name=Guest \\
       -F network_password=secret $B/api/qrCode

MSG
exec "$(apxs -q SBINDIR)/apache2" -f "$DATA/httpd.conf" -DFOREGROUND
