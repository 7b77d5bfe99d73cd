'use strict';
// Time for the call loop: performance.now() normally; under the virtual-time testing
// switch, the core's global virtual clock (waits then advance it instead of arming timers).
const native = require('./native');

// Mirrors the core's switch so the real-time path reads it without a native crossing.
// Only this module turns the switch, so the mirror cannot drift.
const state = { virtual: native.virtualTimeIsOn() };

const perf = globalThis.performance;

function now() {
  return state.virtual ? native.virtualNowMs() : perf.now();
}

function isVirtual() {
  return state.virtual;
}

function requireOn(what) {
  if (!state.virtual) {
    throw new Error(`retryrs.testing.${what}(): virtual time is off; call testing.enable() first`);
  }
}

const testing = Object.freeze({
  /** Turns virtual time on, globally, with a fresh clock at 0 ms. */
  enable() {
    native.virtualTimeEnable();
    state.virtual = true;
  },
  /** Turns virtual time off. */
  disable() {
    native.virtualTimeDisable();
    state.virtual = false;
  },
  /** Whether virtual time is on. */
  isOn() {
    return state.virtual;
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
    const wasOn = state.virtual;
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
