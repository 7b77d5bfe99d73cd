'use strict';
// retryrs/axios on the scripted server: the issue 23 scenarios, then axios specifics.
const test = require('node:test');
const assert = require('node:assert/strict');
const https = require('node:https');
const axios = require('axios');
const { Retrier } = require('retryrs');
const { retryAxios } = require('retryrs/axios');
const { scenarios, fast } = require('./http-scenarios');
const { startServer } = require('./http-server');

/** An instance with retries; a request resolves with { status } for any response. */
function make(retrier, options = {}) {
  const instance = axios.create();
  retryAxios(instance, { retrier, ...options });
  return (url, { method = 'GET', body, headers, retry, ca, timeoutMs } = {}) => instance.request({
    url, method, data: body, headers, retry,
    ...(timeoutMs !== undefined ? { timeout: timeoutMs } : {}),
    ...(ca ? { httpsAgent: new https.Agent({ ca }) } : {}),
  }).then(
    (res) => ({ status: res.status }),
    (err) => {
      if (axios.isAxiosError(err) && err.response) return { status: err.response.status };
      throw err;
    },
  );
}

scenarios({ name: 'axios', make, isClientError: (err) => axios.isAxiosError(err) && err instanceof axios.AxiosError });

test('axios: a status failure out of retries rejects with the AxiosError carrying the last response', async (t) => {
  const s = await startServer();
  t.after(() => s.close());
  const instance = axios.create();
  retryAxios(instance, { retrier: fast({ maxAttempts: 2 }).retrier });
  const url = s.script([503]);
  const err = await instance.get(url).then(() => assert.fail('resolved'), (e) => e);
  assert.ok(axios.isAxiosError(err));
  assert.equal(err.response.status, 503);
  assert.equal(err.response.data, 'HTTP 503 body');
  assert.equal(s.hits(url), 2);
});

test('axios: validateStatus still decides what rejects; interceptors run once per request', async (t) => {
  const s = await startServer();
  t.after(() => s.close());
  const instance = axios.create({ validateStatus: () => true });
  let requests = 0;
  instance.interceptors.request.use((c) => {
    requests++;
    return c;
  });
  const uninstall = retryAxios(instance, { retrier: fast().retrier });
  const url = s.script([503, 200]);
  assert.equal((await instance.get(url)).status, 200);
  assert.equal(s.hits(url), 2);
  assert.equal(requests, 1);
  assert.throws(() => retryAxios(instance), /already installed/);
  uninstall();
  const once = s.script([503, 200]);
  assert.equal((await instance.get(once)).status, 503);
});

test('axios: retrier hooks the helper cannot honour are refused by name', () => {
  assert.throws(() => retryAxios(axios.create(), { retrier: new Retrier({ shouldRetry: () => true }) }), /shouldRetry/);
  assert.throws(() => retryAxios(axios.create(), { retrier: new Retrier({ shouldRetryResult: () => true }) }), /shouldRetryResult/);
  assert.throws(() => retryAxios(axios.create(), { retrier: new Retrier({ retryAfterMs: () => 1 }) }), /retryAfterMs/);
  assert.throws(() => retryAxios(axios.create(), { redactQuery: ['a=b'] }), /redactQuery/);
  assert.throws(() => retryAxios(axios.create(), { retries: 3 }), /unknown option 'retries'/);
  assert.throws(() => retryAxios({}), /axios instance/);
});

test('axios: the caller\'s abort during a wait rejects with axios\'s CanceledError', async (t) => {
  const s = await startServer();
  t.after(() => s.close());
  const instance = axios.create();
  retryAxios(instance, { retrier: new Retrier({ initialDelayMs: 5000, jitter: 'none' }) });
  const url = s.script([503, 200]);
  const c = new AbortController();
  const p = instance.get(url, { signal: c.signal });
  setTimeout(() => c.abort(), 100);
  const err = await p.then(() => assert.fail('resolved'), (e) => e);
  assert.ok(axios.isCancel(err), String(err));
  assert.equal(s.hits(url), 1);
});

test('retryrs and its HTTP subpaths load without axios, undici or got; retryAxios says what to install', () => {
  const { spawnSync } = require('node:child_process');
  const path = require('node:path');
  const root = path.join(__dirname, '..');
  const code = `
const Module = require('node:module');
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request === 'axios' || request === 'got' || request === 'undici') {
    throw Object.assign(new Error("Cannot find module '" + request + "'"), { code: 'MODULE_NOT_FOUND' });
  }
  return resolve.call(this, request, ...rest);
};
require(${JSON.stringify(root)});
require(${JSON.stringify(root)} + '/lib/undici.js').retryInterceptor();
require(${JSON.stringify(root)} + '/lib/got.js').retryGot();
try {
  require(${JSON.stringify(root)} + '/lib/axios.js').retryAxios({ defaults: {}, getUri: () => '' });
} catch (e) {
  console.log(e.message);
}
`;
  const res = spawnSync(process.execPath, ['-e', code], { encoding: 'utf8' });
  assert.equal(res.status, 0, res.stderr);
  assert.equal(res.stdout.trim(), 'retryrs/axios needs the optional peer dependency axios: npm install axios');
});
