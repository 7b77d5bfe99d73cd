'use strict';
// Hedged calls (issue 26) against a local server where the first request of each pair
// stalls for 2 s and the second answers in 10 ms: with a 50 ms hedging delay the call
// returns the fast answer long before the stall ends, the stalled request is aborted (the
// server sees the disconnect), and exactly 2 requests are sent; with the budget exhausted
// only 1 is sent and the call waits for it. For r.call with fetch, retryingFetch, the
// undici interceptor and axios (got cannot hedge: refused). Times are printed, and only
// bounded from above generously (< 1 s where the stall is 2 s).
const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const dc = require('node:diagnostics_channel');
const { Retrier, RetryBudget, RetryExhaustedError, loadPolicies, testing } = require('retryrs');
const { retryingFetch } = require('retryrs/fetch');

const STALL_MS = 2000;

/** The pair server: odd requests stall (then answer 'slow'), even ones answer 'fast' in 10 ms. */
async function pairServer() {
  const seen = { requests: 0, disconnected: 0, methods: [] };
  let onDisconnect = () => {};
  const server = http.createServer((req, res) => {
    const n = ++seen.requests;
    seen.methods.push(req.method);
    req.resume();
    let finished = false;
    res.on('finish', () => {
      finished = true;
    });
    const timer = setTimeout(() => res.end(n % 2 === 1 ? 'slow' : 'fast'), n % 2 === 1 ? STALL_MS : 10);
    res.on('close', () => {
      clearTimeout(timer);
      if (!finished) {
        seen.disconnected++;
        onDisconnect();
      }
    });
  });
  server.keepAliveTimeout = 100;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}/item`;
  return {
    url,
    seen,
    /** Resolves once the server has seen `n` disconnects (or after 1.5 s, to fail the assert). */
    disconnects(n) {
      if (seen.disconnected >= n) return Promise.resolve(seen.disconnected);
      return new Promise((resolve) => {
        const t = setTimeout(() => resolve(seen.disconnected), 1500);
        onDisconnect = () => {
          if (seen.disconnected >= n) {
            clearTimeout(t);
            resolve(seen.disconnected);
          }
        };
      });
    },
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(resolve);
    }),
  };
}

const hedging = (extra = {}) => new Retrier({ name: 'reads', hedge: { maxAttempts: 2, delayMs: 50 }, deadlineMs: 10_000, ...extra });

/** A token bucket with no retry left (a hedge draws from it as a retry does). */
async function exhaustedBudget() {
  const budget = new RetryBudget(2, 0.1);
  const drain = new Retrier({ budget, maxAttempts: 10, initialDelayMs: 1, jitter: 'none' });
  const err = await drain.call(() => {
    throw Object.assign(new Error('down'), { code: 'ECONNRESET' });
  }).catch((e) => e);
  assert.ok(err instanceof RetryExhaustedError && err.reason === 'budget', `the budget is spent: ${err}`);
  return budget;
}

async function timed(what, f) {
  const t0 = performance.now();
  const value = await f();
  const ms = performance.now() - t0;
  console.log(`${what}: ${ms.toFixed(1)} ms`);
  return { value, ms };
}

test('r.call with fetch: the hedge wins, the stalled request is aborted, 2 requests sent', async () => {
  const s = await pairServer();
  try {
    const events = [];
    const r = hedging({ onEvent: (e) => events.push(e) });
    const { value, ms } = await timed('r.call + fetch, hedged', () => r.call(async (ctx) => {
      const res = await fetch(s.url, { signal: ctx.signal });
      return res.text();
    }));
    assert.equal(value, 'fast');
    assert.ok(ms < 1000, `returned in ${ms} ms, long before the 2 s stall`);
    assert.equal(await s.disconnects(1), 1, 'the server saw the stalled request disconnect');
    assert.equal(s.seen.requests, 2, 'exactly 2 requests');
    assert.deepEqual(events.map((e) => [e.kind, e.attempt]), [['hedge', 2], ['success', 2]]);
    assert.ok(events[0].delayMs >= 50, `launched after the 50 ms delay (${events[0].delayMs} ms as measured)`);
    assert.equal(events[0].name, 'reads');
  } finally {
    await s.close();
  }
});

test('r.call with fetch: with the budget exhausted only 1 request is sent and the call waits for it', async () => {
  const s = await pairServer();
  try {
    const r = hedging({ budget: await exhaustedBudget() });
    const { value, ms } = await timed('r.call + fetch, budget exhausted', () => r.call(async (ctx) => {
      const res = await fetch(s.url, { signal: ctx.signal });
      return res.text();
    }));
    assert.equal(value, 'slow', 'the one request, waited for');
    assert.ok(ms >= STALL_MS - 100, `it waited for the stalled request (${ms} ms)`);
    assert.equal(s.seen.requests, 1);
    assert.equal(s.seen.disconnected, 0);
  } finally {
    await s.close();
  }
});

test('a hedging policy from a document and a gRPC service config runs hedged', async () => {
  const doc = loadPolicies({ policies: { reads: { deadline: '10s', hedge: { max_attempts: 3, delay: '50ms' } } } });
  const grpc = loadPolicies({
    methodConfig: [{ name: [{ service: 'reads' }], hedgingPolicy: { maxAttempts: 3, hedgingDelay: '0.05s' } }],
  });
  for (const policy of [doc.get('reads'), grpc.get('reads')]) {
    const s = await pairServer();
    try {
      const r = Retrier.fromPolicy(policy);
      const value = await r.call(async (ctx) => (await fetch(s.url, { signal: ctx.signal })).text());
      assert.equal(value, 'fast');
      assert.equal(await s.disconnects(1), 1);
      assert.equal(s.seen.requests, 2);
    } finally {
      await s.close();
    }
  }
});

test('the caller\'s abort cancels every attempt at once, and is never retried', async () => {
  const r = new Retrier({ hedge: { maxAttempts: 3, delayMs: 20 } });
  const controller = new AbortController();
  const aborted = [];
  let launched = 0;
  const why = new Error('caller gave up');
  setTimeout(() => controller.abort(why), 100);
  const t0 = performance.now();
  const err = await r.call((ctx) => new Promise((resolve, reject) => {
    launched++;
    ctx.signal.addEventListener('abort', () => {
      aborted.push(ctx.attempt);
      reject(ctx.signal.reason);
    });
  }), { signal: controller.signal }).catch((e) => e);
  const ms = performance.now() - t0;
  console.log(`abort after 100 ms settled after ${ms.toFixed(1)} ms`);
  assert.equal(err, why, 'rejects with the signal\'s reason');
  assert.equal(launched, 3);
  assert.deepEqual(aborted.sort(), [1, 2, 3], 'every attempt in flight was aborted');
  assert.ok(ms < 1000, `prompt: ${ms} ms`);
});

test('losers\' late results are dropped: never returned, never counted as failures', async () => {
  const events = [];
  const r = new Retrier({ hedge: { maxAttempts: 3, delayMs: 0 }, onEvent: (e) => events.push(e) });
  let late = 0;
  // Every attempt ignores its signal and settles later: 2 wins, 1 and 3 fail afterwards.
  const value = await r.call((ctx) => new Promise((resolve, reject) => {
    const ms = { 1: 40, 2: 10, 3: 30 }[ctx.attempt];
    setTimeout(() => {
      if (ctx.attempt === 2) resolve('two');
      else {
        late++;
        reject(new TypeError(`late failure ${ctx.attempt}`));
      }
    }, ms);
  }));
  assert.equal(value, 'two');
  await new Promise((resolve) => setTimeout(resolve, 60));
  assert.equal(late, 2, 'the losers did end');
  assert.deepEqual(events.map((e) => e.kind), ['hedge', 'hedge', 'success'], 'no attempt_failed for a loser');
});

test('a fatal failure ends the call with that error; non-fatal ones let the others go on', async () => {
  const r = new Retrier({ hedge: { maxAttempts: 3, delayMs: 1000 } });
  const fatal = new TypeError('bad request');
  const calls = [];
  const err = await r.call((ctx) => {
    calls.push(ctx.attempt);
    // 1: non-fatal at once (attempt 2 goes out at once); 2: fatal.
    if (ctx.attempt === 1) throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
    throw fatal;
  }).catch((e) => e);
  assert.equal(err, fatal);
  assert.deepEqual(calls, [1, 2]);
  const exhausted = await r.call(() => {
    throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
  }).catch((e) => e);
  assert.ok(exhausted instanceof RetryExhaustedError);
  assert.equal(exhausted.reason, 'attempts');
  assert.equal(exhausted.attempts, 3);
  assert.equal(exhausted.errors.length, 3);
});

test('hedge events reach diagnostics_channel and the metrics listener', async () => {
  const seen = [];
  const sub = (e) => seen.push(e);
  dc.subscribe('retryrs:event', sub);
  try {
    await testing.scoped(async () => {
      const r = new Retrier({ name: 'dc', hedge: { maxAttempts: 2, delayMs: 50 } });
      const value = await r.call((ctx) => testing.sleep(ctx.attempt === 1 ? 500 : 5, { signal: ctx.signal }).then(() => ctx.attempt));
      assert.equal(value, 2);
    });
  } finally {
    dc.unsubscribe('retryrs:event', sub);
  }
  assert.deepEqual(seen.map((e) => [e.kind, e.attempt, e.elapsedMs]), [['hedge', 2, 50], ['success', 2, 55]]);
  const { measure } = require('../lib/metrics');
  const calls = [];
  const listener = measure({ retry: () => {}, call: (...a) => calls.push(a), breakerState: () => {}, rejected: () => {} });
  seen.forEach(listener);
  assert.deepEqual(calls, [['dc', 'success', undefined, undefined]]);
});

test('the hedge option is checked where the retrier is made', () => {
  assert.throws(() => new Retrier({ hedge: { maxAttempts: 6, delayMs: 5 } }), { name: 'RangeError', message: /hedge\.maxAttempts must be >= 1 and <= 5/ });
  assert.throws(() => new Retrier({ hedge: { maxAttempts: 2, delayMs: -1 } }), { name: 'RangeError', message: /hedge\.delayMs/ });
  assert.throws(() => new Retrier({ hedge: { maxAttempts: 2, delayMs: 'adaptive', quantile: 1 } }), { name: 'RangeError', message: /quantile/ });
  assert.throws(() => new Retrier({ hedge: { maxAttempts: 2, delay: 5 } }), { name: 'TypeError', message: /unknown key 'delay'/ });
  assert.throws(() => new Retrier({ hedge: { maxAttempts: 2, delayMs: 5, quantile: 0.5 } }), { name: 'TypeError', message: /adaptive delay only/ });
  assert.throws(() => new Retrier({ hedge: 3 }), { name: 'TypeError', message: /hedge must be an object/ });
  new Retrier({ hedge: { maxAttempts: 2, delayMs: 'adaptive', quantile: 0.9, floorMs: 5, ceilingMs: 200, window: 100 } });
});

test('retryingFetch hedges a GET and a POST with an Idempotency-Key, never a plain POST', async () => {
  const fetchHedged = retryingFetch({ retrier: hedging() });
  for (const [what, init, hedged] of [
    ['GET', undefined, true],
    ['POST with Idempotency-Key', { method: 'POST', body: 'x', headers: { 'Idempotency-Key': 'k1' } }, true],
    ['POST', { method: 'POST', body: 'x' }, false],
  ]) {
    const s = await pairServer();
    try {
      const { value: res, ms } = await timed(`retryingFetch ${what}`, () => fetchHedged(s.url, init));
      const body = await res.text();
      if (hedged) {
        assert.equal(body, 'fast', what);
        assert.ok(ms < 1000, `${what}: ${ms} ms`);
        assert.equal(await s.disconnects(1), 1, `${what}: the stalled request was aborted`);
        assert.equal(s.seen.requests, 2, `${what}: 2 requests`);
      } else {
        assert.equal(body, 'slow', `${what}: sent once, waited for`);
        assert.equal(s.seen.requests, 1, `${what}: 1 request`);
        assert.equal(s.seen.disconnected, 0);
      }
    } finally {
      await s.close();
    }
  }
});

test('retryingFetch: with the budget exhausted only 1 request is sent and the call waits for it', async () => {
  const s = await pairServer();
  try {
    const f = retryingFetch({ retrier: hedging({ budget: await exhaustedBudget() }) });
    const { value: res } = await timed('retryingFetch, budget exhausted', () => f(s.url));
    assert.equal(await res.text(), 'slow');
    assert.equal(s.seen.requests, 1);
  } finally {
    await s.close();
  }
});

test('retryrs/undici: the interceptor hedges (2 requests, the stalled one closed); exhausted budget: 1', async () => {
  const undici = require('undici');
  const { retryInterceptor } = require('retryrs/undici');
  for (const spent of [false, true]) {
    const s = await pairServer();
    const agent = new undici.Agent().compose(retryInterceptor({ retrier: hedging(spent ? { budget: await exhaustedBudget() } : {}) }));
    try {
      const { value: body, ms } = await timed(`undici interceptor${spent ? ', budget exhausted' : ''}`, async () => {
        const res = await undici.request(s.url, { dispatcher: agent });
        return res.body.text();
      });
      if (spent) {
        assert.equal(body, 'slow');
        assert.equal(s.seen.requests, 1);
      } else {
        assert.equal(body, 'fast');
        assert.ok(ms < 1000, `${ms} ms`);
        assert.equal(await s.disconnects(1), 1, 'the stalled request was aborted');
        assert.equal(s.seen.requests, 2);
      }
    } finally {
      await agent.close();
      await s.close();
    }
  }
});

test('retryrs/axios hedges (2 requests, the stalled one closed); exhausted budget: 1', async () => {
  const axios = require('axios');
  const { retryAxios } = require('retryrs/axios');
  for (const spent of [false, true]) {
    const s = await pairServer();
    const instance = axios.create({ adapter: 'http' });
    retryAxios(instance, { retrier: hedging(spent ? { budget: await exhaustedBudget() } : {}) });
    try {
      const { value: res, ms } = await timed(`axios${spent ? ', budget exhausted' : ''}`, () => instance.get(s.url));
      if (spent) {
        assert.equal(res.data, 'slow');
        assert.equal(s.seen.requests, 1);
      } else {
        assert.equal(res.data, 'fast');
        assert.ok(ms < 1000, `${ms} ms`);
        assert.equal(await s.disconnects(1), 1, 'the stalled request was aborted');
        assert.equal(s.seen.requests, 2);
      }
    } finally {
      await s.close();
    }
  }
});

test('retryrs/got refuses a hedging retrier, saying why', () => {
  const { retryGot } = require('retryrs/got');
  assert.throws(() => retryGot({ retrier: hedging() }), { name: 'TypeError', message: /hedges, which got cannot do/ });
});

test('a hedged call asks the circuit breaker once; an open breaker refuses it before any attempt', async () => {
  const { CircuitBreaker } = require('retryrs');
  const breaker = new CircuitBreaker({ failures: 1, breakDurationMs: 60_000 });
  const events = [];
  const r = new Retrier({ breaker, hedge: { maxAttempts: 2, delayMs: 0 }, onEvent: (e) => events.push(e.kind) });
  let launched = 0;
  const down = await r.call(() => {
    launched++;
    throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
  }).catch((e) => e);
  assert.ok(down instanceof RetryExhaustedError && down.reason === 'attempts', `${down}`);
  assert.equal(launched, 2, 'both hedges went out');
  assert.equal(breaker.state, 'open', 'one exhausted hedged call is one failure for the breaker');
  assert.equal(events.filter((k) => k === 'breaker_opened').length, 1);
  launched = 0;
  const refused = await r.call(() => {
    launched++;
    return 'never';
  }).catch((e) => e);
  assert.ok(refused instanceof RetryExhaustedError, `${refused}`);
  assert.equal(refused.reason, 'circuit_open');
  assert.equal(refused.attempts, 0);
  assert.equal(refused.breakerState, 'open');
  assert.ok(refused.retryInMs > 0);
  assert.equal(launched, 0, 'no attempt made');
});

test('an attempt timeout cuts one hedge, not the call: the next one goes out at once', async () => {
  await testing.scoped(async () => {
    const r = new Retrier({ hedge: { maxAttempts: 3, delayMs: 1000 }, attemptTimeoutMs: 100, deadlineMs: 5000 });
    const launched = [];
    const reasons = [];
    const value = await r.call((ctx) => {
      launched.push([ctx.attempt, testing.now(), ctx.remainingMs]);
      ctx.signal.addEventListener('abort', () => reasons.push(ctx.signal.reason.name));
      return testing.sleep(ctx.attempt === 1 ? 10_000 : 20, { signal: ctx.signal }).then(() => ctx.attempt);
    });
    assert.equal(value, 2);
    assert.deepEqual(launched, [[1, 0, 100], [2, 100, 100]], 'attempt 2 went out when attempt 1 timed out');
    assert.deepEqual(reasons, ['TimeoutError']);
  });
});

test('a request\'s retry.limit caps a hedged call\'s attempts (adaptive delays refuse it)', async () => {
  const s = await pairServer();
  try {
    const f = retryingFetch({ retrier: hedging() });
    const res = await f(s.url, { retry: { limit: 1 } });
    assert.equal(await res.text(), 'slow', 'one attempt, waited for');
    assert.equal(s.seen.requests, 1);
    await assert.rejects(f(s.url, { retry: { limit: 6 } }), { name: 'RangeError', message: /retry\.limit must be >= 1 and <= 5 .*got 6 \(this retrier hedges\)/ });
    const adaptive = retryingFetch({ retrier: new Retrier({ hedge: { maxAttempts: 2, delayMs: 'adaptive' } }) });
    await assert.rejects(adaptive(s.url, { retry: { limit: 1 } }), { name: 'RangeError', message: /adaptive/ });
    assert.equal(s.seen.requests, 1, 'refused before sending');
  } finally {
    await s.close();
  }
});

test('retryingFetch, hedged: a deadline after a retried status ends with that response or the timeout, never a crash', async () => {
  const http2 = require('node:http');
  let n = 0;
  // Request 1 answers 503 at once (the next hedge goes out at once); request 2 stalls past
  // the deadline. Whichever comes first ends the call: the engine's deadline (the 503 is
  // the last failure: its response is handed back, so it must still be held) or request
  // 2's own bound (its TimeoutError, as without hedging).
  const server = http2.createServer((req, res) => {
    const k = ++n;
    if (k === 1) res.writeHead(503, { 'content-type': 'text/plain' }).end('busy');
    else setTimeout(() => res.end('late'), 2000).unref();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const f = retryingFetch({ retrier: new Retrier({ hedge: { maxAttempts: 2, delayMs: 1000 }, deadlineMs: 300 }) });
    const out = await f(`http://127.0.0.1:${server.address().port}/`).catch((e) => e);
    if (out instanceof Response) {
      assert.equal(out.status, 503);
      assert.equal(await out.text(), 'busy');
    } else {
      assert.equal(out.name, 'TimeoutError', `the attempt's bound: ${out}`);
      assert.match(out.message, /attempt 2 ran past the deadline/);
    }
    assert.equal(n, 2);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test('onRetry and delayMs are refused on a hedging retrier (they would never run)', () => {
  assert.throws(() => hedging({ onRetry: () => true }), { name: 'TypeError', message: /onRetry and delayMs do not apply to a hedging retrier/ });
  assert.throws(() => hedging({ delayMs: () => 10 }), { name: 'TypeError', message: /hedging retrier/ });
  assert.throws(() => hedging().with({ onRetry: () => true }), { name: 'TypeError', message: /hedging retrier/ });
});

test('real time: an attempt timeout cuts each hedge at its bound, with a TimeoutError naming it', async () => {
  // Before: the bound, read a moment after the engine launched the attempt, was a little
  // under attemptTimeoutMs and taken for the deadline: nothing cut the attempt, and the
  // call waited for the next hedge's timer (a minute here).
  const r = new Retrier({ name: 'reads', hedge: { maxAttempts: 2, delayMs: 60_000 }, attemptTimeoutMs: 50, deadlineMs: null });
  const started = performance.now();
  const err = await r.call((ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)))).catch((e) => e);
  const took = performance.now() - started;
  assert.equal(err.reason, 'attempts', String(err));
  assert.equal(err.attempts, 2);
  assert.deepEqual(err.errors.map((e) => e.message), ['reads: attempt 1 timed out after 50 ms', 'reads: attempt 2 timed out after 50 ms']);
  assert.ok(took < 10_000, `${took} ms`);
});
