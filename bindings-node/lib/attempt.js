'use strict';
// What fn receives on each attempt.
const { now } = require('./clock');

let abortAttempt;
let boundOf;

/**
 * What fn receives: the attempt number, a signal for this attempt and the time it has
 * left (its bound: the engine's answer when the attempt started, see docs/contract.md).
 */
class AttemptContext {
  #signal;
  #controller = null;
  #boundAt;
  #bound;

  /**
   * `signal`: the call's own, handed over as it is (an unbounded attempt), or undefined:
   * the attempt's own signal, created on first use and aborted by abortAttempt.
   * `bound`: the engine's bound when the attempt started, in ms (null: unbounded), and
   * `boundAt`: when it passes, on the call's clock.
   */
  constructor(attempt, signal, bound = null, boundAt = 0) {
    this.attempt = attempt;
    this.#signal = signal;
    this.#bound = bound;
    this.#boundAt = boundAt;
  }

  static {
    // The call loop's (not public): aborts the attempt's own signal, made or not yet.
    abortAttempt = (ctx, reason) => {
      if (ctx.#controller !== null) ctx.#controller.abort(reason);
      else if (ctx.#signal === undefined) ctx.#signal = AbortSignal.abort(reason);
    };
    // The bound the attempt started with (ms, or null), for a helper bounding itself.
    boundOf = (ctx) => ctx.#bound;
  }

  /**
   * Aborts when the call is aborted or this attempt's bound passes (the deadline or the
   * attempt timeout, whichever comes first).
   */
  get signal() {
    // Without a call signal or a bound it never aborts, but it is still this attempt's
    // own (one shared signal collected a listener per concurrent fetch and warned
    // MaxListenersExceeded); created on first use, since most attempts never look.
    if (this.#signal === undefined) {
      this.#controller = new AbortController();
      this.#signal = this.#controller.signal;
    }
    return this.#signal;
  }

  /**
   * The time this attempt has left, in ms, now (never negative): until the deadline or
   * the attempt timeout, whichever is sooner; null when neither is set (unbounded).
   */
  get remainingMs() {
    return this.#bound === null ? null : Math.max(0, this.#boundAt - now());
  }
}

module.exports = { AttemptContext, abortAttempt, boundOf };
