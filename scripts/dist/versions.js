#!/usr/bin/env node
// One version: the workspace's in Cargo.toml is the only one written by hand. This checks
// (or, with --write, sets) every other place that states it, and checks that the static
// link line is the same list everywhere it is written, and the repository URL too.
//   node versions.js           fails, naming each place that differs
//   node versions.js --write   rewrites the npm manifests and lock, and the READMEs' install
//                              commands (artefact names, SONAME, find_package), to the workspace's
// Derived elsewhere, not here: the npm platform packages (scripts/dist/node-pack.js writes
// their manifests), the wheel and sdist (pyproject's version is dynamic: maturin
// reads Cargo), the header macros (cbindgen copies them from the Rust consts in
// bindings-c/src/lib.rs, which this checks and --write sets; `make header-c` then),
// the .pc and CMake version files (written by `make install-c`, checked by test-dist-c).
// Every version the built artefacts state, those included: scripts/dist/artefact-versions.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const repo = path.resolve(__dirname, '..', '..');
const read = (rel) => fs.readFileSync(path.join(repo, rel), 'utf8');

function workspaceVersion() {
  const section = read('Cargo.toml').split(/^\[workspace\.package\]$/m)[1];
  const m = section && section.split(/^\[/m)[0].match(/^version = "([^"]+)"$/m);
  if (!m) throw new Error('versions: no version in [workspace.package] of Cargo.toml');
  return m[1];
}

// [file, description, get(json), set(json, v)]
function npmPlaces() {
  const places = [
    ['bindings-node/package.json', 'version', (j) => j.version, (j, v) => (j.version = v)],
    ['bindings-node/package-lock.json', 'version', (j) => j.version, (j, v) => (j.version = v)],
    ['bindings-node/package-lock.json', 'packages[""].version', (j) => j.packages[''].version, (j, v) => (j.packages[''].version = v)],
  ];
  return places;
}

// The install commands of the READMEs name the artefacts of this version: the file names
// (retryrs-V..., retryrs-c-V-..., libretryrs.so.V), the SONAME (bindings-c/build.rs's
// rule) and CMake's find_package(retryrs MAJOR.MINOR). [regex, want(version)] per kind;
// the first group is the version stated.
const docFiles = ['README.md', 'bindings-c/README.md'];
function sonameSuffix(version) {
  const [major, minor] = version.split('.');
  if (major !== '0') return major;
  return minor === '0' ? version : `0.${minor}`;
}
const docPatterns = [
  [/\b(?:dist\/retryrs|retryrs-c|retryrs-linux-x64-gnu)-(\d+\.\d+\.\d+)\b/g, (v) => [v]],
  [/\blibretryrs\.so\.(\d+(?:\.\d+)*)\b/g, (v) => [v, sonameSuffix(v)]],
  [/\bfind_package\(retryrs (\d+\.\d+)\b/g, (v) => [v.split('.').slice(0, 2).join('.')]],
];

// The C header's version macros are Rust consts that cbindgen copies (it cannot evaluate
// env!), so they are written out in bindings-c/src/lib.rs.
const versionConsts = 'bindings-c/src/lib.rs';
function constProblems(version, fix) {
  const parts = Object.fromEntries(['MAJOR', 'MINOR', 'PATCH'].map((k, i) => [k, version.split('.')[i]]));
  const problems = [];
  let seen = 0;
  const text = read(versionConsts).replace(/^(pub const RETRYRS_VERSION_(MAJOR|MINOR|PATCH): u32 = )(\d+);$/gm, (whole, head, part, stated) => {
    seen += 1;
    if (stated === parts[part]) return whole;
    problems.push(`${versionConsts}: RETRYRS_VERSION_${part} is ${stated}, want ${parts[part]}`);
    return `${head}${parts[part]};`;
  });
  if (seen !== 3) problems.push(`${versionConsts}: want the three consts RETRYRS_VERSION_MAJOR/MINOR/PATCH, found ${seen}`);
  if (fix) fs.writeFileSync(path.join(repo, versionConsts), text);
  return problems;
}

function docProblems(version, fix) {
  const problems = [];
  for (const file of docFiles) {
    let text = read(file);
    for (const [re, want] of docPatterns) {
      text = text.replace(re, (whole, stated) => {
        const ok = want(version);
        if (ok.includes(stated)) return whole;
        // A stated SONAME is the short form, a file name the long one.
        const right = stated.split('.').length === 3 ? ok[0] : ok[ok.length - 1];
        problems.push(`${file}: "${whole}" states ${stated}, want ${right}`);
        return whole.replace(stated, right);
      });
    }
    if (fix) fs.writeFileSync(path.join(repo, file), text);
  }
  return problems;
}

function check() {
  const version = workspaceVersion();
  const problems = [...docProblems(version, false), ...constProblems(version, false)];
  for (const [file, what, get] of npmPlaces()) {
    const found = get(JSON.parse(read(file)));
    if (found !== version) problems.push(`${file} ${what} is ${found}, Cargo.toml says ${version}`);
  }
  const pyproject = read('bindings-python/pyproject.toml');
  if (/^version\s*=/m.test(pyproject) || !/^dynamic = \[.*"version".*\]$/m.test(pyproject)) {
    problems.push('bindings-python/pyproject.toml must not state a version (dynamic = ["version"]: maturin reads Cargo.toml)');
  }
  // The static link line: the .pc file's Libs.private, repeated by the header and READMEs.
  const libs = read('bindings-c/retryrs.pc.in').match(/^Libs\.private: (.*)$/m)[1].trim();
  for (const file of ['include/retryrs.h', 'README.md', 'bindings-c/README.md']) {
    if (!read(file).includes(libs)) problems.push(`${file} does not state the static link line "${libs}" (bindings-c/retryrs.pc.in)`);
  }
  if (/-lgcc_s/.test(libs)) problems.push('Libs.private must not carry -lgcc_s: `cc -static` cannot link it');
  problems.push(...repositoryProblems());
  return problems;
}

// One repository URL: the workspace's (Cargo.toml [workspace.package] repository), which the
// npm manifest and the Python project's URLs repeat.
function repositoryProblems() {
  const section = read('Cargo.toml').split(/^\[workspace\.package\]$/m)[1].split(/^\[/m)[0];
  const m = section.match(/^repository = "([^"]+)"$/m);
  if (!m) return ['Cargo.toml [workspace.package] has no repository'];
  const url = m[1];
  const problems = [];
  const npm = JSON.parse(read('bindings-node/package.json')).repository;
  if (!npm || npm.url !== url) problems.push(`bindings-node/package.json repository.url is ${npm && npm.url}, Cargo.toml says ${url}`);
  const urls = read('bindings-python/pyproject.toml').split(/^\[project\.urls\]$/m)[1];
  const py = urls && urls.split(/^\[/m)[0].match(/^Repository = "([^"]+)"$/m);
  if (!py || py[1] !== url) problems.push(`bindings-python/pyproject.toml [project.urls] Repository is ${py && py[1]}, Cargo.toml says ${url}`);
  return problems;
}

function write() {
  const version = workspaceVersion();
  const files = new Map();
  for (const [file, , , set] of npmPlaces()) {
    if (!files.has(file)) files.set(file, JSON.parse(read(file)));
    set(files.get(file), version);
  }
  for (const [file, json] of files) fs.writeFileSync(path.join(repo, file), `${JSON.stringify(json, null, 2)}\n`);
  docProblems(version, true);
  constProblems(version, true);
}

module.exports = { workspaceVersion };

if (require.main === module) {
  if (process.argv[2] === '--write') {
    write();
  }
  const problems = check();
  if (problems.length) {
    console.error(`versions: the workspace version, the static link line or the repository URL differs:\n  - ${problems.join('\n  - ')}\n` +
      'Run `make version-sync` after changing the version in Cargo.toml.');
    process.exit(1);
  }
  console.log(`versions: ${workspaceVersion()} everywhere; one static link line`);
}
