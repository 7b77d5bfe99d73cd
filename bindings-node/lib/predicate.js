'use strict';
// The default retry predicate and retry-after reader: the host's half of "which errors
// are transient" (the contract leaves the classification of host errors to each host).
const { DONT_RETRY } = require('./codes');

// Network and system error codes that say "the other side or the path to it failed",
// not "your request is wrong". Includes undici's own codes (seen as fetch's cause).
const TRANSIENT_CODES = new Set([
  'ECONNRESET', 'ECONNREFUSED', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN',
  'ENOTFOUND', 'ENETUNREACH', 'ENETDOWN', 'ENETRESET', 'EHOSTUNREACH', 'EHOSTDOWN',
  'ENOTCONN', 'ESOCKETTIMEDOUT', 'EADDRNOTAVAIL', 'EBUSY', 'EAGAIN',
  'ERR_SOCKET_CONNECTION_TIMEOUT', 'ERR_HTTP2_STREAM_ERROR', 'ERR_HTTP2_SESSION_ERROR',
  'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CLOSED',
]);

// A Node system error (the ones with errno/syscall): Node's counterpart of Python's OSError.
function isSystemError(err) {
  return typeof err.code === 'string' && typeof err.syscall === 'string' && typeof err.errno === 'number';
}

function isNetworkLike(err) {
  if (err === null || typeof err !== 'object') return false;
  if (err.name === 'TimeoutError') return true; // AbortSignal.timeout(), attemptTimeoutMs
  if (typeof err.code === 'string' && TRANSIENT_CODES.has(err.code)) return true;
  return isSystemError(err);
}

/**
 * Transient: network and system errors (by code), fetch's "fetch failed" whose cause is
 * one of them, and TimeoutError. Everything else is permanent, notably programming
 * errors (TypeError, RangeError, SyntaxError, ReferenceError) and thrown non-errors.
 */
function isTransientError(err) {
  if (err === null || typeof err !== 'object') return false;
  if (err instanceof TypeError && err.message === 'fetch failed') {
    let cause = err.cause;
    // Happy-eyeballs connects report an AggregateError of per-address failures.
    if (cause instanceof AggregateError && !cause.code && cause.errors.length > 0) cause = cause.errors[0];
    return isNetworkLike(cause);
  }
  if (err instanceof TypeError || err instanceof RangeError || err instanceof SyntaxError || err instanceof ReferenceError) {
    return false;
  }
  return isNetworkLike(err);
}

/** The default hint: an error's own numeric `retryAfterMs`, if it carries one. */
function retryAfterFromError(err) {
  if (err !== null && typeof err === 'object') {
    const ms = err.retryAfterMs;
    if (typeof ms === 'number' || ms === DONT_RETRY) return ms;
  }
  return undefined;
}

module.exports = { isTransientError, retryAfterFromError, TRANSIENT_CODES };
