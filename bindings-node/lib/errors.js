'use strict';
// The error a call rejects with when transient failures run out of room. Its wording is
// the core's (one message for every host); the last failure is appended here.
const native = require('./native');

function describe(value) {
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  try {
    return typeof value === 'string' ? value : String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

class RetryExhaustedError extends Error {
  /**
   * @param {string} retrier the retrier's name
   * @param {number} attempts how many times fn ran
   * @param {'attempts'|'deadline'|'budget'|'retry_after'} reason which limit ended the call
   * @param {unknown[]} errors the failures, in order, the last 64 at most (the last one is also `cause`)
   */
  constructor(retrier, attempts, reason, errors) {
    const last = errors[errors.length - 1];
    super(`${native.gaveUp(retrier, attempts, reason)}: ${describe(last)}`, {
      cause: last,
    });
    this.retrier = retrier;
    this.attempts = attempts;
    this.reason = reason;
    this.errors = errors;
  }
}
Object.defineProperty(RetryExhaustedError.prototype, 'name', {
  value: 'RetryExhaustedError',
  writable: true,
  configurable: true,
});

module.exports = { RetryExhaustedError, describe };
