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

/**
 * The core's HTTP rule, the same in every host: 'retry' (transient), 'response' (hand the
 * response back as it is) or 'fail' (a network failure that must not be repeated).
 * Give `status`, or `failure`: 'connect' (never connected, nothing sent) or 'network'.
 * `retryMethods` / `retryStatuses` replace the default lists (idempotent methods; 408,
 * 425, 429, 500, 502, 503, 504). `idempotencyKey`: the request's Idempotency-Key header
 * value (a POST or PATCH with one is repeatable unless `honourIdempotencyKey` is false).
 * @param {{ method: string, status?: number, failure?: 'connect' | 'network',
 *   retryMethods?: string[], retryStatuses?: number[], idempotencyKey?: string | null,
 *   honourIdempotencyKey?: boolean }} request
 * @returns {'retry' | 'response' | 'fail'}
 */
function classifyHttp(request) {
  if (request === null || typeof request !== 'object') {
    throw new TypeError(`classifyHttp(request): request must be an object, got ${request === null ? 'null' : typeof request}`);
  }
  const { method, status, failure, retryMethods, retryStatuses, idempotencyKey, honourIdempotencyKey } = request;
  if (typeof method !== 'string') throw new TypeError(`classifyHttp: method must be a string, got ${typeof method}`);
  if ((status === undefined) === (failure === undefined)) {
    throw new TypeError("classifyHttp: give exactly one of status or failure ('connect' or 'network')");
  }
  if (status !== undefined && !(Number.isInteger(status) && status >= 0 && status <= 65535)) {
    throw new RangeError(`classifyHttp: status must be an HTTP status, got ${String(status)}`);
  }
  if (failure !== undefined && failure !== 'connect' && failure !== 'network') {
    throw new RangeError(`classifyHttp: failure must be 'connect' or 'network', got ${String(failure)}`);
  }
  if (retryMethods !== undefined && !(Array.isArray(retryMethods) && retryMethods.every((m) => typeof m === 'string'))) {
    throw new TypeError('classifyHttp: retryMethods must be an array of strings');
  }
  if (retryStatuses !== undefined && !(Array.isArray(retryStatuses) && retryStatuses.every((s) => Number.isInteger(s) && s >= 0 && s <= 65535))) {
    throw new TypeError('classifyHttp: retryStatuses must be an array of HTTP statuses');
  }
  if (idempotencyKey !== undefined && idempotencyKey !== null && typeof idempotencyKey !== 'string') {
    throw new TypeError(`classifyHttp: idempotencyKey must be the header's value (a string), got ${typeof idempotencyKey}`);
  }
  if (honourIdempotencyKey !== undefined && typeof honourIdempotencyKey !== 'boolean') {
    throw new TypeError(`classifyHttp: honourIdempotencyKey must be a boolean, got ${typeof honourIdempotencyKey}`);
  }
  return native.classifyHttp(method, status ?? null, failure ?? null, retryMethods ?? null, retryStatuses ?? null, idempotencyKey ?? null, honourIdempotencyKey ?? true);
}

const RETRYABLE_STATUSES = Object.freeze(native.retryableStatuses());

module.exports = { parseRetryAfter, isRetryableStatus, classifyHttp, RETRYABLE_STATUSES };
