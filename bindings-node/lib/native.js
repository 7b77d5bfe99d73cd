'use strict';
// Finds the native addon, the way napi-rs packages do, in this order:
//   1. RETRYRS_NATIVE_LIBRARY_PATH, when set (a custom build; nothing else is tried);
//   2. when the user asked for a source build (RETRYRS_BUILD_FROM_SOURCE=1, or npm's
//      npm_config_build_from_source=true): retryrs.node next to this package, built from
//      the Rust sources the package ships if it is not there yet (once; says so on stderr);
//   3. the prebuilt platform package, @retryrs/<tuple> (lib/platforms.js), which npm
//      installs from the main package's optionalDependencies (and skips elsewhere);
//   4. retryrs.node next to this package: a local build (`make node-addon`,
//      `npm run build`).
// Nothing is compiled unless asked: otherwise it fails with the platform, what it tried,
// and how to get an addon (the prebuilt package, or the source build and how to ask).
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { PLATFORMS, tupleOf, packageName } = require('./platforms');

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

function runtimeTuple() {
  const { platform: os, arch: cpu } = process;
  return tupleOf({ os, cpu, libc: os === 'linux' && isMusl() ? 'musl' : 'glibc' });
}

function describe(err) {
  return err.code === 'MODULE_NOT_FOUND' ? 'not installed' : err.message.split('\n')[0];
}

// The switches napi-rs and prebuild users know: npm turns `--build-from-source` into
// npm_config_build_from_source for the scripts it runs (`npm start --build-from-source`).
function buildRequested() {
  const ours = process.env.RETRYRS_BUILD_FROM_SOURCE;
  const npms = process.env.npm_config_build_from_source;
  return (ours !== undefined && ours !== '' && ours !== '0') || npms === 'true' || npms === 'retryrs';
}

function buildFromSource(tuple) {
  process.stderr.write(
    `retryrs: building the native addon for ${tuple} from source with cargo, as asked ` +
      `(once, into ${localAddon}; this takes a minute or two)...\n`,
  );
  const res = spawnSync(process.execPath, [path.join(pkgDir, 'scripts', 'build.js')], {
    cwd: pkgDir,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  return res.status === 0;
}

function tryRequire(what, tried) {
  try {
    return { addon: require(what) };
  } catch (err) {
    tried.push(`${what}: ${describe(err)}`);
    return null;
  }
}

function load() {
  const custom = process.env.RETRYRS_NATIVE_LIBRARY_PATH;
  if (custom) return require(path.resolve(custom));

  const tuple = runtimeTuple();
  const platformPkg = packageName(tuple);
  const shipsSources = fs.existsSync(path.join(pkgDir, 'Cargo.toml'));
  const tried = [];
  let found;
  if (buildRequested()) {
    if (fs.existsSync(localAddon) && (found = tryRequire(localAddon, tried))) return found.addon;
    if (!shipsSources) {
      tried.push(`a source build (asked for): this copy of retryrs has no Rust sources`);
    } else if (buildFromSource(tuple)) {
      return require(localAddon);
    } else {
      tried.push('a source build with cargo (asked for): failed (its output is above)');
    }
  }
  if ((found = tryRequire(platformPkg, tried))) return found.addon;
  if (!fs.existsSync(localAddon)) tried.push(`${localAddon}: not built`);
  else if ((found = tryRequire(localAddon, tried))) return found.addon;

  const prebuilt = PLATFORMS.map(tupleOf);
  const getPrebuilt = prebuilt.includes(tuple)
    ? `Install the prebuilt addon, ${platformPkg}: npm installs it with retryrs unless ` +
      `optional dependencies are left out (--omit=optional, --no-optional).`
    : `No prebuilt addon is published for ${tuple} (only for ${prebuilt.join(', ')}).`;
  const build = shipsSources
    ? `Or build it from the Rust sources retryrs ships (needs Rust's cargo, https://rustup.rs): ` +
      `run once with RETRYRS_BUILD_FROM_SOURCE=1 in the environment (e.g. ` +
      `\`RETRYRS_BUILD_FROM_SOURCE=1 node -e "require('retryrs')"\`), or \`npm run build\` in ${pkgDir}.`
    : `Or build it with \`npm run build\` in ${pkgDir} (needs Rust's cargo, https://rustup.rs).`;
  throw new Error(
    `retryrs: no native addon for ${tuple} (Node ${process.version}). Tried:\n  - ${tried.join('\n  - ')}\n` +
      `${getPrebuilt}\n${build}`,
  );
}

module.exports = load();
