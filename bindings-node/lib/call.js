'use strict';
// The call loop. JS owns awaiting, timers and AbortSignals; every decision (wait, stop,
// deadline, budget, events) comes from the engine's Call (a native handle), started only at
// the first failure. This file holds one call's state, its engine handle and events, and
// the loop; an attempt (lib/call-attempt.js), the verdict on its failure (lib/verdict.js,
// lib/retry-hooks.js) and the wait after it (lib/call-wait.js) are their own modules.
const native = require('./native');
const { now, lastSeenVirtual, breakerBase } = require('./clock');
const { watch, unwatch } = require('./abort');
const { RetryExhaustedError } = require('./errors');
const { V_SUCCESS } = require('./codes');
const { AttemptContext, BoundedAttemptContext, abortAttempt } = require('./attempt');
const { clearBound } = require('./bound');
const { reportListenerError } = require('./events');
const { nameOf, isDeadline, reraised } = require('./call-errors');
const {
  OK, FAILED, ABORTED, SETTLED,
  nextBoundMs, runAttempt, deadlineAttempt, settledWithValue, settledWithError, cutAtDeadline,
} = require('./call-attempt');
const { fail, failValue, judge } = require('./verdict');
const { wait, unlessAborted, ABANDONED } = require('./call-wait');

// Which event kinds carry the failure: the core's rule, read once.
const CARRIES_ERROR = new Set(native.eventKindsCarryingError());

const BREAKER_KINDS = new Set(['breaker_opened', 'breaker_half_open', 'breaker_closed']);

/** One call in progress, from its first failure (or from its start, on the full loop). */
class CallRun {
  constructor(o, fn, signal, t0, startedOnLastSeen = false) {
    this.o = o;
    this.fn = fn;
    // What events and errors name: the retrier's chosen name, else the function's.
    this.name = nameOf(o, fn);
    this.signal = signal;
    this.t0 = t0;
    // t0 came from the happy path's reading of the switch (clock.startTime).
    this.startedOnLastSeen = startedOnLastSeen;
    this.engine = null;
    // Added to every time the engine is given: a policy with a circuit breaker decides on
    // the breaker's process-wide time base (clock.breakerBase); others on now()'s.
    this.base = 0;
    // The failures (errors and rejected values), the last HISTORY of them.
    this.errors = [];
    // Whether the last failure was a value shouldRetryResult rejected (not a throw).
    this.lastWasValue = false;
    this.value = undefined;
    this.error = undefined;
    this.recordedAt = 0;
    // Set by the phase in progress (attempt or wait) so an abort can end it at once.
    this.interrupt = null;
    // The bounded attempt in progress (its signal is its own: the call's abort reaches it
    // through onAbort).
    this.attemptCtx = null;
    // When the attempt in progress runs out of time, on the call's clock.
    this.boundAt = 0;
    // The failure of an attempt the deadline cut short (see fail, lib/verdict.js).
    this.deadlineError = null;
    this.timeoutError = null; // the attempt timeout's cut (record: priced as a timeout)
    // An awaited hook or predicate was still pending at the deadline (lib/call-wait.js).
    this.late = false;
    // When the attempt after a wait started (the engine's after-wait time).
    this.attemptStart = 0;
    // The call's deadline timer (see runAttempt), and what it does: cut the attempt running.
    // A first bound that is the deadline is an entry of the retrier's queue instead
    // (`queued`, its position), kept for the whole call: no timer of its own.
    this.deadlineTimer = undefined;
    this.queued = SETTLED;
    this.cut = null;
    // deadlineAttempt's attempt in progress: its number, bound and promise's resolve.
    this.attemptN = 0;
    this.attemptBound = 0;
    this.resolveAttempt = null;
    // The next attempt's bound, asked with the end of the wait before it (callAfterWaitBound);
    // -1 when not asked yet.
    this.nextBound = -1;
    // The virtual-time switch as this thread last saw it when the call loop took over: a
    // start read on the last-seen switch (startedOnLastSeen) is re-read if it moved since
    // (see engineCall).
    this.seen = lastSeenVirtual();
  }

  /** The retrier's queue: the call's deadline (its first bound) passed. */
  expired = () => {
    this.queued = SETTLED;
    this.cut?.();
  };

  /** deadlineAttempt's callbacks (lib/call-attempt.js): one each per call, not per attempt. */
  onValue = (v) => settledWithValue(this, v);

  onError = (e) => settledWithError(this, e);

  /** The deadline passed during deadlineAttempt's attempt: it fails with a TimeoutError. */
  cutDeadline = () => cutAtDeadline(this);

  /** The call's signal aborted: end the phase in progress (attempt or wait) at once. */
  onAbort() {
    if (this.attemptCtx !== null) abortAttempt(this.attemptCtx, this.signal.reason);
    const interrupt = this.interrupt;
    this.interrupt = null;
    if (interrupt !== null) interrupt();
  }

  /**
   * The engine's handle for this call, started at t0 on first need. `at`: now, when the
   * caller has just read it (now() also re-reads the switch), saving a second reading.
   */
  engineCall(at) {
    if (this.engine === null) {
      if (this.startedOnLastSeen && this.o.needsClock) {
        // Another thread turned the virtual-time switch since this thread last looked:
        // t0 is on the other clock, so the call starts now, on the right one.
        const t = at === undefined ? now() : at;
        if (lastSeenVirtual() !== this.seen) this.t0 = t;
      }
      if (this.o.hasBreaker) this.base = breakerBase();
      this.engine = native.callStart(this.o.policyId, this.t0 + this.base, this.o.onEvent !== undefined);
      // Attempt 1 began with the call: its bound is read from t0, not from 0 (the engine
      // counts a time before the attempt's start as its start, so 0 would read as t0 on
      // the engine's clock only by chance).
      this.attemptStart = this.t0;
    }
    return this.engine;
  }

  emit(error) {
    const listener = this.o.onEvent;
    if (listener === undefined || this.engine === null) return;
    for (const rec of native.callTakeEvents(this.engine)) {
      // A breaker's moves are the retrier's (its breaker is shared by every function it
      // runs): they carry the retrier's name, not the function's.
      const event = { kind: rec.kind, name: BREAKER_KINDS.has(rec.kind) ? this.o.name : this.name, attempt: rec.attempt, elapsedMs: rec.elapsedMs };
      if (rec.delayMs !== null && rec.delayMs !== undefined) event.delayMs = rec.delayMs;
      if (rec.reason !== null && rec.reason !== undefined) event.reason = rec.reason;
      event.retriesLeft = rec.retriesLeft;
      // The core says which kinds carry the failure (retrying does: see docs/contract.md).
      if (CARRIES_ERROR.has(rec.kind) && this.errors.length > 0) {
        if (this.lastWasValue) event.value = error;
        else event.error = error;
      }
      try {
        listener(event);
      } catch (err) {
        reportListenerError(err);
      }
    }
  }

  async run(firstError, hasFirstError) {
    // A hedging policy runs its attempts side by side (lib/hedge.js).
    if (this.o.hedges) return require('./hedge').runHedged(this.o, this.fn, this.signal, this.t0);
    const signal = this.signal;
    if (signal !== undefined) watch(signal, this);
    // Nothing can interrupt an attempt without a signal or a bound.
    const plain = signal === undefined && !this.o.bounded;
    try {
      let attempt = 1;
      let outcome = FAILED;
      // A policy with a circuit breaker asks it before the first attempt.
      if (this.o.hasBreaker) this.admit();
      if (hasFirstError) this.error = firstError;
      else outcome = await runAttempt(this, 1, nextBoundMs(this));
      for (;;) {
        let rejectedValue = false;
        if (outcome === OK) {
          if (this.o.shouldRetryResult === undefined) return this.succeed();
          let rejects = judge(this, this.value);
          // A pending answer: the deadline bounds it (judge), the call's signal ends it.
          if (typeof rejects !== 'boolean') rejects = signal === undefined ? await rejects : await unlessAborted(this, rejects);
          if (rejects === ABANDONED) throw this.cancel();
          if (!rejects) return this.succeed();
          rejectedValue = true;
        }
        // The call's own abort is never offered to the predicate, whatever fn threw.
        if (outcome === ABORTED || signal?.aborted) throw this.cancel();
        let delay = rejectedValue ? failValue(this, this.value) : fail(this, this.error);
        if (typeof delay !== 'number') delay = signal === undefined ? await delay : await unlessAborted(this, delay);
        if (delay === ABANDONED) throw this.cancel();
        // Even a zero wait yields one turn of the event loop: a zero-delay storm must not
        // starve timers, I/O and the very abort that would end it.
        if (signal === undefined && delay === 0) {
          // Only the call's signal interrupts a wait (a bound cuts attempts, not waits):
          // without one, yield the turn as a hand loop would.
          await new Promise(setImmediate);
        } else if (!(await wait(this, delay))) {
          throw this.cancel();
        }
        // The next attempt starts now: its bound is asked at this same time, in the same
        // crossing when the call is bounded (attempt reads it).
        const started = (this.attemptStart = now());
        if (this.o.bounded) {
          const bound = native.callAfterWaitBound(this.engine, started + this.base);
          this.emit(this.errors[this.errors.length - 1]);
          if (bound < 0) throw this.exhausted();
          this.nextBound = bound;
          attempt += 1;
        } else {
          const next = native.callAfterWait(this.engine, started + this.base);
          this.emit(this.errors[this.errors.length - 1]);
          if (next < 0) throw this.exhausted();
          attempt = next;
        }
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
          continue;
        }
        const bound = nextBoundMs(this);
        if (signal === undefined && bound !== null && this.o.interrupts && isDeadline(this.o, bound)) {
          // Only the deadline bounds it (the default retrier's retries): fn is called
          // from this loop, as a hand-written loop calls it. An error fn creates captures
          // its stack, whose cost grows with each frame between fn and the loop.
          const ctx = new BoundedAttemptContext(attempt, bound, this.attemptStart);
          let result;
          let threw = false;
          try {
            result = this.fn(ctx);
          } catch (err) {
            this.error = err;
            threw = true;
          }
          outcome = threw ? FAILED : await deadlineAttempt(this, ctx, attempt, bound, result);
        } else {
          outcome = await runAttempt(this, attempt, bound);
        }
      }
    } finally {
      if (signal !== undefined) unwatch(signal, this);
      if (this.deadlineTimer !== undefined) clearBound(this.deadlineTimer);
      if (this.queued !== SETTLED) this.o.queue.settle(this.queued);
      if (this.engine !== null) native.callFree(this.engine);
    }
  }

  /** Starts the engine's call, which asks the breaker; a refusal is thrown, fn never runs. */
  admit() {
    const refusal = native.callRefusal(this.engineCall());
    this.emit(undefined);
    if (refusal === null || refusal === undefined) return;
    const err = new RetryExhaustedError(this.name, 0, 'circuit_open', []);
    err.breakerState = refusal[0];
    err.retryInMs = refusal[1];
    throw err;
  }

  exhausted() {
    const id = this.engine;
    const result = this.lastWasValue ? this.errors[this.errors.length - 1] : undefined;
    const reason = native.callReason(id);
    // A deadline that max_attempts could never fit: the engine's hint names both knobs.
    const hint = reason === 'deadline' ? this.o.deadlineHint : null;
    const exhausted = new RetryExhaustedError(this.name, native.callAttempt(id), reason, this.errors, result, hint);
    return this.o.reraise && !this.lastWasValue ? reraised(exhausted) : exhausted;
  }

  succeed() {
    // The engine needs to hear of a success only to credit a budget or emit an event;
    // otherwise it is counted here for r.stats() (what the Success event would count).
    if (this.o.recordsSuccess) {
      native.callRecord(this.engineCall(), V_SUCCESS, undefined, now() + this.base);
      this.emit(undefined);
    } else {
      this.o.counts.unseenOk += 1;
    }
    return this.value;
  }

  /** Ends the call as cancelled (the Cancelled event) and returns what to reject with. */
  cancel() {
    // Told even without a listener: the engine's statistics count the cancellation.
    native.callCancel(this.engineCall(), now() + this.base);
    this.emit(this.errors[this.errors.length - 1]);
    return this.signal.reason;
  }
}

module.exports = { CallRun };
