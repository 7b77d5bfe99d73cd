// retryrs/got: got.extend options whose retry decisions come from the engine (optional
// peer: got >= 14, an ES module; this helper loads none of it). Its typings are not
// imported: a CommonJS declaration importing an ES module's types needs an import
// attribute older compilers cannot parse, and without it TypeScript's node16/nodenext
// resolution fails (TS1541). RetryGotOptions is what got.extend takes of it.
import type { HttpHelperOptions } from './fetch';

/** The options retryGot makes: got's `retry` (its calculateDelay asks the engine), a handler and hooks; for `got.extend(...)`. */
export interface RetryGotOptions {
  /** got's retry options, set so that got asks the engine about every failure. */
  retry: {
    /** No limit of got's own: the engine's limits end the call (a request's own retry.limit overrides it). */
    limit: number;
    /** Empty: the engine's HTTP rule decides by method. */
    methods: never[];
    /** Empty: the engine's HTTP rule decides by status (a request's own list overrides it). */
    statusCodes: number[];
    /** Empty: the engine's HTTP rule decides which network failures are retried. */
    errorCodes: string[];
    /** false: got asks calculateDelay even where its own rules would not retry. */
    enforceRetryRules: boolean;
    /** Asks the engine about each failure: resolves with its wait in ms, or ends the call. */
    calculateDelay: (retryObject: any) => number | Promise<number>;
  };
  /** Starts one retrier call per promise request (events, deadline, budget); a stream request is not retried. */
  handlers: Array<(options: any, next: (options: any) => any) => any>;
  /** Hooks that bound each attempt and judge each response by the engine's HTTP rule. */
  hooks: {
    /** Bounds got's request by the engine's bound for the attempt (as got's timeout.request). */
    beforeRequest: Array<(options: any) => void>;
    /** Ends the call with a response the rule does not retry (a final error status rejects). */
    afterResponse: Array<(response: any) => any>;
  };
}

/**
 * Options for `got.extend(retryGot({ retrier }))`: got keeps its own request loop
 * (promise API), and every retry decision and wait is the engine's (the core's HTTP rule,
 * Retry-After, the deadline, the budget, events). A streamed body is sent once.
 *
 * A client that reads the body inside the attempt: got's promise API reads a response
 * whole before handing it over, so the attempt's bound (the deadline, or the attempt
 * timeout, as got's `timeout.request`) covers the body, and a body that stalls is a
 * timed-out attempt. A retried response is judged at 64 KiB of its body: when the engine
 * retries, the rest is never read (the connection is closed); out of retries, got reads
 * it whole.
 *
 * Per request, got's own `retry` fields override the rules: `limit` (retries, as in got:
 * attempts are limit + 1), `methods` and `statusCodes` (an empty list: the helper's); the
 * request's `context.retry` takes `methods`, `statuses` and `idempotencyKey` (`{ context:
 * { retry: { idempotencyKey: false } } }`), over got's fields; its `limit` is refused (a
 * TypeError naming got's retry.limit), since it would count attempts, not retries. A hedging retrier is refused (got runs one attempt at a time). Out of retries
 * on a status, got rejects with its HTTPError (or resolves with the response when
 * `throwHttpErrors` is false); on the network, with its own RequestError carrying
 * `attempts`, `reason`, `retrier` and `errors`, also `instanceof RetryExhaustedError`.
 */
export declare function retryGot(options?: HttpHelperOptions): RetryGotOptions;
