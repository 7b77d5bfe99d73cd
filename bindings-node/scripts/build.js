#!/usr/bin/env node
// Builds the native addon from source with cargo and copies it next to index.js as
// retryrs.node. `make node-addon` and `npm run build` run it; so does lib/native.js when
// the user asks for a source build (RETRYRS_BUILD_FROM_SOURCE=1) and the package ships
// its Rust sources (the npm tarball from `make dist` does: this crate and the core, as
// one small workspace).
// It is never an install script: installing retryrs runs nothing.
// Cargo is incremental: when nothing changed this takes well under a second.
'use strict';

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const pkgDir = path.resolve(__dirname, '..');
const profile = process.env.RETRYRS_NODE_PROFILE === 'debug' ? 'debug' : 'release';

function cargo(args, options = {}) {
  try {
    return execFileSync(process.env.CARGO || 'cargo', args, { cwd: pkgDir, ...options });
  } catch (err) {
    if (err.code === 'ENOENT') {
      console.error('retryrs: building the native addon needs Rust (cargo) on PATH: https://rustup.rs');
    }
    throw err;
  }
}

// Where cargo puts its output: CARGO_TARGET_DIR if set, else the workspace's target dir.
function targetDir() {
  if (process.env.CARGO_TARGET_DIR) return path.resolve(process.env.CARGO_TARGET_DIR);
  const meta = JSON.parse(cargo(['metadata', '--format-version', '1', '--no-deps'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }));
  return meta.target_directory;
}

function libraryName() {
  switch (process.platform) {
    case 'win32': return 'retryrs_node.dll';
    case 'darwin': return 'libretryrs_node.dylib';
    default: return 'libretryrs_node.so';
  }
}

function main() {
  const args = ['build', '-p', 'retryrs-node'];
  if (profile === 'release') args.push('--release');
  // The repository's lock (../Cargo.lock) or the one the npm tarball ships.
  if (fs.existsSync(path.join(pkgDir, '..', 'Cargo.lock')) || fs.existsSync(path.join(pkgDir, 'Cargo.lock'))) {
    args.push('--locked');
  }
  cargo(args, { stdio: ['ignore', 'inherit', 'inherit'] });
  const built = path.join(targetDir(), profile, libraryName());
  const dest = path.join(pkgDir, 'retryrs.node');
  // Copy to a temporary name and rename: a process that has the old addon loaded keeps
  // its mapping, and nobody ever sees a half-written file.
  const tmp = `${dest}.${process.pid}.tmp`;
  fs.copyFileSync(built, tmp);
  fs.renameSync(tmp, dest);
}

main();
