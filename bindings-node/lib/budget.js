'use strict';
// The shared retry budget (a token bucket owned by the engine), shareable with
// worker_threads: postMessage copies a RetryBudget's one own field, its share id, and the
// receiving thread attaches to the same native bucket (one addon per process).
const native = require('./native');
const { shareable } = require('./shareable');

class RetryBudget {
  /**
   * @param {number} maxTokens the bucket's size (it starts full)
   * @param {number} tokenRatio what each success adds back
   */
  constructor(maxTokens, tokenRatio) {
    for (const [key, v] of [['maxTokens', maxTokens], ['tokenRatio', tokenRatio]]) {
      if (typeof v !== 'number') throw new TypeError(`RetryBudget: ${key} must be a number, got ${typeof v}`);
    }
    share.made(() => native.NativeBudget.create(maxTokens, tokenRatio), 'RetryBudget: ', this);
  }

  /**
   * The AWS SDKs' standard retry quota (kind 'quota'); every default is the SDKs'.
   * @param {{ capacity?: number, retryCost?: number, timeoutRetryCost?: number, noRetryIncrement?: number }} [o]
   */
  static quota(o = {}) {
    const n = numbers('RetryBudget.quota', o, { capacity: 500, retryCost: 5, timeoutRetryCost: 10, noRetryIncrement: 1 });
    return share.made(() => native.NativeBudget.quota(n.capacity, n.retryCost, n.timeoutRetryCost, n.noRetryIncrement), 'RetryBudget.quota: ');
  }

  /**
   * Finagle's RetryBudget (kind 'ratio'); every default is Finagle's.
   * @param {{ ttlMs?: number, minRetriesPerSec?: number, percentCanRetry?: number }} [o]
   */
  static ratio(o = {}) {
    const n = numbers('RetryBudget.ratio', o, { ttlMs: 10000, minRetriesPerSec: 10, percentCanRetry: 0.2 });
    return share.made(() => native.NativeBudget.ratio(n.ttlMs, n.minRetriesPerSec, n.percentCanRetry), 'RetryBudget.ratio: ');
  }

  /** 'token_bucket', 'quota' or 'ratio'. */
  get kind() {
    return share.handles.get(this).kind;
  }

  /**
   * The RetryBudget a worker received through postMessage or workerData (a RetryBudget
   * arrives as the plain object `{ retryrsBudget: id }`): the same bucket, in this thread.
   * A RetryBudget is returned as it is.
   */
  static from(received) {
    return share.from(received);
  }

  /** Tokens left now. */
  get tokens() {
    return share.handles.get(this).tokens;
  }

  get maxTokens() {
    return share.handles.get(this).maxTokens;
  }

  get tokenRatio() {
    return share.handles.get(this).tokenRatio;
  }
}

/** `o`'s numbers, each defaulting to `defaults`' (the keys it knows). */
function numbers(where, o, defaults) {
  if (o === null || typeof o !== 'object') throw new TypeError(`${where}: options must be an object, got ${o === null ? 'null' : typeof o}`);
  for (const key of Object.keys(o)) {
    if (!Object.hasOwn(defaults, key)) throw new TypeError(`${where}: unknown option '${key}' (known: ${Object.keys(defaults).join(', ')})`);
  }
  const out = {};
  for (const [key, dflt] of Object.entries(defaults)) {
    const v = o[key] ?? dflt;
    if (typeof v !== 'number') throw new TypeError(`${where}: ${key} must be a number, got ${typeof v}`);
    out[key] = v;
  }
  return out;
}

const share = shareable(RetryBudget, 'retryrsBudget', (id) => native.NativeBudget.attach(id));

/** The native handle behind a RetryBudget (or one received from another thread), or undefined. */
const budgetHandle = share.handleOf;
/** A RetryBudget around a native handle made elsewhere (a policy document's budget). */
const wrapBudget = share.wrap;

module.exports = { RetryBudget, budgetHandle, wrapBudget };
