'use strict';
// What fn receives on each attempt.
const { now } = require('./clock');

/** What fn receives: the attempt number, a signal for this attempt and the time it has left. */
class AttemptContext {
  #signal;

  constructor(attempt, signal) {
    this.attempt = attempt;
    this.#signal = signal;
  }

  /**
   * Aborts when the call is aborted or this attempt's bound passes (the deadline or the
   * attempt timeout, whichever comes first).
   */
  get signal() {
    // Without a call signal or a bound it never aborts, but it is still this attempt's
    // own (one shared signal collected a listener per concurrent fetch and warned
    // MaxListenersExceeded); created on first use, since most attempts never look.
    return (this.#signal ??= new AbortController().signal);
  }

  /**
   * The time this attempt has left, in whole ms, now (never negative): until the deadline
   * or the attempt timeout, whichever is sooner; null when neither is set (unbounded).
   */
  get remainingMs() {
    return null;
  }
}

let abortAttempt;
let boundOf;
let startOf;

/**
 * A bounded attempt's context: the engine's bound when it started (`bound`, ms) and when
 * it started on the call's clock (`start`: the bound passes at start + bound); its signal
 * is its own, aborted by the call loop (abortAttempt) when the bound passes or the call
 * is aborted.
 */
// Not `extends AttemptContext`: a derived constructor (super(), then the fields) costs
// more on every call than this whole object; the prototype chain below still makes it
// an AttemptContext (instanceof, the signal and remainingMs accessors).
class BoundedAttemptContext {
  #signal;
  #controller;
  #bound;
  // Not start + bound: the start is what a first attempt's failure needs (startOf), and
  // a sum would be one more number boxed on every call.
  #start;

  constructor(attempt, bound, start) {
    this.attempt = attempt;
    this.#signal = undefined;
    this.#controller = null;
    this.#bound = bound;
    this.#start = start;
  }

  static {
    // The call loop's (not public): aborts the attempt's signal, made or not yet.
    abortAttempt = (ctx, reason) => {
      if (ctx.#controller !== null) ctx.#controller.abort(reason);
      else if (ctx.#signal === undefined) ctx.#signal = AbortSignal.abort(reason);
    };
    // The bound the attempt started with, for a helper that bounds itself (fetch).
    boundOf = (ctx) => (ctx instanceof BoundedAttemptContext ? ctx.#bound : null);
    // When the attempt started, on the call's clock (the call loop's).
    startOf = (ctx) => ctx.#start;
  }

  get signal() {
    if (this.#signal === undefined) {
      this.#controller = new AbortController();
      this.#signal = this.#controller.signal;
    }
    return this.#signal;
  }

  get remainingMs() {
    // Whole milliseconds, rounded down (never past the bound): what timers take
    // (AbortSignal.timeout throws a RangeError for a fraction).
    return Math.max(0, Math.floor(this.#start + this.#bound - now()));
  }
}

Object.setPrototypeOf(BoundedAttemptContext.prototype, AttemptContext.prototype);
Object.setPrototypeOf(BoundedAttemptContext, AttemptContext);

module.exports = { AttemptContext, BoundedAttemptContext, abortAttempt, boundOf, startOf };
