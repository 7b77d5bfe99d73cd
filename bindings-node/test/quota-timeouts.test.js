'use strict';
// The AWS quota's price of a retry after an attempt the retrier cut at its attempt timeout
// (issue 27): 10, against 5 after any other transient failure; the success gives back the
// last retry's cost. Only the retrier's own cut counts: a TimeoutError the attempt throws
// itself is an ordinary failure. Real time, bounds of 50 ms: the attempts that hang are
// cut by the retrier's timer, whatever the machine's load.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Retrier, RetryBudget, RetryExhaustedError } = require('..');

const retrier = (budget, extra = {}) =>
  new Retrier({
    maxAttempts: 3,
    initialDelayMs: 0,
    jitter: 'none',
    attemptTimeoutMs: 50,
    deadlineMs: null,
    budget,
    shouldRetry: () => true,
    ...extra,
  });

/** An attempt that never ends on its own: its signal's abort ends it. */
const hang = (ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));

test('an attempt cut at its bound is retried at the timeout price', async () => {
  const quota = RetryBudget.quota();
  const seen = [];
  const got = await retrier(quota).call((ctx) => {
    seen.push(quota.tokens);
    if (ctx.attempt === 1) return hang(ctx);
    if (ctx.attempt === 2) throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
    return ctx.attempt;
  });
  assert.equal(got, 3);
  assert.deepEqual(seen, [500, 490, 485], "the cut attempt's retry cost 10, the reset's 5");
  assert.equal(quota.tokens, 490, "the success gave back the last retry's 5");
});

test('with hooks (onRetry) the cut is priced the same', async () => {
  const quota = RetryBudget.quota();
  const seen = [];
  let asked = 0;
  const r = retrier(quota, { onRetry: () => { asked += 1; } });
  const got = await r.call((ctx) => {
    seen.push(quota.tokens);
    return ctx.attempt < 3 ? hang(ctx) : 'ok';
  });
  assert.equal(got, 'ok');
  assert.equal(asked, 2);
  assert.deepEqual(seen, [500, 490, 480]);
  assert.equal(quota.tokens, 490, "the success gave back the last retry's 10");
});

test('a TimeoutError the attempt throws itself is an ordinary failure', async () => {
  const quota = RetryBudget.quota();
  const seen = [];
  const got = await retrier(quota).call((ctx) => {
    seen.push(quota.tokens);
    if (ctx.attempt === 1) throw new DOMException('its own client gave up', 'TimeoutError');
    return 'ok';
  });
  assert.equal(got, 'ok');
  assert.deepEqual(seen, [500, 495]);
});

test('a quota too small for a second cut refuses it (reason budget)', async () => {
  const quota = RetryBudget.quota({ capacity: 12 });
  await assert.rejects(retrier(quota).call(hang), (e) => e instanceof RetryExhaustedError && e.reason === 'budget' && e.attempts === 2);
  assert.equal(quota.tokens, 2);
});

test('hedged: the attempt launched after one cut at its attempt timeout costs 10; after another failure 5', async () => {
  const quota = RetryBudget.quota();
  const seen = [];
  // A long hedging delay: every launch after the first is asked for by a failure.
  const r = retrier(quota, { hedge: { maxAttempts: 3, delayMs: 60_000 } });
  const got = await r.call((ctx) => {
    seen.push(quota.tokens);
    if (ctx.attempt === 1) return hang(ctx);
    if (ctx.attempt === 2) throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
    return ctx.attempt;
  });
  assert.equal(got, 3);
  assert.deepEqual(seen, [500, 490, 485], "the launch after the cut cost 10, after the reset 5");
  assert.equal(quota.tokens, 490, "the success gave back the last launch's 5");
});

test('hedged: a TimeoutError the attempt throws itself is an ordinary failure', async () => {
  const quota = RetryBudget.quota();
  const seen = [];
  const r = retrier(quota, { hedge: { maxAttempts: 2, delayMs: 60_000 } });
  const got = await r.call((ctx) => {
    seen.push(quota.tokens);
    if (ctx.attempt === 1) throw new DOMException('its own client gave up', 'TimeoutError');
    return 'ok';
  });
  assert.equal(got, 'ok');
  assert.deepEqual(seen, [500, 495]);
});

test('hedged retryingFetch: a request cut at its bound is a timeout to the quota (8 tokens cannot pay 10)', async (t) => {
  const { retryingFetch } = require('retryrs/fetch');
  const { startServer } = require('./http-server');
  const s = await startServer();
  t.after(() => s.close());
  const quota = RetryBudget.quota({ capacity: 8 });
  const r = new Retrier({
    maxAttempts: 3, initialDelayMs: 0, jitter: 'none', attemptTimeoutMs: 100, deadlineMs: null, budget: quota,
    hedge: { maxAttempts: 2, delayMs: 60_000 },
  });
  // The process's first fetch loads and starts undici, which under load has taken longer
  // than the 100 ms bound: the attempt was cut before its request left (0 hits). One
  // plain request first, so the bound times the request, not the loading.
  await (await fetch(s.script([200]))).arrayBuffer();
  // At a plain failure's 5 the hedge would go out and get the 200.
  const url = s.script([['slow', 3000], 200]);
  const err = await retryingFetch({ retrier: r })(url).then((res) => assert.fail(`resolved ${res.status}`), (e) => e);
  assert.equal(err.reason, 'budget', `${err?.name}: ${err?.message}`);
  assert.equal(err.attempts, 1);
  assert.equal(s.hits(url), 1);
  assert.equal(quota.tokens, 8);
});
