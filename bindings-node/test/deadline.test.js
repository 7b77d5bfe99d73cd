'use strict';
// Issue 21: the deadline bounds the whole call. Every attempt gets the engine's bound
// (ctx.remainingMs) and a signal that aborts when it passes; the call loop and
// retryingFetch end within it. Servers listen on port 0 and hang (accept and never
// answer, or stall a body) instead of relying on tight sleeps; the only timing
// assertions are the generous upper bounds (deadline + 250 ms).
const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { Retrier, RetryExhaustedError, testing } = require('retryrs');
const { retryingFetch, RequestFailedError } = require('retryrs/fetch');

const PKG = path.join(__dirname, '..');
const SLACK_MS = 250;

/** A server that accepts connections and never answers (nor closes them). */
async function silentServer() {
  const sockets = new Set();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.resume();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    port: server.address().port,
    accepted: () => sockets.size,
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A server answering 503 with headers and the start of a body that never ends. */
async function stalledBodyServer() {
  let hits = 0;
  const server = http.createServer((req, res) => {
    hits++;
    res.writeHead(503, { 'content-type': 'text/plain', 'content-length': 1 << 20 });
    res.write('x'.repeat(1000));
    // ...and nothing more: the body stalls.
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    hits: () => hits,
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

async function within(ms, promise) {
  const t0 = performance.now();
  let outcome;
  try {
    outcome = { value: await promise };
  } catch (err) {
    outcome = { error: err };
  }
  const took = performance.now() - t0;
  assert.ok(took < ms, `took ${Math.round(took)} ms, over ${ms} ms`);
  return outcome;
}

test('ctx.remainingMs is the engine\'s bound: the deadline, the attempt timeout or the smaller; null when unbounded', async () => {
  await testing.scoped(async () => {
    const seen = [];
    const fail = (ctx) => {
      seen.push([ctx.attempt, ctx.remainingMs]);
      throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
    };
    const base = { initialDelayMs: 1000, multiplier: 1, jitter: 'none', maxAttempts: 4 };
    // Deadline only: the time left, shrinking by each (virtual) wait.
    await assert.rejects(new Retrier({ ...base, deadlineMs: 5000 }).call(fail), RetryExhaustedError);
    assert.deepEqual(seen.splice(0), [[1, 5000], [2, 4000], [3, 3000], [4, 2000]]);
    // Attempt timeout only: the same bound for every attempt.
    await assert.rejects(new Retrier({ ...base, deadlineMs: null, attemptTimeoutMs: 1500 }).call(fail), RetryExhaustedError);
    assert.deepEqual(seen.splice(0), [[1, 1500], [2, 1500], [3, 1500], [4, 1500]]);
    // Both: the smaller wins (the timeout, until the time left is shorter).
    await assert.rejects(new Retrier({ ...base, deadlineMs: 3500, attemptTimeoutMs: 2000 }).call(fail), RetryExhaustedError);
    assert.deepEqual(seen.splice(0), [[1, 2000], [2, 2000], [3, 1500], [4, 500]]);
    // Neither: unbounded, on the fast path and on the loop with a signal.
    const unbounded = new Retrier({ ...base, deadlineMs: null });
    assert.equal(await unbounded.call((ctx) => ctx.remainingMs), null);
    assert.equal(await unbounded.call((ctx) => ctx.remainingMs, { signal: new AbortController().signal }), null);
    // A document's policy, and fromPolicy overriding its attempt timeout (null: none).
    const { loadPolicies } = require('retryrs');
    const doc = loadPolicies({ policies: { p: { deadline: '9s', attempt_timeout: '250ms' } } });
    assert.equal(doc.get('p').attemptTimeoutMs, 250);
    assert.equal(await Retrier.fromPolicy(doc.get('p')).call((ctx) => ctx.remainingMs), 250);
    assert.equal(await Retrier.fromPolicy(doc.get('p'), { attemptTimeoutMs: 4000 }).call((ctx) => ctx.remainingMs), 4000);
    assert.equal(await Retrier.fromPolicy(doc.get('p'), { attemptTimeoutMs: null }).call((ctx) => ctx.remainingMs), 9000);
    assert.throws(() => Retrier.fromPolicy(doc.get('p'), { attemptTimeoutMs: 0 }), /attemptTimeoutMs must be finite and > 0/);
  });
});

test('ctx.signal aborts when the bound passes (deadline or attempt timeout), and with the caller\'s signal', async () => {
  // The deadline, on the fast path (no signal): a TimeoutError, and the call ends with
  // reason deadline whatever fn does with the signal.
  let reason;
  const hang = (ctx) => {
    ctx.signal.addEventListener('abort', () => (reason = ctx.signal.reason));
    return new Promise(() => {});
  };
  let { error } = await within(5000, new Retrier({ deadlineMs: 100 }).call(hang));
  assert.ok(error instanceof RetryExhaustedError, String(error));
  assert.equal(error.reason, 'deadline');
  assert.equal(reason.name, 'TimeoutError');
  assert.equal(error.cause, reason);
  // The same through the loop (a caller's signal) and for later attempts.
  const attempts = [];
  ({ error } = await within(5000, new Retrier({ deadlineMs: 300, attemptTimeoutMs: 100, initialDelayMs: 1, jitter: 'none' }).call((ctx) => {
    attempts.push(ctx.attempt);
    return hang(ctx);
  }, { signal: new AbortController().signal })));
  assert.equal(error.reason, 'deadline');
  assert.ok(attempts.length >= 2, `attempts timed out and were retried: ${attempts}`);
  assert.match(error.errors[0].message, /attempt 1 timed out after 100 ms/);
  // A success that beats the bound is a success; a sync attempt is never interrupted.
  assert.equal(await new Retrier({ deadlineMs: 1000 }).call(async (ctx) => !ctx.signal.aborted), true);
  // The caller's abort reaches a bounded attempt's own signal at once.
  const controller = new AbortController();
  const seen = new Promise((resolve) => {
    new Retrier({ deadlineMs: 60_000 }).call((ctx) => {
      ctx.signal.addEventListener('abort', () => resolve(ctx.signal.reason));
      setImmediate(() => controller.abort(new Error('stop')));
      return new Promise(() => {});
    }, { signal: controller.signal }).catch(() => {});
  });
  assert.equal((await seen).message, 'stop');
});

test('the deadline cuts a later attempt too, whatever the attempt does with its signal (fast path and loop)', async () => {
  const reset = () => Object.assign(new Error('reset'), { code: 'ECONNRESET' });
  for (const options of [undefined, { signal: new AbortController().signal }]) {
    let n = 0;
    const r = new Retrier({ deadlineMs: 300, initialDelayMs: 1, jitter: 'none' });
    const { error } = await within(300 + 2000, r.call(() => (++n === 1 ? Promise.reject(reset()) : new Promise(() => {})), options));
    assert.ok(error instanceof RetryExhaustedError, String(error));
    assert.equal(error.reason, 'deadline');
    assert.equal(error.attempts, 2);
    assert.match(error.cause.message, /attempt 2 ran past the deadline/);
  }
});

test('later attempts the deadline bounds: sync returns and throws count, a late rejection after the cut is dropped', async () => {
  const reset = () => Object.assign(new Error('reset'), { code: 'ECONNRESET' });
  const r = new Retrier({ deadlineMs: 300, initialDelayMs: 1, jitter: 'none' });
  // Attempts 2 and 3 return synchronously (a throw, then a value): the value is the call's.
  let n = 0;
  const { value } = await within(300 + 2000, r.call((ctx) => {
    n++;
    if (n === 1) return Promise.reject(reset());
    assert.ok(ctx.remainingMs !== null && ctx.remainingMs <= 300);
    if (n === 2) throw reset();
    return `value ${n}`;
  }));
  assert.equal(value, 'value 3');
  // Attempt 2 ignores its signal and rejects after the cut: the call still ends at the
  // deadline, with the cut's TimeoutError, and the late rejection is never unhandled.
  const unhandled = [];
  const onUnhandled = (err) => unhandled.push(err);
  process.on('unhandledRejection', onUnhandled);
  try {
    let m = 0;
    let lateRejected;
    const late = new Promise((resolve) => (lateRejected = resolve));
    const { error } = await within(300 + 2000, r.call((ctx) => {
      if (++m === 1) return Promise.reject(reset());
      // Rejects after the cut (its signal aborted), whatever the machine's load.
      return new Promise((_, reject) => ctx.signal.addEventListener('abort', () => setTimeout(() => {
        reject(new Error('late'));
        lateRejected();
      }, 50)));
    }));
    assert.equal(error.reason, 'deadline');
    assert.equal(error.attempts, 2);
    assert.match(error.cause.message, /attempt 2 ran past the deadline/);
    await late;
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(unhandled, []);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});

test('an attempt cut by its attempt timeout that settles late leaves the next attempt (bound by the deadline) alone', async () => {
  // Attempt 1 hangs past attemptTimeoutMs and resolves later, during attempt 2, whose
  // bound is then the deadline (less time is left than an attempt timeout): attempt 2 is
  // the one cut, at the deadline, and attempt 1's late value is not the call's.
  const r = new Retrier({ deadlineMs: 1000, attemptTimeoutMs: 600, initialDelayMs: 1, jitter: 'none' });
  let n = 0;
  const bounds = [];
  const { error } = await within(1000 + 2000, r.call((ctx) => {
    n++;
    bounds.push(ctx.remainingMs);
    if (n === 1) {
      return new Promise((resolve) => ctx.signal.addEventListener('abort', () => setTimeout(() => resolve('late value of attempt 1'), 100)));
    }
    return new Promise(() => {});
  }));
  assert.ok(error instanceof RetryExhaustedError, String(error));
  assert.equal(error.reason, 'deadline');
  assert.equal(error.attempts, 2);
  assert.match(error.errors[0].message, /attempt 1 timed out after 600 ms/);
  assert.match(error.cause.message, /attempt 2 ran past the deadline/);
  assert.ok(bounds[1] < 600, `attempt 2's bound ${bounds[1]} should be the deadline's time left`);
});

test('a late rejection after the bound is dropped, and a hundred concurrent fast-path calls each end at their own bound', async () => {
  const r = new Retrier({ deadlineMs: 150, maxAttempts: 1 });
  const late = (ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => setTimeout(() => reject(new Error('late')), 10)));
  const results = await Promise.allSettled(Array.from({ length: 100 }, () => r.call(late)));
  for (const res of results) {
    assert.equal(res.status, 'rejected');
    assert.equal(res.reason.reason, 'deadline');
  }
  // Calls that succeed leave nothing behind: the next bound still fires.
  for (let i = 0; i < 1000; i++) await r.call(async () => i);
  const { error } = await within(5000, r.call(() => new Promise(() => {})));
  assert.equal(error.reason, 'deadline');
});

test('a server that accepts and never answers: retryingFetch and r.call end within deadline + 250 ms, reason deadline', async (t) => {
  const s = await silentServer();
  t.after(() => s.close());
  const retrier = new Retrier({ deadlineMs: 2000 });
  const bound = 2000 + SLACK_MS;
  // retryingFetch with a default retrier (deadline 2 s).
  let { error } = await within(bound, retryingFetch({ retrier })(s.url));
  assert.ok(error instanceof RetryExhaustedError, String(error));
  assert.equal(error.reason, 'deadline');
  // Out of retries on the network: fetch's own error (here the attempt's TimeoutError),
  // carrying the retry information (issue 23).
  assert.ok(error.errors.at(-1) instanceof RequestFailedError);
  // r.call with fetch given the attempt's signal...
  ({ error } = await within(bound, retrier.call((ctx) => fetch(s.url, { signal: ctx.signal }))));
  assert.equal(error.reason, 'deadline');
  // ...and with an attempt that ignores it (http.get, no signal): the loop cuts it.
  ({ error } = await within(bound, retrier.call(() => new Promise((resolve, reject) => {
    http.get(s.url, resolve).on('error', reject);
  }))));
  assert.equal(error.reason, 'deadline');
  assert.equal(error.cause.name, 'TimeoutError');
});

test('a 503 whose body stalls, attemptTimeoutMs 500, deadlineMs 2000: retryingFetch ends within 2.25 s', async (t) => {
  const s = await stalledBodyServer();
  t.after(() => s.close());
  const retrier = new Retrier({ attemptTimeoutMs: 500, deadlineMs: 2000 });
  const { value, error } = await within(2000 + SLACK_MS, retryingFetch({ retrier })(s.url));
  // Out of time on a 503: the last response (its body cut), or the exhausted error.
  if (error !== undefined) assert.ok(error instanceof RetryExhaustedError && error.reason === 'deadline', String(error));
  else assert.equal(value.status, 503);
  assert.ok(s.hits() >= 2, `the 503 was retried (${s.hits()} requests)`);
});

test('the body of the response retryingFetch resolves with fails after attemptTimeoutMs of silence (not at the bound)', async (t) => {
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 1 << 20 });
    res.write('x'.repeat(1000));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const retrier = new Retrier({ attemptTimeoutMs: 500 });
  const res = await retryingFetch({ retrier })(`http://127.0.0.1:${server.address().port}/`);
  assert.equal(res.status, 200);
  const { error } = await within(500 + SLACK_MS, res.text());
  assert.equal(error?.name, 'TimeoutError', String(error));
  assert.match(error.message, /the response body was silent for 500 ms/);
});

/** Runs `code` in a child node (cwd: the package) fed `input`; resolves with its output. */
function child(code, args = []) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['-e', code, ...args], { cwd: PKG, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('error', reject);
    p.on('close', (status) => resolve({ status, out, err }));
  });
}

test('a retried 200 MiB 503 body is not read whole: the client\'s peak RSS grows by less than 32 MB', async (t) => {
  // The server (here) streams each 503 body lazily, with backpressure; the client runs
  // in a child process that measures its own peak RSS.
  const size = 200 * 1024 * 1024;
  const chunk = Buffer.alloc(64 * 1024, 120);
  let served = 0;
  const server = http.createServer((req, res) => {
    if (req.url === '/warm') return res.end('ok');
    // The warm-up's retried 503s are small: 4 MiB.
    const total = req.url === '/big' ? size : 4 * 1024 * 1024;
    res.writeHead(503, { 'content-type': 'application/octet-stream', 'content-length': total });
    let left = total;
    const pump = () => {
      while (left > 0) {
        left -= chunk.length;
        if (total === size) served += chunk.length;
        if (!res.write(chunk)) return res.once('drain', pump);
      }
      res.end();
    };
    pump();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const base = `http://127.0.0.1:${server.address().port}`;
  const code = `
    const { Retrier } = require('.');
    const { retryingFetch } = require('./lib/fetch');
    (async () => {
      const f = retryingFetch({ retrier: new Retrier({ maxAttempts: 3, initialDelayMs: 1, jitter: 'none' }) });
      // Warm up (fetch loaded, a retried body cut): what is measured is the big body alone.
      await (await f(process.argv[1] + '/warm')).text();
      await f(process.argv[1] + '/small');
      const before = process.resourceUsage().maxRSS;
      const res = await f(process.argv[1] + '/big');
      const grew = process.resourceUsage().maxRSS - before;
      console.log(JSON.stringify({ status: res.status, grewKiB: grew }));
    })().catch((err) => { console.error(err); process.exit(1); });
  `;
  const { status, out, err } = await child(code, [base]);
  assert.equal(status, 0, err);
  const { status: httpStatus, grewKiB } = JSON.parse(out);
  assert.equal(httpStatus, 503);
  t.diagnostic(`peak RSS grew by ${grewKiB} KiB; ${served} bytes served`);
  assert.ok(grewKiB < 32 * 1000, `peak RSS grew by ${grewKiB} KiB`);
  // Three attempts, each cancelled early: far less than one body was sent.
  assert.ok(served < size, `served ${served} bytes`);
});

/**
 * A listener whose accept queue is full: a child process listens with a backlog of 1
 * and then blocks its event loop (it never accepts); connections fill the queue, so a
 * new connect hangs (the kernel drops its SYN) until something gives up on it.
 */
async function fullAcceptQueue(t) {
  const code = `
    const net = require('node:net');
    const s = net.createServer();
    s.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
      process.stdout.write(s.address().port + '\\n', () => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0));
    });
  `;
  const p = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => p.kill('SIGKILL'));
  const port = await new Promise((resolve, reject) => {
    p.stdout.once('data', (d) => resolve(Number(String(d).trim())));
    p.once('exit', () => reject(new Error('the listener exited')));
  });
  const fillers = [];
  t.after(() => fillers.forEach((s) => s.destroy()));
  // Fill the queue: connect until one no longer completes within 300 ms.
  for (let i = 0; i < 16; i++) {
    const s = net.connect(port, '127.0.0.1');
    s.on('error', () => {});
    fillers.push(s);
    const connected = await new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), 300);
      s.once('connect', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    if (!connected) return port;
  }
  throw new Error('the accept queue never filled');
}

test('a POST whose connect times out (a listener whose accept queue is full) is retried: it was never sent', async (t) => {
  const port = await fullAcceptQueue(t);
  const events = [];
  const retrier = new Retrier({ attemptTimeoutMs: 300, deadlineMs: 2000, maxAttempts: 3, initialDelayMs: 1, jitter: 'none', onEvent: (e) => events.push(e) });
  const { error } = await within(2000 + SLACK_MS, retryingFetch({ retrier })(`http://127.0.0.1:${port}/pay`, { method: 'POST', body: 'x' }));
  assert.ok(error instanceof RetryExhaustedError, String(error));
  assert.equal(error.attempts, 3);
  assert.ok(error.errors.every((e) => e instanceof RequestFailedError && e.connect === true), error.errors.map(String).join('; '));
  assert.equal(events.filter((e) => e.kind === 'retrying').length, 2);
});

test('unref: true also covers the attempt\'s bound: a pending attempt does not keep the process alive', () => {
  const script = (options, how) => `
    const { Retrier } = require('.');
    const r = new Retrier(${options});
    ${how}
  `;
  const hang = '() => new Promise(() => {})';
  const cases = [
    // The fast path's first attempt (the default deadline, and an attempt timeout).
    `r.call(${hang}).catch(() => {});`,
    // The loop (a caller's signal), and an attempt after a wait.
    `r.call(${hang}, { signal: new AbortController().signal }).catch(() => {});`,
    `let n = 0; r.call(() => (n++ ? new Promise(() => {}) : Promise.reject(Object.assign(new Error('x'), { code: 'ECONNRESET' })))).catch(() => {});`,
  ];
  for (const how of cases) {
    for (const options of ["{ unref: true, initialDelayMs: 1, jitter: 'none' }", "{ unref: true, attemptTimeoutMs: 60000, initialDelayMs: 1, jitter: 'none' }"]) {
      const res = spawnSync(process.execPath, ['-e', script(options, how)], { cwd: PKG, encoding: 'utf8', timeout: 30_000 });
      assert.equal(res.signal, null, `${options} ${how}: still alive after 30 s`);
      assert.equal(res.status, 0, res.stderr);
    }
  }
  // Without unref, a retrier whose calls have all settled holds nothing (the bound of a
  // finished attempt is not left armed): the process exits long before the 15 s deadline.
  const t0 = Date.now();
  const done = spawnSync(process.execPath, ['-e', script('{}', 'r.call(() => new Promise((resolve) => setTimeout(resolve, 50))).then((v) => console.log("done"));')], { cwd: PKG, encoding: 'utf8', timeout: 30_000 });
  assert.equal(done.stdout.trim(), 'done', done.stderr);
  assert.ok(Date.now() - t0 < 10_000, 'a settled call left a bound holding the process');
  // Without unref the bound holds the process until it passes, then the call ends.
  const res = spawnSync(process.execPath, ['-e', script('{ deadlineMs: 300 }', `r.call(${hang}).catch((e) => console.log(e.reason));`)], { cwd: PKG, encoding: 'utf8', timeout: 30_000 });
  assert.equal(res.stdout.trim(), 'deadline', res.stderr);
  // The same after a call that settled (its timer, left armed and let go, is held again).
  const again = spawnSync(process.execPath, ['-e', script('{ deadlineMs: 300 }', `r.call(async () => 1).then(() => setTimeout(() => r.call(${hang}).catch((e) => console.log(e.reason)), 20));`)], { cwd: PKG, encoding: 'utf8', timeout: 30_000 });
  assert.equal(again.stdout.trim(), 'deadline', again.stderr);
});
