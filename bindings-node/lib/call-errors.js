'use strict';
// What a call fails with when it is not the attempt's own failure, and what that carries:
// the TimeoutError of an attempt cut at its bound, a hook's throw carrying the original
// failure, reraise's last failure carrying the RetryExhaustedError, the name events and
// errors give the call, and the mark a quota prices as a timeout. Shared by the call loop
// (lib/call.js and its parts), hedging and the HTTP helpers.
const native = require('./native');
const { typeName } = require('./options');
const { describe } = require('./errors');
const { retryAfterFromError } = require('./predicate');

/** The name events and errors carry: the retrier's if chosen, else fn's (when it has one). */
function nameOf(o, fn) {
  return o.named || typeof fn.name !== 'string' || fn.name === '' ? o.name : fn.name;
}

// The failures retryrs's own layers made of an attempt that ran out of its bound (the HTTP
// helpers' cut at the engine's bound, their client's own timeout; a hedged attempt cut at
// its attempt timeout): a quota prices the retry after one as a timeout's (V_TIMED_OUT).
// Private, so a TimeoutError an attempt throws itself stays an ordinary failure.
const timedOutFailures = new WeakSet();

/** Marks `failure` as an attempt that ran out of its bound; returns it. */
function markTimedOut(failure) {
  if (failure !== null && typeof failure === 'object') timedOutFailures.add(failure);
  return failure;
}

/** Whether `failure` was marked by markTimedOut. */
function isTimedOut(failure) {
  return failure !== null && typeof failure === 'object' && timedOutFailures.has(failure);
}

/** Whether an attempt bound of `bound` ms was the deadline (not the attempt timeout). */
function isDeadline(o, bound) {
  return o.attemptTimeoutMs === 0 || bound < o.attemptTimeoutMs;
}

/** What an attempt cut short by its bound fails with (a TimeoutError, as fetch's). */
function boundError(o, name, n, bound) {
  const message = isDeadline(o, bound)
    ? `${name}: attempt ${n} ran past the deadline (it had ${Math.round(bound)} ms left)`
    : `${name}: attempt ${n} timed out after ${o.attemptTimeoutMs} ms`;
  return new DOMException(message, 'TimeoutError');
}

/**
 * reraise: the last failure itself, carrying the call's RetryExhaustedError (attempts,
 * reason, errors) as its `retryrs` property. A failure that cannot carry it (a thrown
 * primitive, a frozen error) is rejected with as it is.
 */
function reraised(exhausted) {
  const last = exhausted.cause;
  if (last !== null && typeof last === 'object' && Object.isExtensible(last)) {
    try {
      Object.defineProperty(last, 'retryrs', { value: exhausted, writable: true, configurable: true, enumerable: false });
    } catch {
      // A proxy refused: the failure goes as it is.
    }
  }
  return last;
}

function notBoolean(option, answer) {
  return new TypeError(`${option} must return a boolean (or a Promise of one), got ${typeName(answer)}`);
}

/**
 * What a call rejects with when a hook threw: the hook's own error, with the original
 * failure as its `cause`. A thrown primitive, a frozen error or one that has a cause
 * already cannot carry it, so it is wrapped in a RetryrsHookError whose `cause` is the
 * original failure and whose `thrown` is what the hook threw.
 */
function hookError(thrown, original) {
  // The error itself, carrying the failure already (`throw new AuthError(.., { cause: error })`,
  // or further down its cause chain: p-retry rejects with what onFailedAttempt threw).
  if (thrown === original || carries(thrown, original)) return thrown;
  if (thrown !== null && typeof thrown === 'object' && thrown.cause === undefined && Object.isExtensible(thrown)) {
    try {
      Object.defineProperty(thrown, 'cause', { value: original, writable: true, configurable: true, enumerable: false });
      return thrown;
    } catch {
      // A proxy or an exotic object refused: wrap it below.
    }
  }
  const wrapped = new Error(`retryrs: a hook threw ${describe(thrown)}`, { cause: original });
  wrapped.name = 'RetryrsHookError';
  wrapped.thrown = thrown;
  return wrapped;
}

/** Whether `original` is in the cause chain of `thrown` (its first 16 links). */
function carries(thrown, original) {
  let link = thrown;
  for (let i = 0; i < 16 && link !== null && typeof link === 'object'; i++) {
    let cause;
    try {
      cause = link.cause;
    } catch {
      return false; // a throwing getter: not followed
    }
    if (cause === original) return true;
    link = cause;
  }
  return false;
}

/**
 * A retryAfterMs hook's number by the engine's rule for a hook's hint: a RangeError naming
 * it (NaN, negative: a bug in the hook, reported as a bad delayMs answer is), or undefined.
 * The default reader (an error's own `retryAfterMs`, which the HTTP helpers also use) is
 * not held to it: a library's value that is no wait is no hint.
 */
function badHint(o, hint) {
  if (o.retryAfterMs === retryAfterFromError) return undefined;
  try {
    native.hintFromHookMs(hint);
    return undefined;
  } catch (refused) {
    return new RangeError(`retryAfterMs: ${refused.message}`);
  }
}

module.exports = {
  nameOf, markTimedOut, isTimedOut, isDeadline, boundError, reraised, notBoolean, hookError, badHint,
};
