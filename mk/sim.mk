# The fleet simulator (bench/fleet): its own workspace crate, so plotters is built only
# here and never by the other crates' test and lint. `make test` runs its shape test at a
# tenth of the scale; `make sim` runs the issue's scale and rewrites bench/fleet/*.svg
# and bench/FLEET.md.
.PHONY: test-sim sim
TEST_TARGETS += test-sim
TEST_EARLY += test-sim

test-sim:
	cargo clippy -p retryrs-fleet --all-targets --locked -- -D warnings
	cargo test -p retryrs-fleet --locked

sim:
	cargo run --quiet --release --locked -p retryrs-fleet
