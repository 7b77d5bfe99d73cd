'use strict';
// Time for the call loop: performance.now() normally; under virtual time, a virtual clock
// (waits then advance it instead of arming timers).
//
// Virtual time belongs to where it was turned on: testing.scoped(fn) to fn's async
// context (AsyncLocalStorage: fn and every continuation, timer and task it starts), and
// testing.enable() to this thread (the main thread or one worker; this module's state is
// per thread). Other workers and concurrent tests keep real time. The core's process-wide
// switch is used only when asked for by name ({ scope: 'process' }).
const { AsyncLocalStorage } = require('node:async_hooks');
const native = require('./native');

const perf = globalThis.performance;

// The scope of testing.scoped(fn) that fn runs in: { clock, parent, closed }.
const als = new AsyncLocalStorage();

const state = {
  // Open scopes of this thread, plus one while enable() is on: 0 means no context of this
  // thread has virtual time, and no lookup is made.
  local: 0,
  // The clock testing.enable() turned on for this thread, or null.
  thread: null,
  // This thread's last reading of the process-wide switch: only the happy path's start
  // time trusts it (a native crossing there costs more than the rest of the start). Every
  // other reading asks the core, and a call that needs the engine re-reads its start if
  // the switch moved (another thread turned it) since: see CallRun.engineCall.
  process: native.virtualTimeProcessWideIsOn(),
};

// The process-wide clock, as the other clocks are used.
const PROCESS_WIDE = Object.freeze({
  nowMs: () => native.virtualProcessWideNowMs(),
  advance: (ms) => native.virtualProcessWideAdvance(ms),
});

/** The clock for code running here (its scope's, this thread's, the process's), or null. */
function current() {
  if (state.local !== 0) {
    for (let s = als.getStore(); s !== undefined; s = s.parent) {
      if (!s.closed) return s.clock;
    }
    if (state.thread !== null) return state.thread;
  }
  state.process = native.virtualTimeProcessWideIsOn();
  return state.process ? PROCESS_WIDE : null;
}

/** The time now, on the clock current here. */
function now() {
  const clock = current();
  return clock === null ? perf.now() : clock.nowMs();
}

/** A happy path's start: real time unless this thread has virtual time or last saw the
 * process-wide switch on. */
function startTime() {
  return state.local === 0 && !state.process ? perf.now() : now();
}

/**
 * What to add to now() for a circuit breaker, which several threads may share: real time
 * on one base for the whole process (a worker's performance.now() starts at the worker's
 * own origin); virtual time as it is.
 */
function breakerBase() {
  return current() === null ? perf.timeOrigin : 0;
}

/** Now, on a circuit breaker's time base (see breakerBase). */
function breakerNow() {
  return now() + breakerBase();
}

/** Whether the process-wide switch this thread last saw was on. */
function lastSeenVirtual() {
  return state.process;
}

/** Whether the clock current here is virtual. */
function isVirtual() {
  return current() !== null;
}

/** A virtual wait: advances the clock current here by `ms`. */
function advanceVirtual(ms) {
  current()?.advance(ms);
}

// The sleepers of each virtual clock (testing.sleep): virtual time moves only when a
// hedged call waits (lib/hedge.js, runSleepers), which wakes them in time order.
const sleepers = new WeakMap(); // clock -> [{ at, seq, resolve }]
let sleeperSeq = 0;

/**
 * Under virtual time: wakes the earliest sleeper due at or before `limit` (null: any),
 * moving the clock to its time (one at a time: what it wakes may cancel the next one due
 * at the same time). Returns whether it woke one.
 */
function runSleepers(limit) {
  const clock = current();
  const list = clock === null ? undefined : sleepers.get(clock);
  if (list === undefined || list.length === 0) return false;
  let first = list[0];
  for (const s of list) if (s.at < first.at || (s.at === first.at && s.seq < first.seq)) first = s;
  if (limit !== null && first.at > limit) return false;
  const t = clock.nowMs();
  if (first.at > t) clock.advance(first.at - t);
  sleepers.set(clock, list.filter((s) => s !== first));
  first.resolve();
  return true;
}

function requireOn(what) {
  const clock = current();
  if (clock === null) {
    throw new Error(`retryrs.testing.${what}(): virtual time is off here; call testing.enable() or run inside testing.scoped(fn) first`);
  }
  return clock;
}

/** 'thread'/'context' (the default) or 'process', from `{ scope }`. */
function scopeOf(what, options, local) {
  if (options === undefined || options === null) return local;
  if (typeof options !== 'object') throw new TypeError(`testing.${what}: options must be an object, got ${typeof options}`);
  const scope = options.scope ?? local;
  if (scope !== local && scope !== 'process') {
    throw new RangeError(`testing.${what}: scope must be '${local}' or 'process', got ${String(scope)}`);
  }
  return scope;
}

const testing = Object.freeze({
  /**
   * Turns virtual time on with a fresh clock at 0 ms: for this thread (the main thread or
   * this worker), or with `{ scope: 'process' }` for every thread of the process.
   */
  enable(options) {
    if (scopeOf('enable(options)', options, 'thread') === 'process') {
      native.virtualTimeEnableProcessWide();
      state.process = true;
      return;
    }
    if (state.thread === null) state.local += 1;
    state.thread = new native.VirtualClock();
  },
  /** Turns off what enable(options) turned on (open scopes stay on until they end). */
  disable(options) {
    if (scopeOf('disable(options)', options, 'thread') === 'process') {
      native.virtualTimeDisableProcessWide();
      state.process = native.virtualTimeProcessWideIsOn();
      return;
    }
    if (state.thread !== null) state.local -= 1;
    state.thread = null;
  },
  /** Whether a call starting here would run on virtual time. */
  isOn() {
    return isVirtual();
  },
  /** The virtual clock current here, in milliseconds since it was turned on. */
  now() {
    return requireOn('now').nowMs();
  },
  /** Moves the virtual clock current here forward (an attempt that "takes" time, a late timer). */
  advance(ms) {
    if (typeof ms !== 'number' || !(ms >= 0)) {
      throw new RangeError(`testing.advance(ms): ms must be a number >= 0, got ${String(ms)}`);
    }
    requireOn('advance').advance(ms);
  },
  /**
   * A promise resolved once the virtual clock current here reaches now + ms: an attempt
   * that takes virtual time while others run beside it (a hedged call moves the clock,
   * waking sleepers in time order). `{ signal }`: rejects with its reason when it aborts
   * (a hedge that lost is cancelled).
   */
  sleep(ms, options) {
    if (typeof ms !== 'number' || !(ms >= 0)) {
      throw new RangeError(`testing.sleep(ms): ms must be a number >= 0, got ${String(ms)}`);
    }
    const clock = requireOn('sleep');
    const signal = options?.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      let list = sleepers.get(clock);
      if (list === undefined) sleepers.set(clock, (list = []));
      const entry = { at: clock.nowMs() + ms, seq: sleeperSeq++, resolve: () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      } };
      const onAbort = () => {
        const now = sleepers.get(clock);
        if (now !== undefined) sleepers.set(clock, now.filter((s) => s !== entry));
        reject(signal.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      list.push(entry);
    });
  },
  /**
   * Runs fn (sync or async) under a fresh virtual clock, then ends it. The clock belongs
   * to fn's async context (every continuation, timer and task fn starts), so concurrent
   * tests and other workers keep their own time; with `{ scope: 'process' }` it is on for
   * every thread of the process. Scopes are counted: overlapping scopes may end in any
   * order.
   */
  async scoped(fn, options) {
    if (typeof fn !== 'function') throw new TypeError('testing.scoped(fn): fn must be a function');
    if (scopeOf('scoped(fn, options)', options, 'context') === 'process') {
      const scope = new native.ProcessWideScope();
      state.process = true;
      try {
        return await fn();
      } finally {
        scope.close();
        state.process = native.virtualTimeProcessWideIsOn();
      }
    }
    const scope = { clock: new native.VirtualClock(), parent: als.getStore(), closed: false };
    state.local += 1;
    try {
      return await als.run(scope, fn);
    } finally {
      scope.closed = true;
      state.local -= 1;
    }
  },
});

module.exports = { now, startTime, lastSeenVirtual, isVirtual, advanceVirtual, runSleepers, breakerBase, breakerNow, testing };
