'use strict';
// One attempt of the call loop: fn run once with its AttemptContext, its bound asked of
// the engine (nextBoundMs), and the attempt cut when that bound passes (a TimeoutError) or
// ended when the call's signal aborts. Settles with an outcome (OK, FAILED, ABORTED) and
// leaves the value or failure on the run.
const native = require('./native');
const { lastSeenVirtual } = require('./clock');
const { AttemptContext, BoundedAttemptContext, abortAttempt } = require('./attempt');
const { armBound, clearBound } = require('./bound');
const { isDeadline, boundError } = require('./call-errors');
const { isThenable } = require('./thenable');

const perf = globalThis.performance;

// A queue position (lib/bound.js) that is no longer queued.
const SETTLED = -1;

// Attempt outcomes inside the loop.
const OK = 0;
const FAILED = 1;
const ABORTED = 2;

/**
 * The bound (ms) of the attempt starting now, or null when unbounded; sets boundAt.
 * Attempt 1 (the engine starts at the first failure) has the policy's first bound; a
 * later one the engine's, asked with the end of the wait before it when the call is
 * bounded (nextBound), else now.
 */
function nextBoundMs(run) {
  const o = run.o;
  if (!o.bounded) return null;
  let bound;
  let start;
  if (run.engine === null) {
    bound = o.firstBoundMs;
    start = run.t0;
  } else {
    if (run.nextBound >= 0 || Number.isNaN(run.nextBound)) {
      bound = Number.isNaN(run.nextBound) ? null : run.nextBound;
      run.nextBound = -1;
    } else {
      bound = native.callRemainingMs(run.engine, run.attemptStart + run.base);
    }
    start = run.attemptStart;
  }
  run.boundAt = start + bound;
  return bound;
}

/**
 * Runs fn once, bounded by `bound` (nextBoundMs); settles with OK, FAILED (run.error)
 * or ABORTED, never rejects. A bounded attempt (a deadline or an attempt timeout) gets
 * the engine's bound as ctx.remainingMs, and past it its signal aborts and it fails
 * with a TimeoutError.
 */
function runAttempt(run, n, bound) {
  const { o, signal } = run;
  const start = run.engine === null ? run.t0 : run.attemptStart;
  const ctx = bound === null ? new AttemptContext(n, signal) : new BoundedAttemptContext(n, bound, start);
  if (bound !== null) run.attemptCtx = ctx;
  return new Promise((resolve) => {
    let timer;
    let settled = false;
    const settle = (outcome, payload) => {
      if (settled) return;
      settled = true;
      run.interrupt = null;
      run.attemptCtx = null;
      run.cut = null;
      if (timer !== undefined) clearBound(timer);
      if (outcome === OK) run.value = payload;
      else if (outcome === FAILED) run.error = payload;
      resolve(outcome);
    };
    run.interrupt = () => settle(ABORTED);
    if (bound !== null && o.interrupts) {
      const cut = () => {
        const err = boundError(o, run.name, n, bound);
        if (isDeadline(o, bound)) run.deadlineError = err;
        else run.timeoutError = err;
        abortAttempt(ctx, err);
        settle(FAILED, err);
      };
      if (isDeadline(o, bound)) {
        // Every attempt the deadline bounds ends at the same time: one timer for the
        // call, armed at the first of them, cuts whichever attempt is running then:
        // the retrier's queue for a first attempt (all of them share its bound).
        run.cut = cut;
        if (run.engine === null && o.queue !== null) {
          run.queued = o.queue.add(run.expired, (lastSeenVirtual() ? perf.now() : run.t0) + bound);
        } else if (run.queued === SETTLED && run.deadlineTimer === undefined) {
          run.deadlineTimer = armBound(bound, o.unref, () => {
            // Fired (perhaps during a wait, a little early): a later attempt arms anew.
            run.deadlineTimer = undefined;
            run.cut?.();
          });
        }
      } else {
        timer = armBound(bound, o.unref, cut);
      }
    }
    let result;
    try {
      result = run.fn(ctx);
    } catch (err) {
      settle(FAILED, err);
      return;
    }
    if (isThenable(result)) {
      // Also handles a late rejection after an abort or timeout: never unhandled.
      Promise.resolve(result).then((v) => settle(OK, v), (e) => settle(FAILED, e));
    } else {
      settle(OK, result);
    }
  });
}

/**
 * `runAttempt` for a later attempt (n > 1) that only the deadline bounds, without a call
 * signal (the default retrier's retries), once fn (called by the loop with `ctx`)
 * returned `result`: the same outcome, without a closure per attempt. Only the deadline
 * can cut it, and a cut ends the call (fail), so no later attempt follows a cut one:
 * the call's own callbacks (onValue, onError) serve every attempt, and once `cut` is
 * null (settled, or cut) a late settlement is dropped.
 */
function deadlineAttempt(run, ctx, n, bound, result) {
  if (!isThenable(result)) {
    run.value = result;
    return OK;
  }
  run.attemptN = n;
  run.attemptBound = bound;
  run.attemptCtx = ctx;
  run.cut = run.cutDeadline;
  if (run.queued === SETTLED && run.deadlineTimer === undefined) {
    run.deadlineTimer = armBound(bound, run.o.unref, () => {
      // Fired (perhaps during a wait, a little early): a later attempt arms anew.
      run.deadlineTimer = undefined;
      run.cut?.();
    });
  }
  const outcome = new Promise(captureResolve);
  run.resolveAttempt = captured;
  captured = undefined;
  // Also handles a late rejection after the cut: never unhandled.
  Promise.resolve(result).then(run.onValue, run.onError);
  return outcome;
}

// The executor of deadlineAttempt's promise, shared: it hands the promise's resolve over
// in `captured`.
let captured;
function captureResolve(resolve) {
  captured = resolve;
}

/**
 * deadlineAttempt's callbacks (the run's onValue and onError): the attempt settled
 * (ignored once cut).
 */
function settledWithValue(run, v) {
  if (run.cut === null) return;
  run.value = v;
  settleAttempt(run, OK);
}

function settledWithError(run, e) {
  if (run.cut === null) return;
  run.error = e;
  settleAttempt(run, FAILED);
}

/**
 * The deadline passed during deadlineAttempt's attempt (the run's cutDeadline): it fails
 * with a TimeoutError.
 */
function cutAtDeadline(run) {
  const err = boundError(run.o, run.name, run.attemptN, run.attemptBound);
  run.deadlineError = err;
  abortAttempt(run.attemptCtx, err);
  run.error = err;
  settleAttempt(run, FAILED);
}

function settleAttempt(run, outcome) {
  const resolve = run.resolveAttempt;
  run.resolveAttempt = null;
  run.cut = null;
  run.attemptCtx = null;
  resolve(outcome);
}

module.exports = {
  OK, FAILED, ABORTED, SETTLED,
  nextBoundMs, runAttempt, deadlineAttempt, settledWithValue, settledWithError, cutAtDeadline,
};
