'use strict';
// lib/http-body.js's rule at the edges the shared HTTP cases (tests/http) do not reach: a
// caller that stops reading a handed-over body is not failed for the server's silence
// (it is the caller who is silent), and a body that is read again after the pause ends
// whole.
const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const undici = require('undici');
const { Retrier } = require('..');
const { retryingFetch } = require('../lib/fetch');
const { retryInterceptor } = require('../lib/undici');

const SIZE = 8 * 1024 * 1024;

async function bigBodyServer(t) {
  const chunk = Buffer.alloc(64 * 1024, 'b');
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-length': SIZE });
    let sent = 0;
    const pump = () => {
      while (sent < SIZE) {
        sent += chunk.length;
        if (!res.write(chunk)) return res.once('drain', pump);
      }
      return res.end();
    };
    pump();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return `http://127.0.0.1:${server.address().port}/`;
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function readPausing(iterable) {
  let n = 0;
  let paused = false;
  for await (const c of iterable) {
    n += c.length ?? c.byteLength;
    if (!paused) {
      paused = true;
      // Three times the attempt timeout without asking for a byte.
      await pause(900);
    }
  }
  return n;
}

test('retryingFetch: a caller that pauses reading longer than attemptTimeoutMs still reads the body whole', async (t) => {
  const url = await bigBodyServer(t);
  const f = retryingFetch({ retrier: new Retrier({ attemptTimeoutMs: 300, deadlineMs: 1000 }) });
  const res = await f(url);
  assert.equal(await readPausing(res.body), SIZE);
});

test('undici interceptor: a caller that pauses reading longer than attemptTimeoutMs still reads the body whole', async (t) => {
  const url = await bigBodyServer(t);
  const dispatcher = new undici.Agent().compose(retryInterceptor({ retrier: new Retrier({ attemptTimeoutMs: 300, deadlineMs: 1000 }) }));
  t.after(() => dispatcher.close());
  const res = await undici.request(url, { dispatcher });
  assert.equal(await readPausing(res.body), SIZE);
});

// A body that arrived whole with its headers cannot fall silent: retryingFetch hands over
// fetch's own response (no second stream to forward it); one still arriving is watched.
async function oneServer(t, handler) {
  const server = http.createServer(handler);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return `http://127.0.0.1:${server.address().port}/`;
}

test('retryingFetch: a body that arrived whole is handed over as fetch returned it; one still arriving is forwarded and watched', async (t) => {
  const whole = await oneServer(t, (req, res) => res.end('ok'));
  let trickle;
  const flowing = await oneServer(t, (req, res) => {
    res.writeHead(200, { 'content-length': 4 });
    res.write('ok');
    trickle = setTimeout(() => res.end('ok'), 200);
  });
  t.after(() => clearTimeout(trickle));
  let given;
  const fetch = async (url, init) => (given = await undici.fetch(url, init));
  const f = retryingFetch({ fetch, retrier: new Retrier({ attemptTimeoutMs: 1000, deadlineMs: 2000 }) });
  const a = await f(whole);
  assert.equal(a, given);
  assert.equal(await a.text(), 'ok');
  const b = await f(flowing);
  assert.notEqual(b, given);
  assert.equal(b.status, 200);
  assert.equal(await b.text(), 'okok');
});
