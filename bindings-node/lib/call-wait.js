'use strict';
// The call loop's waiting: the wait between attempts, and a hook's pending answer held
// to the call's abort (unlessAborted) or its deadline (beforeDeadline). Each ends at once
// when the call's signal aborts, through the run's `interrupt`.
const { now, isVirtual, advanceVirtual } = require('./clock');
// MAX_TIMER_MS: the longest single setTimeout; longer waits are armed in chunks.
const { MAX_TIMER_MS } = require('./bound');
const { isThenable } = require('./thenable');

// What an awaited hook came to when the call's signal aborted first (see unlessAborted).
const ABANDONED = Symbol('abandoned');

/**
 * Waits `ms`; resolves false if the call was aborted first. A zero wait (and a virtual
 * one) still yields a turn of the event loop (setImmediate), as the hand loop
 * `await new Promise(setImmediate)` would.
 */
function wait(run, ms) {
  const signal = run.signal;
  if (signal?.aborted) return false;
  if (ms === 0 || isVirtual()) {
    if (ms > 0) advanceVirtual(ms);
    return new Promise((resolve) => {
      const immediate = setImmediate(() => {
        run.interrupt = null;
        resolve(true);
      });
      run.interrupt = () => {
        clearImmediate(immediate);
        resolve(false);
      };
    });
  }
  return new Promise((resolve) => {
    let timer;
    let left = ms;
    const arm = () => {
      const chunk = Math.min(left, MAX_TIMER_MS);
      left -= chunk;
      timer = setTimeout(() => {
        if (left > 0) return arm();
        run.interrupt = null;
        resolve(true);
      }, chunk);
      // unref: a pending retry wait alone does not keep the process alive (p-retry's and
      // cockatiel's option of the same name).
      if (run.o.unref) timer.unref();
    };
    run.interrupt = () => {
      clearTimeout(timer);
      resolve(false);
    };
    arm();
  });
}

/**
 * A hook's pending answer (onRetry, delayMs, a Promise from shouldRetry or
 * retryAfterMs), or ABANDONED as soon as the call's signal aborts: the call does not
 * wait for the hook, whose late answer then comes to nothing (the engine's call is
 * over by then, and a late rejection is caught here).
 */
function unlessAborted(run, pending) {
  return new Promise((resolve, reject) => {
    let done = false;
    run.interrupt = () => {
      done = true;
      pending.catch(() => {});
      resolve(ABANDONED);
    };
    pending.then(
      (answer) => {
        if (done) return;
        run.interrupt = null;
        resolve(answer);
      },
      (err) => {
        if (done) return;
        run.interrupt = null;
        reject(err);
      },
    );
    if (run.signal.aborted) run.interrupt();
  });
}

/** `answer`, or undefined if it is a promise still pending at the call's deadline. */
function beforeDeadline(run, answer) {
  const deadlineMs = run.o.deadlineMs;
  if (deadlineMs === null || !isThenable(answer) || isVirtual()) return answer;
  const pending = Promise.resolve(answer);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      run.late = true;
      pending.catch(() => {});
      resolve(undefined);
    }, Math.max(0, run.t0 + deadlineMs - now()));
    if (run.o.unref) timer.unref();
    pending.then(
      (a) => {
        clearTimeout(timer);
        resolve(a);
      },
      (err) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

/** A time past the call's deadline (a timer may fire a little early on the clock). */
function pastDeadline(run) {
  return Math.max(now(), run.t0 + run.o.deadlineMs + 1);
}

module.exports = { wait, unlessAborted, beforeDeadline, pastDeadline, ABANDONED };
