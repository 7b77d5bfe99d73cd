# Release artefacts: what users install without a Rust toolchain, built into dist/
# (ignored by git), and the tests that install them as a user would.
#
#   make dist        every artefact below, into dist/
#   make test-dist   (part of `make test`) installs each artefact from dist/ and runs the
#                    suites against the installed copy, with cargo hidden where the
#                    artefact is prebuilt
#
# Python: one abi3 wheel (CPython 3.9+) tagged manylinux2014 (glibc 2.17), linked by
# zig (PyPI's ziglang) so the glibc floor is 2.17 whatever the build machine has, and
# checked by auditwheel; plus the sdist.
.PHONY: dist dist-python test-dist test-dist-python
TEST_TARGETS += test-dist

DIST := $(CURDIR)/dist
DIST_WORK := $(BUILD)/dist-test
# The one version written by hand (the workspace's); every artefact derives from it.
VERSION := $(shell sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
DIST_TOOLS_STAMP := $(VENV)/.retryrs-dist-deps

$(DIST_TOOLS_STAMP): | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check "maturin>=1.5,<2" "ziglang>=0.13,<0.18" "auditwheel>=6.1,<7"
	touch $@

dist: dist-python

dist-python: $(DIST_TOOLS_STAMP)
	mkdir -p $(DIST)
	rm -f $(DIST)/retryrs-*.whl $(DIST)/retryrs-*.tar.gz
	cd bindings-python && VIRTUAL_ENV=$(VENV) PATH=$(VENV)/bin:$$PATH $(VENV)/bin/maturin build \
		--release --locked --zig --compatibility manylinux2014 --quiet --out $(DIST)
	cd bindings-python && VIRTUAL_ENV=$(VENV) PATH=$(VENV)/bin:$$PATH $(VENV)/bin/maturin sdist --out $(DIST)
	$(PY) scripts/dist/check-wheels $(VENV)/bin/auditwheel $(DIST)

# The dist tests take dist/ as `make dist` left it in this same run: one wheel serves
# all five interpreters.
test-dist: test-dist-python

test-dist-python: dist-python
	scripts/dist/python-wheel $(DIST) $(DIST_WORK)/python-wheel
	CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/dist-sdist scripts/dist/python-sdist $(DIST) $(DIST_WORK)/python-sdist
