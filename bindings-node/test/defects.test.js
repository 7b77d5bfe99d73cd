'use strict';
// Issue 13's defects, each found by using retryrs as a p-retry/cockatiel user would; each
// test failed on the code before its fix.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { Retrier, RetryExhaustedError } = require('..');
const { transient, flaky } = require('./helpers');

const fast = { initialDelayMs: 0, maxDelayMs: 0 };
const PKG = path.join(__dirname, '..');

/** Runs a script in a fresh node (default flags: unhandled rejections end the process). */
function runNode(source, args = []) {
  return spawnSync(process.execPath, [...args, '-e', source], {
    cwd: PKG, encoding: 'utf8', timeout: 30_000, env: { ...process.env, NODE_OPTIONS: '' },
  });
}

test('1: an async onEvent that rejects is reported like a throw; the process lives on', () => {
  const r = runNode(`
    const { Retrier } = require('.');
    const r = new Retrier({ initialDelayMs: 0, maxDelayMs: 0, onEvent: async () => { throw new Error('listener bug'); } });
    let n = 0;
    r.call(() => { n += 1; if (n < 2) throw Object.assign(new Error('reset'), { code: 'ECONNRESET' }); return 'ok'; })
      .then((v) => setTimeout(() => console.log('value', v), 20));
  `);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /value ok/);
  assert.match(r.stderr, /RetryrsListenerError: retryrs: an onEvent listener threw: Error: listener bug/);
});

test('1: an array of listeners: each told, a rejecting one reported, the others still told', async () => {
  const seen = [];
  const warnings = [];
  const onWarning = (w) => warnings.push(w);
  process.on('warning', onWarning);
  try {
    const r = new Retrier({ ...fast, onEvent: [async () => { throw new Error('bad'); }, (e) => seen.push(e.kind)] });
    assert.equal(await r.call(flaky(1, 'fine')), 'fine');
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(seen, ['attempt_failed', 'retrying', 'success']);
    assert.equal(warnings.filter((w) => w.name === 'RetryrsListenerError').length, 3);
  } finally {
    process.off('warning', onWarning);
  }
});
