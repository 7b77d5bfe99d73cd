'use strict';
// The fast path's bounded first attempt: fn's promise raced against the retrier's queue
// of first-attempt bounds (lib/bound.js), with no CallRun until the attempt fails or its
// bound passes; then the call loop (lib/call.js) takes over.
const { lastSeenVirtual } = require('./clock');
const { abortAttempt, startOf } = require('./attempt');
const { EXPIRED } = require('./bound');
const { CallRun } = require('./call');
const { SETTLED } = require('./call-attempt');
const { isDeadline, boundError, nameOf } = require('./call-errors');
const { isThenable } = require('./thenable');

const perf = globalThis.performance;

/**
 * The fast path's bounded first attempt (no signal, no listener, no budget), once fn
 * (called by Retrier.call with `ctx`, started at t0) returned `result`: fn's promise
 * raced against the retrier's queued timer (lib/bound.js) instead of a timer of its own.
 * Past the bound its signal aborts and the call goes on from the TimeoutError; a failure
 * first goes on from that failure.
 */
function boundedFirstAttempt(o, fn, ctx, result, t0) {
  const bound = o.firstBoundMs;
  if (!(result instanceof Promise)) {
    if (!isThenable(result)) {
      o.counts.unseenOk += 1;
      return Promise.resolve(result);
    }
    result = Promise.resolve(result);
  }
  // `!== true` (the field is a boolean): a compare, where a truth test of a field
  // dispatches on its type.
  if (o.interrupts !== true) {
    // The attempt bounds itself (retryingFetch): nothing to cut.
    // t0 from ctx, not shared by the closures (see failed).
    return result.then(o.countOk, (err) => new CallRun(o, fn, undefined, startOf(ctx), true).run(err, true));
  }
  // The call's promise, settled by whichever comes first: the attempt's promise or the
  // queue's expiry. Its executor is a closure of this call: a shared executor handing
  // resolve over in a module variable stores a new object into an old one (the module's
  // context) on every call, whose write barrier costs more than the closure.
  let resolve;
  const call = new Promise((r) => {
    resolve = r;
  });
  // The entry's position in the queue; SETTLED once the attempt is over either way.
  let at = SETTLED;
  // The call loop, once the attempt failed: a first bound that is the deadline is the
  // call's deadline, so the entry is handed over to it rather than settled.
  let run = null;
  const failed = (err) => {
    if (err === EXPIRED && run !== null) return run.expired();
    if (at === SETTLED) return; // after the bound passed: a late failure is dropped
    // Read again rather than shared: each variable the closures share is a slot of every
    // call's context, filled on the happy path (so are o.queue's reads below), and t0, a
    // number, one more boxed.
    const t0 = startOf(ctx);
    const bound = o.firstBoundMs;
    run = new CallRun(o, fn, undefined, t0, true);
    if (err === EXPIRED) {
      err = boundError(o, nameOf(o, fn), 1, bound);
      abortAttempt(ctx, err);
      if (isDeadline(o, bound)) {
        run.deadlineError = err;
        run.boundAt = t0 + bound;
      } else {
        run.timeoutError = err;
      }
    } else if (isDeadline(o, bound)) {
      run.queued = at;
    } else {
      o.queue.settle(at);
    }
    at = SETTLED;
    // Not resolve(promise): that costs a job and a turn of the microtask queue more.
    resolve(run.run(err, true));
  };
  // On performance.now()'s time base, the queue's: t0 is on it unless virtual time is on.
  at = o.queue.add(failed, (lastSeenVirtual() ? perf.now() : t0) + bound);
  result.then((v) => {
    if (at === SETTLED) return;
    o.queue.settle(at);
    at = SETTLED;
    o.counts.unseenOk += 1;
    resolve(v);
  }, failed);
  return call;
}

module.exports = { boundedFirstAttempt };
