'use strict';
// Issue 37's small Node defects: each test failed on the code before its fix.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Retrier, RetryExhaustedError, testing } = require('..');
const { transient, flaky } = require('./helpers');

const fast = { initialDelayMs: 0, maxDelayMs: 0 };

for (const [name, options] of [['a plain call', {}], ['a hedged call', { hedge: { maxAttempts: 2, delayMs: 1 } }]]) {
  test(`ctx.remainingMs is whole milliseconds, fit for AbortSignal.timeout (${name})`, async () => {
    // On the real clock, whose readings are fractional (performance.now()).
    const r = new Retrier({ ...fast, ...options, maxAttempts: 4, deadlineMs: 15_000 });
    const seen = [];
    const value = await r.call((ctx) => {
      seen.push(ctx.remainingMs);
      AbortSignal.timeout(ctx.remainingMs); // threw a RangeError for 14999.85
      if (ctx.attempt < 2) throw transient();
      return ctx.attempt;
    });
    assert.ok(value >= 2);
    assert.ok(seen.length >= 2 && seen.every((ms) => Number.isInteger(ms) && ms >= 0 && ms <= 15_000), `${seen}`);
  });
}

test('call() refuses an unknown option as the constructor does, naming it', async () => {
  const r = new Retrier(fast);
  let ran = 0;
  const fn = () => { ran += 1; return 'ok'; };
  // A misspelt signal left the call uncancellable, silently.
  await assert.rejects(r.call(fn, { sigal: AbortSignal.abort() }), { name: 'TypeError', message: "call(fn, options): unknown option 'sigal' (a call takes signal)" });
  await assert.rejects(r.call(fn, { maxAttempts: 3 }), {
    name: 'TypeError', message: /unknown option 'maxAttempts' .*maxAttempts is a Retrier option: set it with new Retrier\(\{ maxAttempts \}\) or retrier\.with/,
  });
  assert.equal(ran, 0, 'the function is not called');
  assert.equal(await r.call(fn, { signal: undefined }), 'ok');
  assert.equal(await r.call(fn, {}), 'ok');
});

for (const [name, hedge] of [['a plain call', undefined], ['a hedged call', { maxAttempts: 2, delayMs: 10_000 }]]) {
  for (const answer of [-5, NaN]) {
    test(`a retryAfterMs hook answering ${answer} is refused as a bad delayMs answer is (${name})`, async () => {
      const fn = flaky(1);
      const r = new Retrier({ ...fast, hedge, retryAfterMs: () => answer });
      const err = await r.call(fn).then(() => assert.fail('resolved'), (e) => e);
      assert.equal(err.name, 'RangeError');
      assert.equal(err.message, `retryAfterMs: a Retry-After hint must be a number of milliseconds >= 0, got ${answer}`);
      assert.equal(err.cause?.code, 'ECONNRESET', 'the original failure is its cause');
      assert.equal(fn.calls(), 1, 'the call ended at the bad answer');
    });
  }
}

test('an error\'s own retryAfterMs that is no wait is still no hint (the default reader)', async () => {
  let n = 0;
  const r = new Retrier(fast);
  assert.equal(await r.call(() => { n += 1; if (n === 1) throw transient('busy', { retryAfterMs: -5 }); return n; }), 2);
});

test('delayMs answering Infinity is refused naming the value, not reported as a server asking to wait', async () => {
  for (const answer of [Infinity, 1e300]) {
    const fn = flaky(1);
    const r = new Retrier({ ...fast, deadlineMs: null, maxRetryAfterMs: 60_000, delayMs: () => answer });
    const err = await r.call(fn).then(() => assert.fail('resolved'), (e) => e);
    assert.ok(!(err instanceof RetryExhaustedError), `not exhausted (reason ${err.reason})`);
    assert.equal(err.name, 'RangeError');
    assert.equal(err.message, `delayMs: a wait must be a number of milliseconds from 0 to 9e15 (about 285,000 years), got ${answer}`);
    assert.equal(err.cause?.code, 'ECONNRESET');
  }
});

test('stats() counts a hedged call\'s launches: cut at its deadline after 3, it made 3 attempts and 2 retries', async () => {
  await testing.scoped(async () => {
    const r = new Retrier({ hedge: { maxAttempts: 3, delayMs: 10 }, deadlineMs: 100 });
    const err = await r.call((ctx) => testing.sleep(10_000, { signal: ctx.signal })).then(() => assert.fail('resolved'), (e) => e);
    assert.equal(err.reason, 'deadline');
    const s = r.stats();
    assert.deepEqual([s.calls, s.attempts, s.retries, s.exhausted.deadline], [1, 3, 2, 1]);
    // A win with another attempt in flight: both were made (the counts add up).
    const won = await r.call((ctx) => testing.sleep(ctx.attempt === 1 ? 10_000 : 5, { signal: ctx.signal }).then(() => ctx.attempt));
    assert.equal(won, 2);
    const t = r.stats();
    assert.deepEqual([t.calls, t.attempts, t.retries, t.successes], [2, 5, 3, 1]);
  });
});
