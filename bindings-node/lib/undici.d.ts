// retryrs/undici: a dispatcher interceptor with retries (optional peer: undici >= 7).
import type { Dispatcher } from 'undici';
import type { HttpHelperOptions, RequestRetryOptions } from './fetch';

/**
 * An interceptor for `dispatcher.compose(...)`: `new Agent().compose(retryInterceptor({
 * retrier }))` serves undici's request, stream and fetch on that dispatcher, and Node's
 * global fetch once set with `setGlobalDispatcher`. One attempt is one dispatch
 * downstream; a retried response's body is read (at most 64 KiB, else the connection is
 * closed) and dropped; a final one streams to the caller. A streamed request body is sent
 * once, and fetch (undici's or the global one) always hands the dispatcher its body as a
 * stream: a fetch with a body is sent once here (retryrs/fetch retries those). What is retried is the core's HTTP rule; waits, the deadline, Retry-After, the
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
