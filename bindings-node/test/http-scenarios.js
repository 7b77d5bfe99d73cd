'use strict';
// The done-when scenarios of issue 23, the same for every Node HTTP helper (fetch, the
// undici interceptor, axios, got), on a scripted loopback server. A helper's test file
// gives `client`:
//   name: the label;
//   make(retrier, options): a client with retries, where options are the helper's own
//     (redactQuery, ...); it returns request(url, { method, body, headers, retry, ca,
//     timeoutMs (the client's own timeout) })
//     resolving with { status } whether the client resolved or rejected with a response;
//   isClientError(err): whether err is the client's own error type.
const test = require('node:test');
const assert = require('node:assert/strict');
const https = require('node:https');
const net = require('node:net');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { Retrier, RetryExhaustedError, RetryBudget } = require('retryrs');
const { startServer, closedPort } = require('./http-server');
const { codeOf } = require('../lib/http-common');

/** A retrier with no backoff wait (Retry-After still applies) that records events. */
function fast(options = {}) {
  const events = [];
  const retrier = new Retrier({ initialDelayMs: 0, jitter: 'none', onEvent: (e) => events.push(e), ...options });
  return { retrier, events };
}

/**
 * A self-signed certificate for 127.0.0.1 (or the subjectAltName given), made once per
 * process with the openssl CLI ({ error } when openssl is missing: the TLS scenarios then
 * fail saying so).
 */
const certs = new Map();
function selfSigned(altName = 'IP:127.0.0.1') {
  let cert = certs.get(altName);
  if (cert !== undefined) return cert;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retryrs-tls-'));
  try {
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
      '-addext', `subjectAltName=${altName}`, '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem'),
    ], { stdio: 'ignore' });
    cert = { key: fs.readFileSync(path.join(dir, 'key.pem')), cert: fs.readFileSync(path.join(dir, 'cert.pem')) };
  } catch (err) {
    cert = { error: err };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  certs.set(altName, cert);
  return cert;
}

/**
 * An HTTPS server that reads each request whole, writes the status line, headers and
 * part of the body, then closes the TLS connection: the request was sent and read. Its
 * certificate is for `altName`; `connections()` counts the TCP connections it accepted
 * (a handshake that failed included). With `resetHandshakes: n`, the first n connections
 * are reset (TCP RST) as the client's hello arrives: a TLS handshake cut by the network.
 */
async function startCuttingTlsServer({ altName, resetHandshakes = 0, cut = true } = {}) {
  const c = selfSigned(altName);
  if (c.error) throw new Error(`the TLS scenarios need the openssl CLI to make a certificate: ${c.error.message}`);
  let hits = 0;
  let connections = 0;
  const sockets = new Set();
  const server = https.createServer({ key: c.key, cert: c.cert }, (req, res) => {
    req.resume();
    req.on('end', () => {
      hits++;
      if (!cut) {
        res.end('ok');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '1000' });
      res.write('partial');
      setTimeout(() => req.socket.destroy(), 20);
    });
  });
  // The TCP side: counts connections, resets the first handshakes, hands the rest to the
  // HTTPS server.
  const front = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    if (connections <= resetHandshakes) {
      socket.once('data', () => socket.resetAndDestroy());
      return;
    }
    server.emit('connection', socket);
  });
  await new Promise((resolve) => front.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://127.0.0.1:${front.address().port}/pay`,
    ca: c.cert,
    hits: () => hits,
    connections: () => connections,
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => front.close(resolve));
    },
  };
}

function scenarios(client) {
  const { name, make, isClientError } = client;
  // The client's own error for a failed TLS handshake (undici's is Node's own TLS error).
  const isTlsError = client.isTlsError ?? isClientError;

  test(`${name}: 503, 503, 200 makes 3 requests and returns the 200`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const url = s.script([503, 503, 200]);
    const { retrier, events } = fast();
    const res = await make(retrier)(url);
    assert.equal(res.status, 200);
    assert.equal(s.hits(url), 3);
    assert.equal(events.at(-1).kind, 'success');
    assert.equal(events.filter((e) => e.kind === 'retrying').length, 2);
  });

  test(`${name}: 429 with Retry-After: 1 waits at least a second`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const url = s.script([[429, '1'], 200]);
    const { retrier, events } = fast();
    const t0 = performance.now();
    const res = await make(retrier)(url);
    assert.equal(res.status, 200);
    assert.ok(performance.now() - t0 >= 990, `waited ${performance.now() - t0} ms`);
    assert.ok(events.find((e) => e.kind === 'retrying').delayMs >= 1000);
  });

  test(`${name}: Retry-After: 3600 returns the 429 at once`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const url = s.script([[429, '3600'], 200]);
    const { retrier, events } = fast();
    const t0 = performance.now();
    const res = await make(retrier)(url);
    assert.equal(res.status, 429);
    assert.equal(s.hits(url), 1);
    assert.ok(performance.now() - t0 < 5000);
    assert.equal(events.at(-1).kind, 'exhausted');
    assert.equal(events.at(-1).reason, 'retry_after');
  });

  test(`${name}: POST answered 503 is sent once; counted rejected with error.type "503"`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const url = s.script([503, 200]);
    const { errorType } = require('../lib/metrics');
    const { retrier, events } = fast();
    const res = await make(retrier)(url, { method: 'POST', body: 'pay' });
    assert.equal(res.status, 503);
    assert.equal(s.hits(url), 1);
    const end = events.at(-1);
    assert.equal(end.kind, 'rejected');
    assert.equal(errorType(end.error), '503');
  });

  test(`${name}: metrics for POST->503, PATCH->500, GET->404 say rejected with the status as error.type`, async (t) => {
    const prom = require('prom-client');
    const { promListener } = require('retryrs/prometheus');
    const register = new prom.Registry();
    const s = await startServer();
    t.after(() => s.close());
    const retrier = new Retrier({ initialDelayMs: 0, name: 'm', onEvent: promListener({ register }) });
    const request = make(retrier);
    assert.equal((await request(s.script([503]), { method: 'POST', body: 'x' })).status, 503);
    assert.equal((await request(s.script([500]), { method: 'PATCH', body: 'x' })).status, 500);
    assert.equal((await request(s.script([404]))).status, 404);
    assert.equal((await request(s.script([200]))).status, 200);
    const calls = (await register.getSingleMetric('retryrs_calls_total').get()).values;
    const count = (outcome, errorType) => calls.filter((v) => v.labels.outcome === outcome && (errorType === undefined || v.labels.error_type === errorType)).reduce((a, v) => a + v.value, 0);
    assert.equal(count('rejected', '503'), 1);
    assert.equal(count('rejected', '500'), 1);
    assert.equal(count('rejected', '404'), 1);
    assert.equal(count('success'), 1);
  });

  test(`${name}: a POST reset after it was sent is not resent: the client's own error, rejected, error.type its code`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const { errorType } = require('../lib/metrics');
    const { retrier, events } = fast();
    const url = s.script(['reset', 200]);
    const err = await make(retrier)(url, { method: 'POST', body: 'pay' }).then(() => assert.fail('resolved'), (e) => e);
    assert.ok(isClientError(err) || err instanceof Error, String(err));
    assert.ok(!(err instanceof RetryExhaustedError));
    assert.equal(s.hits(url), 1);
    assert.equal(events.at(-1).kind, 'rejected');
    assert.match(errorType(events.at(-1).error), /^(ECONNRESET|UND_ERR_SOCKET|EPIPE)$/);
  });

  test(`${name}: POST with an Idempotency-Key, 503 then 200, is sent twice; not when turned off`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const { retrier } = fast();
    const url = s.script([503, 200]);
    const res = await make(retrier)(url, { method: 'POST', body: 'pay', headers: { 'Idempotency-Key': 'k-1' } });
    assert.equal(res.status, 200);
    assert.equal(s.hits(url), 2);
    const off = s.script([503, 200]);
    const res2 = await make(retrier)(off, { method: 'POST', body: 'pay', headers: { 'Idempotency-Key': 'k-2' }, retry: { idempotencyKey: false } });
    assert.equal(res2.status, 503);
    assert.equal(s.hits(off), 1);
    const helperOff = s.script([503, 200]);
    const res3 = await make(retrier, { idempotencyKey: false })(helperOff, { method: 'POST', body: 'pay', headers: { 'Idempotency-Key': 'k-3' } });
    assert.equal(res3.status, 503);
    assert.equal(s.hits(helperOff), 1);
  });

  test(`${name}: a request's retry option sets its attempt limit, methods and statuses`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const { retrier } = fast({ maxAttempts: 5 });
    const request = make(retrier);
    const limited = s.script([503]);
    assert.equal((await request(limited, { retry: { limit: 2 } })).status, 503);
    assert.equal(s.hits(limited), 2);
    const post = s.script([503, 200]);
    assert.equal((await request(post, { method: 'POST', body: 'x', retry: { methods: ['POST'] } })).status, 200);
    assert.equal(s.hits(post), 2);
    const conflict = s.script([409, 200]);
    assert.equal((await request(conflict, { retry: { statuses: [409] } })).status, 200);
    assert.equal(s.hits(conflict), 2);
    const plain = s.script([503]);
    assert.equal((await request(plain)).status, 503);
    assert.equal(s.hits(plain), 5, 'the helper\'s own limit is untouched');
    await assert.rejects(async () => request(s.script([200]), { retry: { limit: 0 } }), /retry\.limit/);
  });

  test(`${name}: a POST whose TLS connection closes mid-response is sent once`, async (t) => {
    const s = await startCuttingTlsServer();
    t.after(() => s.close());
    const { retrier, events } = fast();
    // The client may fail (a cut body) or hand back what it read (axios does): either
    // way the POST, read whole by the server, is not sent again.
    const outcome = await make(retrier)(s.url, { method: 'POST', body: 'pay', ca: s.ca }).then(
      (res) => res.status,
      (e) => e,
    );
    assert.ok(outcome === 200 || (outcome instanceof Error && !(outcome instanceof RetryExhaustedError)), String(outcome));
    assert.equal(s.hits(), 1);
    assert.equal(events.filter((e) => e.kind === 'retrying').length, 0);
  });

  test(`${name}: an untrusted or mismatched certificate is never retried: one attempt, the client's own error`, async (t) => {
    const untrusted = await startCuttingTlsServer();
    t.after(() => untrusted.close());
    // A certificate the client trusts (ca), for another host.
    const elsewhere = await startCuttingTlsServer({ altName: 'DNS:elsewhere.invalid' });
    t.after(() => elsewhere.close());
    const cases = [
      // No ca: the self-signed certificate fails verification, whatever the method.
      [untrusted, 'GET', undefined, 'DEPTH_ZERO_SELF_SIGNED_CERT'],
      [untrusted, 'POST', undefined, 'DEPTH_ZERO_SELF_SIGNED_CERT'],
      [elsewhere, 'GET', elsewhere.ca, 'ERR_TLS_CERT_ALTNAME_INVALID'],
    ];
    let connections = 0;
    for (const [s, method, ca, code] of cases) {
      const { retrier, events } = fast({ maxAttempts: 3 });
      const body = method === 'POST' ? 'pay' : undefined;
      const err = await make(retrier)(s.url, { method, body, ca }).then(() => assert.fail('resolved'), (e) => e);
      const what = `${method} ${code}: ${err?.name}: ${err?.message}`;
      assert.ok(isTlsError(err), `the client's own error: ${what}`);
      assert.ok(!(err instanceof RetryExhaustedError), what);
      assert.equal(codeOf(err), code, what);
      assert.equal(s.connections() - (s === untrusted ? connections : 0), 1, `one attempt: ${what}`);
      if (s === untrusted) connections = s.connections();
      assert.equal(events.filter((e) => e.kind === 'retrying').length, 0, what);
      assert.equal(events.at(-1).kind, 'rejected', what);
      assert.equal(s.hits(), 0);
    }
  });

  test(`${name}: a TLS handshake reset by the network is retried`, async (t) => {
    const s = await startCuttingTlsServer({ resetHandshakes: 1, cut: false });
    t.after(() => s.close());
    const { retrier, events } = fast({ maxAttempts: 3 });
    const res = await make(retrier)(s.url, { ca: s.ca });
    assert.equal(res.status, 200);
    assert.equal(s.connections(), 2);
    assert.equal(s.hits(), 1);
    assert.equal(events.filter((e) => e.kind === 'retrying').length, 1);
    assert.equal(events.at(-1).kind, 'success');
  });

  test(`${name}: connection refused until out of retries rejects with the client's own error carrying retryrs's`, async () => {
    const { retrier, events } = fast({ maxAttempts: 3 });
    const url = `http://127.0.0.1:${await closedPort()}/x`;
    const err = await make(retrier)(url, { method: 'POST', body: 'x' }).then(() => assert.fail('resolved'), (e) => e);
    assert.ok(isClientError(err), `the client's own error: ${err?.name}: ${err?.message}`);
    assert.ok(err instanceof RetryExhaustedError);
    assert.equal(err.attempts, 3);
    assert.equal(err.reason, 'attempts');
    // The client's own cause stays (axios's, got's, fetch's underlying error; undici's
    // refused connect is Node's error itself); each failure of the history has the
    // client's error as its cause.
    assert.equal(err.errors.length, 3);
    assert.equal(err.errors.at(-1).cause, err);
    assert.ok(err.errors.every((e) => e.connect === true && e.cause !== undefined));
    assert.equal(events.filter((e) => e.kind === 'retrying').length, 2);
    assert.equal(require('../lib/metrics').errorType(events.at(-1).error), 'ECONNREFUSED');
  });

  test(`${name}: ?token=abc&X-Amz-Signature=def and redactQuery keys never reach events or error messages`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const { retrier, events } = fast({ maxAttempts: 2 });
    const request = make(retrier, { redactQuery: ['session'] });
    const signed = `${s.script([503])}?token=abc&X-Amz-Signature=def&session=ghi&x=1`;
    assert.equal((await request(signed)).status, 503);
    const refused = `http://127.0.0.1:${await closedPort()}/x?token=abc&X-Amz-Signature=def&session=ghi`;
    const err = await request(refused).then(() => assert.fail('resolved'), (e) => e);
    const texts = [
      ...events.map((e) => `${e.kind} ${e.error}`),
      ...events.map((e) => String(e.error?.url)),
      String(err), err.message, ...err.errors.map((e) => `${e} ${e.url}`),
    ];
    assert.ok(texts.some((x) => x.includes('token=REDACTED')), texts.join('\n'));
    for (const text of texts) {
      assert.ok(!text.includes('abc') && !text.includes('def') && !text.includes('ghi'), text);
    }
  });

  test(`${name}: the attempt's bound (attemptTimeoutMs) cuts a slow GET, sent again; a slow POST is not`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const { retrier, events } = fast({ attemptTimeoutMs: 300 });
    const url = s.script([['slow', 3000], 200]);
    const t0 = performance.now();
    assert.equal((await make(retrier)(url)).status, 200);
    assert.equal(s.hits(url), 2);
    assert.ok(performance.now() - t0 < 2500, `${performance.now() - t0} ms: the first attempt was cut at its bound`);
    assert.equal(events.filter((e) => e.kind === 'retrying').length, 1);
    const post = s.script([['slow', 3000], 200]);
    await assert.rejects(make(retrier)(post, { method: 'POST', body: 'pay' }));
    assert.equal(s.hits(post), 1);
  });

  test(`${name}: an attempt cut at its bound costs an AWS quota a timeout's 10 per retry`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    // 25 tokens: two retries at 10 leave 5, too few for a third (at 5 each, four retries
    // would fit and the call would run out of attempts instead).
    const quota = RetryBudget.quota({ capacity: 25 });
    const { retrier, events } = fast({ attemptTimeoutMs: 100, maxAttempts: 5, budget: quota });
    const url = s.script([['slow', 3000]]);
    const err = await make(retrier)(url).then((res) => assert.fail(`resolved ${res.status}`), (e) => e);
    assert.equal(err.reason, 'budget', `${err?.name}: ${err?.message}`);
    assert.equal(err.attempts, 3);
    assert.equal(quota.tokens, 5);
    assert.equal(s.hits(url), 3);
    assert.equal(events.filter((e) => e.kind === 'retrying').length, 2);
  });

  test(`${name}: the client's own timeout costs an AWS quota a timeout's 10 per retry`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const quota = RetryBudget.quota({ capacity: 25 });
    // No attemptTimeoutMs: only the client's timeout ends each attempt.
    const { retrier } = fast({ maxAttempts: 5, budget: quota });
    const url = s.script([['slow', 3000]]);
    const err = await make(retrier)(url, { timeoutMs: 100 }).then((res) => assert.fail(`resolved ${res.status}`), (e) => e);
    assert.equal(err.reason, 'budget', `${err?.name}: ${err?.message}`);
    assert.equal(err.attempts, 3);
    assert.equal(quota.tokens, 5);
    assert.equal(s.hits(url), 3);
  });

  test(`${name}: 200 retried calls leave no sockets or memory behind`, async (t) => {
    const s = await startServer();
    t.after(() => s.close());
    const { retrier } = fast();
    const request = make(retrier);
    const run = async (n) => {
      for (let i = 0; i < n; i++) {
        const url = s.script([503, 200]);
        assert.equal((await request(url)).status, 200);
      }
    };
    await run(20); // warm up
    globalThis.gc?.();
    const before = process.memoryUsage().heapUsed;
    await run(200);
    globalThis.gc?.();
    const grown = process.memoryUsage().heapUsed - before;
    // Keep-alive: the 400 requests reuse a few connections.
    assert.ok(s.stats.accepted <= 10, `${s.stats.accepted} connections for 440 requests`);
    assert.ok(s.stats.open <= 10, `${s.stats.open} connections open`);
    assert.ok(grown < 32 * 1024 * 1024, `heap grew by ${grown} bytes`);
  });
}

module.exports = { scenarios, fast, startCuttingTlsServer };
