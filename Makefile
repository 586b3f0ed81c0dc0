# mod_qrtrack: tracked QR codes and scan analytics for Apache httpd 2.4
#
#   make          build/mod_qrtrack.so and build/qrtrack-admin
#   make run      the service in the foreground on 127.0.0.1:$(PORT)
#   make test     install what is missing, build, lint the OpenAPI document, run unit and API tests
#   make bench    benchmarks (never part of make test)
#   make install  module, qrtrack-admin and configs in Debian's layout (DESTDIR=, PREFIX=, ...)

APXS    ?= apxs
CC      ?= cc
PYTHON  ?= /usr/bin/python3
PORT    ?= 8080
DATA    ?= var

PKGS     = apr-1 apr-util-1 jansson libqrencode libpng libpcre2-8 yaml-0.1 libcrypto libmaxminddb \
           sqlite3
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CHECK_CFLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   = $(shell pkg-config --libs check 2>/dev/null)

OPT     ?= -O2 -g
WARN     = -Wall -Wextra
CFLAGS_CORE = $(OPT) $(WARN) -fPIC -Imod_qrtrack -Ibuild/gen $(PKG_CFLAGS)

CORE_SRC  = $(filter-out $(CORE_EXCLUDE),$(sort $(wildcard mod_qrtrack/qrt_*.c)))
CORE_OBJ  = $(patsubst mod_qrtrack/%.c,build/obj/%.o,$(CORE_SRC)) build/obj/qrt_schema_sql.o \
            build/obj/qrt_assets.o
CORE_HDR  = $(wildcard mod_qrtrack/*.h)
MOD_SRC   = $(sort $(wildcard mod_qrtrack/mod_qrtrack*.c))
SQL_FILES = $(sort $(wildcard sql/[0-9]*.sql))
# Served by the module: the OpenAPI document (GET <api>/openapi.json) and the dashboard.
ASSET_FILES = openapi/qrtrack.json dashboard/index.html dashboard/app.js dashboard/app.css \
            dashboard/favicon.svg
UNIT_SRC  = $(sort $(wildcard test/unit/test_*.c))
UNIT_BIN  = $(patsubst test/unit/%.c,build/unit/%,$(UNIT_SRC))
FUZZ_SRC  = $(sort $(wildcard test/fuzz/fuzz_*.c))
FUZZ_BIN  = $(patsubst test/fuzz/%.c,build/fuzz/%,$(FUZZ_SRC))

# `make install`: Debian's layout by default; every path can be overridden.
PREFIX        ?= /usr
SBINDIR       ?= $(PREFIX)/sbin
DOCDIR        ?= $(PREFIX)/share/doc/libapache2-mod-qrtrack
APACHE_MODDIR ?= $(shell $(APXS) -q LIBEXECDIR)
APACHE_MODCONF ?= /etc/apache2/mods-available
APACHE_MAINCONF ?= /etc/apache2/apache2.conf
STATEDIR      ?= /var/lib/qrtrack

.PHONY: all deps run test unit lint-openapi api api-sqlite api-pgsql fuzz bench clean install

all: build/mod_qrtrack.so build/qrtrack-admin

deps:
	sh build/deps.sh

build/gen/qrt_schema_sql.c: $(SQL_FILES) build/embed_sql.sh
	@mkdir -p build/gen
	sh build/embed_sql.sh $(SQL_FILES) > $@

build/obj/qrt_schema_sql.o: build/gen/qrt_schema_sql.c
	@mkdir -p build/obj
	$(CC) $(CFLAGS_CORE) -c $< -o $@

build/gen/qrt_assets.c: $(ASSET_FILES) build/embed_files.sh
	@mkdir -p build/gen
	sh build/embed_files.sh $(ASSET_FILES) > $@.tmp && mv -f $@.tmp $@

build/obj/qrt_assets.o: build/gen/qrt_assets.c mod_qrtrack/qrt_assets.h
	@mkdir -p build/obj
	$(CC) $(CFLAGS_CORE) -c $< -o $@

build/obj/%.o: mod_qrtrack/%.c $(CORE_HDR)
	@mkdir -p build/obj
	$(CC) $(CFLAGS_CORE) -c $< -o $@

build/libqrt.a: $(CORE_OBJ)
	rm -f $@
	ar rcs $@ $(CORE_OBJ)

# apxs compiles the glue and links it with the core library into a DSO.
build/mod_qrtrack.so: $(MOD_SRC) $(CORE_HDR) build/libqrt.a
	@mkdir -p build/apxs
	cp $(MOD_SRC) mod_qrtrack/*.h build/apxs/
	cd build/apxs && $(APXS) -c -o mod_qrtrack.la \
	    -Wc,"$(OPT) $(WARN) -I../../mod_qrtrack $(PKG_CFLAGS)" \
	    $(notdir $(MOD_SRC)) ../libqrt.a $(PKG_LIBS) >apxs.log 2>&1 \
	    || { cat apxs.log; exit 1; }
	@grep -E "warning:|error:" build/apxs/apxs.log || true
	cp build/apxs/.libs/mod_qrtrack.so $@.tmp && mv -f $@.tmp $@

build/qrtrack-admin: admin/qrtrack_admin.c $(CORE_HDR) build/libqrt.a
	$(CC) $(OPT) $(WARN) -Imod_qrtrack $(PKG_CFLAGS) $< build/libqrt.a $(PKG_LIBS) $(LDFLAGS) -o $@

# The installed qrtrack-admin: without --driver/--params it reads DBDriver/DBDParams from
# the Apache config ($(APACHE_MAINCONF) and what it includes), else uses
# $(STATEDIR)/qrtrack.db. build/qrtrack-admin keeps the development default var/qrtrack.db.
build/installed/qrtrack-admin: admin/qrtrack_admin.c $(CORE_HDR) build/libqrt.a
	@mkdir -p build/installed
	$(CC) $(OPT) $(WARN) -Imod_qrtrack $(PKG_CFLAGS) -DQRT_ADMIN_INSTALLED \
	    -DQRT_ADMIN_APACHE_CONF='"$(APACHE_MAINCONF)"' \
	    -DQRT_ADMIN_DEFAULT_DB='"$(STATEDIR)/qrtrack.db"' \
	    $< build/libqrt.a $(PKG_LIBS) $(LDFLAGS) -o $@

install: build/mod_qrtrack.so build/installed/qrtrack-admin
	install -d $(DESTDIR)$(APACHE_MODDIR) $(DESTDIR)$(SBINDIR) $(DESTDIR)$(APACHE_MODCONF) \
	    $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(STATEDIR)
	install -m 644 build/mod_qrtrack.so $(DESTDIR)$(APACHE_MODDIR)/mod_qrtrack.so
	install -m 755 build/installed/qrtrack-admin $(DESTDIR)$(SBINDIR)/qrtrack-admin
	sed -e 's|/usr/lib/apache2/modules/mod_qrtrack.so|$(APACHE_MODDIR)/mod_qrtrack.so|' \
	    conf/qrtrack.load > $(DESTDIR)$(APACHE_MODCONF)/qrtrack.load
	sed -e 's|/var/lib/qrtrack/|$(STATEDIR)/|' \
	    conf/qrtrack.conf > $(DESTDIR)$(APACHE_MODCONF)/qrtrack.conf
	chmod 644 $(DESTDIR)$(APACHE_MODCONF)/qrtrack.load $(DESTDIR)$(APACHE_MODCONF)/qrtrack.conf
	install -m 644 conf/qrtrack-site.conf $(DESTDIR)$(DOCDIR)/examples/qrtrack-site.conf

build/unit/%: test/unit/%.c build/libqrt.a $(CORE_HDR) test/unit/qrt_check.h
	@mkdir -p build/unit
	$(CC) $(OPT) $(WARN) -Imod_qrtrack -Itest/unit $(PKG_CFLAGS) $(CHECK_CFLAGS) $< build/libqrt.a \
	    $(PKG_LIBS) $(CHECK_LIBS) -lpthread -o $@

unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; (cd test/unit && ../../$$t); done

# The OpenAPI document, linted with @redocly/cli (build/deps.sh installs the version pinned
# in openapi/package-lock.json into build/redocly). No telemetry, no update check.
REDOCLY = build/redocly/node_modules/.bin/redocly
lint-openapi:
	@test -x $(REDOCLY) || sh build/deps.sh
	REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
	    $(REDOCLY) lint --config openapi/redocly.yaml --format stylish openapi/qrtrack.json

# The API suite runs on both backends: SQLite, then PostgreSQL (a throwaway cluster
# that the tests start and stop themselves).
api: all
	QRT_TEST_BACKEND=sqlite $(PYTHON) -m pytest -q test/api
	QRT_TEST_BACKEND=pgsql $(PYTHON) -m pytest -q test/api

api-sqlite api-pgsql: api-%: all
	QRT_TEST_BACKEND=$* $(PYTHON) -m pytest -q test/api $(PYTEST_ARGS)

test: deps
	$(MAKE) all unit_bins
	$(MAKE) lint-openapi
	$(MAKE) unit
	$(MAKE) api

unit_bins: $(UNIT_BIN)

build/fuzz/%: test/fuzz/%.c $(CORE_SRC) $(CORE_HDR) build/gen/qrt_schema_sql.c
	@mkdir -p build/fuzz
	clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Imod_qrtrack -Ibuild/gen $(PKG_CFLAGS) \
	    $< $(CORE_SRC) build/gen/qrt_schema_sql.c $(PKG_LIBS) -o $@

# Each fuzz target runs for FUZZ_SECONDS (default 60).
FUZZ_SECONDS ?= 60
fuzz: $(FUZZ_BIN)
	@set -e; for f in $(FUZZ_BIN); do mkdir -p build/corpus/$$(basename $$f); \
	    $$f -max_total_time=$(FUZZ_SECONDS) build/corpus/$$(basename $$f); done

run: deps all
	sh conf/run.sh "$(PORT)" "$(DATA)"

bench: deps all
	$(PYTHON) bench/bench.py

clean:
	rm -rf build/obj build/gen build/apxs build/unit build/fuzz build/corpus \
	    build/libqrt.a build/mod_qrtrack.so build/qrtrack-admin build/installed
