'use strict';
// The propagation vectors (tests/conformance/propagation.json; the body is described in
// tests/conformance/README.md) for conformance.test.js, through what Node's helpers run:
// a request's headers through wrap() (its context, its counters, the upward rule's
// answer) and the addon's reading of them; a call's constraint through the addon's
// policyUnder and a Retrier call inside run(); each attempt's headers and the allowlist
// through the HTTP helpers' own functions (lib/http-propagation.js); a pushback through
// retryingFetch against a loopback server, which retries, waits or stops as it says.
const assert = require('node:assert/strict');
const http = require('node:http');
const { EventEmitter } = require('node:events');
const native = require('../lib/native');
const { Retrier, RetryExhaustedError, testing } = require('..');
const { retryingFetch } = require('../lib/fetch');
const { wrap, run, current } = require('../lib/propagation');
const { outboundOf, outboundHeaders, pushbackOf } = require('../lib/http-propagation');
const { policyParts } = require('../lib/policies');
const { DONT_RETRY } = require('../lib/codes');

const CASES = ['inbound', 'margin', 'constrain', 'outbound', 'pushback', 'upward', 'allowlist'];

/** A request as node:http hands it over, with these [name, value] headers, and its response. */
function exchange(headers) {
  const req = { rawHeaders: headers.flat(), headers: {} };
  const res = Object.assign(new EventEmitter(), {
    statusCode: 200,
    writableFinished: false,
    sent: {},
    setHeader(name, value) {
      this.sent[name.toLowerCase()] = value;
    },
    end() {
      this.writableFinished = true;
      this.emit('close');
    },
  });
  return { req, res };
}

/** One request through `handler` (a wrap()), and what the handler saw (undefined: not run). */
function receive(handler, headers) {
  const { req, res } = exchange(headers);
  let seen;
  handler(req, res);
  if (handler.lastSeen !== undefined) {
    seen = handler.lastSeen;
    handler.lastSeen = undefined;
  }
  return { res, seen };
}

/** A wrap() whose handler keeps the context it ran in, then ends the response. */
function server(options) {
  const handler = wrap((req, res) => {
    const c = current();
    handler.lastSeen = { remainingMs: c.remainingMs, retry: c.retry };
    res.end();
  }, options);
  return handler;
}

function limitOf(c) {
  // Absent: the default limit; null: no clamp (the helpers' `limitMs: null`).
  return 'limit_ms' in c ? { limitMs: c.limit_ms } : {};
}

function checkInbound(c, expect) {
  // The addon's reading, as the vectors state it.
  const read = native.propagationReadInbound(c.headers, c.limit_ms === null ? Infinity : c.limit_ms ?? undefined, c.trust_mesh ?? false);
  assert.deepEqual(
    { budget_ms: read.budgetMs ?? null, is_retry: read.isRetry, clamped: read.clamped, malformed: read.malformed },
    expect,
  );
  // And the server helper's: its context and its counters.
  const handler = server({ ...limitOf(c), trustMesh: c.trust_mesh ?? false, observeOnly: true });
  const { seen } = receive(handler, c.headers);
  assert.ok(seen !== undefined, 'the handler ran');
  assert.equal(seen.retry, expect.is_retry);
  if (expect.budget_ms === null) assert.equal(seen.remainingMs, null);
  else assert.ok(seen.remainingMs <= expect.budget_ms && seen.remainingMs >= expect.budget_ms - 50, `remainingMs ${seen.remainingMs}`);
  const stats = handler.stats();
  assert.equal(stats.malformed, expect.malformed);
  assert.equal(stats.clamped, expect.clamped ? 1 : 0);
}

async function checkConstrain(v, c, expect, policyOf) {
  const policy = policyOf(v);
  const under = native.policyUnder(policyParts(policy).handle, c.left_ms, c.is_retry) ?? null;
  assert.equal(under !== null, expect.changed, 'changed');
  const handle = under ?? policyParts(policy).handle;
  assert.equal(handle.number('deadline'), expect.deadline_ms);
  assert.equal(handle.number('max_attempts'), expect.max_attempts);
  if (expect.deadline_ms === 0) return;
  // And a call inside such a context, on virtual time (the context's clock is the
  // calls'): its first attempt's bound, exactly, and its attempts (every one failing at
  // once, the policy waiting 0 ms).
  const r = Retrier.fromPolicy(policy);
  const bounds = [];
  const err = await testing.scoped(() => run({ remainingMs: c.left_ms, retry: c.is_retry }, () => r.call((ctx) => {
    bounds.push(ctx.remainingMs);
    throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
  }))).then(() => null, (e) => e);
  assert.ok(err instanceof RetryExhaustedError, `${err}`);
  assert.equal(err.attempts, expect.max_attempts);
  assert.equal(bounds[0], expect.deadline_ms, 'the first attempt\'s bound');
}

function checkOutbound(c, expect) {
  const out = outboundOf('conformance', { mesh: c.mesh, kind: c.kind });
  const ctx = { remainingMs: c.left_ms, attempt: c.attempt };
  const flat = run({ retry: c.is_retry }, () => outboundHeaders(out, 'https://api.example.com/', ctx)) ?? [];
  const pairs = [];
  for (let i = 0; i < flat.length; i += 2) pairs.push([flat[i], flat[i + 1]]);
  assert.deepEqual(pairs, expect.headers);
}

function checkAllowlist(c, expect) {
  const out = outboundOf('conformance', c.hosts === null ? true : { hosts: c.hosts });
  const sent = outboundHeaders(out, `https://${c.host}/`, { remainingMs: 1000, attempt: 1 });
  assert.equal(sent !== null, expect.allows);
}

/** A loopback server whose first answer has `status` and `headers`, then 200s. */
async function firstAnswer(status, headers) {
  let hits = 0;
  const s = http.createServer((req, res) => {
    hits += 1;
    res.writeHead(hits === 1 ? status : 200, { 'content-length': '0', ...(hits === 1 ? Object.fromEntries(headers) : {}) });
    res.end();
  });
  await new Promise((resolve) => s.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${s.address().port}/`,
    hits: () => hits,
    close: () => {
      s.closeAllConnections();
      return new Promise((resolve) => s.close(resolve));
    },
  };
}

async function checkPushback(c, expect) {
  const read = pushbackOf(c.headers);
  assert.deepEqual(read === DONT_RETRY ? 'dont_retry' : read ?? null, expect.pushback);
  // What retryingFetch makes of it: a response the rules retry (503) or hand back (200).
  const s = await firstAnswer(c.verdict === 'retry' ? 503 : 200, c.headers);
  try {
    const delays = [];
    const retrier = new Retrier({ initialDelayMs: 7, jitter: 'none', maxAttempts: 2, onEvent: (e) => e.kind === 'retrying' && delays.push(e.delayMs) });
    const res = await retryingFetch({ retrier })(s.url);
    await res.arrayBuffer();
    if (expect.verdict === 'retry') {
      assert.equal(s.hits(), 2, 'retried');
      if (expect.wait_ms !== null) assert.deepEqual(delays, [expect.wait_ms], 'the exact wait');
    } else {
      assert.equal(s.hits(), 1, 'one attempt');
      assert.equal(res.status, c.verdict === 'retry' || expect.verdict === 'dont_retry' ? 503 : 200);
      if (expect.verdict === 'dont_retry') assert.equal(retrier.stats().successes, 0, 'counted a failure');
    }
  } finally {
    await s.close();
  }
}

function checkUpward(c, expect) {
  const handler = server({ observeOnly: c.observe_only });
  const answers = c.requests.map((headers) => {
    const before = handler.stats();
    const { res, seen } = receive(handler, headers);
    const after = handler.stats();
    if (after.refused > before.refused) {
      assert.equal(seen, undefined, 'a refused request does not run the handler');
      assert.equal(res.statusCode, 504);
      assert.equal(res.sent['retryrs-pushback'], '-1');
      return 'refuse';
    }
    assert.ok(seen !== undefined, 'the handler ran');
    if (after.observed > before.observed) return 'observed';
    if (after.capped > before.capped) return 'capped';
    return 'run';
  });
  assert.deepEqual(answers, expect.upward);
}

/** Checks one propagation vector; `policyOf` loads a vector's policy (conformance.test.js). */
async function checkPropagationVector(v, policyOf) {
  const body = v.propagation;
  const kinds = Object.keys(body).filter((k) => k !== 'expect');
  assert.equal(kinds.length, 1, `one case per vector, got ${kinds.join(', ')}`);
  const [kind] = kinds;
  if (!CASES.includes(kind)) throw new Error(`unknown propagation case ${kind}`);
  const c = body[kind];
  const expect = body.expect;
  switch (kind) {
    case 'inbound': return checkInbound(c, expect);
    case 'margin': return assert.equal(native.propagationMarginMs(c.left_ms), expect.margin_ms);
    case 'constrain': return checkConstrain(v, c, expect, policyOf);
    case 'outbound': return checkOutbound(c, expect);
    case 'pushback': return checkPushback(c, expect);
    case 'upward': return checkUpward(c, expect);
    default: return checkAllowlist(c, expect);
  }
}

module.exports = { checkPropagationVector };
