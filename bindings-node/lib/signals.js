'use strict';
// Joining abort signals, where either of two may be missing: an attempt's own and its
// timer's (lib/http-run.js), a call's and its request's cancellation (lib/retrier.js), a
// context's and its parent's (lib/ambient.js).

/** A signal that aborts when `a` or `b` does: undefined when neither is given. */
function eitherSignal(a, b) {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return AbortSignal.any([a, b]);
}

module.exports = { eitherSignal };
