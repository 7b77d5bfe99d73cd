'use strict';
// The platforms with a prebuilt addon package: the one list. Everything else derives from
// it: each package's name (@retryrs/<tuple>, napi-rs's naming), its manifest (os, cpu,
// libc) and README (scripts/dist/node-pack.js), the main package's optionalDependencies
// when it is packed for publishing, the release workflow's build matrix
// (`node scripts/dist/node-pack.js --matrix`), and the loader's choice and error message
// (lib/native.js). Adding a platform is one line here.
const PLATFORMS = Object.freeze([
  { target: 'x86_64-unknown-linux-gnu', os: 'linux', cpu: 'x64', libc: 'glibc' },
  { target: 'aarch64-unknown-linux-gnu', os: 'linux', cpu: 'arm64', libc: 'glibc' },
  { target: 'x86_64-unknown-linux-musl', os: 'linux', cpu: 'x64', libc: 'musl' },
  { target: 'x86_64-apple-darwin', os: 'darwin', cpu: 'x64' },
  { target: 'aarch64-apple-darwin', os: 'darwin', cpu: 'arm64' },
  { target: 'x86_64-pc-windows-msvc', os: 'win32', cpu: 'x64' },
]);

// napi-rs's platform names: linux-x64-gnu, linux-x64-musl, darwin-arm64, win32-x64-msvc.
// os and cpu are Node's process.platform and process.arch (and npm's os/cpu fields).
function tupleOf({ os, cpu, libc }) {
  if (os === 'linux') return `linux-${cpu}-${libc === 'musl' ? 'musl' : 'gnu'}`;
  if (os === 'win32') return `win32-${cpu}-msvc`;
  return `${os}-${cpu}`;
}

const packageName = (tuple) => `@retryrs/${tuple}`;
const addonFile = (tuple) => `retryrs.${tuple}.node`;

module.exports = { PLATFORMS, tupleOf, packageName, addonFile };
