'use strict';
// The call loop. JS owns awaiting, timers and AbortSignals; every decision (wait, stop,
// deadline, budget, events) comes from the engine's Call (a native handle), started only at
// the first failure: a call whose first attempt succeeds never crosses into native code
// (unless a budget must be credited or a listener told).
const native = require('./native');
const { now, isVirtual } = require('./clock');
const { watch, unwatch } = require('./abort');
const { normalise, typeName } = require('./options');
const { RetryExhaustedError, describe } = require('./errors');
const { channel: eventChannel, observedOptions } = require('./diagnostics');
const { V_SUCCESS, V_TRANSIENT, V_PERMANENT, REJECTED, EXHAUSTED } = require('./codes');

// The longest single setTimeout; longer waits are armed in chunks.
const MAX_TIMER_MS = 2 ** 31 - 1;

// Attempt outcomes inside the loop.
const OK = 0;
const FAILED = 1;
const ABORTED = 2;

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

function isAbortSignal(s) {
  return typeof s === 'object' && s !== null && typeof s.aborted === 'boolean' && typeof s.addEventListener === 'function';
}

function isThenable(r) {
  return r !== null && (typeof r === 'object' || typeof r === 'function') && typeof r.then === 'function';
}

/** Reports a listener's throw on Node's warning channel; the call goes on unchanged. */
function reportListenerError(err) {
  const warning = new Error(`retryrs: an onEvent listener threw: ${describe(err)}`, { cause: err });
  warning.name = 'RetryrsListenerError';
  process.emitWarning(warning);
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
      if (rec.kind !== 'success' && rec.kind !== 'retrying' && this.errors.length > 0) event.error = error;
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

// Options already normalised, for a retrier derived from another (see withClassifier).
const DERIVED = Symbol('retryrs.derived');
let derive;

class Retrier {
  #o;

  /** @param {object} [options] see index.d.ts */
  constructor(options) {
    const derived = options !== null && typeof options === 'object' ? options[DERIVED] : undefined;
    this.#o = derived !== undefined ? derived : normalise(options);
  }

  static {
    derive = (retrier, hooks) => new Retrier({ [DERIVED]: Object.freeze({ ...retrier.#o, ...hooks }) });
  }

  /** The retrier's name, as events and errors carry it. */
  get name() {
    return this.#o.name;
  }

  /**
   * Runs fn until it succeeds, fails permanently, or the policy gives up.
   * @param {(ctx: AttemptContext) => any} fn
   * @param {{ signal?: AbortSignal }} [options]
   */
  call(fn, options) {
    if (typeof fn !== 'function') return Promise.reject(new TypeError(`call(fn): fn must be a function, got ${typeName(fn)}`));
    // Subscribers of `retryrs:event` (lib/diagnostics.js) are looked for once per call.
    const o = eventChannel.hasSubscribers ? observedOptions(this.#o) : this.#o;
    let signal;
    if (options !== undefined && options !== null) {
      if (typeof options !== 'object') return Promise.reject(new TypeError(`call(fn, options): options must be an object, got ${typeName(options)}`));
      signal = options.signal ?? undefined;
      if (signal !== undefined && !isAbortSignal(signal)) {
        return Promise.reject(new TypeError(`call(fn, { signal }): signal must be an AbortSignal, got ${typeName(signal)}`));
      }
    }
    if (signal !== undefined && signal.aborted) return this.#abortedBeforeStart(o, signal);
    const t0 = o.needsClock ? now() : 0;
    if (signal !== undefined || o.needsFullLoop) return new CallRun(o, fn, signal, t0).run(undefined, false);

    // The fast path: no signal, no timer, no listener, no budget; no allocation but the
    // promise returned, and no native crossing unless the attempt fails.
    let result;
    try {
      result = fn(FIRST_ATTEMPT);
    } catch (err) {
      return new CallRun(o, fn, undefined, t0).run(err, true);
    }
    if (result instanceof Promise) {
      return result.then(undefined, (err) => new CallRun(o, fn, undefined, t0).run(err, true));
    }
    if (isThenable(result)) {
      return Promise.resolve(result).then(undefined, (err) => new CallRun(o, fn, undefined, t0).run(err, true));
    }
    return Promise.resolve(result);
  }

  #abortedBeforeStart(o, signal) {
    if (o.onEvent !== undefined) {
      for (const rec of native.cancelledBeforeStartEvents(o.policy)) {
        try {
          o.onEvent({ kind: rec.kind, name: o.name, attempt: rec.attempt, elapsedMs: rec.elapsedMs });
        } catch (err) {
          reportListenerError(err);
        }
      }
    }
    return Promise.reject(signal.reason);
  }
}

/**
 * The same retrier (policy, listener, budget, attempt timeout) deciding with other hooks:
 * `shouldRetry` and `retryAfterMs`. The HTTP helper uses it: its verdicts are the core's
 * HTTP rules, not the user's predicate. Not part of the public API.
 */
function withClassifier(retrier, shouldRetry, retryAfterMs) {
  if (!(retrier instanceof Retrier)) throw new TypeError(`retrier must be a Retrier, got ${typeName(retrier)}`);
  return derive(retrier, { shouldRetry, retryAfterMs });
}

module.exports = { Retrier, AttemptContext, withClassifier };
