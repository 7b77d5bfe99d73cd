# Rust: the core crate and everything in the workspace. The conformance runner
# (core/tests/conformance.rs) writes build/conformance/rust.txt itself. The fleet
# simulator (bench/fleet) is left to mk/sim.mk, so its plotting crate never builds here.
.PHONY: test-rust lint-rust demo-herd wasm-check-rust
TEST_TARGETS += lint-rust test-rust test-rust-package test-rust-outside wasm-check-rust
CHECK_TARGETS += lint-rust test-rust
# They need no venv or node_modules: they may start while make test's setup installs them.
TEST_EARLY += lint-rust test-rust test-rust-package test-rust-outside
DEMO_TARGETS += demo-herd

lint-rust:
	cargo fmt --all --check
	cargo clippy --workspace --exclude retryrs-fleet --all-targets --locked -- -D warnings
	cargo clippy -p retryrs --all-targets --all-features --locked -- -D warnings
	cargo clippy -p retryrs --all-targets --no-default-features --locked -- -D warnings
	# Each HTTP integration alone, as a user who turns on one of them builds it: code only
	# the other uses must not warn there.
	cargo clippy -p retryrs --lib --no-default-features --features reqwest --locked -- -D warnings
	cargo clippy -p retryrs --lib --no-default-features --features tower --locked -- -D warnings
	# The lean build's engine paths use nothing that traps on wasm32-unknown-unknown: a
	# source lint that names the line (wasm-check-rust then builds and runs it there).
	scripts/check-wasm-safe
	# As docs.rs builds them (package.metadata.docs.rs): every feature on.
	RUSTDOCFLAGS="-D warnings" cargo doc --locked -p retryrs --no-deps --all-features --quiet
	# And as a user gets them with the default features, and with none.
	RUSTDOCFLAGS="-D warnings" cargo doc --locked -p retryrs --no-deps --quiet
	RUSTDOCFLAGS="-D warnings" cargo doc --locked -p retryrs --no-deps --no-default-features --quiet

test-rust:
	cargo test --workspace --exclude retryrs-fleet --locked
	# The core's own features: the async executor on tokio (off by default) and the crate
	# with none at all (the lean build).
	cargo test --locked -p retryrs --all-features
	cargo test --locked -p retryrs --no-default-features
	# The repository README's and docs/propagation.md's Rust examples (files the package cannot hold).
	RUSTDOCFLAGS="--cfg retryrs_repository" cargo test --locked -p retryrs --all-features --doc Repository

# The published crate tests itself: cargo package, then cargo test inside the unpacked
# package (what a crates.io user or distribution gets). Unpacked outside the checkout:
# inside it, cargo would take it for a stray member of this workspace. Built in the
# workspace's target dir, where the registry crates are already built for test-rust's
# `-p retryrs --all-features` (the same features and profile): only the packaged crate
# compiles (its own artefacts: cargo tells it from the workspace's core by its path
# relative to its workspace root). Unpacked with fresh mtimes (tar -m): the folder is new
# every run but the target dir is kept, and files older than last run's binaries would
# not rebuild them.
.PHONY: test-rust-package test-rust-outside
# A Rust project of its own outside the workspace (tests/outside-rust), against the crate
# by path: errors compose with anyhow and boxed errors, a String error runs async.
# Not --locked: its lock pins anyhow and tokio, and cargo adds what the core's own
# dependencies gain since (the lock is the workspace's business, not this project's).
test-rust-outside:
	cd tests/outside-rust && cargo test
# The lean engine built for wasm32-unknown-unknown and run in Node (tests/wasm).
wasm-check-rust:
	scripts/wasm-check

test-rust-package:
	cargo package --locked -p retryrs --allow-dirty
	# What crates.io would check of the package (its tests run below, so no verify build).
	cargo publish --dry-run --locked -p retryrs --allow-dirty --no-verify
	dir=$$(mktemp -d) && trap 'rm -rf "$$dir"' EXIT && \
	tar xzmf target/package/retryrs-$$(cargo pkgid -p retryrs | sed 's/.*[#@]//').crate -C "$$dir" && \
	cd "$$dir"/retryrs-* && cargo test --locked --all-features

demo-herd:
	@echo "== The thundering herd: why jitter (Rust, bench/fleet/examples/herd.rs) =="
	cargo run --quiet --release --locked -p retryrs-fleet --no-default-features --example herd

# What each host derives from the knob table (core/src/knob.rs) but must hold as source:
# C's retryrs_config (bindings-c/src/config_layout.rs, then the headers), Python's stub
# and native signature, Node's index.d.ts, the document schema. test-rust fails when any
# is stale (tools/knobgen's test, bindings-c's header test, core's schema test); this
# writes them all again. After adding a knob: `make generate`, then commit what changed.
.PHONY: generate
generate:
	cargo run --quiet --locked -p retryrs-knobgen
	@$(MAKE) --no-print-directory header-c schema

# docs/policies.schema.json is generated from the knob table; test-rust fails when it is
# stale (core/tests/document.rs), and this writes it again.
.PHONY: schema
schema:
	RETRYRS_WRITE_SCHEMA=1 cargo test --locked -p retryrs --features documents --test document the_schema_file

# The policy-document benchmark: one 10,000-policy file loaded by every host's loader,
# each against a baseline from the same run (bench/policies/run -> build/bench/policies.md).
.PHONY: bench-policies
BENCH_TARGETS += bench-policies
bench-policies: c-lib python-dev node-addon
	bench/policies/run $(BUILD)

# The Rust benchmark: retryrs against backon in the same run, blocking and async
# (bench/rust -> build/bench/rust.md), then the same cases built as a crate of its own
# builds them (the bench-outside profile: cargo's default release settings).
.PHONY: bench-rust
BENCH_TARGETS += bench-rust
bench-rust:
	mkdir -p $(BUILD)/bench
	cargo run --quiet --release --locked -p retryrs-bench-rust -- $(BUILD)/bench/rust.md
	cargo run --quiet --profile bench-outside --locked -p retryrs-bench-rust -- --outside $(BUILD)/bench/rust.md
