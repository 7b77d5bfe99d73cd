'use strict';
// The seed scenario against a real local HTTP server (node:http) through fetch:
// 503, 503, 429 with Retry-After: 1, then 200 gives the rate on attempt 4, the third wait
// at least 1,000 ms. Plus the Retry-After parser and the status helper.
const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const https = require('node:https');
const { Retrier, parseRetryAfter, isRetryableStatus, classifyHttp, isTransientError, RETRYABLE_STATUSES } = require('..');

class HttpStatusError extends Error {
  constructor(status, retryAfterMs) {
    super(`HTTP ${status}`);
    this.status = status;
    this.retryAfterMs = retryAfterMs;
  }
}

function flakyServer(script) {
  const hits = [];
  const server = http.createServer((req, res) => {
    const [status, retryAfter] = script[Math.min(hits.length, script.length - 1)];
    hits.push(performance.now());
    const headers = { 'content-type': 'text/plain' };
    if (retryAfter !== undefined) headers['retry-after'] = retryAfter;
    res.writeHead(status, headers);
    res.end(status === 200 ? 'EUR/USD 1.0842' : 'try later');
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, hits, url: `http://127.0.0.1:${server.address().port}/s1/rates/EURUSD` })));
}

test('seed scenario: 503, 503, 429 (Retry-After: 1), 200 -> the rate on attempt 4, third wait >= 1000 ms', async (t) => {
  const { server, hits, url } = await flakyServer([[503], [503], [429, '1'], [200]]);
  t.after(() => server.close());
  const events = [];
  const rates = new Retrier({
    name: 'rates',
    seed: 42,
    shouldRetry: (err) => (err instanceof HttpStatusError ? isRetryableStatus(err.status) : isTransientError(err)),
    onEvent: (e) => events.push(e),
  });
  const rate = await rates.call(async (ctx) => {
    const res = await fetch(url, { signal: ctx.signal });
    const body = await res.text();
    if (res.status !== 200) throw new HttpStatusError(res.status, parseRetryAfter(res.headers.get('retry-after')));
    return body;
  });
  assert.equal(rate, 'EUR/USD 1.0842');
  assert.equal(hits.length, 4);
  const success = events.at(-1);
  assert.deepEqual([success.kind, success.attempt], ['success', 4]);
  const waits = events.filter((e) => e.kind === 'retrying').map((e) => e.delayMs);
  assert.equal(waits.length, 3);
  assert.ok(waits[0] <= 200 && waits[1] <= 400, `backoff within its ceilings: ${waits}`);
  assert.ok(waits[2] >= 1000, `the third wait honours Retry-After: ${waits[2]}`);
  assert.ok(hits[3] - hits[2] >= 1000 - 1, `the server saw the 4th request ${hits[3] - hits[2]} ms after the 3rd`);
  const failures = events.filter((e) => e.kind === 'attempt_failed').map((e) => e.error.status);
  assert.deepEqual(failures, [503, 503, 429]);
});

test('a permanent HTTP status is not retried', async (t) => {
  const { server, hits, url } = await flakyServer([[404]]);
  t.after(() => server.close());
  const r = new Retrier({ shouldRetry: (err) => err instanceof HttpStatusError && isRetryableStatus(err.status) });
  await assert.rejects(r.call(async () => {
    const res = await fetch(url);
    await res.arrayBuffer();
    throw new HttpStatusError(res.status);
  }), { message: 'HTTP 404' });
  assert.equal(hits.length, 1);
});

test('a refused connection is transient by default (fetch failed, ECONNREFUSED)', async () => {
  const { server, url } = await flakyServer([[200]]);
  await new Promise((resolve) => server.close(resolve)); // nobody listens there now
  const r = new Retrier({ maxAttempts: 2, initialDelayMs: 0, maxDelayMs: 0 });
  const err = await r.call(() => fetch(url)).catch((e) => e);
  assert.equal(err.name, 'RetryExhaustedError');
  assert.equal(err.attempts, 2);
  assert.equal(err.cause.message, 'fetch failed');
});

test('an untrusted certificate is permanent by default: fetch and https.get, one attempt, the client\'s error', async (t) => {
  const { startCuttingTlsServer } = require('./http-scenarios');
  const s = await startCuttingTlsServer();
  t.after(() => s.close());
  const r = new Retrier({ maxAttempts: 3, initialDelayMs: 0, maxDelayMs: 0 });
  const fetched = await r.call(() => fetch(s.url)).catch((e) => e);
  assert.equal(fetched.message, 'fetch failed');
  assert.equal(fetched.cause.code, 'DEPTH_ZERO_SELF_SIGNED_CERT');
  assert.equal(s.connections(), 1);
  const got = await r.call(() => new Promise((resolve, reject) => {
    https.get(s.url, { agent: false }, resolve).on('error', reject);
  })).catch((e) => e);
  assert.equal(got.code, 'DEPTH_ZERO_SELF_SIGNED_CERT');
  assert.equal(s.connections(), 2);
});

test('failureOf: a certificate that fails verification is no network failure; other TLS failures in a handshake are a failed connect', () => {
  const { failureOf } = require('../lib/http-common');
  const coded = (code) => Object.assign(new Error(code), { code });
  for (const code of ['UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'CERT_HAS_EXPIRED',
    'CERT_NOT_YET_VALID', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'CERT_REVOKED',
    'HOSTNAME_MISMATCH', 'ERR_TLS_CERT_ALTNAME_INVALID', 'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA']) {
    assert.equal(failureOf(coded(code), true), undefined, code);
    assert.equal(failureOf(coded(code), false), undefined, code);
    assert.equal(failureOf(new TypeError('fetch failed', { cause: coded(code) }), true), undefined, `fetch: ${code}`);
  }
  for (const code of ['ERR_TLS_HANDSHAKE_TIMEOUT', 'ERR_SSL_WRONG_VERSION_NUMBER', 'ERR_SSL_UNEXPECTED_EOF_WHILE_READING']) {
    assert.equal(failureOf(coded(code), true), 'connect', code);
    assert.equal(failureOf(coded(code), false), 'network', code);
  }
  assert.equal(failureOf(coded('ECONNRESET'), true), 'network');
  assert.equal(failureOf(coded('ECONNREFUSED'), false), 'connect');
});

test('parseRetryAfter: seconds and HTTP-dates in ms, no hint as undefined, huge values saturate', () => {
  const now = Date.UTC(1994, 10, 6, 8, 49, 37);
  assert.equal(parseRetryAfter('120'), 120_000);
  assert.equal(parseRetryAfter(' 7 '), 7000);
  assert.equal(parseRetryAfter('Sun, 06 Nov 1994 08:50:37 GMT', now), 60_000);
  assert.equal(parseRetryAfter('Sunday, 06-Nov-94 08:50:37 GMT', new Date(now)), 60_000);
  assert.equal(parseRetryAfter('Sun Nov  6 08:50:37 1994', now), 60_000);
  assert.equal(parseRetryAfter('Sun, 06 Nov 1994 08:40:37 GMT', now), 0);
  for (const bad of ['-5', '1.5', 'soon', '']) assert.equal(parseRetryAfter(bad, now), undefined, bad);
  assert.equal(parseRetryAfter(null), undefined);
  assert.equal(parseRetryAfter(undefined), undefined);
  assert.ok(parseRetryAfter('99999999999999999999999999') >= 1e15);
  assert.throws(() => parseRetryAfter(120), TypeError);
  assert.throws(() => parseRetryAfter('1', 'now'), TypeError);
  assert.throws(() => parseRetryAfter('1', NaN), RangeError);
});

test('isRetryableStatus: 408, 425, 429, 500, 502, 503, 504 and nothing else', () => {
  assert.deepEqual([...RETRYABLE_STATUSES], [408, 425, 429, 500, 502, 503, 504]);
  for (let s = 100; s < 600; s++) assert.equal(isRetryableStatus(s), RETRYABLE_STATUSES.includes(s), String(s));
  for (const odd of ['503', 503.5, -503, NaN, undefined, 70000]) assert.equal(isRetryableStatus(odd), false, String(odd));
});

test('classifyHttp: the core rule, and bad input named', () => {
  assert.equal(classifyHttp({ method: 'GET', status: 503 }), 'retry');
  assert.equal(classifyHttp({ method: 'POST', status: 503 }), 'response');
  assert.equal(classifyHttp({ method: 'POST', failure: 'connect' }), 'retry');
  assert.equal(classifyHttp({ method: 'POST', failure: 'network' }), 'fail');
  assert.equal(classifyHttp({ method: 'post', status: 503, retryMethods: ['POST'] }), 'retry');
  assert.equal(classifyHttp({ method: 'GET', status: 409, retryStatuses: [409] }), 'retry');
  assert.throws(() => classifyHttp(), /request must be an object/);
  assert.throws(() => classifyHttp({ method: 'GET' }), /exactly one of status or failure/);
  assert.throws(() => classifyHttp({ method: 'GET', status: 503, failure: 'connect' }), /exactly one of status or failure/);
  assert.throws(() => classifyHttp({ method: 'GET', failure: 'dns' }), RangeError);
  assert.throws(() => classifyHttp({ method: 'GET', status: 503.5 }), RangeError);
  assert.throws(() => classifyHttp({ method: 1, status: 503 }), TypeError);
  assert.throws(() => classifyHttp({ method: 'GET', status: 503, retryMethods: 'GET' }), TypeError);
  assert.throws(() => classifyHttp({ method: 'GET', status: 503, retryStatuses: [-1] }), TypeError);
});

test('classifyHttp: an Idempotency-Key makes a POST or PATCH repeatable (the core\'s rule), unless turned off', () => {
  assert.equal(classifyHttp({ method: 'POST', status: 503 }), 'response');
  assert.equal(classifyHttp({ method: 'POST', status: 503, idempotencyKey: 'k-1' }), 'retry');
  assert.equal(classifyHttp({ method: 'PATCH', failure: 'network', idempotencyKey: 'k-1' }), 'retry');
  assert.equal(classifyHttp({ method: 'POST', status: 503, idempotencyKey: '  ' }), 'response');
  assert.equal(classifyHttp({ method: 'POST', status: 503, idempotencyKey: 'k-1', honourIdempotencyKey: false }), 'response');
  assert.throws(() => classifyHttp({ method: 'POST', status: 503, idempotencyKey: 1 }), /idempotencyKey must be/);
});
