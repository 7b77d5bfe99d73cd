#!/usr/bin/env node
// Packs the npm packages the napi-rs way into DIST:
//   retryrs-<version>.tgz                 the JavaScript, the types, the loader, and the
//                                         Rust sources as one small cargo workspace (this
//                                         crate at the root, core/ beside it) so a
//                                         platform with no prebuilt addon can build it
//                                         when its user asks (lib/native.js)
//   retryrs-<tuple>-<version>.tgz         one per prebuilt addon given as TUPLE=PATH
// The platform packages (names, os/cpu/libc, READMEs) are written from the one list,
// bindings-node/lib/platforms.js. Nothing in them is an install script. Versions come
// from the workspace Cargo.toml.
//
// optionalDependencies name only packages the registry will have: a tarball that names an
// unpublished @retryrs/* package makes every install ask the registry for it (a 404 while
// the scope is unclaimed). So the main package names them only with --publish, which
// wants an addon for every platform of the list (the release workflow publishes them all
// before it); without it (`make dist`) it names none, and the platform tarball is
// installed beside it.
//   usage: node-pack.js [--publish] DIST STAGE TUPLE=ADDON...
//          node-pack.js --matrix     the release workflow's build matrix, as JSON
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const repo = path.resolve(__dirname, '..', '..');
const nodePkg = path.join(repo, 'bindings-node');
const { PLATFORMS, tupleOf, packageName, addonFile } = require(path.join(nodePkg, 'lib', 'platforms.js'));

// For .github/workflows/release.yml: one job per platform of the list, with the runner and
// the way it links (zig against glibc 2.17 for Linux glibc, as `make dist` does).
function matrix() {
  const runner = { linux: 'ubuntu-latest', darwin: 'macos-latest', win32: 'windows-latest' };
  return PLATFORMS.map((p) => ({
    os: runner[p.os],
    tuple: tupleOf(p),
    target: p.target,
    zig: p.os !== 'linux' ? '' : p.libc === 'musl' ? p.target : `${p.target}.2.17`,
  }));
}
if (process.argv[2] === '--matrix') {
  console.log(JSON.stringify({ include: matrix() }));
  process.exit(0);
}

const args = process.argv.slice(2);
const publish = args[0] === '--publish';
if (publish) args.shift();
const [dist, stage, ...addons] = args.map((a, i) => (i < 2 ? path.resolve(a) : a));
if (!dist || !stage) throw new Error('usage: node-pack.js [--publish] DIST STAGE TUPLE=ADDON...');
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

const platforms = PLATFORMS.map(tupleOf);
const packed = addons.map((spec) => spec.split('=')[0]);
for (const tuple of packed) {
  if (!platforms.includes(tuple)) throw new Error(`node-pack: ${tuple} is not in bindings-node/lib/platforms.js (${platforms.join(', ')})`);
}
if (publish) {
  const missing = platforms.filter((t) => !packed.includes(t));
  if (missing.length) throw new Error(`node-pack --publish: no addon for ${missing.join(', ')}; the main package would name unpublished packages`);
}

function stageMain() {
  const dir = path.join(stage, 'retryrs');
  const manifest = readJson(path.join(nodePkg, 'package.json'));
  for (const entry of ['index.js', 'index.mjs', 'index.d.ts', 'lib', 'scripts/build.js', 'README.md', 'src', 'build.rs']) {
    copy(path.join(nodePkg, entry), path.join(dir, entry));
  }
  for (const l of licences) copy(path.join(repo, l), path.join(dir, l));
  copy(path.join(repo, 'core', 'src'), path.join(dir, 'core', 'src'));
  // The core's manifest without its test, example and bench targets: the package ships the
  // library's sources only, and cargo refuses a manifest naming a target whose file is gone.
  const coreToml = fs.readFileSync(path.join(repo, 'core', 'Cargo.toml'), 'utf8').replace(/^\[\[(test|example|bench)\]\]\n(?:[^\n[][^\n]*\n)*\n*/gm, '');
  if (/^\[\[(test|example|bench)\]\]/m.test(coreToml)) throw new Error('node-pack: a target table of core/Cargo.toml was left in');
  fs.mkdirSync(path.join(dir, 'core'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'core', 'Cargo.toml'), coreToml);
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
  delete manifest.optionalDependencies;
  if (publish) manifest.optionalDependencies = Object.fromEntries(platforms.map((t) => [packageName(t), version]));
  writeJson(path.join(dir, 'package.json'), manifest);
  return dir;
}

function stagePlatform(tuple, addon) {
  const platform = PLATFORMS.find((p) => tupleOf(p) === tuple);
  const main = readJson(path.join(nodePkg, 'package.json'));
  const dir = path.join(stage, tuple);
  const manifest = {
    name: packageName(tuple),
    version,
    description: `The retryrs native addon for ${platform.target} (prebuilt; installed by the retryrs package)`,
    license: main.license,
    repository: main.repository,
    main: addonFile(tuple),
    files: [addonFile(tuple), ...licences],
    os: [platform.os],
    cpu: [platform.cpu],
    ...(platform.libc ? { libc: [platform.libc] } : {}),
    engines: main.engines,
  };
  fs.mkdirSync(dir, { recursive: true });
  writeJson(path.join(dir, 'package.json'), manifest);
  fs.writeFileSync(
    path.join(dir, 'README.md'),
    `# ${manifest.name}\n\nThe prebuilt native addon of [retryrs](https://www.npmjs.com/package/retryrs) ` +
      `for \`${platform.target}\`.\nInstall \`retryrs\`, not this package: npm picks the platform package that fits.\n`,
  );
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
