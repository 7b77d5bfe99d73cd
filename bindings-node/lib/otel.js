'use strict';
// retryrs/otel: OpenTelemetry metrics and span events from retry events, on
// @opentelemetry/api (an optional peer dependency; the application brings the SDK). The
// same instruments, attributes and units as Python's retryrs.otel; docs/observability.md
// has the table.
const m = require('./metrics');
const { version } = require('../package.json');
// For the undici instrumentation's startSpanHook: see lib/http-common.js.
const { resendCountAttributes } = require('./http-run');

const api = m.requirePeer('@opentelemetry/api', 'retryrs/otel');

/** OpenTelemetry's HTTP attribute for a resent request (semconv v1.23+, stable). */
const RESEND_COUNT = 'http.request.resend_count';

/**
 * A listener for `new Retrier({ onEvent })` (or a `retryrs:event` diagnostics_channel
 * subscriber): the instruments of meter `retryrs` from `meterProvider` (default: the
 * global one) and, with `spanEvents` (default true), a `retryrs.retry` event on the
 * active span, if it records, for each retry. No tracer is needed for that: the span is
 * whichever the caller's code made active.
 * @param {{ meterProvider?: import('@opentelemetry/api').MeterProvider, spanEvents?: boolean }} [options]
 */
function otelListener(options = {}) {
  if (options === null || typeof options !== 'object') throw new TypeError(`otelListener(options): options must be an object, got ${options === null ? 'null' : typeof options}`);
  m.rejectUnknownOptions('otelListener', options, ['meterProvider', 'spanEvents']);
  const { meterProvider = api.metrics.getMeterProvider(), spanEvents = true } = options;
  if (meterProvider === null || typeof meterProvider !== 'object' || typeof meterProvider.getMeter !== 'function') {
    throw new TypeError('otelListener: meterProvider must be an OpenTelemetry MeterProvider');
  }
  if (typeof spanEvents !== 'boolean') throw new TypeError(`otelListener: spanEvents must be a boolean, got ${typeof spanEvents}`);
  const meter = meterProvider.getMeter('retryrs', version);
  const calls = meter.createCounter(m.CALLS, { unit: m.UNITS[m.CALLS], description: m.HELP[m.CALLS] });
  const retries = meter.createCounter(m.RETRIES, { unit: m.UNITS[m.RETRIES], description: m.HELP[m.RETRIES] });
  const delay = meter.createHistogram(m.RETRY_DELAY, {
    unit: m.UNITS[m.RETRY_DELAY], description: m.HELP[m.RETRY_DELAY],
    advice: { explicitBucketBoundaries: [...m.DELAY_BUCKETS] },
  });
  const { ATTR } = m;
  // The breaker's instruments, made on the first breaker event (none without a breaker).
  // A synchronous gauge needs @opentelemetry/api 1.9; before it, an UpDownCounter moved
  // by the difference holds the same value.
  let breaker;
  const breakerInstruments = () => {
    if (breaker === undefined) {
      const stateOptions = { unit: m.BREAKER_UNITS[m.BREAKER_STATE], description: m.BREAKER_HELP[m.BREAKER_STATE] };
      let set;
      if (typeof meter.createGauge === 'function') {
        const gauge = meter.createGauge(m.BREAKER_STATE, stateOptions);
        set = (value, attrs) => gauge.record(value, attrs);
      } else {
        const counter = meter.createUpDownCounter(m.BREAKER_STATE, stateOptions);
        const last = new Map();
        set = (value, attrs) => {
          const key = attrs[ATTR.retrier];
          counter.add(value - (last.get(key) ?? 0), attrs);
          last.set(key, value);
        };
      }
      const rejections = meter.createCounter(m.BREAKER_REJECTIONS, {
        unit: m.BREAKER_UNITS[m.BREAKER_REJECTIONS], description: m.BREAKER_HELP[m.BREAKER_REJECTIONS],
      });
      breaker = { set, rejections };
    }
    return breaker;
  };
  return m.measure({
    retry(name, errorType, seconds, attempt) {
      retries.add(1, { [ATTR.retrier]: name, [ATTR.errorType]: errorType });
      delay.record(seconds, { [ATTR.retrier]: name });
      if (!spanEvents) return;
      const span = api.trace.getActiveSpan();
      if (span === undefined || !span.isRecording()) return;
      span.addEvent(m.RETRY_SPAN_EVENT, {
        [ATTR.retrier]: name, [ATTR.attempt]: attempt, [m.RETRY_DELAY]: seconds, [ATTR.errorType]: errorType,
      });
    },
    call(name, outcome, reason, errorType) {
      const attrs = { [ATTR.retrier]: name, [ATTR.outcome]: outcome };
      if (reason !== undefined) attrs[ATTR.reason] = reason;
      if (errorType !== undefined) attrs[ATTR.errorType] = errorType;
      calls.add(1, attrs);
    },
    breakerState(name, value) {
      breakerInstruments().set(value, { [ATTR.retrier]: name });
    },
    rejected(name) {
      breakerInstruments().rejections.add(1, { [ATTR.retrier]: name });
    },
  });
}

/**
 * Sets `http.request.resend_count` on `span` (default: the active span) for attempt
 * `attempt` of an HTTP request: attempt - 1 from the second attempt on, nothing on the
 * first (OpenTelemetry sets it on resends only). For HTTP helpers that make one span per
 * physical request.
 */
function recordResendCount(attempt, span = api.trace.getActiveSpan()) {
  if (!Number.isSafeInteger(attempt) || attempt < 1) throw new RangeError(`recordResendCount: attempt must be an integer >= 1, got ${String(attempt)}`);
  if (attempt === 1 || span === undefined) return;
  span.setAttribute(RESEND_COUNT, attempt - 1);
}

module.exports = { otelListener, recordResendCount, resendCountAttributes, RESEND_COUNT };
