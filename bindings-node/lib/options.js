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
const FUNCTIONS = ['shouldRetry', 'shouldRetryResult', 'retryAfterMs', 'delayMs', 'onRetry'];
const HOST_ONLY = [...FUNCTIONS, 'onEvent', 'unref', 'reraise'];
// The engine objects that are not knobs of the table (the budget is one): the breaker.
const OBJECTS = ['breaker', 'hedge'];
const KNOWN = new Set([...KNOBS.map((k) => k.option), ...HOST_ONLY, ...OBJECTS]);

// Option names from p-retry, cockatiel and async-retry (and near misses of ours), and
// what to write instead: `unknown option` alone leaves a migrating user guessing.
const INSTEAD = {
  retries: 'maxAttempts (retries + 1: maxAttempts counts the first attempt)',
  factor: 'multiplier',
  minTimeout: 'initialDelayMs',
  maxTimeout: 'maxDelayMs',
  randomize: "jitter ('full' for randomize: true, 'none' for false)",
  onFailedAttempt: "onRetry (awaited before each retry; throw or return false to stop) or onEvent (an event of kind 'attempt_failed' carries the error)",
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

// What call(fn, options) takes: the one option that belongs to a call.
const CALL_KEYS = ['signal'];

/**
 * The TypeError for call()'s first unknown option, as the constructor refuses its own
 * (a misspelt `signal` would otherwise leave the call uncancellable, silently); undefined
 * when every key is known. A retrier's own option says where it goes.
 */
function unknownCallOption(options) {
  for (const key of Object.keys(options)) {
    if (CALL_KEYS.includes(key)) continue;
    const where = KNOWN.has(key) ? `; ${key} is a Retrier option: set it with new Retrier({ ${key} }) or retrier.with({ ${key} })` : '';
    return new TypeError(`call(fn, options): unknown option '${key}' (a call takes ${CALL_KEYS.join(', ')})${where}`);
  }
  return undefined;
}

function typeName(v) {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

/** The engine's part of some options: the knobs, and the budget and breaker objects. */
function knobParts(options) {
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
  return { policy, budget, breaker, budgetGiven: given('budget'), breakerGiven: given('breaker') };
}

function checkKnown(options, what) {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object') throw new TypeError(`${what} must be an object, got ${typeName(options)}`);
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key)) throw unknownOption(key);
  }
  return options;
}

/** The constructor's options: the engine's policy and the host's options, checked. */
function normalise(options, listeners) {
  options = checkKnown(options, 'Retrier options');
  const k = knobParts(options);
  hostParts(options);
  let handle;
  try {
    handle = native.NativePolicy.create(k.policy, k.budget, k.breaker);
  } catch (err) {
    rethrowProblem(err);
  }
  return sourceOf(handle, options, options.name !== undefined, listeners);
}

/**
 * A retrier's source (see finish) with some options overridden: the knobs given replace
 * the policy's (validated by the engine like the constructor's), the host options given
 * replace its host options; the budget, breaker and listeners are shared unless given.
 * What r.with({...}) and Retrier.fromPolicy(policy, overrides) run.
 */
function override(src, overrides, what) {
  overrides = checkKnown(overrides, what);
  const k = knobParts(overrides);
  hostParts(overrides);
  const host = { ...src.host };
  for (const key of HOST_ONLY) {
    // null removes the option (a hook, a listener): the retrier runs without it.
    if (overrides[key] === null) delete host[key];
    else if (overrides[key] !== undefined) host[key] = overrides[key];
  }
  let handle;
  try {
    handle = src.handle.withOptions(k.policy, k.budgetGiven, k.budget, k.breakerGiven, k.breaker, overrides.hedge === null);
  } catch (err) {
    rethrowProblem(err);
  }
  return sourceOf(handle, host, src.named || overrides.name !== undefined, src.listeners);
}

/**
 * A document's policy (lib/policies.js) with the options code gives: the host's, and
 * knob overrides (Retrier.fromPolicy).
 */
function normaliseFromPolicy(policyHandle, options, listeners) {
  const src = override(sourceOf(policyHandle, {}, true, listeners), options, 'Retrier.fromPolicy options');
  return src;
}

/**
 * What a retrier is made from, kept so it can be remade (a listener attached later, an
 * override): the native policy, the host options (only those), whether the name was
 * chosen (else events name the called function), and the listener group it shares.
 */
function sourceOf(handle, options, named, listeners) {
  const host = {};
  for (const key of HOST_ONLY) {
    if (options[key] !== undefined && options[key] !== null) host[key] = options[key];
  }
  // Successes the engine did not hear of (the fast path's, and any when no budget,
  // breaker or listener needs it told): handed to its statistics by r.stats().
  return { handle, host, named, listeners, counts: { unseenOk: 0 } };
}

/** The options that exist in Node alone, checked. */
function hostParts(options) {
  // null is "none" for every host option (as for budget and breaker).
  const given = (key) => options[key] !== undefined && options[key] !== null;
  for (const key of FUNCTIONS) {
    if (given(key) && typeof options[key] !== 'function') throw new TypeError(`${key} must be a function, got ${typeName(options[key])}`);
  }
  if (given('onEvent')) {
    const l = options.onEvent;
    const ok = typeof l === 'function' || (Array.isArray(l) && l.every((f) => typeof f === 'function'));
    if (!ok) throw new TypeError(`onEvent must be a function or an array of functions, got ${typeName(l)}`);
  }
  if (given('unref') && typeof options.unref !== 'boolean') throw new TypeError(`unref must be a boolean, got ${typeName(options.unref)}`);
  if (given('reraise') && typeof options.reraise !== 'boolean') throw new TypeError(`reraise must be a boolean, got ${typeName(options.reraise)}`);
}

function asList(onEvent) {
  return onEvent === undefined ? [] : typeof onEvent === 'function' ? [onEvent] : onEvent;
}

/**
 * The fixed shape calls read, from a source (sourceOf): a native policy and the host
 * parts; `attached`: the listeners attached since (r.onEvent), called after onEvent's.
 */
function finish(src, attached) {
  const handle = src.handle;
  const options = src.host;
  const budget = handle.hasBudget ? true : undefined;
  const onEvent = listenerOf(attached.length === 0 ? options.onEvent : [...asList(options.onEvent), ...attached]);
  // Every call asks a breaker first and tells it how it ended.
  const hasBreaker = handle.hasBreaker;
  const hedges = handle.hedges;
  // A hedged call launches attempts on the hedging delay, not after a failure's wait:
  // the wait hooks would never run, so they are refused rather than ignored.
  if (hedges && (options.onRetry !== undefined || options.delayMs !== undefined)) {
    throw new TypeError('onRetry and delayMs do not apply to a hedging retrier (its attempts are launched by the hedging delay, not after a wait): remove them or the hedge');
  }
  // The engine's bound on a call's first attempt (null: unbounded): later attempts ask
  // the engine's call (native.callRemainingMs).
  const firstBoundMs = handle.firstBoundMs;
  return Object.freeze({
    policy: handle,
    policyId: handle.id,
    name: handle.name,
    // Whether the name was chosen; if not, events and errors name the called function
    // (fn.name) when it has one.
    named: src.named,
    shouldRetry: options.shouldRetry ?? isTransientError,
    retryAfterMs: options.retryAfterMs ?? retryAfterFromError,
    // None by default: every value is a success (the contract's default).
    shouldRetryResult: options.shouldRetryResult,
    onEvent,
    // The policy's knob (0: off), read to say which bound ended an attempt.
    attemptTimeoutMs: handle.number('attempt_timeout') ?? 0,
    // The call's deadline (null: none), which bounds an awaited onRetry / delayMs too.
    deadlineMs: handle.number('deadline') ?? null,
    firstBoundMs,
    // Whether attempts are bounded (a deadline or an attempt timeout): each then has a
    // timer and ctx.remainingMs.
    bounded: firstBoundMs !== null,
    // Whether the call loop arms the attempt's timer and interrupts it (false: the
    // attempt bounds itself with ctx.remainingMs, as retryingFetch does).
    interrupts: true,
    unref: options.unref === true,
    // The hooks asked before each wait (between the engine's proposal and its decision):
    // onRetry may stop the call, delayMs may replace the wait with an exact one.
    onRetry: options.onRetry,
    delayMs: options.delayMs,
    hooked: options.onRetry !== undefined || options.delayMs !== undefined,
    // Why max_attempts cannot fit the deadline (the engine's wording), or null.
    deadlineHint: handle.deadlineHint ?? null,
    counts: src.counts,
    // The fast path's success handler: counts a first-attempt success, passes the value.
    countOk: (v) => {
      src.counts.unseenOk += 1;
      return v;
    },
    // Exhaustion by a thrown failure rejects with that failure itself (the history as its
    // `retryrs` property) instead of a RetryExhaustedError (tenacity's reraise=True).
    reraise: options.reraise === true,
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

const HEDGE_KEYS = ['maxAttempts', 'delayMs', 'quantile', 'floorMs', 'ceilingMs', 'window', 'guard'];

/**
 * The `hedge` option, type-checked: `{ maxAttempts, delayMs }` (a fixed delay), or
 * `delayMs: 'adaptive'` with `quantile`, `floorMs`, `ceilingMs`, `window` (the engine's
 * defaults when left out); `guard: false` turns off the default guard on a retrier
 * without a budget. The engine checks the ranges.
 */
function hedgeOf(h) {
  if (typeof h !== 'object' || Array.isArray(h)) throw new TypeError(`hedge must be an object such as { maxAttempts: 3, delayMs: 50 }, got ${typeName(h)}`);
  for (const key of Object.keys(h)) {
    if (!HEDGE_KEYS.includes(key)) throw new TypeError(`hedge: unknown key '${key}' (known: ${HEDGE_KEYS.join(', ')})`);
  }
  if (typeof h.maxAttempts !== 'number') throw new TypeError(`hedge.maxAttempts must be a number, got ${typeName(h.maxAttempts)}`);
  const adaptive = h.delayMs === 'adaptive';
  if (h.guard !== undefined && typeof h.guard !== 'boolean') throw new TypeError(`hedge.guard must be true or false, got ${typeName(h.guard)}`);
  const out = { maxAttempts: h.maxAttempts, adaptive, guard: h.guard !== false };
  const numbers = adaptive ? ['quantile', 'floorMs', 'ceilingMs', 'window'] : ['delayMs'];
  for (const key of HEDGE_KEYS.slice(1, -1)) {
    if (h[key] === undefined || (key === 'delayMs' && adaptive)) continue;
    if (!numbers.includes(key)) throw new TypeError(`hedge.${key} applies to an adaptive delay only (delayMs: 'adaptive')`);
    if (typeof h[key] !== 'number') throw new TypeError(`hedge.${key} must be a number${key === 'delayMs' ? " or 'adaptive'" : ''}, got ${typeName(h[key])}`);
    out[key] = h[key];
  }
  return out;
}

module.exports = { normalise, normaliseFromPolicy, override, finish, typeName, unknownCallOption, KNOBS, HOST_ONLY, OBJECTS };
