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

test('the HTTP helpers\' declarations fit axios, undici and got (tsc --noEmit)', () => {
  const tsc = require.resolve('typescript/bin/tsc');
  const res = spawnSync(process.execPath, [tsc, '-p', path.join(__dirname, 'types', 'tsconfig.http.json')], { encoding: 'utf8' });
  assert.equal(res.status, 0, `tsc failed:\n${res.stdout}${res.stderr}`);
});

test('axios\'s per-request retry option is typed in a bundler program (tsc --noEmit, moduleResolution bundler)', () => {
  const tsc = require.resolve('typescript/bin/tsc');
  const res = spawnSync(process.execPath, [tsc, '-p', path.join(__dirname, 'types', 'bundler', 'tsconfig.json')], { encoding: 'utf8' });
  assert.equal(res.status, 0, `tsc failed:\n${res.stdout}${res.stderr}`);
});

test('the HTTP helpers\' declarations check under node16 resolution without skipLibCheck (got is an ES module)', () => {
  const tsc = require.resolve('typescript/bin/tsc');
  const res = spawnSync(process.execPath, [tsc, '-p', path.join(__dirname, 'types', 'tsconfig.node16.json')], { encoding: 'utf8', cwd: path.join(__dirname, '..') });
  // The clients' own typings need @types/node (not installed): only the package's own
  // files (lib/, the test program) are judged here.
  const ours = `${res.stdout}${res.stderr}`.split('\n').filter((line) => /^(lib|test)\//.test(line));
  assert.deepEqual(ours, [], `diagnostics in retryrs's declarations:\n${ours.join('\n')}`);
});

test("index.d.ts's RetrierOptions lists exactly the core's knob table plus Node's own options", () => {
  const ts = require('typescript');
  const { KNOBS, HOST_ONLY, OBJECTS } = require('../lib/options');
  const file = path.join(__dirname, '..', 'index.d.ts');
  const source = ts.createSourceFile(file, require('node:fs').readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const iface = source.statements.find((s) => ts.isInterfaceDeclaration(s) && s.name.text === 'RetrierOptions');
  assert.ok(iface, 'index.d.ts declares RetrierOptions');
  const declared = new Map(iface.members.map((m) => [m.name.getText(source), m.type.getText(source)]));
  // attemptTimeoutMs is both a knob and a host option (fromPolicy takes it to override).
  const expected = [...new Set([...KNOBS.map((k) => k.option), ...HOST_ONLY, ...OBJECTS])].sort();
  assert.deepEqual([...declared.keys()].sort(), expected, 'options drifted from the knob table');
  for (const k of KNOBS) {
    const type = declared.get(k.option);
    if (k.numeric) assert.match(type, /\bnumber\b/, `${k.option} is a number`);
    if (k.canBeOff) assert.match(type, /\bnull\b/, `${k.option} can be off: its type must admit null`);
  }
});
