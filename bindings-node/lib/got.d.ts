// retryrs/got: got.extend options whose retry decisions come from the engine (optional
// peer: got >= 14, an ES module; this helper loads none of it).
import type { ExtendOptions } from 'got';
import type { HttpHelperOptions } from './fetch';

/**
 * Options for `got.extend(retryGot({ retrier }))`: got keeps its own request loop
 * (promise API), and every retry decision and wait is the engine's (the core's HTTP rule,
 * Retry-After, the deadline, the budget, events). A streamed body is sent once.
 *
 * Per request, got's own `retry` fields override the rules: `limit` (retries, so attempts
 * are limit + 1), `methods` and `statusCodes` (an empty list: the helper's); the request's
 * `context.retry` takes the other helpers' per-request `retry` option (`limit`, `methods`,
 * `statuses`, `idempotencyKey`: `{ context: { retry: { idempotencyKey: false } } }`),
 * over got's fields. A hedging retrier is refused (got runs one attempt at a time). Out of retries
 * on a status, got rejects with its HTTPError (or resolves with the response when
 * `throwHttpErrors` is false); on the network, with its own RequestError carrying
 * `attempts`, `reason`, `retrier` and `errors`, also `instanceof RetryExhaustedError`.
 */
export declare function retryGot(options?: HttpHelperOptions): ExtendOptions;
