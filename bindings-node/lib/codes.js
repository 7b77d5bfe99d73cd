'use strict';
// The numeric protocol between the JS layer and the engine's calls (src/call.rs): a verdict goes
// in as a small integer; a decision comes back as a wait in ms (>= 0), the next attempt's
// number (>= 1, after a wait), or one of the negative stop codes.
module.exports = Object.freeze({
  V_SUCCESS: 0,
  V_TRANSIENT: 1,
  V_PERMANENT: 2,
  // A transient failure: the attempt this layer cut at its attempt timeout (a quota
  // prices the retry after it as a timeout's).
  V_TIMED_OUT: 3,
  // The server said "don't retry" (gRPC A6 pushback): a failure that counts, and nothing
  // more is sent. A retryAfterMs hook answers DONT_RETRY for it.
  V_DONT_RETRY: 4,
  DONT_RETRY: Symbol.for('retryrs.dontRetry'),
  SUCCESS: -1,
  REJECTED: -2,
  EXHAUSTED: -3,
  CANCELLED: -4,
  // Plans for callSettle (after callPropose): the engine's wait, an exact one, stop.
  PLAN_ENGINE: 0,
  PLAN_EXACT: 1,
  PLAN_STOP: 2,
});
