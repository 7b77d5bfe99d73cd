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
