'use strict';
// The shared retry budget (a token bucket owned by the engine).
const native = require('./native');
const { rethrowProblem } = require('./problem');

const handles = new WeakMap();

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
    handles.set(this, handle);
    Object.freeze(this);
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

/** The native handle behind a RetryBudget, or undefined for anything else. */
function budgetHandle(budget) {
  return handles.get(budget);
}

/** A RetryBudget around a native handle made elsewhere (a policy document's budget). */
function wrapBudget(handle) {
  const budget = Object.create(RetryBudget.prototype);
  handles.set(budget, handle);
  return Object.freeze(budget);
}

module.exports = { RetryBudget, budgetHandle, wrapBudget };
