'use strict';
// Retrier options: type-checked here (the JS layer's job), range-checked by the engine's
// PolicyBuilder, and normalised once into a fixed shape that calls only read.
const native = require('./native');
const { budgetHandle } = require('./budget');
const { breakerHandle } = require('./breaker');
const { rethrowProblem } = require('./problem');
const { isTransientError, retryAfterFromError } = require('./predicate');
const { listenerOf } = require('./events');
const { BoundQueue } = require('./bound');

// The policy's knobs come from the core's knob table (Node spelling included); only the
// options that exist in Node alone are declared here.
const KNOBS = native.knobs();
const NUMBERS = KNOBS.filter((k) => k.numeric);
const FUNCTIONS = ['shouldRetry', 'shouldRetryResult', 'retryAfterMs'];
const HOST_ONLY = [...FUNCTIONS, 'onEvent', 'unref'];
// The engine objects that are not knobs of the table (the budget is one): the breaker.
const OBJECTS = ['breaker', 'hedge'];
const KNOWN = new Set([...KNOBS.map((k) => k.option), ...HOST_ONLY, ...OBJECTS]);
// What Retrier.fromPolicy takes: the host options, and the one knob code may override
// (the attempt timeout: how long one request may take is often the caller's to say).
const FROM_POLICY = [...HOST_ONLY, 'attemptTimeoutMs'];

// Option names from p-retry, cockatiel and async-retry (and near misses of ours), and
// what to write instead: `unknown option` alone leaves a migrating user guessing.
const INSTEAD = {
  retries: 'maxAttempts (retries + 1: maxAttempts counts the first attempt)',
  factor: 'multiplier',
  minTimeout: 'initialDelayMs',
  maxTimeout: 'maxDelayMs',
  randomize: "jitter ('full' for randomize: true, 'none' for false)",
  onFailedAttempt: "onEvent (an event of kind 'attempt_failed' carries the error)",
  onRetry: "onEvent (an event of kind 'retrying' carries the delay)",
  maxRetryTime: 'deadlineMs',
  signal: 'call(fn, { signal }) (a signal belongs to one call)',
  forever: 'maxAttempts: 4294967295 with deadlineMs: null',
  shouldConsumeRetry: 'shouldRetry',
  initialDelay: 'initialDelayMs',
  maxDelay: 'maxDelayMs',
  deadline: 'deadlineMs',
  timeout: 'attemptTimeoutMs (per attempt) or deadlineMs (the whole call)',
  attemptTimeout: 'attemptTimeoutMs',
  handleWhen: 'shouldRetry',
  handleResultType: 'shouldRetryResult',
};

function unknownOption(key) {
  let hint = Object.hasOwn(INSTEAD, key) ? INSTEAD[key] : undefined;
  if (hint === undefined) {
    // Case and underscores aside: a policy document's (and Python's) `max_retry_after`
    // is Node's `maxRetryAfterMs`.
    const lower = key.toLowerCase().replace(/_/g, '');
    hint = [...KNOWN].find((k) => k.toLowerCase() === lower || k.toLowerCase() === `${lower}ms`);
  }
  return new TypeError(`Retrier: unknown option '${key}'${hint === undefined ? '' : `; did you mean ${hint}?`}`);
}

function typeName(v) {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

function normalise(options) {
  if (options === undefined || options === null) options = {};
  if (typeof options !== 'object') throw new TypeError(`Retrier options must be an object, got ${typeName(options)}`);
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key)) throw unknownOption(key);
  }
  const given = (key) => options[key] !== undefined;

  const policy = { numbers: {}, off: [] };
  for (const k of NUMBERS) {
    const key = k.option;
    if (k.canBeOff && options[key] === null) {
      policy.off.push(k.name);
      continue;
    }
    if (!given(key)) continue;
    if (typeof options[key] !== 'number') {
      throw new TypeError(`${key} must be a number${k.canBeOff ? ' or null (off)' : ''}, got ${typeName(options[key])}`);
    }
    policy.numbers[k.name] = options[key];
  }
  if (given('jitter')) {
    if (typeof options.jitter !== 'string') throw new TypeError(`jitter must be a string such as 'full' or 'proportional(0.2)', got ${typeName(options.jitter)}`);
    policy.jitter = options.jitter;
  }
  if (given('name')) {
    if (typeof options.name !== 'string') throw new TypeError(`name must be a string, got ${typeName(options.name)}`);
    policy.name = options.name;
  }
  if (given('seed') && options.seed !== null) policy.seed = seedOf(options.seed);

  let budget;
  if (given('budget') && options.budget !== null) {
    budget = budgetHandle(options.budget);
    if (!budget) throw new TypeError(`budget must be a RetryBudget, got ${typeName(options.budget)}`);
  }
  let breaker;
  if (given('breaker') && options.breaker !== null) {
    breaker = breakerHandle(options.breaker);
    if (!breaker) throw new TypeError(`breaker must be a CircuitBreaker, got ${typeName(options.breaker)}`);
  }
  if (given('hedge') && options.hedge !== null) policy.hedge = hedgeOf(options.hedge);
  const hostOptions = hostParts(options);
  let handle;
  try {
    handle = native.NativePolicy.create(policy, budget, breaker);
  } catch (err) {
    rethrowProblem(err);
  }
  return finish(handle, budget !== undefined, hostOptions);
}

/**
 * A document's policy (lib/policies.js) with the options only code can give; the knobs
 * are the document's, so passing one is a TypeError.
 */
function normaliseFromPolicy(policyHandle, hasBudget, options) {
  let handle = policyHandle;
  if (options === undefined || options === null) options = {};
  if (typeof options !== 'object') throw new TypeError(`Retrier.fromPolicy options must be an object, got ${typeName(options)}`);
  for (const key of Object.keys(options)) {
    if (!FROM_POLICY.includes(key)) {
      throw new TypeError(`Retrier.fromPolicy: unknown option '${key}' (it takes ${FROM_POLICY.join(', ')}; the knobs come from the policy)`);
    }
  }
  const host = hostParts(options);
  if (options.attemptTimeoutMs !== undefined) {
    // The document's policy with the caller's attempt timeout (null: none), validated by
    // the engine like any knob.
    const t = options.attemptTimeoutMs;
    if (t !== null && typeof t !== 'number') throw new TypeError(`attemptTimeoutMs must be a number or null (off), got ${typeName(t)}`);
    try {
      handle = handle.withAttemptTimeout(t);
    } catch (err) {
      rethrowProblem(err);
    }
  }
  return finish(handle, hasBudget, host);
}

/** The options that exist in Node alone, checked. */
function hostParts(options) {
  const given = (key) => options[key] !== undefined;
  for (const key of FUNCTIONS) {
    if (given(key) && typeof options[key] !== 'function') throw new TypeError(`${key} must be a function, got ${typeName(options[key])}`);
  }
  if (given('onEvent')) {
    const l = options.onEvent;
    const ok = typeof l === 'function' || (Array.isArray(l) && l.every((f) => typeof f === 'function'));
    if (!ok) throw new TypeError(`onEvent must be a function or an array of functions, got ${typeName(l)}`);
  }
  if (given('unref') && typeof options.unref !== 'boolean') throw new TypeError(`unref must be a boolean, got ${typeName(options.unref)}`);
  return { options };
}

/** The fixed shape calls read: a native policy and the host parts. */
function finish(handle, hasBudget, host) {
  const budget = hasBudget ? true : undefined;
  const { options } = host;
  const onEvent = listenerOf(options.onEvent);
  // Every call asks a breaker first and tells it how it ended.
  const hasBreaker = handle.hasBreaker;
  // The engine's bound on a call's first attempt (null: unbounded): later attempts ask
  // the engine's call (native.callRemainingMs).
  const firstBoundMs = handle.firstBoundMs;
  const hedges = handle.hedges;
  return Object.freeze({
    policy: handle,
    policyId: handle.id,
    name: handle.name,
    shouldRetry: options.shouldRetry ?? isTransientError,
    retryAfterMs: options.retryAfterMs ?? retryAfterFromError,
    // None by default: every value is a success (the contract's default).
    shouldRetryResult: options.shouldRetryResult,
    onEvent,
    // The policy's knob (0: off), read to say which bound ended an attempt.
    attemptTimeoutMs: handle.number('attempt_timeout') ?? 0,
    firstBoundMs,
    // Whether attempts are bounded (a deadline or an attempt timeout): each then has a
    // timer and ctx.remainingMs.
    bounded: firstBoundMs !== null,
    // Whether the call loop arms the attempt's timer and interrupts it (false: the
    // attempt bounds itself with ctx.remainingMs, as retryingFetch does).
    interrupts: true,
    unref: options.unref === true,
    hasBudget: budget !== undefined,
    hasBreaker,
    // Whether calls are hedged (lib/hedge.js): they take the full loop, which hands them over.
    hedges,
    // Whether even a first-attempt success needs the engine (a budget to credit, a
    // breaker to ask, or an event to emit) or the full loop (a value to judge).
    needsFullLoop: hedges || onEvent !== undefined || budget !== undefined || hasBreaker || options.shouldRetryResult !== undefined,
    // Whether the engine must hear of a success: to credit a budget, tell a breaker, or
    // emit an event.
    recordsSuccess: onEvent !== undefined || budget !== undefined || hasBreaker,
    // Whether a call must read the clock at its start: for the attempts' bounds, a
    // breaker or events. Without any, elapsed time changes no decision and the happy path
    // skips the read.
    needsClock: firstBoundMs !== null || onEvent !== undefined || hasBreaker,
    // The first attempts' timers of the fast path (lib/bound.js), one queue per retrier.
    queue: firstBoundMs !== null ? new BoundQueue(options.unref === true) : null,
  });
}

const HEDGE_KEYS = ['maxAttempts', 'delayMs', 'quantile', 'floorMs', 'ceilingMs', 'window'];

/**
 * The `hedge` option, type-checked: `{ maxAttempts, delayMs }` (a fixed delay), or
 * `delayMs: 'adaptive'` with `quantile`, `floorMs`, `ceilingMs`, `window` (the engine's
 * defaults when left out). The engine checks the ranges.
 */
function hedgeOf(h) {
  if (typeof h !== 'object' || Array.isArray(h)) throw new TypeError(`hedge must be an object such as { maxAttempts: 3, delayMs: 50 }, got ${typeName(h)}`);
  for (const key of Object.keys(h)) {
    if (!HEDGE_KEYS.includes(key)) throw new TypeError(`hedge: unknown key '${key}' (known: ${HEDGE_KEYS.join(', ')})`);
  }
  if (typeof h.maxAttempts !== 'number') throw new TypeError(`hedge.maxAttempts must be a number, got ${typeName(h.maxAttempts)}`);
  const adaptive = h.delayMs === 'adaptive';
  const out = { maxAttempts: h.maxAttempts, adaptive };
  const numbers = adaptive ? ['quantile', 'floorMs', 'ceilingMs', 'window'] : ['delayMs'];
  for (const key of HEDGE_KEYS.slice(1)) {
    if (h[key] === undefined || (key === 'delayMs' && adaptive)) continue;
    if (!numbers.includes(key)) throw new TypeError(`hedge.${key} applies to an adaptive delay only (delayMs: 'adaptive')`);
    if (typeof h[key] !== 'number') throw new TypeError(`hedge.${key} must be a number${key === 'delayMs' ? " or 'adaptive'" : ''}, got ${typeName(h[key])}`);
    out[key] = h[key];
  }
  return out;
}

function seedOf(seed) {
  if (typeof seed === 'bigint') {
    if (seed < 0n || seed >= 2n ** 64n) throw new RangeError(`seed must be an integer in [0, 2^64-1], got ${seed}`);
    return seed;
  }
  if (typeof seed === 'number') {
    if (!Number.isSafeInteger(seed) || seed < 0) throw new RangeError(`seed must be an integer in [0, 2^53-1] (or a bigint up to 2^64-1), got ${seed}`);
    return BigInt(seed);
  }
  throw new TypeError(`seed must be a number or a bigint, got ${typeName(seed)}`);
}

module.exports = { normalise, normaliseFromPolicy, typeName, KNOBS, HOST_ONLY, OBJECTS, FROM_POLICY };
