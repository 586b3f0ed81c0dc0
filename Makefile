# mod_qrtrack: tracked QR codes and scan analytics for Apache httpd 2.4
#
#   make          build/mod_qrtrack.so and build/qrtrack-admin
#   make run      the service in the foreground on 127.0.0.1:$(PORT)
#   make test     install what is missing, build, lint the OpenAPI document, run unit and API tests
#   make test-asan  the same unit and API tests with the module, the core and qrtrack-admin
#                 built with AddressSanitizer + UBSan (build/asan) and loaded into httpd
#   make bench    benchmarks (never part of make test)
#   make install  module, qrtrack-admin and configs in Debian's layout (DESTDIR=, PREFIX=, ...)

APXS    ?= apxs
CC      ?= cc
PYTHON  ?= /usr/bin/python3
PORT    ?= 8080
DATA    ?= var

PKGS     = apr-1 apr-util-1 jansson libqrencode libpng libpcre2-8 yaml-0.1 libcrypto libmaxminddb \
           sqlite3 cairo cairo-pdf cairo-ps zlib libcurl
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm
CHECK_CFLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   = $(shell pkg-config --libs check 2>/dev/null)

OPT     ?= -O2 -g
# make test compiles this many files at a time (the machine's CPUs).
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
# Where the build goes (make test-asan builds into build/asan).
B       ?= build
WARN     = -Wall -Wextra
CFLAGS_CORE = $(OPT) $(WARN) -fPIC -Imod_qrtrack -I$(B)/gen $(PKG_CFLAGS)

CORE_SRC  = $(filter-out $(CORE_EXCLUDE),$(sort $(wildcard mod_qrtrack/qrt_*.c)))
CORE_OBJ  = $(patsubst mod_qrtrack/%.c,$(B)/obj/%.o,$(CORE_SRC)) $(B)/obj/qrt_schema_sql.o \
            $(B)/obj/qrt_assets.o $(B)/obj/qrt_sql.o
# The statements (sql/statements/*.sql), compiled into $(B)/gen/qrt_sql.[ch]
STMT_FILES = $(sort $(wildcard sql/statements/*.sql))
CORE_HDR  = $(wildcard mod_qrtrack/*.h) $(B)/gen/qrt_sql.h
MOD_SRC   = $(sort $(wildcard mod_qrtrack/mod_qrtrack*.c))
SQL_FILES = $(sort $(wildcard sql/[0-9]*.sql))
# Served by the module: the OpenAPI document (GET <api>/openapi.json) and the dashboard.
ASSET_FILES = openapi/qrtrack.json dashboard/index.html dashboard/app.js dashboard/app.css \
            dashboard/favicon.svg
UNIT_SRC  = $(sort $(wildcard test/unit/test_*.c))
UNIT_BIN  = $(patsubst test/unit/%.c,$(B)/unit/%,$(UNIT_SRC))
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

.PHONY: all deps run test check test-asan unit callgraph lint-openapi api api-sqlite api-pgsql fuzz \
        bench clean install sql-dump schema-files

all: $(B)/mod_qrtrack.so $(B)/qrtrack-admin

deps:
	sh tools/deps.sh

# (sql/ itself too: a migration deleted changes only the directory)
$(B)/gen/qrt_schema_sql.c: $(SQL_FILES) sql tools/embed_sql.sh
	@mkdir -p $(B)/gen
	sh tools/embed_sql.sh $(SQL_FILES) > $@

$(B)/obj/qrt_schema_sql.o: $(B)/gen/qrt_schema_sql.c
	@mkdir -p $(B)/obj
	$(CC) $(CFLAGS_CORE) -c $< -o $@

# Every statement, a C table and one SQL_<name> macro each; fails on a duplicated name or
# a PostgreSQL form of no statement. One run makes both files (a grouped target: as two
# targets, make -j ran it twice at once, and the two runs' renames raced).
$(B)/gen/qrt_sql.c $(B)/gen/qrt_sql.h &: $(STMT_FILES) tools/gen_statements.py
	@mkdir -p $(B)/gen
	$(PYTHON) tools/gen_statements.py c $(B)/gen/qrt_sql.c $(B)/gen/qrt_sql.h $(STMT_FILES)

$(B)/obj/qrt_sql.o: $(B)/gen/qrt_sql.c $(B)/gen/qrt_sql.h
	@mkdir -p $(B)/obj
	$(CC) $(CFLAGS_CORE) -c $< -o $@

# Every statement of both dialects, its name then its SQL as prepared.
sql-dump:
	@$(PYTHON) tools/gen_statements.py dump $(STMT_FILES)

# sql/schema.sqlite.sql and sql/schema.pgsql.sql rewritten from freshly migrated databases
# (test/api/test_schema.py checks them; run this after adding a migration).
schema-files: all
	QRT_SCHEMA_WRITE=1 QRT_TEST_BACKEND=sqlite $(PYTHON) -m pytest -q test/api/test_schema.py
	QRT_SCHEMA_WRITE=1 QRT_TEST_BACKEND=pgsql $(PYTHON) -m pytest -q test/api/test_schema.py

$(B)/gen/qrt_assets.c: $(ASSET_FILES) tools/embed_files.sh
	@mkdir -p $(B)/gen
	sh tools/embed_files.sh $(ASSET_FILES) > $@.tmp && mv -f $@.tmp $@

$(B)/obj/qrt_assets.o: $(B)/gen/qrt_assets.c mod_qrtrack/qrt_assets.h
	@mkdir -p $(B)/obj
	$(CC) $(CFLAGS_CORE) -c $< -o $@

$(B)/obj/%.o: mod_qrtrack/%.c $(CORE_HDR)
	@mkdir -p $(B)/obj
	$(CC) $(CFLAGS_CORE) -c $< -o $@

$(B)/libqrt.a: $(CORE_OBJ)
	rm -f $@
	ar rcs $@ $(CORE_OBJ)

# apxs compiles the glue and links it with the core library into a DSO.
$(B)/mod_qrtrack.so: $(MOD_SRC) $(CORE_HDR) $(B)/libqrt.a
	@mkdir -p $(B)/apxs
	cp $(MOD_SRC) mod_qrtrack/*.h $(B)/apxs/
	cd $(B)/apxs && $(APXS) -c -o mod_qrtrack.la \
	    -Wc,"$(OPT) $(WARN) -I$(CURDIR)/mod_qrtrack -I$(CURDIR)/$(B)/gen $(PKG_CFLAGS)" \
	    $(notdir $(MOD_SRC)) ../libqrt.a $(PKG_LIBS) >apxs.log 2>&1 \
	    || { cat apxs.log; exit 1; }
	@grep -E "warning:|error:" $(B)/apxs/apxs.log || true
	cp $(B)/apxs/.libs/mod_qrtrack.so $@.tmp && mv -f $@.tmp $@

$(B)/qrtrack-admin: admin/qrtrack_admin.c $(CORE_HDR) $(B)/libqrt.a
	$(CC) $(OPT) $(WARN) -Imod_qrtrack -I$(B)/gen $(PKG_CFLAGS) $< $(B)/libqrt.a $(PKG_LIBS) \
	    $(LDFLAGS) -o $@

# The installed qrtrack-admin: without --driver/--params it reads DBDriver/DBDParams from
# the Apache config ($(APACHE_MAINCONF) and what it includes), else uses
# $(STATEDIR)/qrtrack.db. build/qrtrack-admin keeps the development default var/qrtrack.db.
$(B)/installed/qrtrack-admin: admin/qrtrack_admin.c $(CORE_HDR) $(B)/libqrt.a
	@mkdir -p $(B)/installed
	$(CC) $(OPT) $(WARN) -Imod_qrtrack -I$(B)/gen $(PKG_CFLAGS) -DQRT_ADMIN_INSTALLED \
	    -DQRT_ADMIN_APACHE_CONF='"$(APACHE_MAINCONF)"' \
	    -DQRT_ADMIN_DEFAULT_DB='"$(STATEDIR)/qrtrack.db"' \
	    $< $(B)/libqrt.a $(PKG_LIBS) $(LDFLAGS) -o $@

# The server's User, which must own $(STATEDIR): Debian's envvars says it (elsewhere,
# or with DESTDIR=, chown it yourself; Debian's postinst does).
APACHE_RUN_USER ?= $(shell . /etc/apache2/envvars 2>/dev/null && echo "$$APACHE_RUN_USER")

install: $(B)/mod_qrtrack.so $(B)/installed/qrtrack-admin
	install -d $(DESTDIR)$(APACHE_MODDIR) $(DESTDIR)$(SBINDIR) $(DESTDIR)$(APACHE_MODCONF) \
	    $(DESTDIR)$(DOCDIR)/examples
	install -d -m 0750 $(DESTDIR)$(STATEDIR)
	chmod 0750 $(DESTDIR)$(STATEDIR)
	@if [ -z "$(DESTDIR)" ] && [ -n "$(APACHE_RUN_USER)" ] && [ "$$(id -u)" = 0 ] \
	    && id "$(APACHE_RUN_USER)" >/dev/null 2>&1; then \
	    echo "chown $(APACHE_RUN_USER): $(STATEDIR)"; \
	    chown "$(APACHE_RUN_USER):$$(id -gn "$(APACHE_RUN_USER)")" $(STATEDIR); fi
	install -m 644 $(B)/mod_qrtrack.so $(DESTDIR)$(APACHE_MODDIR)/mod_qrtrack.so
	install -m 755 $(B)/installed/qrtrack-admin $(DESTDIR)$(SBINDIR)/qrtrack-admin
	sed -e 's|/usr/lib/apache2/modules/mod_qrtrack.so|$(APACHE_MODDIR)/mod_qrtrack.so|' \
	    conf/qrtrack.load > $(DESTDIR)$(APACHE_MODCONF)/qrtrack.load
	sed -e 's|/var/lib/qrtrack/|$(STATEDIR)/|' \
	    conf/qrtrack.conf > $(DESTDIR)$(APACHE_MODCONF)/qrtrack.conf
	chmod 644 $(DESTDIR)$(APACHE_MODCONF)/qrtrack.load $(DESTDIR)$(APACHE_MODCONF)/qrtrack.conf
	install -m 644 conf/qrtrack-site.conf $(DESTDIR)$(DOCDIR)/examples/qrtrack-site.conf

$(B)/unit/%: test/unit/%.c $(B)/libqrt.a $(CORE_HDR) $(wildcard test/unit/*.h)
	@mkdir -p $(B)/unit
	$(CC) $(OPT) $(WARN) -Imod_qrtrack -I$(B)/gen -Itest/unit $(PKG_CFLAGS) $(CHECK_CFLAGS) $< \
	    $(B)/libqrt.a \
	    $(PKG_LIBS) $(CHECK_LIBS) -lpthread -o $@

# Two binaries at a time, the longest first (test_report also runs its cases two at a time).
unit: $(UNIT_BIN) callgraph
	@sh tools/unit_run.sh $(filter %/test_report,$(UNIT_BIN)) $(filter-out %/test_report,$(UNIT_BIN))

# The glue's files call one another without a circle (tools/callgraph.py reads the
# calls from the object files apxs built).
callgraph: $(B)/mod_qrtrack.so
	$(PYTHON) tools/callgraph.py $(sort $(wildcard $(B)/apxs/.libs/mod_qrtrack*.o))

# The OpenAPI document, linted with @redocly/cli (tools/deps.sh installs the version pinned
# in openapi/package-lock.json into build/redocly). No telemetry, no update check.
REDOCLY = build/redocly/node_modules/.bin/redocly
lint-openapi:
	@test -x $(REDOCLY) || sh tools/deps.sh
	REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
	    $(REDOCLY) lint --config openapi/redocly.yaml --format stylish openapi/qrtrack.json

# The API suite runs on both backends: SQLite, then PostgreSQL (a throwaway cluster
# that the tests start and stop themselves). Each pass runs its tests two at a time
# (pytest-xdist: each worker has its own servers and cluster), then those marked serial
# alone (time and memory bounds under load, the browser: conftest.py).
# Both backends' shared passes at once, then each one's serial tests alone (tools/api_run.sh).
api: all
	PYTHON=$(PYTHON) sh tools/api_run.sh

api-sqlite api-pgsql: api-%: all
	QRT_TEST_BACKEND=$* $(PYTHON) -m pytest -q test/api $(PYTEST_ARGS)

test: deps
	$(MAKE) -j$(JOBS) all unit_bins
	$(MAKE) lint-openapi
	$(MAKE) unit
	$(MAKE) api

unit_bins: $(UNIT_BIN)

# The quick pass while working: the unit tests and the SQLite API suite without the tests
# marked slow (package build, browser, long timing); `make test` runs everything.
check: all unit_bins
	$(MAKE) unit
	QRT_TEST_BACKEND=sqlite $(PYTHON) -m pytest -q -m "not slow" --durations=15 test/api $(PYTEST_ARGS)

# AddressSanitizer + UBSan on the real server: the module, the core, qrtrack-admin and the
# unit tests built into build/asan; httpd (not instrumented itself) started through
# build/asan/apache2, which preloads the sanitizers' runtimes. Reports go to
# build/asan/reports; any report fails the run (the API tests check after each server).
ASAN_DIR   = build/asan
ASAN_FLAGS = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
             -fno-sanitize-recover=undefined
test-asan: deps
	$(MAKE) B=$(ASAN_DIR) OPT="$(ASAN_FLAGS)" all unit_bins
	sh tools/asan_httpd.sh $(ASAN_DIR) "$$($(APXS) -q SBINDIR)/apache2"
	rm -rf $(ASAN_DIR)/reports && mkdir -p $(ASAN_DIR)/reports && chmod 1777 $(ASAN_DIR)/reports
	ASAN_OPTIONS=detect_leaks=0:log_path=$(CURDIR)/$(ASAN_DIR)/reports/unit \
	    $(MAKE) B=$(ASAN_DIR) OPT="$(ASAN_FLAGS)" unit
	QRT_TEST_BUILD=$(CURDIR)/$(ASAN_DIR) QRT_TEST_OPT="$(ASAN_FLAGS)" QRT_TEST_BACKEND=sqlite $(PYTHON) -m pytest -q test/api $(PYTEST_ARGS)
	QRT_TEST_BUILD=$(CURDIR)/$(ASAN_DIR) QRT_TEST_OPT="$(ASAN_FLAGS)" QRT_TEST_BACKEND=pgsql $(PYTHON) -m pytest -q test/api $(PYTEST_ARGS)
	@if [ -n "$$(ls $(ASAN_DIR)/reports)" ]; then cat $(ASAN_DIR)/reports/*; \
	    echo "test-asan: sanitizer reports above"; exit 1; fi
	@echo "test-asan: no sanitizer report"

build/fuzz/%: test/fuzz/%.c $(CORE_SRC) $(CORE_HDR) $(B)/gen/qrt_schema_sql.c $(B)/gen/qrt_sql.c
	@mkdir -p build/fuzz
	clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Imod_qrtrack -I$(B)/gen $(PKG_CFLAGS) \
	    $< $(CORE_SRC) $(B)/gen/qrt_schema_sql.c $(B)/gen/qrt_sql.c $(PKG_LIBS) -o $@

# Each fuzz target runs for FUZZ_SECONDS (default 60).
FUZZ_SECONDS ?= 60
fuzz: $(FUZZ_BIN)
	@set -e; for f in $(FUZZ_BIN); do mkdir -p build/corpus/$$(basename $$f); \
	    $$f -max_total_time=$(FUZZ_SECONDS) build/corpus/$$(basename $$f); done

run: deps all
	sh conf/run.sh "$(PORT)" "$(DATA)"

bench: deps all $(B)/bench_commit $(B)/bench_images
	$(PYTHON) bench/bench.py

# The commit path alone (bench/bench_commit.c), run by bench/bench_commit.py.
$(B)/bench_commit: bench/bench_commit.c $(B)/libqrt.a $(CORE_HDR)
	$(CC) $(OPT) $(WARN) -Imod_qrtrack -I$(B)/gen $(PKG_CFLAGS) $< $(B)/libqrt.a $(PKG_LIBS) \
	    -lpthread -o $@

# The image renderer alone (bench/bench_images.c), run by bench/bench_images.py.
$(B)/bench_images: bench/bench_images.c $(B)/libqrt.a $(CORE_HDR)
	$(CC) $(OPT) $(WARN) -Imod_qrtrack -I$(B)/gen $(PKG_CFLAGS) $< $(B)/libqrt.a $(PKG_LIBS) \
	    -lpthread -o $@

clean:
	rm -rf $(ASAN_DIR) $(B)/obj $(B)/gen $(B)/apxs $(B)/unit build/fuzz build/corpus \
	    $(B)/bench_commit $(B)/bench_images $(B)/ref-* \
	    $(B)/libqrt.a $(B)/mod_qrtrack.so $(B)/qrtrack-admin $(B)/installed
