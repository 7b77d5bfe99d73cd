'use strict';
// The call loop. JS owns awaiting, timers and AbortSignals; every decision (wait, stop,
// deadline, budget, events) comes from the engine's Call (a native handle), started only at
// the first failure.
const native = require('./native');
const { now, isVirtual, lastSeenVirtual, advanceVirtual, breakerBase } = require('./clock');
const { watch, unwatch } = require('./abort');
const { typeName } = require('./options');
const { RetryExhaustedError } = require('./errors');
const { V_SUCCESS, V_TRANSIENT, V_PERMANENT, V_TIMED_OUT, V_DONT_RETRY, DONT_RETRY, REJECTED, EXHAUSTED, PLAN_ENGINE, PLAN_EXACT, PLAN_STOP } = require('./codes');
const { AttemptContext, BoundedAttemptContext, abortAttempt } = require('./attempt');
// MAX_TIMER_MS: the longest single setTimeout; longer waits are armed in chunks.
const { armBound, clearBound, MAX_TIMER_MS } = require('./bound');
const { reportListenerError } = require('./events');
const { nameOf, isDeadline, boundError, reraised, notBoolean, hookError, badHint, isTimedOut } = require('./call-errors');
const { isThenable } = require('./thenable');

// Which event kinds carry the failure: the core's rule, read once.
const CARRIES_ERROR = new Set(native.eventKindsCarryingError());

const BREAKER_KINDS = new Set(['breaker_opened', 'breaker_half_open', 'breaker_closed']);

// How many failures a call keeps (the last ones): the core's history cap.
const HISTORY = native.historyCap();

const perf = globalThis.performance;

// A queue position (lib/bound.js) that is no longer queued.
const SETTLED = -1;


// Attempt outcomes inside the loop.
const OK = 0;
const FAILED = 1;
const ABORTED = 2;

// What an awaited hook came to when the call's signal aborted first (see unlessAborted).
const ABANDONED = Symbol('abandoned');


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
    // The failure of an attempt the deadline cut short (see fail).
    this.deadlineError = null;
    this.timeoutError = null; // the attempt timeout's cut (record: priced as a timeout)
    // An awaited hook or predicate was still pending at the deadline (see beforeDeadline).
    this.late = false;
    // When the attempt after a wait started (the engine's after-wait time).
    this.attemptStart = 0;
    // The call's deadline timer (see attempt), and what it does: cut the attempt running.
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
      else outcome = await this.attempt(1, this.nextBoundMs());
      for (;;) {
        let rejectedValue = false;
        if (outcome === OK) {
          if (this.o.shouldRetryResult === undefined) return this.succeed();
          let rejects = this.judge(this.value);
          // A pending answer: the deadline bounds it (judge), the call's signal ends it.
          if (typeof rejects !== 'boolean') rejects = signal === undefined ? await rejects : await this.unlessAborted(rejects);
          if (rejects === ABANDONED) throw this.cancel();
          if (!rejects) return this.succeed();
          rejectedValue = true;
        }
        // The call's own abort is never offered to the predicate, whatever fn threw.
        if (outcome === ABORTED || signal?.aborted) throw this.cancel();
        let delay = rejectedValue ? this.failValue(this.value) : this.fail(this.error);
        if (typeof delay !== 'number') delay = signal === undefined ? await delay : await this.unlessAborted(delay);
        if (delay === ABANDONED) throw this.cancel();
        // Even a zero wait yields one turn of the event loop: a zero-delay storm must not
        // starve timers, I/O and the very abort that would end it.
        if (signal === undefined && delay === 0) {
          // Only the call's signal interrupts a wait (a bound cuts attempts, not waits):
          // without one, yield the turn as a hand loop would.
          await new Promise(setImmediate);
        } else if (!(await this.wait(delay))) {
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
        const bound = this.nextBoundMs();
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
          outcome = threw ? FAILED : await this.deadlineAttempt(ctx, attempt, bound, result);
        } else {
          outcome = await this.attempt(attempt, bound);
        }
      }
    } finally {
      if (signal !== undefined) unwatch(signal, this);
      if (this.deadlineTimer !== undefined) clearBound(this.deadlineTimer);
      if (this.queued !== SETTLED) this.o.queue.settle(this.queued);
      if (this.engine !== null) native.callFree(this.engine);
    }
  }

  /**
   * A hook's pending answer (onRetry, delayMs, a Promise from shouldRetry or
   * retryAfterMs), or ABANDONED as soon as the call's signal aborts: the call does not
   * wait for the hook, whose late answer then comes to nothing (the engine's call is
   * over by then, and a late rejection is caught here).
   */
  unlessAborted(pending) {
    return new Promise((resolve, reject) => {
      let done = false;
      this.interrupt = () => {
        done = true;
        pending.catch(() => {});
        resolve(ABANDONED);
      };
      pending.then(
        (answer) => {
          if (done) return;
          this.interrupt = null;
          resolve(answer);
        },
        (err) => {
          if (done) return;
          this.interrupt = null;
          reject(err);
        },
      );
      if (this.signal.aborted) this.interrupt();
    });
  }

  /**
   * The bound (ms) of the attempt starting now, or null when unbounded; sets boundAt.
   * Attempt 1 (the engine starts at the first failure) has the policy's first bound; a
   * later one the engine's, asked with the end of the wait before it when the call is
   * bounded (nextBound), else now.
   */
  nextBoundMs() {
    const o = this.o;
    if (!o.bounded) return null;
    let bound;
    let start;
    if (this.engine === null) {
      bound = o.firstBoundMs;
      start = this.t0;
    } else {
      if (this.nextBound >= 0 || Number.isNaN(this.nextBound)) {
        bound = Number.isNaN(this.nextBound) ? null : this.nextBound;
        this.nextBound = -1;
      } else {
        bound = native.callRemainingMs(this.engine, this.attemptStart + this.base);
      }
      start = this.attemptStart;
    }
    this.boundAt = start + bound;
    return bound;
  }

  /**
   * Runs fn once, bounded by `bound` (nextBoundMs); settles with OK, FAILED (this.error)
   * or ABORTED, never rejects. A bounded attempt (a deadline or an attempt timeout) gets
   * the engine's bound as ctx.remainingMs, and past it its signal aborts and it fails
   * with a TimeoutError.
   */
  attempt(n, bound) {
    const { o, signal } = this;
    const start = this.engine === null ? this.t0 : this.attemptStart;
    const ctx = bound === null ? new AttemptContext(n, signal) : new BoundedAttemptContext(n, bound, start);
    if (bound !== null) this.attemptCtx = ctx;
    return new Promise((resolve) => {
      let timer;
      let settled = false;
      const settle = (outcome, payload) => {
        if (settled) return;
        settled = true;
        this.interrupt = null;
        this.attemptCtx = null;
        this.cut = null;
        if (timer !== undefined) clearBound(timer);
        if (outcome === OK) this.value = payload;
        else if (outcome === FAILED) this.error = payload;
        resolve(outcome);
      };
      this.interrupt = () => settle(ABORTED);
      if (bound !== null && o.interrupts) {
        const cut = () => {
          const err = boundError(o, this.name, n, bound);
          if (isDeadline(o, bound)) this.deadlineError = err;
          else this.timeoutError = err;
          abortAttempt(ctx, err);
          settle(FAILED, err);
        };
        if (isDeadline(o, bound)) {
          // Every attempt the deadline bounds ends at the same time: one timer for the
          // call, armed at the first of them, cuts whichever attempt is running then:
          // the retrier's queue for a first attempt (all of them share its bound).
          this.cut = cut;
          if (this.engine === null && o.queue !== null) {
            this.queued = o.queue.add(this.expired, (lastSeenVirtual() ? perf.now() : this.t0) + bound);
          } else if (this.queued === SETTLED && this.deadlineTimer === undefined) {
            this.deadlineTimer = armBound(bound, o.unref, () => {
              // Fired (perhaps during a wait, a little early): a later attempt arms anew.
              this.deadlineTimer = undefined;
              this.cut?.();
            });
          }
        } else {
          timer = armBound(bound, o.unref, cut);
        }
      }
      let result;
      try {
        result = this.fn(ctx);
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

  /**
   * `attempt` for a later attempt (n > 1) that only the deadline bounds, without a call
   * signal (the default retrier's retries), once fn (called by the loop with `ctx`)
   * returned `result`: the same outcome, without a closure per attempt. Only the deadline
   * can cut it, and a cut ends the call (fail), so no later attempt follows a cut one:
   * the call's own callbacks (onValue, onError) serve every attempt, and once `cut` is
   * null (settled, or cut) a late settlement is dropped.
   */
  deadlineAttempt(ctx, n, bound, result) {
    if (!isThenable(result)) {
      this.value = result;
      return OK;
    }
    this.attemptN = n;
    this.attemptBound = bound;
    this.attemptCtx = ctx;
    this.cut = this.cutDeadline;
    if (this.queued === SETTLED && this.deadlineTimer === undefined) {
      this.deadlineTimer = armBound(bound, this.o.unref, () => {
        // Fired (perhaps during a wait, a little early): a later attempt arms anew.
        this.deadlineTimer = undefined;
        this.cut?.();
      });
    }
    const attempt = new Promise(captureResolve);
    this.resolveAttempt = captured;
    captured = undefined;
    // Also handles a late rejection after the cut: never unhandled.
    Promise.resolve(result).then(this.onValue, this.onError);
    return attempt;
  }

  /** deadlineAttempt's callbacks: the attempt settled (ignored once cut). */
  onValue = (v) => {
    if (this.cut === null) return;
    this.value = v;
    this.settleAttempt(OK);
  };

  onError = (e) => {
    if (this.cut === null) return;
    this.error = e;
    this.settleAttempt(FAILED);
  };

  /** The deadline passed during deadlineAttempt's attempt: it fails with a TimeoutError. */
  cutDeadline = () => {
    const err = boundError(this.o, this.name, this.attemptN, this.attemptBound);
    this.deadlineError = err;
    abortAttempt(this.attemptCtx, err);
    this.error = err;
    this.settleAttempt(FAILED);
  };

  settleAttempt(outcome) {
    const resolve = this.resolveAttempt;
    this.resolveAttempt = null;
    this.cut = null;
    this.attemptCtx = null;
    resolve(outcome);
  }

  /** Keeps a failure for RetryExhaustedError: the last HISTORY only (the contract's cap). */
  keep(error) {
    if (this.errors.length === HISTORY) this.errors.shift();
    this.errors.push(error);
  }

  /**
   * Classifies a failure and asks the engine: returns the wait (a number, or a promise of
   * one when a hook answered with a promise), or throws the outcome.
   */
  fail(error) {
    this.keep(error);
    this.lastWasValue = false;
    if (error === this.deadlineError) {
      // The deadline cut the attempt short: the call cannot go on, whatever shouldRetry
      // would say of a TimeoutError. Recorded at its bound at the earliest (a timer may
      // fire a little early on the clock), so the engine ends the call with reason
      // deadline.
      return this.record(error, V_TRANSIENT, undefined, false, Math.max(now(), this.boundAt));
    }
    let answer;
    try {
      answer = this.o.shouldRetry(error);
    } catch (err) {
      return this.hookFailed(error, err);
    }
    // Read by truthiness, as p-retry reads it: a falsy answer (undefined from the common
    // `err.code && codes.has(err.code)`) is "permanent", the original error passed through.
    if (answer === true) return this.hint(error);
    if (isThenable(answer)) {
      // Still pending at the deadline: the call ends there (see lateFailure).
      return Promise.resolve(this.beforeDeadline(answer)).then(
        (a) => (this.late ? this.lateFailure(error) : a ? this.hint(error) : this.record(error, V_PERMANENT, undefined)),
        (err) => this.hookFailed(error, err),
      );
    }
    return answer ? this.hint(error) : this.record(error, V_PERMANENT, undefined);
  }

  /**
   * Whether shouldRetryResult rejects fn's value (true: a failure, retried like a
   * transient error): a boolean, or a promise of one when the hook answered with a
   * promise. A throwing hook, or an answer that is not a boolean, ends the call with a
   * throw that carries the value (see hookError).
   */
  judge(value) {
    let answer;
    try {
      answer = this.o.shouldRetryResult(value);
    } catch (err) {
      return this.valueHookFailed(value, err);
    }
    if (typeof answer === 'boolean') return answer;
    if (isThenable(answer)) {
      return Promise.resolve(this.beforeDeadline(answer)).then(
        (a) => {
          if (this.late) {
            // Still pending at the deadline: the value is the call's last failure.
            this.keep(value);
            this.lastWasValue = true;
            return this.lateFailure(value);
          }
          return typeof a === 'boolean' ? a : this.valueHookFailed(value, notBoolean('shouldRetryResult', a));
        },
        (err) => this.valueHookFailed(value, err),
      );
    }
    return this.valueHookFailed(value, notBoolean('shouldRetryResult', answer));
  }

  valueHookFailed(value, thrown) {
    this.keep(value);
    this.lastWasValue = true;
    return this.hookFailed(value, thrown);
  }

  /** A value shouldRetryResult rejected: a failure handled exactly like a transient error. */
  failValue(value) {
    this.keep(value);
    this.lastWasValue = true;
    return this.hint(value);
  }

  /** A transient failure: reads the retry-after hint (sync or a promise), then records. */
  hint(error) {
    let hint;
    try {
      hint = this.o.retryAfterMs(error);
    } catch (err) {
      return this.hookFailed(error, err);
    }
    if (isThenable(hint)) {
      return Promise.resolve(this.beforeDeadline(hint)).then(
        (h) => (this.late ? this.lateFailure(error) : this.recordHint(error, h)),
        (err) => this.hookFailed(error, err),
      );
    }
    return this.recordHint(error, hint);
  }

  /**
   * A failure whose predicate or hint reader (shouldRetry, shouldRetryResult,
   * retryAfterMs) was still pending at the call's deadline: recorded as transient past the
   * deadline, so the engine ends the call there (reason deadline, the failure kept); the
   * late answer is dropped.
   */
  lateFailure(error) {
    return this.record(error, V_TRANSIENT, undefined, false, this.pastDeadline());
  }

  recordHint(error, hint) {
    if (hint === null || hint === undefined) return this.record(error, V_TRANSIENT, undefined);
    if (hint === DONT_RETRY) return this.record(error, V_DONT_RETRY, undefined);
    if (typeof hint !== 'number') {
      return this.hookFailed(error, new TypeError(`retryAfterMs must return a number, DONT_RETRY or undefined (or a Promise of one), got ${typeName(hint)}`));
    }
    const bad = badHint(this.o, hint);
    if (bad !== undefined) return this.hookFailed(error, bad);
    return this.record(error, V_TRANSIENT, hint);
  }

  /**
   * A throwing hook (or one whose answer is unusable) ends the call with its throw; the
   * original failure stays reachable as its cause (see hookError).
   */
  hookFailed(error, thrown) {
    this.record(error, V_PERMANENT, undefined, true);
    throw hookError(thrown, error);
  }

  /** Tells the engine; returns the wait or throws the outcome (hookFailed throws its own). */
  record(error, verdict, hint, fromHook = false, at = undefined) {
    const t = at === undefined ? now() : at;
    const id = this.engineCall(at === undefined ? t : undefined);
    this.recordedAt = t;
    // The TimeoutError of an attempt this layer cut at its attempt timeout (or a failure
    // an HTTP helper marked as timed out): a quota prices the retry after it as a
    // timeout's.
    if (verdict === V_TRANSIENT && (error === this.timeoutError || isTimedOut(error))) verdict = V_TIMED_OUT;
    // With onRetry or delayMs, a transient failure is proposed first: the hooks answer
    // before the engine decides (callSettle).
    const proposes = this.o.hooked && (verdict === V_TRANSIENT || verdict === V_TIMED_OUT) && !fromHook;
    const decision = proposes
      ? native.callPropose(id, verdict, hint, this.recordedAt + this.base)
      : native.callRecord(id, verdict, hint, this.recordedAt + this.base);
    this.emit(error);
    if (decision >= 0) return proposes ? this.askHooks(error, decision) : decision;
    if (fromHook) return decision;
    if (decision === REJECTED) throw error;
    if (decision === EXHAUSTED) throw this.exhausted();
    throw new Error(`retryrs: unexpected engine decision ${decision} (a bug)`);
  }

  /**
   * The engine proposed a wait of `delay` ms: onRetry first (a throw or `false` stops the
   * call: reason stopped), then delayMs (a number: wait exactly that; undefined: the
   * engine's wait), each awaited; then the engine decides (deadline, max_retry_after,
   * budget). Resolves to the wait or rejects with the outcome.
   */
  async askHooks(error, delay) {
    const o = this.o;
    const id = this.engine;
    const info = { attempt: native.callAttempt(id), delayMs: delay, retriesLeft: native.callRetriesLeft(id), name: this.name };
    if (this.lastWasValue) info.value = error;
    else info.error = error;
    if (o.onRetry !== undefined && (await this.askHook(o.onRetry, info, error)) === false) {
      return this.settle(PLAN_STOP, undefined, error);
    }
    // (onRetry ran past the deadline: delayMs is not asked.)
    if (this.late) return this.settle(PLAN_ENGINE, undefined, error, false, this.pastDeadline());
    if (o.delayMs === undefined) return this.settle(PLAN_ENGINE, undefined, error);
    const answer = await this.askHook(o.delayMs, info, error);
    if (this.late) return this.settle(PLAN_ENGINE, undefined, error, false, this.pastDeadline());
    if (answer === undefined || answer === null) return this.settle(PLAN_ENGINE, undefined, error);
    if (typeof answer !== 'number') {
      this.settle(PLAN_STOP, undefined, error, true);
      throw hookError(new TypeError(`delayMs must return a number of milliseconds or undefined (or a Promise of one), got ${typeName(answer)}`), error);
    }
    let decision;
    try {
      decision = native.callSettle(id, PLAN_EXACT, answer, now() + this.base);
    } catch (refused) {
      // Not a wait (NaN, negative, past the longest wait, Infinity): the engine's words,
      // naming the value (as JavaScript spells it).
      this.settle(PLAN_STOP, undefined, error, true);
      throw hookError(new RangeError(`delayMs: ${refused.message.replace(/got \S+$/, `got ${answer}`)}`), error);
    }
    return this.decided(error, decision);
  }

  /**
   * A hook's answer, awaited; a throw stops the call and is what it rejects with. Still
   * unanswered at the call's deadline, it answers undefined (the engine's wait, which the
   * engine then refuses: reason deadline) and its late answer is dropped.
   */
  async askHook(hook, info, error) {
    try {
      return await this.beforeDeadline(hook(info));
    } catch (thrown) {
      this.settle(PLAN_STOP, undefined, error, true);
      throw hookError(thrown, error);
    }
  }

  /** A time past the call's deadline (a timer may fire a little early on the clock). */
  pastDeadline() {
    return Math.max(now(), this.t0 + this.o.deadlineMs + 1);
  }

  /** `answer`, or undefined if it is a promise still pending at the call's deadline. */
  beforeDeadline(answer) {
    const deadlineMs = this.o.deadlineMs;
    if (deadlineMs === null || !isThenable(answer) || isVirtual()) return answer;
    const pending = Promise.resolve(answer);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.late = true;
        pending.catch(() => {});
        resolve(undefined);
      }, Math.max(0, this.t0 + deadlineMs - now()));
      if (this.o.unref) timer.unref();
      pending.then(
        (a) => {
          clearTimeout(timer);
          resolve(a);
        },
        (err) => {
          clearTimeout(timer);
          reject(err);
        },
      );
    });
  }

  /** The hooks' plan handed to the engine; returns the wait or throws the outcome. */
  settle(plan, exact, error, quiet = false, at = now()) {
    const decision = native.callSettle(this.engine, plan, exact, at + this.base);
    if (quiet) {
      // A hook threw: the call ends with its throw (the caller's), the events told.
      this.emit(error);
      return decision;
    }
    return this.decided(error, decision);
  }

  decided(error, decision) {
    this.emit(error);
    if (decision >= 0) return decision;
    if (decision === EXHAUSTED) throw this.exhausted();
    throw new Error(`retryrs: unexpected engine decision ${decision} (a bug)`);
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

  /**
   * Waits `ms`; resolves false if the call was aborted first. A zero wait (and a virtual
   * one) still yields a turn of the event loop (setImmediate), as the hand loop
   * `await new Promise(setImmediate)` would.
   */
  wait(ms) {
    const signal = this.signal;
    if (signal?.aborted) return false;
    if (ms === 0 || isVirtual()) {
      if (ms > 0) advanceVirtual(ms);
      return new Promise((resolve) => {
        const immediate = setImmediate(() => {
          this.interrupt = null;
          resolve(true);
        });
        this.interrupt = () => {
          clearImmediate(immediate);
          resolve(false);
        };
      });
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
        // unref: a pending retry wait alone does not keep the process alive (p-retry's and
        // cockatiel's option of the same name).
        if (this.o.unref) timer.unref();
      };
      this.interrupt = () => {
        clearTimeout(timer);
        resolve(false);
      };
      arm();
    });
  }
}

// The executor of deadlineAttempt's promise, shared: it hands the promise's resolve over
// in `captured`.
let captured;
function captureResolve(resolve) {
  captured = resolve;
}

module.exports = { CallRun, SETTLED };
