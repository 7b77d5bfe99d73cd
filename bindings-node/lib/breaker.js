'use strict';
// The shared circuit breaker (owned by the engine), shareable with worker_threads like a
// RetryBudget: postMessage copies its one own field, its share id, and the receiving
// thread attaches to the same native breaker (one addon per process).
const native = require('./native');
const { rethrowProblem } = require('./problem');
const { breakerNow } = require('./clock');

const handles = new WeakMap();
// What a worker received (a plain { retryrsBreaker: id }), attached once.
const attached = new WeakMap();

const MODELS = ['consecutive', 'sampling'];
const SAMPLING_ONLY = ['failureRatio', 'minimumThroughput', 'samplingDurationMs'];
const KEYS = new Set(['model', 'failures', ...SAMPLING_ONLY, 'breakDurationMs', 'halfOpenProbes', 'breakMultiplier', 'maxBreakDurationMs', 'perAttempt']);

class CircuitBreaker {
  /**
   * @param {object} [options] model 'consecutive' (failures, default 5) or 'sampling'
   *   (Polly v8's failureRatio 0.1, minimumThroughput 100, samplingDurationMs 30000);
   *   breakDurationMs 5000, halfOpenProbes 1, breakMultiplier 1, maxBreakDurationMs
   *   (null: one day), perAttempt false.
   */
  constructor(options = {}) {
    if (options === null || typeof options !== 'object') throw new TypeError(`CircuitBreaker: options must be an object, got ${options === null ? 'null' : typeof options}`);
    for (const key of Object.keys(options)) {
      if (!KEYS.has(key)) throw new TypeError(`CircuitBreaker: unknown option '${key}' (known: ${[...KEYS].join(', ')})`);
    }
    const model = options.model ?? 'consecutive';
    if (!MODELS.includes(model)) throw new RangeError(`CircuitBreaker: model must be 'consecutive' or 'sampling', got ${String(model)}`);
    if (model === 'consecutive') {
      for (const key of SAMPLING_ONLY) {
        if (options[key] !== undefined) throw new TypeError(`CircuitBreaker: ${key} belongs to model 'sampling'`);
      }
    } else if (options.failures !== undefined) {
      throw new TypeError("CircuitBreaker: failures belongs to model 'consecutive'");
    }
    const num = (key, dflt) => {
      const v = options[key] ?? dflt;
      if (typeof v !== 'number') throw new TypeError(`CircuitBreaker: ${key} must be a number, got ${typeof v}`);
      return v;
    };
    if (options.perAttempt !== undefined && typeof options.perAttempt !== 'boolean') {
      throw new TypeError(`CircuitBreaker: perAttempt must be a boolean, got ${typeof options.perAttempt}`);
    }
    const config = {
      model,
      failures: num('failures', 5),
      failureRatio: num('failureRatio', 0.1),
      minimumThroughput: num('minimumThroughput', 100),
      samplingDurationMs: num('samplingDurationMs', 30000),
      breakDurationMs: num('breakDurationMs', 5000),
      halfOpenProbes: num('halfOpenProbes', 1),
      breakMultiplier: num('breakMultiplier', 1),
      maxBreakDurationMs: options.maxBreakDurationMs === null || options.maxBreakDurationMs === undefined ? undefined : num('maxBreakDurationMs'),
      perAttempt: options.perAttempt === true,
    };
    let handle;
    try {
      handle = native.NativeBreaker.create(config);
    } catch (err) {
      rethrowProblem(err, 'CircuitBreaker: ');
    }
    adopt(this, handle);
  }

  /**
   * The CircuitBreaker a worker received through postMessage or workerData (it arrives
   * as the plain object `{ retryrsBreaker: id }`): the same breaker, in this thread.
   */
  static from(received) {
    if (handles.has(received)) return received;
    const id = received !== null && typeof received === 'object' ? received.retryrsBreaker : undefined;
    if (!Number.isInteger(id)) {
      throw new TypeError('CircuitBreaker.from: expected a CircuitBreaker or what postMessage made of one ({ retryrsBreaker: id })');
    }
    let breaker = attached.get(received);
    if (breaker === undefined) {
      let handle;
      try {
        handle = native.NativeBreaker.attach(id);
      } catch (err) {
        rethrowProblem(err, 'CircuitBreaker.from: ');
      }
      breaker = Object.create(CircuitBreaker.prototype);
      adopt(breaker, handle, id);
      attached.set(received, breaker);
    }
    return breaker;
  }

  /** 'closed', 'open' or 'half_open', now (virtual time under retryrs/testing). */
  get state() {
    return handles.get(this).state(breakerNow());
  }

  /** Milliseconds left before a probe may go (0 unless open). */
  get retryInMs() {
    return handles.get(this).retryInMs(breakerNow());
  }

  /** Calls refused so far. */
  get rejections() {
    return handles.get(this).rejections;
  }

  /** 'consecutive' or 'sampling'. */
  get model() {
    return handles.get(this).model;
  }
}

function adopt(breaker, handle, id = handle.share()) {
  handles.set(breaker, handle);
  // The one own, enumerable field: what structured clone carries to another thread.
  Object.defineProperty(breaker, 'retryrsBreaker', { value: id, enumerable: true });
  Object.freeze(breaker);
}

/** The native handle behind a CircuitBreaker (or one received from another thread), or undefined. */
function breakerHandle(breaker) {
  const handle = handles.get(breaker);
  if (handle !== undefined) return handle;
  if (breaker !== null && typeof breaker === 'object' && Number.isInteger(breaker.retryrsBreaker)) {
    return handles.get(CircuitBreaker.from(breaker));
  }
  return undefined;
}

/** A CircuitBreaker around a native handle made elsewhere (a policy document's breaker). */
function wrapBreaker(handle) {
  const breaker = Object.create(CircuitBreaker.prototype);
  adopt(breaker, handle);
  return breaker;
}

module.exports = { CircuitBreaker, breakerHandle, wrapBreaker };
