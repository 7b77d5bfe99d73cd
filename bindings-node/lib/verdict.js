'use strict';
// The verdict on an attempt that did not simply succeed: shouldRetry, shouldRetryResult
// and retryAfterMs classify the failure (or the rejected value), and the engine is told
// (record), which answers with the wait or ends the call. A hook's pending answer is held
// to the call's deadline; a throwing hook ends the call carrying the failure.
const native = require('./native');
const { now } = require('./clock');
const { typeName } = require('./options');
const { V_TRANSIENT, V_PERMANENT, V_TIMED_OUT, V_DONT_RETRY, DONT_RETRY, REJECTED, EXHAUSTED } = require('./codes');
const { hookError, notBoolean, badHint, isTimedOut } = require('./call-errors');
const { beforeDeadline, pastDeadline } = require('./call-wait');
const { askHooks } = require('./retry-hooks');
const { isThenable } = require('./thenable');

// How many failures a call keeps (the last ones): the core's history cap.
const HISTORY = native.historyCap();

/** Keeps a failure for RetryExhaustedError: the last HISTORY only (the contract's cap). */
function keep(run, error) {
  if (run.errors.length === HISTORY) run.errors.shift();
  run.errors.push(error);
}

/**
 * Classifies a failure and asks the engine: returns the wait (a number, or a promise of
 * one when a hook answered with a promise), or throws the outcome.
 */
function fail(run, error) {
  keep(run, error);
  run.lastWasValue = false;
  if (error === run.deadlineError) {
    // The deadline cut the attempt short: the call cannot go on, whatever shouldRetry
    // would say of a TimeoutError. Recorded at its bound at the earliest (a timer may
    // fire a little early on the clock), so the engine ends the call with reason
    // deadline.
    return record(run, error, V_TRANSIENT, undefined, false, Math.max(now(), run.boundAt));
  }
  let answer;
  try {
    answer = run.o.shouldRetry(error);
  } catch (err) {
    return hookFailed(run, error, err);
  }
  // Read by truthiness, as p-retry reads it: a falsy answer (undefined from the common
  // `err.code && codes.has(err.code)`) is "permanent", the original error passed through.
  if (answer === true) return readHint(run, error);
  if (isThenable(answer)) {
    // Still pending at the deadline: the call ends there (see lateFailure).
    return Promise.resolve(beforeDeadline(run, answer)).then(
      (a) => (run.late ? lateFailure(run, error) : a ? readHint(run, error) : record(run, error, V_PERMANENT, undefined)),
      (err) => hookFailed(run, error, err),
    );
  }
  return answer ? readHint(run, error) : record(run, error, V_PERMANENT, undefined);
}

/**
 * Whether shouldRetryResult rejects fn's value (true: a failure, retried like a
 * transient error): a boolean, or a promise of one when the hook answered with a
 * promise. A throwing hook, or an answer that is not a boolean, ends the call with a
 * throw that carries the value (see hookError, lib/call-errors.js).
 */
function judge(run, value) {
  let answer;
  try {
    answer = run.o.shouldRetryResult(value);
  } catch (err) {
    return valueHookFailed(run, value, err);
  }
  if (typeof answer === 'boolean') return answer;
  if (isThenable(answer)) {
    return Promise.resolve(beforeDeadline(run, answer)).then(
      (a) => {
        if (run.late) {
          // Still pending at the deadline: the value is the call's last failure.
          keep(run, value);
          run.lastWasValue = true;
          return lateFailure(run, value);
        }
        return typeof a === 'boolean' ? a : valueHookFailed(run, value, notBoolean('shouldRetryResult', a));
      },
      (err) => valueHookFailed(run, value, err),
    );
  }
  return valueHookFailed(run, value, notBoolean('shouldRetryResult', answer));
}

function valueHookFailed(run, value, thrown) {
  keep(run, value);
  run.lastWasValue = true;
  return hookFailed(run, value, thrown);
}

/** A value shouldRetryResult rejected: a failure handled exactly like a transient error. */
function failValue(run, value) {
  keep(run, value);
  run.lastWasValue = true;
  return readHint(run, value);
}

/** A transient failure: reads the retry-after hint (sync or a promise), then records. */
function readHint(run, error) {
  let hint;
  try {
    hint = run.o.retryAfterMs(error);
  } catch (err) {
    return hookFailed(run, error, err);
  }
  if (isThenable(hint)) {
    return Promise.resolve(beforeDeadline(run, hint)).then(
      (h) => (run.late ? lateFailure(run, error) : recordHint(run, error, h)),
      (err) => hookFailed(run, error, err),
    );
  }
  return recordHint(run, error, hint);
}

/**
 * A failure whose predicate or hint reader (shouldRetry, shouldRetryResult,
 * retryAfterMs) was still pending at the call's deadline: recorded as transient past the
 * deadline, so the engine ends the call there (reason deadline, the failure kept); the
 * late answer is dropped.
 */
function lateFailure(run, error) {
  return record(run, error, V_TRANSIENT, undefined, false, pastDeadline(run));
}

function recordHint(run, error, hint) {
  if (hint === null || hint === undefined) return record(run, error, V_TRANSIENT, undefined);
  if (hint === DONT_RETRY) return record(run, error, V_DONT_RETRY, undefined);
  if (typeof hint !== 'number') {
    return hookFailed(run, error, new TypeError(`retryAfterMs must return a number, DONT_RETRY or undefined (or a Promise of one), got ${typeName(hint)}`));
  }
  const bad = badHint(run.o, hint);
  if (bad !== undefined) return hookFailed(run, error, bad);
  return record(run, error, V_TRANSIENT, hint);
}

/**
 * A throwing hook (or one whose answer is unusable) ends the call with its throw; the
 * original failure stays reachable as its cause (see hookError, lib/call-errors.js).
 */
function hookFailed(run, error, thrown) {
  record(run, error, V_PERMANENT, undefined, true);
  throw hookError(thrown, error);
}

/** Tells the engine; returns the wait or throws the outcome (hookFailed throws its own). */
function record(run, error, verdict, hint, fromHook = false, at = undefined) {
  const t = at === undefined ? now() : at;
  const id = run.engineCall(at === undefined ? t : undefined);
  run.recordedAt = t;
  // The TimeoutError of an attempt this layer cut at its attempt timeout (or a failure
  // an HTTP helper marked as timed out): a quota prices the retry after it as a
  // timeout's.
  if (verdict === V_TRANSIENT && (error === run.timeoutError || isTimedOut(error))) verdict = V_TIMED_OUT;
  // With onRetry or delayMs, a transient failure is proposed first: the hooks answer
  // before the engine decides (callSettle).
  const proposes = run.o.hooked && (verdict === V_TRANSIENT || verdict === V_TIMED_OUT) && !fromHook;
  const decision = proposes
    ? native.callPropose(id, verdict, hint, run.recordedAt + run.base)
    : native.callRecord(id, verdict, hint, run.recordedAt + run.base);
  run.emit(error);
  if (decision >= 0) return proposes ? askHooks(run, error, decision) : decision;
  if (fromHook) return decision;
  if (decision === REJECTED) throw error;
  if (decision === EXHAUSTED) throw run.exhausted();
  throw new Error(`retryrs: unexpected engine decision ${decision} (a bug)`);
}

module.exports = { fail, failValue, judge };
