'use strict';
// HTTP helpers: the core's Retry-After parser and retryable statuses.
const native = require('./native');

/**
 * The wait a Retry-After header value asks for, in milliseconds: delay-seconds or an
 * HTTP-date (relative to `now`, a Date or epoch milliseconds; default the current time).
 * A past date gives 0; garbage, negatives and fractions give undefined (no hint); huge
 * values saturate (about 1.8e19 ms) instead of overflowing.
 * @param {string | null | undefined} value
 * @param {Date | number} [now]
 * @returns {number | undefined}
 */
function parseRetryAfter(value, now) {
  if (value === null || value === undefined) return undefined;
  if (typeof value !== 'string') {
    throw new TypeError(`parseRetryAfter(value): value must be a string, got ${typeof value}`);
  }
  let nowMs;
  if (now === undefined) nowMs = Date.now();
  else if (now instanceof Date) nowMs = now.getTime();
  else if (typeof now === 'number') nowMs = now;
  else throw new TypeError(`parseRetryAfter(value, now): now must be a Date or epoch milliseconds, got ${typeof now}`);
  if (!Number.isFinite(nowMs) || nowMs < 0) {
    throw new RangeError(`parseRetryAfter(value, now): now must be a valid time at or after 1970, got ${String(now)}`);
  }
  const ms = native.parseRetryAfterMs(value, nowMs);
  return ms === null ? undefined : ms;
}

/** Whether an HTTP status is worth retrying: 408, 425, 429, 500, 502, 503, 504. */
function isRetryableStatus(status) {
  return typeof status === 'number' && native.isRetryableStatus(status);
}

const RETRYABLE_STATUSES = Object.freeze(native.retryableStatuses());

module.exports = { parseRetryAfter, isRetryableStatus, RETRYABLE_STATUSES };
