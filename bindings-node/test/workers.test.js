'use strict';
// worker_threads (issue 13, defect 9): one RetryBudget drained by two workers, and the
// virtual-time switch seen by every thread, as the README says (it is process-wide).
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { RetryBudget, testing } = require('..');

const PKG = path.join(__dirname, '..');

/** Runs `source` (CommonJS, `retryrs` in scope as `r`) in a worker; resolves with its message. */
function inWorker(source, workerData) {
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    const r = require(${JSON.stringify(PKG)});
    (async () => { ${source} })().then((m) => parentPort.postMessage(m), (e) => parentPort.postMessage({ error: String(e && e.stack || e) }));
  `;
  return new Promise((resolve, reject) => {
    const w = new Worker(code, { eval: true, workerData });
    w.once('message', (m) => {
      if (m && m.error) reject(new Error(m.error));
      else resolve(m);
    });
    w.once('error', reject);
  });
}

const DRAIN = `
  const budget = r.RetryBudget.from(workerData.budget);
  const retrier = new r.Retrier({ initialDelayMs: 0, maxDelayMs: 0, maxAttempts: 1000, deadlineMs: null, budget: workerData.budget });
  const err = await retrier.call(() => { throw Object.assign(new Error('reset'), { code: 'ECONNRESET' }); }).catch((e) => e);
  return { reason: err.reason, attempts: err.attempts, tokens: budget.tokens, max: budget.maxTokens };
`;

test('9: two workers drain one RetryBudget created on the main thread', async () => {
  const budget = new RetryBudget(20, 1);
  // Retries go ahead while tokens > 10; each failure costs one.
  const first = await inWorker(DRAIN, { budget });
  assert.equal(first.max, 20, 'the worker sees the same bucket');
  assert.equal(first.reason, 'budget');
  assert.ok(first.attempts >= 10, `the first worker drained it (${first.attempts} attempts)`);
  assert.ok(budget.tokens <= 10, `the main thread sees the drain (${budget.tokens})`);
  const second = await inWorker(DRAIN, { budget });
  assert.equal(second.reason, 'budget');
  assert.equal(second.attempts, 1, 'the second worker finds it drained');
  assert.equal(second.tokens, budget.tokens);
  // Concurrently, too: the same bucket, whoever holds it.
  const fresh = new RetryBudget(40, 1);
  const both = await Promise.all([inWorker(DRAIN, { budget: fresh }), inWorker(DRAIN, { budget: fresh })]);
  assert.ok(both.every((m) => m.reason === 'budget'));
  assert.ok(fresh.tokens <= 20);
  assert.ok(both[0].attempts + both[1].attempts >= 20, 'between them they spent the half');
});

test('9: what postMessage makes of a RetryBudget is its share id; anything else is refused by name', () => {
  const budget = new RetryBudget(5, 0.5);
  const copy = structuredClone(budget);
  assert.deepEqual(Object.keys(copy), ['retryrsBudget']);
  const back = RetryBudget.from(copy);
  assert.ok(back instanceof RetryBudget);
  assert.equal(back.maxTokens, 5);
  assert.equal(RetryBudget.from(copy), back, 'attached once');
  assert.equal(RetryBudget.from(budget), budget);
  assert.throws(() => RetryBudget.from({}), /RetryBudget\.from: expected a RetryBudget/);
  assert.throws(() => RetryBudget.from({ retryrsBudget: 2 ** 31 }), /RetryBudget\.from: no RetryBudget is shared under id/);
});

test("9: virtual time is process-wide: a worker's enable() is seen by the main thread and by later workers", async () => {
  assert.equal(testing.isOn(), false);
  try {
    const seen = await inWorker('r.testing.enable(); r.testing.advance(1234); return r.testing.isOn();');
    assert.equal(seen, true);
    assert.equal(testing.isOn(), true, 'the main thread sees the switch a worker turned');
    assert.equal(testing.now(), 1234, 'and the same clock');
    // The main thread's calls run on it: a 10 s wait takes no real time.
    const { Retrier } = require('..');
    let n = 0;
    const t0 = performance.now();
    const v = await new Retrier({ initialDelayMs: 10_000, maxDelayMs: 10_000, jitter: 'none', deadlineMs: null })
      .call(() => { if (++n < 2) throw Object.assign(new Error('reset'), { code: 'ECONNRESET' }); return testing.now(); });
    assert.equal(v, 11_234);
    assert.ok(performance.now() - t0 < 5000);
    const later = await inWorker('return [r.testing.isOn(), r.testing.now()];');
    assert.deepEqual(later, [true, 11_234]);
    await inWorker('r.testing.disable(); return 0;');
    assert.equal(testing.isOn(), false, "and a worker's disable()");
  } finally {
    testing.disable();
  }
});
