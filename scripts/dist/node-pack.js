#!/usr/bin/env node
// Packs the npm packages the napi-rs way into DIST:
//   retryrs-<version>.tgz                 the JavaScript, the types, the loader, and the
//                                         Rust sources as one small cargo workspace (this
//                                         crate at the root, core/ beside it) so a
//                                         platform with no prebuilt addon can build it;
//                                         optionalDependencies name every platform package
//   retryrs-<tuple>-<version>.tgz         one per prebuilt addon given as TUPLE=PATH
// Nothing in them is an install script. Versions come from the workspace Cargo.toml.
//   usage: node-pack.js DIST STAGE TUPLE=ADDON...
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const repo = path.resolve(__dirname, '..', '..');
const nodePkg = path.join(repo, 'bindings-node');
const [dist, stage, ...addons] = process.argv.slice(2).map((a, i) => (i < 2 ? path.resolve(a) : a));
if (!dist || !stage) throw new Error('usage: node-pack.js DIST STAGE TUPLE=ADDON...');
const { workspaceVersion } = require('./versions.js');
const version = workspaceVersion();
const licences = ['LICENSE-MIT', 'LICENSE-APACHE'];

const copy = (from, to) => fs.cpSync(from, to, { recursive: true });
const writeJson = (file, value) => fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
const readJson = (file) => JSON.parse(fs.readFileSync(file, 'utf8'));

function pack(dir) {
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dist], { cwd: dir, encoding: 'utf8' });
  const [{ filename, size, entryCount }] = JSON.parse(out);
  console.log(`${filename}: ${entryCount} files, ${size} bytes`);
}

const platforms = fs.readdirSync(path.join(nodePkg, 'npm')).sort();

function stageMain() {
  const dir = path.join(stage, 'retryrs');
  const manifest = readJson(path.join(nodePkg, 'package.json'));
  for (const entry of ['index.js', 'index.mjs', 'index.d.ts', 'lib', 'scripts/build.js', 'README.md', 'src', 'build.rs']) {
    copy(path.join(nodePkg, entry), path.join(dir, entry));
  }
  for (const l of licences) copy(path.join(repo, l), path.join(dir, l));
  for (const entry of ['Cargo.toml', 'src']) copy(path.join(repo, 'core', entry), path.join(dir, 'core', entry));
  // The crate's manifest plus the repository's workspace tables, with this crate as the
  // root and core/ its one other member: the same versions, profile and inherited fields.
  const rootToml = fs.readFileSync(path.join(repo, 'Cargo.toml'), 'utf8').replace(/^members = \[.*\]$/m, 'members = ["core"]');
  if (!rootToml.includes('members = ["core"]')) throw new Error('node-pack: no `members = [...]` line in Cargo.toml');
  fs.writeFileSync(
    path.join(dir, 'Cargo.toml'),
    `${fs.readFileSync(path.join(nodePkg, 'Cargo.toml'), 'utf8')}\n# Written by scripts/dist/node-pack.js from the repository's workspace.\n${rootToml}`,
  );
  // The repository's lock, pruned to this workspace's packages (cargo keeps every version).
  copy(path.join(repo, 'Cargo.lock'), path.join(dir, 'Cargo.lock'));
  execFileSync('cargo', ['metadata', '--offline', '--format-version', '1'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  delete manifest.devDependencies;
  manifest.scripts = { build: manifest.scripts.build };
  manifest.version = version;
  manifest.optionalDependencies = Object.fromEntries(platforms.map((t) => [`@retryrs/${t}`, version]));
  writeJson(path.join(dir, 'package.json'), manifest);
  return dir;
}

function stagePlatform(tuple, addon) {
  if (!platforms.includes(tuple)) throw new Error(`node-pack: no bindings-node/npm/${tuple}`);
  const dir = path.join(stage, tuple);
  const manifest = readJson(path.join(nodePkg, 'npm', tuple, 'package.json'));
  manifest.version = version;
  fs.mkdirSync(dir, { recursive: true });
  writeJson(path.join(dir, 'package.json'), manifest);
  copy(path.join(nodePkg, 'npm', tuple, 'README.md'), path.join(dir, 'README.md'));
  for (const l of licences) copy(path.join(repo, l), path.join(dir, l));
  copy(addon, path.join(dir, manifest.main));
  return dir;
}

fs.rmSync(stage, { recursive: true, force: true });
fs.mkdirSync(dist, { recursive: true });
for (const old of fs.readdirSync(dist).filter((f) => f.startsWith('retryrs-') && f.endsWith('.tgz'))) {
  fs.rmSync(path.join(dist, old));
}
pack(stageMain());
for (const spec of addons) {
  const [tuple, addon] = spec.split('=');
  pack(stagePlatform(tuple, path.resolve(addon)));
}
