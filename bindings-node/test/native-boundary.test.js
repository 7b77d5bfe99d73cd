'use strict';
// The engine is started lazily: a call whose first attempt succeeds never crosses into
// native code, and every engine call started is freed when its call settles.
const test = require('node:test');
const assert = require('node:assert/strict');
const native = require('../lib/native');
const { Retrier } = require('..');
const { flaky } = require('./helpers');

function countNativeCalls(fn) {
  const counts = {};
  const originals = {};
  for (const [name, value] of Object.entries(native)) {
    if (typeof value !== 'function' || /^[A-Z]/.test(name)) continue;
    originals[name] = value;
    native[name] = (...args) => {
      counts[name] = (counts[name] || 0) + 1;
      return value(...args);
    };
  }
  return Promise.resolve()
    .then(fn)
    .finally(() => Object.assign(native, originals))
    .then(() => counts);
}

test('a call that succeeds at once never crosses into native code', async () => {
  const r = new Retrier({ initialDelayMs: 0, maxDelayMs: 0 });
  const counts = await countNativeCalls(async () => {
    for (let i = 0; i < 1000; i++) assert.equal(await r.call(() => i), i);
    for (let i = 0; i < 1000; i++) assert.equal(await r.call(async () => i), i);
  });
  assert.deepEqual(counts, {});
});

test('a failure starts the engine, and the engine call is freed when the call settles', async () => {
  const r = new Retrier({ initialDelayMs: 0, maxDelayMs: 0 });
  const counts = await countNativeCalls(async () => {
    assert.equal(await r.call(flaky(2, 'ok')), 'ok');
  });
  assert.equal(counts.callStart, 1);
  assert.equal(counts.callRecord, 2);
  // Bounded (the default deadline): each wait's end and the next attempt's bound in one
  // crossing, never a second one for the bound.
  assert.equal(counts.callAfterWaitBound, 2);
  assert.equal(counts.callAfterWait, undefined);
  assert.equal(counts.callRemainingMs, undefined);
  assert.equal(counts.callFree, 1);
  assert.equal(native.callsInProgress(), 0);
});

test('an unbounded call asks only for the next attempt after a wait, no bound', async () => {
  const r = new Retrier({ initialDelayMs: 0, maxDelayMs: 0, deadlineMs: null });
  const counts = await countNativeCalls(async () => {
    assert.equal(await r.call(flaky(2, 'ok')), 'ok');
  });
  assert.equal(counts.callAfterWait, 2);
  assert.equal(counts.callAfterWaitBound, undefined);
  assert.equal(counts.callRemainingMs, undefined);
  assert.equal(counts.callFree, 1);
  assert.equal(native.callsInProgress(), 0);
});

test('a stale or made-up engine handle is an error, not another call', () => {
  assert.throws(() => native.callRecord(123456789, 1, undefined, 0), /no call in progress/);
  const policy = native.NativePolicy.create({}, undefined);
  const id = native.callStart(policy.id, 0, false);
  assert.equal(native.callFree(id), true);
  assert.equal(native.callFree(id), false);
  const reused = native.callStart(policy.id, 0, false);
  assert.throws(() => native.callAttempt(id), /no call in progress/, 'the old handle does not reach the slot reused');
  assert.equal(native.callAttempt(reused), 1);
  native.callFree(reused);
});
