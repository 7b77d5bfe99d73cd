'use strict';
// What retryrs/prometheus and retryrs/otel record, in one place for Node: the instruments'
// names, units and attributes (the same table as the Python package's _metrics.py and
// docs/observability.md; tests/observability/scenario.json holds both hosts to it), and
// how an event maps to them.

// OpenTelemetry instruments (dots, unit in the instrument, no _total) and the Prometheus
// metric each becomes (snake case, `_total` on counters, the unit as a suffix).
const CALLS = 'retryrs.calls';
const RETRIES = 'retryrs.retries';
const RETRY_DELAY = 'retryrs.retry.delay';
const UNITS = Object.freeze({ [CALLS]: '{call}', [RETRIES]: '{retry}', [RETRY_DELAY]: 's' });
const HELP = Object.freeze({
  [CALLS]: 'Retried calls that ended, by retrier, outcome, exhaustion reason and error type',
  [RETRIES]: 'Retries scheduled (a wait before another attempt), by retrier and error type',
  [RETRY_DELAY]: 'The waits before a retry, in seconds, by retrier',
});

// The circuit breaker's (issue 27): made on the first breaker event a listener sees, so a
// retrier without a breaker registers nothing more.
const BREAKER_STATE = 'retryrs.breaker.state';
const BREAKER_REJECTIONS = 'retryrs.breaker.rejections';
const BREAKER_UNITS = Object.freeze({ [BREAKER_STATE]: '1', [BREAKER_REJECTIONS]: '{call}' });
const BREAKER_HELP = Object.freeze({
  [BREAKER_STATE]: "The circuit breaker's state as its retrier last saw it (0 closed, 1 open, 2 half-open), by retrier",
  [BREAKER_REJECTIONS]: 'Calls the circuit breaker refused (no attempt made), by retrier',
});
// The events that move the gauge, and the value each sets.
const BREAKER_STATES = new Map([['breaker_closed', 0], ['breaker_opened', 1], ['breaker_half_open', 2]]);

// OpenTelemetry attributes and the Prometheus labels they become.
const ATTR = Object.freeze({
  retrier: 'retryrs.retrier.name',
  outcome: 'retryrs.outcome',
  reason: 'retryrs.exhausted.reason',
  errorType: 'error.type',
  attempt: 'retryrs.attempt',
});
const LABEL = Object.freeze({ retrier: 'retrier', outcome: 'outcome', reason: 'reason', errorType: 'error_type' });

// The span event added to the active span for each retry.
const RETRY_SPAN_EVENT = 'retryrs.retry';

// Retry waits run from milliseconds (jittered backoff) to a minute (a server's
// Retry-After); the default policy caps backoff at 5 s. Same in every host.
const DELAY_BUCKETS = Object.freeze([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]);

// The key under which an error states its own error.type (lib/http-common.js).
const ERROR_TYPE = Symbol.for('retryrs.errorType');

// The events that end a call (each counts one call, itself the outcome), and those that
// end with the caller's error, the only ones that carry error.type.
const OUTCOMES = new Set(['success', 'rejected', 'exhausted', 'cancelled']);
const FAILED_OUTCOMES = new Set(['rejected', 'exhausted']);

/**
 * OpenTelemetry's `error.type`, low-cardinality: the error's `name` (TypeError,
 * TimeoutError, a class's own name), its constructor's name, or `_OTHER`. A subclass
 * that never set a name inherits its built-in ancestor's ("Error"), so the class's own
 * name wins there, as Python's class name does.
 */
function errorType(error) {
  if (error !== null && (typeof error === 'object' || typeof error === 'function')) {
    // An HTTP helper's failure says its own: the status code, or the client's error code.
    const stated = error[ERROR_TYPE];
    if (typeof stated === 'string' && stated !== '') return stated;
    const name = typeof error.name === 'string' && error.name !== '' ? error.name : undefined;
    const ctor = typeof error.constructor === 'function' ? error.constructor : undefined;
    const ctorName = ctor && typeof ctor.name === 'string' && ctor.name !== '' ? ctor.name : undefined;
    const own = (o) => o != null && Object.prototype.hasOwnProperty.call(o, 'name');
    if (name && (!ctorName || own(error) || own(ctor.prototype))) return name;
    if (ctorName) return ctorName;
  }
  return '_OTHER';
}

/** "retryrs.retry.delay" -> "<namespace>_retry_delay". */
function promName(otelName, namespace) {
  return `${namespace}_${otelName.slice(otelName.indexOf('.') + 1).replaceAll('.', '_')}`;
}

/**
 * Turns one call's events into measurements: `retry(name, errorType, delaySeconds,
 * attempt)` for each retry, `call(name, outcome, reason, errorType)` for each end (reason
 * and errorType undefined where they do not apply), `breakerState(name, value)` and
 * `rejected(name)` for a circuit breaker's moves and refusals. A retrying event carries no error in
 * Node; it follows its attempt_failed synchronously (one batch per engine decision), so
 * the last failure seen is its error.
 */
function measure({ retry, call, breakerState, rejected }) {
  let lastFailure;
  return function onEvent(event) {
    const kind = event.kind;
    if (kind === 'attempt_failed') {
      lastFailure = event.error;
    } else if (kind === 'retrying') {
      const failure = lastFailure;
      lastFailure = undefined;
      retry(event.name, errorType(failure), event.delayMs / 1000, event.attempt);
    } else if (OUTCOMES.has(kind)) {
      lastFailure = undefined;
      call(event.name, kind, event.reason, FAILED_OUTCOMES.has(kind) ? errorType(event.error) : undefined);
      // A call the circuit breaker refused: `breakerState(name, value)` and
      // `rejected(name)` see the breaker's side.
      if (event.reason === 'circuit_open') rejected(event.name);
    } else if (BREAKER_STATES.has(kind)) {
      breakerState(event.name, BREAKER_STATES.get(kind));
    }
  };
}

/** require(id) for an optional peer dependency, with a message that says how to get it. */
function requirePeer(id, feature) {
  try {
    return require(id);
  } catch (cause) {
    if (cause?.code === 'MODULE_NOT_FOUND' && String(cause.message).includes(`'${id}'`)) {
      throw new Error(`${feature} needs the optional peer dependency ${id}: npm install ${id}`, { cause });
    }
    throw cause;
  }
}

/**
 * Throws a TypeError naming the first key of `options` not in `known`: a listener's
 * option misspelt (or spelt as in Python) would otherwise fall back to its default.
 */
function rejectUnknownOptions(where, options, known) {
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) throw new TypeError(`${where}: unknown option '${key}' (known: ${known.join(', ')})`);
  }
}

module.exports = {
  CALLS, RETRIES, RETRY_DELAY, UNITS, HELP, ATTR, LABEL, RETRY_SPAN_EVENT, DELAY_BUCKETS,
  BREAKER_STATE, BREAKER_REJECTIONS, BREAKER_UNITS, BREAKER_HELP,
  ERROR_TYPE, errorType, promName, measure, requirePeer, rejectUnknownOptions,
};
