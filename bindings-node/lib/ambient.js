'use strict';
// The ambient context of a request a server helper serves (retryrs/propagation): its
// deadline and whether it was a retry, for the request's async duration. The call path
// looks it up only after retryrs/propagation has been loaded once (`enabled`, a plain
// flag the retrier reads before anything else): a process that never serves through it
// pays one compare per call, nothing more.
const { AsyncLocalStorage } = require('node:async_hooks');
const native = require('./native');
// The clock the calls run on: performance.now(), or the virtual clock under the testing
// switch (so a context's time and its calls' agree, and vectors are exact).
const { now } = require('./clock');
const { eitherSignal } = require('./signals');

let store = null;
let listeners = [];

let cancelOf;
let endOf;
let endedOf;

/**
 * What a request brought in: when its budget runs out (on the calls' clock, lib/clock.js;
 * Infinity: no deadline), whether it was itself a retry (the downward rule: retriers
 * inside it make one attempt, send no hedge and say `r=?1` on), and a signal that aborts
 * at that deadline or when its client goes away. `cancel` (a signal, or undefined) is
 * what cancels the retriers' calls inside: the client going away, not the deadline,
 * which the core's constraint already makes theirs (a call cut by it ends with reason
 * deadline, a margin before the caller gives up).
 */
class PropagationContext {
  #deadlineAt;
  #retry;
  #signal;
  #cancel;
  #ended = false;
  // The context in force where this one was made by hand (run({ ... }, fn)): this one
  // narrows it while it is in force, and is its own once it is not (its request over).
  #parent;
  // The signal and cancellation joined with the parent's (joinedWith), made on first use.
  #joinedSignal;
  #joinedCancel;

  constructor(deadlineAt, retry, signal, cancel, parent = undefined) {
    this.#deadlineAt = deadlineAt;
    this.#retry = retry;
    this.#signal = signal;
    this.#cancel = cancel;
    this.#parent = parent;
  }

  static {
    cancelOf = (c) => {
      const p = c.#narrowed();
      if (p === undefined) return c.#cancel;
      return (c.#joinedCancel = joinedWith(c.#joinedCancel, c.#cancel, cancelOf(p))).signal;
    };
    // A request's context ends with its response (lib/propagation.js): work it started
    // that outlives it (a timer, a refresher started lazily) no longer finds it, so its
    // calls run under their own policy, not a finished request's deadline or cancel.
    endOf = (c) => {
      c.#ended = true;
    };
    endedOf = (c) => c.#ended;
  }

  /** The parent this context narrows now: undefined when it has none or it is over. */
  #narrowed() {
    const p = this.#parent;
    return p === undefined || p.#ended ? undefined : p;
  }

  /**
   * This context for run(context, fn): itself, or, once its request is over, a copy that
   * does not end (work handed on by hand keeps the request's deadline and retry mark).
   */
  inForce() {
    if (!this.#ended) return this;
    return new PropagationContext(this.#deadlineAt, this.#retry, this.#signal, this.#cancel, this.#parent);
  }

  /** The time left before the inbound deadline, in whole ms (never negative); null: none. */
  get remainingMs() {
    const at = this.deadlineAt;
    if (at === Infinity) return null;
    return Math.max(0, Math.floor(at - now()));
  }

  /** When the inbound budget runs out, on the calls' clock (Infinity: never). */
  get deadlineAt() {
    const p = this.#narrowed();
    return p === undefined ? this.#deadlineAt : Math.min(this.#deadlineAt, p.deadlineAt);
  }

  /** Whether the inbound request was a retry: retriers inside it make one attempt. */
  get retry() {
    return this.#retry || this.#narrowed()?.retry === true;
  }

  /** Aborts at the inbound deadline and when the client disconnects. */
  get signal() {
    const p = this.#narrowed();
    if (p === undefined) return this.#signal;
    return (this.#joinedSignal = joinedWith(this.#joinedSignal, this.#signal, p.signal)).signal;
  }

  get [Symbol.toStringTag]() {
    return 'PropagationContext';
  }
}

/**
 * `own` joined with `theirs` (the parent's signal or cancellation now) as
 * `{ theirs, signal }`: `memo` again while the parent's is the one it was made with. A
 * parent's own changes (its request over, it is its own again), and a join made with
 * the old one would keep the finished request's.
 */
function joinedWith(memo, own, theirs) {
  return memo !== undefined && memo.theirs === theirs ? memo : { theirs, signal: eitherSignal(own, theirs) };
}

/**
 * Turns the ambient lookup on (once, by retryrs/propagation): `onEnable(current)` hooks
 * registered by the call path are told, so they read a flag of their own rather than this
 * module's state.
 */
function enable() {
  if (store !== null) return store;
  store = new AsyncLocalStorage();
  for (const l of listeners) l(current);
  listeners = [];
  return store;
}

/** The context of the request being served, or undefined (none, or lookup off). */
function current() {
  if (store === null) return undefined;
  const c = store.getStore();
  return c === undefined || endedOf(c) ? undefined : c;
}

/** Registers `hook(current)`, called when the lookup is turned on (at once if it is). */
function onEnable(hook) {
  if (store !== null) hook(current);
  else listeners.push(hook);
}

/**
 * The policy a call starting now runs under inside context `c`: the core's constraint
 * (lib/retrier.js asks), a native policy feeding the same statistics, or null when the
 * policy already obeys it.
 */
function constrain(handle, c) {
  const at = c.deadlineAt;
  return native.policyUnder(handle, at === Infinity ? null : Math.max(0, at - now()), c.retry) ?? null;
}

module.exports = { PropagationContext, enable, current, onEnable, constrain, cancelOf, endOf };
