# Rust: the core crate and everything in the workspace.
.PHONY: test-rust lint-rust demo-herd
TEST_TARGETS += lint-rust test-rust
DEMO_TARGETS += demo-herd

lint-rust:
	cargo clippy --workspace --all-targets --locked -- -D warnings

test-rust:
	mkdir -p $(BUILD)/conformance
	cargo test --workspace --locked
	cargo test -p retryrs --locked --test conformance -- --nocapture 2>&1 | tee $(BUILD)/conformance/rust.log
	@grep -E '^conformance: ' $(BUILD)/conformance/rust.log | tail -1 | awk '{print "rust", $$2, $$4}' > $(BUILD)/conformance/rust.txt

demo-herd:
	cargo run --quiet --release -p retryrs --example herd
