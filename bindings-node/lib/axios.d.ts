// retryrs/axios: retries for an axios instance (optional peer: axios >= 1.7).
import type { HttpHelperOptions, RequestRetryOptions } from './fetch';

/** What retryAxios needs of an axios instance (axios ships separate CommonJS and ES
 * module typings; this matches both). */
export interface AxiosInstanceLike {
  defaults: { adapter?: unknown };
  getUri(config?: any): string;
}

/**
 * Installs retries on an axios instance (`axios.create()`, or the default `axios`) by
 * wrapping its adapter: one attempt is one call of axios's own adapter, so interceptors,
 * transforms and `validateStatus` run once per request. What is retried is the core's
 * HTTP rule (idempotent methods, or a POST/PATCH with an Idempotency-Key; statuses 408,
 * 425, 429, 500, 502, 503, 504; a connection never made for every method); waits, the
 * deadline, Retry-After, the budget and events are the retrier's.
 *
 * A request's `retry` config option overrides the rules for that request. Out of
 * retries on a status, the request rejects as axios would (an `AxiosError` with the last
 * `response`); on the network, with axios's own `AxiosError` that also carries
 * `attempts`, `reason`, `retrier` and `errors` and is `instanceof RetryExhaustedError`.
 * Returns a function that removes the retries.
 *
 * A client that reads the body inside the attempt (axios hands a response over read
 * whole): with axios's http adapter (Node's default) the attempt's bound covers the body
 * read, a body that stalls is a timed-out attempt, and a retried response is read to
 * 64 KiB at most (then closed); out of retries it is read whole. With `responseType:
 * 'stream'` the stream is handed over at the headers. Other adapters (fetch, xhr) buffer
 * the body themselves.
 */
export declare function retryAxios(instance: AxiosInstanceLike, options?: HttpHelperOptions): () => void;

// A request's `retry` config option, for the CommonJS typings of axios (axios.d.mts adds
// it to the ES module ones).
declare module 'axios' {
  interface AxiosRequestConfig {
    /** retryrs/axios: this request's own attempt limit, methods, statuses, Idempotency-Key rule. */
    retry?: RequestRetryOptions;
  }
}
