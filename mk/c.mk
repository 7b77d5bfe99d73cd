# C: libretryrs (bindings-c), include/retryrs.h, the C test suite under valgrind, the
# pkg-config install, the rates demo client and the benchmark.
#
#   make test-c       C suite (C11 + C++17 units + conformance) under valgrind, the
#                     teardown programs, the thread tests under helgrind and DRD, the
#                     scale test, then the pkg-config install smoke test (C and C++)
#   make header-c     regenerate include/retryrs.h and retryrs_testing.h with cbindgen
#   make install-c PREFIX=/usr/local   the headers (C, testing, C++), libretryrs.so.X.Y.Z (+ SONAME and .so
#                     symlinks), libretryrs.a, retryrs.pc, the CMake package, licences,
#                     share/doc/retryrs/ (the docs the header cites, the C examples), the
#                     thread checkers' suppressions (share/retryrs/)
#   make demo-c       the rates client against scripts/flaky_server.py
#   make bench-c      bench/c -> build/bench/c.md
.PHONY: c-lib check-c test-c test-c-teardown test-c-threads test-c-signal-storm header-c install-c pkgconfig-c demo-c bench-c c-demo-client c-tools c-curl test-curl-c
TEST_TARGETS += test-c test-curl-c
CHECK_TARGETS += check-c
# They need no venv or node_modules (TEST_EARLY); the valgrind suite is long, so it starts first.
TEST_EARLY += test-c test-curl-c
TEST_FIRST += test-c
DEMO_CLIENTS += c-demo-client
BENCH_TARGETS += bench-c

C_BUILD := $(BUILD)/c
C_LIBDIR := $(BUILD)/lib
C_CC ?= gcc
C_CXX ?= g++
C_WARN := -Wall -Wextra -Werror -pedantic
C_CFLAGS := -std=c11 $(C_WARN) -O1 -g -Iinclude -Itests/c -I$(C_BUILD)
C_CXXFLAGS := -std=c++17 $(C_WARN) -O1 -g -Iinclude -Itests/c
# What a program linking libretryrs.a needs besides it: the .pc file's Libs.private, the
# one place the list is written.
C_STATIC_LIBS := $(shell sed -n 's/^Libs.private: //p' bindings-c/retryrs.pc.in)
C_TEST_SRC := tests/c/main.c tests/c/harness.c tests/c/test_api.c tests/c/test_threads.c tests/c/test_virtual_time.c tests/c/test_contract_v2.c tests/c/test_config_v2.c tests/c/test_policies.c tests/c/test_breaker.c tests/c/test_bound.c tests/c/test_hooks.c tests/c/test_messages.c tests/c/test_errors.c tests/c/conformance.c tests/c/conformance_propagation.c
PREFIX ?= /usr/local

# One release build of the crate serves the tests, the demo and the bench; C users get
# the conventional names (the crate's own, libretryrs_c, would clash with nothing but
# would surprise everyone): libretryrs.so.X.Y.Z, a symlink named by its SONAME (set in
# bindings-c/build.rs, read back here), libretryrs.so for the linker. The archive is one
# object that defines only the API's global symbols (bindings-c/static-archive.sh).
# C_CARGO_BUILD and C_RUST_OUT: how cargo builds the library and where it puts it; the
# release tarball (mk/dist.mk) builds it with cargo-zigbuild against glibc 2.17 instead,
# into its own C_LIBDIR.
C_REAL_SO = libretryrs.so.$(VERSION)
C_CARGO_BUILD = cargo build --release --locked -p retryrs-c
C_RUST_OUT = $(CARGO_TARGET_DIR)/release
# make test's parts run side by side and several make c-lib while others run programs
# linked to build/lib: a file is replaced (a new one renamed over it) only when it changed,
# and a symlink only when it points elsewhere, so no running program sees a half-written
# library or a missing link.
C_PUT = put() { cmp -s "$$1" "$$2" || { cp -f "$$1" "$$2.new.$$$$" && mv -f "$$2.new.$$$$" "$$2"; }; }; \
	link() { [ "$$(readlink "$$2")" = "$$1" ] || ln -sfn "$$1" "$$2"; }
c-lib:
	$(C_CARGO_BUILD)
	mkdir -p $(C_LIBDIR)
	$(C_PUT); \
	soname=$$(readelf -d $(C_RUST_OUT)/libretryrs_c.so | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p'); \
	test -n "$$soname" || { echo "libretryrs_c.so has no SONAME (bindings-c/build.rs)" >&2; exit 1; }; \
	put $(C_RUST_OUT)/libretryrs_c.so $(C_LIBDIR)/$(C_REAL_SO); \
	if [ "$$soname" != $(C_REAL_SO) ]; then link $(C_REAL_SO) $(C_LIBDIR)/$$soname; fi; \
	link $$soname $(C_LIBDIR)/libretryrs.so; \
	echo $$soname > $(C_LIBDIR)/soname.tmp.$$$$ && put $(C_LIBDIR)/soname.tmp.$$$$ $(C_LIBDIR)/soname; \
	rm -f $(C_LIBDIR)/soname.tmp.$$$$; \
	bindings-c/static-archive.sh $(C_RUST_OUT)/libretryrs_c.a $(C_LIBDIR)/libretryrs.a.tmp.$$$$; \
	put $(C_LIBDIR)/libretryrs.a.tmp.$$$$ $(C_LIBDIR)/libretryrs.a; \
	rm -f $(C_LIBDIR)/libretryrs.a.tmp.$$$$

# valgrind and pkg-config ship with the machine image; a bare machine gets them from apt.
# make test's C parts run side by side: one apt at a time (the lock), each asking again
# under it whether the tools are there.
C_APT_LOCK := flock $(BUILD)/.apt.lock
c-tools:
	@mkdir -p $(BUILD)
	@$(C_APT_LOCK) sh -c 'command -v valgrind >/dev/null && command -v pkg-config >/dev/null || \
		{ apt-get update -qq && apt-get install -y -qq valgrind pkg-config >/dev/null; }'

# libcurl's headers for examples/c/curl_get.c: the distribution's package, like valgrind.
c-curl: c-tools
	@$(C_APT_LOCK) sh -c 'pkg-config --exists libcurl || \
		{ apt-get update -qq && apt-get install -y -qq libcurl4-openssl-dev >/dev/null; }'

header-c:
	RETRYRS_UPDATE_HEADER=1 cargo test --locked -p retryrs-c --test header

$(C_BUILD)/vectors.c: tests/c/gen_vectors.py $(wildcard tests/conformance/*.json)
	mkdir -p $(C_BUILD)
	python3 tests/c/gen_vectors.py $@ tests/conformance/*.json

# The shared policy-document data (tests/policies/) as C, for tests/c/test_policies.c.
$(C_BUILD)/policies_data.c: tests/c/gen_policies.py $(wildcard tests/policies/*.json)
	mkdir -p $(C_BUILD)
	python3 tests/c/gen_policies.py $@ tests/policies

$(C_BUILD)/retryrs-tests: c-lib $(C_BUILD)/vectors.c $(C_BUILD)/policies_data.c $(C_TEST_SRC) tests/c/cpp17.cpp tests/c/test_cpp.cpp tests/c/*.h include/retryrs.h include/retryrs.hpp include/retryrs_testing.h
	mkdir -p $(C_BUILD)
	$(C_CXX) $(C_CXXFLAGS) -c tests/c/cpp17.cpp -o $(C_BUILD)/cpp17.o
	$(C_CXX) $(C_CXXFLAGS) -c tests/c/test_cpp.cpp -o $(C_BUILD)/test_cpp.o
	$(C_CC) $(C_CFLAGS) -c $(C_BUILD)/vectors.c -o $(C_BUILD)/vectors.o
	$(C_CC) $(C_CFLAGS) -c $(C_BUILD)/policies_data.c -o $(C_BUILD)/policies_data.o
	$(C_CC) $(C_CFLAGS) $(C_TEST_SRC) $(C_BUILD)/vectors.o $(C_BUILD)/policies_data.o $(C_BUILD)/cpp17.o $(C_BUILD)/test_cpp.o -o $@ \
		-L$(C_LIBDIR) -Wl,-rpath,$(C_LIBDIR) -lretryrs -lstdc++ -lpthread -lm

# The edges of a process (tests/c/teardown.c, teardown.cpp): calls from an atexit handler,
# pthread key destructors, a C++ static and a C++ thread_local destructor. Each program
# exits 0 only if every check passed; valgrind fails any leak (a thread whose only calls
# are made in its key destructor included) or invalid access.
C_TEARDOWN_RUNS := teardown:atexit teardown:key teardown:key-after-use teardown-cpp:static teardown-cpp:thread_local
$(C_BUILD)/teardown: c-lib tests/c/teardown.c tests/c/teardown.h include/retryrs.h
	mkdir -p $(C_BUILD)
	$(C_CC) $(C_CFLAGS) tests/c/teardown.c -o $@ -L$(C_LIBDIR) -Wl,-rpath,$(C_LIBDIR) -lretryrs -lpthread
$(C_BUILD)/teardown-cpp: c-lib tests/c/teardown.cpp tests/c/teardown.h include/retryrs.h
	mkdir -p $(C_BUILD)
	$(C_CXX) $(C_CXXFLAGS) tests/c/teardown.cpp -o $@ -L$(C_LIBDIR) -Wl,-rpath,$(C_LIBDIR) -lretryrs -lpthread

# The thread tests alone (tests/c/threads_main.c) under helgrind and DRD with the shipped
# suppressions (bindings-c/suppressions/valgrind.supp: the library's own atomics and
# std's futex locks, which the tools cannot see): any error fails.
C_VALGRIND_SUPP := bindings-c/suppressions/valgrind.supp
$(C_BUILD)/thread-tests: c-lib tests/c/threads_main.c tests/c/harness.c tests/c/test_threads.c tests/c/harness.h tests/c/suites.h include/retryrs.h
	mkdir -p $(C_BUILD)
	$(C_CC) $(C_CFLAGS) tests/c/threads_main.c tests/c/harness.c tests/c/test_threads.c -o $@ \
		-L$(C_LIBDIR) -Wl,-rpath,$(C_LIBDIR) -lretryrs -lpthread

test-c-threads: c-tools $(C_BUILD)/thread-tests
	@for tool in helgrind drd; do \
		echo "thread tests under $$tool with $(C_VALGRIND_SUPP)"; \
		valgrind --tool=$$tool --quiet --suppressions=$(C_VALGRIND_SUPP) --error-exitcode=99 \
			$(C_BUILD)/thread-tests || { echo "FAIL: $$tool found errors (exit $$?)" >&2; exit 1; }; \
	done

# SIGUSR1 storms a worker retrying with a fresh token per call; the handler cancels with
# retryrs_cancel_fire_from_signal() (tests/c/signal_storm.c): natively, a few seconds in
# `make test` (~100,000 signals); `make test-c-signal-storm SIGNAL_STORM_SECONDS=60` for
# the long run.
SIGNAL_STORM_SECONDS ?= 5
$(C_BUILD)/signal-storm: c-lib tests/c/signal_storm.c include/retryrs.h
	mkdir -p $(C_BUILD)
	$(C_CC) $(C_CFLAGS) tests/c/signal_storm.c -o $@ -L$(C_LIBDIR) -Wl,-rpath,$(C_LIBDIR) -lretryrs -lpthread

test-c-signal-storm: $(C_BUILD)/signal-storm
	$(C_BUILD)/signal-storm $(SIGNAL_STORM_SECONDS)

# Scale (tests/c/scale.c): 100,000 policies listed by index, natively (valgrind would time
# itself); it prints the measured times.
$(C_BUILD)/scale: c-lib tests/c/scale.c include/retryrs.h
	mkdir -p $(C_BUILD)
	$(C_CC) $(C_CFLAGS) tests/c/scale.c -o $@ -L$(C_LIBDIR) -Wl,-rpath,$(C_LIBDIR) -lretryrs

test-c-teardown: c-tools $(C_BUILD)/teardown $(C_BUILD)/teardown-cpp
	@for run in $(C_TEARDOWN_RUNS); do \
		echo "teardown: $${run%%:*} $${run#*:}"; \
		valgrind --quiet --leak-check=full --errors-for-leak-kinds=definite,possible \
			--error-exitcode=99 $(C_BUILD)/$${run%%:*} $${run#*:} || { echo "FAIL teardown: $$run (exit $$?)" >&2; exit 1; }; \
	done

# First the crate's own checks (the header equals cbindgen's output, every export is
# panic-guarded, versions agree; test-rust runs them too, but test-c must stand alone).
# (In make test, whose test-rust runs them, they run there only: MAKE_TEST_PARTS.)
# Then the whole C suite under valgrind: any leak or invalid access fails it. The test
# binary writes build/conformance/c.txt and ends with "N passed, N failed".
test-c: c-tools $(C_BUILD)/retryrs-tests
	$(if $(filter test-rust,$(MAKE_TEST_PARTS)),@echo "cargo test -p retryrs-c: run by test-rust in this make test",cargo test --locked -p retryrs-c)
	mkdir -p $(BUILD)/conformance
	valgrind --quiet --leak-check=full --errors-for-leak-kinds=definite,possible \
		--error-exitcode=99 $(C_BUILD)/retryrs-tests $(BUILD)/conformance/c.txt
	@$(MAKE) --no-print-directory test-c-teardown
	@$(MAKE) --no-print-directory test-c-threads
	@$(MAKE) --no-print-directory test-c-signal-storm
	@$(MAKE) --no-print-directory $(C_BUILD)/scale
	$(C_BUILD)/scale
	tests/c/abi/check.sh $(C_CC) $(C_BUILD)/abi $(C_LIBDIR)
	tests/c/header_macros.sh $(C_CC) include
	tests/c/static_archive.sh $(C_CC) include $(C_LIBDIR) $(VERSION)
	tests/c/cpp_edges.sh $(C_CXX) include $(C_LIBDIR) $(C_BUILD)/cpp-edges
	@$(MAKE) --no-print-directory pkgconfig-c

# make check's C part: the C suite (conformance included) run natively, without valgrind.
check-c: $(C_BUILD)/retryrs-tests
	mkdir -p $(BUILD)/conformance
	$(C_BUILD)/retryrs-tests $(BUILD)/conformance/c.txt

# The documented install step, into a scratch prefix; then an app is built exactly as a
# user would, with `cc app.c $(pkg-config --cflags --libs retryrs)`, and run (and its C++
# counterpart over retryrs.hpp, with `c++ -std=c++17`); so is the
# README's metrics example (examples/c/metrics.c), which checks its own counts. The same
# layout is the C release tarball (mk/dist.mk). The .pc and CMake files find the prefix
# from their own folder, so the tree can be moved.
# What the installed header and README cite goes with them (share/doc/retryrs/): the
# contract, the policy and observability docs, and the C examples with a Makefile and a
# CMakeLists.txt that build them against the installed package alone.
C_DOCS := docs/contract.md docs/policies.md docs/policies.schema.json docs/observability.md
C_EXAMPLES := examples/c/metrics.c examples/c/rates.c examples/c/curl_get.c examples/c/retry.cpp examples/c/Makefile \
	examples/c/CMakeLists.txt examples/policies.json
install-c: c-lib
	install -d $(PREFIX)/include $(PREFIX)/lib/pkgconfig $(PREFIX)/lib/cmake/retryrs $(PREFIX)/share/doc/retryrs
	install -m 644 include/retryrs.h $(PREFIX)/include/retryrs.h
	install -m 644 include/retryrs_testing.h $(PREFIX)/include/retryrs_testing.h
	install -m 644 include/retryrs.hpp $(PREFIX)/include/retryrs.hpp
	install -m 755 $(C_LIBDIR)/$(C_REAL_SO) $(PREFIX)/lib/$(C_REAL_SO)
	soname=$$(cat $(C_LIBDIR)/soname); \
	if [ "$$soname" != $(C_REAL_SO) ]; then ln -sfn $(C_REAL_SO) $(PREFIX)/lib/$$soname; fi; \
	ln -sfn $$soname $(PREFIX)/lib/libretryrs.so; \
	major_minor=$$(echo $(VERSION) | cut -d. -f1,2); \
	static_libs=$$(echo "$(C_STATIC_LIBS)" | sed -e 's/-l//g' -e 's/ /;/g'); \
	subst="s|@VERSION@|$(VERSION)|g; s|@SONAME@|$$soname|g; s|@STATIC_LIBS@|$$static_libs|g; \
		s|@VERSION_MAJOR_MINOR@|$$major_minor|g; \
		s|@VERSION_MAJOR@|$$(echo $(VERSION) | cut -d. -f1)|g; s|@VERSION_MINOR@|$$(echo $(VERSION) | cut -d. -f2)|g"; \
	sed -e "$$subst" bindings-c/retryrs.pc.in > $(PREFIX)/lib/pkgconfig/retryrs.pc; \
	sed -e "$$subst" bindings-c/cmake/retryrsConfig.cmake.in > $(PREFIX)/lib/cmake/retryrs/retryrsConfig.cmake; \
	sed -e "$$subst" bindings-c/cmake/retryrsConfigVersion.cmake.in > $(PREFIX)/lib/cmake/retryrs/retryrsConfigVersion.cmake
	install -m 644 $(C_LIBDIR)/libretryrs.a $(PREFIX)/lib/libretryrs.a
	install -m 644 LICENSE-MIT LICENSE-APACHE CHANGELOG.md $(C_DOCS) $(PREFIX)/share/doc/retryrs/
	install -d $(PREFIX)/share/doc/retryrs/examples
	install -m 644 $(C_EXAMPLES) $(PREFIX)/share/doc/retryrs/examples/
	install -d $(PREFIX)/share/retryrs
	install -m 644 bindings-c/suppressions/valgrind.supp bindings-c/suppressions/tsan.supp $(PREFIX)/share/retryrs/

pkgconfig-c: c-tools
	rm -rf $(C_BUILD)/prefix
	$(MAKE) --no-print-directory install-c PREFIX=$(C_BUILD)/prefix
	export PKG_CONFIG_PATH=$(C_BUILD)/prefix/lib/pkgconfig; \
	$(C_CC) -std=c11 $(C_WARN) tests/c/pkgconfig_app.c -o $(C_BUILD)/pkgconfig-app $$(pkg-config --cflags --libs retryrs) \
		&& LD_LIBRARY_PATH=$(C_BUILD)/prefix/lib $(C_BUILD)/pkgconfig-app "$$(pkg-config --modversion retryrs)" \
		&& $(C_CXX) -std=c++17 $(C_WARN) tests/c/pkgconfig_app.cpp -o $(C_BUILD)/pkgconfig-app-cpp $$(pkg-config --cflags --libs retryrs) \
		&& LD_LIBRARY_PATH=$(C_BUILD)/prefix/lib $(C_BUILD)/pkgconfig-app-cpp "$$(pkg-config --modversion retryrs)" \
		&& $(C_CC) -std=c11 $(C_WARN) examples/c/metrics.c -o $(C_BUILD)/metrics-example $$(pkg-config --cflags --libs retryrs) \
		&& LD_LIBRARY_PATH=$(C_BUILD)/prefix/lib $(C_BUILD)/metrics-example

$(C_BUILD)/rates: c-lib examples/c/rates.c include/retryrs.h
	mkdir -p $(C_BUILD)
	$(C_CC) -std=c11 $(C_WARN) -O2 -Iinclude examples/c/rates.c -o $@ $(C_LIBDIR)/libretryrs.a $(C_STATIC_LIBS)

# The demo's C client: libcurl driven by retryrs (the C counterpart of retryrs.http and
# retryrs/fetch). Linked against the shared library so valgrind sees one allocator.
$(C_BUILD)/curl_get: c-lib c-curl examples/c/curl_get.c include/retryrs.h
	mkdir -p $(C_BUILD)
	$(C_CC) -std=c11 $(C_WARN) -O1 -g -Iinclude $$(pkg-config --cflags libcurl) examples/c/curl_get.c -o $@ \
		-L$(C_LIBDIR) -Wl,-rpath,$(C_LIBDIR) -lretryrs $$(pkg-config --libs libcurl)

c-demo-client: $(C_BUILD)/rates $(C_BUILD)/curl_get

# curl_get against a scripted loopback server: the HTTP tests every host runs, here
# through libcurl, each run under valgrind.
test-curl-c: c-tools $(C_BUILD)/curl_get
	python3 tests/c/curl_get_test.py $(C_BUILD)/curl_get
	python3 tests/http/c/run.py $(C_BUILD)/curl_get

demo-c: $(C_BUILD)/rates
	@echo "== C: examples/c/rates.c against scripts/flaky_server.py =="
	examples/c/demo.sh $(C_BUILD)/rates

$(C_BUILD)/bench: c-lib bench/c/bench.c bench/c/work.h include/retryrs.h
	mkdir -p $(C_BUILD)
	$(C_CC) -std=c11 $(C_WARN) -O2 -Iinclude bench/c/bench.c -o $@ $(C_LIBDIR)/libretryrs.a $(C_STATIC_LIBS)

bench-c: $(C_BUILD)/bench
	mkdir -p $(BUILD)/bench
	$(C_BUILD)/bench $(BUILD)/bench/c.md
