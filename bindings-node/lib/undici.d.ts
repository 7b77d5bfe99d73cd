// retryrs/undici: a dispatcher interceptor with retries (optional peer: undici >= 7).
import type { Dispatcher } from 'undici';
import type { HttpHelperOptions, RequestRetryOptions } from './fetch';

/**
 * An interceptor for `dispatcher.compose(...)`: `new Agent().compose(retryInterceptor({
 * retrier }))` serves undici's request, stream and fetch on that dispatcher, and Node's
 * global fetch once set with `setGlobalDispatcher`. One attempt is one dispatch
 * downstream.
 *
 * A client that hands the response over at its headers: the deadline and the attempt's
 * bound cover the request up to them; a final response then streams to the caller, never
 * cut while bytes arrive, and fails with undici's BodyTimeoutError after
 * `attemptTimeoutMs` of silence (or, without one, a silence as long as the deadline). A
 * retried response's body is read to 64 KiB at most within the bound, then dropped (the
 * connection closed unless it was read to its end); out of retries it is handed back
 * whole. A streamed request body (which is how fetch hands the dispatcher any body) is
 * kept as it is sent, up to 1 MiB, and sent again from there; a longer one is sent once,
 * unless its connection failed before any of it was read. What is retried is the core's HTTP rule; waits, the deadline, Retry-After, the
 * budget and events are the retrier's.
 *
 * A request's `retry` dispatch option (RequestRetryOptions) overrides the rules for it.
 * Out of retries on a status, the last response is handed back; on the network, the
 * request fails with undici's own error (Node's error for a refused connect) carrying
 * `attempts`, `reason`, `retrier` and `errors`, also `instanceof RetryExhaustedError`.
 */
export declare function retryInterceptor(options?: HttpHelperOptions): Dispatcher.DispatcherComposeInterceptor;

declare module 'undici' {
  namespace Dispatcher {
    interface DispatchOptions {
      /** retryrs/undici: this request's own attempt limit, methods, statuses, Idempotency-Key rule. */
      retry?: RequestRetryOptions;
    }
  }
}
