'use strict';
// Outcomes: the value as it is, the original error unchanged, RetryExhaustedError with
// every failure, thrown non-errors intact; predicate and listener throws.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Retrier, RetryExhaustedError, isTransientError, retryAfterFromError } = require('..');
const { transient, flaky } = require('./helpers');

const fast = { initialDelayMs: 0, maxDelayMs: 0 };

test('the value comes back as it is, from sync and async fns', async () => {
  const r = new Retrier(fast);
  const obj = { rate: 1.0842 };
  assert.equal(await r.call(() => obj), obj);
  assert.equal(await r.call(async () => obj), obj);
  assert.equal(await r.call(flaky(2, obj)), obj);
  assert.equal(await r.call(() => undefined), undefined);
  // A thenable that is not a native promise is awaited too.
  assert.equal(await r.call(() => ({ then: (ok) => ok(7) })), 7);
});

test('a permanent error rejects as the same object, unwrapped and unmutated', async () => {
  for (const Kind of [TypeError, RangeError, SyntaxError, ReferenceError, Error]) {
    const err = new Kind('bad request');
    const keys = Object.getOwnPropertyNames(err).sort();
    const stack = err.stack;
    let calls = 0;
    const r = new Retrier(fast);
    await assert.rejects(r.call(async () => { calls += 1; throw err; }), (e) => e === err);
    assert.equal(calls, 1, `${Kind.name} is permanent by default`);
    assert.deepEqual(Object.getOwnPropertyNames(err).sort(), keys);
    assert.equal(err.stack, stack);
  }
});

test('a permanent error after transient ones still surfaces as itself', async () => {
  const last = new TypeError('now it is wrong');
  let calls = 0;
  const r = new Retrier(fast);
  await assert.rejects(r.call(() => { calls += 1; throw calls < 3 ? transient() : last; }), (e) => e === last);
  assert.equal(calls, 3);
});

test('RetryExhaustedError carries attempts, reason, every failure in order and the last as cause', async () => {
  const thrown = [];
  const r = new Retrier({ ...fast, maxAttempts: 3, name: 'rates' });
  const err = await r.call(() => { const e = transient(`n${thrown.length + 1}`); thrown.push(e); throw e; }).catch((e) => e);
  assert.ok(err instanceof RetryExhaustedError);
  assert.ok(err instanceof Error);
  assert.equal(err.name, 'RetryExhaustedError');
  assert.equal(err.attempts, 3);
  assert.equal(err.reason, 'attempts');
  assert.equal(err.retrier, 'rates');
  assert.equal(err.errors.length, 3);
  thrown.forEach((e, i) => assert.equal(err.errors[i], e));
  assert.equal(err.cause, thrown[2]);
  assert.match(err.message, /rates: gave up after 3 attempts/);
  assert.match(err.message, /n3/);
});

test('thrown non-Error values survive intact', async () => {
  const r = new Retrier({ ...fast, maxAttempts: 2 });
  await assert.rejects(r.call(() => { throw 'plain string'; }), (e) => e === 'plain string');
  const obj = { code: 'ECONNRESET' }; // a plain object with a network code: transient
  const err = await r.call(() => { throw obj; }).catch((e) => e);
  assert.equal(err.errors[0], obj);
  assert.equal(err.cause, obj);
  await assert.rejects(r.call(() => Promise.reject(undefined)), (e) => e === undefined);
  const sym = Symbol('s');
  await assert.rejects(r.call(() => { throw sym; }), (e) => e === sym);
});

test('a throwing predicate ends the call with its throw, the original attached as cause', async () => {
  const original = transient();
  const broken = new Error('predicate bug');
  let calls = 0;
  const r = new Retrier({ ...fast, shouldRetry: () => { throw broken; } });
  await assert.rejects(r.call(() => { calls += 1; throw original; }), (e) => e === broken);
  assert.equal(broken.cause, original);
  assert.equal(calls, 1);
});

test('a hint reader returning a non-number ends the call with a TypeError carrying the failure', async () => {
  const original = transient();
  const r = new Retrier({ ...fast, retryAfterMs: () => '5s' });
  await assert.rejects(r.call(() => { throw original; }), (e) => e instanceof TypeError && /retryAfterMs/.test(e.message) && e.cause === original);
});

test('a throwing listener changes nothing and is reported as a process warning', async () => {
  const warnings = [];
  const onWarning = (w) => warnings.push(w);
  process.on('warning', onWarning);
  try {
    const boom = new Error('listener bug');
    const r = new Retrier({ ...fast, onEvent: () => { throw boom; } });
    assert.equal(await r.call(flaky(1, 'fine')), 'fine');
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(warnings.length, 3, 'attempt_failed, retrying, success');
    assert.equal(warnings[0].name, 'RetryrsListenerError');
    assert.equal(warnings[0].cause, boom);
  } finally {
    process.off('warning', onWarning);
  }
});

test('the default predicate: network and system errors are transient, programming errors permanent', () => {
  const sys = (code) => Object.assign(new Error(code), { code, errno: -1, syscall: 'read' });
  for (const code of ['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN', 'UND_ERR_SOCKET']) {
    assert.equal(isTransientError(Object.assign(new Error(code), { code })), true, code);
  }
  assert.equal(isTransientError(sys('EIO')), true, 'any system error');
  const fetchFailed = new TypeError('fetch failed', { cause: sys('ECONNREFUSED') });
  assert.equal(isTransientError(fetchFailed), true);
  const aggregate = new TypeError('fetch failed', { cause: new AggregateError([sys('ECONNREFUSED')]) });
  assert.equal(isTransientError(aggregate), true);
  assert.equal(isTransientError(new TypeError('fetch failed', { cause: new Error('bad') })), false);
  assert.equal(isTransientError(new DOMException('slow', 'TimeoutError')), true);
  assert.equal(isTransientError(AbortSignal.abort().reason), false, 'an AbortError is not a timeout');
  for (const e of [new TypeError('x'), new RangeError('x'), new SyntaxError('x'), new ReferenceError('x'), new Error('x'), 'str', null, undefined, 42]) {
    assert.equal(isTransientError(e), false, String(e));
  }
  const typeWithCode = Object.assign(new TypeError('x'), { code: 'ECONNRESET' });
  assert.equal(isTransientError(typeWithCode), false, 'a TypeError is a programming error whatever its code');
});

test('the default hint reader takes a numeric retryAfterMs from the error', () => {
  assert.equal(retryAfterFromError(transient('x', { retryAfterMs: 1500 })), 1500);
  assert.equal(retryAfterFromError(transient('x', { retryAfterMs: '1500' })), undefined);
  assert.equal(retryAfterFromError(transient()), undefined);
  assert.equal(retryAfterFromError('x'), undefined);
});
