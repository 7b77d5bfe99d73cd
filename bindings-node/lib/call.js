'use strict';
// The call loop. JS owns awaiting, timers and AbortSignals; every decision (wait, stop,
// deadline, budget, events) comes from the engine's Call (a native handle), started only at
// the first failure.
const native = require('./native');
const { now, isVirtual } = require('./clock');
const { watch, unwatch } = require('./abort');
const { typeName } = require('./options');
const { RetryExhaustedError } = require('./errors');
const { V_SUCCESS, V_TRANSIENT, V_PERMANENT, REJECTED, EXHAUSTED } = require('./codes');
const { AttemptContext } = require('./attempt');
const { reportListenerError } = require('./events');

// Which event kinds carry the failure: the core's rule, read once.
const CARRIES_ERROR = new Set(native.eventKindsCarryingError());

// How many failures a call keeps (the last ones): the core's history cap.
const HISTORY = native.historyCap();

// The longest single setTimeout; longer waits are armed in chunks.
const MAX_TIMER_MS = 2 ** 31 - 1;

// Attempt outcomes inside the loop.
const OK = 0;
const FAILED = 1;
const ABORTED = 2;


function isThenable(r) {
  return r !== null && (typeof r === 'object' || typeof r === 'function') && typeof r.then === 'function';
}

/** One call in progress, from its first failure (or from its start, on the full loop). */
class CallRun {
  constructor(o, fn, signal, t0) {
    this.o = o;
    this.fn = fn;
    this.signal = signal;
    this.t0 = t0;
    this.engine = null;
    this.errors = [];
    this.value = undefined;
    this.error = undefined;
    this.recordedAt = 0;
    // Set by the phase in progress (attempt or wait) so an abort can end it at once.
    this.interrupt = null;
    this.attemptController = null;
  }

  /** The call's signal aborted: end the phase in progress (attempt or wait) at once. */
  onAbort() {
    this.attemptController?.abort(this.signal.reason);
    const interrupt = this.interrupt;
    this.interrupt = null;
    if (interrupt !== null) interrupt();
  }

  /** The engine's handle for this call, started at t0 on first need. */
  engineCall() {
    if (this.engine === null) this.engine = native.callStart(this.o.policyId, this.t0, this.o.onEvent !== undefined);
    return this.engine;
  }

  emit(error) {
    const listener = this.o.onEvent;
    if (listener === undefined || this.engine === null) return;
    for (const rec of native.callTakeEvents(this.engine)) {
      const event = { kind: rec.kind, name: this.o.name, attempt: rec.attempt, elapsedMs: rec.elapsedMs };
      if (rec.delayMs !== null && rec.delayMs !== undefined) event.delayMs = rec.delayMs;
      if (rec.reason !== null && rec.reason !== undefined) event.reason = rec.reason;
      // The core says which kinds carry the failure (retrying does: see docs/contract.md).
      if (CARRIES_ERROR.has(rec.kind) && this.errors.length > 0) event.error = error;
      try {
        listener(event);
      } catch (err) {
        reportListenerError(err);
      }
    }
  }

  async run(firstError, hasFirstError) {
    const signal = this.signal;
    if (signal !== undefined) watch(signal, this);
    const plain = signal === undefined && this.o.attemptTimeoutMs === 0;
    try {
      let attempt = 1;
      let outcome = FAILED;
      if (hasFirstError) this.error = firstError;
      else outcome = await this.attempt(1);
      for (;;) {
        if (outcome === OK) return this.succeed();
        // The call's own abort is never offered to the predicate, whatever fn threw.
        if (outcome === ABORTED || signal?.aborted) throw this.cancel();
        const delay = this.fail(this.error);
        if (delay > 0 || signal !== undefined) {
          if (!(await this.wait(delay))) throw this.cancel();
        }
        // After a zero wait with nobody listening no time has passed since the verdict
        // (a listener may advance the virtual clock, so then the clock is read again).
        const resumedAt = delay === 0 && this.o.onEvent === undefined ? this.recordedAt : now();
        const next = native.callAfterWait(this.engine, resumedAt);
        this.emit(this.error);
        if (next < 0) throw this.exhausted();
        attempt = next;
        if (plain) {
          // Without a signal or a timer nothing can interrupt the attempt: await it
          // directly, as a hand-written loop would.
          try {
            this.value = await this.fn(new AttemptContext(attempt, undefined));
            outcome = OK;
          } catch (err) {
            this.error = err;
            outcome = FAILED;
          }
        } else {
          outcome = await this.attempt(attempt);
        }
      }
    } finally {
      if (signal !== undefined) unwatch(signal, this);
      if (this.engine !== null) native.callFree(this.engine);
    }
  }

  /** Runs fn once; settles with OK, FAILED (this.error) or ABORTED, never rejects. */
  attempt(n) {
    const { o, signal } = this;
    let ctxSignal = signal;
    let controller = null;
    if (o.attemptTimeoutMs > 0) {
      controller = this.attemptController = new AbortController();
      ctxSignal = controller.signal;
    }
    return new Promise((resolve) => {
      let timer;
      let settled = false;
      const settle = (outcome, payload) => {
        if (settled) return;
        settled = true;
        this.interrupt = null;
        if (controller !== null) {
          clearTimeout(timer);
          this.attemptController = null;
        }
        if (outcome === OK) this.value = payload;
        else if (outcome === FAILED) this.error = payload;
        resolve(outcome);
      };
      this.interrupt = () => settle(ABORTED);
      if (controller !== null) {
        const ms = o.attemptTimeoutMs;
        timer = setTimeout(() => {
          const err = new DOMException(`${o.name}: attempt ${n} timed out after ${ms} ms`, 'TimeoutError');
          controller.abort(err);
          settle(FAILED, err);
        }, ms);
      }
      let result;
      try {
        result = o.attemptTimeoutMs > 0 || signal !== undefined ? this.fn(new AttemptContext(n, ctxSignal)) : this.fn(new AttemptContext(n, undefined));
      } catch (err) {
        settle(FAILED, err);
        return;
      }
      if (isThenable(result)) {
        // Also handles a late rejection after an abort or timeout: never unhandled.
        Promise.resolve(result).then((v) => settle(OK, v), (e) => settle(FAILED, e));
      } else {
        settle(OK, result);
      }
    });
  }

  /** Classifies a failure and asks the engine; returns the wait, or throws the outcome. */
  fail(error) {
    const o = this.o;
    if (this.errors.length === HISTORY) this.errors.shift();
    this.errors.push(error);
    let verdict = V_PERMANENT;
    let hint;
    let hookError;
    let failedHook = false;
    try {
      if (o.shouldRetry(error)) {
        verdict = V_TRANSIENT;
        hint = o.retryAfterMs(error);
        if (hint === null) hint = undefined;
        else if (hint !== undefined && typeof hint !== 'number') {
          throw new TypeError(`retryAfterMs must return a number or undefined, got ${typeName(hint)}`);
        }
      }
    } catch (err) {
      // A throwing predicate (or hint reader) ends the call with its throw; the original
      // failure stays reachable as its cause.
      failedHook = true;
      hookError = err;
      verdict = V_PERMANENT;
      hint = undefined;
      attachCause(err, error);
    }
    const id = this.engineCall();
    this.recordedAt = now();
    const decision = native.callRecord(id, verdict, hint, this.recordedAt);
    this.emit(error);
    if (decision >= 0) return decision;
    if (failedHook) throw hookError;
    if (decision === REJECTED) throw error;
    if (decision === EXHAUSTED) throw this.exhausted();
    throw new Error(`retryrs: unexpected engine decision ${decision} (a bug)`);
  }

  exhausted() {
    const id = this.engine;
    return new RetryExhaustedError(this.o.name, native.callAttempt(id), native.callReason(id), this.errors);
  }

  succeed() {
    // The engine needs to hear of a success only to credit a budget or emit an event.
    if (this.o.recordsSuccess) {
      native.callRecord(this.engineCall(), V_SUCCESS, undefined, now());
      this.emit(undefined);
    }
    return this.value;
  }

  /** Ends the call as cancelled (the Cancelled event) and returns what to reject with. */
  cancel() {
    if (this.o.onEvent !== undefined) {
      native.callCancel(this.engineCall(), now());
      this.emit(this.errors[this.errors.length - 1]);
    }
    return this.signal.reason;
  }

  /** Waits `ms`; resolves false if the call was aborted first. A zero wait arms nothing. */
  wait(ms) {
    const signal = this.signal;
    if (signal?.aborted) return false;
    if (ms === 0) return true;
    if (isVirtual()) {
      native.virtualAdvance(ms);
      return true;
    }
    return new Promise((resolve) => {
      let timer;
      let left = ms;
      const arm = () => {
        const chunk = Math.min(left, MAX_TIMER_MS);
        left -= chunk;
        timer = setTimeout(() => {
          if (left > 0) return arm();
          this.interrupt = null;
          resolve(true);
        }, chunk);
      };
      this.interrupt = () => {
        clearTimeout(timer);
        resolve(false);
      };
      arm();
    });
  }
}

function attachCause(err, original) {
  if (err === null || typeof err !== 'object' || err === original) return;
  if (err.cause !== undefined) return;
  try {
    Object.defineProperty(err, 'cause', { value: original, writable: true, configurable: true, enumerable: false });
  } catch {
    // A frozen error keeps its shape; the original failure is still in the events.
  }
}

module.exports = { CallRun, isThenable };
