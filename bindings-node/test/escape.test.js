'use strict';
// Issue 24's escape hatches in the Node host: each test failed on the code before them.
const test = require('node:test');
const assert = require('node:assert/strict');
const { inspect } = require('node:util');
const { Retrier, RetryExhaustedError, RetryBudget, loadPolicies } = require('..');
const { transient, flaky } = require('./helpers');

const fast = { initialDelayMs: 0, maxDelayMs: 0 };

test('shouldRetry is read by truthiness: undefined passes the original error through unchanged', async () => {
  const codes = new Set(['ECONNRESET']);
  // The common p-retry style: `err.code && set.has(err.code)` answers undefined.
  const r = new Retrier({ ...fast, shouldRetry: (err) => err.code && codes.has(err.code) });
  const original = new Error('no code');
  let calls = 0;
  await assert.rejects(r.call(() => { calls += 1; throw original; }), (e) => e === original);
  assert.equal(calls, 1);
  // A truthy non-boolean retries; a Promise of undefined is awaited and is "permanent".
  assert.equal(await r.call(flaky(2, 'ok')), 'ok');
  const viaPromise = new Retrier({ ...fast, shouldRetry: async () => undefined });
  await assert.rejects(viaPromise.call(() => { throw original; }), (e) => e === original);
});

test('reraise: exhaustion by a thrown failure rejects with that failure, the history attached', async () => {
  class DbError extends Error {}
  const r = new Retrier({ ...fast, maxAttempts: 3, reraise: true, shouldRetry: (e) => e instanceof DbError });
  const failures = [];
  const fn = () => {
    const e = new DbError(`down ${failures.length + 1}`);
    failures.push(e);
    throw e;
  };
  const err = await r.call(fn).then(() => assert.fail('resolved'), (e) => e);
  assert.ok(err instanceof DbError, 'the caller\'s own except/catch handler still matches');
  assert.equal(err, failures[2]);
  assert.ok(err.retryrs instanceof RetryExhaustedError);
  assert.equal(err.retryrs.attempts, 3);
  assert.equal(err.retryrs.reason, 'attempts');
  assert.deepEqual(err.retryrs.errors, failures);
  assert.ok(!Object.keys(err).includes('retryrs'), 'the history does not clutter the error\'s own keys');
  // Off by default: a RetryExhaustedError.
  await assert.rejects(new Retrier({ ...fast, maxAttempts: 2 }).call(flaky(5)), RetryExhaustedError);
});

test('reraise: exhaustion on a rejected value still rejects with RetryExhaustedError', async () => {
  const r = new Retrier({ ...fast, maxAttempts: 2, reraise: true, shouldRetryResult: (v) => v === 'busy' });
  await assert.rejects(r.call(() => 'busy'), (e) => e instanceof RetryExhaustedError && e.result === 'busy' && e.attempts === 2);
  // A thrown primitive cannot carry the history: it is rejected with as it is.
  const p = new Retrier({ ...fast, maxAttempts: 2, reraise: true, shouldRetry: () => true });
  await assert.rejects(p.call(() => { throw 'plain'; }), (e) => e === 'plain');
  assert.throws(() => new Retrier({ reraise: 'yes' }), /reraise must be a boolean, got string/);
});

test('r.with(): one knob different; budget and listeners shared; validated like the constructor', async () => {
  const budget = new RetryBudget(100, 0.1);
  const seen = [];
  const base = new Retrier({ ...fast, maxAttempts: 5, name: 'base', budget, onEvent: (e) => seen.push(`${e.name}:${e.kind}`) });
  const two = base.with({ maxAttempts: 2, name: 'two' });
  assert.ok(two instanceof Retrier);
  assert.notEqual(two, base);
  const before = budget.tokens;
  await assert.rejects(two.call(flaky(5)), (e) => e instanceof RetryExhaustedError && e.attempts === 2);
  assert.ok(budget.tokens < before, 'the derived retrier spends the shared budget');
  assert.equal(await base.call(flaky(3, 'ok')), 'ok', 'the original keeps its own maxAttempts');
  assert.ok(seen.includes('two:exhausted') && seen.includes('base:success'), seen.join());
  // A listener attached to the original later reaches the derived one too.
  const late = [];
  const d = base.onEvent((e) => late.push(e.name));
  await assert.rejects(two.call(flaky(5)), RetryExhaustedError);
  assert.ok(late.includes('two'));
  d.dispose();
  // Same errors as the constructor, naming the option.
  assert.throws(() => base.with({ maxAttempts: 0 }), (e) => e instanceof RangeError && /maxAttempts/.test(e.message));
  assert.throws(() => base.with({ retries: 3 }), /Retrier: unknown option 'retries'; did you mean maxAttempts/);
  assert.throws(() => base.with({ shouldRetry: 3 }), /shouldRetry must be a function, got number/);
  assert.throws(() => base.with(5), /with\(overrides\) must be an object, got number/);
});

test('Retrier.fromPolicy(p, overrides) takes knob overrides, validated like the constructor', async () => {
  const doc = loadPolicies({ policies: { p: { max_attempts: 6, initial_delay: '0ms', max_delay: '0ms' } } });
  const r = Retrier.fromPolicy(doc.get('p'), { maxAttempts: 2 });
  await assert.rejects(r.call(flaky(5)), (e) => e instanceof RetryExhaustedError && e.attempts === 2 && e.retrier === 'p');
  assert.throws(() => Retrier.fromPolicy(doc.get('p'), { maxAttempts: -1 }), (e) => e instanceof RangeError && /maxAttempts/.test(e.message));
  assert.throws(() => Retrier.fromPolicy(doc.get('p'), { retries: 1 }), /Retrier: unknown option 'retries'; did you mean maxAttempts/);
});

test('util.inspect shows the knobs', () => {
  const r = new Retrier({ maxAttempts: 7, initialDelayMs: 50, jitter: 'none', deadlineMs: null, name: 'payments' });
  const text = inspect(r);
  assert.match(text, /^Retrier /);
  assert.match(text, /name: 'payments'/);
  assert.match(text, /maxAttempts: 7/);
  assert.match(text, /initialDelayMs: 50/);
  assert.match(text, /jitter: 'none'/);
  assert.match(text, /deadlineMs: null/);
  assert.doesNotMatch(text, /^Retrier \{\}$/);
});

test('events and errors name the called function when the retrier has no name', async () => {
  const seen = [];
  const r = new Retrier({ ...fast, maxAttempts: 2, onEvent: (e) => seen.push(e.name) });
  async function fetchUser() {
    throw transient();
  }
  const err = await r.call(fetchUser).then(() => assert.fail('resolved'), (e) => e);
  assert.equal(err.retrier, 'fetchUser');
  assert.match(err.message, /fetchUser/);
  assert.deepEqual([...new Set(seen)], ['fetchUser']);
  // A chosen name wins; an anonymous function keeps the retrier's name.
  seen.length = 0;
  await assert.rejects(r.call(() => { throw transient(); }), (e) => e.retrier === 'retry');
  const named = new Retrier({ ...fast, maxAttempts: 2, name: 'users', onEvent: (e) => seen.push(e.name) });
  await assert.rejects(named.call(fetchUser), (e) => e.retrier === 'users');
  assert.deepEqual([...new Set(seen)], ['retry', 'users']);
});

test('listeners attach after creation and detach with the returned disposable', async () => {
  const r = new Retrier({ ...fast });
  const kinds = [];
  const d = r.onEvent((e) => kinds.push(e.kind));
  assert.equal(typeof d.dispose, 'function');
  assert.equal(typeof d[Symbol.dispose ?? Symbol.for('nodejs.dispose')], 'function');
  assert.equal(await r.call(flaky(1, 'ok')), 'ok');
  assert.deepEqual(kinds, ['attempt_failed', 'retrying', 'success']);
  // A first-attempt success is reported too: the listener turned the happy path off.
  assert.equal(await r.call(() => 'ok'), 'ok');
  assert.deepEqual(kinds.slice(3), ['success']);
  d.dispose();
  d.dispose(); // idempotent
  assert.equal(await r.call(flaky(1, 'ok')), 'ok');
  assert.equal(kinds.length, 4, 'a disposed listener hears nothing');
  assert.throws(() => r.onEvent('x'), /onEvent\(listener\): listener must be a function, got string/);
});
