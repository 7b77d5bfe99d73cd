'use strict';
// retryrs/fetch: a fetch with retries. One attempt is one fetch; the core decides which
// outcomes are transient (native.classifyHttp, called from `transient` only); this file
// maps fetch's failures to "connect" or "network", releases retried bodies and unwraps
// the result.
const native = require('./native');
const { Retrier, withClassifier, attemptTimeoutMs } = require('./retrier');
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
 * `retryAfterMs` (its Retry-After, the engine's hint). Its body was read and its
 * connection released before the wait; out of retries, retryingFetch resolves with the
 * response itself.
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

/** Reads a retried response's body (freeing its connection) into a response to keep. */
async function release(res) {
  // Not a fetch Response (a custom fetch's own object): nothing to read or rebuild.
  if (typeof res.arrayBuffer !== 'function' || typeof res.constructor !== 'function') return res;
  let body = null;
  try {
    body = await res.arrayBuffer();
  } catch {
    // A broken body: the connection is gone anyway; keep the status and headers.
  }
  const kept = new res.constructor(res.status === 204 || res.status === 304 ? null : body, {
    status: res.status,
    statusText: res.statusText,
    headers: res.headers,
  });
  Object.defineProperty(kept, 'url', { value: res.url, enumerable: true });
  return kept;
}

/**
 * The retrier's attemptTimeoutMs for one request: `signal` aborts the request, `expired`
 * rejects with the same TimeoutError (so a fetch that drops init.signal is bounded too).
 */
function attemptTimer(timeoutMs, what) {
  const controller = new AbortController();
  let expire;
  const expired = new Promise((_, reject) => {
    expire = reject;
  });
  const timer = setTimeout(() => {
    controller.abort(new DOMException(`retryingFetch: ${what} timed out after ${timeoutMs} ms (the retrier's attemptTimeoutMs)`, 'TimeoutError'));
    expire(controller.signal.reason);
  }, timeoutMs);
  return { signal: controller.signal, expired, clear: () => clearTimeout(timer) };
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
  // The retrier's attemptTimeoutMs would fail an attempt with an always-transient
  // TimeoutError and leave the request running: each request is bounded here instead,
  // aborted, and judged as a read timeout by the HTTP rules (see attempt below).
  const retrier = withClassifier(given, isHttpFailure, retryAfterFromError, true);
  const timeoutMs = attemptTimeoutMs(given);
  const methods = methodList(options.methods);
  const statuses = statusList(options.statuses);
  // The one call into the core's HTTP rule: 'retry', 'response' or 'fail'.
  const transient = (method, status, failure) => native.classifyHttp(method, status, failure, methods, statuses) === 'retry';

  return async function fetchWithRetries(input, init) {
    const request = isRequest(input) ? input : undefined;
    const method = String(init?.method ?? request?.method ?? 'GET').toUpperCase();
    const signal = init?.signal ?? request?.signal ?? undefined;
    // A Request's own body is a stream to fetch: it cannot be told apart from a streamed
    // one, so it is sent once (give the body in init to have it retried).
    const bodyInInit = init !== undefined && init !== null && init.body !== undefined;
    if (bodyInInit ? !replayableBody(init.body) : request !== undefined && request.body !== null) {
      // Sent once, but still bounded: past attemptTimeoutMs it rejects with the TimeoutError.
      if (timeoutMs <= 0) return base(input, init);
      const timer = attemptTimer(timeoutMs, 'a request with a one-shot body');
      try {
        return await send(base, input, init, signal, timer);
      } finally {
        timer.clear();
      }
    }
    const raw = String(request !== undefined ? request.url : input instanceof URL ? input.href : input);
    const url = native.redactUrl(raw);
    if (hasCredentials(raw)) {
      // fetch refuses these too, but with the password in its message.
      throw new TypeError(`retryingFetch: fetch refuses a URL with credentials (${url}); send them in an Authorization header`);
    }
    let held;

    const attempt = async ({ attempt: n }) => {
      if (n > 1) markResend(n);
      if (held !== undefined) {
        RetryableStatusError.takeResponse(held);
        held = undefined;
      }
      let res;
      const timer = timeoutMs > 0 ? attemptTimer(timeoutMs, `attempt ${n}`) : undefined;
      try {
        res = await send(base, input, init, signal, timer);
      } catch (err) {
        if (signal?.aborted) throw err;
        // Past attemptTimeoutMs the request may have reached the server: a read timeout
        // ('network'), sent again only for an idempotent method; a POST rejects with it.
        const failure = timer?.signal.aborted ? 'network' : failureOf(err);
        if (failure !== undefined && transient(method, null, failure)) {
          throw new RequestFailedError(method, url, failure === 'connect', err);
        }
        throw err;
      } finally {
        timer?.clear();
      }
      if (!transient(method, res.status, null)) return res;
      const header = res.headers.get('retry-after');
      const kept = await release(res);
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
