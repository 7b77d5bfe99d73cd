// The ES module entry point: named and default exports, the same classes (and so the same
// addon and virtual clock) as the CommonJS entry point, resolved through package "exports".
import test from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import retryrs, { Retrier, RetryExhaustedError, RetryBudget, parseRetryAfter, isRetryableStatus, testing } from 'retryrs';
import * as namespace from 'retryrs';

const require = createRequire(import.meta.url);

test('ESM and CommonJS entry points export the same objects', () => {
  const cjs = require('retryrs');
  assert.equal(Retrier, cjs.Retrier);
  assert.equal(RetryExhaustedError, cjs.RetryExhaustedError);
  assert.equal(RetryBudget, cjs.RetryBudget);
  assert.equal(testing, cjs.testing);
  assert.equal(retryrs, cjs);
  assert.deepEqual(Object.keys(retryrs).sort(), Object.keys(cjs).sort());
});

test('every CommonJS export is a named ESM export too (index.mjs lists them by hand)', () => {
  const cjs = require('retryrs');
  const named = Object.keys(namespace).filter((k) => k !== 'default');
  assert.deepEqual(named.sort(), Object.keys(cjs).sort());
  for (const k of named) assert.equal(namespace[k], cjs[k], k);
});

test('a call works through the ESM entry point', async () => {
  let n = 0;
  const r = new Retrier({ initialDelayMs: 0, maxDelayMs: 0 });
  const v = await r.call(() => {
    if (++n < 2) throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
    return 'from esm';
  });
  assert.equal(v, 'from esm');
  assert.equal(parseRetryAfter('2'), 2000);
  assert.equal(isRetryableStatus(503), true);
});

test('the HTTP helpers\' subpaths import as ES modules, with named exports', async () => {
  const { retryAxios } = await import('retryrs/axios');
  const { retryInterceptor } = await import('retryrs/undici');
  const { retryGot } = await import('retryrs/got');
  const { FinalStatusError } = await import('retryrs/fetch');
  assert.equal(retryAxios, require('retryrs/axios').retryAxios);
  assert.equal(typeof retryInterceptor, 'function');
  assert.equal(typeof retryGot, 'function');
  assert.equal(FinalStatusError, require('retryrs/fetch').FinalStatusError);
});

test('retryrs/propagation imports as an ES module: the same functions and the same context store', async () => {
  const esm = await import('retryrs/propagation');
  const cjs = require('retryrs/propagation');
  for (const name of ['middleware', 'wrap', 'run', 'current', 'PropagationContext']) assert.equal(esm[name], cjs[name], name);
  assert.equal(esm.default, cjs);
  assert.equal(esm.run({ retry: true }, () => cjs.current().retry), true);
});
