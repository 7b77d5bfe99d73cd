'use strict';
// Contract v2 in Node (issue 13): shouldRetryResult (sync or a promise), the rejected value
// on events and on RetryExhaustedError.result, retryAfterMs reading a value, and
// maxRetryAfterMs ending a call whose server asks for too long a wait.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Retrier, RetryExhaustedError } = require('..');
const { transient } = require('./helpers');

const fast = { initialDelayMs: 0, maxDelayMs: 0 };

/** fn returning the given replies in turn. */
function replies(...list) {
  let i = 0;
  const fn = () => list[Math.min(i++, list.length - 1)];
  fn.calls = () => i;
  return fn;
}

for (const [how, judge] of [['sync', (r) => r.status >= 500], ['a promise', async (r) => r.status >= 500]]) {
  test(`shouldRetryResult (${how}): a rejected value is retried, the accepted one returned as it is`, async () => {
    const events = [];
    const ok = { status: 200 };
    const r = new Retrier({ ...fast, shouldRetryResult: judge, onEvent: (e) => events.push(e) });
    const fn = replies({ status: 503 }, ok);
    assert.equal(await r.call(fn), ok);
    assert.equal(fn.calls(), 2);
    assert.deepEqual(events.map((e) => [e.kind, Object.hasOwn(e, 'value'), Object.hasOwn(e, 'error')]), [
      ['attempt_failed', true, false], ['retrying', true, false], ['success', false, false],
    ]);
    assert.deepEqual(events[0].value, { status: 503 });
  });
}

test('exhausted on a rejected value: result is the last value, errors every failure, cause the last', async () => {
  const boom = transient();
  const last = { status: 502 };
  const r = new Retrier({ ...fast, maxAttempts: 3, shouldRetryResult: (v) => v.status >= 500 });
  let n = 0;
  const err = await r.call(() => {
    n += 1;
    if (n === 1) throw boom;
    return n === 2 ? { status: 503 } : last;
  }).catch((e) => e);
  assert.ok(err instanceof RetryExhaustedError);
  assert.equal(err.reason, 'attempts');
  assert.equal(err.result, last);
  assert.equal(err.cause, last);
  assert.match(err.message, /: \{ status: 502 \}$/, 'the message shows the value, not [object Object]');
  assert.equal(err.errors.length, 3);
  assert.equal(err.errors[0], boom);
  // The last failure an error: no result.
  const r2 = new Retrier({ ...fast, maxAttempts: 2, shouldRetryResult: (v) => v === 'again' });
  let m = 0;
  const err2 = await r2.call(() => { m += 1; if (m === 1) return 'again'; throw boom; }).catch((e) => e);
  assert.equal(err2.result, undefined);
  assert.equal(err2.cause, boom);
});

test('retryAfterMs receives the rejected value; a hint above maxRetryAfterMs ends the call: reason retry_after', async () => {
  const seen = [];
  const r = new Retrier({
    ...fast,
    maxRetryAfterMs: 1000,
    shouldRetryResult: (v) => v.status === 429,
    retryAfterMs: (failure) => { seen.push(failure); return failure.wait; },
  });
  const t0 = performance.now();
  const err = await r.call(() => ({ status: 429, wait: 3_600_000 })).catch((e) => e);
  assert.ok(err instanceof RetryExhaustedError);
  assert.equal(err.reason, 'retry_after');
  assert.equal(err.attempts, 1);
  assert.ok(performance.now() - t0 < 1000, 'no wait started');
  assert.deepEqual(seen, [{ status: 429, wait: 3_600_000 }]);
  // Off: the wait is honoured (under the cap of the deadline); a short one is waited.
  const r2 = new Retrier({ ...fast, shouldRetryResult: (v) => v.status === 429, retryAfterMs: (v) => v.wait });
  assert.deepEqual(await r2.call(replies({ status: 429, wait: 5 }, { status: 200 })), { status: 200 });
});

test('shouldRetryResult: a non-boolean answer or a throw ends the call, the value kept as cause', async () => {
  for (const answer of ['yes', 1, Promise.resolve(null)]) {
    const value = { status: 500 };
    const r = new Retrier({ ...fast, shouldRetryResult: () => answer });
    await assert.rejects(r.call(() => value), (e) => e instanceof TypeError && /shouldRetryResult must return a boolean/.test(e.message) && e.cause === value);
  }
  const bug = new Error('judge bug');
  const value = { status: 500 };
  const events = [];
  const r = new Retrier({ ...fast, shouldRetryResult: () => { throw bug; }, onEvent: (e) => events.push(e) });
  await assert.rejects(r.call(() => value), (e) => e === bug && e.cause === value);
  assert.deepEqual(events.map((e) => [e.kind, e.value]), [['attempt_failed', value], ['rejected', value]]);
  assert.throws(() => new Retrier({ shouldRetryResult: true }), /shouldRetryResult must be a function, got boolean/);
});

test('a deadline reached during the wait after a rejected value: the exhausted event carries that value', async () => {
  const { testing } = require('..');
  const events = [];
  const value = { status: 503 };
  // The listener makes the wait overrun (a late timer): the deadline passes during it.
  const onEvent = (e) => {
    events.push(e);
    if (e.kind === 'retrying') testing.advance(100);
  };
  const r = new Retrier({ initialDelayMs: 100, maxDelayMs: 100, jitter: 'none', deadlineMs: 150, shouldRetryResult: () => true, onEvent });
  const err = await testing.scoped(() => r.call(() => value).catch((e) => e));
  assert.equal(events.filter((e) => e.kind === 'retrying').length, 1);
  assert.ok(err instanceof RetryExhaustedError, String(err));
  assert.equal(err.reason, 'deadline');
  assert.equal(err.result, value);
  const exhausted = events.find((e) => e.kind === 'exhausted');
  assert.equal(exhausted.value, value);
  assert.equal(Object.hasOwn(exhausted, 'error'), false);
});
