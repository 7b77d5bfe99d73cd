'use strict';
// The shared circuit breaker (owned by the engine), shareable with worker_threads like a
// RetryBudget: postMessage copies its one own field, its share id, and the receiving
// thread attaches to the same native breaker (one addon per process).
const native = require('./native');
const { breakerNow } = require('./clock');
const { shareable } = require('./shareable');

// Each option a model owns (the others are every model's); one given to another model is
// a mistake worth naming.
const OWNER = {
  failures: 'consecutive',
  minimumThroughput: 'sampling',
  samplingDurationMs: 'sampling',
  minimumCalls: 'count',
  windowSize: 'count',
  failureRatio: 'sampling or count',
  slowCallDurationMs: 'sampling or count',
  slowCallRatio: 'sampling or count',
};
const MODELS = ['consecutive', 'sampling', 'count'];
const FLAGS = ['perAttempt', 'countPermanent', 'judgeAllProbes'];
const KEYS = new Set(['model', ...Object.keys(OWNER), 'breakDurationMs', 'halfOpenProbes', 'breakMultiplier', 'maxBreakDurationMs', ...FLAGS]);

class CircuitBreaker {
  /**
   * @param {object} [options] model 'consecutive' (failures, default 5), 'sampling'
   *   (Polly v8's failureRatio 0.1, minimumThroughput 100, samplingDurationMs 30000) or
   *   'count' (resilience4j's failureRatio 0.5, minimumCalls 100, windowSize 100);
   *   sampling and count: slowCallDurationMs (null: no call is slow), slowCallRatio 1;
   *   breakDurationMs 5000, halfOpenProbes 1, breakMultiplier 1, maxBreakDurationMs
   *   (null: one day), perAttempt false, countPermanent false, judgeAllProbes false.
   *   docs/breaker.md maps Polly's and resilience4j's options.
   */
  constructor(options = {}) {
    if (options === null || typeof options !== 'object') throw new TypeError(`CircuitBreaker: options must be an object, got ${options === null ? 'null' : typeof options}`);
    for (const key of Object.keys(options)) {
      if (!KEYS.has(key)) throw new TypeError(`CircuitBreaker: unknown option '${key}' (known: ${[...KEYS].join(', ')})`);
    }
    const model = options.model ?? 'consecutive';
    if (!MODELS.includes(model)) throw new RangeError(`CircuitBreaker: model must be 'consecutive', 'sampling' or 'count', got ${String(model)}`);
    for (const [key, owner] of Object.entries(OWNER)) {
      const given = options[key] !== undefined && !(key === 'slowCallDurationMs' && options[key] === null);
      if (given && !owner.split(' or ').includes(model)) throw new TypeError(`CircuitBreaker: ${key} belongs to model '${owner.replace(' or ', "' or '")}'`);
    }
    const num = (key, dflt) => {
      const v = options[key] ?? dflt;
      if (typeof v !== 'number') throw new TypeError(`CircuitBreaker: ${key} must be a number, got ${typeof v}`);
      return v;
    };
    for (const key of FLAGS) {
      if (options[key] !== undefined && typeof options[key] !== 'boolean') {
        throw new TypeError(`CircuitBreaker: ${key} must be a boolean, got ${typeof options[key]}`);
      }
    }
    const config = {
      model,
      failures: num('failures', 5),
      failureRatio: num('failureRatio', model === 'count' ? 0.5 : 0.1),
      minimumThroughput: num('minimumThroughput', 100),
      samplingDurationMs: num('samplingDurationMs', 30000),
      breakDurationMs: num('breakDurationMs', 5000),
      halfOpenProbes: num('halfOpenProbes', 1),
      breakMultiplier: num('breakMultiplier', 1),
      maxBreakDurationMs: options.maxBreakDurationMs === null || options.maxBreakDurationMs === undefined ? undefined : num('maxBreakDurationMs'),
      perAttempt: options.perAttempt === true,
      minimumCalls: num('minimumCalls', 100),
      windowSize: num('windowSize', 100),
      countPermanent: options.countPermanent === true,
      slowCallDurationMs: options.slowCallDurationMs === null || options.slowCallDurationMs === undefined ? undefined : num('slowCallDurationMs'),
      slowCallRatio: num('slowCallRatio', 1),
      judgeAllProbes: options.judgeAllProbes === true,
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

  /** 'closed', 'open', 'half_open' or 'isolated', now (virtual time under retryrs/testing). */
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

  /** 'consecutive', 'sampling' or 'count'. */
  get model() {
    return share.handles.get(this).model;
  }

  /**
   * Holds it open until reset(): every call rejects at once with RetryExhaustedError
   * (reason 'circuit_open'); state 'isolated' (Polly's Isolate, resilience4j's FORCED_OPEN).
   * Every thread sharing it sees it.
   */
  isolate() {
    share.handles.get(this).isolate();
  }

  /** Closes it, whatever its state, with its counts started over. */
  reset() {
    share.handles.get(this).reset();
  }
}

const share = shareable(CircuitBreaker, 'retryrsBreaker', (id) => native.NativeBreaker.attach(id));

/** The native handle behind a CircuitBreaker (or one received from another thread), or undefined. */
const breakerHandle = share.handleOf;
/** A CircuitBreaker around a native handle made elsewhere (a policy document's breaker). */
const wrapBreaker = share.wrap;

module.exports = { CircuitBreaker, breakerHandle, wrapBreaker };
