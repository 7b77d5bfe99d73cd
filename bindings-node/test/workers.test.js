'use strict';
// worker_threads (issue 13, defect 9): one RetryBudget drained by two workers; a worker's
// virtual time is its own (issue 22), the process-wide switch is asked for by name.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { RetryBudget, loadPolicies, testing } = require('..');

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

test("9: a policy document's budget is shared like any RetryBudget (its share id is what postMessage copies)", () => {
  const doc = loadPolicies({ policies: { a: { budget: 'shared' }, b: { budget: 'shared' } }, budgets: { shared: { max_tokens: 7, token_ratio: 0.5 } } });
  const budget = doc.get('a').budget;
  assert.ok(budget instanceof RetryBudget);
  assert.equal(doc.get('b').budget, budget, 'one budget for both policies');
  const copy = structuredClone(budget);
  assert.deepEqual(Object.keys(copy), ['retryrsBudget']);
  const back = RetryBudget.from(copy);
  assert.equal(back.maxTokens, 7);
  assert.equal(back.tokens, budget.tokens);
});

/** One real 100 ms wait between two attempts, in the code's own thread; resolves with ms taken. */
const WAIT_100 = `
  const retrier = new r.Retrier({ maxAttempts: 2, initialDelayMs: 100, maxDelayMs: 100, jitter: 'none', deadlineMs: null });
  const t0 = performance.now();
  await retrier.call(() => { throw Object.assign(new Error('reset'), { code: 'ECONNRESET' }); }).catch(() => {});
  return performance.now() - t0;
`;
const wait100 = new Function('r', `return (async () => { ${WAIT_100} })();`);

/**
 * A worker with virtual time on ('enable': its switch; 'scope': a testing.scoped(fn) that
 * never ends) that waits 100 ms itself, reports, and holds virtual time until terminated.
 */
function virtualWorker(how) {
  const body = `
    const retrier = new r.Retrier({ maxAttempts: 2, initialDelayMs: 100, maxDelayMs: 100, jitter: 'none', deadlineMs: null });
    const t0 = performance.now();
    await retrier.call(() => { throw Object.assign(new Error('reset'), { code: 'ECONNRESET' }); }).catch(() => {});
    parentPort.postMessage({ on: r.testing.isOn(), now: r.testing.now(), took: performance.now() - t0 });
    await new Promise(() => setInterval(() => {}, 1000)); // holds virtual time until terminated
  `;
  const code = `
    const { parentPort } = require('node:worker_threads');
    const r = require(${JSON.stringify(PKG)});
    ${how === 'enable' ? `r.testing.enable(); (async () => { ${body} })();` : `r.testing.scoped(async () => { ${body} });`}
  `;
  const w = new Worker(code, { eval: true });
  const ready = new Promise((resolve, reject) => {
    w.once('message', resolve);
    w.once('error', reject);
  });
  return { w, ready };
}

for (const how of ['enable', 'scope']) {
  test(`9: a worker's virtual time (${how}) is its own: other workers and the main thread wait for real, also after it is terminated`, async () => {
    const { w, ready } = virtualWorker(how);
    const seen = await ready;
    assert.equal(seen.on, true);
    assert.equal(seen.now, 100, "the worker's own wait was virtual");
    assert.equal(testing.isOn(), false, "the main thread does not see the worker's virtual time");
    const r = require('..');
    const [main, other] = await Promise.all([wait100(r), inWorker(WAIT_100)]);
    assert.ok(main >= 99, `the main thread's 100 ms wait took ${main} ms`);
    assert.ok(other >= 99, `another worker's 100 ms wait took ${other} ms`);
    await w.terminate();
    assert.equal(testing.isOn(), false);
    const after = await wait100(r);
    assert.ok(after >= 99, `after the worker was terminated, the wait took ${after} ms`);
  });
}

test("9: process-wide virtual time is asked for by name: a worker's enable({ scope: 'process' }) is seen by the main thread and by later workers", async () => {
  assert.equal(testing.isOn(), false);
  try {
    const seen = await inWorker("r.testing.enable({ scope: 'process' }); r.testing.advance(1234); return r.testing.isOn();");
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
    await inWorker("r.testing.disable({ scope: 'process' }); return 0;");
    assert.equal(testing.isOn(), false, "and a worker's disable({ scope: 'process' })");
  } finally {
    testing.disable({ scope: 'process' });
  }
});
