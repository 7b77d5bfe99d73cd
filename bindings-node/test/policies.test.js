'use strict';
// Policy documents in Node: the shared document gives the policies and waits every host
// gets (tests/policies/expected.json), every error case names the same path, gRPC's example
// service config, hostile input. The loader is the core's; these check the wiring.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Retrier, RetryExhaustedError, RetryBudget, loadPolicies, Policy, PolicyDocument, PolicyDocumentError, testing } = require('..');
const { KNOBS } = require('../lib/options');
const { transient, sharedTests } = require('./helpers');

const DATA = sharedTests('policies');
const EXPECTED = JSON.parse(fs.readFileSync(path.join(DATA, 'expected.json'), 'utf8'));
const ERRORS = JSON.parse(fs.readFileSync(path.join(DATA, 'errors.json'), 'utf8')).cases;
const SHARED = path.join(DATA, 'shared.json');
const GRPC_CASES = JSON.parse(fs.readFileSync(path.join(DATA, 'grpc_cases.json'), 'utf8')).cases;

/** The waits (ms) of a call whose every attempt fails transiently, in virtual time. */
async function waits(policy) {
  const events = [];
  const r = Retrier.fromPolicy(policy, { onEvent: (e) => events.push(e) });
  const err = await testing.scoped(() => r.call(() => { throw transient(); }).catch((e) => e));
  assert.ok(err instanceof RetryExhaustedError, String(err));
  return events.filter((e) => e.kind === 'retrying').map((e) => Math.round(e.delayMs));
}

for (const [name, want] of Object.entries(EXPECTED.policies)) {
  test(`the shared document's ${name} is every host's`, async () => {
    const p = loadPolicies(SHARED).get(name);
    const k = want.knobs;
    assert.ok(p instanceof Policy);
    assert.equal(p.maxAttempts, k.max_attempts);
    assert.equal(p.initialDelayMs, k.initial_delay_ms);
    assert.equal(p.multiplier, k.multiplier);
    assert.equal(p.maxDelayMs, k.max_delay_ms);
    assert.equal(p.deadlineMs, k.deadline_ms);
    assert.equal(p.maxRetryAfterMs, k.max_retry_after_ms);
    assert.equal(p.jitter, k.jitter);
    assert.equal(p.name, k.name);
    assert.equal(p.seed, k.seed === null ? null : BigInt(k.seed));
    assert.equal(p.budget === null, k.budget === null);
    assert.deepEqual(await waits(p), want.waits_ms);
  });
}

test('a path, a file URL, the text and an object load the same', async () => {
  const text = fs.readFileSync(SHARED, 'utf8');
  for (const source of [SHARED, new URL(`file://${SHARED}`), text, JSON.parse(text)]) {
    assert.deepEqual(await waits(loadPolicies(source).get('payments')), EXPECTED.policies.payments.waits_ms);
  }
});

test('a policy is read-only and answers every knob of the table', () => {
  const p = loadPolicies(SHARED).get('payments');
  assert.deepEqual(Object.keys(p), KNOBS.map((k) => k.option));
  assert.throws(() => { 'use strict'; p.maxAttempts = 9; }, TypeError);
  assert.throws(() => new Policy(), /come from loadPolicies/);
});

test('a budget named twice is one RetryBudget', async () => {
  const policies = loadPolicies(SHARED);
  const budget = policies.get('payments').budget;
  assert.ok(budget instanceof RetryBudget);
  assert.equal(policies.get('rates').budget, budget);
  await waits(policies.get('payments'));
  assert.equal(budget.tokens, EXPECTED.budget_after_payments.tokens);
  assert.deepEqual(await waits(policies.get('rates')), EXPECTED.budget_after_payments.rates_waits_ms);
  assert.notEqual(loadPolicies(SHARED).get('payments').budget, budget);
});

test('fromPolicy takes the host options and knob overrides (issue 24), the document untouched', () => {
  const p = loadPolicies(SHARED).get('payments');
  assert.notEqual(p.maxAttempts, 3);
  assert.match(require('node:util').inspect(Retrier.fromPolicy(p, { maxAttempts: 3 })), /maxAttempts: 3,/);
  assert.doesNotMatch(require('node:util').inspect(Retrier.fromPolicy(p)), /maxAttempts: 3,/);
  assert.throws(() => Retrier.fromPolicy(p, { maxAtempts: 3 }), /unknown option 'maxAtempts'/);
  assert.throws(() => Retrier.fromPolicy({ maxAttempts: 3 }), /must come from loadPolicies/);
  assert.equal(Retrier.fromPolicy(p, { shouldRetry: () => true }).name, 'payments');
});

test('a hedging policy makes a hedging retrier (issue 26; test/hedge.test.js runs it)', async () => {
  const p = loadPolicies({ policies: { reads: { max_attempts: 4, hedge: { max_attempts: 2, delay: '50ms' } } } }).get('reads');
  const r = Retrier.fromPolicy(p, { shouldRetry: () => true });
  assert.equal(r.name, 'reads');
  const launched = [];
  const value = await r.call((ctx) => {
    launched.push(ctx.attempt);
    return ctx.attempt === 1 ? new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve('lost'))) : 'won';
  });
  assert.equal(value, 'won');
  assert.deepEqual(launched, [1, 2], 'attempt 2 went out beside attempt 1, not after it');
});

for (const c of ERRORS) {
  test(`error: ${c.name} names ${c.path}`, () => {
    let err;
    try {
      loadPolicies(c.document);
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof PolicyDocumentError, String(err));
    assert.equal(err.path, c.path);
    assert.ok(err.message.includes(c.path) && err.message.includes(c.fragment), err.message);
    if (c.position !== null) assert.deepEqual([err.line, err.column], c.position);
  });
}

test("a file's error carries its name, line and column", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retryrs-doc-'));
  const f = path.join(dir, 'policies.json');
  fs.writeFileSync(f, '{\n  "policies": {\n    "payments": { "deadline": "5 s" }\n  }\n}\n');
  assert.throws(() => loadPolicies(f), (e) => e.message.startsWith(`${f}:3:31: policies.payments.deadline:`) && e.file === f);
  assert.throws(() => loadPolicies(path.join(dir, 'absent.json')), /cannot read it/);
  fs.rmSync(dir, { recursive: true });
});

test('hostile input is a clear error', () => {
  const huge = '{"policies": {"p": {"name": "' + 'x'.repeat(100 * 1024 * 1024) + '"}}}';
  assert.throws(() => loadPolicies(huge), /more than the 16777216/);
  assert.throws(() => loadPolicies('{"policies": {"p": {"seed": ' + '['.repeat(100000) + ']'.repeat(100000) + '}}}'), /recursion limit/);
  assert.throws(() => loadPolicies({ policies: { p: { seed: 1n } } }), /not JSON data/);
  assert.throws(() => loadPolicies(42), /a path, a JSON string or an object/);
});

test("gRPC's example service config", async () => {
  const policies = loadPolicies(path.join(DATA, 'grpc_service_config.json'));
  const echo = policies.get('EchoService');
  assert.deepEqual([echo.maxAttempts, echo.initialDelayMs, echo.maxDelayMs, echo.multiplier, echo.jitter, echo.deadlineMs], [4, 100, 1000, 2, 'proportional(0.2)', null]);
  assert.equal(policies.get('EchoService/Stream').maxAttempts, 5);
  assert.equal(policies.get('EchoService/Stream').budget, echo.budget);
  const w = await waits(echo);
  assert.equal(w.length, 3);
  w.forEach((ms, i) => assert.ok(ms >= 80 && ms <= 120 * 2 ** i, String(w)));
});

test('ten thousand policies load', () => {
  // Correctness at size; the speed is the benchmark's (bench/node), not a timed test.
  const policies = {};
  for (let i = 0; i < 10000; i++) policies[`svc${i}`] = { max_attempts: 1 + (i % 7), initial_delay: `${i % 500}ms` };
  const loaded = loadPolicies({ policies });
  assert.equal(loaded.size, 10000);
  assert.equal(loaded.get('svc9999').initialDelayMs, 499);
});

for (const c of GRPC_CASES) {
  test(`gRPC service config: ${c.name}`, () => {
    if (c.error) {
      assert.throws(() => loadPolicies(c.document), (err) => {
        assert.ok(err instanceof PolicyDocumentError, String(err));
        assert.equal(err.path, c.error.path);
        assert.ok(err.message.includes(c.error.fragment), err.message);
        return true;
      });
      return;
    }
    const policies = loadPolicies(c.document);
    assert.ok(policies instanceof PolicyDocument && policies instanceof Map);
    assert.equal(policies.warnings.length, c.warnings.length, JSON.stringify(policies.warnings));
    c.warnings.forEach((want, i) => assert.ok(policies.warnings[i].includes(want), policies.warnings[i]));
    for (const l of c.lookups) {
      const key = policies.methodKey(l.service, l.method);
      assert.equal(key, l.key, JSON.stringify(l));
      const p = policies.forMethod(l.service, l.method);
      if (key === null) {
        assert.equal(p, null);
        continue;
      }
      assert.equal(p, policies.get(key));
      assert.equal(p.maxAttempts, l.max_attempts);
      assert.equal(p.deadlineMs, l.deadline_ms);
      assert.equal(p.budget !== null, l.budget);
    }
  });
}

test('a gRPC policy waits exactly the pushback', async () => {
  const doc = { methodConfig: [{ name: [{ service: 'S' }], retryPolicy: { maxAttempts: 3, initialBackoff: '1s', maxBackoff: '2s', backoffMultiplier: 2, retryableStatusCodes: ['UNAVAILABLE'] } }] };
  const policies = loadPolicies(doc);
  assert.deepEqual(policies.warnings, []);
  assert.throws(() => policies.methodKey(1), TypeError);
  const events = [];
  const r = Retrier.fromPolicy(policies.forMethod('S', 'Get'), { onEvent: (e) => events.push(e) });
  const err = await testing.scoped(() => r.call(() => { throw transient('unavailable', { retryAfterMs: 30 }); }).catch((e) => e));
  assert.ok(err instanceof RetryExhaustedError, String(err));
  assert.deepEqual(events.filter((e) => e.kind === 'retrying').map((e) => e.delayMs), [30, 30]);
});
