'use strict';
// The conformance vectors (tests/conformance/*.json at the repo root) through the public
// JS API only: a Retrier with the vector's policy, onEvent to watch, an AbortController
// fired from the listener for cancel_during_wait, and the virtual-time switch (advance)
// for takes_ms and wait_overrun_ms. A hedging vector's attempts run side by side: each
// takes its virtual time with testing.sleep (cancelled through its signal), and the hedged
// call moves the clock. Prints `conformance: N passed, M failed, K skipped` and writes
// build/conformance/node.txt (or $RETRYRS_CONFORMANCE_DIR) for the summary of `make test`.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Retrier, RetryExhaustedError, PolicyDocumentError, loadPolicies, parseRetryAfter, isRetryableStatus, classifyHttp, testing, DONT_RETRY } = require('..');

const { sharedTests } = require('./helpers');
const { checkPropagationVector } = require('./conformance-propagation');

const repo = path.resolve(__dirname, '..', '..');
const vectorDir = sharedTests('conformance');
const outDir = process.env.RETRYRS_CONFORMANCE_DIR || path.join(repo, 'build', 'conformance');

const { KNOBS } = require('../lib/options');

// A vector's policy is in the policy-document format (docs/policies.md), keyed by the
// core's knob table, and is loaded through loadPolicies, as a service loads its file:
// the policy "retry" (the contract's default name) with the vector's budgets.
const POLICY_KEYS = new Set([...KNOBS.map((k) => k.name), 'breaker', 'hedge']);
// Every budget kind's keys and every breaker model's (the loader checks which belong where).
const BUDGET_KEYS = new Set(['kind', 'max_tokens', 'token_ratio', 'capacity', 'retry_cost', 'timeout_retry_cost', 'no_retry_increment', 'ttl', 'min_retries_per_sec', 'percent_can_retry']);
const BREAKER_KEYS = new Set(['model', 'failures', 'failure_ratio', 'minimum_throughput', 'sampling_duration', 'break_duration', 'half_open_probes', 'break_multiplier', 'max_break_duration', 'per_attempt', 'count_permanent', 'judge_all_probes', 'minimum_calls', 'window_size', 'slow_call_duration', 'slow_call_ratio']);
const VECTOR_KEYS = new Set(['file', 'id', 'rule', 'policy', 'budgets', 'breakers', 'service_config', 'calls', 'expect_error', 'retry_after', 'status', 'http', 'propagation']);
const CALL_KEYS = new Set(['at_ms', 'attempts', 'expect']);
const EXPECT_KEYS = new Set(['outcome', 'reason', 'attempts', 'value', 'delays_ms', 'events', 'budget_tokens', 'breaker_state', 'bounds_ms', 'winner', 'launched_ms', 'cancelled']);

function checkKeys(where, obj, known) {
  for (const key of Object.keys(obj || {})) {
    if (!known.has(key)) throw new Error(`${where} has an unknown key ${key}`);
  }
}

function policyOf(v) {
  checkKeys('vector', v, VECTOR_KEYS);
  checkKeys('vector policy', v.policy, POLICY_KEYS);
  for (const [name, b] of Object.entries(v.budgets || {})) checkKeys(`budgets.${name}`, b, BUDGET_KEYS);
  for (const [name, b] of Object.entries(v.breakers || {})) checkKeys(`breakers.${name}`, b, BREAKER_KEYS);
  for (const c of v.calls || []) {
    checkKeys('call', c, CALL_KEYS);
    checkKeys('expect', c.expect, EXPECT_KEYS);
  }
  const timed = (v.calls || []).filter((c) => c.at_ms !== undefined).map((c) => c.at_ms);
  if (timed.length > 0 && (timed.length !== v.calls.length || timed.some((t, i) => i > 0 && t < timed[i - 1]))) {
    throw new Error('at_ms: every call of the vector gives one, in order');
  }
  // A gRPC service config is loaded as it is: its policy is the service "retry".
  const document = v.service_config ?? { policies: { retry: v.policy || {} }, budgets: v.budgets || {}, breakers: v.breakers || {} };
  return loadPolicies(document).get('retry');
}

function loadVectors() {
  const files = fs.readdirSync(vectorDir).filter((f) => f.endsWith('.json')).sort();
  const vectors = [];
  for (const file of files) {
    const doc = JSON.parse(fs.readFileSync(path.join(vectorDir, file), 'utf8'));
    for (const v of doc.vectors) vectors.push({ file, ...v });
  }
  return { files, vectors };
}

/** Runs one scripted call; resolves with what happened, never rejects. */
// The error attempt n throws for a failing script step: a transient one is a network
// error (with its hint, or DONT_RETRY, in retryAfterMs), a permanent one a TypeError.
function scriptedError(step, n) {
  if (step.result === 'transient' || step.result === 'dont_retry') {
    const err = Object.assign(new Error(`transient failure ${n}`), { code: 'ECONNRESET' });
    if (step.result === 'dont_retry') err.retryAfterMs = DONT_RETRY;
    else if (step.hint_ms !== undefined) err.retryAfterMs = step.hint_ms;
    return err;
  }
  if (step.result === 'permanent') return new TypeError(`permanent failure ${n}`);
  throw new Error(`unknown result ${step.result}`);
}

async function runCall(retrier, script, atMs, hedged) {
  testing.enable(); // each call's elapsed time starts at 0
  // Every call's clock starts at the vector's origin; at_ms moves it to the call's time.
  if (atMs) testing.advance(atMs);
  const controller = new AbortController();
  const cancelReason = new Error('cancelled by the vector');
  const thrown = [];
  const events = [];
  // Each attempt's bound as the attempt sees it when it starts (ctx.remainingMs, before
  // takes_ms advances the clock): compared where a vector gives bounds_ms.
  const bounds = [];
  let calls = 0;
  let overcalled = false;
  // Hedging: when each attempt started (virtual ms) and which were cancelled.
  const launched = [];
  const cancelled = [];
  retrier.script = script;
  retrier.listener = (ev) => {
    events.push(ev);
    if (ev.kind !== 'retrying') return;
    const step = script[ev.attempt - 1] || {};
    if (step.wait_overrun_ms) testing.advance(step.wait_overrun_ms);
    if (step.cancel_during_wait) controller.abort(cancelReason);
  };
  // The failure (or value) scripted for attempt n.
  const outcomeOf = (step, n) => {
    if (step.result === 'success') return n;
    if (step.result === 'rejected_value') {
      const value = { n };
      if (step.hint_ms !== undefined) value.retryAfterMs = step.hint_ms;
      thrown.push(value);
      return value;
    }
    const err = scriptedError(step, n);
    thrown.push(err);
    throw err;
  };
  // A hedged attempt takes its time beside the others; the abort of its signal cancels it.
  const hedgedFn = (ctx) => {
    const n = ctx.attempt;
    const step = script[n - 1];
    calls += 1;
    assert.equal(n, calls, 'attempts are launched in order');
    launched.push(testing.now());
    bounds.push(ctx.remainingMs);
    if (!step) {
      overcalled = true;
      throw new TypeError('fn called more often than the script has entries');
    }
    ctx.signal.addEventListener('abort', () => cancelled.push(n));
    return testing.sleep(step.takes_ms ?? 0, { signal: ctx.signal }).then(() => outcomeOf(step, n));
  };
  const fn = hedged ? hedgedFn : (ctx) => {
    const step = script[calls];
    calls += 1;
    assert.equal(ctx.attempt, calls, 'ctx.attempt counts the calls of fn');
    bounds.push(ctx.remainingMs);
    if (!step) {
      overcalled = true;
      throw new TypeError('fn called more often than the script has entries');
    }
    if (step.timed_out) {
      // "timed_out": the attempt runs past its bound, and the retrier's own bound cuts it
      // (its signal aborts with the TimeoutError the attempt fails with). The virtual
      // clock shows the cut at the bound; the retrier's timer fires in real time.
      assert.notEqual(ctx.remainingMs, undefined, `attempt ${calls} timed out but is unbounded`);
      testing.advance(ctx.remainingMs);
      return new Promise((resolve, reject) => {
        ctx.signal.addEventListener('abort', () => {
          thrown.push(ctx.signal.reason);
          reject(ctx.signal.reason);
        });
      });
    }
    if (step.takes_ms) testing.advance(step.takes_ms);
    // The value of attempt n carries n: n itself, or an object with the hint on it for
    // a rejected value (the default hint reader finds `retryAfterMs` there).
    if (step.result === 'success') return calls;
    if (step.result === 'rejected_value') {
      const value = { n: calls };
      if (step.hint_ms !== undefined) value.retryAfterMs = step.hint_ms;
      thrown.push(value);
      return value;
    }
    const err = scriptedError(step, calls);
    thrown.push(err);
    throw err;
  };
  let value;
  let error;
  let outcome;
  let breakerState;
  try {
    value = await retrier.retrier.call(fn, { signal: controller.signal });
    // Let the losers' abort handlers and late results run: they must change nothing.
    if (hedged) await new Promise(setImmediate);
    outcome = 'success';
  } catch (e) {
    error = e;
    if (e === cancelReason) outcome = 'cancelled';
    else if (e instanceof RetryExhaustedError) outcome = 'exhausted';
    else outcome = 'rejected';
  } finally {
    breakerState = retrier.retrier.breaker?.state;
    testing.disable();
  }
  return { value, error, outcome, events, thrown, calls, overcalled, bounds, breakerState, launched, cancelled };
}

async function checkCallVector(v) {
  const policy = policyOf(v);
  const budget = policy.budget ?? undefined;
  // One retrier per vector; its listener is routed to the current call's watcher.
  const holder = { listener: () => {}, script: [] };
  // The result predicate rejects the value of attempt n exactly when the script says
  // rejected_value; installed only where a script has one (the contract's default is none).
  const predicate = needsResultPredicate(v)
    ? { shouldRetryResult: (value) => holder.script[(typeof value === 'number' ? value : value.n) - 1]?.result === 'rejected_value' }
    : {};
  // A hook vector scripts the hooks' answer after an attempt's failure ("wait": a number
  // of ms, "engine" or "stop"): onRetry stops on "stop", delayMs answers the number.
  const stepAfter = (attempt) => holder.script[attempt - 1] || {};
  const hooks = isHookVector(v)
    ? {
      onRetry: ({ attempt }) => stepAfter(attempt).wait !== 'stop',
      delayMs: ({ attempt }) => (typeof stepAfter(attempt).wait === 'number' ? stepAfter(attempt).wait : undefined),
    }
    : {};
  holder.retrier = Retrier.fromPolicy(policy, { ...predicate, ...hooks, onEvent: (ev) => holder.listener(ev) });
  for (const [i, call] of v.calls.entries()) {
    const where = `call ${i + 1}`;
    const hedged = usesHedging(v);
    const got = await runCall(holder, call.attempts, call.at_ms, hedged);
    const want = call.expect;
    assert.ok(!got.overcalled, `${where}: fn was called more often than scripted`);
    assert.equal(got.outcome, want.outcome, `${where}: outcome (error: ${got.error})`);
    if ('attempts' in want || !hedged) assert.equal(got.calls, want.attempts, `${where}: attempts`);
    if (hedged) {
      // The winner's value (its attempt number) comes back; launches and cancellations as scripted.
      if (want.outcome === 'success') assert.equal(got.value, want.winner, `${where}: the winner's value`);
      assert.deepEqual(got.launched, want.launched_ms, `${where}: when each attempt was launched`);
      if (want.cancelled !== undefined) assert.deepEqual([...got.cancelled].sort(), want.cancelled, `${where}: the attempts cancelled`);
    } else if (want.outcome === 'success') {
      assert.equal(got.value, got.calls, `${where}: the value comes back as it is`);
    }
    if (want.outcome === 'rejected') {
      assert.equal(got.error, got.thrown[got.thrown.length - 1], `${where}: the original error surfaces`);
    }
    if (want.outcome === 'exhausted') {
      assert.equal(got.error.reason, want.reason, `${where}: reason`);
      assert.equal(got.error.attempts, want.attempts, `${where}: error.attempts`);
      // The last 64 failures in order (the contract's history cap); attempts counts all.
      const kept = got.thrown.slice(-64);
      assert.equal(got.error.errors.length, kept.length, `${where}: the last 64 failures are carried`);
      kept.forEach((e, k) => assert.equal(got.error.errors[k], e, `${where}: failure ${k + 1} of the kept ones in order`));
      assert.equal(got.error.cause, got.thrown[got.thrown.length - 1], `${where}: cause is the last failure`);
      if ('value' in want) assert.equal(got.error.result?.n, want.value, `${where}: the last rejected value`);
      else assert.equal(got.error.result, undefined, `${where}: no rejected value when the last failure was an error`);
    }
    if (want.delays_ms) {
      const delays = got.events.filter((e) => e.kind === 'retrying').map((e) => e.delayMs);
      assert.deepEqual(delays, want.delays_ms, `${where}: delays`);
    }
    if (want.bounds_ms !== undefined) {
      // Exact: on the virtual clock the time left is a whole number of milliseconds.
      assert.deepEqual(got.bounds, want.bounds_ms, `${where}: each attempt's bound (ctx.remainingMs)`);
    }
    if (want.events) {
      const seen = got.events.map((e, k) => {
        const w = want.events[k] || {};
        const out = {};
        if ('kind' in w) out.kind = e.kind;
        if ('attempt' in w) out.attempt = e.attempt;
        if ('elapsed_ms' in w) out.elapsed_ms = e.elapsedMs;
        if ('delay_ms' in w) out.delay_ms = e.delayMs;
        if ('reason' in w) out.reason = e.reason;
        if ('retries_left' in w) out.retries_left = e.retriesLeft;
        if ('error' in w) out.error = Object.hasOwn(e, 'error');
        if ('value' in w) out.value = Object.hasOwn(e, 'value');
        return out;
      });
      assert.deepEqual(seen, want.events, `${where}: events`);
      for (const e of got.events) assert.equal(e.name, holder.retrier.name, `${where}: events carry the name`);
    }
    if (want.breaker_state !== undefined) assert.equal(got.breakerState, want.breaker_state, `${where}: breaker state`);
    if (want.budget_tokens !== undefined) {
      assert.ok(budget, `${where}: budget_tokens without a budget`);
      assert.ok(Math.abs(budget.tokens - want.budget_tokens) < 1e-9, `${where}: budget tokens ${budget.tokens}, want ${want.budget_tokens}`);
    }
  }
}

function checkValidationVector(v) {
  const where = `policies.retry.${v.expect_error.knob}`;
  let caught;
  try {
    policyOf(v);
  } catch (e) {
    caught = e;
  }
  assert.ok(caught, 'loading the policy must fail');
  assert.ok(caught instanceof PolicyDocumentError, `a PolicyDocumentError, got ${caught}`);
  assert.equal(caught.path, where, `the error is about ${where}: ${caught.message}`);
  assert.ok(caught.message.includes(v.expect_error.knob), caught.message);
}

function checkRetryAfterVector(v) {
  const { value, now_unix_s: nowS, expect_ms: want } = v.retry_after;
  const got = parseRetryAfter(value, nowS * 1000);
  if (want === null) assert.equal(got, undefined, 'no hint');
  else if (want === 'saturated') assert.ok(got >= 1e15, `saturated, got ${got}`);
  else assert.equal(got, want);
}

function checkStatusVector(v) {
  assert.equal(isRetryableStatus(v.status.code), v.status.retryable);
}

function checkHttpVector(v) {
  const h = v.http;
  const got = classifyHttp({
    method: h.method,
    status: h.status,
    failure: h.failure,
    retryMethods: h.retry_methods,
    retryStatuses: h.retry_statuses,
    idempotencyKey: h.idempotency_key,
    honourIdempotencyKey: h.honour_idempotency_key,
  });
  assert.equal(got, h.expect);
}

function check(v) {
  if (v.calls) return checkCallVector(v);
  if (v.expect_error) return checkValidationVector(v);
  if (v.retry_after) return checkRetryAfterVector(v);
  if (v.status) return checkStatusVector(v);
  if (v.http) return checkHttpVector(v);
  if (v.propagation) return checkPropagationVector(v, policyOf);
  throw new Error('a vector needs one of calls, expect_error, retry_after, status, http, propagation');
}

const { files, vectors } = loadVectors();
let passed = 0;
let failed = 0;

// A vector whose policy hedges (a policy's "hedge", a service config's hedgingPolicy).
function usesHedging(v) {
  return 'hedge' in (v.policy || {}) || ((v.service_config || {}).methodConfig || []).some((c) => 'hedgingPolicy' in c);
}
// A hook vector: an attempt scripts what the hooks answer after its failure ("wait").
const isHookVector = (v) => (v.calls || []).some((c) => c.attempts.some((a) => 'wait' in a));

// A vector whose script returns a value the result predicate rejects.
const needsResultPredicate = (v) => (v.calls || []).some((c) => c.attempts.some((a) => a.result === 'rejected_value'));

test('the conformance vectors exist', () => {
  assert.ok(files.length > 0 && vectors.length > 0, `no vectors in ${vectorDir}`);
  const ids = new Set(vectors.map((v) => v.id));
  assert.equal(ids.size, vectors.length, 'vector ids are unique');
});

// Nothing is skipped: the count stays for the summary line (tests/conformance/README.md).
const skipped = 0;

for (const v of vectors) {
  test(`${v.file} ${v.id}`, async () => {
    try {
      await check(v);
      passed += 1;
    } catch (err) {
      failed += 1;
      throw err;
    }
  });
}

test.after(() => {
  const line = `conformance: ${passed} passed, ${failed} failed, ${skipped} skipped`;
  console.log(line);
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, 'node.txt'), `node ${passed} ${failed} ${skipped}\n`);
});
