# C: libretryrs (bindings-c), include/retryrs.h, the C test suite under valgrind, the
# pkg-config install, the rates demo client and the benchmark.
#
#   make test-c       C suite (C11 + a C++17 unit + conformance) under valgrind,
#                     then the pkg-config install smoke test
#   make header-c     regenerate include/retryrs.h with cbindgen
#   make install-c PREFIX=/usr/local   header, libretryrs.{so,a}, retryrs.pc
#   make demo-c       the rates client against scripts/flaky_server.py
#   make bench-c      bench/c -> build/bench/c.md
.PHONY: c-lib test-c header-c install-c pkgconfig-c demo-c bench-c c-demo-client c-tools
TEST_TARGETS += test-c
DEMO_CLIENTS += c-demo-client
BENCH_TARGETS += bench-c

C_BUILD := $(BUILD)/c
C_LIBDIR := $(BUILD)/lib
C_CC ?= gcc
C_CXX ?= g++
C_WARN := -Wall -Wextra -Werror -pedantic
C_CFLAGS := -std=c11 $(C_WARN) -O1 -g -Iinclude -Itests/c -I$(C_BUILD)
C_CXXFLAGS := -std=c++17 $(C_WARN) -O1 -g -Iinclude -Itests/c
C_STATIC_LIBS := -lpthread -ldl -lm -lrt -lutil
C_TEST_SRC := tests/c/main.c tests/c/harness.c tests/c/test_api.c tests/c/test_threads.c tests/c/conformance.c
PREFIX ?= /usr/local

# One release build of the crate serves the tests, the demo and the bench; C users get
# the conventional names (the crate's own, libretryrs_c, would clash with nothing but
# would surprise everyone).
c-lib:
	cargo build --release --locked -p retryrs-c
	mkdir -p $(C_LIBDIR)
	cp -f $(CARGO_TARGET_DIR)/release/libretryrs_c.so $(C_LIBDIR)/libretryrs.so
	cp -f $(CARGO_TARGET_DIR)/release/libretryrs_c.a $(C_LIBDIR)/libretryrs.a

# valgrind and pkg-config ship with the machine image; a bare machine gets them from apt.
c-tools:
	@command -v valgrind >/dev/null && command -v pkg-config >/dev/null || \
		{ apt-get update -qq && apt-get install -y -qq valgrind pkg-config >/dev/null; }

header-c:
	RETRYRS_UPDATE_HEADER=1 cargo test --locked -p retryrs-c --test header

$(C_BUILD)/vectors.c: tests/c/gen_vectors.py $(wildcard tests/conformance/*.json)
	mkdir -p $(C_BUILD)
	python3 tests/c/gen_vectors.py $@ tests/conformance/*.json

$(C_BUILD)/retryrs-tests: c-lib $(C_BUILD)/vectors.c $(C_TEST_SRC) tests/c/cpp17.cpp tests/c/*.h include/retryrs.h
	$(C_CXX) $(C_CXXFLAGS) -c tests/c/cpp17.cpp -o $(C_BUILD)/cpp17.o
	$(C_CC) $(C_CFLAGS) -c $(C_BUILD)/vectors.c -o $(C_BUILD)/vectors.o
	$(C_CC) $(C_CFLAGS) $(C_TEST_SRC) $(C_BUILD)/vectors.o $(C_BUILD)/cpp17.o -o $@ \
		-L$(C_LIBDIR) -Wl,-rpath,$(C_LIBDIR) -lretryrs -lstdc++ -lpthread -lm

# First the crate's own checks (the header equals cbindgen's output, every export is
# panic-guarded, versions agree; test-rust runs them too, but test-c must stand alone).
# Then the whole C suite under valgrind: any leak or invalid access fails it. The test
# binary writes build/conformance/c.txt and ends with "N passed, N failed".
test-c: c-tools $(C_BUILD)/retryrs-tests
	cargo test --locked -p retryrs-c
	mkdir -p $(BUILD)/conformance
	valgrind --quiet --leak-check=full --errors-for-leak-kinds=definite,possible \
		--error-exitcode=99 $(C_BUILD)/retryrs-tests $(BUILD)/conformance/c.txt
	@$(MAKE) --no-print-directory pkgconfig-c

# The documented install step, into a scratch prefix; then an app is built exactly as a
# user would, with `cc app.c $(pkg-config --cflags --libs retryrs)`, and run; so is the
# README's metrics example (examples/c/metrics.c), which checks its own counts.
install-c: c-lib
	install -d $(PREFIX)/include $(PREFIX)/lib/pkgconfig
	install -m 644 include/retryrs.h $(PREFIX)/include/retryrs.h
	install -m 755 $(C_LIBDIR)/libretryrs.so $(PREFIX)/lib/libretryrs.so
	install -m 644 $(C_LIBDIR)/libretryrs.a $(PREFIX)/lib/libretryrs.a
	version=$$(cargo pkgid -p retryrs-c | sed 's/.*[#@]//'); \
	sed -e "s|@PREFIX@|$(PREFIX)|" -e "s|@VERSION@|$$version|" bindings-c/retryrs.pc.in \
		> $(PREFIX)/lib/pkgconfig/retryrs.pc

pkgconfig-c: c-tools
	rm -rf $(C_BUILD)/prefix
	$(MAKE) --no-print-directory install-c PREFIX=$(C_BUILD)/prefix
	export PKG_CONFIG_PATH=$(C_BUILD)/prefix/lib/pkgconfig; \
	$(C_CC) -std=c11 $(C_WARN) tests/c/pkgconfig_app.c -o $(C_BUILD)/pkgconfig-app $$(pkg-config --cflags --libs retryrs) \
		&& LD_LIBRARY_PATH=$(C_BUILD)/prefix/lib $(C_BUILD)/pkgconfig-app "$$(pkg-config --modversion retryrs)" \
		&& $(C_CC) -std=c11 $(C_WARN) examples/c/metrics.c -o $(C_BUILD)/metrics-example $$(pkg-config --cflags --libs retryrs) \
		&& LD_LIBRARY_PATH=$(C_BUILD)/prefix/lib $(C_BUILD)/metrics-example

$(C_BUILD)/rates: c-lib examples/c/rates.c include/retryrs.h
	mkdir -p $(C_BUILD)
	$(C_CC) -std=c11 $(C_WARN) -O2 -Iinclude examples/c/rates.c -o $@ $(C_LIBDIR)/libretryrs.a $(C_STATIC_LIBS)

c-demo-client: $(C_BUILD)/rates

demo-c: $(C_BUILD)/rates
	@echo "== C: examples/c/rates.c against scripts/flaky_server.py =="
	examples/c/demo.sh $(C_BUILD)/rates

$(C_BUILD)/bench: c-lib bench/c/bench.c include/retryrs.h
	mkdir -p $(C_BUILD)
	$(C_CC) -std=c11 $(C_WARN) -O2 -Iinclude bench/c/bench.c -o $@ $(C_LIBDIR)/libretryrs.a $(C_STATIC_LIBS)

bench-c: $(C_BUILD)/bench
	mkdir -p $(BUILD)/bench
	$(C_BUILD)/bench $(BUILD)/bench/c.md
