'use strict';
// The virtual-time switch: waits take no real time, the deadline holds in virtual time,
// and the same seed gives the same delays.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Retrier, RetryBudget, testing } = require('..');
const { AsyncResource } = require('node:async_hooks');
const { transient } = require('./helpers');

test('under virtual time a 15 s deadline is reached at once, and holds', async () => {
  const events = [];
  const r = new Retrier({ maxAttempts: 100, initialDelayMs: 1000, maxDelayMs: 4000, jitter: 'none', onEvent: (e) => events.push(e) });
  const started = performance.now();
  const err = await testing.scoped(() => r.call(() => { throw transient(); }).catch((e) => e));
  assert.ok(performance.now() - started < 1000, 'no real waiting');
  assert.equal(err.reason, 'deadline');
  // 1000 + 2000 + 4000 + 4000 + 4000 = 15000 (a wait that ends on the deadline is
  // allowed); the next 4000 would pass it.
  assert.deepEqual(events.filter((e) => e.kind === 'retrying').map((e) => [e.elapsedMs, e.delayMs]), [[0, 1000], [1000, 2000], [3000, 4000], [7000, 4000], [11000, 4000]]);
  assert.deepEqual(events.at(-1), { kind: 'exhausted', name: 'retry', attempt: 6, elapsedMs: 15000, reason: 'deadline', retriesLeft: 94, error: err.cause });
  assert.equal(testing.isOn(), false, 'scoped restores the switch');
});

test('testing.advance moves the clock an attempt sees; a slow attempt counts against the deadline', async () => {
  testing.enable();
  try {
    assert.equal(testing.now(), 0);
    const r = new Retrier({ initialDelayMs: 100, maxDelayMs: 100, jitter: 'none', deadlineMs: 1000 });
    let calls = 0;
    const err = await r.call(() => {
      calls += 1;
      testing.advance(400);
      throw transient();
    }).catch((e) => e);
    // Attempts end at 400, 900 (after a 100 ms wait) and 1400 (after a wait that ends
    // exactly on the deadline); then a wait would pass it.
    assert.equal(err.reason, 'deadline');
    assert.equal(calls, 3);
    assert.equal(testing.now(), 1400);
  } finally {
    testing.disable();
  }
  assert.throws(() => testing.advance(1), /virtual time is off/);
  assert.throws(() => testing.now(), /virtual time is off/);
});

test('the same seed gives the same delays; different seeds differ', async () => {
  const delays = async (seed) => {
    const seen = [];
    const r = new Retrier({ seed, maxAttempts: 6, deadlineMs: null, onEvent: (e) => e.kind === 'retrying' && seen.push(e.delayMs) });
    await testing.scoped(() => r.call(() => { throw transient(); }).catch(() => {}));
    return seen;
  };
  const a = await delays(42);
  assert.equal(a.length, 5);
  assert.deepEqual(await delays(42), a);
  assert.deepEqual(await delays(42n), a, 'a bigint seed is the same seed');
  assert.notDeepEqual(await delays(43), a);
});

test('a hint longer than the cap is honoured (never sooner than asked), the deadline bounds it', async () => {
  const seen = [];
  const r = new Retrier({ initialDelayMs: 10, maxDelayMs: 10, jitter: 'none', deadlineMs: 5000, onEvent: (e) => e.kind === 'retrying' && seen.push(e.delayMs) });
  let n = 0;
  const value = await testing.scoped(() => r.call(() => { if (++n === 1) throw transient('busy', { retryAfterMs: 3000.2 }); return n; }));
  assert.equal(value, 2);
  assert.deepEqual(seen, [3001]);
  const err = await testing.scoped(() => r.call(() => { throw transient('busy', { retryAfterMs: 6000 }); }).catch((e) => e));
  assert.equal(err.reason, 'deadline');
  assert.equal(err.attempts, 1);
});

test('a budget is shared between retriers: failures drain it, successes refill it', async () => {
  const budget = new RetryBudget(4, 0.5);
  const a = new Retrier({ budget, initialDelayMs: 0, maxDelayMs: 0, maxAttempts: 10 });
  const b = new Retrier({ budget, initialDelayMs: 0, maxDelayMs: 0, maxAttempts: 10 });
  const err = await a.call(() => { throw transient(); }).catch((e) => e);
  assert.equal(err.reason, 'budget');
  assert.equal(err.attempts, 2, '4 tokens: one retry allowed (3 > 2), then 2 is not > 2');
  assert.equal(budget.tokens, 2);
  assert.equal(await b.call(() => 'ok'), 'ok', 'a first-attempt success still credits the budget');
  assert.equal(budget.tokens, 2.5);
  assert.equal(budget.maxTokens, 4);
  assert.equal(budget.tokenRatio, 0.5);
});

test('testing.scoped: nested scopes end in any order; a scope that ended is off wherever its context went', async () => {
  let endOuter;
  let endInner;
  let inner;
  let inOuter;
  let inInner;
  const probe = () => [testing.isOn(), testing.isOn() ? testing.now() : null];
  const outer = testing.scoped(() => {
    testing.advance(5);
    inOuter = AsyncResource.bind(probe);
    inner = testing.scoped(() => {
      inInner = AsyncResource.bind(probe);
      return new Promise((resolve) => { endInner = resolve; });
    });
    return new Promise((resolve) => { endOuter = resolve; });
  });
  assert.deepEqual(inInner(), [true, 0], 'the newest scope is current');
  assert.deepEqual(testing.isOn(), false, "the test's own context is in neither scope");
  endOuter();
  await outer;
  assert.deepEqual(inOuter(), [false, null], 'the outer scope ended');
  assert.deepEqual(inInner(), [true, 0], 'the inner scope is still on');
  endInner();
  await inner;
  assert.deepEqual(inInner(), [false, null], 'the last scope ended: off again');
  // The inner scope ending first hands the clock back to the outer one.
  await testing.scoped(async () => {
    testing.advance(5);
    await testing.scoped(() => testing.advance(1));
    assert.equal(testing.now(), 5);
  });
  assert.equal(testing.isOn(), false);
});

test('testing.scoped belongs to its async context: a concurrent call outside it waits for real', async () => {
  let release;
  let opened;
  const isOpen = new Promise((resolve) => { opened = resolve; });
  const held = testing.scoped(async () => {
    const r = new Retrier({ maxAttempts: 2, initialDelayMs: 100, maxDelayMs: 100, jitter: 'none', deadlineMs: null });
    await r.call(() => { throw transient(); }).catch(() => {});
    assert.equal(testing.now(), 100, "the scope's own wait is virtual");
    opened();
    await new Promise((resolve) => { release = resolve; });
  });
  await isOpen;
  assert.equal(testing.isOn(), false);
  const r = new Retrier({ maxAttempts: 2, initialDelayMs: 100, maxDelayMs: 100, jitter: 'none', deadlineMs: null });
  const t0 = performance.now();
  await r.call(() => { throw transient(); }).catch(() => {});
  const took = performance.now() - t0;
  release();
  await held;
  // libuv's timers count whole milliseconds: a 100 ms timer may end 99.x ms later by
  // performance.now(); a virtual wait takes about none.
  assert.ok(took >= 99, `a concurrent scope made this 100 ms wait take ${took} ms`);
});

test('testing: the process-wide scope is asked for by name; a bad scope is an error naming it', async () => {
  await testing.scoped(async () => {
    assert.equal(testing.isOn(), true);
    testing.advance(7);
    assert.equal(await testing.scoped(() => testing.now()), 0, "this context's scope comes first");
    assert.equal(testing.now(), 7);
  }, { scope: 'process' });
  assert.equal(testing.isOn(), false);
  await assert.rejects(testing.scoped(() => 1, { scope: 'thread' }), /scope must be 'context' or 'process', got thread/);
  assert.throws(() => testing.enable({ scope: 'context' }), /scope must be 'thread' or 'process', got context/);
});

test('testing.scoped inside testing.enable(): the global clock comes back where it was', async () => {
  testing.enable();
  try {
    testing.advance(500);
    await testing.scoped(() => {
      assert.equal(testing.now(), 0, 'a fresh clock inside');
      testing.advance(10_000);
    });
    assert.equal(testing.isOn(), true);
    assert.equal(testing.now(), 500);
  } finally {
    testing.disable();
  }
});
