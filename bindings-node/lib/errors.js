'use strict';
// The error a call rejects with when transient failures run out of room. Its wording is
// the core's (one message for every host); the last failure is appended here.
const { inspect } = require('node:util');
const native = require('./native');

function describe(value) {
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  try {
    if (typeof value === 'string') return value;
    // A rejected value (a response-like object) reads better than [object Object].
    if (value !== null && typeof value === 'object' && value.toString === Object.prototype.toString) {
      return inspect(value, { depth: 1, breakLength: Infinity, maxArrayLength: 5, maxStringLength: 200 });
    }
    return String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

class RetryExhaustedError extends Error {
  /**
   * @param {string} retrier the retrier's name
   * @param {number} attempts how many times fn ran
   * @param {'attempts'|'deadline'|'budget'|'retry_after'|'circuit_open'|'stopped'} reason which limit
   *   ended the call (circuit_open: the breaker refused it, fn never ran; the error then
   *   has breakerState and retryInMs)
   * @param {unknown[]} errors the failures (errors, and values shouldRetryResult
   *   rejected), in order, the last 64 at most (the last one is also `cause`)
   * @param {unknown} [result] the last rejected value, when the last failure was a value
   * @param {string|null} [hint] the engine's deadline hint, appended to the message
   */
  constructor(retrier, attempts, reason, errors, result, hint) {
    const last = errors[errors.length - 1];
    let gaveUp = native.gaveUp(retrier, attempts, reason);
    // The engine's deadline hint (the policy's max_attempts cannot fit its deadline).
    if (typeof hint === 'string') gaveUp = `${gaveUp}; ${hint}`;
    super(errors.length === 0 ? gaveUp : `${gaveUp}: ${describe(last)}`, {
      cause: last,
    });
    this.retrier = retrier;
    this.attempts = attempts;
    this.reason = reason;
    this.errors = errors;
    this.result = result;
  }
}
Object.defineProperty(RetryExhaustedError.prototype, 'name', {
  value: 'RetryExhaustedError',
  writable: true,
  configurable: true,
});

// An HTTP helper's client error that ended a call out of retries (lib/http-common.js,
// exhaustedAs): it stays the client's own type and is also a RetryExhaustedError.
const EXHAUSTED = Symbol('retryrs.exhausted');
const ownInstance = Function.prototype[Symbol.hasInstance];
Object.defineProperty(RetryExhaustedError, Symbol.hasInstance, {
  value(v) {
    return ownInstance.call(this, v) || (this === RetryExhaustedError && v !== null && typeof v === 'object' && v[EXHAUSTED] === true);
  },
  configurable: true,
});

function markExhausted(err) {
  Object.defineProperty(err, EXHAUSTED, { value: true, configurable: true, enumerable: false });
}

module.exports = { RetryExhaustedError, describe, markExhausted };
