'use strict';
// The Retrier: checks a call's arguments and runs the fast path (a first attempt that
// succeeds never crosses into native code, unless a budget must be credited or a listener
// told); anything else is handed to the call loop (./call.js).
const native = require('./native');
const { now, startTime } = require('./clock');
const { inspect } = require('node:util');
const { normalise, normaliseFromPolicy, override, finish, typeName, unknownCallOption, KNOBS } = require('./options');
const { policyParts } = require('./policies');
const { rethrowProblem } = require('./problem');
const { AttemptContext, BoundedAttemptContext } = require('./attempt');
const { reportListenerError } = require('./events');
const { CallRun } = require('./call');
const { boundedFirstAttempt } = require('./first-attempt');
const { nameOf } = require('./call-errors');
const { isThenable } = require('./thenable');
const { wrapBreaker } = require('./breaker');
const ambient = require('./ambient');
const { eitherSignal } = require('./signals');

// The CircuitBreaker object of each native policy, made on first ask.
const breakers = new WeakMap();
const { channel: eventChannel, observedOptions } = require('./diagnostics');

function isAbortSignal(s) {
  return typeof s === 'object' && s !== null && typeof s.aborted === 'boolean' && typeof s.addEventListener === 'function';
}

// A retrier made from a source already checked (see lib/options.js, sourceOf): by
// fromPolicy, r.with and the internal derivations (withClassifier), which also overlay
// hooks on the options calls read.
const MADE = Symbol('retryrs.made');
let remake;
let derive;
let optionsOf;
let sourceOfRetrier;
let within;

// Whether retryrs/propagation has been loaded (lib/ambient.js): only then does a call
// look for a request's context. A plain flag of this module, read first by every call.
let ambientOn = false;
let ambientContext;
ambient.onEnable((current) => {
  ambientContext = current;
  ambientOn = true;
});

/**
 * The listeners attached after creation (r.onEvent), shared by a retrier and every
 * retrier made from it (r.with, the HTTP helpers' derivations): attaching or disposing
 * one remakes the options each member's calls read.
 */
class Listeners {
  constructor() {
    this.fns = [];
    this.members = new Set();
    this.pruneAt = 64;
  }

  join(retrier) {
    // The HTTP helpers derive a retrier per request with a retry.limit of its own: the
    // dead ones are dropped as the set grows, not only when a listener changes.
    if (this.members.size >= this.pruneAt) {
      this.prune();
      this.pruneAt = Math.max(64, 2 * this.members.size);
    }
    this.members.add(new WeakRef(retrier));
  }

  prune(each) {
    for (const ref of this.members) {
      const r = ref.deref();
      if (r === undefined) this.members.delete(ref);
      else if (each !== undefined) each(r);
    }
  }

  changed() {
    this.prune(remake);
  }
}

// The exhaust reasons, in the order the engine's statistics count them.
const REASONS = native.exhaustReasons();

const DISPOSE = Symbol.dispose ?? Symbol.for('nodejs.dispose');

class Retrier {
  #o;
  #src;
  #hooks;

  /** @param {object} [options] see index.d.ts */
  constructor(options) {
    if (options !== null && typeof options === 'object' && options[MADE] !== undefined) {
      const { src, hooks } = options[MADE];
      this.#src = src;
      this.#hooks = hooks;
    } else {
      this.#src = normalise(options, new Listeners());
      this.#hooks = undefined;
    }
    this.#build();
    this.#src.listeners.join(this);
  }

  #build() {
    const o = finish(this.#src, this.#src.listeners.fns);
    this.#o = this.#hooks === undefined ? o : Object.freeze({ ...o, ...this.#hooks });
  }

  static {
    remake = (retrier) => retrier.#build();
    derive = (retrier, hooks) => new Retrier({ [MADE]: { src: retrier.#src, hooks: { ...retrier.#hooks, ...hooks } } });
    optionsOf = (retrier) => retrier.#o;
    sourceOfRetrier = (retrier) => retrier.#src;
    // This retrier's options with another native policy (the request's constraint):
    // built as the constructor builds them, hooks kept.
    within = (retrier, handle) => {
      const src = retrier.#src;
      const o = finish({ ...src, handle }, src.listeners.fns);
      return retrier.#hooks === undefined ? o : Object.freeze({ ...o, ...retrier.#hooks, policy: handle, policyId: handle.id });
    };
  }

  /**
   * A retrier running a policy from a document (loadPolicies), with the options only
   * code can give (shouldRetry, onEvent, ...) and knobs overriding the document's.
   * @param {import('./policies').Policy} policy
   * @param {object} [overrides]
   */
  static fromPolicy(policy, overrides) {
    const parts = policyParts(policy);
    if (parts === undefined) throw new TypeError(`Retrier.fromPolicy(policy): policy must come from loadPolicies, got ${typeName(policy)}`);
    return new Retrier({ [MADE]: { src: normaliseFromPolicy(parts.handle, overrides, new Listeners()), hooks: undefined } });
  }

  /**
   * The same retrier with some options changed (tenacity's retry_with): knobs and hooks
   * given replace these; the budget, breaker and listeners (onEvent, and those attached
   * with r.onEvent, now or later) are shared. Validated like the constructor's options.
   * @param {object} overrides
   */
  with(overrides) {
    if (this.#hooks !== undefined) throw new TypeError('with(): not available on an HTTP helper\'s internal retrier');
    return new Retrier({ [MADE]: { src: override(this.#src, overrides, 'with(overrides)'), hooks: undefined } });
  }

  /**
   * Attaches a listener after creation (cockatiel style), called for every event after
   * the onEvent listeners, by this retrier and every retrier made from it with r.with.
   * Returns a disposable: `d.dispose()` (or `using d = r.onEvent(...)`) detaches it.
   * @param {(event: object) => void} listener
   */
  onEvent(listener) {
    if (typeof listener !== 'function') throw new TypeError(`onEvent(listener): listener must be a function, got ${typeName(listener)}`);
    const group = this.#src.listeners;
    // Each attachment is its own entry: attaching one function twice calls it twice, and
    // each disposable detaches one.
    const entry = (event) => listener(event);
    group.fns = [...group.fns, entry];
    group.changed();
    let attached = true;
    const dispose = () => {
      if (!attached) return;
      attached = false;
      group.fns = group.fns.filter((f) => f !== entry);
      group.changed();
    };
    return { dispose, [DISPOSE]: dispose };
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

  /**
   * What console.log and util.inspect show: the knobs (as the engine holds them, null when
   * off) and the host options given.
   */
  [inspect.custom](depth, options, show) {
    const shown = knobsOf(this.#o.policy);
    const host = this.#src.host;
    for (const key of ['shouldRetry', 'shouldRetryResult', 'retryAfterMs']) {
      if (host[key] !== undefined) shown[key] = host[key];
    }
    const listeners = this.#o.onEvent === undefined ? 0 : (typeof host.onEvent === 'function' ? 1 : host.onEvent?.length ?? 0) + this.#src.listeners.fns.length;
    if (listeners > 0) shown.listeners = listeners;
    if (this.#o.reraise) shown.reraise = true;
    for (const key of ['onRetry', 'delayMs']) {
      if (host[key] !== undefined) shown[key] = host[key];
    }
    if (this.#o.deadlineHint !== null) shown.hint = this.#o.deadlineHint;
    if (this.#o.unref) shown.unref = true;
    return `Retrier ${show(shown, { ...options, depth: options.depth === null ? null : options.depth - 1 })}`;
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
    let o = this.#o;
    // Inside a request served by retryrs/propagation: its deadline and downward rule,
    // through the core's constraint (lib/ambient.js), and its cancellation (the client
    // went away).
    let ambientSignal;
    if (ambientOn === true) {
      const c = ambientContext();
      if (c !== undefined) {
        o = constrainedOptions(this, o, c);
        ambientSignal = ambient.cancelOf(c);
      }
    }
    // Subscribers of `retryrs:event` (lib/diagnostics.js) are looked for once per call.
    if (eventChannel.hasSubscribers) o = observedOptions(o);
    let signal;
    if (options !== undefined && options !== null) {
      if (typeof options !== 'object') return Promise.reject(new TypeError(`call(fn, options): options must be an object, got ${typeName(options)}`));
      const unknown = unknownCallOption(options);
      if (unknown !== undefined) return Promise.reject(unknown);
      signal = options.signal ?? undefined;
      if (signal !== undefined && !isAbortSignal(signal)) {
        return Promise.reject(new TypeError(`call(fn, { signal }): signal must be an AbortSignal, got ${typeName(signal)}`));
      }
    }
    if (ambientSignal !== undefined) signal = eitherSignal(signal, ambientSignal);
    if (signal !== undefined && signal.aborted) return this.#abortedBeforeStart(o, fn, signal);
    // `=== true` (these fields are booleans): a compare each, where a truth test of a
    // field dispatches on its type.
    if (signal !== undefined || o.needsFullLoop === true) return new CallRun(o, fn, signal, o.needsClock ? now() : 0).run(undefined, false);
    const t0 = o.needsClock === true ? startTime() : 0;
    // A bounded first attempt is raced against its bound (lib/bound.js). fn is called
    // here, as on the fast path below: an error fn creates captures its stack, whose cost
    // grows with each frame between fn and the caller.
    if (o.bounded === true) {
      const ctx = new BoundedAttemptContext(1, o.firstBoundMs, t0);
      let result;
      try {
        result = fn(ctx);
      } catch (err) {
        return new CallRun(o, fn, undefined, t0, true).run(err, true);
      }
      return boundedFirstAttempt(o, fn, ctx, result, t0);
    }

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
      return result.then(o.countOk, (err) => new CallRun(o, fn, undefined, t0, true).run(err, true));
    }
    if (isThenable(result)) {
      return Promise.resolve(result).then(o.countOk, (err) => new CallRun(o, fn, undefined, t0, true).run(err, true));
    }
    o.counts.unseenOk += 1;
    return Promise.resolve(result);
  }

  #abortedBeforeStart(o, fn, signal) {
    // Asked even without a listener: the engine's statistics count the cancelled call.
    const records = native.cancelledBeforeStartEvents(o.policy);
    if (o.onEvent !== undefined) {
      for (const rec of records) {
        try {
          o.onEvent({ kind: rec.kind, name: nameOf(o, fn), attempt: rec.attempt, elapsedMs: rec.elapsedMs, retriesLeft: rec.retriesLeft });
        } catch (err) {
          reportListenerError(err);
        }
      }
    }
    return Promise.reject(signal.reason);
  }

  /**
   * What this retrier's calls did, counted by the engine from their events: calls ended,
   * attempts, retries, successes, rejections (permanent failures), cancellations, and
   * exhaustions by reason. Per retrier (one made by with() counts its own); the HTTP
   * helpers' calls count in the retrier they were given.
   */
  stats() {
    const src = this.#src;
    const unseenOk = src.counts.unseenOk;
    src.counts.unseenOk = 0;
    const raw = src.handle.stats(unseenOk);
    const exhausted = {};
    REASONS.forEach((reason, i) => {
      exhausted[reason] = raw[6 + i];
    });
    return { calls: raw[0], attempts: raw[1], retries: raw[2], successes: raw[3], rejections: raw[4], cancellations: raw[5], exhausted };
  }
}

/**
 * A retrier's options for one call inside a request's context: its policy under the
 * core's constraint (the deadline the sooner of its own and the request's less the core's
 * margin; one attempt and no hedge when the request was a retry), or `o` itself when the
 * constraint changes nothing.
 */
function constrainedOptions(retrier, o, c) {
  const handle = ambient.constrain(o.policy, c);
  return handle === null ? o : within(retrier, handle);
}

/** A native policy's knobs in Node's spelling, null when off (for inspect). */
function knobsOf(handle) {
  const shown = {};
  for (const k of KNOBS) {
    if (k.numeric) shown[k.option] = handle.number(k.name) ?? null;
    else if (k.option === 'jitter') shown.jitter = handle.jitter;
    else if (k.option === 'name') shown.name = handle.name;
    else if (k.option === 'seed') shown.seed = handle.seed ?? null;
  }
  // A hedging policy's attempts follow its hedge, in the constructor's spelling.
  const hedge = handle.hedge;
  if (hedge !== null && hedge !== undefined) {
    shown.hedge = hedge.delayMs !== null && hedge.delayMs !== undefined
      ? { maxAttempts: hedge.maxAttempts, delayMs: hedge.delayMs }
      : { maxAttempts: hedge.maxAttempts, delayMs: 'adaptive', quantile: hedge.quantile, floorMs: hedge.floorMs, ceilingMs: hedge.ceilingMs };
  }
  if (handle.hasBudget) shown.budget = true;
  if (handle.hasBreaker) shown.breaker = true;
  return shown;
}

/**
 * The same retrier (policy, listener, budget, bounds) deciding with other hooks:
 * `shouldRetry` and `retryAfterMs`. The HTTP helper uses it: its verdicts are the core's
 * HTTP rules, not the user's predicate. `boundsAttempts`: the helper bounds each attempt
 * itself (with ctx.remainingMs, the engine's bound), so the call loop arms no timer and
 * never interrupts its attempts; `extra`: more hooks of the helper's own (internal
 * onRetry). Not part of the public API.
 */
function withClassifier(retrier, shouldRetry, retryAfterMs, boundsAttempts = false, extra = undefined) {
  if (!(retrier instanceof Retrier)) throw new TypeError(`retrier must be a Retrier, got ${typeName(retrier)}`);
  // No result predicate: a response is judged by the HTTP rules alone.
  // Its exhaustion is the helper's to shape (a client error marked exhausted): no reraise.
  // Its events name the retrier, not the helper's own attempt function.
  const hooks = { shouldRetry, retryAfterMs, shouldRetryResult: undefined, reraise: false, named: true };
  if (boundsAttempts) hooks.interrupts = false;
  // A helper's own hook before each wait (retryrs/got's onRetry drops a held body).
  if (extra !== undefined) Object.assign(hooks, extra);
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
