# The docs: every snippet of the READMEs and docs/ runs as written (tests/snippets: each
# plain python, js/javascript/mjs/cjs and c block; Rust blocks are make test-rust's
# doctests), and the README's benchmark and fleet figures are those of bench/RESULTS.md
# and bench/FLEET.md (scripts/readme-bench; `scripts/readme-bench --write` after
# `make bench` or `make sim`).
.PHONY: test-snippets check-readme-bench
TEST_TARGETS += test-snippets check-readme-bench
CHECK_TARGETS += test-snippets check-readme-bench
TEST_EARLY += check-readme-bench
SNIPPET_DOCS := README.md bindings-python/README.md bindings-node/README.md $(wildcard docs/*.md)

# Each runner reports per file what it ran and skipped; all four run before the part fails.
test-snippets: $(PY_NATIVE_STAMP) node-addon c-lib
	@status=0; \
	$(PY) tests/snippets/run_python.py $(SNIPPET_DOCS) || status=1; \
	python3 tests/snippets/run_node.py $(BUILD)/snippets/node $(SNIPPET_DOCS) || status=1; \
	python3 tests/snippets/run_c.py $(C_CC) $(C_LIBDIR) $(SNIPPET_DOCS) || status=1; \
	python3 tests/snippets/check_rust.py $(SNIPPET_DOCS) || status=1; \
	exit $$status

check-readme-bench:
	scripts/readme-bench --check
