'use strict';
// What every HTTP helper (retryrs/fetch, retryrs/axios, retryrs/undici, retryrs/got)
// shares: the failures they hand their Retrier, the options they take (retrier, methods,
// statuses, redactQuery, idempotencyKey, and a request's own `retry`), the one call into
// the core's HTTP rule, and what a helper rejects with when retries run out on the
// network (the client's own error, carrying the retry information). lib/http-run.js runs
// a request with these. The decisions are the core's:
// native.classifyHttp, native.redactUrl, native.isFailedStatus. A helper only maps its
// client's outcomes to "response", "connect" (never sent) or "network" (maybe sent).
const native = require('./native');
const { Retrier, withClassifier, withMaxAttempts, withoutHedges, optionsOf } = require('./retrier');
const { isTransientError, retryAfterFromError } = require('./predicate');
const { RetryExhaustedError, markExhausted } = require('./errors');
const { ERROR_TYPE } = require('./metrics');
const { typeName } = require('./options');
const { outboundOf } = require('./http-propagation');

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

const COMMON = ['retrier', 'methods', 'statuses', 'redactQuery', 'idempotencyKey', 'propagate'];
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
 * A response's exact wait (a non-negative pushback, lib/http-propagation.js) replaces
 * the engine's proposal, as the engine's exact-wait rule takes it (the deadline and
 * max_retry_after still apply): the helpers' own delayMs hook.
 */
const exactPushback = (info) => info.error?.pushbackMs;

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
  const out = outboundOf(where, options.propagate);
  // A hedging retrier launches its attempts on the hedging delay (no wait to replace): a
  // pushback's wait is its hint there.
  if (!optionsOf(given).hedges) hooks = { delayMs: exactPushback, hooked: true, ...hooks };
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
    // What each attempt's outbound headers are asked with (lib/http-propagation.js), or
    // null: the helper sends none.
    out,
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

module.exports = {
  HttpRetryError,
  HttpStatusError,
  RetryableStatusError,
  FinalStatusError,
  RequestFailedError,
  FinalNetworkError,
  httpHelper,
  retrierFor,
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
