'use strict';
// What every HTTP helper (retryrs/fetch, retryrs/axios, retryrs/undici, retryrs/got)
// shares: the failures they hand their Retrier, the options they take (retrier, methods,
// statuses, redactQuery, idempotencyKey, and a request's own `retry`), the one call into
// the core's HTTP rule, and what a helper rejects with when retries run out on the network
// (the client's own error, carrying the retry information). The decisions are the core's:
// native.classifyHttp, native.redactUrl, native.isFailedStatus. A helper only maps its
// client's outcomes to "response", "connect" (never sent) or "network" (maybe sent).
const { AsyncLocalStorage } = require('node:async_hooks');
const native = require('./native');
const { Retrier, withClassifier, withMaxAttempts, withoutHedges, optionsOf } = require('./retrier');
const { isTransientError, retryAfterFromError } = require('./predicate');
const { RetryExhaustedError, markExhausted } = require('./errors');
const { ERROR_TYPE } = require('./metrics');
const { typeName } = require('./options');
const { armBound, clearBound } = require('./bound');
const { boundOf } = require('./attempt');
const { isDeadline, markTimedOut } = require('./call');
const { parseRetryAfter } = require('./http');

/** Base of the failures an HTTP helper hands its Retrier: `method` and `url` (redacted). */
class HttpRetryError extends Error {
  constructor(message, method, url, options) {
    super(message, options);
    this.method = method;
    this.url = url;
  }
}

/**
 * A response with a status: `status`, `retryAfterMs` (its Retry-After, the engine's
 * hint). A RetryableStatusError is retried; its response is kept (privately: headers stay
 * out of events) and handed back when retries run out.
 */
class HttpStatusError extends HttpRetryError {
  #response;

  constructor(status, method, url, retryAfterMs, response) {
    super(`HTTP ${status} from ${method} ${url}`, method, url);
    this.status = status;
    this.retryAfterMs = retryAfterMs;
    this.#response = response;
  }

  /** OpenTelemetry's error.type for an HTTP status failure: the status code. */
  get [ERROR_TYPE]() {
    return String(this.status);
  }

  static takeResponse(err) {
    const r = err.#response;
    err.#response = undefined;
    return r;
  }
}

/** A status the rules retry (for a method they retry). */
class RetryableStatusError extends HttpStatusError {}

/**
 * A final response that is not a success (a 404, or a POST's 503): never retried, the
 * call counted `rejected` with error.type the status; the helper still hands the response
 * (or the client's own error for it) to the caller.
 */
class FinalStatusError extends HttpStatusError {}

/**
 * A network failure the core calls transient: `connect` is true when no connection was
 * made (the request was never sent). `cause` is the client's own error, kept out of the
 * message.
 */
class RequestFailedError extends HttpRetryError {
  constructor(method, url, connect, cause) {
    super(`${method} ${url} ${connect ? 'could not connect' : 'failed'}: ${networkErrorType(cause)}`, method, url, { cause });
    this.connect = connect;
  }

  /** OpenTelemetry's error.type for a network failure: the client's error code or type. */
  get [ERROR_TYPE]() {
    return networkErrorType(this.cause);
  }
}
/**
 * A network failure the rules do not repeat (a reset after a POST was written): the
 * call ends `rejected`, error.type the client's code; the helper rejects with the
 * client's own error (`cause`).
 */
class FinalNetworkError extends RequestFailedError {}

for (const C of [HttpRetryError, HttpStatusError, RetryableStatusError, FinalStatusError, RequestFailedError, FinalNetworkError]) {
  Object.defineProperty(C.prototype, 'name', { value: C.name, writable: true, configurable: true });
}

/**
 * The code under a client's error (fetch's "fetch failed" TypeError, axios's and got's
 * errors carry their own; happy eyeballs: the first of an AggregateError).
 */
function codeOf(err) {
  if (err === null || typeof err !== 'object') return undefined;
  if (typeof err.code === 'string' && err.code !== '') return err.code;
  let cause = err.cause;
  if (cause instanceof AggregateError && !cause.code && cause.errors.length > 0) cause = cause.errors[0];
  return cause !== null && typeof cause === 'object' && typeof cause.code === 'string' ? cause.code : undefined;
}

/** A network failure's error.type: the client's code (ECONNREFUSED, UND_ERR_SOCKET), else its type. */
function networkErrorType(err) {
  const code = codeOf(err);
  if (code !== undefined) return code;
  if (err !== null && typeof err === 'object' && typeof err.name === 'string' && err.name !== '') return err.name;
  return 'network error';
}

// Network failures in the core's words: a failed connect (or TLS handshake) never sent
// the request; these others may have.
const CONNECT_CODES = new Set([
  'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH', 'ENETDOWN', 'EHOSTDOWN',
  'EADDRNOTAVAIL', 'UND_ERR_CONNECT_TIMEOUT',
]);
const NETWORK_CODES = new Set([
  'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNABORTED', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED',
  'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ERR_STREAM_PREMATURE_CLOSE',
]);

// A certificate that failed verification: the same certificate fails every attempt, so it
// is never retried (got's and undici's own retry codes leave these out too). Node's names
// for OpenSSL's X509 verify results (X509ErrorCode in Node's src/crypto), the host check
// of tls.checkServerIdentity, and the alerts of a peer that refused our certificate.
const CERTIFICATE_CODES = new Set([
  'UNABLE_TO_GET_ISSUER_CERT', 'UNABLE_TO_GET_CRL', 'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECRYPT_CRL_SIGNATURE', 'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY', 'CERT_SIGNATURE_FAILURE',
  'CRL_SIGNATURE_FAILURE', 'CERT_NOT_YET_VALID', 'CERT_HAS_EXPIRED', 'CRL_NOT_YET_VALID',
  'CRL_HAS_EXPIRED', 'ERROR_IN_CERT_NOT_BEFORE_FIELD', 'ERROR_IN_CERT_NOT_AFTER_FIELD',
  'ERROR_IN_CRL_LAST_UPDATE_FIELD', 'ERROR_IN_CRL_NEXT_UPDATE_FIELD', 'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'CERT_CHAIN_TOO_LONG', 'CERT_REVOKED', 'INVALID_CA', 'PATH_LENGTH_EXCEEDED', 'INVALID_PURPOSE',
  'CERT_UNTRUSTED', 'CERT_REJECTED', 'HOSTNAME_MISMATCH',
  'ERR_TLS_CERT_ALTNAME_INVALID', 'ERR_TLS_CERT_ALTNAME_FORMAT',
  'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA', 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED',
  // OpenSSL 3.2 renamed the "sslv3 alert ..." reasons "ssl/tls alert ...": a Node built
  // with a newer OpenSSL (such as a distro build linked to the system one) names them
  // ERR_SSL_SSL/TLS_ALERT_*.
  ...['BAD_CERTIFICATE', 'UNSUPPORTED_CERTIFICATE', 'CERTIFICATE_REVOKED', 'CERTIFICATE_EXPIRED', 'CERTIFICATE_UNKNOWN']
    .flatMap((alert) => [`ERR_SSL_SSLV3_ALERT_${alert}`, `ERR_SSL_SSL/TLS_ALERT_${alert}`]),
]);

// A client's own timeout: undici's connect, headers and body timeouts, Node's and got's
// ETIMEDOUT, a TLS handshake timeout (a TimeoutError by name too, see isClientTimeout).
const TIMEOUT_CODES = new Set([
  'ETIMEDOUT', 'ESOCKETTIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT',
  'ERR_TLS_HANDSHAKE_TIMEOUT',
]);

/**
 * Whether a client's error is its own timeout (the attempt ran out of time): a quota
 * prices the retry after it as a timeout's, as after the helper's cut at the bound.
 */
function isClientTimeout(err) {
  if (err === null || typeof err !== 'object') return false;
  if (err.name === 'TimeoutError' || err.cause?.name === 'TimeoutError') return true;
  const code = codeOf(err);
  return code !== undefined && TIMEOUT_CODES.has(code);
}

/**
 * 'connect', 'network' or undefined (not a network failure: a bug, a bad request, an
 * abort, a certificate that failed verification) for a client's error, by its code.
 * `handshake` says whether the connection was still being set up (no request bytes
 * written): a TLS error then (a handshake timeout, a protocol error or EOF) is a failed
 * connect, later it is a network failure like a reset (the request may have reached the
 * server).
 */
function failureOf(err, handshake) {
  const code = codeOf(err);
  if (code === undefined || CERTIFICATE_CODES.has(code)) return undefined;
  if (CONNECT_CODES.has(code)) return 'connect';
  if (code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') || code.startsWith('ERR_OSSL_')) {
    return handshake ? 'connect' : 'network';
  }
  if (NETWORK_CODES.has(code)) return 'network';
  return undefined;
}

function methodList(where, methods) {
  if (methods === undefined || methods === null) return undefined;
  if (typeof methods === 'string' || typeof methods[Symbol.iterator] !== 'function') {
    throw new TypeError(`${where}: methods must be an array of method names such as ['GET', 'PUT'], got ${typeName(methods)}`);
  }
  return Array.from(methods, (m) => {
    if (typeof m !== 'string' || m === '') throw new TypeError(`${where}: methods must hold non-empty strings, got ${typeName(m)}`);
    return m.toUpperCase();
  });
}

function statusList(where, statuses) {
  if (statuses === undefined || statuses === null) return undefined;
  if (typeof statuses === 'string' || typeof statuses[Symbol.iterator] !== 'function') {
    throw new TypeError(`${where}: statuses must be an array of statuses such as [503, 429], got ${typeName(statuses)}`);
  }
  return Array.from(statuses, (s) => {
    if (!Number.isInteger(s) || s < 100 || s > 599) throw new RangeError(`${where}: statuses must hold HTTP statuses (integers from 100 to 599), got ${String(s)}`);
    return s;
  });
}

function keyList(where, keys) {
  if (keys === undefined || keys === null) return null;
  if (typeof keys === 'string' || typeof keys[Symbol.iterator] !== 'function') {
    throw new TypeError(`${where}: redactQuery must be an array of query keys such as ['session'], got ${typeName(keys)}`);
  }
  const list = Array.from(keys, (k) => {
    if (typeof k !== 'string') throw new TypeError(`${where}: redactQuery must hold strings, got ${typeName(k)}`);
    return k;
  });
  try {
    native.checkRedactKeys(list);
  } catch (err) {
    throw new TypeError(`${where}: redactQuery: ${err.message}`);
  }
  return list;
}

function booleanOption(where, name, v, dflt) {
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'boolean') throw new TypeError(`${where}: ${name} must be a boolean, got ${typeName(v)}`);
  return v;
}

const COMMON = ['retrier', 'methods', 'statuses', 'redactQuery', 'idempotencyKey'];
const REQUEST_RETRY = ['limit', 'methods', 'statuses', 'idempotencyKey'];
// How many per-request attempt limits a helper keeps a retrier for.
const LIMITS_KEPT = 32;

const isHttpFailure = (err) => err instanceof HttpRetryError && !(err instanceof FinalStatusError) && !(err instanceof FinalNetworkError);

/**
 * Refuses a retrier option the helper cannot honour, naming it: the core's HTTP rules
 * decide what is retried and Retry-After is the hint, so a predicate, a result predicate
 * or a hint reader of the retrier's own would be silently ignored.
 */
function refuseHooks(where, retrier) {
  const o = optionsOf(retrier);
  const why = 'the core\'s HTTP rules decide here (use the helper\'s methods and statuses, or a request\'s retry option)';
  if (o.shouldRetry !== isTransientError) throw new TypeError(`${where}: the retrier's shouldRetry cannot apply to HTTP: ${why}`);
  if (o.shouldRetryResult !== undefined) throw new TypeError(`${where}: the retrier's shouldRetryResult cannot apply to HTTP: ${why}`);
  if (o.retryAfterMs !== retryAfterFromError) throw new TypeError(`${where}: the retrier's retryAfterMs cannot apply to HTTP: the response's Retry-After header is the hint`);
  // They would see the helper's own failure records, not your responses and errors.
  for (const hook of ['onRetry', 'delayMs']) {
    if (o[hook] !== undefined) throw new TypeError(`${where}: the retrier's ${hook} cannot apply to the HTTP helpers yet (use it with r.call)`);
  }
}

/**
 * A helper's shared state, from its options: `where` names it in errors, `extra` are its
 * own option names (checked by the caller). `boundsAttempts`: the helper bounds each
 * attempt itself (with the engine's bound) so the call loop never interrupts it. `hooks`:
 * the helper's own hooks on its retrier (retryrs/got's onRetry).
 */
function httpHelper(where, options, extra = [], boundsAttempts = true, hooks = undefined) {
  if (options === undefined || options === null) options = {};
  if (typeof options !== 'object') throw new TypeError(`${where}(options): options must be an object, got ${typeName(options)}`);
  const known = [...COMMON, ...extra];
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) throw new TypeError(`${where}: unknown option '${key}' (known: ${known.join(', ')})`);
  }
  const given = options.retrier ?? new Retrier();
  if (!(given instanceof Retrier)) throw new TypeError(`${where}: retrier must be a Retrier, got ${typeName(given)}`);
  refuseHooks(where, given);
  const retrier = withClassifier(given, isHttpFailure, retryAfterFromError, boundsAttempts, hooks);
  const redactKeys = keyList(where, options.redactQuery);
  const base = {
    retrier,
    methods: methodList(where, options.methods),
    statuses: statusList(where, options.statuses),
    idempotencyKey: booleanOption(where, 'idempotencyKey', options.idempotencyKey, true),
    // Whether the retrier hedges: each attempt then sends with its own signal (ctx.signal,
    // which the call's signal reaches), aborted when it loses.
    hedged: optionsOf(retrier).hedges,
  };
  const limits = new Map();
  return {
    where,
    o: optionsOf(retrier),
    base,
    /** The URL as events and errors show it: the core's redaction, with this helper's keys. */
    redact: (raw) => native.redactUrl(String(raw), redactKeys),
    /** The rules for one request: the helper's, with the request's `retry` option over them. */
    rulesFor(retry) {
      if (retry === undefined || retry === null) return base;
      if (typeof retry !== 'object') throw new TypeError(`${where}: a request's retry option must be an object, got ${typeName(retry)}`);
      for (const key of Object.keys(retry)) {
        if (!REQUEST_RETRY.includes(key)) throw new TypeError(`${where}: unknown key '${key}' in a request's retry option (known: ${REQUEST_RETRY.join(', ')})`);
      }
      const rules = { ...base };
      if (retry.methods !== undefined) rules.methods = methodList(`${where} (retry.methods)`, retry.methods);
      if (retry.statuses !== undefined) rules.statuses = statusList(`${where} (retry.statuses)`, retry.statuses);
      rules.idempotencyKey = booleanOption(where, 'retry.idempotencyKey', retry.idempotencyKey, base.idempotencyKey);
      if (retry.limit !== undefined) {
        const n = retry.limit;
        if (!Number.isInteger(n) || n < 1) throw new RangeError(`${where}: retry.limit must be an attempt count (an integer >= 1, the first attempt included), got ${String(n)}`);
        let r = limits.get(n);
        if (r === undefined) {
          r = withMaxAttempts(retrier, n);
          if (limits.size >= LIMITS_KEPT) limits.delete(limits.keys().next().value);
          limits.set(n, r);
        }
        rules.retrier = r;
      }
      return rules;
    },
  };
}

// The one-attempt twin of each hedging retrier (see retrierFor), made on first need.
const singles = new WeakMap();

/**
 * The retrier a request runs with. A hedging retrier hedges only a request the core's
 * rules let it send twice (an idempotent method, or a POST/PATCH with an Idempotency-Key)
 * whose body can be sent again; any other request runs as one attempt.
 */
function retrierFor(rules, method, key, replayable) {
  const r = rules.retrier;
  if (!rules.hedged || (replayable && classify(rules, method, null, 'network', key) === 'retry')) return r;
  let single = singles.get(r);
  if (single === undefined) singles.set(r, (single = withoutHedges(r)));
  return single;
}

/**
 * The core's HTTP rule for one outcome: 'retry', 'response' or 'fail'. `key`: the
 * request's Idempotency-Key header value, or null (the core resends a POST or PATCH with
 * one like an idempotent method unless the rules turn it off).
 */
function classify(rules, method, status, failure, key) {
  return native.classifyHttp(method, status, failure, rules.methods ?? null, rules.statuses ?? null, key, rules.idempotencyKey);
}

/** Whether a final response is a failure (the call then counts `rejected`): the core's rule. */
function isFailedStatus(status) {
  return native.isFailedStatus(status);
}

/**
 * The Idempotency-Key header's value in a header bag (a Headers, a plain object, pairs,
 * undici's flat array, axios's AxiosHeaders), or null.
 */
function idempotencyKeyOf(headers) {
  if (headers === undefined || headers === null) return null;
  const text = (v) => (v === undefined || v === null ? null : Array.isArray(v) ? v.join(', ') : String(v));
  if (typeof headers.get === 'function' && typeof headers.has === 'function') return text(headers.get('idempotency-key'));
  if (Array.isArray(headers)) {
    if (headers.length > 0 && Array.isArray(headers[0])) {
      const pair = headers.find(([k]) => String(k).toLowerCase() === 'idempotency-key');
      return pair === undefined ? null : text(pair[1]);
    }
    for (let i = 0; i + 1 < headers.length; i += 2) {
      if (String(headers[i]).toLowerCase() === 'idempotency-key') return text(headers[i + 1]);
    }
    return null;
  }
  if (typeof headers === 'object') {
    for (const k of Object.keys(headers)) if (k.toLowerCase() === 'idempotency-key') return text(headers[k]);
  }
  return null;
}

/**
 * What a helper rejects with when retries ran out on the network: the client's own last
 * error (so `catch (e) { if (axios.isAxiosError(e)) ... }` keeps working), carrying the
 * retry information: `attempts`, `reason`, `retrier`, `errors` (the helper's failures,
 * each with the client's error as `cause`); its own `cause` stays the client's. It is
 * also `instanceof RetryExhaustedError`.
 */
function exhaustedAs(clientError, exhausted) {
  if (clientError === null || typeof clientError !== 'object' || !Object.isExtensible(clientError)) return exhausted;
  const add = (key, value) => Object.defineProperty(clientError, key, { value, writable: true, configurable: true, enumerable: false });
  add('attempts', exhausted.attempts);
  add('reason', exhausted.reason);
  add('retrier', exhausted.retrier);
  add('errors', exhausted.errors);
  markExhausted(clientError);
  return clientError;
}

/** Whether err is the call's RetryExhaustedError (not a client error marked as one). */
function isExhausted(err) {
  return err instanceof Error && Object.getPrototypeOf(err) === RetryExhaustedError.prototype;
}

/**
 * One request through a helper (retryingFetch, axios, undici): the retrier's call loop
 * over `io.send(signal, n)`, one attempt each, with the engine's bound for the attempt as
 * a timer whose abort reaches the client through `signal` until the headers arrive.
 * `io.send` resolves with the attempt's outcome `{ status, retryAfter, hold(), cancel(),
 * handOver() }` (its Retry-After header value, or null; what becomes of its body is
 * lib/http-body.js's rule: hold() reads a retried response's prefix, cancel() drops it,
 * handOver() gives the response to the caller, whose value runHttp returns; optional
 * read(): reads a final response's body inside the attempt) or rejects with
 * the client's error; `io.failureOf(err, n)` maps that error to 'connect', 'network' or
 * undefined (final), `io.unsent(err, n)` (optional) says whether a request cut short
 * by its bound was never sent, and `io.timedOut(err)` (optional, default isClientTimeout)
 * whether the error is the client's own timeout. A request cut at its bound or timed out
 * by its client is priced as a timeout by a quota budget (markTimedOut). `req`: `{ method, url (redacted), key (Idempotency-Key or
 * null), replayable (a boolean, or a function: whether the body can be sent again now),
 * signal }`.
 *
 * Resolves with handOver() of the last outcome: a success, a final error response (the
 * call counted rejected) or the last retried response when retries ran out, whole.
 * Rejects with the client's
 * error: as it was for a final failure, or carrying the retry information when retries
 * ran out on the network (exhaustedAs).
 */
async function runHttp(h, rules, req, io) {
  const { method, url, key, replayable, signal } = req;
  const o = h.o;
  // Whether the body can be sent again now (a function: it depends on what was sent).
  const resendable = typeof replayable === 'function' ? replayable : () => replayable;
  const verdict = (status, failure) => (resendable()
    ? classify(rules, method, status, failure, key)
    : status !== null ? 'response' : 'fail');
  // What a request cut short by its bound rejects with.
  const timeoutError = (n, bound) => () => new DOMException(
    isDeadline(o, bound)
      ? `${h.where}: ${resendable() ? `attempt ${n}` : 'a request with a one-shot body'} ran past the deadline (it had ${Math.round(bound)} ms left)`
      : `${h.where}: ${resendable() ? `attempt ${n}` : 'a request with a one-shot body'} timed out after ${o.attemptTimeoutMs} ms (the retrier's attemptTimeoutMs)`,
    'TimeoutError',
  );
  // A network failure of an attempt (`timedOut`: cut at its bound or the client's own
  // timeout, which a quota prices as a timeout's), retried where the rules allow.
  const failedAttempt = (failure, unsent, err, timedOut) => {
    const Failure = verdict(null, failure) === 'retry' ? RequestFailedError : FinalNetworkError;
    const failed = new Failure(method, url, failure === 'connect' || unsent, err);
    return timedOut ? markTimedOut(failed) : failed;
  };
  let held;
  // Every retried response of the call (hedged attempts overlap: each holds its own).
  const heldAll = [];
  const attempt = async (ctx) => {
    const n = ctx.attempt;
    if (n > 1) markResend(n);
    // The last retried response is kept only until the next attempt starts; hedged
    // attempts overlap, so each keeps its own (at most 5, each read to 64 KiB at most):
    // whichever failure ends the call still has its response to hand back.
    if (held !== undefined && !rules.hedged) {
      RetryableStatusError.takeResponse(held)?.cancel();
      held = undefined;
    }
    // The engine's bound for this attempt (the deadline or the attempt timeout): it
    // bounds the request up to its headers, and the prefix read of a retried response;
    // not the body of a response handed over (lib/http-body.js).
    const bound = boundOf(ctx);
    const timer = bound === null ? undefined : attemptTimer(bound, o.unref, timeoutError(n, bound));
    // Hedged: the attempt's own signal (the call's reaches it; it aborts when it loses).
    const own = rules.hedged ? ctx.signal : signal;
    const attemptSignal = timer === undefined ? own : own === undefined ? timer.signal : AbortSignal.any([own, timer.signal]);
    let out;
    try {
      // The attempt number is in the async context of the request's send: what
      // resendCountAttributes reads when the client's instrumentation makes its span.
      const sent = attempts.run(n, () => io.send(attemptSignal, n));
      out = await (timer === undefined ? sent : Promise.race([sent, timer.expired]));
      // A client that hands a response over read whole (axios) reads a final one inside
      // the attempt: its bound covers the read, and a stall is a timed-out attempt.
      if (out.read !== undefined && verdict(out.status, null) !== 'retry') {
        await (timer === undefined ? out.read() : Promise.race([out.read(), timer.expired]));
      }
    } catch (err) {
      timer?.clear();
      out?.cancel();
      if (signal?.aborted) throw err;
      // Past its bound the request may have reached the server: a read timeout
      // ('network'), sent again only for an idempotent method; one never sent was not
      // connected: a connect failure.
      const unsent = io.unsent?.(err, n) === true;
      const cut = timer?.signal.aborted === true;
      const failure = cut ? (unsent ? 'connect' : 'network') : io.failureOf(err, n);
      if (failure === undefined) throw err;
      throw failedAttempt(failure, unsent, err, cut || (io.timedOut ?? isClientTimeout)(err));
    }
    if (verdict(out.status, null) !== 'retry') {
      // Handed over (lib/http-body.js): the deadline no longer applies to it.
      timer?.clear();
      // A final error response: handed back, the call counted rejected.
      if (isFailedStatus(out.status)) throw new FinalStatusError(out.status, method, url, undefined, out);
      return out;
    }
    // Held (lib/http-body.js): a prefix of its body is read within the attempt's bound;
    // the bound passing ends the wait but no longer aborts the request (the response may
    // still be handed back whole).
    timer?.afterHeaders();
    heldAll.push(out);
    try {
      await (timer === undefined ? out.hold() : Promise.race([out.hold(), timer.expired]));
    } catch (err) {
      // The bound passed while reading. A client that reads the body inside the attempt
      // (axios) timed out: a read timeout, as if its body had been final. For one that
      // hands over at headers the status is the failure all the same.
      if (out.read !== undefined) {
        out.cancel();
        throw failedAttempt('network', false, err, true);
      }
    } finally {
      timer?.clear();
    }
    const ra = out.retryAfter;
    held = new RetryableStatusError(out.status, method, url, ra === null || ra === undefined ? undefined : parseRetryAfter(String(ra)), out);
    throw held;
  };
  let kept;
  try {
    kept = await retrierFor(rules, method, key, replayable === true).call(attempt, signal !== undefined ? { signal } : undefined);
  } catch (err) {
    const end = settleHttp(err);
    if (!('response' in end)) {
      for (const out of heldAll) out.cancel();
      throw end.error;
    }
    kept = end.response;
  }
  // Retried responses not handed back are cancelled (one read to its end keeps its
  // connection); the one handed back is the caller's.
  for (const out of heldAll) if (out !== kept) out.cancel();
  return kept.handOver();
}

/**
 * What a helper's call ended with, as the client would have it: a response (returned:
 * the final or last retried one), or the client's own error (thrown: as it was, or
 * carrying the retry information when retries ran out on the network).
 */
function settleHttp(err) {
  if (err instanceof FinalStatusError) return { response: FinalStatusError.takeResponse(err) };
  if (err instanceof FinalNetworkError) return { error: err.cause };
  if (isExhausted(err)) {
    if (err.cause instanceof RetryableStatusError) return { response: RetryableStatusError.takeResponse(err.cause) };
    if (err.cause instanceof RequestFailedError) return { error: exhaustedAs(err.cause.cause, err) };
  }
  return { error: err };
}

/**
 * One attempt's bound for its request: `signal` aborts the request, `expired` rejects
 * with the same TimeoutError while the response is awaited (so a fetch that drops
 * init.signal is bounded too). `afterHeaders()`: from then on the bound only rejects
 * `expired` (it ends the wait for a retried response's prefix) and no longer aborts the
 * request, whose response may yet be handed back; `clear()` disarms it.
 */
function attemptTimer(boundMs, unref, reason) {
  const controller = new AbortController();
  let expire;
  let racing = true;
  let aborts = true;
  const expired = new Promise((_, reject) => {
    expire = reject;
  });
  let timer = armBound(boundMs, unref, () => {
    timer = undefined;
    const why = reason();
    if (aborts) controller.abort(why);
    if (racing) expire(why);
  });
  return {
    signal: controller.signal,
    expired,
    clear() {
      racing = false;
      if (timer !== undefined) clearBound(timer);
      timer = undefined;
    },
    afterHeaders() {
      aborts = false;
    },
  };
}
// The attempt of the HTTP helper's request being sent, in the async context of its send.
const attempts = new AsyncLocalStorage();

/**
 * `http.request.resend_count` for the request a client is making now, as span attributes
 * (`{ 'http.request.resend_count': attempt - 1 }` on a resend, undefined otherwise): for
 * an instrumentation that makes one span per physical request and takes attributes from
 * a hook called as the request is created, such as OpenTelemetry's undici
 * instrumentation (`new UndiciInstrumentation({ startSpanHook: resendCountAttributes })`),
 * whose `undici:request:create` handler runs in the attempt's async context.
 */
function resendCountAttributes() {
  const n = attempts.getStore();
  return n !== undefined && n > 1 ? { 'http.request.resend_count': n - 1 } : undefined;
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
  attemptTimer,
  resendCountAttributes,
  retrierFor,
  markResend,
  runHttp,

  HttpRetryError,
  HttpStatusError,
  RetryableStatusError,
  FinalStatusError,
  RequestFailedError,
  FinalNetworkError,
  httpHelper,
  settleHttp,
  classify,
  isFailedStatus,
  idempotencyKeyOf,
  failureOf,
  isClientTimeout,
  codeOf,
  networkErrorType,
  exhaustedAs,
  isExhausted,
  isHttpFailure,
  methodList,
  statusList,
};
