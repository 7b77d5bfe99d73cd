// retryrs/prometheus: Prometheus metrics from retry events (optional peer: prom-client).
import type { Registry } from 'prom-client';
import type { RetryEvent } from '../index';

/** What promListener takes. */
export interface PromListenerOptions {
  /** Where the metrics are registered. Default: prom-client's global registry. */
  register?: Registry;
  /** The metric name prefix. Default 'retryrs'. */
  namespace?: string;
}

/**
 * A listener for `new Retrier({ onEvent })` or a `retryrs:event` diagnostics_channel
 * subscriber: retryrs_calls_total{retrier,outcome,reason,error_type},
 * retryrs_retries_total{retrier,error_type}, retryrs_retry_delay_seconds{retrier}.
 */
export declare function promListener(options?: PromListenerOptions): (event: RetryEvent) => void;
