'use strict';
// onRetry and delayMs: when the engine proposes a wait for a transient failure, the hooks
// answer first (each awaited, held to the call's deadline), then their plan is handed to
// the engine (settle), which decides the wait or ends the call.
const native = require('./native');
const { now } = require('./clock');
const { typeName } = require('./options');
const { EXHAUSTED, PLAN_ENGINE, PLAN_EXACT, PLAN_STOP } = require('./codes');
const { hookError } = require('./call-errors');
const { beforeDeadline, pastDeadline } = require('./call-wait');

/**
 * The engine proposed a wait of `delay` ms: onRetry first (a throw or `false` stops the
 * call: reason stopped), then delayMs (a number: wait exactly that; undefined: the
 * engine's wait), each awaited; then the engine decides (deadline, max_retry_after,
 * budget). Resolves to the wait or rejects with the outcome.
 */
async function askHooks(run, error, delay) {
  const o = run.o;
  const id = run.engine;
  const info = { attempt: native.callAttempt(id), delayMs: delay, retriesLeft: native.callRetriesLeft(id), name: run.name };
  if (run.lastWasValue) info.value = error;
  else info.error = error;
  if (o.onRetry !== undefined && (await askHook(run, o.onRetry, info, error)) === false) {
    return settle(run, PLAN_STOP, undefined, error);
  }
  // (onRetry ran past the deadline: delayMs is not asked.)
  if (run.late) return settle(run, PLAN_ENGINE, undefined, error, false, pastDeadline(run));
  if (o.delayMs === undefined) return settle(run, PLAN_ENGINE, undefined, error);
  const answer = await askHook(run, o.delayMs, info, error);
  if (run.late) return settle(run, PLAN_ENGINE, undefined, error, false, pastDeadline(run));
  if (answer === undefined || answer === null) return settle(run, PLAN_ENGINE, undefined, error);
  if (typeof answer !== 'number') {
    settle(run, PLAN_STOP, undefined, error, true);
    throw hookError(new TypeError(`delayMs must return a number of milliseconds or undefined (or a Promise of one), got ${typeName(answer)}`), error);
  }
  let decision;
  try {
    decision = native.callSettle(id, PLAN_EXACT, answer, now() + run.base);
  } catch (refused) {
    // Not a wait (NaN, negative, past the longest wait, Infinity): the engine's words,
    // naming the value (as JavaScript spells it).
    settle(run, PLAN_STOP, undefined, error, true);
    throw hookError(new RangeError(`delayMs: ${refused.message.replace(/got \S+$/, `got ${answer}`)}`), error);
  }
  return decided(run, error, decision);
}

/**
 * A hook's answer, awaited; a throw stops the call and is what it rejects with. Still
 * unanswered at the call's deadline, it answers undefined (the engine's wait, which the
 * engine then refuses: reason deadline) and its late answer is dropped.
 */
async function askHook(run, hook, info, error) {
  try {
    return await beforeDeadline(run, hook(info));
  } catch (thrown) {
    settle(run, PLAN_STOP, undefined, error, true);
    throw hookError(thrown, error);
  }
}

/** The hooks' plan handed to the engine; returns the wait or throws the outcome. */
function settle(run, plan, exact, error, quiet = false, at = now()) {
  const decision = native.callSettle(run.engine, plan, exact, at + run.base);
  if (quiet) {
    // A hook threw: the call ends with its throw (the caller's), the events told.
    run.emit(error);
    return decision;
  }
  return decided(run, error, decision);
}

function decided(run, error, decision) {
  run.emit(error);
  if (decision >= 0) return decision;
  if (decision === EXHAUSTED) throw run.exhausted();
  throw new Error(`retryrs: unexpected engine decision ${decision} (a bug)`);
}

module.exports = { askHooks };
