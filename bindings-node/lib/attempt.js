'use strict';
// What fn receives on each attempt.

let neverAborted;

/** What fn receives: the attempt number and a signal for this attempt. */
class AttemptContext {
  #signal;

  constructor(attempt, signal) {
    this.attempt = attempt;
    this.#signal = signal;
  }

  /** Aborts when the call is aborted or this attempt's timeout fires. */
  get signal() {
    // Created on first use: most calls never look at it.
    return this.#signal ?? (neverAborted ??= new AbortController().signal);
  }
}

// The context of a first attempt without a signal: always the same, so shared.
const FIRST_ATTEMPT = Object.freeze(new AttemptContext(1, undefined));

module.exports = { AttemptContext, FIRST_ATTEMPT };
