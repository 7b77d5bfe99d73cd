'use strict';
// retryrs/prometheus, retryrs/otel and the `retryrs:event` diagnostics channel against the
// real libraries, on the scenario tests/observability/scenario.json describes (shared
// with the Python suite: both hosts must give the same names, labels, units and counts),
// in virtual time.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const dc = require('node:diagnostics_channel');
const { spawnSync } = require('node:child_process');
const prom = require('prom-client');
const api = require('@opentelemetry/api');
const { MeterProvider, MetricReader, DataPointType } = require('@opentelemetry/sdk-metrics');
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
const { Retrier, testing } = require('retryrs');
const { promListener } = require('retryrs/prometheus');
const { otelListener, recordResendCount } = require('retryrs/otel');

const { sharedTests } = require('./helpers');

const SCENARIO = require(path.join(sharedTests('observability'), 'scenario.json'));
const CHANNEL = SCENARIO.diagnosticsChannel.channel;

function scenarioRetrier(onEvent) {
  const spec = SCENARIO.retrier;
  return new Retrier({
    name: spec.name, maxAttempts: spec.maxAttempts, initialDelayMs: spec.initialDelayS * 1000,
    multiplier: spec.multiplier, jitter: spec.jitter, deadlineMs: spec.deadline,
    shouldRetry: (err) => err.name === 'ConnectionError', onEvent,
  });
}

/** Every call of the scenario, in virtual time (the 0.6 s of waits take none). */
async function runScenario(onEvent) {
  const r = scenarioRetrier(onEvent);
  await testing.scoped(async () => {
    for (const call of SCENARIO.calls) {
      const steps = [...call.attempts];
      await r.call(async () => {
        const step = steps.shift();
        if (step === 'ok') return 'paid';
        throw Object.assign(new Error(step), { name: step });
      }).catch(() => {});
      assert.deepEqual(steps, [], 'every scripted attempt ran');
    }
  });
}

/** The text exposition as [{ name, labels (empty ones dropped), value }]. */
async function scrape(register) {
  const text = await register.metrics();
  const samples = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `an exposition line: ${line}`);
    const labels = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) if (v !== '') labels[k] = v;
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  const families = [...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1].replace(/_total$/, ''));
  return { samples, families };
}

function assertPrometheusScenario({ samples, families }, times = 1) {
  assert.deepEqual(families.sort(), [...SCENARIO.prometheus.families].sort());
  for (const want of SCENARIO.prometheus.samples) {
    const got = samples.filter((s) => s.name === want.name && JSON.stringify(sorted(s.labels)) === JSON.stringify(sorted(want.labels)));
    assert.equal(got.length, 1, JSON.stringify(want));
    assert.ok(Math.abs(got[0].value - want.value * times) < 1e-9, `${JSON.stringify(want)}: got ${got[0].value}`);
  }
  assert.equal(samples.filter((s) => s.name === 'retryrs_calls_total').length, 3, 'one series per outcome');
  assert.equal(samples.filter((s) => s.name === 'retryrs_retries_total').length, 1);
  const les = samples.filter((s) => s.name === 'retryrs_retry_delay_seconds_bucket').map((s) => s.labels.le);
  assert.deepEqual(les.slice(0, -1).map(Number), SCENARIO.otel.bucketBoundaries);
}

function sorted(obj) {
  return Object.fromEntries(Object.entries(obj).sort(([a], [b]) => (a < b ? -1 : 1)));
}

test('promListener counts the scenario exactly (text exposition of its own registry)', async () => {
  const register = new prom.Registry();
  await runScenario(promListener({ register }));
  assertPrometheusScenario(await scrape(register));
});

test('promListeners share one set of metrics per registry and namespace', async () => {
  const register = new prom.Registry();
  const first = promListener({ register });
  await runScenario(first);
  await runScenario(promListener({ register })); // a second retrier: no "already registered"
  assertPrometheusScenario(await scrape(register), 2);
  await runScenario(promListener({ register, namespace: 'payments' }));
  assert.match(await register.metrics(), /^payments_calls_total\{/m);
  assert.throws(() => promListener({ register, namespace: '' }), /namespace must be a non-empty string, got ""/);
  assert.throws(() => promListener({ register: {} }), /register must be a prom-client Registry/);
});

test('a misspelt listener option is an error, not silently the default', () => {
  // Python's spellings (registry=, tracer_provider=) are the likely slips; ignored, the
  // first would put the metrics in prom-client's global register unnoticed.
  assert.throws(() => promListener({ registry: new prom.Registry() }),
    { name: 'TypeError', message: "promListener: unknown option 'registry' (known: register, namespace)" });
  assert.throws(() => otelListener({ tracerProvider: {} }),
    { name: 'TypeError', message: "otelListener: unknown option 'tracerProvider' (known: meterProvider, spanEvents)" });
});

class TestReader extends MetricReader {
  async onForceFlush() {}
  async onShutdown() {}
}

async function otelMetrics(reader) {
  const { resourceMetrics, errors } = await reader.collect();
  assert.deepEqual(errors, []);
  const scopes = resourceMetrics.scopeMetrics;
  assert.deepEqual(scopes.map((s) => s.scope.name), [SCENARIO.otel.meter]);
  assert.equal(scopes[0].scope.version, require('../package.json').version);
  return Object.fromEntries(scopes[0].metrics.map((m) => [m.descriptor.name, m]));
}

function otel() {
  const reader = new TestReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const spans = new InMemorySpanExporter();
  const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }).getTracer('test');
  return { reader, meterProvider, tracer, spans };
}

test.before(() => {
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
});

test('otelListener holds the scenario exactly in every instrument', async () => {
  const { reader, meterProvider } = otel();
  await runScenario(otelListener({ meterProvider }));
  const metrics = await otelMetrics(reader);
  assert.deepEqual(Object.keys(metrics).sort(), SCENARIO.otel.instruments.map((i) => i.name).sort());
  for (const inst of SCENARIO.otel.instruments) {
    const metric = metrics[inst.name];
    assert.equal(metric.descriptor.unit, inst.unit, inst.name);
    const points = new Map(metric.dataPoints.map((p) => [JSON.stringify(sorted(p.attributes)), p]));
    assert.equal(points.size, inst.points.length, inst.name);
    for (const want of inst.points) {
      const point = points.get(JSON.stringify(sorted(want.attributes)));
      assert.ok(point, `${inst.name} ${JSON.stringify(want.attributes)}`);
      if (inst.type === 'sum') {
        assert.equal(metric.dataPointType, DataPointType.SUM);
        assert.equal(metric.isMonotonic, true);
        assert.equal(point.value, want.value);
      } else {
        assert.equal(metric.dataPointType, DataPointType.HISTOGRAM);
        assert.equal(point.value.count, want.count);
        assert.ok(Math.abs(point.value.sum - want.sum) < 1e-9);
        assert.deepEqual([point.value.min, point.value.max], [want.min, want.max]);
        assert.deepEqual(point.value.buckets.boundaries, SCENARIO.otel.bucketBoundaries);
      }
    }
  }
});

test('otelListener records each retry as an event on the active span', async () => {
  const { meterProvider, tracer, spans } = otel();
  await tracer.startActiveSpan('checkout', async (span) => {
    await runScenario(otelListener({ meterProvider }));
    span.end();
  });
  const [span, ...rest] = spans.getFinishedSpans();
  assert.equal(rest.length, 0);
  assert.deepEqual(span.events.map((e) => ({ name: e.name, attributes: e.attributes })), SCENARIO.otel.spanEvents);
});

test('span events follow each call\'s own context, and can be turned off', async () => {
  const { meterProvider, tracer, spans } = otel();
  const r = scenarioRetrier(otelListener({ meterProvider }));
  const quiet = scenarioRetrier(otelListener({ meterProvider, spanEvents: false }));
  const once = (retrier, name) => tracer.startActiveSpan(name, async (span) => {
    let failed = false;
    await retrier.call(async () => {
      if (!failed) {
        failed = true;
        throw Object.assign(new Error('x'), { name: 'ConnectionError' });
      }
    });
    span.end();
  });
  await testing.scoped(() => Promise.all([once(r, 'a'), once(r, 'b'), once(quiet, 'c')]));
  const byName = Object.fromEntries(spans.getFinishedSpans().map((s) => [s.name, s.events.map((e) => e.name)]));
  assert.deepEqual(byName, { a: ['retryrs.retry'], b: ['retryrs.retry'], c: [] });
});

test('recordResendCount marks resends only', async () => {
  const { tracer, spans } = otel();
  for (const attempt of [1, 2, 3]) {
    tracer.startActiveSpan(`GET #${attempt}`, (span) => {
      recordResendCount(attempt);
      span.end();
    });
  }
  const got = Object.fromEntries(spans.getFinishedSpans().map((s) => [s.name, s.attributes['http.request.resend_count']]));
  assert.deepEqual(got, { 'GET #1': undefined, 'GET #2': 1, 'GET #3': 2 });
  assert.throws(() => recordResendCount(0), /attempt must be an integer >= 1, got 0/);
});

test(`every event is published on ${CHANNEL}, the message being the event object`, async () => {
  const published = [];
  const listened = [];
  const subscriber = (message, name) => published.push([message, name]);
  dc.subscribe(CHANNEL, subscriber);
  try {
    await runScenario(undefined);
    await runScenario((e) => listened.push(e));
  } finally {
    dc.unsubscribe(CHANNEL, subscriber);
  }
  const kinds = SCENARIO.diagnosticsChannel.kinds;
  assert.deepEqual(published.map(([m]) => m.kind), [...kinds, ...kinds]);
  assert.ok(published.every(([m, name]) => name === CHANNEL && m.name === 'pay'));
  assert.deepEqual(published.slice(kinds.length).map(([m]) => m), listened, 'the same objects onEvent receives');
  const exhausted = published.find(([m]) => m.kind === 'exhausted')[0];
  assert.equal(exhausted.reason, 'attempts');
  assert.equal(exhausted.error.name, 'ConnectionError');
});

test('a subscriber sees retriers made before it subscribed, and nothing once it leaves', async () => {
  const r = new Retrier({ name: 'early' });
  const seen = [];
  const subscriber = (m) => seen.push(m.kind);
  assert.equal(await r.call(() => 1), 1);
  dc.subscribe(CHANNEL, subscriber);
  assert.equal(await r.call(() => 2), 2);
  dc.unsubscribe(CHANNEL, subscriber);
  assert.equal(await r.call(() => 3), 3);
  assert.deepEqual(seen, ['success']);
});

test('a prometheus listener can subscribe to the channel and count every retrier', async () => {
  const register = new prom.Registry();
  const listener = promListener({ register });
  dc.subscribe(CHANNEL, listener);
  try {
    await runScenario(undefined);
  } finally {
    dc.unsubscribe(CHANNEL, listener);
  }
  assertPrometheusScenario(await scrape(register));
});

test('a throwing onEvent is reported and the subscribers are still told', async () => {
  const warnings = [];
  const onWarning = (w) => warnings.push(w);
  process.on('warning', onWarning);
  const seen = [];
  const subscriber = (m) => seen.push(m.kind);
  dc.subscribe(CHANNEL, subscriber);
  try {
    const r = new Retrier({ onEvent: () => { throw new Error('listener bug'); } });
    assert.equal(await r.call(() => 'v'), 'v');
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    dc.unsubscribe(CHANNEL, subscriber);
    process.off('warning', onWarning);
  }
  assert.deepEqual(seen, ['success']);
  assert.equal(warnings.filter((w) => w.name === 'RetryrsListenerError').length, 1);
});

test('subpaths load from ESM too', async () => {
  const esm = await import('retryrs/prometheus');
  assert.equal(esm.promListener, promListener);
  const { otelListener: viaEsm } = await import('retryrs/otel');
  assert.equal(viaEsm, otelListener);
});

// Makes prom-client and @opentelemetry/* unresolvable, as in an app that installed neither.
const HIDE_PEERS = `
const Module = require('node:module');
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request === 'prom-client' || request.startsWith('@opentelemetry/')) {
    throw Object.assign(new Error("Cannot find module '" + request + "'"), { code: 'MODULE_NOT_FOUND' });
  }
  return resolve.call(this, request, ...rest);
};
`;

test('retryrs loads and works without its optional peers; the subpaths say what to install', () => {
  const root = path.join(__dirname, '..');
  const code = `${HIDE_PEERS}
const { Retrier } = require(${JSON.stringify(root)});
const seen = [];
new Retrier({ onEvent: (e) => seen.push(e.kind) }).call(() => 7).then((v) => {
  if (v !== 7 || seen.join() !== 'success') throw new Error('call failed');
  for (const sub of ['prometheus', 'otel']) {
    try {
      require(${JSON.stringify(root)} + '/lib/' + sub + '.js');
      console.log(sub + ' loaded without its peer');
    } catch (e) {
      console.log(e.message);
    }
  }
});
`;
  const res = spawnSync(process.execPath, ['-e', code], { encoding: 'utf8' });
  assert.equal(res.status, 0, res.stderr);
  assert.deepEqual(res.stdout.trim().split('\n'), [
    'retryrs/prometheus needs the optional peer dependency prom-client: npm install prom-client',
    'retryrs/otel needs the optional peer dependency @opentelemetry/api: npm install @opentelemetry/api',
  ]);
});

test('the subpath declarations type real use and reject misuse (tsc --noEmit)', () => {
  const tsc = require.resolve('typescript/bin/tsc');
  const res = spawnSync(process.execPath, [tsc, '-p', path.join(__dirname, 'types', 'tsconfig.observability.json')], { encoding: 'utf8' });
  assert.equal(res.status, 0, `tsc failed:\n${res.stdout}${res.stderr}`);
});

test('error.type: a subclass that never set a name is labelled with its class, as in Python', () => {
  const { errorType } = require('../lib/metrics.js');
  class GatewayDown extends Error {}
  class Named extends Error { constructor() { super('x'); this.name = 'Renamed'; } }
  class Getter extends TypeError { get name() { return 'FromGetter'; } }
  assert.equal(errorType(new GatewayDown('503')), 'GatewayDown');
  assert.equal(errorType(new Named()), 'Renamed');
  assert.equal(errorType(new Getter('t')), 'FromGetter');
  assert.equal(errorType(new TypeError('t')), 'TypeError');
  assert.equal(errorType(new Error('e')), 'Error');
  assert.equal(errorType(new DOMException('a', 'AbortError')), 'AbortError');
  assert.equal(errorType(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' })), 'Error');
  assert.equal(errorType('a string'), '_OTHER');
  assert.equal(errorType(null), '_OTHER');
});

test('http.request.resend_count lands on each attempt\'s undici client span (fetch and the undici interceptor)', async (t) => {
  // A fake instrumentation doing what OpenTelemetry's undici instrumentation does: on
  // undici:request:create, one client span per physical request, its attributes from the
  // configured startSpanHook(request), on a fake tracer.
  const undici = require('undici');
  const { resendCountAttributes, RESEND_COUNT } = require('retryrs/otel');
  const { retryingFetch } = require('retryrs/fetch');
  const { retryInterceptor } = require('retryrs/undici');
  const { startServer } = require('./http-server');
  const spans = [];
  const tracer = { startSpan: (name, options) => { const span = { name, attributes: { ...options.attributes } }; spans.push(span); return span; } };
  const config = { startSpanHook: resendCountAttributes };
  const onCreate = ({ request }) => {
    const attributes = { 'http.request.method': request.method, 'url.path': request.path };
    Object.assign(attributes, config.startSpanHook?.(request) ?? {});
    tracer.startSpan(request.method, { kind: 'client', attributes });
  };
  dc.subscribe('undici:request:create', onCreate);
  t.after(() => dc.unsubscribe('undici:request:create', onCreate));
  const s = await startServer();
  t.after(() => s.close());
  const retrier = new Retrier({ initialDelayMs: 1, jitter: 'none' });
  const agent = new undici.Agent();
  t.after(() => agent.close());
  const viaFetch = s.script([503, 503, 200]);
  assert.equal((await retryingFetch({ retrier, fetch: undici.fetch })(viaFetch, { dispatcher: agent })).status, 200);
  const viaInterceptor = s.script([503, 200]);
  const res = await undici.request(viaInterceptor, { dispatcher: agent.compose(retryInterceptor({ retrier })) });
  await res.body.text();
  const counts = (url) => spans.filter((sp) => sp.attributes['url.path'] === new URL(url).pathname).map((sp) => sp.attributes[RESEND_COUNT]);
  assert.deepEqual(counts(viaFetch), [undefined, 1, 2], 'fetch: one span per attempt, resends counted');
  assert.deepEqual(counts(viaInterceptor), [undefined, 1], 'interceptor: one span per attempt, resends counted');
  assert.equal(resendCountAttributes(), undefined, 'nothing outside a helper\'s request');
});
