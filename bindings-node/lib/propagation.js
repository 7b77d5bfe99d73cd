'use strict';
// retryrs/propagation: the server side of propagation across services
// (docs/propagation.md). A request's deadline and retry state, read from its headers by
// the core's gate (the codec, the clamp to the server's limit, the upward rule and its
// cap), become the ambient context (lib/ambient.js) of its handler for the request's
// async duration; every Retrier call made there obeys the core's constraint (its
// deadline the sooner of its own and the request's, less the core's margin; one attempt
// and no hedge when the request was itself a retry), and the HTTP helpers send the
// context on. This file only moves the request's headers in and the verdict out.
const native = require('./native');
const { typeName } = require('./options');
const ambient = require('./ambient');
const { PropagationContext } = ambient;
const { now } = require('./clock');

const store = ambient.enable();

const SERVER_KEYS = ['limitMs', 'trustMesh', 'observeOnly'];

/**
 * What a server helper reads each request with: the core's gate (its options and its
 * cap on refusals, one per middleware or wrapped handler) and its counters.
 */
function serverOf(where, options) {
  if (options === undefined || options === null) options = {};
  if (typeof options !== 'object') throw new TypeError(`${where}(options): options must be an object, got ${typeName(options)}`);
  for (const key of Object.keys(options)) {
    if (!SERVER_KEYS.includes(key)) throw new TypeError(`${where}: unknown option '${key}' (known: ${SERVER_KEYS.join(', ')})`);
  }
  const { limitMs, trustMesh, observeOnly } = options;
  if (limitMs !== undefined && limitMs !== null && typeof limitMs !== 'number') {
    throw new TypeError(`${where}: limitMs must be a number of milliseconds or null (no limit), got ${typeName(limitMs)}`);
  }
  for (const [name, v] of [['trustMesh', trustMesh], ['observeOnly', observeOnly]]) {
    if (v !== undefined && v !== null && typeof v !== 'boolean') throw new TypeError(`${where}: ${name} must be a boolean, got ${typeName(v)}`);
  }
  let gate;
  try {
    // undefined: the core's default limit (the contract's default deadline); null: none.
    gate = new native.NativeGate(limitMs === null ? Infinity : limitMs, trustMesh === true, observeOnly === true);
  } catch (err) {
    throw new RangeError(`${where}: ${err.message}`);
  }
  const counts = { requests: 0, malformed: 0, clamped: 0, refused: 0, observed: 0, capped: 0 };
  return { gate, counts };
}

// The counter of each of the upward rule's answers but 'run' (the core's spelling).
const UPWARD_COUNTS = { refuse: 'refused', observed: 'observed', capped: 'capped' };

/** A request's headers as [name, value] pairs, each repeated header as it came. */
function headerPairs(req) {
  const pairs = [];
  const raw = req.rawHeaders;
  if (Array.isArray(raw)) {
    for (let i = 0; i + 1 < raw.length; i += 2) pairs.push([raw[i], raw[i + 1]]);
    return pairs;
  }
  // Not a node:http request (a framework's own object): its headers object.
  for (const [name, value] of Object.entries(req.headers ?? {})) {
    for (const v of Array.isArray(value) ? value : [value]) pairs.push([name, String(v)]);
  }
  return pairs;
}

// The longest delay setTimeout takes: a longer one fires after 1 ms (with a warning).
const MAX_TIMER_MS = 2 ** 31 - 1;

// The upward rule's answer (the core's): its status, and "don't retry".
const REFUSAL = native.propagationRefusal();

/** The upward rule's answer: 504 with "don't retry", the handler not run. */
function refuse(res) {
  res.statusCode = REFUSAL.status;
  res.setHeader(REFUSAL.header[0], REFUSAL.header[1]);
  res.setHeader('content-length', '0');
  res.end();
}

/**
 * Serves one request: reads it through the gate, refuses it (the upward rule) or runs
 * `handler()` inside its context, whose signal aborts at the request's deadline or when
 * the client goes away before the response is finished.
 */
function serve(server, req, res, handler) {
  const start = now();
  const got = server.gate.receive(headerPairs(req));
  const { counts } = server;
  counts.requests += 1;
  counts.malformed += got.malformed;
  if (got.clamped) counts.clamped += 1;
  if (got.upward !== 'run') counts[UPWARD_COUNTS[got.upward]] += 1;
  if (got.upward === 'refuse') return refuse(res);
  // `controller`: the context's signal (the deadline or the client gone); `gone`: the
  // client gone alone, which cancels the calls inside (lib/ambient.js).
  const controller = new AbortController();
  const gone = new AbortController();
  const budgetMs = got.budgetMs ?? null;
  let timer;
  // A budget past setTimeout's range (2^31 - 1 ms, 24.8 days) would fire at once: no timer.
  if (budgetMs !== null && budgetMs <= MAX_TIMER_MS) {
    timer = setTimeout(() => controller.abort(new DOMException(`the request's deadline passed (it had ${budgetMs} ms)`, 'TimeoutError')), budgetMs);
    timer.unref();
  }
  res.once('close', () => {
    if (timer !== undefined) clearTimeout(timer);
    // The request is over (answered, or its client gone): what it started and left
    // running no longer finds its context (lib/ambient.js).
    ambient.endOf(context);
    if (res.writableFinished) return;
    const reason = new DOMException('the client went away before the response was sent', 'AbortError');
    controller.abort(reason);
    gone.abort(reason);
  });
  const context = new PropagationContext(budgetMs === null ? Infinity : start + budgetMs, got.isRetry, controller.signal, gone.signal);
  return store.run(context, handler);
}

/** Counters of a server helper: requests, malformed values, clamped budgets, refusals. */
function statsOf(server) {
  return () => ({ ...server.counts });
}

/**
 * A Connect/Express-style middleware `(req, res, next)`: the rest of the chain runs in
 * the request's context. See propagation.d.ts.
 */
function middleware(options) {
  const server = serverOf('middleware', options);
  const mw = function retryrsPropagation(req, res, next) {
    if (typeof next !== 'function') throw new TypeError(`retryrs propagation middleware: next must be a function, got ${typeName(next)}`);
    return serve(server, req, res, () => next());
  };
  mw.stats = statsOf(server);
  return mw;
}

/** A `(req, res)` handler for http.createServer, run in each request's context. */
function wrap(handler, options) {
  if (typeof handler !== 'function') throw new TypeError(`wrap(handler): handler must be a function (req, res), got ${typeName(handler)}`);
  const server = serverOf('wrap', options);
  const wrapped = function retryrsPropagated(req, res) {
    return serve(server, req, res, () => handler.call(this, req, res));
  };
  wrapped.stats = statsOf(server);
  return wrapped;
}

const RUN_KEYS = ['remainingMs', 'retry', 'signal'];

/**
 * Runs `fn()` inside a context given by hand: `{ remainingMs, retry, signal }` (each
 * optional), or a PropagationContext (current()'s). Returns what fn returns.
 *
 * A context given as an object inside another (a request's, an outer run) narrows that
 * one and never widens it, as a context derived from another does in Go or gRPC: the
 * sooner deadline holds, the retry mark stays, and the outer context's signal (its
 * deadline, its client gone) and cancellation reach fn. Once the outer one is over (its
 * request answered), work fn left running has this context's own limits. A
 * PropagationContext is a request's own, handed on: it is entered as it is.
 */
function run(context, fn) {
  if (typeof fn !== 'function') throw new TypeError(`run(context, fn): fn must be a function, got ${typeName(fn)}`);
  // A request's context handed on by hand stays in force for fn, even past the request.
  if (context instanceof PropagationContext) return store.run(context.inForce(), fn);
  if (context === null || typeof context !== 'object') {
    throw new TypeError(`run(context, fn): context must be an object such as { remainingMs: 300, retry: false }, got ${typeName(context)}`);
  }
  for (const key of Object.keys(context)) {
    if (!RUN_KEYS.includes(key)) throw new TypeError(`run(context, fn): unknown key '${key}' (known: ${RUN_KEYS.join(', ')})`);
  }
  const { remainingMs, retry, signal } = context;
  if (remainingMs !== undefined && remainingMs !== null && !(typeof remainingMs === 'number' && remainingMs >= 0 && !Number.isNaN(remainingMs))) {
    throw new RangeError(`run(context, fn): remainingMs must be a number of milliseconds >= 0 or null (no deadline), got ${String(remainingMs)}`);
  }
  if (retry !== undefined && typeof retry !== 'boolean') throw new TypeError(`run(context, fn): retry must be a boolean, got ${typeName(retry)}`);
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError(`run(context, fn): signal must be an AbortSignal, got ${typeName(signal)}`);
  const bounded = remainingMs !== undefined && remainingMs !== null && remainingMs !== Infinity;
  const controller = new AbortController();
  let timer;
  const done = () => {
    if (timer !== undefined) clearTimeout(timer);
    signal?.removeEventListener('abort', forward);
  };
  const forward = () => {
    done();
    controller.abort(signal.reason);
  };
  if (signal?.aborted) controller.abort(signal.reason);
  else signal?.addEventListener('abort', forward, { once: true });
  if (bounded && remainingMs <= MAX_TIMER_MS && !controller.signal.aborted) {
    timer = setTimeout(() => {
      done();
      controller.abort(new DOMException(`the context's deadline passed (it had ${remainingMs} ms)`, 'TimeoutError'));
    }, remainingMs);
    timer.unref();
  }
  // Made inside another context, it narrows that one while that one is in force
  // (lib/ambient.js): the sooner deadline, either retry mark, both signals.
  const ctx = new PropagationContext(bounded ? now() + remainingMs : Infinity, retry === true, controller.signal, signal, ambient.current());
  let result;
  try {
    result = store.run(ctx, fn);
  } catch (err) {
    done();
    throw err;
  }
  if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
    Promise.resolve(result).then(done, done);
  } else {
    done();
  }
  return result;
}

/** The context of the request being served here, or undefined outside one. */
function current() {
  return ambient.current();
}

module.exports = { middleware, wrap, run, current, PropagationContext };
