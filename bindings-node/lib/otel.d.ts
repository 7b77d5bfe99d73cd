// retryrs/otel: OpenTelemetry metrics and span events from retry events (optional peer:
// @opentelemetry/api).
import type { MeterProvider, Span } from '@opentelemetry/api';
import type { RetryEvent } from '../index';

/** What otelListener takes. */
export interface OtelListenerOptions {
  /** Where meter 'retryrs' comes from. Default: the global MeterProvider. */
  meterProvider?: MeterProvider;
  /** Add a 'retryrs.retry' event to the active span for each retry. Default true. */
  spanEvents?: boolean;
}

/**
 * A listener for `new Retrier({ onEvent })` or a `retryrs:event` diagnostics_channel
 * subscriber: counters retryrs.calls and retryrs.retries, histogram retryrs.retry.delay (s).
 */
export declare function otelListener(options?: OtelListenerOptions): (event: RetryEvent) => void;

/** Sets http.request.resend_count = attempt - 1 on the span (default: the active one) from the second attempt on. */
export declare function recordResendCount(attempt: number, span?: Span): void;

/**
 * http.request.resend_count for the request being created now by retryingFetch or the
 * retryrs/undici interceptor (attempt - 1 on a resend; undefined on a first attempt or
 * outside them), for OpenTelemetry's undici instrumentation, which makes one client span
 * per attempt: `new UndiciInstrumentation({ startSpanHook: resendCountAttributes })`.
 */
export declare function resendCountAttributes(request?: unknown): { 'http.request.resend_count': number } | undefined;

/** The attribute name OpenTelemetry's HTTP conventions give the resend count. */
export declare const RESEND_COUNT: 'http.request.resend_count';
