# Python: the retryrs package (bindings-python, a pyo3 module built by maturin) in a
# project venv at .venv, its pytest suite, conformance runner, benchmark and demo.
.PHONY: test-python python-dev bench-python demo-python
TEST_TARGETS += test-python
CHECK_TARGETS += test-python
DEMO_CLIENTS += python-dev
BENCH_TARGETS += bench-python

VENV := $(CURDIR)/.venv
PY := $(VENV)/bin/python
PY_BUILD := $(BUILD)/python
# Installing tools is a one-off per venv; the stamps make every later run cheap.
PY_DEPS_STAMP := $(VENV)/.retryrs-test-deps
PY_BENCH_STAMP := $(VENV)/.retryrs-bench-deps
# The native module is rebuilt only when Rust sources, manifests or the lock change.
# maturin develop installs the package editable, so Python-only edits need no rebuild.
PY_NATIVE_STAMP := $(PY_BUILD)/native.stamp
PY_NATIVE_SRC := $(wildcard bindings-python/src/*.rs bindings-python/src/*/*.rs core/src/*.rs core/src/*/*.rs) \
	bindings-python/Cargo.toml \
	bindings-python/pyproject.toml core/Cargo.toml Cargo.toml Cargo.lock

$(PY):
	python3 -m venv $(VENV)

PY_TEST_REQUIREMENTS := bindings-python/requirements-test.txt
$(PY_DEPS_STAMP): $(PY_TEST_REQUIREMENTS) | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check -r $(PY_TEST_REQUIREMENTS)
	touch $@
# Once, before make test's parts share the venv.
TEST_SETUP += $(PY_DEPS_STAMP)

$(PY_NATIVE_STAMP): $(PY_NATIVE_SRC) $(PY_DEPS_STAMP)
	mkdir -p $(PY_BUILD)
	cd bindings-python && VIRTUAL_ENV=$(VENV) PATH=$(VENV)/bin:$$PATH $(VENV)/bin/maturin develop --locked --quiet
	touch $@
# Once, before make test's parts: test-python, test-http-python and test-snippets all
# need it, and two `maturin develop` at once race on the one .so they copy into the
# package (CI: one copied it while the other's cargo had replaced the source).
TEST_SETUP += $(PY_NATIVE_STAMP)

# Builds and installs the package into .venv (editable).
python-dev: $(PY_NATIVE_STAMP)

test-python: $(PY_NATIVE_STAMP)
	mkdir -p $(BUILD)/conformance
	cd bindings-python && $(PY) -m pytest -q -rs -p no:cacheprovider tests
	cd bindings-python && $(PY) -m mypy --strict --no-incremental python/retryrs tests/typed_usage.py
	# The stubs against the built module (what users' type checkers read).
	cd bindings-python && $(PY) -m mypy.stubtest retryrs --allowlist stubtest-allowlist.txt

# The hostile-server HTTP conformance suite (tests/http) over every Python helper.
.PHONY: test-http-python
TEST_TARGETS += test-http-python
test-http-python: $(PY_NATIVE_STAMP)
	mkdir -p $(BUILD)/conformance
	$(PY) tests/http/python/run.py --markdown $(BUILD)/conformance/http-python.md

$(PY_BENCH_STAMP): | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check tenacity==9.2.1 stamina==26.1.0 backoff==2.2.1 prometheus-client==0.26.0
	touch $@

bench-python: $(PY_NATIVE_STAMP) $(PY_BENCH_STAMP)
	mkdir -p $(BUILD)/bench
	$(PY) bench/python/bench.py --markdown $(BUILD)/bench/python.md

demo-python: $(PY_NATIVE_STAMP)
	$(PY) examples/python/demo.py
