'use strict';
// retryrs/prometheus: Prometheus metrics from retry events, on prom-client (an optional
// peer dependency). The same metrics, labels and units as Python's retryrs.prometheus;
// docs/observability.md has the table.
const m = require('./metrics');

const prom = m.requirePeer('prom-client', 'retryrs/prometheus');

/** The registered metric of that name, or a new one (listeners share metrics per registry). */
function metric(register, Kind, config) {
  const found = register.getSingleMetric(config.name);
  if (found === undefined) return new Kind({ ...config, registers: [register] });
  if (!(found instanceof Kind) && found.constructor?.name !== Kind.name) {
    throw new TypeError(`retryrs/prometheus: ${config.name} is already registered as a ${found.constructor?.name}, not a ${Kind.name}`);
  }
  return found;
}

/** metric.labels(...values), remembered: a listener sees few distinct label sets. */
function cached(family) {
  const children = new Map();
  return (...values) => {
    const key = values.join('\u0000');
    let child = children.get(key);
    if (child === undefined) {
      child = family.labels(...values);
      children.set(key, child);
    }
    return child;
  };
}

/**
 * A listener for `new Retrier({ onEvent })` (or a `retryrs:event` diagnostics_channel
 * subscriber): counts calls and retries and observes retry waits in `register` (default:
 * prom-client's global registry). Listeners for the same registry and namespace share
 * one set of metrics.
 * @param {{ register?: import('prom-client').Registry, namespace?: string }} [options]
 */
function promListener(options = {}) {
  if (options === null || typeof options !== 'object') throw new TypeError(`promListener(options): options must be an object, got ${options === null ? 'null' : typeof options}`);
  m.rejectUnknownOptions('promListener', options, ['register', 'namespace']);
  const { register = prom.register, namespace = 'retryrs' } = options;
  if (typeof namespace !== 'string' || namespace === '') throw new TypeError(`promListener: namespace must be a non-empty string, got ${JSON.stringify(namespace)}`);
  if (register === null || typeof register !== 'object' || typeof register.getSingleMetric !== 'function') {
    throw new TypeError('promListener: register must be a prom-client Registry');
  }
  const { LABEL } = m;
  const calls = metric(register, prom.Counter, {
    name: `${m.promName(m.CALLS, namespace)}_total`, help: m.HELP[m.CALLS],
    labelNames: [LABEL.retrier, LABEL.outcome, LABEL.reason, LABEL.errorType],
  });
  const retries = metric(register, prom.Counter, {
    name: `${m.promName(m.RETRIES, namespace)}_total`, help: m.HELP[m.RETRIES],
    labelNames: [LABEL.retrier, LABEL.errorType],
  });
  const delay = metric(register, prom.Histogram, {
    name: `${m.promName(m.RETRY_DELAY, namespace)}_seconds`, help: m.HELP[m.RETRY_DELAY],
    labelNames: [LABEL.retrier], buckets: [...m.DELAY_BUCKETS],
  });
  const callChild = cached(calls);
  const retryChild = cached(retries);
  const delayChild = cached(delay);
  // The breaker's metrics, registered on first use (a retrier without a breaker adds none).
  let breaker;
  const breakerChildren = () => {
    if (breaker === undefined) {
      const labelNames = [LABEL.retrier];
      const state = metric(register, prom.Gauge, {
        name: m.promName(m.BREAKER_STATE, namespace), help: m.BREAKER_HELP[m.BREAKER_STATE], labelNames,
      });
      const rejections = metric(register, prom.Counter, {
        name: `${m.promName(m.BREAKER_REJECTIONS, namespace)}_total`, help: m.BREAKER_HELP[m.BREAKER_REJECTIONS], labelNames,
      });
      breaker = { state: cached(state), rejections: cached(rejections) };
    }
    return breaker;
  };
  return m.measure({
    retry(name, errorType, seconds) {
      retryChild(name, errorType).inc();
      delayChild(name).observe(seconds);
    },
    call(name, outcome, reason, errorType) {
      callChild(name, outcome, reason ?? '', errorType ?? '').inc();
    },
    breakerState(name, value) {
      breakerChildren().state(name).set(value);
    },
    rejected(name) {
      breakerChildren().rejections(name).inc();
    },
  });
}

module.exports = { promListener };
