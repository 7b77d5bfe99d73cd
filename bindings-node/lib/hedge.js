'use strict';
// Hedged calls (issue 26): r.call for a policy with a hedge section (a document's
// `hedge:`, a service config's hedgingPolicy, the constructor's `hedge` option). The
// engine's HedgeCall (src/hedge.rs) says at each moment what to do: launch attempt k,
// wait until T (or an outcome), attempt j won (cancel the others), or stop. This file runs
// the attempts side by side, each with its own AbortSignal (the call's signal and the
// attempt's bound reach it), its timers and the user's hooks; it decides nothing itself.
const native = require('./native');
const { now, isVirtual, runSleepers, advanceVirtual, breakerBase, testing } = require('./clock');
const { watch, unwatch } = require('./abort');
const { AttemptContext, BoundedAttemptContext, abortAttempt } = require('./attempt');
const { RetryExhaustedError } = require('./errors');
const { armBound, clearBound } = require('./bound');
const { reportListenerError } = require('./events');
const { typeName } = require('./options');
const { V_SUCCESS, V_TRANSIENT, V_PERMANENT, V_TIMED_OUT, V_DONT_RETRY, DONT_RETRY } = require('./codes');
const { boundError, hookError, notBoolean, markTimedOut, isTimedOut, badHint } = require('./call-errors');
const { isThenable } = require('./thenable');

// The engine's steps (src/hedge.rs).
const LAUNCH = 0;
const WAIT = 1;
const WON = 2;
const STOP = 3;
const DROPPED = 4;

const CARRIES_ERROR = new Set(native.eventKindsCarryingError());
const HISTORY = native.historyCap();

/** One running attempt: its context, how to abort it, its bound's timer. */
class Running {
  constructor(ctx, controller) {
    this.ctx = ctx;
    this.controller = controller;
    this.timer = undefined;
    // Under virtual time, the bound's sleeper (testing.sleep), stopped with this.
    this.virtualCut = null;
    this.settled = false;
  }

  /** Stops the bound's timer (the attempt ended, or is being cancelled). */
  disarm() {
    if (this.timer !== undefined) clearBound(this.timer);
    this.timer = undefined;
    if (this.virtualCut !== null) this.virtualCut.abort();
    this.virtualCut = null;
  }

  abort(reason) {
    this.disarm();
    if (this.controller !== null) this.controller.abort(reason);
    else abortAttempt(this.ctx, reason);
  }
}

class HedgeRun {
  constructor(o, fn, signal, t0) {
    this.o = o;
    this.fn = fn;
    this.signal = signal;
    this.t0 = t0;
    // A policy with a circuit breaker decides on the breaker's process-wide time base.
    this.base = o.hasBreaker ? breakerBase() : 0;
    this.engine = native.NativeHedge.start(o.policyId, t0 + this.base, o.onEvent !== undefined);
    this.running = new Map(); // attempt -> Running
    // Outcomes judged, waiting for the engine: { k, verdict, hint, at, failure, isValue, hookThrew }.
    this.inbox = [];
    this.wake = null;
    this.aborted = false;
    // The failures (errors and rejected values), the last HISTORY of them.
    this.errors = [];
    this.lastWasValue = false;
    this.lastFailure = undefined;
    this.hookThrown = undefined;
    this.values = new Map(); // attempt -> value of a success
    // Failures (and values) whose predicate has not answered yet: attempt -> { failure, isValue }.
    this.judging = new Map();
  }

  now() {
    return now() + this.base;
  }

  emit(failure) {
    const listener = this.o.onEvent;
    if (listener === undefined) return;
    for (const rec of this.engine.takeEvents()) {
      const event = { kind: rec.kind, name: this.o.name, attempt: rec.attempt, elapsedMs: rec.elapsedMs };
      if (rec.delayMs !== null && rec.delayMs !== undefined) event.delayMs = rec.delayMs;
      if (rec.reason !== null && rec.reason !== undefined) event.reason = rec.reason;
      if (CARRIES_ERROR.has(rec.kind) && this.errors.length > 0) {
        if (this.lastWasValue) event.value = failure;
        else event.error = failure;
      }
      try {
        listener(event);
      } catch (err) {
        reportListenerError(err);
      }
    }
  }

  /** The call's signal aborted: every attempt is aborted at once, the loop told. */
  onAbort() {
    this.aborted = true;
    for (const r of this.running.values()) r.abort(this.signal.reason);
    this.notify();
  }

  notify() {
    const wake = this.wake;
    this.wake = null;
    if (wake !== null) wake();
  }

  async run() {
    const { signal, o } = this;
    if (signal !== undefined) watch(signal, this);
    try {
      const refusal = this.engine.refusal();
      if (refusal !== null && refusal !== undefined) {
        this.engine.poll(this.now());
        this.emit(undefined);
        const err = new RetryExhaustedError(o.name, 0, 'circuit_open', []);
        err.breakerState = refusal[0];
        err.retryInMs = refusal[1];
        throw err;
      }
      let step = this.engine.poll(this.now());
      for (;;) {
        // Out of time (or attempts) while a predicate still judges a failure: the call's
        // last failure is that one, as if judged transient (its late answer is dropped).
        if (step.action === STOP && step.outcome === 'exhausted') this.keepJudging();
        this.emit(this.lastFailure);
        if (step.action === LAUNCH) {
          this.launch(step.attempt);
          step = this.engine.poll(this.now());
        } else if (step.action === WAIT) {
          step = await this.next(step.wakeMs);
        } else if (step.action === WON) {
          this.cancel(step.cancel, (k) => lost(o, k, step.attempt));
          return this.values.get(step.attempt);
        } else if (step.action === STOP) {
          return this.stop(step);
        } else {
          throw new Error(`retryrs: unexpected hedging step ${step.action} (a bug)`);
        }
      }
    } finally {
      if (signal !== undefined) unwatch(signal, this);
      for (const r of this.running.values()) r.disarm();
      this.running.clear();
    }
  }

  /** The call is over without a winner: cancel what runs, reject with the outcome. */
  stop(step) {
    if (step.outcome === 'cancelled') {
      this.cancel(step.cancel, () => this.signal.reason);
      throw this.signal.reason;
    }
    if (step.outcome === 'exhausted' && step.reason === 'deadline') {
      this.cancel(step.cancel, (k) => boundError(this.o, this.o.name, k, 0));
    } else {
      this.cancel(step.cancel, (k) => ended(this.o, k));
    }
    if (this.hookThrown !== undefined) throw hookError(this.hookThrown.thrown, this.hookThrown.failure);
    if (step.outcome === 'rejected') throw this.lastFailure;
    const result = this.lastWasValue ? this.lastFailure : undefined;
    throw new RetryExhaustedError(this.o.name, this.engine.launched, step.reason, this.errors, result);
  }

  cancel(bits, reasonFor) {
    for (const [k, r] of this.running) {
      if (bits & (1 << (k - 1))) {
        r.settled = true;
        r.abort(reasonFor(k));
      }
    }
  }

  /** The next step: an outcome judged, the wake time reached, or the call's abort. */
  async next(wakeMs) {
    for (;;) {
      if (this.aborted) {
        const bits = this.engine.cancel(this.now());
        return { action: STOP, outcome: 'cancelled', cancel: bits ?? 0x1f };
      }
      const item = this.inbox.shift();
      if (item !== undefined) {
        const step = this.engine.record(item.k, item.verdict, item.hint, item.at);
        if (step.action !== DROPPED) {
          this.keep(item);
          this.emit(item.failure);
          return step;
        }
        continue;
      }
      const t = this.now();
      if (wakeMs !== null && t >= wakeMs) return this.engine.poll(t);
      if (isVirtual()) {
        await this.virtualWait(wakeMs);
        continue;
      }
      await new Promise((resolve) => {
        this.wake = resolve;
        if (wakeMs !== null) {
          const timer = armBound(Math.max(0, wakeMs - t), this.o.unref, () => this.notify());
          const done = this.wake;
          this.wake = () => {
            clearBound(timer);
            done();
          };
        }
      });
    }
  }

  /**
   * Under virtual time: lets what settled reach the inbox (a turn of the event loop),
   * then moves the clock to the earliest of the sleepers (testing.sleep) and the wake time,
   * waking sleepers first on a tie.
   */
  async virtualWait(wakeMs) {
    await new Promise(setImmediate);
    if (this.inbox.length > 0 || this.aborted) return;
    if (runSleepers(wakeMs === null ? null : wakeMs - this.base)) {
      // What the sleepers woke settles before the clock is read again.
      await new Promise(setImmediate);
      return;
    }
    if (wakeMs !== null) {
      const t = this.now();
      if (wakeMs > t) advanceVirtual(wakeMs - t);
      return;
    }
    // Nothing virtual will move: an outcome must come from real work.
    if (this.inbox.length === 0 && !this.aborted) await new Promise((resolve) => (this.wake = resolve));
  }

  keepJudging() {
    for (const k of [...this.judging.keys()].sort((a, b) => a - b)) {
      const { failure, isValue } = this.judging.get(k);
      this.keep({ verdict: V_TRANSIENT, failure, isValue });
    }
    this.judging.clear();
  }

  keep(item) {
    if (item.verdict === V_SUCCESS) return;
    if (this.errors.length === HISTORY) this.errors.shift();
    this.errors.push(item.failure);
    this.lastFailure = item.failure;
    this.lastWasValue = item.isValue;
    if (item.hookThrew) this.hookThrown = { thrown: item.thrown, failure: item.failure };
  }

  /** Launches attempt k beside those in flight, with its own signal and bound. */
  launch(k) {
    const { o, signal } = this;
    const started = this.now();
    const bound = o.bounded ? this.engine.remainingMs(k, started) : null;
    let ctx;
    let controller = null;
    if (bound === null || bound === undefined) {
      controller = new AbortController();
      ctx = new AttemptContext(k, controller.signal);
    } else {
      ctx = new BoundedAttemptContext(k, bound, started - this.base);
    }
    const r = new Running(ctx, controller);
    this.running.set(k, r);
    if (signal?.aborted) r.abort(signal.reason);
    let result;
    try {
      result = this.fn(ctx);
    } catch (err) {
      this.settle(k, r, false, err);
      return;
    }
    if (isThenable(result)) {
      Promise.resolve(result).then((v) => this.settle(k, r, true, v), (e) => this.settle(k, r, false, e));
    } else {
      this.settle(k, r, true, result);
    }
    if (!r.settled && bound !== null && bound !== undefined && o.interrupts && this.cutsAtTimeout(started, bound)) {
      // The attempt timeout cuts this attempt (armed after fn started: a result due at
      // the same virtual time comes first); the deadline ends the whole call (the
      // engine's Stop), so it arms nothing here.
      const cut = () => {
        r.timer = undefined;
        r.virtualCut = null;
        // A quota prices the launch it asks for as a retry after a timeout.
        const err = markTimedOut(boundError(o, o.name, k, o.attemptTimeoutMs));
        abortAttempt(ctx, err);
        this.settle(k, r, false, err);
      };
      if (isVirtual()) {
        r.virtualCut = new AbortController();
        testing.sleep(bound, { signal: r.virtualCut.signal }).then(cut, () => {});
      } else {
        r.timer = armBound(bound, o.unref, cut);
      }
    }
  }

  /**
   * Whether the bound of an attempt launched at `started` (the engine's time) is its
   * attempt timeout rather than the call's deadline, by when each ends: the bound is read
   * a little after the engine launched the attempt, so it is a little under the attempt
   * timeout even when that ends first (`isDeadline` on it cut nothing, in real time).
   */
  cutsAtTimeout(started, bound) {
    const o = this.o;
    if (o.attemptTimeoutMs === 0) return false;
    return o.deadlineMs === null || started + bound < this.t0 + this.base + o.deadlineMs;
  }

  /** Attempt k ended: judged by the retrier's hooks, then handed to the engine. */
  settle(k, r, ok, payload) {
    if (r.settled) return; // cancelled, cut, or the call is over: dropped
    r.settled = true;
    r.disarm();
    this.running.delete(k);
    const at = this.now();
    const deliver = (item) => {
      this.judging.delete(k);
      item.k = k;
      item.at = at;
      this.inbox.push(item);
      this.notify();
    };
    const { o } = this;
    if (ok) {
      if (o.shouldRetryResult === undefined) {
        this.values.set(k, payload);
        return deliver({ verdict: V_SUCCESS, hint: undefined, failure: undefined, isValue: false });
      }
      this.judging.set(k, { failure: payload, isValue: true });
      return judged(() => o.shouldRetryResult(payload), 'shouldRetryResult', (rejects, thrown) => {
        if (thrown !== undefined) return deliver(hookFailed(payload, true, thrown));
        if (!rejects) {
          this.values.set(k, payload);
          return deliver({ verdict: V_SUCCESS, hint: undefined, failure: undefined, isValue: false });
        }
        return hinted(o, payload, true, deliver);
      });
    }
    if (this.aborted || this.signal?.aborted) return; // the call's own abort: never judged
    this.judging.set(k, { failure: payload, isValue: false });
    return judged(() => o.shouldRetry(payload), 'shouldRetry', (retry, thrown) => {
      if (thrown !== undefined) return deliver(hookFailed(payload, false, thrown));
      if (!retry) return deliver({ verdict: V_PERMANENT, hint: undefined, failure: payload, isValue: false });
      return hinted(o, payload, false, deliver);
    });
  }
}

/** Runs a predicate hook (sync or a promise); then(answer, thrown). */
function judged(hook, name, then) {
  let answer;
  try {
    answer = hook();
  } catch (err) {
    return then(undefined, err);
  }
  // shouldRetry is read by truthiness (p-retry's reading, as lib/verdict.js does);
  // shouldRetryResult must answer a boolean.
  const check = (a) =>
    typeof a === 'boolean' || name === 'shouldRetry' ? then(Boolean(a), undefined) : then(undefined, notBoolean(name, a));
  if (isThenable(answer)) return Promise.resolve(answer).then(check, (err) => then(undefined, err));
  return check(answer);
}

/** A non-fatal failure: its retry-after hint (the server's pushback) read by the hook. */
function hinted(o, failure, isValue, deliver) {
  const withHint = (h, thrown) => {
    if (thrown !== undefined) return deliver(hookFailed(failure, isValue, thrown));
    if (h === DONT_RETRY) return deliver({ verdict: V_DONT_RETRY, hint: undefined, failure, isValue });
    if (h !== null && h !== undefined && typeof h !== 'number') {
      return deliver(hookFailed(failure, isValue, new TypeError(`retryAfterMs must return a number, DONT_RETRY or undefined (or a Promise of one), got ${typeName(h)}`)));
    }
    const bad = h === null || h === undefined ? undefined : badHint(o, h);
    if (bad !== undefined) return deliver(hookFailed(failure, isValue, bad));
    // An attempt that ran out of its bound (cut here, or an HTTP helper's timeout): the
    // launch it asks for is priced as a retry after a timeout.
    const verdict = !isValue && isTimedOut(failure) ? V_TIMED_OUT : V_TRANSIENT;
    return deliver({ verdict, hint: h ?? undefined, failure, isValue });
  };
  let h;
  try {
    h = o.retryAfterMs(failure);
  } catch (err) {
    return withHint(undefined, err);
  }
  if (isThenable(h)) return Promise.resolve(h).then((v) => withHint(v, undefined), (err) => withHint(undefined, err));
  return withHint(h, undefined);
}

/** A hook threw (or answered badly): the call ends with its throw, the failure its cause. */
function hookFailed(failure, isValue, thrown) {
  return { verdict: V_PERMANENT, hint: undefined, failure, isValue, hookThrew: true, thrown };
}

/** What a losing attempt's signal aborts with. */
function lost(o, k, winner) {
  return new DOMException(`${o.name}: attempt ${k} was cancelled: attempt ${winner} won (hedging)`, 'AbortError');
}

/** What an attempt still running when the call ended without a winner aborts with. */
function ended(o, k) {
  return new DOMException(`${o.name}: attempt ${k} was cancelled: the hedged call is over`, 'AbortError');
}

/** Runs a hedged call (lib/call.js hands it over when the retrier's policy hedges). */
function runHedged(o, fn, signal, t0) {
  return new HedgeRun(o, fn, signal, t0).run();
}

module.exports = { runHedged };
