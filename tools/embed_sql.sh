#!/bin/sh
# Turns sql/NNN_*.sql into a C table of schema migrations (build/gen/qrt_schema_sql.c).
echo '/* Generated from sql/ by tools/embed_sql.sh: do not edit. */'
echo '#include "qrt_schema.h"'
echo 'const qrt_migration_t qrt_migrations[] = {'
for f in "$@"; do
    v=$(basename "$f" | sed 's/^0*\([0-9][0-9]*\)_.*/\1/')
    printf '    { %s, "%s",\n' "$v" "$(basename "$f")"
    sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^\(.*\)$/      "\1\\n"/' "$f"
    echo '    },'
done
echo '    { 0, NULL, NULL }'
echo '};'
