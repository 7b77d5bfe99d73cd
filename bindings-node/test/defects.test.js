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

test('2: shouldRetry may answer with a promise (p-retry parity): a false one is permanent', async () => {
  const permanent = transient('card declined');
  let calls = 0;
  const r = new Retrier({ ...fast, maxAttempts: 5, shouldRetry: async () => false });
  await assert.rejects(r.call(() => { calls += 1; throw permanent; }), (e) => e === permanent);
  assert.equal(calls, 1, 'a Promise<false> is not "retry"');
  const again = new Retrier({ ...fast, shouldRetry: async () => true, retryAfterMs: async () => 0 });
  assert.equal(await again.call(flaky(2, 'ok')), 'ok');
});

test('2: a non-boolean answer is read by truthiness (p-retry parity, issue 24): falsy passes the original error through', async () => {
  for (const answer of [1, 'yes', {}, Promise.resolve('yes')]) {
    let calls = 0;
    const r = new Retrier({ ...fast, shouldRetry: () => answer });
    assert.equal(await r.call(() => { calls += 1; if (calls < 3) throw transient(); return 'ok'; }), 'ok');
    assert.equal(calls, 3, `a truthy ${typeof answer} is "retry"`);
  }
  for (const answer of [0, '', null, undefined, Promise.resolve(undefined)]) {
    const original = transient();
    let calls = 0;
    const r = new Retrier({ ...fast, shouldRetry: () => answer });
    await assert.rejects(r.call(() => { calls += 1; throw original; }), (e) => e === original);
    assert.equal(calls, 1);
  }
  const original = transient();
  const r = new Retrier({ ...fast, retryAfterMs: async () => '5s' });
  await assert.rejects(r.call(() => { throw original; }), (e) => e instanceof TypeError && /retryAfterMs/.test(e.message) && e.cause === original);
});

test('3: a zero-delay storm yields: a timer and an abort are served', () => {
  // In a child process: before the fix the storm never yielded, and hung its process
  // (no timer, not even the test runner's, could fire).
  const res = runNode(`
    const { Retrier, RetryExhaustedError } = require('.');
    const transient = () => Object.assign(new Error('reset'), { code: 'ECONNRESET' });
    (async () => {
      const r = new Retrier({ initialDelayMs: 0, maxDelayMs: 0, maxAttempts: 2 ** 32 - 1, deadlineMs: null, jitter: 'none' });
      let timerFired = false;
      setTimeout(() => { timerFired = true; }, 10);
      let calls = 0;
      const e1 = await r.call(() => { calls += 1; throw transient(); }, { signal: AbortSignal.timeout(100) }).catch((e) => e);
      // Without a signal too: the loop yields, so a timer still fires while it runs.
      let fired = false;
      let n = 0;
      setTimeout(() => { fired = true; }, 5);
      const plain = new Retrier({ initialDelayMs: 0, maxDelayMs: 0, maxAttempts: 2 ** 32 - 1, deadlineMs: 200 });
      const e2 = await plain.call(() => { n += 1; throw transient(); }).catch((e) => e);
      console.log(JSON.stringify({ abort: e1.name, timerFired, calls, exhausted: e2 instanceof RetryExhaustedError, reason: e2.reason, fired, n }));
    })();
  `);
  assert.equal(res.status, 0, `the storm hung or failed (signal ${res.signal}): ${res.stderr}`);
  const got = JSON.parse(res.stdout);
  assert.equal(got.abort, 'TimeoutError', 'AbortSignal.timeout(100) ended the call');
  assert.ok(got.timerFired, 'the 10 ms timer fired during the storm');
  assert.ok(got.calls > 10, `the storm ran (${got.calls} attempts)`);
  assert.ok(got.exhausted && got.reason === 'deadline' && got.fired && got.n > 10, JSON.stringify(got));
});

test('4: RetryExhaustedError.errors keeps the last 64 failures', async () => {
  const r = new Retrier({ ...fast, maxAttempts: 1000 });
  let n = 0;
  const err = await r.call(() => { n += 1; throw transient(`failure ${n}`); }).catch((e) => e);
  assert.ok(err instanceof RetryExhaustedError);
  assert.equal(err.attempts, 1000);
  assert.equal(err.errors.length, 64);
  assert.equal(err.errors[0].message, 'failure 937');
  assert.equal(err.errors[63].message, 'failure 1000');
  assert.equal(err.cause, err.errors[63]);
});

test('5: every attempt without a signal of its own gets its own never-aborting ctx.signal', async () => {
  const warnings = [];
  const onWarning = (w) => warnings.push(w);
  process.on('warning', onWarning);
  try {
    const r = new Retrier();
    const signals = await Promise.all(Array.from({ length: 2000 }, () => r.call(async (ctx) => {
      ctx.signal.addEventListener('abort', () => {});
      await new Promise((resolve) => setImmediate(resolve));
      return ctx.signal;
    })));
    assert.equal(new Set(signals).size, 2000);
    assert.ok(signals.every((s) => s instanceof AbortSignal && !s.aborted));
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(warnings.map((w) => w.name), []);
  } finally {
    process.off('warning', onWarning);
  }
});

test('7: a predicate throwing a primitive or a frozen error keeps the failure reachable', async () => {
  const frozen = Object.freeze(new Error('frozen'));
  const withCause = new Error('has one', { cause: 'its own' });
  for (const thrown of ['nope', 42, undefined, frozen, withCause]) {
    const original = transient();
    const r = new Retrier({ ...fast, shouldRetry: () => { throw thrown; } });
    const e = await r.call(() => { throw original; }).catch((x) => x);
    assert.equal(e.name, 'RetryrsHookError', String(thrown));
    assert.equal(e.cause, original);
    assert.equal(e.thrown, thrown);
  }
  // An ordinary error thrown by the hook is the rejection itself, the failure its cause.
  const bug = new Error('predicate bug');
  const original = transient();
  const r = new Retrier({ ...fast, shouldRetry: () => { throw bug; } });
  await assert.rejects(r.call(() => { throw original; }), (e) => e === bug && e.cause === original);
});

test('8: messages quote the value as given, in JavaScript spelling', () => {
  const cases = [
    [{ maxAttempts: 1e300 }, /^maxAttempts must be .*, got 1e\+300$/],
    [{ maxAttempts: Infinity }, /got Infinity$/],
    [{ initialDelayMs: Infinity }, /^initialDelayMs must be .*, got Infinity$/],
    [{ maxDelayMs: -Infinity }, /got -Infinity$/],
    [{ multiplier: NaN }, /got NaN$/],
  ];
  for (const [options, message] of cases) {
    assert.throws(() => new Retrier(options), (e) => e instanceof RangeError && message.test(e.message), JSON.stringify(options));
  }
});

test('8: initialDelayMs above the default maxDelayMs blames the option given, and says both ways out', () => {
  assert.throws(() => new Retrier({ initialDelayMs: 10_000 }), (e) => e instanceof RangeError
    && e.message === 'initialDelayMs must be <= maxDelayMs (5000, its default), got 10000: lower initialDelayMs or set maxDelayMs too');
  // Both given: the rule as the core states it.
  assert.throws(() => new Retrier({ initialDelayMs: 10_000, maxDelayMs: 5000 }), /maxDelayMs must be >= initialDelayMs, got 5000 \(initialDelayMs is 10000\)/);
});

test("8: p-retry's, cockatiel's and async-retry's option names get a hint", () => {
  const hints = {
    retries: /did you mean maxAttempts \(retries \+ 1/,
    factor: /did you mean multiplier\?/,
    minTimeout: /did you mean initialDelayMs\?/,
    maxTimeout: /did you mean maxDelayMs\?/,
    randomize: /did you mean jitter/,
    onFailedAttempt: /did you mean onRetry .* or onEvent/,
    maxRetryTime: /did you mean deadlineMs\?/,
    maxattempts: /did you mean maxAttempts\?/,
    initialDelay: /did you mean initialDelayMs\?/,
  };
  for (const [key, hint] of Object.entries(hints)) {
    assert.throws(() => new Retrier({ [key]: 1 }), (e) => e instanceof TypeError && e.message.startsWith(`Retrier: unknown option '${key}'`) && hint.test(e.message), key);
  }
  assert.throws(() => new Retrier({ bogus: 1 }), { message: "Retrier: unknown option 'bogus'" });
});

test("a knob in the contract's snake_case (a policy document's key) gets its Node spelling as a hint", () => {
  const { KNOBS } = require('../lib/options');
  for (const k of KNOBS) {
    if (k.name === k.option) continue; // one word, no unit: the same in Node
    assert.throws(() => new Retrier({ [k.name]: 1 }), (e) => e instanceof TypeError && e.message === `Retrier: unknown option '${k.name}'; did you mean ${k.option}?`, k.name);
  }
  assert.throws(() => new Retrier({ attempt_timeout: 1 }), /did you mean attemptTimeoutMs\?/);
});

test('unref: a pending retry wait does not keep the process alive (p-retry, cockatiel)', () => {
  const script = (unref) => `
    const { Retrier } = require('.');
    const r = new Retrier({ initialDelayMs: 3000, maxDelayMs: 3000, jitter: 'none', unref: ${unref} });
    r.call(() => { throw Object.assign(new Error('reset'), { code: 'ECONNRESET' }); }).catch(() => {});
  `;
  const t0 = Date.now();
  const res = runNode(script(true));
  assert.equal(res.status, 0, res.stderr);
  assert.ok(Date.now() - t0 < 2500, 'exited without waiting out the 3 s retry');
  const t1 = Date.now();
  runNode(script(false).replace(/3000/g, '700').replace("throw Object", "if (globalThis.n = (globalThis.n || 0) + 1, globalThis.n > 1) return 1; throw Object"));
  assert.ok(Date.now() - t1 >= 700, 'without unref the wait holds the process');
  assert.throws(() => new Retrier({ unref: 'yes' }), /unref must be a boolean, got string/);
});

test('6: the ESM entry works through a symlinked install where .js is read as ESM unless the package says otherwise (Deno, pnpm links)', (t) => {
  const fs = require('node:fs');
  const os = require('node:os');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retryrs-symlink-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(PKG, path.join(dir, 'node_modules', 'retryrs'), 'dir');
  const main = path.join(dir, 'main.mjs');
  fs.writeFileSync(main, `
    import retryrs, { Retrier } from 'retryrs';
    const v = await new Retrier().call(() => 'ok');
    console.log(v, retryrs.Retrier === Retrier);
  `);
  // Node's stand-in for Deno's reading: a .js file without a "type" is an ES module
  // (the flag exists in Node 20.10 to 22; a Node without it says so, loudly).
  if (!process.allowedNodeEnvironmentFlags.has('--experimental-default-type')) {
    t.skip(`node ${process.version} has no --experimental-default-type to read .js as Deno does`);
    return;
  }
  const res = spawnSync(process.execPath, ['--experimental-default-type=module', main], { cwd: dir, encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
  assert.equal(res.status, 0, res.stderr);
  assert.equal(res.stdout.trim(), 'ok true');
});
