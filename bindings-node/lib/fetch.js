'use strict';
// retryrs/fetch: a fetch with retries. One attempt is one fetch; the core decides which
// outcomes are transient (native.classifyHttp, called from `transient` only); this file
// maps fetch's failures to "connect" or "network", releases retried bodies and unwraps
// the result.
const dc = require('node:diagnostics_channel');
const { AsyncLocalStorage } = require('node:async_hooks');
const native = require('./native');
const { Retrier, withClassifier, optionsOf } = require('./retrier');
const { boundOf } = require('./attempt');
const { isDeadline } = require('./call');
const { armBound, clearBound, unrefBound } = require('./bound');
const { RetryExhaustedError } = require('./errors');
const { retryAfterFromError } = require('./predicate');
const { parseRetryAfter } = require('./http');
const { typeName } = require('./options');

const IDEMPOTENT_METHODS = Object.freeze(native.idempotentMethods());

/** The URL as events, errors and logs show it (OpenTelemetry's `url.full` rule). */
function redactUrl(url) {
  if (typeof url !== 'string') throw new TypeError(`redactUrl(url): url must be a string, got ${typeName(url)}`);
  return native.redactUrl(url);
}

/** Base of the failures retryingFetch hands its Retrier: `method` and `url` (redacted). */
class HttpRetryError extends Error {
  constructor(message, method, url, options) {
    super(message, options);
    this.method = method;
    this.url = url;
  }
}

/**
 * A response with a retryable status for a method that may be retried. `status`,
 * `retryAfterMs` (its Retry-After, the engine's hint). At most the first 64 KiB of its
 * body were read (to keep the connection) before the wait, a longer or stalled body
 * cancelled; out of retries, retryingFetch resolves with the response itself (see
 * release).
 */
class RetryableStatusError extends HttpRetryError {
  #response;

  constructor(status, method, url, retryAfterMs, response) {
    super(`HTTP ${status} from ${method} ${url}`, method, url);
    this.status = status;
    this.retryAfterMs = retryAfterMs;
    // Private, and dropped once a later attempt starts: headers stay out of events.
    this.#response = response;
  }

  static takeResponse(err) {
    const r = err.#response;
    err.#response = undefined;
    return r;
  }
}

/**
 * A network failure the core calls transient: `connect` is true when no connection was
 * made (the request was never sent). `cause` is fetch's own error, kept out of the
 * message.
 */
class RequestFailedError extends HttpRetryError {
  constructor(method, url, connect, cause) {
    super(`${method} ${url} ${connect ? 'could not connect' : 'failed'}: ${codeOf(cause) ?? 'network error'}`, method, url, { cause });
    this.connect = connect;
  }
}
for (const C of [HttpRetryError, RetryableStatusError, RequestFailedError]) {
  Object.defineProperty(C.prototype, 'name', { value: C.name, writable: true, configurable: true });
}

// fetch's network failures, in the core's words. A failed connect never sent the request.
const CONNECT_CODES = new Set([
  'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH', 'ENETDOWN', 'EHOSTDOWN',
  'EADDRNOTAVAIL', 'UND_ERR_CONNECT_TIMEOUT',
]);
const NETWORK_CODES = new Set([
  'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNABORTED', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED',
  'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT',
]);

/** The error code under fetch's "fetch failed" TypeError (happy eyeballs: the first). */
function codeOf(err) {
  let cause = err instanceof TypeError ? err.cause : err;
  if (cause instanceof AggregateError && !cause.code && cause.errors.length > 0) cause = cause.errors[0];
  return cause !== null && typeof cause === 'object' && typeof cause.code === 'string' ? cause.code : undefined;
}

function failureOf(err) {
  const code = codeOf(err);
  if (code === undefined) return undefined;
  if (CONNECT_CODES.has(code) || code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_')) return 'connect';
  if (NETWORK_CODES.has(code)) return 'network';
  return undefined;
}

function methodList(methods) {
  if (methods === undefined || methods === null) return undefined;
  if (typeof methods === 'string' || typeof methods[Symbol.iterator] !== 'function') {
    throw new TypeError(`retryingFetch: methods must be an array of method names such as ['GET', 'PUT'], got ${typeName(methods)}`);
  }
  return Array.from(methods, (m) => {
    if (typeof m !== 'string' || m === '') throw new TypeError(`retryingFetch: methods must hold non-empty strings, got ${typeName(m)}`);
    return m.toUpperCase();
  });
}

function statusList(statuses) {
  if (statuses === undefined || statuses === null) return undefined;
  if (typeof statuses === 'string' || typeof statuses[Symbol.iterator] !== 'function') {
    throw new TypeError(`retryingFetch: statuses must be an array of statuses such as [503, 429], got ${typeName(statuses)}`);
  }
  return Array.from(statuses, (s) => {
    if (!Number.isInteger(s) || s < 100 || s > 599) throw new RangeError(`retryingFetch: statuses must hold HTTP statuses (integers from 100 to 599), got ${String(s)}`);
    return s;
  });
}

/** Whether a body can be sent again: strings, bytes, Blobs, forms; not streams. */
function replayableBody(body) {
  if (body === undefined || body === null || typeof body === 'string') return true;
  if (body instanceof ArrayBuffer || ArrayBuffer.isView(body) || body instanceof URLSearchParams) return true;
  if (typeof Blob !== 'undefined' && body instanceof Blob) return true;
  if (typeof FormData !== 'undefined' && body instanceof FormData) return true;
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

// How much of a retried response's body is read to keep its connection: past this (or
// past the attempt's bound) the body is cancelled and the connection closed instead.
const DRAIN_LIMIT = 64 * 1024;

/**
 * Frees a retried response's connection, reading at most DRAIN_LIMIT bytes of its body
 * (within the attempt's bound: its signal aborts the read), and returns a response to
 * keep: the same status and headers, and the body read; a body cut short (too long,
 * stalled past the bound, broken) yields what was read, then errors saying so.
 */
async function release(res) {
  // Not a fetch Response (a custom fetch's own object): nothing to read or rebuild.
  if (typeof res.arrayBuffer !== 'function' || typeof res.constructor !== 'function') return res;
  const chunks = [];
  let size = 0;
  let cut = null;
  const body = res.body;
  if (body !== null && body !== undefined && typeof body.getReader === 'function') {
    let reader;
    try {
      reader = body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (size + value.byteLength > DRAIN_LIMIT) {
          chunks.push(value.subarray(0, DRAIN_LIMIT - size));
          size = DRAIN_LIMIT;
          cut = new Error(`retryingFetch: the body of a retried ${res.status} response was cut after ${DRAIN_LIMIT} bytes (retried bodies are not read whole)`);
          break;
        }
        chunks.push(value);
        size += value.byteLength;
      }
    } catch (err) {
      cut = new Error(`retryingFetch: the body of a retried ${res.status} response was cut after ${size} bytes: ${err?.message ?? String(err)}`, { cause: err });
    }
    // Cancelling closes the connection; a body read to its end keeps it.
    if (cut !== null) reader?.cancel(cut).catch(() => {});
  }
  let kept = null;
  if (res.status !== 204 && res.status !== 304) {
    const bytes = Buffer.concat(chunks, size);
    kept = cut === null
      ? bytes
      : new ReadableStream({
          start(controller) {
            if (size > 0) controller.enqueue(new Uint8Array(bytes));
            controller.error(cut);
          },
        });
  }
  const copy = new res.constructor(kept, {
    status: res.status,
    statusText: res.statusText,
    headers: res.headers,
  });
  Object.defineProperty(copy, 'url', { value: res.url, enumerable: true });
  return copy;
}

// Whether a request's headers were written before its attempt ran out of time, from
// undici's diagnostics channels (Node's global fetch is undici): a request created but
// never sent never left (its connection was not made: a connect timeout), so it is sent
// again whatever its method. Another fetch reports nothing, and is taken as maybe sent.
let sending = null;
const undiciRequests = new WeakMap();

function watchSends() {
  if (sending !== null) return;
  sending = new AsyncLocalStorage();
  dc.subscribe('undici:request:create', ({ request }) => {
    const state = sending.getStore();
    if (state !== undefined && request !== null && typeof request === 'object') {
      state.created = true;
      undiciRequests.set(request, state);
    }
  });
  dc.subscribe('undici:client:sendHeaders', ({ request }) => {
    const state = request !== null && typeof request === 'object' ? undiciRequests.get(request) : undefined;
    if (state !== undefined) state.sent = true;
  });
}

/**
 * One attempt's bound for its request: `signal` aborts the request (and later its body
 * read), `expired` rejects with the same TimeoutError while the response is awaited (so
 * a fetch that drops init.signal is bounded too). After the response, `keepForBody()`
 * leaves the timer armed, unref'd, to bound the body read; `clear()` disarms it.
 */
function attemptTimer(boundMs, unref, reason) {
  const controller = new AbortController();
  let expire;
  let racing = true;
  const expired = new Promise((_, reject) => {
    expire = reject;
  });
  let timer = armBound(boundMs, unref, () => {
    timer = undefined;
    controller.abort(reason());
    if (racing) expire(controller.signal.reason);
  });
  return {
    signal: controller.signal,
    expired,
    clear() {
      racing = false;
      if (timer !== undefined) clearBound(timer);
    },
    keepForBody() {
      racing = false;
      if (timer !== undefined) unrefBound(timer);
    },
  };
}

/**
 * `base(input, init)` bounded by `timer` (if any), the caller's `signal` kept: whichever
 * aborts first aborts the request. A response that still arrives after the timeout has
 * its body cancelled, freeing its connection.
 */
function send(base, input, init, signal, timer) {
  if (timer === undefined) return base(input, init);
  const sent = base(input, { ...init, signal: signal === undefined ? timer.signal : AbortSignal.any([signal, timer.signal]) });
  return Promise.race([sent, timer.expired]).catch((err) => {
    if (timer.signal.aborted) {
      sent.then((late) => {
        try {
          late?.body?.cancel?.()?.catch?.(() => {});
        } catch {
          // A body already locked or gone: nothing left to free.
        }
      }, () => {});
    }
    throw err;
  });
}

const KNOWN = new Set(['retrier', 'fetch', 'methods', 'statuses']);
const isHttpFailure = (err) => err instanceof HttpRetryError;

/**
 * A fetch that retries what the core's HTTP rules call transient, with the Retrier's
 * backoff, Retry-After, deadline, budget and events; `init.signal` cancels waits and
 * attempts. See fetch.d.ts.
 */
function retryingFetch(options) {
  if (options === undefined || options === null) options = {};
  if (typeof options !== 'object') throw new TypeError(`retryingFetch(options): options must be an object, got ${typeName(options)}`);
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key)) throw new TypeError(`retryingFetch: unknown option '${key}' (known: ${[...KNOWN].join(', ')})`);
  }
  const base = options.fetch ?? globalThis.fetch;
  if (typeof base !== 'function') throw new TypeError(`retryingFetch: fetch must be a function, got ${typeName(base)}`);
  const given = options.retrier ?? new Retrier();
  // Each request is bounded here, with the engine's bound for the attempt (ctx, see
  // attempt below), aborted, and judged by the HTTP rules; the call loop's own cut (a
  // TimeoutError the user's predicate would judge, the request left running) is off.
  const retrier = withClassifier(given, isHttpFailure, retryAfterFromError, true);
  const o = optionsOf(given);
  const methods = methodList(options.methods);
  const statuses = statusList(options.statuses);
  // The one call into the core's HTTP rule: 'retry', 'response' or 'fail'.
  const transient = (method, status, failure) => native.classifyHttp(method, status, failure, methods, statuses) === 'retry';
  watchSends();
  // What a request cut short by its bound rejects with.
  const timeoutError = (what, bound) => () => new DOMException(
    isDeadline(o, bound)
      ? `retryingFetch: ${what} ran past the deadline (it had ${Math.round(bound)} ms left)`
      : `retryingFetch: ${what} timed out after ${o.attemptTimeoutMs} ms (the retrier's attemptTimeoutMs)`,
    'TimeoutError',
  );

  return async function fetchWithRetries(input, init) {
    const request = isRequest(input) ? input : undefined;
    const method = String(init?.method ?? request?.method ?? 'GET').toUpperCase();
    const signal = init?.signal ?? request?.signal ?? undefined;
    // A Request's own body is a stream to fetch: it cannot be told apart from a streamed
    // one, so it is sent once (give the body in init to have it retried).
    const bodyInInit = init !== undefined && init !== null && init.body !== undefined;
    if (bodyInInit ? !replayableBody(init.body) : request !== undefined && request.body !== null) {
      // Sent once, but still bounded (the first attempt's bound): past it, it rejects
      // with the TimeoutError.
      if (o.firstBoundMs === null) return base(input, init);
      const timer = attemptTimer(o.firstBoundMs, o.unref, timeoutError('a request with a one-shot body', o.firstBoundMs));
      try {
        const res = await send(base, input, init, signal, timer);
        timer.keepForBody();
        return res;
      } catch (err) {
        timer.clear();
        throw err;
      }
    }
    const raw = String(request !== undefined ? request.url : input instanceof URL ? input.href : input);
    const url = native.redactUrl(raw);
    if (hasCredentials(raw)) {
      // fetch refuses these too, but with the password in its message.
      throw new TypeError(`retryingFetch: fetch refuses a URL with credentials (${url}); send them in an Authorization header`);
    }
    let held;

    const attempt = async (ctx) => {
      const n = ctx.attempt;
      if (n > 1) markResend(n);
      if (held !== undefined) {
        RetryableStatusError.takeResponse(held);
        held = undefined;
      }
      // The engine's bound for this attempt (the deadline or the attempt timeout): it
      // bounds the request, the body read of the response returned, and the release of
      // a retried one.
      const bound = boundOf(ctx);
      const timer = bound === null ? undefined : attemptTimer(bound, o.unref, timeoutError(`attempt ${n}`, bound));
      const sent = { created: false, sent: false };
      let res;
      try {
        res = await sending.run(sent, () => send(base, input, init, signal, timer));
      } catch (err) {
        timer?.clear();
        if (signal?.aborted) throw err;
        // Past its bound a request may have reached the server: a read timeout
        // ('network'), sent again only for an idempotent method (a POST rejects with the
        // TimeoutError); one undici never sent was not connected: a connect failure.
        const failure = timer?.signal.aborted ? (sent.created && !sent.sent ? 'connect' : 'network') : failureOf(err);
        if (failure !== undefined && transient(method, null, failure)) {
          throw new RequestFailedError(method, url, failure === 'connect', err);
        }
        throw err;
      }
      if (!transient(method, res.status, null)) {
        // The caller reads the body within the same bound.
        timer?.keepForBody();
        return res;
      }
      const header = res.headers.get('retry-after');
      let kept;
      try {
        kept = await release(res);
      } finally {
        timer?.clear();
      }
      held = new RetryableStatusError(res.status, method, url, header === null ? undefined : parseRetryAfter(header), kept);
      throw held;
    };

    try {
      return await retrier.call(attempt, signal !== undefined ? { signal } : undefined);
    } catch (err) {
      if (err instanceof RetryExhaustedError && err.cause instanceof RetryableStatusError) {
        return RetryableStatusError.takeResponse(err.cause);
      }
      throw err;
    }
  };
}

// OpenTelemetry's trace API when @opentelemetry/api is installed (null when it is not),
// looked up at the first resend: a request that succeeds at once never loads it.
let otelTrace;

/** `http.request.resend_count` (attempt - 1) on the active span, for a resend. */
function markResend(attempt) {
  if (otelTrace === undefined) {
    try {
      otelTrace = require('@opentelemetry/api').trace;
    } catch {
      otelTrace = null;
    }
  }
  otelTrace?.getActiveSpan()?.setAttribute('http.request.resend_count', attempt - 1);
}

module.exports = {
  retryingFetch,
  redactUrl,
  HttpRetryError,
  RetryableStatusError,
  RequestFailedError,
  IDEMPOTENT_METHODS,
};
