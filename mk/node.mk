# Node: the napi-rs addon (bindings-node), its node:test suite with the conformance
# runner, the demo client and the benchmark against p-retry, cockatiel and async-retry.
.PHONY: node-addon test-node test-http-node demo-node bench-node
TEST_TARGETS += test-node test-http-node
DEMO_CLIENTS += node-addon
BENCH_TARGETS += bench-node

NODE_PKG := bindings-node
# npm ci (from the committed lock) installs the one dev dependency (typescript, for the
# types test); the stamp makes it run once per lock change. The package has no runtime
# npm dependencies and no install script: node-addon builds the addon.
NODE_STAMP := $(NODE_PKG)/node_modules/.retryrs-installed

$(NODE_STAMP): $(NODE_PKG)/package.json $(NODE_PKG)/package-lock.json
	cd $(NODE_PKG) && npm ci --no-audit --no-fund --loglevel=error
	mkdir -p $(dir $@) && touch $@

# Cargo is incremental: rebuilding after Rust changes costs seconds, nothing otherwise.
node-addon: $(NODE_STAMP)
	cd $(NODE_PKG) && node scripts/build.js

test-node: node-addon
	mkdir -p $(BUILD)/conformance
	cd $(NODE_PKG) && RETRYRS_CONFORMANCE_DIR=$(BUILD)/conformance \
		node --test --unhandled-rejections=strict --test-reporter=spec test/
	@awk '{print "conformance: " $$2 " passed, " $$3 " failed, " ($$4 ? $$4 : 0) " skipped"}' $(BUILD)/conformance/node.txt

# The hostile-server HTTP cases (tests/http) against every Node HTTP helper; the
# helpers x cases table lands in $(BUILD)/http/node.md.
test-http-node: node-addon
	mkdir -p $(BUILD)/http
	node tests/http/node/run.js --markdown $(BUILD)/http/node.md

demo-node: node-addon
	examples/node/demo.sh

# The peers (p-retry, cockatiel, async-retry) live in bench/node's own package, so
# make test never installs them.
BENCH_NODE_STAMP := bench/node/node_modules/.retryrs-installed
$(BENCH_NODE_STAMP): bench/node/package.json bench/node/package-lock.json
	cd bench/node && npm ci --no-audit --no-fund --loglevel=error
	touch $@

bench-node: node-addon $(BENCH_NODE_STAMP)
	mkdir -p $(BUILD)/bench
	node bench/node/bench.mjs --out $(BUILD)/bench/node.md
