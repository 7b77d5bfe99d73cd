'use strict';
// Time for the call loop: the core's clock, read in one crossing: its monotonic clock
// normally; under the virtual-time testing switch, the core's virtual clock (waits then
// advance it instead of arming timers). The switch is the core's and process-wide: a JS
// mirror of it was per thread, so a worker's enable() went unseen by the main thread.
const native = require('./native');

const now = native.nowMs;
const isVirtual = native.virtualTimeIsOn;

function requireOn(what) {
  if (!isVirtual()) {
    throw new Error(`retryrs.testing.${what}(): virtual time is off; call testing.enable() first`);
  }
}

const testing = Object.freeze({
  /** Turns virtual time on, globally, with a fresh clock at 0 ms. */
  enable() {
    native.virtualTimeEnable();
  },
  /** Turns virtual time off. */
  disable() {
    native.virtualTimeDisable();
  },
  /** Whether virtual time is on. */
  isOn() {
    return isVirtual();
  },
  /** The virtual clock, in milliseconds since testing.enable(). */
  now() {
    requireOn('now');
    return native.virtualNowMs();
  },
  /** Moves the virtual clock forward (an attempt that "takes" time, a late timer). */
  advance(ms) {
    if (typeof ms !== 'number' || !(ms >= 0)) {
      throw new RangeError(`testing.advance(ms): ms must be a number >= 0, got ${String(ms)}`);
    }
    requireOn('advance');
    native.virtualAdvance(ms);
  },
  /**
   * Runs fn (sync or async) under a fresh virtual clock, then restores the switch as it
   * was (a clock that was on comes back at the time it had reached).
   */
  async scoped(fn) {
    if (typeof fn !== 'function') throw new TypeError('testing.scoped(fn): fn must be a function');
    const wasOn = isVirtual();
    const before = wasOn ? native.virtualNowMs() : 0;
    testing.enable();
    try {
      return await fn();
    } finally {
      if (wasOn) {
        testing.enable();
        native.virtualAdvance(before);
      } else {
        testing.disable();
      }
    }
  },
});

module.exports = { now, isVirtual, testing };
