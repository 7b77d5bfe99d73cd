// Types of retryrs/fetch: a fetch with retries, deciding through the retryrs core.
import type { Retrier } from '../index';

/** Anything with fetch's shape: the global fetch, undici's fetch, a wrapper of either. */
export type FetchFunction = (input: any, init?: any) => Promise<any>;

/** The global fetch's own type where the program has one (DOM lib or @types/node). */
export type GlobalFetch = typeof globalThis extends { fetch: infer G extends FetchFunction } ? G : FetchFunction;

export interface RetryingFetchOptions<F extends FetchFunction = GlobalFetch> {
  /** Policy, listener, budget, deadline, attempt timeout (default: `new Retrier()`). Its
   * `shouldRetry` and `retryAfterMs` are not used: the core's HTTP rules decide. Each
   * request, and the body read of the response it resolves with, is bounded by its
   * attempt's bound (the time left before the deadline, or `attemptTimeoutMs` when
   * sooner; one whose `fetch` ignores the signal is abandoned there). A request cut there
   * is a read timeout, sent again only for an idempotent method (a POST rejects with the
   * TimeoutError), unless undici reports it never wrote its headers (the connection was
   * never made): a connect failure, sent again for every method. */
  retrier?: Retrier;
  /** The fetch that sends (default: the global fetch). */
  fetch?: F;
  /** Methods whose network failures and listed statuses are retried (default:
   * IDEMPOTENT_METHODS). A failed connection is retried for every method. */
  methods?: readonly string[];
  /** Statuses retried (default: RETRYABLE_STATUSES: 408, 425, 429, 500, 502, 503, 504). */
  statuses?: readonly number[];
}

/**
 * A function with `fetch`'s signature that retries what the core calls transient. Out of
 * retries on a status it resolves with the last response; on a network failure it rejects
 * with RetryExhaustedError. `init.signal` cancels waits and attempts.
 */
export declare function retryingFetch<F extends FetchFunction>(options: RetryingFetchOptions<F> & { fetch: F }): F;
export declare function retryingFetch(options?: RetryingFetchOptions<GlobalFetch>): GlobalFetch;

/** The URL with `user:pass@` and signing query values replaced by REDACTED. */
export declare function redactUrl(url: string): string;

/** GET, HEAD, OPTIONS, TRACE, PUT, DELETE. */
export declare const IDEMPOTENT_METHODS: readonly string[];

/** Base of the failures retryingFetch reports in events: the request, URL redacted. */
export declare class HttpRetryError extends Error {
  readonly method: string;
  readonly url: string;
}

/**
 * A retryable status; `retryAfterMs` from Retry-After. At most the first 64 KiB of its
 * body were read to free the connection, a longer or stalled body cancelled.
 */
export declare class RetryableStatusError extends HttpRetryError {
  readonly status: number;
  readonly retryAfterMs: number | undefined;
}

/** A transient network failure; `connect`: no connection was made. `cause`: fetch's error. */
export declare class RequestFailedError extends HttpRetryError {
  readonly connect: boolean;
  readonly cause: unknown;
}
