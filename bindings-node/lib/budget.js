'use strict';
// The shared retry budget (a token bucket owned by the engine), shareable with
// worker_threads: postMessage copies a RetryBudget's one own field, its share id, and the
// receiving thread attaches to the same native bucket (one addon per process).
const native = require('./native');
const { rethrowProblem } = require('./problem');

const handles = new WeakMap();
// What a worker received (a plain { retryrsBudget: id }), attached once.
const attached = new WeakMap();

class RetryBudget {
  /**
   * @param {number} maxTokens the bucket's size (it starts full)
   * @param {number} tokenRatio what each success adds back
   */
  constructor(maxTokens, tokenRatio) {
    for (const [key, v] of [['maxTokens', maxTokens], ['tokenRatio', tokenRatio]]) {
      if (typeof v !== 'number') throw new TypeError(`RetryBudget: ${key} must be a number, got ${typeof v}`);
    }
    let handle;
    try {
      handle = native.NativeBudget.create(maxTokens, tokenRatio);
    } catch (err) {
      rethrowProblem(err, 'RetryBudget: ');
    }
    adopt(this, handle);
  }

  /**
   * The RetryBudget a worker received through postMessage or workerData (a RetryBudget
   * arrives as the plain object `{ retryrsBudget: id }`): the same bucket, in this thread.
   * A RetryBudget is returned as it is.
   */
  static from(received) {
    if (handles.has(received)) return received;
    const id = received !== null && typeof received === 'object' ? received.retryrsBudget : undefined;
    if (!Number.isInteger(id)) {
      throw new TypeError('RetryBudget.from: expected a RetryBudget or what postMessage made of one ({ retryrsBudget: id })');
    }
    let budget = attached.get(received);
    if (budget === undefined) {
      let handle;
      try {
        handle = native.NativeBudget.attach(id);
      } catch (err) {
        rethrowProblem(err, 'RetryBudget.from: ');
      }
      budget = Object.create(RetryBudget.prototype);
      adopt(budget, handle, id);
      attached.set(received, budget);
    }
    return budget;
  }

  /** Tokens left now. */
  get tokens() {
    return handles.get(this).tokens;
  }

  get maxTokens() {
    return handles.get(this).maxTokens;
  }

  get tokenRatio() {
    return handles.get(this).tokenRatio;
  }
}

function adopt(budget, handle, id = handle.share()) {
  handles.set(budget, handle);
  // The one own, enumerable field: what structured clone carries to another thread.
  Object.defineProperty(budget, 'retryrsBudget', { value: id, enumerable: true });
  Object.freeze(budget);
}

/** The native handle behind a RetryBudget (or one received from another thread), or undefined. */
function budgetHandle(budget) {
  const handle = handles.get(budget);
  if (handle !== undefined) return handle;
  if (budget !== null && typeof budget === 'object' && Number.isInteger(budget.retryrsBudget)) {
    return handles.get(RetryBudget.from(budget));
  }
  return undefined;
}

/** A RetryBudget around a native handle made elsewhere (a policy document's budget). */
function wrapBudget(handle) {
  const budget = Object.create(RetryBudget.prototype);
  handles.set(budget, handle);
  return Object.freeze(budget);
}

module.exports = { RetryBudget, budgetHandle, wrapBudget };
