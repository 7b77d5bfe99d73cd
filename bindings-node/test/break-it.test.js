'use strict';
// What a stranger porting p-retry/cockatiel code broke in this round's escape hatches:
// each test failed on the code before its fix.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Retrier } = require('..');
const { transient } = require('./helpers');

const fast = { initialDelayMs: 0, maxDelayMs: 0 };

const unhandled = [];
process.on('unhandledRejection', (reason) => unhandled.push(reason));

// A hook that answers only when told to (never, unless the test says so): the call must
// not wait for it once its signal aborts.
function stalled() {
  let release;
  const answered = new Promise((resolve) => { release = resolve; });
  return { hook: () => answered, release };
}

for (const [option, extra] of [
  ['onRetry', {}],
  ['delayMs', {}],
  ['shouldRetry', {}],
  ['retryAfterMs', { shouldRetry: () => true }],
]) {
  test(`an abort while ${option} is awaited ends the call at once with the signal's reason`, async () => {
    // Before: the call waited for the hook (p-retry users await onFailedAttempt for
    // seconds: logging, refreshing a token), then saw the abort.
    const { hook, release } = stalled();
    const events = [];
    const r = new Retrier({ ...fast, ...extra, maxAttempts: 3, [option]: hook, onEvent: (e) => events.push(e.kind) });
    const ac = new AbortController();
    let calls = 0;
    const call = r.call(() => {
      calls += 1;
      setImmediate(() => setImmediate(() => ac.abort(new Error('caller gave up'))));
      throw transient();
    }, { signal: ac.signal });
    await assert.rejects(call, /caller gave up/);
    assert.equal(calls, 1);
    assert.equal(events.at(-1), 'cancelled');
    assert.equal(r.stats().cancellations, 1);
    // The hook answering late changes nothing and rejects nothing (no unhandled rejection).
    release(option === 'delayMs' ? 0 : true);
    await new Promise(setImmediate);
    await new Promise(setImmediate);
    assert.deepEqual(unhandled, []);
    assert.equal(calls, 1);
    assert.equal(r.stats().calls, 1);
  });
}

test('a hook that answers before any abort is unchanged when the call has a signal', async () => {
  const seen = [];
  const r = new Retrier({ ...fast, maxAttempts: 3, onRetry: async ({ attempt }) => { seen.push(attempt); }, delayMs: async () => 0 });
  const err = await r.call(() => { throw transient(); }, { signal: new AbortController().signal }).catch((e) => e);
  assert.equal(err.attempts, 3);
  assert.deepEqual(seen, [1, 2]);
});

test('onRetry throwing an error whose cause is the failure rejects with that error itself', async () => {
  // The usual way to stop with your own error: `throw new AuthError('login', { cause: error })`.
  // Before: it was wrapped in a RetryrsHookError (its cause already set), so the caller's
  // `instanceof AuthError` failed, though the README says the call rejects with the throw.
  class AuthError extends Error {}
  const r = new Retrier({
    ...fast,
    maxAttempts: 3,
    onRetry: ({ error }) => { throw new AuthError('login again', { cause: error }); },
  });
  const original = transient();
  const err = await r.call(() => { throw original; }).catch((e) => e);
  assert.ok(err instanceof AuthError, `got ${err?.name}: ${err?.message}`);
  assert.equal(err.cause, original);
});

test('util.inspect shows a hedging retrier\'s hedge (it showed the retry knobs only, as a plain retrier)', () => {
  const { inspect } = require('node:util');
  const fixed = inspect(new Retrier({ maxAttempts: 3, hedge: { maxAttempts: 2, delayMs: 50 } }));
  assert.match(fixed, /hedge: \{ maxAttempts: 2, delayMs: 50 \}/);
  const adaptive = inspect(new Retrier({ hedge: { maxAttempts: 3, delayMs: 'adaptive', quantile: 0.9, floorMs: 5, ceilingMs: 500 } }));
  assert.match(adaptive, /hedge: \{\s+maxAttempts: 3,\s+delayMs: 'adaptive',\s+quantile: 0\.9,\s+floorMs: 5,\s+ceilingMs: 500\s+\}/);
  // Made with r.with, and not on a retrier without hedging.
  assert.match(inspect(new Retrier({}).with({ hedge: { maxAttempts: 2, delayMs: 7 } })), /hedge: \{ maxAttempts: 2, delayMs: 7 \}/);
  assert.doesNotMatch(inspect(new Retrier({})), /hedge/);
});

for (const option of ['onRetry', 'delayMs']) {
  test(`an ${option} still pending at the deadline ends the call by deadline, not when it answers`, async () => {
    // Before: a 30 s onRetry held a call with a 200 ms deadline for 30 s.
    const { hook, release } = stalled();
    let askedAfter = 0;
    const events = [];
    const r = new Retrier({
      ...fast,
      maxAttempts: 3,
      deadlineMs: 200,
      [option]: hook,
      ...(option === 'onRetry' ? { delayMs: () => { askedAfter += 1; } } : {}),
      onEvent: (e) => events.push(e.kind),
    });
    const original = transient();
    const started = Date.now();
    const err = await r.call(() => { throw original; }).catch((e) => e);
    assert.equal(err.reason, 'deadline', String(err));
    assert.equal(err.cause, original);
    assert.ok(Date.now() - started < 10_000);
    assert.deepEqual(events, ['attempt_failed', 'exhausted']);
    assert.equal(askedAfter, 0);
    release(undefined);
    await new Promise(setImmediate);
    assert.deepEqual(unhandled, []);
  });
}

for (const [option, extra] of [
  ['shouldRetry', {}],
  ['retryAfterMs', { shouldRetry: () => true }],
  ['shouldRetryResult', {}],
  ['shouldRetryResult', { onRetry: () => {} }],
  ['shouldRetry', { onRetry: () => {} }],
]) {
  const hooked = extra.onRetry !== undefined ? ' (with onRetry)' : '';
  test(`a ${option} Promise still pending at the deadline ends the call by deadline, the failure kept${hooked}`, async () => {
    // Before: the call awaited the predicate past its deadline (for ever, if it never settled).
    const { hook, release } = stalled();
    const events = [];
    const r = new Retrier({ ...fast, ...extra, maxAttempts: 3, deadlineMs: 200, [option]: hook, onEvent: (e) => events.push(e.kind) });
    const original = transient();
    const value = { status: 'pending' };
    const fn = option === 'shouldRetryResult' ? () => value : () => { throw original; };
    const started = performance.now();
    const err = await r.call(fn).catch((e) => e);
    const took = performance.now() - started;
    assert.equal(err.reason, 'deadline', String(err));
    assert.equal(err.attempts, 1);
    if (option === 'shouldRetryResult') assert.equal(err.result, value);
    else assert.equal(err.cause, original);
    assert.ok(took < 200 + 250, `${took} ms`);
    assert.deepEqual(events, ['attempt_failed', 'exhausted']);
    release(option === 'retryAfterMs' ? 0 : true);
    await new Promise(setImmediate);
    await new Promise(setImmediate);
    assert.deepEqual(unhandled, []);
  });
}

test('an abort while shouldRetryResult is awaited ends the call at once with the signal\'s reason', async () => {
  // Before: the call waited for the predicate's answer, then saw the abort.
  const { hook, release } = stalled();
  const events = [];
  const r = new Retrier({ ...fast, maxAttempts: 3, shouldRetryResult: hook, onEvent: (e) => events.push(e.kind) });
  const ac = new AbortController();
  let calls = 0;
  const call = r.call(() => {
    calls += 1;
    setImmediate(() => setImmediate(() => ac.abort(new Error('caller gave up'))));
    return 'value';
  }, { signal: ac.signal });
  await assert.rejects(call, /caller gave up/);
  assert.equal(calls, 1);
  assert.equal(events.at(-1), 'cancelled');
  assert.equal(r.stats().cancellations, 1);
  release(true);
  await new Promise(setImmediate);
  await new Promise(setImmediate);
  assert.deepEqual(unhandled, []);
  assert.equal(calls, 1);
});

for (const option of ['shouldRetry', 'shouldRetryResult']) {
  test(`hedged: a ${option} Promise still pending at the deadline ends the call by deadline, the failure kept`, async () => {
    // Before: the call ended at its deadline with an empty history (no cause, no result).
    const { hook, release } = stalled();
    const events = [];
    const r = new Retrier({
      ...fast, maxAttempts: 3, deadlineMs: 200, hedge: { maxAttempts: 2, delayMs: 1000 }, [option]: hook, onEvent: (e) => events.push(e),
    });
    const original = transient();
    const value = { status: 'pending' };
    const started = performance.now();
    const err = await r.call(option === 'shouldRetryResult' ? () => value : () => { throw original; }).catch((e) => e);
    const took = performance.now() - started;
    assert.equal(err.reason, 'deadline', String(err));
    if (option === 'shouldRetryResult') assert.equal(err.result, value);
    else assert.equal(err.cause, original);
    assert.equal(err.errors.length, 1);
    assert.ok(took < 200 + 250, `${took} ms`);
    const end = events.at(-1);
    assert.equal(end.kind, 'exhausted');
    assert.equal(option === 'shouldRetryResult' ? end.value : end.error, option === 'shouldRetryResult' ? value : original);
    release(true);
    await new Promise(setImmediate);
    assert.deepEqual(unhandled, []);
  });

  test(`hedged: an abort while ${option} is awaited ends the call at once with the signal's reason`, async () => {
    const { hook, release } = stalled();
    const r = new Retrier({ ...fast, maxAttempts: 3, hedge: { maxAttempts: 2, delayMs: 10_000 }, [option]: hook });
    const ac = new AbortController();
    const call = r.call(() => {
      setImmediate(() => setImmediate(() => ac.abort(new Error('caller gave up'))));
      if (option === 'shouldRetryResult') return 'value';
      throw transient();
    }, { signal: ac.signal });
    await assert.rejects(call, /caller gave up/);
    release(true);
    await new Promise(setImmediate);
    assert.deepEqual(unhandled, []);
  });
}

test('onRetry throwing an error whose cause chain holds the failure rejects with that error itself (p-retry\'s rule)', async () => {
  // Before: only a direct cause counted; a deeper one was wrapped in a RetryrsHookError,
  // though nothing would be lost by handing back the throw as p-retry does.
  class AuthError extends Error {}
  const r = new Retrier({
    ...fast,
    maxAttempts: 3,
    onRetry: ({ error }) => { throw new AuthError('login again', { cause: new Error('refresh failed', { cause: error }) }); },
  });
  const original = transient();
  const err = await r.call(() => { throw original; }).catch((e) => e);
  assert.ok(err instanceof AuthError, `got ${err?.name}: ${err?.message}`);
  assert.equal(err.cause.cause, original);
  // A throw whose own cause is something else is still wrapped: the failure is kept.
  const other = new Error('unrelated');
  const r2 = new Retrier({ ...fast, maxAttempts: 3, onRetry: () => { throw new AuthError('x', { cause: other }); } });
  const wrapped = await r2.call(() => { throw original; }).catch((e) => e);
  assert.equal(wrapped.name, 'RetryrsHookError');
  assert.equal(wrapped.cause, original);
  assert.ok(wrapped.thrown instanceof AuthError);
});
