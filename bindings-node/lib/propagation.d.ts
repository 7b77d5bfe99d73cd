// Types of retryrs/propagation: the server side of propagation across services.

/** What the helpers read of a request: node:http's IncomingMessage (and Express's) fits. */
export interface RequestLike {
  /** The headers as they came, [name, value, name, value, ...]. */
  rawHeaders?: readonly string[];
  /** Read when there is no rawHeaders (a framework's own request object). */
  headers?: Readonly<Record<string, string | readonly string[] | undefined>>;
}

/** What the helpers use of a response: node:http's ServerResponse (and Express's) fits. */
export interface ResponseLike {
  statusCode: number;
  readonly writableFinished: boolean;
  setHeader(name: string, value: string): unknown;
  end(): unknown;
  once(event: 'close', listener: () => void): unknown;
}

/** A server helper's options. */
export interface ServerOptions {
  /** The longest budget a request may bring, in ms (a longer one is clamped to it: a
   * client can only shorten it). Default 15000 (the contract's default deadline); `null`:
   * no limit. A request that brings none gets none (its retriers keep their own). */
  limitMs?: number | null;
  /** Whether this listener is internal, behind a mesh you trust: only then are
   * `x-envoy-expected-rq-timeout-ms` and `x-envoy-attempt-count` believed. Default false
   * (Envoy strips `x-envoy-*` from external requests; a public listener must not read them). */
  trustMesh?: boolean;
  /** The upward rule only counts (stats().observed) and never refuses. Default false. */
  observeOnly?: boolean;
}

/** What a server helper counted since it was made. */
export interface ServerStats {
  /** Requests read. */
  requests: number;
  /** Propagation header values that were malformed (and ignored). */
  malformed: number;
  /** Requests whose budget was longer than `limitMs` (and clamped). */
  clamped: number;
  /** Requests answered 504 with `Retryrs-Pushback: -1`, the handler not run (the upward rule). */
  refused: number;
  /** Requests that arrived with nothing left while `observeOnly` (their handler ran). */
  observed: number;
  /** Requests that arrived with nothing left past the cap on refusals (20% per 10 s; their handler ran). */
  capped: number;
}

/**
 * The context of the request being served: its deadline, whether it was a retry, and a
 * signal. Every `Retrier` call made inside it (any retrier, hedged ones included) obeys
 * it: its deadline is the sooner of its own and this one less a small margin (2% of the
 * time left, 5 to 250 ms), so every attempt's bound (`ctx.remainingMs`, `ctx.signal`)
 * and every wait follow it; inside a retry it makes one attempt and sends no hedge; and
 * this context's signal cancels it.
 */
export declare class PropagationContext {
  private constructor();
  /** The time left before the request's deadline, in whole ms now (never negative); `null`: no deadline. */
  readonly remainingMs: number | null;
  /** When the deadline passes, on the clock the calls run on: `performance.now()`'s, or
   * the virtual clock under `testing` (`Infinity`: never). */
  readonly deadlineAt: number;
  /** Whether the inbound request was itself a retry (`a > 1`, `r=?1`,
   * `grpc-previous-rpc-attempts >= 1`, or on a trusted listener `x-envoy-attempt-count >= 2`). */
  readonly retry: boolean;
  /** Aborts at the deadline (a TimeoutError) and when the client goes away before the
   * response is finished (an AbortError). */
  readonly signal: AbortSignal;
}

/** A Connect/Express-style middleware, with its counters. */
export interface PropagationMiddleware {
  <Req extends RequestLike, Res extends ResponseLike>(req: Req, res: Res, next: (err?: unknown) => void): void;
  /** What it counted: requests, malformed values, clamped budgets, refusals. */
  stats(): ServerStats;
}

/** A `(req, res)` handler run inside each request's context, with its counters. */
export interface PropagatedHandler<Req extends RequestLike, Res extends ResponseLike> {
  (req: Req, res: Res): unknown;
  /** What it counted: requests, malformed values, clamped budgets, refusals. */
  stats(): ServerStats;
}

/**
 * A Connect/Express-style middleware: `app.use(middleware())`. It reads each request's
 * `Retryrs-Context` (and `grpc-timeout`, `grpc-previous-rpc-attempts`, and with
 * `trustMesh` Envoy's headers): the smallest budget given, clamped to `limitMs`;
 * malformed values are ignored and counted. The rest of the chain runs inside the
 * request's PropagationContext. A request that arrives with nothing left is answered at
 * once, 504 with `Retryrs-Pushback: -1`, without calling `next` (at most 20% of a 10 s
 * window's requests; `observeOnly` never refuses). Bad options are a TypeError or
 * RangeError naming the option.
 */
export declare function middleware(options?: ServerOptions): PropagationMiddleware;

/**
 * `handler` for `http.createServer(wrap(handler))`, run inside each request's
 * PropagationContext; the same reading and upward rule as `middleware`.
 */
export declare function wrap<Req extends RequestLike, Res extends ResponseLike>(
  handler: (req: Req, res: Res) => unknown,
  options?: ServerOptions,
): PropagatedHandler<Req, Res>;

/** A context given by hand to `run`. */
export interface RunContext {
  /** The time left, in ms (`null` or left out: no deadline). */
  remainingMs?: number | null;
  /** Whether the work is a retry of the caller's (default false): retriers inside make one attempt. */
  retry?: boolean;
  /** Aborts the context (the retriers' calls inside are cancelled). */
  signal?: AbortSignal;
}

/**
 * Runs `fn()` inside a context given by hand (a queue consumer's message deadline, a
 * test), or inside a PropagationContext taken with `current()` (work handed to another
 * callback; it stays in force for `fn` even after its request is over). Returns what
 * `fn` returns. A bad context is a TypeError or RangeError
 * naming the key.
 *
 * An object given inside another context (a request's, an outer `run`) narrows it and
 * never widens it: the sooner deadline, either retry mark, and the outer signal and
 * cancellation reach `fn`. Once the outer context is over (its response finished),
 * work `fn` left running has the object's own limits. A PropagationContext is entered
 * as it is.
 */
export declare function run<T>(context: RunContext | PropagationContext, fn: () => T): T;

/**
 * The context of the request being served here, or `undefined` outside one (and in work
 * the request left running once its response finished or its client went away).
 */
export declare function current(): PropagationContext | undefined;
