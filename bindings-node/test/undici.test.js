'use strict';
// retryrs/undici: the interceptor on an undici Agent, the issue 23 scenarios, then
// undici specifics (fetch through the dispatcher, global fetch, streamed bodies).
const test = require('node:test');
const assert = require('node:assert/strict');
const { Readable } = require('node:stream');
const undici = require('undici');
const { Retrier } = require('retryrs');
const { retryInterceptor } = require('retryrs/undici');
const { HttpRetryError } = require('../lib/http-common');
const { scenarios, fast } = require('./http-scenarios');
const { startServer } = require('./http-server');

const agents = [];
test.after(() => Promise.all(agents.map((a) => a.close())));

function dispatcherFor(retrier, options = {}, ca, timeoutMs) {
  const agent = new undici.Agent({ ...(ca ? { connect: { ca } } : {}), ...(timeoutMs !== undefined ? { headersTimeout: timeoutMs } : {}) });
  agents.push(agent);
  return agent.compose(retryInterceptor({ retrier, ...options }));
}

/** undici.request on a composed Agent; resolves with { status } once the body is read. */
function make(retrier, options = {}) {
  const plain = dispatcherFor(retrier, options);
  return async (url, { method = 'GET', body, headers, retry, ca, timeoutMs } = {}) => {
    const dispatcher = ca || timeoutMs !== undefined ? dispatcherFor(retrier, options, ca, timeoutMs) : plain;
    const res = await undici.request(url, { dispatcher, method, body, headers, retry });
    await res.body.text();
    return { status: res.statusCode };
  };
}

// A refused connection is Node's own error as undici rejects with it (code ECONNREFUSED).
// A failed TLS handshake is Node's own TLS error (a code, no syscall).
scenarios({
  name: 'undici interceptor',
  make,
  isClientError: (err) => err instanceof Error && err.code === 'ECONNREFUSED' && err.syscall === 'connect',
  isTlsError: (err) => err instanceof Error && typeof err.code === 'string' && err.syscall === undefined && !(err instanceof HttpRetryError),
});

test('undici interceptor: undici.fetch through the dispatcher, and global fetch through setGlobalDispatcher', async (t) => {
  const s = await startServer();
  t.after(() => s.close());
  const { retrier, events } = fast();
  const dispatcher = dispatcherFor(retrier);
  const url = s.script([503, 503, 200]);
  const res = await undici.fetch(url, { dispatcher });
  assert.equal(res.status, 200);
  assert.equal(await res.text(), 'ok');
  assert.equal(s.hits(url), 3);
  const before = undici.getGlobalDispatcher();
  undici.setGlobalDispatcher(dispatcher);
  t.after(() => undici.setGlobalDispatcher(before));
  const global = s.script([503, 200]);
  const res2 = await fetch(global);
  assert.equal(res2.status, 200);
  assert.equal(s.hits(global), 2);
  assert.equal(events.filter((e) => e.kind === 'success').length, 2);
});

test('undici interceptor: a streamed body is kept as it is sent (up to 1 MiB) and sent again; a longer one is sent once', async (t) => {
  const s = await startServer();
  t.after(() => s.close());
  const { retrier, events } = fast();
  const url = s.script([503, 200]);
  const res = await undici.request(url, { dispatcher: dispatcherFor(retrier), method: 'PUT', body: Readable.from(['a', 'b']) });
  await res.body.text();
  assert.equal(res.statusCode, 200);
  assert.deepEqual(s.requests.get(new URL(url).pathname).map((r) => r.body), ['ab', 'ab']);
  assert.deepEqual(events.map((e) => e.kind), ['attempt_failed', 'retrying', 'success']);
  // Past the limit it cannot be kept: one attempt, its 503 handed back.
  const long = s.script([503, 200]);
  const big = Buffer.alloc(64 * 1024, 'z');
  const chunks = Array.from({ length: 17 }, () => big); // 1088 KiB
  const once = await undici.request(long, { dispatcher: dispatcherFor(retrier), method: 'PUT', body: Readable.from(chunks) });
  await once.body.text();
  assert.equal(once.statusCode, 503);
  assert.equal(s.hits(long), 1);
  assert.equal(s.requests.get(new URL(long).pathname)[0].body.length, 17 * 64 * 1024);
});

test('undici interceptor: a final response streams to the caller; a long retried body is dropped, not read', async (t) => {
  const s = await startServer();
  t.after(() => s.close());
  const { retrier } = fast();
  const url = s.script([[503, undefined, 200 * 1024], [200, undefined, 300 * 1024]]);
  const res = await undici.request(url, { dispatcher: dispatcherFor(retrier) });
  assert.equal(res.statusCode, 200);
  assert.equal((await res.body.arrayBuffer()).byteLength, 300 * 1024);
  assert.equal(s.hits(url), 2);
});

test('undici interceptor: options and retrier hooks are checked when it is made', () => {
  assert.throws(() => retryInterceptor({ retrier: new Retrier({ shouldRetry: () => true }) }), /shouldRetry/);
  assert.throws(() => retryInterceptor({ maxRetries: 3 }), /unknown option 'maxRetries'/);
  assert.throws(() => retryInterceptor({ statuses: [999] }), /statuses/);
});

test('undici interceptor: the caller\'s abort during a wait ends the request and its retries', async (t) => {
  const s = await startServer();
  t.after(() => s.close());
  const events = [];
  const retrier = new Retrier({ initialDelayMs: 5000, jitter: 'none', onEvent: (e) => events.push(e) });
  const url = s.script([503, 200]);
  const c = new AbortController();
  setTimeout(() => c.abort(), 100);
  const t0 = performance.now();
  await assert.rejects(undici.request(url, { dispatcher: dispatcherFor(retrier), signal: c.signal }), (err) => err.name === 'AbortError' || err.code === 'UND_ERR_ABORTED');
  assert.ok(performance.now() - t0 < 4000);
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(events.at(-1).kind, 'cancelled');
  assert.equal(s.hits(url), 1);
});

test('undici interceptor: a final response\'s body that stalls fails after the attempt timeout of silence, with undici\'s own body timeout', async (t) => {
  // Headers at once, then half a body, then nothing: the caller's read must not hang.
  const http = require('node:http');
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 10 });
    res.write('hello');
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  const retrier = new Retrier({ attemptTimeoutMs: 300, deadlineMs: 5000 });
  const t0 = performance.now();
  const res = await undici.request(`http://127.0.0.1:${server.address().port}/`, { dispatcher: dispatcherFor(retrier) });
  assert.equal(res.statusCode, 200);
  const err = await res.body.text().then(() => null, (e) => e);
  const ms = performance.now() - t0;
  console.log(`stalled final body cut after ${ms.toFixed(1)} ms (bound 300 ms)`);
  assert.ok(err !== null, 'the body read fails instead of hanging');
  assert.equal(err.code, 'UND_ERR_BODY_TIMEOUT', `undici's body timeout (300 ms of silence) cut it: ${err}`);
  assert.ok(ms > 250 && ms < 3000, `cut after 300 ms of silence, not at the deadline (${ms} ms)`);
});
