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

test('onRetry is awaited before each wait; returning false stops the call: reason stopped, history kept', async () => {
  const seen = [];
  const events = [];
  const r = new Retrier({
    ...fast,
    maxAttempts: 5,
    onEvent: (e) => events.push(`${e.kind}:${e.retriesLeft}`),
    onRetry: async (info) => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      seen.push([info.attempt, info.retriesLeft, info.delayMs, info.error.message]);
      return info.attempt < 2;
    },
  });
  const fn = flaky(10);
  const err = await r.call(fn).then(() => assert.fail('resolved'), (e) => e);
  assert.ok(err instanceof RetryExhaustedError);
  assert.equal(err.reason, 'stopped');
  assert.equal(err.attempts, 2);
  assert.equal(fn.calls(), 2, 'no attempt after the stop');
  assert.deepEqual(err.errors.map((e) => e.message), ['failure 1', 'failure 2']);
  assert.equal(err.cause.message, 'failure 2');
  assert.match(err.message, /stopped by a hook/);
  assert.deepEqual(seen, [[1, 4, 0, 'failure 1'], [2, 3, 0, 'failure 2']]);
  assert.deepEqual(events, ['attempt_failed:4', 'retrying:4', 'attempt_failed:3', 'exhausted:3']);
  // With reraise, a stopped call rejects with the last failure itself.
  const re = r.with({ reraise: true });
  const last = await re.call(flaky(10)).then(() => assert.fail('resolved'), (e) => e);
  assert.equal(last.message, 'failure 2');
  assert.equal(last.retryrs.reason, 'stopped');
});

test('a throw from onRetry stops the call and is what it rejects with (as p-retry), the failure its cause', async () => {
  const events = [];
  const stop = new Error('stop now');
  const r = new Retrier({ ...fast, onEvent: (e) => events.push(e.reason ?? e.kind), onRetry: () => { throw stop; } });
  const fn = flaky(10);
  await assert.rejects(r.call(fn), (e) => e === stop && e.cause.message === 'failure 1');
  assert.equal(fn.calls(), 1);
  assert.deepEqual(events, ['attempt_failed', 'stopped']);
});

test('delayMs replaces the wait with an exact one; undefined keeps the engine\'s; the deadline still applies', async () => {
  const delays = [];
  const asked = [];
  const r = new Retrier({
    initialDelayMs: 1, maxDelayMs: 1, jitter: 'none', maxAttempts: 4,
    onEvent: (e) => { if (e.kind === 'retrying') delays.push(e.delayMs); },
    delayMs: async ({ attempt, delayMs, error }) => {
      asked.push([attempt, delayMs, error instanceof Error]);
      return attempt === 2 ? undefined : 3 * attempt;
    },
  });
  assert.equal(await r.call(flaky(3, 'ok')), 'ok');
  assert.deepEqual(asked, [[1, 1, true], [2, 1, true], [3, 1, true]]);
  assert.deepEqual(delays, [3, 1, 9], 'exact, the engine\'s, exact');
  // An exact wait past the deadline ends the call with reason deadline, without waiting.
  const late = new Retrier({ ...fast, deadlineMs: 1000, delayMs: () => 60_000 });
  const started = Date.now();
  await assert.rejects(late.call(flaky(5)), (e) => e instanceof RetryExhaustedError && e.reason === 'deadline' && e.attempts === 1);
  assert.ok(Date.now() - started < 30_000, 'the refused wait was not waited');
  // Over max_retry_after: reason retry_after.
  const capped = new Retrier({ ...fast, maxRetryAfterMs: 100, delayMs: () => 500 });
  await assert.rejects(capped.call(flaky(5)), (e) => e instanceof RetryExhaustedError && e.reason === 'retry_after');
});

test('a delayMs answer that is not a wait ends the call with an error naming the hook, the failure its cause', async () => {
  for (const [answer, kind, pattern] of [['5s', TypeError, /delayMs must return a number/], [-1, RangeError, /delayMs: .*-1/], [NaN, RangeError, /delayMs: .*NaN/]]) {
    const fn = flaky(5);
    const r = new Retrier({ ...fast, delayMs: () => answer });
    await assert.rejects(r.call(fn), (e) => e instanceof kind && pattern.test(e.message) && e.cause.message === 'failure 1');
    assert.equal(fn.calls(), 1);
  }
});

test('events carry retriesLeft', async () => {
  const seen = [];
  const r = new Retrier({ ...fast, maxAttempts: 3, onEvent: (e) => seen.push([e.kind, e.attempt, e.retriesLeft]) });
  await assert.rejects(r.call(flaky(5)), RetryExhaustedError);
  assert.deepEqual(seen, [
    ['attempt_failed', 1, 2], ['retrying', 1, 2], ['attempt_failed', 2, 1], ['retrying', 2, 1],
    ['attempt_failed', 3, 0], ['exhausted', 3, 0],
  ]);
});

test('r.stats(): calls, attempts, retries and outcomes by reason, the fast path counted too', async () => {
  const r = new Retrier({ ...fast, maxAttempts: 2 });
  assert.equal(await r.call(() => 1), 1);
  assert.equal(await r.call(async () => 2), 2);
  assert.equal(await r.call(flaky(1, 'ok')), 'ok');
  await assert.rejects(r.call(flaky(5)), RetryExhaustedError);
  const permanent = new TypeError('bug');
  await assert.rejects(r.call(() => { throw permanent; }), (e) => e === permanent);
  const aborted = AbortSignal.abort(new Error('gone'));
  await assert.rejects(r.call(() => 1, { signal: aborted }), /gone/);
  // Cancelled during its first attempt (the attempt counts: it was made), and during a
  // wait: counted without a listener.
  const during = new AbortController();
  await assert.rejects(r.call(() => { during.abort(new Error('mid')); return new Promise(() => {}); }, { signal: during.signal }), /mid/);
  const waiting = new AbortController();
  const slow = r.with({ initialDelayMs: 60_000, maxDelayMs: 60_000, jitter: 'none', deadlineMs: null });
  const pending = slow.call(() => { setImmediate(() => waiting.abort(new Error('in wait'))); throw transient(); }, { signal: waiting.signal });
  await assert.rejects(pending, /in wait/);
  assert.equal(slow.stats().cancellations, 1);
  const s = r.stats();
  assert.deepEqual(s, {
    calls: 7, attempts: 8, retries: 2, successes: 3, rejections: 1, cancellations: 2,
    exhausted: { attempts: 1, deadline: 0, budget: 0, retry_after: 0, circuit_open: 0, stopped: 0 },
  });
  // Per retrier: one made by with() counts its own.
  const other = r.with({});
  await other.call(() => 1);
  assert.equal(other.stats().calls, 1);
  assert.equal(r.stats().calls, 7);
});

test('the deadline hint: inspect says when max_attempts cannot fit the deadline, and so does a deadline exhaustion', async () => {
  const tight = new Retrier({ maxAttempts: 10, initialDelayMs: 1000, maxDelayMs: 30_000, deadlineMs: 15_000 });
  assert.match(inspect(tight), /hint: 'maxAttempts=10 needs up to .* deadlineMs is 15000 ms: raise deadlineMs or lower maxAttempts'/);
  assert.doesNotMatch(inspect(new Retrier()), /hint/);
  const short = new Retrier({ maxAttempts: 10, initialDelayMs: 200, maxDelayMs: 200, jitter: 'none', deadlineMs: 300 });
  await assert.rejects(short.call(flaky(20)), (e) => e instanceof RetryExhaustedError && e.reason === 'deadline' && /raise deadlineMs or lower maxAttempts/.test(e.message));
  await assert.rejects(new Retrier({ ...fast, maxAttempts: 2 }).call(flaky(5)), (e) => !/raise deadlineMs/.test(e.message));
});

test('linked cancellation: AbortSignal.any combines a library\'s signal with the caller\'s, either ends the call', async () => {
  const r = new Retrier({ initialDelayMs: 60_000, maxDelayMs: 60_000, jitter: 'none', deadlineMs: null });
  for (const which of [0, 1]) {
    const library = new AbortController();
    const caller = new AbortController();
    const reason = new Error(`aborted by ${which === 0 ? 'library' : 'caller'}`);
    let calls = 0;
    const call = r.call(() => { calls += 1; throw transient(); }, { signal: AbortSignal.any([library.signal, caller.signal]) });
    // The call is in its 60 s wait: aborting either signal ends it at once, with that reason.
    setImmediate(() => (which === 0 ? library : caller).abort(reason));
    await assert.rejects(call, (e) => e === reason);
    assert.equal(calls, 1, 'never retried after the abort');
  }
});

test('the HTTP helpers: listeners attached later reach their calls, which count in the retrier\'s stats; onRetry/delayMs are refused', async () => {
  const { retryingFetch } = require('../lib/fetch');
  const r = new Retrier({ ...fast, name: 'api' });
  let n = 0;
  const fetch = async () => new Response('body', { status: ++n < 2 ? 503 : 200 });
  const f = retryingFetch({ retrier: r, fetch });
  const kinds = [];
  const d = r.onEvent((e) => kinds.push(`${e.name}:${e.kind}`));
  const res = await f('http://127.0.0.1:9/x');
  assert.equal(res.status, 200);
  assert.deepEqual(kinds, ['api:attempt_failed', 'api:retrying', 'api:success']);
  d.dispose();
  assert.equal(r.stats().calls, 1);
  assert.equal(r.stats().retries, 1);
  for (const hook of ['onRetry', 'delayMs']) {
    assert.throws(() => retryingFetch({ retrier: new Retrier({ [hook]: () => undefined }), fetch }), new RegExp(`retrier's ${hook} cannot apply to the HTTP helpers`));
  }
});

test('a breaker\'s events carry the retrier\'s name, not the function\'s (one breaker, one state gauge)', async () => {
  const { CircuitBreaker } = require('..');
  const breaker = new CircuitBreaker({ failures: 1, breakDurationMs: 30000 });
  const seen = [];
  const r = new Retrier({ ...fast, maxAttempts: 1, breaker, onEvent: (e) => seen.push([e.kind, e.name]) });
  async function loadQuotes() {
    throw transient();
  }
  await assert.rejects(r.call(loadQuotes), RetryExhaustedError);
  assert.deepEqual(seen.find(([kind]) => kind === 'breaker_opened'), ['breaker_opened', 'retry']);
  assert.deepEqual(seen.find(([kind]) => kind === 'exhausted'), ['exhausted', 'loadQuotes']);
});

test('with({ hook: null }) removes a hook and with({ hedge: null }) the hedge', async () => {
  const calls = [];
  const hooked = new Retrier({ maxAttempts: 3, initialDelayMs: 0, jitter: 'none', onRetry: () => false });
  const failing = () => {
    calls.push(1);
    return Promise.reject(Object.assign(new Error('reset'), { code: 'ECONNRESET' }));
  };
  await assert.rejects(hooked.call(failing), { reason: 'stopped' });
  assert.equal(calls.length, 1, 'the hook stopped the call after one attempt');
  calls.length = 0;
  await assert.rejects(hooked.with({ onRetry: null }).call(failing), { reason: 'attempts' });
  assert.equal(calls.length, 3, 'without the hook all attempts run');
  assert.doesNotThrow(() => new Retrier({ onRetry: null, delayMs: null, onEvent: null }));
  const hedging = new Retrier({ hedge: { maxAttempts: 2, delayMs: 50 } });
  assert.match(require('node:util').inspect(hedging), /hedge/);
  const plain = hedging.with({ hedge: null });
  assert.doesNotMatch(require('node:util').inspect(plain), /hedge/);
  // Hooks apply again once the hedge is gone.
  assert.doesNotThrow(() => plain.with({ onRetry: () => true }));
});
