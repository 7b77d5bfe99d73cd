'use strict';
// The circuit breaker shared by retriers (and by worker threads), and the budget kinds
// (issue 27).
const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { Retrier, CircuitBreaker, RetryBudget, RetryExhaustedError, loadPolicies, testing } = require('..');

const reset = () => Object.assign(new Error('reset'), { code: 'ECONNRESET' });

/** A dependency down until `up`: counts every call it sees. */
function dependency() {
  const d = { calls: 0, up: false };
  d.fn = () => {
    d.calls += 1;
    if (!d.up) throw reset();
    return 'ok';
  };
  return d;
}

test('a breaker shared by two retriers opens, refuses without calling, half-opens after the break, closes on a probe', async () => {
  await testing.scoped(async () => {
    const breaker = new CircuitBreaker({ failures: 2, breakDurationMs: 30000 });
    const events = [];
    const a = new Retrier({ name: 'a', maxAttempts: 2, initialDelayMs: 0, breaker, onEvent: (e) => events.push(e) });
    const b = new Retrier({ name: 'b', maxAttempts: 3, initialDelayMs: 0, breaker });
    const dep = dependency();
    for (const r of [a, b]) {
      const err = await r.call(dep.fn).catch((e) => e);
      assert.equal(err.reason, 'attempts');
    }
    assert.equal(dep.calls, 5);
    assert.equal(breaker.state, 'open');
    const refused = await a.call(dep.fn).catch((e) => e);
    assert.ok(refused instanceof RetryExhaustedError);
    assert.equal(dep.calls, 5, 'fn is not called');
    assert.deepEqual([refused.reason, refused.attempts, refused.errors, refused.breakerState], ['circuit_open', 0, [], 'open']);
    assert.equal(refused.retryInMs, 30000);
    assert.equal(refused.message, 'a: gave up after 0 attempts (circuit breaker open)');
    assert.deepEqual(events.at(-1), { kind: 'exhausted', name: 'a', attempt: 0, elapsedMs: 0, reason: 'circuit_open', retriesLeft: 1 });
    assert.equal(breaker.rejections, 1);
    testing.advance(29999);
    assert.equal(breaker.state, 'open');
    assert.equal(breaker.retryInMs, 1);
    testing.advance(1);
    assert.equal(breaker.state, 'half_open');
    dep.up = true;
    events.length = 0;
    assert.equal(await a.call(dep.fn), 'ok');
    assert.deepEqual(events.map((e) => e.kind), ['breaker_half_open', 'success', 'breaker_closed']);
    assert.equal(breaker.state, 'closed');
    assert.equal(dep.calls, 6);
  });
});

test('the server sees no request while the breaker is open', async () => {
  let seen = 0;
  const server = http.createServer((req, res) => {
    seen += 1;
    res.writeHead(503).end();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${server.address().port}/rates`;
    const breaker = new CircuitBreaker({ failures: 1, breakDurationMs: 60000 });
    const r = new Retrier({ maxAttempts: 2, initialDelayMs: 0, breaker, shouldRetry: () => true });
    const get = async () => {
      const res = await fetch(url);
      if (res.status >= 500) throw new Error(`status ${res.status}`);
      return res.status;
    };
    assert.equal((await r.call(get).catch((e) => e)).reason, 'attempts');
    assert.equal(seen, 2);
    assert.equal((await r.call(get).catch((e) => e)).reason, 'circuit_open');
    assert.equal(seen, 2, 'no request reached the server');
  } finally {
    server.close();
  }
});

const PKG = path.join(__dirname, '..');

/** Runs `source` in a worker with `r` = retryrs; resolves with what it returns. */
function inWorker(source, workerData) {
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    const r = require(${JSON.stringify(PKG)});
    (async () => { ${source} })().then((m) => parentPort.postMessage(m), (e) => parentPort.postMessage({ error: String(e && e.stack || e) }));
  `;
  return new Promise((resolve, reject) => {
    const w = new Worker(code, { eval: true, workerData });
    w.once('message', (m) => (m && m.error ? reject(new Error(m.error)) : resolve(m)));
    w.once('error', reject);
  });
}

test('two worker threads share one breaker: one opens it, the other is refused', async () => {
  const breaker = new CircuitBreaker({ failures: 3, breakDurationMs: 60000 });
  assert.deepEqual(Object.keys(structuredClone(breaker)), ['retryrsBreaker']);
  const FAIL = `
    const retrier = new r.Retrier({ maxAttempts: 1, breaker: workerData.breaker });
    let calls = 0;
    const reasons = [];
    for (let i = 0; i < workerData.n; i++) {
      const err = await retrier.call(() => { calls += 1; throw Object.assign(new Error('reset'), { code: 'ECONNRESET' }); }).catch((e) => e);
      reasons.push(err.reason);
    }
    return { calls, reasons, state: r.CircuitBreaker.from(workerData.breaker).state };
  `;
  const first = await inWorker(FAIL, { breaker, n: 3 });
  assert.deepEqual(first, { calls: 3, reasons: ['attempts', 'attempts', 'attempts'], state: 'open' });
  assert.equal(breaker.state, 'open', 'the main thread sees it open');
  const second = await inWorker(FAIL, { breaker, n: 2 });
  assert.deepEqual(second, { calls: 0, reasons: ['circuit_open', 'circuit_open'], state: 'open' });
  assert.equal(breaker.rejections, 2);
  assert.throws(() => CircuitBreaker.from({}), /CircuitBreaker\.from: expected a CircuitBreaker/);
});

test('a failed probe opens it again for a growing break; the sampling model', async () => {
  await testing.scoped(async () => {
    const breaker = new CircuitBreaker({ failures: 1, breakDurationMs: 1000, breakMultiplier: 2, maxBreakDurationMs: 3000 });
    const r = new Retrier({ maxAttempts: 1, breaker });
    for (const want of [1000, 2000, 3000, 3000]) {
      assert.equal((await r.call(dependency().fn).catch((e) => e)).reason, 'attempts');
      assert.equal(breaker.retryInMs, want);
      testing.advance(want);
    }
    const sampling = new CircuitBreaker({ model: 'sampling', failureRatio: 0.5, minimumThroughput: 2, samplingDurationMs: 10000 });
    const s = new Retrier({ maxAttempts: 1, breaker: sampling, shouldRetry: (e) => e.code === 'ECONNRESET' });
    await assert.rejects(s.call(() => { throw new Error('permanent'); }), /permanent/);
    assert.equal(sampling.state, 'closed', 'a permanent failure is the dependency answering');
    await s.call(dependency().fn).catch(() => {});
    assert.equal(sampling.state, 'open', '1 failure of 2 calls reaches 0.5');
  });
});

test('bad breaker options are named', () => {
  assert.throws(() => new CircuitBreaker({ failures: 0 }), /CircuitBreaker: failures must be a whole number >= 1, got 0/);
  assert.throws(() => new CircuitBreaker({ model: 'sampling', failureRatio: 2 }), /failureRatio must be in \(0, 1\], got 2/);
  assert.throws(() => new CircuitBreaker({ model: 'sampling', samplingDurationMs: 10 }), /samplingDurationMs must be >= 500 ms/);
  assert.throws(() => new CircuitBreaker({ failureRatio: 0.5 }), /belongs to model 'sampling'/);
  assert.throws(() => new CircuitBreaker({ halfOpen: 1 }), /unknown option 'halfOpen'/);
  assert.throws(() => new Retrier({ breaker: {} }), /breaker must be a CircuitBreaker/);
});

test('budget kinds: the AWS quota in a total outage, Finagle two calls per retry, documents', async () => {
  await testing.scoped(async () => {
    const quota = RetryBudget.quota();
    assert.equal(quota.kind, 'quota');
    const r = new Retrier({ maxAttempts: 3, initialDelayMs: 0, budget: quota });
    const dep = dependency();
    const reasons = [];
    for (let i = 0; i < 60; i++) reasons.push((await r.call(dep.fn).catch((e) => e)).reason);
    assert.equal(dep.calls, 160, '100 retries: 500 / 5');
    assert.equal(reasons.filter((x) => x === 'budget').length, 10);
    assert.equal(quota.tokens, 0);
    dep.up = true;
    await r.call(dep.fn);
    assert.equal(quota.tokens, 1);
    const ratio = RetryBudget.ratio({ ttlMs: 60000, minRetriesPerSec: 0, percentCanRetry: 0.5 });
    const f = new Retrier({ maxAttempts: 2, initialDelayMs: 0, budget: ratio });
    const down = dependency();
    assert.equal((await f.call(down.fn).catch((e) => e)).reason, 'budget');
    assert.equal((await f.call(down.fn).catch((e) => e)).reason, 'attempts');
    assert.equal(down.calls, 3);
    assert.throws(() => RetryBudget.quota({ retryCost: 0 }), /RetryBudget\.quota: retryCost must be a whole number in \[1, 1e12\], got 0/);
    assert.throws(() => RetryBudget.ratio({ ttlMs: 500 }), /RetryBudget\.ratio: ttlMs must be in \[1 s, 60 s\]/);
    const doc = loadPolicies({
      policies: { default: { breaker: 'db' }, a: { budget: 'aws' } },
      budgets: { aws: { kind: 'quota' } },
      breakers: { db: { model: 'consecutive', failures: 1, break_duration: '10s' } },
    });
    const a = Retrier.fromPolicy(doc.get('a'));
    const b = Retrier.fromPolicy(doc.get('default'));
    assert.equal((await a.call(dependency().fn).catch((e) => e)).reason, 'attempts');
    assert.equal((await b.call(dependency().fn).catch((e) => e)).reason, 'circuit_open', 'one breaker for both policies');
  });
});

const BREAKER_SCENARIO = require(path.join(require('./helpers').sharedTests('observability'), 'breaker.json'));

/** The shared breaker scenario in virtual time; `checkState(value)` after the calls that say so. */
async function runBreakerScenario(onEvent, checkState = async () => {}) {
  const spec = BREAKER_SCENARIO;
  const breaker = new CircuitBreaker({ failures: spec.breaker.failures, breakDurationMs: spec.breaker.breakDurationMs });
  const r = new Retrier({ name: spec.retrier.name, maxAttempts: spec.retrier.maxAttempts, breaker, onEvent, shouldRetry: (e) => e.name === 'ConnectionError' });
  await testing.scoped(async () => {
    const t0 = testing.now();
    for (const call of spec.calls) {
      testing.advance(t0 + call.atMs - testing.now());
      const steps = [...call.attempts];
      await r.call(() => {
        const step = steps.shift();
        if (step === 'ok') return 'ok';
        throw Object.assign(new Error(step), { name: step });
      }).catch(() => {});
      assert.deepEqual(steps, [], 'every scripted attempt ran');
      if (call.then) await checkState(call.then.state);
    }
  });
}

test('promListener shows the breaker state and its rejections (tests/observability/breaker.json)', async () => {
  const prom = require('prom-client');
  const { promListener } = require('retryrs/prometheus');
  const register = new prom.Registry();
  const value = async (name, labels) => {
    const metric = await register.getSingleMetric(name.replace(/_total$/, '')) ?? register.getSingleMetric(name);
    const got = (await metric.get()).values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x));
    return got.map((v) => v.value);
  };
  await runBreakerScenario(promListener({ register }), async (state) => {
    assert.deepEqual(await value('retryrs_breaker_state', { retrier: 'db' }), [state]);
  });
  const names = register.getMetricsAsArray().map((x) => x.name.replace(/_total$/, '')).sort();
  assert.deepEqual(names, [...BREAKER_SCENARIO.prometheus.families].sort());
  for (const want of BREAKER_SCENARIO.prometheus.samples) {
    const metric = register.getSingleMetric(want.name) ?? register.getSingleMetric(want.name.replace(/_total$/, ''));
    const got = (await metric.get()).values.filter((v) => {
      const labels = Object.fromEntries(Object.entries(v.labels).filter(([, x]) => x !== ''));
      return JSON.stringify(Object.entries(labels).sort()) === JSON.stringify(Object.entries(want.labels).sort());
    });
    assert.deepEqual(got.map((v) => v.value), [want.value], want.name);
  }
  const plain = new prom.Registry();
  await new Retrier({ onEvent: promListener({ register: plain }) }).call(() => 1);
  assert.equal(plain.getSingleMetric('retryrs_breaker_state'), undefined, 'no breaker, no breaker metric');
});

test('otelListener shows the breaker state and its rejections (tests/observability/breaker.json)', async () => {
  const { MeterProvider, MetricReader } = require('@opentelemetry/sdk-metrics');
  const { otelListener } = require('retryrs/otel');
  class Reader extends MetricReader {
    async onForceFlush() {}
    async onShutdown() {}
  }
  const reader = new Reader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  await runBreakerScenario(otelListener({ meterProvider }));
  const { resourceMetrics } = await reader.collect();
  const metrics = Object.fromEntries(resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).map((x) => [x.descriptor.name, x]));
  for (const inst of BREAKER_SCENARIO.otel.instruments) {
    const metric = metrics[inst.name];
    assert.ok(metric, inst.name);
    assert.equal(metric.descriptor.unit, inst.unit);
    assert.deepEqual(metric.dataPoints.map((p) => ({ attributes: p.attributes, value: p.value })), inst.points, inst.name);
  }
  await meterProvider.shutdown();
});

// Issue 35: the options Polly and resilience4j users look for (docs/breaker.md).

test('a count window judges the last calls; permanent failures count only when asked', async () => {
  await testing.scoped(async () => {
    const breaker = new CircuitBreaker({ model: 'count', failureRatio: 0.5, minimumCalls: 2, windowSize: 2 });
    assert.deepEqual([breaker.model, breaker.state], ['count', 'closed']);
    const r = new Retrier({ maxAttempts: 1, breaker });
    const dep = dependency();
    await r.call(dep.fn).catch(() => {});
    assert.equal(breaker.state, 'closed', '1 call: under the minimum');
    dep.up = true;
    assert.equal(await r.call(dep.fn), 'ok');
    assert.equal(breaker.state, 'open', '1 failure of the last 2 reaches 0.5');
    for (const [countPermanent, state] of [[false, 'closed'], [true, 'open']]) {
      const b = new CircuitBreaker({ failures: 2, countPermanent });
      const p = new Retrier({ maxAttempts: 3, breaker: b, shouldRetry: (e) => e.code === 'ECONNRESET' });
      for (let i = 0; i < 2; i++) await assert.rejects(p.call(() => { throw new Error('400'); }), /400/);
      assert.equal(b.state, state, `countPermanent ${countPermanent}`);
    }
  });
});

test('slow calls open it by their own ratio', async () => {
  await testing.scoped(async () => {
    const breaker = new CircuitBreaker({ model: 'count', minimumCalls: 2, windowSize: 2, slowCallDurationMs: 100, slowCallRatio: 0.5 });
    const r = new Retrier({ maxAttempts: 1, breaker });
    assert.equal(await r.call(() => 'ok'), 'ok');
    assert.equal(await r.call(() => { testing.advance(100); return 'ok'; }), 'ok');
    assert.equal(breaker.state, 'open', 'every call succeeded; 1 of 2 took 100 ms');
  });
});

test('isolate refuses every call until reset; probes judged together', async () => {
  await testing.scoped(async () => {
    const breaker = new CircuitBreaker({ failures: 1 });
    const r = new Retrier({ maxAttempts: 1, breaker });
    breaker.isolate();
    assert.equal(breaker.state, 'isolated');
    testing.advance(2 * 86400000);
    let called = 0;
    const err = await r.call(() => { called++; }).catch((e) => e);
    assert.deepEqual([err.reason, err.breakerState, called], ['circuit_open', 'isolated', 0]);
    breaker.reset();
    assert.equal(breaker.state, 'closed');
    assert.equal(await r.call(() => 'ok'), 'ok');

    const judged = new CircuitBreaker({ model: 'count', failureRatio: 0.5, minimumCalls: 1, windowSize: 1, breakDurationMs: 1000, halfOpenProbes: 2, judgeAllProbes: true });
    const j = new Retrier({ maxAttempts: 1, breaker: judged });
    const dep = dependency();
    await j.call(dep.fn).catch(() => {});
    testing.advance(1000);
    dep.up = true;
    await j.call(dep.fn);
    assert.equal(judged.state, 'half_open', 'one good probe of two decides nothing');
    dep.up = false;
    await j.call(dep.fn).catch(() => {});
    assert.equal(judged.state, 'open', '1 of 2 probes failed: 0.5 reaches the threshold');
  });
});

test('the new breaker options are checked', () => {
  assert.throws(() => new CircuitBreaker({ windowSize: 10 }), /windowSize belongs to model 'count'/);
  assert.throws(() => new CircuitBreaker({ model: 'count', failures: 3 }), /failures belongs to model 'consecutive'/);
  assert.throws(() => new CircuitBreaker({ slowCallDurationMs: 10 }), /slowCallDurationMs belongs to model 'sampling' or 'count'/);
  assert.throws(() => new CircuitBreaker({ model: 'count', windowSize: 0 }), RangeError);
  assert.throws(() => new CircuitBreaker({ model: 'count', windowSize: 0 }), /windowSize must be a whole number in \[1, 1000000\], got 0/);
  assert.throws(() => new CircuitBreaker({ model: 'sampling', slowCallDurationMs: NaN }), /slowCallDurationMs/);
  assert.throws(() => new CircuitBreaker({ judgeAllProbes: 'yes' }), /judgeAllProbes must be a boolean/);
  assert.doesNotThrow(() => new CircuitBreaker({ model: 'sampling', slowCallDurationMs: null }));
});
