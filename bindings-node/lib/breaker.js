'use strict';
// The shared circuit breaker (owned by the engine), shareable with worker_threads like a
// RetryBudget: postMessage copies its one own field, its share id, and the receiving
// thread attaches to the same native breaker (one addon per process).
const native = require('./native');
const { breakerNow } = require('./clock');
const { shareable } = require('./shareable');

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
    share.made(() => native.NativeBreaker.create(config), 'CircuitBreaker: ', this);
  }

  /**
   * The CircuitBreaker a worker received through postMessage or workerData (it arrives
   * as the plain object `{ retryrsBreaker: id }`): the same breaker, in this thread.
   */
  static from(received) {
    return share.from(received);
  }

  /** 'closed', 'open' or 'half_open', now (virtual time under retryrs/testing). */
  get state() {
    return share.handles.get(this).state(breakerNow());
  }

  /** Milliseconds left before a probe may go (0 unless open). */
  get retryInMs() {
    return share.handles.get(this).retryInMs(breakerNow());
  }

  /** Calls refused so far. */
  get rejections() {
    return share.handles.get(this).rejections;
  }

  /** 'consecutive' or 'sampling'. */
  get model() {
    return share.handles.get(this).model;
  }
}

const share = shareable(CircuitBreaker, 'retryrsBreaker', (id) => native.NativeBreaker.attach(id));

/** The native handle behind a CircuitBreaker (or one received from another thread), or undefined. */
const breakerHandle = share.handleOf;
/** A CircuitBreaker around a native handle made elsewhere (a policy document's breaker). */
const wrapBreaker = share.wrap;

module.exports = { CircuitBreaker, breakerHandle, wrapBreaker };
