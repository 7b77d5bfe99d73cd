// Types of retryrs/fetch: a fetch with retries, deciding through the retryrs core.
import type { Retrier } from '../index';

/** Anything with fetch's shape: the global fetch, undici's fetch, a wrapper of either. */
export type FetchFunction = (input: any, init?: any) => Promise<any>;

/** The global fetch's own type where the program has one (DOM lib or @types/node). */
export type GlobalFetch = typeof globalThis extends { fetch: infer G extends FetchFunction } ? G : FetchFunction;

/** The options every HTTP helper takes (retryrs/fetch, retryrs/axios, retryrs/undici, retryrs/got). */
export interface HttpHelperOptions {
  /** Policy, listener, budget, deadline, attempt timeout (default: `new Retrier()`). A
   * retrier with its own `shouldRetry`, `shouldRetryResult` or `retryAfterMs` is refused
   * (a TypeError naming the option): the core's HTTP rules decide, and Retry-After is the
   * hint. A hedging retrier (`hedge`) hedges only requests the rules let it resend (an
   * idempotent method, or an Idempotency-Key) with a body it can send again, aborting the
   * losers (their connections closed); others go out once. retryrs/got refuses one. */
  retrier?: Retrier;
  /** Methods whose network failures and listed statuses are retried (default:
   * IDEMPOTENT_METHODS). A failed connection is retried for every method; a certificate that
   * fails verification never is (one attempt, fetch's own error). */
  methods?: readonly string[];
  /** Statuses retried (default: RETRYABLE_STATUSES: 408, 425, 429, 500, 502, 503, 504). */
  statuses?: readonly number[];
  /** Query keys whose values are redacted in events and error messages, on top of the
   * core's list (OpenTelemetry's url.full keys, token, access_token, api_key, key,
   * password, X-Amz-Signature, ...), matched ignoring case. */
  redactQuery?: readonly string[];
  /** Whether a POST or PATCH with a non-empty Idempotency-Key header is resent like an
   * idempotent method (default true). */
  idempotencyKey?: boolean;
  /** Propagation across services (docs/propagation.md): each attempt sends
   * `Retryrs-Context: t=<ms left>, a=<attempt>` (plus `r=?1` inside a request that was a
   * retry, see retryrs/propagation), with `t` read from the clock at each send. `true`
   * (the default): to every host, no mesh headers; `false`: nothing is sent; or an object
   * (PropagateOptions) naming the hosts allowed and the interop headers. */
  propagate?: boolean | PropagateOptions;
}

/** Where and how an HTTP helper sends the propagation headers. */
export interface PropagateOptions {
  /** The only hosts that receive them: `'api.internal'` exactly, `'*.svc.local'` any
   * subdomain (never the apex); ports are ignored, case too. Default: every host. A bad
   * entry is a RangeError naming it, when the helper is made. A redirect the client
   * follows to another host loses the headers (retryingFetch: with the global fetch or
   * a `dispatcher` in `init`; undici: with its redirect interceptor composed after
   * `retryInterceptor`; see docs/propagation.md). */
  hosts?: readonly string[];
  /** The sidecar in front of the next hop, whose own retries are turned off (one layer
   * retries): `'envoy'` also sends `x-envoy-upstream-rq-timeout-ms` and
   * `x-envoy-max-retries: 0`, `'linkerd'` sends `l5d-retry-limit: 0`. Default `'none'`. */
  mesh?: 'none' | 'envoy' | 'linkerd';
  /** The protocol of the requests: `'grpc'` also sends `grpc-timeout`, `'connect'`
   * `connect-timeout-ms`. Default `'http'`. */
  kind?: 'http' | 'grpc' | 'connect';
}

/** A request's own rules (fetch's `init.retry`, axios's and got's `retry`, undici's `retryrs`). */
export interface RequestRetryOptions {
  /** This request's attempt limit (the first attempt included; the retrier's other limits still apply). */
  limit?: number;
  /** This request's retried methods, replacing the helper's `methods`. */
  methods?: readonly string[];
  /** This request's retried statuses, replacing the helper's `statuses`. */
  statuses?: readonly number[];
  /** Whether this request's Idempotency-Key header makes it repeatable, replacing the helper's rule. */
  idempotencyKey?: boolean;
}

/** What retryingFetch takes: the helpers' options and the fetch that sends. */
export interface RetryingFetchOptions<F extends FetchFunction = GlobalFetch> extends HttpHelperOptions {
  /** Policy, listener, budget, deadline, attempt timeout (default: `new Retrier()`). Its
   * `shouldRetry`, `shouldRetryResult` and `retryAfterMs` are refused: the core's HTTP rules decide. Each
   * request, up to its response's headers, is bounded by its attempt's bound (the time
   * left before the deadline, or `attemptTimeoutMs` when sooner; one whose `fetch` ignores
   * the signal is abandoned there); the body of the response handed over is not (see
   * retryingFetch). A request cut there
   * is a read timeout, sent again only for an idempotent method (a POST rejects with the
   * TimeoutError), unless undici reports it never wrote its headers (the connection was
   * never made): a connect failure, sent again for every method. */
  retrier?: Retrier;
  /** The fetch that sends (default: the global fetch). */
  fetch?: F;
}

/** fetch's init `I` with a request's own rules (`retry`): the init the fetch retryingFetch returns takes. */
export type RetryingInit<I> = NonNullable<I> & {
  /** retryrs/fetch: this request's own attempt limit, methods, statuses, Idempotency-Key rule. */
  retry?: RequestRetryOptions;
};
/**
 * The fetch retryingFetch returns: `F`'s signature, its init also taking `retry`. Only
 * this fetch reads it: a plain fetch has no such option (and its RequestInit does not
 * declare one).
 */
export type RetryingFetch<F extends FetchFunction> = (input: Parameters<F>[0], init?: RetryingInit<Parameters<F>[1]>) => ReturnType<F>;
/**
 * A function with `fetch`'s signature that retries what the core calls transient. Out of
 * retries on a status it resolves with the last response; on a network failure it rejects
 * with fetch's own error (a TypeError) carrying `attempts`, `reason`, `retrier` and
 * `errors`, which is also `instanceof RetryExhaustedError`. `init.signal` cancels waits
 * and attempts; `init.retry` (RequestRetryOptions) overrides the rules for one request.
 * A body that can be read once (a stream) is sent once, through the retrier (events).
 *
 * A client that hands the response over at its headers: the deadline and the attempt's
 * bound cover the request up to them (and the read of a retried response's first 64 KiB);
 * the body of the response it resolves with is the caller's, never cut while bytes
 * arrive, and fails with a TimeoutError after `attemptTimeoutMs` of silence (or, without
 * one, a silence as long as the deadline). Out of retries, the last response is whole.
 */
export declare function retryingFetch<F extends FetchFunction>(options: RetryingFetchOptions<F> & {
  /** The fetch that sends (its signature is the one returned). */
  fetch: F;
}): RetryingFetch<F>;
/** {@link retryingFetch} over the global fetch. */
export declare function retryingFetch(options?: RetryingFetchOptions<GlobalFetch>): RetryingFetch<GlobalFetch>;

/** The URL with `user:pass@` and the values of the core's query keys (and `keys`) replaced by REDACTED. */
export declare function redactUrl(url: string, keys?: readonly string[]): string;

/** GET, HEAD, OPTIONS, TRACE, PUT, DELETE. */
export declare const IDEMPOTENT_METHODS: readonly string[];

/** Base of the failures retryingFetch reports in events: the request, URL redacted. */
export declare class HttpRetryError extends Error {
  /** The request's method. */
  readonly method: string;
  /** The request's URL, redacted (see redactUrl). */
  readonly url: string;
}

/**
 * A retryable status; `retryAfterMs` from Retry-After. At most the first 64 KiB of its
 * body were read to free the connection, a longer or stalled body cancelled.
 */
export declare class RetryableStatusError extends HttpRetryError {
  /** The response's status. */
  readonly status: number;
  /** The wait Retry-After asked for, in ms; undefined without one. */
  readonly retryAfterMs: number | undefined;
}

/** A final response that is not a success (4xx, 5xx not retried): the call ends `rejected`, error.type the status. */
export declare class FinalStatusError extends HttpRetryError {
  /** The response's status. */
  readonly status: number;
}

/** A transient network failure; `connect`: no connection was made. `cause`: fetch's error. */
export declare class RequestFailedError extends HttpRetryError {
  /** true: no connection was made (nothing was sent), so every method may be resent. */
  readonly connect: boolean;
  /** fetch's (or the client's) own error. */
  readonly cause: unknown;
}

/** A network failure the rules do not repeat (a POST reset after it was sent): the call
 * ends `rejected`, error.type the client's code; the helper rejects with `cause`. */
export declare class FinalNetworkError extends RequestFailedError {}

