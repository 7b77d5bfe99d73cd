'use strict';
// Time for the call loop: performance.now() normally; under the virtual-time testing
// switch, the core's virtual clock (waits then advance it instead of arming timers).
// The switch is the core's and process-wide: a worker's enable() is on for every thread.
const native = require('./native');

const perf = globalThis.performance;
const isVirtual = native.virtualTimeIsOn;

// This thread's last reading of the switch: only the happy path's start time trusts it
// (a native crossing there costs more than the rest of the start). Every other reading
// asks the core, and a call that needs the engine re-reads its start if the switch moved
// (another thread turned it) since: see CallRun.engineCall.
const state = { virtual: isVirtual() };

/** The time now, on the clock the core's switch says. */
function now() {
  const virtual = (state.virtual = isVirtual());
  return virtual ? native.virtualNowMs() : perf.now();
}

/** A happy path's start: the clock this thread last saw the switch choose. */
function startTime() {
  return state.virtual ? native.virtualNowMs() : perf.now();
}

/** Whether the switch this thread last saw was on. */
function lastSeenVirtual() {
  return state.virtual;
}

function requireOn(what) {
  if (!isVirtual()) {
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
    state.virtual = isVirtual();
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
   * was (a clock that was on comes back at the time it had reached). Scopes are the
   * core's counted ones: overlapping scopes may end in any order.
   */
  async scoped(fn) {
    if (typeof fn !== 'function') throw new TypeError('testing.scoped(fn): fn must be a function');
    const scope = new native.VirtualTimeScope();
    state.virtual = true;
    try {
      return await fn();
    } finally {
      scope.close();
      state.virtual = isVirtual();
    }
  },
});

module.exports = { now, startTime, lastSeenVirtual, isVirtual, testing };
