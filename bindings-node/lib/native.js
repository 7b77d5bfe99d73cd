'use strict';
// Finds the native addon, the way napi-rs packages do, in this order:
//   1. RETRYRS_NATIVE_LIBRARY_PATH, when set (a custom build; nothing else is tried);
//   2. the prebuilt platform package, @retryrs/<platform>-<arch>[-<abi>], which npm
//      installs from the main package's optionalDependencies (and skips elsewhere);
//   3. retryrs.node next to this package: a local build (`make node-addon`,
//      `npm run build`);
//   4. a build from the Rust sources the package ships, when cargo is on PATH: the
//      package has no install script (npm needs no approval to install it), so a platform
//      with no prebuilt binary builds here, once, and says so on stderr.
// Otherwise it fails with the platform, what it tried and what to do.
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const pkgDir = path.join(__dirname, '..');
const localAddon = path.join(pkgDir, 'retryrs.node');

function isMusl() {
  // The cheap check first (Alpine's ldd is musl's), then what Node itself was built against.
  try {
    return fs.readFileSync('/usr/bin/ldd', 'utf8').includes('musl');
  } catch {
    const header = process.report && process.report.getReport().header;
    return !(header && header.glibcVersionRuntime);
  }
}

// napi-rs's platform names: linux-x64-gnu, linux-arm64-musl, darwin-arm64, win32-x64-msvc.
function platformTuple() {
  const { platform, arch } = process;
  if (platform === 'linux') return `linux-${arch}-${isMusl() ? 'musl' : 'gnu'}`;
  if (platform === 'win32') return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

function describe(err) {
  return err.code === 'MODULE_NOT_FOUND' ? 'not installed' : err.message.split('\n')[0];
}

function buildFromSource(tuple) {
  process.stderr.write(
    `retryrs: no prebuilt addon for ${tuple}; building it from source with cargo ` +
      `(once, into ${localAddon}; this takes a minute or two)...\n`,
  );
  const res = spawnSync(process.execPath, [path.join(pkgDir, 'scripts', 'build.js')], {
    cwd: pkgDir,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  return res.status === 0;
}

function hasCargo() {
  const res = spawnSync(process.env.CARGO || 'cargo', ['--version'], { stdio: 'ignore' });
  return res.status === 0;
}

function load() {
  const custom = process.env.RETRYRS_NATIVE_LIBRARY_PATH;
  if (custom) return require(path.resolve(custom));

  const tuple = platformTuple();
  const platformPkg = `@retryrs/${tuple}`;
  const tried = [];
  try {
    return require(platformPkg);
  } catch (err) {
    tried.push(`${platformPkg}: ${describe(err)}`);
  }
  if (fs.existsSync(localAddon)) {
    try {
      return require(localAddon);
    } catch (err) {
      tried.push(`${localAddon}: ${describe(err)}`);
    }
  } else {
    tried.push(`${localAddon}: not built`);
  }
  const shipsSources = fs.existsSync(path.join(pkgDir, 'Cargo.toml'));
  if (shipsSources && process.env.RETRYRS_NO_SOURCE_BUILD !== '1' && hasCargo()) {
    if (buildFromSource(tuple)) return require(localAddon);
    tried.push('building from source with cargo: failed (its output is above)');
  }
  const cargoHint = shipsSources
    ? `or install Rust (https://rustup.rs) so that retryrs builds itself on the next load ` +
      `(or run \`npm run build\` in ${pkgDir})`
    : `or build it with \`npm run build\` in ${pkgDir} (needs Rust's cargo)`;
  throw new Error(
    `retryrs: no native addon for ${tuple} (Node ${process.version}). Tried:\n  - ${tried.join('\n  - ')}\n` +
      `Install the prebuilt one with \`npm install ${platformPkg}\` if it exists for your platform, ${cargoHint}.`,
  );
}

module.exports = load();
