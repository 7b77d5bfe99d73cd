'use strict';
// What fn receives on each attempt.

/** What fn receives: the attempt number and a signal for this attempt. */
class AttemptContext {
  #signal;

  constructor(attempt, signal) {
    this.attempt = attempt;
    this.#signal = signal;
  }

  /** Aborts when the call is aborted or this attempt's timeout fires. */
  get signal() {
    // Without a call signal or a timeout it never aborts, but it is still this attempt's
    // own (one shared signal collected a listener per concurrent fetch and warned
    // MaxListenersExceeded); created on first use, since most attempts never look.
    return (this.#signal ??= new AbortController().signal);
  }
}

module.exports = { AttemptContext };
