'use strict';
// retryrs/propagation against real loopback servers: a server helper that reads the
// inbound context and constrains the retriers its handler runs (deadline, downward rule,
// upward rule), and the HTTP helpers' outbound headers (the attempt's time left and
// number, the allowlist, the interop modes) and their reading of a server's pushback.
const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { Retrier, RetryExhaustedError } = require('retryrs');
const { retryingFetch } = require('retryrs/fetch');
const { middleware, wrap, run, current, PropagationContext } = require('retryrs/propagation');

/**
 * A loopback server (on `host`, 127.0.0.1 unless told) answering with `handler(req, res, n)`
 * (n: the request's number from 1; a handler that does nothing leaves the request
 * hanging). Keeps what each request's headers were; `close()` drops every connection.
 */
async function serve(handler, host = '127.0.0.1') {
  const seen = [];
  const server = http.createServer((req, res) => {
    seen.push(req.headers);
    handler(req, res, seen.length);
  });
  await new Promise((resolve) => server.listen(0, host, resolve));
  const { port } = server.address();
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/`,
    port,
    seen,
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

const answer = (status, headers = {}) => (req, res) => {
  res.writeHead(status, { 'content-length': '2', ...headers });
  res.end('ok');
};

/** Parses a Retryrs-Context value into its members (t, a, r), for the assertions. */
function contextOf(value) {
  assert.equal(typeof value, 'string', 'a Retryrs-Context header was sent');
  const out = {};
  for (const member of value.split(',')) {
    const [k, v] = member.trim().split('=');
    out[k] = v;
  }
  return out;
}

const fastRetrier = (more = {}) => new Retrier({ initialDelayMs: 1, jitter: 'none', ...more });

test('a wrapped server given t=300 answers within 300 + 250 ms though its dependency hangs (a default retrier, 15 s deadline)', async (t) => {
  const dependency = await serve(() => {});
  t.after(() => dependency.close());
  const fetchDep = retryingFetch(); // new Retrier(): the contract's defaults, a 15 s deadline
  let failure;
  const front = await serve(wrap(async (req, res) => {
    try {
      await fetchDep(dependency.url);
      res.end('unexpected');
    } catch (err) {
      failure = err;
      res.writeHead(504, { 'content-length': '0' });
      res.end();
    }
  }));
  t.after(() => front.close());
  // fetch's first use loads undici: not part of the time measured.
  await (await fetch(dependency.url.replace(/\/$/, ''), { method: 'OPTIONS', signal: AbortSignal.timeout(1) }).catch(() => ({ arrayBuffer() {} }))).arrayBuffer();
  const started = performance.now();
  const res = await fetch(front.url, { headers: { 'Retryrs-Context': 't=300, a=1' } });
  const took = performance.now() - started;
  await res.arrayBuffer();
  assert.equal(res.status, 504);
  assert.ok(took < 550, `answered after ${Math.round(took)} ms`);
  // The inner call ended at the request's deadline (less the margin), not its own.
  assert.ok(failure instanceof Error, 'the dependency call failed');
  assert.equal(failure.reason, 'deadline', `${failure}`);
  assert.ok(dependency.seen.length >= 1);
});

test('the same server without the header waits for its own deadline (the constraint comes from the request)', async (t) => {
  const dependency = await serve(() => {});
  t.after(() => dependency.close());
  const fetchDep = retryingFetch({ retrier: new Retrier({ deadlineMs: 700 }) });
  const front = await serve(wrap(async (req, res) => {
    await fetchDep(dependency.url).catch(() => {});
    res.end();
  }));
  t.after(() => front.close());
  const started = performance.now();
  await (await fetch(front.url, { headers: { 'Retryrs-Context': 't=5000' } })).arrayBuffer();
  const withLonger = performance.now() - started;
  assert.ok(withLonger >= 650, `a longer inbound budget cannot shorten less: ${Math.round(withLonger)} ms`);
});

test('a request with a=2 makes exactly one inner attempt, and passes r=?1 on', async (t) => {
  const dependency = await serve(answer(503));
  t.after(() => dependency.close());
  const fetchDep = retryingFetch({ retrier: fastRetrier() });
  const front = await serve(wrap(async (req, res) => {
    const dep = await fetchDep(dependency.url);
    res.writeHead(dep.status === 503 ? 502 : 200, { 'content-length': '0' });
    res.end();
  }));
  t.after(() => front.close());
  const res = await fetch(front.url, { headers: { 'Retryrs-Context': 't=2000, a=2' } });
  assert.equal(res.status, 502);
  assert.equal(dependency.seen.length, 1, 'one attempt at the dependency');
  const sent = contextOf(dependency.seen[0]['retryrs-context']);
  assert.equal(sent.r, '?1');
  assert.equal(sent.a, '1');
  // Without the retry mark the same handler retries (5 attempts by default).
  await (await fetch(front.url, { headers: { 'Retryrs-Context': 't=2000, a=1' } })).arrayBuffer();
  assert.equal(dependency.seen.length, 1 + 5);
});

test('the downward rule holds for r.call and for a hedging retrier too', async () => {
  let calls = 0;
  const r = fastRetrier();
  await assert.rejects(run({ retry: true }, () => r.call(() => {
    calls += 1;
    throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
  })), (err) => err instanceof RetryExhaustedError && err.attempts === 1);
  assert.equal(calls, 1);
  const hedged = new Retrier({ hedge: { maxAttempts: 3, delayMs: 5 } });
  let launched = 0;
  const v = await run({ retry: true }, () => hedged.call(async (ctx) => {
    launched += 1;
    await new Promise((resolve) => setTimeout(resolve, 60));
    return ctx.attempt;
  }));
  assert.equal(v, 1);
  assert.equal(launched, 1, 'no hedge inside a retry');
});

test('r.call inside a context: ctx.remainingMs and ctx.signal follow the request\'s deadline', async () => {
  const r = new Retrier(); // 15 s deadline
  const started = performance.now();
  let seenMs;
  await assert.rejects(run({ remainingMs: 200 }, () => r.call((ctx) => {
    seenMs = ctx.remainingMs;
    return new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
  })), (err) => err instanceof RetryExhaustedError && err.reason === 'deadline');
  const took = performance.now() - started;
  assert.ok(seenMs <= 200 - 5 && seenMs > 100, `the attempt saw ${seenMs} ms left`);
  assert.ok(took < 200 + 100, `ended after ${Math.round(took)} ms`);
  // Outside the context the same retrier has its own 15 s.
  await r.call((ctx) => assert.ok(ctx.remainingMs > 14000));
});

test('an outbound request from a retrier with a 2 s deadline carries t in (1500, 2000] and a=1, then a=2', async (t) => {
  const server = await serve((req, res, n) => answer(n === 1 ? 503 : 200)(req, res));
  t.after(() => server.close());
  const f = retryingFetch({ retrier: fastRetrier({ deadlineMs: 2000 }) });
  const res = await f(server.url);
  assert.equal(res.status, 200);
  assert.equal(server.seen.length, 2);
  const [first, second] = server.seen.map((h) => contextOf(h['retryrs-context']));
  for (const c of [first, second]) {
    const tMs = Number(c.t);
    assert.ok(tMs > 1500 && tMs <= 2000, `t=${c.t}`);
    assert.equal(c.r, undefined);
  }
  assert.equal(first.a, '1');
  assert.equal(second.a, '2');
  assert.ok(Number(second.t) <= Number(first.t), 't is read from the clock at each send');
});

test('nothing is sent to a host outside the allowlist; the allowed host gets it; propagate: false sends nothing', async (t) => {
  const server = await serve(answer(200));
  t.after(() => server.close());
  await (await retryingFetch({ propagate: { hosts: ['api.internal', '*.svc.local'] } })(server.url)).arrayBuffer();
  assert.equal(server.seen[0]['retryrs-context'], undefined);
  await (await retryingFetch({ propagate: false })(server.url)).arrayBuffer();
  assert.equal(server.seen[1]['retryrs-context'], undefined);
  await (await retryingFetch({ propagate: { hosts: ['127.0.0.1'] } })(server.url)).arrayBuffer();
  assert.equal(contextOf(server.seen[2]['retryrs-context']).a, '1');
  assert.throws(() => retryingFetch({ propagate: { hosts: ['a*.b'] } }), RangeError);
  assert.throws(() => retryingFetch({ propagate: { hosts: 'api.internal' } }), /propagate.hosts must be an array/);
  assert.throws(() => retryingFetch({ propagate: { mesh: 'istio' } }), /mesh/);
  assert.throws(() => retryingFetch({ propagate: { host: ['x'] } }), /unknown key 'host'/);
});

test('with an allowlist, retryingFetch keeps the dispatcher a fetch of the caller\'s own binds, and checks each hop through one given in init', async (t) => {
  const undici = require('undici');
  const outside = await serve(answer(200), '::1');
  t.after(() => outside.close());
  const first = await serve((req, res) => res.writeHead(302, { location: outside.url, 'content-length': '0' }).end());
  t.after(() => first.close());
  const counted = () => {
    const agent = new undici.Agent();
    const dispatch = agent.dispatch.bind(agent);
    agent.hops = 0;
    agent.dispatch = (opts, handler) => {
      agent.hops += 1;
      return dispatch(opts, handler);
    };
    t.after(() => agent.close());
    return agent;
  };
  const propagate = { hosts: ['127.0.0.1'] };
  // Its own dispatcher (a proxy's, say) is what it sends through: none is given over it.
  const bound = counted();
  const own = retryingFetch({ fetch: (url, init) => undici.fetch(url, { dispatcher: bound, ...init }), propagate });
  await (await own(first.url)).arrayBuffer();
  assert.equal(bound.hops, 2);
  // A dispatcher in init: each hop goes through it, checked against the list.
  const given = counted();
  await (await retryingFetch({ fetch: undici.fetch, propagate })(first.url, { dispatcher: given })).arrayBuffer();
  assert.equal(given.hops, 2);
  assert.equal(contextOf(first.seen[1]['retryrs-context']).a, '1');
  assert.equal(outside.seen[1]['retryrs-context'], undefined);
});

test('the interop modes send the mesh and protocol headers; the caller\'s own headers are kept', async (t) => {
  const server = await serve(answer(200));
  t.after(() => server.close());
  const f = retryingFetch({ retrier: new Retrier({ deadlineMs: 3000 }), propagate: { mesh: 'envoy', kind: 'grpc' } });
  await (await f(server.url, { headers: { 'x-mine': 'kept', 'Retryrs-Context': 't=999999' } })).arrayBuffer();
  const h = server.seen[0];
  assert.equal(h['x-mine'], 'kept');
  const tMs = Number(contextOf(h['retryrs-context']).t);
  assert.ok(tMs > 2000 && tMs <= 3000, `t=${tMs}: ours replaces the caller's`);
  assert.equal(h['x-envoy-max-retries'], '0');
  assert.equal(Number(h['x-envoy-upstream-rq-timeout-ms']), tMs);
  assert.match(h['grpc-timeout'], /^\d+m$/);
  const linkerd = retryingFetch({ propagate: { mesh: 'linkerd', kind: 'connect' } });
  await (await linkerd(server.url)).arrayBuffer();
  assert.equal(server.seen[1]['l5d-retry-limit'], '0');
  assert.match(server.seen[1]['connect-timeout-ms'], /^\d+$/);
});

test('a 503 with Retryrs-Pushback: -1 is not retried, and counts as a failure', async (t) => {
  for (const headers of [{ 'Retryrs-Pushback': '-1' }, { 'grpc-retry-pushback-ms': '-1' }, { 'x-envoy-overloaded': 'true' }]) {
    const server = await serve(answer(503, headers));
    t.after(() => server.close());
    const events = [];
    const retrier = fastRetrier({ onEvent: (e) => events.push(e.kind) });
    const res = await retryingFetch({ retrier })(server.url);
    await res.arrayBuffer();
    assert.equal(res.status, 503, 'the response is handed back');
    assert.equal(server.seen.length, 1, `one attempt for ${JSON.stringify(headers)}`);
    assert.equal(retrier.stats().attempts, 1);
    assert.ok(events.includes('attempt_failed'), 'counted as a failure');
    assert.ok(!events.includes('success'));
  }
});

test('a non-negative pushback is an exact wait, not a floor (Retry-After is a floor)', async (t) => {
  const server = await serve((req, res, n) => answer(n === 1 ? 503 : 200, n === 1 ? { 'Retryrs-Pushback': '120', 'retry-after': '3' } : {})(req, res));
  t.after(() => server.close());
  const delays = [];
  const retrier = new Retrier({ initialDelayMs: 1000, jitter: 'none', onEvent: (e) => e.kind === 'retrying' && delays.push(e.delayMs) });
  const res = await retryingFetch({ retrier })(server.url);
  assert.equal(res.status, 200);
  assert.deepEqual(delays, [120]);
});

test('middleware: a Connect-style chain runs inside the context; a request with nothing left gets 504 and Retryrs-Pushback: -1', async (t) => {
  const mw = middleware({ limitMs: 10_000 });
  let ran = 0;
  let seen;
  const chain = (req, res) => mw(req, res, () => {
    ran += 1;
    seen = current();
    res.end(String(seen?.remainingMs));
  });
  const server = await serve(chain);
  t.after(() => server.close());
  const ok = await fetch(server.url, { headers: { 'Retryrs-Context': 't=3600000' } });
  const left = Number(await ok.text());
  assert.ok(left <= 10_000 && left > 9000, `clamped to the server's limit: ${left}`);
  assert.ok(seen instanceof PropagationContext);
  const refused = await fetch(server.url, { headers: { 'Retryrs-Context': 't=0, a=1' } });
  await refused.arrayBuffer();
  assert.equal(refused.status, 504);
  assert.equal(refused.headers.get('retryrs-pushback'), '-1');
  assert.equal(ran, 1, 'the handler did not run');
  // The cap: at most 20% of a window's requests are refused; past it the handler runs.
  const again = await fetch(server.url, { headers: { 'grpc-timeout': '0m' } });
  await again.arrayBuffer();
  assert.equal(again.status, 200);
  assert.equal(ran, 2);
  const bad = await fetch(server.url, { headers: { 'Retryrs-Context': 't=abc', 'grpc-timeout': '123456789m' } });
  assert.equal(bad.status, 200, 'malformed values are ignored');
  await bad.arrayBuffer();
  assert.deepEqual(mw.stats(), { requests: 4, malformed: 2, clamped: 1, refused: 1, observed: 0, capped: 1 });
});

test('observeOnly runs the handler of a request with nothing left and counts it', async (t) => {
  let ran = 0;
  const handler = wrap((req, res) => {
    ran += 1;
    res.end();
  }, { observeOnly: true });
  const server = await serve(handler);
  t.after(() => server.close());
  const res = await fetch(server.url, { headers: { 'Retryrs-Context': 't=0' } });
  await res.arrayBuffer();
  assert.equal(res.status, 200);
  assert.equal(ran, 1);
  assert.equal(handler.stats().observed, 1);
});

test('mesh headers are read only on a listener marked trustMesh', async (t) => {
  const seen = [];
  const handle = (req, res) => {
    seen.push([current().remainingMs, current().retry]);
    res.end();
  };
  const publicServer = await serve(wrap(handle));
  const internal = await serve(wrap(handle, { trustMesh: true }));
  t.after(() => publicServer.close());
  t.after(() => internal.close());
  const headers = { 'x-envoy-expected-rq-timeout-ms': '800', 'x-envoy-attempt-count': '2' };
  await (await fetch(publicServer.url, { headers })).arrayBuffer();
  await (await fetch(internal.url, { headers })).arrayBuffer();
  assert.deepEqual(seen[0], [null, false]);
  assert.ok(seen[1][0] <= 800 && seen[1][0] > 600);
  assert.equal(seen[1][1], true);
});

test('the context\'s signal aborts when the client goes away, and cancels the calls inside', async (t) => {
  let outcome;
  let resolveDone;
  const done = new Promise((resolve) => {
    resolveDone = resolve;
  });
  const r = new Retrier();
  const server = await serve(wrap(async () => {
    try {
      await r.call((ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))));
    } catch (err) {
      outcome = err;
    }
    resolveDone();
  }));
  t.after(() => server.close());
  const controller = new AbortController();
  const pending = fetch(server.url, { signal: controller.signal }).catch(() => {});
  while (server.seen.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  const abortedAt = performance.now();
  controller.abort();
  await pending;
  await done;
  assert.ok(performance.now() - abortedAt < 1000);
  assert.equal(outcome?.name, 'AbortError', `cancelled: ${outcome}`);
});

test('run(context, fn) checks its input and returns what fn returns', async () => {
  assert.equal(run({ remainingMs: 50 }, () => current().retry), false);
  assert.equal(current(), undefined);
  const outer = await run({ remainingMs: 1000, retry: true }, async () => {
    const c = current();
    await new Promise((resolve) => setTimeout(resolve, 5));
    return run(c, () => current() === c);
  });
  assert.equal(outer, true);
  assert.throws(() => run(null, () => {}), /context must be an object/);
  assert.throws(() => run({ remainingMs: -1 }, () => {}), RangeError);
  assert.throws(() => run({ deadline: 5 }, () => {}), /unknown key 'deadline'/);
  assert.throws(() => run({}, 'fn'), /fn must be a function/);
  assert.throws(() => wrap('handler'), /handler must be a function/);
  assert.throws(() => middleware({ limitMs: '5s' }), /limitMs must be a number/);
  assert.throws(() => middleware({ trust: true }), /unknown option 'trust'/);
});

test('run() inside another context narrows it and never widens it', async () => {
  // A library that runs its work in a context of its own inside a request (a longer
  // budget, no retry mark) must not give its calls more time than the caller waits, nor
  // retries the caller's retry forbids, nor hide the client's going away.
  const caller = new AbortController();
  await run({ remainingMs: 300, retry: true, signal: caller.signal }, async () => {
    const outer = current();
    await run({ remainingMs: 30_000 }, async () => {
      const inner = current();
      assert.notEqual(inner, outer);
      assert.equal(inner.retry, true);
      assert.ok(inner.deadlineAt <= outer.deadlineAt && inner.remainingMs <= 300, `${inner.remainingMs} ms left`);
      let attempts = 0;
      const r = new Retrier({ initialDelayMs: 0, maxDelayMs: 0 });
      await assert.rejects(r.call((ctx) => {
        attempts += 1;
        assert.ok(ctx.remainingMs <= 300, `attempt bound ${ctx.remainingMs} ms`);
        throw new Error('boom');
      }));
      assert.equal(attempts, 1, 'the outer retry mark: one attempt');
    });
    // A shorter budget inside still wins.
    run({ remainingMs: 100 }, () => assert.ok(current().remainingMs <= 100));
    // The outer cancellation reaches the inner context's calls and signal.
    await run({}, async () => {
      const inner = current();
      const r = new Retrier();
      let seen;
      const pending = r.call((ctx) => new Promise((resolve, reject) => {
        seen = ctx.signal;
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason));
      }));
      await new Promise((resolve) => setImmediate(resolve));
      caller.abort(new Error('client gone'));
      await assert.rejects(pending);
      assert.equal(seen.aborted, true);
      assert.equal(inner.signal.aborted, true);
    });
  });
  // Outside any context an object is taken as given.
  run({}, () => assert.equal(current().remainingMs, null));
});

test('a nested run() inside a request: the client going away reaches it; after the request its own limits', async () => {
  // Inside the request (a retry, 150 ms left): the nested context narrows it, and its
  // signal aborts when the client goes away, though fn returned at once. Work it left
  // running past the request has the nested context's own limits (60 s, no retry mark),
  // not a finished request's, as work started in the handler itself finds no context.
  const seen = {};
  let inner;
  let left;
  let deepLeft;
  const server = http.createServer(wrap((req, res) => {
    run({ remainingMs: 60_000 }, () => {
      inner = current();
      seen.retry = inner.retry;
      seen.remainingMs = inner.remainingMs;
      // The signal read here (a fetch would get it): once the request is over,
      // inner.signal is the nested context's own again.
      inner.signal.addEventListener('abort', (event) => {
        seen.aborted = event.target.reason?.name;
      });
      left = new Promise((resolve) => setTimeout(() => resolve(current()), 400));
      // One level deeper: its signal and its calls' cancellation, joined during the
      // request, follow the middle context once that is its own again.
      run({}, () => {
        const deep = current();
        seen.deepInside = deep.signal;
        new Retrier().call(() => 1).catch(() => {});
        deepLeft = new Promise((resolve) => setTimeout(() => {
          const later = current();
          new Retrier().call(() => 'ran').then((v) => resolve({ later, v }), (err) => resolve({ later, v: err.name }));
        }, 400));
      });
    });
    if (req.url === '/answer') res.end('ok');
    // else: no answer; the client goes away
  }));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  try {
    const gone = http.get({ port, host: '127.0.0.1', path: '/hang', headers: { 'retryrs-context': 't=150, r=?1' } });
    gone.on('error', () => {});
    await new Promise((resolve) => setTimeout(resolve, 50));
    gone.destroy();
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(seen.retry, true);
    assert.ok(seen.remainingMs <= 150, `${seen.remainingMs} ms left inside`);
    assert.equal(seen.aborted, 'AbortError', 'the client went away');
    const later = await left;
    assert.equal(later, inner, 'work the nested run() left running still finds it');
    assert.equal(later.retry, false);
    assert.ok(later.remainingMs > 59_000, `${later.remainingMs} ms left after the request`);
    assert.equal(later.signal.aborted, false, 'its own signal, not the finished request\'s');
    assert.equal(seen.deepInside.aborted, true, 'the deeper context followed the client going away');
    const deep = await deepLeft;
    assert.equal(deep.later.retry, false);
    assert.equal(deep.later.signal.aborted, false, 'the deeper context\'s signal, after the request');
    assert.equal(deep.v, 'ran', 'its calls are not cancelled by the finished request');
  } finally {
    server.closeAllConnections?.();
    await new Promise((resolve) => server.close(resolve));
  }
});

// Every HTTP helper: what it sends on each attempt, and a server's "don't retry".
const HELPERS = {
  fetch: (retrier, more) => async (url) => {
    const res = await retryingFetch({ retrier, ...more })(url);
    await res.arrayBuffer();
    return res.status;
  },
  undici: (retrier, more) => async (url) => {
    const undici = require('undici');
    const { retryInterceptor } = require('retryrs/undici');
    // Redirects followed outside the retries (composed after them): each hop is retried
    // and told the context on its own, and the allowlist is asked of each.
    const dispatcher = new undici.Agent().compose(retryInterceptor({ retrier, ...more }), undici.interceptors.redirect({ maxRedirections: 3 }));
    try {
      const res = await undici.request(url, { dispatcher });
      await res.body.dump();
      return res.statusCode;
    } finally {
      await dispatcher.close();
    }
  },
  // Global fetch through undici's global dispatcher, composed with the interceptor.
  'undici (global fetch)': (retrier, more) => async (url) => {
    const undici = require('undici');
    const { retryInterceptor } = require('retryrs/undici');
    const dispatcher = new undici.Agent().compose(retryInterceptor({ retrier, ...more }));
    const before = undici.getGlobalDispatcher();
    undici.setGlobalDispatcher(dispatcher);
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      return res.status;
    } finally {
      undici.setGlobalDispatcher(before);
      await dispatcher.close();
    }
  },
  axios: (retrier, more) => async (url) => {
    const axios = require('axios');
    const { retryAxios } = require('retryrs/axios');
    const instance = axios.create({ validateStatus: null });
    retryAxios(instance, { retrier, ...more });
    return (await instance.get(url)).status;
  },
  got: (retrier, more) => async (url) => {
    const { default: got } = await import('got');
    const { retryGot } = require('retryrs/got');
    return (await got.extend(retryGot({ retrier, ...more }))(url, { throwHttpErrors: false })).statusCode;
  },
};

/**
 * A GET to `url` with node:http (not fetch: a test may set undici's global dispatcher,
 * which global fetch would go through), resolving with its status and how long the
 * answer took (ms).
 */
function get(url, headers) {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    http.get(url, { headers }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, took: performance.now() - started }));
    }).on('error', reject);
  });
}

/** A server wrapped by the helper whose handler calls `url` with `call`: 200 or 504. */
function frontFor(call, url) {
  return serve(wrap(async (req, res) => {
    let status;
    try {
      status = await call(url);
    } catch {
      status = 'failed';
    }
    res.writeHead(status === 200 ? 200 : 504, { 'content-length': '0', 'x-inner': String(status) });
    res.end();
  }));
}

for (const [name, make] of Object.entries(HELPERS)) {
  test(`${name}: a wrapped server given t=300 answers within 300 + 250 ms though its dependency hangs (a default retrier)`, async (t) => {
    const ready = await serve(answer(200));
    t.after(() => ready.close());
    // The helper's first use loads its client: not part of the time measured.
    assert.equal(await make(new Retrier())(ready.url), 200);
    const dependency = await serve(() => {});
    t.after(() => dependency.close());
    const front = await frontFor(make(new Retrier()), dependency.url); // a 15 s deadline
    t.after(() => front.close());
    const { status, took } = await get(front.url, { 'Retryrs-Context': 't=300, a=1' });
    assert.equal(status, 504);
    assert.ok(took < 300 + 250, `answered after ${Math.round(took)} ms`);
    assert.ok(dependency.seen.length >= 1, 'the dependency was called');
    assert.ok(Number(contextOf(dependency.seen[0]['retryrs-context']).t) < 300, 'and told the time left');
  });

  test(`${name}: a wrapped server given a=2 makes exactly one inner attempt`, async (t) => {
    const dependency = await serve(answer(503));
    t.after(() => dependency.close());
    const front = await frontFor(make(fastRetrier()), dependency.url);
    t.after(() => front.close());
    assert.equal((await get(front.url, { 'Retryrs-Context': 't=2000, a=2' })).status, 504);
    assert.equal(dependency.seen.length, 1);
    assert.equal(contextOf(dependency.seen[0]['retryrs-context']).r, '?1');
    // a=1: the same handler retries (5 attempts by default).
    assert.equal((await get(front.url, { 'Retryrs-Context': 't=2000, a=1' })).status, 504);
    assert.equal(dependency.seen.length, 1 + 5);
  });

  test(`${name}: each attempt carries its own t and a; a host outside the allowlist gets nothing`, async (t) => {
    const server = await serve((req, res, n) => answer(n === 1 ? 503 : 200)(req, res));
    t.after(() => server.close());
    assert.equal(await make(fastRetrier({ deadlineMs: 2000 }))(server.url), 200);
    const [first, second] = server.seen.map((h) => contextOf(h['retryrs-context']));
    for (const { t: tMs } of [first, second]) assert.ok(Number(tMs) > 1500 && Number(tMs) <= 2000, `t=${tMs}`);
    assert.ok(Number(second.t) <= Number(first.t), 't is read from the clock at each send');
    assert.deepEqual([first.a, second.a], ['1', '2']);
    assert.equal(await make(fastRetrier(), { propagate: { hosts: ['*.internal'] } })(server.url), 200);
    assert.equal(server.seen[2]['retryrs-context'], undefined);
  });

  test(`${name}: a redirect its client follows to a host outside the allowlist carries none of the headers`, async (t) => {
    // 127.0.0.1 (allowed, another port) -> [::1] (outside the list) -> 200.
    const outside = await serve(answer(200), '::1');
    t.after(() => outside.close());
    const inside = await serve((req, res) => res.writeHead(307, { location: outside.url, 'content-length': '0' }).end());
    t.after(() => inside.close());
    const first = await serve((req, res) => res.writeHead(302, { location: inside.url, 'content-length': '0' }).end());
    t.after(() => first.close());
    assert.equal(await make(fastRetrier(), { propagate: { hosts: ['127.0.0.1'] } })(first.url), 200);
    assert.equal(contextOf(first.seen[0]['retryrs-context']).a, '1');
    assert.equal(contextOf(inside.seen[0]['retryrs-context']).a, '1', 'an allowed hop keeps them');
    assert.equal(outside.seen.length, 1);
    assert.deepEqual(Object.keys(outside.seen[0]).filter((k) => k.startsWith('retryrs')), []);
    // Without an allowlist every host gets them, the redirect's hops too.
    assert.equal(await make(fastRetrier())(first.url), 200);
    assert.equal(contextOf(outside.seen[1]['retryrs-context']).a, '1');
  });

  test(`${name}: a 503 with Retryrs-Pushback: -1 makes one attempt, counted a failure`, async (t) => {
    const server = await serve(answer(503, { 'Retryrs-Pushback': '-1' }));
    t.after(() => server.close());
    const retrier = fastRetrier();
    assert.equal(await make(retrier)(server.url), 503);
    assert.equal(server.seen.length, 1);
    const stats = retrier.stats();
    assert.equal(stats.attempts, 1);
    assert.equal(stats.successes, 0);
  });

  test(`${name}: inside a request that was a retry, one attempt and r=?1`, async (t) => {
    const server = await serve(answer(503));
    t.after(() => server.close());
    assert.equal(await run({ remainingMs: 3000, retry: true }, () => make(fastRetrier())(server.url)), 503);
    assert.equal(server.seen.length, 1);
    const sent = contextOf(server.seen[0]['retryrs-context']);
    assert.equal(sent.r, '?1');
    assert.ok(Number(sent.t) <= 3000 - 5 && Number(sent.t) > 2000, `t=${sent.t}: the request's budget less the margin`);
  });
}

test('work a request started and left running (a lazy refresher) no longer finds its context once the request is over', async () => {
  // The first request is a retry with 200 ms left; the refresher it starts calls after
  // the response went out: its calls run under their own policy (3 attempts), not the
  // finished request's (one attempt, 200 ms), and current() finds nothing there.
  const r = new Retrier({ maxAttempts: 3, initialDelayMs: 1, shouldRetry: () => true });
  let later;
  const done = new Promise((resolve) => {
    later = resolve;
  });
  const server = await serve(wrap((req, res) => {
    res.end('ok');
    setTimeout(async () => {
      let n = 0;
      const got = await r.call(async () => {
        n += 1;
        if (n < 2) throw new Error('flaky');
        return 'refreshed';
      });
      later({ got, n, context: current() });
    }, 50);
  }));
  try {
    const res = await fetch(server.url, { headers: { 'Retryrs-Context': 't=200, a=2' } });
    assert.equal(await res.text(), 'ok');
    const { got, n, context } = await done;
    assert.equal(got, 'refreshed');
    assert.equal(n, 2, 'two attempts: the retrier\'s own policy, not the downward rule');
    assert.equal(context, undefined);
  } finally {
    server.close();
  }
});

test('a budget past setTimeout\'s range does not abort the context at once', async () => {
  const server = await serve(wrap(async (req, res) => {
    await new Promise((resolve) => setTimeout(resolve, 20));
    res.end(String(current().signal.aborted));
  }, { limitMs: null }));
  try {
    const res = await fetch(server.url, { headers: { 'Retryrs-Context': 't=9999999999' } });
    assert.equal(await res.text(), 'false');
  } finally {
    server.close();
  }
});
