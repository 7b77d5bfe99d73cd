'use strict';
// AbortSignal: an abort ends the call at once with signal.reason; per-attempt timeouts
// abort ctx.signal and count as transient failures.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Retrier } = require('..');
const { transient } = require('./helpers');

test('an abort during a 30 s wait rejects at once with signal.reason, and no attempt follows', async () => {
  const events = [];
  const r = new Retrier({ initialDelayMs: 30_000, maxDelayMs: 30_000, jitter: 'none', deadlineMs: null, onEvent: (e) => events.push(e) });
  const controller = new AbortController();
  const reason = new Error('user gave up');
  let calls = 0;
  const started = performance.now();
  const p = r.call(() => {
    calls += 1;
    throw transient();
  }, { signal: controller.signal });
  setTimeout(() => controller.abort(reason), 50);
  await assert.rejects(p, (err) => err === reason);
  const took = performance.now() - started;
  assert.ok(took < 2000, `rejected ${took} ms after the start of a 30 s wait`);
  assert.equal(calls, 1);
  assert.deepEqual(events.map((e) => e.kind), ['attempt_failed', 'retrying', 'cancelled']);
  assert.equal(events[2].attempt, 1);
  assert.equal(events[2].error.code, 'ECONNRESET', 'the Cancelled event carries the last failure');
  // Still nothing after the wait would have ended? The timer was cleared: see lifetime tests.
});

test('an already-aborted signal rejects without calling fn', async () => {
  const events = [];
  const r = new Retrier({ onEvent: (e) => events.push(e) });
  const reason = new Error('too late');
  let called = false;
  await assert.rejects(r.call(() => { called = true; }, { signal: AbortSignal.abort(reason) }), (err) => err === reason);
  assert.equal(called, false);
  assert.deepEqual(events.map((e) => [e.kind, e.attempt]), [['cancelled', 0]]);
});

test('an abort during an attempt rejects at once and is never offered to the predicate', async () => {
  let offered = 0;
  const r = new Retrier({ shouldRetry: () => { offered += 1; return true; } });
  const controller = new AbortController();
  let seen;
  const p = r.call((ctx) => {
    seen = ctx.signal;
    return new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
  }, { signal: controller.signal });
  const reason = new Error('stop');
  setTimeout(() => controller.abort(reason), 10);
  await assert.rejects(p, (err) => err === reason);
  assert.equal(seen.aborted, true, 'ctx.signal aborted with the call');
  assert.equal(offered, 0);
});

test('an attempt that ignores the signal does not hold the abort back', async () => {
  const r = new Retrier();
  const controller = new AbortController();
  const p = r.call(() => new Promise((resolve) => setTimeout(resolve, 60_000).unref()), { signal: controller.signal });
  const started = performance.now();
  setTimeout(() => controller.abort(), 10);
  await assert.rejects(p, { name: 'AbortError' });
  assert.ok(performance.now() - started < 2000);
});

test('attemptTimeoutMs aborts ctx.signal with a TimeoutError and retries the attempt', async () => {
  const events = [];
  const r = new Retrier({ attemptTimeoutMs: 30, initialDelayMs: 0, maxDelayMs: 0, onEvent: (e) => events.push(e) });
  const signals = [];
  const value = await r.call((ctx) => {
    signals.push(ctx.signal);
    if (ctx.attempt === 1) return new Promise(() => {}); // hangs: only the timeout ends it
    return `attempt ${ctx.attempt}`;
  });
  assert.equal(value, 'attempt 2');
  assert.equal(signals[0].aborted, true);
  assert.equal(signals[0].reason.name, 'TimeoutError');
  assert.equal(signals[1].aborted, false, 'each attempt has its own signal');
  assert.notEqual(signals[0], signals[1]);
  assert.equal(events[0].kind, 'attempt_failed');
  assert.equal(events[0].error.name, 'TimeoutError');
});

test('ctx.signal aborts with the call signal when a timeout is also set', async () => {
  const r = new Retrier({ attemptTimeoutMs: 60_000 });
  const controller = new AbortController();
  let signal;
  const p = r.call((ctx) => {
    signal = ctx.signal;
    return new Promise(() => {});
  }, { signal: controller.signal });
  controller.abort(new Error('bye'));
  await assert.rejects(p, { message: 'bye' });
  assert.equal(signal.aborted, true);
  assert.equal(signal.reason.message, 'bye');
});

test('ctx carries the attempt number and a signal even on the fast path', async () => {
  const r = new Retrier({ initialDelayMs: 0, maxDelayMs: 0 });
  const seen = [];
  await r.call((ctx) => {
    seen.push([ctx.attempt, ctx.signal.aborted]);
    if (ctx.attempt < 3) throw transient();
    return 1;
  });
  assert.deepEqual(seen, [[1, false], [2, false], [3, false]]);
});

test('an abort from the listener during the Retrying event cancels before the wait', async () => {
  const controller = new AbortController();
  const r = new Retrier({ initialDelayMs: 0, maxDelayMs: 0, onEvent: (e) => { if (e.kind === 'retrying') controller.abort(); } });
  let calls = 0;
  await assert.rejects(r.call(() => { calls += 1; throw transient(); }, { signal: controller.signal }), { name: 'AbortError' });
  assert.equal(calls, 1, 'even a zero wait does not start a new attempt after a cancel');
});

test('calls sharing one signal add one abort listener to it, removed when the last settles', async () => {
  const warnings = [];
  const onWarning = (w) => warnings.push(w);
  process.on('warning', onWarning);
  try {
    const { getEventListeners } = require('node:events');
    const r = new Retrier({ initialDelayMs: 5, maxDelayMs: 5, jitter: 'none' });
    const c = new AbortController();
    const calls = Array.from({ length: 50 }, (_, i) => r.call((ctx) => { if (ctx.attempt === 1) throw transient(); return i; }, { signal: c.signal }));
    assert.equal(getEventListeners(c.signal, 'abort').length, 1);
    assert.deepEqual(await Promise.all(calls), Array.from({ length: 50 }, (_, i) => i));
    assert.equal(getEventListeners(c.signal, 'abort').length, 0);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(warnings.filter((w) => w.name === 'MaxListenersExceededWarning'), []);
  } finally {
    process.off('warning', onWarning);
  }
});
