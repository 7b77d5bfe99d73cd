'use strict';
// retryrs/fetch against a real loopback server, with Node's global fetch and with
// undici's fetch passed in.
const test = require('node:test');
const assert = require('node:assert/strict');
const undici = require('undici');
const { Retrier, RetryBudget, RetryExhaustedError, testing } = require('retryrs');
const { retryingFetch, RetryableStatusError, RequestFailedError, redactUrl, IDEMPOTENT_METHODS } = require('retryrs/fetch');
const { startServer, closedPort } = require('./http-server');

/** A retrier with no backoff wait (Retry-After still applies) that records events. */
function fast(options = {}) {
  const events = [];
  const retrier = new Retrier({ initialDelayMs: 0, jitter: 'none', onEvent: (e) => events.push(e), ...options });
  return { retrier, events };
}

const FETCHES = [
  ['global fetch', undefined],
  ['undici fetch', undici.fetch],
];

for (const [label, impl] of FETCHES) {
  const make = (retrier, more = {}) => retryingFetch({ retrier, ...(impl ? { fetch: impl } : {}), ...more });

  test(`${label}: 503, 503, 429 Retry-After: 1, 200 makes four requests and the third wait is the server's`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const url = s.script([503, 503, [429, '1'], 200]);
    const { retrier, events } = fast();
    const t0 = performance.now();
    const res = await make(retrier)(url);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'ok');
    assert.ok(performance.now() - t0 >= 990);
    assert.equal(s.hits(url), 4);
    const failed = events.filter((e) => e.kind === 'attempt_failed');
    assert.deepEqual(failed.map((e) => e.error.status), [503, 503, 429]);
    assert.ok(failed.every((e) => e.error instanceof RetryableStatusError && e.error.method === 'GET' && e.error.url === url));
    const retrying = events.filter((e) => e.kind === 'retrying');
    assert.ok(retrying[2].delayMs >= 1000 && retrying[0].delayMs < 1000);
    assert.equal(events.at(-1).kind, 'success');
    assert.equal(events.at(-1).attempt, 4);
  });

  test(`${label}: an HTTP-date Retry-After is the minimum wait (virtual time)`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const url = s.script([[503, new Date(Date.now() + 3000).toUTCString()], 200]);
    const { retrier, events } = fast();
    await testing.scoped(async () => {
      assert.equal((await make(retrier)(url)).status, 200);
    });
    const delays = events.filter((e) => e.kind === 'retrying').map((e) => e.delayMs);
    assert.equal(delays.length, 1);
    assert.ok(delays[0] >= 1500 && delays[0] <= 3000, String(delays[0]));
  });

  test(`${label}: a GET past attemptTimeoutMs is aborted as a read timeout and sent again`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const url = s.script([['slow', 2000], 200]);
    const { retrier, events } = fast({ attemptTimeoutMs: 200 });
    const res = await make(retrier)(url);
    assert.equal(res.status, 200);
    assert.equal(s.hits(url), 2);
    const retrying = events.filter((e) => e.kind === 'retrying');
    assert.equal(retrying.length, 1);
    assert.ok(retrying[0].error instanceof RequestFailedError);
    assert.equal(retrying[0].error.cause.name, 'TimeoutError');
  });

  test(`${label}: a POST past attemptTimeoutMs is not sent again: it rejects with the TimeoutError`, async (t) => {
    // It may have reached the server (a payment): only an idempotent method is resent.
    const s = await startServer();
    t.after(() => s.close());
    const url = s.script([['slow', 2000], 200]);
    const { retrier, events } = fast({ attemptTimeoutMs: 200 });
    const t0 = performance.now();
    await assert.rejects(make(retrier)(url, { method: 'POST', body: 'pay' }), (err) => err.name === 'TimeoutError' && /attemptTimeoutMs/.test(err.message));
    assert.ok(performance.now() - t0 < 1500, 'the request was aborted, not waited out');
    assert.equal(s.hits(url), 1);
    assert.deepEqual(events.map((e) => e.kind), ['attempt_failed', 'rejected']);
  });

  test(`${label}: a one-shot body (a stream, a Request's own) is sent once but still bounded by attemptTimeoutMs`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const { retrier } = fast({ attemptTimeoutMs: 200 });
    const stream = () => new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode('pay')); c.close(); } });
    const sends = [
      (url) => make(retrier)(url, { method: 'POST', body: stream(), duplex: 'half' }),
      (url) => make(retrier)(new (impl ? undici.Request : Request)(url, { method: 'POST', body: 'pay' })),
    ];
    for (const sendOnce of sends) {
      const url = s.script([['slow', 2000], 200]);
      const t0 = performance.now();
      await assert.rejects(sendOnce(url), (err) => err.name === 'TimeoutError' && /attemptTimeoutMs/.test(err.message));
      assert.ok(performance.now() - t0 < 1500, 'the request was aborted, not waited out');
      assert.equal(s.hits(url), 1);
    }
  });

  test(`${label}: a fetch that drops init.signal is still bounded by attemptTimeoutMs, and its late response freed`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const url = s.script([['slow', 600], 200]);
    const late = [];
    // A wrapper that forgets the signal: the request cannot be aborted, only abandoned.
    const forgetful = async (input, init) => {
      const res = await (impl ?? globalThis.fetch)(input, { method: init?.method, headers: init?.headers });
      late.push(res);
      return res;
    };
    const { retrier, events } = fast({ attemptTimeoutMs: 200 });
    const t0 = performance.now();
    const res = await retryingFetch({ retrier, fetch: forgetful })(url);
    assert.equal(res.status, 200);
    assert.ok(performance.now() - t0 < 1000, `the first attempt was abandoned at its timeout (${performance.now() - t0} ms)`);
    assert.deepEqual(events.map((e) => e.kind), ['attempt_failed', 'retrying', 'success']);
    assert.equal(events[0].error.cause.name, 'TimeoutError');
    await new Promise((r) => setTimeout(r, 700)); // the abandoned first response arrives
    assert.equal(late.length, 2);
    // The abandoned first request's response is the one that came last.
    const { done } = await late[1].body.getReader().read();
    assert.ok(done, 'the late body was cancelled (its connection freed), not left unread');
  });

  test(`${label}: a 404 is returned at once, the call counted rejected (not a success)`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const url = s.script([404, 200]);
    const { retrier, events } = fast();
    assert.equal((await make(retrier)(url)).status, 404);
    assert.equal(s.hits(url), 1);
    assert.deepEqual(events.map((e) => e.kind), ['attempt_failed', 'rejected']);
    assert.equal(events[1].error.status, 404);
  });

  test(`${label}: a POST answered 503 is not retried; a POST answered by a reset rejects with fetch's error`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const { retrier } = fast();
    const url = s.script([503, 200]);
    assert.equal((await make(retrier)(url, { method: 'POST', body: 'x' })).status, 503);
    assert.equal(s.hits(url), 1);
    const reset = s.script(['reset', 200]);
    await assert.rejects(make(retrier)(reset, { method: 'POST', body: 'x' }), (err) => err instanceof TypeError && !(err instanceof RequestFailedError));
    assert.equal(s.hits(reset), 1);
  });

  test(`${label}: a POST to a closed port is retried (the connection was refused: never sent)`, async () => {
    const { retrier, events } = fast({ maxAttempts: 3 });
    const err = await make(retrier)(`http://127.0.0.1:${await closedPort()}/x`, { method: 'POST', body: 'x' }).then(
      () => assert.fail('resolved'),
      (e) => e,
    );
    // fetch's own error (its TypeError), carrying the retry information.
    assert.ok(err instanceof TypeError && err instanceof RetryExhaustedError);
    assert.equal(err.attempts, 3);
    assert.equal(err.reason, 'attempts');
    assert.equal(err.cause.code, 'ECONNREFUSED');
    assert.ok(err.errors.at(-1) instanceof RequestFailedError && err.errors.at(-1).connect);
    assert.match(err.errors.at(-1).message, /could not connect: ECONNREFUSED/);
    assert.equal(events.filter((e) => e.kind === 'retrying').length, 2);
  });

  test(`${label}: a PUT is retried, on a status and on a reset`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const url = s.script([503, 'reset', 200]);
    const { retrier } = fast();
    const res = await make(retrier)(url, { method: 'PUT', body: 'payload' });
    assert.equal(res.status, 200);
    assert.deepEqual(s.requests.get(new URL(url).pathname).map((r) => r.body), ['payload', 'payload', 'payload']);
  });

  test(`${label}: out of retries on 503, the last 503 response is returned, body and all`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const url = s.script([503]);
    const { retrier, events } = fast({ maxAttempts: 3 });
    const res = await make(retrier)(url);
    assert.equal(res.status, 503);
    assert.equal(res.url, url);
    assert.equal(await res.text(), 'HTTP 503 body');
    assert.equal(s.hits(url), 3);
    assert.equal(events.at(-1).kind, 'exhausted');
    assert.equal(events.at(-1).error.status, 503);
  });

  test(`${label}: out of retries on resets, fetch's TypeError that is also a RetryExhaustedError`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const url = s.script(['reset']);
    const { retrier } = fast({ maxAttempts: 3 });
    const err = await make(retrier)(url).then(() => assert.fail('resolved'), (e) => e);
    assert.ok(err instanceof RetryExhaustedError && err instanceof TypeError); // fetch's "fetch failed"
    assert.equal(err.attempts, 3);
    assert.ok(err.errors.every((e) => e instanceof RequestFailedError && !e.connect));
    assert.equal(s.hits(url), 3);
  });

  for (const [retryAfter, reason] of [['3600', 'retry_after'], ['30', 'deadline']]) {
    // 3600 s is past the default maxRetryAfterMs (60 s); 30 s is under it but past the
    // default 15 s deadline. Either way: no wait, the 503 back, the reason in the event.
    test(`${label}: Retry-After: ${retryAfter} ends at once (${reason}) and the caller gets the 503`, async (t) => {
      const s = await startServer();
      t.after(() => s.close());
      const url = s.script([[503, retryAfter], 200]);
      const { retrier, events } = fast();
      const t0 = performance.now();
      assert.equal((await make(retrier)(url)).status, 503);
      assert.ok(performance.now() - t0 < 1000);
      assert.equal(s.hits(url), 1);
      assert.equal(events.at(-1).kind, 'exhausted');
      assert.equal(events.at(-1).reason, reason);
    });
  }

  test(`${label}: the budget applies`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const url = s.script([503]);
    const { retrier, events } = fast({ budget: new RetryBudget(1, 0.1) });
    assert.equal((await make(retrier)(url)).status, 503);
    assert.equal(events.at(-1).reason, 'budget');
  });

  test(`${label}: listed methods and statuses replace the defaults`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const { retrier } = fast();
    const post = s.script([503, 200]);
    assert.equal((await make(retrier, { methods: ['post'] })(post, { method: 'POST', body: 'x' })).status, 200);
    assert.equal(s.hits(post), 2);
    const notFound = s.script([404, 200]);
    assert.equal((await make(retrier, { statuses: [404] })(notFound)).status, 200);
    assert.equal(s.hits(notFound), 2);
  });

  test(`${label}: no connection leaks: 100 retried calls reuse the keep-alive connections`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const { retrier } = fast();
    const f = make(retrier);
    for (let i = 0; i < 100; i++) {
      // A 60 KiB error body, under the 64 KiB read to keep a connection: a response left
      // unread would keep its connection busy and each retry would open another.
      const res = await f(s.script([[503, undefined, 60 * 1024], 200]));
      assert.equal(await res.text(), 'ok');
    }
    assert.ok(s.stats.accepted <= 2, `${s.stats.accepted} connections`);
  });

  test(`${label}: a longer retried body is cancelled, not read whole: its connection is closed, none left open; the last is handed back whole`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const { retrier } = fast({ maxAttempts: 2 });
    const f = make(retrier);
    for (let i = 0; i < 20; i++) {
      const res = await f(s.script([[503, undefined, 1 << 20], 200]));
      assert.equal(await res.text(), 'ok');
    }
    // Out of retries, the last 503 comes back whole: the prefix read, then the rest.
    const last = await f(s.script([[503, undefined, 1 << 20]]));
    assert.equal(last.status, 503);
    assert.equal((await last.text()).length, 1 << 20);
    // Each cancelled body closed its connection (the server sees it go).
    for (let i = 0; i < 100 && s.stats.open > 2; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.ok(s.stats.open <= 2, `${s.stats.open} connections still open`);
  });

  test(`${label}: aborting mid-wait rejects at once with the signal's reason`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const url = s.script([[503, '30'], 200]);
    const ac = new AbortController();
    const events = [];
    const retrier = new Retrier({ deadlineMs: null, onEvent: (e) => {
      events.push(e);
      if (e.kind === 'retrying') setTimeout(() => ac.abort(), 50);
    } });
    const t0 = performance.now();
    await assert.rejects(make(retrier)(url, { signal: ac.signal }), (err) => err.name === 'AbortError');
    assert.ok(performance.now() - t0 < 1000);
    assert.equal(s.hits(url), 1);
    assert.equal(events.at(-1).kind, 'cancelled');
  });

  test(`${label}: a streamed body, or a Request's own body, is sent once`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const { retrier } = fast();
    const url = s.script([503, 200]);
    const stream = new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode('streamed')); c.close(); } });
    assert.equal((await make(retrier)(url, { method: 'PUT', body: stream, duplex: 'half' })).status, 503);
    assert.equal(s.hits(url), 1);
    assert.equal(s.requests.get(new URL(url).pathname)[0].body, 'streamed');
    const Req = impl ? undici.Request : Request;
    const other = s.script([503, 200]);
    assert.equal((await make(retrier)(new Req(other, { method: 'PUT', body: 'x' }))).status, 503);
    assert.equal(s.hits(other), 1);
    const bodiless = s.script([503, 200]);
    assert.equal((await make(retrier)(new Req(bodiless))).status, 200);
    assert.equal(s.hits(bodiless), 2);
  });

  test(`${label}: credentials and signatures never reach events, errors or log lines`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const lines = [];
    const events = [];
    const retrier = new Retrier({ initialDelayMs: 0, maxAttempts: 2, onEvent: (e) => {
      events.push(e);
      lines.push(`${e.name}: ${e.kind} attempt ${e.attempt}${e.error ? `: ${e.error}` : ''}`);
    } });
    const f = make(retrier);
    const signed = s.script([503], '') + '?sig=zq9sig&x=1';
    assert.equal((await f(signed)).status, 503);
    const refused = `http://127.0.0.1:${await closedPort()}/x?X-Goog-Signature=zq9sig`;
    const errors = [];
    await f(refused).catch((e) => errors.push(e));
    await f(s.base.replace('http://', 'http://user:s3cretpw@') + '/y?sig=zq9sig').catch((e) => errors.push(e));
    assert.equal(errors.length, 2);
    assert.ok(errors[0] instanceof RetryExhaustedError && errors[1] instanceof TypeError);
    assert.match(lines.join('\n'), /sig=REDACTED/);
    assert.match(errors[1].message, /REDACTED:REDACTED@/);
    const texts = [...lines, ...errors.flatMap((e) => [String(e), e.message, String(e.cause?.message)]), ...events.map((e) => JSON.stringify(e))];
    for (const text of texts) {
      assert.ok(!text.includes('s3cretpw') && !text.includes('zq9sig'), text);
    }
  });
}

test('bad options are refused with a clear error', () => {
  assert.throws(() => retryingFetch({ retries: 3 }), /unknown option 'retries'/);
  assert.throws(() => retryingFetch({ methods: 'GET' }), /methods must be an array/);
  assert.throws(() => retryingFetch({ statuses: [99] }), /statuses must hold HTTP statuses/);
  assert.throws(() => retryingFetch({ fetch: 3 }), /fetch must be a function/);
  assert.throws(() => retryingFetch({ retrier: {} }), /retrier must be a Retrier/);
  assert.throws(() => redactUrl(3), /url must be a string/);
});

test('redaction and the idempotent methods are the core\'s', () => {
  assert.equal(redactUrl('https://u:p@h/a?Signature=s&AWSAccessKeyId=k&q=1'), 'https://REDACTED:REDACTED@h/a?Signature=REDACTED&AWSAccessKeyId=REDACTED&q=1');
  assert.deepEqual([...IDEMPOTENT_METHODS], ['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);
});

test('the ES module entry point is the same module', async () => {
  const esm = await import('retryrs/fetch');
  assert.equal(esm.retryingFetch, retryingFetch);
  assert.equal(esm.RetryableStatusError, RetryableStatusError);
});

test('each resend sets http.request.resend_count on the active span (OpenTelemetry)', async (t) => {
  const api = require('@opentelemetry/api');
  const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
  const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
  const manager = new AsyncLocalStorageContextManager().enable();
  api.context.setGlobalContextManager(manager);
  t.after(() => { api.context.disable(); });
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer = provider.getTracer('test');
  const s = await startServer();
  t.after(() => s.close());
  const { retrier } = fast();
  const f = retryingFetch({ retrier });
  const again = s.script([503, 503, 200]);
  const once = s.script([200]);
  await tracer.startActiveSpan('GET', async (span) => { assert.equal((await f(again)).status, 200); span.end(); });
  await tracer.startActiveSpan('GET once', async (span) => { assert.equal((await f(once)).status, 200); span.end(); });
  const spans = Object.fromEntries(exporter.getFinishedSpans().map((sp) => [sp.name, sp]));
  assert.equal(spans.GET.attributes['http.request.resend_count'], 2);
  assert.equal('http.request.resend_count' in spans['GET once'].attributes, false);
});

test('retryingFetch({ fetch: undici.fetch }) retries a body built with undici\'s own FormData', async (t) => {
  const s = await startServer();
  t.after(() => s.close());
  assert.notEqual(undici.FormData, globalThis.FormData, 'undici\'s FormData is not the global one');
  const form = new undici.FormData();
  form.append('field', 'value');
  const url = s.script([503, 200]);
  const { retrier } = fast();
  const res = await retryingFetch({ retrier, fetch: undici.fetch })(url, { method: 'PUT', body: form });
  assert.equal(res.status, 200);
  const bodies = s.requests.get(new URL(url).pathname).map((r) => r.body);
  assert.equal(bodies.length, 2);
  assert.ok(bodies.every((b) => b.includes('value')));
});

test('retryingFetch: a one-shot body emits the same events as any request', async (t) => {
  const s = await startServer();
  t.after(() => s.close());
  const { retrier, events } = fast();
  const ok = s.script([200]);
  const stream = () => new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode('x')); c.close(); } });
  assert.equal((await retryingFetch({ retrier })(ok, { method: 'PUT', body: stream(), duplex: 'half' })).status, 200);
  assert.deepEqual(events.map((e) => e.kind), ['success']);
  events.length = 0;
  const failed = s.script([503, 200]);
  assert.equal((await retryingFetch({ retrier })(failed, { method: 'PUT', body: stream(), duplex: 'half' })).status, 503);
  assert.equal(s.hits(failed), 1);
  assert.deepEqual(events.map((e) => e.kind), ['attempt_failed', 'rejected']);
});

test('retryingFetch refuses retrier hooks it cannot honour, naming them', () => {
  assert.throws(() => retryingFetch({ retrier: new Retrier({ shouldRetry: () => true }) }), /retrier's shouldRetry cannot apply to HTTP/);
  assert.throws(() => retryingFetch({ retrier: new Retrier({ shouldRetryResult: () => false }) }), /retrier's shouldRetryResult/);
  assert.throws(() => retryingFetch({ retrier: new Retrier({ retryAfterMs: () => 5 }) }), /retrier's retryAfterMs/);
  assert.throws(() => retryingFetch({ redactQuery: 'token' }), /redactQuery must be an array/);
  assert.throws(() => retryingFetch({ redactQuery: ['a&b'] }), /redactQuery: .*a&b/);
});

test('redactUrl: the core\'s list (case-insensitive) and extra keys', () => {
  assert.equal(redactUrl('https://h/p?token=abc&X-AMZ-SIGNATURE=def&x=1'), 'https://h/p?token=REDACTED&X-AMZ-SIGNATURE=REDACTED&x=1');
  assert.equal(redactUrl('https://h/p?session=abc', ['session']), 'https://h/p?session=REDACTED');
});
