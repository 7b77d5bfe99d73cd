'use strict';
// retryrs/fetch: a fetch with retries. One attempt is one fetch, run by the helpers'
// common loop (lib/http-run.js, runHttp), where the core decides which outcomes are
// transient; this file maps fetch's failures to "connect" or "network", releases retried
// bodies and unwraps the result.
const dc = require('node:diagnostics_channel');
const { AsyncLocalStorage } = require('node:async_hooks');
const native = require('./native');
const { typeName } = require('./options');
const {
  HttpRetryError, RetryableStatusError, FinalStatusError, RequestFailedError, FinalNetworkError, httpHelper,
  idempotencyKeyOf, failureOf,
} = require('./http-common');
const { runHttp } = require('./http-run');
const { withHeaders, withoutHeaders, mayReceive, pairsOf } = require('./http-propagation');
const { HeldBody, silenceMs, silenceWatch, silenceError } = require('./http-body');

const IDEMPOTENT_METHODS = Object.freeze(native.idempotentMethods());

/**
 * The URL as events, errors and logs show it (OpenTelemetry's `url.full` rule, the
 * core's list of query keys), with `keys` (query keys) redacted too.
 */
function redactUrl(url, keys) {
  if (typeof url !== 'string') throw new TypeError(`redactUrl(url): url must be a string, got ${typeName(url)}`);
  if (keys !== undefined && !(Array.isArray(keys) && keys.every((k) => typeof k === 'string'))) {
    throw new TypeError(`redactUrl(url, keys): keys must be an array of query keys, got ${typeName(keys)}`);
  }
  return native.redactUrl(url, keys ?? null);
}

/** Whether a body can be sent again: strings, bytes, Blobs, forms; not streams. */
function replayableBody(body) {
  if (body === undefined || body === null || typeof body === 'string') return true;
  if (body instanceof ArrayBuffer || ArrayBuffer.isView(body) || body instanceof URLSearchParams) return true;
  if (typeof Blob !== 'undefined' && body instanceof Blob) return true;
  if (typeof FormData !== 'undefined' && body instanceof FormData) return true;
  // Another realm's or another fetch's own classes (undici's FormData, File, Blob, which
  // are not the global ones when undici is installed): by their tag.
  const tag = Object.prototype.toString.call(body);
  if (tag === '[object FormData]' || tag === '[object Blob]' || tag === '[object File]' || tag === '[object URLSearchParams]') return true;
  return false; // a ReadableStream, a Node stream, an async iterable: read once
}

function hasCredentials(raw) {
  try {
    const u = new URL(raw);
    return u.username !== '' || u.password !== '';
  } catch {
    return false; // not an absolute URL: fetch says so itself
  }
}

function isRequest(v) {
  return typeof v === 'object' && v !== null && typeof v.url === 'string' && typeof v.method === 'string' && 'bodyUsed' in v;
}

/**
 * A fetch response's body under lib/http-body.js's rule. `handOver()` returns the
 * response for the caller: its body forwarded chunk by chunk (the prefix a hold read
 * first), failing with a TimeoutError after `silence` ms without a byte; `hold()` reads
 * at most DRAIN_LIMIT bytes; `cancel()` drops the body (a body read to its end keeps its
 * connection). `sent`: the attempt's progress (see watchSends).
 */
function fetchBody(res, silence, sent) {
  let held = null;
  let reader = null;
  let cancelled = false;
  // Not a fetch Response (a custom fetch's own object) or no body: nothing to read.
  const body = res.body;
  const streams = body !== null && body !== undefined && typeof body.getReader === 'function' && typeof res.constructor === 'function';
  return {
    async hold() {
      if (!streams) return;
      held = new HeldBody();
      reader = body.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return held.end();
          if (!held.push(value)) return undefined;
        }
      } catch (err) {
        held.fail(err);
      }
      return undefined;
    },
    cancel() {
      if (cancelled) return;
      cancelled = true;
      if (held !== null && !held.open) return;
      (reader ?? body)?.cancel?.()?.catch?.(() => {});
    },
    handOver() {
      // A body that arrived whole already (most small ones: with their headers) cannot
      // fall silent: handed over as it is, without a second stream and response.
      if (!streams || (held === null && (silence === null || sent.complete))) return res;
      const source = reader ?? body.getReader();
      const prefix = held === null ? [] : held.take();
      const failed = held?.error ?? null;
      const ended = held?.ended === true;
      let watch = null;
      // Whether the caller is waiting for a chunk (a pull in flight).
      let pulling = false;
      // Failed for its silence: what the cancelled source still answers is dropped.
      let silent = false;
      const stream = new ReadableStream({
        start(controller) {
          for (const chunk of prefix) controller.enqueue(chunk);
          if (failed !== null) return controller.error(failed);
          if (ended) return controller.close();
          watch = silenceWatch(silence, (ms) => {
            const err = silenceError('retryingFetch', ms);
            silent = true;
            controller.error(err);
            source.cancel(err).catch(() => {});
          }, () => pulling);
          return undefined;
        },
        async pull(controller) {
          let step;
          watch?.touch();
          pulling = true;
          try {
            step = await source.read();
          } catch (err) {
            watch?.stop();
            if (!silent) controller.error(err);
            return;
          } finally {
            pulling = false;
          }
          if (silent) return;
          if (step.done) {
            watch?.stop();
            controller.close();
          } else {
            watch?.touch();
            controller.enqueue(step.value);
          }
        },
        cancel(reason) {
          watch?.stop();
          return source.cancel(reason);
        },
      }, { highWaterMark: 0 });
      const copy = new res.constructor(res.status === 204 || res.status === 304 ? null : stream, {
        status: res.status,
        statusText: res.statusText,
        headers: res.headers,
      });
      Object.defineProperty(copy, 'url', { value: res.url, enumerable: true });
      Object.defineProperty(copy, 'redirected', { value: res.redirected, enumerable: true });
      return copy;
    },
  };
}

// An attempt's progress from undici's diagnostics channels (Node's global fetch is
// undici): whether its request's headers were written before it ran out of time (a request
// created but never sent never left: its connection was not made, a connect timeout, so
// it is sent again whatever its method), and whether its response's body has arrived
// whole (the last request's, after any redirect: see fetchBody's handOver). Another fetch
// reports nothing: taken as maybe sent, its body still arriving.
let sending = null;
const undiciRequests = new WeakMap();

/** An attempt's progress, filled in by watchSends's subscribers. */
function progressOf() {
  return { created: false, sent: false, request: null, complete: false };
}

function watchSends() {
  if (sending !== null) return;
  sending = new AsyncLocalStorage();
  dc.subscribe('undici:request:create', ({ request }) => {
    const state = sending.getStore();
    if (state !== undefined && request !== null && typeof request === 'object') {
      state.created = true;
      // A redirect's next request: the body that counts is its response's.
      state.request = request;
      state.complete = false;
      undiciRequests.set(request, state);
    }
  });
  dc.subscribe('undici:client:sendHeaders', ({ request }) => {
    const state = request !== null && typeof request === 'object' ? undiciRequests.get(request) : undefined;
    if (state !== undefined) state.sent = true;
  });
  // The response's last byte arrived (undici publishes its trailers, none or some).
  dc.subscribe('undici:request:trailers', ({ request }) => {
    const state = request !== null && typeof request === 'object' ? undiciRequests.get(request) : undefined;
    if (state !== undefined && state.request === request) state.complete = true;
  });
}

// Where undici (Node's fetch, and the undici package) keeps its global dispatcher.
const GLOBAL_DISPATCHER = Symbol.for('undici.globalDispatcher.1');

/**
 * Whether an attempt goes through allowlistDispatcher: fetch follows its redirects by
 * itself, and is known to send it through the dispatcher given (Node's global fetch, or
 * any fetch given a dispatcher in init, which it is asked to use). A fetch of the caller's
 * own may bind a dispatcher (a proxy's) that one given over it would replace; a Request
 * made with its own keeps it (it cannot be read to be wrapped).
 */
function followsRedirects(globalFetch, init, request) {
  if (init?.dispatcher === undefined && (!globalFetch || request !== undefined)) return false;
  return (init?.redirect ?? request?.redirect ?? 'follow') === 'follow';
}

/**
 * The dispatcher an attempt with an allowlist is sent through (undici's fetch asks it for
 * every hop of a redirect it follows, with the first request's headers): a hop to a host
 * outside the list loses the headers `sent`, then goes to the caller's dispatcher, or
 * undici's global one (read at the hop: fetch sets it up when first used).
 */
function allowlistDispatcher(out, own, sent) {
  return {
    dispatch(opts, handler) {
      const inner = own ?? globalThis[GLOBAL_DISPATCHER];
      const hop = mayReceive(out, opts.origin) ? opts : { ...opts, headers: withoutHeaders(opts.headers, sent) };
      return inner.dispatch(hop, handler);
    },
  };
}

/** Frees the connection of a response that arrived after its attempt was abandoned. */
function cancelBody(res) {
  try {
    res?.body?.cancel?.()?.catch?.(() => {});
  } catch {
    // A body already locked or gone: nothing left to free.
  }
}

/**
 * A fetch that retries what the core's HTTP rules call transient, with the Retrier's
 * backoff, Retry-After, deadline, budget and events; `init.signal` cancels waits and
 * attempts; `init.retry` overrides the rules for one request. See fetch.d.ts. Each
 * attempt runs through the helpers' common loop (lib/http-run.js, runHttp): one fetch,
 * bounded with the engine's bound, judged by the core's HTTP rules.
 */
function retryingFetch(options) {
  const h = httpHelper('retryingFetch', options, ['fetch']);
  const base = options?.fetch ?? globalThis.fetch;
  const globalFetch = base === globalThis.fetch;
  if (typeof base !== 'function') throw new TypeError(`retryingFetch: fetch must be a function, got ${typeName(base)}`);
  watchSends();
  // How long the body of a response handed over may stay silent (lib/http-body.js).
  const silence = silenceMs(h.o);

  return async function fetchWithRetries(input, init) {
    const request = isRequest(input) ? input : undefined;
    let rules = h.base;
    if (init !== undefined && init !== null && init.retry !== undefined) {
      rules = h.rulesFor(init.retry);
      const { retry, ...rest } = init; // not fetch's: kept from it
      init = rest;
    }
    const method = String(init?.method ?? request?.method ?? 'GET').toUpperCase();
    const signal = init?.signal ?? request?.signal ?? undefined;
    // A Request's own body is a stream to fetch: it cannot be told apart from a streamed
    // one, so it is sent once (give the body in init to have it retried). A one-shot body
    // still runs through the retrier (one attempt, the same bound and events).
    const bodyInInit = init !== undefined && init !== null && init.body !== undefined;
    const replayable = bodyInInit ? replayableBody(init.body) : !(request !== undefined && request.body !== null);
    const raw = String(request !== undefined ? request.url : input instanceof URL ? input.href : input);
    const url = h.redact(raw);
    if (hasCredentials(raw)) {
      // fetch refuses these too, but with the password in its message.
      throw new TypeError(`retryingFetch: fetch refuses a URL with credentials (${url}); send them in an Authorization header`);
    }
    // Each attempt's progress as undici's channels report it (see watchSends).
    const progress = new Map();
    const req = { method, url, target: raw, key: idempotencyKeyOf(init?.headers ?? request?.headers), replayable, signal };
    return runHttp(h, rules, req, {
      send(attemptSignal, n, extra) {
        const sent = progressOf();
        progress.set(n, sent);
        let attemptInit = attemptSignal === signal ? init : { ...init, signal: attemptSignal };
        // The attempt's propagation headers, over the request's own (a copy of them).
        if (extra !== null) {
          attemptInit = { ...attemptInit, headers: withHeaders(init?.headers ?? request?.headers, extra) };
          if (h.out.allow !== null && followsRedirects(globalFetch, init, request)) attemptInit.dispatcher = allowlistDispatcher(h.out, init?.dispatcher, extra);
        }
        const pending = sending.run(sent, () => base(input, attemptInit));
        return pending.then((res) => {
          // Abandoned at its bound before it arrived: its connection is freed.
          if (attemptSignal?.aborted) cancelBody(res);
          const outcome = fetchBody(res, silence, sent);
          outcome.status = res.status;
          outcome.retryAfter = res.headers.get('retry-after');
          outcome.headerPairs = () => pairsOf(res.headers);
          return outcome;
        });
      },
      // One undici created but never sent was not connected: a connect failure, as is a
      // TLS failure before the request was written.
      failureOf(err, n) {
        const p = progress.get(n);
        return failureOf(err, p === undefined || !p.created || !p.sent);
      },
      unsent(err, n) {
        const p = progress.get(n);
        return p !== undefined && p.created && !p.sent;
      },
    });
  };
}

module.exports = {
  retryingFetch,
  redactUrl,
  HttpRetryError,
  RetryableStatusError,
  FinalStatusError,
  RequestFailedError,
  FinalNetworkError,
  IDEMPOTENT_METHODS,
};
