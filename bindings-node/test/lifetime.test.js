'use strict';
// Calls leave nothing behind: no timer keeps the process alive after a call settles,
// thousands of concurrent calls stay independent, and memory stays flat.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { Retrier } = require('..');
const { transient } = require('./helpers');
const native = require('../lib/native');

const pkg = path.resolve(__dirname, '..');

/** Runs a script in a fresh node; resolves with its exit code, stdout and wall time. */
function runNode(args, script, limitMs) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [...args, '-e', script], { cwd: pkg, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    const killer = setTimeout(() => child.kill('SIGKILL'), limitMs);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(killer);
      resolve({ code, signal, out, ms: performance.now() - started });
    });
  });
}

test('nothing keeps the process alive after calls settle (a child exits promptly)', async () => {
  const script = `
    const { Retrier } = require('.');
    const reset = () => Object.assign(new Error('reset'), { code: 'ECONNRESET' });
    (async () => {
      // A success under a 60 s per-attempt timeout: its timer must be cleared.
      const timed = new Retrier({ attemptTimeoutMs: 60000 });
      await timed.call(async () => 'ok');
      // A retry after a real 20 ms wait, with a signal whose listener must be removed.
      const quick = new Retrier({ initialDelayMs: 20, maxDelayMs: 20, jitter: 'none' });
      let n = 0;
      await quick.call(() => { if (++n < 2) throw reset(); return 'ok'; }, { signal: new AbortController().signal });
      // An abort in the middle of a 60 s wait: the timer must be cleared.
      const slow = new Retrier({ initialDelayMs: 60000, maxDelayMs: 60000, jitter: 'none', deadlineMs: null });
      const c = new AbortController();
      const p = slow.call(() => { throw reset(); }, { signal: c.signal });
      setTimeout(() => c.abort(), 10);
      await p.catch(() => {});
      // An attempt that hangs until its 50 ms timeout, twice, then gives up.
      const hang = new Retrier({ attemptTimeoutMs: 50, maxAttempts: 2, initialDelayMs: 0, maxDelayMs: 0 });
      await hang.call(() => new Promise(() => {})).catch(() => {});
      console.log('settled');
    })();
  `;
  const { code, out, ms, signal } = await runNode([], script, 20_000);
  assert.equal(signal, null, 'the child had to be killed: something kept it alive');
  assert.equal(code, 0);
  assert.equal(out.trim(), 'settled');
  assert.ok(ms < 10_000, `exited after ${ms} ms`);
});

test('10,000 concurrent calls on one Retrier give correct, independent results', async () => {
  const r = new Retrier({ initialDelayMs: 1, maxDelayMs: 5, seed: 7 });
  const attemptsPerCall = new Array(10_000).fill(0);
  const results = await Promise.all(
    Array.from({ length: 10_000 }, (_, i) =>
      r.call(async (ctx) => {
        attemptsPerCall[i] += 1;
        assert.equal(ctx.attempt, attemptsPerCall[i]);
        await null;
        if (ctx.attempt <= i % 3) throw transient(`call ${i}`);
        return i * 2;
      }),
    ),
  );
  results.forEach((v, i) => assert.equal(v, i * 2));
  attemptsPerCall.forEach((n, i) => assert.equal(n, (i % 3) + 1, `call ${i}`));
  assert.equal(native.callsInProgress(), 0, 'every engine call was freed');
});

test('10,000 concurrent calls under one aborted signal all reject with its reason', async () => {
  const r = new Retrier({ initialDelayMs: 10_000, maxDelayMs: 10_000, jitter: 'none' });
  const c = new AbortController();
  const reason = new Error('shutdown');
  const calls = Array.from({ length: 10_000 }, (_, i) => r.call(() => { throw transient(`${i}`); }, { signal: c.signal }));
  setTimeout(() => c.abort(reason), 5);
  const settled = await Promise.allSettled(calls);
  assert.ok(settled.every((s) => s.status === 'rejected' && s.reason === reason));
});

test('memory stays flat over 300,000 calls', async () => {
  const script = `
    const { Retrier } = require('.');
    const reset = () => Object.assign(new Error('reset'), { code: 'ECONNRESET' });
    const r = new Retrier({ initialDelayMs: 0, maxDelayMs: 0, onEvent: () => {} });
    const plain = new Retrier({ initialDelayMs: 0, maxDelayMs: 0 });
    const signal = new AbortController().signal;
    async function batch(n) {
      for (let i = 0; i < n; i += 100) {
        const work = [];
        for (let k = 0; k < 100; k++) {
          let f = 0;
          const fn = () => { if (f++ < 2) throw reset(); return f; };
          work.push(k % 2 ? r.call(fn, { signal }) : plain.call(fn));
          work.push(plain.call(() => k));
        }
        await Promise.all(work);
      }
    }
    function settle() { for (let i = 0; i < 5; i++) gc(); return process.memoryUsage(); }
    (async () => {
      // Warm up until V8 and the allocator have sized their pools (about 200,000 calls
      // here), so what follows measures growth, not the first reservation.
      await batch(200000);
      await new Promise((r) => setTimeout(r, 50));
      const before = settle();
      // Three measured rounds: a leak grows RSS in every round, while the allocator and
      // V8 resize their pools now and then (one-off jumps of several MB on this machine).
      const rss = [before.rss];
      let after = before;
      for (let round = 0; round < 3; round++) {
        await batch(100000);
        await new Promise((r) => setTimeout(r, 50));
        after = settle();
        rss.push(after.rss);
      }
      const steps = rss.slice(1).map((v, i) => v - rss[i]);
      const live = require('./lib/native').callsInProgress();
      if (process.env.RETRYRS_MEM_DEBUG) console.error(rss);
      console.log(JSON.stringify({ heap: after.heapUsed - before.heapUsed, steps, live }));
    })();
  `;
  const { code, out } = await runNode(['--expose-gc'], script, 240_000);
  assert.equal(code, 0);
  const growth = JSON.parse(out);
  // A leaked call (its native state, its JS wrapper, its closure) is hundreds of bytes:
  // 100,000 of them would be tens of megabytes.
  assert.ok(growth.heap < 2 * 1024 * 1024, `JS heap grew by ${growth.heap} bytes over 300,000 calls`);
  // The smallest of the three rounds' growth: a leak of even 100 bytes a call shows in
  // every round (10 MB each); the pools' occasional resizing does not.
  const least = Math.min(...growth.steps);
  assert.ok(least < 8 * 1024 * 1024, `RSS grew in every round of 100,000 calls: ${growth.steps.join(', ')} bytes`);
  assert.equal(growth.live, 0, 'no engine call is left in progress');
});
