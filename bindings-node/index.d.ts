// Types for retryrs (Node). Times are milliseconds throughout.

/** How jitter mixes randomness into each backoff delay. */
export type Jitter = 'none' | 'full' | 'equal' | 'decorrelated' | `proportional(${number})` | `proportional:${number}`;

/** Why a call gave up on transient failures. */
export type ExhaustReason = 'attempts' | 'deadline' | 'budget' | 'retry_after' | 'circuit_open' | 'stopped';

/**
 * The failure an event is about: `error` for a throw (or rejection), `value` for a value
 * shouldRetryResult rejected; exactly one of them is present.
 */
export type FailureOf = { error: unknown; value?: never } | { value: unknown; error?: never };

/**
 * What a call reports as it goes, in the contract's order: `attempt_failed` for each
 * failure, then exactly one of `retrying` (the wait `delayMs` about to start), `rejected`,
 * `exhausted` (with its `reason`) or `cancelled`; or `success`. A hedged call adds `hedge`;
 * a circuit breaker adds `breaker_opened` (`delayMs`: the break), `breaker_half_open` and
 * `breaker_closed`. Every event has the retrier's `name`, the `attempt` it is about, the
 * time since the call began (`elapsedMs`) and the retries the attempt limit still allows
 * (`retriesLeft`).
 */
export type RetryEvent =
  | ({ kind: 'attempt_failed'; name: string; attempt: number; elapsedMs: number; retriesLeft: number } & FailureOf)
  | ({ kind: 'retrying'; name: string; attempt: number; elapsedMs: number; retriesLeft: number; delayMs: number } & FailureOf)
  | ({ kind: 'rejected'; name: string; attempt: number; elapsedMs: number; retriesLeft: number } & FailureOf)
  | ({ kind: 'exhausted'; name: string; attempt: number; elapsedMs: number; retriesLeft: number; reason: ExhaustReason } & FailureOf)
  | ({ kind: 'cancelled'; name: string; attempt: number; elapsedMs: number; retriesLeft: number } & Partial<FailureOf>)
  | { kind: 'success'; name: string; attempt: number; elapsedMs: number; retriesLeft: number }
  /** A hedged call launched attempt `attempt` beside those in flight, `delayMs` after the previous launch. */
  | { kind: 'hedge'; name: string; attempt: number; elapsedMs: number; retriesLeft: number; delayMs: number }
  | { kind: 'breaker_opened'; name: string; attempt: number; elapsedMs: number; retriesLeft: number; delayMs: number }
  | { kind: 'breaker_half_open' | 'breaker_closed'; name: string; attempt: number; elapsedMs: number; retriesLeft: number };

/** Every kind of {@link RetryEvent}. */
export type RetryEventKind = RetryEvent['kind'];

/**
 * What onRetry and delayMs receive after a failure, before the wait the engine proposes:
 * the attempt that failed (1-based), the engine's wait (backoff raised to any hint), the
 * retries the attempt limit still allows (a bound, not a promise), the name events carry,
 * and the failure.
 */
export type RetryInfo = { attempt: number; delayMs: number; retriesLeft: number; name: string } & FailureOf;

/** r.stats(): what a retrier's calls did, counted by the engine. */
export interface RetryStats {
  /** Calls ended (succeeded, rejected, exhausted or cancelled). */
  readonly calls: number;
  /** Attempts made (a hedged call's attempts still in flight at its end included). */
  readonly attempts: number;
  /** Attempts after the first (a plain call's after a wait, a hedged call's launches). */
  readonly retries: number;
  /** Calls that ended with a value. */
  readonly successes: number;
  /** Calls ended by a permanent failure. */
  readonly rejections: number;
  /** Calls ended by their signal (or a hedged call's abort). */
  readonly cancellations: number;
  /** Calls exhausted, by reason. */
  readonly exhausted: Readonly<Record<ExhaustReason, number>>;
}

/** A hook's answer: now, or as a promise the call awaits. */
export type Answer<T> = T | PromiseLike<T>;

/** R: the values calls return (what shouldRetryResult judges); unknown if it is not given. */
export interface RetrierOptions<R = unknown> {
  // The knobs, written from the core's knob table by tools/knobgen (`make generate`).
  // knobgen:begin retrier-options
  /** Total calls, the first one included (1 disables retrying). Default 5. */
  maxAttempts?: number;
  /** Ceiling of the wait after the first failure, in ms. Default 200. */
  initialDelayMs?: number;
  /** Growth of the ceiling per failed attempt. Default 2. */
  multiplier?: number;
  /** Cap on every backoff delay (hints are not capped), in ms. Default 5000. */
  maxDelayMs?: number;
  /** How randomness is mixed into each delay. Default 'full'. */
  jitter?: Jitter;
  /**
   * Budget for the whole call, attempts and waits included, in ms; null: no deadline
   * (attempts alone bound the call). Default 15000.
   */
  deadlineMs?: number | null;
  /**
   * A seed for reproducible jitter: same seed, same delays, in every host; null: fresh
   * random jitter on every call. Default null.
   */
  seed?: number | bigint | null;
  /** Names the retrier in events and errors. Default 'retry'. */
  name?: string;
  /**
   * A retry budget shared with other retriers; null: no budget (retries are not rationed).
   * Default null.
   */
  budget?: RetryBudget | SharedRetryBudget | null;
  /**
   * The longest server-asked wait accepted; a longer hint ends the call at once (exhausted,
   * reason retry_after), in ms; null: every Retry-After hint is waited out (the deadline
   * still bounds it). Default 60000.
   */
  maxRetryAfterMs?: number | null;
  /**
   * Bound on each attempt; an attempt's bound is this or the time left before the deadline,
   * whichever is smaller, in ms; null: no per-attempt bound (the deadline, if on, still
   * bounds every attempt). Default null.
   */
  attemptTimeoutMs?: number | null;
  // knobgen:end retrier-options
  /**
   * Truthy: transient (retry); falsy (false, undefined, ...): permanent (the original
   * error surfaces unchanged), read by truthiness as p-retry reads it. May answer with a
   * promise, which the call awaits. Default: isTransientError.
   */
  shouldRetry?: (error: unknown) => Answer<unknown>;
  /**
   * true: fn's value is a failure, retried like a transient error (a 503 response, an
   * empty page). May answer with a promise. Default: none (every value is a success).
   */
  shouldRetryResult?: (value: R) => Answer<boolean>;
  /**
   * The minimum wait the server asked for, or undefined; it receives the error or the
   * rejected value. May answer with a promise. Default: retryAfterFromError.
   */
  retryAfterMs?: (failure: unknown) => Answer<number | typeof DONT_RETRY | undefined | null>;
  /**
   * Called for every event (one listener or an array of them); a throw, or an async
   * listener's rejection, is reported as a process warning and changes nothing.
   */
  onEvent?: ((event: RetryEvent) => void | PromiseLike<void>) | ReadonlyArray<(event: RetryEvent) => void | PromiseLike<void>>;
  /**
   * true: a pending retry wait, or the bound of a pending attempt, does not keep the
   * process alive (as p-retry's and cockatiel's unref). Default false.
   */
  unref?: boolean;
  /** A circuit breaker shared with other retriers (and worker threads); null: none. */
  breaker?: CircuitBreaker | SharedCircuitBreaker | null;
  /**
   * Hedges calls (gRPC A6's hedgingPolicy): attempts run side by side, the first success
   * wins and the others are aborted through their ctx.signal; null: no hedging. With it
   * the backoff knobs (maxAttempts, delays, jitter) do not apply; the deadline, the
   * attempt timeout, the budget (each hedge draws from it), maxRetryAfterMs and the
   * breaker do.
   */
  hedge?: HedgeOptions | null;
  /**
   * true: when transient failures run out (attempts, deadline, budget, retry_after), the
   * call rejects with the last failure itself (your own catch handlers still match), its
   * history attached as `err.retryrs` (a RetryExhaustedError; see RetryHistory). A call
   * that ran out on a value shouldRetryResult rejected, or that the breaker refused, still
   * rejects with RetryExhaustedError (there is no error to rethrow). Default false.
   */
  reraise?: boolean;
  /**
   * Awaited after a failure, before each wait (p-retry's onFailedAttempt, but only when a
   * retry would follow): returning false stops the call (RetryExhaustedError, reason
   * 'stopped', the history kept); a throw stops it too and is what the call rejects with
   * (the failure as its cause). Anything else goes on.
   */
  onRetry?: (info: RetryInfo) => Answer<unknown>;
  /**
   * The wait before the next attempt, exactly, in ms; undefined: the engine's. Called
   * after onRetry; awaited. The engine still refuses a wait past the deadline (reason
   * 'deadline') or over maxRetryAfterMs (reason 'retry_after'). Retry-After hints are not
   * a floor for it. A negative or NaN answer is a RangeError, a non-number a TypeError.
   */
  delayMs?: (info: RetryInfo) => Answer<number | undefined | null>;
}

/** What `reraise: true` attaches to the failure it rejects with (non-enumerable). */
export interface RetryHistory {
  /** The exhaustion the call would have rejected with: attempts, reason, every failure. */
  readonly retryrs?: RetryExhaustedError;
}

/** What r.onEvent(listener) returns: dispose() detaches the listener (also `using`, via Symbol.dispose). */
export interface ListenerHandle {
  /** Detaches the listener (idempotent). */
  dispose(): void;
}

/**
 * When hedges go out. `delayMs` a fixed delay after each launch (0: every attempt at
 * once), or `'adaptive'`: the `quantile` (default 0.95) of the last `window` (default
 * 1000) attempt latencies of every call of the retrier, clamped to [floorMs, ceilingMs]
 * (defaults 1 and 1000), the ceiling until 20 latencies are known. Without a budget a
 * default guard holds hedges to 10% of the calls of the last 10 s plus one a second
 * (docs/contract.md, Hedging); `guard: false` turns it off.
 */
export type HedgeOptions =
  | {
      /** Attempts at most, the first one included (2 to 5, gRPC A6's cap). */
      maxAttempts: number;
      /** The wait after each launch before the next, in ms (0: every attempt at once). Default 0. */
      delayMs?: number;
      /** false: no default guard (with no budget, hedges are then unbounded). Default true. */
      guard?: boolean;
    }
  | {
      /** Attempts at most, the first one included (2 to 5, gRPC A6's cap). */
      maxAttempts: number;
      /** 'adaptive': the delay follows the recent attempt latencies (see quantile). */
      delayMs: 'adaptive';
      /** Which quantile of the recent latencies is the delay, in (0, 1). Default 0.95. */
      quantile?: number;
      /** The shortest adaptive delay, in ms. Default 1. */
      floorMs?: number;
      /** The longest adaptive delay (and the delay until 20 latencies are known), in ms. Default 1000. */
      ceilingMs?: number;
      /** How many recent latencies are kept (1 to 1000000). Default 1000. */
      window?: number;
      /** false: no default guard (with no budget, hedges are then unbounded). Default true. */
      guard?: boolean;
    };

/** What fn receives for each attempt. */
export declare class AttemptContext {
  private constructor();
  /** 1-based attempt number. */
  readonly attempt: number;
  /**
   * Aborts when the call is aborted (with its reason) or this attempt's bound passes
   * (with a TimeoutError): the deadline or the attempt timeout, whichever comes first.
   * In a hedged call, also when another attempt won or the call ended (an AbortError).
   */
  readonly signal: AbortSignal;
  /**
   * The time this attempt has left, in ms, read now (never negative): until the deadline
   * or the attempt timeout, whichever is sooner, as the engine bounds each attempt; null
   * when neither is set (the attempt is unbounded).
   */
  readonly remainingMs: number | null;
}

/** What r.call(fn, options) takes besides fn. */
export interface CallOptions {
  /** Aborting it ends the call at once, rejecting with signal.reason. */
  signal?: AbortSignal | null;
}

/**
 * Retries a function on transient failures, under one immutable policy (see
 * {@link RetrierOptions} for every option). Share it freely: every call keeps its own state.
 */
export declare class Retrier<R = unknown> {
  /**
   * Validates and normalises the options once; a bad one throws RangeError or TypeError
   * naming it. R is inferred from shouldRetryResult's parameter: calls must then return R.
   */
  constructor(options?: RetrierOptions<R>);
  /** The retrier's name. */
  readonly name: string;
  /** The circuit breaker its calls ask first (a policy document's too), or null. */
  readonly breaker: CircuitBreaker | null;
  /**
   * Runs fn until it succeeds, fails permanently, or the policy gives up. Resolves with
   * fn's value; rejects with the original error (permanent), a RetryExhaustedError, or
   * the signal's reason (aborted).
   */
  call<T extends R>(fn: (ctx: AttemptContext) => T | PromiseLike<T>, options?: CallOptions): Promise<Awaited<T>>;
  /**
   * A retrier running a policy from a document (loadPolicies), with the options only code
   * can give and any knob overridden (the document's policy is unchanged); validated like
   * the constructor's options.
   */
  static fromPolicy<R = unknown>(policy: Policy, options?: FromPolicyOptions<R>): Retrier<R>;
  /**
   * The same retrier with some options changed (tenacity's retry_with): the options given
   * replace this retrier's; the budget, breaker and listeners (onEvent, and those attached
   * with r.onEvent, now or later) are shared. Validated like the constructor's options.
   */
  with<R2 = R>(overrides: RetrierOptions<R2>): Retrier<R2>;
  /**
   * Attaches a listener after creation (cockatiel style), called for every event after
   * the onEvent option's, by this retrier and those made from it with with().
   */
  onEvent(listener: (event: RetryEvent) => void | PromiseLike<void>): ListenerHandle;
  /** What this retrier's calls did (a retrier made by with() counts its own). */
  stats(): RetryStats;
}

/** The options Retrier.fromPolicy takes: the host's, and knobs overriding the document's. */
export type FromPolicyOptions<R = unknown> = RetrierOptions<R>;

/** A named policy from a policy document: read-only; it answers its knobs (null when off). */
export declare class Policy {
  private constructor();
  // knobgen:begin policy-knobs
  /** Total calls, the first one included (1 disables retrying). */
  readonly maxAttempts: number;
  /** Ceiling of the wait after the first failure, in ms. */
  readonly initialDelayMs: number;
  /** Growth of the ceiling per failed attempt. */
  readonly multiplier: number;
  /** Cap on every backoff delay (hints are not capped), in ms. */
  readonly maxDelayMs: number;
  /** How randomness is mixed into each delay. */
  readonly jitter: Jitter;
  /** Budget for the whole call, attempts and waits included, in ms; null when off. */
  readonly deadlineMs: number | null;
  /** A seed for reproducible jitter: same seed, same delays, in every host; null when off. */
  readonly seed: bigint | null;
  /** Names the retrier in events and errors. */
  readonly name: string;
  /** A retry budget shared with other retriers; null when off. */
  readonly budget: RetryBudget | null;
  /**
   * The longest server-asked wait accepted; a longer hint ends the call at once (exhausted,
   * reason retry_after), in ms; null when off.
   */
  readonly maxRetryAfterMs: number | null;
  /**
   * Bound on each attempt; an attempt's bound is this or the time left before the deadline,
   * whichever is smaller, in ms; null when off.
   */
  readonly attemptTimeoutMs: number | null;
  // knobgen:end policy-knobs
  /** A gRPC policy's retryableStatusCodes (a hedging one's nonFatalStatusCodes) as names; null for a policy not from a service config. */
  readonly grpcStatusCodes: string[] | null;
  /** The verdict on a gRPC status (a number, or a name such as 'UNAVAILABLE') by those codes. */
  grpcVerdict(status: number | string): 'success' | 'transient' | 'permanent';
}

/**
 * Loads a policy document (docs/policies.md): a path (or file URL), the JSON text itself
 * (a string starting with `{`), or an object as JSON.parse gives. Every policy naming one
 * budget shares one RetryBudget. Throws PolicyDocumentError.
 */
export declare function loadPolicies(source: string | URL | object): PolicyDocument;

/** A loaded policy document: a Map of name to Policy, with the loader's warnings and gRPC's lookup. */
export declare class PolicyDocument extends Map<string, Policy> {
  private constructor();
  /** The loader's warnings (valid but probably not meant), in document order, each starting with its path. */
  readonly warnings: readonly string[];
  /** The name of the policy `service`/`method` runs under: `service/method`, then `service`, then `default`; null when none. */
  methodKey(service: string, method?: string): string | null;
  /** The policy of methodKey(service, method), or null. */
  forMethod(service: string, method?: string): Policy | null;
}

/** A policy document that could not be loaded: where (path, line, column, file) and what. */
export declare class PolicyDocumentError extends Error {
  /** Always 'PolicyDocumentError'. */
  readonly name: 'PolicyDocumentError';
  /** The path in the document, e.g. `policies.payments.initial_delay`. */
  readonly path: string;
  /** The line of the offending value (1-based), when the document was text. */
  readonly line: number | null;
  /** The column of the offending value (1-based), when the document was text. */
  readonly column: number | null;
  /** The file the document was read from, when it was read from one. */
  readonly file: string | null;
}

/** Transient failures ran out of room: attempts, deadline, budget or retry_after. */
export declare class RetryExhaustedError extends Error {
  /** Always 'RetryExhaustedError'. */
  readonly name: 'RetryExhaustedError';
  /** The retrier's name. */
  readonly retrier: string;
  /** How many times fn ran. */
  readonly attempts: number;
  /** Which limit ended the call (the message names it as the option you set, e.g. maxAttempts). */
  readonly reason: ExhaustReason;
  /** The failures (errors and rejected values), in order: the last 64 at most. */
  readonly errors: unknown[];
  /** The last rejected value, when the last failure was a value shouldRetryResult rejected. */
  readonly result: unknown;
  /** The last failure. */
  readonly cause: unknown;
  /** For reason circuit_open (fn never ran): the breaker's state, 'open' or 'half_open'. */
  readonly breakerState?: 'open' | 'half_open' | 'isolated';
  /** For reason circuit_open: milliseconds before the breaker lets a probe through. */
  readonly retryInMs?: number;
}

/** What structured clone (postMessage, workerData) makes of a CircuitBreaker. */
export interface SharedCircuitBreaker {
  /** Its share id: CircuitBreaker.from() turns it back into the breaker. */
  readonly retryrsBreaker: number;
}

/** How a CircuitBreaker decides; durations in ms. A setting given to a model that has none is a TypeError naming the models that own it. */
export interface CircuitBreakerOptions {
  /**
   * 'consecutive' (default): after `failures` failed calls in a row; 'sampling': Polly v8's
   * model; 'count': resilience4j's count-based sliding window. docs/breaker.md maps
   * Polly's and resilience4j's options.
   */
  model?: 'consecutive' | 'sampling' | 'count';
  /** Consecutive: failed calls in a row that open it. Default 5. */
  failures?: number;
  /** Sampling and count: the share of failed calls that opens it, in (0, 1]. Default 0.1 (sampling), 0.5 (count). */
  failureRatio?: number;
  /** Sampling: calls in the window before it may open (>= 2). Default 100. */
  minimumThroughput?: number;
  /** Sampling: the sliding window, in ms (500 to one day). Default 30000. */
  samplingDurationMs?: number;
  /** How long it stays open before a probe, in ms (1 to one day). Default 5000. */
  breakDurationMs?: number;
  /** Probe calls at once when half-open. Default 1. */
  halfOpenProbes?: number;
  /** Growth of the break on each open in a row (>= 1). Default 1. */
  breakMultiplier?: number;
  /** The longest break when it grows, in ms (breakDurationMs to one day); null: one day. */
  maxBreakDurationMs?: number | null;
  /** Count each attempt instead of each call (a retry around Polly's or resilience4j's breaker). Default false. */
  perAttempt?: boolean;
  /** Count: calls counted before it may open (>= 1; above windowSize, windowSize). Default 100. */
  minimumCalls?: number;
  /** Count: how many of the last calls it judges (1 to 1000000). Default 100. */
  windowSize?: number;
  /** Count a permanent failure as a failure (default: a success, the dependency answered). Default false. */
  countPermanent?: boolean;
  /** Sampling and count: a call (or attempt) this long or longer is slow, in ms (1 to one day); null: none is. */
  slowCallDurationMs?: number | null;
  /** Sampling and count: the share of slow calls that opens it, in (0, 1]. Default 1. */
  slowCallRatio?: number;
  /** Half-open: let exactly halfOpenProbes probes go and close only if their failure ratio is under the threshold (resilience4j). Default false: the first probe decides (Polly). */
  judgeAllProbes?: boolean;
}

/** A circuit breaker shared between calls, retriers and worker threads. */
export declare class CircuitBreaker {
  /** Validates the options once; a bad one throws RangeError or TypeError naming it (breakDurationMs, ...). */
  constructor(options?: CircuitBreakerOptions);
  /** The breaker a worker received through postMessage or workerData. */
  static from(received: CircuitBreaker | SharedCircuitBreaker): CircuitBreaker;
  /** Its share id: the one field postMessage copies. */
  readonly retryrsBreaker: number;
  /** Its state now. */
  readonly state: 'closed' | 'open' | 'half_open' | 'isolated';
  /** Milliseconds before an open breaker lets a probe through (0 unless open). */
  readonly retryInMs: number;
  /** Calls it has refused (reason 'circuit_open'). */
  readonly rejections: number;
  /** The model it was made with. */
  readonly model: 'consecutive' | 'sampling' | 'count';
  /** Holds it open until reset(): every call rejects at once (reason 'circuit_open'); state 'isolated'. */
  isolate(): void;
  /** Closes it, whatever its state, with its counts started over. */
  reset(): void;
}

/** What structured clone (postMessage, workerData) makes of a RetryBudget. */
export interface SharedRetryBudget {
  /** Its share id: RetryBudget.from() turns it back into the budget. */
  readonly retryrsBudget: number;
}

/** A token bucket shared between calls, retriers and worker threads (gRPC retry throttling). */
export declare class RetryBudget {
  /**
   * A full bucket of `maxTokens` (> 0, at most 1e12); each transient failure costs a
   * token, each success adds `tokenRatio` (> 0, at most maxTokens); a retry is allowed
   * while more than half the tokens are left. Both keep 3 decimals, truncated.
   */
  constructor(maxTokens: number, tokenRatio: number);
  /**
   * The budget a worker received through postMessage or workerData (where a RetryBudget
   * arrives as `{ retryrsBudget: id }`): the same bucket, in this thread.
   */
  static from(received: RetryBudget | SharedRetryBudget): RetryBudget;
  /** Its share id: the one field postMessage copies. */
  readonly retryrsBudget: number;
  /** The AWS SDKs' standard retry quota; every default is the SDKs' (500, 5, 10, 1). */
  static quota(options?: {
    /** Retry cost the quota holds when full (whole, 0 to 1e12). Default 500. */
    capacity?: number;
    /** What a retry after a failure costs. Default 5. */
    retryCost?: number;
    /** What a retry after a timeout costs. Default 10. */
    timeoutRetryCost?: number;
    /** What a first-attempt success gives back. Default 1. */
    noRetryIncrement?: number;
  }): RetryBudget;
  /** Finagle's RetryBudget; every default is Finagle's (10000 ms, 10, 0.2). */
  static ratio(options?: {
    /** How long a deposit stays, in ms (1 to 60 s). Default 10000. */
    ttlMs?: number;
    /** Retries allowed each second whatever the traffic. Default 10. */
    minRetriesPerSec?: number;
    /** Retries allowed per request, as a fraction (0 to 1000). Default 0.2. */
    percentCanRetry?: number;
  }): RetryBudget;
  /** Which model it follows. */
  readonly kind: 'token_bucket' | 'quota' | 'ratio';
  /** What is left: a bucket's tokens, a quota's capacity left, a ratio budget's retries. */
  readonly tokens: number;
  /** A bucket's size or a quota's capacity (NaN for a ratio budget). */
  readonly maxTokens: number;
  /** A bucket's token ratio (NaN for the other kinds). */
  readonly tokenRatio: number;
}

/**
 * The wait a Retry-After value asks for, in ms (delay-seconds or an HTTP-date relative to
 * `now`); undefined for no hint. Huge values saturate (about 1.8e19).
 */
export declare function parseRetryAfter(value: string | null | undefined, now?: Date | number): number | undefined;

/** Whether an HTTP status is worth retrying: 408, 425, 429, 500, 502, 503, 504. */
export declare function isRetryableStatus(status: number): boolean;
/** The statuses the core retries for idempotent methods: 408, 425, 429, 500, 502, 503, 504. */
export declare const RETRYABLE_STATUSES: readonly number[];

/** A request's outcome and the user's lists, for {@link classifyHttp}. */
export interface HttpRequestOutcome {
  /** The request's method (any case). */
  method: string;
  /** The response's status; leave out when no response arrived. */
  status?: number;
  /** 'connect': never connected (nothing was sent); 'network': any other failure. */
  failure?: 'connect' | 'network';
  /** Replaces the idempotent methods (GET, HEAD, OPTIONS, TRACE, PUT, DELETE). */
  retryMethods?: string[];
  /** Replaces the retryable statuses (408, 425, 429, 500, 502, 503, 504). */
  retryStatuses?: number[];
  /** The request's Idempotency-Key header value: a POST or PATCH with a non-empty one is
   * repeatable like an idempotent method. */
  idempotencyKey?: string | null;
  /** Whether the Idempotency-Key header counts (default true). */
  honourIdempotencyKey?: boolean;
}

/**
 * The core's HTTP rule: 'retry' (transient), 'response' (return it as it is) or 'fail'
 * (a network failure that must not be repeated).
 */
export declare function classifyHttp(request: HttpRequestOutcome): 'retry' | 'response' | 'fail';

/** The default predicate: network/system errors, fetch's "fetch failed", TimeoutError. */
export declare function isTransientError(error: unknown): boolean;
/** The default hint reader: an error's numeric `retryAfterMs` (or DONT_RETRY). */
export declare function retryAfterFromError(error: unknown): number | typeof DONT_RETRY | undefined;

/**
 * A retryAfterMs answer (or an error's `retryAfterMs`) for a server that said "don't
 * retry" (gRPC A6 pushback): the failure counts (a budget token, a breaker's failure) and
 * nothing more is sent; a hedged call sends no further hedge and lets those in flight
 * finish. `Symbol.for('retryrs.dontRetry')`.
 */
export declare const DONT_RETRY: unique symbol;

/**
 * Virtual time for tests: waits advance a virtual clock instead of taking real time.
 * `scoped(fn)` belongs to fn's async context and `enable()` to this thread (main or one
 * worker); `{ scope: 'process' }` switches every thread of the process.
 */
export declare const testing: {
  /** Turns virtual time on for this thread (or the whole process). */
  enable(options?: {
    /** 'thread' (default): this thread only; 'process': every thread. */
    scope?: 'thread' | 'process';
  }): void;
  /** Turns it off again (the same scope as enable). */
  disable(options?: {
    /** 'thread' (default): this thread only; 'process': every thread. */
    scope?: 'thread' | 'process';
  }): void;
  /** Whether virtual time is on here. */
  isOn(): boolean;
  /** The virtual clock, in ms. */
  now(): number;
  /** Moves the virtual clock forward by ms. */
  advance(ms: number): void;
  /**
   * Resolves once the virtual clock reaches now + ms (an attempt that takes virtual time
   * beside others: a hedged call moves the clock); rejects with the signal's reason when
   * it aborts.
   */
  sleep(ms: number, options?: {
    /** Aborting it rejects the sleep with the signal's reason. */
    signal?: AbortSignal;
  }): Promise<void>;
  /** Runs fn with virtual time on, for fn's async context (or the whole process), then turns it off. */
  scoped<T>(fn: () => T | PromiseLike<T>, options?: {
    /** 'context' (default): fn's async context only; 'process': every thread. */
    scope?: 'context' | 'process';
  }): Promise<Awaited<T>>;
};
