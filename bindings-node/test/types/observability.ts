// Compiled with `tsc --noEmit` by observability.test.js's types test: the subpath
// declarations (retryrs/prometheus, retryrs/otel) accept real use and reject misuse.
import { Retrier, type RetryEvent } from 'retryrs';
import { promListener } from 'retryrs/prometheus';
import { otelListener, recordResendCount, RESEND_COUNT } from 'retryrs/otel';
import { Registry } from 'prom-client';
import { metrics, trace } from '@opentelemetry/api';

const listener: (e: RetryEvent) => void = promListener({ register: new Registry(), namespace: 'payments' });
new Retrier({ name: 'rates', onEvent: listener });
new Retrier({ onEvent: otelListener({ meterProvider: metrics.getMeterProvider(), spanEvents: false }) });
promListener();
otelListener();
recordResendCount(2);
const span = trace.getActiveSpan();
if (span !== undefined) recordResendCount(3, span);
const key: 'http.request.resend_count' = RESEND_COUNT;
void key;

// @ts-expect-error namespace is a string
promListener({ namespace: 1 });
// @ts-expect-error a registry, not a string
promListener({ register: 'default' });
// @ts-expect-error spanEvents is a boolean
otelListener({ spanEvents: 'yes' });
// @ts-expect-error attempt is a number
recordResendCount('2');
