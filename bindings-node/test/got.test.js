'use strict';
// retryrs/got: got.extend(retryGot(...)) on the issue 23 scenarios, then got specifics.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Readable } = require('node:stream');
const { Retrier } = require('retryrs');
const { retryGot } = require('retryrs/got');
const { scenarios, fast } = require('./http-scenarios');
const { startServer } = require('./http-server');

let gotModule;
test.before(async () => {
  gotModule = await import('got');
});

/** A got instance with retries; a request resolves with { status } for any response. */
function make(retrier, options = {}) {
  return async (url, { method = 'GET', body, headers, retry, ca, timeoutMs } = {}) => {
    const client = gotModule.default.extend(retryGot({ retrier, ...options }));
    const gotRetry = retry === undefined ? undefined : {
      ...(retry.limit !== undefined ? { limit: retry.limit - 1 } : {}),
      ...(retry.methods !== undefined ? { methods: retry.methods } : {}),
      ...(retry.statuses !== undefined ? { statusCodes: retry.statuses } : {}),
    };
    // got's retry option has no such field: the request's context.retry carries it.
    const context = retry?.idempotencyKey !== undefined ? { context: { retry: { idempotencyKey: retry.idempotencyKey } } } : {};
    const res = await client(url, {
      method, body, headers, throwHttpErrors: false, ...context,
      ...(gotRetry ? { retry: gotRetry } : {}),
      ...(ca ? { https: { certificateAuthority: ca } } : {}),
      ...(timeoutMs !== undefined ? { timeout: { request: timeoutMs } } : {}),
    });
    return { status: res.statusCode };
  };
}

scenarios({
  name: 'got',
  make,
  isClientError: (err) => err instanceof gotModule.RequestError,
});

test('got: out of retries on a status, HTTPError with the last response; .json() still works', async (t) => {
  const s = await startServer();
  t.after(() => s.close());
  const client = gotModule.default.extend(retryGot({ retrier: fast({ maxAttempts: 2 }).retrier }));
  const url = s.script([503]);
  const err = await client(url).then(() => assert.fail('resolved'), (e) => e);
  assert.ok(err instanceof gotModule.HTTPError);
  assert.equal(err.response.statusCode, 503);
  assert.equal(s.hits(url), 2);
  const ok = s.script([503, 200]);
  assert.equal(await client(ok).text(), 'ok');
  assert.equal(s.hits(ok), 2);
});

test('got: a streamed body is sent once', async (t) => {
  const s = await startServer();
  t.after(() => s.close());
  const { retrier, events } = fast();
  const client = gotModule.default.extend(retryGot({ retrier }));
  const url = s.script([503, 200]);
  const res = await client.put(url, { body: Readable.from(['a', 'b']), throwHttpErrors: false });
  assert.equal(res.statusCode, 503);
  assert.equal(s.hits(url), 1);
  assert.equal(events.at(-1).kind, 'rejected');
});

test('got: retrier hooks the helper cannot honour are refused by name', () => {
  assert.throws(() => retryGot({ retrier: new Retrier({ retryAfterMs: () => 1 }) }), /retryAfterMs/);
  assert.throws(() => retryGot({ limit: 2 }), /unknown option 'limit'/);
});

test('got: the attempt\'s bound (attemptTimeoutMs) bounds got\'s request: a slow GET is sent again', async (t) => {
  const s = await startServer();
  t.after(() => s.close());
  const { retrier, events } = fast({ attemptTimeoutMs: 200 });
  const client = gotModule.default.extend(retryGot({ retrier }));
  const url = s.script([['slow', 2000], 200]);
  const res = await client(url);
  assert.equal(res.statusCode, 200);
  assert.equal(s.hits(url), 2);
  assert.equal(events.filter((e) => e.kind === 'retrying').length, 1);
});

test('got: a request cancelled during the wait ends its retrier call (cancelled), nothing left pending', async (t) => {
  const s = await startServer();
  t.after(() => s.close());
  const events = [];
  const retrier = new Retrier({ initialDelayMs: 300, jitter: 'none', onEvent: (e) => events.push(e) });
  const client = gotModule.default.extend(retryGot({ retrier }));
  const url = s.script([503, 200]);
  const p = client(url);
  await new Promise((r) => setTimeout(r, 100));
  p.cancel();
  await assert.rejects(p, (err) => err instanceof gotModule.CancelError);
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(events.at(-1).kind, 'cancelled');
  await new Promise((r) => setTimeout(r, 400));
  assert.equal(s.hits(url), 1);
});

test('got: a request\'s context.retry carries the per-request options got\'s retry has no room for', async (t) => {
  const s = await startServer();
  t.after(() => s.close());
  const { retrier } = fast();
  const client = gotModule.default.extend(retryGot({ retrier }));
  const keyed = s.script([503, 200]);
  const on = await client(keyed, { method: 'POST', body: 'pay', headers: { 'Idempotency-Key': 'k-1' }, throwHttpErrors: false });
  assert.equal(on.statusCode, 200);
  assert.equal(s.hits(keyed), 2, 'a keyed POST is resent by default');
  const off = s.script([503, 200]);
  const res = await client(off, { method: 'POST', body: 'pay', headers: { 'Idempotency-Key': 'k-2' }, throwHttpErrors: false, context: { retry: { idempotencyKey: false } } });
  assert.equal(res.statusCode, 503);
  assert.equal(s.hits(off), 1, 'context.retry.idempotencyKey: false sends it once');
  // got's own retry.limit counts retries, as in got: limit 2 is 3 attempts.
  const limited = s.script([503, 503, 503, 200]);
  const three = await client(limited, { throwHttpErrors: false, retry: { limit: 2 } });
  assert.equal(three.statusCode, 503);
  assert.equal(s.hits(limited), 3, 'got\'s retry.limit: 2 retries, 3 attempts');
  // context.retry.limit would count attempts: refused, naming got's option.
  assert.throws(() => client(s.script([200]), { context: { retry: { limit: 2 } } }), /context\.retry\.limit is not taken; use got's own retry\.limit, which counts retries/);
  // Checked when the request is made, as got checks its own options.
  assert.throws(() => client(s.script([200]), { context: { retry: { bogus: 1 } } }), /unknown key 'bogus'/);
});
