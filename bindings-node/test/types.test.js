'use strict';
// index.d.ts is real: check.ts (typical use plus misuse that must not compile) passes
// `tsc --noEmit` against the package's own declarations.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

test('index.d.ts types real use and rejects misuse (tsc --noEmit)', () => {
  const tsc = require.resolve('typescript/bin/tsc');
  const res = spawnSync(process.execPath, [tsc, '-p', path.join(__dirname, 'types', 'tsconfig.json')], { encoding: 'utf8' });
  assert.equal(res.status, 0, `tsc failed:\n${res.stdout}${res.stderr}`);
});
