#!/bin/sh
# make test-asan: writes DIR/apache2, which runs the real httpd (REAL, not built with
# the sanitizers itself) with AddressSanitizer's and UBSan's runtimes preloaded, so the
# sanitizer-built mod_qrtrack.so can be loaded into it. The tests find DIR/apache2 through
# QRT_TEST_BUILD=DIR and pass ASAN_OPTIONS/UBSAN_OPTIONS (log_path) in the environment.
# Usage: sh tools/asan_httpd.sh DIR REAL
set -eu
dir=$1
real=$2
asan=$(gcc -print-file-name=libasan.so)
ubsan=$(gcc -print-file-name=libubsan.so)
for lib in "$asan" "$ubsan"; do
    if [ ! -e "$lib" ]; then
        echo "asan_httpd.sh: no $lib (gcc's sanitizer runtimes: libasan8, libubsan1)" >&2
        exit 1
    fi
done
mkdir -p "$dir"
cat > "$dir/apache2.tmp" <<WRAPPER
#!/bin/sh
LD_PRELOAD="$asan $ubsan\${LD_PRELOAD:+ \$LD_PRELOAD}"
export LD_PRELOAD
exec "$real" "\$@"
WRAPPER
chmod 0755 "$dir/apache2.tmp"
mv "$dir/apache2.tmp" "$dir/apache2"
