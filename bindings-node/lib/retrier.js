'use strict';
// The Retrier: checks a call's arguments and runs the fast path (a first attempt that
// succeeds never crosses into native code, unless a budget must be credited or a listener
// told); anything else is handed to the call loop (./call.js).
const native = require('./native');
const { now, startTime } = require('./clock');
const { normalise, normaliseFromPolicy, typeName } = require('./options');
const { policyParts } = require('./policies');
const { rethrowProblem } = require('./problem');
const { AttemptContext } = require('./attempt');
const { reportListenerError } = require('./events');
const { CallRun, isThenable, boundedFirstAttempt } = require('./call');
const { wrapBreaker } = require('./breaker');

// The CircuitBreaker object of each native policy, made on first ask.
const breakers = new WeakMap();
const { channel: eventChannel, observedOptions } = require('./diagnostics');

function isAbortSignal(s) {
  return typeof s === 'object' && s !== null && typeof s.aborted === 'boolean' && typeof s.addEventListener === 'function';
}

// Options already normalised, for a retrier derived from another (see withClassifier).
const DERIVED = Symbol('retryrs.derived');
let derive;
let optionsOf;

// Options already normalised (by fromPolicy): the constructor takes them as they are.
class Prebuilt {
  constructor(o) {
    this.o = o;
  }
}

class Retrier {
  #o;

  /** @param {object} [options] see index.d.ts */
  constructor(options) {
    if (options instanceof Prebuilt) {
      this.#o = options.o;
      return;
    }
    const derived = options !== null && typeof options === 'object' ? options[DERIVED] : undefined;
    this.#o = derived !== undefined ? derived : normalise(options);
  }

  static {
    derive = (retrier, hooks) => new Retrier({ [DERIVED]: Object.freeze({ ...retrier.#o, ...hooks }) });
    optionsOf = (retrier) => retrier.#o;
  }

  /**
   * A retrier running a policy from a document (loadPolicies), with the options only
   * code can give: shouldRetry, retryAfterMs, onEvent, attemptTimeoutMs.
   * @param {import('./policies').Policy} policy
   * @param {object} [options]
   */
  static fromPolicy(policy, options) {
    const parts = policyParts(policy);
    if (parts === undefined) throw new TypeError(`Retrier.fromPolicy(policy): policy must come from loadPolicies, got ${typeName(policy)}`);
    return new Retrier(new Prebuilt(normaliseFromPolicy(parts.handle, parts.hasBudget, options)));
  }

  /** The circuit breaker the retrier's calls ask first (a policy document's too), or null. */
  get breaker() {
    const handle = this.#o.policy;
    if (!this.#o.hasBreaker) return null;
    let breaker = breakers.get(handle);
    if (breaker === undefined) {
      breaker = wrapBreaker(handle.breaker());
      breakers.set(handle, breaker);
    }
    return breaker;
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
    if (signal !== undefined || o.needsFullLoop) return new CallRun(o, fn, signal, o.needsClock ? now() : 0).run(undefined, false);
    const t0 = o.needsClock ? startTime() : 0;
    // A bounded first attempt is raced against its bound (lib/bound.js).
    if (o.bounded) return boundedFirstAttempt(o, fn, t0);

    // The fast path: no signal, no timer, no listener, no budget; no allocation but the
    // promise returned and the attempt's context, and no native crossing unless the
    // attempt fails.
    let result;
    try {
      result = fn(new AttemptContext(1, undefined));
    } catch (err) {
      return new CallRun(o, fn, undefined, t0, true).run(err, true);
    }
    if (result instanceof Promise) {
      return result.then(undefined, (err) => new CallRun(o, fn, undefined, t0, true).run(err, true));
    }
    if (isThenable(result)) {
      return Promise.resolve(result).then(undefined, (err) => new CallRun(o, fn, undefined, t0, true).run(err, true));
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
 * The same retrier (policy, listener, budget, bounds) deciding with other hooks:
 * `shouldRetry` and `retryAfterMs`. The HTTP helper uses it: its verdicts are the core's
 * HTTP rules, not the user's predicate. `boundsAttempts`: the helper bounds each attempt
 * itself (with ctx.remainingMs, the engine's bound), so the call loop arms no timer and
 * never interrupts its attempts. Not part of the public API.
 */
function withClassifier(retrier, shouldRetry, retryAfterMs, boundsAttempts = false) {
  if (!(retrier instanceof Retrier)) throw new TypeError(`retrier must be a Retrier, got ${typeName(retrier)}`);
  // No result predicate: a response is judged by the HTTP rules alone.
  const hooks = { shouldRetry, retryAfterMs, shouldRetryResult: undefined };
  if (boundsAttempts) hooks.interrupts = false;
  return derive(retrier, hooks);
}

/**
 * The same retrier with another attempt limit (the engine's policy with max_attempts
 * changed; hooks, listener, budget and bounds kept): an HTTP request's retry.limit. Not
 * part of the public API.
 */
function withMaxAttempts(retrier, n) {
  if (!(retrier instanceof Retrier)) throw new TypeError(`retrier must be a Retrier, got ${typeName(retrier)}`);
  let handle;
  try {
    handle = optionsOf(retrier).policy.withMaxAttempts(n);
  } catch (err) {
    rethrowProblem(err);
  }
  return derive(retrier, { policy: handle, policyId: handle.id });
}

/**
 * The same hedging retrier running one attempt and no hedge (deadline, budget, breaker,
 * hooks and listener kept): an HTTP helper's request the core's rules do not let it send
 * twice. Not part of the public API.
 */
function withoutHedges(retrier) {
  const handle = optionsOf(retrier).policy.withoutHedges();
  return derive(retrier, { policy: handle, policyId: handle.id });
}

/** A retrier's normalised options (lib/options.js, finish). Not part of the public API. */
function optionsOfRetrier(retrier) {
  return optionsOf(retrier);
}

module.exports = { Retrier, AttemptContext, withClassifier, withMaxAttempts, withoutHedges, optionsOf: optionsOfRetrier };
