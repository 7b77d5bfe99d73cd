'use strict';
// Load safety (issue 35) as Node sees it: a native hedge without a budget is held by the
// default guard (hedge.guard: false turns it off), and a server's "don't retry" (gRPC A6
// pushback) is reported with DONT_RETRY: it ends a retrying call, and in a hedged call it
// stops new hedges while the attempts in flight finish.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Retrier, RetryBudget, RetryExhaustedError, DONT_RETRY, retryAfterFromError, testing } = require('..');

/**
 * `calls` hedged calls on virtual time, every attempt slow (100 ms): attempts made. Each
 * call starts a fresh virtual clock at 0 (as the conformance runner does), so all of them
 * fall in one window of the guard.
 */
async function overloaded(r, calls) {
  let attempts = 0;
  for (let i = 0; i < calls; i++) {
    testing.enable();
    try {
      await r.call((ctx) => {
        attempts++;
        return testing.sleep(100, { signal: ctx.signal }).then(() => 'ok');
      });
    } finally {
      testing.disable();
    }
  }
  return attempts;
}

test('the default guard holds hedges of an overloaded server to about 10% (guard: false: every call hedged)', async () => {
  const guarded = await overloaded(new Retrier({ hedge: { maxAttempts: 2, delayMs: 10 } }), 200);
  // One 10 s window: 10% of the 200 calls plus a reserve of 10.
  assert.equal(guarded - 200, 30, `${guarded - 200} extra attempts for 200 calls`);
  const open = await overloaded(new Retrier({ hedge: { maxAttempts: 2, delayMs: 10, guard: false } }), 200);
  assert.equal(open, 400);
  assert.throws(() => new Retrier({ hedge: { maxAttempts: 2, delayMs: 10, guard: 'off' } }), /hedge.guard must be true or false/);
});

test('DONT_RETRY from retryAfterMs ends a retrying call at once and spends a budget token', async () => {
  const budget = new RetryBudget(10, 0.1);
  const r = new Retrier({ maxAttempts: 5, budget, shouldRetry: () => true, retryAfterMs: () => DONT_RETRY });
  let calls = 0;
  const err = await r.call(() => {
    calls++;
    throw new Error('pushback -1');
  }).catch((e) => e);
  assert.ok(err instanceof RetryExhaustedError, String(err));
  assert.deepEqual([calls, err.reason, err.attempts, err.cause.message], [1, 'retry_after', 1, 'pushback -1']);
  assert.equal(budget.tokens, 9);
  assert.equal(retryAfterFromError({ retryAfterMs: DONT_RETRY }), DONT_RETRY);
  assert.equal(DONT_RETRY, Symbol.for('retryrs.dontRetry'));
});

test('in a hedged call DONT_RETRY stops new hedges and lets the attempt in flight win', async () => {
  const r = new Retrier({ hedge: { maxAttempts: 3, delayMs: 50 }, shouldRetry: () => true });
  const launched = [];
  testing.enable();
  try {
    const value = await r.call((ctx) => {
      launched.push(ctx.attempt);
      if (ctx.attempt === 1) return testing.sleep(200, { signal: ctx.signal }).then(() => 'slow');
      return testing.sleep(10, { signal: ctx.signal }).then(() => {
        throw Object.assign(new Error('pushback'), { retryAfterMs: DONT_RETRY });
      });
    });
    assert.equal(value, 'slow');
    assert.deepEqual(launched, [1, 2], 'no third attempt at 100 ms');
  } finally {
    testing.disable();
  }
});

test('a gRPC policy keeps its status codes and judges a status by them', () => {
  const { loadPolicies } = require('..');
  const policies = loadPolicies({
    methodConfig: [
      { name: [{ service: 'pay' }], retryPolicy: { maxAttempts: 3, initialBackoff: '0.1s', maxBackoff: '1s', backoffMultiplier: 2, retryableStatusCodes: ['UNAVAILABLE'] } },
      { name: [{ service: 'reads' }], hedgingPolicy: { maxAttempts: 2, nonFatalStatusCodes: [13, 'ABORTED'] } },
    ],
  });
  const pay = policies.get('pay');
  assert.deepEqual(pay.grpcStatusCodes, ['UNAVAILABLE']);
  assert.deepEqual(policies.get('reads').grpcStatusCodes, ['ABORTED', 'INTERNAL']);
  assert.deepEqual([14, 'UNAVAILABLE', 13, 'INTERNAL', 0].map((s) => pay.grpcVerdict(s)), ['transient', 'transient', 'permanent', 'permanent', 'success']);
  assert.equal(policies.get('reads').grpcVerdict('INTERNAL'), 'transient');
  assert.throws(() => pay.grpcVerdict(17), /17 is not a gRPC status code/);
  assert.throws(() => pay.grpcVerdict(1.5), /1\.5 is not a gRPC status code/);
  assert.throws(() => pay.grpcVerdict('BUSY'), /"BUSY" is not a gRPC status code/);
  assert.throws(() => pay.grpcVerdict(null), /a number or a name, got null/);
  const native = loadPolicies({ policies: { x: {} } }).get('x');
  assert.equal(native.grpcStatusCodes, null);
  assert.throws(() => native.grpcVerdict(14), /not loaded from a gRPC service config/);
});
